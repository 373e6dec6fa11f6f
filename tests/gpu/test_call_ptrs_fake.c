/* profiler/call.c's routing of batched GEMMs by pointer array, on the fake
 * libcuda.so.1 of tests/gpu/fakecuda (cuMemAlloc'd memory reads as device
 * memory there, and the real scan kernel runs on the CPU): an array in device
 * memory goes to the device scanner whole (the kernel follows the array), an
 * array in host memory to the host scanner; both give the host scanner's
 * record of the same matrices; a fork child launches nothing. Run with LD_LIBRARY_PATH=<fakecuda
 * dir>. */
#include <dlfcn.h>
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

#include "analysis/scan.h"
#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/gpu.h"
#include "profiler/hooks/gemm_decode.h"
#include "profiler/hostmem.h"
#include "profiler/mpp.h"
#include "tests/gpu/scan_data.h"
#include "profiler/call.h"
#include "profiler/op.h"
#include "profiler/rawwrite.h"
#include "profiler/sites.h"
#include "tests/core_fixture.h"

enum { NB = 3, M = 37, N = 13, K = 11, LDA = 40, LDB = 16, LDC = 40 };

static int reset_all(void **state) {
  (void)state;
  mpp_fixture_reset(MPP_SCAN_ALL, 16, 16);
  return 0;
}

static void *dev_alloc(size_t bytes) {
  CUdeviceptr d = 0;
  assert_int_equal(mpp_cu()->mem_alloc(&d, bytes), CUDA_SUCCESS);
  return (void *)(uintptr_t)d;
}

/* One cublasSgemmBatched-like call (beta 0: C is not read) on matrices and
 * pointer arrays in device (fake) or host memory; the site's records of A, B
 * and D must equal the host scans of the same matrices merged. */
static void run_batched(bool device) {
  assert_true(mpp_cuda_available());
  size_t ea = (size_t)LDA * K, eb = (size_t)LDB * N, ec = (size_t)LDC * N;
  const void *a[NB], *b[NB], *c[NB];
  mp_stats *want[3];
  for (int r = 0; r < 3; r++) {
    want[r] = malloc(sizeof *want[r]);
    mp_stats_init(want[r], MP_FP32);
  }
  for (int i = 0; i < NB; i++) {
    float *ha = mpp_scan_test_data(MP_FP32, ea, 10 + i),
          *hb = mpp_scan_test_data(MP_FP32, eb, 20 + i),
          *hc = mpp_scan_test_data(MP_FP32, ec, 30 + i);
    a[i] = device ? memcpy(dev_alloc(ea * 4), ha, ea * 4) : ha;
    b[i] = device ? memcpy(dev_alloc(eb * 4), hb, eb * 4) : hb;
    c[i] = device ? memcpy(dev_alloc(ec * 4), hc, ec * 4) : hc;
    if (device) {
      free(ha);
      free(hb);
      free(hc);
    }
    mp_view va = {MP_FP32, a[i], M, K, LDA, 1, 0}, vb = {MP_FP32, b[i], K, N, LDB, 1, 0},
            vc = {MP_FP32, c[i], M, N, LDC, 1, 0};
    mp_scan_with(want[0], &va, MP_SCAN_PORTABLE);
    mp_scan_with(want[1], &vb, MP_SCAN_PORTABLE);
    /* D is scanned after the call; the "GEMM" here writes nothing: D == C. */
    mp_scan_with(want[2], &vc, MP_SCAN_PORTABLE);
  }
  const void **aa = device ? dev_alloc(sizeof a) : malloc(sizeof a);
  const void **ba = device ? dev_alloc(sizeof b) : malloc(sizeof b);
  const void **ca = device ? dev_alloc(sizeof c) : malloc(sizeof c);
  memcpy(aa, a, sizeof a);
  memcpy(ba, b, sizeof b);
  memcpy(ca, c, sizeof c);
  assert_int_equal(mpp_cuda_pointer_kind(aa), device ? MPP_MEM_DEVICE : MPP_MEM_HOST);

  static const float zero = 0, one = 1;
  mpp_gemm_call g = {.api = "cublasSgemmBatched",
                     .m = M,
                     .n = N,
                     .k = K,
                     .lda = LDA,
                     .ldb = LDB,
                     .ldc = LDC,
                     .alpha = &one,
                     .beta = &zero,
                     .Aarr = aa,
                     .Barr = ba,
                     .Carr = ca,
                     .batch = NB,
                     .compute = 68,
                     .scale_type = 0};
  mpp_gemm_ctx ctx = {.math_mode = 0, .pointer_mode = 0, .host_visible = mpp_host_readable};
  mpp_fixture_record(&g, &ctx, NULL, NULL);
  mpp_devscan_drain();

  mpp_sites_lock();
  mpp_tables t;
  mpp_tables_get(&t, 0);
  assert_int_equal(t.nsites, 1);
  const mpp_site *s = &t.sites[0];
  for (int r = 0; r < MPP_NS_COUNT; r++)
    if (s->not_scanned[r])
      fail_msg("not scanned: %s x%llu", mpp_ns_reason_name((mpp_ns_reason)r),
               (unsigned long long)s->not_scanned[r]);
  static const int role[3] = {0, 1, 3}; /* A, B, D (C: beta 0, not read) */
  for (int r = 0; r < 3; r++) {
    assert_non_null(s->stats[role[r]]);
    const char *diff = mpp_stats_diff(want[r], s->stats[role[r]]);
    if (diff) fail_msg("role %d: %s differs from the host scans", role[r], diff);
  }
  assert_null(s->stats[2]);
  mpp_sites_unlock();

  for (int i = 0; i < NB; i++) {
    if (device) {
      mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)a[i]);
      mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)b[i]);
      mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)c[i]);
    } else {
      free((void *)a[i]);
      free((void *)b[i]);
      free((void *)c[i]);
    }
  }
  if (device) {
    mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)aa);
    mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)ba);
    mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)ca);
  } else {
    free(aa);
    free(ba);
    free(ca);
  }
  for (int r = 0; r < 3; r++)
    free(want[r]);
}

