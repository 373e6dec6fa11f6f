/* Precision advice per layer and the global loss scale.
 *
 * A layer's tensors are the merged stats of its sites' tensors, per phase and
 * role ("forward.D", "backward.dw"). Forward tensors (activations, weights)
 * are never scaled, so they must fit fp16 at scale 1; gradients (backward
 * outputs, dy) are scaled by the loss scale, so they need a window of scales
 * 2^k in which they fit. The verdict uses analysis/advice.h (mp_advise, the
 * function `mpprof inspect` uses) on each tensor and combines:
 *   fp16            every forward tensor and every gradient fits at scale 1
 *   fp16_loss_scale forward tensors fit at scale 1, gradients' windows intersect
 *   bf16            every tensor fits bf16
 *   fp32            otherwise
 * Backward GEMM inputs A/B (one is a gradient, the other an activation or a
 * weight: the call does not say which) are reported but take no part. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

const char *mpprof_tclass_name(mpprof_tclass c) {
  static const char *const names[] = {"forward", "gradient", "ambiguous", "optimizer"};
  return (unsigned)c < MPPROF_TCLASS_COUNT ? names[c] : "unknown";
}

static bool role_is(const char *role, const char *const *set) {
  for (; *set; set++)
    if (!strcmp(role, *set)) return true;
  return false;
}

static mpprof_tclass class_of(mpprof_phase phase, const char *role) {
  static const char *const grads[] = {"D", "C", "y", "dx", "dw", "dy", NULL};
  static const char *const fwd[] = {"x", "w", NULL};
  switch (phase) {
  case MPPROF_PHASE_BACKWARD:
    if (role_is(role, grads)) return MPPROF_TC_GRADIENT;
    if (role_is(role, fwd)) return MPPROF_TC_FORWARD;
    return MPPROF_TC_AMBIGUOUS;
  case MPPROF_PHASE_OPTIMIZER:
    return MPPROF_TC_OPTIMIZER;
  default:
    return MPPROF_TC_FORWARD;
  }
}

static int add_reason(mpprof_layer_advice *a, char *s) {
  if (!s) return -1;
  cJSON *str = cJSON_CreateString(s);
  free(s);
  if (!str) return -1;
  cJSON_AddItemToArray(a->reasons, str);
  return 0;
}

/* Merge the layer's site tensors into per phase.role tensors. */
static int collect_tensors(mpprof_model *m, mpprof_layer *l, mp_stats scratch[2]) {
  for (size_t i = 0; i < l->n_sites; i++) {
    const mpprof_site *s = &m->sites[l->first_site + i];
    for (size_t t = 0; t < s->n_tensors; t++) {
      char *name = mpprof_asprintf("%s.%s", mpprof_phase_name(s->phase), s->tensors[t].role);
      if (!name) return -1;
      size_t j = 0;
      while (j < l->n_tensors && strcmp(l->tensors[j].name, name))
        j++;
      if (j < l->n_tensors) {
        free(name);
        if (mpprof_cstats_merge(&l->tensors[j].st, &s->tensors[t].st, scratch)) return -1;
        continue;
      }
      mpprof_layer_tensor *nt = realloc(l->tensors, (l->n_tensors + 1) * sizeof *nt);
      if (!nt) {
        free(name);
        return -1;
      }
      l->tensors = nt;
      memset(&nt[j], 0, sizeof nt[j]);
      nt[j].name = name;
      nt[j].cls = class_of(s->phase, s->tensors[t].role);
      nt[j].st.nz_lo = 1;
      mpprof_cstats_unpack(&s->tensors[t].st, &scratch[0]);
      if (mpprof_cstats_pack(&scratch[0], &nt[j].st)) return -1;
      l->n_tensors++;
    }
  }
  return 0;
}

static double frac(uint64_t n, uint64_t d) {
  return d ? (double)n / (double)d : 0.0;
}

