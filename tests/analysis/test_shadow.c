/* Shadow execution definitions against an independent straightforward
 * implementation: double-precision loops over the operands, casts by rint()
 * at the format's quantum (ref.h, no analysis/convert.c), fp32 accumulation
 * as float(acc + a*b). Every candidate's output is compared element by
 * element, and every metric with the one computed here from those outputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "analysis/shadow.h"
#include "analysis/shadow_core.h"
#include "ref.h"

/* --- the independent implementation --- */

static mp_target tgt_of(mp_dtype d) {
  return d == MP_FP16       ? MP_TGT_FP16
         : d == MP_BF16     ? MP_TGT_BF16
         : d == MP_FP8_E4M3 ? MP_TGT_FP8_E4M3
                            : MP_TGT_FP8_E5M2;
}

/* RNE into the format; fp16/bf16 overflow to inf, fp8 saturates (satfinite). */
static double cast(double x, mp_dtype fmt) {
  if (x == 0 || isnan(x)) return x;
  mp_target t = tgt_of(fmt);
  double r = ref_round(x, t);
  if (r > ref_formats[t].max_finite)
    r = (fmt == MP_FP16 || fmt == MP_BF16) ? INFINITY : ref_formats[t].max_finite;
  return x < 0 ? -r : r;
}

typedef struct ref_gemm {
  int m, n, k, batch;
  const float *a, *b; /* column-major, a: lda x ..., batch strides sa, sb */
  int lda, ldb, sa, sb;
  bool ta, tb;
  double alpha;
  int epi;           /* 0 none, 1 ReLU, 2 GELU (tanh form) */
  const float *bias; /* m values per batch matrix, bias_stride apart, or NULL */
  int bias_stride;
} ref_gemm;

/* The epilogue on a candidate's fp32 value, one fp32 rounding per step
 * (double arithmetic rounded to float is fp32 arithmetic for + and *). */
static double epi_f(int epi, double v) {
  if (epi == 1) return v > 0 || isnan(v) ? v : 0.0;
  if (epi != 2) return v;
  float x = (float)v;
  float x3 = (float)((double)(float)((double)x * x) * x);
  float c0 = (float)sqrt(2.0 / M_PI), c1 = (float)0.044715;
  float u = (float)((double)c0 * (double)(float)(x + (double)(float)((double)c1 * x3)));
  return (float)((double)(float)(0.5 * x) * (double)(float)(1.0 + (double)tanhf(u)));
}
/* ... and on the reference, in double. */
static double epi_d(int epi, double x) {
  if (epi == 1) return x > 0 || isnan(x) ? x : 0.0;
  if (epi != 2) return x;
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double opa(const ref_gemm *g, int bt, int i, int kk) {
  return g->a[bt * g->sa + (g->ta ? kk + i * g->lda : i + kk * g->lda)];
}
static double opb(const ref_gemm *g, int bt, int kk, int j) {
  return g->b[bt * g->sb + (g->tb ? j + kk * g->ldb : kk + j * g->ldb)];
}

/* Operand value of a candidate for op(A) (which 0) or op(B) (which 1). */
typedef struct ref_cand {
  mp_dtype fmt;    /* MP_FP32: keep */
  int kind;        /* 0 plain cast, 1 per-tensor scale, 2 mx blocks, 3 loss scale */
  double scale[2]; /* kind 1 */
  int lscale[2];   /* kind 3 */
  int lout;        /* kind 3: the output's own scale beyond the operands' */
  mp_dtype out;
  bool acc16; /* partial sums rounded to fp16 (compute type 16F), else fp32 */
} ref_cand;

static double mx_exp(double amax, mp_dtype fmt) {
  float v = (float)amax * (float)(1.0 / ref_formats[tgt_of(fmt)].max_finite);
  if (v == 0) return -127;
  return ceil(log2((double)v));
}

static double cand_val(const ref_gemm *g, const ref_cand *c, int which, int bt, int row, int kk) {
  double x = which ? opb(g, bt, kk, row) : opa(g, bt, row, kk);
  switch (c->kind) {
  case 0:
    return c->fmt == MP_FP32 ? x : cast(x, c->fmt);
  case 1:
    return cast((double)(float)(x * c->scale[which]), c->fmt);
  case 3:
    return cast(ldexp(x, c->lscale[which]), c->fmt);
  default: {
    int k0 = kk / 32 * 32, k1 = k0 + 32 < g->k ? k0 + 32 : g->k;
    double amax = 0;
    for (int t = k0; t < k1; t++) {
      double v = fabs(which ? opb(g, bt, t, row) : opa(g, bt, row, t));
      if (v > amax) amax = v;
    }
    double e = mx_exp(amax, c->fmt);
    return ldexp(cast(ldexp(x, -(int)e), c->fmt), (int)e);
  }
  }
}

/* D of the candidate, m x n per batch, and the double reference; ez (NULL:
 * none) marks the outputs whose zero the candidate's epilogue made of a
 * non-zero value (no flush). */
static void ref_run(const ref_gemm *g, const ref_cand *c, double *d, double *ref,
                    unsigned char *ez) {
  for (int bt = 0; bt < g->batch; bt++)
    for (int j = 0; j < g->n; j++)
      for (int i = 0; i < g->m; i++) {
        double r = 0;
        float acc = 0;
        for (int kk = 0; kk < g->k; kk++) {
          r += opa(g, bt, i, kk) * opb(g, bt, kk, j);
          double p = cand_val(g, c, 0, bt, i, kk) * cand_val(g, c, 1, bt, j, kk);
          /* fp16 sums: the double sum is exact for these tests' fp16 data */
          acc = c->acc16 ? (float)cast((double)acc + p, MP_FP16) : (float)((double)acc + p);
        }
        double v = acc;
        if (c->kind == 1) {
          double inv_a = (float)(1.0 / c->scale[0]), inv_b = (float)(1.0 / c->scale[1]);
          v = (float)((float)((float)(v * inv_a) * inv_b) * g->alpha);
        } else {
          v = (float)(v * g->alpha);
        }
        double bv = g->bias ? g->bias[bt * g->bias_stride + i] : 0;
        if (g->bias) v = (float)(v + bv);
        double vin = v;
        v = epi_f(g->epi, v);
        if (c->kind == 3) v = ldexp(v, c->lout);
        if (c->out != MP_FP32) v = cast(v, c->out);
        if (c->kind == 3) v = ldexp(v, -(c->lscale[0] + c->lscale[1] + c->lout));
        size_t o = (size_t)bt * g->m * g->n + i + (size_t)j * g->m;
        d[o] = v;
        ref[o] = epi_d(g->epi, g->alpha * r + bv);
        if (ez) ez[o] = g->epi && vin != 0 && !isnan(vin) && epi_f(g->epi, vin) == 0;
      }
}

static void ref_metrics(const double *d, const double *ref, const unsigned char *ez, size_t n,
                        mp_shadow_metrics *m) {
  double se = 0, sr = 0, md = 0, mr = 0;
  uint64_t nz = 0, fl = 0, nf = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isfinite(ref[i])) continue; /* over the outputs whose reference is finite */
    sr += ref[i] * ref[i];
    mr = fmax(mr, fabs(ref[i]));
    if (!isfinite(d[i])) {
      nf++;
      continue;
    }
    se += (d[i] - ref[i]) * (d[i] - ref[i]);
    md = fmax(md, fabs(d[i] - ref[i]));
    if (ref[i] != 0) {
      nz++;
      fl += d[i] == 0 && !(ez && ez[i]); /* zeros of rounding, not the epilogue's */
    }
  }
  m->nonfinite = nf;
  m->rel_l2 = nf ? INFINITY : sqrt(se / sr);
  m->max_rel = nf ? INFINITY : md / mr;
  m->flushed = nz ? (double)fl / (double)nz : 0;
}

/* --- the code under test, on the same data --- */

static void to_gemm(const ref_gemm *r, mp_shadow_gemm *g) {
  memset(g, 0, sizeof *g);
  g->m = r->m;
  g->n = r->n;
  g->k = r->k;
  g->batch = r->batch;
  g->a = (mp_shadow_operand){MP_FP32, r->a, NULL, r->lda, r->sa, r->ta, NULL, NULL, 0, 0};
  g->b = (mp_shadow_operand){MP_FP32, r->b, NULL, r->ldb, r->sb, r->tb, NULL, NULL, 0, 0};
  g->alpha = r->alpha;
  g->out = MP_FP32;
  g->epilogue = r->epi;
  g->bias = r->bias;
  g->bias_dtype = MP_FP32;
  g->bias_stride = r->bias_stride;
}

static void close_to(double got, double want) {
  if (isnan(want)) {
    assert_true(isnan(got));
    return;
  }
  if (isinf(want)) {
    assert_true(isinf(got));
    return;
  }
  assert_true(fabs(got - want) <= 1e-12 * fabs(want) + 1e-300);
}

/* Run candidate c through mp_shadow_run and the reference; outputs must match
 * exactly, metrics to rounding of the sums. Returns the metrics. */
static mp_shadow_metrics check(const ref_gemm *r, mp_shadow_cand cand, const ref_cand *rc,
                               mp_shadow_gemm *g, mp_amax_history hist[2]) {
  size_t n = (size_t)r->m * r->n * r->batch;
  double *d = malloc(n * sizeof *d), *ref = malloc(n * sizeof *ref),
         *cref = malloc(n * sizeof *cref);
  float *cap = malloc(n * sizeof *cap);
  assert_non_null(d);
  assert_non_null(ref);
  assert_non_null(cref);
  assert_non_null(cap);
  unsigned char *ez = malloc(n);
  assert_non_null(ez);
  ref_run(r, rc, d, ref, ez);
  g->capture[cand] = cap;
  g->capture_ref = cref;
  mp_shadow_metrics got[MP_SH_COUNT], want;
  assert_int_equal(mp_shadow_run(g, 1u << cand, hist, got), 1u << cand);
  for (size_t i = 0; i < n; i++) {
    if (isnan(d[i]))
      assert_true(isnan(cap[i]));
    else if (cap[i] != d[i])
      fail_msg("%s: output %zu is %.9g, want %.9g", mp_shadow_cand_name(cand), i, cap[i], d[i]);
    close_to(cref[i], ref[i]);
  }
  ref_metrics(d, ref, ez, n, &want);
  free(ez);
  close_to(got[cand].rel_l2, want.rel_l2);
  close_to(got[cand].max_rel, want.max_rel);
  assert_true(got[cand].flushed == want.flushed);
  assert_int_equal(got[cand].nonfinite, want.nonfinite);
  g->capture[cand] = NULL;
  g->capture_ref = NULL;
  free(d);
  free(ref);
  free(cref);
  free(cap);
  return got[cand];
}

