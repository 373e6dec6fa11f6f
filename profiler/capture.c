/* The capture range (`mpprof run --capture-range`, --steps): an op call is
 * recorded only inside it; calls outside run as always and are only counted,
 * by reason (MP_RAW_CAPTURE_OUTSIDE), so the report can say what it covers.
 *
 *  - cudaProfilerApi: between a cudaProfilerStart (or cuProfilerStart) and the
 *    next stop, process-wide, every such interval (hooks/profiler_api.c).
 *  - nvtx: while any thread is inside a push/pop range whose message is NAME
 *    (any domain; nvtx.c tells us of pushes and pops of it).
 *  - steps: while the step in force (train.c) is in [A, B].
 *
 * The state is a few atomics read on every hooked call. */
#include "mpp.h"

#include <stdatomic.h>
#include <string.h>

#include "analysis/raw_format.h"
#include "jsonw.h"
#include "profiler/capture.h"
#include "profiler/train.h"

static atomic_bool api_on, api_seen;
static atomic_int nvtx_inside;
static atomic_bool nvtx_seen, step_seen;
static atomic_uint_fast64_t captured, outside[2];

enum { NOT_STARTED = 0, STOPPED = 1 };

static int reason(void) {
  const mp_capture *c = &mpp_cfg.capture;
  uint64_t step;
  switch (c->mode) {
  case MP_CAPTURE_PROFILER_API:
    if (atomic_load_explicit(&api_on, memory_order_relaxed)) return -1;
    return atomic_load_explicit(&api_seen, memory_order_relaxed) ? STOPPED : NOT_STARTED;
  case MP_CAPTURE_NVTX:
    if (atomic_load_explicit(&nvtx_inside, memory_order_relaxed) > 0) return -1;
    return atomic_load_explicit(&nvtx_seen, memory_order_relaxed) ? STOPPED : NOT_STARTED;
  case MP_CAPTURE_STEPS:
    if (!mpp_train_step(&step) || step < c->first) return NOT_STARTED;
    if (step > c->last) return STOPPED; /* opened only if a call ran inside (step_seen) */
    if (!atomic_load_explicit(&step_seen, memory_order_relaxed))
      atomic_store_explicit(&step_seen, true, memory_order_relaxed);
    return -1;
  default:
    return -1;
  }
}

bool mpp_capture_inside(void) {
  return reason() < 0;
}

int mpp_capture_check(void) {
  int r = reason();
  atomic_fetch_add_explicit(r < 0 ? &captured : &outside[r], 1, memory_order_relaxed);
  return r;
}

void mpp_capture_profiler(bool start) {
  if (start) atomic_store(&api_seen, true);
  atomic_store(&api_on, start);
}

bool mpp_capture_nvtx_push(const char *name) {
  if (mpp_cfg.capture.mode != MP_CAPTURE_NVTX || !name || strcmp(name, mpp_cfg.capture.nvtx))
    return false;
  atomic_store(&nvtx_seen, true);
  atomic_fetch_add(&nvtx_inside, 1);
  return true;
}

void mpp_capture_nvtx_pop(void) {
  atomic_fetch_sub(&nvtx_inside, 1);
}

void mpp_capture_reset_counts(void) {
  atomic_store(&captured, 0);
  atomic_store(&outside[0], 0);
  atomic_store(&outside[1], 0);
}

/* The raw file's "capture" object (MP_RAW_CAPTURE). */
void mpp_capture_write(struct mpp_jw *w) {
  const mp_capture *c = &mpp_cfg.capture;
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_CAPTURE.mode);
  mpp_jw_str(w, mp_capture_mode_name(c->mode));
  mpp_jw_key(w, MP_RK_CAPTURE.nvtx);
  mpp_jw_str(w, c->mode == MP_CAPTURE_NVTX ? c->nvtx : NULL);
  mpp_jw_key(w, MP_RK_CAPTURE.steps);
  if (c->mode == MP_CAPTURE_STEPS) {
    mpp_jw_arr(w);
    mpp_jw_uint(w, c->first);
    mpp_jw_uint(w, c->last);
    mpp_jw_arr_end(w);
  } else {
    mpp_jw_null(w);
  }
  mpp_jw_key(w, MP_RK_CAPTURE.captured);
  mpp_jw_uint(w, atomic_load(&captured));
  mpp_jw_key(w, MP_RK_CAPTURE.opened);
  mpp_jw_bool(w, c->mode == MP_CAPTURE_PROFILER_API ? atomic_load(&api_seen)
                 : c->mode == MP_CAPTURE_NVTX       ? atomic_load(&nvtx_seen)
                 : c->mode == MP_CAPTURE_STEPS      ? atomic_load(&step_seen)
                                                    : true);
  mpp_jw_key(w, MP_RK_CAPTURE.outside);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_CAPTURE_OUTSIDE.NOT_STARTED);
  mpp_jw_uint(w, atomic_load(&outside[NOT_STARTED]));
  mpp_jw_key(w, MP_RK_CAPTURE_OUTSIDE.STOPPED);
  mpp_jw_uint(w, atomic_load(&outside[STOPPED]));
  mpp_jw_obj_end(w);
  mpp_jw_obj_end(w);
}
