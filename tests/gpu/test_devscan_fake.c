/* profiler/gpu/devscan.c end to end on a fake libcuda.so.1 that runs the real
 * scan kernel on the CPU (tests/gpu/fakecuda): the embedded fatbin is loaded,
 * results come back through the ring and the sink equal to the host scanner,
 * also for a batch by pointer array (one record for the whole batch) and
 * for all tensors of an op in one launch (records decoded into their sinks),
 * the poller delivers without a drain, a full ring says -EBUSY and recovers,
 * bad views are refused, a thread with a small stack enqueues as well. Run
 * with LD_LIBRARY_PATH=<fakecuda dir>. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cuda.h>

#include "analysis/scan.h"
#include "profiler/gpu/gpu.h"
#include "tests/gpu/scan_data.h"

typedef struct collect {
  mp_stats stats;
  int calls;
} collect;

static void sink(void *cookie, const mp_stats *s) {
  collect *c = cookie;
  mp_stats_merge(&c->stats, s);
  __atomic_add_fetch(&c->calls, 1, __ATOMIC_SEQ_CST);
}

static void *fake(const char *name) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(lib);
  void *f = dlsym(lib, name);
  assert_non_null(f);
  return f;
}

static void device_scan_equals_host_scan_for_every_dtype(void **state) {
  (void)state;
  static const mp_dtype dts[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  assert_true(mpp_cuda_available());
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    uint64_t n = 3001;
    void *buf = mpp_scan_test_data(dts[i], n, 40 + i);
    mp_view v = {dts[i], buf, n, 1, n, 1, 0};
    collect *got = malloc(sizeof *got);
    mp_stats *want = malloc(sizeof *want);
    mp_stats_init(&got->stats, dts[i]);
    got->calls = 0;
    mp_stats_init(want, dts[i]);
    assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, got), 0);
    mpp_devscan_drain();
    assert_int_equal(got->calls, 1);
    assert_int_equal(mp_scan_with(want, &v, MP_SCAN_PORTABLE), 0);
    const char *diff = mpp_stats_diff(want, &got->stats);
    if (diff) fail_msg("%s: %s differs", mp_dtype_name(dts[i]), diff);
    free(buf);
    free(got);
    free(want);
  }
}

/* cublas*Batched: one enqueue for the whole batch, the kernel following the
 * pointer array (fake device memory is host memory), == host scans merged. */
static void pointer_array_batch_equals_host_scans_merged(void **state) {
  (void)state;
  static const mp_dtype dts[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  enum { NB = 3 };
  uint64_t rows = 61, cols = 17, ld = 64;
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    unsigned w = mp_dtype_size(dts[i]);
    void *mats[NB];
    const void **ptrs = malloc(NB * sizeof *ptrs); /* the "device" array */
    collect *got = malloc(sizeof *got);
    mp_stats *want = malloc(sizeof *want);
    mp_stats_init(&got->stats, dts[i]);
    got->calls = 0;
    mp_stats_init(want, dts[i]);
    for (int b = NB - 1; b >= 0; b--) {
      mats[b] = mpp_scan_test_data(dts[i], ld * cols + 1, 80 + 10 * i + b);
      ptrs[b] = (const uint8_t *)mats[b] + (b == 0 ? w : 0);
    }
    for (int b = 0; b < NB; b++) {
      mp_view one = {dts[i], ptrs[b], rows, cols, ld, 1, 0};
      assert_int_equal(mp_scan_with(want, &one, MP_SCAN_PORTABLE), 0);
    }
    mp_view shape = {dts[i], NULL, rows, cols, ld, NB, 0};
    assert_int_equal(mpp_devscan_enqueue_ptrs(NULL, &shape, ptrs, sink, got), 0);
    mpp_devscan_drain();
    assert_int_equal(got->calls, 1); /* the whole batch: one record */
    const char *diff = mpp_stats_diff(want, &got->stats);
    if (diff) fail_msg("%s: %s differs", mp_dtype_name(dts[i]), diff);
    for (int b = 0; b < NB; b++)
      free(mats[b]);
    free(ptrs);
    free(got);
    free(want);
  }
}

