/* Shadow execution of GEMMs whose operands are in device memory, end to end
 * on the fake libcuda.so.1 (kernels/shadow.cu runs on the CPU) and the fake
 * libcublas.so.13 beside it (fp32 products in k order with fmaf): a decoded
 * cuBLAS call through profiler/call.c and profiler/shadow.c to
 * profiler/gpu/devshadow.c and back into the site's "shadow" object.
 *
 * What a user relies on: every candidate's worst metrics over two calls are
 * the host path's definitions (mp_shadow_run's candidate outputs, here
 * against the device's fp32 reference computed independently below); the
 * first call only seeds delayed scaling, the second uses it; the program's
 * memory is untouched; results wait for the device without blocking (a held
 * device delivers nothing until it finishes); the in-flight limit and the
 * memory cap skip calls with their reasons; the work runs on a private
 * stream with pedantic math, frees its memory, never waits on an event
 * nobody recorded; what the program writes after the call (on its stream,
 * before the private stream gets to run) does not reach the results.
 * Run with LD_LIBRARY_PATH=<fakecuda dir>. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <cublas_api.h>
#include <cudnn.h>

#include "analysis/convert.h"
#include "analysis/shadow.h"
#include "profiler/call.h"
#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/devshadow_blas.h"
#include "profiler/gpu/gpu.h"
#include "profiler/hooks/conv_decode.h"
#include "profiler/hooks/gemm_decode.h"
#include "profiler/hostmem.h"
#include "profiler/jsonw.h"
#include "profiler/mpp.h"
#include "profiler/op.h"
#include "profiler/shadow.h"
#include "profiler/sites.h"
#include "tests/core_fixture.h"
#include "tests/gpu/shadow_draw.h"

static void *fake(const char *lib, const char *name) {
  void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  void *f = h ? dlsym(h, name) : NULL;
  if (!f) fail_msg("%s has no %s: not the fake library", lib, name);
  return f;
}
#define FAKE_INT(lib, name) ((int (*)(void))fake(lib, name))()

/* What hooks/cublas.c hands devshadow.c in libmpprof (this test links no
 * hooks): the fake libcublas.so.13's functions, a handle in pedantic math. */
static cublasStatus_t (*blas_create)(cublasHandle_t *);
static cublasStatus_t (*blas_set_math)(cublasHandle_t, cublasMath_t);
static cublasStatus_t (*blas_set_stream)(cublasHandle_t, cudaStream_t);
static __typeof__(&cublasSgemmStridedBatched) blas_sgemm;

static bool test_create(void **ret_handle) {
  cublasHandle_t h = NULL;
  if (blas_create(&h) != CUBLAS_STATUS_SUCCESS ||
      blas_set_math(h, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS)
    return false;
  *ret_handle = h;
  return true;
}

static bool test_sgemm(void *h, cudaStream_t s, cublasOperation_t ta, cublasOperation_t tb, int m,
                       int n, int k, const float *alpha, const float *A, int lda, long long sa,
                       const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                       long long sc, int batch) {
  return blas_set_stream(h, s) == CUBLAS_STATUS_SUCCESS &&
         blas_sgemm(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch) ==
             CUBLAS_STATUS_SUCCESS;
}

static const mpp_devshadow_blas *test_blas(void) {
  static const mpp_devshadow_blas fns = {.create = test_create, .sgemm_strided = test_sgemm};
  void *h = dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (!h) return NULL;
  *(void **)&blas_create = dlsym(h, "cublasCreate_v2");
  *(void **)&blas_set_stream = dlsym(h, "cublasSetStream_v2");
  *(void **)&blas_set_math = dlsym(h, "cublasSetMathMode");
  *(void **)&blas_sgemm = dlsym(h, "cublasSgemmStridedBatched");
  return blas_create && blas_set_stream && blas_set_math && blas_sgemm ? &fns : NULL;
}

static int setup_all(void **state) {
  (void)state;
  if (!dlopen("libcublas.so.13", RTLD_NOW | RTLD_GLOBAL)) return -1;
  mpp_devshadow_set_blas(MPP_DEVSHADOW_CUBLAS, test_blas);
  return mpp_cuda_available() ? 0 : -1;
}

static int reset_all(void **state) {
  (void)state;
  mpp_shadow_drain();
  mpp_fixture_reset(MPP_SCAN_NONE, 16, 16);
  mpp_cfg.shadow = 1;
  mpp_cfg.shadow_max_mb = 256;
  return 0;
}

static uint32_t rng = 88172645u;
static double draw(int spread) {
  return mpp_test_draw(&rng, spread);
}

static void *dev_alloc(size_t bytes) {
  CUdeviceptr d = 0;
  assert_int_equal(mpp_cu()->mem_alloc(&d, bytes), CUDA_SUCCESS);
  return (void *)(uintptr_t)d;
}

typedef struct gemm {
  mp_dtype dt;
  int ta, tb; /* cublasOperation_t */
  int64_t m, n, k, batch, lda, ldb, ldc, sa, sb, sc;
  void *A, *B, *C; /* device */
  void *hA, *hB;   /* host copies */
  size_t ea, eb, ec;
} gemm;

static void make(gemm *g, mp_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t k,
                 int64_t batch, int spread) {
  memset(g, 0, sizeof *g);
  g->dt = dt, g->ta = ta, g->tb = tb, g->m = m, g->n = n, g->k = k, g->batch = batch;
  int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
  g->lda = ra + 2, g->ldb = rb + 1, g->ldc = m + 3;
  g->sa = g->lda * ca + 5, g->sb = g->ldb * cb, g->sc = g->ldc * n;
  g->ea = (size_t)(g->sa * batch), g->eb = (size_t)(g->sb * batch), g->ec = (size_t)(g->sc * batch);
  size_t es = mp_dtype_size(dt);
  g->hA = calloc(g->ea, es), g->hB = calloc(g->eb, es);
  for (size_t i = 0; i < g->ea; i++)
    mp_store(dt, g->hA, i, draw(spread));
  for (size_t i = 0; i < g->eb; i++)
    mp_store(dt, g->hB, i, draw(spread));
  g->A = memcpy(dev_alloc(g->ea * es), g->hA, g->ea * es);
  g->B = memcpy(dev_alloc(g->eb * es), g->hB, g->eb * es);
  g->C = dev_alloc(g->ec * es);
  for (size_t i = 0; i < g->ec; i++)
    mp_store(dt, g->C, i, draw(4)); /* what the "GEMM" (not run here) left in D */
}

static void drop(gemm *g) {
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)g->A);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)g->B);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)g->C);
  free(g->hA), free(g->hB);
}

