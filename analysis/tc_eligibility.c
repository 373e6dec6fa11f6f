/* Tensor Core eligibility of one op from the call alone, following NVIDIA's
 * documented requirements (cuBLAS "Tensor Core usage", the CUDA arch tables):
 *   fp16 operands: HMMA from sm_70; bf16: sm_80; fp32 only as TF32 (compute
 *   type 32F_FAST_TF32 or math mode TF32_TENSOR_OP), sm_80; 32F_FAST_16F /
 *   32F_FAST_16BF down-convert fp32 to fp16/bf16 Tensor Cores, and so does
 *   the deprecated math mode TENSOR_OP with 32F compute (FAST_16F); fp8: sm_89;
 *   int8 with 32I compute: IMMA from sm_72; fp64: DMMA on sm_80, sm_90, sm_100.
 *   A legacy cuDNN convolution of math type CUDNN_FMA_MATH runs FMA kernels only.
 * Efficient when m, n, k and the leading dimensions are multiples of 16 bytes
 * of their operand type and every pointer is 16-byte aligned. */
#include "tc_eligibility.h"

#include <stdio.h>
#include <string.h>

typedef enum tc_path {
  PATH_NONE,
  PATH_FP16,
  PATH_BF16,
  PATH_TF32,
  PATH_FP8,
  PATH_INT8,
  PATH_FP64
} tc_path;

static const struct {
  const char *name;
  int cc; /* major*10 + minor: first arch with this path */
} k_path[] = {
    [PATH_NONE] = {"none", 0},       [PATH_FP16] = {"fp16 HMMA", 70},
    [PATH_BF16] = {"bf16 HMMA", 80}, [PATH_TF32] = {"TF32", 80},
    [PATH_FP8] = {"fp8", 89},        [PATH_INT8] = {"int8 IMMA", 72},
    [PATH_FP64] = {"fp64 DMMA", 80},
};

static bool eq(const char *a, const char *b) {
  return a && strcmp(a, b) == 0;
}

static bool is_fp8(mp_dtype d) {
  return d == MP_FP8_E4M3 || d == MP_FP8_E5M2;
}

/* A legacy cuDNN convolution of math type CUDNN_FMA_MATH (the raw file's
 * spelling, hooks/cudnn.c): FMA kernels only. */
static bool fma_only(const mp_tc_query *q) {
  return eq(q->conv_math, "FMA_MATH");
}

/* Compute types are the raw file's spelling; cuDNN writes a dtype name. */
static bool compute_is(const mp_tc_query *q, const char *cublas, mp_dtype cudnn) {
  return eq(q->compute_type, cublas) ||
         (q->compute_type && mp_dtype_from_name(q->compute_type) == cudnn &&
          cudnn != MP_DTYPE_INVALID);
}

/* Which Tensor Core path the call asks for, or PATH_NONE with a reason. */
static tc_path path_of(const mp_tc_query *q, char *why, size_t n) {
  mp_dtype a = q->a;
  const char *ct = q->compute_type ? q->compute_type : "";
  bool pedantic = strstr(ct, "PEDANTIC") || (q->math_mode && strstr(q->math_mode, "PEDANTIC"));
  if (fma_only(q)) {
    snprintf(why, n,
             "cuDNN math type FMA_MATH restricts the convolution to FMA (CUDA-core) kernels");
    return PATH_NONE;
  }
  if (eq(q->compute_type, "32F_FAST_TF32") || a == MP_TF32) return PATH_TF32;
  if (eq(q->compute_type, "32F_FAST_16F")) return PATH_FP16;
  if (eq(q->compute_type, "32F_FAST_16BF")) return PATH_BF16;
  switch (a) {
  case MP_FP16:
    return PATH_FP16;
  case MP_BF16:
    return PATH_BF16;
  case MP_FP8_E4M3:
  case MP_FP8_E5M2:
    return PATH_FP8;
  case MP_INT8:
    if (compute_is(q, "32I", MP_INT32) || compute_is(q, "32I_PEDANTIC", MP_DTYPE_INVALID))
      return PATH_INT8;
    snprintf(why, n, "int8 operands with compute type %s: IMMA needs 32I compute",
             q->compute_type ? q->compute_type : "unknown");
    return PATH_NONE;
  case MP_FP64:
    return PATH_FP64;
  case MP_FP32:
    if (pedantic) {
      snprintf(why, n, "fp32 with pedantic compute: reduced-precision (TF32) paths are forbidden");
      return PATH_NONE;
    }
    if (q->math_mode && strstr(q->math_mode, "TF32_TENSOR_OP")) return PATH_TF32;
    /* The deprecated CUBLAS_TENSOR_OP_MATH: "same effect as using
     * CUBLAS_COMPUTE_32F_FAST_16F" (cublas_api.h) for 32F compute. */
    if (q->math_mode && !strncmp(q->math_mode, "TENSOR_OP", 9) && eq(q->compute_type, "32F"))
      return PATH_FP16;
    if (!q->math_mode && compute_is(q, "", MP_FP32))
      return PATH_TF32; /* cuDNN: default math type allows TF32 for fp32 convolutions */
    snprintf(why, n,
             "fp32 operands with %s compute and %s math mode run on CUDA cores (TF32 needs "
             "32F_FAST_TF32 or TF32_TENSOR_OP)",
             q->compute_type ? q->compute_type : "unknown",
             q->math_mode ? q->math_mode : "unknown");
    return PATH_NONE;
  case MP_DTYPE_INVALID:
    snprintf(why, n, "operand dtype unknown");
    return PATH_NONE;
  default:
    snprintf(why, n, "%s operands have no Tensor Core path", mp_dtype_name(a));
    return PATH_NONE;
  }
}

