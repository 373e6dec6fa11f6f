// A fake libcuda.so.1 for testing profiler/gpu/devscan.c without a GPU: the
// "device" is host memory, a library loaded from mpprof's fatbin (checked
// for the fatbin magic) yields the scan kernel and its per-context variable,
// and cuLaunchKernel runs the real kernels/scan.cu on the CPU
// (tests/gpu/simt_shim.h). Work runs at enqueue unless fakecuda_hold(1)
// queues it until fakecuda_hold(0) (to fill the result ring). cuMemAlloc'd
// ranges read as device memory in cuPointerGetAttributes, with their range
// (for the profiler's routing and its cache). The shadow kernels
// (kernels/shadow.cu) run the same way, always at enqueue; with the hold on,
// cuEventQuery answers "not ready" for every event, so results wait.
// Streams are tokens: work is never reordered, except that with
// fakecuda_lag(1) the work of streams created non-blocking (mpprof's private
// streams; the program's are created blocking in the tests) is queued until
// fakecuda_lag(0), with their events not ready: a device that runs the
// shadow's stream later than the program's, where the program's later writes
// to its memory (plain host writes here) come first. The fake libcublas.so.13
// queues its GEMMs on such streams through fakecuda_defer. Every entry point counts the
// calls of the calling thread (fakecuda_thread_calls). Entry points are found
// through cuGetProcAddress_v2, as the real driver's are.
#include "tests/gpu/simt_shim.h"

#include "kernels/scan.cu"
#include "kernels/shadow.cu"

#include "tests/gpu/simt_launch.h"

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <vector>
#include <string.h>
#include <sys/mman.h>

#include <cuda.h>

extern "C" {
#include "profiler/gpu/scan_plan.h"
}

#define API extern "C" __attribute__((visibility("default")))

static std::atomic<int> g_hold;
static std::atomic<int> g_launches;
static thread_local long t_calls; /* driver calls made by this thread */
static std::mutex g_held_mu;
static std::vector<mpp_scan_launch> g_held; /* launches queued while held */
static int g_ctx_token;
static CUcontext const g_ctx = (CUcontext)&g_ctx_token;

struct fake_event {
  bool recorded;
  std::atomic<int> pending; /* records queued on a lagging stream */
};

static std::atomic<int> g_lag;
static std::mutex g_lag_mu;
static std::vector<std::function<void()>> g_lagged; /* in enqueue order */
static int g_stream_tokens[64];
static unsigned g_stream_flags[64];
static std::atomic<int> g_streams;

static bool lagging(CUstream s) {
  if (!g_lag) return false;
  for (int i = 0; i < g_streams && i < 64; i++)
    if (s == (CUstream)&g_stream_tokens[i]) return g_stream_flags[i] & CU_STREAM_NON_BLOCKING;
  return false;
}
/* Run f now, or at fakecuda_lag(0) when s lags. */
static void on_stream(CUstream s, std::function<void()> f) {
  if (!lagging(s)) {
    f();
    return;
  }
  std::lock_guard<std::mutex> l(g_lag_mu);
  g_lagged.push_back(std::move(f));
}
API void fakecuda_lag(int on) {
  g_lag = on;
  if (on) return;
  std::vector<std::function<void()>> run;
  {
    std::lock_guard<std::mutex> l(g_lag_mu);
    run.swap(g_lagged);
  }
  for (auto &f : run)
    f();
}
/* For the fake cuBLAS: fn(arg) on stream s's turn; 1 when it was queued
 * (fn then runs later), 0 when the caller is to run it now. */
API int fakecuda_defer(CUstream s, void (*fn)(void *), void *arg) {
  if (!lagging(s)) return 0;
  on_stream(s, [fn, arg] { fn(arg); });
  return 1;
}

API void fakecuda_hold(int on) {
  g_hold = on;
  if (on) return;
  std::vector<mpp_scan_launch> run;
  {
    std::lock_guard<std::mutex> l(g_held_mu);
    run.swap(g_held);
  }
  for (const auto &l : run)
    launch(&l, l.blk0[l.nt]);
}
API long fakecuda_thread_calls(void) {
  return t_calls;
}
API int fakecuda_launches(void) {
  return g_launches;
}

