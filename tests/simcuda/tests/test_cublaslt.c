/* simcuda libcublasLt.so.13: descriptor / layout / preference attributes
 * (exact sizes, size queries through sizeWritten), the heuristic, and
 * cublasLtMatmul against a host reference: epilogues with bias types, fp8
 * with scale pointers, amax and fp8 output, strided and pointer-array
 * batching, C distinct from D, row order, and the refusals. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <cublasLt.h>

#include "simcuda_test.h"

static int setup(void **state) {
  cublasLtHandle_t h;
  if (cublasLtCreate(&h) != CUBLAS_STATUS_SUCCESS) return -1;
  *state = h;
  return 0;
}

static int teardown(void **state) {
  return cublasLtDestroy((cublasLtHandle_t)*state) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

static void layout_attributes_round_trip_with_exact_sizes(void **state) {
  (void)state;
  cublasLtMatrixLayout_t l;
  assert_int_equal(cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 12, 7, 16), CUBLAS_STATUS_SUCCESS);
  size_t written = 0;
  uint64_t rows = 0;
  /* Size query: sizeInBytes 0 with sizeWritten. */
  assert_int_equal(
      cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, NULL, 0, &written),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(written, sizeof(uint64_t));
  assert_int_equal(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, NULL, 0, NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(
      cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, NULL, 8, &written),
      CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(
      cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, 4, &written),
      CUBLAS_STATUS_INVALID_VALUE);
  written = 0;
  assert_int_equal(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows,
                                                    sizeof(rows), &written),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(rows, 12);
  assert_int_equal(written, 8);
  uint32_t type = 0;
  assert_int_equal(
      cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof(type), NULL),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(type, CUDA_R_16F);
  int64_t ld = 0;
  assert_int_equal(
      cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, sizeof(ld), NULL),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(ld, 16);
  int32_t count = 0, one = 0;
  assert_int_equal(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &one,
                                                    sizeof(one), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(one, 1);
  count = 5;
  assert_int_equal(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                    sizeof(count)),
                   CUBLAS_STATUS_SUCCESS);
  int64_t stride = 12 * 16;
  assert_int_equal(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &stride, sizeof(stride)),
                   CUBLAS_STATUS_SUCCESS);
  /* A setter wants exactly the attribute's size. */
  assert_int_equal(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &stride,
                                                    sizeof(stride)),
                   CUBLAS_STATUS_INVALID_VALUE);
  count = 0;
  stride = 0;
  assert_int_equal(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                    sizeof(count), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                    &stride, sizeof(stride), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(count, 5);
  assert_int_equal(stride, 192);
  assert_int_equal(cublasLtMatrixLayoutGetAttribute(l, (cublasLtMatrixLayoutAttribute_t)999, &count,
                                                    sizeof(count), NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasLtMatrixLayoutDestroy(l), CUBLAS_STATUS_SUCCESS);
}

static void matmul_desc_attributes_round_trip_with_defaults(void **state) {
  (void)state;
  cublasLtMatmulDesc_t d;
  assert_int_equal(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F),
                   CUBLAS_STATUS_SUCCESS);
  int32_t v = 0;
  assert_int_equal(
      cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &v, sizeof(v), NULL),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(v, CUBLAS_COMPUTE_32F);
  assert_int_equal(
      cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &v, sizeof(v), NULL),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(v, CUDA_R_32F);
  assert_int_equal(
      cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &v, sizeof(v), NULL),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(v, -1);
  uint32_t epi = 0;
  assert_int_equal(
      cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi), NULL),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(epi, CUBLASLT_EPILOGUE_DEFAULT);
  epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  assert_int_equal(
      cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)),
      CUBLAS_STATUS_SUCCESS);
  int32_t trans = CUBLAS_OP_T;
  assert_int_equal(
      cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)),
      CUBLAS_STATUS_SUCCESS);
  float scale = 0.5f;
  const void *sp = &scale;
  assert_int_equal(
      cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sp, sizeof(sp)),
      CUBLAS_STATUS_SUCCESS);
  int8_t fast = 1;
  assert_int_equal(
      cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(
      cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &v, sizeof(v)),
      CUBLAS_STATUS_INVALID_VALUE);
  size_t written = 0;
  assert_int_equal(
      cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, NULL, 0, &written),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(written, sizeof(void *));
  const void *back = NULL;
  int8_t fast_back = 0;
  epi = 0;
  trans = 0;
  cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi), NULL);
  cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans), NULL);
  cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &back, sizeof(back),
                                 NULL);
  cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast_back, 1, NULL);
  assert_int_equal(epi, CUBLASLT_EPILOGUE_GELU_BIAS);
  assert_int_equal(trans, CUBLAS_OP_T);
  assert_ptr_equal(back, &scale);
  assert_int_equal(fast_back, 1);
  assert_int_equal(cublasLtMatmulDescDestroy(d), CUBLAS_STATUS_SUCCESS);
}