static void device_pointer_array_is_scanned_on_the_device_whole(void **state) {
  (void)state;
  run_batched(true);
}

/* mpprof never touches CUDA in a fork child: the same call there launches no
 * scan kernel (the fake "device" memory is readable, so the host scans it). */
static void fork_child_launches_no_scan_for_a_device_pointer_array(void **state) {
  (void)state;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(lib);
  int (*launches)(void) = (int (*)(void))dlsym(lib, "fakecuda_launches");
  assert_non_null(launches);
  float *m = dev_alloc(4 * sizeof *m);
  const void **arr = dev_alloc(sizeof *arr);
  arr[0] = m;
  for (int i = 0; i < 4; i++)
    m[i] = (float)i;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(60);
    reset_all(NULL);
    int before = launches();
    static const float zero = 0, one = 1;
    mpp_gemm_call g = {.api = "cublasSgemmBatched",
                       .m = 2,
                       .n = 2,
                       .k = 2,
                       .lda = 2,
                       .ldb = 2,
                       .ldc = 2,
                       .alpha = &one,
                       .beta = &zero,
                       .Aarr = arr,
                       .Barr = arr,
                       .Carr = arr,
                       .batch = 1,
                       .compute = 68,
                       .scale_type = 0};
    mpp_gemm_ctx ctx = {.math_mode = 0, .pointer_mode = 0, .host_visible = mpp_host_readable};
    mpp_fixture_record(&g, &ctx, NULL, NULL);
    _exit(launches() == before && !mpp_cuda_available() ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)arr);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)m);
}

static void host_pointer_array_is_scanned_on_the_host(void **state) {
  (void)state;
  run_batched(false);
}

static void *fake_fn(const char *name) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(lib);
  void *f = dlsym(lib, name);
  assert_non_null(f);
  return f;
}

/* One cublasSgemm-like call on a stream, on device memory (A m x k, B k x n,
 * C m x n with leading dimensions LDA, LDB, LDC); between the hook's begin
 * and end the "GEMM" writes d_new into C when given. */
