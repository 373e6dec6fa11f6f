/* The device scan's algorithm (kernels/scan_abi.h per-element logic, run on
 * the CPU by mpp_scan_emulate) plus its host decoding (mpp_scan_finish) gives
 * the host scanner's record bit for bit: random and boundary data, every
 * source dtype, contiguous, strided and by pointer array. What only a GPU adds (atomics, warps,
 * vector loads) is checked by tests/gpu/devscan_check.c on a GPU. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "profiler/gpu/scan_plan.h"
#include "tests/gpu/scan_data.h"

static void same_as_host(const mp_view *v) {
  mp_stats *want = malloc(sizeof *want), *got = malloc(sizeof *got);
  mpp_scan_result *r = calloc(1, sizeof *r);
  mpp_scan_params p;
  mp_stats_init(want, v->dtype);
  mp_stats_init(got, v->dtype);
  assert_int_equal(mp_scan_with(want, v, MP_SCAN_PORTABLE), 0);
  assert_int_equal(mpp_scan_plan(v, &p), 0);
  mpp_scan_emulate(&p, r);
  mpp_scan_finish(&p, r, got);
  const char *diff = mpp_stats_diff(want, got);
  if (diff) fail_msg("%s: %s differs from the host scanner", mp_dtype_name(v->dtype), diff);
  free(want);
  free(got);
  free(r);
}

static const mp_dtype k_dtypes[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};

static void random_and_boundary_data_match_host_scanner_for_every_dtype(void **state) {
  (void)state;
  for (size_t d = 0; d < sizeof k_dtypes / sizeof k_dtypes[0]; d++) {
    uint64_t n = 20000;
    void *buf = mpp_scan_test_data(k_dtypes[d], n, 1234 + d);
    mp_view v = {k_dtypes[d], buf, n, 1, n, 1, 0};
    same_as_host(&v);
    free(buf);
  }
}

static void every_8_and_16_bit_pattern_matches_host_scanner(void **state) {
  (void)state;
  for (size_t d = 2; d < sizeof k_dtypes / sizeof k_dtypes[0]; d++) {
    unsigned w = mp_dtype_size(k_dtypes[d]);
    uint64_t n = 1ull << (8 * w);
    uint8_t *buf = malloc(n * w);
    for (uint64_t i = 0; i < n; i++)
      memcpy(buf + i * w, &i, w);
    mp_view v = {k_dtypes[d], buf, n, 1, n, 1, 0};
    same_as_host(&v);
    free(buf);
  }
}

static void strided_batched_views_match_host_scanner(void **state) {
  (void)state;
  for (size_t d = 0; d < sizeof k_dtypes / sizeof k_dtypes[0]; d++) {
    uint64_t rows = 37, cols = 11, ld = 40, batch = 3, stride = 40 * 11 + 5;
    void *buf = mpp_scan_test_data(k_dtypes[d], stride * batch, 99 + d);
    mp_view v = {k_dtypes[d], buf, rows, cols, ld, batch, (int64_t)stride};
    same_as_host(&v);
    mp_view bc = {k_dtypes[d], buf, rows, cols, ld, batch, 0}; /* broadcast batch */
    same_as_host(&bc);
    free(buf);
  }
}

/* cublas*Batched: matrices at unrelated addresses, found through an array. */
static void pointer_array_batches_match_host_scanner(void **state) {
  (void)state;
  for (size_t d = 0; d < sizeof k_dtypes / sizeof k_dtypes[0]; d++) {
    enum { NB = 3 };
    uint64_t rows = 37, cols = 11, ld = 40;
    unsigned w = mp_dtype_size(k_dtypes[d]);
    void *mats[NB];
    const void *ptrs[NB];
    mp_stats *want = malloc(sizeof *want), *got = malloc(sizeof *got);
    mp_stats_init(want, k_dtypes[d]);
    mp_stats_init(got, k_dtypes[d]);
    for (int b = NB - 1; b >= 0; b--) {
      mats[b] = mpp_scan_test_data(k_dtypes[d], ld * cols + 2, 300 + 10 * d + b);
      ptrs[b] = (const uint8_t *)mats[b] + (b == 1 ? 2 * w : 0);
    }
    for (int b = 0; b < NB; b++) {
      mp_view one = {k_dtypes[d], ptrs[b], rows, cols, ld, 1, 0};
      assert_int_equal(mp_scan_with(want, &one, MP_SCAN_PORTABLE), 0);
    }
    /* data and batch_stride are ignored on this path. */
    mp_view shape = {k_dtypes[d], NULL, rows, cols, ld, NB, 12345};
    mpp_scan_params p;
    assert_int_equal(mpp_scan_plan_ptrs(&shape, ptrs, &p), 0);
    assert_false(p.flat);
    assert_null(p.data);
    assert_ptr_equal(p.ptrs, ptrs);
    assert_int_equal(p.n, rows * cols * NB);
    mpp_scan_result *r = calloc(1, sizeof *r);
    mpp_scan_emulate(&p, r);
    mpp_scan_finish(&p, r, got);
    const char *diff = mpp_stats_diff(want, got);
    if (diff) fail_msg("%s: %s differs from the host scanner", mp_dtype_name(k_dtypes[d]), diff);
    for (int b = 0; b < NB; b++)
      free(mats[b]);
    free(r);
    free(want);
    free(got);
  }
}

