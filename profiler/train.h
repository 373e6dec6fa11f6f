/* The training state (train.c): loss scale, steps, first non-finite op. */
#ifndef MPPROF_PROFILER_TRAIN_H
#define MPPROF_PROFILER_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

double mpp_train_scale(void);            /* in force now; 0 when none declared */
bool mpp_train_step(uint64_t *ret_step); /* the step in force; false when none marked */
void mpp_train_init(void);               /* mpp_cfg.loss_scale (mpprof run --loss-scale) */
void mpp_train_reset_child(void);        /* fork child: the log restarts, the state stays */
void mpp_train_reset(void);              /* tests: nothing declared */
void mpp_train_loss_scale(double s);     /* the "loss_scale" mark */
void mpp_train_mark_step(uint64_t n);    /* the "step" mark */
void mpp_train_mark_skipped(uint64_t n); /* the "step_skipped" mark */
/* The earliest op (by start time) whose scanned inputs were finite and whose
 * output held Inf/NaN. */
typedef struct mpp_nonfinite {
  uint32_t site, thread;
  uint64_t call_index, t_ns;
  bool has_step, inputs_scanned;
  uint64_t step;
  double scale; /* 0: none declared */
  const char *role;
  uint64_t count, nans, pos_infs, neg_infs;
} mpp_nonfinite;
void mpp_train_note_nonfinite_locked(const mpp_nonfinite *nf); /* site lock held */
struct mpp_jw;
void mpp_train_write_locked(struct mpp_jw *w); /* the raw "training" object; site lock held */

#endif
