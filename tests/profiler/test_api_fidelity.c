/* End-to-end tests of calls whose faithful recording needs more than the
 * call's arguments (issue 17): grouped GEMMs (one site per group, with that
 * group's values), cuBLASLt pointer-array batches, ... Each runs
 * mpp_fidelity_prog plain and under `mpprof run` on simcuda: same output and
 * exit status, then checks the raw file.
 *
 * Paths come from the environment (set by meson): MPP_MPPROF, MPP_FIDELITY_PROG,
 * MPP_SIMCUDA (the stand-in libraries), MPP_WORKDIR (scratch). */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "profiler/gpu/gpu.h"
#include "sim_run.h"

static const char *mpprof, *prog, *dlopen_prog;

/* Runs `prog MODE` plain and under `mpprof -o dir [opts]`; both must print the
 * same and exit 0. Returns the raw document (one process, one raw file). */
static cJSON *run_mode(const char *dir, const char *mode, const char *const opts[]) {
  char *plain_argv[] = {(char *)prog, (char *)mode, NULL};
  result plain = run(plain_argv, NULL);
  char *argv[32];
  int n = 0;
  argv[n++] = (char *)mpprof;
  argv[n++] = "-o";
  argv[n++] = (char *)dir;
  for (int i = 0; opts && opts[i]; i++)
    argv[n++] = (char *)opts[i];
  argv[n++] = "--";
  argv[n++] = (char *)prog;
  argv[n++] = (char *)mode;
  argv[n] = NULL;
  result prof = run(argv, NULL);
  assert_int_equal(plain.status, 0);
  assert_int_equal(prof.status, 0);
  assert_string_equal(prof.out, plain.out);
  free(plain.out);
  free(prof.out);
  char raw[4300];
  snprintf(raw, sizeof raw, "%s/raw", dir);
  DIR *d = opendir(raw);
  assert_non_null(d);
  cJSON *doc = NULL;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 5 || strcmp(e->d_name + len - 5, ".json")) continue;
    assert_null(doc); /* one process: one raw file */
    char p[4600];
    snprintf(p, sizeof p, "%s/%s", raw, e->d_name);
    char *s = slurp(p);
    doc = cJSON_Parse(s);
    free(s);
    assert_non_null(doc);
  }
  closedir(d);
  assert_non_null(doc);
  return doc;
}

static cJSON *get(cJSON *o, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *k = strtok(buf, "."); k && o; k = strtok(NULL, "."))
    o = cJSON_IsArray(o) ? cJSON_GetArrayItem(o, atoi(k)) : cJSON_GetObjectItem(o, k);
  return o;
}

static double num(cJSON *o, const char *path) {
  cJSON *v = get(o, path);
  if (!v) fprintf(stderr, "missing %s\n", path);
  assert_non_null(v);
  return cJSON_GetNumberValue(v);
}

static bool str_is(cJSON *o, const char *path, const char *want) {
  cJSON *v = get(o, path);
  return v && cJSON_GetStringValue(v) && !strcmp(cJSON_GetStringValue(v), want);
}

/* The site with this api and m (-1: any); fails when absent. */
static cJSON *site(cJSON *doc, const char *api, int64_t m) {
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(doc, "sites")) {
    if (str_is(s, "api", api) && (m < 0 || num(s, "m") == (double)m)) return s;
  }
  fprintf(stderr, "no site api=%s m=%lld\n", api, (long long)m);
  fail();
  return NULL;
}

static void each_group_of_a_grouped_gemm_has_its_own_operand_values(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("grouped2"), "grouped2", NULL);
  cJSON *g0 = site(doc, "cublasSgemmGroupedBatched", 2),
        *g1 = site(doc, "cublasSgemmGroupedBatched", 3);
  assert_int_equal(num(g0, "batch"), 2);
  assert_int_equal(num(g0, "tensors.A.count"), 8); /* 1..8 */
  assert_int_equal(num(g0, "tensors.A.min"), 1);
  assert_int_equal(num(g0, "tensors.A.max"), 8);
  assert_int_equal(num(g0, "tensors.B.max"), 8);
  assert_int_equal(num(g1, "tensors.A.count"), 9); /* 1..9 */
  assert_int_equal(num(g1, "tensors.A.max"), 9);
  assert_int_equal(num(g1, "tensors.B.max"), 9);
  /* The matrices of a pointer array give the alignment: d0 + 4 floats. */
  assert_int_equal(num(g0, "ptr_align"), 16);
  cJSON_Delete(doc);
}

static void a_pointer_array_lt_batch_is_scanned_matrix_by_matrix(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("ltptr"), "ltptr", NULL);
  cJSON *s = site(doc, "cublasLtMatmul", 4);
  assert_int_equal(num(s, "batch"), 2);
  assert_int_equal(num(s, "tensors.A.count"), 32); /* 0..31 over both matrices */
  assert_int_equal(num(s, "tensors.A.min"), 0);
  assert_int_equal(num(s, "tensors.A.max"), 31);
  assert_int_equal(num(s, "tensors.A.zeros"), 1);
  assert_int_equal(num(s, "tensors.B.count"), 32);
  assert_true(num(s, "tensors.B.min") == 0.5 && num(s, "tensors.B.max") == 63.0 / 64);
  assert_int_equal(num(s, "tensors.D.count"), 32);
  assert_true(num(s, "tensors.D.min") > 0);  /* a sum of positive products, not pointer bytes */
  assert_int_equal(num(s, "ptr_align"), 32); /* the second matrices: 16 fp16 past the first */
  cJSON_Delete(doc);
}

