/* Kernel-name classification: every real name of tests/gpu/kernel_names.tsv
 * gets its expected Tensor Core verdict and dtypes, plus the traps of
 * ../shared/kernel-names.md spelled out one behaviour per test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/kernel_class.h"

static const char *g_table;

static const char *verdict_name(mp_tc_verdict v) {
  return v == MP_TC_YES ? "yes" : v == MP_TC_NO ? "no" : "unknown";
}

static void every_listed_kernel_gets_its_expected_verdict_and_dtypes(void **state) {
  (void)state;
  FILE *f = fopen(g_table, "r");
  if (!f) fail_msg("%s: cannot open", g_table);
  char line[4096];
  int rows = 0, bad = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0') continue;
    char *cols[4];
    char *p = line;
    for (int i = 0; i < 4; i++) {
      cols[i] = p;
      p = i < 3 ? strchr(p, '\t') : NULL;
      if (i < 3 && !p) fail_msg("%s: row %d has fewer than 4 columns", g_table, rows + 1);
      if (p) *p++ = '\0';
    }
    mp_kernel_class k;
    mp_kernel_classify(cols[3], &k);
    rows++;
    if (strcmp(verdict_name(k.tc), cols[0]) || strcmp(mp_dtype_name(k.a_dtype), cols[1]) ||
        strcmp(mp_dtype_name(k.acc_dtype), cols[2])) {
      print_error("%s: got %s %s %s, want %s %s %s\n", cols[3], verdict_name(k.tc),
                  mp_dtype_name(k.a_dtype), mp_dtype_name(k.acc_dtype), cols[0], cols[1], cols[2]);
      bad++;
    }
    if (k.tc != MP_TC_UNKNOWN && (k.source != MP_TC_SRC_NAME || !k.rule)) {
      print_error("%s: decided without naming its rule\n", cols[3]);
      bad++;
    }
  }
  fclose(f);
  assert_true(rows >= 160);
  assert_int_equal(bad, 0);
}

static void expect(const char *name, mp_tc_verdict tc, mp_dtype a) {
  mp_kernel_class k;
  mp_kernel_classify(name, &k);
  if (k.tc != tc || k.a_dtype != a)
    fail_msg("%s: got %s/%s", name, verdict_name(k.tc), mp_dtype_name(k.a_dtype));
}

/* Each of n names is library want's. */
static void expect_library(const char *const *names, size_t n, mp_kernel_lib want) {
  for (size_t i = 0; i < n; i++) {
    mp_kernel_lib got = mp_kernel_library(names[i]);
    if (got != want)
      fail_msg("%s: %s, not %s", names[i], got ? mp_kernel_lib_name(got) : "no library",
               mp_kernel_lib_name(want));
  }
}

