/* exec: a process image that exec() replaces writes its raw file first.
 *
 * exec() runs no atexit handler, so without this the calls an image made
 * since its last checkpoint were lost, and the next image (same pid) wrote
 * over its raw file. Every exec function of the C library is interposed:
 * before the real one runs, an activated image flushes CUPTI and writes its
 * raw file as final (mpp_runtime_before_exec); if the exec fails, the image
 * goes on and writes again later (mpp_raw_exec_failed). The next image claims
 * a raw file name of its own (rawwrite.c). posix_spawn, system() and popen()
 * replace a child, not this image: the C library's own execve inside them is
 * not interposable and needs nothing.
 *
 * A vfork() child shares this image's memory: it is recognised by its pid
 * (not the image's) and writes nothing. The exec functions' arguments and
 * result, errno included, are the C library's. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "mpp.h"
#include "profiler/runtime.h"

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

/* The C library's function `name` (NULL when it has none), looked up once
 * per name: *cache holds it (racing threads store the same value). */
static void *real(void **cache, const char *name) {
  void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (!f) {
    f = dlsym(RTLD_NEXT, name);
    __atomic_store_n(cache, f, __ATOMIC_RELEASE);
  }
  return f;
}

/* After the real exec returned (it failed): the image goes on. errno kept. */
static int failed(int rc) {
  int e = errno;
  mpp_runtime_exec_failed();
  errno = e;
  return rc;
}

static int no_function(void) {
  errno = ENOSYS;
  return -1;
}

MPP_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  static void *real_fn;
  execve_fn f = (execve_fn)real(&real_fn, "execve");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  return failed(f(path, argv, envp));
}

MPP_EXPORT int execv(const char *path, char *const argv[]) {
  static void *real_fn;
  execv_fn f = (execv_fn)real(&real_fn, "execv");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  return failed(f(path, argv));
}

MPP_EXPORT int execvp(const char *file, char *const argv[]) {
  static void *real_fn;
  execv_fn f = (execv_fn)real(&real_fn, "execvp");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  return failed(f(file, argv));
}

MPP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  static void *real_fn;
  execve_fn f = (execve_fn)real(&real_fn, "execvpe");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  return failed(f(file, argv, envp));
}

MPP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  static void *real_fn;
  fexecve_fn f = (fexecve_fn)real(&real_fn, "fexecve");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  return failed(f(fd, argv, envp));
}

MPP_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags) {
  static void *real_fn;
  execveat_fn f = (execveat_fn)real(&real_fn, "execveat");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  return failed(f(dirfd, path, argv, envp, flags));
}

/* execl, execlp, execle: the arguments gathered into an argv array, then the
 * v-form above (which writes the raw file). Up to MPP_EXECL_STACK arguments
 * on the stack (a few hundred bytes), more on the heap. */
#define MPP_EXECL_STACK 32

static char **gather(const char *arg0, va_list ap, char **stack, char ***ret_envp) {
  va_list count;
  va_copy(count, ap);
  size_t n = 1;
  while (va_arg(count, char *))
    n++;
  va_end(count);
  char **argv = n + 1 <= MPP_EXECL_STACK ? stack : malloc((n + 1) * sizeof *argv);
  if (!argv) return NULL;
  argv[0] = (char *)arg0;
  for (size_t i = 1; i <= n; i++)
    argv[i] = va_arg(ap, char *); /* the last one read is the terminating NULL */
  if (ret_envp) *ret_envp = va_arg(ap, char **);
  return argv;
}

static int release(char **argv, char **stack, int rc) {
  int e = errno;
  if (argv != stack) free(argv);
  errno = e;
  return rc;
}

MPP_EXPORT int execl(const char *path, const char *arg, ...) {
  char *stack[MPP_EXECL_STACK];
  va_list ap;
  va_start(ap, arg);
  char **argv = gather(arg, ap, stack, NULL);
  va_end(ap);
  if (!argv) return -1; /* ENOMEM */
  return release(argv, stack, execv(path, argv));
}

MPP_EXPORT int execlp(const char *file, const char *arg, ...) {
  char *stack[MPP_EXECL_STACK];
  va_list ap;
  va_start(ap, arg);
  char **argv = gather(arg, ap, stack, NULL);
  va_end(ap);
  if (!argv) return -1;
  return release(argv, stack, execvp(file, argv));
}

MPP_EXPORT int execle(const char *path, const char *arg, ...) {
  char *stack[MPP_EXECL_STACK];
  char **envp = NULL;
  va_list ap;
  va_start(ap, arg);
  char **argv = gather(arg, ap, stack, &envp);
  va_end(ap);
  if (!argv) return -1;
  return release(argv, stack, execve(path, argv, envp));
}
