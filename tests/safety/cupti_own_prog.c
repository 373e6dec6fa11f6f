/* A program that uses CUPTI's activity API itself, without cuptiSubscribe
 * (linked against libcupti.so.13, as PyTorch's Kineto is): it registers its
 * own buffer callbacks and enables kernel records, before its first cuBLAS
 * call ("first") or after five GEMMs ("after"), runs GEMMs, flushes at exit
 * and prints the records its callback saw: "kernels K records R". With
 * mpprof preloaded it must print what it prints without. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef CUPTI_BY_DLSYM
#include <dlfcn.h>
#endif

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cupti.h>

static int kernels, records;

/* The CUPTI functions the program calls: linked, or found on libcupti's handle. */
#define CUPTI_CALLS(X)                                                                             \
  X(cuptiActivityRegisterCallbacks)                                                                \
  X(cuptiActivityEnable)                                                                           \
  X(cuptiActivityGetNextRecord)                                                                    \
  X(cuptiActivityFlushAll)
#ifdef CUPTI_BY_DLSYM
static void *cupti_handle;
#define CUPTI_POINTER(name) static __typeof__(&name) p_##name;
CUPTI_CALLS(CUPTI_POINTER)
#define CUPTI_LOOKUP(name) *(void **)&p_##name = dlsym(cupti_handle, #name);
static void load_cupti(void) {
  cupti_handle = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!cupti_handle) {
    fprintf(stderr, "cupti_dlsym_prog: %s\n", dlerror());
    exit(2);
  }
  CUPTI_CALLS(CUPTI_LOOKUP)
}
#else
#define CUPTI_POINTER(name) static __typeof__(&name) p_##name = name;
CUPTI_CALLS(CUPTI_POINTER)
static void load_cupti(void) {}
#endif

static void CUPTIAPI requested(uint8_t **buf, size_t *size, size_t *max_records) {
  *buf = malloc(1 << 16);
  *size = *buf ? 1 << 16 : 0;
  *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                               size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  CUpti_Activity *r = NULL;
  while (p_cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    records++;
    kernels += r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  }
  free(buf);
}

static void take_cupti(void) {
  load_cupti();
  if (p_cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS ||
      p_cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS) {
    fprintf(stderr, "cupti_own_prog: CUPTI refused\n");
    exit(2);
  }
}

static void gemms(cublasHandle_t h, float *m, int n, int count) {
  const float one = 1, zero = 0;
  for (int i = 0; i < count; i++)
    if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, m, n, m + n * n, n, &zero,
                    m + 2 * n * n, n) != CUBLAS_STATUS_SUCCESS)
      exit(3);
}

int main(int argc, char **argv) {
  bool first = argc > 1 && !strcmp(argv[1], "first");
  if (first) take_cupti();
  cublasHandle_t h;
  float *m;
  const int n = 16;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cudaMalloc((void **)&m, 3 * n * n * 4) != 0 ||
      cudaMemset(m, 0, 3 * n * n * 4) != 0)
    return 3;
  gemms(h, m, n, 5);
  if (!first) take_cupti();
  gemms(h, m, n, 20);
  p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  printf("kernels %d records %d\n", kernels, records);
  /* Freed: the sanitized suite runs this program under LeakSanitizer. */
  cudaFree(m);
  cublasDestroy(h);
  /* libcupti is not unloaded (nor is it in TensorFlow): what CUPTI still
   * holds would become unreachable, a leak to LeakSanitizer. */
  return 0;
}
