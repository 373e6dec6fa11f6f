/* End-to-end tests of `mpprof run` with libmpprof.so under simcuda: the
 * samples (mlp_train, conv_train with both cuDNN APIs) and the purpose-built
 * mpp_testprog modes run with and without mpprof; the raw files must record
 * every op with the right API, layer, dtypes, shape and scans, and the
 * program's output and exit status must be the same as without mpprof.
 *
 * Paths come from the environment (set by meson): MPP_MPPROF, MPP_TESTPROG,
 * MPP_MLP_TRAIN, MPP_CONV_TRAIN, MPP_SIMCUDA (the stand-in libraries),
 * MPP_WORKDIR (a scratch directory owned by this test), MPP_LT_COUNT (a
 * cuBLASLt shim counting descriptor getter calls: lt_getter_count.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "sim_run.h"

static const char *mpprof, *testprog, *mlp_train, *conv_train, *lt_count, *status_swap;

/* --- running programs (slurp, spawn, wait_status, run, outdir: sim_run.h) --- */

/* Runs PROG ARGS plain and under `mpprof -o dir`; both must print the same and
 * exit the same. Returns the (identical) exit status. */
static int run_both(const char *dir, char *const prog_argv[], const char *const mpprof_opts[]) {
  result plain = run(prog_argv, NULL);
  char *argv[64];
  int n = 0;
  argv[n++] = (char *)mpprof;
  argv[n++] = "-o";
  argv[n++] = (char *)dir;
  for (int i = 0; mpprof_opts && mpprof_opts[i]; i++)
    argv[n++] = (char *)mpprof_opts[i];
  argv[n++] = "--";
  for (int i = 0; prog_argv[i]; i++)
    argv[n++] = prog_argv[i];
  argv[n] = NULL;
  result prof = run(argv, NULL);
  assert_string_equal(prof.out, plain.out);
  assert_int_equal(prof.status, plain.status);
  free(plain.out);
  free(prof.out);
  return prof.status;
}

/* The libmpprof.so of this build in lib: next to mpprof, in profiler/. */
static void libmpprof_path(char *lib, size_t n) {
  snprintf(lib, n, "%s", mpprof);
  char *slash = strrchr(lib, '/');
  assert_non_null(slash);
  snprintf(slash, n - (size_t)(slash - lib), "/profiler/libmpprof.so");
}

/* --- raw files --- */

typedef struct raws {
  int n;
  cJSON *doc[16];
} raws;

static raws load_raws(const char *dir) {
  raws r = {0};
  char raw[4300];
  snprintf(raw, sizeof raw, "%s/raw", dir);
  DIR *d = opendir(raw);
  if (!d) return r;
  struct dirent *e;
  while ((e = readdir(d)) && r.n < 16) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 5, ".json")) continue;
    char p[4600];
    snprintf(p, sizeof p, "%s/%s", raw, e->d_name);
    char *s = slurp(p);
    r.doc[r.n] = cJSON_Parse(s);
    free(s);
    assert_non_null(r.doc[r.n]);
    r.n++;
  }
  closedir(d);
  return r;
}

static void free_raws(raws *r) {
  for (int i = 0; i < r->n; i++)
    cJSON_Delete(r->doc[i]);
}

/* dir/report.json, parsed. */
static cJSON *report_json(const char *dir) {
  char path[4300];
  snprintf(path, sizeof path, "%s/report.json", dir);
  char *text = slurp(path);
  cJSON *rep = cJSON_Parse(text);
  free(text);
  assert_non_null(rep);
  return rep;
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
  assert_non_null(v);
  return cJSON_GetNumberValue(v);
}

static const char *str(cJSON *o, const char *path) {
  cJSON *v = get(o, path);
  return v ? cJSON_GetStringValue(v) : NULL;
}

static bool str_is(cJSON *o, const char *path, const char *want) {
  const char *s = str(o, path);
  return s && !strcmp(s, want);
}

/* The site with this api, layer and op kind (NULL: any); fails when absent. */
static cJSON *site(cJSON *doc, const char *api, const char *layer, const char *op) {
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(doc, "sites")) {
    if ((!api || str_is(s, "api", api)) && (!layer || str_is(s, "layer", layer)) &&
        (!op || str_is(s, "op", op)))
      return s;
  }
  fprintf(stderr, "no site api=%s layer=%s op=%s\n", api ? api : "*", layer ? layer : "*",
          op ? op : "*");
  fail();
  return NULL;
}

static int nsites(cJSON *doc) {
  return cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites"));
}

/* Every tensor role was scanned on every call: counts add up to calls x size. */
static void assert_role_scanned(cJSON *s, const char *role, double elements_per_call) {
  char path[64];
  snprintf(path, sizeof path, "tensors.%s.count", role);
  assert_true(num(s, path) == elements_per_call * num(s, "calls"));
}

/* Whether the file's incomplete_reasons has one starting with prefix. */
static bool has_reason(cJSON *doc, const char *prefix) {
  const cJSON *x;
  cJSON_ArrayForEach(x, get(doc, "incomplete_reasons")) {
    if (cJSON_IsString(x) && !strncmp(x->valuestring, prefix, strlen(prefix))) return true;
  }
  return false;
}

/* --- mlp_train --- */

static void check_mlp_sites(cJSON *doc, int calls_per_site) {
  /* fc1: grouped linear, 4 heads of [32 x 16] x [16 x 128]. */
  cJSON *s = site(doc, "cublasGemmStridedBatchedEx", "step/mlp/fc1/fwd", "gemm");
  assert_int_equal(num(s, "m"), 32);
  assert_int_equal(num(s, "n"), 128);
  assert_int_equal(num(s, "k"), 16);
  assert_int_equal(num(s, "batch"), 4);
  assert_true(str_is(s, "types.A", "fp16") && str_is(s, "types.B", "fp16"));
  assert_true(str_is(s, "types.D", "fp32"));
  assert_true(str_is(s, "compute_type", "32F"));
  assert_int_equal(num(s, "calls"), calls_per_site);
  assert_int_equal(num(s, "scanned_calls"), calls_per_site);
  assert_role_scanned(s, "A", 32 * 16 * 4);
  assert_role_scanned(s, "B", 16 * 128 * 4);
  assert_role_scanned(s, "D", 32 * 128 * 4);
  /* fc2: cuBLASLt with a bias epilogue. */
  s = site(doc, "cublasLtMatmul", "step/mlp/fc2/fwd", "gemm");
  assert_true(str_is(s, "epilogue", "BIAS"));
  assert_int_equal(num(s, "m"), 64);
  assert_int_equal(num(s, "n"), 128);
  assert_int_equal(num(s, "k"), 128);
  assert_role_scanned(s, "A", 64 * 128);
  assert_role_scanned(s, "D", 64 * 128);
  /* fc3 forward and every backward GEMM: cublasGemmEx. */
  s = site(doc, "cublasGemmEx", "step/mlp/fc3/fwd", "gemm");
  assert_int_equal(num(s, "m"), 16);
  assert_role_scanned(s, "B", 64 * 128);
  site(doc, "cublasGemmEx", "step/mlp/fc3/bwd", "gemm");
  site(doc, "cublasGemmEx", "step/mlp/fc2/bwd", "gemm");
  site(doc, "cublasGemmStridedBatchedEx", "step/mlp/fc1/bwd", "gemm");
  /* cuBLAS's inner cublasLtMatmul calls are not sites of their own. */
  cJSON *x;
  cJSON_ArrayForEach(x, cJSON_GetObjectItem(doc, "sites")) {
    if (str_is(x, "api", "cublasLtMatmul")) assert_true(str_is(x, "layer", "step/mlp/fc2/fwd"));
    assert_int_equal(num(x, "calls"), calls_per_site);
    assert_non_null(get(x, "tensors.D"));
  }
}

static void mlp_train_records_every_gemm_with_layer_dtypes_and_scans(void **state) {
  (void)state;
  const char *dir = outdir("mlp");
  char *argv[] = {(char *)mlp_train, "--precision", "fp16", "--steps", "3", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsTrue(get(r.doc[0], "final")));
  assert_true(cJSON_IsFalse(get(r.doc[0], "incomplete")));
  check_mlp_sites(r.doc[0], 3);
  free_raws(&r);
}

