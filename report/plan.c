/* The plan: one recommended mixed-precision configuration for the whole
 * program, chosen from the layer verdicts, with the PyTorch code for it and
 * OUT/plan.json (layer -> dtype, loss scale) for scripts.
 *
 * For an autocast dtype D (bf16 or fp16), a layer runs in D when it fits:
 *   bf16: no bf16 overflow and bf16 flush within underflow_max, its
 *         verdict is not fp32, and (with --shadow) its measured bf16 error
 *         is within --shadow-max-rel;
 *   fp16: its verdict is fp16, or fp16_loss_scale with the global loss scale
 *         (the intersection of the fp16 layers' windows) existing.
 * A layer that does not fit is kept in bf16 (fp16 plans, when bf16 fits it and
 * the GPU has bf16) or fp32; so is a layer without a verdict whose values
 * overflow the autocast dtype. fp16 needs a GradScaler when the global loss scale
 * is needed (2^0 outside the window), at init_scale 2^recommended_log2.
 * The recommended plan keeps the fewest layers in fp32 (plan_fp32: a layer
 * kept in bf16 by an fp16 plan still runs in 16 bits, one kept in fp32 costs
 * the fp32 GEMMs), then the fewest out of autocast; on a tie, bf16 (no
 * scaler to tune). bf16 is offered only when every process's GPU has it
 * (sm_80+, or unknown). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/schema_keys.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

/* A layer whose verdict is fp32 (its measured bf16 error above
 * --shadow-max-rel, or non-finite values in a wide source) stays out of
 * bf16 autocast whatever its range says; so does a layer with another verdict
 * whose measured bf16 error is above the limit (the verdict's check measures
 * only the verdict's own precision: an fp16 layer's bf16 error is never
 * judged there, and mlp_train's fc3, fp16 at 6.2e-4, ran in the bf16 plan
 * at 5.3e-3 > 2^-8). */
static bool fits_bf16(const mpprof_model *m, const mpprof_layer *l) {
  if (l->adv.known && l->adv.rec == MP_REC_FP32) return false;
  if (mpprof_shadow_layer_within(m, l, MP_SH_BF16) == 0) return false;
  return l->bf16_overflow.pct == 0 && l->bf16_underflow.pct <= 100.0 * m->params.underflow_max;
}

/* A layer in the autocast dtype dt whose measured error of it (bf16; fp16 or,
 * for an fp16_loss_scale verdict, fp16_loss_scaled) is within the limit only
 * as measured on inputs already rounded to it: it runs in dt on its ranges,
 * and the plan says that its measured error excludes the inputs' rounding. */
static bool plan_rounded(const mpprof_model *m, const mpprof_layer *l, mp_dtype dt) {
  mp_shadow_cand c = dt == MP_BF16                          ? MP_SH_BF16
                     : l->adv.rec == MP_REC_FP16_LOSS_SCALE ? MP_SH_FP16_SCALED
                                                            : MP_SH_FP16;
  return mpprof_shadow_layer_within(m, l, c) == MPPROF_SHADOW_WITHIN_ROUNDED;
}

static bool fits_fp16(const mpprof_model *m, const mpprof_layer *l) {
  switch (l->adv.rec) {
  case MP_REC_FP16:
    return true;
  case MP_REC_FP16_LOSS_SCALE:
    return m->loss_scale.has_window;
  case MP_REC_FP8_E4M3:
  case MP_REC_FP8_E5M2:
    return l->fp16_overflow.pct == 0;
  default:
    return false;
  }
}

/* A layer whose ops all ran in the optimizer step (an optimizer that runs
 * GEMMs, PyTorch's "optimizer", an NVTX optimizer range) is no part of the
 * plan: the step runs after the autocast region, outside the model, so no
 * autocast dtype reaches it and no submodule of the model names it (the plan
 * read "optimizer has no verdict and runs in bf16 unchecked", plan.json listed
 * it as module "optimizer"). Its tensors are reported only, no verdict. */
static bool optimizer_only(const mpprof_layer *l) {
  return l->phase_mask == 1u << MPPROF_PHASE_OPTIMIZER;
}

mpprof_fp8_fit mpprof_layer_fp8_fit(const mpprof_model *m, const mpprof_layer *l,
                                    const mpprof_shadow_cand **ret_measured) {
  const mpprof_layer_advice *a = &l->adv;
  const mpprof_shadow_cand *c = NULL;
  if (l->best_fp8 >= 0 && l->best_fp8 < MPPROF_FP8_RECIPES && l->fp8[l->best_fp8].calls)
    c = &l->fp8[l->best_fp8];
  *ret_measured = c;
  /* fp8 is an option only for layers advised fp16 (with or without a loss
   * scale): one kept in bf16/fp32 for its range is not (fp8 keeps fewer bits
   * than fp16 and bf16), nor an optimizer step. A layer whose gradients were
   * not seen (e5m2 fits -1) stays one on its forward values; what is said of
   * it says e5m2 is unverified (mpprof_layer_fp8_grads_unseen). */
  if (!a->known || (a->rec != MP_REC_FP16 && a->rec != MP_REC_FP16_LOSS_SCALE) ||
      a->fp8_e4m3_fits != 1 || a->fp8_e5m2_fits == 0 || optimizer_only(l))
    return MPPROF_FP8_NO;
  if (!c) return MPPROF_FP8_RANGE;
  /* within the limit on inputs already fp8: no evidence, the range decides */
  int v = mpprof_shadow_cand_within(m, c);
  return v == 1 ? MPPROF_FP8_MEASURED : v == 0 ? MPPROF_FP8_ERROR_TOO_HIGH : MPPROF_FP8_RANGE;
}