/* The library a kernel name says launched it (kernels outside hooked calls). */
static void kernel_names_tell_their_library(void **state) {
  (void)state;
  assert_int_equal(mp_kernel_library("nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"), MP_KLIB_CUBLAS);
  assert_int_equal(mp_kernel_library("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"),
                   MP_KLIB_CUBLAS);
  assert_int_equal(mp_kernel_library("void gemv2T_kernel_val<int, int, float>(...)"),
                   MP_KLIB_CUBLAS);
  assert_int_equal(mp_kernel_library("sm80_xmma_fprop_implicit_gemm_f16f16_f16f32_f32_nhwckrsc"),
                   MP_KLIB_CUDNN); /* says gemm too: cuDNN's tokens first */
  assert_int_equal(mp_kernel_library("void cudnn::detail::implicit_convolve_sgemm<float>(...)"),
                   MP_KLIB_CUDNN);
  /* matrix kernels of no hooked library: fused attention, Triton templates */
  assert_int_equal(mp_kernel_library("triton_tem_fused_mm_0"), MP_KLIB_TRITON_TEMPLATE);
  /* CUTLASS templates compiled into a framework (PyTorch's row-wise FP8
   * _scaled_mm, grouped mm), not cuBLAS's named CUTLASS instances */
  assert_int_equal(mp_kernel_library("void cutlass::device_kernel<cutlass::gemm::kernel::"
                                     "GemmUniversal<cute::tuple<int, int, int>, cutlass::gemm::"
                                     "collective::CollectiveMma<...>>>(...)"),
                   MP_KLIB_CUTLASS);
  assert_int_equal(mp_kernel_library("cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<"
                                     "cutlass::gemm::GroupProblemShape<cute::tuple<long, long, "
                                     "long>>, ...>>"),
                   MP_KLIB_CUTLASS);
  assert_int_equal(mp_kernel_library("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_"
                                     "relu_bf16_64x64_64x6_tn_align8>(cutlass_80_tensorop_bf16_"
                                     "s16816gemm_relu_bf16_64x64_64x6_tn_align8::Params)"),
                   MP_KLIB_CUBLAS);
  /* the same as CUPTI names them (mangled): device_kernel<GemmUniversal<...>>,
   * CUTLASS 2's Kernel<Gemm<...>>, a kernel of another namespace */
  assert_int_equal(
      mp_kernel_library("_ZN7cutlass13device_kernelINS_4gemm6kernel13GemmUniversalIN4cute"
                        "5tupleIJiiiEEENS1_10collective13CollectiveMmaIvEEvEEEEvNT_"
                        "6ParamsE"),
      MP_KLIB_CUTLASS);
  assert_int_equal(mp_kernel_library("_ZN7cutlass6KernelINS_4gemm6kernel4GemmIvEEEEvNT_6ParamsE"),
                   MP_KLIB_CUTLASS);
  assert_int_equal(mp_kernel_library("_ZN2at6native11run_groupedIN7cutlass4gemm6kernel13GemmUniver"
                                     "salIvEEEEvv"),
                   MP_KLIB_CUTLASS);
  assert_int_equal(
      mp_kernel_library("_ZN7cutlass7Kernel2I66cutlass_80_tensorop_bf16_s16816gemm_relu_"
                        "bf16_64x64_64x6_tn_align8EEvNT_6ParamsE"),
      MP_KLIB_CUBLAS);
  /* cuBLAS's kernel families as traces name them (kernel-names.md) */
  static const char *const cublas_names[] = {
      "ampere_sgemm_128x64_tn",
      "ampere_fp16_s16816gemm_fp16_128x256_ldg8_f2f_stages_64x3_tn",
      "volta_h884gemm_64x64_ldg8_nn",
      "turing_fp16_s1688gemm_fp16_128x64_sliced1x2_ldg8_f2f_tn",
      "maxwell_sgemm_128x64_nn",
      "volta_cgemm_32x64_tn",
      "sgemm_128x128x8_TN_vec",
      "void fermiCgemm_v3_kernel<bool=1, bool=0, bool=0, bool=0, int=5, int=5, int=3, int=8, "
      "int=8>(...)",
      "void gemmSN_NN_kernel<float, float, float, int=128, int=2, int=4, int=8, int=4, int=4>"
      "(cublasGemmSmallNParams<float, float, float>, ...)",
      "void internal::gemvx::kernel<int, int, __half, __half, __half, float, false, true, true, "
      "false, 7, false, cublasGemvParamsEx<...>>(...)",
      "_ZN8internal5gemvx6kernelIii6__halfS1_S1_"
      "fLb0ELb1ELb1ELb0ELi7ELb0E18cublasGemvParamsExIiEEEvT11_",
      "_Z17gemv2T_kernel_valIiiffffLi128ELi16ELi4ELi4ELb0ELb0E18cublasGemvParamsExEvT11_T4_S2_",
      "void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, ...)",
      "cublasLt::splitKreduce_kernel<32, 16, int, float, bf16>",
      "cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4",
      "cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_64x32x16_1x1x1_3_nnn_align1_bias_f32_relu",
      "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8_stage3_warpsize2x2x1_ffma",
  };
  expect_library(cublas_names, sizeof cublas_names / sizeof cublas_names[0], MP_KLIB_CUBLAS);
  /* GEMMs of no hooked library: not counted as cuBLAS's (a "statically
   * linked cuBLAS" they are not) but as other GEMMs */
  static const char *const other_names[] = {
      "void deep_gemm::fp8_gemm_kernel<128u, 128u, 128u, 4u>(float*, int*, unsigned int)",
      "_ZN9deep_gemm15fp8_gemm_kernelILj128ELj128EEEvPfPij",
      "trt_ampere_h16816gemm_128x64_ldg8_nn_v1",
      "cudaCoreGemm",
      "matmul_kernel",
      "_ZN4mine11tiled_sgemmILi32EEEvPKfS2_Pfiii",
      "void my_gemv<float>(float const*, float const*, float*, int)",
      /* CUTLASS library kernels compiled into a program (ptxas / CUPTI form
       * and demangled), TensorRT tactics, BLAS-like user names */
      "_ZN7cutlass13device_kernelI128cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_"
      "bf16_256x128x64_1x2x1_0_nnn_align8_warpspecialized_pingpong_epi_nosmemEEvNT_6ParamsE",
      "void cutlass::device_kernel<cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_bf16_128x256x64_"
      "1x1x1_0_tnn_align8_warpspecialized_cooperative_epi_tma>(...)",
      "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_"
      "execute_kernel_trt",
      "sgemm_naive",
      "hgemm_wmma_kernel",
      "dgemm_kernel",
  };
  expect_library(other_names, sizeof other_names / sizeof other_names[0], MP_KLIB_OTHER_GEMM);
  assert_string_equal(mp_kernel_lib_name(MP_KLIB_OTHER_GEMM), "other_gemm");
  assert_false(mp_kernel_lib_hooked(MP_KLIB_OTHER_GEMM));
  assert_int_equal(mp_kernel_library("void at::native::vectorized_elementwise_kernel<4>(...)"),
                   MP_KLIB_NONE);
  assert_int_equal(mp_kernel_library("gemma_rmsnorm_kernel"), MP_KLIB_NONE); /* a model's name */
  assert_string_equal(mp_kernel_lib_name(MP_KLIB_CUTLASS), "cutlass");
  assert_false(mp_kernel_lib_hooked(MP_KLIB_CUTLASS));
  assert_int_equal(mp_kernel_library("triton_poi_fused_add_0"), MP_KLIB_NONE);
  assert_int_equal(mp_kernel_library("triton_red_fused_sum_gemm_like_1"), MP_KLIB_NONE);
  assert_int_equal(mp_kernel_library("fmha_cutlassF_bf16_aligned_64x64_rf_sm80"),
                   MP_KLIB_ATTENTION);
  assert_int_equal(mp_kernel_library("void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_"
                                     "fwd_kernel_traits<128, 128, 64, 4, false, false, "
                                     "cutlass::bfloat16_t>>(pytorch_flash::Flash_fwd_params)"),
                   MP_KLIB_ATTENTION);
  assert_int_equal(mp_kernel_library("flash_fwd_sm100_bf16_head_dim128_tile128x128_threads384_"
                                     "causal_kernel_cutlass_kernel_flash_attncute"),
                   MP_KLIB_ATTENTION);
  assert_int_equal(
      mp_kernel_library("void cutlass::device_kernel<flash::enable_sm90_or_later<"
                        "flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2>>>>"
                        "(...)"),
      MP_KLIB_ATTENTION); /* FlashAttention 3: no flash_fwd in its name */
  assert_int_equal(mp_kernel_library("kernel_cutlass_kernel_flash_attncuteflash_fwd_sm100Flash"
                                     "AttentionForwardSm100_object_at__tensor0000o1"),
                   MP_KLIB_ATTENTION);
  assert_int_equal(mp_kernel_library("cudnn_generated_fort_native_sdpa_sm80_knob_6_64x64x64_4x1x1"),
                   MP_KLIB_CUDNN); /* cuDNN's SDPA: a cuDNN call */
  assert_string_equal(mp_kernel_lib_name(MP_KLIB_ATTENTION), "attention");
  assert_true(!mp_kernel_lib_hooked(MP_KLIB_ATTENTION) && mp_kernel_lib_hooked(MP_KLIB_CUBLAS));
  assert_int_equal(mp_kernel_library("void at::native::vectorized_elementwise_kernel<4>(...)"),
                   MP_KLIB_NONE);
  assert_int_equal(mp_kernel_library("gemma_rmsnorm_kernel"), MP_KLIB_NONE); /* a model's name */
  assert_string_equal(mp_kernel_lib_name(MP_KLIB_CUDNN), "cudnn");
}

