/* profiler/gpu/cuda_driver.c and devscan.c without a GPU: under simcuda's
 * libcuda.so.1 ("sim") the driver is found through cuGetProcAddress and
 * answers; with no driver at all ("none") every query says "unavailable"
 * and nothing crashes; a fork child never uses the parent's driver. */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/gpu.h"

static void sink(void *cookie, const mp_stats *s) {
  (void)cookie;
  (void)s;
}

static void simcuda_driver_is_found_and_answers(void **state) {
  (void)state;
  assert_true(mpp_cuda_available());
  char name[64];
  int major = 0, minor = 0;
  assert_int_equal(mpp_cuda_device_info(name, sizeof name, &major, &minor), 0);
  assert_true(name[0] != '\0');
  assert_true(major >= 7);
  float *p = malloc(64);
  assert_int_equal(mpp_cuda_pointer_kind(p), MPP_MEM_HOST);
  assert_int_equal(mpp_cuda_pointer_kind(NULL), MPP_MEM_UNKNOWN);
  assert_false(mpp_cuda_stream_capturing(NULL));
  free(p);
}

typedef struct fresh {
  int info_rc;
  mpp_mem_kind kind;
  bool null_capturing, per_thread_capturing;
} fresh;

static void *query_on_a_fresh_thread(void *p) {
  fresh *f = p;
  char name[64];
  float x = 0;
  f->info_rc = mpp_cuda_device_info(name, sizeof name, NULL, NULL);
  f->kind = mpp_cuda_pointer_kind(&x);
  f->null_capturing = mpp_cuda_stream_capturing(NULL);
  f->per_thread_capturing = mpp_cuda_stream_capturing(CU_STREAM_PER_THREAD);
  return NULL;
}

/* A thread that never used CUDA has no current context (cuda.h,
 * cuCtxGetCurrent): the device is still found (device 0, as cudart would
 * pick), pointers are still classified, and the NULL and per-thread
 * streams, which name the current context's (cuStreamGetCtx), are not being
 * captured: the driver's CUDA_ERROR_INVALID_CONTEXT for them is no capture
 * (a call on cudaStreamPerThread as a thread's first CUDA call had its
 * scans counted as "graph_capture"). */
static void a_thread_without_a_context_still_gets_answers(void **state) {
  (void)state;
  fresh f = {.info_rc = -1, .kind = MPP_MEM_UNKNOWN};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, query_on_a_fresh_thread, &f), 0);
  pthread_join(t, NULL);
  assert_int_equal(f.info_rc, 0);
  assert_int_equal(f.kind, MPP_MEM_HOST);
  assert_false(f.null_capturing);
  assert_false(f.per_thread_capturing);
}

static void device_scan_without_loadable_kernels_says_enosys(void **state) {
  (void)state;
  float x[4] = {1, 2, 3, 4};
  mp_view v = {MP_FP32, x, 4, 1, 4, 1, 0};
  /* simcuda has no module loader; a build without nvcc has no fatbin. */
  assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, NULL), -ENOSYS);
  const void *ptrs[1] = {x};
  assert_int_equal(mpp_devscan_enqueue_ptrs(NULL, &v, ptrs, sink, NULL), -ENOSYS);
  mpp_devscan_drain();
}

