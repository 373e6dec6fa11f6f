/* The raw format end to end, without CUDA: libmpprof.so's writer renders a
 * raw document with every field set, and report/'s reader reads it back.
 *
 * - every key the writer emits is declared in analysis/raw_format.h (in the
 *   table of the object it appears in), and every declared key is emitted
 *   (the fixture sets every field: a new row fails here until it does);
 * - every emitted key is read back: the site key through the report's
 *   identity (compared value by value with the document), every other key
 *   through a check of its value in the model (a new row without a check
 *   fails here). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "common/utf8.h"
#include "analysis/raw_format.h"
#include "profiler/include/mpprof.h"
#include "profiler/mpp.h"
#include "profiler/rawwrite.h"
#include "report/report_internal.h"
#include "profiler/call.h"
#include "profiler/capture.h"
#include "profiler/nvtx.h"
#include "profiler/op.h"
#include "profiler/sites.h"
#include "profiler/train.h"

static float a_vals[16], d_vals[16], amax_val = 4096, amax_aux_val = 16;

/* An op with every field of the site key set (not a realistic call: each
 * field only has to reach the file). */
static void full_op(mpp_op *op) {
  mpp_op_init(op, "cublasLtMatmul", MPP_OP_CONV_FWD);
  op->m = 4;
  op->n = 4;
  op->k = 4;
  op->batch = 2;
  op->lda = 5;
  op->ldb = 6;
  op->ldc = 7;
  op->ldd = 8;
  op->transa = 'T';
  op->transb = 'N';
  op->has_conv = true;
  op->conv = (mpp_conv){.n = 1,
                        .c = 2,
                        .h = 3,
                        .w = 4,
                        .k = 6,
                        .r = 3,
                        .s = 3,
                        .pad = {1, 2},
                        .stride = {2, 1},
                        .dilation = {1, 3},
                        .groups = 2,
                        .d = 5, /* 3-D: every conv key written */
                        .t = 2,
                        .pad_d = 4,
                        .stride_d = 2,
                        .dilation_d = 7};
  mpp_op_type(op, "A", "fp16");
  mpp_op_type(op, "B", "bf16");
  mpp_op_type(op, "C", "fp32");
  mpp_op_type(op, "D", "fp32");
  op->compute_type = "32F";
  op->scale_type = "fp32";
  op->math_mode = 3 | 16;
  op->epilogue = "BIAS";
  op->conv_math = "TENSOR_OP_MATH";
  op->fp8_scales = MPP_FP8_A | MPP_FP8_B | MPP_FP8_C | MPP_FP8_D | MPP_FP8_AMAX_D | MPP_FP8_AUX |
                   MPP_FP8_AMAX_AUX;
  op->fp8_scale[0] = 2;             /* A's scale read */
  op->fp8_scale_unread[1] = true;   /* B's set but not read */
  op->amax_d_ptr = &amax_val;       /* read back at the end of the call */
  op->aux_scale = 0.0625;           /* the GELU aux's scale read */
  op->amax_aux_ptr = &amax_aux_val; /* read back as AMAX_D */
  op->fast_accum = true;
  mpp_op_note_ptr(op, a_vals);
  mpp_op_note_ptr(op, d_vals);
  mpp_role *a = mpp_op_role(op, "A", true);
  a->view = (mp_view){.dtype = MP_FP32, .data = a_vals, .rows = 16, .cols = 1, .ld = 16};
  mpp_role *d = mpp_op_role(op, "D", false);
  d->view = (mp_view){.dtype = MP_FP32, .data = d_vals, .rows = 16, .cols = 1, .ld = 16};
}

static const double tc_values[2] = {12.5, 3.0};

