/* A raw file with 100k sites (1000 layers of 100 shapes each) is read and
 * reported whole: every site in report.json, every layer in layers.csv. */
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

enum { LAYERS = 1000, SHAPES = 100 };

static void a_raw_file_with_100k_sites_is_reported_whole(void **state) {
  (void)state;
  char *dir = rg_tmpdir("100k");
  assert_non_null(dir);
  rg_proc p = {"node01", 100, 1, 0, true, "ok", "9.0", "./big"};
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "big.json", &p), 0);
  /* One site printed once; each of the 100k gets its own id, layer and m. */
  cJSON *proto =
      rg_gemm(0, "cublasGemmEx", "", "A=fp16,B=fp16,D=fp16", "32F", "DEFAULT", 64, 64, 64, 1);
  rg_tensor(proto, "D", MP_FP16, -6, 6, 64);
  cJSON_DeleteItemFromObject(proto, "id");
  cJSON_DeleteItemFromObject(proto, "layer");
  cJSON_DeleteItemFromObject(proto, "m");
  char *text = cJSON_PrintUnformatted(proto);
  cJSON_Delete(proto);
  for (int i = 0; i < LAYERS * SHAPES; i++)
    fprintf(r.f, "%s{\"id\":%d,\"layer\":\"block%04d/fwd\",\"m\":%d,%s", i ? ",\n" : "", i,
            i / SHAPES, 8 * (1 + i % SHAPES), text + 1);
  free(text);
  r.nsites = LAYERS * SHAPES;
  assert_int_equal(rg_end(&r), 0);

  rf_generate(dir);
  /* report.json prints one layer and one site per line: count them without
   * parsing 100k sites into a cJSON tree. */
  size_t n = 0;
  char *rep = rg_read_text(dir, "report.json", &n);
  assert_non_null(rep);
  size_t sites = 0, layers = 0;
  for (char *line = rep; line; line = strchr(line, '\n')) {
    if (*line == '\n') line++;
    if (!strncmp(line, "{\"id\":", 6)) sites++;
    if (!strncmp(line, "{\"name\":\"block", 14)) layers++;
  }
  assert_int_equal(sites, LAYERS * SHAPES);
  assert_int_equal(layers, LAYERS);
  /* The last layer, parsed on its own, holds its 100 sites and a verdict. */
  char *last = strstr(rep, "{\"name\":\"block0999\"");
  assert_non_null(last);
  *strchr(last, '\n') = 0;
  if (last[strlen(last) - 1] == ',' || last[strlen(last) - 1] == ']') last[strlen(last) - 1] = 0;
  cJSON *l = cJSON_Parse(last);
  assert_non_null(l);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(l, "sites")), SHAPES);
  assert_string_equal(
      cJSON_GetObjectItem(cJSON_GetObjectItem(l, "advice"), "recommended")->valuestring, "fp16");
  cJSON_Delete(l);
  free(rep);
  size_t len = 0;
  char *csv = rg_read_text(dir, "layers.csv", &len);
  size_t lines = 0;
  for (size_t i = 0; i < len; i++)
    lines += csv[i] == '\n';
  assert_int_equal(lines, LAYERS + 1);
  free(csv);
  rg_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_raw_file_with_100k_sites_is_reported_whole),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
