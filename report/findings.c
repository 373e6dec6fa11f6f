/* Findings: what the user should do, each with the numbers that show why and
 * a concrete action, ranked by impact (GPU time of the ops concerned, else the
 * number of values concerned).
 *
 * One small rule function per kind, listed in `rules` below: layer rules run
 * for every layer with a verdict (from its advice), model rules once (Tensor
 * Core findings from the per-site classification, the global loss scale);
 * problems are then ranked, and notes on the data itself (skipped files,
 * checkpoints, missing kernel data) follow in table order. Adding a kind is a
 * rule function, a row in `rules` and a test in tests/report/test_findings.c. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/raw_format.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

static mpprof_finding *add(mpprof_model *m, const char *kind, const char *severity,
                           const char *layer, char *message, char *action) {
  if (!message || !action ||
      mpprof_grow((void **)&m->findings, &m->cap_findings, m->n_findings + 1,
                  sizeof *m->findings)) {
    free(message);
    free(action);
    return NULL;
  }
  mpprof_finding *f = &m->findings[m->n_findings];
  f->kind = strdup(kind);
  f->severity = strdup(severity);
  f->layer = mpprof_strdup(layer);
  f->message = message;
  f->action = action;
  f->evidence = cJSON_CreateObject();
  if (!f->kind || !f->severity || (layer && !f->layer) || !f->evidence) {
    free(f->kind);
    free(f->severity);
    free(f->layer);
    free(message);
    free(action);
    cJSON_Delete(f->evidence);
    memset(f, 0, sizeof *f);
    return NULL;
  }
  m->n_findings++;
  return f;
}

static uint64_t layer_gpu(const mpprof_layer *l) {
  return l->has_gpu_ns ? l->gpu_ns : l->kernel_ns;
}

static void ev_num(cJSON *e, const char *k, double v) {
  cJSON_AddItemToObject(e, k, mpprof_json_double(v));
}

/* Whether a tensor ("<phase>.<role>") is of the evaluation phase. */
static bool eval_tensor(const mpprof_layer_tensor *t) {
  const char *ph = mpprof_phase_name(MPPROF_PHASE_EVAL);
  size_t n = strlen(ph);
  return !strncmp(t->name, ph, n) && t->name[n] == '.';
}

/* Worst tensor of class cls by fp16 overflow (else underflow) among the
 * evaluation phase's tensors (eval) or the others; NULL when none has any. */
static const mpprof_layer_tensor *worst_of(const mpprof_layer *l, mp_tclass cls, bool overflow,
                                           bool eval) {
  const mpprof_layer_tensor *w = NULL;
  double wv = 0;
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->cls != cls || !t->has_values || eval_tensor(t) != eval) continue;
    double v = overflow ? t->adv.fp16_overflow_fraction : t->adv.fp16_underflow_fraction;
    if (v > wv) w = t, wv = v;
  }
  return w;
}

/* The tensor a layer's finding names: the worst by fp16 overflow (else
 * underflow) of the training tensors (forward, recompute, unmarked) when one
 * has any, else of the evaluation ones. An eval-phase tensor with a larger
 * share was named before the training forward output that overflows too,
 * and read as "overflow only in evaluation". */
static const mpprof_layer_tensor *worst(const mpprof_layer *l, mp_tclass cls, bool overflow) {
  const mpprof_layer_tensor *w = worst_of(l, cls, overflow, false);
  return w ? w : worst_of(l, cls, overflow, true);
}

/* Thresholds of the flushed-gradient rule (docs/report.md): a 16-bit or fp8
 * backward output with at least this share of zeros, and that many times the
 * share of zeros in the layer's forward outputs. */
#define FLUSHED_ZERO_SHARE_MIN 0.10
#define FLUSHED_ZERO_RATIO_MIN 2.0
/* A dynamic loss scaler normally skips at most one step in this many. */
#define SKIPPED_STEPS_NORMAL_PER 1000

static double zero_share(const mpprof_cstats *c) {
  return c->count ? (double)c->zeros / (double)c->count : 0;
}

static bool narrow_dtype(mp_dtype d) {
  return d == MP_FP16 || d == MP_BF16 || d == MP_FP8_E4M3 || d == MP_FP8_E5M2;
}

static void ev_share(cJSON *e, const char *k, const mpprof_share *s) {
  cJSON_AddItemToObject(e, k, mpprof_share_json(s));
}

/* "the window is [2^a, 2^b]" text of the report-wide window, else the
 * layer's; where the search range cut it, its true edges after it, as the
 * summary says them (mpprof_edges_text). */
static char *window_text(const mpprof_model *m, const mpprof_layer *l) {
  const mpprof_applied_scale *g = &m->loss_scale;
  char edges[MP_LOSS_SCALE_EDGES_TEXT_MAX];
  if (g->has_window)
    return mpprof_asprintf(
        "the window is [2^%d, 2^%d]%s", g->window_lo, g->window_hi,
        mpprof_edges_text(m, g->window_lo, g->window_hi, g->beyond_lo, g->beyond_hi, false, edges));
  const mpprof_layer_advice *a = l ? &l->adv : NULL;
  if (a && a->has_window)
    return mpprof_asprintf(
        "this layer's window is [2^%d, 2^%d]%s", a->window_lo, a->window_hi,
        mpprof_edges_text(m, a->window_lo, a->window_hi, a->beyond_lo, a->beyond_hi, false, edges));
  return strdup("no loss-scale window is known");
}

static char *skipped_text(const mpprof_model *m) {
  const mpprof_applied_scale *g = &m->loss_scale;
  if (!g->steps_marked) return strdup("");
  bool normal = g->skipped_steps * SKIPPED_STEPS_NORMAL_PER <= g->steps_marked;
  return mpprof_asprintf("; %" PRIu64 " of %" PRIu64 " marked steps were skipped (%s: a dynamic "
                         "loss scaler skipping at most 1 step in %d is normal)",
                         g->skipped_steps, g->steps_marked, normal ? "normal" : "too many",
                         SKIPPED_STEPS_NORMAL_PER);
}

/* A loss scale overflows a tensor only in a format of less range than fp32's
 * (fp16, fp8; bf16 has fp32's): a mixed dtype (INVALID) may hold such. */
static bool scale_can_overflow(mp_dtype d) {
  const mp_format *f = mp_format_of(d);
  return !f || f->emax < mp_format_of(MP_FP32)->emax;
}

/* A tensor's Inf/NaN other than those its op made from finite inputs (op_infs:
 * the fp16_overflow finding's). */
static uint64_t held_nonfinite(const mpprof_layer_tensor *t) {
  return t->st.nans + t->st.pos_infs + t->st.neg_infs - t->op_infs;
}

/* The layer's Inf/NaN under a loss scale > 1 are the scale's overflow when a
 * gradient of the layer in such a format holds some (where it overflowed, or
 * its copy cast up: an fp32 output of fp16 inputs); in a layer whose scaled
 * tensors are all fp32/bf16 the scale made none of them (a NaN loss, an
 * upstream op: first_nonfinite says where). */
static bool scale_overflowed(const mpprof_layer *l) {
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->cls != MP_TCLASS_FORWARD && t->scale_max > 1 && held_nonfinite(t) &&
        scale_can_overflow(t->st.dtype))
      return true;
  }
  return false;
}

/* The layer's tensors other than t that hold NaN/Inf: the finding on t names
 * them too (one finding per layer; a 100% NaN output beside t was named
 * nowhere), in its message and its evidence "also". */
#define NONFINITE_ALSO_MAX 4
static bool other_nonfinite(const mpprof_layer_tensor *t, const mpprof_layer_tensor *o) {
  return o != t && o->st.nans + o->st.pos_infs + o->st.neg_infs;
}

/* msg + "; also in forward.D (3072 of 3072 values), ..." (msg is freed). */
static char *nonfinite_also(const mpprof_layer *l, const mpprof_layer_tensor *t, char *msg) {
  char list[512] = "";
  size_t len = 0, n = 0;
  for (size_t i = 0; msg && i < l->n_tensors; i++) {
    const mpprof_layer_tensor *o = &l->tensors[i];
    if (!other_nonfinite(t, o) || n++ >= NONFINITE_ALSO_MAX) continue;
    int w = snprintf(list + len, sizeof list - len, "%s%s (%" PRIu64 " of %" PRIu64 " values)",
                     len ? ", " : "", o->name, o->st.nans + o->st.pos_infs + o->st.neg_infs,
                     o->st.count);
    if (w > 0 && (size_t)w < sizeof list - len) len += (size_t)w;
  }
  if (!msg || !n) return msg;
  char *ret = n > NONFINITE_ALSO_MAX ? mpprof_asprintf("%s; also in %s and %zu more tensors", msg,
                                                       list, n - NONFINITE_ALSO_MAX)
                                     : mpprof_asprintf("%s; also in %s", msg, list);
  free(msg);
  return ret;
}

static int nonfinite_finding(mpprof_model *m, const mpprof_layer *l, const mpprof_layer_tensor *t,
                             bool scaled) {
  const char *name = mpprof_layer_label(l);
  uint64_t bad = t->st.nans + t->st.pos_infs + t->st.neg_infs;
  bool under_scale = t->cls != MP_TCLASS_FORWARD && t->scale_max > 1;
  char sc[32];
  char *msg, *act;
  if (under_scale && !scaled) {
    char *skip = skipped_text(m);
    msg = mpprof_asprintf(
        "%s: %s already holds NaN or Inf (%" PRIu64 " NaN, %" PRIu64 " +Inf, %" PRIu64
        " -Inf of %" PRIu64 " values) under loss scale %s, which did not make them: none of "
        "this layer's gradients that hold NaN or Inf is in fp16 or fp8, the formats a loss scale "
        "overflows "
        "(%s is %s)%s",
        name, t->name, t->st.nans, t->st.pos_infs, t->st.neg_infs, t->st.count,
        mpprof_scale_str(t->scale_max, sc), t->name,
        t->st.dtype == MP_DTYPE_INVALID ? "of several dtypes" : mp_dtype_name(t->st.dtype),
        skip ? skip : "");
    act = strdup("find where the non-finite values first appear (first_nonfinite; a NaN or Inf "
                 "loss, a division by zero, a too-large learning rate): lowering the loss scale "
                 "does not remove them");
    free(skip);
  } else if (scaled) {
    char *win = window_text(m, l), *skip = skipped_text(m);
    msg =
        mpprof_asprintf("loss scale %s overflows fp16 in %s's gradients: %s holds Inf/NaN in "
                        "%s%% of all its values (%" PRIu64 " NaN, %" PRIu64 " +Inf, %" PRIu64
                        " -Inf of %" PRIu64 "); %s%s",
                        mpprof_scale_str(t->scale_max, sc), name, t->name,
                        mpprof_pct_text(mpprof_pct(bad, t->st.count)).s, t->st.nans, t->st.pos_infs,
                        t->st.neg_infs, t->st.count, win ? win : "", skip ? skip : "");
    act = m->loss_scale.has_window
              ? mpprof_asprintf("lower the loss scale into [2^%d, 2^%d] (e.g. 2^%d), or let a "
                                "dynamic scaler (GradScaler) back off",
                                m->loss_scale.window_lo, m->loss_scale.window_hi,
                                m->loss_scale.recommended_log2)
              : strdup("lower the loss scale, or let a dynamic scaler (GradScaler) back off");
    free(win);
    free(skip);
  } else {
    msg = mpprof_asprintf("%s: %s already holds NaN or Inf (%" PRIu64 " NaN, %" PRIu64
                          " +Inf, %" PRIu64 " -Inf of %" PRIu64 " values)",
                          name, t->name, t->st.nans, t->st.pos_infs, t->st.neg_infs, t->st.count);
    act = strdup("find where the non-finite values first appear (first_nonfinite; an overflow "
                 "upstream, a division by zero, a too-large learning rate) before lowering "
                 "precision");
  }
  msg = nonfinite_also(l, t, msg);
  mpprof_finding *f =
      add(m, scaled ? "loss_scale_overflow" : "nonfinite_values", "high", l->name, msg, act);
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "tensor", t->name);
  cJSON *also = NULL;
  for (size_t i = 0; i < l->n_tensors; i++)
    if (other_nonfinite(t, &l->tensors[i]) &&
        (also || (also = cJSON_AddArrayToObject(f->evidence, "also"))))
      cJSON_AddItemToArray(also, cJSON_CreateString(l->tensors[i].name));
  ev_num(f->evidence, "nans", (double)t->st.nans);
  ev_num(f->evidence, "infs", (double)(t->st.pos_infs + t->st.neg_infs));
  ev_num(f->evidence, "count", (double)t->st.count);
  if (under_scale) {
    ev_num(f->evidence, "loss_scale", t->scale_max);
    ev_num(f->evidence, "skipped_steps", (double)m->loss_scale.skipped_steps);
    ev_num(f->evidence, "steps_marked", (double)m->loss_scale.steps_marked);
  }
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = t->st.count;
  return 0;
}

/* Outputs zero in every scanned call: dead gradients (grad) or dead forward outputs. */
static int dead_findings(mpprof_model *m, const mpprof_layer *l, bool grad) {
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (!t->output || t->st.count == 0 || t->st.zeros != t->st.count) continue;
    if ((t->cls == MP_TCLASS_GRADIENT) != grad) continue;
    mpprof_finding *f = add(
        m, grad ? "dead_gradient" : "dead_output", "high", l->name,
        mpprof_asprintf("%s: %s (%s) is zero in all %" PRIu64 " scanned calls: %s",
                        mpprof_layer_label(l), t->name, grad ? "gradient" : "output",
                        t->scanned_calls,
                        grad ? "this layer does not learn" : "this layer passes nothing on"),
        strdup(grad ? "check the loss scale (fp16 gradients flush to zero below 2^-24; see the "
                      "flushed-gradient findings), the layer's activation (dead ReLU, saturated "
                      "tanh) and that it is connected to the loss"
                    : "check the layer's inputs and activation (dead ReLU) and its weights"));
    if (!f) return -1;
    cJSON_AddStringToObject(f->evidence, "tensor", t->name);
    ev_num(f->evidence, "scanned_calls", (double)t->scanned_calls);
    ev_num(f->evidence, "values", (double)t->st.count);
    f->impact_gpu_ns = layer_gpu(l);
    f->impact_elements = t->st.count;
  }
  return 0;
}

