/* NVTX range stacks (nvtx.c): the layer path of the calling thread, and the
 * ended ranges kept for the timeline. */
#ifndef MPPROF_PROFILER_NVTX_H
#define MPPROF_PROFILER_NVTX_H

#include <stdint.h>

#include <nvtx3/nvToolsExt.h> /* NvtxGetExportTableFunc_t */

/* The calling thread's range stack joined with "/" ("" without ranges). */
const char *mpp_nvtx_layer(uint64_t *ret_hash);
/* Direct access for tests and hooks: push/pop on the calling thread. */
int mpp_nvtx_push(const void *domain, const char *name);
int mpp_nvtx_pop(const void *domain);
void mpp_nvtx_thread_reset(void);
/* An ended push/pop range (MP_RAW_RANGE). */
typedef struct mpp_range {
  uint64_t start_ns, end_ns;
  uint32_t thread, depth;
  char name[88]; /* cut at 87 bytes, at a character boundary */
} mpp_range;
/* Every kept range, in no particular order; safe while threads push and pop. */
void mpp_nvtx_ranges_each(void (*fn)(void *ctx, const mpp_range *r), void *ctx);
uint64_t mpp_nvtx_ranges_dropped(void);
/* Chunks of 512 kept ranges allocated since the process started (the
 * memory bound; tests). */
uint64_t mpp_nvtx_range_chunks(void);
void mpp_nvtx_ranges_reset(void); /* fork child, tests */
/* Fill NVTX's callback tables with mpprof's handlers (the injection entry
 * point, entry.c, calls it once the runtime is initialised); 1 on success. */
int mpp_nvtx_inject(NvtxGetExportTableFunc_t get_export_table);

#endif
