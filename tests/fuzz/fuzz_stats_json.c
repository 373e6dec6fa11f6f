/* libFuzzer target for the stats reader (the part of the raw-file and report
 * readers that sees untrusted numbers): any input is parsed as JSON and read
 * as a STATS object; whatever is accepted must survive write -> read bit for
 * bit (its histogram's range as written), the property the profiler, report
 * and merge rely on. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "report/tensorio/stats_json.h"

/* Bit for bit, but for the histogram's range: a reader widens the written
 * range to the source format's, so a record read from text whose range was
 * wider than its non-zero bins (or than its format) reads back with the range
 * it is written over; that is what must agree. */
static int same(const mp_stats *a, const mp_stats *b) {
  int alo, ahi, blo, bhi;
  mp_stats_hist_written(a, &alo, &ahi);
  mp_stats_hist_written(b, &blo, &bhi);
  return a->dtype == b->dtype && alo == blo && ahi == bhi && a->count == b->count &&
         a->zeros == b->zeros && a->nans == b->nans && a->pos_infs == b->pos_infs &&
         a->neg_infs == b->neg_infs && a->negatives == b->negatives &&
         !memcmp(&a->min, &b->min, sizeof a->min) && !memcmp(&a->max, &b->max, sizeof a->max) &&
         !memcmp(&a->absmax, &b->absmax, sizeof a->absmax) &&
         !memcmp(&a->min_abs_nonzero, &b->min_abs_nonzero, sizeof a->min_abs_nonzero) &&
         !memcmp(a->casts, b->casts, sizeof a->casts) &&
         !memcmp(a->exp_hist, b->exp_hist, sizeof a->exp_hist);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static mp_stats first, second; /* ~17 KiB each: not on the fuzzer's stack */
  char err[256];
  cJSON *in = cJSON_ParseWithLength((const char *)data, size);
  if (!in) return 0;
  if (mpprof_stats_from_json(in, &first, err, sizeof err) == 0) {
    cJSON *out = mpprof_stats_to_json(&first, NULL);
    char *text = cJSON_PrintUnformatted(out);
    cJSON *back = cJSON_Parse(text);
    if (!back || mpprof_stats_from_json(back, &second, err, sizeof err) != 0 ||
        !same(&first, &second))
      abort();
    cJSON_Delete(back);
    free(text);
    cJSON_Delete(out);
  }
  cJSON_Delete(in);
  return 0;
}
