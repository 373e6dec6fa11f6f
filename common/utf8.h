/* UTF-8 validity, defined once: libmpprof's JSON writer, the raw-file reader
 * and the report writers all use it, so every string that reaches a report
 * (NVTX names, argv, kernel names, host names) is valid UTF-8. Invalid bytes
 * become MPP_UTF8_REPLACEMENT, one for one (strings keep their length and can
 * be repaired in place). libc only. */
#ifndef MPPROF_COMMON_UTF8_H
#define MPPROF_COMMON_UTF8_H

#include <stddef.h>

#define MPP_UTF8_REPLACEMENT '?'

/* Length (1..4) of the valid UTF-8 sequence at p, at most `avail` bytes
 * long, or 0 when none starts there (stray continuation bytes, overlong
 * forms, surrogates, code points above U+10FFFF, truncated sequences). */
size_t mpp_utf8_seq_len(const unsigned char *p, size_t avail);

/* Where to cut s (at least n bytes, or a NUL within them) to keep at most n
 * bytes without splitting a character: n, or less when s[n] continues a
 * sequence (at most 3 bytes less). */
size_t mpp_utf8_cut(const char *s, size_t n);

/* Replaces every byte of s[0..n) that is not part of a valid sequence;
 * returns how many were replaced. */
size_t mpp_utf8_sanitize(char *s, size_t n);

#endif