static void fork_child_does_not_use_the_parents_driver(void **state) {
  (void)state;
  assert_true(mpp_cuda_available());
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(mpp_cuda_available() ? 1 : 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* An application thread capturing in GLOBAL mode. */
typedef struct app_capture {
  CUresult (*begin)(CUstream, CUstreamCaptureMode);
  CUresult (*end)(CUstream, CUgraph *);
  CUstream s;
  pthread_barrier_t begun, go;
  CUresult begin_r, end_r;
  CUgraph g;
} app_capture;

static void *app_thread(void *p) {
  app_capture *c = p;
  c->begin_r = c->begin(c->s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  pthread_barrier_wait(&c->begun);
  pthread_barrier_wait(&c->go);
  c->end_r = c->end(c->s, &c->g);
  return NULL;
}

/* mpprof's own driver work between mpp_cu_capture_relax and _restore runs
 * in RELAXED mode (cuda.h, cuThreadExchangeStreamCaptureMode), so a
 * potentially unsafe call there (simcuda's cudaMalloc stands for one) while
 * the application captures in GLOBAL mode on another thread neither fails
 * nor invalidates that capture; the thread's own mode is back after. */
static void own_calls_beside_a_global_capture_run_relaxed(void **state) {
  (void)state;
  const mpp_cu_api *cu = mpp_cu();
  assert_non_null(cu);
  assert_non_null(cu->capture_mode_exchange);
  void *drv = dlopen("libcuda.so.1", RTLD_NOW);
  void *rt = dlopen("libcudart.so.13", RTLD_NOW);
  assert_non_null(drv);
  assert_non_null(rt);
  int (*cuda_malloc)(void **, size_t) = (int (*)(void **, size_t))dlsym(rt, "cudaMalloc");
  int (*cuda_free)(void *) = (int (*)(void *))dlsym(rt, "cudaFree");
  app_capture c;
  memset(&c, 0, sizeof c);
  c.begin = (CUresult(*)(CUstream, CUstreamCaptureMode))dlsym(drv, "cuStreamBeginCapture_v2");
  c.end = (CUresult(*)(CUstream, CUgraph *))dlsym(drv, "cuStreamEndCapture");
  assert_true(cuda_malloc && cuda_free && c.begin && c.end);
  assert_int_equal(cu->stream_create(&c.s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  pthread_barrier_init(&c.begun, NULL, 2);
  pthread_barrier_init(&c.go, NULL, 2);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, app_thread, &c), 0);
  pthread_barrier_wait(&c.begun);
  CUstreamCaptureMode mode = mpp_cu_capture_relax(cu);
  void *p = NULL;
  int malloc_r = cuda_malloc(&p, 64);
  mpp_cu_capture_restore(cu, mode);
  CUstreamCaptureMode now = CU_STREAM_CAPTURE_MODE_GLOBAL;
  CUresult exchange_r = cu->capture_mode_exchange(&now);
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult capturing_r = cu->stream_is_capturing(c.s, &st);
  pthread_barrier_wait(&c.go);
  pthread_join(t, NULL);
  assert_int_equal(c.begin_r, CUDA_SUCCESS);
  assert_int_equal(malloc_r, 0); /* cudaSuccess */
  assert_int_equal(exchange_r, CUDA_SUCCESS);
  assert_int_equal(now, CU_STREAM_CAPTURE_MODE_GLOBAL);
  assert_int_equal(capturing_r, CUDA_SUCCESS);
  assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  assert_int_equal(c.end_r, CUDA_SUCCESS);
  assert_non_null(c.g);
  CUresult (*graph_destroy)(CUgraph) = (CUresult(*)(CUgraph))dlsym(drv, "cuGraphDestroy");
  assert_non_null(graph_destroy);
  assert_int_equal(graph_destroy(c.g), CUDA_SUCCESS); /* the capture's graph is the caller's */
  cuda_free(p);
  pthread_barrier_destroy(&c.begun);
  pthread_barrier_destroy(&c.go);
  assert_int_equal(cu->stream_destroy(c.s), CUDA_SUCCESS);
}

static void no_driver_means_unavailable_everywhere(void **state) {
  (void)state;
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) skip(); /* a real driver is installed */
  assert_false(mpp_cuda_available());
  char name[16] = "x";
  assert_int_equal(mpp_cuda_device_info(name, sizeof name, NULL, NULL), -ENOSYS);
  int x = 0;
  assert_int_equal(mpp_cuda_pointer_kind(&x), MPP_MEM_HOST);
  assert_false(mpp_cuda_stream_capturing(NULL));
  mp_view v = {MP_FP32, &x, 1, 1, 1, 1, 0};
  assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, NULL), -ENOSYS);
  const void *ptrs[1] = {&x};
  assert_int_equal(mpp_devscan_enqueue_ptrs(NULL, &v, ptrs, sink, NULL), -ENOSYS);
  mpp_devscan_drain();
}

/* As a driver API program does before its work: the test's thread has the
 * primary context current (a thread starts with none). */
static int make_the_primary_context_current(void **state) {
  (void)state;
  const mpp_cu_api *cu = mpp_cu();
  CUcontext primary = NULL;
  if (!cu || cu->primary_ctx_retain(&primary, 0) != CUDA_SUCCESS) return -1;
  return cu->ctx_set_current(primary) == CUDA_SUCCESS ? 0 : -1;
}

int main(int argc, char **argv) {
  const struct CMUnitTest sim[] = {
      cmocka_unit_test(simcuda_driver_is_found_and_answers),
      cmocka_unit_test(device_scan_without_loadable_kernels_says_enosys),
      cmocka_unit_test(fork_child_does_not_use_the_parents_driver),
      cmocka_unit_test(own_calls_beside_a_global_capture_run_relaxed),
      cmocka_unit_test(a_thread_without_a_context_still_gets_answers),
  };
  const struct CMUnitTest none[] = {cmocka_unit_test(no_driver_means_unavailable_everywhere)};
  if (argc > 1 && !strcmp(argv[1], "none")) return cmocka_run_group_tests(none, NULL, NULL);
  return cmocka_run_group_tests(sim, make_the_primary_context_current, NULL);
}
