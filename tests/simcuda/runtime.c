/* simcuda's libcudart.so.13: the CUDA runtime subset the samples use, over
 * simcuda's driver. "Device" allocations are host memory (256-byte aligned,
 * behind a small header so cudaFree can refuse a pointer it did not hand
 * out), copies and memsets run at once on the calling thread, streams are
 * the driver's handles, events hold the host clock of their last record.
 * Errors are sticky per thread until cudaGetLastError, as in the real one.
 * Stream capture is the driver's state only: captured work still runs at
 * once, and the graph cannot be instantiated (cudaErrorNotSupported). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "simcuda_internal.h"

#define SIM_API __attribute__((visibility("default")))

enum { SIM_ALIGN = 256, SIM_DEV_MAGIC = 0x44455630, SIM_HOST_MAGIC = 0x484f5354 };

static _Thread_local cudaError_t sim_last_error = cudaSuccess;
static _Thread_local int sim_device = 0;

static cudaError_t sim_ret(cudaError_t e) {
  if (e != cudaSuccess) sim_last_error = e;
  return e;
}

/* Lazily bring up the driver, as cudart does on its first call. */
static void sim_init_driver(void) {
  static atomic_int done;
  if (!atomic_load(&done)) {
    cuInit(0);
    atomic_store(&done, 1);
  }
}

/* What a runtime call that requires an active context does first
 * (cuda_runtime_api.h, "Initialization and Tear-Down"): "If no CUcontext is
 * current to the calling thread ..., then the primary context for a device
 * will be selected, made current to the calling thread, and initialized."
 * A context the thread has current (set through the driver) is used as is.
 * Device queries, versions and errors need none. */
static void sim_init_context(void) {
  sim_init_driver();
  CUcontext cur = NULL;
  if (cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur == NULL) {
    CUcontext primary = NULL;
    if (cuDevicePrimaryCtxRetain(&primary, sim_device) == CUDA_SUCCESS) cuCtxSetCurrent(primary);
  }
}

static cudaError_t sim_from_cu(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS:
    return cudaSuccess;
  case CUDA_ERROR_INVALID_VALUE:
    return cudaErrorInvalidValue;
  case CUDA_ERROR_OUT_OF_MEMORY:
    return cudaErrorMemoryAllocation;
  case CUDA_ERROR_INVALID_HANDLE:
    return cudaErrorInvalidResourceHandle;
  case CUDA_ERROR_INVALID_DEVICE:
    return cudaErrorInvalidDevice;
  case CUDA_ERROR_NOT_SUPPORTED:
    return cudaErrorNotSupported;
  case CUDA_ERROR_ILLEGAL_STATE:
    return cudaErrorIllegalState;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
    return cudaErrorStreamCaptureUnsupported;
  case CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD:
    return cudaErrorStreamCaptureWrongThread;
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT:
    return cudaErrorStreamCaptureImplicit;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED:
    return cudaErrorStreamCaptureInvalidated;
  default:
    return cudaErrorUnknown;
  }
}

/* ---- Memory ---- */

typedef struct sim_block {
  uint32_t magic;
  uint32_t pad;
  size_t size;
} sim_block;

static void *sim_alloc(size_t size, uint32_t magic) {
  /* A zero-byte request still gets a unique pointer, like cudaMalloc. */
  size_t total = SIM_ALIGN + (size == 0 ? 1 : size);
  total = (total + SIM_ALIGN - 1) / SIM_ALIGN * SIM_ALIGN;
  unsigned char *base = aligned_alloc(SIM_ALIGN, total);
  if (base == NULL) return NULL;
  sim_block *b = (sim_block *)base;
  b->magic = magic;
  b->size = size;
  if (simcuda_mem_track(base + SIM_ALIGN, size) != 0) {
    free(base);
    return NULL;
  }
  return base + SIM_ALIGN;
}

