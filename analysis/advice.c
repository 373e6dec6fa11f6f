/* Precision advice from a stats record.
 *
 * Multiplying by 2^k moves every value k binades up, so the cast outcomes at
 * scale 2^k follow from the exponent histogram: a binade whose scaled range
 * lies inside one outcome contributes exactly; a binade that straddles a
 * threshold contributes a range [0, count] to each outcome it may reach, and
 * the result is flagged `estimate`. absmax and min_abs_nonzero narrow the
 * extreme binades, which makes the fp8 scale (chosen from absmax) exact and
 * often the underflow too. At scale 1 the record's own cast counts are exact. */
#include "analysis/advice.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mp_advice_params_default(mp_advice_params *p) {
  p->underflow_max = MP_ADVICE_DEFAULT_UNDERFLOW_MAX;
  p->fp8_underflow_max = MP_ADVICE_DEFAULT_FP8_UNDERFLOW_MAX;
  p->scale_log2_min = -32;
  p->scale_log2_max = 32;
  p->prefer_fp8 = false;
}

/* Outcomes in order of magnitude, and back. */
static const mp_cast_outcome by_rank[MP_CAST_OUTCOMES] = {MP_CAST_UNDERFLOW, MP_CAST_SUBNORMAL,
                                                          MP_CAST_NORMAL, MP_CAST_OVERFLOW};

static int rank_of(mp_cast_outcome o) {
  for (int r = 0; r < MP_CAST_OUTCOMES; r++)
    if (by_rank[r] == o) return r;
  return 0;
}

/* 2^k, for -1022 <= k <= 1023 (a normal double: its exponent bits). */
static double pow2(int k) {
  uint64_t bits = (uint64_t)(k + 1023) << 52;
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}

/* Outcome of x * 2^k for finite non-zero x. Scaling is exact in double except
 * far below 2^-1022, where every target flushes anyway. A product by 2^k
 * rounds once, as ldexp does, without a library call at each scale. */
static mp_cast_outcome classify_scaled(double x, int k, mp_target t) {
  double y = k >= -1022 && k <= 1023 ? x * pow2(k) : ldexp(x, k);
  if (isinf(y)) return MP_CAST_OVERFLOW;
  if (y == 0) return MP_CAST_UNDERFLOW;
  return mp_cast_classify(y, t);
}

/* A non-empty binade of a record: its count and the range [bottom, top] its
 * values lie in, which does not depend on the scale. */
typedef struct binade {
  uint64_t c;
  double bottom, top;
} binade;

/* The largest |x| bin e of a record can hold whose values are the source
 * format's divided by 2^shift (mp_stats.hist_shift): the top of the format's
 * binade e + shift, moved down. Without a known source format or shift
 * (merged records), the largest double below 2^(e+1). */
static double bin_top(const mp_format *src, int e, int shift) {
  if (src && src->is_float && shift != MP_HIST_SHIFT_MIXED) {
    long se = (long)e + shift;
    if (se >= src->emin_sub && se <= src->emax)
      return ldexp(mp_format_binade_top(src, (int)se), -shift);
  }
  return nextafter(ldexp(1.0, e + 1), 0.0);
}

static binade binade_of(const mp_stats *s, const mp_format *src, int e, uint64_t c) {
  double bottom = ldexp(1.0, e);
  double top = bin_top(src, e, s->hist_shift);
  if (s->min_abs_nonzero > bottom && s->min_abs_nonzero <= top) bottom = s->min_abs_nonzero;
  if (s->absmax >= bottom && s->absmax < top) top = s->absmax;
  return (binade){c, bottom, top};
}

/* c values whose ends cast to ranks r0 <= r1 (their bottom's and top's
 * outcomes): exact when they agree, else [0, c] in each outcome between. */
static void add_ranks(uint64_t c, int r0, int r1, mp_scaled_casts *ret) {
  if (r0 == r1) {
    ret->lo[by_rank[r0]] += c;
    ret->hi[by_rank[r0]] += c;
    return;
  }
  ret->estimate = true;
  for (int r = r0; r <= r1; r++)
    ret->hi[by_rank[r]] += c;
}

