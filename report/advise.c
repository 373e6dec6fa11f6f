/* Precision advice per layer and the global loss scale.
 *
 * A layer's tensors are the merged stats of its sites' tensors, per phase and
 * role ("forward.D", "backward.dw"), each advised by analysis/advice.h
 * (mp_advise, the function `mpprof inspect` uses) and classed here (forward,
 * gradient, ambiguous, optimizer). The verdict is analysis/verdict.h's
 * (mp_layer_verdict_of); this file turns its reason codes into sentences. *
 * Gradients are judged in unscaled terms: a site's stats were all taken under
 * one declared loss scale (the raw site's loss_scale), so each gradient
 * tensor is divided by it (mp_stats_unscale: exact for a power of two) before
 * it is merged; the record as taken stays beside it (at_scale) for the
 * "at the applied scale" shares. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/raw_format.h"
#include "report/report_internal.h"

static bool role_is(const char *role, const char *const *set) {
  for (; *set; set++)
    if (!strcmp(role, *set)) return true;
  return false;
}

static mp_tclass class_of(mpprof_phase phase, const char *role) {
  /* A blended output's prior value (y_prior, ...) is of its output's class,
   * a bias gradient (dbias, cuBLASLt's BGRAD epilogues) a gradient; the
   * pre-GELU values a DGELU epilogue reads back (aux_in) are the forward's. */
  static const char *const grads[] = {"D",       "C",        "y",        "dx",    "dw", "dy",
                                      "y_prior", "dx_prior", "dw_prior", "dbias", NULL};
  static const char *const fwd[] = {"x", "w", MP_ROLE_AUX_IN, NULL};
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

static bool is_output_role(const char *role) {
  static const char *const outs[] = {"D", "y", "dx", "dw", "dbias", MP_ROLE_AUX, NULL};
  return role_is(role, outs);
}

/* dst = src when first, else dst += src. */
static int add_stats(mpprof_cstats *dst, bool first, const mpprof_cstats *src) {
  return first ? mpprof_cstats_copy(src, dst) : mpprof_cstats_merge(dst, src);
}

/* The site tensor in true (unscaled) values: the recorded stats divided by
 * the declared scale of the site. ret_exact: false for an estimate. */
static int unscaled(const mpprof_site *s, const mpprof_cstats *src, mpprof_cstats *ret,
                    bool *ret_exact, bool *ret_casts_estimate, mp_stats scratch[2]) {
  mpprof_cstats_unpack(src, &scratch[0]);
  *ret_exact = mp_stats_unscale(&scratch[0], s->loss_scale, &scratch[1], ret_casts_estimate);
  ret->nz_lo = 1;
  return mpprof_cstats_pack(&scratch[1], ret);
}

static mpprof_layer_tensor *layer_tensor(mpprof_layer *l, const mpprof_site *s, const char *role,
                                         bool *ret_new) {
  char *name = mpprof_asprintf("%s.%s", mpprof_phase_name(s->phase), role);
  if (!name) return NULL;
  *ret_new = false;
  for (size_t j = 0; j < l->n_tensors; j++)
    if (!strcmp(l->tensors[j].name, name)) {
      free(name);
      return &l->tensors[j];
    }
  mpprof_layer_tensor *nt = realloc(l->tensors, (l->n_tensors + 1) * sizeof *nt);
  if (!nt) {
    free(name);
    return NULL;
  }
  l->tensors = nt;
  mpprof_layer_tensor *t = &nt[l->n_tensors++];
  memset(t, 0, sizeof *t);
  t->name = name;
  t->cls = class_of(s->phase, role);
  t->output = is_output_role(role);
  t->st.nz_lo = t->at_scale.nz_lo = 1;
  *ret_new = true;
  return t;
}

/* Site s's outputs were made from finite values: none of its input roles
 * held NaN or Inf in its scanned calls, and one of them was scanned. */
static bool inputs_seen_finite(const mpprof_site *s, const mpprof_role_stats *ts) {
  bool scanned = false;
  for (size_t q = 0; q < s->n_tensors; q++) {
    if (is_output_role(ts[q].role)) continue;
    if (ts[q].st.nans + ts[q].st.pos_infs + ts[q].st.neg_infs) return false;
    scanned |= ts[q].st.count > 0;
  }
  return scanned;
}

/* The +-Inf of role r of forward site s, an fp16 output, that its op made
 * from finite values (else 0: not known). */
static uint64_t op_made_infs(const mpprof_site *s, const mpprof_role_stats *ts, size_t r) {
  const mpprof_cstats *d = &ts[r].st;
  if (!is_output_role(ts[r].role) || d->dtype != MP_FP16) return 0;
  return inputs_seen_finite(s, ts) ? d->pos_infs + d->neg_infs : 0;
}

/* The NaN/Inf of output role r of site s that its op made in fp32/fp64 from
 * finite inputs (else 0): fp32 itself failed there. An input's NaN/Inf, or
 * an output's whose inputs held some, were made elsewhere (upstream, perhaps
 * in fp16 and cast up; the finding first_nonfinite names where): the finite
 * values decide, as for fp16 (op_made_infs). */