static void bad_pointer_arrays_are_refused(void **state) {
  (void)state;
  float x[4] = {0};
  const void *ptrs[2] = {x, x};
  collect c;
  mp_view shape = {MP_FP32, NULL, 4, 1, 4, 2, 0};
  assert_int_equal(mpp_devscan_enqueue_ptrs(NULL, &shape, NULL, sink, &c), -EINVAL);
  assert_int_equal(mpp_devscan_enqueue_ptrs(
                       NULL, &shape, (const void *const *)((const char *)ptrs + 1), sink, &c),
                   -EINVAL);
  mp_view i32 = {MP_INT32, NULL, 4, 1, 4, 2, 0};
  assert_int_equal(mpp_devscan_enqueue_ptrs(NULL, &i32, ptrs, sink, &c), -EINVAL);
}

static void poller_delivers_without_a_drain(void **state) {
  (void)state;
  float x[64];
  for (int i = 0; i < 64; i++)
    x[i] = (float)i - 10.0f;
  mp_view v = {MP_FP32, x, 64, 1, 64, 1, 0};
  collect *c = calloc(1, sizeof *c);
  mp_stats_init(&c->stats, MP_FP32);
  assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, c), 0);
  for (int i = 0; i < 20000 && !__atomic_load_n(&c->calls, __ATOMIC_SEQ_CST); i++) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  assert_int_equal(__atomic_load_n(&c->calls, __ATOMIC_SEQ_CST), 1);
  assert_int_equal(c->stats.count, 64);
  assert_int_equal(c->stats.negatives, 10);
  free(c);
}

/* A program that resets its device (cudaDeviceReset, at the end of many
 * samples) frees the memory its contexts made with cuMemHostAlloc. The ring
 * the poller and the exit drain read is mpprof's own memory, registered
 * (cuMemHostRegister), so it stays readable: reading a ring made by
 * cuMemHostAlloc there was a crash of the program. Run last: the fake's
 * contexts are gone after it. */
static void a_device_reset_does_not_take_the_ring_away(void **state) {
  (void)state;
  float x[64];
  for (int i = 0; i < 64; i++)
    x[i] = (float)i;
  mp_view v = {MP_FP32, x, 64, 1, 64, 1, 0};
  collect *c = calloc(1, sizeof *c);
  mp_stats_init(&c->stats, MP_FP32);
  assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, c), 0);
  assert_true(((long (*)(void))fake("fakecuda_host_registered"))() > 0);
  ((void (*)(void))fake("fakecuda_destroy_contexts"))();
  mpp_devscan_drain();
  assert_int_equal(__atomic_load_n(&c->calls, __ATOMIC_SEQ_CST), 1);
  free(c);
}

static void full_ring_says_ebusy_and_recovers(void **state) {
  (void)state;
  void (*hold)(int) = (void (*)(int))fake("fakecuda_hold");
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  mp_view v = {MP_FP32, x, 8, 1, 8, 1, 0};
  collect *c = calloc(1, sizeof *c);
  mp_stats_init(&c->stats, MP_FP32);
  hold(1); /* launches are queued, not run: slots cannot be reused */
  int ok = 0, rc = 0;
  while ((rc = mpp_devscan_enqueue(NULL, &v, sink, c)) == 0 && ok < 1000)
    ok++;
  assert_int_equal(rc, -EBUSY);
  assert_true(ok >= 1 && ok < 1000);
  hold(0);
  mpp_devscan_drain();
  assert_int_equal(c->calls, ok); /* every accepted scan is delivered once */
  assert_int_equal(c->stats.count, 8 * (uint64_t)ok);
  assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, c), 0);
  mpp_devscan_drain();
  assert_int_equal(c->calls, ok + 1);
  free(c);
}

static void driver_entry_points_are_asked_for_the_abi_they_are_called_with(void **state) {
  (void)state;
  assert_true(mpp_cuda_available());
  int (*abi_errors)(void) = (int (*)(void))fake("fakecuda_abi_errors");
  assert_int_equal(abi_errors(), 0);
}

/* Another thread may be capturing a CUDA graph in global mode: the scans'
 * driver calls (allocation, launch, event queries on the poller thread) run
 * in relaxed mode, and the caller's own mode is what it was. */
static void scans_run_in_relaxed_capture_mode_and_restore_the_callers(void **state) {
  (void)state;
  int (*unsafe)(void) = (int (*)(void))fake("fakecuda_unsafe_calls");
  int (*mode)(void) = (int (*)(void))fake("fakecuda_capture_mode");
  uint32_t x[64] = {0};
  mp_view v = {MP_FP32, x, 64, 1, 64, 1, 0};
  collect *c = calloc(1, sizeof *c);
  mp_stats_init(&c->stats, MP_FP32);
  assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, c), 0);
  mpp_devscan_drain();
  assert_int_equal(c->calls, 1);
  assert_int_equal(unsafe(), 0);
  assert_int_equal(mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
  free(c);
}

