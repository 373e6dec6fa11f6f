/* CUDA driver access for libmpprof.so: dlopen("libcuda.so.1"), resolve every
 * entry point through cuGetProcAddress (the driver's own versioned lookup, so
 * we get the ABI of the cuda.h we were built with), cuInit, and the small
 * queries the hooks need (pointer kind, graph capture, device name and CC).
 *
 * Nothing here may hurt the application: a missing or old driver, a failing
 * cuInit or a fork child all make mpp_cuda_available() false and every query
 * answer "unknown"; no I/O, no aborts, no device synchronisation. */
#include "profiler/gpu/cuda_driver.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "profiler/gpu/gpu.h"
#include "profiler/mpp.h"

typedef CUresult(CUDAAPI *get_proc_v2_fn)(const char *, void **, int, cuuint64_t,
                                          CUdriverProcAddressQueryResult *);
typedef CUresult(CUDAAPI *get_proc_v1_fn)(const char *, void **, int, cuuint64_t);

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static mpp_cu_api g_api;
static bool g_ok;     /* cuInit succeeded in this process */
static bool g_forked; /* we are a fork child: never touch the parent's CUDA state */
static int g_drv_version;
static atomic_bool g_started; /* driver_init ran (inherited by a fork child) */

static void on_fork_child(void) {
  g_forked = true;
}

/* One symbol: the driver's lookup first (it knows the _v2/_ptsz variants),
 * dlsym of the plain name as a fallback (stand-ins, very old drivers). */
static void *resolve(void *lib, get_proc_v2_fn gp2, get_proc_v1_fn gp1, const char *name,
                     int version) {
  void *fn = NULL;
  if (gp2) {
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (gp2(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st) == CUDA_SUCCESS &&
        st == CU_GET_PROC_ADDRESS_SUCCESS)
      return fn;
    return NULL; /* never dlsym then: the plain name may be an older ABI */
  }
  if (gp1) {
    if (gp1(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM) == CUDA_SUCCESS) return fn;
    return NULL;
  }
  return mpp_real_dlsym(lib, name); /* stand-ins without cuGetProcAddress */
}

static void driver_init(void) {
  atomic_store(&g_started, true);
  pthread_atfork(NULL, NULL, on_fork_child);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return;
  get_proc_v2_fn gp2 = (get_proc_v2_fn)mpp_real_dlsym(lib, "cuGetProcAddress_v2");
  get_proc_v1_fn gp1 = gp2 ? NULL : (get_proc_v1_fn)mpp_real_dlsym(lib, "cuGetProcAddress");
#define MPP_CU_RESOLVE(sym, member, version, ret, params)                                          \
  *(void **)&g_api.member = resolve(lib, gp2, gp1, #sym, version);
  MPP_CU_FUNCS(MPP_CU_RESOLVE)
#undef MPP_CU_RESOLVE
  /* The library stays loaded for the life of the process (the app uses it too). */
  if (!g_api.init || g_api.init(0) != CUDA_SUCCESS) return;
  if (g_api.driver_version) g_api.driver_version(&g_drv_version);
  g_ok = true;
}

bool mpp_cu_started(void) {
  return atomic_load(&g_started);
}

bool mpp_cu_loaded(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h); /* drops only the reference RTLD_NOLOAD added */
  return h != NULL;
}

const mpp_cu_api *mpp_cu(void) {
  /* A child forked after CUDA started (here or through the application)
   * never touches the parent's CUDA state. */
  if (g_forked || !mpp_cuda_ours()) return NULL;
  pthread_once(&g_once, driver_init);
  return g_ok && !g_forked ? &g_api : NULL;
}

int mpp_cuda_driver_version(void) {
  return mpp_cu() ? g_drv_version : 0;
}

CUstreamCaptureMode mpp_cu_capture_relax(const mpp_cu_api *cu) {
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  if (!cu || !cu->capture_mode_exchange || cu->capture_mode_exchange(&m) != CUDA_SUCCESS)
    return CU_STREAM_CAPTURE_MODE_RELAXED; /* nothing to restore */
  return m;
}

void mpp_cu_capture_restore(const mpp_cu_api *cu, CUstreamCaptureMode m) {
  if (m != CU_STREAM_CAPTURE_MODE_RELAXED && cu && cu->capture_mode_exchange)
    cu->capture_mode_exchange(&m);
}

bool mpp_cuda_available(void) {
  return mpp_cu() != NULL;
}

/* Allocations known to be device (or managed) memory, per thread: pointers
 * into them need no driver call. Only those kinds are kept: device virtual
 * addresses are the driver's reservation, so an address that was device
 * memory is never ordinary host memory later (freed and reallocated it is
 * device or managed memory again, which the device scanner reads alike). */
#define KIND_CACHE 16
static __thread __attribute__((tls_model("initial-exec"))) struct {
  uintptr_t start, end;
  mpp_mem_kind kind;
} t_kinds[KIND_CACHE];
static __thread __attribute__((tls_model("initial-exec"))) unsigned t_kinds_next;