bool mpprof_layer_fp8_grads_unseen(const mpprof_layer *l) {
  return l->adv.fp8_e5m2_fits < 0;
}

const char *mpprof_fp8_formats_text(size_t n, size_t n_unseen, char buf[96]) {
  if (!n_unseen) return "e4m3 forward, e5m2 gradients";
  if (n_unseen == n) return "e4m3 forward; " MPPROF_GRADS_NOT_SEEN ", e5m2 unverified";
  snprintf(buf, 96,
           "e4m3 forward, e5m2 gradients; %zu with " MPPROF_GRADS_NOT_SEEN ", e5m2 unverified",
           n_unseen);
  return buf;
}

static bool bf16_supported(const mpprof_model *m) {
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].device_name && m->procs[i].cc_major && m->procs[i].cc_major < 8) return false;
  return true;
}

static void plan_free(mpprof_plan *p) {
  free(p->keep);
  free(p->headline);
  memset(p, 0, sizeof *p);
}

/* *s with "; mark: layer" or "; mark: n layers (layer and n-1 more)"
 * appended (n > 0; names in full); -1 when out of memory (*s freed). */
static int append_mark(char **s, const mpprof_model *m, const char *mark, size_t n, size_t first) {
  if (!n) return 0;
  const char *name = mpprof_layer_label(&m->layers[first]);
  char *t = n == 1
                ? mpprof_asprintf("%s; %s: %s", *s, mark, name)
                : mpprof_asprintf("%s; %s: %zu layers (%s and %zu more)", *s, mark, n, name, n - 1);
  free(*s);
  *s = t;
  return t ? 0 : -1;
}

/* The worst overflow and flush shares (percent) in the autocast dtype of a
 * layer that runs in it under the plan: its forward tensors as recorded, its
 * gradients multiplied by the plan's loss scale 2^k (0: no scaler, the
 * layer's own shares). *est: some is an upper bound (a binade straddles the
 * threshold at 2^k). */
static void plan_shares(const mpprof_layer *l, mp_dtype dt, int k, mp_stats *scratch, double *ov,
                        double *fl, bool *est) {
  if (k == 0) {
    *ov = dt == MP_BF16 ? l->bf16_overflow.pct : l->fp16_overflow.pct;
    *fl = dt == MP_BF16 ? l->bf16_underflow.pct : l->fp16_underflow.pct;
    *est = dt == MP_BF16 ? l->bf16_overflow.estimate || l->bf16_underflow.estimate
                         : l->fp16_overflow.estimate || l->fp16_underflow.estimate;
    return;
  }
  mp_target t = dt == MP_BF16 ? MP_TGT_BF16 : MP_TGT_FP16;
  *ov = *fl = 0;
  *est = false;
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *lt = &l->tensors[i];
    if (!lt->has_values || (lt->cls != MP_TCLASS_FORWARD && lt->cls != MP_TCLASS_GRADIENT))
      continue;
    int kt = lt->cls == MP_TCLASS_GRADIENT ? k : 0;
    mpprof_share so = mpprof_share_scaled(lt, t, MP_CAST_OVERFLOW, kt, scratch);
    mpprof_share su = mpprof_share_scaled(lt, t, MP_CAST_UNDERFLOW, kt, scratch);
    if (so.pct > *ov) *ov = so.pct;
    if (su.pct > *fl) *fl = su.pct;
    *est = *est || so.estimate || su.estimate;
  }
}

