/* conv_train: a two-layer CNN trained for a few steps through cuDNN, the
 * convolution sample mpprof is tested on.
 *
 * conv1 (8 -> 16 channels, 3x3, pad 1) -> ReLU -> conv2 (16 -> 16) -> MSE loss.
 * Each step runs convolution forward (both layers), backward data (conv2) and
 * backward filter (both layers), either through the legacy API
 * (cudnnConvolutionForward / BackwardData / BackwardFilter with fixed
 * algorithms) or through the backend API the way cudnn-frontend and PyTorch
 * drive it: tensor and convolution descriptors, an operation graph per
 * operation, engine heuristics (mode A), the first engine config whose
 * execution plan finalizes, and a fresh variant pack (UIDs 'x', 'w', 'y') for
 * every execution. ReLU, the loss and the SGD update run on the host; every
 * operand is copied to and from device memory as on a real GPU.
 *
 * --groups G makes conv2 a grouped convolution of G groups (16 / G input
 * channels per filter; 16: depthwise, as MobileNet's and ConvNeXt's).
 *
 * NVTX: step / cnn / convN / {fwd,bwd}, step / cnn / loss, step / optimizer.
 * The first step checks every convolution against a host computation and
 * exits non-zero if one is off. Prints the final loss and a weight checksum. */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <cudnn.h>
#include <nvtx3/nvToolsExt.h>

#include "sample_util.h"

enum { N = 4, C0 = 8, C1 = 16, C2 = 16, HW = 16, R = 3, PAD = 1 };
enum { OP_FWD, OP_BWD_DATA, OP_BWD_FILTER, OP_KINDS };
static const char *const op_names[] = {"forward", "backward data", "backward filter"};

#define LEARNING_RATE 2.0

typedef enum api { API_LEGACY, API_BACKEND } api;
typedef enum precision { PREC_FP32, PREC_FP16 } precision;

typedef struct options {
  api api;
  precision prec;
  int steps;
  int groups; /* conv2's */
  unsigned long long seed;
} options;

/* A device tensor in the run's dtype and its host staging image. */
typedef struct dtensor {
  void *dev;
  void *stage;
  size_t n;
} dtensor;

typedef struct conv_layer {
  const char *name;
  int c, k;   /* input and output channels */
  int groups; /* filter k reads the c / groups channels of its group */
  float *w, *dw;
  dtensor d_w, d_dw;
  /* legacy */
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  /* backend: one plan per operation kind, and every descriptor behind it */
  cudnnBackendDescriptor_t plan[OP_KINDS];
  cudnnBackendDescriptor_t keep[OP_KINDS][8];
  int n_keep[OP_KINDS];
  cudnnBackendDescriptor_t *cfgs[OP_KINDS];
  int64_t n_cfgs[OP_KINDS];
} conv_layer;

typedef struct run {
  options opt;
  su_rng rng;
  cudaStream_t stream;
  cudnnHandle_t handle;
  cudnnDataType_t dt;
  size_t elem;
  void *workspace;
  size_t workspace_size;
  conv_layer l1, l2;
  float *x, *y1, *a1, *y2, *t, *dy2, *da1, *dy1;
  dtensor d_x, d_y1, d_a1, d_y2, d_dy2, d_da1, d_dy1;
  bool verify;
  double loss;
} run;

static size_t tensor_size(int c) {
  return (size_t)N * c * HW * HW;
}

static float *host_alloc(size_t n) {
  float *p = calloc(n, sizeof *p);
  if (!p) su_die("out of host memory");
  return p;
}

/* ---------- device transfers ---------- */

static void dtensor_alloc(run *r, dtensor *t, size_t n) {
  t->n = n;
  SU_CHECK_CUDA(cudaMalloc(&t->dev, n * r->elem));
  t->stage = malloc(n * r->elem);
  if (!t->stage) su_die("out of host memory");
}

static void dtensor_free(dtensor *t) {
  SU_CHECK_CUDA(cudaFree(t->dev));
  free(t->stage);
}

static float round_value(const run *r, float v) {
  return r->opt.prec == PREC_FP16 ? su_f16_to_f32(su_f32_to_f16(v)) : v;
}