/* Random values over several binades, both signs. */
static void fill(float *v, size_t n, uint64_t seed, int lo, int hi) {
  for (size_t i = 0; i < n; i++) {
    uint64_t r = ref_rand(&seed);
    double f = 1.0 + (double)(r & 0xffffff) / 0x1p24;
    int e = lo + (int)((r >> 24) % (uint64_t)(hi - lo + 1));
    v[i] = (float)((r >> 40 & 1 ? -1 : 1) * ldexp(f, e));
  }
}

/* A 19x23 product, k = 45 (an MXFP8 block of 32 and one of 13), A transposed,
 * two strided batch matrices, alpha 0.75. */
enum { M = 19, N = 23, K = 45, LDA = 47, LDB = 50, BATCH = 2 };
static float A[BATCH * LDA * M], B[BATCH * LDB * N];

static ref_gemm base_gemm(void) {
  fill(A, sizeof A / sizeof A[0], 1, -6, 5);
  fill(B, sizeof B / sizeof B[0], 2, -4, 3);
  return (ref_gemm){M,       N,       K,    BATCH, A,    B, LDA,  LDB,
                    LDA * M, LDB * N, true, false, 0.75, 0, NULL, 0};
}

static void fp16_and_bf16_round_operands_and_output(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  ref_cand h = {.fmt = MP_FP16, .out = MP_FP16}, b = {.fmt = MP_BF16, .out = MP_BF16};
  mp_shadow_metrics mh = check(&r, MP_SH_FP16, &h, &g, NULL);
  mp_shadow_metrics mb = check(&r, MP_SH_BF16, &b, &g, NULL);
  /* bf16 keeps 8 significant bits, fp16 11: its error is several times larger. */
  assert_true(mb.rel_l2 > 4 * mh.rel_l2);
  assert_true(mh.rel_l2 > 0 && mh.rel_l2 < 0x1p-9);
  close_to(mp_shadow_sqnr_db(mh.rel_l2), -20 * log10(mh.rel_l2));
}

static void current_is_the_calls_own_precision(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  ref_cand c = {.fmt = MP_FP32, .out = MP_FP32};
  mp_shadow_metrics m = check(&r, MP_SH_CURRENT, &c, &g, NULL);
  assert_true(m.rel_l2 < 0x1p-20); /* fp32 accumulation only */
  g.fp32_as = MP_TF32;
  mp_shadow_metrics out[MP_SH_COUNT];
  assert_int_equal(mp_shadow_run(&g, 1u << MP_SH_CURRENT, NULL, out), 1u << MP_SH_CURRENT);
  assert_true(out[MP_SH_CURRENT].rel_l2 > 16 * m.rel_l2); /* 10-bit tf32 operands */
}

/* An fp32 call on fp16 or bf16 Tensor Cores (compute 32F_FAST_16F or
 * 32F_FAST_16BF, or cuBLAS's deprecated TENSOR_OP math mode, the same as
 * FAST_16F): its own precision rounds the fp32 operands to that format and
 * keeps D fp32; an operand beyond fp16's range becomes inf there. */
/* A call of compute type 16F (cublasHgemm, CUBLAS_COMPUTE_16F) accumulates
 * in fp16: its current precision rounds every partial sum to fp16 (k
 * ascending), the other candidates keep fp32 sums. k = 4096 fp16 ones: fp16
 * sums stop at 2048 (2048 + 1 rounds back to 2048), so the call's own error
 * is 1/2 where fp32 sums are exact; and on random fp16 data every output
 * is the independent fp16 chain's, bit for bit. */
static void current_of_a_16f_call_accumulates_in_fp16(void **state) {
  (void)state;
  enum { KK = 4096 };
  static uint16_t ones[KK];
  for (int i = 0; i < KK; i++)
    ones[i] = 0x3c00; /* 1.0 */
  mp_shadow_gemm g;
  memset(&g, 0, sizeof g);
  g.m = 1, g.n = 1, g.k = KK, g.batch = 1, g.alpha = 1, g.out = MP_FP16;
  g.a = (mp_shadow_operand){MP_FP16, ones, NULL, 1, 0, false, NULL, NULL, 0, 0};
  g.b = (mp_shadow_operand){MP_FP16, ones, NULL, KK, 0, false, NULL, NULL, 0, 0};
  g.accum = MP_FP16;
  float cur, h16;
  double ref;
  g.capture[MP_SH_CURRENT] = &cur;
  g.capture[MP_SH_FP16] = &h16;
  g.capture_ref = &ref;
  mp_shadow_metrics out[MP_SH_COUNT];
  unsigned mask = 1u << MP_SH_CURRENT | 1u << MP_SH_FP16;
  assert_int_equal(mp_shadow_run(&g, mask, NULL, out), (int)mask);
  assert_true(ref == 4096 && cur == 2048 && h16 == 4096);
  assert_true(out[MP_SH_CURRENT].rel_l2 == 0.5 && out[MP_SH_CURRENT].max_rel == 0.5);
  assert_true(out[MP_SH_FP16].rel_l2 == 0);
  g.accum = MP_FP32; /* the same operands summed in fp32 (cublasGemmEx, COMPUTE_32F) */
  assert_int_equal(mp_shadow_run(&g, mask, NULL, out), (int)mask);
  assert_true(cur == 4096 && out[MP_SH_CURRENT].rel_l2 == 0);

  /* random fp16 operands, against the independent fp16 chain */
  ref_gemm r = base_gemm();
  for (size_t i = 0; i < sizeof A / sizeof A[0]; i++)
    A[i] = (float)cast(A[i], MP_FP16);
  for (size_t i = 0; i < sizeof B / sizeof B[0]; i++)
    B[i] = (float)cast(B[i], MP_FP16);
  to_gemm(&r, &g);
  g.out = MP_FP16;
  g.accum = MP_FP16;
  ref_cand c16 = {.fmt = MP_FP32, .out = MP_FP16, .acc16 = true},
           c32 = {.fmt = MP_FP32, .out = MP_FP16};
  mp_shadow_metrics m16 = check(&r, MP_SH_CURRENT, &c16, &g, NULL);
  g.accum = MP_FP32;
  mp_shadow_metrics m32 = check(&r, MP_SH_CURRENT, &c32, &g, NULL);
  assert_true(m16.rel_l2 > m32.rel_l2);
  /* one step at the rounding boundaries: RNE of the exact s + a*b, once */
  assert_true(mp_sh_fma_fp16(1, 1, 2048) == 2048);               /* tie to even */
  assert_true(mp_sh_fma_fp16(1, 1, 2050) == 2052);               /* tie to even, up */
  assert_true(mp_sh_fma_fp16(0x1p-12f, 0x1p-12f, 2048) == 2048); /* far below */
  assert_true(mp_sh_fma_fp16(1.0f + 0x1p-10f, 1, 2048) == 2050); /* just above the tie */
  assert_true(mp_sh_fma_fp16(0x1p-11f, 1, 1) == 1);              /* 1 + ulp/2: to even */
  assert_true(mp_sh_fma_fp16(0x1p-11f, 1.0f + 0x1p-10f, 1) == 1.0f + 0x1p-10f); /* above */
  assert_true(mp_sh_fma_fp16(2, 1, 65504) == 65504); /* below 65520: rounds back */
  assert_true(isinf(mp_sh_fma_fp16(16, 1, 65504)));  /* 65520: the sum overflows */
  /* where rounding the sum to fp32 first would land on an fp16 tie: the
   * exact 2049 + 244*2^-21 is above the tie (2050), 2051 - 2^-20 below (2050) */
  assert_true(mp_sh_fma_fp16(1.0f + 20 * 0x1p-10f, 1.0f - 39 * 0x1p-11f, 2048) == 2050);
  assert_true(mp_sh_fma_fp16(1.0f + 0x1p-10f, 1.0f - 0x1p-10f, 2050) == 2050);
}

static void current_of_an_fp32_call_on_16_bit_tensor_cores_rounds_its_operands(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  const mp_dtype fmts[2] = {MP_FP16, MP_BF16};
  for (int i = 0; i < 2; i++) {
    g.fp32_as = fmts[i];
    ref_cand c = {.fmt = fmts[i], .out = MP_FP32};
    mp_shadow_metrics m = check(&r, MP_SH_CURRENT, &c, &g, NULL);
    assert_true(m.rel_l2 > 0x1p-14);
  }
  A[0] = 1e5f; /* fp16 overflows it: every output of row 0 is non-finite */
  g.fp32_as = MP_FP16;
  ref_cand c = {.fmt = MP_FP16, .out = MP_FP32};
  mp_shadow_metrics m = check(&r, MP_SH_CURRENT, &c, &g, NULL);
  assert_true(m.nonfinite > 0);
  g.fp32_as = MP_FP32;
  ref_cand exact = {.fmt = MP_FP32, .out = MP_FP32};
  assert_int_equal(check(&r, MP_SH_CURRENT, &exact, &g, NULL).nonfinite, 0);
}