/* Zeros in 16-bit/fp8 gradients far above the forward outputs' zeros, at an
 * applied scale of 1 or unknown: flushed before mpprof saw them. */
static int flushed_findings(mpprof_model *m, const mpprof_layer *l) {
  double fwd = 0;
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->output && t->cls == MP_TCLASS_FORWARD && zero_share(&t->st) > fwd)
      fwd = zero_share(&t->st);
  }
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (!t->output || t->cls != MP_TCLASS_GRADIENT || !narrow_dtype(t->st.dtype)) continue;
    if (t->scale_max > 1 || t->st.zeros == t->st.count) continue; /* scaled, or dead (above) */
    double z = zero_share(&t->st);
    if (z < FLUSHED_ZERO_SHARE_MIN || z < FLUSHED_ZERO_RATIO_MIN * fwd) continue;
    char *win = window_text(m, l);
    mpprof_finding *f = add(
        m, "gradients_flushed", "medium", l->name,
        mpprof_asprintf("gradients of %s probably flushed to zero before mpprof saw them: %s (%s) "
                        "is %s%% zeros (of all its values) against at most %s%% in the "
                        "layer's forward outputs, at a loss scale of %s",
                        mpprof_layer_label(l), t->name, mp_dtype_name(t->st.dtype),
                        mpprof_pct_text(100 * z).s, mpprof_pct_text(100 * fwd).s,
                        t->scale_undeclared ? "1 or undeclared" : "1"),
        mpprof_asprintf("raise the loss scale: %s", win ? win : ""));
    free(win);
    if (!f) return -1;
    cJSON_AddStringToObject(f->evidence, "tensor", t->name);
    ev_num(f->evidence, "zero_fraction", z);
    ev_num(f->evidence, "forward_zero_fraction", fwd);
    f->impact_gpu_ns = layer_gpu(l);
    f->impact_elements = t->st.zeros;
  }
  return 0;
}

/* mpprof_fp16_flush_edge tensors: flushed before mpprof saw them. Their
 * zeros cannot be told from true zeros, but the subnormals can: this catches
 * a flushed incoming gradient (a backward GEMM's input) that the verdicts,
 * which judge the GEMM's output, cannot see. */
static int flush_edge_findings(mpprof_model *m, const mpprof_layer *l) {
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    const mpprof_cstats *c = t->at_scale.count ? &t->at_scale : &t->st; /* as recorded */
    double share = mpprof_fp16_flush_edge(t);
    if (share == 0) continue;
    uint64_t sub = c->casts[MP_TGT_FP16][MP_CAST_SUBNORMAL];
    double fp16_max = mp_format_of(MP_FP16)->max_finite;
    int room = c->absmax > 0 ? (int)floor(log2(fp16_max / c->absmax)) : 0;
    char scale[64];
    if (t->scale_min > 0 && t->scale_min == t->scale_max)
      snprintf(scale, sizeof scale, "at the applied loss scale %.6g", t->scale_min);
    else
      snprintf(scale, sizeof scale, "as the program wrote it");
    mpprof_finding *f =
        add(m, "fp16_flush_edge", "high", l->name,
            mpprof_asprintf("%s: %s (fp16, %s) lost values to flush-to-zero before mpprof saw it: "
                            "%s%% of its non-zero values are fp16 subnormals (below 2^-14, fewer "
                            "than 11 significant bits), so values below 2^-24 became zeros (it is "
                            "%s%% zeros); figures computed from it, this layer's outputs and "
                            "verdict among them, miss what was flushed",
                            mpprof_layer_label(l), t->name, scale, mpprof_pct_text(100.0 * share).s,
                            mpprof_pct_text(100 * zero_share(c)).s),
            room > 0 ? mpprof_asprintf("raise the loss scale: this tensor's largest value %.4g "
                                       "leaves 2^%d of headroom below fp16's max; or run this "
                                       "layer's backward in bf16",
                                       c->absmax, room)
                     : strdup("run this layer's backward in bf16: its largest value leaves no room "
                              "to scale it up in fp16"));
    if (!f) return -1;
    cJSON_AddStringToObject(f->evidence, "tensor", t->name);
    ev_num(f->evidence, "subnormal_fraction", share);
    ev_num(f->evidence, "zero_fraction", zero_share(c));
    ev_num(f->evidence, "absmax", c->absmax);
    ev_num(f->evidence, "headroom_log2", room);
    f->impact_gpu_ns = layer_gpu(l);
    f->impact_elements = c->zeros + sub;
  }
  return 0;
}

/* The layer rules below run for every layer, with a verdict or not: a dead or
 * overflowed gradient is what takes a layer's verdict away. */
static int each_layer(mpprof_model *m, int (*fn)(mpprof_model *, const mpprof_layer *)) {
  for (size_t i = 0; i < m->n_layers; i++)
    if (fn(m, &m->layers[i])) return -1;
  return 0;
}

/* The layer's tensor with the most Inf/NaN it held, when it ran under a loss
 * scale > 1 (scaled) or not: one finding per layer. */
static const mpprof_layer_tensor *most_nonfinite(const mpprof_layer *l) {
  const mpprof_layer_tensor *nf = NULL;
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    uint64_t bad = held_nonfinite(t);
    if (bad && (!nf || bad > held_nonfinite(nf))) nf = t;
  }
  return nf;
}

/* The tensor's Inf/NaN are the loss scale's overflow (scale_overflowed). */
static bool scaled_tensor(const mpprof_layer *l, const mpprof_layer_tensor *t) {
  return t->cls != MP_TCLASS_FORWARD && t->scale_max > 1 && scale_overflowed(l);
}

static int nonfinite_layer(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *t = most_nonfinite(l);
  return t && !scaled_tensor(l, t) ? nonfinite_finding(m, l, t, false) : 0;
}

static int loss_scale_overflow_layer(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *t = most_nonfinite(l);
  return t && scaled_tensor(l, t) ? nonfinite_finding(m, l, t, true) : 0;
}

static int dead_gradient_layer(mpprof_model *m, const mpprof_layer *l) {
  return dead_findings(m, l, true);
}

static int dead_output_layer(mpprof_model *m, const mpprof_layer *l) {
  return dead_findings(m, l, false);
}

static int rule_nonfinite_values(mpprof_model *m) {
  return each_layer(m, nonfinite_layer);
}

static int rule_loss_scale_overflow(mpprof_model *m) {
  return each_layer(m, loss_scale_overflow_layer);
}

static int rule_dead_gradient(mpprof_model *m) {
  return each_layer(m, dead_gradient_layer);
}

static int rule_dead_output(mpprof_model *m) {
  return each_layer(m, dead_output_layer);
}

static int rule_gradients_flushed(mpprof_model *m) {
  return each_layer(m, flushed_findings);
}

static int rule_fp16_flush_edge(mpprof_model *m) {
  return each_layer(m, flush_edge_findings);
}

/* ---- layer rules: called only for layers with a verdict (adv.known), or
 * for every layer when the rule says any_layer ---- */

/* A GELU aux (phase.aux): an fp8 one has a scale of its own, not D's. */
static bool is_aux(const mpprof_layer_tensor *t) {
  const char *dot = strrchr(t->name, '.');
  return dot && !strcmp(dot + 1, MP_ROLE_AUX);
}

static int rule_fp16_overflow(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *ov = worst(l, MP_TCLASS_FORWARD, true);
  if (!ov) return 0;
  /* The evaluation phase's overflow, when the training one is named: said too. */
  const mpprof_layer_tensor *ev =
      eval_tensor(ov) ? NULL : worst_of(l, MP_TCLASS_FORWARD, true, true);
  char also[160] = "";
  if (ev)
    snprintf(also, sizeof also, "; %s too (absmax %.4g, %s%% of values)", ev->name, ev->st.absmax,
             mpprof_pct_text(100 * ev->adv.fp16_overflow_fraction).s);
  double fp16_max = mp_format_of(MP_FP16)->max_finite;
  bool fp32 = l->adv.known && l->adv.rec == MP_REC_FP32;
  mpprof_finding *f;
  /* The share the layer table gives (of the finite non-zero values). */
  mpprof_share sh = mpprof_share_of(ov, MP_TGT_FP16, MP_CAST_OVERFLOW, false);
  if (ov->st.saturated) { /* an fp8 output the op clamped: overflow of unknown size */
    /* Its format from the sites' (saturated_as): the layer's tensor may merge
     * an fp8 output with a wider one (st.dtype then MP_DTYPE_INVALID), and
     * its absmax is then no overflow of fp16 either. */
    char *at = mpprof_saturated_at(ov);
    if (!at) return -1;
    f = add(m, "fp16_overflow", "high", l->name,
            mpprof_asprintf(
                "%s: %s saturated: %" PRIu64 " of %" PRIu64
                " finite non-zero values (%s%%) at %s, clamped by the op, so their "
                "true range is unknown%s%s",
                mpprof_layer_label(l), ov->name, ov->st.saturated, sh.den,
                mpprof_pct_text(mpprof_pct(ov->st.saturated, sh.den)).s, at,
                ov->st.dtype == MP_DTYPE_INVALID
                    ? "; its sites store it in different dtypes, and the share is of all of them"
                    : "",
                also),
            strdup(is_aux(ov)
                       ? "lower the aux's fp8 scale (EPILOGUE_AUX_SCALE, from its amax_aux), or "
                         "keep the aux in fp16 or bf16"
                       : "lower this output's fp8 scale (the D scale, from its amax), or keep the "
                         "output in bf16"));
    free(at);
  } else if (ov->op_infs) /* +-Inf the op made from finite inputs: overflow of unknown size */
    f = add(m, "fp16_overflow", "high", l->name,
            mpprof_asprintf("%s: %s overflowed fp16: %" PRIu64 " +-Inf made by the op from "
                            "finite inputs (%s%% of its finite non-zero values and those Inf)%s",
                            mpprof_layer_label(l), ov->name, ov->op_infs, mpprof_pct_text(sh.pct).s,
                            also),
            strdup(fp32 ? "keep this layer in fp32 (it does not fit bf16 either)"
                        : "keep this layer in bf16 or fp32 (exclude it from fp16 autocast)"));
  else
    f = add(m, "fp16_overflow", "high", l->name,
            mpprof_asprintf("%s: %s reaches %.4g > fp16 max %.6g in %s%% of values%s",
                            mpprof_layer_label(l), ov->name, ov->st.absmax, fp16_max,
                            mpprof_pct_text(100 * ov->adv.fp16_overflow_fraction).s, also),
            strdup(fp32 ? "keep this layer in fp32 (it does not fit bf16 either)"
                        : "keep this layer in bf16 or fp32 (exclude it from fp16 autocast)"));
  if (!f) return -1;
  if (ov->st.saturated) ev_num(f->evidence, "saturated", (double)ov->st.saturated);
  for (int i = 0; i < 2; i++) { /* saturated_fp8_e4m3, saturated_fp8_e5m2 */
    char key[48];
    snprintf(key, sizeof key, "saturated_%s", mp_dtype_name(mpprof_saturated_formats[i]));
    if (ov->saturated_as[i]) ev_num(f->evidence, key, (double)ov->saturated_as[i]);
  }
  if (ov->op_infs) ev_num(f->evidence, "op_infs", (double)ov->op_infs);
  cJSON_AddStringToObject(f->evidence, "tensor", ov->name);
  if (ev) cJSON_AddStringToObject(f->evidence, "eval_tensor", ev->name);
  ev_num(f->evidence, "absmax", ov->st.absmax);
  ev_num(f->evidence, "fp16_max", fp16_max);
  ev_num(f->evidence, "overflow_fraction", ov->adv.fp16_overflow_fraction);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = ov->st.casts[MP_TGT_FP16][MP_CAST_OVERFLOW] + ov->st.saturated + ov->op_infs;
  return 0;
}

static int rule_fp16_forward_underflow(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *fu = worst(l, MP_TCLASS_FORWARD, false);
  if (!fu || fu->adv.fp16 == MP_FP16_SAFE || fu->adv.fp16_overflow_fraction != 0 ||
      fu->adv.fp16_underflow_fraction <= m->params.underflow_max)
    return 0;
  mpprof_finding *f =
      add(m, "fp16_forward_underflow", "medium", l->name,
          mpprof_asprintf("%s: %s flushes to zero in fp16 for %s%% of values (smallest |x| "
                          "%.4g); a loss scale does not reach forward tensors",
                          mpprof_layer_label(l), fu->name,
                          mpprof_pct_text(100 * fu->adv.fp16_underflow_fraction).s,
                          fu->st.min_abs_nonzero),
          strdup(l->adv.rec == MP_REC_FP32 ? "keep this layer in fp32" : "run this layer in bf16"));
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "tensor", fu->name);
  ev_num(f->evidence, "underflow_fraction", fu->adv.fp16_underflow_fraction);
  ev_num(f->evidence, "min_abs_nonzero", fu->st.min_abs_nonzero);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = fu->st.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW];
  return 0;
}

/* A forward tensor of a layer advised fp16 with MP_ADVICE_FP16_SUBNORMAL_NOTE
 * or more of its finite non-zero values in fp16's subnormal range. */
static int fp16_subnormal_forward(mpprof_model *m, const mpprof_layer *l) {
  if (l->adv.rec != MP_REC_FP16 && l->adv.rec != MP_REC_FP16_LOSS_SCALE) return 0;
  const mpprof_layer_tensor *w = NULL;
  double ws = 0;
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->cls != MP_TCLASS_FORWARD || !t->has_values) continue;
    double share = mp_fp16_subnormal_share_unscaled(t->st.casts); /* forward: never loss-scaled */
    if (share > ws) w = t, ws = share;
  }
  if (!w || ws < MP_ADVICE_FP16_SUBNORMAL_NOTE) return 0;
  const mp_format *f16 = mp_format_of(MP_FP16);
  mpprof_finding *f = add(
      m, "fp16_subnormal", "low", l->name,
      mpprof_asprintf("%s: %s has %s%% of its values in fp16's subnormal range (|x| < 2^%d = "
                      "%.3g), where they keep fewer than %d significant bits (1 at 2^%d); the "
                      "fp16 verdict counts only values flushed to zero, and a loss scale does "
                      "not reach forward tensors",
                      mpprof_layer_label(l), w->name, mpprof_pct_text(100 * ws).s, f16->emin,
                      ldexp(1.0, f16->emin), (int)f16->man_bits + 1, f16->emin_sub),
      strdup("measure this layer's error in fp16 (mpprof run --shadow) before switching, or run "
             "it in bf16, whose normal range reaches 2^-126"));
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "tensor", w->name);
  ev_num(f->evidence, "subnormal_fraction", ws);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = w->st.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL];
  return 0;
}

