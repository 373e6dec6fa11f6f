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
#include <cuda.h>

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
  /* C and D padded by 16 rows: an fp8 D's leading dimension stays a whole
   * number of 16 bytes when m is, as FP8 kernels require. */
  c.C = st_matrix(ct, m, n, m + 16, batch, (m + 16) * n + 16, seed + 2);
  c.D = st_matrix(dt, m, n, m + 16, batch, (m + 16) * n + 16, seed + 3);
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

/* The aux epilogues (cublasLt.h): GELU_AUX_BIAS stores the GELU's input
 * (product + bias, in D's type by default) at i + j * AUX_LD, DGELU
 * multiplies the product by GELU's derivative there; RELU_AUX stores a bit
 * per element (set where the input is > 0), DRELU_BGRAD keeps the product
 * where the bit is set and writes D's row sums to the bias pointer. */
static void aux_epilogues_write_and_read_their_aux(void **state) {
  cublasLtHandle_t h = *state;
  float alpha = 1, beta = 0;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                      CUDA_R_32F, 'N', 'N', 6, 3, 4, 1, 140);
  float bias[6] = {0.5f, -1, 2, 0, 1, -3}, aux[8 * 3], dbias[6];
  uint8_t mask[128 * 3 / 8];
  int64_t ld = 8;
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
  cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  for (int64_t j = 0; j < 3; j++)
    for (int64_t i = 0; i < 6; i++) {
      double v = st_ref('N', 'N', 4, 1, &c.A, &c.B, 0, &c.C, 0, i, j) + bias[i];
      assert_true(fabs(aux[i + j * 8] - v) <= 1e-5 * (1 + fabs(v)));
      double g = 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
      assert_true(fabs(st_get(&c.D, 0, i, j) - g) <= 1e-5 * (1 + fabs(g)));
    }
  /* An AUX_DATA_TYPE other than D's: only for FP8 GELU_AUX. */
  set_i32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, CUDA_R_16F);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_INVALID_VALUE);
  set_i32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, -1);
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DGELU);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  for (int64_t j = 0; j < 3; j++)
    for (int64_t i = 0; i < 6; i++) {
      double x = aux[i + j * 8], c0 = 0.7978845608028654,
             th = tanh(c0 * (x + 0.044715 * x * x * x));
      double dg = 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * c0 * (1 + 3 * 0.044715 * x * x);
      double want = st_ref('N', 'N', 4, 1, &c.A, &c.B, 0, &c.C, 0, i, j) * dg;
      assert_true(fabs(st_get(&c.D, 0, i, j) - want) <= 1e-4 * (1 + fabs(want)));
    }
  /* The ReLU mask: AUX_LD in bits, a multiple of 128. */
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_RELU_AUX);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, mask);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_INVALID_VALUE);
  ld = 128;
  cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
  memset(mask, 0, sizeof mask);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  int set = 0;
  for (int64_t j = 0; j < 3; j++)
    for (int64_t i = 0; i < 6; i++) {
      double v = st_ref('N', 'N', 4, 1, &c.A, &c.B, 0, &c.C, 0, i, j);
      int bit = (mask[(i + j * 128) / 8] >> ((i + j * 128) % 8)) & 1;
      assert_int_equal(bit, v > 0);
      set += bit;
    }
  assert_true(set > 0 && set < 18);
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_DRELU_BGRAD);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, dbias);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  for (int64_t i = 0; i < 6; i++) {
    double sum = 0;
    for (int64_t j = 0; j < 3; j++) {
      double v = st_ref('N', 'N', 4, 1, &c.A, &c.B, 0, &c.C, 0, i, j);
      double want = v > 0 ? v : 0; /* the mask is the product's sign, as just written */
      assert_true(fabs(st_get(&c.D, 0, i, j) - want) <= 1e-5 * (1 + fabs(want)));
      sum += want;
    }
    assert_true(fabs(dbias[i] - sum) <= 1e-4 * (1 + fabs(sum)));
  }
  lt_free(&c);
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
                        cases[i].dt, 'T', 'N', 16, 6, 32, 1, 50u + (uint32_t)i);
    /* 16-byte aligned, as the real cuBLASLt wants FP8 scales (fidelity_probe) */
    _Alignas(16) float sa = 0.5f;
    _Alignas(16) float sb = 4.0f;
    _Alignas(16) float sd = 0.25f;
    _Alignas(16) float amax = -1;
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
      for (int64_t r = 0; r < 16; r++) {
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

/* An fp8 GELU_AUX's aux (EPILOGUE_AUX_DATA_TYPE e4m3, with D e4m3 and C
 * fp16: the cuBLAS documentation's rule) is stored as D is: the GELU input
 * times EPILOGUE_AUX_SCALE, converted with saturation, and its max |x|
 * before the scale written to EPILOGUE_AUX_AMAX_POINTER (cublasLt.h). */
static void fp8_gelu_aux_is_stored_at_its_scale_with_its_amax(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16F,
                      CUDA_R_8F_E4M3, 'T', 'N', 16, 8, 32, 1, 71);
  _Alignas(16) uint8_t aux[16 * 8];
  _Alignas(16) float aux_scale = 64.0f;
  _Alignas(16) float aux_amax = -1;
  int64_t ld = 16;
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux);
  cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
  set_i32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, CUDA_R_8F_E4M3);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, &aux_scale);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, &aux_amax);
  float alpha = 1, beta = 0;
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  double want_amax = 0;
  int64_t bad = 0, clamped = 0;
  for (int64_t j = 0; j < 8; j++)
    for (int64_t r = 0; r < 16; r++) {
      double v = st_ref('T', 'N', 32, 1, &c.A, &c.B, 0, &c.C, 0, r, j);
      if (fabs(v) > want_amax) want_amax = fabs(v);
      uint8_t want = mp_float_to_e4m3((float)(v * aux_scale), true);
      bad += aux[r + j * 16] != want;
      clamped += (want & 0x7f) == 0x7e; /* +-448 */
    }
  assert_int_equal(bad, 0);
  assert_true(clamped > 0); /* some values beyond 448 at scale 64: saturated */
  assert_true(aux_amax == (float)want_amax);
  lt_free(&c);
}