static void upload(run *r, dtensor *t, const float *src) {
  if (r->opt.prec == PREC_FP16) {
    uint16_t *h = t->stage;
    for (size_t i = 0; i < t->n; i++)
      h[i] = su_f32_to_f16(src[i]);
  } else {
    memcpy(t->stage, src, t->n * 4);
  }
  SU_CHECK_CUDA(
      cudaMemcpyAsync(t->dev, t->stage, t->n * r->elem, cudaMemcpyHostToDevice, r->stream));
}

static void download(run *r, dtensor *t, float *dst) {
  SU_CHECK_CUDA(
      cudaMemcpyAsync(t->stage, t->dev, t->n * r->elem, cudaMemcpyDeviceToHost, r->stream));
  SU_CHECK_CUDA(cudaStreamSynchronize(r->stream));
  if (r->opt.prec == PREC_FP16) {
    const uint16_t *h = t->stage;
    for (size_t i = 0; i < t->n; i++)
      dst[i] = su_f16_to_f32(h[i]);
  } else {
    memcpy(dst, t->stage, t->n * 4);
  }
}

/* ---------- host reference ---------- */

/* Filter values: k filters of c / groups channels each. */
static size_t wsize(const conv_layer *L) {
  return (size_t)L->k * (size_t)(L->c / L->groups) * R * R;
}

static size_t at(int c_total, int n, int c, int h, int w) {
  return (((size_t)n * c_total + c) * HW + h) * HW + w;
}

static size_t wat(int c_total, int k, int c, int r, int s) {
  return (((size_t)k * c_total + c) * R + r) * R + s;
}

/* Check one operation's output against the direct sum over the rounded
 * operands. Tolerance: accumulation error relative to sum |a||b| (loose
 * enough for the Winograd / FFT engines a GPU's heuristics may pick, far
 * below what a wrong layout or index gives), plus the rounding of the output
 * to the run's dtype. */
static void verify_conv(const run *r, const conv_layer *L, int kind, const float *in,
                        const float *other, const float *got) {
  double tol = r->opt.prec == PREC_FP16 ? 0x1p-9 : 0x1p-12;
  double out_round = r->opt.prec == PREC_FP16 ? 0x1p-10 : 0x1p-22;
  double out_abs = r->opt.prec == PREC_FP16 ? 0x1p-24 : 0;
  size_t n_out = kind == OP_FWD        ? tensor_size(L->k)
                 : kind == OP_BWD_DATA ? tensor_size(L->c)
                                       : wsize(L);
  int cg = L->c / L->groups, kg = L->k / L->groups; /* one group's channels, filters */
  for (size_t o = 0; o < n_out; o++) {
    double sum = 0, mag = 0;
    if (kind == OP_FWD) { /* in = x, other = w */
      int w = o % HW, h = (o / HW) % HW, k = (o / (HW * HW)) % L->k, n = o / (HW * HW * L->k);
      for (int c = k / kg * cg; c < (k / kg + 1) * cg; c++)
        for (int a = 0; a < R; a++)
          for (int b = 0; b < R; b++) {
            int hh = h + a - PAD, ww = w + b - PAD;
            if (hh < 0 || hh >= HW || ww < 0 || ww >= HW) continue;
            double p = (double)round_value(r, in[at(L->c, n, c, hh, ww)]) *
                       round_value(r, other[wat(cg, k, c % cg, a, b)]);
            sum += p;
            mag += fabs(p);
          }
    } else if (kind == OP_BWD_DATA) { /* in = dy, other = w */
      int w = o % HW, h = (o / HW) % HW, c = (o / (HW * HW)) % L->c, n = o / (HW * HW * L->c);
      for (int k = c / cg * kg; k < (c / cg + 1) * kg; k++)
        for (int a = 0; a < R; a++)
          for (int b = 0; b < R; b++) {
            int hh = h - a + PAD, ww = w - b + PAD;
            if (hh < 0 || hh >= HW || ww < 0 || ww >= HW) continue;
            double p = (double)round_value(r, in[at(L->k, n, k, hh, ww)]) *
                       round_value(r, other[wat(cg, k, c % cg, a, b)]);
            sum += p;
            mag += fabs(p);
          }
    } else { /* in = x, other = dy */
      int b = o % R, a = (o / R) % R, k = o / (R * R * cg), c = k / kg * cg + (o / (R * R)) % cg;
      for (int n = 0; n < N; n++)
        for (int h = 0; h < HW; h++)
          for (int w = 0; w < HW; w++) {
            int hh = h + a - PAD, ww = w + b - PAD;
            if (hh < 0 || hh >= HW || ww < 0 || ww >= HW) continue;
            double p = (double)round_value(r, in[at(L->c, n, c, hh, ww)]) *
                       round_value(r, other[at(L->k, n, k, h, w)]);
            sum += p;
            mag += fabs(p);
          }
    }
    double bound = tol * mag + out_round * fabs(sum) + out_abs;
    if (!(fabs(got[o] - sum) <= bound))
      su_die("verification failed (%s %s, %s API, %s): element %zu = %.9g, host %.9g "
             "(tolerance %.3g)",
             L->name, op_names[kind], r->opt.api == API_LEGACY ? "legacy" : "backend",
             r->opt.prec == PREC_FP16 ? "fp16" : "fp32", o, got[o], sum, bound);
  }
}

