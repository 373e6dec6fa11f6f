/* End to end under simcuda: `mpprof run --capture-range=...` / `--steps` on
 * mpp_capture_prog (steps 0..7, two GEMMs each in layers step/s<k>/a|b;
 * cudaProfilerStart/Stop around steps 2-3, cuProfilerStart/Stop around step
 * 5, step 6 inside NVTX range "capture_me", step 7 while another thread is
 * inside its own "capture_me"): only the calls inside the
 * capture range are in the report, the others are counted by reason, the
 * program's output is the same, and without a capture range nothing changes.
 *
 * Paths from the environment (set by meson): MPP_MPPROF, MPP_CAPTURE_PROG,
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
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

static const char *mpprof, *prog, *simcuda, *workdir;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = '\0';
  fclose(f);
  return s;
}

/* mpprof [opts...] -o DIR prog with env ("VAR=value", or NULL) set for it
 * (no capture variable else): exit status; stdout+stderr in DIR.log. */
static int profile_env(const char *name, const char *env, const char *const opts[],
                       char **ret_dir) {
  char *d = NULL, *cmd = NULL, *log = NULL;
  assert_true(asprintf(&d, "%s/%s", workdir, name) > 0);
  assert_true(asprintf(&log, "%s/%s.log", workdir, name) > 0);
  assert_true(asprintf(&cmd, "rm -rf '%s' && mkdir -p '%s'", d, workdir) > 0);
  assert_int_equal(system(cmd), 0);
  char *argv[16];
  int n = 0;
  argv[n++] = (char *)mpprof;
  for (int i = 0; opts && opts[i]; i++)
    argv[n++] = (char *)opts[i];
  argv[n++] = "-o";
  argv[n++] = d;
  argv[n++] = (char *)prog;
  argv[n] = NULL;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("LD_LIBRARY_PATH", simcuda, 1);
    if (!strcmp(name, "no_marks")) setenv("MPP_NO_STEP_MARKS", "1", 1); /* a program marking none */
    unsetenv("LD_PRELOAD");
    unsetenv("MPPROF_CAPTURE_RANGE");
    unsetenv("MPPROF_NVTX_CAPTURE");
    unsetenv("MPPROF_STEPS");
    if (env) putenv((char *)env);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    execv(argv[0], argv);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  free(cmd);
  free(log);
  *ret_dir = d;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int profile(const char *name, const char *const opts[], char **ret_dir) {
  return profile_env(name, NULL, opts, ret_dir);
}

static cJSON *report_of(const char *dir) {
  char *p = NULL;
  assert_true(asprintf(&p, "%s/report.json", dir) > 0);
  char *text = slurp(p);
  assert_non_null(text);
  cJSON *j = cJSON_Parse(text);
  assert_non_null(j);
  free(text);
  free(p);
  return j;
}

static char *log_of(const char *name) {
  char *p = NULL;
  assert_true(asprintf(&p, "%s/%s.log", workdir, name) > 0);
  char *s = slurp(p);
  free(p);
  assert_non_null(s);
  return s;
}

/* The steps whose layers are in the report: bit k for step/s<k>/... (or
 * capture_me/step/s<k>/...), with the calls per layer checked to be 1 each. */
static unsigned steps_in(const cJSON *rep, int *ret_calls) {
  unsigned bits = 0;
  int calls = 0;
  const cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(rep, "sites")) {
    const char *layer = cJSON_GetObjectItem(s, "layer")->valuestring;
    const char *p = strstr(layer, "step/s");
    assert_non_null(p);
    bits |= 1u << atoi(p + strlen("step/s"));
    calls += (int)cJSON_GetObjectItem(s, "calls")->valuedouble;
  }
  *ret_calls = calls;
  return bits;
}

static const cJSON *capture(const cJSON *rep) {
  return cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "summary"), "capture");
}

static double num(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  assert_true(cJSON_IsNumber(v));
  return v->valuedouble;
}

static void check_capture(const cJSON *rep, const char *mode, int captured, int not_started,
                          int stopped) {
  const cJSON *c = capture(rep);
  assert_non_null(c);
  assert_string_equal(cJSON_GetObjectItem(c, "mode")->valuestring, mode);
  assert_int_equal(num(c, "captured"), captured);
  const cJSON *out = cJSON_GetObjectItem(c, "outside");
  assert_int_equal(num(out, "not_started"), not_started);
  assert_int_equal(num(out, "stopped"), stopped);
}

/* The program's checksum line, the same with any capture range. */
static char *checksum(const char *name) {
  char *log = log_of(name);
  char *line = strstr(log, "capture checksum ");
  assert_non_null(line);
  char *out = strndup(line, strcspn(line, "\n"));
  free(log);
  return out;
}