static int plan_for(const mpprof_model *m, mp_dtype dt, bool bf16_ok, mpprof_plan *p) {
  memset(p, 0, sizeof *p);
  p->autocast = dt;
  const mpprof_applied_scale *g = &m->loss_scale;
  if (dt == MP_FP16 && g->applicable && g->has_window && g->needed) {
    p->scaler = true;
    p->scale_log2 = g->recommended_log2;
    p->window_lo = g->window_lo;
    p->window_hi = g->window_hi;
    p->beyond_lo = g->beyond_lo;
    p->beyond_hi = g->beyond_hi;
  }
  p->keep = calloc(m->n_layers ? m->n_layers : 1, sizeof *p->keep);
  mp_stats *scratch = p->scaler ? malloc(sizeof *scratch) : NULL;
  if (!p->keep || (p->scaler && !scratch)) {
    free(scratch);
    return -1;
  }
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    if (optimizer_only(l)) continue;
    bool known = l->adv.known;
    double ov = dt == MP_BF16 ? l->bf16_overflow.pct : l->fp16_overflow.pct;
    /* No verdict (say its gradients were never seen non-zero): only a value
     * that overflows the autocast dtype, a fact, keeps the layer out. */
    if (!known && ov == 0) {
      if (!p->n_unchecked++) p->first_unchecked = i;
      continue;
    }
    if (known) {
      p->n_known++;
      if (dt == MP_BF16 ? fits_bf16(m, l) : fits_fp16(m, l)) {
        p->n_fit++;
        if (plan_rounded(m, l, dt) && !p->n_rounded++) p->first_rounded = i;
        if (mpprof_layer_grads_unseen(m, l) && !p->n_grads_unseen++) p->first_grads_unseen = i;
        if (mpprof_layer_flushed_unseen(l) && !p->n_flushed++) p->first_flushed = i;
        double pov, pfl;
        bool est;
        plan_shares(l, dt, p->scaler ? p->scale_log2 : 0, scratch, &pov, &pfl, &est);
        if (pov > p->max_overflow_pct) p->max_overflow_pct = pov;
        if (pfl > p->max_flush_pct) p->max_flush_pct = pfl;
        p->max_pct_estimate = p->max_pct_estimate || est;
        continue;
      }
    }
    bool bf16_fits = known ? fits_bf16(m, l) : l->bf16_overflow.pct == 0;
    p->keep[p->n_keep].layer = i;
    p->keep[p->n_keep].dtype = dt == MP_FP16 && bf16_ok && bf16_fits ? MP_BF16 : MP_FP32;
    p->n_keep++;
  }
  free(scratch);
  /* The headline. */
  char what[160];
  if (dt == MP_BF16)
    snprintf(what, sizeof what, "bf16 autocast, no loss scaler");
  else if (p->scaler)
    snprintf(what, sizeof what, "fp16 autocast with GradScaler(init_scale=2^%d)", p->scale_log2);
  else
    snprintf(what, sizeof what, "fp16 autocast, no loss scaler");
  /* The names in full: a fixed buffer cut a long one short, mid UTF-8
   * sequence too (plan.json and the page were then not UTF-8), and dropped
   * the dtypes after it. */
  char *keep = NULL;
  size_t keep_len = 0;
  FILE *kf = open_memstream(&keep, &keep_len);
  if (!kf) return -1;
  for (size_t k = 0; k < p->n_keep && k < MPPROF_LAYERS_NAMED; k++)
    fprintf(kf, "%s%s in %s", k ? ", " : "; keep ",
            mpprof_layer_label(&m->layers[p->keep[k].layer]), mp_dtype_name(p->keep[k].dtype));
  if (p->n_keep > MPPROF_LAYERS_NAMED)
    fprintf(kf, " and %zu more layers", p->n_keep - MPPROF_LAYERS_NAMED);
  if (fclose(kf) || !keep) {
    free(keep);
    return -1;
  }
  char fit[128];
  if (p->n_fit == p->n_known)
    snprintf(fit, sizeof fit, "%s %zu layer%s fit%s", p->n_fit == 1 ? "the" : "all", p->n_fit,
             p->n_fit == 1 ? "" : "s", p->n_fit == 1 ? "s" : "");
  else
    snprintf(fit, sizeof fit, "%zu of %zu layers fit %s", p->n_fit, p->n_known, mp_dtype_name(dt));
  /* Layers without a verdict that run in the autocast dtype: named, never
   * counted as fitting (nothing was seen that says they do). */
  char *unchecked;
  if (p->n_unchecked == 1)
    unchecked =
        mpprof_asprintf("; %s has no verdict and runs in %s unchecked",
                        mpprof_layer_label(&m->layers[p->first_unchecked]), mp_dtype_name(dt));
  else if (p->n_unchecked > 1)
    unchecked =
        mpprof_asprintf("; %zu layers without a verdict run in %s unchecked (%s and %zu "
                        "more)",
                        p->n_unchecked, mp_dtype_name(dt),
                        mpprof_layer_label(&m->layers[p->first_unchecked]), p->n_unchecked - 1);
  else
    unchecked = strdup("");
  if (!unchecked) {
    free(keep);
    return -1;
  }
  /* Layers that fit on ranges alone, their measured error being blind to
   * the inputs' rounding: appended to what is said of the unchecked. */
  if (p->n_rounded) {
    char note[200];
    snprintf(note, sizeof note, MPPROF_SHADOW_ROUNDED_NOTE, mp_dtype_name(dt));
    char *u = p->n_rounded == 1
                  ? mpprof_asprintf("%s; %s's %s error was %s (judge it by a run with wider "
                                    "operands)",
                                    unchecked, mpprof_layer_label(&m->layers[p->first_rounded]),
                                    mp_dtype_name(dt), note)
                  : mpprof_asprintf("%s; %zu layers' %s error (%s and %zu more) was %s (judge "
                                    "them by a run with wider operands)",
                                    unchecked, p->n_rounded, mp_dtype_name(dt),
                                    mpprof_layer_label(&m->layers[p->first_rounded]),
                                    p->n_rounded - 1, note);
    free(unchecked);
    if (!(unchecked = u)) {
      free(keep);
      return -1;
    }
  }
  /* What the verdicts of the layers that fit did not see: the marks beside them. */
  if (append_mark(&unchecked, m, MPPROF_MARK_FORWARD_ONLY, p->n_grads_unseen,
                  p->first_grads_unseen) ||
      append_mark(&unchecked, m, MPPROF_MARK_FLUSHED, p->n_flushed, p->first_flushed)) {
    free(keep);
    return -1;
  }
  /* An fp16 plan's scaler (or none) judged from gradients as computed: say so. */
  if (dt == MP_FP16 && p->n_fit && mpprof_loss_scale_note(g)) {
    char *t = mpprof_asprintf("%s; %s", unchecked, mpprof_loss_scale_note(g));
    free(unchecked);
    if (!(unchecked = t)) {
      free(keep);
      return -1;
    }
  }
  if (m->forward_only && p->n_fit) {
    char *t = mpprof_asprintf("%s; %s", unchecked, MPPROF_FORWARD_ONLY_NOTE);
    free(unchecked);
    if (!(unchecked = t)) {
      free(keep);
      return -1;
    }
  }
  bool all_fp32 = p->n_keep > 0;
  for (size_t k = 0; k < p->n_keep; k++)
    all_fp32 = all_fp32 && p->keep[k].dtype == MP_FP32;
  /* The autocast would change nothing: say so. Not while a layer without a
   * verdict runs in dt unchecked: the headline read "no autocast: ...; keep
   * every layer in fp32" while plan.json ran that layer in bf16. */
  p->no_autocast = p->n_fit == 0 && all_fp32 && p->n_unchecked == 0;
  if (p->no_autocast)
    p->headline =
        mpprof_asprintf("no autocast: 0 of %zu layers fit %s; keep %s in fp32", p->n_known,
                        mp_dtype_name(dt), p->n_keep == 1 ? "the layer" : "every layer");
  else if (p->n_fit == 0) /* no layer runs in dt with a verdict: no share to give */
    p->headline = mpprof_asprintf("%s%s: %s%s", what, keep, fit, unchecked);
  else if (dt == MP_FP16 && p->scaler) {
    char edges[MP_LOSS_SCALE_EDGES_TEXT_MAX];
    /* the shares under the scaler: gradients at its init scale */
    const char *most = p->max_pct_estimate ? "at most " : "";
    p->headline = mpprof_asprintf(
        "%s%s: %s (%s%s%% overflow, %s%s%% flush at 2^%d; gradients fit at every scale in "
        "[2^%d, 2^%d]%s)%s",
        what, keep, fit, most, mpprof_pct_text(p->max_overflow_pct).s, most,
        mpprof_pct_text(p->max_flush_pct).s, p->scale_log2, p->window_lo, p->window_hi,
        mpprof_edges_text(m, p->window_lo, p->window_hi, p->beyond_lo, p->beyond_hi, false, edges),
        unchecked);
  } else
    p->headline = mpprof_asprintf("%s%s: %s (%s%% overflow, %s%% flush)%s", what, keep, fit,
                                  mpprof_pct_text(p->max_overflow_pct).s,
                                  mpprof_pct_text(p->max_flush_pct).s, unchecked);
  free(keep);
  free(unchecked);
  p->known = true;
  return p->headline ? 0 : -1;
}

