/* The capture range of `mpprof run` (--capture-range, --nvtx-capture,
 * --steps; MPPROF_CAPTURE_RANGE, MPPROF_NVTX_CAPTURE, MPPROF_STEPS): which op
 * calls are recorded. Parsed here once for the launcher, which refuses a bad
 * value, and for libmpprof.so, which reads the environment. */
#ifndef MPPROF_ANALYSIS_CAPTURE_H
#define MPPROF_ANALYSIS_CAPTURE_H

#include <stdint.h>

typedef enum mp_capture_mode {
  MP_CAPTURE_ALL = 0,      /* no capture range: everything */
  MP_CAPTURE_PROFILER_API, /* between cudaProfilerStart/Stop (or cuProfilerStart/Stop) */
  MP_CAPTURE_NVTX,         /* while some thread is inside an NVTX range of one name */
  MP_CAPTURE_STEPS,        /* while the step in force is in [first, last] */
} mp_capture_mode;

typedef struct mp_capture {
  mp_capture_mode mode;
  const char *nvtx;     /* MP_CAPTURE_NVTX: the range name (borrowed) */
  uint64_t first, last; /* MP_CAPTURE_STEPS */
} mp_capture;

/* The raw file's and the report's spelling: all, cudaProfilerApi, nvtx, steps. */
const char *mp_capture_mode_name(mp_capture_mode mode);

/* "A:B" (A <= B) or "A" (one step), decimal. 0 or -1. */
int mp_parse_steps(const char *s, uint64_t *ret_first, uint64_t *ret_last);

/* The three settings as given (NULL or "" when unset) into one capture;
 * 0, or -1 with a one-line reason in err ("--capture-range must be ..."),
 * spelled with the CLI option names. */
int mp_capture_parse(const char *range, const char *nvtx, const char *steps, mp_capture *ret,
                     char *err, unsigned errlen);

#endif
