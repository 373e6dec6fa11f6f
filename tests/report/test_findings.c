/* Each finding rule of report/findings.c on its own, on a hand-made model:
 * one test per kind, with a case that gives the finding and one that does
 * not. A rule in the table without a test here fails every_rule_has_a_test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/formats.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

static const char *const tested[] = {
    "process_without_mpprof",
    "nonfinite_values",
    "fp16_overflow",
    "fp16_forward_underflow",
    "fp16_subnormal",
    "gradient_underflow",
    "gradient_range",
    "bf16_unsafe",
    "lower_precision_possible",
    "fp8_candidate",
    "fp32_without_tf32",
    "current_error_high",
    "fp8_fast_accumulation",
    "tensor_cores_not_used",
    "tensor_cores_inefficient",
    "loss_scale_conflict",
    "no_cuda_ops",
    "skipped_files",
    "incomplete_process",
    "process_without_raw_file",
    "processes_still_running",
    "ranks_missing",
    "no_kernel_data",
    "tc_counters_unavailable",
    "tc_counters_unmatched",
    "library_not_intercepted",
    "library_calls_not_hooked",
    "matrix_kernels_not_hooked",
    "loss_scale_overflow",
    "dead_gradient",
    "dead_output",
    "gradients_flushed",
    "fp16_flush_edge",
    "loss_scale_applied",
    "loss_scale_unknown",
    "first_nonfinite",
    "compiled_region",
    "python_backward_marks",
};

static const mpprof_finding_rule *rule(const char *kind) {
  for (size_t i = 0; i < mpprof_n_finding_rules; i++)
    if (!strcmp(mpprof_finding_rules[i].kind, kind)) return &mpprof_finding_rules[i];
  fail_msg("no finding rule %s", kind);
  return NULL;
}

/* Findings the rule of kind adds when run once on m. */
static size_t run(mpprof_model *m, const char *kind) {
  size_t before = m->n_findings;
  assert_int_equal(mpprof_finding_rule_run(m, rule(kind)), 0);
  for (size_t i = before; i < m->n_findings; i++)
    assert_string_equal(m->findings[i].kind, kind); /* a rule makes only its own kind */
  return m->n_findings - before;
}

static mpprof_layer *layer(mpprof_model *m, mp_recommendation rec) {
  mpprof_model_init(m);
  m->layers = calloc(1, sizeof *m->layers);
  assert_non_null(m->layers);
  m->n_layers = 1;
  mpprof_layer *l = &m->layers[0];
  l->name = strdup("net/fc1");
  l->adv.known = true;
  l->adv.rec = rec;
  l->adv.fp8_e4m3_fits = l->adv.fp8_e5m2_fits = -1;
  return l;
}

static mpprof_layer_tensor *tensor(mpprof_layer *l, const char *name, mp_tclass cls) {
  l->tensors = realloc(l->tensors, (l->n_tensors + 1) * sizeof *l->tensors);
  assert_non_null(l->tensors);
  mpprof_layer_tensor *t = &l->tensors[l->n_tensors++];
  memset(t, 0, sizeof *t);
  t->name = strdup(name);
  t->cls = cls;
  t->has_values = true;
  t->st.nz_lo = 1; /* empty histogram */
  t->st.count = 100;
  t->st.absmax = 10;
  t->st.min_abs_nonzero = 0.5;
  return t;
}

static mpprof_site *site(mpprof_model *m, const char *a_dtype) {
  m->sites = realloc(m->sites, (m->n_sites + 1) * sizeof *m->sites);
  assert_non_null(m->sites);
  mpprof_site *s = &m->sites[m->n_sites];
  memset(s, 0, sizeof *s);
  s->id = m->n_sites++;
  s->api = "cublasGemmEx";
  s->op = "gemm";
  s->layer_name = strdup("net/fc1");
  s->compute_type = "32F";
  s->math_mode = "DEFAULT";
  s->n_types = 2;
  strcpy(s->types[0].role, "A");
  strcpy(s->types[1].role, "B");
  s->types[0].dtype = s->types[1].dtype = mp_dtype_from_name(a_dtype);
  s->cc_major = 9;
  s->tc_used = -1;
  s->calls = 10;
  return s;
}

/* A layer advised fp16 whose forward tensor holds 1% or more of its values
 * in fp16's subnormal range: the advice counts flushes only, so the finding
 * says what precision those values keep. Below 1%, for a gradient (a loss
 * scale moves it), or in a layer not advised fp16: none. */
static void fp16_subnormal(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  mpprof_layer_tensor *g = tensor(l, "backward.dx", MP_TCLASS_GRADIENT);
  g->st.casts[MP_TGT_FP16][MP_CAST_NORMAL] = 50;
  g->st.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL] = 50;
  mpprof_layer_tensor *t = tensor(l, "forward.D", MP_TCLASS_FORWARD);
  t->st.casts[MP_TGT_FP16][MP_CAST_NORMAL] = 991;
  t->st.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL] = 9;
  assert_int_equal(run(&m, "fp16_subnormal"), 0); /* 0.9% */
  t->st.casts[MP_TGT_FP16][MP_CAST_NORMAL] = 989;
  t->st.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL] = 10;
  t->st.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW] = 1;
  assert_int_equal(run(&m, "fp16_subnormal"), 1); /* 1% of the non-zero values */
  const mpprof_finding *f = &m.findings[m.n_findings - 1];
  assert_string_equal(f->severity, "low");
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(f->evidence, "tensor")),
                      "forward.D");
  double share;
  assert_int_equal(
      mpprof_json_get_double(cJSON_GetObjectItem(f->evidence, "subnormal_fraction"), &share), 0);
  assert_true(share == 0.01);
  assert_non_null(strstr(f->message, "2^-14"));
  assert_int_equal(f->impact_elements, 10);
  l->adv.rec = MP_REC_BF16;
  assert_int_equal(run(&m, "fp16_subnormal"), 0);
  l->adv.rec = MP_REC_FP16_LOSS_SCALE;
  assert_int_equal(run(&m, "fp16_subnormal"), 1);
  mpprof_model_free(&m);
}

static void nonfinite_values(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  tensor(l, "forward.D", MP_TCLASS_FORWARD);
  assert_int_equal(run(&m, "nonfinite_values"), 0);
  l->tensors[0].adv.nonfinite_input = true;
  l->tensors[0].st.nans = 3;
  assert_int_equal(run(&m, "nonfinite_values"), 1);
  assert_string_equal(m.findings[0].severity, "high");
  assert_non_null(strstr(m.findings[0].message, "3 NaN"));
  mpprof_model_free(&m);
}

static void loss_scale_overflow(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->st.dtype = MP_FP16;
  g->st.nans = 5;
  g->scale_max = 0x1p30;
  assert_int_equal(run(&m, "nonfinite_values"), 0); /* under a scale: the other kind */
  assert_int_equal(run(&m, "loss_scale_overflow"), 1);
  assert_string_equal(m.findings[0].severity, "high");
  assert_true(strstr(m.findings[0].message, "loss scale 2^30") == m.findings[0].message);
  mpprof_model_free(&m);
  /* An fp32 output of fp16 inputs that overflowed at the scale (mlp_train
   * --precision fp16 --loss-scale 2^30): still the scale's. */
  l = layer(&m, MP_REC_FP16);
  g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->st.dtype = MP_FP32;
  g->st.nans = 8;
  g->scale_max = 0x1p30;
  mpprof_layer_tensor *dy = tensor(l, "backward.A", MP_TCLASS_GRADIENT);
  dy->st.dtype = MP_FP16;
  dy->st.pos_infs = 2;
  dy->scale_max = 0x1p30;
  assert_int_equal(run(&m, "loss_scale_overflow"), 1);
  assert_int_equal(run(&m, "nonfinite_values"), 0);
  mpprof_model_free(&m);
}

/* NaN in a layer whose gradients are all fp32 (a NaN loss under GradScaler's
 * 2^11, torch_model.py): the scale, inside the window, made none of them; the
 * finding must not tell the user to lower it. */
static void nonfinite_under_a_scale_that_cannot_overflow_fp32(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->st.dtype = MP_FP32;
  g->st.nans = 5;
  g->scale_max = 0x1p11;
  mpprof_layer_tensor *dy = tensor(l, "backward.A", MP_TCLASS_GRADIENT);
  dy->st.dtype = MP_BF16; /* fp32's range: no overflow at 2^11 either */
  dy->st.nans = 1;
  dy->scale_max = 0x1p11;
  /* an fp16 gradient of the layer that stayed finite: not what holds them */
  mpprof_layer_tensor *dx = tensor(l, "backward.B", MP_TCLASS_GRADIENT);
  dx->st.dtype = MP_FP16;
  dx->scale_max = 0x1p11;
  m.loss_scale.has_window = true;
  m.loss_scale.window_lo = -6;
  m.loss_scale.window_hi = 15;
  assert_int_equal(run(&m, "loss_scale_overflow"), 0);
  assert_int_equal(run(&m, "nonfinite_values"), 1);
  const mpprof_finding *f = &m.findings[0];
  assert_string_equal(f->severity, "high");
  assert_non_null(strstr(f->message, "net/fc1: backward.D already holds NaN or Inf (5 NaN"));
  assert_non_null(strstr(f->message, "under loss scale 2^11, which did not make them"));
  assert_non_null(strstr(f->message, "(backward.D is fp32)"));
  assert_non_null(strstr(f->message, "none of this layer's gradients that hold NaN or Inf is in "
                                     "fp16 or fp8"));
  assert_null(strstr(f->action, "lower the loss scale into"));
  assert_non_null(strstr(f->action, "lowering the loss scale does not remove them"));
  mpprof_model_free(&m);
}