/* Binade b's values, multiplied by 2^scale_log2, cast to target: into ret. */
static void add_binade(const binade *b, mp_target target, int scale_log2, mp_scaled_casts *ret) {
  add_ranks(b->c, rank_of(classify_scaled(b->bottom, scale_log2, target)),
            rank_of(classify_scaled(b->top, scale_log2, target)), ret);
}

void mp_scaled_casts_compute(const mp_stats *s, mp_target target, int scale_log2,
                             mp_scaled_casts *ret) {
  memset(ret, 0, sizeof *ret);
  if (scale_log2 == 0) {
    for (int o = 0; o < MP_CAST_OUTCOMES; o++)
      ret->lo[o] = ret->hi[o] = s->casts[target][o];
    return;
  }
  const mp_format *src = mp_format_of(s->dtype);
  int lo = s->hist_lo < MP_HIST_MIN ? MP_HIST_MIN : s->hist_lo;
  int hi = s->hist_hi > MP_HIST_MAX ? MP_HIST_MAX : s->hist_hi;
  for (int e = lo; e <= hi; e++) {
    uint64_t c = s->exp_hist[e - MP_HIST_MIN];
    if (!c) continue;
    binade b = binade_of(s, src, e, c);
    add_binade(&b, target, scale_log2, ret);
  }
}

/* The binades of s, when at most cap are non-empty (into b; their number),
 * else SIZE_MAX. */
static size_t binades_of(const mp_stats *s, binade *b, size_t cap) {
  const mp_format *src = mp_format_of(s->dtype);
  int lo = s->hist_lo < MP_HIST_MIN ? MP_HIST_MIN : s->hist_lo;
  int hi = s->hist_hi > MP_HIST_MAX ? MP_HIST_MAX : s->hist_hi;
  size_t n = 0;
  for (int e = lo; e <= hi; e++) {
    uint64_t c = s->exp_hist[e - MP_HIST_MIN];
    if (!c) continue;
    if (n == cap) return SIZE_MAX;
    b[n++] = binade_of(s, src, e, c);
  }
  return n;
}

static double fraction(uint64_t part, uint64_t whole) {
  return whole ? (double)part / (double)whole : 0.0;
}

/* subnormals out of the finite non-zero values that casts[MP_TGT_FP16] counts. */
static double fp16_subnormal_of(const uint64_t casts[MP_TARGET_COUNT][MP_CAST_OUTCOMES],
                                uint64_t subnormals) {
  uint64_t n = 0;
  for (int o = 0; o < MP_CAST_OUTCOMES; o++)
    n += casts[MP_TGT_FP16][o];
  return fraction(subnormals, n);
}

double mp_fp16_subnormal_share(const mp_stats *s, int scale_log2) {
  mp_scaled_casts sc;
  mp_scaled_casts_compute(s, MP_TGT_FP16, scale_log2, &sc);
  return fp16_subnormal_of(s->casts, sc.hi[MP_CAST_SUBNORMAL]);
}

double mp_fp16_subnormal_share_unscaled(const uint64_t casts[MP_TARGET_COUNT][MP_CAST_OUTCOMES]) {
  return fp16_subnormal_of(casts, casts[MP_TGT_FP16][MP_CAST_SUBNORMAL]);
}

/* Where the cast of x * 2^k to t steps up, for k from k0 to k1: step[r - 1]
 * - k0 is the first k at which its rank (outcomes by magnitude) is r or
 * more, k1 + 1 - k0 when none is. The rank never falls as k grows (x * 2^k
 * grows, and each outcome is a range of magnitudes), so each step is found
 * by bisection: about 3 * 7 casts instead of one at each of 65 scales. */
