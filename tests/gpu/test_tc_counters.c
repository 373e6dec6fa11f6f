/* mpprof --tc-counters end to end under simcuda: the range profiler and
 * profiler host stand-ins in simcuda's libcupti.so.13 measure each kernel the
 * profiled calls launch (simulated tensor-pipe counters derived from
 * simcuda's kernel table), libmpprof.so pairs ranges with CUPTI's kernel
 * records, the raw file carries "tc" per kernel and the report says the
 * counters decided. Failures (no permission, unknown chip, CUPTI held by
 * another tool) leave a complete report where the name rules decide and the
 * reason is reported. The program's output is the same with and without.
 *
 * Paths from the environment (meson): MPP_MPPROF, MPP_MLP_TRAIN, MPP_SIMCUDA,
 * MPP_WORKDIR (scratch directory owned by this test), MPP_OLD_CUPTI (simcuda's
 * CUPTI activity side without the range profiler), MPP_WORKER_FIRST
 * (tc_worker_first.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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

#include "../profiler/sim_run.h" /* run, outdir, slurp; main sets simcuda, workdir */

static const char *mpprof, *mlp_train, *old_cupti, *worker_first;

/* mlp_train PRECISION STEPS plain and under `mpprof -o dir OPT`: the program
 * prints the same (losses, checksums of every weight) and exits 0 both times. */
static void run_mlp(const char *dir, const char *precision, const char *steps, const char *opt,
                    const char *const env[]) {
  char *plain_argv[] = {(char *)mlp_train, "--precision", (char *)precision,
                        "--steps",         (char *)steps, NULL};
  result plain = run(plain_argv, env);
  char *argv[] = {(char *)mpprof,
                  "-o",
                  (char *)dir,
                  (char *)opt,
                  "--",
                  (char *)mlp_train,
                  "--precision",
                  (char *)precision,
                  "--steps",
                  (char *)steps,
                  NULL};
  if (!opt) /* no option: shift the rest left */
    memmove(&argv[3], &argv[4], 7 * sizeof argv[0]);
  result prof = run(argv, env);
  assert_int_equal(plain.status, 0);
  assert_int_equal(prof.status, 0);
  assert_string_equal(prof.out, plain.out);
  free(plain.out);
  free(prof.out);
}

static cJSON *load(const char *path) {
  char *s = slurp(path);
  cJSON *doc = cJSON_Parse(s);
  free(s);
  if (!doc) fprintf(stderr, "cannot parse %s\n", path);
  assert_non_null(doc);
  return doc;
}

static cJSON *load_report(const char *dir) {
  char p[4300];
  snprintf(p, sizeof p, "%s/report.json", dir);
  return load(p);
}

/* The one raw file of a single-process run. */
static cJSON *load_raw(const char *dir) {
  char raw[4300];
  snprintf(raw, sizeof raw, "%s/raw", dir);
  DIR *d = opendir(raw);
  assert_non_null(d);
  cJSON *doc = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 5, ".json")) continue;
    assert_null(doc);
    char p[4600];
    snprintf(p, sizeof p, "%s/%s", raw, e->d_name);
    doc = load(p);
  }
  closedir(d);
  assert_non_null(doc);
  return doc;
}

static cJSON *get(cJSON *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *k = strtok(buf, "."); k && o; k = strtok(NULL, "."))
    o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(k)) : cJSON_GetObjectItem(o, k);
  return o;
}

static double num(cJSON *o, const char *path) {
  cJSON *v = get(o, path);
  if (!v) fprintf(stderr, "missing %s\n", path);
  assert_true(cJSON_IsNumber(v));
  return cJSON_GetNumberValue(v);
}

static const char *str(cJSON *o, const char *path) {
  cJSON *v = get(o, path);
  return cJSON_IsString(v) ? v->valuestring : "(not a string)";
}

/* Every kernel of every site of report.json: verdict and its source. */
static int check_report_kernels(cJSON *report, int want_tc, const char *want_source) {
  int n = 0;
  cJSON *s, *k;
  cJSON_ArrayForEach(s, get(report, "sites")) {
    assert_true(cJSON_GetArraySize(get(s, "kernels")) > 0);
    cJSON_ArrayForEach(k, get(s, "kernels")) {
      if (strcmp(str(k, "tc_source"), want_source) || cJSON_IsTrue(get(k, "tc")) != (want_tc == 1))
        fprintf(stderr, "kernel %s: tc %s source %s\n", str(k, "name"),
                cJSON_IsTrue(get(k, "tc")) ? "true" : "false", str(k, "tc_source"));
      assert_string_equal(str(k, "tc_source"), want_source);
      assert_int_equal(cJSON_IsTrue(get(k, "tc")), want_tc);
      n++;
    }
    assert_string_equal(str(s, "tc_source"), want_source);
  }
  assert_true(n > 0);
  return n;
}