/* Sites, kernels, events and the facts around them; returns the rendered document. */
static char *render_everything(int *ret_site) {
  mpp_sites_reset();
  mpp_nvtx_ranges_reset();
  mpp_capture_reset_counts();
  mpp_cfg.capture = (mp_capture){.mode = MP_CAPTURE_STEPS, .first = 0, .last = 5};
  mpp_cfg.max_ranges = 16;
  mpp_nvtx_push(NULL, "outer");
  mpp_nvtx_push(NULL, "inner");
  mpp_nvtx_pop(NULL); /* one ended range: outer/inner */
  mpp_nvtx_pop(NULL);
  mpp_train_reset();
  mpp_op outside_op;
  mpp_call outside_call;
  mpp_op_init(&outside_op, "cublasSgemm_v2", MPP_OP_GEMM);
  mpp_call_begin(&outside_call, &outside_op); /* no step yet: outside, not_started */
  assert_int_equal(outside_call.site, -1);
  mpp_call_end(&outside_call, &outside_op, true);
  mpp_train_mark_step(1);
  mpp_cfg.scan = MPP_SCAN_ALL;
  mpp_cfg.sample = 2; /* the second call is sampled out: "not_scanned" */
  mpp_cfg.max_sites = 16;
  mpp_cfg.max_events = 16;
  mpp_cfg.shadow = 1; /* every call; the fixture op (no B) is counted shadow_unsupported */
  mpp_cfg.shadow_max_mb = 1;
  mpp_cfg.shadow_max_rel = 0x1p-10;
  for (int i = 0; i < 16; i++) {
    a_vals[i] = (float)(i + 1) / 4;
    d_vals[i] = (float)(i - 3);
  }
  mpp_op op;
  /* inside a scope: layer, phase and module_class come from it */
  mpprof_scope_push(mpprof_layer_id("enc.fc1", "Linear"), MPPROF_SCOPE_BACKWARD);
  for (int i = 0; i < 2; i++) {
    full_op(&op);
    mpp_call c;
    mpp_call_begin(&c, &op);
    *ret_site = c.site;
    mpp_call_end(&c, &op, true);
  }
  mpp_cfg.shadow = 0;
  full_op(&op);
  mpp_call_autotune(&op);
  mpprof_scope_pop();
  mpp_site_kernel(*ret_site, 0, "sm90_xmma_gemm_f16f16_f32f32", 5000, 6000, 7);
  mpp_site_kernel(*ret_site, 1, "sm90_xmma_gemm_f16f16_f32f32", 7000, 7500, 7);
  mpp_site_kernel_tc(*ret_site, "sm90_xmma_gemm_f16f16_f32f32", true, tc_values, 2);
  mpp_note_incomplete("test", "a reason for the test");
  mpp_note_unattributed_kernel("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT", 700);
  mpp_note_unattributed_kernel("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNN", 300);
  mpp_note_unattributed_kernel("triton_poi_fused_add_0", 50); /* not a library's: not counted */
  mpp_note_unattributed_kernel("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", 900); /* attention */
  mpp_train_reset();
  mpp_train_loss_scale(1024);
  mpp_train_mark_step(3);
  mpp_train_mark_skipped(3);

  mpp_raw_facts f = {.rank = 7,
                     .world_size = 8,
                     .forked = true,
                     .device_known = true,
                     .device_name = "NVIDIA H200",
                     .cc_major = 9,
                     .cc_minor = 0,
                     .framework = "torch",
                     .framework_version = "2.4.0+cu124",
                     .backward_marks = "python",
                     .models = "\tNet\nDiscriminator\tDiscriminator\n",
                     .tc = {.every = 3,
                            .status = "ok",
                            .reason = "why not",
                            .chip = "GH100",
                            .nmetrics = 2,
                            .metrics = {"sm__inst_executed_pipe_tensor_op_hmma.sum",
                                        "sm__pipe_tensor_cycles_active.sum"},
                            .passes = 2,
                            .ops_profiled = 11,
                            .kernels_profiled = 12,
                            .ops_unmatched = 13,
                            .ops_skipped = 14},
                     .cupti_status = "ok",
                     .cupti_dropped = 15,
                     .marks = 16,
                     .start_end_ranges = 17,
                     .end_ns = 123456789};
  size_t len = 0;
  char *doc = mpp_raw_render_facts(true, &f, &len);
  assert_non_null(doc);
  return doc;
}

/* ---- every emitted key is declared, every declared key emitted ---- */

typedef struct keyset {
  const char *const *keys;
  size_t n;
} keyset;

#define KEY_JSON(name, json, ...) json,
static const char *const top_keys[] = {MP_RAW_TOP(KEY_JSON)};
static const char *const site_keys[] = {MP_RAW_SITE_KEY(KEY_JSON) MP_RAW_SITE_COUNTERS(KEY_JSON)};
static const char *const kernel_keys[] = {MP_RAW_KERNEL(KEY_JSON)};
static const char *const event_keys[] = {MP_RAW_EVENT(KEY_JSON)};
static const char *const conv_keys[] = {MP_RAW_CONV(KEY_JSON)};
static const char *const fp8_keys[] = {MP_RAW_FP8_SCALES(KEY_JSON)};
static const char *const ns_keys[] = {MP_RAW_NOT_SCANNED(KEY_JSON)};
static const char *const nvtx_keys[] = {MP_RAW_NVTX(KEY_JSON)};
static const char *const device_keys[] = {MP_RAW_DEVICE(KEY_JSON)};
static const char *const framework_keys[] = {MP_RAW_FRAMEWORK(KEY_JSON)};
static const char *const model_keys[] = {MP_RAW_MODEL(KEY_JSON)};
static const char *const cupti_keys[] = {MP_RAW_CUPTI(KEY_JSON)};
static const char *const tcc_keys[] = {MP_RAW_TC_COUNTERS(KEY_JSON)};
static const char *const training_keys[] = {MP_RAW_TRAINING(KEY_JSON)};
static const char *const scale_change_keys[] = {MP_RAW_SCALE_CHANGE(KEY_JSON)};
static const char *const steps_keys[] = {MP_RAW_STEPS(KEY_JSON)};
static const char *const step_scale_keys[] = {MP_RAW_STEP_SCALE(KEY_JSON)};
static const char *const skipped_keys[] = {MP_RAW_SKIPPED(KEY_JSON)};
static const char *const capture_keys[] = {MP_RAW_CAPTURE(KEY_JSON)};
static const char *const capture_outside_keys[] = {MP_RAW_CAPTURE_OUTSIDE(KEY_JSON)};
static const char *const timeline_keys[] = {MP_RAW_TIMELINE(KEY_JSON)};
static const char *const range_keys[] = {MP_RAW_RANGE(KEY_JSON)};
static const char *const kevent_keys[] = {MP_RAW_KERNEL_EVENT(KEY_JSON)};
#define SET(a) ((keyset){a, sizeof a / sizeof a[0]})

static bool in_set(keyset s, const char *k) {
  for (size_t i = 0; i < s.n; i++)
    if (!strcmp(s.keys[i], k)) return true;
  return false;
}