static void rank_steps(double x, int k0, int k1, mp_target t, uint8_t step[MP_CAST_OUTCOMES - 1]) {
  int from = k0;
  for (int r = 1; r < MP_CAST_OUTCOMES; r++) {
    int lo = from, hi = k1 + 1; /* the answer lies in [lo, hi] */
    while (lo < hi) {
      int mid = lo + (hi - lo) / 2;
      if (rank_of(classify_scaled(x, mid, t)) >= r)
        hi = mid;
      else
        lo = mid + 1;
    }
    step[r - 1] = (uint8_t)(lo - k0);
    from = lo;
  }
}

static int rank_at(const uint8_t step[MP_CAST_OUTCOMES - 1], int dk) {
  int r = 0;
  for (int i = 0; i < MP_CAST_OUTCOMES - 1; i++)
    r += step[i] <= dk;
  return r;
}

/* fp16 certainly fits s's values scaled by 2^k (the window's test). */
static bool fp16_fits_surely(const mp_stats *s, const mp_advice_params *p, uint64_t n, int k) {
  mp_scaled_casts sc;
  mp_scaled_casts_compute(s, MP_TGT_FP16, k, &sc);
  return sc.hi[MP_CAST_OVERFLOW] == 0 && fraction(sc.hi[MP_CAST_UNDERFLOW], n) <= p->underflow_max;
}

/* The window's true edge on the side of `to` from `from` (a fitting scale at
 * the search range's end): the furthest k from `from` up to `to` at which
 * fp16 fits. The scales that fit form one interval, so by bisection. */
static int fit_edge(const mp_stats *s, const mp_advice_params *p, uint64_t n, int from, int to) {
  int in = from, out = to < from ? to - 1 : to + 1; /* fits at in; out is past `to` */
  while (in - out > 1 || out - in > 1) {
    int mid = in + (out - in) / 2;
    if (fp16_fits_surely(s, p, n, mid))
      in = mid;
    else
      out = mid;
  }
  return in;
}

/* Loss-scale window: every k in the search range at which fp16 certainly
 * fits (upper bounds of overflow and underflow within limits). Overflow grows
 * and underflow shrinks with k, so the k that fit form one interval. */
static void fp16_window(const mp_stats *s, const mp_advice_params *p, uint64_t n, mp_advice *ret) {
  ret->has_window = false;
  ret->window_estimate = false;
  /* The binades once, and where each one's ends change outcome, not a cast
   * at each of some 65 scales (their ldexp calls, then their casts, were
   * most of the advice); a record with more binades than fit here (a wide
   * fp64 one), or a search range of more than 254 scales, has them cast at
   * each scale. */
  enum { MAX_BINADES = 128, MAX_SCALES = 254 };
  binade b[MAX_BINADES];
  uint8_t steps[MAX_BINADES][2][MP_CAST_OUTCOMES - 1]; /* bottom, top */
  const int k0 = p->scale_log2_min, k1 = p->scale_log2_max;
  size_t nb = k1 - k0 < MAX_SCALES ? binades_of(s, b, MAX_BINADES) : SIZE_MAX;
  for (size_t i = 0; nb != SIZE_MAX && i < nb; i++) {
    rank_steps(b[i].bottom, k0, k1, MP_TGT_FP16, steps[i][0]);
    rank_steps(b[i].top, k0, k1, MP_TGT_FP16, steps[i][1]);
  }
  for (int k = k0; k <= k1; k++) {
    mp_scaled_casts sc;
    if (k == 0 || nb == SIZE_MAX) {
      mp_scaled_casts_compute(s, MP_TGT_FP16, k, &sc);
    } else {
      memset(&sc, 0, sizeof sc); /* add_binade's sums, the ranks from the steps */
      for (size_t i = 0; i < nb; i++)
        add_ranks(b[i].c, rank_at(steps[i][0], k - k0), rank_at(steps[i][1], k - k0), &sc);
    }
    bool fits_surely =
        sc.hi[MP_CAST_OVERFLOW] == 0 && fraction(sc.hi[MP_CAST_UNDERFLOW], n) <= p->underflow_max;
    bool fits_maybe =
        sc.lo[MP_CAST_OVERFLOW] == 0 && fraction(sc.lo[MP_CAST_UNDERFLOW], n) <= p->underflow_max;
    if (fits_maybe != fits_surely) ret->window_estimate = true;
    if (!fits_surely) continue;
    if (!ret->has_window) ret->window_lo = k;
    ret->window_hi = k;
    ret->has_window = true;
  }
  ret->beyond_lo = ret->beyond_hi = 0;
  if (!ret->has_window) {
    ret->window_lo = ret->window_hi = 0;
    return;
  }
  if (ret->window_lo == k0 && k0 > MP_LOSS_SCALE_MIN_LOG2)
    ret->beyond_lo = k0 - fit_edge(s, p, n, k0, MP_LOSS_SCALE_MIN_LOG2);
  if (ret->window_hi == k1 && k1 < MP_LOSS_SCALE_MAX_LOG2)
    ret->beyond_hi = fit_edge(s, p, n, k1, MP_LOSS_SCALE_MAX_LOG2) - k1;
}

