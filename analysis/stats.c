/* The stats record: initialisation, merge, exact cast classification and the
 * deliberately simple one-value reference that every scanner must agree with.
 *
 * Merge must be associative and commutative bit for bit. Counts add; for the
 * extrema a total order is used in which -0 < +0, so min(-0, +0) does not
 * depend on the order partials arrive in. */
#include "analysis/stats.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

static const double none_min_abs = INFINITY;

/* Everything before the histogram, as mp_stats_init leaves it. */
static void init_head(mp_stats *s, mp_dtype dtype) {
  memset(s, 0, offsetof(mp_stats, exp_hist));
  s->dtype = dtype;
  const mp_format *f = mp_format_of(dtype);
  if (f) {
    s->hist_lo = f->emin_sub;
    s->hist_hi = f->emax;
  } else {
    /* No source format: an empty range that any merge widens. */
    s->hist_lo = MP_HIST_MAX + 1;
    s->hist_hi = MP_HIST_MIN - 1;
  }
  s->min = NAN;
  s->max = NAN;
  s->absmax = NAN;
  s->min_abs_nonzero = none_min_abs;
}

void mp_stats_init(mp_stats *s, mp_dtype dtype) {
  memset(s->exp_hist, 0, sizeof s->exp_hist);
  init_head(s, dtype);
}

/* The bins a record built by this library can have non-zero: the binades
 * from its smallest to its largest finite non-zero |x| (clamped to the
 * histogram; lo > hi when it has no such value). */
static void value_bins(const mp_stats *s, int *ret_lo, int *ret_hi) {
  int lo = 1, hi = 0;
  if (s->min_abs_nonzero < INFINITY && s->absmax > 0) {
    lo = mp_exponent_of(s->min_abs_nonzero);
    hi = mp_exponent_of(s->absmax);
  }
  *ret_lo = lo < MP_HIST_MIN ? MP_HIST_MIN : lo;
  *ret_hi = hi > MP_HIST_MAX ? MP_HIST_MAX : hi;
}

void mp_stats_reinit_scanned(mp_stats *s, mp_dtype dtype) {
  int lo, hi;
  value_bins(s, &lo, &hi);
  if (lo <= hi)
    memset(&s->exp_hist[lo - MP_HIST_MIN], 0, (size_t)(hi - lo + 1) * sizeof s->exp_hist[0]);
  init_head(s, dtype);
}

enum { PACKED_HEAD = offsetof(mp_stats, exp_hist) };

size_t mp_stats_packed_size(const mp_stats *s) {
  int lo, hi;
  value_bins(s, &lo, &hi);
  return PACKED_HEAD + (lo <= hi ? (size_t)(hi - lo + 1) * sizeof s->exp_hist[0] : 0);
}

void mp_stats_pack_scanned(const mp_stats *s, void *ret_buf) {
  int lo, hi;
  value_bins(s, &lo, &hi);
  memcpy(ret_buf, s, PACKED_HEAD);
  if (lo <= hi)
    memcpy((char *)ret_buf + PACKED_HEAD, &s->exp_hist[lo - MP_HIST_MIN],
           (size_t)(hi - lo + 1) * sizeof s->exp_hist[0]);
}

void mp_stats_unpack_scanned(mp_stats *dst, const void *buf) {
  mp_stats_reinit_scanned(dst, MP_DTYPE_INVALID); /* dst's own bins cleared */
  memcpy(dst, buf, PACKED_HEAD);
  int lo, hi;
  value_bins(dst, &lo, &hi);
  if (lo <= hi)
    memcpy(&dst->exp_hist[lo - MP_HIST_MIN], (const char *)buf + PACKED_HEAD,
           (size_t)(hi - lo + 1) * sizeof dst->exp_hist[0]);
}

/* a < b in the order -inf < ... < -0 < +0 < ... < +inf (neither NaN). */
static bool total_less(double a, double b) {
  if (a < b) return true;
  return a == b && signbit(a) && !signbit(b);
}

/* NaN means "none". */
double mp_stats_pick_min(double a, double b) {
  if (isnan(a)) return b;
  if (isnan(b)) return a;
  return total_less(b, a) ? b : a;
}

double mp_stats_pick_max(double a, double b) {
  if (isnan(a)) return b;
  if (isnan(b)) return a;
  return total_less(a, b) ? b : a;
}

/* Everything but the histogram. */
static void merge_head(mp_stats *dst, const mp_stats *src) {
  MP_STATS_MERGE_HEAD(dst, src);
}

