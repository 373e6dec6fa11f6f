/* The legacy cuDNN API of simcuda's libcudnn.so.9 against a naive host
 * reference: forward, bias-activation forward, backward data and backward
 * filter in fp32 / fp16 / bf16 with padding, stride, dilation, groups, both
 * convolution modes and alpha/beta; the math (TF32 or not) each call runs;
 * descriptor read-back; and refusals with the real status codes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cudnn.h>

#include "cudnn_test_util.h"

typedef struct conv_setup {
  cudnnHandle_t h;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
} conv_setup;

static void setup_conv(conv_setup *s, const ref_conv *g, cudnnDataType_t dt, cudnnMathType_t math) {
  assert_int_equal(cudnnCreate(&s->h), CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnCreateTensorDescriptor(&s->xd), CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnCreateTensorDescriptor(&s->yd), CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnCreateFilterDescriptor(&s->wd), CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnCreateConvolutionDescriptor(&s->cd), CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnSetTensor4dDescriptor(s->xd, CUDNN_TENSOR_NCHW, dt, g->n, g->c, g->h, g->w),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnSetFilter4dDescriptor(s->wd, dt, CUDNN_TENSOR_NCHW, g->k, g->c / g->groups, g->r, g->s),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnSetConvolution2dDescriptor(
                       s->cd, g->pad_h, g->pad_w, g->str_h, g->str_w, g->dil_h, g->dil_w,
                       g->flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnSetConvolutionGroupCount(s->cd, g->groups), CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnSetConvolutionMathType(s->cd, math), CUDNN_STATUS_SUCCESS);
  int n, k, p, q;
  assert_int_equal(cudnnGetConvolution2dForwardOutputDim(s->cd, s->xd, s->wd, &n, &k, &p, &q),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(p, ref_out_h(g));
  assert_int_equal(q, ref_out_w(g));
  assert_int_equal(cudnnSetTensor4dDescriptor(s->yd, CUDNN_TENSOR_NCHW, dt, n, k, p, q),
                   CUDNN_STATUS_SUCCESS);
}

static void teardown_conv(conv_setup *s) {
  cudnnDestroyTensorDescriptor(s->xd);
  cudnnDestroyTensorDescriptor(s->yd);
  cudnnDestroyFilterDescriptor(s->wd);
  cudnnDestroyConvolutionDescriptor(s->cd);
  assert_int_equal(cudnnDestroy(s->h), CUDNN_STATUS_SUCCESS);
}

/* got[i] must be exactly rne_dtype(alpha * ref[i] + beta * old[i]). */
static void assert_blend(const void *got, const double *ref, const double *old, size_t n,
                         double alpha, double beta, int dt) {
  for (size_t i = 0; i < n; i++) {
    double want = rne_dtype(alpha * ref[i] + (old ? beta * old[i] : 0.0), dt);
    double have = from_dtype(got, i, dt);
    if (!(have == want || (isnan(have) && isnan(want))))
      fail_msg("element %zu: got %.9g, want %.9g (exact %.9g)", i, have, want, ref[i]);
  }
}

enum which { FPROP, DGRAD, WGRAD };

/* Run one entry point on integer data and compare with the reference. */
static void check_conv(enum which op, const ref_conv *g, int dt, cudnnMathType_t math, int lo,
                       int hi, float alpha, float beta) {
  conv_setup s;
  setup_conv(&s, g, (cudnnDataType_t)dt, math);
  size_t nx = ref_x_count(g), nw = ref_w_count(g), ny = ref_y_count(g);
  double *x = random_ints(nx, 1, lo, hi), *w = random_ints(nw, 2, lo, hi);
  double *y = random_ints(ny, 3, lo, hi);
  double *out_old = random_ints(op == FPROP ? ny : op == DGRAD ? nx : nw, 4, -4, 4);
  void *xb = to_dtype(op == DGRAD ? out_old : x, nx, dt);
  void *wb = to_dtype(op == WGRAD ? out_old : w, nw, dt);
  void *yb = to_dtype(op == FPROP ? out_old : y, ny, dt);
  double *ref;
  void *out;
  size_t n_out;
  cudnnStatus_t st;
  if (op == FPROP) {
    ref = ref_fprop(g, x, w);
    st = cudnnConvolutionForward(s.h, &alpha, s.xd, xb, s.wd, wb, s.cd,
                                 CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, NULL, 0, &beta,
                                 s.yd, yb);
    out = yb;
    n_out = ny;
  } else if (op == DGRAD) {
    ref = ref_dgrad(g, y, w);
    st = cudnnConvolutionBackwardData(s.h, &alpha, s.wd, wb, s.yd, yb, s.cd,
                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, NULL, 0, &beta, s.xd, xb);
    out = xb;
    n_out = nx;
  } else {
    ref = ref_wgrad(g, x, y);
    st = cudnnConvolutionBackwardFilter(s.h, &alpha, s.xd, xb, s.yd, yb, s.cd,
                                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, NULL, 0, &beta, s.wd,
                                        wb);
    out = wb;
    n_out = nw;
  }
  assert_int_equal(st, CUDNN_STATUS_SUCCESS);
  assert_blend(out, ref, out_old, n_out, alpha, beta, dt);
  free(x), free(w), free(y), free(out_old), free(xb), free(wb), free(yb), free(ref);
  teardown_conv(&s);
}

