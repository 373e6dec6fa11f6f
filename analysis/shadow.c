/* Shadow execution definitions (see shadow.h and docs/numerics.md). Every
 * candidate turns A and B into float operand values (rounded, for MXFP8
 * dequantized with the block's power-of-two scale), then one fp32 fmaf loop
 * forms each output, which a per-tensor fp8 recipe multiplies by its two
 * inverse scales, and alpha; the result is rounded to the output type. The
 * loss-scaled fp16 candidate keeps its scale through the output cast (a
 * gradient GEMM's output carries the loss scale too) and divides it out after. */
#include "shadow.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "advice.h"
#include "convert.h"
#include "shadow_core.h"

static const char *const cand_names[MP_SH_COUNT] = {
    [MP_SH_CURRENT] = "current",
    [MP_SH_FP16] = "fp16",
    [MP_SH_FP16_SCALED] = "fp16_loss_scaled",
    [MP_SH_BF16] = "bf16",
    [MP_SH_E4M3_CURRENT] = "fp8_e4m3_current",
    [MP_SH_E4M3_DELAYED] = "fp8_e4m3_delayed",
    [MP_SH_MXFP8_E4M3] = "mxfp8_e4m3",
    [MP_SH_E5M2_CURRENT] = "fp8_e5m2_current",
    [MP_SH_E5M2_DELAYED] = "fp8_e5m2_delayed",
    [MP_SH_MXFP8_E5M2] = "mxfp8_e5m2",
};

const char *mp_shadow_cand_name(mp_shadow_cand c) {
  return (unsigned)c < MP_SH_COUNT ? cand_names[c] : "invalid";
}

int mp_shadow_cand_from_name(const char *name) {
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (name && !strcmp(name, cand_names[c])) return c;
  return -1;
}

mp_dtype mp_shadow_cand_format(mp_shadow_cand c) {
  switch (c) {
  case MP_SH_FP16:
  case MP_SH_FP16_SCALED:
    return MP_FP16;
  case MP_SH_BF16:
    return MP_BF16;
  case MP_SH_E4M3_CURRENT:
  case MP_SH_E4M3_DELAYED:
  case MP_SH_MXFP8_E4M3:
    return MP_FP8_E4M3;
  case MP_SH_E5M2_CURRENT:
  case MP_SH_E5M2_DELAYED:
  case MP_SH_MXFP8_E5M2:
    return MP_FP8_E5M2;
  default:
    return MP_DTYPE_INVALID;
  }
}

double mp_shadow_sqnr_db(double rel_l2) {
  if (rel_l2 == 0) return INFINITY;
  if (isinf(rel_l2)) return -INFINITY;
  return -20.0 * log10(rel_l2);
}

/* --- casts and scales --- */

float mp_shadow_round(float x, mp_dtype fmt) {
  return mp_sh_round(x, fmt);
}

static float fp8_max(mp_dtype fp8) {
  return (float)mp_format_of(fp8)->max_finite;
}

float mp_fp8_current_scale(float amax, mp_dtype fp8) {
  return mp_sh_current_scale(amax, fp8_max(fp8));
}

int mp_mx_scale_exp(float amax, mp_dtype fp8) {
  return mp_sh_mx_exp(amax, fp8_max(fp8));
}

void mp_amax_history_init(mp_amax_history *h) {
  memset(h, 0, sizeof *h);
  h->scale[0] = h->scale[1] = 1.0f;
}

float mp_amax_history_scale(mp_amax_history *h, mp_dtype fp8) {
  int i = fp8 == MP_FP8_E5M2;
  if (h->n == 0) return h->scale[i];
  float amax = 0;
  bool nan = false;
  for (uint32_t j = 0; j < h->n; j++) {
    if (isnan(h->amax[j])) nan = true;
    if (h->amax[j] > amax) amax = h->amax[j];
  }
  if (!nan && amax > 0 && !isinf(amax)) {
    float s = fp8_max(fp8) / amax;
    h->scale[i] = isinf(s) ? FLT_MAX : s;
  }
  return h->scale[i];
}

void mp_amax_history_push(mp_amax_history *h, float amax) {
  h->amax[h->next] = amax;
  h->next = (h->next + 1) % MP_SHADOW_HISTORY_LEN;
  if (h->n < MP_SHADOW_HISTORY_LEN) h->n++;
}