static cudaError_t sim_free(void *p, uint32_t magic) {
  if (p == NULL) return cudaSuccess;
  if ((uintptr_t)p % SIM_ALIGN != 0) return cudaErrorInvalidValue;
  sim_block *b = (sim_block *)((unsigned char *)p - SIM_ALIGN);
  if (b->magic != magic) return cudaErrorInvalidValue;
  simcuda_mem_untrack(p);
  b->magic = 0;
  free(b);
  return cudaSuccess;
}

/* Work issued to `stream` (a valid handle) while streams capture:
 * simcuda_stream_use's verdict in runtime terms. */
static cudaError_t sim_issue(cudaStream_t stream) {
  return sim_from_cu(simcuda_stream_use((CUstream)stream, 0));
}

static cudaError_t sim_device_alloc(void **ptr, size_t size) {
  if (ptr == NULL) return sim_ret(cudaErrorInvalidValue);
  *ptr = sim_alloc(size, SIM_DEV_MAGIC);
  return *ptr != NULL ? cudaSuccess : sim_ret(cudaErrorMemoryAllocation);
}

SIM_API cudaError_t cudaMalloc(void **ptr, size_t size) {
  sim_init_context();
  if (ptr == NULL) return sim_ret(cudaErrorInvalidValue);
  cudaError_t e = sim_from_cu(simcuda_unsafe_call());
  if (e != cudaSuccess) return sim_ret(e);
  return sim_device_alloc(ptr, size);
}

SIM_API cudaError_t cudaFree(void *ptr) {
  sim_init_context();
  return sim_ret(sim_free(ptr, SIM_DEV_MAGIC));
}

SIM_API cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream) {
  sim_init_context();
  if (!simcuda_stream_valid((CUstream)stream)) return sim_ret(cudaErrorInvalidResourceHandle);
  /* Stream-ordered: capturable (no potentially unsafe call), unlike cudaMalloc. */
  cudaError_t e = sim_issue(stream);
  if (e != cudaSuccess) return sim_ret(e);
  return sim_device_alloc(ptr, size);
}

SIM_API cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream) {
  sim_init_context();
  if (!simcuda_stream_valid((CUstream)stream)) return sim_ret(cudaErrorInvalidResourceHandle);
  cudaError_t e = sim_issue(stream);
  if (e != cudaSuccess) return sim_ret(e);
  return cudaFree(ptr);
}

SIM_API cudaError_t cudaMallocHost(void **ptr, size_t size) {
  sim_init_context();
  if (ptr == NULL) return sim_ret(cudaErrorInvalidValue);
  cudaError_t e = sim_from_cu(simcuda_unsafe_call());
  if (e != cudaSuccess) return sim_ret(e);
  *ptr = sim_alloc(size, SIM_HOST_MAGIC);
  return *ptr != NULL ? cudaSuccess : sim_ret(cudaErrorMemoryAllocation);
}

SIM_API cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags) {
  (void)flags; /* portable / mapped / write-combined make no difference on the host */
  return cudaMallocHost(ptr, size);
}

SIM_API cudaError_t cudaFreeHost(void *ptr) {
  sim_init_context();
  return sim_ret(sim_free(ptr, SIM_HOST_MAGIC));
}

static cudaError_t sim_check_kind(enum cudaMemcpyKind kind) {
  return (unsigned)kind <= (unsigned)cudaMemcpyDefault ? cudaSuccess
                                                       : cudaErrorInvalidMemcpyDirection;
}

/* A copy on `stream`; sync: the synchronous form, which waits for it. */
static cudaError_t sim_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                              cudaStream_t stream, int sync) {
  sim_init_context();
  if (!simcuda_stream_valid((CUstream)stream)) return sim_ret(cudaErrorInvalidResourceHandle);
  cudaError_t e = sim_check_kind(kind);
  if (e != cudaSuccess) return sim_ret(e);
  if (count == 0) return cudaSuccess;
  if (dst == NULL || src == NULL) return sim_ret(cudaErrorInvalidValue);
  e = sim_from_cu(simcuda_stream_use((CUstream)stream, sync));
  if (e != cudaSuccess) return sim_ret(e);
  memmove(dst, src, count);
  return cudaSuccess;
}

