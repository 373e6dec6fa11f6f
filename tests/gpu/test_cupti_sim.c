/* profiler/gpu/cupti.c under simcuda's libcupti.so.13: op ids pushed around
 * cuBLAS GEMMs come back with the kernels those GEMMs launched, the kernel
 * names classify as Tensor Core or not as the GEMM's precision implies,
 * mpprof's own scan kernels are left out, and a CUPTI held by another tool or
 * switched off is reported as such. Run with LD_LIBRARY_PATH=<simcuda dir>;
 * argv[1] selects the scenario: "ok", "runtime" (SIMCUDA_LAUNCH_API=runtime:
 * launches leave runtime API records only, as cuBLAS's static runtime does on a
 * GPU), "busy" (SIMCUDA_CUPTI_BUSY=1), "taken" (another client of the process
 * subscribed CUPTI first), "off" (MPPROF_CUPTI=off, as mpp_config passes it),
 * "refused" (SIMCUDA_CUPTI_REFUSE_KIND=10: enabling CONCURRENT_KERNEL, the
 * last step of mpprof's start, fails), "fork" (a fork on another thread while
 * the program registers its buffer callbacks). */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cublas_v2.h>
#include <cupti.h>

#include "analysis/kernel_class.h"
#include "analysis/raw_format.h"
#include "profiler/gpu/cupti_program.h"
#include "profiler/gpu/gpu.h"
#include "tests/simcuda/simcuda_internal.h"

#define MAXK 64
static struct {
  uint64_t op;
  char name[256];
  uint64_t start, end;
} g_k[MAXK];
static int g_nk;

static void sink(uint64_t op, const char *name, uint64_t start, uint64_t end, uint32_t stream) {
  (void)stream;
  if (g_nk == MAXK) return;
  g_k[g_nk].op = op;
  snprintf(g_k[g_nk].name, sizeof g_k[g_nk].name, "%s", name);
  g_k[g_nk].start = start;
  g_k[g_nk].end = end;
  g_nk++;
}

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   int, const float *, const float *, int, const float *, int,
                                   const float *, float *, int);
typedef cublasStatus_t (*gemmex_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void *, const void *, cudaDataType, int,
                                    const void *, cudaDataType, int, const void *, void *,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);

static void *sym(void *lib, const char *name) {
  void *p = dlsym(lib, name);
  if (!p) fail_msg("simcuda lacks %s", name);
  return p;
}

/* One fp32 SGEMM under op 101 and one fp16 GemmEx under op 202, 64^3. */
static void run_gemms(void) {
  void *lib = dlopen("libcublas.so.13", RTLD_NOW);
  if (!lib) fail_msg("libcublas.so.13 (simcuda) not found: %s", dlerror());
  cublasHandle_t h;
  assert_int_equal(((create_fn)sym(lib, "cublasCreate_v2"))(&h), CUBLAS_STATUS_SUCCESS);
  enum { N = 64 };
  static float a[N * N], b[N * N], c[N * N];
  static uint16_t ha[N * N], hb[N * N];
  for (int i = 0; i < N * N; i++) {
    a[i] = b[i] = 0.5f;
    ha[i] = hb[i] = 0x3800; /* 0.5 in fp16 */
  }
  float one = 1, zero = 0;
  mpp_cupti_push(101);
  assert_int_equal(((sgemm_fn)sym(lib, "cublasSgemm_v2"))(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N,
                                                          &one, a, N, b, N, &zero, c, N),
                   CUBLAS_STATUS_SUCCESS);
  mpp_cupti_pop();
  mpp_cupti_push(202);
  assert_int_equal(
      ((gemmex_fn)sym(lib, "cublasGemmEx"))(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, ha,
                                            CUDA_R_16F, N, hb, CUDA_R_16F, N, &zero, c, CUDA_R_32F,
                                            N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT_TENSOR_OP),
      CUBLAS_STATUS_SUCCESS);
  mpp_cupti_pop();
  assert_int_equal(((destroy_fn)sym(lib, "cublasDestroy_v2"))(h), CUBLAS_STATUS_SUCCESS);
}

/* A "kernel" named like mpprof's own device scan. */
static void run_own_scan_kernel(void) {
  void *drv = dlopen("libcuda.so.1", RTLD_NOW);
  assert_non_null(drv);
  uint64_t (*start)(const simcuda_kernel *) = sym(drv, "simcuda_kernel_start");
  void (*finish)(const simcuda_kernel *, uint64_t) = sym(drv, "simcuda_kernel_finish");
  simcuda_kernel k = {"mpp_scan_ops", NULL, {1, 1, 1}, {256, 1, 1}};
  mpp_cupti_push(303);
  finish(&k, start(&k));
  mpp_cupti_pop();
}