static int cuda_type(mp_dtype d) {
  return d == MP_FP16 ? 2 /* CUDA_R_16F */ : 0 /* CUDA_R_32F */;
}

/* One decoded cublasGemmStridedBatchedEx-like call (alpha 1, beta 0), recorded. */
static void call(const gemm *g, void *stream) {
  static const float one = 1, zero = 0;
  mpp_gemm_call c = {.api = "cublasGemmStridedBatchedEx",
                     .transa = g->ta,
                     .transb = g->tb,
                     .m = g->m,
                     .n = g->n,
                     .k = g->k,
                     .lda = g->lda,
                     .ldb = g->ldb,
                     .ldc = g->ldc,
                     .alpha = &one,
                     .beta = &zero,
                     .A = g->A,
                     .B = g->B,
                     .C = g->C,
                     .strideA = g->sa,
                     .strideB = g->sb,
                     .strideC = g->sc,
                     .batch = g->batch,
                     .Atype = cuda_type(g->dt),
                     .Btype = cuda_type(g->dt),
                     .Ctype = cuda_type(g->dt),
                     .compute = CUBLAS_COMPUTE_32F,
                     .scale_type = 0};
  mpp_gemm_ctx ctx = {
      .math_mode = 0, .pointer_mode = 0, .stream = stream, .host_visible = mpp_host_readable};
  mpp_op op;
  mpp_call cl;
  mpp_gemm_decode(&op, &c, &ctx);
  assert_int_equal(op.kind, MPP_OP_GEMM);
  mpp_call_begin(&cl, &op);
  mpp_call_end(&cl, &op, true);
}

/* The site's "shadow" object as the raw file has it. */
static cJSON *shadow_json(void) {
  mpp_sites_lock();
  mpp_tables t;
  mpp_tables_get(&t, 0);
  assert_int_equal(t.nsites, 1);
  assert_non_null(t.sites[0].shadow);
  mpp_jw w;
  mpp_jw_init(&w);
  mpp_jw_obj(&w);
  mpp_shadow_write(&w, t.sites[0].shadow);
  mpp_jw_obj_end(&w);
  mpp_sites_unlock();
  assert_false(w.oom);
  cJSON *o = cJSON_ParseWithLength(w.buf, w.len);
  mpp_jw_free(&w);
  assert_non_null(o);
  cJSON *s = cJSON_DetachItemFromObject(o, "shadow");
  cJSON_Delete(o);
  return s;
}

static double num(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!v) fail_msg("no %s", key);
  return cJSON_IsNull(v) ? INFINITY : v->valuedouble;
}

static uint64_t skipped(const cJSON *sh, const char *why) {
  const cJSON *v =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sh, "skipped"), why);
  return v ? (uint64_t)v->valuedouble : 0;
}

/* The host path's view of g (host copies of the operands). */
static mp_shadow_gemm host_gemm(const gemm *g) {
  mp_shadow_gemm h;
  memset(&h, 0, sizeof h);
  h.m = g->m, h.n = g->n, h.k = g->k, h.batch = g->batch;
  h.a = (mp_shadow_operand){g->dt, g->hA, NULL, g->lda, g->sa, g->ta != 0, NULL, NULL, 0, 0};
  h.b = (mp_shadow_operand){g->dt, g->hB, NULL, g->ldb, g->sb, g->tb != 0, NULL, NULL, 0, 0};
  h.alpha = 1;
  h.out = g->dt;
  return h;
}

/* The device's reference, independently: exact operands, fp32 fmaf in k order. */
static void reference32(const gemm *g, float *ref) {
  for (int64_t b = 0; b < g->batch; b++)
    for (int64_t j = 0; j < g->n; j++)
      for (int64_t i = 0; i < g->m; i++) {
        float acc = 0;
        for (int64_t q = 0; q < g->k; q++) {
          int64_t ia = b * g->sa + (g->ta ? q + i * g->lda : i + q * g->lda);
          int64_t ib = b * g->sb + (g->tb ? j + q * g->ldb : q + j * g->ldb);
          acc = fmaf((float)mp_load(g->dt, g->hA, (uint64_t)ia),
                     (float)mp_load(g->dt, g->hB, (uint64_t)ib), acc);
        }
        ref[b * g->m * g->n + i + j * g->m] = acc;
      }
}

static bool close_rel(double x, double y) {
  if (isinf(x) || isinf(y)) return x == y;
  return fabs(x - y) <= 1e-12 * fabs(y) + 1e-300;
}

/* Two calls of g shadowed on the device give, per candidate, the worst of
 * the host-path candidate outputs' metrics against the fp32 reference. */
