/* Private to profiler/gpu: the CUDA driver entry points mpprof uses, resolved
 * once from dlopen("libcuda.so.1") through cuGetProcAddress (plain dlsym as a
 * fallback for stand-ins that lack it). Every pointer may be NULL: callers
 * check before use. Types come from the toolkit's cuda.h; nothing is linked. */
#ifndef MPPROF_PROFILER_GPU_CUDA_DRIVER_H
#define MPPROF_PROFILER_GPU_CUDA_DRIVER_H

#include <stdbool.h>

#include <cuda.h>

/* X(name used with cuGetProcAddress, member, ABI version, return, parameters).
 * The version is the newest whose signature the parameters spell (the driver
 * hands out the newest it has at or below it: cuEventElapsedTime_v2 of 12.8
 * has the old parameters, so 12080 is asked for): asking
 * cuGetProcAddress for CUDA_VERSION would hand out newer ABIs with other
 * parameters (CUDA 13: cuCtxGetDevice and cuCtxSynchronize take a context,
 * cuStreamGetCtx since 12.5 a green context). See cudaTypedefs.h PFN_*_vNNNN. */
#define MPP_CU_FUNCS(X)                                                                            \
  X(cuInit, init, 2000, CUresult, (unsigned))                                                      \
  X(cuDriverGetVersion, driver_version, 2020, CUresult, (int *))                                   \
  X(cuGetErrorName, error_name, 6000, CUresult, (CUresult, const char **))                         \
  X(cuDeviceGet, device_get, 2000, CUresult, (CUdevice *, int))                                    \
  X(cuDeviceGetName, device_name, 2000, CUresult, (char *, int, CUdevice))                         \
  X(cuDeviceGetAttribute, device_attr, 2000, CUresult, (int *, CUdevice_attribute, CUdevice))      \
  X(cuCtxGetCurrent, ctx_current, 4000, CUresult, (CUcontext *))                                   \
  X(cuCtxSetCurrent, ctx_set_current, 4000, CUresult, (CUcontext))                                 \
  X(cuCtxGetDevice, ctx_device, 2000, CUresult, (CUdevice *))                                      \
  X(cuCtxPushCurrent, ctx_push, 4000, CUresult, (CUcontext))                                       \
  X(cuCtxPopCurrent, ctx_pop, 4000, CUresult, (CUcontext *))                                       \
  X(cuPointerGetAttribute, ptr_attr, 4000, CUresult, (void *, CUpointer_attribute, CUdeviceptr))   \
  X(cuPointerGetAttributes, ptr_attrs, 7000, CUresult,                                             \
    (unsigned, CUpointer_attribute *, void **, CUdeviceptr))                                       \
  X(cuStreamIsCapturing, stream_is_capturing, 10000, CUresult,                                     \
    (CUstream, CUstreamCaptureStatus *))                                                           \
  X(cuStreamGetCtx, stream_ctx, 9020, CUresult, (CUstream, CUcontext *))                           \
  X(cuThreadExchangeStreamCaptureMode, capture_mode_exchange, 10010, CUresult,                     \
    (CUstreamCaptureMode *))                                                                       \
  X(cuLibraryLoadData, library_load, 12000, CUresult,                                              \
    (CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *, void **,     \
     unsigned))                                                                                    \
  X(cuLibraryGetKernel, library_kernel, 12000, CUresult, (CUkernel *, CUlibrary, const char *))    \
  X(cuLibraryGetGlobal, library_global, 12000, CUresult,                                           \
    (CUdeviceptr *, size_t *, CUlibrary, const char *))                                            \
  X(cuModuleLoadData, module_load, 2000, CUresult, (CUmodule *, const void *))                     \
  X(cuModuleGetGlobal, module_global, 3020, CUresult,                                              \
    (CUdeviceptr *, size_t *, CUmodule, const char *))                                             \
  X(cuModuleGetFunction, module_function, 2000, CUresult, (CUfunction *, CUmodule, const char *))  \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor, occupancy, 6050, CUresult,                        \
    (int *, CUfunction, int, size_t))                                                              \
  X(cuLaunchKernel, launch, 4000, CUresult,                                                        \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,   \
     void **, void **))                                                                            \
  X(cuMemAllocHost, mem_alloc_host, 3020, CUresult, (void **, size_t))                             \
  X(cuMemFreeHost, mem_free_host, 2000, CUresult, (void *))                                        \
  X(cuMemHostAlloc, mem_host_alloc, 2020, CUresult, (void **, size_t, unsigned))                   \
  X(cuMemHostRegister, mem_host_register, 6050, CUresult, (void *, size_t, unsigned))              \
  X(cuMemHostGetDevicePointer, mem_host_device_ptr, 3020, CUresult,                                \
    (CUdeviceptr *, void *, unsigned))                                                             \
  X(cuMemcpyHtoDAsync, memcpy_htod_async, 3020, CUresult,                                          \
    (CUdeviceptr, const void *, size_t, CUstream))                                                 \
  X(cuMemAlloc, mem_alloc, 3020, CUresult, (CUdeviceptr *, size_t))                                \
  X(cuMemFree, mem_free, 3020, CUresult, (CUdeviceptr))                                            \
  X(cuMemsetD8Async, memset_d8_async, 3020, CUresult,                                              \
    (CUdeviceptr, unsigned char, size_t, CUstream))                                                \
  X(cuMemcpyDtoHAsync, memcpy_dtoh_async, 3020, CUresult, (void *, CUdeviceptr, size_t, CUstream)) \
  X(cuEventCreate, event_create, 2000, CUresult, (CUevent *, unsigned))                            \
  X(cuEventRecord, event_record, 2000, CUresult, (CUevent, CUstream))                              \
  X(cuEventQuery, event_query, 2000, CUresult, (CUevent))                                          \
  X(cuEventSynchronize, event_sync, 2000, CUresult, (CUevent))                                     \
  X(cuEventDestroy, event_destroy, 4000, CUresult, (CUevent))                                      \
  X(cuEventElapsedTime, event_elapsed, 12080, CUresult, (float *, CUevent, CUevent))               \
  /* shadow execution's private stream and stream-ordered work memory (devshadow.c) */             \
  X(cuStreamCreate, stream_create, 2000, CUresult, (CUstream *, unsigned))                         \
  X(cuStreamDestroy, stream_destroy, 4000, CUresult, (CUstream))                                   \
  X(cuStreamWaitEvent, stream_wait_event, 3020, CUresult, (CUstream, CUevent, unsigned))           \
  X(cuMemAllocAsync, mem_alloc_async, 11020, CUresult, (CUdeviceptr *, size_t, CUstream))          \
  X(cuMemFreeAsync, mem_free_async, 11020, CUresult, (CUdeviceptr, CUstream))                      \
  X(cuMemPoolCreate, mem_pool_create, 11020, CUresult, (CUmemoryPool *, const CUmemPoolProps *))   \
  X(cuMemPoolSetAttribute, mem_pool_set_attr, 11020, CUresult,                                     \
    (CUmemoryPool, CUmemPool_attribute, void *))                                                   \
  X(cuMemAllocFromPoolAsync, mem_alloc_pool_async, 11020, CUresult,                                \
    (CUdeviceptr *, size_t, CUmemoryPool, CUstream))                                               \
  /* used by the standalone checks (tests/gpu/devscan_check.c), not by hooks */                    \
  X(cuDevicePrimaryCtxRetain, primary_ctx_retain, 7000, CUresult, (CUcontext *, CUdevice))         \
  X(cuMemcpyHtoD, memcpy_htod, 3020, CUresult, (CUdeviceptr, const void *, size_t))                \
  X(cuMemcpyDtoDAsync, memcpy_dtod_async, 3020, CUresult,                                          \
    (CUdeviceptr, CUdeviceptr, size_t, CUstream))                                                  \
  X(cuCtxSynchronize, ctx_sync, 2000, CUresult, (void))