/* The synchronous copy and memset run on the legacy stream (NULL). */
SIM_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) {
  return sim_memcpy(dst, src, count, kind, NULL, 1);
}

SIM_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                    enum cudaMemcpyKind kind, cudaStream_t stream) {
  return sim_memcpy(dst, src, count, kind, stream, 0);
}

static cudaError_t sim_memset(void *ptr, int value, size_t count, cudaStream_t stream, int sync) {
  sim_init_context();
  if (!simcuda_stream_valid((CUstream)stream)) return sim_ret(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (ptr == NULL) return sim_ret(cudaErrorInvalidValue);
  cudaError_t e = sim_from_cu(simcuda_stream_use((CUstream)stream, sync));
  if (e != cudaSuccess) return sim_ret(e);
  memset(ptr, value, count);
  return cudaSuccess;
}

SIM_API cudaError_t cudaMemset(void *ptr, int value, size_t count) {
  return sim_memset(ptr, value, count, NULL, 1);
}

SIM_API cudaError_t cudaMemsetAsync(void *ptr, int value, size_t count, cudaStream_t stream) {
  return sim_memset(ptr, value, count, stream, 0);
}

SIM_API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
  sim_init_context();
  if (free_bytes == NULL || total == NULL) return sim_ret(cudaErrorInvalidValue);
  *total = (size_t)80 << 30;
  *free_bytes = *total;
  return cudaSuccess;
}

SIM_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr) {
  if (attr == NULL) return sim_ret(cudaErrorInvalidValue);
  memset(attr, 0, sizeof(*attr));
  /* cuda_runtime_api.h: from 11.0 a host pointer CUDA does not know is
   * cudaMemoryTypeUnregistered, with cudaSuccess. */
  unsigned int type = 0;
  CUpointer_attribute a = CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
  void *data = &type;
  sim_init_context();
  if (cuPointerGetAttributes(1, &a, &data, (CUdeviceptr)(uintptr_t)ptr) != CUDA_SUCCESS ||
      type == 0) {
    attr->type = cudaMemoryTypeUnregistered;
    return cudaSuccess;
  }
  attr->type = cudaMemoryTypeHost;
  attr->device = 0;
  attr->devicePointer = (void *)ptr;
  attr->hostPointer = (void *)ptr;
  return cudaSuccess;
}

/* ---- Device ---- */

SIM_API cudaError_t cudaGetDeviceCount(int *count) {
  sim_init_driver();
  if (count == NULL) return sim_ret(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

/* cuda_runtime_api.h: "cudaSetDevice() initializes the primary context for
 * the specified device and makes it current to the calling thread by calling
 * cuCtxSetCurrent()", whatever was current before. */
SIM_API cudaError_t cudaSetDevice(int device) {
  sim_init_driver();
  if (device != 0) return sim_ret(cudaErrorInvalidDevice);
  sim_device = device;
  CUcontext primary = NULL;
  if (cuDevicePrimaryCtxRetain(&primary, device) == CUDA_SUCCESS) cuCtxSetCurrent(primary);
  return cudaSuccess;
}

SIM_API cudaError_t cudaGetDevice(int *device) {
  sim_init_driver();
  if (device == NULL) return sim_ret(cudaErrorInvalidValue);
  *device = sim_device;
  return cudaSuccess;
}

SIM_API cudaError_t cudaGetDeviceFlags(unsigned int *flags) {
  if (flags == NULL) return sim_ret(cudaErrorInvalidValue);
  *flags = 0;
  return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device) {
  sim_init_driver();
  if (value == NULL) return sim_ret(cudaErrorInvalidValue);
  /* cudaDeviceAttr values equal CUdevice_attribute values by design. */
  return sim_ret(sim_from_cu(cuDeviceGetAttribute(value, (CUdevice_attribute)attr, device)));
}

static int sim_attr(CUdevice_attribute a) {
  int v = 0;
  cuDeviceGetAttribute(&v, a, 0);
  return v;
}

SIM_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device) {
  sim_init_driver();
  if (prop == NULL) return sim_ret(cudaErrorInvalidValue);
  if (device != 0) return sim_ret(cudaErrorInvalidDevice);
  memset(prop, 0, sizeof(*prop));
  cuDeviceGetName(prop->name, sizeof(prop->name), 0);
  prop->totalGlobalMem = (size_t)80 << 30;
  prop->sharedMemPerBlock = (size_t)sim_attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  prop->sharedMemPerBlockOptin =
      (size_t)sim_attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  prop->regsPerBlock = 65536;
  prop->warpSize = sim_attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  prop->maxThreadsPerBlock = sim_attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  prop->maxThreadsDim[0] = sim_attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X);
  prop->maxThreadsDim[1] = sim_attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y);
  prop->maxThreadsDim[2] = sim_attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z);
  prop->maxGridSize[0] = sim_attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  prop->maxGridSize[1] = sim_attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  prop->maxGridSize[2] = sim_attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  prop->major = sim_attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  prop->minor = sim_attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  prop->multiProcessorCount = sim_attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  prop->maxThreadsPerMultiProcessor = sim_attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  prop->memoryBusWidth = sim_attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  prop->l2CacheSize = sim_attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  prop->concurrentKernels = 1;
  prop->unifiedAddressing = 1;
  prop->canMapHostMemory = 1;
  return cudaSuccess;
}

