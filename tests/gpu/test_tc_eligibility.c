/* Tensor Core eligibility from the call, against NVIDIA's documented
 * requirements: dtype/compute type/math mode per architecture, and the
 * 16-byte rule for dims, leading dimensions and pointers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/tc_eligibility.h"

/* An aligned 1024^3 GEMM on an H100 unless a test says otherwise. */
static mp_tc_query base(mp_dtype ab, const char *compute, const char *math) {
  return (mp_tc_query){ab,   ab,   ab,   ab,   compute, math, 9,   0,
                       1024, 1024, 1024, 1024, 1024,    1024, 256, NULL};
}

static mp_tc_eligibility check(mp_tc_query q) {
  mp_tc_eligibility e;
  mp_tc_eligible(&q, &e);
  return e;
}

static void fp16_operands_are_eligible_from_sm70(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP16, "32F", "DEFAULT");
  q.cc_major = 7;
  assert_true(check(q).eligible);
  q.cc_major = 6;
  q.cc_minor = 1;
  mp_tc_eligibility e = check(q);
  assert_false(e.eligible);
  assert_non_null(strstr(e.reason, "sm_70"));
}

static void bf16_needs_sm80(void **state) {
  (void)state;
  mp_tc_query q = base(MP_BF16, "32F", "DEFAULT");
  q.cc_major = 7;
  q.cc_minor = 5;
  assert_false(check(q).eligible);
  q.cc_major = 8;
  q.cc_minor = 0;
  assert_true(check(q).eligible);
}

static void fp32_default_math_is_not_eligible_and_says_how_to_get_tf32(void **state) {
  (void)state;
  mp_tc_eligibility e = check(base(MP_FP32, "32F", "DEFAULT"));
  assert_false(e.eligible);
  assert_non_null(strstr(e.reason, "TF32_TENSOR_OP"));
}

static void fp32_with_tf32_math_mode_or_fast_tf32_compute_is_eligible_on_sm80(void **state) {
  (void)state;
  assert_true(check(base(MP_FP32, "32F", "TF32_TENSOR_OP")).eligible);
  assert_true(check(base(MP_FP32, "32F_FAST_TF32", "DEFAULT")).eligible);
  mp_tc_query q = base(MP_FP32, "32F_FAST_TF32", "DEFAULT");
  q.cc_major = 7;
  q.cc_minor = 5;
  assert_false(check(q).eligible);
}

static void fp32_without_tf32_is_eligible_with_tf32_on_sm80_only(void **state) {
  (void)state;
  mp_tc_eligibility e = check(base(MP_FP32, "32F", "DEFAULT"));
  assert_true(e.eligible_with_tf32);
  assert_false(e.tf32);
  mp_tc_query q = base(MP_FP32, "32F", "DEFAULT");
  q.cc_major = 7;
  assert_false(check(q).eligible_with_tf32);
  assert_false(check(base(MP_FP32, "32F_PEDANTIC", "DEFAULT")).eligible_with_tf32);
  assert_false(check(base(MP_FP32, "64F", "DEFAULT")).eligible_with_tf32);
  assert_false(check(base(MP_FP64, "64F", "DEFAULT")).eligible_with_tf32);
}

static void the_tf32_path_says_so_and_fp16_does_not(void **state) {
  (void)state;
  assert_true(check(base(MP_FP32, "32F", "TF32_TENSOR_OP")).tf32);
  assert_true(check(base(MP_FP32, "32F_FAST_TF32", "DEFAULT")).tf32);
  assert_false(check(base(MP_FP32, "32F_FAST_TF32", "DEFAULT")).eligible_with_tf32);
  assert_false(check(base(MP_FP16, "32F", "DEFAULT")).tf32);
}

static void fp32_pedantic_is_not_eligible(void **state) {
  (void)state;
  assert_false(check(base(MP_FP32, "32F_PEDANTIC", "TF32_TENSOR_OP")).eligible);
}