int mp_shadow_loss_scale_log2(const mp_stats *s) {
  mp_advice a;
  mp_advise(s, NULL, &a);
  if (a.fp16 == MP_FP16_SAFE || !a.has_window) return 0;
  return (int)floor((a.window_lo + (double)a.window_hi) / 2);
}

/* --- operands --- */

static bool float_source(mp_dtype d) {
  return d == MP_FP64 || d == MP_FP32 || d == MP_FP16 || d == MP_BF16 || d == MP_FP8_E4M3 ||
         d == MP_FP8_E5M2;
}

static const void *batch_base(const mp_shadow_operand *o, int64_t b) {
  if (o->ptrs) return o->ptrs[b];
  return (const char *)o->data + b * o->stride * (int64_t)mp_dtype_size(o->dtype);
}

/* op(A) of batch b as rows of k values: x[i*k + kk] = op(A)(i, kk). */
static bool load_a(const mp_shadow_gemm *g, int64_t b, double *x) {
  const void *base = batch_base(&g->a, b);
  if (!base) return false;
  for (int64_t i = 0; i < g->m; i++)
    for (int64_t kk = 0; kk < g->k; kk++)
      x[i * g->k + kk] =
          mp_load(g->a.dtype, base, (uint64_t)(g->a.trans ? kk + i * g->a.ld : i + kk * g->a.ld));
  return true;
}

/* op(B) of batch b as columns of k values: x[j*k + kk] = op(B)(kk, j). */
static bool load_b(const mp_shadow_gemm *g, int64_t b, double *x) {
  const void *base = batch_base(&g->b, b);
  if (!base) return false;
  for (int64_t j = 0; j < g->n; j++)
    for (int64_t kk = 0; kk < g->k; kk++)
      x[j * g->k + kk] =
          mp_load(g->b.dtype, base, (uint64_t)(g->b.trans ? j + kk * g->b.ld : kk + j * g->b.ld));
  return true;
}

static float amax_of(const double *x, size_t n, float prev) {
  for (size_t i = 0; i < n; i++)
    prev = mp_sh_amax_add(prev, (float)x[i]);
  return prev;
}

/* Per-tensor context of one candidate: the scale each operand is multiplied
 * by before the cast (fp8 tensor recipes) and the loss-scale exponent. */
typedef struct cand_scales {
  float scale[2];
  int scale_log2[2];
} cand_scales;

/* Candidate operand values of `rows` rows of k values (MXFP8 blocks run along k). */
static void quantize(mp_shadow_cand c, const mp_shadow_gemm *g, int which, const cand_scales *cs,
                     const double *x, float *q, int64_t rows) {
  mp_dtype fmt = mp_shadow_cand_format(c);
  mp_dtype src = which ? g->b.dtype : g->a.dtype;
  size_t n = (size_t)rows * (size_t)g->k;
  switch (c) {
  case MP_SH_CURRENT:
    for (size_t i = 0; i < n; i++)
      q[i] = g->tf32 && src == MP_FP32 ? mp_float_to_tf32((float)x[i]) : (float)x[i];
    return;
  case MP_SH_FP16:
  case MP_SH_BF16:
    for (size_t i = 0; i < n; i++)
      q[i] = mp_shadow_round((float)x[i], fmt);
    return;
  case MP_SH_FP16_SCALED: {
    int s = cs->scale_log2[which]; /* scaled values; unscaled after the output cast */
    for (size_t i = 0; i < n; i++)
      q[i] = mp_shadow_round(mp_pow2_scale((float)x[i], s), fmt);
    return;
  }
  case MP_SH_MXFP8_E4M3:
  case MP_SH_MXFP8_E5M2:
    for (int64_t r = 0; r < rows; r++) {
      const double *xr = x + r * g->k;
      float *qr = q + r * g->k;
      for (int64_t k0 = 0; k0 < g->k; k0 += MP_SHADOW_MX_BLOCK) {
        int64_t k1 = k0 + MP_SHADOW_MX_BLOCK < g->k ? k0 + MP_SHADOW_MX_BLOCK : g->k;
        float amax = 0;
        for (int64_t kk = k0; kk < k1; kk++)
          amax = mp_sh_amax_add(amax, (float)xr[kk]);
        int e = mp_mx_scale_exp(amax, fmt);
        for (int64_t kk = k0; kk < k1; kk++)
          qr[kk] = mp_pow2_scale(mp_shadow_round(mp_pow2_scale((float)xr[kk], -e), fmt), e);
      }
    }
    return;
  default: /* per-tensor fp8: scaled values; the inverse scales follow the accumulation */
    for (size_t i = 0; i < n; i++)
      q[i] = mp_shadow_round((float)x[i] * cs->scale[which], fmt);
    return;
  }
}

