// kernels/shadow.cu itself, run on the CPU through tests/gpu/simt_shim.h,
// against the host path's definitions (analysis/shadow.c, mp_shadow_run):
// for GEMMs of every source dtype, both transposes, leading dimensions
// larger than the rows, strided, broadcast and pointer-array batches, k that
// ends inside an MX block, and fp32/fp16/bf16 outputs, the device pipeline
// (amax -> quant of A and B -> an fp32 GEMM in k order, standing in for
// cuBLAS -> err) gives every candidate's output bit for bit as the host path
// captures it, the amax words the host's amax, and error sums equal to a
// plain double loop over those outputs against the fp32 reference. The err
// kernel runs with several grid sizes (the last block's merge, the ticket
// back to zero). What it cannot check: the GEMMs cuBLAS runs on a GPU and
// their accumulation order (scripts/gpu-check.sh does).
#include "tests/gpu/simt_shim.h"
#include "tests/gpu/shadow_draw.h"

#include "kernels/shadow.cu"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "analysis/convert.h"
#include "analysis/shadow.h"
#include "profiler/gpu/shadow_plan.h"
}

#include "tests/gpu/simt_launch.h"

static int failures;
#define CHECK(cond, ...)                                                                           \
  do {                                                                                             \
    if (!(cond)) {                                                                                 \
      failures++;                                                                                  \
      if (failures < 20) {                                                                         \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                            \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                       \
      }                                                                                            \
    }                                                                                              \
  } while (0)

static uint32_t rng = 2463534242u;
static double draw(int spread) {
  return mpp_test_draw(&rng, spread);
}

struct operand {
  mp_dtype dtype;
  bool trans;
  int64_t rows, cols, ld, stride, batch;
  bool ptr_array;
  void *data;
  const void **ptrs;
};

static void fill(operand *o, int spread, bool special) {
  size_t es = mp_dtype_size(o->dtype);
  int64_t mats = o->stride ? o->batch : 1;
  size_t per = (size_t)(o->ld * o->cols);
  size_t total = o->ptr_array ? per * (size_t)o->batch : (size_t)(o->stride * (mats - 1)) + per;
  o->data = calloc(total + 1, es);
  for (size_t i = 0; i < total; i++)
    mp_store(o->dtype, o->data, i, draw(spread));
  if (special) mp_store(o->dtype, o->data, 1, INFINITY);
  o->ptrs = NULL;
  if (o->ptr_array) {
    o->ptrs = (const void **)calloc((size_t)o->batch, sizeof *o->ptrs);
    for (int64_t b = 0; b < o->batch; b++) /* in reverse: the array decides */
      o->ptrs[b] = (const char *)o->data + (size_t)(o->batch - 1 - b) * per * es;
  }
}

struct config {
  const char *name;
  int64_t m, n, k, batch;
  mp_dtype a, b, out;
  bool ta, tb, tf32;
  int64_t pad;     /* ld = rows + pad */
  int broadcast_b; /* B's stride 0 */
  bool ptr_array;
  double alpha;
  int spread;
  bool special; /* an inf in A */
  int epi;      /* MP_SH_EPI_* */
  bool bias;    /* an fp16 bias vector per batch matrix */
};

/* Sums in another order: equal within 1e-12 relative, or the same inf. */
static bool close(double x, double y) {
  if (isinf(x) || isinf(y)) return x == y;
  return fabs(x - y) <= 1e-12 * fabs(y);
}

static bool same_bits_or_nan(float x, float y) {
  if (isnan(x) && isnan(y)) return true;
  return memcmp(&x, &y, sizeof x) == 0;
}

/* A fp32 GEMM in k order (fmaf), standing in for cuBLAS: qa m x k and qb k x n
 * column-major per batch matrix, out m x n column-major. */
static void sgemm(const float *qa, const float *qb, int64_t m, int64_t n, int64_t k, int64_t batch,
                  float *out) {
  for (int64_t b = 0; b < batch; b++)
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < m; i++) {
        float acc = 0;
        for (int64_t kk = 0; kk < k; kk++)
          acc = fmaf(qa[b * m * k + i + kk * m], qb[b * k * n + kk + j * k], acc);
        out[b * m * n + i + j * m] = acc;
      }
}