static int kernels_of(uint64_t op, mp_tc_verdict *ret_tc, mp_dtype *ret_a) {
  int n = 0;
  for (int i = 0; i < g_nk; i++) {
    if (g_k[i].op != op) continue;
    mp_kernel_class kc;
    mp_kernel_classify(g_k[i].name, &kc);
    /* The GEMM kernel decides; helpers (split-K reduce) would say no. */
    if (n == 0 || kc.tc == MP_TC_YES) {
      *ret_tc = kc.tc;
      *ret_a = kc.a_dtype;
    }
    n++;
  }
  return n;
}

static void ops_get_their_kernels_back_through_external_correlation(void **state) {
  (void)state;
  mpp_cupti_set_sink(sink);
  mpp_cupti_start(NULL, NULL);
  assert_string_equal(mpp_cupti_status(), "ok");
  run_gemms();
  run_own_scan_kernel();
  mpp_cupti_flush(true);
  for (int i = 0; i < g_nk; i++)
    print_message("op %llu: %s\n", (unsigned long long)g_k[i].op, g_k[i].name);
  mp_tc_verdict tc = MP_TC_UNKNOWN;
  mp_dtype a = MP_DTYPE_INVALID;
  assert_true(kernels_of(101, &tc, &a) >= 1);
  assert_int_equal(tc, MP_TC_NO); /* fp32 SGEMM on an sm_90: the ffma xmma kernel */
  assert_true(kernels_of(202, &tc, &a) >= 1);
  assert_int_equal(tc, MP_TC_YES);
  assert_int_equal(a, MP_FP16);
  for (int i = 0; i < g_nk; i++) {
    assert_true(g_k[i].op == 101 || g_k[i].op == 202); /* nothing unattributed */
    assert_true(g_k[i].end >= g_k[i].start);
  }
  assert_int_equal(kernels_of(303, &tc, &a), 0); /* mpprof's own kernel is not the app's */
  assert_int_equal(mpp_cupti_dropped(), 0);
}

/* A checkpoint's flush while a kernel still runs (simcuda's
 * simcuda_cupti_kernels_running: the last kernel record is incomplete until
 * it is turned off). CUPTI's forced flush hands such a record over without
 * its times, which then never come (cupti_activity.h: force at the end of
 * the session only): a checkpoint forcing it recorded the kernel as 0 ns at
 * time 0. Its default flush leaves the buffer; the kernel comes whole at the
 * final flush, with every other one. */
static void a_checkpoint_leaves_a_running_kernel_to_a_later_flush(void **state) {
  (void)state;
  void *lib = dlopen("libcupti.so.13", RTLD_NOW);
  if (!lib) fail_msg("libcupti.so.13 (simcuda) not found: %s", dlerror());
  void (*running)(int) = (void (*)(int))sym(lib, "simcuda_cupti_kernels_running");
  g_nk = 0;
  mpp_cupti_set_sink(sink);
  mpp_cupti_start(NULL, NULL);
  assert_string_equal(mpp_cupti_status(), "ok");
  running(1);
  run_gemms();
  mpp_cupti_flush(false); /* a checkpoint */
  for (int i = 0; i < g_nk; i++)
    if (g_k[i].start == 0 || g_k[i].end < g_k[i].start)
      fail_msg("kernel %s of op %llu delivered without its times", g_k[i].name,
               (unsigned long long)g_k[i].op);
  running(0); /* it finished */
  mpp_cupti_flush(true);
  mp_tc_verdict tc = MP_TC_UNKNOWN;
  mp_dtype a = MP_DTYPE_INVALID;
  assert_true(kernels_of(101, &tc, &a) >= 1);
  assert_true(kernels_of(202, &tc, &a) >= 1);
  for (int i = 0; i < g_nk; i++)
    assert_true(g_k[i].start > 0 && g_k[i].end >= g_k[i].start);
}

/* simcuda then writes no driver launch record at all: the op ids can only
 * come back if cupti.c enabled the runtime launch API records. */
static void ops_get_their_kernels_back_through_runtime_launch_records(void **state) {
  const char *api = getenv("SIMCUDA_LAUNCH_API");
  assert_non_null(api);
  assert_string_equal(api, "runtime");
  ops_get_their_kernels_back_through_external_correlation(state);
}

