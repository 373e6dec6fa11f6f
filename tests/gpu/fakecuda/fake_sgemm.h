/* The one fp32 GEMM of the fake libcublas.so.13 and libcublasLt.so.13 beside
 * the fake libcuda.so.1: D = alpha op(A) op(B) + beta C per batch matrix,
 * column-major, each output accumulated in k order with fmaf in fp32 (what
 * analysis/shadow.h defines a candidate's product as); beta 0 does not read
 * C, as in cuBLAS. "Device" memory is host memory. */
#ifndef MPPROF_TESTS_GPU_FAKECUDA_FAKE_SGEMM_H
#define MPPROF_TESTS_GPU_FAKECUDA_FAKE_SGEMM_H

#include <cublas_api.h>

typedef struct fake_sgemm {
  cublasOperation_t ta, tb;
  int m, n, k, lda, ldb, ldc, ldd, batch;
  float alpha, beta;
  const float *A, *B, *C;
  float *D;
  long long sa, sb, sc, sd;
} fake_sgemm;

/* g now, or on the stream's turn when the fake driver holds the stream back
 * (fakecuda_lag; queued through fakecuda_defer). */
void fake_sgemm_on_stream(cudaStream_t s, const fake_sgemm *g);

#endif
