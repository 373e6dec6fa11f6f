/* The stats record (analysis/stats.h) and its advice as cJSON objects: the one
 * place that knows the layout of the STATS object of docs/raw-format.md, used
 * by `mpprof inspect --json`, the raw-file reader and the report.
 *
 * Writing: counts are exact integers; doubles are printed so that they read
 * back bit for bit (shortest of %.15g/%.16g/%.17g that round-trips, "-0" kept);
 * a non-finite min/max/absmax/min_abs_nonzero/fraction is null.
 * Reading validates everything a later computation relies on, so a corrupt
 * file is rejected with a message instead of producing nonsense.
 * Counts are read through doubles (cJSON): exact up to 2^53. */
#ifndef MPPROF_REPORT_TENSORIO_STATS_JSON_H
#define MPPROF_REPORT_TENSORIO_STATS_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "analysis/advice.h"
#include "analysis/stats.h"

/* The text every double of mpprof's JSON is written as: the first of %.15g,
 * %.16g, %.17g that reads back as d ("-0" for -0.0), into buf with its
 * length; 0 when d is not finite (written as null). */
size_t mpprof_double_text(double d, char buf[40]);

/* The STATS object: dtype, count, ..., exp_hist, casts and, when advice is not
 * NULL, "advice". NULL only when out of memory. */
cJSON *mpprof_stats_to_json(const mp_stats *s, const mp_advice *advice);

/* The advice object: fp16, loss_scale_log2, fp8_e4m3, fp8_e5m2, recommended. */
cJSON *mpprof_advice_to_json(const mp_advice *a);

/* Parse a STATS object (an "advice" key, if present, is ignored: readers
 * recompute it). Every key must be present with the right type; the histogram
 * range must lie within [MP_HIST_MIN, MP_HIST_MAX] with hi - lo + 1 counts; per
 * target, the four cast counts and the histogram each sum to count - zeros -
 * nans - pos_infs - neg_infs. Returns 0, or -1 with a one-line reason in err
 * ("casts.fp16: outcomes sum to 7, expected 8 finite non-zero values"). */
int mpprof_stats_from_json(const cJSON *obj, mp_stats *ret, char *err, size_t errlen);

/* The mpprof.tensor/1 object of `mpprof inspect --json`: schema, file,
 * tensor (its name in a file of many; left out when NULL), dtype, shape, then
 * the rest of the STATS object with advice (which may be NULL). Bytes of file
 * and tensor that are not UTF-8 become MPP_UTF8_REPLACEMENT. */
cJSON *mpprof_tensor_to_json(const char *file, const char *tensor, const uint64_t *shape, int ndim,
                             const mp_stats *s, const mp_advice *advice);

/* A double as a JSON number that reads back bit for bit (null when not finite).
 * Exposed for other writers of mpprof JSON (fractions, timings). */
cJSON *mpprof_json_double(double d);
/* An unsigned count, printed exactly. */
cJSON *mpprof_json_u64(uint64_t v);
/* A signed integer, printed exactly (a time in ns has 19 digits: a double's
 * 17 would round it to 256 ns). */
cJSON *mpprof_json_i64(int64_t v);
/* Read a number written by either helper (or any JSON number); 0 or -1. */
int mpprof_json_get_double(const cJSON *item, double *ret);

#endif
