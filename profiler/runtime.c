/* The runtime of libmpprof.so: init once (configuration: core.c), the
 * per-thread depth guard, real-symbol resolution, and the process
 * lifecycle — activation at the first hooked call (exit handler registered
 * after CUDA started, checkpoint thread, CUPTI), fork (the child starts empty
 * and writes its own raw file) and exit (flush CUPTI and scans, final raw
 * file). Everything that can fail here logs once and carries on: mpprof must
 * never change what the application does. */
#include "mpp.h"

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "analysis/advice.h"
#include "profiler/gpu/gpu.h"
#include "profiler/process.h"
#include "profiler/rawwrite.h"
#include "profiler/call.h"
#include "profiler/capture.h"
#include "profiler/nvtx.h"
#include "profiler/runtime.h"
#include "profiler/shadow.h"
#include "profiler/sites.h"
#include "profiler/train.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static atomic_bool initialised;
static atomic_bool activated;
static atomic_bool finishing; /* exit handler running: hooks pass through */
static pthread_mutex_t activate_mu = PTHREAD_MUTEX_INITIALIZER;
static bool exit_handler_registered;

static __thread MPP_TLS int depth;

bool mpp_enter(void) {
  /* Inner calls (cuBLAS -> cuBLASLt) and mpprof's own calls pass through. */
  if (depth > 0) return false;
  if (!atomic_load_explicit(&initialised, memory_order_acquire)) mpp_init();
  if (mpp_cfg.disabled || atomic_load_explicit(&finishing, memory_order_relaxed)) return false;
  depth++;
  if (!atomic_load_explicit(&activated, memory_order_acquire)) mpp_activate();
  return true;
}

/* Set at activation: the exit handler is registered once more when the first
 * hooked call returns (see mpp_activate). */
static atomic_bool exit_handler_renew;
static bool exit_handler_renewed; /* under activate_mu */
static void renew_exit_handler(void);

void mpp_leave(void) {
  if (--depth == 0 && atomic_load_explicit(&exit_handler_renew, memory_order_relaxed))
    renew_exit_handler();
}

/* --- real symbols --- */

#define MPP_MAX_SYM_TABLES 16
static struct {
  mpp_sym *tab;
  size_t n;
} sym_tables[MPP_MAX_SYM_TABLES];
static size_t nsym_tables;

/* The loader's count of objects added so far: a symbol missing now can only
 * appear once it grows. dl_iterate_phdr takes the loader's list lock for one
 * callback, far less than dlsym's search and dlopen's name walk. */
static int loader_adds_cb(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  *(uint64_t *)data = (uint64_t)info->dlpi_adds;
  return 1;
}

static uint64_t loader_adds(void) {
  uint64_t adds = 0;
  dl_iterate_phdr(loader_adds_cb, &adds);
  return adds;
}

void *mpp_sym_lookup(mpp_sym *s) {
  void *fn = __atomic_load_n(&s->fn, __ATOMIC_ACQUIRE);
  if (fn) return fn; /* resolved by another thread meanwhile */
  /* A failed lookup is remembered with the loader generation it saw: until a
   * library is loaded, the answer stays "missing" without dlsym + dlopen. */
  uint64_t gen = loader_adds() + 1;
  if (__atomic_load_n(&s->missed_at, __ATOMIC_ACQUIRE) == gen) return NULL;
  fn = dlsym(RTLD_NEXT, s->name);
  if (!fn && s->soname) {
    /* Loaded RTLD_LOCAL by the app (Python extensions): look inside it. The
     * reference the lookup takes is given back at once: the library stays
     * the program's to unload (mpp_sym_forget_unloaded drops what it held). */
    void *h = dlopen(s->soname, RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
      fn = mpp_real_dlsym(h, s->name); /* libmpprof's own dlsym would answer with the hook */
      dlclose(h);
    }
  }
  if (fn)
    __atomic_store_n(&s->fn, fn, __ATOMIC_RELEASE);
  else
    __atomic_store_n(&s->missed_at, gen, __ATOMIC_RELEASE);
  return fn;
}

