/* The timeline's clock, mpp_now_ns: CLOCK_REALTIME in ns (raw-format.md's
 * t_ns), read twice by every recorded call. Where the CPU has an invariant
 * TSC a read is one rdtsc (~12 ns on this VM, against ~30 for clock_gettime
 * through kvm-clock) converted by a per-thread anchor: a CLOCK_REALTIME
 * reading and the TSC at that moment, retaken every 2^18 ticks (~100 us).
 *
 * Why the value is CLOCK_REALTIME: between two anchors it is the anchor's
 * CLOCK_REALTIME plus the ticks since, at a rate measured against
 * CLOCK_MONOTONIC (which runs at CLOCK_REALTIME's rate, NTP slewing included)
 * over the whole process so far, at least 2^21 ticks. Both readings of a pair
 * lie within 2^11 ticks of the TSC value they are paired with (an interrupted
 * reading is taken again), so the rate is off by at most ~2e-3 at first and
 * ever less, and over one anchor's span the difference to clock_gettime stays
 * under ~1 us (typically a few ns). A thread's reads never go back (a read
 * below the thread's previous one returns the previous one, as CLOCK_REALTIME
 * itself does not go back unless the system clock is set); a clock that was
 * set is followed at the next anchor. Each anchor checks the TSC against the
 * thread's previous anchor: a TSC that does not keep the measured rate (not
 * synchronised between CPUs, stopped, rescaled) turns the whole process back
 * to clock_gettime for good. Without an invariant TSC, on other CPUs, or
 * until the first 2^21 ticks are measured, a read is clock_gettime.
 *
 * Fork: the child keeps the rate (the same TSC), retakes the start of its
 * measurement and its thread's anchor. */
#include "mpp.h"

#include <stdatomic.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define MPP_CLOCK_TSC 1
#include <cpuid.h>
#include <x86intrin.h>
#else
#define MPP_CLOCK_TSC 0
#endif

static uint64_t realtime_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if MPP_CLOCK_TSC

#define ANCHOR_TICKS (UINT64_C(1) << 18)    /* an anchor's span */
#define CALIBRATE_TICKS (UINT64_C(1) << 21) /* the shortest span the rate is measured over */
#define BRACKET_TICKS (UINT64_C(1) << 11)   /* a pair's readings: at most this far apart */
#define CHECK_TICKS (ANCHOR_TICKS << 4)     /* anchors this close are checked against each other */
#define CHECK_NS 20000 /* the rate's worst error over CHECK_TICKS and two brackets, ~5 us, x4 */
#define SET_BACK_NS 1000000 /* a read this far below the previous one: the clock was set */

typedef struct clock_pair {
  uint64_t tsc;       /* the middle of the bracket */
  uint64_t realtime;  /* CLOCK_REALTIME ns */
  uint64_t monotonic; /* CLOCK_MONOTONIC ns */
} clock_pair;

typedef struct anchor {
  uint64_t tsc, realtime, monotonic;
  uint64_t mult; /* ns per tick << 32 as measured when taken; 0: no anchor */
  uint64_t last; /* this thread's latest read */
} anchor;

static atomic_bool use_tsc;
static _Atomic uint64_t rate_mult;           /* ns per tick << 32; 0 until measured */
static _Atomic uint64_t start_tsc, start_ns; /* the measurement's start (CLOCK_MONOTONIC) */
static __thread MPP_TLS anchor here;

static uint64_t ts_ns(const struct timespec *ts) {
  return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* Both clocks and the TSC between them; false when every try was interrupted. */
static bool take_pair(clock_pair *ret) {
  for (int i = 0; i < 4; i++) {
    struct timespec rt, mono;
    uint64_t a = __rdtsc();
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    uint64_t b = __rdtsc();
    if (b - a < BRACKET_TICKS) {
      *ret =
          (clock_pair){.tsc = a + (b - a) / 2, .realtime = ts_ns(&rt), .monotonic = ts_ns(&mono)};
      return true;
    }
  }
  return false;
}

/* CPUID 0x80000007 EDX bit 8: the TSC runs at a constant rate in every
 * P-, C- and T-state. */
static bool invariant_tsc(void) {
  unsigned a, b, c, d;
  return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d >> 8 & 1);
}

