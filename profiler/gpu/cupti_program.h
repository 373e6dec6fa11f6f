/* The CUPTI activity buffer callbacks a program registers itself
 * (hooks/cupti_activity.c -> gpu/cupti.c). Apart from gpu.h: it needs the
 * CUPTI headers, which not every user of gpu.h has. */
#ifndef MPPROF_PROFILER_GPU_CUPTI_PROGRAM_H
#define MPPROF_PROFILER_GPU_CUPTI_PROGRAM_H

#include <stdbool.h>

#include <cupti_activity.h>

/* The program registers CUPTI activity buffer callbacks of its own
 * (hooks/cupti_activity.c; `real` is libcupti's function, its result is
 * returned). CUPTI keeps one pair per process: before mpprof registered its
 * own, mpprof leaves CUPTI to the program (held_by_program); after, mpprof's
 * buffers are flushed to mpprof, the program's pair replaces mpprof's and
 * mpprof's kernel records end there (taken_by_program). */
CUptiResult mpp_cupti_program_registers(__typeof__(&cuptiActivityRegisterCallbacks) real,
                                        CUpti_BuffersCallbackRequestFunc requested,
                                        CUpti_BuffersCallbackCompleteFunc completed);
/* ... and enables (on) or disables records itself (after the real call
 * succeeded): the kinds, and the launch API records by callback id (driver's
 * or runtime's), so that mpprof, when the program's callbacks replace its
 * own, turns off only the records it enabled for itself. */
void mpp_cupti_program_enabled(CUpti_ActivityKind kind, bool on);
void mpp_cupti_program_enabled_api(bool driver, CUpti_CallbackId cbid, bool on);

#endif
