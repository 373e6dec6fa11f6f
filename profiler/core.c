/* The core every module of libmpprof.so may use, and which uses none of them:
 * the configuration (read once, at init, from the environment; read-only
 * afterwards), logging, the clock, thread ids, whether this is a fork child,
 * and the module mutexes held across fork. The lifecycle that drives the
 * modules is runtime.c. */
#include "mpp.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "analysis/advice.h"
#include "profiler/settings.h"

mpp_config mpp_cfg;

static atomic_bool forked_child;
static atomic_bool cuda_not_ours; /* a fork child of a process that had CUDA or CUPTI up */
static __thread MPP_TLS uint32_t tid_cache;

/* --- configuration --- */

_Static_assert(MPP_SCAN_NONE + 1 == MPP_SCAN_MODES, "mpp_scan_names covers every mpp_scan_mode");

const char *mpp_scan_mode_name(mpp_scan_mode mode) {
  return (unsigned)mode < MPP_SCAN_MODES ? mpp_scan_names[mode] : mpp_scan_names[MPP_SCAN_ALL];
}

int mpp_parse_scan_mode(const char *s, mpp_scan_mode *ret_mode) {
  for (int i = 0; s && i < MPP_SCAN_MODES; i++)
    if (!strcmp(s, mpp_scan_names[i])) {
      *ret_mode = (mpp_scan_mode)i;
      return 0;
    }
  return -EINVAL;
}

/* name's value from the environment, or NULL: unset, empty, or not a value
 * its row (settings.c) takes, which is logged and ignored (the launcher
 * refuses it before the program starts). */
static const char *env_setting(const char *name) {
  const char *v = getenv(name);
  const mpp_setting *s = mpp_setting_find(name);
  if (!v || !*v || !s) return NULL;
  if (mpp_setting_ok(s, v)) return v;
  char want[96];
  mpp_setting_want(s, want, sizeof want);
  mpp_log(1, "ignoring %s=%s (expected %s)", name, v, want);
  return NULL;
}

/* An integer setting's value, else its row's default. */
static uint64_t env_u64(const char *name) {
  const char *v = env_setting(name);
  return v ? strtoull(v, NULL, 10) : mpp_setting_find(name)->dflt;
}

/* The launcher refused bad values already; set by hand, a bad one is logged
 * and everything is recorded. */
static void read_capture(void) {
  const char *range = getenv("MPPROF_CAPTURE_RANGE"), *nvtx = getenv("MPPROF_NVTX_CAPTURE");
  char err[160];
  if (nvtx) snprintf(mpp_cfg.capture_nvtx, sizeof mpp_cfg.capture_nvtx, "%s", nvtx);
  if (mp_capture_parse(range, nvtx ? mpp_cfg.capture_nvtx : NULL, getenv("MPPROF_STEPS"),
                       &mpp_cfg.capture, err, sizeof err)) {
    mpp_log(1, "ignoring the capture range (%s): recording everything", err);
    memset(&mpp_cfg.capture, 0, sizeof mpp_cfg.capture);
  }
}

/* MPPROF_TC_COUNTERS (mpp_tc_counters_parse); a value it refuses still asks,
 * with the cheapest sampling (the first call of each site). */
int mpp_parse_tc_counters(const char *v) {
  int n = mpp_tc_counters_parse(v);
  return n == MPP_TC_BAD ? 0 : n;
}

/* CUPTI's library, the hardware counters and the declared loss scale. */
static void read_gpu_and_training(void) {
  const char *v = getenv("MPPROF_CUPTI");
  if (v && *v) snprintf(mpp_cfg.cupti, sizeof mpp_cfg.cupti, "%s", v);
  v = getenv("CUDA_HOME");
  if (v) snprintf(mpp_cfg.cuda_home, sizeof mpp_cfg.cuda_home, "%s", v);
  /* A value the row refuses is logged, and still asks (the cheapest sampling). */
  (void)env_setting("MPPROF_TC_COUNTERS");
  mpp_cfg.tc_every = mpp_parse_tc_counters(getenv("MPPROF_TC_COUNTERS"));
  v = env_setting("MPPROF_LOSS_SCALE");
  double s;
  if (!mpp_cfg.disabled && v && mp_parse_loss_scale(v, &s) == 0) mpp_cfg.loss_scale = s;
}