/* Waits for the whole device: refused while any stream captures (the
 * driver's cuCtxSynchronize answer). */
SIM_API cudaError_t cudaDeviceSynchronize(void) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuCtxSynchronize()));
}

/* nsys/CUPTI capture-range markers: nothing to start here (no profiler
 * inside simcuda), but programs call them and must link and succeed. */
SIM_API cudaError_t cudaProfilerStart(void) {
  sim_init_context();
  return cudaSuccess;
}

SIM_API cudaError_t cudaProfilerStop(void) {
  sim_init_context();
  return cudaSuccess;
}

SIM_API cudaError_t cudaDeviceReset(void) {
  sim_init_context();
  return cudaSuccess;
}

SIM_API cudaError_t cudaDriverGetVersion(int *version) {
  if (version == NULL) return sim_ret(cudaErrorInvalidValue);
  return sim_ret(sim_from_cu(cuDriverGetVersion(version)));
}

SIM_API cudaError_t cudaRuntimeGetVersion(int *version) {
  if (version == NULL) return sim_ret(cudaErrorInvalidValue);
  *version = CUDART_VERSION;
  return cudaSuccess;
}

/* ---- Streams ---- */

SIM_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags,
                                                 int priority) {
  sim_init_context();
  if (s == NULL) return sim_ret(cudaErrorInvalidValue);
  CUstream cs;
  cudaError_t e = sim_from_cu(cuStreamCreateWithPriority(&cs, flags, priority));
  if (e == cudaSuccess) *s = (cudaStream_t)cs;
  return sim_ret(e);
}

SIM_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  return cudaStreamCreateWithPriority(s, flags, 0);
}

SIM_API cudaError_t cudaStreamCreate(cudaStream_t *s) {
  return cudaStreamCreateWithPriority(s, cudaStreamDefault, 0);
}

SIM_API cudaError_t cudaStreamDestroy(cudaStream_t s) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuStreamDestroy((CUstream)s)));
}

SIM_API cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuStreamSynchronize((CUstream)s)));
}

SIM_API cudaError_t cudaStreamQuery(cudaStream_t s) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuStreamQuery((CUstream)s)));
}

SIM_API cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long *id) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuStreamGetId((CUstream)s, id)));
}

SIM_API cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status) {
  sim_init_context();
  if (status == NULL) return sim_ret(cudaErrorInvalidValue);
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  cudaError_t e = sim_from_cu(cuStreamIsCapturing((CUstream)s, &cs));
  if (e == cudaSuccess) *status = (enum cudaStreamCaptureStatus)cs; /* same values */
  return sim_ret(e);
}

