/* End to end, under simcuda: `mpprof --shadow=1` on mlp_train (fp32) measures
 * per layer the error fp16, bf16 and the fp8 recipes would cause, and the
 * program's output is the same with and without shadow execution; on
 * conv_train its convolutions are measured too.
 *
 * Environment (set by meson): MPP_MPPROF, MPP_MLP_TRAIN, MPP_SIMCUDA, MPP_WORKDIR,
 * MPP_CONV_TRAIN (where cuDNN's stand-in is built), MPP_TESTPROG (mpp_testprog). */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "sim_run.h"

static const char *mpprof, *mlp_train, *conv_train, *testprog;

static char *mlp_argv[] = {NULL, "--steps", "3", NULL};

/* Run mlp_train under `mpprof -o dir OPTS`; returns its stdout. */
static char *profiled(const char *dir, const char *opt) {
  char *argv[] = {(char *)mpprof, "-o",      (char *)dir, (char *)opt, "--",
                  mlp_argv[0],    "--steps", "3",         NULL};
  if (!opt) memmove(&argv[3], &argv[4], 5 * sizeof argv[0]);
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  return r.out;
}

static cJSON *load_json(const char *path) {
  char *s = slurp(path);
  cJSON *doc = cJSON_Parse(s);
  free(s);
  assert_non_null(doc);
  return doc;
}

static cJSON *load_raw(const char *dir) {
  char raw[4300];
  snprintf(raw, sizeof raw, "%s/raw", dir);
  DIR *d = opendir(raw);
  assert_non_null(d);
  struct dirent *e;
  cJSON *doc = NULL;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".json")) {
      char p[4600];
      snprintf(p, sizeof p, "%s/%s", raw, e->d_name);
      assert_null(doc); /* one process */
      doc = load_json(p);
    }
  closedir(d);
  assert_non_null(doc);
  return doc;
}

static cJSON *site_of(cJSON *raw, const char *layer) {
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(raw, "sites")) {
    if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "layer")), layer)) return s;
  }
  fail_msg("no site of layer %s", layer);
  return NULL;
}

static cJSON *cand(cJSON *site, const char *name) {
  cJSON *c = cJSON_GetObjectItem(
      cJSON_GetObjectItem(cJSON_GetObjectItem(site, "shadow"), "candidates"), name);
  if (!c) fail_msg("no shadow candidate %s", name);
  return c;
}

static double field(cJSON *c, const char *k) {
  cJSON *v = cJSON_GetObjectItem(c, k);
  assert_non_null(v);
  return cJSON_IsNull(v) ? INFINITY : v->valuedouble;
}

static void output_is_identical_with_and_without_shadow(void **state) {
  (void)state;
  result plain = run(mlp_argv, NULL);
  assert_int_equal(plain.status, 0);
  char *without = profiled(outdir("noshadow"), NULL);
  char *with = profiled(outdir("shadow"), "--shadow=1");
  assert_string_equal(without, plain.out);
  assert_string_equal(with, plain.out);
  assert_non_null(strstr(with, "checksum"));
  free(plain.out);
  free(without);
  free(with);
}

static void every_gemm_site_is_measured_fc1_overflows_fp16_and_fc3_fits_it(void **state) {
  (void)state;
  const char *dir = outdir("shadow1");
  free(profiled(dir, "--shadow=1"));
  cJSON *raw = load_raw(dir);
  cJSON *s;
  int n = 0;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(raw, "sites")) {
    cJSON *sh = cJSON_GetObjectItem(s, "shadow");
    assert_non_null(sh);
    /* every call of every site (3 steps, --shadow=1) */
    assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(sh, "calls")),
                     (int)cJSON_GetNumberValue(cJSON_GetObjectItem(s, "calls")));
    /* fp32 accumulation of the fp32 operands: the program's own error is tiny */
    assert_true(field(cand(s, "current"), "rel_l2") < 1e-6);
    n++;
  }
  assert_true(n >= 7);
  cJSON *fc1 = site_of(raw, "step/mlp/fc1/fwd");
  assert_true(field(cand(fc1, "fp16"), "nonfinite") > 0); /* outputs ~1e5 > 65504 */
  assert_true(isinf(field(cand(fc1, "fp16"), "rel_l2")));
  assert_true(field(cand(fc1, "bf16"), "rel_l2") < 0x1p-7);
  assert_true(field(cand(fc1, "bf16"), "nonfinite") == 0);
  cJSON *fc3 = site_of(raw, "step/mlp/fc3/fwd");
  assert_true(field(cand(fc3, "fp16"), "rel_l2") < 0x1p-10);
  assert_true(field(cand(fc3, "fp16"), "nonfinite") == 0);
  /* delayed scaling: the first call seeds the history, the other two are measured */
  assert_int_equal((int)field(cand(fc3, "fp8_e4m3_delayed"), "calls"), 2);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cand(fc3, "fp16"), "rel_l2_samples")), 3);
  cJSON_Delete(raw);
}

static cJSON *report_layer(cJSON *rep, const char *name) {
  cJSON *l;
  cJSON_ArrayForEach(l, cJSON_GetObjectItem(rep, "layers")) {
    if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(l, "name")), name)) return l;
  }
  fail_msg("no layer %s in report.json", name);
  return NULL;
}

static const char *recommended(cJSON *l) {
  return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(l, "advice"), "recommended"));
}

static cJSON *load_report(const char *dir) {
  char p[4300];
  snprintf(p, sizeof p, "%s/report.json", dir);
  return load_json(p);
}

