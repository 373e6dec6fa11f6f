/* report.json against its schema: docs/report.schema.json (a JSON Schema
 * subset: type, enum, properties, required, additionalProperties, items,
 * $ref, oneOf, minimum, maximum, minItems, maxItems) checked by the small
 * validator below, on reports of several kinds of runs; and every key of the
 * schema is described in docs/report-schema.md.
 * usage: test_report_schema SCHEMA_JSON SCHEMA_DOC_MD */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rawgen.h"
#include "report_fixture.h"
#include "report/report.h"
#include "report/report_internal.h"

static const char *schema_path, *doc_path;
static cJSON *schema;

/* ---- the validator ---- */

static bool type_is(const cJSON *v, const char *t) {
  if (!strcmp(t, "object")) return cJSON_IsObject(v);
  if (!strcmp(t, "array")) return cJSON_IsArray(v);
  if (!strcmp(t, "string")) return cJSON_IsString(v);
  if (!strcmp(t, "boolean")) return cJSON_IsBool(v);
  if (!strcmp(t, "null")) return cJSON_IsNull(v);
  if (!strcmp(t, "number")) return cJSON_IsNumber(v);
  if (!strcmp(t, "integer"))
    return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble);
  return false;
}

static bool equal_json(const cJSON *a, const cJSON *b) {
  return cJSON_Compare(a, b, true);
}

/* The keywords the validator applies, and the annotations it may skip. A
 * schema with any other keyword is refused: a keyword silently ignored would
 * let reports through that the schema forbids. */
static const char *const applied[] = {
    "$ref",
    "oneOf",
    "type",
    "enum",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
};
static const char *const annotations[] = {"$schema", "$id",   "$comment",
                                          "$defs",   "title", "description"};

static bool listed(const char *k, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(k, list[i])) return true;
  return false;
}

#define LISTED(k, list) listed(k, list, sizeof list / sizeof list[0])