static char *default_checksum;

static void without_a_capture_range_every_step_is_recorded(void **state) {
  (void)state;
  char *d;
  assert_int_equal(profile("all", NULL, &d), 0);
  cJSON *rep = report_of(d);
  int calls;
  assert_int_equal(steps_in(rep, &calls), 0xffu);
  assert_int_equal(calls, 16);
  check_capture(rep, "all", 16, 0, 0);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(capture(rep), "message")));
  default_checksum = checksum("all");
  cJSON_Delete(rep);
  free(d);
}

static void cuda_profiler_api_records_only_between_start_and_stop(void **state) {
  (void)state;
  char *d;
  const char *opts[] = {"--capture-range=cudaProfilerApi", NULL};
  assert_int_equal(profile("api", opts, &d), 0);
  cJSON *rep = report_of(d);
  int calls;
  /* steps 2-3 (runtime API) and 5 (driver API) */
  assert_int_equal(steps_in(rep, &calls), (1u << 2) | (1u << 3) | (1u << 5));
  assert_int_equal(calls, 6);
  check_capture(rep, "cudaProfilerApi", 6, 4, 6);
  assert_int_equal(num(capture(rep), "never_opened"), 0);
  char *log = log_of("api");
  assert_non_null(strstr(log, "capture range between cudaProfilerStart and cudaProfilerStop: 6 op "
                              "calls recorded, 10 outside it not recorded"));
  free(log);
  char *html = NULL;
  assert_true(asprintf(&html, "%s/report.html", d) > 0);
  char *page = slurp(html);
  assert_non_null(strstr(page, "Captured:"));
  free(page);
  free(html);
  char *sum = checksum("api");
  assert_string_equal(sum, default_checksum);
  free(sum);
  cJSON_Delete(rep);
  free(d);
}

/* One capture option replaces all three variables: an MPPROF_STEPS left in
 * the shell is not used with --capture-range, and the run says so (it was
 * dropped silently). */
static void an_option_says_which_capture_variable_it_replaced(void **state) {
  (void)state;
  char *d;
  const char *opts[] = {"--capture-range=cudaProfilerApi", NULL};
  assert_int_equal(profile_env("api_env", "MPPROF_STEPS=1", opts, &d), 0);
  cJSON *rep = report_of(d);
  check_capture(rep, "cudaProfilerApi", 6, 4, 6);
  char *log = log_of("api_env");
  assert_non_null(strstr(log, "mpprof: run: note: MPPROF_STEPS=1 in the environment is not used: "
                              "--capture-range, --nvtx-capture and --steps replace all three "
                              "capture variables (--steps not given)\n"));
  assert_null(strstr(log, "MPPROF_CAPTURE_RANGE="));
  free(log);
  cJSON_Delete(rep);
  free(d);
}

/* Step 6 in the main thread's range, step 7 while another thread is in one:
 * the window is open while any thread is inside the range. */
static void nvtx_capture_records_only_inside_the_named_range(void **state) {
  (void)state;
  char *d;
  const char *opts[] = {"--capture-range", "nvtx", "--nvtx-capture", "capture_me", NULL};
  assert_int_equal(profile("nvtx", opts, &d), 0);
  cJSON *rep = report_of(d);
  int calls;
  assert_int_equal(steps_in(rep, &calls), (1u << 6) | (1u << 7));
  assert_int_equal(calls, 4);
  check_capture(rep, "nvtx", 4, 12, 0);
  assert_string_equal(cJSON_GetObjectItem(capture(rep), "nvtx")->valuestring, "capture_me");
  cJSON_Delete(rep);
  free(d);
}

static void steps_records_only_the_steps_asked_for(void **state) {
  (void)state;
  char *d;
  const char *opts[] = {"--steps", "1:2", NULL};
  assert_int_equal(profile("steps", opts, &d), 0);
  cJSON *rep = report_of(d);
  int calls;
  assert_int_equal(steps_in(rep, &calls), (1u << 1) | (1u << 2));
  assert_int_equal(calls, 4);
  check_capture(rep, "steps", 4, 2, 10);
  assert_int_equal(num(capture(rep), "never_opened"), 0);
  const cJSON *steps = cJSON_GetObjectItem(capture(rep), "steps");
  assert_int_equal(cJSON_GetArrayItem(steps, 0)->valuedouble, 1);
  assert_int_equal(cJSON_GetArrayItem(steps, 1)->valuedouble, 2);
  char *sum = checksum("steps");
  assert_string_equal(sum, default_checksum);
  free(sum);
  cJSON_Delete(rep);
  free(d);
}

/* A window nothing ran in: the report says so, not "no CUDA matrix ops were
 * called", and a range that never opened is named as such, with why (it was
 * "16 before it opened", as if it had). */
