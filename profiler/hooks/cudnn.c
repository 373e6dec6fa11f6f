/* Legacy cuDNN convolution hooks (libcudnn.so.9): forward, fused
 * bias-activation forward, backward data, backward filter. Their descriptors
 * can be queried, so decoding reads tensor, filter and convolution
 * descriptors back through the getters. (The backend API, which PyTorch uses
 * by default, is shadowed in cudnn_backend.c; legacy convolution does not go
 * through cudnnBackendExecute, so the two never count one op twice.) */
#include <cudnn.h>

#include "conv_decode.h"
#include "cudnn_common.h"
#include "gemm_decode.h"
#include "hook.h"

#define MPP_MODULE_SONAME "libcudnn.so.9"
#define MPP_MODULE_SYMS(X)                                                                         \
  X(cudnnConvolutionForward)                                                                       \
  X(cudnnConvolutionBiasActivationForward)                                                         \
  X(cudnnConvolutionBackwardData)                                                                  \
  X(cudnnConvolutionBackwardFilter)                                                                \
  X(cudnnGetTensorNdDescriptor)                                                                    \
  X(cudnnGetFilterNdDescriptor)                                                                    \
  X(cudnnGetConvolutionNdDescriptor)                                                               \
  X(cudnnGetConvolutionMathType)                                                                   \
  X(cudnnGetConvolutionGroupCount)                                                                 \
  X(cudnnGetActivationDescriptor)                                                                  \
  X(cudnnGetStream)
MPP_MODULE_TABLE(syms)

/* A tensor's type, rank, dims and strides, written into a zeroed key. */
static bool tensor_desc(cudnnTensorDescriptor_t d, mpp_conv_key_tensor *t) {
  __typeof__(&cudnnGetTensorNdDescriptor) get = MPP_REAL(syms, cudnnGetTensorNdDescriptor);
  cudnnDataType_t dt;
  int nd = 0;
  if (!get || !d ||
      get(d, MPP_CONV_MAX_DIMS, &dt, &nd, t->dims, t->strides) != CUDNN_STATUS_SUCCESS || nd < 1 ||
      nd > MPP_CONV_MAX_DIMS)
    return false;
  t->dtype = (int32_t)dt;
  t->nd = nd;
  return true;
}

/* A filter's type, format, rank and dims (logical K, C, R, S whatever the
 * format; no strides: filters are packed), written into a zeroed key. */
static bool filter_desc(cudnnFilterDescriptor_t d, mpp_conv_key_tensor *t) {
  __typeof__(&cudnnGetFilterNdDescriptor) get = MPP_REAL(syms, cudnnGetFilterNdDescriptor);
  cudnnDataType_t dt;
  cudnnTensorFormat_t fmt;
  int nd = 0;
  if (!get || !d || get(d, MPP_CONV_MAX_DIMS, &dt, &fmt, &nd, t->dims) != CUDNN_STATUS_SUCCESS ||
      nd < 1 || nd > MPP_CONV_MAX_DIMS)
    return false;
  t->dtype = (int32_t)dt;
  t->nd = nd;
  t->format = (int32_t)fmt;
  return true;
}

/* The convolution's compute type, spatial rank, mode, and its first two
 * pads, strides and dilations, written into a zeroed key (groups: asked
 * only for shadow execution, decode). */
static bool conv_desc(cudnnConvolutionDescriptor_t d, mpp_conv_key *k) {
  __typeof__(&cudnnGetConvolutionNdDescriptor) get =
      MPP_REAL(syms, cudnnGetConvolutionNdDescriptor);
  int n = 0, pad[MPP_CONV_MAX_DIMS], stride[MPP_CONV_MAX_DIMS], dil[MPP_CONV_MAX_DIMS];
  cudnnConvolutionMode_t mode;
  cudnnDataType_t comp;
  if (!get || !d ||
      get(d, MPP_CONV_MAX_DIMS - 2, &n, pad, stride, dil, &mode, &comp) != CUDNN_STATUS_SUCCESS)
    return false;
  k->comp_type = (int32_t)comp;
  k->nsp = n;
  k->mode = (int32_t)mode;
  for (int i = 0; i < MPP_CONV_MAX_SPATIAL; i++) {
    k->pad[i] = i < n ? pad[i] : 0;
    k->stride[i] = i < n ? stride[i] : 1;
    k->dilation[i] = i < n ? dil[i] : 1;
  }
  return true;
}

