/* Device scans for libmpprof.so: the scan kernel of kernels/scan.cu, loaded
 * from the fatbin embedded in this library, launched on the op's own stream.
 *
 * One launch per op: all its tensors (each a flat/strided view or a batch by
 * device pointer array) go to the one kernel as descriptors passed by value.
 * Its blocks merge into per-context accumulators with atomics; the last block
 * to finish (atomic ticket) copies the finished records into a slot of a
 * ring in pinned host memory mapped into the device, zeroes the accumulators
 * for the slot's next launch and writes the launch's sequence number last.
 * No memset, no copy, no event: a background thread polls the sequence
 * numbers and hands each decoded record to its sink.
 *
 * Driver calls per scanned op, steady state: the caller's capture check
 * (call.c), and here the capture-mode switch to relaxed and back around the
 * launch, and the launch. The stream's context is cached per thread and
 * stream; the kernel finds its context's accumulators itself (a __device__
 * variable set once per context), so a stale cache entry cannot make it
 * touch another device's memory: it reports MPP_SCAN_NO_CTX, the scan is
 * dropped and the caches are refreshed. A full ring drops the scan (-EBUSY)
 * instead of waiting for the GPU; the caller counts it. */
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
#define RING 32 /* ops in flight (each up to MPP_SCAN_MAX_TENSORS tensors) */
#define BLOCK 256
#define MAX_PER_SM 8 /* 8 x 256 threads fill an SM */
#define CTX_CACHE 4  /* streams remembered per thread */
#define CTX_GLOBAL "mpp_scan_ctx_info"

/* Kernel parameters are limited to 4 KiB on every architecture mpprof builds for. */
_Static_assert(sizeof(mpp_scan_launch) <= 4096, "scan launch parameters too large");
_Static_assert(MPP_DEVSCAN_SCALARS == MPP_SCAN_MAX_SCALARS, "scalars per launch");

/* FREE -> FILLING (enqueue in progress, invisible to pollers) -> PENDING
 * (launched) -> CLAIMED (one deliverer owns it) -> FREE. */
typedef enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_PENDING, SLOT_CLAIMED } slot_state;

/* Host bookkeeping of ring slot i; its records are g_ring[i]. */
typedef struct slot {
  slot_state state;
  unsigned long long seq;
  int nt;
  mp_dtype dtype[MPP_SCAN_MAX_TENSORS];
  mpp_scan_params params[MPP_SCAN_MAX_TENSORS]; /* kept for decoding */
  mpp_scan_sink sink[MPP_SCAN_MAX_TENSORS];
  void *cookie[MPP_SCAN_MAX_TENSORS];
  unsigned scalars; /* mask of the launch's scalar[] set */
  mpp_scalar_sink scalar_sink;
  void *scalar_cookie;
} slot;

typedef struct ctx_state {
  CUcontext ctx;
  bool ready, from_library;
  CUfunction fn;
  CUmodule module;
  int sms, per_sm;
  CUdeviceptr ring_dev; /* g_ring as this context addresses it */
  CUdeviceptr acc;      /* RING accumulators (mpp_scan_acc) */
} ctx_state;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static ctx_state g_ctx[MAX_CTX];
static int g_nctx;
static CUlibrary g_library;
static bool g_library_tried;
static slot g_slots[RING];
static mpp_scan_slot *g_ring;   /* RING slots, pinned, portable, mapped */
static mpp_scan_ctx *g_staging; /* MAX_CTX entries after the ring: copied to the device */
static unsigned long long g_seq;
static int g_pending;
static unsigned g_epoch; /* bumped when a cached context proved wrong */
static bool g_thread_started;
static bool g_thread_entered; /* the poller runs poll_main (under g_mu) */
static mp_stats g_scratch;    /* decoding buffer, used under g_deliver_mu */
static pthread_mutex_t g_deliver_mu = PTHREAD_MUTEX_INITIALIZER;

