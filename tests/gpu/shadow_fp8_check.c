/* scripts/gpu-check.sh's FP8 shadow row: a cuBLASLt FP8 matmul as
 * Transformer Engine and torch._scaled_mm issue it (e4m3 A transposed, e4m3
 * B, per-tensor A/B/D scale pointers in device memory, an e4m3 D at its
 * scale, a bf16 C layout), run under mpprof --shadow. The program computes
 * the error the op itself made, from D copied back, against an exact host
 * reference (double sums of the scaled values), and prints it; the checker
 * (shadow_fp8_raw_check.py) compares it with the `current` error mpprof's
 * device shadow measured. After each call the program overwrites its scales
 * with other values (as delayed scaling does every step) on its stream: the
 * shadow must measure with the scales the op used.
 *
 *   shadow_fp8_check [N] [SIZE]   (defaults 4, 256; SIZE a multiple of 16)
 *
 * Built by gpu-check.sh with gcc against the toolkit's cuBLASLt and runtime;
 * it also runs on simcuda (the host path). Exit 77: no CUDA device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    if ((x) != 0) {                                                                                \
      fprintf(stderr, "shadow_fp8_check: %s failed\n", #x);                                        \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

/* Value of an e4m3 byte (no infinities; 0x7f/0xff NaN). */
static double e4m3(uint8_t b) {
  int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return NAN;
  double v = e ? ldexp(1.0 + m / 8.0, e - 7) : ldexp(m / 8.0, -6);
  return s ? -v : v;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 4;
  int n = argc > 2 ? atoi(argv[2]) : 256;
  if (iters < 1 || n < 16 || n % 16) {
    fprintf(stderr, "shadow_fp8_check: bad arguments\n");
    return 1;
  }
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0) {
    printf("shadow_fp8_check: no CUDA device\n");
    return 77;
  }
  size_t elems = (size_t)n * n;
  uint8_t *ha = malloc(elems), *hb = malloc(elems), *hd = malloc(elems);
  if (!ha || !hb || !hd) return 1;
  srand(11);
  for (size_t i = 0; i < elems; i++) { /* finite e4m3 codes, exponents 3..11: values 2^-4..2^4 */
    int e = 3 + rand() % 9, m = rand() % 8, s = rand() % 2;
    ha[i] = (uint8_t)(s << 7 | e << 3 | m);
    e = 3 + rand() % 9, m = rand() % 8, s = rand() % 2;
    hb[i] = (uint8_t)(s << 7 | e << 3 | m);
  }
  /* the op's scales: not powers of two; D's such that some outputs saturate at 448 */
  const float scales[3] = {0.013f, 3.7f, 2.0f}, next[3] = {1000.0f, 1000.0f, 1000.0f};
  uint8_t *A, *B, *D;
  float *sc;
  CHECK(cudaMalloc((void **)&A, elems));
  CHECK(cudaMalloc((void **)&B, elems));
  CHECK(cudaMalloc((void **)&D, elems));
  CHECK(cudaMalloc((void **)&sc, sizeof scales));
  CHECK(cudaMemcpy(A, ha, elems, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(B, hb, elems, cudaMemcpyHostToDevice));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  cublasLtHandle_t lt;
  CHECK(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc;
  CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasOperation_t t = CUBLAS_OP_T, nn = CUBLAS_OP_N;
  const float *psa = sc, *psb = sc + 1, *psd = sc + 2;
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  CHECK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nn, sizeof nn));
  CHECK(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &psa, sizeof psa));
  CHECK(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &psb, sizeof psb));
  CHECK(
      cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &psd, sizeof psd));
  cublasLtMatrixLayout_t l8, l16;
  CHECK(cublasLtMatrixLayoutCreate(&l8, CUDA_R_8F_E4M3, n, n, n));
  CHECK(cublasLtMatrixLayoutCreate(&l16, CUDA_R_16BF, n, n, n));
  const float alpha = 1, beta = 0;
  for (int i = 0; i < iters; i++) {
    CHECK(cudaMemcpyAsync(sc, scales, sizeof scales, cudaMemcpyHostToDevice, s));
    CHECK(
        cublasLtMatmul(lt, desc, &alpha, A, l8, B, l8, &beta, NULL, l16, D, l8, NULL, NULL, 0, s));
    /* the next step's scales, on the program's stream right behind the op */
    CHECK(cudaMemcpyAsync(sc, next, sizeof next, cudaMemcpyHostToDevice, s));
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(hd, D, elems, cudaMemcpyDeviceToHost));
  /* D(i, j) = sum_k A(k, i) B(k, j) (A stored k x n, transposed) */
  double se = 0, sr = 0;
  int saturated = 0;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      double r = 0;
      for (int k = 0; k < n; k++)
        r += (e4m3(ha[(size_t)i * n + k]) * scales[0]) * (e4m3(hb[(size_t)j * n + k]) * scales[1]);
      r *= alpha;
      uint8_t b = hd[(size_t)i + (size_t)j * n];
      double d = (double)(float)(e4m3(b) / scales[2]);
      saturated += (b & 0x7f) == 0x7e;
      se += (d - r) * (d - r);
      sr += r * r;
    }
  printf("shadow_fp8_check: %d x %d^3 e4m3 at scales %g %g %g: current rel_l2 %.6e, %d of %zu "
         "outputs saturated\n",
         iters, n, scales[0], scales[1], scales[2], sqrt(se / sr), saturated, elems);
  cublasLtMatrixLayoutDestroy(l8);
  cublasLtMatrixLayoutDestroy(l16);
  cublasLtMatmulDescDestroy(desc);
  cublasLtDestroy(lt);
  cudaFree(A), cudaFree(B), cudaFree(D), cudaFree(sc);
  free(ha), free(hb), free(hd);
  return 0;
}