static void fp32_sgemm_in_xmma_clothes_is_not_tensor_core(void **state) {
  (void)state;
  expect("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize256x64x8_stage3_warpsize2x2x1_ffma_aligna4_"
         "alignc4_execute_kernel__5x_cublas",
         MP_TC_NO, MP_FP32);
}

static void xmma_f32_field_cut_before_ffma_is_still_not_tensor_core(void **state) {
  (void)state;
  expect("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n...", MP_TC_NO, MP_FP32);
}

static void tf32_xmma_field_is_tensor_core_tf32(void **state) {
  (void)state;
  expect("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1", MP_TC_YES,
         MP_TF32);
}

static void simt_beats_a_modern_prefix(void **state) {
  (void)state;
  expect("cutlass3x_sm100_simt_sgemm_f32_f32_f32_f32_f32_64x32x16_1x1x1_3_nnn_align1", MP_TC_NO,
         MP_FP32);
}

static void split_k_reduce_and_gemv_helpers_are_not_tensor_core(void **state) {
  (void)state;
  expect("void splitKreduce_kernel<__half, __half, __half, __half>(cublasSplitKParams<__half>)",
         MP_TC_NO, MP_DTYPE_INVALID);
  expect("internal::gemvx::kernel<int, int, __nv_bfloat16, float>", MP_TC_NO, MP_DTYPE_INVALID);
}