bool mpp_sym_adopt(const char *name, void *real) {
  for (size_t t = 0; t < nsym_tables; t++)
    for (size_t i = 0; i < sym_tables[t].n; i++) {
      mpp_sym *s = &sym_tables[t].tab[i];
      if (strcmp(s->name, name) != 0) continue;
      void *none = NULL;
      __atomic_compare_exchange_n(&s->fn, &none, real, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
      return true;
    }
  return false;
}

void mpp_sym_forget_unloaded(void) {
  /* A symbol whose address no loaded object holds any more: the library was
   * unloaded; the next call resolves it again (the copy loaded then, if any).
   * An object loaded at the same address meanwhile by another thread is
   * not told apart: it is the reload of the same file in practice. */
  for (size_t t = 0; t < nsym_tables; t++)
    for (size_t i = 0; i < sym_tables[t].n; i++) {
      mpp_sym *s = &sym_tables[t].tab[i];
      void *fn = __atomic_load_n(&s->fn, __ATOMIC_ACQUIRE);
      Dl_info di;
      if (!fn || dladdr(fn, &di)) continue;
      __atomic_compare_exchange_n(&s->fn, &fn, NULL, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
      __atomic_store_n(&s->missed_at, 0, __ATOMIC_RELEASE);
    }
}

void mpp_sym_pin(void *fn) {
  Dl_info di;
  if (fn && dladdr(fn, &di) && di.dli_fname)
    (void)dlopen(di.dli_fname, RTLD_LAZY | RTLD_NOLOAD); /* never closed */
}

void mpp_sym_resolve_all(mpp_sym *tab, size_t n) {
  for (size_t i = 0; i < n; i++)
    mpp_sym_get(&tab[i]);
}

void mpp_register_syms(mpp_sym *tab, size_t n) {
  /* Constructors of the hook modules run before mpp_init's constructor or
   * after; either way the table is resolved once init has run. */
  if (nsym_tables < MPP_MAX_SYM_TABLES) {
    sym_tables[nsym_tables].tab = tab;
    sym_tables[nsym_tables].n = n;
    nsym_tables++;
  }
  if (atomic_load(&initialised)) mpp_sym_resolve_all(tab, n);
}

/* --- lifecycle --- */

static pthread_t checkpoint_thread;
static bool checkpoint_running;
static bool checkpoint_entered; /* under checkpoint_mu: the thread runs checkpoint_main */
static pthread_mutex_t checkpoint_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t checkpoint_cv = PTHREAD_COND_INITIALIZER;
/* The lifecycle's locks, in the order they are taken:
 *
 *   flush_mu -> pass_mu -> activate_mu -> the fork locks (core.c: module
 *   mutexes, mpp_fork_protect) -> CUPTI's parse lock -> the site lock
 *
 * flush_mu: one pass at a time (the checkpoint thread's, the exit handler's,
 * exec's, mpprof_checkpoint()'s), held for the whole pass: a pass that began
 * before exit() ends before the exit handler goes on, so no CUPTI flush runs
 * during CUDA's own teardown. Never held across fork.
 * pass_mu: the raw write of a pass only.
 *
 * atfork_prepare takes pass_mu and everything after it, and holds them across
 * fork. Fork handlers run in reverse registration order: a library loaded
 * after mpprof registered its own (libcupti, which mpprof dlopens at
 * activation; the driver) runs its prepare handler first, which may take a
 * lock L of that library and keep it until its parent handler. A thread that
 * waits for L while holding a lock atfork_prepare takes deadlocks the fork:
 * the forking thread holds L and waits for that lock. So nothing calls into
 * CUPTI or CUDA under pass_mu, the fork locks, CUPTI's parse lock or the site
 * lock: a pass flushes CUPTI and drains the device scans under flush_mu alone;
 * the raw write asks CUPTI nothing (mpp_cupti_dropped is the count the last
 * flush asked for); the CUPTI parser takes records from CUPTI outside its
 * parse lock (gpu/cupti.c). Two foreign calls remain under such a lock:
 * activation holds activate_mu while it dlopens and subscribes CUPTI (a
 * fork on another thread at that moment, once libcupti's handler is
 * registered), and shadow execution (MPPROF_SHADOW) holds shadow_mu, a fork
 * lock, around its CUDA calls and at drain.
 *
 * A signal handler that calls exit() (or exec, or mpprof_checkpoint()) may
 * interrupt its thread while that thread holds these locks: inside a pass
 * (mpprof_checkpoint()) or between the fork handlers (fork_depth). Waiting
 * would never end: the write is skipped (lifecycle_locks_held_here). */
static pthread_mutex_t flush_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pass_mu = PTHREAD_MUTEX_INITIALIZER;

/* This thread is inside a pass (flush_mu, pass_mu: counted before they are
 * taken, uncounted after they are released) or inside fork (from mpprof's
 * prepare handler to its parent or child handler, the clone included; not
 * the handlers of libraries registered later, CUPTI's, which run before and
 * after: a signal there, in CUPTI's lock, still meets the exit's CUPTI flush). */
static __thread MPP_TLS int pass_depth;
static __thread MPP_TLS int fork_depth;

static bool lifecycle_locks_held_here(void) {
  return pass_depth > 0 || fork_depth > 0;
}

/* The checkpoint thread's raw write runs on a thread of its own whose file
 * descriptor table is private (unshare(CLONE_FILES)) and holds the standard
 * streams only: a program that closes every descriptor it did not open
 * (close(3..1023), closefrom) and opens files of its own meanwhile (a daemon,
 * a single-threaded program that knows no other thread) never has mpprof
 * read, write or close one of its files through a reused number, nor closes
 * the raw file under mpprof's write. Under a seccomp filter (which may kill
 * the process at a system call it does not expect), without unshare, or
 * without a thread, the table is the program's, as before.
 * Every raw write takes that path (raw_write_isolated): the checkpoint
 * thread's, mpprof_checkpoint()'s and the final one at exit or exec, which
 * run while the program's other threads go on (a thread closing every
 * descriptor as the program exits made the exit's write go into its file, or
 * lose the raw file). The calling thread waits for it: the write stays in the
 * program's order. */
#ifndef SYS_close_range
#define SYS_close_range 436 /* one number on every architecture */
#endif

typedef struct isolated_write {
  bool final;
  int err;
} isolated_write;

static void *isolated_write_main(void *arg) {
  isolated_write *w = arg;
  depth = 1; /* signals blocked: created so (raw_write_isolated) */
  if (unshare(CLONE_FILES) == 0) {
    /* Linux before 5.9 has no close_range: the copies stay until the thread
     * ends, and the files mpprof opens take numbers above them. */
    (void)syscall(SYS_close_range, 3u, ~0u, 0u);
    /* A stream the program closed gets /dev/null: mpp_log's writes to
     * STDERR_FILENO never land in the raw file given that number. */
    for (int fd = 0; fd <= STDERR_FILENO; fd++)
      if (fcntl(fd, F_GETFD) < 0) {
        int n = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (n >= 0 && n != fd) close(n);
      }
  }
  w->err = mpp_raw_write(w->final);
  return NULL;
}

/* Is a seccomp filter on (/proc/self/status "Seccomp: 2", or strict mode 1,
 * or unknown)? A filter may kill the process at a system call it does not
 * expect (systemd's SystemCallFilter= without an errno, other sandboxes):
 * unshare and close_range are then not tried. Asked at each write (the
 * program may install one later; none is ever removed, so "on" is kept),
 * under pass_mu (its buffer and seccomp_seen).
 *
 * The file is read through the program's descriptor table, which a thread
 * of the program may be closing and refilling meanwhile (close(3..1023),
 * then files of its own). The descriptor read is the one opened only while
 * fstat says the same file before and after the read; pread leaves the
 * offset of any other file alone; what was read must be a status file; and
 * a number that no longer names that file is not closed (it is the
 * program's now, or nothing; the one window left is between the second
 * fstat and the close). A read lost that way is tried again: taking it as
 * "on" put the write in the program's table, where the closing thread
 * closed the raw file under it (no raw file, 1 run in 500 under load). */
enum { SECCOMP_READ_TRIES = 8 };

static bool seccomp_seen;

/* 1: the filter is on (or no status file), 0: off, -1: this try read
 * nothing usable. */
static int seccomp_read_once(char *buf, size_t size) {
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  struct stat before, after;
  if (fstat(fd, &before) != 0) return -1; /* closed already: not ours */
  ssize_t n = pread(fd, buf, size - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  bool status = strncmp(buf, "Name:", 5) == 0;
  /* The same file throughout, and it was a status file: the number is still
   * mpprof's (up to the close itself). */
  if (!status || fstat(fd, &after) != 0 || after.st_dev != before.st_dev ||
      after.st_ino != before.st_ino)
    return -1;
  close(fd);
  const char *at = strstr(buf, "\nSeccomp:");
  if (!at) return 0; /* a kernel without seccomp */
  at += strlen("\nSeccomp:");
  while (*at == ' ' || *at == '\t')
    at++;
  return *at != '0';
}

static bool seccomp_on(void) {
  static char buf[4096];
  for (int i = 0; i < SECCOMP_READ_TRIES && !seccomp_seen; i++) {
    int on = seccomp_read_once(buf, sizeof buf);
    if (on >= 0) {
      seccomp_seen = on;
      return on;
    }
  }
  return true;
}

/* mpp_raw_write(final) with a descriptor table of its own, the caller
 * waiting; under pass_mu. */
static int raw_write_isolated(bool final) {
  isolated_write w = {.final = final};
  if (seccomp_on()) return mpp_raw_write(final);
  /* Created with every signal blocked: the program's signals are not for it. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t t;
  int rc = pthread_create(&t, NULL, isolated_write_main, &w);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) return mpp_raw_write(final);
  pthread_join(t, NULL);
  return w.err;
}

static void *checkpoint_main(void *arg) {
  (void)arg;
  /* Signals stay blocked (created so): they belong to the application. */
  depth = 1; /* anything this thread calls is mpprof's own */
  pthread_mutex_lock(&checkpoint_mu);
  checkpoint_entered = true; /* its start-up is over: see wait_entered */
  pthread_cond_broadcast(&checkpoint_cv);
  pthread_mutex_unlock(&checkpoint_mu);
  for (;;) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double s = mpp_cfg.checkpoint_s;
    ts.tv_sec += (time_t)s;
    ts.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&checkpoint_mu);
    int rc = 0;
    while (rc != ETIMEDOUT && !atomic_load(&finishing))
      rc = pthread_cond_timedwait(&checkpoint_cv, &checkpoint_mu, &ts);
    pthread_mutex_unlock(&checkpoint_mu);
    pthread_mutex_lock(&flush_mu);
    if (atomic_load(&finishing)) {
      pthread_mutex_unlock(&flush_mu);
      return NULL;
    }
    /* CUPTI without pass_mu: a fork may be waiting for it (see flush_mu). */
    if (mpp_cuda_ours()) mpp_cupti_flush(false);
    pthread_mutex_lock(&pass_mu);
    int err = raw_write_isolated(false);
    /* Logged inside the write: all of it is excluded from a fork (atfork_prepare). */
    if (err < 0) mpp_log(1, "checkpoint not written: %s", strerror(-err));
    pthread_mutex_unlock(&pass_mu);
    pthread_mutex_unlock(&flush_mu);
  }
  return NULL;
}

static void on_exit_handler(void) {
  /* A child made by clone() without fork's handlers (a raw clone system
   * call, as sandboxes and some runtimes make), or a vfork child that calls
   * exit(): its tables are its parent's, its CUDA state is its parent's. Its
   * raw file would carry the parent's calls under the parent's pid: nothing
   * is written, nothing is flushed, and `finishing` stays as it is (a vfork
   * child shares it with its parent). The handler is registered twice: said once. */
  if ((int)getpid() != mpp_process_pid()) {
    static atomic_bool said;
    if (!atomic_exchange(&said, true))
      mpp_log(1, "exit() in a child made without fork() (clone, or vfork then exit): its calls "
                 "are not written");
    return;
  }
  if (atomic_exchange(&finishing, true)) return;
  pthread_mutex_lock(&checkpoint_mu);
  pthread_cond_broadcast(&checkpoint_cv);
  pthread_mutex_unlock(&checkpoint_mu);
  /* exit() from a signal handler that interrupted this thread inside the site
   * lock: rendering would wait for that lock forever. The last checkpoint
   * stays; the exit goes on. */
  if (mpp_sites_locked_by_caller()) {
    mpp_log(1, "exit() inside mpprof's site lock (from a signal handler?): final raw file not "
               "written, the last checkpoint stays");
    return;
  }
  /* Likewise inside fork (between fork handlers) or a pass on this thread. */
  if (lifecycle_locks_held_here()) {
    mpp_log(1, "exit() inside fork() or a checkpoint pass on this thread (from a signal "
               "handler?): final raw file not written, the last checkpoint stays");
    return;
  }
  int cancel = mpp_cancel_off(); /* exit() is no cancellation point: nor is the pass */
  pass_depth++;
  pthread_mutex_lock(&flush_mu); /* a checkpoint pass in progress ends first */
  /* exit() from inside a hooked call on this thread (a signal handler that
   * interrupted it): the thread may be inside the driver or hold the device
   * scanner's lock, so no CUDA work; the tables are still written. */
  bool inside_hook = depth > 0;
  depth++;
  /* A child forked after CUDA started never touches the parent's CUDA state. */
  if (mpp_cuda_ours() && !inside_hook) {
    mpp_shadow_drain();
    mpp_cupti_flush(true);
    mpp_devscan_drain();
  }
  /* A fork child that never used CUDA inherited this handler: nothing to say. */
  if (atomic_load(&activated)) {
    pthread_mutex_lock(&pass_mu);
    mpp_sites_note_in_flight();
    int err = raw_write_isolated(true);
    if (err < 0) mpp_log(1, "raw file not written: %s", strerror(-err));
    pthread_mutex_unlock(&pass_mu);
  }
  depth--;
  pthread_mutex_unlock(&flush_mu);
  pass_depth--;
  mpp_cancel_restore(cancel);
}

/* exec(): the image's raw file, final, before the real exec (exec.c). Not in a
 * vfork child (its pid is not the image's: it shares this memory), not inside
 * a hooked call or the site lock (a signal handler that execs), not after
 * exit began. */
void mpp_runtime_before_exec(void) {
  if (!atomic_load(&activated) || atomic_load(&finishing)) return;
  if ((int)getpid() != mpp_process_pid() || depth > 0 || mpp_sites_locked_by_caller() ||
      lifecycle_locks_held_here())
    return;
  int cancel = mpp_cancel_off(); /* exec is no cancellation point: nor is the pass */
  depth++;
  pass_depth++;
  pthread_mutex_lock(&flush_mu); /* a checkpoint pass in progress ends first */
  if (mpp_cuda_ours()) {
    mpp_shadow_drain();
    mpp_cupti_flush(true);
    mpp_devscan_drain();
  }
  pthread_mutex_lock(&pass_mu);
  int err = raw_write_isolated(true);
  if (err < 0) mpp_log(1, "raw file not written before exec: %s", strerror(-err));
  pthread_mutex_unlock(&pass_mu);
  pthread_mutex_unlock(&flush_mu);
  pass_depth--;
  depth--;
  mpp_cancel_restore(cancel);
}

/* mpprof_checkpoint(): the checkpoint thread's pass (CUPTI flush, raw file
 * not final), on the calling thread, for a runtime that may end without
 * exit handlers (CPython ends an uncaught KeyboardInterrupt by SIGINT after
 * its own finalisation). Not before activation (nothing to write), after
 * exit began, inside a hooked call or the site lock, or in a vfork child. */
void mpp_runtime_checkpoint(void) {
  if (!atomic_load(&activated) || atomic_load(&finishing)) return;
  if ((int)getpid() != mpp_process_pid() || depth > 0 || mpp_sites_locked_by_caller() ||
      lifecycle_locks_held_here())
    return;
  int cancel = mpp_cancel_off();
  depth++;
  pass_depth++;
  pthread_mutex_lock(&flush_mu); /* one pass at a time, as the checkpoint thread's */
  if (!atomic_load(&finishing)) {
    if (mpp_cuda_ours()) mpp_cupti_flush(false);
    pthread_mutex_lock(&pass_mu);
    int err = raw_write_isolated(false);
    if (err < 0) mpp_log(1, "checkpoint not written: %s", strerror(-err));
    pthread_mutex_unlock(&pass_mu);
  }
  pthread_mutex_unlock(&flush_mu);
  pass_depth--;
  depth--;
  mpp_cancel_restore(cancel);
}

void mpp_runtime_exec_failed(void) {
  if (!atomic_load(&activated) || (int)getpid() != mpp_process_pid()) return;
  mpp_raw_exec_failed();
}

/* Waits until a just created thread runs its own start routine (*flag set
 * under mu, cv broadcast). Until then the thread is inside the C library's
 * and a sanitizer's thread start-up, which may hold their internal locks
 * (gcc 12's ASan: its allocator's and thread registry's, and it has no fork
 * handlers): a fork at that moment gives a child that inherits them locked
 * and hangs in its first malloc or in LeakSanitizer's check at exit. The
 * application forks after the hooked call that activated mpprof returns (a
 * data-loader worker), or waits in atfork_prepare for activate_mu, held here:
 * either way, after the start-up. */
static void wait_entered(pthread_mutex_t *mu, pthread_cond_t *cv, const bool *flag) {
  /* (a cancellation point: mpp_activate, holding activate_mu, turned cancellation off) */
  pthread_mutex_lock(mu);
  while (!*flag)
    pthread_cond_wait(cv, mu);
  pthread_mutex_unlock(mu);
}

void mpp_activate(void) {
  /* Under activate_mu, which every thread's first hooked call and fork take:
   * CUPTI's start may reach a cancellation point. */
  int cancel = mpp_cancel_off();
  pthread_mutex_lock(&activate_mu);
  if (atomic_load(&activated)) {
    pthread_mutex_unlock(&activate_mu);
    mpp_cancel_restore(cancel);
    return;
  }
  depth++;
  /* Registered now, after the application started CUDA, so it runs before
   * the CUDA runtime's own exit teardown. Inherited by fork children. The
   * first hooked call may itself start a runtime that registers its teardown
   * (cuBLAS and cuDNN carry their own static CUDA runtime, initialised in
   * their first call): the handler is registered once more when that call
   * returns, so it runs before that teardown too (it runs once: `finishing`). */
  if (!exit_handler_registered) {
    exit_handler_registered = true;
    atexit(on_exit_handler);
  }
  if (!exit_handler_renewed) atomic_store(&exit_handler_renew, true);
  mpp_cfg.rank = mpp_rank_from_env(); /* before the checkpoint thread reads it */
  mpp_cfg.world_size = mpp_world_size_from_env();
  /* The scanner's tables, built here rather than inside the first scanned
   * call (the first hooked call is usually cublasCreate / a descriptor call,
   * not a GEMM a program may be timing). */
  if (mpp_cfg.scan != MPP_SCAN_NONE) {
    mp_scan_prepare();
    mpp_call_prepare_thread();
  }
  mpp_sites_prepare();
  if (mpp_cuda_ours()) {
    mpp_cupti_set_sink(mpp_kernel_sink_fn);
    mpp_tc_set_verdict_sink(mpp_tc_verdict_sink_fn);
    mpp_cupti_set_flush_observer(mpp_tc_flush_mark, mpp_tc_settle);
    mpp_cupti_start(mpp_cfg.cupti, mpp_cfg.cuda_home);
  }
  if (mpp_cfg.checkpoint_s > 0 && !checkpoint_running) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Created with every signal blocked (the thread inherits the mask): a
     * process signal must not reach it before its first instruction. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&checkpoint_thread, &attr, checkpoint_main, NULL) == 0)
      checkpoint_running = true;
    else
      mpp_log(1, "no checkpoint thread");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (checkpoint_running) wait_entered(&checkpoint_mu, &checkpoint_cv, &checkpoint_entered);
  }
  depth--;
  atomic_store_explicit(&activated, true, memory_order_release);
  pthread_mutex_unlock(&activate_mu);
  mpp_cancel_restore(cancel);
}

