/* CUPTI activity for libmpprof.so: which kernels each hooked op launched.
 *
 * CUPTI is dlopen'ed (MPPROF_CUPTI names the library, or "off"; else the
 * already loaded or usual libcupti.so.13). Enabled: CONCURRENT_KERNEL, the
 * driver and runtime launch API records (external correlation records come
 * only with API records; cheapest is per cbid) and EXTERNAL_CORRELATION. Around every
 * hooked call the profiler pushes its op id as CUSTOM2 (PyTorch's profiler
 * uses CUSTOM0/1). Completed buffers are only queued by CUPTI's callback; a
 * background thread (or mpp_cupti_flush) parses them: external correlation
 * records fill a correlation id -> op id table, kernel records are matched
 * through it and handed to the sink. Kernels whose external record has not
 * arrived yet wait in a bounded list. mpprof's own scan kernels (mpp_scan_*)
 * are skipped. Everything lost on the way is counted in mpp_cupti_dropped(). */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "analysis/raw_format.h"
#include "profiler/gpu/cupti_program.h"
#include "profiler/gpu/gpu.h"
#include "profiler/mpp.h"

#define BUF_SIZE (4u << 20)
#define MAX_QUEUED 256   /* completed buffers waiting to be parsed */
#define CORR_SLOTS 65536 /* correlation id -> op id, direct mapped */
#define OWN_PREFIX "mpp_scan_"
#define SPARE_BUFS 2 /* parsed buffers kept for CUPTI's next requests */

/* X(symbol, member, parameters) */
#define CUPTI_FUNCS(X)                                                                             \
  X(cuptiSubscribe, subscribe, (CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))             \
  X(cuptiUnsubscribe, unsubscribe, (CUpti_SubscriberHandle))                                       \
  X(cuptiActivityRegisterCallbacks, register_callbacks,                                            \
    (CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))                         \
  X(cuptiActivityEnable, enable, (CUpti_ActivityKind))                                             \
  X(cuptiActivityDisable, disable, (CUpti_ActivityKind))                                           \
  X(cuptiActivityEnableDriverApi, enable_driver_api, (CUpti_CallbackId, uint8_t))                  \
  X(cuptiActivityEnableRuntimeApi, enable_runtime_api, (CUpti_CallbackId, uint8_t))                \
  X(cuptiActivityFlushAll, flush_all, (uint32_t))                                                  \
  X(cuptiActivityGetNextRecord, next_record, (uint8_t *, size_t, CUpti_Activity **))               \
  X(cuptiActivityGetNumDroppedRecords, num_dropped, (CUcontext, uint32_t, size_t *))               \
  X(cuptiActivityPushExternalCorrelationId, push_ext, (CUpti_ExternalCorrelationKind, uint64_t))   \
  X(cuptiActivityPopExternalCorrelationId, pop_ext, (CUpti_ExternalCorrelationKind, uint64_t *))

static struct {
#define CUPTI_MEMBER(sym, member, params) CUptiResult(*member) params;
  CUPTI_FUNCS(CUPTI_MEMBER)
#undef CUPTI_MEMBER
} api;

typedef struct queued_buf {
  uint8_t *buf;
  size_t valid;
} queued_buf;

typedef struct waiting_kernel {
  uint32_t corr;
  char *name;
  uint64_t start, end;
  uint32_t stream;
} waiting_kernel;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void *g_handle; /* shared with tc_counters.c (range profiler, same library) */
/* Written under g_reg_mu (start_once, the program's registration), read
 * anywhere (the raw writer, tc_counters.c). */
static _Atomic(const char *) g_status = "unavailable";
static atomic_bool g_active; /* push/pop are live */
/* The buffer callbacks, one pair per process (mpp_cupti_program_registers):
 * whose they are, under g_reg_mu. */
static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
/* This thread holds g_reg_mu: an exit() its signal handler calls there must
 * not flush (mpp_cupti_flush), nor wait for it. */
static __thread MPP_TLS bool g_reg_held_here;
static bool g_program_registered;  /* before mpprof's: CUPTI is the program's */
static bool g_program_registering; /* the program's real call is under way */
static bool g_registered;          /* mpprof's pair is registered */
static atomic_bool g_taken;        /* the program's pair replaced mpprof's */

