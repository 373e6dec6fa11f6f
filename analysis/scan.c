/* The host scanner: one pass over a (possibly strided, batched) buffer into a
 * stats record.
 *
 * Cast outcomes are a function of the binade except in the few binades that
 * straddle a target's threshold (overflow_at, flush_at, subnormal_below). A
 * per-source table, built once, says for every binade whether it is such a
 * boundary binade and, if not, the outcome for each target. Values in ordinary
 * binades are only counted in the histogram-like tally; values in boundary
 * binades are classified with explicit compares. That keeps the per-element
 * work down to "find the binade, bump a counter", which the fast paths exploit:
 * - fp32: AVX2, eight values at a time; vectors holding a zero, subnormal,
 *   inf, NaN or boundary-binade value go through the portable per-value code;
 *   the rest bump eight private sub-histograms (no store-forwarding chains).
 * - 16-bit and 8-bit sources: count bit patterns (2^16 / 2^8 counters), then
 *   fold each pattern seen into the record once, with its multiplicity.
 * The portable path handles every value with acc_value(); every fast path ends
 * in the same counts, so the records are bit-identical. */
#include "analysis/scan.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MP_HAVE_X86 1
#include <immintrin.h>
#endif

/* fp64 has the widest range: emax - emin_sub + 1 bins. */
#define SRC_MAX_BINS (1023 + 1074 + 1)
#define OUTCOME_BOUNDARY 0xff

typedef struct src_info {
  int lo, hi; /* histogram range of the source */
  /* outcome[t][e - lo]: the cast outcome shared by the whole binade, or
   * OUTCOME_BOUNDARY when the binade straddles one of t's thresholds. */
  uint8_t outcome[MP_TARGET_COUNT][SRC_MAX_BINS];
  uint8_t boundary[SRC_MAX_BINS]; /* boundary binade for some target */
} src_info;

static src_info infos[MP_DTYPE_COUNT];
static pthread_once_t infos_once = PTHREAD_ONCE_INIT;

static void build_infos(void) {
  for (int d = 0; d < MP_DTYPE_COUNT; d++) {
    if (!mp_dtype_scannable((mp_dtype)d)) continue;
    const mp_format *f = mp_format_of((mp_dtype)d);
    src_info *I = &infos[d];
    I->lo = f->emin_sub;
    I->hi = f->emax;
    for (int e = I->lo; e <= I->hi; e++) {
      int i = e - I->lo;
      double bottom = ldexp(1.0, e), top = mp_format_binade_top(f, e);
      /* Outcomes are monotone in |x|: equal at both ends means equal throughout. */
      for (int t = 0; t < MP_TARGET_COUNT; t++) {
        mp_cast_outcome a = mp_cast_classify(bottom, (mp_target)t);
        mp_cast_outcome b = mp_cast_classify(top, (mp_target)t);
        I->outcome[t][i] = a == b ? (uint8_t)a : OUTCOME_BOUNDARY;
        if (a != b) I->boundary[i] = 1;
      }
    }
  }
}

static const src_info *info_of(mp_dtype d) {
  pthread_once(&infos_once, build_infos);
  return &infos[d];
}

/* ---- the portable per-value path ---------------------------------------- */

static bool total_less(double a, double b) {
  if (a < b) return true;
  return a == b && signbit(a) && !signbit(b);
}

/* c copies of the value x into s (c > 1 when folding pattern counts). */
static inline void acc_value(mp_stats *s, const src_info *I, double x, uint64_t c) {
  s->count += c;
  if (isnan(x)) {
    s->nans += c;
    return;
  }
  if (isinf(x)) {
    if (x > 0) {
      s->pos_infs += c;
    } else {
      s->neg_infs += c;
      s->negatives += c;
    }
    return;
  }
  if (x < 0) s->negatives += c;
  if (isnan(s->min) || total_less(x, s->min)) s->min = x;
  if (isnan(s->max) || total_less(s->max, x)) s->max = x;
  double a = fabs(x);
  if (isnan(s->absmax) || a > s->absmax) s->absmax = a;
  if (x == 0) {
    s->zeros += c;
    return;
  }
  if (a < s->min_abs_nonzero) s->min_abs_nonzero = a;
  int e = ilogb(x);
  s->exp_hist[e - MP_HIST_MIN] += c;
  int i = e - I->lo;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint8_t o = I->outcome[t][i];
    if (o == OUTCOME_BOUNDARY) o = (uint8_t)mp_cast_classify(x, (mp_target)t);
    s->casts[t][o] += c;
  }
}

