/* simcuda libcupti.so.13: a GEMM on a created stream yields, after a flush,
 * one CUpti_ActivityKernel10 (realistic name, stream id, grid, timestamps),
 * the cuLaunchKernel driver API record with the same correlation id, and
 * the external correlation record of the id pushed on that thread; with
 * SIMCUDA_LAUNCH_API=runtime the launch record is a runtime one instead; plus
 * per-thread / per-kind push-pop, dropped records, single subscriber, the
 * SIMCUDA_CUPTI_BUSY switch and result strings; a full buffer is delivered
 * by simcuda's own thread before any flush, as CUPTI does. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cublas_v2.h>
#include <cuda.h>
#include <cupti.h>

enum { BUF_SIZE = 64 * 1024, MAX_SEEN = 64 };

static struct {
  int kernels, apis, externals;
  CUpti_ActivityKernel10 kernel[MAX_SEEN];
  CUpti_ActivityAPI api[MAX_SEEN];
  CUpti_ActivityExternalCorrelation ext[MAX_SEEN];
  int buffers_completed;
  int refuse_buffers;
  int misaligned_buffers;
  int small_buffers;
  size_t last_valid;
  int completed_elsewhere; /* by a thread other than the test's */
} seen;
static pthread_t test_thread;

static _Alignas(8) uint8_t static_buf[4096];

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max_records) {
  *max_records = 0;
  if (seen.refuse_buffers) {
    *buf = NULL;
    *size = 0;
    return;
  }
  if (seen.misaligned_buffers) {
    *buf = static_buf + 3;
    *size = sizeof(static_buf) - 3;
    return;
  }
  size_t n = seen.small_buffers ? 4096 : BUF_SIZE;
  *buf = aligned_alloc(8, n);
  *size = n;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                               size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *r = NULL;
  if (!pthread_equal(pthread_self(), test_thread)) seen.completed_elsewhere = 1;
  __atomic_add_fetch(&seen.buffers_completed, 1, __ATOMIC_RELEASE);
  seen.last_valid = valid;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      if (seen.kernels < MAX_SEEN) seen.kernel[seen.kernels++] = *(CUpti_ActivityKernel10 *)r;
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      if (seen.apis < MAX_SEEN) seen.api[seen.apis++] = *(CUpti_ActivityAPI *)r;
      break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      if (seen.externals < MAX_SEEN)
        seen.ext[seen.externals++] = *(CUpti_ActivityExternalCorrelation *)r;
      break;
    default:
      break;
    }
    assert_int_equal((uintptr_t)r % 8, 0);
  }
  if (buf < static_buf || buf >= static_buf + sizeof(static_buf)) free(buf);
}

static void reset_seen(void) {
  memset(&seen, 0, sizeof(seen));
}

static void run_sgemm(cudaStream_t stream, int m, int n, int k) {
  cublasHandle_t h;
  assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasSetStream(h, stream), CUBLAS_STATUS_SUCCESS);
  float *a = calloc((size_t)(m * k), 4), *b = calloc((size_t)(k * n), 4),
        *c = calloc((size_t)(m * n), 4);
  float one = 1, zero = 0;
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k, &zero, c, m),
                   CUBLAS_STATUS_SUCCESS);
  free(a);
  free(b);
  free(c);
  cublasDestroy(h);
}

static int setup(void **state) {
  (void)state;
  reset_seen();
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
  cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 0);
  unsetenv("SIMCUDA_LAUNCH_API");
  return 0;
}

static void kernel_api_and_external_records_share_one_correlation_id(void **state) {
  (void)state;
  assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), CUPTI_SUCCESS);
  assert_int_equal(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1),
                   CUPTI_SUCCESS);
  cudaStream_t s;
  assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
  unsigned long long sid = 0;
  assert_int_equal(cuStreamGetId((CUstream)s, &sid), CUDA_SUCCESS);
  uint64_t before = 0, after = 0;
  cuptiGetTimestamp(&before);
  assert_int_equal(
      cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 4242),
      CUPTI_SUCCESS);
  run_sgemm(s, 256, 130, 64);
  uint64_t popped = 0;
  assert_int_equal(
      cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &popped),
      CUPTI_SUCCESS);
  assert_int_equal(popped, 4242);
  cuptiGetTimestamp(&after);
  assert_int_equal(seen.kernels, 0); /* nothing delivered before the flush */
  assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  assert_int_equal(seen.kernels, 1);
  assert_int_equal(seen.apis, 1);
  assert_int_equal(seen.externals, 1);
  const CUpti_ActivityKernel10 *k = &seen.kernel[0];
  /* fp32 SGEMM with default math on sm_90: cuBLAS's CUDA-core ffma kernel. */
  assert_non_null(strstr(k->name, "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8"));
  assert_non_null(strstr(k->name, "ffma"));
  assert_int_equal(k->streamId, sid);
  assert_int_equal(k->gridX, 1); /* 256 / 256 */
  assert_int_equal(k->gridY, 2); /* 130 / 128, rounded up */
  assert_int_equal(k->gridZ, 1);
  assert_true(k->blockX > 0);
  assert_true(k->start >= before && k->end >= k->start && k->end <= after);
  assert_int_equal(k->deviceId, 0);
  assert_int_equal(seen.api[0].cbid, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  assert_int_equal(seen.api[0].correlationId, k->correlationId);
  assert_true(seen.api[0].start <= k->start);
  assert_int_equal(seen.ext[0].externalKind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2);
  assert_int_equal(seen.ext[0].externalId, 4242);
  assert_int_equal(seen.ext[0].correlationId, k->correlationId);
  cudaStreamDestroy(s);
}

