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
 * not interposable. system() and popen() pass environ, which still preloads
 * libmpprof; posix_spawn and posix_spawnp are interposed for two things: a
 * child they started with an environment that does not preload libmpprof
 * gets its "unprofiled" raw file, as an exec's image does, and one whose
 * environment preloads it but lost its settings gets them (below).
 *
 * A rank the process declared (mpprof_rank) goes on to the next image in the
 * environment the exec passes (MPP_EXEC_RANK_VAR, only when that environment
 * still preloads libmpprof): the real exec gets a copy of the environment
 * with the entry added (any older one left out), the program's own
 * environment is never changed. Should the entry not fit (E2BIG), the exec
 * is made again with the environment as the program gave it.
 *
 * By the same route, an environment that still preloads libmpprof but lacks
 * some of the settings this image started with (a launcher that keeps
 * LD_PRELOAD and drops the rest) gets them added: MPPROF_OUT as this image's
 * absolute output directory, and every other setting libmpprof reads
 * (mpp_setting_carried) as this image read it, named in MPP_EXEC_ADDED_VAR.
 * The new image reads its settings with them, then removes them before main
 * (mpp_process_forget_exec_added): the program sees the environment its exec
 * passed. A posix_spawn child's pid is not known before it starts: the
 * settings it is given are named for the image whose parent is this process
 * (MPP_EXEC_ADDED_CHILD). No rank goes to a spawned child (nor to a fork
 * child's execs). The copy is made only when it stays within the size an
 * exec takes (sysconf(_SC_ARG_MAX)): a posix_spawn made again would run its
 * file actions again.
 *
 * A vfork() child shares this image's memory: it is recognised by its pid
 * (not the image's) and writes nothing, allocates nothing and takes no lock.
 * The exec functions' arguments and result, errno included, are the C
 * library's. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mpp.h"
#include "profiler/process.h"
#include "profiler/rawwrite.h"
#include "profiler/runtime.h"
#include "profiler/settings.h"

extern char **environ;

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

/* --- the environment an exec passes on --- */

/* This library's file name as the loader loaded it ("libmpprof.so"); ""
 * when not known. Set by the constructor, read-only afterwards. */
static char self_name[64];
/* Whether this image's own environment preloaded it (set with self_name). */
static bool self_preloaded;

static bool preloads_self(char *const env[]);

__attribute__((constructor)) static void exec_self_name(void) {
  Dl_info info;
  if (!dladdr((void *)exec_self_name, &info) || !info.dli_fname) return;
  const char *slash = strrchr(info.dli_fname, '/');
  const char *name = slash ? slash + 1 : info.dli_fname;
  if (strlen(name) < sizeof self_name) strcpy(self_name, name);
  self_preloaded = preloads_self(environ);
}

/* Whether env preloads this library: its (last) LD_PRELOAD, the one the
 * loader takes, names a file of this library's name. */
static bool preloads_self(char *const env[]) {
  static const char key[] = "LD_PRELOAD=";
  const char *list = NULL;
  size_t sn = strlen(self_name);
  for (size_t i = 0; env && env[i]; i++)
    if (!strncmp(env[i], key, sizeof key - 1)) list = env[i] + sizeof key - 1;
  if (!list || !sn) return false;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ": ");
    const char *name = p;
    for (const char *q = p; q < p + len; q++)
      if (*q == '/') name = q + 1;
    if ((size_t)(p + len - name) == sn && !memcmp(name, self_name, sn)) return true;
    p += len + (p[len] ? 1 : 0);
  }
  return false;
}

/* --- the settings an exec carries (MPP_EXEC_ADDED_VAR) --- */

/* Whether env has a variable of the name entry ("NAME=...") names. */
static bool env_has(char *const env[], const char *entry) {
  size_t ln = strchr(entry, '=') - entry + 1;
  for (size_t i = 0; env[i]; i++)
    if (!strncmp(env[i], entry, ln)) return true;
  return false;
}

/* The carried settings env lacks: how many, and the bytes of their names. */
static size_t carry_missing(const char *carry, size_t carry_len, char *const env[],
                            size_t *ret_name_bytes) {
  size_t k = 0, bytes = 0;
  for (size_t at = 0; at < carry_len; at += strlen(carry + at) + 1)
    if (!env_has(env, carry + at)) {
      k++;
      bytes += strchr(carry + at, '=') - (carry + at) + 1;
    }
  *ret_name_bytes = bytes;
  return k;
}

