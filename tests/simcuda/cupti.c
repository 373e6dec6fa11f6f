/* simcuda's libcupti.so.13: the activity API for the kernels simcuda runs.
 * It attaches a sink to libcuda's kernel hub; for every finished kernel it
 * writes, into buffers the client hands out through bufferRequested, the
 * launch API record (driver cuLaunchKernel; with SIMCUDA_LAUNCH_API=runtime
 * the runtime cudaLaunchKernel_v7000 instead, as for a library launching
 * through its static CUDA runtime), one external correlation
 * record per external-id kind pushed on the launching thread, and the
 * CUpti_ActivityKernel10 record, all with one correlation id. As in CUPTI,
 * external correlation records come only with API records. A full buffer is
 * delivered through bufferCompleted by a worker thread of simcuda's own, soon
 * after it fills, as CUPTI does from its thread (never from inside the
 * launch, so a client's completion handler never runs inside its own cuBLAS
 * call); the partly filled one at flush, which returns once every buffer
 * retired before it has been delivered.
 * One subscriber per process; SIMCUDA_CUPTI_BUSY=1 makes subscribing and
 * enabling activity fail as if another tool held CUPTI, and
 * SIMCUDA_CUPTI_REFUSE_KIND=<kind number> makes cuptiActivityEnable of that
 * one kind fail with CUPTI_ERROR_NOT_COMPATIBLE, the header's "the activity
 * kind cannot be enabled" (a client's start-up failing part-way). The range profiler
 * and profiler host API are in cupti_profiler.cpp. */
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cupti.h>

#include "cupti_sim.h"
#include "simcuda_internal.h"

#pragma weak simcuda_rp_kernel /* cupti_profiler.cpp, when C++ was available */

#define SIM_API __attribute__((visibility("default")))

enum { SIM_CONTEXT_ID = 1, SIM_DEVICE_ID = 0, SIM_MAX_CBID = 1024, SIM_EXT_DEPTH = 128 };

typedef struct full_buffer {
  uint8_t *buf;
  size_t size, valid;
  struct full_buffer *next;
} full_buffer;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  CUpti_BuffersCallbackRequestFunc requested;
  CUpti_BuffersCallbackCompleteFunc completed;
  bool kind[CUPTI_ACTIVITY_KIND_COUNT];
  uint8_t driver_cbid[SIM_MAX_CBID];
  uint8_t runtime_cbid[SIM_MAX_CBID];
  uint8_t *cur;
  size_t cur_size, cur_used, cur_records, cur_max_records;
  full_buffer *full_head, *full_tail;
  size_t dropped;
  uint32_t next_correlation;
  int64_t next_grid;
  bool subscribed;
} st = {.next_correlation = 1, .next_grid = 1};

/* Per thread, per external kind: the pushed ids. */
static _Thread_local uint64_t ext_stack[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE][SIM_EXT_DEPTH];
static _Thread_local int ext_depth[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

static bool busy(void) {
  const char *v = getenv("SIMCUDA_CUPTI_BUSY");
  return v != NULL && strcmp(v, "1") == 0;
}

static size_t align8(size_t v) {
  return (v + 7) & ~(size_t)7;
}

static size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    return sizeof(CUpti_ActivityKernel10);
  case CUPTI_ACTIVITY_KIND_DRIVER:
  case CUPTI_ACTIVITY_KIND_RUNTIME:
    return sizeof(CUpti_ActivityAPI);
  case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
    return sizeof(CUpti_ActivityExternalCorrelation);
  default:
    return 0;
  }
}

/* Kernel names must outlive the records; keep one copy of each. */
typedef struct name_node {
  struct name_node *next;
  char name[];
} name_node;
static name_node *names;

static const char *intern(const char *s) {
  for (name_node *n = names; n != NULL; n = n->next)
    if (strcmp(n->name, s) == 0) return n->name;
  size_t len = strlen(s);
  name_node *n = malloc(sizeof(*n) + len + 1);
  if (n == NULL) return s;
  memcpy(n->name, s, len + 1);
  n->next = names;
  names = n;
  return n->name;
}

/* The worker that delivers full buffers (started by the first full one;
 * none in a fork child until its own first full buffer). Under `lock`. */
static pthread_cond_t deliver_cv = PTHREAD_COND_INITIALIZER;
static bool deliverer_started;
static int delivering;                  /* lists taken, callbacks not yet returned */
static _Thread_local bool in_deliverer; /* flush from a completion callback: no wait */