/* The descriptor's math type decides whether Tensor Cores (and down-conversion
 * to them) are allowed: FMA_MATH forbids them. */
static const char *math_type_of(cudnnConvolutionDescriptor_t d) {
  static const char *const names[] = {"DEFAULT_MATH", "TENSOR_OP_MATH",
                                      "TENSOR_OP_MATH_ALLOW_CONVERSION", "FMA_MATH"};
  __typeof__(&cudnnGetConvolutionMathType) get = MPP_REAL(syms, cudnnGetConvolutionMathType);
  cudnnMathType_t t;
  if (!get || get(d, &t) != CUDNN_STATUS_SUCCESS || (unsigned)t >= 4) return NULL;
  return names[t];
}

void *mpp_cudnn_stream(cudnnHandle_t h) {
  __typeof__(&cudnnGetStream) get = MPP_REAL(syms, cudnnGetStream);
  cudaStream_t s = NULL;
  if (get && h && get(h, &s) == CUDNN_STATUS_SUCCESS) return s;
  return NULL;
}

/* Descriptors in role order (see mpp_conv_decode); filter_index marks which
 * one is w. alpha: the call's (shadow execution; the fused bias-activation
 * forward's alpha1, its epilogue added by decode_fused), NULL when unknown.
 * beta: the call's; non-zero, the output's prior value is read too (an input
 * role of its own, mpp_conv_add_prior). The getters write into the memo's
 * key (mpp_conv_decode_memo_key: decoded once per key); with shadow execution,
 * or `afresh`, the op is decoded into scratch, with what shadow execution
 * reads besides (alpha, the group count). */
static mpp_op *decode_conv(mpp_op *scratch, const char *api, mpp_op_kind kind, cudnnHandle_t h,
                           const void *alpha, const void *beta, const void *d0, const void *d1,
                           const void *d2, int filter_index, cudnnConvolutionDescriptor_t cd,
                           const void *p0, const void *p1, const void *p2, bool afresh) {
  mpp_conv_key k;
  memset(&k, 0, sizeof k); /* all of it: the memo compares its bytes */
  const void *d[3] = {d0, d1, d2};
  for (int i = 0; i < 3; i++) {
    bool ok = i == filter_index ? filter_desc((cudnnFilterDescriptor_t)d[i], &k.t[i])
                                : tensor_desc((cudnnTensorDescriptor_t)d[i], &k.t[i]);
    if (!ok) return NULL;
  }
  if (!conv_desc(cd, &k)) return NULL;
  k.api = api;
  k.kind = (int32_t)kind;
  k.conv_math = math_type_of(cd);
  k.stream = mpp_cudnn_stream(h);
  k.blend = mpp_cudnn_scale_nonzero(beta, k.t[2].dtype);
  if (!mpp_cfg.shadow && !afresh) return mpp_conv_decode_memo_key(scratch, &k, p0, p1, p2);
  mpp_tensor_desc t[3];
  mpp_conv_desc c;
  mpp_conv_key_descs(&k, t, &c);
  mpp_conv_decode_call(scratch, api, kind, t, &c, k.conv_math, k.stream, p0, p1, p2);
  if (k.blend) mpp_conv_add_prior(scratch, &t[2], p2);
  if (!mpp_cfg.shadow) return scratch;
  /* what shadow execution needs besides (one more query) */
  __typeof__(&cudnnGetConvolutionGroupCount) groups = MPP_REAL(syms, cudnnGetConvolutionGroupCount);
  int gc = 0;
  c.groups = groups && groups(cd, &gc) == CUDNN_STATUS_SUCCESS ? gc : 0;
  mpp_conv_shadow_of(scratch, &t[0], &t[1], &t[2], &c, alpha);
  return scratch;
}