static uint64_t wide_nonfinite(const mpprof_site *s, const mpprof_role_stats *ts, size_t r) {
  const mpprof_cstats *d = &ts[r].st;
  if ((d->dtype != MP_FP32 && d->dtype != MP_FP64) || !is_output_role(ts[r].role)) return 0;
  uint64_t n = d->nans + d->pos_infs + d->neg_infs;
  return n && inputs_seen_finite(s, ts) ? n : 0;
}

/* Merge one site's tensors ts into the layer's per phase.role tensors. */
static int collect_site(mpprof_layer *l, const mpprof_site *s, const mpprof_role_stats *ts,
                        mp_stats scratch[2]) {
  for (size_t r = 0; r < s->n_tensors; r++) {
    bool first;
    mpprof_layer_tensor *t = layer_tensor(l, s, ts[r].role, &first);
    if (!t) return -1;
    const mpprof_cstats *src = &ts[r].st;
    t->scanned_calls += s->scanned_calls;
    for (int f = 0; f < 2; f++)
      if (src->dtype == mpprof_saturated_formats[f]) t->saturated_as[f] += src->saturated;
    if (s->loss_scale > 0) { /* the scale backward tensors were taken at */
      if (t->scale_min == 0 || s->loss_scale < t->scale_min) t->scale_min = s->loss_scale;
      if (s->loss_scale > t->scale_max) t->scale_max = s->loss_scale;
    } else {
      t->scale_undeclared = true;
    }
    if (s->phase == MPPROF_PHASE_FORWARD || !(s->loss_scale > 1))
      t->wide_nonfinite += wide_nonfinite(s, ts, r);
    if (t->cls != MP_TCLASS_GRADIENT) {
      /* Not where a forward-class output may be a loss-scaled gradient (no
       * phase marker, a declared scale > 1): its Inf are the scale's
       * overflow, which a scaler skips (loss_scale_overflow's business). */
      if (t->cls == MP_TCLASS_FORWARD && (s->phase == MPPROF_PHASE_FORWARD || !(s->loss_scale > 1)))
        t->op_infs += op_made_infs(s, ts, r);
      if (add_stats(&t->st, first, src)) return -1;
      continue;
    }
    if (add_stats(&t->at_scale, first, src)) return -1;
    if (s->loss_scale <= 0 || s->loss_scale == 1) {
      if (add_stats(&t->st, first, src)) return -1;
      continue;
    }
    mpprof_cstats u = {.nz_lo = 1};
    bool exact, casts_estimate;
    int rc = unscaled(s, src, &u, &exact, &casts_estimate, scratch);
    if (!rc) rc = add_stats(&t->st, first, &u);
    mpprof_cstats_free(&u);
    if (rc) return -1;
    if (!exact) t->unscale_estimate = true;
    if (casts_estimate) t->casts_estimate = true;
  }
  return 0;
}

/* Merge the layer's site tensors into per phase.role tensors. */
static int collect_tensors(mpprof_model *m, mpprof_layer *l, mp_stats scratch[2]) {
  for (size_t i = 0; i < l->n_sites; i++) {
    const mpprof_site *s = &m->sites[l->first_site + i];
    const mpprof_role_stats *ts;
    bool owned;
    if (mpprof_site_tensors(s, &ts, &owned)) return -1;
    int rc = collect_site(l, s, ts, scratch);
    if (owned) mpprof_role_stats_free((mpprof_role_stats *)ts, s->n_tensors);
    if (rc) return -1;
  }
  return 0;
}

/* The worst of the layer's forward and gradient tensors (or gradients only)
 * by a share: the layer table's columns and the findings both use it. */
static mpprof_share worst_share(const mpprof_layer *l, mp_target tgt, mp_cast_outcome o,
                                bool gradients_at_scale) {
  mpprof_share w = {0};
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (!t->has_values) continue;
    if (gradients_at_scale ? t->cls != MP_TCLASS_GRADIENT
                           : t->cls != MP_TCLASS_FORWARD && t->cls != MP_TCLASS_GRADIENT)
      continue;
    mpprof_share s = mpprof_share_of(t, tgt, o, gradients_at_scale);
    if (!w.tensor || s.pct > w.pct) w = s;
  }
  return w;
}

static mpprof_share worst_fp8(const mpprof_layer *l, mp_tclass cls, bool e5m2) {
  mpprof_share w = {0};
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (!t->has_values || t->cls != cls) continue;
    const mp_fp8_advice *f = e5m2 ? &t->adv.fp8_e5m2 : &t->adv.fp8_e4m3;
    mpprof_share s = mpprof_share_of(t, MP_TGT_FP16, MP_CAST_UNDERFLOW, false);
    s.num = (uint64_t)(f->underflow_fraction * (double)s.den + 0.5);
    s.pct = 100 * f->underflow_fraction;
    s.estimate = s.estimate || f->estimate;
    if (!w.tensor || s.pct > w.pct) w = s;
  }
  return w;
}

/* The tensor, of any class, with the largest share of NaN/Inf among its
 * scanned values: a tensor without a finite non-zero value is in no other
 * share, and is in this one (NULL tensor: none scanned). */