static void dead_gradient_and_dead_output(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  l->adv.known = false; /* dead gradients take the verdict away: the rule still runs */
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->output = true;
  g->st.zeros = g->st.count;
  g->scanned_calls = 20;
  assert_int_equal(run(&m, "dead_output"), 0);
  assert_int_equal(run(&m, "dead_gradient"), 1);
  assert_non_null(strstr(m.findings[0].message, "zero in all 20 scanned calls"));
  mpprof_layer_tensor *y = tensor(l, "forward.D", MP_TCLASS_FORWARD);
  y->output = true;
  y->st.zeros = y->st.count;
  assert_int_equal(run(&m, "dead_output"), 1);
  mpprof_model_free(&m);
}

static void gradients_flushed(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  mpprof_layer_tensor *y = tensor(l, "forward.D", MP_TCLASS_FORWARD);
  y->output = true;
  y->st.zeros = 5; /* 5% zeros forward */
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->output = true;
  g->st.dtype = MP_FP32; /* fp32 gradients do not flush */
  g->st.zeros = 60;
  assert_int_equal(run(&m, "gradients_flushed"), 0);
  g->st.dtype = MP_FP16;
  g->scale_max = 1024; /* a scale was applied: not this rule */
  assert_int_equal(run(&m, "gradients_flushed"), 0);
  g->scale_max = 1;
  assert_int_equal(run(&m, "gradients_flushed"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].action,
                      "raise the loss scale: no loss-scale window is known");
  /* a window the search range cut at 2^32 that truly reaches 2^53: the
   * action says how far up the scale may go (it said 2^32) */
  m.loss_scale.has_window = true;
  m.loss_scale.window_lo = 16;
  m.loss_scale.window_hi = 32;
  m.loss_scale.beyond_hi = 21;
  assert_int_equal(run(&m, "gradients_flushed"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].action,
                      "raise the loss scale: the window is [2^16, 2^32] (searched 2^-32 .. 2^32; "
                      "2^16 .. 2^53 fits in all)");
  m.loss_scale.beyond_hi = 0;
  assert_int_equal(run(&m, "gradients_flushed"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].action,
                      "raise the loss scale: the window is [2^16, 2^32]");
  g->st.zeros = 8; /* 8% zeros: below the 10% floor */
  assert_int_equal(run(&m, "gradients_flushed"), 0);
  mpprof_model_free(&m);
}

/* An fp16 backward tensor, as recorded, with at least half of its non-zero
 * values fp16 subnormals: flushed at the source (mlp_train --precision fp16
 * --loss-scale 65536: fc1's incoming gradient is 94% zeros and the rest all
 * subnormal, while its fp32 output looked fine). Only fp16, only backward,
 * only as recorded: a gradient's unscaled record does not count. */
static void fp16_flush_edge(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_BF16);
  mpprof_layer_tensor *a = tensor(l, "backward.A", MP_TCLASS_AMBIGUOUS);
  a->st.dtype = MP_FP16;
  a->st.zeros = 60;
  a->st.absmax = 0x1p-15;
  a->scale_min = a->scale_max = 65536;
  a->st.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL] = 19;
  a->st.casts[MP_TGT_FP16][MP_CAST_NORMAL] = 21; /* 47.5%: below half */
  assert_int_equal(run(&m, "fp16_flush_edge"), 0);
  a->st.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL] = 21;
  a->st.casts[MP_TGT_FP16][MP_CAST_NORMAL] = 19;
  assert_int_equal(run(&m, "fp16_flush_edge"), 1);
  const mpprof_finding *f = &m.findings[m.n_findings - 1];
  assert_string_equal(f->severity, "high");
  assert_non_null(strstr(f->message, "backward.A (fp16, at the applied loss scale 65536) lost "
                                     "values to flush-to-zero before mpprof saw it: 52.5% of its "
                                     "non-zero values are fp16 subnormals"));
  assert_non_null(strstr(f->action, "leaves 2^30 of headroom"));
  a->st.dtype = MP_BF16; /* bf16 keeps fp32's range */
  assert_int_equal(run(&m, "fp16_flush_edge"), 0);
  a->st.dtype = MP_FP16;
  free(a->name);
  a->name = strdup("forward.A"); /* forward values: fp16_subnormal's business */
  assert_int_equal(run(&m, "fp16_flush_edge"), 0);
  /* a gradient: its at-scale record is what was written; st is unscaled */
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->st.dtype = MP_FP16;
  g->st.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL] = 90; /* unscaled: subnormal */
  g->at_scale = g->st;
  g->at_scale.casts[MP_TGT_FP16][MP_CAST_SUBNORMAL] = 0; /* as written: all normal */
  g->at_scale.casts[MP_TGT_FP16][MP_CAST_NORMAL] = 90;
  assert_int_equal(run(&m, "fp16_flush_edge"), 0);
  mpprof_model_free(&m);
}

static void loss_scale_applied_and_unknown(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16_LOSS_SCALE);
  (void)l;
  site(&m, "fp16")->phase = MPPROF_PHASE_BACKWARD;
  mpprof_applied_scale *g = &m.loss_scale;
  g->has_window = true;
  g->window_lo = 14;
  g->window_hi = 18;
  g->recommended_log2 = 16;
  assert_int_equal(run(&m, "loss_scale_applied"), 0); /* nothing declared */
  g->declared = true;
  g->min = g->max = 1;
  assert_int_equal(run(&m, "loss_scale_applied"), 1);
  assert_non_null(strstr(m.findings[m.n_findings - 1].message, "below the window"));
  g->min = g->max = 0x1p30;
  assert_int_equal(run(&m, "loss_scale_applied"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].severity, "high");
  g->min = g->max = 0x1p16;
  assert_int_equal(run(&m, "loss_scale_applied"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].severity, "info");
  /* A range of applied scales (a dynamic scaler, merged runs) with scales
   * inside the window is only partly outside it: "2^10..2^16 is below the
   * window [2^14, 2^18]" was false of 2^14 .. 2^16. */
  g->min = 0x1p10;
  assert_int_equal(run(&m, "loss_scale_applied"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].severity, "medium");
  assert_non_null(strstr(m.findings[m.n_findings - 1].message,
                         "2^10..2^16 is partly below the window [2^14, 2^18] (too low"));
  g->max = 0x1p20;
  assert_int_equal(run(&m, "loss_scale_applied"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].severity, "high");
  assert_non_null(strstr(m.findings[m.n_findings - 1].message,
                         "is partly above and partly below the window [2^14, 2^18] (too high: "
                         "gradients overflow; too low: gradients flush)"));
  g->min = 0x1p16;
  assert_int_equal(run(&m, "loss_scale_applied"), 1);
  assert_non_null(strstr(m.findings[m.n_findings - 1].message, "is partly above the window"));
  g->min = 0x1p19;
  assert_int_equal(run(&m, "loss_scale_applied"), 1);
  assert_non_null(strstr(m.findings[m.n_findings - 1].message, "2^19..2^20 is above the window"));
  /* The worst layer it names is one the window is made of: a layer kept in
   * bf16 (mlp_train's fc1, whose gradients flush 100% at 2^0 and at every
   * scale of the window) is not the window's evidence. */
  l->adv.has_window = true;
  l->applied_fp16_underflow =
      (mpprof_share){.tensor = "backward.D", .num = 5, .den = 100, .pct = 5};
  m.layers = realloc(m.layers, 2 * sizeof *m.layers);
  assert_non_null(m.layers);
  mpprof_layer *kept = &m.layers[1];
  memset(kept, 0, sizeof *kept);
  m.n_layers = 2;
  kept->name = strdup("net/fc0");
  kept->adv.known = true;
  kept->adv.rec = MP_REC_BF16;
  kept->adv.has_window = true;
  kept->applied_fp16_underflow =
      (mpprof_share){.tensor = "backward.D", .num = 100, .den = 100, .pct = 100};
  g->min = g->max = 1;
  assert_int_equal(run(&m, "loss_scale_applied"), 1);
  const char *msg = m.findings[m.n_findings - 1].message;
  assert_non_null(strstr(msg, "at it net/fc1's backward.D flushes to zero in fp16 for 5%"));
  assert_null(strstr(msg, "net/fc0"));
  assert_int_equal(run(&m, "loss_scale_unknown"), 0);
  g->declared = false;
  g->undeclared_gradients = g->undeclared_nonfinite = true;
  assert_int_equal(run(&m, "loss_scale_unknown"), 1);
  assert_non_null(
      strstr(m.findings[m.n_findings - 1].message, "applied loss scale unknown; figures assume 1"));
  mpprof_model_free(&m);
}

static void first_nonfinite(void **state) {
  (void)state;
  mpprof_model m;
  layer(&m, MP_REC_FP16);
  mpprof_site *s = site(&m, "fp16");
  s->layer = "net/fc1/fwd";
  assert_int_equal(run(&m, "first_nonfinite"), 0);
  m.first_nonfinite = (mpprof_nonfinite){.found = true,
                                         .site = 0,
                                         .call_index = 3,
                                         .has_step = true,
                                         .step = 7,
                                         .count = 4,
                                         .pos_infs = 2,
                                         .inputs_scanned = true};
  strcpy(m.first_nonfinite.role, "D");
  assert_int_equal(run(&m, "first_nonfinite"), 1);
  assert_non_null(strstr(m.findings[0].message, "call 3, step 7"));
  mpprof_model_free(&m);
}