static void preference_attributes_round_trip(void **state) {
  (void)state;
  cublasLtMatmulPreference_t p;
  assert_int_equal(cublasLtMatmulPreferenceCreate(&p), CUBLAS_STATUS_SUCCESS);
  uint64_t ws = 1 << 22, back = 0;
  assert_int_equal(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &ws, sizeof(ws)),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &back, sizeof(back), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(back, ws);
  uint32_t small = 1;
  assert_int_equal(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                        &small, sizeof(small)),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasLtMatmulPreferenceDestroy(p), CUBLAS_STATUS_SUCCESS);
}

/* ---- a matmul fixture: A (TN by default), B, C, D with their layouts ---- */

typedef struct lt_case {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc, ld;
  st_mat A, B, C, D;
  int64_t m, n, k;
  char ta, tb;
} lt_case;

static lt_case lt_make(cublasComputeType_t compute, cudaDataType scale, cudaDataType at,
                       cudaDataType bt, cudaDataType ct, cudaDataType dt, char ta, char tb,
                       int64_t m, int64_t n, int64_t k, int64_t batch, uint32_t seed) {
  lt_case c = {.m = m, .n = n, .k = k, .ta = ta, .tb = tb};
  int64_t ar = ta == 'N' ? m : k, ac = ta == 'N' ? k : m;
  int64_t br = tb == 'N' ? k : n, bc = tb == 'N' ? n : k;
  c.A = st_matrix(at, ar, ac, ar + 16, batch, (ar + 16) * ac + 16, seed);
  c.B = st_matrix(bt, br, bc, br + 16, batch, (br + 16) * bc + 32, seed + 1);
  c.C = st_matrix(ct, m, n, m + 8, batch, (m + 8) * n + 8, seed + 2);
  c.D = st_matrix(dt, m, n, m + 8, batch, (m + 8) * n + 8, seed + 3);
  assert_int_equal(cublasLtMatmulDescCreate(&c.desc, compute, scale), CUBLAS_STATUS_SUCCESS);
  int32_t opa = ta == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T, opb = tb == 'N' ? CUBLAS_OP_N : CUBLAS_OP_T;
  cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa));
  cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb));
  st_mat *mats[4] = {&c.A, &c.B, &c.C, &c.D};
  cublasLtMatrixLayout_t *ls[4] = {&c.la, &c.lb, &c.lc, &c.ld};
  for (int i = 0; i < 4; i++) {
    assert_int_equal(cublasLtMatrixLayoutCreate(ls[i], mats[i]->type, (uint64_t)mats[i]->rows,
                                                (uint64_t)mats[i]->cols, mats[i]->ld),
                     CUBLAS_STATUS_SUCCESS);
    if (batch > 1) {
      int32_t count = (int32_t)batch;
      int64_t stride = mats[i]->stride;
      cublasLtMatrixLayoutSetAttribute(*ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                       sizeof(count));
      cublasLtMatrixLayoutSetAttribute(*ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                       sizeof(stride));
    }
  }
  return c;
}

static void lt_free(lt_case *c) {
  cublasLtMatmulDescDestroy(c->desc);
  cublasLtMatrixLayoutDestroy(c->la);
  cublasLtMatrixLayoutDestroy(c->lb);
  cublasLtMatrixLayoutDestroy(c->lc);
  cublasLtMatrixLayoutDestroy(c->ld);
  free(c->A.data);
  free(c->B.data);
  free(c->C.data);
  free(c->D.data);
}

static cublasStatus_t lt_run(cublasLtHandle_t h, lt_case *c, const void *alpha, const void *beta) {
  return cublasLtMatmul(h, c->desc, alpha, c->A.data, c->la, c->B.data, c->lb, beta, c->C.data,
                        c->lc, c->D.data, c->ld, NULL, NULL, 0, NULL);
}

static void set_ptr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *p) {
  assert_int_equal(cublasLtMatmulDescSetAttribute(d, a, &p, sizeof(p)), CUBLAS_STATUS_SUCCESS);
}

static void set_u32(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, uint32_t v) {
  assert_int_equal(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)), CUBLAS_STATUS_SUCCESS);
}

static void set_i32(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, int32_t v) {
  assert_int_equal(cublasLtMatmulDescSetAttribute(d, a, &v, sizeof(v)), CUBLAS_STATUS_SUCCESS);
}