static void pointer_array_plan_is_never_flat(void **state) {
  (void)state;
  float a[4] = {1, 2, 3, 4}, b[4] = {-1, -2, -3, -4};
  const void *ptrs[2] = {a, b};
  mp_view shape = {MP_FP32, NULL, 4, 1, 4, 2, 4}; /* would be flat as a strided view */
  mpp_scan_params p;
  assert_int_equal(mpp_scan_plan_ptrs(&shape, ptrs, &p), 0);
  assert_false(p.flat);
  assert_int_equal(mpp_scan_plan_ptrs(&shape, NULL, &p), -EINVAL);
  mp_view i32 = {MP_INT32, NULL, 4, 1, 4, 2, 0};
  assert_int_equal(mpp_scan_plan_ptrs(&i32, ptrs, &p), -EINVAL);
  mp_view badld = {MP_FP32, NULL, 4, 2, 3, 2, 0};
  assert_int_equal(mpp_scan_plan_ptrs(&badld, ptrs, &p), -EINVAL);
}

static void empty_and_all_special_tensors_match_host_scanner(void **state) {
  (void)state;
  float f[4] = {NAN, INFINITY, -INFINITY, -0.0f};
  mp_view v = {MP_FP32, f, 4, 1, 4, 1, 0};
  same_as_host(&v);
  mp_view e = {MP_FP32, f, 0, 1, 0, 1, 0};
  same_as_host(&e);
}

static void unscannable_dtype_is_refused(void **state) {
  (void)state;
  int x = 0;
  mp_view v = {MP_INT32, &x, 1, 1, 1, 1, 0};
  mpp_scan_params p;
  assert_int_equal(mpp_scan_plan(&v, &p), -EINVAL);
}

/* The device record is decoded on the thread that delivers it, which may be
 * the application's (in exit() or exec, pending scans are drained there):
 * on a 16 KiB stack (above a 64 KiB guard no frame jumps over) it decodes as
 * on the main thread. A 17 KB record on its stack was a crash there. */
#ifdef __SANITIZE_ADDRESS__
#define SMALL_STACK (4 * 16 * 1024) /* redzones */
#else
#define SMALL_STACK (16 * 1024)
#endif

typedef struct finish_job {
  const mpp_scan_params *p;
  const mpp_scan_result *r;
  mp_stats *s;
} finish_job;

static void *finish_on_thread(void *arg) {
  finish_job *j = arg;
  mpp_scan_finish(j->p, j->r, j->s);
  return NULL;
}

static void a_record_decodes_on_a_small_thread_stack(void **state) {
  (void)state;
  static const mp_dtype dts[] = {MP_FP16, MP_FP8_E4M3};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    uint8_t data[64];
    for (int i = 0; i < 64; i++)
      data[i] = (uint8_t)(i * 37 + 5);
    mp_view v = {dts[d], data, 64 / mp_dtype_size(dts[d]), 1, 64 / mp_dtype_size(dts[d]), 1, 0};
    mpp_scan_params p;
    assert_int_equal(mpp_scan_plan(&v, &p), 0);
    mpp_scan_result *r = calloc(1, sizeof *r);
    mp_stats *want = malloc(sizeof *want), *got = malloc(sizeof *got);
    mpp_scan_emulate(&p, r);
    mp_stats_init(want, dts[d]);
    mp_stats_init(got, dts[d]);
    mpp_scan_finish(&p, r, want);
    finish_job j = {&p, r, got};
    pthread_attr_t at;
    pthread_t t;
    assert_int_equal(pthread_attr_init(&at), 0);
    assert_int_equal(pthread_attr_setstacksize(&at, SMALL_STACK), 0);
    assert_int_equal(pthread_attr_setguardsize(&at, 64 * 1024), 0);
    assert_int_equal(pthread_create(&t, &at, finish_on_thread, &j), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&at);
    const char *diff = mpp_stats_diff(want, got);
    if (diff) fail_msg("%s: %s differs on a small stack", mp_dtype_name(dts[d]), diff);
    free(want);
    free(got);
    free(r);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(random_and_boundary_data_match_host_scanner_for_every_dtype),
      cmocka_unit_test(every_8_and_16_bit_pattern_matches_host_scanner),
      cmocka_unit_test(strided_batched_views_match_host_scanner),
      cmocka_unit_test(pointer_array_batches_match_host_scanner),
      cmocka_unit_test(pointer_array_plan_is_never_flat),
      cmocka_unit_test(empty_and_all_special_tensors_match_host_scanner),
      cmocka_unit_test(unscannable_dtype_is_refused),
      cmocka_unit_test(a_record_decodes_on_a_small_thread_stack),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