/* Keys of o must all be declared; declared ones (but `optional`) must all be present. */
static void check_object(const cJSON *o, keyset s, const char *what, const char *const *optional) {
  assert_true(cJSON_IsObject(o));
  for (const cJSON *c = o->child; c; c = c->next)
    if (!in_set(s, c->string))
      fail_msg("the writer emits %s key \"%s\", which analysis/raw_format.h does not declare", what,
               c->string);
  for (size_t i = 0; i < s.n; i++) {
    bool opt = !s.keys[i][0];
    for (const char *const *p = optional; p && *p; p++)
      opt |= !strcmp(*p, s.keys[i]);
    if (!opt && !cJSON_GetObjectItemCaseSensitive(o, s.keys[i]))
      fail_msg("%s key \"%s\" is declared but the fixture does not make the writer emit it", what,
               s.keys[i]);
  }
}

static void every_emitted_key_is_declared_and_every_declared_key_emitted(void **state) {
  (void)state;
  int site;
  char *text = render_everything(&site);
  cJSON *doc = cJSON_Parse(text);
  free(text);
  assert_non_null(doc);
  /* unprofiled: only in the note an exec writes (an_unprofiled_note_is_read_back) */
  static const char *const note_only[] = {"unprofiled", NULL};
  check_object(doc, SET(top_keys), "top-level", note_only);
  const cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, MP_RK_TOP.sites), 0);
  /* ranks: the report's; shapes_merged: only in a site of merged shapes (below) */
  static const char *const report_only[] = {"ranks", "shapes_merged", NULL};
  check_object(s, SET(site_keys), "SITE", report_only);
  check_object(cJSON_GetArrayItem(cJSON_GetObjectItem(s, MP_RK_SITE.kernels), 0), SET(kernel_keys),
               "kernel", NULL);
  check_object(cJSON_GetObjectItem(s, MP_RK_SITE.conv), SET(conv_keys), "conv", NULL);
  check_object(cJSON_GetObjectItem(s, MP_RK_SITE.fp8_scales), SET(fp8_keys), "fp8_scales", NULL);
  const cJSON *ns = cJSON_GetObjectItem(s, MP_RK_SITE.not_scanned);
  for (const cJSON *c = ns->child; c; c = c->next)
    assert_true(in_set(SET(ns_keys), c->string));
  assert_non_null(ns->child);
  check_object(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, MP_RK_TOP.events), 0), SET(event_keys),
               "event", NULL);
  check_object(cJSON_GetObjectItem(doc, MP_RK_TOP.nvtx), SET(nvtx_keys), "nvtx", NULL);
  const cJSON *cap = cJSON_GetObjectItem(doc, MP_RK_TOP.capture);
  check_object(cap, SET(capture_keys), "capture", NULL);
  check_object(cJSON_GetObjectItem(cap, MP_RK_CAPTURE.outside), SET(capture_outside_keys),
               "capture.outside", NULL);
  check_object(cJSON_GetObjectItem(doc, MP_RK_TOP.timeline), SET(timeline_keys), "timeline", NULL);
  check_object(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, MP_RK_TOP.ranges), 0), SET(range_keys),
               "ranges[]", NULL);
  check_object(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, MP_RK_TOP.kernel_events), 0),
               SET(kevent_keys), "kernel_events[]", NULL);
  check_object(cJSON_GetObjectItem(doc, MP_RK_TOP.device), SET(device_keys), "device", NULL);
  check_object(cJSON_GetObjectItem(doc, MP_RK_TOP.framework), SET(framework_keys), "framework",
               NULL);
  check_object(cJSON_GetArrayItem(
                   cJSON_GetObjectItem(cJSON_GetObjectItem(doc, MP_RK_TOP.framework), "models"), 1),
               SET(model_keys), "framework.models[]", NULL);
  check_object(cJSON_GetObjectItem(doc, MP_RK_TOP.cupti), SET(cupti_keys), "cupti", NULL);
  check_object(cJSON_GetObjectItem(doc, MP_RK_TOP.tc_counters), SET(tcc_keys), "tc_counters", NULL);
  const cJSON *tr = cJSON_GetObjectItem(doc, MP_RK_TOP.training);
  check_object(tr, SET(training_keys), "training", NULL);
  check_object(cJSON_GetArrayItem(cJSON_GetObjectItem(tr, MP_RK_TRAINING.scale_changes), 0),
               SET(scale_change_keys), "scale_changes[]", NULL);
  check_object(cJSON_GetObjectItem(tr, MP_RK_TRAINING.steps), SET(steps_keys), "steps", NULL);
  check_object(cJSON_GetArrayItem(cJSON_GetObjectItem(tr, MP_RK_TRAINING.step_scales), 0),
               SET(step_scale_keys), "step_scales[]", NULL);
  check_object(cJSON_GetObjectItem(tr, MP_RK_TRAINING.skipped_steps), SET(skipped_keys),
               "skipped_steps", NULL);
  cJSON_Delete(doc);
}

/* ---- every emitted key is read back ---- */

static char *tmp_raw_dir(void) {
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char *dir = NULL;
  assert_true(asprintf(&dir, "%s/mpprof-roundtrip-XXXXXX", base) > 0);
  assert_non_null(mkdtemp(dir));
  return dir;
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  assert_true(cJSON_IsNumber(v));
  return v->valuedouble;
}

/* The raw file's text, for what cJSON cannot give back: a 19-digit time in
 * ns read as a double comes back in steps of 256 ns, the reader's to the
 * nanosecond (exact_member in raw_reader.c). */
static const char *raw_text;

