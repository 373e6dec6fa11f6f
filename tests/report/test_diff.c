/* `mpprof diff` on hand-written report.json files: what its summary counts,
 * how sites are matched, what a bad report.json is called. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rawgen.h"
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(layers_in_one_run_only_are_counted_apart_from_changed_ones),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