/* The reasons and the verdict of one layer. */
static int judge(const mp_advice_params *prm, mpprof_layer *l) {
  mpprof_layer_advice *a = &l->adv;
  a->reasons = cJSON_CreateArray();
  if (!a->reasons) return -1;
  bool any = false, fwd16 = true, grad1 = true, gwin = true, bf16 = true;
  int lo = prm->scale_log2_min, hi = prm->scale_log2_max;
  a->fp8_e4m3_fits = a->fp8_e5m2_fits = -1;
  uint64_t nz = 0, ovf16 = 0, unf16 = 0, ovfb = 0, unfb = 0;
  double e4 = 0, e5 = 0;
  for (size_t i = 0; i < l->n_tensors; i++) {
    mpprof_layer_tensor *t = &l->tensors[i];
    const mp_advice *d = &t->adv;
    if (!t->has_values || (t->cls != MPPROF_TC_FORWARD && t->cls != MPPROF_TC_GRADIENT)) continue;
    any = true;
    uint64_t tnz = t->st.count - t->st.zeros - t->st.nans - t->st.pos_infs - t->st.neg_infs;
    nz += tnz;
    ovf16 += t->st.casts[MP_TGT_FP16][MP_CAST_OVERFLOW];
    unf16 += t->st.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW];
    ovfb += t->st.casts[MP_TGT_BF16][MP_CAST_OVERFLOW];
    unfb += t->st.casts[MP_TGT_BF16][MP_CAST_UNDERFLOW];
    if (d->nonfinite_input &&
        add_reason(a, mpprof_asprintf("%s already holds non-finite values (%llu NaN, %llu inf)",
                                      t->name, (unsigned long long)t->st.nans,
                                      (unsigned long long)(t->st.pos_infs + t->st.neg_infs))))
      return -1;
    if (!d->bf16_ok) {
      bf16 = false;
      if (add_reason(a, mpprof_asprintf(
                            "%s does not fit bf16: %.3g%% overflow, %.3g%% flush to "
                            "zero (absmax %.4g, smallest |x| %.4g)",
                            t->name, 100 * frac(t->st.casts[MP_TGT_BF16][MP_CAST_OVERFLOW], tnz),
                            100 * frac(t->st.casts[MP_TGT_BF16][MP_CAST_UNDERFLOW], tnz),
                            t->st.absmax, t->st.min_abs_nonzero)))
        return -1;
    }
    if (t->cls == MPPROF_TC_FORWARD) {
      if (a->fp8_e4m3_fits < 0) a->fp8_e4m3_fits = 1;
      if (!d->fp8_e4m3.fits) a->fp8_e4m3_fits = 0;
      if (d->fp8_e4m3.underflow_fraction > e4) e4 = d->fp8_e4m3.underflow_fraction;
      if (d->fp16 != MP_FP16_SAFE) {
        fwd16 = false;
        char *r;
        if (d->fp16_overflow_fraction > 0)
          r = mpprof_asprintf("%s overflows fp16 in %.3g%% of values (absmax %.4g > fp16 max "
                              "65504); forward tensors are not loss-scaled",
                              t->name, 100 * d->fp16_overflow_fraction, t->st.absmax);
        else
          r = mpprof_asprintf("%s flushes to zero in fp16 for %.3g%% of values at scale 1 "
                              "(smallest |x| %.4g; allowed %.3g%%); forward tensors are not "
                              "loss-scaled",
                              t->name, 100 * d->fp16_underflow_fraction, t->st.min_abs_nonzero,
                              100 * prm->underflow_max);
        if (add_reason(a, r)) return -1;
      }
    } else {
      a->has_gradients = true;
      if (a->fp8_e5m2_fits < 0) a->fp8_e5m2_fits = 1;
      if (!d->fp8_e5m2.fits) a->fp8_e5m2_fits = 0;
      if (d->fp8_e5m2.underflow_fraction > e5) e5 = d->fp8_e5m2.underflow_fraction;
      if (d->fp16 != MP_FP16_SAFE) grad1 = false;
      if (!d->has_window) {
        gwin = false;
        if (add_reason(a, mpprof_asprintf("%s: no loss scale in [2^%d, 2^%d] fits fp16 (%.3g%% "
                                          "overflow, %.3g%% flush to zero at scale 1; |x| from "
                                          "%.4g to %.4g)",
                                          t->name, prm->scale_log2_min, prm->scale_log2_max,
                                          100 * d->fp16_overflow_fraction,
                                          100 * d->fp16_underflow_fraction, t->st.min_abs_nonzero,
                                          t->st.absmax)))
          return -1;
        continue;
      }
      if (d->window_lo > lo) lo = d->window_lo;
      if (d->window_hi < hi) hi = d->window_hi;
      if (d->window_estimate) a->window_estimate = true;
      if (d->fp16 != MP_FP16_SAFE &&
          add_reason(a,
                     mpprof_asprintf("%s: %.3g%% of gradients flush to zero and %.3g%% "
                                     "overflow in fp16 at scale 1; loss scales 2^%d..2^%d fit",
                                     t->name, 100 * d->fp16_underflow_fraction,
                                     100 * d->fp16_overflow_fraction, d->window_lo, d->window_hi)))
        return -1;
    }
  }
  l->fp16_overflow_pct = 100 * frac(ovf16, nz);
  l->fp16_underflow_pct = 100 * frac(unf16, nz);
  l->bf16_overflow_pct = 100 * frac(ovfb, nz);
  l->bf16_underflow_pct = 100 * frac(unfb, nz);
  l->e4m3_underflow_pct = 100 * e4;
  l->e5m2_underflow_pct = 100 * e5;
  a->known = any;
  if (!any)
    return add_reason(a, strdup("no scanned values in forward or backward tensors: no verdict"));
  if (a->has_gradients && gwin) {
    if (lo <= hi) {
      a->has_window = true;
      a->window_lo = lo;
      a->window_hi = hi;
    } else {
      gwin = false;
      if (add_reason(a, strdup("the loss-scale windows of this layer's gradients do not "
                               "intersect")))
        return -1;
    }
  }
  char *r;
  if (fwd16 && (!a->has_gradients || grad1)) {
    a->rec = MP_REC_FP16;
    r = mpprof_asprintf("fp16: every forward tensor%s fits fp16 at scale 1 (%.3g%% overflow, "
                        "%.3g%% flush to zero)",
                        a->has_gradients ? " and gradient" : "", l->fp16_overflow_pct,
                        l->fp16_underflow_pct);
  } else if (fwd16 && gwin) {
    a->rec = MP_REC_FP16_LOSS_SCALE;
    r = mpprof_asprintf("fp16_loss_scale: forward tensors fit fp16 at scale 1; gradients fit "
                        "with any loss scale in [2^%d, 2^%d]%s",
                        a->window_lo, a->window_hi,
                        a->window_estimate ? " (boundary estimate)" : "");
  } else if (bf16) {
    a->rec = MP_REC_BF16;
    r = mpprof_asprintf("bf16: not fp16-safe (see above) but every tensor fits bf16 (%.3g%% "
                        "overflow, %.3g%% flush to zero)",
                        l->bf16_overflow_pct, l->bf16_underflow_pct);
  } else {
    a->rec = MP_REC_FP32;
    r = strdup("fp32: values do not fit bf16 (see above)");
  }
  if (add_reason(a, r)) return -1;
  /* A loss scale only matters to layers that run in fp16. */
  if (a->rec != MP_REC_FP16 && a->rec != MP_REC_FP16_LOSS_SCALE) a->has_window = false;
  if (a->fp8_e4m3_fits >= 0 &&
      add_reason(a, mpprof_asprintf("fp8_e4m3 for forward tensors with per-tensor scaling: %s "
                                    "(worst flush to zero %.3g%%, allowed %.3g%%)",
                                    a->fp8_e4m3_fits ? "fits" : "does not fit", 100 * e4,
                                    100 * prm->fp8_underflow_max)))
    return -1;
  if (a->fp8_e5m2_fits >= 0 &&
      add_reason(a, mpprof_asprintf("fp8_e5m2 for gradients with per-tensor scaling: %s (worst "
                                    "flush to zero %.3g%%, allowed %.3g%%)",
                                    a->fp8_e5m2_fits ? "fits" : "does not fit", 100 * e5,
                                    100 * prm->fp8_underflow_max)))
    return -1;
  return 0;
}

