/* Shadow execution's per-value definitions, written once for the C compiler
 * and nvcc (analysis/shadow.c on the host, kernels/shadow.cu on the GPU):
 * the candidate casts, the FP8 scale recipes, the output rounding and the
 * error accumulator. Formats are analysis/formats.h's mp_dtype; a format's
 * largest finite value comes from the caller (mp_format_of on the host, the
 * launch parameters on the device), never spelled here. See docs/numerics.md
 * "Shadow execution". */
#ifndef MPPROF_ANALYSIS_SHADOW_CORE_H
#define MPPROF_ANALYSIS_SHADOW_CORE_H

#include "cast_core.h"
#ifdef __cplusplus
extern "C" { /* nvcc and the C++ tests: formats.c's functions have C names */
#endif
#include "formats.h"
#ifdef __cplusplus
}
#endif

#define MP_SHADOW_MX_BLOCK 32 /* MXFP8: elements per scale block along k (host and device) */

/* Double arithmetic that is never contracted into an FMA (nvcc contracts by
 * default; the host build has no FMA in plain x86-64), so the error sums are
 * the same arithmetic everywhere. */
#ifdef __CUDA_ARCH__
#define MP_SH_DMUL(a, b) __dmul_rn((a), (b))
#define MP_SH_DADD(a, b) __dadd_rn((a), (b))
#define MP_SH_DSUB(a, b) __dsub_rn((a), (b))
#define MP_SH_FMUL(a, b) __fmul_rn((a), (b))
#define MP_SH_FADD(a, b) __fadd_rn((a), (b))
#define MP_SH_FSUB(a, b) __fsub_rn((a), (b))
#define MP_SH_FDIV(a, b) __fdiv_rn((a), (b))
#else
#include <math.h>
#define MP_SH_DMUL(a, b) ((a) * (b))
#define MP_SH_DADD(a, b) ((a) + (b))
#define MP_SH_DSUB(a, b) ((a) - (b))
#define MP_SH_FMUL(a, b) ((a) * (b))
#define MP_SH_FADD(a, b) ((a) + (b))
#define MP_SH_FSUB(a, b) ((a) - (b))
#define MP_SH_FDIV(a, b) ((a) / (b))
#endif

/* One step of an fp16 accumulation (a call of compute type 16F: cublasHgemm,
 * cublasGemmEx / cuBLASLt with CUBLAS_COMPUTE_16F, a cuDNN convolution whose
 * compute type is HALF): RNE_fp16(s + a*b), rounded once, for fp16 values a,
 * b, s. a*b is exact in fp32 (11 x 11 significant bits, exponents far inside
 * fp32's); the sum is rounded to odd in fp32 (Knuth's TwoSum gives its exact
 * error; an inexact even result steps one ulp toward it), and a value
 * rounded to odd with p + 2 bits or more rounds to nearest in p bits as the
 * exact value would (Boldo & Melquiond): 24 >= 11 + 2. The order the
 * accumulation is modelled in (k ascending, one rounding per product) is
 * shadow.h's; Tensor Cores add several products per step and may align and
 * round differently (Fasi, Higham, Mikaitis, Pranesh 2021). */
MP_CAST_FN float mp_sh_fma_fp16(float a, float b, float s) {
  float p = MP_SH_FMUL(a, b), r = MP_SH_FADD(p, s);
  if (MP_SH_FSUB(r, r) == 0) {                           /* finite: the TwoSum error */
    float pv = MP_SH_FSUB(r, s), sv = MP_SH_FSUB(r, pv); /* the parts of r */
    float e = MP_SH_FADD(MP_SH_FSUB(s, sv), MP_SH_FSUB(p, pv));
    uint32_t u = mp_cast_float_bits(r);
    if (e != 0 && !(u & 1)) /* toward the exact value: magnitude up where e has r's sign */
      r = mp_cast_bits_float((e > 0) == (r > 0) ? u + 1 : u - 1);
  }
  return mp_cast_fp16_to_float(mp_cast_float_to_fp16(r));
}

/* A 2-D or 3-D convolution as its implicit GEMM gathers it (analysis/shadow.h
 * mp_shadow_conv_gemm; docs/numerics.md has the table): where each element
 * of op(A) (m x k) and op(B) (k x n) comes from, for the host path and the
 * device's gather kernel alike. x, w, y name the tensors whatever the
 * direction (dx, dw, dy backward); strides in elements. A 3-D convolution
 * has a depth before the height: x's D, w's T, y's O (mp_sh_conv.d, t, o);
 * taps and positions then run depth first, (t, r, s) and (o, p, q). */
