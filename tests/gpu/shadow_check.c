/* scripts/gpu-check.sh's shadow-execution row on a real GPU: a loop of
 * 4096^3 fp16 GEMMs (cublasGemmEx, fp32 compute) run under mpprof with and
 * without --shadow. It prints the op's own device time (events around each
 * GEMM on the program's stream), the loop's wall time until the device is
 * idle (shadow work included), and the device memory in use after the loop
 * (cudaMemGetInfo against before: pools keep what they grew to). Built by
 * gpu-check.sh with gcc against the toolkit's cuBLAS and runtime.
 *
 *   shadow_check [N] [SIZE]   (defaults 8, 4096) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    if ((x) != 0) {                                                                                \
      fprintf(stderr, "shadow_check: %s failed\n", #x);                                            \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* fp16 bits of a float (round to nearest even; values here are small normals). */
static uint16_t to_half(float f) {
  union {
    float f;
    uint32_t u;
  } v = {f};
  uint32_t sign = (v.u >> 16) & 0x8000u, e = (v.u >> 23) & 0xff, m = v.u & 0x7fffffu;
  int he = (int)e - 127 + 15;
  if (he <= 0) return (uint16_t)sign;
  uint32_t hm = m >> 13, rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (hm & 1))) hm++;
  if (hm == 0x400u) hm = 0, he++;
  return (uint16_t)(sign | (uint32_t)he << 10 | hm);
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 8;
  int n = argc > 2 ? atoi(argv[2]) : 4096;
  int dev_count = 0;
  if (cudaGetDeviceCount(&dev_count) != cudaSuccess || dev_count == 0) {
    printf("shadow_check: no CUDA device\n");
    return 77;
  }
  size_t elems = (size_t)n * n;
  uint16_t *h = malloc(elems * 2);
  if (!h) return 1;
  srand(7);
  for (size_t i = 0; i < elems; i++) /* spread over a few binades, like activations */
    h[i] = to_half(ldexpf((float)rand() / RAND_MAX - 0.5f, rand() % 9 - 4));
  size_t free0 = 0, total = 0;
  CHECK(cudaMemGetInfo(&free0, &total));
  void *A, *B, *C;
  CHECK(cudaMalloc(&A, elems * 2));
  CHECK(cudaMalloc(&B, elems * 2));
  CHECK(cudaMalloc(&C, elems * 2));
  CHECK(cudaMemcpy(A, h, elems * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(B, h, elems * 2, cudaMemcpyHostToDevice));
  cublasHandle_t hd;
  CHECK(cublasCreate(&hd));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cublasSetStream(hd, s));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  const float one = 1, zero = 0;
  /* one warm-up call outside the timing (cuBLAS heuristics, mpprof's first-use set-up) */
  CHECK(cublasGemmEx(hd, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, CUDA_R_16F, n, B, CUDA_R_16F,
                     n, &zero, C, CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CHECK(cudaDeviceSynchronize());
  double op_ms = 0, t0 = now_s();
  for (int i = 0; i < iters; i++) {
    CHECK(cudaEventRecord(e0, s));
    CHECK(cublasGemmEx(hd, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, A, CUDA_R_16F, n, B, CUDA_R_16F,
                       n, &zero, C, CUDA_R_16F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CHECK(cudaEventRecord(e1, s));
    CHECK(cudaStreamSynchronize(s)); /* what the program waits for: its own stream */
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, e0, e1));
    op_ms += ms;
  }
  double stream_s = now_s() - t0;
  CHECK(cudaDeviceSynchronize()); /* and everything else (mpprof's shadow work) */
  double wall_s = now_s() - t0;
  size_t free1 = 0;
  CHECK(cudaMemGetInfo(&free1, &total));
  printf("shadow_check: %d x %d^3 fp16 GEMM: op %.3f ms (device, mean), program's stream %.3f ms "
         "per call, device idle after %.3f ms per call, device memory in use %.1f MiB\n",
         iters, n, op_ms / iters, 1e3 * stream_s / iters, 1e3 * wall_s / iters,
         (double)(free0 - free1) / 1048576.0);
  cublasDestroy(hd);
  cudaFree(A), cudaFree(B), cudaFree(C);
  free(h);
  return 0;
}
