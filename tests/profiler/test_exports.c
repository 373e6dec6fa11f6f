/* libmpprof.so exports exactly the hooked entry points and the two injection
 * entry points, unversioned, and depends on nothing but the C runtime
 * (libc, libm, libdl, libpthread; the sanitizer runtimes in sanitized builds).
 * Reads the dynamic symbol table and NEEDED entries with binutils. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const char *lib_path;

#define TWINS(name) name, name "_64"
static const char *const expected[] = {
    "InitializeInjection",
    "InitializeInjectionNvtx2",
    TWINS("cublasSgemm_v2"),
    TWINS("cublasDgemm_v2"),
    TWINS("cublasHgemm"),
    TWINS("cublasSgemmEx"),
    TWINS("cublasGemmEx"),
    TWINS("cublasSgemmBatched"),
    TWINS("cublasDgemmBatched"),
    TWINS("cublasHgemmBatched"),
    TWINS("cublasSgemmStridedBatched"),
    TWINS("cublasDgemmStridedBatched"),
    TWINS("cublasHgemmStridedBatched"),
    TWINS("cublasGemmBatchedEx"),
    TWINS("cublasGemmStridedBatchedEx"),
    TWINS("cublasSgemmGroupedBatched"),
    TWINS("cublasDgemmGroupedBatched"),
    TWINS("cublasGemmGroupedBatchedEx"),
    "cublasCreate_v2",
    "cublasDestroy_v2",
    "cublasSetMathMode",
    "cublasLtMatmul",
    "cudnnConvolutionForward",
    "cudnnConvolutionBiasActivationForward",
    "cudnnConvolutionBackwardData",
    "cudnnConvolutionBackwardFilter",
    "cudnnBackendCreateDescriptor",
    "cudnnBackendDestroyDescriptor",
    "cudnnBackendSetAttribute",
    "cudnnBackendGetAttribute",
    "cudnnBackendFinalize",
    "cudnnBackendExecute",
    /* the program's own CUPTI activity callbacks and records (profiler/hooks/cupti_activity.c) */
    "cuptiActivityRegisterCallbacks",
    "cuptiActivityEnable",
    "cuptiActivityDisable",
    "cuptiActivityEnableDriverApi",
    "cuptiActivityEnableRuntimeApi",
    "cudaProfilerStart", /* capture range markers (profiler/hooks/profiler_api.c) */
    "cudaProfilerStop",
    "cuProfilerStart",
    "cuProfilerStop",
    "mpprof_loss_scale",
    "mpprof_step",
    "mpprof_step_skipped",
    "dlsym", /* lookups on a CUDA library's own handle (profiler/dlsym.c) */
    "dlvsym",
    "dlclose", /* an unloaded library's symbols are resolved again (profiler/dlsym.c) */
    /* an image replaced by exec writes its raw file first (profiler/exec.c) */
    "execl",
    "execle",
    "execlp",
    "execv",
    "execve",
    "execveat",
    "execvp",
    "execvpe",
    "fexecve",
    /* a child spawned without mpprof is named (profiler/exec.c) */
    "posix_spawn",
    "posix_spawnp",
    "mpprof_checkpoint",
    "mpprof_exit_now",
    "mpprof_framework",
    "mpprof_layer_id",
    "mpprof_model_root",
    "mpprof_rank",
    "mpprof_scope_ops",
    "mpprof_scope_pop",
    "mpprof_scope_push",
    "mpprof_scope_set",
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Defined dynamic symbols, as "name" or "name@version". */
static size_t read_exports(char ***ret) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "nm -D --defined-only --format=posix '%s'", lib_path);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char **names = NULL;
  size_t n = 0;
  char line[1024];
  while (fgets(line, sizeof line, p)) {
    char name[512], type[8];
    if (sscanf(line, "%511s %7s", name, type) != 2) continue;
    if (strcmp(type, "T") && strcmp(type, "W") && strcmp(type, "D") && strcmp(type, "B") &&
        strcmp(type, "i"))
      continue;
    names = realloc(names, (n + 1) * sizeof *names);
    names[n++] = strdup(name);
  }
  assert_int_equal(pclose(p), 0);
  qsort(names, n, sizeof *names, cmp);
  *ret = names;
  return n;
}

static void exports_exactly_the_hooks_and_injection_entry_points(void **state) {
  (void)state;
  char **names;
  size_t n = read_exports(&names);
  const char *want[NEXPECTED];
  memcpy(want, expected, sizeof want);
  qsort(want, NEXPECTED, sizeof want[0], cmp);
  for (size_t i = 0; i < n && i < NEXPECTED; i++)
    if (strcmp(names[i], want[i])) {
      fprintf(stderr, "export %zu: got %s, expected %s\n", i, names[i], want[i]);
      fail();
    }
  assert_int_equal(n, NEXPECTED);
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

static void hooks_are_unversioned(void **state) {
  (void)state;
  char **names;
  size_t n = read_exports(&names);
  for (size_t i = 0; i < n; i++) {
    assert_null(strchr(names[i], '@'));
    free(names[i]);
  }
  free(names);
}

static void legacy_handle_less_gemms_are_not_defined(void **state) {
  (void)state;
  char **names;
  size_t n = read_exports(&names);
  for (size_t i = 0; i < n; i++) {
    assert_string_not_equal(names[i], "cublasSgemm");
    assert_string_not_equal(names[i], "cublasDgemm");
    free(names[i]);
  }
  free(names);
}

static void depends_only_on_the_c_runtime(void **state) {
  (void)state;
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "objdump -p '%s'", lib_path);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  static const char *const allowed[] = {"libc.so",  "libm.so",    "libdl.so",    "libpthread.so",
                                        "ld-linux", "libasan.so", "libubsan.so", "libgcc_s.so"};
  char line[1024];
  int needed = 0;
  while (fgets(line, sizeof line, p)) {
    char lib[512];
    if (sscanf(line, " NEEDED %511s", lib) != 1) continue;
    needed++;
    bool ok = false;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
      ok |= strncmp(lib, allowed[i], strlen(allowed[i])) == 0;
    if (!ok) fprintf(stderr, "unexpected dependency: %s\n", lib);
    assert_true(ok);
  }
  assert_int_equal(pclose(p), 0);
  assert_true(needed > 0);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_profiler_exports PATH/libmpprof.so\n");
    return 2;
  }
  lib_path = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exports_exactly_the_hooks_and_injection_entry_points),
      cmocka_unit_test(hooks_are_unversioned),
      cmocka_unit_test(legacy_handle_less_gemms_are_not_defined),
      cmocka_unit_test(depends_only_on_the_c_runtime),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