/* What mpprof enables (start_once): the launch API records its kernels are
 * correlated through, driver's and runtime's, ... */
static const CUpti_CallbackId own_driver_cbids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};
static const CUpti_CallbackId own_runtime_cbids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
#define OWN_CBIDS 8
_Static_assert(sizeof own_driver_cbids / sizeof own_driver_cbids[0] == OWN_CBIDS, "one bit each");
_Static_assert(sizeof own_runtime_cbids / sizeof own_runtime_cbids[0] == OWN_CBIDS, "one bit each");
enum { OWN_DRIVER, OWN_RUNTIME };
/* ... which of them it did enable (bits), and whether the whole DRIVER kind
 * instead (under g_reg_mu); and what the program enabled itself, so that
 * mpprof, stepping aside, turns off only its own. */
static uint8_t g_own_cbids[2], g_program_cbids[2];
static bool g_own_driver_kind;
static bool g_program_kinds[CUPTI_ACTIVITY_KIND_COUNT];
static mpp_kernel_sink g_sink;
static atomic_uint_fast64_t g_dropped_own; /* lost by mpprof itself */
/* CUPTI's own count, asked at each flush (mpp_cupti_flush): the raw writer
 * reads it under locks held across fork, where CUPTI must not be called. */
static atomic_uint_fast64_t g_dropped_cupti;

static pthread_mutex_t g_qmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_qcv = PTHREAD_COND_INITIALIZER;
static queued_buf g_queue[MAX_QUEUED];
static int g_qhead, g_qlen;
static int g_inflight;        /* taken from the queue, not yet parsed */
static bool g_parser_entered; /* the parser runs parser_main (under g_qmu) */

/* Parsing state: used by one parser at a time. */
static pthread_mutex_t g_pmu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  uint32_t corr;
  uint64_t op;
} g_corr[CORR_SLOTS];
static waiting_kernel g_wait[MPP_CUPTI_MAX_WAITING];
static int g_nwait;

/* Parsed buffers handed back to CUPTI instead of freed: a fresh 4 MiB
 * allocation is a new mapping whose every page faults on first write (about
 * a thousand faults per buffer). Under g_qmu. */
static uint8_t *g_spare[SPARE_BUFS];
static int g_nspare;

static uint8_t *spare_take(void) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&g_qmu);
  if (g_nspare > 0) b = g_spare[--g_nspare];
  pthread_mutex_unlock(&g_qmu);
  return b;
}

static void spare_put(uint8_t *b) {
  pthread_mutex_lock(&g_qmu);
  if (g_nspare < SPARE_BUFS) {
    g_spare[g_nspare++] = b;
    b = NULL;
  }
  pthread_mutex_unlock(&g_qmu);
  free(b);
}

static void reg_lock(void) {
  pthread_mutex_lock(&g_reg_mu);
  g_reg_held_here = true;
}

static void reg_unlock(void) {
  g_reg_held_here = false;
  pthread_mutex_unlock(&g_reg_mu);
}

static void on_fork_child(void) {
  atomic_store(&g_active, false); /* the child never touches the parent's CUPTI */
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  *buf = spare_take();
  if (!*buf) *buf = aligned_alloc(8, BUF_SIZE);
  *size = *buf ? BUF_SIZE : 0;
  *max_records = 0;
}

/* CUPTI's thread (or the flushing one): queue only, parse elsewhere. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  if (!buf) return;
  if (valid == 0) {
    spare_put(buf);
    return;
  }
  pthread_mutex_lock(&g_qmu);
  if (g_qlen == MAX_QUEUED) {
    pthread_mutex_unlock(&g_qmu);
    atomic_fetch_add(&g_dropped_own,
                     1); /* a whole buffer; its records are not counted one by one */
    free(buf);
    return;
  }
  g_queue[(g_qhead + g_qlen++) % MAX_QUEUED] = (queued_buf){buf, valid};
  pthread_cond_broadcast(&g_qcv); /* the parser, and a flush waiting for it, share the cv */
  pthread_mutex_unlock(&g_qmu);
}