static void fp16_overflow(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_BF16);
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->adv.fp16_overflow_fraction = 0.1; /* gradients are loss-scaled: not this rule's */
  assert_int_equal(run(&m, "fp16_overflow"), 0);
  mpprof_layer_tensor *t = tensor(l, "forward.D", MP_TCLASS_FORWARD);
  t->adv.fp16_overflow_fraction = 0.1;
  t->st.absmax = 1e5;
  assert_int_equal(run(&m, "fp16_overflow"), 1);
  assert_non_null(strstr(m.findings[0].message, "fp16 max 65504"));
  const cJSON *max = cJSON_GetObjectItem(m.findings[0].evidence, "fp16_max");
  assert_true(strtod(max->valuestring, NULL) == mp_format_of(MP_FP16)->max_finite); /* raw */
  /* A layer whose dead gradients took its verdict away: the overflow stands. */
  l->adv.known = false;
  assert_int_equal(run(&m, "fp16_overflow"), 1);
  assert_non_null(strstr(m.findings[1].message, "fp16 max 65504"));
  mpprof_model_free(&m);
}

/* A layer whose training forward output and evaluation output both overflow:
 * the finding names the training one even where the eval share is larger
 * (it named eval.D alone, read as "overflow only in evaluation"), and says
 * the eval one too; with only eval overflowing, eval is named. */
static void fp16_overflow_names_training_before_eval(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_BF16);
  l->adv.known = false;
  mpprof_layer_tensor *fw = tensor(l, "forward.D", MP_TCLASS_FORWARD);
  fw->adv.fp16_overflow_fraction = 0.0859;
  fw->st.absmax = 1.189e5;
  mpprof_layer_tensor *ev = tensor(l, "eval.D", MP_TCLASS_FORWARD);
  ev->adv.fp16_overflow_fraction = 0.0938;
  ev->st.absmax = 1.183e5;
  assert_int_equal(run(&m, "fp16_overflow"), 1);
  assert_string_equal(m.findings[0].message,
                      "net/fc1: forward.D reaches 1.189e+05 > fp16 max 65504 in 8.59% of values; "
                      "eval.D too (absmax 1.183e+05, 9.38% of values)");
  const cJSON *e = m.findings[0].evidence;
  assert_string_equal(cJSON_GetObjectItem(e, "tensor")->valuestring, "forward.D");
  assert_string_equal(cJSON_GetObjectItem(e, "eval_tensor")->valuestring, "eval.D");
  fw = &l->tensors[0]; /* the training forward fits: eval alone is named */
  fw->adv.fp16_overflow_fraction = 0;
  fw->st.absmax = 10;
  assert_int_equal(run(&m, "fp16_overflow"), 1);
  assert_string_equal(m.findings[1].message,
                      "net/fc1: eval.D reaches 1.183e+05 > fp16 max 65504 in 9.38% of values");
  assert_null(cJSON_GetObjectItem(m.findings[1].evidence, "eval_tensor"));
  mpprof_model_free(&m);
}

/* A forward tensor merged from an e4m3 D (saturated) and a bf16 D: its dtype
 * is MP_DTYPE_INVALID, its absmax 448. The finding said "reaches 448 > fp16
 * max 65504"; the saturation is in the e4m3 sites' format. */
static void fp16_overflow_of_a_saturated_tensor_of_mixed_dtypes(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_BF16);
  mpprof_layer_tensor *t = tensor(l, "forward.D", MP_TCLASS_FORWARD);
  t->st.dtype = MP_DTYPE_INVALID;
  t->st.count = 512;
  t->st.saturated = t->saturated_as[0] = 64;
  t->st.absmax = 448;
  t->adv.fp16_overflow_fraction = 0.125;
  assert_int_equal(run(&m, "fp16_overflow"), 1);
  const char *msg = m.findings[0].message;
  assert_null(strstr(msg, "> fp16 max"));
  assert_non_null(strstr(msg, "64 of 512 finite non-zero values (12.5%) at the fp8_e4m3 max 448"));
  /* both fp8 formats saturated: each count at its own max */
  t->saturated_as[0] = 60;
  t->saturated_as[1] = 4;
  assert_int_equal(run(&m, "fp16_overflow"), 1);
  assert_non_null(
      strstr(m.findings[1].message, "at the fp8_e4m3 max 448 (60) and the fp8_e5m2 max 57344 (4)"));
  mpprof_model_free(&m);
}

static void fp16_forward_underflow(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_BF16);
  mpprof_layer_tensor *t = tensor(l, "forward.D", MP_TCLASS_FORWARD);
  t->adv.fp16 = MP_FP16_UNSAFE;
  t->adv.fp16_underflow_fraction = m.params.underflow_max / 2; /* within the allowance */
  assert_int_equal(run(&m, "fp16_forward_underflow"), 0);
  t->adv.fp16_underflow_fraction = 0.25;
  assert_int_equal(run(&m, "fp16_forward_underflow"), 1);
  assert_string_equal(m.findings[0].action, "run this layer in bf16");
  mpprof_model_free(&m);
}

static void gradient_underflow(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16_LOSS_SCALE);
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->adv.fp16 = MP_FP16_SAFE;
  assert_int_equal(run(&m, "gradient_underflow"), 0);
  g->adv.fp16 = MP_FP16_LOSS_SCALE;
  g->adv.fp16_underflow_fraction = 0.3;
  l->adv.has_window = true;
  l->adv.window_lo = 4;
  l->adv.window_hi = 10;
  assert_int_equal(run(&m, "gradient_underflow"), 1);
  assert_string_equal(m.findings[0].severity, "medium");
  const cJSON *w = cJSON_GetObjectItem(m.findings[0].evidence, "window_log2");
  assert_int_equal(cJSON_GetArrayItem(w, 0)->valueint, 4);
  assert_int_equal(cJSON_GetArrayItem(w, 1)->valueint, 10);
  assert_int_equal(run(&m, "gradient_range"), 0); /* a window exists: not out of range */
  mpprof_model_free(&m);
}

/* A loss-scaled layer whose gradient (backward.D) underflows fp16 in 68% of
 * its values, with the window 2^14 .. 2^29. */
static mpprof_layer *underflowing_layer(mpprof_model *m) {
  mpprof_layer *l = layer(m, MP_REC_FP16_LOSS_SCALE);
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->adv.fp16 = MP_FP16_LOSS_SCALE;
  g->adv.fp16_underflow_fraction = 0.68;
  l->adv.has_window = true;
  l->adv.window_lo = 14;
  l->adv.window_hi = 29;
  return l;
}

/* The action's example scale is the global recommendation when it is in the
 * layer's window: another one (the layer's middle) could overflow another
 * layer's gradients, contradicting the summary's loss scale. */
static void gradient_underflow_example_is_the_global_scale(void **state) {
  (void)state;
  mpprof_model m;
  underflowing_layer(&m);
  m.loss_scale.applicable = m.loss_scale.has_window = true;
  m.loss_scale.window_lo = 14;
  m.loss_scale.window_hi = 18;
  m.loss_scale.recommended_log2 = 16;
  assert_int_equal(run(&m, "gradient_underflow"), 1);
  assert_non_null(strstr(m.findings[0].action, "(e.g. 2^16)"));
  m.loss_scale.recommended_log2 = 12; /* global window elsewhere: the layer's middle */
  m.loss_scale.window_lo = 10;
  assert_int_equal(run(&m, "gradient_underflow"), 1);
  assert_non_null(strstr(m.findings[1].action, "(e.g. 2^21)"));
  /* the layer's own suggestion is mp_loss_scale_pick's, 2^0 rule included */
  m.layers[0].adv.window_lo = -20;
  m.layers[0].adv.window_hi = 3;
  assert_int_equal(run(&m, "gradient_underflow"), 1);
  assert_non_null(strstr(m.findings[2].action, "(e.g. 2^0)"));
  mpprof_model_free(&m);
}

/* A program that already applies a scale inside the window: the finding says
 * so, with the share at that scale, as info, not "train it with a loss scale". */
static void gradient_underflow_with_the_applied_scale_inside_is_info(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = underflowing_layer(&m);
  l->applied_fp16_underflow =
      (mpprof_share){.pct = 0.00712, .num = 35, .den = 491520, .tensor = "backward.D"};
  m.loss_scale.declared = true;
  m.loss_scale.min = m.loss_scale.max = 1; /* below the window */
  assert_int_equal(run(&m, "gradient_underflow"), 1);
  assert_string_equal(m.findings[0].severity, "medium");
  assert_null(strstr(m.findings[0].message, "applied"));
  m.loss_scale.min = 0x1p14;
  m.loss_scale.max = 0x1p16;
  assert_int_equal(run(&m, "gradient_underflow"), 1);
  const mpprof_finding *f = &m.findings[1];
  assert_string_equal(f->severity, "info");
  assert_non_null(strstr(f->message, "the applied loss scale 2^14..2^16 is inside it (at it "
                                     "0.00712% of backward.D flush)"));
  assert_non_null(strstr(f->action, "nothing to change"));
  assert_non_null(cJSON_GetObjectItem(f->evidence, "fp16_underflow_at_applied"));
  /* with a model-wide window the action names it, not the layer's wider one */
  m.loss_scale.applicable = m.loss_scale.has_window = true;
  m.loss_scale.window_lo = 14;
  m.loss_scale.window_hi = 18;
  assert_int_equal(run(&m, "gradient_underflow"), 1);
  assert_string_equal(m.findings[2].action,
                      "nothing to change: keep the loss scale in the model-wide window "
                      "[2^14, 2^18]");
  m.loss_scale.max = 0x1p30; /* one scale above the window: the advice stands */
  assert_int_equal(run(&m, "gradient_underflow"), 1);
  assert_string_equal(m.findings[3].severity, "medium");
  mpprof_model_free(&m);
}