static void the_report_shows_measured_error_per_layer_and_the_verdict_uses_it(void **state) {
  (void)state;
  const char *dir = outdir("report");
  free(profiled(dir, "--shadow=1"));
  cJSON *rep = load_report(dir);
  cJSON *sum = cJSON_GetObjectItem(rep, "summary");
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(sum, "verdict_basis")),
                      "range_and_measured_error");
  assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(sum, "shadow_max_rel")) == 0x1p-8);
  cJSON *fc1 = report_layer(rep, "step/mlp/fc1"), *fc3 = report_layer(rep, "step/mlp/fc3");
  cJSON *sh1 = cJSON_GetObjectItem(fc1, "shadow");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(cand(fc1, "fp16"), "rel_l2")));
  assert_true(field(cand(fc1, "fp16"), "nonfinite") > 0);
  assert_string_equal(recommended(fc1), "bf16");
  assert_string_equal(recommended(fc3), "fp16");
  assert_true(field(cand(fc3, "fp16"), "median_rel_l2") <= field(cand(fc3, "fp16"), "rel_l2"));
  assert_non_null(cJSON_GetStringValue(cJSON_GetObjectItem(sh1, "best_fp8")));
  cJSON_Delete(rep);

  /* A limit below every candidate's error: nothing narrower than fp32 stands. */
  dir = outdir("report_strict");
  char *argv[] = {(char *)mpprof,     "-o",   (char *)dir, "--shadow=1",
                  "--shadow-max-rel", "1e-6", "--",        mlp_argv[0],
                  "--steps",          "3",    NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  rep = load_report(dir);
  assert_string_equal(recommended(report_layer(rep, "step/mlp/fc3")), "fp32");
  assert_string_equal(recommended(report_layer(rep, "step/mlp/fc1")), "fp32");
  cJSON_Delete(rep);
  /* ... and the plan follows the measured verdicts: no layer goes to bf16 */
  char plan_path[4300];
  snprintf(plan_path, sizeof plan_path, "%s/plan.json", dir);
  cJSON *plan = load_json(plan_path), *best = cJSON_GetObjectItem(plan, "recommended");
  assert_int_equal((int)cJSON_GetNumberValue(cJSON_GetObjectItem(best, "layers_fit")), 0);
  assert_non_null(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(best, "summary")),
                         "no autocast: 0 of 3 layers fit"));
  cJSON_Delete(plan);

  /* The raw files keep the limit: `mpprof report DIR` judges as the run did,
   * and `--shadow-max-rel` there judges anew. */
  char *again[] = {(char *)mpprof, "report", (char *)dir, NULL};
  r = run(again, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  rep = load_report(dir);
  assert_string_equal(recommended(report_layer(rep, "step/mlp/fc3")), "fp32");
  assert_true(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "summary"),
                                                       "shadow_max_rel")) == 1e-6);
  cJSON_Delete(rep);
  char *relaxed[] = {(char *)mpprof, "report", "--shadow-max-rel", "0.00390625", (char *)dir, NULL};
  r = run(relaxed, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  rep = load_report(dir);
  assert_string_equal(recommended(report_layer(rep, "step/mlp/fc3")), "fp16");
  cJSON_Delete(rep);
  char *bad[] = {(char *)mpprof, "report", "--shadow-max-rel", "0", (char *)dir, NULL};
  r = run(bad, NULL);
  assert_int_equal(r.status, 2);
  free(r.out);
}

/* The fields of the CSV row whose first field is `key` (RFC 4180 quotes),
 * or of the header row (key NULL); NULL-terminated, malloc'd. */
static char **csv_row(const char *csv, const char *key) {
  for (const char *row = csv; *row;) {
    char **f = calloc(128, sizeof *f);
    assert_non_null(f);
    size_t n = 0;
    const char *p = row;
    for (;;) {
      char buf[4096];
      size_t len = 0;
      bool q = false;
      for (; *p && (q || (*p != ',' && *p != '\r')); p++) {
        if (*p == '"' && !(q && p[1] == '"'))
          q = !q;
        else if (len < sizeof buf - 1)
          buf[len++] = *p == '"' ? *p++ : *p;
      }
      buf[len] = 0;
      assert_true(n < 127);
      f[n++] = strdup(buf);
      if (*p != ',') break;
      p++;
    }
    if (!key || !strcmp(f[0], key)) return f;
    for (size_t i = 0; i < n; i++)
      free(f[i]);
    free(f);
    row = *p ? p + 2 : p;
  }
  fail_msg("no CSV row %s", key);
  return NULL;
}

static void csv_free(char **f) {
  for (char **p = f; *p; p++)
    free(*p);
  free(f);
}

/* Field `name` of row (head: the header's fields). */
static const char *csv_at(char **head, char **row, const char *name) {
  for (size_t i = 0; head[i]; i++)
    if (!strcmp(head[i], name)) return row[i];
  fail_msg("no CSV column %s", name);
  return NULL;
}

/* A measured_*_rel_l2 field is report.json's rel_l2 (null: "inf"). */
static void rel_is(const char *fieldv, cJSON *c) {
  assert_non_null(c);
  double want = field(c, "rel_l2");
  if (isinf(want) ? strcmp(fieldv, "inf") != 0 : strtod(fieldv, NULL) != want)
    fail_msg("csv %s, report.json %.17g", fieldv, want);
}

/* The CSV's Measured columns (the page's) against report.json, for every
 * layer and op site of a --shadow run (neither file had them). */
