/* Shadow execution: what error would each candidate precision really cause in
 * one GEMM? Definitions of the reference, the candidates (casts, FP8 scaling
 * recipes), the error metrics and their merge, shared by libmpprof's host path
 * and the tests (docs/numerics.md, "Shadow execution").
 *
 * The product measured is P = alpha * op(A) * op(B) of every batch matrix,
 * with a cuBLASLt epilogue that changes D applied to it (bias, ReLU, GELU:
 * mp_shadow_gemm.epilogue); C and beta are the same for every candidate and
 * are left out. The reference accumulates in double from the operands' exact values;
 * a candidate rounds A and B to its format (RNE, analysis/convert.h casts),
 * accumulates in fp32 (fmaf, k ascending; the current precision of a call of
 * compute type 16F in fp16: mp_shadow_gemm.accum) and rounds the output to its output
 * type. Metrics are taken over all m*n*batch outputs whose reference is finite. */
#ifndef MPPROF_ANALYSIS_SHADOW_H
#define MPPROF_ANALYSIS_SHADOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "formats.h"
#include "shadow_core.h" /* MP_SHADOW_MX_BLOCK and the per-value definitions */
#include "stats.h"

#define MP_SHADOW_HISTORY_LEN 1024 /* delayed scaling: Transformer Engine's amax_history_len */
#define MP_SHADOW_DEFAULT_MAX_REL 0x1p-8 /* verdict: largest rel_l2 a candidate may cause */
#define MP_SHADOW_MEDIAN_SAMPLES 128     /* rel_l2 values kept per candidate for the median */

/* Candidate precisions; mp_shadow_cand_name() is the JSON key. */
typedef enum mp_shadow_cand {
  MP_SH_CURRENT = 0,  /* the call's own dtypes (tf32 when it computes in tf32), its accumulation
                         (fp32; fp16 for compute type 16F: mp_shadow_gemm.accum; fp64 for fp64) */
  MP_SH_FP16,         /* fp16 operands at scale 1, fp32 accumulation, fp16 output */
  MP_SH_FP16_SCALED,  /* fp16 operands at each operand's loss scale (gradients), fp16 output */
  MP_SH_BF16,         /* bf16 operands, bf16 output */
  MP_SH_E4M3_CURRENT, /* e4m3, per-tensor current scaling, bf16 output */
  MP_SH_E4M3_DELAYED, /* e4m3, delayed scaling (amax history of earlier shadowed calls) */
  MP_SH_MXFP8_E4M3,   /* e4m3, E8M0 scale per 32-element block along k */
  MP_SH_E5M2_CURRENT, /* likewise with e5m2 (gradients) */
  MP_SH_E5M2_DELAYED,
  MP_SH_MXFP8_E5M2,
  MP_SH_COUNT
} mp_shadow_cand;

const char *mp_shadow_cand_name(mp_shadow_cand c); /* "fp16", "fp8_e4m3_delayed", ... */
int mp_shadow_cand_from_name(const char *name);    /* -1 when unknown */
/* Operand format of a candidate (MP_DTYPE_INVALID for current). */
mp_dtype mp_shadow_cand_format(mp_shadow_cand c);

/* Does candidate c's measurement miss the rounding of the op's inputs? True
 * when c rounds operands to a format F (not for current) and both inputs a
 * and b are float formats with no more explicit mantissa bits than F:
 * rounding them to F then changes no significand bit (range effects aside:
 * overflow, flush), so the rounding the program paid to bring its values
 * into a and b happened before the op and is in neither the reference nor
 * the candidate; the measured error is the accumulation's and the output's
 * only. bf16 operands: flagged for bf16 and for fp16/fp16_loss_scaled (fp16
 * holds every bf16 significand) but not for fp8; fp16 operands: for fp16
 * only (bf16 drops 3 of their bits: measured); fp8 operands for their own
 * format and the wider-mantissa one (e5m2 operands for e4m3 too). Scales
 * (fp8 recipes, loss scale) are not considered. docs/report.md, "Measured
 * error (--shadow)". */
bool mp_shadow_inputs_already_rounded(mp_shadow_cand c, mp_dtype a, mp_dtype b);

/* Error of one candidate in one call (or the worst over calls after a merge). */
typedef struct mp_shadow_metrics {
  double rel_l2;      /* ||D_c - D_ref||_2 / ||D_ref||_2; +inf when D_c is non-finite somewhere */
  double max_rel;     /* max |D_c - D_ref| / max |D_ref| */
  double flushed;     /* share of outputs non-zero in the reference and zero in the candidate */
  uint64_t nonfinite; /* outputs that are inf/NaN in the candidate (finite in the reference) */
} mp_shadow_metrics;