/* The integer of the first member key after top-level key array's start. */
static int64_t exact_in(const char *array, const char *key) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\":", array);
  const char *a = strstr(raw_text, pat);
  assert_non_null(a);
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *v = strstr(a, pat);
  assert_non_null(v);
  return strtoll(v + strlen(pat), NULL, 10);
}

static const char *str(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  assert_true(cJSON_IsString(v));
  return v->valuestring;
}

static bool same_json(const cJSON *a, const cJSON *b) {
  return cJSON_Compare(a, b, true);
}

/* One check per top-level key: the model holds what the document says. */
static void check_top(const char *k, const cJSON *doc, const mpprof_model *m) {
  const mpprof_process *p = &m->procs[0];
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, k);
  if (!strcmp(k, MP_RK_TOP.schema)) {
    assert_string_equal(v->valuestring, MP_SCHEMA_RAW); /* the reader took it */
  } else if (!strcmp(k, MP_RK_TOP.mpprof_version)) {
    assert_string_equal(v->valuestring, MPPROF_VERSION); /* meson's project version */
    assert_string_equal(p->mpprof_version, MPPROF_VERSION);
  } else if (!strcmp(k, MP_RK_TOP.final)) {
    assert_int_equal(p->final, cJSON_IsTrue(v));
  } else if (!strcmp(k, MP_RK_TOP.pid)) {
    assert_int_equal(p->pid, num(doc, k));
  } else if (!strcmp(k, MP_RK_TOP.ppid)) {
    assert_int_equal(p->ppid, num(doc, k));
  } else if (!strcmp(k, MP_RK_TOP.host)) {
    assert_string_equal(p->host, str(doc, k));
  } else if (!strcmp(k, MP_RK_TOP.rank)) {
    assert_true(p->has_rank);
    assert_int_equal(p->rank, 7);
  } else if (!strcmp(k, MP_RK_TOP.world_size)) {
    assert_int_equal(p->world_size, 8);
  } else if (!strcmp(k, MP_RK_TOP.argv)) {
    assert_true(same_json(p->argv, v));
  } else if (!strcmp(k, MP_RK_TOP.start_ns)) {
    assert_int_equal(p->start_ns, num(doc, k));
  } else if (!strcmp(k, MP_RK_TOP.end_ns)) {
    assert_int_equal(p->end_ns, 123456789);
  } else if (!strcmp(k, MP_RK_TOP.incomplete)) {
    assert_true(cJSON_IsTrue(v));
    assert_true(p->incomplete);
  } else if (!strcmp(k, MP_RK_TOP.incomplete_reasons)) {
    assert_true(same_json(p->incomplete_reasons, v));
  } else if (!strcmp(k, MP_RK_TOP.scan)) {
    assert_string_equal(p->scan, "all");
  } else if (!strcmp(k, MP_RK_TOP.sample)) {
    assert_int_equal(p->sample, 2);
  } else if (!strcmp(k, MP_RK_TOP.shadow_max_rel)) {
    assert_true(p->shadow_max_rel == 0x1p-10);
  } else if (!strcmp(k, MP_RK_TOP.forked)) {
    assert_true(p->forked);
  } else if (!strcmp(k, MP_RK_TOP.calls)) {
    assert_int_equal(p->raw_calls, num(doc, k));
    assert_true(p->raw_calls >= 2);
  } else if (!strcmp(k, MP_RK_TOP.failed_calls)) {
    assert_int_equal(p->failed_calls, num(doc, k));
  } else if (!strcmp(k, MP_RK_TOP.not_attributed)) {
    assert_int_equal(p->not_attributed,
                     num(doc, k)); /* 1 in a_site_of_merged_shapes_is_read_back */
  } else if (!strcmp(k, MP_RK_TOP.nvtx)) {
    assert_int_equal(p->nvtx_marks, 16);
    assert_int_equal(p->nvtx_start_end_ranges, 17);
  } else if (!strcmp(k, MP_RK_TOP.device)) {
    assert_string_equal(p->device_name, "NVIDIA H200");
    assert_int_equal(p->cc_major, 9);
    assert_int_equal(p->cc_minor, 0);
  } else if (!strcmp(k, MP_RK_TOP.framework)) {
    assert_string_equal(p->framework, "torch");
    assert_string_equal(p->framework_version, "2.4.0+cu124");
    assert_string_equal(p->backward_marks, "python");
    assert_int_equal(p->n_models, 2);
    assert_string_equal(p->models[0].name, "");
    assert_string_equal(p->models[0].module_class, "Net");
    assert_string_equal(p->models[1].name, "Discriminator");
    assert_string_equal(p->models[1].module_class, "Discriminator");
  } else if (!strcmp(k, MP_RK_TOP.cupti)) {
    assert_string_equal(p->cupti_status, "ok");
    assert_int_equal(p->cupti_dropped, 15);
    const cJSON *b = cJSON_GetObjectItem(p->unattributed_kernels, "cublas");
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(b, MP_RK_UNATTRIBUTED.kernels)), 2);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(b, MP_RK_UNATTRIBUTED.gpu_ns)), 1000);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(b, MP_RK_UNATTRIBUTED.example)),
                        "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
    assert_null(cJSON_GetObjectItem(p->unattributed_kernels, "cudnn"));
    const cJSON *a = cJSON_GetObjectItem(p->unattributed_kernels, "attention");
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(a, MP_RK_UNATTRIBUTED.kernels)), 1);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(a, MP_RK_UNATTRIBUTED.gpu_ns)), 900);
  } else if (!strcmp(k, MP_RK_TOP.tc_counters)) {
    assert_string_equal(p->tc_counters_status, "ok");
    assert_string_equal(p->tc_counters_reason, "why not");
    assert_string_equal(p->tc_counters_sample, "3");
    assert_string_equal(p->tc_counters_chip, "GH100");
    assert_true(
        same_json(p->tc_counters_metrics, cJSON_GetObjectItem(v, MP_RK_TC_COUNTERS.metrics)));
    assert_int_equal(p->tc_counters_passes, 2);
    assert_int_equal(p->tc_counters_ops_profiled, 11);
    assert_int_equal(p->tc_counters_kernels, 12);
    assert_int_equal(p->tc_counters_ops_unmatched, 13);
    assert_int_equal(p->tc_counters_ops_skipped, 14);
  } else if (!strcmp(k, MP_RK_TOP.training)) {
    assert_true(same_json(p->training, v)); /* kept whole: the report reads it (advise.c) */
    assert_true(num(v, MP_RK_TRAINING.loss_scale) == 1024);
  } else if (!strcmp(k, MP_RK_TOP.sites)) {
    assert_int_equal(m->n_sites, cJSON_GetArraySize(v));
  } else if (!strcmp(k, MP_RK_TOP.events)) {
    assert_int_equal(m->n_events, cJSON_GetArraySize(v));
    const cJSON *e = cJSON_GetArrayItem(v, 0);
    check_object(e, SET(event_keys), "event", NULL);
    assert_int_equal(m->events[0].site, 0);
    assert_int_equal(m->events[0].t_ns, exact_in(MP_RK_TOP.events, MP_RK_EVENT.t_ns));
    assert_true(fabs((double)m->events[0].t_ns - num(e, MP_RK_EVENT.t_ns)) <= 128);
    assert_int_equal(m->events[0].dur_ns, num(e, MP_RK_EVENT.dur_ns));
    assert_int_equal(m->events[0].thread, num(e, MP_RK_EVENT.thread));
    assert_int_equal(m->events[0].stream, strtoull(str(e, MP_RK_EVENT.stream), NULL, 0));
    assert_int_equal(m->events[0].call, num(e, MP_RK_EVENT.call));
  } else if (!strcmp(k, MP_RK_TOP.capture)) {
    assert_true(p->has_capture);
    assert_string_equal(p->capture_mode, "steps");
    assert_null(p->capture_nvtx);
    assert_true(p->has_capture_steps);
    assert_int_equal(p->capture_first, 0);
    assert_int_equal(p->capture_last, 5);
    assert_int_equal(p->capture_captured, num(v, MP_RK_CAPTURE.captured));
    assert_int_equal(p->capture_not_started, 1);
    assert_int_equal(p->capture_stopped, 0);
  } else if (!strcmp(k, MP_RK_TOP.timeline)) {
    assert_int_equal(p->max_events, 16);
    assert_int_equal(p->max_ranges, 16);
    assert_int_equal(p->events_dropped, num(v, MP_RK_TIMELINE.events_dropped));
    assert_int_equal(p->ranges_dropped, 0);
    assert_int_equal(p->kernel_events_dropped, 0);
  } else if (!strcmp(k, MP_RK_TOP.ranges)) {
    assert_int_equal(m->n_ranges, 2);
    const cJSON *r = cJSON_GetArrayItem(v, 0);
    assert_string_equal(m->ranges[0].name, str(r, MP_RK_RANGE.name));
    assert_string_equal(m->ranges[0].name, "inner"); /* ended first */
    assert_int_equal(m->ranges[0].depth, 1);
    assert_int_equal(m->ranges[0].thread, num(r, MP_RK_RANGE.thread));
    assert_int_equal(m->ranges[0].start_ns, exact_in(MP_RK_TOP.ranges, MP_RK_RANGE.start_ns));
    assert_int_equal(m->ranges[0].end_ns, exact_in(MP_RK_TOP.ranges, MP_RK_RANGE.end_ns));
    assert_true(m->ranges[1].start_ns <= m->ranges[0].start_ns);
    assert_true(m->ranges[1].end_ns >= m->ranges[0].end_ns);
  } else if (!strcmp(k, MP_RK_TOP.kernel_events)) {
    assert_int_equal(m->n_kevents, 2);
    assert_int_equal(m->kevents[1].site, 0);
    assert_int_equal(m->kevents[1].call, 1);
    assert_int_equal(m->kevents[1].stream, 7);
    assert_int_equal(m->kevents[1].start_ns, 7000);
    assert_int_equal(m->kevents[1].end_ns, 7500);
    assert_string_equal(m->kevents[1].name, "sm90_xmma_gemm_f16f16_f32f32");
  } else if (!strcmp(k, MP_RK_TOP.unprofiled)) {
    assert_null(v); /* a profiled process's file: none (an_unprofiled_note_is_read_back) */
    assert_null(p->unprofiled);
  } else {
    fail_msg("top-level key \"%s\": no read-back check (add one, and read it in raw_reader.c)", k);
  }
}

