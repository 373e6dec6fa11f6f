/* The first GEMM of the process runs on a thread that never used CUDA
 * before: the main thread allocates, creates the cuBLAS handle and a stream
 * and sets it on the handle; the worker's first CUDA call is cublasSgemm
 * (three of them, one call site). At that call's entry the worker has no
 * current context (cuda.h, cuCtxGetCurrent); cuBLAS makes one current inside
 * the call. Prints "worker ok" and exits 0 when every call succeeded. */
#include <pthread.h>
#include <stdio.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

enum { N = 16 };

static cublasHandle_t handle;
static float *a, *b, *c;

static void *worker(void *arg) {
  (void)arg;
  const float one = 1, zero = 0;
  for (int i = 0; i < 3; i++)
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, N, b, N, &zero, c, N) !=
        CUBLAS_STATUS_SUCCESS)
      return (void *)1;
  return NULL;
}

int main(void) {
  const size_t bytes = sizeof(float) * N * N;
  cudaStream_t s;
  if (cudaMalloc((void **)&a, bytes) || cudaMalloc((void **)&b, bytes) ||
      cudaMalloc((void **)&c, bytes) || cudaMemset(a, 0, bytes) || cudaMemset(b, 0, bytes) ||
      cudaStreamCreate(&s) || cublasCreate(&handle) || cublasSetStream(handle, s)) {
    fprintf(stderr, "set-up failed\n");
    return 1;
  }
  pthread_t t;
  void *failed = NULL;
  if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, &failed)) return 1;
  if (cudaStreamSynchronize(s) || cublasDestroy(handle) || cudaStreamDestroy(s)) return 1;
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  printf("worker %s\n", failed ? "failed" : "ok");
  return failed != NULL;
}
