/* Device scans for libmpprof.so: the scan kernel of kernels/scan.cu, loaded
 * from the fatbin embedded in this library, launched on the op's own stream.
 *
 * Per CUDA context: the kernels (cuLibraryLoadData once, which the driver
 * loads into each context on first use; cuModuleLoadData per context where
 * the driver predates libraries), a ring of result slots (device record +
 * pinned host copy + event). Enqueue = memset the device record, launch,
 * copy back, record the event: five asynchronous driver calls, no sync, no
 * I/O. Batches by pointer array (cublas*Batched) are one launch for the whole
 * batch, the kernel reading each matrix's address from the device-resident
 * array: no copy of it to the host, no wait. A background thread polls the events in order and
 * hands each decoded record to the sink. A full ring drops the scan (-EBUSY) instead of waiting for
 * the GPU; the caller counts it. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/gpu.h"
#include "profiler/gpu/scan_plan.h"

/* Generated from kernels/scan.cu when device code is built (weak: absent otherwise). */
extern const unsigned char mpp_scan_fatbin[] __attribute__((weak, visibility("hidden")));
extern const size_t mpp_scan_fatbin_size __attribute__((weak, visibility("hidden")));

#define MAX_CTX 8
#define RING 64
#define BLOCK 256
#define MAX_PER_SM 8 /* 8 x 256 threads fill an SM */
#define DRAIN_TIMEOUT_NS 5000000000ull

/* FREE -> FILLING (enqueue in progress, invisible to pollers) -> PENDING
 * (event recorded) -> CLAIMED (one deliverer owns it) -> FREE. */
typedef enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_PENDING, SLOT_CLAIMED } slot_state;

typedef struct slot {
  slot_state state;
  mp_dtype dtype;
  CUevent ev;
  CUdeviceptr dev;        /* device mpp_scan_result */
  mpp_scan_result *host;  /* pinned copy */
  mpp_scan_params params; /* kept for decoding */
  mpp_scan_sink sink;     /* NULL: the enqueue failed part way, drop the result */
  void *cookie;
} slot;

typedef struct ctx_state {
  CUcontext ctx;
  bool ready, failed;
  CUfunction fn[MPP_SRC_COUNT];
  CUmodule module;
  int sms;
  int per_sm[MPP_SRC_COUNT]; /* resident blocks per SM for each kernel (<= MAX_PER_SM) */
  slot slots[RING];
} ctx_state;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static ctx_state g_ctx[MAX_CTX];
static int g_nctx;
static CUlibrary g_library;
static bool g_library_tried;
static int g_pending;
static bool g_thread_started;
static bool g_thread_entered; /* the poller runs poll_main (under g_mu) */
static mp_stats g_scratch;    /* decoding buffer, used under g_deliver_mu */
static pthread_mutex_t g_deliver_mu = PTHREAD_MUTEX_INITIALIZER;

static bool have_fatbin(void) {
  return mpp_scan_fatbin && &mpp_scan_fatbin_size && mpp_scan_fatbin_size > 0;
}