/* CUPTI hands a full buffer to bufferCompleted from its own thread, without
 * waiting for a flush (a client that recycles buffers depends on it); the
 * partly filled one comes at the flush, which returns after every delivery. */
static void full_buffers_are_delivered_by_another_thread_before_the_flush(void **state) {
  (void)state;
  seen.small_buffers = 1;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1);
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 9);
  enum { GEMMS = 40 }; /* about 10 launches fill 4 KiB */
  for (int i = 0; i < GEMMS; i++)
    run_sgemm(NULL, 8, 8, 8);
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, NULL);
  for (int waited_ms = 0; waited_ms < 10000; waited_ms++) {
    if (__atomic_load_n(&seen.buffers_completed, __ATOMIC_ACQUIRE) > 0) break;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  assert_true(__atomic_load_n(&seen.buffers_completed, __ATOMIC_ACQUIRE) > 0);
  assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  assert_true(seen.completed_elsewhere);
  assert_int_equal(seen.kernels, GEMMS);
  assert_int_equal(seen.externals, GEMMS);
}

static void external_records_need_an_api_record(void **state) {
  (void)state;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 7);
  run_sgemm(NULL, 8, 8, 8);
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
  cuptiActivityFlushAll(0);
  assert_int_equal(seen.kernels, 1);
  assert_int_equal(seen.apis, 0);
  assert_int_equal(seen.externals, 0);
  assert_int_equal(seen.kernel[0].streamId, 7); /* the default stream */
}

/* A launch through the runtime has only a runtime API record: driver
 * records enabled give nothing for it (nor an external record), the
 * cudaLaunchKernel cbid enabled gives the record and the correlation. */
static void runtime_launches_need_the_runtime_api_record(void **state) {
  (void)state;
  setenv("SIMCUDA_LAUNCH_API", "runtime", 1);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  assert_int_equal(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1),
                   CUPTI_SUCCESS);
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 5);
  run_sgemm(NULL, 8, 8, 8);
  assert_int_equal(
      cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1),
      CUPTI_SUCCESS);
  run_sgemm(NULL, 8, 8, 8);
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, NULL);
  cuptiActivityFlushAll(0);
  assert_int_equal(seen.kernels, 2);
  assert_int_equal(seen.apis, 1);
  assert_int_equal(seen.externals, 1);
  assert_int_equal(seen.api[0].kind, CUPTI_ACTIVITY_KIND_RUNTIME);
  assert_int_equal(seen.api[0].cbid, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  assert_int_equal(seen.api[0].correlationId, seen.kernel[1].correlationId);
  assert_int_equal(seen.ext[0].correlationId, seen.kernel[1].correlationId);
  assert_int_equal(seen.ext[0].externalId, 5);
  assert_int_equal(cuptiActivityEnableRuntimeApi(0, 1), CUPTI_ERROR_INVALID_PARAMETER);
}

static void each_pushed_kind_gives_its_top_id(void **state) {
  (void)state;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 1);
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 2);
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, 30);
  run_sgemm(NULL, 4, 4, 4);
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
  run_sgemm(NULL, 4, 4, 4);
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1, NULL);
  cuptiActivityFlushAll(0);
  assert_int_equal(seen.kernels, 0); /* kernel records were not enabled */
  assert_int_equal(seen.apis, 2);
  assert_int_equal(seen.externals, 4);
  uint64_t custom0[2] = {0}, custom1[2] = {0};
  for (int i = 0; i < 4; i++) {
    int launch = seen.ext[i].correlationId == seen.api[0].correlationId ? 0 : 1;
    if (seen.ext[i].externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
      custom0[launch] = seen.ext[i].externalId;
    else
      custom1[launch] = seen.ext[i].externalId;
  }
  assert_int_equal(custom0[0], 2);
  assert_int_equal(custom0[1], 1);
  assert_int_equal(custom1[0], 30);
  assert_int_equal(custom1[1], 30);
}