/* The metrics of one candidate's error sums (shadow_core.h's accumulator).
 * false when no output was measured (every reference inf/NaN): *m then reads
 * 0, which is not a measurement and must not be merged as one. */
bool mp_shadow_metrics_of(const mp_sh_err *e, mp_shadow_metrics *m);

/* SQNR in dB of a relative L2 error: -20 log10(rel_l2) (+inf for 0, -inf for +inf). */
double mp_shadow_sqnr_db(double rel_l2);

/* One operand as stored (column-major, as cuBLAS): element (r, c) of matrix b
 * is at r + c*ld + b*stride (or ptrs[b] for a pointer-array batch). */
typedef struct mp_shadow_operand {
  mp_dtype dtype;
  const void *data;
  const void *const *ptrs; /* pointer-array batch (data unused) */
  int64_t ld;
  int64_t stride; /* elements between batch matrices; 0 broadcasts one */
  bool trans;     /* op(X) = X^T */
  /* cuBLASLt's per-tensor fp8 scale of the operand (A_/B_SCALE_POINTER):
   * the op multiplies the stored values by *scale, so these products are
   * the operand's values (the reference's and every candidate's but the
   * current one, which computes on the stored values and multiplies the
   * sum by both scales with alpha, as the op does). Read where it points:
   * host memory on the host path, the device's copy of it on the device.
   * NULL: 1. */
  const float *scale;
  /* Or cuBLASLt's per-block scales of the operand (A_/B_SCALE_MODE
   * VEC32_UE8M0, VEC128_32F, BLK128x128_32F: shadow_core.h
   * mp_sh_block_scale, for block_outer vectors of k values, block_outer
   * being m for A and n for B): value (r, kk) is stored * its block's
   * scale, for the reference and every candidate; the current precision
   * then works on those values rounded to fp32 (the op sums each block in
   * fp32 and scales the sum: the same up to fp32 rounding). Read as scale
   * is. NULL: none. */
  const void *blocks;
  int block_mode;
  int64_t block_outer;
} mp_shadow_operand;

typedef struct mp_shadow_gemm {
  int64_t m, n, k, batch;
  mp_shadow_operand a, b; /* op(A) is m x k, op(B) is k x n */
  double alpha;
  mp_dtype out; /* D's dtype: the current precision's output */
  /* The format the call rounds fp32 operands to on Tensor Cores: MP_TF32
   * (compute 32F_FAST_TF32, math mode TF32_TENSOR_OP), MP_FP16 (32F_FAST_16F,
   * the deprecated math mode TENSOR_OP), MP_BF16 (32F_FAST_16BF); current
   * rounds fp32 operands so. Any other value (0 included): as stored. */
  mp_dtype fp32_as;
  /* The precision the call accumulates in: MP_FP16 for compute type 16F
   * (cublasHgemm, cublasGemmEx and cuBLASLt with CUBLAS_COMPUTE_16F[_PEDANTIC],
   * a cuDNN convolution of compute type HALF): the current precision's sums
   * are then rounded to fp16 after every product, k ascending
   * (shadow_core.h mp_sh_fma_fp16). Any other value (0 included): fp32
   * (fmaf), or double for fp64 calls. Every other candidate accumulates in
   * fp32 whatever the call does. */
  mp_dtype accum;
  /* MP_SH_FP16_SCALED: A and B are multiplied by 2^scale_log2[i] before the
   * fp16 cast; the fp16 output then carries 2^(scale_log2[0] + scale_log2[1]),
   * divided out after its cast (a gradient GEMM at its loss scale). */
  int scale_log2[2];
  /* MP_SH_FP16_SCALED: the product is further multiplied by
   * 2^out_scale_log2 before that cast, and divided by it with the operands'
   * scales after it: the output's own loss scale where it needs more than
   * the operands give it (a gradient GEMM whose inputs fit fp16 but whose
   * product flushes). 0: none. */
  int out_scale_log2;
  /* A cuBLASLt epilogue that changes D (MP_SH_EPI_*) and an optional bias
   * vector (m values per batch matrix, bias_stride elements apart; read as
   * stored): reference and candidates are epi(alpha*P + bias). With either,
   * the loss-scaled candidate is not defined (a forward op: its scale is 1). */
  int epilogue;
  const void *bias;
  mp_dtype bias_dtype;
  int64_t bias_stride;
  /* An fp8 D's scale (cuBLASLt D_SCALE_POINTER; read as a.scale is): the
   * current precision's output is shadow_core.h mp_sh_current_scaled_output.
   * NULL: 1. */
  const float *d_scale;
  /* Tests: when set, receive D_c of each candidate / the reference
   * (column-major m x n, batch after batch). */
  float *capture[MP_SH_COUNT];
  double *capture_ref;
} mp_shadow_gemm;