static bool take_buffer(queued_buf *ret, bool wait) {
  pthread_mutex_lock(&g_qmu);
  while (wait && g_qlen == 0)
    pthread_cond_wait(&g_qcv, &g_qmu);
  bool got = g_qlen > 0;
  if (got) {
    *ret = g_queue[g_qhead];
    g_qhead = (g_qhead + 1) % MAX_QUEUED;
    g_qlen--;
    g_inflight++;
  }
  pthread_mutex_unlock(&g_qmu);
  return got;
}

static void buffer_done(void) {
  pthread_mutex_lock(&g_qmu);
  g_inflight--;
  pthread_cond_broadcast(&g_qcv);
  pthread_mutex_unlock(&g_qmu);
}

static bool lookup(uint32_t corr, uint64_t *ret_op) {
  unsigned i = corr % CORR_SLOTS;
  if (g_corr[i].corr != corr || corr == 0) return false;
  *ret_op = g_corr[i].op;
  return true;
}

static void emit(uint64_t op, const char *name, uint64_t start, uint64_t end, uint32_t stream) {
  if (g_sink) g_sink(op, name, start, end, stream);
}

/* Kernels that waited for their external record: deliver the matched ones
 * (or all, at flush, with op id 0 = not attributed). g_pmu held. */
static void settle_waiting(bool all) {
  int kept = 0;
  for (int i = 0; i < g_nwait; i++) {
    waiting_kernel *w = &g_wait[i];
    uint64_t op = 0;
    if (lookup(w->corr, &op) || all) {
      emit(op, w->name, w->start, w->end, w->stream);
      free(w->name);
    } else {
      g_wait[kept++] = *w;
    }
  }
  g_nwait = kept;
}

/* The list is full of kernels no external record has claimed: almost all
 * of them were launched outside every hooked call (an elementwise kernel, a
 * cuBLAS routine mpprof does not hook, a graph replay), whose record never
 * comes. Dropping the newest would stop counting those at the list's size
 * between two flushes; the oldest quarter goes out unattributed instead (a
 * hooked call's external record is written at its launch, before its
 * kernel can complete). g_pmu held. */
static void evict_oldest(void) {
  enum { EVICT = MPP_CUPTI_MAX_WAITING / 4 };
  for (int i = 0; i < EVICT; i++) {
    emit(0, g_wait[i].name, g_wait[i].start, g_wait[i].end, g_wait[i].stream);
    free(g_wait[i].name);
  }
  g_nwait -= EVICT;
  memmove(g_wait, g_wait + EVICT, (size_t)g_nwait * sizeof *g_wait);
}

static void on_kernel(const CUpti_ActivityKernel10 *k) {
  const char *name = k->name ? k->name : "";
  if (strncmp(name, OWN_PREFIX, sizeof OWN_PREFIX - 1) == 0) return;
  uint64_t op = 0;
  if (lookup(k->correlationId, &op)) {
    emit(op, name, k->start, k->end, k->streamId);
    return;
  }
  if (g_nwait == MPP_CUPTI_MAX_WAITING) settle_waiting(false);
  if (g_nwait == MPP_CUPTI_MAX_WAITING) evict_oldest();
  char *copy = strdup(name); /* the buffer is freed before the record may be matched */
  if (!copy) {
    atomic_fetch_add(&g_dropped_own, 1);
    return;
  }
  g_wait[g_nwait++] = (waiting_kernel){k->correlationId, copy, k->start, k->end, k->streamId};
}

/* Records are taken from the buffer by CUPTI (cuptiActivityGetNextRecord)
 * without g_pmu, a batch at a time, and handled under it: g_pmu is held
 * across fork (mpp_cupti_fork_prepare), so no call into CUPTI may wait
 * while holding it. CUPTI's (or the driver's) own fork handler, registered
 * after mpprof's, runs before it and may hold a lock of CUPTI's that such a
 * call needs: the fork would wait for g_pmu, its holder for CUPTI's lock.
 * The records stay in the buffer, which this parser owns until spare_put. */