static void c_distinct_from_d_leaves_c_untouched(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF,
                      CUDA_R_16BF, 'T', 'N', 9, 6, 40, 1, 11);
  st_mat c0 = st_copy(&c.C);
  float alpha = 1, beta = 1;
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(st_mismatches('T', 'N', 9, 6, 40, 1, &c.A, &c.B, 1, &c0, &c.D), 0);
  assert_memory_equal(c.C.data, c0.data, (size_t)(c.C.ld * c.C.cols) * 2);
  free(c0.data);
  lt_free(&c);
}

/* Bias (in the bias data type) is added per row of D before the activation. */
static double epilogue_ref(uint32_t epi, double v, double bias) {
  if (epi & CUBLASLT_EPILOGUE_BIAS) v += bias;
  if (epi & CUBLASLT_EPILOGUE_RELU) v = v > 0 ? v : 0;
  if (epi & CUBLASLT_EPILOGUE_GELU)
    v = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
  return v;
}

static void epilogues_match_reference_for_each_bias_type(void **state) {
  cublasLtHandle_t h = *state;
  static const uint32_t epis[] = {CUBLASLT_EPILOGUE_RELU, CUBLASLT_EPILOGUE_BIAS,
                                  CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU,
                                  CUBLASLT_EPILOGUE_GELU_BIAS};
  static const int bias_types[] = {-1, CUDA_R_32F, CUDA_R_16BF};
  for (size_t e = 0; e < sizeof(epis) / sizeof(epis[0]); e++)
    for (size_t bt = 0; bt < 3; bt++) {
      /* GELU is transcendental: compare an fp32 D with a tolerance; the
       * others are exact, checked on a bf16 D. */
      int gelu = (epis[e] & CUBLASLT_EPILOGUE_GELU) != 0;
      cudaDataType dt = gelu ? CUDA_R_32F : CUDA_R_16BF;
      lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF, dt, dt, 'T',
                          'N', 7, 5, 12, 1, 20u + (uint32_t)(e * 3 + bt));
      cudaDataType btype = bias_types[bt] == -1 ? dt : (cudaDataType)bias_types[bt];
      st_mat bias = st_matrix(btype, 7, 1, 7, 1, 7, 99);
      set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epis[e]);
      set_ptr(c.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data);
      if (bias_types[bt] != -1)
        set_i32(c.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_types[bt]);
      float alpha = 0.5f, beta = 0;
      assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
      for (int64_t j = 0; j < 5; j++)
        for (int64_t i = 0; i < 7; i++) {
          double v = st_ref('T', 'N', 12, 0.5, &c.A, &c.B, 0, &c.C, 0, i, j);
          double want = st_round(dt, epilogue_ref(epis[e], v, st_get(&bias, 0, i, 0)));
          double got = st_get(&c.D, 0, i, j);
          if (gelu)
            assert_true(fabs(got - want) <= 1e-5 * (1 + fabs(want)));
          else
            assert_true(got == want);
        }
      free(bias.data);
      lt_free(&c);
    }
}

static void fp8_scales_amax_and_fp8_output_follow_the_documented_formula(void **state) {
  cublasLtHandle_t h = *state;
  static const struct {
    cudaDataType at, bt, ct, dt;
  } cases[] = {
      {CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_16BF},
      {CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F, CUDA_R_32F},
      {CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16F, CUDA_R_8F_E4M3},
      {CUDA_R_8F_E5M2, CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_8F_E5M2},
      {CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_16F, CUDA_R_16F},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, cases[i].at, cases[i].bt, cases[i].ct,
                        cases[i].dt, 'T', 'N', 8, 6, 32, 1, 50u + (uint32_t)i);
    float sa = 0.5f, sb = 4.0f, sd = 0.25f, amax = -1;
    set_ptr(c.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa);
    set_ptr(c.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb);
    set_ptr(c.desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &sd);
    set_ptr(c.desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax);
    float alpha = 1, beta = 0.5f;
    assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
    int fp8_out = cases[i].dt == CUDA_R_8F_E4M3 || cases[i].dt == CUDA_R_8F_E5M2;
    double want_amax = 0;
    int64_t bad = 0;
    for (int64_t j = 0; j < 6; j++)
      for (int64_t r = 0; r < 8; r++) {
        /* D = sD * (alpha * sA * sB * AB + beta * C); amax before sD. */
        double v = st_ref('T', 'N', 32, 1.0 * sa * sb, &c.A, &c.B, beta, &c.C, 0, r, j);
        if (fabs(v) > want_amax) want_amax = fabs(v);
        double want = fp8_out ? (cases[i].dt == CUDA_R_8F_E4M3
                                     ? mp_e4m3_to_float(mp_float_to_e4m3((float)(v * sd), true))
                                     : mp_e5m2_to_float(mp_float_to_e5m2((float)(v * sd), true)))
                              : st_round(cases[i].dt, v);
        if (st_get(&c.D, 0, r, j) != want) bad++;
      }
    assert_int_equal(bad, 0);
    assert_true(amax == (float)want_amax);
    lt_free(&c);
  }
}

