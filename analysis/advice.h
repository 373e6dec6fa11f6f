/* Precision advice from a stats record: does the tensor fit FP16 as is, with a
 * power-of-two loss scale (and which), BF16, FP8 with per-tensor scaling, or
 * must it stay FP32?
 *
 * Scaling by 2^k shifts every binade by k, so counts at a scale follow from the
 * exponent histogram exactly, except in the one binade that straddles a format
 * boundary; figures that depend on such a binade are flagged `estimate`. */
#ifndef MPPROF_ANALYSIS_ADVICE_H
#define MPPROF_ANALYSIS_ADVICE_H

#include <float.h>
#include <stdbool.h>
#include <stdint.h>

#include "stats.h"

typedef struct mp_advice_params {
  double underflow_max; /* fraction of finite non-zero values allowed to flush to zero (fp16/bf16);
                           default 0.001 */
  double fp8_underflow_max; /* same for fp8 with per-tensor scaling; default 0.01 */
  int scale_log2_min;       /* loss-scale search range, default -32 */
  int scale_log2_max;       /* default 32 */
  bool prefer_fp8;          /* let `recommended` be an fp8 format when it fits; default false */
} mp_advice_params;

#define MP_ADVICE_DEFAULT_UNDERFLOW_MAX 0.001
#define MP_ADVICE_DEFAULT_FP8_UNDERFLOW_MAX 0.01
/* "Fits fp16" counts overflow and flush to zero only. From this share of the
 * finite non-zero values in fp16's subnormal range (fewer than 11 significant
 * bits) on, the report (finding fp16_subnormal) and `mpprof inspect` say so. */
#define MP_ADVICE_FP16_SUBNORMAL_NOTE 0.01

typedef enum mp_fp16_verdict {
  MP_FP16_SAFE = 0,
  MP_FP16_LOSS_SCALE,
  MP_FP16_UNSAFE
} mp_fp16_verdict;

typedef enum mp_recommendation {
  MP_REC_FP16 = 0,
  MP_REC_FP16_LOSS_SCALE,
  MP_REC_BF16,
  MP_REC_FP32,
  MP_REC_FP8_E4M3,
  MP_REC_FP8_E5M2,
  MP_REC_COUNT
} mp_recommendation;

/* Outcome counts of casting s's values, multiplied by 2^scale_log2, into target.
 * [lo, hi] bounds each count; lo == hi unless the boundary binade makes it an estimate. */
typedef struct mp_scaled_casts {
  uint64_t lo[MP_CAST_OUTCOMES];
  uint64_t hi[MP_CAST_OUTCOMES];
  bool estimate;
} mp_scaled_casts;

/* An fp8 per-tensor scale is an fp32 number (cuBLASLt's scale pointers,
 * Transformer Engine's scale tensors): the powers of two it can be, fp32's
 * normal range. A tensor that needs a scale outside it gets the nearest end. */
#define MP_FP8_SCALE_LOG2_MIN (FLT_MIN_EXP - 1) /* -126 */
#define MP_FP8_SCALE_LOG2_MAX (FLT_MAX_EXP - 1) /* 127 */

typedef struct mp_fp8_advice {
  bool fits;      /* no overflow and underflow_fraction <= fp8_underflow_max;
                     false for a record with saturated values */
  int scale_log2; /* power-of-two per-tensor scale: largest with absmax * 2^s <= max finite,
                     inside [MP_FP8_SCALE_LOG2_MIN, MP_FP8_SCALE_LOG2_MAX] */
  double underflow_fraction; /* flushed to zero at that scale */
  bool estimate;
} mp_fp8_advice;

