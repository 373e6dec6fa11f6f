/* simcuda's cuInit loads the library named by CUDA_INJECTION64_PATH and
 * calls its InitializeInjection once per process, even when the injection
 * calls cuInit itself. Run with the fixture library's path as argv[1]. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>
#include <cuda.h>

static const char *fixture;

static void first_cuinit_runs_the_injection_once(void **state) {
  (void)state;
  assert_non_null(fixture);
  setenv("CUDA_INJECTION64_PATH", fixture, 1);
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  void *lib = dlopen(fixture, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(lib);
  int *calls = dlsym(lib, "simcuda_test_injection_calls");
  CUresult *nested = dlsym(lib, "simcuda_test_injection_nested");
  assert_non_null(calls);
  assert_int_equal(*calls, 1);
  assert_int_equal(*nested, CUDA_SUCCESS);
  dlclose(lib);
}

int main(int argc, char **argv) {
  fixture = argc > 1 ? argv[1] : NULL;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(first_cuinit_runs_the_injection_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