/* The fp8 candidates and their headline. */
int mpprof_build_fp8_plan(mpprof_model *m) {
  mpprof_fp8_plan *p = &m->plan_fp8;
  free(p->headline);
  memset(p, 0, sizeof *p);
  p->recipe = -1;
  p->least_bad = INFINITY;
  double lim = mpprof_shadow_max_rel(m);
  char *names = NULL;
  size_t names_len = 0;
  FILE *nf = open_memstream(&names, &names_len);
  if (!nf) return -1;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    const mpprof_shadow_cand *c;
    mpprof_fp8_fit fit = mpprof_layer_fp8_fit(m, l, &c);
    if (fit == MPPROF_FP8_NO) continue;
    p->n_range++;
    if (fit == MPPROF_FP8_ERROR_TOO_HIGH) {
      if (p->n_range - p->n_fit == 1 || c->worst.rel_l2 < p->least_bad)
        p->least_bad = c->worst.rel_l2, p->least_bad_layer = i;
      continue;
    }
    if (p->n_fit < MPPROF_LAYERS_NAMED)
      fprintf(nf, "%s%s", p->n_fit ? ", " : "", mpprof_layer_label(l));
    p->n_fit++;
    p->n_grads_unseen += mpprof_layer_fp8_grads_unseen(l);
    if (fit == MPPROF_FP8_MEASURED) {
      p->recipe = !p->n_measured++ ? l->best_fp8 : p->recipe == l->best_fp8 ? p->recipe : -2;
      if (c->worst.rel_l2 > p->worst_ok) p->worst_ok = c->worst.rel_l2;
    }
  }
  if (p->n_fit > MPPROF_LAYERS_NAMED) fprintf(nf, " and %zu more", p->n_fit - MPPROF_LAYERS_NAMED);
  if (fclose(nf) || !names) {
    free(names);
    return -1;
  }
  size_t n_bad = p->n_range - p->n_fit;
  if (!p->n_range) {
    p->headline = NULL;
  } else if (!p->n_fit) {
    p->headline = mpprof_asprintf("none: %zu layer%s fit%s fp8's range but %s best "
                                  "measured fp8 recipe errs more than --shadow-max-rel %s "
                                  "(relative L2 %s at least)",
                                  n_bad, n_bad == 1 ? "" : "s", n_bad == 1 ? "s" : "",
                                  n_bad == 1 ? "its" : "their", mpprof_rel_limit_text(lim).s,
                                  mpprof_rel_text(p->least_bad, lim).s);
  } else {
    char *basis;
    if (!p->n_measured)
      basis = strdup("range only, per-tensor scaling: --shadow measures the error");
    else if (p->n_measured < p->n_fit)
      basis = mpprof_asprintf("%zu of them measured within --shadow-max-rel %s, the others "
                              "range only",
                              p->n_measured, mpprof_rel_limit_text(lim).s);
    else if (p->recipe >= 0)
      basis = mpprof_asprintf("measured best: %s, relative L2 at most %s <= --shadow-max-rel "
                              "%s",
                              mpprof_fp8_recipe_te(p->recipe), mpprof_rel_text(p->worst_ok, lim).s,
                              mpprof_rel_limit_text(lim).s);
    else
      basis = mpprof_asprintf("measured within --shadow-max-rel %s, the best recipe per layer "
                              "in plan.json",
                              mpprof_rel_limit_text(lim).s);
    char *bad =
        n_bad ? mpprof_asprintf("; %zu more fit%s fp8's range but err%s more than "
                                "--shadow-max-rel %s (relative L2 %s at least)",
                                n_bad, n_bad == 1 ? "s" : "", n_bad == 1 ? "s" : "",
                                mpprof_rel_limit_text(lim).s, mpprof_rel_text(p->least_bad, lim).s)
              : strdup("");
    char fb[96];
    if (basis && bad)
      p->headline = mpprof_asprintf(
          "%zu layer%s (%s): %s (%s)%s", p->n_fit, p->n_fit == 1 ? "" : "s",
          mpprof_fp8_formats_text(p->n_fit, p->n_grads_unseen, fb), names, basis, bad);
    free(basis);
    free(bad);
  }
  free(names);
  return p->n_range && !p->headline ? -1 : 0;
}