void mp_stats_merge(mp_stats *dst, const mp_stats *src) {
  merge_head(dst, src);
  /* Only the bins inside the (merged) range can be non-zero. */
  int lo = dst->hist_lo < MP_HIST_MIN ? MP_HIST_MIN : dst->hist_lo;
  int hi = dst->hist_hi > MP_HIST_MAX ? MP_HIST_MAX : dst->hist_hi;
  for (int e = lo; e <= hi; e++)
    dst->exp_hist[e - MP_HIST_MIN] += src->exp_hist[e - MP_HIST_MIN];
}

void mp_stats_merge_scanned(mp_stats *dst, const mp_stats *src) {
  int lo, hi;
  value_bins(src, &lo, &hi);
  merge_head(dst, src);
  for (int e = lo; e <= hi; e++)
    dst->exp_hist[e - MP_HIST_MIN] += src->exp_hist[e - MP_HIST_MIN];
}

void mp_stats_repeat(mp_stats *s, uint64_t k) {
  s->count *= k;
  s->zeros *= k;
  s->nans *= k;
  s->pos_infs *= k;
  s->neg_infs *= k;
  s->negatives *= k;
  s->saturated *= k;
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    for (int o = 0; o < MP_CAST_OUTCOMES; o++)
      s->casts[t][o] *= k;
  for (int b = 0; b < MP_HIST_BINS; b++)
    s->exp_hist[b] *= k;
}

uint64_t mp_stats_nonzero_finite(const mp_stats *s) {
  return s->count - s->zeros - s->nans - s->pos_infs - s->neg_infs;
}

bool mp_stats_has_finite(const mp_stats *s) {
  return s->count - s->nans - s->pos_infs - s->neg_infs > 0;
}

uint64_t mp_stats_hist_bin(const mp_stats *s, int e) {
  if (e < s->hist_lo || e > s->hist_hi || e < MP_HIST_MIN || e > MP_HIST_MAX) return 0;
  return s->exp_hist[e - MP_HIST_MIN];
}

void mp_stats_hist_written(const mp_stats *s, int *ret_lo, int *ret_hi) {
  int lo = s->hist_lo < MP_HIST_MIN ? MP_HIST_MIN : s->hist_lo;
  int hi = s->hist_hi > MP_HIST_MAX ? MP_HIST_MAX : s->hist_hi;
  while (lo <= hi && !s->exp_hist[lo - MP_HIST_MIN])
    lo++;
  while (hi >= lo && !s->exp_hist[hi - MP_HIST_MIN])
    hi--;
  mp_hist_written_range(s->hist_lo, s->hist_hi, lo, hi, ret_lo, ret_hi);
}

void mp_stats_hist_read_range(mp_dtype dtype, int *lo, int *hi) {
  const mp_format *f = mp_format_of(dtype);
  if (!f) return;
  if (f->emin_sub < *lo) *lo = f->emin_sub;
  if (f->emax > *hi) *hi = f->emax;
}

mp_cast_outcome mp_cast_classify(double x, mp_target target) {
  const mp_format *f = mp_format_of(mp_target_dtype(target));
  double a = fabs(x);
  if (f->overflow_strict ? a > f->overflow_at : a >= f->overflow_at) return MP_CAST_OVERFLOW;
  if (a <= f->flush_at) return MP_CAST_UNDERFLOW;
  if (a < f->subnormal_below) return MP_CAST_SUBNORMAL;
  return MP_CAST_NORMAL;
}

int mp_exponent_of(double x) {
  return ilogb(x);
}

void mp_stats_add(mp_stats *s, double x) {
  s->count++;
  if (isnan(x)) {
    s->nans++;
    return;
  }
  if (isinf(x)) {
    if (x > 0) {
      s->pos_infs++;
    } else {
      s->neg_infs++;
      s->negatives++;
    }
    return;
  }
  if (x < 0) s->negatives++;
  s->min = mp_stats_pick_min(s->min, x);
  s->max = mp_stats_pick_max(s->max, x);
  s->absmax = mp_stats_pick_max(s->absmax, fabs(x));
  if (x == 0) {
    s->zeros++;
    return;
  }
  if (fabs(x) < s->min_abs_nonzero) s->min_abs_nonzero = fabs(x);
  int e = mp_exponent_of(x);
  s->exp_hist[e - MP_HIST_MIN]++;
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    s->casts[t][mp_cast_classify(x, (mp_target)t)]++;
}