static void fp8_current_scaling_maps_each_tensors_amax_to_the_format_max(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  for (int f = 0; f < 2; f++) {
    mp_dtype fmt = f ? MP_FP8_E5M2 : MP_FP8_E4M3;
    ref_cand c = {.fmt = fmt, .kind = 1, .out = MP_BF16};
    for (int w = 0; w < 2; w++) {
      double amax = 0;
      const float *v = w ? B : A;
      size_t n = w ? sizeof B / sizeof B[0] : sizeof A / sizeof A[0];
      /* only the logical elements count: A is K x M in LDA columns, B K x N */
      for (size_t i = 0; i < n; i++) {
        size_t ld = w ? LDB : LDA, row = i % ld;
        if (row < K) amax = fmax(amax, fabs(v[i]));
      }
      c.scale[w] = (float)(ref_formats[tgt_of(fmt)].max_finite / amax);
      assert_true(mp_fp8_current_scale((float)amax, fmt) == (float)c.scale[w]);
    }
    check(&r, f ? MP_SH_E5M2_CURRENT : MP_SH_E4M3_CURRENT, &c, &g, NULL);
  }
  assert_true(mp_fp8_current_scale(0, MP_FP8_E4M3) == 1.0f);
  assert_true(mp_fp8_current_scale(INFINITY, MP_FP8_E4M3) == 1.0f);
  assert_true(mp_fp8_current_scale(NAN, MP_FP8_E4M3) == 1.0f);
  assert_true(mp_fp8_current_scale(0x1p-149f, MP_FP8_E5M2) == FLT_MAX);
}

static void mxfp8_blocks_run_along_k_and_the_last_one_straddles_its_end(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  /* The 13-element tail of every row of op(A) is 2^-20 smaller than its
   * first block: one scale for the row would flush it; its own block scale does not. */
  for (int bt = 0; bt < BATCH; bt++)
    for (int i = 0; i < M; i++)
      for (int kk = 32; kk < K; kk++)
        A[bt * LDA * M + kk + i * LDA] = ldexpf(A[bt * LDA * M + kk + i * LDA], -20);
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  for (int f = 0; f < 2; f++) {
    ref_cand c = {.fmt = f ? MP_FP8_E5M2 : MP_FP8_E4M3, .kind = 2, .out = MP_BF16};
    check(&r, f ? MP_SH_MXFP8_E5M2 : MP_SH_MXFP8_E4M3, &c, &g, NULL);
  }
  /* the exponent rule: amax/448 rounded up to a power of two */
  assert_int_equal(mp_mx_scale_exp(448, MP_FP8_E4M3), 0);
  assert_int_equal(mp_mx_scale_exp(449, MP_FP8_E4M3), 1);
  assert_int_equal(mp_mx_scale_exp(224, MP_FP8_E4M3), -1);
  assert_int_equal(mp_mx_scale_exp(0, MP_FP8_E4M3), -127);
  assert_int_equal(mp_mx_scale_exp(57344, MP_FP8_E5M2), 0);
}

/* shadow_core.h's bit-level helpers (also run by the device kernels) against
 * libm: the MX exponent as frexpf gives it, the power-of-two scaling as
 * ldexpf, over normal, subnormal, power-of-two and extreme values. */
static void scale_helpers_match_libm(void **state) {
  (void)state;
  static const mp_dtype fp8[2] = {MP_FP8_E4M3, MP_FP8_E5M2};
  uint32_t r = 12345;
  for (int i = 0; i < 400000; i++) {
    r = r * 1664525u + 1013904223u;
    uint32_t bits = (i < 2048   ? (uint32_t)i << 12
                     : i < 4096 ? (uint32_t)(i - 2048) << 20
                                : r) &
                    0x7fffffffu; /* finite and inf magnitudes, NaN skipped below */
    float a;
    memcpy(&a, &bits, sizeof a);
    if (isnan(a)) continue;
    for (int f = 0; f < 2; f++) {
      float mx = f ? 57344.0f : 448.0f;
      int want;
      if (isinf(a)) {
        want = 127;
      } else {
        float v = a * (1.0f / mx);
        if (!(v > 0)) {
          want = -127;
        } else {
          float fr = frexpf(v, &want);
          if (fr == 0.5f) want -= 1;
          want = want < -127 ? -127 : want > 127 ? 127 : want;
        }
      }
      assert_int_equal(mp_mx_scale_exp(a, fp8[f]), want);
    }
    int e = (int)(r % 507) - 252; /* [-252, 254] */
    float x = (r & 0x10000u) ? -a : a, got = mp_pow2_scale(x, e), lib = ldexpf(x, e);
    if (memcmp(&got, &lib, sizeof got))
      fail_msg("pow2_scale(%a, %d) = %a, ldexpf %a", x, e, got, lib);
  }
}

static void delayed_scaling_uses_the_amax_of_earlier_calls(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  mp_amax_history hist[2];
  mp_amax_history_init(&hist[0]);
  mp_amax_history_init(&hist[1]);
  /* Call 1: no history, no scale yet: it only seeds the history. */
  ref_cand c = {.fmt = MP_FP8_E4M3, .kind = 1, .scale = {1, 1}, .out = MP_BF16};
  mp_shadow_metrics first[MP_SH_COUNT];
  assert_int_equal(mp_shadow_run(&g, MP_SHADOW_ALL, hist, first),
                   MP_SHADOW_ALL & ~((1u << MP_SH_E4M3_DELAYED) | (1u << MP_SH_E5M2_DELAYED)));
  assert_int_equal(hist[0].n, 1);
  float amax_a1 = hist[0].amax[0], amax_b1 = hist[1].amax[0];
  /* Call 2 with A doubled: the scale comes from call 1's amax, so A's largest
   * values now saturate at 448. */
  for (size_t i = 0; i < sizeof A / sizeof A[0]; i++)
    A[i] *= 2;
  c.scale[0] = (float)(448.0 / amax_a1);
  c.scale[1] = (float)(448.0 / amax_b1);
  mp_shadow_metrics m2 = check(&r, MP_SH_E4M3_DELAYED, &c, &g, hist);
  assert_true(hist[0].amax[1] == 2 * amax_a1);
  mp_shadow_metrics cur[MP_SH_COUNT];
  assert_int_equal(mp_shadow_run(&g, 1u << MP_SH_E4M3_CURRENT, NULL, cur),
                   1u << MP_SH_E4M3_CURRENT);
  assert_true(m2.max_rel > cur[MP_SH_E4M3_CURRENT].max_rel);
  /* Call 3: the max over the history (2 * amax_a1) decides. */
  c.scale[0] = (float)(448.0 / (2.0 * amax_a1));
  check(&r, MP_SH_E4M3_DELAYED, &c, &g, hist);
}

static void delayed_history_holds_1024_calls_and_keeps_the_scale_on_zero_amax(void **state) {
  (void)state;
  mp_amax_history *h = malloc(sizeof *h);
  assert_non_null(h);
  mp_amax_history_init(h);
  assert_true(mp_amax_history_scale(h, MP_FP8_E4M3) == 1.0f);
  mp_amax_history_push(h, 0);
  assert_true(mp_amax_history_scale(h, MP_FP8_E4M3) == 1.0f); /* amax 0: previous scale */
  mp_amax_history_init(h);
  mp_amax_history_push(h, 896);
  for (int i = 0; i < MP_SHADOW_HISTORY_LEN - 1; i++)
    mp_amax_history_push(h, 7);
  assert_true(mp_amax_history_scale(h, MP_FP8_E4M3) == 0.5f); /* 896 still inside */
  mp_amax_history_push(h, 7);                                 /* pushes 896 out */
  assert_true(mp_amax_history_scale(h, MP_FP8_E4M3) == 64.0f);
  assert_true(mp_amax_history_scale(h, MP_FP8_E5M2) == 8192.0f);
  mp_amax_history_push(h, INFINITY);
  assert_true(mp_amax_history_scale(h, MP_FP8_E4M3) == 64.0f); /* non-finite: kept */
  free(h);
}

static void fp16_output_overflow_is_counted_as_nonfinite(void **state) {
  (void)state;
  /* Outputs ~1e5: fine in bf16, inf in fp16. */
  ref_gemm r = base_gemm();
  for (size_t i = 0; i < sizeof A / sizeof A[0]; i++)
    A[i] = 3000.0f + (float)(i % 7);
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  ref_cand h = {.fmt = MP_FP16, .out = MP_FP16};
  mp_shadow_metrics m = check(&r, MP_SH_FP16, &h, &g, NULL);
  assert_true(m.nonfinite > 0);
  assert_true(isinf(m.rel_l2));
  assert_true(isinf(-mp_shadow_sqnr_db(m.rel_l2)));
  mp_shadow_metrics out[MP_SH_COUNT];
  assert_int_equal(mp_shadow_run(&g, 1u << MP_SH_BF16, NULL, out), 1u << MP_SH_BF16);
  assert_int_equal(out[MP_SH_BF16].nonfinite, 0);
}

/* An operand's Inf or NaN makes the reference non-finite at the outputs that
 * read it; the metrics leave those out, so each candidate is measured on the
 * others: the call's own fp32 loses nothing. fp8 current scaling saturates
 * the Inf (amax inf: scale 1) to a finite output there, which must not turn
 * the sums into NaN (a worst-of merge would keep 0 for it). */
static void outputs_whose_reference_is_not_finite_are_left_out(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  A[0] = INFINITY;      /* op(A)(0, 0) of batch 0: row 0's outputs are inf */
  B[LDB * N + 3] = NAN; /* op(B)(3, 0) of batch 1: column 0's outputs are NaN */
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  ref_cand c = {.fmt = MP_FP32, .out = MP_FP32};
  mp_shadow_metrics m = check(&r, MP_SH_CURRENT, &c, &g, NULL);
  assert_int_equal(m.nonfinite, 0);
  assert_true(m.rel_l2 > 0 && m.rel_l2 < 0x1p-20);
  ref_cand b = {.fmt = MP_BF16, .out = MP_BF16};
  assert_true(check(&r, MP_SH_BF16, &b, &g, NULL).rel_l2 < 0x1p-8);
  const mp_shadow_cand fp8[2] = {MP_SH_E4M3_CURRENT, MP_SH_E5M2_CURRENT};
  for (int i = 0; i < 2; i++) {
    mp_shadow_metrics out[MP_SH_COUNT];
    assert_int_equal(mp_shadow_run(&g, 1u << fp8[i], NULL, out), 1u << fp8[i]);
    assert_int_equal(out[fp8[i]].nonfinite, 0);
    assert_true(out[fp8[i]].rel_l2 > 0x1p-8 && out[fp8[i]].rel_l2 < 0.25); /* not NaN */
  }
}

