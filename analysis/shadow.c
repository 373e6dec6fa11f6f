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

bool mp_shadow_inputs_already_rounded(mp_shadow_cand c, mp_dtype a, mp_dtype b) {
  const mp_format *f = mp_format_of(mp_shadow_cand_format(c)), *fa = mp_format_of(a),
                  *fb = mp_format_of(b);
  return f && fa && fb && fa->is_float && fb->is_float && fa->man_bits <= f->man_bits &&
         fb->man_bits <= f->man_bits;
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

mp_dtype mp_shadow_current_format(const mp_shadow_gemm *g, mp_dtype src) {
  bool reduced = g->fp32_as == MP_TF32 || g->fp32_as == MP_FP16 || g->fp32_as == MP_BF16;
  return src == MP_FP32 && reduced ? g->fp32_as : MP_FP32;
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
  return mp_loss_scale_pick(a.window_lo, a.window_hi, a.beyond_lo, a.beyond_hi);
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

/* The operand's per-tensor scale (mp_shadow_operand.scale), 1 without one. */
static double operand_scale(const mp_shadow_operand *o) {
  return o->scale ? (double)*o->scale : 1.0;
}

/* Multiply vector r of x (rows values of k) by the operand's block scales. */
static void apply_blocks(const mp_shadow_operand *o, int64_t k, int64_t r, double *x) {
  if (!o->blocks) return;
  for (int64_t kk = 0; kk < k; kk++)
    x[kk] *= (double)mp_sh_block_scale(o->block_mode, o->blocks, (unsigned long long)r,
                                       (unsigned long long)kk, (unsigned long long)o->block_outer,
                                       (unsigned long long)k);
}

/* op(A) of batch b as rows of k values: x[i*k + kk] = op(A)(i, kk), times
 * A's scale or block scales. The product is exact in double (an fp8 value
 * has at most 4 significant bits, the fp32 scale 24), so the stored value
 * is x / scale. */
static bool load_a(const mp_shadow_gemm *g, int64_t b, double *x) {
  const void *base = batch_base(&g->a, b);
  if (!base) return false;
  double s = operand_scale(&g->a);
  for (int64_t i = 0; i < g->m; i++) {
    for (int64_t kk = 0; kk < g->k; kk++)
      x[i * g->k + kk] =
          mp_load(g->a.dtype, base, (uint64_t)(g->a.trans ? kk + i * g->a.ld : i + kk * g->a.ld)) *
          s;
    apply_blocks(&g->a, g->k, i, x + i * g->k);
  }
  return true;
}

/* op(B) of batch b as columns of k values: x[j*k + kk] = op(B)(kk, j), times B's scale(s). */
static bool load_b(const mp_shadow_gemm *g, int64_t b, double *x) {
  const void *base = batch_base(&g->b, b);
  if (!base) return false;
  double s = operand_scale(&g->b);
  for (int64_t j = 0; j < g->n; j++) {
    for (int64_t kk = 0; kk < g->k; kk++)
      x[j * g->k + kk] =
          mp_load(g->b.dtype, base, (uint64_t)(g->b.trans ? j + kk * g->b.ld : kk + j * g->b.ld)) *
          s;
    apply_blocks(&g->b, g->k, j, x + j * g->k);
  }
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
  float post[2]; /* what the fp32 sum is multiplied by for each operand (with alpha) */
  int scale_log2[2];
} cand_scales;

/* Candidate operand values of `rows` rows of k values (MXFP8 blocks run along k). */
static void quantize(mp_shadow_cand c, const mp_shadow_gemm *g, int which, const cand_scales *cs,
                     const double *x, float *q, int64_t rows) {
  mp_dtype fmt = mp_shadow_cand_format(c);
  mp_dtype src = which ? g->b.dtype : g->a.dtype;
  size_t n = (size_t)rows * (size_t)g->k;
  switch (c) {
  case MP_SH_CURRENT: { /* the stored values (load_a: exact) */
    const mp_shadow_operand *o = which ? &g->b : &g->a;
    double s = operand_scale(o);
    mp_dtype cur = mp_shadow_current_format(g, src);
    for (size_t i = 0; i < n; i++) {
      float v = o->scale ? (float)(x[i] / s) : (float)x[i];
      q[i] = mp_shadow_round(v, cur);
    }
    return;
  }
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

bool mp_shadow_metrics_of(const mp_sh_err *e, mp_shadow_metrics *m) {
  m->nonfinite = e->nonfinite;
  m->rel_l2 = e->nonfinite ? INFINITY : sqrt(ratio(e->se, e->sr));
  m->max_rel = e->nonfinite ? INFINITY : ratio(e->maxd, e->maxr);
  m->flushed = e->nonzero ? (double)e->flushed / (double)e->nonzero : 0;
  return e->measured > 0;
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

/* out[i + j*m] = row i of qa and row j of qb accumulated in fp16, k
 * ascending (mp_sh_fma_fp16): the current precision of a call of compute
 * type 16F. */
static void dot_fp16_acc(const float *qa, const float *qb, int64_t m, int64_t n, int64_t k,
                         float *out) {
  for (int64_t j = 0; j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      const float *a = qa + i * k, *b = qb + j * k;
      float s = 0;
      for (int64_t kk = 0; kk < k; kk++)
        s = mp_sh_fma_fp16(a[kk], b[kk], s);
      out[i + j * m] = s;
    }
}

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

mp_dtype mp_shadow_cand_accum(const mp_shadow_gemm *g, mp_shadow_cand c) {
  return c == MP_SH_CURRENT && g->accum == MP_FP16 ? MP_FP16 : MP_FP32;
}

bool mp_shadow_cand_defined(const mp_shadow_gemm *g, mp_shadow_cand c) {
  return c != MP_SH_FP16_SCALED || (g->epilogue == MP_SH_EPI_NONE && !g->bias);
}

/* alpha*P (already in v) + bias of row i of batch matrix b, then the
 * epilogue; *zeroed (when not NULL): the epilogue made a zero of a non-zero
 * value (mp_sh_epi_zeroed). */
static double epi_ref(const mp_shadow_gemm *g, int64_t b, int64_t i, double v, int *zeroed) {
  if (g->bias)
    v = MP_SH_DADD(v, mp_load(g->bias_dtype, g->bias, (uint64_t)(b * g->bias_stride + i)));
  double e = mp_sh_epi_d(g->epilogue, v);
  if (zeroed) *zeroed = mp_sh_epi_zeroed(v, e);
  return e;
}
static float epi_cand(const mp_shadow_gemm *g, int64_t b, int64_t i, float v, int *zeroed) {
  if (g->bias)
    v = MP_SH_FADD(v, (float)mp_load(g->bias_dtype, g->bias, (uint64_t)(b * g->bias_stride + i)));
  float e = mp_sh_epi_f(g->epilogue, v);
  *zeroed = mp_sh_epi_zeroed(v, e);
  return e;
}

static bool geometry_ok(const mp_shadow_gemm *g) {
  if (g->m <= 0 || g->n <= 0 || g->k <= 0 || g->batch <= 0) return false;
  if (!float_source(g->a.dtype) || !float_source(g->b.dtype)) return false;
  if (!g->a.data && !g->a.ptrs) return false;
  if (!g->b.data && !g->b.ptrs) return false;
  if (g->epilogue < MP_SH_EPI_NONE || g->epilogue > MP_SH_EPI_GELU) return false;
  if (g->bias && !float_source(g->bias_dtype)) return false;
  /* block scales: one matrix, a mode with a layout, the operand's own vectors */
  if ((g->a.blocks || g->b.blocks) && g->batch != 1) return false;
  if (g->a.blocks && (!mp_sh_blocks_k(g->a.block_mode) || g->a.block_outer != g->m)) return false;
  if (g->b.blocks && (!mp_sh_blocks_k(g->b.block_mode) || g->b.block_outer != g->n)) return false;
  int64_t arows = g->a.trans ? g->k : g->m, brows = g->b.trans ? g->n : g->k;
  if (g->a.ld < arows || g->b.ld < brows || g->a.ld < 1 || g->b.ld < 1) return false;
  return mp_shadow_work_bytes(g) < ((uint64_t)1 << 50);
}

bool mp_shadow_empty(const mp_shadow_gemm *g) {
  return g->m > 0 && g->n > 0 && g->batch > 0 && (g->k == 0 || g->alpha == 0);
}

int mp_shadow_run(const mp_shadow_gemm *g, unsigned mask, mp_amax_history hist[2],
                  mp_shadow_metrics ret[MP_SH_COUNT]) {
  if (mp_shadow_empty(g)) return -ENODATA;
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
      const mp_shadow_operand *o = i ? &g->b : &g->a;
      cs[c].scale[i] = 1.0f;
      cs[c].scale_log2[i] = g->scale_log2[i];
      if (c == MP_SH_E4M3_CURRENT || c == MP_SH_E5M2_CURRENT)
        cs[c].scale[i] = mp_fp8_current_scale(amax[i], fmt);
      else if ((c == MP_SH_E4M3_DELAYED || c == MP_SH_E5M2_DELAYED) && (mask >> c & 1))
        cs[c].scale[i] = mp_amax_history_scale(&hist[i], fmt);
      cs[c].post[i] = 1.0f / cs[c].scale[i];
      if (c == MP_SH_CURRENT && o->scale) cs[c].post[i] = *o->scale; /* the op's own scales */
    }
  }
  bool wide = g->a.dtype == MP_FP64 || g->b.dtype == MP_FP64 || g->out == MP_FP64;

  for (int64_t b = 0; b < g->batch; b++) {
    load_a(g, b, ax);
    load_b(g, b, bx);
    dot64(ax, bx, g->m, g->n, g->k, false, panel64, ref);
    for (size_t o = 0; o < mn; o++) {
      ref[o] *= g->alpha;
      if (epi) ref[o] = epi_ref(g, b, (int64_t)(o % (size_t)g->m), ref[o], NULL);
    }
    if (g->capture_ref) memcpy(g->capture_ref + (size_t)b * mn, ref, mn * sizeof *ref);

    for (int c = 0; c < MP_SH_COUNT; c++) {
      if (!(mask >> c & 1)) continue;
      float *cap = g->capture[c] ? g->capture[c] + (size_t)b * mn : NULL;
      if (c == MP_SH_CURRENT && wide) { /* fp64 GEMMs accumulate in double */
        dot64(ax, bx, g->m, g->n, g->k, true, panel64, dwide);
        for (size_t o = 0; o < mn; o++) {
          double d = g->alpha * dwide[o];
          int zeroed = 0;
          if (epi) d = epi_ref(g, b, (int64_t)(o % (size_t)g->m), d, &zeroed);
          if (g->out != MP_FP64) d = round_output(MP_SH_CURRENT, g->out, (float)d);
          if (cap) cap[o] = (float)d;
          mp_sh_err_add(&acc[c], ref[o], d, zeroed);
        }
        continue;
      }
      quantize((mp_shadow_cand)c, g, 0, &cs[c], ax, qa, g->m);
      quantize((mp_shadow_cand)c, g, 1, &cs[c], bx, qb, g->n);
      float inv_a = cs[c].post[0], inv_b = cs[c].post[1], alpha = (float)g->alpha;
      if (mp_shadow_cand_accum(g, (mp_shadow_cand)c) == MP_FP16)
        dot_fp16_acc(qa, qb, g->m, g->n, g->k, dc);
      else
        dot32(qa, qb, g->m, g->n, g->k, panel32, dc);
      for (size_t o = 0; o < mn; o++) {
        float v = dc[o] * inv_a * inv_b * alpha;
        int zeroed = 0;
        if (epi) v = epi_cand(g, b, (int64_t)(o % (size_t)g->m), v, &zeroed);
        if (c == MP_SH_FP16_SCALED) v = mp_pow2_scale(v, g->out_scale_log2);
        float d = c == MP_SH_CURRENT && g->d_scale /* an fp8 D at its scale */
                      ? mp_sh_current_scaled_output(g->out, v, *g->d_scale)
                      : round_output((mp_shadow_cand)c, g->out, v);
        if (c == MP_SH_FP16_SCALED)
          d = mp_pow2_scale(d, -(g->scale_log2[0] + g->scale_log2[1] + g->out_scale_log2));
        if (cap) cap[o] = d;
        mp_sh_err_add(&acc[c], ref[o], d, zeroed);
      }
    }
  }
  /* The reference is every candidate's: all are measured, or none. */
  bool measured = true;
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (mask >> c & 1) measured = mp_shadow_metrics_of(&acc[c], &ret[c]) && measured;
  if (seed) {
    mp_amax_history_push(&hist[0], amax[0]);
    mp_amax_history_push(&hist[1], amax[1]);
  }
  rc = measured ? (int)mask : -EDOM;
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

/* A 2-D convolution's depth fields all 0; a 3-D one's all set (positive,
 * the padding not negative). */
static bool conv_depth_ok(const mp_sh_conv *g) {
  if (!g->d && !g->t && !g->o)
    return !g->pad_d && !g->stride_d && !g->dilation_d && !g->xs_d && !g->ws_d && !g->ys_d;
  return g->d > 0 && g->t > 0 && g->o > 0 && g->stride_d > 0 && g->dilation_d > 0 && g->pad_d >= 0;
}

static bool conv_ok(const mp_shadow_conv *cv) {
  const mp_sh_conv *g = &cv->g;
  if (g->n <= 0 || g->c <= 0 || g->h <= 0 || g->w <= 0 || g->k <= 0 || g->r <= 0 || g->s <= 0 ||
      g->p <= 0 || g->q <= 0 || g->groups < 0 || g->groups > INT32_MAX)
    return false;
  for (int i = 0; i < 2; i++)
    if (g->stride[i] <= 0 || g->dilation[i] <= 0 || g->pad[i] < 0) return false;
  if (!conv_depth_ok(g)) return false;
  switch (g->kind) {
  case MP_SHADOW_CONV_FWD:
    return float_source(cv->x_dtype) && float_source(cv->w_dtype);
  case MP_SHADOW_CONV_BWD_DATA:
    return float_source(cv->y_dtype) && float_source(cv->w_dtype);
  case MP_SHADOW_CONV_BWD_FILTER:
    return float_source(cv->x_dtype) && float_source(cv->y_dtype);
  default:
    return false;
  }
}

int mp_shadow_conv_shape(const mp_shadow_conv *cv, mp_shadow_gemm *g) {
  memset(g, 0, sizeof *g);
  if (!conv_ok(cv)) return -EINVAL;
  const mp_sh_conv *c = &cv->g;
  /* a 3-D convolution's depth joins each spatial product (2-D: 1) */
  double t = (double)mp_sh_conv_depth(c->t), o = (double)mp_sh_conv_depth(c->o),
         d = (double)mp_sh_conv_depth(c->d);
  double crs = (double)c->c * t * (double)c->r * (double)c->s,
         krs = (double)c->k * t * (double)c->r * (double)c->s,
         npq = (double)c->n * o * (double)c->p * (double)c->q,
         nhw = (double)c->n * d * (double)c->h * (double)c->w;
  double m = (double)c->k, n = npq, k = crs;
  mp_dtype ta = cv->w_dtype, tb = cv->x_dtype, td = cv->y_dtype;
  if (c->kind == MP_SHADOW_CONV_BWD_DATA)
    m = (double)c->c, n = nhw, k = krs, tb = cv->y_dtype, td = cv->x_dtype;
  else if (c->kind == MP_SHADOW_CONV_BWD_FILTER)
    n = crs, k = npq, ta = cv->y_dtype, td = cv->w_dtype;
  double groups = (double)mp_sh_conv_groups(c);
  if (m * k * groups >= 0x1p50 || k * n * groups >= 0x1p50 || m * n * groups >= 0x1p50)
    return -EINVAL;
  g->m = (int64_t)m;
  g->n = (int64_t)n;
  g->k = (int64_t)k;
  g->batch = (int64_t)groups;
  /* A: row i's k values contiguous (the stored k x m, transposed); B: k x n
   * with columns contiguous, or for backward filter im2col's C*R*S x N*P*Q
   * transposed; group after group (batch matrices packed) */
  int64_t sa = g->batch > 1 ? g->m * g->k : 0, sb = g->batch > 1 ? g->k * g->n : 0;
  g->a = (mp_shadow_operand){.dtype = ta, .ld = g->k, .stride = sa, .trans = true};
  g->b = c->kind == MP_SHADOW_CONV_BWD_FILTER
             ? (mp_shadow_operand){.dtype = tb, .ld = g->n, .stride = sb, .trans = true}
             : (mp_shadow_operand){.dtype = tb, .ld = g->k, .stride = sb, .trans = false};
  g->alpha = cv->alpha;
  g->out = td;
  return 0;
}

uint64_t mp_shadow_conv_bytes(const mp_shadow_conv *cv) {
  mp_shadow_gemm g;
  if (mp_shadow_conv_shape(cv, &g)) return UINT64_MAX;
  return (uint64_t)(g.m * g.k * g.batch) * mp_dtype_size(g.a.dtype) +
         (uint64_t)(g.k * g.n * g.batch) * mp_dtype_size(g.b.dtype);
}

int mp_shadow_conv_gemm(const mp_shadow_conv *cv, mp_shadow_gemm *g, void **owned) {
  *owned = NULL;
  int rc = mp_shadow_conv_shape(cv, g);
  if (rc) return rc;
  const void *sa = cv->g.kind == MP_SHADOW_CONV_BWD_FILTER ? cv->y : cv->wt;
  const void *sb = cv->g.kind == MP_SHADOW_CONV_BWD_DATA ? cv->y : cv->x;
  if (!sa || !sb) return -EINVAL;
  size_t ea = mp_dtype_size(g->a.dtype), eb = mp_dtype_size(g->b.dtype);
  size_t na = (size_t)(g->m * g->k), nb = (size_t)(g->k * g->n);
  char *mem = malloc((na * ea + nb * eb) * (size_t)g->batch);
  if (!mem) return -ENOMEM;
  char *a = mem, *b = mem + na * ea * (size_t)g->batch;
  bool bt = g->b.trans;
  for (int64_t grp = 0; grp < g->batch; grp++) { /* one implicit GEMM per group */
    const char *ga = (const char *)sa + mp_sh_conv_a_group(&cv->g, grp) * (int64_t)ea;
    const char *gb = (const char *)sb + mp_sh_conv_b_group(&cv->g, grp) * (int64_t)eb;
    char *da = a + na * ea * (size_t)grp, *db = b + nb * eb * (size_t)grp;
    for (int64_t i = 0; i < g->m; i++)
      for (int64_t kk = 0; kk < g->k; kk++)
        memcpy(da + (size_t)(i * g->k + kk) * ea, ga + mp_sh_conv_a_at(&cv->g, i, kk) * (int64_t)ea,
               ea);
    for (int64_t j = 0; j < g->n; j++)
      for (int64_t kk = 0; kk < g->k; kk++) {
        char *dst = db + (size_t)(bt ? j + kk * g->n : kk + j * g->k) * eb;
        int64_t at = mp_sh_conv_b_at(&cv->g, kk, j);
        if (at < 0)
          memset(dst, 0, eb); /* every float format's zero is all bits clear */
        else
          memcpy(dst, gb + at * (int64_t)eb, eb);
      }
  }
  g->a.data = a;
  g->b.data = b;
  *owned = mem;
  return 0;
}