static mpprof_share worst_nonfinite(const mpprof_layer *l) {
  mpprof_share w = {0};
  for (size_t i = 0; i < l->n_tensors; i++) {
    if (!l->tensors[i].st.count) continue;
    mpprof_share s = mpprof_nonfinite_share_of(&l->tensors[i]);
    if (!w.tensor || s.pct > w.pct) w = s;
  }
  return w;
}

static void layer_shares(mpprof_layer *l) {
  l->fp16_overflow = worst_share(l, MP_TGT_FP16, MP_CAST_OVERFLOW, false);
  l->fp16_underflow = worst_share(l, MP_TGT_FP16, MP_CAST_UNDERFLOW, false);
  l->bf16_overflow = worst_share(l, MP_TGT_BF16, MP_CAST_OVERFLOW, false);
  l->bf16_underflow = worst_share(l, MP_TGT_BF16, MP_CAST_UNDERFLOW, false);
  l->e4m3_underflow = worst_fp8(l, MP_TCLASS_FORWARD, false);
  l->e5m2_underflow = worst_fp8(l, MP_TCLASS_GRADIENT, true);
  l->applied_fp16_overflow = worst_share(l, MP_TGT_FP16, MP_CAST_OVERFLOW, true);
  l->applied_fp16_underflow = worst_share(l, MP_TGT_FP16, MP_CAST_UNDERFLOW, true);
  l->nonfinite = worst_nonfinite(l);
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
  char edges[MP_LOSS_SCALE_EDGES_TEXT_MAX]; /* a window's true edges past the search range */
  switch (r->code) {
  case MP_REASON_NONFINITE_INPUT:
    return mpprof_asprintf("%s already holds non-finite values (%llu NaN, %llu inf)", t->name,
                           (unsigned long long)t->st.nans,
                           (unsigned long long)(t->st.pos_infs + t->st.neg_infs));
  case MP_REASON_NONFINITE_WIDE: {
    /* merged from sites of several dtypes (an fp32 and an fp64 output):
     * the values were made in one of the wide formats */
    const char *wide =
        t->st.dtype == MP_DTYPE_INVALID ? "fp32 or fp64" : mp_dtype_name(t->st.dtype);
    return mpprof_asprintf(
        "%s holds non-finite values its op made in %s from finite inputs (%llu NaN, %llu inf), "
        "with no loss scale to explain them: %s failed there already, so no narrower precision "
        "is shown safe and the layer stays fp32",
        t->name, wide, (unsigned long long)t->st.nans,
        (unsigned long long)(t->st.pos_infs + t->st.neg_infs), wide);
  }
  case MP_REASON_BF16_UNFIT:
    return mpprof_asprintf(
        "%s does not fit bf16: %s%% overflow, %s%% flush to zero (absmax %.4g, smallest |x| %.4g)",
        t->name, mpprof_pct_text(100 * frac(t->st.casts[MP_TGT_BF16][MP_CAST_OVERFLOW], tnz)).s,
        mpprof_pct_text(100 * frac(t->st.casts[MP_TGT_BF16][MP_CAST_UNDERFLOW], tnz)).s,
        t->st.absmax, t->st.min_abs_nonzero);
  case MP_REASON_FWD_FP16_OVERFLOW:
    if (t->op_infs)
      return mpprof_asprintf("%s holds %llu +-Inf that its op made from finite inputs: fp16 "
                             "overflow of unknown size, %s%% of its finite non-zero values and "
                             "those Inf; forward tensors are not loss-scaled",
                             t->name, (unsigned long long)t->op_infs,
                             mpprof_pct_text(100 * d->fp16_overflow_fraction).s);
    if (t->st.saturated) {
      char *at = mpprof_saturated_at(t);
      char *ret =
          at ? mpprof_asprintf("%s saturated: %s%% of values at %s (clamped by the op: "
                               "their true range is unknown, counted as overflow)",
                               t->name, mpprof_pct_text(100 * frac(t->st.saturated, tnz)).s, at)
             : NULL;
      free(at);
      return ret;
    }
    return mpprof_asprintf("%s overflows fp16 in %s%% of values (absmax %.4g > fp16 max "
                           "%.6g); forward tensors are not loss-scaled",
                           t->name, mpprof_pct_text(100 * d->fp16_overflow_fraction).s,
                           t->st.absmax, mp_format_of(MP_FP16)->max_finite);
  case MP_REASON_FWD_FP16_UNDERFLOW:
    return mpprof_asprintf("%s flushes to zero in fp16 for %s%% of values at scale 1 "
                           "(smallest |x| %.4g; allowed %.3g%%); forward tensors are not "
                           "loss-scaled",
                           t->name, mpprof_pct_text(100 * d->fp16_underflow_fraction).s,
                           t->st.min_abs_nonzero, 100 * prm->underflow_max);
  case MP_REASON_GRAD_NO_WINDOW:
    return mpprof_asprintf("%s: no loss scale in [2^%d, 2^%d] fits fp16 (%s%% "
                           "overflow, %s%% flush to zero at scale 1; |x| from "
                           "%.4g to %.4g)",
                           t->name, prm->scale_log2_min, prm->scale_log2_max,
                           mpprof_pct_text(100 * d->fp16_overflow_fraction).s,
                           mpprof_pct_text(100 * d->fp16_underflow_fraction).s,
                           t->st.min_abs_nonzero, t->st.absmax);
  case MP_REASON_GRAD_WINDOW:
    return mpprof_asprintf(
        "%s: %s%% of gradients flush to zero and %s%% "
        "overflow in fp16 at scale 1; loss scales 2^%d..2^%d fit%s",
        t->name, mpprof_pct_text(100 * d->fp16_underflow_fraction).s,
        mpprof_pct_text(100 * d->fp16_overflow_fraction).s, d->window_lo, d->window_hi,
        mp_loss_scale_edges_text(d->window_lo, d->window_hi, d->beyond_lo, d->beyond_hi,
                                 prm->scale_log2_min, prm->scale_log2_max, "2^", "", edges));
  case MP_REASON_GRAD_NEVER_SEEN: {
    mpprof_dead_kind k = t ? mpprof_dead_kind_of(t->st.count, t->st.zeros,
                                                 t->st.nans + t->st.pos_infs + t->st.neg_infs)
                           : MPPROF_DEAD_BOTH;
    return mpprof_asprintf("%s (gradient) is %s in all %llu scanned calls: gradients never seen "
                           "finite and non-zero support no verdict",
                           t ? t->name : "the gradient", mpprof_dead_kind_text(k),
                           (unsigned long long)(t ? t->scanned_calls : 0));
  }
  case MP_REASON_NO_VALUES:
    return strdup("no scanned values in forward or backward tensors: no verdict");
  case MP_REASON_WINDOWS_DISJOINT:
    return strdup("the loss-scale windows of this layer's gradients do not intersect");
  case MP_REASON_REC_FP16:
    return mpprof_asprintf("fp16: every forward tensor%s fits fp16 at scale 1 (worst: %s%% "
                           "overflow in %s, %s%% flush to zero in %s)",
                           v->has_gradients ? " and gradient" : "",
                           mpprof_pct_text(l->fp16_overflow.pct).s, l->fp16_overflow.tensor,
                           mpprof_pct_text(l->fp16_underflow.pct).s, l->fp16_underflow.tensor);
  case MP_REASON_REC_FP16_LOSS_SCALE:
    return mpprof_asprintf("fp16_loss_scale: forward tensors fit fp16 at scale 1; gradients fit "
                           "with any loss scale in [2^%d, 2^%d]%s%s",
                           v->window_lo, v->window_hi,
                           mp_loss_scale_edges_text(v->window_lo, v->window_hi, v->beyond_lo,
                                                    v->beyond_hi, prm->scale_log2_min,
                                                    prm->scale_log2_max, "2^", "", edges),
                           v->window_estimate ? " (boundary estimate)" : "");
  case MP_REASON_REC_BF16:
    return mpprof_asprintf("bf16: not fp16-safe (see above) but every tensor fits bf16 (worst: "
                           "%s%% overflow in %s, %s%% flush to zero in %s)",
                           mpprof_pct_text(l->bf16_overflow.pct).s, l->bf16_overflow.tensor,
                           mpprof_pct_text(l->bf16_underflow.pct).s, l->bf16_underflow.tensor);
  case MP_REASON_REC_FP32:
    return strdup(v->nonfinite_wide ? "fp32: it already made NaN or Inf in fp32 (see above)"
                                    : "fp32: values do not fit bf16 (see above)");
  case MP_REASON_FP8_E4M3:
  case MP_REASON_FP8_E5M2: {
    bool e4 = r->code == MP_REASON_FP8_E4M3;
    int fits = e4 ? v->fp8_e4m3_fits : v->fp8_e5m2_fits;
    double under = e4 ? v->fp8_e4m3_underflow : v->fp8_e5m2_underflow;
    /* Not for flush: a value of unknown size (saturated by an fp8 op, or an
     * Inf an fp16 op made) that no per-tensor scale can be shown to hold. */
    bool unknown_size = !fits && under <= prm->fp8_underflow_max;
    return mpprof_asprintf("%s for %s with per-tensor scaling: %s (worst flush to zero %s%%, "
                           "allowed %.3g%%%s)",
                           e4 ? "fp8_e4m3" : "fp8_e5m2", e4 ? "forward tensors" : "gradients",
                           fits ? "fits" : "does not fit", mpprof_pct_text(100 * under).s,
                           100 * prm->fp8_underflow_max,
                           v->nonfinite_wide && !fits
                               ? "; NaN or Inf computed in fp32, which no scale is shown to hold"
                           : unknown_size
                               ? "; some values overflowed by an unknown amount (saturated, "
                                 "or Inf made from finite inputs), which no scale is "
                                 "shown to hold"
                               : "");
  }
  case MP_REASON_COUNT:
    break;
  }
  return mpprof_asprintf("%s", mp_reason_code_name(r->code));
}