/* One check per site key that is not identity. */
static void check_site_counter(const char *k, const cJSON *site, const mpprof_site *s) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(site, k);
  if (!strcmp(k, MP_RK_SITE.id)) {
    assert_int_equal(num(site, k), 0); /* events refer to it: checked with them */
  } else if (!strcmp(k, MP_RK_SITE.calls)) {
    assert_int_equal(s->calls, 2);
  } else if (!strcmp(k, MP_RK_SITE.scanned_calls)) {
    assert_int_equal(s->scanned_calls, 1);
  } else if (!strcmp(k, MP_RK_SITE.autotune_calls)) {
    assert_int_equal(s->autotune_calls, 1);
  } else if (!strcmp(k, MP_RK_SITE.not_scanned)) {
    assert_int_equal(s->n_not_scanned, 1);
    assert_string_equal(s->not_scanned[0].name, "sampled_out");
    assert_int_equal(s->not_scanned[0].n, num(v, "sampled_out"));
  } else if (!strcmp(k, MP_RK_SITE.tensors)) {
    const mpprof_role_stats *ts;
    bool owned;
    assert_int_equal(s->n_tensors, 2);
    assert_int_equal(mpprof_site_tensors(s, &ts, &owned), 0);
    assert_string_equal(ts[0].role, "A");
    assert_int_equal(ts[0].st.count, 16);
    assert_int_equal(ts[1].st.zeros, 1);
    if (owned) mpprof_role_stats_free((mpprof_role_stats *)ts, s->n_tensors);
  } else if (!strcmp(k, MP_RK_SITE.gpu_ns)) {
    assert_true(s->has_gpu_ns);
    assert_int_equal(s->gpu_ns, 1500);
  } else if (!strcmp(k, MP_RK_SITE.kernels)) {
    assert_int_equal(s->n_kernels, 1);
    const mpprof_kernel *kn = &s->kernels[0];
    const cJSON *kj = cJSON_GetArrayItem(v, 0);
    assert_string_equal(kn->name, str(kj, MP_RK_KERNEL.name));
    assert_int_equal(kn->count, 2);
    assert_int_equal(kn->gpu_ns, 1500);
    assert_int_equal(kn->counters_tc, 1);                             /* tc, tc_source */
    assert_string_equal(str(kj, MP_RK_KERNEL.tc_source), "counters"); /* the only source */
    assert_int_equal(kn->tc_profiled, 1);
    assert_int_equal(kn->n_tc_values, 2);
    assert_true(kn->tc_values[0] == 12.5 && kn->tc_values[1] == 3.0);
  } else if (!strcmp(k, MP_RK_SITE.fp8_scale_values)) {
    const mpprof_fp8_value *sc = mpprof_site_fp8(s)->v;
    assert_true(sc[0].read == 2 && sc[0].min == 2 && sc[0].max == 2);
    assert_true(sc[1].read == 0 && sc[1].unread == 2);
    assert_int_equal(sc[2].read + sc[2].unread, 0);
    assert_int_equal(num(cJSON_GetObjectItemCaseSensitive(v, "B"), MP_RK_FP8_VALUE.unread), 2);
  } else if (!strcmp(k, MP_RK_SITE.amax_D)) {
    const mpprof_fp8_value *amax = &mpprof_site_fp8(s)->v[MP_FP8_ROW_amax_D];
    assert_true(amax->read == 2 && amax->max == 4096 && amax->min == 4096);
    assert_int_equal(num(v, MP_RK_FP8_VALUE.read), 2);
  } else if (!strcmp(k, MP_RK_SITE.amax_aux)) {
    const mpprof_fp8_value *amax = &mpprof_site_fp8(s)->v[MP_FP8_ROW_amax_aux];
    const mpprof_fp8_value *scale = &mpprof_site_fp8(s)->v[MP_FP8_ROW_aux];
    assert_true(amax->read == 2 && amax->max == 16 && amax->min == 16);
    assert_true(scale->read == 2 && scale->max == 0.0625);
    assert_int_equal(num(v, MP_RK_FP8_VALUE.read), 2);
  } else if (!strcmp(k, MP_RK_SITE.ptr_align)) {
    assert_int_equal(s->ptr_align, num(site, k));
  } else if (!strcmp(k, MP_RK_SITE.shadow)) {
    assert_non_null(s->shadow);
    assert_int_equal(s->shadow->calls, num(v, MP_RK_SHADOW.calls));
    assert_int_equal(s->shadow->skipped[4],
                     2); /* MP_RAW_SHADOW_SKIPPED row 4: shadow_unsupported */
    assert_int_equal(
        num(cJSON_GetObjectItemCaseSensitive(v, MP_RK_SHADOW.skipped), "shadow_unsupported"), 2);
  } else if (!strcmp(k, MP_RK_SITE.ranks)) {
    assert_int_equal(s->n_ranks, 1); /* report only: made from the process's rank */
    assert_string_equal(s->ranks[0].name, "7");
  } else {
    fail_msg("SITE key \"%s\": no read-back check (add one, and read it in raw_reader.c)", k);
  }
}