static void gradient_range(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_BF16);
  mpprof_layer_tensor *g = tensor(l, "backward.D", MP_TCLASS_GRADIENT);
  g->adv.fp16 = MP_FP16_UNSAFE;
  g->adv.fp16_underflow_fraction = 0.3;
  g->adv.has_window = true; /* some scale fits: gradient_underflow's case */
  assert_int_equal(run(&m, "gradient_range"), 0);
  g->adv.has_window = false;
  assert_int_equal(run(&m, "gradient_range"), 1);
  assert_string_equal(m.findings[0].severity, "high");
  assert_string_equal(m.findings[0].action, "use bf16 for this layer");
  mpprof_model_free(&m);
}

static void bf16_unsafe(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_BF16);
  mpprof_layer_tensor *t = tensor(l, "forward.D", MP_TCLASS_FORWARD);
  t->adv.bf16_ok = false;
  assert_int_equal(run(&m, "bf16_unsafe"), 0);
  l->adv.rec = MP_REC_FP32;
  assert_int_equal(run(&m, "bf16_unsafe"), 1);
  /* fp32 for another cause (NaN/Inf fp32 made, the measured bf16 error):
   * no value is beyond bf16, and the finding said "values exceed bf16 (0%
   * overflow, 0% flush)" */
  t->adv.bf16_ok = true;
  assert_int_equal(run(&m, "bf16_unsafe"), 0);
  mpprof_model_free(&m);
}

static void lower_precision_possible(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP32);
  site(&m, "fp32");
  l->n_sites = 1;
  assert_int_equal(run(&m, "lower_precision_possible"), 0); /* fp32 values need fp32 */
  l->adv.rec = MP_REC_BF16;
  assert_int_equal(run(&m, "lower_precision_possible"), 1);
  assert_non_null(strstr(m.findings[0].message, "fit bf16"));
  mpprof_model_free(&m);
}

/* A model of many layers: the message (and the terminal summary line made
 * of it) names the first MPPROF_LAYERS_NAMED and "and N more"; a 200-layer
 * model's line was 6 KB. The evidence lists every layer. */
static void lower_precision_names_a_few_layers_and_counts_the_rest(void **state) {
  (void)state;
  mpprof_model m;
  layer(&m, MP_REC_BF16);
  const size_t n = MPPROF_LAYERS_NAMED + 3;
  m.layers = realloc(m.layers, n * sizeof *m.layers);
  assert_non_null(m.layers);
  for (size_t i = 0; i < n; i++) {
    mpprof_layer *l = &m.layers[i];
    if (i) {
      memset(l, 0, sizeof *l);
      l->adv.known = true;
      l->adv.rec = MP_REC_BF16;
      l->adv.fp8_e4m3_fits = l->adv.fp8_e5m2_fits = -1;
      l->name = mpprof_asprintf("net/fc%zu", i + 1);
    }
    site(&m, "fp32");
    l->first_site = i;
    l->n_sites = 1;
  }
  m.n_layers = n;
  assert_int_equal(run(&m, "lower_precision_possible"), 1);
  const mpprof_finding *f = &m.findings[0];
  assert_non_null(strstr(f->message, "net/fc4 (bf16) and 3 more"));
  assert_null(strstr(f->message, "net/fc5"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f->evidence, "layers")), (int)n);
  mpprof_model_free(&m);
}

/* One cause, one finding: three fp32 layers that fit 16 bits are listed in
 * one "autocast" finding, not three. */
static void lower_precision_findings_merge_into_one_listing_the_layers(void **state) {
  (void)state;
  mpprof_model m;
  layer(&m, MP_REC_BF16);
  m.layers = realloc(m.layers, 4 * sizeof *m.layers);
  assert_non_null(m.layers);
  const mp_recommendation recs[4] = {MP_REC_BF16, MP_REC_FP16, MP_REC_FP16_LOSS_SCALE, MP_REC_FP32};
  for (size_t i = 0; i < 4; i++) {
    mpprof_layer *l = &m.layers[i];
    if (i) {
      memset(l, 0, sizeof *l);
      l->adv.known = true;
      l->adv.fp8_e4m3_fits = l->adv.fp8_e5m2_fits = -1;
      l->name = mpprof_asprintf("net/fc%zu", i + 1);
    }
    l->adv.rec = recs[i];
    site(&m, "fp32");
    l->first_site = i;
    l->n_sites = 1;
  }
  m.n_layers = 4;
  assert_int_equal(run(&m, "lower_precision_possible"), 1);
  const mpprof_finding *f = &m.findings[0];
  assert_null(f->layer);
  assert_non_null(strstr(f->message, "3 layers run fp32"));
  assert_non_null(strstr(f->message, "net/fc1 (bf16), net/fc2 (fp16 as is), net/fc3 (fp16 with a "
                                     "loss scale)"));
  assert_null(strstr(f->message, "net/fc4")); /* fp32 values: not an opportunity */
  assert_non_null(strstr(f->action, "autocast"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f->evidence, "layers")), 3);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f->evidence, "sites")), 3);
  mpprof_model_free(&m);
}

/* conv_train fp32: every convolution ran TF32 Tensor Core kernels, and the
 * finding said they "run fp32 GEMMs/convs" and that autocast meant "using
 * Tensor Cores". Sites on TF32 Tensor Cores are said to be, and autocast's
 * gain over them is twice the Tensor Core rate, not Tensor Cores. */
static void lower_precision_on_tf32_tensor_cores_says_so(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  mpprof_site *s = site(&m, "fp32");
  l->n_sites = 1;
  s->tc_used = 1;
  s->elig.tf32 = true;
  assert_int_equal(run(&m, "lower_precision_possible"), 1);
  const mpprof_finding *f = &m.findings[0];
  assert_string_equal(f->message,
                      "net/fc1 runs fp32 GEMMs/convs on TF32 Tensor Cores but its values fit "
                      "fp16 as is");
  assert_non_null(strstr(f->action, "doubling the Tensor Core rate over TF32"));
  assert_null(strstr(f->action, "using Tensor Cores"));
  assert_string_equal(cJSON_GetObjectItem(f->evidence, "tensor_cores")->valuestring, "all");
  mpprof_model_free(&m);
}

/* Of two layers, one on TF32 Tensor Cores and one not: the list says which,
 * and the action promises Tensor Cores only where they are not used. */
static void lower_precision_names_the_layers_already_on_tensor_cores(void **state) {
  (void)state;
  mpprof_model m;
  layer(&m, MP_REC_BF16);
  m.layers = realloc(m.layers, 2 * sizeof *m.layers);
  assert_non_null(m.layers);
  mpprof_layer *l2 = &m.layers[1];
  memset(l2, 0, sizeof *l2);
  l2->adv.known = true;
  l2->adv.rec = MP_REC_FP16;
  l2->adv.fp8_e4m3_fits = l2->adv.fp8_e5m2_fits = -1;
  l2->name = strdup("net/fc2");
  m.n_layers = 2;
  for (size_t i = 0; i < 2; i++) {
    mpprof_site *s = site(&m, "fp32");
    s->tc_used = i == 0;
    s->elig.tf32 = true;
    m.layers[i].first_site = i;
    m.layers[i].n_sites = 1;
  }
  assert_int_equal(run(&m, "lower_precision_possible"), 1);
  const mpprof_finding *f = &m.findings[0];
  assert_non_null(strstr(f->message, "2 layers run fp32 GEMMs/convs but their values fit 16 "
                                     "bits: net/fc1 (bf16; on TF32 Tensor Cores), net/fc2 (fp16 "
                                     "as is)"));
  assert_non_null(strstr(f->action, "doubling the Tensor Core rate over TF32 where they run TF32 "
                                    "now and using Tensor Cores where they do not"));
  const cJSON *ls = cJSON_GetObjectItem(f->evidence, "layers");
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ls, 0), "tensor_cores")->valuestring,
                      "all");
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(ls, 1), "tensor_cores")->valuestring,
                      "none");
  mpprof_model_free(&m);
}

static void lower_precision_needs_fp32_inputs(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_BF16);
  site(&m, "bf16");
  l->n_sites = 1;
  assert_int_equal(run(&m, "lower_precision_possible"), 0);
  mpprof_model_free(&m);
}

static void fp8_candidate(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  l->adv.fp8_e4m3_fits = 0;
  assert_int_equal(run(&m, "fp8_candidate"), 0);
  l->adv.fp8_e4m3_fits = 1;
  l->adv.fp8_e5m2_fits = 1;
  assert_int_equal(run(&m, "fp8_candidate"), 1);
  assert_string_equal(m.findings[0].severity, "info");
  assert_null(cJSON_GetObjectItem(m.findings[0].evidence, "measured")); /* range only */
  assert_non_null(strstr(m.findings[0].message, "(e4m3 forward, e5m2 gradients; worst"));
  assert_null(cJSON_GetObjectItem(m.findings[0].evidence, "gradients_not_seen"));
  assert_null(strstr(m.findings[0].action, "not seen"));
  l->adv.fp8_e5m2_fits = 0; /* gradients seen, and e5m2 does not fit them */
  assert_int_equal(run(&m, "fp8_candidate"), 0);
  mpprof_model_free(&m);
}

/* A layer whose gradients were never seen (fp8_e5m2_fits -1) fits fp8 on its
 * forward values only: the finding said "e4m3 forward, e5m2 gradients" of it
 * all the same. It stays a candidate, and what was not seen is said. */
