/* cuDNN handle, stream, version and error reporting for simcuda's libcudnn.so.9.
 *
 * The handle only carries a stream: every simulated kernel runs synchronously
 * on the calling thread and is recorded on that stream. When a call is
 * refused, the reason is kept per thread for cudnnGetLastErrorString, as the
 * real library does. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_sim.h"

static _Thread_local char last_error[256];

void simcudnn_set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}

void cudnnGetLastErrorString(char *message, size_t max_size) {
  if (!message || max_size == 0) return;
  snprintf(message, max_size, "%s", last_error);
  last_error[0] = '\0';
}

bool simcudnn_handle_ok(cudnnHandle_t h) {
  return h && h->magic == SIMCUDNN_HANDLE_MAGIC;
}

size_t cudnnGetVersion(void) {
  return CUDNN_VERSION;
}

size_t cudnnGetCudartVersion(void) {
  return CUDART_VERSION;
}

/* Highest compute capability (x100) this build has kernels for: the device simcuda reports (9.0).
 */
size_t cudnnGetMaxDeviceVersion(void) {
  return 900;
}

cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int *value) {
  if (!value) return CUDNN_STATUS_BAD_PARAM;
  switch (type) {
  case MAJOR_VERSION:
    *value = CUDNN_MAJOR;
    return CUDNN_STATUS_SUCCESS;
  case MINOR_VERSION:
    *value = CUDNN_MINOR;
    return CUDNN_STATUS_SUCCESS;
  case PATCH_LEVEL:
    *value = CUDNN_PATCHLEVEL;
    return CUDNN_STATUS_SUCCESS;
  default:
    return CUDNN_STATUS_BAD_PARAM;
  }
}

/* The sub-libraries are all this one library, so versions always agree. */
cudnnStatus_t cudnnGraphVersionCheck(void) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnOpsVersionCheck(void) {
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCnnVersionCheck(void) {
  return CUDNN_STATUS_SUCCESS;
}

const char *cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
#define S(x)                                                                                       \
  case x:                                                                                          \
    return #x;
    S(CUDNN_STATUS_SUCCESS)
    S(CUDNN_STATUS_NOT_INITIALIZED)
    S(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH)
    S(CUDNN_STATUS_SERIALIZATION_VERSION_MISMATCH)
    S(CUDNN_STATUS_DEPRECATED)
    S(CUDNN_STATUS_LICENSE_ERROR)
    S(CUDNN_STATUS_RUNTIME_IN_PROGRESS)
    S(CUDNN_STATUS_RUNTIME_FP_OVERFLOW)
    S(CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED)
    S(CUDNN_STATUS_BAD_PARAM)
    S(CUDNN_STATUS_BAD_PARAM_NULL_POINTER)
    S(CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER)
    S(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED)
    S(CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND)
    S(CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT)
    S(CUDNN_STATUS_BAD_PARAM_STREAM_MISMATCH)
    S(CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH)
    S(CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES)
    S(CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE)
    S(CUDNN_STATUS_BAD_PARAM_CUDA_GRAPH_MISMATCH)
    S(CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE)
    S(CUDNN_STATUS_NOT_SUPPORTED)
    S(CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN)
    S(CUDNN_STATUS_NOT_SUPPORTED_SHAPE)
    S(CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE)
    S(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT)
    S(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDA_DRIVER)
    S(CUDNN_STATUS_NOT_SUPPORTED_INCOMPATIBLE_CUDART)
    S(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH)
    S(CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING)
    S(CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE)
    S(CUDNN_STATUS_NOT_SUPPORTED_SHARED_MEMORY_INSUFFICIENT)
    S(CUDNN_STATUS_NOT_SUPPORTED_PADDING)
    S(CUDNN_STATUS_NOT_SUPPORTED_BAD_LAUNCH_PARAM)
    S(CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API)
    S(CUDNN_STATUS_NOT_SUPPORTED_INVALID_DYNAMIC_SHAPE)
    S(CUDNN_STATUS_INTERNAL_ERROR)
    S(CUDNN_STATUS_INTERNAL_ERROR_COMPILATION_FAILED)
    S(CUDNN_STATUS_INTERNAL_ERROR_UNEXPECTED_VALUE)
    S(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
    S(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED)
    S(CUDNN_STATUS_INTERNAL_ERROR_BAD_LAUNCH_PARAM)
    S(CUDNN_STATUS_INTERNAL_ERROR_TEXTURE_CREATION_FAILED)
    S(CUDNN_STATUS_EXECUTION_FAILED)
    S(CUDNN_STATUS_EXECUTION_FAILED_CUDA_DRIVER)
    S(CUDNN_STATUS_EXECUTION_FAILED_CUBLAS)
    S(CUDNN_STATUS_EXECUTION_FAILED_CUDART)
    S(CUDNN_STATUS_EXECUTION_FAILED_CURAND)
#undef S
  default:
    return "CUDNN_UNKNOWN_STATUS_FOUND";
  }
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *handle) {
  if (!handle) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  cudnnHandle_t h = calloc(1, sizeof *h);
  if (!h) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  h->magic = SIMCUDNN_HANDLE_MAGIC;
  *handle = h;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  if (!simcudnn_handle_ok(handle)) return CUDNN_STATUS_BAD_PARAM;
  handle->magic = 0;
  free(handle);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (!simcudnn_handle_ok(handle)) return CUDNN_STATUS_BAD_PARAM;
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t *stream) {
  if (!simcudnn_handle_ok(handle) || !stream) return CUDNN_STATUS_BAD_PARAM;
  *stream = handle->stream;
  return CUDNN_STATUS_SUCCESS;
}