static void cudnn_backend_matmul_records_its_compute_type(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("cudnnmm"), "cudnnmm", NULL);
  cJSON *s = site(doc, "cudnnBackendExecute", 4);
  assert_true(str_is(s, "op", "matmul"));
  assert_true(str_is(s, "types.A", "fp16"));
  assert_true(str_is(s, "compute_type", "fp32"));
  /* Two executions of one plan, each with its own variant pack's buffers:
   * A held 0..4, then 16..20 (the second call's pointers, not the first's). */
  assert_int_equal(num(s, "calls"), 2);
  assert_int_equal(num(s, "tensors.A.count"), 2 * 4 * 8);
  assert_int_equal(num(s, "tensors.A.min"), 0);
  assert_int_equal(num(s, "tensors.A.max"), 20);
  assert_int_equal(num(s, "tensors.B.count"), 2 * 8 * 4);
  assert_int_equal(num(s, "tensors.B.max"), 2);
  assert_int_equal(num(s, "tensors.C.count"), 2 * 4 * 4);
  cJSON_Delete(doc);
}

/* Legacy cuDNN convolutions are decoded through a per-thread memo keyed by
 * what the descriptors' getters say: descriptors changed in place between
 * calls give the new shape's site, and each call's own buffers are scanned. */
static void legacy_conv_descriptors_changed_in_place_are_read_again(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("cudnnlegacy"), "cudnnlegacy", NULL);
  cJSON *a = site(doc, "cudnnConvolutionForward", 16), *b = site(doc, "cudnnConvolutionForward", 8);
  assert_int_equal(num(a, "calls"), 1);
  assert_int_equal(num(a, "conv.h"), 4);
  assert_int_equal(num(a, "tensors.x.count"), 16);
  assert_int_equal(num(a, "tensors.x.min"), 1);
  assert_int_equal(num(a, "tensors.x.max"), 16);
  assert_int_equal(num(b, "calls"), 2);
  assert_int_equal(num(b, "conv.h"), 2);
  assert_int_equal(num(b, "conv.w"), 4);
  assert_int_equal(num(b, "tensors.x.count"), 16); /* 8 a call */
  assert_int_equal(num(b, "tensors.x.min"), -5);   /* the third call's buffer */
  assert_int_equal(num(b, "tensors.x.max"), 107);  /* the second's */
  assert_int_equal(num(b, "tensors.y.max"), 107);
  cJSON_Delete(doc);
}

static cJSON *load_json(const char *dir, const char *name);
static bool has_finding(cJSON *report, const char *kind);

/* The site of api and m whose tensors have (has) or lack (!has) role. */
static cJSON *site_with(cJSON *doc, const char *api, int64_t m, const char *role, bool has) {
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(doc, "sites")) {
    if (str_is(s, "api", api) && num(s, "m") == (double)m &&
        (cJSON_GetObjectItem(cJSON_GetObjectItem(s, "tensors"), role) != NULL) == has)
      return s;
  }
  fprintf(stderr, "no site api=%s m=%lld %s %s\n", api, (long long)m, has ? "with" : "without",
          role);
  fail();
  return NULL;
}

/* alpha == 0: BLAS references neither A nor B, so their NaN (here all of A)
 * reach nothing and are not scanned (they were, and the input NaN was the
 * op's); beta == 0: C, NaN here, is not read either. cublasSgemm (alpha 0,
 * beta 0: D = 0) and cublasLtMatmul (alpha 0, beta 1: D = C). */
static void a_zero_alpha_reads_neither_a_nor_b(void **state) {
  (void)state;
  const char *dir = outdir("alpha0");
  cJSON *doc = run_mode(dir, "alpha0", NULL);
  cJSON *s = site(doc, "cublasSgemm_v2", 4);
  assert_null(get(s, "tensors.A"));
  assert_null(get(s, "tensors.B"));
  assert_null(get(s, "tensors.C"));
  assert_int_equal(num(s, "tensors.D.count"), 16);
  assert_int_equal(num(s, "tensors.D.zeros"), 16);
  cJSON *l = site(doc, "cublasLtMatmul", 3);
  assert_null(get(l, "tensors.A"));
  assert_null(get(l, "tensors.B"));
  assert_int_equal(num(l, "tensors.C.count"), 6);
  assert_int_equal(num(l, "tensors.D.min"), 10);
  cJSON_Delete(doc);
  cJSON *rep = load_json(dir, "report.json");
  assert_false(has_finding(rep, "nonfinite_values"));
  cJSON_Delete(rep);
}

/* cuBLASLt's vector pointer modes: DEVICE_VECTOR with beta 0 in every row
 * but the last, which reads its row of C: C is scanned (it was judged by
 * beta[0] alone); ALPHA_DEVICE_VECTOR_BETA_HOST with every alpha 0: A (NaN)
 * and B are not read. simcuda computes both (D's rows as the vectors say). */