/* Delayed scaling state of one operand of one site: amax of earlier calls. */
typedef struct mp_amax_history {
  float amax[MP_SHADOW_HISTORY_LEN];
  uint32_t n;     /* entries held (<= MP_SHADOW_HISTORY_LEN) */
  uint32_t next;  /* ring position of the next entry */
  float scale[2]; /* last scale used for e4m3, e5m2 (kept when amax is 0 or non-finite) */
} mp_amax_history;

void mp_amax_history_init(mp_amax_history *h);
/* Transformer Engine's default recipe: max over the history, margin 0;
 * scale = fp8_max / amax; no history, amax 0 or non-finite: the previous
 * scale (initially 1); an infinite scale becomes FLT_MAX. */
float mp_amax_history_scale(mp_amax_history *h, mp_dtype fp8);
void mp_amax_history_push(mp_amax_history *h, float amax);

/* Current scaling (Transformer Engine Float8CurrentScaling): fp8_max / amax
 * (fp32 division); amax 0, inf or NaN gives 1; an infinite scale FLT_MAX. */
float mp_fp8_current_scale(float amax, mp_dtype fp8);
/* MXFP8 block scale exponent: E8M0 of amax/fp8_max rounded up to a power of
 * two (cvt.rp.satfinite.ue8m0), in [-127, 127]; the block's values are divided by 2^e. */
int mp_mx_scale_exp(float amax, mp_dtype fp8);
/* Candidate cast of one operand value (already multiplied by its scale for
 * fp8): RNE to the format, fp8 saturating (as CUDA's __nv_fp8 constructors). */
float mp_shadow_round(float x, mp_dtype fmt);
/* The format the current precision gives an operand stored as src:
 * g->fp32_as for fp32 operands when it is tf32, fp16 or bf16, else fp32. */
mp_dtype mp_shadow_current_format(const mp_shadow_gemm *g, mp_dtype src);

/* The loss scale an operand of a backward GEMM is rounded at in
 * MP_SH_FP16_SCALED: 0 when it fits fp16 at scale 1 (mp_advise: safe), else
 * the middle of its fp16 loss-scale window (the report's rule), else 0. */
int mp_shadow_loss_scale_log2(const mp_stats *s);

/* Is candidate c defined for g (the loss-scaled one not with an epilogue or bias)? */
bool mp_shadow_cand_defined(const mp_shadow_gemm *g, mp_shadow_cand c);

/* What candidate c of g accumulates in: MP_FP16 for the current precision
 * of a call of compute type 16F (g->accum), else MP_FP32 (the host path's
 * fp64 calls aside). The host's dot products and the device's (an fp16
 * chain kernel in place of the fp32 GEMM) both follow it. */
mp_dtype mp_shadow_cand_accum(const mp_shadow_gemm *g, mp_shadow_cand c);

/* Host memory mp_shadow_run allocates for g (bytes). */
uint64_t mp_shadow_work_bytes(const mp_shadow_gemm *g);

/* Compute the reference and the candidates in `mask` (bits 1u << cand) for g;
 * ret[c] for each computed candidate. hist[2] (A, B) is the site's delayed
 * scaling state: read for the scale, then this call's amax is pushed. With an
 * empty history (a site's first call) the delayed candidates are not computed,
 * the call only seeds it; with hist NULL never. Returns the mask of the
 * candidates computed (>= 0), -EINVAL (bad geometry or an operand dtype that
 * is not a float format), -ENOMEM, or -EDOM when no output's reference is
 * finite (every output reads an operand's Inf or NaN): nothing was measured,
 * ret[] holds no metrics (the call's amax still joins hist, as when measured),
 * or -ENODATA for an empty product (mp_shadow_empty: nothing read, no metrics). */
#define MP_SHADOW_ALL ((1u << MP_SH_COUNT) - 1)
/* An empty product: k = 0 or alpha = 0 (m, n, batch > 0). D = beta*C then, in
 * every precision alike (C and beta are left out of every candidate), so
 * there is nothing to measure: mp_shadow_run returns -ENODATA, and a caller
 * need not read the operands (the libraries read neither A nor B). */
bool mp_shadow_empty(const mp_shadow_gemm *g);
int mp_shadow_run(const mp_shadow_gemm *g, unsigned mask, mp_amax_history hist[2],
                  mp_shadow_metrics ret[MP_SH_COUNT]);