/* 0 when v is valid under s; else -1 with the path and problem in err. */
static int validate(const cJSON *v, const cJSON *s, const char *path, char *err, size_t errlen) {
  const cJSON *kw;
  cJSON_ArrayForEach(kw, s) {
    if (!LISTED(kw->string, applied) && !LISTED(kw->string, annotations)) {
      snprintf(err, errlen, "%s: schema keyword \"%s\" is not supported by the validator", path,
               kw->string);
      return -1;
    }
  }
  const cJSON *ref = cJSON_GetObjectItem(s, "$ref");
  if (ref) {
    const char *name = ref->valuestring + strlen("#/$defs/");
    const cJSON *def = cJSON_GetObjectItem(cJSON_GetObjectItem(schema, "$defs"), name);
    if (!def) {
      snprintf(err, errlen, "%s: unknown $ref %s", path, ref->valuestring);
      return -1;
    }
    if (validate(v, def, path, err, errlen)) return -1;
  }
  const cJSON *one = cJSON_GetObjectItem(s, "oneOf");
  if (one) {
    int ok = 0;
    const cJSON *alt;
    char e[512];
    cJSON_ArrayForEach(alt, one) {
      if (validate(v, alt, path, e, sizeof e) == 0)
        ok++;
      else if (strstr(e, "is not supported by the validator")) {
        snprintf(err, errlen, "%s", e);
        return -1;
      }
    }
    if (ok != 1) {
      snprintf(err, errlen, "%s: matches %d of the oneOf alternatives", path, ok);
      return -1;
    }
  }
  const cJSON *t = cJSON_GetObjectItem(s, "type");
  if (t) {
    bool ok = false;
    if (cJSON_IsString(t)) ok = type_is(v, t->valuestring);
    const cJSON *x;
    if (cJSON_IsArray(t)) cJSON_ArrayForEach(x, t) ok |= type_is(v, x->valuestring);
    if (!ok) {
      char *p = cJSON_PrintUnformatted(t);
      snprintf(err, errlen, "%s: not of type %s", path, p);
      free(p);
      return -1;
    }
  }
  const cJSON *en = cJSON_GetObjectItem(s, "enum");
  if (en) {
    bool ok = false;
    const cJSON *x;
    cJSON_ArrayForEach(x, en) ok |= equal_json(v, x);
    if (!ok) {
      snprintf(err, errlen, "%s: value not in enum", path);
      return -1;
    }
  }
  const cJSON *mn = cJSON_GetObjectItem(s, "minimum"), *mx = cJSON_GetObjectItem(s, "maximum");
  const cJSON *xmn = cJSON_GetObjectItem(s, "exclusiveMinimum"),
              *xmx = cJSON_GetObjectItem(s, "exclusiveMaximum");
  if (cJSON_IsNumber(v) &&
      ((mn && v->valuedouble < mn->valuedouble) || (mx && v->valuedouble > mx->valuedouble) ||
       (xmn && v->valuedouble <= xmn->valuedouble) ||
       (xmx && v->valuedouble >= xmx->valuedouble))) {
    snprintf(err, errlen, "%s: %g out of range", path, v->valuedouble);
    return -1;
  }
  if (cJSON_IsObject(v)) {
    const cJSON *props = cJSON_GetObjectItem(s, "properties"),
                *req = cJSON_GetObjectItem(s, "required");
    const cJSON *addl = cJSON_GetObjectItem(s, "additionalProperties"), *x;
    cJSON_ArrayForEach(x, req) {
      if (!cJSON_GetObjectItemCaseSensitive(v, x->valuestring)) {
        snprintf(err, errlen, "%s: missing required key \"%s\"", path, x->valuestring);
        return -1;
      }
    }
    cJSON_ArrayForEach(x, v) {
      char sub[512];
      snprintf(sub, sizeof sub, "%s.%s", path, x->string);
      const cJSON *ps = props ? cJSON_GetObjectItemCaseSensitive(props, x->string) : NULL;
      if (!ps && cJSON_IsFalse(addl)) {
        snprintf(err, errlen, "%s: key not allowed by the schema", sub);
        return -1;
      }
      if (!ps && cJSON_IsObject(addl)) ps = addl;
      if (ps && validate(x, ps, sub, err, errlen)) return -1;
    }
  }
  if (cJSON_IsArray(v)) {
    const cJSON *items = cJSON_GetObjectItem(s, "items"), *x;
    const cJSON *lo = cJSON_GetObjectItem(s, "minItems"), *hi = cJSON_GetObjectItem(s, "maxItems");
    int n = cJSON_GetArraySize(v);
    if ((lo && n < lo->valueint) || (hi && n > hi->valueint)) {
      snprintf(err, errlen, "%s: %d items", path, n);
      return -1;
    }
    int i = 0;
    cJSON_ArrayForEach(x, v) {
      char sub[512];
      snprintf(sub, sizeof sub, "%s[%d]", path, i++);
      if (items && validate(x, items, sub, err, errlen)) return -1;
    }
  }
  return 0;
}

static void assert_valid(const cJSON *rep) {
  char err[600] = "";
  if (validate(rep, schema, "report", err, sizeof err)) fail_msg("%s", err);
}

/* ---- runs ---- */

static cJSON *site(int id, const char *layer, double lo, double hi) {
  cJSON *s = rg_gemm(id, "cublasGemmEx", layer, "A=fp16,B=fp16,C=fp32,D=fp32", "32F", "DEFAULT", 64,
                     64, 64, 5);
  rg_tensor(s, "A", MP_FP16, -8, 4, 100);
  rg_tensor(s, "D", MP_FP32, lo, hi, 200);
  return s;
}

/* As written with --tc-counters: 5 counters unavailable (a reason), 6 counters
 * measured the first kernel of site 0. */
static void with_tc_counters(const char *dir, bool ok) {
  char *t = rg_read_text(dir, "raw/a.json", NULL);
  cJSON *raw = t ? cJSON_Parse(t) : NULL;
  free(t);
  assert_non_null(raw);
  cJSON *tc = cJSON_AddObjectToObject(raw, "tc_counters");
  cJSON_AddStringToObject(tc, "status", ok ? "ok" : "unavailable");
  if (ok)
    cJSON_AddNullToObject(tc, "reason");
  else
    cJSON_AddStringToObject(tc, "reason",
                            "cuptiRangeProfilerEnable failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  cJSON_AddStringToObject(tc, "chip", "GH100");
  cJSON_AddNumberToObject(tc, "kernels_profiled", ok ? 1 : 0);
  if (ok) {
    cJSON *k = cJSON_GetArrayItem(
        cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(raw, "sites"), 0), "kernels"),
        0);
    assert_non_null(k);
    cJSON_AddBoolToObject(k, "tc", true);
    cJSON_AddStringToObject(k, "tc_source", "counters");
  }
  char *out = cJSON_PrintUnformatted(raw);
  assert_int_equal(rg_write_text(dir, "a.json", out, strlen(out)), 0);
  free(out);
  cJSON_Delete(raw);
}