/* Raw file: every kernel measured `profiled` times, verdict want_tc. A
 * kernel off Tensor Cores may still have tensor-pipe instructions (HFMA2
 * moves, simcuda's GH100 as the H200 showed): it has no MMA cycles then.
 * Returns how many kernels were judged off Tensor Cores with such moves. */
static int check_raw_kernels(cJSON *raw, int want_tc, int profiled) {
  cJSON *names = get(raw, "tc_counters.metrics");
  int nmetrics = cJSON_GetArraySize(names);
  assert_true(nmetrics > 0);
  int moves = 0;
  cJSON *s, *k;
  cJSON_ArrayForEach(s, get(raw, "sites")) {
    cJSON_ArrayForEach(k, get(s, "kernels")) {
      assert_true(cJSON_IsBool(get(k, "tc")));
      assert_int_equal(cJSON_IsTrue(get(k, "tc")), want_tc);
      assert_string_equal(str(k, "tc_source"), "counters");
      assert_int_equal(num(k, "tc_profiled"), profiled);
      cJSON *vals = get(k, "tc_values");
      assert_int_equal(cJSON_GetArraySize(vals), nmetrics);
      double sum = 0, mma = 0, hmma = 0;
      for (int m = 0; m < nmetrics; m++) {
        const char *name = cJSON_GetStringValue(cJSON_GetArrayItem(names, m));
        double v = cJSON_GetNumberValue(cJSON_GetArrayItem(vals, m));
        sum += v;
        if (strstr(name, "_type_hmma_hgmma_qgmma") || strstr(name, "dmma")) mma += v;
        if (!strcmp(name, "sm__inst_executed_pipe_tensor_op_hmma.sum")) hmma += v;
      }
      if (want_tc) {
        assert_true(sum > 0);
      } else {
        assert_true(mma == 0);
        moves += hmma > 0;
      }
    }
  }
  return moves;
}

/* Returns check_raw_kernels' count of kernels off Tensor Cores with tensor-pipe moves. */
static int mlp_precision_decided_by_counters(const char *name, const char *precision, int want_tc,
                                             const char *const env[]) {
  const char *dir = outdir(name);
  run_mlp(dir, precision, "2", "--tc-counters", env);
  cJSON *raw = load_raw(dir);
  assert_string_equal(str(raw, "tc_counters.status"), "ok");
  assert_string_equal(str(raw, "tc_counters.chip"), "GH100");
  assert_string_equal(str(raw, "tc_counters.sample"), "first");
  int nsites = cJSON_GetArraySize(get(raw, "sites"));
  /* The first call of every site, one kernel each. */
  assert_int_equal(num(raw, "tc_counters.ops_profiled"), nsites);
  assert_int_equal(num(raw, "tc_counters.kernels_profiled"), nsites);
  assert_int_equal(num(raw, "tc_counters.ops_unmatched"), 0);
  int moves = check_raw_kernels(raw, want_tc, 1);
  cJSON *report = load_report(dir);
  int nk = check_report_kernels(report, want_tc, "counters");
  assert_int_equal(num(report, "tensor_cores.kernels_by_counters"), nk);
  assert_int_equal(num(report, "tensor_cores.kernels_by_name"), 0);
  assert_true(cJSON_IsTrue(get(report, "tensor_cores.counters_requested")));
  assert_int_equal(cJSON_GetArraySize(get(report, "tensor_cores.counters_notes")), 0);
  cJSON_Delete(raw);
  cJSON_Delete(report);
  return moves;
}

static void fp16_gemms_are_on_tensor_cores_by_counters(void **state) {
  (void)state;
  mlp_precision_decided_by_counters("fp16", "fp16", 1, NULL);
}

static void tf32_gemms_are_on_tensor_cores_by_counters(void **state) {
  (void)state;
  mlp_precision_decided_by_counters("tf32", "tf32", 1, NULL);
}