typedef enum mp_shadow_conv_kind {
  MP_SHADOW_CONV_FWD = 0,   /* y = conv(x, w):   m = K, n = N*[O*]P*Q, k = C*[T*]R*S */
  MP_SHADOW_CONV_BWD_DATA,  /* dx = dconv(dy, w): m = C, n = N*[D*]H*W, k = K*[T*]R*S */
  MP_SHADOW_CONV_BWD_FILTER /* dw = wconv(x, dy): m = K, n = C*[T*]R*S, k = N*[O*]P*Q */
} mp_shadow_conv_kind;

typedef struct mp_sh_conv {
  int kind;           /* mp_shadow_conv_kind */
  int flip;           /* CUDNN_CONVOLUTION: taps rotated by 180 degrees (in every dimension) */
  int64_t n, c, h, w; /* x (c: the channels of one group) */
  int64_t k, r, s;    /* w: K filters of C x R x S (k: the filters of one group) */
  int64_t p, q;       /* y's spatial size */
  int64_t pad[2], stride[2], dilation[2];
  int64_t xs[4]; /* x: N, C, H, W */
  int64_t ws[4]; /* w: K, C, R, S */
  int64_t ys[4]; /* y: N, K, P, Q */
  /* Groups (0 or 1: one): group g convolves x's channels g*c .. g*c + c - 1
   * with filters g*k .. g*k + k - 1 into y's channels g*k ..; each group is
   * an implicit GEMM of its own, batch matrix g (mp_sh_conv_a_group,
   * mp_sh_conv_b_group: where its part of each source starts). */
  int64_t groups;
  /* The depth of a 3-D convolution: x's D, w's T, y's O, with their strides
   * and the depth's padding, stride and dilation. All 0: a 2-D convolution
   * (mp_sh_conv_depth reads each as 1, the padding as 0), whose implicit
   * GEMM is then the 2-D one to the last index. */
  int64_t d, t, o;
  int64_t pad_d, stride_d, dilation_d;
  int64_t xs_d, ws_d, ys_d;
} mp_sh_conv;

MP_CAST_FN int64_t mp_sh_conv_groups(const mp_sh_conv *cv) {
  return cv->groups > 1 ? cv->groups : 1;
}

/* A depth field as the gathers use it: 0 (a 2-D convolution's) is 1. */
MP_CAST_FN int64_t mp_sh_conv_depth(int64_t v) {
  return v > 1 ? v : 1;
}

/* Offset of group g's part of op(A)'s source: its filters in w (forward,
 * backward data), its channels of dy (backward filter). */
MP_CAST_FN int64_t mp_sh_conv_a_group(const mp_sh_conv *cv, int64_t g) {
  return cv->kind == MP_SHADOW_CONV_BWD_FILTER ? g * cv->k * cv->ys[1] : g * cv->k * cv->ws[0];
}

/* Offset of group g's part of op(B)'s source: its channels of x (forward,
 * backward filter), of dy (backward data). */
MP_CAST_FN int64_t mp_sh_conv_b_group(const mp_sh_conv *cv, int64_t g) {
  return cv->kind == MP_SHADOW_CONV_BWD_DATA ? g * cv->k * cv->ys[1] : g * cv->c * cv->xs[1];
}

MP_CAST_FN int64_t mp_sh_conv_tap(const mp_sh_conv *cv, int64_t r, int64_t len) {
  return cv->flip ? len - 1 - r : r;
}

/* x's element for output position (i, o, p, q) and tap (ch, t, r, s) of the
 * forward convolution (o, t: 0 in 2-D); -1 in the padding. */
MP_CAST_FN int64_t mp_sh_conv_x_at(const mp_sh_conv *cv, int64_t i, int64_t o, int64_t p, int64_t q,
                                   int64_t ch, int64_t t, int64_t r, int64_t s) {
  int64_t z = o * mp_sh_conv_depth(cv->stride_d) - cv->pad_d +
              mp_sh_conv_tap(cv, t, mp_sh_conv_depth(cv->t)) * mp_sh_conv_depth(cv->dilation_d);
  int64_t y = p * cv->stride[0] - cv->pad[0] + mp_sh_conv_tap(cv, r, cv->r) * cv->dilation[0];
  int64_t x = q * cv->stride[1] - cv->pad[1] + mp_sh_conv_tap(cv, s, cv->s) * cv->dilation[1];
  if (z < 0 || z >= mp_sh_conv_depth(cv->d) || y < 0 || y >= cv->h || x < 0 || x >= cv->w)
    return -1;
  return i * cv->xs[0] + ch * cv->xs[1] + z * cv->xs_d + y * cv->xs[2] + x * cv->xs[3];
}