static void fp8_scale_pointers_default_to_one(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
                      CUDA_R_16BF, 'T', 'N', 16, 4, 16, 1, 61);
  float alpha = 1, beta = 0;
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(st_mismatches('T', 'N', 16, 4, 16, 1, &c.A, &c.B, 0, &c.C, &c.D), 0);
  lt_free(&c);
}

/* Heuristic status and result count for a case. */
static cublasStatus_t lt_heuristic(cublasLtHandle_t h, lt_case *c, int *got) {
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  cublasLtMatmulHeuristicResult_t r;
  *got = -1;
  cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(h, c->desc, c->la, c->lb, c->lc, c->ld, p, 1, &r, got);
  cublasLtMatmulPreferenceDestroy(p);
  return st;
}

/* The FP8 kernels' requirements (cuBLAS documentation, cublasLtMatmul; see
 * fp8_layouts_ok in cublaslt.c): column-major TN, m and k multiples of 16,
 * leading dimensions whole 16 bytes, matrix pointers 16-byte aligned. The
 * heuristic finds no algorithm for a layout outside them (NOT_SUPPORTED,
 * no result) and cublasLtMatmul refuses it, as it refuses a misaligned
 * pointer. */
static void fp8_layouts_outside_the_documented_requirements_are_not_supported(void **state) {
  cublasLtHandle_t h = *state;
  float alpha = 1, beta = 0;
  int got;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
                      CUDA_R_16BF, 'T', 'N', 16, 8, 32, 1, 70);
  assert_int_equal(lt_heuristic(h, &c, &got), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(got, 1);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  /* D one bf16 element past a 16-byte boundary. */
  assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta,
                                  c.C.data, c.lc, (char *)c.D.data + 2, c.ld, NULL, NULL, 0, NULL),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  /* lda of 40 fp8 elements: not a whole number of 16 bytes. */
  int64_t ld40 = 40;
  assert_int_equal(
      cublasLtMatrixLayoutSetAttribute(c.la, CUBLASLT_MATRIX_LAYOUT_LD, &ld40, sizeof ld40),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(lt_heuristic(h, &c, &got), CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(got, 0);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  lt_free(&c);
  /* Row-major A (its m = 16 columns stored 48 apart, inside the buffer). */
  c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
              CUDA_R_16BF, 'T', 'N', 16, 8, 32, 1, 71);
  int32_t row = CUBLASLT_ORDER_ROW;
  int64_t ld_row = 48;
  cublasLtMatrixLayoutSetAttribute(c.la, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row);
  cublasLtMatrixLayoutSetAttribute(c.la, CUBLASLT_MATRIX_LAYOUT_LD, &ld_row, sizeof ld_row);
  assert_int_equal(lt_heuristic(h, &c, &got), CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(got, 0);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  lt_free(&c);
  /* m = 8, then k = 24: not multiples of 16. n = 8 is fine. */
  c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
              CUDA_R_16BF, 'T', 'N', 8, 8, 32, 1, 72);
  assert_int_equal(lt_heuristic(h, &c, &got), CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(got, 0);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  lt_free(&c);
  c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
              CUDA_R_16BF, 'T', 'N', 16, 8, 24, 1, 73);
  assert_int_equal(lt_heuristic(h, &c, &got), CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_NOT_SUPPORTED);
  lt_free(&c);
}

/* The algo's MIN_ALIGNMENT_{A,B,C,D}_BYTES capabilities for a type
 * combination, as AlgoInit makes it. */
static void algo_alignments(cublasLtHandle_t h, cublasComputeType_t compute, cudaDataType scale,
                            cudaDataType at, cudaDataType bt, cudaDataType ct, cudaDataType dt,
                            uint32_t ret[4]) {
  cublasLtMatmulAlgo_t algo;
  assert_int_equal(cublasLtMatmulAlgoInit(h, compute, scale, at, bt, ct, dt, 0, &algo),
                   CUBLAS_STATUS_SUCCESS);
  for (int i = 0; i < 4; i++) {
    size_t written = 0;
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(&algo,
                                                       CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES + i,
                                                       &ret[i], sizeof(ret[i]), &written),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(written, sizeof(uint32_t));
  }
}

/* An fp8 matmul needs 16-byte aligned matrices, all four (the cuBLAS
 * documentation's FP8 requirements); int8 4 bytes (IMMA); other types their
 * element's size. */
static void algo_caps_report_the_alignment_of_their_types(void **state) {
  cublasLtHandle_t h = *state;
  uint32_t al[4];
  algo_alignments(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
                  CUDA_R_16BF, al);
  assert_true(al[0] == 16 && al[1] == 16 && al[2] == 16 && al[3] == 16);
  algo_alignments(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_32F,
                  CUDA_R_32F, al);
  assert_true(al[0] == 16 && al[1] == 16 && al[2] == 16 && al[3] == 16);
  algo_alignments(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUDA_R_32F,
                  al);
  assert_true(al[0] == 2 && al[1] == 2 && al[2] == 4 && al[3] == 4);
  algo_alignments(h, CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F,
                  al);
  assert_true(al[0] == 8 && al[1] == 8 && al[2] == 8 && al[3] == 8);
  algo_alignments(h, CUBLAS_COMPUTE_32I, CUDA_R_32I, CUDA_R_8I, CUDA_R_8I, CUDA_R_32I, CUDA_R_32I,
                  al);
  assert_true(al[0] == 4 && al[1] == 4 && al[2] == 4 && al[3] == 4);
}

