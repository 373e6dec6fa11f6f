/* The fuzz targets of the readers of many-tensor files (safetensors, zip):
 * any byte string is parsed by the reader, and every tensor it names with a
 * dtype mpprof reads is scanned, so ASan sees every byte the reader and the
 * scanner touch stay inside the input. */
#ifndef MPPROF_FUZZ_TENSOR_SET_H
#define MPPROF_FUZZ_TENSOR_SET_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "analysis/stats.h"
#include "report/tensorio/npy.h"

static inline int fuzz_tensor_set(mpprof_tensor_set_parser parse, const uint8_t *data,
                                  size_t size) {
  static mp_stats stats; /* ~17 KiB: not on the fuzzer's stack */
  char err[256];
  mpprof_tensor_set f;
  if (parse(data, size, &f, err, sizeof err) != 0) return 0;
  for (size_t i = 0; i < f.n; i++) {
    const mpprof_tensor *t = &f.entries[i].t;
    if (t->dtype == MP_DTYPE_INVALID) continue;
    if (mpprof_tensor_scan(t, &stats) != 0) abort(); /* a parsed tensor always scans */
    if (stats.count != t->count) abort();
  }
  mpprof_tensor_set_close(&f);
  return 0;
}

#endif