static void fp32_gemms_are_off_tensor_cores_by_counters(void **state) {
  (void)state;
  /* cuBLAS's xmma ffma SGEMMs issue HFMA2 on the tensor pipe (seen on an
   * H200): counted as tensor instructions, judged CUDA-core all the same. */
  assert_true(mlp_precision_decided_by_counters("fp32", "fp32", 0, NULL) > 0);
}

/* Ampere's metric set (no gmma) decides the same way. */
static void ga100_metrics_decide_fp16_gemms_too(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_CHIP=GA100", NULL};
  const char *dir = outdir("ga100");
  run_mlp(dir, "fp16", "2", "--tc-counters", env);
  cJSON *raw = load_raw(dir);
  assert_string_equal(str(raw, "tc_counters.status"), "ok");
  assert_string_equal(str(raw, "tc_counters.chip"), "GA100");
  assert_string_equal(str(raw, "tc_counters.metrics.0"),
                      "sm__inst_executed_pipe_tensor_op_hmma.sum");
  check_raw_kernels(raw, 1, 1);
  cJSON_Delete(raw);
}

/* GA102 has no FP64 tensor pipe: CUPTI refuses ..._dmma.sum, and the real
 * host object then refuses every later name too, so mpprof makes it again:
 * the metric after the refused one is still used (it was lost). */
static void a_refused_metric_does_not_cost_the_ones_after_it(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_CHIP=GA102", NULL};
  const char *dir = outdir("ga102");
  run_mlp(dir, "fp16", "2", "--tc-counters", env);
  cJSON *raw = load_raw(dir);
  assert_string_equal(str(raw, "tc_counters.status"), "ok");
  assert_string_equal(str(raw, "tc_counters.chip"), "GA102");
  assert_string_equal(str(raw, "tc_counters.metrics.0"),
                      "sm__inst_executed_pipe_tensor_op_hmma.sum");
  /* ..._hmma_type_hfma2.sum (not in simcuda's GA102 list) refused before it */
  assert_string_equal(str(raw, "tc_counters.metrics.1"),
                      "sm__inst_executed_pipe_tensor_op_imma.sum");
  assert_null(get(raw, "tc_counters.metrics.2"));
  check_raw_kernels(raw, 1, 1);
  cJSON_Delete(raw);
}

/* The fp32 SGEMM is named ..._ffma_... (name rules: CUDA cores). When the
 * (simulated) counters say its tensor pipe was busy, the counters win. */
static void counters_override_a_misleading_kernel_name(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_TC_TRUTH=_ffma_=1", NULL};
  const char *dir = outdir("override");
  run_mlp(dir, "fp32", "2", "--tc-counters", env);
  cJSON *report = load_report(dir);
  check_report_kernels(report, 1, "counters");
  cJSON_Delete(report);
  /* Without --tc-counters the same kernels are CUDA-core kernels by name. */
  dir = outdir("override_names");
  run_mlp(dir, "fp32", "2", NULL, env);
  report = load_report(dir);
  check_report_kernels(report, 0, "name");
  assert_false(cJSON_IsTrue(get(report, "tensor_cores.counters_requested")));
  assert_int_equal(num(report, "tensor_cores.kernels_by_counters"), 0);
  cJSON_Delete(report);
  cJSON *raw = load_raw(dir);
  assert_null(get(raw, "tc_counters")); /* not requested: not written */
  assert_null(get(raw, "sites.0.kernels.0.tc"));
  cJSON_Delete(raw);
}

/* A CUPTI that configures a range profiler object only once: mpprof disables
 * and enables it again before the next profiled call, and every site is still
 * measured. */
static void a_cupti_that_configures_an_object_once_gets_a_fresh_object_per_call(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_RP_ONE_SESSION=1", NULL};
  const char *dir = outdir("one_session");
  run_mlp(dir, "fp16", "2", "--tc-counters", env);
  cJSON *raw = load_raw(dir);
  assert_string_equal(str(raw, "tc_counters.status"), "ok");
  int nsites = cJSON_GetArraySize(get(raw, "sites"));
  assert_int_equal(num(raw, "tc_counters.ops_profiled"), nsites);
  assert_int_equal(num(raw, "tc_counters.kernels_profiled"), nsites);
  check_raw_kernels(raw, 1, 1);
  cJSON_Delete(raw);
}