/* The layers plan p keeps in fp32. */
static size_t plan_fp32(const mpprof_plan *p) {
  size_t n = 0;
  for (size_t k = 0; k < p->n_keep; k++)
    n += p->keep[k].dtype == MP_FP32;
  return n;
}

int mpprof_build_plan(mpprof_model *m) {
  mpprof_plan_free(m);
  if (mpprof_build_fp8_plan(m)) return -1;
  size_t known = 0;
  for (size_t i = 0; i < m->n_layers; i++)
    known += m->layers[i].adv.known;
  if (!known) return 0;
  bool bf16_ok = bf16_supported(m);
  mpprof_plan b, h;
  if (plan_for(m, MP_FP16, bf16_ok, &h)) {
    plan_free(&h);
    return -1;
  }
  if (!bf16_ok) {
    m->plan = h;
    return 0;
  }
  if (plan_for(m, MP_BF16, bf16_ok, &b)) {
    plan_free(&b);
    plan_free(&h);
    return -1;
  }
  /* mlp_train's fp32 run: bf16 kept fc3 in fp32, fp16 kept fc1 in bf16,
   * one layer out each; the tie went to bf16 and its fp32 layer */
  size_t h32 = plan_fp32(&h), b32 = plan_fp32(&b);
  if (h32 < b32 || (h32 == b32 && h.n_keep < b.n_keep)) {
    m->plan = h;
    m->plan_alt = b;
  } else {
    m->plan = b;
    m->plan_alt = h;
  }
  return 0;
}

void mpprof_plan_free(mpprof_model *m) {
  plan_free(&m->plan);
  plan_free(&m->plan_alt);
  free(m->plan_fp8.headline);
  memset(&m->plan_fp8, 0, sizeof m->plan_fp8);
}

/* The module path the snippet looks a kept layer up by (malloc'ed; NULL when
 * there is none): the layer's name with NVTX's '/' as PyTorch's '.', so that
 * "enc/fc1" and "dec/fc1" stay two modules. keep_in() in the snippet takes the
 * longest tail of it that names a submodule, so NVTX ranges around module
 * names and a DDP wrapper's "module." do not matter. No path: ops outside any
 * layer, and a PyTorch model's own forward() (mpprof_torch names the root by
 * its class, a name that is no path: its ops are no submodule's). */
static char *module_path(const mpprof_layer *l) {
  if (!l->name[0]) return NULL;
  if (l->module_class && !strcmp(l->name, l->module_class) && !strchr(l->name, '.')) return NULL;
  char *p = strdup(l->name);
  if (!p) return NULL;
  for (char *c = p; *c; c++)
    if (*c == '/') *c = '.';
  return p;
}

/* The model (mpprof_model_root, any process's) a module path is in: the
 * longest named model whose name is path or path's part before a '.'; NULL
 * for the main model, or when the program named none (as a C program). In
 * *ret_inner the path inside that model (a pointer into path; "" when path
 * names the model itself: its own forward's ops). */
static const char *path_model(const mpprof_model *m, const char *path, const char **ret_inner) {
  const char *best = NULL;
  size_t best_n = 0;
  for (size_t i = 0; i < m->n_procs; i++)
    for (size_t k = 0; k < m->procs[i].n_models; k++) {
      const char *name = m->procs[i].models[k].name;
      size_t n = strlen(name);
      if (n > best_n && !strncmp(path, name, n) && (path[n] == '.' || !path[n]))
        best = name, best_n = n;
    }
  *ret_inner = best ? path + best_n + (path[best_n] == '.') : path;
  return best;
}

/* The Python variable the snippet names a model by: its name in snake case
 * with "_model" ("Discriminator" -> discriminator_model), malloc'ed. */
static char *model_var(const char *name) {
  size_t n = strlen(name);
  char *v = malloc(2 * n + 8);
  if (!v) return NULL;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (isupper(c) && i && islower((unsigned char)name[i - 1])) v[j++] = '_';
    v[j++] = isalnum(c) && c < 0x80 ? (char)tolower(c) : '_';
  }
  v[j] = '\0';
  if (j < 5 || strcmp(v + j - 5, "model")) strcpy(v + j, j && v[j - 1] == '_' ? "model" : "_model");
  if (isdigit((unsigned char)v[0])) v[0] = '_';
  return v;
}