static void a_window_without_calls_says_they_ran_outside_it(void **state) {
  (void)state;
  const struct {
    const char *name, *opts[5], *mode, *sentence;
  } runs[] = {
      {"empty",
       {"--steps", "100:200", NULL},
       "steps",
       "capture range steps 100 to 200: it never opened (no op call ran at step 100 or later), "
       "so none of the 16 op calls was recorded"},
      {"no_marks",
       {"--steps", "2", NULL},
       "steps",
       "capture range steps 2 to 2: it never opened (the program marked no step: mpprof_step() "
       "or NVTX mark \"step\"), so none of the 16 op calls was recorded"},
      {"empty_nvtx",
       {"--capture-range", "nvtx", "--nvtx-capture", "never_pushed", NULL},
       "nvtx",
       "capture range inside NVTX ranges \"never_pushed\": it never opened (no thread pushed "
       "that NVTX range), so none of the 16 op calls was recorded"},
  };
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    char *d;
    assert_int_equal(profile(runs[i].name, runs[i].opts, &d), 0);
    cJSON *rep = report_of(d);
    check_capture(rep, runs[i].mode, 0, 16, 0);
    assert_int_equal(num(capture(rep), "never_opened"), 1);
    assert_string_equal(cJSON_GetObjectItem(capture(rep), "message")->valuestring,
                        runs[i].sentence);
    const char *msg =
        cJSON_GetObjectItem(cJSON_GetObjectItem(rep, "summary"), "message")->valuestring;
    assert_non_null(strstr(msg, "inside the capture range (16 ran outside it)"));
    char *log = log_of(runs[i].name);
    assert_non_null(strstr(log, "no CUDA matrix op ran inside the capture range"));
    assert_non_null(strstr(log, runs[i].sentence));
    free(log);
    cJSON_Delete(rep);
    free(d);
  }
}

/* Steps that go past the window without a call inside it (marked 0, 2, 4,
 * ...; --steps 3): it never opened, and the calls after it are not "after it
 * closed" (it said opened, "0 op calls recorded, 16 outside it not recorded
 * (4 before it opened, 12 after it closed)"). */
static void steps_that_skip_the_window_never_open_it(void **state) {
  (void)state;
  char *d;
  const char *opts[] = {"--steps", "3", NULL};
  assert_int_equal(profile_env("stride", "MPP_STEP_STRIDE=2", opts, &d), 0);
  cJSON *rep = report_of(d);
  check_capture(rep, "steps", 0, 4, 12);
  assert_int_equal(num(capture(rep), "never_opened"), 1);
  assert_string_equal(cJSON_GetObjectItem(capture(rep), "message")->valuestring,
                      "capture range steps 3 to 3: it never opened (no op call ran at step 3: 4 "
                      "ran before it, 12 after it), so none of the 16 op calls was recorded");
  cJSON_Delete(rep);
  free(d);
}

static void bad_values_are_one_line_and_exit_2(void **state) {
  (void)state;
  const char *bad[][5] = {
      {"--capture-range=sometimes", NULL},
      {"--capture-range=nvtx", NULL},
      {"--nvtx-capture", "x", NULL},
      {"--steps", "5:2", NULL},
      {"--steps", "two", NULL},
      {"--steps", "1:2", "--capture-range=cudaProfilerApi", NULL},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *d;
    assert_int_equal(profile("bad", bad[i], &d), 2);
    char *log = log_of("bad");
    assert_true(!strncmp(log, "mpprof: run: ", 13));
    assert_int_equal(strchr(log, '\n') - log + 1, (long)strlen(log)); /* one line */
    free(log);
    free(d);
  }
}

int main(void) {
  mpprof = getenv("MPP_MPPROF");
  prog = getenv("MPP_CAPTURE_PROG");
  simcuda = getenv("MPP_SIMCUDA");
  workdir = getenv("MPP_WORKDIR");
  if (!mpprof || !prog || !simcuda || !workdir) {
    fprintf(stderr, "needs MPP_MPPROF, MPP_CAPTURE_PROG, MPP_SIMCUDA, MPP_WORKDIR\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(without_a_capture_range_every_step_is_recorded),
      cmocka_unit_test(cuda_profiler_api_records_only_between_start_and_stop),
      cmocka_unit_test(an_option_says_which_capture_variable_it_replaced),
      cmocka_unit_test(nvtx_capture_records_only_inside_the_named_range),
      cmocka_unit_test(steps_records_only_the_steps_asked_for),
      cmocka_unit_test(a_window_without_calls_says_they_ran_outside_it),
      cmocka_unit_test(steps_that_skip_the_window_never_open_it),
      cmocka_unit_test(bad_values_are_one_line_and_exit_2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