static void gemm_call(const float *a, const float *b, float *c, float beta, const float *d_new) {
  static const float one = 1;
  static int stream_token;
  mpp_gemm_call g = {.api = "cublasSgemm_v2",
                     .m = M,
                     .n = N,
                     .k = K,
                     .lda = LDA,
                     .ldb = LDB,
                     .ldc = LDC,
                     .alpha = &one,
                     .beta = &beta,
                     .A = a,
                     .B = b,
                     .C = c,
                     .batch = 1,
                     .compute = 68,
                     .scale_type = 0};
  /* On the app's stream (the fake takes any handle) */
  mpp_gemm_ctx ctx = {.math_mode = 0,
                      .pointer_mode = 0,
                      .stream = &stream_token,
                      .host_visible = mpp_host_readable};
  mpp_op op;
  mpp_call call;
  mpp_gemm_decode(&op, &g, &ctx);
  mpp_call_begin(&call, &op);
  if (d_new) memcpy(c, d_new, (size_t)LDC * N * sizeof *c);
  mpp_call_end(&call, &op, true);
}

static void *dev_copy(const void *h, size_t bytes) {
  return memcpy(dev_alloc(bytes), h, bytes);
}

static void assert_role_equals(int role, const mp_stats *want) {
  mpp_sites_lock();
  mpp_tables t;
  mpp_tables_get(&t, 0);
  assert_int_equal(t.nsites, 1);
  const mpp_site *s = &t.sites[0];
  for (int r = 0; r < MPP_NS_COUNT; r++)
    if (s->not_scanned[r])
      fail_msg("not scanned: %s x%llu", mpp_ns_reason_name((mpp_ns_reason)r),
               (unsigned long long)s->not_scanned[r]);
  assert_non_null(s->stats[role]);
  const char *diff = mpp_stats_diff(want, s->stats[role]);
  if (diff) fail_msg("role %d: %s differs from the host scan", role, diff);
  mpp_sites_unlock();
}

/* Issue 16: a scanned GEMM (A, B and D in device memory) costs at most 4
 * driver calls on the calling thread (capture check, capture mode to relaxed
 * and back, one launch) once the context and the allocations are known, and
 * its three tensors are one kernel launch; the records == host scans. */
static void scanned_gemm_is_one_launch_and_at_most_4_driver_calls(void **state) {
  (void)state;
  long (*calls)(void) = (long (*)(void))fake_fn("fakecuda_thread_calls");
  int (*launches)(void) = (int (*)(void))fake_fn("fakecuda_launches");
  size_t ea = (size_t)LDA * K, eb = (size_t)LDB * N, ec = (size_t)LDC * N;
  float *ha = mpp_scan_test_data(MP_FP32, ea, 61), *hb = mpp_scan_test_data(MP_FP32, eb, 62),
        *hc = mpp_scan_test_data(MP_FP32, ec, 63);
  float *a = dev_copy(ha, ea * 4), *b = dev_copy(hb, eb * 4), *c = dev_copy(hc, ec * 4);
  gemm_call(a, b, c, 0, NULL); /* first call: context set-up, allocations learnt */
  mpp_devscan_drain();
  mpp_sites_reset();
  long c0 = calls();
  int l0 = launches();
  gemm_call(a, b, c, 0, NULL);
  long used = calls() - c0;
  int launched = launches() - l0;
  mpp_devscan_drain();
  printf("driver calls per scanned GEMM (A, B, D on the device): %ld, launches %d\n", used,
         launched);
  assert_true(used <= 4);
  assert_int_equal(launched, 1);
  mp_stats *want = malloc(sizeof *want);
  const mp_view v[3] = {{MP_FP32, ha, M, K, LDA, 1, 0},
                        {MP_FP32, hb, K, N, LDB, 1, 0},
                        {MP_FP32, hc, M, N, LDC, 1, 0}};
  static const int role[3] = {0, 1, 3};
  for (int r = 0; r < 3; r++) {
    mp_stats_init(want, MP_FP32);
    mp_scan_with(want, &v[r], MP_SCAN_PORTABLE);
    assert_role_equals(role[r], want);
  }
  free(want);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)a);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)b);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)c);
  free(ha);
  free(hb);
  free(hc);
}

/* C read and overwritten in place (beta != 0, C == D): the input C must be
 * scanned as it was before the op, so inputs are launched before the call
 * and D after it (two launches); C's record holds the old values, D's the new. */
