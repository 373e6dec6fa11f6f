/* The training state a program declares: the loss scale in force, the step
 * that runs, the steps whose update was skipped (NVTX domain "mpprof", decoded
 * in nvtx.c, or the mpprof.h functions below; `mpprof run --loss-scale S`
 * gives the scale of a program that declares none). Process-wide: any thread
 * may declare, and every call reads the scale and step in force when it
 * begins. A fork child inherits the state in force; its log starts again.
 *
 * The values in force are atomics (read on every hooked call); the log the
 * raw file shows (scale changes, per-step scales, skipped steps, the first
 * op that produced Inf/NaN) is bounded and kept under the site lock. */
#include "mpp.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/advice.h"
#include "analysis/raw_format.h"
#include "jsonw.h"
#include "profiler/include/mpprof.h"
#include "profiler/sites.h"
#include "profiler/train.h"

#define MAX_CHANGES 4096
#define MAX_SEGMENTS 4096
#define MAX_SKIPPED_LISTED 1024

static _Atomic uint64_t scale_bits; /* the double in force; 0: none declared */
static _Atomic uint64_t step_plus1; /* the step in force + 1; 0: none marked */

typedef struct change {
  double scale;
  bool has_step;
  uint64_t step;
  uint64_t t_ns;
} change;

typedef struct segment { /* consecutive marked steps with one scale (0: none declared) */
  uint64_t first, last;
  double scale;
} segment;

static struct {
  const char *source; /* "option" | "marks" | NULL */
  change changes[MAX_CHANGES];
  uint32_t nchanges;
  uint64_t changes_dropped;
  uint64_t steps_marked, first_step, last_step;
  segment seg[MAX_SEGMENTS];
  uint32_t nseg;
  uint64_t seg_dropped;
  uint64_t skipped;
  uint64_t skipped_list[MAX_SKIPPED_LISTED];
  uint32_t nskipped_listed;
  uint64_t invalid;
  bool has_nonfinite;
  mpp_nonfinite nonfinite;
} lg;

static double bits_to_double(uint64_t b) {
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
}

double mpp_train_scale(void) {
  return bits_to_double(atomic_load_explicit(&scale_bits, memory_order_relaxed));
}

bool mpp_train_step(uint64_t *ret_step) {
  uint64_t s = atomic_load_explicit(&step_plus1, memory_order_relaxed);
  *ret_step = s ? s - 1 : 0;
  return s != 0;
}

static void log_change_locked(double s) {
  if (lg.nchanges == MAX_CHANGES) {
    lg.changes_dropped++;
    return;
  }
  change *c = &lg.changes[lg.nchanges++];
  c->scale = s;
  c->has_step = mpp_train_step(&c->step);
  c->t_ns = mpp_now_ns();
}

/* The step in force was marked while no scale was: it runs under the first
 * one declared in it (a GradScaler declares its scale at its first
 * scale(loss), after step 0's forward began), in the per-step runs too. */
static void scale_unscaled_step_locked(double s) {
  uint64_t n;
  if (!lg.nseg || !mpp_train_step(&n)) return;
  segment *g = &lg.seg[lg.nseg - 1];
  if (g->scale != 0 || g->last != n) return;
  if (g->first < n) { /* earlier steps of the run keep no scale */
    g->last = n - 1;
    if (lg.nseg == MAX_SEGMENTS) {
      lg.seg_dropped++;
      return;
    }
    g = &lg.seg[lg.nseg++];
    *g = (segment){n, n, 0};
  }
  g->scale = s; /* (no run before it has a scale: none was declared before) */
}

static void set_scale(double s, const char *source) {
  uint64_t b;
  memcpy(&b, &s, sizeof b);
  atomic_store(&scale_bits, b);
  mpp_sites_lock();
  lg.source = source;
  log_change_locked(s);
  scale_unscaled_step_locked(s);
  mpp_sites_unlock();
}

void mpp_train_init(void) {
  if (mpp_cfg.loss_scale > 0) set_scale(mpp_cfg.loss_scale, "option");
}

void mpp_train_reset(void) {
  atomic_store(&scale_bits, 0);
  atomic_store(&step_plus1, 0);
  memset(&lg, 0, sizeof lg);
}

void mpp_train_reset_child(void) {
  double s = mpp_train_scale();
  const char *source = lg.source;
  memset(&lg, 0, sizeof lg);
  lg.source = source;
  if (s > 0) log_change_locked(s); /* the child's gradients carry the scale in force */
}

static void note_invalid(void) {
  mpp_sites_lock();
  lg.invalid++;
  mpp_sites_unlock();
}

void mpp_train_loss_scale(double s) {
  if (!mp_loss_scale_valid(s)) {
    note_invalid();
    return;
  }
  set_scale(s, "marks");
}

void mpp_train_mark_step(uint64_t n) {
  if (n == UINT64_MAX) { /* the step + 1 must fit */
    note_invalid();
    return;
  }
  atomic_store(&step_plus1, n + 1);
  double s = mpp_train_scale();
  mpp_sites_lock();
  if (lg.steps_marked++ == 0) lg.first_step = n;
  lg.last_step = n;
  segment *g = lg.nseg ? &lg.seg[lg.nseg - 1] : NULL;
  if (g && g->scale == s && (g->last == n || g->last + 1 == n))
    g->last = n; /* the next step, or the same one marked again */
  else if (lg.nseg < MAX_SEGMENTS)
    lg.seg[lg.nseg++] = (segment){n, n, s};
  else
    lg.seg_dropped++;
  mpp_sites_unlock();
}

void mpp_train_mark_skipped(uint64_t n) {
  mpp_sites_lock();
  if (lg.skipped++ < MAX_SKIPPED_LISTED) lg.skipped_list[lg.nskipped_listed++] = n;
  mpp_sites_unlock();
}