static void vector_alphas_and_betas_decide_what_is_read(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("ltvec"), "ltvec", NULL);
  cJSON *v = site(doc, "cublasLtMatmul", 4);
  assert_int_equal(num(v, "tensors.C.count"), 8);
  assert_int_equal(num(v, "tensors.C.min"), 10);
  assert_int_equal(num(v, "tensors.A.count"), 12);
  /* D: row 3 is A.B + 2 C, the others A.B (A 1..12 by B 1..6, k 3) */
  assert_int_equal(num(v, "tensors.D.max"), 162);
  cJSON *z = site(doc, "cublasLtMatmul", 5);
  assert_null(get(z, "tensors.A"));
  assert_null(get(z, "tensors.B"));
  assert_int_equal(num(z, "tensors.C.count"), 10);
  assert_int_equal(num(z, "tensors.D.nans"), 0);
  cJSON_Delete(doc);
}

/* A bias epilogue's bias vector is read: a role of its own ("bias", an input
 * beside A and B). An FP8 GEMM with an fp32 D takes a bf16 bias by default
 * (the cuBLAS documentation's FP8 table), which mpprof and simcuda read as
 * bf16 (1.5, not two halves of a float): D = 16 + 1.5. */
static void a_bias_epilogue_reads_its_bias_of_its_type(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("ltbias"), "ltbias", NULL);
  cJSON *s = site(doc, "cublasLtMatmul", 4);
  assert_true(str_is(s, "epilogue", "BIAS"));
  assert_int_equal(num(s, "tensors.bias.count"), 4);
  assert_true(num(s, "tensors.bias.min") == 0.5 && num(s, "tensors.bias.max") == 2);
  cJSON *f = site(doc, "cublasLtMatmul", 16);
  assert_true(str_is(f, "tensors.bias.dtype", "bf16"));
  assert_int_equal(num(f, "tensors.bias.count"), 16);
  assert_true(num(f, "tensors.bias.max") == 1.5);
  assert_true(num(f, "tensors.D.min") == 17.5);
  cJSON_Delete(doc);
}

/* The site of this api and epilogue; fails when absent. */
static cJSON *site_epi(cJSON *doc, const char *api, const char *epilogue) {
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(doc, "sites")) {
    if (str_is(s, "api", api) && str_is(s, "epilogue", epilogue)) return s;
  }
  fprintf(stderr, "no site api=%s epilogue=%s\n", api, epilogue);
  fail();
  return NULL;
}

/* The GELU aux epilogues' aux buffer holds the GELU's input, stored in D's
 * type (fp16 here): GELU_AUX_BIAS writes it (role aux: -2 * 60000 + 0.5
 * overflows fp16 to -Inf there while D, GELU's -0 of it, holds none; were
 * the aux not scanned the overflow would be nowhere), DGELU reads it back
 * (aux_in: the Infs its NaN came from). The ReLU forms' aux is a bit mask:
 * no numbers, no role. The report takes aux for an output (its Infs made
 * by the op from finite inputs: an fp16 overflow finding naming it), not
 * for an input whose Infs would make the op's inputs non-finite. */
static void a_gelu_aux_epilogue_scans_its_pre_gelu_values(void **state) {
  (void)state;
  const char *dir = outdir("ltaux");
  cJSON *doc = run_mode(dir, "ltaux", NULL);
  cJSON *g = site_epi(doc, "cublasLtMatmul", "GELU_AUX_BIAS");
  assert_true(str_is(g, "tensors.aux.dtype", "fp16"));
  assert_int_equal(num(g, "tensors.aux.count"), 16);
  assert_int_equal(num(g, "tensors.aux.pos_infs"), 1);
  assert_int_equal(num(g, "tensors.aux.neg_infs"), 1);
  assert_int_equal(num(g, "tensors.D.neg_infs"), 0);
  assert_int_equal(num(g, "tensors.bias.count"), 8);
  cJSON *d = site_epi(doc, "cublasLtMatmul", "DGELU");
  assert_true(str_is(d, "tensors.aux_in.dtype", "fp16"));
  assert_int_equal(num(d, "tensors.aux_in.count"), 16);
  assert_int_equal(num(d, "tensors.aux_in.pos_infs"), 1);
  assert_int_equal(num(d, "tensors.aux_in.neg_infs"), 1);
  cJSON *r = site_epi(doc, "cublasLtMatmul", "RELU_AUX_BIAS");
  assert_non_null(get(r, "tensors.bias"));
  assert_null(get(r, "tensors.aux"));
  assert_null(get(r, "tensors.aux_in"));
  cJSON_Delete(doc);
  char path[4400];
  snprintf(path, sizeof path, "%s/report.json", dir);
  char *text = slurp(path);
  cJSON *rep = cJSON_Parse(text);
  free(text);
  assert_non_null(rep);
  bool overflow_named = false;
  cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
    overflow_named |=
        str_is(f, "kind", "fp16_overflow") && str_is(f, "evidence.tensor", "unknown.aux");
  }
  assert_true(overflow_named);
  cJSON_Delete(rep);
}

/* A fused backend graph (a convolution whose virtual output goes through
 * pointwise ops, as frontends and PyTorch build conv + bias + activation)
 * reads each pointwise op's B operand in its epilogue: the bias added
 * (broadcast [1,1,1,1], 0.5), the residual z added ([1,1,4,4], 100..115)
 * and the scale multiplied (2) are input roles of the convolution's site
 * (they were not scanned: a NaN bias was nowhere). */