/* Heuristic status and result for a case with the four declared minimum
 * alignments (PREF_MIN_ALIGNMENT_{A,B,C,D}_BYTES). */
static cublasStatus_t lt_heuristic_aligned(cublasLtHandle_t h, lt_case *c, const uint32_t al[4],
                                           cublasLtMatmulHeuristicResult_t *r, int *got) {
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  for (int i = 0; i < 4; i++)
    assert_int_equal(cublasLtMatmulPreferenceSetAttribute(
                         p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i, &al[i], sizeof(al[i])),
                     CUBLAS_STATUS_SUCCESS);
  *got = -1;
  cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(h, c->desc, c->la, c->lb, c->lc, c->ld, p, 1, r, got);
  cublasLtMatmulPreferenceDestroy(p);
  return st;
}

/* A declared alignment below what the one algorithm needs leaves no
 * algorithm: NOT_SUPPORTED, no result. 16 is enough for fp8, 2 for fp16. */
static void heuristic_excludes_the_algorithm_below_its_alignment(void **state) {
  cublasLtHandle_t h = *state;
  cublasLtMatmulHeuristicResult_t r;
  int got;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF,
                      CUDA_R_16BF, 'T', 'N', 16, 8, 32, 1, 74);
  static const uint32_t fp8_ok[4] = {16, 16, 16, 16}, a8[4] = {8, 16, 16, 16},
                        d2[4] = {16, 16, 16, 2}, a24[4] = {24, 16, 16, 16}, a0[4] = {0, 16, 16, 16};
  assert_int_equal(lt_heuristic_aligned(h, &c, fp8_ok, &r, &got), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(got, 1);
  uint32_t cap = 0;
  assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                       &r.algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES, &cap, sizeof(cap), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cap, 16);
  const uint32_t *short_of_16[] = {a8, d2, a24, a0};
  for (size_t i = 0; i < 4; i++) {
    assert_int_equal(lt_heuristic_aligned(h, &c, short_of_16[i], &r, &got),
                     CUBLAS_STATUS_NOT_SUPPORTED);
    assert_int_equal(got, 0);
  }
  lt_free(&c);
  c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, 'N',
              'N', 8, 8, 8, 1, 75);
  static const uint32_t fp16_ok[4] = {2, 2, 2, 2}, b1[4] = {2, 1, 2, 2};
  assert_int_equal(lt_heuristic_aligned(h, &c, fp16_ok, &r, &got), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(got, 1);
  assert_int_equal(lt_heuristic_aligned(h, &c, b1, &r, &got), CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(got, 0);
  lt_free(&c);
}

/* The heuristic's algo for a case with the given declared alignments (NULL:
 * the preference's defaults, 256 bytes). */
static cublasLtMatmulAlgo_t algo_for(cublasLtHandle_t h, lt_case *c, const uint32_t *al) {
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  for (int i = 0; al != NULL && i < 4; i++)
    cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i, &al[i],
                                         sizeof(al[i]));
  cublasLtMatmulHeuristicResult_t r;
  int got = 0;
  assert_int_equal(
      cublasLtMatmulAlgoGetHeuristic(h, c->desc, c->la, c->lb, c->lc, c->ld, p, 1, &r, &got),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(got, 1);
  cublasLtMatmulPreferenceDestroy(p);
  return r.algo;
}

/* cublasLt.h, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_*: an algo needs its pointers
 * aligned so. One the heuristic found under the default declared alignment
 * (256) is for 16-byte aligned pointers (the kernels' vector loads):
 * cublasLtMatmul refuses it for fp32 matrices 4 bytes off
 * (NOT_SUPPORTED, as PyTorch met for fp32 ones 8 bytes aligned on an H100:
 * pytorch/pytorch#97205); declared 4, the algo found takes them. Without an
 * algo, cublasLtMatmul picks one that fits. A REDUCTION_SCHEME_MASK of 0
 * (no split-K allowed) keeps the one algorithm, which splits no K. */
static void an_algo_runs_only_on_pointers_aligned_as_it_needs(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                      CUDA_R_32F, 'N', 'N', 8, 8, 8, 1, 76);
  st_mat *mats[4] = {&c.A, &c.B, &c.C, &c.D};
  void *base[4], *off[4];
  for (int i = 0; i < 4; i++) {
    size_t bytes = (size_t)(mats[i]->ld * mats[i]->cols) * sizeof(float);
    base[i] = aligned_alloc(16, bytes + 16);
    assert_non_null(base[i]);
    off[i] = (char *)base[i] + 4;
    memcpy(off[i], mats[i]->data, bytes);
  }
  float one = 1, half = 0.5f;
  cublasLtMatmulAlgo_t dflt = algo_for(h, &c, NULL);
  uint32_t cap = 0;
  assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(&dflt, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES,
                                                     &cap, sizeof(cap), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cap, 16);
  assert_int_equal(cublasLtMatmul(h, c.desc, &one, c.A.data, c.la, c.B.data, c.lb, &half, c.C.data,
                                  c.lc, c.D.data, c.ld, &dflt, NULL, 0, NULL),
                   CUBLAS_STATUS_SUCCESS);
  for (int moved = 0; moved < 4; moved++) {
    const void *m[4] = {c.A.data, c.B.data, c.C.data, c.D.data};
    m[moved] = off[moved];
    assert_int_equal(cublasLtMatmul(h, c.desc, &one, m[0], c.la, m[1], c.lb, &half, m[2], c.lc,
                                    (void *)m[3], c.ld, &dflt, NULL, 0, NULL),
                     CUBLAS_STATUS_NOT_SUPPORTED);
  }
  static const uint32_t four[4] = {4, 4, 4, 4};
  cublasLtMatmulAlgo_t loose = algo_for(h, &c, four);
  assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(
                       &loose, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, &cap, sizeof(cap), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cap, 4);
  assert_int_equal(cublasLtMatmul(h, c.desc, &one, off[0], c.la, off[1], c.lb, &half, off[2], c.lc,
                                  off[3], c.ld, &loose, NULL, 0, NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasLtMatmul(h, c.desc, &one, off[0], c.la, off[1], c.lb, &half, off[2], c.lc,
                                  off[3], c.ld, NULL, NULL, 0, NULL),
                   CUBLAS_STATUS_SUCCESS);

  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  uint32_t no_split_k = 0;
  assert_int_equal(cublasLtMatmulPreferenceSetAttribute(p,
                                                        CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                        &no_split_k, sizeof(no_split_k)),
                   CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulHeuristicResult_t r;
  int got = 0;
  assert_int_equal(
      cublasLtMatmulAlgoGetHeuristic(h, c.desc, c.la, c.lb, c.lc, c.ld, p, 1, &r, &got),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(got, 1);
  cublasLtMatmulPreferenceDestroy(p);
  for (int i = 0; i < 4; i++)
    free(base[i]);
  lt_free(&c);
}

/* MAX_WORKSPACE_BYTES (default 0): the result never asks for more than it
 * allows; the one algorithm needs none. */
static void heuristic_result_fits_the_workspace_allowed(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                      CUDA_R_16F, 'N', 'N', 8, 8, 8, 1, 76);
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  cublasLtMatmulHeuristicResult_t r;
  memset(&r, 0xff, sizeof r);
  int got = -1;
  assert_int_equal(
      cublasLtMatmulAlgoGetHeuristic(h, c.desc, c.la, c.lb, c.lc, c.ld, p, 1, &r, &got),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(got, 1);
  assert_int_equal(r.workspaceSize, 0);
  cublasLtMatmulPreferenceDestroy(p);
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
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BGRADA);
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
  /* An aux epilogue without AUX_LD (it "requires" one), or without its aux
   * pointer; the bias-gradient-only epilogues are not simulated. */
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_GELU_AUX);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_INVALID_VALUE);
  int64_t ld8 = 8;
  cublasLtMatmulDescSetAttribute(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld8, sizeof ld8);
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_INVALID_VALUE);
  set_u32(c.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, CUBLASLT_EPILOGUE_BGRADB);
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