/* Every output reads an operand's Inf: no output has an error to measure.
 * The call is not a measurement (-EDOM) for any candidate, rather than
 * metrics of 0 that read as "no error", pass every limit and would count as
 * a measured call (mp_shadow_agg's calls) toward a verdict or best fp8
 * recipe. Delayed scaling's history still takes the call's amax. */
static void a_call_with_no_finite_reference_is_not_measured(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  for (size_t i = 0; i < sizeof A / sizeof A[0]; i++)
    A[i] = INFINITY;
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  mp_amax_history hist[2];
  mp_amax_history_init(&hist[0]);
  mp_amax_history_init(&hist[1]);
  mp_amax_history_push(&hist[0], 1); /* an earlier call: the delayed candidates run too */
  mp_amax_history_push(&hist[1], 1);
  mp_shadow_metrics out[MP_SH_COUNT];
  assert_int_equal(mp_shadow_run(&g, MP_SHADOW_ALL, hist, out), -EDOM);
  assert_int_equal(hist[0].n, 2);
  for (int c = 0; c < MP_SH_COUNT; c++)
    assert_int_equal(mp_shadow_run(&g, 1u << c, hist, out), -EDOM);
  /* One row of op(A) finite: its outputs are measured, the call counts. */
  ref_gemm f = base_gemm();
  for (size_t i = 0; i < sizeof A / sizeof A[0]; i++)
    if (i % ((size_t)LDA * M) >= (size_t)LDA)
      A[i] = INFINITY; /* op(A) = A^T: row 0 is A's column 0 */
  to_gemm(&f, &g);
  assert_int_equal(mp_shadow_run(&g, 1u << MP_SH_BF16, NULL, out), 1u << MP_SH_BF16);
  assert_true(out[MP_SH_BF16].rel_l2 > 0);
}

/* The accumulator says whether anything was measured: outputs whose
 * reference is inf or NaN are not (their sums read 0, which is not "no
 * error"); one finite reference is. Host and device share it. */
static void the_error_sums_count_the_outputs_measured(void **state) {
  (void)state;
  mp_sh_err e = {0, 0, 0, 0, 0, 0, 0, 0};
  mp_sh_err_add(&e, INFINITY, 1, 0);
  mp_sh_err_add(&e, NAN, NAN, 0);
  mp_sh_err_add(&e, -INFINITY, 0, 0);
  assert_int_equal(e.measured, 0);
  mp_shadow_metrics m;
  assert_false(mp_shadow_metrics_of(&e, &m));
  mp_sh_err f = {0, 0, 0, 0, 0, 0, 0, 0};
  mp_sh_err_add(&f, 0, 0, 0); /* a zero reference met exactly: measured, no error */
  mp_sh_err_merge(&e, &f);
  assert_int_equal(e.measured, 1);
  assert_true(mp_shadow_metrics_of(&e, &m));
  assert_true(m.rel_l2 == 0 && m.nonfinite == 0);
}

static void gradients_flush_at_scale_1_and_fit_at_their_loss_scale(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  fill(B, sizeof B / sizeof B[0], 9, -33, -28); /* ~1e-9: below fp16's 2^-24 */
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  ref_cand h = {.fmt = MP_FP16, .out = MP_FP16};
  mp_shadow_metrics m1 = check(&r, MP_SH_FP16, &h, &g, NULL);
  assert_true(m1.flushed == 1.0); /* every output is zero */

  mp_stats s;
  mp_stats_init(&s, MP_FP32);
  assert_int_equal(mp_scan_contiguous(&s, B, sizeof B / sizeof B[0]), 0);
  int ls = mp_shadow_loss_scale_log2(&s);
  assert_true(ls >= 20 && ls <= 40);
  /* A's values fit fp16: scale 1. */
  mp_stats_init(&s, MP_FP32);
  assert_int_equal(mp_scan_contiguous(&s, A, sizeof A / sizeof A[0]), 0);
  assert_int_equal(mp_shadow_loss_scale_log2(&s), 0);

  g.scale_log2[1] = ls;
  ref_cand hs = {.fmt = MP_FP16, .kind = 3, .lscale = {0, ls}, .out = MP_FP16};
  /* The output carries the scale through its fp16 cast as well. */
  mp_shadow_metrics ms = check(&r, MP_SH_FP16_SCALED, &hs, &g, NULL);
  assert_true(ms.flushed == 0);
  assert_true(ms.rel_l2 < 0x1p-9);
}

/* Operands that fit fp16 whose products do not: the candidate at the
 * operands' scales (1) loses them, at the output's own scale keeps them. */
static void a_product_below_fp16_takes_the_outputs_own_scale(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  fill(A, sizeof A / sizeof A[0], 5, -13, -12); /* ~2^-13: normal in fp16 */
  fill(B, sizeof B / sizeof B[0], 6, -13, -12); /* products ~2^-26 x k: below 2^-24 */
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  mp_stats s;
  mp_stats_init(&s, MP_FP32);
  assert_int_equal(mp_scan_contiguous(&s, A, sizeof A / sizeof A[0]), 0);
  assert_int_equal(mp_shadow_loss_scale_log2(&s), 0); /* A fits at scale 1, B alike */
  ref_cand h0 = {.fmt = MP_FP16, .kind = 3, .out = MP_FP16};
  mp_shadow_metrics m0 = check(&r, MP_SH_FP16_SCALED, &h0, &g, NULL);
  assert_true(m0.rel_l2 > 0x1p-8);
  g.out_scale_log2 = 20;
  ref_cand h = {.fmt = MP_FP16, .kind = 3, .lout = 20, .out = MP_FP16};
  mp_shadow_metrics m = check(&r, MP_SH_FP16_SCALED, &h, &g, NULL);
  assert_true(m.flushed == 0);
  assert_true(m.rel_l2 < 0x1p-9);
}

/* n exact values of fmt, both signs, 1 + m/256 times 2^(lo + r % binades)
 * before the cast, in vals and stored as fmt in bytes. */
static void fill_fp8(mp_dtype fmt, uint8_t *bytes, double *vals, int n, uint64_t *seed, int binades,
                     int lo) {
  for (int i = 0; i < n; i++) {
    uint64_t r = ref_rand(seed);
    vals[i] = cast((r >> 8 & 1 ? -1 : 1) * ldexp(1.0 + (double)(r >> 16 & 0xff) / 256,
                                                 (int)(r % (uint64_t)binades) + lo),
                   fmt);
    mp_store(fmt, bytes, (uint64_t)i, vals[i]);
  }
}

/* An FP8 GEMM as cuBLASLt runs it with per-tensor scale pointers: e4m3 A
 * (m x k) and e5m2 B (k x n) stored, the op multiplies them by sA and sB,
 * accumulates the stored values in fp32 and scales the sum by alpha*sA*sB,
 * and stores an e4m3 D as round(v * sD) (saturating). The shadow's
 * operands are the scaled values: the reference sums (a*sA)(b*sB) in
 * double, fp16 rounds a*sA; the current precision is the op's own, D read
 * back as stored / sD (fp32). */
enum { FM = 7, FN = 5, FK = 37 };
static void fp8_scaled_call(float sa, float sb, const float *sd, mp_dtype out, double alpha,
                            double want_cur[FM * FN], double want_f16[FM * FN],
                            double want_ref[FM * FN], mp_shadow_metrics got[MP_SH_COUNT],
                            float cap_cur[FM * FN], float cap_f16[FM * FN]) {
  static uint8_t a8[FM * FK], b8[FK * FN];
  static double a[FM * FK], b[FK * FN];
  uint64_t seed = 7;
  fill_fp8(MP_FP8_E4M3, a8, a, FM * FK, &seed, 15, -7);
  fill_fp8(MP_FP8_E5M2, b8, b, FK * FN, &seed, 9, -4);
  for (int j = 0; j < FN; j++)
    for (int i = 0; i < FM; i++) {
      double r = 0;
      float acc = 0;
      float h = 0;
      for (int kk = 0; kk < FK; kk++) {
        double x = a[i + kk * FM], y = b[kk + j * FK];
        r += (x * sa) * (y * sb);
        acc = (float)((double)acc + x * y);
        h = (float)((double)h + cast((double)(float)(x * sa), MP_FP16) *
                                    cast((double)(float)(y * sb), MP_FP16));
      }
      int o = i + j * FM;
      want_ref[o] = alpha * r;
      float v = (float)((double)(float)((double)(float)((double)acc * sa) * sb) * (float)alpha);
      if (sd)
        want_cur[o] = (float)(cast((double)(float)((double)v * *sd), out) / (double)*sd);
      else
        want_cur[o] = cast(v, out);
      want_f16[o] = cast((double)(float)((double)h * (float)alpha), MP_FP16);
    }
  mp_shadow_gemm g;
  memset(&g, 0, sizeof g);
  g.m = FM, g.n = FN, g.k = FK, g.batch = 1;
  g.a = (mp_shadow_operand){MP_FP8_E4M3, a8, NULL, FM, 0, false, &sa, NULL, 0, 0};
  g.b = (mp_shadow_operand){MP_FP8_E5M2, b8, NULL, FK, 0, false, &sb, NULL, 0, 0};
  g.alpha = alpha;
  g.out = out;
  g.d_scale = sd;
  g.capture[MP_SH_CURRENT] = cap_cur;
  g.capture[MP_SH_FP16] = cap_f16;
  static double cref[FM * FN];
  g.capture_ref = cref;
  unsigned mask = 1u << MP_SH_CURRENT | 1u << MP_SH_FP16;
  assert_int_equal(mp_shadow_run(&g, mask, NULL, got), (int)mask);
  for (int o = 0; o < FM * FN; o++)
    close_to(cref[o], want_ref[o]);
}