static void the_csv_files_measured_columns_are_report_jsons(void **state) {
  (void)state;
  const char *dir = outdir("csv");
  free(profiled(dir, "--shadow=1"));
  cJSON *rep = load_report(dir);
  char p[4300];
  for (int pass = 0; pass < 2; pass++) { /* layers.csv, ops.csv */
    snprintf(p, sizeof p, "%s/%s", dir, pass ? "ops.csv" : "layers.csv");
    char *csv = slurp(p), **head = csv_row(csv, NULL);
    int n = 0, scaled = 0;
    cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItem(rep, pass ? "sites" : "layers")) {
      char key[64];
      if (pass)
        snprintf(key, sizeof key, "%.0f", cJSON_GetNumberValue(cJSON_GetObjectItem(o, "id")));
      else
        snprintf(key, sizeof key, "%s", cJSON_GetStringValue(cJSON_GetObjectItem(o, "name")));
      char **row = csv_row(csv, key);
      cJSON *sh = cJSON_GetObjectItem(o, "shadow");
      if (!cJSON_IsObject(sh)) {
        assert_string_equal(csv_at(head, row, "measured_now_rel_l2"), "");
        csv_free(row);
        continue;
      }
      cJSON *cs = cJSON_GetObjectItem(sh, "candidates");
      rel_is(csv_at(head, row, "measured_now_rel_l2"), cJSON_GetObjectItem(cs, "current"));
      rel_is(csv_at(head, row, "measured_bf16_rel_l2"), cJSON_GetObjectItem(cs, "bf16"));
      bool ls = !strcmp(csv_at(head, row, "measured_fp16_loss_scaled"), "yes");
      scaled += ls;
      cJSON *fp16 = cJSON_GetObjectItem(cs, ls ? "fp16_loss_scaled" : "fp16");
      rel_is(csv_at(head, row, "measured_fp16_rel_l2"), fp16);
      assert_string_equal(csv_at(head, row, "measured_fp16_inputs_rounded"),
                          cJSON_IsTrue(cJSON_GetObjectItem(fp16, "inputs_already_rounded")) ? "yes"
                                                                                            : "no");
      const char *best = csv_at(head, row, "measured_best_fp8");
      if (!pass)
        assert_string_equal(best, cJSON_GetStringValue(cJSON_GetObjectItem(sh, "best_fp8")));
      rel_is(csv_at(head, row, "measured_best_fp8_rel_l2"),
             cJSON_GetObjectItem(pass ? cs : cJSON_GetObjectItem(sh, "fp8_recipes"), best));
      csv_free(row);
      n++;
    }
    assert_true(n >= 3);
    assert_true(scaled > 0); /* fp16 loss-scaled where there are gradients: backward sites */
    if (pass) assert_true(scaled < n);
    csv_free(head);
    free(csv);
  }
  cJSON_Delete(rep);
}

/* fp16 with an applied loss scale of 1024: fc2's weight gradient takes
 * operands that fit fp16 at their scale, but the product needs more (its
 * values flush below 2^-24 at 1024). fp16_loss_scaled casts it at the
 * output's own scale: nothing flushes, the error is fp16's rounding, and the
 * layer keeps its fp16_loss_scale verdict (bf16 before: the candidate was
 * measured at the operands' scales, 0.0044 > 2^-8). */
static void an_output_that_needs_more_scale_than_its_operands_gets_it(void **state) {
  (void)state;
  const char *dir = outdir("fp16_scaled");
  char *argv[] = {(char *)mpprof, "-o",   (char *)dir,    "--shadow=1", "--", mlp_argv[0],
                  "--precision",  "fp16", "--loss-scale", "1024",       NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  cJSON *rep = load_report(dir);
  cJSON *fc2 = report_layer(rep, "step/mlp/fc2");
  assert_string_equal(recommended(fc2), "fp16_loss_scale");
  int flushing = 0;
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(rep, "sites")) {
    if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "layer_name")), "step/mlp/fc2"))
      continue;
    double f16 = field(cand(s, "fp16"), "flushed"),
           scaled = field(cand(s, "fp16_loss_scaled"), "flushed");
    if (f16 > 0.001) { /* the weight gradient: flushes in fp16 at the applied scale */
      flushing++;
      assert_true(scaled == 0);
      assert_true(field(cand(s, "fp16_loss_scaled"), "rel_l2") < 0x1p-11);
    }
  }
  assert_int_equal(flushing, 1);
  cJSON_Delete(rep);
}

static void without_shadow_the_raw_file_has_no_shadow_objects(void **state) {
  (void)state;
  const char *dir = outdir("plain");
  free(profiled(dir, NULL));
  cJSON *raw = load_raw(dir);
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(raw, "sites")) {
    assert_null(cJSON_GetObjectItem(s, "shadow"));
  }
  cJSON_Delete(raw);
  cJSON *rep = load_report(dir);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "summary"),
                                                               "verdict_basis")),
                      "range_only");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(report_layer(rep, "step/mlp/fc3"), "shadow")));
  cJSON_Delete(rep);
}

static void shadow_every_2nd_call(void **state) {
  (void)state;
  const char *dir = outdir("shadow2");
  free(profiled(dir, "--shadow=2"));
  cJSON *raw = load_raw(dir);
  cJSON *fc3 = site_of(raw, "step/mlp/fc3/fwd");
  /* calls 0 and 2 of 3 */
  assert_int_equal(
      (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(fc3, "shadow"), "calls")),
      2);
  cJSON_Delete(raw);
}

/* alpha is read for the shadow even when nothing else needs the pointer mode. */
static void shadow_works_without_scans(void **state) {
  (void)state;
  const char *dir = outdir("scan_none");
  char *argv[] = {(char *)mpprof, "-o",        (char *)dir, "--scan", "none", "--shadow=1",
                  "--",           mlp_argv[0], "--steps",   "3",      NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  cJSON *raw = load_raw(dir);
  cJSON *fc3 = site_of(raw, "step/mlp/fc3/fwd");
  assert_int_equal(
      (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(fc3, "shadow"), "calls")),
      3);
  cJSON_Delete(raw);
}

