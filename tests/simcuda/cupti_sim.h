/* Inside simcuda's libcupti.so.13: the activity side (cupti.c) hands every
 * finished kernel to the range profiler (cupti_profiler.cpp), which counts it
 * as one auto range while a session is started. */
#ifndef SIMCUDA_CUPTI_SIM_H
#define SIMCUDA_CUPTI_SIM_H

#include "simcuda_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Weak in cupti.c: a build without C++ has no range profiler at all (as a
 * CUPTI older than 12.6 update 2). */
void simcuda_rp_kernel(const simcuda_kernel_event *ev);

#ifdef __cplusplus
}
#endif

#endif
