/* Precision advice per layer and the global loss scale.
 *
 * A layer's tensors are the merged stats of its sites' tensors, per phase and
 * role ("forward.D", "backward.dw"), each advised by analysis/advice.h
 * (mp_advise, the function `mpprof inspect` uses) and classed here (forward,
 * gradient, ambiguous, optimizer). The verdict is analysis/verdict.h's
 * (mp_layer_verdict_of); this file turns its reason codes into sentences. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

static bool role_is(const char *role, const char *const *set) {
  for (; *set; set++)
    if (!strcmp(role, *set)) return true;
  return false;
}

static mp_tclass class_of(mpprof_phase phase, const char *role) {
  static const char *const grads[] = {"D", "C", "y", "dx", "dw", "dy", NULL};
  static const char *const fwd[] = {"x", "w", NULL};
  switch (phase) {
  case MPPROF_PHASE_BACKWARD:
    if (role_is(role, grads)) return MP_TCLASS_GRADIENT;
    if (role_is(role, fwd)) return MP_TCLASS_FORWARD;
    return MP_TCLASS_AMBIGUOUS;
  case MPPROF_PHASE_OPTIMIZER:
    return MP_TCLASS_OPTIMIZER;
  default:
    return MP_TCLASS_FORWARD;
  }
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

/* The sentence of one reason code (analysis/verdict.h) of layer l. */
static char *reason_text(const mp_reason *r, const mpprof_layer *l, const mp_layer_verdict *v,
                         const mp_advice_params *prm) {
  const mpprof_layer_tensor *t = r->tensor >= 0 ? &l->tensors[r->tensor] : NULL;
  const mp_advice *d = t ? &t->adv : NULL;
  uint64_t tnz = t ? t->st.count - t->st.zeros - t->st.nans - t->st.pos_infs - t->st.neg_infs : 0;
  switch (r->code) {
  case MP_REASON_NONFINITE_INPUT:
    return mpprof_asprintf("%s already holds non-finite values (%llu NaN, %llu inf)", t->name,
                           (unsigned long long)t->st.nans,
                           (unsigned long long)(t->st.pos_infs + t->st.neg_infs));
  case MP_REASON_BF16_UNFIT:
    return mpprof_asprintf("%s does not fit bf16: %.3g%% overflow, %.3g%% flush to "
                           "zero (absmax %.4g, smallest |x| %.4g)",
                           t->name, 100 * frac(t->st.casts[MP_TGT_BF16][MP_CAST_OVERFLOW], tnz),
                           100 * frac(t->st.casts[MP_TGT_BF16][MP_CAST_UNDERFLOW], tnz),
                           t->st.absmax, t->st.min_abs_nonzero);
  case MP_REASON_FWD_FP16_OVERFLOW:
    return mpprof_asprintf("%s overflows fp16 in %.3g%% of values (absmax %.4g > fp16 max "
                           "%.6g); forward tensors are not loss-scaled",
                           t->name, 100 * d->fp16_overflow_fraction, t->st.absmax,
                           mp_format_of(MP_FP16)->max_finite);
  case MP_REASON_FWD_FP16_UNDERFLOW:
    return mpprof_asprintf("%s flushes to zero in fp16 for %.3g%% of values at scale 1 "
                           "(smallest |x| %.4g; allowed %.3g%%); forward tensors are not "
                           "loss-scaled",
                           t->name, 100 * d->fp16_underflow_fraction, t->st.min_abs_nonzero,
                           100 * prm->underflow_max);
  case MP_REASON_GRAD_NO_WINDOW:
    return mpprof_asprintf("%s: no loss scale in [2^%d, 2^%d] fits fp16 (%.3g%% "
                           "overflow, %.3g%% flush to zero at scale 1; |x| from "
                           "%.4g to %.4g)",
                           t->name, prm->scale_log2_min, prm->scale_log2_max,
                           100 * d->fp16_overflow_fraction, 100 * d->fp16_underflow_fraction,
                           t->st.min_abs_nonzero, t->st.absmax);
  case MP_REASON_GRAD_WINDOW:
    return mpprof_asprintf("%s: %.3g%% of gradients flush to zero and %.3g%% "
                           "overflow in fp16 at scale 1; loss scales 2^%d..2^%d fit",
                           t->name, 100 * d->fp16_underflow_fraction,
                           100 * d->fp16_overflow_fraction, d->window_lo, d->window_hi);
  case MP_REASON_NO_VALUES:
    return strdup("no scanned values in forward or backward tensors: no verdict");
  case MP_REASON_WINDOWS_DISJOINT:
    return strdup("the loss-scale windows of this layer's gradients do not intersect");
  case MP_REASON_REC_FP16:
    return mpprof_asprintf("fp16: every forward tensor%s fits fp16 at scale 1 (%.3g%% overflow, "
                           "%.3g%% flush to zero)",
                           v->has_gradients ? " and gradient" : "", 100 * v->fp16_overflow,
                           100 * v->fp16_underflow);
  case MP_REASON_REC_FP16_LOSS_SCALE:
    return mpprof_asprintf("fp16_loss_scale: forward tensors fit fp16 at scale 1; gradients fit "
                           "with any loss scale in [2^%d, 2^%d]%s",
                           v->window_lo, v->window_hi,
                           v->window_estimate ? " (boundary estimate)" : "");
  case MP_REASON_REC_BF16:
    return mpprof_asprintf("bf16: not fp16-safe (see above) but every tensor fits bf16 (%.3g%% "
                           "overflow, %.3g%% flush to zero)",
                           100 * v->bf16_overflow, 100 * v->bf16_underflow);
  case MP_REASON_REC_FP32:
    return strdup("fp32: values do not fit bf16 (see above)");
  case MP_REASON_FP8_E4M3:
    return mpprof_asprintf("fp8_e4m3 for forward tensors with per-tensor scaling: %s "
                           "(worst flush to zero %.3g%%, allowed %.3g%%)",
                           v->fp8_e4m3_fits ? "fits" : "does not fit", 100 * v->fp8_e4m3_underflow,
                           100 * prm->fp8_underflow_max);
  case MP_REASON_FP8_E5M2:
    return mpprof_asprintf("fp8_e5m2 for gradients with per-tensor scaling: %s (worst "
                           "flush to zero %.3g%%, allowed %.3g%%)",
                           v->fp8_e5m2_fits ? "fits" : "does not fit", 100 * v->fp8_e5m2_underflow,
                           100 * prm->fp8_underflow_max);
  case MP_REASON_COUNT:
    break;
  }
  return mpprof_asprintf("%s", mp_reason_code_name(r->code));
}

