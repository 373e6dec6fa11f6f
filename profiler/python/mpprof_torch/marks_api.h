/* What _fast.c (C, stable ABI) and _marks.cpp (C++, built against one
 * torch) hand each other through capsules, so that a backward mark can be a
 * C++ pre-hook on the tensor's grad_fn instead of a Python tensor hook: in
 * backward it runs without the interpreter lock and without wrapping the
 * gradient in a Python tensor (CPU torch 1.13: about 0.25 us a mark, against
 * 1.5-2 us for a Python hook, registration and call together).
 *
 * The rules stay in _fast.c: which module a mark starts or ends (update)
 * and what running it does (fire). _marks.cpp only keeps a mark_state on
 * grad_fn and calls them. */
#ifndef MPPROF_TORCH_MARKS_API_H
#define MPPROF_TORCH_MARKS_API_H

#include <stdint.h>

#define MPP_MARKS_API_VERSION 1
#define MPP_FAST_CAPSULE "mpprof_torch._fast.api"
#define MPP_MARKS_CAPSULE "mpprof_torch._marks.api"

/* One mark: the module whose backward starts there, the one it returns to
 * at its end (each UNSET when not given), the root forward (the number of
 * one, on whichever thread) that set them. */
typedef struct mpp_mark_state {
  int32_t start, end;
  unsigned long gen;
} mpp_mark_state;

/* _fast.c's side. */
typedef struct mpp_fast_api {
  int version; /* MPP_MARKS_API_VERSION */
  /* A fresh mark (fresh = 1) or one found on the tensor again takes start
   * and end by the marking rule. The interpreter lock is held. */
  void (*update)(mpp_mark_state *m, int32_t start, int32_t end, int fresh);
  /* Backward reached the mark: sets the calling (autograd) thread's scope.
   * No interpreter lock; touches no Python object. */
  void (*fire)(const mpp_mark_state *m);
} mpp_fast_api;

/* _marks.cpp's side. */
typedef struct mpp_marks_api {
  int version; /* MPP_MARKS_API_VERSION */
  /* x (exactly a torch.Tensor, the lock held) gets its mark: 1 done (a
   * tensor that needs no gradient or is a leaf needs none), 0 leave it to
   * the Python hook (nothing changed, no exception set). */
  int (*mark)(void *x, int32_t start, int32_t end);
  /* The C++ marks on x's grad_fn (x exactly a torch.Tensor, the lock
   * held): 0 or 1 (a mark found again is updated, not added). */
  int (*count)(void *x);
} mpp_marks_api;

#endif
