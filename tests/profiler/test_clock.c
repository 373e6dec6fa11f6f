/* The timeline's clock (profiler/clock.c): whether it reads the TSC or
 * clock_gettime, a read is CLOCK_REALTIME -- it lies between clock_gettime
 * readings taken around it, within the conversion's bound -- and a thread's
 * reads never go back; in other threads and in a fork child too. Each check
 * runs for 20 ms of reads: past the rate's first measurement (2^21 ticks)
 * and across ~100 anchors. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "profiler/mpp.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* The conversion's worst error (clock.c), at a TSC of 1 GHz or more: the
 * anchor's pair, 2^10 ticks from the middle of its bracket (1 us), and the
 * rate's first error over one anchor's span (2^-9 of 2^18 ticks, 0.5 us).
 * Not a timing limit: a slow or loaded machine only moves the readings around
 * a read further apart (measured here: within 60 ns of them). */
#define BOUND_NS 2000u
#define RUN_NS 20000000u

static uint64_t realtime(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct outcome {
  uint64_t reads, outside, backwards;
} outcome;

static void *read_for_a_while(void *arg) {
  outcome *o = arg;
  uint64_t end = realtime() + RUN_NS, prev = 0;
  for (;;) {
    uint64_t before = realtime();
    uint64_t t = mpp_now_ns();
    uint64_t after = realtime();
    o->reads++;
    if (t + BOUND_NS < before || t > after + BOUND_NS) o->outside++;
    if (t < prev) o->backwards++;
    prev = t;
    if (after > end) return NULL;
  }
}

static bool cpu_has_invariant_tsc(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d >> 8 & 1);
#else
  return false;
#endif
}

static int with_tsc(void **state) {
  (void)state;
  mpp_cfg.log = 1; /* a TSC given up on says why */
  mpp_clock_init(true);
  return 0;
}

static int without_tsc(void **state) {
  (void)state;
  mpp_clock_init(false);
  return 0;
}

static void reads_lie_between_clock_realtime_readings_around_them(void **state) {
  (void)state;
  outcome o = {0};
  read_for_a_while(&o);
  assert_true(o.reads > 0);
  assert_int_equal(o.outside, 0);
}

static void reads_never_go_back_within_a_thread(void **state) {
  (void)state;
  outcome o = {0};
  read_for_a_while(&o);
  assert_int_equal(o.backwards, 0);
}

static void other_threads_read_the_same_clock(void **state) {
  (void)state;
  enum { THREADS = 3 };
  pthread_t th[THREADS];
  outcome o[THREADS] = {{0}};
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&th[i], NULL, read_for_a_while, &o[i]), 0);
  for (int i = 0; i < THREADS; i++) {
    pthread_join(th[i], NULL);
    assert_int_equal(o[i].outside, 0);
    assert_int_equal(o[i].backwards, 0);
  }
}

static void a_fork_child_reads_the_same_clock(void **state) {
  (void)state;
  outcome warm = {0};
  read_for_a_while(&warm); /* the parent's rate measured and its anchor taken */
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    mpp_clock_fork_child(); /* as runtime.c's atfork handler does */
    outcome o = {0};
    read_for_a_while(&o);
    if (o.outside || o.backwards) /* which one, for whoever reads a failure */
      fprintf(stderr, "fork child: %llu reads, %llu outside the bound, %llu backwards\n",
              (unsigned long long)o.reads, (unsigned long long)o.outside,
              (unsigned long long)o.backwards);
    _exit(o.outside || o.backwards ? 1 : 0);
  }
  int st;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
}

/* Where the CPU says its TSC is invariant, the reads above came from it: the
 * TSC path is the one tested, not a fallback taken silently. */
static void an_invariant_tsc_is_used(void **state) {
  (void)state;
  if (!cpu_has_invariant_tsc()) skip();
  outcome o = {0};
  read_for_a_while(&o);
  if (!mpp_clock_uses_tsc())
    fail_msg("the CPU says its TSC is invariant, but the clock went back to clock_gettime: the "
             "TSC did not keep the measured rate here (the mpprof line above says by how much)");
}

static void without_tsc_reads_are_clock_gettime(void **state) {
  (void)state;
  outcome o = {0};
  read_for_a_while(&o);
  assert_false(mpp_clock_uses_tsc());
}

int main(void) {
  const struct CMUnitTest tsc[] = {
      cmocka_unit_test(reads_lie_between_clock_realtime_readings_around_them),
      cmocka_unit_test(reads_never_go_back_within_a_thread),
      cmocka_unit_test(other_threads_read_the_same_clock),
      cmocka_unit_test(a_fork_child_reads_the_same_clock),
      cmocka_unit_test(an_invariant_tsc_is_used),
  };
  const struct CMUnitTest plain[] = {
      cmocka_unit_test(reads_lie_between_clock_realtime_readings_around_them),
      cmocka_unit_test(reads_never_go_back_within_a_thread),
      cmocka_unit_test(without_tsc_reads_are_clock_gettime),
  };
  int failed = cmocka_run_group_tests_name("clock, TSC allowed", tsc, with_tsc, NULL);
  return failed +
         cmocka_run_group_tests_name("clock, clock_gettime only", plain, without_tsc, NULL);
}