/* A gradient's loss-scale window (mp_advise: every 2^k at which fp16
 * certainly fits, from its histogram, which counts a binade across fp16's
 * flush threshold as flushing) widened to the scale the program applied when
 * the record as taken says exactly that fp16 fits there: no overflow, flush
 * within the limit. The window stays one interval: overflow only grows and
 * flush only shrinks with k, so every scale between the applied one and the
 * window fits too. A window the histogram found none of is left alone. */
static void exact_window_end(const mp_advice_params *p, mpprof_layer_tensor *t) {
  mp_advice *a = &t->adv;
  int e;
  if (t->cls != MP_TCLASS_GRADIENT || !a->has_window || !t->at_scale.count || t->scale_undeclared ||
      t->scale_min <= 0 || t->scale_min != t->scale_max || frexp(t->scale_min, &e) != 0.5)
    return;
  int k = e - 1; /* the applied scale is 2^k */
  const uint64_t *c = t->at_scale.casts[MP_TGT_FP16];
  uint64_t n =
      c[MP_CAST_OVERFLOW] + c[MP_CAST_UNDERFLOW] + c[MP_CAST_SUBNORMAL] + c[MP_CAST_NORMAL];
  if (!n || c[MP_CAST_OVERFLOW] || (double)c[MP_CAST_UNDERFLOW] > p->underflow_max * (double)n ||
      k < p->scale_log2_min || k > p->scale_log2_max)
    return;
  if (k < a->window_lo) a->window_lo = k;
  if (k > a->window_hi) a->window_hi = k;
}

