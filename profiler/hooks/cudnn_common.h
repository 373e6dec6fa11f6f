/* What the two cuDNN hook modules (cudnn.c, the legacy API; cudnn_backend.c,
 * the backend API) share. */
#ifndef MPPROF_PROFILER_HOOKS_CUDNN_COMMON_H
#define MPPROF_PROFILER_HOOKS_CUDNN_COMMON_H

#include <cudnn.h>
#include <stdbool.h>

/* The wrappers' success predicate. */
static inline bool mpp_cudnn_succeeded(cudnnStatus_t r) {
  return r == CUDNN_STATUS_SUCCESS;
}

/* The handle's stream (cudnn.c): where a device scan of an op's tensors must
 * run; NULL (the default stream) when it cannot be asked. */
void *mpp_cudnn_stream(cudnnHandle_t h);

#endif
