/* JSON key names and schema ids shared by every writer and reader of mpprof
 * files (libmpprof.so's streaming writer, the CLI's cJSON code, the report):
 * the stats and advice objects. The raw file's own keys and its schema id are
 * in analysis/raw_format.h. */
#ifndef MPPROF_ANALYSIS_SCHEMA_KEYS_H
#define MPPROF_ANALYSIS_SCHEMA_KEYS_H

#define MP_SCHEMA_TENSOR "mpprof.tensor/1"
#define MP_SCHEMA_REPORT "mpprof.report/1"
#define MP_SCHEMA_PLAN "mpprof.plan/1"

/* The stats object (mpprof.tensor/1, and every "tensors" entry). */
#define MP_K_DTYPE "dtype"
#define MP_K_COUNT "count"
#define MP_K_ZEROS "zeros"
#define MP_K_NANS "nans"
#define MP_K_POS_INFS "pos_infs"
#define MP_K_NEG_INFS "neg_infs"
#define MP_K_NEGATIVES "negatives"
#define MP_K_SATURATED "saturated" /* written only when non-zero (mp_stats.saturated) */
#define MP_K_MIN "min"
#define MP_K_MAX "max"
#define MP_K_ABSMAX "absmax"
#define MP_K_MIN_ABS_NONZERO "min_abs_nonzero"
#define MP_K_EXP_HIST "exp_hist"
#define MP_K_HIST_LO "lo"
#define MP_K_HIST_HI "hi"
#define MP_K_HIST_COUNTS "counts"
#define MP_K_CASTS "casts"
#define MP_K_ADVICE "advice"

/* mpprof.tensor/1 (`mpprof inspect --json`): the stats object plus these. */
#define MP_K_SCHEMA "schema"
#define MP_K_FILE "file"
#define MP_K_TENSOR "tensor" /* a tensor's name inside FILE (safetensors); absent for .npy/raw */
#define MP_K_SHAPE "shape"

/* The advice object (analysis/advice.h as JSON). */
#define MP_K_ADV_FP16 "fp16"                               /* "safe" | "loss_scale" | "unsafe" */
#define MP_K_ADV_LOSS_SCALE_LOG2 "loss_scale_log2"         /* [a, b] or null */
#define MP_K_ADV_LOSS_SCALE_ESTIMATE "loss_scale_estimate" /* a boundary binade decides an end */
#define MP_K_ADV_FP8_E4M3 "fp8_e4m3"
#define MP_K_ADV_FP8_E5M2 "fp8_e5m2"
#define MP_K_ADV_FITS "fits"
#define MP_K_ADV_SCALE_LOG2 "scale_log2"
#define MP_K_ADV_UNDERFLOW_FRACTION "underflow_fraction"
#define MP_K_ADV_ESTIMATE "estimate" /* underflow_fraction is an upper bound, not exact */
#define MP_K_ADV_RECOMMENDED "recommended"

/* Shadow execution in report.json: the raw keys (analysis/raw_format.h
 * MP_RAW_SHADOW, MP_RAW_SHADOW_CAND) plus these derived ones. */
#define MP_K_SH_SQNR_DB "sqnr_db"
#define MP_K_SH_MEDIAN_REL_L2 "median_rel_l2"
#define MP_K_SH_INPUTS_ALREADY_ROUNDED "inputs_already_rounded"

/* Cast outcome names, indexed by mp_cast_outcome. */
#define MP_CAST_OUTCOME_NAMES                                                                      \
  { "overflow", "underflow", "subnormal", "normal" }

#endif