typedef struct mp_advice {
  mp_fp16_verdict fp16;
  double fp16_overflow_fraction;  /* at scale 1 (exact: from the record's cast counts) */
  double fp16_underflow_fraction; /* at scale 1 (exact) */
  bool has_window;                /* some loss scale 2^k, k in [window_lo, window_hi], fits fp16 */
  int window_lo;                  /* inside the search range [scale_log2_min, scale_log2_max] */
  int window_hi;
  /* Scales beyond the window that fit too, which the search range cut off:
   * the window's true edges are window_lo - beyond_lo and window_hi +
   * beyond_hi (binades), as far as the loss scales a program can apply
   * (MP_LOSS_SCALE_MIN_LOG2 .. MP_LOSS_SCALE_MAX_LOG2). 0 where the window's
   * end is its true edge. The top one follows from absmax exactly, the bottom
   * one from the histogram, as the window does. mp_loss_scale_pick takes them. */
  int beyond_lo;
  int beyond_hi;
  bool window_estimate;
  bool bf16_ok; /* no bf16 overflow, bf16 underflow within underflow_max */
  mp_fp8_advice fp8_e4m3;
  mp_fp8_advice fp8_e5m2;
  mp_recommendation recommended;
  bool nonfinite_input; /* the source already holds NaN/inf */
  bool judged;          /* some finite non-zero value: without one there is nothing to judge
                           and no field above is a verdict (recommended is shown as null) */
  /* An fp64 source with |x| past fp32's overflow threshold (formats.h
   * overflow_at: rounds to inf): fp32 cannot keep it either (exact, from absmax). */
  bool fp32_overflow;
  /* An fp64 source's share of finite non-zero values that fp32 rounds to
   * zero (|x| <= 2^-150, formats.h flush_at), from the exponent histogram:
   * every value below 2^-150, and of those at 2^-150 itself (a tie to zero;
   * the rest of its binade rounds up to 2^-149) the smallest value once
   * unless the binade holds nothing else. 0 for other sources. */
  double fp32_flush_fraction;
  bool fp32_flush; /* fp32_flush_fraction > underflow_max: fp32 cannot keep them either */
} mp_advice;

/* The name of a's recommendation: "fp64" where fp32 would overflow or flush
 * too much (fp32_overflow, fp32_flush), else mp_recommendation_name(a->recommended). */
const char *mp_advice_recommended_name(const mp_advice *a);

void mp_advice_params_default(mp_advice_params *p);
void mp_scaled_casts_compute(const mp_stats *s, mp_target target, int scale_log2,
                             mp_scaled_casts *ret);
void mp_advise(const mp_stats *s, const mp_advice_params *p, mp_advice *ret);
/* The one loss scale (log2) a window [lo, hi] of fitting scales suggests
 * (the report's recommended_log2, GradScaler's init_scale in the plan), where
 * beyond_lo and beyond_hi more binades below and above the window fit too
 * (mp_advice: the window's true edges lie beyond the search range).
 * Past the true top the largest gradients overflow (an Inf, a skipped step);
 * below the true bottom more than underflow_max of them flush. Gradients
 * drift both ways in training, so the pick is the scale whose smaller margin
 * to the two true edges is largest: their middle, rounded down, so that an
 * odd binade of margin goes to the overflow side (an overflow costs more
 * than a flush). One exception: never below 2^0 where 2^0 fits; 2^0 is
 * training without a scaler, and a scale below 1 is only for gradients that
 * overflow fp16 unscaled. The pick stays in [lo, hi] (the search range): a
 * middle beyond it gives the window's nearest end, the most margin the
 * searched scales have. Values all at 2^-40 fit [16, 32] as searched and up
 * to 2^55 in truth: the pick is 2^32 (values at 2^-8, fp16 normals), not the
 * window's middle 2^24 (values at 2^-16, fp16 subnormals with 9 significant
 * bits). */
int mp_loss_scale_pick(int lo, int hi, int beyond_lo, int beyond_hi);
/* The true edges of a window [lo, hi] as searched: past the search range by
 * beyond_lo and beyond_hi scales (mp_advice), [lo - beyond_lo, hi +
 * beyond_hi]. The one definition for the pick, the edges' text and the
 * report's true_window_log2 / layers.csv columns. */
