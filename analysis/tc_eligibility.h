/* Tensor Core eligibility of an op from the call alone (dtypes, compute type,
 * math mode, GPU architecture, alignment), with the reason when it is not
 * eligible or not efficient. */
#ifndef MPPROF_ANALYSIS_TC_ELIGIBILITY_H
#define MPPROF_ANALYSIS_TC_ELIGIBILITY_H

#include <stdbool.h>
#include <stdint.h>

#include "formats.h"

typedef struct mp_tc_query {
  mp_dtype a, b, c, d; /* operand storage dtypes (MP_DTYPE_INVALID when unknown) */
  const char
      *compute_type;      /* raw-file spelling: "32F", "32F_FAST_TF32", "16F", "64F", "32I", ... */
  const char *math_mode;  /* raw-file spelling: "DEFAULT", "TF32_TENSOR_OP", ... or NULL (cuDNN) */
  int cc_major, cc_minor; /* 0.0 when unknown */
  uint64_t m, n, k;       /* GEMM dims (for convs: the implicit GEMM dims) */
  uint64_t lda, ldb, ldc; /* 0 when not applicable */
  unsigned ptr_align; /* largest power of two dividing every operand pointer (bytes), 0 unknown */
  /* a legacy cuDNN convolution's math type, raw-file spelling ("DEFAULT_MATH",
   * "FMA_MATH", ...), or NULL (not one, or not known) */
  const char *conv_math;
} mp_tc_query;

typedef struct mp_tc_eligibility {
  bool eligible;  /* some Tensor Core path exists for this call on this arch */
  bool efficient; /* dims / leading dims / pointers aligned to 16 bytes */
  bool tf32;      /* the Tensor Core path is TF32 (by compute type, math mode or cuDNN default) */
  /* Not eligible as called, but fp32 operands that TF32 (compute type
   * 32F_FAST_TF32 or math mode TF32_TENSOR_OP) would put on Tensor Cores on
   * this arch: "eligible with TF32". */
  bool eligible_with_tf32;
  /* Why not eligible or not efficient; empty when efficient, except that it
   * says so when the GPU architecture was unknown (judged on the call alone). */
  char reason[160];
  const char *path; /* static: the Tensor Core path when eligible ("fp16 HMMA", ...), else NULL */
} mp_tc_eligibility;

void mp_tc_eligible(const mp_tc_query *q, mp_tc_eligibility *ret);

#endif