/* plan.json against docs/plan.schema.json (next to the report schema). */
static void assert_valid_plan(const char *dir) {
  char path[4096];
  snprintf(path, sizeof path, "%s", schema_path);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
           "plan.schema.json");
  char *text = rg_read_text(".", path, NULL);
  if (!text) text = rg_read_text("", path, NULL);
  cJSON *ps = text ? cJSON_Parse(text) : NULL;
  free(text);
  assert_non_null(ps);
  cJSON *plan = rg_read_json(dir, "plan.json");
  assert_non_null(plan);
  cJSON *saved = schema; /* $ref resolves against the global schema */
  schema = ps;
  char err[512];
  int rc = validate(plan, ps, "plan", err, sizeof err);
  schema = saved;
  cJSON_Delete(plan);
  cJSON_Delete(ps);
  if (rc) fail_msg("%s", err);
}

static cJSON *run(int kind) {
  char *dir = rg_tmpdir("schema");
  rg_proc p = {"node01",
               100,
               1,
               kind == 2 ? -1 : 0,
               kind != 3,
               kind == 4 ? "unavailable" : "ok",
               kind == 4 ? NULL : "9.0",
               "./train"};
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &p), 0);
  if (kind != 1) {
    cJSON *s = site(0, "mlp/fc1/fwd", -6, 6);
    rg_kernel(s, "nvjet_hsh_128x64_64x4_1x2_h_bz_coopA_NNT", 5, 1000);
    rg_kernel(s,
              "_Z17splitKreduce_kernelILi32ELi16EiffffLb1ELb0ELb0EEv18cublasSplitKParamsIT4_EPKT2_"
              "PKT3_PS8_PKS4_SD_PKT1_SF_PvlPS4_Pi",
              5, 100);
    rg_site_end(&r, s);
    rg_site_end(&r, site(1, "mlp/fc1/bwd", -34, -20));
    rg_site_end(&r, site(2, "mlp/fc2/fwd", 8, 18));
    rg_site_end(&r, site(3, "mlp/fc2/bwd", -36, -30));
    rg_site_end(&r, site(4, "mlp/fc3/fwd", -4, 4));
    rg_site_end(&r, site(5, "mlp/fc3/bwd", -10, 14));
    rg_site_end(&r, rg_gemm(6, "cublasSgemm_v2", "opt/optimizer", "A=fp32,B=fp32,C=fp32,D=fp32",
                            "32F", "DEFAULT", 64, 64, 64, 1));
    /* a site of merged shapes (past MPPROF_MAX_SITES): no m, n, k, batch, lds */
    cJSON *merged = site(7, "mlp/fc3/bwd", -10, 14);
    const char *const dims[] = {"m", "n", "k", "batch"};
    for (int i = 0; i < 4; i++)
      cJSON_ReplaceItemInObject(merged, dims[i], cJSON_CreateNull());
    const char *const lds[] = {"lda", "ldb", "ldc", "ldd"};
    for (int i = 0; i < 4; i++)
      cJSON_DeleteItemFromObject(merged, lds[i]);
    cJSON_AddBoolToObject(merged, "shapes_merged", true);
    rg_site_end(&r, merged);
    for (int i = 0; i < 10; i++)
      rg_event(&r, i % 7, 100 * i, 50, 3);
  }
  assert_int_equal(rg_end(&r), 0);
  if (kind == 2) rg_write_text(dir, "broken.json", "{\"schema\":", 10);
  if (kind >= 5) with_tc_counters(dir, kind == 6);
  rf_generate(dir);
  cJSON *rep = rg_read_json(dir, "report.json");
  assert_non_null(rep);
  assert_valid_plan(dir);
  rg_rmdir(dir);
  free(dir);
  return rep;
}

/* (each run's plan.json is checked against docs/plan.schema.json too) */
static void reports_of_every_kind_of_run_match_the_schema(void **state) {
  (void)state;
  /* 0 full, 1 no CUDA ops, 2 no rank + a skipped file, 3 checkpoint, 4 no device/CUPTI,
   * 5 --tc-counters unavailable, 6 --tc-counters measured a kernel */
  for (int kind = 0; kind <= 6; kind++) {
    cJSON *rep = run(kind);
    assert_valid(rep);
    cJSON_Delete(rep);
  }
}