static void deliver(full_buffer *list, CUpti_BuffersCallbackCompleteFunc completed) {
  while (list != NULL) {
    full_buffer *next = list->next;
    if (completed != NULL) completed(NULL, 0, list->buf, list->size, list->valid);
    free(list);
    list = next;
  }
}

static void *deliverer(void *arg) {
  (void)arg;
  in_deliverer = true;
  pthread_mutex_lock(&lock);
  for (;;) {
    while (st.full_head == NULL)
      pthread_cond_wait(&deliver_cv, &lock);
    full_buffer *list = st.full_head;
    st.full_head = st.full_tail = NULL;
    CUpti_BuffersCallbackCompleteFunc completed = st.completed;
    delivering++;
    pthread_mutex_unlock(&lock);
    deliver(list, completed);
    pthread_mutex_lock(&lock);
    delivering--;
    pthread_cond_broadcast(&deliver_cv);
  }
  return NULL;
}

/* A full buffer waits for the worker (lock held). */
static void wake_deliverer(void) {
  if (!deliverer_started) {
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the application's signals are not ours */
    deliverer_started = pthread_create(&t, &attr, deliverer, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
  }
  pthread_cond_broadcast(&deliver_cv);
}

/* Retire the current buffer to the delivery queue (lock held). */
/* Tests (simcuda_cupti_kernels_running): while on, the last kernel record
 * written stands for a kernel still running on the device (a completed
 * record with its start and end is what simcuda writes otherwise), until
 * it is turned off (the kernel finished) or a forced flush takes it
 * incomplete. Its buffer is then kept current; one that fills retires, the
 * record complete (not modelled further). lock held. */
static bool running_mode;
static CUpti_ActivityKernel10 *running_rec;

SIM_API void simcuda_cupti_kernels_running(int on) {
  pthread_mutex_lock(&lock);
  running_mode = on != 0;
  if (!on) running_rec = NULL;
  pthread_mutex_unlock(&lock);
}

static void retire_current(void) {
  if (st.cur == NULL) return;
  running_rec = NULL;
  full_buffer *f = malloc(sizeof(*f));
  if (f != NULL) {
    *f = (full_buffer){st.cur, st.cur_size, st.cur_used, NULL};
    if (st.full_tail != NULL)
      st.full_tail->next = f;
    else
      st.full_head = f;
    st.full_tail = f;
  }
  st.cur = NULL;
}

/* Room for one record of `size` bytes, asking the client for a buffer when
 * needed (lock held). NULL = dropped. */
static void *reserve(size_t size) {
  size_t need = align8(size);
  if (st.cur != NULL && (st.cur_used + need > st.cur_size ||
                         (st.cur_max_records != 0 && st.cur_records >= st.cur_max_records))) {
    retire_current();
    wake_deliverer();
  }
  if (st.cur == NULL) {
    if (st.requested == NULL) goto drop;
    uint8_t *buf = NULL;
    size_t bsize = 0, max_records = 0;
    st.requested(&buf, &bsize, &max_records);
    if (buf == NULL) goto drop;
    st.cur = buf;
    st.cur_size = bsize;
    /* Records are 8-byte aligned (ACTIVITY_RECORD_ALIGNMENT) even when the
     * client's buffer is not; GetNextRecord starts at the same place. */
    st.cur_used = align8((uintptr_t)buf) - (uintptr_t)buf;
    if (st.cur_used + need > bsize) {
      /* Too small for one record: hand it back empty at the next flush. */
      st.cur_used = 0;
      retire_current();
      goto drop;
    }
    st.cur_records = 0;
    st.cur_max_records = max_records;
  }
  void *p = st.cur + st.cur_used;
  memset(p, 0, need);
  st.cur_used += need;
  st.cur_records++;
  return p;
drop:
  st.dropped++;
  return NULL;
}

/* The ids an API record carries, cached as CUPTI does: one getpid per process
 * (again in a fork child) and one gettid per thread, not two system calls per
 * launch. */
static pid_t cached_pid;
static __thread uint32_t cached_tid;

/* Held across fork from its prepare handler, registered at load (after
 * libmpprof's, which therefore runs after it) to its parent or child
 * handler. Not what the real libcupti does: CUDA 13.0's libcupti.so.13
 * imports neither pthread_atfork nor __register_atfork (nm -D), so it
 * registers no fork handler; whether the driver (libcuda.so.1) does is not
 * known here (only its stub is installed). Kept as a library whose fork
 * handler holds a lock its flush and dropped-record count take: mpprof must
 * never wait for such a lock while holding one of its own fork handler's
 * (tests/safety fork_loop_under_checkpoints_ends). */
static void lock_for_fork(void) {
  pthread_mutex_lock(&lock);
}

static void unlock_after_fork(void) {
  pthread_mutex_unlock(&lock);
}

static void forget_pid(void) {
  pthread_mutex_unlock(&lock);
  deliverer_started = false; /* threads do not survive fork */
  delivering = 0;
  cached_pid = 0;
  cached_tid = 0; /* the forking thread goes on in the child, with a new tid */
}

static uint32_t process_id(void) {
  if (cached_pid == 0) cached_pid = getpid();
  return (uint32_t)cached_pid;
}

static uint32_t thread_id(void) {
  if (cached_tid == 0) cached_tid = (uint32_t)syscall(SYS_gettid);
  return cached_tid;
}

/* Which API a kernel's launch goes through: SIMCUDA_LAUNCH_API, read when
 * the client configures activity (registers its callbacks, enables a kind or
 * a cbid), not per launch; anything but "runtime" is the driver. */
static bool via_runtime; /* atomic */

static void read_switches(void) {
  const char *v = getenv("SIMCUDA_LAUNCH_API");
  __atomic_store_n(&via_runtime, v != NULL && strcmp(v, "runtime") == 0, __ATOMIC_RELAXED);
}

static bool launch_via_runtime(void) {
  return __atomic_load_n(&via_runtime, __ATOMIC_RELAXED);
}

/* As in CUPTI, the launch's API record exists only when its kind or its
 * cbid is enabled; without it there is no external correlation either. */
static bool api_record_wanted(bool runtime) {
  if (runtime)
    return st.kind[CUPTI_ACTIVITY_KIND_RUNTIME] ||
           st.runtime_cbid[CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000];
  return st.kind[CUPTI_ACTIVITY_KIND_DRIVER] ||
         st.driver_cbid[CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel];
}

static void on_kernel(const simcuda_kernel_event *ev) {
  if (simcuda_rp_kernel) simcuda_rp_kernel(ev); /* an auto range when a session runs */
  bool runtime = launch_via_runtime();
  pthread_mutex_lock(&lock);
  bool kernel_on =
      st.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] || st.kind[CUPTI_ACTIVITY_KIND_KERNEL];
  bool api_on = api_record_wanted(runtime);
  if (!kernel_on && !api_on) {
    pthread_mutex_unlock(&lock);
    return;
  }
  uint32_t corr = st.next_correlation++;
  if (api_on) {
    if (st.kind[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]) {
      for (int kind = 0; kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; kind++) {
        if (ext_depth[kind] == 0) continue;
        CUpti_ActivityExternalCorrelation *x = reserve(sizeof(*x));
        if (x == NULL) continue;
        x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        x->externalKind = (CUpti_ExternalCorrelationKind)kind;
        x->externalId = ext_stack[kind][ext_depth[kind] - 1];
        x->correlationId = corr;
      }
    }
    CUpti_ActivityAPI *a = reserve(sizeof(*a));
    if (a != NULL) {
      a->kind = runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
      a->cbid = runtime ? (CUpti_CallbackId)CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
                        : (CUpti_CallbackId)CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
      a->start = ev->api_start;
      a->end = ev->api_end;
      a->processId = process_id();
      a->threadId = thread_id();
      a->correlationId = corr;
      a->returnValue = CUDA_SUCCESS; /* == cudaSuccess for a runtime record */
    }
  }
  if (kernel_on) {
    CUpti_ActivityKernel10 *r = reserve(sizeof(*r));
    if (r != NULL) {
      const simcuda_kernel *k = ev->kernel;
      r->kind = st.kind[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]
                    ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                    : CUPTI_ACTIVITY_KIND_KERNEL;
      r->start = ev->start;
      r->end = ev->end;
      r->completed = ev->end;
      r->deviceId = SIM_DEVICE_ID;
      r->contextId = SIM_CONTEXT_ID;
      r->streamId = ev->stream_id;
      r->gridX = (int32_t)k->grid[0];
      r->gridY = (int32_t)k->grid[1];
      r->gridZ = (int32_t)k->grid[2];
      r->blockX = (int32_t)k->block[0];
      r->blockY = (int32_t)k->block[1];
      r->blockZ = (int32_t)k->block[2];
      r->registersPerThread = 128;
      r->correlationId = corr;
      r->gridId = st.next_grid++;
      r->name = intern(k->name != NULL ? k->name : "<unnamed>");
      if (running_mode) running_rec = r;
    }
  }
  pthread_mutex_unlock(&lock);
}

