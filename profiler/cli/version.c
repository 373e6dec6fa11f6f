/* mpprof --version: mpprof's version, the CUDA toolkit it was built with, and
 * the GPU architectures whose device code libmpprof.so really carries, read
 * from the fatbin embedded in the library that `mpprof run` would inject (not
 * from what the build asked for; that list is shown only when the library
 * cannot be found). */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "kernels/fatbin_info.h"

#ifndef MPPROF_VERSION
#define MPPROF_VERSION "unknown"
#endif
#ifndef MPPROF_CUDA_VERSION
#define MPPROF_CUDA_VERSION 0
#endif
#ifndef MPPROF_DEVICE_ARCHS
#define MPPROF_DEVICE_ARCHS ""
#endif

/* libmpprof.so next to the executable: build tree, then install layouts. */
static int find_library(char *ret, size_t n) {
  const char *env = getenv("MPPROF_LIB");
  if (env && *env) {
    snprintf(ret, n, "%s", env);
    return access(ret, R_OK);
  }
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return -1;
  exe[len] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = '\0';
  static const char *const rel[] = {"profiler/libmpprof.so", "../lib/libmpprof.so",
                                    "../lib/x86_64-linux-gnu/libmpprof.so", "../lib64/libmpprof.so",
                                    "libmpprof.so"};
  for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
    int w = snprintf(ret, n, "%s/%s", exe, rel[i]);
    if (w > 0 && (size_t)w < n && access(ret, R_OK) == 0) return 0;
  }
  return -1;
}

/* 1: archs written; 0: the library holds no fatbin; -1: unreadable. */
static int embedded_archs(const char *path, char *ret, size_t n) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return -1;
  }
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -1;
  size_t len = 0;
  const void *fb = mpp_fatbin_find(map, (size_t)st.st_size, &len);
  int rc = fb ? (mpp_fatbin_archs(fb, len, ret, n) > 0 ? 1 : -1) : 0;
  munmap(map, (size_t)st.st_size);
  return rc;
}

int mpprof_cmd_version(int argc, char **argv) {
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    puts("usage: mpprof --version (or mpprof version)\n"
         "  the version, the CUDA toolkit it was built with and the GPU architectures\n"
         "  embedded in libmpprof.so");
    return 0;
  }
  if (argc > 1) {
    mpprof_fprint_term(stderr, "mpprof: version: %s '%s' (see 'mpprof help version')\n",
                       argv[1][0] == '-' ? "unknown option" : "unexpected argument", argv[1]);
    return 2;
  }
  printf("mpprof %s\n", MPPROF_VERSION);
  printf("built with CUDA toolkit %d.%d\n", MPPROF_CUDA_VERSION / 1000,
         MPPROF_CUDA_VERSION % 1000 / 10);
  char lib[PATH_MAX], archs[512];
  if (find_library(lib, sizeof lib) != 0) {
    printf("device code: libmpprof.so not found (build requested: %s)\n",
           *MPPROF_DEVICE_ARCHS ? MPPROF_DEVICE_ARCHS : "none");
    return 0;
  }
  switch (embedded_archs(lib, archs, sizeof archs)) {
  case 1:
    printf("device code: %s (embedded in %s)\n", archs, lib);
    break;
  case 0:
    printf("device code: none (%s was built without nvcc: no device scans)\n", lib);
    break;
  default:
    printf("device code: unreadable fatbin in %s\n", lib);
    return 1;
  }
  return 0;
}