/* Counts of values known to lie in ordinary binade e (index i = e - lo). */
static void acc_binade(mp_stats *s, const src_info *I, int i, uint64_t c) {
  s->exp_hist[i + I->lo - MP_HIST_MIN] += c;
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    s->casts[t][I->outcome[t][i]] += c;
}

static void portable_run(mp_stats *s, const src_info *I, mp_dtype d, const void *p, uint64_t n) {
  switch (d) {
  case MP_FP64: {
    const double *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, q[i], 1);
    break;
  }
  case MP_FP32: {
    const float *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, q[i], 1);
    break;
  }
  case MP_FP16: {
    const uint16_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_fp16_to_float(q[i]), 1);
    break;
  }
  case MP_BF16: {
    const uint16_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_bf16_to_float(q[i]), 1);
    break;
  }
  case MP_FP8_E4M3: {
    const uint8_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_e4m3_to_float(q[i]), 1);
    break;
  }
  case MP_FP8_E5M2: {
    const uint8_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_e5m2_to_float(q[i]), 1);
    break;
  }
  default:
    break;
  }
}

/* ---- pattern counting for 8- and 16-bit sources ------------------------- */

/* Counters are 32-bit; a fold every PATTERN_FOLD_EVERY values keeps them from
 * wrapping. */
#define PATTERN_FOLD_EVERY (1u << 31)

typedef struct pattern_counts {
  uint32_t *cnt; /* 2^bits counters, two banks for 16-bit sources */
  unsigned bits;
  unsigned banks;
  uint64_t pending;
} pattern_counts;

static double decode_pattern(mp_dtype d, uint32_t v) {
  switch (d) {
  case MP_FP16:
    return mp_fp16_to_float((uint16_t)v);
  case MP_BF16:
    return mp_bf16_to_float((uint16_t)v);
  case MP_FP8_E4M3:
    return mp_e4m3_to_float((uint8_t)v);
  default:
    return mp_e5m2_to_float((uint8_t)v);
  }
}

static void pattern_fold(mp_stats *s, const src_info *I, mp_dtype d, pattern_counts *P) {
  uint32_t size = 1u << P->bits;
  for (uint32_t v = 0; v < size; v++) {
    uint64_t c = 0;
    for (unsigned b = 0; b < P->banks; b++) {
      c += P->cnt[b * size + v];
      P->cnt[b * size + v] = 0;
    }
    if (c) acc_value(s, I, decode_pattern(d, v), c);
  }
  P->pending = 0;
}

static void pattern_run(mp_stats *s, const src_info *I, mp_dtype d, pattern_counts *P,
                        const void *p, uint64_t n) {
  while (n > 0) {
    uint64_t room = PATTERN_FOLD_EVERY - P->pending;
    uint64_t m = n < room ? n : room;
    if (P->bits == 16) {
      const uint16_t *q = p;
      uint32_t *c0 = P->cnt, *c1 = P->cnt + 65536;
      uint64_t i = 0;
      for (; i + 2 <= m; i += 2) {
        c0[q[i]]++;
        c1[q[i + 1]]++;
      }
      if (i < m) c0[q[i]]++;
      p = q + m;
    } else {
      const uint8_t *q = p;
      uint32_t *c0 = P->cnt, *c1 = P->cnt + 256, *c2 = P->cnt + 512, *c3 = P->cnt + 768;
      uint64_t i = 0;
      for (; i + 4 <= m; i += 4) {
        c0[q[i]]++;
        c1[q[i + 1]]++;
        c2[q[i + 2]]++;
        c3[q[i + 3]]++;
      }
      for (; i < m; i++)
        c0[q[i]]++;
      p = q + m;
    }
    P->pending += m;
    n -= m;
    if (P->pending == PATTERN_FOLD_EVERY) pattern_fold(s, I, d, P);
  }
}