static void renew_exit_handler(void) {
  pthread_mutex_lock(&activate_mu);
  if (!exit_handler_renewed) {
    exit_handler_renewed = true;
    atexit(on_exit_handler);
  }
  atomic_store(&exit_handler_renew, false);
  pthread_mutex_unlock(&activate_mu);
}

/* Held across fork, in the lifecycle's lock order (see flush_mu): no mpprof
 * thread is then inside a raw write, a CUPTI parse or a hook's table update,
 * nor an activation. Those allocate; under gcc 12's ASan, whose allocator has no
 * fork handlers, a child forked mid-allocation would inherit the allocator's
 * lock held and hang in malloc or in LeakSanitizer's check at exit. One
 * allocation is left outside: a CUPTI flush (under flush_mu, which fork does
 * not take: CUPTI may hold its own lock in a fork handler) can ask for a
 * buffer (cupti.c buffer_requested), so under that ASan a fork racing it can
 * still leave the child's allocator locked. glibc's allocator has fork
 * handlers: the builds users run are not exposed. */
/* CUDA_INJECTION64_PATH names this library (its file name): the driver's
 * cuInit then activates mpprof (InitializeInjection), so a process that is
 * not active has not initialised CUDA. Read once, at init. */
static bool injection_ours;

static bool fork_child_cuda_ours; /* set in atfork_prepare, under activate_mu */