static void bad_views_are_refused(void **state) {
  (void)state;
  uint16_t h[4] = {0};
  mp_view odd = {MP_FP16, (const uint8_t *)h + 1, 2, 1, 2, 1, 0};
  collect c;
  assert_int_equal(mpp_devscan_enqueue(NULL, &odd, sink, &c), -EINVAL);
  mp_view i32 = {MP_INT32, h, 1, 1, 1, 1, 0};
  assert_int_equal(mpp_devscan_enqueue(NULL, &i32, sink, &c), -EINVAL);
}

/* mpp_devscan_enqueue_op: the tensors of one op (mixed dtypes, one of them a
 * batch by pointer array, one empty) in one launch, each record decoded into
 * its own sink == the host scanner. */
static void one_launch_scans_all_tensors_of_an_op(void **state) {
  (void)state;
  int (*launches)(void) = (int (*)(void))fake("fakecuda_launches");
  enum { NB = 3 };
  uint64_t rows = 33, cols = 9, ld = 35;
  void *ea = mpp_scan_test_data(MP_FP8_E4M3, 2001, 7);
  void *bd = mpp_scan_test_data(MP_BF16, 1501, 8);
  void *mats[NB];
  const void **ptrs = malloc(NB * sizeof *ptrs);
  for (int b = 0; b < NB; b++) {
    mats[b] = mpp_scan_test_data(MP_FP32, ld * cols, 9 + b);
    ptrs[b] = mats[b];
  }
  mpp_devscan_item it[4] = {
      {.view = {MP_FP8_E4M3, ea, 2001, 1, 2001, 1, 0}},
      {.view = {MP_FP32, NULL, rows, cols, ld, NB, 0}, .dev_ptrs = (const void *const *)ptrs},
      {.view = {MP_BF16, bd, 1501, 1, 1501, 1, 0}},
      {.view = {MP_BF16, bd, 0, 1, 1, 1, 0}}, /* empty: delivered at once, not launched */
  };
  collect *got = calloc(4, sizeof *got);
  mp_stats *want = malloc(sizeof *want);
  for (int k = 0; k < 4; k++) {
    mp_stats_init(&got[k].stats, it[k].view.dtype);
    it[k].sink = sink;
    it[k].cookie = &got[k];
  }
  int l0 = launches();
  assert_int_equal(mpp_devscan_enqueue_op(NULL, it, 4), 0);
  assert_int_equal(launches() - l0, 1);
  mpp_devscan_drain();
  for (int k = 0; k < 4; k++) {
    assert_int_equal(it[k].rc, 0);
    assert_int_equal(got[k].calls, 1);
    mp_stats_init(want, it[k].view.dtype);
    if (it[k].dev_ptrs) {
      for (int b = 0; b < NB; b++) {
        mp_view one = {MP_FP32, ptrs[b], rows, cols, ld, 1, 0};
        mp_scan_with(want, &one, MP_SCAN_PORTABLE);
      }
    } else {
      mp_scan_with(want, &it[k].view, MP_SCAN_PORTABLE);
    }
    const char *diff = mpp_stats_diff(want, &got[k].stats);
    if (diff) fail_msg("tensor %d: %s differs", k, diff);
  }
  /* A refused item (misaligned fp16) does not stop the others. */
  mpp_devscan_item two[2] = {
      {.view = {MP_FP16, (const uint8_t *)bd + 1, 4, 1, 4, 1, 0}, .sink = sink, .cookie = &got[0]},
      {.view = {MP_BF16, bd, 1501, 1, 1501, 1, 0}, .sink = sink, .cookie = &got[2]},
  };
  assert_int_equal(mpp_devscan_enqueue_op(NULL, two, 2), -EINVAL);
  assert_int_equal(two[0].rc, -EINVAL);
  assert_int_equal(two[1].rc, 0);
  mpp_devscan_drain();
  assert_int_equal(got[2].calls, 2);
  for (int b = 0; b < NB; b++)
    free(mats[b]);
  free(ptrs);
  free(ea);
  free(bd);
  free(got);
  free(want);
}