/* ---- Stream capture and graphs (the driver's, which hold no work) ---- */

SIM_API cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuStreamBeginCapture((CUstream)s, (CUstreamCaptureMode)mode)));
}

SIM_API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuStreamEndCapture((CUstream)s, (CUgraph *)graph)));
}

SIM_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus *status,
                                             unsigned long long *id, cudaGraph_t *graph,
                                             const cudaGraphNode_t **deps,
                                             const cudaGraphEdgeData **edges, size_t *ndeps) {
  sim_init_context();
  if (status == NULL) return sim_ret(cudaErrorInvalidValue);
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t cid = 0;
  /* cudaGraphEdgeData and CUgraphEdgeData have the same layout. */
  cudaError_t e = sim_from_cu(cuStreamGetCaptureInfo((CUstream)s, &cs, &cid, (CUgraph *)graph,
                                                     (const CUgraphNode **)deps,
                                                     (const CUgraphEdgeData **)edges, ndeps));
  if (e != cudaSuccess) return sim_ret(e);
  *status = (enum cudaStreamCaptureStatus)cs;
  if (id != NULL && cs == CU_STREAM_CAPTURE_STATUS_ACTIVE) *id = cid;
  return cudaSuccess;
}

SIM_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *exec, cudaGraph_t graph,
                                                  unsigned long long flags) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuGraphInstantiateWithFlags((CUgraphExec *)exec, graph, flags)));
}

SIM_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph,
                                         unsigned long long flags) {
  return cudaGraphInstantiateWithFlags(exec, graph, flags);
}

SIM_API cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuGraphLaunch((CUgraphExec)exec, (CUstream)s)));
}

SIM_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuGraphExecDestroy((CUgraphExec)exec)));
}

SIM_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  sim_init_context();
  return sim_ret(sim_from_cu(cuGraphDestroy(graph)));
}

/* ---- Events ---- */

enum { SIM_EVENT_MAGIC = 0x45564e54 };
struct CUevent_st {
  uint32_t magic;
  unsigned flags;
  int recorded;
  int captured;   /* last recorded in a capturing stream */
  uint64_t at_ns; /* CLOCK_MONOTONIC of the last record */
};

static uint64_t sim_monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int sim_event_ok(cudaEvent_t e) {
  return e != NULL && ((struct CUevent_st *)e)->magic == SIM_EVENT_MAGIC;
}

SIM_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags) {
  sim_init_context();
  if (event == NULL) return sim_ret(cudaErrorInvalidValue);
  struct CUevent_st *e = calloc(1, sizeof(*e));
  if (e == NULL) return sim_ret(cudaErrorMemoryAllocation);
  e->magic = SIM_EVENT_MAGIC;
  e->flags = flags;
  *event = (cudaEvent_t)e;
  return cudaSuccess;
}

SIM_API cudaError_t cudaEventCreate(cudaEvent_t *event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

SIM_API cudaError_t cudaEventDestroy(cudaEvent_t event) {
  sim_init_context();
  if (!sim_event_ok(event)) return sim_ret(cudaErrorInvalidResourceHandle);
  ((struct CUevent_st *)event)->magic = 0;
  free(event);
  return cudaSuccess;
}

/* Work before the record has already run (simcuda is synchronous), so the
 * event completes at the moment it is recorded. */
SIM_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  sim_init_context();
  if (!sim_event_ok(event)) return sim_ret(cudaErrorInvalidResourceHandle);
  if (!simcuda_stream_valid((CUstream)stream)) return sim_ret(cudaErrorInvalidResourceHandle);
  cudaError_t r = sim_issue(stream);
  if (r != cudaSuccess) return sim_ret(r);
  struct CUevent_st *e = (struct CUevent_st *)event;
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  e->captured =
      cudaStreamIsCapturing(stream, &st) == cudaSuccess && st != cudaStreamCaptureStatusNone;
  e->at_ns = sim_monotonic_ns();
  e->recorded = 1;
  return cudaSuccess;
}