/* The context of a stream, per thread: (stream, context state, epoch). */
static __thread __attribute__((tls_model("initial-exec"))) struct {
  CUstream stream;
  ctx_state *cs;
  unsigned epoch;
} t_ctx[CTX_CACHE];
static __thread __attribute__((tls_model("initial-exec"))) unsigned t_ctx_next;

static bool have_fatbin(void) {
  return mpp_scan_fatbin && &mpp_scan_fatbin_size && mpp_scan_fatbin_size > 0;
}

/* The fatbin as a context-independent library, once; g_mu held. */
static void load_library(const mpp_cu_api *cu) {
  if (g_library_tried) return;
  g_library_tried = true;
  if (cu->library_load(&g_library, mpp_scan_fatbin, NULL, NULL, 0, NULL, NULL, 0) != CUDA_SUCCESS)
    g_library = NULL;
}

/* The kernel and its per-context variable for the current context; g_mu held. */
static bool load_kernel(const mpp_cu_api *cu, ctx_state *cs, CUdeviceptr *ret_global) {
  size_t bytes = 0;
  if (cu->library_load && cu->library_kernel) load_library(cu);
  CUkernel k = NULL;
  if (g_library && cu->library_global &&
      cu->library_kernel(&k, g_library, mpp_scan_kernel_name()) == CUDA_SUCCESS &&
      cu->library_global(ret_global, &bytes, g_library, CTX_GLOBAL) == CUDA_SUCCESS) {
    cs->fn = (CUfunction)k; /* a CUkernel launches as a CUfunction (CUDA 12+) */
    cs->from_library = true;
  } else {
    if (!cu->module_load || !cu->module_function || !cu->module_global ||
        cu->module_load(&cs->module, mpp_scan_fatbin) != CUDA_SUCCESS ||
        cu->module_function(&cs->fn, cs->module, mpp_scan_kernel_name()) != CUDA_SUCCESS ||
        cu->module_global(ret_global, &bytes, cs->module, CTX_GLOBAL) != CUDA_SUCCESS)
      return false;
  }
  return bytes == sizeof(mpp_scan_ctx);
}

/* The ring, once per process: portable (every context may use it), mapped,
 * and mpprof's own memory (mpp_cu_mapped_host: it outlives a context reset). */
static bool alloc_ring(const mpp_cu_api *cu) {
  if (g_ring) return true;
  size_t bytes = sizeof(mpp_scan_slot) * RING + sizeof(mpp_scan_ctx) * MAX_CTX;
  void *h = mpp_cu_mapped_host(cu, bytes);
  if (!h) return false;
  g_ring = h;
  g_staging = (mpp_scan_ctx *)(g_ring + RING);
  return true;
}

/* Set up the current context (== cs->ctx): kernel, grid limits, mapped ring,
 * zeroed accumulators and the kernel's view of them, both written on
 * `stream` ahead of the first scan there (no synchronisation). g_mu held. */
