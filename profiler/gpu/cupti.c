/* CUPTI activity for libmpprof.so (first cut): reports "unavailable" until the
 * dlopen-based implementation lands; the sink is kept so callers can wire it. */
#include <stddef.h>

#include "profiler/gpu/gpu.h"

static mpp_kernel_sink g_sink;

void mpp_cupti_set_sink(mpp_kernel_sink sink) {
  g_sink = sink;
}
void mpp_cupti_start(void) {}
void mpp_cupti_push(uint64_t op_id) {
  (void)op_id;
}
void mpp_cupti_pop(void) {}
void mpp_cupti_flush(void) {}
const char *mpp_cupti_status(void) {
  return "unavailable";
}
uint64_t mpp_cupti_dropped(void) {
  return 0;
}