static void a_fused_graphs_pointwise_operands_are_scanned(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("cudnnfused"), "cudnnfused", NULL);
  cJSON *s = site(doc, "cudnnBackendExecute", 16);
  assert_int_equal(num(s, "tensors.x.count"), 16);
  assert_int_equal(num(s, "tensors.y.count"), 16);
  assert_true(str_is(s, "tensors.bias.dtype", "fp32"));
  assert_int_equal(num(s, "tensors.bias.count"), 1);
  assert_true(num(s, "tensors.bias.max") == 0.5);
  assert_int_equal(num(s, "tensors.z.count"), 16);
  assert_true(num(s, "tensors.z.min") == 100 && num(s, "tensors.z.max") == 115);
  assert_true(num(s, "tensors.scale.max") == 2);
  /* y = 2 (x + 0.5 + z): 2 * (1 + 0.5 + 100) .. */
  assert_true(num(s, "tensors.y.min") == 203);
  cJSON_Delete(doc);
}

/* cuDNN blends with beta != 0 (y = alpha conv + beta y): the old y is read,
 * an input role of its own (y_prior, 100..115 here), in the legacy API and
 * the backend's (CONVOLUTION_FORWARD_BETA); with beta 0 the output is not
 * read (NaN there before: not scanned). The fused bias-activation forward
 * reads z (alpha2 != 0) and its bias. */
static void a_blending_convolution_reads_its_prior_output(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("convbeta"), "convbeta", NULL);
  cJSON *b = site_with(doc, "cudnnConvolutionForward", 16, "y_prior", true);
  assert_int_equal(num(b, "tensors.y_prior.count"), 16);
  assert_int_equal(num(b, "tensors.y_prior.min"), 100);
  assert_int_equal(num(b, "tensors.y_prior.max"), 115);
  assert_int_equal(num(b, "tensors.y.max"), 131); /* 16 + 115 */
  cJSON *z = site_with(doc, "cudnnConvolutionForward", 16, "y_prior", false);
  assert_int_equal(num(z, "tensors.y.nans"), 0);
  cJSON *f = site_with(doc, "cudnnConvolutionBiasActivationForward", 16, "z", true);
  assert_int_equal(num(f, "tensors.z.count"), 16);
  assert_int_equal(num(f, "tensors.bias.count"), 1);
  assert_true(num(f, "tensors.bias.max") == 0.5);
  cJSON *f0 = site_with(doc, "cudnnConvolutionBiasActivationForward", 16, "z", false);
  assert_int_equal(num(f0, "tensors.bias.count"), 1);
  assert_int_equal(num(f0, "tensors.y.nans"), 0);
  cJSON_Delete(doc);
  doc = run_mode(outdir("cudnnbeta"), "cudnnbeta", NULL);
  cJSON *be = site(doc, "cudnnBackendExecute", 16);
  assert_int_equal(num(be, "tensors.y_prior.count"), 16);
  assert_int_equal(num(be, "tensors.y_prior.min"), 100);
  /* The matmul with an M override: A's rows past it (NaN) and C's (NaN,
   * not written) are not of the product: A and C are not scanned (the
   * extent read is ragged), B is. */
  cJSON *mm = site(doc, "cudnnBackendExecute", 4);
  assert_null(get(mm, "tensors.A"));
  assert_null(get(mm, "tensors.C"));
  assert_int_equal(num(mm, "tensors.B.count"), 64);
  assert_int_equal(num(mm, "not_scanned.layout_unsupported"), 2);
  cJSON_Delete(doc);
}

/* A grouped convolution (cudnnSetConvolutionGroupCount) is recorded with
 * its groups and one group's implicit GEMM, a batch of groups: 4 input
 * channels in 2 groups, 6 filters of 2 channels, 1x1, 2x2 outputs: m = 4,
 * n = 3, k = 2, batch 2 (it was n = 6, k = 4: twice the flops). */
static void a_grouped_convolution_records_its_groups(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("cudnngroups"), "cudnngroups", NULL);
  cJSON *s = site(doc, "cudnnConvolutionForward", 4);
  assert_int_equal(num(s, "conv.groups"), 2);
  assert_int_equal(num(s, "conv.c"), 4);
  assert_int_equal(num(s, "conv.k"), 6);
  assert_int_equal(num(s, "n"), 3);
  assert_int_equal(num(s, "k"), 2);
  assert_int_equal(num(s, "batch"), 2);
  assert_int_equal(num(s, "tensors.x.count"), 16);
  assert_int_equal(num(s, "tensors.y.count"), 24);
  cJSON_Delete(doc);
}

/* A program that picks its cuBLASLt algorithm the way NVIDIA's
 * LtSgemmCustomFind sample does (AlgoGetIds, AlgoInit, capabilities, config,
 * AlgoCheck) runs unchanged under mpprof, and its matmul is recorded. */
static void a_cublaslt_program_choosing_its_algorithm_runs_and_is_recorded(void **state) {
  (void)state;
  cJSON *doc = run_mode(outdir("ltalgo"), "ltalgo", NULL);
  cJSON *s = site(doc, "cublasLtMatmul", 4);
  assert_int_equal(num(s, "n"), 3);
  assert_int_equal(num(s, "k"), 5);
  assert_true(str_is(s, "types.A", "fp32"));
  assert_int_equal(num(s, "tensors.A.count"), 20); /* 1..20, uploaded by cublasSetMatrix */
  assert_int_equal(num(s, "tensors.A.min"), 1);
  assert_int_equal(num(s, "tensors.A.max"), 20);
  assert_true(num(s, "tensors.B.min") == 0.5 && num(s, "tensors.B.max") == 7.5);
  cJSON_Delete(doc);
}

