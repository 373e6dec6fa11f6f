/* `mpprof diff` on hand-written report.json files: what its summary counts,
 * how sites are matched, what a bad report.json is called. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "rawgen.h"
#include "report_fixture.h"
#include "report/diff.h"
#include "report/report_internal.h"

static void write_file(const char *dir, const char *name, const char *text) {
  char *path = mpprof_asprintf("%s/%s", dir, name);
  FILE *f = path ? fopen(path, "w") : NULL;
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
  free(path);
}

/* A report.json with the given layers (name, verdict, A's dtype) and no sites. */
static char *report_dir(const char *tag, const char *layers_json) {
  char *dir = rg_tmpdir(tag);
  char *text = mpprof_asprintf("{\"schema\": \"mpprof.report/1\", \"program\": \"./train\", "
                               "\"layers\": %s, \"sites\": []}",
                               layers_json);
  assert_non_null(text);
  write_file(dir, "report.json", text);
  free(text);
  return dir;
}

static char *summary_of(const char *a, const char *b, cJSON **ret_diff) {
  char *out = rg_tmpdir("diffout");
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  mpprof_error err = {0};
  if (mpprof_diff_generate(a, b, out, f, &err)) fail_msg("%s", err.message);
  fclose(f);
  if (ret_diff) *ret_diff = rg_read_json(out, "diff.json");
  rg_rmdir(out);
  free(out);
  return text;
}

#define LAYER(name, rec, dt)                                                                       \
  "{\"name\": \"" name "\", \"dtypes\": {\"A\": [\"" dt                                            \
  "\"]}, \"advice\": {\"recommended\": \"" rec "\"}}"

/* A layer in one run only has no "other dtypes or verdict": it is counted as
 * only in A or only in B, not as changed. */
static void layers_in_one_run_only_are_counted_apart_from_changed_ones(void **state) {
  (void)state;
  char *a = report_dir("diffa", "[" LAYER("fc1", "bf16", "fp32") "," LAYER(
                                    "fc2", "fp16", "fp32") "," LAYER("old", "fp16", "fp32") "]");
  char *b = report_dir("diffb",
                       "[" LAYER("fc1", "bf16", "fp32") "," LAYER("fc2", "bf16", "fp32") "," LAYER(
                           "new1", "fp16", "fp32") "," LAYER("new2", "fp16", "fp32") "]");
  char *s = summary_of(a, b, NULL);
  assert_non_null(strstr(s, "mpprof diff: 5 layers: 1 with other dtypes or verdicts, 1 only in A, "
                            "2 only in B; 0 op sites only in A, 0 only in B\n"));
  free(s);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

/* n sites of one layer with m = first .. first + n - 1, the last one TF32
 * when tf32_last; ids into *ret_ids (the layer's "sites"). */
static char *sites_json(size_t first, size_t n, bool tf32_last, char **ret_ids) {
  char *text = NULL, *ids = NULL;
  size_t len = 0, ids_len = 0;
  FILE *f = open_memstream(&text, &len), *g = open_memstream(&ids, &ids_len);
  assert_non_null(f);
  assert_non_null(g);
  fputc('[', f);
  fputc('[', g);
  for (size_t i = 0; i < n; i++) {
    fprintf(f,
            "%s{\"id\": %zu, \"layer\": \"net/fc/fwd\", \"layer_name\": \"net/fc\", \"api\": "
            "\"cublasGemmEx\", \"op\": \"gemm\", \"m\": %zu, \"n\": 64, \"k\": 64, "
            "\"batch\": 1, \"tf32\": %s}",
            i ? "," : "", i, first + i, tf32_last && i == n - 1 ? "true" : "false");
    fprintf(g, "%s%zu", i ? "," : "", i);
  }
  fputc(']', f);
  fputc(']', g);
  assert_int_equal(fclose(f), 0);
  assert_int_equal(fclose(g), 0);
  *ret_ids = ids;
  return text;
}

static char *report_with_sites(const char *tag, size_t first, size_t n, bool tf32_last) {
  char *ids = NULL;
  char *dir = rg_tmpdir(tag), *sites = sites_json(first, n, tf32_last, &ids);
  char *text = mpprof_asprintf("{\"schema\": \"mpprof.report/1\", \"program\": \"./train\", "
                               "\"layers\": [{\"name\": \"net/fc\", \"sites\": %s}], "
                               "\"sites\": %s}",
                               ids, sites);
  assert_non_null(text);
  write_file(dir, "report.json", text);
  free(text);
  free(sites);
  free(ids);
  return dir;
}

/* Sites are matched through an index, and a layer's sites found by
 * position, not each against every other: two runs of 100k sites each (a
 * merged job's worth) in one layer diff in well under the test's timeout
 * (it took hours: every pair's key was formatted). The one site only in A
 * and the one only in B are found, and B's last site's TF32. */
static void a_diff_of_100k_sites_matches_them_in_n_log_n(void **state) {
  (void)state;
  const size_t n = 100000;
  char *a = report_with_sites("diffbiga", 0, n, false),
       *b = report_with_sites("diffbigb", 1, n, true);
  cJSON *d = NULL;
  char *s = summary_of(a, b, &d);
  assert_non_null(strstr(s, "; 1 op sites only in A, 1 only in B\n"));
  const cJSON *oa = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "sites_only_in_a"), 0);
  const cJSON *ob = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "sites_only_in_b"), 0);
  assert_string_equal(cJSON_GetObjectItem(oa, "match_key")->valuestring,
                      "net/fc/fwd|gemm|0|64|64|1");
  assert_string_equal(cJSON_GetObjectItem(ob, "match_key")->valuestring,
                      "net/fc/fwd|gemm|100000|64|64|1");
  const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "layers"), 0);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "a"), "tf32")));
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(row, "b"), "tf32")));
  cJSON_Delete(d);
  free(s);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

/* A report of one layer fc2 whose gradients flush 65.3% unscaled, `flush`
 * percent at the loss scale `scale` the run applied. */
static char *scaled_run(const char *tag, const char *scale, const char *flush) {
  char *dir = rg_tmpdir(tag);
  char *text = mpprof_asprintf(
      "{\"schema\": \"mpprof.report/1\", \"program\": \"./train\", \"loss_scale\": "
      "{\"applied\": {\"known\": true, \"min\": %s, \"max\": %s}}, \"layers\": [{\"name\": "
      "\"fc2\", \"dtypes\": {\"A\": [\"fp16\"]}, \"percent\": {\"fp16_overflow\": 0, "
      "\"fp16_underflow\": 65.3}, \"shares\": {\"fp16_overflow_at_applied_scale\": {\"pct\": "
      "0}, \"fp16_underflow_at_applied_scale\": {\"pct\": %s}}, \"advice\": {\"recommended\": "
      "\"fp16_loss_scale\"}}], \"sites\": []}",
      scale, scale, flush);
  assert_non_null(text);
  write_file(dir, "report.json", text);
  free(text);
  return dir;
}

/* Two fp16 runs at loss scales 1 and 65536: the unscaled figures are the
 * same by design, so the diff also gives each run's applied scale and the
 * gradients' flush at it (65.3% against 0.0014%), and the page says which
 * figure is which. */
static void a_diff_of_two_loss_scales_shows_the_flush_at_each_runs_scale(void **state) {
  (void)state;
  char *a = scaled_run("diffs1", "1", "65.3"), *b = scaled_run("diffs16", "65536", "0.0014");
  char *out = rg_tmpdir("diffout");
  mpprof_error err = {0};
  assert_int_equal(mpprof_diff_generate(a, b, out, NULL, &err), 0);
  cJSON *d = rg_read_json(out, "diff.json");
  assert_non_null(d);
  const cJSON *ra = cJSON_GetObjectItem(d, "a"), *rb = cJSON_GetObjectItem(d, "b");
  assert_true(
      cJSON_GetObjectItem(cJSON_GetObjectItem(ra, "loss_scale_applied"), "max")->valuedouble == 1);
  assert_true(
      cJSON_GetObjectItem(cJSON_GetObjectItem(rb, "loss_scale_applied"), "min")->valuedouble ==
      65536);
  const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "layers"), 0);
  const cJSON *la = cJSON_GetObjectItem(row, "a"), *lb = cJSON_GetObjectItem(row, "b");
  assert_true(cJSON_GetObjectItem(la, "fp16_underflow_pct")->valuedouble == 65.3);
  assert_true(cJSON_GetObjectItem(lb, "fp16_underflow_pct")->valuedouble == 65.3);
  assert_true(cJSON_GetObjectItem(la, "fp16_underflow_at_applied_scale_pct")->valuedouble == 65.3);
  assert_true(cJSON_GetObjectItem(lb, "fp16_underflow_at_applied_scale_pct")->valuedouble ==
              0.0014);
  assert_true(cJSON_GetObjectItem(lb, "fp16_overflow_at_applied_scale_pct")->valuedouble == 0);
  char *html = rg_read_text(out, "diff.html", NULL);
  assert_non_null(html);
  assert_non_null(strstr(html, "<th>fp16 flush %, unscaled</th>"));
  assert_non_null(strstr(html, "<th>fp16 gradient flush % at applied scale</th>"));
  assert_non_null(strstr(html, "<td class=\"n\">65536</td>"));
  free(html);
  cJSON_Delete(d);
  rg_rmdir(a);
  rg_rmdir(b);
  rg_rmdir(out);
  free(a);
  free(b);
  free(out);
}

