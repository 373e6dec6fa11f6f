/* End to end under simcuda: trace.json of `mpprof -o OUT mlp_train --steps 6`
 * shows the real NVTX ranges the runtime recorded (mlp_train pushes "step"
 * once per step, then mlp / fcN / fwd|bwd, loss, optimizer), every op inside
 * the ranges it was issued in (written parent first), and every GPU kernel
 * on its stream's track with a flow arrow from the op that launched it.
 *
 * Paths from the environment (set by meson): MPP_MPPROF, MPP_MLP_TRAIN,
 * MPP_SIMCUDA, MPP_WORKDIR. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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

#include "profiler/mpp.h"
#include "rawgen.h"

#define STEPS 6

static const char *mpprof, *mlp_train, *simcuda, *workdir;
static cJSON *trace, *raw;

static int run(char *const argv[]) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("LD_LIBRARY_PATH", simcuda, 1);
    unsetenv("LD_PRELOAD");
    char log[4200];
    snprintf(log, sizeof log, "%s/log.txt", workdir);
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
    execv(argv[0], argv);
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int setup(void **state) {
  (void)state;
  char *d = NULL, *cmd = NULL;
  assert_true(asprintf(&d, "%s/mlp", workdir) > 0);
  assert_true(asprintf(&cmd, "rm -rf '%s' && mkdir -p '%s'", d, workdir) > 0);
  assert_int_equal(system(cmd), 0);
  char steps[16];
  snprintf(steps, sizeof steps, "%d", STEPS);
  char *argv[] = {(char *)mpprof, "-o", d, (char *)mlp_train, "--steps", steps, NULL};
  assert_int_equal(run(argv), 0);
  trace = rg_read_json(d, "trace.json");
  char *rawdir = NULL;
  assert_true(asprintf(&rawdir, "%s/raw", d) > 0);
  /* the one raw file */
  char *ls = NULL;
  assert_true(asprintf(&ls, "ls '%s'", rawdir) > 0);
  FILE *p = popen(ls, "r");
  char name[512] = "";
  assert_non_null(fgets(name, sizeof name, p));
  pclose(p);
  name[strcspn(name, "\n")] = '\0';
  raw = rg_read_json(rawdir, name);
  assert_non_null(trace);
  assert_non_null(raw);
  free(d);
  free(cmd);
  free(rawdir);
  free(ls);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  cJSON_Delete(trace);
  cJSON_Delete(raw);
  return 0;
}

static const char *s_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

static double n_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItem(o, k);
  assert_true(cJSON_IsNumber(v));
  return v->valuedouble;
}

static bool is(const cJSON *e, const char *ph, const char *cat) {
  return !strcmp(s_of(e, "ph"), ph) && (!cat || !strcmp(s_of(e, "cat"), cat));
}

/* ts/dur are microseconds with 3 decimals: ns exact, compared with half a ns of slack. */
static bool inside(const cJSON *in, const cJSON *out) {
  double a = n_of(in, "ts"), b = a + n_of(in, "dur");
  double c = n_of(out, "ts"), d = c + n_of(out, "dur");
  return n_of(in, "pid") == n_of(out, "pid") && n_of(in, "tid") == n_of(out, "tid") &&
         c <= a + 5e-4 && b <= d + 5e-4;
}

static void there_is_one_step_slice_per_step(void **state) {
  (void)state;
  int steps = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(trace, "traceEvents")) {
    if (is(e, "X", "range") && !strcmp(s_of(e, "name"), "step")) steps++;
  }
  assert_int_equal(steps, STEPS);
  /* the same count the program's step marks give */
  const cJSON *marked = cJSON_GetObjectItem(
      cJSON_GetObjectItem(cJSON_GetObjectItem(raw, "training"), "steps"), "marked");
  assert_int_equal(marked->valuedouble, steps);
  /* and nothing hit a cap */
  const cJSON *tl = cJSON_GetObjectItem(raw, "timeline");
  assert_int_equal(n_of(tl, "ranges_dropped"), 0);
  assert_int_equal(n_of(tl, "kernel_events_dropped"), 0);
}

/* The ranges enclosing the op, outermost first, spell its layer path, and
 * each of them comes before the op in the file. Returns the ops seen. */
static int check_nesting(const cJSON *tr) {
  const cJSON *evs = cJSON_GetObjectItem(tr, "traceEvents");
  int ops = 0;
  for (int i = 0; i < cJSON_GetArraySize(evs); i++) {
    const cJSON *op = cJSON_GetArrayItem(evs, i);
    if (!is(op, "X", "op")) continue;
    ops++;
    const char *layer = s_of(cJSON_GetObjectItem(op, "args"), "layer");
    char path[1024] = "";
    int nenc = 0;
    /* depth by depth: exactly one range of that depth encloses the op */
    for (int depth = 0;; depth++) {
      const cJSON *hit = NULL;
      for (int j = 0; j < cJSON_GetArraySize(evs); j++) {
        const cJSON *r = cJSON_GetArrayItem(evs, j);
        if (!is(r, "X", "range") || n_of(cJSON_GetObjectItem(r, "args"), "depth") != depth ||
            !inside(op, r))
          continue;
        assert_null(hit);
        hit = r;
        assert_true(j < i); /* parent first */
      }
      if (!hit) break;
      nenc++;
      if (depth) strcat(path, "/");
      strcat(path, s_of(hit, "name"));
    }
    assert_true(nenc >= 2);
    assert_string_equal(path, layer);
  }
  return ops;
}