static const char *need(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) {
    fprintf(stderr, "test_shadow_e2e: %s is not set\n", name);
    exit(2);
  }
  return v;
}

/* conv_train's legacy cuDNN convolutions, forward, backward data and
 * backward filter, are measured as their implicit GEMMs, every call; the
 * program's output does not change. */
static void conv_train_convolutions_are_measured(void **state) {
  (void)state;
  if (!conv_train) skip();
  char *conv_argv[] = {(char *)conv_train, "--steps", "2", NULL};
  result plain = run(conv_argv, NULL);
  assert_int_equal(plain.status, 0);
  const char *dir = outdir("conv");
  char *argv[] = {(char *)mpprof,     "-o",      (char *)dir, "--shadow=1", "--",
                  (char *)conv_train, "--steps", "2",         NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  assert_string_equal(r.out, plain.out);
  cJSON *raw = load_raw(dir);
  int seen[3] = {0, 0, 0};
  static const char *const apis[3] = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData",
                                      "cudnnConvolutionBackwardFilter"};
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(raw, "sites")) {
    const char *api = cJSON_GetStringValue(cJSON_GetObjectItem(s, "api"));
    int kind = -1;
    for (int i = 0; i < 3; i++)
      if (!strcmp(api, apis[i])) kind = i;
    if (kind < 0) continue;
    seen[kind]++;
    cJSON *sh = cJSON_GetObjectItem(s, "shadow");
    assert_non_null(sh);
    assert_int_equal((int)field(sh, "calls"), 2);
    double cur = field(cand(s, "current"), "rel_l2"), f16 = field(cand(s, "fp16"), "rel_l2");
    /* fp32's own rounding against the fp64 reference; fp16's 11 bits */
    if (!(cur > 0 && cur < 1e-6)) fail_msg("%s: current %g", api, cur);
    if (!(f16 > 1e-5 && f16 < 1.0 / 256)) fail_msg("%s: fp16 %g", api, f16);
    assert_true(field(cand(s, "bf16"), "rel_l2") > f16);
    assert_non_null(cand(s, kind ? "fp8_e5m2_current" : "fp8_e4m3_current"));
    assert_non_null(cand(s, "mxfp8_e4m3"));
  }
  assert_int_equal(seen[0], 2); /* conv1, conv2 */
  assert_true(seen[1] >= 1 && seen[2] >= 2);
  cJSON_Delete(raw);
  /* cuDNN's default math ran these fp32 convolutions on TF32 kernels
   * (simcuda's engines, as cuDNN 8+ on sm_80+): `current`, measured with the
   * fp32 inputs kept, understates them, and the report says so; with TF32
   * off (NVIDIA_TF32_OVERRIDE=0) its kernels are fp32 and nothing is said. */
  for (int off = 0; off < 2; off++) {
    if (off) {
      static const char *const no_tf32[] = {"NVIDIA_TF32_OVERRIDE=0", NULL};
      free(r.out);
      dir = outdir("conv-no-tf32");
      r = run(argv, no_tf32);
      assert_int_equal(r.status, 0);
    }
    char path[4300];
    snprintf(path, sizeof path, "%s/report.json", dir);
    cJSON *rep = load_json(path);
    int convs = 0;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(rep, "sites")) {
      if (strncmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "api")), "cudnn", 5)) continue;
      convs++;
      const char *u = cJSON_GetStringValue(cJSON_GetObjectItem(s, "current_understated"));
      if (off ? u != NULL : !u || strcmp(u, "tf32_kernels"))
        fail_msg("TF32 %s: current_understated %s", off ? "off" : "on", u ? u : "absent");
    }
    assert_true(convs >= 5);
    cJSON_Delete(rep);
    snprintf(path, sizeof path, "%s/report.html", dir);
    FILE *h = fopen(path, "r");
    assert_non_null(h);
    static char page[1 << 22];
    page[fread(page, 1, sizeof page - 1, h)] = '\0';
    fclose(h);
    assert_int_equal(strstr(page, "its kernels ran TF32") != NULL, !off);
  }
  free(plain.out);
  free(r.out);
}

/* The same site of another run: same layer, op kind and shape. */
static cJSON *twin_site(cJSON *raw, cJSON *site) {
  static const char *const keys[] = {"layer", "op", "m", "n", "k"};
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(raw, "sites")) {
    bool same = true;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0] && same; i++) {
      cJSON *a = cJSON_GetObjectItem(s, keys[i]), *b = cJSON_GetObjectItem(site, keys[i]);
      same = a && b &&
             (cJSON_IsString(a) ? !strcmp(a->valuestring, cJSON_GetStringValue(b))
                                : a->valuedouble == b->valuedouble);
    }
    if (same) return s;
  }
  return NULL;
}

/* conv_train through the cuDNN backend API (PyTorch's path): each
 * convolution of the graph is measured, with the numbers the legacy API's
 * calls of the same convolutions on the same data give, to the last bit (the
 * geometry comes from other descriptors: the filter's strides, the group
 * count from the channels, alpha and the mode from the backend attributes);
 * the program's output does not change. With conv2 of one group, of 4
 * groups and depthwise (16 groups of one channel). */
