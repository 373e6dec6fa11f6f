/* The capture range (capture.c): which op calls are recorded. */
#ifndef MPPROF_PROFILER_CAPTURE_H
#define MPPROF_PROFILER_CAPTURE_H

#include <stdbool.h>

/* -1 inside (record the call; counted as captured), else the
 * MP_RAW_CAPTURE_OUTSIDE reason index (counted). */
int mpp_capture_check(void);
bool mpp_capture_inside(void);         /* the same question, not counted (autotuning calls) */
void mpp_capture_profiler(bool start); /* cudaProfilerStart/Stop, cuProfilerStart/Stop */
bool mpp_capture_nvtx_push(const char *name); /* true: NAME opened (pop it with the next) */
void mpp_capture_nvtx_pop(void);
void mpp_capture_reset_counts(void); /* fork child: its own counts, the state in force stays */
struct mpp_jw;
void mpp_capture_write(struct mpp_jw *w); /* the raw "capture" object */

#endif