#define PARSE_BATCH 64

static void parse(const queued_buf *q) {
  CUpti_Activity *rec = NULL;
  bool more = true;
  while (more) {
    const CUpti_Activity *batch[PARSE_BATCH];
    int n = 0;
    while (n < PARSE_BATCH && (more = api.next_record(q->buf, q->valid, &rec) == CUPTI_SUCCESS))
      batch[n++] = rec;
    pthread_mutex_lock(&g_pmu);
    for (int b = 0; b < n; b++) {
      const CUpti_Activity *r = batch[b];
      if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)r;
        if (x->externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2) continue;
        unsigned i = x->correlationId % CORR_SLOTS;
        g_corr[i].corr = x->correlationId;
        g_corr[i].op = x->externalId;
      } else if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
                 r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        on_kernel((const CUpti_ActivityKernel10 *)r);
      }
    }
    if (!more) {
      if (g_nwait) settle_waiting(false);
      spare_put(q->buf); /* still under g_pmu: a fork waits for every allocator call of a parse */
    }
    pthread_mutex_unlock(&g_pmu);
  }
  buffer_done();
}

static void *parser_main(void *arg) {
  (void)arg;
  queued_buf q;
  pthread_mutex_lock(&g_qmu);
  g_parser_entered = true; /* its start-up is over: see start_once */
  pthread_cond_broadcast(&g_qcv);
  pthread_mutex_unlock(&g_qmu);
  for (;;)
    if (take_buffer(&q, true)) parse(&q);
  return NULL;
}

/* Set by mpp_cupti_start before start_once runs (mpp_config's MPPROF_CUPTI
 * and CUDA_HOME). */
static const char *g_library, *g_cuda_home;

static void *open_cupti(void) {
  if (g_library && *g_library) return dlopen(g_library, RTLD_NOW | RTLD_LOCAL);
  static const char *const names[] = {
      "libcupti.so.13",
      "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13",
      "/usr/local/cuda/lib64/libcupti.so.13",
      "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13",
  };
  /* One already in the process (the app's) first: two copies must not fight. */
  void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++)
    h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  /* The path on the heap: a buffer here would sit on the stack under every
   * dlopen above, in the first hooked call, on the application's thread. */
  char *path = NULL;
  if (!h && g_cuda_home && *g_cuda_home &&
      asprintf(&path, "%s/extras/CUPTI/lib64/libcupti.so.13", g_cuda_home) > 0)
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  free(path);
  return h;
}

/* The subscription's callback: no callback is ever enabled. */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *data) {
  (void)userdata;
  (void)domain;
  (void)cbid;
  (void)data;
}

static const char *status_of(CUptiResult r) {
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) return "held_by_other_subscriber";
  return "error";
}

static void step_aside(void);