static void fp8_candidate_says_when_gradients_were_not_seen(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  l->adv.fp8_e4m3_fits = 1;
  l->adv.fp8_e5m2_fits = -1;
  assert_int_equal(run(&m, "fp8_candidate"), 1);
  const mpprof_finding *f = &m.findings[0];
  assert_non_null(strstr(f->message, "(e4m3 forward; gradients not seen, e5m2 unverified; worst"));
  assert_null(strstr(f->message, "e5m2 gradients"));
  assert_non_null(strstr(f->action, "gradients were not seen: profile a training step"));
  const cJSON *u = cJSON_GetObjectItem(f->evidence, "gradients_not_seen");
  assert_int_equal(cJSON_GetArraySize(u), 1);
  assert_string_equal(cJSON_GetArrayItem(u, 0)->valuestring, mpprof_layer_label(l));
  assert_int_equal(mpprof_build_fp8_plan(&m), 0);
  assert_non_null(
      strstr(m.plan_fp8.headline, "1 layer (e4m3 forward; gradients not seen, e5m2 unverified)"));
  mpprof_model_free(&m);
}

/* With --shadow, a layer that fits fp8's range but whose best measured fp8
 * recipe errs more than --shadow-max-rel is no candidate: the finding said
 * "consider FP8" for mlp_train's fc2 and fc3 at 7% and 11% relative L2
 * error against the 0.39% limit. Within the limit, the recipe is named. */
static void fp8_candidate_needs_its_measured_error_within_the_limit(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  l->adv.fp8_e4m3_fits = 1;
  l->best_fp8 = 2; /* mxfp8 */
  l->fp8[2].calls = 4;
  l->fp8[2].worst.rel_l2 = 0.0723;
  assert_int_equal(run(&m, "fp8_candidate"), 1);
  mpprof_finding *f = &m.findings[0];
  assert_non_null(strstr(f->message, "no fp8 candidate"));
  assert_non_null(strstr(f->message, "0.0723"));
  assert_non_null(
      strstr(f->message, "relative L2 0.0723 on net/fc1): net/fc1")); /* not ["net/fc1"] */
  assert_non_null(strstr(f->action, "keep it in 16 bits"));
  assert_null(strstr(f->action, "consider FP8"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f->evidence, "layers")), 0);
  assert_int_equal(
      cJSON_GetArraySize(cJSON_GetObjectItem(f->evidence, "rejected_by_measured_error")), 1);
  /* a limit that admits the error: a candidate, with its recipe */
  m.shadow_max_rel = 0.1;
  assert_int_equal(run(&m, "fp8_candidate"), 1);
  f = &m.findings[1];
  assert_null(strstr(f->message, "no fp8 candidate"));
  assert_non_null(strstr(f->action, "consider FP8"));
  assert_non_null(strstr(f->action, "MXFP8BlockScaling"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f->evidence, "layers")), 1);
  assert_null(cJSON_GetObjectItem(f->evidence, "rejected_by_measured_error"));
  cJSON *meas = cJSON_GetObjectItem(cJSON_GetObjectItem(f->evidence, "measured"), "net/fc1");
  assert_string_equal(cJSON_GetObjectItem(meas, "recipe")->valuestring, "mxfp8");
  /* an infinite error (fp8 outputs overflowed): no limit to suggest */
  l->fp8[2].worst.rel_l2 = INFINITY;
  assert_int_equal(run(&m, "fp8_candidate"), 1);
  f = &m.findings[2];
  assert_non_null(strstr(f->message, "no fp8 candidate"));
  assert_null(strstr(f->action, "--shadow-max-rel"));
  assert_null(strstr(f->action, "inf"));
  mpprof_model_free(&m);
}

static void fp32_without_tf32(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  mpprof_site *s = site(&m, "fp32");
  assert_int_equal(run(&m, "fp32_without_tf32"), 0);
  s->elig.eligible_with_tf32 = true; /* analysis/tc_eligibility decides it */
  assert_int_equal(run(&m, "fp32_without_tf32"), 1);
  assert_non_null(strstr(m.findings[0].message, "1 fp32 GEMM/conv site (10 calls)"));
  mpprof_model_free(&m);
}

/* A site whose own precision measures above the limit (an e4m3 GEMM whose
 * D saturates); one at the limit, or without shadow data, gives nothing. */
static void current_error_high(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  site(&m, "fp8_e4m3");
  site(&m, "fp32");
  mpprof_site *s = &m.sites[0], *t = &m.sites[1];     /* site() moves the array */
  assert_int_equal(run(&m, "current_error_high"), 0); /* no --shadow */
  mpprof_shadow *sh = calloc(1, sizeof *sh), *th = calloc(1, sizeof *th);
  assert_non_null(sh);
  assert_non_null(th);
  s->shadow = sh, t->shadow = th;
  double lim = mpprof_shadow_max_rel(&m);
  sh->cand[MP_SH_CURRENT].calls = th->cand[MP_SH_CURRENT].calls = 4;
  sh->cand[MP_SH_CURRENT].worst.rel_l2 = lim; /* at the limit: fine */
  th->cand[MP_SH_CURRENT].worst.rel_l2 = 1e-7;
  assert_int_equal(run(&m, "current_error_high"), 0);
  sh->cand[MP_SH_CURRENT].worst.rel_l2 = 0.890625;
  assert_int_equal(run(&m, "current_error_high"), 1);
  assert_non_null(strstr(m.findings[0].message, "1 GEMM/conv site (10 calls) already loses more"));
  assert_non_null(strstr(m.findings[0].message, "site 0 (A=fp8_e4m3 B=fp8_e4m3"));
  assert_non_null(strstr(m.findings[0].message, "relative L2 error 0.891"));
  assert_string_equal(m.findings[0].severity, "medium");
  cJSON *sites = cJSON_GetObjectItem(m.findings[0].evidence, "sites");
  assert_int_equal(cJSON_GetArraySize(sites), 1);
  mpprof_model_free(&m);
}

/* FP8 GEMMs with cuBLASLt's FAST_ACCUM: information where none is known to
 * be a gradient GEMM (the phase of one unknown, said), medium once one runs
 * in backward; the flag on a non-FP8 GEMM (no effect there) and FP8 without
 * it give nothing. */
static void fp8_fast_accumulation(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  site(&m, "bf16")->fast_accum = true;
  site(&m, "fp8_e4m3");
  assert_int_equal(run(&m, "fp8_fast_accumulation"), 0);
  m.sites[1].fast_accum = true;
  m.sites[1].k = 4096;
  assert_int_equal(run(&m, "fp8_fast_accumulation"), 1);
  mpprof_finding *f = &m.findings[m.n_findings - 1];
  assert_string_equal(f->severity, "info");
  assert_non_null(strstr(f->message, "1 FP8 GEMM site (10 calls) run with cuBLASLt FAST_ACCUM"));
  assert_non_null(strstr(f->message, "the phase of 1 is unknown"));
  assert_null(strstr(f->message, "in backward"));
  site(&m, "fp8_e5m2")->fast_accum = true;
  m.sites[2].phase = MPPROF_PHASE_BACKWARD;
  m.sites[2].k = 8192;
  assert_int_equal(run(&m, "fp8_fast_accumulation"), 1);
  f = &m.findings[m.n_findings - 1];
  assert_string_equal(f->severity, "medium");
  assert_non_null(strstr(f->message, "2 FP8 GEMM sites (20 calls)"));
  assert_non_null(strstr(f->message, "example: net/fc1 site 2"));
  assert_non_null(strstr(f->message, "1 of them in backward (gradient GEMMs, k up to 8192)"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f->evidence, "sites")), 2);
  /* a backward site of merged shapes: k not known, not "k up to 0" */
  m.sites[2].shapes_merged = true;
  m.sites[2].k = 0;
  assert_int_equal(run(&m, "fp8_fast_accumulation"), 1);
  assert_non_null(
      strstr(m.findings[m.n_findings - 1].message, "1 of them in backward (gradient GEMMs)"));
  assert_null(strstr(m.findings[m.n_findings - 1].message, "k up to"));
  m.sites[2].shapes_merged = false;
  m.sites[2].k = 8192;
  assert_int_equal(run(&m, "fp8_fast_accumulation"), 1);
  f = &m.findings[m.n_findings - 1];
  double bwd = 0;
  assert_int_equal(mpprof_json_get_double(cJSON_GetObjectItem(f->evidence, "backward_sites"), &bwd),
                   0);
  assert_true(bwd == 1);
  mpprof_model_free(&m);
}

static void tensor_cores_not_used(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  mpprof_site *s = site(&m, "fp16");
  s->elig.eligible = s->elig.efficient = true;
  s->tc_used = 1;
  assert_int_equal(run(&m, "tensor_cores_not_used"), 0);
  s->tc_used = 0;
  /* the sentence names the kernel readable; CUPTI gave it mangled */
  s->kernels = calloc(1, sizeof *s->kernels);
  assert_non_null(s->kernels);
  s->kernels[0].name =
      "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE";
  s->n_kernels = 1;
  assert_int_equal(run(&m, "tensor_cores_not_used"), 1);
  assert_string_equal(m.findings[0].severity, "high");
  assert_non_null(strstr(m.findings[0].message,
                         "(cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>)"));
  assert_null(strstr(m.findings[0].message, "_ZN"));
  mpprof_model_free(&m);
}

static void tensor_cores_inefficient(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  mpprof_site *s = site(&m, "fp16");
  s->elig.eligible = s->elig.efficient = true;
  s->tc_used = 1;
  assert_int_equal(run(&m, "tensor_cores_inefficient"), 0);
  s->elig.efficient = false;
  s->elig.reason = "k=7 is not a multiple of 8";
  assert_int_equal(run(&m, "tensor_cores_inefficient"), 1);
  assert_non_null(strstr(m.findings[0].message, "k=7 is not a multiple of 8"));
  mpprof_model_free(&m);
}

