/* Robustness of libmpprof.so's internals in the situations an injected
 * library meets in someone else's process: exit() from a signal handler that
 * interrupted a hook, fork() while another thread holds a module lock or
 * right after mpprof started its threads, a thread's late destructors using
 * NVTX after mpprof's own cleanup, and GEMM calls whose operands cuBLAS never
 * reads. Each test fails (or hangs, bounded by an alarm in a child process)
 * without the fix it guards. */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profiler/hooks/gemm_decode.h"
#include "profiler/hostmem.h"
#include "profiler/mpp.h"
#include "profiler/gpu/cuda_driver.h"
#include "profiler/call.h"
#include "profiler/nvtx.h"
#include "profiler/op.h"
#include "profiler/runtime.h"
#include "profiler/sites.h"
#include "tests/core_fixture.h"

/* Exit status of a child process, 128 + signal when killed. */
static int child_status(pid_t pid) {
  int st;
  assert_true(waitpid(pid, &st, 0) == pid);
  return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

static void exit_7(int sig) {
  (void)sig;
  exit(7);
}

/* A program whose SIGINT handler calls exit() may be interrupted while a hook
 * holds the site lock; mpprof's exit handler then runs on that same thread.
 * It must let the exit finish (keeping the last checkpoint), not wait for a
 * lock its own thread holds. */
static void exit_from_a_signal_handler_inside_the_site_lock_finishes(void **state) {
  (void)state;
  char dir[] = "/tmp/mpp_robust_XXXXXX";
  assert_non_null(mkdtemp(dir));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(20); /* a hang is the failure: SIGALRM ends it */
    snprintf(mpp_cfg.out_dir, sizeof mpp_cfg.out_dir, "%s", dir);
    mpp_cfg.checkpoint_s = 0;
    mpp_activate(); /* registers the exit handler */
    signal(SIGUSR1, exit_7);
    mpp_sites_lock(); /* inside a hook's critical section ... */
    raise(SIGUSR1);   /* ... the application's handler calls exit(7) */
    _exit(99);
  }
  assert_int_equal(child_status(pid), 7);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static char teardown_dir[64];

/* Stands for a CUDA runtime's exit teardown, registered inside the first
 * hooked call: mpprof's final raw file must already exist when it runs. */
static void runtime_teardown(void) {
  char cmd[160];
  snprintf(cmd, sizeof cmd, "ls '%s'/raw/*.json >/dev/null 2>&1", teardown_dir);
  _exit(system(cmd) == 0 ? 0 : 1);
}

/* cuBLAS and cuDNN carry their own static CUDA runtime, started by their
 * first call, which registers its teardown then. mpprof activates before that
 * real call, so its exit handler must be registered again once the call
 * returns to run first (atexit handlers run last registered first). */
static void exit_handler_runs_before_a_teardown_registered_inside_the_first_call(void **state) {
  (void)state;
  snprintf(teardown_dir, sizeof teardown_dir, "/tmp/mpp_robust_XXXXXX");
  assert_non_null(mkdtemp(teardown_dir));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(20);
    snprintf(mpp_cfg.out_dir, sizeof mpp_cfg.out_dir, "%s", teardown_dir);
    mpp_cfg.checkpoint_s = 0;
    assert_true(mpp_enter()); /* a hooked call: activates */
    atexit(runtime_teardown); /* the real function starts its runtime */
    mpp_leave();
    exit(0);
  }
  assert_int_equal(child_status(pid), 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", teardown_dir);
  assert_int_equal(system(cmd), 0);
}

static pthread_mutex_t module_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool module_mu_taken;

static void *hold_module_lock(void *p) {
  (void)p;
  pthread_mutex_lock(&module_mu);
  atomic_store(&module_mu_taken, true);
  struct timespec ts = {0, 300 * 1000 * 1000};
  nanosleep(&ts, NULL);
  pthread_mutex_unlock(&module_mu);
  return NULL;
}

/* A thread inside a hook holds a module's table lock when another thread
 * forks. The child has only the forking thread: an inherited locked mutex
 * would hang its first hooked call. */
static void
fork_while_another_thread_holds_a_module_lock_leaves_it_free_in_the_child(void **state) {
  (void)state;
  mpp_init();
  mpp_fork_protect(&module_mu);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, hold_module_lock, NULL), 0);
  while (!atomic_load(&module_mu_taken))
    sched_yield();
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) _exit(pthread_mutex_trylock(&module_mu) == 0 ? 0 : 1);
  assert_int_equal(child_status(pid), 0);
  pthread_join(t, NULL);
}

static pthread_mutex_t fork_wait_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool fork_wait_taken, forking;
static pthread_t forking_thread;
static pid_t forking_tid;