static cJSON *load_json(const char *dir, const char *name);
static bool has_finding(cJSON *report, const char *kind);

/* Issue 17's case: an e4m3 matmul whose D was clamped to 448 everywhere (the
 * true values are 4096), A scale 2, B scale 0.5, AMAX_D requested. */
static void a_saturated_fp8_output_is_overflow_with_its_scales_and_amax(void **state) {
  (void)state;
  const char *dir = outdir("fp8sat");
  cJSON *doc = run_mode(dir, "fp8sat", NULL);
  cJSON *s = site(doc, "cublasLtMatmul", 16);
  assert_int_equal(num(s, "tensors.D.count"), 256);
  assert_int_equal(num(s, "tensors.D.saturated"), 256);
  assert_null(get(s, "tensors.A.saturated")); /* inputs: stored values, never "saturated" */
  /* Scales recorded as read (the statistics are of the stored values). */
  assert_true(num(s, "fp8_scale_values.A.min") == 2 && num(s, "fp8_scale_values.A.max") == 2);
  assert_true(num(s, "fp8_scale_values.B.min") == 0.5);
  assert_int_equal(num(s, "fp8_scale_values.A.read"), 1);
  assert_null(get(s, "fp8_scale_values.D")); /* no D scale pointer */
  /* AMAX_D as cuBLASLt wrote it: max |alpha*sA*sB*A.B|, before the D scale. */
  assert_true(num(s, "amax_D.max") == 4096);
  assert_int_equal(num(s, "amax_D.read"), 1);
  cJSON_Delete(doc);

  cJSON *rep = load_json(dir, "report.json");
  cJSON *d = cJSON_GetObjectItem(get(rep, "layers.0.tensors"), "unknown.D"); /* phase.role */
  assert_non_null(d);
  assert_int_equal(num(d, "saturated"), 256);
  assert_false(cJSON_IsTrue(get(d, "advice.fp8_e4m3.fits")));
  assert_false(cJSON_IsTrue(get(d, "advice.fp8_e5m2.fits")));
  assert_false(str_is(d, "advice.fp16", "safe"));
  assert_false(str_is(d, "advice.recommended", "fp16"));
  assert_false(str_is(rep, "layers.0.advice.recommended", "fp16"));
  assert_false(str_is(rep, "layers.0.advice.recommended", "fp16_loss_scale"));
  assert_false(cJSON_IsTrue(get(rep, "layers.0.advice.fp8_e4m3.fits")));
  assert_false(has_finding(rep, "fp8_candidate"));
  assert_false(has_finding(rep, "library_not_intercepted")); /* its kernels were its calls' */
  assert_true(has_finding(rep, "fp16_overflow"));
  assert_true(num(rep, "sites.0.amax_D.max") == 4096);
  assert_true(num(rep, "sites.0.fp8_scale_values.A.max") == 2);
  assert_null(get(rep, "sites.0.fast_accum")); /* FAST_ACCUM not set: cuBLASLt's default */
  assert_false(has_finding(rep, "fp8_fast_accumulation"));
  cJSON_Delete(rep);
  char p[4300];
  snprintf(p, sizeof p, "%s/ops.csv", dir);
  char *csv = slurp(p);
  assert_non_null(strstr(csv, ",A=2 B=0.5 amax_D=4096,")); /* the ops table's fp8_scales */
  free(csv);
}

/* The site / report layer of this name (a raw site's "layer", a report
 * layer's "name"); fails when absent. */
static cJSON *named(cJSON *arr, const char *key, const char *name) {
  cJSON *o;
  cJSON_ArrayForEach(o, arr) {
    if (str_is(o, key, name)) return o;
  }
  fprintf(stderr, "no %s %s\n", key, name);
  fail();
  return NULL;
}

/* An FP8 GELU_AUX with an e4m3 aux stores the GELU input (16 everywhere)
 * times EPILOGUE_AUX_SCALE and writes its amax to EPILOGUE_AUX_AMAX_POINTER
 * (cublasLt.h), as D with D_SCALE and AMAX_D: the raw site records both
 * beside the stored values (1 at scale 1/16; 448, saturated, at scale 64).
 * The report keeps the stored values, as for D (docs/numerics.md), with the
 * scale and amax beside them; its saturated values are overflow of unknown
 * size, with the aux scale to lower. */