/* Element (row, kk) of op(A): its offset in w (dy for backward filter),
 * from group 0's part (group g: plus mp_sh_conv_a_group). */
MP_CAST_FN int64_t mp_sh_conv_a_at(const mp_sh_conv *cv, int64_t row, int64_t kk) {
  int64_t rs = cv->r * cv->s, td = mp_sh_conv_depth(cv->t), trs = td * rs;
  if (cv->kind == MP_SHADOW_CONV_BWD_FILTER) { /* filter row's gradient: dy[n][row][o][p][q] */
    int64_t pq = cv->p * cv->q, opq = mp_sh_conv_depth(cv->o) * pq;
    return kk / opq * cv->ys[0] + row * cv->ys[1] + kk / pq % mp_sh_conv_depth(cv->o) * cv->ys_d +
           kk / cv->q % cv->p * cv->ys[2] + kk % cv->q * cv->ys[3];
  }
  int64_t a = kk / trs, t = kk / rs % td, r = kk / cv->s % cv->r, s = kk % cv->s;
  if (cv->kind == MP_SHADOW_CONV_BWD_DATA) /* channel row: w[a][row][t'][r'][s'] */
    return a * cv->ws[0] + row * cv->ws[1] + mp_sh_conv_tap(cv, t, td) * cv->ws_d +
           mp_sh_conv_tap(cv, r, cv->r) * cv->ws[2] + mp_sh_conv_tap(cv, s, cv->s) * cv->ws[3];
  return row * cv->ws[0] + a * cv->ws[1] + t * cv->ws_d + r * cv->ws[2] +
         s * cv->ws[3]; /* filter row */
}

/* The output index of tap position `at` (x's, before the padding is
 * removed: position + pad - tap*dilation) along one dimension of `len`
 * outputs at `stride`; -1 where no output has that tap there. */
MP_CAST_FN int64_t mp_sh_conv_out_of(int64_t at, int64_t stride, int64_t len) {
  if (at < 0 || at % stride) return -1;
  return at / stride < len ? at / stride : -1;
}

/* Element (kk, col) of op(B): its offset in x (dy for backward data), from
 * group 0's part (group g: plus mp_sh_conv_b_group); -1 where the implicit
 * GEMM reads a zero. */
MP_CAST_FN int64_t mp_sh_conv_b_at(const mp_sh_conv *cv, int64_t kk, int64_t col) {
  int64_t rs = cv->r * cv->s, td = mp_sh_conv_depth(cv->t), trs = td * rs;
  if (cv->kind ==
      MP_SHADOW_CONV_BWD_DATA) { /* dy at the output whose tap (t, r, s) reads (z, h, w) */
    int64_t hw = cv->h * cv->w, dd = mp_sh_conv_depth(cv->d), i = col / (dd * hw),
            z = col / hw % dd, h = col / cv->w % cv->h, w = col % cv->w;
    int64_t f = kk / trs, t = kk / rs % td, r = kk / cv->s % cv->r, s = kk % cv->s;
    int64_t o = mp_sh_conv_out_of(z + cv->pad_d - t * mp_sh_conv_depth(cv->dilation_d),
                                  mp_sh_conv_depth(cv->stride_d), mp_sh_conv_depth(cv->o));
    int64_t p = mp_sh_conv_out_of(h + cv->pad[0] - r * cv->dilation[0], cv->stride[0], cv->p);
    int64_t q = mp_sh_conv_out_of(w + cv->pad[1] - s * cv->dilation[1], cv->stride[1], cv->q);
    if (o < 0 || p < 0 || q < 0) return -1;
    return i * cv->ys[0] + f * cv->ys[1] + o * cv->ys_d + p * cv->ys[2] + q * cv->ys[3];
  }
  /* im2col: output position (i, o, p, q), tap (ch, t, r, s); backward filter has them swapped */
  int64_t opq = cv->kind == MP_SHADOW_CONV_BWD_FILTER ? kk : col;
  int64_t crs = cv->kind == MP_SHADOW_CONV_BWD_FILTER ? col : kk;
  int64_t pq = cv->p * cv->q, od = mp_sh_conv_depth(cv->o);
  return mp_sh_conv_x_at(cv, opq / (od * pq), opq / pq % od, opq / cv->q % cv->p, opq % cv->q,
                         crs / trs, crs / rs % td, crs / cv->s % cv->r, crs % cv->s);
}