static void cupti_held_by_another_subscriber_is_reported_and_harmless(void **state) {
  (void)state;
  mpp_cupti_set_sink(sink);
  mpp_cupti_start(NULL, NULL);
  assert_string_equal(mpp_cupti_status(), "held_by_other_subscriber");
  run_gemms(); /* push/pop are no-ops: the GEMMs still run */
  mpp_cupti_flush(true);
  assert_int_equal(g_nk, 0);
}

typedef CUptiResult (*subscribe_fn)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);

static void CUPTIAPI other_callback(void *userdata, CUpti_CallbackDomain domain,
                                    CUpti_CallbackId cbid, const void *data) {
  (void)userdata;
  (void)domain;
  (void)cbid;
  (void)data;
}

/* Another CUPTI client of the process (PyTorch's profiler, a tool named by
 * CUDA_INJECTION64_PATH) subscribing, as every client must before its first
 * other CUPTI call (cupti_callbacks.h, cuptiSubscribe). */
static CUptiResult other_client_subscribes(void) {
  void *lib = dlopen("libcupti.so.13", RTLD_NOW);
  if (!lib) fail_msg("libcupti.so.13 (simcuda) not found: %s", dlerror());
  CUpti_SubscriberHandle h = NULL;
  return ((subscribe_fn)sym(lib, "cuptiSubscribe"))(&h, other_callback, NULL);
}