/* A 2-D or 3-D convolution of cuDNN (one group or several: shadow_core.h
 * mp_sh_conv.groups) as shadow execution measures it: its geometry and
 * strides (mp_sh_conv), the tensors' types and data:
 *   forward          y (N x K x [O x] P x Q) = alpha * conv(x, w)
 *   backward data    dx (N x C x [D x] H x W) = alpha * dconv(dy, w)
 *   backward filter  dw (K x C x [T x] R x S) = alpha * wconv(x, dy)
 * x, w, y name the tensors whatever their direction (y is dy backward); the
 * bracketed depth is a 3-D convolution's (mp_sh_conv.d, t, o). */
typedef struct mp_shadow_conv {
  mp_sh_conv g;
  mp_dtype x_dtype, w_dtype, y_dtype;
  const void *x, *wt, *y; /* the op's two inputs are read (the output may be NULL) */
  double alpha;
} mp_shadow_conv;

/* The convolution as the implicit GEMM convolution kernels compute it,
 * D = alpha * op(A) op(B) (op(A) m x k with its rows packed, op(B) k x n, in
 * the operands' own types, copied into *owned, which the caller frees):
 *   forward          m = K, n = N*P*Q, k = C*R*S: A the filters, B =
 *                    im2col(x): column (n*P + p)*Q + q, row (c*R + r)*S + s
 *                    holds x[n][c][p*stride - pad + r'*dil][q*stride - pad +
 *                    s'*dil], 0 outside x (r' = R-1-r when flipped, else r)
 *   backward data    m = C, n = N*H*W, k = K*R*S: A[c][(k*R + r)*S + s] =
 *                    w[k][c][r'][s'], B's column (n*H + h)*W + w holds
 *                    dy[n][k][p][q] with p*stride - pad + r*dil = h (and
 *                    likewise q), 0 where no output position has that tap
 *   backward filter  m = K, n = C*R*S, k = N*P*Q: A = dy (filter k's N*P*Q
 *                    values), op(B) = im2col(x) transposed
 * A 3-D convolution's depth comes first in each spatial index: k = C*T*R*S
 * with row ((c*T + t)*R + r)*S + s, n = N*O*P*Q with column ((n*O + o)*P +
 * p)*Q + q (likewise D with H, W), z = o*stride_d - pad_d + t'*dil_d.
 * (mp_sh_conv_a_at / mp_sh_conv_b_at say where each element comes from.)
 * m, n, k are one group's (c and k in them the group's channels and
 * filters); a grouped convolution is `groups` such GEMMs, batch matrix g
 * gathered from group g's part of each tensor (mp_sh_conv_a_group,
 * mp_sh_conv_b_group), its outputs y's (dx's, dw's) of that group: the
 * call's metrics are over all of them, as a strided batch's are.
 * Fills *g (batch = groups, matrices packed, D's dtype the output
 * tensor's). Returns 0, -EINVAL
 * (bad geometry, an input dtype that is not a float format), -ENOMEM. */
int mp_shadow_conv_gemm(const mp_shadow_conv *cv, mp_shadow_gemm *g, void **owned);
/* The same GEMM's shape, types and layout without its data (a.data, b.data
 * NULL): 0 or -EINVAL. The device path gathers the operands itself. */
int mp_shadow_conv_shape(const mp_shadow_conv *cv, mp_shadow_gemm *g);
/* Bytes of *owned mp_shadow_conv_gemm allocates for cv (UINT64_MAX: invalid or too many). */
uint64_t mp_shadow_conv_bytes(const mp_shadow_conv *cv);

/* Per-site merge of calls: the worst of each metric, and up to
 * MP_SHADOW_MEDIAN_SAMPLES rel_l2 values for the median (a deterministic
 * reservoir sample once more calls arrive). */
typedef struct mp_shadow_agg {
  uint64_t calls[MP_SH_COUNT]; /* calls that computed the candidate */
  mp_shadow_metrics worst[MP_SH_COUNT];
  uint32_t nsamples[MP_SH_COUNT];
  double samples[MP_SH_COUNT][MP_SHADOW_MEDIAN_SAMPLES];
} mp_shadow_agg;

void mp_shadow_agg_init(mp_shadow_agg *a);
void mp_shadow_agg_add(mp_shadow_agg *a, mp_shadow_cand c, const mp_shadow_metrics *m);
/* Worst-of merge of two metrics records. */
void mp_shadow_metrics_worst(mp_shadow_metrics *dst, const mp_shadow_metrics *src);
/* Median of n values (+inf sorts last); NaN for n == 0. Sorts v in place. */
double mp_shadow_median(double *v, size_t n);

#endif