static void check_matches_host(const gemm *g) {
  CUstream s = NULL;
  assert_int_equal(mpp_cu()->stream_create(&s, 0), CUDA_SUCCESS);
  size_t es = mp_dtype_size(g->dt);
  void *d_before = malloc(g->ec * es);
  memcpy(d_before, g->C, g->ec * es);
  int gemms0 = FAKE_INT("libcublas.so.13", "fakecublas_gemms");
  long (*thread_calls)(void) = (long (*)(void))fake("libcuda.so.1", "fakecuda_thread_calls");
  call(g, s);
  long calls0 = thread_calls();
  call(g, s);
  /* The second call, 9 candidates (no loss scale): work memory and the
   * operands' copy on the op's stream, the op's event and the private
   * stream's wait, 2 amax + 2 quant per product + 9 err launches, the amax
   * copy, the free, the closing event (39); the context and capture-mode
   * checks; the first call's event query; call.c's own. */
  printf("driver calls for a shadowed call (9 candidates): %ld\n", thread_calls() - calls0);
  assert_true(thread_calls() - calls0 <= 47);
  mpp_shadow_drain();
  /* the program's memory is untouched */
  assert_memory_equal(d_before, g->C, g->ec * es);
  assert_memory_equal(g->hA, g->A, g->ea * es);
  assert_memory_equal(g->hB, g->B, g->eb * es);
  /* mpprof's own GEMMs ran on its private stream in pedantic math (no TF32) */
  assert_true(FAKE_INT("libcublas.so.13", "fakecublas_gemms") > gemms0);
  assert_int_equal(FAKE_INT("libcublas.so.13", "fakecublas_last_math"), CUBLAS_PEDANTIC_MATH);
  void *last_stream = ((void *(*)(void))fake("libcublas.so.13", "fakecublas_last_stream"))();
  assert_non_null(last_stream);
  assert_ptr_not_equal(last_stream, s);
  assert_int_equal(((long (*)(void))fake("libcuda.so.1", "fakecuda_async_live"))(), 0);
  assert_int_equal(FAKE_INT("libcuda.so.1", "fakecuda_unrecorded_waits"), 0);
  /* work memory from mpprof's own pool, never the program's default pool, and
   * never reused through a dependency on the private stream */
  long (*fake_long)(void) = (long (*)(void))fake("libcuda.so.1", "fakecuda_default_pool_allocs");
  assert_int_equal(fake_long(), 0);
  fake_long = (long (*)(void))fake("libcuda.so.1", "fakecuda_pool_allocs_with_internal_deps");
  assert_int_equal(fake_long(), 0);

  /* expected: the host path's candidate outputs of the same two calls */
  size_t mn = (size_t)(g->m * g->n * g->batch);
  float *ref = malloc(mn * sizeof *ref);
  reference32(g, ref);
  mp_shadow_gemm h = host_gemm(g);
  for (int c = 0; c < MP_SH_COUNT; c++)
    h.capture[c] = calloc(mn, sizeof(float));
  static mp_amax_history hist[2];
  mp_amax_history_init(&hist[0]);
  mp_amax_history_init(&hist[1]);
  mp_shadow_metrics want[MP_SH_COUNT];
  uint64_t want_calls[MP_SH_COUNT] = {0};
  unsigned mask = MP_SHADOW_ALL & ~(1u << MP_SH_FP16_SCALED); /* no loss scale: scans are off */
  for (int rep = 0; rep < 2; rep++) {
    mp_shadow_metrics hm[MP_SH_COUNT];
    int done = mp_shadow_run(&h, mask, hist, hm);
    assert_true(done >= 0);
    assert_int_equal(done >> MP_SH_E4M3_DELAYED & 1, rep); /* the first call only seeds */
    for (int c = 0; c < MP_SH_COUNT; c++) {
      if (!(done >> c & 1)) continue;
      mp_sh_err e = {0, 0, 0, 0, 0, 0, 0, 0};
      for (size_t o = 0; o < mn; o++)
        mp_sh_err_add(&e, (double)ref[o], (double)h.capture[c][o], 0); /* no epilogue */
      mp_shadow_metrics m;
      mp_shadow_metrics_of(&e, &m);
      if (want_calls[c]++ == 0)
        want[c] = m;
      else
        mp_shadow_metrics_worst(&want[c], &m);
    }
  }
  want[MP_SH_FP16_SCALED] = want[MP_SH_FP16];
  want_calls[MP_SH_FP16_SCALED] = want_calls[MP_SH_FP16];

  cJSON *sh = shadow_json();
  assert_int_equal((int)num(sh, "calls"), 2);
  const cJSON *cands = cJSON_GetObjectItemCaseSensitive(sh, "candidates");
  int seen = 0;
  for (int c = 0; c < MP_SH_COUNT; c++) {
    const char *name = mp_shadow_cand_name((mp_shadow_cand)c);
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(cands, name);
    if (!want_calls[c]) {
      assert_null(m);
      continue;
    }
    if (!m) fail_msg("%s: not computed on the device", name);
    seen++;
    assert_int_equal((uint64_t)num(m, "calls"), want_calls[c]);
    if (!close_rel(num(m, "rel_l2"), want[c].rel_l2))
      fail_msg("%s: rel_l2 %.17g, host definitions %.17g", name, num(m, "rel_l2"), want[c].rel_l2);
    if (num(m, "max_rel") != want[c].max_rel)
      fail_msg("%s: max_rel %.17g, want %.17g", name, num(m, "max_rel"), want[c].max_rel);
    if (num(m, "flushed") != want[c].flushed)
      fail_msg("%s: flushed %.17g, want %.17g", name, num(m, "flushed"), want[c].flushed);
    assert_int_equal((uint64_t)num(m, "nonfinite"), want[c].nonfinite);
  }
  assert_int_equal(seen, MP_SH_COUNT);
  /* the data overflows fp16 somewhere and fp8 recipes differ: the checks bite */
  assert_true(want[MP_SH_FP16].nonfinite > 0 || want[MP_SH_FP16].flushed > 0);
  assert_true(want[MP_SH_E4M3_CURRENT].rel_l2 != want[MP_SH_MXFP8_E4M3].rel_l2);
  cJSON_Delete(sh);
  for (int c = 0; c < MP_SH_COUNT; c++)
    free(h.capture[c]);
  free(ref);
  free(d_before);
}