static void start_once(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
  if (g_library && (!strcmp(g_library, "off") || !strcmp(g_library, "0"))) {
    atomic_store(&g_status, "disabled");
    return;
  }
  void *h = open_cupti();
  if (!h) return; /* "unavailable" */
  g_handle = h;
  /* The C library's dlsym: libmpprof's own answers a lookup on libcupti's
   * handle of a hooked name with the hook (dlsym.c), which would take this
   * registration for the program's. */
#define CUPTI_RESOLVE(sym, member, params) *(void **)&api.member = mpp_real_dlsym(h, #sym);
  CUPTI_FUNCS(CUPTI_RESOLVE)
#undef CUPTI_RESOLVE
  if (!api.subscribe || !api.unsubscribe || !api.register_callbacks || !api.enable ||
      !api.disable || !api.flush_all || !api.next_record || !api.push_ext || !api.pop_ext)
    return;
  /* CUPTI serves one client at a time, and each must subscribe before its
   * first other call (cupti_callbacks.h, cuptiSubscribe): the subscription
   * is how a client finds CUPTI taken (another in-process profiler, or the
   * program running under Nsight Systems / Compute, cuda-gdb), and how it
   * keeps the next one out. The activity calls themselves would succeed and
   * share, and overwrite, the one set of buffer callbacks. Held for the life
   * of the process; no callback is enabled. */
  /* A program that registered buffer callbacks of its own without
   * subscribing uses the activity API itself: registering mpprof's would take
   * its records. g_reg_mu is held from here to the end of the set-up, so the
   * program's registration on another thread comes before or after it whole. */
  reg_lock();
  if (g_program_registered) {
    atomic_store(&g_status, MP_CUPTI_HELD_BY_PROGRAM);
    reg_unlock();
    return;
  }
  CUpti_SubscriberHandle sub = NULL;
  CUptiResult r = api.subscribe(&sub, on_callback, NULL);
  if (r != CUPTI_SUCCESS) {
    atomic_store(&g_status, status_of(r));
    reg_unlock();
    return;
  }
  r = api.register_callbacks(buffer_requested, buffer_completed);
  g_registered = r == CUPTI_SUCCESS;
  if (r == CUPTI_SUCCESS) r = api.enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (r == CUPTI_SUCCESS) {
    for (size_t i = 0; i < OWN_CBIDS && r == CUPTI_SUCCESS; i++) {
      r = api.enable_driver_api ? api.enable_driver_api(own_driver_cbids[i], 1)
                                : CUPTI_ERROR_NOT_SUPPORTED;
      if (r == CUPTI_SUCCESS) g_own_cbids[OWN_DRIVER] |= (uint8_t)(1u << i);
    }
    /* Without per-cbid control: all driver API records (more, but correct). */
    if (r == CUPTI_ERROR_NOT_SUPPORTED || r == CUPTI_ERROR_INVALID_PARAMETER) {
      r = api.enable(CUPTI_ACTIVITY_KIND_DRIVER);
      g_own_driver_kind = r == CUPTI_SUCCESS;
    }
    /* Launches through a CUDA runtime (cuBLAS/cuDNN carry a static one; Kineto
     * traces e.g. cuBLAS's addmm kernels under cudaLaunchKernelExC) are runtime
     * API records: their kernels carry the runtime call's correlation id, and
     * only with these records enabled does CUPTI emit the external
     * correlation that ties them to the op. Optional: without per-cbid
     * runtime control only driver launches are attributed. */
    for (size_t i = 0; r == CUPTI_SUCCESS && api.enable_runtime_api && i < OWN_CBIDS; i++) {
      if (api.enable_runtime_api(own_runtime_cbids[i], 1) != CUPTI_SUCCESS) break;
      g_own_cbids[OWN_RUNTIME] |= (uint8_t)(1u << i);
    }
  }
  if (r == CUPTI_SUCCESS) r = api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    atomic_store(&g_status, status_of(r));
    /* CUPTI's activity settings are process-wide: the next client (the
     * application's own profiler, which may subscribe once mpprof has let
     * go) would otherwise get records it never asked for. */
    step_aside();         /* CUPTI as mpprof found it */
    api.unsubscribe(sub); /* not using CUPTI: another client may */
    reg_unlock();
    return;
  }
  pthread_attr_t attr;
  pthread_t t;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool started = pthread_create(&t, &attr, parser_main, NULL) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&attr);
  /* Without the thread, buffers are parsed at flush only: still correct.
   * With it: returns once the thread runs parser_main. Before, it is inside
   * the C library's and a sanitizer's thread start-up, which may hold their
   * internal locks (gcc 12's ASan: allocator, thread registry; no fork
   * handlers): a fork then, right after the hooked call that started CUPTI,
   * gives a child that hangs in malloc or in LeakSanitizer's exit check. */
  if (started) {
    int cancel;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
    pthread_mutex_lock(&g_qmu);
    while (!g_parser_entered)
      pthread_cond_wait(&g_qcv, &g_qmu);
    pthread_mutex_unlock(&g_qmu);
    pthread_setcancelstate(cancel, NULL);
  }
  atomic_store(&g_status, "ok");
  atomic_store(&g_active, true);
  reg_unlock();
}

/* The records mpprof enabled and the program did not are turned off: its
 * buffers hold what it asked for. Under g_reg_mu. */
