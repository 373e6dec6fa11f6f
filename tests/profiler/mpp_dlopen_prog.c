/* mpp_dlopen_prog [deep]: loads libcublas.so.13 with dlopen (RTLD_LOCAL, and
 * RTLD_DEEPBIND with "deep") and calls cublasCreate_v2 / cublasSgemm_v2 (twice)
 * / cublasDestroy_v2 through pointers from dlsym on that handle, the way
 * TensorFlow and XLA load cuBLAS. Not linked against cuBLAS; memory comes from
 * the CUDA runtime it is linked against. Prints a checksum of the results. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_api.h>
#include <cuda_runtime.h>

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   int, const float *, const float *, int, const float *, int,
                                   const float *, float *, int);

int main(int argc, char **argv) {
  int flags = RTLD_NOW | RTLD_LOCAL;
  if (argc > 1 && !strcmp(argv[1], "deep")) flags |= RTLD_DEEPBIND;
  void *h = dlopen("libcublas.so.13", flags);
  if (!h) {
    fprintf(stderr, "mpp_dlopen_prog: %s\n", dlerror());
    return 70;
  }
  create_fn create = (create_fn)dlsym(h, "cublasCreate_v2");
  destroy_fn destroy = (destroy_fn)dlsym(h, "cublasDestroy_v2");
  sgemm_fn sgemm = (sgemm_fn)dlsym(h, "cublasSgemm_v2");
  if (!create || !destroy || !sgemm) {
    fprintf(stderr, "mpp_dlopen_prog: missing symbol\n");
    return 70;
  }
  enum { N = 8 };
  float a[N * N], c[N * N];
  for (int i = 0; i < N * N; i++)
    a[i] = (float)(i % 7 - 3);
  float *da, *dc;
  if (cudaMalloc((void **)&da, sizeof a) || cudaMalloc((void **)&dc, sizeof c) ||
      cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice))
    return 70;
  cublasHandle_t hd;
  const float one = 1, zero = 0;
  if (create(&hd)) return 70;
  for (int i = 0; i < 2; i++)
    if (sgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, da, N, da, N, &zero, dc, N)) return 70;
  if (cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost)) return 70;
  double s = 0;
  for (int i = 0; i < N * N; i++)
    s += c[i] * (i + 1);
  printf("dlopen checksum %.17g\n", s);
  destroy(hd);
  cudaFree(da);
  cudaFree(dc);
  return 0;
}