mpprof_dead_kind mpprof_dead_kind_of(uint64_t count, uint64_t zeros, uint64_t nonfinite) {
  if (!count) return MPPROF_DEAD_NONE;
  if (zeros >= count) return MPPROF_DEAD_ZERO;
  if (nonfinite >= count) return MPPROF_DEAD_NONFINITE;
  return MPPROF_DEAD_BOTH;
}

const char *mpprof_dead_kind_text(mpprof_dead_kind k) {
  switch (k) {
  case MPPROF_DEAD_ZERO:
    return "zero";
  case MPPROF_DEAD_NONFINITE:
    return "Inf/NaN";
  case MPPROF_DEAD_BOTH:
    return "zero or Inf/NaN";
  default:
    return "";
  }
}

const char *mpprof_no_verdict_text(const mpprof_model *m, const mpprof_layer *l,
                                   char buf[MPPROF_NO_VERDICT_TEXT_MAX]) {
  if (l->adv.dead_gradients) {
    snprintf(buf, MPPROF_NO_VERDICT_TEXT_MAX, "its gradients were %s in every scanned call",
             mpprof_dead_kind_text((mpprof_dead_kind)l->adv.dead_gradients));
    return buf;
  }
  if (l->elements) return "no forward tensor or gradient held a finite non-zero value";
  /* Why it saw no values: --scan none in every process, or not. */
  bool scan_none = m->n_procs > 0;
  for (size_t i = 0; i < m->n_procs; i++)
    if (!m->procs[i].scan || strcmp(m->procs[i].scan, "none")) scan_none = false;
  return scan_none ? "no values scanned: --scan none"
                   : "no values scanned: its tensors could not be read; see not_scanned in "
                     "report.json";
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
                                .count = t->st.count,
                                .adv = &t->adv,
                                .nonzero = t->st.count - t->st.zeros - t->st.nans - t->st.pos_infs -
                                           t->st.neg_infs,
                                .fp16_overflow = t->st.casts[MP_TGT_FP16][MP_CAST_OVERFLOW],
                                .fp16_underflow = t->st.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW],
                                .bf16_overflow = t->st.casts[MP_TGT_BF16][MP_CAST_OVERFLOW],
                                .bf16_underflow = t->st.casts[MP_TGT_BF16][MP_CAST_UNDERFLOW],
                                .nonfinite_wide = t->wide_nonfinite > 0};
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
  a->beyond_lo = v.beyond_lo;
  a->beyond_hi = v.beyond_hi;
  a->window_estimate = v.window_estimate;
  a->fp8_e4m3_fits = v.fp8_e4m3_fits;
  a->fp8_e5m2_fits = v.fp8_e5m2_fits;
  /* Not only the first reason: a forward overflow is said before the dead gradient. */
  bool dead = false;
  for (size_t i = 0; !v.known && i < v.n_reasons; i++)
    dead = dead || v.reasons[i].code == MP_REASON_GRAD_NEVER_SEEN;
  /* What the layer's gradients held, all of them (the reason names one). */
  uint64_t dn = 0, dz = 0, dnf = 0;
  for (size_t i = 0; dead && i < l->n_tensors; i++) {
    const mpprof_cstats *st = &l->tensors[i].st;
    if (l->tensors[i].cls != MP_TCLASS_GRADIENT) continue;
    dn += st->count;
    dz += st->zeros;
    dnf += st->nans + st->pos_infs + st->neg_infs;
  }
  a->dead_gradients = dead ? mpprof_dead_kind_of(dn, dz, dnf) : MPPROF_DEAD_NONE;
  if (dead && !a->dead_gradients) a->dead_gradients = MPPROF_DEAD_BOTH;
  for (size_t i = 0; i < l->n_tensors; i++) /* a scale that is not a power of two */
    if (l->tensors[i].cls == MP_TCLASS_GRADIENT && l->tensors[i].unscale_estimate &&
        l->tensors[i].has_values)
      a->window_estimate = true;
  layer_shares(l);
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