/* Kernels for the current context; called with g_mu held and ctx current. */
static bool load_kernels(const mpp_cu_api *cu, ctx_state *cs) {
  if (!g_library_tried && cu->library_load && cu->library_kernel) {
    g_library_tried = true;
    if (cu->library_load(&g_library, mpp_scan_fatbin, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS)
      g_library = NULL;
  }
  for (int s = 0; s < MPP_SRC_COUNT; s++) {
    const char *name = mpp_scan_kernel_name(s);
    CUkernel k = NULL;
    if (g_library && cu->library_kernel(&k, g_library, name) == CUDA_SUCCESS) {
      cs->fn[s] = (CUfunction)k; /* a CUkernel launches as a CUfunction (CUDA 12+) */
      continue;
    }
    if (!cs->module) {
      if (!cu->module_load || !cu->module_function ||
          cu->module_load(&cs->module, mpp_scan_fatbin) != CUDA_SUCCESS)
        return false;
    }
    if (cu->module_function(&cs->fn[s], cs->module, name) != CUDA_SUCCESS) return false;
  }
  return true;
}

static bool init_ctx(const mpp_cu_api *cu, ctx_state *cs) {
  if (!cu->event_create || !cu->mem_alloc || !cu->mem_alloc_host || !cu->launch ||
      !cu->memset_d8_async || !cu->memcpy_dtoh_async || !cu->event_record || !cu->event_query)
    return false;
  if (!load_kernels(cu, cs)) return false;
  CUdevice dev = 0;
  cs->sms = 0;
  if (cu->ctx_device && cu->ctx_device(&dev) == CUDA_SUCCESS && cu->device_attr)
    cu->device_attr(&cs->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  if (cs->sms <= 0) cs->sms = 16;
  /* One wave of resident blocks: a grid larger than what fits (registers
   * limit the kernels to ~5 blocks per SM on sm_90) leaves a partial second
   * wave that costs bandwidth. A CUkernel is accepted here as a CUfunction,
   * computed for the current context. */
  for (int s = 0; s < MPP_SRC_COUNT; s++) {
    int n = 0;
    if (!cu->occupancy || cu->occupancy(&n, cs->fn[s], BLOCK, 0) != CUDA_SUCCESS || n <= 0)
      n = MAX_PER_SM;
    cs->per_sm[s] = n < MAX_PER_SM ? n : MAX_PER_SM;
  }
  CUdeviceptr dbase = 0;
  void *hbase = NULL;
  size_t bytes = sizeof(mpp_scan_result) * RING;
  if (cu->mem_alloc(&dbase, bytes) != CUDA_SUCCESS) return false;
  if (cu->mem_alloc_host(&hbase, bytes) != CUDA_SUCCESS) {
    if (cu->mem_free) cu->mem_free(dbase);
    return false;
  }
  for (int i = 0; i < RING; i++) {
    slot *s = &cs->slots[i];
    s->dev = dbase + (CUdeviceptr)i * sizeof(mpp_scan_result);
    s->host = (mpp_scan_result *)hbase + i;
    if (cu->event_create(&s->ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS) return false;
  }
  return true;
}

/* State of the stream's context (created on first use), or NULL. g_mu held. */
static ctx_state *ctx_for(const mpp_cu_api *cu, CUstream stream, CUcontext *ret_ctx) {
  CUcontext ctx = NULL;
  if (cu->stream_ctx && cu->stream_ctx(stream, &ctx) != CUDA_SUCCESS) ctx = NULL;
  if (!ctx && (!cu->ctx_current || cu->ctx_current(&ctx) != CUDA_SUCCESS)) return NULL;
  if (!ctx) return NULL;
  *ret_ctx = ctx;
  for (int i = 0; i < g_nctx; i++)
    if (g_ctx[i].ctx == ctx) return g_ctx[i].ready ? &g_ctx[i] : NULL;
  if (g_nctx == MAX_CTX) return NULL;
  ctx_state *cs = &g_ctx[g_nctx++];
  cs->ctx = ctx;
  CUcontext cur = NULL;
  bool switched = cu->ctx_current && cu->ctx_current(&cur) == CUDA_SUCCESS && cur != ctx &&
                  cu->ctx_push && cu->ctx_push(ctx) == CUDA_SUCCESS;
  cs->ready = init_ctx(cu, cs);
  cs->failed = !cs->ready;
  if (switched && cu->ctx_pop) cu->ctx_pop(&cur);
  return cs->ready ? cs : NULL;
}

/* Decode a claimed slot's record into the sink, then free the slot. */
static void deliver(slot *s, bool ok) {
  pthread_mutex_lock(&g_deliver_mu);
  if (ok && s->sink) {
    mp_stats_init(&g_scratch, s->dtype);
    mpp_scan_finish(&s->params, s->host, &g_scratch);
    s->sink(s->cookie, &g_scratch);
  }
  pthread_mutex_unlock(&g_deliver_mu);
  pthread_mutex_lock(&g_mu);
  s->state = SLOT_FREE;
  g_pending--;
  pthread_mutex_unlock(&g_mu);
}

/* One pass over the pending slots: deliver those whose event completed.
 * Returns how many were delivered. */
static int poll_once(const mpp_cu_api *cu, bool drop_errors) {
  slot *done[MAX_CTX * RING];
  bool ok[MAX_CTX * RING];
  int n = 0;
  pthread_mutex_lock(&g_mu);
  for (int c = 0; c < g_nctx; c++) {
    if (!g_ctx[c].ready) continue;
    for (int i = 0; i < RING; i++) {
      slot *s = &g_ctx[c].slots[i];
      if (s->state != SLOT_PENDING) continue;
      CUresult r = cu->event_query(s->ev);
      if (r == CUDA_ERROR_NOT_READY) continue;
      /* Any other error (device lost, driver shut down): the scan is dropped. */
      if (r != CUDA_SUCCESS && !drop_errors) continue;
      s->state = SLOT_CLAIMED;
      done[n] = s;
      ok[n] = r == CUDA_SUCCESS;
      n++;
    }
  }
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < n; i++)
    deliver(done[i], ok[i]);
  return n;
}

static void *poll_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  g_thread_entered = true; /* its start-up is over: see start_thread_locked */
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  const mpp_cu_api *cu = mpp_cu();
  if (!cu) return NULL;
  mpp_cu_capture_relax(cu); /* our own thread: relaxed for good */
  for (;;) {
    pthread_mutex_lock(&g_mu);
    while (g_pending == 0)
      pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    if (poll_once(cu, true) == 0) {
      struct timespec ts = {0, 200000}; /* 0.2 ms: scans finish in microseconds */
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

static void start_thread_locked(void) {
  if (g_thread_started) return;
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  /* Block signals in the poller: the application's handlers stay on its threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  g_thread_started = pthread_create(&t, &attr, poll_main, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  /* Returns once the poller runs poll_main. Before, it is inside the C
   * library's and a sanitizer's thread start-up, which may hold their
   * internal locks (gcc 12's ASan: allocator, thread registry; no fork
   * handlers): a fork right after the hooked call would give a child that
   * hangs in malloc or in LeakSanitizer's exit check. */
  int cancel;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
  while (g_thread_started && !g_thread_entered)
    pthread_cond_wait(&g_cv, &g_mu);
  pthread_setcancelstate(cancel, NULL);
}

static unsigned grid_for(const ctx_state *cs, const mpp_scan_params *p) {
  mpp_scan_fmt f = mpp_scan_fmt_of(p->src);
  uint64_t work = p->flat ? p->n / (16 / (f.width / 8)) + 1 : p->n;
  uint64_t blocks = (work + BLOCK - 1) / BLOCK;
  uint64_t cap = (uint64_t)cs->sms * (uint64_t)cs->per_sm[p->src];
  if (blocks > cap) blocks = cap;
  return blocks ? (unsigned)blocks : 1;
}

/* Both entry points: a planned scan into a ring slot on the stream. */
static int enqueue_planned(const mpp_cu_api *cu, void *stream, const mp_view *view,
                           mpp_scan_params p, mpp_scan_sink sink, void *cookie) {
  if (p.n == 0) {
    /* Nothing to read: deliver the empty record without touching the GPU. */
    mp_stats empty;
    mp_stats_init(&empty, view->dtype);
    sink(cookie, &empty);
    return 0;
  }
  CUstreamCaptureMode mode = mpp_cu_capture_relax(cu);
  pthread_mutex_lock(&g_mu);
  CUcontext ctx = NULL;
  ctx_state *cs = ctx_for(cu, (CUstream)stream, &ctx);
  if (!cs) {
    pthread_mutex_unlock(&g_mu);
    mpp_cu_capture_restore(cu, mode);
    return -ENOSYS;
  }
  slot *s = NULL;
  for (int i = 0; i < RING && !s; i++)
    if (cs->slots[i].state == SLOT_FREE) s = &cs->slots[i];
  if (!s) {
    pthread_mutex_unlock(&g_mu);
    mpp_cu_capture_restore(cu, mode);
    return -EBUSY;
  }
  s->state = SLOT_FILLING;
  s->dtype = view->dtype;
  g_pending++;
  pthread_mutex_unlock(&g_mu);

  CUstream st = (CUstream)stream;
  p.result = (void *)(uintptr_t)s->dev;
  s->params = p;
  /* Copy back only what the source format can fill. */
  mpp_scan_fmt f = mpp_scan_fmt_of(p.src);
  size_t bins = p.patterns ? 256 : (size_t)f.nbins;
  size_t bytes = offsetof(mpp_scan_result, hist) + sizeof(s->host->hist[0]) * bins;
  void *args[] = {&s->params};
  CUcontext cur = NULL;
  bool switched = cu->ctx_current && cu->ctx_current(&cur) == CUDA_SUCCESS && cur != ctx &&
                  cu->ctx_push && cu->ctx_push(ctx) == CUDA_SUCCESS;
  bool ok = cu->memset_d8_async(s->dev, 0, bytes, st) == CUDA_SUCCESS &&
            cu->launch(cs->fn[p.src], grid_for(cs, &p), 1, 1, BLOCK, 1, 1, 0, st, args, NULL) ==
                CUDA_SUCCESS &&
            cu->memcpy_dtoh_async(s->host, s->dev, bytes, st) == CUDA_SUCCESS &&
            cu->event_record(s->ev, st) == CUDA_SUCCESS;
  if (switched && cu->ctx_pop) cu->ctx_pop(&cur);

  pthread_mutex_lock(&g_mu);
  /* After a failure part of the work may still be queued and write the slot:
   * it is freed only once its event (recorded now if possible; a never
   * recorded event reads as complete) says the stream passed it. */
  if (!ok && cu->event_record) cu->event_record(s->ev, st);
  s->sink = ok ? sink : NULL;
  s->cookie = cookie;
  s->state = SLOT_PENDING;
  start_thread_locked();
  pthread_cond_signal(&g_cv);
  pthread_mutex_unlock(&g_mu);
  mpp_cu_capture_restore(cu, mode);
  return ok ? 0 : -EIO;
}

int mpp_devscan_enqueue(void *stream, const mp_view *view, mpp_scan_sink sink, void *cookie) {
  if (!have_fatbin()) return -ENOSYS;
  const mpp_cu_api *cu = mpp_cu();
  if (!cu || !view || !sink) return -ENOSYS;
  mpp_scan_params p;
  if (mpp_scan_plan(view, &p) < 0) return -EINVAL;
  /* The kernel loads whole elements: a pointer not aligned to its element
   * size (no CUDA library produces one) would fault on the GPU. */
  if ((uintptr_t)view->data % mp_dtype_size(view->dtype) != 0) return -EINVAL;
  return enqueue_planned(cu, stream, view, p, sink, cookie);
}

int mpp_devscan_enqueue_ptrs(void *stream, const mp_view *view, const void *const *dev_ptrs,
                             mpp_scan_sink sink, void *cookie) {
  if (!have_fatbin()) return -ENOSYS;
  const mpp_cu_api *cu = mpp_cu();
  if (!cu || !view || !sink) return -ENOSYS;
  mpp_scan_params p;
  if (mpp_scan_plan_ptrs(view, dev_ptrs, &p) < 0) return -EINVAL;
  /* The array is read as pointers by the kernel. The matrices' own alignment
   * lives in device memory and is not checked here: cuBLAS requires every one
   * aligned (and reads them all), so a bad one faults its own kernels too. */
  if ((uintptr_t)dev_ptrs % sizeof(void *) != 0) return -EINVAL;
  return enqueue_planned(cu, stream, view, p, sink, cookie);
}

void mpp_devscan_drain(void) {
  const mpp_cu_api *cu = mpp_cu();
  if (!cu || !have_fatbin()) return;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  CUstreamCaptureMode mode = mpp_cu_capture_relax(cu);
  for (;;) {
    pthread_mutex_lock(&g_mu);
    int pending = g_pending;
    pthread_mutex_unlock(&g_mu);
    if (pending == 0) break;
    if (poll_once(cu, true) > 0) continue;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t el = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
                  (uint64_t)t0.tv_nsec;
    if (el > DRAIN_TIMEOUT_NS) break; /* a hung GPU must not hang the app's exit */
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  mpp_cu_capture_restore(cu, mode);
}