/* A checkpoint formats the timeline lists (most of a long run's file) after
 * it releases the site lock: a 31 MB file held the lock, and with it every
 * scanned call of the program, for 0.4-0.6 s. Under the lock: up to the
 * sites; the events, NVTX ranges and kernel events after it. */
static void the_timeline_is_formatted_outside_the_site_lock(void **state) {
  (void)state;
  int site;
  char *doc = render_everything(&site);
  const char *events = strstr(doc, "\"events\":[");
  assert_non_null(events);
  assert_non_null(strstr(events, "\"ranges\":[{"));
  assert_non_null(strstr(events, "\"kernel_events\":[{"));
  assert_true(mpp_raw_render_locked_len() > 0);
  assert_true(mpp_raw_render_locked_len() <= (size_t)(events - doc));
  free(doc);
}

static void every_emitted_key_is_read_back(void **state) {
  (void)state;
  int site;
  char *text = render_everything(&site);
  char *dir = tmp_raw_dir(), *path = NULL;
  assert_true(asprintf(&path, "%s/node-1.json", dir) > 0);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  cJSON *doc = cJSON_Parse(text);
  raw_text = text;
  assert_non_null(doc);

  mpprof_model m;
  mpprof_model_init(&m);
  assert_int_equal(mpprof_read_raw_file(&m, path, stderr), 0);
  assert_int_equal(m.n_procs, 1);
  assert_int_equal(m.n_sites, 1);

#define X(name, json, ...) check_top(json, doc, &m);
  MP_RAW_TOP(X)
#undef X

  const cJSON *sj = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, MP_RK_TOP.sites), 0);
  const mpprof_site *s = &m.sites[0];
  /* The site key: through the report's identity, value by value. */
  cJSON *id = cJSON_Parse(s->key);
  assert_non_null(id);
  /* shapes_merged: only in a site of merged shapes (a_site_of_merged_shapes_is_read_back) */
  for (const char *const *k = mp_raw_identity_keys; *k; k++) {
    if (!**k || !strcmp(*k, MP_RK_SITE.shapes_merged)) continue;
    const cJSON *want = cJSON_GetObjectItemCaseSensitive(sj, *k);
    assert_non_null(want);
    if (!same_json(cJSON_GetObjectItemCaseSensitive(id, *k), want))
      fail_msg("site key \"%s\" is not read back into the site's identity", *k);
  }
  int n_identity = 0;
  for (const char *const *k = mp_raw_identity_keys; *k; k++)
    n_identity += **k != 0 && strcmp(*k, MP_RK_SITE.shapes_merged);
  assert_int_equal(cJSON_GetArraySize(id), n_identity); /* nothing else is identity */
  cJSON_Delete(id);
  /* ... and the fields the report computes with. */
  assert_string_equal(s->api, "cublasLtMatmul");
  assert_string_equal(s->op, "conv_fwd");
  assert_string_equal(s->layer, "enc.fc1");
  assert_string_equal(s->module_class, "Linear");
  assert_int_equal(s->scope_phase, MPPROF_PHASE_BACKWARD);
  assert_int_equal(s->m, 4);
  assert_int_equal(s->batch, 2);
  assert_int_equal(s->lda, 5);
  assert_int_equal(s->ldb, 6);
  assert_int_equal(s->ldc, 7);
  assert_int_equal(s->ldd, 8);
  assert_int_equal(s->transa, 'T');
  assert_int_equal(s->transb, 'N');
  assert_non_null(s->conv);
  assert_int_equal(s->conv->dims[4], 6);
  assert_int_equal(s->conv->groups, 2);
  assert_int_equal(s->conv->dil[1], 3);
  assert_int_equal(s->conv->pad[0], 1); /* after the depth's in the arrays */
  assert_int_equal(s->conv->stride[0], 2);
  assert_int_equal(s->conv->d, 5);
  assert_int_equal(s->conv->t, 2);
  assert_int_equal(s->conv->pad_d, 4);
  assert_int_equal(s->conv->stride_d, 2);
  assert_int_equal(s->conv->dil_d, 7);
  assert_int_equal(s->n_types, 4);
  assert_int_equal(s->types[1].dtype, MP_BF16);
  assert_string_equal(s->compute_type, "32F");
  assert_string_equal(s->scale_type, "fp32");
  assert_string_equal(s->math_mode, "TF32_TENSOR_OP+DISALLOW_REDUCED_PRECISION_REDUCTION");
  assert_string_equal(s->epilogue, "BIAS");
  assert_string_equal(s->conv_math_type, "TENSOR_OP_MATH");
  assert_int_equal(s->fp8_scales, 127);
  assert_true(s->fast_accum);