void mpp_train_note_nonfinite_locked(const mpp_nonfinite *nf) {
  if (lg.has_nonfinite && lg.nonfinite.t_ns <= nf->t_ns) return;
  lg.nonfinite = *nf;
  lg.has_nonfinite = true;
}

/* --- the raw file's "training" object (MP_RAW_TRAINING, analysis/raw_format.h) --- */

static void key_scale(mpp_jw *w, const char *k, double s) {
  mpp_jw_key(w, k);
  if (s > 0)
    mpp_jw_double(w, s);
  else
    mpp_jw_null(w);
}

static void key_step(mpp_jw *w, const char *k, bool has, uint64_t step) {
  mpp_jw_key(w, k);
  if (has)
    mpp_jw_uint(w, step);
  else
    mpp_jw_null(w);
}

static void write_nonfinite(mpp_jw *w, const mpp_nonfinite *nf) {
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_NONFINITE.site);
  mpp_jw_uint(w, nf->site);
  mpp_jw_key(w, MP_RK_NONFINITE.call_index);
  mpp_jw_uint(w, nf->call_index);
  mpp_jw_key(w, MP_RK_NONFINITE.t_ns);
  mpp_jw_uint(w, nf->t_ns);
  mpp_jw_key(w, MP_RK_NONFINITE.thread);
  mpp_jw_uint(w, nf->thread);
  key_step(w, MP_RK_NONFINITE.step, nf->has_step, nf->step);
  key_scale(w, MP_RK_NONFINITE.loss_scale, nf->scale);
  mpp_jw_key(w, MP_RK_NONFINITE.role);
  mpp_jw_str(w, nf->role);
  mpp_jw_key(w, MP_RK_NONFINITE.inputs_scanned);
  mpp_jw_bool(w, nf->inputs_scanned);
  mpp_jw_key(w, MP_RK_NONFINITE.count);
  mpp_jw_uint(w, nf->count);
  mpp_jw_key(w, MP_RK_NONFINITE.nans);
  mpp_jw_uint(w, nf->nans);
  mpp_jw_key(w, MP_RK_NONFINITE.pos_infs);
  mpp_jw_uint(w, nf->pos_infs);
  mpp_jw_key(w, MP_RK_NONFINITE.neg_infs);
  mpp_jw_uint(w, nf->neg_infs);
  mpp_jw_obj_end(w);
}

void mpp_train_write_locked(mpp_jw *w) {
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_TRAINING.loss_scale_source);
  mpp_jw_str(w, lg.source);
  key_scale(w, MP_RK_TRAINING.loss_scale, mpp_train_scale());
  mpp_jw_key(w, MP_RK_TRAINING.scale_changes);
  mpp_jw_arr(w);
  for (uint32_t i = 0; i < lg.nchanges; i++) {
    mpp_jw_obj(w);
    key_scale(w, MP_RK_SCALE_CHANGE.scale, lg.changes[i].scale);
    key_step(w, MP_RK_SCALE_CHANGE.step, lg.changes[i].has_step, lg.changes[i].step);
    mpp_jw_key(w, MP_RK_SCALE_CHANGE.t_ns);
    mpp_jw_uint(w, lg.changes[i].t_ns);
    mpp_jw_obj_end(w);
  }
  mpp_jw_arr_end(w);
  mpp_jw_key(w, MP_RK_TRAINING.scale_changes_dropped);
  mpp_jw_uint(w, lg.changes_dropped);
  mpp_jw_key(w, MP_RK_TRAINING.steps);
  if (lg.steps_marked) {
    mpp_jw_obj(w);
    mpp_jw_key(w, MP_RK_STEPS.marked);
    mpp_jw_uint(w, lg.steps_marked);
    mpp_jw_key(w, MP_RK_STEPS.first);
    mpp_jw_uint(w, lg.first_step);
    mpp_jw_key(w, MP_RK_STEPS.last);
    mpp_jw_uint(w, lg.last_step);
    mpp_jw_obj_end(w);
  } else {
    mpp_jw_null(w);
  }
  mpp_jw_key(w, MP_RK_TRAINING.step_scales);
  mpp_jw_arr(w);
  for (uint32_t i = 0; i < lg.nseg; i++) {
    mpp_jw_obj(w);
    mpp_jw_key(w, MP_RK_STEP_SCALE.first);
    mpp_jw_uint(w, lg.seg[i].first);
    mpp_jw_key(w, MP_RK_STEP_SCALE.last);
    mpp_jw_uint(w, lg.seg[i].last);
    key_scale(w, MP_RK_STEP_SCALE.scale, lg.seg[i].scale);
    mpp_jw_obj_end(w);
  }
  mpp_jw_arr_end(w);
  mpp_jw_key(w, MP_RK_TRAINING.step_scales_dropped);
  mpp_jw_uint(w, lg.seg_dropped);
  mpp_jw_key(w, MP_RK_TRAINING.skipped_steps);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_SKIPPED.count);
  mpp_jw_uint(w, lg.skipped);
  mpp_jw_key(w, MP_RK_SKIPPED.steps);
  mpp_jw_arr(w);
  for (uint32_t i = 0; i < lg.nskipped_listed; i++)
    mpp_jw_uint(w, lg.skipped_list[i]);
  mpp_jw_arr_end(w);
  mpp_jw_obj_end(w);
  mpp_jw_key(w, MP_RK_TRAINING.invalid_marks);
  mpp_jw_uint(w, lg.invalid);
  mpp_jw_key(w, MP_RK_TRAINING.first_nonfinite);
  if (lg.has_nonfinite)
    write_nonfinite(w, &lg.nonfinite);
  else
    mpp_jw_null(w);
  mpp_jw_obj_end(w);
}