/* ---- fp32, AVX2 ---------------------------------------------------------- */

#ifdef MP_HAVE_X86
/* Private accumulators of the fp32 fast path, folded into the record at the end. */
typedef struct f32_fast {
  uint32_t sub[8][256]; /* per lane, indexed by the biased exponent */
  uint64_t pending;     /* values counted in sub since the last fold */
  uint64_t negatives;
  int32_t key_min, key_max;  /* order-preserving integer keys of the values */
  uint32_t abs_max, abs_min; /* |x| bits */
  uint32_t slow_bitmap[8];   /* biased exponents handled by acc_value */
} f32_fast;

static void f32_fast_init(f32_fast *F, const src_info *I) {
  memset(F, 0, sizeof *F);
  F->key_min = INT32_MAX;
  F->key_max = INT32_MIN;
  F->abs_max = 0;
  F->abs_min = UINT32_MAX;
  /* Zeros and subnormals (0), inf and NaN (255), and boundary binades. */
  F->slow_bitmap[0] |= 1u;
  F->slow_bitmap[7] |= 1u << 31;
  for (int E = 1; E <= 254; E++)
    if (I->boundary[E - 127 - I->lo]) F->slow_bitmap[E >> 5] |= 1u << (E & 31);
}

static float key_to_float(int32_t k) {
  uint32_t u = (uint32_t)(k < 0 ? k ^ 0x7fffffff : k);
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static void f32_fast_fold(mp_stats *s, const src_info *I, f32_fast *F) {
  for (int E = 1; E <= 254; E++) {
    uint64_t c = 0;
    for (int l = 0; l < 8; l++) {
      c += F->sub[l][E];
      F->sub[l][E] = 0;
    }
    if (c) acc_binade(s, I, E - 127 - I->lo, c);
  }
  s->count += F->pending;
  F->pending = 0;
}

static void f32_fast_finish(mp_stats *s, const src_info *I, f32_fast *F) {
  f32_fast_fold(s, I, F);
  s->negatives += F->negatives;
  if (F->abs_min == UINT32_MAX) return; /* no value took the fast path */
  double mn = key_to_float(F->key_min), mx = key_to_float(F->key_max);
  /* Fast values are non-zero, so plain compares give the total order here. */
  if (isnan(s->min) || mn < s->min) s->min = mn;
  if (isnan(s->max) || mx > s->max) s->max = mx;
  double amax = bits_to_float(F->abs_max), amin = bits_to_float(F->abs_min);
  if (isnan(s->absmax) || amax > s->absmax) s->absmax = amax;
  if (amin < s->min_abs_nonzero) s->min_abs_nonzero = amin;
}

__attribute__((target("avx2,popcnt"))) static void
f32_run_avx2(mp_stats *s, const src_info *I, f32_fast *F, const float *p, uint64_t n) {
  const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
  const __m256i low5 = _mm256_set1_epi32(31);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bitmap = _mm256_loadu_si256((const __m256i *)F->slow_bitmap);
  __m256i kmin = _mm256_set1_epi32(F->key_min), kmax = _mm256_set1_epi32(F->key_max);
  __m256i amax = _mm256_set1_epi32((int)F->abs_max), amin = _mm256_set1_epi32((int)F->abs_min);
  uint64_t negatives = 0;
  uint64_t i = 0;
  while (i + 8 <= n) {
    /* Fold before any 32-bit lane counter could wrap. */
    uint64_t block_end = n - (n - i) % 8;
    uint64_t room = (uint64_t)(PATTERN_FOLD_EVERY - F->pending);
    if (block_end - i > room) block_end = i + (room & ~(uint64_t)7);
    uint64_t fast_here = 0;
    for (; i < block_end; i += 8) {
      __m256i v = _mm256_loadu_si256((const __m256i *)(p + i));
      __m256i a = _mm256_and_si256(v, absmask);
      __m256i E = _mm256_srli_epi32(a, 23);
      __m256i word = _mm256_permutevar8x32_epi32(bitmap, _mm256_srli_epi32(E, 5));
      __m256i slow = _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_and_si256(E, low5)), one);
      if (!_mm256_testz_si256(slow, slow)) {
        for (int l = 0; l < 8; l++)
          acc_value(s, I, p[i + l], 1);
        continue;
      }
      negatives +=
          (uint64_t)__builtin_popcount((unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(v)));
      /* Flipping the magnitude bits of negative values makes signed integer
       * order match float order. */
      __m256i key = _mm256_xor_si256(v, _mm256_and_si256(_mm256_srai_epi32(v, 31), absmask));
      kmin = _mm256_min_epi32(kmin, key);
      kmax = _mm256_max_epi32(kmax, key);
      amax = _mm256_max_epu32(amax, a);
      amin = _mm256_min_epu32(amin, a);
      uint32_t e[8];
      _mm256_storeu_si256((__m256i *)e, E);
      F->sub[0][e[0]]++;
      F->sub[1][e[1]]++;
      F->sub[2][e[2]]++;
      F->sub[3][e[3]]++;
      F->sub[4][e[4]]++;
      F->sub[5][e[5]]++;
      F->sub[6][e[6]]++;
      F->sub[7][e[7]]++;
      fast_here += 8;
    }
    F->pending += fast_here;
    if (F->pending + 8 > PATTERN_FOLD_EVERY) f32_fast_fold(s, I, F);
  }
  for (; i < n; i++)
    acc_value(s, I, p[i], 1);
  /* Horizontal reductions of the vector accumulators. */
  int32_t k[8];
  uint32_t u[8];
  _mm256_storeu_si256((__m256i *)k, kmin);
  for (int l = 0; l < 8; l++)
    if (k[l] < F->key_min) F->key_min = k[l];
  _mm256_storeu_si256((__m256i *)k, kmax);
  for (int l = 0; l < 8; l++)
    if (k[l] > F->key_max) F->key_max = k[l];
  _mm256_storeu_si256((__m256i *)u, amax);
  for (int l = 0; l < 8; l++)
    if (u[l] > F->abs_max) F->abs_max = u[l];
  _mm256_storeu_si256((__m256i *)u, amin);
  for (int l = 0; l < 8; l++)
    if (u[l] < F->abs_min) F->abs_min = u[l];
  F->negatives += negatives;
}