static void fp32_fast_16f_compute_uses_fp16_tensor_cores(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP32, "32F_FAST_16F", "DEFAULT");
  q.cc_major = 7;
  assert_true(check(q).eligible);
}

/* The deprecated CUBLAS_TENSOR_OP_MATH has "same effect as using
 * CUBLAS_COMPUTE_32F_FAST_16F" (cublas_api.h): an SGEMM on such a handle
 * runs on fp16 Tensor Cores, not on CUDA cores. */
static void fp32_under_the_tensor_op_math_mode_uses_fp16_tensor_cores(void **state) {
  (void)state;
  mp_tc_eligibility e = check(base(MP_FP32, "32F", "TENSOR_OP"));
  assert_true(e.eligible);
  assert_false(e.tf32);
  assert_string_equal(e.path, "fp16 HMMA");
  e = check(base(MP_FP32, "32F", "TENSOR_OP+DISALLOW_REDUCED_PRECISION_REDUCTION"));
  assert_true(e.eligible);
  assert_string_equal(e.path, "fp16 HMMA");
  assert_false(check(base(MP_FP32, "32F_PEDANTIC", "TENSOR_OP")).eligible);
  assert_false(check(base(MP_FP32, "32F", "PEDANTIC")).eligible);
}

static void fp8_needs_sm89(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP8_E4M3, "32F", NULL);
  q.b = MP_FP8_E5M2;
  q.c = q.d = MP_BF16;
  q.cc_major = 8;
  q.cc_minor = 0;
  assert_false(check(q).eligible);
  q.cc_minor = 9;
  assert_true(check(q).eligible);
}

static void int8_needs_32i_compute(void **state) {
  (void)state;
  mp_tc_query q = base(MP_INT8, "32I", "DEFAULT");
  q.c = q.d = MP_INT32;
  assert_true(check(q).eligible);
  q.compute_type = "32F";
  assert_false(check(q).eligible);
}

static void fp64_dmma_only_on_datacenter_archs(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP64, "64F", "DEFAULT");
  assert_true(check(q).eligible); /* sm_90 */
  q.cc_major = 8;
  q.cc_minor = 6;
  assert_false(check(q).eligible);
  q.cc_minor = 0;
  assert_true(check(q).eligible);
}

static void fp16_k_not_multiple_of_8_is_eligible_but_inefficient(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP16, "32F", "DEFAULT");
  q.k = 1001;
  mp_tc_eligibility e = check(q);
  assert_true(e.eligible);
  assert_false(e.efficient);
  assert_string_equal(e.reason, "k=1001 is not a multiple of 8 fp16 elements (16 bytes)");
}

static void fp32_leading_dimension_multiple_of_4_is_efficient(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP32, "32F_FAST_TF32", "DEFAULT");
  q.lda = 1028;
  assert_true(check(q).efficient);
  q.lda = 1030;
  assert_false(check(q).efficient);
}

static void fp8_dims_need_multiples_of_16_elements(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP8_E4M3, "32F", NULL);
  q.m = 1032; /* multiple of 8, not 16 */
  assert_false(check(q).efficient);
}

static void pointers_aligned_to_8_bytes_are_inefficient(void **state) {
  (void)state;
  mp_tc_query q = base(MP_BF16, "32F", "DEFAULT");
  q.ptr_align = 8;
  mp_tc_eligibility e = check(q);
  assert_true(e.eligible);
  assert_false(e.efficient);
  q.ptr_align = 16;
  assert_true(check(q).efficient);
}

static void unknown_arch_is_judged_on_dtypes_and_says_so(void **state) {
  (void)state;
  mp_tc_query q = base(MP_BF16, "32F", "DEFAULT");
  q.cc_major = q.cc_minor = 0;
  mp_tc_eligibility e = check(q);
  assert_true(e.eligible);
  assert_non_null(strstr(e.reason, "unknown"));
}