static void fp32_gemm_matches_host_definitions(void **state) {
  (void)state;
  gemm g;
  make(&g, MP_FP32, 0, 0, 37, 13, 45, 1, 14); /* k ends inside an MX block */
  check_matches_host(&g);
  drop(&g);
}

static void fp16_strided_transposed_batch_matches_host_definitions(void **state) {
  (void)state;
  gemm g;
  make(&g, MP_FP16, 1, 1, 9, 6, 70, 3, 7);
  check_matches_host(&g);
  drop(&g);
}

/* A device that has not finished delivers nothing, and the program goes on;
 * more calls than slots in flight are skipped as shadow_busy. */
static void results_wait_for_the_device_without_blocking(void **state) {
  (void)state;
  gemm g;
  make(&g, MP_FP32, 0, 0, 8, 8, 32, 1, 6);
  void (*hold)(int) = (void (*)(int))fake("libcuda.so.1", "fakecuda_hold");
  hold(1);
  for (int i = 0; i < 6; i++)
    call(&g, NULL);
  cJSON *sh = shadow_json();
  assert_int_equal((int)num(sh, "calls"), 0);      /* nothing delivered yet */
  assert_int_equal(skipped(sh, "shadow_busy"), 2); /* 4 in flight */
  cJSON_Delete(sh);
  hold(0);
  mpp_shadow_drain();
  sh = shadow_json();
  assert_int_equal((int)num(sh, "calls"), 4);
  cJSON_Delete(sh);
  assert_int_equal(((long (*)(void))fake("libcuda.so.1", "fakecuda_async_live"))(), 0);
  drop(&g);
}

static void calls_above_the_memory_cap_are_skipped(void **state) {
  (void)state;
  gemm g;
  make(&g, MP_FP32, 0, 0, 8, 8, 32, 1, 6);
  mpp_cfg.shadow_max_mb = 0;
  int launches = FAKE_INT("libcuda.so.1", "fakecuda_shadow_launches");
  call(&g, NULL);
  mpp_shadow_drain();
  cJSON *sh = shadow_json();
  assert_int_equal((int)num(sh, "calls"), 0);
  assert_int_equal(skipped(sh, "shadow_too_large"), 1);
  cJSON_Delete(sh);
  assert_int_equal(FAKE_INT("libcuda.so.1", "fakecuda_shadow_launches"), launches);
  drop(&g);
}

typedef struct got {
  int n;
  mpp_devshadow_result r;
} got;
static void keep(void *cookie, const mpp_devshadow_result *r) {
  got *g = cookie;
  g->n++;
  g->r = *r;
}

/* A call whose work memory does not fit the cap is done in slices of D's
 * columns (op(A) whole, op(B), the reference and a candidate product per
 * slice): every candidate's error sums merge to what the whole product gives
 * (the sums to rounding, maxima and counts exactly), the amax words are the
 * same; a cap below one column refuses the call. */
static void sliced_products_measure_what_whole_ones_do(void **state) {
  (void)state;
  gemm g;
  make(&g, MP_FP32, 0, 1, 37, 13, 45, 2, 10);
  mp_shadow_gemm h = host_gemm(&g);
  h.a.data = g.A; /* the device copies */
  h.b.data = g.B;
  const float delayed[2][2] = {{2, 0.5f}, {4, 0.25f}};
  got whole = {0}, sliced = {0};
  int gemms0 = FAKE_INT("libcublas.so.13", "fakecublas_gemms");
  assert_int_equal(
      mpp_devshadow_enqueue(NULL, &h, MP_SHADOW_ALL, delayed, (uint64_t)1 << 30, keep, &whole), 0);
  mpp_devshadow_drain();
  int gemms1 = FAKE_INT("libcublas.so.13", "fakecublas_gemms");
  /* whole: 45,824 bytes (18,432 of them the operands' copies, whole in any
   * case); one column 34,304; 38,432 takes 5 columns a slice: 3 slices */
  assert_int_equal(mpp_devshadow_enqueue(NULL, &h, MP_SHADOW_ALL, delayed, 38432, keep, &sliced),
                   0);
  mpp_devshadow_drain();
  int gemms2 = FAKE_INT("libcublas.so.13", "fakecublas_gemms");
  assert_int_equal(whole.n, 1);
  assert_int_equal(sliced.n, 1);
  assert_int_equal(gemms2 - gemms1, 3 * (gemms1 - gemms0));
  assert_int_equal(whole.r.rc, 0);
  assert_int_equal(sliced.r.rc, 0);
  assert_int_equal(sliced.r.done, whole.r.done);
  assert_int_equal(whole.r.done, MP_SHADOW_ALL);
  assert_true(sliced.r.amax[0] == whole.r.amax[0] && sliced.r.amax[1] == whole.r.amax[1]);
  for (int c = 0; c < MP_SH_COUNT; c++) {
    const mp_sh_err *a = &whole.r.err[c], *b = &sliced.r.err[c];
    if (!close_rel(b->se, a->se) || !close_rel(b->sr, a->sr))
      fail_msg("%s: sums %.17g %.17g, whole %.17g %.17g", mp_shadow_cand_name((mp_shadow_cand)c),
               b->se, b->sr, a->se, a->sr);
    assert_true(b->maxd == a->maxd && b->maxr == a->maxr);
    assert_true(b->nonzero == a->nonzero && b->flushed == a->flushed &&
                b->nonfinite == a->nonfinite);
    assert_true(b->measured == a->measured && a->measured > 0); /* outputs measured */
  }
  assert_true(whole.r.err[MP_SH_FP16].sr > 0);
  assert_int_equal(mpp_devshadow_enqueue(NULL, &h, MP_SHADOW_ALL, delayed, 34303, keep, &sliced),
                   -E2BIG);
  drop(&g);
}