/* Applying a plan's loss scale (fp16 at 1, then at 65536) changes no dtype
 * or verdict: the summary said "0 with other dtypes or verdicts" and nothing
 * else, as if the change had done nothing. It names the applied scales and,
 * per layer, what the page highlights: the flush at the applied scale. A
 * dtype change (fp32 -> bf16) is listed too; a layer with no change is not. */
static void the_summary_names_the_loss_scale_and_each_layers_changes(void **state) {
  (void)state;
  char *a = scaled_run("diffs1", "1", "65.3"), *b = scaled_run("diffs16", "65536", "0.0014");
  char *s = summary_of(a, b, NULL);
  assert_non_null(strstr(s, "mpprof diff: 1 layer: 0 with other dtypes or verdicts"));
  assert_non_null(strstr(s, "\n  loss scale applied: 1 -> 65536\n"));
  assert_non_null(strstr(s, "\n  fc2: fp16 gradient flush % at applied scale: 65.3 -> 0.0014\n"));
  free(s);
  char *c =
      report_dir("diffd32", "[" LAYER("fc1", "bf16", "fp32") "," LAYER("fc2", "fp16", "fp32") "]");
  char *e =
      report_dir("diffd16", "[" LAYER("fc1", "bf16", "bf16") "," LAYER("fc2", "fp16", "fp32") "]");
  s = summary_of(c, e, NULL);
  assert_non_null(strstr(s, "\n  fc1: Dtypes: A=fp32 -> A=bf16\n"));
  assert_null(strstr(s, "fc2:"));
  assert_null(strstr(s, "loss scale applied"));
  free(s);
  /* Many changed layers: the first 20, then a count. */
  char *la = NULL, *lb = NULL;
  size_t na = 0, nb = 0;
  FILE *fa = open_memstream(&la, &na), *fb = open_memstream(&lb, &nb);
  for (int i = 0; i < 25; i++) {
    fprintf(fa, "%s{\"name\": \"l%02d\", \"dtypes\": {\"A\": [\"fp32\"]}}", i ? "," : "[", i);
    fprintf(fb, "%s{\"name\": \"l%02d\", \"dtypes\": {\"A\": [\"fp16\"]}}", i ? "," : "[", i);
  }
  fputc(']', fa);
  fputc(']', fb);
  fclose(fa);
  fclose(fb);
  char *g = report_dir("diffmanya", la), *h = report_dir("diffmanyb", lb);
  s = summary_of(g, h, NULL);
  assert_non_null(strstr(s, "\n  l19: Dtypes: A=fp32 -> A=fp16\n  and 5 more layers with changes "
                            "(diff.html)\n"));
  assert_null(strstr(s, "l20:"));
  free(s);
  /* A layer name is the program's (NVTX): its control characters do not
   * reach the terminal as such. */
  char *x = report_dir("diffesc32", "[" LAYER("fc\\u001b[2J", "bf16", "fp32") "]");
  char *y = report_dir("diffesc16", "[" LAYER("fc\\u001b[2J", "bf16", "bf16") "]");
  s = summary_of(x, y, NULL);
  assert_non_null(strstr(s, "Dtypes: A=fp32 -> A=bf16"));
  assert_null(strchr(s, '\x1b'));
  free(s);
  char *dirs[] = {a, b, c, e, g, h, x, y, la, lb};
  for (size_t i = 0; i < 10; i++) {
    if (i < 8) rg_rmdir(dirs[i]);
    free(dirs[i]);
  }
}

/* A run whose fc1 gradients were zero in every call (no verdict; its worst
 * fp16 flush is then of a forward tensor, 0%) against one where they flush
 * 100%: each figure names its tensor, in diff.json and on the page, and the
 * missing verdict reads "no verdict" (it was a blank cell and "0" against
 * "100", as if B had made things worse). */
static char *one_layer_run(const char *tag, const char *pct, const char *tensor, const char *rec) {
  char *dir = rg_tmpdir(tag);
  char *text = mpprof_asprintf(
      "{\"schema\": \"mpprof.report/1\", \"program\": \"./train\", \"layers\": [{\"name\": "
      "\"fc1\", \"dtypes\": {\"A\": [\"fp16\"]}, \"percent\": {\"fp16_overflow\": 0, "
      "\"fp16_underflow\": %s}, \"shares\": {\"fp16_underflow\": {\"pct\": %s, \"tensor\": "
      "\"%s\"}}, \"advice\": {\"recommended\": %s}}], \"sites\": []}",
      pct, pct, tensor, rec);
  assert_non_null(text);
  write_file(dir, "report.json", text);
  free(text);
  return dir;
}

static void each_share_names_its_tensor_and_no_verdict_says_so(void **state) {
  (void)state;
  char *a = one_layer_run("diffdead", "0", "forward.A", "null"),
       *b = one_layer_run("diffflush", "100", "backward.D", "\"bf16\"");
  char *out = rg_tmpdir("diffout");
  mpprof_error err = {0};
  assert_int_equal(mpprof_diff_generate(a, b, out, NULL, &err), 0);
  cJSON *d = rg_read_json(out, "diff.json");
  assert_non_null(d);
  const cJSON *row = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "layers"), 0);
  const cJSON *la = cJSON_GetObjectItem(row, "a"), *lb = cJSON_GetObjectItem(row, "b");
  assert_string_equal(cJSON_GetObjectItem(la, "fp16_underflow_tensor")->valuestring, "forward.A");
  assert_string_equal(cJSON_GetObjectItem(lb, "fp16_underflow_tensor")->valuestring, "backward.D");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(la, "fp16_overflow_tensor")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(la, "verdict")));
  char *html = rg_read_text(out, "diff.html", NULL);
  assert_non_null(html);
  assert_non_null(strstr(html, ">0 (forward.A)</td>"));
  assert_non_null(strstr(html, ">100 (backward.D)</td>"));
  assert_non_null(strstr(html, ">no verdict</td>"));
  free(html);
  cJSON_Delete(d);
  rg_rmdir(a);
  rg_rmdir(b);
  rg_rmdir(out);
  free(a);
  free(b);
  free(out);
}