/* A gradient of a layer advised fp16 that is partly fp16 subnormals
 * unscaled (mpprof_subnormal_gradient) where the program applied no loss
 * scale: the window's "fits at 2^0" is of range, not of precision. */
static int fp16_subnormal_gradient(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_applied_scale *g = &m->loss_scale;
  if (!g->subnormal || (g->declared && g->max > 1)) return 0;
  const mpprof_layer_tensor *w = mpprof_subnormal_gradient(l);
  if (!w) return 0;
  double ws = mp_fp16_subnormal_share_unscaled(w->st.casts);
  mp_stats *st = malloc(sizeof *st);
  if (!st) return -1;
  mpprof_cstats_unpack(&w->st, st);
  double at = mp_fp16_subnormal_share(st, g->recommended_log2);
  free(st);
  const mp_format *f16 = mp_format_of(MP_FP16);
  mpprof_finding *f =
      add(m, "fp16_subnormal", "medium", l->name,
          mpprof_asprintf("%s: %s has %s%% of its values in fp16's subnormal range without a loss "
                          "scale (|x| < 2^%d = %.3g, fewer than %d significant bits); at the "
                          "recommended scale 2^%d, %s%%",
                          mpprof_layer_label(l), w->name, mpprof_pct_text(100 * ws).s, f16->emin,
                          ldexp(1.0, f16->emin), (int)f16->man_bits + 1, g->recommended_log2,
                          mpprof_pct_text(100 * at).s),
          mpprof_asprintf("apply a loss scale in [2^%d, 2^%d], e.g. 2^%d (or a dynamic scaler, "
                          "GradScaler), before running this layer's gradients in fp16",
                          g->window_lo, g->window_hi, g->recommended_log2));
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "tensor", w->name);
  ev_num(f->evidence, "subnormal_fraction", ws);
  ev_num(f->evidence, "subnormal_fraction_at_recommended", at);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = w->st.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL];
  return 0;
}

/* fp16_subnormal: a forward tensor's, then a gradient's (each at most once). */
static int rule_fp16_subnormal(mpprof_model *m, const mpprof_layer *l) {
  return fp16_subnormal_forward(m, l) || fp16_subnormal_gradient(m, l) ? -1 : 0;
}

/* The gradient the two gradient rules are about: the worst by fp16 underflow,
 * when it is not fp16-safe. */
static const mpprof_layer_tensor *unsafe_gradient(const mpprof_layer *l) {
  const mpprof_layer_tensor *gu = worst(l, MP_TCLASS_GRADIENT, false);
  return gu && gu->adv.fp16 != MP_FP16_SAFE ? gu : NULL;
}

static void gradient_evidence(mpprof_finding *f, const mpprof_layer *l,
                              const mpprof_layer_tensor *gu) {
  cJSON_AddStringToObject(f->evidence, "tensor", gu->name);
  ev_num(f->evidence, "underflow_fraction", gu->adv.fp16_underflow_fraction);
  ev_num(f->evidence, "overflow_fraction", gu->adv.fp16_overflow_fraction);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = gu->st.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW];
}

/* The loss scale a layer's finding gives as its example: the global
 * recommendation when it is in the layer's window (one scale multiplies every
 * gradient, so another one would contradict the summary), else the one the
 * layer's window suggests (mp_loss_scale_pick). */
static int example_scale_log2(const mpprof_model *m, int wlo, int whi, int beyond_lo,
                              int beyond_hi) {
  const mpprof_applied_scale *g = &m->loss_scale;
  if (g->applicable && g->has_window && g->recommended_log2 >= wlo && g->recommended_log2 <= whi)
    return g->recommended_log2;
  return mp_loss_scale_pick(wlo, whi, beyond_lo, beyond_hi);
}

/* Every scale the program declared lies in [2^wlo, 2^whi]. */
static bool applied_inside(const mpprof_model *m, int wlo, int whi) {
  const mpprof_applied_scale *g = &m->loss_scale;
  return g->declared && g->min >= ldexp(1.0, wlo) && g->max <= ldexp(1.0, whi);
}

static int rule_gradient_underflow(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *gu = unsafe_gradient(l);
  const mpprof_layer_advice *a = &l->adv;
  /* The layer's window when it runs in fp16, else what the gradients alone allow. */
  if (!gu || !(a->has_window || gu->adv.has_window)) return 0;
  int wlo = a->has_window ? a->window_lo : gu->adv.window_lo;
  int whi = a->has_window ? a->window_hi : gu->adv.window_hi;
  int blo = a->has_window ? a->beyond_lo : gu->adv.beyond_lo;
  int bhi = a->has_window ? a->beyond_hi : gu->adv.beyond_hi;
  bool scaled = a->rec == MP_REC_FP16_LOSS_SCALE;
  /* A program that already applies a scale of the window needs nothing: the
   * unscaled share is what it would lose at scale 1, not what it loses. */
  const mpprof_applied_scale *g = &m->loss_scale;
  /* inside the window's true edges (past the search range where it cut it) */
  bool done = scaled && applied_inside(m, wlo - blo, whi + bhi);
  char edges[MP_LOSS_SCALE_EDGES_TEXT_MAX], gedges[MP_LOSS_SCALE_EDGES_TEXT_MAX];
  mpprof_edges_text(m, wlo, whi, blo, bhi, false, edges);
  mpprof_edges_text(m, g->window_lo, g->window_hi, g->beyond_lo, g->beyond_hi, false, gedges);
  char sa[32], sb[32], applied[224] = "";
  if (done) {
    const mpprof_share *at = &l->applied_fp16_underflow;
    char scales[72];
    if (g->min == g->max)
      snprintf(scales, sizeof scales, "%s", mpprof_scale_str(g->min, sa));
    else
      snprintf(scales, sizeof scales, "%s..%s", mpprof_scale_str(g->min, sa),
               mpprof_scale_str(g->max, sb));
    if (at->tensor)
      snprintf(applied, sizeof applied,
               "; the applied loss scale %s is inside it (at it %s%% of %s flush)", scales,
               mpprof_pct_text(at->pct).s, at->tensor);
    else
      snprintf(applied, sizeof applied, "; the applied loss scale %s is inside it", scales);
  }
  mpprof_finding *f =
      add(m, "gradient_underflow",
          done     ? "info"
          : scaled ? "medium"
                   : "low",
          l->name,
          mpprof_asprintf("gradients of %s (%s) flush to zero in fp16 for %s%% of values at "
                          "scale 1; every loss scale in [2^%d, 2^%d] fits%s%s",
                          mpprof_layer_label(l), gu->name,
                          mpprof_pct_text(100 * gu->adv.fp16_underflow_fraction).s, wlo, whi,
                          *edges                            ? edges
                          : whi == m->params.scale_log2_max ? " (the search stops there)"
                                                            : "",
                          applied),
          done     ? (g->applicable && g->has_window
                          ? mpprof_asprintf("nothing to change: keep the loss scale in the "
                                                "model-wide window [2^%d, 2^%d]%s",
                                            g->window_lo, g->window_hi, gedges)
                          : strdup("nothing to change: keep the loss scale in that window"))
          : scaled ? mpprof_asprintf("train this layer in fp16 with a loss scale in [2^%d, 2^%d] "
                                     "(e.g. 2^%d), or use bf16",
                                     wlo, whi, example_scale_log2(m, wlo, whi, blo, bhi))
                   : mpprof_asprintf("nothing for the gradients alone: the layer is advised %s "
                                     "for its other tensors",
                                     mp_recommendation_name(a->rec)));
  if (!f) return -1;
  cJSON *w = cJSON_AddArrayToObject(f->evidence, "window_log2");
  cJSON_AddItemToArray(w, cJSON_CreateNumber(wlo));
  cJSON_AddItemToArray(w, cJSON_CreateNumber(whi));
  gradient_evidence(f, l, gu);
  if (done && l->applied_fp16_underflow.tensor)
    ev_share(f->evidence, "fp16_underflow_at_applied", &l->applied_fp16_underflow);
  return 0;
}

static int rule_gradient_range(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *gu = unsafe_gradient(l);
  if (!gu || l->adv.has_window || gu->adv.has_window) return 0;
  mpprof_finding *f =
      add(m, "gradient_range", "high", l->name,
          mpprof_asprintf("gradients of %s span more than fp16 holds: %s%% flush to zero "
                          "and %s%% overflow at scale 1, and no single loss scale fits "
                          "(|x| from %.4g to %.4g)",
                          mpprof_layer_label(l),
                          mpprof_pct_text(100 * gu->adv.fp16_underflow_fraction).s,
                          mpprof_pct_text(100 * gu->adv.fp16_overflow_fraction).s,
                          gu->st.min_abs_nonzero, gu->st.absmax),
          strdup(l->adv.rec == MP_REC_FP32 ? "keep this layer's gradients in fp32"
                                           : "use bf16 for this layer"));
  if (!f) return -1;
  gradient_evidence(f, l, gu);
  return 0;
}

static int rule_bf16_unsafe(mpprof_model *m, const mpprof_layer *l) {
  if (l->adv.rec != MP_REC_FP32) return 0;
  /* Only when some value is beyond bf16's range: a layer kept in fp32 for
   * NaN/Inf that fp32 made (nonfinite_values says so), or for its measured
   * bf16 error (its reasons say so), read "values exceed bf16 (0% overflow,
   * 0% flush)". */
  bool beyond = false;
  for (size_t t = 0; t < l->n_tensors; t++) {
    const mpprof_layer_tensor *lt = &l->tensors[t];
    if (lt->has_values && (lt->cls == MP_TCLASS_FORWARD || lt->cls == MP_TCLASS_GRADIENT) &&
        !lt->adv.bf16_ok)
      beyond = true;
  }
  if (!beyond) return 0;
  mpprof_finding *f =
      add(m, "bf16_unsafe", "high", l->name,
          mpprof_asprintf("%s: values exceed bf16 (%s%% overflow in %s, %s%% flush to zero "
                          "in %s)",
                          mpprof_layer_label(l), mpprof_pct_text(l->bf16_overflow.pct).s,
                          l->bf16_overflow.tensor, mpprof_pct_text(l->bf16_underflow.pct).s,
                          l->bf16_underflow.tensor),
          strdup("keep this layer in fp32"));
  if (!f) return -1;
  ev_share(f->evidence, "bf16_overflow", &l->bf16_overflow);
  ev_share(f->evidence, "bf16_underflow", &l->bf16_underflow);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = l->elements;
  return 0;
}

/* A GEMM's A or a convolution's x is fp32. */
static bool site_fp32_input(const mpprof_site *s) {
  for (int t = 0; t < s->n_types; t++)
    if (s->types[t].dtype == MP_FP32 &&
        (!strcmp(s->types[t].role, "A") || !strcmp(s->types[t].role, "x")))
      return true;
  return false;
}

/* An opportunity: a layer computes in fp32 but its values allow 16 bits. */
static bool fp32_inputs(const mpprof_model *m, const mpprof_layer *l) {
  for (size_t i = 0; i < l->n_sites; i++)
    if (site_fp32_input(&m->sites[l->first_site + i])) return true;
  return false;
}

static bool lower_precision_layer(const mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_advice *a = &l->adv;
  return a->known &&
         (a->rec == MP_REC_FP16 || a->rec == MP_REC_FP16_LOSS_SCALE || a->rec == MP_REC_BF16) &&
         fp32_inputs(m, l);
}

static const char *fits_text(mp_recommendation rec) {
  return rec == MP_REC_BF16 ? "bf16" : rec == MP_REC_FP16 ? "fp16 as is" : "fp16 with a loss scale";
}

/* A layer's fp32-input GEMM/conv sites and those of them seen on Tensor
 * Cores (all in TF32, or some other path): fp16/bf16 would not bring
 * Tensor Cores to those, only half the bytes and twice TF32's rate. */
typedef struct fp32_tc {
  size_t fp32, on_tc;
  bool tf32; /* every site on Tensor Cores is on the TF32 path */
} fp32_tc;

static fp32_tc layer_fp32_tc(const mpprof_model *m, const mpprof_layer *l) {
  fp32_tc r = {.tf32 = true};
  for (size_t i = 0; i < l->n_sites; i++) {
    const mpprof_site *s = &m->sites[l->first_site + i];
    if (!site_fp32_input(s)) continue;
    r.fp32++;
    if (s->tc_used != 1) continue;
    r.on_tc++;
    r.tf32 &= s->elig.tf32;
  }
  return r;
}

static const char *tc_name(bool tf32) {
  return tf32 ? "TF32 Tensor Cores" : "Tensor Cores";
}

/* "none", "all", "some" of a layer's fp32 sites on Tensor Cores (evidence). */
static const char *tc_state(fp32_tc c) {
  return c.on_tc == 0 ? "none" : c.on_tc == c.fp32 ? "all" : "some";
}

/* What autocast brings, after "halving <whose> memory traffic": Tensor
 * Cores only where the sites are not on them already; over TF32, fp16/bf16
 * Tensor Cores run at twice the rate. */
static const char *autocast_gain(size_t on_tc, size_t off_tc, bool tf32) {
  if (on_tc == 0) return " and using Tensor Cores";
  if (off_tc == 0)
    return tf32 ? " and doubling the Tensor Core rate over TF32" : " (on Tensor Cores already)";
  return tf32 ? ", doubling the Tensor Core rate over TF32 where they run TF32 now and using "
                "Tensor Cores where they do not"
              : " and using Tensor Cores where they do not yet";
}

