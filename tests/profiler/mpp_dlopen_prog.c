/* mpp_dlopen_prog [deep|reload]: loads libcublas.so.13 with dlopen (RTLD_LOCAL, and
 * RTLD_DEEPBIND with "deep") and calls cublasCreate_v2 / cublasSgemm_v2 (twice)
 * / cublasDestroy_v2 through pointers from dlsym on that handle, the way
 * TensorFlow and XLA load cuBLAS. Not linked against cuBLAS; memory comes from
 * the CUDA runtime it is linked against. Prints a checksum of the results.
 *
 * "reload": loads libcublas.so.13, calls cublasSgemm_v2 once, unloads it, and
 * again after taking the address range it had (the second copy loads
 * elsewhere); then the same with libcudnn.so.9 and its backend descriptor
 * calls. Exits 71 when a library is still mapped after its dlclose. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cublas_api.h>
#include <cuda_runtime.h>
#include <cudnn.h>

typedef cublasStatus_t (*create_fn)(cublasHandle_t *);
typedef cublasStatus_t (*destroy_fn)(cublasHandle_t);
typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   int, const float *, const float *, int, const float *, int,
                                   const float *, float *, int);

static bool mapped(const char *what) {
  FILE *f = fopen("/proc/self/maps", "r");
  char line[4096];
  bool found = false;
  while (f && fgets(line, sizeof line, f))
    if (strstr(line, what)) found = true;
  if (f) fclose(f);
  return found;
}

/* Takes the holes the unloaded library left: its next load lands elsewhere. */
static void fill_address_space(void) {
  for (int i = 0; i < 4096; i++)
    mmap(NULL, 64 << 10, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static int cublas_round(float *da, float *dc) {
  void *h = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 70;
  create_fn create = (create_fn)dlsym(h, "cublasCreate_v2");
  destroy_fn destroy = (destroy_fn)dlsym(h, "cublasDestroy_v2");
  sgemm_fn sgemm = (sgemm_fn)dlsym(h, "cublasSgemm_v2");
  cublasHandle_t hd;
  const float one = 1, zero = 0;
  if (!create || !destroy || !sgemm || create(&hd)) return 70;
  if (sgemm(hd, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, da, 8, da, 8, &zero, dc, 8)) return 70;
  destroy(hd);
  dlclose(h);
  return mapped("/libcublas.so") ? 71 : 0;
}

typedef cudnnStatus_t (*be_create_fn)(cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *);
typedef cudnnStatus_t (*be_destroy_fn)(cudnnBackendDescriptor_t);

static int cudnn_round(void) {
  void *h = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 70;
  be_create_fn create = (be_create_fn)dlsym(h, "cudnnBackendCreateDescriptor");
  be_destroy_fn destroy = (be_destroy_fn)dlsym(h, "cudnnBackendDestroyDescriptor");
  cudnnBackendDescriptor_t d;
  if (!create || !destroy || create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &d) || destroy(d)) return 70;
  dlclose(h);
  return mapped("/libcudnn.so") ? 71 : 0;
}

static int reload(void) {
  enum { N = 8 };
  float a[N * N], c[N * N];
  for (int i = 0; i < N * N; i++)
    a[i] = (float)(i % 5 - 2);
  float *da, *dc;
  if (cudaMalloc((void **)&da, sizeof a) || cudaMalloc((void **)&dc, sizeof c) ||
      cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice))
    return 70;
  for (int pass = 0; pass < 2; pass++) {
    int rc = cublas_round(da, dc);
    if (!rc) rc = cudnn_round();
    if (rc) return rc;
    if (cudaMemcpy(c, dc, sizeof c, cudaMemcpyDeviceToHost)) return 70;
    double s = 0;
    for (int i = 0; i < N * N; i++)
      s += c[i] * (i + 1);
    printf("reload %d checksum %.17g\n", pass, s);
    fill_address_space();
  }
  cudaFree(da);
  cudaFree(dc);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "reload")) return reload();
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