static size_t count(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

#define PCT_LAYER(ov, fl)                                                                          \
  "[{\"name\": \"fc1\", \"dtypes\": {\"A\": [\"fp16\"]}, \"percent\": {\"fp16_overflow\": " ov     \
  ", \"fp16_underflow\": " fl "}, \"advice\": {\"recommended\": \"bf16\"}}]"

/* A cell of B is highlighted when it reads differently from A's: an
 * overflow of 13.216% against 13.22% (both 13.2) is not, a flush of 65.3%
 * against 70% is. */
static void only_cells_that_read_differently_are_highlighted(void **state) {
  (void)state;
  char *a = report_dir("diffhla", PCT_LAYER("13.216", "65.3"));
  char *b = report_dir("diffhlb", PCT_LAYER("13.22", "70"));
  char *out = rg_tmpdir("diffout");
  mpprof_error err = {0};
  assert_int_equal(mpprof_diff_generate(a, b, out, NULL, &err), 0);
  char *html = rg_read_text(out, "diff.html", NULL);
  assert_non_null(html);
  assert_int_equal(count(html, "class=\"chg\""), 1);
  assert_non_null(strstr(html, "<td class=\"chg\" style=\"text-align:right\">70</td>"));
  free(html);
  rg_rmdir(a);
  rg_rmdir(b);
  rg_rmdir(out);
  free(a);
  free(b);
  free(out);
}

/* The error of a diff whose B holds `text` as its report.json, "%s" in want
 * standing for B's directory. */
/* A site of merged shapes (report.json shapes_merged: new shapes past
 * MPPROF_MAX_SITES, m/n/k null) stands for every shape of its layer and op:
 * two runs of one model, one of which hit the site cap, list no site of that
 * layer as only in one run; a merged site of a layer and op the other run
 * lacks is listed. */
static void a_site_of_merged_shapes_matches_every_shape_of_its_layer_and_op(void **state) {
  (void)state;
#define SITE(id, layer, op, shape)                                                                 \
  "{\"id\": " #id ", \"layer\": \"" layer "\", \"layer_name\": \"" layer                           \
  "\", \"api\": \"cublasGemmEx\", \"op\": \"" op "\", " shape "}"
#define DIMS(m) "\"m\": " #m ", \"n\": 64, \"k\": 64, \"batch\": 1"
#define MERGED "\"m\": null, \"n\": null, \"k\": null, \"batch\": null, \"shapes_merged\": true"
  const char *ta =
      "{\"schema\": \"mpprof.report/1\", \"program\": \"./train\", \"layers\": [], "
      "\"sites\": [" SITE(0, "fc", "gemm", DIMS(8)) "," SITE(1, "fc", "gemm", DIMS(9)) "," SITE(
          2, "fc", "gemm", DIMS(10)) "," SITE(3, "proj", "gemm", DIMS(4)) "]}";
  const char *tb = "{\"schema\": \"mpprof.report/1\", \"program\": \"./train\", \"layers\": [], "
                   "\"sites\": [" SITE(0, "fc", "gemm", DIMS(8)) "," SITE(
                       1, "fc", "gemm", MERGED) "," SITE(2, "head", "gemm", MERGED) "]}";
#undef SITE
#undef DIMS
#undef MERGED
  char *a = rg_tmpdir("diffmerga"), *b = rg_tmpdir("diffmergb");
  write_file(a, "report.json", ta);
  write_file(b, "report.json", tb);
  cJSON *d = NULL;
  char *s = summary_of(a, b, &d);
  /* proj: only in A; head's merged site: only in B; fc's shapes: in both */
  assert_non_null(strstr(s, "; 1 op sites only in A, 1 only in B\n"));
  const cJSON *oa = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "sites_only_in_a"), 0);
  const cJSON *ob = cJSON_GetArrayItem(cJSON_GetObjectItem(d, "sites_only_in_b"), 0);
  assert_string_equal(cJSON_GetObjectItem(oa, "layer")->valuestring, "proj");
  assert_string_equal(cJSON_GetObjectItem(ob, "match_key")->valuestring, "head|gemm|*");
  cJSON_Delete(d);
  free(s);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

static void assert_bad_report(const char *text, const char *want) {
  char *a = report_dir("diffgood", "[" LAYER("fc1", "bf16", "fp32") "]");
  char *b = rg_tmpdir("diffbad"), *out = rg_tmpdir("diffout");
  write_file(b, "report.json", text);
  mpprof_error err = {0};
  assert_int_equal(mpprof_diff_generate(a, b, out, NULL, &err), -1);
  char *w = mpprof_asprintf(want, b, b);
  assert_string_equal(err.message, w);
  free(w);
  rg_rmdir(a);
  rg_rmdir(b);
  rg_rmdir(out);
  free(a);
  free(b);
  free(out);
}

/* A report.json cut short (a copy interrupted, a full disk) is called
 * truncated, with the command that rebuilds it, not "not JSON"; a file that
 * is no JSON at all, or empty, is still called so. */
static void a_truncated_report_is_called_truncated(void **state) {
  (void)state;
  assert_bad_report("{\"schema\": \"mpprof.report/1\", \"layers\": [{\"name\": \"fc1\", \"dty",
                    "diff: %s/report.json: truncated (the JSON ends early; rebuild it with "
                    "'mpprof report %s')");
  assert_bad_report("{\"schema\": \"mpprof.report/1\", \"layers\": [{}, {",
                    "diff: %s/report.json: truncated (the JSON ends early; rebuild it with "
                    "'mpprof report %s')");
  assert_bad_report("hello\n", "diff: %s/report.json: not an mpprof report (not a JSON object)");
  assert_bad_report("", "diff: %s/report.json: not an mpprof report (empty file)");
}

/* A report.json of whitespace only, past the first read, is no report:
 * rejected there (it was read to its end, a file of any size into memory,
 * and called "not JSON"). */
static void a_file_of_whitespace_is_not_read_to_its_end(void **state) {
  (void)state;
  size_t n = 3u << 20;
  char *spaces = malloc(n + 1);
  assert_non_null(spaces);
  memset(spaces, ' ', n);
  spaces[n] = 0;
  assert_bad_report(spaces, "diff: %s/report.json: not an mpprof report (not a JSON object)");
  assert_bad_report(" \n\t\r ", "diff: %s/report.json: not an mpprof report (not JSON)");
  free(spaces);
}

/* A report.json of another kind or version names its schema. */
static void a_report_of_another_schema_names_it(void **state) {
  (void)state;
  assert_bad_report("{\"schema\": \"mpprof.raw/1\", \"sites\": []}",
                    "diff: %s/report.json: not an mpprof report (schema \"mpprof.raw/1\")");
  assert_bad_report("{\"schema\": \"mpprof.report/2\", \"layers\": [], \"sites\": []}",
                    "diff: %s/report.json: unsupported version (schema \"mpprof.report/2\"; this "
                    "mpprof reads mpprof.report/1)");
  assert_bad_report("{\"schema\": \"mpprof.report/1\", \"layers\": []}",
                    "diff: %s/report.json: not an mpprof report (schema or layers/sites missing)");
}

/* Text after the JSON value is not a report (cJSON stops at the value's
 * end: '{...}}' was read as a report missing its layers); a file given where
 * a run's directory goes is named as such (was "FILE/report.json: Not a
 * directory"). */
static void trailing_text_and_a_file_for_a_directory_are_named(void **state) {
  (void)state;
  assert_bad_report("{\"schema\": \"mpprof.report/1\", \"layers\": [], \"sites\": []}}\n",
                    "diff: %s/report.json: not an mpprof report (not JSON)");
  char *a = report_dir("diffgood", "[" LAYER("fc1", "bf16", "fp32") "]");
  char *out = rg_tmpdir("diffout");
  char *file = mpprof_asprintf("%s/report.json", a);
  mpprof_error err = {0};
  assert_int_equal(mpprof_diff_generate(file, a, out, NULL, &err), -1);
  char *w = mpprof_asprintf("diff: %s: not a directory (give the output directory of a run, the "
                            "one holding report.json)",
                            file);
  assert_string_equal(err.message, w);
  free(w);
  free(file);
  rg_rmdir(a);
  rg_rmdir(out);
  free(a);
  free(out);
}

/* A report of one layer run by the processes procs (JSON objects,
 * comma-separated): its directory. procs is freed. */
static char *procs_run(const char *tag, char *procs) {
  char *dir = rg_tmpdir(tag);
  char *text = mpprof_asprintf(
      "{\"schema\": \"mpprof.report/1\", \"program\": \"./train\", "
      "\"processes\": [%s], \"layers\": [" LAYER("fc1", "bf16", "fp32") "], \"sites\": []}",
      procs);
  assert_non_null(text);
  write_file(dir, "report.json", text);
  free(text);
  free(procs);
  return dir;
}

/* A report of one layer whose processes have the given ranks (JSON numbers
 * or null, comma-separated). */
static char *ranked_run(const char *tag, const char *const *ranks, size_t n) {
  char *procs = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&procs, &len);
  assert_non_null(f);
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%s{\"pid\": %zu, \"rank\": %s}", i ? ", " : "", 100 + i, ranks[i]);
  assert_int_equal(fclose(f), 0);
  return procs_run(tag, procs);
}

/* What the diff of runs a and b says: diff.json, the page, and stderr. */
static cJSON *diff_with_stderr(const char *a, const char *b, char **ret_html, char **ret_err) {
  char *out = rg_tmpdir("diffout"), *errf = rg_tmpdir("differr");
  char *errpath = mpprof_asprintf("%s/stderr", errf);
  fflush(stderr);
  int saved = dup(2), fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  dup2(fd, 2);
  close(fd);
  char *text = NULL;
  size_t len = 0;
  FILE *sum = open_memstream(&text, &len);
  mpprof_error err = {0};
  int rc = mpprof_diff_generate(a, b, out, sum, &err);
  fclose(sum);
  free(text);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  if (rc) fail_msg("%s", err.message);
  *ret_err = rg_read_text(errf, "stderr", NULL);
  *ret_html = rg_read_text(out, "diff.html", NULL);
  cJSON *d = rg_read_json(out, "diff.json");
  assert_non_null(d);
  rg_rmdir(out);
  rg_rmdir(errf);
  free(out);
  free(errf);
  free(errpath);
  return d;
}

/* A report of one layer whose processes ran on the given devices (JSON
 * device objects or null, semicolon-separated). */