static void input_sharing_memory_with_an_output_is_scanned_before_the_call(void **state) {
  (void)state;
  int (*launches)(void) = (int (*)(void))fake_fn("fakecuda_launches");
  size_t ea = (size_t)LDA * K, eb = (size_t)LDB * N, ec = (size_t)LDC * N;
  float *ha = mpp_scan_test_data(MP_FP32, ea, 71), *hb = mpp_scan_test_data(MP_FP32, eb, 72),
        *hc = mpp_scan_test_data(MP_FP32, ec, 73), *hd = mpp_scan_test_data(MP_FP32, ec, 74);
  float *a = dev_copy(ha, ea * 4), *b = dev_copy(hb, eb * 4), *c = dev_copy(hc, ec * 4);
  int l0 = launches();
  gemm_call(a, b, c, 1, hd);
  mpp_devscan_drain();
  assert_int_equal(launches() - l0, 2);
  mp_stats *want = malloc(sizeof *want);
  mp_view vc = {MP_FP32, hc, M, N, LDC, 1, 0}, vd = {MP_FP32, hd, M, N, LDC, 1, 0};
  mp_stats_init(want, MP_FP32);
  mp_scan_with(want, &vc, MP_SCAN_PORTABLE);
  assert_role_equals(2, want);
  mp_stats_init(want, MP_FP32);
  mp_scan_with(want, &vd, MP_SCAN_PORTABLE);
  assert_role_equals(3, want);
  free(want);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)a);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)b);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)c);
  free(ha);
  free(hb);
  free(hc);
  free(hd);
}

/* One e4m3 cublasLtMatmul (TN, beta 0) on device memory with A/B/D scale
 * factors and AMAX_D in device memory; between the hook's begin and end the
 * "op" writes d_new into D and amax into AMAX_D. */
enum { FM = 64, FN = 24, FK = 32 };
static void fp8_lt_call(const uint8_t *a, const uint8_t *b, uint8_t *d, float *const scales[4],
                        float *amax_ptr, const uint8_t *d_new, float amax) {
  static const float one = 1, zero = 0;
  static int stream_token;
  mpp_lt_call g = {.compute = 68,
                   .scale_type = 0,
                   .pointer_mode = 0,
                   .transa = 1,
                   .transb = 0,
                   .scale_ptr = {scales[0], scales[1], scales[2], scales[3]},
                   .amax_d = amax_ptr,
                   .a = {.type = 28, .rows = FK, .cols = FM, .ld = FK, .batch = 1},
                   .b = {.type = 28, .rows = FK, .cols = FN, .ld = FK, .batch = 1},
                   .c = {.type = 14, .rows = FM, .cols = FN, .ld = FM, .batch = 1},
                   .d = {.type = 28, .rows = FM, .cols = FN, .ld = FM, .batch = 1},
                   .alpha = &one,
                   .beta = &zero,
                   .A = a,
                   .B = b,
                   .C = d,
                   .D = d};
  mpp_op op;
  mpp_call call;
  mpp_lt_decode(&op, &g, &stream_token, mpp_host_readable);
  mpp_call_begin(&call, &op);
  memcpy(d, d_new, (size_t)FM * FN);
  *amax_ptr = amax;
  mpp_call_end(&call, &op, true);
}

static void assert_fp8_value(const mpp_fp8_value *v, uint64_t read, uint64_t unread, double x) {
  assert_int_equal(v->read, read);
  assert_int_equal(v->unread, unread);
  if (read) {
    assert_true(v->min == x);
    assert_true(v->max == x);
  }
}

/* Issue 17 on the device path: the saturated fp8 output (all +-448, where
 * cuBLASLt clamped) is counted as saturated as on the host path, and the
 * scale factors and AMAX_D in device memory are read by the scan launch
 * behind the op (the kernel copies them into the result slot): they land in
 * the raw file's fp8_scale_values and amax_D as read values, not "unread";
 * still 1 launch and at most 4 driver calls. Not scanned: unread, as before. */