static void backend_convolutions_are_measured_as_the_legacy_ones(void **state) {
  (void)state;
  if (!conv_train) skip();
  static const char *const group_counts[] = {"1", "4", "16"};
  for (size_t gi = 0; gi < sizeof group_counts / sizeof group_counts[0]; gi++) {
    char *groups = (char *)group_counts[gi];
    char *plain_argv[] = {(char *)conv_train, "--api", "backend", "--steps", "2",
                          "--groups",         groups,  NULL};
    result plain = run(plain_argv, NULL);
    assert_int_equal(plain.status, 0);
    char name[32];
    snprintf(name, sizeof name, "conv-backend-g%s", groups);
    char *dirs[2] = {strdup(outdir(name)), NULL}; /* outdir's buffer is reused */
    char *argv[] = {(char *)mpprof,
                    "-o",
                    (char *)dirs[0],
                    "--shadow=1",
                    "--",
                    (char *)conv_train,
                    "--api",
                    "backend",
                    "--steps",
                    "2",
                    "--groups",
                    groups,
                    NULL};
    result r = run(argv, NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, plain.out);
    free(r.out);
    snprintf(name, sizeof name, "conv-legacy-g%s", groups);
    dirs[1] = strdup(outdir(name));
    argv[2] = dirs[1];
    argv[7] = "legacy";
    r = run(argv, NULL);
    assert_int_equal(r.status, 0);
    free(r.out);
    cJSON *backend = load_raw(dirs[0]), *legacy = load_raw(dirs[1]);
    int measured = 0;
    cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(backend, "sites")) {
      assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(s, "api")),
                          "cudnnBackendExecute");
      cJSON *sh = cJSON_GetObjectItem(s, "shadow"), *twin = twin_site(legacy, s);
      assert_non_null(sh);
      assert_non_null(twin);
      if (field(sh, "calls") != 2)
        fail_msg("--groups %s: %s %s measured %d calls", groups,
                 cJSON_GetStringValue(cJSON_GetObjectItem(s, "layer")),
                 cJSON_GetStringValue(cJSON_GetObjectItem(s, "op")), (int)field(sh, "calls"));
      char *a = cJSON_PrintUnformatted(sh),
           *b = cJSON_PrintUnformatted(cJSON_GetObjectItem(twin, "shadow"));
      assert_string_equal(a, b);
      free(a);
      free(b);
      measured++;
    }
    assert_int_equal(measured, 5); /* conv1: fwd, bwd filter; conv2: fwd, bwd data, bwd filter */
    cJSON_Delete(backend);
    cJSON_Delete(legacy);
    free(dirs[0]);
    free(dirs[1]);
    free(plain.out);
  }
}

/* A call whose every output reads an operand's Inf has nothing to measure:
 * it is counted as no_finite_reference, not as a measured call whose error
 * reads 0 (which would pass any limit and could make an fp8 recipe the
 * layer's best). The layer beside it is measured as usual. */
static void calls_with_no_finite_reference_are_not_measured(void **state) {
  (void)state;
  if (!testprog) skip();
  const char *dir = outdir("infref");
  char *argv[] = {(char *)mpprof,   "-o",     (char *)dir, "--shadow=1", "--",
                  (char *)testprog, "infref", NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  cJSON *raw = load_raw(dir);
  cJSON *inf = cJSON_GetObjectItem(site_of(raw, "allinf"), "shadow");
  assert_int_equal((int)field(inf, "calls"), 0);
  assert_int_equal((int)field(cJSON_GetObjectItem(inf, "skipped"), "no_finite_reference"), 2);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(inf, "candidates")), 0);
  cJSON *fin = cJSON_GetObjectItem(site_of(raw, "finite"), "shadow");
  assert_int_equal((int)field(fin, "calls"), 2);
  assert_int_equal((int)field(cand(site_of(raw, "finite"), "fp16"), "calls"), 2);
  cJSON_Delete(raw);
  cJSON *rep = load_report(dir);
  cJSON *sh = cJSON_GetObjectItem(report_layer(rep, "allinf"), "shadow");
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sh, "candidates")), 0);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(sh, "fp8_recipes")), 0);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(sh, "best_fp8")));
  assert_int_equal((int)field(cJSON_GetObjectItem(sh, "skipped"), "no_finite_reference"), 2);
  cJSON_Delete(rep);
}

/* Shadow execution's edge cases (mpp_testprog shadowedge), each against what
 * the hardware computes, not what simcuda's stand-in does (it sums fp16
 * compute in fp32: docs/simcuda.md):
 * - compute type 16F sums in fp16: k = 4096 ones give 2048 (fp16 stops
 *   there), so the call's own error (`current`) is 1/2, for cublasHgemm and
 *   GemmEx with CUBLAS_COMPUTE_16F; the fp16 candidate (fp32 sums) is exact;
 * - k = 0 is no product: counted as empty_product, no candidate, and the
 *   report's cells say why instead of staying empty;
 * - GELU's fp32 zeros (tanh reaching -1) are not flushes: the call's own
 *   fp32 (and bf16) has flushed 0. */
static void shadow_edge_cases_are_measured_as_the_hardware_computes(void **state) {
  (void)state;
  if (!testprog) skip();
  const char *dir = outdir("shadowedge");
  char *argv[] = {(char *)mpprof,   "-o",         (char *)dir, "--shadow=1", "--",
                  (char *)testprog, "shadowedge", NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  cJSON *raw = load_raw(dir);
  const char *f16[] = {"hgemm", "gemmex16f"};
  for (int i = 0; i < 2; i++) {
    cJSON *site = site_of(raw, f16[i]);
    if (field(cand(site, "current"), "rel_l2") != 0.5)
      fail_msg("%s: current rel_l2 %g, want 0.5 (fp16 sums stop at 2048)", f16[i],
               field(cand(site, "current"), "rel_l2"));
    assert_true(field(cand(site, "fp16"), "rel_l2") == 0);
  }
  cJSON *kz = cJSON_GetObjectItem(site_of(raw, "kzero"), "shadow");
  assert_int_equal((int)field(kz, "calls"), 0);
  assert_int_equal((int)field(cJSON_GetObjectItem(kz, "skipped"), "empty_product"), 1);
  assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(kz, "skipped"), "shadow_unsupported"));
  cJSON *gelu = site_of(raw, "gelu");
  assert_int_equal((int)field(cJSON_GetObjectItem(gelu, "shadow"), "calls"), 1);
  if (field(cand(gelu, "current"), "flushed") != 0)
    fail_msg("gelu: current flushed %g, want 0", field(cand(gelu, "current"), "flushed"));
  assert_true(field(cand(gelu, "bf16"), "flushed") == 0);
  cJSON_Delete(raw);
  char html[4300];
  snprintf(html, sizeof html, "%s/report.html", dir);
  char *page = slurp(html);
  assert_non_null(strstr(page, "Not measured: empty_product &times;1 (k = 0"));
  free(page);
}