static char *device_run(const char *tag, const char *devices) {
  char *procs = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&procs, &len);
  assert_non_null(f);
  char *list = strdup(devices), *save = NULL;
  int i = 0;
  for (char *d = strtok_r(list, ";", &save); d; d = strtok_r(NULL, ";", &save), i++)
    fprintf(f, "%s{\"pid\": %d, \"device\": %s}", i ? ", " : "", 100 + i, d);
  free(list);
  assert_int_equal(fclose(f), 0);
  return procs_run(tag, procs);
}

/* Two simcuda runs were diffed with their GPU ms side by side and no word of
 * the device: diff.json names each run's devices and the page says them as
 * report.html does, simcuda with the same note. */
static void the_diff_names_each_runs_device_and_marks_simcuda(void **state) {
  (void)state;
  char *a = device_run("diffdeva", "{\"name\": \"simcuda (CPU stand-in)\"};"
                                   "{\"name\": \"simcuda (CPU stand-in)\"}");
  char *b = device_run("diffdevb", "{\"name\": \"NVIDIA H100 80GB HBM3\"};null");
  char *html = NULL, *err = NULL;
  cJSON *d = diff_with_stderr(a, b, &html, &err);
  const cJSON *da = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "a"), "devices"),
              *db = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "b"), "devices");
  assert_int_equal(cJSON_GetArraySize(da), 1);
  assert_string_equal(cJSON_GetArrayItem(da, 0)->valuestring, "simcuda (CPU stand-in)");
  assert_int_equal(cJSON_GetArraySize(db), 2);
  assert_string_equal(cJSON_GetArrayItem(db, 0)->valuestring, "NVIDIA H100 80GB HBM3");
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(db, 1)));
  assert_non_null(strstr(html, "<th>Device</th>"));
  assert_non_null(strstr(html, "<td>simcuda (CPU stand-in) (" MPPROF_SIM_DEVICE_NOTE ")</td>"));
  assert_non_null(strstr(html, "<td>NVIDIA H100 80GB HBM3, no GPU</td>"));
  cJSON_Delete(d);
  free(html);
  free(err);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

/* RANK=0 profiled before a change, RANK=1 after: the diff compared another
 * process's GEMMs as "before and after" without a word. It names each run's
 * ranks, says same_ranks false, and warns on the page and on stderr; runs
 * of the same ranks (a merge of 0-3 against another) and a run without ranks
 * are not warned about. */
static void runs_of_other_ranks_are_named_and_warned_about(void **state) {
  (void)state;
  const char *r0[] = {"0"}, *r1[] = {"1"}, *r03[] = {"3", "0", "1", "2", "6"}, *none[] = {"null"};
  char *a = ranked_run("diffr0", r0, 1), *b = ranked_run("diffr1", r1, 1);
  char *html = NULL, *err = NULL;
  cJSON *d = diff_with_stderr(a, b, &html, &err);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(d, "same_ranks")));
  const cJSON *rb = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "b"), "ranks");
  assert_int_equal(cJSON_GetArraySize(rb), 1);
  assert_true(cJSON_GetArrayItem(rb, 0)->valuedouble == 1);
  assert_non_null(strstr(err, "mpprof diff: warning: the two runs hold other ranks (A: rank 0; B: "
                              "rank 1): their layers are compared all the same\n"));
  assert_non_null(strstr(html, "<p class=\"warn\">The two runs hold other ranks (A: rank 0; B: "
                               "rank 1)"));
  cJSON_Delete(d);
  free(html);
  free(err);
  char *m = ranked_run("diffr03", r03, 5);
  d = diff_with_stderr(m, a, &html, &err);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(d, "same_ranks")));
  assert_non_null(strstr(err, "(A: ranks 0-3, 6; B: rank 0)"));
  cJSON_Delete(d);
  free(html);
  free(err);
  d = diff_with_stderr(m, m, &html, &err);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "same_ranks")));
  assert_null(strstr(err, "other ranks"));
  assert_null(strstr(html, "other ranks"));
  cJSON_Delete(d);
  free(html);
  free(err);
  char *n = ranked_run("diffrnone", none, 1);
  d = diff_with_stderr(n, b, &html, &err);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "same_ranks")));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "a"), "ranks")),
                   0);
  cJSON_Delete(d);
  free(html);
  free(err);
  char *dirs[] = {a, b, m, n};
  for (size_t i = 0; i < 4; i++) {
    rg_rmdir(dirs[i]);
    free(dirs[i]);
  }
}

/* A report of one layer from the command line `program`. */
static char *program_run(const char *tag, const char *program) {
  char *dir = rg_tmpdir(tag);
  char *text = mpprof_asprintf("{\"schema\": \"mpprof.report/1\", \"program\": \"%s\", "
                               "\"layers\": [" LAYER("fc1", "bf16", "fp32") "], \"sites\": []}",
                               program);
  assert_non_null(text);
  write_file(dir, "report.json", text);
  free(text);
  return dir;
}

/* Two runs of one program with other arguments (mlp_train --steps 2 and
 * --steps 1): the page said so, the terminal said nothing. Both say it now,
 * in the same words, the summary with the two command lines; the same
 * command and another program (warned about on stderr) are not called so. */
static void the_same_program_with_other_arguments_is_said_in_the_summary(void **state) {
  (void)state;
  char *a = program_run("diffargs2", "./train --steps 2"),
       *b = program_run("diffargs1", "./train --steps 1"),
       *c = program_run("diffargs2b", "./train --steps 2"),
       *o = program_run("diffother", "./other --steps 2");
  char *s = summary_of(a, b, NULL);
  assert_non_null(strstr(s, "  A and B ran the same program with other arguments (A: ./train "
                            "--steps 2; B: ./train --steps 1)\n"));
  free(s);
  char *html = NULL, *err = NULL;
  cJSON *d = diff_with_stderr(a, b, &html, &err);
  assert_non_null(strstr(html, "<p>A and B ran the same program with other arguments"));
  cJSON_Delete(d);
  free(html);
  free(err);
  const char *const not_so[] = {c, o};
  for (size_t i = 0; i < 2; i++) {
    s = summary_of(a, not_so[i], NULL);
    assert_null(strstr(s, "other arguments"));
    free(s);
  }
  char *dirs[] = {a, b, c, o};
  for (size_t i = 0; i < 4; i++) {
    rg_rmdir(dirs[i]);
    free(dirs[i]);
  }
}

/* `mpprof diff r0 r0` showed no change and said nothing of why: a run named
 * twice (or as r0 and r0/.) is said to be compared with itself, in diff.json,
 * on the page and on stderr; two runs are not. */
static void a_run_compared_with_itself_is_warned_about(void **state) {
  (void)state;
  const char *r0[] = {"0"};
  char *a = ranked_run("diffself", r0, 1), *b = ranked_run("diffother", r0, 1);
  char *dot = mpprof_asprintf("%s/.", a);
  const char *pairs[][2] = {{a, a}, {a, dot}};
  for (size_t i = 0; i < 2; i++) {
    char *html = NULL, *err = NULL;
    cJSON *d = diff_with_stderr(pairs[i][0], pairs[i][1], &html, &err);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(d, "same_dir")));
    char *want = mpprof_asprintf("mpprof diff: warning: A and B are one directory (%s): the run "
                                 "is compared with itself\n",
                                 a);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(html, "A and B are one directory"));
    free(want);
    cJSON_Delete(d);
    free(html);
    free(err);
  }
  char *html = NULL, *err = NULL;
  cJSON *d = diff_with_stderr(a, b, &html, &err);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(d, "same_dir")));
  assert_null(strstr(err, "one directory"));
  assert_null(strstr(html, "one directory"));
  cJSON_Delete(d);
  free(html);
  free(err);
  free(dot);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

/* A run directory that does not exist is named itself, without the hint to
 * run `mpprof report` on it (it was "NONE/report.json: No such file or
 * directory (run 'mpprof report NONE' first?)"); one without report.json
 * keeps the hint. */
static void a_missing_run_is_named_without_the_report_hint(void **state) {
  (void)state;
  char *a = report_dir("diffgood", "[" LAYER("fc1", "bf16", "fp32") "]");
  char *none = mpprof_asprintf("%s/none", a), *empty = rg_tmpdir("diffempty");
  char *out = rg_tmpdir("diffout");
  mpprof_error err = {0};
  assert_int_equal(mpprof_diff_generate(none, a, out, NULL, &err), -1);
  char *w = mpprof_asprintf("diff: %s: No such file or directory", none);
  assert_string_equal(err.message, w);
  free(w);
  assert_int_equal(mpprof_diff_generate(a, empty, out, NULL, &err), -1);
  w = mpprof_asprintf("diff: %s/report.json: No such file or directory (run 'mpprof report %s' "
                      "first?)",
                      empty, empty);
  assert_string_equal(err.message, w);
  free(w);
  rg_rmdir(a);
  rg_rmdir(empty);
  rg_rmdir(out);
  free(a);
  free(none);
  free(empty);
  free(out);
}