/* Takes fork_wait_mu (a module lock held across fork), waits until the
 * forking thread sleeps on a futex, which is mpprof's prepare handler
 * waiting for that lock (it already holds the lifecycle's locks), then
 * signals it. Keeps the lock: the process ends by the handler's exit(). */
static void *hold_fork_lock_then_signal(void *p) {
  (void)p;
  pthread_mutex_lock(&fork_wait_mu);
  atomic_store(&fork_wait_taken, true);
  while (!atomic_load(&forking))
    sched_yield();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)forking_tid);
  for (long nr = -1; nr != SYS_futex;) {
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
    FILE *f = fopen(path, "r");
    if (f && fscanf(f, "%ld", &nr) != 1) nr = -1;
    if (f) fclose(f);
  }
  pthread_kill(forking_thread, SIGUSR1);
  for (;;)
    pause();
  return NULL;
}

/* A program whose signal handler calls exit() while its main thread forks
 * (a worker pool's SIGTERM handler): the signal may land between mpprof's
 * fork handlers, which hold its lifecycle's locks until the parent handler.
 * mpprof's exit handler then runs on that thread: it must let the exit
 * finish (the last checkpoint stays), not wait for a lock its own thread
 * holds. Here the prepare handler is made to wait for a module lock another
 * thread holds, and the signal comes then. */
static void exit_from_a_signal_handler_during_fork_finishes(void **state) {
  (void)state;
  char dir[] = "/tmp/mpp_robust_XXXXXX";
  assert_non_null(mkdtemp(dir));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(10); /* a hang is the failure: SIGALRM ends it */
    snprintf(mpp_cfg.out_dir, sizeof mpp_cfg.out_dir, "%s", dir);
    mpp_cfg.checkpoint_s = 0;
    mpp_activate(); /* registers the exit handler */
    mpp_fork_protect(&fork_wait_mu);
    signal(SIGUSR1, exit_7);
    forking_thread = pthread_self();
    forking_tid = (pid_t)syscall(SYS_gettid);
    pthread_t t;
    if (pthread_create(&t, NULL, hold_fork_lock_then_signal, NULL) != 0) _exit(98);
    while (!atomic_load(&fork_wait_taken))
      sched_yield();
    atomic_store(&forking, true);
    pid_t child = fork(); /* exit(7) from inside it */
    if (child == 0) _exit(0);
    _exit(99);
  }
  assert_int_equal(child_status(pid), 7);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* pthread_create is wrapped (-Wl,--wrap=pthread_create in meson.build): with
 * slow_start set, a new thread sleeps before it enters its start routine, as
 * one not yet scheduled on a loaded machine would. */
int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg);
static atomic_bool slow_start;
static atomic_int threads_created, threads_entered;

typedef struct slow_thread {
  void *(*fn)(void *);
  void *arg;
} slow_thread;

static void *slow_trampoline(void *p) {
  slow_thread t = *(slow_thread *)p;
  free(p);
  struct timespec ts = {0, 200 * 1000 * 1000};
  nanosleep(&ts, NULL);
  atomic_fetch_add(&threads_entered, 1);
  return t.fn(t.arg);
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
                          void *arg) {
  if (!atomic_load(&slow_start)) return __real_pthread_create(thread, attr, fn, arg);
  slow_thread *t = malloc(sizeof *t);
  if (!t) return EAGAIN;
  *t = (slow_thread){fn, arg};
  int rc = __real_pthread_create(thread, attr, slow_trampoline, t);
  if (rc == 0)
    atomic_fetch_add(&threads_created, 1);
  else
    free(t);
  return rc;
}

/* A thread that has not entered its start routine yet is inside the C
 * library's and the sanitizer's thread start-up, which hold their own locks
 * (gcc 12's ASan: allocator, thread registry; no fork handlers); a program
 * that forks right after the hooked call that activated mpprof would give a
 * child inheriting them locked. mpp_activate returns only once every thread
 * it started runs its own code, however late the thread gets a CPU. */