/* ---------- legacy API ---------- */

static const cudnnConvolutionFwdAlgo_t fwd_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
static const cudnnConvolutionBwdDataAlgo_t bwd_data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
static const cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;

static size_t legacy_setup(run *r, conv_layer *L) {
  SU_CHECK_STATUS(cudnnCreateTensorDescriptor(&L->xd), CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnCreateTensorDescriptor(&L->yd), CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnCreateFilterDescriptor(&L->wd), CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnCreateConvolutionDescriptor(&L->cd), CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnSetTensor4dDescriptor(L->xd, CUDNN_TENSOR_NCHW, r->dt, N, L->c, HW, HW),
                  CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnSetTensor4dDescriptor(L->yd, CUDNN_TENSOR_NCHW, r->dt, N, L->k, HW, HW),
                  CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(
      cudnnSetFilter4dDescriptor(L->wd, r->dt, CUDNN_TENSOR_NCHW, L->k, L->c / L->groups, R, R),
      CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnSetConvolution2dDescriptor(L->cd, PAD, PAD, 1, 1, 1, 1,
                                                  CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                  CUDNN_STATUS_SUCCESS);
  if (L->groups > 1)
    SU_CHECK_STATUS(cudnnSetConvolutionGroupCount(L->cd, L->groups), CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnSetConvolutionMathType(L->cd, r->opt.prec == PREC_FP16 ? CUDNN_TENSOR_OP_MATH
                                                                              : CUDNN_DEFAULT_MATH),
                  CUDNN_STATUS_SUCCESS);
  size_t a = 0, b = 0, c = 0;
  SU_CHECK_STATUS(
      cudnnGetConvolutionForwardWorkspaceSize(r->handle, L->xd, L->wd, L->cd, L->yd, fwd_algo, &a),
      CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnGetConvolutionBackwardDataWorkspaceSize(r->handle, L->wd, L->yd, L->cd,
                                                               L->xd, bwd_data_algo, &b),
                  CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnGetConvolutionBackwardFilterWorkspaceSize(r->handle, L->xd, L->yd, L->cd,
                                                                 L->wd, bwd_filter_algo, &c),
                  CUDNN_STATUS_SUCCESS);
  size_t m = a > b ? a : b;
  return m > c ? m : c;
}

static void legacy_destroy(conv_layer *L) {
  cudnnDestroyTensorDescriptor(L->xd);
  cudnnDestroyTensorDescriptor(L->yd);
  cudnnDestroyFilterDescriptor(L->wd);
  cudnnDestroyConvolutionDescriptor(L->cd);
}

/* out = op(in, other): fwd (x, w) -> y; bwd data (dy, w) -> dx; bwd filter (x, dy) -> dw. */
static void legacy_execute(run *r, conv_layer *L, int kind, void *in, void *other, void *out) {
  const float one = 1.0f, zero = 0.0f;
  cudnnStatus_t st;
  if (kind == OP_FWD)
    st = cudnnConvolutionForward(r->handle, &one, L->xd, in, L->wd, other, L->cd, fwd_algo,
                                 r->workspace, r->workspace_size, &zero, L->yd, out);
  else if (kind == OP_BWD_DATA)
    st =
        cudnnConvolutionBackwardData(r->handle, &one, L->wd, other, L->yd, in, L->cd, bwd_data_algo,
                                     r->workspace, r->workspace_size, &zero, L->xd, out);
  else
    st = cudnnConvolutionBackwardFilter(r->handle, &one, L->xd, in, L->yd, other, L->cd,
                                        bwd_filter_algo, r->workspace, r->workspace_size, &zero,
                                        L->wd, out);
  if (st != CUDNN_STATUS_SUCCESS)
    su_die("cuDNN legacy %s (%s) failed: %s", op_names[kind], L->name, cudnnGetErrorString(st));
}

/* ---------- backend API ---------- */

#define UID_X 'x'
#define UID_W 'w'
#define UID_Y 'y'

static void be_check(cudnnStatus_t st, const char *what) {
  if (st != CUDNN_STATUS_SUCCESS)
    su_die("cuDNN backend: %s failed: %s", what, cudnnGetErrorString(st));
}

static cudnnBackendDescriptor_t be_create(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d;
  be_check(cudnnBackendCreateDescriptor(type, &d), "cudnnBackendCreateDescriptor");
  return d;
}

static void be_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name,
                   cudnnBackendAttributeType_t type, int64_t count, const void *value) {
  cudnnStatus_t st = cudnnBackendSetAttribute(d, name, type, count, value);
  if (st != CUDNN_STATUS_SUCCESS)
    su_die("cuDNN backend: cudnnBackendSetAttribute(attribute %d) failed: %s", (int)name,
           cudnnGetErrorString(st));
}

static void keep(conv_layer *L, int kind, cudnnBackendDescriptor_t d) {
  L->keep[kind][L->n_keep[kind]++] = d;
}

static cudnnBackendDescriptor_t be_tensor(run *r, conv_layer *L, int kind, int64_t uid,
                                          const int64_t dims[4]) {
  int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  int64_t alignment = 16;
  cudnnBackendDescriptor_t t = be_create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  be_set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &r->dt);
  be_set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  be_set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  be_set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  be_set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  be_check(cudnnBackendFinalize(t), "finalize tensor");
  keep(L, kind, t);
  return t;
}

