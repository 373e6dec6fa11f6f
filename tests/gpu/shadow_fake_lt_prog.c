/* shadow_fake_prog.c's program written against cuBLASLt alone, as FP8 code
 * (Transformer Engine, torch._scaled_mm) is: the same three fp32 GEMMs on
 * device memory of the fake libcuda.so.1, as cublasLtMatmul calls of the
 * fake libcublasLt.so.13 (tests/gpu/fakecuda), then D's values printed.
 * libcublas.so.13 is never loaded: the program exits with 4 if it finds it
 * loaded at the end. On stderr, what the fake cuBLASLt ran (all matmuls, those
 * at COMPUTE_32F_PEDANTIC, those on the program's stream) and how many of its
 * descriptors and layouts are left, after the program destroyed its own.
 * tests/gpu/shadow_fake_lt_preload.py runs it with and without libmpprof.so
 * --shadow=1. */
#include <dlfcn.h>
#include <stdio.h>

#include <cublasLt.h>
#include <cuda.h>

static int fake_int(const char *name) {
  void *h = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
  int (*f)(void) = (int (*)(void))(h ? dlsym(h, name) : NULL);
  return f ? f() : -1;
}

int main(void) {
  CUresult (*init)(unsigned) = NULL;
  CUresult (*alloc)(CUdeviceptr *, size_t) = NULL;
  CUresult (*stream_create)(CUstream *, unsigned) = NULL;
  if (cuGetProcAddress_v2("cuInit", (void **)&init, 2000, 0, NULL) != CUDA_SUCCESS ||
      cuGetProcAddress_v2("cuMemAlloc", (void **)&alloc, 3020, 0, NULL) != CUDA_SUCCESS ||
      cuGetProcAddress_v2("cuStreamCreate", (void **)&stream_create, 2000, 0, NULL) !=
          CUDA_SUCCESS ||
      init(0) != CUDA_SUCCESS)
    return 2;
  enum { M = 33, N = 17, K = 40 };
  CUdeviceptr a, b, c;
  CUstream s;
  if (alloc(&a, M * K * 4) || alloc(&b, K * N * 4) || alloc(&c, M * N * 4) || stream_create(&s, 0))
    return 2;
  float *fa = (float *)(uintptr_t)a, *fb = (float *)(uintptr_t)b, *fc = (float *)(uintptr_t)c;
  for (int i = 0; i < M * K; i++)
    fa[i] = (float)(i * 37 % 101) * 0.37f - 17.0f;
  for (int i = 0; i < K * N; i++)
    fb[i] = (float)(i * 53 % 97) * 0.011f - 0.5f;
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, M, K, M) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, K, N, K) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, M, N, M) != CUBLAS_STATUS_SUCCESS)
    return 3;
  const float one = 1, zero = 0;
  for (int it = 0; it < 3; it++)
    if (cublasLtMatmul(h, desc, &one, fa, la, fb, lb, &zero, fc, lc, fc, lc, NULL, NULL, 0,
                       (cudaStream_t)s) != CUBLAS_STATUS_SUCCESS)
      return 3;
  for (int i = 0; i < M * N; i++)
    printf("%a\n", fc[i]);
  if (cublasLtMatrixLayoutDestroy(la) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutDestroy(lb) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatrixLayoutDestroy(lc) != CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulDescDestroy(desc) != CUBLAS_STATUS_SUCCESS)
    return 3;
  int (*on)(void *) = NULL;
  void *lt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
  *(void **)&on = lt ? dlsym(lt, "fakecublaslt_matmuls_on") : NULL;
  fprintf(stderr, "fake cuBLASLt: matmuls %d pedantic %d on_program_stream %d live %d\n",
          fake_int("fakecublaslt_matmuls"), fake_int("fakecublaslt_pedantic_matmuls"),
          on ? on(s) : -1, fake_int("fakecublaslt_live"));
  return dlopen("libcublas.so.13", RTLD_NOW | RTLD_NOLOAD) ? 4 : 0;
}