/* Some other layer's module path lies under this one's: wrapping this module
 * wraps those too. */
static bool has_sublayers(const mpprof_model *m, const char *path) {
  size_t n = strlen(path);
  for (size_t i = 0; i < m->n_layers; i++) {
    char *q = module_path(&m->layers[i]);
    bool under = q && !strncmp(q, path, n) && q[n] == '.';
    free(q);
    if (under) return true;
  }
  return false;
}

/* The kept layer of p whose module path is the longest proper prefix of
 * path (its module contains path's), or NULL. */
static const mpprof_plan_keep *kept_ancestor(const mpprof_model *m, const mpprof_plan *p,
                                             const char *path) {
  const mpprof_plan_keep *best = NULL;
  size_t best_n = 0;
  for (size_t k = 0; k < p->n_keep; k++) {
    char *q = module_path(&m->layers[p->keep[k].layer]);
    size_t n = q ? strlen(q) : 0;
    if (q && n > best_n && !strncmp(path, q, n) && path[n] == '.') best = &p->keep[k], best_n = n;
    free(q);
  }
  return best;
}

/* An earlier kept layer among the snippet's lines is in model too. */
static bool model_before(const mpprof_model *m, const mpprof_plan *p, size_t k, const char *model) {
  bool seen = false;
  for (size_t j = 0; j < k && !seen; j++) {
    char *q = module_path(&m->layers[p->keep[j].layer]);
    const char *inner, *other = q ? path_model(m, q, &inner) : NULL;
    seen = other && !strcmp(other, model);
    free(q);
  }
  return seen;
}

static const char *torch_dtype(mp_dtype d) {
  return d == MP_BF16 ? "torch.bfloat16" : d == MP_FP16 ? "torch.float16" : "torch.float32";
}

/* Python string literal contents: NVTX names come from the program. */
static void py_str(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '\\' || c == '"')
      fprintf(f, "\\%c", c);
    else if (c < 0x20 || c == 0x7f)
      fprintf(f, "\\x%02x", c);
    else
      fputc(c, f);
  }
}

/* Comments must not end early: a newline in a name would. */
static void py_comment(FILE *f, const char *s) {
  for (; *s; s++)
    fputc((unsigned char)*s < 0x20 ? ' ' : *s, f);
}

/* Some process said it ran PyTorch (raw "framework"). */
static bool ran_torch(const mpprof_model *m) {
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].framework && !strcmp(m->procs[i].framework, "torch")) return true;
  return false;
}

void mpprof_plan_snippet(const mpprof_model *m, const mpprof_plan *p, FILE *f) {
  const char *ad = torch_dtype(p->autocast);
  if (p->no_autocast) { /* every layer in fp32: the training step as it is, no autocast region */
    fputs("import torch\n\n# mpprof plan: ", f);
    py_comment(f, p->headline);
    fputs("\nfor inputs, targets in loader:\n    optimizer.zero_grad()\n"
          "    loss = loss_fn(model(inputs), targets)\n    loss.backward()\n    optimizer.step()\n",
          f);
    return;
  }
  fputs(p->n_keep ? "import warnings\n\nimport torch\n\n# mpprof plan: "
                  : "import torch\n\n# mpprof plan: ",
        f);
  py_comment(f, p->headline);
  fputs("\n", f);
  if (p->n_keep && !ran_torch(m))
    fputs("# The profiled program did not run PyTorch (no process said so): its layers are\n"
          "# NVTX range paths, which keep_in() looks up as module names by their tail; use\n"
          "# your model's module names where they differ.\n",
          f);
  if (p->n_keep) {
    fputs("def keep_in(model, layer, dtype):\n"
          "    \"\"\"Run the submodule of model that mpprof's layer names in dtype inside the\n"
          "    autocast region: the longest tail of the layer's path that names a module.\"\"\"\n"
          "    modules = dict(model.named_modules())\n"
          "    parts, found = layer.split(\".\"), []\n"
          "    for k in range(len(parts)):\n"
          "        tail = \".\".join(parts[k:])\n"
          "        found = [modules[tail]] if tail in modules else [\n"
          "            m for n, m in modules.items() if n.endswith(\".\" + tail)]\n"
          "        if found:\n"
          "            break\n"
          "    if len(found) != 1:\n"
          "        warnings.warn(\"mpprof plan: %s: %s; it stays in autocast\" % (layer,\n"
          "            \"no submodule of model has that name\" if not found else\n"
          "            \"%d submodules of model end with that name\" % len(found)))\n"
          "        return\n"
          "    module = found[0]\n"
          "    forward = module.forward\n"
          "    def wrapped(*args, **kwargs):\n"
          "        cast = lambda t: t.to(dtype) if torch.is_tensor(t) and "
          "t.is_floating_point() else t\n"
          "        region = (torch.autocast(\"cuda\", enabled=False) if dtype is torch.float32\n"
          "                  else torch.autocast(\"cuda\", dtype=dtype))\n"
          "        with region:\n"
          "            return forward(*map(cast, args), **kwargs)\n"
          "    module.forward = wrapped\n\n",
          f);
    for (size_t k = 0; k < p->n_keep && k < MPPROF_PLAN_SNIPPET_LINES; k++) {
      const mpprof_layer *l = &m->layers[p->keep[k].layer];
      char *path = module_path(l);
      const char *inner = NULL, *model = path ? path_model(m, path, &inner) : NULL;
      if (!path || (model && !*inner)) {
        free(path);
        fputs("# layer ", f);
        py_comment(f, mpprof_layer_label(l));
        fprintf(f, ": %s; keep it in %s by hand (%s around those ops)\n",
                l->name[0] ? "the ops of the model's own forward(), in no submodule"
                           : "ops outside every layer",
                mp_dtype_name(p->keep[k].dtype),
                p->keep[k].dtype == MP_FP32 ? "torch.autocast(\"cuda\", enabled=False)"
                                            : "torch.autocast(\"cuda\", dtype=torch.bfloat16)");
        continue;
      }
      /* A second model's layers (a GAN's discriminator, a teacher): looked
       * up in that model, which the user passes in its variable's place. */
      char *var = model ? model_var(model) : NULL;
      if (model && !model_before(m, p, k, model)) {
        fprintf(f, "# %s: your ", var ? var : "model");
        py_comment(f, model);
        fputs(" model (mpprof names its layers ", f);
        py_comment(f, model);
        fputs(".<module>)\n", f);
      }
      fprintf(f, "keep_in(%s, \"", var ? var : "model");
      free(var);
      py_str(f, inner);
      fprintf(f, "\", %s)  # layer ", torch_dtype(p->keep[k].dtype));
      py_comment(f, mpprof_layer_label(l));
      if (has_sublayers(m, path)) fputs(" (its submodules run in this dtype too)", f);
      fputs("\n", f);
      free(path);
    }
    if (p->n_keep > MPPROF_PLAN_SNIPPET_LINES)
      fprintf(f, "# ... %zu more layers: see plan.json\n", p->n_keep - MPPROF_PLAN_SNIPPET_LINES);
    fputs("\n", f);
  }
  if (p->scaler) /* torch.amp.GradScaler is torch 2.3's; before it, only torch.cuda.amp's */
    fprintf(f,
            "if hasattr(torch.amp, \"GradScaler\"):  # torch 2.3 and later\n"
            "    scaler = torch.amp.GradScaler(\"cuda\", init_scale=2.0**%d)\n"
            "else:\n"
            "    scaler = torch.cuda.amp.GradScaler(init_scale=2.0**%d)\n",
            p->scale_log2, p->scale_log2);
  fputs("for inputs, targets in loader:\n    optimizer.zero_grad()\n", f);
  fprintf(f, "    with torch.autocast(\"cuda\", dtype=%s):\n", ad);
  fputs("        loss = loss_fn(model(inputs), targets)\n", f);
  if (p->scaler)
    fputs("    scaler.scale(loss).backward()\n    scaler.step(optimizer)\n    scaler.update()\n",
          f);
  else
    fputs("    loss.backward()\n    optimizer.step()\n", f);
}