static void fp8_scale_pointers_scale_operands_and_output(void **state) {
  (void)state;
  double cur[FM * FN], f16[FM * FN], ref[FM * FN];
  float cap_cur[FM * FN], cap_f16[FM * FN];
  mp_shadow_metrics got[MP_SH_COUNT], want;
  /* scales that are not powers of two, D's chosen so that some outputs
   * saturate at e4m3's 448 */
  float sa = 0.013f, sb = 3.7f, sd = 510.0f;
  fp8_scaled_call(sa, sb, &sd, MP_FP8_E4M3, 0.75, cur, f16, ref, got, cap_cur, cap_f16);
  int saturated = 0;
  for (int o = 0; o < FM * FN; o++) {
    if (cap_cur[o] != (float)cur[o])
      fail_msg("current output %d is %a, want %a", o, cap_cur[o], cur[o]);
    if (cap_f16[o] != (float)f16[o])
      fail_msg("fp16 output %d is %a, want %a", o, cap_f16[o], f16[o]);
    saturated += fabs(cur[o]) * sd > 447.999; /* 448 / sD in fp32 */
  }
  assert_true(saturated > 0);
  ref_metrics(cur, ref, NULL, FM * FN, &want);
  close_to(got[MP_SH_CURRENT].rel_l2, want.rel_l2);
  close_to(got[MP_SH_CURRENT].max_rel, want.max_rel);
  ref_metrics(f16, ref, NULL, FM * FN, &want);
  close_to(got[MP_SH_FP16].rel_l2, want.rel_l2);
  /* fp16 of the scaled operands is far closer than the op's own fp8 output */
  assert_true(got[MP_SH_FP16].rel_l2 < got[MP_SH_CURRENT].rel_l2 / 8);

  /* no D scale: an e4m3 D saturates at 448 (never inf); A and B still scaled */
  fp8_scaled_call(sa * 8, sb * 4, NULL, MP_FP8_E4M3, 1.0, cur, f16, ref, got, cap_cur, cap_f16);
  saturated = 0;
  for (int o = 0; o < FM * FN; o++) {
    if (cap_cur[o] != (float)cur[o])
      fail_msg("current output %d is %a, want %a", o, cap_cur[o], cur[o]);
    saturated += fabs(cur[o]) == 448;
  }
  assert_true(saturated > 0);
  assert_int_equal(got[MP_SH_CURRENT].nonfinite, 0);
  /* a bf16 D: the scales of A and B alone */
  fp8_scaled_call(sa, sb, NULL, MP_BF16, 0.5, cur, f16, ref, got, cap_cur, cap_f16);
  for (int o = 0; o < FM * FN; o++)
    if (cap_cur[o] != (float)cur[o])
      fail_msg("current output %d is %a, want %a", o, cap_cur[o], cur[o]);
  assert_true(got[MP_SH_CURRENT].rel_l2 < 0x1p-7);
}

/* Block-scaled FP8 operands (MXFP8's VEC32_UE8M0, Hopper's VEC128_32F and
 * BLK128x128_32F): value (r, kk) is stored times the scale of its block,
 * the scale tensors laid out here as cuBLASLt documents them. m crosses a
 * 128-row tile; k = 256 holds 8 MX blocks and 2 of 128. */
enum { QM = 130, QN = 7, QK = 256 };
static float block_scale_of(int mode, int r, int kk) {
  if (mode == MP_SH_BLOCKS_VEC32_UE8M0) return ldexpf(1.0f, (r * 3 + kk / 32 * 5) % 9 - 4);
  if (mode == MP_SH_BLOCKS_VEC128_32F)
    return 0.37f + 0.01f * (float)(r % 7) + 0.1f * (float)(kk / 128);
  return 1.7f + 0.5f * (float)(r / 128) - 0.3f * (float)(kk / 128); /* BLK128x128 */
}
static void *block_layout(int mode, int outer) {
  if (mode == MP_SH_BLOCKS_VEC32_UE8M0) {
    int col_tiles = (QK / 32 + 3) / 4, row_tiles = (outer + 127) / 128;
    uint8_t *t = calloc((size_t)(row_tiles * col_tiles), 512);
    for (int r = 0; r < outer; r++)
      for (int b = 0; b < QK / 32; b++)
        t[((r / 128) * col_tiles + b / 4) * 512 + (r % 32) * 16 + (r % 128) / 32 * 4 + b % 4] =
            (uint8_t)(127 + ilogbf(block_scale_of(mode, r, b * 32)));
    return t;
  }
  if (mode == MP_SH_BLOCKS_VEC128_32F) {
    float *t = calloc((size_t)(outer * (QK / 128)), sizeof *t);
    for (int r = 0; r < outer; r++)
      for (int b = 0; b < QK / 128; b++)
        t[r + b * outer] = block_scale_of(mode, r, b * 128);
    return t;
  }
  int l4 = (QK / 128 + 3) / 4 * 4;
  float *t = calloc((size_t)(((outer + 127) / 128) * l4), sizeof *t);
  for (int r = 0; r < outer; r += 128)
    for (int b = 0; b < QK / 128; b++)
      t[b + r / 128 * l4] = block_scale_of(mode, r, b * 128);
  return t;
}

static void block_scaled_fp8_operands_are_stored_times_their_blocks_scale(void **state) {
  (void)state;
  static uint8_t a8[QM * QK], b8[QK * QN];
  static double a[QM * QK], b[QK * QN];
  uint64_t seed = 21;
  fill_fp8(MP_FP8_E4M3, a8, a, QM * QK, &seed, 9, -4);
  fill_fp8(MP_FP8_E4M3, b8, b, QK * QN, &seed, 9, -4);
  static const int modes[3][2] = {{MP_SH_BLOCKS_VEC32_UE8M0, MP_SH_BLOCKS_VEC32_UE8M0},
                                  {MP_SH_BLOCKS_VEC128_32F, MP_SH_BLOCKS_BLK128X128_32F},
                                  {MP_SH_BLOCKS_BLK128X128_32F, MP_SH_BLOCKS_VEC128_32F}};
  for (int c = 0; c < 3; c++) {
    int ma = modes[c][0], mb = modes[c][1];
    void *sa = block_layout(ma, QM), *sb = block_layout(mb, QN);
    assert_int_equal(mp_sh_blocks_bytes(ma, QM, QK) >= 4, 1);
    static double want_ref[QM * QN], want_cur[QM * QN], want_f16[QM * QN], cref[QM * QN];
    static float cap_cur[QM * QN], cap_f16[QM * QN];
    for (int j = 0; j < QN; j++)
      for (int i = 0; i < QM; i++) {
        double r = 0;
        float cur = 0, h = 0;
        for (int kk = 0; kk < QK; kk++) {
          double x = a[i + kk * QM] * block_scale_of(ma, i, kk),
                 y = b[kk + j * QK] * block_scale_of(mb, j, kk);
          r += x * y;
          cur = (float)((double)cur + (double)(float)x * (double)(float)y);
          h = (float)((double)h +
                      cast((double)(float)x, MP_FP16) * cast((double)(float)y, MP_FP16));
        }
        int o = i + j * QM;
        want_ref[o] = 0.5 * r;
        want_cur[o] = cast((double)(float)((double)cur * 0.5f), MP_BF16);
        want_f16[o] = cast((double)(float)((double)h * 0.5f), MP_FP16);
      }
    mp_shadow_gemm g;
    memset(&g, 0, sizeof g);
    g.m = QM, g.n = QN, g.k = QK, g.batch = 1;
    g.a = (mp_shadow_operand){MP_FP8_E4M3, a8, NULL, QM, 0, false, NULL, sa, ma, QM};
    g.b = (mp_shadow_operand){MP_FP8_E4M3, b8, NULL, QK, 0, false, NULL, sb, mb, QN};
    g.alpha = 0.5;
    g.out = MP_BF16;
    g.capture[MP_SH_CURRENT] = cap_cur;
    g.capture[MP_SH_FP16] = cap_f16;
    g.capture_ref = cref;
    mp_shadow_metrics got[MP_SH_COUNT];
    unsigned mask = 1u << MP_SH_CURRENT | 1u << MP_SH_FP16;
    assert_int_equal(mp_shadow_run(&g, mask, NULL, got), (int)mask);
    for (int o = 0; o < QM * QN; o++) {
      if (cap_cur[o] != (float)want_cur[o])
        fail_msg("modes %d/%d: current output %d is %a, want %a", ma, mb, o, cap_cur[o],
                 want_cur[o]);
      if (cap_f16[o] != (float)want_f16[o])
        fail_msg("modes %d/%d: fp16 output %d is %a, want %a", ma, mb, o, cap_f16[o], want_f16[o]);
      close_to(cref[o], want_ref[o]);
    }
    /* a batch, or a layout that does not match the operand, is refused */
    g.batch = 2;
    assert_int_equal(mp_shadow_run(&g, mask, NULL, got), -EINVAL);
    g.batch = 1;
    g.a.block_outer = QM - 1;
    assert_int_equal(mp_shadow_run(&g, mask, NULL, got), -EINVAL);
    free(sa);
    free(sb);
  }
  /* E8M0 bytes: 2^(e - 127), 0 is 2^-127, 0xff NaN */
  uint8_t t[512] = {0};
  t[0] = 127, t[1] = 0, t[2] = 0xff;
  assert_true(mp_sh_block_scale(MP_SH_BLOCKS_VEC32_UE8M0, t, 0, 0, 1, 96) == 1.0f);
  assert_true(mp_sh_block_scale(MP_SH_BLOCKS_VEC32_UE8M0, t, 0, 32, 1, 96) == 0x1p-127f);
  assert_true(isnan(mp_sh_block_scale(MP_SH_BLOCKS_VEC32_UE8M0, t, 0, 64, 1, 96)));
}

static void agg_keeps_the_worst_and_a_median(void **state) {
  (void)state;
  mp_shadow_agg *a = malloc(sizeof *a);
  assert_non_null(a);
  mp_shadow_agg_init(a);
  for (int i = 1; i <= 5; i++) {
    mp_shadow_metrics m = {
        .rel_l2 = i * 0.01, .max_rel = 0.1 / i, .flushed = 0, .nonfinite = (uint64_t)(i == 2)};
    mp_shadow_agg_add(a, MP_SH_FP16, &m);
  }
  assert_int_equal(a->calls[MP_SH_FP16], 5);
  close_to(a->worst[MP_SH_FP16].rel_l2, 0.05);
  close_to(a->worst[MP_SH_FP16].max_rel, 0.1);
  assert_int_equal(a->worst[MP_SH_FP16].nonfinite, 1);
  close_to(mp_shadow_median(a->samples[MP_SH_FP16], a->nsamples[MP_SH_FP16]), 0.03);
  /* More calls than samples: the reservoir stays full and holds only seen values. */
  for (int i = 0; i < 1000; i++) {
    mp_shadow_metrics m = {.rel_l2 = 1.0};
    mp_shadow_agg_add(a, MP_SH_BF16, &m);
  }
  assert_int_equal(a->nsamples[MP_SH_BF16], MP_SHADOW_MEDIAN_SAMPLES);
  close_to(mp_shadow_median(a->samples[MP_SH_BF16], a->nsamples[MP_SH_BF16]), 1.0);
  double v[4] = {INFINITY, 1, 2, INFINITY};
  assert_true(isinf(mp_shadow_median(v, 4)));
  free(a);
}