/* DIR/plan.json recommending autocast `ac` ("null" for no plan) at loss
 * scale `ls` (JSON) with the given layers (a JSON object). */
static void write_plan(const char *dir, const char *ac, const char *ls, const char *layers) {
  char *text = mpprof_asprintf("{\"schema\": \"mpprof.plan/1\", \"recommended\": {\"autocast\": "
                               "%s, \"loss_scale\": %s, \"summary\": \"the plan\", \"layers\": "
                               "%s}, \"alternative\": null, \"fp8\": null, \"pytorch\": null}",
                               ac, ls, layers);
  assert_non_null(text);
  write_file(dir, "plan.json", text);
  free(text);
}

#define PLAN_LAYER(name, dt, ac) "\"" name "\": {\"dtype\": \"" dt "\", \"autocast\": " ac "}"
#define FC3_ONLY                                                                                   \
  "[" LAYER("step/mlp/fc1", "bf16", "fp32") "," LAYER("step/mlp/fc3", "fp32", "fp32") "]"

/* The fp32 run's plan keeps fc3 out of bf16 in fp32; the bf16 run's plan
 * runs every layer in bf16: the diff said nothing of it (the plans were not
 * read). diff.json's plan gives each run's autocast and loss scale and the
 * layer whose plan changed; the summary and the page name it. */
static void a_layer_the_plan_keeps_out_in_one_run_only_is_named(void **state) {
  (void)state;
  char *a = report_dir("diffpa", FC3_ONLY), *b = report_dir("diffpb", FC3_ONLY);
  write_plan(a, "\"bf16\"", "null",
             "{" PLAN_LAYER("step/mlp/fc1", "bf16", "true") "," PLAN_LAYER("step/mlp/fc3", "fp32",
                                                                           "false") "}");
  write_plan(b, "\"bf16\"", "null",
             "{" PLAN_LAYER("step/mlp/fc1", "bf16", "true") "," PLAN_LAYER("step/mlp/fc3", "bf16",
                                                                           "true") "}");
  char *html = NULL, *err = NULL;
  cJSON *d = diff_with_stderr(a, b, &html, &err);
  const cJSON *p = cJSON_GetObjectItem(d, "plan");
  assert_true(cJSON_IsObject(p));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "plan_unread")), 0);
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "a"), "autocast")->valuestring,
                      "bf16");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "b"), "loss_scale")));
  const cJSON *rows = cJSON_GetObjectItem(p, "layers");
  assert_int_equal(cJSON_GetArraySize(rows), 1);
  const cJSON *row = cJSON_GetArrayItem(rows, 0);
  assert_string_equal(cJSON_GetObjectItem(row, "layer")->valuestring, "step/mlp/fc3");
  const cJSON *ra = cJSON_GetObjectItem(row, "a"), *rb = cJSON_GetObjectItem(row, "b");
  assert_string_equal(cJSON_GetObjectItem(ra, "dtype")->valuestring, "fp32");
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(ra, "autocast")));
  assert_string_equal(cJSON_GetObjectItem(rb, "dtype")->valuestring, "bf16");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(rb, "autocast")));
  assert_non_null(strstr(html, "<section id=\"plan\">"));
  assert_non_null(strstr(html, "<td>step/mlp/fc3</td><td>fp32 (kept out)</td><td class=\"chg\">"
                               "bf16 (autocast)</td>"));
  assert_null(strstr(err, "plan"));
  cJSON_Delete(d);
  free(html);
  free(err);
  char *s = summary_of(a, b, NULL);
  assert_non_null(strstr(s, "\n  plan step/mlp/fc3: fp32 (kept out) -> bf16 (autocast)\n"));
  assert_null(strstr(s, "plan step/mlp/fc1"));
  assert_null(strstr(s, "plan autocast"));
  free(s);
  /* The same plan in both: one line says so. */
  s = summary_of(a, a, NULL);
  assert_non_null(strstr(s, "\n  plan: the same in both runs (autocast bf16, loss scale none)\n"));
  free(s);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

/* A run whose gradients ran under no declared loss scale (a scale applied by
 * hand, undeclared) against the same program run with --loss-scale: the
 * first plan's "no loss scaler" is of the gradients as computed, and the
 * diff says so beside it (it read "plan loss scale: none -> 4.1943e+06",
 * as if the first run needed none). */
static void a_plan_of_gradients_as_computed_says_so_in_the_diff(void **state) {
  (void)state;
  char *a = report_dir("diffasc", "[]"), *b = report_dir("diffdecl", "[]");
  char *text = mpprof_asprintf(
      "{\"schema\": \"mpprof.plan/1\", \"recommended\": {\"autocast\": \"fp16\", \"loss_scale\": "
      "null, \"loss_scale_note\": \"%s\", \"summary\": \"the plan\", \"layers\": {" PLAN_LAYER(
          "l", "fp16", "true") "}}, \"alternative\": null, \"fp8\": null, \"pytorch\": null}",
      MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE);
  write_file(a, "plan.json", text);
  free(text);
  write_plan(b, "\"fp16\"",
             "{\"init_scale_log2\": 22, \"init_scale\": 4194304, \"window_log2\": [13, 32]}",
             "{" PLAN_LAYER("l", "fp16", "true") "}");
  cJSON *d = NULL;
  char *s = summary_of(a, b, &d);
  if (!strstr(s, "\n  plan loss scale: none; " MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE
                 " -> 4.1943e+06 (window 2^13 .. 2^32)\n"))
    fail_msg("summary:\n%s", s);
  const cJSON *p = cJSON_GetObjectItem(d, "plan");
  assert_true(cJSON_IsTrue(rf_get(p, "a.loss_scale_as_computed")));
  assert_true(cJSON_IsFalse(rf_get(p, "b.loss_scale_as_computed")));
  free(s);
  cJSON_Delete(d);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

/* Two plans whose windows the search range cut at 2^32 (plan.json's
 * window_log2 [13, 32]) but whose true edges differ (true_window_log2 [13,
 * 53] against [13, 40]): the diff showed "window 2^13 .. 2^32" on both sides
 * and no change, while each run's summary gave the true edges. Now the true
 * edges stand beside the window, in the summary's words; a plan whose window
 * the range did not cut reads as before. */
static void a_plans_true_window_edges_are_compared(void **state) {
  (void)state;
  char *a = report_dir("diffcut53", "[]"), *b = report_dir("diffcut40", "[]");
  write_plan(a, "\"fp16\"",
             "{\"init_scale_log2\": 22, \"init_scale\": 4194304, \"window_log2\": [13, 32], "
             "\"true_window_log2\": [13, 53]}",
             "{" PLAN_LAYER("l", "fp16", "true") "}");
  write_plan(b, "\"fp16\"",
             "{\"init_scale_log2\": 22, \"init_scale\": 4194304, \"window_log2\": [13, 32], "
             "\"true_window_log2\": [13, 40]}",
             "{" PLAN_LAYER("l", "fp16", "true") "}");
  char *s = summary_of(a, b, NULL);
  if (!strstr(s, "\n  plan loss scale: 4.1943e+06 (window 2^13 .. 2^32; 2^13 .. 2^53 fits in all)"
                 " -> 4.1943e+06 (window 2^13 .. 2^32; 2^13 .. 2^40 fits in all)\n"))
    fail_msg("summary:\n%s", s);
  free(s);
  write_plan(b, "\"fp16\"",
             "{\"init_scale_log2\": 22, \"init_scale\": 4194304, \"window_log2\": [13, 32], "
             "\"true_window_log2\": [13, 32]}",
             "{" PLAN_LAYER("l", "fp16", "true") "}");
  s = summary_of(a, b, NULL);
  if (!strstr(s, " -> 4.1943e+06 (window 2^13 .. 2^32)\n")) fail_msg("summary:\n%s", s);
  free(s);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

/* An fp16 plan with a loss scale against a bf16 one: the autocast dtype and
 * the loss scale are named, and every layer whose dtype follows; past 20
 * layers, a count (as the layers' changes). A layer in one plan only is
 * "not in plan" there. */
static void the_plans_autocast_and_loss_scale_are_compared(void **state) {
  (void)state;
  char *pa = NULL, *pb = NULL;
  size_t na = 0, nb = 0;
  FILE *fa = open_memstream(&pa, &na), *fb = open_memstream(&pb, &nb);
  for (int i = 0; i < 25; i++) {
    fprintf(fa, "%s\"l%02d\": {\"dtype\": \"fp16\", \"autocast\": true}", i ? "," : "{", i);
    fprintf(fb, "%s\"l%02d\": {\"dtype\": \"bf16\", \"autocast\": true}", i ? "," : "{", i);
  }
  fputs(",\"gone\": {\"dtype\": \"fp32\", \"autocast\": false, \"inside\": \"l00\"}}", fa);
  fputc('}', fb);
  fclose(fa);
  fclose(fb);
  char *a = report_dir("diffpf16", "[]"), *b = report_dir("diffpbf16", "[]");
  write_plan(a, "\"fp16\"",
             "{\"init_scale_log2\": 16, \"init_scale\": 65536, \"window_log2\": [10, 20]}", pa);
  write_plan(b, "\"bf16\"", "null", pb);
  cJSON *d = NULL;
  char *s = summary_of(a, b, &d);
  assert_non_null(strstr(s, "\n  plan autocast: fp16 -> bf16\n  plan loss scale: 65536 (window "
                            "2^10 .. 2^20) -> none\n  plan l00: fp16 (autocast) -> bf16 "
                            "(autocast)\n"));
  assert_non_null(strstr(s, "\n  plan l19: fp16 (autocast) -> bf16 (autocast)\n  and 6 more "
                            "layers with plan changes (diff.html)\n"));
  assert_null(strstr(s, "plan l20"));
  const cJSON *rows = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "plan"), "layers");
  assert_int_equal(cJSON_GetArraySize(rows), 26);
  const cJSON *gone = cJSON_GetArrayItem(rows, 25);
  assert_string_equal(cJSON_GetObjectItem(gone, "layer")->valuestring, "gone");
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(gone, "a"), "inside")->valuestring,
                      "l00");
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(gone, "b")));
  const cJSON *ls =
      cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "plan"), "a"), "loss_scale");
  assert_true(cJSON_GetObjectItem(ls, "init_scale_log2")->valuedouble == 16);
  cJSON_Delete(d);
  free(s);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
  free(pa);
  free(pb);
}