/* The verdict of one layer (analysis/verdict.h) and its reasons as sentences. */
static int judge(const mp_advice_params *prm, mpprof_layer *l) {
  mpprof_layer_advice *a = &l->adv;
  a->reasons = cJSON_CreateArray();
  mp_verdict_tensor *in = calloc(l->n_tensors ? l->n_tensors : 1, sizeof *in);
  if (!a->reasons || !in) {
    free(in);
    return -1;
  }
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    in[i] = (mp_verdict_tensor){.cls = t->cls,
                                .has_values = t->has_values,
                                .adv = &t->adv,
                                .nonzero = t->st.count - t->st.zeros - t->st.nans - t->st.pos_infs -
                                           t->st.neg_infs,
                                .fp16_overflow = t->st.casts[MP_TGT_FP16][MP_CAST_OVERFLOW],
                                .fp16_underflow = t->st.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW],
                                .bf16_overflow = t->st.casts[MP_TGT_BF16][MP_CAST_OVERFLOW],
                                .bf16_underflow = t->st.casts[MP_TGT_BF16][MP_CAST_UNDERFLOW]};
  }
  mp_layer_verdict v;
  int rc = mp_layer_verdict_of(in, l->n_tensors, prm, &v);
  free(in);
  if (rc) return -1;
  a->known = v.known;
  a->rec = v.rec;
  a->has_gradients = v.has_gradients;
  a->has_window = v.has_window;
  a->window_lo = v.window_lo;
  a->window_hi = v.window_hi;
  a->window_estimate = v.window_estimate;
  a->fp8_e4m3_fits = v.fp8_e4m3_fits;
  a->fp8_e5m2_fits = v.fp8_e5m2_fits;
  l->fp16_overflow_pct = 100 * v.fp16_overflow;
  l->fp16_underflow_pct = 100 * v.fp16_underflow;
  l->bf16_overflow_pct = 100 * v.bf16_overflow;
  l->bf16_underflow_pct = 100 * v.bf16_underflow;
  l->e4m3_underflow_pct = 100 * v.fp8_e4m3_underflow;
  l->e5m2_underflow_pct = 100 * v.fp8_e5m2_underflow;
  for (size_t i = 0; rc == 0 && i < v.n_reasons; i++) {
    char *s = reason_text(&v.reasons[i], l, &v, prm);
    cJSON *str = s ? cJSON_CreateString(s) : NULL;
    free(s);
    if (!str)
      rc = -1;
    else
      cJSON_AddItemToArray(a->reasons, str);
  }
  mp_layer_verdict_free(&v);
  return rc;
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
