/* Private to profiler/gpu: the CUDA driver entry points mpprof uses, resolved
 * once from dlopen("libcuda.so.1") through cuGetProcAddress (plain dlsym as a
 * fallback for stand-ins that lack it). Every pointer may be NULL: callers
 * check before use. Types come from the toolkit's cuda.h; nothing is linked. */
#ifndef MPPROF_PROFILER_GPU_CUDA_DRIVER_H
#define MPPROF_PROFILER_GPU_CUDA_DRIVER_H

#include <stdbool.h>

#include <cuda.h>

/* X(name used with cuGetProcAddress, member, return, parameters) */
#define MPP_CU_FUNCS(X)                                                                            \
  X(cuInit, init, CUresult, (unsigned))                                                            \
  X(cuDriverGetVersion, driver_version, CUresult, (int *))                                         \
  X(cuGetErrorName, error_name, CUresult, (CUresult, const char **))                               \
  X(cuDeviceGet, device_get, CUresult, (CUdevice *, int))                                          \
  X(cuDeviceGetName, device_name, CUresult, (char *, int, CUdevice))                               \
  X(cuDeviceGetAttribute, device_attr, CUresult, (int *, CUdevice_attribute, CUdevice))            \
  X(cuCtxGetCurrent, ctx_current, CUresult, (CUcontext *))                                         \
  X(cuCtxSetCurrent, ctx_set_current, CUresult, (CUcontext))                                       \
  X(cuCtxGetDevice, ctx_device, CUresult, (CUdevice *))                                            \
  X(cuCtxPushCurrent, ctx_push, CUresult, (CUcontext))                                             \
  X(cuCtxPopCurrent, ctx_pop, CUresult, (CUcontext *))                                             \
  X(cuPointerGetAttribute, ptr_attr, CUresult, (void *, CUpointer_attribute, CUdeviceptr))         \
  X(cuPointerGetAttributes, ptr_attrs, CUresult,                                                   \
    (unsigned, CUpointer_attribute *, void **, CUdeviceptr))                                       \
  X(cuStreamIsCapturing, stream_is_capturing, CUresult, (CUstream, CUstreamCaptureStatus *))       \
  X(cuStreamGetCtx, stream_ctx, CUresult, (CUstream, CUcontext *))                                 \
  X(cuLibraryLoadData, library_load, CUresult,                                                     \
    (CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *, void **,     \
     unsigned))                                                                                    \
  X(cuLibraryGetKernel, library_kernel, CUresult, (CUkernel *, CUlibrary, const char *))           \
  X(cuModuleLoadData, module_load, CUresult, (CUmodule *, const void *))                           \
  X(cuModuleGetFunction, module_function, CUresult, (CUfunction *, CUmodule, const char *))        \
  X(cuLaunchKernel, launch, CUresult,                                                              \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,   \
     void **, void **))                                                                            \
  X(cuMemAllocHost, mem_alloc_host, CUresult, (void **, size_t))                                   \
  X(cuMemFreeHost, mem_free_host, CUresult, (void *))                                              \
  X(cuMemAlloc, mem_alloc, CUresult, (CUdeviceptr *, size_t))                                      \
  X(cuMemFree, mem_free, CUresult, (CUdeviceptr))                                                  \
  X(cuMemsetD8Async, memset_d8_async, CUresult, (CUdeviceptr, unsigned char, size_t, CUstream))    \
  X(cuMemcpyDtoHAsync, memcpy_dtoh_async, CUresult, (void *, CUdeviceptr, size_t, CUstream))       \
  X(cuEventCreate, event_create, CUresult, (CUevent *, unsigned))                                  \
  X(cuEventRecord, event_record, CUresult, (CUevent, CUstream))                                    \
  X(cuEventQuery, event_query, CUresult, (CUevent))                                                \
  X(cuEventSynchronize, event_sync, CUresult, (CUevent))                                           \
  X(cuEventDestroy, event_destroy, CUresult, (CUevent))                                            \
  X(cuEventElapsedTime, event_elapsed, CUresult, (float *, CUevent, CUevent))                      \
  /* used by the standalone checks (tests/gpu/devscan_check.c), not by hooks */                    \
  X(cuDevicePrimaryCtxRetain, primary_ctx_retain, CUresult, (CUcontext *, CUdevice))               \
  X(cuMemcpyHtoD, memcpy_htod, CUresult, (CUdeviceptr, const void *, size_t))                      \
  X(cuMemcpyDtoDAsync, memcpy_dtod_async, CUresult, (CUdeviceptr, CUdeviceptr, size_t, CUstream))  \
  X(cuCtxSynchronize, ctx_sync, CUresult, (void))

typedef struct mpp_cu_api {
#define MPP_CU_MEMBER(sym, member, ret, params) ret(CUDAAPI *member) params;
  MPP_CU_FUNCS(MPP_CU_MEMBER)
#undef MPP_CU_MEMBER
} mpp_cu_api;

/* The driver table once cuInit succeeded in this process (not in a fork child
 * of a process that had initialised CUDA), else NULL. Thread-safe, init once. */
const mpp_cu_api *mpp_cu(void);
/* Driver version (e.g. 13000) or 0 when no driver. */
int mpp_cuda_driver_version(void);

#endif
