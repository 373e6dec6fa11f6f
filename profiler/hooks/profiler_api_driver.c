/* Hooks of the driver API's capture-range markers, cuProfilerStart/Stop
 * (libcuda.so.1): observed like the runtime's (profiler_api.c). */
#include <cuda.h>
#include <cudaProfiler.h>

#include "hook.h"
#include "profiler/capture.h"

#define MPP_MODULE_SONAME "libcuda.so.1"
#define MPP_MODULE_SYMS(X)                                                                         \
  X(cuProfilerStart)                                                                               \
  X(cuProfilerStop)
MPP_MODULE_TABLE(syms)

/* The application asked for the range: marked whatever the call returns. */
static bool any_result(CUresult r) {
  (void)r;
  return true;
}

MPP_STATE_HOOK(syms, CUresult, cuProfilerStart, (void), (), CUDA_ERROR_UNKNOWN, any_result,
               mpp_capture_profiler, (true))
MPP_STATE_HOOK(syms, CUresult, cuProfilerStop, (void), (), CUDA_ERROR_UNKNOWN, any_result,
               mpp_capture_profiler, (false))