#define X(name, json, ...) check_site_counter(json, sj, s);
  MP_RAW_SITE_COUNTERS(X)
#undef X

  mpprof_model_free(&m);
  cJSON_Delete(doc);
  free(text);
  raw_text = NULL;
  unlink(path);
  rmdir(dir);
  free(path);
  free(dir);
}

/* Past MPPROF_MAX_SITES (1, its reserve 1): a new shape's site has its
 * shapes merged (shapes_merged, m/n/k/batch null, no lds, no conv), and a
 * call of a new key beyond the reserve is in no site (not_attributed). Both
 * are read back. */
static void a_site_of_merged_shapes_is_read_back(void **state) {
  (void)state;
  mpp_sites_reset();
  mpp_capture_reset_counts();
  mpp_cfg.capture = (mp_capture){.mode = MP_CAPTURE_ALL};
  mpp_cfg.scan = MPP_SCAN_ALL;
  mpp_cfg.sample = 1;
  mpp_cfg.max_sites = 1;
  mpp_cfg.max_events = 16;
  mpp_op op;
  for (int i = 0; i < 3; i++) {
    full_op(&op);
    op.m = 4 + i; /* a new shape each: the first in a site, the next two merged */
    mpp_call c;
    mpp_call_begin(&c, &op);
    mpp_call_end(&c, &op, true);
  }
  full_op(&op);
  op.api = "cublasGemmEx"; /* a new key past the reserve: in no site */
  mpp_call c;
  mpp_call_begin(&c, &op);
  assert_int_equal(c.site, -1);
  mpp_call_end(&c, &op, true);
  size_t len = 0;
  char *text = mpp_raw_render(true, &len);
  assert_non_null(text);
  cJSON *doc = cJSON_Parse(text);
  assert_non_null(doc);
  assert_int_equal(num(doc, MP_RK_TOP.not_attributed), 1);
  assert_int_equal(num(doc, MP_RK_TOP.calls), 4);
  const cJSON *sj = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, MP_RK_TOP.sites), 1);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sj, MP_RK_SITE.shapes_merged)));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(sj, MP_RK_SITE.m)));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(sj, MP_RK_SITE.batch)));
  assert_null(cJSON_GetObjectItem(sj, MP_RK_SITE.lda));
  assert_null(cJSON_GetObjectItem(sj, MP_RK_SITE.conv));
  assert_int_equal(num(sj, MP_RK_SITE.calls), 2);
  assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, MP_RK_TOP.sites), 0),
                                  MP_RK_SITE.shapes_merged));

  char *dir = tmp_raw_dir(), *path = NULL;
  assert_true(asprintf(&path, "%s/node-1.json", dir) > 0);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  mpprof_model m;
  mpprof_model_init(&m);
  assert_int_equal(mpprof_read_raw_file(&m, path, stderr), 0);
  assert_int_equal(m.n_sites, 2);
  assert_int_equal(m.procs[0].not_attributed, 1);
  const mpprof_site *merged = m.sites[0].shapes_merged ? &m.sites[0] : &m.sites[1];
  const mpprof_site *plain = merged == &m.sites[0] ? &m.sites[1] : &m.sites[0];
  assert_true(merged->shapes_merged && !plain->shapes_merged);
  assert_int_equal(merged->calls, 2);
  assert_int_equal(merged->m, 0);
  assert_null(merged->conv);
  assert_int_equal(plain->m, 4);
  cJSON *id = cJSON_Parse(merged->key);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(id, MP_RK_SITE.shapes_merged))); /* identity */
  cJSON_Delete(id);
  mpprof_model_free(&m);
  cJSON_Delete(doc);
  free(text);
  unlink(path);
  rmdir(dir);
  free(path);
  free(dir);
}

