/* simcuda's libcuda.so.1: the CUDA driver API subset mpprof and the samples
 * use, on the CPU. One device ("simcuda (CPU)", compute capability 9.0), one
 * primary context, streams as handles (work runs synchronously when it is
 * issued, so synchronisation is a no-op), every pointer is host memory.
 * It is also the hub between the library stand-ins and simcuda's CUPTI:
 * simcuda_kernel_start/finish time a "kernel" and hand it to the sink
 * libcupti.so.13 attached. Anything else is refused: not exported, or
 * CUDA_ERROR_NOT_SUPPORTED / CUDA_ERROR_NOT_FOUND through cuGetProcAddress.
 * Stream capture is state only: a capturing stream reports ACTIVE, but its
 * work still runs when issued, and the graph EndCapture returns cannot be
 * instantiated or launched (CUDA_ERROR_NOT_SUPPORTED). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <cudaProfiler.h>

#include "simcuda_internal.h"

#define SIM_API __attribute__((visibility("default")))

/* CUDA 13.0, the toolkit whose headers simcuda is compiled against. */
enum { SIM_DRIVER_VERSION = 13000, SIM_DEFAULT_STREAM_ID = 7, SIM_FIRST_STREAM_ID = 13 };

struct CUctx_st {
  uint32_t magic;
};
static struct CUctx_st sim_primary_ctx = {0x43545853u};

enum { SIM_STREAM_MAGIC = 0x5354524du };
struct CUstream_st {
  uint32_t magic;
  uint32_t id;
  unsigned flags;
  int priority;
  /* Capture state. status is atomic because a profiler may ask from another
   * thread; the rest is only touched by Begin/End on the capturing side. */
  _Atomic int capture_status; /* CUstreamCaptureStatus */
  CUstreamCaptureMode capture_mode;
  const void *capture_thread; /* &sim_thread_token of the thread that began it */
  struct CUgraph_st *capture_graph;
  struct CUstream_st *next_capturing;
};

/* A graph is only a record of one capture sequence: simcuda ran the work
 * when it was issued, so there are no nodes to replay. */
enum { SIM_GRAPH_MAGIC = 0x47524150u };
struct CUgraph_st {
  uint32_t magic;
  int capturing; /* still attached to its stream's capture */
  cuuint64_t capture_id;
};

static atomic_int sim_initialized;
/* Set in a fork child of a process whose driver was initialised: the real
 * driver answers CUDA_ERROR_NOT_INITIALIZED there, to cuInit and to every
 * call that needs it (a child forked before any cuInit initialises as usual). */
static atomic_int sim_forked_after_init;

static void sim_fork_child(void) {
  atomic_store(&sim_forked_after_init, 1);
}
static atomic_uint sim_next_stream_id = SIM_FIRST_STREAM_ID;
/* The calling thread's stack of current contexts (cuCtxPushCurrent /
 * cuCtxPopCurrent; cuCtxSetCurrent replaces its top), the current one on
 * top. A thread starts with none (cuda.h, cuCtxGetCurrent: "If no context
 * is bound to the calling CPU thread then *pctx is set to NULL"): only
 * those calls bind one through the driver. The runtime binds the primary
 * context on a thread's first call that needs one (cuda_runtime_api.h,
 * "Initialization and Tear-Down"), and so do the libraries' kernel launches
 * (their static runtime): see simcuda_kernel_start. simcuda has one
 * context, so the stack is its depth: every entry is the primary context.
 * (Thread-local storage takes room on every thread's stack: programs with
 * small thread stacks run on simcuda as on the driver.) */
static _Thread_local unsigned sim_ctx_depth;
static _Thread_local char sim_thread_token; /* its address names the calling thread */
/* cuThreadExchangeStreamCaptureMode: the thread's capture interaction mode
 * (CU_STREAM_CAPTURE_MODE_GLOBAL, 0, by default). */
static _Thread_local CUstreamCaptureMode sim_thread_capture_mode;
static atomic_ullong sim_next_capture_id = 1;
/* Captures in progress on streams created without CU_STREAM_NON_BLOCKING:
 * the legacy stream, which would depend on them, cannot be used meanwhile. */
static atomic_int sim_blocking_captures;
/* The streams capturing now (list through next_capturing, under the lock):
 * what a potentially unsafe call checks, and invalidates when prohibited. */
static pthread_mutex_t sim_capture_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUstream_st *sim_capturing;