/* cuBLASLt's bias, ReLU and GELU epilogues change D: reference and
 * candidates are epi(alpha*P + bias), the candidate's in fp32 before its
 * output cast; the loss-scaled candidate is not defined with them. */
static void epilogues_apply_bias_relu_gelu_before_the_output_cast(void **state) {
  (void)state;
  static float bias[BATCH * 24];
  fill(bias, sizeof bias / sizeof bias[0], 3, -3, 4);
  for (int epi = 0; epi <= 2; epi++) {
    ref_gemm r = base_gemm();
    r.epi = epi;
    r.bias = epi == 1 ? NULL : bias; /* ReLU alone, bias alone, GELU with bias */
    r.bias_stride = 24;
    mp_shadow_gemm g;
    to_gemm(&r, &g);
    ref_cand cur = {.fmt = MP_FP32, .out = MP_FP32}, h = {.fmt = MP_FP16, .out = MP_FP16},
             b = {.fmt = MP_BF16, .out = MP_BF16};
    check(&r, MP_SH_CURRENT, &cur, &g, NULL);
    check(&r, MP_SH_FP16, &h, &g, NULL);
    mp_shadow_metrics mb = check(&r, MP_SH_BF16, &b, &g, NULL);
    assert_true(mb.rel_l2 > 0);
    for (int f = 0; f < 2; f++) {
      ref_cand c = {.fmt = f ? MP_FP8_E5M2 : MP_FP8_E4M3, .kind = 2, .out = MP_BF16};
      check(&r, f ? MP_SH_MXFP8_E5M2 : MP_SH_MXFP8_E4M3, &c, &g, NULL);
    }
    g.scale_log2[0] = 3;
    mp_shadow_metrics out[MP_SH_COUNT];
    assert_int_equal(mp_shadow_run(&g, 1u << MP_SH_FP16_SCALED | 1u << MP_SH_FP16, NULL, out),
                     1u << MP_SH_FP16);
    assert_false(mp_shadow_cand_defined(&g, MP_SH_FP16_SCALED));
  }
  /* ReLU zeroes what the product makes negative: half the outputs, so the
   * epilogue is really applied (the product alone would not match above). */
  ref_gemm r = base_gemm();
  r.epi = 1;
  size_t n = (size_t)M * N * BATCH;
  double *d = malloc(n * sizeof *d), *ref = malloc(n * sizeof *ref);
  ref_cand cur = {.fmt = MP_FP32, .out = MP_FP32};
  ref_run(&r, &cur, d, ref, NULL);
  size_t zeros = 0;
  for (size_t i = 0; i < n; i++)
    zeros += ref[i] == 0;
  assert_true(zeros > n / 4 && zeros < 3 * n / 4);
  free(d);
  free(ref);
}

/* flushed counts the outputs a rounding made zero (DESIGN.md: a non-zero
 * value whose RNE cast is 0), not the zeros an epilogue makes of non-zero
 * values. In fp32, GELU's tanh reaches -1 exactly below about x = -5.6
 * (1 + tanh(u) = 0: GELU(x) is 0), where the double reference's is still a
 * tiny non-zero value; every candidate, the call's own fp32 included, read
 * "flushed" there. At the boundary: x0, the least negative input whose fp32
 * GELU is 0, is no flush, its neighbour toward 0 is non-zero; GELU(2^-24) =
 * 2^-25 is flushed by an fp16 output cast (RNE_fp16 of it is 0), an operand
 * below fp16's range (1e-9) by the fp16 operand cast; a ReLU that clamps a
 * value whose sign rounding flipped is no flush either. */
static void an_epilogues_own_zero_is_not_a_flush(void **state) {
  (void)state;
  float x0 = -1.0f; /* the boundary of fp32 GELU's zero, found by bisection over floats */
  float lo = -20.0f, hi = -1.0f; /* GELU(lo) == 0, GELU(hi) != 0 */
  assert_true(mp_sh_epi_f(MP_SH_EPI_GELU, lo) == 0 && mp_sh_epi_f(MP_SH_EPI_GELU, hi) != 0);
  while (nextafterf(lo, 0) != hi) {
    float mid = (lo + hi) / 2;
    if (mid == lo || mid == hi) mid = nextafterf(lo, 0);
    if (mp_sh_epi_f(MP_SH_EPI_GELU, mid) == 0)
      lo = mid;
    else
      hi = mid;
  }
  x0 = lo;
  float x1 = nextafterf(x0, 0);
  assert_true(x0 < -5 && x0 > -7);
  assert_true(mp_sh_epi_d(MP_SH_EPI_GELU, x0) != 0); /* the reference's is not 0 */
  assert_true(mp_sh_epi_f(MP_SH_EPI_GELU, x1) != 0);
  /* GELU(2^-24) is 2^-25 in fp32, which fp16's output cast rounds to 0 (a tie) */
  assert_true(mp_sh_epi_f(MP_SH_EPI_GELU, 0x1p-24f) == 0x1p-25f);
  /* D = op(A) * 1 with k = 1: the outputs are A's values */
  static float a[4], one[1] = {1.0f};
  a[0] = x0, a[1] = x1, a[2] = 1e-9f, a[3] = 0x1p-24f;
  ref_gemm r = {4, 1, 1, 1, a, one, 4, 1, 0, 0, false, false, 1.0, MP_SH_EPI_GELU, NULL, 0};
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  ref_cand cur = {.fmt = MP_FP32, .out = MP_FP32};
  mp_shadow_metrics m = check(&r, MP_SH_CURRENT, &cur, &g, NULL);
  assert_true(m.flushed == 0); /* x0: GELU's own zero; 1e-9: fp32 keeps it */
  ref_cand h = {.fmt = MP_FP16, .out = MP_FP16};
  m = check(&r, MP_SH_FP16, &h, &g, NULL);
  assert_true(m.flushed == 2.0 / 4); /* 2^-24 by the output cast, 1e-9 by the operand cast */
  ref_cand b = {.fmt = MP_BF16, .out = MP_BF16};
  m = check(&r, MP_SH_BF16, &b, &g, NULL);
  assert_true(m.flushed == 0);
  /* ReLU of a value whose sign the rounding flipped: the reference is
   * (1 + 2^-12) - 1 - 2^-13 = 2^-13 > 0; fp16 rounds 1 + 2^-12 to 1, so its
   * sum is -2^-13 and ReLU makes it 0: a clamp, no flush */
  static float s[3], t[3] = {1.0f, 1.0f, 1.0f};
  s[0] = 1.0f + 0x1p-12f, s[1] = -1.0f, s[2] = -0x1p-13f;
  ref_gemm rr = {1, 1, 3, 1, s, t, 1, 3, 0, 0, false, false, 1.0, MP_SH_EPI_RELU, NULL, 0};
  to_gemm(&rr, &g);
  m = check(&rr, MP_SH_FP16, &h, &g, NULL);
  assert_true(m.flushed == 0);
}

static void names_round_trip(void **state) {
  (void)state;
  for (int c = 0; c < MP_SH_COUNT; c++)
    assert_int_equal(mp_shadow_cand_from_name(mp_shadow_cand_name((mp_shadow_cand)c)), c);
  assert_int_equal(mp_shadow_cand_from_name("fp4"), -1);
  assert_string_equal(mp_shadow_cand_name(MP_SH_MXFP8_E4M3), "mxfp8_e4m3");
}

/* k = 0 (or alpha = 0) leaves no product: D = beta*C in every precision, and
 * C and beta are left out of every candidate, so there is nothing to measure
 * (-ENODATA, no metrics: not a measured call whose error reads 0, and not a
 * call shadow execution cannot model). The operands need not be there: the
 * libraries read neither A nor B. */
static void a_product_with_k_0_or_alpha_0_has_nothing_to_measure(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  mp_shadow_metrics out[MP_SH_COUNT];
  assert_false(mp_shadow_empty(&g));
  g.k = 0;
  g.a.data = g.b.data = NULL;
  assert_true(mp_shadow_empty(&g));
  assert_int_equal(mp_shadow_run(&g, MP_SHADOW_ALL, NULL, out), -ENODATA);
  to_gemm(&r, &g);
  g.alpha = 0;
  assert_true(mp_shadow_empty(&g));
  assert_int_equal(mp_shadow_run(&g, MP_SHADOW_ALL, NULL, out), -ENODATA);
  to_gemm(&r, &g);
  g.k = 0;
  g.m = 0; /* no output either: a bad geometry, as before */
  assert_false(mp_shadow_empty(&g));
  assert_int_equal(mp_shadow_run(&g, MP_SHADOW_ALL, NULL, out), -EINVAL);
}

static void bad_geometry_is_rejected(void **state) {
  (void)state;
  ref_gemm r = base_gemm();
  mp_shadow_gemm g;
  to_gemm(&r, &g);
  mp_shadow_metrics out[MP_SH_COUNT];
  g.a.ld = K - 1; /* op(A) = A^T: A is K x M */
  assert_int_equal(mp_shadow_run(&g, MP_SHADOW_ALL, NULL, out), -EINVAL);
  to_gemm(&r, &g);
  g.a.dtype = MP_INT8;
  assert_int_equal(mp_shadow_run(&g, MP_SHADOW_ALL, NULL, out), -EINVAL);
}

/* Convolutions measured as mp_shadow_conv_gemm's implicit GEMMs: the
 * reference output of each kind is the convolution written out directly
 * here (forward as a gather with the filter indexed rotated for
 * CUDNN_CONVOLUTION, backward data as a scatter of every output's taps,
 * backward filter as a sum over output positions; padding skipped, never
 * read as zeros), for packed NCHW tensors and for NHWC strides, with
 * padding, stride, dilation and N > 1, one group or several (depthwise
 * too: group g's filters read its channels only, its outputs are batch
 * matrix g), 2-D and 3-D (a depth with its own padding, stride and
 * dilation; NCDHW, NDHWC); fp16 is measured against it. */