/* ---- algorithm enumeration: GetIds -> Init -> caps -> config -> Check -> Matmul ---- */

static void enumerated_algorithms_configure_check_and_run(void **state) {
  cublasLtHandle_t h = *state;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                      CUDA_R_16F, 'N', 'T', 9, 7, 12, 1, 120);
  int ids[16], n = -1;
  assert_int_equal(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F,
                                            CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, 16, ids, &n),
                   CUBLAS_STATUS_SUCCESS);
  assert_true(n >= 1);
  for (int i = 0; i < n; i++) {
    cublasLtMatmulAlgo_t algo;
    assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F,
                                            CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, ids[i], &algo),
                     CUBLAS_STATUS_SUCCESS);
    int32_t id = -1;
    assert_int_equal(
        cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), NULL),
        CUBLAS_STATUS_SUCCESS);
    assert_int_equal(id, ids[i]);
    /* Capabilities, as the cuBLASLt samples read them. */
    size_t need = 0, written = 0;
    assert_int_equal(
        cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, NULL, 0, &need),
        CUBLAS_STATUS_SUCCESS);
    assert_true(need >= sizeof(uint32_t) && need % sizeof(uint32_t) == 0);
    uint32_t tiles[CUBLASLT_MATMUL_TILE_END];
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles,
                                                       sizeof(tiles), &written),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(written, need);
    int32_t splitk_support = -1, custom_max = -1;
    uint32_t swizzle = 9, stages[CUBLASLT_MATMUL_STAGES_END];
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT,
                                                       &splitk_support, sizeof(splitk_support),
                                                       NULL),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX,
                                                       &custom_max, sizeof(custom_max), NULL),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(&algo,
                                                       CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT,
                                                       &swizzle, sizeof(swizzle), NULL),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_STAGES_IDS, stages,
                                                       sizeof(stages), &written),
                     CUBLAS_STATUS_SUCCESS);
    /* A scalar capability wants exactly its size. */
    assert_int_equal(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT,
                                                       tiles, sizeof(tiles), NULL),
                     CUBLAS_STATUS_INVALID_VALUE);
    /* Every advertised tile x stage x custom option checks and runs. */
    for (size_t t = 0; t < need / sizeof(uint32_t); t++)
      for (size_t g = 0; g < written / sizeof(uint32_t); g++)
        for (int32_t opt = 0; opt <= custom_max; opt++) {
          uint32_t uopt = (uint32_t)opt;
          assert_int_equal(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID,
                                                                &tiles[t], sizeof(tiles[t])),
                           CUBLAS_STATUS_SUCCESS);
          assert_int_equal(cublasLtMatmulAlgoConfigSetAttribute(&algo,
                                                                CUBLASLT_ALGO_CONFIG_STAGES_ID,
                                                                &stages[g], sizeof(stages[g])),
                           CUBLAS_STATUS_SUCCESS);
          assert_int_equal(cublasLtMatmulAlgoConfigSetAttribute(
                               &algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &uopt, sizeof(uopt)),
                           CUBLAS_STATUS_SUCCESS);
          cublasLtMatmulHeuristicResult_t r;
          memset(&r, 0, sizeof(r));
          assert_int_equal(cublasLtMatmulAlgoCheck(h, c.desc, c.la, c.lb, c.lc, c.ld, &algo, &r),
                           CUBLAS_STATUS_SUCCESS);
          assert_int_equal(r.state, CUBLAS_STATUS_SUCCESS);
          float alpha = 1.5f, beta = 0.5f;
          st_mat c0 = st_copy(&c.C);
          assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta,
                                          c.C.data, c.lc, c.D.data, c.ld, &algo, NULL, 0, NULL),
                           CUBLAS_STATUS_SUCCESS);
          assert_int_equal(st_mismatches('N', 'T', 9, 7, 12, 1.5, &c.A, &c.B, 0.5, &c0, &c.D), 0);
          free(c0.data);
        }
  }
  lt_free(&c);
}