const mpprof_layer_tensor *mpprof_subnormal_gradient(const mpprof_layer *l) {
  if (!l->adv.has_window || (l->adv.rec != MP_REC_FP16 && l->adv.rec != MP_REC_FP16_LOSS_SCALE))
    return NULL;
  const mpprof_layer_tensor *w = NULL;
  double ws = 0;
  for (size_t t = 0; t < l->n_tensors; t++) {
    const mpprof_layer_tensor *lt = &l->tensors[t];
    if (lt->cls != MP_TCLASS_GRADIENT || !lt->has_values) continue;
    double share = mp_fp16_subnormal_share_unscaled(lt->st.casts); /* unscaled: at scale 1 */
    if (share > ws) w = lt, ws = share;
  }
  return ws >= MP_ADVICE_FP16_SUBNORMAL_NOTE ? w : NULL;
}

int mpprof_global_loss_scale(mpprof_model *m) {
  mpprof_applied_scale *g = &m->loss_scale;
  /* again after the measured check moved verdicts: from scratch */
  cJSON_Delete(g->limited_by);
  g->applicable = g->has_window = g->needed = g->flush_edge = g->subnormal = false;
  g->window_lo = g->window_hi = g->beyond_lo = g->beyond_hi = g->recommended_log2 = 0;
  g->limited_by = cJSON_CreateArray();
  if (!g->limited_by) return -1;
  int lo = INT32_MIN, hi = INT32_MAX, true_lo = INT32_MIN, true_hi = INT32_MAX;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer_advice *a = &m->layers[i].adv;
    if (!a->has_window || (a->rec != MP_REC_FP16 && a->rec != MP_REC_FP16_LOSS_SCALE)) continue;
    g->applicable = true;
    if (a->window_lo > lo) lo = a->window_lo;
    if (a->window_hi < hi) hi = a->window_hi;
    int t[2];
    mp_loss_scale_true_window(a->window_lo, a->window_hi, a->beyond_lo, a->beyond_hi, t);
    if (t[0] > true_lo) true_lo = t[0];
    if (t[1] < true_hi) true_hi = t[1];
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
    g->beyond_lo = lo - true_lo;
    g->beyond_hi = true_hi - hi;
    g->recommended_log2 = mp_loss_scale_pick(lo, hi, g->beyond_lo, g->beyond_hi);
    g->needed = !(lo <= 0 && 0 <= hi);
    /* A layer's fp16 gradient at the flush edge (mostly subnormal as
     * recorded: what it lost flushed before mpprof saw it) needs a larger
     * scale than the one it ran at, whatever the window of what survived
     * says ("not needed" beside findings that say "raise it"). */
    for (size_t i = 0; i < m->n_layers && !g->flush_edge; i++) {
      const mpprof_layer *l = &m->layers[i];
      if (!l->adv.has_window || (l->adv.rec != MP_REC_FP16 && l->adv.rec != MP_REC_FP16_LOSS_SCALE))
        continue;
      for (size_t t = 0; t < l->n_tensors && !g->flush_edge; t++)
        g->flush_edge = mpprof_fp16_flush_edge(&l->tensors[t]) > 0;
    }
    if (g->flush_edge) g->needed = true;
    /* Inside fp16's range at scale 1 is not inside its precision: a gradient
     * that is partly fp16 subnormals unscaled keeps fewer bits than a scale
     * in the window would give it. */
    for (size_t i = 0; i < m->n_layers && !g->needed; i++)
      g->subnormal = mpprof_subnormal_gradient(&m->layers[i]) != NULL;
    if (g->subnormal) g->needed = true;
  }
  return 0;
}

static double jnum(const cJSON *o, const char *k, double dflt) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* mpprof_loss_scale_note's text: the layers named in layer order from the
 * first, up to MPPROF_LAYERS_NAMED. */
static int loss_scale_note(mpprof_model *m, size_t first) {
  mpprof_applied_scale *g = &m->loss_scale;
  if (!g->undeclared_gradients) return 0;
  if (!g->declared) return (g->note = strdup(MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE)) ? 0 : -1;
  char *names = NULL;
  size_t len = 0, named = 0;
  FILE *f = open_memstream(&names, &len);
  if (!f) return -1;
  for (size_t i = first; i < m->n_layers && named < MPPROF_LAYERS_NAMED; i++) {
    const mpprof_layer *l = &m->layers[i];
    bool undeclared = false;
    for (size_t t = 0; t < l->n_tensors; t++)
      undeclared = undeclared || (l->tensors[t].cls == MP_TCLASS_GRADIENT &&
                                  l->tensors[t].st.count && l->tensors[t].scale_undeclared);
    if (undeclared) fprintf(f, "%s%s", named++ ? ", " : "", mpprof_layer_label(l));
  }
  if (g->undeclared_layers > named) fprintf(f, " and %zu more", g->undeclared_layers - named);
  if (fclose(f) || !names) {
    free(names);
    return -1;
  }
  g->note = mpprof_asprintf("for the gradients of %zu of %zu layers (%s): %s", g->undeclared_layers,
                            g->grad_layers, names, MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE);
  free(names);
  return g->note ? 0 : -1;
}

