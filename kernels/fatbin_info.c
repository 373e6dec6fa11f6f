/* Fatbin table of contents (see fatbin_info.h). The container layout is not
 * documented by NVIDIA; this follows what nvcc 12/13 write and cuobjdump
 * reads: a 16-byte header {u32 magic, u16 version 1, u16 header size, u64
 * payload size} followed by entries {u16 kind (1 PTX, 2 ELF), u16 flags, u32
 * entry header size, u64 payload size, ..., u32 arch at byte 28 (e.g. 90)},
 * each payload following its header. Every field is bounds-checked. */
#include "kernels/fatbin_info.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FATBIN_MAGIC 0xBA55ED50u

static uint64_t rd(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* Walk the entries; with archs != NULL store up to max (kind << 16 | arch). */
static int walk(const unsigned char *b, size_t n, unsigned *archs, int max, size_t *ret_len) {
  if (n < 16 || rd(b, 4) != FATBIN_MAGIC || rd(b + 4, 2) != 1) return -EINVAL;
  uint64_t hs = rd(b + 6, 2), fs = rd(b + 8, 8);
  if (hs < 16 || fs > n || hs > n - fs) return -EINVAL;
  size_t off = hs, end = hs + fs;
  int count = 0;
  while (off < end) {
    if (end - off < 32) return -EINVAL;
    const unsigned char *e = b + off;
    uint64_t kind = rd(e, 2), ehs = rd(e + 4, 4), size = rd(e + 8, 8), arch = rd(e + 28, 4);
    if ((kind != 1 && kind != 2) || ehs < 32 || ehs > end - off || size > end - off - ehs ||
        arch == 0 || arch > 1000)
      return -EINVAL;
    if (archs && count < max) archs[count] = (unsigned)(kind << 16 | arch);
    count++;
    off += ehs + size;
  }
  if (ret_len) *ret_len = end;
  return count;
}

const void *mpp_fatbin_find(const void *blob, size_t n, size_t *ret_len) {
  const unsigned char *b = blob;
  for (size_t off = 0; off + 16 <= n; off += 8) /* embedded fatbins are 8-byte aligned */
    if (rd(b + off, 4) == FATBIN_MAGIC && walk(b + off, n - off, NULL, 0, ret_len) > 0)
      return b + off;
  return NULL;
}

static int cmp_entry(const void *a, const void *b) {
  /* ELF (kind 2) before PTX (kind 1), then by arch. */
  unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
  unsigned kx = x >> 16, ky = y >> 16;
  if (kx != ky) return kx > ky ? -1 : 1;
  return (x & 0xffff) < (y & 0xffff) ? -1 : (x & 0xffff) > (y & 0xffff);
}

int mpp_fatbin_archs(const void *buf, size_t n, char *ret, size_t ret_n) {
  unsigned archs[64];
  int count = walk(buf, n, archs, 64, NULL);
  if (count < 0) return count;
  int kept = count < 64 ? count : 64;
  qsort(archs, (size_t)kept, sizeof archs[0], cmp_entry);
  size_t len = 0;
  if (ret_n) ret[0] = '\0';
  for (int i = 0; i < kept; i++) {
    if (i > 0 && archs[i] == archs[i - 1]) continue; /* one name per arch */
    int w = snprintf(ret + len, ret_n - len, "%s%s_%u", len ? " " : "",
                     (archs[i] >> 16) == 2 ? "sm" : "compute", archs[i] & 0xffff);
    if (w < 0 || (size_t)w >= ret_n - len) return -ENOSPC;
    len += (size_t)w;
  }
  return count;
}