static void activation_returns_once_its_threads_run_their_own_code(void **state) {
  (void)state;
  char dir[] = "/tmp/mpp_robust_XXXXXX";
  assert_non_null(mkdtemp(dir));
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(20);
    snprintf(mpp_cfg.out_dir, sizeof mpp_cfg.out_dir, "%s", dir);
    mpp_cfg.checkpoint_s = 3600; /* the checkpoint thread starts, its first pass never comes */
    atomic_store(&slow_start, true);
    mpp_activate();
    int created = atomic_load(&threads_created), entered = atomic_load(&threads_entered);
    _exit(created >= 1 && entered == created ? 0 : 1);
  }
  assert_int_equal(child_status(pid), 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static volatile pid_t forked_grandchild;

static void kill_grandchild(int sig) {
  (void)sig;
  if (forked_grandchild > 0) kill(forked_grandchild, SIGKILL);
  _exit(124);
}

/* A data-loader pattern: the first hooked call starts mpprof's checkpoint
 * thread and the program forks right after. Under ASan (gcc 12's libasan has
 * no fork handlers) a thread still inside its start-up holds the allocator's
 * or the thread registry's lock; a child forked then inherits it locked and
 * hangs in its first malloc or in LeakSanitizer's check at exit. Activation
 * returns only once its threads run their own code. Each round is a fresh
 * process that activates, forks at once, and whose child exits through the
 * whole exit path (exit handlers, LeakSanitizer under the sanitizer); every
 * child must exit 0. Without the fix about 1 round in 100 hung under
 * --setup=sanitize (9 of 800, in LeakSanitizer's LockAllocator): this catches
 * it often, the test above always. The alarm ends a stuck round as a failure. */
static void a_fork_right_after_activation_gives_a_child_that_exits(void **state) {
  (void)state;
  char dir[] = "/tmp/mpp_robust_XXXXXX";
  assert_non_null(mkdtemp(dir));
  enum { ROUNDS = 100 };
  int ok = 0;
  for (int i = 0; i < ROUNDS; i++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      signal(SIGALRM, kill_grandchild);
      alarm(20);
      snprintf(mpp_cfg.out_dir, sizeof mpp_cfg.out_dir, "%s", dir);
      mpp_cfg.checkpoint_s = 3600; /* the thread starts, its first pass never comes */
      mpp_activate();
      pid_t child = fork();
      if (child == 0) {
        char *p = malloc(4096); /* printf's stdout buffer, in a worker */
        free(p);
        exit(0);
      }
      forked_grandchild = child;
      int st = 0;
      while (child > 0 && waitpid(child, &st, 0) < 0 && errno == EINTR)
        ;
      _exit(child > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1);
    }
    if (child_status(pid) == 0) ok++;
  }
  assert_int_equal(ok, ROUNDS);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

static pthread_key_t late_key;
static int late_level = -100;

static void late_destructor(void *p) {
  (void)p;
  late_level = mpp_nvtx_push(NULL, "late");
  mpp_nvtx_pop(NULL);
}

static void *thread_with_open_range(void *p) {
  (void)p;
  mpp_nvtx_push(NULL, "never popped"); /* creates mpprof's NVTX key first */
  pthread_setspecific(late_key, (void *)1);
  return NULL;
}

/* Thread-exit destructors run in key order: one created after mpprof's NVTX
 * state (another library's per-thread cleanup) may still push a range. It
 * starts from an empty stack, never from the state mpprof already freed. */
static void nvtx_push_from_a_later_thread_destructor_gets_a_fresh_stack(void **state) {
  (void)state;
  pthread_t t;
  mpp_nvtx_push(NULL, "main"); /* the NVTX key exists before late_key */
  mpp_nvtx_pop(NULL);
  assert_int_equal(pthread_key_create(&late_key, late_destructor), 0);
  assert_int_equal(pthread_create(&t, NULL, thread_with_open_range, NULL), 0);
  pthread_join(t, NULL);
  assert_int_equal(late_level, 0);
  pthread_key_delete(late_key);
}

/* batchCount 0: cuBLAS returns without reading anything, and its pointer
 * arrays may be empty. mpprof must read nothing either. Here the arrays point
 * at an inaccessible page, so a scan would crash. */
static void gemm_with_batch_count_zero_reads_no_operand(void **state) {
  (void)state;
  long page = sysconf(_SC_PAGESIZE);
  void *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(none != MAP_FAILED);
  const float beta = 1;
  for (int64_t batch = -1; batch <= 0; batch++) {
    mpp_gemm_call g = mpp_fixture_gemm4("cublasSgemmBatched", NULL, NULL, NULL);
    g.beta = &beta;
    g.Aarr = g.Barr = g.Carr = none;
    g.batch = batch;
    mpp_op op;
    mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
    assert_int_equal(op.nroles, 4);
    for (int i = 0; i < op.nroles; i++)
      assert_false(op.roles[i].present);
  }
  munmap(none, (size_t)page);
}

/* An invalid operation code: cuBLAS rejects the call without reading, but
 * the input scan runs before the call, with a geometry that would be a guess
 * (the transposed extent can pass the end of the buffer). */
static void gemm_with_an_invalid_transpose_code_does_not_scan_that_operand(void **state) {
  (void)state;
  float a[16] = {0}, b[16] = {0}, c[16] = {0};
  const float beta = 0;
  mpp_gemm_call g = mpp_fixture_gemm4("cublasSgemm_v2", a, b, c);
  g.transa = 7;
  g.beta = &beta;
  mpp_op op;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_int_equal(op.transa, '?');
  assert_int_equal(op.roles[0].unscannable, MPP_NS_LAYOUT);
  assert_int_equal(op.roles[1].unscannable, MPP_NS_COUNT);
  g.transa = 0;
  g.transb = -1;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_int_equal(op.roles[0].unscannable, MPP_NS_COUNT);
  assert_int_equal(op.roles[1].unscannable, MPP_NS_LAYOUT);
}

/* A fork child of a CUDA process cannot use the parent's CUDA state, and
 * mpprof does not ask the driver there; a GEMM it issues may still carry the
 * parent's device pointers, which are not readable in the child (cuBLAS
 * fails the call). mpprof must not crash the child by scanning them or by
 * reading a device-mode beta. An inaccessible page stands for them here.
 * Returns the child's status: 0 when A and C were left alone. */
static int child_gemm_on_unreadable_pointers(void) {
  long page = sysconf(_SC_PAGESIZE);
  void *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(none != MAP_FAILED);
  static float b[16], c[16];
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    alarm(20);
    mpp_fixture_reset(MPP_SCAN_ALL, 16, 16);
    mpp_gemm_call g = mpp_fixture_gemm4("cublasSgemm_v2", none, b, c);
    g.beta = none; /* device pointer mode */
    mpp_gemm_ctx ctx = {.math_mode = 0, .pointer_mode = 1, .host_visible = mpp_host_readable};
    mpp_op op;
    mpp_call call;
    mpp_fixture_record(&g, &ctx, &op, &call);
    /* A and C: not readable here; B and D: scanned. */
    _exit(op.roles[2].present || call.ns_counts[MPP_NS_DEVICE_UNAVAILABLE] != 1 ? 1 : 0);
  }
  int st = child_status(pid);
  munmap(none, (size_t)page);
  return st;
}