/* A plan.json layer's "module" (its path inside its model; null for ops in
 * no submodule) and "model" (a named model's name; null for the main one).
 * path: module_path(l). */
static void add_module(cJSON *e, const mpprof_model *m, const mpprof_layer *l, const char *path) {
  const char *inner = NULL, *model = path_model(m, path ? path : l->name, &inner);
  cJSON_AddItemToObject(e, "module",
                        path && *inner ? cJSON_CreateString(inner) : cJSON_CreateNull());
  cJSON_AddItemToObject(e, "model", model ? cJSON_CreateString(model) : cJSON_CreateNull());
}

static cJSON *plan_json(const mpprof_model *m, const mpprof_plan *p) {
  if (!p->known) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "autocast", mp_dtype_name(p->autocast));
  if (p->scaler) {
    cJSON *ls = cJSON_AddObjectToObject(o, "loss_scale");
    cJSON_AddNumberToObject(ls, "init_scale_log2", p->scale_log2);
    cJSON_AddNumberToObject(ls, "init_scale", ldexp(1.0, p->scale_log2));
    cJSON *w = cJSON_AddArrayToObject(ls, "window_log2");
    cJSON_AddItemToArray(w, cJSON_CreateNumber(p->window_lo));
    cJSON_AddItemToArray(w, cJSON_CreateNumber(p->window_hi));
    cJSON_AddItemToObject(
        ls, "true_window_log2",
        mpprof_true_window_json(true, p->window_lo, p->window_hi, p->beyond_lo, p->beyond_hi));
  } else {
    cJSON_AddNullToObject(o, "loss_scale");
  }
  /* what an fp16 plan's loss scale (or none) is relative to */
  cJSON_AddItemToObject(o, "loss_scale_note",
                        p->autocast == MP_FP16 && mpprof_loss_scale_note(&m->loss_scale)
                            ? cJSON_CreateString(mpprof_loss_scale_note(&m->loss_scale))
                            : cJSON_CreateNull());
  cJSON_AddStringToObject(o, "summary", p->headline);
  cJSON_AddItemToObject(o, "layers_fit", mpprof_json_u64(p->n_fit));
  cJSON_AddItemToObject(o, "layers_known", mpprof_json_u64(p->n_known));
  /* over the layers that fit: none, no figure (0 would read as measured) */
  cJSON_AddItemToObject(o, "max_overflow_pct",
                        p->n_fit ? mpprof_json_double(p->max_overflow_pct) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "max_flush_pct",
                        p->n_fit ? mpprof_json_double(p->max_flush_pct) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "max_pct_estimate",
                        p->n_fit ? cJSON_CreateBool(p->max_pct_estimate) : cJSON_CreateNull());
  cJSON *layers = cJSON_AddObjectToObject(o, "layers");
  size_t k = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    if (optimizer_only(l)) continue;
    bool kept = k < p->n_keep && p->keep[k].layer == i;
    char *path = module_path(l);
    /* Inside a kept layer's module, a layer runs in that layer's dtype
     * (keep_in wraps the whole module), not in the autocast dtype. */
    const mpprof_plan_keep *in = kept || !path ? NULL : kept_ancestor(m, p, path);
    /* A layer without a verdict is listed either way (verdict null): kept
     * out, or in the autocast dtype unchecked. */
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "dtype",
                            mp_dtype_name(kept ? p->keep[k].dtype
                                          : in ? in->dtype
                                               : p->autocast));
    cJSON_AddBoolToObject(e, "autocast", !kept && !in);
    cJSON_AddBoolToObject(e, "inputs_already_rounded",
                          !kept && !in && l->adv.known && plan_rounded(m, l, p->autocast));
    if (l->adv.known)
      cJSON_AddStringToObject(e, "verdict", mp_recommendation_name(l->adv.rec));
    else
      cJSON_AddNullToObject(e, "verdict");
    /* what the verdict did not see (the marks of the plan line) */
    if (l->adv.known) { /* as report.json's advice and layers.csv: none without a verdict */
      cJSON_AddBoolToObject(e, "gradients_seen", l->adv.has_gradients);
      cJSON_AddBoolToObject(e, "flushed_before_seen", mpprof_layer_flushed_unseen(l));
    } else {
      cJSON_AddNullToObject(e, "gradients_seen");
      cJSON_AddNullToObject(e, "flushed_before_seen");
    }
    add_module(e, m, l, path);
    cJSON_AddItemToObject(e, "inside",
                          in ? cJSON_CreateString(mpprof_layer_label(&m->layers[in->layer]))
                             : cJSON_CreateNull());
    free(path);
    cJSON_AddItemToObject(layers, mpprof_layer_label(l), e);
    if (kept) k++;
  }
  return o;
}

