/* The legacy (descriptor-and-call) cuDNN API of simcuda's libcudnn.so.9:
 * tensor, filter, convolution and activation descriptors with their getters
 * (mpprof's hooks read them back), output-dimension and workspace queries,
 * algorithm heuristics, and the four convolution entry points mpprof hooks.
 *
 * Math selection (simcudnn_conv_math) follows cuDNN 9 on sm_90: Tensor Cores
 * (TF32 for fp32 data: PyTorch's default with allow_tf32) under
 * CUDNN_DEFAULT_MATH / TENSOR_OP_MATH when C and K are multiples of 8 and the
 * conv is not grouped; CUDA cores under CUDNN_FMA_MATH, for fp32 with
 * NVIDIA_TF32_OVERRIDE=0, or otherwise. Every algorithm the real library
 * runs for a problem runs the same reference loop here; the ones it refuses
 * for that problem are refused, and the transform algorithms ask for
 * workspace (algo_plan). */
#include <stdlib.h>
#include <string.h>

#include "cudnn_sim.h"

#define TENSOR_MAGIC 0x636e6e74u /* "cnnt" */
#define FILTER_MAGIC 0x636e6e66u
#define CONV_MAGIC 0x636e6e63u
#define ACT_MAGIC 0x636e6e61u

struct cudnnTensorStruct {
  uint32_t magic;
  bool set;
  simcudnn_tensor t;
};

struct cudnnFilterStruct {
  uint32_t magic;
  bool set;
  cudnnTensorFormat_t format;
  simcudnn_tensor t; /* dims always K, C, spatial...; strides follow format */
};

struct cudnnConvolutionStruct {
  uint32_t magic;
  bool set;
  simcudnn_conv_geom g; /* symmetric padding: pre_pad == post_pad */
  cudnnMathType_t math;
  int groups;
};

struct cudnnActivationStruct {
  uint32_t magic;
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan;
  double coef;
  double swish_beta;
};

static bool tensor_ok(cudnnTensorDescriptor_t d) {
  return d && d->magic == TENSOR_MAGIC && d->set;
}
static bool filter_ok(cudnnFilterDescriptor_t d) {
  return d && d->magic == FILTER_MAGIC && d->set;
}
static bool conv_ok(cudnnConvolutionDescriptor_t d) {
  return d && d->magic == CONV_MAGIC && d->set;
}

static bool dtype_known(cudnnDataType_t dt) {
  return dt >= CUDNN_DATA_FLOAT && dt <= CUDNN_DATA_COMPLEX_FP64;
}