/* What one exec or posix_spawn passes: env as given, or a copy (mapped, not
 * allocated: no allocator lock in an exec that follows a fork) that carries
 * the rank (an exec's) and the settings env lacks. */
typedef struct passed {
  char *const *env;
  char **copy;
  size_t copy_bytes;
  char entry[64];
  char note[96]; /* the raw file written for an image without mpprof, or "" */
} passed;

/* Why an image started with env runs unprofiled (the raw file's "unprofiled"). */
#define MPP_UNPROFILED_WHY                                                                         \
  "the environment it was started with does not preload libmpprof (LD_PRELOAD)"

/* An image that was preloaded starting one that is not: the new image's
 * raw file says so (a launcher that builds a clean environment). */
static void note_unprofiled(char *const env[], char *const argv[], passed *p) {
  if (!self_preloaded || mpp_cfg.disabled || preloads_self(env)) return;
  int e = errno;
  mpp_raw_note_unprofiled((int)getpid(), (int)getppid(), argv, MPP_UNPROFILED_WHY, p->note,
                          sizeof p->note);
  errno = e;
}

/* Whether an exec of argv and env (strings and pointers) stays within
 * sysconf(_SC_ARG_MAX): the kernel's limit as the C library derives it from
 * the stack limit (getrlimit, no lock). Should the kernel take less, the
 * exec fails with E2BIG and is made again with the environment as given
 * (pass_again). */
static bool within_arg_max(char *const argv[], char *const env[]) {
  long limit = sysconf(_SC_ARG_MAX);
  size_t total = 0;
  for (size_t i = 0; argv && argv[i]; i++)
    total += strlen(argv[i]) + 1 + sizeof(char *);
  for (size_t i = 0; env[i]; i++)
    total += strlen(env[i]) + 1 + sizeof(char *);
  return limit <= 0 || total <= (size_t)limit;
}

/* Whom an environment is passed to. */
typedef enum pass_to {
  TO_EXEC_AS_GIVEN, /* an exec that cannot be made with another environment */
  TO_EXEC,          /* the next image of this pid: the rank and the settings */
  TO_SPAWN,         /* a child (posix_spawn): the settings, for a child of this pid */
} pass_to;

/* The copy's memory: one mapping per thread, kept from exec to exec. A
 * vfork child runs on its parent's thread, in its memory: a mapping it made
 * for an exec that succeeded was never unmapped (a page per vfork + exec in
 * the parent). Kept, the parent's thread reuses it. `user` is the pid that
 * holds it between pass_on and pass_done: the same pid again, or the
 * image's in its vfork child, is a nested exec (a signal handler), which
 * maps a copy of its own; another pid is a vfork child whose exec succeeded
 * (its parent's thread runs again only then), or the parent of a fork
 * child: either way it is free. The mapping goes when its thread exits (the
 * key's destructor); the key is set without allocating (a key below 32
 * lives in the thread's descriptor), so a vfork child sets it too; above,
 * only the image's own thread does. */
static __thread MPP_TLS struct {
  void *map;
  size_t bytes;
  pid_t user;
  bool keyed;
} env_buf;
static pthread_key_t env_key;
static bool env_key_made;
#define MPP_KEY_IN_DESCRIPTOR 32 /* glibc's PTHREAD_KEY_2NDLEVEL_SIZE */

static void env_buf_release(void *unused) {
  (void)unused;
  if (env_buf.map) munmap(env_buf.map, env_buf.bytes);
  env_buf.map = NULL;
  env_buf.bytes = 0;
  env_buf.keyed = false;
}

__attribute__((constructor)) static void env_buf_key(void) {
  env_key_made = pthread_key_create(&env_key, env_buf_release) == 0;
}

/* `bytes` of memory for a copy (copy_unmap gives it back); MAP_FAILED when
 * none can be had. */
static void *copy_map(size_t bytes) {
  pid_t me = getpid(), image = (pid_t)mpp_process_pid();
  if (env_buf.user && (env_buf.user == me || env_buf.user == image)) /* nested: a one-off */
    return mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (env_buf.bytes < bytes) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), want = (bytes + page - 1) / page * page;
    void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return m;
    if (env_buf.map) munmap(env_buf.map, env_buf.bytes);
    env_buf.map = m;
    env_buf.bytes = want;
  }
  if (!env_buf.keyed && env_key_made && (me == image || (unsigned)env_key < MPP_KEY_IN_DESCRIPTOR))
    env_buf.keyed = pthread_setspecific(env_key, &env_buf) == 0;
  env_buf.user = me;
  return env_buf.map;
}

