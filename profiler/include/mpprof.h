/* mpprof.h: what a program (or the PyTorch integration) may tell mpprof
 * directly, through functions exported by libmpprof.so.
 *
 * A program usually declares its loss scale and steps through NVTX instead
 * (domain "mpprof", marks "loss_scale", "step", "step_skipped"; README.md),
 * which costs nothing without mpprof. These functions have the same meaning as
 * those marks; look them up with dlsym(RTLD_DEFAULT, "mpprof_loss_scale") so a
 * program that runs without mpprof does not need the library. All are
 * process-wide, callable from any thread, and do nothing under
 * MPPROF_DISABLE=1. */
#ifndef MPPROF_H
#define MPPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Gradients computed from now on, on every thread of this process, carry the
 * factor s (s > 0 and finite; other values are counted as invalid and
 * ignored), until the next call. */
void mpprof_loss_scale(double s);
/* Step n starts now. */
void mpprof_step(uint64_t n);
/* Step n's update was skipped (its gradients were not finite). */
void mpprof_step_skipped(uint64_t n);

#ifdef __cplusplus
}
#endif

#endif