static int global_loss_scale(mpprof_model *m) {
  mpprof_loss_scale *g = &m->loss_scale;
  g->limited_by = cJSON_CreateArray();
  if (!g->limited_by) return -1;
  int lo = INT32_MIN, hi = INT32_MAX;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer_advice *a = &m->layers[i].adv;
    if (!a->has_window || (a->rec != MP_REC_FP16 && a->rec != MP_REC_FP16_LOSS_SCALE)) continue;
    g->applicable = true;
    if (a->window_lo > lo) lo = a->window_lo;
    if (a->window_hi < hi) hi = a->window_hi;
  }
  if (!g->applicable) return 0;
  g->has_window = lo <= hi;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer_advice *a = &m->layers[i].adv;
    if (!a->has_window || (a->rec != MP_REC_FP16 && a->rec != MP_REC_FP16_LOSS_SCALE)) continue;
    /* Non-empty: the layers whose bound is the window's bound. Empty: the
     * layers on either side of the conflict. */
    bool binding = g->has_window ? (a->window_lo == lo || a->window_hi == hi)
                                 : (a->window_lo > hi || a->window_hi < lo);
    if (binding) cJSON_AddItemToArray(g->limited_by, cJSON_CreateString(m->layers[i].name));
  }
  if (g->has_window) {
    g->window_lo = lo;
    g->window_hi = hi;
    g->recommended_log2 = (int)floor((lo + (double)hi) / 2); /* most margin both ways */
    g->needed = !(lo <= 0 && 0 <= hi);
  }
  return 0;
}

int mpprof_advise_layers(mpprof_model *m) {
  mp_stats *scratch = malloc(2 * sizeof *scratch);
  if (!scratch) return -1;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < m->n_layers; i++) {
    mpprof_layer *l = &m->layers[i];
    if (collect_tensors(m, l, scratch)) {
      rc = -1;
      break;
    }
    for (size_t t = 0; t < l->n_tensors; t++) {
      mpprof_layer_tensor *lt = &l->tensors[t];
      mpprof_cstats_unpack(&lt->st, &scratch[0]);
      lt->has_values = mp_stats_nonzero_finite(&scratch[0]) > 0;
      mp_advise(&scratch[0], &m->params, &lt->adv);
    }
    rc = judge(&m->params, l);
  }
  free(scratch);
  return rc ? rc : global_loss_scale(m);
}