static void a_scaled_fp8_aux_is_recorded_with_its_scale_and_amax(void **state) {
  (void)state;
  const char *dir = outdir("fp8aux");
  cJSON *doc = run_mode(dir, "fp8aux", NULL);
  cJSON *fit = named(get(doc, "sites"), "layer", "t/fp8aux/fit");
  assert_true(str_is(fit, "tensors.aux.dtype", "fp8_e4m3"));
  assert_int_equal(num(fit, "tensors.aux.count"), 256);
  assert_true(num(fit, "tensors.aux.max") == 1); /* stored values, as D's */
  assert_null(get(fit, "tensors.aux.saturated"));
  assert_true(cJSON_IsTrue(get(fit, "fp8_scales.aux")));
  assert_true(cJSON_IsTrue(get(fit, "fp8_scales.amax_aux")));
  assert_true(num(fit, "fp8_scale_values.aux.max") == 0.0625);
  assert_int_equal(num(fit, "fp8_scale_values.aux.read"), 1);
  assert_true(num(fit, "amax_aux.max") == 16);
  assert_int_equal(num(fit, "amax_aux.read"), 1);
  assert_null(get(fit, "amax_D"));
  cJSON *sat = named(get(doc, "sites"), "layer", "t/fp8aux/sat");
  assert_int_equal(num(sat, "tensors.aux.saturated"), 256);
  assert_null(get(sat, "tensors.D.saturated")); /* D = GELU(16) fits */
  assert_true(num(sat, "fp8_scale_values.aux.max") == 64);
  assert_true(num(sat, "amax_aux.max") == 16);
  cJSON_Delete(doc);

  cJSON *rep = load_json(dir, "report.json");
  cJSON *lf = named(get(rep, "layers"), "name", "t/fp8aux/fit");
  cJSON *aux = cJSON_GetObjectItem(get(lf, "tensors"), "unknown.aux");
  assert_non_null(aux);
  assert_true(num(aux, "absmax") == 1); /* stored, as D's: the scale is beside it */
  assert_true(num(get(rep, "sites"), "0.amax_aux.max") == 16);
  cJSON *ls = named(get(rep, "layers"), "name", "t/fp8aux/sat");
  cJSON *saux = cJSON_GetObjectItem(get(ls, "tensors"), "unknown.aux");
  assert_int_equal(num(saux, "saturated"), 256);
  assert_false(cJSON_IsTrue(get(saux, "advice.fp8_e4m3.fits")));
  bool named_aux = false;
  cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
    if (str_is(f, "kind", "fp16_overflow") && str_is(f, "layer", "t/fp8aux/sat") &&
        str_is(f, "evidence.tensor", "unknown.aux")) {
      named_aux = true;
      assert_non_null(strstr(cJSON_GetStringValue(get(f, "action")), "EPILOGUE_AUX_SCALE"));
    }
  }
  assert_true(named_aux);
  cJSON_Delete(rep);
  char p[4300];
  snprintf(p, sizeof p, "%s/ops.csv", dir);
  char *csv = slurp(p);
  assert_non_null(strstr(csv, ",aux=0.0625 amax_aux=16,")); /* the ops table's fp8_scales */
  free(csv);
}

/* Shadow execution of that call: the operands are the scaled values (A 32,
 * B 8: every product 4096, exact in fp16, bf16 and fp8 at its own scale),
 * while the op's own precision is its saturated e4m3 D, 448 for 4096. */
static void a_scaled_fp8_call_is_shadowed_at_its_scales(void **state) {
  (void)state;
  const char *dir = outdir("fp8shadow");
  const char *const opts[] = {"--shadow=1", NULL};
  cJSON *doc = run_mode(dir, "fp8sat", opts);
  cJSON *s = site(doc, "cublasLtMatmul", 16);
  assert_int_equal(num(s, "shadow.calls"), 1);
  assert_null(get(s, "shadow.skipped.shadow_unsupported"));
  double cur = num(s, "shadow.candidates.current.rel_l2");
  assert_true(fabs(cur - (4096.0 - 448) / 4096) < 1e-12);
  assert_true(num(s, "shadow.candidates.current.max_rel") == cur);
  assert_true(num(s, "shadow.candidates.fp16.rel_l2") == 0);
  assert_true(num(s, "shadow.candidates.bf16.rel_l2") == 0);
  assert_true(num(s, "shadow.candidates.fp8_e4m3_current.rel_l2") == 0);
  cJSON_Delete(doc);
  /* the page's Measured error group shows it: (4096 - 448) / 4096 */
  char p[4300];
  snprintf(p, sizeof p, "%s/report.html", dir);
  char *html = slurp(p);
  assert_non_null(strstr(html, ">Measured now rel L2</th>"));
  assert_non_null(strstr(html, "data-v=\"0.890625\">0.891</td>"));
  free(html);
  /* ... and a finding: the op already loses more than --shadow-max-rel */
  cJSON *rep = load_json(dir, "report.json");
  assert_true(has_finding(rep, "current_error_high"));
  cJSON_Delete(rep);
}

static cJSON *load_json(const char *dir, const char *name) {
  char p[4300];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  char *text = slurp(p);
  cJSON *doc = cJSON_Parse(text);
  free(text);
  assert_non_null(doc);
  return doc;
}

static bool has_finding(cJSON *report, const char *kind) {
  cJSON *f;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(report, "findings")) {
    if (str_is(f, "kind", kind)) return true;
  }
  return false;
}

/* The same FP8 call with CUBLASLT_MATMUL_DESC_FAST_ACCUM, in a range "bwd"
 * (a gradient GEMM by its phase word): recorded in the site key, named by
 * the compute label (report.json, ops.csv) and by a medium finding, since
 * the measured `current` error sums in fp32 and understates it. */
