/* Names and scanner dtypes of the CUDA library enums the hooks decode:
 * cudaDataType (library_types.h), cublasComputeType_t, cudnnDataType_t.
 * One spelling per dtype: the analysis/ names where analysis knows the
 * format ("fp16", "bf16", "fp8_e4m3", ...), else a name of our own. */
#ifndef MPPROF_PROFILER_HOOKS_CUDA_TYPES_H
#define MPPROF_PROFILER_HOOKS_CUDA_TYPES_H

#include "analysis/formats.h"

const char *mpp_cuda_dtype_name(int cuda_data_type);
mp_dtype mpp_cuda_dtype(int cuda_data_type); /* MP_DTYPE_INVALID when not a scanner format */
/* cublasComputeType_t without the prefix ("32F_FAST_TF32"); legacy cudaDataType
 * values passed as compute type (CUDA_R_32F, ...) are mapped as cuBLAS does. */
const char *mpp_cublas_compute_name(int compute_type);
/* The dtype of alpha/beta for a compute type (cuBLAS rules). */
int mpp_cublas_compute_scale_type(int compute_type);
const char *mpp_cudnn_dtype_name(int cudnn_data_type);
mp_dtype mpp_cudnn_dtype(int cudnn_data_type);
/* Is the scalar at p (host memory) non-zero, read as the given cudaDataType? */
int mpp_scalar_nonzero(const void *p, int cuda_data_type); /* 1, 0, or -1 unknown type */
/* Its value (fp32, fp64, fp16, bf16 scale types): 0, or -1 for another type. */
int mpp_scalar_value(const void *p, int cuda_data_type, double *ret);

#endif