void mpp_config_read(void) {
  const char *v;
  memset(&mpp_cfg, 0, sizeof mpp_cfg);
  mpp_cfg.rank = -1; /* read at activation */
  v = getenv("MPPROF_LOG");
  mpp_cfg.log = v ? atoi(v) : 0;
  v = getenv("MPPROF_DISABLE");
  mpp_cfg.disabled = v && *v && strcmp(v, "0") != 0;
  /* Secure-execution mode (setuid/setgid or capabilities gained at exec): the
   * environment that names OUT belongs to a less privileged user, so nothing
   * is recorded or written (docs/profiler.md, Security). */
  if (getauxval(AT_SECURE)) {
    if (!mpp_cfg.disabled)
      mpp_log(1, "secure-execution mode (setuid/setgid program): not profiling, nothing written");
    mpp_cfg.disabled = true;
  }
  v = env_setting("MPPROF_SCAN");
  if (!v || mpp_parse_scan_mode(v, &mpp_cfg.scan) < 0) mpp_cfg.scan = MPP_SCAN_ALL;
  v = env_setting("MPPROF_SAMPLE");
  mpp_cfg.sample = !v || !strcmp(v, "auto") ? MPP_SAMPLE_AUTO : strtoull(v, NULL, 10);
  mpp_cfg.shadow = env_u64("MPPROF_SHADOW");
  mpp_cfg.shadow_max_mb = env_u64("MPPROF_SHADOW_MAX_MB");
  mpp_cfg.max_sites = (uint32_t)env_u64("MPPROF_MAX_SITES");
  mpp_cfg.max_events = env_u64("MPPROF_MAX_EVENTS");
  mpp_cfg.max_ranges = env_u64("MPPROF_MAX_RANGES");
  read_capture();
  v = env_setting("MPPROF_CHECKPOINT_S");
  mpp_cfg.checkpoint_s =
      v ? strtod(v, NULL) : (double)mpp_setting_find("MPPROF_CHECKPOINT_S")->dflt;
  v = env_setting("MPPROF_SHADOW_MAX_REL");
  mpp_cfg.shadow_max_rel = v ? strtod(v, NULL) : 0;
  read_gpu_and_training();
  v = getenv("MPPROF_OUT");
  if (!v || !*v) v = "mpprof-out";
  /* Relative to the directory the process starts in: an application that
   * changes directory later (Hydra does) must not scatter its raw files. */
  /* (the directory read into out_dir itself: this may run in the first
   * hooked call, on an application thread with a small stack) */
  char *dir = mpp_cfg.out_dir;
  size_t lv = strlen(v), lc;
  if (v[0] != '/' && getcwd(dir, sizeof mpp_cfg.out_dir) &&
      (lc = strlen(dir)) + 1 + lv < sizeof mpp_cfg.out_dir) {
    dir[lc] = '/';
    memcpy(mpp_cfg.out_dir + lc + 1, v, lv + 1);
  } else {
    snprintf(mpp_cfg.out_dir, sizeof mpp_cfg.out_dir, "%s", v);
  }
}

/* Each launcher's rank variable and the world size it sets beside it. */
static const char *const rank_vars[][2] = {{"RANK", "WORLD_SIZE"},
                                           {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                           {"PMI_RANK", "PMI_SIZE"},
                                           {"SLURM_PROCID", "SLURM_NTASKS"}};

/* A variable's value as a non-negative int, -1 when unset or not one. */
static int env_nonneg_int(const char *name) {
  const char *v = getenv(name);
  char *end;
  if (!v || !*v) return -1;
  long r = strtol(v, &end, 10);
  return !*end && r >= 0 && r <= INT_MAX ? (int)r : -1;
}

/* The index in rank_vars of the first launcher whose rank is set, -1 when none. */
static int rank_launcher(int *ret_rank) {
  for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++) {
    int r = env_nonneg_int(rank_vars[i][0]);
    if (r >= 0) {
      *ret_rank = r;
      return (int)i;
    }
  }
  return -1;
}

int mpp_rank_from_env(void) {
  int r = -1;
  rank_launcher(&r);
  return r;
}

int mpp_world_size_from_env(void) {
  int r = -1, i = rank_launcher(&r);
  if (i < 0) return 0;
  int w = env_nonneg_int(rank_vars[i][1]);
  return w > r ? w : 0;
}

/* --- logging --- */

int mpp_cancel_off(void) {
  int state = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
  return state;
}

void mpp_cancel_restore(int state) {
  pthread_setcancelstate(state, NULL);
}

static mpp_dlsym_fn real_dlsym; /* atomic */

void mpp_set_real_dlsym(mpp_dlsym_fn fn) {
  __atomic_store_n(&real_dlsym, fn, __ATOMIC_RELEASE);
}

void *mpp_real_dlsym(void *handle, const char *name) {
  mpp_dlsym_fn real = __atomic_load_n(&real_dlsym, __ATOMIC_ACQUIRE);
  return real ? real(handle, name) : dlsym(handle, name);
}

