/* Test data for scan checks (CPU emulation here, the real kernel on a GPU):
 * random values over many binades mixed with every boundary of every target
 * format, zeros of both signs, NaN and infinities; and a bitwise record diff. */
#ifndef MPPROF_TESTS_GPU_SCAN_DATA_H
#define MPPROF_TESTS_GPU_SCAN_DATA_H

#include <errno.h>
#include <math.h>
#include <stdint.h>

#include "analysis/stats.h"

/* malloc'd buffer of n elements of dtype (caller frees). */
void *mpp_scan_test_data(mp_dtype dtype, uint64_t n, uint64_t seed);
/* malloc'd buffer of n draws of N(0, 1) rounded to dtype, as activations and
 * gradients mostly are: few binades, no boundary values (the realistic case
 * the device scan's bandwidth aim is stated for). */
void *mpp_scan_normal_data(mp_dtype dtype, uint64_t n, uint64_t seed);
/* NULL when a and b are identical bit for bit, else the name of the first differing field. */
const char *mpp_stats_diff(const mp_stats *a, const mp_stats *b);

#endif
