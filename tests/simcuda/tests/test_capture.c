/* simcuda stream capture: Begin/End mark a stream as capturing (what a
 * profiler reads with cuStreamIsCapturing before enqueuing its own work),
 * work issued meanwhile still runs at once, and the graph EndCapture hands
 * back is refused by instantiate and launch (simcuda cannot replay work).
 * Also the cuGetProcAddress ABI versions of the capture entry points. */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

static void begin_capture_marks_only_that_stream_active_until_end_capture(void **state) {
  (void)state;
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  CUstream s, other;
  assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  assert_int_equal(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(cuStreamIsCapturing(other, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
  assert_int_equal(cuStreamIsCapturing(NULL, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);

  cuuint64_t id = 0;
  CUgraph during = NULL, graph = NULL;
  const CUgraphNode *deps = (const CUgraphNode *)&id;
  size_t ndeps = 99;
  assert_int_equal(cuStreamGetCaptureInfo(s, &st, &id, &during, &deps, NULL, &ndeps), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  assert_true(id != 0);
  assert_non_null(during);
  assert_null(deps);
  assert_int_equal(ndeps, 0);
  /* A second capture on the same stream is refused. */
  assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED),
                   CUDA_ERROR_ILLEGAL_STATE);

  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  assert_ptr_equal(graph, during);
  assert_int_equal(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
  assert_int_equal(cuStreamEndCapture(s, &graph), CUDA_ERROR_ILLEGAL_STATE);
  assert_int_equal(cuGraphDestroy(graph), CUDA_SUCCESS);

  /* The next capture is a new sequence with its own id. */
  cuuint64_t id2 = 0;
  assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  assert_int_equal(cuStreamGetCaptureInfo(s, &st, &id2, NULL, NULL, NULL, NULL), CUDA_SUCCESS);
  assert_true(id2 != id);
  /* Destroying a stream mid-capture releases its graph (the leak checker sees it). */
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(other), CUDA_SUCCESS);
}

/* cuda.h, cuStreamIsCapturing: the legacy stream, asked while a stream
 * created without CU_STREAM_NON_BLOCKING captures, answers
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (the capture is not invalidated); a
 * non-blocking capture leaves it alone, and so does the per-thread stream. */
static void the_legacy_stream_is_unusable_while_a_blocking_stream_captures(void **state) {
  (void)state;
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  CUstream blocking, nonblocking;
  assert_int_equal(cuStreamCreate(&blocking, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  assert_int_equal(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  assert_int_equal(cuStreamBeginCapture(nonblocking, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(cuStreamIsCapturing(NULL, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
  assert_int_equal(cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(cuStreamIsCapturing(NULL, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  assert_int_equal(cuStreamIsCapturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  assert_int_equal(cuStreamGetCaptureInfo(CU_STREAM_LEGACY, &st, NULL, NULL, NULL, NULL, NULL),
                   CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  enum cudaStreamCaptureStatus rst = cudaStreamCaptureStatusActive;
  assert_int_equal(cudaStreamIsCapturing(cudaStreamLegacy, &rst), cudaErrorStreamCaptureImplicit);
  assert_int_equal(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
  assert_int_equal(cuStreamIsCapturing(blocking, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CUgraph g = NULL;
  assert_int_equal(cuStreamEndCapture(blocking, &g), CUDA_SUCCESS);
  assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
  assert_int_equal(cuStreamIsCapturing(NULL, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
  /* A blocking stream destroyed mid-capture no longer holds the legacy stream. */
  assert_int_equal(cuStreamBeginCapture(blocking, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(blocking), CUDA_SUCCESS);
  assert_int_equal(cuStreamIsCapturing(NULL, &st), CUDA_SUCCESS);
  assert_int_equal(cuStreamEndCapture(nonblocking, &g), CUDA_SUCCESS);
  assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(nonblocking), CUDA_SUCCESS);
}

static void capture_of_the_default_stream_or_with_an_unknown_mode_is_refused(void **state) {
  (void)state;
  cuInit(0);
  CUstream s;
  assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
                   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(cuStreamBeginCapture(CU_STREAM_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL),
                   CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(cuStreamBeginCapture(s, (CUstreamCaptureMode)3), CUDA_ERROR_INVALID_VALUE);
  CUgraph g = NULL;
  assert_int_equal(cuStreamEndCapture(NULL, &g), CUDA_ERROR_ILLEGAL_STATE);
  assert_int_equal(cuStreamEndCapture(s, NULL), CUDA_ERROR_INVALID_VALUE);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  assert_int_equal(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

/* The per-thread default stream may capture (cuda.h refuses only the legacy
 * stream): each thread's is its own, it is blocking (the legacy stream is
 * unusable meanwhile), and a capture its thread leaves open ends with the
 * thread. simcuda refused it, stricter than CUDA. */
static CUcontext ptds_ctx; /* the primary context, made current on the threads */

static void *ptds_status_elsewhere(void *p) {
  CUstreamCaptureStatus *st = p;
  if (cuCtxSetCurrent(ptds_ctx) != CUDA_SUCCESS ||
      cuStreamIsCapturing(CU_STREAM_PER_THREAD, st) != CUDA_SUCCESS)
    *st = CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  return NULL;
}

static void *ptds_capture_left_open(void *p) {
  if (cuCtxSetCurrent(ptds_ctx) != CUDA_SUCCESS) return NULL;
  *(CUresult *)p = cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_GLOBAL);
  return NULL;
}

static void the_per_thread_stream_captures_on_its_own_thread(void **state) {
  (void)state;
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuDevicePrimaryCtxRetain(&ptds_ctx, 0), CUDA_SUCCESS);
  assert_int_equal(cuCtxSetCurrent(ptds_ctx), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_GLOBAL),
                   CUDA_SUCCESS);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  assert_int_equal(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  cudaStream_t rs = cudaStreamPerThread;
  enum cudaStreamCaptureStatus rst = cudaStreamCaptureStatusNone;
  assert_int_equal(cudaStreamIsCapturing(rs, &rst), cudaSuccess);
  assert_int_equal(rst, cudaStreamCaptureStatusActive);
  cuuint64_t id = 0;
  CUgraph during = NULL;
  assert_int_equal(
      cuStreamGetCaptureInfo(CU_STREAM_PER_THREAD, &st, &id, &during, NULL, NULL, NULL),
      CUDA_SUCCESS);
  assert_true(id != 0);
  assert_non_null(during);
  /* another thread's per-thread stream is not capturing */
  pthread_t t;
  CUstreamCaptureStatus other = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  assert_int_equal(pthread_create(&t, NULL, ptds_status_elsewhere, &other), 0);
  pthread_join(t, NULL);
  assert_int_equal(other, CU_STREAM_CAPTURE_STATUS_NONE);
  /* blocking: the legacy stream is unusable while it captures */
  assert_int_equal(cuStreamIsCapturing(CU_STREAM_LEGACY, &st), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  assert_int_equal(cuStreamBeginCapture(CU_STREAM_PER_THREAD, CU_STREAM_CAPTURE_MODE_GLOBAL),
                   CUDA_ERROR_ILLEGAL_STATE);
  CUgraph g = NULL;
  assert_int_equal(cuStreamEndCapture(CU_STREAM_PER_THREAD, &g), CUDA_SUCCESS);
  assert_ptr_equal(g, during);
  assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
  assert_int_equal(cuStreamIsCapturing(CU_STREAM_PER_THREAD, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
  /* a capture left open by a thread that ended holds nothing afterwards */
  CUresult began = CUDA_ERROR_UNKNOWN;
  assert_int_equal(pthread_create(&t, NULL, ptds_capture_left_open, &began), 0);
  pthread_join(t, NULL);
  assert_int_equal(began, CUDA_SUCCESS);
  assert_int_equal(cuStreamIsCapturing(CU_STREAM_LEGACY, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
}

typedef struct end_arg {
  CUstream s;
  CUresult r;
  CUgraph g;
} end_arg;

static void *end_elsewhere(void *p) {
  end_arg *a = p;
  a->r = cuStreamEndCapture(a->s, &a->g);
  return NULL;
}

static CUresult end_on_another_thread(CUstream s, CUgraph *g) {
  end_arg a = {.s = s};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, end_elsewhere, &a), 0);
  pthread_join(t, NULL);
  *g = a.g;
  return a.r;
}

static void only_relaxed_capture_may_end_on_another_thread(void **state) {
  (void)state;
  cuInit(0);
  CUstream s;
  CUgraph g = NULL;
  assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(end_on_another_thread(s, &g), CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
  assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
  assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  g = NULL;
  assert_int_equal(end_on_another_thread(s, &g), CUDA_SUCCESS);
  assert_non_null(g);
  assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

/* A GLOBAL-mode capture begun on a thread of its own, ended when told. */
typedef struct capturer {
  CUstream s;
  pthread_barrier_t begun, go;
  CUresult begin, end;
  CUgraph g;
} capturer;

static void *capture_elsewhere(void *p) {
  capturer *c = p;
  c->begin = cuStreamBeginCapture(c->s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  pthread_barrier_wait(&c->begun);
  pthread_barrier_wait(&c->go);
  c->end = cuStreamEndCapture(c->s, &c->g);
  return NULL;
}

/* cudaMalloc on this thread while another thread captures in GLOBAL mode,
 * with this thread in `mode`: what cudaMalloc returns, and the capture's
 * status and EndCapture after it. */
static cudaError_t malloc_beside_a_global_capture(CUstreamCaptureMode mode,
                                                  CUstreamCaptureStatus *status, CUresult *end) {
  capturer c;
  memset(&c, 0, sizeof c);
  assert_int_equal(cuStreamCreate(&c.s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  pthread_barrier_init(&c.begun, NULL, 2);
  pthread_barrier_init(&c.go, NULL, 2);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, capture_elsewhere, &c), 0);
  pthread_barrier_wait(&c.begun);
  CUstreamCaptureMode old = mode;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&old), CUDA_SUCCESS);
  void *p = NULL;
  cudaError_t e = cudaMalloc(&p, 64);
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&old), CUDA_SUCCESS); /* back */
  assert_int_equal(cuStreamIsCapturing(c.s, status), CUDA_SUCCESS);
  pthread_barrier_wait(&c.go);
  pthread_join(t, NULL);
  assert_int_equal(c.begin, CUDA_SUCCESS);
  *end = c.end;
  if (c.g != NULL) assert_int_equal(cuGraphDestroy(c.g), CUDA_SUCCESS);
  if (p != NULL) cudaFree(p);
  pthread_barrier_destroy(&c.begun);
  pthread_barrier_destroy(&c.go);
  assert_int_equal(cuStreamDestroy(c.s), CUDA_SUCCESS);
  return e;
}

/* cuda.h, cuThreadExchangeStreamCaptureMode: the thread's mode (GLOBAL by
 * default) is swapped with *mode; in GLOBAL mode a potentially unsafe call
 * (cudaMalloc, the header's example) is prohibited while any thread
 * captures in GLOBAL mode, and the prohibited call invalidates that
 * capture (cuStreamEndCapture: "a NULL graph will be returned");
 * THREAD_LOCAL and RELAXED ignore other threads' captures. */
static void the_capture_mode_is_per_thread_and_governs_unsafe_calls(void **state) {
  (void)state;
  cuInit(0);
  void *fn = NULL;
  assert_int_equal(cuGetProcAddress("cuThreadExchangeStreamCaptureMode", &fn, 13000,
                                    CU_GET_PROC_ADDRESS_DEFAULT, NULL),
                   CUDA_SUCCESS);
  assert_ptr_equal(fn, (void *)cuThreadExchangeStreamCaptureMode);
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  assert_int_equal(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  assert_int_equal(m, CU_STREAM_CAPTURE_MODE_RELAXED);
  m = (CUstreamCaptureMode)42;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuThreadExchangeStreamCaptureMode(NULL), CUDA_ERROR_INVALID_VALUE);

  CUstreamCaptureStatus st;
  CUresult end;
  assert_int_equal(malloc_beside_a_global_capture(CU_STREAM_CAPTURE_MODE_GLOBAL, &st, &end),
                   cudaErrorStreamCaptureUnsupported);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(end, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  for (int mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL; mode <= CU_STREAM_CAPTURE_MODE_RELAXED;
       mode++) {
    assert_int_equal(malloc_beside_a_global_capture((CUstreamCaptureMode)mode, &st, &end),
                     cudaSuccess);
    assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(end, CUDA_SUCCESS);
  }

  /* The thread's own capture (not RELAXED) prohibits it in THREAD_LOCAL mode
   * too; RELAXED mode never. */
  CUstream s;
  CUgraph g = (CUgraph)1;
  void *p = NULL;
  assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  m = CU_STREAM_CAPTURE_MODE_RELAXED;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  assert_int_equal(cudaMalloc(&p, 64), cudaSuccess);
  assert_int_equal(cudaFree(p), cudaSuccess);
  m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  assert_int_equal(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
  assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_null(g);
  m = CU_STREAM_CAPTURE_MODE_GLOBAL;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&m), CUDA_SUCCESS);
  assert_int_equal(cudaMalloc(&p, 64), cudaSuccess); /* nothing captures any more */
  assert_int_equal(cudaFree(p), cudaSuccess);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

static void runtime_capture_reports_active_and_work_still_runs_at_once(void **state) {
  (void)state;
  cudaStream_t s;
  assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
  assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  assert_int_equal(cudaStreamIsCapturing(s, &st), cudaSuccess);
  assert_int_equal(st, cudaStreamCaptureStatusActive);
  unsigned long long id = 0;
  cudaGraph_t during = NULL;
  assert_int_equal(cudaStreamGetCaptureInfo(s, &st, &id, &during, NULL, NULL, NULL), cudaSuccess);
  assert_int_equal(st, cudaStreamCaptureStatusActive);
  assert_true(id != 0);
  /* simcuda cannot defer host work: the copy has happened when it returns. */
  unsigned char src[8] = {1, 2, 3, 4, 5, 6, 7, 8}, dst[8] = {0};
  assert_int_equal(cudaMemcpyAsync(dst, src, sizeof dst, cudaMemcpyDefault, s), cudaSuccess);
  assert_memory_equal(dst, src, sizeof dst);
  cudaGraph_t g = NULL;
  assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
  assert_ptr_equal(g, during);
  assert_int_equal(cudaStreamIsCapturing(s, &st), cudaSuccess);
  assert_int_equal(st, cudaStreamCaptureStatusNone);
  assert_int_equal(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
  assert_int_equal(cudaGetLastError(), cudaErrorIllegalState);
  assert_int_equal(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal),
                   cudaErrorStreamCaptureUnsupported);
  assert_int_equal(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
  assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
  assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void a_captured_graph_cannot_be_instantiated_or_launched(void **state) {
  (void)state;
  cudaStream_t s;
  cudaGraph_t g = NULL;
  cudaGraphExec_t exec = (cudaGraphExec_t)&g;
  assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
  assert_int_equal(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed), cudaSuccess);
  assert_int_equal(cudaStreamEndCapture(s, &g), cudaSuccess);
  assert_int_equal(cudaGraphInstantiate(&exec, g, 0), cudaErrorNotSupported);
  assert_null(exec);
  assert_int_equal(cudaGraphInstantiateWithFlags(&exec, g, 0), cudaErrorNotSupported);
  assert_int_equal(cudaGraphLaunch(exec, s), cudaErrorNotSupported);
  CUgraphExec cexec = NULL;
  char log[16] = "x";
  assert_int_equal(cuGraphInstantiate(&cexec, g, 0), CUDA_ERROR_NOT_SUPPORTED);
  assert_int_equal(cuGraphLaunch(cexec, (CUstream)s), CUDA_ERROR_NOT_SUPPORTED);
  /* The pre-12.0 ABI clears the log it was given. */
  typedef CUresult (*inst_v2_fn)(CUgraphExec *, CUgraph, CUgraphNode *, char *, size_t);
  inst_v2_fn v2 = (inst_v2_fn)dlsym(RTLD_DEFAULT, "cuGraphInstantiate_v2");
  assert_non_null(v2);
  assert_int_equal(v2(&cexec, g, NULL, log, sizeof log), CUDA_ERROR_NOT_SUPPORTED);
  assert_string_equal(log, "");
  assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
  assert_int_equal(cudaGraphDestroy(g), cudaSuccess);
  assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

/* What cuGetProcAddress returns for `name` at `version` (NULL when refused). */
static void *proc(const char *name, int version, CUdriverProcAddressQueryResult *q) {
  void *fn = NULL;
  cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, q);
  return fn;
}

static void get_proc_address_gives_the_capture_abi_of_the_version_asked(void **state) {
  (void)state;
  CUdriverProcAddressQueryResult q;
  /* cuStreamBeginCapture took no mode before 10.1. */
  assert_ptr_equal(proc("cuStreamBeginCapture", 13000, &q),
                   dlsym(RTLD_DEFAULT, "cuStreamBeginCapture_v2"));
  assert_int_equal(q, CU_GET_PROC_ADDRESS_SUCCESS);
  assert_ptr_equal(proc("cuStreamBeginCapture", 10000, &q),
                   dlsym(RTLD_DEFAULT, "cuStreamBeginCapture"));
  assert_null(proc("cuStreamBeginCapture", 9020, &q));
  assert_int_equal(q, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  /* cuStreamGetCaptureInfo: 3 arguments (10.1), 6 (11.3), 7 with edge data (12.3). */
  assert_ptr_equal(proc("cuStreamGetCaptureInfo", 13000, &q),
                   dlsym(RTLD_DEFAULT, "cuStreamGetCaptureInfo_v3"));
  assert_ptr_equal(proc("cuStreamGetCaptureInfo", 12020, &q),
                   dlsym(RTLD_DEFAULT, "cuStreamGetCaptureInfo_v2"));
  assert_ptr_equal(proc("cuStreamGetCaptureInfo", 10010, &q),
                   dlsym(RTLD_DEFAULT, "cuStreamGetCaptureInfo"));
  assert_null(proc("cuStreamGetCaptureInfo", 10000, &q));
  /* cuGraphInstantiate is cuGraphInstantiateWithFlags from 12.0 on. */
  assert_ptr_equal(proc("cuGraphInstantiate", 12000, &q),
                   dlsym(RTLD_DEFAULT, "cuGraphInstantiateWithFlags"));
  assert_ptr_equal(proc("cuGraphInstantiate", 11000, &q),
                   dlsym(RTLD_DEFAULT, "cuGraphInstantiate_v2"));
  assert_ptr_equal(proc("cuStreamEndCapture", 13000, &q),
                   dlsym(RTLD_DEFAULT, "cuStreamEndCapture"));
  assert_ptr_equal(proc("cuGraphLaunch", 13000, &q), dlsym(RTLD_DEFAULT, "cuGraphLaunch"));
  assert_ptr_equal(proc("cuGraphDestroy", 13000, &q), dlsym(RTLD_DEFAULT, "cuGraphDestroy"));

  /* The 13.0 pointers work: a mode argument reaches the stream. */
  typedef CUresult (*begin_fn)(CUstream, CUstreamCaptureMode);
  typedef CUresult (*info_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *,
                              const CUgraphNode **, const CUgraphEdgeData **, size_t *);
  CUstream s;
  CUgraph g;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  begin_fn begin = (begin_fn)proc("cuStreamBeginCapture", 13000, &q);
  info_fn info = (info_fn)proc("cuStreamGetCaptureInfo", 13000, &q);
  assert_int_equal(begin(s, (CUstreamCaptureMode)7), CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(begin(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
  assert_int_equal(info(s, &st, NULL, NULL, NULL, NULL, NULL), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
  assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
}

/* A GLOBAL capture on a stream of the given flags, begun on this thread. */
static CUstream begin_global(unsigned flags) {
  CUstream s;
  assert_int_equal(cuStreamCreate(&s, flags), CUDA_SUCCESS);
  assert_int_equal(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  return s;
}

/* Its status now; then it ends (with what EndCapture said) and goes. */
static CUresult end_and_destroy(CUstream s, CUstreamCaptureStatus *status) {
  CUgraph g = NULL;
  assert_int_equal(cuStreamIsCapturing(s, status), CUDA_SUCCESS);
  CUresult r = cuStreamEndCapture(s, &g);
  if (g != NULL) assert_int_equal(cuGraphDestroy(g), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
  return r;
}

/* Programming Guide (stream capture, prohibited operations): "It is invalid
 * to synchronize or query the execution status of a stream which is being
 * captured" — CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, and the capture is
 * invalidated, in every capture mode (cuThreadExchangeStreamCaptureMode:
 * relaxed mode is "still prohibited from API calls which necessarily
 * conflict with stream capture"). Work issued to it is captured. */
static void waiting_for_a_capturing_stream_fails_and_invalidates_its_capture(void **state) {
  (void)state;
  CUstreamCaptureStatus st;
  CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&relaxed), CUDA_SUCCESS);
  CUstream s = begin_global(CU_STREAM_NON_BLOCKING);
  assert_int_equal(cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  assert_int_equal(cuThreadExchangeStreamCaptureMode(&relaxed), CUDA_SUCCESS); /* back */

  s = begin_global(CU_STREAM_NON_BLOCKING);
  assert_int_equal(cudaStreamSynchronize((cudaStream_t)s), cudaErrorStreamCaptureUnsupported);
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  s = begin_global(CU_STREAM_NON_BLOCKING);
  unsigned char src[4] = {1, 2, 3, 4}, dst[4] = {0};
  void *dev = NULL;
  assert_int_equal(cudaMemcpyAsync(dst, src, sizeof dst, cudaMemcpyDefault, (cudaStream_t)s),
                   cudaSuccess);
  assert_int_equal(cudaMemsetAsync(dst, 0, sizeof dst, (cudaStream_t)s), cudaSuccess);
  assert_int_equal(cudaMallocAsync(&dev, 16, (cudaStream_t)s), cudaSuccess); /* stream-ordered */
  assert_int_equal(cudaFreeAsync(dev, (cudaStream_t)s), cudaSuccess);
  /* Another stream is not part of the capture; the legacy stream is not
   * held by a non-blocking one. */
  assert_int_equal(cuStreamSynchronize(NULL), CUDA_SUCCESS);
  assert_int_equal(cudaMemcpy(dst, src, sizeof dst, cudaMemcpyDefault), cudaSuccess);
  assert_int_equal(end_and_destroy(s, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  cudaGetLastError();
}

/* cuda.h, cuStreamIsCapturing: while a blocking stream captures "the legacy
 * stream is in an unusable state" (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
 * using it, unlike asking it whether it captures, breaks that capture. The
 * synchronous copy and memset run on it. */
static void the_legacy_stream_used_during_a_blocking_capture_invalidates_it(void **state) {
  (void)state;
  CUstreamCaptureStatus st;
  unsigned char src[4] = {1, 2, 3, 4}, dst[4] = {0};
  CUstream s = begin_global(CU_STREAM_DEFAULT);
  assert_int_equal(cudaMemcpy(dst, src, sizeof dst, cudaMemcpyDefault),
                   cudaErrorStreamCaptureImplicit);
  assert_int_equal(dst[0], 0); /* not done */
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);

  s = begin_global(CU_STREAM_DEFAULT);
  assert_int_equal(cudaMemset(dst, 1, sizeof dst), cudaErrorStreamCaptureImplicit);
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  s = begin_global(CU_STREAM_DEFAULT);
  assert_int_equal(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  s = begin_global(CU_STREAM_DEFAULT);
  assert_int_equal(cudaMemcpyAsync(dst, src, sizeof dst, cudaMemcpyDefault, 0),
                   cudaErrorStreamCaptureImplicit);
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  cudaGetLastError();
}

/* Programming Guide: synchronizing "a broader handle which encompasses an
 * active stream capture, such as a device or context handle" is invalid
 * (cuda.h, cuCtxWaitEvent: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED "and
 * invalidate the capture"); with nothing capturing it succeeds. */
static void device_or_context_synchronize_during_a_capture_invalidates_it(void **state) {
  (void)state;
  CUstreamCaptureStatus st;
  CUstream s = begin_global(CU_STREAM_NON_BLOCKING);
  assert_int_equal(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  s = begin_global(CU_STREAM_NON_BLOCKING);
  assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
  cudaGetLastError();
}

typedef struct event_query {
  cudaEvent_t e;
  CUstreamCaptureMode mode;
  cudaError_t query, sync;
} event_query;

static void *query_event(void *p) {
  event_query *q = p;
  CUstreamCaptureMode m = q->mode;
  cuThreadExchangeStreamCaptureMode(&m);
  q->query = cudaEventQuery(q->e);
  q->sync = cudaEventSynchronize(q->e);
  return NULL;
}

static void query_on_another_thread(event_query *q) {
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, query_event, q), 0);
  pthread_join(t, NULL);
}

/* cudaEventQuery / cudaEventSynchronize: on an event last recorded in a
 * capturing stream, cudaErrorCapturedEvent in every mode (cuda.h,
 * cuThreadExchangeStreamCaptureMode); on any other event a potentially
 * unsafe call, prohibited in GLOBAL mode while another thread captures in
 * GLOBAL mode (PyTorch's caching allocator defers its cudaEventQuery calls
 * while a capture is underway for that reason) and invalidating that
 * capture; RELAXED mode may. */
static void event_queries_during_a_capture_follow_the_capture_mode(void **state) {
  (void)state;
  CUstreamCaptureStatus st;
  cudaEvent_t plain, captured;
  assert_int_equal(cudaEventCreate(&plain), cudaSuccess);
  assert_int_equal(cudaEventCreate(&captured), cudaSuccess);
  assert_int_equal(cudaEventRecord(plain, 0), cudaSuccess);
  CUstream s = begin_global(CU_STREAM_NON_BLOCKING);
  assert_int_equal(cudaEventRecord(captured, (cudaStream_t)s), cudaSuccess);

  event_query q = {.e = captured, .mode = CU_STREAM_CAPTURE_MODE_RELAXED};
  query_on_another_thread(&q);
  assert_int_equal(q.query, cudaErrorCapturedEvent);
  assert_int_equal(q.sync, cudaErrorCapturedEvent);
  q = (event_query){.e = plain, .mode = CU_STREAM_CAPTURE_MODE_RELAXED};
  query_on_another_thread(&q);
  assert_int_equal(q.query, cudaSuccess);
  assert_int_equal(q.sync, cudaSuccess);
  q.mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
  query_on_another_thread(&q);
  assert_int_equal(q.query, cudaSuccess);
  assert_int_equal(cuStreamIsCapturing(s, &st), CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  q.mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  query_on_another_thread(&q);
  assert_int_equal(q.query, cudaErrorStreamCaptureUnsupported);
  assert_int_equal(end_and_destroy(s, &st), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);

  /* Still the captured one until recorded outside a capture again. */
  assert_int_equal(cudaEventQuery(captured), cudaErrorCapturedEvent);
  assert_int_equal(cudaEventRecord(captured, 0), cudaSuccess);
  assert_int_equal(cudaEventQuery(captured), cudaSuccess);
  assert_int_equal(cudaEventQuery(plain), cudaSuccess); /* nothing captures */
  assert_int_equal(cudaEventDestroy(plain), cudaSuccess);
  assert_int_equal(cudaEventDestroy(captured), cudaSuccess);
  cudaGetLastError();
}

/* The driver-only tests run on the main thread with the primary context
 * current, as a driver API program makes it (a thread has none of its own). */
static int make_the_primary_context_current(void **state) {
  (void)state;
  CUcontext primary = NULL;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&primary, 0) != CUDA_SUCCESS) return -1;
  return cuCtxSetCurrent(primary) == CUDA_SUCCESS ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(begin_capture_marks_only_that_stream_active_until_end_capture),
      cmocka_unit_test(the_legacy_stream_is_unusable_while_a_blocking_stream_captures),
      cmocka_unit_test(capture_of_the_default_stream_or_with_an_unknown_mode_is_refused),
      cmocka_unit_test(the_per_thread_stream_captures_on_its_own_thread),
      cmocka_unit_test(only_relaxed_capture_may_end_on_another_thread),
      cmocka_unit_test(the_capture_mode_is_per_thread_and_governs_unsafe_calls),
      cmocka_unit_test(runtime_capture_reports_active_and_work_still_runs_at_once),
      cmocka_unit_test(a_captured_graph_cannot_be_instantiated_or_launched),
      cmocka_unit_test(get_proc_address_gives_the_capture_abi_of_the_version_asked),
      cmocka_unit_test(waiting_for_a_capturing_stream_fails_and_invalidates_its_capture),
      cmocka_unit_test(the_legacy_stream_used_during_a_blocking_capture_invalidates_it),
      cmocka_unit_test(device_or_context_synchronize_during_a_capture_invalidates_it),
      cmocka_unit_test(event_queries_during_a_capture_follow_the_capture_mode),
  };
  return cmocka_run_group_tests(tests, make_the_primary_context_current, NULL);
}