static void each_op_lies_inside_the_ranges_it_was_issued_in(void **state) {
  (void)state;
  assert_true(check_nesting(trace) >= 4 * STEPS);
}

/* Four threads training at once while checkpoints read their range buffers:
 * each thread's track has its own STEPS step slices and its ops nest. */
static void ranges_are_per_thread(void **state) {
  (void)state;
  char *d = NULL, *cmd = NULL;
  assert_true(asprintf(&d, "%s/mlp-threads", workdir) > 0);
  assert_true(asprintf(&cmd, "rm -rf '%s'", d) > 0);
  assert_int_equal(system(cmd), 0);
  char steps[16];
  snprintf(steps, sizeof steps, "%d", STEPS);
  char *argv[] = {(char *)mpprof, "--checkpoint", "0.01",      "-o", d,   (char *)mlp_train,
                  "--steps",      steps,          "--threads", "4",  NULL};
  assert_int_equal(run(argv), 0);
  cJSON *tr = rg_read_json(d, "trace.json");
  assert_non_null(tr);
  double tids[8];
  int counts[8] = {0}, ntids = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(tr, "traceEvents")) {
    if (!is(e, "X", "range") || strcmp(s_of(e, "name"), "step")) continue;
    int k = 0;
    while (k < ntids && tids[k] != n_of(e, "tid"))
      k++;
    if (k == ntids) {
      assert_true(ntids < 8);
      tids[ntids++] = n_of(e, "tid");
    }
    counts[k]++;
  }
  assert_int_equal(ntids, 4);
  for (int k = 0; k < ntids; k++)
    assert_int_equal(counts[k], STEPS);
  assert_true(check_nesting(tr) >= 4 * 4 * STEPS);
  cJSON_Delete(tr);
  free(d);
  free(cmd);
}

static void each_kernel_has_a_flow_from_its_op(void **state) {
  (void)state;
  const cJSON *evs = cJSON_GetObjectItem(trace, "traceEvents"), *k;
  int kernels = 0;
  cJSON_ArrayForEach(k, evs) {
    if (!is(k, "X", "kernel")) continue;
    kernels++;
    const cJSON *ka = cJSON_GetObjectItem(k, "args");
    /* on its stream's track, not a thread's (Linux tids are below 2^22),
     * and inside the 31 bits Perfetto keeps of a tid */
    assert_true(n_of(k, "tid") >= 0x1p30 && n_of(k, "tid") < 0x1p31);
    const cJSON *fin = NULL, *e;
    cJSON_ArrayForEach(e, evs) {
      if (is(e, "f", "launch") && n_of(e, "pid") == n_of(k, "pid") &&
          n_of(e, "tid") == n_of(k, "tid") && fabs(n_of(e, "ts") - n_of(k, "ts")) < 5e-4) {
        assert_null(fin);
        fin = e;
      }
    }
    assert_non_null(fin);
    assert_string_equal(s_of(fin, "bp"), "e");
    const cJSON *start = NULL;
    cJSON_ArrayForEach(e, evs) {
      if (is(e, "s", "launch") && n_of(e, "id") == n_of(fin, "id")) start = e;
    }
    assert_non_null(start);
    /* the flow starts inside the op that launched the kernel: same site and call */
    const cJSON *op = NULL;
    cJSON_ArrayForEach(e, evs) {
      if (!is(e, "X", "op")) continue;
      const cJSON *oa = cJSON_GetObjectItem(e, "args");
      double ts = n_of(start, "ts");
      if (n_of(e, "pid") == n_of(start, "pid") && n_of(e, "tid") == n_of(start, "tid") &&
          n_of(e, "ts") <= ts + 5e-4 && ts <= n_of(e, "ts") + n_of(e, "dur") + 5e-4 &&
          n_of(oa, "site") == n_of(ka, "site") && n_of(oa, "call") == n_of(ka, "call"))
        op = e;
    }
    assert_non_null(op);
    /* The kernel runs after its launch began (under simcuda about 0.2 us
     * later), as far as two clocks tell: the op's time is mpprof's (the
     * TSC, within MPP_CLOCK_ERROR_NS of CLOCK_REALTIME), the kernel's is
     * simcuda's clock_gettime. */
    if (n_of(k, "ts") + MPP_CLOCK_ERROR_NS / 1e3 < n_of(op, "ts"))
      fail_msg("kernel at %.3f us, %.3f us before its op", n_of(k, "ts"),
               n_of(op, "ts") - n_of(k, "ts"));
  }
  assert_true(kernels >= 4 * STEPS);
}

int main(void) {
  mpprof = getenv("MPP_MPPROF");
  mlp_train = getenv("MPP_MLP_TRAIN");
  simcuda = getenv("MPP_SIMCUDA");
  workdir = getenv("MPP_WORKDIR");
  if (!mpprof || !mlp_train || !simcuda || !workdir) {
    fprintf(stderr, "needs MPP_MPPROF, MPP_MLP_TRAIN, MPP_SIMCUDA, MPP_WORKDIR\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(there_is_one_step_slice_per_step),
      cmocka_unit_test(each_op_lies_inside_the_ranges_it_was_issued_in),
      cmocka_unit_test(each_kernel_has_a_flow_from_its_op),
      cmocka_unit_test(ranges_are_per_thread),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