/* The program goes on after the call: its stream updates A and B in place,
 * re-points a pointer array, rewrites the bias, while the private stream has
 * not run yet (the fake driver's lag). The results are those of the values
 * the op read: a pointer-array batch whose operands are overwritten (NaN)
 * straight after the call measures exactly what the same call, strided and
 * untouched, measures; and nothing is delivered before the device ran it. */
static void later_program_writes_do_not_reach_the_results(void **state) {
  (void)state;
  gemm g;
  make(&g, MP_FP32, 0, 1, 21, 11, 40, 3, 8);
  int64_t m = g.m;
  float *bias = dev_alloc((size_t)(m * g.batch) * sizeof(float));
  for (int64_t i = 0; i < m * g.batch; i++)
    bias[i] = (float)draw(3);
  mp_shadow_gemm h = host_gemm(&g);
  h.a.data = g.A, h.b.data = g.B;
  h.epilogue = MP_SH_EPI_RELU;
  h.bias = bias, h.bias_dtype = MP_FP32, h.bias_stride = m;
  const float delayed[2][2] = {{2, 0.5f}, {4, 0.25f}};
  unsigned mask = MP_SHADOW_ALL & ~(1u << MP_SH_FP16_SCALED); /* not defined with a bias */
  got want = {0}, lagged = {0};
  assert_int_equal(mpp_devshadow_enqueue(NULL, &h, mask, delayed, (uint64_t)1 << 30, keep, &want),
                   0);
  mpp_devshadow_drain();
  assert_int_equal(want.n, 1);
  assert_int_equal(want.r.rc, 0);

  /* the same matrices as a pointer-array batch */
  const void **pa = dev_alloc((size_t)g.batch * sizeof *pa),
             **pb = dev_alloc((size_t)g.batch * sizeof *pb);
  size_t es = mp_dtype_size(g.dt);
  for (int64_t b = 0; b < g.batch; b++) {
    pa[b] = (const char *)g.A + (size_t)(b * g.sa) * es;
    pb[b] = (const char *)g.B + (size_t)(b * g.sb) * es;
  }
  mp_shadow_gemm hp = h;
  hp.a.ptrs = pa, hp.a.data = NULL, hp.b.ptrs = pb, hp.b.data = NULL;
  void (*lag)(int) = (void (*)(int))fake("libcuda.so.1", "fakecuda_lag");
  lag(1);
  assert_int_equal(
      mpp_devshadow_enqueue(NULL, &hp, mask, delayed, (uint64_t)1 << 30, keep, &lagged), 0);
  memset(g.A, 0xff, g.ea * es); /* NaN */
  memset(g.B, 0xff, g.eb * es);
  memset(bias, 0xff, (size_t)(m * g.batch) * sizeof(float));
  for (int64_t b = 0; b < g.batch; b++)
    pa[b] = pb[b] = g.B; /* NaN now, and large enough for either */
  mpp_devshadow_poll();
  assert_int_equal(lagged.n, 0); /* the private stream has not run */
  lag(0);
  mpp_devshadow_drain();
  assert_int_equal(lagged.n, 1);
  assert_int_equal(lagged.r.rc, 0);
  assert_int_equal(lagged.r.done, want.r.done);
  assert_true(lagged.r.amax[0] == want.r.amax[0] && lagged.r.amax[1] == want.r.amax[1]);
  assert_memory_equal(lagged.r.err, want.r.err, sizeof want.r.err);
  assert_true(want.r.err[MP_SH_FP16].sr > 0);
  assert_int_equal(((long (*)(void))fake("libcuda.so.1", "fakecuda_async_live"))(), 0);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)pa);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)pb);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)bias);
  drop(&g);
}

/* An FP8 call whose scales live in device memory, as cuBLASLt's scale
 * pointers do: they are copied with the operands right after the op, so the
 * program's next step changing them (delayed scaling updates them every
 * step) before the private stream runs does not reach the results; the
 * amax is that of the scaled values, and the scales change what the current
 * precision measures. */