static bool cpu_has_avx2(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
}
#else
static bool cpu_has_avx2(void) {
  return false;
}
#endif

/* ---- views --------------------------------------------------------------- */

const char *mp_scan_auto_name(void) {
  return cpu_has_avx2() ? "avx2" : "portable";
}

static int check_view(const mp_stats *s, const mp_view *v) {
  if (!s || !v || !mp_dtype_scannable(v->dtype) || s->dtype != v->dtype) return -EINVAL;
  uint64_t batch = v->batch ? v->batch : 1;
  if (v->rows == 0 || v->cols == 0) return 0;
  if (!v->data) return -EINVAL;
  if (v->cols > 1 && v->ld < v->rows) return -EINVAL;
  /* The logical element count must fit in 64 bits. */
  if (v->rows > UINT64_MAX / v->cols || v->rows * v->cols > UINT64_MAX / batch) return -EINVAL;
  return 0;
}

typedef enum run_kind { RUN_PORTABLE, RUN_F32_AVX2, RUN_PATTERNS } run_kind;

typedef struct scanner {
  mp_stats *s;
  const src_info *I;
  mp_dtype dtype;
  run_kind kind;
  pattern_counts patterns;
#ifdef MP_HAVE_X86
  f32_fast *f32;
#endif
} scanner;