static void step_aside(void) {
  if (!g_program_kinds[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION])
    (void)api.disable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  if (!g_program_kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL])
    (void)api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (g_own_driver_kind && !g_program_kinds[CUPTI_ACTIVITY_KIND_DRIVER])
    (void)api.disable(CUPTI_ACTIVITY_KIND_DRIVER);
  for (int i = 0; i < OWN_CBIDS; i++) {
    uint8_t bit = (uint8_t)(1u << i);
    if ((g_own_cbids[OWN_DRIVER] & bit) && !(g_program_cbids[OWN_DRIVER] & bit) &&
        !g_program_kinds[CUPTI_ACTIVITY_KIND_DRIVER])
      (void)api.enable_driver_api(own_driver_cbids[i], 0);
    if ((g_own_cbids[OWN_RUNTIME] & bit) && !(g_program_cbids[OWN_RUNTIME] & bit) &&
        !g_program_kinds[CUPTI_ACTIVITY_KIND_RUNTIME])
      (void)api.enable_runtime_api(own_runtime_cbids[i], 0);
  }
}

void mpp_cupti_program_enabled(CUpti_ActivityKind kind, bool on) {
  if ((int)kind <= 0 || (int)kind >= CUPTI_ACTIVITY_KIND_COUNT) return;
  reg_lock();
  g_program_kinds[kind] = on;
  reg_unlock();
}

void mpp_cupti_program_enabled_api(bool driver, CUpti_CallbackId cbid, bool on) {
  const CUpti_CallbackId *own = driver ? own_driver_cbids : own_runtime_cbids;
  uint8_t *set = &g_program_cbids[driver ? OWN_DRIVER : OWN_RUNTIME];
  reg_lock();
  for (int i = 0; i < OWN_CBIDS; i++)
    if (own[i] == cbid) *set = on ? (uint8_t)(*set | (1u << i)) : (uint8_t)(*set & ~(1u << i));
  reg_unlock();
}

CUptiResult mpp_cupti_program_registers(__typeof__(&cuptiActivityRegisterCallbacks) real,
                                        CUpti_BuffersCallbackRequestFunc requested,
                                        CUpti_BuffersCallbackCompleteFunc completed) {
  reg_lock();
  bool handover = atomic_load(&g_active);
  /* The buffers CUPTI holds are mpprof's, with records of kinds mpprof
   * enabled: completed to mpprof, never handed to the program's callback. */
  if (handover) api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  g_program_registering = true;
  CUptiResult r = real(requested, completed);
  g_program_registering = false;
  if (r == CUPTI_SUCCESS && !g_registered) g_program_registered = true;
  if (r == CUPTI_SUCCESS && handover) {
    /* No more pushes, and no flush of mpprof's (it would call the program's
     * callback at a moment the program did not choose, at exit after its own
     * teardown); what was queued is still parsed. */
    atomic_store(&g_taken, true);
    atomic_store(&g_active, false);
    atomic_store(&g_status, MP_CUPTI_TAKEN_BY_PROGRAM);
    step_aside();
  }
  reg_unlock();
  return r;
}

void mpp_cupti_set_sink(mpp_kernel_sink sink) {
  pthread_mutex_lock(&g_pmu);
  g_sink = sink;
  pthread_mutex_unlock(&g_pmu);
}

void mpp_cupti_start(const char *library, const char *cuda_home) {
  pthread_mutex_lock(&g_qmu);
  if (!g_library) g_library = library ? library : "";
  if (!g_cuda_home) g_cuda_home = cuda_home ? cuda_home : "";
  pthread_mutex_unlock(&g_qmu);
  pthread_once(&g_once, start_once);
}

/* The parse lock is held across fork (runtime.c's atfork handlers, in their
 * lock order): no parse, which allocates, is in progress in another thread
 * when the child's copy of memory is taken. */
void mpp_cupti_fork_prepare(void) {
  pthread_mutex_lock(&g_pmu);
}

void mpp_cupti_fork_parent(void) {
  pthread_mutex_unlock(&g_pmu);
}