static void atfork_prepare(void) {
  fork_depth++; /* before the first lock: see lifecycle_locks_held_here */
  /* Asked before any lock is taken: dlopen(RTLD_NOLOAD) takes the loader's
   * lock, which a thread in a library constructor holds while it may wait
   * for activate_mu (a hooked call). */
  bool cuda_unseen = injection_ours || !mpp_cu_loaded();
  pthread_mutex_lock(&pass_mu);
  pthread_mutex_lock(&activate_mu);
  /* The child may use CUDA and CUPTI as a fresh process only if this process
   * never did: not active (no hooked call, no InitializeInjection: the
   * driver's cuInit calls it when CUDA_INJECTION64_PATH names libmpprof, as
   * mpprof run sets it), mpprof never started the driver, and, where cuInit
   * could have gone unseen (no injection path of ours), libcuda not loaded. */
  fork_child_cuda_ours =
      mpp_cuda_ours() && !atomic_load(&activated) && !mpp_cu_started() && cuda_unseen;
  mpp_fork_locks_lock();
  mpp_cupti_fork_prepare();
  mpp_sites_lock();
}

static void atfork_parent(void) {
  mpp_sites_unlock();
  mpp_cupti_fork_parent();
  mpp_fork_locks_unlock();
  pthread_mutex_unlock(&activate_mu);
  pthread_mutex_unlock(&pass_mu);
  fork_depth--;
}