/* The launch profiler/gpu/devshadow.c makes, planned by shadow_plan.c. */
static void quant(const mp_shadow_gemm &g, int cand, bool is_b, const float delayed[2][2],
                  const unsigned *words, float *out, unsigned grid) {
  mpp_sh_quant_params q;
  mpp_sh_quant_plan(&g, cand, is_b, delayed, words, out, &q);
  simt_run(grid, MPP_SH_BLOCK, [&q] { mpp_shadow_quant(q); });
}

/* The host path's view of an operand (no fp8 scales). */
static mp_shadow_operand shadow_operand(const operand &o) {
  mp_shadow_operand s;
  memset(&s, 0, sizeof s);
  s.dtype = o.dtype;
  s.data = o.ptr_array ? NULL : o.data;
  s.ptrs = o.ptr_array ? o.ptrs : NULL;
  s.ld = o.ld;
  s.stride = o.stride;
  s.trans = o.trans;
  return s;
}

/* c, with cuBLASLt fp8 scales of A, B, D where scales is not NULL (0: none),
 * and block scales of A and B in modes block_modes (0: none; random
 * contents of the mode's layout size). */
/* acc16: a call of compute type 16F (its current precision sums in fp16). */
static void run_config(const config &c, const float *scales_of, const int *block_modes = NULL,
                       bool acc16 = false) {
  operand A = {c.a, c.ta, c.ta ? c.k : c.m, c.ta ? c.m : c.k, 0, 0, c.batch, c.ptr_array, 0, 0};
  operand B = {c.b, c.tb, c.tb ? c.n : c.k, c.tb ? c.k : c.n, 0, 0, c.batch, c.ptr_array, 0, 0};
  A.ld = A.rows + c.pad;
  B.ld = B.rows + c.pad;
  A.stride = A.ld * A.cols + 3;
  B.stride = c.broadcast_b ? 0 : B.ld * B.cols;
  if (c.ptr_array) A.stride = A.ld * A.cols, B.stride = B.ld * B.cols;
  fill(&A, c.spread, c.special);
  fill(&B, c.spread, false);

  /* --- host path --- */
  mp_shadow_gemm g;
  memset(&g, 0, sizeof g);
  g.m = c.m, g.n = c.n, g.k = c.k, g.batch = c.batch;
  g.a = shadow_operand(A);
  g.b = shadow_operand(B);
  g.alpha = c.alpha;
  g.out = c.out;
  g.fp32_as = c.tf32 ? MP_TF32 : MP_FP32;
  g.scale_log2[0] = 3;
  g.scale_log2[1] = -2;
  g.out_scale_log2 = 5; /* the output's own loss scale, beyond the operands' */
  g.epilogue = c.epi;
  g.accum = acc16 ? MP_FP16 : MP_FP32;
  static float scales[3];
  unsigned nscales = 0;
  for (int w = 0; w < 3; w++) {
    scales[w] = scales_of ? scales_of[w] : 0;
    nscales += scales[w] != 0;
  }
  g.a.scale = scales[0] ? &scales[0] : NULL;
  g.b.scale = scales[1] ? &scales[1] : NULL;
  g.d_scale = scales[2] ? &scales[2] : NULL;
  void *blocks[2] = {NULL, NULL};
  for (int w = 0; w < 2 && block_modes; w++) {
    if (!block_modes[w]) continue;
    int64_t outer = w ? c.n : c.m;
    size_t bytes = (size_t)mp_sh_blocks_bytes(block_modes[w], (unsigned long long)outer,
                                              (unsigned long long)c.k);
    blocks[w] = calloc(bytes, 1);
    for (size_t i = 0; i < bytes; i++) /* E8M0 bytes 2^-7..2^7 */
      ((uint8_t *)blocks[w])[i] = (uint8_t)(120 + (unsigned)(draw(2) * 1000) % 15);
    if (block_modes[w] != MP_SH_BLOCKS_VEC32_UE8M0)
      for (size_t i = 0; i < bytes / 4; i++)
        ((float *)blocks[w])[i] = (float)(0.3 + fabs(draw(1)));
    mp_shadow_operand &o = w ? g.b : g.a;
    o.blocks = blocks[w];
    o.block_mode = block_modes[w];
    o.block_outer = outer;
    nscales++;
  }
  uint16_t *bias = NULL;
  if (c.bias) {
    bias = (uint16_t *)calloc((size_t)((c.m + 1) * c.batch), sizeof *bias);
    for (int64_t i = 0; i < (c.m + 1) * c.batch; i++)
      mp_store(MP_FP16, bias, (uint64_t)i, draw(6));
    g.bias = bias;
    g.bias_dtype = MP_FP16;
    g.bias_stride = c.m + 1;
  }
  size_t mn = (size_t)(c.m * c.n * c.batch);
  for (int i = 0; i < MP_SH_COUNT; i++)
    g.capture[i] = (float *)calloc(mn, sizeof(float));
  static mp_amax_history hist[2];
  mp_amax_history_init(&hist[0]);
  mp_amax_history_init(&hist[1]);
  mp_amax_history_push(&hist[0], 3.5f); /* earlier calls */
  mp_amax_history_push(&hist[1], 0.25f);
  float delayed[2][2]; /* [operand][e4m3, e5m2]: the scales the run will use */
  for (int w = 0; w < 2; w++) {
    mp_amax_history h = hist[w];
    delayed[w][0] = mp_amax_history_scale(&h, MP_FP8_E4M3);
    delayed[w][1] = mp_amax_history_scale(&h, MP_FP8_E5M2);
  }
  mp_shadow_metrics hm[MP_SH_COUNT];
  int done = mp_shadow_run(&g, MP_SHADOW_ALL, hist, hm);
  unsigned defined = 0;
  for (int ci = 0; ci < MP_SH_COUNT; ci++)
    if (mp_shadow_cand_defined(&g, (mp_shadow_cand)ci)) defined |= 1u << ci;
  CHECK(done == (int)defined, "%s: host run gave %d", c.name, done);
  if (done < 0) return;

  /* --- device pipeline, from the copies mpp_shadow_copy makes on the op's
   * stream: every value op(A), op(B) and the bias are read as must be the
   * stored one, bit for bit --- */
  const mp_shadow_gemm host = g;
  void *dst[MPP_SH_COPY_PIECES];
  for (int w = 0; w < MPP_SH_COPY_PIECES; w++)
    dst[w] = calloc(mpp_sh_copy_bytes(&host, w) + 1, 1);
  mpp_sh_copy_params cp;
  mpp_sh_copy_plan(&host, MPP_SH_PIECES_ALL, dst, &cp, &g);
  CHECK(cp.n == (c.bias ? 3u : 2u) + nscales, "%s: %u copies", c.name, cp.n);
  simt_run(3, MPP_SH_BLOCK, [&cp] { mpp_shadow_copy(cp); });
  /* the scales are read from their copies (the program may change its own after the op) */
  const float *sp[3] = {g.a.scale, g.b.scale, g.d_scale},
              *hp[3] = {host.a.scale, host.b.scale, host.d_scale};
  for (int w = 0; w < 3; w++)
    CHECK(!hp[w] ? !sp[w] : sp[w] != hp[w] && *sp[w] == *hp[w], "%s: scale %d copied wrong", c.name,
          w);
  for (int w = 0; w < 2; w++) {
    const mp_shadow_operand &to = w ? g.b : g.a, &from = w ? host.b : host.a;
    size_t bytes = from.blocks ? (size_t)mp_sh_blocks_bytes(from.block_mode,
                                                            (unsigned long long)from.block_outer,
                                                            (unsigned long long)c.k)
                               : 0;
    CHECK(!from.blocks ? !to.blocks
                       : to.blocks != from.blocks && !memcmp(to.blocks, from.blocks, bytes),
          "%s: block scales %d copied wrong", c.name, w);
  }
  for (int w = 0; w < 2; w++) {
    mpp_sh_src from = mpp_sh_src_of(&host, w), to = mpp_sh_src_of(&g, w);
    CHECK(!to.ptrs && to.esize == from.esize && to.dtype == from.dtype, "%s: copy %d", c.name, w);
    size_t diff = 0;
    for (uint64_t b = 0; b < from.batch; b++) {
      const char *fb = from.ptrs ? (const char *)from.ptrs[b]
                                 : (const char *)from.data + b * from.stride * from.esize;
      const char *tb = (const char *)to.data + b * to.stride * to.esize;
      for (uint64_t v = 0; v < from.rows; v++)
        for (uint64_t kk = 0; kk < from.k; kk++)
          diff += memcmp(fb + (v * from.vstride + kk * from.kstride) * from.esize,
                         tb + (v * to.vstride + kk * to.kstride) * to.esize, from.esize) != 0;
    }
    CHECK(diff == 0, "%s: %zu values of operand %d copied wrong", c.name, diff, w);
  }
  if (c.bias)
    for (int64_t b = 0; b < c.batch; b++)
      for (int64_t i = 0; i < c.m; i++)
        CHECK(((const uint16_t *)g.bias)[b * g.bias_stride + i] == bias[b * host.bias_stride + i],
              "%s: bias %lld of matrix %lld copied wrong", c.name, (long long)i, (long long)b);
  mpp_sh_src sa = mpp_sh_src_of(&g, false), sb = mpp_sh_src_of(&g, true);
  unsigned words[2] = {0, 0};
  for (int w = 0; w < 2; w++) {
    mpp_sh_amax_params p = {w ? sb : sa, &words[w]};
    simt_run(w ? 1 : 2, MPP_SH_BLOCK, [&p] { mpp_shadow_amax(p); });
  }
  /* the host's per-tensor amax over op(X) of every batch matrix */
  for (int w = 0; w < 2; w++) {
    const mpp_sh_src &s = w ? sb : sa;
    float amax = 0;
    for (uint64_t b = 0; b < s.batch; b++) {
      const void *base = s.ptrs ? s.ptrs[b] : (const char *)s.data + b * s.stride * s.esize;
      for (uint64_t v = 0; v < s.rows; v++)
        for (uint64_t kk = 0; kk < s.k; kk++)
          amax = mp_sh_amax_add(
              amax,
              (float)mp_load((mp_dtype)s.dtype, base, v * s.vstride + kk * s.kstride) *
                  (s.scale    ? *s.scale
                   : s.blocks ? mp_sh_block_scale(s.block_mode, s.blocks, v, kk, s.block_outer, s.k)
                              : 1.0f));
    }
    CHECK(words[w] == mpp_sh_amax_word(amax), "%s: amax word %d %08x, host amax %a", c.name, w,
          words[w], amax);
  }

  size_t mk = (size_t)(c.m * c.k * c.batch), kn = (size_t)(c.k * c.n * c.batch);
  float *qa = (float *)calloc(mk, sizeof(float)), *qb = (float *)calloc(kn, sizeof(float));
  float *ref = (float *)calloc(mn, sizeof(float)), *acc = (float *)calloc(mn, sizeof(float));
  float *cap = (float *)calloc(mn, sizeof(float));
  mp_sh_err partials[8], result;
  unsigned ticket = 0;
  /* the reference: exact operands, fp32 products */
  quant(g, MPP_SH_REFERENCE, false, delayed, words, qa, 1);
  quant(g, MPP_SH_REFERENCE, true, delayed, words, qb, 2);
  sgemm(qa, qb, c.m, c.n, c.k, c.batch, ref);

  bool wide = c.a == MP_FP64 || c.b == MP_FP64;
  for (int ci = 0; ci < MP_SH_COUNT; ci++) {
    mp_shadow_cand cand = (mp_shadow_cand)ci;
    /* fp64 accumulates in double: its current precision is not computed on the device */
    CHECK(mpp_sh_cand_on_device(&g, cand) ==
              (!(cand == MP_SH_CURRENT && wide) && (defined >> ci & 1)),
          "%s %s: on device", c.name, mp_shadow_cand_name(cand));
    if (cand == MP_SH_CURRENT && wide) continue;
    if (!(defined >> ci & 1)) continue; /* the loss-scaled one with an epilogue */
    quant(g, ci, false, delayed, words, qa, 2);
    quant(g, ci, true, delayed, words, qb, 1);
    mpp_sh_dot_params dp; /* a 16F call's own precision: the fp16 chain kernel */
    if (mpp_sh_dot16_plan(&g, cand, qa, qb, acc, &dp))
      simt_run(2, MPP_SH_BLOCK, [&dp] { mpp_shadow_dot16(dp); });
    else
      sgemm(qa, qb, c.m, c.n, c.k, c.batch, acc);
    CHECK(mpp_sh_dot16_plan(&g, cand, qa, qb, acc, &dp) == (acc16 && cand == MP_SH_CURRENT),
          "%s %s: fp16 accumulation", c.name, mp_shadow_cand_name(cand));

    for (unsigned grid = 1; grid <= 3; grid += 2) {
      mpp_sh_err_params p;
      mpp_sh_err_plan(&g, cand, delayed, words, ref, acc, &p);
      p.capture = cap;
      p.partials = partials;
      p.ticket = &ticket;
      p.result = &result;
      memset(&result, 0, sizeof result);
      simt_run(grid, MPP_SH_BLOCK, [&p] { mpp_shadow_err(p); });
      CHECK(ticket == 0, "%s: ticket left at %u", c.name, ticket);

      size_t bad = 0;
      for (size_t o = 0; o < mn; o++)
        if (!same_bits_or_nan(cap[o], g.capture[ci][o])) {
          if (!bad)
            CHECK(false, "%s %s: output %zu device %a host %a", c.name, mp_shadow_cand_name(cand),
                  o, cap[o], g.capture[ci][o]);
          bad++;
        }
      /* the sums, by a plain loop over the same outputs */
      double se = 0, sr = 0, maxd = 0, maxr = 0;
      unsigned long long nz = 0, fl = 0, nf = 0;
      /* the candidate's inverse scales, as err takes them */
      float ia = p.use_amax ? 1.0f / mp_sh_current_scale(mpp_sh_amax_of_word(words[0]), p.fp8_max)
                            : 1.0f / p.scale_a,
            ib = p.use_amax ? 1.0f / mp_sh_current_scale(mpp_sh_amax_of_word(words[1]), p.fp8_max)
                            : 1.0f / p.scale_b;
      if (p.post_a) ia = *p.post_a;
      if (p.post_b) ib = *p.post_b;
      for (size_t o = 0; o < mn; o++) {
        double r = (double)ref[o] * c.alpha, d = cap[o];
        float in = acc[o] * ia * ib * p.alpha_f; /* the candidate's epilogue input */
        if (c.bias) {
          float bv = mp_cast_fp16_to_float(
              ((const uint16_t *)
                   bias)[(size_t)((int64_t)o / (c.m * c.n) * host.bias_stride + (int64_t)o % c.m)]);
          r += (double)bv;
          in += bv;
        }
        r = mp_sh_epi_d(c.epi, r);
        /* a zero the epilogue made of a non-zero value is no flush */
        bool epi_zero = c.epi && in != 0 && !isnan(in) && mp_sh_epi_f(c.epi, in) == 0;
        if (!isfinite(r)) continue; /* over the outputs whose reference is finite */
        sr += r * r;
        maxr = fmax(maxr, fabs(r));
        if (!isfinite(d)) {
          nf++;
          continue;
        }
        se += (d - r) * (d - r);
        maxd = fmax(maxd, fabs(d - r));
        if (r != 0) {
          nz++;
          fl += d == 0 && !epi_zero;
        }
      }
      CHECK(close(result.se, se) && close(result.sr, sr), "%s %s grid %u: sums %g %g, want %g %g",
            c.name, mp_shadow_cand_name(cand), grid, result.se, result.sr, se, sr);
      CHECK(result.maxd == maxd && result.maxr == maxr && result.nonzero == nz &&
                result.flushed == fl && result.nonfinite == nf,
            "%s %s grid %u: max %g %g counts %llu %llu %llu, want %g %g %llu %llu %llu", c.name,
            mp_shadow_cand_name(cand), grid, result.maxd, result.maxr, result.nonzero,
            result.flushed, result.nonfinite, maxd, maxr, nz, fl, nf);
    }
  }
  for (int i = 0; i < MP_SH_COUNT; i++)
    free(g.capture[i]);
  free(qa), free(qb), free(ref), free(acc), free(cap);
  free(A.data), free(B.data), free(A.ptrs), free(B.ptrs), free(bias);
  for (int w = 0; w < MPP_SH_COPY_PIECES; w++)
    free(dst[w]);
  free(blocks[0]), free(blocks[1]);
}