/* The program initialised CUDA itself and mpprof never asked the driver
 * before the fork (no hooked call yet): the child's first question goes to a
 * driver that refuses a fork child (CUDA_ERROR_NOT_INITIALIZED), and the page
 * must still not be taken for host memory. The driver is simcuda's, loaded by
 * path (mpprof's dlopen of libcuda.so.1 finds it by its soname). Must run
 * before any test that lets mpprof ask the driver in this process. */
static void
fork_child_of_a_program_that_initialised_cuda_leaves_unreadable_pointers_alone(void **state) {
  (void)state;
  const char *dir = getenv("MPP_SIMCUDA");
  if (!dir || !*dir) skip(); /* no driver anywhere: the next test covers it */
  char path[4096];
  snprintf(path, sizeof path, "%s/libcuda.so.1", dir);
  void *lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  assert_non_null(lib);
  CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(lib, "cuInit");
  assert_non_null(init);
  assert_int_equal(init(0), CUDA_SUCCESS);
  assert_int_equal(child_gemm_on_unreadable_pointers(), 0);
}

/* The parent is a CUDA process as mpprof sees one: its first hooked call
 * asked the driver (none, or the one the test above loaded), so the child
 * never asks. */
static void fork_child_gemm_on_unreadable_pointers_is_not_scanned(void **state) {
  (void)state;
  (void)mpp_cuda_available();
  assert_int_equal(child_gemm_on_unreadable_pointers(), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exit_from_a_signal_handler_inside_the_site_lock_finishes),
      cmocka_unit_test(exit_from_a_signal_handler_during_fork_finishes),
      cmocka_unit_test(exit_handler_runs_before_a_teardown_registered_inside_the_first_call),
      cmocka_unit_test(fork_while_another_thread_holds_a_module_lock_leaves_it_free_in_the_child),
      cmocka_unit_test(activation_returns_once_its_threads_run_their_own_code),
      cmocka_unit_test(a_fork_right_after_activation_gives_a_child_that_exits),
      cmocka_unit_test(nvtx_push_from_a_later_thread_destructor_gets_a_fresh_stack),
      cmocka_unit_test(gemm_with_batch_count_zero_reads_no_operand),
      cmocka_unit_test(
          fork_child_of_a_program_that_initialised_cuda_leaves_unreadable_pointers_alone),
      cmocka_unit_test(fork_child_gemm_on_unreadable_pointers_is_not_scanned),
      cmocka_unit_test(gemm_with_an_invalid_transpose_code_does_not_scan_that_operand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
