/* Helpers for the cuDNN stand-in's tests: an independent naive reference
 * (double precision, plain loops over NCHW), independent fp16/bf16 encoding
 * and round-to-nearest-even (via rint in double, not analysis/convert.c),
 * deterministic small-integer data, and a kernel sink on simcuda's hub that
 * counts the simulated kernels and keeps the last name.
 *
 * Inputs are small integers, so every product and partial sum is exact in
 * fp32: the stand-in's fp32 accumulation must then equal the exact result,
 * and 16-bit outputs must be exactly its RNE rounding. */
#ifndef CUDNN_TEST_UTIL_H
#define CUDNN_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_internal.h"

/* ---- 16-bit formats, independently of analysis/ ---- */

/* RNE of x to a binary format with `man` explicit mantissa bits, min normal
 * exponent emin and largest finite `max` (inf beyond the overflow threshold). */
static inline double rne_to(double x, int man, int emin, double max) {
  if (x == 0 || isnan(x) || isinf(x)) return x;
  int e = (int)floor(log2(fabs(x)));
  if (e < emin) e = emin;
  double ulp = ldexp(1.0, e - man);
  double r = rint(x / ulp) * ulp; /* default rounding mode: to nearest, ties to even */
  if (fabs(r) > max) return copysign(INFINITY, x);
  return r;
}
static inline double rne_fp16(double x) {
  return rne_to(x, 10, -14, 65504.0);
}
static inline double rne_bf16(double x) {
  return rne_to(x, 7, -126, ldexp(255.0, 120));
}
static inline double rne_fp32(double x) {
  return (double)(float)x;
}