/* ---- tensor descriptors ---- */

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t *desc) {
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  *desc = calloc(1, sizeof **desc);
  if (!*desc) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  (*desc)->magic = TENSOR_MAGIC;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  if (!desc) return CUDNN_STATUS_SUCCESS;
  if (desc->magic != TENSOR_MAGIC) return CUDNN_STATUS_BAD_PARAM;
  desc->magic = 0;
  free(desc);
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t set_tensor(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int nb,
                                const int64_t *dims, const int64_t *strides) {
  if (!d || d->magic != TENSOR_MAGIC || !dtype_known(dt)) return CUDNN_STATUS_BAD_PARAM;
  if (nb < 3 || nb > CUDNN_DIM_MAX) {
    simcudnn_set_error("simcuda cuDNN: tensor with %d dims (3..%d supported)", nb, CUDNN_DIM_MAX);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  for (int i = 0; i < nb; i++)
    if (dims[i] <= 0 || strides[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  d->t.dtype = dt;
  d->t.nb_dims = nb;
  memcpy(d->t.dims, dims, nb * sizeof *dims);
  memcpy(d->t.strides, strides, nb * sizeof *strides);
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}

/* Strides of a 4-D+ tensor stored in the given format, dims given as N, C, spatial... */
static cudnnStatus_t format_strides(cudnnTensorFormat_t f, int nb, const int64_t *dims,
                                    int64_t *ret) {
  if (f == CUDNN_TENSOR_NCHW) {
    simcudnn_packed_strides(nb, dims, ret);
    return CUDNN_STATUS_SUCCESS;
  }
  if (f != CUDNN_TENSOR_NHWC) {
    simcudnn_set_error("simcuda cuDNN: tensor format %d not implemented (NCHW, NHWC)", f);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  /* Channels innermost, then the spatial dims in order, the batch outermost. */
  int64_t s = 1;
  ret[1] = s;
  s *= dims[1];
  for (int i = nb - 1; i >= 2; i--) {
    ret[i] = s;
    s *= dims[i];
  }
  ret[0] = s;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                         cudnnDataType_t dt, int n, int c, int h, int w) {
  int64_t dims[4] = {n, c, h, w}, strides[4];
  for (int i = 0; i < 4; i++)
    if (dims[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = format_strides(format, 4, dims, strides);
  return st ? st : set_tensor(d, dt, 4, dims, strides);
}

cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int n,
                                           int c, int h, int w, int ns, int cs, int hs, int ws) {
  int64_t dims[4] = {n, c, h, w}, strides[4] = {ns, cs, hs, ws};
  return set_tensor(d, dt, 4, dims, strides);
}

cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int nb,
                                         const int dimA[], const int strideA[]) {
  if (!dimA || !strideA || nb < 0 || nb > CUDNN_DIM_MAX) return CUDNN_STATUS_BAD_PARAM;
  int64_t dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
  for (int i = 0; i < nb; i++) {
    dims[i] = dimA[i];
    strides[i] = strideA[i];
  }
  return set_tensor(d, dt, nb, dims, strides);
}

cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t d, cudnnTensorFormat_t format,
                                           cudnnDataType_t dt, int nb, const int dimA[]) {
  if (!dimA || nb < 3 || nb > CUDNN_DIM_MAX) return CUDNN_STATUS_BAD_PARAM;
  int64_t dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
  for (int i = 0; i < nb; i++) {
    if (dimA[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
    dims[i] = dimA[i];
  }
  cudnnStatus_t st = format_strides(format, nb, dims, strides);
  return st ? st : set_tensor(d, dt, nb, dims, strides);
}

cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t d, cudnnDataType_t *dt,
                                         int *n, int *c, int *h, int *w, int *ns, int *cs, int *hs,
                                         int *ws) {
  if (!tensor_ok(d) || d->t.nb_dims != 4) return CUDNN_STATUS_BAD_PARAM;
  int *dims[4] = {n, c, h, w}, *strides[4] = {ns, cs, hs, ws};
  if (dt) *dt = d->t.dtype;
  for (int i = 0; i < 4; i++) {
    if (dims[i]) *dims[i] = (int)d->t.dims[i];
    if (strides[i]) *strides[i] = (int)d->t.strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t d, int nbDimsRequested,
                                         cudnnDataType_t *dt, int *nbDims, int dimA[],
                                         int strideA[]) {
  if (!tensor_ok(d) || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (dt) *dt = d->t.dtype;
  if (nbDims) *nbDims = d->t.nb_dims;
  for (int i = 0; i < nbDimsRequested && i < d->t.nb_dims; i++) {
    if (dimA) dimA[i] = (int)d->t.dims[i];
    if (strideA) strideA[i] = (int)d->t.strides[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t d, size_t *size) {
  if (!tensor_ok(d) || !size) return CUDNN_STATUS_BAD_PARAM;
  if (simcudnn_dtype_size(d->t.dtype) == 0) return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  *size = (size_t)simcudnn_tensor_span_bytes(&d->t);
  return CUDNN_STATUS_SUCCESS;
}

/* ---- filter descriptors ---- */

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t *desc) {
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  *desc = calloc(1, sizeof **desc);
  if (!*desc) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  (*desc)->magic = FILTER_MAGIC;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  if (!desc) return CUDNN_STATUS_SUCCESS;
  if (desc->magic != FILTER_MAGIC) return CUDNN_STATUS_BAD_PARAM;
  desc->magic = 0;
  free(desc);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                                         cudnnTensorFormat_t format, int nb, const int dimA[]) {
  if (!d || d->magic != FILTER_MAGIC || !dimA || !dtype_known(dt)) return CUDNN_STATUS_BAD_PARAM;
  if (nb < 3 || nb > CUDNN_DIM_MAX) {
    simcudnn_set_error("simcuda cuDNN: filter with %d dims (3..%d supported)", nb, CUDNN_DIM_MAX);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  int64_t dims[CUDNN_DIM_MAX], strides[CUDNN_DIM_MAX];
  for (int i = 0; i < nb; i++) {
    if (dimA[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
    dims[i] = dimA[i];
  }
  cudnnStatus_t st = format_strides(format, nb, dims, strides);
  if (st) return st;
  d->format = format;
  d->t.dtype = dt;
  d->t.nb_dims = nb;
  memcpy(d->t.dims, dims, sizeof dims);
  memcpy(d->t.strides, strides, sizeof strides);
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t d, cudnnDataType_t dt,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  int dims[4] = {k, c, h, w};
  return cudnnSetFilterNdDescriptor(d, dt, format, 4, dims);
}

cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t d, cudnnDataType_t *dt,
                                         cudnnTensorFormat_t *format, int *k, int *c, int *h,
                                         int *w) {
  if (!filter_ok(d) || d->t.nb_dims != 4) return CUDNN_STATUS_BAD_PARAM;
  int *dims[4] = {k, c, h, w};
  if (dt) *dt = d->t.dtype;
  if (format) *format = d->format;
  for (int i = 0; i < 4; i++)
    if (dims[i]) *dims[i] = (int)d->t.dims[i];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t d, int nbDimsRequested,
                                         cudnnDataType_t *dt, cudnnTensorFormat_t *format,
                                         int *nbDims, int filterDimA[]) {
  if (!filter_ok(d) || nbDimsRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (dt) *dt = d->t.dtype;
  if (format) *format = d->format;
  if (nbDims) *nbDims = d->t.nb_dims;
  for (int i = 0; i < nbDimsRequested && i < d->t.nb_dims && filterDimA; i++)
    filterDimA[i] = (int)d->t.dims[i];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t d, size_t *size) {
  if (!filter_ok(d) || !size) return CUDNN_STATUS_BAD_PARAM;
  if (simcudnn_dtype_size(d->t.dtype) == 0) return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  *size = (size_t)simcudnn_tensor_span_bytes(&d->t);
  return CUDNN_STATUS_SUCCESS;
}

/* ---- convolution descriptors ---- */

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t *desc) {
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  *desc = calloc(1, sizeof **desc);
  if (!*desc) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  (*desc)->magic = CONV_MAGIC;
  (*desc)->math = CUDNN_DEFAULT_MATH;
  (*desc)->groups = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  if (!desc) return CUDNN_STATUS_SUCCESS;
  if (desc->magic != CONV_MAGIC) return CUDNN_STATUS_BAD_PARAM;
  desc->magic = 0;
  free(desc);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t d, int arrayLength,
                                              const int padA[], const int filterStrideA[],
                                              const int dilationA[], cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  if (!d || d->magic != CONV_MAGIC || !padA || !filterStrideA || !dilationA)
    return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION) return CUDNN_STATUS_BAD_PARAM;
  if (!dtype_known(computeType)) return CUDNN_STATUS_BAD_PARAM;
  if (arrayLength < 1 || arrayLength > SIMCUDNN_MAX_SPATIAL) {
    simcudnn_set_error("simcuda cuDNN: %d-D convolution (1..3 supported)", arrayLength);
    return arrayLength < 1 ? CUDNN_STATUS_BAD_PARAM : CUDNN_STATUS_NOT_SUPPORTED;
  }
  for (int i = 0; i < arrayLength; i++)
    if (padA[i] < 0 || filterStrideA[i] <= 0 || dilationA[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  simcudnn_conv_geom g = {.spatial = arrayLength, .mode = mode, .compute = computeType};
  for (int i = 0; i < arrayLength; i++) {
    g.pre_pad[i] = g.post_pad[i] = padA[i];
    g.stride[i] = filterStrideA[i];
    g.dilation[i] = dilationA[i];
  }
  d->g = g;
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t d, int pad_h, int pad_w,
                                              int u, int v, int dilation_h, int dilation_w,
                                              cudnnConvolutionMode_t mode,
                                              cudnnDataType_t computeType) {
  int pad[2] = {pad_h, pad_w}, stride[2] = {u, v}, dil[2] = {dilation_h, dilation_w};
  return cudnnSetConvolutionNdDescriptor(d, 2, pad, stride, dil, mode, computeType);
}

cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t d,
                                              int arrayLengthRequested, int *arrayLength,
                                              int padA[], int strideA[], int dilationA[],
                                              cudnnConvolutionMode_t *mode,
                                              cudnnDataType_t *computeType) {
  if (!conv_ok(d) || arrayLengthRequested < 0) return CUDNN_STATUS_BAD_PARAM;
  if (arrayLength) *arrayLength = d->g.spatial;
  for (int i = 0; i < arrayLengthRequested && i < d->g.spatial; i++) {
    if (padA) padA[i] = (int)d->g.pre_pad[i];
    if (strideA) strideA[i] = (int)d->g.stride[i];
    if (dilationA) dilationA[i] = (int)d->g.dilation[i];
  }
  if (mode) *mode = d->g.mode;
  if (computeType) *computeType = d->g.compute;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t d, int *pad_h,
                                              int *pad_w, int *u, int *v, int *dilation_h,
                                              int *dilation_w, cudnnConvolutionMode_t *mode,
                                              cudnnDataType_t *computeType) {
  if (!conv_ok(d) || d->g.spatial != 2) return CUDNN_STATUS_BAD_PARAM;
  int pad[2], stride[2], dil[2];
  cudnnGetConvolutionNdDescriptor(d, 2, NULL, pad, stride, dil, mode, computeType);
  if (pad_h) *pad_h = pad[0];
  if (pad_w) *pad_w = pad[1];
  if (u) *u = stride[0];
  if (v) *v = stride[1];
  if (dilation_h) *dilation_h = dil[0];
  if (dilation_w) *dilation_w = dil[1];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t math) {
  if (!d || d->magic != CONV_MAGIC) return CUDNN_STATUS_BAD_PARAM;
  if (math < CUDNN_DEFAULT_MATH || math > CUDNN_FMA_MATH) return CUDNN_STATUS_BAD_PARAM;
  d->math = math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t d, cudnnMathType_t *math) {
  if (!d || d->magic != CONV_MAGIC || !math) return CUDNN_STATUS_BAD_PARAM;
  *math = d->math;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int groupCount) {
  if (!d || d->magic != CONV_MAGIC || groupCount < 1) return CUDNN_STATUS_BAD_PARAM;
  d->groups = groupCount;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t d, int *groupCount) {
  if (!d || d->magic != CONV_MAGIC || !groupCount) return CUDNN_STATUS_BAD_PARAM;
  *groupCount = d->groups;
  return CUDNN_STATUS_SUCCESS;
}

/* Output dims of a forward convolution: N, K, then each spatial output size. */
static cudnnStatus_t fwd_out_dims(cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t x,
                                  cudnnFilterDescriptor_t w, int nb, int64_t *ret) {
  if (!conv_ok(conv) || !tensor_ok(x) || !filter_ok(w)) return CUDNN_STATUS_BAD_PARAM;
  int nd = conv->g.spatial + 2;
  if (x->t.nb_dims != nd || w->t.nb_dims != nd || nb != nd) return CUDNN_STATUS_BAD_PARAM;
  if (x->t.dims[1] != w->t.dims[1] * conv->groups || w->t.dims[0] % conv->groups != 0)
    return CUDNN_STATUS_BAD_PARAM;
  ret[0] = x->t.dims[0];
  ret[1] = w->t.dims[0];
  for (int i = 0; i < conv->g.spatial; i++) {
    ret[2 + i] = simcudnn_conv_out_dim(x->t.dims[2 + i], w->t.dims[2 + i], conv->g.pre_pad[i],
                                       conv->g.post_pad[i], conv->g.stride[i], conv->g.dilation[i]);
    if (ret[2 + i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int nbDims,
                                                    int tensorOuputDimA[]) {
  int64_t out[CUDNN_DIM_MAX];
  if (!tensorOuputDimA) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = fwd_out_dims(conv, x, w, nbDims, out);
  if (st) return st;
  for (int i = 0; i < nbDims; i++)
    tensorOuputDimA[i] = (int)out[i];
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(const cudnnConvolutionDescriptor_t conv,
                                                    const cudnnTensorDescriptor_t x,
                                                    const cudnnFilterDescriptor_t w, int *n, int *c,
                                                    int *h, int *wo) {
  int64_t out[4];
  if (!n || !c || !h || !wo) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = fwd_out_dims(conv, x, w, 4, out);
  if (st) return st;
  *n = (int)out[0];
  *c = (int)out[1];
  *h = (int)out[2];
  *wo = (int)out[3];
  return CUDNN_STATUS_SUCCESS;
}

/* ---- activation descriptors ---- */

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t *desc) {
  if (!desc) return CUDNN_STATUS_BAD_PARAM;
  *desc = calloc(1, sizeof **desc);
  if (!*desc) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  (*desc)->magic = ACT_MAGIC;
  (*desc)->mode = CUDNN_ACTIVATION_RELU;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t desc) {
  if (!desc) return CUDNN_STATUS_SUCCESS;
  if (desc->magic != ACT_MAGIC) return CUDNN_STATUS_BAD_PARAM;
  desc->magic = 0;
  free(desc);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t reluNanOpt, double coef) {
  if (!d || d->magic != ACT_MAGIC || mode < CUDNN_ACTIVATION_SIGMOID ||
      mode > CUDNN_ACTIVATION_SWISH)
    return CUDNN_STATUS_BAD_PARAM;
  d->mode = mode;
  d->nan = reluNanOpt;
  d->coef = coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t d,
                                           cudnnActivationMode_t *mode,
                                           cudnnNanPropagation_t *reluNanOpt, double *coef) {
  if (!d || d->magic != ACT_MAGIC) return CUDNN_STATUS_BAD_PARAM;
  if (mode) *mode = d->mode;
  if (reluNanOpt) *reluNanOpt = d->nan;
  if (coef) *coef = d->coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double beta) {
  if (!d || d->magic != ACT_MAGIC) return CUDNN_STATUS_BAD_PARAM;
  d->swish_beta = beta;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t d, double *beta) {
  if (!d || d->magic != ACT_MAGIC || !beta) return CUDNN_STATUS_BAD_PARAM;
  *beta = d->swish_beta;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- building and checking a problem ---- */

/* Fill a problem from descriptors and check it: BAD_PARAM for inconsistent
 * descriptors (the real library's answer), NOT_SUPPORTED* for valid
 * configurations simcuda does not implement. */
static cudnnStatus_t build(simcudnn_conv_kind kind, cudnnTensorDescriptor_t x,
                           cudnnFilterDescriptor_t w, cudnnConvolutionDescriptor_t conv,
                           cudnnTensorDescriptor_t y, simcudnn_conv_problem *p) {
  if (!tensor_ok(x) || !filter_ok(w) || !conv_ok(conv) || !tensor_ok(y))
    return CUDNN_STATUS_BAD_PARAM;
  memset(p, 0, sizeof *p);
  p->kind = kind;
  p->x = x->t;
  p->w = w->t;
  p->y = y->t;
  p->geom = conv->g;
  p->geom.groups = conv->groups;
  if (x->t.dtype != w->t.dtype || x->t.dtype != y->t.dtype) {
    simcudnn_set_error("simcuda cuDNN: x/w/y data types differ");
    return CUDNN_STATUS_BAD_PARAM;
  }
  cudnnStatus_t st = simcudnn_conv_check_shapes(p, CUDNN_STATUS_BAD_PARAM);
  if (st) return st;
  p->math = simcudnn_conv_math(conv->math, p);
  return simcudnn_conv_check_types(p);
}

static bool algo_ok(int algo, int count) {
  return algo >= 0 && algo < count;
}

/* Which algorithm runs which problem, and the workspace it needs. Only what
 * a source says is encoded:
 * - forward DIRECT is not implemented, and forward WINOGRAD needs a 3x3
 *   filter (NVIDIA's answer on the developer forum, "CUDNN_STATUS_NOT_
 *   SUPPORTED for algo 6 and 3", forums.developer.nvidia.com/t/165802/3)
 *   with stride 1 (the cuDNN API reference, "Supported Algorithms for
 *   cudnnConvolutionForward() 2D Convolutions"): 2-D only;
 * - backward filter WINOGRAD is "Not implemented" (cudnnConvolutionBwd
 *   FilterAlgo_t in the cuDNN API reference);
 * - FFT, FFT_TILING and WINOGRAD_NONFUSED need workspace ("a significant
 *   memory workspace is needed", the same enum descriptions): simcuda asks
 *   for twice the x, w and y spans, its own amount, not the real library's.
 * Anything else outside an algorithm's support (FFT's size limits, the
 * data-type tables) is not encoded: no source was at hand. */
static bool winograd_3x3_stride_1(const simcudnn_conv_problem *p) {
  if (p->geom.spatial != 2 || p->w.dims[2] != 3 || p->w.dims[3] != 3) return false;
  return p->geom.stride[0] == 1 && p->geom.stride[1] == 1;
}

static size_t transform_workspace(const simcudnn_conv_problem *p) {
  return 2 * (size_t)(simcudnn_tensor_span_bytes(&p->x) + simcudnn_tensor_span_bytes(&p->w) +
                      simcudnn_tensor_span_bytes(&p->y));
}

/* NOT_SUPPORTED for a problem the algorithm does not run; else SUCCESS and
 * the workspace it needs. */
static cudnnStatus_t algo_plan(const simcudnn_conv_problem *p, int algo, size_t *workspace) {
  bool unsupported = false, transform = false;
  switch (p->kind) {
  case SIMCUDNN_FPROP:
    unsupported = algo == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT ||
                  (algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD && !winograd_3x3_stride_1(p));
    transform = algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
                algo == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
                algo == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    break;
  case SIMCUDNN_DGRAD:
    transform = algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT ||
                algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING ||
                algo == CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    break;
  default:
    unsupported = algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD;
    transform = algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT ||
                algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING ||
                algo == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
    break;
  }
  if (unsupported) {
    simcudnn_set_error("simcuda cuDNN: algorithm %d does not run this convolution", algo);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  *workspace = transform ? transform_workspace(p) : 0;
  return CUDNN_STATUS_SUCCESS;
}

/* The execution calls: the algorithm must run the problem, and the caller's
 * workspace be as large as the query said. Less is refused with
 * CUDNN_STATUS_ALLOC_FAILED, the status the cuDNN API reference gives
 * (cudnnConvolution*AlgoPerf_t: "if the provided workspace is
 * insufficient"); no text for the execution calls themselves was found, so
 * this is a choice the fidelity probe checks on a GPU. */
static cudnnStatus_t algo_run_ok(const simcudnn_conv_problem *p, int algo, size_t given) {
  size_t need = 0;
  cudnnStatus_t st = algo_plan(p, algo, &need);
  if (st) return st;
  if (given < need) {
    simcudnn_set_error("simcuda cuDNN: algorithm %d needs %zu bytes of workspace, got %zu", algo,
                       need, given);
    return CUDNN_STATUS_ALLOC_FAILED;
  }
  return CUDNN_STATUS_SUCCESS;
}

/* ---- workspace and algorithm queries ---- */

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y,
    cudnnConvolutionFwdAlgo_t algo, size_t *size) {
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !size || !algo_ok(algo, CUDNN_CONVOLUTION_FWD_ALGO_COUNT))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_FPROP, x, w, conv, y, &p);
  if (st) return st;
  return algo_plan(&p, algo, size);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, size_t *size) {
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !size || !algo_ok(algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_DGRAD, dx, w, conv, dy, &p);
  if (st) return st;
  return algo_plan(&p, algo, size);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t *size) {
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !size || !algo_ok(algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_WGRAD, x, dw, conv, dy, &p);
  if (st) return st;
  return algo_plan(&p, algo, size);
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t h, int *count) {
  if (!simcudnn_handle_ok(h) || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t h, int *count) {
  if (!simcudnn_handle_ok(h) || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t h, int *count) {
  if (!simcudnn_handle_ok(h) || !count) return CUDNN_STATUS_BAD_PARAM;
  *count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  return CUDNN_STATUS_SUCCESS;
}

/* The heuristics answer with one algorithm: the implicit-GEMM one whose
 * kernel simcuda reports, with the descriptor's own math type so that
 * callers copying perf.mathType back (PyTorch does) change nothing. */
#define PERF_RESULT(perf, algo_value, conv)                                                        \
  do {                                                                                             \
    memset((perf), 0, sizeof *(perf));                                                             \
    (perf)->algo = (algo_value);                                                                   \
    (perf)->status = CUDNN_STATUS_SUCCESS;                                                         \
    (perf)->time = -1.0f;                                                                          \
    (perf)->memory = 0;                                                                            \
    (perf)->determinism = CUDNN_DETERMINISTIC;                                                     \
    (perf)->mathType = (conv)->math;                                                               \
  } while (0)

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, const int requested,
    int *returned, cudnnConvolutionFwdAlgoPerf_t *perf) {
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !returned || !perf || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_FPROP, x, w, conv, y, &p);
  if (st) return st;
  PERF_RESULT(&perf[0], CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, conv);
  *returned = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t h, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, const int requested,
    int *returned, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !returned || !perf || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_DGRAD, dx, w, conv, dy, &p);
  if (st) return st;
  PERF_RESULT(&perf[0], CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, conv);
  *returned = 1;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t h, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
    const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, const int requested,
    int *returned, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !returned || !perf || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_WGRAD, x, dw, conv, dy, &p);
  if (st) return st;
  PERF_RESULT(&perf[0], CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, conv);
  *returned = 1;
  return CUDNN_STATUS_SUCCESS;
}

/* ---- the convolutions ---- */

/* alpha/beta point to floats for float/half/bfloat16 data (double only for double data). */
static cudnnStatus_t scalars(const void *alpha, const void *beta, simcudnn_conv_problem *p) {
  if (!alpha || !beta) return CUDNN_STATUS_BAD_PARAM;
  p->alpha = *(const float *)alpha;
  p->beta = *(const float *)beta;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha,
                                      const cudnnTensorDescriptor_t xDesc, const void *x,
                                      const cudnnFilterDescriptor_t wDesc, const void *w,
                                      const cudnnConvolutionDescriptor_t conv,
                                      cudnnConvolutionFwdAlgo_t algo, void *workSpace,
                                      size_t workSpaceSizeInBytes, const void *beta,
                                      const cudnnTensorDescriptor_t yDesc, void *y) {
  (void)workSpace; /* host loops: the workspace is only checked for size */
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !x || !w || !y || !algo_ok(algo, CUDNN_CONVOLUTION_FWD_ALGO_COUNT))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_FPROP, xDesc, wDesc, conv, yDesc, &p);
  if (!st) st = scalars(alpha, beta, &p);
  if (!st) st = algo_run_ok(&p, algo, workSpaceSizeInBytes);
  if (st) return st;
  p.x_ptr = (void *)x;
  p.w_ptr = (void *)w;
  p.y_ptr = y;
  return simcudnn_conv_run(h, &p);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha,
                                           const cudnnFilterDescriptor_t wDesc, const void *w,
                                           const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                           const cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *workSpace,
                                           size_t workSpaceSizeInBytes, const void *beta,
                                           const cudnnTensorDescriptor_t dxDesc, void *dx) {
  (void)workSpace;
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !w || !dy || !dx ||
      !algo_ok(algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_DGRAD, dxDesc, wDesc, conv, dyDesc, &p);
  if (!st) st = scalars(alpha, beta, &p);
  if (!st) st = algo_run_ok(&p, algo, workSpaceSizeInBytes);
  if (st) return st;
  p.x_ptr = dx;
  p.w_ptr = (void *)w;
  p.y_ptr = (void *)dy;
  return simcudnn_conv_run(h, &p);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha,
                                             const cudnnTensorDescriptor_t xDesc, const void *x,
                                             const cudnnTensorDescriptor_t dyDesc, const void *dy,
                                             const cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void *workSpace,
                                             size_t workSpaceSizeInBytes, const void *beta,
                                             const cudnnFilterDescriptor_t dwDesc, void *dw) {
  (void)workSpace;
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !x || !dy || !dw ||
      !algo_ok(algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_WGRAD, xDesc, dwDesc, conv, dyDesc, &p);
  if (!st) st = scalars(alpha, beta, &p);
  if (!st) st = algo_run_ok(&p, algo, workSpaceSizeInBytes);
  if (st) return st;
  p.x_ptr = (void *)x;
  p.w_ptr = dw;
  p.y_ptr = (void *)dy;
  return simcudnn_conv_run(h, &p);
}

static bool same_shape(const simcudnn_tensor *a, const simcudnn_tensor *b) {
  if (a->nb_dims != b->nb_dims || a->dtype != b->dtype) return false;
  for (int i = 0; i < a->nb_dims; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* Bias is 1 x K x 1 x ... x 1, one value per output channel. */
static bool bias_shape_ok(const simcudnn_tensor *b, const simcudnn_tensor *y) {
  if (b->nb_dims != y->nb_dims || simcudnn_dtype_size(b->dtype) == 0) return false;
  for (int i = 0; i < b->nb_dims; i++)
    if (b->dims[i] != (i == 1 ? y->dims[1] : 1)) return false;
  return true;
}

cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void *alpha1, const cudnnTensorDescriptor_t xDesc, const void *x,
    const cudnnFilterDescriptor_t wDesc, const void *w, const cudnnConvolutionDescriptor_t conv,
    cudnnConvolutionFwdAlgo_t algo, void *workSpace, size_t workSpaceSizeInBytes,
    const void *alpha2, const cudnnTensorDescriptor_t zDesc, const void *z,
    const cudnnTensorDescriptor_t biasDesc, const void *bias, const cudnnActivationDescriptor_t act,
    const cudnnTensorDescriptor_t yDesc, void *y) {
  (void)workSpace;
  simcudnn_conv_problem p;
  if (!simcudnn_handle_ok(h) || !x || !w || !y || !z || !bias ||
      !algo_ok(algo, CUDNN_CONVOLUTION_FWD_ALGO_COUNT) || !act || act->magic != ACT_MAGIC ||
      !tensor_ok(zDesc) || !tensor_ok(biasDesc))
    return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = build(SIMCUDNN_FPROP, xDesc, wDesc, conv, yDesc, &p);
  if (!st) st = scalars(alpha1, alpha2, &p);
  if (!st) st = algo_run_ok(&p, algo, workSpaceSizeInBytes);
  if (st) return st;
  if (!same_shape(&zDesc->t, &yDesc->t) || !bias_shape_ok(&biasDesc->t, &yDesc->t)) {
    simcudnn_set_error("simcuda cuDNN: z must match y; bias must be 1xKx1x1");
    return CUDNN_STATUS_BAD_PARAM;
  }
  /* Documented: IDENTITY only with IMPLICIT_PRECOMP_GEMM; RELU with any algorithm. */
  if (act->mode == CUDNN_ACTIVATION_IDENTITY &&
      algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
    simcudnn_set_error("simcuda cuDNN: IDENTITY activation needs IMPLICIT_PRECOMP_GEMM");
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  if (act->mode != CUDNN_ACTIVATION_IDENTITY && act->mode != CUDNN_ACTIVATION_RELU) {
    simcudnn_set_error("simcuda cuDNN: activation %d not implemented (RELU, IDENTITY)", act->mode);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  p.alpha2 = p.beta; /* scalars() read alpha2 into beta: the z term replaces beta * y */
  p.beta = 0.0f;
  p.epilogue = true;
  p.z = &zDesc->t;
  p.z_ptr = z;
  p.bias = &biasDesc->t;
  p.bias_ptr = bias;
  p.relu = act->mode == CUDNN_ACTIVATION_RELU;
  p.x_ptr = (void *)x;
  p.w_ptr = (void *)w;
  p.y_ptr = y;
  return simcudnn_conv_run(h, &p);
}
