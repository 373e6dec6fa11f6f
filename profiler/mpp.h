/* The core of libmpprof.so that every module may use (core.c): the
 * configuration, read once at init and read-only afterwards; logging; the
 * clock (clock.c) and thread ids; the fork-child flag and the mutexes held across fork.
 * Nothing here is exported: the library is built with -fvisibility=hidden and
 * a version script, and only MPP_EXPORT definitions (hooks and injection entry
 * points) are visible.
 *
 * The modules have headers of their own, lowest first (docs/profiler.md):
 * op.h and hostmem.h (what a call asked), sites.h, process.h, train.h,
 * capture.h, nvtx.h, scope.h, shadow.h, call.h, rawwrite.h, runtime.h.
 * The data path of one hooked call: a hook module decodes its arguments into
 * an mpp_op (op.h), then mpp_call_begin/mpp_call_end (call.h) find the op's
 * site, scan inputs, push the CUPTI op id around the real call, scan outputs
 * and record the call. */
#ifndef MPPROF_PROFILER_MPP_H
#define MPPROF_PROFILER_MPP_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "analysis/capture.h"

#define MPP_EXPORT __attribute__((visibility("default")))
/* Per-thread state is a few words: initial-exec TLS avoids __tls_get_addr on
 * every hooked call, and fits the static TLS surplus glibc keeps for
 * libraries loaded with dlopen (NVTX/CUDA injection without LD_PRELOAD). */
#define MPP_TLS __attribute__((tls_model("initial-exec")))

/* memcpy of a size known only at run time, done by libc. The hot path's
 * string strategy (hot_path_c_args, top-level meson.build) makes GCC expand
 * a copy whose size it can bound (a count checked against a maximum) as
 * 64-byte vector moves and then a loop of single bytes for the rest: about
 * 150 instructions for 24 bytes, where glibc takes about 15. The empty asm
 * hides the bound. profiler_hot_path fails on such byte loops. */
static inline void *mpp_memcpy_n(void *dst, const void *src, size_t n) {
  __asm__("" : "+r"(n));
  return memcpy(dst, src, n);
}

/* --- configuration (core.c), read once from the environment at init --- */
typedef enum mpp_scan_mode { MPP_SCAN_ALL = 0, MPP_SCAN_OUTPUTS, MPP_SCAN_NONE } mpp_scan_mode;

#define MPP_SAMPLE_AUTO 0 /* mpp_config.sample: the auto schedule (call.h) */

typedef struct mpp_config {
  bool disabled;          /* MPPROF_DISABLE=1 */
  mpp_scan_mode scan;     /* MPPROF_SCAN */
  uint64_t sample;        /* MPPROF_SAMPLE: scan every Nth call of a site; MPP_SAMPLE_AUTO */
  uint64_t shadow;        /* MPPROF_SHADOW: shadow every Nth GEMM call of a site; 0 off */
  uint64_t shadow_max_mb; /* MPPROF_SHADOW_MAX_MB: memory cap of one shadowed call */
  double shadow_max_rel;  /* MPPROF_SHADOW_MAX_REL: the verdicts' limit, recorded; 0: unset */
  uint32_t max_sites;     /* MPPROF_MAX_SITES */
  uint64_t max_events;    /* MPPROF_MAX_EVENTS: events, and kernel events apart */
  uint64_t max_ranges;    /* MPPROF_MAX_RANGES: ended NVTX ranges kept for the timeline */
  mp_capture capture;     /* MPPROF_CAPTURE_RANGE, MPPROF_NVTX_CAPTURE, MPPROF_STEPS */
  char capture_nvtx[256]; /* capture.nvtx points here */
  double checkpoint_s;    /* MPPROF_CHECKPOINT_S; 0 disables */
  int log;                /* MPPROF_LOG: 0 quiet, 1 (or more) problems */
  char out_dir[4096];     /* MPPROF_OUT: raw files go to out_dir/raw/ */
  char cupti[4096];       /* MPPROF_CUPTI: libcupti's path, "off"/"0" disables; "": search */
  char cuda_home[4096];   /* CUDA_HOME: one more place libcupti is searched ("": none) */
  int tc_every;           /* MPPROF_TC_COUNTERS: -1 not requested, 0 first call, N every Nth */
  double loss_scale;      /* MPPROF_LOSS_SCALE (mpprof run --loss-scale); 0: none */
  /* RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID, -1 when none: read
   * at activation (the process's, or a fork child's, first hooked call), on
   * the application's thread, never by mpprof's own threads afterwards
   * (getenv there would race with the application's setenv). */
  int rank;
  /* The world size the same launcher set beside that rank (WORLD_SIZE,
   * OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS), 0 when none or not above
   * the rank: read with it, at activation. */
  int world_size;
} mpp_config;

extern mpp_config mpp_cfg;

const char *mpp_scan_mode_name(mpp_scan_mode mode);
int mpp_rank_from_env(void); /* the first launcher variable set, -1 when none */
/* The world size its launcher set beside the rank mpp_rank_from_env reads
 * (RANK: WORLD_SIZE, ...); 0 when no rank, no such variable, or not above the rank. */
int mpp_world_size_from_env(void);
int mpp_parse_scan_mode(const char *s, mpp_scan_mode *ret_mode); /* 0 or -EINVAL */
int mpp_parse_tc_counters(const char *v); /* MPPROF_TC_COUNTERS -> mpp_config.tc_every */
void mpp_config_read(void);               /* fills mpp_cfg (but its rank): once, from mpp_init */