/* Odd geometry: every spatial parameter differs between H and W. */
static const ref_conv odd = {.n = 2,
                             .c = 3,
                             .h = 7,
                             .w = 6,
                             .k = 4,
                             .r = 3,
                             .s = 2,
                             .groups = 1,
                             .pad_h = 1,
                             .pad_w = 2,
                             .str_h = 2,
                             .str_w = 1,
                             .dil_h = 1,
                             .dil_w = 2};

static void fprop_fp32_matches_reference_with_pad_stride_dilation(void **state) {
  (void)state;
  check_conv(FPROP, &odd, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, 1.0f, 0.0f);
}

static void convolution_mode_applies_the_filter_flipped_in_all_directions(void **state) {
  (void)state;
  ref_conv g = odd;
  g.flip = 1;
  check_conv(FPROP, &g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, 1.0f, 0.0f);
  check_conv(DGRAD, &g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, 1.0f, 0.0f);
  check_conv(WGRAD, &g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, 1.0f, 0.0f);
}

static void fprop_blends_alpha_times_result_with_beta_times_old_output(void **state) {
  (void)state;
  check_conv(FPROP, &odd, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, 2.0f, 0.5f);
}

static void dgrad_fp32_matches_reference_with_pad_stride_dilation(void **state) {
  (void)state;
  check_conv(DGRAD, &odd, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, 1.0f, 0.0f);
  check_conv(DGRAD, &odd, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, -1.5f, 2.0f);
}

static void wgrad_fp32_matches_reference_with_pad_stride_dilation(void **state) {
  (void)state;
  check_conv(WGRAD, &odd, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, 1.0f, 0.0f);
  check_conv(WGRAD, &odd, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, -3, 3, 0.25f, 1.0f);
}

static void grouped_convolution_matches_reference_in_all_three_directions(void **state) {
  (void)state;
  ref_conv g = {.n = 2,
                .c = 4,
                .h = 5,
                .w = 5,
                .k = 6,
                .r = 3,
                .s = 3,
                .groups = 2,
                .pad_h = 1,
                .pad_w = 1,
                .str_h = 1,
                .str_w = 2,
                .dil_h = 1,
                .dil_w = 1};
  check_conv(FPROP, &g, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, -3, 3, 1.0f, 0.0f);
  check_conv(DGRAD, &g, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, -3, 3, 1.0f, 0.0f);
  check_conv(WGRAD, &g, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, -3, 3, 1.0f, 0.0f);
}

/* Products up to 40*40 summed over C*R*S = 72 terms reach past 65504: the
 * fp16 outputs exercise rounding between 2048 and 65504 and overflow to inf. */
static const ref_conv wide = {.n = 1,
                              .c = 8,
                              .h = 6,
                              .w = 6,
                              .k = 8,
                              .r = 3,
                              .s = 3,
                              .groups = 1,
                              .pad_h = 1,
                              .pad_w = 1,
                              .str_h = 1,
                              .str_w = 1,
                              .dil_h = 1,
                              .dil_w = 1};

static void fprop_fp16_output_is_the_nearest_even_fp16_of_the_fp32_sum(void **state) {
  (void)state;
  check_conv(FPROP, &wide, CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, 0, 40, 1.0f, 0.0f);
  check_conv(FPROP, &wide, CUDNN_DATA_HALF, CUDNN_DEFAULT_MATH, -40, 40, 1.0f, 1.0f);
}

static void dgrad_and_wgrad_fp16_round_to_nearest_even(void **state) {
  (void)state;
  check_conv(DGRAD, &wide, CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, -30, 30, 1.0f, 0.0f);
  check_conv(WGRAD, &wide, CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH, -30, 30, 1.0f, 0.0f);
}

static void fp16_with_fma_math_gives_the_same_values(void **state) {
  (void)state;
  check_conv(FPROP, &wide, CUDNN_DATA_HALF, CUDNN_FMA_MATH, -30, 30, 1.0f, 0.0f);
}

static void bf16_convolutions_round_to_nearest_even(void **state) {
  (void)state;
  check_conv(FPROP, &wide, CUDNN_DATA_BFLOAT16, CUDNN_DEFAULT_MATH, -30, 30, 1.0f, 0.0f);
  check_conv(DGRAD, &wide, CUDNN_DATA_BFLOAT16, CUDNN_DEFAULT_MATH, -30, 30, 1.0f, 0.0f);
  check_conv(WGRAD, &wide, CUDNN_DATA_BFLOAT16, CUDNN_DEFAULT_MATH, -30, 30, 1.0f, 0.0f);
}