static void algorithm_ids_config_and_caps_follow_the_header_rules(void **state) {
  cublasLtHandle_t h = *state;
  int ids[4], n = -1;
  assert_int_equal(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F,
                                            CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, 0, ids, &n),
                   CUBLAS_STATUS_INVALID_VALUE);
  /* A combination no kernel implements lists no algorithm. */
  assert_int_equal(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E5M2,
                                            CUDA_R_8F_E5M2, CUDA_R_16BF, CUDA_R_16BF, 4, ids, &n),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(n, 0);
  cublasLtMatmulAlgo_t algo;
  assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E5M2,
                                          CUDA_R_8F_E5M2, CUDA_R_16BF, CUDA_R_16BF, 0, &algo),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                          CUDA_R_32F, CUDA_R_32F, 100000, &algo),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                          CUDA_R_32F, CUDA_R_32F, 0, NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F,
                                            CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, 4, ids, &n),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(n, 1);
  assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                          CUDA_R_32F, CUDA_R_32F, ids[0], &algo),
                   CUBLAS_STATUS_SUCCESS);
  /* The id is read-only; setters want the exact size. */
  int32_t id = 5, splitk = 4;
  assert_int_equal(
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id)),
      CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(
      cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, 2),
      CUBLAS_STATUS_INVALID_VALUE);
  size_t need = 0;
  assert_int_equal(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID,
                                                        NULL, 0, &need),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(need, sizeof(uint16_t));
  /* Split K is not among the capabilities: a configuration asking for it
   * does not check and does not run. */
  assert_int_equal(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                        &splitk, sizeof(splitk)),
                   CUBLAS_STATUS_SUCCESS);
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                      CUDA_R_32F, 'N', 'N', 4, 4, 4, 1, 121);
  cublasLtMatmulHeuristicResult_t r;
  assert_int_equal(cublasLtMatmulAlgoCheck(h, c.desc, c.la, c.lb, c.lc, c.ld, &algo, &r),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  float alpha = 1, beta = 0;
  assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta,
                                  c.C.data, c.lc, c.D.data, c.ld, &algo, NULL, 0, NULL),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  /* An algo made for other types does not match the descriptors. */
  cublasLtMatmulAlgo_t fp16_algo;
  assert_int_equal(cublasLtMatmulAlgoInit(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F,
                                          CUDA_R_16F, CUDA_R_16F, 0, &fp16_algo),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasLtMatmulAlgoCheck(h, c.desc, c.la, c.lb, c.lc, c.ld, &fp16_algo, &r),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta,
                                  c.C.data, c.lc, c.D.data, c.ld, &fp16_algo, NULL, 0, NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  /* An algo that was never initialised is refused. */
  cublasLtMatmulAlgo_t junk;
  memset(&junk, 0xab, sizeof(junk));
  assert_int_equal(cublasLtMatmul(h, c.desc, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta,
                                  c.C.data, c.lc, c.D.data, c.ld, &junk, NULL, 0, NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(
      cublasLtMatmulAlgoCapGetAttribute(&junk, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &id, 4, NULL),
      CUBLAS_STATUS_INVALID_VALUE);
  lt_free(&c);
}

/* ---- cublasLtMatrixTransform: C = alpha op(A) + beta op(B) ---- */

static void matrix_transform_scales_transposes_and_reorders(void **state) {
  cublasLtHandle_t h = *state;
  cublasLtMatrixTransformDesc_t t;
  assert_int_equal(cublasLtMatrixTransformDescCreate(&t, CUDA_R_32F), CUBLAS_STATUS_SUCCESS);
  int32_t v = -1;
  assert_int_equal(cublasLtMatrixTransformDescGetAttribute(t, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA,
                                                           &v, sizeof(v), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(v, CUBLAS_OP_N);
  int32_t opT = CUBLAS_OP_T;
  assert_int_equal(cublasLtMatrixTransformDescSetAttribute(t, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA,
                                                           &opT, sizeof(opT)),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(
      cublasLtMatrixTransformDescSetAttribute(t, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, &opT, 2),
      CUBLAS_STATUS_INVALID_VALUE);
  /* A: 3 x 5 column-major (ld 4); B: 5 x 3 row-major (ld 3); C: 5 x 3 column-major (ld 6). */
  float A[4 * 5], B[5 * 3], C[6 * 3];
  for (int i = 0; i < 20; i++)
    A[i] = (float)i;
  for (int i = 0; i < 15; i++)
    B[i] = (float)(100 + i);
  for (int i = 0; i < 18; i++)
    C[i] = -7;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 3, 5, 4);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 5, 3, 3);
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, 5, 3, 6);
  int32_t row = CUBLASLT_ORDER_ROW;
  cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof(row));
  float alpha = 2, beta = -1;
  assert_int_equal(cublasLtMatrixTransform(h, t, &alpha, A, la, &beta, B, lb, C, lc, NULL),
                   CUBLAS_STATUS_SUCCESS);
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 5; i++)
      assert_true(C[i + j * 6] == 2 * A[j + i * 4] - B[i * 3 + j]);
  assert_true(C[5] == -7); /* ld padding untouched */
  /* beta 0: B is not read and may be NULL. */
  beta = 0;
  assert_int_equal(cublasLtMatrixTransform(h, t, &alpha, A, la, &beta, NULL, NULL, C, lc, NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_true(C[1 + 2 * 6] == 2 * A[2 + 1 * 4]);
  /* Shapes that do not match C, and a B needed but absent. */
  beta = 1;
  assert_int_equal(cublasLtMatrixTransform(h, t, &alpha, A, la, &beta, NULL, NULL, C, lc, NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasLtMatrixTransform(h, t, &alpha, A, la, &beta, A, la, C, lc, NULL),
                   CUBLAS_STATUS_INVALID_VALUE);
  /* IMMA orders and int8 are not emulated; the scale type must fit the data. */
  int32_t col32 = CUBLASLT_ORDER_COL32;
  cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_ORDER, &col32, sizeof(col32));
  assert_int_equal(cublasLtMatrixTransform(h, t, &alpha, A, la, &beta, B, lb, C, lc, NULL),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  cublasLtMatrixTransformDesc_t t64;
  assert_int_equal(cublasLtMatrixTransformDescCreate(&t64, CUDA_R_64F), CUBLAS_STATUS_SUCCESS);
  double alpha64 = 1, beta64 = 0;
  assert_int_equal(
      cublasLtMatrixTransform(h, t64, &alpha64, A, la, &beta64, NULL, NULL, C, lc, NULL),
      CUBLAS_STATUS_NOT_SUPPORTED);
  cublasLtMatrixTransformDescDestroy(t64);
  cublasLtMatrixTransformDescDestroy(t);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
}

static void emulation_descriptor_round_trips_and_reports_no_emulation(void **state) {
  cublasLtHandle_t h = *state;
  cublasLtEmulationDesc_t e;
  assert_int_equal(cublasLtEmulationDescCreate(&e), CUBLAS_STATUS_SUCCESS);
  int32_t v = 0;
  assert_int_equal(cublasLtEmulationDescGetAttribute(
                       e, CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT, &v, sizeof(v), NULL),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(v, 0xFFFF);
  v = 1;
  assert_int_equal(
      cublasLtEmulationDescSetAttribute(e, CUBLASLT_EMULATION_DESC_STRATEGY, &v, sizeof(v)),
      CUBLAS_STATUS_SUCCESS);
  int32_t bits = 99, *bits_ptr = &bits;
  assert_int_equal(cublasLtEmulationDescSetAttribute(
                       e, CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER, &bits_ptr,
                       sizeof(bits_ptr)),
                   CUBLAS_STATUS_SUCCESS);
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                      CUDA_R_32F, 'N', 'N', 4, 4, 4, 1, 122);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, e);
  float alpha = 1, beta = 0;
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(bits, -1); /* "If emulation is not used, the pointer will contain -1." */
  lt_free(&c);
  assert_int_equal(cublasLtEmulationDescDestroy(e), CUBLAS_STATUS_SUCCESS);
}

/* ---- block-scaled FP8 (cublasLtMatmulMatrixScale_t) ----
 * A is k x m and B k x n as stored (the TN layout): K is the inner,
 * contiguous dimension of both, the one the scale blocks run along. */

static int device_sm(void) {
  int major = 0, minor = 0;
  cuInit(0);
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0);
  return major * 10 + minor;
}

/* Power-of-two scales that differ per block, so a block read from the wrong
 * place changes the result (and every product stays exact). */
static float pow2_scale(uint64_t r, uint64_t blk) {
  return ldexpf(1.0f, (int)((r * 3 + blk * 5) % 7) - 3);
}

/* Scale tensors laid out as the cuBLASLt documentation describes them. */
static void *make_scales(int mode, uint64_t outer, uint64_t k) {
  if (mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0) {
    uint64_t row_tiles = (outer + 127) / 128, col_tiles = (k / 32 + 3) / 4;
    uint8_t *s = calloc(row_tiles * col_tiles, 512);
    for (uint64_t r = 0; r < outer; r++)
      for (uint64_t b = 0; b < k / 32; b++) {
        uint64_t tile = (r / 128) * col_tiles + b / 4;
        s[tile * 512 + (r % 32) * 16 + (r % 128) / 32 * 4 + b % 4] =
            (uint8_t)(127 + ilogbf(pow2_scale(r, b)));
      }
    return s;
  }
  uint64_t kb = (k + 127) / 128;
  if (mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F) {
    float *s = calloc(outer * kb, sizeof(float));
    for (uint64_t r = 0; r < outer; r++)
      for (uint64_t b = 0; b < kb; b++)
        s[r + b * outer] = pow2_scale(r, b);
    return s;
  }
  uint64_t l4 = (kb + 3) / 4 * 4, ob = (outer + 127) / 128;
  float *s = calloc(l4 * ob, sizeof(float));
  for (uint64_t r = 0; r < ob; r++)
    for (uint64_t b = 0; b < kb; b++)
      s[b + r * l4] = pow2_scale(r * 128, b); /* one scale per 128 x 128 block */
  return s;
}

/* UE4M3 scales (NVFP4): the same 128x4 tiles over blocks of 16, e4m3 bytes. */
static uint8_t *make_ue4m3_scales(uint64_t outer, uint64_t k) {
  uint64_t row_tiles = (outer + 127) / 128, col_tiles = (k / 16 + 3) / 4;
  uint8_t *s = calloc(row_tiles * col_tiles, 512);
  for (uint64_t r = 0; r < outer; r++)
    for (uint64_t b = 0; b < k / 16; b++) {
      uint64_t tile = (r / 128) * col_tiles + b / 4;
      s[tile * 512 + (r % 32) * 16 + (r % 128) / 32 * 4 + b % 4] =
          mp_float_to_e4m3(pow2_scale(r, b), false);
    }
  return s;
}

static double scale_of(int mode, uint64_t r, uint64_t q) {
  uint64_t blk = q / (mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 ? 32 : 128);
  return mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F ? pow2_scale(r / 128 * 128, blk)
                                                             : pow2_scale(r, blk);
}

/* Runs one block-scaled e4m3 x e4m3 -> fp32 matmul; returns its status and
 * counts elements that differ from sum_q sA(i,q) sB(j,q) A(q,i) B(q,j). */
static cublasStatus_t run_block_scaled(cublasLtHandle_t h, int amode, int bmode, int64_t m,
                                       int64_t n, int64_t k, int64_t *bad) {
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F,
                      CUDA_R_32F, 'T', 'N', m, n, k, 1, 130u + (uint32_t)(amode * 8 + bmode));
  set_i32(c.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, amode);
  set_i32(c.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, bmode);
  void *sa = make_scales(amode, (uint64_t)m, (uint64_t)k);
  void *sb = make_scales(bmode, (uint64_t)n, (uint64_t)k);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sa);
  set_ptr(c.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sb);
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  cublasLtMatmulHeuristicResult_t r;
  int got = 0;
  cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(h, c.desc, c.la, c.lb, c.lc, c.ld, p, 1, &r, &got);
  cublasLtMatmulPreferenceDestroy(p);
  float alpha = 1, beta = 0;
  if (st == CUBLAS_STATUS_SUCCESS) {
    assert_int_equal(got, 1);
    st = cublasLtMatmul(h, c.desc, &alpha, c.A.data, c.la, c.B.data, c.lb, &beta, c.C.data, c.lc,
                        c.D.data, c.ld, &r.algo, NULL, 0, NULL);
  } else {
    assert_int_equal(lt_run(h, &c, &alpha, &beta), st); /* the matmul says the same */
  }
  *bad = 0;
  for (int64_t j = 0; st == CUBLAS_STATUS_SUCCESS && j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double want = 0;
      for (int64_t q = 0; q < k; q++)
        want += scale_of(amode, (uint64_t)i, (uint64_t)q) * st_get(&c.A, 0, q, i) *
                scale_of(bmode, (uint64_t)j, (uint64_t)q) * st_get(&c.B, 0, q, j);
      if (st_get(&c.D, 0, i, j) != want) (*bad)++;
    }
  free(sa);
  free(sb);
  lt_free(&c);
  return st;
}