/* mpprof holds CUPTI once it uses it: the next client is told so. */
static void a_later_client_finds_cupti_taken(void **state) {
  (void)state;
  mpp_cupti_start(NULL, NULL);
  assert_string_equal(mpp_cupti_status(), "ok");
  assert_int_equal(other_client_subscribes(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
}

/* Subscribed first, the other client keeps CUPTI: mpprof stays out (no
 * activity calls that would replace that client's buffer callbacks). */
static void cupti_subscribed_by_another_client_is_left_alone(void **state) {
  (void)state;
  assert_int_equal(other_client_subscribes(), CUPTI_SUCCESS);
  mpp_cupti_set_sink(sink);
  mpp_cupti_start(NULL, NULL);
  assert_string_equal(mpp_cupti_status(), "held_by_other_subscriber");
  run_gemms();
  mpp_cupti_flush(true);
  assert_int_equal(g_nk, 0);
}

/* The other client's activity buffers: every record CUPTI hands it is counted. */
static int g_other_records;

static void CUPTIAPI other_requested(uint8_t **buf, size_t *size, size_t *max_records) {
  static uint8_t b[1 << 16] __attribute__((aligned(8)));
  *buf = b;
  *size = sizeof b;
  *max_records = 0;
}

typedef CUptiResult (*next_record_fn)(uint8_t *, size_t, CUpti_Activity **);
static next_record_fn g_next_record;

static void CUPTIAPI other_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                     size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *rec = NULL;
  while (g_next_record(buf, valid, &rec) == CUPTI_SUCCESS)
    g_other_records++;
}

typedef CUptiResult (*register_fn)(CUpti_BuffersCallbackRequestFunc,
                                   CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*flush_all_fn)(uint32_t);

/* mpprof's start failed after it had turned on external correlation and the
 * launch API records: it leaves CUPTI as it found it. A client subscribing
 * after it (mpprof let go), with buffers but no activity of its own enabled,
 * gets no record from the GEMMs. */
static void a_start_failing_part_way_leaves_no_activity_enabled(void **state) {
  (void)state;
  mpp_cupti_set_sink(sink);
  mpp_cupti_start(NULL, NULL);
  assert_string_equal(mpp_cupti_status(), "error");
  assert_int_equal(other_client_subscribes(), CUPTI_SUCCESS);
  void *lib = dlopen("libcupti.so.13", RTLD_NOW);
  assert_non_null(lib);
  g_next_record = (next_record_fn)sym(lib, "cuptiActivityGetNextRecord");
  assert_int_equal(
      ((register_fn)sym(lib, "cuptiActivityRegisterCallbacks"))(other_requested, other_completed),
      CUPTI_SUCCESS);
  run_gemms();
  assert_int_equal(
      ((flush_all_fn)sym(lib, "cuptiActivityFlushAll"))(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED),
      CUPTI_SUCCESS);
  assert_int_equal(g_other_records, 0);
  assert_int_equal(g_nk, 0);
}

static void cupti_switched_off_is_reported_as_disabled(void **state) {
  (void)state;
  mpp_cupti_set_sink(sink);
  mpp_cupti_start("off", NULL); /* MPPROF_CUPTI=off */
  assert_string_equal(mpp_cupti_status(), "disabled");
  run_gemms();
  mpp_cupti_flush(true);
  assert_int_equal(g_nk, 0);
}

/* The program registers its buffer callbacks on one thread (mpprof's
 * registration lock held through the real call, here one that waits) while
 * another forks: the child, where only the forking thread lives, got that
 * lock held for ever, and its next hooked CUPTI activity call, or mpprof's
 * start at its activation, waited for it (the test's timeout ends it). The
 * registration the fork cut may be CUPTI's in the child: mpprof leaves CUPTI
 * to the program there. */
static pthread_mutex_t g_fork_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_fork_cv = PTHREAD_COND_INITIALIZER;
static int g_fork_stage; /* 1: the registration is inside the real call; 2: forked */

static CUptiResult CUPTIAPI register_until_forked(CUpti_BuffersCallbackRequestFunc requested,
                                                  CUpti_BuffersCallbackCompleteFunc completed) {
  (void)requested;
  (void)completed;
  pthread_mutex_lock(&g_fork_mu);
  g_fork_stage = 1;
  pthread_cond_broadcast(&g_fork_cv);
  while (g_fork_stage < 2)
    pthread_cond_wait(&g_fork_cv, &g_fork_mu);
  pthread_mutex_unlock(&g_fork_mu);
  return CUPTI_SUCCESS;
}

static void *program_registers(void *arg) {
  (void)arg;
  mpp_cupti_program_registers(register_until_forked, other_requested, other_completed);
  return NULL;
}

static void a_fork_during_the_programs_registration_leaves_the_child_usable(void **state) {
  (void)state;
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, program_registers, NULL), 0);
  pthread_mutex_lock(&g_fork_mu);
  while (g_fork_stage < 1)
    pthread_cond_wait(&g_fork_cv, &g_fork_mu);
  pthread_mutex_unlock(&g_fork_mu);
  pid_t pid = fork();
  if (pid == 0) {
    mpp_cupti_fork_child(); /* as runtime.c's atfork_child */
    mpp_cupti_program_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, true);
    mpp_cupti_set_sink(sink);
    mpp_cupti_start(NULL, NULL);
    _exit(strcmp(mpp_cupti_status(), MP_CUPTI_HELD_BY_PROGRAM) ? 3 : 0);
  }
  assert_true(pid > 0);
  pthread_mutex_lock(&g_fork_mu);
  g_fork_stage = 2;
  pthread_cond_broadcast(&g_fork_cv);
  pthread_mutex_unlock(&g_fork_mu);
  assert_int_equal(pthread_join(t, NULL), 0);
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ok";
  const struct CMUnitTest ok[] = {
      cmocka_unit_test(ops_get_their_kernels_back_through_external_correlation),
      cmocka_unit_test(a_later_client_finds_cupti_taken),
      cmocka_unit_test(a_checkpoint_leaves_a_running_kernel_to_a_later_flush)};
  const struct CMUnitTest runtime[] = {
      cmocka_unit_test(ops_get_their_kernels_back_through_runtime_launch_records)};
  const struct CMUnitTest busy[] = {
      cmocka_unit_test(cupti_held_by_another_subscriber_is_reported_and_harmless)};
  const struct CMUnitTest taken[] = {
      cmocka_unit_test(cupti_subscribed_by_another_client_is_left_alone)};
  const struct CMUnitTest off[] = {cmocka_unit_test(cupti_switched_off_is_reported_as_disabled)};
  const struct CMUnitTest refused[] = {
      cmocka_unit_test(a_start_failing_part_way_leaves_no_activity_enabled)};
  const struct CMUnitTest forked[] = {
      cmocka_unit_test(a_fork_during_the_programs_registration_leaves_the_child_usable)};
  if (!strcmp(mode, "fork")) return cmocka_run_group_tests(forked, NULL, NULL);
  if (!strcmp(mode, "runtime")) return cmocka_run_group_tests(runtime, NULL, NULL);
  if (!strcmp(mode, "busy")) return cmocka_run_group_tests(busy, NULL, NULL);
  if (!strcmp(mode, "taken")) return cmocka_run_group_tests(taken, NULL, NULL);
  if (!strcmp(mode, "off")) return cmocka_run_group_tests(off, NULL, NULL);
  if (!strcmp(mode, "refused")) return cmocka_run_group_tests(refused, NULL, NULL);
  return cmocka_run_group_tests(ok, NULL, NULL);
}