static int sim_is_default_stream(CUstream s) {
  return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* NULL is the legacy stream (CU_GET_PROC_ADDRESS_LEGACY_STREAM semantics). */
static int sim_is_legacy_stream(CUstream s) {
  return s == NULL || s == CU_STREAM_LEGACY;
}

static int sim_is_blocking(const struct CUstream_st *s) {
  return (s->flags & CU_STREAM_NON_BLOCKING) == 0;
}

/* The simulated part: sm_90 (H100-like) unless SIMCUDA_SM names another
 * compute capability simcuda knows (90 or 100, B200-like), read once. What
 * depends on it is what the real libraries gate on the architecture (the
 * cuBLASLt block-scaling modes). */
SIM_API int simcuda_device_sm(void) {
  static _Atomic int sm;
  int v = atomic_load(&sm);
  if (v == 0) {
    const char *e = getenv("SIMCUDA_SM");
    v = e != NULL && strcmp(e, "100") == 0 ? 100 : 90;
    atomic_store(&sm, v);
  }
  return v;
}

SIM_API uint64_t simcuda_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

SIM_API int simcuda_stream_valid(CUstream s) {
  return sim_is_default_stream(s) || s->magic == SIM_STREAM_MAGIC;
}

SIM_API uint32_t simcuda_stream_id(CUstream s) {
  if (sim_is_default_stream(s)) return SIM_DEFAULT_STREAM_ID;
  return s->magic == SIM_STREAM_MAGIC ? s->id : 0;
}

/* ---- CUPTI hub ---- */

static void (*_Atomic sim_cupti_sink)(const simcuda_kernel_event *ev);

SIM_API void simcuda_cupti_attach(void (*sink)(const simcuda_kernel_event *ev)) {
  atomic_store(&sim_cupti_sink, sink);
}

/* cuBLAS, cuBLASLt and cuDNN launch through the CUDA runtime they carry,
 * which makes the primary context current on a thread that has none
 * (cuda_runtime_api.h, "Initialization and Tear-Down"). */
SIM_API uint64_t simcuda_kernel_start(const simcuda_kernel *k) {
  (void)k;
  if (sim_ctx_depth == 0) sim_ctx_depth = 1;
  return simcuda_now_ns();
}

SIM_API void simcuda_kernel_finish(const simcuda_kernel *k, uint64_t token) {
  void (*sink)(const simcuda_kernel_event *) = atomic_load(&sim_cupti_sink);
  if (sink == NULL || k == NULL) return;
  uint64_t end = simcuda_now_ns();
  /* The launch call returns before the kernel starts on a real GPU; keep
   * that order (API start < API end <= kernel start < kernel end). */
  simcuda_kernel_event ev = {
      .kernel = k,
      .stream_id = simcuda_stream_id(k->stream),
      .api_start = token,
      .api_end = token + 1,
      .start = token + 1,
      .end = end > token + 1 ? end : token + 2,
  };
  sink(&ev);
}

/* ---- Initialisation, version, device ---- */

#define SIM_REQUIRE_INIT()                                                                         \
  do {                                                                                             \
    if (!atomic_load(&sim_initialized) || atomic_load(&sim_forked_after_init))                     \
      return CUDA_ERROR_NOT_INITIALIZED;                                                           \
  } while (0)

/* The driver loads the library named by CUDA_INJECTION64_PATH during the
 * first cuInit and calls its InitializeInjection (how mpprof attaches
 * without LD_PRELOAD). The flag is set first, so an injection that calls
 * back into the driver (cuInit, CUPTI) sees an initialised driver. A library
 * that cannot be loaded, or lacks the entry point, is skipped. */
static void sim_load_injection(void) {
  const char *path = getenv("CUDA_INJECTION64_PATH");
  if (path == NULL || path[0] == '\0') return;
  void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (lib == NULL) return;
  int (*init)(void) = (int (*)(void))dlsym(lib, "InitializeInjection");
  if (init != NULL) init();
}

SIM_API CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (atomic_load(&sim_forked_after_init)) return CUDA_ERROR_NOT_INITIALIZED;
  int expected = 0;
  if (atomic_compare_exchange_strong(&sim_initialized, &expected, 1)) {
    pthread_atfork(NULL, NULL, sim_fork_child);
    sim_load_injection();
  }
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDriverGetVersion(int *version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = SIM_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetCount(int *count) {
  SIM_REQUIRE_INIT();
  if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  SIM_REQUIRE_INIT();
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  SIM_REQUIRE_INIT();
  if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  const char *n = "simcuda (CPU)";
  size_t cap = (size_t)len - 1;
  size_t l = strlen(n) < cap ? strlen(n) : cap;
  memcpy(name, n, l);
  name[l] = '\0';
  return CUDA_SUCCESS;
}

/* Attributes of an H100-like part where a program could reasonably branch on
 * them; anything not listed is refused rather than invented. */
SIM_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  SIM_REQUIRE_INIT();
  if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *pi = simcuda_device_sm() / 10;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *pi = simcuda_device_sm() % 10;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *pi = 132;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *pi = 1024;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
    *pi = 1024;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
    *pi = 64;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
    *pi = 2147483647;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
  case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
    *pi = 65535;
    break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    *pi = 32;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *pi = 49152;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
    *pi = 232448;
    break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
    *pi = 2048;
    break;
  case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
    *pi = 1980000;
    break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
    *pi = 2619000;
    break;
  case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
    *pi = 5120;
    break;
  case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
    *pi = 52428800;
    break;
  case CU_DEVICE_ATTRIBUTE_INTEGRATED:
    *pi = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    *pi = 1;
    break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
    *pi = 1;
    break;
  case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
    *pi = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
    *pi = 1;
    break;
  case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
  case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
  case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
    *pi = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
    *pi = CU_COMPUTEMODE_DEFAULT;
    break;
  case CU_DEVICE_ATTRIBUTE_ECC_ENABLED:
    *pi = 0;
    break;
  default:
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  SIM_REQUIRE_INIT();
  if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = (size_t)80 << 30;
  return CUDA_SUCCESS;
}

/* ---- Context ---- */

SIM_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  SIM_REQUIRE_INIT();
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = &sim_primary_ctx;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  SIM_REQUIRE_INIT();
  return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* cuda.h: "If there exists a CUDA context stack on the calling CPU thread,
 * this will replace the top of that stack with ctx. If ctx is NULL then this
 * will be equivalent to popping the top ... (or a no-op if the calling CPU
 * thread's CUDA context stack is empty)." */
SIM_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  SIM_REQUIRE_INIT();
  if (ctx != NULL && ctx != &sim_primary_ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx == NULL) {
    if (sim_ctx_depth > 0) sim_ctx_depth--;
  } else if (sim_ctx_depth == 0) {
    sim_ctx_depth = 1; /* on a non-empty stack the top is replaced: by itself */
  }
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxPushCurrent(CUcontext ctx) {
  SIM_REQUIRE_INIT();
  if (ctx != &sim_primary_ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (sim_ctx_depth == UINT_MAX) return CUDA_ERROR_OUT_OF_MEMORY;
  sim_ctx_depth++;
  return CUDA_SUCCESS;
}

/* The previous context is current again; an empty stack is
 * CUDA_ERROR_INVALID_CONTEXT (no current context to pop). */
SIM_API CUresult cuCtxPopCurrent(CUcontext *pctx) {
  SIM_REQUIRE_INIT();
  if (sim_ctx_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  sim_ctx_depth--;
  if (pctx != NULL) *pctx = &sim_primary_ctx;
  return CUDA_SUCCESS;
}

/* NULL when the calling thread has no current context: what needs one
 * answers CUDA_ERROR_INVALID_CONTEXT. */
static CUcontext sim_current(void) {
  return sim_ctx_depth > 0 ? &sim_primary_ctx : NULL;
}

SIM_API CUresult cuCtxGetCurrent(CUcontext *pctx) {
  SIM_REQUIRE_INIT();
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  *pctx = sim_current();
  return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetDevice(CUdevice *device) {
  SIM_REQUIRE_INIT();
  if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (sim_current() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  *device = 0;
  return CUDA_SUCCESS;
}

static CUresult sim_ctx_sync_check(void);

SIM_API CUresult cuCtxSynchronize(void) {
  SIM_REQUIRE_INIT();
  if (sim_current() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  return sim_ctx_sync_check();
}

/* CUDA 13's forms of the two, naming the context (NULL: the current one);
 * what cuGetProcAddress hands out for their plain names from 13.0 on. */
SIM_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  SIM_REQUIRE_INIT();
  if (ctx != NULL && ctx != &sim_primary_ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx != NULL) {
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    *device = 0;
    return CUDA_SUCCESS;
  }
  return cuCtxGetDevice(device);
}

SIM_API CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  SIM_REQUIRE_INIT();
  if (ctx != NULL && ctx != &sim_primary_ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx == NULL && sim_current() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  return sim_ctx_sync_check();
}

/* Capture-range markers (cudaProfiler.h): accepted, nothing to start. */
SIM_API CUresult cuProfilerStart(void) {
  SIM_REQUIRE_INIT();
  return CUDA_SUCCESS;
}

SIM_API CUresult cuProfilerStop(void) {
  SIM_REQUIRE_INIT();
  return CUDA_SUCCESS;
}

/* ---- Pointers: CUDA's allocations are host memory ---- */

/* The allocations simcuda's runtime made (cudaMalloc, cudaMallocHost, ...),
 * live ones only: what the driver knows as CUDA memory. Any other address
 * (malloc'ed, stack, a global) is memory CUDA never saw. */
typedef struct sim_range {
  uintptr_t start;
  size_t size;
} sim_range;
static pthread_mutex_t sim_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static sim_range *sim_mem;
static size_t sim_mem_n, sim_mem_cap;

SIM_API int simcuda_mem_track(const void *p, size_t size) {
  pthread_mutex_lock(&sim_mem_lock);
  if (sim_mem_n == sim_mem_cap) {
    size_t cap = sim_mem_cap ? 2 * sim_mem_cap : 64;
    sim_range *m = realloc(sim_mem, cap * sizeof(*m));
    if (m == NULL) {
      pthread_mutex_unlock(&sim_mem_lock);
      return -1;
    }
    sim_mem = m;
    sim_mem_cap = cap;
  }
  sim_mem[sim_mem_n++] = (sim_range){(uintptr_t)p, size};
  pthread_mutex_unlock(&sim_mem_lock);
  return 0;
}

SIM_API void simcuda_mem_untrack(const void *p) {
  pthread_mutex_lock(&sim_mem_lock);
  for (size_t i = 0; i < sim_mem_n; i++)
    if (sim_mem[i].start == (uintptr_t)p) {
      sim_mem[i] = sim_mem[--sim_mem_n];
      break;
    }
  pthread_mutex_unlock(&sim_mem_lock);
}

/* The allocation a lies in (a zero-byte one holds its own address). */
static int sim_mem_find(uintptr_t a, sim_range *ret) {
  int found = 0;
  pthread_mutex_lock(&sim_mem_lock);
  for (size_t i = 0; i < sim_mem_n && !found; i++)
    if (a >= sim_mem[i].start && a - sim_mem[i].start < (sim_mem[i].size ? sim_mem[i].size : 1)) {
      *ret = sim_mem[i];
      found = 1;
    }
  pthread_mutex_unlock(&sim_mem_lock);
  return found;
}

/* The attributes simcuda answers, with the size of each one's value. An
 * attribute cuda.h defines but simcuda does not model is
 * CUDA_ERROR_NOT_SUPPORTED; a value that is no attribute at all,
 * CUDA_ERROR_INVALID_VALUE (cuPointerGetAttribute's documented errors). */
static size_t sim_pointer_attribute_size(CUpointer_attribute attribute) {
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    return sizeof(unsigned int);
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    return sizeof(CUcontext);
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    return sizeof(CUdeviceptr);
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    return sizeof(void *);
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    return sizeof(int);
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    return sizeof(size_t);
  default:
    return 0;
  }
}

static CUresult sim_pointer_attribute_known(CUpointer_attribute attribute) {
  if (sim_pointer_attribute_size(attribute) != 0) return CUDA_SUCCESS;
  return attribute >= CU_POINTER_ATTRIBUTE_CONTEXT &&
                 attribute <= CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE
             ? CUDA_ERROR_NOT_SUPPORTED
             : CUDA_ERROR_INVALID_VALUE;
}

/* One attribute of a pointer into CUDA memory r: host memory, of the
 * primary context, the same address on both sides. */
static CUresult sim_pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr,
                                      const sim_range *r) {
  switch (attribute) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    *(unsigned int *)data = CU_MEMORYTYPE_HOST;
    break;
  case CU_POINTER_ATTRIBUTE_CONTEXT:
    *(CUcontext *)data = &sim_primary_ctx;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    /* cuda.h: "If there is no current CUcontext then CUDA_ERROR_INVALID_CONTEXT" */
    if (sim_current() == NULL) return CUDA_ERROR_INVALID_CONTEXT;
    *(CUdeviceptr *)data = ptr;
    break;
  case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    *(void **)data = (void *)(uintptr_t)ptr;
    break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    *(unsigned int *)data = 0;
    break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    *(int *)data = 0;
    break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    *(CUdeviceptr *)data = (CUdeviceptr)r->start;
    break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    *(size_t *)data = r->size;
    break;
  default:
    return sim_pointer_attribute_known(attribute);
  }
  return CUDA_SUCCESS;
}

/* cuda.h: a pointer CUDA did not allocate, map or register is
 * CUDA_ERROR_INVALID_VALUE, whatever the attribute. */
SIM_API CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
  SIM_REQUIRE_INIT();
  if (data == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult known = sim_pointer_attribute_known(attribute);
  if (known != CUDA_SUCCESS) return known;
  sim_range r;
  if (!sim_mem_find((uintptr_t)ptr, &r)) return CUDA_ERROR_INVALID_VALUE;
  return sim_pointer_attribute(data, attribute, ptr, &r);
}

/* cuda.h: "Unlike cuPointerGetAttribute, this function will not return an
 * error when the ptr encountered is not a valid CUDA pointer. Instead, the
 * attributes are assigned default NULL values and CUDA_SUCCESS is returned." */
SIM_API CUresult cuPointerGetAttributes(unsigned int num, CUpointer_attribute *attributes,
                                        void **data, CUdeviceptr ptr) {
  SIM_REQUIRE_INIT();
  if (attributes == NULL || data == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < num; i++) {
    if (data[i] == NULL) return CUDA_ERROR_INVALID_VALUE;
    CUresult known = sim_pointer_attribute_known(attributes[i]);
    if (known != CUDA_SUCCESS) return known;
  }
  sim_range r;
  int cuda = sim_mem_find((uintptr_t)ptr, &r);
  for (unsigned i = 0; i < num; i++) {
    if (!cuda) {
      memset(data[i], 0, sim_pointer_attribute_size(attributes[i]));
      continue;
    }
    CUresult e = sim_pointer_attribute(data[i], attributes[i], ptr, &r);
    if (e != CUDA_SUCCESS) return e;
  }
  return CUDA_SUCCESS;
}

/* ---- Streams ---- */

/* Capture bookkeeping, begun and ended (see Stream capture below). */
static void sim_capture_started(struct CUstream_st *s) {
  if (sim_is_blocking(s)) atomic_fetch_add(&sim_blocking_captures, 1);
  pthread_mutex_lock(&sim_capture_lock);
  s->next_capturing = sim_capturing;
  sim_capturing = s;
  pthread_mutex_unlock(&sim_capture_lock);
}

/* The capture of s ends (EndCapture, or the stream destroyed). */
static void sim_capture_ended(struct CUstream_st *s) {
  if (sim_is_blocking(s)) atomic_fetch_sub(&sim_blocking_captures, 1);
  pthread_mutex_lock(&sim_capture_lock);
  for (struct CUstream_st **p = &sim_capturing; *p != NULL; p = &(*p)->next_capturing)
    if (*p == s) {
      *p = s->next_capturing;
      break;
    }
  s->next_capturing = NULL;
  pthread_mutex_unlock(&sim_capture_lock);
}

/* The per-thread default stream's capture state: one per thread (cuda.h,
 * cuStreamBeginCapture refuses only the legacy stream: "Capture may not be
 * initiated if stream is CU_STREAM_LEGACY"), made at the thread's first
 * capture on it (on the heap: static TLS is carved from a thread's stack,
 * and programs run threads with small ones). It is blocking, as the
 * per-thread stream synchronises with the legacy one. A capture still open
 * when its thread ends leaves the list of capturing streams then. */
static pthread_key_t sim_ptds_key;
static pthread_once_t sim_ptds_once = PTHREAD_ONCE_INIT;

static void sim_ptds_exit(void *arg) {
  struct CUstream_st *s = arg;
  if (atomic_load(&s->capture_status) != CU_STREAM_CAPTURE_STATUS_NONE) sim_capture_ended(s);
  free(s->capture_graph);
  free(s);
}

static void sim_ptds_key_make(void) {
  (void)pthread_key_create(&sim_ptds_key, sim_ptds_exit);
}

/* The capture state of stream s: its own for a created stream, the calling
 * thread's for CU_STREAM_PER_THREAD (made when create is set; NULL before:
 * never captured), NULL for the legacy stream (NULL, CU_STREAM_LEGACY),
 * which has none. */
static struct CUstream_st *sim_capture_state(CUstream s, int create) {
  if (sim_is_legacy_stream(s)) return NULL;
  if (s != CU_STREAM_PER_THREAD) return s;
  (void)pthread_once(&sim_ptds_once, sim_ptds_key_make);
  struct CUstream_st *p = pthread_getspecific(sim_ptds_key);
  if (p == NULL && create && (p = calloc(1, sizeof(*p))) != NULL &&
      pthread_setspecific(sim_ptds_key, p) != 0) {
    free(p);
    p = NULL;
  }
  return p;
}

SIM_API CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority) {
  SIM_REQUIRE_INIT();
  if (ph == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (sim_current() == NULL) return CUDA_ERROR_INVALID_CONTEXT; /* the stream's would-be context */
  struct CUstream_st *s = calloc(1, sizeof(*s));
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  s->magic = SIM_STREAM_MAGIC;
  s->id = atomic_fetch_add(&sim_next_stream_id, 1);
  s->flags = flags;
  s->priority = priority;
  *ph = s;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamCreate(CUstream *ph, unsigned int flags) {
  return cuStreamCreateWithPriority(ph, flags, 0);
}

SIM_API CUresult cuStreamDestroy(CUstream s) {
  SIM_REQUIRE_INIT();
  if (sim_is_default_stream(s) || s->magic != SIM_STREAM_MAGIC) return CUDA_ERROR_INVALID_HANDLE;
  s->magic = 0;
  if (atomic_load(&s->capture_status) != CU_STREAM_CAPTURE_STATUS_NONE) sim_capture_ended(s);
  free(s->capture_graph); /* a capture that was never ended: its graph is gone too */
  free(s);
  return CUDA_SUCCESS;
}

/* The special handles (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) name a
 * stream of the calling thread's current context: with none current they
 * are CUDA_ERROR_INVALID_CONTEXT (cuda.h, cuStreamGetCtx; the same for every
 * call on them). A created stream carries its own context. */
#define SIM_CHECK_STREAM(s)                                                                        \
  do {                                                                                             \
    SIM_REQUIRE_INIT();                                                                            \
    if (!simcuda_stream_valid(s)) return CUDA_ERROR_INVALID_HANDLE;                                \
    if (sim_is_default_stream(s) && sim_current() == NULL) return CUDA_ERROR_INVALID_CONTEXT;      \
  } while (0)

SIM_API CUresult cuStreamSynchronize(CUstream s) {
  SIM_CHECK_STREAM(s);
  return simcuda_stream_use(s, 1);
}

SIM_API CUresult cuStreamQuery(CUstream s) {
  SIM_CHECK_STREAM(s);
  return simcuda_stream_use(s, 1);
}

/* A created stream belongs to the context current when it was made (the
 * primary one: the only one there is); the special streams (NULL,
 * CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) to the calling thread's current
 * context, CUDA_ERROR_INVALID_CONTEXT when it has none (cuda.h, cuStreamGetCtx). */
SIM_API CUresult cuStreamGetCtx(CUstream s, CUcontext *pctx) {
  SIM_CHECK_STREAM(s);
  if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUcontext c = sim_is_default_stream(s) ? sim_current() : &sim_primary_ctx;
  if (c == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  *pctx = c;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamGetCtx_v2(CUstream s, CUcontext *pctx, CUgreenCtx *pgreen) {
  if (pctx == NULL || pgreen == NULL) {
    SIM_CHECK_STREAM(s);
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult r = cuStreamGetCtx(s, pctx);
  if (r == CUDA_SUCCESS) *pgreen = NULL;
  return r;
}

SIM_API CUresult cuStreamGetId(CUstream s, unsigned long long *id) {
  SIM_CHECK_STREAM(s);
  if (id == NULL) return CUDA_ERROR_INVALID_VALUE;
  *id = simcuda_stream_id(s);
  return CUDA_SUCCESS;
}

/* ---- Stream capture (state only; see the top of the file) ---- */

/* What a potentially unsafe call (cudaMalloc, cudaEventQuery, ...: see
 * simcuda_internal.h) meets, by the calling thread's mode (cuda.h,
 * cuThreadExchangeStreamCaptureMode): GLOBAL is prohibited while this thread
 * has a capture not begun RELAXED or any thread has one begun GLOBAL;
 * THREAD_LOCAL only in the first case; RELAXED never. A prohibited call
 * fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the
 * captures it would have broken: their EndCapture then fails with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. */
SIM_API CUresult simcuda_unsafe_call(void) {
  CUstreamCaptureMode mode = sim_thread_capture_mode;
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  int prohibited = 0;
  pthread_mutex_lock(&sim_capture_lock);
  for (struct CUstream_st *c = sim_capturing; c != NULL; c = c->next_capturing) {
    int own =
        c->capture_thread == &sim_thread_token && c->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED;
    int global =
        mode == CU_STREAM_CAPTURE_MODE_GLOBAL && c->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
    if (own || global) {
      prohibited = 1;
      atomic_store(&c->capture_status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    }
  }
  pthread_mutex_unlock(&sim_capture_lock);
  return prohibited ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

/* Using stream s while streams capture (see simcuda_internal.h). The legacy
 * stream depends on every capturing blocking stream: any use of it is
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates those captures (cuda.h,
 * cuStreamIsCapturing: "the legacy stream is in an unusable state until the
 * blocking stream capture is terminated"; only that query leaves the capture
 * valid). Waiting for or querying a capturing stream's work is
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates its capture, in
 * every capture mode (cuThreadExchangeStreamCaptureMode: relaxed mode is
 * "still prohibited from API calls which necessarily conflict with stream
 * capture"; CUDA Programming Guide, stream capture: "It is invalid to
 * synchronize or query the execution status of a stream which is being
 * captured"). Work issued to a capturing stream is captured: allowed. */
SIM_API CUresult simcuda_stream_use(CUstream s, int sync) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&sim_capture_lock);
  if (sim_is_legacy_stream(s)) {
    for (struct CUstream_st *c = sim_capturing; c != NULL; c = c->next_capturing)
      if (sim_is_blocking(c)) {
        atomic_store(&c->capture_status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
  } else {
    struct CUstream_st *st = sim_capture_state(s, 0);
    if (sync && st != NULL && atomic_load(&st->capture_status) != CU_STREAM_CAPTURE_STATUS_NONE) {
      atomic_store(&st->capture_status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  pthread_mutex_unlock(&sim_capture_lock);
  return r;
}

/* Synchronizing the context waits for every stream in it: with any of them
 * capturing that is CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the captures
 * are invalidated (Programming Guide: synchronizing "a broader handle which
 * encompasses an active stream capture, such as a device or context handle"
 * is invalid; cuda.h, cuCtxWaitEvent: UNSUPPORTED "and invalidate the
 * capture if ... hCtx has a stream in the capture mode"). */
static CUresult sim_ctx_sync_check(void) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&sim_capture_lock);
  for (struct CUstream_st *c = sim_capturing; c != NULL; c = c->next_capturing) {
    atomic_store(&c->capture_status, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  pthread_mutex_unlock(&sim_capture_lock);
  return r;
}

/* cuda.h: sets the calling thread's mode to *mode and returns the old one
 * there; a value that is no mode is CUDA_ERROR_INVALID_VALUE. */
SIM_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode) {
  SIM_REQUIRE_INIT();
  if (mode == NULL ||
      (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
       *mode != CU_STREAM_CAPTURE_MODE_RELAXED))
    return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode old = sim_thread_capture_mode;
  sim_thread_capture_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

/* Capturing the legacy stream is refused (cuda.h); the per-thread stream
 * captures into this thread's state (sim_capture_state). */
SIM_API CUresult cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  SIM_CHECK_STREAM(stream);
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  if (sim_is_legacy_stream(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  struct CUstream_st *s = sim_capture_state(stream, 1);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  if (atomic_load(&s->capture_status) != CU_STREAM_CAPTURE_STATUS_NONE)
    return CUDA_ERROR_ILLEGAL_STATE;
  struct CUgraph_st *g = calloc(1, sizeof(*g));
  if (g == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  g->magic = SIM_GRAPH_MAGIC;
  g->capturing = 1;
  g->capture_id = atomic_fetch_add(&sim_next_capture_id, 1);
  s->capture_graph = g;
  s->capture_mode = mode;
  s->capture_thread = &sim_thread_token;
  sim_capture_started(s);
  atomic_store(&s->capture_status, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamEndCapture(CUstream stream, CUgraph *phGraph) {
  SIM_CHECK_STREAM(stream);
  if (phGraph == NULL) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *s = sim_capture_state(stream, 0);
  if (s == NULL || atomic_load(&s->capture_status) == CU_STREAM_CAPTURE_STATUS_NONE)
    return CUDA_ERROR_ILLEGAL_STATE;
  if (s->capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED && s->capture_thread != &sim_thread_token)
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  struct CUgraph_st *g = s->capture_graph;
  s->capture_graph = NULL;
  int invalidated = atomic_load(&s->capture_status) == CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  sim_capture_ended(s);
  atomic_store(&s->capture_status, CU_STREAM_CAPTURE_STATUS_NONE);
  /* An invalidated sequence ends with no graph (cuda.h, cuStreamEndCapture). */
  if (invalidated) {
    free(g);
    *phGraph = NULL;
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  g->capturing = 0;
  *phGraph = g;
  return CUDA_SUCCESS;
}

/* The legacy stream, asked while a blocking stream captures, answers
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (cuda.h, cuStreamIsCapturing and
 * cuStreamGetCaptureInfo); that capture goes on. */
SIM_API CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status) {
  SIM_CHECK_STREAM(s);
  if (status == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (sim_is_legacy_stream(s) && atomic_load(&sim_blocking_captures) > 0)
    return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  const struct CUstream_st *st = sim_capture_state(s, 0);
  *status = st == NULL ? CU_STREAM_CAPTURE_STATUS_NONE
                       : (CUstreamCaptureStatus)atomic_load(&st->capture_status);
  return CUDA_SUCCESS;
}

/* All three ABIs of cuStreamGetCaptureInfo. The graph under construction is
 * reported, with no dependency nodes (simcuda records none). */
SIM_API CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *status,
                                           cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                                           const CUgraphEdgeData **edges, size_t *ndeps) {
  CUresult r = cuStreamIsCapturing(s, status);
  if (r != CUDA_SUCCESS) return r;
  int active = *status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
  const struct CUstream_st *st = sim_capture_state(s, 0); /* not NULL when active */
  if (id != NULL && active) *id = st->capture_graph->capture_id;
  if (graph != NULL) *graph = active ? st->capture_graph : NULL;
  if (deps != NULL) *deps = NULL;
  if (edges != NULL) *edges = NULL;
  if (ndeps != NULL) *ndeps = 0;
  return CUDA_SUCCESS;
}

SIM_API CUresult cuStreamGetCaptureInfo_v2(CUstream s, CUstreamCaptureStatus *status,
                                           cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                                           size_t *ndeps) {
  return cuStreamGetCaptureInfo_v3(s, status, id, graph, deps, NULL, ndeps);
}

/* Graphs hold no work, so there is nothing to instantiate or launch. */
SIM_API CUresult cuGraphInstantiateWithFlags(CUgraphExec *phExec, CUgraph g,
                                             unsigned long long flags) {
  (void)flags;
  SIM_REQUIRE_INIT();
  if (phExec == NULL || g == NULL || g->magic != SIM_GRAPH_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  *phExec = NULL;
  return CUDA_ERROR_NOT_SUPPORTED;
}

SIM_API CUresult cuGraphInstantiateWithParams(CUgraphExec *phExec, CUgraph g,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS *params) {
  if (params == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = cuGraphInstantiateWithFlags(phExec, g, params->flags);
  params->result_out = CUDA_GRAPH_INSTANTIATE_ERROR;
  return r;
}

SIM_API CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
  (void)exec;
  SIM_CHECK_STREAM(s);
  return CUDA_ERROR_NOT_SUPPORTED;
}

/* No executable graph is ever created, so no handle is valid. */
SIM_API CUresult cuGraphExecDestroy(CUgraphExec exec) {
  (void)exec;
  SIM_REQUIRE_INIT();
  return CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuGraphDestroy(CUgraph g) {
  SIM_REQUIRE_INIT();
  if (g == NULL || g->magic != SIM_GRAPH_MAGIC || g->capturing) return CUDA_ERROR_INVALID_VALUE;
  g->magic = 0;
  free(g);
  return CUDA_SUCCESS;
}

/* The pre-CUDA-10.1 ABIs, exported under their plain names as the real
 * driver does (cuda.h maps those names to the newer entry points). */
#undef cuStreamBeginCapture
#undef cuStreamGetCaptureInfo
#undef cuGraphInstantiate
SIM_API CUresult cuStreamBeginCapture(CUstream s);
SIM_API CUresult cuStreamBeginCapture(CUstream s) {
  return cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
SIM_API CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id);
SIM_API CUresult cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id) {
  return cuStreamGetCaptureInfo_v3(s, status, id, NULL, NULL, NULL, NULL);
}
SIM_API CUresult cuGraphInstantiate(CUgraphExec *phExec, CUgraph g, CUgraphNode *errNode, char *log,
                                    size_t logSize);
SIM_API CUresult cuGraphInstantiate(CUgraphExec *phExec, CUgraph g, CUgraphNode *errNode, char *log,
                                    size_t logSize) {
  if (errNode != NULL) *errNode = NULL;
  if (log != NULL && logSize > 0) log[0] = '\0';
  return cuGraphInstantiateWithFlags(phExec, g, 0);
}
SIM_API CUresult cuGraphInstantiate_v2(CUgraphExec *phExec, CUgraph g, CUgraphNode *errNode,
                                       char *log, size_t logSize);
SIM_API CUresult cuGraphInstantiate_v2(CUgraphExec *phExec, CUgraph g, CUgraphNode *errNode,
                                       char *log, size_t logSize) {
  return cuGraphInstantiate(phExec, g, errNode, log, logSize);
}

/* ---- Error strings ---- */

static const struct {
  CUresult code;
  const char *name;
  const char *text;
} sim_errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation cannot be performed in the present state"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
     "attempt to terminate a thread-local capture sequence from another thread"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
     "operation would make the legacy stream depend on a capturing blocking stream"},
};

SIM_API CUresult cuGetErrorName(CUresult error, const char **str) {
  if (str == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof(sim_errors) / sizeof(sim_errors[0]); i++)
    if (sim_errors[i].code == error) {
      *str = sim_errors[i].name;
      return CUDA_SUCCESS;
    }
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuGetErrorString(CUresult error, const char **str) {
  if (str == NULL) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof(sim_errors) / sizeof(sim_errors[0]); i++)
    if (sim_errors[i].code == error) {
      *str = sim_errors[i].text;
      return CUDA_SUCCESS;
    }
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- Driver entry points by name ---- */

/* The base names cuGetProcAddress is asked for (the header's _v2 macros are
 * expanded in the definitions above, so the pointers are the right ABI). */
/* since: the CUDA version (1000 * major + 10 * minor) whose ABI of that name
 * the pointer has (cudaTypedefs.h: PFN_<name>_v<since>); older requests get
 * CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT. */
static const struct {
  const char *name;
  void *fn;
  int since;
} sim_procs[] = {
#define SIM_PROC(n, f, v)                                                                          \
  { n, (void *)(f), v }
    SIM_PROC("cuInit", cuInit, 2000),
    SIM_PROC("cuDriverGetVersion", cuDriverGetVersion, 2020),
    SIM_PROC("cuGetProcAddress", cuGetProcAddress_v2, 12000),
    SIM_PROC("cuDeviceGetCount", cuDeviceGetCount, 2000),
    SIM_PROC("cuDeviceGet", cuDeviceGet, 2000),
    SIM_PROC("cuDeviceGetName", cuDeviceGetName, 2000),
    SIM_PROC("cuDeviceGetAttribute", cuDeviceGetAttribute, 2000),
    SIM_PROC("cuDeviceTotalMem", cuDeviceTotalMem, 3020),
    SIM_PROC("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000),
    SIM_PROC("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease, 11000),
    SIM_PROC("cuCtxSetCurrent", cuCtxSetCurrent, 4000),
    SIM_PROC("cuCtxGetCurrent", cuCtxGetCurrent, 4000),
    SIM_PROC("cuCtxPushCurrent", cuCtxPushCurrent, 4000),
    SIM_PROC("cuCtxPopCurrent", cuCtxPopCurrent, 4000),
    SIM_PROC("cuProfilerStart", cuProfilerStart, 4000),
    SIM_PROC("cuProfilerStop", cuProfilerStop, 4000),
    SIM_PROC("cuPointerGetAttribute", cuPointerGetAttribute, 4000),
    SIM_PROC("cuPointerGetAttributes", cuPointerGetAttributes, 7000),
    SIM_PROC("cuStreamCreate", cuStreamCreate, 2000),
    SIM_PROC("cuStreamCreateWithPriority", cuStreamCreateWithPriority, 5050),
    SIM_PROC("cuStreamDestroy", cuStreamDestroy, 4000),
    SIM_PROC("cuStreamSynchronize", cuStreamSynchronize, 2000),
    SIM_PROC("cuStreamQuery", cuStreamQuery, 2000),
    SIM_PROC("cuStreamGetCtx", cuStreamGetCtx, 9020),
    SIM_PROC("cuStreamGetId", cuStreamGetId, 12000),
    SIM_PROC("cuStreamIsCapturing", cuStreamIsCapturing, 10000),
    SIM_PROC("cuStreamEndCapture", cuStreamEndCapture, 10000),
    SIM_PROC("cuThreadExchangeStreamCaptureMode", cuThreadExchangeStreamCaptureMode, 10010),
    SIM_PROC("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags, 11040),
    SIM_PROC("cuGraphInstantiateWithParams", cuGraphInstantiateWithParams, 12000),
    SIM_PROC("cuGraphLaunch", cuGraphLaunch, 10000),
    SIM_PROC("cuGraphExecDestroy", cuGraphExecDestroy, 10000),
    SIM_PROC("cuGraphDestroy", cuGraphDestroy, 10000),
    SIM_PROC("cuGetErrorName", cuGetErrorName, 6000),
    SIM_PROC("cuGetErrorString", cuGetErrorString, 6000),
#undef SIM_PROC
};

/* Names whose ABI changed between versions: the newest ABI the caller's
 * version knows (cudaTypedefs.h: PFN_cuStreamBeginCapture_v10000/_v10010,
 * PFN_cuStreamGetCaptureInfo_v10010/_v11030/_v12030, PFN_cuGraphInstantiate
 * _v10000/_v11000, then cuGraphInstantiateWithFlags from 12.0,
 * PFN_cuCtxGetDevice_v2000/_v13000, PFN_cuCtxSynchronize_v2000/_v13000). */
static void *sim_versioned_proc(const char *symbol, int v) {
  if (strcmp(symbol, "cuCtxGetDevice") == 0)
    return v >= 13000 ? (void *)cuCtxGetDevice_v2 : v >= 2000 ? (void *)cuCtxGetDevice : NULL;
  if (strcmp(symbol, "cuCtxSynchronize") == 0)
    return v >= 13000 ? (void *)cuCtxSynchronize_v2 : v >= 2000 ? (void *)cuCtxSynchronize : NULL;
  if (strcmp(symbol, "cuStreamBeginCapture") == 0)
    return v >= 10010   ? (void *)cuStreamBeginCapture_v2
           : v >= 10000 ? (void *)cuStreamBeginCapture
                        : NULL;
  if (strcmp(symbol, "cuStreamGetCaptureInfo") == 0)
    return v >= 12030   ? (void *)cuStreamGetCaptureInfo_v3
           : v >= 11030 ? (void *)cuStreamGetCaptureInfo_v2
           : v >= 10010 ? (void *)cuStreamGetCaptureInfo
                        : NULL;
  if (strcmp(symbol, "cuGraphInstantiate") == 0)
    return v >= 12000   ? (void *)cuGraphInstantiateWithFlags
           : v >= 11000 ? (void *)cuGraphInstantiate_v2
           : v >= 10000 ? (void *)cuGraphInstantiate
                        : NULL;
  return NULL;
}

static int sim_is_versioned(const char *symbol) {
  return strcmp(symbol, "cuCtxGetDevice") == 0 || strcmp(symbol, "cuCtxSynchronize") == 0 ||
         strcmp(symbol, "cuStreamBeginCapture") == 0 ||
         strcmp(symbol, "cuStreamGetCaptureInfo") == 0 || strcmp(symbol, "cuGraphInstantiate") == 0;
}

SIM_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cuda_version,
                                  cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  (void)flags; /* per-thread default stream variants are the same functions here */
  if (symbol == NULL || pfn == NULL) return CUDA_ERROR_INVALID_VALUE;
  *pfn = NULL;
  CUdriverProcAddressQueryResult result = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  /* From 12.5 on, the name cuStreamGetCtx means the three-argument
   * cuStreamGetCtx_v2 (PFN_cuStreamGetCtx_v12050), as in the real driver. */
  if (strcmp(symbol, "cuStreamGetCtx") == 0 && cuda_version >= 12050) {
    *pfn = (void *)cuStreamGetCtx_v2;
    result = CU_GET_PROC_ADDRESS_SUCCESS;
  } else if (sim_is_versioned(symbol)) {
    *pfn = sim_versioned_proc(symbol, cuda_version);
    result =
        *pfn != NULL ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  } else {
    for (size_t i = 0; i < sizeof(sim_procs) / sizeof(sim_procs[0]); i++) {
      if (strcmp(sim_procs[i].name, symbol) != 0) continue;
      if (cuda_version >= sim_procs[i].since) {
        *pfn = sim_procs[i].fn;
        result = CU_GET_PROC_ADDRESS_SUCCESS;
      } else {
        result = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      }
    }
  }
  if (status != NULL) *status = result;
  return *pfn != NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