static void the_validator_rejects_what_the_schema_forbids(void **state) {
  (void)state;
  cJSON *rep = run(0);
  char err[600];
  cJSON *bad = cJSON_Duplicate(rep, true);
  cJSON_DeleteItemFromObject(bad, "loss_scale");
  assert_int_equal(validate(bad, schema, "report", err, sizeof err), -1);
  assert_non_null(strstr(err, "loss_scale"));
  cJSON_Delete(bad);
  bad = cJSON_Duplicate(rep, true);
  cJSON_AddStringToObject(cJSON_GetArrayItem(cJSON_GetObjectItem(bad, "layers"), 0), "extra", "x");
  assert_int_equal(validate(bad, schema, "report", err, sizeof err), -1);
  cJSON_Delete(bad);
  bad = cJSON_Duplicate(rep, true);
  cJSON *adv =
      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(bad, "layers"), 0), "advice");
  cJSON_ReplaceItemInObject(adv, "recommended", cJSON_CreateString("fp12"));
  assert_int_equal(validate(bad, schema, "report", err, sizeof err), -1);
  cJSON_Delete(bad);
  cJSON_Delete(rep);
}

/* A keyword the validator does not apply fails validation instead of being
 * ignored; the ones it applies do what they say. */
static void the_validator_refuses_keywords_it_does_not_apply(void **state) {
  (void)state;
  char err[600];
  cJSON *s = cJSON_Parse("{\"type\": \"string\", \"pattern\": \"^a\"}");
  cJSON *v = cJSON_CreateString("b");
  assert_int_equal(validate(v, s, "x", err, sizeof err), -1);
  assert_non_null(strstr(err, "\"pattern\" is not supported"));
  cJSON_Delete(s);
  /* inside a oneOf alternative too, whatever the other alternatives say */
  s = cJSON_Parse("{\"oneOf\": [{\"type\": \"number\"}, {\"type\": \"string\", "
                  "\"maxLength\": 0}]}");
  assert_int_equal(validate(v, s, "x", err, sizeof err), -1);
  assert_non_null(strstr(err, "\"maxLength\" is not supported"));
  cJSON_Delete(s);
  cJSON_Delete(v);
  s = cJSON_Parse("{\"type\": \"number\", \"exclusiveMinimum\": 0, \"$comment\": \"c\"}");
  v = cJSON_CreateNumber(0);
  assert_int_equal(validate(v, s, "x", err, sizeof err), -1);
  cJSON_SetNumberValue(v, 1e-300);
  assert_int_equal(validate(v, s, "x", err, sizeof err), 0);
  cJSON_Delete(v);
  cJSON_Delete(s);
}

/* Every keyword anywhere in schema s (a schema, or with `named` an object of
 * named schemas: properties, $defs) is one the validator knows; -1 with err. */
static int check_keywords(const cJSON *s, bool named, const char *path, char *err, size_t n) {
  const cJSON *x;
  cJSON_ArrayForEach(x, s) {
    char sub[512];
    snprintf(sub, sizeof sub, "%s/%s", path, x->string);
    if (named) {
      if (check_keywords(x, false, sub, err, n)) return -1;
      continue;
    }
    if (!LISTED(x->string, applied) && !LISTED(x->string, annotations)) {
      snprintf(err, n, "%s: keyword not supported by the validator", sub);
      return -1;
    }
    if (!strcmp(x->string, "properties") || !strcmp(x->string, "$defs")) {
      if (check_keywords(x, true, sub, err, n)) return -1;
    } else if (!strcmp(x->string, "oneOf")) {
      const cJSON *alt;
      cJSON_ArrayForEach(alt, x) if (check_keywords(alt, false, sub, err, n)) return -1;
    } else if ((!strcmp(x->string, "items") || !strcmp(x->string, "additionalProperties")) &&
               cJSON_IsObject(x)) {
      if (check_keywords(x, false, sub, err, n)) return -1;
    }
  }
  return 0;
}