static void loss_scale_conflict(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.loss_scale.applicable = true;
  m.loss_scale.has_window = true;
  m.loss_scale.limited_by = cJSON_CreateStringArray((const char *[]){"a", "b"}, 2);
  assert_int_equal(run(&m, "loss_scale_conflict"), 0);
  m.loss_scale.has_window = false;
  assert_int_equal(run(&m, "loss_scale_conflict"), 1);
  /* names as text, not a JSON array; the nameless layer by its label; the
   * first four and "and N more" (a 200-layer model's list filled the
   * terminal); the evidence keeps them all */
  assert_non_null(strstr(m.findings[0].message, "the conflict is between a, b"));
  cJSON_Delete(m.loss_scale.limited_by);
  m.loss_scale.limited_by =
      cJSON_CreateStringArray((const char *[]){"", "b", "c", "d", "e", "f"}, 6);
  assert_int_equal(run(&m, "loss_scale_conflict"), 1);
  assert_non_null(
      strstr(m.findings[1].message, "between " MPPROF_NO_LAYER_LABEL ", b, c, d and 2 more"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(m.findings[1].evidence, "limited_by")),
                   6);
  mpprof_model_free(&m);
}

static void no_cuda_ops(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.procs = calloc(1, sizeof *m.procs);
  assert_non_null(m.procs);
  m.n_procs = m.cap_procs = 1;
  m.total_calls = 5;
  assert_int_equal(run(&m, "no_cuda_ops"), 0);
  m.total_calls = 0;
  assert_int_equal(run(&m, "no_cuda_ops"), 1);
  assert_non_null(strstr(m.findings[0].message, "made no cuBLAS"));
  mpprof_model_free(&m);
}

/* Calls that all ran outside a capture range: the finding says so. */
static void no_cuda_ops_inside_the_capture_range(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.procs = calloc(1, sizeof *m.procs);
  assert_non_null(m.procs);
  m.n_procs = m.cap_procs = 1;
  m.procs[0].has_capture = true;
  m.procs[0].capture_mode = strdup("steps");
  m.procs[0].capture_not_started = 16;
  assert_int_equal(run(&m, "no_cuda_ops"), 1);
  assert_non_null(strstr(m.findings[0].message, "inside the capture range; 16 ran outside it"));
  mpprof_model_free(&m);
}

static void skipped_files(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  assert_int_equal(run(&m, "skipped_files"), 0);
  assert_int_equal(mpprof_model_add_skipped(&m, "a.json", "empty file"), 0);
  assert_int_equal(mpprof_model_add_skipped(&m, "b.json", "empty file"), 0);
  assert_int_equal(run(&m, "skipped_files"), 1);
  assert_non_null(strstr(m.findings[0].message, "2 raw files were skipped"));
  mpprof_model_free(&m);
}

/* Processes whose raw files an exec wrote because they ran without mpprof:
 * named with their command lines and parents, a profiled one not; many are
 * one finding naming the first MPPROF_LAYERS_NAMED and "N more", every pid in
 * its evidence (a program that starts a clean-environment helper at every
 * step is not thousands of findings). */
static void process_without_mpprof(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  enum { N = MPPROF_LAYERS_NAMED + 3 };
  m.procs = calloc(N, sizeof *m.procs);
  m.n_procs = 1;
  for (int i = 0; i < N; i++) {
    m.procs[i].file = mpprof_asprintf("node-%d.json", 7 + i);
    m.procs[i].pid = 7 + i;
    m.procs[i].ppid = 6;
    m.procs[i].final = true;
    m.procs[i].incomplete_reasons = cJSON_CreateArray();
    m.procs[i].argv = cJSON_CreateArray();
    cJSON_AddItemToArray(m.procs[i].argv, cJSON_CreateString("python"));
    cJSON_AddItemToArray(m.procs[i].argv, cJSON_CreateString("train.py"));
  }
  assert_int_equal(run(&m, "process_without_mpprof"), 0);
  static const char why[] =
      "the environment it was started with does not preload libmpprof (LD_PRELOAD)";
  m.procs[0].unprofiled = strdup(why);
  assert_int_equal(run(&m, "process_without_mpprof"), 1);
  assert_non_null(strstr(m.findings[0].message, "process 7 (python train.py, started by process "
                                                "6) ran without mpprof: the environment it was "
                                                "started with"));
  assert_string_equal(m.findings[0].severity, "medium");
  m.n_procs = N;
  for (int i = 1; i < N; i++)
    m.procs[i].unprofiled = strdup(why);
  assert_int_equal(run(&m, "process_without_mpprof"), 1);
  const mpprof_finding *f = &m.findings[m.n_findings - 1];
  const char *msg = f->message;
  char want[64];
  snprintf(want, sizeof want, "%d processes ran without mpprof: process 7 ", N);
  assert_non_null(strstr(msg, want));
  snprintf(want, sizeof want, "process %d (", 7 + MPPROF_LAYERS_NAMED - 1);
  assert_non_null(strstr(msg, want));
  snprintf(want, sizeof want, "process %d (", 7 + MPPROF_LAYERS_NAMED);
  assert_null(strstr(msg, want));
  assert_non_null(strstr(msg, " and 3 more; for each, the environment it was started with"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f->evidence, "pids")), N);
  mpprof_model_free(&m);
}

static void incomplete_process(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.procs = calloc(1, sizeof *m.procs);
  m.n_procs = 1;
  m.procs[0].file = strdup("node-1.json");
  m.procs[0].final = true;
  m.procs[0].incomplete_reasons = cJSON_CreateArray();
  assert_int_equal(run(&m, "incomplete_process"), 0);
  m.procs[0].final = false;
  assert_int_equal(run(&m, "incomplete_process"), 1);
  assert_non_null(strstr(m.findings[0].message, "checkpoint only"));
  /* killed by a signal (mpprof run's program): the finding names it */
  m.procs[0].killed_signal = 9;
  assert_int_equal(run(&m, "incomplete_process"), 1);
  assert_non_null(strstr(m.findings[1].message, "was killed by SIGKILL (signal 9)"));
  m.procs[0].killed_signal = 0;
  /* A final file with reasons: the finding says which. */
  m.procs[0].final = true;
  m.procs[0].incomplete = true;
  cJSON_AddItemToArray(m.procs[0].incomplete_reasons,
                       cJSON_CreateString("calls_in_flight: 1 calls had not returned at exit"));
  assert_int_equal(run(&m, "incomplete_process"), 1);
  assert_non_null(
      strstr(m.findings[m.n_findings - 1].message, "incomplete: calls_in_flight: 1 calls"));
  mpprof_model_free(&m);
}

/* mpprof run's program wrote no raw file while another process did. */
static void process_without_raw_file(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  assert_int_equal(run(&m, "process_without_raw_file"), 0);
  m.program_without_raw_file = 4242;
  assert_int_equal(run(&m, "process_without_raw_file"), 1);
  assert_string_equal(m.findings[0].severity, "medium");
  assert_non_null(strstr(m.findings[0].message, "process 4242 (the program's main process) wrote "
                                                "no raw file"));
  assert_non_null(strstr(m.findings[0].action, "MPPROF_CHECKPOINT_S"));
  assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(m.findings[0].evidence, "pid")), 4242);
  mpprof_model_free(&m);
}

static void processes_still_running(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  assert_int_equal(run(&m, "processes_still_running"), 0);
  m.still_running = malloc(2 * sizeof *m.still_running);
  m.still_running[0] = 4242;
  m.still_running[1] = 4243;
  m.n_still_running = 2;
  assert_int_equal(run(&m, "processes_still_running"), 1);
  assert_string_equal(m.findings[0].severity, "medium");
  assert_non_null(strstr(m.findings[0].message, "2 processes of the program were still running"));
  assert_non_null(strstr(m.findings[0].message, "pid 4242 4243"));
  mpprof_model_free(&m);
}

/* Processes of ranks ranks[0..n) (-1: no rank), each of world size ws[i]. */
static void set_ranks(mpprof_model *m, const int *ranks, const int *ws, size_t n) {
  m->procs = calloc(n, sizeof *m->procs);
  m->n_procs = m->cap_procs = n;
  for (size_t i = 0; i < n; i++) {
    m->procs[i].has_rank = ranks[i] >= 0;
    m->procs[i].rank = ranks[i];
    m->procs[i].world_size = ws[i];
  }
}