/* mpp_shadow_gather, launched with shadow_plan.c's parameters, makes a
 * convolution's implicit-GEMM operands bit for bit as the host path's
 * mp_shadow_conv_gemm does: every kind, fp16 and bf16 tensors, NHWC
 * strides, padding, stride, dilation, flipped taps, one group or 3 (each
 * group a batch matrix of its own), 2-D or 3-D (a depth of 5 with a 3-deep
 * filter, its own padding, stride and dilation; NCDHW, NDHWC). */
static void run_conv(mp_shadow_conv_kind kind, bool nhwc, bool flip, int64_t groups, bool deep) {
  mp_shadow_conv cv;
  memset(&cv, 0, sizeof cv);
  mp_sh_conv &g = cv.g;
  g.kind = kind, g.flip = flip;
  g.n = 2, g.c = 3, g.h = 7, g.w = 6, g.k = 4, g.r = 3, g.s = 2; /* c, k: one group's */
  g.groups = groups;                                             /* 0 and 1: one group */
  const int64_t gn = groups > 1 ? groups : 1;
  g.pad[0] = 1, g.pad[1] = 2, g.stride[0] = 2, g.stride[1] = 1, g.dilation[0] = 1;
  g.dilation[1] = 2;
  g.p = (g.h + 2 * g.pad[0] - g.dilation[0] * (g.r - 1) - 1) / g.stride[0] + 1;
  g.q = (g.w + 2 * g.pad[1] - g.dilation[1] * (g.s - 1) - 1) / g.stride[1] + 1;
  int64_t dx = 1, dw = 1, dy = 1; /* depths: 1 in 2-D */
  if (deep) {
    g.d = dx = 5, g.t = dw = 3, g.pad_d = 2, g.stride_d = 1, g.dilation_d = 2;
    g.o = dy = (g.d + 2 * g.pad_d - g.dilation_d * (g.t - 1) - 1) / g.stride_d + 1;
  }
  /* N, C, H, W strides, and the depth's (before H; in 2-D not set) */
  auto strides = [nhwc, deep](int64_t st[4], int64_t *st_d, int64_t d1, int64_t d0, int64_t d2,
                              int64_t d3) {
    int64_t nchw[4] = {d1 * d0 * d2 * d3, d0 * d2 * d3, d3, 1},
            nhwc_[4] = {d1 * d0 * d2 * d3, 1, d3 * d1, d1};
    memcpy(st, nhwc ? nhwc_ : nchw, 4 * sizeof(int64_t));
    if (deep) *st_d = nhwc ? d2 * d3 * d1 : d2 * d3;
  };
  strides(g.xs, &g.xs_d, g.c * gn, dx, g.h, g.w);
  strides(g.ws, &g.ws_d, g.c, dw, g.r, g.s);
  strides(g.ys, &g.ys_d, g.k * gn, dy, g.p, g.q);
  cv.x_dtype = MP_FP16, cv.w_dtype = MP_BF16, cv.y_dtype = MP_FP16;
  size_t nx = (size_t)(g.n * g.c * gn * dx * g.h * g.w),
         nw = (size_t)(g.k * gn * g.c * dw * g.r * g.s),
         ny = (size_t)(g.n * g.k * gn * dy * g.p * g.q);
  uint16_t *x = (uint16_t *)calloc(nx, 2), *w = (uint16_t *)calloc(nw, 2),
           *y = (uint16_t *)calloc(ny, 2);
  for (size_t i = 0; i < nx; i++)
    mp_store(MP_FP16, x, i, draw(5));
  for (size_t i = 0; i < nw; i++)
    mp_store(MP_BF16, w, i, draw(5));
  for (size_t i = 0; i < ny; i++)
    mp_store(MP_FP16, y, i, draw(5));
  cv.x = kind == MP_SHADOW_CONV_BWD_DATA ? NULL : x;
  cv.wt = kind == MP_SHADOW_CONV_BWD_FILTER ? NULL : w;
  cv.y = kind == MP_SHADOW_CONV_FWD ? NULL : y;
  cv.alpha = 1;
  mp_shadow_gemm host, shape, snap;
  void *owned = NULL;
  CHECK(mp_shadow_conv_gemm(&cv, &host, &owned) == 0, "conv kind %d: host gather", (int)kind);
  CHECK(mp_shadow_conv_shape(&cv, &shape) == 0, "conv kind %d: shape", (int)kind);
  size_t ba = (size_t)mpp_sh_copy_bytes(&shape, 0), bb = (size_t)mpp_sh_copy_bytes(&shape, 1);
  CHECK(ba == (size_t)(host.m * host.k * gn) * mp_dtype_size(host.a.dtype) &&
            bb == (size_t)(host.k * host.n * gn) * mp_dtype_size(host.b.dtype) &&
            host.batch == gn && shape.batch == gn,
        "conv kind %d: copy sizes %zu %zu", (int)kind, ba, bb);
  void *dst[2] = {malloc(ba), malloc(bb)};
  memset(dst[0], 0x5a, ba), memset(dst[1], 0x5a, bb); /* the zeros must be written */
  mpp_sh_gather_params gp;
  mpp_sh_gather_plan(&cv, &shape, dst, &gp, &snap);
  simt_run(3, MPP_SH_BLOCK, [&gp] { mpp_shadow_gather(gp); });
  CHECK(!memcmp(dst[0], host.a.data, ba), "conv kind %d nhwc %d flip %d deep %d: op(A) differs",
        (int)kind, (int)nhwc, (int)flip, (int)deep);
  CHECK(!memcmp(dst[1], host.b.data, bb), "conv kind %d nhwc %d flip %d deep %d: op(B) differs",
        (int)kind, (int)nhwc, (int)flip, (int)deep);
  CHECK(snap.a.data == dst[0] && snap.b.data == dst[1] && snap.a.ld == host.a.ld &&
            snap.b.ld == host.b.ld && snap.b.trans == host.b.trans && snap.out == host.out &&
            snap.a.stride == host.a.stride && snap.b.stride == host.b.stride,
        "conv kind %d: the GEMM reading the gathered operands", (int)kind);
  free(dst[0]), free(dst[1]), free(owned), free(x), free(w), free(y);
}