static float round_output(mp_shadow_cand c, mp_dtype out, float v) {
  return mp_sh_round_output(mp_shadow_cand_format(c), c == MP_SH_CURRENT, out, v);
}

/* --- metrics --- */

static double ratio(double num, double den) {
  if (den > 0) return num / den;
  return num > 0 ? INFINITY : 0;
}

void mp_shadow_metrics_of(const mp_sh_err *e, mp_shadow_metrics *m) {
  m->nonfinite = e->nonfinite;
  m->rel_l2 = e->nonfinite ? INFINITY : sqrt(ratio(e->se, e->sr));
  m->max_rel = e->nonfinite ? INFINITY : ratio(e->maxd, e->maxr);
  m->flushed = e->nonzero ? (double)e->flushed / (double)e->nonzero : 0;
}

/* --- dot products ---
 *
 * Each output is one sequential chain over k (the definition: fp32
 * candidates round after every multiply-add, as fmaf; the reference sums
 * exact products in double). Speed comes from running DOT_ROWS independent
 * chains (rows of op(A) against one column of op(B)) side by side, which
 * changes no result, a vector lane per chain, and from hardware FMA where
 * the CPU has it (the functions are built twice: plain, and for the
 * "avx2,fma" target; fmaf is correctly rounded either way). */
#define DOT_ROWS 8 /* chains per vector: a panel of rows of op(A) */
#define DOT_COLS 4 /* columns of op(B) at once, independent vectors in flight */

/* DOT_BODY names one accumulator and one column pointer per column: s0..s3, b0..b3. */
_Static_assert(DOT_COLS == 4, "DOT_BODY spells out 4 columns");

typedef void (*dot_f32_fn)(const float *qa, const float *qb, int64_t m, int64_t n, int64_t k,
                           float *panel, float *out);
typedef void (*dot_f64_fn)(const double *ax, const double *bx, int64_t m, int64_t n, int64_t k,
                           bool fused, double *panel, double *out);

/* out[i + j*m] = the chain of row i of qa and row j of qb. DOT_ROWS rows of
 * qa are first interleaved into panel (panel[kk*DOT_ROWS + r] = row r's
 * kk-th value), so one vector step advances DOT_ROWS chains, for DOT_COLS
 * columns of qb at once; a chain per lane keeps every output's order. */
#define DOT_BODY(T, FMA, ZERO)                                                                     \
  for (int64_t i0 = 0; i0 < m; i0 += DOT_ROWS) {                                                   \
    int rows = m - i0 < DOT_ROWS ? (int)(m - i0) : DOT_ROWS;                                       \
    for (int64_t kk = 0; kk < k; kk++)                                                             \
      for (int r = 0; r < DOT_ROWS; r++)                                                           \
        panel[kk * DOT_ROWS + r] = r < rows ? qa[(i0 + r) * k + kk] : ZERO;                        \
    for (int64_t j0 = 0; j0 < n; j0 += DOT_COLS) {                                                 \
      int cols = n - j0 < DOT_COLS ? (int)(n - j0) : DOT_COLS;                                     \
      const T *b0 = qb + j0 * k, *b1 = cols > 1 ? b0 + k : b0, *b2 = cols > 2 ? b0 + 2 * k : b0,   \
              *b3 = cols > 3 ? b0 + 3 * k : b0;                                                    \
      T s0[DOT_ROWS] = {0}, s1[DOT_ROWS] = {0}, s2[DOT_ROWS] = {0}, s3[DOT_ROWS] = {0};            \
      for (int64_t kk = 0; kk < k; kk++) {                                                         \
        const T *pp = panel + kk * DOT_ROWS;                                                       \
        T v0 = b0[kk], v1 = b1[kk], v2 = b2[kk], v3 = b3[kk];                                      \
        for (int r = 0; r < DOT_ROWS; r++)                                                         \
          s0[r] = FMA(pp[r], v0, s0[r]);                                                           \
        for (int r = 0; r < DOT_ROWS; r++)                                                         \
          s1[r] = FMA(pp[r], v1, s1[r]);                                                           \
        for (int r = 0; r < DOT_ROWS; r++)                                                         \
          s2[r] = FMA(pp[r], v2, s2[r]);                                                           \
        for (int r = 0; r < DOT_ROWS; r++)                                                         \
          s3[r] = FMA(pp[r], v3, s3[r]);                                                           \
      }                                                                                            \
      const T *sc[DOT_COLS] = {s0, s1, s2, s3};                                                    \
      for (int c = 0; c < cols; c++)                                                               \
        for (int r = 0; r < rows; r++)                                                             \
          out[i0 + r + (j0 + c) * m] = sc[c][r];                                                   \
    }                                                                                              \
  }

