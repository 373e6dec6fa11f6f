/* The host scanner's plain C paths: every value through acc_value() (the
 * reference the fast paths must match), and, for 8- and 16-bit sources, bit
 * pattern counts (2^16 / 2^8 counters) folded into the record once per
 * pattern seen, with its multiplicity. */
#include <stdint.h>
#include <string.h>

#include "analysis/convert.h"
#include "analysis/scan_internal.h"

void mp_scan_portable_run(mp_stats *s, const src_info *I, mp_dtype d, const void *p, uint64_t n) {
  switch (d) {
  case MP_FP64: {
    const double *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, q[i], 1);
    break;
  }
  case MP_FP32: {
    const float *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, q[i], 1);
    break;
  }
  case MP_FP16: {
    const uint16_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_fp16_to_float(q[i]), 1);
    break;
  }
  case MP_BF16: {
    const uint16_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_bf16_to_float(q[i]), 1);
    break;
  }
  case MP_FP8_E4M3: {
    const uint8_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_e4m3_to_float(q[i]), 1);
    break;
  }
  case MP_FP8_E5M2: {
    const uint8_t *q = p;
    for (uint64_t i = 0; i < n; i++)
      acc_value(s, I, mp_e5m2_to_float(q[i]), 1);
    break;
  }
  default:
    break;
  }
}

/* ---- pattern counting for 8- and 16-bit sources ------------------------- */

/* Counters are 32-bit; a fold every PATTERN_FOLD_EVERY values keeps them from
 * wrapping. */
#define PATTERN_FOLD_EVERY (1u << 31)

static double decode_pattern(mp_dtype d, uint32_t v) {
  switch (d) {
  case MP_FP16:
    return mp_fp16_to_float((uint16_t)v);
  case MP_BF16:
    return mp_bf16_to_float((uint16_t)v);
  case MP_FP8_E4M3:
    return mp_e4m3_to_float((uint8_t)v);
  default:
    return mp_e5m2_to_float((uint8_t)v);
  }
}

void mp_scan_pattern_fold(mp_stats *s, const src_info *I, mp_dtype d, pattern_counts *P) {
  uint32_t size = 1u << P->bits;
  for (uint32_t v = 0; v < size; v++) {
    uint64_t c = 0;
    for (unsigned b = 0; b < P->banks; b++) {
      c += P->cnt[b * size + v];
      P->cnt[b * size + v] = 0;
    }
    if (c) acc_value(s, I, decode_pattern(d, v), c);
  }
  P->pending = 0;
}

void mp_scan_pattern_run(mp_stats *s, const src_info *I, mp_dtype d, pattern_counts *P,
                         const void *p, uint64_t n) {
  while (n > 0) {
    uint64_t room = PATTERN_FOLD_EVERY - P->pending;
    uint64_t m = n < room ? n : room;
    /* 64-bit loads, patterns taken out with shifts: fewer loads, and the
     * counter stores cannot be mistaken for writes to the source. */
    const unsigned char *q = p;
    uint64_t i = 0;
    if (P->bits == 16) {
      uint32_t *c0 = P->cnt, *c1 = P->cnt + 65536;
      for (; i + 4 <= m; i += 4) {
        uint64_t w;
        memcpy(&w, q + 2 * i, 8);
        c0[w & 0xffff]++;
        c1[(w >> 16) & 0xffff]++;
        c0[(w >> 32) & 0xffff]++;
        c1[w >> 48]++;
      }
      for (; i < m; i++) {
        uint16_t h;
        memcpy(&h, q + 2 * i, 2);
        c0[h]++;
      }
      p = q + 2 * m;
    } else {
      uint32_t *c = P->cnt;
      for (; i + 8 <= m; i += 8) {
        uint64_t w;
        memcpy(&w, q + i, 8);
        c[w & 0xff]++;
        c[256 + ((w >> 8) & 0xff)]++;
        c[512 + ((w >> 16) & 0xff)]++;
        c[768 + ((w >> 24) & 0xff)]++;
        c[1024 + ((w >> 32) & 0xff)]++;
        c[1280 + ((w >> 40) & 0xff)]++;
        c[1536 + ((w >> 48) & 0xff)]++;
        c[1792 + (w >> 56)]++;
      }
      for (; i < m; i++)
        c[q[i]]++;
      p = q + m;
    }
    P->pending += m;
    n -= m;
    if (P->pending == PATTERN_FOLD_EVERY) mp_scan_pattern_fold(s, I, d, P);
  }
}
