/* Convolutions as ops, shared by the legacy cuDNN hooks and the backend-API
 * shadowing: geometry, the implicit-GEMM shape (m, n, k) that Tensor Core
 * eligibility is judged on, dtypes keyed x/w/y, and tensor roles. */
#ifndef MPPROF_PROFILER_HOOKS_CONV_DECODE_H
#define MPPROF_PROFILER_HOOKS_CONV_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "profiler/op.h"

#define MPP_CONV_MAX_DIMS 8
#define MPP_CONV_MAX_SPATIAL 3 /* what shadow execution re-computes: 3-D convolutions */

typedef struct mpp_tensor_desc {
  int dtype; /* cudnnDataType_t */
  int nd;
  int64_t dims[MPP_CONV_MAX_DIMS];    /* logical N, C, spatial... (filters: K, C, R, S) */
  int64_t strides[MPP_CONV_MAX_DIMS]; /* elements; all 0 for a packed filter */
  int format;                         /* filters: cudnnTensorFormat_t (legacy API) */
} mpp_tensor_desc;

typedef struct mpp_conv_desc {
  int comp_type; /* cudnnDataType_t */
  int nsp;       /* spatial dims */
  int mode;      /* cudnnConvolutionMode_t (legacy API) */
  int groups;    /* 0: not known */
  /* per spatial dimension, the depth first in 3-D (mpp_conv keeps the first two) */
  int64_t pad[MPP_CONV_MAX_SPATIAL], stride[MPP_CONV_MAX_SPATIAL], dilation[MPP_CONV_MAX_SPATIAL];
} mpp_conv_desc;

/* Tensors in role order: forward x, w, y; backward data dy, w, dx; backward
 * filter x, dy, dw (the input, the other operand, the output). */
void mpp_conv_decode(mpp_op *op, const char *api, mpp_op_kind kind, const mpp_tensor_desc *x,
                     const mpp_tensor_desc *w, const mpp_tensor_desc *y, const mpp_conv_desc *c,
                     const void *px, const void *pw, const void *py);
/* mpp_conv_decode of a legacy cuDNN call, tensors in role order, with the
 * call's math type (mpp_op.conv_math) and stream: what the decode memo keeps
 * and what a call decoded afresh gets. */
void mpp_conv_decode_call(mpp_op *op, const char *api, mpp_op_kind kind, const mpp_tensor_desc t[3],
                          const mpp_conv_desc *c, const char *conv_math, void *stream,
                          const void *p0, const void *p1, const void *p2);
/* What shadow execution needs to re-compute the convolution op (decoded by
 * mpp_conv_decode; op.h conv_shadow), from its tensors in role order, c
 * (with its group count) and the call's alpha (host memory; NULL: not known,
 * nothing set). The fused bias-activation forward adds its epilogue with
 * mpp_conv_shadow_bias_act. */
void mpp_conv_shadow_of(mpp_op *op, const mpp_tensor_desc *t0, const mpp_tensor_desc *t1,
                        const mpp_tensor_desc *t2, const mpp_conv_desc *c, const void *alpha);
/* The same for the backend API, whose tensors (the filter too) carry their
 * strides and whose group count follows from x's and w's channels: alpha as
 * the operation's ALPHA attribute gave it (NAN: not set, nothing set). */
void mpp_conv_shadow_of_strided(mpp_op *op, const mpp_tensor_desc *t0, const mpp_tensor_desc *t1,
                                const mpp_tensor_desc *t2, const mpp_conv_desc *c, double alpha);
/* The fused bias-activation forward's epilogue as shadow execution applies
 * it (op.h shadow_epi, shadow_bias), on an op mpp_conv_shadow_of set up:
 * bias b (1 x K x 1 x 1[ x 1], its K values adjacent; one per output
 * channel, so per row of each group's implicit GEMM) at pb, and ReLU
 * (relu) or the identity. Anything else leaves the op unshadowed (its
 * conv_shadow cleared). */
void mpp_conv_shadow_bias_act(mpp_op *op, const mpp_tensor_desc *b, const void *pb, bool relu);
/* A view of a tensor: scannable when packed in some dimension order. */
void mpp_conv_tensor_view(mpp_role *r, const mpp_tensor_desc *t, const void *p);
/* The output's prior value as an input role of its own (conv_decode.c):
 * for an op decoded by mpp_conv_decode whose beta is non-zero, the output
 * (role order's third tensor, `out`, at p) is read before it is written.
 * With beta == 0 cuDNN does not read it ("the output may hold
 * uninitialized data, NaN included"): no role. */
void mpp_conv_add_prior(mpp_op *op, const mpp_tensor_desc *out, const void *p);
/* Is a legacy cuDNN scaling factor (host memory: double for double data,
 * float otherwise) non-zero? NULL: no. */
bool mpp_cudnn_scale_nonzero(const void *scale, int data_type);

#endif