/* A plan.json missing, unreadable, of another version or of another kind:
 * one line naming it on stderr and in diff.json plan_unread (plan null), the
 * page says so, and the rest is diffed (the diff succeeds). */
static void assert_plan_unread(const char *text, const char *want) {
  char *a = report_dir("diffpgood", "[" LAYER("fc1", "bf16", "fp32") "]");
  char *b = report_dir("diffpbad", "[" LAYER("fc1", "bf16", "bf16") "]");
  write_plan(a, "\"bf16\"", "null", "{}");
  if (text) write_file(b, "plan.json", text);
  char *html = NULL, *err = NULL;
  cJSON *d = diff_with_stderr(a, b, &html, &err);
  char *w = mpprof_asprintf(want, b, b);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(d, "plan")));
  const cJSON *un = cJSON_GetObjectItem(d, "plan_unread");
  assert_int_equal(cJSON_GetArraySize(un), 1);
  assert_string_equal(cJSON_GetArrayItem(un, 0)->valuestring, w);
  char *line = mpprof_asprintf("mpprof diff: warning: %s; the plans are not compared\n", w);
  assert_string_equal(err, line);
  assert_non_null(strstr(html, "; the plans are not compared.</p>"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(d, "layers")), 1);
  free(line);
  free(w);
  cJSON_Delete(d);
  free(html);
  free(err);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

static void an_unreadable_plan_is_one_line_and_the_rest_is_diffed(void **state) {
  (void)state;
  assert_plan_unread(NULL, "%s/plan.json: No such file or directory (run 'mpprof report %s' "
                           "first?)");
  assert_plan_unread("{\"schema\": \"mpprof.plan/2\", \"recommended\": null}",
                     "%s/plan.json: unsupported version (schema \"mpprof.plan/2\"; this mpprof "
                     "reads mpprof.plan/1)");
  assert_plan_unread("{\"schema\": \"mpprof.report/1\", \"layers\": [], \"sites\": []}",
                     "%s/plan.json: not an mpprof plan (schema \"mpprof.report/1\")");
  assert_plan_unread("{\"schema\": \"mpprof.plan/1\", \"recommended\": {\"layers\": []}}",
                     "%s/plan.json: not an mpprof plan (schema or recommended/layers missing)");
  assert_plan_unread("{\"schema\": \"mpprof.plan/1\", \"recommended\": {\"la",
                     "%s/plan.json: truncated (the JSON ends early; rebuild it with 'mpprof "
                     "report %s')");
  assert_plan_unread("", "%s/plan.json: not an mpprof plan (empty file)");
}

/* Odd values in a plan of the right schema (a layer that is no object, a
 * dtype that is no string, no plan at all) are shown, not a crash. */
static void odd_values_in_a_plan_are_shown(void **state) {
  (void)state;
  char *a = report_dir("diffpodd", "[]"), *b = report_dir("diffpnone", "[]");
  write_plan(a, "7", "[1]",
             "{\"x\": 5, \"y\": {\"dtype\": 3, \"autocast\": \"no\", \"inside\": 4}}");
  write_file(b, "plan.json",
             "{\"schema\": \"mpprof.plan/1\", \"recommended\": null, \"alternative\": null}");
  cJSON *d = NULL;
  char *s = summary_of(a, b, &d);
  assert_non_null(strstr(s, "\n  plan y: no dtype (kept out) -> not in plan\n"));
  assert_null(strstr(s, "plan autocast"));
  const cJSON *rows = cJSON_GetObjectItem(cJSON_GetObjectItem(d, "plan"), "layers");
  assert_int_equal(cJSON_GetArraySize(rows), 1);
  cJSON_Delete(d);
  free(s);
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
}

/* ---- measured error (--shadow) ---- */

/* A layer of one shadowed forward GEMM: its operands' dtype and the rel_l2
 * measured for current, fp16, bf16 and fp8_e4m3_current (< 0: not measured;
 * all < 0: the site is not shadowed). */
typedef struct shadow_layer {
  const char *name;
  mp_dtype in;
  double current, fp16, bf16, e4m3;
} shadow_layer;

/* A run (raw file and report.json, built by mpprof report) of the given
 * layers; shadowed: whether the process ran with --shadow (else no site has
 * a shadow object); max_rel: its --shadow-max-rel, NULL for the default. */
static char *shadow_run(const char *tag, const shadow_layer *ls, size_t n, bool shadowed,
                        const char *max_rel) {
  char *dir = rg_tmpdir(tag);
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "node01-100.json", &RF_P0), 0);
  for (size_t i = 0; i < n; i++) {
    char path[64], types[64];
    const char *t = mp_dtype_name(ls[i].in);
    snprintf(path, sizeof path, "%s/fwd", ls[i].name);
    snprintf(types, sizeof types, "A=%s,B=%s,C=fp32,D=fp32", t, t);
    cJSON *s = rg_gemm((int)i, "cublasGemmEx", path, types, "32F", "DEFAULT", 64, 64, 64, 10);
    rg_tensor(s, "A", ls[i].in, -8, 4, 200);
    rg_tensor(s, "B", ls[i].in, -8, 4, 200);
    rg_tensor(s, "D", MP_FP32, -4, 4, 400);
    const char *names[] = {"current", "fp16", "bf16", "fp8_e4m3_current"};
    const double err[] = {ls[i].current, ls[i].fp16, ls[i].bf16, ls[i].e4m3};
    if (shadowed && (err[0] >= 0 || err[1] >= 0 || err[2] >= 0 || err[3] >= 0)) {
      cJSON *sh = cJSON_AddObjectToObject(s, "shadow");
      cJSON_AddNumberToObject(sh, "calls", 3);
      cJSON *cs = cJSON_AddObjectToObject(sh, "candidates");
      for (size_t k = 0; k < 4; k++)
        if (err[k] >= 0) rg_shadow_candidate(cs, names[k], err[k], 3);
    }
    rg_site_end(&r, s);
  }
  assert_int_equal(rg_end(&r), 0);
  if (max_rel) {
    char now[64];
    snprintf(now, sizeof now, "\"shadow_max_rel\":%s,\"final\":", max_rel);
    assert_int_equal(rg_edit(dir, "node01-100.json", "\"final\":", now), 0);
  }
  rf_generate(dir);
  return dir;
}

/* The diff of a and b: diff.json, and the summary and the page into
 * *ret_summary and *ret_html. */
static cJSON *diff_of(const char *a, const char *b, char **ret_summary, char **ret_html) {
  char *out = rg_tmpdir("diffout");
  size_t len = 0;
  FILE *f = open_memstream(ret_summary, &len);
  assert_non_null(f);
  mpprof_error err = {0};
  if (mpprof_diff_generate(a, b, out, f, &err)) fail_msg("%s", err.message);
  fclose(f);
  cJSON *d = rg_read_json(out, "diff.json");
  assert_non_null(d);
  *ret_html = rg_read_text(out, "diff.html", NULL);
  assert_non_null(*ret_html);
  rg_rmdir(out);
  free(out);
  return d;
}