static void xmma_pooling_is_not_a_gemm(void **state) {
  (void)state;
  expect("sm50_xmma_pooling_coalescedC_NHWC_kMAX_3_False_execute_kernel_trt", MP_TC_NO,
         MP_DTYPE_INVALID);
}

static void nvjet_letters_give_dtypes(void **state) {
  (void)state;
  mp_kernel_class k;
  mp_kernel_classify("nvjet_sm90_hsh_320x128_64x3_1x2_h_bz_coopB_TNT", &k);
  assert_int_equal(k.tc, MP_TC_YES);
  assert_int_equal(k.a_dtype, MP_FP16);
  assert_int_equal(k.acc_dtype, MP_FP32);
  assert_string_equal(k.instr, "gmma");
  expect("nvjet_tst_64x8_64x16_4x1_v_bz_TNT", MP_TC_YES, MP_BF16);
  expect("nvjet_sm90_qqtst_128x128_128x6_1x2_h_bz_ovscale_TNT", MP_TC_YES, MP_FP8_E4M3);
  expect("nvjet_sss_tf32_128x256_TNT", MP_TC_YES, MP_TF32);
}

static void fp32_nvjet_without_tf32_token_is_not_guessed(void **state) {
  (void)state;
  expect("nvjet_sss_128x256_TNT", MP_TC_UNKNOWN, MP_FP32);
}