/* cuBLASLt epilogues that change D, applied after alpha*P (+ bias) to the
 * reference (in double) and to each candidate (in fp32, before the output
 * cast), as cuBLASLt applies them before converting to D's type. GELU is
 * cuBLASLt's tanh approximation. NaN passes through ReLU. */
enum { MP_SH_EPI_NONE = 0, MP_SH_EPI_RELU, MP_SH_EPI_GELU };
#define MP_SH_GELU_C0 0.7978845608028654 /* sqrt(2/pi) */
#define MP_SH_GELU_C1 0.044715

MP_CAST_FN float mp_sh_epi_f(int epi, float x) {
  if (epi == MP_SH_EPI_RELU) return x > 0 || x != x ? x : 0.0f;
  if (epi != MP_SH_EPI_GELU) return x;
  float x3 = MP_SH_FMUL(MP_SH_FMUL(x, x), x);
  float u = MP_SH_FMUL((float)MP_SH_GELU_C0, MP_SH_FADD(x, MP_SH_FMUL((float)MP_SH_GELU_C1, x3)));
  return MP_SH_FMUL(MP_SH_FMUL(0.5f, x), MP_SH_FADD(1.0f, tanhf(u)));
}

/* Did the epilogue itself turn a non-zero value into zero (ReLU clamping a
 * negative value, GELU where tanh reaches -1 exactly: below about -5.6 in
 * fp32, -9 in double)? Such a zero is the epilogue's, not a flush: `flushed`
 * counts zeros made by rounding a non-zero value in the candidate's formats
 * (its operand casts, its accumulation, its output cast; DESIGN.md's flush
 * to zero), mp_sh_err_add's epi_zeroed. */
MP_CAST_FN int mp_sh_epi_zeroed(double in, double out) {
  return out == 0 && in != 0 && in == in;
}

MP_CAST_FN double mp_sh_epi_d(int epi, double x) {
  if (epi == MP_SH_EPI_RELU) return x > 0 || x != x ? x : 0.0;
  if (epi != MP_SH_EPI_GELU) return x;
  double x3 = MP_SH_DMUL(MP_SH_DMUL(x, x), x);
  double u = MP_SH_DMUL(MP_SH_GELU_C0, MP_SH_DADD(x, MP_SH_DMUL(MP_SH_GELU_C1, x3)));
  return MP_SH_DMUL(MP_SH_DMUL(0.5, x), MP_SH_DADD(1.0, tanh(u)));
}

MP_CAST_FN int mp_sh_isnan(float x) {
  return (mp_cast_float_bits(x) & 0x7fffffffu) > 0x7f800000u;
}
MP_CAST_FN int mp_sh_isinf(float x) {
  return (mp_cast_float_bits(x) & 0x7fffffffu) == 0x7f800000u;
}

