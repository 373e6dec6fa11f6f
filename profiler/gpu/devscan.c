/* Device scans for libmpprof.so (first cut): the device scanner is not wired
 * yet, so every enqueue says -ENOSYS and the caller counts the op as
 * "device_scanner_unavailable". */
#include <errno.h>

#include "profiler/gpu/gpu.h"

int mpp_devscan_enqueue(void *stream, const mp_view *view, mpp_scan_sink sink, void *cookie) {
  (void)stream;
  (void)view;
  (void)sink;
  (void)cookie;
  return -ENOSYS;
}
void mpp_devscan_drain(void) {}
