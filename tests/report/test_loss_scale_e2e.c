/* End to end under simcuda, issue "verdicts that hold for a real
 * mixed-precision run": mlp_train declares its loss scale (NVTX domain
 * "mpprof"), and the report works in unscaled terms.
 *   - fp16 at 65536 gives the loss-scale window of the fp32 run (±1 binade),
 *     and the applied scale is reported;
 *   - fp16 at 2^30 gives a high finding naming the scale;
 *   - fp16 at 1 flushes fc1's gradients to zero: a dead-gradient finding and
 *     no verdict for fc1;
 *   - the share mlp_train prints for fc2 is the report's share of the same
 *     tensor (docs/report.md, Shares).
 * Paths from the environment (set by meson): MPP_MPPROF, MPP_MLP_TRAIN,
 * MPP_SIMCUDA, MPP_WORKDIR. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "rawgen.h"
#include "report_fixture.h"

static const char *mpprof, *mlp_train, *simcuda, *workdir;

/* argv run with simcuda's libraries, stdout to `out` (workdir/out), stderr
 * appended to workdir/log.txt; exit status. */
static int run(char *const argv[], const char *out) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("LD_LIBRARY_PATH", simcuda, 1);
    unsetenv("LD_PRELOAD");
    char log[4200], o[4200];
    snprintf(log, sizeof log, "%s/log.txt", workdir);
    snprintf(o, sizeof o, "%s/%s", workdir, out);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, 1);
    dup2(fd, 2);
    close(fd);
    close(fo);
    execv(argv[0], argv);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* mpprof -o workdir/name mlp_train --precision P [--loss-scale S] --steps 4; report.json. */
static cJSON *profile(const char *name, const char *precision, const char *scale) {
  char d[4200], out[300], cmd[8600];
  snprintf(d, sizeof d, "%s/%s", workdir, name);
  snprintf(out, sizeof out, "%s.out", name);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
  assert_int_equal(system(cmd), 0);
  char *argv[] = {(char *)mpprof,    "-o",          d,
                  (char *)mlp_train, "--precision", (char *)precision,
                  "--steps",         "4",           scale ? "--loss-scale" : NULL,
                  (char *)scale,     NULL};
  assert_int_equal(run(argv, out), 0);
  cJSON *rep = rg_read_json(d, "report.json");
  assert_non_null(rep);
  return rep;
}

static int window(const cJSON *rep, int i) {
  const cJSON *w = rf_get(rep, "loss_scale.window_log2");
  assert_true(cJSON_IsArray(w));
  return (int)cJSON_GetArrayItem(w, i)->valuedouble;
}

static void fp16_at_65536_gives_the_window_of_the_fp32_run(void **state) {
  (void)state;
  cJSON *fp32 = profile("fp32", "fp32", NULL), *fp16 = profile("fp16-65536", "fp16", "65536");
  /* fp16 inputs round a few values: one binade either way. */
  assert_true(abs(window(fp16, 0) - window(fp32, 0)) <= 1);
  assert_true(abs(window(fp16, 1) - window(fp32, 1)) <= 1);
  assert_true(window(fp16, 0) >= 10); /* absolute: not the at-scale [2^-2, 2^2] */
  assert_true(cJSON_IsTrue(rf_get(fp16, "loss_scale.applied.known")));
  assert_true(rf_get(fp16, "loss_scale.applied.min")->valuedouble == 65536);
  assert_true(rf_get(fp16, "loss_scale.applied.last")->valuedouble == 65536);
  assert_int_equal(cJSON_GetArraySize(rf_get(fp16, "loss_scale.applied.per_step")), 1);
  /* 2^16 is inside the window: the applied-scale finding says fine. */
  const cJSON *f = rf_finding(fp16, "loss_scale_applied", NULL);
  assert_non_null(f);
  assert_string_equal(rf_get(f, "evidence.verdict")->valuestring, "fine");
  cJSON_Delete(fp32);
  cJSON_Delete(fp16);
}