/* The raw file an exec writes for an image it starts without mpprof
 * (mpp_raw_note_unprofiled): every key declared, read back by the report's
 * reader as a finished process with no sites, its argv (quotes and control
 * characters escaped, bytes that are not UTF-8 replaced as the raw writer
 * replaces them: one JSON writer) and why; an argument past the note's room
 * is left out whole. */
static void an_unprofiled_note_is_read_back(void **state) {
  (void)state;
  char *dir = tmp_raw_dir(), *raw = NULL;
  assert_true(asprintf(&raw, "%s/raw", dir) > 0);
  assert_int_equal(mkdir(raw, 0777), 0);
  snprintf(mpp_cfg.out_dir, sizeof mpp_cfg.out_dir, "%s", dir);
  char big[600];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  char *const argv[] = {"train", "--tag=\"a\"\tb", "caf\xe9 \xff", big, NULL};
  const char why[] = "the environment it was started with does not preload libmpprof";
  char name[128];
  /* of another process (a posix_spawn child): its pid and parent as given */
  int pid = (int)getpid() + 1000000, ppid = (int)getpid();
  assert_int_equal(mpp_raw_note_unprofiled(pid, ppid, argv, why, name, sizeof name), 0);
  char *path = NULL;
  assert_true(asprintf(&path, "%s/%s", raw, name) > 0);
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char text[1024];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char valid[1024];
  memcpy(valid, text, n + 1);
  assert_int_equal(mpp_utf8_sanitize(valid, n), 0); /* the file itself is UTF-8 */
  cJSON *doc = cJSON_Parse(text);
  assert_non_null(doc);
  for (const cJSON *c = doc->child; c; c = c->next)
    if (!in_set(SET(top_keys), c->string))
      fail_msg("the note emits top-level key \"%s\", which raw_format.h does not declare",
               c->string);
  assert_string_equal(str(doc, MP_RK_TOP.unprofiled), why);
  mpprof_model m;
  mpprof_model_init(&m);
  assert_int_equal(mpprof_read_raw_file(&m, path, stderr), 0);
  assert_int_equal(m.n_procs, 1);
  assert_int_equal(m.n_sites, 0);
  const mpprof_process *p = &m.procs[0];
  assert_string_equal(p->unprofiled, why);
  assert_true(p->final);
  assert_int_equal(p->pid, pid);
  assert_int_equal(p->ppid, ppid);
  assert_int_equal(cJSON_GetArraySize(p->argv), 3);
  assert_string_equal(cJSON_GetArrayItem(p->argv, 1)->valuestring, argv[1]);
  char replaced[] = "caf? ?";
  replaced[3] = replaced[5] = MPP_UTF8_REPLACEMENT;
  assert_string_equal(cJSON_GetArrayItem(p->argv, 2)->valuestring, replaced);
  mpprof_model_free(&m);
  mpp_raw_note_drop(name);
  assert_int_equal(access(path, F_OK), -1); /* the exec failed: the note is gone */
  cJSON_Delete(doc);
  mpp_cfg.out_dir[0] = '\0';
  assert_int_equal(rmdir(raw), 0);
  assert_int_equal(rmdir(dir), 0);
  free(path);
  free(raw);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_emitted_key_is_declared_and_every_declared_key_emitted),
      cmocka_unit_test(every_emitted_key_is_read_back),
      cmocka_unit_test(an_unprofiled_note_is_read_back),
      cmocka_unit_test(the_timeline_is_formatted_outside_the_site_lock),
      cmocka_unit_test(a_site_of_merged_shapes_is_read_back),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
