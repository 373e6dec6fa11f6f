/* profiler/gpu/cuda_driver.c and devscan.c without a GPU: under simcuda's
 * libcuda.so.1 ("sim") the driver is found through cuGetProcAddress and
 * answers; with no driver at all ("none") every query says "unavailable"
 * and nothing crashes; a fork child never uses the parent's driver. */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "profiler/gpu/gpu.h"

static void sink(void *cookie, const mp_stats *s) {
  (void)cookie;
  (void)s;
}

static void simcuda_driver_is_found_and_answers(void **state) {
  (void)state;
  assert_true(mpp_cuda_available());
  char name[64];
  int major = 0, minor = 0;
  assert_int_equal(mpp_cuda_device_info(name, sizeof name, &major, &minor), 0);
  assert_true(name[0] != '\0');
  assert_true(major >= 7);
  float *p = malloc(64);
  assert_int_equal(mpp_cuda_pointer_kind(p), MPP_MEM_HOST);
  assert_int_equal(mpp_cuda_pointer_kind(NULL), MPP_MEM_UNKNOWN);
  assert_false(mpp_cuda_stream_capturing(NULL));
  free(p);
}

static void device_scan_without_loadable_kernels_says_enosys(void **state) {
  (void)state;
  float x[4] = {1, 2, 3, 4};
  mp_view v = {MP_FP32, x, 4, 1, 4, 1, 0};
  /* simcuda has no module loader; a build without nvcc has no fatbin. */
  assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, NULL), -ENOSYS);
  const void *ptrs[1] = {x};
  assert_int_equal(mpp_devscan_enqueue_ptrs(NULL, &v, ptrs, sink, NULL), -ENOSYS);
  mpp_devscan_drain();
}

static void fork_child_does_not_use_the_parents_driver(void **state) {
  (void)state;
  assert_true(mpp_cuda_available());
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(mpp_cuda_available() ? 1 : 0);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void no_driver_means_unavailable_everywhere(void **state) {
  (void)state;
  if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) skip(); /* a real driver is installed */
  assert_false(mpp_cuda_available());
  char name[16] = "x";
  assert_int_equal(mpp_cuda_device_info(name, sizeof name, NULL, NULL), -ENOSYS);
  int x = 0;
  assert_int_equal(mpp_cuda_pointer_kind(&x), MPP_MEM_HOST);
  assert_false(mpp_cuda_stream_capturing(NULL));
  mp_view v = {MP_FP32, &x, 1, 1, 1, 1, 0};
  assert_int_equal(mpp_devscan_enqueue(NULL, &v, sink, NULL), -ENOSYS);
  const void *ptrs[1] = {&x};
  assert_int_equal(mpp_devscan_enqueue_ptrs(NULL, &v, ptrs, sink, NULL), -ENOSYS);
  mpp_devscan_drain();
}

int main(int argc, char **argv) {
  const struct CMUnitTest sim[] = {
      cmocka_unit_test(simcuda_driver_is_found_and_answers),
      cmocka_unit_test(device_scan_without_loadable_kernels_says_enosys),
      cmocka_unit_test(fork_child_does_not_use_the_parents_driver),
  };
  const struct CMUnitTest none[] = {cmocka_unit_test(no_driver_means_unavailable_everywhere)};
  if (argc > 1 && !strcmp(argv[1], "none")) return cmocka_run_group_tests(none, NULL, NULL);
  return cmocka_run_group_tests(sim, NULL, NULL);
}
