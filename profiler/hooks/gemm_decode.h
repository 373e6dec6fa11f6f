/* Decoding of a cuBLAS GEMM call into an mpp_op, independent of any live
 * cuBLAS handle (the wrapper looks up math mode, pointer mode and stream and
 * passes them in), so the decoding is unit-tested on its own. */
#ifndef MPPROF_PROFILER_HOOKS_GEMM_DECODE_H
#define MPPROF_PROFILER_HOOKS_GEMM_DECODE_H

#include <stdint.h>

#include "profiler/mpp.h"

typedef struct mpp_gemm_call {
  const char *api;
  int transa, transb; /* cublasOperation_t */
  int64_t m, n, k, lda, ldb, ldc;
  const void *alpha, *beta;
  const void *A, *B, *C;                               /* single or strided-batched */
  const void *const *Aarr, *const *Barr, *const *Carr; /* pointer-array batches */
  int64_t strideA, strideB, strideC;                   /* elements */
  int64_t batch;
  int Atype, Btype, Ctype; /* cudaDataType */
  int compute;             /* cublasComputeType_t (or legacy cudaDataType) */
  int scale_type;          /* cudaDataType of alpha and beta */
} mpp_gemm_call;

typedef struct mpp_gemm_ctx {
  int math_mode;    /* cublasMath_t of the handle, -1 unknown */
  int pointer_mode; /* 0 host, 1 device */
  void *stream;
  /* Is a device-mode scalar readable here (host-visible)? NULL: never. */
  bool (*host_visible)(const void *p);
} mpp_gemm_ctx;

char mpp_cublas_op_char(int op); /* 'N', 'T', 'C', '?' */
void mpp_gemm_decode(mpp_op *op, const mpp_gemm_call *g, const mpp_gemm_ctx *ctx);

#endif
