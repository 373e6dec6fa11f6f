/* The layer verdict (verdict.h): a pure function of the tensors' advice. */
#include "verdict.h"

#include <limits.h>
#include <stdlib.h>

const char *mp_tclass_name(mp_tclass c) {
  static const char *const names[] = {"forward", "gradient", "ambiguous", "optimizer"};
  return (unsigned)c < MP_TCLASS_COUNT ? names[c] : "unknown";
}

const char *mp_reason_code_name(mp_reason_code c) {
  static const char *const names[MP_REASON_COUNT] = {
      "nonfinite_input",
      "bf16_unfit",
      "fwd_fp16_overflow",
      "fwd_fp16_underflow",
      "grad_no_window",
      "grad_window",
      "no_values",
      "grad_never_seen",
      "windows_disjoint",
      "rec_fp16",
      "rec_fp16_loss_scale",
      "rec_bf16",
      "rec_fp32",
      "fp8_e4m3",
      "fp8_e5m2",
      "nonfinite_wide",
  };
  return (unsigned)c < MP_REASON_COUNT ? names[c] : "unknown";
}

static void note(mp_layer_verdict *v, mp_reason_code code, int tensor) {
  v->reasons[v->n_reasons++] = (mp_reason){code, tensor};
}

static double frac(uint64_t n, uint64_t d) {
  return d ? (double)n / (double)d : 0.0;
}