/* The scale the program applied: from the sites' declared scales (what the
 * stats were taken at) and the processes' "training" logs (first, last, per
 * step, skipped steps). */
static int applied_scale(mpprof_model *m) {
  mpprof_applied_scale *g = &m->loss_scale;
  g->per_step = cJSON_CreateArray();
  if (!g->per_step) return -1;
  for (size_t i = 0; i < m->n_sites; i++) {
    double sc = m->sites[i].loss_scale;
    if (!(sc > 0)) continue;
    if (!g->declared || sc < g->min) g->min = sc;
    if (!g->declared || sc > g->max) g->max = sc;
    g->declared = true;
  }
  const mpprof_process *first = NULL, *last = NULL;
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    const cJSON *t = p->training;
    if (!t) continue;
    const char *src =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, MP_RK_TRAINING.loss_scale_source));
    if (src && (!g->source || !strcmp(src, "marks")))
      g->source = !strcmp(src, "marks") ? "marks" : "option";
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(t, MP_RK_TRAINING.steps);
    g->steps_marked += (uint64_t)jnum(steps, MP_RK_STEPS.marked, 0);
    g->skipped_steps += (uint64_t)jnum(
        cJSON_GetObjectItemCaseSensitive(t, MP_RK_TRAINING.skipped_steps), MP_RK_SKIPPED.count, 0);
    const cJSON *seg;
    cJSON_ArrayForEach(seg, cJSON_GetObjectItemCaseSensitive(t, MP_RK_TRAINING.step_scales)) {
      cJSON *e = cJSON_Duplicate(seg, true);
      if (!e) return -1;
      cJSON_AddStringToObject(e, "process", p->file);
      cJSON_AddItemToArray(g->per_step, e);
    }
    if (cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(t, MP_RK_TRAINING.scale_changes)) == 0)
      continue;
    if (!first || p->start_ns < first->start_ns) first = p;
    if (!last || p->end_ns > last->end_ns) last = p;
  }
  if (first) {
    const cJSON *ch =
        cJSON_GetObjectItemCaseSensitive(first->training, MP_RK_TRAINING.scale_changes);
    g->first = jnum(cJSON_GetArrayItem(ch, 0), MP_RK_SCALE_CHANGE.scale, 0);
    g->last = jnum(last->training, MP_RK_TRAINING.loss_scale, 0);
  } else if (g->declared) {
    g->first = g->last = g->min;
  }
  size_t first_undeclared = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    bool grads = false, undeclared = false;
    for (size_t t = 0; t < l->n_tensors; t++) {
      const mpprof_layer_tensor *lt = &l->tensors[t];
      if (lt->cls != MP_TCLASS_GRADIENT || lt->st.count == 0) continue;
      grads = true;
      if (!lt->scale_undeclared) continue;
      undeclared = g->undeclared_gradients = true;
      if (lt->st.nans + lt->st.pos_infs + lt->st.neg_infs > 0) g->undeclared_nonfinite = true;
      if (lt->has_values && lt->adv.fp16 != MP_FP16_SAFE) g->undeclared_unfit = true;
    }
    g->grad_layers += grads;
    if (undeclared && !g->undeclared_layers++) first_undeclared = i;
  }
  return loss_scale_note(m, first_undeclared);
}

bool mpprof_loss_scale_unknown(const mpprof_applied_scale *g) {
  return *mpprof_loss_scale_unknown_why(g) != 0;
}

const char *mpprof_loss_scale_unknown_why(const mpprof_applied_scale *g) {
  if (g->declared || !g->undeclared_gradients) return ""; /* said, or nothing to scale */
  if (g->undeclared_nonfinite) return "gradients hold Inf/NaN";
  if (g->undeclared_unfit) return "gradients do not fit fp16 at scale 1";
  if (g->flush_edge) return "gradients are at fp16's flush edge";
  if (g->subnormal) return "without a loss scale, gradients are fp16 subnormals";
  if (g->needed) return "scale 1 is outside the loss-scale window";
  return "";
}

bool mpprof_loss_scale_as_computed(const mpprof_applied_scale *g) {
  return !g->declared && g->undeclared_gradients;
}

const char *mpprof_loss_scale_note(const mpprof_applied_scale *g) {
  return g->note;
}

const char *mpprof_loss_scale_source_text(const mpprof_applied_scale *g) {
  if (g->source && !strcmp(g->source, "option")) return "--loss-scale";
  if (g->source) return "the program's loss_scale marks or its GradScaler";
  return "the program's declaration";
}

const char *mpprof_loss_scale_needed_clause(const mpprof_applied_scale *g) {
  if (g->flush_edge) return "; needed all the same: gradients at fp16's flush edge, see findings";
  if (g->subnormal)
    return "; needed all the same: without one, gradients are fp16 subnormals, see findings";
  return g->needed ? "" : NULL;
}

