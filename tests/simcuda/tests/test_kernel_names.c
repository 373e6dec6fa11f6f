/* simcuda's kernel-name choice (kernel_names.def): the names cuBLAS and
 * cuDNN use on sm_90 for each dtype / compute type / shape / alignment, with
 * the Tensor Core vs CUDA-core split the real libraries make, and no
 * supported combination falling through to the "unlisted" placeholder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cublas_api.h>
#include <library_types.h>

#include "analysis/kernel_class.h"
#include "simcuda_internal.h"

static const char *gemm(int a, int d, int compute, char oa, char ob, uint64_t m, uint64_t n,
                        int aligned, int bias, unsigned grid[3], unsigned block[3]) {
  simcuda_gemm_shape g = {.a_type = a,
                          .b_type = a,
                          .c_type = d,
                          .d_type = d,
                          .compute = compute,
                          .op_a = oa,
                          .op_b = ob,
                          .m = m,
                          .n = n,
                          .k = 512,
                          .batch = 1,
                          .aligned = aligned,
                          .epilogue_bias = bias};
  return simcuda_gemm_kernel_name(&g, grid, block);
}

static int has(const char *s, const char *tok) {
  return strstr(s, tok) != NULL;
}

static void fp32_without_tf32_picks_the_cuda_core_ffma_kernel(void **state) {
  (void)state;
  unsigned g[3], b[3];
  const char *n = gemm(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 'T', 'N', 1024, 512, 1, 0, g, b);
  assert_true(has(n, "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n") && has(n, "ffma"));
  assert_int_equal(g[0], 4);
  assert_int_equal(g[1], 4);
  assert_int_equal(b[0], 256);
  n = gemm(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC, 'N', 'N', 64, 64, 0, 0, g, b);
  assert_true(has(n, "cutlass_80_simt_sgemm") && has(n, "_nn_align1"));
}

static void fp32_with_tf32_picks_a_tf32_tensor_core_kernel(void **state) {
  (void)state;
  unsigned g[3], b[3];
  const char *n =
      gemm(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 'N', 'T', 256, 256, 1, 0, g, b);
  assert_true(has(n, "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n") && has(n, "warpgroupsize"));
  n = gemm(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 'N', 'T', 256, 256, 0, 0, g, b);
  assert_true(has(n, "tensorop_s1688gemm") && has(n, "align1"));
}

static void half_precision_names_carry_their_dtype_tokens(void **state) {
  (void)state;
  unsigned g[3], b[3];
  const char *n =
      gemm(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 'T', 'N', 4096, 4096, 1, 0, g, b);
  assert_string_equal(n, "nvjet_sm90_hsh_128x256_64x4_2x1_v_bz_coopA_TNN");
  assert_int_equal(g[0], 32);
  assert_int_equal(g[1], 16);
  n = gemm(CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 'N', 'N', 4096, 4096, 1, 0, g, b);
  assert_true(has(n, "nvjet_sm90_hss_") && has(n, "_NNT"));
  n = gemm(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 'T', 'N', 4096, 4096, 1, 0, g, b);
  assert_true(has(n, "nvjet_sm90_tst_"));
  n = gemm(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 'T', 'N', 4096, 4096, 1, 1, g, b);
  assert_true(has(n, "nvjet_sm90_tst_") && has(n, "_bias_"));
  n = gemm(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F, 'N', 'N', 4096, 4096, 1, 0, g, b);
  assert_true(has(n, "_hhh_"));
  n = gemm(CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 'T', 'N', 4096, 4096, 1, 0, g, b);
  assert_true(has(n, "nvjet_sm90_qqtst_") && has(n, "_TNT"));
  n = gemm(CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, 'N', 'N', 512, 512, 1, 0, g, b);
  assert_true(has(n, "sm90_xmma_gemm_f64f64") && has(n, "tensor16x8x8"));
  n = gemm(CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I, 'T', 'N', 512, 512, 1, 0, g, b);
  assert_true(has(n, "i8i32_i8i32_i32_tn"));
}

/* Misaligned 16-bit operands leave the TMA/wgmma kernels for align1 ones;
 * a matrix-vector shape uses the GEMV-shaped nvjet (aligned) or gemvx. */