/* Scans are enqueued inside the application's call, on its thread: one
 * with a small stack (16 KiB, above a 64 KiB guard that no frame jumps
 * over) enqueues a tensor and an empty one. A record (17 KB) on that stack
 * for the empty tensor was a crash there. Launches are held back: the fake
 * driver's kernel runs on the main thread. */
#ifdef __SANITIZE_ADDRESS__
#define SMALL_STACK (4 * 16 * 1024) /* redzones */
#else
#define SMALL_STACK (16 * 1024)
#endif

typedef struct small_stack_job {
  mpp_devscan_item it[2];
  int rc;
} small_stack_job;

static void *enqueue_job(void *arg) {
  small_stack_job *j = arg;
  j->rc = mpp_devscan_enqueue_op(NULL, j->it, 2);
  return NULL;
}

static void an_op_enqueued_on_a_small_thread_stack_is_delivered(void **state) {
  (void)state;
  void (*hold)(int) = (void (*)(int))fake("fakecuda_hold");
  float x[64];
  for (int i = 0; i < 64; i++)
    x[i] = (float)i - 10.0f;
  collect *got = calloc(2, sizeof *got);
  small_stack_job j = {
      .it = {{.view = {MP_FP32, x, 64, 1, 64, 1, 0}}, {.view = {MP_FP32, x, 0, 1, 1, 1, 0}}}};
  for (int k = 0; k < 2; k++) {
    mp_stats_init(&got[k].stats, MP_FP32);
    j.it[k].sink = sink;
    j.it[k].cookie = &got[k];
  }
  assert_int_equal(mpp_devscan_enqueue_op(NULL, j.it, 2), 0); /* the context, set up here */
  mpp_devscan_drain();
  pthread_attr_t at;
  pthread_t t;
  assert_int_equal(pthread_attr_init(&at), 0);
  assert_int_equal(pthread_attr_setstacksize(&at, SMALL_STACK), 0);
  assert_int_equal(pthread_attr_setguardsize(&at, 64 * 1024), 0);
  hold(1);
  assert_int_equal(pthread_create(&t, &at, enqueue_job, &j), 0);
  assert_int_equal(pthread_join(t, NULL), 0);
  hold(0);
  mpp_devscan_drain();
  assert_int_equal(j.rc, 0);
  assert_int_equal(got[0].calls, 2);
  assert_int_equal(got[0].stats.count, 128);
  assert_int_equal(got[1].calls, 2);
  assert_int_equal(got[1].stats.count, 0);
  pthread_attr_destroy(&at);
  free(got);
}

typedef struct scalars_got {
  uint32_t bits[MPP_DEVSCAN_SCALARS];
  unsigned requested, read;
  int calls;
} scalars_got;

static void scalar_sink(void *cookie, const uint32_t *bits, unsigned requested, unsigned read) {
  scalars_got *g = cookie;
  memcpy(g->bits, bits, sizeof g->bits);
  g->requested = requested;
  g->read = read;
  __atomic_add_fetch(&g->calls, 1, __ATOMIC_SEQ_CST);
}

/* Issue 17: an fp8 output converted with saturation counts its +-max values
 * as saturated exactly as the host path does (mp_count_saturated), and the
 * op's FP8 scales and AMAX_D in device memory are read by the same launch
 * (the last block copies them into the slot): one launch, values in the sink. */