static inline void mp_loss_scale_true_window(int lo, int hi, int beyond_lo, int beyond_hi,
                                             int ret[2]) {
  ret[0] = lo - beyond_lo;
  ret[1] = hi + beyond_hi;
}
/* Where the search range [search_lo, search_hi] cut a window [lo, hi]
 * (beyond_lo or beyond_hi non-zero: mp_advice), its true edges, said after
 * the window: " (searched 2^search_lo .. 2^search_hi; 2^(lo - beyond_lo) ..
 * 2^(hi + beyond_hi) fits in all)"; "" where the window's ends are its true
 * edges. Each power of two is written pow_pre, the exponent, pow_suf ("2^",
 * "" for text; "2<sup>", "</sup>" for HTML). The one wording of `mpprof
 * inspect`'s loss-scale line and the report's. Returns buf. */
#define MP_LOSS_SCALE_EDGES_TEXT_MAX 192
const char *mp_loss_scale_edges_text(int lo, int hi, int beyond_lo, int beyond_hi, int search_lo,
                                     int search_hi, const char *pow_pre, const char *pow_suf,
                                     char buf[MP_LOSS_SCALE_EDGES_TEXT_MAX]);
/* The share of s's finite non-zero values that are fp16 subnormals once
 * scaled by 2^scale_log2: exact at 0, an upper bound elsewhere where a binade
 * straddles fp16's normal minimum. Compared with MP_ADVICE_FP16_SUBNORMAL_NOTE. */
double mp_fp16_subnormal_share(const mp_stats *s, int scale_log2);
/* The same at scale 1 from a record's cast counts alone (exact). */
double mp_fp16_subnormal_share_unscaled(const uint64_t casts[MP_TARGET_COUNT][MP_CAST_OUTCOMES]);

/* The loss scales a program can apply: a float32 value (GradScaler keeps its
 * scale in float32; a larger one makes any float loss Inf, a smaller one
 * flushes it to 0), so 2^MP_LOSS_SCALE_MIN_LOG2 ... FLT_MAX. */
#define MP_LOSS_SCALE_MIN_LOG2 (-149)
#define MP_LOSS_SCALE_MAX_LOG2 127 /* 2^127 < FLT_MAX < 2^128 */
bool mp_loss_scale_valid(double scale);
/* A loss scale as written on a command line or in MPPROF_LOSS_SCALE: a
 * number ("65536", "0x1p16", "1e3") or "2^k" that mp_loss_scale_valid
 * accepts. 0 or -EINVAL. */
int mp_parse_loss_scale(const char *s, double *ret_scale);
/* log2 of a positive scale: exact (true) for a power of two, else the nearest
 * integer (false). */
bool mp_scale_log2(double scale, int *ret_log2);

/* The record of the values x / scale from the record `in` of values x taken
 * at a loss scale (the gradients the program computed carry the factor
 * scale): the exponent histogram moves down by log2(scale) binades, the
 * extremes are divided, NaN/Inf counts stay. For a power of two the histogram
 * shift is exact; another scale moves it by the nearest integer (estimate).
 * Cast outcomes are re-derived from the shifted histogram (extremes narrow
 * the end binades); a binade that straddles a format threshold counts its
 * smallest and largest |x| (when they lie in it) with their own outcomes and
 * the rest where its midpoint goes, so an overflow or a flush that the
 * extremes prove is always counted. ret must not be in. Returns true when the histogram and
 * the extremes are exact (a power of two). *ret_casts_estimate (may be NULL)
 * says whether an fp16 or bf16 cast count (what verdicts and shares use)
 * came from such a straddling binade; fp8 cast counts are always taken from
 * the histogram the same way (fp8 advice uses per-tensor scales instead). */
bool mp_stats_unscale(const mp_stats *in, double scale, mp_stats *ret, bool *ret_casts_estimate);

const char *
mp_recommendation_name(mp_recommendation r);         /* "fp16", "fp16_loss_scale", "bf16", ... */
const char *mp_fp16_verdict_name(mp_fp16_verdict v); /* "safe", "loss_scale", "unsafe" */

#endif
