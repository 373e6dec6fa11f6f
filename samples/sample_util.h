/* Small helpers shared by the sample programs: exact 16-bit conversions done
 * on the host (so a sample can build 16-bit operands and reference results
 * without a GPU), a seeded RNG, a byte hash for checksums, option parsing and
 * the "fail loudly" error checks around CUDA calls.
 *
 * The samples are what mpprof profiles; they deliberately use only the public
 * CUDA APIs and never anything from mpprof itself. */
#ifndef MPPROF_SAMPLES_SAMPLE_UTIL_H
#define MPPROF_SAMPLES_SAMPLE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* fp32 -> fp16 / bf16 bits with round-to-nearest-even (overflow -> inf, NaN kept). */
uint16_t su_f32_to_f16(float x);
uint16_t su_f32_to_bf16(float x);
float su_f16_to_f32(uint16_t h);
float su_bf16_to_f32(uint16_t h);

/* Deterministic generator (splitmix64): same sequence for a seed on every platform. */
typedef struct su_rng {
  uint64_t state;
} su_rng;
void su_rng_seed(su_rng *r, uint64_t seed);
uint64_t su_rng_next(su_rng *r);
double su_rng_uniform(su_rng *r, double lo, double hi); /* [lo, hi) */

/* FNV-1a 64 over bytes, chained through `h` (start with SU_FNV_INIT). */
#define SU_FNV_INIT 0xcbf29ce484222325ull
uint64_t su_fnv1a(uint64_t h, const void *data, size_t n);

/* Print "<prog>: <message>" on stderr and exit(1). */
void su_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void su_set_prog(const char *argv0);

/* Strict number parsing for options: the whole string must be a number in range. */
long su_parse_long(const char *opt, const char *s, long lo, long hi);
double su_parse_double(const char *opt, const char *s, double lo, double hi);

/* Fail loudly on a CUDA API error, naming the call. */
#define SU_CHECK_CUDA(call)                                                                        \
  do {                                                                                             \
    cudaError_t su_e_ = (call);                                                                    \
    if (su_e_ != cudaSuccess) su_die("%s failed: %s", #call, cudaGetErrorString(su_e_));           \
  } while (0)
#define SU_CHECK_STATUS(call, ok)                                                                  \
  do {                                                                                             \
    int su_s_ = (int)(call);                                                                       \
    if (su_s_ != (int)(ok)) su_die("%s failed: status %d", #call, su_s_);                          \
  } while (0)

#endif