static void saturated_fp8_output_and_scalars_in_one_launch(void **state) {
  (void)state;
  int (*launches)(void) = (int (*)(void))fake("fakecuda_launches");
  static const mp_dtype dts[] = {MP_FP8_E4M3, MP_FP8_E5M2};
  for (int i = 0; i < 2; i++) {
    uint64_t n = 2001;
    uint8_t *d = mpp_scan_test_data(dts[i], n, 300 + i);
    int top = mp_saturated_pattern(dts[i]);
    for (uint64_t j = 0; j < n; j += 3)
      d[j] = (uint8_t)(j % 2 ? top : top | 0x80);
    float *vals = malloc(MPP_DEVSCAN_SCALARS * sizeof *vals); /* the "device" scalars */
    const float want_vals[MPP_DEVSCAN_SCALARS] = {2.0f, 0.5f, 1.0f, 0.125f, 448.0f};
    memcpy(vals, want_vals, sizeof want_vals);
    mpp_devscan_item it = {.view = {dts[i], d, n, 1, n, 1, 0}, .saturates = true, .sink = sink};
    collect *got = malloc(sizeof *got);
    mp_stats_init(&got->stats, dts[i]);
    got->calls = 0;
    it.cookie = got;
    scalars_got sg = {0};
    mpp_devscan_scalars sc = {
        .ptr = {&vals[0], &vals[1], NULL, &vals[3], &vals[4]}, .sink = scalar_sink, .cookie = &sg};
    int l0 = launches();
    assert_int_equal(mpp_devscan_enqueue_op_scalars(NULL, &it, 1, &sc), 0);
    assert_int_equal(launches() - l0, 1);
    assert_int_equal(sc.rc, 0);
    mpp_devscan_drain();
    assert_int_equal(got->calls, 1);
    mp_stats *want = malloc(sizeof *want);
    mp_stats_init(want, dts[i]);
    mp_scan_with(want, &it.view, MP_SCAN_PORTABLE);
    want->saturated = mp_count_saturated(&it.view);
    assert_true(want->saturated >= n / 3);
    const char *diff = mpp_stats_diff(want, &got->stats);
    if (diff) fail_msg("%s: %s differs from the host path", mp_dtype_name(dts[i]), diff);
    assert_int_equal(sg.calls, 1);
    assert_int_equal(sg.requested, 0x1b);
    assert_int_equal(sg.read, 0x1b);
    for (int k = 0; k < MPP_DEVSCAN_SCALARS; k++)
      if (k != 2) assert_memory_equal(&sg.bits[k], &want_vals[k], 4);
    free(want);
    free(got);
    free(vals);
    free(d);
  }
}

/* Scalars without a tensor to scan: a one-block launch reads them; a
 * misaligned pointer is refused (nothing launched, the sink never called). */
static void scalars_alone_are_one_launch_and_misaligned_ones_refused(void **state) {
  (void)state;
  int (*launches)(void) = (int (*)(void))fake("fakecuda_launches");
  float *vals = malloc(2 * sizeof *vals);
  vals[0] = 3.0f;
  vals[1] = 96.0f;
  scalars_got sg = {0};
  mpp_devscan_scalars sc = {
      .ptr = {NULL, NULL, NULL, NULL, &vals[1]}, .sink = scalar_sink, .cookie = &sg};
  int l0 = launches();
  assert_int_equal(mpp_devscan_enqueue_op_scalars(NULL, NULL, 0, &sc), 0);
  assert_int_equal(launches() - l0, 1);
  mpp_devscan_drain();
  assert_int_equal(sg.calls, 1);
  assert_int_equal(sg.requested, 0x10);
  assert_int_equal(sg.read, 0x10);
  assert_memory_equal(&sg.bits[4], &vals[1], 4);
  mpp_devscan_scalars bad = {
      .ptr = {(const uint8_t *)vals + 2}, .sink = scalar_sink, .cookie = &sg};
  l0 = launches();
  assert_int_equal(mpp_devscan_enqueue_op_scalars(NULL, NULL, 0, &bad), -EINVAL);
  assert_int_equal(bad.rc, -EINVAL);
  assert_int_equal(launches() - l0, 0);
  mpp_devscan_drain();
  assert_int_equal(sg.calls, 1);
  free(vals);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(device_scan_equals_host_scan_for_every_dtype),
      cmocka_unit_test(pointer_array_batch_equals_host_scans_merged),
      cmocka_unit_test(bad_pointer_arrays_are_refused),
      cmocka_unit_test(one_launch_scans_all_tensors_of_an_op),
      cmocka_unit_test(saturated_fp8_output_and_scalars_in_one_launch),
      cmocka_unit_test(scalars_alone_are_one_launch_and_misaligned_ones_refused),
      cmocka_unit_test(poller_delivers_without_a_drain),
      cmocka_unit_test(full_ring_says_ebusy_and_recovers),
      cmocka_unit_test(an_op_enqueued_on_a_small_thread_stack_is_delivered),
      cmocka_unit_test(bad_views_are_refused),
      cmocka_unit_test(scans_run_in_relaxed_capture_mode_and_restore_the_callers),
      cmocka_unit_test(driver_entry_points_are_asked_for_the_abi_they_are_called_with),
      cmocka_unit_test(a_device_reset_does_not_take_the_ring_away), /* last */
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
