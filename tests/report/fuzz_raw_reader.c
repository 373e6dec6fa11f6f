/* libFuzzer target: any bytes as a raw profile file. The reader must either
 * skip the file with a reason or take it whole, and everything after it
 * (merge, layers, advice, Tensor Cores, findings, report.json, HTML, CSV,
 * trace) must cope with whatever it took, without crashing, leaking or
 * undefined behaviour. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report_internal.h"

static char dir[256], raw_path[300];

static void cleanup(void) {
  static const char *const names[] = {"in.json", "report.json", "report.html", "layers.csv",
                                      "trace.json"};
  char p[320];
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    snprintf(dir, sizeof dir, "%s/mpprof-fuzz-raw-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) abort();
    snprintf(raw_path, sizeof raw_path, "%s/in.json", dir);
    atexit(cleanup);
  }
  FILE *f = fopen(raw_path, "wb");
  if (!f) abort();
  fwrite(data, 1, size, f);
  fclose(f);
  mpprof_model m;
  mpprof_model_init(&m);
  int rc = mpprof_read_raw_file(&m, raw_path, NULL);
  if (rc < 0) abort(); /* only out of memory may fail */
  if (mpprof_model_finish(&m) || mpprof_advise_layers(&m)) abort();
  mpprof_tensor_cores(&m);
  m.program = strdup("fuzz");
  if (mpprof_build_findings(&m)) abort();
  char out[320];
  snprintf(out, sizeof out, "%s/report.json", dir);
  if (mpprof_write_report_json(&m, out, NULL)) abort();
  snprintf(out, sizeof out, "%s/report.html", dir);
  if (mpprof_write_report_html(&m, out, NULL)) abort();
  snprintf(out, sizeof out, "%s/layers.csv", dir);
  if (mpprof_write_layers_csv(&m, out, NULL)) abort();
  snprintf(out, sizeof out, "%s/trace.json", dir);
  if (mpprof_write_trace_json(&m, out, NULL)) abort();
  mpprof_model_free(&m);
  return 0;
}