/* Per-tensor power-of-two scale: amax scaling's, the largest s with
 * absmax * 2^s at most the format's max finite value (exact, from absmax;
 * Transformer Engine's current scaling, fp8_max / amax, in its power-of-two
 * form). Not the largest without overflow: a recipe never scales absmax
 * into the half ulp above the max that rounds down to it (e4m3 448 .. 464),
 * and there fewer values would flush than at the recipe's scale. Then the
 * underflow at that scale. */
static void fp8_advice(const mp_stats *s, const mp_advice_params *p, uint64_t n, mp_target t,
                       mp_fp8_advice *ret) {
  memset(ret, 0, sizeof *ret);
  if (n == 0) {
    ret->fits = true;
    return;
  }
  const mp_format *f = mp_format_of(mp_target_dtype(t));
  if (!(s->absmax > 0) || !isfinite(s->absmax)) {
    /* No finite magnitude to scale from (a record that does not hold
     * together): no per-tensor scale fits it. */
    ret->fits = false;
    return;
  }
  int sc = f->emax - ilogb(s->absmax);
  while (ldexp(s->absmax, sc) > f->max_finite)
    sc--;
  while (ldexp(s->absmax, sc + 1) <= f->max_finite)
    sc++;
  if (sc > MP_FP8_SCALE_LOG2_MAX) sc = MP_FP8_SCALE_LOG2_MAX; /* more flush */
  if (sc < MP_FP8_SCALE_LOG2_MIN) sc = MP_FP8_SCALE_LOG2_MIN; /* overflow: no fit */
  mp_scaled_casts cs;
  mp_scaled_casts_compute(s, t, sc, &cs);
  ret->scale_log2 = sc;
  ret->underflow_fraction = fraction(cs.hi[MP_CAST_UNDERFLOW], n);
  ret->estimate = cs.lo[MP_CAST_UNDERFLOW] != cs.hi[MP_CAST_UNDERFLOW];
  ret->fits = cs.hi[MP_CAST_OVERFLOW] == 0 && ret->underflow_fraction <= p->fp8_underflow_max;
}

/* How many of an fp64 source's values fp32 rounds to zero (advice.h,
 * fp32_flush_fraction): the histogram's binades below flush_at's, and in
 * flush_at's binade [2^-150, 2^-149) only 2^-150 itself, known from the
 * extremes. */
static uint64_t fp32_flushes(const mp_stats *s, const mp_format *f32) {
  int edge = f32->emin_sub - 1; /* flush_at = 2^edge */
  uint64_t below = 0;
  for (int e = MP_HIST_MIN; e < edge; e++)
    below += s->exp_hist[e - MP_HIST_MIN];
  uint64_t at = s->exp_hist[edge - MP_HIST_MIN];
  if (!at) return below;
  if (s->absmax <= f32->flush_at) return below + at; /* the binade holds 2^-150 alone */
  return below + (s->min_abs_nonzero == f32->flush_at);
}

/* A source that is already 16- or 8-bit and holds NaN/inf produced them in
 * that format (an overflowed fp16 gradient, say): the advice about its finite
 * values still stands. A wider source holding NaN/inf cannot be shown safe in
 * a narrower format: keep fp32. */