static void beta_zero_never_reads_the_output(void **state) {
  (void)state;
  ref_conv g = wide;
  conv_setup s;
  setup_conv(&s, &g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
  size_t ny = ref_y_count(&g);
  double *x = random_ints(ref_x_count(&g), 5, -2, 2), *w = random_ints(ref_w_count(&g), 6, -2, 2);
  float *xb = to_dtype(x, ref_x_count(&g), 0), *wb = to_dtype(w, ref_w_count(&g), 0);
  float *yb = malloc(ny * sizeof *yb);
  for (size_t i = 0; i < ny; i++)
    yb[i] = NAN;
  float one = 1.0f, zero = 0.0f;
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, xb, s.wd, wb, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero,
                                           s.yd, yb),
                   CUDNN_STATUS_SUCCESS);
  double *ref = ref_fprop(&g, x, w);
  assert_blend(yb, ref, NULL, ny, 1.0, 0.0, 0);
  free(x), free(w), free(xb), free(wb), free(yb), free(ref);
  teardown_conv(&s);
}

/* 1x1 conv over 8 channels of 1 + 2^-11 with weights 1: TF32 rounds each
 * input to 1.0 (a tie, to even), exact fp32 keeps it. */
static float one_by_one_sum(cudnnMathType_t math, int channels) {
  ref_conv g = {.n = 1,
                .c = channels,
                .h = 1,
                .w = 1,
                .k = 8,
                .r = 1,
                .s = 1,
                .groups = 1,
                .str_h = 1,
                .str_w = 1,
                .dil_h = 1,
                .dil_w = 1};
  conv_setup s;
  setup_conv(&s, &g, CUDNN_DATA_FLOAT, math);
  float x[8], w[64], y[8], one = 1.0f, zero = 0.0f;
  for (int i = 0; i < 8; i++)
    x[i] = 1.0f + 0x1p-11f;
  for (int i = 0; i < 64; i++)
    w[i] = 1.0f;
  sink_reset();
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, x, s.wd, w, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, NULL,
                                           0, &zero, s.yd, y),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(sink_count, 1);
  teardown_conv(&s);
  return y[0];
}

static void fp32_default_math_runs_tf32_tensor_core_kernels(void **state) {
  (void)state;
  assert_true(one_by_one_sum(CUDNN_DEFAULT_MATH, 8) == 8.0f);
  assert_non_null(strstr(sink_name, "tf32"));
  assert_true(one_by_one_sum(CUDNN_TENSOR_OP_MATH, 8) == 8.0f);
}

static void fp32_fma_math_is_exact_fp32_on_cuda_cores(void **state) {
  (void)state;
  assert_true(one_by_one_sum(CUDNN_FMA_MATH, 8) == 8.0f + 8 * 0x1p-11f);
  assert_null(strstr(sink_name, "tf32"));
  assert_null(strstr(sink_name, "xmma"));
}

static void tf32_override_zero_keeps_fp32_exact(void **state) {
  (void)state;
  setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  float v = one_by_one_sum(CUDNN_DEFAULT_MATH, 8);
  unsetenv("NVIDIA_TF32_OVERRIDE");
  assert_true(v == 8.0f + 8 * 0x1p-11f);
  assert_null(strstr(sink_name, "tf32"));
}

static void channels_not_multiple_of_8_run_on_cuda_cores(void **state) {
  (void)state;
  assert_true(one_by_one_sum(CUDNN_DEFAULT_MATH, 3) == 3.0f + 3 * 0x1p-11f);
  assert_null(strstr(sink_name, "tf32"));
}

static void fp16_default_math_names_an_hmma_kernel(void **state) {
  (void)state;
  sink_reset();
  check_conv(FPROP, &wide, CUDNN_DATA_HALF, CUDNN_DEFAULT_MATH, -2, 2, 1.0f, 0.0f);
  assert_int_equal(sink_count, 1);
  assert_non_null(strstr(sink_name, "f16f16_f16f32"));
  sink_reset();
  check_conv(DGRAD, &wide, CUDNN_DATA_HALF, CUDNN_DEFAULT_MATH, -2, 2, 1.0f, 0.0f);
  assert_non_null(strstr(sink_name, "dgrad"));
  sink_reset();
  check_conv(WGRAD, &wide, CUDNN_DATA_HALF, CUDNN_DEFAULT_MATH, -2, 2, 1.0f, 0.0f);
  assert_non_null(strstr(sink_name, "wgrad"));
}