static const cJSON *diff_row(const cJSON *d, const char *name) {
  const cJSON *row;
  cJSON_ArrayForEach(row, cJSON_GetObjectItem(d, "layers")) {
    if (!strcmp(cJSON_GetObjectItem(row, "layer")->valuestring, name)) return row;
  }
  fail_msg("no layer %s in diff.json", name);
  return NULL;
}

static void free_runs(char *a, char *b, cJSON *d, char *s, char *h) {
  rg_rmdir(a);
  rg_rmdir(b);
  free(a);
  free(b);
  cJSON_Delete(d);
  free(s);
  free(h);
}

/* The fp32 run (A) and the run after moving fc3 to bf16 (B, operands bf16),
 * both with --shadow: diff.json gives, per layer, each candidate's rel_l2,
 * calls and inputs_already_rounded as the two report.json files have them
 * (current always, the others where both runs measured them: fp8 only in A
 * is left out), with each run's --shadow-max-rel (B's set to 0.01). */
static void measured_errors_in_diff_json_are_those_of_the_two_reports(void **state) {
  (void)state;
  const shadow_layer la[] = {{"net/fc3", MP_FP32, 2.1e-8, 0.00093, 0.0082, 0.061}},
                     lb[] = {{"net/fc3", MP_BF16, 0.0061, 0.00088, 0.0017, -1}};
  char *a = shadow_run("diffmea", la, 1, true, NULL),
       *b = shadow_run("diffmeb", lb, 1, true, "0.01");
  char *s, *h;
  cJSON *d = diff_of(a, b, &s, &h);
  const cJSON *me = cJSON_GetObjectItem(diff_row(d, "net/fc3"), "measured_error");
  assert_true(cJSON_IsObject(me));
  const char *dirs[] = {a, b}, *side[] = {"a", "b"};
  for (int i = 0; i < 2; i++) {
    cJSON *rep = rg_read_json(dirs[i], "report.json");
    assert_non_null(rep);
    assert_true(cJSON_IsTrue(rf_get(cJSON_GetObjectItemCaseSensitive(d, side[i]), "shadow")));
    const cJSON *ds = cJSON_GetObjectItem(me, side[i]);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(ds, "not_measured")));
    assert_true(rf_get(ds, "shadow_max_rel")->valuedouble ==
                rf_get(rep, "summary.shadow_max_rel")->valuedouble);
    const cJSON *rc = rf_get(rf_layer(rep, "net/fc3"), "shadow.candidates");
    const cJSON *dc = cJSON_GetObjectItem(ds, "candidates"), *c;
    assert_int_equal(cJSON_GetArraySize(dc), 3); /* current, fp16, bf16 */
    cJSON_ArrayForEach(c, dc) {
      const cJSON *want = cJSON_GetObjectItem(rc, c->string);
      assert_non_null(want);
      const char *keys[] = {"rel_l2", "calls", "inputs_already_rounded"};
      for (size_t k = 0; k < 3; k++)
        assert_true(cJSON_Compare(cJSON_GetObjectItem(c, keys[k]),
                                  cJSON_GetObjectItem(want, keys[k]), true));
    }
    assert_null(cJSON_GetObjectItem(dc, "fp8_e4m3_current"));
    cJSON_Delete(rep);
  }
  assert_true(rf_get(me, "a.candidates.current.rel_l2")->valuedouble == 2.1e-8);
  assert_true(rf_get(me, "b.candidates.bf16.rel_l2")->valuedouble == 0.0017);
  assert_true(rf_get(me, "b.shadow_max_rel")->valuedouble == 0.01);
  /* 0.0061 is above A's 2^-8 but within B's own 0.01: no crossing */
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(me, "current_crossed_limit")));
  free_runs(a, b, d, s, h);
}

/* fc3's current error went from 2e-8 to 0.0082, above --shadow-max-rel
 * (2^-8): the summary says so in one line, the page highlights B's cell;
 * fc2, within the limit in both runs (0.0021 -> 0.0035), gets no line;
 * fc1, above it in both, neither. */
static void a_current_error_crossing_the_limit_is_one_summary_line(void **state) {
  (void)state;
  const shadow_layer la[] = {{"net/fc1", MP_FP32, 0.5, -1, -1, -1},
                             {"net/fc2", MP_FP32, 0.0021, -1, -1, -1},
                             {"net/fc3", MP_FP32, 2e-8, -1, -1, -1}},
                     lb[] = {{"net/fc1", MP_FP32, 0.4, -1, -1, -1},
                             {"net/fc2", MP_FP32, 0.0035, -1, -1, -1},
                             {"net/fc3", MP_FP32, 0.0082, -1, -1, -1}};
  char *a = shadow_run("diffxa", la, 3, true, NULL), *b = shadow_run("diffxb", lb, 3, true, NULL);
  char *s, *h;
  cJSON *d = diff_of(a, b, &s, &h);
  assert_true(cJSON_IsTrue(rf_get(diff_row(d, "net/fc3"), "measured_error.current_crossed_limit")));
  assert_true(
      cJSON_IsFalse(rf_get(diff_row(d, "net/fc2"), "measured_error.current_crossed_limit")));
  assert_true(
      cJSON_IsFalse(rf_get(diff_row(d, "net/fc1"), "measured_error.current_crossed_limit")));
  assert_non_null(strstr(s, "\n  net/fc3: measured error now, rel L2: 2e-08 (within "
                            "--shadow-max-rel 0.00390625) -> 0.0082 (above --shadow-max-rel "
                            "0.00390625)\n"));
  assert_int_equal(count(s, "measured error now"), 1);
  assert_null(strstr(s, "profiled with --shadow"));
  assert_non_null(strstr(h, "<th title=\"Measured error (--shadow): relative L2 error of the "
                            "precision the op runs in now"));
  assert_non_null(strstr(h, "<td class=\"n chg\" title=\"0.0082 (above --shadow-max-rel "
                            "0.00390625)\">0.0082</td>"));
  free_runs(a, b, d, s, h);
}

/* After moving fc3 to bf16 its bf16 error reads 0.0017 against the fp32
 * run's 0.0082: measured on operands already bf16, which excludes their
 * rounding. diff.json carries each side's inputs_already_rounded, and the
 * page marks B's figure with a dagger and report.html's tooltip. */
static void a_measurement_on_operands_already_rounded_is_flagged(void **state) {
  (void)state;
  const shadow_layer la[] = {{"net/fc3", MP_FP32, 2e-8, -1, 0.0082, -1}},
                     lb[] = {{"net/fc3", MP_BF16, 2e-8, -1, 0.0017, -1}};
  char *a = shadow_run("diffra", la, 1, true, NULL), *b = shadow_run("diffrb", lb, 1, true, NULL);
  char *s, *h;
  cJSON *d = diff_of(a, b, &s, &h);
  const cJSON *me = rf_get(diff_row(d, "net/fc3"), "measured_error");
  assert_true(cJSON_IsFalse(rf_get(me, "a.candidates.bf16.inputs_already_rounded")));
  assert_true(cJSON_IsTrue(rf_get(me, "b.candidates.bf16.inputs_already_rounded")));
  assert_true(cJSON_IsFalse(rf_get(me, "b.candidates.current.inputs_already_rounded")));
  assert_non_null(strstr(h, "bf16 0.0082</td>"));
  assert_non_null(strstr(h, "bf16 <span title=\"measured on operands already bf16 or of fewer "
                            "mantissa bits: the error excludes their rounding, paid before the "
                            "op; no verdict counts it as evidence that rounding them is "
                            "harmless\">0.0017&dagger;</span>"));
  free_runs(a, b, d, s, h);
}

/* The layers moved from fp32 (A) to bf16 operands (B): B's `current` (2e-8)
 * is measured from operands the program already rounded, so it leaves out
 * that rounding, which A's bf16 candidate measured (fc3 0.0082, above the
 * limit; fc2 0.0031, within). diff.json names both operand dtypes and A's
 * measurement for B's side only; the summary gives fc3 its own line and
 * counts fc2; the page marks B's current with a double dagger saying so. A
 * layer on the same operands in both runs (fc1) is not flagged. */