static bool narrow_source(mp_dtype d) {
  return d == MP_FP16 || d == MP_BF16 || d == MP_FP8_E4M3 || d == MP_FP8_E5M2;
}

int mp_loss_scale_pick(int lo, int hi, int beyond_lo, int beyond_hi) {
  int t[2];
  mp_loss_scale_true_window(lo, hi, beyond_lo, beyond_hi, t);
  int mid = (int)floor(((double)t[0] + (double)t[1]) / 2);
  if (lo <= 0 && 0 <= hi && mid < 0) mid = 0;
  return mid < lo ? lo : mid > hi ? hi : mid;
}

const char *mp_loss_scale_edges_text(int lo, int hi, int beyond_lo, int beyond_hi, int search_lo,
                                     int search_hi, const char *pow_pre, const char *pow_suf,
                                     char buf[MP_LOSS_SCALE_EDGES_TEXT_MAX]) {
  int t[2];
  mp_loss_scale_true_window(lo, hi, beyond_lo, beyond_hi, t);
  if (!beyond_lo && !beyond_hi)
    buf[0] = 0;
  else
    snprintf(buf, MP_LOSS_SCALE_EDGES_TEXT_MAX,
             " (searched %s%d%s .. %s%d%s; %s%d%s .. %s%d%s fits in all)", pow_pre, search_lo,
             pow_suf, pow_pre, search_hi, pow_suf, pow_pre, t[0], pow_suf, pow_pre, t[1], pow_suf);
  return buf;
}

void mp_advise(const mp_stats *s, const mp_advice_params *p, mp_advice *ret) {
  mp_advice_params defaults;
  if (!p) {
    mp_advice_params_default(&defaults);
    p = &defaults;
  }
  memset(ret, 0, sizeof *ret);
  uint64_t n = mp_stats_nonzero_finite(s);
  ret->judged = n > 0;
  ret->fp16_overflow_fraction = fraction(s->casts[MP_TGT_FP16][MP_CAST_OVERFLOW], n);
  ret->fp16_underflow_fraction = fraction(s->casts[MP_TGT_FP16][MP_CAST_UNDERFLOW], n);
  bool fp16_safe = s->casts[MP_TGT_FP16][MP_CAST_OVERFLOW] == 0 &&
                   ret->fp16_underflow_fraction <= p->underflow_max;
  fp16_window(s, p, n, ret);
  ret->fp16 = fp16_safe ? MP_FP16_SAFE : ret->has_window ? MP_FP16_LOSS_SCALE : MP_FP16_UNSAFE;
  ret->bf16_ok = s->casts[MP_TGT_BF16][MP_CAST_OVERFLOW] == 0 &&
                 fraction(s->casts[MP_TGT_BF16][MP_CAST_UNDERFLOW], n) <= p->underflow_max;
  fp8_advice(s, p, n, MP_TGT_FP8_E4M3, &ret->fp8_e4m3);
  fp8_advice(s, p, n, MP_TGT_FP8_E5M2, &ret->fp8_e5m2);
  ret->nonfinite_input = s->nans + s->pos_infs + s->neg_infs > 0;
  if (s->saturated) {
    /* Values an op clamped to its fp8 format's max: their true magnitude is
     * unknown, so they overflowed that format at the scale the op used and
     * no format narrower than fp32's range (fp16 at any loss scale, fp8 at
     * any per-tensor scale) can be shown to hold them. */
    ret->fp16_overflow_fraction =
        fraction(s->casts[MP_TGT_FP16][MP_CAST_OVERFLOW] + s->saturated, n);
    fp16_safe = false;
    ret->has_window = false;
    ret->window_lo = ret->window_hi = ret->beyond_lo = ret->beyond_hi = 0;
    ret->fp16 = MP_FP16_UNSAFE;
    ret->fp8_e4m3.fits = false;
    ret->fp8_e5m2.fits = false;
  }

  const mp_format *f32 = mp_format_of(MP_FP32);
  ret->fp32_overflow =
      s->dtype == MP_FP64 &&
      (f32->overflow_strict ? s->absmax > f32->overflow_at : s->absmax >= f32->overflow_at);
  if (s->dtype == MP_FP64) {
    ret->fp32_flush_fraction = fraction(fp32_flushes(s, f32), n);
    ret->fp32_flush = ret->fp32_flush_fraction > p->underflow_max;
  }
  if (ret->nonfinite_input && !narrow_source(s->dtype))
    ret->recommended = MP_REC_FP32;
  else if (p->prefer_fp8 && ret->fp8_e4m3.fits)
    ret->recommended = MP_REC_FP8_E4M3;
  else if (p->prefer_fp8 && ret->fp8_e5m2.fits)
    ret->recommended = MP_REC_FP8_E5M2;
  else if (fp16_safe)
    ret->recommended = MP_REC_FP16;
  else if (ret->has_window)
    ret->recommended = MP_REC_FP16_LOSS_SCALE;
  else if (ret->bf16_ok)
    ret->recommended = MP_REC_BF16;
  else
    ret->recommended = MP_REC_FP32;
}