static void scan_run(scanner *S, const void *p, uint64_t n) {
  switch (S->kind) {
#ifdef MP_HAVE_X86
  case RUN_F32_AVX2:
    f32_run_avx2(S->s, S->I, S->f32, p, n);
    break;
#endif
  case RUN_PATTERNS:
    pattern_run(S->s, S->I, S->dtype, &S->patterns, p, n);
    break;
  default:
    portable_run(S->s, S->I, S->dtype, p, n);
    break;
  }
}

/* Pattern counting pays 2^16 counters per call: only worth it on big views. */
#define PATTERN16_MIN_ELEMENTS (1u << 18)

static void choose_kind(scanner *S, mp_scan_impl impl, uint64_t total) {
  S->kind = RUN_PORTABLE;
  if (impl == MP_SCAN_PORTABLE) return;
  switch (S->dtype) {
  case MP_FP32:
#ifdef MP_HAVE_X86
    if (cpu_has_avx2() && total >= 8) {
      S->f32 = aligned_alloc(64, sizeof(f32_fast));
      if (S->f32) {
        f32_fast_init(S->f32, S->I);
        S->kind = RUN_F32_AVX2;
      }
    }
#endif
    break;
  case MP_FP16:
  case MP_BF16:
  case MP_FP8_E4M3:
  case MP_FP8_E5M2: {
    unsigned bits = mp_dtype_size(S->dtype) * 8;
    if (bits == 16 && total < PATTERN16_MIN_ELEMENTS) break;
    unsigned banks = bits == 16 ? 2 : 4;
    S->patterns.cnt = calloc((size_t)banks << bits, sizeof(uint32_t));
    if (!S->patterns.cnt) break; /* the portable path needs no memory */
    S->patterns.bits = bits;
    S->patterns.banks = banks;
    S->kind = RUN_PATTERNS;
    break;
  }
  default:
    break;
  }
}

static void finish(scanner *S) {
  switch (S->kind) {
#ifdef MP_HAVE_X86
  case RUN_F32_AVX2:
    f32_fast_finish(S->s, S->I, S->f32);
    free(S->f32);
    break;
#endif
  case RUN_PATTERNS:
    pattern_fold(S->s, S->I, S->dtype, &S->patterns);
    free(S->patterns.cnt);
    break;
  default:
    break;
  }
}

int mp_scan_with(mp_stats *s, const mp_view *v, mp_scan_impl impl) {
  int rc = check_view(s, v);
  if (rc < 0) return rc;
  if (v->rows == 0 || v->cols == 0) return 0;
  uint64_t batch = v->batch ? v->batch : 1;
  unsigned size = mp_dtype_size(v->dtype);
  scanner S = {.s = s, .I = info_of(v->dtype), .dtype = v->dtype};
  choose_kind(&S, impl, v->rows * v->cols * batch);
  /* A matrix whose columns touch is one run; so is a batch of such matrices
   * packed back to back. */
  bool dense = v->cols == 1 || v->ld == v->rows;
  uint64_t per_matrix = v->rows * v->cols;
  const unsigned char *base = v->data;
  if (dense && (batch == 1 || v->batch_stride == (int64_t)per_matrix)) {
    scan_run(&S, base, per_matrix * batch);
  } else {
    for (uint64_t b = 0; b < batch; b++) {
      const unsigned char *m = base + (int64_t)b * v->batch_stride * (int64_t)size;
      if (dense) {
        scan_run(&S, m, per_matrix);
        continue;
      }
      for (uint64_t c = 0; c < v->cols; c++)
        scan_run(&S, m + c * v->ld * size, v->rows);
    }
  }
  finish(&S);
  return 0;
}

int mp_scan(mp_stats *s, const mp_view *v) {
  return mp_scan_with(s, v, MP_SCAN_AUTO);
}

int mp_scan_contiguous(mp_stats *s, const void *data, uint64_t n) {
  if (!s) return -EINVAL;
  mp_view v = {.dtype = s->dtype, .data = data, .rows = n, .cols = 1, .ld = n, .batch = 1};
  return mp_scan(s, &v);
}