/* Arch check; cc 0 (unknown) is taken as capable, and says so. */
static bool arch_ok(tc_path p, int cc, char *why, size_t n) {
  if (cc == 0) return true;
  if (p == PATH_FP64 && !(cc == 80 || cc == 90 || cc == 100 || cc == 103)) {
    snprintf(why, n, "fp64 DMMA exists only on sm_80, sm_90 and sm_100/103 (this GPU: sm_%d)", cc);
    return false;
  }
  if (cc < k_path[p].cc) {
    snprintf(why, n, "%s needs sm_%d or newer (this GPU: sm_%d)", k_path[p].name, k_path[p].cc, cc);
    return false;
  }
  return true;
}

/* The first dimension that is not a multiple of 16 bytes, or NULL. */
static bool check_dim(const char *what, uint64_t v, mp_dtype d, char *why, size_t n) {
  unsigned sz = mp_dtype_size(d);
  if (v == 0 || sz == 0 || sz >= 16) return true;
  unsigned elems = 16 / sz;
  if (v % elems == 0) return true;
  snprintf(why, n, "%s=%llu is not a multiple of %u %s elements (16 bytes)", what,
           (unsigned long long)v, elems, mp_dtype_name(d));
  return false;
}

/* fp32 operands refused only for want of TF32: not pedantic, not asking for
 * a 16-bit or fp64 compute, on sm_80+ (or an unknown arch). */
static bool tf32_would_apply(const mp_tc_query *q) {
  if (q->a != MP_FP32 || (q->b != MP_FP32 && q->b != MP_DTYPE_INVALID)) return false;
  const char *ct = q->compute_type ? q->compute_type : "";
  if (strstr(ct, "PEDANTIC") || strstr(ct, "16") || strstr(ct, "64")) return false;
  if (q->math_mode && strstr(q->math_mode, "PEDANTIC")) return false;
  if (fma_only(q)) return false; /* the program chose CUDA cores */
  int cc = q->cc_major * 10 + q->cc_minor;
  return cc == 0 || cc >= k_path[PATH_TF32].cc;
}

void mp_tc_eligible(const mp_tc_query *q, mp_tc_eligibility *ret) {
  memset(ret, 0, sizeof *ret);
  char *why = ret->reason;
  size_t n = sizeof ret->reason;
  tc_path p = path_of(q, why, n);
  if (p == PATH_NONE) {
    ret->eligible_with_tf32 = tf32_would_apply(q);
    return;
  }
  if (p == PATH_FP8 && !is_fp8(q->b) && q->b != MP_DTYPE_INVALID && q->b != MP_FP16 &&
      q->b != MP_BF16) {
    snprintf(why, n, "fp8 A with %s B: no fp8 Tensor Core path", mp_dtype_name(q->b));
    return;
  }
  int cc = q->cc_major * 10 + q->cc_minor;
  if (!arch_ok(p, cc, why, n)) return;
  ret->eligible = true;
  ret->tf32 = p == PATH_TF32;
  ret->path = k_path[p].name;

  /* Storage dtypes give the byte sizes; tf32 is stored as fp32. */
  mp_dtype da = q->a == MP_DTYPE_INVALID ? MP_FP32 : q->a;
  mp_dtype db = q->b == MP_DTYPE_INVALID ? da : q->b;
  mp_dtype dc = q->d != MP_DTYPE_INVALID ? q->d : q->c != MP_DTYPE_INVALID ? q->c : da;
  if (!check_dim("m", q->m, da, why, n) || !check_dim("n", q->n, db, why, n) ||
      !check_dim("k", q->k, da, why, n) || !check_dim("lda", q->lda, da, why, n) ||
      !check_dim("ldb", q->ldb, db, why, n) || !check_dim("ldc", q->ldc, dc, why, n))
    return;
  if (q->ptr_align != 0 && q->ptr_align < 16) {
    snprintf(why, n, "operand pointers are only %u-byte aligned (16 needed)", q->ptr_align);
    return;
  }
  ret->efficient = true;
  if (cc == 0) snprintf(why, n, "GPU architecture unknown: judged on the call alone");
}
