/* report_fixture: the report tests' shared run set-up and report.json
 * look-ups (report_fixture.h). */
#include "report_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "report/report.h"

const rg_proc RF_P0 = {"node01", 100, 1, 0, true, "ok", "9.0", "./train"};

char *rf_run_begin(rg_file *r, const char *tag) {
  char *dir = rg_tmpdir(tag);
  assert_int_equal(rg_begin(r, dir, "a.json", &RF_P0), 0);
  return dir;
}

cJSON *rf_fwd_site(int id, const char *layer_path, double lo, double hi) {
  cJSON *s = rg_gemm(id, "cublasGemmEx", layer_path, "A=fp16,B=fp16,C=fp32,D=fp32", "32F",
                     "DEFAULT", 64, 64, 64, 10);
  rg_tensor(s, "A", MP_FP16, -8, 4, 200);
  rg_tensor(s, "B", MP_FP16, -8, 4, 200);
  rg_tensor(s, "D", MP_FP32, lo, hi, 400);
  return s;
}

cJSON *rf_bwd_site(int id, const char *layer_path, double lo, double hi) {
  cJSON *s = rg_gemm(id, "cublasGemmEx", layer_path, "A=fp16,B=fp16,C=fp32,D=fp32", "32F",
                     "DEFAULT", 64, 64, 64, 10);
  rg_tensor(s, "A", MP_FP16, -8, 4, 100);
  rg_tensor(s, "D", MP_FP32, lo, hi, 400);
  return s;
}

char *rf_marks_run(const char *tag, bool with_grads) {
  rg_file r;
  char *dir = rf_run_begin(&r, tag);
  rg_site_end(&r, rf_fwd_site(0, "f/fwd", -6, 6));
  if (with_grads) {
    rg_site_end(&r, rf_fwd_site(1, "l/fwd", -6, 6));
    cJSON *s = rg_gemm(2, "cublasGemmEx", "l/bwd", "A=fp16,B=fp16,C=fp32,D=fp32", "32F", "DEFAULT",
                       64, 64, 64, 10);
    rg_tensor(s, "A", MP_FP16, -22, -16, 100); /* every value an fp16 subnormal */
    rg_tensor(s, "D", MP_FP32, -34, -20, 400);
    rg_site_end(&r, s);
    rg_site_end(&r, rf_fwd_site(3, "g/fwd", -6, 6));
    rg_site_end(&r, rf_bwd_site(4, "g/bwd", -6, 6));
  }
  assert_int_equal(rg_end(&r), 0);
  return dir;
}

void rf_generate(const char *dir) {
  mpprof_report_options o = {.out_dir = dir, .program = NULL, .summary = NULL};
  assert_int_equal(mpprof_report_generate(&o), 0);
}

cJSON *rf_report_of(const char *dir) {
  rf_generate(dir);
  cJSON *r = rg_read_json(dir, "report.json");
  assert_non_null(r);
  return r;
}

cJSON *rf_conv_site(int id, const char *api, const char *op, const char *layer_path,
                    const char *types) {
  cJSON *s = rg_gemm(id, api, layer_path, types, "fp32", NULL, 0, 0, 0, 3);
  cJSON_ReplaceItemInObject(s, "op", cJSON_CreateString(op));
  cJSON *c = cJSON_AddObjectToObject(s, "conv");
  const char *k[] = {"n", "c", "h", "w", "k", "r", "s"};
  const int v[] = {8, 16, 32, 32, 32, 3, 3};
  for (int i = 0; i < 7; i++)
    cJSON_AddNumberToObject(c, k[i], v[i]);
  const int one[2] = {1, 1};
  cJSON_AddItemToObject(c, "pad", cJSON_CreateIntArray(one, 2));
  cJSON_AddItemToObject(c, "stride", cJSON_CreateIntArray(one, 2));
  cJSON_AddItemToObject(c, "dilation", cJSON_CreateIntArray(one, 2));
  return s;
}

cJSON *rf_get(const cJSON *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  const cJSON *cur = o;
  for (char *save = NULL, *k = strtok_r(buf, ".", &save); k && cur; k = strtok_r(NULL, ".", &save))
    cur = cJSON_GetObjectItemCaseSensitive(cur, k);
  return (cJSON *)cur;
}

cJSON *rf_layer(const cJSON *rep, const char *name) {
  const cJSON *l;
  cJSON_ArrayForEach(l, rf_get(rep, "layers")) {
    if (!strcmp(rf_get(l, "name")->valuestring, name)) return (cJSON *)l;
  }
  fail_msg("no layer %s", name);
  return NULL;
}

cJSON *rf_finding(const cJSON *rep, const char *kind, const char *layer_name) {
  const cJSON *f;
  cJSON_ArrayForEach(f, rf_get(rep, "findings")) {
    const cJSON *l = rf_get(f, "layer");
    if (!strcmp(rf_get(f, "kind")->valuestring, kind) &&
        (!layer_name || (cJSON_IsString(l) && !strcmp(l->valuestring, layer_name))))
      return (cJSON *)f;
  }
  return NULL;
}