static bool init_ctx(const mpp_cu_api *cu, ctx_state *cs, CUstream stream) {
  if (!cu->mem_alloc || !cu->mem_host_register || !cu->mem_host_device_ptr || !cu->launch ||
      !cu->memset_d8_async || !cu->memcpy_htod_async)
    return false;
  CUdeviceptr global = 0;
  if (!load_kernel(cu, cs, &global)) return false;
  CUdevice dev = 0;
  cs->sms = 0;
  if (cu->ctx_device && cu->ctx_device(&dev) == CUDA_SUCCESS && cu->device_attr)
    cu->device_attr(&cs->sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  if (cs->sms <= 0) cs->sms = 16;
  /* One wave of resident blocks: a grid larger than what fits leaves a
   * partial second wave that costs bandwidth. */
  int n = 0;
  if (!cu->occupancy || cu->occupancy(&n, cs->fn, BLOCK, 0) != CUDA_SUCCESS || n <= 0)
    n = MAX_PER_SM;
  cs->per_sm = n < MAX_PER_SM ? n : MAX_PER_SM;
  if (!alloc_ring(cu) || cu->mem_host_device_ptr(&cs->ring_dev, g_ring, 0) != CUDA_SUCCESS)
    return false;
  size_t bytes = sizeof(mpp_scan_acc) * RING;
  if (cu->mem_alloc(&cs->acc, bytes) != CUDA_SUCCESS) return false;
  mpp_scan_ctx *info = &g_staging[cs - g_ctx];
  info->acc = (mpp_scan_acc *)(uintptr_t)cs->acc;
  info->nslots = RING;
  info->check = mpp_scan_ctx_check(info);
  return cu->memset_d8_async(cs->acc, 0, bytes, stream) == CUDA_SUCCESS &&
         cu->memcpy_htod_async(global, info, sizeof *info, stream) == CUDA_SUCCESS;
}

/* State of the stream's context, created on first use; NULL when unusable. */
static ctx_state *ctx_lookup(const mpp_cu_api *cu, CUstream stream) {
  CUcontext ctx = NULL;
  if (cu->stream_ctx && cu->stream_ctx(stream, &ctx) != CUDA_SUCCESS) ctx = NULL;
  if (!ctx && (!cu->ctx_current || cu->ctx_current(&ctx) != CUDA_SUCCESS)) return NULL;
  if (!ctx) return NULL;
  pthread_mutex_lock(&g_mu);
  ctx_state *cs = NULL;
  for (int i = 0; i < g_nctx && !cs; i++)
    if (g_ctx[i].ctx == ctx) cs = &g_ctx[i];
  if (!cs && g_nctx < MAX_CTX) {
    cs = &g_ctx[g_nctx++];
    cs->ctx = ctx;
    CUcontext cur = NULL;
    bool switched = cu->ctx_current && cu->ctx_current(&cur) == CUDA_SUCCESS && cur != ctx &&
                    cu->ctx_push && cu->ctx_push(ctx) == CUDA_SUCCESS;
    cs->ready = init_ctx(cu, cs, stream);
    if (switched && cu->ctx_pop) cu->ctx_pop(&cur);
  }
  pthread_mutex_unlock(&g_mu);
  return cs && cs->ready ? cs : NULL;
}

/* The same through this thread's cache: no driver call once a stream is known. */
static ctx_state *ctx_for(const mpp_cu_api *cu, CUstream stream) {
  unsigned epoch = __atomic_load_n(&g_epoch, __ATOMIC_ACQUIRE);
  for (int i = 0; i < CTX_CACHE; i++)
    if (t_ctx[i].cs && t_ctx[i].stream == stream && t_ctx[i].epoch == epoch) return t_ctx[i].cs;
  ctx_state *cs = ctx_lookup(cu, stream);
  if (cs) {
    unsigned i = t_ctx_next++ % CTX_CACHE;
    t_ctx[i].stream = stream;
    t_ctx[i].cs = cs;
    t_ctx[i].epoch = epoch;
  }
  return cs;
}

static void forget_cached_contexts(void) {
  __atomic_add_fetch(&g_epoch, 1, __ATOMIC_RELEASE);
}

/* Decode a claimed slot's records into their sinks, then free the slot. */
static void deliver(slot *s) {
  const mpp_scan_slot *r = &g_ring[s - g_slots];
  pthread_mutex_lock(&g_deliver_mu);
  bool ok = r->status == MPP_SCAN_OK;
  if (ok) {
    for (int k = 0; k < s->nt; k++) {
      mp_stats_init(&g_scratch, s->dtype[k]);
      mpp_scan_finish(&s->params[k], &r->rec[k], &g_scratch);
      s->sink[k](s->cookie[k], &g_scratch);
    }
  } else {
    forget_cached_contexts(); /* it ran in a context mpprof had not set up */
  }
  if (s->scalars) {
    uint32_t bits[MPP_SCAN_MAX_SCALARS];
    memcpy(bits, r->scalar, sizeof bits);
    s->scalar_sink(s->scalar_cookie, bits, s->scalars, ok ? s->scalars : 0);
  }
  pthread_mutex_unlock(&g_deliver_mu);
  pthread_mutex_lock(&g_mu);
  s->state = SLOT_FREE;
  g_pending--;
  pthread_mutex_unlock(&g_mu);
}

/* One pass over the pending slots: deliver those whose launch finished
 * (the slot holds its sequence number). Returns how many were delivered. */
static int poll_once(void) {
  slot *done[RING];
  int n = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < RING; i++) {
    slot *s = &g_slots[i];
    if (s->state != SLOT_PENDING) continue;
    if (__atomic_load_n(&g_ring[i].seq, __ATOMIC_ACQUIRE) != s->seq) continue;
    s->state = SLOT_CLAIMED;
    done[n++] = s;
  }
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; i < n; i++)
    deliver(done[i]);
  return n;
}