int main(void) {
  const config configs[] = {
      /* name, m n k batch, a b out, ta tb tf32, pad, broadcast_b, ptr_array, alpha, spread, special
       */
      {"fp32 NN, k ends inside an MX block", 5, 7, 45, 1, MP_FP32, MP_FP32, MP_FP32, false, false,
       false, 0, 0, false, 1.0, 12, false, 0, false},
      {"fp32 TN tf32, strided batch, fp16 out", 6, 4, 70, 3, MP_FP32, MP_FP32, MP_FP16, true, false,
       true, 2, 0, false, 0.5, 14, false, 0, false},
      {"fp16 NT, broadcast B, bf16 out", 9, 5, 33, 2, MP_FP16, MP_FP16, MP_BF16, false, true, false,
       1, 1, false, -2.0, 8, false, 0, false},
      {"bf16 TT, pointer array", 4, 6, 64, 3, MP_BF16, MP_BF16, MP_BF16, true, true, false, 0, 0,
       true, 1.0, 30, false, 0, false},
      {"e4m3 x e5m2, k 1", 3, 3, 1, 2, MP_FP8_E4M3, MP_FP8_E5M2, MP_BF16, true, false, false, 1, 0,
       false, 1.0, 4, false, 0, false},
      {"fp64 sources", 7, 3, 40, 1, MP_FP64, MP_FP64, MP_FP64, false, false, false, 3, 0, false,
       1.0, 40, false, 0, false},
      {"fp32 with an inf", 8, 8, 32, 1, MP_FP32, MP_FP32, MP_FP32, false, true, false, 0, 0, false,
       1.0, 20, true, 0, false},
      {"fp32 GELU + fp16 bias, strided batch", 11, 5, 40, 2, MP_FP32, MP_FP32, MP_BF16, false,
       false, false, 1, 0, false, 0.5, 6, false, MP_SH_EPI_GELU, true},
      {"fp16 ReLU, pointer array", 6, 7, 36, 3, MP_FP16, MP_FP16, MP_FP16, true, false, false, 0, 0,
       true, 1.0, 5, false, MP_SH_EPI_RELU, false},
  };
  /* cuBLASLt FP8 calls with per-tensor scales of A, B and D (0: none) */
  struct scaled {
    config c;
    float scales[3];
  };
  const scaled fp8[] = {
      {{"e4m3 x e5m2 at scales, e4m3 D at its scale, strided batch", 9, 6, 70, 2, MP_FP8_E4M3,
        MP_FP8_E5M2, MP_FP8_E4M3, true, false, false, 1, 0, false, 0.75, 6, false, 0, false},
       {0.013f, 3.7f, 51.0f}},
      {{"e4m3 x e4m3 at scales, bf16 D, GELU + bias", 7, 5, 33, 1, MP_FP8_E4M3, MP_FP8_E4M3,
        MP_BF16, false, true, false, 0, 0, false, 1.0, 5, false, MP_SH_EPI_GELU, true},
       {0.37f, 0.5f, 0}},
      {{"e5m2 x e4m3, e4m3 D without a scale (saturating)", 5, 5, 40, 1, MP_FP8_E5M2, MP_FP8_E4M3,
        MP_FP8_E4M3, false, false, false, 0, 0, false, 4.0, 4, false, 0, false},
       {0, 0, 0}},
  };
  for (const config &c : configs)
    run_config(c, NULL);
  /* compute type 16F: the current precision's fp16 chain kernel */
  const config f16 = {"fp16 compute 16F (fp16 sums), strided batch, k 300",
                      9,
                      130,
                      300,
                      2,
                      MP_FP16,
                      MP_FP16,
                      MP_FP16,
                      false,
                      true,
                      false,
                      1,
                      0,
                      false,
                      1.0,
                      6,
                      false,
                      0,
                      false};
  run_config(f16, NULL, NULL, true);
  for (const scaled &f : fp8)
    run_config(f.c, f.scales);
  /* block-scaled FP8 (one matrix, as cuBLASLt takes them) */
  const config mx = {"e4m3 x e4m3, MX blocks on both, m across a 128-row tile, bf16 D",
                     130,
                     5,
                     96,
                     1,
                     MP_FP8_E4M3,
                     MP_FP8_E4M3,
                     MP_BF16,
                     true,
                     false,
                     false,
                     2,
                     0,
                     false,
                     0.5,
                     4,
                     false,
                     0,
                     false};
  const config h128 = {"e4m3 x e5m2, 1x128 blocks on A, 128x128 on B, k ends inside a block",
                       9,
                       140,
                       200,
                       1,
                       MP_FP8_E4M3,
                       MP_FP8_E5M2,
                       MP_BF16,
                       true,
                       false,
                       false,
                       0,
                       0,
                       false,
                       1.0,
                       4,
                       false,
                       0,
                       false};
  const int mx_modes[2] = {MP_SH_BLOCKS_VEC32_UE8M0, MP_SH_BLOCKS_VEC32_UE8M0},
            h_modes[2] = {MP_SH_BLOCKS_VEC128_32F, MP_SH_BLOCKS_BLK128X128_32F};
  run_config(mx, NULL, mx_modes);
  run_config(h128, NULL, h_modes);
  for (int kind = MP_SHADOW_CONV_FWD; kind <= MP_SHADOW_CONV_BWD_FILTER; kind++)
    for (int v = 0; v < 16; v++)
      run_conv((mp_shadow_conv_kind)kind, v & 1, v & 2, v & 4 ? 3 : 0, v & 8);
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("shadow kernels on the CPU: %zu GEMMs, every candidate bit for bit as the host path\n",
         sizeof configs / sizeof configs[0] + sizeof fp8 / sizeof fp8[0] + 2);
  return 0;
}
