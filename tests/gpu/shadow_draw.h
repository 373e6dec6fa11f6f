/* Test values for the shadow tests (C and C++): an xorshift32 stream and
 * values drawn from it over many binades, both signs and some zeros, so
 * every candidate cast overflows, flushes or saturates somewhere. */
#ifndef MPPROF_TESTS_GPU_SHADOW_DRAW_H
#define MPPROF_TESTS_GPU_SHADOW_DRAW_H

#include <math.h>
#include <stdint.h>

static inline uint32_t mpp_test_rand(uint32_t *state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *state = x;
}

/* +-m * 2^e, m uniform in [1, 2), e uniform in [-spread, spread]; 0 one time in 31. */
static inline double mpp_test_draw(uint32_t *state, int spread) {
  uint32_t r = mpp_test_rand(state);
  if (r % 31 == 0) return 0.0;
  double m = 1.0 + (double)(r >> 8) / 16777216.0;
  int e = (int)(mpp_test_rand(state) % (unsigned)(2 * spread + 1)) - spread;
  return ((r & 1) ? -m : m) * ldexp(1.0, e);
}

#endif