/* Within rel of want (both +inf, or both 0, count too). */
static void near(double got, double want, double rel, const char *what, const char *cand_name) {
  if (got == want || fabs(got - want) <= rel * fabs(want)) return;
  fail_msg("%s %s: %.17g, combined from the groups %.17g", what, cand_name, got, want);
}

/* mpp_testprog MODE [ARG] plain, then under mpprof -o dir --shadow=1: both
 * exit 0 and print the same. Returns the output (malloc'd). */
static char *shadowed_testprog(const char *dir, const char *mode, const char *arg) {
  char *plain_argv[] = {(char *)testprog, (char *)mode, (char *)arg, NULL};
  result plain = run(plain_argv, NULL);
  assert_int_equal(plain.status, 0);
  char *argv[] = {(char *)mpprof,   "-o",         (char *)dir, "--shadow=1", "--",
                  (char *)testprog, (char *)mode, (char *)arg, NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  assert_string_equal(r.out, plain.out);
  free(r.out);
  return plain.out;
}

/* A grouped convolution (legacy cuDNN, fp32, G groups: mpp_testprog
 * groupconv) is measured as its G implicit GEMMs, whose outputs count as
 * the elements of one: its metrics equal those of the same data run as G
 * one-group convolutions (each measured on its own), combined over all
 * outputs with the double reference sums the program prints per group:
 * rel_l2 = sqrt(sum rel_g^2 * |ref_g|^2 / sum |ref_g|^2), max_rel =
 * max(max_rel_g * max|ref_g|) / max max|ref_g|, flushed by the non-zero
 * counts, nonfinite summed. The candidates that scale by a whole tensor's
 * amax (fp8 current, delayed) are not sums of their groups' and are only
 * required to be there. The program's output does not change under
 * --shadow. Before grouped convolutions were measured, the calls were
 * shadow_unsupported. */
static void grouped_convolutions_are_measured_as_their_groups_combined(void **state) {
  (void)state;
  if (!testprog) skip();
  static const char *const ops[3] = {"fwd", "bwd_data", "bwd_filter"};
  static const char *const cands[] = {"current", "fp16", "bf16", "mxfp8_e4m3", "mxfp8_e5m2"};
  const int group_counts[2] = {2, 8}; /* 8: depthwise, one channel per group */
  for (int gi = 0; gi < 2; gi++) {
    int groups = group_counts[gi];
    char garg[8];
    snprintf(garg, sizeof garg, "%d", groups);
    const char *dir = outdir(groups == 2 ? "groupconv2" : "groupconv8");
    /* bit-identical results, reference sums included */
    result plain = {.out = shadowed_testprog(dir, "groupconv", garg)};
    cJSON *raw = load_raw(dir);
    for (int kind = 0; kind < 3; kind++) {
      double sumsq[8], maxabs[8], nonzero[8];
      for (int g = 0; g < groups; g++) {
        char key[64];
        snprintf(key, sizeof key, "ref %s %d ", ops[kind], g);
        const char *line = strstr(plain.out, key);
        assert_non_null(line);
        assert_int_equal(
            sscanf(line + strlen(key), "%lf %lf %lf", &sumsq[g], &maxabs[g], &nonzero[g]), 3);
      }
      char layer[64];
      snprintf(layer, sizeof layer, "grouped/%s", ops[kind]);
      cJSON *site = site_of(raw, layer), *sh = cJSON_GetObjectItem(site, "shadow");
      assert_non_null(sh);
      if (field(sh, "calls") != 1)
        fail_msg("%s (%d groups): %d calls measured, skipped %s", layer, groups,
                 (int)field(sh, "calls"),
                 cJSON_PrintUnformatted(cJSON_GetObjectItem(sh, "skipped")));
      for (size_t c = 0; c < sizeof cands / sizeof cands[0]; c++) {
        double se = 0, sr = 0, maxd = 0, maxr = 0, fl = 0, nz = 0, nonfinite = 0;
        for (int g = 0; g < groups; g++) {
          char split[64];
          snprintf(split, sizeof split, "split/g%d/%s", g, ops[kind]);
          cJSON *one = site_of(raw, split);
          assert_int_equal((int)field(cJSON_GetObjectItem(one, "shadow"), "calls"), 1);
          cJSON *m = cand(one, cands[c]);
          double rel = field(m, "rel_l2");
          se += rel * rel * sumsq[g];
          sr += sumsq[g];
          if (field(m, "max_rel") * maxabs[g] > maxd) maxd = field(m, "max_rel") * maxabs[g];
          if (maxabs[g] > maxr) maxr = maxabs[g];
          fl += field(m, "flushed") * nonzero[g];
          nz += nonzero[g];
          nonfinite += field(m, "nonfinite");
        }
        cJSON *m = cand(site, cands[c]);
        char what[96];
        snprintf(what, sizeof what, "%s (%d groups) rel_l2", layer, groups);
        near(field(m, "rel_l2"), sqrt(se / sr), 1e-9, what, cands[c]);
        snprintf(what, sizeof what, "%s (%d groups) max_rel", layer, groups);
        near(field(m, "max_rel"), maxd / maxr, 1e-9, what, cands[c]);
        snprintf(what, sizeof what, "%s (%d groups) flushed", layer, groups);
        near(field(m, "flushed"), fl / nz, 1e-9, what, cands[c]);
        snprintf(what, sizeof what, "%s (%d groups) nonfinite", layer, groups);
        near(field(m, "nonfinite"), nonfinite, 0, what, cands[c]);
      }
      /* fp32 against fp64: measured, and not nothing */
      assert_true(field(cand(site, "current"), "rel_l2") > 0);
      assert_non_null(cand(site, kind ? "fp8_e5m2_current" : "fp8_e4m3_current"));
    }
    cJSON_Delete(raw);
    free(plain.out);
  }
}

/* 3-D convolutions (legacy cuDNN, Nd descriptors, 5-D tensors, 2 groups:
 * mpp_testprog conv3d), forward, backward data and backward filter, are
 * measured as their implicit GEMMs, every call, and report.json gives their
 * layer a measured error; through a cuDNN backend graph the same
 * convolutions on the same data measure the same, to the last bit; one of
 * height 1 (NDHWC, convolution mode)
 * measures to the last bit what the same data as a 2-D convolution over
 * (D, W) measures (its implicit GEMMs are that one's: the depth's padding,
 * stride and dilation and the NDHWC filter are read where they belong). The
 * program's output does not change under --shadow. Before, each 3-D call
 * was skipped as unsupported ("not measured"). */
static void convolutions_in_3d_are_measured(void **state) {
  (void)state;
  if (!testprog) skip();
  static const char *const ops[3] = {"fwd", "bwd_data", "bwd_filter"};
  const char *dir = outdir("conv3d");
  free(shadowed_testprog(dir, "conv3d", NULL));
  cJSON *raw = load_raw(dir), *rep = load_report(dir);
  for (int kind = 0; kind < 3; kind++) {
    char layer[64];
    snprintf(layer, sizeof layer, "conv3d/%s", ops[kind]);
    cJSON *site = site_of(raw, layer), *sh = cJSON_GetObjectItem(site, "shadow");
    assert_non_null(sh);
    if (field(sh, "calls") != 1)
      fail_msg("%s: %d calls measured, skipped %s", layer, (int)field(sh, "calls"),
               cJSON_PrintUnformatted(cJSON_GetObjectItem(sh, "skipped")));
    double cur = field(cand(site, "current"), "rel_l2"), f16 = field(cand(site, "fp16"), "rel_l2");
    if (!(cur > 0 && cur < 1e-6)) fail_msg("%s: current %g", layer, cur);
    if (!(f16 > 1e-5 && f16 < 1.0 / 256)) fail_msg("%s: fp16 %g", layer, f16);
    assert_true(field(cand(site, "bf16"), "rel_l2") > f16);
    assert_non_null(cand(site, kind ? "fp8_e5m2_current" : "fp8_e4m3_current"));
    /* the report's layer (its name: the site's layer_name): a measured
     * error, not "not measured" */
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(site_of(rep, layer), "layer_name"));
    assert_non_null(name);
    double rf16 = field(cand(report_layer(rep, name), "fp16"), "rel_l2");
    if (!(rf16 > 1e-5 && rf16 < 1.0 / 256)) fail_msg("report %s: fp16 %g", layer, rf16);
    /* its geometry: the depth recorded beside height and width (it was
     * recorded as the height, the height as the width), the flops of it */
    char be[64];
    snprintf(be, sizeof be, "backend3d/%s", ops[kind]);
    for (int api = 0; api < 2; api++) {
      cJSON *cv = cJSON_GetObjectItem(site_of(raw, api ? be : layer), "conv");
      static const char *const k[] = {"n", "c", "d", "h", "w", "k", "t", "r", "s", "groups"};
      static const int v[] = {2, 4, 5, 6, 5, 4, 3, 3, 2, 2};
      for (int i = 0; i < 10; i++)
        if (field(cv, k[i]) != v[i]) fail_msg("%s: conv %s %g", layer, k[i], field(cv, k[i]));
      char *arr = cJSON_PrintUnformatted(cv);
      assert_non_null(strstr(arr, "\"pad\":[1,1,0],\"stride\":[2,1,1],\"dilation\":[1,1,2]"));
      free(arr);
    }
    /* output 3 x 6 x 3; per group 2 channels, 2 filters of 3 x 3 x 2 */
    const double flops[3] = {2.0 * (2 * 3 * 6 * 3) * 2 * (2 * 18) * 2,
                             2.0 * (2 * 5 * 6 * 5) * 2 * (2 * 18) * 2,
                             2.0 * 2 * (2 * 18) * (2 * 3 * 6 * 3) * 2};
    assert_true(field(site_of(rep, layer), "flop_per_call") == flops[kind]);
    /* the same convolution through a backend graph: the same measurement */
    char *sa = cJSON_PrintUnformatted(sh),
         *sb = cJSON_PrintUnformatted(cJSON_GetObjectItem(site_of(raw, be), "shadow"));
    assert_string_equal(sa, sb);
    free(sa);
    free(sb);
    char flat3[64], flat2[64];
    snprintf(flat3, sizeof flat3, "flat3d/%s", ops[kind]);
    snprintf(flat2, sizeof flat2, "flat2d/%s", ops[kind]);
    cJSON *s3 = cJSON_GetObjectItem(site_of(raw, flat3), "shadow"),
          *s2 = cJSON_GetObjectItem(site_of(raw, flat2), "shadow");
    assert_non_null(s3);
    assert_non_null(s2);
    assert_int_equal((int)field(s3, "calls"), 1);
    char *a = cJSON_PrintUnformatted(s3), *b = cJSON_PrintUnformatted(s2);
    assert_string_equal(a, b);
    free(a);
    free(b);
  }
  cJSON_Delete(raw);
  cJSON_Delete(rep);
}