static void misaligned_and_vector_shapes_change_kernel_family(void **state) {
  (void)state;
  unsigned g[3], b[3];
  const char *n =
      gemm(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 'N', 'N', 1000, 999, 0, 0, g, b);
  assert_true(has(n, "wmma_tensorop_bf16_s161616gemm_bf16_32x32_32x1_nn_align1"));
  n = gemm(CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 'T', 'N', 4096, 1, 1, 0, g, b);
  assert_true(has(n, "nvjet_sm90_tst_64x8_"));
  n = gemm(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 'T', 'N', 4096, 1, 0, 0, g, b);
  assert_true(has(n, "_ZN8internal5gemvx6kernelIii6__halfS2_S2_f"));
  n = gemm(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 'T', 'N', 4096, 1, 1, 0, g, b);
  assert_true(has(n, "gemv2T_kernel_val"));
  assert_int_equal(g[1], 1);
}

static void every_supported_gemm_combination_has_a_listed_name(void **state) {
  (void)state;
  static const struct {
    int a, d, compute;
  } combos[] = {
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16F},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_16BF},
      {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F},
      {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
      {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F},
      {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
      {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F},
      {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F},
      {CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I},
      {CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32F},
      {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
      {CUDA_R_8F_E4M3, CUDA_R_16F, CUBLAS_COMPUTE_32F},
      {CUDA_R_8F_E4M3, CUDA_R_32F, CUBLAS_COMPUTE_32F},
      {CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUBLAS_COMPUTE_32F},
      {CUDA_R_8F_E5M2, CUDA_R_8F_E5M2, CUBLAS_COMPUTE_32F},
  };
  static const uint64_t shapes[][2] = {{4096, 4096}, {1, 4096}, {4096, 1}, {32, 32}};
  unsigned g[3], b[3];
  for (size_t c = 0; c < sizeof(combos) / sizeof(combos[0]); c++)
    for (size_t s = 0; s < 4; s++)
      for (int aligned = 0; aligned < 2; aligned++)
        for (int bias = 0; bias < 2; bias++) {
          const char *n = gemm(combos[c].a, combos[c].d, combos[c].compute, 'T', 'N', shapes[s][0],
                               shapes[s][1], aligned, bias, g, b);
          assert_null(strstr(n, "unlisted"));
          assert_true(g[0] >= 1 && g[1] >= 1 && g[2] >= 1 && b[0] >= 32);
        }
}

static void names_are_stable_pointers(void **state) {
  (void)state;
  unsigned g[3], b[3];
  const char *a =
      gemm(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 'T', 'T', 4096, 4096, 1, 0, g, b);
  const char *c =
      gemm(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 'T', 'T', 4096, 4096, 1, 0, g, b);
  assert_ptr_equal(a, c);
  assert_true(has(a, "_TTN"));
}

static const char *conv(simcuda_conv_op op, int data, int math, int groups, int aligned) {
  unsigned g[3], b[3];
  simcuda_conv_shape c = {.op = op,
                          .data_type = data,
                          .compute_type = 0,
                          .math_type = math,
                          .groups = groups,
                          .channels_aligned = aligned,
                          .gemm_m = 1 << 14,
                          .gemm_n = 64};
  const char *n = simcuda_conv_kernel_name(&c, g, b);
  assert_true(g[0] >= 1 && b[0] >= 32);
  return n;
}

static void conv_names_follow_math_type_and_channel_alignment(void **state) {
  (void)state;
  /* cudnnDataType: 0 float, 2 half, 9 bfloat16; math: 0 default, 3 FMA. */
  assert_true(has(conv(SIMCUDA_CONV_FPROP, 9, 0, 1, 1), "sm90_xmma_fprop_implicit_gemm_bf16bf16"));
  assert_true(has(conv(SIMCUDA_CONV_FPROP, 2, 0, 1, 1), "xmma_fprop_implicit_gemm_f16f16"));
  assert_true(has(conv(SIMCUDA_CONV_FPROP, 0, 0, 1, 1), "fprop_implicit_gemm_f32f32_tf32f32"));
  assert_true(has(conv(SIMCUDA_CONV_DGRAD, 0, 0, 1, 1), "dgrad_implicit_gemm_f32f32_tf32f32"));
  assert_true(has(conv(SIMCUDA_CONV_WGRAD, 2, 0, 1, 1), "wgrad_implicit_gemm_indexed_f16f16"));
  assert_true(has(conv(SIMCUDA_CONV_FPROP, 0, 3, 1, 1), "implicit_convolve_sgemm"));
  assert_true(has(conv(SIMCUDA_CONV_FPROP, 2, 0, 1, 0), "implicit_convolveNd_hhgemm"));
  assert_true(has(conv(SIMCUDA_CONV_FPROP, 2, 0, 4, 1), "conv2d_grouped_direct_kernel"));
  assert_true(has(conv(SIMCUDA_CONV_WGRAD, 2, 3, 1, 1), "22wgrad_alg1_engine_NHWCI6__half"));
  assert_true(has(conv(SIMCUDA_CONV_DGRAD, 0, 3, 1, 1), "14dgrad2d_alg1_1IfLi0E"));
  /* CUDA-core names carry the data type of the convolution. */
  assert_true(
      has(conv(SIMCUDA_CONV_FPROP, 9, 3, 1, 1), "23implicit_convolve_sgemmI13__nv_bfloat16"));
  assert_true(has(conv(SIMCUDA_CONV_DGRAD, 2, 3, 1, 1), "14dgrad2d_alg1_1I6__half"));
  assert_true(has(conv(SIMCUDA_CONV_WGRAD, 1, 0, 1, 1), "17wgrad_alg1_engineIdd"));
  for (int op = 0; op < 3; op++)
    for (int d = 0; d < 10; d += (d == 2 ? 7 : 1))
      for (int math = 0; math < 4; math += 3)
        assert_null(strstr(conv((simcuda_conv_op)op, d, math, 1, 1), "unlisted"));
}

/* libstdc++'s demangler (what c++filt prints): the reference the mangled
 * names are checked against. */
char *__cxa_demangle(const char *mangled, char *buf, size_t *n, int *status);

/* Each readable C++ name of the table, with "$t"/"$T" filled in. */
static const char *const table_names[] = {
#define SIMCUDA_GEMM(a, b, d, math, shape, tm, tn, thr, name, seen) name,
#define SIMCUDA_CONV(op, data, math, group, tm, tn, thr, name, seen) name,
#include "kernel_names.def"
#undef SIMCUDA_GEMM
#undef SIMCUDA_CONV
};

static void fill_op_letters(const char *tmpl, char *ret, size_t n) {
  size_t o = 0;
  for (size_t i = 0; tmpl[i] && o + 3 < n; i++) {
    if (tmpl[i] == '$' && (tmpl[i + 1] == 't' || tmpl[i + 1] == 'T')) {
      ret[o++] = tmpl[i + 1] == 't' ? 'n' : 'N';
      ret[o++] = tmpl[i + 1] == 't' ? 't' : 'T';
      i++;
    } else {
      ret[o++] = tmpl[i];
    }
  }
  ret[o] = '\0';
}

/* CUPTI names a C++ kernel by its symbol: every "void ..." row comes out
 * mangled and demangles back to the row's text exactly. */
static void cpp_names_are_mangled_and_demangle_to_the_table_text(void **state) {
  (void)state;
  int cpp = 0;
  for (size_t i = 0; i < sizeof table_names / sizeof table_names[0]; i++) {
    char readable[1024];
    fill_op_letters(table_names[i], readable, sizeof readable);
    char *mangled = simcuda_mangle(readable);
    if (strncmp(readable, "void ", 5) != 0) {
      assert_null(mangled);
      continue;
    }
    cpp++;
    assert_non_null(mangled);
    assert_true(strncmp(mangled, "_Z", 2) == 0);
    int status = -1;
    char *back = __cxa_demangle(mangled, NULL, NULL, &status);
    assert_int_equal(status, 0);
    assert_string_equal(back, readable);
    free(back);
    free(mangled);
  }
  assert_true(cpp >= 20);
}

/* __cxa_demangle's text of a function symbol without what mpprof leaves
 * out (the return type "void " and the parameter list): malloc'd. */
static char *name_part(const char *mangled) {
  int status = -1;
  char *full = __cxa_demangle(mangled, NULL, NULL, &status);
  assert_int_equal(status, 0);
  size_t end = strlen(full), depth = 0;
  assert_true(end > 0 && full[end - 1] == ')');
  do { /* back to the '(' that opens the parameters */
    end--;
    depth += full[end] == ')';
    depth -= full[end] == '(';
  } while (depth);
  full[end] = '\0';
  const char *from = strncmp(full, "void ", 5) ? full : full + 5;
  char *part = strdup(from);
  free(full);
  return part;
}

/* What the report shows of a kernel (mp_kernel_demangle) is c++filt's name
 * for every C++ row: the gemv kernels (cublasSgemv, which mpprof does not
 * hook, names them in library_calls_not_hooked) reuse qualified types and
 * template-ids by substitution, and came out mangled. */
static void the_report_demangles_every_cpp_row_as_cxxfilt(void **state) {
  (void)state;
  int cpp = 0;
  for (size_t i = 0; i < sizeof table_names / sizeof table_names[0]; i++) {
    char readable[1024], shown[MP_KERNEL_SHOWN_MAX];
    fill_op_letters(table_names[i], readable, sizeof readable);
    char *mangled = simcuda_mangle(readable);
    if (!mangled) continue;
    cpp++;
    char *want = name_part(mangled);
    assert_string_equal(mp_kernel_demangle(mangled, shown, sizeof shown), want);
    free(want);
    free(mangled);
  }
  assert_true(cpp >= 20);
}

/* A symbol ptxas printed (kernel-names.md, file id 36778022704) comes back
 * from its c++filt form, T_ and the substitution order included. */
static void a_real_cutlass_symbol_round_trips(void **state) {
  (void)state;
  static const char real[] =
      "_ZN7cutlass13device_kernelI128cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_"
      "bf16_256x128x64_1x2x1_0_nnn_align8_warpspecialized_pingpong_epi_nosmemEEvNT_6ParamsE";
  int status = -1;
  char *readable = __cxa_demangle(real, NULL, NULL, &status);
  assert_int_equal(status, 0);
  char *mangled = simcuda_mangle(readable);
  assert_string_equal(mangled, real);
  free(mangled);
  free(readable);
}

/* What a simcuda kernel reports: the symbol, not the readable form. */
static void kernels_report_their_symbol(void **state) {
  (void)state;
  unsigned g[3], b[3];
  const char *n =
      gemm(CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 'N', 'T', 255, 255, 0, 0, g, b);
  assert_string_equal(n, "_ZN7cutlass7Kernel2I51cutlass_80_tensorop_s1688gemm_64x256_16x4_nt_"
                         "align1EEvNT_6ParamsE");
  n = gemm(CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 'T', 'N', 4096, 4096, 1, 0, g, b);
  assert_string_equal(n, "nvjet_sm90_hsh_128x256_64x4_2x1_v_bz_coopA_TNN");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fp32_without_tf32_picks_the_cuda_core_ffma_kernel),
      cmocka_unit_test(fp32_with_tf32_picks_a_tf32_tensor_core_kernel),
      cmocka_unit_test(half_precision_names_carry_their_dtype_tokens),
      cmocka_unit_test(misaligned_and_vector_shapes_change_kernel_family),
      cmocka_unit_test(every_supported_gemm_combination_has_a_listed_name),
      cmocka_unit_test(names_are_stable_pointers),
      cmocka_unit_test(conv_names_follow_math_type_and_channel_alignment),
      cmocka_unit_test(cpp_names_are_mangled_and_demangle_to_the_table_text),
      cmocka_unit_test(a_real_cutlass_symbol_round_trips),
      cmocka_unit_test(the_report_demangles_every_cpp_row_as_cxxfilt),
      cmocka_unit_test(kernels_report_their_symbol),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