int mp_layer_verdict_of(const mp_verdict_tensor *t, size_t n, const mp_advice_params *p,
                        mp_layer_verdict *v) {
  *v = (mp_layer_verdict){.fp8_e4m3_fits = -1, .fp8_e5m2_fits = -1};
  /* At most three reasons per tensor (non-finite, bf16, fp16) and five for the layer. */
  v->reasons = malloc((3 * n + 5) * sizeof *v->reasons);
  if (!v->reasons) return -1;
  bool fwd16 = true, grad1 = true, gwin = true, bf16 = true, wide_failed = false;
  int lo = p->scale_log2_min, hi = p->scale_log2_max;
  int true_lo = INT_MIN, true_hi = INT_MAX; /* the true edges' intersection */
  uint64_t nz = 0, ovf16 = 0, unf16 = 0, ovfb = 0, unfb = 0;
  for (size_t i = 0; i < n; i++) {
    const mp_verdict_tensor *x = &t[i];
    const mp_advice *d = x->adv;
    if (x->cls != MP_TCLASS_FORWARD && x->cls != MP_TCLASS_GRADIENT) continue;
    /* Before the values test: an output fp32 made all NaN holds none. */
    if (x->nonfinite_wide) {
      wide_failed = true;
      note(v, MP_REASON_NONFINITE_WIDE, (int)i);
    }
    if (!x->has_values) continue;
    v->known = true;
    nz += x->nonzero;
    ovf16 += x->fp16_overflow;
    unf16 += x->fp16_underflow;
    ovfb += x->bf16_overflow;
    unfb += x->bf16_underflow;
    if (!x->nonfinite_wide && d->nonfinite_input) note(v, MP_REASON_NONFINITE_INPUT, (int)i);
    if (!d->bf16_ok) {
      bf16 = false;
      note(v, MP_REASON_BF16_UNFIT, (int)i);
    }
    if (x->cls == MP_TCLASS_FORWARD) {
      if (v->fp8_e4m3_fits < 0) v->fp8_e4m3_fits = 1;
      if (!d->fp8_e4m3.fits) v->fp8_e4m3_fits = 0;
      if (d->fp8_e4m3.underflow_fraction > v->fp8_e4m3_underflow)
        v->fp8_e4m3_underflow = d->fp8_e4m3.underflow_fraction;
      if (d->fp16 != MP_FP16_SAFE) {
        fwd16 = false;
        note(v,
             d->fp16_overflow_fraction > 0 ? MP_REASON_FWD_FP16_OVERFLOW
                                           : MP_REASON_FWD_FP16_UNDERFLOW,
             (int)i);
      }
      continue;
    }
    v->has_gradients = true;
    if (v->fp8_e5m2_fits < 0) v->fp8_e5m2_fits = 1;
    if (!d->fp8_e5m2.fits) v->fp8_e5m2_fits = 0;
    if (d->fp8_e5m2.underflow_fraction > v->fp8_e5m2_underflow)
      v->fp8_e5m2_underflow = d->fp8_e5m2.underflow_fraction;
    if (d->fp16 != MP_FP16_SAFE) grad1 = false;
    if (!d->has_window) {
      gwin = false;
      note(v, MP_REASON_GRAD_NO_WINDOW, (int)i);
      continue;
    }
    if (d->window_lo > lo) lo = d->window_lo;
    if (d->window_hi < hi) hi = d->window_hi;
    int tw[2];
    mp_loss_scale_true_window(d->window_lo, d->window_hi, d->beyond_lo, d->beyond_hi, tw);
    if (tw[0] > true_lo) true_lo = tw[0];
    if (tw[1] < true_hi) true_hi = tw[1];
    if (d->window_estimate) v->window_estimate = true;
    if (d->fp16 != MP_FP16_SAFE) note(v, MP_REASON_GRAD_WINDOW, (int)i);
  }
  v->fp16_overflow = frac(ovf16, nz);
  v->fp16_underflow = frac(unf16, nz);
  v->bf16_overflow = frac(ovfb, nz);
  v->bf16_underflow = frac(unfb, nz);
  /* Gradients scanned but never seen finite and non-zero support no verdict,
   * unless an op made NaN/Inf in fp32 there: then fp32 is the verdict. */
  bool grads_scanned = false, grads_seen = false;
  int never = -1;
  for (size_t i = 0; i < n; i++) {
    if (t[i].cls != MP_TCLASS_GRADIENT || t[i].count == 0) continue;
    grads_scanned = true;
    if (t[i].has_values)
      grads_seen = true;
    else
      never = (int)i;
  }
  if (grads_scanned && !grads_seen && !wide_failed) {
    /* No verdict, and no fp8 claim either: a "fits e4m3" from the forward
     * tensors alone would read as clean beside gradients of Inf/NaN. */
    v->known = false;
    v->fp8_e4m3_fits = v->fp8_e5m2_fits = -1;
    note(v, MP_REASON_GRAD_NEVER_SEEN, never);
    return 0;
  }
  if (wide_failed) v->known = true; /* fp32 failing is evidence enough */
  if (!v->known) {
    note(v, MP_REASON_NO_VALUES, -1);
    return 0;
  }
  if (v->has_gradients && gwin) {
    if (lo <= hi) {
      v->has_window = true;
      v->window_lo = lo;
      v->window_hi = hi;
      v->beyond_lo = lo - true_lo;
      v->beyond_hi = true_hi - hi;
    } else {
      gwin = false;
      note(v, MP_REASON_WINDOWS_DISJOINT, -1);
    }
  }
  if (wide_failed) { /* fp32 already made NaN/Inf: nothing narrower is shown safe */
    v->rec = MP_REC_FP32;
    v->nonfinite_wide = true;
    if (v->fp8_e4m3_fits > 0) v->fp8_e4m3_fits = 0;
    if (v->fp8_e5m2_fits > 0) v->fp8_e5m2_fits = 0;
  } else if (fwd16 && (!v->has_gradients || grad1))
    v->rec = MP_REC_FP16;
  else if (fwd16 && gwin)
    v->rec = MP_REC_FP16_LOSS_SCALE;
  else if (bf16)
    v->rec = MP_REC_BF16;
  else
    v->rec = MP_REC_FP32;
  static const mp_reason_code rec_reason[] = {
      [MP_REC_FP16] = MP_REASON_REC_FP16,
      [MP_REC_FP16_LOSS_SCALE] = MP_REASON_REC_FP16_LOSS_SCALE,
      [MP_REC_BF16] = MP_REASON_REC_BF16,
      [MP_REC_FP32] = MP_REASON_REC_FP32,
  };
  note(v, rec_reason[v->rec], -1);
  /* A loss scale only matters to layers that run in fp16. */
  if (v->rec != MP_REC_FP16 && v->rec != MP_REC_FP16_LOSS_SCALE) v->has_window = false;
  if (v->fp8_e4m3_fits >= 0) note(v, MP_REASON_FP8_E4M3, -1);
  if (v->fp8_e5m2_fits >= 0) note(v, MP_REASON_FP8_E5M2, -1);
  return 0;
}

void mp_layer_verdict_free(mp_layer_verdict *v) {
  if (!v) return;
  free(v->reasons);
  v->reasons = NULL;
  v->n_reasons = 0;
}