/* A reason that names the cause; the report is otherwise complete. */
static void check_unavailable(const char *dir, const char *reason_part) {
  cJSON *raw = load_raw(dir);
  assert_string_equal(str(raw, "tc_counters.status"), "unavailable");
  if (!strstr(str(raw, "tc_counters.reason"), reason_part))
    fprintf(stderr, "reason: %s\n", str(raw, "tc_counters.reason"));
  assert_non_null(strstr(str(raw, "tc_counters.reason"), reason_part));
  assert_int_equal(num(raw, "tc_counters.ops_profiled"), 0);
  cJSON *s;
  cJSON_ArrayForEach(s, get(raw, "sites")) {
    assert_non_null(get(s, "tensors.D")); /* numerics are all there */
    assert_null(get(s, "kernels.0.tc"));
  }
  cJSON_Delete(raw);
  cJSON *report = load_report(dir);
  assert_true(cJSON_IsTrue(get(report, "tensor_cores.counters_requested")));
  assert_int_equal(cJSON_GetArraySize(get(report, "tensor_cores.counters_notes")), 1);
  assert_non_null(strstr(str(report, "tensor_cores.counters_notes.0"), reason_part));
  bool found = false;
  cJSON *f;
  cJSON_ArrayForEach(f, get(report, "findings")) {
    if (!strcmp(str(f, "kind"), "tc_counters_unavailable")) {
      found = true;
      assert_non_null(strstr(str(f, "message"), reason_part));
    }
  }
  assert_true(found);
  assert_true(cJSON_GetArraySize(get(report, "layers")) > 0);
  cJSON_Delete(report);
}

