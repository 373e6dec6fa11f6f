/* The precision verdict of a layer, from the advice of each of its tensors
 * (analysis/advice.h) and the class of each tensor: a pure decision with
 * reason codes; report/ turns the codes into sentences.
 *
 *   fp16            every forward tensor and every gradient fits fp16 at scale 1
 *   fp16_loss_scale forward tensors fit at scale 1, gradients' windows intersect
 *   bf16            every tensor fits bf16
 *   fp32            otherwise
 *
 * Forward tensors (activations, weights) are never scaled, so they must fit
 * fp16 at scale 1; gradients are scaled by the loss scale, so they need a
 * window of scales 2^k in which they fit. Ambiguous tensors (backward GEMM
 * inputs: gradient or activation, the call does not say) and optimizer
 * tensors take no part. Thresholds are those of mp_advice_params.
 *
 * A layer whose gradients were scanned but never held a finite non-zero
 * value (all zeros: dead, or flushed before anyone saw them; all Inf/NaN)
 * gets no verdict: such gradients say nothing about a format. */
#ifndef MPPROF_ANALYSIS_VERDICT_H
#define MPPROF_ANALYSIS_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "advice.h"

typedef enum mp_tclass {
  MP_TCLASS_FORWARD = 0, /* must fit at scale 1: activations, weights */
  MP_TCLASS_GRADIENT,    /* scaled by the loss scale */
  MP_TCLASS_AMBIGUOUS,   /* backward GEMM inputs: gradient or activation, unknowable */
  MP_TCLASS_OPTIMIZER,   /* optimizer-phase tensors: reported, not advised */
  MP_TCLASS_COUNT
} mp_tclass;
const char *mp_tclass_name(mp_tclass c); /* "forward", "gradient", "ambiguous", "optimizer" */

/* One tensor of the layer: its class, its advice and the counts the verdict sums. */
typedef struct mp_verdict_tensor {
  mp_tclass cls;
  bool has_values; /* finite non-zero values present */
  const mp_advice *adv;
  uint64_t count;   /* values scanned (0: none) */
  uint64_t nonzero; /* finite non-zero values */
  uint64_t fp16_overflow, fp16_underflow, bf16_overflow, bf16_underflow; /* cast outcome counts */
  /* NaN/Inf an op made in fp32/fp64 from finite inputs where no loss scale
   * > 1 explains them (a forward site, or one under no declared scale above
   * 1): the wide format itself failed, so no narrower one is shown safe and
   * the layer stays fp32, as mp_advise recommends for such a tensor alone. */
  bool nonfinite_wide;
} mp_verdict_tensor;

/* Why, in the order the decision met them. `tensor` indexes the input (or -1). */
typedef enum mp_reason_code {
  MP_REASON_NONFINITE_INPUT = 0, /* tensor already holds NaN/Inf */
  MP_REASON_BF16_UNFIT,          /* tensor does not fit bf16 */
  MP_REASON_FWD_FP16_OVERFLOW,   /* forward tensor overflows fp16 (not loss-scaled) */
  MP_REASON_FWD_FP16_UNDERFLOW,  /* forward tensor flushes to zero beyond underflow_max */
  MP_REASON_GRAD_NO_WINDOW,      /* gradient: no loss scale in the search range fits */
  MP_REASON_GRAD_WINDOW,         /* gradient not fp16-safe at scale 1; its window fits */
  MP_REASON_NO_VALUES,           /* no forward or gradient tensor with values: no verdict */
  MP_REASON_GRAD_NEVER_SEEN,     /* gradients scanned, none ever finite and non-zero: no verdict */
  MP_REASON_WINDOWS_DISJOINT,    /* the gradients' windows do not intersect */
  MP_REASON_REC_FP16,            /* the verdict, one of these four */
  MP_REASON_REC_FP16_LOSS_SCALE,
  MP_REASON_REC_BF16,
  MP_REASON_REC_FP32,
  MP_REASON_FP8_E4M3,       /* forward tensors and fp8 e4m3 (fits or not: fp8_e4m3_fits) */
  MP_REASON_FP8_E5M2,       /* gradients and fp8 e5m2 */
  MP_REASON_NONFINITE_WIDE, /* an op made NaN/Inf in fp32/fp64: the layer stays fp32 */
  MP_REASON_COUNT
} mp_reason_code;
const char *mp_reason_code_name(mp_reason_code c); /* "bf16_unfit", ... */

typedef struct mp_reason {
  mp_reason_code code;
  int tensor; /* index into the inputs, -1 when about the layer */
} mp_reason;

typedef struct mp_layer_verdict {
  bool known; /* some forward or gradient tensor had values */
  mp_recommendation rec;
  bool has_gradients;
  bool has_window; /* fp16 layers only: every gradient fits for 2^k, k in [window_lo, window_hi] */
  int window_lo, window_hi;
  int beyond_lo, beyond_hi; /* the intersection's, as mp_advice's (scales past the search range) */
  bool window_estimate;
  bool nonfinite_wide;                           /* some tensor's nonfinite_wide decided fp32 */
  int fp8_e4m3_fits;                             /* -1: no forward tensors, or no verdict */
  int fp8_e5m2_fits;                             /* -1: no gradients, or no verdict */
  double fp8_e4m3_underflow, fp8_e5m2_underflow; /* worst tensor's fraction at its fp8 scale */
  /* Fractions of the layer's finite non-zero values (forward and gradient tensors). */
  double fp16_overflow, fp16_underflow, bf16_overflow, bf16_underflow;
  mp_reason *reasons; /* malloc'd, n_reasons of them */
  size_t n_reasons;
} mp_layer_verdict;

/* 0, or -1 when out of memory (nothing to free then). */
int mp_layer_verdict_of(const mp_verdict_tensor *t, size_t n, const mp_advice_params *p,
                        mp_layer_verdict *ret);
void mp_layer_verdict_free(mp_layer_verdict *v); /* NULL-safe */

#endif