typedef struct conv_case {
  int64_t n, c, h, w, k, r, s, pad[2], stride[2], dil[2];
  bool nhwc, flip;
  int64_t groups; /* 0: one; c and k are the totals */
  /* 3-D: x's depth D, the filter's T, the depth's padding, stride,
   * dilation (all 0: a 2-D convolution) */
  int64_t d, t, pad_d, stride_d, dil_d;
} conv_case;

typedef struct conv_data {
  mp_shadow_conv cv;
  float *x, *w, *y;
  double *want; /* the output, in D's order */
  size_t nout;
} conv_data;

/* Packed strides of N, C, H, W and of the depth (d1 channels, d0 x d2 x d3
 * the spatial size; d0 = 1 in 2-D) in NC[D]HW or N[D]HWC order. */
static void conv_strides(int64_t st[4], int64_t *st_d, int64_t d1, int64_t d0, int64_t d2,
                         int64_t d3, bool nhwc) {
  if (nhwc) {
    int64_t v[4] = {d0 * d2 * d3 * d1, 1, d3 * d1, d1};
    memcpy(st, v, sizeof v);
    *st_d = d2 * d3 * d1;
  } else {
    int64_t v[4] = {d1 * d0 * d2 * d3, d0 * d2 * d3, d3, 1};
    memcpy(st, v, sizeof v);
    *st_d = d2 * d3;
  }
}

/* A case's depth sizes (1 in 2-D) and depth geometry. */
static int64_t one_if_0(int64_t v) {
  return v ? v : 1;
}

/* x, w, y of t with every index's direct contribution: out += x * w at the
 * matching (n, c, d, h, w), (k, c, t, r, s), (n, k, o, p, q) of each kind. */
static void conv_direct(const conv_case *t, mp_shadow_conv_kind kind, conv_data *d) {
  const mp_sh_conv *cv = &d->cv.g;
  int64_t cg = cv->c, kg = cv->k; /* one group's channels and filters */
  int64_t dd = one_if_0(t->d), td = one_if_0(t->t), od = one_if_0(cv->o);
  int64_t sd = one_if_0(t->stride_d), ld = one_if_0(t->dil_d);
  double *mag = calloc(d->nout, sizeof *mag);
  for (int64_t i = 0; i < t->n; i++)
    for (int64_t f = 0; f < t->k; f++)
      for (int64_t ch = 0; ch < cg; ch++)
        for (int64_t o = 0; o < od; o++)
          for (int64_t p = 0; p < cv->p; p++)
            for (int64_t q = 0; q < cv->q; q++)
              for (int64_t u = 0; u < td; u++)
                for (int64_t r = 0; r < t->r; r++)
                  for (int64_t s = 0; s < t->s; s++) {
                    int64_t zz = o * sd - t->pad_d + u * ld,
                            yy = p * t->stride[0] - t->pad[0] + r * t->dil[0],
                            xx = q * t->stride[1] - t->pad[1] + s * t->dil[1];
                    if (zz < 0 || zz >= dd || yy < 0 || yy >= t->h || xx < 0 || xx >= t->w)
                      continue;
                    int64_t wt = t->flip ? td - 1 - u : u, wr = t->flip ? t->r - 1 - r : r,
                            wc = t->flip ? t->s - 1 - s : s;
                    int64_t grp = f / kg, fl = f % kg, ca = grp * cg + ch; /* x's channel */
                    double xv = d->x[i * cv->xs[0] + ca * cv->xs[1] + zz * cv->xs_d +
                                     yy * cv->xs[2] + xx * cv->xs[3]];
                    double wv = d->w[f * cv->ws[0] + ch * cv->ws[1] + wt * cv->ws_d +
                                     wr * cv->ws[2] + wc * cv->ws[3]];
                    double yv = d->y[i * cv->ys[0] + f * cv->ys[1] + o * cv->ys_d + p * cv->ys[2] +
                                     q * cv->ys[3]];
                    size_t at;
                    double v;
                    size_t mn = d->nout / (size_t)(t->groups > 1 ? t->groups : 1);
                    if (kind == MP_SHADOW_CONV_FWD) /* y[i][f][o][p][q] += x w */
                      at = (size_t)(fl + (((i * od + o) * cv->p + p) * cv->q + q) * kg),
                      v = xv * wv;
                    else if (kind == MP_SHADOW_CONV_BWD_DATA) /* dx[i][ca][zz][yy][xx] += dy w */
                      at = (size_t)(ch + (((i * dd + zz) * t->h + yy) * t->w + xx) * cg),
                      v = yv * wv;
                    else /* dw[f][ch][wt][wr][wc] += dy x */
                      at = (size_t)(fl + (((ch * td + wt) * t->r + wr) * t->s + wc) * kg),
                      v = yv * xv;
                    at += (size_t)grp * mn; /* group grp's batch matrix */
                    d->want[at] += v;
                    mag[at] += fabs(v);
                  }
  for (size_t o = 0; o < d->nout; o++)
    d->want[d->nout + o] = mag[o]; /* the tolerance's scale */
  free(mag);
}

/* The geometry of case t, kind `kind`, as mp_shadow_conv_gemm takes it. */
static void conv_geometry(const conv_case *t, mp_shadow_conv_kind kind, mp_sh_conv *cv) {
  cv->kind = kind;
  int64_t groups = t->groups > 1 ? t->groups : 1;
  cv->groups = t->groups;
  cv->n = t->n, cv->c = t->c / groups, cv->h = t->h, cv->w = t->w, cv->k = t->k / groups;
  cv->r = t->r, cv->s = t->s;
  for (int i = 0; i < 2; i++)
    cv->pad[i] = t->pad[i], cv->stride[i] = t->stride[i], cv->dilation[i] = t->dil[i];
  cv->p = (t->h + 2 * t->pad[0] - t->dil[0] * (t->r - 1) - 1) / t->stride[0] + 1;
  cv->q = (t->w + 2 * t->pad[1] - t->dil[1] * (t->s - 1) - 1) / t->stride[1] + 1;
  int64_t od = 1;
  if (t->d) {
    cv->d = t->d, cv->t = t->t, cv->pad_d = t->pad_d, cv->stride_d = t->stride_d;
    cv->dilation_d = t->dil_d;
    cv->o = od = (t->d + 2 * t->pad_d - t->dil_d * (t->t - 1) - 1) / t->stride_d + 1;
  }
  int64_t xs_d, ws_d, ys_d;
  conv_strides(cv->xs, &xs_d, t->c, one_if_0(t->d), t->h, t->w, t->nhwc);
  conv_strides(cv->ws, &ws_d, t->c / groups, one_if_0(t->t), t->r, t->s, t->nhwc);
  conv_strides(cv->ys, &ys_d, t->k, od, cv->p, cv->q, t->nhwc);
  if (t->d) cv->xs_d = xs_d, cv->ws_d = ws_d, cv->ys_d = ys_d;
  cv->flip = t->flip;
}

static void check_conv(const conv_case *t, mp_shadow_conv_kind kind) {
  conv_data d;
  memset(&d, 0, sizeof d);
  mp_sh_conv *cv = &d.cv.g;
  conv_geometry(t, kind, cv);
  int64_t groups = t->groups > 1 ? t->groups : 1;
  int64_t dd = one_if_0(t->d), td = one_if_0(t->t), od = one_if_0(cv->o);
  d.cv.x_dtype = d.cv.w_dtype = d.cv.y_dtype = MP_FP32;
  size_t nx = (size_t)(t->n * t->c * dd * t->h * t->w),
         nw = (size_t)(t->k * (t->c / groups) * td * t->r * t->s),
         ny = (size_t)(t->n * t->k * od * cv->p * cv->q);
  d.x = malloc(nx * sizeof(float)), d.w = malloc(nw * sizeof(float));
  d.y = malloc(ny * sizeof(float));
  fill(d.x, nx, 11, -6, 6);
  fill(d.w, nw, 12, -4, 2);
  fill(d.y, ny, 13, -9, -3);
  /* the op reads two tensors: the third is not given */
  d.cv.x = kind == MP_SHADOW_CONV_BWD_DATA ? NULL : d.x;
  d.cv.wt = kind == MP_SHADOW_CONV_BWD_FILTER ? NULL : d.w;
  d.cv.y = kind == MP_SHADOW_CONV_FWD ? NULL : d.y;
  d.cv.alpha = 0.75;
  d.nout = kind == MP_SHADOW_CONV_FWD ? ny : kind == MP_SHADOW_CONV_BWD_DATA ? nx : nw;
  d.want = calloc(2 * d.nout, sizeof(double));
  conv_direct(t, kind, &d);

  mp_shadow_gemm g;
  void *owned = NULL;
  assert_int_equal(mp_shadow_conv_gemm(&d.cv, &g, &owned), 0);
  assert_non_null(owned);
  assert_true((size_t)(g.m * g.n * g.batch) == d.nout);
  assert_true(g.batch == groups);
  g.capture_ref = calloc(d.nout, sizeof(double));
  g.capture[MP_SH_FP16] = calloc(d.nout, sizeof(float));
  mp_shadow_metrics m[MP_SH_COUNT];
  assert_true(mp_shadow_run(&g, 1u << MP_SH_FP16, NULL, m) == 1 << MP_SH_FP16);
  for (size_t o = 0; o < d.nout; o++)
    if (fabs(g.capture_ref[o] - 0.75 * d.want[o]) > 1e-13 * d.want[d.nout + o])
      fail_msg("kind %d output %zu: %.17g, direct %.17g", (int)kind, o, g.capture_ref[o],
               0.75 * d.want[o]);
  /* fp16 of these values: a small, non-zero error */
  assert_true(m[MP_SH_FP16].rel_l2 > 0 && m[MP_SH_FP16].rel_l2 < 1e-2);
  assert_true(mp_shadow_conv_bytes(&d.cv) ==
              (uint64_t)((g.m * g.k + g.k * g.n) * groups) * sizeof(float));
  free(g.capture_ref), free(g.capture[MP_SH_FP16]);
  free(owned), free(d.x), free(d.w), free(d.y), free(d.want);
}