/* y = relu(alpha1 * conv + alpha2 * z + bias[k]) */
static void bias_activation_adds_z_and_bias_then_applies_relu(void **state) {
  (void)state;
  ref_conv g = odd;
  conv_setup s;
  setup_conv(&s, &g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
  size_t ny = ref_y_count(&g);
  double *x = random_ints(ref_x_count(&g), 7, -3, 3), *w = random_ints(ref_w_count(&g), 8, -3, 3);
  double *z = random_ints(ny, 9, -5, 5), *bias = random_ints((size_t)g.k, 10, -4, 4);
  float *xb = to_dtype(x, ref_x_count(&g), 0), *wb = to_dtype(w, ref_w_count(&g), 0);
  float *zb = to_dtype(z, ny, 0), *bb = to_dtype(bias, (size_t)g.k, 0);
  float *yb = calloc(ny, sizeof *yb);
  cudnnTensorDescriptor_t bd;
  cudnnActivationDescriptor_t ad;
  assert_int_equal(cudnnCreateTensorDescriptor(&bd), CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, g.k, 1, 1),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnCreateActivationDescriptor(&ad), CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0),
                   CUDNN_STATUS_SUCCESS);
  float alpha1 = 2.0f, alpha2 = 0.5f;
  assert_int_equal(cudnnConvolutionBiasActivationForward(s.h, &alpha1, s.xd, xb, s.wd, wb, s.cd,
                                                         CUDNN_CONVOLUTION_FWD_ALGO_GEMM, NULL, 0,
                                                         &alpha2, s.yd, zb, bd, bb, ad, s.yd, yb),
                   CUDNN_STATUS_SUCCESS);
  double *ref = ref_fprop(&g, x, w);
  int P = ref_out_h(&g), Q = ref_out_w(&g), clamped = 0;
  for (size_t i = 0; i < ny; i++) {
    int k = (int)(i / (size_t)(P * Q)) % g.k;
    double v = 2.0 * ref[i] + 0.5 * z[i] + bias[k];
    clamped += v < 0;
    if (yb[i] != (float)(v < 0 ? 0 : v)) fail_msg("element %zu: got %g, want %g", i, yb[i], v);
  }
  assert_true(clamped > 0);
  /* Identity is documented for IMPLICIT_PRECOMP_GEMM only. */
  assert_int_equal(
      cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_IDENTITY, CUDNN_PROPAGATE_NAN, 0),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnConvolutionBiasActivationForward(s.h, &alpha1, s.xd, xb, s.wd, wb, s.cd,
                                                         CUDNN_CONVOLUTION_FWD_ALGO_GEMM, NULL, 0,
                                                         &alpha2, s.yd, zb, bd, bb, ad, s.yd, yb),
                   CUDNN_STATUS_NOT_SUPPORTED);
  assert_int_equal(
      cudnnConvolutionBiasActivationForward(s.h, &alpha1, s.xd, xb, s.wd, wb, s.cd,
                                            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, NULL,
                                            0, &alpha2, s.yd, zb, bd, bb, ad, s.yd, yb),
      CUDNN_STATUS_SUCCESS);
  for (size_t i = 0; i < ny; i++) {
    int k = (int)(i / (size_t)(P * Q)) % g.k;
    assert_true(yb[i] == (float)(2.0 * ref[i] + 0.5 * z[i] + bias[k]));
  }
  assert_int_equal(
      cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_SIGMOID, CUDNN_PROPAGATE_NAN, 0),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnConvolutionBiasActivationForward(s.h, &alpha1, s.xd, xb, s.wd, wb, s.cd,
                                            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, NULL,
                                            0, &alpha2, s.yd, zb, bd, bb, ad, s.yd, yb),
      CUDNN_STATUS_NOT_SUPPORTED);
  cudnnDestroyActivationDescriptor(ad);
  cudnnDestroyTensorDescriptor(bd);
  free(x), free(w), free(z), free(bias), free(xb), free(wb), free(zb), free(bb), free(yb),
      free(ref);
  teardown_conv(&s);
}

static void nhwc_tensors_give_the_nchw_result(void **state) {
  (void)state;
  ref_conv g = odd;
  conv_setup s;
  setup_conv(&s, &g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
  int P = ref_out_h(&g), Q = ref_out_w(&g);
  assert_int_equal(
      cudnnSetTensor4dDescriptor(s.xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, g.n, g.c, g.h, g.w),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnSetTensor4dDescriptor(s.yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, g.n, g.k, P, Q),
      CUDNN_STATUS_SUCCESS);
  double *x = random_ints(ref_x_count(&g), 11, -3, 3), *w = random_ints(ref_w_count(&g), 12, -3, 3);
  float *xh = malloc(ref_x_count(&g) * sizeof *xh), *wb = to_dtype(w, ref_w_count(&g), 0);
  float *yh = calloc(ref_y_count(&g), sizeof *yh);
  for (int n = 0; n < g.n; n++)
    for (int c = 0; c < g.c; c++)
      for (int i = 0; i < g.h * g.w; i++)
        xh[((size_t)n * g.h * g.w + i) * g.c + c] = (float)x[((size_t)n * g.c + c) * g.h * g.w + i];
  float one = 1.0f, zero = 0.0f;
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, xh, s.wd, wb, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, NULL,
                                           0, &zero, s.yd, yh),
                   CUDNN_STATUS_SUCCESS);
  double *ref = ref_fprop(&g, x, w);
  for (int n = 0; n < g.n; n++)
    for (int k = 0; k < g.k; k++)
      for (int i = 0; i < P * Q; i++)
        assert_true(yh[((size_t)n * P * Q + i) * g.k + k] ==
                    (float)ref[((size_t)n * g.k + k) * P * Q + i]);
  free(x), free(w), free(xh), free(wb), free(yh), free(ref);
  teardown_conv(&s);
}

