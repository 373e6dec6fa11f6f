/* libFuzzer target for the .npy reader: any byte string is parsed as a .npy
 * image, with the header's dtype and with each explicit raw-bits dtype, and
 * whatever parses is scanned, so ASan sees every byte the reader and the
 * scanner touch stay inside the input. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "analysis/stats.h"
#include "report/tensorio/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const mp_dtype dtypes[] = {MP_DTYPE_INVALID, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2, MP_FP32};
  static mp_stats stats; /* ~17 KiB: not on the fuzzer's stack */
  char err[256];
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
    mpprof_tensor t;
    if (mpprof_npy_parse(data, size, dtypes[i], &t, err, sizeof err) == 0) {
      if (mpprof_tensor_scan(&t, &stats) != 0) abort(); /* a parsed tensor always scans */
      if (stats.count != t.count) abort();
    }
  }
  return 0;
}
