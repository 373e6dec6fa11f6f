// An ordinary nvcc program (built with -cudart shared): a kernel, a __device__
// variable, and cuBLAS calls. On simcuda it must load (module registration),
// get its GEMM right, and see its kernel launch fail with a CUDA error.
// Exit 0 when all of that holds; prints what it found.
#include <cstdio>
#include <cstring>

#include <cublas_v2.h>
#include <cuda_runtime.h>

__device__ float dev_scale;

__global__ void scale(float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a * dev_scale;
}

int main() {
  const int n = 4;
  float a[n * n], c[n * n];
  for (int i = 0; i < n * n; i++)
    a[i] = (float)(i % 5 - 2);
  float *da, *dc;
  if (cudaMalloc(&da, sizeof a) || cudaMalloc(&dc, sizeof c)) return 2;
  cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice);
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 3;
  const float one = 1, zero = 0;
  if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, da, n, &zero, dc, n)) return 4;
  cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost);
  int wrong = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      float want = 0;
      for (int l = 0; l < n; l++)
        want += a[i + l * n] * a[l + j * n];
      wrong += c[i + j * n] != want;
    }
  cublasDestroy(h);
  scale<<<1, n * n>>>(da, 2.0f, n * n);
  cudaError_t e = cudaGetLastError();
  printf("gemm %s, kernel launch: %s\n", wrong ? "WRONG" : "ok", cudaGetErrorName(e));
  return wrong || e != cudaErrorNoKernelImageForDevice ? 1 : 0;
}
