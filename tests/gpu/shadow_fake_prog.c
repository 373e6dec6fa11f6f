/* A program whose GEMMs run on device memory of the fake libcuda.so.1, with
 * the fake libcublas.so.13 (tests/gpu/fakecuda): three cublasSgemmStridedBatched
 * calls, then D's values printed. tests/gpu/shadow_fake_preload.py runs it
 * with and without libmpprof.so --shadow=1. */
#include <stdio.h>

#include <cublas_api.h>
#include <cuda.h>

int main(void) {
  CUresult (*init)(unsigned) = NULL;
  CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
  if (cuGetProcAddress_v2("cuInit", (void **)&init, 2000, 0, NULL) != CUDA_SUCCESS ||
      cuGetProcAddress_v2("cuMemAlloc", (void **)&alloc, 3020, 0, NULL) != CUDA_SUCCESS ||
      init(0) != CUDA_SUCCESS)
    return 2;
  enum { M = 33, N = 17, K = 40 };
  CUdeviceptr a, b, c;
  if (alloc(&a, M * K * 4) || alloc(&b, K * N * 4) || alloc(&c, M * N * 4)) return 2;
  float *fa = (float *)(uintptr_t)a, *fb = (float *)(uintptr_t)b, *fc = (float *)(uintptr_t)c;
  for (int i = 0; i < M * K; i++)
    fa[i] = (float)(i * 37 % 101) * 0.37f - 17.0f;
  for (int i = 0; i < K * N; i++)
    fb[i] = (float)(i * 53 % 97) * 0.011f - 0.5f;
  cublasHandle_t h;
  if (cublasCreate_v2(&h) != CUBLAS_STATUS_SUCCESS) return 3;
  const float one = 1, zero = 0;
  for (int it = 0; it < 3; it++)
    if (cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &one, fa, M, 0, fb, K, 0,
                                  &zero, fc, M, 0, 1) != CUBLAS_STATUS_SUCCESS)
      return 3;
  for (int i = 0; i < M * N; i++)
    printf("%a\n", fc[i]);
  return 0;
}
