/* UTF-8 validity and repair (see utf8.h). */
#include "common/utf8.h"

#include <stdint.h>
#include <string.h>

size_t mpp_utf8_seq_len(const unsigned char *p, size_t avail) {
  if (avail == 0) return 0;
  if (p[0] < 0x80) return 1;
  size_t n = p[0] >= 0xf0 && p[0] <= 0xf4  ? 4
             : p[0] >= 0xe0 && p[0] < 0xf0 ? 3
             : p[0] >= 0xc2 && p[0] < 0xe0 ? 2
                                           : 0;
  if (n == 0 || n > avail) return 0;
  for (size_t i = 1; i < n; i++)
    if ((p[i] & 0xc0) != 0x80) return 0;
  /* Overlong 3/4-byte forms, surrogates and code points above U+10FFFF. */
  if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
      (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
    return 0;
  return n;
}

size_t mpp_utf8_cut(const char *s, size_t n) {
  for (size_t back = 0; back < 3 && n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80; back++)
    n--;
  return n;
}

size_t mpp_utf8_sanitize(char *s, size_t n) {
  size_t replaced = 0;
  unsigned char *p = (unsigned char *)s;
  for (size_t i = 0; i < n;) {
    uint64_t eight;
    if (i + 8 <= n && (memcpy(&eight, p + i, 8), !(eight & 0x8080808080808080ull))) {
      i += 8; /* the common case: eight ASCII bytes (raw files of 100s of MB) */
      continue;
    }
    if (p[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = mpp_utf8_seq_len(p + i, n - i);
    if (k == 0) {
      p[i++] = MPP_UTF8_REPLACEMENT;
      replaced++;
    } else {
      i += k;
    }
  }
  return replaced;
}
