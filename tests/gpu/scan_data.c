/* Scan test data and bitwise record comparison (see scan_data.h). */
#include "tests/gpu/scan_data.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/formats.h"

static uint64_t next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void *mpp_scan_test_data(mp_dtype dtype, uint64_t n, uint64_t seed) {
  unsigned w = mp_dtype_size(dtype);
  uint8_t *buf = malloc(n * w + 1);
  if (!buf) return NULL;
  /* Boundaries of every target and of the source itself, each nudged up and down. */
  double special[64];
  int ns = 0;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const mp_format *f = mp_format_of(mp_target_dtype((mp_target)t));
    special[ns++] = f->overflow_at;
    special[ns++] = f->flush_at;
    special[ns++] = f->subnormal_below;
    special[ns++] = f->max_finite;
    special[ns++] = ldexp(1.0, f->emin);
    special[ns++] = ldexp(1.0, f->emin_sub);
  }
  special[ns++] = 0.0;
  special[ns++] = -0.0;
  special[ns++] = NAN;
  special[ns++] = INFINITY;
  special[ns++] = -INFINITY;
  special[ns++] = 1e300;
  special[ns++] = 4.9e-324;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = next(&seed);
    double x;
    if (r % 4 == 0) {
      x = special[(r >> 8) % (uint64_t)ns];
      int nudge = (int)((r >> 20) % 3) - 1; /* one source ulp below / at / above, after rounding */
      x *= 1.0 + nudge * ldexp(1.0, -8);
      if ((r >> 24) & 1) x = -x;
    } else if (r % 4 == 1) {
      /* raw bit patterns: every class the source can hold */
      uint64_t bits = next(&seed);
      memcpy(buf + i * w, &bits, w);
      continue;
    } else {
      double m = (double)(next(&seed) >> 11) * 0x1p-53 + 0.5;
      int e = (int)((r >> 8) % 80) - 40;
      x = ldexp(m, e) * (((r >> 40) & 1) ? -1 : 1);
    }
    mp_store(dtype, buf, i, x);
  }
  return buf;
}

void *mpp_scan_normal_data(mp_dtype dtype, uint64_t n, uint64_t seed) {
  unsigned w = mp_dtype_size(dtype);
  uint8_t *buf = malloc(n * w + 1);
  if (!buf) return NULL;
  for (uint64_t i = 0; i < n; i += 2) { /* Box-Muller: two normals a draw */
    double u1 = ((double)(next(&seed) >> 11) + 1) * 0x1p-53,
           u2 = (double)(next(&seed) >> 11) * 0x1p-53;
    double r = sqrt(-2.0 * log(u1));
    mp_store(dtype, buf, i, r * cos(2 * M_PI * u2));
    if (i + 1 < n) mp_store(dtype, buf, i + 1, r * sin(2 * M_PI * u2));
  }
  return buf;
}

static int same_double(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

const char *mpp_stats_diff(const mp_stats *a, const mp_stats *b) {
  if (a->dtype != b->dtype) return "dtype";
  if (a->hist_lo != b->hist_lo || a->hist_hi != b->hist_hi) return "hist range";
  if (a->count != b->count) return "count";
  if (a->zeros != b->zeros) return "zeros";
  if (a->nans != b->nans) return "nans";
  if (a->pos_infs != b->pos_infs) return "pos_infs";
  if (a->neg_infs != b->neg_infs) return "neg_infs";
  if (a->negatives != b->negatives) return "negatives";
  if (a->saturated != b->saturated) return "saturated";
  if (!same_double(a->min, b->min)) return "min";
  if (!same_double(a->max, b->max)) return "max";
  if (!same_double(a->absmax, b->absmax)) return "absmax";
  if (!same_double(a->min_abs_nonzero, b->min_abs_nonzero)) return "min_abs_nonzero";
  if (memcmp(a->casts, b->casts, sizeof a->casts)) return "casts";
  if (memcmp(a->exp_hist, b->exp_hist, sizeof a->exp_hist)) return "exp_hist";
  return NULL;
}
