/* mpp_capture_prog: eight training steps (0..7) for the capture-range tests
 * (capture_e2e). Each step is marked (NVTX domain "mpprof", "step" = k) and
 * runs two cublasSgemm_v2 calls in NVTX ranges step/s<k>/a and step/s<k>/b,
 * so a report's layers say which steps were recorded (MPP_NO_STEP_MARKS set:
 * no step mark at all; MPP_STEP_STRIDE=2: step k is marked 2k, so odd steps
 * never run). The markers:
 *   cudaProfilerStart before step 2, cudaProfilerStop after step 3 (runtime API)
 *   cuProfilerStart before step 5, cuProfilerStop after step 5 (driver API)
 *   step 6 also inside the NVTX range "capture_me" (around its "step" range)
 *   step 7 while another thread is inside its own "capture_me" range
 * Prints a checksum of the results. Linked against the CUDA libraries by
 * soname; run with LD_LIBRARY_PATH=<simcuda>. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#define N 16
#define STEPS 8

static void check(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "mpp_capture_prog: %s failed\n", what);
    exit(1);
  }
}

static void mark_step(nvtxDomainHandle_t d, uint64_t step) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "step";
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = step;
  nvtxDomainMarkEx(d, &a);
}

static double gemm(cublasHandle_t h, const float *a, const float *b, float *c) {
  const float one = 1, zero = 0;
  check(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, N, b, N, &zero, c, N) ==
            CUBLAS_STATUS_SUCCESS,
        "cublasSgemm_v2");
  float out[N * N];
  check(cudaMemcpy(out, c, sizeof out, cudaMemcpyDeviceToHost) == cudaSuccess, "cudaMemcpy");
  double s = 0;
  for (int i = 0; i < N * N; i++)
    s += out[i] * (double)(i % 7 + 1);
  return s;
}

/* A thread inside "capture_me" from before step 7 begins to after it ends. */
static pthread_barrier_t opened, done;

static void *other_thread(void *arg) {
  (void)arg;
  nvtxRangePushA("capture_me");
  pthread_barrier_wait(&opened);
  pthread_barrier_wait(&done);
  nvtxRangePop();
  return NULL;
}

int main(void) {
  check(cuInit(0) == CUDA_SUCCESS, "cuInit");
  float host[N * N];
  for (int i = 0; i < N * N; i++)
    host[i] = (float)((i * 5 + 3) % 11 - 5) / 8;
  float *a, *b, *c;
  check(cudaMalloc((void **)&a, sizeof host) == cudaSuccess, "cudaMalloc");
  check(cudaMalloc((void **)&b, sizeof host) == cudaSuccess, "cudaMalloc");
  check(cudaMalloc((void **)&c, sizeof host) == cudaSuccess, "cudaMalloc");
  check(cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess, "cudaMemcpy");
  check(cudaMemcpy(b, host, sizeof host, cudaMemcpyHostToDevice) == cudaSuccess, "cudaMemcpy");
  cublasHandle_t h;
  check(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  nvtxDomainHandle_t mpprof = nvtxDomainCreateA("mpprof");
  double sum = 0;
  const char *stride = getenv("MPP_STEP_STRIDE");
  uint64_t mark_stride = stride ? strtoull(stride, NULL, 10) : 1;
  for (uint64_t step = 0; step < STEPS; step++) {
    if (step == 2) check(cudaProfilerStart() == cudaSuccess, "cudaProfilerStart");
    if (step == 5) check(cuProfilerStart() == CUDA_SUCCESS, "cuProfilerStart");
    pthread_t other;
    if (step == 6) nvtxRangePushA("capture_me");
    if (step == 7) {
      pthread_barrier_init(&opened, NULL, 2);
      pthread_barrier_init(&done, NULL, 2);
      check(pthread_create(&other, NULL, other_thread, NULL) == 0, "pthread_create");
      pthread_barrier_wait(&opened);
    }
    if (!getenv("MPP_NO_STEP_MARKS"))
      mark_step(mpprof, step * mark_stride); /* set: a program marking none */
    char name[16];
    snprintf(name, sizeof name, "s%llu", (unsigned long long)step);
    nvtxRangePushA("step");
    nvtxRangePushA(name);
    nvtxRangePushA("a");
    sum += gemm(h, a, b, c);
    nvtxRangePop();
    nvtxRangePushA("b");
    sum += gemm(h, c, b, c);
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangePop();
    if (step == 6) nvtxRangePop();
    if (step == 7) {
      pthread_barrier_wait(&done);
      pthread_join(other, NULL);
    }
    if (step == 3) check(cudaProfilerStop() == cudaSuccess, "cudaProfilerStop");
    if (step == 5) check(cuProfilerStop() == CUDA_SUCCESS, "cuProfilerStop");
  }
  printf("capture checksum %.17g\n", sum);
  cublasDestroy(h);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return 0;
}
