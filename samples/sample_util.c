/* Helpers shared by the samples: exact host conversions to and from fp16 and
 * bf16, a seeded RNG, FNV-1a hashing, strict option parsing and error exits.
 * The conversions are written out here (bit manipulation, RNE) rather than
 * borrowed from the compiler so that the results do not depend on _Float16
 * support or on the FPU's rounding mode. */
#include "sample_util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *su_prog = "sample";

void su_set_prog(const char *argv0) {
  const char *slash = strrchr(argv0, '/');
  su_prog = slash ? slash + 1 : argv0;
}

void su_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", su_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

static float bits_f32(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

uint16_t su_f32_to_f16(float x) {
  uint32_t u = f32_bits(x);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t exp = (u >> 23) & 0xffu;
  uint32_t man = u & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0)); /* inf / NaN */
  int e = (int)exp - 127 + 15; /* fp16 biased exponent */
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    /* Subnormal (or zero) in fp16: shift the full significand, round to nearest even. */
    if (e < -10) return sign; /* below half the smallest subnormal, even after rounding */
    uint32_t sig = man | 0x800000u;
    int shift = 14 - e; /* 24-bit significand down to the subnormal grid */
    uint32_t q = sig >> shift;
    uint32_t rem = sig & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q); /* q may carry into the smallest normal: still correct */
  }
  uint32_t q = ((uint32_t)e << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) q++; /* carry may reach inf: correct */
  return (uint16_t)(sign | q);
}

float su_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    float v = ldexpf((float)man, -24);
    return sign ? -v : v;
  }
  return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}

uint16_t su_f32_to_bf16(float x) {
  uint32_t u = f32_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu))
    return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  uint32_t rem = u & 0xffffu;
  uint32_t q = u >> 16;
  if (rem > 0x8000u || (rem == 0x8000u && (q & 1))) q++;
  return (uint16_t)q;
}

float su_bf16_to_f32(uint16_t h) {
  return bits_f32((uint32_t)h << 16);
}

void su_rng_seed(su_rng *r, uint64_t seed) {
  r->state = seed;
}

uint64_t su_rng_next(su_rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double su_rng_uniform(su_rng *r, double lo, double hi) {
  double u = (double)(su_rng_next(r) >> 11) * 0x1.0p-53;
  return lo + (hi - lo) * u;
}

uint64_t su_fnv1a(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

long su_parse_long(const char *opt, const char *s, long lo, long hi) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi)
    su_die("%s: expected an integer in [%ld, %ld], got '%s'", opt, lo, hi, s);
  return v;
}

double su_parse_double(const char *opt, const char *s, double lo, double hi) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= lo && v <= hi))
    su_die("%s: expected a number in [%g, %g], got '%s'", opt, lo, hi, s);
  return v;
}