static void give_up_tsc(uint64_t off_ns) {
  if (atomic_exchange(&use_tsc, false))
    mpp_log(1,
            "the TSC did not keep time (%llu ns off within ~2 ms): timestamps from clock_gettime",
            (unsigned long long)off_ns);
}

static uint64_t not_below_last(uint64_t ns) {
  if (ns < here.last) ns = here.last;
  here.last = ns;
  return ns;
}

/* A read whose anchor is stale or missing: a new pair, checked against the
 * previous anchor, refines the rate and becomes the anchor. */
static uint64_t reanchor(void) {
  clock_pair p;
  if (!take_pair(&p)) return here.mult ? not_below_last(realtime_ns()) : realtime_ns();
  if (here.mult) {
    uint64_t gap = p.tsc - here.tsc;
    if (p.tsc < here.tsc) { /* the TSC went back on this thread */
      give_up_tsc(here.tsc - p.tsc);
      return p.realtime;
    }
    if (gap < CHECK_TICKS) {
      uint64_t predicted = here.monotonic + ((gap * here.mult) >> 32);
      uint64_t off = predicted > p.monotonic ? predicted - p.monotonic : p.monotonic - predicted;
      if (off > CHECK_NS) {
        give_up_tsc(off);
        return p.realtime;
      }
    }
  }
  uint64_t mult = atomic_load_explicit(&rate_mult, memory_order_relaxed);
  uint64_t t0 = atomic_load_explicit(&start_tsc, memory_order_relaxed);
  uint64_t n0 = atomic_load_explicit(&start_ns, memory_order_relaxed);
  if (p.tsc - t0 >= CALIBRATE_TICKS && p.tsc > t0 && p.monotonic > n0) {
    mult = (uint64_t)(((unsigned __int128)(p.monotonic - n0) << 32) / (p.tsc - t0));
    atomic_store_explicit(&rate_mult, mult, memory_order_relaxed);
  }
  if (!mult) return p.realtime;                            /* not measured yet */
  if (here.last > p.realtime + SET_BACK_NS) here.last = 0; /* the clock was set back: follow it */
  /* A signal handler that reads the clock in between finds no anchor and
   * takes its own (mult is 0 until the fields are all written). */
  here.mult = 0;
  atomic_signal_fence(memory_order_seq_cst);
  here.tsc = p.tsc;
  here.realtime = p.realtime;
  here.monotonic = p.monotonic;
  atomic_signal_fence(memory_order_seq_cst);
  here.mult = mult;
  return not_below_last(p.realtime);
}

uint64_t mpp_now_ns(void) {
  /* Acquire: the measurement's start, stored before use_tsc was set. */
  if (!atomic_load_explicit(&use_tsc, memory_order_acquire)) return realtime_ns();
  uint64_t d = __rdtsc() - here.tsc;
  if (d < ANCHOR_TICKS && here.mult) return not_below_last(here.realtime + ((d * here.mult) >> 32));
  return reanchor();
}

static bool start_measuring(void) {
  clock_pair p;
  if (!take_pair(&p)) return false;
  atomic_store_explicit(&start_tsc, p.tsc, memory_order_relaxed);
  atomic_store_explicit(&start_ns, p.monotonic, memory_order_relaxed);
  return true;
}

void mpp_clock_init(bool allow_tsc) {
  atomic_store(&use_tsc, false);
  atomic_store(&rate_mult, 0);
  here = (anchor){0};
  if (allow_tsc && invariant_tsc() && start_measuring())
    atomic_store_explicit(&use_tsc, true, memory_order_release);
}

void mpp_clock_fork_child(void) {
  here = (anchor){0};
  if (atomic_load(&use_tsc) && !start_measuring()) atomic_store(&use_tsc, false);
}

bool mpp_clock_uses_tsc(void) {
  return atomic_load_explicit(&use_tsc, memory_order_relaxed) &&
         atomic_load_explicit(&rate_mult, memory_order_relaxed) != 0;
}

#else /* no TSC: clock_gettime */

uint64_t mpp_now_ns(void) {
  return realtime_ns();
}

void mpp_clock_init(bool allow_tsc) {
  (void)allow_tsc;
}

void mpp_clock_fork_child(void) {}

bool mpp_clock_uses_tsc(void) {
  return false;
}

#endif
