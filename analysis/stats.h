/* The stats record: what one pass over a tensor learns about its values.
 *
 * The same record is produced by the host scanner, the device scan kernel and
 * (merged) by the profiler and the report. Merge is associative and
 * commutative, so partials from threads, blocks and calls combine to the same
 * result in any order. */
#ifndef MPPROF_ANALYSIS_STATS_H
#define MPPROF_ANALYSIS_STATS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats.h"

/* Exponent histogram bins: floor(log2|x|) for finite non-zero x, over the
 * widest source range (fp64: -1074 .. 1023). A record only reports the bins of
 * its own source format's range [hist_lo, hist_hi]. */
#define MP_HIST_MIN (-1074)
#define MP_HIST_MAX 1023
#define MP_HIST_BINS (MP_HIST_MAX - MP_HIST_MIN + 1)
/* mp_stats.hist_shift of a merge of records with different shifts. */
#define MP_HIST_SHIFT_MIXED INT_MIN

typedef enum mp_cast_outcome {
  MP_CAST_OVERFLOW = 0, /* |RNE(x)| > max finite */
  MP_CAST_UNDERFLOW,    /* RNE(x) == 0: flushed to zero */
  MP_CAST_SUBNORMAL,
  MP_CAST_NORMAL,
  MP_CAST_OUTCOMES
} mp_cast_outcome;

typedef struct mp_stats {
  mp_dtype dtype; /* source dtype; MP_DTYPE_INVALID after merging different dtypes */
  int hist_lo;    /* reported bin range: the source format's [emin_sub, emax] (union after merge) */
  int hist_hi;
  /* The values are the source format's divided by 2^hist_shift
   * (mp_stats_unscale): bin e holds the format's binade e + hist_shift,
   * moved down. 0 for a record as scanned; MP_HIST_SHIFT_MIXED after merging
   * records of different shifts (each bin is then only [2^e, 2^(e+1))). In
   * memory only: files hold records as taken (0). */
  int hist_shift;
  uint64_t count; /* all elements, NaN and inf included */
  uint64_t zeros; /* +0 and -0 */
  uint64_t nans;
  uint64_t pos_infs;
  uint64_t neg_infs;
  uint64_t negatives; /* x < 0, -inf included, -0 excluded */
  /* Finite values at +-max of an fp8 format in the output of an op that
   * converts with saturation (cuBLASLt's fp8 D): possibly clamped, so their
   * true magnitude is unknown; advice counts them as overflow. Set by the
   * profiler's host path (mp_count_saturated), never by the scanners. */
  uint64_t saturated;
  /* Over finite values only; NaN (and +inf for min_abs_nonzero) when there is none. */
  double min;
  double max;
  double absmax;                                     /* max |x| over finite x */
  double min_abs_nonzero;                            /* min |x| over finite non-zero x */
  uint64_t casts[MP_TARGET_COUNT][MP_CAST_OUTCOMES]; /* finite non-zero x only */
  uint64_t exp_hist[MP_HIST_BINS];                   /* index: floor(log2|x|) - MP_HIST_MIN */
} mp_stats;

/* Empty record for a source dtype (min/max/absmax/min_abs_nonzero set to their "none" values). */
void mp_stats_init(mp_stats *s, mp_dtype dtype);
/* dst += src. Associative and commutative, bit for bit. */
void mp_stats_merge(mp_stats *dst, const mp_stats *src);
/* For records built in this process by mp_stats_init, the scanners and
 * merges of such records (not read from elsewhere): their non-zero bins lie
 * in the binades of min_abs_nonzero .. absmax, so these touch only those
 * (a tensor spanning a few binades costs a few bins, not the 17 KB record).
 * Same results as mp_stats_merge and mp_stats_init. */
void mp_stats_merge_scanned(mp_stats *dst, const mp_stats *src);
void mp_stats_reinit_scanned(mp_stats *s, mp_dtype dtype);
/* Such a record packed: its fields before the histogram, then the bins of its
 * values' binades only (a few hundred bytes for a tensor spanning a few
 * binades). For records held a while, many at once (a grouped call's groups
 * between their scans and their merge). Unpacking into dst (itself such a
 * record, or fresh from mp_stats_init) gives back the packed record. */