bool mp_loss_scale_valid(double scale) {
  return scale >= ldexp(1.0, MP_LOSS_SCALE_MIN_LOG2) && scale <= FLT_MAX;
}

int mp_parse_loss_scale(const char *s, double *ret_scale) {
  if (!s || !*s) return -EINVAL;
  char *end;
  double v;
  if (s[0] == '2' && s[1] == '^') {
    errno = 0;
    long k = strtol(s + 2, &end, 10);
    if (end == s + 2 || *end || errno || k < MP_LOSS_SCALE_MIN_LOG2 || k > MP_LOSS_SCALE_MAX_LOG2)
      return -EINVAL;
    v = ldexp(1.0, (int)k);
  } else {
    errno = 0;
    v = strtod(s, &end);
    if (end == s || *end || errno) return -EINVAL;
  }
  if (!mp_loss_scale_valid(v)) return -EINVAL;
  *ret_scale = v;
  return 0;
}

bool mp_scale_log2(double scale, int *ret_log2) {
  int e;
  double m = frexp(scale, &e); /* scale = m * 2^e, m in [0.5, 1) */
  if (m == 0.5) {
    *ret_log2 = e - 1;
    return true;
  }
  *ret_log2 = (int)lround(log2(scale));
  return false;
}

/* Cast outcomes of the finite non-zero values of s from its histogram. */
static bool casts_from_hist(mp_stats *s, const mp_format *src) {
  bool exact = true;
  memset(s->casts, 0, sizeof s->casts);
  for (int e = MP_HIST_MIN; e <= MP_HIST_MAX; e++) {
    uint64_t c = s->exp_hist[e - MP_HIST_MIN];
    if (!c) continue;
    double bottom = ldexp(1.0, e);
    double top = bin_top(src, e, s->hist_shift);
    /* The extremes are values of the tensor: one inside the binade is counted
     * with its own outcome, so an overflow (or flush) it proves is never lost. */
    bool lo_in = s->min_abs_nonzero >= bottom && s->min_abs_nonzero <= top;
    bool hi_in = s->absmax >= bottom && s->absmax <= top;
    if (s->min_abs_nonzero > bottom && s->min_abs_nonzero <= top) bottom = s->min_abs_nonzero;
    if (s->absmax >= bottom && s->absmax < top) top = s->absmax;
    for (int t = 0; t < MP_TARGET_COUNT; t++) {
      mp_cast_outcome o0 = classify_scaled(bottom, 0, (mp_target)t);
      mp_cast_outcome o1 = classify_scaled(top, 0, (mp_target)t);
      if (o0 == o1) {
        s->casts[t][o0] += c;
        continue;
      }
      if (t == MP_TGT_FP16 || t == MP_TGT_BF16) exact = false;
      uint64_t rest = c; /* the others count where the binade's midpoint goes */
      if (lo_in && rest) {
        s->casts[t][o0]++;
        rest--;
      }
      if (hi_in && rest) {
        s->casts[t][o1]++;
        rest--;
      }
      s->casts[t][classify_scaled(bottom + (top - bottom) / 2, 0, (mp_target)t)] += rest;
    }
  }
  return exact;
}