MP_CAST_FN int mp_sh_isfinite_d(double x) {
#ifdef __CUDA_ARCH__
  unsigned long long u = (unsigned long long)__double_as_longlong(x);
#else
  unsigned long long u;
  memcpy(&u, &x, sizeof u);
#endif
  return (u & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}

/* RNE cast of x to fmt and back to float; fp8 saturating (CUDA's
 * __NV_SATFINITE, as the FP8 recipes convert); other dtypes: x. */
MP_CAST_FN float mp_sh_round(float x, mp_dtype fmt) {
  switch (fmt) {
  case MP_FP16:
    return mp_cast_fp16_to_float(mp_cast_float_to_fp16(x));
  case MP_BF16:
    return mp_cast_bf16_to_float(mp_cast_float_to_bf16(x));
  case MP_FP8_E4M3:
    return mp_cast_e4m3_to_float(mp_cast_float_to_e4m3(x, 1));
  case MP_FP8_E5M2:
    return mp_cast_e5m2_to_float(mp_cast_float_to_e5m2(x, 1));
  case MP_TF32:
    return mp_cast_float_to_tf32(x);
  default:
    return x;
  }
}

/* NaN-propagating max of |x| into an amax (0 to start). */
MP_CAST_FN float mp_sh_amax_add(float amax, float x) {
  float v = mp_cast_bits_float(mp_cast_float_bits(x) & 0x7fffffffu);
  if (mp_sh_isnan(v) || mp_sh_isnan(amax)) return mp_cast_bits_float(0x7fc00000u);
  return v > amax ? v : amax;
}

/* Per-tensor current scaling (Transformer Engine Float8CurrentScaling):
 * fp8_max / amax (fp32 division); amax 0, inf or NaN gives 1; an infinite
 * scale the largest float. */
MP_CAST_FN float mp_sh_current_scale(float amax, float fp8_max) {
  if (!(amax > 0) || mp_sh_isinf(amax)) return 1.0f;
  float s = fp8_max / amax;
  return mp_sh_isinf(s) ? mp_cast_bits_float(0x7f7fffffu) : s;
}

/* MXFP8 block scale exponent: E8M0 of amax/fp8_max rounded up to a power of
 * two (cvt.rp.satfinite.ue8m0): ceil(log2(amax * (1/fp8_max))) in [-127, 127];
 * NaN or inf amax 127, zero -127. */
MP_CAST_FN int mp_sh_mx_exp(float amax, float fp8_max) {
  if (mp_sh_isnan(amax) || mp_sh_isinf(amax)) return 127;
  float v = amax * (1.0f / fp8_max);
  if (!(v > 0)) return -127;
  uint32_t b = mp_cast_float_bits(v);
  uint32_t field = b >> 23, man = b & 0x7fffffu;
  int e;
  if (field) {
    e = (int)field - 127 + (man != 0); /* 2^e >= v, the smallest */
  } else {                             /* subnormal v = man * 2^-149 */
#ifdef __CUDA_ARCH__
    int hi = 31 - __clz((int)man);
#else
    int hi = 31 - __builtin_clz(man);
#endif
    e = hi - 149 + ((man & (man - 1)) != 0);
  }
  return e < -127 ? -127 : e > 127 ? 127 : e;
}

/* cuBLASLt block scale modes of an fp8 operand that shadow execution applies
 * (cublasLtMatmulMatrixScale_t values, cuda-facts.md): one E8M0 byte per 32
 * values along k (MXFP8), one fp32 per 128 values along k, one fp32 per
 * 128 x 128 block. */
#define MP_SH_BLOCKS_VEC32_UE8M0 2
#define MP_SH_BLOCKS_VEC128_32F 4
#define MP_SH_BLOCKS_BLK128X128_32F 5

/* Values of k per scale of a block mode; 0: not one shadow execution applies. */
MP_CAST_FN unsigned mp_sh_blocks_k(int mode) {
  return mode == MP_SH_BLOCKS_VEC32_UE8M0                                         ? 32
         : mode == MP_SH_BLOCKS_VEC128_32F || mode == MP_SH_BLOCKS_BLK128X128_32F ? 128
                                                                                  : 0;
}

/* Bytes of the scale tensor of an operand with `outer` vectors (rows of
 * op(A), columns of op(B)) of k values, as cuBLASLt lays it out (its
 * "scaling factors layouts"): VEC32_UE8M0 in tiles of 128 vectors x 4
 * blocks of 512 bytes; VEC128_32F outer x ceil(k/128) floats; BLK128x128
 * ceil(outer/128) rows of ceil(k/128) floats rounded up to 4. */
MP_CAST_FN unsigned long long mp_sh_blocks_bytes(int mode, unsigned long long outer,
                                                 unsigned long long k) {
  unsigned long long kb = (k + 127) / 128, ob = (outer + 127) / 128;
  switch (mode) {
  case MP_SH_BLOCKS_VEC32_UE8M0:
    return ob * (((k + 31) / 32 + 3) / 4) * 512;
  case MP_SH_BLOCKS_VEC128_32F:
    return outer * kb * 4;
  case MP_SH_BLOCKS_BLK128X128_32F:
    return ob * ((kb + 3) / 4 * 4) * 4;
  default:
    return 0;
  }
}

/* The scale of value kk of vector r in that layout (an E8M0 byte is
 * 2^(byte - 127), 0xff NaN). */
MP_CAST_FN float mp_sh_block_scale(int mode, const void *scales, unsigned long long r,
                                   unsigned long long kk, unsigned long long outer,
                                   unsigned long long k) {
  unsigned long long kb = (k + 127) / 128;
  switch (mode) {
  case MP_SH_BLOCKS_VEC32_UE8M0: {
    unsigned long long blk = kk / 32, col_tiles = ((k + 31) / 32 + 3) / 4;
    unsigned long long tile = (r / 128) * col_tiles + blk / 4;
    unsigned char e =
        ((const unsigned char *)scales)[tile * 512 + (r % 32) * 16 + (r % 128) / 32 * 4 + blk % 4];
    return e == 0xff ? mp_cast_bits_float(0x7fc00000u)
           : e == 0  ? mp_cast_bits_float(0x00400000u) /* 2^-127 */
                     : mp_cast_bits_float((unsigned)e << 23);
  }
  case MP_SH_BLOCKS_VEC128_32F:
    return ((const float *)scales)[r + (kk / 128) * outer];
  default: /* BLK128x128_32F */
    return ((const float *)scales)[kk / 128 + (r / 128) * ((kb + 3) / 4 * 4)];
  }
}

/* The output type a candidate's D is rounded to: the candidate's own format
 * for fp16 and bf16 (and the fp16 loss-scaled candidate), bf16 for FP8
 * candidates, and for the current precision D's dtype where it is 16-bit or
 * fp8 (out_dtype; fp8 saturating, as cuBLASLt stores an fp8 D), else no
 * rounding (fp32). */
MP_CAST_FN float mp_sh_round_output(mp_dtype cand_fmt, int is_current, mp_dtype out_dtype,
                                    float v) {
  if (is_current)
    return out_dtype == MP_FP16 || out_dtype == MP_BF16 || out_dtype == MP_FP8_E4M3 ||
                   out_dtype == MP_FP8_E5M2
               ? mp_sh_round(v, out_dtype)
               : v;
  return mp_sh_round(v, cand_fmt == MP_FP16 ? MP_FP16 : MP_BF16);
}

/* The current precision's output where the call scales its fp8 D
 * (cuBLASLt's D_SCALE_POINTER): D stores round(v * d_scale) (fp32 product,
 * saturating cast), the value it stands for is that divided by d_scale
 * (fp32 division). */
MP_CAST_FN float mp_sh_current_scaled_output(mp_dtype out_dtype, float v, float d_scale) {
  float stored = mp_sh_round_output(MP_FP32, 1, out_dtype, MP_SH_FMUL(v, d_scale));
  return MP_SH_FDIV(stored, d_scale);
}

/* Error of a candidate against the reference, accumulated over outputs whose
 * reference is finite (docs/numerics.md): sums of squares, maxima, counts.
 * `measured` counts those outputs: with none, every sum reads 0 and means
 * nothing was measured, not no error (mp_shadow_metrics_of says which).
 * mp_shadow_run turns it into the metrics (shadow.c). */
typedef struct mp_sh_err {
  double se, sr, maxd, maxr;
  unsigned long long nonzero, flushed, nonfinite, measured;
} mp_sh_err;

/* epi_zeroed: the candidate's epilogue made its zero from a non-zero value
 * (mp_sh_epi_zeroed), so a zero dc there is no flush. */
MP_CAST_FN void mp_sh_err_add(mp_sh_err *e, double ref, double dc, int epi_zeroed) {
  /* An output that reads an operand's Inf or NaN has no error to measure (and
   * inf - inf would make the sums NaN, which a worst-of merge drops as 0). */
  if (!mp_sh_isfinite_d(ref)) return;
  e->measured++;
  e->sr = MP_SH_DADD(e->sr, MP_SH_DMUL(ref, ref));
  double aref = ref < 0 ? -ref : ref;
  if (aref > e->maxr) e->maxr = aref;
  if (!mp_sh_isfinite_d(dc)) {
    e->nonfinite++;
    return;
  }
  double d = MP_SH_DSUB(dc, ref);
  e->se = MP_SH_DADD(e->se, MP_SH_DMUL(d, d));
  double ad = d < 0 ? -d : d;
  if (ad > e->maxd) e->maxd = ad;
  if (ref != 0) {
    e->nonzero++;
    if (dc == 0 && !epi_zeroed) e->flushed++;
  }
}

/* Two partial accumulators (sums in the order given). */
MP_CAST_FN void mp_sh_err_merge(mp_sh_err *dst, const mp_sh_err *src) {
  dst->se = MP_SH_DADD(dst->se, src->se);
  dst->sr = MP_SH_DADD(dst->sr, src->sr);
  if (src->maxd > dst->maxd) dst->maxd = src->maxd;
  if (src->maxr > dst->maxr) dst->maxr = src->maxr;
  dst->nonzero += src->nonzero;
  dst->flushed += src->flushed;
  dst->nonfinite += src->nonfinite;
  dst->measured += src->measured;
}

#endif