/* The whole of both schemas, also the parts no report in these tests reaches. */
static void both_schemas_use_only_keywords_the_validator_applies(void **state) {
  (void)state;
  char err[600] = "";
  if (check_keywords(schema, false, "#", err, sizeof err)) fail_msg("report schema: %s", err);
  char path[4096];
  snprintf(path, sizeof path, "%s", schema_path);
  char *slash = strrchr(path, '/');
  snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
           "plan.schema.json");
  char *text = rg_read_text(".", path, NULL);
  if (!text) text = rg_read_text("", path, NULL);
  cJSON *ps = text ? cJSON_Parse(text) : NULL;
  free(text);
  assert_non_null(ps);
  if (check_keywords(ps, false, "#", err, sizeof err)) fail_msg("plan schema: %s", err);
  cJSON_Delete(ps);
}

/* Every property name anywhere in the schema appears as `name` in the doc. */
static void collect_keys(const cJSON *s, cJSON *out) {
  const cJSON *x;
  cJSON_ArrayForEach(x, s) {
    if (x->string && !strcmp(x->string, "properties") && cJSON_IsObject(x)) {
      const cJSON *p;
      cJSON_ArrayForEach(p, x) cJSON_AddItemToArray(out, cJSON_CreateString(p->string));
    }
    if (cJSON_IsObject(x) || cJSON_IsArray(x)) collect_keys(x, out);
  }
}

static void every_schema_key_is_documented(void **state) {
  (void)state;
  char *doc = rg_read_text(".", doc_path, NULL);
  if (!doc) doc = rg_read_text("", doc_path, NULL);
  assert_non_null(doc);
  cJSON *keys = cJSON_CreateArray();
  collect_keys(schema, keys);
  assert_true(cJSON_GetArraySize(keys) > 100);
  const cJSON *k;
  cJSON_ArrayForEach(k, keys) {
    char tick[128];
    snprintf(tick, sizeof tick, "`%s`", k->valuestring);
    if (!strstr(doc, tick)) fail_msg("docs/report-schema.md does not describe %s", tick);
  }
  cJSON_Delete(keys);
  free(doc);
}

/* The schema's enum of finding kinds: the "kind" property whose enum holds fp16_overflow. */
static const cJSON *kinds_enum(const cJSON *s) {
  const cJSON *x;
  cJSON_ArrayForEach(x, s) {
    if (x->string && !strcmp(x->string, "kind") && cJSON_IsObject(x)) {
      const cJSON *e = cJSON_GetObjectItem(x, "enum"), *v;
      cJSON_ArrayForEach(v, e) if (cJSON_IsString(v) &&
                                   !strcmp(v->valuestring, "fp16_overflow")) return e;
    }
    if (cJSON_IsObject(x) || cJSON_IsArray(x)) {
      const cJSON *r = kinds_enum(x);
      if (r) return r;
    }
  }
  return NULL;
}

/* Every kind a finding rule makes (report/findings.c's table) is in it, and
 * nothing else: a report with a new kind would fail its own schema. */
static void every_finding_kind_is_in_the_schema(void **state) {
  (void)state;
  const cJSON *e = kinds_enum(schema);
  assert_non_null(e);
  for (size_t i = 0; i < mpprof_n_finding_rules; i++) {
    bool found = false;
    const cJSON *v;
    cJSON_ArrayForEach(v, e) found |= !strcmp(v->valuestring, mpprof_finding_rules[i].kind);
    if (!found)
      fail_msg("docs/report.schema.json: finding kind %s is missing", mpprof_finding_rules[i].kind);
  }
  assert_int_equal((size_t)cJSON_GetArraySize(e), mpprof_n_finding_rules);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s SCHEMA_JSON SCHEMA_DOC_MD\n", argv[0]);
    return 2;
  }
  schema_path = argv[1];
  doc_path = argv[2];
  char *text = rg_read_text(".", schema_path, NULL);
  if (!text) text = rg_read_text("", schema_path, NULL);
  schema = text ? cJSON_Parse(text) : NULL;
  free(text);
  if (!schema) {
    fprintf(stderr, "test_report_schema: cannot read %s\n", schema_path);
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(reports_of_every_kind_of_run_match_the_schema),
      cmocka_unit_test(the_validator_rejects_what_the_schema_forbids),
      cmocka_unit_test(the_validator_refuses_keywords_it_does_not_apply),
      cmocka_unit_test(both_schemas_use_only_keywords_the_validator_applies),
      cmocka_unit_test(every_schema_key_is_documented),
      cmocka_unit_test(every_finding_kind_is_in_the_schema),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  cJSON_Delete(schema);
  return rc;
}