static void an_eligible_efficient_call_has_no_reason_and_names_its_path(void **state) {
  (void)state;
  mp_tc_eligibility e = check(base(MP_FP64, "64F", "DEFAULT"));
  assert_true(e.eligible && e.efficient);
  assert_string_equal(e.reason, "");
  assert_non_null(e.path);
  assert_non_null(strstr(e.path, "DMMA"));
  mp_tc_query q = base(MP_FP8_E4M3, "32F", "DEFAULT");
  q.d = MP_BF16;
  e = check(q);
  assert_true(e.eligible && e.efficient);
  assert_string_equal(e.reason, "");
}

static void cudnn_fp32_convolution_may_use_tf32(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP32, "fp32", NULL);
  q.cc_major = 8;
  assert_true(check(q).eligible);
}

/* CUDNN_FMA_MATH restricts a legacy convolution to FMA kernels: no
 * Tensor Core path for any dtype, and no "eligible with TF32" either (the
 * program asked for CUDA cores, as pedantic math does); other math types
 * leave the dtype to decide. */
static void cudnn_fma_math_is_not_eligible(void **state) {
  (void)state;
  mp_tc_query q = base(MP_FP16, "fp32", NULL);
  q.conv_math = "FMA_MATH";
  mp_tc_eligibility e = check(q);
  assert_false(e.eligible);
  assert_non_null(strstr(e.reason, "FMA_MATH"));
  q = base(MP_FP32, "fp32", NULL);
  q.conv_math = "FMA_MATH";
  e = check(q);
  assert_false(e.eligible);
  assert_false(e.eligible_with_tf32);
  q.conv_math = "DEFAULT_MATH";
  assert_true(check(q).eligible);
  q = base(MP_FP16, "fp32", NULL);
  q.conv_math = "TENSOR_OP_MATH";
  assert_true(check(q).eligible);
}

static void unknown_dtype_is_not_eligible(void **state) {
  (void)state;
  mp_tc_eligibility e = check(base(MP_DTYPE_INVALID, NULL, NULL));
  assert_false(e.eligible);
  assert_false(e.efficient);
  assert_string_equal(e.reason, "operand dtype unknown");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp16_operands_are_eligible_from_sm70),
      cmocka_unit_test(bf16_needs_sm80),
      cmocka_unit_test(fp32_default_math_is_not_eligible_and_says_how_to_get_tf32),
      cmocka_unit_test(fp32_without_tf32_is_eligible_with_tf32_on_sm80_only),
      cmocka_unit_test(the_tf32_path_says_so_and_fp16_does_not),
      cmocka_unit_test(fp32_with_tf32_math_mode_or_fast_tf32_compute_is_eligible_on_sm80),
      cmocka_unit_test(fp32_pedantic_is_not_eligible),
      cmocka_unit_test(fp32_fast_16f_compute_uses_fp16_tensor_cores),
      cmocka_unit_test(fp32_under_the_tensor_op_math_mode_uses_fp16_tensor_cores),
      cmocka_unit_test(fp8_needs_sm89),
      cmocka_unit_test(int8_needs_32i_compute),
      cmocka_unit_test(fp64_dmma_only_on_datacenter_archs),
      cmocka_unit_test(fp16_k_not_multiple_of_8_is_eligible_but_inefficient),
      cmocka_unit_test(fp32_leading_dimension_multiple_of_4_is_efficient),
      cmocka_unit_test(fp8_dims_need_multiples_of_16_elements),
      cmocka_unit_test(pointers_aligned_to_8_bytes_are_inefficient),
      cmocka_unit_test(unknown_arch_is_judged_on_dtypes_and_says_so),
      cmocka_unit_test(an_eligible_efficient_call_has_no_reason_and_names_its_path),
      cmocka_unit_test(cudnn_fp32_convolution_may_use_tf32),
      cmocka_unit_test(cudnn_fma_math_is_not_eligible),
      cmocka_unit_test(unknown_dtype_is_not_eligible),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