/* A cuDNN backend graph's plain matmul (mpp_testprog bematmul: A row-major,
 * B stored column by column and broadcast over the batch) is measured as
 * the strided batched GEMM it is: to the last bit what the same product
 * through cublasSgemmStridedBatched on the same data measures (both sites'
 * shadow objects, fp8 and MX candidates, delayed scaling's second call
 * included); the program's output does not change. */
static void backend_matmuls_are_measured_as_the_strided_batched_gemm(void **state) {
  (void)state;
  if (!testprog) skip();
  const char *dir = outdir("bematmul");
  free(shadowed_testprog(dir, "bematmul", NULL));
  cJSON *raw = load_raw(dir);
  cJSON *be = cJSON_GetObjectItem(site_of(raw, "bemm"), "shadow"),
        *cb = cJSON_GetObjectItem(site_of(raw, "cublas"), "shadow");
  assert_non_null(be);
  assert_non_null(cb);
  if (field(be, "calls") != 2)
    fail_msg("bemm: %d calls measured, skipped %s", (int)field(be, "calls"),
             cJSON_PrintUnformatted(cJSON_GetObjectItem(be, "skipped")));
  assert_non_null(cand(site_of(raw, "bemm"), "fp8_e4m3_delayed"));
  char *a = cJSON_PrintUnformatted(be), *b = cJSON_PrintUnformatted(cb);
  assert_string_equal(a, b);
  free(a);
  free(b);
  cJSON_Delete(raw);
}