static void fp8_scales_in_device_memory_are_read_as_the_op_read_them(void **state) {
  (void)state;
  gemm g;
  make(&g, MP_FP8_E4M3, 1, 0, 9, 7, 40, 2, 4);
  float *sc = dev_alloc(3 * sizeof(float));
  sc[0] = 0.013f, sc[1] = 3.7f, sc[2] = 51.0f;
  mp_shadow_gemm h = host_gemm(&g);
  h.a.data = g.A, h.b.data = g.B;
  h.a.scale = &sc[0], h.b.scale = &sc[1], h.d_scale = &sc[2];
  const float delayed[2][2] = {{2, 0.5f}, {4, 0.25f}};
  unsigned mask = MP_SHADOW_ALL & ~(1u << MP_SH_FP16_SCALED);
  got want = {0}, lagged = {0}, unscaled = {0};
  assert_int_equal(mpp_devshadow_enqueue(NULL, &h, mask, delayed, (uint64_t)1 << 30, keep, &want),
                   0);
  mpp_devshadow_drain();
  assert_int_equal(want.n, 1);
  assert_int_equal(want.r.rc, 0);
  assert_true(want.r.done >> MP_SH_CURRENT & 1);
  /* amax of A as the op reads it: stored values times 0.013 */
  float amax = 0;
  for (int64_t b = 0; b < g.batch; b++)
    for (int64_t i = 0; i < g.m; i++)
      for (int64_t q = 0; q < g.k; q++)
        amax = mp_sh_amax_add(
            amax, (float)mp_load(g.dt, g.hA, (uint64_t)(b * g.sa + q + i * g.lda)) * 0.013f);
  assert_true(want.r.amax[0] == amax);

  void (*lag)(int) = (void (*)(int))fake("libcuda.so.1", "fakecuda_lag");
  lag(1);
  assert_int_equal(mpp_devshadow_enqueue(NULL, &h, mask, delayed, (uint64_t)1 << 30, keep, &lagged),
                   0);
  sc[0] = sc[1] = sc[2] = 1000.0f; /* the next step's scales */
  lag(0);
  mpp_devshadow_drain();
  assert_int_equal(lagged.n, 1);
  assert_int_equal(lagged.r.rc, 0);
  assert_true(lagged.r.amax[0] == want.r.amax[0] && lagged.r.amax[1] == want.r.amax[1]);
  assert_memory_equal(lagged.r.err, want.r.err, sizeof want.r.err);

  /* without its scales the same call measures something else */
  h.a.scale = h.b.scale = h.d_scale = NULL;
  assert_int_equal(
      mpp_devshadow_enqueue(NULL, &h, mask, delayed, (uint64_t)1 << 30, keep, &unscaled), 0);
  mpp_devshadow_drain();
  assert_int_equal(unscaled.r.rc, 0);
  assert_true(unscaled.r.err[MP_SH_CURRENT].se != want.r.err[MP_SH_CURRENT].se);
  assert_true(unscaled.r.amax[0] != want.r.amax[0]);
  assert_int_equal(((long (*)(void))fake("libcuda.so.1", "fakecuda_async_live"))(), 0);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)sc);
  drop(&g);
}

/* The host path's gathered operands in host put in device memory (host's
 * a.data and b.data then point there: the caller frees them), measured on
 * the device with every candidate: what the device's own gather of the same
 * convolution must measure. */
static got measured_host_gather(mp_shadow_gemm *host, const float delayed[2][2]) {
  size_t ba = (size_t)(host->m * host->k * host->batch) * mp_dtype_size(host->a.dtype),
         bb = (size_t)(host->k * host->n * host->batch) * mp_dtype_size(host->b.dtype);
  host->a.data = memcpy(dev_alloc(ba), host->a.data, ba);
  host->b.data = memcpy(dev_alloc(bb), host->b.data, bb);
  got want = {0};
  assert_int_equal(
      mpp_devshadow_enqueue(NULL, host, MP_SHADOW_ALL, delayed, (uint64_t)1 << 30, keep, &want), 0);
  mpp_devshadow_drain();
  return want;
}

/* A convolution in device memory (backward filter, fp16, NHWC strides,
 * flipped taps, 2 groups; 2-D, and 3-D: a depth of 4 with its own padding
 * and stride, NDHWC): its operands gathered on the device measure exactly what
 * the same GEMM on the host path's gathered operands measures on the
 * device, and the tensors overwritten straight after the call (the private
 * stream held back) do not reach the results. */
static void device_conv_case(bool deep) {
  mp_shadow_conv cv;
  memset(&cv, 0, sizeof cv);
  mp_sh_conv *g = &cv.g;
  g->kind = MP_SHADOW_CONV_BWD_FILTER, g->flip = 1;
  g->n = 2, g->c = 3, g->h = 6, g->w = 5, g->k = 4, g->r = 3, g->s = 2; /* c, k: a group's */
  g->groups = 2;
  g->pad[0] = 1, g->pad[1] = 1, g->stride[0] = 1, g->stride[1] = 2;
  g->dilation[0] = 2, g->dilation[1] = 1;
  g->p = (g->h + 2 * g->pad[0] - g->dilation[0] * (g->r - 1) - 1) / g->stride[0] + 1;
  g->q = (g->w + 2 * g->pad[1] - g->dilation[1] * (g->s - 1) - 1) / g->stride[1] + 1;
  int64_t C = g->c * g->groups, K = g->k * g->groups, D = 1, T = 1, O = 1;
  if (deep) {
    g->d = D = 4, g->t = T = 2, g->pad_d = 1, g->stride_d = 2, g->dilation_d = 1;
    g->o = O = (D + 2 * g->pad_d - g->dilation_d * (T - 1) - 1) / g->stride_d + 1;
    g->xs_d = g->h * g->w * C, g->ys_d = g->p * g->q * K, g->ws_d = g->r * g->s;
  }
  int64_t xs[4] = {D * g->h * g->w * C, 1, g->w * C, C};
  int64_t ys[4] = {O * g->p * g->q * K, 1, g->q * K, K};
  int64_t ws[4] = {g->c * T * g->r * g->s, T * g->r * g->s, g->s, 1};
  memcpy(g->xs, xs, sizeof xs), memcpy(g->ys, ys, sizeof ys), memcpy(g->ws, ws, sizeof ws);
  cv.x_dtype = cv.y_dtype = cv.w_dtype = MP_FP16;
  size_t nx = (size_t)(g->n * C * D * g->h * g->w), ny = (size_t)(g->n * K * O * g->p * g->q);
  uint16_t *x = dev_alloc(nx * 2), *y = dev_alloc(ny * 2);
  for (size_t i = 0; i < nx; i++)
    mp_store(MP_FP16, x, i, draw(6));
  for (size_t i = 0; i < ny; i++)
    mp_store(MP_FP16, y, i, draw(9));
  cv.x = x, cv.y = y, cv.alpha = 1;

  /* the host path's gather, its operands put in device memory */
  mp_shadow_gemm host, shape;
  void *owned = NULL;
  assert_int_equal(mp_shadow_conv_gemm(&cv, &host, &owned), 0);
  assert_int_equal(mp_shadow_conv_shape(&cv, &shape), 0);
  assert_int_equal(host.batch, 2);
  const float delayed[2][2] = {{2, 0.5f}, {4, 0.25f}};
  unsigned mask = MP_SHADOW_ALL;
  got want = measured_host_gather(&host, delayed), conv = {0};
  void (*lag)(int) = (void (*)(int))fake("libcuda.so.1", "fakecuda_lag");
  lag(1);
  assert_int_equal(
      mpp_devshadow_enqueue_conv(NULL, &cv, &shape, mask, delayed, (uint64_t)1 << 30, keep, &conv),
      0);
  memset(x, 0xff, nx * 2); /* NaN */
  memset(y, 0xff, ny * 2);
  lag(0);
  mpp_devshadow_drain();
  assert_int_equal(want.n, 1);
  assert_int_equal(conv.n, 1);
  assert_int_equal(conv.r.rc, 0);
  assert_int_equal(conv.r.done, want.r.done);
  assert_true(conv.r.amax[0] == want.r.amax[0] && conv.r.amax[1] == want.r.amax[1]);
  assert_memory_equal(conv.r.err, want.r.err, sizeof want.r.err);
  assert_true(want.r.err[MP_SH_FP16].sr > 0 && want.r.err[MP_SH_FP16].se > 0);
  assert_int_equal(((long (*)(void))fake("libcuda.so.1", "fakecuda_async_live"))(), 0);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)host.a.data);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)host.b.data);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)x);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)y);
  free(owned);
}

