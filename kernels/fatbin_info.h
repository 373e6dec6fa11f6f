/* Reading the table of contents of a CUDA fatbin (the fatbinary container,
 * magic 0xBA55ED50): which SASS (ELF) and PTX architectures it holds. Used by
 * `mpprof --version` on the fatbin embedded in libmpprof.so, and by tests. */
#ifndef MPPROF_KERNELS_FATBIN_INFO_H
#define MPPROF_KERNELS_FATBIN_INFO_H

#include <stddef.h>

/* Find the first well-formed fatbin inside a larger blob (e.g. a shared
 * library's bytes). NULL when none; *ret_len gets its total length. */
const void *mpp_fatbin_find(const void *blob, size_t n, size_t *ret_len);
/* Write the architectures of the fatbin at buf as "sm_75 sm_80 ... compute_100"
 * (SASS ascending, then PTX ascending). Returns the number of entries, or
 * -EINVAL when buf is not a well-formed fatbin, -ENOSPC when ret is too small. */
int mpp_fatbin_archs(const void *buf, size_t n, char *ret, size_t ret_n);

#endif
