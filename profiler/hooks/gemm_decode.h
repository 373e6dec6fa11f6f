/* Decoding of a cuBLAS GEMM call into an mpp_op, independent of any live
 * cuBLAS handle (the wrapper looks up math mode, pointer mode and stream and
 * passes them in), so the decoding is unit-tested on its own. */
#ifndef MPPROF_PROFILER_HOOKS_GEMM_DECODE_H
#define MPPROF_PROFILER_HOOKS_GEMM_DECODE_H

#include <stdint.h>

#include "conv_decode.h"
#include "profiler/op.h"

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
void mpp_op_note_ptr_array(mpp_op *op, const void *const *arr, int64_t n,
                           bool (*host_visible)(const void *p));
void mpp_gemm_decode(mpp_op *op, const mpp_gemm_call *g, const mpp_gemm_ctx *ctx);
/* The op mpp_gemm_decode gives, from the calling thread's memo when the
 * thread decoded a call of the same arguments (matrix pointers aside) in the
 * same context before: the memo entry's own op, whose site_memo is the
 * entry's memo of its site (call.c); it is the caller's until this thread's
 * next decode. For a hook that records one op per call (the depth guard
 * keeps a thread's calls from nesting); calls with pointer arrays are
 * decoded afresh into `scratch`, and so is a call when no memory is left. */
mpp_op *mpp_gemm_decode_memo(mpp_op *scratch, const mpp_gemm_call *g, const mpp_gemm_ctx *ctx);

/* A legacy cuDNN convolution (hooks/cudnn.c): mpp_conv_decode of these
 * tensors (in role order) with its conv_math and stream set, through the
 * same per-thread memo, keyed by everything but the three data pointers. */
mpp_op *mpp_conv_decode_memo(mpp_op *scratch, const char *api, mpp_op_kind kind,
                             const mpp_tensor_desc t[3], const mpp_conv_desc *c,
                             const char *conv_math, void *stream, const void *p0, const void *p1,
                             const void *p2);

/* cublasLtMatmul, from attributes already read out of its descriptors (the
 * wrapper reads them with cublasLtMatmulDescGetAttribute and
 * cublasLtMatrixLayoutGetAttribute; both are host-only calls). */
typedef struct mpp_lt_layout {
  int type;  /* cudaDataType */
  int order; /* cublasLtOrder_t: 0 COL, 1 ROW, others tiled */
  uint64_t rows, cols;
  int64_t ld;
  int32_t batch;
  int64_t batch_stride; /* elements */
  uint32_t batch_mode;  /* cublasLtBatchMode_t: 1 = the matrix pointer is an array of pointers */
} mpp_lt_layout;

typedef struct mpp_lt_call {
  int compute;      /* cublasComputeType_t */
  int scale_type;   /* cudaDataType */
  int pointer_mode; /* cublasLtPointerMode_t */
  int transa, transb;
  uint32_t epilogue;
  const void *bias;         /* CUBLASLT_MATMUL_DESC_BIAS_POINTER (NULL: none) */
  int bias_type;            /* cudaDataType, -1: D's (cuBLASLt's default) */
  int64_t bias_stride;      /* elements between batch members' bias vectors */
  const void *scale_ptr[4]; /* A, B, C, D scale pointers (NULL = 1) */
  int32_t scale_mode[4];    /* A..D_SCALE_MODE: 0 = one fp32 scalar, others block/vector arrays */
  const void *amax_d;
  mpp_lt_layout a, b, c, d;
  const void *alpha, *beta;
  const void *A, *B, *C, *D;
} mpp_lt_call;

const char *mpp_lt_epilogue_name(uint32_t epilogue);
void mpp_lt_decode(mpp_op *op, const mpp_lt_call *g, void *stream,
                   bool (*host_visible)(const void *p));
/* mpp_lt_decode through this thread's memo of decoded calls, as
 * mpp_gemm_decode_memo: the op to record, the memo's own or `scratch`
 * (pointer arrays, FP8 scale or AMAX_D pointers: decoded afresh). */
mpp_op *mpp_lt_decode_memo(mpp_op *scratch, const mpp_lt_call *g, void *stream,
                           bool (*host_visible)(const void *p));

#endif