static mpp_op *decode(mpp_op *scratch, const char *api, mpp_op_kind kind, cudnnHandle_t h,
                      const void *alpha, const void *beta, const void *d0, const void *d1,
                      const void *d2, int filter_index, cudnnConvolutionDescriptor_t cd,
                      const void *p0, const void *p1, const void *p2) {
  return decode_conv(scratch, api, kind, h, alpha, beta, d0, d1, d2, filter_index, cd, p0, p1, p2,
                     false);
}

/* A tensor of the fused forward's epilogue (z, bias) as an input role; its
 * descriptor in *t (false: not read back). */
static bool epilogue_role(mpp_op *op, const char *name, cudnnTensorDescriptor_t d, const void *p,
                          mpp_tensor_desc *t) {
  mpp_conv_key_tensor kt;
  memset(&kt, 0, sizeof kt);
  bool known = tensor_desc(d, &kt);
  *t = (mpp_tensor_desc){.dtype = kt.dtype, .nd = kt.nd};
  for (int i = 0; i < kt.nd; i++) {
    t->dims[i] = kt.dims[i];
    t->strides[i] = kt.strides[i];
  }
  mpp_role *r = mpp_op_role(op, name, true);
  if (!r) return known;
  if (!known) {
    r->unscannable = MPP_NS_LAYOUT; /* its shape is not known: read, but not scanned */
    r->view.data = p;
    return false;
  }
  mpp_conv_tensor_view(r, t, p);
  mpp_op_note_ptr(op, p);
  return true;
}

/* Is the activation ReLU (else the identity, *relu false)? Any other mode,
 * or one not read back: false. */
static bool activation_mode(cudnnActivationDescriptor_t a, bool *relu) {
  __typeof__(&cudnnGetActivationDescriptor) get = MPP_REAL(syms, cudnnGetActivationDescriptor);
  cudnnActivationMode_t mode;
  cudnnNanPropagation_t nan_opt;
  double coef;
  if (!get || !a || get(a, &mode, &nan_opt, &coef) != CUDNN_STATUS_SUCCESS) return false;
  *relu = mode == CUDNN_ACTIVATION_RELU;
  return *relu || mode == CUDNN_ACTIVATION_IDENTITY;
}

/* cudnnConvolutionBiasActivationForward: y = act(alpha1 conv(x) + alpha2 z +
 * bias). Besides x and w it reads z (unless alpha2 is 0, as the output with
 * beta 0: cuDNN's scaling rule) and the bias, one value per output channel:
 * input roles of their own. Decoded afresh (their descriptors are not in the
 * memo's key); y is not blended (no beta). Shadow execution measures
 * act(alpha1 conv(x) + bias), as a cuBLASLt bias epilogue (z is left out,
 * as a GEMM's C is). */
static mpp_op *decode_fused(mpp_op *scratch, cudnnHandle_t h, const void *alpha1,
                            cudnnTensorDescriptor_t xd, cudnnFilterDescriptor_t wd,
                            cudnnTensorDescriptor_t yd, cudnnConvolutionDescriptor_t cd,
                            const void *x, const void *w, const void *y, const void *alpha2,
                            cudnnTensorDescriptor_t zd, const void *z, cudnnTensorDescriptor_t bd,
                            const void *bias, cudnnActivationDescriptor_t ad) {
  static const float zero = 0;
  mpp_op *op = decode_conv(scratch, "cudnnConvolutionBiasActivationForward", MPP_OP_CONV_FWD, h,
                           alpha1, &zero, xd, wd, yd, 1, cd, x, w, y, true);
  if (!op) return NULL;
  mpp_conv_key_tensor yt;
  memset(&yt, 0, sizeof yt);
  mpp_tensor_desc zt, bt;
  if (mpp_cudnn_scale_nonzero(alpha2, tensor_desc(yd, &yt) ? yt.dtype : CUDNN_DATA_FLOAT))
    epilogue_role(op, "z", zd, z, &zt);
  bool bias_known = epilogue_role(op, "bias", bd, bias, &bt), relu = false;
  if (!op->conv_shadow) return op; /* not shadowed: the activation is not asked */
  if (!bias_known || !activation_mode(ad, &relu))
    op->conv_shadow = false;
  else
    mpp_conv_shadow_bias_act(op, &bt, bias, relu);
  return op;
}