static void ranks_missing(void **state) {
  (void)state;
  static const struct {
    int ranks[6], ws[6];
    size_t n;
    const char *want; /* NULL: no claim */
  } cases[] = {
      {{0, 2}, {4, 4}, 2, "ranks 1, 3 of 4 not seen: their processes wrote no raw file here"},
      {{0, 1, 3}, {4, 4, 4}, 3, "rank 2 of 4 not seen: its process wrote no raw file here"},
      {{3, 0, 3}, {8, 8, 8}, 3, "ranks 1-2, 4-7 of 8 not seen: their"},
      {{0, 1}, {2, 2}, 2, NULL},              /* all there */
      {{0, 1}, {0, 0}, 2, NULL},              /* files before the key */
      {{0, 2}, {4, 0}, 2, "ranks 1, 3 of 4"}, /* one of them knows */
      {{0, 2}, {4, 8}, 2, NULL},              /* different worlds: no claim */
      {{-1, 9}, {4, 4}, 2, "ranks 0-3 of 4"}, /* no rank, a rank outside: none seen */
      {{1, 3, 5, 7, 9, 11},
       {20, 20, 20, 20, 20, 20},
       6,
       "ranks 0, 2, 4, 6, 8, 10, 12-19 of 20 not seen: "},
      {{0}, {40}, 1, "ranks 1-39 of 40"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    mpprof_model m;
    mpprof_model_init(&m);
    set_ranks(&m, cases[c].ranks, cases[c].ws, cases[c].n);
    char *text = mpprof_missing_ranks(&m, NULL, NULL);
    if (!cases[c].want)
      assert_null(text);
    else if (!text || !strstr(text, cases[c].want))
      fail_msg("case %zu: %s", c, text ? text : "(none)");
    free(text);
    assert_int_equal(run(&m, "ranks_missing"), cases[c].want ? 1 : 0);
    if (cases[c].want) assert_string_equal(m.findings[0].severity, "medium");
    mpprof_model_free(&m);
  }
  /* More than 8 gaps: the first 8, then how many in all. */
  int ranks[9] = {1, 3, 5, 7, 9, 11, 13, 15, 17}, ws[9];
  for (int i = 0; i < 9; i++)
    ws[i] = 30;
  mpprof_model m;
  mpprof_model_init(&m);
  set_ranks(&m, ranks, ws, 9);
  int64_t w = 0, missing = 0;
  char *text = mpprof_missing_ranks(&m, &w, &missing);
  assert_int_equal(w, 30);
  assert_int_equal(missing, 21);
  assert_non_null(text);
  if (!strstr(text, "ranks 0, 2, 4, 6, 8, 10, 12, 14, ... of 30 not seen (21 in all): their "))
    fail_msg("%s", text);
  free(text);
  mpprof_model_free(&m);
}

static void no_kernel_data(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.total_calls = 4;
  m.tc.kernel_data = true;
  m.tc.cupti_notes = cJSON_CreateArray();
  assert_int_equal(run(&m, "no_kernel_data"), 0);
  m.tc.kernel_data = false;
  assert_int_equal(run(&m, "no_kernel_data"), 1);
  mpprof_model_free(&m);
}

/* cuBLAS kernels outside every hooked call: a finding only while no cuBLAS
 * call was intercepted at all. */
static void library_not_intercepted(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.procs = calloc(1, sizeof *m.procs);
  m.n_procs = 1;
  assert_int_equal(run(&m, "library_not_intercepted"), 0); /* nothing seen */
  m.procs[0].unattributed_kernels =
      cJSON_Parse("{\"cublas\": {\"kernels\": 3, \"gpu_ns\": 2000000, \"example\": \"nvjet_x\"}}");
  assert_int_equal(run(&m, "library_not_intercepted"), 1);
  assert_non_null(strstr(m.findings[0].message, "3 cuBLAS/cuBLASLt kernel launches"));
  assert_non_null(strstr(m.findings[0].message, "no cuBLAS/cuBLASLt call was intercepted"));
  m.sites = calloc(1, sizeof *m.sites);
  m.n_sites = 1;
  m.sites[0].api = "cublasLtMatmul";
  assert_int_equal(run(&m, "library_not_intercepted"), 0); /* some calls were seen */
  mpprof_model_free(&m);
}

/* Fused attention and Triton template kernels outside every hooked call:
 * one finding naming each kind with its launches, GPU time and an example,
 * and their share of the matrix kernels' GPU time (hooked ops' kernels and
 * these); medium from MPPROF_NOT_HOOKED_SHARE_MEDIUM up, info below.
 * cuBLAS's own kernels there are library_not_intercepted's, not this. */
static void matrix_kernels_not_hooked(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.procs = calloc(1, sizeof *m.procs);
  m.n_procs = 1;
  m.procs[0].unattributed_kernels =
      cJSON_Parse("{\"cublas\": {\"kernels\": 3, \"gpu_ns\": 2000000, \"example\": \"nvjet_x\"}}");
  assert_int_equal(run(&m, "matrix_kernels_not_hooked"), 0);
  cJSON_Delete(m.procs[0].unattributed_kernels);
  m.procs[0].unattributed_kernels = cJSON_Parse(
      "{\"attention\": {\"kernels\": 12, \"gpu_ns\": 1000000, \"example\": "
      "\"fmha_cutlassF_bf16_aligned_64x64_rf_sm80\"}, \"triton_template\": {\"kernels\": 1, "
      "\"gpu_ns\": 0, \"example\": \"triton_tem_fused_mm_0\"}}");
  m.tc.gemm_conv_kernel_ns = 9000000; /* 1 ms of 10: 10% */
  assert_int_equal(run(&m, "matrix_kernels_not_hooked"), 1);
  const mpprof_finding *f = &m.findings[m.n_findings - 1];
  if (!strstr(f->message, "12 fused attention (flash / memory-efficient SDPA) kernel launches "
                          "(1 ms GPU, e.g. fmha_cutlassF_bf16_aligned_64x64_rf_sm80); 1 Triton "
                          "template (torch.compile) kernel launch (0 ms GPU") ||
      !strstr(f->message, ": 10% of the matrix kernels' GPU time"))
    fail_msg("%s", f->message);
  assert_string_equal(f->severity, "medium");
  double launches = 0;
  assert_int_equal(
      mpprof_json_get_double(
          cJSON_GetObjectItem(cJSON_GetObjectItem(f->evidence, "attention"), "kernels"), &launches),
      0);
  assert_true(launches == 12);
  m.tc.gemm_conv_kernel_ns = 9100000; /* just under 10% */
  assert_int_equal(run(&m, "matrix_kernels_not_hooked"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].severity, "info");
  assert_non_null(strstr(m.findings[m.n_findings - 1].action, "math SDPA backend"));
  assert_null(strstr(m.findings[m.n_findings - 1].action, "CUTLASS"));
  /* a framework's own CUTLASS GEMMs (row-wise FP8 _scaled_mm): named as such,
   * not as cuBLAS kernels, with the hint that tensor-wise FP8 is measured */
  cJSON_Delete(m.procs[0].unattributed_kernels);
  m.procs[0].unattributed_kernels =
      cJSON_Parse("{\"cutlass\": {\"kernels\": 4, \"gpu_ns\": 3000000, \"example\": "
                  "\"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...>>\"}}");
  m.tc.gemm_conv_kernel_ns = 1000000;
  assert_int_equal(run(&m, "matrix_kernels_not_hooked"), 1);
  f = &m.findings[m.n_findings - 1];
  assert_non_null(strstr(f->message, "4 framework CUTLASS GEMM (row-wise scaled FP8 _scaled_mm, "
                                     "grouped mm) kernel launches (3 ms GPU"));
  assert_non_null(strstr(f->message, ": 75% of the matrix kernels' GPU time"));
  assert_string_equal(f->severity, "medium");
  assert_non_null(strstr(f->action, "tensor-wise scales goes through cuBLASLt"));
  assert_null(strstr(f->action, "math SDPA backend"));
  /* GEMMs of no library at all (the program's own, DeepGEMM): named so, not
   * as cuBLAS kernels of a statically linked copy */
  cJSON_Delete(m.procs[0].unattributed_kernels);
  m.procs[0].unattributed_kernels =
      cJSON_Parse("{\"other_gemm\": {\"kernels\": 2, \"gpu_ns\": 50000, \"example\": "
                  "\"void deep_gemm::fp8_gemm_kernel<128u>(float*)\"}}");
  assert_int_equal(run(&m, "matrix_kernels_not_hooked"), 1);
  f = &m.findings[m.n_findings - 1];
  assert_non_null(strstr(f->message, "2 other GEMM (the program's own, CUTLASS library, Triton, "
                                     "DeepGEMM, TensorRT) kernel launches (0.05 ms GPU, e.g. "
                                     "void deep_gemm::fp8_gemm_kernel<128u>(float*))"));
  assert_string_equal(f->severity, "info"); /* 0.05 of 1.05 ms: under 10% */
  assert_int_equal(run(&m, "library_not_intercepted"), 0);
  mpprof_model_free(&m);
}

/* cuBLAS kernels outside every hooked call while cuBLAS calls were
 * intercepted (cublasSgemv, say): said, with their share of the matrix
 * kernels' GPU time; nothing while no cuBLAS call was intercepted (that is
 * library_not_intercepted's) or no such kernel ran. */
static void library_calls_not_hooked(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.procs = calloc(1, sizeof *m.procs);
  m.n_procs = 1;
  m.sites = calloc(1, sizeof *m.sites);
  m.n_sites = 1;
  m.sites[0].api = "cublasSgemm_v2";
  assert_int_equal(run(&m, "library_calls_not_hooked"), 0); /* no such kernel */
  m.procs[0].unattributed_kernels =
      cJSON_Parse("{\"cublas\": {\"kernels\": 5, \"gpu_ns\": 1000000, \"example\": "
                  "\"void gemv2T_kernel_val<int, int, float>(...)\"}, \"cudnn\": {\"kernels\": 9, "
                  "\"gpu_ns\": 9000000, \"example\": \"cudnn::bn_fw_tr_1C11_kernel_NCHW\"}}");
  m.tc.gemm_conv_kernel_ns = 3000000; /* 1 ms of 4: 25% */
  assert_int_equal(run(&m, "library_calls_not_hooked"), 1);
  const mpprof_finding *f = &m.findings[m.n_findings - 1];
  if (!strstr(f->message, "5 cuBLAS/cuBLASLt kernel launches (1 ms GPU, e.g. void "
                          "gemv2T_kernel_val<int, int, float>(...)) outside every "
                          "cuBLAS/cuBLASLt call mpprof intercepted: 25% of the matrix kernels'") ||
      !strstr(f->message, "cublasSgemv"))
    fail_msg("%s", f->message);
  assert_string_equal(f->severity, "medium");
  double share = 0;
  assert_int_equal(
      mpprof_json_get_double(cJSON_GetObjectItem(f->evidence, "share_of_matrix_gpu_time"), &share),
      0);
  assert_true(share == 0.25);
  /* the example as CUPTI gives it (mangled): demangled in the message,
   * kept in the evidence */
  cJSON_ReplaceItemInObject(
      cJSON_GetObjectItem(m.procs[0].unattributed_kernels, "cublas"), "example",
      cJSON_CreateString("_Z17gemv2T_kernel_valIiiffffLi128ELi16ELi4ELi4ELb0ELb0EEvv"));
  assert_int_equal(run(&m, "library_calls_not_hooked"), 1);
  f = &m.findings[m.n_findings - 1];
  if (!strstr(f->message, "e.g. gemv2T_kernel_val<int, int, float, float, float, float, 128, 16"))
    fail_msg("%s", f->message);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(f->evidence, "example")),
                      "_Z17gemv2T_kernel_valIiiffffLi128ELi16ELi4ELi4ELb0ELb0EEvv");
  m.tc.gemm_conv_kernel_ns = 9100000; /* just under 10% */
  assert_int_equal(run(&m, "library_calls_not_hooked"), 1);
  assert_string_equal(m.findings[m.n_findings - 1].severity, "info");
  assert_null(strstr(f->message, "CUDA graphs"));
  /* a program that captured cuBLAS calls into CUDA graphs: their replays
   * launch kernels without a call, said first */
  mpprof_count captured = {"graph_capture", 6};
  m.sites[0].not_scanned = &captured;
  m.sites[0].n_not_scanned = 1;
  assert_int_equal(run(&m, "library_calls_not_hooked"), 1);
  f = &m.findings[m.n_findings - 1];
  if (!strstr(f->message, "They come from replays of the CUDA graphs this program captured "
                          "cuBLAS calls into (1 site recorded calls during a capture;") ||
      !strstr(f->action, "without CUDA graphs"))
    fail_msg("%s / %s", f->message, f->action);
  m.sites[0].not_scanned = NULL;
  m.sites[0].n_not_scanned = 0;
  m.sites[0].api = "cudnnConvolutionForward"; /* no cuBLAS call intercepted */
  assert_int_equal(run(&m, "library_calls_not_hooked"), 0);
  assert_int_equal(run(&m, "library_not_intercepted"), 1);
  mpprof_model_free(&m);
}