size_t mp_stats_packed_size(const mp_stats *s);
void mp_stats_pack_scanned(const mp_stats *s, void *ret_buf); /* mp_stats_packed_size(s) bytes */
void mp_stats_unpack_scanned(mp_stats *dst, const void *buf);
/* The record of s's values each seen k >= 1 times (a view that repeats its
 * elements, stride 0): every count times k, the extremes as they are; the
 * same record as merging k copies. The caller knows the counts fit (k times
 * s->count is the repeated view's element count). */
void mp_stats_repeat(mp_stats *s, uint64_t k);
/* How mp_stats_merge combines min, max and absmax (NaN: none; -0 < +0), for
 * records kept in another form (the report's compact stats). */
double mp_stats_pick_min(double a, double b);
double mp_stats_pick_max(double a, double b);
/* dst += src for every field but the histogram: the one merge rule of those
 * fields, for mp_stats and for any record that names them alike (report/'s
 * compact records). */
#define MP_STATS_MERGE_HEAD(dst, src)                                                              \
  do {                                                                                             \
    if ((dst)->dtype != (src)->dtype) (dst)->dtype = MP_DTYPE_INVALID;                             \
    if ((src)->hist_lo < (dst)->hist_lo) (dst)->hist_lo = (src)->hist_lo;                          \
    if ((src)->hist_hi > (dst)->hist_hi) (dst)->hist_hi = (src)->hist_hi;                          \
    if ((dst)->hist_shift != (src)->hist_shift) (dst)->hist_shift = MP_HIST_SHIFT_MIXED;           \
    (dst)->count += (src)->count;                                                                  \
    (dst)->zeros += (src)->zeros;                                                                  \
    (dst)->nans += (src)->nans;                                                                    \
    (dst)->pos_infs += (src)->pos_infs;                                                            \
    (dst)->neg_infs += (src)->neg_infs;                                                            \
    (dst)->negatives += (src)->negatives;                                                          \
    (dst)->saturated += (src)->saturated;                                                          \
    (dst)->min = mp_stats_pick_min((dst)->min, (src)->min);                                        \
    (dst)->max = mp_stats_pick_max((dst)->max, (src)->max);                                        \
    (dst)->absmax = mp_stats_pick_max((dst)->absmax, (src)->absmax);                               \
    if ((src)->min_abs_nonzero < (dst)->min_abs_nonzero)                                           \
      (dst)->min_abs_nonzero = (src)->min_abs_nonzero;                                             \
    for (int t_ = 0; t_ < MP_TARGET_COUNT; t_++)                                                   \
      for (int o_ = 0; o_ < MP_CAST_OUTCOMES; o_++)                                                \
        (dst)->casts[t_][o_] += (src)->casts[t_][o_];                                              \
  } while (0)
/* Finite non-zero elements: the base of every fraction. */
uint64_t mp_stats_nonzero_finite(const mp_stats *s);
bool mp_stats_has_finite(const mp_stats *s);
uint64_t mp_stats_hist_bin(const mp_stats *s, int e); /* 0 outside the bin range */

/* The bins a written STATS object lists (docs/raw-format.md): from the lowest
 * to the highest non-zero one, or the record's whole range [hist_lo, hist_hi]
 * when none is non-zero (nz_lo > nz_hi). A fp32 tensor spanning a dozen
 * binades writes a dozen counts, not 277. Every writer takes its range here. */
static inline void mp_hist_written_range(int hist_lo, int hist_hi, int nz_lo, int nz_hi,
                                         int *ret_lo, int *ret_hi) {
  bool some = nz_lo <= nz_hi;
  *ret_lo = some ? nz_lo : hist_lo;
  *ret_hi = some ? nz_hi : hist_hi;
}
void mp_stats_hist_written(const mp_stats *s, int *ret_lo, int *ret_hi);
/* The range a reader gives a histogram written over *lo..*hi: joined with the
 * source format's [emin_sub, emax] (the bins outside the written ones are 0),
 * so a record reads back with the range it had. dtype without a format (a
 * merge of different dtypes): the written range. */
void mp_stats_hist_read_range(mp_dtype dtype, int *lo, int *hi);

/* Exact RNE cast outcome of a finite non-zero value into a target format. */
mp_cast_outcome mp_cast_classify(double x, mp_target target);
/* floor(log2|x|) of a finite non-zero double (subnormals included), exact. */
int mp_exponent_of(double x);

/* Reference path: add one value. Deliberately simple; the scanners must agree with it. */
void mp_stats_add(mp_stats *s, double x);

#endif