/* --- log, threads, fork (core.c) --- */
uint32_t mpp_thread_id(void);
bool mpp_in_forked_child(void);
/* Whether this process may use CUDA and CUPTI as its own: not in a fork child
 * of a process that had initialised them (mpprof active there, or the driver
 * started): such a child never touches the parent's CUDA state. A child
 * forked before any of that (a launcher's worker) is a fresh process for
 * CUDA and subscribes CUPTI at its own first hooked call. */
bool mpp_cuda_ours(void);
/* runtime.c's atfork child handler: a new tid, the flag set; cuda_ours: the
 * parent had not initialised CUDA or CUPTI (runtime.c's atfork_prepare). */
void mpp_core_fork_child(bool cuda_ours);
/* One line `mpprof[pid/tid]: ...` on stderr, in one write, when MPPROF_LOG >=
 * level. Every caller logs problems at level 1 (there is no debug level); most
 * log a problem once (a flag of their own), shadow execution once per skipped
 * call. */
void mpp_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Cancellation off on the calling thread, the state before returned: around
 * mpprof's own work on an application thread (a raw write or pass, its file
 * I/O and waits, activation, a log line). A cancellation point there (open,
 * write, close, fdatasync, pthread_cond_wait, nanosleep) would act on a
 * cancellation the program left pending for a call that has none (exec,
 * exit, posix_spawn), and end the thread with mpprof's locks held. */
int mpp_cancel_off(void);
void mpp_cancel_restore(int state); /* the state mpp_cancel_off returned */

/* --- the C library's dlsym (core.c) --- */
/* libmpprof's own dlsym (dlsym.c) answers a lookup of a hooked name on a
 * hooked library's handle with the hook. Every lookup mpprof makes for
 * itself on a library's handle (the real symbols, libcupti's functions) goes
 * through mpp_real_dlsym and gets the library's own definition: the C
 * library's dlsym, which dlsym.c registers when the library loads; until
 * then, and where dlsym.c is not linked (unit tests), the plain dlsym. */
typedef void *(*mpp_dlsym_fn)(void *handle, const char *name);
void mpp_set_real_dlsym(mpp_dlsym_fn fn);
void *mpp_real_dlsym(void *handle, const char *name);

/* --- the clock (clock.c) --- */
/* CLOCK_REALTIME in ns; from the TSC where that is safe (clock.c says why it
 * is the same clock). Never below the calling thread's previous read unless
 * the system clock was set back. */
uint64_t mpp_now_ns(void);
/* How far a read may be from clock_gettime(CLOCK_REALTIME) at that moment:
 * the bound clock.c derives (a pair's readings within 2^11 ticks of its TSC
 * value, the rate's error over an anchor's 2^18 ticks). Timestamps of other
 * sources (CUPTI's, simcuda's clock_gettime) compare with mpprof's only to
 * this. */
#define MPP_CLOCK_ERROR_NS 1000
/* At init (tests: again, to choose): start measuring the TSC's rate if
 * allow_tsc and the CPU's TSC is invariant; otherwise clock_gettime. */
void mpp_clock_init(bool allow_tsc);
void mpp_clock_fork_child(void); /* runtime.c's atfork child handler: a new anchor */
bool mpp_clock_uses_tsc(void);   /* reads are converted TSC values now */

/* A module's mutex that application threads take inside hooks: held across
 * fork() by the prepare handler and re-created in the child, so a child never
 * inherits it locked by a thread that does not exist there. At most 8. */
void mpp_fork_protect(pthread_mutex_t *mu);
void mpp_fork_locks_lock(void);   /* atfork prepare: every protected mutex, in order */
void mpp_fork_locks_unlock(void); /* atfork parent */
void mpp_fork_locks_reinit(void); /* atfork child */

/* The key of a kind of per-thread block (a memo, a cache, a thread's state):
 * mpp_thread_key_set registers a block as the calling thread's, and when
 * the thread ends `release` runs on it with that block (a later destructor
 * of the thread may use the kind again: release clears the module's
 * thread-local pointer). The key is made at the first registration. */
typedef struct mpp_thread_key {
  void (*release)(void *block);
  _Atomic int made;
  pthread_key_t key;
} mpp_thread_key;
#define MPP_THREAD_KEY(release_fn)                                                                 \
  { .release = (release_fn) }
void mpp_thread_key_set(mpp_thread_key *k, void *block);

/* Zeroed pages for a block of mpprof's own that lives as long as a thread or
 * grows (memos, caches): mapped, not taken from the program's heap, where a
 * block of mpprof's between the program's chunks changes how malloc treats
 * them (whether a free merges into the top and consolidates). NULL without
 * memory. */
void *mpp_map_zeroed(size_t bytes);
void mpp_unmap(void *p, size_t bytes); /* p from mpp_map_zeroed(bytes), or NULL */

/* Objects of one size that programs make mpprof create and destroy per call
 * (the shadow of a cuDNN variant pack, made and destroyed around every
 * execution by PyTorch): carved from mapped chunks and recycled through a
 * free list, so a hooked call never takes them from the program's heap.
 * Chunks are kept for the life of the process (their users bound how many
 * objects are live at once). No lock: the user serialises get and put. */
typedef struct mpp_pool {
  size_t size;      /* object size, rounded up to 16 bytes */
  void *free_list;  /* objects put back, linked through their first word */
  char *next, *end; /* the unused part of the newest chunk */
} mpp_pool;
#define MPP_POOL_INIT(bytes)                                                                       \
  { .size = ((size_t)(bytes) + 15) & ~(size_t)15 }
void *mpp_pool_get(mpp_pool *p);         /* zeroed, 16-byte aligned; NULL without memory */
void mpp_pool_put(mpp_pool *p, void *o); /* o from mpp_pool_get(p), or NULL */

#endif