static bool cached_kind(uintptr_t a, mpp_mem_kind *ret) {
  for (int i = 0; i < KIND_CACHE; i++)
    if (a >= t_kinds[i].start && a < t_kinds[i].end) {
      *ret = t_kinds[i].kind;
      return true;
    }
  return false;
}

static void cache_kind(uintptr_t start, size_t size, mpp_mem_kind kind) {
  if (!start || !size || start + size < start) return;
  unsigned i = t_kinds_next++ % KIND_CACHE;
  t_kinds[i].start = start;
  t_kinds[i].end = start + size;
  t_kinds[i].kind = kind;
}

mpp_mem_kind mpp_cuda_pointer_kind(const void *p) {
  const mpp_cu_api *cu = mpp_cu();
  if (!p) return MPP_MEM_UNKNOWN;
  if (!cu) return MPP_MEM_HOST; /* no driver: nothing can be device memory */
  mpp_mem_kind k;
  if (cached_kind((uintptr_t)p, &k)) return k;
  unsigned memtype = 0, managed = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  if (cu->ptr_attrs) {
    /* Unlike cuPointerGetAttribute, the plural form does not fail on plain
     * malloc'd memory: it leaves memory type 0. */
    CUpointer_attribute attrs[4] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
    void *data[4] = {&memtype, &managed, &start, &size};
    /* A driver that refuses the range attributes: kinds only, nothing cached. */
    if (cu->ptr_attrs(4, attrs, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS &&
        cu->ptr_attrs(2, attrs, data, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS)
      return MPP_MEM_UNKNOWN;
  } else if (cu->ptr_attr) {
    if (cu->ptr_attr(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p) !=
        CUDA_SUCCESS)
      return MPP_MEM_HOST; /* not known to the driver: ordinary host memory */
    cu->ptr_attr(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)(uintptr_t)p);
  } else {
    return MPP_MEM_UNKNOWN;
  }
  if (managed)
    k = MPP_MEM_MANAGED;
  else if (memtype == CU_MEMORYTYPE_DEVICE)
    k = MPP_MEM_DEVICE;
  else if (memtype == CU_MEMORYTYPE_HOST || memtype == 0)
    return MPP_MEM_HOST; /* pinned / registered, or unknown to the driver: pageable */
  else
    return MPP_MEM_UNKNOWN;
  if ((uintptr_t)start <= (uintptr_t)p && (uintptr_t)p - (uintptr_t)start < size)
    cache_kind((uintptr_t)start, size, k);
  return k;
}

bool mpp_cuda_stream_capturing(void *stream) {
  const mpp_cu_api *cu = mpp_cu();
  if (!cu || !cu->stream_is_capturing) return false; /* no driver: no graphs either */
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult r = cu->stream_is_capturing((CUstream)stream, &st);
  /* A special handle (NULL, legacy, per-thread) on a thread with no current
   * context names no stream yet (cuda.h, cuStreamGetCtx: such a thread gets
   * CUDA_ERROR_INVALID_CONTEXT for them): nothing of it is being captured. */
  if (r == CUDA_ERROR_INVALID_CONTEXT) return false;
  /* Another error (e.g. the legacy stream queried while another stream
   * captures in global mode) means enqueuing would break the capture: say yes. */
  if (r != CUDA_SUCCESS) return true;
  return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

int mpp_cuda_device_info(char *ret_name, size_t n, int *ret_cc_major, int *ret_cc_minor) {
  const mpp_cu_api *cu = mpp_cu();
  if (!cu || !cu->device_get || !cu->device_attr) return -ENOSYS;
  CUdevice dev = 0;
  if (!cu->ctx_device || cu->ctx_device(&dev) != CUDA_SUCCESS) {
    if (cu->device_get(&dev, 0) != CUDA_SUCCESS) return -ENODEV;
  }
  int major = 0, minor = 0;
  if (cu->device_attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) != CUDA_SUCCESS ||
      cu->device_attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) != CUDA_SUCCESS)
    return -EIO;
  if (ret_name && n > 0) {
    ret_name[0] = '\0';
    if (cu->device_name && n <= (size_t)INT32_MAX &&
        cu->device_name(ret_name, (int)n, dev) == CUDA_SUCCESS)
      ret_name[n - 1] = '\0';
    else
      ret_name[0] = '\0';
  }
  if (ret_cc_major) *ret_cc_major = major;
  if (ret_cc_minor) *ret_cc_minor = minor;
  return 0;
}

void *mpp_cu_mapped_host(const mpp_cu_api *cu, size_t bytes) {
  if (!cu->mem_host_register || !bytes) return NULL;
  void *h = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (h == MAP_FAILED) return NULL;
  if (cu->mem_host_register(h, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP) !=
      CUDA_SUCCESS) {
    munmap(h, bytes);
    return NULL;
  }
  return h;
}