static void hopper_fp64_dgemm_is_dmma_not_wgmma(void **state) {
  (void)state;
  mp_kernel_class k;
  mp_kernel_classify("sm90_xmma_gemm_f64f64_f64f64_f64_tn_n_tilesize64x128x16_stage3_warpsize2x2x1_"
                     "tensor16x8x8_execute_kernel",
                     &k);
  assert_int_equal(k.tc, MP_TC_YES);
  assert_int_equal(k.a_dtype, MP_FP64);
  assert_string_equal(k.instr, "dmma");
}

static void s1688_without_dtype_word_is_tf32(void **state) {
  (void)state;
  expect("cutlass_80_tensorop_s1688gemm_256x64_nn_align4", MP_TC_YES, MP_TF32);
  expect("turing_fp16_s1688gemm_fp16_128x64_sliced1x2_ldg8_f2f_tn", MP_TC_YES, MP_FP16);
}

static void mangled_cutlass3x_name_is_demangled_and_classified(void **state) {
  (void)state;
  const char *m = "_ZN7cutlass13device_kernelI128cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_"
                  "f32_bf16_bf16_256x128x64_1x2x1_0_nnn_align8_warpspecialized_pingpong_epi_"
                  "nosmemEEvNT_6ParamsE";
  char buf[512];
  mp_kernel_demangle(m, buf, sizeof buf);
  assert_string_equal(buf, "cutlass::device_kernel<cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_"
                           "bf16_f32_bf16_bf16_256x128x64_1x2x1_0_nnn_align8_warpspecialized_"
                           "pingpong_epi_nosmem>");
  expect(m, MP_TC_YES, MP_BF16);
}

static void demangler_renders_builtin_and_literal_template_args(void **state) {
  (void)state;
  char buf[256];
  mp_kernel_demangle("_Z17gemv2T_kernel_valIiifffLi128ELb1EEvT_", buf, sizeof buf);
  assert_string_equal(buf, "gemv2T_kernel_val<int, int, float, float, float, 128, true>");
}

static void demangler_keeps_plain_and_unreadable_names(void **state) {
  (void)state;
  char buf[64];
  assert_string_equal(mp_kernel_demangle("ampere_sgemm_128x64_tn", buf, sizeof buf),
                      "ampere_sgemm_128x64_tn");
  assert_string_equal(mp_kernel_demangle("_Z99x", buf, sizeof buf), "_Z99x");
  char tiny[8];
  /* longer than the buffer: cut, readable (it was the mangled form, cut) */
  char longname[700] = "_ZN7cutlass6KernelI600", shown[MP_KERNEL_SHOWN_MAX];
  memset(longname + strlen(longname), 'g', 600);
  strcpy(longname + 22 + 600, "EEvv");
  mp_kernel_demangle(longname, shown, sizeof shown);
  assert_int_equal(strlen(shown), MP_KERNEL_SHOWN_MAX - 1);
  assert_memory_equal(shown, "cutlass::Kernel<ggg", 19);
  assert_string_equal(shown + MP_KERNEL_SHOWN_MAX - 4, "...");
  assert_string_equal(mp_kernel_demangle("_ZN7cutlass13device_kernelEv", tiny, sizeof tiny),
                      "cutl...");
}

/* Kernel names come from raw files: a crafted one must not read outside the
 * demangler's state (a signed substitution index did) or exhaust the stack
 * (nesting), only stay as it is. */