static void *poll_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  g_thread_entered = true; /* its start-up is over: see start_thread_locked */
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
  long idle_ns = 200000;
  for (;;) {
    pthread_mutex_lock(&g_mu);
    while (g_pending == 0)
      pthread_cond_wait(&g_cv, &g_mu);
    pthread_mutex_unlock(&g_mu);
    if (poll_once() > 0) {
      idle_ns = 200000; /* 0.2 ms: scans finish in microseconds */
      continue;
    }
    /* A scan behind a long queue (or on a lost device) is polled less often. */
    struct timespec ts = {0, idle_ns};
    nanosleep(&ts, NULL);
    if (idle_ns < 10000000) idle_ns *= 2;
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

static uint64_t work_of(const mpp_scan_params *p) {
  mpp_scan_fmt f = mpp_scan_fmt_of(p->src);
  return p->flat ? p->n / (16 / (f.width / 8)) + 1 : p->n;
}

/* Blocks per tensor: one wave of resident blocks for the whole launch, shared
 * in proportion to the work, at least one each. Fills l->blk0; returns the grid. */
static unsigned split_grid(const ctx_state *cs, mpp_scan_launch *l) {
  uint64_t total = 0;
  for (unsigned k = 0; k < l->nt; k++)
    total += work_of(&l->t[k]);
  uint64_t blocks = (total + BLOCK - 1) / BLOCK;
  uint64_t cap = (uint64_t)cs->sms * (uint64_t)cs->per_sm;
  if (blocks > cap) blocks = cap;
  unsigned at = 0;
  for (unsigned k = 0; k < l->nt; k++) {
    uint64_t w = work_of(&l->t[k]);
    uint64_t b = total ? blocks * w / total : 1;
    uint64_t need = (w + BLOCK - 1) / BLOCK;
    if (b > need) b = need;
    l->blk0[k] = at;
    at += b ? (unsigned)b : 1;
  }
  l->blk0[l->nt] = at;
  return at;
}

static int plan_item(const mpp_devscan_item *it, mpp_scan_params *ret) {
  if (!it->sink) return -EINVAL;
  if (it->dev_ptrs) {
    if (mpp_scan_plan_ptrs(&it->view, it->dev_ptrs, ret) < 0) return -EINVAL;
    /* The array is read as pointers by the kernel. The matrices' own
     * alignment lives in device memory and is not checked here: cuBLAS
     * requires every one aligned (and reads them all). */
    if ((uintptr_t)it->dev_ptrs % sizeof(void *) != 0) return -EINVAL;
    return 0;
  }
  if (mpp_scan_plan(&it->view, ret) < 0) return -EINVAL;
  /* The kernel loads whole elements: a pointer not aligned to its element
   * size (no CUDA library produces one) would fault on the GPU. */
  if ((uintptr_t)it->view.data % mp_dtype_size(it->view.dtype) != 0) return -EINVAL;
  return 0;
}

/* One launch for the planned tensors l->t[0..nt) and the scalars l->scalar[]
 * into a free slot. */
static int launch_op(const mpp_cu_api *cu, CUstream st, mpp_scan_launch *l,
                     mpp_devscan_item *const *items, const mpp_devscan_scalars *scalars) {
  CUstreamCaptureMode mode = mpp_cu_capture_relax(cu);
  ctx_state *cs = ctx_for(cu, st);
  if (!cs) {
    mpp_cu_capture_restore(cu, mode);
    return -ENOSYS;
  }
  pthread_mutex_lock(&g_mu);
  slot *s = NULL;
  for (int i = 0; i < RING && !s; i++)
    if (g_slots[i].state == SLOT_FREE) s = &g_slots[i];
  if (!s) {
    pthread_mutex_unlock(&g_mu);
    mpp_cu_capture_restore(cu, mode);
    return -EBUSY;
  }
  s->state = SLOT_FILLING;
  s->seq = ++g_seq;
  g_pending++;
  pthread_mutex_unlock(&g_mu);

  int idx = (int)(s - g_slots);
  s->nt = (int)l->nt;
  for (unsigned k = 0; k < l->nt; k++) {
    s->params[k] = l->t[k];
    s->dtype[k] = items[k]->view.dtype;
    s->sink[k] = items[k]->sink;
    s->cookie[k] = items[k]->cookie;
  }
  s->scalars = 0;
  for (int i = 0; i < MPP_SCAN_MAX_SCALARS; i++)
    if (l->scalar[i]) s->scalars |= 1u << i;
  s->scalar_sink = s->scalars ? scalars->sink : NULL;
  s->scalar_cookie = s->scalars ? scalars->cookie : NULL;
  l->slot = (unsigned)idx;
  l->seq = s->seq;
  l->out = (mpp_scan_slot *)(uintptr_t)(cs->ring_dev + (CUdeviceptr)idx * sizeof(mpp_scan_slot));
  if (l->nt == 0) l->blk0[0] = 1; /* no tensor: one block reads the scalars */
  unsigned grid = l->nt ? split_grid(cs, l) : 1;
  void *args[] = {l};
  /* A CUkernel runs in the stream's context; a module's function (drivers
   * without libraries) needs its own context current. */
  CUcontext cur = NULL;
  bool switched = !cs->from_library && cu->ctx_current && cu->ctx_current(&cur) == CUDA_SUCCESS &&
                  cur != cs->ctx && cu->ctx_push && cu->ctx_push(cs->ctx) == CUDA_SUCCESS;
  bool ok = cu->launch(cs->fn, grid, 1, 1, BLOCK, 1, 1, 0, st, args, NULL) == CUDA_SUCCESS;
  if (switched && cu->ctx_pop) cu->ctx_pop(&cur);

  pthread_mutex_lock(&g_mu);
  if (ok) {
    s->state = SLOT_PENDING;
    start_thread_locked();
    pthread_cond_signal(&g_cv);
  } else {
    s->state = SLOT_FREE; /* nothing was queued */
    g_pending--;
  }
  pthread_mutex_unlock(&g_mu);
  if (!ok) forget_cached_contexts(); /* e.g. a module function of another context */
  mpp_cu_capture_restore(cu, mode);
  return ok ? 0 : -EIO;
}

/* The scalars into l->scalar[]: 0, or -EINVAL (nothing of them launched). */
static int plan_scalars(const mpp_devscan_scalars *sc, mpp_scan_launch *l) {
  int any = 0;
  for (int i = 0; i < MPP_SCAN_MAX_SCALARS; i++) {
    if (!sc->ptr[i]) continue;
    if (!sc->sink || (uintptr_t)sc->ptr[i] % sizeof(uint32_t) != 0) {
      memset(l->scalar, 0, sizeof l->scalar);
      return -EINVAL;
    }
    l->scalar[i] = sc->ptr[i];
    any = 1;
  }
  return any;
}

/* An empty record into an item's sink, decoded in the shared buffer as
 * deliver's: this runs inside the application's call, on its thread, whose
 * stack may be small (a record is 17 KB). */
static void deliver_empty(const mpp_devscan_item *it) {
  pthread_mutex_lock(&g_deliver_mu);
  mp_stats_init(&g_scratch, it->view.dtype);
  it->sink(it->cookie, &g_scratch);
  pthread_mutex_unlock(&g_deliver_mu);
}

int mpp_devscan_enqueue_op_scalars(void *stream, mpp_devscan_item *items, int n,
                                   mpp_devscan_scalars *scalars) {
  if (!have_fatbin()) {
    for (int i = 0; i < n; i++)
      items[i].rc = -ENOSYS;
    if (scalars) scalars->rc = -ENOSYS;
    return n || scalars ? -ENOSYS : 0;
  }
  const mpp_cu_api *cu = mpp_cu();
  mpp_scan_launch l;
  mpp_devscan_item *in[MPP_SCAN_MAX_TENSORS];
  memset(&l, 0, sizeof l);
  int first_rc = 0, nscalars = 0;
  if (scalars) {
    nscalars = !cu ? -ENOSYS : plan_scalars(scalars, &l);
    scalars->rc = nscalars < 0 ? nscalars : 0;
    if (nscalars < 0) first_rc = nscalars;
  }
  for (int i = 0; i < n; i++) {
    mpp_devscan_item *it = &items[i];
    mpp_scan_params p;
    it->rc = !cu ? -ENOSYS : l.nt == MPP_SCAN_MAX_TENSORS ? -E2BIG : plan_item(it, &p);
    if (it->rc == 0 && p.n == 0) {
      deliver_empty(it); /* nothing to read: no GPU work */
      continue;
    }
    p.saturates = it->saturates;
    if (it->rc == 0) {
      l.t[l.nt] = p;
      in[l.nt++] = it;
    } else if (!first_rc) {
      first_rc = it->rc;
    }
  }
  if (l.nt == 0 && nscalars <= 0) return first_rc;
  int rc = launch_op(cu, (CUstream)stream, &l, in, scalars);
  for (unsigned k = 0; k < l.nt; k++)
    in[k]->rc = rc;
  if (nscalars > 0) scalars->rc = rc;
  return first_rc ? first_rc : rc;
}

int mpp_devscan_enqueue_op(void *stream, mpp_devscan_item *items, int n) {
  return mpp_devscan_enqueue_op_scalars(stream, items, n, NULL);
}

int mpp_devscan_enqueue(void *stream, const mp_view *view, mpp_scan_sink sink, void *cookie) {
  if (!view) return -ENOSYS;
  mpp_devscan_item it = {.view = *view, .sink = sink, .cookie = cookie};
  return mpp_devscan_enqueue_op(stream, &it, 1);
}

int mpp_devscan_enqueue_ptrs(void *stream, const mp_view *view, const void *const *dev_ptrs,
                             mpp_scan_sink sink, void *cookie) {
  if (!view) return -ENOSYS;
  if (!dev_ptrs) return -EINVAL;
  mpp_devscan_item it = {.view = *view, .dev_ptrs = dev_ptrs, .sink = sink, .cookie = cookie};
  return mpp_devscan_enqueue_op(stream, &it, 1);
}

void mpp_devscan_drain(void) {
  if (!mpp_cu() || !have_fatbin()) return;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    pthread_mutex_lock(&g_mu);
    int pending = g_pending;
    pthread_mutex_unlock(&g_mu);
    if (pending == 0) break;
    if (poll_once() > 0) continue;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t el = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
                  (uint64_t)t0.tv_nsec;
    if (el > MPP_GPU_DRAIN_TIMEOUT_NS) break; /* a hung GPU must not hang the app's exit */
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
}

void *mpp_devscan_library_kernel(const char *name) {
  const mpp_cu_api *cu = mpp_cu();
  if (!cu || !have_fatbin() || !cu->library_load || !cu->library_kernel) return NULL;
  pthread_mutex_lock(&g_mu);
  load_library(cu);
  CUkernel k = NULL;
  if (g_library && cu->library_kernel(&k, g_library, name) != CUDA_SUCCESS) k = NULL;
  pthread_mutex_unlock(&g_mu);
  return k;
}