static void fp8_scale_pointers_default_to_one(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
                      CUDA_R_16BF, 'T', 'N', 4, 4, 16, 1, 61);
  float alpha = 1, beta = 0;
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(st_mismatches('T', 'N', 4, 4, 16, 1, &c.A, &c.B, 0, &c.C, &c.D), 0);
  lt_free(&c);
}

static void fp8_outside_the_hopper_table_is_not_supported(void **state) {
  cublasLtHandle_t h = *state;
  float alpha = 1, beta = 0;
  /* Non-TN layouts. */
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
                      CUDA_R_16BF, 'N', 'N', 4, 4, 16, 1, 70);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  lt_free(&c);
  /* e5m2 x e5m2. */
  c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E5M2, CUDA_R_8F_E5M2, CUDA_R_16BF,
              CUDA_R_16BF, 'T', 'N', 4, 4, 16, 1, 71);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  lt_free(&c);
  /* fp32 C with a bf16 D. */
  c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F,
              CUDA_R_16BF, 'T', 'N', 4, 4, 16, 1, 72);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  lt_free(&c);
  /* Block scaling (MX) is not on sm_90. */
  c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
              CUDA_R_16BF, 'T', 'N', 32, 32, 32, 1, 73);
  set_i32(c.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  lt_free(&c);
}

static void strided_batch_with_batched_bias_matches_reference(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                      CUDA_R_16F, 'N', 'T', 6, 5, 9, 3, 80);
  st_mat bias = st_matrix(CUDA_R_16F, 6, 3, 8, 1, 0, 81); /* member b's bias at 8*b */
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data);
  int64_t bstride = 8;
  assert_int_equal(cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                  &bstride, sizeof(bstride)),
                   CUBLAS_STATUS_SUCCESS);
  float alpha = 1, beta = 1;
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  int64_t bad = 0;
  for (int64_t b = 0; b < 3; b++)
    for (int64_t j = 0; j < 5; j++)
      for (int64_t i = 0; i < 6; i++) {
        double v = st_ref('N', 'T', 9, 1, &c.A, &c.B, 1, &c.C, b, i, j) + st_get(&bias, 0, i, b);
        if (st_get(&c.D, b, i, j) != st_round(CUDA_R_16F, v)) bad++;
      }
  assert_int_equal(bad, 0);
  free(bias.data);
  lt_free(&c);
}

static void pointer_array_batch_mode_reads_each_members_address(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                      CUDA_R_32F, 'T', 'T', 4, 3, 5, 3, 90);
  void **pa = st_pointers(&c.A), **pb = st_pointers(&c.B), **pc = st_pointers(&c.C),
       **pd = st_pointers(&c.D);
  uint32_t mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
  cublasLtMatrixLayout_t ls[4] = {c.la, c.lb, c.lc, c.ld};
  for (int i = 0; i < 4; i++)
    assert_int_equal(cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_MODE,
                                                      &mode, sizeof(mode)),
                     CUBLAS_STATUS_SUCCESS);
  float alpha = 2, beta = -1;
  assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, pa, c.la, pb, c.lb, &beta, pc, c.lc, pd, c.ld,
                                  NULL, NULL, 0, NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(st_mismatches('T', 'T', 4, 3, 5, 2, &c.A, &c.B, -1, &c.C, &c.D), 0);
  free(pa);
  free(pb);
  free(pc);
  free(pd);
  lt_free(&c);
}

/* Row order: element (i, j) at i * ld + j. A 2x3 row-major A times a 3x2
 * row-major B. */