#define MULADD(a, b, s) ((s) + (a) * (b))

/* fp-contract off: a plain multiply-add must not become an FMA in one build
 * and not in another (the reference would round differently). */
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
static void dot_f32_plain(const float *qa, const float *qb, int64_t m, int64_t n, int64_t k,
                          float *panel, float *out) {
  DOT_BODY(float, fmaf, 0.0f)
}
static void dot_f64_plain(const double *qa, const double *qb, int64_t m, int64_t n, int64_t k,
                          bool fused, double *panel, double *out) {
  if (fused) {
    DOT_BODY(double, fma, 0.0)
  } else {
    DOT_BODY(double, MULADD, 0.0)
  }
}
#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) static void dot_f32_fma(const float *qa, const float *qb,
                                                            int64_t m, int64_t n, int64_t k,
                                                            float *panel, float *out) {
  DOT_BODY(float, fmaf, 0.0f)
}
__attribute__((target("avx2,fma"))) static void dot_f64_fma(const double *qa, const double *qb,
                                                            int64_t m, int64_t n, int64_t k,
                                                            bool fused, double *panel,
                                                            double *out) {
  if (fused) {
    DOT_BODY(double, fma, 0.0)
  } else {
    DOT_BODY(double, MULADD, 0.0)
  }
}
#endif
#pragma GCC pop_options

static void dot_fns(dot_f32_fn *f32, dot_f64_fn *f64) {
  *f32 = dot_f32_plain;
  *f64 = dot_f64_plain;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2")) {
    *f32 = dot_f32_fma;
    *f64 = dot_f64_fma;
  }
#endif
}

/* --- the run --- */

uint64_t mp_shadow_work_bytes(const mp_shadow_gemm *g) {
  if (g->m <= 0 || g->n <= 0 || g->k <= 0) return 0;
  double mk = (double)g->m * (double)g->k, nk = (double)g->n * (double)g->k,
         mn = (double)g->m * (double)g->n;
  /* operands in double and as candidates (8 + 4 bytes per element); per
   * output the reference, the candidate's fp32 sums and fp64's (8 + 4 + 8);
   * the interleaved row panels of the dot products */
  double b = 12.0 * (mk + nk) + 20.0 * mn + 12.0 * DOT_ROWS * (double)g->k;
  return b >= 0x1p63 ? UINT64_MAX : (uint64_t)b;
}

bool mp_shadow_cand_defined(const mp_shadow_gemm *g, mp_shadow_cand c) {
  return c != MP_SH_FP16_SCALED || (g->epilogue == MP_SH_EPI_NONE && !g->bias);
}

/* alpha*P (already in v) + bias of row i of batch matrix b, then the epilogue. */
static double epi_ref(const mp_shadow_gemm *g, int64_t b, int64_t i, double v) {
  if (g->bias)
    v = MP_SH_DADD(v, mp_load(g->bias_dtype, g->bias, (uint64_t)(b * g->bias_stride + i)));
  return mp_sh_epi_d(g->epilogue, v);
}
static float epi_cand(const mp_shadow_gemm *g, int64_t b, int64_t i, float v) {
  if (g->bias)
    v = MP_SH_FADD(v, (float)mp_load(g->bias_dtype, g->bias, (uint64_t)(b * g->bias_stride + i)));
  return mp_sh_epi_f(g->epilogue, v);
}

static bool geometry_ok(const mp_shadow_gemm *g) {
  if (g->m <= 0 || g->n <= 0 || g->k <= 0 || g->batch <= 0) return false;
  if (!float_source(g->a.dtype) || !float_source(g->b.dtype)) return false;
  if (!g->a.data && !g->a.ptrs) return false;
  if (!g->b.data && !g->b.ptrs) return false;
  if (g->epilogue < MP_SH_EPI_NONE || g->epilogue > MP_SH_EPI_GELU) return false;
  if (g->bias && !float_source(g->bias_dtype)) return false;
  int64_t arows = g->a.trans ? g->k : g->m, brows = g->b.trans ? g->n : g->k;
  if (g->a.ld < arows || g->b.ld < brows || g->a.ld < 1 || g->b.ld < 1) return false;
  return mp_shadow_work_bytes(g) < ((uint64_t)1 << 50);
}