__attribute__((constructor)) static void attach(void) {
  pthread_atfork(lock_for_fork, unlock_after_fork, forget_pid);
  /* the knob's switch for a whole program (every kernel runs until the next
   * is written) */
  const char *running = getenv("SIMCUDA_CUPTI_KERNELS_RUNNING");
  running_mode = running && running[0] == '1';
  simcuda_cupti_attach(on_kernel);
}

__attribute__((destructor)) static void detach(void) {
  simcuda_cupti_attach(NULL);
}

/* ---- activity API ---- */

SIM_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                   CUpti_BuffersCallbackCompleteFunc completed) {
  read_switches();
  if (requested == NULL || completed == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&lock);
  st.requested = requested;
  st.completed = completed;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

static bool kind_supported(CUpti_ActivityKind kind) {
  return kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || kind == CUPTI_ACTIVITY_KIND_KERNEL ||
         kind == CUPTI_ACTIVITY_KIND_DRIVER || kind == CUPTI_ACTIVITY_KIND_RUNTIME ||
         kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
}

static CUptiResult set_kind(CUpti_ActivityKind kind, bool on) {
  if ((int)kind <= CUPTI_ACTIVITY_KIND_INVALID || (int)kind >= CUPTI_ACTIVITY_KIND_COUNT)
    return CUPTI_ERROR_INVALID_KIND;
  /* Records simcuda never produces (memcpy, memset, ...) are refused
   * rather than silently missing. */
  if (!kind_supported(kind)) return CUPTI_ERROR_NOT_SUPPORTED;
  pthread_mutex_lock(&lock);
  st.kind[kind] = on;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

static bool refused(CUpti_ActivityKind kind) {
  const char *v = getenv("SIMCUDA_CUPTI_REFUSE_KIND");
  return v != NULL && v[0] != '\0' && strtol(v, NULL, 10) == (long)kind;
}

SIM_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  read_switches();
  if (busy()) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (refused(kind)) return CUPTI_ERROR_NOT_COMPATIBLE;
  return set_kind(kind, true);
}

SIM_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  return set_kind(kind, false);
}