static void insufficient_privileges_leave_a_complete_report_decided_by_names(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_PROFILER_DENIED=1", NULL};
  const char *dir = outdir("denied");
  run_mlp(dir, "fp16", "2", "--tc-counters", env);
  check_unavailable(dir, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  cJSON *report = load_report(dir);
  check_report_kernels(report, 1, "name");
  cJSON_Delete(report);
}

static void a_chip_without_known_tensor_metrics_is_named_as_the_reason(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_CHIP=TU102", NULL};
  const char *dir = outdir("tu102");
  run_mlp(dir, "fp16", "2", "--tc-counters", env);
  check_unavailable(dir, "no Tensor Core metric known for chip TU102");
}

/* MPP_OLD_CUPTI: simcuda's activity API without the range profiler. */
static void a_cupti_without_the_range_profiler_is_named_as_the_reason(void **state) {
  (void)state;
  char env0[4200];
  snprintf(env0, sizeof env0, "MPPROF_CUPTI=%s", old_cupti);
  const char *env[] = {env0, NULL};
  const char *dir = outdir("old_cupti");
  run_mlp(dir, "fp16", "2", "--tc-counters", env);
  check_unavailable(dir, "cuptiProfilerInitialize not in this CUPTI");
  cJSON *report = load_report(dir);
  check_report_kernels(report, 1, "name"); /* activity still works: names decide */
  cJSON_Delete(report);
}

static void cupti_held_by_another_tool_makes_counters_unavailable(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_CUPTI_BUSY=1", NULL};
  const char *dir = outdir("busy");
  run_mlp(dir, "fp16", "2", "--tc-counters", env);
  check_unavailable(dir, "held_by_other_subscriber");
}

/* --tc-counters=2: calls 0 and 2 of each site's 3 (indices divisible by 2). */
static void every_second_call_of_each_site_is_profiled_with_2(void **state) {
  (void)state;
  const char *dir = outdir("every2");
  run_mlp(dir, "fp16", "3", "--tc-counters=2", NULL);
  cJSON *raw = load_raw(dir);
  assert_int_equal(num(raw, "tc_counters.sample"), 2);
  int nsites = cJSON_GetArraySize(get(raw, "sites"));
  cJSON *s;
  cJSON_ArrayForEach(s, get(raw, "sites")) assert_int_equal(num(s, "calls"), 3);
  assert_int_equal(num(raw, "tc_counters.ops_profiled"), 2 * nsites);
  check_raw_kernels(raw, 1, 2);
  cJSON_Delete(raw);
  /* The default: the first call only, whatever the number of steps. */
  dir = outdir("first3");
  run_mlp(dir, "fp16", "3", "--tc-counters", NULL);
  raw = load_raw(dir);
  assert_int_equal(num(raw, "tc_counters.ops_profiled"), nsites);
  check_raw_kernels(raw, 1, 1);
  cJSON_Delete(raw);
}

/* Checkpoints while kernels run (simcuda: each kernel record stays
 * incomplete until the next is written): a checkpoint's default CUPTI flush
 * leaves the buffer that holds a profiled call's kernel records, which come
 * at the final flush. Settled at the checkpoint, every call profiled since
 * the last full buffer was given up as unmatched, and its counters lost. */
static void a_checkpoint_gives_up_no_profiled_call_whose_kernels_are_to_come(void **state) {
  (void)state;
  const char *dir = outdir("running");
  const char *const env[] = {"SIMCUDA_CUPTI_KERNELS_RUNNING=1", "MPPROF_CHECKPOINT_S=0.0005", NULL};
  run_mlp(dir, "fp16", "20", "--tc-counters=1", env);
  cJSON *raw = load_raw(dir);
  assert_string_equal(str(raw, "tc_counters.status"), "ok");
  assert_true(num(raw, "tc_counters.ops_profiled") > 0);
  assert_int_equal(num(raw, "tc_counters.ops_unmatched"), 0);
  cJSON_Delete(raw);
}

/* A checkpoint written while the counters are being set up (on the first
 * profiled call's thread: chip, metrics, passes) says "not_started" and
 * nothing of the setup; it read the chip name and metrics as they were being
 * written (a data race: "not_started" with a chip and some metrics). The
 * process is killed right after that checkpoint, which is then its raw file. */
static void a_checkpoint_during_the_counters_setup_reads_none_of_it(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_RP_KILLED_IN_SETUP=1", "MPPROF_CHECKPOINT_S=0", NULL};
  const char *dir = outdir("killed_in_setup");
  char *argv[] = {(char *)mpprof,
                  "-o",
                  (char *)dir,
                  "--tc-counters=1",
                  "--",
                  (char *)mlp_train,
                  "--precision",
                  "fp16",
                  "--steps",
                  "1",
                  NULL};
  result prof = run(argv, env);
  free(prof.out);
  assert_int_equal(prof.status, 128 + 9); /* SIGKILL, as mpprof passes it on */
  cJSON *raw = load_raw(dir);
  assert_false(cJSON_IsTrue(get(raw, "final")));
  assert_string_equal(str(raw, "tc_counters.status"), "not_started");
  assert_true(cJSON_IsNull(get(raw, "tc_counters.chip")));
  assert_int_equal(cJSON_GetArraySize(get(raw, "tc_counters.metrics")), 0);
  assert_int_equal(num(raw, "tc_counters.passes"), 0);
  cJSON_Delete(raw);
}

/* 8 threads share the context: a profiled call's window may hold another
 * thread's kernels (more ranges than the call's kernels: discarded as
 * unmatched) or find another call being profiled (skipped), but a verdict is
 * never given to the wrong kernel. The bias kernel of fc2 is made a CUDA-core
 * kernel for the counters, so a mix-up would show on some kernel name. */
static void concurrent_threads_never_get_another_kernels_verdict(void **state) {
  (void)state;
  const char *env[] = {"SIMCUDA_TC_TRUTH=_bias_=0", NULL};
  const char *dir = outdir("threads");
  char *plain_argv[] = {(char *)mlp_train, "--precision", "fp16", "--steps", "3",
                        "--threads",       "8",           NULL};
  result plain = run(plain_argv, env);
  char *argv[] = {(char *)mpprof,    "-o",          (char *)dir, "--tc-counters=1", "--",
                  (char *)mlp_train, "--precision", "fp16",      "--steps",         "3",
                  "--threads",       "8",           NULL};
  result prof = run(argv, env);
  assert_int_equal(prof.status, 0);
  assert_string_equal(prof.out, plain.out);
  free(plain.out);
  free(prof.out);
  cJSON *raw = load_raw(dir);
  double calls = 0, with_verdict = 0;
  cJSON *s, *k;
  cJSON_ArrayForEach(s, get(raw, "sites")) {
    calls += num(s, "calls");
    cJSON_ArrayForEach(k, get(s, "kernels")) {
      if (!cJSON_IsBool(get(k, "tc"))) continue;
      with_verdict += num(k, "tc_profiled");
      bool want = strstr(str(k, "name"), "_bias_") == NULL;
      if (cJSON_IsTrue(get(k, "tc")) != want)
        fprintf(stderr, "wrong verdict: %s\n", str(k, "name"));
      assert_int_equal(cJSON_IsTrue(get(k, "tc")), want);
    }
  }
  /* Every call was sampled (=1): measured or skipped; one kernel per call. */
  double profiled = num(raw, "tc_counters.ops_profiled"),
         skipped = num(raw, "tc_counters.ops_skipped"),
         unmatched = num(raw, "tc_counters.ops_unmatched");
  assert_true(profiled + skipped == calls);
  assert_true(num(raw, "tc_counters.kernels_profiled") == profiled - unmatched);
  assert_true(with_verdict == profiled - unmatched);
  assert_true(with_verdict > 0);
  cJSON_Delete(raw);
}

/* The process's first profiled call is a thread's first CUDA call, on a
 * stream another thread made: at the hook's entry that thread has no
 * current context (cuda.h, cuCtxGetCurrent; cuBLAS makes one current inside
 * the call). The counters are set up for the stream's context all the same
 * (cuStreamGetCtx), and the call is measured; it was "unavailable: no
 * current CUDA context at the first profiled call" for the whole run. */
static void a_first_call_on_a_thread_without_a_context_is_measured(void **state) {
  (void)state;
  const char *dir = outdir("worker-first");
  char *argv[] = {(char *)mpprof,       "-o", (char *)dir, "--tc-counters", "--",
                  (char *)worker_first, NULL};
  result prof = run(argv, NULL);
  assert_int_equal(prof.status, 0);
  assert_non_null(strstr(prof.out, "worker ok"));
  free(prof.out);
  cJSON *raw = load_raw(dir);
  assert_string_equal(str(raw, "tc_counters.status"), "ok");
  assert_int_equal(num(raw, "tc_counters.ops_profiled"), 1); /* the site's first call */
  assert_int_equal(num(raw, "tc_counters.kernels_profiled"), 1);
  assert_int_equal(num(raw, "tc_counters.ops_skipped"), 0);
  cJSON_Delete(raw);
}

/* (=0 and =off are MPPROF_TC_COUNTERS's "not asked": profiler_e2e
 * an_option_takes_what_its_variable_takes) */
static void a_bad_tc_counters_value_is_a_usage_error(void **state) {
  (void)state;
  const char *bad[] = {"--tc-counters=", "--tc-counters=x", "--tc-counters=-3",
                       "--tc-counters=2nd"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {(char *)mpprof,    "-o", (char *)outdir("bad"), (char *)bad[i],
                    (char *)mlp_train, NULL};
    result r = run(argv, NULL);
    assert_int_equal(r.status, 2);
    free(r.out);
  }
}

static const char *need(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) {
    fprintf(stderr, "test_tc_counters: %s is not set\n", name);
    exit(1);
  }
  return v;
}