int mp_shadow_run(const mp_shadow_gemm *g, unsigned mask, mp_amax_history hist[2],
                  mp_shadow_metrics ret[MP_SH_COUNT]) {
  if (!geometry_ok(g)) return -EINVAL;
  const unsigned delayed = (1u << MP_SH_E4M3_DELAYED) | (1u << MP_SH_E5M2_DELAYED);
  bool seed = hist && (mask & delayed); /* this call's amax joins the history */
  /* Without history the recipe has no scale yet: the call only seeds it. */
  if (!hist || (hist[0].n == 0 && hist[1].n == 0)) mask &= ~delayed;
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (!mp_shadow_cand_defined(g, (mp_shadow_cand)c)) mask &= ~(1u << c);
  bool epi = g->epilogue != MP_SH_EPI_NONE || g->bias;
  size_t mk = (size_t)(g->m * g->k), nk = (size_t)(g->n * g->k), mn = (size_t)(g->m * g->n);
  double *ax = malloc(mk * sizeof *ax), *bx = malloc(nk * sizeof *bx),
         *ref = malloc(mn * sizeof *ref);
  float *qa = malloc(mk * sizeof *qa), *qb = malloc(nk * sizeof *qb), *dc = malloc(mn * sizeof *dc);
  double *dwide = malloc(mn * sizeof *dwide),
         *panel64 = malloc(DOT_ROWS * (size_t)g->k * sizeof *panel64);
  float *panel32 = malloc(DOT_ROWS * (size_t)g->k * sizeof *panel32);
  mp_sh_err *acc = calloc(MP_SH_COUNT, sizeof *acc);
  dot_f32_fn dot32;
  dot_f64_fn dot64;
  dot_fns(&dot32, &dot64);
  int rc = 0;
  if (!ax || !bx || !ref || !qa || !qb || !dc || !dwide || !panel64 || !panel32 || !acc) {
    rc = -ENOMEM;
    goto out;
  }

  /* Per-tensor amax over the whole batch (what a per-tensor recipe sees). */
  float amax[2] = {0, 0};
  for (int64_t b = 0; b < g->batch; b++) {
    if (!load_a(g, b, ax) || !load_b(g, b, bx)) {
      rc = -EINVAL;
      goto out;
    }
    amax[0] = amax_of(ax, mk, amax[0]);
    amax[1] = amax_of(bx, nk, amax[1]);
  }
  cand_scales cs[MP_SH_COUNT];
  memset(cs, 0, sizeof cs);
  for (int c = 0; c < MP_SH_COUNT; c++) {
    mp_dtype fmt = mp_shadow_cand_format((mp_shadow_cand)c);
    for (int i = 0; i < 2; i++) {
      cs[c].scale[i] = 1.0f;
      cs[c].scale_log2[i] = g->scale_log2[i];
      if (c == MP_SH_E4M3_CURRENT || c == MP_SH_E5M2_CURRENT)
        cs[c].scale[i] = mp_fp8_current_scale(amax[i], fmt);
      else if ((c == MP_SH_E4M3_DELAYED || c == MP_SH_E5M2_DELAYED) && (mask >> c & 1))
        cs[c].scale[i] = mp_amax_history_scale(&hist[i], fmt);
    }
  }
  bool wide = g->a.dtype == MP_FP64 || g->b.dtype == MP_FP64 || g->out == MP_FP64;

  for (int64_t b = 0; b < g->batch; b++) {
    load_a(g, b, ax);
    load_b(g, b, bx);
    dot64(ax, bx, g->m, g->n, g->k, false, panel64, ref);
    for (size_t o = 0; o < mn; o++) {
      ref[o] *= g->alpha;
      if (epi) ref[o] = epi_ref(g, b, (int64_t)(o % (size_t)g->m), ref[o]);
    }
    if (g->capture_ref) memcpy(g->capture_ref + (size_t)b * mn, ref, mn * sizeof *ref);

    for (int c = 0; c < MP_SH_COUNT; c++) {
      if (!(mask >> c & 1)) continue;
      float *cap = g->capture[c] ? g->capture[c] + (size_t)b * mn : NULL;
      if (c == MP_SH_CURRENT && wide) { /* fp64 GEMMs accumulate in double */
        dot64(ax, bx, g->m, g->n, g->k, true, panel64, dwide);
        for (size_t o = 0; o < mn; o++) {
          double d = g->alpha * dwide[o];
          if (epi) d = epi_ref(g, b, (int64_t)(o % (size_t)g->m), d);
          if (g->out != MP_FP64) d = round_output(MP_SH_CURRENT, g->out, (float)d);
          if (cap) cap[o] = (float)d;
          mp_sh_err_add(&acc[c], ref[o], d);
        }
        continue;
      }
      quantize((mp_shadow_cand)c, g, 0, &cs[c], ax, qa, g->m);
      quantize((mp_shadow_cand)c, g, 1, &cs[c], bx, qb, g->n);
      float inv_a = 1.0f / cs[c].scale[0], inv_b = 1.0f / cs[c].scale[1], alpha = (float)g->alpha;
      dot32(qa, qb, g->m, g->n, g->k, panel32, dc);
      for (size_t o = 0; o < mn; o++) {
        float v = dc[o] * inv_a * inv_b * alpha;
        if (epi) v = epi_cand(g, b, (int64_t)(o % (size_t)g->m), v);
        float d = round_output((mp_shadow_cand)c, g->out, v);
        if (c == MP_SH_FP16_SCALED) d = mp_pow2_scale(d, -(g->scale_log2[0] + g->scale_log2[1]));
        if (cap) cap[o] = d;
        mp_sh_err_add(&acc[c], ref[o], d);
      }
    }
  }
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (mask >> c & 1) mp_shadow_metrics_of(&acc[c], &ret[c]);
  if (seed) {
    mp_amax_history_push(&hist[0], amax[0]);
    mp_amax_history_push(&hist[1], amax[1]);
  }
  rc = (int)mask;
out:
  free(ax);
  free(bx);
  free(ref);
  free(qa);
  free(qb);
  free(dc);
  free(dwide);
  free(panel64);
  free(panel32);
  free(acc);
  return rc;
}