#define FAIL CUDNN_STATUS_NOT_INITIALIZED

MPP_MEMO_OP_HOOK(syms, cudnnStatus_t, cudnnConvolutionForward,
                 (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
                  const void *x, const cudnnFilterDescriptor_t wDesc, const void *w,
                  const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                  void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                  const cudnnTensorDescriptor_t yDesc, void *y),
                 (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace,
                  workSpaceSizeInBytes, beta, yDesc, y),
                 FAIL, mpp_cudnn_succeeded, decode,
                 ("cudnnConvolutionForward", MPP_OP_CONV_FWD, handle, alpha, beta, xDesc, wDesc,
                  yDesc, 1, convDesc, x, w, y))

MPP_MEMO_OP_HOOK(syms, cudnnStatus_t, cudnnConvolutionBiasActivationForward,
                 (cudnnHandle_t handle, const void *alpha1, const cudnnTensorDescriptor_t xDesc,
                  const void *x, const cudnnFilterDescriptor_t wDesc, const void *w,
                  const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
                  void *workSpace, size_t workSpaceSizeInBytes, const void *alpha2,
                  const cudnnTensorDescriptor_t zDesc, const void *z,
                  const cudnnTensorDescriptor_t biasDesc, const void *bias,
                  const cudnnActivationDescriptor_t activationDesc,
                  const cudnnTensorDescriptor_t yDesc, void *y),
                 (handle, alpha1, xDesc, x, wDesc, w, convDesc, algo, workSpace,
                  workSpaceSizeInBytes, alpha2, zDesc, z, biasDesc, bias, activationDesc, yDesc, y),
                 FAIL, mpp_cudnn_succeeded, decode_fused,
                 (handle, alpha1, xDesc, wDesc, yDesc, convDesc, x, w, y, alpha2, zDesc, z,
                  biasDesc, bias, activationDesc))

MPP_MEMO_OP_HOOK(syms, cudnnStatus_t, cudnnConvolutionBackwardData,
                 (cudnnHandle_t handle, const void *alpha, const cudnnFilterDescriptor_t wDesc,
                  const void *w, const cudnnTensorDescriptor_t dyDesc, const void *dy,
                  const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
                  void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                  const cudnnTensorDescriptor_t dxDesc, void *dx),
                 (handle, alpha, wDesc, w, dyDesc, dy, convDesc, algo, workSpace,
                  workSpaceSizeInBytes, beta, dxDesc, dx),
                 FAIL, mpp_cudnn_succeeded, decode,
                 ("cudnnConvolutionBackwardData", MPP_OP_CONV_BWD_DATA, handle, alpha, beta, dyDesc,
                  wDesc, dxDesc, 1, convDesc, dy, w, dx))

MPP_MEMO_OP_HOOK(syms, cudnnStatus_t, cudnnConvolutionBackwardFilter,
                 (cudnnHandle_t handle, const void *alpha, const cudnnTensorDescriptor_t xDesc,
                  const void *x, const cudnnTensorDescriptor_t dyDesc, const void *dy,
                  const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
                  void *workSpace, size_t workSpaceSizeInBytes, const void *beta,
                  const cudnnFilterDescriptor_t dwDesc, void *dw),
                 (handle, alpha, xDesc, x, dyDesc, dy, convDesc, algo, workSpace,
                  workSpaceSizeInBytes, beta, dwDesc, dw),
                 FAIL, mpp_cudnn_succeeded, decode,
                 ("cudnnConvolutionBackwardFilter", MPP_OP_CONV_BWD_FILTER, handle, alpha, beta,
                  xDesc, dyDesc, dwDesc, 2, convDesc, x, dy, dw))