static void convolutions_measure_the_direct_convolution(void **state) {
  (void)state;
  const conv_case cases[] = {
      {2, 3, 7, 6, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, false, false, 0, 0, 0, 0, 0, 0},
      {2, 5, 9, 8, 3, 3, 2, {2, 1}, {2, 1}, {2, 3}, true, true, 0, 0, 0, 0, 0, 0},
      {1, 2, 5, 5, 2, 1, 1, {0, 0}, {2, 2}, {1, 1}, false, true, 0, 0, 0, 0, 0, 0},
      {2, 3, 8, 7, 2, 2, 3, {1, 2}, {3, 2}, {1, 1}, false, true, 0, 0, 0, 0, 0, 0},
      /* grouped: 2 groups of 3 channels, 2 filters each; depthwise, NHWC */
      {2, 6, 7, 6, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, false, false, 2, 0, 0, 0, 0, 0},
      {2, 4, 6, 5, 4, 3, 2, {1, 0}, {2, 1}, {1, 2}, true, true, 4, 0, 0, 0, 0, 0},
      {1, 4, 5, 5, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, false, true, 4, 0, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int kind = MP_SHADOW_CONV_FWD; kind <= MP_SHADOW_CONV_BWD_FILTER; kind++)
      check_conv(&cases[i], (mp_shadow_conv_kind)kind);
  /* bad geometry: no stride, no filter */
  mp_shadow_conv cv = {0};
  mp_shadow_gemm g;
  void *owned = (void *)1;
  assert_int_equal(mp_shadow_conv_gemm(&cv, &g, &owned), -EINVAL);
  assert_null(owned);
  assert_true(mp_shadow_conv_bytes(&cv) == UINT64_MAX);
}

/* 3-D convolutions (Conv3d: 5-D tensors) against the direct nested loops,
 * forward, backward data and backward filter: a depth with padding, stride
 * and dilation of its own (other than the height's), NCDHW and NDHWC,
 * cross-correlation and convolution (the depth taps rotated too), groups
 * and depthwise. */
static void convolutions_in_3d_measure_the_direct_convolution(void **state) {
  (void)state;
  const conv_case cases[] = {
      {2, 3, 5, 4, 4, 3, 3, {1, 1}, {1, 1}, {1, 1}, false, false, 0, 6, 3, 1, 1, 1},
      {1, 2, 7, 6, 3, 3, 2, {1, 0}, {2, 1}, {1, 2}, true, true, 0, 7, 2, 2, 2, 3},
      {2, 3, 4, 5, 2, 2, 3, {0, 1}, {1, 2}, {2, 1}, false, true, 0, 9, 3, 0, 3, 2},
      /* one depth (a Conv3d of depth 1 and a 1-deep filter) */
      {1, 2, 5, 5, 3, 3, 3, {1, 1}, {1, 1}, {1, 1}, false, false, 0, 1, 1, 0, 1, 1},
      /* grouped: 2 groups, NDHWC; depthwise with convolution mode */
      {2, 6, 5, 4, 4, 3, 2, {1, 1}, {1, 1}, {1, 1}, true, false, 2, 5, 3, 1, 2, 1},
      {1, 4, 5, 5, 8, 3, 3, {1, 1}, {1, 1}, {1, 1}, false, true, 4, 5, 3, 2, 1, 2},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int kind = MP_SHADOW_CONV_FWD; kind <= MP_SHADOW_CONV_BWD_FILTER; kind++)
      check_conv(&cases[i], (mp_shadow_conv_kind)kind);
}

/* A 2-D convolution written as a 3-D one of depth 1 (D = T = O = 1, no
 * depth padding) gathers the same implicit GEMM, byte for byte; depth
 * fields partly set (a depth without a stride, a 2-D convolution with a
 * depth padding) are bad geometry. */
static void a_depth_of_one_gathers_the_2d_gemm(void **state) {
  (void)state;
  const conv_case flat = {2,      6,    5,    4, 4, 3, 2, {1, 1}, {1, 1},
                          {1, 1}, true, true, 2, 0, 0, 0, 0,      0},
                  deep = {2,      6,    5,    4, 4, 3, 2, {1, 1}, {1, 1},
                          {1, 1}, true, true, 2, 1, 1, 0, 1,      1};
  for (int kind = MP_SHADOW_CONV_FWD; kind <= MP_SHADOW_CONV_BWD_FILTER; kind++) {
    mp_shadow_conv a = {0}, b = {0};
    conv_geometry(&flat, (mp_shadow_conv_kind)kind, &a.g);
    conv_geometry(&deep, (mp_shadow_conv_kind)kind, &b.g);
    float data[4096];
    fill(data, 4096, 21, -3, 3);
    a.x = a.wt = a.y = b.x = b.wt = b.y = data;
    a.x_dtype = a.w_dtype = a.y_dtype = b.x_dtype = b.w_dtype = b.y_dtype = MP_FP32;
    mp_shadow_gemm ga, gb;
    void *oa, *ob;
    assert_int_equal(mp_shadow_conv_gemm(&a, &ga, &oa), 0);
    assert_int_equal(mp_shadow_conv_gemm(&b, &gb, &ob), 0);
    assert_true(ga.m == gb.m && ga.n == gb.n && ga.k == gb.k && ga.batch == gb.batch);
    assert_true(mp_shadow_conv_bytes(&a) == mp_shadow_conv_bytes(&b));
    assert_memory_equal(oa, ob, (size_t)mp_shadow_conv_bytes(&a));
    free(oa), free(ob);
    b.g.stride_d = 0; /* a depth without its stride */
    assert_true(mp_shadow_conv_bytes(&b) == UINT64_MAX);
    a.g.pad_d = 1; /* a 2-D convolution with a depth padding */
    assert_true(mp_shadow_conv_bytes(&a) == UINT64_MAX);
  }
}

/* mp_shadow_inputs_already_rounded: flagged exactly where rounding the
 * operands' values (in both formats' normal range) to the candidate's
 * format changes none of them, so the candidate cannot see the rounding
 * that made them. bf16 operands: bf16, fp16, fp16_loss_scaled; fp16: fp16
 * only; fp32: none; never current. */
static void inputs_already_rounded_where_the_cast_changes_no_value(void **state) {
  (void)state;
  const mp_dtype ops[] = {MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    for (int c = 0; c < MP_SH_COUNT; c++) {
      mp_dtype fmt = mp_shadow_cand_format((mp_shadow_cand)c);
      bool flagged = mp_shadow_inputs_already_rounded((mp_shadow_cand)c, ops[i], ops[i]);
      if (fmt == MP_DTYPE_INVALID) {
        assert_false(flagged); /* current */
        continue;
      }
      bool changed = false;
      for (int k = 0; k < 4096 && !changed; k++) {
        float x = mp_shadow_round(1.0f + (float)k / 4096.0f, ops[i]); /* a value of ops[i] */
        changed = mp_shadow_round(x, fmt) != x;
      }
      assert_int_equal(flagged, !changed);
    }
  assert_true(mp_shadow_inputs_already_rounded(MP_SH_BF16, MP_BF16, MP_BF16));
  assert_true(mp_shadow_inputs_already_rounded(MP_SH_FP16, MP_BF16, MP_BF16));
  assert_false(mp_shadow_inputs_already_rounded(MP_SH_BF16, MP_FP16, MP_FP16));
  assert_false(mp_shadow_inputs_already_rounded(MP_SH_BF16, MP_BF16, MP_FP32)); /* B not */
  assert_false(mp_shadow_inputs_already_rounded(MP_SH_BF16, MP_INT8, MP_INT8));
  assert_false(mp_shadow_inputs_already_rounded(MP_SH_BF16, MP_DTYPE_INVALID, MP_BF16));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp16_and_bf16_round_operands_and_output),
      cmocka_unit_test(inputs_already_rounded_where_the_cast_changes_no_value),
      cmocka_unit_test(current_is_the_calls_own_precision),
      cmocka_unit_test(current_of_a_16f_call_accumulates_in_fp16),
      cmocka_unit_test(current_of_an_fp32_call_on_16_bit_tensor_cores_rounds_its_operands),
      cmocka_unit_test(fp8_current_scaling_maps_each_tensors_amax_to_the_format_max),
      cmocka_unit_test(mxfp8_blocks_run_along_k_and_the_last_one_straddles_its_end),
      cmocka_unit_test(scale_helpers_match_libm),
      cmocka_unit_test(delayed_scaling_uses_the_amax_of_earlier_calls),
      cmocka_unit_test(delayed_history_holds_1024_calls_and_keeps_the_scale_on_zero_amax),
      cmocka_unit_test(fp16_output_overflow_is_counted_as_nonfinite),
      cmocka_unit_test(outputs_whose_reference_is_not_finite_are_left_out),
      cmocka_unit_test(a_call_with_no_finite_reference_is_not_measured),
      cmocka_unit_test(the_error_sums_count_the_outputs_measured),
      cmocka_unit_test(gradients_flush_at_scale_1_and_fit_at_their_loss_scale),
      cmocka_unit_test(a_product_below_fp16_takes_the_outputs_own_scale),
      cmocka_unit_test(fp8_scale_pointers_scale_operands_and_output),
      cmocka_unit_test(block_scaled_fp8_operands_are_stored_times_their_blocks_scale),
      cmocka_unit_test(agg_keeps_the_worst_and_a_median),
      cmocka_unit_test(epilogues_apply_bias_relu_gelu_before_the_output_cast),
      cmocka_unit_test(an_epilogues_own_zero_is_not_a_flush),
      cmocka_unit_test(names_round_trip),
      cmocka_unit_test(a_product_with_k_0_or_alpha_0_has_nothing_to_measure),
      cmocka_unit_test(bad_geometry_is_rejected),
      cmocka_unit_test(convolutions_measure_the_direct_convolution),
      cmocka_unit_test(convolutions_in_3d_measure_the_direct_convolution),
      cmocka_unit_test(a_depth_of_one_gathers_the_2d_gemm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