/* Whether the event's work is done, asked or waited for: never for an event
 * last recorded in a capturing stream (cudaErrorCapturedEvent, in every
 * capture mode: cuda.h, cuThreadExchangeStreamCaptureMode's example of a
 * call that "necessarily conflicts"), and a potentially unsafe call for any
 * other (CUDA graph capture in another thread makes it fail in global mode:
 * PyTorch's caching allocator skips its cudaEventQuery calls while a capture
 * is underway for that reason, c10/cuda/CUDACachingAllocator.cpp). */
static cudaError_t sim_event_wait(cudaEvent_t event) {
  sim_init_context();
  if (!sim_event_ok(event)) return sim_ret(cudaErrorInvalidResourceHandle);
  if (((struct CUevent_st *)event)->captured) return sim_ret(cudaErrorCapturedEvent);
  return sim_ret(sim_from_cu(simcuda_unsafe_call()));
}

SIM_API cudaError_t cudaEventQuery(cudaEvent_t event) {
  return sim_event_wait(event);
}

SIM_API cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return sim_event_wait(event);
}

SIM_API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t event, unsigned int flags) {
  sim_init_context();
  (void)flags;
  if (!sim_event_ok(event) || !simcuda_stream_valid((CUstream)s))
    return sim_ret(cudaErrorInvalidResourceHandle);
  return sim_ret(sim_issue(s));
}

SIM_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  sim_init_context();
  if (ms == NULL) return sim_ret(cudaErrorInvalidValue);
  if (!sim_event_ok(start) || !sim_event_ok(end)) return sim_ret(cudaErrorInvalidResourceHandle);
  struct CUevent_st *a = (struct CUevent_st *)start, *b = (struct CUevent_st *)end;
  if ((a->flags & cudaEventDisableTiming) || (b->flags & cudaEventDisableTiming))
    return sim_ret(cudaErrorInvalidResourceHandle);
  if (!a->recorded || !b->recorded) return sim_ret(cudaErrorInvalidResourceHandle);
  *ms = (float)(((double)b->at_ns - (double)a->at_ns) / 1e6);
  return cudaSuccess;
}

/* ---- Errors ---- */

SIM_API cudaError_t cudaGetLastError(void) {
  cudaError_t e = sim_last_error;
  sim_last_error = cudaSuccess;
  return e;
}

SIM_API cudaError_t cudaPeekAtLastError(void) {
  return sim_last_error;
}

static const struct {
  cudaError_t code;
  const char *name;
  const char *text;
} sim_errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation cannot be performed in the present state"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit",
     "operation would make the legacy stream depend on a capturing blocking stream"},
    {cudaErrorCapturedEvent, "cudaErrorCapturedEvent",
     "operation not permitted on an event last recorded in a capturing stream"},
    {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated",
     "operation failed due to a previous error during capture"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration",
     "__global__ function call is not configured"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

SIM_API const char *cudaGetErrorName(cudaError_t error) {
  for (size_t i = 0; i < sizeof(sim_errors) / sizeof(sim_errors[0]); i++)
    if (sim_errors[i].code == error) return sim_errors[i].name;
  return "cudaErrorUnknown";
}

SIM_API const char *cudaGetErrorString(cudaError_t error) {
  for (size_t i = 0; i < sizeof(sim_errors) / sizeof(sim_errors[0]); i++)
    if (sim_errors[i].code == error) return sim_errors[i].text;
  return "unrecognized error code";
}

/* --- what nvcc-built programs call: module registration and <<<>>> launches ---
 *
 * Every program nvcc builds registers its fatbin, kernels and device variables
 * at load time (before main) and unregisters them at exit; a <<<...>>> launch
 * pushes its configuration, pops it in the host stub and launches through
 * __cudaGetKernel / __cudaLaunchKernel (CUDA 13) or cudaLaunchKernel.
 * simcuda accepts the registrations (a program that only calls libraries
 * runs) and cannot run device code: every launch fails with
 * cudaErrorNoKernelImageForDevice, sticky like any runtime error, as a GPU
 * without a kernel image for its architecture would answer. Managed
 * variables get host memory of their size. */

SIM_API void **__cudaRegisterFatBinary(void *fatCubin) {
  void **h = calloc(1, sizeof *h);
  if (h) *h = fatCubin;
  return h;
}

SIM_API void __cudaRegisterFatBinaryEnd(void **fatCubinHandle) {
  (void)fatCubinHandle;
}

SIM_API void __cudaUnregisterFatBinary(void **fatCubinHandle) {
  free(fatCubinHandle);
}

SIM_API char __cudaInitModule(void **fatCubinHandle) {
  return fatCubinHandle != NULL;
}

SIM_API void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                    const char *deviceName, int thread_limit, uint3 *tid,
                                    uint3 *bid, dim3 *bDim, dim3 *gDim, int *wSize) {
  (void)fatCubinHandle, (void)hostFun, (void)deviceFun, (void)deviceName, (void)thread_limit;
  (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
}

SIM_API void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                               const char *deviceName, int ext, size_t size, int constant,
                               int global) {
  (void)fatCubinHandle, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext;
  (void)size, (void)constant, (void)global;
}

