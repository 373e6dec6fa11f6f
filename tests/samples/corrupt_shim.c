/* LD_PRELOAD shim for the samples' verification tests: forwards to the real
 * (simcuda) function, then corrupts its result when SAMPLES_CORRUPT names the
 * function, so a test can show that a sample's first-step check catches a
 * wrong GEMM or convolution. Only valid on simcuda, whose "device" memory is
 * host memory. Outputs are fp32 in the cases the tests use.
 *
 * A per-thread depth counter keeps calls made inside another hooked call
 * (simcuda's cuBLAS GEMMs run through cublasLtMatmul) from being corrupted
 * under the outer function's name. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#define EXPORT __attribute__((visibility("default")))

static __thread int depth;

static int wanted(const char *name) {
  const char *w = getenv("SAMPLES_CORRUPT");
  return depth == 0 && w && !strcmp(w, name);
}

static void *real(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) abort();
  return f;
}

/* Off by far more than any tolerance, whatever the value's magnitude. */
static void corrupt(void *p) {
  float *f = p;
  f[0] = f[0] * 1.0625f + 1.0f;
}

EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void *alpha, const void *A,
                                   cudaDataType at, int lda, const void *B, cudaDataType bt,
                                   int ldb, const void *beta, void *C, cudaDataType ct, int ldc,
                                   cublasComputeType_t comp, cublasGemmAlgo_t algo) {
  typeof(cublasGemmEx) *f = real("cublasGemmEx");
  int hit = wanted("cublasGemmEx");
  depth++;
  cublasStatus_t st =
      f(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, comp, algo);
  depth--;
  if (hit) corrupt(C);
  return st;
}

EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void *alpha, const void *A, cudaDataType at, int lda, long long sa, const void *B,
    cudaDataType bt, int ldb, long long sb, const void *beta, void *C, cudaDataType ct, int ldc,
    long long sc, int batch, cublasComputeType_t comp, cublasGemmAlgo_t algo) {
  typeof(cublasGemmStridedBatchedEx) *f = real("cublasGemmStridedBatchedEx");
  int hit = wanted("cublasGemmStridedBatchedEx");
  depth++;
  cublasStatus_t st = f(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc,
                        sc, batch, comp, algo);
  depth--;
  if (hit) corrupt((float *)C + sc * (batch - 1)); /* the last batch entry */
  return st;
}

EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                     const void *alpha, const void *A, cublasLtMatrixLayout_t la,
                                     const void *B, cublasLtMatrixLayout_t lb, const void *beta,
                                     const void *C, cublasLtMatrixLayout_t lc, void *D,
                                     cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo,
                                     void *ws, size_t ws_size, cudaStream_t stream) {
  typeof(cublasLtMatmul) *f = real("cublasLtMatmul");
  int hit = wanted("cublasLtMatmul");
  depth++;
  cublasStatus_t st =
      f(h, desc, alpha, A, la, B, lb, beta, C, lc, D, ld, algo, ws, ws_size, stream);
  depth--;
  if (hit) corrupt(D);
  return st;
}

EXPORT cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha,
                                             const cudnnTensorDescriptor_t xd, const void *x,
                                             const cudnnFilterDescriptor_t wd, const void *w,
                                             const cudnnConvolutionDescriptor_t cd,
                                             cudnnConvolutionFwdAlgo_t algo, void *ws,
                                             size_t ws_size, const void *beta,
                                             const cudnnTensorDescriptor_t yd, void *y) {
  typeof(cudnnConvolutionForward) *f = real("cudnnConvolutionForward");
  int hit = wanted("cudnnConvolutionForward");
  depth++;
  cudnnStatus_t st = f(h, alpha, xd, x, wd, w, cd, algo, ws, ws_size, beta, yd, y);
  depth--;
  if (hit) corrupt(y);
  return st;
}

EXPORT cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha,
                                                  const cudnnFilterDescriptor_t wd, const void *w,
                                                  const cudnnTensorDescriptor_t dyd, const void *dy,
                                                  const cudnnConvolutionDescriptor_t cd,
                                                  cudnnConvolutionBwdDataAlgo_t algo, void *ws,
                                                  size_t ws_size, const void *beta,
                                                  const cudnnTensorDescriptor_t dxd, void *dx) {
  typeof(cudnnConvolutionBackwardData) *f = real("cudnnConvolutionBackwardData");
  int hit = wanted("cudnnConvolutionBackwardData");
  depth++;
  cudnnStatus_t st = f(h, alpha, wd, w, dyd, dy, cd, algo, ws, ws_size, beta, dxd, dx);
  depth--;
  if (hit) corrupt(dx);
  return st;
}

EXPORT cudnnStatus_t cudnnConvolutionBackwardFilter(
    cudnnHandle_t h, const void *alpha, const cudnnTensorDescriptor_t xd, const void *x,
    const cudnnTensorDescriptor_t dyd, const void *dy, const cudnnConvolutionDescriptor_t cd,
    cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t ws_size, const void *beta,
    const cudnnFilterDescriptor_t dwd, void *dw) {
  typeof(cudnnConvolutionBackwardFilter) *f = real("cudnnConvolutionBackwardFilter");
  int hit = wanted("cudnnConvolutionBackwardFilter");
  depth++;
  cudnnStatus_t st = f(h, alpha, xd, x, dyd, dy, cd, algo, ws, ws_size, beta, dwd, dw);
  depth--;
  if (hit) corrupt(dw);
  return st;
}

/* Backend: finalized variant packs cannot be read back, so remember the data
 * pointers as they are set (the last pack set is the one executed next). */
static __thread void *pack_ptrs[8];
static __thread int64_t pack_n;

EXPORT cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t d,
                                              cudnnBackendAttributeName_t name,
                                              cudnnBackendAttributeType_t type, int64_t count,
                                              const void *value) {
  typeof(cudnnBackendSetAttribute) *f = real("cudnnBackendSetAttribute");
  if (name == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS && type == CUDNN_TYPE_VOID_PTR && count > 0 &&
      count <= 8) {
    memcpy(pack_ptrs, value, (size_t)count * sizeof(void *));
    pack_n = count;
  }
  return f(d, name, type, count, value);
}

/* Every operand of the executed pack is perturbed: whichever is the output
 * is then wrong, and the sample's check of that operation must say so. */
EXPORT cudnnStatus_t cudnnBackendExecute(cudnnHandle_t h, cudnnBackendDescriptor_t plan,
                                         cudnnBackendDescriptor_t pack) {
  typeof(cudnnBackendExecute) *f = real("cudnnBackendExecute");
  int hit = wanted("cudnnBackendExecute");
  depth++;
  cudnnStatus_t st = f(h, plan, pack);
  depth--;
  if (hit)
    for (int64_t i = 0; i < pack_n; i++)
      corrupt(pack_ptrs[i]);
  return st;
}
