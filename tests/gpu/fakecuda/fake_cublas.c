/* A fake libcublas.so.13 beside the fake libcuda.so.1, for mpprof's own
 * cuBLAS work (profiler/gpu/devshadow.c's private handle): the five entry
 * points it uses, with the real library's status codes for what they check.
 * "Device" memory is host memory here. cublasSgemmStridedBatched (N/N or
 * transposed) is fake_sgemm.h's GEMM. It records the math mode and stream of
 * the last GEMM for the tests (fakecublas_*). A GEMM on a stream the fake
 * libcuda.so.1 holds back (fakecuda_lag) runs on that stream's turn. */
#include <stdatomic.h>
#include <stdlib.h>

#include <cublas_api.h>

#include "fake_sgemm.h"

#define API __attribute__((visibility("default")))

struct cublasContext {
  unsigned magic;
  cudaStream_t stream;
  cublasMath_t math;
};
#define MAGIC 0xfc0b1a5u

static _Atomic int g_handles, g_gemms, g_last_math = -1;
static void *_Atomic g_last_stream;

API int fakecublas_handles(void) {
  return g_handles;
}
API int fakecublas_gemms(void) {
  return g_gemms;
}
API int fakecublas_last_math(void) {
  return g_last_math;
}
API void *fakecublas_last_stream(void) {
  return g_last_stream;
}

static int ok(cublasHandle_t h) {
  return h && h->magic == MAGIC;
}

API cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  struct cublasContext *c = calloc(1, sizeof *c);
  if (!c) return CUBLAS_STATUS_ALLOC_FAILED;
  c->magic = MAGIC;
  c->math = CUBLAS_DEFAULT_MATH;
  g_handles++;
  *h = c;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  if (!ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->magic = 0;
  free(h);
  g_handles--;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  if (!ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  unsigned base = (unsigned)mode & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH &&
      base != CUBLAS_PEDANTIC_MATH && base != CUBLAS_TF32_TENSOR_OP_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  h->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                             cublasOperation_t tb, int m, int n, int k,
                                             const float *alpha, const float *A, int lda,
                                             long long sa, const float *B, int ldb, long long sb,
                                             const float *beta, float *C, int ldc, long long sc,
                                             int batch) {
  if (!ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  int ra = ta == CUBLAS_OP_N ? m : k, rb = tb == CUBLAS_OP_N ? k : n;
  if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (ra > 1 ? ra : 1) || ldb < (rb > 1 ? rb : 1) ||
      ldc < (m > 1 ? m : 1) || !alpha || !beta || (ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) ||
      (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;
  g_gemms++;
  g_last_math = (int)h->math;
  g_last_stream = h->stream;
  fake_sgemm g = {ta,     tb,    m, n, k, lda, ldb, ldc, ldc, batch,
                  *alpha, *beta, A, B, C, C,   sa,  sb,  sc,  sc};
  fake_sgemm_on_stream(h->stream, &g);
  return CUBLAS_STATUS_SUCCESS;
}
