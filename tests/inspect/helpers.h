/* Shared by the tests in tests/inspect: a private temporary directory that
 * every test writes its files into, .npy images built byte by byte (so that
 * malformed ones are easy to make), and record comparison. */
#ifndef MPPROF_TESTS_INSPECT_HELPERS_H
#define MPPROF_TESTS_INSPECT_HELPERS_H

#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/stats.h"

static char tmp_dir[256] __attribute__((unused));

static inline int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static inline int make_tmp_dir(void **state) {
  (void)state;
  const char *base = getenv("TMPDIR");
  snprintf(tmp_dir, sizeof tmp_dir, "%s/mpprof-inspect-XXXXXX", base && *base ? base : "/tmp");
  return mkdtemp(tmp_dir) ? 0 : -1;
}

static inline int remove_tmp_dir(void **state) {
  (void)state;
  return nftw(tmp_dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A path in the temporary directory (static buffer, rotates among 16). */
static inline const char *tmp_path(const char *name) {
  static char bufs[16][512];
  static int next;
  char *b = bufs[next++ % 16];
  snprintf(b, sizeof bufs[0], "%s/%s", tmp_dir, name);
  return b;
}

static inline void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", path);
    abort();
  }
}

/* A .npy image: magic, version, header length, the dict padded with spaces to
 * a multiple of `align` and ended with '\n', then data. Caller frees. */
static inline unsigned char *npy_image(int version, const char *dict, size_t align,
                                       const void *data, size_t nbytes, size_t *ret_len) {
  const size_t pre = version == 1 ? 10 : 12;
  size_t total = pre + strlen(dict) + 1;
  if (align > 1) total = (total + align - 1) / align * align;
  const size_t hlen = total - pre;
  unsigned char *b = malloc(total + nbytes + 1);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)version;
  b[7] = 0;
  for (size_t i = 0; i < pre - 8; i++)
    b[8 + i] = (unsigned char)(hlen >> (8 * i));
  memset(b + pre, ' ', hlen);
  memcpy(b + pre, dict, strlen(dict));
  b[total - 1] = '\n';
  if (nbytes) memcpy(b + total, data, nbytes);
  *ret_len = total + nbytes;
  return b;
}

static inline void write_npy(const char *path, int version, const char *dict, const void *data,
                             size_t nbytes) {
  size_t len;
  unsigned char *b = npy_image(version, dict, 64, data, nbytes, &len);
  write_bytes(path, b, len);
  free(b);
}

/* Bit-for-bit equality of two records, field by field (padding excluded). */
static inline int stats_identical(const mp_stats *a, const mp_stats *b) {
  return a->dtype == b->dtype && a->hist_lo == b->hist_lo && a->hist_hi == b->hist_hi &&
         a->count == b->count && a->zeros == b->zeros && a->nans == b->nans &&
         a->pos_infs == b->pos_infs && a->neg_infs == b->neg_infs && a->negatives == b->negatives &&
         !memcmp(&a->min, &b->min, sizeof a->min) && !memcmp(&a->max, &b->max, sizeof a->max) &&
         !memcmp(&a->absmax, &b->absmax, sizeof a->absmax) &&
         !memcmp(&a->min_abs_nonzero, &b->min_abs_nonzero, sizeof a->min_abs_nonzero) &&
         !memcmp(a->casts, b->casts, sizeof a->casts) &&
         !memcmp(a->exp_hist, b->exp_hist, sizeof a->exp_hist);
}

#endif