static void copy_unmap(void *m, size_t bytes) {
  if (m == env_buf.map)
    env_buf.user = 0;
  else
    munmap(m, bytes);
}

static char *const *pass_on(char *const env[], char *const argv[], passed *p, pass_to to) {
  p->env = env;
  p->copy = NULL;
  p->note[0] = '\0';
  if (to != TO_SPAWN) note_unprofiled(env, argv, p); /* a spawned child's: spawned() */
  if (to == TO_EXEC_AS_GIVEN || !env || !preloads_self(env)) return env;
  size_t elen = to == TO_EXEC ? mpp_process_exec_rank_entry(p->entry, sizeof p->entry) : 0;
  size_t carry_len, names = 0;
  const char *carry = mpp_process_carried_settings(&carry_len);
  size_t add = mpp_cfg.disabled ? 0 : carry_missing(carry, carry_len, env, &names);
  if (!elen && !add) return env;
  size_t n = 0;
  while (env[n])
    n++;
  /* the pointers, then the MPP_EXEC_ADDED_VAR entry: "NAME=[P]PID:" and the names */
  size_t slots = n + 3 + add, marker = sizeof MPP_EXEC_ADDED_VAR + 24 + names;
  size_t bytes = slots * sizeof(char *) + marker;
  void *m = copy_map(bytes);
  if (m == MAP_FAILED) return env;
  char **copy = m, *mark = (char *)(copy + slots);
  static const char mark_name[] = MPP_EXEC_ADDED_VAR "=";
  size_t k = 0, vlen = elen ? (size_t)(strchr(p->entry, '=') - p->entry + 1) : 0; /* "NAME=" */
  for (size_t i = 0; i < n; i++)
    if ((!elen || strncmp(env[i], p->entry, vlen)) &&
        strncmp(env[i], mark_name, sizeof mark_name - 1))
      copy[k++] = env[i];
  if (elen) copy[k++] = p->entry;
  if (add) {
    size_t at = (size_t)snprintf(mark, marker, "%s%s%d:", mark_name,
                                 to == TO_SPAWN ? MPP_EXEC_ADDED_CHILD : "", (int)getpid());
    for (size_t c = 0; c < carry_len; c += strlen(carry + c) + 1) {
      if (env_has(env, carry + c)) continue;
      size_t ln = strchr(carry + c, '=') - (carry + c);
      if (mark[at - 1] != ':') mark[at++] = ',';
      memcpy(mark + at, carry + c, ln);
      at += ln;
      copy[k++] = (char *)(carry + c); /* exec only reads it */
    }
    mark[at] = '\0';
    copy[k++] = mark;
  }
  copy[k] = NULL;
  if (!within_arg_max(argv, copy)) {
    copy_unmap(m, bytes);
    return env;
  }
  p->copy = copy;
  p->copy_bytes = bytes;
  return p->env = copy;
}

/* After the real exec returned (it failed with err): whether to make it
 * again with the environment unchanged (the entries did not fit). */
static bool pass_again(const passed *p, int err) {
  return p->copy && err == E2BIG;
}

/* After the exec failed, or the posix_spawn returned. */
static void pass_done(passed *p) {
  int e = errno;
  if (p->copy) copy_unmap(p->copy, p->copy_bytes);
  p->copy = NULL;
  if (p->note[0]) mpp_raw_note_drop(p->note);
  errno = e;
}

static void *real_execve, *real_execvpe;

MPP_EXPORT int execve(const char *path, char *const argv[], char *const envp[]) {
  execve_fn f = (execve_fn)real(&real_execve, "execve");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  passed p;
  int rc = f(path, argv, pass_on(envp, argv, &p, TO_EXEC));
  if (pass_again(&p, errno)) rc = f(path, argv, envp);
  pass_done(&p);
  return failed(rc);
}

/* execv and execvp pass environ: with a rank or settings to carry, they are
 * made as execve and execvpe (fe), which the C library's own execv and
 * execvp are. The copy decides which is called, not environ read again: a
 * setenv on another thread may have moved it meanwhile. */