/* Stream capture interaction mode, per thread as in the real driver. A call
 * that the real driver counts as "potentially unsafe" during another thread's
 * global-mode capture, made in a mode other than relaxed, is counted: mpprof
 * must never make one (it would invalidate the application's capture). */
static thread_local CUstreamCaptureMode t_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static std::atomic<int> g_unsafe;
static void unsafe_call(void) {
  if (t_mode != CU_STREAM_CAPTURE_MODE_RELAXED) g_unsafe++;
}
API int fakecuda_unsafe_calls(void) {
  return g_unsafe;
}
API int fakecuda_capture_mode(void) {
  return (int)t_mode;
}
static CUresult CUDAAPI f_capture_mode_exchange(CUstreamCaptureMode *m) {
  t_calls++;
  CUstreamCaptureMode old = t_mode;
  t_mode = *m;
  *m = old;
  return CUDA_SUCCESS;
}

static CUresult CUDAAPI f_init(unsigned) {
  t_calls++;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_driver_version(int *v) {
  t_calls++;
  *v = CUDA_VERSION;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_device_get(CUdevice *d, int i) {
  t_calls++;
  if (i != 0) return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_device_name(char *n, int len, CUdevice) {
  t_calls++;
  snprintf(n, (size_t)len, "fakecuda (CPU)");
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_device_attr(int *v, CUdevice_attribute a, CUdevice) {
  t_calls++;
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *v = 9;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *v = 0;
    break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *v = 1;
    break; /* grids of <= 8 blocks */
  default:
    return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_ctx_current(CUcontext *c) {
  t_calls++;
  *c = g_ctx;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_ctx_device(CUdevice *d) {
  t_calls++;
  *d = 0;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_stream_ctx(CUstream, CUcontext *c) {
  t_calls++;
  *c = g_ctx;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_stream_is_capturing(CUstream, CUstreamCaptureStatus *s) {
  t_calls++;
  *s = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_library_load(CUlibrary *lib, const void *code, CUjit_option *, void **,
                                       unsigned, CUlibraryOption *, void **, unsigned) {
  t_calls++;
  uint32_t magic;
  memcpy(&magic, code, 4);
  if (magic != 0xBA55ED50u) return CUDA_ERROR_INVALID_IMAGE;
  *lib = (CUlibrary)&g_ctx_token;
  return CUDA_SUCCESS;
}
/* Kernel handles: 1 the scan kernel, then the shadow kernels. */
enum { K_SCAN = 1, K_SH_COPY, K_SH_GATHER, K_SH_AMAX, K_SH_QUANT, K_SH_DOT16, K_SH_ERR };
static CUresult CUDAAPI f_library_kernel(CUkernel *k, CUlibrary, const char *name) {
  t_calls++;
  uintptr_t h = !strcmp(name, mpp_scan_kernel_name()) ? K_SCAN
                : !strcmp(name, "mpp_shadow_copy")    ? K_SH_COPY
                : !strcmp(name, "mpp_shadow_gather")  ? K_SH_GATHER
                : !strcmp(name, "mpp_shadow_amax")    ? K_SH_AMAX
                : !strcmp(name, "mpp_shadow_quant")   ? K_SH_QUANT
                : !strcmp(name, "mpp_shadow_dot16")   ? K_SH_DOT16
                : !strcmp(name, "mpp_shadow_err")     ? K_SH_ERR
                                                      : 0;
  if (!h) return CUDA_ERROR_NOT_FOUND;
  *k = (CUkernel)h;
  return CUDA_SUCCESS;
}
static std::atomic<int> g_shadow_launches;
API int fakecuda_shadow_launches(void) {
  return g_shadow_launches;
}
static CUresult shadow_launch(uintptr_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                              unsigned by, unsigned bz, unsigned smem, CUstream s, void **args,
                              void **extra) {
  if (gy != 1 || gz != 1 || bx != MPP_SH_BLOCK || by != 1 || bz != 1 || smem != 0 || extra ||
      !args || !args[0] || gx == 0)
    return CUDA_ERROR_INVALID_VALUE;
  unsafe_call();
  g_shadow_launches++;
  if (f == K_SH_COPY) {
    mpp_sh_copy_params p = *(const mpp_sh_copy_params *)args[0];
    on_stream(s, [gx, p] { simt_run(gx, MPP_SH_BLOCK, [&p] { mpp_shadow_copy(p); }); });
  } else if (f == K_SH_GATHER) {
    mpp_sh_gather_params p = *(const mpp_sh_gather_params *)args[0];
    on_stream(s, [gx, p] { simt_run(gx, MPP_SH_BLOCK, [&p] { mpp_shadow_gather(p); }); });
  } else if (f == K_SH_AMAX) {
    mpp_sh_amax_params p = *(const mpp_sh_amax_params *)args[0];
    on_stream(s, [gx, p] { simt_run(gx, MPP_SH_BLOCK, [&p] { mpp_shadow_amax(p); }); });
  } else if (f == K_SH_QUANT) {
    mpp_sh_quant_params p = *(const mpp_sh_quant_params *)args[0];
    on_stream(s, [gx, p] { simt_run(gx, MPP_SH_BLOCK, [&p] { mpp_shadow_quant(p); }); });
  } else if (f == K_SH_DOT16) {
    mpp_sh_dot_params p = *(const mpp_sh_dot_params *)args[0];
    on_stream(s, [gx, p] { simt_run(gx, MPP_SH_BLOCK, [&p] { mpp_shadow_dot16(p); }); });
  } else {
    mpp_sh_err_params p = *(const mpp_sh_err_params *)args[0];
    on_stream(s, [gx, p] { simt_run(gx, MPP_SH_BLOCK, [&p] { mpp_shadow_err(p); }); });
  }
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_library_global(CUdeviceptr *d, size_t *bytes, CUlibrary,
                                         const char *name) {
  t_calls++;
  if (strcmp(name, "mpp_scan_ctx_info")) return CUDA_ERROR_NOT_FOUND;
  *d = (CUdeviceptr)(uintptr_t)&mpp_scan_ctx_info;
  *bytes = sizeof mpp_scan_ctx_info;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                 unsigned by, unsigned bz, unsigned smem, CUstream s, void **args,
                                 void **extra) {
  t_calls++;
  if ((uintptr_t)f >= K_SH_COPY && (uintptr_t)f <= K_SH_ERR)
    return shadow_launch((uintptr_t)f, gx, gy, gz, bx, by, bz, smem, s, args, extra);
  const mpp_scan_launch *l = args ? (const mpp_scan_launch *)args[0] : NULL;
  if ((uintptr_t)f != K_SCAN || gy != 1 || gz != 1 || bx != MPP_BLOCK || by != 1 || bz != 1 ||
      smem != 0 || extra || !l || l->nt > MPP_SCAN_MAX_TENSORS || gx != l->blk0[l->nt])
    return CUDA_ERROR_INVALID_VALUE;
  unsafe_call();
  g_launches++;
  if (g_hold) {
    std::lock_guard<std::mutex> lk(g_held_mu);
    g_held.push_back(*l);
    return CUDA_SUCCESS;
  }
  launch(l, gx);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_alloc_host(void **p, size_t n) {
  t_calls++;
  unsafe_call();
  *p = calloc(1, n);
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
/* cuMemHostAlloc memory belongs to the context: fakecuda_destroy_contexts()
 * takes it away (unreadable), as cuCtxDestroy / cudaDeviceReset free it. */
static std::mutex g_host_mu;
static std::map<uintptr_t, size_t> g_host_allocs;
static CUresult CUDAAPI f_host_alloc(void **p, size_t n, unsigned) {
  t_calls++;
  unsafe_call();
  void *h = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (h == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  std::lock_guard<std::mutex> l(g_host_mu);
  g_host_allocs[(uintptr_t)h] = n;
  *p = h;
  return CUDA_SUCCESS;
}
API void fakecuda_destroy_contexts(void) {
  std::lock_guard<std::mutex> l(g_host_mu);
  for (auto &a : g_host_allocs)
    mprotect((void *)a.first, a.second, PROT_NONE);
}
/* cuMemHostRegister: the caller's memory, only flags checked (the mapping
 * needs DEVICEMAP; every context may use it with PORTABLE). */
static std::atomic<long> g_registered;
API long fakecuda_host_registered(void) {
  return g_registered;
}
static CUresult CUDAAPI f_host_register(void *p, size_t n, unsigned flags) {
  t_calls++;
  unsafe_call();
  if (!p || !n || !(flags & CU_MEMHOSTREGISTER_DEVICEMAP) || !(flags & CU_MEMHOSTREGISTER_PORTABLE))
    return CUDA_ERROR_INVALID_VALUE;
  g_registered++;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_host_device_ptr(CUdeviceptr *d, void *p, unsigned) {
  t_calls++;
  *d = (CUdeviceptr)(uintptr_t)p;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_htod_async(CUdeviceptr dst, const void *src, size_t n, CUstream) {
  t_calls++;
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_free_host(void *p) {
  t_calls++;
  {
    std::lock_guard<std::mutex> l(g_host_mu);
    auto it = g_host_allocs.find((uintptr_t)p);
    if (it != g_host_allocs.end()) {
      munmap(p, it->second);
      g_host_allocs.erase(it);
      return CUDA_SUCCESS;
    }
  }
  free(p);
  return CUDA_SUCCESS;
}
/* Live cuMemAlloc ranges: cuPointerGetAttributes says "device" inside them
 * (host memory otherwise), so mpprof routes them to the device scanner. */
static std::mutex g_alloc_mu;
static std::map<uintptr_t, size_t> g_allocs;
static CUresult CUDAAPI f_alloc(CUdeviceptr *p, size_t n) {
  t_calls++;
  unsafe_call();
  void *h = calloc(1, n);
  *p = (CUdeviceptr)(uintptr_t)h;
  if (h) {
    std::lock_guard<std::mutex> l(g_alloc_mu);
    g_allocs[(uintptr_t)h] = n;
  }
  return h ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static std::atomic<long> g_async_live; /* cuMemAllocAsync blocks not yet freed */
API long fakecuda_async_live(void) {
  return g_async_live;
}
/* cuMemAllocAsync takes the device's default pool, the program's: mpprof
 * allocates from a pool of its own (counted apart). */
static std::atomic<long> g_default_pool_allocs;
API long fakecuda_default_pool_allocs(void) {
  return g_default_pool_allocs;
}
static CUresult CUDAAPI f_alloc_async(CUdeviceptr *p, size_t n, CUstream) {
  CUresult r = f_alloc(p, n);
  if (r == CUDA_SUCCESS) g_async_live++, g_default_pool_allocs++;
  return r;
}
/* Pools: a token each; the internal-dependency reuse attribute as set (the
 * driver's default: 1); allocations only from a created pool. */
struct fake_pool {
  int internal_deps = 1;
  long allocs = 0;
};
static std::mutex g_pool_mu;
static std::vector<fake_pool *> g_pools;
static CUresult CUDAAPI f_pool_create(CUmemoryPool *pool, const CUmemPoolProps *props) {
  t_calls++;
  if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
      props->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> l(g_pool_mu);
  g_pools.push_back(new fake_pool);
  *pool = (CUmemoryPool)g_pools.back();
  return CUDA_SUCCESS;
}
static bool known_pool(CUmemoryPool pool) {
  std::lock_guard<std::mutex> l(g_pool_mu);
  for (fake_pool *p : g_pools)
    if ((CUmemoryPool)p == pool) return true;
  return false;
}
static CUresult CUDAAPI f_pool_set_attr(CUmemoryPool pool, CUmemPool_attribute attr, void *v) {
  t_calls++;
  if (!known_pool(pool) || !v) return CUDA_ERROR_INVALID_VALUE;
  if (attr == CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
    ((fake_pool *)pool)->internal_deps = *(int *)v;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_alloc_pool_async(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream) {
  if (!known_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = f_alloc(p, n);
  if (r == CUDA_SUCCESS) g_async_live++, ((fake_pool *)pool)->allocs++;
  return r;
}
/* Allocations from created pools that reuse blocks through inserted
 * dependencies (the attribute left on). */
API long fakecuda_pool_allocs_with_internal_deps(void) {
  std::lock_guard<std::mutex> l(g_pool_mu);
  long n = 0;
  for (fake_pool *p : g_pools)
    if (p->internal_deps) n += p->allocs;
  return n;
}
static void release(CUdeviceptr p) {
  {
    std::lock_guard<std::mutex> l(g_alloc_mu);
    g_allocs.erase((uintptr_t)p);
  }
  free((void *)(uintptr_t)p);
}
static CUresult CUDAAPI f_free_async(CUdeviceptr p, CUstream s) {
  t_calls++;
  on_stream(s, [p] {
    g_async_live--;
    release(p);
  });
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_free(CUdeviceptr p) {
  t_calls++;
  release(p);
  return CUDA_SUCCESS;
}
/* The live allocation holding p: its start and size, else false. */
static bool device_range(CUdeviceptr p, uintptr_t *start, size_t *size) {
  std::lock_guard<std::mutex> l(g_alloc_mu);
  auto it = g_allocs.upper_bound((uintptr_t)p);
  if (it == g_allocs.begin()) return false;
  --it;
  if ((uintptr_t)p >= it->first + it->second) return false;
  *start = it->first;
  *size = it->second;
  return true;
}
/* Like the real driver's plural form: memory unknown to it reads as type 0
 * (and range 0). */
static CUresult CUDAAPI f_ptr_attrs(unsigned n, CUpointer_attribute *attrs, void **data,
                                    CUdeviceptr p) {
  t_calls++;
  uintptr_t start = 0;
  size_t size = 0;
  bool dev = device_range(p, &start, &size);
  for (unsigned i = 0; i < n; i++) {
    if (attrs[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
      *(unsigned *)data[i] = dev ? CU_MEMORYTYPE_DEVICE : 0;
    else if (attrs[i] == CU_POINTER_ATTRIBUTE_IS_MANAGED)
      *(unsigned *)data[i] = 0;
    else if (attrs[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)
      *(CUdeviceptr *)data[i] = (CUdeviceptr)start;
    else if (attrs[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE)
      *(size_t *)data[i] = size;
  }
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_memset(CUdeviceptr p, unsigned char v, size_t n, CUstream s) {
  t_calls++;
  on_stream(s, [p, v, n] { memset((void *)(uintptr_t)p, v, n); });
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_dtoh(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  t_calls++;
  on_stream(s, [dst, src, n] { memcpy(dst, (const void *)(uintptr_t)src, n); });
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_event_create(CUevent *e, unsigned) {
  t_calls++;
  unsafe_call();
  *e = (CUevent) new fake_event{false, {0}};
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_event_record(CUevent e, CUstream s) {
  t_calls++;
  fake_event *ev = (fake_event *)e;
  ev->recorded = true;
  if (lagging(s)) {
    ev->pending++;
    on_stream(s, [ev] { ev->pending--; });
  }
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_event_query(CUevent e) {
  t_calls++;
  unsafe_call();
  return g_hold || ((fake_event *)e)->pending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

static CUresult CUDAAPI f_stream_create(CUstream *s, unsigned flags) {
  t_calls++;
  int i = g_streams;
  if (i >= 64) return CUDA_ERROR_OUT_OF_MEMORY;
  g_stream_flags[i] = flags;
  g_streams++;
  *s = (CUstream)&g_stream_tokens[i];
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_stream_destroy(CUstream) {
  t_calls++;
  return CUDA_SUCCESS;
}
static std::atomic<int> g_unrecorded_waits;
API int fakecuda_unrecorded_waits(void) {
  return g_unrecorded_waits;
}
static CUresult CUDAAPI f_stream_wait_event(CUstream, CUevent e, unsigned) {
  t_calls++;
  if (!((fake_event *)e)->recorded) g_unrecorded_waits++; /* a no-op for the real driver too */
  return CUDA_SUCCESS;
}

static const struct {
  const char *name;
  void *fn;
} k_api[] = {
    {"cuStreamCreate", (void *)f_stream_create},
    {"cuStreamDestroy", (void *)f_stream_destroy},
    {"cuStreamWaitEvent", (void *)f_stream_wait_event},
    {"cuMemAllocAsync", (void *)f_alloc_async},
    {"cuMemFreeAsync", (void *)f_free_async},
    {"cuMemPoolCreate", (void *)f_pool_create},
    {"cuMemPoolSetAttribute", (void *)f_pool_set_attr},
    {"cuMemAllocFromPoolAsync", (void *)f_alloc_pool_async},
    {"cuInit", (void *)f_init},
    {"cuDriverGetVersion", (void *)f_driver_version},
    {"cuDeviceGet", (void *)f_device_get},
    {"cuDeviceGetName", (void *)f_device_name},
    {"cuDeviceGetAttribute", (void *)f_device_attr},
    {"cuCtxGetCurrent", (void *)f_ctx_current},
    {"cuCtxGetDevice", (void *)f_ctx_device},
    {"cuStreamGetCtx", (void *)f_stream_ctx},
    {"cuStreamIsCapturing", (void *)f_stream_is_capturing},
    {"cuLibraryLoadData", (void *)f_library_load},
    {"cuLibraryGetKernel", (void *)f_library_kernel},
    {"cuLibraryGetGlobal", (void *)f_library_global},
    {"cuMemHostAlloc", (void *)f_host_alloc},
    {"cuMemHostRegister", (void *)f_host_register},
    {"cuMemHostGetDevicePointer", (void *)f_host_device_ptr},
    {"cuMemcpyHtoDAsync", (void *)f_htod_async},
    {"cuLaunchKernel", (void *)f_launch},
    {"cuMemAllocHost", (void *)f_alloc_host},
    {"cuMemFreeHost", (void *)f_free_host},
    {"cuMemAlloc", (void *)f_alloc},
    {"cuMemFree", (void *)f_free},
    {"cuPointerGetAttributes", (void *)f_ptr_attrs},
    {"cuMemsetD8Async", (void *)f_memset},
    {"cuMemcpyDtoHAsync", (void *)f_dtoh},
    {"cuEventCreate", (void *)f_event_create},
    {"cuEventRecord", (void *)f_event_record},
    {"cuEventQuery", (void *)f_event_query},
    {"cuThreadExchangeStreamCaptureMode", (void *)f_capture_mode_exchange},
};

/* Entry points whose signature changed: asking for the new ABI while calling
 * with the old parameters is a bug in the caller (counted for the test). */
static std::atomic<int> g_abi_errors;
API int fakecuda_abi_errors(void) {
  return g_abi_errors;
}

API CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t,
                                         CUdriverProcAddressQueryResult *status) {
  static const struct {
    const char *name;
    int changed_in;
  } changed[] = {{"cuCtxGetDevice", 13000}, {"cuCtxSynchronize", 13000}, {"cuStreamGetCtx", 12050}};
  for (const auto &c : changed)
    if (!strcmp(c.name, symbol) && version >= c.changed_in) g_abi_errors++;
  for (const auto &a : k_api)
    if (!strcmp(a.name, symbol)) {
      *pfn = a.fn;
      if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
      return CUDA_SUCCESS;
    }
  *pfn = NULL;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return CUDA_ERROR_NOT_FOUND;
}