/* The fused bias-activation forward in device memory (fp16, NHWC, 2
 * groups, ReLU, an fp16 bias of one value per output channel): the gather
 * and a copy of the bias on the op's stream measure exactly what the host
 * path's gathered operands with the same bias measure on the device, and x,
 * w and the bias overwritten straight after the call do not reach the
 * results. Without the bias the same call measures something else. */
static void a_fused_bias_relu_convolution_on_the_device_reads_its_bias_copy(void **state) {
  (void)state;
  mp_shadow_conv cv;
  memset(&cv, 0, sizeof cv);
  mp_sh_conv *g = &cv.g;
  g->kind = MP_SHADOW_CONV_FWD;
  g->n = 2, g->c = 3, g->h = 5, g->w = 4, g->k = 4, g->r = 3, g->s = 3; /* c, k: a group's */
  g->groups = 2;
  g->pad[0] = g->pad[1] = 1, g->stride[0] = g->stride[1] = 1;
  g->dilation[0] = g->dilation[1] = 1;
  g->p = g->h, g->q = g->w;
  int64_t C = g->c * g->groups, K = g->k * g->groups;
  int64_t xs[4] = {g->h * g->w * C, 1, g->w * C, C};
  int64_t ys[4] = {g->p * g->q * K, 1, g->q * K, K};
  int64_t ws[4] = {g->c * g->r * g->s, 1, g->s * g->c, g->c}; /* NHWC filter */
  memcpy(g->xs, xs, sizeof xs), memcpy(g->ys, ys, sizeof ys), memcpy(g->ws, ws, sizeof ws);
  cv.x_dtype = cv.y_dtype = cv.w_dtype = MP_FP16;
  size_t nx = (size_t)(g->n * C * g->h * g->w), nw = (size_t)(K * g->c * g->r * g->s);
  uint16_t *x = dev_alloc(nx * 2), *w = dev_alloc(nw * 2), *bias = dev_alloc((size_t)K * 2);
  for (size_t i = 0; i < nx; i++)
    mp_store(MP_FP16, x, i, draw(3));
  for (size_t i = 0; i < nw; i++)
    mp_store(MP_FP16, w, i, draw(3));
  for (int64_t i = 0; i < K; i++)
    mp_store(MP_FP16, bias, (size_t)i, draw(2));
  cv.x = x, cv.wt = w, cv.alpha = 1;

  mp_shadow_gemm host, shape;
  void *owned = NULL;
  assert_int_equal(mp_shadow_conv_gemm(&cv, &host, &owned), 0);
  assert_int_equal(mp_shadow_conv_shape(&cv, &shape), 0);
  assert_int_equal(host.m, g->k);
  mp_shadow_gemm *both[2] = {&host, &shape};
  for (int i = 0; i < 2; i++) { /* as profiler/shadow.c gives the op's epilogue */
    both[i]->epilogue = MP_SH_EPI_RELU;
    both[i]->bias = bias;
    both[i]->bias_dtype = MP_FP16;
    both[i]->bias_stride = g->k;
  }
  const float delayed[2][2] = {{2, 0.5f}, {4, 0.25f}};
  unsigned mask = MP_SHADOW_ALL;
  got want = measured_host_gather(&host, delayed), conv = {0}, unbiased = {0};
  void (*lag)(int) = (void (*)(int))fake("libcuda.so.1", "fakecuda_lag");
  lag(1);
  assert_int_equal(
      mpp_devshadow_enqueue_conv(NULL, &cv, &shape, mask, delayed, (uint64_t)1 << 30, keep, &conv),
      0);
  uint16_t *bias_kept = memcpy(dev_alloc((size_t)K * 2), bias, (size_t)K * 2);
  memset(x, 0xff, nx * 2); /* NaN */
  memset(w, 0xff, nw * 2);
  memset(bias, 0xff, (size_t)K * 2);
  lag(0);
  mpp_devshadow_drain();
  assert_int_equal(want.r.rc, 0);
  assert_int_equal(conv.n, 1);
  assert_int_equal(conv.r.rc, 0);
  assert_int_equal(conv.r.done, want.r.done);
  assert_memory_equal(conv.r.err, want.r.err, sizeof want.r.err);
  assert_true(want.r.err[MP_SH_FP16].sr > 0 && want.r.err[MP_SH_FP16].se > 0);
  /* the bias and the ReLU count: without them the host operands measure otherwise */
  memcpy(bias, bias_kept, (size_t)K * 2);
  host.bias = NULL;
  host.epilogue = MP_SH_EPI_NONE;
  assert_int_equal(
      mpp_devshadow_enqueue(NULL, &host, mask, delayed, (uint64_t)1 << 30, keep, &unbiased), 0);
  mpp_devshadow_drain();
  assert_int_equal(unbiased.r.rc, 0);
  assert_true(unbiased.r.err[MP_SH_FP16].sr != want.r.err[MP_SH_FP16].sr);
  assert_int_equal(((long (*)(void))fake("libcuda.so.1", "fakecuda_async_live"))(), 0);
  const void *mem[6] = {host.a.data, host.b.data, x, w, bias, bias_kept};
  for (int i = 0; i < 6; i++)
    mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)mem[i]);
  free(owned);
}