typedef struct mpp_cu_api {
#define MPP_CU_MEMBER(sym, member, version, ret, params) ret(CUDAAPI *member) params;
  MPP_CU_FUNCS(MPP_CU_MEMBER)
#undef MPP_CU_MEMBER
} mpp_cu_api;

/* The driver table once cuInit succeeded in this process (not in a fork child
 * of a process that had initialised CUDA), else NULL. Thread-safe, init once. */
const mpp_cu_api *mpp_cu(void);
/* Driver version (e.g. 13000) or 0 when no driver. */
int mpp_cuda_driver_version(void);

/* bytes of zeroed host memory of mpprof's own, page-locked for every context
 * and mapped into the device (cuMemHostRegister, PORTABLE | DEVICEMAP), or
 * NULL. Not cuMemHostAlloc: the context that made such memory frees it when
 * it is destroyed (cudaDeviceReset, at the end of many programs), under a
 * poller or exit handler that still reads it; registered memory stays
 * mpprof's, only its mapping goes. Never freed. */
void *mpp_cu_mapped_host(const mpp_cu_api *cu, size_t bytes);

/* While another thread captures a CUDA graph in the default (global) mode,
 * "potentially unsafe" calls from any thread in global mode (cuEventQuery,
 * cuMemAlloc, ...) fail and invalidate that capture: the application's graph
 * would break. mpprof's own calls never touch a capturing stream, so they run
 * in relaxed mode, thread-locally: relax returns the caller's mode (RELAXED
 * when there is nothing to restore), restore puts it back. cu may be NULL. */
CUstreamCaptureMode mpp_cu_capture_relax(const mpp_cu_api *cu);
void mpp_cu_capture_restore(const mpp_cu_api *cu, CUstreamCaptureMode m);

#endif