SIM_API CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  read_switches();
  if (busy()) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (cbid == 0 || cbid >= SIM_MAX_CBID) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&lock);
  st.driver_cbid[cbid] = enable != 0;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  read_switches();
  if (busy()) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  if (cbid == 0 || cbid >= SIM_MAX_CBID) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&lock);
  st.runtime_cbid[cbid] = enable != 0;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

/* Deliver every queued buffer, and the current one: simcuda's records are
 * complete the moment they are written. Callbacks run without the lock, so
 * they may call back into CUPTI. */
static CUptiResult flush_all(uint32_t flag) {
  pthread_mutex_lock(&lock);
  /* The default flush delivers only buffers whose records are all complete:
   * one holding a running kernel's record stays (it is the current one). The
   * forced flush delivers it, that record without its times. */
  if (running_rec == NULL || (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)) {
    if (running_rec != NULL) {
      running_rec->start = running_rec->end = running_rec->completed = 0;
      running_rec = NULL;
    }
    retire_current();
  }
  full_buffer *list = st.full_head;
  st.full_head = st.full_tail = NULL;
  CUpti_BuffersCallbackCompleteFunc completed = st.completed;
  /* Buffers the worker took before this flush are delivered before it returns. */
  while (delivering > 0 && !in_deliverer)
    pthread_cond_wait(&deliver_cv, &lock);
  pthread_mutex_unlock(&lock);
  deliver(list, completed);
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  return flush_all(flag);
}

SIM_API CUptiResult cuptiActivityFlush(CUcontext context, uint32_t stream_id, uint32_t flag) {
  (void)context;
  (void)stream_id;
  return flush_all(flag);
}

