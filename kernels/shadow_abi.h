/* What the device shadow kernels (kernels/shadow.cu) and their host side
 * share: the launch parameters of the three kernels of one shadowed GEMM.
 *
 *   mpp_shadow_copy   the op's operands (op(A), op(B), the bias) as stored,
 *                     into dense copies, on the op's own stream right after
 *                     the op: the rest of the work reads only the copies, so
 *                     the program's later work on its stream (an in-place
 *                     update, a free) cannot change or pull away what the
 *                     shadow reads
 *   mpp_shadow_gather a convolution's implicit-GEMM operands (op(A) with its
 *                     rows packed, op(B) k x n) gathered from its tensors
 *                     (analysis/shadow_core.h mp_sh_conv_a_at/_b_at), in
 *                     their own types, on the op's stream as mpp_shadow_copy
 *   mpp_shadow_amax   per-tensor amax of op(A) or op(B) over the batch, into
 *                     a device word (|x| bits, NaN above inf), for current scaling
 *   mpp_shadow_quant  op(X) of every batch matrix into an fp32 array in
 *                     cuBLAS's column-major layout, each value cast to the
 *                     candidate's format at its scale (analysis/shadow_core.h)
 *   mpp_shadow_dot16  the products of the current precision of a call of
 *                     compute type 16F, in place of its fp32 GEMM: every
 *                     output's sum rounded to fp16 after each product, k
 *                     ascending (analysis/shadow_core.h mp_sh_fma_fp16)
 *   mpp_shadow_err    a candidate's fp32 products against the reference's:
 *                     inverse scales, alpha, the output cast, the error sums;
 *                     the last block merges the blocks' partial sums in block
 *                     order (deterministic for a given grid) into `result`
 *
 * Between quant and err the host runs the products themselves: one fp32
 * (no TF32) strided-batched GEMM per candidate on its private cuBLAS handle
 * (a cuBLASLt one in a program without libcublas).
 * The per-value definitions are analysis/shadow_core.h, the host path's own. */
#ifndef MPPROF_KERNELS_SHADOW_ABI_H
#define MPPROF_KERNELS_SHADOW_ABI_H

#include <stdint.h>

#include "../analysis/shadow_core.h"

#define MPP_SH_BLOCK 128                 /* threads per block of every shadow kernel */
#define MPP_SH_KBLOCK MP_SHADOW_MX_BLOCK /* quant: values of k per thread (one MX block) */

/* How quant scales a value before the cast. */
typedef enum mpp_sh_scale {
  MPP_SH_SCALE_NONE = 0, /* round(x) */
  MPP_SH_SCALE_POW2,     /* round(x * 2^scale_log2): fp16 at a loss scale */
  MPP_SH_SCALE_AMAX,     /* round(x * current_scale(amax)): amax from the device word */
  MPP_SH_SCALE_GIVEN,    /* round(x * scale_value): delayed scaling's scale, from the host */
  MPP_SH_SCALE_MX        /* per MPP_SH_KBLOCK values along k: 2^e * round(x * 2^-e) */
} mpp_sh_scale;

/* One operand as the op stores it, seen as `rows` vectors of k values:
 * vector v, value kk of batch matrix b is element (v0 + v)*vstride +
 * kk*kstride of that matrix (A: vector = row i of op(A); B: vector = column
 * j of op(B)). */
typedef struct mpp_sh_src {
  const void *data;        /* matrix 0; matrix b at data + b*stride elements */
  const void *const *ptrs; /* or a device array of the batch matrices' addresses */
  int dtype;               /* mp_dtype of the stored elements (a float format) */
  unsigned esize;          /* its bytes per element (mp_dtype_size) */
  uint64_t vstride, kstride;
  int64_t stride; /* 0 broadcasts one matrix */
  uint64_t rows, k, batch;
  uint64_t v0; /* the first vector: a slice of the operand's vectors (0: all from the start) */
  /* the operand's fp8 scale (analysis/shadow.h mp_shadow_operand.scale):
   * values are read as stored * *scale (fp32 product); NULL: as stored */
  const float *scale;
  /* or its block scales (mp_shadow_operand.blocks): value (r, kk) is stored
   * * mp_sh_block_scale(block_mode, blocks, r, kk, block_outer, k) */
  const void *blocks;
  int block_mode;
  uint64_t block_outer;
} mpp_sh_src;

/* One stored matrix (per batch) as the op addresses it: `outer` columns of
 * `inner` elements, `ld` elements apart, into dst densely (ld = inner,
 * matrix b at b*inner*outer elements), the bytes unchanged. */
typedef struct mpp_sh_copy_piece {
  const void *data;        /* matrix 0; matrix b at data + b*stride elements */
  const void *const *ptrs; /* or a device array of the batch matrices' addresses */
  void *dst;
  unsigned esize;
  uint64_t inner, outer, ld, batch;
  int64_t stride;
} mpp_sh_copy_piece;

/* A, B, the bias, the fp8 scales of A, B and D (MPP_SH_PIECE_*) */
#define MPP_SH_COPY_PIECES 6
enum {
  MPP_SH_PIECE_A,
  MPP_SH_PIECE_B,
  MPP_SH_PIECE_BIAS,
  MPP_SH_PIECE_SA,
  MPP_SH_PIECE_SB,
  MPP_SH_PIECE_SD
};

typedef struct mpp_sh_copy_params {
  mpp_sh_copy_piece p[MPP_SH_COPY_PIECES];
  unsigned n; /* pieces in use */
} mpp_sh_copy_params;