static void fp8_device_scan_counts_saturated_and_reads_scales_and_amax(void **state) {
  (void)state;
  long (*calls)(void) = (long (*)(void))fake_fn("fakecuda_thread_calls");
  int (*launches)(void) = (int (*)(void))fake_fn("fakecuda_launches");
  size_t na = (size_t)FK * FM, nb = (size_t)FK * FN, nd = (size_t)FM * FN;
  uint8_t *ha = mpp_scan_test_data(MP_FP8_E4M3, na, 81),
          *hb = mpp_scan_test_data(MP_FP8_E4M3, nb, 82);
  uint8_t *hd = malloc(nd);
  for (size_t i = 0; i < nd; i++)
    hd[i] = i % 3 ? 0x7e : 0xfe; /* +448 / -448: clamped by the op */
  uint8_t *a = dev_copy(ha, na), *b = dev_copy(hb, nb), *d = dev_alloc(nd);
  float *sv = dev_alloc(5 * sizeof(float)); /* A, B, (C unset), D scales and AMAX_D */
  sv[0] = 2.0f;
  sv[1] = 0.5f;
  sv[3] = 0.25f;
  float *const scales[4] = {&sv[0], &sv[1], NULL, &sv[3]};
  fp8_lt_call(a, b, d, scales, &sv[4], hd, 448.0f); /* context set-up, allocations learnt */
  mpp_devscan_drain();
  mpp_sites_reset();
  long c0 = calls();
  int l0 = launches();
  fp8_lt_call(a, b, d, scales, &sv[4], hd, 448.0f);
  long used = calls() - c0;
  int launched = launches() - l0;
  mpp_devscan_drain();
  printf("driver calls per scanned fp8 Lt matmul (A, B, D, 3 scales, AMAX_D on the device): %ld, "
         "launches %d\n",
         used, launched);
  assert_true(used <= 4);
  assert_int_equal(launched, 1);

  mp_stats *want = malloc(sizeof *want);
  mp_view vd = {MP_FP8_E4M3, hd, FM, FN, FM, 1, 0};
  mp_stats_init(want, MP_FP8_E4M3);
  mp_scan_with(want, &vd, MP_SCAN_PORTABLE);
  want->saturated = mp_count_saturated(&vd);
  assert_int_equal(want->saturated, nd);
  assert_role_equals(3, want);
  mp_view va = {MP_FP8_E4M3, ha, FK, FM, FK, 1, 0};
  mp_stats_init(want, MP_FP8_E4M3);
  mp_scan_with(want, &va, MP_SCAN_PORTABLE); /* an input: stored values, never "saturated" */
  assert_role_equals(0, want);

  mpp_sites_lock();
  mpp_tables t;
  mpp_tables_get(&t, 0);
  const mpp_site *s = &t.sites[0];
  assert_fp8_value(&s->fp8_scale[0], 1, 0, 2.0);
  assert_fp8_value(&s->fp8_scale[1], 1, 0, 0.5);
  assert_fp8_value(&s->fp8_scale[2], 0, 0, 0);
  assert_fp8_value(&s->fp8_scale[3], 1, 0, 0.25);
  assert_fp8_value(&s->amax_d, 1, 0, 448.0);
  mpp_sites_unlock();
  size_t len = 0;
  char *doc = mpp_raw_render(true, &len);
  assert_non_null(doc);
  static const char *const raw[] = {
      "\"fp8_scale_values\":{\"A\":{\"min\":2,\"max\":2,\"read\":1,\"unread\":0},"
      "\"B\":{\"min\":0.5,\"max\":0.5,\"read\":1,\"unread\":0},"
      "\"D\":{\"min\":0.25,\"max\":0.25,\"read\":1,\"unread\":0}}",
      "\"amax_D\":{\"min\":448,\"max\":448,\"read\":1,\"unread\":0}", "\"saturated\":1536"};
  for (size_t i = 0; i < sizeof raw / sizeof raw[0]; i++)
    if (!strstr(doc, raw[i])) fail_msg("raw file lacks %s", raw[i]);
  free(doc);

  /* A call that is not scanned launches nothing: its scalars stay unread. */
  mpp_sites_reset();
  mpp_cfg.scan = MPP_SCAN_NONE;
  l0 = launches();
  fp8_lt_call(a, b, d, scales, &sv[4], hd, 448.0f);
  mpp_devscan_drain();
  assert_int_equal(launches() - l0, 0);
  mpp_sites_lock();
  mpp_tables_get(&t, 0);
  s = &t.sites[0];
  assert_fp8_value(&s->fp8_scale[0], 0, 1, 0);
  assert_fp8_value(&s->amax_d, 0, 1, 0);
  mpp_sites_unlock();

  free(want);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)a);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)b);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)d);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)sv);
  free(ha);
  free(hb);
  free(hd);
}