/* One finding for every such layer (one cause, one action: autocast), listing
 * the layers with what each fits; its evidence names their sites. */
static int rule_lower_precision_possible(mpprof_model *m) {
  cJSON *layers = cJSON_CreateArray(), *sites = cJSON_CreateArray();
  char *list = strdup(""), *list_tc = strdup("");
  const mpprof_layer *only = NULL;
  fp32_tc only_tc = {0};
  size_t n = 0, all_on_tc = 0, none_on_tc = 0; /* layers */
  bool tf32 = true;
  uint64_t gpu = 0, elements = 0;
  int rc = layers && sites && list && list_tc ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    if (!lower_precision_layer(m, l)) continue;
    only = n++ ? NULL : l;
    fp32_tc c = layer_fp32_tc(m, l);
    only_tc = c;
    all_on_tc += c.on_tc == c.fp32;
    none_on_tc += c.on_tc == 0;
    tf32 &= c.tf32;
    gpu += layer_gpu(l);
    elements += l->elements;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToArray(layers, o);
    cJSON_AddStringToObject(o, "layer", l->name);
    cJSON_AddStringToObject(o, "recommended", mp_recommendation_name(l->adv.rec));
    cJSON_AddStringToObject(o, "tensor_cores", tc_state(c));
    ev_share(o, "fp16_overflow", &l->fp16_overflow);
    ev_share(o, "fp16_underflow", &l->fp16_underflow);
    for (size_t k = 0; k < l->n_sites; k++)
      cJSON_AddItemToArray(sites, mpprof_json_u64(m->sites[l->first_site + k].id));
    if (n > MPPROF_LAYERS_NAMED) continue; /* the evidence names them all */
    char *longer = mpprof_asprintf("%s%s%s (%s)", list, n > 1 ? ", " : "", mpprof_layer_label(l),
                                   fits_text(l->adv.rec));
    /* the same, saying which layers are on Tensor Cores already */
    char *tagged = mpprof_asprintf("%s%s%s (%s%s%s)", list_tc, n > 1 ? ", " : "",
                                   mpprof_layer_label(l), fits_text(l->adv.rec),
                                   c.on_tc == 0        ? ""
                                   : c.on_tc == c.fp32 ? "; on "
                                                       : "; partly on ",
                                   c.on_tc ? tc_name(c.tf32) : "");
    free(list);
    free(list_tc);
    list = longer;
    list_tc = tagged;
    if (!list || !list_tc) rc = -1;
  }
  /* Some layers on Tensor Cores, some not: the list says which. */
  if (rc == 0 && all_on_tc < n && none_on_tc < n) {
    free(list);
    list = list_tc;
    list_tc = NULL;
  }
  if (rc == 0 && n > MPPROF_LAYERS_NAMED) {
    char *longer = mpprof_asprintf("%s and %zu more", list, n - MPPROF_LAYERS_NAMED);
    free(list);
    if (!(list = longer)) rc = -1;
  }
  mpprof_finding *f = NULL;
  if (rc == 0 && n == 1)
    f = add(
        m, "lower_precision_possible", "medium", only->name,
        only_tc.on_tc == 0 ? mpprof_asprintf("%s runs fp32 GEMMs/convs but its values fit %s",
                                             mpprof_layer_label(only), fits_text(only->adv.rec))
        : only_tc.on_tc == only_tc.fp32
            ? mpprof_asprintf("%s runs fp32 GEMMs/convs on %s but its values fit %s",
                              mpprof_layer_label(only), tc_name(only_tc.tf32),
                              fits_text(only->adv.rec))
            : mpprof_asprintf("%s runs fp32 GEMMs/convs (%zu of its %zu sites on %s) but its "
                              "values fit %s",
                              mpprof_layer_label(only), only_tc.on_tc, only_tc.fp32,
                              tc_name(only_tc.tf32), fits_text(only->adv.rec)),
        mpprof_asprintf("run this layer in %s (autocast), halving its memory traffic%s",
                        only->adv.rec == MP_REC_BF16 ? "bf16" : "fp16",
                        autocast_gain(only_tc.on_tc, only_tc.fp32 - only_tc.on_tc, only_tc.tf32)));
  else if (rc == 0 && n > 1)
    f = add(m, "lower_precision_possible", "medium", NULL,
            mpprof_asprintf("%zu layers run fp32 GEMMs/convs%s%s but their values fit 16 bits: %s",
                            n, all_on_tc == n ? " on " : "", all_on_tc == n ? tc_name(tf32) : "",
                            list),
            mpprof_asprintf("run them under autocast, one change for all of them (the plan above "
                            "says bf16 or fp16 with a GradScaler, and which layers to keep out), "
                            "halving their memory traffic%s",
                            autocast_gain(n - none_on_tc, n - all_on_tc, tf32)));
  if (rc == 0 && n && !f) rc = -1;
  if (f) {
    if (n == 1) { /* the single layer's evidence, as it always was */
      cJSON *o = cJSON_GetArrayItem(layers, 0);
      cJSON_AddStringToObject(f->evidence, "recommended", mp_recommendation_name(only->adv.rec));
      cJSON_AddItemToObject(f->evidence, "tensor_cores",
                            cJSON_DetachItemFromObject(o, "tensor_cores"));
      cJSON_AddItemToObject(f->evidence, "fp16_overflow",
                            cJSON_DetachItemFromObject(o, "fp16_overflow"));
      cJSON_AddItemToObject(f->evidence, "fp16_underflow",
                            cJSON_DetachItemFromObject(o, "fp16_underflow"));
      cJSON_Delete(layers);
    } else {
      cJSON_AddItemToObject(f->evidence, "layers", layers);
    }
    cJSON_AddItemToObject(f->evidence, "sites", sites);
    f->impact_gpu_ns = gpu;
    f->impact_elements = elements;
  } else {
    cJSON_Delete(layers);
    cJSON_Delete(sites);
  }
  free(list);
  free(list_tc);
  return rc;
}

/* One finding for the layers that fit fp8's range. With --shadow, a layer
 * whose best measured fp8 recipe errs more than --shadow-max-rel is no
 * candidate (the finding said "consider FP8" for layers whose every fp8
 * recipe measured 7-12% relative L2 error, against a 0.39% limit); the
 * finding then names those layers and the least error, and says what would
 * let them through. Evidence: per layer the recipe and its rel_l2. */
/* A JSON array of layer names as a message shows it: "a, b, c", the
 * nameless layer by its label, the first MPPROF_LAYERS_NAMED and "and N
 * more" (the evidence lists them all; malloc'ed; NULL when out of memory). */
static char *names_text(const cJSON *names) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return NULL;
  const cJSON *e;
  size_t n = 0;
  cJSON_ArrayForEach(e, names) {
    if (!cJSON_IsString(e)) continue;
    if (n++ < MPPROF_LAYERS_NAMED)
      fprintf(f, "%s%s", n > 1 ? ", " : "",
              *e->valuestring ? e->valuestring : MPPROF_NO_LAYER_LABEL);
  }
  if (n > MPPROF_LAYERS_NAMED) fprintf(f, " and %zu more", n - MPPROF_LAYERS_NAMED);
  if (fclose(f)) {
    free(text);
    return NULL;
  }
  return text;
}

static int rule_fp8_candidate(mpprof_model *m) {
  /* the counts, the recipe they share and the errors: plan_fp8's, one
   * aggregate for plan.json, the page and this finding */
  if (mpprof_build_fp8_plan(m)) return -1;
  const mpprof_fp8_plan *p = &m->plan_fp8;
  cJSON *names = cJSON_CreateArray(), *rejected = cJSON_CreateArray(),
        *measured = cJSON_CreateObject(), *unseen = cJSON_CreateArray();
  if (!names || !rejected || !measured || !unseen) goto oom;
  double lim = mpprof_shadow_max_rel(m);
  uint64_t gpu = 0;
  double worst = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    const mpprof_shadow_cand *c;
    mpprof_fp8_fit fit = mpprof_layer_fp8_fit(m, l, &c);
    if (fit == MPPROF_FP8_NO) continue;
    if (c) {
      cJSON *o = cJSON_CreateObject();
      if (!o) goto oom;
      cJSON_AddItemToObject(measured, mpprof_layer_label(l), o);
      cJSON_AddStringToObject(o, "recipe", mpprof_fp8_recipe_name(l->best_fp8));
      cJSON_AddItemToObject(o, "rel_l2", mpprof_json_double(c->worst.rel_l2));
    }
    if (fit == MPPROF_FP8_ERROR_TOO_HIGH) {
      cJSON_AddItemToArray(rejected, cJSON_CreateString(mpprof_layer_label(l)));
      continue;
    }
    cJSON_AddItemToArray(names, cJSON_CreateString(mpprof_layer_label(l)));
    if (mpprof_layer_fp8_grads_unseen(l))
      cJSON_AddItemToArray(unseen, cJSON_CreateString(mpprof_layer_label(l)));
    gpu += layer_gpu(l);
    if (l->e4m3_underflow.pct > worst) worst = l->e4m3_underflow.pct;
  }
  const mpprof_layer *least_l = p->n_range > p->n_fit ? &m->layers[p->least_bad_layer] : NULL;
  double least = p->least_bad, most_ok = p->worst_ok;
  size_t n_measured_ok = p->n_measured;
  int best_ok = p->recipe;
  int n = cJSON_GetArraySize(names), nr = cJSON_GetArraySize(rejected);
  if (!n && !nr) {
    cJSON_Delete(names);
    cJSON_Delete(rejected);
    cJSON_Delete(measured);
    cJSON_Delete(unseen);
    return 0;
  }
  int nu = cJSON_GetArraySize(unseen);
  char fb[96];
  const char *formats = mpprof_fp8_formats_text((size_t)n, (size_t)nu, fb);
  /* what was not seen, for the action: check it before relying on e5m2 */
  const char *check = !nu ? ""
                      : nu == n
                          ? "; their gradients were not seen: profile a training step to "
                            "check e5m2 before training in fp8"
                          : "; some gradients were not seen (evidence.gradients_not_seen): "
                            "profile a training step to check e5m2 there before training in fp8";
  char *list = names_text(names), *rlist = names_text(rejected);
  if (!list || !rlist) {
    free(list);
    free(rlist);
    goto oom;
  }
  /* Those that fit fp8's range, but not its measured error. */
  char *rej =
      nr ? mpprof_asprintf("%d layer%s advised fp16 fit%s fp8's range with "
                           "per-tensor scaling but %s measured fp8 error is above "
                           "--shadow-max-rel %s (the least: %s, relative L2 %s on "
                           "%s): %s",
                           nr, nr == 1 ? "" : "s", nr == 1 ? "s" : "", nr == 1 ? "its" : "their",
                           mpprof_rel_limit_text(lim).s, mpprof_fp8_recipe_name(least_l->best_fp8),
                           mpprof_rel_text(least, lim).s, mpprof_layer_label(least_l), rlist)
         : strdup("");
  char *how = !n_measured_ok ? strdup("")
              : (size_t)n == n_measured_ok
                  ? mpprof_asprintf("; measured: the best recipe's relative L2 error at most %s "
                                    "<= --shadow-max-rel %s",
                                    mpprof_rel_text(most_ok, lim).s, mpprof_rel_limit_text(lim).s)
                  : mpprof_asprintf("; measured within --shadow-max-rel %s for %zu of them (the "
                                    "others range only)",
                                    mpprof_rel_limit_text(lim).s, n_measured_ok);
  char *msg = NULL, *act = NULL;
  if (rej && how) {
    if (!n) {
      msg = mpprof_asprintf("no fp8 candidate: %s", rej);
      /* an infinite error (fp8 outputs that overflowed) no limit admits */
      act = isfinite(least)
                ? mpprof_asprintf("keep %s in 16 bits: e4m3 keeps 4 significant bits, so an fp8 "
                                  "GEMM errs more than one bf16 rounding; to accept errors of "
                                  "that size, mpprof report --shadow-max-rel %.2g (it judges "
                                  "every precision by that limit)",
                                  nr == 1 ? "it" : "them", least * 1.25)
                : mpprof_asprintf("keep %s in 16 bits: %s fp8 outputs overflowed in every "
                                  "recipe measured",
                                  nr == 1 ? "it" : "them", nr == 1 ? "its" : "their");
    } else {
      msg = mpprof_asprintf("%d layer%s advised fp16 also fit%s fp8 with per-tensor "
                            "scaling (%s; worst e4m3 flush to zero %s%%%s): %s%s%s",
                            n, n == 1 ? "" : "s", n == 1 ? "s" : "", formats,
                            mpprof_pct_text(worst).s, how, list, nr ? "; " : "", rej);
      if (n_measured_ok && best_ok >= 0)
        act =
            mpprof_asprintf("consider FP8 (e4m3 forward, e5m2 gradients), e.g. Transformer "
                            "Engine with the recipe measured best%s: %s (%s)%s",
                            (size_t)n == n_measured_ok ? "" : " where measured",
                            mpprof_fp8_recipe_te(best_ok), mpprof_fp8_recipe_name(best_ok), check);
      else if (n_measured_ok)
        act = mpprof_asprintf("consider FP8 (e4m3 forward, e5m2 gradients), e.g. Transformer "
                              "Engine, with the recipe measured best for each layer "
                              "(evidence.measured)%s",
                              check);
      else
        act = mpprof_asprintf("consider FP8 (e4m3 forward, e5m2 gradients) with per-tensor amax "
                              "scaling, e.g. Transformer Engine%s",
                              check);
    }
  }
  free(list);
  free(rlist);
  free(rej);
  free(how);
  mpprof_finding *f = add(m, "fp8_candidate", "info", NULL, msg, act);
  if (!f) goto oom;
  cJSON_AddItemToObject(f->evidence, "layers", names);
  if (nu)
    cJSON_AddItemToObject(f->evidence, "gradients_not_seen", unseen);
  else
    cJSON_Delete(unseen);
  if (nr)
    cJSON_AddItemToObject(f->evidence, "rejected_by_measured_error", rejected);
  else
    cJSON_Delete(rejected);
  if (measured->child) {
    cJSON_AddItemToObject(f->evidence, "measured", measured);
    cJSON_AddItemToObject(f->evidence, MPPROF_K_SHADOW_MAX_REL, mpprof_json_double(lim));
  } else {
    cJSON_Delete(measured);
  }
  f->impact_gpu_ns = gpu;
  f->impact_elements = 0; /* an option, not a problem: ranks after problems of equal time */
  return 0;