static cudnnBackendDescriptor_t be_conv_desc(conv_layer *L, int kind) {
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t dims = 2, ones[2] = {1, 1}, pads[2] = {PAD, PAD};
  cudnnBackendDescriptor_t c = be_create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  be_set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  be_set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  be_set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
  be_set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones);
  be_set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones);
  be_set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  be_set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  be_check(cudnnBackendFinalize(c), "finalize convolution descriptor");
  keep(L, kind, c);
  return c;
}

/* Operation -> graph -> heuristics -> first engine config whose plan finalizes. */
static size_t backend_build(run *r, conv_layer *L, int kind) {
  /* grouped: the filter's channels are one group's (the backend has no group count) */
  int64_t xdims[4] = {N, L->c, HW, HW}, ydims[4] = {N, L->k, HW, HW},
          wdims[4] = {L->k, L->c / L->groups, R, R};
  cudnnBackendDescriptor_t x = be_tensor(r, L, kind, UID_X, xdims);
  cudnnBackendDescriptor_t y = be_tensor(r, L, kind, UID_Y, ydims);
  cudnnBackendDescriptor_t w = be_tensor(r, L, kind, UID_W, wdims);
  cudnnBackendDescriptor_t conv = be_conv_desc(L, kind);
  float alpha = 1.0f, beta = 0.0f;
  static const cudnnBackendDescriptorType_t op_type[OP_KINDS] = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
  cudnnBackendDescriptor_t op = be_create(op_type[kind]);
  const cudnnBackendAttributeType_t D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  if (kind == OP_FWD) {
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &x);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &w);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &y);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &conv);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  } else if (kind == OP_BWD_DATA) {
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, D, 1, &x);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, D, 1, &w);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, D, 1, &y);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, D, 1, &conv);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  } else {
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, D, 1, &x);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, D, 1, &w);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, D, 1, &y);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, D, 1, &conv);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    be_set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  }
  be_check(cudnnBackendFinalize(op), "finalize convolution operation");
  keep(L, kind, op);

  cudnnBackendDescriptor_t graph = be_create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  be_set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, &op);
  be_set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &r->handle);
  be_check(cudnnBackendFinalize(graph), "finalize operation graph");
  keep(L, kind, graph);

  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  cudnnBackendDescriptor_t heur = be_create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  be_set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, D, 1, &graph);
  be_set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  be_check(cudnnBackendFinalize(heur), "finalize engine heuristics");
  keep(L, kind, heur);

  int64_t count = 0;
  be_check(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, 0, &count, NULL),
           "count engine heuristics results");
  if (count < 1) su_die("cuDNN backend: no engine config for %s %s", L->name, op_names[kind]);
  L->cfgs[kind] = calloc((size_t)count, sizeof *L->cfgs[kind]);
  if (!L->cfgs[kind]) su_die("out of host memory");
  for (int64_t i = 0; i < count; i++)
    L->cfgs[kind][i] = be_create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  be_check(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, count, &count,
                                    L->cfgs[kind]),
           "get engine heuristics results");
  L->n_cfgs[kind] = count;

  for (int64_t i = 0; i < count && !L->plan[kind]; i++) {
    cudnnBackendDescriptor_t plan = be_create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    be_set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &r->handle);
    be_set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D, 1, &L->cfgs[kind][i]);
    if (cudnnBackendFinalize(plan) == CUDNN_STATUS_SUCCESS)
      L->plan[kind] = plan;
    else
      cudnnBackendDestroyDescriptor(plan);
  }
  if (!L->plan[kind])
    su_die("cuDNN backend: no execution plan finalizes for %s %s", L->name, op_names[kind]);
  int64_t ws = 0, got = 0;
  be_check(cudnnBackendGetAttribute(L->plan[kind], CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                    CUDNN_TYPE_INT64, 1, &got, &ws),
           "get plan workspace size");
  return (size_t)ws;
}

