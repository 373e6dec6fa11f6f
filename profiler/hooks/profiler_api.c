/* Hooks of the capture-range markers of the runtime API (the driver's are in
 * profiler_api_driver.c): cudaProfilerStart/Stop (libcudart.so.13)
 * and cuProfilerStart/Stop (libcuda.so.1). They only observe: the real call
 * runs and its result is returned unchanged; mpprof notes that the range
 * opened or closed (capture.c), which matters under
 * `mpprof run --capture-range=cudaProfilerApi`.
 *
 * A program that links the CUDA runtime statically (nvcc's default) calls its
 * own cudaProfilerStart, and that reaches the driver through the runtime's
 * private entry table, not through the exported cuProfilerStart: such a
 * program's markers are not seen (docs/profiler.md, capture range). */
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "hook.h"
#include "profiler/capture.h"

#define MPP_MODULE_SONAME "libcudart.so.13"
#define MPP_MODULE_SYMS(X)                                                                         \
  X(cudaProfilerStart)                                                                             \
  X(cudaProfilerStop)
MPP_MODULE_TABLE(syms)

/* The application asked for the range: marked whatever the call returns. */
static bool any_result(cudaError_t r) {
  (void)r;
  return true;
}

MPP_STATE_HOOK(syms, cudaError_t, cudaProfilerStart, (void), (), cudaErrorUnknown, any_result,
               mpp_capture_profiler, (true))
MPP_STATE_HOOK(syms, cudaError_t, cudaProfilerStop, (void), (), cudaErrorUnknown, any_result,
               mpp_capture_profiler, (false))