static void demangler_keeps_hostile_names_mangled(void **state) {
  (void)state;
  char buf[256];
  static const char *const hostile[] = {"_ZN1a1bIS-99999_EE", "_ZN1a1bIS-1_EE",
                                        "_ZN1a1bIS 1_EE",     "_ZN1a1bISzzzzzzzzzzzzzzzz_EE",
                                        "_ZN1a1bIS1_EE",      "_Z1aILi-3EE"};
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++)
    assert_string_equal(mp_kernel_demangle(hostile[i], buf, sizeof buf), hostile[i]);
  enum { DEEP = 200000 };
  char *deep = malloc(DEEP + 16);
  assert_non_null(deep);
  strcpy(deep, "_Z1aI");
  memset(deep + 5, 'P', DEEP);
  strcpy(deep + 5 + DEEP, "iEv");
  char *big = malloc(DEEP + 16);
  assert_non_null(big);
  assert_string_equal(mp_kernel_demangle(deep, big, DEEP + 16), deep);
  free(big);
  free(deep);
  /* what c++filt prints: qualifiers after, "> >", literal suffixes */
  assert_string_equal(mp_kernel_demangle("_Z1fI1AIPKcEN1B1CIjEELj7ELm2ELc65EEvv", buf, sizeof buf),
                      "f<A<char const*>, B::C<unsigned int>, 7u, 2ul, (char)65>");
  assert_string_equal(mp_kernel_demangle("_Z1fI1AIS0_IiEEEvv", buf, sizeof buf), "f<A<A<int> > >");
  assert_string_equal(mp_kernel_demangle("_ZN1a1bIS0_EE", buf, sizeof buf), "a::b<a::b>");
  /* a qualifier set is one substitution candidate; anonymous namespaces */
  assert_string_equal(mp_kernel_demangle("_ZN1a1bIVKiS1_EEvv", buf, sizeof buf),
                      "a::b<int const volatile, int const volatile>");
  assert_string_equal(mp_kernel_demangle("_ZN1a1bIVKiS2_EEvv", buf, sizeof buf),
                      "_ZN1a1bIVKiS2_EEvv");
  assert_string_equal(mp_kernel_demangle("_ZN12_GLOBAL__N_16kernelEv", buf, sizeof buf),
                      "(anonymous namespace)::kernel");
}

static void unknown_kernels_stay_unknown_with_no_rule(void **state) {
  (void)state;
  mp_kernel_class k;
  mp_kernel_classify("void at::native::reduce_kernel<512, 1>(float*)", &k);
  assert_int_equal(k.tc, MP_TC_UNKNOWN);
  assert_int_equal(k.source, MP_TC_SRC_UNKNOWN);
  assert_null(k.rule);
  mp_kernel_classify(NULL, &k);
  assert_int_equal(k.tc, MP_TC_UNKNOWN);
  assert_string_equal(mp_tc_source_name(MP_TC_SRC_NAME), "name");
  assert_string_equal(mp_tc_source_name(MP_TC_SRC_COUNTERS), "counters");
  assert_string_equal(mp_tc_source_name(MP_TC_SRC_UNKNOWN), "unknown");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s kernel_names.tsv\n", argv[0]);
    return 2;
  }
  g_table = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_listed_kernel_gets_its_expected_verdict_and_dtypes),
      cmocka_unit_test(kernel_names_tell_their_library),
      cmocka_unit_test(fp32_sgemm_in_xmma_clothes_is_not_tensor_core),
      cmocka_unit_test(xmma_f32_field_cut_before_ffma_is_still_not_tensor_core),
      cmocka_unit_test(tf32_xmma_field_is_tensor_core_tf32),
      cmocka_unit_test(simt_beats_a_modern_prefix),
      cmocka_unit_test(split_k_reduce_and_gemv_helpers_are_not_tensor_core),
      cmocka_unit_test(xmma_pooling_is_not_a_gemm),
      cmocka_unit_test(nvjet_letters_give_dtypes),
      cmocka_unit_test(fp32_nvjet_without_tf32_token_is_not_guessed),
      cmocka_unit_test(hopper_fp64_dgemm_is_dmma_not_wgmma),
      cmocka_unit_test(s1688_without_dtype_word_is_tf32),
      cmocka_unit_test(mangled_cutlass3x_name_is_demangled_and_classified),
      cmocka_unit_test(demangler_renders_builtin_and_literal_template_args),
      cmocka_unit_test(demangler_keeps_plain_and_unreadable_names),
      cmocka_unit_test(demangler_keeps_hostile_names_mangled),
      cmocka_unit_test(unknown_kernels_stay_unknown_with_no_rule),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