int main(void) {
  mpprof = need("MPP_MPPROF");
  mlp_train = need("MPP_MLP_TRAIN");
  simcuda = need("MPP_SIMCUDA");
  workdir = need("MPP_WORKDIR");
  old_cupti = need("MPP_OLD_CUPTI");
  worker_first = need("MPP_WORKER_FIRST");
  mkdir(workdir, 0777);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp16_gemms_are_on_tensor_cores_by_counters),
      cmocka_unit_test(tf32_gemms_are_on_tensor_cores_by_counters),
      cmocka_unit_test(fp32_gemms_are_off_tensor_cores_by_counters),
      cmocka_unit_test(ga100_metrics_decide_fp16_gemms_too),
      cmocka_unit_test(a_refused_metric_does_not_cost_the_ones_after_it),
      cmocka_unit_test(counters_override_a_misleading_kernel_name),
      cmocka_unit_test(a_cupti_that_configures_an_object_once_gets_a_fresh_object_per_call),
      cmocka_unit_test(insufficient_privileges_leave_a_complete_report_decided_by_names),
      cmocka_unit_test(a_chip_without_known_tensor_metrics_is_named_as_the_reason),
      cmocka_unit_test(cupti_held_by_another_tool_makes_counters_unavailable),
      cmocka_unit_test(a_cupti_without_the_range_profiler_is_named_as_the_reason),
      cmocka_unit_test(every_second_call_of_each_site_is_profiled_with_2),
      cmocka_unit_test(a_checkpoint_gives_up_no_profiled_call_whose_kernels_are_to_come),
      cmocka_unit_test(a_checkpoint_during_the_counters_setup_reads_none_of_it),
      cmocka_unit_test(concurrent_threads_never_get_another_kernels_verdict),
      cmocka_unit_test(a_first_call_on_a_thread_without_a_context_is_measured),
      cmocka_unit_test(a_bad_tc_counters_value_is_a_usage_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