static inline double fp16_decode(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}
/* Exactly representable, normal or zero values only (test inputs). */
static inline uint16_t fp16_encode_exact(double v) {
  if (v == 0) return 0;
  uint16_t s = v < 0 ? 0x8000 : 0;
  v = fabs(v);
  int e = (int)floor(log2(v));
  return (uint16_t)(s | (uint16_t)((e + 15) << 10) | (uint16_t)((v / ldexp(1.0, e) - 1.0) * 1024));
}
static inline double bf16_decode(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline uint16_t bf16_encode_exact(double v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

/* ---- deterministic data ---- */

static inline int small_int(uint32_t *state, int lo, int hi) {
  *state = *state * 1664525u + 1013904223u;
  return lo + (int)((*state >> 8) % (uint32_t)(hi - lo + 1));
}
static inline double *random_ints(size_t n, uint32_t seed, int lo, int hi) {
  double *v = malloc(n * sizeof *v);
  for (size_t i = 0; i < n; i++)
    v[i] = small_int(&seed, lo, hi);
  return v;
}

/* ---- naive reference convolution (NCHW / KCRS, double) ---- */

typedef struct ref_conv {
  int n, c, h, w, k, r, s, groups;
  int pad_h, pad_w, str_h, str_w, dil_h, dil_w;
  int flip; /* CUDNN_CONVOLUTION */
} ref_conv;

static inline int ref_out_h(const ref_conv *g) {
  return (g->h + 2 * g->pad_h - ((g->r - 1) * g->dil_h + 1)) / g->str_h + 1;
}
static inline int ref_out_w(const ref_conv *g) {
  return (g->w + 2 * g->pad_w - ((g->s - 1) * g->dil_w + 1)) / g->str_w + 1;
}

/* Visit every (output, input, filter) triple the convolution multiplies. */
#define REF_CONV_FOR_EACH(g, BODY)                                                                 \
  do {                                                                                             \
    int P_ = ref_out_h(g), Q_ = ref_out_w(g), cg_ = (g)->c / (g)->groups,                          \
        kg_ = (g)->k / (g)->groups;                                                                \
    for (int n = 0; n < (g)->n; n++)                                                               \
      for (int k = 0; k < (g)->k; k++)                                                             \
        for (int p = 0; p < P_; p++)                                                               \
          for (int q = 0; q < Q_; q++)                                                             \
            for (int ci = 0; ci < cg_; ci++)                                                       \
              for (int r = 0; r < (g)->r; r++)                                                     \
                for (int s = 0; s < (g)->s; s++) {                                                 \
                  int c = (k / kg_) * cg_ + ci;                                                    \
                  int hh = p * (g)->str_h - (g)->pad_h + r * (g)->dil_h;                           \
                  int ww = q * (g)->str_w - (g)->pad_w + s * (g)->dil_w;                           \
                  if (hh < 0 || hh >= (g)->h || ww < 0 || ww >= (g)->w) continue;                  \
                  int rr = (g)->flip ? (g)->r - 1 - r : r, ss = (g)->flip ? (g)->s - 1 - s : s;    \
                  size_t xi = (((size_t)n * (g)->c + c) * (g)->h + hh) * (g)->w + ww;              \
                  size_t wi = (((size_t)k * cg_ + ci) * (g)->r + rr) * (g)->s + ss;                \
                  size_t yi = (((size_t)n * (g)->k + k) * P_ + p) * Q_ + q;                        \
                  BODY;                                                                            \
                }                                                                                  \
  } while (0)

static inline size_t ref_x_count(const ref_conv *g) {
  return (size_t)g->n * g->c * g->h * g->w;
}
static inline size_t ref_w_count(const ref_conv *g) {
  return (size_t)g->k * (g->c / g->groups) * g->r * g->s;
}
static inline size_t ref_y_count(const ref_conv *g) {
  return (size_t)g->n * g->k * ref_out_h(g) * ref_out_w(g);
}

static inline double *ref_fprop(const ref_conv *g, const double *x, const double *w) {
  double *y = calloc(ref_y_count(g), sizeof *y);
  REF_CONV_FOR_EACH(g, y[yi] += x[xi] * w[wi]);
  return y;
}
static inline double *ref_dgrad(const ref_conv *g, const double *dy, const double *w) {
  double *dx = calloc(ref_x_count(g), sizeof *dx);
  REF_CONV_FOR_EACH(g, dx[xi] += dy[yi] * w[wi]);
  return dx;
}
static inline double *ref_wgrad(const ref_conv *g, const double *x, const double *dy) {
  double *dw = calloc(ref_w_count(g), sizeof *dw);
  REF_CONV_FOR_EACH(g, dw[wi] += x[xi] * dy[yi]);
  return dw;
}

/* ---- buffers of a cuDNN data type ---- */

static inline void *to_dtype(const double *v, size_t n,
                             int cudnn_dtype /* 0 f32, 2 f16, 9 bf16 */) {
  if (cudnn_dtype == 0) {
    float *f = malloc(n * sizeof *f);
    for (size_t i = 0; i < n; i++)
      f[i] = (float)v[i];
    return f;
  }
  uint16_t *h = malloc(n * sizeof *h);
  for (size_t i = 0; i < n; i++)
    h[i] = cudnn_dtype == 2 ? fp16_encode_exact(v[i]) : bf16_encode_exact(v[i]);
  return h;
}
static inline double from_dtype(const void *buf, size_t i, int cudnn_dtype) {
  if (cudnn_dtype == 0) return ((const float *)buf)[i];
  uint16_t b = ((const uint16_t *)buf)[i];
  return cudnn_dtype == 2 ? fp16_decode(b) : bf16_decode(b);
}
static inline double rne_dtype(double x, int cudnn_dtype) {
  return cudnn_dtype == 0 ? rne_fp32(x) : cudnn_dtype == 2 ? rne_fp16(x) : rne_bf16(x);
}

/* ---- kernel sink ---- */

static int sink_count;
static char sink_name[512];
static uint32_t sink_stream_id;
static inline void sink(const simcuda_kernel_event *ev) {
  sink_count++;
  strncpy(sink_name, ev->kernel->name, sizeof sink_name - 1);
  sink_stream_id = ev->stream_id;
}
static inline void sink_reset(void) {
  simcuda_cupti_attach(sink);
  sink_count = 0;
  sink_name[0] = '\0';
}

#endif