void mpp_log(int level, const char *fmt, ...) {
  if (mpp_cfg.log < level) return;
  int e = errno; /* the caller's, whatever the formatting below sets */
  char line[1024];
  int n = snprintf(line, sizeof line, "mpprof[%d/%u]: ", (int)getpid(), mpp_thread_id());
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  size_t len = strlen(line);
  line[len++] = '\n';
  /* One write: lines of different threads do not interleave. (write is a
   * cancellation point: callers may hold mpprof's locks.) */
  int cancel = mpp_cancel_off();
  /* stderr a pipe nobody reads any more: the write's SIGPIPE (sent to this
   * thread) is blocked and taken back, unless one was pending already: a
   * log line must not end a program that writes nothing there itself. */
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  if (write(STDERR_FILENO, line, len) < 0 && errno == EPIPE && !was_pending) {
    struct timespec none = {0, 0};
    (void)sigtimedwait(&pipe_set, NULL, &none);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = e;
  mpp_cancel_restore(cancel);
}

/* --- per-thread state --- */

uint32_t mpp_thread_id(void) {
  if (!tid_cache) tid_cache = (uint32_t)syscall(SYS_gettid);
  return tid_cache;
}

bool mpp_in_forked_child(void) {
  return atomic_load_explicit(&forked_child, memory_order_relaxed);
}

bool mpp_cuda_ours(void) {
  return !atomic_load_explicit(&cuda_not_ours, memory_order_relaxed);
}

void mpp_core_fork_child(bool cuda_ours) {
  tid_cache = 0; /* the child's own tid */
  atomic_store(&forked_child, true);
  /* Once not ours, never again in this lineage (a grandchild included). */
  if (!cuda_ours) atomic_store(&cuda_not_ours, true);
}

/* --- mutexes held across fork --- */

/* Module mutexes (cuBLAS handle table, cuDNN shadows): leaf locks, never held
 * while another mpprof lock is taken, so any order between them is safe. */
#define MPP_MAX_FORK_LOCKS 8
static pthread_mutex_t *fork_locks[MPP_MAX_FORK_LOCKS];
static int nfork_locks;

static pthread_mutex_t thread_keys_mu = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void thread_keys_fork_protect(void) {
  mpp_fork_protect(&thread_keys_mu);
}

void mpp_thread_key_set(mpp_thread_key *k, void *block) {
  if (!atomic_load_explicit(&k->made, memory_order_acquire)) {
    pthread_mutex_lock(&thread_keys_mu);
    if (!atomic_load_explicit(&k->made, memory_order_relaxed) &&
        pthread_key_create(&k->key, k->release) == 0)
      atomic_store_explicit(&k->made, 1, memory_order_release);
    pthread_mutex_unlock(&thread_keys_mu);
    if (!atomic_load_explicit(&k->made, memory_order_relaxed)) return; /* no key: kept */
  }
  pthread_setspecific(k->key, block);
}

void mpp_fork_protect(pthread_mutex_t *mu) {
  /* Called from constructors, which the loader runs one at a time. */
  if (nfork_locks < MPP_MAX_FORK_LOCKS) fork_locks[nfork_locks++] = mu;
}

void mpp_fork_locks_lock(void) {
  for (int i = 0; i < nfork_locks; i++)
    pthread_mutex_lock(fork_locks[i]);
}

void mpp_fork_locks_unlock(void) {
  for (int i = nfork_locks; i-- > 0;)
    pthread_mutex_unlock(fork_locks[i]);
}

void mpp_fork_locks_reinit(void) {
  for (int i = 0; i < nfork_locks; i++)
    pthread_mutex_init(fork_locks[i], NULL);
}

void *mpp_map_zeroed(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void mpp_unmap(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}

#define MPP_POOL_CHUNK (64 * 1024)

void *mpp_pool_get(mpp_pool *p) {
  void *o = p->free_list;
  if (o) {
    memcpy(&p->free_list, o, sizeof(void *));
    memset(o, 0, p->size);
    return o;
  }
  if ((size_t)(p->end - p->next) < p->size) {
    size_t chunk = p->size > MPP_POOL_CHUNK / 8 ? 8 * p->size : MPP_POOL_CHUNK;
    char *c = mpp_map_zeroed(chunk);
    if (!c) return NULL;
    p->next = c; /* the old chunk's tail (less than one object) is left unused */
    p->end = c + chunk;
  }
  o = p->next; /* never handed out before: still zero */
  p->next += p->size;
  return o;
}

void mpp_pool_put(mpp_pool *p, void *o) {
  if (!o) return;
  memcpy(o, &p->free_list, sizeof(void *));
  p->free_list = o;
}