oom:
  cJSON_Delete(names);
  cJSON_Delete(rejected);
  cJSON_Delete(measured);
  cJSON_Delete(unseen);
  return -1;
}

/* The applied loss scale against the window: too low, too high, fine; or unknown. */
/* Some backward op reads or writes fp16: the loss scale acts on fp16 values. */
static bool fp16_backward(const mpprof_model *m) {
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    if (s->phase != MPPROF_PHASE_BACKWARD) continue;
    for (int t = 0; t < s->n_types; t++)
      if (s->types[t].dtype == MP_FP16) return true;
  }
  return false;
}

/* No declaration, and gradients that need a scale: say that the figures assume 1. */
static int rule_loss_scale_unknown(mpprof_model *m) {
  if (!mpprof_loss_scale_unknown(&m->loss_scale)) return 0;
  mpprof_finding *f =
      add(m, "loss_scale_unknown", "medium", NULL,
          mpprof_asprintf(MPPROF_LOSS_SCALE_UNKNOWN_NOTE
                          " (%s, and the program declared no loss scale)",
                          mpprof_loss_scale_unknown_why(&m->loss_scale)),
          strdup("declare the loss scale (NVTX domain \"mpprof\", mark \"loss_scale\"; see "
                 "README) or run with mpprof run --loss-scale S"));
  return f ? 0 : -1;
}

static int rule_loss_scale_applied(mpprof_model *m) {
  const mpprof_applied_scale *g = &m->loss_scale;
  mpprof_finding *f;
  if (!g->declared || !g->has_window) return 0;
  /* judged by the window's true edges: past the search range's end, the
   * scales beyond it that fit too (a declared 2^40 beside a window searched
   * up to 2^32 that truly reaches 2^55 is fine, not "too high") */
  int t[2];
  mp_loss_scale_true_window(g->window_lo, g->window_hi, g->beyond_lo, g->beyond_hi, t);
  double lo = ldexp(1.0, t[0]), hi = ldexp(1.0, t[1]);
  const char *verdict = g->max > hi ? "too_high" : g->min < lo ? "too_low" : "fine";
  char edges[MP_LOSS_SCALE_EDGES_TEXT_MAX];
  mpprof_edges_text(m, g->window_lo, g->window_hi, g->beyond_lo, g->beyond_hi, false, edges);
  /* Of the layers the window is made of (advised fp16 or fp16 with a loss
   * scale, with a window of their own), the one whose gradients lose most at
   * the applied scale: a layer kept in bf16 or fp32 is not judged by the
   * window, and named here it read as the window's evidence (mlp_train:
   * fc1, advised bf16, "flushes 100%" beside fc2's 67.9%). */
  const mpprof_layer *wl = NULL;
  mpprof_share ws = {0};
  bool over = !strcmp(verdict, "too_high");
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    if (!l->adv.known || !l->adv.has_window ||
        (l->adv.rec != MP_REC_FP16 && l->adv.rec != MP_REC_FP16_LOSS_SCALE))
      continue;
    const mpprof_share *s = over ? &l->applied_fp16_overflow : &l->applied_fp16_underflow;
    if (s->tensor && (!wl || s->pct > ws.pct)) wl = l, ws = *s;
  }
  char sa[32], sb[32], scales[72];
  if (g->min == g->max)
    snprintf(scales, sizeof scales, "%s", mpprof_scale_str(g->max, sa));
  else
    snprintf(scales, sizeof scales, "%s..%s", mpprof_scale_str(g->min, sa),
             mpprof_scale_str(g->max, sb));
  char *detail =
      wl ? mpprof_asprintf("; at %s %s's %s %s in fp16 for %s%% of its finite "
                           "non-zero values",
                           g->min == g->max ? "it" : "those scales", mpprof_layer_label(wl),
                           ws.tensor, over ? "overflows" : "flushes to zero",
                           mpprof_pct_text(ws.pct).s)
         : strdup("");
  /* Where the window lies against the scales applied (one, or the range of
   * a dynamic scaler or of merged runs): a range with scales inside the
   * window is only partly outside it, and one past both edges is both. */
  bool under = g->min < lo;
  const char *where = over && under          ? "partly above and partly below"
                      : over && g->min > hi  ? "above"
                      : over                 ? "partly above"
                      : under && g->max < lo ? "below"
                      : under                ? "partly below"
                                             : "inside";
  char *msg;
  bool fp16 = fp16_backward(m);
  if (!fp16 && strcmp(verdict, "fine")) {
    /* An fp32 or bf16 run: nothing flushes now; advice for a switch to fp16. */
    msg = mpprof_asprintf("no backward op runs in fp16, so the applied loss scale %s does no harm "
                          "now; for fp16 it is %s the window [2^%d, 2^%d]%s%s",
                          scales, where, g->window_lo, g->window_hi, edges, detail ? detail : "");
    free(detail);
    f = add(m, "loss_scale_applied", "info", NULL, msg,
            mpprof_asprintf("when switching to fp16, use a loss scale in [2^%d, 2^%d], e.g. 2^%d",
                            g->window_lo, g->window_hi, g->recommended_log2));
    if (!f) return -1;
    cJSON_AddStringToObject(f->evidence, "verdict", verdict);
    ev_num(f->evidence, "applied_min", g->min);
    ev_num(f->evidence, "applied_max", g->max);
    return 0;
  }
  if (!strcmp(verdict, "fine"))
    msg = mpprof_asprintf("the applied loss scale %s is inside the window [2^%d, 2^%d]%s: fine%s",
                          scales, g->window_lo, g->window_hi, edges, detail ? detail : "");
  else
    msg = mpprof_asprintf("the applied loss scale %s is %s the window [2^%d, 2^%d]%s (%s)%s",
                          scales, where, g->window_lo, g->window_hi, edges,
                          over && under ? "too high: gradients overflow; too low: gradients flush"
                          : over        ? "too high: gradients overflow"
                                        : "too low: gradients flush",
                          detail ? detail : "");
  free(detail);
  f = add(m, "loss_scale_applied",
          over                      ? "high"
          : strcmp(verdict, "fine") ? "medium"
                                    : "info",
          NULL, msg,
          strcmp(verdict, "fine") ? mpprof_asprintf("use a loss scale in [2^%d, 2^%d], e.g. 2^%d",
                                                    g->window_lo, g->window_hi, g->recommended_log2)
                                  : strdup("nothing to change"));
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "verdict", verdict);
  ev_num(f->evidence, "applied_min", g->min);
  ev_num(f->evidence, "applied_max", g->max);
  if (wl) {
    cJSON_AddStringToObject(f->evidence, "layer", wl->name);
    ev_share(f->evidence, over ? "fp16_overflow_at_applied" : "fp16_underflow_at_applied", &ws);
  }
  f->impact_gpu_ns = strcmp(verdict, "fine") ? m->total_gpu_ns : 0;
  return 0;
}

static int rule_first_nonfinite(mpprof_model *m) {
  const mpprof_nonfinite *r = &m->first_nonfinite;
  if (!r->found) return 0;
  const mpprof_site *s = &m->sites[r->site];
  char step[48] = "", sc[32];
  if (r->has_step) snprintf(step, sizeof step, ", step %" PRIu64, r->step);
  mpprof_finding *f = add(
      m, "first_nonfinite", "high", s->layer_name,
      mpprof_asprintf(
          "first Inf/NaN: %s, %s (site %zu), call %" PRIu64 "%s: output %s held %" PRIu64
          " +Inf, %" PRIu64 " -Inf, %" PRIu64 " NaN of %" PRIu64 " values while its "
          "inputs were %s%s%s",
          mpprof_site_layer_label(s), s->api, s->id, r->call_index, step, r->role, r->pos_infs,
          r->neg_infs, r->nans, r->count, r->inputs_scanned ? "finite" : "not scanned",
          r->scale > 0 ? "; loss scale " : "", r->scale > 0 ? mpprof_scale_str(r->scale, sc) : ""),
      strdup("start here: this op produced the first non-finite values (an fp16 overflow of its "
             "output, a loss scale too high, or a division by zero), later ones may only "
             "propagate them"));
  if (!f) return -1;
  cJSON_AddItemToObject(f->evidence, "site", mpprof_json_u64(s->id));
  f->impact_gpu_ns = m->total_gpu_ns;
  f->impact_elements = r->count;
  return 0;
}

/* The same predicate as the Tensor Core section's "eligible with TF32". */
static bool is_fp32_gemm_without_tf32(const mpprof_site *s) {
  return s->elig.eligible_with_tf32;
}

/* ---- model rules: once per report ---- */

/* Sites one model finding gathers: how many, their calls, GPU time and
 * values (its impact), and the first 50 ids for its evidence. */
typedef struct site_tally {
  size_t n;
  uint64_t calls, gpu, elems;
  cJSON *ids;
} site_tally;

static void tally_add(site_tally *t, const mpprof_site *s) {
  t->n++;
  t->calls += s->calls;
  t->gpu += s->has_gpu_ns ? s->gpu_ns : s->kernel_ns;
  t->elems += s->elements;
  if (cJSON_GetArraySize(t->ids) < 50) cJSON_AddItemToArray(t->ids, mpprof_json_u64(s->id));
}

/* The tally into finding f (evidence `sites`, impact); frees it either way.
 * f NULL (out of memory): -1. */
static int tally_finish(site_tally *t, mpprof_finding *f) {
  if (!f) {
    cJSON_Delete(t->ids);
    return -1;
  }
  cJSON_AddItemToObject(f->evidence, "sites", t->ids);
  f->impact_gpu_ns = t->gpu;
  f->impact_elements = t->elems;
  return 0;
}

static int rule_fp32_without_tf32(mpprof_model *m) {
  site_tally t = {.ids = cJSON_CreateArray()};
  if (!t.ids) return -1;
  for (size_t i = 0; i < m->n_sites; i++)
    if (is_fp32_gemm_without_tf32(&m->sites[i])) tally_add(&t, &m->sites[i]);
  if (!t.n) {
    cJSON_Delete(t.ids);
    return 0;
  }
  mpprof_finding *f =
      add(m, "fp32_without_tf32", "medium", NULL,
          mpprof_asprintf("%zu fp32 GEMM/conv site%s (%" PRIu64 " calls) run without TF32: "
                          "eligible for Tensor Cores with TF32, but their compute type and math "
                          "mode keep them off",
                          t.n, t.n == 1 ? "" : "s", t.calls),
          strdup("enable TF32 (torch.backends.cuda.matmul.allow_tf32 = True, "
                 "cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH) or CUBLAS_COMPUTE_32F_FAST_TF32) "
                 "or autocast to bf16/fp16"));
  if (tally_finish(&t, f)) return -1;
  ev_num(f->evidence, "calls", (double)t.calls);
  return 0;
}

static int rule_tensor_cores_not_used(mpprof_model *m) {
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    if (!s->elig.eligible || s->tc_used != 0) continue;
    char k0[MP_KERNEL_SHOWN_MAX] = ""; /* readable: CUPTI gives C++ kernels mangled */
    if (s->n_kernels) mp_kernel_demangle(s->kernels[0].name, k0, sizeof k0);
    char mnk[96];
    mpprof_site_mnk(s, mnk, sizeof mnk);
    mpprof_finding *f =
        add(m, "tensor_cores_not_used", "high", s->layer_name,
            mpprof_asprintf("%s: %s site %zu (%s"
                            ") is eligible for Tensor Cores but its kernels ran on CUDA cores "
                            "(%s%s)%s%s",
                            mpprof_site_layer_label(s), s->api, s->id, mnk, k0,
                            s->n_kernels > 1 ? ", ..." : "", s->elig.efficient ? "" : ": ",
                            s->elig.efficient ? "" : s->elig.reason),
            strdup(s->elig.efficient
                       ? "check what made the library pick a CUDA-core kernel (math mode "
                         "PEDANTIC, a workspace limit, a deterministic/heuristic setting)"
                       : "pad m, n, k and leading dimensions to multiples of 16 bytes (8 fp16 "
                         "elements) and align pointers to 16 bytes"));
    if (!f) return -1;
    cJSON_AddItemToObject(f->evidence, "site", mpprof_json_u64(s->id));
    cJSON_AddStringToObject(f->evidence, "eligibility",
                            s->elig.efficient && s->elig.path ? s->elig.path : s->elig.reason);
    cJSON *kn = cJSON_AddArrayToObject(f->evidence, "kernels");
    for (size_t k = 0; k < s->n_kernels; k++)
      cJSON_AddItemToArray(kn, cJSON_CreateString(s->kernels[k].name));
    f->impact_gpu_ns = s->kernel_ns;
    f->impact_elements = s->elements;
  }
  return 0;
}

/* Sites whose measured error in the precision they run in now (shadow
 * execution's `current`) is above --shadow-max-rel, the limit a candidate is
 * judged by: the program already pays more than it (an fp8 GEMM at its
 * scales, a saturating fp8 output, TF32 on wide sums). One finding for all. */
