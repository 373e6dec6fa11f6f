/* Host side of the device scan (private to profiler/gpu and tests/gpu): fill
 * the kernel's parameters from an mp_view (thresholds derived from the
 * reference mp_cast_classify), turn the kernel's raw record into an mp_stats,
 * and run the kernel's exact per-element logic on the CPU (for tests). */
#ifndef MPPROF_PROFILER_GPU_SCAN_PLAN_H
#define MPPROF_PROFILER_GPU_SCAN_PLAN_H

#include "analysis/scan.h"
#include "kernels/scan_abi.h"

/* -EINVAL for an unscannable dtype or bad geometry (same rules as mp_scan). */
int mpp_scan_plan(const mp_view *v, mpp_scan_params *ret);
/* The same for a batch by pointer array: v gives each matrix's dtype, rows,
 * cols, ld and (batch) their count; v->data and v->batch_stride are ignored.
 * Matrix b starts at ptrs[b] (a device pointer for the kernel, a host one
 * for mpp_scan_emulate). Never flat. -EINVAL as above or when ptrs is NULL. */
int mpp_scan_plan_ptrs(const mp_view *v, const void *const *ptrs, mpp_scan_params *ret);
/* A finished device record into s (initialised for v's dtype, empty);
 * with p->saturates (set by the caller after planning) an fp8 source's +-max
 * values are counted in s->saturated as mp_count_saturated does. */
void mpp_scan_finish(const mpp_scan_params *p, const mpp_scan_result *r, mp_stats *s);
/* The kernel's algorithm on the CPU, element by element, into r (zeroed by the caller). */
void mpp_scan_emulate(const mpp_scan_params *p, mpp_scan_result *r);
/* Kernel symbol of the one scan kernel ("mpp_scan_ops": CUPTI skips mpp_scan_*). */
const char *mpp_scan_kernel_name(void);
/* Another entry point of the same kernel for the scans set up after this
 * call (tests/gpu/devscan_check --kernel: the variants a fatbin built with
 * MPP_SCAN_VARIANTS carries, kernels/scan.cu). `name` must outlive them. */
void mpp_scan_kernel_select(const char *name);

#endif