/* --- merging calls --- */

void mp_shadow_metrics_worst(mp_shadow_metrics *dst, const mp_shadow_metrics *src) {
  if (src->rel_l2 > dst->rel_l2) dst->rel_l2 = src->rel_l2;
  if (src->max_rel > dst->max_rel) dst->max_rel = src->max_rel;
  if (src->flushed > dst->flushed) dst->flushed = src->flushed;
  if (src->nonfinite > dst->nonfinite) dst->nonfinite = src->nonfinite;
}

void mp_shadow_agg_init(mp_shadow_agg *a) {
  memset(a, 0, sizeof *a);
}

void mp_shadow_agg_add(mp_shadow_agg *a, mp_shadow_cand c, const mp_shadow_metrics *m) {
  if ((unsigned)c >= MP_SH_COUNT) return;
  uint64_t n = ++a->calls[c];
  mp_shadow_metrics_worst(&a->worst[c], m);
  if (a->nsamples[c] < MP_SHADOW_MEDIAN_SAMPLES) {
    a->samples[c][a->nsamples[c]++] = m->rel_l2;
    return;
  }
  /* Reservoir sampling (Algorithm R) with a hash of the call number as the
   * random source, so a run is reproducible. */
  uint64_t z = n * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  uint64_t j = z % n;
  if (j < MP_SHADOW_MEDIAN_SAMPLES) a->samples[c][j] = m->rel_l2;
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

double mp_shadow_median(double *v, size_t n) {
  if (n == 0) return NAN;
  qsort(v, n, sizeof *v, cmp_double);
  if (n % 2) return v[n / 2];
  double lo = v[n / 2 - 1], hi = v[n / 2];
  return isinf(hi) ? hi : (lo + hi) / 2;
}

/* --- convolutions as implicit GEMMs --- */

static bool conv_ok(const mp_shadow_conv *cv) {
  if (cv->n <= 0 || cv->c <= 0 || cv->h <= 0 || cv->w <= 0 || cv->k <= 0 || cv->r <= 0 ||
      cv->s <= 0 || cv->p <= 0 || cv->q <= 0)
    return false;
  for (int i = 0; i < 2; i++)
    if (cv->stride[i] <= 0 || cv->dilation[i] <= 0 || cv->pad[i] < 0) return false;
  switch (cv->kind) {
  case MP_SHADOW_CONV_FWD:
    return cv->x && cv->wt && float_source(cv->x_dtype) && float_source(cv->w_dtype);
  case MP_SHADOW_CONV_BWD_DATA:
    return cv->y && cv->wt && float_source(cv->y_dtype) && float_source(cv->w_dtype);
  case MP_SHADOW_CONV_BWD_FILTER:
    return cv->x && cv->y && float_source(cv->x_dtype) && float_source(cv->y_dtype);
  default:
    return false;
  }
}

/* The GEMM's m, n, k (see mp_shadow_conv_gemm); false past 2^50 elements. */
static bool conv_shape(const mp_shadow_conv *cv, int64_t *m, int64_t *n, int64_t *k) {
  double crs = (double)cv->c * (double)cv->r * (double)cv->s,
         krs = (double)cv->k * (double)cv->r * (double)cv->s,
         npq = (double)cv->n * (double)cv->p * (double)cv->q,
         nhw = (double)cv->n * (double)cv->h * (double)cv->w;
  double dm = cv->kind == MP_SHADOW_CONV_BWD_DATA ? (double)cv->c : (double)cv->k;
  double dn = cv->kind == MP_SHADOW_CONV_FWD        ? npq
              : cv->kind == MP_SHADOW_CONV_BWD_DATA ? nhw
                                                    : crs;
  double dk = cv->kind == MP_SHADOW_CONV_FWD        ? crs
              : cv->kind == MP_SHADOW_CONV_BWD_DATA ? krs
                                                    : npq;
  if (dm * dk >= 0x1p50 || dk * dn >= 0x1p50) return false;
  *m = (int64_t)dm, *n = (int64_t)dn, *k = (int64_t)dk;
  return true;
}

/* The dtypes of A and B, and D's. */
static void conv_types(const mp_shadow_conv *cv, mp_dtype *a, mp_dtype *b, mp_dtype *d) {
  switch (cv->kind) {
  case MP_SHADOW_CONV_BWD_DATA:
    *a = cv->w_dtype, *b = cv->y_dtype, *d = cv->x_dtype;
    break;
  case MP_SHADOW_CONV_BWD_FILTER:
    *a = cv->y_dtype, *b = cv->x_dtype, *d = cv->w_dtype;
    break;
  default:
    *a = cv->w_dtype, *b = cv->x_dtype, *d = cv->y_dtype;
  }
}

uint64_t mp_shadow_conv_bytes(const mp_shadow_conv *cv) {
  int64_t m, n, k;
  if (!conv_ok(cv) || !conv_shape(cv, &m, &n, &k)) return UINT64_MAX;
  mp_dtype a, b, d;
  conv_types(cv, &a, &b, &d);
  return (uint64_t)(m * k) * mp_dtype_size(a) + (uint64_t)(k * n) * mp_dtype_size(b);
}

/* Element (i0, i1, i2, i3) of a strided 4-D tensor into dst (e bytes). */
static void conv_copy(char *dst, const void *base, const int64_t st[4], int64_t i0, int64_t i1,
                      int64_t i2, int64_t i3, size_t e) {
  int64_t at = i0 * st[0] + i1 * st[1] + i2 * st[2] + i3 * st[3];
  memcpy(dst, (const char *)base + at * (int64_t)e, e);
}

/* The filter tap (r, s) as the forward convolution applies it to x. */
static int64_t tap(const mp_shadow_conv *cv, int64_t r, int64_t len) {
  return cv->flip ? len - 1 - r : r;
}

/* im2col(x) into b: column (n*P + p)*Q + q of C*R*S values, x at the tap's
 * position, zero outside x (every float format's zero is all bits clear). */
static void conv_im2col(const mp_shadow_conv *cv, char *b, size_t ex) {
  int64_t crs = cv->c * cv->r * cv->s;
  for (int64_t i = 0; i < cv->n; i++)
    for (int64_t p = 0; p < cv->p; p++)
      for (int64_t q = 0; q < cv->q; q++) {
        char *col = b + (size_t)(((i * cv->p + p) * cv->q + q) * crs) * ex;
        for (int64_t ch = 0; ch < cv->c; ch++)
          for (int64_t r = 0; r < cv->r; r++)
            for (int64_t s = 0; s < cv->s; s++) {
              int64_t y = p * cv->stride[0] - cv->pad[0] + tap(cv, r, cv->r) * cv->dilation[0],
                      x = q * cv->stride[1] - cv->pad[1] + tap(cv, s, cv->s) * cv->dilation[1];
              char *dst = col + (size_t)((ch * cv->r + r) * cv->s + s) * ex;
              if (y < 0 || y >= cv->h || x < 0 || x >= cv->w)
                memset(dst, 0, ex);
              else
                conv_copy(dst, cv->x, cv->xs, i, ch, y, x, ex);
            }
      }
}

/* Backward data's B: column (n*H + h)*W + w of K*R*S values, dy at the
 * output position whose tap (r, s) reads x[h][w], zero where none does. */
static void conv_dgrad_cols(const mp_shadow_conv *cv, char *b, size_t ey) {
  int64_t krs = cv->k * cv->r * cv->s;
  for (int64_t i = 0; i < cv->n; i++)
    for (int64_t h = 0; h < cv->h; h++)
      for (int64_t w = 0; w < cv->w; w++) {
        char *col = b + (size_t)(((i * cv->h + h) * cv->w + w) * krs) * ey;
        for (int64_t f = 0; f < cv->k; f++)
          for (int64_t r = 0; r < cv->r; r++)
            for (int64_t s = 0; s < cv->s; s++) {
              char *dst = col + (size_t)((f * cv->r + r) * cv->s + s) * ey;
              int64_t py = h + cv->pad[0] - r * cv->dilation[0],
                      qx = w + cv->pad[1] - s * cv->dilation[1];
              int64_t p = py / cv->stride[0], q = qx / cv->stride[1];
              if (py < 0 || qx < 0 || py % cv->stride[0] || qx % cv->stride[1] || p >= cv->p ||
                  q >= cv->q)
                memset(dst, 0, ey);
              else
                conv_copy(dst, cv->y, cv->ys, i, f, p, q, ey);
            }
      }
}

int mp_shadow_conv_gemm(const mp_shadow_conv *cv, mp_shadow_gemm *g, void **owned) {
  *owned = NULL;
  int64_t m, n, k;
  if (!conv_ok(cv) || !conv_shape(cv, &m, &n, &k)) return -EINVAL;
  mp_dtype ta, tb, td;
  conv_types(cv, &ta, &tb, &td);
  size_t ea = mp_dtype_size(ta), eb = mp_dtype_size(tb);
  char *mem = malloc((size_t)(m * k) * ea + (size_t)(k * n) * eb);
  if (!mem) return -ENOMEM;
  char *a = mem, *b = mem + (size_t)(m * k) * ea;
  /* A: row i of op(A) (m x k) is k contiguous values: the stored k x m, transposed */
  for (int64_t i = 0; i < m; i++)
    for (int64_t kk = 0; kk < k; kk++) {
      char *dst = a + (size_t)(i * k + kk) * ea;
      if (cv->kind == MP_SHADOW_CONV_FWD) { /* filter i's value (c, r, s) */
        int64_t ch = kk / (cv->r * cv->s), r = kk / cv->s % cv->r, s = kk % cv->s;
        conv_copy(dst, cv->wt, cv->ws, i, ch, r, s, ea);
      } else if (cv->kind == MP_SHADOW_CONV_BWD_DATA) { /* channel i: w[f][i][tap r][tap s] */
        int64_t f = kk / (cv->r * cv->s), r = kk / cv->s % cv->r, s = kk % cv->s;
        conv_copy(dst, cv->wt, cv->ws, f, i, tap(cv, r, cv->r), tap(cv, s, cv->s), ea);
      } else { /* filter i's gradient: dy[n][i][p][q] */
        int64_t j = kk / (cv->p * cv->q), p = kk / cv->q % cv->p, q = kk % cv->q;
        conv_copy(dst, cv->y, cv->ys, j, i, p, q, ea);
      }
    }
  if (cv->kind == MP_SHADOW_CONV_BWD_DATA)
    conv_dgrad_cols(cv, b, eb);
  else
    conv_im2col(cv, b, eb);
  memset(g, 0, sizeof *g);
  g->m = m;
  g->n = n;
  g->k = k;
  g->batch = 1;
  g->a = (mp_shadow_operand){ta, a, NULL, k, 0, true};
  /* forward and backward data: B is k x n with its columns contiguous;
   * backward filter: im2col's C*R*S x N*P*Q, transposed */
  g->b = cv->kind == MP_SHADOW_CONV_BWD_FILTER ? (mp_shadow_operand){tb, b, NULL, n, 0, true}
                                               : (mp_shadow_operand){tb, b, NULL, k, 0, false};
  g->alpha = cv->alpha;
  g->out = td;
  *owned = mem;
  return 0;
}