SIM_API void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                                      char *deviceAddress, const char *deviceName, int ext,
                                      size_t size, int constant, int global) {
  (void)fatCubinHandle, (void)deviceAddress, (void)deviceName, (void)ext, (void)constant;
  (void)global;
  if (hostVarPtrAddress && !*hostVarPtrAddress) *hostVarPtrAddress = calloc(1, size ? size : 1);
}

/* The <<<grid, block, shared, stream>>> configuration, pushed by the caller
 * and popped by the kernel's host stub on the same thread. */
enum { SIM_LAUNCH_DEPTH = 16 };
static _Thread_local struct {
  dim3 grid, block;
  size_t shared;
  void *stream;
} sim_launch_cfg[SIM_LAUNCH_DEPTH];
static _Thread_local int sim_launch_n;

SIM_API unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                             struct CUstream_st *stream) {
  if (sim_launch_n == SIM_LAUNCH_DEPTH) return 1;
  sim_launch_cfg[sim_launch_n].grid = gridDim;
  sim_launch_cfg[sim_launch_n].block = blockDim;
  sim_launch_cfg[sim_launch_n].shared = sharedMem;
  sim_launch_cfg[sim_launch_n].stream = stream;
  sim_launch_n++;
  return 0;
}

SIM_API cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                               void *stream) {
  if (sim_launch_n == 0) return sim_ret(cudaErrorMissingConfiguration);
  sim_launch_n--;
  if (gridDim) *gridDim = sim_launch_cfg[sim_launch_n].grid;
  if (blockDim) *blockDim = sim_launch_cfg[sim_launch_n].block;
  if (sharedMem) *sharedMem = sim_launch_cfg[sim_launch_n].shared;
  if (stream) *(void **)stream = sim_launch_cfg[sim_launch_n].stream;
  return cudaSuccess;
}

SIM_API cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun) {
  if (!kernel) return sim_ret(cudaErrorInvalidValue);
  *kernel = (cudaKernel_t)(uintptr_t)hostFun;
  return cudaSuccess;
}

static cudaError_t sim_launch(void) {
  sim_init_context();
  return sim_ret(cudaErrorNoKernelImageForDevice);
}

SIM_API cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                       void **args, size_t sharedMem, cudaStream_t stream) {
  (void)kernel, (void)gridDim, (void)blockDim, (void)args, (void)sharedMem, (void)stream;
  return sim_launch();
}

SIM_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
                                            void **args, size_t sharedMem, cudaStream_t stream) {
  (void)kernel, (void)gridDim, (void)blockDim, (void)args, (void)sharedMem, (void)stream;
  return sim_launch();
}

SIM_API cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                     size_t sharedMem, cudaStream_t stream) {
  (void)func, (void)gridDim, (void)blockDim, (void)args, (void)sharedMem, (void)stream;
  return sim_launch();
}
