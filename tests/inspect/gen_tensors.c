/* gen_tensors OUT_DIR: writes the demo tensors, the three situations
 * `mpprof inspect` must tell apart, as fp32 .npy files:
 *
 *   activation.npy      ReLU of N(0,1), 256x1024: fits fp16 as is.
 *   grad_underflow.npy  gradients with |g| in 2^-30 .. 2^-12: over a quarter flush
 *                       to zero in fp16, but a loss scale of 2^5 .. 2^27 brings them in.
 *   overflow.npy        values with |x| in 2^-30 .. 2^20: overflows fp16, and its
 *                       50 binades are more than fp16's ~40 can hold at any scale: bf16.
 *
 * Deterministic (fixed-seed xorshift), so the demo and the tests see the same data. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "report/tensorio/npy.h"

enum { ROWS = 256, COLS = 1024, N = ROWS * COLS };

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform01(void) { /* (0, 1) */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return ((rng_state * 0x2545f4914f6cdd1dull >> 11) + 0.5) * 0x1p-53;
}

static double normal(void) {
  return sqrt(-2 * log(uniform01())) * cos(2 * M_PI * uniform01());
}

/* A random sign times 2^u, u uniform in [lo, hi): an even spread over binades. */
static double log_uniform(double lo, double hi) {
  double m = exp2(lo + (hi - lo) * uniform01());
  return uniform01() < 0.5 ? -m : m;
}

static int write(const char *dir, const char *name, const float *data) {
  char path[4096], err[512];
  const uint64_t shape[2] = {ROWS, COLS};
  snprintf(path, sizeof path, "%s/%s", dir, name);
  if (mpprof_npy_write(path, 1, "<f4", false, 2, shape, data, N * sizeof *data, err, sizeof err) <
      0) {
    fprintf(stderr, "gen_tensors: %s\n", err);
    return -1;
  }
  printf("%s\n", path);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fputs("usage: gen_tensors OUT_DIR\n", stderr);
    return 2;
  }
  float *x = malloc(N * sizeof *x);
  if (!x) return 1;
  int rc = 0;
  for (int i = 0; i < N; i++)
    x[i] = (float)fmax(0, normal());
  rc |= write(argv[1], "activation.npy", x);
  for (int i = 0; i < N; i++)
    x[i] = (float)log_uniform(-30, -12);
  rc |= write(argv[1], "grad_underflow.npy", x);
  for (int i = 0; i < N; i++)
    x[i] = (float)log_uniform(-30, 20);
  rc |= write(argv[1], "overflow.npy", x);
  free(x);
  return rc ? 1 : 0;
}