static void row_order_layouts_are_honoured(void **state) {
  cublasLtHandle_t h = *state;
  float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {1, 0, 0, 1, 1, 1}, D[4] = {0};
  cublasLtMatmulDesc_t d;
  cublasLtMatrixLayout_t la, lb, ld;
  int32_t row = CUBLASLT_ORDER_ROW;
  cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 2, 3, 3);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 3, 2, 2);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 2, 2, 2);
  cublasLtMatrixLayout_t ls[3] = {la, lb, ld};
  for (int i = 0; i < 3; i++)
    cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof(row));
  float alpha = 1, beta = 0;
  assert_int_equal(
      cublasLtMatmul(h, d, &alpha, A, la, B, lb, &beta, D, ld, D, ld, NULL, NULL, 0, NULL),
      CUBLAS_STATUS_SUCCESS);
  /* [1 2 3; 4 5 6] [1 0; 0 1; 1 1] = [4 5; 10 11] */
  assert_true(D[0] == 4 && D[1] == 5 && D[2] == 10 && D[3] == 11);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(d);
}

static void heuristic_returns_one_algorithm_or_not_supported(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                      CUDA_R_16F, 'T', 'N', 8, 8, 8, 1, 95);
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  cublasLtMatmulHeuristicResult_t r[4];
  int n = -1;
  assert_int_equal(cublasLtMatmulAlgoGetHeuristic(h, c.desc, c.la, c.lb, c.lc, c.ld, p, 4, r, &n),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(n, 1);
  assert_int_equal(r[0].state, CUBLAS_STATUS_SUCCESS);
  float alpha = 1, beta = 0;
  assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta,
                                  c.C.data, c.lc, c.D.data, c.ld, &r[0].algo, NULL, 0, NULL),
                   CUBLAS_STATUS_SUCCESS);
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DRELU);
  assert_int_equal(cublasLtMatmulAlgoGetHeuristic(h, c.desc, c.la, c.lb, c.lc, c.ld, p, 4, r, &n),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(n, 0);
  cublasLtMatmulPreferenceDestroy(p);
  lt_free(&c);
}

static void bad_arguments_are_refused(void **state) {
  cublasLtHandle_t h = *state;
  float alpha = 1, beta = 0;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                      CUDA_R_32F, 'N', 'N', 4, 4, 4, 1, 120);
  assert_int_equal(cublasLtMatmul(NULL, c.desc, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta,
                                  c.C.data, c.lc, c.D.data, c.ld, NULL, NULL, 0, NULL),
                   CUBLAS_STATUS_NOT_INITIALIZED);
  /* op(A) is 4 x 4 but B is described as 4 x 4 with TRANSB=T over a 5-row layout. */
  cublasLtMatrixLayout_t wrong;
  cublasLtMatrixLayoutCreate(&wrong, CUDA_R_32F, 5, 4, 20);
  assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, c.A.data, c.la, c.B.data, wrong, &beta,
                                  c.C.data, c.lc, c.D.data, c.ld, NULL, NULL, 0, NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatrixLayoutDestroy(wrong);
  /* ld shorter than the rows. */
  cublasLtMatrixLayout_t short_ld;
  cublasLtMatrixLayoutCreate(&short_ld, CUDA_R_32F, 4, 4, 3);
  assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, c.A.data, short_ld, c.B.data, c.lb, &beta,
                                  c.C.data, c.lc, c.D.data, c.ld, NULL, NULL, 0, NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatrixLayoutDestroy(short_ld);
  /* A bias epilogue without a bias pointer. */
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BIAS);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_INVALID_VALUE);
  /* Auxiliary-output epilogues are not simulated. */
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DEFAULT);
  /* Scale type must match the compute type's table row. */
  cublasLtMatmulDesc_t d64;
  cublasLtMatmulDescCreate(&d64, CUBLAS_COMPUTE_32F, CUDA_R_64F);
  assert_int_equal(cublasLtMatmul(h, d64, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta, c.C.data,
                                  c.lc, c.D.data, c.ld, NULL, NULL, 0, NULL),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  cublasLtMatmulDescDestroy(d64);
  lt_free(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(layout_attributes_round_trip_with_exact_sizes),
      cmocka_unit_test(matmul_desc_attributes_round_trip_with_defaults),
      cmocka_unit_test(preference_attributes_round_trip),
      cmocka_unit_test_setup_teardown(c_distinct_from_d_leaves_c_untouched, setup, teardown),
      cmocka_unit_test_setup_teardown(epilogues_match_reference_for_each_bias_type, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(fp8_scales_amax_and_fp8_output_follow_the_documented_formula,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(fp8_scale_pointers_default_to_one, setup, teardown),
      cmocka_unit_test_setup_teardown(fp8_outside_the_hopper_table_is_not_supported, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(strided_batch_with_batched_bias_matches_reference, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(pointer_array_batch_mode_reads_each_members_address, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(row_order_layouts_are_honoured, setup, teardown),
      cmocka_unit_test_setup_teardown(heuristic_returns_one_algorithm_or_not_supported, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(bad_arguments_are_refused, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