static int rule_current_error_high(mpprof_model *m) {
  double lim = mpprof_shadow_max_rel(m);
  const mpprof_site *w = NULL;
  site_tally t = {.ids = cJSON_CreateArray()};
  if (!t.ids) return -1;
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    const mpprof_shadow_cand *c = s->shadow ? &s->shadow->cand[MP_SH_CURRENT] : NULL;
    if (!c || !c->calls || !(c->worst.rel_l2 > lim)) continue;
    tally_add(&t, s);
    if (!w || c->worst.rel_l2 > w->shadow->cand[MP_SH_CURRENT].worst.rel_l2) w = s;
  }
  if (!t.n) {
    cJSON_Delete(t.ids);
    return 0;
  }
  char types[160];
  mpprof_site_dtypes(w, types, sizeof types);
  double worst = w->shadow->cand[MP_SH_CURRENT].worst.rel_l2;
  char werr[64];
  if (isinf(worst))
    snprintf(werr, sizeof werr, "non-finite outputs");
  else
    snprintf(werr, sizeof werr, "relative L2 error %s", mpprof_rel_text(worst, lim).s);
  size_t n = t.n;
  mpprof_finding *f =
      add(m, "current_error_high", "medium", n == 1 ? w->layer_name : NULL,
          mpprof_asprintf("%zu GEMM/conv site%s (%" PRIu64 " calls) already lose%s more than "
                          "--shadow-max-rel %s in the precision %s in now (measured): worst "
                          "%s site %zu (%s), %s",
                          n, n == 1 ? "" : "s", t.calls, n == 1 ? "s" : "",
                          mpprof_rel_limit_text(lim).s, n == 1 ? "it runs" : "they run",
                          mpprof_site_layer_label(w), w->id, types, werr),
          strdup("widen what loses it: a bf16 or fp32 output instead of fp8 (or a smaller D scale "
                 "where outputs saturate), fp32 inputs without TF32 for sums that need them; the "
                 "Measured error columns compare each candidate with it"));
  if (tally_finish(&t, f)) return -1;
  ev_num(f->evidence, "worst_rel_l2", worst); /* null: non-finite outputs */
  ev_num(f->evidence, MPPROF_K_SHADOW_MAX_REL, lim);
  return 0;
}

/* FP8 GEMMs called with cuBLASLt's FAST_ACCUM (mpprof_site_fp8_fast_accum):
 * their partial sums are not promoted to a wider accumulator periodically,
 * which shadow execution's `current` does not model (it sums in fp32). One
 * finding: medium where some are gradient GEMMs (backward phase), which
 * Transformer Engine's and torchao's default FP8 recipes run without it
 * (split accumulator; use_fast_accum only for the forward output GEMM);
 * information otherwise. */
static int rule_fp8_fast_accumulation(mpprof_model *m) {
  site_tally t = {.ids = cJSON_CreateArray()};
  if (!t.ids) return -1;
  size_t bwd = 0, unknown = 0;
  uint64_t bwd_k = 0;
  const mpprof_site *w = NULL;
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    if (!mpprof_site_fp8_fast_accum(s)) continue;
    tally_add(&t, s);
    if (s->phase == MPPROF_PHASE_BACKWARD) {
      bwd++;
      if (!s->shapes_merged && s->k > bwd_k) bwd_k = s->k;
      if (!w || w->phase != MPPROF_PHASE_BACKWARD || (!s->shapes_merged && s->k > w->k)) w = s;
    } else {
      unknown += s->phase == MPPROF_PHASE_UNKNOWN;
      if (!w) w = s;
    }
  }
  if (!t.n) {
    cJSON_Delete(t.ids);
    return 0;
  }
  char bw[160] = "", un[160] = "";
  if (bwd && bwd_k)
    snprintf(bw, sizeof bw, "; %zu of them in backward (gradient GEMMs, k up to %" PRIu64 ")", bwd,
             bwd_k);
  else if (bwd) /* every one of merged shapes: k not known */
    snprintf(bw, sizeof bw, "; %zu of them in backward (gradient GEMMs)", bwd);
  if (unknown)
    snprintf(un, sizeof un, "; the phase of %zu is unknown (no framework scope or NVTX phase word)",
             unknown);
  size_t n = t.n;
  mpprof_finding *f = add(
      m, "fp8_fast_accumulation", bwd ? "medium" : "info", n == 1 ? w->layer_name : NULL,
      mpprof_asprintf("%zu FP8 GEMM site%s (%" PRIu64 " calls) run with cuBLASLt FAST_ACCUM: "
                      "their partial sums are not promoted to a wider accumulator periodically, "
                      "so long sums lose more; the measured `current` error sums in fp32 and "
                      "understates theirs (example: %s site %zu)%s%s",
                      n, n == 1 ? "" : "s", t.calls, mpprof_site_layer_label(w), w->id, bw, un),
      strdup("keep it for forward GEMMs only: Transformer Engine's and torchao's default FP8 "
             "recipes run gradient GEMMs (dgrad, wgrad) without it (split accumulator; "
             "use_fast_accum=False)"));
  if (tally_finish(&t, f)) return -1;
  ev_num(f->evidence, "calls", (double)t.calls);
  ev_num(f->evidence, "backward_sites", (double)bwd);
  ev_num(f->evidence, "phase_unknown_sites", (double)unknown);
  return 0;
}

static int rule_tensor_cores_inefficient(mpprof_model *m) {
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    /* merged shapes: alignment not judged (no dims), not found wanting */
    if (!s->elig.eligible || s->tc_used == 0 || s->elig.efficient || s->shapes_merged) continue;
    mpprof_finding *f =
        add(m, "tensor_cores_inefficient", "low", s->layer_name,
            mpprof_asprintf("%s: %s site %zu (m=%" PRIu64 " n=%" PRIu64 " k=%" PRIu64
                            ") is not aligned for efficient Tensor Core use: %s",
                            mpprof_site_layer_label(s), s->api, s->id, s->m, s->n, s->k,
                            s->elig.reason),
            strdup("pad m, n, k and leading dimensions to multiples of 16 bytes and align "
                   "pointers to 16 bytes"));
    if (!f) return -1;
    cJSON_AddItemToObject(f->evidence, "site", mpprof_json_u64(s->id));
    f->impact_gpu_ns = s->has_gpu_ns ? s->gpu_ns : s->kernel_ns;
    f->impact_elements = 0;
  }
  return 0;
}

static int rule_loss_scale_conflict(mpprof_model *m) {
  const mpprof_applied_scale *g = &m->loss_scale;
  if (!g->applicable || g->has_window) return 0;
  char *names = names_text(g->limited_by);
  mpprof_finding *f = add(m, "loss_scale_conflict", "high", NULL,
                          mpprof_asprintf("no single loss scale fits every fp16 layer's "
                                          "gradients; the conflict is between %s",
                                          names ? names : "layers"),
                          strdup("run the layers at one end of the conflict in bf16, or scale "
                                 "their gradients separately"));
  free(names);
  if (!f) return -1;
  cJSON_AddItemToObject(f->evidence, "limited_by", cJSON_Duplicate(g->limited_by, true));
  f->impact_gpu_ns = m->total_gpu_ns;
  return 0;
}

/* ---- notes on the data: after the ranked problems ---- */

static int rule_no_cuda_ops(mpprof_model *m) {
  if (!m->n_procs || m->total_calls != 0) return 0;
  int64_t outside = mpprof_capture_all_outside(m);
  if (outside)
    return add(m, "no_cuda_ops", "info", NULL,
               mpprof_asprintf("no cuBLAS, cuBLASLt or cuDNN matrix call ran inside the capture "
                               "range; %" PRId64 " ran outside it and were not recorded",
                               outside),
               strdup("check the capture range: the cudaProfilerStart/Stop calls, the "
                      "--nvtx-capture name, or the --steps against the steps the program marks"))
               ? 0
               : -1;
  return add(m, "no_cuda_ops", "info", NULL,
             strdup("the profiled program made no cuBLAS, cuBLASLt or cuDNN matrix calls: there "
                    "is nothing to advise on"),
             strdup("check that the program uses the GPU libraries mpprof hooks (see README) and "
                    "that it ran under mpprof"))
             ? 0
             : -1;
}

static int rule_skipped_files(mpprof_model *m) {
  if (!m->n_skipped) return 0;
  return add(m, "skipped_files", "info", NULL,
             mpprof_asprintf("%zu raw file%s skipped (unreadable, or a duplicate of a process "
                             "already read; see skipped_files)",
                             m->n_skipped, m->n_skipped == 1 ? " was" : "s were"),
             strdup("the report covers the remaining processes only"))
             ? 0
             : -1;
}

static int rule_incomplete_process(mpprof_model *m) {
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    if (p->final && !p->incomplete) continue;
    /* The process's own reasons, as it wrote them ("max_sites (N) reached:
     * ...", "calls_in_flight: ...", "argv_truncated: ..."). */
    char why[512] = "";
    size_t len = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, p->incomplete_reasons) {
      if (cJSON_IsString(r) && len + 3 < sizeof why)
        len +=
            (size_t)snprintf(why + len, sizeof why - len, "%s%s", len ? "; " : "", r->valuestring);
    }
    if (len >= sizeof why) len = sizeof why - 1;
    mpprof_finding *f =
        add(m, "incomplete_process", "info", NULL,
            p->final_unwritten
                ? mpprof_asprintf("%s (pid %" PRId64 "): checkpoint only: the process exited but "
                                  "its final raw file could not be written (a full disk?), the "
                                  "ops after the checkpoint are missing",
                                  p->file, p->pid)
            : p->killed_signal
                ? mpprof_asprintf("%s (pid %" PRId64 "): checkpoint only: the process was killed "
                                  "by %s, the ops after the checkpoint are missing",
                                  p->file, p->pid, mpprof_signal_text(p->killed_signal).s)
            : !p->final ? mpprof_asprintf("%s (pid %" PRId64 "): checkpoint only: the process did "
                                          "not finish, its data is incomplete",
                                          p->file, p->pid)
                        : mpprof_asprintf("%s (pid %" PRId64 "): incomplete: %s", p->file, p->pid,
                                          len ? why : "see incomplete_reasons"),
            strdup(p->final_unwritten ? "make room on the output's file system (or raise its "
                                        "quota) and run again; MPPROF_LOG=1 says why the write "
                                        "failed"
                   : !p->final        ? "let the program exit normally, or accept partial data"
                                      : "a limit named in incomplete_reasons can be raised "
                                        "(MPPROF_MAX_SITES, MPPROF_MAX_EVENTS); calls in flight at exit "
                                        "and a cut argv are only reported"));
    if (!f) return -1;
    cJSON_AddItemToObject(f->evidence, "incomplete_reasons",
                          cJSON_Duplicate(p->incomplete_reasons, true));
  }
  return 0;
}

/* Images started without mpprof (a launcher that built a clean environment):
 * their ops, if any, are not in the report. One finding for all of them (a
 * program that runs `git` with a clean environment at every step starts
 * thousands): the first MPPROF_LAYERS_NAMED named, every one in evidence. */
static int rule_process_without_mpprof(mpprof_model *m) {
  size_t n = 0;
  const mpprof_process *first = NULL;
  bool same_why = true;
  char *names = NULL;
  size_t names_len = 0;
  FILE *nf = open_memstream(&names, &names_len);
  cJSON *pids = cJSON_CreateArray();
  if (!nf || !pids) goto oom;
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    if (!p->unprofiled) continue;
    if (!first) first = p;
    same_why &= !strcmp(p->unprofiled, first->unprofiled);
    if (!cJSON_AddItemToArray(pids, cJSON_CreateNumber((double)p->pid))) goto oom;
    if (n++ >= MPPROF_LAYERS_NAMED) continue;
    char *cmd = mpprof_argv_line(p->argv);
    fprintf(nf, "%sprocess %" PRId64 " (%.255s, started by process %" PRId64 ")", n > 1 ? ", " : "",
            p->pid, cmd ? cmd : "", p->ppid);
    free(cmd);
  }
  if (n > MPPROF_LAYERS_NAMED) fprintf(nf, " and %zu more", n - MPPROF_LAYERS_NAMED);
  if (fclose(nf) || !names) {
    nf = NULL;
    goto oom;
  }
  nf = NULL;
  if (!n) {
    free(names);
    cJSON_Delete(pids);
    return 0;
  }
  mpprof_finding *f = add(
      m, "process_without_mpprof", "medium", NULL,
      n == 1 ? mpprof_asprintf("%s ran without mpprof: %s; any GPU ops it ran are not in this "
                               "report",
                               names, first->unprofiled)
             : mpprof_asprintf("%zu processes ran without mpprof: %s; for each, %s; any GPU ops "
                               "they ran are not in this report",
                               n, names,
                               same_why ? first->unprofiled
                                        : "the reason in report.json processes[].unprofiled"),
      strdup("if it uses the GPU, keep mpprof's variables in the environment it is given "
             "(LD_PRELOAD, NVTX_INJECTION64_PATH, CUDA_INJECTION64_PATH, MPPROF_*), or run it "
             "under `mpprof` itself"));
  free(names);
  names = NULL;
  if (!f) goto oom;
  cJSON_AddItemToObject(f->evidence, "pids", pids);
  return 0;
oom:
  if (nf) fclose(nf);
  free(names);
  cJSON_Delete(pids);
  return -1;
}

/* The run's main process wrote no raw file, a fork child of it did (one
 * wording: the run's last lines and the finding). */
char *mpprof_program_without_raw_file(long pid) {
  return mpprof_asprintf(
      "process %ld (the program's main process) wrote no raw file: if it called the CUDA "
      "libraries mpprof hooks, it ended without exit handlers (_exit(), SIGKILL) before its first "
      "checkpoint and its ops are missing from this report (a process it forked wrote one)",
      pid);
}

/* mpprof run's program left no raw file while other processes did: a main
 * process ended by _exit() (or SIGKILL) before its first checkpoint loses its
 * ops, and nothing else in the report would show it. */
static int rule_process_without_raw_file(mpprof_model *m) {
  if (!m->program_without_raw_file) return 0;
  mpprof_finding *f =
      add(m, "process_without_raw_file", "medium", NULL,
          mpprof_program_without_raw_file(m->program_without_raw_file),
          strdup("end the program with exit() or a return from main rather than _exit(); a "
                 "shorter --checkpoint S (MPPROF_CHECKPOINT_S) keeps what a process did up to "
                 "its last checkpoint"));
  if (!f) return -1;
  cJSON_AddNumberToObject(f->evidence, "pid", (double)m->program_without_raw_file);
  return 0;
}

/* Processes of the program still alive when the report was built (an orphaned
 * child, a daemon): their raw files are missing or only checkpoints. */