static void a_current_measured_on_narrower_operands_is_said_so(void **state) {
  (void)state;
  const shadow_layer la[] = {{"net/fc1", MP_BF16, 3e-8, -1, 0.0015, -1},
                             {"net/fc2", MP_FP32, 2e-8, -1, 0.0031, -1},
                             {"net/fc3", MP_FP32, 2e-8, -1, 0.0082, -1}},
                     lb[] = {{"net/fc1", MP_BF16, 3e-8, -1, 0.0015, -1},
                             {"net/fc2", MP_BF16, 1e-8, -1, 0.0012, -1},
                             {"net/fc3", MP_BF16, 2e-8, -1, 0.0017, -1}};
  char *a = shadow_run("diffna", la, 3, true, NULL), *b = shadow_run("diffnb", lb, 3, true, NULL);
  char *s, *h;
  cJSON *d = diff_of(a, b, &s, &h);
  const cJSON *me = rf_get(diff_row(d, "net/fc3"), "measured_error");
  assert_true(cJSON_IsNull(rf_get(me, "a.current_on_narrower_operands")));
  assert_string_equal(rf_get(me, "b.current_on_narrower_operands.operands")->valuestring, "bf16");
  assert_string_equal(rf_get(me, "b.current_on_narrower_operands.other_run_operands")->valuestring,
                      "fp32");
  assert_string_equal(rf_get(me, "b.current_on_narrower_operands.other_run_candidate")->valuestring,
                      "bf16");
  assert_true(rf_get(me, "b.current_on_narrower_operands.other_run_rel_l2")->valuedouble == 0.0082);
  assert_true(cJSON_IsFalse(rf_get(me, "current_crossed_limit"))); /* 2e-8 both: no crossing */
  assert_true(cJSON_IsNull(
      rf_get(diff_row(d, "net/fc1"), "measured_error.b.current_on_narrower_operands")));
  assert_non_null(strstr(s, "\n  net/fc3: B runs it on bf16 operands; A measured bf16 from fp32 "
                            "operands at 0.0082, above --shadow-max-rel 0.00390625 (B's own "
                            "measurement leaves out that input rounding)\n"));
  assert_non_null(strstr(s, "\n  1 layer (net/fc2) runs on narrower operands in one run: its "
                            "measured error now leaves out the rounding of its inputs"));
  assert_non_null(strstr(h,
                         "; measured on operands already bf16 (fp32 in A): the op&#39;s own error, "
                         "without the rounding of its inputs into bf16; A measured bf16 from "
                         "its fp32 operands at 0.0082\">2e-08&Dagger;</td>"));
  assert_int_equal(count(h, "&Dagger;"), 2); /* fc2 and fc3 in B */
  free_runs(a, b, d, s, h);
  /* A's measurement of B's format was infinite (null): above any limit */
  const shadow_layer ia[] = {{"net/fc3", MP_FP32, 2e-8, INFINITY, -1, -1}},
                     ib[] = {{"net/fc3", MP_FP16, 2e-8, 0.0003, -1, -1}};
  a = shadow_run("diffia", ia, 1, true, NULL);
  b = shadow_run("diffib", ib, 1, true, NULL);
  d = diff_of(a, b, &s, &h);
  me = rf_get(diff_row(d, "net/fc3"), "measured_error");
  assert_true(cJSON_IsNull(rf_get(me, "b.current_on_narrower_operands.other_run_rel_l2")));
  assert_non_null(strstr(s, "\n  net/fc3: B runs it on fp16 operands; A measured fp16 from fp32 "
                            "operands at inf, above --shadow-max-rel"));
  free_runs(a, b, d, s, h);
}

/* Only A ran with --shadow: one line says so, in the summary and on the
 * page, and nothing else about measured error appears there; diff.json
 * gives A's current and B's side as not measured (no_shadow). A layer of a
 * shadowed run whose ops were not shadowed is not_shadowed. */
static void a_run_without_shadow_against_one_with_it_is_one_line(void **state) {
  (void)state;
  const shadow_layer la[] = {{"net/fc1", MP_FP32, -1, -1, -1, -1},
                             {"net/fc3", MP_FP32, 2e-8, -1, 0.0082, -1}};
  char *a = shadow_run("diffoa", la, 2, true, NULL), *b = shadow_run("diffob", la, 2, false, NULL);
  char *s, *h;
  cJSON *d = diff_of(a, b, &s, &h);
  assert_true(cJSON_IsTrue(rf_get(d, "a.shadow")));
  assert_true(cJSON_IsFalse(rf_get(d, "b.shadow")));
  const cJSON *me = rf_get(diff_row(d, "net/fc3"), "measured_error");
  assert_string_equal(rf_get(me, "b.not_measured")->valuestring, "no_shadow");
  assert_true(cJSON_IsNull(rf_get(me, "b.shadow_max_rel")));
  assert_int_equal(cJSON_GetArraySize(rf_get(me, "b.candidates")), 0);
  assert_true(rf_get(me, "a.candidates.current.rel_l2")->valuedouble == 2e-8);
  assert_null(rf_get(me, "a.candidates.bf16")); /* not measured in B */
  assert_string_equal(rf_get(diff_row(d, "net/fc1"), "measured_error.a.not_measured")->valuestring,
                      "not_shadowed");
  const char *line = "measured error (--shadow): only A was profiled with --shadow, B was not, so "
                     "no layer's measured error is compared";
  assert_int_equal(count(s, line), 1);
  assert_null(strstr(s, "measured error now"));
  assert_int_equal(count(h, "<p>measured error (--shadow): only A was profiled with --shadow, B "
                            "was not, so no layer"),
                   1);
  assert_null(strstr(h, "Measured now rel L2"));
  free_runs(a, b, d, s, h);
}

/* Neither run with --shadow: nothing about measured error, diff.json's
 * measured_error null. */
static void runs_without_shadow_show_no_measured_error(void **state) {
  (void)state;
  const shadow_layer la[] = {{"net/fc3", MP_FP32, -1, -1, -1, -1}};
  char *a = shadow_run("diffna", la, 1, false, NULL), *b = shadow_run("diffnb", la, 1, false, NULL);
  char *s, *h;
  cJSON *d = diff_of(a, b, &s, &h);
  assert_true(cJSON_IsFalse(rf_get(d, "a.shadow")));
  assert_true(cJSON_IsNull(rf_get(diff_row(d, "net/fc3"), "measured_error")));
  assert_null(strstr(s, "easured"));
  assert_null(strstr(h, "easured"));
  free_runs(a, b, d, s, h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(layers_in_one_run_only_are_counted_apart_from_changed_ones),
      cmocka_unit_test(a_diff_of_100k_sites_matches_them_in_n_log_n),
      cmocka_unit_test(a_diff_of_two_loss_scales_shows_the_flush_at_each_runs_scale),
      cmocka_unit_test(each_share_names_its_tensor_and_no_verdict_says_so),
      cmocka_unit_test(only_cells_that_read_differently_are_highlighted),
      cmocka_unit_test(a_site_of_merged_shapes_matches_every_shape_of_its_layer_and_op),
      cmocka_unit_test(a_truncated_report_is_called_truncated),
      cmocka_unit_test(a_file_of_whitespace_is_not_read_to_its_end),
      cmocka_unit_test(a_report_of_another_schema_names_it),
      cmocka_unit_test(trailing_text_and_a_file_for_a_directory_are_named),
      cmocka_unit_test(runs_of_other_ranks_are_named_and_warned_about),
      cmocka_unit_test(the_diff_names_each_runs_device_and_marks_simcuda),
      cmocka_unit_test(the_same_program_with_other_arguments_is_said_in_the_summary),
      cmocka_unit_test(the_summary_names_the_loss_scale_and_each_layers_changes),
      cmocka_unit_test(a_run_compared_with_itself_is_warned_about),
      cmocka_unit_test(a_missing_run_is_named_without_the_report_hint),
      cmocka_unit_test(a_layer_the_plan_keeps_out_in_one_run_only_is_named),
      cmocka_unit_test(the_plans_autocast_and_loss_scale_are_compared),
      cmocka_unit_test(a_plan_of_gradients_as_computed_says_so_in_the_diff),
      cmocka_unit_test(a_plans_true_window_edges_are_compared),
      cmocka_unit_test(an_unreadable_plan_is_one_line_and_the_rest_is_diffed),
      cmocka_unit_test(odd_values_in_a_plan_are_shown),
      cmocka_unit_test(measured_errors_in_diff_json_are_those_of_the_two_reports),
      cmocka_unit_test(a_current_error_crossing_the_limit_is_one_summary_line),
      cmocka_unit_test(a_measurement_on_operands_already_rounded_is_flagged),
      cmocka_unit_test(a_current_measured_on_narrower_operands_is_said_so),
      cmocka_unit_test(a_run_without_shadow_against_one_with_it_is_one_line),
      cmocka_unit_test(runs_without_shadow_show_no_measured_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