static void atfork_child(void) {
  /* Only the forking thread survives: locks are re-created, tables emptied,
   * and the child activates itself again at its first hooked call. */
  pthread_mutex_init(&activate_mu, NULL);
  pthread_mutex_init(&checkpoint_mu, NULL);
  pthread_cond_init(&checkpoint_cv, NULL);
  pthread_mutex_init(&flush_mu, NULL); /* the checkpoint thread's, maybe: it is gone */
  pthread_mutex_init(&pass_mu, NULL);
  mpp_fork_locks_reinit();
  mpp_cupti_fork_child();
  mpp_sites_reset(); /* also re-creates the sites mutex */
  mpp_train_reset_child();
  mpp_core_fork_child(fork_child_cuda_ours); /* the child's tid; mpp_in_forked_child() */
  mpp_clock_fork_child();
  mpp_nvtx_ranges_reset();
  mpp_capture_reset_counts();
  checkpoint_running = false;
  checkpoint_entered = false;
  atomic_store(&activated, false);
  mpp_process_info_reset();
  mpp_raw_reset();
  fork_depth--;
}

static void read_injection_path(void) {
  const char *v = getenv("CUDA_INJECTION64_PATH");
  Dl_info me;
  if (!v || !*v || !dladdr((void *)read_injection_path, &me) || !me.dli_fname) return;
  const char *a = strrchr(v, '/'), *b = strrchr(me.dli_fname, '/');
  injection_ours = !strcmp(a ? a + 1 : v, b ? b + 1 : me.dli_fname);
}

static void init_once_fn(void) {
  mpp_config_read();
  read_injection_path();
  mpp_process_keep_settings();
  mpp_clock_init(true);
  mpp_process_info_reset();
  mpp_raw_reset();
  if (!mpp_cfg.disabled) {
    mpp_process_take_exec_rank();
    mpp_train_init();
    depth++;
    for (size_t i = 0; i < nsym_tables; i++)
      mpp_sym_resolve_all(sym_tables[i].tab, sym_tables[i].n);
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    depth--;
  }
  atomic_store_explicit(&initialised, true, memory_order_release);
}

void mpp_init(void) {
  pthread_once(&init_once, init_once_fn);
}

__attribute__((constructor(200))) static void mpp_constructor(void) {
  mpp_init();
  /* Before main, where no other thread reads the environment yet. */
  mpp_process_forget_exec_rank();
  mpp_process_forget_exec_added();
}

/* CUDA injection (CUDA_INJECTION64_PATH): the driver calls this at cuInit. */
MPP_EXPORT int InitializeInjection(void) {
  mpp_init();
  if (!mpp_cfg.disabled && depth == 0) {
    depth++;
    mpp_activate();
    depth--;
  }
  return 1;
}