static int exec_environ(execv_fn f, execve_fn fe, const char *file, char *const argv[]) {
  if (!f) return no_function();
  mpp_runtime_before_exec();
  passed p;
  char *const *env = pass_on(environ, argv, &p, fe ? TO_EXEC : TO_EXEC_AS_GIVEN);
  int rc = p.copy ? fe(file, argv, env) : f(file, argv);
  if (pass_again(&p, errno)) rc = f(file, argv);
  pass_done(&p);
  return failed(rc);
}

MPP_EXPORT int execv(const char *path, char *const argv[]) {
  static void *real_fn;
  return exec_environ((execv_fn)real(&real_fn, "execv"), (execve_fn)real(&real_execve, "execve"),
                      path, argv);
}

MPP_EXPORT int execvp(const char *file, char *const argv[]) {
  static void *real_fn;
  return exec_environ((execv_fn)real(&real_fn, "execvp"), (execve_fn)real(&real_execvpe, "execvpe"),
                      file, argv);
}

MPP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[]) {
  execve_fn f = (execve_fn)real(&real_execvpe, "execvpe");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  passed p;
  int rc = f(file, argv, pass_on(envp, argv, &p, TO_EXEC));
  if (pass_again(&p, errno)) rc = f(file, argv, envp);
  pass_done(&p);
  return failed(rc);
}

MPP_EXPORT int fexecve(int fd, char *const argv[], char *const envp[]) {
  static void *real_fn;
  fexecve_fn f = (fexecve_fn)real(&real_fn, "fexecve");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  passed p;
  int rc = f(fd, argv, pass_on(envp, argv, &p, TO_EXEC));
  if (pass_again(&p, errno)) rc = f(fd, argv, envp);
  pass_done(&p);
  return failed(rc);
}

MPP_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags) {
  static void *real_fn;
  execveat_fn f = (execveat_fn)real(&real_fn, "execveat");
  if (!f) return no_function();
  mpp_runtime_before_exec();
  passed p;
  int rc = f(dirfd, path, argv, pass_on(envp, argv, &p, TO_EXEC), flags);
  if (pass_again(&p, errno)) rc = f(dirfd, path, argv, envp, flags);
  pass_done(&p);
  return failed(rc);
}

/* posix_spawn, posix_spawnp: the call as the C library makes it, file
 * actions and attributes as given, with the settings an environment that
 * preloads libmpprof lacks added (pass_on; made again as given should they
 * not fit); a child started with an environment that does not preload
 * libmpprof, by an image that was preloaded, gets its "unprofiled" raw file
 * (pid and parent known once the call succeeded). Result and errno are the
 * C library's. */
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                        const posix_spawnattr_t *, char *const[], char *const[]);

static int spawned(int rc, pid_t child, char *const argv[], char *const envp[]) {
  if (rc != 0 || child <= 0 || !self_preloaded || preloads_self(envp)) return rc;
  int e = errno;
  mpp_init();
  if (!mpp_cfg.disabled) {
    char name[96];
    mpp_raw_note_unprofiled((int)child, (int)getpid(), argv, MPP_UNPROFILED_WHY, name, sizeof name);
  }
  errno = e;
  return rc;
}

static int spawn(void **cache, const char *fn, pid_t *pid, const char *path,
                 const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr,
                 char *const argv[], char *const envp[]) {
  spawn_fn f = (spawn_fn)real(cache, fn);
  if (!f) return ENOSYS;
  pid_t child = 0, *at = pid ? pid : &child;
  passed p;
  int rc = f(at, path, actions, attr, argv, pass_on(envp, argv, &p, TO_SPAWN));
  if (pass_again(&p, rc)) rc = f(at, path, actions, attr, argv, envp);
  pass_done(&p);
  return spawned(rc, *at, argv, envp);
}

MPP_EXPORT int posix_spawn(pid_t *restrict pid, const char *restrict path,
                           const posix_spawn_file_actions_t *actions,
                           const posix_spawnattr_t *restrict attr, char *const argv[restrict],
                           char *const envp[restrict]) {
  static void *real_fn;
  return spawn(&real_fn, "posix_spawn", pid, path, actions, attr, argv, envp);
}

MPP_EXPORT int posix_spawnp(pid_t *restrict pid, const char *restrict file,
                            const posix_spawn_file_actions_t *actions,
                            const posix_spawnattr_t *restrict attr, char *const argv[restrict],
                            char *const envp[restrict]) {
  static void *real_fn;
  return spawn(&real_fn, "posix_spawnp", pid, file, actions, attr, argv, envp);
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