static void tc_counters_unavailable(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.tc.counters_requested = true;
  m.tc.counters_notes = cJSON_CreateArray();
  assert_int_equal(run(&m, "tc_counters_unavailable"), 0);
  /* A note of counters that ran but left calls unpaired is not this finding's. */
  cJSON_AddItemToArray(m.tc.counters_notes, cJSON_CreateString("decided nothing for 1 of 1"));
  assert_int_equal(run(&m, "tc_counters_unavailable"), 0);
  cJSON_AddItemToArray(m.tc.counters_notes, cJSON_CreateString("insufficient privileges"));
  m.tc.counters_unavailable_note = 1;
  assert_int_equal(run(&m, "tc_counters_unavailable"), 1);
  assert_non_null(strstr(m.findings[0].message, "(insufficient privileges)"));
  mpprof_model_free(&m);
}

static void tc_counters_unmatched(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.tc.counters_requested = true;
  m.tc.counters_notes = cJSON_CreateArray();
  m.tc.counters_ops = 3;
  assert_int_equal(run(&m, "tc_counters_unmatched"), 0); /* every measured call decided */
  m.tc.counters_unmatched = 2;
  assert_int_equal(run(&m, "tc_counters_unmatched"), 1);
  assert_non_null(strstr(m.findings[0].message, "decided nothing for 2"));
  assert_non_null(strstr(m.findings[0].message, "measured 3 calls"));
  assert_non_null(cJSON_GetObjectItem(m.findings[0].evidence, "ops_unmatched"));
  mpprof_model_free(&m);
}

static void python_backward_marks(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_model_init(&m);
  m.procs = calloc(3, sizeof *m.procs);
  assert_non_null(m.procs);
  m.n_procs = 3;
  const char *marks[3] = {NULL, "cxx", "python"};
  for (int i = 0; i < 3; i++) {
    char file[32];
    snprintf(file, sizeof file, "h-%d.json", i);
    m.procs[i].file = strdup(file);
    m.procs[i].framework = strdup("torch");
    m.procs[i].framework_version = strdup("2.4.0");
    m.procs[i].backward_marks = marks[i] ? strdup(marks[i]) : NULL;
  }
  m.n_procs = 2; /* no marks said, C++ marks: nothing to say */
  assert_int_equal(run(&m, "python_backward_marks"), 0);
  m.n_procs = 3;
  assert_int_equal(run(&m, "python_backward_marks"), 1);
  assert_string_equal(m.findings[0].severity, "info");
  assert_non_null(strstr(m.findings[0].message, "of 1 process (torch 2.4.0)"));
  assert_non_null(strstr(m.findings[0].action, "python3 -m mpprof_torch.build"));
  cJSON *files = cJSON_GetObjectItem(m.findings[0].evidence, "files");
  assert_int_equal(cJSON_GetArraySize(files), 1);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetArrayItem(files, 0)), "h-2.json");
  mpprof_model_free(&m);
}

static void compiled_region(void **state) {
  (void)state;
  mpprof_model m;
  mpprof_layer *l = layer(&m, MP_REC_FP16);
  l->module_class = "Linear";
  assert_int_equal(run(&m, "compiled_region"), 0); /* a plain module */
  l->module_class = MPPROF_TORCH_COMPILED_CLASS;
  assert_int_equal(run(&m, "compiled_region"), 1);
  assert_string_equal(m.findings[0].layer, "net/fc1");
  assert_non_null(strstr(m.findings[0].message, "1 layer is a torch.compile region (net/fc1)"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(m.findings[0].evidence, "layers")), 1);
  l->module_class = NULL; /* borrowed: not freed by the model */
  mpprof_model_free(&m);
}

static void every_rule_has_a_test(void **state) {
  (void)state;
  for (size_t i = 0; i < mpprof_n_finding_rules; i++) {
    const mpprof_finding_rule *r = &mpprof_finding_rules[i];
    bool found = false;
    for (size_t j = 0; j < sizeof tested / sizeof tested[0]; j++)
      found |= !strcmp(tested[j], r->kind);
    if (!found) fail_msg("finding rule %s has no test in tests/report/test_findings.c", r->kind);
    assert_true((r->layer != NULL) != (r->model != NULL)); /* one kind of rule */
    assert_true(!r->note || r->model);
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(mpprof_finding_rules[j].kind, r->kind);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(nonfinite_values),
      cmocka_unit_test(loss_scale_overflow),
      cmocka_unit_test(nonfinite_under_a_scale_that_cannot_overflow_fp32),
      cmocka_unit_test(dead_gradient_and_dead_output),
      cmocka_unit_test(gradients_flushed),
      cmocka_unit_test(fp16_flush_edge),
      cmocka_unit_test(loss_scale_applied_and_unknown),
      cmocka_unit_test(first_nonfinite),
      cmocka_unit_test(fp16_overflow),
      cmocka_unit_test(fp16_overflow_names_training_before_eval),
      cmocka_unit_test(fp16_overflow_of_a_saturated_tensor_of_mixed_dtypes),
      cmocka_unit_test(fp16_forward_underflow),
      cmocka_unit_test(gradient_underflow),
      cmocka_unit_test(gradient_underflow_example_is_the_global_scale),
      cmocka_unit_test(gradient_underflow_with_the_applied_scale_inside_is_info),
      cmocka_unit_test(gradient_range),
      cmocka_unit_test(bf16_unsafe),
      cmocka_unit_test(lower_precision_possible),
      cmocka_unit_test(lower_precision_findings_merge_into_one_listing_the_layers),
      cmocka_unit_test(lower_precision_needs_fp32_inputs),
      cmocka_unit_test(lower_precision_on_tf32_tensor_cores_says_so),
      cmocka_unit_test(lower_precision_names_the_layers_already_on_tensor_cores),
      cmocka_unit_test(fp8_candidate),
      cmocka_unit_test(fp8_candidate_says_when_gradients_were_not_seen),
      cmocka_unit_test(fp8_candidate_needs_its_measured_error_within_the_limit),
      cmocka_unit_test(fp32_without_tf32),
      cmocka_unit_test(current_error_high),
      cmocka_unit_test(fp8_fast_accumulation),
      cmocka_unit_test(fp16_subnormal),
      cmocka_unit_test(tensor_cores_not_used),
      cmocka_unit_test(tensor_cores_inefficient),
      cmocka_unit_test(loss_scale_conflict),
      cmocka_unit_test(lower_precision_names_a_few_layers_and_counts_the_rest),
      cmocka_unit_test(no_cuda_ops),
      cmocka_unit_test(no_cuda_ops_inside_the_capture_range),
      cmocka_unit_test(skipped_files),
      cmocka_unit_test(incomplete_process),
      cmocka_unit_test(process_without_raw_file),
      cmocka_unit_test(process_without_mpprof),
      cmocka_unit_test(processes_still_running),
      cmocka_unit_test(ranks_missing),
      cmocka_unit_test(no_kernel_data),
      cmocka_unit_test(library_not_intercepted),
      cmocka_unit_test(library_calls_not_hooked),
      cmocka_unit_test(matrix_kernels_not_hooked),
      cmocka_unit_test(tc_counters_unavailable),
      cmocka_unit_test(tc_counters_unmatched),
      cmocka_unit_test(compiled_region),
      cmocka_unit_test(python_backward_marks),
      cmocka_unit_test(every_rule_has_a_test),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
