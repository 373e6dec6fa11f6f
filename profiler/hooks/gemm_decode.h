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

/* A legacy cuDNN convolution's memo key: everything mpp_conv_decode_call
 * reads but the three data pointers, as ints, the way cuDNN's getters give
 * them (hooks/cudnn.c zeroes one and has the getters write into it). A
 * tensor's dims and strides past its rank are 0 (or what a getter wrote
 * there); its format is a filter's (0 for a tensor), its strides a tensor's
 * (0 for a filter). The convolution's first two spatial pads, strides and
 * dilations (0, 1, 1 past its spatial rank); groups 0. Compared as bytes:
 * no padding. */
typedef struct mpp_conv_key_tensor {
  int32_t dtype, nd, format;
  int32_t dims[MPP_CONV_MAX_DIMS], strides[MPP_CONV_MAX_DIMS];
} mpp_conv_key_tensor;

typedef struct mpp_conv_key {
  const char *api;
  const char *conv_math;
  void *stream;
  int32_t kind; /* mpp_op_kind */
  mpp_conv_key_tensor t[3];
  int32_t comp_type, nsp, mode, groups;
  int32_t pad[MPP_CONV_MAX_SPATIAL], stride[MPP_CONV_MAX_SPATIAL], dilation[MPP_CONV_MAX_SPATIAL];
  int32_t blend; /* beta != 0: the output's prior value is read (mpp_conv_add_prior) */
} mpp_conv_key;

/* The key's tensors and convolution as mpp_conv_decode_call takes them. */
void mpp_conv_key_descs(const mpp_conv_key *k, mpp_tensor_desc t[3], mpp_conv_desc *c);

/* mpp_conv_decode_call of the key's call with these data pointers (role
 * order), and with the output's prior value when the key blends, through
 * the same per-thread memo. */
mpp_op *mpp_conv_decode_memo_key(mpp_op *scratch, const mpp_conv_key *k, const void *p0,
                                 const void *p1, const void *p2);

/* The same from tensors (in role order) and a convolution: decoded afresh
 * into scratch where a value does not fit the key's ints. */
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
  int64_t alpha_vec_stride; /* ALPHA_VECTOR_BATCH_STRIDE: values between batch members' alphas */
  /* The GELU epilogues' aux buffer (mpp_lt_aux_use: read only for those):
   * EPILOGUE_AUX_POINTER (NULL: none), AUX_DATA_TYPE (-1: D's), AUX_LD and
   * AUX_BATCH_STRIDE in elements. */
  const void *aux;
  int aux_type;
  int64_t aux_ld, aux_stride;
  /* And what GELU_AUX* store it with: EPILOGUE_AUX_SCALE_POINTER (NULL = 1;
   * its EPILOGUE_AUX_SCALE_MODE, 0 = one fp32 scalar) and
   * EPILOGUE_AUX_AMAX_POINTER (max |aux| before the scale), as D's. */
  const void *aux_scale;
  int32_t aux_scale_mode;
  const void *aux_amax;
  const void *scale_ptr[4]; /* A, B, C, D scale pointers (NULL = 1) */
  int32_t scale_mode[4];    /* A..D_SCALE_MODE: 0 = one fp32 scalar, others block/vector arrays */
  const void *amax_d;
  int8_t fast_accum; /* CUBLASLT_MATMUL_DESC_FAST_ACCUM (0: off, cuBLASLt's default) */
  mpp_lt_layout a, b, c, d;
  const void *alpha, *beta;
  const void *A, *B, *C, *D;
} mpp_lt_call;

const char *mpp_lt_epilogue_name(uint32_t epilogue);
/* How an epilogue uses its aux buffer as numbers: 1 writes the GELU's input
 * (GELU_AUX, GELU_AUX_BIAS: role aux, an output), 2 reads it back (DGELU,
 * DGELU_BGRAD: role aux_in, an input), 0 neither: no aux, or the ReLU forms'
 * bit mask (RELU_AUX*, DRELU*), which holds no numbers and is not scanned. */
int mpp_lt_aux_use(uint32_t epilogue);
void mpp_lt_decode(mpp_op *op, const mpp_lt_call *g, void *stream,
                   bool (*host_visible)(const void *p));
/* mpp_lt_decode through this thread's memo of decoded calls, as
 * mpp_gemm_decode_memo: the op to record, the memo's own or `scratch`
 * (pointer arrays, FP8 scale or AMAX_D pointers: decoded afresh). */
mpp_op *mpp_lt_decode_memo(mpp_op *scratch, const mpp_lt_call *g, void *stream,
                           bool (*host_visible)(const void *p));

/* Where a call went in this thread's memo: its entry, the entry's fill (a
 * stamp no other fill of any thread's memo has), and the words of the key
 * that come from the call's pointers (C given, what beta and alpha are
 * known to be, alpha read on the host, alpha, the stream). 0 fill: none. */
typedef struct mpp_lt_memo_hint {
  uint64_t fill;
  uint32_t slot;
  uint64_t words[5];
} mpp_lt_memo_hint;

/* mpp_lt_decode_memo, for a caller that keeps g and hint together (the
 * cuBLASLt hook's memo by descriptor bytes): while g's fields other than
 * its six data pointers stay those of the call that set the hint, and
 * host_visible the same function, a call whose per-call key words match the
 * hint's goes to the hinted entry if it still holds them (built key,
 * hash and compare of the key skipped); otherwise as mpp_lt_decode_memo,
 * and the hint set anew. Zero the hint when g's other fields change. */
mpp_op *mpp_lt_decode_memo_hinted(mpp_op *scratch, const mpp_lt_call *g, void *stream,
                                  bool (*host_visible)(const void *p), mpp_lt_memo_hint *hint);

#endif