static void fp8_fast_accumulation_is_recorded_and_reported(void **state) {
  (void)state;
  const char *dir = outdir("fp8fast");
  cJSON *doc = run_mode(dir, "fp8fast", NULL);
  cJSON *s = site(doc, "cublasLtMatmul", 16);
  assert_true(cJSON_IsTrue(get(s, "fast_accum")));
  cJSON_Delete(doc);
  cJSON *rep = load_json(dir, "report.json");
  assert_true(cJSON_IsTrue(get(rep, "sites.0.fast_accum")));
  assert_string_equal(get(rep, "sites.0.phase")->valuestring, "backward");
  assert_non_null(strstr(get(rep, "sites.0.compute")->valuestring, "FP8 fast accumulation"));
  cJSON *f, *found = NULL;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
    if (str_is(f, "kind", "fp8_fast_accumulation")) found = f;
  }
  assert_non_null(found);
  assert_true(str_is(found, "severity", "medium"));
  assert_int_equal(num(found, "evidence.backward_sites"), 1);
  assert_int_equal(num(found, "evidence.calls"), 1);
  cJSON_Delete(rep);
  char p[4300];
  snprintf(p, sizeof p, "%s/ops.csv", dir);
  char *csv = slurp(p);
  assert_non_null(strstr(csv, "FP8 fast accumulation"));
  free(csv);
}

/* A grouped GEMM's kernels all carry the last group's op id, so the group
 * --tc-counters measured gets no kernels of its own: no verdict, reported. */
/* cuBLAS from a private copy (as a statically linked one): no call reaches
 * mpprof, its kernel reaches CUPTI; the raw file counts it, the report says why. */
static void library_kernels_without_intercepted_calls_are_reported(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  /* The private copy is loaded RTLD_DEEPBIND (so that its cuBLAS -> cuBLASLt
   * calls bind inside it, as in a static library), which AddressSanitizer
   * refuses (google/sanitizers#611). Tested by the plain build. */
  skip();
#endif
  const char *dir = outdir("privblas");
  cJSON *raw = run_mode(dir, "privblas", NULL);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(raw, "sites")), 0);
  if (!str_is(raw, "cupti.status", "ok")) {
    cJSON_Delete(raw);
    skip();
  }
  assert_int_equal(num(raw, "cupti.unattributed_kernels.cublas.kernels"), 1);
  assert_null(get(raw, "cupti.unattributed_kernels.cudnn"));
  cJSON *rep = load_json(dir, "report.json");
  assert_true(has_finding(rep, "library_not_intercepted"));
  assert_int_equal(num(rep, "processes.0.cupti.unattributed_kernels.cublas.kernels"), 1);
  cJSON_Delete(rep);
  cJSON_Delete(raw);
}

/* cublasSgemv (what PyTorch runs for an fp32 torch.mv) is not hooked: its
 * kernels reach CUPTI outside every call while the program's cublasSgemm
 * was intercepted; the raw file counts them as cuBLAS's and the report says
 * so (library_calls_not_hooked), not that cuBLAS was a private copy. */
static void library_kernels_outside_intercepted_calls_are_reported(void **state) {
  (void)state;
  const char *dir = outdir("gemv");
  cJSON *raw = run_mode(dir, "gemv", NULL);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(raw, "sites")), 1);
  if (!str_is(raw, "cupti.status", "ok")) {
    cJSON_Delete(raw);
    skip();
  }
  assert_int_equal(num(raw, "cupti.unattributed_kernels.cublas.kernels"), 2);
  assert_non_null(strstr(get(raw, "cupti.unattributed_kernels.cublas.example")->valuestring,
                         "gemv2T_kernel_val"));
  cJSON *rep = load_json(dir, "report.json");
  assert_false(has_finding(rep, "library_not_intercepted"));
  cJSON *f, *found = NULL;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
    if (str_is(f, "kind", "library_calls_not_hooked")) found = f;
  }
  assert_non_null(found);
  assert_int_equal(num(found, "evidence.kernels"), 2);
  assert_non_null(strstr(get(found, "message")->valuestring, "cublasSgemv"));
  cJSON_Delete(rep);
  cJSON_Delete(raw);
}

/* Kernels launched outside every hooked call wait in the CUPTI parser for an
 * external record that never comes; past the list's size, the newest were
 * dropped: a PyTorch run's elementwise kernels filled it and its later
 * cuBLAS kernels outside the calls went uncounted. Every one is counted. */
static void library_kernels_outside_the_calls_are_all_counted(void **state) {
  (void)state;
  const char *dir = outdir("gemvmany");
  cJSON *raw = run_mode(dir, "gemvmany", NULL);
  if (!str_is(raw, "cupti.status", "ok")) {
    cJSON_Delete(raw);
    skip();
  }
  const int repeats = MPP_CUPTI_MAX_WAITING + 100; /* as the program makes them */
  assert_int_equal(num(raw, "cupti.unattributed_kernels.cublas.kernels"), 1 + repeats);
  assert_int_equal(num(raw, "cupti.dropped_records"), 0);
  cJSON *rep = load_json(dir, "report.json");
  cJSON *f, *found = NULL;
  cJSON_ArrayForEach(f, cJSON_GetObjectItem(rep, "findings")) {
    if (str_is(f, "kind", "library_calls_not_hooked")) found = f;
  }
  assert_non_null(found);
  assert_int_equal(num(found, "evidence.kernels"), 1 + repeats);
  cJSON_Delete(rep);
  cJSON_Delete(raw);
}