/* Hopper (sm_90) runs 1x128 and 128x128 block scaling (not 128x128 on both
 * sides) and no MXFP8; Blackwell (SIMCUDA_SM=100) the reverse. */
static void block_scaled_fp8_runs_the_modes_of_the_simulated_device(void **state) {
  cublasLtHandle_t h = *state;
  int sm = device_sm();
  assert_true(sm == 90 || sm == 100);
  const int V128 = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  const int B128 = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  const int MX = CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
  cublasStatus_t hopper = sm == 90 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
  cublasStatus_t blackwell = sm == 100 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED;
  int64_t bad = -1;
  /* 3 K blocks of 128 (the last one partial), 2 outer 128-blocks. */
  assert_int_equal(run_block_scaled(h, V128, B128, 16, 136, 320, &bad), hopper);
  assert_int_equal(bad, 0);
  assert_int_equal(run_block_scaled(h, B128, V128, 144, 8, 320, &bad), hopper);
  assert_int_equal(bad, 0);
  assert_int_equal(run_block_scaled(h, V128, V128, 16, 10, 256, &bad), hopper);
  assert_int_equal(bad, 0);
  assert_int_equal(run_block_scaled(h, B128, B128, 16, 8, 128, &bad), CUBLAS_STATUS_NOT_SUPPORTED);
  /* MXFP8: 5 blocks of 32 (two 4-block tile columns), two 128-row tiles. */
  assert_int_equal(run_block_scaled(h, MX, MX, 144, 8, 160, &bad), blackwell);
  assert_int_equal(bad, 0);
  assert_int_equal(run_block_scaled(h, MX, MX, 16, 136, 160, &bad), blackwell);
  assert_int_equal(bad, 0);
  /* Not emulated on either: UE4M3 blocks on fp8 data, outer vectors, mixed MX. */
  assert_int_equal(run_block_scaled(h, CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3,
                                    CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3, 16, 8, 64, &bad),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(run_block_scaled(h, CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F,
                                    CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, 16, 8, 64, &bad),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(run_block_scaled(h, MX, V128, 16, 8, 128, &bad), CUBLAS_STATUS_NOT_SUPPORTED);
}

/* NVFP4: e2m1 A (k x m) and B (k x n) packed two values to a byte, low
 * nibble first, with a UE4M3 scale per 16 elements of K; sm_100 only. */
static cublasStatus_t run_nvfp4(cublasLtHandle_t h, int64_t m, int64_t n, int64_t k, int64_t *bad) {
  static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  uint8_t *a = calloc((size_t)(k * m / 2), 1), *b = calloc((size_t)(k * n / 2), 1);
  uint32_t seed = 7;
  for (int64_t i = 0; i < k * m; i++)
    a[i / 2] |= (uint8_t)((st_rand(&seed) % 16) << (i % 2 ? 4 : 0));
  for (int64_t i = 0; i < k * n; i++)
    b[i / 2] |= (uint8_t)((st_rand(&seed) % 16) << (i % 2 ? 4 : 0));
  float *d = calloc((size_t)(m * n), sizeof(float));
  uint8_t *sa = make_ue4m3_scales((uint64_t)m, (uint64_t)k),
          *sb = make_ue4m3_scales((uint64_t)n, (uint64_t)k);
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  set_i32(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T);
  set_i32(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3);
  set_i32(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3);
  set_ptr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, sa);
  set_ptr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, sb);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_4F_E2M1, (uint64_t)k, (uint64_t)m, k);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_4F_E2M1, (uint64_t)k, (uint64_t)n, k);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, (uint64_t)m, (uint64_t)n, m);
  float alpha = 1, beta = 0;
  cublasStatus_t st =
      cublasLtMatmul(h, desc, &alpha, a, la, b, lb, &beta, d, ld, d, ld, NULL, NULL, 0, NULL);
  *bad = 0;
  for (int64_t j = 0; st == CUBLAS_STATUS_SUCCESS && j < n; j++)
    for (int64_t i = 0; i < m; i++) {
      double want = 0;
      for (int64_t q = 0; q < k; q++) {
        int64_t ia = q + i * k, ib = q + j * k;
        unsigned va = (a[ia / 2] >> (ia % 2 ? 4 : 0)) & 0xf,
                 vb = (b[ib / 2] >> (ib % 2 ? 4 : 0)) & 0xf;
        double x = (va & 8 ? -1 : 1) * e2m1[va & 7], y = (vb & 8 ? -1 : 1) * e2m1[vb & 7];
        want += pow2_scale((uint64_t)i, (uint64_t)q / 16) * x *
                pow2_scale((uint64_t)j, (uint64_t)q / 16) * y;
      }
      if (d[i + j * m] != want) (*bad)++;
    }
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
  free(a), free(b), free(d), free(sa), free(sb);
  return st;
}