static size_t backend_setup(run *r, conv_layer *L) {
  size_t ws = 0;
  for (int k = 0; k < OP_KINDS; k++) {
    size_t s = backend_build(r, L, k);
    if (s > ws) ws = s;
  }
  return ws;
}

static void backend_destroy(conv_layer *L) {
  for (int k = 0; k < OP_KINDS; k++) {
    if (L->plan[k]) cudnnBackendDestroyDescriptor(L->plan[k]);
    for (int64_t i = 0; i < L->n_cfgs[k]; i++)
      cudnnBackendDestroyDescriptor(L->cfgs[k][i]);
    free(L->cfgs[k]);
    for (int i = L->n_keep[k] - 1; i >= 0; i--)
      cudnnBackendDestroyDescriptor(L->keep[k][i]);
  }
}

/* A new variant pack per call, as frameworks build one for every execution. */
static void backend_execute(run *r, conv_layer *L, int kind, void *in, void *other, void *out) {
  void *x, *w, *y;
  if (kind == OP_FWD) {
    x = in, w = other, y = out;
  } else if (kind == OP_BWD_DATA) {
    y = in, w = other, x = out;
  } else {
    x = in, y = other, w = out;
  }
  int64_t uids[3] = {UID_X, UID_W, UID_Y};
  void *ptrs[3] = {x, w, y};
  cudnnBackendDescriptor_t vp = be_create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  be_set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  be_set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  be_set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &r->workspace);
  be_check(cudnnBackendFinalize(vp), "finalize variant pack");
  cudnnStatus_t st = cudnnBackendExecute(r->handle, L->plan[kind], vp);
  if (st != CUDNN_STATUS_SUCCESS)
    su_die("cuDNN backend %s (%s) failed: %s", op_names[kind], L->name, cudnnGetErrorString(st));
  cudnnBackendDestroyDescriptor(vp);
}

/* ---------- training ---------- */

static void conv_op(run *r, conv_layer *L, int kind, dtensor *in, const float *h_in, dtensor *other,
                    const float *h_other, dtensor *out, float *h_out) {
  if (r->opt.api == API_LEGACY)
    legacy_execute(r, L, kind, in->dev, other->dev, out->dev);
  else
    backend_execute(r, L, kind, in->dev, other->dev, out->dev);
  download(r, out, h_out);
  if (r->verify) verify_conv(r, L, kind, h_in, h_other, h_out);
}

static void layer_init(run *r, conv_layer *L, const char *name, int c, int k, int groups) {
  L->name = name;
  L->c = c;
  L->k = k;
  L->groups = groups;
  size_t n = wsize(L);
  L->w = host_alloc(n);
  L->dw = host_alloc(n);
  double range = 1.0 / sqrt((double)(c / groups) * R * R);
  for (size_t i = 0; i < n; i++)
    L->w[i] = (float)su_rng_uniform(&r->rng, -range, range);
  dtensor_alloc(r, &L->d_w, n);
  dtensor_alloc(r, &L->d_dw, n);
  size_t ws = r->opt.api == API_LEGACY ? legacy_setup(r, L) : backend_setup(r, L);
  if (ws > r->workspace_size) r->workspace_size = ws;
}