typedef struct mpp_sh_gather_params {
  mp_sh_conv conv;
  const void *a_src, *b_src; /* w (dy for backward filter); x (dy for backward data) */
  void *a_dst, *b_dst;       /* a_dst[i*k + kk]; b_dst[kk + j*k], or [j + kk*n] with b_trans; group
                                g's matrices g*m*k (g*k*n) elements on (conv.groups) */
  unsigned ea, eb;           /* bytes per element */
  int64_t m, n, k;
  int b_trans;
} mpp_sh_gather_params;

typedef struct mpp_sh_amax_params {
  mpp_sh_src x;
  unsigned *amax_bits; /* zeroed by the host before the launch */
} mpp_sh_amax_params;

typedef struct mpp_sh_quant_params {
  mpp_sh_src x;
  float *out; /* value (v, kk) of matrix b at b*rows*k + v*out_vstride + kk*out_kstride */
  uint64_t out_vstride, out_kstride;
  int fmt;   /* mp_dtype cast to (MP_FP32: none; MP_TF32 for a TF32 call's own precision) */
  int scale; /* mpp_sh_scale */
  int scale_log2;
  float scale_value;
  float fp8_max;             /* AMAX, MX: the format's largest finite value */
  const unsigned *amax_bits; /* AMAX */
} mpp_sh_quant_params;

/* mpp_shadow_dot16: out = qa * qb per batch matrix, qa m x k (ld m), qb k x n
 * (ld k), out m x n (ld m), batch after batch (quant's layout). */
typedef struct mpp_sh_dot_params {
  const float *qa, *qb;
  float *out;
  uint64_t m, n, k, batch;
} mpp_sh_dot_params;

typedef struct mpp_sh_err_params {
  const float *ref, *cand; /* fp32 products, n outputs in the same order */
  uint64_t n;
  double alpha;  /* the reference: (double)ref * alpha */
  float alpha_f; /* the candidate: round_output(cand * inv_a * inv_b * alpha_f) */
  int cand_fmt;  /* mp_dtype of the candidate's operands */
  int is_current;
  int out_dtype;      /* D's dtype (the current precision's output) */
  int out_scale_log2; /* fp16 at a loss scale: the product is multiplied by 2^this before its cast
                       */
  int unscale_log2;   /* fp16 at a loss scale: the output is divided by 2^this after its cast */
  /* per-tensor inverse scales: 1/current_scale(amax) from the device words
   * (use_amax), else 1/scale_a and 1/scale_b (1 for non-FP8 candidates) */
  int use_amax;
  const unsigned *amax_bits; /* [0] A, [1] B */
  float fp8_max, scale_a, scale_b;
  /* the current precision: the op's own fp8 scales of A and B, multiplied
   * in instead of the inverse scales (NULL: 1), and of an fp8 D
   * (analysis/shadow_core.h mp_sh_current_scaled_output; NULL: none) */
  const float *post_a, *post_b, *d_scale;
  /* epi(alpha*P + bias) before the output cast (analysis/shadow_core.h):
   * output o is row o % m of batch matrix o / mn */
  int epilogue; /* MP_SH_EPI_* */
  const void *bias;
  int bias_dtype;
  int64_t bias_stride;
  uint64_t m, mn;
  float *capture;      /* tests: each candidate output, or NULL */
  mp_sh_err *partials; /* one per block */
  unsigned *ticket;    /* zero before the launch; the last block leaves it zero */
  mp_sh_err *result;   /* merged into: zero before the first launch of a product */
} mpp_sh_err_params;

/* |x| bits as amax words order them: NaN (any payload) above inf. */
MP_CAST_FN unsigned mpp_sh_amax_word(float x) {
  unsigned a = mp_cast_float_bits(x) & 0x7fffffffu;
  return a > 0x7f800000u ? 0x7fffffffu : a;
}

MP_CAST_FN float mpp_sh_amax_of_word(unsigned w) {
  return w > 0x7f800000u ? mp_cast_bits_float(0x7fc00000u) : mp_cast_bits_float(w);
}

/* Element of the source as a float (fp64 rounded to nearest, as the host path). */
MP_CAST_FN float mpp_sh_load(const void *base, int dtype, uint64_t i) {
  switch (dtype) {
  case MP_FP64:
    return (float)((const double *)base)[i];
  case MP_FP16:
    return mp_cast_fp16_to_float(((const uint16_t *)base)[i]);
  case MP_BF16:
    return mp_cast_bf16_to_float(((const uint16_t *)base)[i]);
  case MP_FP8_E4M3:
    return mp_cast_e4m3_to_float(((const uint8_t *)base)[i]);
  case MP_FP8_E5M2:
    return mp_cast_e5m2_to_float(((const uint8_t *)base)[i]);
  default: /* fp32, tf32 storage */
    return ((const float *)base)[i];
  }
}

/* Value kk of vector r (v0 included) of one matrix of operand x: times x's
 * scale or its block's scale when it has one. */
MP_CAST_FN float mpp_sh_value(const mpp_sh_src *x, const void *base, uint64_t r, uint64_t kk) {
  float v = mpp_sh_load(base, x->dtype, r * x->vstride + kk * x->kstride);
  if (x->blocks)
    return MP_SH_FMUL(v, mp_sh_block_scale(x->block_mode, x->blocks, r, kk, x->block_outer, x->k));
  return x->scale ? MP_SH_FMUL(v, *x->scale) : v;
}

#endif