static void tc_counters_say_when_they_decided_nothing(void **state) {
  (void)state;
  const char *dir = outdir("tcgrouped");
  const char *const opts[] = {"--tc-counters", NULL};
  cJSON *raw = run_mode(dir, "grouped2", opts);
  if (!str_is(raw, "tc_counters.status", "ok")) { /* simcuda built without the range profiler */
    cJSON_Delete(raw);
    skip();
  }
  assert_true(num(raw, "tc_counters.ops_unmatched") > 0);
  cJSON *rep = load_json(dir, "report.json");
  assert_int_equal(num(rep, "processes.0.tc_counters.ops_unmatched"),
                   num(raw, "tc_counters.ops_unmatched"));
  cJSON *notes = get(rep, "tensor_cores.counters_notes");
  assert_int_equal(cJSON_GetArraySize(notes), 1);
  assert_non_null(strstr(cJSON_GetArrayItem(notes, 0)->valuestring, "decided nothing for 1 of 1"));
  assert_true(has_finding(rep, "tc_counters_unmatched"));
  assert_false(has_finding(rep, "tc_counters_unavailable"));
  cJSON_Delete(rep);
  cJSON_Delete(raw);
}

/* cuBLAS loaded with dlopen and called through dlsym on its handle is recorded
 * as the entry point the program called (not as the _64 twin that cuBLAS
 * calls inside, which a -Bsymbolic library binds internally). */
static void dlopened_cublas(const char *name, const char *arg) {
  const char *saved = prog;
  prog = dlopen_prog;
  cJSON *doc = run_mode(outdir(name), arg, NULL);
  prog = saved;
  cJSON *s = site(doc, "cublasSgemm_v2", 8);
  assert_int_equal(num(s, "calls"), 2);
  assert_int_equal(num(s, "tensors.A.count"), 2 * 64);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites")), 1); /* no _64 twin */
  cJSON_Delete(doc);
}

static void cublas_through_dlsym_on_its_handle_is_recorded(void **state) {
  (void)state;
  dlopened_cublas("dlopen", "local");
}

static void cublas_through_dlsym_on_a_deepbind_handle_is_recorded(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  /* AddressSanitizer refuses RTLD_DEEPBIND (google/sanitizers#611): the
   * program itself cannot run in the sanitized build. Tested by the plain one. */
  skip();
#endif
  dlopened_cublas("dlopen-deep", "deep");
}

/* A program that unloads cuBLAS and cuDNN and loads them again elsewhere,
 * looking the entry points up on each new handle: every call goes to the
 * copy loaded now (the first copy's address is unmapped: a crash), and
 * mpprof keeps no library loaded that the program unloaded (the program
 * exits 71 when one stays mapped). Both GEMMs are recorded. */
static void a_library_unloaded_and_loaded_again_is_called_where_it_is(void **state) {
  (void)state;
  const char *saved = prog;
  prog = dlopen_prog;
  cJSON *doc = run_mode(outdir("reload"), "reload", NULL);
  prog = saved;
  assert_int_equal(num(site(doc, "cublasSgemm_v2", 8), "calls"), 2);
  cJSON_Delete(doc);
}

int main(void) {
  mpprof = getenv("MPP_MPPROF");
  prog = getenv("MPP_FIDELITY_PROG");
  dlopen_prog = getenv("MPP_DLOPEN_PROG");
  simcuda = getenv("MPP_SIMCUDA");
  workdir = getenv("MPP_WORKDIR");
  if (!mpprof || !prog || !dlopen_prog || !simcuda || !workdir) {
    fprintf(stderr, "MPP_MPPROF, MPP_FIDELITY_PROG, MPP_SIMCUDA and MPP_WORKDIR must be set\n");
    return 1;
  }
  mkdir(workdir, 0777);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(each_group_of_a_grouped_gemm_has_its_own_operand_values),
      cmocka_unit_test(a_pointer_array_lt_batch_is_scanned_matrix_by_matrix),
      cmocka_unit_test(cudnn_backend_matmul_records_its_compute_type),
      cmocka_unit_test(legacy_conv_descriptors_changed_in_place_are_read_again),
      cmocka_unit_test(a_grouped_convolution_records_its_groups),
      cmocka_unit_test(a_zero_alpha_reads_neither_a_nor_b),
      cmocka_unit_test(vector_alphas_and_betas_decide_what_is_read),
      cmocka_unit_test(a_bias_epilogue_reads_its_bias_of_its_type),
      cmocka_unit_test(a_gelu_aux_epilogue_scans_its_pre_gelu_values),
      cmocka_unit_test(a_scaled_fp8_aux_is_recorded_with_its_scale_and_amax),
      cmocka_unit_test(a_fused_graphs_pointwise_operands_are_scanned),
      cmocka_unit_test(a_blending_convolution_reads_its_prior_output),
      cmocka_unit_test(a_cublaslt_program_choosing_its_algorithm_runs_and_is_recorded),
      cmocka_unit_test(a_saturated_fp8_output_is_overflow_with_its_scales_and_amax),
      cmocka_unit_test(fp8_fast_accumulation_is_recorded_and_reported),
      cmocka_unit_test(a_scaled_fp8_call_is_shadowed_at_its_scales),
      cmocka_unit_test(library_kernels_without_intercepted_calls_are_reported),
      cmocka_unit_test(library_kernels_outside_intercepted_calls_are_reported),
      cmocka_unit_test(library_kernels_outside_the_calls_are_all_counted),
      cmocka_unit_test(tc_counters_say_when_they_decided_nothing),
      cmocka_unit_test(cublas_through_dlsym_on_its_handle_is_recorded),
      cmocka_unit_test(cublas_through_dlsym_on_a_deepbind_handle_is_recorded),
      cmocka_unit_test(a_library_unloaded_and_loaded_again_is_called_where_it_is),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