static int rule_processes_still_running(mpprof_model *m) {
  if (!m->n_still_running) return 0;
  char pids[256] = "";
  size_t len = 0, i = 0;
  for (; i < m->n_still_running && len + 24 < sizeof pids; i++)
    len +=
        (size_t)snprintf(pids + len, sizeof pids - len, "%s%ld", i ? " " : "", m->still_running[i]);
  if (i < m->n_still_running) snprintf(pids + len, sizeof pids - len, " ..."); /* some left out */
  mpprof_finding *f =
      add(m, "processes_still_running", "medium", NULL,
          mpprof_asprintf(
              "%zu process%s of the program %s still running when this report was built "
              "(pid %s): %s data is missing or only up to %s last checkpoint",
              m->n_still_running, m->n_still_running == 1 ? "" : "es",
              m->n_still_running == 1 ? "was" : "were", pids,
              m->n_still_running == 1 ? "its" : "their", m->n_still_running == 1 ? "its" : "their"),
          strdup("run `mpprof report DIR` again once they have exited"));
  if (!f) return -1;
  cJSON *a = cJSON_AddArrayToObject(f->evidence, "pids");
  for (size_t i = 0; a && i < m->n_still_running; i++)
    cJSON_AddItemToArray(a, cJSON_CreateNumber((double)m->still_running[i]));
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Appends "a" or "a-b" (the ranks first..last) to buf, ", " between. */
static void rank_range(char *buf, size_t size, size_t *len, int64_t first, int64_t last) {
  if (*len >= size) return;
  int k = first == last ? snprintf(buf + *len, size - *len, "%s%" PRId64, *len ? ", " : "", first)
                        : snprintf(buf + *len, size - *len, "%s%" PRId64 "-%" PRId64,
                                   *len ? ", " : "", first, last);
  if (k > 0) *len += (size_t)k;
}

char *mpprof_missing_ranks(const mpprof_model *m, int64_t *ret_world_size, int64_t *ret_missing) {
  int64_t w = 0;
  for (size_t i = 0; i < m->n_procs; i++) {
    int64_t ws = m->procs[i].world_size;
    if (ws <= 0) continue;
    if (w && ws != w) return NULL; /* runs of different worlds: no claim */
    w = ws;
  }
  if (!w) return NULL;
  /* The ranks seen, sorted and unique: the gaps are the missing ones (a
   * world size from a raw file is not allocated for). */
  int64_t *seen = malloc((m->n_procs ? m->n_procs : 1) * sizeof *seen);
  if (!seen) return NULL;
  size_t n = 0;
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].has_rank && m->procs[i].rank >= 0 && m->procs[i].rank < w)
      seen[n++] = m->procs[i].rank;
  qsort(seen, n, sizeof *seen, cmp_i64);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (!u || seen[u - 1] != seen[i]) seen[u++] = seen[i];
  int64_t missing = w - (int64_t)u;
  if (ret_world_size) *ret_world_size = w;
  if (ret_missing) *ret_missing = missing;
  if (!missing) {
    free(seen);
    return NULL;
  }
  /* The gaps as ranges, the first 8 of them. */
  char list[512] = ""; /* 8 ranges of up to 2 x 20 digits */
  size_t len = 0;
  int64_t next = 0; /* the lowest rank not yet accounted for */
  size_t gaps = 0;
  for (size_t i = 0; i <= u && gaps <= 8; i++) {
    int64_t upto = i < u ? seen[i] : w; /* ranks next .. upto-1 are missing */
    if (upto > next) {
      if (gaps++ < 8)
        rank_range(list, sizeof list - 8, &len, next, upto - 1);
      else
        snprintf(list + len, sizeof list - len, ", ...");
    }
    if (i < u) next = seen[i] + 1;
  }
  free(seen);
  char all[48] = ""; /* how many, when the list is cut */
  if (gaps > 8) snprintf(all, sizeof all, " (%" PRId64 " in all)", missing);
  return missing == 1 ? mpprof_asprintf("rank %s of %" PRId64 " not seen: its process wrote no "
                                        "raw file here; merge the other nodes' runs with "
                                        "`mpprof merge`",
                                        list, w)
                      : mpprof_asprintf("ranks %s of %" PRId64 " not seen%s: their processes "
                                        "wrote no raw file here; merge the other nodes' runs "
                                        "with `mpprof merge`",
                                        list, w, all);
}

/* Ranks of the declared world size without a raw file here: another node's
 * processes, profiled into another OUT. */
static int rule_ranks_missing(mpprof_model *m) {
  int64_t w = 0, missing = 0;
  char *text = mpprof_missing_ranks(m, &w, &missing);
  if (!text) return 0;
  mpprof_finding *f =
      add(m, "ranks_missing", "medium", NULL, text,
          strdup("run `mpprof merge DIR... -o OUT_DIR` over every node's output directory, then "
                 "`mpprof report OUT_DIR`"));
  if (!f) return -1;
  cJSON_AddNumberToObject(f->evidence, "world_size", (double)w);
  cJSON_AddNumberToObject(f->evidence, "ranks_missing", (double)missing);
  return 0;
}

static int rule_no_kernel_data(mpprof_model *m) {
  if (!m->total_calls || m->tc.kernel_data) return 0;
  mpprof_finding *f =
      add(m, "no_kernel_data", "info", NULL,
          strdup("no GPU kernel records: Tensor Core use is unknown (numerics are complete)"),
          strdup("run without other profilers attached (CUPTI allows one subscriber) on a "
                 "machine with CUPTI"));
  if (!f) return -1;
  cJSON_AddItemToObject(f->evidence, "notes", cJSON_Duplicate(m->tc.cupti_notes, true));
  return 0;
}

/* Does some site of the report come from this library's API? cuBLASLt's
 * calls are cuBLAS's library here (its kernels are named alike). */
static bool library_intercepted(const mpprof_model *m, const char *lib) {
  const char *prefix = !strcmp(lib, "cublas") ? "cublas" : "cudnn";
  for (size_t i = 0; i < m->n_sites; i++)
    if (!strncmp(m->sites[i].api, prefix, strlen(prefix))) return true;
  return false;
}

/* A library's kernels CUPTI saw outside every hooked call, over all
 * processes (raw cupti.unattributed_kernels): launches, GPU time, the first
 * process's example (NULL when none). */
static void unattributed_sum(const mpprof_model *m, const char *lib, double *ret_kernels,
                             double *ret_ns, const char **ret_example) {
  *ret_kernels = *ret_ns = 0;
  *ret_example = NULL;
  for (size_t i = 0; i < m->n_procs; i++) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(m->procs[i].unattributed_kernels, lib);
    if (!e) continue;
    *ret_kernels += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "kernels"));
    *ret_ns += cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "gpu_ns"));
    if (!*ret_example)
      *ret_example = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "example"));
  }
}

/* An unattributed kernel's example as a message shows it: a C++ kernel
 * demangled (CUPTI gives its mangled symbol; the evidence keeps that), "?"
 * when there is none. */
static const char *example_shown(const char *example, char *buf, size_t n) {
  return example ? mp_kernel_demangle(example, buf, n) : "?";
}

/* CUPTI saw a library's kernels outside every hooked call and none of its
 * calls was intercepted: a copy mpprof cannot hook launched them. */
static int rule_library_not_intercepted(mpprof_model *m) {
  static const char *const libs[] = {"cublas", "cudnn"};
  static const char *const shown[] = {"cuBLAS/cuBLASLt", "cuDNN"};
  for (size_t l = 0; l < 2; l++) {
    double kernels, ns;
    const char *example;
    unattributed_sum(m, libs[l], &kernels, &ns, &example);
    if (kernels <= 0 || library_intercepted(m, libs[l])) continue;
    char ex[MP_KERNEL_SHOWN_MAX];
    mpprof_finding *f =
        add(m, "library_not_intercepted", "medium", NULL,
            mpprof_asprintf("CUPTI saw %.0f %s kernel launch%s (%.3g ms GPU, e.g. %.80s) but no %s "
                            "call was intercepted: the program uses a copy of the library mpprof "
                            "cannot hook (linked statically, or loaded privately under another "
                            "name), so those ops have no shapes, dtypes, values or verdicts here",
                            kernels, shown[l], kernels == 1 ? "" : "es", ns / 1e6,
                            example_shown(example, ex, sizeof ex), shown[l]),
            mpprof_asprintf("link %s dynamically (its shared library, e.g. %s) so that mpprof can "
                            "interpose its entry points",
                            shown[l], l == 0 ? "libcublas.so.13" : "libcudnn.so.9"));
    if (!f) return -1;
    cJSON_AddStringToObject(f->evidence, "library", libs[l]);
    ev_num(f->evidence, "kernels", kernels);
    ev_num(f->evidence, "gpu_ns", ns);
    if (example) cJSON_AddStringToObject(f->evidence, "example", example);
    f->impact_gpu_ns = (uint64_t)ns;
  }
  return 0;
}

/* The raw not_scanned key of calls recorded while their stream was being
 * captured into a CUDA graph (MP_RAW_NOT_SCANNED's GRAPH_CAPTURE). */
#define NS_ENUM(id, key, doc) NS_##id,
#define NS_KEY(id, key, doc) key,
enum { MP_RAW_NOT_SCANNED(NS_ENUM) NS_COUNT };
static const char *const ns_keys[NS_COUNT] = {MP_RAW_NOT_SCANNED(NS_KEY)};
#undef NS_ENUM
#undef NS_KEY

/* cuBLAS sites with calls recorded during a CUDA graph capture. */
static size_t cublas_sites_captured(const mpprof_model *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    if (strncmp(s->api, "cublas", 6) != 0) continue;
    for (size_t k = 0; k < s->n_not_scanned; k++)
      if (!strcmp(s->not_scanned[k].name, ns_keys[NS_GRAPH_CAPTURE]) && s->not_scanned[k].n) {
        n++;
        break;
      }
  }
  return n;
}

/* cuBLAS's kernels outside every hooked call while some cuBLAS calls were
 * intercepted: replays of CUDA graphs the program captured cuBLAS calls into
 * (a replay launches the kernels without a call; said first when some calls
 * were recorded during a capture), entry points mpprof does not hook
 * (matrix-vector gemv, complex GEMMs, level-1 BLAS) or a second, private
 * copy. Medium from MPPROF_NOT_HOOKED_SHARE_MEDIUM of the matrix kernels'
 * GPU time (the hooked ops' kernels and these), info below. cuDNN's kernels
 * are left out: its other ops (batch norm, pooling) launch cudnn-named
 * kernels. */
static int rule_library_calls_not_hooked(mpprof_model *m) {
  double kernels, ns;
  const char *example;
  unattributed_sum(m, "cublas", &kernels, &ns, &example);
  if (kernels <= 0 || !library_intercepted(m, "cublas")) return 0;
  double matrix_ns = (double)m->tc.gemm_conv_kernel_ns + ns;
  double share = matrix_ns > 0 ? ns / matrix_ns : 0;
  size_t captured = cublas_sites_captured(m);
  char ex[MP_KERNEL_SHOWN_MAX], graphs[256] = "";
  if (captured)
    snprintf(graphs, sizeof graphs,
             "replays of the CUDA graphs this program captured cuBLAS calls into (%zu site%s "
             "recorded calls during a capture; a replay launches their kernels without a call), ",
             captured, captured == 1 ? "" : "s");
  mpprof_finding *f = add(
      m, "library_calls_not_hooked", share >= MPPROF_NOT_HOOKED_SHARE_MEDIUM ? "medium" : "info",
      NULL,
      mpprof_asprintf(
          "CUPTI saw %.0f cuBLAS/cuBLASLt kernel launch%s (%.3g ms GPU, e.g. %.80s) outside every "
          "cuBLAS/cuBLASLt call mpprof intercepted: %s%% of the matrix kernels' GPU time (hooked "
          "ops' kernels and these). They come from %sentry points mpprof does not hook "
          "(matrix-vector products such as cublasSgemv, complex GEMMs, level-1 BLAS) or a "
          "second copy of the library: their values are not in this report, nor in any layer's "
          "verdict",
          kernels, kernels == 1 ? "" : "es", ns / 1e6, example_shown(example, ex, sizeof ex),
          mpprof_pct_text(100 * share).s, graphs),
      captured ? strdup("a replayed kernel runs the precision its captured call shows (the sites "
                        "with not_scanned graph_capture); to scan the replayed values, profile a "
                        "run without CUDA graphs (torch.compile's default mode rather than "
                        "reduce-overhead, no torch.cuda.graphs)")
               : strdup("mpprof measures cuBLAS GEMMs (cublas<t>gemm, cublasGemmEx and their "
                        "batched, strided and grouped forms) and cublasLtMatmul; a matrix-vector "
                        "product with a batch of 1 (PyTorch runs fp32 torch.mv and linear layers "
                        "on one row through cublas<t>gemv) is measured when it goes through a "
                        "GEMM"));
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "library", "cublas");
  ev_num(f->evidence, "graph_captured_sites", (double)captured);
  ev_num(f->evidence, "kernels", kernels);
  ev_num(f->evidence, "gpu_ns", ns);
  if (example) cJSON_AddStringToObject(f->evidence, "example", example);
  ev_num(f->evidence, "share_of_matrix_gpu_time", share);
  f->impact_gpu_ns = (uint64_t)ns;
  return 0;
}

/* Matrix kernels of no library mpprof hooks (fused attention, Triton
 * templates, a framework's CUTLASS GEMMs, other GEMMs), launched outside
 * every hooked call: their GPU time is known, their precision and values are
 * not. */