/* cudnnConvolutionBiasActivationForward (mpp_testprog convbiasact: fp32
 * NHWC, a 1 x 1 filter, so a GEMM) is measured as act(alpha1 conv(x) +
 * bias): to the last bit what the same data through cublasLtMatmul with
 * the RELU_BIAS epilogue (2 groups as 2 strided batches, the bias KG apart)
 * and the BIAS epilogue (the identity) measures. Before, every fused call
 * was skipped as shadow_unsupported; the program's output does not change. */
static void fused_bias_activation_convolutions_are_measured_as_their_gemm(void **state) {
  (void)state;
  if (!testprog) skip();
  const char *dir = outdir("convbiasact");
  free(shadowed_testprog(dir, "convbiasact", NULL));
  cJSON *raw = load_raw(dir);
  static const char *const pairs[2][2] = {{"cba/fused", "cba/gemm"},
                                          {"cba/fused_id", "cba/gemm_id"}};
  for (int i = 0; i < 2; i++) {
    cJSON *fused = cJSON_GetObjectItem(site_of(raw, pairs[i][0]), "shadow"),
          *gemm = cJSON_GetObjectItem(site_of(raw, pairs[i][1]), "shadow");
    assert_non_null(fused);
    assert_non_null(gemm);
    if (field(fused, "calls") != 1)
      fail_msg("%s: %d calls measured, skipped %s", pairs[i][0], (int)field(fused, "calls"),
               cJSON_PrintUnformatted(cJSON_GetObjectItem(fused, "skipped")));
    char *a = cJSON_PrintUnformatted(cJSON_GetObjectItem(fused, "candidates")),
         *b = cJSON_PrintUnformatted(cJSON_GetObjectItem(gemm, "candidates"));
    assert_string_equal(a, b);
    free(a);
    free(b);
  }
  cJSON_Delete(raw);
}

int main(void) {
  mpprof = need("MPP_MPPROF");
  conv_train = getenv("MPP_CONV_TRAIN");
  mlp_train = need("MPP_MLP_TRAIN");
  testprog = getenv("MPP_TESTPROG");
  simcuda = need("MPP_SIMCUDA");
  workdir = need("MPP_WORKDIR");
  mlp_argv[0] = (char *)mlp_train;
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s'", workdir);
  if (system(cmd) != 0) return 2;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(output_is_identical_with_and_without_shadow),
      cmocka_unit_test(every_gemm_site_is_measured_fc1_overflows_fp16_and_fc3_fits_it),
      cmocka_unit_test(the_report_shows_measured_error_per_layer_and_the_verdict_uses_it),
      cmocka_unit_test(the_csv_files_measured_columns_are_report_jsons),
      cmocka_unit_test(an_output_that_needs_more_scale_than_its_operands_gets_it),
      cmocka_unit_test(without_shadow_the_raw_file_has_no_shadow_objects),
      cmocka_unit_test(shadow_every_2nd_call),
      cmocka_unit_test(shadow_works_without_scans),
      cmocka_unit_test(conv_train_convolutions_are_measured),
      cmocka_unit_test(backend_convolutions_are_measured_as_the_legacy_ones),
      cmocka_unit_test(calls_with_no_finite_reference_are_not_measured),
      cmocka_unit_test(shadow_edge_cases_are_measured_as_the_hardware_computes),
      cmocka_unit_test(grouped_convolutions_are_measured_as_their_groups_combined),
      cmocka_unit_test(convolutions_in_3d_are_measured),
      cmocka_unit_test(backend_matmuls_are_measured_as_the_strided_batched_gemm),
      cmocka_unit_test(fused_bias_activation_convolutions_are_measured_as_their_gemm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