static void layer_destroy(run *r, conv_layer *L) {
  if (r->opt.api == API_LEGACY)
    legacy_destroy(L);
  else
    backend_destroy(L);
  dtensor_free(&L->d_w);
  dtensor_free(&L->d_dw);
  free(L->w);
  free(L->dw);
}

static void range_push(const char *name) {
  nvtxRangePushA(name);
}

static void range_pop(void) {
  nvtxRangePop();
}

static void step(run *r) {
  size_t n0 = tensor_size(C0), n1 = tensor_size(C1), n2 = tensor_size(C2);
  for (size_t i = 0; i < n0; i++)
    r->x[i] = (float)su_rng_uniform(&r->rng, -1, 1);
  for (size_t i = 0; i < n2; i++)
    r->t[i] = (float)(0.5 * sin(3.0 * r->x[i % n0]));

  range_push("step");
  range_push("cnn");
  range_push("conv1");
  range_push("fwd");
  upload(r, &r->l1.d_w, r->l1.w);
  upload(r, &r->d_x, r->x);
  conv_op(r, &r->l1, OP_FWD, &r->d_x, r->x, &r->l1.d_w, r->l1.w, &r->d_y1, r->y1);
  for (size_t i = 0; i < n1; i++)
    r->a1[i] = r->y1[i] > 0 ? r->y1[i] : 0;
  range_pop();
  range_pop();

  range_push("conv2");
  range_push("fwd");
  upload(r, &r->l2.d_w, r->l2.w);
  upload(r, &r->d_a1, r->a1);
  conv_op(r, &r->l2, OP_FWD, &r->d_a1, r->a1, &r->l2.d_w, r->l2.w, &r->d_y2, r->y2);
  range_pop();
  range_pop();

  range_push("loss");
  double sum = 0;
  for (size_t i = 0; i < n2; i++) {
    double e = (double)r->y2[i] - r->t[i];
    sum += e * e;
    r->dy2[i] = (float)(2.0 * e / (double)n2);
  }
  r->loss = sum / (double)n2;
  range_pop();

  range_push("conv2");
  range_push("bwd");
  upload(r, &r->d_dy2, r->dy2);
  conv_op(r, &r->l2, OP_BWD_DATA, &r->d_dy2, r->dy2, &r->l2.d_w, r->l2.w, &r->d_da1, r->da1);
  conv_op(r, &r->l2, OP_BWD_FILTER, &r->d_a1, r->a1, &r->d_dy2, r->dy2, &r->l2.d_dw, r->l2.dw);
  for (size_t i = 0; i < n1; i++)
    r->dy1[i] = r->y1[i] > 0 ? r->da1[i] : 0;
  range_pop();
  range_pop();

  /* conv1 needs no data gradient: its input is the data. */
  range_push("conv1");
  range_push("bwd");
  upload(r, &r->d_dy1, r->dy1);
  conv_op(r, &r->l1, OP_BWD_FILTER, &r->d_x, r->x, &r->d_dy1, r->dy1, &r->l1.d_dw, r->l1.dw);
  range_pop();
  range_pop();
  range_pop(); /* cnn */

  range_push("optimizer");
  conv_layer *ls[2] = {&r->l1, &r->l2};
  for (int l = 0; l < 2; l++) {
    size_t n = wsize(ls[l]);
    for (size_t i = 0; i < n; i++)
      ls[l]->w[i] -= (float)LEARNING_RATE * ls[l]->dw[i];
  }
  range_pop();
  range_pop(); /* step */
}

static void usage(FILE *f) {
  fprintf(f, "usage: conv_train [--api legacy|backend] [--precision fp32|fp16] [--steps N] "
             "[--seed SEED] [--groups G (conv2's: 1, 2, 4, 8, 16)]\n");
}

static void parse_options(int argc, char **argv, options *o) {
  *o = (options){API_LEGACY, PREC_FP32, 3, 1, 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    }
    if (i + 1 >= argc) {
      usage(stderr);
      su_die("%s: unknown option or missing value", a);
    }
    const char *v = argv[++i];
    if (!strcmp(a, "--api")) {
      if (!strcmp(v, "legacy"))
        o->api = API_LEGACY;
      else if (!strcmp(v, "backend"))
        o->api = API_BACKEND;
      else
        su_die("--api: expected legacy or backend, got '%s'", v);
    } else if (!strcmp(a, "--precision")) {
      if (!strcmp(v, "fp32"))
        o->prec = PREC_FP32;
      else if (!strcmp(v, "fp16"))
        o->prec = PREC_FP16;
      else
        su_die("--precision: expected fp32 or fp16, got '%s'", v);
    } else if (!strcmp(a, "--steps")) {
      o->steps = (int)su_parse_long(a, v, 1, 1000000);
    } else if (!strcmp(a, "--groups")) {
      o->groups = (int)su_parse_long(a, v, 1, C1);
      if (C1 % o->groups) su_die("--groups: %d does not divide conv2's %d channels", o->groups, C1);
    } else if (!strcmp(a, "--seed")) {
      o->seed = (unsigned long long)su_parse_long(a, v, 0, 0x7fffffffffffffffL);
    } else {
      usage(stderr);
      su_die("unknown option '%s'", a);
    }
  }
}