/* An op with more roles than one launch scans (MPP_SCAN_MAX_TENSORS): a
 * cuBLASLt fp32 matmul with C read (beta 1, C distinct from D) and a BIAS
 * epilogue, its five tensors in device memory: two launches, every role's
 * record the host scan's. */
static void five_device_roles_take_two_launches(void **state) {
  (void)state;
  int (*launches)(void) = (int (*)(void))fake_fn("fakecuda_launches");
  static const float one = 1;
  static int stream_token;
  size_t ea = (size_t)LDA * K, eb = (size_t)LDB * N, ec = (size_t)LDC * N;
  float *h[5] = {mpp_scan_test_data(MP_FP32, ea, 91), mpp_scan_test_data(MP_FP32, eb, 92),
                 mpp_scan_test_data(MP_FP32, ec, 93), mpp_scan_test_data(MP_FP32, ec, 94),
                 mpp_scan_test_data(MP_FP32, M, 95)};
  size_t bytes[5] = {ea * 4, eb * 4, ec * 4, ec * 4, M * 4};
  void *d[5];
  for (int i = 0; i < 5; i++)
    d[i] = dev_copy(h[i], bytes[i]);
  mpp_lt_call g = {.compute = 68,
                   .scale_type = 0,
                   .epilogue = 4, /* BIAS */
                   .bias = d[4],
                   .bias_type = -1,
                   .a = {.type = 0, .rows = M, .cols = K, .ld = LDA, .batch = 1},
                   .b = {.type = 0, .rows = K, .cols = N, .ld = LDB, .batch = 1},
                   .c = {.type = 0, .rows = M, .cols = N, .ld = LDC, .batch = 1},
                   .d = {.type = 0, .rows = M, .cols = N, .ld = LDC, .batch = 1},
                   .alpha = &one,
                   .beta = &one,
                   .A = d[0],
                   .B = d[1],
                   .C = d[2],
                   .D = d[3]};
  mpp_op op;
  mpp_call call;
  mpp_lt_decode(&op, &g, &stream_token, mpp_host_readable);
  assert_int_equal(op.nroles, 5);
  int l0 = launches();
  mpp_call_begin(&call, &op);
  mpp_call_end(&call, &op, true);
  mpp_devscan_drain();
  assert_int_equal(launches() - l0, 2);
  mp_stats *want = malloc(sizeof *want);
  const mp_view v[5] = {{MP_FP32, h[0], M, K, LDA, 1, 0},
                        {MP_FP32, h[1], K, N, LDB, 1, 0},
                        {MP_FP32, h[2], M, N, LDC, 1, 0},
                        {MP_FP32, h[3], M, N, LDC, 1, 0},
                        {MP_FP32, h[4], M, 1, M, 1, 0}};
  for (int r = 0; r < 5; r++) {
    mp_stats_init(want, MP_FP32);
    mp_scan_with(want, &v[r], MP_SCAN_PORTABLE);
    assert_role_equals(r, want);
  }
  free(want);
  for (int i = 0; i < 5; i++) {
    mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)d[i]);
    free(h[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(device_pointer_array_is_scanned_on_the_device_whole, reset_all),
      cmocka_unit_test_setup(host_pointer_array_is_scanned_on_the_host, reset_all),
      cmocka_unit_test_setup(fork_child_launches_no_scan_for_a_device_pointer_array, reset_all),
      cmocka_unit_test_setup(scanned_gemm_is_one_launch_and_at_most_4_driver_calls, reset_all),
      cmocka_unit_test_setup(input_sharing_memory_with_an_output_is_scanned_before_the_call,
                             reset_all),
      cmocka_unit_test_setup(fp8_device_scan_counts_saturated_and_reads_scales_and_amax, reset_all),
      cmocka_unit_test_setup(five_device_roles_take_two_launches, reset_all),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