static void *push_on_other_thread(void *arg) {
  (void)arg;
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, 99);
  return NULL;
}

static void external_ids_are_per_thread(void **state) {
  (void)state;
  pthread_t t;
  pthread_create(&t, NULL, push_on_other_thread, NULL);
  pthread_join(t, NULL);
  uint64_t id = 0;
  assert_int_equal(
      cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2, &id),
      CUPTI_ERROR_QUEUE_EMPTY);
  assert_int_equal(
      cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1),
      CUPTI_ERROR_INVALID_PARAMETER);
}

static void records_without_a_buffer_are_counted_as_dropped(void **state) {
  (void)state;
  size_t before = 0, after = 0;
  cuptiActivityGetNumDroppedRecords(NULL, 0, &before);
  seen.refuse_buffers = 1;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  run_sgemm(NULL, 4, 4, 4);
  cuptiActivityGetNumDroppedRecords(NULL, 0, &after);
  assert_int_equal(after - before, 1);
  seen.refuse_buffers = 0;
}

static void misaligned_client_buffers_still_hold_aligned_records(void **state) {
  (void)state;
  seen.misaligned_buffers = 1;
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
  run_sgemm(NULL, 4, 4, 4);
  run_sgemm(NULL, 4, 4, 4);
  cuptiActivityFlushAll(0);
  seen.misaligned_buffers = 0;
  assert_int_equal(seen.kernels, 2);
  assert_int_equal(seen.apis, 2);
  assert_int_equal(seen.kernel[0].correlationId, seen.api[0].correlationId);
  assert_int_equal(seen.kernel[1].correlationId, seen.api[1].correlationId);
  assert_int_not_equal(seen.kernel[0].correlationId, seen.kernel[1].correlationId);
}

static void one_subscriber_at_a_time(void **state) {
  (void)state;
  CUpti_SubscriberHandle a, b;
  assert_int_equal(cuptiSubscribe(&a, NULL, NULL), CUPTI_SUCCESS);
  assert_int_equal(cuptiSubscribe(&b, NULL, NULL), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  assert_int_equal(cuptiUnsubscribe(a), CUPTI_SUCCESS);
  assert_int_equal(cuptiSubscribe(&b, NULL, NULL), CUPTI_SUCCESS);
  assert_int_equal(cuptiUnsubscribe(b), CUPTI_SUCCESS);
}

static void busy_switch_makes_cupti_look_taken(void **state) {
  (void)state;
  CUpti_SubscriberHandle a;
  setenv("SIMCUDA_CUPTI_BUSY", "1", 1);
  assert_int_equal(cuptiSubscribe(&a, NULL, NULL), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                   CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  unsetenv("SIMCUDA_CUPTI_BUSY");
  assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
}

static void kinds_simcuda_never_produces_are_refused(void **state) {
  (void)state;
  assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_ERROR_NOT_SUPPORTED);
  assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), CUPTI_ERROR_NOT_SUPPORTED);
  assert_int_equal(cuptiActivityEnable((CUpti_ActivityKind)100000), CUPTI_ERROR_INVALID_KIND);
}

static void result_strings_name_the_code(void **state) {
  (void)state;
  const char *s = NULL;
  assert_int_equal(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &s),
                   CUPTI_SUCCESS);
  assert_string_equal(s, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
  assert_int_equal(cuptiGetResultString(CUPTI_SUCCESS, &s), CUPTI_SUCCESS);
  assert_string_equal(s, "CUPTI_SUCCESS");
}

int main(void) {
  test_thread = pthread_self();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(kernel_api_and_external_records_share_one_correlation_id,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(external_records_need_an_api_record, setup, teardown),
      cmocka_unit_test_setup_teardown(full_buffers_are_delivered_by_another_thread_before_the_flush,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(runtime_launches_need_the_runtime_api_record, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(each_pushed_kind_gives_its_top_id, setup, teardown),
      cmocka_unit_test_setup_teardown(external_ids_are_per_thread, setup, teardown),
      cmocka_unit_test_setup_teardown(records_without_a_buffer_are_counted_as_dropped, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(misaligned_client_buffers_still_hold_aligned_records, setup,
                                      teardown),
      cmocka_unit_test(one_subscriber_at_a_time),
      cmocka_unit_test_setup_teardown(busy_switch_makes_cupti_look_taken, setup, teardown),
      cmocka_unit_test(kinds_simcuda_never_produces_are_refused),
      cmocka_unit_test(result_strings_name_the_code),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
