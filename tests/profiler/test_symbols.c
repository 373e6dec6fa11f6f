/* Real-symbol resolution (profiler/runtime.h mpp_sym_get, its lookup in runtime.c): a symbol that
 * is not there is not searched for again (no dlopen per call) until a library is loaded, and is
 * found once one that defines it is. dlopen is wrapped (-Wl,--wrap=dlopen) to count mpp_sym_get's
 * lookups. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "profiler/mpp.h"
#include "profiler/runtime.h"

void *__real_dlopen(const char *file, int mode);
void *__wrap_dlopen(const char *file, int mode);

static int noload_opens; /* dlopen(RTLD_NOLOAD) calls: mpp_sym_get's fallback search */

void *__wrap_dlopen(const char *file, int mode) {
  if (mode & RTLD_NOLOAD) noload_opens++;
  return __real_dlopen(file, mode);
}

static const char *lib_path(void) {
  const char *p = getenv("MPP_SYMTEST_LIB");
  assert_non_null(p);
  return p;
}

static void missing_symbol_is_not_searched_again_until_a_library_loads(void **state) {
  (void)state;
  mpp_sym s = {.name = "mpp_symtest_answer", .soname = lib_path()};
  noload_opens = 0;
  for (int i = 0; i < 100; i++)
    assert_null(mpp_sym_get(&s));
  assert_int_equal(noload_opens, 1);

  /* The application loads the library privately (as Python extensions do). */
  void *h = __real_dlopen(lib_path(), RTLD_NOW | RTLD_LOCAL);
  assert_non_null(h);
  int (*fn)(void) = (int (*)(void))mpp_sym_get(&s);
  assert_non_null(fn);
  assert_int_equal(fn(), 42);
  assert_ptr_equal(fn, dlsym(h, "mpp_symtest_answer"));
  /* Found once: later calls take the cached pointer. */
  int before = noload_opens;
  for (int i = 0; i < 100; i++)
    assert_ptr_equal(mpp_sym_get(&s), fn);
  assert_int_equal(noload_opens, before);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(missing_symbol_is_not_searched_again_until_a_library_loads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