static void descriptors_read_back_as_set(void **state) {
  (void)state;
  conv_setup s;
  ref_conv g = odd;
  g.flip = 1;
  setup_conv(&s, &g, CUDNN_DATA_HALF, CUDNN_TENSOR_OP_MATH);
  cudnnDataType_t dt;
  int n, c, h, w, ns, cs, hs, ws, nb, dims[8], strides[8];
  assert_int_equal(cudnnGetTensor4dDescriptor(s.xd, &dt, &n, &c, &h, &w, &ns, &cs, &hs, &ws),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(dt, CUDNN_DATA_HALF);
  assert_int_equal(n * 1000 + c * 100 + h * 10 + w, 2376);
  assert_int_equal(ns, 3 * 7 * 6);
  assert_int_equal(cs, 42);
  assert_int_equal(hs, 6);
  assert_int_equal(ws, 1);
  assert_int_equal(cudnnGetTensorNdDescriptor(s.xd, 8, &dt, &nb, dims, strides),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(nb, 4);
  assert_int_equal(dims[2], 7);
  assert_int_equal(strides[1], 42);
  size_t bytes;
  assert_int_equal(cudnnGetTensorSizeInBytes(s.xd, &bytes), CUDNN_STATUS_SUCCESS);
  assert_int_equal(bytes, 2 * 3 * 7 * 6 * 2);
  cudnnTensorFormat_t fmt;
  int k, r, sdim;
  assert_int_equal(cudnnGetFilter4dDescriptor(s.wd, &dt, &fmt, &k, &c, &r, &sdim),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(fmt, CUDNN_TENSOR_NCHW);
  assert_int_equal(k * 100 + c * 10 + r, 433);
  assert_int_equal(sdim, 2);
  int ph, pw, u, v, dh, dw;
  cudnnConvolutionMode_t mode;
  cudnnDataType_t comp;
  assert_int_equal(cudnnGetConvolution2dDescriptor(s.cd, &ph, &pw, &u, &v, &dh, &dw, &mode, &comp),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(ph * 100000 + pw * 10000 + u * 1000 + v * 100 + dh * 10 + dw, 122112);
  assert_int_equal(mode, CUDNN_CONVOLUTION);
  assert_int_equal(comp, CUDNN_DATA_FLOAT);
  cudnnMathType_t math;
  assert_int_equal(cudnnGetConvolutionMathType(s.cd, &math), CUDNN_STATUS_SUCCESS);
  assert_int_equal(math, CUDNN_TENSOR_OP_MATH);
  int groups;
  assert_int_equal(cudnnGetConvolutionGroupCount(s.cd, &groups), CUDNN_STATUS_SUCCESS);
  assert_int_equal(groups, 1);
  cudaStream_t stream = (cudaStream_t)(uintptr_t)0x1234, got;
  assert_int_equal(cudnnSetStream(s.h, stream), CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnGetStream(s.h, &got), CUDNN_STATUS_SUCCESS);
  assert_ptr_equal(got, stream);
  teardown_conv(&s);
}

static void queries_give_zero_workspace_and_one_implicit_gemm_algorithm(void **state) {
  (void)state;
  conv_setup s;
  setup_conv(&s, &odd, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
  size_t ws = 99;
  assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(
                       s.h, s.xd, s.wd, s.cd, s.yd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, &ws),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(ws, 0);
  ws = 99;
  assert_int_equal(cudnnGetConvolutionBackwardDataWorkspaceSize(
                       s.h, s.wd, s.yd, s.cd, s.xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, &ws),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(ws, 0);
  ws = 99;
  assert_int_equal(cudnnGetConvolutionBackwardFilterWorkspaceSize(
                       s.h, s.xd, s.yd, s.cd, s.wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, &ws),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(ws, 0);
  int count, returned;
  assert_int_equal(cudnnGetConvolutionForwardAlgorithmMaxCount(s.h, &count), CUDNN_STATUS_SUCCESS);
  assert_int_equal(count, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  cudnnConvolutionFwdAlgoPerf_t fwd[8];
  assert_int_equal(
      cudnnGetConvolutionForwardAlgorithm_v7(s.h, s.xd, s.wd, s.cd, s.yd, 8, &returned, fwd),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(returned, 1);
  assert_int_equal(fwd[0].algo, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
  assert_int_equal(fwd[0].status, CUDNN_STATUS_SUCCESS);
  assert_int_equal(fwd[0].mathType, CUDNN_DEFAULT_MATH);
  cudnnConvolutionBwdDataAlgoPerf_t bd[6];
  assert_int_equal(
      cudnnGetConvolutionBackwardDataAlgorithm_v7(s.h, s.wd, s.yd, s.cd, s.xd, 6, &returned, bd),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(bd[0].algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
  cudnnConvolutionBwdFilterAlgoPerf_t bf[7];
  assert_int_equal(
      cudnnGetConvolutionBackwardFilterAlgorithm_v7(s.h, s.xd, s.yd, s.cd, s.wd, 7, &returned, bf),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(bf[0].algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  teardown_conv(&s);
}

/* The algorithms the real library restricts (cudnn_legacy.c, algo_plan):
 * forward DIRECT never runs, forward WINOGRAD only a 2-D 3x3 filter with
 * stride 1, backward-filter WINOGRAD never; the queries and the calls say
 * NOT_SUPPORTED. FFT, FFT_TILING and WINOGRAD_NONFUSED need workspace, and a
 * call given less fails with ALLOC_FAILED. */
static void restricted_algorithms_are_refused_and_transforms_need_workspace(void **state) {
  (void)state;
  conv_setup s;
  setup_conv(&s, &wide, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH); /* 3x3, stride 1 */
  static float buf[4096];
  float one = 1.0f, zero = 0.0f;
  size_t ws = 99;
  assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(s.h, s.xd, s.wd, s.cd, s.yd,
                                                           CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, &ws),
                   CUDNN_STATUS_NOT_SUPPORTED);
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, NULL, 0, &zero, s.yd,
                                           buf),
                   CUDNN_STATUS_NOT_SUPPORTED);
  /* WINOGRAD: 3x3 stride 1 runs (no workspace), stride 2 and 3x2 do not. */
  assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(
                       s.h, s.xd, s.wd, s.cd, s.yd, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, &ws),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(ws, 0);
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, NULL, 0, &zero,
                                           s.yd, buf),
                   CUDNN_STATUS_SUCCESS);
  /* Backward filter WINOGRAD is not implemented. */
  assert_int_equal(
      cudnnGetConvolutionBackwardFilterWorkspaceSize(
          s.h, s.xd, s.yd, s.cd, s.wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, &ws),
      CUDNN_STATUS_NOT_SUPPORTED);
  assert_int_equal(cudnnConvolutionBackwardFilter(s.h, &one, s.xd, buf, s.yd, buf, s.cd,
                                                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, NULL,
                                                  0, &zero, s.wd, buf),
                   CUDNN_STATUS_NOT_SUPPORTED);
  /* The transform algorithms need workspace; less than that is refused. */
  size_t need = 0;
  assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(s.h, s.xd, s.wd, s.cd, s.yd,
                                                           CUDNN_CONVOLUTION_FWD_ALGO_FFT, &need),
                   CUDNN_STATUS_SUCCESS);
  assert_true(need > 0);
  void *wsp = malloc(need);
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_FFT, wsp, need - 1, &zero,
                                           s.yd, buf),
                   CUDNN_STATUS_ALLOC_FAILED);
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_FFT, wsp, need, &zero, s.yd,
                                           buf),
                   CUDNN_STATUS_SUCCESS);
  free(wsp);
  need = 0;
  assert_int_equal(
      cudnnGetConvolutionBackwardDataWorkspaceSize(
          s.h, s.wd, s.yd, s.cd, s.xd, CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED, &need),
      CUDNN_STATUS_SUCCESS);
  assert_true(need > 0);
  assert_int_equal(cudnnConvolutionBackwardData(s.h, &one, s.wd, buf, s.yd, buf, s.cd,
                                                CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
                                                NULL, 0, &zero, s.xd, buf),
                   CUDNN_STATUS_ALLOC_FAILED);
  need = 0;
  assert_int_equal(
      cudnnGetConvolutionBackwardFilterWorkspaceSize(
          s.h, s.xd, s.yd, s.cd, s.wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, &need),
      CUDNN_STATUS_SUCCESS);
  assert_true(need > 0);
  assert_int_equal(cudnnConvolutionBackwardFilter(s.h, &one, s.xd, buf, s.yd, buf, s.cd,
                                                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING,
                                                  NULL, 0, &zero, s.wd, buf),
                   CUDNN_STATUS_ALLOC_FAILED);
  teardown_conv(&s);
  /* odd: a 3x2 filter, stride 2 in H: no WINOGRAD. */
  setup_conv(&s, &odd, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
  assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(
                       s.h, s.xd, s.wd, s.cd, s.yd, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, &ws),
                   CUDNN_STATUS_NOT_SUPPORTED);
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, NULL, 0, &zero,
                                           s.yd, buf),
                   CUDNN_STATUS_NOT_SUPPORTED);
  teardown_conv(&s);
  /* 3x3 but stride 2: no WINOGRAD either. */
  ref_conv g = wide;
  g.str_h = g.str_w = 2;
  setup_conv(&s, &g, CUDNN_DATA_FLOAT, CUDNN_FMA_MATH);
  assert_int_equal(cudnnGetConvolutionForwardWorkspaceSize(
                       s.h, s.xd, s.wd, s.cd, s.yd, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, &ws),
                   CUDNN_STATUS_NOT_SUPPORTED);
  teardown_conv(&s);
}

static void inconsistent_descriptors_are_bad_param(void **state) {
  (void)state;
  conv_setup s;
  setup_conv(&s, &odd, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
  float buf[1024] = {0}, one = 1.0f, zero = 0.0f;
  const cudnnConvolutionFwdAlgo_t a = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  int P = ref_out_h(&odd), Q = ref_out_w(&odd);
  /* Output one column too wide. */
  assert_int_equal(
      cudnnSetTensor4dDescriptor(s.yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, P, Q + 1),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd, a, NULL, 0, &zero, s.yd, buf),
      CUDNN_STATUS_BAD_PARAM);
  /* Mixed data types. */
  assert_int_equal(cudnnSetTensor4dDescriptor(s.yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 2, 4, P, Q),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd, a, NULL, 0, &zero, s.yd, buf),
      CUDNN_STATUS_BAD_PARAM);
  assert_int_equal(
      cudnnSetTensor4dDescriptor(s.yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 4, P, Q),
      CUDNN_STATUS_SUCCESS);
  /* Algorithm out of range, NULL handle, NULL data, NULL scalars. */
  assert_int_equal(cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_COUNT, NULL, 0, &zero, s.yd,
                                           buf),
                   CUDNN_STATUS_BAD_PARAM);
  assert_int_equal(
      cudnnConvolutionForward(NULL, &one, s.xd, buf, s.wd, buf, s.cd, a, NULL, 0, &zero, s.yd, buf),
      CUDNN_STATUS_BAD_PARAM);
  assert_int_equal(
      cudnnConvolutionForward(s.h, &one, s.xd, NULL, s.wd, buf, s.cd, a, NULL, 0, &zero, s.yd, buf),
      CUDNN_STATUS_BAD_PARAM);
  assert_int_equal(
      cudnnConvolutionForward(s.h, NULL, s.xd, buf, s.wd, buf, s.cd, a, NULL, 0, &zero, s.yd, buf),
      CUDNN_STATUS_BAD_PARAM);
  /* Filter channels that do not divide the input channels. */
  assert_int_equal(
      cudnnSetFilter4dDescriptor(s.wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, 2, 3, 2),
      CUDNN_STATUS_SUCCESS);
  int n, c, h, w;
  assert_int_equal(cudnnGetConvolution2dForwardOutputDim(s.cd, s.xd, s.wd, &n, &c, &h, &w),
                   CUDNN_STATUS_BAD_PARAM);
  /* Bad descriptor values. */
  assert_int_equal(
      cudnnSetTensor4dDescriptor(s.xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 1, 1, 1),
      CUDNN_STATUS_BAD_PARAM);
  assert_int_equal(
      cudnnSetConvolution2dDescriptor(s.cd, -1, 0, 1, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
      CUDNN_STATUS_BAD_PARAM);
  assert_int_equal(
      cudnnSetConvolution2dDescriptor(s.cd, 0, 0, 0, 1, 1, 1, CUDNN_CONVOLUTION, CUDNN_DATA_FLOAT),
      CUDNN_STATUS_BAD_PARAM);
  teardown_conv(&s);
}

static void unimplemented_types_are_not_supported(void **state) {
  (void)state;
  float buf[4096] = {0}, one = 1.0f, zero = 0.0f;
  const cudnnConvolutionFwdAlgo_t a = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  conv_setup s;
  /* Double data (DOUBLE_CONFIG) is valid cuDNN that simcuda does not implement. */
  setup_conv(&s, &odd, CUDNN_DATA_DOUBLE, CUDNN_DEFAULT_MATH);
  cudnnStatus_t st =
      cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd, a, NULL, 0, &zero, s.yd, buf);
  assert_int_equal(CUDNN_STATUS_CATEGORY(st), CUDNN_STATUS_NOT_SUPPORTED);
  char msg[256];
  cudnnGetLastErrorString(msg, sizeof msg);
  assert_non_null(strstr(msg, "simcuda"));
  teardown_conv(&s);
  /* TRUE_HALF_CONFIG: fp16 data with fp16 compute. */
  setup_conv(&s, &odd, CUDNN_DATA_HALF, CUDNN_DEFAULT_MATH);
  assert_int_equal(cudnnSetConvolution2dDescriptor(s.cd, 1, 2, 2, 1, 1, 2, CUDNN_CROSS_CORRELATION,
                                                   CUDNN_DATA_HALF),
                   CUDNN_STATUS_SUCCESS);
  st = cudnnConvolutionForward(s.h, &one, s.xd, buf, s.wd, buf, s.cd, a, NULL, 0, &zero, s.yd, buf);
  assert_int_equal(CUDNN_STATUS_CATEGORY(st), CUDNN_STATUS_NOT_SUPPORTED);
  teardown_conv(&s);
  /* NCHW_VECT_C layout. */
  cudnnTensorDescriptor_t t;
  assert_int_equal(cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW_VECT_C, CUDNN_DATA_INT8, 1, 4, 1, 1),
      CUDNN_STATUS_NOT_SUPPORTED);
  cudnnDestroyTensorDescriptor(t);
}