static void device_convolutions_measure_their_implicit_gemm(void **state) {
  (void)state;
  device_conv_case(false);
  device_conv_case(true);
}

/* The same through the profiler as the cuDNN hook records it: a forward
 * convolution (fp16 NCHW tensors in device memory, cross-correlation)
 * decoded by conv_decode.c, shadowed on the device at every call. */
static void a_recorded_device_convolution_is_shadowed(void **state) {
  (void)state;
  mpp_tensor_desc x = {CUDNN_DATA_HALF, 4, {2, 3, 7, 6}, {126, 42, 6, 1}, 0};
  mpp_tensor_desc w = {CUDNN_DATA_HALF, 4, {4, 3, 3, 3}, {0, 0, 0, 0}, CUDNN_TENSOR_NCHW};
  mpp_tensor_desc y = {CUDNN_DATA_HALF, 4, {2, 4, 7, 6}, {168, 42, 6, 1}, 0};
  mpp_conv_desc c = {.comp_type = CUDNN_DATA_FLOAT,
                     .nsp = 2,
                     .mode = CUDNN_CROSS_CORRELATION,
                     .groups = 1,
                     .pad = {1, 1},
                     .stride = {1, 1},
                     .dilation = {1, 1}};
  size_t nx = 2 * 3 * 7 * 6, nw = 4 * 3 * 3 * 3, ny = 2 * 4 * 7 * 6;
  uint16_t *dx = dev_alloc(nx * 2), *dw = dev_alloc(nw * 2), *dy = dev_alloc(ny * 2);
  for (size_t i = 0; i < nx; i++)
    mp_store(MP_FP16, dx, i, draw(5));
  for (size_t i = 0; i < nw; i++)
    mp_store(MP_FP16, dw, i, draw(5));
  const float alpha = 1;
  mpp_op op;
  mpp_call cl;
  mpp_conv_decode(&op, "cudnnConvolutionForward", MPP_OP_CONV_FWD, &x, &w, &y, &c, dx, dw, dy);
  mpp_conv_shadow_of(&op, &x, &w, &y, &c, &alpha);
  assert_true(op.conv_shadow);
  int launches = FAKE_INT("libcuda.so.1", "fakecuda_shadow_launches");
  mpp_call_begin(&cl, &op);
  mpp_call_end(&cl, &op, true);
  mpp_shadow_drain();
  assert_true(FAKE_INT("libcuda.so.1", "fakecuda_shadow_launches") > launches);
  cJSON *sh = shadow_json();
  assert_int_equal((int)num(sh, "calls"), 1);
  const cJSON *f16 =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(sh, "candidates"), "fp16");
  assert_non_null(f16);
  assert_true(num(f16, "rel_l2") > 0 && num(f16, "rel_l2") < 1.0 / 256);
  cJSON_Delete(sh);
  /* without alpha (not read) nothing is shadowed */
  mpp_conv_decode(&op, "cudnnConvolutionForward", MPP_OP_CONV_FWD, &x, &w, &y, &c, dx, dw, dy);
  mpp_conv_shadow_of(&op, &x, &w, &y, &c, NULL);
  assert_false(op.conv_shadow);
  mpp_call_begin(&cl, &op);
  mpp_call_end(&cl, &op, true);
  sh = shadow_json();
  assert_int_equal(skipped(sh, "shadow_unsupported"), 1);
  cJSON_Delete(sh);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)dx);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)dw);
  mpp_cu()->mem_free((CUdeviceptr)(uintptr_t)dy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(fp32_gemm_matches_host_definitions, reset_all),
      cmocka_unit_test_setup(fp16_strided_transposed_batch_matches_host_definitions, reset_all),
      cmocka_unit_test_setup(results_wait_for_the_device_without_blocking, reset_all),
      cmocka_unit_test_setup(calls_above_the_memory_cap_are_skipped, reset_all),
      cmocka_unit_test_setup(sliced_products_measure_what_whole_ones_do, reset_all),
      cmocka_unit_test_setup(later_program_writes_do_not_reach_the_results, reset_all),
      cmocka_unit_test_setup(fp8_scales_in_device_memory_are_read_as_the_op_read_them, reset_all),
      cmocka_unit_test_setup(device_convolutions_measure_their_implicit_gemm, reset_all),
      cmocka_unit_test_setup(a_fused_bias_relu_convolution_on_the_device_reads_its_bias_copy,
                             reset_all),
      cmocka_unit_test_setup(a_recorded_device_convolution_is_shadowed, reset_all),
  };
  return cmocka_run_group_tests(tests, setup_all, NULL);
}
