/* The real cuBLAS entry points devshadow.c's own work calls (its private
 * handle): the library's functions, never mpprof's hooks. The cuBLAS hook
 * module hands them over (hooks/cublas.c, a layer above profiler/gpu) with a
 * function that resolves them once libcublas.so.13 is loaded. */
#ifndef MPPROF_PROFILER_GPU_DEVSHADOW_BLAS_H
#define MPPROF_PROFILER_GPU_DEVSHADOW_BLAS_H

#include <stdbool.h>

#include <cublas_api.h>

typedef struct mpp_devshadow_blas {
  cublasStatus_t (*create)(cublasHandle_t *);
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
  cublasStatus_t (*sgemm_strided)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const float *, const float *, int, long long int,
                                  const float *, int, long long int, const float *, float *, int,
                                  long long int, int);
} mpp_devshadow_blas;

/* Fill every member, or return false (not loaded yet: asked again later). */
typedef bool (*mpp_devshadow_blas_fn)(mpp_devshadow_blas *ret);
void mpp_devshadow_set_blas(mpp_devshadow_blas_fn get);

#endif