/* The earliest first_nonfinite over the processes. */
static void first_nonfinite(mpprof_model *m) {
  mpprof_nonfinite *r = &m->first_nonfinite;
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    const cJSON *nf = cJSON_GetObjectItemCaseSensitive(p->training, MP_RK_TRAINING.first_nonfinite);
    if (!cJSON_IsObject(nf) || !p->nonfinite_site_key) continue;
    uint64_t t = p->has_nonfinite_t_ns ? (uint64_t)p->nonfinite_t_ns
                                       : (uint64_t)jnum(nf, MP_RK_NONFINITE.t_ns, 0);
    if (r->found && t >= r->t_ns) continue;
    size_t site = m->n_sites;
    for (size_t j = 0; j < m->n_sites; j++)
      if (!strcmp(m->sites[j].key, p->nonfinite_site_key)) site = j;
    if (site == m->n_sites) continue;
    r->found = true;
    r->site = site;
    r->proc = p;
    r->t_ns = t;
    r->call_index = (uint64_t)jnum(nf, MP_RK_NONFINITE.call_index, 0);
    r->thread = (uint64_t)jnum(nf, MP_RK_NONFINITE.thread, 0);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(nf, MP_RK_NONFINITE.step);
    r->has_step = cJSON_IsNumber(st);
    r->step = r->has_step ? (uint64_t)st->valuedouble : 0;
    r->inputs_scanned =
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(nf, MP_RK_NONFINITE.inputs_scanned));
    r->scale = jnum(nf, MP_RK_NONFINITE.loss_scale, 0);
    const char *role =
        cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(nf, MP_RK_NONFINITE.role));
    snprintf(r->role, sizeof r->role, "%s", role ? role : "?");
    r->count = (uint64_t)jnum(nf, MP_RK_NONFINITE.count, 0);
    r->nans = (uint64_t)jnum(nf, MP_RK_NONFINITE.nans, 0);
    r->pos_infs = (uint64_t)jnum(nf, MP_RK_NONFINITE.pos_infs, 0);
    r->neg_infs = (uint64_t)jnum(nf, MP_RK_NONFINITE.neg_infs, 0);
  }
}

int mpprof_advise_layers(mpprof_model *m) {
  bool outputs_only = mpprof_outputs_only_procs(m) > 0;
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
      lt->has_values = mp_stats_nonzero_finite(&scratch[0]) > 0 || lt->op_infs;
      /* +-Inf the op made from finite inputs (op_infs) overflowed fp16 by an
       * unknown amount: mp_advise's count of such values (saturated) takes
       * them, with its consequences (fp16 unsafe, no window, no fp8 fit);
       * their fraction is the share's, whose base holds them too. */
      scratch[0].saturated += lt->op_infs;
      mp_advise(&scratch[0], &m->params, &lt->adv);
      if (lt->op_infs)
        lt->adv.fp16_overflow_fraction =
            mpprof_share_of(lt, MP_TGT_FP16, MP_CAST_OVERFLOW, false).pct / 100;
      exact_window_end(&m->params, lt);
    }
    rc = judge(&m->params, l);
    bool flushed = rc == 0 && mpprof_layer_flushed_unseen(l);
    for (size_t t = 0; rc == 0 && flushed && t < l->n_tensors; t++) {
      double share = mpprof_fp16_flush_edge(&l->tensors[t]);
      if (share == 0) continue;
      /* the verdict judged outputs computed from what survived the flush */
      char *text = mpprof_asprintf(
          "%s was flushed before mpprof saw it (%s%% of its non-zero fp16 values subnormal): "
          "this verdict is judged from values computed from what survived (finding "
          "fp16_flush_edge)",
          l->tensors[t].name, mpprof_pct_text(100 * share).s);
      cJSON *s = text ? cJSON_CreateString(text) : NULL;
      free(text);
      if (!s) rc = -1;
      cJSON_AddItemToArray(l->adv.reasons, s);
    }
    if (rc == 0 && l->adv.known && outputs_only) {
      /* "every forward tensor fits" is of the tensors scanned: say which were not. */
      cJSON *s = cJSON_CreateString(
          "inputs were not scanned (--scan outputs): this verdict rests on the ops' outputs; "
          "weights and incoming activations are not part of it");
      if (!s) rc = -1;
      cJSON_AddItemToArray(l->adv.reasons, s);
    }
  }
  free(scratch);
  /* An eval-only run: one note says the verdicts saw no gradients, not every
   * line. A run is not eval-only when any layer's gradients were scanned,
   * with a verdict or not (all Inf/NaN: a diverged run, not an eval). */
  size_t with_verdict = 0, with_gradients = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    with_verdict += m->layers[i].adv.known;
    with_gradients += mpprof_layer_has_gradient_tensor(&m->layers[i]);
  }
  m->forward_only = with_verdict > 0 && with_gradients == 0;
  if (rc || mpprof_global_loss_scale(m) || applied_scale(m)) return -1;
  first_nonfinite(m);
  return 0;
}