void mpp_cupti_fork_child(void) {
  /* A child of a process that had CUDA up never parses (mpp_cuda_ours); one
   * forked before, which starts CUPTI as a fresh process, finds the queue's
   * g_qmu / g_qcv as an inactive parent left them: never taken. */
  pthread_mutex_init(&g_pmu, NULL);
  /* g_reg_mu is not held across fork (its holders call CUPTI: see parse): a
   * thread of the parent may have held it, in the program's hooked CUPTI
   * call or a flush. What it guards is single stores but for the program's
   * registration: one the fork cut may be CUPTI's in the child, which is
   * then left to the program (its records never go to mpprof). mpprof's own
   * start never is under way here: it runs under runtime.c's activate_mu,
   * which fork takes, so g_once is either not begun or done. */
  pthread_mutex_init(&g_reg_mu, NULL);
  g_reg_held_here = false;
  if (g_program_registering) {
    g_program_registering = false;
    if (!g_registered) g_program_registered = true;
  }
}

void mpp_cupti_push(uint64_t op_id) {
  if (atomic_load_explicit(&g_active, memory_order_relaxed))
    api.push_ext(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, op_id);
}

void mpp_cupti_pop(void) {
  uint64_t id;
  if (atomic_load_explicit(&g_active, memory_order_relaxed))
    api.pop_ext(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &id);
}

/* Set once at activation, before CUPTI starts (runtime.c: tc_counters.c's). */
static mpp_flush_mark_fn g_flush_mark;
static mpp_flush_settle_fn g_flush_settle;

void mpp_cupti_set_flush_observer(mpp_flush_mark_fn mark, mpp_flush_settle_fn settle) {
  g_flush_mark = mark;
  g_flush_settle = settle;
}

void mpp_cupti_flush(bool final) {
  /* Interrupted inside the program's registration (a signal handler's
   * exit): CUPTI's buffers may already be the program's. */
  if (g_reg_held_here) return;
  /* Under g_reg_mu: a program's registration between the check and the
   * flush would have CUPTI complete mpprof's buffers to the program's
   * callback, at a moment it did not choose. (Held while calling CUPTI, as
   * the registration does: no fork handler takes g_reg_mu.) */
  reg_lock();
  bool taken = atomic_load(&g_taken);
  if (!atomic_load(&g_active) && !taken) {
    reg_unlock();
    return;
  }
  /* Counter-profiled calls that ended before a final flush get all their
   * kernels from it; a checkpoint's may leave a buffer that holds some
   * (another kernel of that buffer still runs): they settle later. */
  uint64_t tc_mark = g_flush_mark ? g_flush_mark() : 0;
  if (!taken) api.flush_all(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  reg_unlock();
  queued_buf q;
  while (take_buffer(&q, false))
    parse(&q);
  /* The background parser may hold a buffer taken before the flush: wait for it. */
  pthread_mutex_lock(&g_qmu);
  while (g_inflight > 0)
    pthread_cond_wait(&g_qcv, &g_qmu);
  pthread_mutex_unlock(&g_qmu);
  pthread_mutex_lock(&g_pmu);
  settle_waiting(final); /* at a checkpoint their records may still come */
  pthread_mutex_unlock(&g_pmu);
  if (final && g_flush_settle) g_flush_settle(tc_mark);
  size_t n = 0;
  if (!taken && api.num_dropped && api.num_dropped(NULL, 0, &n) == CUPTI_SUCCESS)
    atomic_store(&g_dropped_cupti, (uint64_t)n);
}

/* bench/cupti_parse: a buffer filled elsewhere enters the same path as one
 * CUPTI completed (aligned_alloc'ed, BUF_SIZE bytes; the parser owns it). */
void mpp_cupti_complete_buffer(uint8_t *buf, size_t valid) {
  buffer_completed(NULL, 0, buf, BUF_SIZE, valid);
}

size_t mpp_cupti_buffer_size(void) {
  return BUF_SIZE;
}

void *mpp_cupti_handle(void) {
  return !strcmp(atomic_load(&g_status), "ok") ? g_handle : NULL;
}

const char *mpp_cupti_status(void) {
  return atomic_load(&g_status);
}

uint64_t mpp_cupti_dropped(void) {
  return atomic_load(&g_dropped_cupti) + atomic_load(&g_dropped_own);
}