int main(int argc, char **argv) {
  su_set_prog(argv[0]);
  static run rr;
  run *r = &rr;
  parse_options(argc, argv, &r->opt);
  su_rng_seed(&r->rng, r->opt.seed);
  r->dt = r->opt.prec == PREC_FP16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  r->elem = r->opt.prec == PREC_FP16 ? 2 : 4;

  struct cudaDeviceProp prop;
  SU_CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  printf("conv_train: api %s, precision %s, steps %d, seed %llu, device %s\n",
         r->opt.api == API_LEGACY ? "legacy" : "backend",
         r->opt.prec == PREC_FP16 ? "fp16" : "fp32", r->opt.steps, r->opt.seed, prop.name);

  SU_CHECK_CUDA(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking));
  SU_CHECK_STATUS(cudnnCreate(&r->handle), CUDNN_STATUS_SUCCESS);
  SU_CHECK_STATUS(cudnnSetStream(r->handle, r->stream), CUDNN_STATUS_SUCCESS);
  layer_init(r, &r->l1, "conv1", C0, C1, 1);
  layer_init(r, &r->l2, "conv2", C1, C2, r->opt.groups);
  if (r->workspace_size) SU_CHECK_CUDA(cudaMalloc(&r->workspace, r->workspace_size));

  size_t n0 = tensor_size(C0), n1 = tensor_size(C1), n2 = tensor_size(C2);
  r->x = host_alloc(n0);
  r->y1 = host_alloc(n1);
  r->a1 = host_alloc(n1);
  r->da1 = host_alloc(n1);
  r->dy1 = host_alloc(n1);
  r->y2 = host_alloc(n2);
  r->t = host_alloc(n2);
  r->dy2 = host_alloc(n2);
  dtensor_alloc(r, &r->d_x, n0);
  dtensor_alloc(r, &r->d_y1, n1);
  dtensor_alloc(r, &r->d_a1, n1);
  dtensor_alloc(r, &r->d_da1, n1);
  dtensor_alloc(r, &r->d_dy1, n1);
  dtensor_alloc(r, &r->d_y2, n2);
  dtensor_alloc(r, &r->d_dy2, n2);

  for (int s = 0; s < r->opt.steps; s++) {
    r->verify = s == 0;
    step(r);
  }
  printf("verification: every convolution of step 1 matches the host\n");

  uint64_t h = SU_FNV_INIT;
  double sum = 0;
  conv_layer *ls[2] = {&r->l1, &r->l2};
  for (int l = 0; l < 2; l++) {
    size_t n = wsize(ls[l]);
    h = su_fnv1a(h, ls[l]->w, n * sizeof(float));
    for (size_t i = 0; i < n; i++)
      sum += ls[l]->w[i];
  }
  printf("loss %.9g checksum %016llx sum %a\n", r->loss, (unsigned long long)h, sum);

  dtensor *ts[] = {&r->d_x, &r->d_y1, &r->d_a1, &r->d_da1, &r->d_dy1, &r->d_y2, &r->d_dy2};
  for (size_t i = 0; i < sizeof ts / sizeof *ts; i++)
    dtensor_free(ts[i]);
  float *hs[] = {r->x, r->y1, r->a1, r->da1, r->dy1, r->y2, r->t, r->dy2};
  for (size_t i = 0; i < sizeof hs / sizeof *hs; i++)
    free(hs[i]);
  layer_destroy(r, &r->l1);
  layer_destroy(r, &r->l2);
  if (r->workspace) SU_CHECK_CUDA(cudaFree(r->workspace));
  cudnnDestroy(r->handle);
  SU_CHECK_CUDA(cudaStreamDestroy(r->stream));
  return 0;
}