static void kernels_run_on_the_handle_stream(void **state) {
  (void)state;
  CUstream stream;
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  conv_setup s;
  setup_conv(&s, &odd, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH);
  assert_int_equal(cudnnSetStream(s.h, (cudaStream_t)stream), CUDNN_STATUS_SUCCESS);
  float *x = calloc(ref_x_count(&odd), sizeof *x), *w = calloc(ref_w_count(&odd), sizeof *w);
  float *y = calloc(ref_y_count(&odd), sizeof *y), one = 1.0f, zero = 0.0f;
  sink_reset();
  assert_int_equal(cudnnConvolutionBackwardFilter(s.h, &one, s.xd, x, s.yd, y, s.cd,
                                                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, NULL, 0,
                                                  &zero, s.wd, w),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(sink_count, 1);
  assert_int_not_equal(simcuda_stream_id(stream), 0);
  assert_int_equal(sink_stream_id, simcuda_stream_id(stream));
  free(x), free(w), free(y);
  teardown_conv(&s);
  assert_int_equal(cuStreamDestroy(stream), CUDA_SUCCESS);
}

static void version_and_error_strings_are_cudnn_9s(void **state) {
  (void)state;
  assert_int_equal(cudnnGetVersion(), CUDNN_VERSION);
  assert_int_equal(cudnnGetVersion() / 10000, 9);
  assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
  assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_NOT_SUPPORTED),
                      "CUDNN_STATUS_NOT_SUPPORTED");
  assert_string_equal(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED),
                      "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED");
  int v;
  assert_int_equal(cudnnGetProperty(MAJOR_VERSION, &v), CUDNN_STATUS_SUCCESS);
  assert_int_equal(v, CUDNN_MAJOR);
  assert_int_equal(cudnnCreate(NULL), CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fprop_fp32_matches_reference_with_pad_stride_dilation),
      cmocka_unit_test(convolution_mode_applies_the_filter_flipped_in_all_directions),
      cmocka_unit_test(fprop_blends_alpha_times_result_with_beta_times_old_output),
      cmocka_unit_test(dgrad_fp32_matches_reference_with_pad_stride_dilation),
      cmocka_unit_test(wgrad_fp32_matches_reference_with_pad_stride_dilation),
      cmocka_unit_test(grouped_convolution_matches_reference_in_all_three_directions),
      cmocka_unit_test(fprop_fp16_output_is_the_nearest_even_fp16_of_the_fp32_sum),
      cmocka_unit_test(dgrad_and_wgrad_fp16_round_to_nearest_even),
      cmocka_unit_test(fp16_with_fma_math_gives_the_same_values),
      cmocka_unit_test(bf16_convolutions_round_to_nearest_even),
      cmocka_unit_test(beta_zero_never_reads_the_output),
      cmocka_unit_test(fp32_default_math_runs_tf32_tensor_core_kernels),
      cmocka_unit_test(fp32_fma_math_is_exact_fp32_on_cuda_cores),
      cmocka_unit_test(tf32_override_zero_keeps_fp32_exact),
      cmocka_unit_test(channels_not_multiple_of_8_run_on_cuda_cores),
      cmocka_unit_test(fp16_default_math_names_an_hmma_kernel),
      cmocka_unit_test(bias_activation_adds_z_and_bias_then_applies_relu),
      cmocka_unit_test(nhwc_tensors_give_the_nchw_result),
      cmocka_unit_test(descriptors_read_back_as_set),
      cmocka_unit_test(queries_give_zero_workspace_and_one_implicit_gemm_algorithm),
      cmocka_unit_test(restricted_algorithms_are_refused_and_transforms_need_workspace),
      cmocka_unit_test(inconsistent_descriptors_are_bad_param),
      cmocka_unit_test(unimplemented_types_are_not_supported),
      cmocka_unit_test(kernels_run_on_the_handle_stream),
      cmocka_unit_test(version_and_error_strings_are_cudnn_9s),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