static void fp16_at_2_30_gives_a_high_finding_naming_the_scale(void **state) {
  (void)state;
  cJSON *rep = profile("fp16-2p30", "fp16", "1073741824");
  const cJSON *f = rf_finding(rep, "loss_scale_overflow", "step/mlp/fc3");
  assert_non_null(f);
  assert_string_equal(cJSON_GetObjectItem(f, "severity")->valuestring, "high");
  const char *msg = cJSON_GetObjectItem(f, "message")->valuestring;
  assert_non_null(strstr(msg, "loss scale 2^30"));
  assert_true(strstr(msg, "loss scale 2^30") < strstr(msg, "Inf/NaN")); /* the scale first */
  assert_non_null(strstr(msg, "marked steps were skipped"));
  assert_true(rf_get(rep, "loss_scale.applied.skipped_steps")->valuedouble >= 1);
  /* Gradients never seen finite: no fp16 verdict rests on them. */
  assert_true(cJSON_IsNull(rf_get(rf_layer(rep, "step/mlp/fc3"), "advice.recommended")));
  cJSON_Delete(rep);
}

static void fp16_at_1_flushes_fc1_gradients_dead_and_gives_no_verdict(void **state) {
  (void)state;
  cJSON *rep = profile("fp16-1", "fp16", "1");
  const cJSON *f = rf_finding(rep, "dead_gradient", "step/mlp/fc1");
  assert_non_null(f);
  assert_string_equal(cJSON_GetObjectItem(f, "severity")->valuestring, "high");
  assert_non_null(
      strstr(cJSON_GetObjectItem(f, "message")->valuestring, "zero in all 4 scanned calls"));
  assert_true(cJSON_IsNull(rf_get(rf_layer(rep, "step/mlp/fc1"), "advice.recommended")));
  /* and the scale the program used is too low for the window */
  const cJSON *a = rf_finding(rep, "loss_scale_applied", NULL);
  assert_non_null(a);
  assert_string_equal(rf_get(a, "evidence.verdict")->valuestring, "too_low");
  cJSON_Delete(rep);
}

static void mlp_train_prints_the_reports_share_of_fc2_backward_d(void **state) {
  (void)state;
  cJSON *rep = profile("share", "fp32", NULL);
  char *out = rg_read_text(workdir, "share.out", NULL);
  assert_non_null(out);
  const char *line = strstr(out, "fc2 backward.D (dX, dW) fp16 flush to zero, of ");
  assert_non_null(line);
  unsigned long long of = 0;
  double pct = -1;
  assert_int_equal(sscanf(line,
                          "fc2 backward.D (dX, dW) fp16 flush to zero, of %llu finite "
                          "non-zero values: at scale 1: %lf%%",
                          &of, &pct),
                   2);
  const cJSON *s = rf_get(rf_layer(rep, "step/mlp/fc2"), "shares.fp16_underflow");
  assert_string_equal(rf_get(s, "tensor")->valuestring, "backward.D");
  assert_true(rf_get(s, "of")->valuedouble == (double)of);
  char mine[32];
  snprintf(mine, sizeof mine, "%.3g", rf_get(s, "pct")->valuedouble);
  char theirs[32];
  snprintf(theirs, sizeof theirs, "%.3g", pct);
  assert_string_equal(mine, theirs);
  /* the layer table's column is the same number */
  assert_true(rf_get(rf_layer(rep, "step/mlp/fc2"), "percent.fp16_underflow")->valuedouble ==
              rf_get(s, "pct")->valuedouble);
  free(out);
  cJSON_Delete(rep);
}

static const char *need(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) {
    fprintf(stderr, "test_loss_scale_e2e: %s is not set\n", name);
    exit(2);
  }
  return v;
}

int main(void) {
  mpprof = need("MPP_MPPROF");
  mlp_train = need("MPP_MLP_TRAIN");
  simcuda = need("MPP_SIMCUDA");
  workdir = need("MPP_WORKDIR");
  mkdir(workdir, 0777);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp16_at_65536_gives_the_window_of_the_fp32_run),
      cmocka_unit_test(fp16_at_2_30_gives_a_high_finding_naming_the_scale),
      cmocka_unit_test(fp16_at_1_flushes_fc1_gradients_dead_and_gives_no_verdict),
      cmocka_unit_test(mlp_train_prints_the_reports_share_of_fc2_backward_d),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