SIM_API CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                               CUpti_Activity **record) {
  if (buffer == NULL || record == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t *next;
  if (*record == NULL) {
    next = buffer + (align8((uintptr_t)buffer) - (uintptr_t)buffer);
  } else {
    size_t size = record_size((*record)->kind);
    if (size == 0) return CUPTI_ERROR_INVALID_KIND;
    next = (uint8_t *)*record + align8(size);
  }
  if (next < buffer || (size_t)(next - buffer) + sizeof(CUpti_ActivityKind) > valid) {
    *record = NULL;
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  }
  size_t size = record_size(((CUpti_Activity *)next)->kind);
  if (size == 0 || (size_t)(next - buffer) + size > valid) {
    *record = NULL;
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  }
  *record = (CUpti_Activity *)next;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream_id,
                                                      size_t *dropped) {
  (void)context;
  (void)stream_id;
  if (dropped == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&lock);
  *dropped = st.dropped;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                           uint64_t id) {
  if ((int)kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
      (int)kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (ext_depth[kind] >= SIM_EXT_DEPTH) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  ext_stack[kind][ext_depth[kind]++] = id;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                          uint64_t *last_id) {
  if ((int)kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
      (int)kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (ext_depth[kind] == 0) return CUPTI_ERROR_QUEUE_EMPTY;
  uint64_t id = ext_stack[kind][--ext_depth[kind]];
  if (last_id != NULL) *last_id = id;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiGetTimestamp(uint64_t *timestamp) {
  if (timestamp == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  *timestamp = simcuda_now_ns();
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiGetVersion(uint32_t *version) {
  if (version == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiGetContextId(CUcontext context, uint32_t *id) {
  if (context == NULL || id == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = SIM_CONTEXT_ID;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *id) {
  (void)context;
  if (id == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = SIM_DEVICE_ID;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t per_thread,
                                       uint32_t *id) {
  (void)context;
  (void)per_thread;
  if (id == NULL || !simcuda_stream_valid(stream)) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = simcuda_stream_id(stream);
  return CUPTI_SUCCESS;
}

/* Drop every setting; queued buffers go back to the client first. */
SIM_API CUptiResult cuptiFinalize(void) {
  flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&lock);
  memset(st.kind, 0, sizeof(st.kind));
  memset(st.driver_cbid, 0, sizeof(st.driver_cbid));
  memset(st.runtime_cbid, 0, sizeof(st.runtime_cbid));
  st.requested = NULL;
  st.completed = NULL;
  pthread_mutex_unlock(&lock);
  return CUPTI_SUCCESS;
}

/* ---- callback API: subscription only (simcuda issues no callbacks) ---- */

static struct CUpti_Subscriber_st {
  CUpti_CallbackFunc callback;
  void *userdata;
} subscriber;

SIM_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *handle, CUpti_CallbackFunc callback,
                                   void *userdata) {
  if (handle == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  if (busy()) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  pthread_mutex_lock(&lock);
  bool taken = st.subscribed;
  if (!taken) {
    st.subscribed = true;
    subscriber.callback = callback;
    subscriber.userdata = userdata;
  }
  pthread_mutex_unlock(&lock);
  if (taken) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  *handle = &subscriber;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle handle) {
  if (handle != &subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&lock);
  bool was = st.subscribed;
  st.subscribed = false;
  pthread_mutex_unlock(&lock);
  return was ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

SIM_API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle handle,
                                        CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  (void)enable;
  (void)handle;
  (void)domain;
  (void)cbid;
  return CUPTI_ERROR_NOT_SUPPORTED;
}

SIM_API CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle handle,
                                      CUpti_CallbackDomain domain) {
  (void)enable;
  (void)handle;
  (void)domain;
  return CUPTI_ERROR_NOT_SUPPORTED;
}

/* ---- result strings ---- */

static const struct {
  CUptiResult code;
  const char *name;
} results[] = {
#define R(x)                                                                                       \
  { x, #x }
    R(CUPTI_SUCCESS),
    R(CUPTI_ERROR_INVALID_PARAMETER),
    R(CUPTI_ERROR_INVALID_DEVICE),
    R(CUPTI_ERROR_INVALID_CONTEXT),
    R(CUPTI_ERROR_INVALID_OPERATION),
    R(CUPTI_ERROR_OUT_OF_MEMORY),
    R(CUPTI_ERROR_MAX_LIMIT_REACHED),
    R(CUPTI_ERROR_NOT_READY),
    R(CUPTI_ERROR_NOT_INITIALIZED),
    R(CUPTI_ERROR_QUEUE_EMPTY),
    R(CUPTI_ERROR_INVALID_HANDLE),
    R(CUPTI_ERROR_INVALID_STREAM),
    R(CUPTI_ERROR_INVALID_KIND),
    R(CUPTI_ERROR_DISABLED),
    R(CUPTI_ERROR_NOT_SUPPORTED),
    R(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES),
    R(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
    R(CUPTI_ERROR_UNKNOWN),
#undef R
};

SIM_API CUptiResult cuptiGetResultString(CUptiResult result, const char **str) {
  if (str == NULL) return CUPTI_ERROR_INVALID_PARAMETER;
  for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
    if (results[i].code == result) {
      *str = results[i].name;
      return CUPTI_SUCCESS;
    }
  *str = "CUPTI_ERROR_UNKNOWN";
  return CUPTI_ERROR_INVALID_PARAMETER;
}

SIM_API CUptiResult cuptiGetErrorMessage(CUptiResult result, const char **str) {
  return cuptiGetResultString(result, str);
}