static int rule_matrix_kernels_not_hooked(mpprof_model *m) {
  double kernels[MP_KLIB_COUNT] = {0}, ns[MP_KLIB_COUNT] = {0}, total_ns = 0;
  const char *example[MP_KLIB_COUNT] = {0};
  for (int l = MP_KLIB_NONE + 1; l < MP_KLIB_COUNT; l++) {
    if (mp_kernel_lib_hooked((mp_kernel_lib)l)) continue;
    unattributed_sum(m, mp_kernel_lib_name((mp_kernel_lib)l), &kernels[l], &ns[l], &example[l]);
    total_ns += ns[l];
  }
  static const char *const shown[MP_KLIB_COUNT] = {
      [MP_KLIB_ATTENTION] = "fused attention (flash / memory-efficient SDPA)",
      [MP_KLIB_TRITON_TEMPLATE] = "Triton template (torch.compile)",
      [MP_KLIB_CUTLASS] = "framework CUTLASS GEMM (row-wise scaled FP8 _scaled_mm, grouped mm)",
      [MP_KLIB_OTHER_GEMM] =
          "other GEMM (the program's own, CUTLASS library, Triton, DeepGEMM, TensorRT)"};
  char what[1024] = "";
  size_t len = 0, n_kinds = 0;
  double all = 0;
  for (int l = MP_KLIB_NONE + 1; l < MP_KLIB_COUNT; l++) {
    if (kernels[l] <= 0) continue;
    char ex[MP_KERNEL_SHOWN_MAX];
    all += kernels[l];
    if (len < sizeof what)
      len += (size_t)snprintf(
          what + len, sizeof what - len, "%s%.0f %s kernel launch%s (%.3g ms GPU, e.g. %.80s)",
          n_kinds++ ? "; " : "", kernels[l], shown[l], kernels[l] == 1 ? "" : "es", ns[l] / 1e6,
          example_shown(example[l], ex, sizeof ex));
  }
  if (all <= 0) return 0;
  /* the share of the matrix kernels' GPU time: hooked ops' kernels and these */
  double matrix_ns = (double)m->tc.gemm_conv_kernel_ns + total_ns;
  double share = matrix_ns > 0 ? total_ns / matrix_ns : 0;
  mpprof_finding *f = add(
      m, "matrix_kernels_not_hooked", share >= MPPROF_NOT_HOOKED_SHARE_MEDIUM ? "medium" : "info",
      NULL,
      mpprof_asprintf("CUPTI saw %s outside every cuBLAS/cuDNN call: %s%% of the matrix kernels' "
                      "GPU time (hooked ops' kernels and these). mpprof does not hook them: their "
                      "dtypes, Tensor Core use and values are not in this report, nor in any "
                      "layer's verdict (the ops around them, such as attention's Q/K/V "
                      "projections, are)",
                      what, mpprof_pct_text(100 * share).s),
      mpprof_asprintf(
          "read their precision from the kernel names (bf16 / f16 / f32 / e4m3 in them)%s%s",
          kernels[MP_KLIB_ATTENTION] > 0
              ? "; to see attention's values, profile a run with the math SDPA backend "
                "(torch.backends.cuda.enable_flash_sdp(False), enable_mem_efficient_sdp(False)), "
                "whose matmuls go through cuBLAS"
              : "",
          kernels[MP_KLIB_CUTLASS] > 0
              ? "; FP8 with tensor-wise scales goes through cuBLASLt, which mpprof measures "
                "(row-wise scales and grouped GEMMs run PyTorch's own CUTLASS kernels)"
              : ""));
  if (!f) return -1;
  for (int l = MP_KLIB_NONE + 1; l < MP_KLIB_COUNT; l++) {
    if (kernels[l] <= 0) continue;
    cJSON *e = cJSON_AddObjectToObject(f->evidence, mp_kernel_lib_name((mp_kernel_lib)l));
    if (!e) return -1;
    ev_num(e, "kernels", kernels[l]);
    ev_num(e, "gpu_ns", ns[l]);
    if (example[l]) cJSON_AddStringToObject(e, "example", example[l]);
  }
  ev_num(f->evidence, "share_of_matrix_gpu_time", share);
  f->impact_gpu_ns = (uint64_t)total_ns;
  return 0;
}

static int rule_tc_counters_unmatched(mpprof_model *m) {
  if (!m->tc.counters_requested || m->tc.counters_unmatched <= 0) return 0;
  mpprof_finding *f = add(
      m, "tc_counters_unmatched", "info", NULL,
      mpprof_asprintf("--tc-counters measured %" PRId64 " calls but decided nothing for %" PRId64
                      " of them: their kernels could not be paired with the counter ranges; "
                      "kernel-name rules decided those",
                      m->tc.counters_ops, m->tc.counters_unmatched),
      strdup("counters pair a call with the kernels it launches under its own id: calls "
             "that launch kernels for several ops at once (grouped GEMMs, fused cuDNN "
             "graphs) or threads launching kernels concurrently cannot be measured; "
             "profile such calls in a single-threaded run, or rely on the kernel names"));
  if (!f) return -1;
  ev_num(f->evidence, "ops_profiled", (double)m->tc.counters_ops);
  ev_num(f->evidence, "ops_unmatched", (double)m->tc.counters_unmatched);
  cJSON_AddItemToObject(f->evidence, "notes", cJSON_Duplicate(m->tc.counters_notes, true));
  return 0;
}

static int rule_tc_counters_unavailable(mpprof_model *m) {
  if (!m->tc.counters_requested || m->tc.counters_unavailable_note < 0 ||
      m->tc.counters_unavailable_note >= cJSON_GetArraySize(m->tc.counters_notes))
    return 0;
  mpprof_finding *f = add(
      m, "tc_counters_unavailable", "info", NULL,
      mpprof_asprintf(
          "--tc-counters was requested but hardware counters did not decide "
          "(%s); kernel-name rules decided Tensor Core use",
          cJSON_GetArrayItem(m->tc.counters_notes, m->tc.counters_unavailable_note)->valuestring),
      strdup("allow GPU performance counters (root, or the driver option "
             "NVreg_RestrictProfilingToAdminUsers=0), run without other profilers, on a "
             "CUPTI with the range profiler (CUDA 12.6 update 2 or newer)"));
  if (!f) return -1;
  cJSON_AddItemToObject(f->evidence, "notes", cJSON_Duplicate(m->tc.counters_notes, true));
  return 0;
}

/* Processes whose PyTorch integration named backward ops with Python tensor
 * hooks (MP_RAW_FRAMEWORK backward_marks MP_RAW_MARKS_PYTHON): the C++ marks name them
 * the same way for less (README, the PyTorch integration row), and one
 * command builds them for the torch in use. */
static int rule_python_backward_marks(mpprof_model *m) {
  cJSON *files = NULL;
  const mpprof_process *first = NULL;
  size_t n = 0;
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    if (!p->backward_marks || strcmp(p->backward_marks, MP_RAW_MARKS_PYTHON)) continue;
    if (!files && !(files = cJSON_CreateArray())) return -1;
    cJSON_AddItemToArray(files, cJSON_CreateString(p->file));
    if (!first) first = p;
    n++;
  }
  if (!n) return 0;
  mpprof_finding *f = add(
      m, "python_backward_marks", "info", NULL,
      mpprof_asprintf("backward ops of %zu process%s (%s %s) were named by Python tensor hooks: "
                      "the same names as the C++ marks give, at a higher cost per call of a "
                      "module whose forward issues CUDA matrix ops (README, PyTorch integration)",
                      n, n == 1 ? "" : "es", first->framework ? first->framework : "torch",
                      first->framework_version ? first->framework_version : ""),
      strdup("run `python3 -m mpprof_torch.build` once with the program's python (it needs a C++ "
             "compiler and ninja): it builds the C++ marks for this torch, and later runs use "
             "them"));
  if (!f) {
    cJSON_Delete(files);
    return -1;
  }
  cJSON_AddItemToObject(f->evidence, "files", files);
  return 0;
}

/* Layers that are whole torch.compile regions: the PyTorch integration's
 * hooks do nothing while Dynamo traces, so the modules inside a compiled
 * region are not seen and its ops all go to the compiled wrapper. */
static int rule_compiled_region(mpprof_model *m) {
  cJSON *layers = NULL;
  size_t n = 0;
  const char *first = NULL;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    if (!l->module_class || strcmp(l->module_class, MPPROF_TORCH_COMPILED_CLASS)) continue;
    if (!layers && !(layers = cJSON_CreateArray())) return -1;
    cJSON_AddItemToArray(layers, cJSON_CreateString(mpprof_layer_label(l)));
    if (!first) first = mpprof_layer_label(l);
    n++;
  }
  if (!n) return 0;
  mpprof_finding *f =
      add(m, "compiled_region", "info", n == 1 ? first : NULL,
          mpprof_asprintf("%zu layer%s %s torch.compile region%s (%s%s): every op inside is "
                          "attributed to the compiled module as a whole, so the modules inside "
                          "have no layers, verdicts or Tensor Core rows of their own",
                          n, n == 1 ? "" : "s", n == 1 ? "is a" : "are", n == 1 ? "" : "s", first,
                          n == 1 ? "" : ", ..."),
          strdup("profile a run without torch.compile (or with it applied to submodules) to "
                 "see per-module precision; the compiled run's figures stay valid for the region "
                 "as a whole"));
  if (!f) {
    cJSON_Delete(layers);
    return -1;
  }
  cJSON_AddItemToObject(f->evidence, "layers", layers);
  return 0;
}

/* Every kind, in the order the rules run (layer rules layer by layer). */
const mpprof_finding_rule mpprof_finding_rules[] = {
    {"fp16_overflow", rule_fp16_overflow, NULL, false, true},
    {"fp16_forward_underflow", rule_fp16_forward_underflow, NULL, false, false},
    {"fp16_subnormal", rule_fp16_subnormal, NULL, false, false},
    {"gradient_underflow", rule_gradient_underflow, NULL, false, false},
    {"gradient_range", rule_gradient_range, NULL, false, false},
    {"bf16_unsafe", rule_bf16_unsafe, NULL, false, false},
    {"lower_precision_possible", NULL, rule_lower_precision_possible, false, false},
    {"nonfinite_values", NULL, rule_nonfinite_values, false, false},
    {"loss_scale_overflow", NULL, rule_loss_scale_overflow, false, false},
    {"dead_gradient", NULL, rule_dead_gradient, false, false},
    {"dead_output", NULL, rule_dead_output, false, false},
    {"gradients_flushed", NULL, rule_gradients_flushed, false, false},
    {"fp16_flush_edge", NULL, rule_fp16_flush_edge, false, false},
    {"fp8_candidate", NULL, rule_fp8_candidate, false, false},
    {"loss_scale_applied", NULL, rule_loss_scale_applied, false, false},
    {"loss_scale_unknown", NULL, rule_loss_scale_unknown, false, false},
    {"first_nonfinite", NULL, rule_first_nonfinite, false, false},
    {"fp32_without_tf32", NULL, rule_fp32_without_tf32, false, false},
    {"tensor_cores_not_used", NULL, rule_tensor_cores_not_used, false, false},
    {"tensor_cores_inefficient", NULL, rule_tensor_cores_inefficient, false, false},
    {"current_error_high", NULL, rule_current_error_high, false, false},
    {"fp8_fast_accumulation", NULL, rule_fp8_fast_accumulation, false, false},
    {"loss_scale_conflict", NULL, rule_loss_scale_conflict, false, false},
    {"no_cuda_ops", NULL, rule_no_cuda_ops, true, false},
    {"skipped_files", NULL, rule_skipped_files, true, false},
    {"incomplete_process", NULL, rule_incomplete_process, true, false},
    {"process_without_mpprof", NULL, rule_process_without_mpprof, true, false},
    {"process_without_raw_file", NULL, rule_process_without_raw_file, true, false},
    {"processes_still_running", NULL, rule_processes_still_running, true, false},
    {"ranks_missing", NULL, rule_ranks_missing, true, false},
    {"no_kernel_data", NULL, rule_no_kernel_data, true, false},
    {"library_not_intercepted", NULL, rule_library_not_intercepted, true, false},
    {"library_calls_not_hooked", NULL, rule_library_calls_not_hooked, true, false},
    {"matrix_kernels_not_hooked", NULL, rule_matrix_kernels_not_hooked, true, false},
    {"tc_counters_unavailable", NULL, rule_tc_counters_unavailable, true, false},
    {"tc_counters_unmatched", NULL, rule_tc_counters_unmatched, true, false},
    {"compiled_region", NULL, rule_compiled_region, true, false},
    {"python_backward_marks", NULL, rule_python_backward_marks, true, false},
};
const size_t mpprof_n_finding_rules = sizeof mpprof_finding_rules / sizeof mpprof_finding_rules[0];

/* Whether layer rule r looks at l: a layer with a verdict, any with any_layer. */
static bool rule_looks_at(const mpprof_finding_rule *r, const mpprof_layer *l) {
  return l->adv.known || r->any_layer;
}

int mpprof_finding_rule_run(mpprof_model *m, const mpprof_finding_rule *r) {
  if (r->model) return r->model(m);
  for (size_t i = 0; i < m->n_layers; i++)
    if (rule_looks_at(r, &m->layers[i]) && r->layer(m, &m->layers[i])) return -1;
  return 0;
}

static int sev_rank(const char *s) {
  return !strcmp(s, "high") ? 0 : !strcmp(s, "medium") ? 1 : !strcmp(s, "low") ? 2 : 3;
}

static int finding_cmp(const void *a, const void *b) {
  const mpprof_finding *x = a, *y = b;
  /* Severity first (a value that overflows fp16 breaks training; a missed
   * Tensor Core only slows it), then impact within a severity; "info"
   * (options, notes) last. */
  int c = sev_rank(x->severity) - sev_rank(y->severity);
  if (c) return c;
  if (x->impact_gpu_ns != y->impact_gpu_ns) return x->impact_gpu_ns > y->impact_gpu_ns ? -1 : 1;
  if (x->impact_elements != y->impact_elements)
    return x->impact_elements > y->impact_elements ? -1 : 1;
  c = strcmp(x->layer ? x->layer : "", y->layer ? y->layer : "");
  return c ? c : strcmp(x->kind, y->kind);
}

int mpprof_build_findings(mpprof_model *m) {
  const mpprof_finding_rule *r = mpprof_finding_rules, *end = r + mpprof_n_finding_rules;
  for (size_t i = 0; i < m->n_layers; i++) /* layer by layer: ties keep this order */
    for (const mpprof_finding_rule *k = r; k < end; k++)
      if (k->layer && rule_looks_at(k, &m->layers[i]) && k->layer(m, &m->layers[i])) return -1;
  for (const mpprof_finding_rule *k = r; k < end; k++)
    if (k->model && !k->note && k->model(m)) return -1;
  /* Problems rank by impact; notes about the data (impact 0) go last. */
  if (m->n_findings) qsort(m->findings, m->n_findings, sizeof *m->findings, finding_cmp);
  for (const mpprof_finding_rule *k = r; k < end; k++)
    if (k->note && k->model(m)) return -1;
  return 0;
}
