/* The fp32 GEMMs of devshadow.c's own work (the reference and each
 * candidate's product) on a private handle: the library's real functions,
 * never mpprof's hooks. The hook modules (a layer above profiler/gpu) hand
 * over a backend each, with a function that gives it once its library is
 * loaded: hooks/cublas.c a cuBLAS handle in pedantic math, hooks/cublaslt.c
 * cuBLASLt matmuls of compute type COMPUTE_32F_PEDANTIC (for programs that
 * load only libcublasLt.so.13, as FP8 code does). The first backend in
 * mpp_devshadow_backend's order that is there is used. */
#ifndef MPPROF_PROFILER_GPU_DEVSHADOW_BLAS_H
#define MPPROF_PROFILER_GPU_DEVSHADOW_BLAS_H

#include <stdbool.h>

#include <cublas_api.h>

typedef struct mpp_devshadow_blas {
  /* A handle of the current context whose GEMMs use neither TF32 nor
   * reduced-precision reductions. */
  bool (*create)(void **ret_handle);
  /* C[b] = alpha op(A[b]) op(B[b]) + beta C[b] for b < batch (fp32,
   * column-major, batch strides sa, sb, sc), enqueued on `stream`. */
  bool (*sgemm_strided)(void *handle, cudaStream_t stream, cublasOperation_t ta,
                        cublasOperation_t tb, int m, int n, int k, const float *alpha,
                        const float *A, int lda, long long sa, const float *B, int ldb,
                        long long sb, const float *beta, float *C, int ldc, long long sc,
                        int batch);
} mpp_devshadow_blas;

/* The backends, first choice first. */
typedef enum mpp_devshadow_backend {
  MPP_DEVSHADOW_CUBLAS,
  MPP_DEVSHADOW_CUBLASLT,
  MPP_DEVSHADOW_BACKENDS
} mpp_devshadow_backend;

/* The backend's functions, or NULL while its library is not loaded (asked
 * again later). */
typedef const mpp_devshadow_blas *(*mpp_devshadow_blas_fn)(void);
void mpp_devshadow_set_blas(mpp_devshadow_backend which, mpp_devshadow_blas_fn get);

#endif