static void nvfp4_runs_on_sm100_only(void **state) {
  cublasLtHandle_t h = *state;
  int sm = device_sm();
  int64_t bad = -1;
  /* 6 blocks of 16 (two tile columns), two 128-row tiles of A; K a whole
   * number of 16 bytes (32 e2m1 values), M a multiple of 16 (fp8_layouts_ok). */
  assert_int_equal(run_nvfp4(h, 144, 6, 96, &bad),
                   sm == 100 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(bad, 0);
  int ids[2], n = -1;
  assert_int_equal(cublasLtMatmulAlgoGetIds(h, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_4F_E2M1,
                                            CUDA_R_4F_E2M1, CUDA_R_16BF, CUDA_R_16BF, 2, ids, &n),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(n, sm == 100 ? 1 : 0);
}

static void block_scales_have_no_default_pointer(void **state) {
  cublasLtHandle_t h = *state;
  int sm = device_sm();
  int mode =
      sm == 90 ? CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F : CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
  lt_case c = lt_make(CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_32F,
                      CUDA_R_32F, 'T', 'N', 16, 8, 128, 1, 140);
  set_i32(c.desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode);
  set_i32(c.desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode);
  float alpha = 1, beta = 0;
  assert_int_equal(lt_run(h, &c, &alpha, &beta), CUBLAS_STATUS_INVALID_VALUE);
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
      cmocka_unit_test_setup_teardown(aux_epilogues_write_and_read_their_aux, setup, teardown),
      cmocka_unit_test_setup_teardown(fp8_scales_amax_and_fp8_output_follow_the_documented_formula,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(fp8_gelu_aux_is_stored_at_its_scale_with_its_amax, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(fp8_scale_pointers_default_to_one, setup, teardown),
      cmocka_unit_test_setup_teardown(algo_caps_report_the_alignment_of_their_types, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(heuristic_excludes_the_algorithm_below_its_alignment, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(an_algo_runs_only_on_pointers_aligned_as_it_needs, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(heuristic_result_fits_the_workspace_allowed, setup, teardown),
      cmocka_unit_test_setup_teardown(fp8_outside_the_hopper_table_is_not_supported, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          fp8_layouts_outside_the_documented_requirements_are_not_supported, setup, teardown),
      cmocka_unit_test_setup_teardown(strided_batch_with_batched_bias_matches_reference, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(pointer_array_batch_mode_reads_each_members_address, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(row_order_layouts_are_honoured, setup, teardown),
      cmocka_unit_test_setup_teardown(heuristic_returns_one_algorithm_or_not_supported, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(bad_arguments_are_refused, setup, teardown),
      cmocka_unit_test_setup_teardown(enumerated_algorithms_configure_check_and_run, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(algorithm_ids_config_and_caps_follow_the_header_rules, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(matrix_transform_scales_transposes_and_reorders, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(emulation_descriptor_round_trips_and_reports_no_emulation,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(block_scaled_fp8_runs_the_modes_of_the_simulated_device,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(block_scales_have_no_default_pointer, setup, teardown),
      cmocka_unit_test_setup_teardown(nvfp4_runs_on_sm100_only, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