/* x / scale for finite x and a positive finite scale, kept finite and
 * non-zero when x is: clamped to +-DBL_MAX or +-DBL_TRUE_MIN, which clears
 * *exact. */
static double saturating_div(double x, double scale, bool *exact) {
  double q = x / scale;
  if (isinf(q)) {
    *exact = false;
    return copysign(DBL_MAX, q);
  }
  if (q == 0 && x != 0) {
    *exact = false;
    return copysign(DBL_TRUE_MIN, x);
  }
  return q;
}

bool mp_stats_unscale(const mp_stats *in, double scale, mp_stats *ret, bool *ret_casts_estimate) {
  *ret = *in;
  int k;
  bool exact = mp_scale_log2(scale, &k);
  if (ret_casts_estimate) *ret_casts_estimate = false;
  if (exact && k == 0) return true;
  memset(ret->exp_hist, 0, sizeof ret->exp_hist);
  for (int e = MP_HIST_MIN; e <= MP_HIST_MAX; e++) {
    uint64_t c = in->exp_hist[e - MP_HIST_MIN];
    if (!c) continue;
    int d = e - k;
    if (d < MP_HIST_MIN || d > MP_HIST_MAX) { /* beyond double: unreachable for real scales */
      exact = false;
      d = d < MP_HIST_MIN ? MP_HIST_MIN : MP_HIST_MAX;
    }
    ret->exp_hist[d - MP_HIST_MIN] += c;
  }
  /* Bin e now holds the source binade e + k (+ in's own shift); a shift
   * past any bin's reach knows no binade (as a mixed one). */
  long shift = (long)in->hist_shift + k;
  ret->hist_shift = in->hist_shift == MP_HIST_SHIFT_MIXED || labs(shift) > MP_HIST_BINS
                        ? MP_HIST_SHIFT_MIXED
                        : (int)shift;
  int lo = in->hist_lo - k, hi = in->hist_hi - k;
  ret->hist_lo = lo < MP_HIST_MIN ? MP_HIST_MIN : lo > MP_HIST_MAX ? MP_HIST_MAX : lo;
  ret->hist_hi = hi < MP_HIST_MIN ? MP_HIST_MIN : hi > MP_HIST_MAX ? MP_HIST_MAX : hi;
  if (mp_stats_has_finite(in)) {
    /* A scale far from 1 can take a quotient beyond double: it saturates at
     * the largest (or smallest non-zero) magnitude, as the histogram does. */
    ret->min = saturating_div(in->min, scale, &exact);
    ret->max = saturating_div(in->max, scale, &exact);
    ret->absmax = saturating_div(in->absmax, scale, &exact);
    if (isfinite(in->min_abs_nonzero))
      ret->min_abs_nonzero = saturating_div(in->min_abs_nonzero, scale, &exact);
  }
  bool casts_exact = casts_from_hist(ret, mp_format_of(in->dtype));
  if (ret_casts_estimate) *ret_casts_estimate = !exact || !casts_exact;
  return exact;
}

const char *mp_recommendation_name(mp_recommendation r) {
  static const char *const names[MP_REC_COUNT] = {"fp16", "fp16_loss_scale", "bf16",
                                                  "fp32", "fp8_e4m3",        "fp8_e5m2"};
  if (r < 0 || r >= MP_REC_COUNT) return "invalid";
  return names[r];
}

const char *mp_advice_recommended_name(const mp_advice *a) {
  return (a->fp32_overflow || a->fp32_flush) && a->recommended == MP_REC_FP32
             ? "fp64"
             : mp_recommendation_name(a->recommended);
}

const char *mp_fp16_verdict_name(mp_fp16_verdict v) {
  static const char *const names[] = {"safe", "loss_scale", "unsafe"};
  if (v < 0 || v > MP_FP16_UNSAFE) return "invalid";
  return names[v];
}