/* plan.json's "fp8": null when no layer fits fp8's range. */
static cJSON *fp8_json(const mpprof_model *m) {
  const mpprof_fp8_plan *p = &m->plan_fp8;
  if (!p->headline) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "summary", p->headline);
  cJSON_AddStringToObject(o, "format", "HYBRID"); /* e4m3 forward, e5m2 gradients */
  cJSON_AddItemToObject(o, "recipe",
                        p->n_fit && p->n_measured == p->n_fit && p->recipe >= 0
                            ? cJSON_CreateString(mpprof_fp8_recipe_te(p->recipe))
                            : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "layers_fit", mpprof_json_u64(p->n_fit));
  cJSON_AddItemToObject(o, "layers_in_range", mpprof_json_u64(p->n_range));
  cJSON_AddItemToObject(o, MPPROF_K_SHADOW_MAX_REL, mpprof_json_double(mpprof_shadow_max_rel(m)));
  cJSON *layers = cJSON_AddObjectToObject(o, "layers");
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    const mpprof_shadow_cand *c;
    mpprof_fp8_fit fit = mpprof_layer_fp8_fit(m, l, &c);
    if (fit == MPPROF_FP8_NO) continue;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddBoolToObject(e, "candidate", fit != MPPROF_FP8_ERROR_TOO_HIGH);
    cJSON_AddStringToObject(e, "basis", fit == MPPROF_FP8_RANGE ? "range" : "measured");
    /* false: e4m3 forward only, its e5m2 gradients unverified */
    cJSON_AddBoolToObject(e, "gradients_seen", !mpprof_layer_fp8_grads_unseen(l));
    cJSON_AddItemToObject(e, "recipe",
                          c ? cJSON_CreateString(mpprof_fp8_recipe_te(l->best_fp8))
                            : cJSON_CreateNull());
    cJSON_AddItemToObject(e, "rel_l2",
                          c ? mpprof_json_double(c->worst.rel_l2) : cJSON_CreateNull());
    char *path = module_path(l);
    add_module(e, m, l, path);
    free(path);
    cJSON_AddItemToObject(layers, mpprof_layer_label(l), e);
  }
  return o;
}

int mpprof_write_plan_json(const mpprof_model *m, const char *path, mpprof_afile_set *set) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return -1;
  cJSON_AddStringToObject(root, "schema", MP_SCHEMA_PLAN);
  cJSON_AddItemToObject(root, "recommended", plan_json(m, &m->plan));
  cJSON_AddItemToObject(root, "alternative", plan_json(m, &m->plan_alt));
  cJSON_AddItemToObject(root, "fp8", fp8_json(m));
  if (m->plan.known) {
    char *code = NULL;
    size_t len = 0;
    FILE *mf = open_memstream(&code, &len);
    if (mf) {
      mpprof_plan_snippet(m, &m->plan, mf);
      fclose(mf);
      cJSON_AddStringToObject(root, "pytorch", code ? code : "");
      free(code);
    }
  } else {
    cJSON_AddNullToObject(root, "pytorch");
  }
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) {
    errno = ENOMEM;
    return -1;
  }
  mpprof_afile a;
  if (mpprof_afile_open(&a, path, set)) {
    free(text);
    return -1;
  }
  fputs(text, a.f);
  fputc('\n', a.f);
  free(text);
  return mpprof_afile_close(&a, true);
}