static void mlp_train_with_8_threads_is_unchanged_and_fully_recorded(void **state) {
  (void)state;
  const char *dir = outdir("mlp8");
  char *argv[] = {(char *)mlp_train, "--precision", "fp16", "--steps", "2", "--threads", "8", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  check_mlp_sites(r.doc[0], 8 * 2);
  free_raws(&r);
}

static void mlp_train_tf32_is_visible_as_math_mode_and_compute_type(void **state) {
  (void)state;
  const char *dir = outdir("mlptf32");
  char *argv[] = {(char *)mlp_train, "--precision", "tf32", "--steps", "1", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  cJSON *s = site(r.doc[0], "cublasGemmEx", "step/mlp/fc3/fwd", NULL);
  assert_true(str_is(s, "types.A", "fp32"));
  const char *mm = str(s, "math_mode");
  assert_non_null(mm);
  assert_non_null(strstr(mm, "TF32_TENSOR_OP"));
  s = site(r.doc[0], "cublasLtMatmul", NULL, NULL);
  assert_true(str_is(s, "compute_type", "32F_FAST_TF32"));
  free_raws(&r);
}

/* --- conv_train, both cuDNN APIs --- */

/* apis: forward, backward data, backward filter entry points. */
static void check_conv_sites(cJSON *doc, const char *const apis[3]) {
  assert_int_equal(nsites(doc), 5);
  cJSON *s = site(doc, apis[0], "step/cnn/conv1/fwd", "conv_fwd");
  assert_int_equal(num(s, "conv.c"), 8);
  assert_int_equal(num(s, "conv.k"), 16);
  assert_int_equal(num(s, "conv.r"), 3);
  assert_int_equal(num(s, "conv.pad.0"), 1);
  assert_true(str_is(s, "types.x", "fp16") && str_is(s, "types.w", "fp16"));
  assert_true(str_is(s, "compute_type", "fp32"));
  assert_role_scanned(s, "x", 4 * 8 * 16 * 16);
  assert_role_scanned(s, "w", 16 * 8 * 3 * 3);
  assert_role_scanned(s, "y", 4 * 16 * 16 * 16);
  s = site(doc, apis[1], "step/cnn/conv2/bwd", "conv_bwd_data");
  assert_role_scanned(s, "dy", 4 * 16 * 16 * 16);
  assert_role_scanned(s, "dx", 4 * 16 * 16 * 16);
  s = site(doc, apis[2], "step/cnn/conv1/bwd", "conv_bwd_filter");
  assert_role_scanned(s, "dw", 16 * 8 * 3 * 3);
  site(doc, apis[0], "step/cnn/conv2/fwd", "conv_fwd");
  site(doc, apis[2], "step/cnn/conv2/bwd", "conv_bwd_filter");
}

static void conv_train_legacy_api_records_every_convolution(void **state) {
  (void)state;
  const char *dir = outdir("convlegacy");
  char *argv[] = {(char *)conv_train, "--api", "legacy", "--precision", "fp16",
                  "--steps",          "1",     NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  static const char *const apis[3] = {"cudnnConvolutionForward", "cudnnConvolutionBackwardData",
                                      "cudnnConvolutionBackwardFilter"};
  check_conv_sites(r.doc[0], apis);
  /* conv_train asks for Tensor Core math on its legacy descriptors. */
  const char *mt = str(site(r.doc[0], apis[0], "step/cnn/conv1/fwd", NULL), "conv_math_type");
  assert_non_null(mt);
  assert_non_null(strstr(mt, "TENSOR_OP_MATH"));
  free_raws(&r);
}

static void conv_train_backend_api_records_every_convolution(void **state) {
  (void)state;
  const char *dir = outdir("convbackend");
  char *argv[] = {(char *)conv_train, "--api", "backend", "--precision", "fp16",
                  "--steps",          "1",     NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  static const char *const apis[3] = {"cudnnBackendExecute", "cudnnBackendExecute",
                                      "cudnnBackendExecute"};
  check_conv_sites(r.doc[0], apis);
  free_raws(&r);
}

/* --- purpose-built programs --- */

/* Runs `mpp_testprog MODE` plain and under mpprof with opts (same output,
 * exit 0) into a directory named after the mode; returns its raw files. */
static raws run_mode(const char *mode, const char *const opts[]) {
  const char *dir = outdir(mode);
  char *argv[] = {(char *)testprog, (char *)mode, NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  return load_raws(dir);
}

/* run_mode's raw files in *r; returns the backend convolution's site (layer "conv"). */
static cJSON *backend_conv_site(const char *mode, raws *r) {
  *r = run_mode(mode, NULL);
  return site(r->doc[0], "cudnnBackendExecute", "conv", "conv_fwd");
}

/* Whether `mpp_testprog MODE` under mpprof says `says` on stderr: the
 * address reuse a mode arranges with glibc's allocator (AddressSanitizer's
 * holds freed memory back: there, true). */
static bool mode_says(const char *mode, const char *says) {
  char dir[64];
  snprintf(dir, sizeof dir, "%s-stderr", mode);
  char *prof[] = {(char *)mpprof, "-o", (char *)outdir(dir), "--", (char *)testprog,
                  (char *)mode,   NULL};
  result e = run_err(prof, NULL);
  assert_int_equal(e.status, 0);
#ifndef __SANITIZE_ADDRESS__
  bool said = strstr(e.err, says);
#else
  (void)says;
  bool said = true;
#endif
  free(e.out);
  free(e.err);
  return said;
}

static void cudnn_autotuning_executions_are_counted_apart(void **state) {
  (void)state;
  raws r;
  cJSON *s = backend_conv_site("autotune", &r);
  assert_int_equal(nsites(r.doc[0]), 1);
  assert_int_equal(num(s, "calls"), 4); /* plan A once, B (tuning), then A three times */
  assert_int_equal(num(s, "autotune_calls"), 1);
  assert_int_equal(num(s, "scanned_calls"), 4);
  assert_int_equal(num(s, "conv.c"), 4);
  assert_true(str_is(s, "types.x", "fp32"));
  assert_role_scanned(s, "x", 4 * 8 * 8);
  assert_role_scanned(s, "y", 4 * 8 * 8);
  free_raws(&r);
}

/* 4 x 3000 descriptors created and destroyed around the executions: the
 * shadow table is rebuilt (tombstones dropped, grown) many times, and the
 * plans, graph and variant packs are still followed exactly. */
static void descriptor_churn_keeps_the_backend_plans_followed(void **state) {
  (void)state;
  const char *dir = outdir("churn");
  char *argv[] = {(char *)testprog, "churn", "3000", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(nsites(r.doc[0]), 1);
  cJSON *s = site(r.doc[0], "cudnnBackendExecute", "conv", "conv_fwd");
  assert_int_equal(num(s, "calls"), 4);
  assert_int_equal(num(s, "autotune_calls"), 1);
  assert_int_equal(num(s, "conv.c"), 4);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(r.doc[0], "incomplete")));
  free_raws(&r);
}

/* mpprof follows a thread's own variant pack apart from the shared table
 * (PyTorch makes, executes and destroys one per execution on one thread).
 * Of the five executions counted, the second's pack is made while another
 * is held (it goes to the table) and the fifth's just before another is
 * made: both are scanned. The third's pack is made on another thread, and
 * the fourth's gets its pointers and is finalized there, replacing the
 * decoys (x: 1e20 everywhere) set here. Those two are counted but not
 * scanned: no pointer that another thread may have replaced is read (x's
 * decoys would show in its count), and the run says so. */
static void variant_packs_used_across_threads_are_never_scanned_stale(void **state) {
  (void)state;
  raws r;
  cJSON *s = backend_conv_site("packthreads", &r);
  assert_int_equal(num(s, "calls"), 5);
  assert_int_equal(num(s, "autotune_calls"), 1);
  assert_int_equal(num(s, "tensors.x.count"), 3 * 4 * 8 * 8);
  assert_int_equal(num(s, "tensors.y.count"), 3 * 4 * 8 * 8);
  assert_int_equal(num(s, "not_scanned.pointer_unreadable"), 2 * 3);
  assert_true(cJSON_IsTrue(get(r.doc[0], "incomplete")));
  assert_true(has_reason(r.doc[0], "a cuDNN variant pack made on another thread"));
  free_raws(&r);
}

/* A thread remembers the plan it executed last with its graph: a plan
 * destroyed (with its graph) and another of another graph made at its
 * address must be looked up afresh, not taken for the first (whose graph is
 * freed). Two sites, one per graph's shape; the program says on stderr that
 * the allocator did give the second plan the first's address (glibc's does;
 * AddressSanitizer's does not). */
static void a_plan_made_at_a_destroyed_plans_address_is_its_own(void **state) {
  (void)state;
  raws r = run_mode("planswap", NULL);
  assert_int_equal(nsites(r.doc[0]), 2);
  double ms = 0; /* m: 8 x 8 and 16 x 16 output pixels */
  cJSON *s;
  cJSON_ArrayForEach(s, get(r.doc[0], "sites")) {
    assert_true(str_is(s, "api", "cudnnBackendExecute") && str_is(s, "layer", "swap"));
    assert_int_equal(num(s, "calls"), 1);
    assert_true(num(s, "tensors.x.count") == 4 * num(s, "m"));
    ms += num(s, "m");
  }
  assert_true(ms == 8 * 8 + 16 * 16);
  free_raws(&r);
  assert_true(mode_says("planswap", "the second plan is at the first's address"));
}

/* A pack another thread destroyed, whose address that thread's next pack
 * took (decoy pointers set there), then given its real pointers here by a
 * thread that still took it for its own: the execution is recorded but not
 * scanned (the decoy x, 1e20, must not be read), and the run says so. */
static void a_pack_at_a_reused_address_changed_elsewhere_is_not_scanned(void **state) {
  (void)state;
  raws r = run_mode("packreuse", NULL);
  cJSON *s = site(r.doc[0], "cudnnBackendExecute", "reuse", "conv_fwd");
  assert_int_equal(num(s, "calls"), 1);
  assert_null(get(s, "tensors.x"));
  assert_int_equal(num(s, "not_scanned.pointer_unreadable"), 3);
  assert_true(has_reason(r.doc[0], "a cuDNN variant pack made on another thread"));
  free_raws(&r);
  assert_true(mode_says("packreuse", "pack is at the destroyed one's address"));
}

/* The backend convolution site of layer: `calls` executions, x and y
 * scanned in each; returns it. */
static cJSON *assert_conv_scanned(cJSON *doc, const char *layer, int calls) {
  cJSON *s = site(doc, "cudnnBackendExecute", layer, "conv_fwd");
  assert_int_equal(num(s, "calls"), calls);
  assert_role_scanned(s, "x", 4 * 8 * 8);
  assert_role_scanned(s, "y", 4 * 8 * 8);
  return s;
}

/* Two threads hold their own packs, made, set and finalized, while a third
 * executes and destroys a pack made on yet another thread; then one of
 * the two destroys its pack while the other holds its next. Those three
 * executions (layers "a", "b") are each scanned: what happened to one pack
 * is never a reason to distrust another thread's. Only the pack used
 * across threads (layer "x") goes unscanned, and the run says so. */
static void a_pack_used_across_threads_leaves_other_threads_packs_trusted(void **state) {
  (void)state;
  const char *opts[] = {"--sample", "1", NULL};
  raws r = run_mode("packcascade", opts);
  assert_int_equal(nsites(r.doc[0]), 3);
  cJSON *x = site(r.doc[0], "cudnnBackendExecute", "x", "conv_fwd");
  assert_int_equal(num(x, "calls"), 1);
  assert_null(get(x, "tensors.x"));
  assert_int_equal(num(x, "not_scanned.pointer_unreadable"), 3);
  const char *layers[2] = {"a", "b"};
  for (int i = 0; i < 2; i++) {
    cJSON *s = assert_conv_scanned(r.doc[0], layers[i], i + 1);
    assert_null(get(s, "not_scanned.pointer_unreadable"));
  }
  assert_true(has_reason(r.doc[0], "a cuDNN variant pack made on another thread"));
  free_raws(&r);
}

/* 160 threads alive at once, more than mpprof keeps own-pack slots for,
 * each executing a pack of its own: the threads beyond the slots keep
 * theirs in the shared table, and every execution is scanned. */
static void more_threads_than_pack_slots_are_each_scanned(void **state) {
  (void)state;
  const char *opts[] = {"--sample", "1", NULL};
  raws r = run_mode("packmany", opts);
  assert_conv_scanned(r.doc[0], "many", 160);
  assert_false(cJSON_IsTrue(get(r.doc[0], "incomplete")));
  free_raws(&r);
}

/* One execution whose pack is held while another thread makes and destroys
 * a knob choice (a type mpprof does not shadow) and destroys NULL; then
 * four threads execute their own plans, a variant pack each time, while a
 * fifth makes and destroys knob choices and plans. Every execution is
 * recorded and scanned in its layer, and nothing is noted incomplete: a
 * descriptor mpprof knows of is never taken for another thread's pack. */
static void backend_executions_on_four_threads_are_each_scanned(void **state) {
  (void)state;
  const char *opts[] = {"--sample", "1", NULL};
  raws r = run_mode("convthreads", opts);
  assert_int_equal(nsites(r.doc[0]), 5);
  assert_conv_scanned(r.doc[0], "main", 1);
  for (int i = 0; i < 4; i++) {
    char l[8];
    snprintf(l, sizeof l, "t%d", i);
    assert_conv_scanned(r.doc[0], l, 200);
  }
  assert_false(cJSON_IsTrue(get(r.doc[0], "incomplete")));
  free_raws(&r);
}

/* The application passes an operation descriptor where the variant pack
 * belongs, then a variant pack it never finalized (pointers not valid yet):
 * cuDNN refuses both calls and reads nothing. mpprof must not read that
 * shadow as a variant pack (its fields would become pointers to scan) nor
 * scan the unfinalized pack's pointers. The program's output is the same;
 * the autotune executions are recorded as usual. */
static void a_wrong_descriptor_type_as_variant_pack_is_refused_not_scanned(void **state) {
  (void)state;
  const char *dir = outdir("wrongpack");
  char *argv[] = {(char *)testprog, "wrongpack", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_int_equal(num(site(r.doc[0], "cudnnBackendExecute", "conv", NULL), "calls"), 4);
  free_raws(&r);
}

static void inner_cublasLt_call_under_cublasGemmEx_is_recorded_once(void **state) {
  (void)state;
  const char *dir = outdir("inner");
  char *argv[] = {(char *)testprog, "gemmex", "4", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(nsites(r.doc[0]), 1);
  cJSON *s = site(r.doc[0], "cublasGemmEx", "t/gemmex", NULL);
  assert_int_equal(num(s, "calls"), 4);
  assert_int_equal(num(r.doc[0], "calls"), 4);
  free_raws(&r);
}

static void a_64_group_gemm_on_a_small_thread_stack_is_recorded_per_group(void **state) {
  (void)state;
  const char *dir = outdir("groups64");
  char *argv[] = {(char *)testprog, "groups64", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  cJSON *s = site(r.doc[0], "cublasSgemmGroupedBatched", "t/groups", NULL);
  assert_int_equal(num(s, "calls"), 64);
  free_raws(&r);
}

/* A grouped GEMM of 70 groups (MoE with more experts than 64): every group is
 * recorded. The hook kept 64 and noted max_groups, and the layer's verdict
 * rested on the 64: the 70th group's values, past fp16's range, were not in
 * it, and the report called the layer fp16. In the default configuration:
 * the groups share a site, and --sample auto counted each group as a call of
 * it, so the 70th (its 70th "call", 1 in 2 past the 64th) was not scanned. */
static void a_70_group_gemm_records_every_group(void **state) {
  (void)state;
  const char *dir = outdir("groups70");
  char *argv[] = {(char *)testprog, "groups70", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  cJSON *s = site(r.doc[0], "cublasSgemmGroupedBatched", "t/groups", NULL);
  assert_int_equal(num(s, "calls"), 70);
  assert_int_equal(num(s, "scanned_calls"), 70);
  assert_true(num(s, "tensors.D.absmax") > 65504); /* the 70th group's alpha 1e5 */
  assert_false(has_reason(r.doc[0], "grouped GEMM calls with more than"));
  free_raws(&r);
}

/* A mixture of experts called many times: 128 experts of one shape in one
 * grouped call, 300 calls, expert 65's output beyond fp16. --sample auto
 * samples the grouped calls, each scanned whole or not at all, so every
 * expert is seen. Sampled per group, the groups' indices ran 128 apart: past
 * the first call only experts 0 and 64 were ever scanned again, and expert
 * 65 never, so the layer was called fp16-safe. */
static void sampling_takes_a_grouped_call_whole(void **state) {
  (void)state;
  const char *dir = outdir("groupsmoe");
  char *argv[] = {(char *)testprog, "groupsmoe", "300", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  cJSON *s = site(r.doc[0], "cublasSgemmGroupedBatched", "t/groups", NULL);
  assert_int_equal(num(s, "calls"), 300 * 128);
  /* whole calls: 64, then 1 in 2 of the next 128, then 1 in 4 of the last 108 */
  assert_int_equal(num(s, "scanned_calls"), (64 + 64 + 27) * 128);
  assert_true(num(s, "tensors.D.absmax") > 65504); /* expert 65's alpha 1e5 */
  free_raws(&r);
}

/* The site of api in layer with m rows; fails when absent. */
static cJSON *site_m(cJSON *doc, const char *api, const char *layer, int m) {
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(doc, "sites")) {
    if (str_is(s, "api", api) && str_is(s, "layer", layer) && num(s, "m") == m) return s;
  }
  fprintf(stderr, "no site api=%s layer=%s m=%d\n", api, layer, m);
  fail();
  return NULL;
}

/* A grouped GEMM's groups are scanned as their own calls would be: each
 * group's site (one per m) holds the same stats, bit for bit, as the site of
 * the same GEMMs called one by one. 256 groups, their input scans held
 * packed while the real call runs (call.c), unpacked for their merge. */
static void a_grouped_gemms_sites_have_the_stats_of_its_groups_called_one_by_one(void **state) {
  (void)state;
  const char *dir = outdir("groupsplit");
  char *argv[] = {(char *)testprog, "groupsplit", "256", NULL};
  const char *opts[] = {"--sample", "1", NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  for (int m = 1; m <= 16; m++) {
    cJSON *g = site_m(r.doc[0], "cublasSgemmGroupedBatched", "grouped", m);
    cJSON *s = site_m(r.doc[0], "cublasSgemm_v2", "split", m);
    assert_int_equal(num(g, "calls"), 16);
    assert_int_equal(num(g, "scanned_calls"), 16);
    assert_true(num(g, "tensors.D.count") == 16.0 * m * 16);
    assert_true(cJSON_Compare(get(g, "tensors"), get(s, "tensors"), true));
  }
  free_raws(&r);
}

/* mpprof starts inside the program's first hooked call, on the program's
 * thread, whose stack may be small (frameworks' worker threads): its
 * start-up adds at most 5 KiB to what that call uses (3.5 KB here). It took
 * 7.5 KB (a 4 KB buffer in settings, another under every dlopen of CUPTI):
 * 16 KiB threads crashed. */
static void mpprof_starts_on_little_of_the_threads_stack(void **state) {
  (void)state;
  const char *dir = outdir("first_stack");
  char plain_file[4300], prof_file[4300];
  snprintf(plain_file, sizeof plain_file, "%s.plain", dir);
  snprintf(prof_file, sizeof prof_file, "%s.prof", dir);
  char *plain[] = {(char *)testprog, "first_stack", plain_file, NULL};
  char *prof[] = {(char *)mpprof,   "-o",          (char *)dir, "--",
                  (char *)testprog, "first_stack", prof_file,   NULL};
  result a = run(plain, NULL), b = run(prof, NULL);
  assert_int_equal(a.status, 0);
  assert_int_equal(b.status, 0);
  free(a.out);
  free(b.out);
  char *pa = slurp(plain_file), *pb = slurp(prof_file);
  assert_non_null(pa);
  assert_non_null(pb);
  long used_plain = atol(pa), used_prof = atol(pb);
  free(pa);
  free(pb);
  if (used_plain < 0) skip(); /* ASan */
  if (used_prof - used_plain > 5 * 1024)
    fail_msg("mpprof's start-up took %ld bytes of the first call's stack (%ld bare, %ld)",
             used_prof - used_plain, used_plain, used_prof);
}

/* The records of a backend graph's ops are not on the application's stack:
 * with them there, 28 KiB crashed (SIGSEGV) where the program needs ~20. */
static void backend_execute_on_a_small_thread_stack_is_recorded(void **state) {
  (void)state;
  raws r;
  cJSON *s = backend_conv_site("autotune_small", &r);
  assert_int_equal(num(s, "calls"), 4);
  assert_int_equal(num(s, "autotune_calls"), 1);
  free_raws(&r);
}

static void direct_cublasLt_call_is_recorded_with_its_descriptor(void **state) {
  (void)state;
  const char *dir = outdir("lt");
  char *argv[] = {(char *)testprog, "lt", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  cJSON *s = site(r.doc[0], "cublasLtMatmul", "t/lt", NULL);
  assert_true(str_is(s, "epilogue", "BIAS"));
  assert_true(str_is(s, "transb", "T"));
  assert_true(str_is(s, "types.A", "fp16") && str_is(s, "types.D", "fp32"));
  assert_true(str_is(s, "scale_type", "fp32"));
  free_raws(&r);
}

/* The same descriptor objects changed in place between calls (mpprof
 * remembers what it read for a descriptor's bytes): every call is recorded
 * as its descriptors were at that call. */
static void cublasLt_descriptors_changed_in_place_are_read_as_they_are(void **state) {
  (void)state;
  const char *dir = outdir("ltreuse");
  char *argv[] = {(char *)testprog, "ltreuse", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  static const struct {
    const char *transb, *epilogue, *d;
    int ldb, calls;
  } want[] = {{"T", "BIAS", "fp32", 16, 2},
              {"N", "BIAS", "fp32", 16, 1},
              {"N", "DEFAULT", "fp32", 16, 1},
              {"N", "DEFAULT", "fp16", 16, 3},
              {"N", "DEFAULT", "fp16", 32, 1}};
  int found = 0;
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(r.doc[0], "sites")) {
    if (!str_is(s, "api", "cublasLtMatmul") || !str_is(s, "layer", "t/reuse")) continue;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
      if (str_is(s, "transb", want[i].transb) && str_is(s, "epilogue", want[i].epilogue) &&
          str_is(s, "types.D", want[i].d) && num(s, "ldb") == want[i].ldb) {
        assert_int_equal(num(s, "calls"), want[i].calls);
        found |= 1 << i;
      }
  }
  assert_int_equal(found, 0x1f);
  assert_int_equal(nsites(r.doc[0]), 5);
  free_raws(&r);
}

/* More descriptor contents than mpprof remembers per thread, entries
 * replaced by calls of the other transb while what those entries decoded
 * to is still remembered: each call is recorded as its descriptor is
 * (1500 calls with transb T, 1500 with N). */
static void cublasLt_calls_past_the_memo_are_read_as_they_are(void **state) {
  (void)state;
  const char *dir = outdir("ltevict");
  char *argv[] = {(char *)testprog, "ltevict", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  double calls[2] = {0, 0};
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(r.doc[0], "sites")) {
    if (!str_is(s, "api", "cublasLtMatmul") || !str_is(s, "layer", "t/evict")) continue;
    assert_true(str_is(s, "transb", "T") || str_is(s, "transb", "N"));
    calls[str_is(s, "transb", "N")] += num(s, "calls");
  }
  assert_int_equal(calls[0], 1500);
  assert_int_equal(calls[1], 1500);
  free_raws(&r);
}

/* Runs `mpp_testprog lt calls` under libmpprof.so with the counting shim
 * preloaded after it (version: what the shim reports as cuBLASLt's, or
 * NULL); returns the getter calls that reached cuBLASLt. */
static unsigned long lt_getter_calls(int calls, const char *version) {
  char lib[4200], preload[8500], out[4300], count[4300], ver[64], n[16];
  libmpprof_path(lib, sizeof lib);
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s %s", lib, lt_count);
  snprintf(out, sizeof out, "MPPROF_OUT=%s", outdir("ltcount"));
  snprintf(count, sizeof count, "LT_COUNT_OUT=%s/ltcount.txt", workdir);
  snprintf(ver, sizeof ver, "LT_COUNT_VERSION=%s", version ? version : "");
  snprintf(n, sizeof n, "%d", calls);
  const char *env[] = {preload, out, count, "MPPROF_CHECKPOINT_S=0", version ? ver : NULL, NULL};
  char *argv[] = {(char *)testprog, "lt", n, NULL};
  result r = run(argv, env);
  assert_int_equal(r.status, 0);
  free(r.out);
  char *text = slurp(count + strlen("LT_COUNT_OUT="));
  assert_non_null(text);
  unsigned long got = strtoul(text, NULL, 10);
  free(text);
  return got;
}

/* The same descriptors in call after call (PyTorch's cuBLASLt path makes
 * them anew around each call, with the same bytes): mpprof reads their
 * attributes once and remembers them by their bytes, so the getter calls do
 * not grow with the calls; from a cuBLASLt of another major version, whose
 * descriptors may be smaller than the bytes the memo keys on, it reads them
 * at every call. */
static void cublasLt_descriptors_of_repeated_calls_are_read_once(void **state) {
  (void)state;
  unsigned long one = lt_getter_calls(1, NULL), many = lt_getter_calls(200, NULL);
  unsigned long old = lt_getter_calls(200, "120900");
  assert_true(one > 0);              /* the shim is on mpprof's path */
  assert_true(many <= one + 8);      /* remembered: 199 calls read (almost) nothing */
  assert_true(old >= 200 * one / 2); /* a 12.9 cuBLASLt: read every call */
}

static void every_cublas_gemm_entry_point_is_recorded(void **state) {
  (void)state;
  static const char *const apis[] = {"cublasSgemm_v2",
                                     "cublasDgemm_v2",
                                     "cublasHgemm",
                                     "cublasSgemmEx",
                                     "cublasGemmEx",
                                     "cublasSgemmBatched",
                                     "cublasDgemmBatched",
                                     "cublasHgemmBatched",
                                     "cublasGemmBatchedEx",
                                     "cublasSgemmStridedBatched",
                                     "cublasDgemmStridedBatched",
                                     "cublasHgemmStridedBatched",
                                     "cublasGemmStridedBatchedEx",
                                     "cublasSgemmGroupedBatched",
                                     "cublasDgemmGroupedBatched",
                                     "cublasGemmGroupedBatchedEx"};
  const char *dir = outdir("variants");
  char *argv[] = {(char *)testprog, "variants", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(nsites(r.doc[0]), 32);
  for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++) {
    char twin[64];
    snprintf(twin, sizeof twin, "%s_64", apis[i]);
    cJSON *a = site(r.doc[0], apis[i], NULL, NULL), *b = site(r.doc[0], twin, NULL, NULL);
    assert_int_equal(num(a, "calls"), 1);
    assert_int_equal(num(b, "calls"), 1);
    assert_true(str_is(a, "types.A", str(b, "types.A")));
    assert_int_equal(num(a, "batch"), num(b, "batch"));
    assert_non_null(get(a, "tensors.D"));
  }
  assert_true(str_is(site(r.doc[0], "cublasHgemm", NULL, NULL), "compute_type", "16F"));
  assert_true(str_is(site(r.doc[0], "cublasDgemm_v2", NULL, NULL), "types.A", "fp64"));
  assert_int_equal(num(site(r.doc[0], "cublasSgemmBatched", NULL, NULL), "tensors.A.count"),
                   2 * 16 * 16);
  free_raws(&r);
}

static void math_mode_set_on_the_handle_is_recorded(void **state) {
  (void)state;
  const char *dir = outdir("mathmode");
  char *argv[] = {(char *)testprog, "mathmode", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(nsites(r.doc[0]), 2);
  bool seen_default = false, seen_tf32 = false;
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(r.doc[0], "sites")) {
    seen_default |= str_is(s, "math_mode", "DEFAULT");
    seen_tf32 |= str_is(s, "math_mode", "TF32_TENSOR_OP");
  }
  assert_true(seen_default && seen_tf32);
  free_raws(&r);
}

static void each_thread_has_its_own_layer_stack(void **state) {
  (void)state;
  const char *dir = outdir("threads");
  char *argv[] = {(char *)testprog, "threads", "8", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(nsites(r.doc[0]), 8);
  for (int i = 0; i < 8; i++) {
    char l[8];
    snprintf(l, sizeof l, "t%d", i);
    assert_int_equal(num(site(r.doc[0], "cublasGemmEx", l, NULL), "calls"), 5);
  }
  free_raws(&r);
}

/* Every kind of NVTX call names the layer a user expects (docs/profiler.md,
 * Layers): a wide push is a range (before, it was not seen, so its pop
 * closed "outer"); Unicode names are UTF-8, so two names of no ASCII letter
 * stay two layers; a domain made from a wide name is its own domain (its
 * range survives the default domain's pop) and "mpprof" made so carries the
 * training marks; start/end ranges and marks of every form are counted. */
static void every_kind_of_nvtx_call_names_the_layer(void **state) {
  (void)state;
  const char *dir = outdir("nvtxkinds");
  char *argv[] = {(char *)testprog, "nvtxkinds", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  cJSON *d = r.doc[0];
  const char *layers[] = {"outer/wide_\xc3\xa4",
                          "outer",
                          "outer/\xe6\xb3\xa8\xe6\x84\x8f",
                          "outer/\xe5\x89\x8d\xe9\xa6\x88",
                          "wd",
                          "scaled",
                          "se"};
  for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++)
    assert_int_equal(num(site(d, "cublasGemmEx", layers[i], NULL), "calls"), 1);
  assert_int_equal(nsites(d), 7);
  assert_true(num(site(d, "cublasGemmEx", "scaled", NULL), "loss_scale") == 64);
  assert_int_equal(num(d, "nvtx.start_end_ranges"), 4);
  assert_int_equal(num(d, "nvtx.marks"), 5); /* with the loss_scale mark */
  free_raws(&r);
}

/* Whether doc's events are exactly one per call of each site: as many as
 * its calls, with call indices 0 .. calls - 1 each once. */
static bool one_event_per_call(cJSON *doc) {
  cJSON *s, *e;
  cJSON_ArrayForEach(s, get(doc, "sites")) {
    int id = (int)num(s, "id"), calls = (int)num(s, "calls"), n = 0;
    bool *seen = calloc((size_t)calls + 1, 1);
    cJSON_ArrayForEach(e, get(doc, "events")) {
      if ((int)num(e, "site") != id) continue;
      int call = (int)num(e, "call");
      if (call < 0 || call >= calls || seen[call]) {
        free(seen);
        return false;
      }
      seen[call] = true;
      n++;
    }
    free(seen);
    if (n != calls) return false;
  }
  return true;
}

/* Threads write their calls' events without the sites' lock: those of
 * threads that ended, of one still running at exit and of the main thread,
 * more than a thread keeps before moving them, are all in the raw file,
 * one per call. */
static void events_of_every_thread_reach_the_raw_file(void **state) {
  (void)state;
  const char *opts[] = {"--sample", "1", NULL};
  raws r = run_mode("threadevents", opts);
  assert_int_equal(nsites(r.doc[0]), 5);
  const char *layers[4] = {"w0", "w1", "w2", "linger"};
  for (int i = 0; i < 4; i++)
    assert_int_equal(num(site(r.doc[0], "cublasGemmEx", layers[i], NULL), "calls"), 300);
  assert_int_equal(num(site(r.doc[0], "cublasGemmEx", "main", NULL), "calls"), 130);
  assert_int_equal(cJSON_GetArraySize(get(r.doc[0], "events")), 4 * 300 + 130);
  assert_true(one_event_per_call(r.doc[0]));
  free_raws(&r);
}

static cJSON *doc_where(raws *r, bool forked) {
  for (int i = 0; i < r->n; i++)
    if (cJSON_IsTrue(get(r->doc[i], "forked")) == forked) return r->doc[i];
  fail();
  return NULL;
}

static void a_forked_child_writes_its_own_raw_file(void **state) {
  (void)state;
  const char *dir = outdir("fork");
  char *argv[] = {(char *)testprog, "fork", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 2);
  cJSON *parent = doc_where(&r, false), *child = doc_where(&r, true);
  assert_int_equal(num(child, "ppid"), num(parent, "pid"));
  assert_int_equal(num(site(parent, "cublasGemmEx", NULL, NULL), "calls"), 2);
  assert_int_equal(num(site(child, "cublasGemmEx", NULL, NULL), "calls"), 2);
  /* the parent's event before the fork is not the child's */
  assert_true(one_event_per_call(parent) && one_event_per_call(child));
  free_raws(&r);
}

static const char *cupti_status(cJSON *doc) {
  cJSON *v = get(doc, "cupti.status");
  return cJSON_IsString(v) ? v->valuestring : "";
}

/* A child forked after the parent started CUDA and CUPTI (mode fork: the
 * parent's GEMM came first) leaves them alone, and says so: not "disabled",
 * which is what MPPROF_CUPTI=off writes. */
static void a_child_forked_after_cuda_started_leaves_cupti_alone(void **state) {
  (void)state;
  raws r = run_mode("fork", NULL);
  assert_int_equal(r.n, 2);
  cJSON *parent = doc_where(&r, false), *child = doc_where(&r, true);
  assert_string_equal(cupti_status(parent), "ok");
  assert_string_equal(cupti_status(child), "forked_after_cuda_init");
  assert_true(cJSON_GetArraySize(get(site(parent, "cublasGemmEx", NULL, NULL), "kernels")) > 0);
  assert_int_equal(cJSON_GetArraySize(get(site(child, "cublasGemmEx", NULL, NULL), "kernels")), 0);
  free_raws(&r);
}

/* A child forked before the parent used CUDA at all (a launcher's worker) is
 * a fresh process for CUDA: it subscribes CUPTI itself and its kernels are
 * tied to its ops, as the parent's are. */
static void a_child_forked_before_cuda_collects_its_kernels(void **state) {
  (void)state;
  raws r = run_mode("forkfresh", NULL);
  assert_int_equal(r.n, 2);
  cJSON *parent = doc_where(&r, false), *child = doc_where(&r, true);
  assert_int_equal(num(child, "ppid"), num(parent, "pid"));
  assert_string_equal(cupti_status(parent), "ok");
  assert_string_equal(cupti_status(child), "ok");
  cJSON *cs = site(child, "cublasGemmEx", NULL, NULL),
        *ps = site(parent, "cublasGemmEx", NULL, NULL);
  assert_int_equal(num(cs, "calls"), 3);
  assert_int_equal(num(ps, "calls"), 1);
  assert_true(cJSON_GetArraySize(get(cs, "kernels")) > 0);
  assert_true(num(cs, "gpu_ns") > 0);
  assert_true(cJSON_GetArraySize(get(ps, "kernels")) > 0);
  free_raws(&r);
}

/* The program's main process ends with _exit() before its first checkpoint
 * (forkfresh_exit): its raw file is never written, only its child's is. The
 * run says so at its end, and the report has the finding; with exit() the
 * main process's file is there and nothing is said. */
static void a_main_process_ended_by__exit_without_raw_file_is_named(void **state) {
  (void)state;
  /* The third: a shell that starts the program (not exec'ing it: "; true")
   * writes no raw file of its own, as a launcher never does: no loss. */
  const char *modes[] = {"forkfresh_exit", "forkfresh", "forkfresh"};
  for (int k = 0; k < 3; k++) {
    const char *dir = outdir(k == 2 ? "forkfresh_sh" : modes[k]);
    char script[4200];
    snprintf(script, sizeof script, "'%s' %s; true", testprog, modes[k]);
    char *argv[] = {(char *)mpprof,   "-o", (char *)dir, "--", (char *)testprog,
                    (char *)modes[k], NULL};
    char *sh_argv[] = {(char *)mpprof, "-o", (char *)dir, "--", "/bin/sh", "-c", script, NULL};
    result res = run_err(k == 2 ? sh_argv : argv, NULL);
    assert_int_equal(res.status, 0);
    raws r = load_raws(dir);
    assert_int_equal(r.n, k == 0 ? 1 : 2);
    free_raws(&r);
    const char *want = "(the program's main process) wrote no raw file";
    assert_true((strstr(res.err, want) != NULL) == (k == 0));
    cJSON *rep = report_json(dir);
    int n = 0;
    cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
      if (!str_is(f, "kind", "process_without_raw_file")) continue;
      n++;
      assert_non_null(strstr(cJSON_GetObjectItem(f, "message")->valuestring, want));
      assert_non_null(strstr(cJSON_GetObjectItem(f, "message")->valuestring, "_exit()"));
      assert_true(num(f, "evidence.pid") > 0);
    }
    assert_int_equal(n, k == 0 ? 1 : 0);
    cJSON_Delete(rep);
    free(res.out);
    free(res.err);
  }
}

/* --- the training-state protocol (NVTX domain "mpprof") --- */

static bool is_null(cJSON *o, const char *path) {
  cJSON *v = get(o, path);
  return v && cJSON_IsNull(v);
}

static void loss_scale_marks_work_from_a_second_thread_and_in_a_forked_child(void **state) {
  (void)state;
  const char *dir = outdir("lossscale");
  char *argv[] = {(char *)testprog, "lossscale", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 2);
  cJSON *parent = doc_where(&r, false), *child = doc_where(&r, true);
  /* Marked on another thread, before the main thread's GEMMs. */
  cJSON *s = site(parent, "cublasGemmEx", "t/main", NULL);
  assert_true(num(s, "loss_scale") == 1024);
  assert_int_equal(num(s, "calls"), 2);
  assert_int_equal(num(parent, "training.steps.first"), 7);
  assert_int_equal(num(parent, "training.skipped_steps.count"), 0);
  assert_true(str_is(parent, "training.loss_scale_source", "marks"));
  /* The child's own marks, in its own raw file; the parent's stay its own. */
  assert_true(num(site(child, "cublasGemmEx", "t/child", NULL), "loss_scale") == 0x1p20);
  assert_int_equal(num(child, "training.steps.first"), 8);
  assert_int_equal(num(child, "training.skipped_steps.count"), 1);
  assert_int_equal(num(child, "training.skipped_steps.steps.0"), 8);
  assert_true(num(parent, "training.loss_scale") == 1024);
  free_raws(&r);
}

static void loss_scale_option_declares_the_scale_of_a_program_without_marks(void **state) {
  (void)state;
  const char *dir = outdir("lossopt");
  char *argv[] = {(char *)testprog, "gemmex", "2", NULL};
  const char *opts[] = {"--loss-scale", "2^10", NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(num(site(r.doc[0], "cublasGemmEx", "t/gemmex", NULL), "loss_scale") == 1024);
  assert_true(str_is(r.doc[0], "training.loss_scale_source", "option"));
  assert_true(is_null(r.doc[0], "training.steps"));
  free_raws(&r);
}

/* The configuration is read once at start (the rank at the first CUDA call):
 * the program's own setenv afterwards changes nothing mpprof does. */
static void environment_set_by_the_program_does_not_change_the_configuration(void **state) {
  (void)state;
  const char *dir = outdir("setenv");
  char *argv[] = {(char *)mpprof, "-o", (char *)dir, "--", (char *)testprog, "setenv", NULL};
  const char *env[] = {"RANK=2", NULL};
  result res = run(argv, env);
  assert_int_equal(res.status, 0);
  free(res.out);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_int_equal(num(r.doc[0], "rank"), 2);
  assert_true(str_is(r.doc[0], "cupti.status", "ok"));
  assert_null(cJSON_GetObjectItem(r.doc[0], "tc_counters"));
  assert_true(is_null(r.doc[0], "training.loss_scale"));
  assert_true(str_is(r.doc[0], "scan", "all"));
  cJSON *s = site(r.doc[0], "cublasGemmEx", "t/gemmex", NULL);
  assert_int_equal(num(s, "calls"), 2);
  assert_int_equal(num(s, "scanned_calls"), 2);
  free_raws(&r);
}

/* A rank learned once the process ran (mpprof_rank, as the PyTorch
 * integration calls it after init_process_group), after a checkpoint written
 * without one: the final raw file carries it, the report sees one process
 * (not a rankless one and a ranked one), and a fork child keeps it. A
 * launcher's RANK wins, with its WORLD_SIZE. */
static void a_rank_learned_late_is_in_the_raw_file_and_kept_by_a_fork_child(void **state) {
  (void)state;
  for (int with_env = 0; with_env < 2; with_env++) {
    const char *dir = outdir(with_env ? "rank-env" : "rank");
    char *argv[] = {(char *)mpprof, "-o", (char *)dir, "--", (char *)testprog, "rank", NULL};
    const char *env[] = {with_env ? "RANK=3" : NULL, "WORLD_SIZE=8", NULL};
    result res = run(argv, env);
    assert_int_equal(res.status, 0);
    free(res.out);
    int want = with_env ? 3 : 1, want_world = with_env ? 8 : 2;
    raws r = load_raws(dir);
    assert_int_equal(r.n, 2);
    for (int i = 0; i < r.n; i++) {
      assert_true(cJSON_IsTrue(get(r.doc[i], "final")));
      assert_int_equal(num(r.doc[i], "rank"), want);
      assert_int_equal(num(r.doc[i], "world_size"), want_world);
    }
    assert_int_equal(num(site(doc_where(&r, false), "cublasGemmEx", NULL, NULL), "calls"), 3);
    free_raws(&r);
    cJSON *rep = report_json(dir);
    cJSON *procs = get(rep, "processes"), *p;
    assert_int_equal(cJSON_GetArraySize(procs), 2);
    cJSON_ArrayForEach(p, procs) {
      assert_int_equal(num(p, "rank"), want);
      assert_int_equal(num(p, "world_size"), want_world);
    }
    cJSON_Delete(rep);
  }
}

/* The models a framework names (mpprof_model_root) reach the raw file's
 * framework.models, which the plan uses to look each layer up in its own
 * model: a name given again takes its new class, a name with a tab is left
 * out, and those beyond the field are left out whole (never cut). */
static void the_models_a_framework_names_are_in_the_raw_file(void **state) {
  (void)state;
  const char *dir = outdir("models");
  char *argv[] = {(char *)mpprof, "-o", (char *)dir, "--", (char *)testprog, "models", NULL};
  result res = run(argv, NULL);
  assert_int_equal(res.status, 0);
  free(res.out);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  cJSON *models = get(get(r.doc[0], "framework"), "models"), *e;
  int n = cJSON_GetArraySize(models);
  assert_true(n > 4 && n < 22);
  assert_string_equal(get(cJSON_GetArrayItem(models, 0), "name")->valuestring, "");
  assert_string_equal(get(cJSON_GetArrayItem(models, 0), "class")->valuestring, "Generator");
  assert_string_equal(get(cJSON_GetArrayItem(models, 1), "name")->valuestring, "Disc");
  assert_string_equal(get(cJSON_GetArrayItem(models, 1), "class")->valuestring, "Discriminator");
  int i = 0;
  cJSON_ArrayForEach(e, models) {
    if (i++ < 2) continue;
    char want[64];
    snprintf(want, sizeof want, "Model_with_a_rather_long_class_name_%02d", i - 3);
    assert_string_equal(get(e, "name")->valuestring, want);
    assert_string_equal(get(e, "class")->valuestring, "Model_with_a_rather_long_class_name");
  }
  free_raws(&r);
}

static void a_loss_scale_that_is_not_a_positive_number_is_a_usage_error(void **state) {
  (void)state;
  const char *bad[] = {"0", "-2", "2^", "inf", "x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {
        (char *)mpprof, "--loss-scale", (char *)bad[i], (char *)testprog, "gemmex", "1", NULL};
    result r = run(argv, NULL);
    assert_int_equal(r.status, 2);
    free(r.out);
  }
}

static void first_nonfinite_is_the_gemm_that_overflowed_fp16(void **state) {
  (void)state;
  const char *dir = outdir("overflow");
  char *argv[] = {(char *)testprog, "overflow", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  cJSON *nf = get(r.doc[0], "training.first_nonfinite");
  assert_non_null(nf);
  cJSON *s, *producer = NULL;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(r.doc[0], "sites")) {
    if (num(s, "id") == num(nf, "site")) producer = s;
  }
  assert_non_null(producer);
  assert_true(str_is(producer, "layer", "l1"));
  assert_int_equal(num(nf, "step"), 3);
  assert_int_equal(num(nf, "call_index"), 3);
  assert_true(str_is(nf, "role", "D"));
  assert_true(cJSON_IsTrue(get(nf, "inputs_scanned")));
  assert_true(num(nf, "pos_infs") + num(nf, "neg_infs") > 0);
  /* l2 read the Inf (and made NaN): not a producer. */
  assert_true(num(site(r.doc[0], NULL, "l2", NULL), "tensors.A.pos_infs") > 0);
  free_raws(&r);
  /* The report names the same op, once, and as a finding. */
  cJSON *rep = report_json(dir);
  assert_true(str_is(rep, "first_nonfinite.layer", "l1"));
  assert_int_equal(num(rep, "first_nonfinite.step"), 3);
  assert_int_equal(num(rep, "first_nonfinite.call_index"), 3);
  assert_true(str_is(rep, "first_nonfinite.output", "D"));
  int n = 0;
  cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
    if (str_is(f, "kind", "first_nonfinite")) {
      n++;
      assert_true(str_is(f, "layer", "l1"));
    }
  }
  assert_int_equal(n, 1);
  cJSON_Delete(rep);
}

static void a_forked_child_that_never_uses_cuda_writes_no_raw_file(void **state) {
  (void)state;
  const char *dir = outdir("forkidle");
  char *argv[] = {(char *)testprog, "forkidle", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsFalse(get(r.doc[0], "forked")));
  free_raws(&r);
}

static void exit_status_3_is_passed_through_with_a_final_raw_file(void **state) {
  (void)state;
  const char *dir = outdir("exit3");
  char *argv[] = {(char *)testprog, "exit3", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 3);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsTrue(get(r.doc[0], "final")));
  assert_int_equal(num(site(r.doc[0], "cublasGemmEx", NULL, NULL), "calls"), 1);
  free_raws(&r);
}

/* A thread whose cancellation is pending calls exec, exit or posix_spawn,
 * none of them a cancellation point: mpprof's own work there (the raw file
 * written before exec and at exit, the note of a child started without
 * mpprof) reaches none either. Acting on the cancellation there had the
 * exec never made and the exit hang on mpprof's locks, exit(5) end as 0,
 * and the spawned child's pid lost. */
static void a_pending_cancellation_never_acts_inside_mpprof(void **state) {
  (void)state;
  static const struct {
    const char *what;
    int status;
  } cases[] = {{"exec", 0}, {"exit", 5}, {"spawn", 0}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[64];
    snprintf(name, sizeof name, "cancelpending_%s", cases[i].what);
    const char *dir = outdir(name);
    char *argv[] = {(char *)testprog, "cancelpending", (char *)cases[i].what, NULL};
    assert_int_equal(run_both(dir, argv, NULL), cases[i].status);
    raws r = load_raws(dir);
    assert_true(r.n >= 1);
    for (int k = 0; k < r.n; k++)
      assert_true(cJSON_IsTrue(get(r.doc[k], "final")));
    free_raws(&r);
  }
}

/* A program that closes every descriptor above the standard streams and
 * opens files of its own, while checkpoints are written every 0.2 ms: the
 * checkpoint thread's file I/O never meets its files (a private descriptor
 * table). Sharing the program's, it closed and wrote into the program's
 * files through reused numbers (a few rounds of the 2000 changed). */
static void checkpoints_never_touch_the_files_of_a_program_that_closes_all(void **state) {
  (void)state;
  const char *dir = outdir("closeall");
  char *argv[] = {(char *)testprog, "closeall", "2000", NULL};
  const char *opts[] = {"--checkpoint", "0.0002", NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsTrue(get(r.doc[0], "final")));
  assert_int_equal(num(site(r.doc[0], "cublasGemmEx", NULL, NULL), "calls"), 1 + 2000 * 20);
  free_raws(&r);
}

/* The same program's closing thread goes on while the program exits: the
 * final raw write (an exit handler) never meets its files either. Sharing
 * the program's table, that write nearly always lost its descriptors (no
 * raw file: "Bad file descriptor"), and now and then wrote into the thread's
 * file (exit status 66). A few runs: the second outcome is a race. */
static void the_exit_write_never_touches_the_files_of_a_program_that_closes_all(void **state) {
  (void)state;
  for (int run = 0; run < 5; run++) {
    char name[32];
    snprintf(name, sizeof name, "closeall_exit%d", run);
    const char *dir = outdir(name);
    char *argv[] = {(char *)testprog, "closeall_exit", "3", NULL};
    assert_int_equal(run_both(dir, argv, NULL), 0);
    raws r = load_raws(dir);
    assert_int_equal(r.n, 1);
    assert_true(cJSON_IsTrue(get(r.doc[0], "final")));
    assert_int_equal(num(site(r.doc[0], "cublasGemmEx", NULL, NULL), "calls"), 3);
    free_raws(&r);
  }
}

/* The race of the test above made certain: the number mpprof's seccomp
 * check (before its raw write) opened /proc/self/status at names a file of
 * the program by the time it reads it (the shim status_swap.c closes the
 * status file and opens one of "the program's" there). mpprof read that
 * file (its offset moved to 13) and closed it under the program; now it
 * neither moves nor closes it, reads the status file again, and the raw
 * file is written. */
static void the_seccomp_check_leaves_a_program_file_at_its_number_alone(void **state) {
  (void)state;
  char lib[4200], preload[8500], out[4300], file[4300], report[4300];
  libmpprof_path(lib, sizeof lib);
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s %s", lib, status_swap);
  const char *dir = outdir("statusswap");
  snprintf(out, sizeof out, "MPPROF_OUT=%s", dir);
  snprintf(file, sizeof file, "STATUS_SWAP_FILE=%s/program-file.txt", workdir);
  snprintf(report, sizeof report, "STATUS_SWAP_OUT=%s/status-swap.txt", workdir);
  FILE *f = fopen(file + strlen("STATUS_SWAP_FILE="), "w");
  assert_non_null(f);
  fputs("program data\n", f);
  fclose(f);
  remove(report + strlen("STATUS_SWAP_OUT="));
  const char *env[] = {preload, out, file, report, "MPPROF_CHECKPOINT_S=0", NULL};
  char *argv[] = {(char *)testprog, "gemmex", "2", NULL};
  result r = run(argv, env);
  assert_int_equal(r.status, 0);
  free(r.out);
  char *text = slurp(report + strlen("STATUS_SWAP_OUT="));
  assert_non_null(text); /* the shim swapped the first open */
  if (strcmp(text, "intact\n")) fail_msg("the program's file: %s", text);
  free(text);
  raws rr = load_raws(dir);
  assert_int_equal(rr.n, 1);
  assert_true(cJSON_IsTrue(get(rr.doc[0], "final")));
  assert_int_equal(num(site(rr.doc[0], "cublasGemmEx", NULL, NULL), "calls"), 2);
  free_raws(&rr);
}

/* A child made by a raw clone system call (no fork handlers) that calls
 * exit(): it wrote a second raw file under its parent's pid, with the
 * parent's calls and its own (two files, four calls for the three made).
 * Now only the parent's file, with the parent's two calls. */
static void a_child_cloned_without_fork_writes_no_file_as_its_parent(void **state) {
  (void)state;
  const char *dir = outdir("rawclone");
  char *argv[] = {(char *)testprog, "rawclone", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_int_equal(num(site(r.doc[0], "cublasGemmEx", NULL, NULL), "calls"), 2);
  free_raws(&r);
}

/* A program under a seccomp filter that kills at any system call it does not
 * expect (here unshare and close_range, which the checkpoint's private
 * descriptor table uses) runs to its end under mpprof as without it: the
 * checkpoints take the shared table there. Before, the first checkpoint
 * killed it (SIGSYS). */
static void checkpoints_make_no_system_call_a_seccomp_filter_may_kill_for(void **state) {
  (void)state;
  const char *dir = outdir("seccomp");
  char *argv[] = {(char *)testprog, "seccomp", "50", NULL};
  const char *opts[] = {"--checkpoint", "0.001", NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsTrue(get(r.doc[0], "final")));
  free_raws(&r);
}

/* With LD_PRELOAD used directly and a relative MPPROF_OUT, the raw file goes
 * where the process started, even after the program changes directory. */
static void a_relative_mpprof_out_is_kept_when_the_program_changes_directory(void **state) {
  (void)state;
  char lib[4200], elsewhere[4200], preload[4300];
  libmpprof_path(lib, sizeof lib);
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lib);
  outdir("relout");
  snprintf(elsewhere, sizeof elsewhere, "%s", outdir("elsewhere"));
  assert_int_equal(mkdir(elsewhere, 0777), 0);
  char out[4200];
  snprintf(out, sizeof out, "%s/chdir.txt", workdir);
  char *argv[] = {(char *)testprog, "chdir", elsewhere, NULL};
  const char *env[] = {preload, "MPPROF_OUT=relout", "MPPROF_CHECKPOINT_S=0", NULL};
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (chdir(workdir) != 0) _exit(126);
    setenv("LD_LIBRARY_PATH", simcuda, 1);
    for (int i = 0; env[i]; i++)
      putenv((char *)env[i]);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    close(fd);
    execv(argv[0], argv);
    _exit(127);
  }
  assert_int_equal(wait_status(pid), 0);
  char rel[4300];
  snprintf(rel, sizeof rel, "%s/relout", workdir);
  raws r = load_raws(rel);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsTrue(get(r.doc[0], "final")));
  assert_int_equal(num(site(r.doc[0], "cublasGemmEx", NULL, NULL), "calls"), 2);
  free_raws(&r);
  snprintf(rel, sizeof rel, "%s/relout", elsewhere);
  raws moved = load_raws(rel);
  assert_int_equal(moved.n, 0);
}

/* MPPROF_LOG=1 and a raw file that cannot be written (OUT below a regular
 * file): the log line goes to a stderr pipe whose reader is gone. The
 * program writes nothing there itself: it ends as it does without mpprof,
 * not by the log line's SIGPIPE. */
static void a_log_line_to_a_pipe_nobody_reads_ends_no_program(void **state) {
  (void)state;
  char lib[4200], preload[4300], file[4200], out[4300], outvar[4400];
  libmpprof_path(lib, sizeof lib);
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lib);
  snprintf(file, sizeof file, "%s/not_a_dir", workdir);
  int f = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  assert_true(f >= 0);
  close(f);
  snprintf(out, sizeof out, "%s/out", file);
  snprintf(outvar, sizeof outvar, "MPPROF_OUT=%s", out);
  char *argv[] = {(char *)testprog, "gemmex", "1", NULL};
  const char *env[] = {preload, outvar, "MPPROF_LOG=1", "MPPROF_CHECKPOINT_S=0", NULL};
  int p[2];
  assert_int_equal(pipe(p), 0);
  close(p[0]); /* nobody reads */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("LD_LIBRARY_PATH", simcuda, 1);
    for (int i = 0; env[i]; i++)
      putenv((char *)env[i]);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(p[1], 2);
    signal(SIGPIPE, SIG_DFL);
    execv(argv[0], argv);
    _exit(127);
  }
  close(p[1]);
  assert_int_equal(wait_status(pid), 0);
}

static void a_shell_spawning_two_programs_gives_one_raw_file_per_cuda_process(void **state) {
  (void)state;
  const char *dir = outdir("shell");
  char script[8400];
  snprintf(script, sizeof script, "'%s' gemmex 1 && '%s' gemmex 2; exit 4", testprog, testprog);
  char *argv[] = {"/bin/sh", "-c", script, NULL};
  assert_int_equal(run_both(dir, argv, NULL), 4);
  raws r = load_raws(dir); /* the shell itself never touched CUDA: no file */
  assert_int_equal(r.n, 2);
  double calls = num(r.doc[0], "calls") + num(r.doc[1], "calls");
  assert_true(calls == 3);
  assert_true(num(r.doc[0], "pid") != num(r.doc[1], "pid"));
  free_raws(&r);
}

static bool checkpoint_with_calls(const char *dir, int calls) {
  raws r = load_raws(dir);
  bool ok = r.n == 1 && num(r.doc[0], "calls") == calls;
  free_raws(&r);
  return ok;
}

/* The report names the signal that killed the program (it said only "did
 * not finish", which a program that returns early also reads as). */
static void killed_by_sigterm_midway_keeps_the_last_checkpoint(void **state) {
  (void)state;
  const char *dir = outdir("sigterm");
  char out[4200], err[4200];
  snprintf(out, sizeof out, "%s/sigterm.txt", workdir);
  snprintf(err, sizeof err, "%s/sigterm.err", workdir);
  char *argv[] = {(char *)mpprof,   "-o",   (char *)dir, "--checkpoint", "0.1",
                  (char *)testprog, "wait", NULL};
  pid_t pid = spawn_err(argv, NULL, out, err);
  /* The program blocks after its GEMMs; wait (bounded) for a checkpoint. */
  bool seen = false;
  for (int i = 0; i < 600 && !seen; i++) {
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    seen = checkpoint_with_calls(dir, 3);
  }
  assert_true(seen);
  kill(pid, SIGTERM); /* to mpprof, which forwards it to the program */
  assert_int_equal(wait_status(pid), 128 + SIGTERM);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsFalse(get(r.doc[0], "final")));
  assert_int_equal(num(site(r.doc[0], "cublasGemmEx", NULL, NULL), "calls"), 3);
  free_raws(&r);
  char *s = slurp(out);
  assert_non_null(strstr(s, "ready checksum"));
  free(s);
  s = slurp(err);
  assert_non_null(strstr(s, "was killed by SIGTERM (signal 15): the ops after this checkpoint "
                            "are missing"));
  assert_null(strstr(s, "did not finish"));
  free(s);
  char path[4300];
  snprintf(path, sizeof path, "%s/report.json", dir);
  s = slurp(path);
  cJSON *rep = cJSON_Parse(s);
  free(s);
  assert_non_null(rep);
  cJSON *k = get(cJSON_GetArrayItem(get(rep, "processes"), 0), "killed_by");
  assert_int_equal(num(k, "signal"), SIGTERM);
  assert_string_equal(get(k, "name")->valuestring, "SIGTERM");
  cJSON_Delete(rep);
}

/* The program exits, but its final raw file cannot be written (a disk that
 * filled up): the report uses the checkpoint and says that the write failed
 * and what is missing, not that the process did not finish. */
static void a_final_raw_file_not_written_is_named_as_such(void **state) {
  (void)state;
  const char *dir = outdir("finalfails");
  char *argv[] = {(char *)testprog, "finalfails", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsFalse(get(r.doc[0], "final")));
  free_raws(&r);
  char *prof_argv[] = {(char *)mpprof,   "-o",         (char *)dir, "--force", "--",
                       (char *)testprog, "finalfails", NULL};
  result res = run_err(prof_argv, NULL);
  assert_int_equal(res.status, 0);
  assert_non_null(strstr(res.err, "exited (status 0) but its final raw file could not be written"));
  assert_non_null(strstr(res.err, "the ops after this checkpoint are missing"));
  assert_null(strstr(res.err, "did not finish"));
  free(res.out);
  free(res.err);
}

/* --- past MPPROF_MAX_SITES --- */

/* mpp_testprog ARGS plain and under `mpprof -o dir` with MPPROF_MAX_SITES=16
 * (a reserve of 4 sites of merged shapes): the same output and status, 0;
 * mpprof's stderr (its summary) returned. */
static char *run_with_16_sites(const char *dir, const char *mode, const char *arg) {
  char *plain_argv[] = {(char *)testprog, (char *)mode, (char *)arg, NULL};
  result plain = run(plain_argv, NULL);
  char *argv[] = {(char *)mpprof,   "-o",         (char *)dir, "--",
                  (char *)testprog, (char *)mode, (char *)arg, NULL};
  const char *env[] = {"MPPROF_MAX_SITES=16", NULL};
  result prof = run_err(argv, env);
  assert_string_equal(prof.out, plain.out);
  assert_int_equal(prof.status, 0);
  assert_int_equal(plain.status, 0);
  free(plain.out);
  free(prof.out);
  return prof.err;
}

/* 20 layers of one GEMM shape each, 16 sites: the last 4 layers' calls go
 * to a site of merged shapes each, so every layer has its numerics and a
 * verdict, and the summary counts all 2,000 calls (before: 16 layers, 1,600
 * calls, the rest "not attributed"). */
static void a_model_with_more_layers_than_max_sites_keeps_every_layers_verdict(void **state) {
  (void)state;
  const char *dir = outdir("manylayers");
  char *err = run_with_16_sites(dir, "layers", "20");
  raws r = load_raws(dir);
  assert_int_equal(num(r.doc[0], "calls"), 2000);
  assert_int_equal(num(r.doc[0], "not_attributed"), 0);
  assert_false(cJSON_IsTrue(get(r.doc[0], "incomplete")));
  cJSON *s = site(r.doc[0], "cublasSgemm_v2", "net/b19", NULL);
  assert_true(cJSON_IsTrue(get(s, "shapes_merged")));
  assert_true(cJSON_IsNull(get(s, "m")));
  assert_int_equal(num(s, "calls"), 100);
  assert_true(num(s, "tensors.D.count") > 0);
  free_raws(&r);
  cJSON *rep = report_json(dir);
  assert_int_equal(num(rep, "summary.calls"), 2000);
  assert_int_equal(num(rep, "summary.calls_in_merged_sites"), 400);
  assert_int_equal(num(rep, "summary.calls_not_attributed"), 0);
  assert_int_equal(cJSON_GetArraySize(get(rep, "layers")), 20);
  cJSON *l;
  cJSON_ArrayForEach(l, get(rep, "layers")) assert_true(str_is(l, "advice.recommended", "fp16"));
  cJSON_Delete(rep);
  assert_non_null(strstr(err, "2000 op calls in 20 sites, 20 layers"));
  assert_non_null(strstr(err, "400 calls in 4 sites of merged shapes (past MPPROF_MAX_SITES)"));
  free(err);
}

/* 200 shapes (a dynamic sequence length), each called twice, in 4 layers,
 * 16 sites: every call is in a site of its layer, the shapes past the cap
 * in one site of merged shapes per layer, which invents no shape: no m, no
 * FLOPs, Tensor Core alignment not judged. */
static void dynamic_shapes_past_max_sites_stay_in_their_layers(void **state) {
  (void)state;
  const char *dir = outdir("manyshapes");
  char *err = run_with_16_sites(dir, "shapes", "200");
  raws r = load_raws(dir);
  assert_int_equal(num(r.doc[0], "calls"), 400);
  assert_int_equal(num(r.doc[0], "not_attributed"), 0);
  assert_int_equal(nsites(r.doc[0]), 20);
  double calls = 0;
  cJSON *x;
  cJSON_ArrayForEach(x, get(r.doc[0], "sites")) calls += num(x, "calls");
  assert_true(calls == 400);
  free_raws(&r);
  cJSON *rep = report_json(dir);
  assert_int_equal(num(rep, "summary.calls"), 400);
  assert_int_equal(num(rep, "summary.calls_in_merged_sites"),
                   400 - 16 * 2); /* 16 shapes in a site each */
  assert_int_equal(cJSON_GetArraySize(get(rep, "layers")), 4);
  int merged = 0;
  cJSON_ArrayForEach(x, get(rep, "sites")) {
    if (!cJSON_IsTrue(get(x, "shapes_merged"))) continue;
    merged++;
    assert_true(cJSON_IsNull(get(x, "m")));
    assert_true(cJSON_IsNull(get(x, "flop_per_call")));
    assert_true(cJSON_IsNull(get(x, "tc_efficient")));
  }
  assert_int_equal(merged, 4);
  cJSON_Delete(rep);
  char ops[4300];
  snprintf(ops, sizeof ops, "%s/ops.csv", dir);
  char *csv = slurp(ops);
  assert_non_null(strstr(csv, ",various shapes (merged past MPPROF_MAX_SITES),,,,,"));
  free(csv);
  assert_non_null(strstr(err, "400 op calls in 20 sites, 4 layers"));
  free(err);
}

static void scan_none_records_calls_without_tensor_stats(void **state) {
  (void)state;
  const char *dir = outdir("scannone");
  char *argv[] = {(char *)testprog, "gemmex", "2", NULL};
  const char *opts[] = {"--scan", "none", NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  raws r = load_raws(dir);
  cJSON *s = site(r.doc[0], "cublasGemmEx", NULL, NULL);
  assert_int_equal(num(s, "calls"), 2);
  assert_int_equal(num(s, "scanned_calls"), 0);
  assert_int_equal(cJSON_GetArraySize(get(s, "tensors")), 0);
  assert_true(str_is(r.doc[0], "scan", "none"));
  free_raws(&r);
}

static void sample_2_scans_every_second_call(void **state) {
  (void)state;
  const char *dir = outdir("sample");
  char *argv[] = {(char *)testprog, "gemmex", "4", NULL};
  const char *opts[] = {"--sample", "2", NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  raws r = load_raws(dir);
  cJSON *s = site(r.doc[0], "cublasGemmEx", NULL, NULL);
  assert_int_equal(num(s, "scanned_calls"), 2);
  assert_int_equal(num(s, "not_scanned.sampled_out"), 2 * 3);
  assert_int_equal(num(s, "tensors.A.count"), 2 * 16 * 16);
  free_raws(&r);
}

/* Calls issued while their stream is captured into a CUDA graph count as
 * calls but are not scanned (a real capture runs nothing now, and mpprof
 * must not enqueue into it): each skipped role counts once under
 * not_scanned.graph_capture. The same calls after EndCapture are scanned.
 * On a created stream, and on the per-thread default stream (what a program
 * built with --default-stream per-thread captures; simcuda refused that
 * capture, so mpprof was never tried on it). */
static void calls_during_graph_capture_on(const char *which) {
  char name[32];
  snprintf(name, sizeof name, "capture%s", which ? which : "");
  const char *dir = outdir(name);
  char *argv[] = {(char *)testprog, "capture", (char *)which, NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_int_equal(nsites(r.doc[0]), 3);
  /* cuBLAS, stream from the handle: 2 captured + 2 eager calls, roles A, B, D. */
  cJSON *s = site(r.doc[0], "cublasGemmEx", "t", "gemm");
  assert_int_equal(num(s, "calls"), 4);
  assert_int_equal(num(s, "scanned_calls"), 2);
  assert_int_equal(num(s, "not_scanned.graph_capture"), 2 * 3);
  assert_null(get(s, "tensors.C"));
  assert_int_equal(num(s, "tensors.A.count"), 2 * 16 * 16);
  assert_int_equal(num(s, "tensors.B.count"), 2 * 16 * 16);
  assert_int_equal(num(s, "tensors.D.count"), 2 * 16 * 16);
  /* cuBLASLt, stream as an argument: 1 captured + 1 eager call. */
  s = site(r.doc[0], "cublasLtMatmul", "t", "gemm");
  assert_int_equal(num(s, "calls"), 2);
  assert_int_equal(num(s, "scanned_calls"), 1);
  assert_int_equal(num(s, "not_scanned.graph_capture"), 1 * 3);
  assert_int_equal(num(s, "tensors.A.count"), 16 * 16);
  assert_int_equal(num(s, "tensors.D.count"), 16 * 16);
  /* A legacy cuDNN convolution, stream from the cuDNN handle: 1 + 1 call. */
  s = site(r.doc[0], "cudnnConvolutionForward", "t", "conv_fwd");
  assert_int_equal(num(s, "calls"), 2);
  assert_int_equal(num(s, "scanned_calls"), 1);
  assert_int_equal(num(s, "not_scanned.graph_capture"), 1 * 3);
  /* Graph capture is the only reason anything went unscanned. */
  cJSON *x;
  cJSON_ArrayForEach(x, cJSON_GetObjectItem(r.doc[0], "sites")) {
    cJSON *reason;
    cJSON_ArrayForEach(reason, cJSON_GetObjectItem(x, "not_scanned")) {
      if (strcmp(reason->string, "graph_capture") != 0)
        assert_int_equal(cJSON_GetNumberValue(reason), 0);
    }
  }
  free_raws(&r);
}

static void calls_during_graph_capture_are_counted_but_not_scanned(void **state) {
  (void)state;
  calls_during_graph_capture_on(NULL);
  calls_during_graph_capture_on("ptds");
}

static void mpprof_disable_writes_nothing(void **state) {
  (void)state;
  const char *dir = outdir("disabled");
  char *argv[] = {(char *)mpprof, "-o", (char *)dir, (char *)testprog, "gemmex", "1", NULL};
  const char *env[] = {"MPPROF_DISABLE=1", NULL};
  result r = run(argv, env);
  assert_int_equal(r.status, 0);
  free(r.out);
  raws raw = load_raws(dir);
  assert_int_equal(raw.n, 0);
}

/* --- the launcher --- */

static void a_non_empty_output_directory_is_refused_without_force(void **state) {
  (void)state;
  const char *dir = outdir("nonempty");
  mkdir(dir, 0777);
  char keep[4300];
  snprintf(keep, sizeof keep, "%s/keep.txt", dir);
  FILE *f = fopen(keep, "w");
  fputs("x", f);
  fclose(f);
  char *argv[] = {(char *)mpprof, "-o", (char *)dir, (char *)testprog, "gemmex", "1", NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 2);
  assert_string_equal(r.out, ""); /* the program did not run */
  free(r.out);
  char *argv2[] = {(char *)mpprof,   "--force", "-o", (char *)dir,
                   (char *)testprog, "gemmex",  "1",  NULL};
  r = run(argv2, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  assert_int_equal(access(keep, F_OK), 0);
  raws raw = load_raws(dir);
  assert_int_equal(raw.n, 1);
  free_raws(&raw);
}

/* A file of text with mode, for programs that cannot start. */
static void write_mode(const char *path, const char *text, mode_t mode) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  assert_int_equal(chmod(path, mode), 0);
}

/* A program that cannot start gets a shell's status: 127 when it is not
 * found (nor a script's interpreter, named then), 126 when it is found and
 * cannot run (not executable, a directory: said to be one; a binary the
 * kernel cannot execute, as one built for another architecture: it was run
 * as a shell script, execvp's fallback). */
static void a_program_that_cannot_start_exits_127_or_126(void **state) {
  (void)state;
  char script[4300], plain[4300], dirprog[4300], binary[4300];
  snprintf(script, sizeof script, "%s/no_interp.sh", workdir);
  snprintf(plain, sizeof plain, "%s/not_executable", workdir);
  snprintf(dirprog, sizeof dirprog, "%s/a_directory", workdir);
  snprintf(binary, sizeof binary, "%s/not_this_machines_binary", workdir);
  write_mode(script, "#!/nonexistent/interp -x\necho ran\n", 0755);
  write_mode(plain, "echo ran\n", 0644);
  write_mode(binary, "\177ELF, of no machine the kernel runs\n", 0755);
  mkdir(dirprog, 0755);
  char want_script[4600], want_dir[4600], want_binary[4600];
  snprintf(want_dir, sizeof want_dir, "mpprof: cannot run %s: Is a directory\n", dirprog);
  snprintf(want_binary, sizeof want_binary, "mpprof: cannot run %s: Exec format error\n", binary);
  snprintf(want_script, sizeof want_script,
           "mpprof: cannot run %s: its interpreter /nonexistent/interp (#! line): No such file or "
           "directory\n",
           script);
  const struct {
    const char *prog;
    int status;
    const char *err; /* NULL: not checked */
  } runs[] = {{"/nonexistent/program", 127,
               "mpprof: cannot run /nonexistent/program: No such file or directory\n"},
              {"no-such-command-anywhere", 127, NULL},
              {script, 127, want_script},
              {plain, 126, NULL},
              {dirprog, 126, want_dir},    /* it said "Permission denied" */
              {binary, 126, want_binary}}; /* /bin/sh read it: "not found", 127 */
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    const char *dir = outdir("missing");
    char *argv[] = {(char *)mpprof, "-o", (char *)dir, (char *)runs[i].prog, NULL};
    result r = run_err(argv, NULL);
    assert_int_equal(r.status, runs[i].status);
    assert_string_equal(r.out, "");
    if (runs[i].err) assert_string_equal(r.err, runs[i].err);
    assert_int_equal(access(dir, F_OK), -1); /* made by this run: gone again */
    free(r.out);
    free(r.err);
  }
}

/* --force on an earlier run's DIR with a program that cannot start (a typo):
 * the earlier run's raw files are kept, so its report can still be rebuilt. */
static void force_keeps_the_old_raw_files_when_the_program_cannot_start(void **state) {
  (void)state;
  const char *dir = outdir("force_typo");
  char *first[] = {(char *)mpprof, "-o", (char *)dir, (char *)testprog, "gemmex", "1", NULL};
  result r = run(first, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  char script[4300];
  snprintf(script, sizeof script, "%s/force_no_interp.sh", workdir);
  write_mode(script, "#! /nonexistent/interp\necho ran\n", 0755);
  /* a typo, then a script whose interpreter is missing: neither starts */
  const char *progs[] = {"/nonexistent/program", script};
  for (size_t i = 0; i < 2; i++) {
    char *typo[] = {(char *)mpprof, "--force", "-o", (char *)dir, (char *)progs[i], NULL};
    r = run(typo, NULL);
    assert_int_equal(r.status, 127);
    free(r.out);
    raws raw = load_raws(dir);
    assert_int_equal(raw.n, 1);
    free_raws(&raw);
  }
}

/* A script run by env(1) ("#!/usr/bin/env python3") whose command is missing
 * is refused as one whose interpreter is missing: env is there, the command
 * it would run is not (also after -S, which splits the line). With --force,
 * before the earlier run's raw files are removed; without, the DIR this run
 * made goes again. One whose command is found still runs. */
static void a_script_whose_env_command_is_missing_is_refused(void **state) {
  (void)state;
  if (access("/usr/bin/env", X_OK) != 0) skip();
  char dir[4300], fresh[4300];
  snprintf(dir, sizeof dir, "%s", outdir("force_env"));
  snprintf(fresh, sizeof fresh, "%s", outdir("env_missing"));
  char *first[] = {(char *)mpprof, "-o", dir, (char *)testprog, "gemmex", "1", NULL};
  result r = run(first, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  raws before = load_raws(dir);
  assert_int_equal(before.n, 1);
  char *old = cJSON_PrintUnformatted(before.doc[0]);
  const struct {
    const char *line, *cmd;
  } missing[] = {{"/usr/bin/env nonexistent_x", "nonexistent_x"},
                 {"/usr/bin/env -S nonexistent_y -u", "nonexistent_y"}};
  char script[4300], text[256], want[9000];
  for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++) {
    snprintf(script, sizeof script, "%s/env_missing_%zu.sh", workdir, i);
    snprintf(text, sizeof text, "#!%s\necho ran\n", missing[i].line);
    write_mode(script, text, 0755);
    for (int force = 1; force >= 0; force--) {
      char *argv[] = {(char *)mpprof, "-o", fresh, script, NULL};
      char *forced[] = {(char *)mpprof, "--force", "-o", dir, script, NULL};
      r = run_err(force ? forced : argv, NULL);
      assert_int_equal(r.status, 127);
      assert_string_equal(r.out, "");
      char tail[4400] = "";
      if (force) snprintf(tail, sizeof tail, " (%s is left as it was)", dir);
      snprintf(want, sizeof want,
               "mpprof: cannot run %s: its interpreter %s (#! line): %s not found in PATH%s\n",
               script, missing[i].line, missing[i].cmd, tail);
      assert_string_equal(r.err, want);
      free(r.out);
      free(r.err);
    }
    assert_int_equal(access(fresh, F_OK), -1); /* made by this run: gone again */
    raws after = load_raws(dir);
    assert_int_equal(after.n, 1);
    char *now = cJSON_PrintUnformatted(after.doc[0]);
    assert_string_equal(now, old);
    free(now);
    free_raws(&after);
  }
  free(old);
  free_raws(&before);
  snprintf(script, sizeof script, "%s/env_found.sh", workdir);
  write_mode(script, "#!/usr/bin/env sh\nexit 3\n", 0755);
  char *found[] = {(char *)mpprof, "--force", "-o", dir, script, NULL};
  r = run_err(found, NULL);
  assert_int_equal(r.status, 3);
  free(r.out);
  free(r.err);
}

static bool dir_is_empty(const char *path) {
  DIR *d = opendir(path);
  assert_non_null(d);
  struct dirent *e;
  bool empty = true;
  while ((e = readdir(d)))
    empty &= !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
  closedir(d);
  return empty;
}

/* An empty DIR given with -o is left empty by a run that leaves nothing in it
 * (a program that cannot start, or one that records nothing): a later
 * `mpprof -o DIR` must not find it "not empty". */
static void an_empty_output_directory_stays_empty_when_nothing_is_recorded(void **state) {
  (void)state;
  const struct {
    const char *program;
    int status;
  } runs[] = {{"/nonexistent/program", 127}, {"true", 0}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    const char *dir = outdir("empty_kept");
    assert_int_equal(mkdir(dir, 0777), 0);
    char *argv[] = {(char *)mpprof, "-o", (char *)dir, (char *)runs[i].program, NULL};
    result r = run(argv, NULL);
    assert_int_equal(r.status, runs[i].status);
    free(r.out);
    assert_true(dir_is_empty(dir));
  }
}

/* Signals ignored where mpprof was started (nohup ignores SIGHUP, a shell's
 * background job SIGINT) stay ignored in the program, as without mpprof:
 * `nohup mpprof ./train &` must not die of a hangup. */
static void signals_ignored_by_the_caller_stay_ignored_in_the_program(void **state) {
  (void)state;
  const char *dir = outdir("sigign");
  char prog[4400];
  snprintf(prog, sizeof prog,
           "trap '' HUP INT; exec \"$0\" \"$@\" sh -c 'grep ^SigIgn: /proc/self/status'");
  char *plain[] = {"/bin/sh", "-c", prog, "env", NULL};
  char *prof[] = {"/bin/sh", "-c", prog, (char *)mpprof, "-o", (char *)dir, "--", NULL};
  result a = run(plain, NULL), b = run(prof, NULL);
  assert_non_null(strstr(a.out, "SigIgn:"));
  assert_string_equal(b.out, a.out);
  free(a.out);
  free(b.out);
}

static void an_unknown_scan_mode_is_a_usage_error(void **state) {
  (void)state;
  char *argv[] = {(char *)mpprof, "--scan", "some", (char *)testprog, "gemmex", "1", NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 2);
  free(r.out);
}

/* A count the library would ignore (it reads --sample and --shadow up to
 * 2^32 - 1, --shadow-max-mb up to 2^20) is refused by the launcher, not
 * silently replaced by the default (auto sampling, no shadow, 256 MiB). */
static void a_count_beyond_what_the_library_reads_is_a_usage_error(void **state) {
  (void)state;
  const char *bad[][2] = {
      {"--sample", "4294967296"}, {"--shadow=4294967296", NULL}, {"--shadow-max-mb", "1048577"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *dir = outdir("count_too_large");
    char *argv[9];
    int n = 0;
    argv[n++] = (char *)mpprof;
    argv[n++] = "-o";
    argv[n++] = (char *)dir;
    argv[n++] = (char *)bad[i][0];
    if (bad[i][1]) argv[n++] = (char *)bad[i][1];
    argv[n++] = (char *)testprog;
    argv[n++] = "gemmex";
    argv[n++] = "1";
    argv[n] = NULL;
    result r = run(argv, NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, ""); /* the program did not run */
    free(r.out);
  }
}

/* --shadow=N and --tc-counters=N take what MPPROF_SHADOW and
 * MPPROF_TC_COUNTERS take (profiler/settings.c, one reading): 0 and off turn
 * them off and the program runs; anything else is refused with the phrase
 * the environment check uses. */
static void an_option_takes_what_its_variable_takes(void **state) {
  (void)state;
  const char *ok[] = {"--shadow=0", "--tc-counters=off", "--tc-counters=0", "--tc-counters=1st"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    const char *dir = outdir("option_off");
    char *argv[] = {(char *)mpprof,   "-o",     (char *)dir, (char *)ok[i], "--force",
                    (char *)testprog, "gemmex", "1",         NULL};
    result r = run(argv, NULL);
    assert_int_equal(r.status, 0);
    free(r.out);
  }
  const struct {
    const char *arg, *msg;
  } bad[] = {
      {"--tc-counters=x", "mpprof: run: --tc-counters=N must be first, N >= 1, or off, not 'x'\n"},
      {"--shadow=-1", "mpprof: run: --shadow=N must be an integer in [0, 4294967295], not '-1'\n"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {(char *)mpprof, (char *)bad[i].arg, (char *)testprog, "gemmex", "1", NULL};
    result r = run_err(argv, NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_string_equal(r.err, bad[i].msg);
    free(r.out);
    free(r.err);
  }
}

/* A loss scale is a float32 value (GradScaler's): one beyond float32's range
 * (1e39 made any float loss Inf, 2^-200 flushed it to 0) was taken and the
 * report unscaled gradients by it; now it is refused in one line naming the
 * option, exit 2, and the program does not run. The range's ends are taken. */
static void a_loss_scale_beyond_float32_is_refused(void **state) {
  (void)state;
  const char *bad[] = {"1e39", "2^128", "2^-150", "1e-50"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {
        (char *)mpprof, "--loss-scale", (char *)bad[i], (char *)testprog, "gemmex", "1", NULL};
    result r = run_err(argv, NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    char want[200];
    snprintf(want, sizeof want,
             "mpprof: run: --loss-scale must be a number or 2^k in [2^-149, 3.40282e+38] "
             "(float32's range), not '%s'\n",
             bad[i]);
    assert_string_equal(r.err, want);
    free(r.out);
    free(r.err);
  }
  const char *ok[] = {"2^127", "2^-149", "3.4028234e38"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    const char *dir = outdir("loss_scale_edge");
    char *argv[] = {
        (char *)mpprof,   "-o",     (char *)dir, "--force", "--loss-scale", (char *)ok[i],
        (char *)testprog, "gemmex", "1",         NULL};
    result r = run(argv, NULL);
    assert_int_equal(r.status, 0);
    free(r.out);
  }
}

/* MPPROF_OUT in mpprof's environment stands for -o, as the other variables
 * stand for their options (it was replaced by a new mpprof-PROG-DATE
 * directory, silently); -o wins over it, and a non-empty one is refused. */
static void mpprof_out_in_the_environment_is_the_default_output(void **state) {
  (void)state;
  char envdir[4300], optdir[4300], env[4400], report[4400];
  snprintf(envdir, sizeof envdir, "%s", outdir("env_out"));
  snprintf(optdir, sizeof optdir, "%s", outdir("opt_out"));
  snprintf(env, sizeof env, "MPPROF_OUT=%s", envdir);
  const char *envv[] = {env, NULL};
  char *argv[] = {(char *)mpprof, (char *)testprog, "gemmex", "1", NULL};
  result r = run(argv, envv);
  assert_int_equal(r.status, 0);
  free(r.out);
  snprintf(report, sizeof report, "%s/report.json", envdir);
  assert_int_equal(access(report, F_OK), 0);
  r = run(argv, envv); /* now not empty */
  assert_int_equal(r.status, 2);
  free(r.out);
  char *with_o[] = {(char *)mpprof, "-o", optdir, (char *)testprog, "gemmex", "1", NULL};
  r = run(with_o, envv);
  assert_int_equal(r.status, 0);
  free(r.out);
  snprintf(report, sizeof report, "%s/report.json", optdir);
  assert_int_equal(access(report, F_OK), 0);
}

/* Without -o, a program whose name fills a file name (255 bytes) still runs:
 * mpprof-PROG-DATE is cut to one a directory can have, with room for the
 * "-N" of a second run in the same second (it was "File name too long",
 * exit 2, and the program did not run). */
static void a_long_program_name_gets_a_default_output_directory(void **state) {
  (void)state;
  char dir[4300], prog[4600], name[241];
  snprintf(dir, sizeof dir, "%s", outdir("long_name"));
  assert_int_equal(mkdir(dir, 0755), 0);
  memset(name, 'p', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  snprintf(prog, sizeof prog, "%s/%s", dir, name);
  assert_int_equal(link(testprog, prog), 0);
  char *argv[] = {
      "/bin/sh", "-c", "cd \"$1\" && \"$2\" \"$3\" gemmex 1 && exec \"$2\" \"$3\" gemmex 1",
      "sh",      dir,  (char *)mpprof,
      prog,      NULL};
  result r = run(argv, NULL);
  assert_int_equal(r.status, 0);
  free(r.out);
  DIR *d = opendir(dir);
  assert_non_null(d);
  int reports = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "mpprof-ppp", 10)) continue;
    char report[4700];
    snprintf(report, sizeof report, "%s/%s/report.json", dir, e->d_name);
    reports += access(report, F_OK) == 0;
  }
  closedir(d);
  assert_int_equal(reports, 2); /* the second run's name has its "-2" when in the same second */
}

/* -o '' is a usage error naming the option (it was "cannot create :
 * Invalid argument"), and the program does not run. */
static void an_empty_output_name_is_a_usage_error(void **state) {
  (void)state;
  char *empty_o[] = {(char *)mpprof, "-o", "", (char *)testprog, "gemmex", "1", NULL};
  result e = run_err(empty_o, NULL);
  assert_int_equal(e.status, 2);
  assert_string_equal(e.out, "");
  assert_string_equal(e.err, "mpprof: run: -o needs a directory name, not ''\n");
  free(e.out);
  free(e.err);
}

/* A libmpprof.so the loader cannot preload is refused before the program
 * starts, in one line naming it, exit 2: the program ran with nothing
 * recorded, after a loader's "ignored" line or none (a path with a blank is
 * two paths to LD_PRELOAD: the report blamed a statically linked cuBLAS). */
static void a_library_the_loader_cannot_preload_is_refused(void **state) {
  (void)state;
  char lib[4300], spaced_dir[4300], spaced[4400], text[4300];
  libmpprof_path(lib, sizeof lib);
  snprintf(spaced_dir, sizeof spaced_dir, "%s/lib dir", workdir);
  snprintf(spaced, sizeof spaced, "%s/libmpprof.so", spaced_dir);
  snprintf(text, sizeof text, "%s/not_a_library.so", workdir);
  mkdir(spaced_dir, 0755);
  unlink(spaced);
  assert_int_equal(link(lib, spaced), 0); /* a copy: a link's target has no blank */
  write_mode(text, "not ELF\n", 0644);
  const struct {
    const char *lib, *why;
  } bad[] = {{spaced, "its path holds a blank or ':', at which LD_PRELOAD splits it (put mpprof, "
                      "or a copy of libmpprof.so named by MPPROF_LIB, under a path without one)"},
             {text, "not a shared library (no ELF header)"},
             {workdir, "not a regular file"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *dir = outdir("bad_lib");
    char *argv[] = {(char *)mpprof, "-o", (char *)dir, (char *)testprog, "gemmex", "1", NULL};
    char var[4500], want[9000];
    snprintf(var, sizeof var, "MPPROF_LIB=%s", bad[i].lib);
    const char *env[] = {var, NULL};
    result r = run_err(argv, env);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, ""); /* the program did not run */
    snprintf(want, sizeof want, "mpprof: %s: %s\n", var, bad[i].why);
    assert_string_equal(r.err, want);
    free(r.out);
    free(r.err);
  }
}

/* A setting in the environment the program would inherit that libmpprof
 * would ignore (and so record with its default, silently unless MPPROF_LOG)
 * is refused before the program starts: one line naming the variable, exit
 * 2. The option that sets the variable replaces it; a name mpprof does not
 * read gets a warning naming the one meant, and the run goes on. */
static void a_bad_setting_in_the_environment_is_refused_before_the_program_runs(void **state) {
  (void)state;
  const char *bad[] = {
      "MPPROF_SAMPLE=every",       "MPPROF_SCAN=some",       "MPPROF_LOG=yes",
      "MPPROF_MAX_SITES=0",        "MPPROF_CHECKPOINT_S=-1", "MPPROF_LOSS_SCALE=0",
      "MPPROF_TC_COUNTERS=always", "MPPROF_SHADOW=x",        "MPPROF_SHADOW_MAX_MB=0",
      "MPPROF_SHADOW_MAX_REL=2e6", "MPPROF_MAX_EVENTS=-5"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *dir = outdir("bad_env");
    char *argv[] = {(char *)mpprof, "-o", (char *)dir, (char *)testprog, "gemmex", "1", NULL};
    const char *env[] = {bad[i], NULL};
    result r = run_err(argv, env);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, ""); /* the program did not run */
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(strchr(bad[i], '=') - bad[i]), bad[i]);
    assert_true(!strncmp(r.err, "mpprof: run: ", 13));
    assert_non_null(strstr(r.err, name));
    assert_int_equal(strchr(r.err, '\n') - r.err + 1, (long)strlen(r.err)); /* one line */
    free(r.out);
    free(r.err);
  }
  const char *dir = outdir("bad_env");
  char *argv[] = {(char *)mpprof,   "-o",     (char *)dir, "--sample", "1",
                  (char *)testprog, "gemmex", "1",         NULL};
  const char *env[] = {"MPPROF_SAMPLE=every", "MPPROF_SAMPLES=4", NULL};
  result r = run_err(argv, env);
  assert_int_equal(r.status, 0);
  assert_string_not_equal(r.out, "");
  assert_non_null(strstr(r.err, "MPPROF_SAMPLES in the environment is not a variable mpprof "
                                "reads (did you mean MPPROF_SAMPLE?)"));
  free(r.out);
  free(r.err);
}

/* A program that execs itself twice: every image's calls are recorded, each
 * image in a raw file of its own (same pid), all final. */
static void every_image_of_a_program_that_execs_itself_is_recorded(void **state) {
  (void)state;
  const char *dir = outdir("exec");
  char *argv[] = {(char *)testprog, "exec", "2", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 3);
  double calls = 0;
  for (int i = 0; i < r.n; i++) {
    assert_true(cJSON_IsTrue(get(r.doc[i], "final")));
    assert_false(cJSON_IsTrue(get(r.doc[i], "incomplete")));
    assert_int_equal(num(r.doc[i], "pid"), num(r.doc[0], "pid"));
    calls += num(site(r.doc[i], "cublasGemmEx", NULL, NULL), "calls");
  }
  assert_int_equal(calls, 18);
  free_raws(&r);
}

/* A rank declared with mpprof_rank is carried to the images the declaring
 * process execs (execv, execve, execvp, execle, fexecve, in turn), and to
 * theirs, until one declares its own; not to a child it forks that execs.
 * Every image's environment is exactly what its exec passed. */
static void a_declared_rank_is_carried_across_exec_but_not_to_a_forked_child(void **state) {
  (void)state;
  const char *dir = outdir("rankexec");
  char *argv[] = {(char *)testprog, "rankexec", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 7);
  int seen = 0;
  for (int i = 0; i < r.n; i++) {
    cJSON *doc = r.doc[i];
    const char *a = str(doc, "argv.2");
    char step = a ? a[0] : 's';
    assert_true(cJSON_IsTrue(get(doc, "final")));
    assert_int_equal(num(site(doc, "cublasGemmEx", NULL, NULL), "calls"), 1);
    if (step == 'c') {
      assert_true(is_null(doc, "rank"));
      assert_true(is_null(doc, "world_size"));
    } else {
      assert_int_equal(num(doc, "rank"), step == 'f' ? 2 : 1);
      assert_int_equal(num(doc, "world_size"), 4);
    }
    const char *steps = "sveplfc", *at = strchr(steps, step);
    assert_non_null(at);
    seen |= 1 << (at - steps);
  }
  assert_int_equal(seen, 0x7f);
  free_raws(&r);
}

/* A child started with an environment that no longer preloads libmpprof
 * (a launcher's clean env) runs unprofiled: the report says which program
 * ran without mpprof, and who started it (finding process_without_mpprof). */
static void a_child_started_without_mpprof_is_named_in_the_report(void **state) {
  (void)state;
  const char *dir = outdir("cleanexec");
  char *argv[] = {(char *)testprog, "cleanexec", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  cJSON *rep = report_json(dir);
  cJSON *f, *found = NULL;
  cJSON_ArrayForEach(f, get(rep, "findings")) {
    if (str_is(f, "kind", "process_without_mpprof")) found = f;
  }
  assert_non_null(found);
  const char *what = str(found, "message");
  assert_non_null(what);
  assert_non_null(strstr(what, "mpp_testprog gemmex 1"));
  assert_non_null(strstr(what, "without mpprof"));
  cJSON_Delete(rep);
}

/* posix_spawn and posix_spawnp with an environment that does not preload
 * libmpprof (the C library's own execve inside them is not interposable):
 * the report names both children, started by the profiled process, as
 * processes without mpprof. A spawn that passes environ is profiled itself
 * and gets no note; a failing spawn returns what it returns without mpprof
 * (the program's output, compared by run_both, prints it). */
static void a_child_spawned_without_mpprof_is_named_in_the_report(void **state) {
  (void)state;
  const char *dir = outdir("cleanspawn");
  char *argv[] = {(char *)testprog, "cleanspawn", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 4);
  int parent = -1, unprofiled = 0, profiled = 0;
  for (int i = 0; i < r.n; i++)
    if (str_is(r.doc[i], "argv.1", "cleanspawn")) parent = (int)num(r.doc[i], "pid");
  assert_true(parent > 0);
  for (int i = 0; i < r.n; i++) {
    cJSON *doc = r.doc[i];
    if (str_is(doc, "argv.1", "cleanspawn")) continue;
    assert_int_equal(num(doc, "ppid"), parent);
    assert_true(num(doc, "pid") != parent);
    if (str_is(doc, "argv.2", "3")) {
      assert_null(get(doc, "unprofiled"));
      assert_int_equal(num(site(doc, "cublasGemmEx", NULL, NULL), "calls"), 3); /* gemmex 3 */
      profiled++;
    } else {
      assert_non_null(str(doc, "unprofiled"));
      unprofiled++;
    }
  }
  assert_int_equal(profiled, 1);
  assert_int_equal(unprofiled, 2);
  free_raws(&r);
  cJSON *rep = report_json(dir);
  cJSON *f, *found = NULL;
  cJSON_ArrayForEach(f, get(rep, "findings")) {
    if (str_is(f, "kind", "process_without_mpprof")) found = f;
  }
  assert_non_null(found);
  const char *what = str(found, "message");
  assert_non_null(what);
  if (!strstr(what, "mpp_testprog gemmex 1") || !strstr(what, "mpp_testprog gemmex 2") ||
      strstr(what, "gemmex 3"))
    fail_msg("finding: %s", what);
  cJSON_Delete(rep);
}

/* An exec whose environment keeps LD_PRELOAD but drops every MPPROF_*
 * variable (a launcher that whitelists), into another working directory:
 * the new image's raw file is in the run's output directory with the run's
 * settings (--scan outputs), nothing is written in its working directory,
 * and the program sees exactly the environment it passed (run_both compares
 * the output: "environment as passed"). */
static void an_exec_that_drops_the_mpprof_variables_stays_in_the_run(void **state) {
  (void)state;
  char cwd[4300];
  snprintf(cwd, sizeof cwd, "%s", outdir("keepexec-cwd"));
  assert_int_equal(mkdir(cwd, 0755), 0);
  const char *dir = outdir("keepexec");
  char *argv[] = {(char *)testprog, "keepexec", cwd, NULL};
  const char *opts[] = {"--scan", "outputs", NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 2);
  int seen = 0;
  for (int i = 0; i < r.n; i++) {
    assert_true(str_is(r.doc[i], "scan", "outputs"));
    assert_int_equal(num(site(r.doc[i], "cublasGemmEx", NULL, NULL), "calls"), 1);
    if (str_is(r.doc[i], "argv.1", "rankexec")) seen++; /* the exec'd image */
  }
  assert_int_equal(seen, 1);
  free_raws(&r);
  char stray[4400];
  snprintf(stray, sizeof stray, "%s/mpprof-out", cwd);
  struct stat st;
  assert_int_not_equal(stat(stray, &st), 0);
}

/* posix_spawn and posix_spawnp of a child whose environment keeps LD_PRELOAD
 * but drops every MPPROF_* variable, in another working directory (a file
 * action): each child's raw file is in the run's output directory with the
 * run's settings (--scan outputs), started by the profiled process, nothing
 * is written in the children's working directory, and each child sees
 * exactly the environment its spawn passed (run_both compares the output:
 * "environment as passed"), as does a spawn of a missing file return what it
 * returns without mpprof. */
static void a_spawn_that_drops_the_mpprof_variables_stays_in_the_run(void **state) {
  (void)state;
  char cwd[4300];
  snprintf(cwd, sizeof cwd, "%s", outdir("keepspawn-cwd"));
  assert_int_equal(mkdir(cwd, 0755), 0);
  const char *dir = outdir("keepspawn");
  char *argv[] = {(char *)testprog, "keepspawn", cwd, NULL};
  const char *opts[] = {"--scan", "outputs", NULL};
  assert_int_equal(run_both(dir, argv, opts), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 3);
  int parent = -1, children = 0;
  for (int i = 0; i < r.n; i++)
    if (str_is(r.doc[i], "argv.1", "keepspawn")) parent = (int)num(r.doc[i], "pid");
  assert_true(parent > 0);
  for (int i = 0; i < r.n; i++) {
    assert_true(str_is(r.doc[i], "scan", "outputs"));
    assert_null(get(r.doc[i], "unprofiled"));
    assert_int_equal(num(site(r.doc[i], "cublasGemmEx", NULL, NULL), "calls"), 1);
    if (!str_is(r.doc[i], "argv.1", "rankexec")) continue; /* a spawned child */
    assert_int_equal(num(r.doc[i], "ppid"), parent);
    children++;
  }
  assert_int_equal(children, 2);
  free_raws(&r);
  char stray[4400];
  snprintf(stray, sizeof stray, "%s/mpprof-out", cwd);
  struct stat st;
  assert_int_not_equal(stat(stray, &st), 0);
}

/* The settings a spawn added (MPPROF_EXEC_ADDED=P<pid>:NAMES) are removed
 * before main only by a child of that pid: a preloaded /usr/bin/env started
 * by this process prints no MPPROF_SCAN when the variable names this
 * process, and prints it when it names another (a grandchild, or a child
 * whose parent died and that was reparented, reads the same settings and
 * keeps them); MPPROF_EXEC_ADDED itself is gone from both. */
static void the_settings_a_spawn_added_are_removed_only_by_its_child(void **state) {
  (void)state;
  char lib[4200], preload[4300], out[4300], mark[128];
  libmpprof_path(lib, sizeof lib);
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lib);
  snprintf(out, sizeof out, "MPPROF_OUT=%s", outdir("spawnmark"));
  for (int meant = 0; meant < 2; meant++) {
    snprintf(mark, sizeof mark, "MPPROF_EXEC_ADDED=P%d:MPPROF_SCAN", meant ? (int)getpid() : 1);
    const char *env[] = {preload, out, "MPPROF_SCAN=outputs", mark, NULL};
    char *argv[] = {"/usr/bin/env", NULL};
    result r = run(argv, env);
    assert_int_equal(r.status, 0);
    if (strstr(r.out, "MPPROF_EXEC_ADDED=") || !strstr(r.out, out) ||
        (strstr(r.out, "MPPROF_SCAN=outputs") == NULL) != meant)
      fail_msg("%s: %s", mark, r.out);
    free(r.out);
  }
}

/* The same spawn with an environment 16 bytes short of what the kernel
 * takes: the settings do not fit, the spawn is made with the environment as
 * given (not E2BIG), and the child sees it as passed. */
static void a_spawn_with_no_room_for_the_settings_is_made_as_given(void **state) {
  (void)state;
  char cwd[4300];
  snprintf(cwd, sizeof cwd, "%s", outdir("bigspawn-cwd"));
  assert_int_equal(mkdir(cwd, 0755), 0);
  const char *dir = outdir("bigspawn");
  char *argv[] = {(char *)testprog, "bigspawn", cwd, NULL};
  result plain = run(argv, NULL);
  assert_int_equal(plain.status, 0);
  if (!strstr(plain.out, "bigspawn: 0\n") || !strstr(plain.out, "environment as passed"))
    fail_msg("output: %s", plain.out);
  free(plain.out);
  assert_int_equal(run_both(dir, argv, NULL), 0);
}

/* `mpprof env -i ... PROG`: the one process that ran the GPU ops ran without
 * mpprof. The summary does not stop at "no CUDA matrix ops were called": it
 * names the process that ran without mpprof. */
static void a_program_started_without_mpprof_is_named_in_the_summary(void **state) {
  (void)state;
  const char *dir = outdir("envi");
  char ld[4200];
  snprintf(ld, sizeof ld, "LD_LIBRARY_PATH=%s", simcuda);
  char *argv[] = {(char *)mpprof, "-o", (char *)dir,      "--force", "--", "/usr/bin/env",
                  "-i",           ld,   (char *)testprog, "gemmex",  "1",  NULL};
  result r = run_err(argv, NULL);
  assert_int_equal(r.status, 0);
  if (!strstr(r.err, "no CUDA matrix ops") ||
      !strstr(r.err, "mpp_testprog gemmex 1, started by process") ||
      !strstr(r.err, "ran without mpprof"))
    fail_msg("summary: %s", r.err);
  free(r.out);
  free(r.err);
}

/* The report's program of a program that execs itself is the command line
 * that was run, its first image's: every image is a root (its parent is
 * mpprof), and the later images' files (<host>-<pid>.2.json) sort first. */
static void the_program_of_a_run_that_execs_itself_is_its_first_image(void **state) {
  (void)state;
  const char *dir = outdir("exec-program");
  char *argv[] = {(char *)testprog, "exec", "2", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  char want[4300];
  cJSON *rep = report_json(dir);
  snprintf(want, sizeof want, "%s exec 2", testprog);
  assert_true(str_is(rep, "program", want));
  cJSON_Delete(rep);
}

/* exit() while another thread is inside a GEMM: the call is counted and the
 * raw file says it is in no site. */
static void a_call_in_flight_at_exit_makes_the_file_incomplete(void **state) {
  (void)state;
  const char *dir = outdir("inflight");
  char *argv[] = {(char *)testprog, "inflight", NULL};
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsTrue(get(r.doc[0], "final")));
  assert_true(cJSON_IsTrue(get(r.doc[0], "incomplete")));
  assert_true(has_reason(r.doc[0], "calls_in_flight: 1 calls"));
  free_raws(&r);
}

/* A command line longer than the kept 1 MiB: argv is cut and the raw file
 * says so. */
static void a_command_line_over_1_mib_is_cut_and_flagged(void **state) {
  (void)state;
  enum { NBIG = 10, BIGLEN = 120 * 1024 };
  char *big[NBIG];
  char *argv[NBIG + 4];
  int n = 0;
  argv[n++] = (char *)testprog;
  argv[n++] = "gemmex";
  argv[n++] = "1";
  for (int i = 0; i < NBIG; i++) {
    big[i] = malloc(BIGLEN + 1);
    memset(big[i], 'a' + i, BIGLEN);
    big[i][BIGLEN] = '\0';
    argv[n++] = big[i];
  }
  argv[n] = NULL;
  const char *dir = outdir("longargv");
  assert_int_equal(run_both(dir, argv, NULL), 0);
  raws r = load_raws(dir);
  assert_int_equal(r.n, 1);
  assert_true(cJSON_IsTrue(get(r.doc[0], "incomplete")));
  assert_true(has_reason(r.doc[0], "argv_truncated"));
  /* The first arguments are whole; 1 MiB of bytes is kept, the last argument
   * cut (counted with a terminator it did not have: +1). */
  cJSON *a = get(r.doc[0], "argv");
  assert_string_equal(cJSON_GetArrayItem(a, 1)->valuestring, "gemmex");
  size_t kept = 0;
  const cJSON *x;
  cJSON_ArrayForEach(x, a) kept += strlen(x->valuestring) + 1;
  assert_int_equal(kept, 1024 * 1024 + 1);
  free_raws(&r);
  for (int i = 0; i < NBIG; i++)
    free(big[i]);
}

/* The program exits leaving a child that still runs: the report names it. */
static void a_process_still_running_after_the_program_is_reported(void **state) {
  (void)state;
  const char *dir = outdir("orphan");
  char *argv[] = {(char *)mpprof, "-o", (char *)dir, "--", (char *)testprog, "orphan", "2", NULL};
  result prof = run(argv, NULL);
  assert_int_equal(prof.status, 0);
  free(prof.out);
  cJSON *rep = report_json(dir);
  cJSON *alive = get(rep, "summary.still_running");
  assert_int_equal(cJSON_GetArraySize(alive), 1);
  bool found = false;
  const cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
    found |= str_is((cJSON *)f, "kind", "processes_still_running");
  }
  assert_true(found);
  pid_t orphan = (pid_t)cJSON_GetArrayItem(alive, 0)->valuedouble;
  cJSON_Delete(rep);
  for (int i = 0; i < 100 && kill(orphan, 0) == 0; i++) /* it sleeps 2 s, then exits */
    usleep(50000);
}

static const char *need(const char *name) {
  const char *v = getenv(name);
  if (!v || !*v) {
    fprintf(stderr, "test_profiler_e2e: %s is not set\n", name);
    exit(2);
  }
  return v;
}

int main(void) {
  mpprof = need("MPP_MPPROF");
  testprog = need("MPP_TESTPROG");
  mlp_train = need("MPP_MLP_TRAIN");
  conv_train = need("MPP_CONV_TRAIN");
  simcuda = need("MPP_SIMCUDA");
  workdir = need("MPP_WORKDIR");
  lt_count = need("MPP_LT_COUNT");
  status_swap = need("MPP_STATUS_SWAP");
  mkdir(workdir, 0777);
  /* One test or a few by name (a cmocka pattern, * and ?), when debugging. */
  if (getenv("MPP_TEST_FILTER")) cmocka_set_test_filter(getenv("MPP_TEST_FILTER"));
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(mlp_train_records_every_gemm_with_layer_dtypes_and_scans),
      cmocka_unit_test(mlp_train_with_8_threads_is_unchanged_and_fully_recorded),
      cmocka_unit_test(mlp_train_tf32_is_visible_as_math_mode_and_compute_type),
      cmocka_unit_test(conv_train_legacy_api_records_every_convolution),
      cmocka_unit_test(conv_train_backend_api_records_every_convolution),
      cmocka_unit_test(cudnn_autotuning_executions_are_counted_apart),
      cmocka_unit_test(a_wrong_descriptor_type_as_variant_pack_is_refused_not_scanned),
      cmocka_unit_test(variant_packs_used_across_threads_are_never_scanned_stale),
      cmocka_unit_test(a_plan_made_at_a_destroyed_plans_address_is_its_own),
      cmocka_unit_test(a_pack_at_a_reused_address_changed_elsewhere_is_not_scanned),
      cmocka_unit_test(a_pack_used_across_threads_leaves_other_threads_packs_trusted),
      cmocka_unit_test(more_threads_than_pack_slots_are_each_scanned),
      cmocka_unit_test(backend_executions_on_four_threads_are_each_scanned),
      cmocka_unit_test(inner_cublasLt_call_under_cublasGemmEx_is_recorded_once),
      cmocka_unit_test(a_64_group_gemm_on_a_small_thread_stack_is_recorded_per_group),
      cmocka_unit_test(a_70_group_gemm_records_every_group),
      cmocka_unit_test(sampling_takes_a_grouped_call_whole),
      cmocka_unit_test(a_grouped_gemms_sites_have_the_stats_of_its_groups_called_one_by_one),
      cmocka_unit_test(mpprof_starts_on_little_of_the_threads_stack),
      cmocka_unit_test(descriptor_churn_keeps_the_backend_plans_followed),
      cmocka_unit_test(backend_execute_on_a_small_thread_stack_is_recorded),
      cmocka_unit_test(direct_cublasLt_call_is_recorded_with_its_descriptor),
      cmocka_unit_test(cublasLt_descriptors_changed_in_place_are_read_as_they_are),
      cmocka_unit_test(cublasLt_calls_past_the_memo_are_read_as_they_are),
      cmocka_unit_test(cublasLt_descriptors_of_repeated_calls_are_read_once),
      cmocka_unit_test(every_cublas_gemm_entry_point_is_recorded),
      cmocka_unit_test(math_mode_set_on_the_handle_is_recorded),
      cmocka_unit_test(each_thread_has_its_own_layer_stack),
      cmocka_unit_test(every_kind_of_nvtx_call_names_the_layer),
      cmocka_unit_test(events_of_every_thread_reach_the_raw_file),
      cmocka_unit_test(a_forked_child_writes_its_own_raw_file),
      cmocka_unit_test(a_child_forked_after_cuda_started_leaves_cupti_alone),
      cmocka_unit_test(a_child_forked_before_cuda_collects_its_kernels),
      cmocka_unit_test(a_main_process_ended_by__exit_without_raw_file_is_named),
      cmocka_unit_test(a_rank_learned_late_is_in_the_raw_file_and_kept_by_a_fork_child),
      cmocka_unit_test(a_declared_rank_is_carried_across_exec_but_not_to_a_forked_child),
      cmocka_unit_test(a_child_started_without_mpprof_is_named_in_the_report),
      cmocka_unit_test(a_program_started_without_mpprof_is_named_in_the_summary),
      cmocka_unit_test(a_child_spawned_without_mpprof_is_named_in_the_report),
      cmocka_unit_test(an_exec_that_drops_the_mpprof_variables_stays_in_the_run),
      cmocka_unit_test(a_spawn_that_drops_the_mpprof_variables_stays_in_the_run),
      cmocka_unit_test(a_spawn_with_no_room_for_the_settings_is_made_as_given),
      cmocka_unit_test(the_settings_a_spawn_added_are_removed_only_by_its_child),
      cmocka_unit_test(the_models_a_framework_names_are_in_the_raw_file),
      cmocka_unit_test(a_forked_child_that_never_uses_cuda_writes_no_raw_file),
      cmocka_unit_test(loss_scale_marks_work_from_a_second_thread_and_in_a_forked_child),
      cmocka_unit_test(loss_scale_option_declares_the_scale_of_a_program_without_marks),
      cmocka_unit_test(a_loss_scale_that_is_not_a_positive_number_is_a_usage_error),
      cmocka_unit_test(first_nonfinite_is_the_gemm_that_overflowed_fp16),
      cmocka_unit_test(exit_status_3_is_passed_through_with_a_final_raw_file),
      cmocka_unit_test(a_pending_cancellation_never_acts_inside_mpprof),
      cmocka_unit_test(checkpoints_never_touch_the_files_of_a_program_that_closes_all),
      cmocka_unit_test(the_exit_write_never_touches_the_files_of_a_program_that_closes_all),
      cmocka_unit_test(the_seccomp_check_leaves_a_program_file_at_its_number_alone),
      cmocka_unit_test(a_child_cloned_without_fork_writes_no_file_as_its_parent),
      cmocka_unit_test(checkpoints_make_no_system_call_a_seccomp_filter_may_kill_for),
      cmocka_unit_test(a_log_line_to_a_pipe_nobody_reads_ends_no_program),
      cmocka_unit_test(every_image_of_a_program_that_execs_itself_is_recorded),
      cmocka_unit_test(the_program_of_a_run_that_execs_itself_is_its_first_image),
      cmocka_unit_test(a_call_in_flight_at_exit_makes_the_file_incomplete),
      cmocka_unit_test(a_command_line_over_1_mib_is_cut_and_flagged),
      cmocka_unit_test(a_process_still_running_after_the_program_is_reported),
      cmocka_unit_test(killed_by_sigterm_midway_keeps_the_last_checkpoint),
      cmocka_unit_test(a_final_raw_file_not_written_is_named_as_such),
      cmocka_unit_test(a_relative_mpprof_out_is_kept_when_the_program_changes_directory),
      cmocka_unit_test(a_shell_spawning_two_programs_gives_one_raw_file_per_cuda_process),
      cmocka_unit_test(a_model_with_more_layers_than_max_sites_keeps_every_layers_verdict),
      cmocka_unit_test(dynamic_shapes_past_max_sites_stay_in_their_layers),
      cmocka_unit_test(scan_none_records_calls_without_tensor_stats),
      cmocka_unit_test(sample_2_scans_every_second_call),
      cmocka_unit_test(calls_during_graph_capture_are_counted_but_not_scanned),
      cmocka_unit_test(mpprof_disable_writes_nothing),
      cmocka_unit_test(environment_set_by_the_program_does_not_change_the_configuration),
      cmocka_unit_test(a_non_empty_output_directory_is_refused_without_force),
      cmocka_unit_test(a_program_that_cannot_start_exits_127_or_126),
      cmocka_unit_test(a_library_the_loader_cannot_preload_is_refused),
      cmocka_unit_test(force_keeps_the_old_raw_files_when_the_program_cannot_start),
      cmocka_unit_test(a_script_whose_env_command_is_missing_is_refused),
      cmocka_unit_test(an_empty_output_directory_stays_empty_when_nothing_is_recorded),
      cmocka_unit_test(signals_ignored_by_the_caller_stay_ignored_in_the_program),
      cmocka_unit_test(an_unknown_scan_mode_is_a_usage_error),
      cmocka_unit_test(a_count_beyond_what_the_library_reads_is_a_usage_error),
      cmocka_unit_test(a_bad_setting_in_the_environment_is_refused_before_the_program_runs),
      cmocka_unit_test(an_empty_output_name_is_a_usage_error),
      cmocka_unit_test(an_option_takes_what_its_variable_takes),
      cmocka_unit_test(a_loss_scale_beyond_float32_is_refused),
      cmocka_unit_test(mpprof_out_in_the_environment_is_the_default_output),
      cmocka_unit_test(a_long_program_name_gets_a_default_output_directory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
