/* simcuda libcublas.so.13 against a host reference: every GEMM entry point
 * (and its _64 twin), every transpose pair, padded leading dimensions,
 * batch strides with gaps, the GemmEx / SgemmEx type tables, TF32 math mode,
 * and the argument checks that return INVALID_VALUE / NOT_SUPPORTED. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>

#include <cmocka.h>
#include <cublas_v2.h>

#include "simcuda_test.h"

/* C++-only prototypes in cublas_api.h; __half is a 2-byte struct. */
cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const uint16_t *, const uint16_t *, int, const uint16_t *, int,
                           const uint16_t *, uint16_t *, int);
cublasStatus_t cublasHgemm_64(cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t,
                              int64_t, int64_t, const uint16_t *, const uint16_t *, int64_t,
                              const uint16_t *, int64_t, const uint16_t *, uint16_t *, int64_t);
cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                         int, int, const uint16_t *, const uint16_t *, int,
                                         long long, const uint16_t *, int, long long,
                                         const uint16_t *, uint16_t *, int, long long, int);
cublasStatus_t cublasHgemmBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const uint16_t *, const uint16_t *const[], int,
                                  const uint16_t *const[], int, const uint16_t *, uint16_t *const[],
                                  int, int);

static const cublasOperation_t ops[] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};

static char op_char(cublasOperation_t op) {
  return op == CUBLAS_OP_N ? 'N' : 'T';
}

static int setup(void **state) {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return -1;
  *state = h;
  return 0;
}

static int teardown(void **state) {
  return cublasDestroy((cublasHandle_t)*state) == CUBLAS_STATUS_SUCCESS ? 0 : -1;
}

/* Operands for C(m x n) = op(A) op(B): padded lds, poisoned padding. */
typedef struct operands {
  st_mat A, B, C, C0;
  int64_t m, n, k;
  char ta, tb;
} operands;

static operands make(cudaDataType at, cudaDataType ct, cublasOperation_t ta, cublasOperation_t tb,
                     int64_t m, int64_t n, int64_t k, int64_t batch, uint32_t seed) {
  operands o = {.m = m, .n = n, .k = k, .ta = op_char(ta), .tb = op_char(tb)};
  int64_t ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
  int64_t br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
  o.A = st_matrix(at, ar, ac, ar + 3, batch, (ar + 3) * ac + 5, seed);
  o.B = st_matrix(at, br, bc, br + 2, batch, (br + 2) * bc + 7, seed * 7 + 1);
  o.C = st_matrix(ct, m, n, m + 1, batch, (m + 1) * n + 3, seed * 13 + 5);
  o.C0 = st_copy(&o.C);
  return o;
}

static void release(operands *o) {
  free(o->A.data);
  free(o->B.data);
  free(o->C.data);
  free(o->C0.data);
}

static int64_t check(const operands *o, double alpha, double beta) {
  return st_mismatches(o->ta, o->tb, o->m, o->n, o->k, alpha, &o->A, &o->B, beta, &o->C0, &o->C);
}

static void sgemm_matches_reference_for_every_transpose_pair(void **state) {
  cublasHandle_t h = *state;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      operands o = make(CUDA_R_32F, CUDA_R_32F, ops[a], ops[b], 5, 7, 9, 1, 10u + a * 3 + b);
      float alpha = 1.5f, beta = -0.5f;
      assert_int_equal(cublasSgemm(h, ops[a], ops[b], 5, 7, 9, &alpha, o.A.data, (int)o.A.ld,
                                   o.B.data, (int)o.B.ld, &beta, o.C.data, (int)o.C.ld),
                       CUBLAS_STATUS_SUCCESS);
      assert_int_equal(check(&o, alpha, beta), 0);
      release(&o);
    }
}

static void dgemm_matches_reference_for_every_transpose_pair(void **state) {
  cublasHandle_t h = *state;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++) {
      operands o = make(CUDA_R_64F, CUDA_R_64F, ops[a], ops[b], 6, 3, 8, 1, 40u + a * 3 + b);
      double alpha = -2.0, beta = 0.25;
      assert_int_equal(cublasDgemm(h, ops[a], ops[b], 6, 3, 8, &alpha, o.A.data, (int)o.A.ld,
                                   o.B.data, (int)o.B.ld, &beta, o.C.data, (int)o.C.ld),
                       CUBLAS_STATUS_SUCCESS);
      assert_int_equal(check(&o, alpha, beta), 0);
      release(&o);
    }
}

/* k = 300 puts sums in the fp16 binades with ulp 2 and 4: the single RNE
 * rounding of the fp32 accumulator is what is checked. */
static void hgemm_rounds_the_fp32_accumulator_once_to_fp16(void **state) {
  cublasHandle_t h = *state;
  operands o = make(CUDA_R_16F, CUDA_R_16F, CUBLAS_OP_T, CUBLAS_OP_N, 4, 5, 300, 1, 77);
  uint16_t alpha = mp_float_to_fp16(1.0f), beta = mp_float_to_fp16(0.5f);
  assert_int_equal(cublasHgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 5, 300, &alpha, o.A.data,
                               (int)o.A.ld, o.B.data, (int)o.B.ld, &beta, o.C.data, (int)o.C.ld),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(check(&o, 1.0, 0.5), 0);
  release(&o);
}

static void beta_zero_does_not_read_c(void **state) {
  cublasHandle_t h = *state;
  operands o = make(CUDA_R_32F, CUDA_R_32F, CUBLAS_OP_N, CUBLAS_OP_N, 3, 3, 3, 1, 5);
  for (int64_t i = 0; i < o.C.ld * o.C.cols; i++)
    ((float *)o.C.data)[i] = NAN;
  float alpha = 1, beta = 0;
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 3, 3, 3, &alpha, o.A.data, (int)o.A.ld,
                               o.B.data, (int)o.B.ld, &beta, o.C.data, (int)o.C.ld),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(check(&o, 1, 0), 0);
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 3; i++)
      assert_false(isnan(((float *)o.C.data)[i + j * o.C.ld]));
  release(&o);
}

/* The cublasGemmEx table (cuBLAS 13.0 docs) rows simcuda implements. */
typedef struct ex_case {
  cudaDataType at, ct;
  cublasComputeType_t compute;
} ex_case;

static const ex_case ex_cases[] = {
    {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F},
    {CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F},
    {CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F},
    {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_PEDANTIC},
    {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F},
    {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F},
    {CUDA_R_8I, CUDA_R_32I, CUBLAS_COMPUTE_32I},
    {CUDA_R_8I, CUDA_R_32F, CUBLAS_COMPUTE_32F},
};

/* alpha = 2, beta = 1 stored in the compute type's scale type. */
static void scale_pair(cublasComputeType_t c, void *alpha, void *beta) {
  switch (c) {
  case CUBLAS_COMPUTE_16F:
    *(uint16_t *)alpha = mp_float_to_fp16(2);
    *(uint16_t *)beta = mp_float_to_fp16(1);
    break;
  case CUBLAS_COMPUTE_64F:
    *(double *)alpha = 2;
    *(double *)beta = 1;
    break;
  case CUBLAS_COMPUTE_32I:
    *(int32_t *)alpha = 2;
    *(int32_t *)beta = 1;
    break;
  default:
    *(float *)alpha = 2;
    *(float *)beta = 1;
    break;
  }
}

static void gemmex_matches_reference_for_each_type_table_row(void **state) {
  cublasHandle_t h = *state;
  for (size_t i = 0; i < sizeof(ex_cases) / sizeof(ex_cases[0]); i++) {
    const ex_case *c = &ex_cases[i];
    cublasOperation_t ta = ops[i % 3], tb = ops[(i + 1) % 3];
    operands o = make(c->at, c->ct, ta, tb, 7, 4, 33, 1, 100u + (uint32_t)i);
    double alpha_v[1], beta_v[1];
    scale_pair(c->compute, alpha_v, beta_v);
    cublasStatus_t s = cublasGemmEx(h, ta, tb, 7, 4, 33, alpha_v, o.A.data, c->at, (int)o.A.ld,
                                    o.B.data, c->at, (int)o.B.ld, beta_v, o.C.data, c->ct,
                                    (int)o.C.ld, c->compute, CUBLAS_GEMM_DEFAULT_TENSOR_OP);
    assert_int_equal(s, CUBLAS_STATUS_SUCCESS);
    assert_int_equal(check(&o, 2, 1), 0);
    release(&o);
  }
}

static void gemmex_refuses_fp8_and_combinations_outside_the_table(void **state) {
  cublasHandle_t h = *state;
  static const struct {
    cudaDataType at, ct;
    int compute;
    cublasStatus_t want;
  } bad[] = {
      {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_8F_E5M2, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_16F, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_32F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_64F, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_16F, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_EMULATED_16BFX9, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_32F, CUDA_R_32F, 12345, CUBLAS_STATUS_INVALID_VALUE},
  };
  char buf[256] = {0};
  double alpha = 1, beta = 0;
  /* An algo outside cublasGemmAlgo_t is "not supported"; listed ones are ignored. */
  assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 2, &alpha, buf, CUDA_R_32F, 2,
                                buf, CUDA_R_32F, 2, &beta, buf + 128, CUDA_R_32F, 2,
                                CUBLAS_COMPUTE_32F, (cublasGemmAlgo_t)50),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 2, &alpha, buf, CUDA_R_32F, 2,
                                buf, CUDA_R_32F, 2, &beta, buf + 128, CUDA_R_32F, 2,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_ALGO5_TENSOR_OP),
                   CUBLAS_STATUS_SUCCESS);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, 2, &alpha, buf, bad[i].at, 2,
                                  buf, bad[i].at, 2, &beta, buf + 128, bad[i].ct, 2,
                                  (cublasComputeType_t)bad[i].compute, CUBLAS_GEMM_DEFAULT),
                     bad[i].want);
}

static void sgemmex_follows_its_type_table(void **state) {
  cublasHandle_t h = *state;
  static const struct {
    cudaDataType at, ct;
    cublasStatus_t want;
  } cases[] = {
      {CUDA_R_16F, CUDA_R_16F, CUBLAS_STATUS_SUCCESS},
      {CUDA_R_16F, CUDA_R_32F, CUBLAS_STATUS_SUCCESS},
      {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_STATUS_SUCCESS},
      {CUDA_R_16BF, CUDA_R_32F, CUBLAS_STATUS_SUCCESS},
      {CUDA_R_8I, CUDA_R_32F, CUBLAS_STATUS_SUCCESS},
      {CUDA_R_32F, CUDA_R_32F, CUBLAS_STATUS_SUCCESS},
      {CUDA_R_16F, CUDA_R_16BF, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_32F, CUDA_R_16F, CUBLAS_STATUS_NOT_SUPPORTED},
      {CUDA_R_8F_E4M3, CUDA_R_32F, CUBLAS_STATUS_NOT_SUPPORTED},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    operands o =
        make(cases[i].at, cases[i].ct, CUBLAS_OP_N, CUBLAS_OP_T, 6, 5, 17, 1, 200u + (uint32_t)i);
    float alpha = 0.5f, beta = -1.0f;
    assert_int_equal(cublasSgemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, 6, 5, 17, &alpha, o.A.data,
                                   cases[i].at, (int)o.A.ld, o.B.data, cases[i].at, (int)o.B.ld,
                                   &beta, o.C.data, cases[i].ct, (int)o.C.ld),
                     cases[i].want);
    if (cases[i].want == CUBLAS_STATUS_SUCCESS) assert_int_equal(check(&o, 0.5, -1.0), 0);
    release(&o);
  }
}

static void leading_dimensions_and_sizes_are_checked_like_cublas(void **state) {
  cublasHandle_t h = *state;
  float A[64] = {0}, B[64] = {0}, C[64] = {0}, one = 1, zero = 0;
  const cublasStatus_t inv = CUBLAS_STATUS_INVALID_VALUE;
  /* lda >= max(1, m) for N, >= max(1, k) for T. */
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &one, A, 3, B, 3, &zero, C, 4),
                   inv);
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 2, 3, &one, A, 2, B, 3, &zero, C, 4),
                   inv);
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 2, 3, &one, A, 3, B, 3, &zero, C, 4),
                   CUBLAS_STATUS_SUCCESS);
  /* ldb >= max(1, k) for N, >= max(1, n) for T. */
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &one, A, 4, B, 2, &zero, C, 4),
                   inv);
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, 4, 2, 3, &one, A, 4, B, 1, &zero, C, 4),
                   inv);
  /* ldc >= max(1, m). */
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 3, &one, A, 4, B, 3, &zero, C, 3),
                   inv);
  /* Negative sizes; an ld of 0 even for an empty matrix. */
  assert_int_equal(
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 3, &one, A, 4, B, 3, &zero, C, 4), inv);
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 3, &one, A, 0, B, 3, &zero, C, 1),
                   inv);
  /* Empty products are a successful no-op. */
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 3, &one, A, 1, B, 3, &zero, C, 1),
                   CUBLAS_STATUS_SUCCESS);
  /* Invalid operation code. */
  assert_int_equal(
      cublasSgemm(h, (cublasOperation_t)7, CUBLAS_OP_N, 4, 2, 3, &one, A, 4, B, 3, &zero, C, 4),
      inv);
  /* Negative batch count. */
  assert_int_equal(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, A, 2, 4, B,
                                             2, 4, &zero, C, 2, 4, -1),
                   inv);
}

static void k_zero_scales_c_by_beta(void **state) {
  cublasHandle_t h = *state;
  float C[4] = {1, 2, 3, 4}, alpha = 1, beta = 3;
  float A[1] = {0}, B[1] = {0};
  assert_int_equal(
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 0, &alpha, A, 2, B, 1, &beta, C, 2),
      CUBLAS_STATUS_SUCCESS);
  assert_true(C[0] == 3 && C[1] == 6 && C[2] == 9 && C[3] == 12);
}

/* Under CUBLAS_TF32_TENSOR_OP_MATH fp32 inputs are rounded to TF32 (10
 * mantissa bits): 1 + 2^-12 becomes 1. PEDANTIC compute keeps full fp32. */
static void tf32_math_mode_rounds_fp32_inputs_to_tf32(void **state) {
  cublasHandle_t h = *state;
  float A[4], B[4] = {1, 1, 1, 1}, C[1], one = 1, zero = 0;
  for (int i = 0; i < 4; i++)
    A[i] = 1.0f + ldexpf(1.0f, -12);
  const float exact = 4.0f + ldexpf(1.0f, -10);
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 4, &one, A, 1, B, 4, &zero, C, 1),
                   CUBLAS_STATUS_SUCCESS);
  assert_true(C[0] == exact);
  assert_int_equal(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 4, &one, A, 1, B, 4, &zero, C, 1),
                   CUBLAS_STATUS_SUCCESS);
  assert_true(C[0] == 4.0f);
  assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 4, &one, A, CUDA_R_32F, 1, B,
                                CUDA_R_32F, 4, &zero, C, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT),
                   CUBLAS_STATUS_SUCCESS);
  assert_true(C[0] == 4.0f);
  assert_int_equal(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 4, &one, A, CUDA_R_32F, 1, B,
                                CUDA_R_32F, 4, &zero, C, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F_PEDANTIC,
                                CUBLAS_GEMM_DEFAULT),
                   CUBLAS_STATUS_SUCCESS);
  assert_true(C[0] == exact);
  assert_int_equal(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_SUCCESS);
}

static void math_mode_and_stream_round_trip(void **state) {
  cublasHandle_t h = *state;
  cublasMath_t mode;
  cublasMath_t want =
      (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  assert_int_equal(cublasSetMathMode(h, want), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasGetMathMode(h, &mode), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(mode, want);
  assert_int_equal(cublasSetMathMode(h, (cublasMath_t)5), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_SUCCESS);
  cudaStream_t s = NULL, got = (cudaStream_t)1;
  assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
  assert_int_equal(cublasSetStream(h, s), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasGetStream(h, &got), CUBLAS_STATUS_SUCCESS);
  assert_ptr_equal(got, s);
  assert_int_equal(cublasSetStream(h, NULL), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void device_pointer_mode_is_refused(void **state) {
  cublasHandle_t h = *state;
  cublasPointerMode_t mode;
  assert_int_equal(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  assert_int_equal(cublasGetPointerMode(h, &mode), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(mode, CUBLAS_POINTER_MODE_HOST);
  assert_int_equal(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
}

static void calls_without_a_handle_return_not_initialized(void **state) {
  (void)state;
  float x[4] = {0}, one = 1;
  assert_int_equal(
      cublasSgemm(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, x, 2, x, 2, &one, x, 2),
      CUBLAS_STATUS_NOT_INITIALIZED);
  assert_int_equal(cublasSetMathMode(NULL, CUBLAS_DEFAULT_MATH), CUBLAS_STATUS_NOT_INITIALIZED);
  assert_int_equal(cublasDestroy(NULL), CUBLAS_STATUS_NOT_INITIALIZED);
}

/* ---- strided batched: gaps between members are poisoned ---- */

static void strided_batched_forms_match_reference_per_member(void **state) {
  cublasHandle_t h = *state;
  const int64_t m = 5, n = 3, k = 6, batch = 3;
  for (int form = 0; form < 8; form++) {
    int wide = form & 1;
    cudaDataType t = form < 2   ? CUDA_R_32F
                     : form < 4 ? CUDA_R_64F
                     : form < 6 ? CUDA_R_16F
                                : CUDA_R_16BF;
    operands o = make(t, t, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, batch, 300u + (uint32_t)form);
    cublasStatus_t s;
    double alpha = 1.5, beta = 0.5;
    float af = 1.5f, bf = 0.5f;
    uint16_t ah = mp_float_to_fp16(1.5f), bh = mp_float_to_fp16(0.5f);
    const cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
    if (t == CUDA_R_32F)
      s = wide ? cublasSgemmStridedBatched_64(h, T, N, m, n, k, &af, o.A.data, o.A.ld, o.A.stride,
                                              o.B.data, o.B.ld, o.B.stride, &bf, o.C.data, o.C.ld,
                                              o.C.stride, batch)
               : cublasSgemmStridedBatched(h, T, N, m, n, k, &af, o.A.data, (int)o.A.ld, o.A.stride,
                                           o.B.data, (int)o.B.ld, o.B.stride, &bf, o.C.data,
                                           (int)o.C.ld, o.C.stride, batch);
    else if (t == CUDA_R_64F)
      s = wide ? cublasDgemmStridedBatched_64(h, T, N, m, n, k, &alpha, o.A.data, o.A.ld,
                                              o.A.stride, o.B.data, o.B.ld, o.B.stride, &beta,
                                              o.C.data, o.C.ld, o.C.stride, batch)
               : cublasDgemmStridedBatched(h, T, N, m, n, k, &alpha, o.A.data, (int)o.A.ld,
                                           o.A.stride, o.B.data, (int)o.B.ld, o.B.stride, &beta,
                                           o.C.data, (int)o.C.ld, o.C.stride, batch);
    else if (t == CUDA_R_16F && !wide)
      s = cublasHgemmStridedBatched(h, T, N, m, n, k, &ah, o.A.data, (int)o.A.ld, o.A.stride,
                                    o.B.data, (int)o.B.ld, o.B.stride, &bh, o.C.data, (int)o.C.ld,
                                    o.C.stride, batch);
    else if (t == CUDA_R_16F)
      s = cublasGemmStridedBatchedEx_64(h, T, N, m, n, k, &af, o.A.data, t, o.A.ld, o.A.stride,
                                        o.B.data, t, o.B.ld, o.B.stride, &bf, o.C.data, t, o.C.ld,
                                        o.C.stride, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
      s = cublasGemmStridedBatchedEx(h, T, N, m, n, k, &af, o.A.data, t, (int)o.A.ld, o.A.stride,
                                     o.B.data, t, (int)o.B.ld, o.B.stride, &bf, o.C.data, t,
                                     (int)o.C.ld, o.C.stride, batch, CUBLAS_COMPUTE_32F,
                                     CUBLAS_GEMM_DEFAULT);
    assert_int_equal(s, CUBLAS_STATUS_SUCCESS);
    assert_int_equal(check(&o, 1.5, 0.5), 0);
    release(&o);
  }
}

static void batched_pointer_array_forms_match_reference_per_member(void **state) {
  cublasHandle_t h = *state;
  const int64_t m = 4, n = 6, k = 5, batch = 4;
  for (int form = 0; form < 8; form++) {
    int wide = form & 1;
    cudaDataType t = form < 2   ? CUDA_R_32F
                     : form < 4 ? CUDA_R_64F
                     : form < 6 ? CUDA_R_16F
                                : CUDA_R_16BF;
    operands o = make(t, t, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, batch, 400u + (uint32_t)form);
    void **pa = st_pointers(&o.A), **pb = st_pointers(&o.B), **pc = st_pointers(&o.C);
    double alpha = -1, beta = 2;
    float af = -1, bf = 2;
    uint16_t ah = mp_float_to_fp16(-1), bh = mp_float_to_fp16(2);
    const cublasOperation_t T = CUBLAS_OP_T, N = CUBLAS_OP_N;
    cublasStatus_t s;
    if (t == CUDA_R_32F)
      s = wide ? cublasSgemmBatched_64(h, N, T, m, n, k, &af, (const float *const *)pa, o.A.ld,
                                       (const float *const *)pb, o.B.ld, &bf, (float *const *)pc,
                                       o.C.ld, batch)
               : cublasSgemmBatched(h, N, T, m, n, k, &af, (const float *const *)pa, (int)o.A.ld,
                                    (const float *const *)pb, (int)o.B.ld, &bf, (float *const *)pc,
                                    (int)o.C.ld, batch);
    else if (t == CUDA_R_64F)
      s = wide ? cublasDgemmBatched_64(h, N, T, m, n, k, &alpha, (const double *const *)pa, o.A.ld,
                                       (const double *const *)pb, o.B.ld, &beta,
                                       (double *const *)pc, o.C.ld, batch)
               : cublasDgemmBatched(h, N, T, m, n, k, &alpha, (const double *const *)pa,
                                    (int)o.A.ld, (const double *const *)pb, (int)o.B.ld, &beta,
                                    (double *const *)pc, (int)o.C.ld, batch);
    else if (t == CUDA_R_16F && !wide)
      s = cublasHgemmBatched(h, N, T, m, n, k, &ah, (const uint16_t *const *)pa, (int)o.A.ld,
                             (const uint16_t *const *)pb, (int)o.B.ld, &bh, (uint16_t *const *)pc,
                             (int)o.C.ld, batch);
    else if (t == CUDA_R_16F)
      s = cublasGemmBatchedEx_64(h, N, T, m, n, k, &af, (const void *const *)pa, t, o.A.ld,
                                 (const void *const *)pb, t, o.B.ld, &bf, pc, t, o.C.ld, batch,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
      s = cublasGemmBatchedEx(h, N, T, m, n, k, &af, (const void *const *)pa, t, (int)o.A.ld,
                              (const void *const *)pb, t, (int)o.B.ld, &bf, pc, t, (int)o.C.ld,
                              batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    assert_int_equal(s, CUBLAS_STATUS_SUCCESS);
    assert_int_equal(check(&o, -1, 2), 0);
    free(pa);
    free(pb);
    free(pc);
    release(&o);
  }
}

/* Two groups with different shapes and transposes, members of a group in
 * consecutive entries of the pointer arrays. */
static void grouped_batched_forms_match_reference_per_group(void **state) {
  cublasHandle_t h = *state;
  for (int form = 0; form < 6; form++) {
    int wide = form & 1;
    cudaDataType t = form < 2 ? CUDA_R_32F : form < 4 ? CUDA_R_64F : CUDA_R_16BF;
    cublasOperation_t ta[2] = {CUBLAS_OP_N, CUBLAS_OP_T}, tb[2] = {CUBLAS_OP_T, CUBLAS_OP_N};
    int64_t m[2] = {3, 5}, n[2] = {4, 2}, k[2] = {6, 3}, size[2] = {2, 3};
    operands o[2];
    void *pa[5], *pb[5], *pc[5];
    int idx = 0;
    for (int g = 0; g < 2; g++) {
      o[g] = make(t, t, ta[g], tb[g], m[g], n[g], k[g], size[g], 500u + (uint32_t)(form * 2 + g));
      void **a = st_pointers(&o[g].A), **b = st_pointers(&o[g].B), **c = st_pointers(&o[g].C);
      for (int i = 0; i < size[g]; i++, idx++) {
        pa[idx] = a[i];
        pb[idx] = b[i];
        pc[idx] = c[i];
      }
      free(a);
      free(b);
      free(c);
    }
    int im[2], in[2], ik[2], ilda[2], ildb[2], ildc[2], isize[2];
    int64_t lda[2], ldb[2], ldc[2];
    for (int g = 0; g < 2; g++) {
      im[g] = (int)m[g];
      in[g] = (int)n[g];
      ik[g] = (int)k[g];
      isize[g] = (int)size[g];
      lda[g] = o[g].A.ld;
      ldb[g] = o[g].B.ld;
      ldc[g] = o[g].C.ld;
      ilda[g] = (int)lda[g];
      ildb[g] = (int)ldb[g];
      ildc[g] = (int)ldc[g];
    }
    float af[2] = {1, -0.5f}, bf[2] = {0, 2};
    double ad[2] = {1, -0.5}, bd[2] = {0, 2};
    cublasStatus_t s;
    if (t == CUDA_R_32F)
      s = wide ? cublasSgemmGroupedBatched_64(h, ta, tb, m, n, k, af, (const float *const *)pa, lda,
                                              (const float *const *)pb, ldb, bf, (float *const *)pc,
                                              ldc, 2, size)
               : cublasSgemmGroupedBatched(h, ta, tb, im, in, ik, af, (const float *const *)pa,
                                           ilda, (const float *const *)pb, ildb, bf,
                                           (float *const *)pc, ildc, 2, isize);
    else if (t == CUDA_R_64F)
      s = wide ? cublasDgemmGroupedBatched_64(h, ta, tb, m, n, k, ad, (const double *const *)pa,
                                              lda, (const double *const *)pb, ldb, bd,
                                              (double *const *)pc, ldc, 2, size)
               : cublasDgemmGroupedBatched(h, ta, tb, im, in, ik, ad, (const double *const *)pa,
                                           ilda, (const double *const *)pb, ildb, bd,
                                           (double *const *)pc, ildc, 2, isize);
    else
      s = wide ? cublasGemmGroupedBatchedEx_64(h, ta, tb, m, n, k, af, (const void *const *)pa, t,
                                               lda, (const void *const *)pb, t, ldb, bf, pc, t, ldc,
                                               2, size, CUBLAS_COMPUTE_32F)
               : cublasGemmGroupedBatchedEx(h, ta, tb, im, in, ik, af, (const void *const *)pa, t,
                                            ilda, (const void *const *)pb, t, ildb, bf, pc, t, ildc,
                                            2, isize, CUBLAS_COMPUTE_32F);
    assert_int_equal(s, CUBLAS_STATUS_SUCCESS);
    for (int g = 0; g < 2; g++) {
      assert_int_equal(check(&o[g], ad[g], bd[g]), 0);
      release(&o[g]);
    }
  }
}

static void wide_twins_of_the_single_gemms_match_reference(void **state) {
  cublasHandle_t h = *state;
  const int64_t m = 3, n = 5, k = 4;
  const cublasOperation_t T = CUBLAS_OP_T, C = CUBLAS_OP_C;
  for (int form = 0; form < 5; form++) {
    cudaDataType t = form == 0   ? CUDA_R_32F
                     : form == 1 ? CUDA_R_64F
                     : form == 2 ? CUDA_R_16F
                     : form == 3 ? CUDA_R_16BF
                                 : CUDA_R_16F;
    cudaDataType ct = form == 4 ? CUDA_R_32F : t;
    operands o = make(t, ct, T, C, m, n, k, 1, 600u + (uint32_t)form);
    float af = 2, bf = -1;
    double ad = 2, bd = -1;
    uint16_t ah = mp_float_to_fp16(2), bh = mp_float_to_fp16(-1);
    cublasStatus_t s;
    switch (form) {
    case 0:
      s = cublasSgemm_v2_64(h, T, C, m, n, k, &af, o.A.data, o.A.ld, o.B.data, o.B.ld, &bf,
                            o.C.data, o.C.ld);
      break;
    case 1:
      s = cublasDgemm_v2_64(h, T, C, m, n, k, &ad, o.A.data, o.A.ld, o.B.data, o.B.ld, &bd,
                            o.C.data, o.C.ld);
      break;
    case 2:
      s = cublasHgemm_64(h, T, C, m, n, k, &ah, o.A.data, o.A.ld, o.B.data, o.B.ld, &bh, o.C.data,
                         o.C.ld);
      break;
    case 3:
      s = cublasGemmEx_64(h, T, C, m, n, k, &af, o.A.data, t, o.A.ld, o.B.data, t, o.B.ld, &bf,
                          o.C.data, ct, o.C.ld, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      break;
    default:
      s = cublasSgemmEx_64(h, T, C, m, n, k, &af, o.A.data, t, o.A.ld, o.B.data, t, o.B.ld, &bf,
                           o.C.data, ct, o.C.ld);
      break;
    }
    assert_int_equal(s, CUBLAS_STATUS_SUCCESS);
    assert_int_equal(check(&o, 2, -1), 0);
    release(&o);
  }
}

static void status_names_and_strings_are_the_cublas_spellings(void **state) {
  (void)state;
  assert_string_equal(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED),
                      "CUBLAS_STATUS_NOT_SUPPORTED");
  assert_string_equal(cublasGetStatusString(CUBLAS_STATUS_SUCCESS), "success");
}

/* ---- cublasSetMatrix / GetMatrix / SetVector / GetVector ---- */

static void set_and_get_matrix_copy_rows_by_cols_between_leading_dimensions(void **state) {
  (void)state;
  float host[4 * 3], dev[5 * 3], back[4 * 3];
  for (int i = 0; i < 12; i++)
    host[i] = (float)i;
  for (int i = 0; i < 15; i++)
    dev[i] = -1;
  /* 3 x 3 submatrix: host ld 4, device ld 5; padding rows stay untouched. */
  assert_int_equal(cublasSetMatrix(3, 3, sizeof(float), host, 4, dev, 5), CUBLAS_STATUS_SUCCESS);
  for (int j = 0; j < 3; j++) {
    for (int i = 0; i < 3; i++)
      assert_true(dev[j * 5 + i] == host[j * 4 + i]);
    assert_true(dev[j * 5 + 3] == -1 && dev[j * 5 + 4] == -1);
  }
  memset(back, 0, sizeof(back));
  assert_int_equal(cublasGetMatrix(3, 3, sizeof(float), dev, 5, back, 4), CUBLAS_STATUS_SUCCESS);
  for (int j = 0; j < 3; j++)
    for (int i = 0; i < 3; i++)
      assert_true(back[j * 4 + i] == host[j * 4 + i]);
  memset(back, 0, sizeof(back));
  assert_int_equal(cublasGetMatrix_64(3, 3, sizeof(float), dev, 5, back, 4), CUBLAS_STATUS_SUCCESS);
  assert_true(back[2 * 4 + 2] == host[2 * 4 + 2]);
  memset(dev, 0, sizeof(dev));
  assert_int_equal(cublasSetMatrix_64(3, 3, sizeof(float), host, 4, dev, 5), CUBLAS_STATUS_SUCCESS);
  assert_true(dev[2 * 5 + 2] == host[2 * 4 + 2]);
}

static void set_and_get_vector_follow_incx_and_incy(void **state) {
  (void)state;
  double x[6] = {1, 2, 3, 4, 5, 6}, y[9], back[6];
  for (int i = 0; i < 9; i++)
    y[i] = -1;
  /* x[0], x[2], x[4] -> y[0], y[3], y[6] */
  assert_int_equal(cublasSetVector(3, sizeof(double), x, 2, y, 3), CUBLAS_STATUS_SUCCESS);
  assert_true(y[0] == 1 && y[3] == 3 && y[6] == 5);
  assert_true(y[1] == -1 && y[2] == -1 && y[4] == -1 && y[8] == -1);
  memset(back, 0, sizeof(back));
  assert_int_equal(cublasGetVector(3, sizeof(double), y, 3, back, 1), CUBLAS_STATUS_SUCCESS);
  assert_true(back[0] == 1 && back[1] == 3 && back[2] == 5 && back[3] == 0);
  memset(back, 0, sizeof(back));
  assert_int_equal(cublasGetVector_64(3, sizeof(double), y, 3, back, 2), CUBLAS_STATUS_SUCCESS);
  assert_true(back[0] == 1 && back[2] == 3 && back[4] == 5 && back[1] == 0);
  assert_int_equal(cublasSetVector_64(6, sizeof(double), x, 1, back, 1), CUBLAS_STATUS_SUCCESS);
  assert_memory_equal(back, x, sizeof(x));
}

static void async_copies_run_on_the_given_stream(void **state) {
  (void)state;
  int32_t a[4] = {1, 2, 3, 4}, b[4] = {0};
  cudaStream_t s = NULL;
  assert_int_equal(cudaStreamCreate(&s), cudaSuccess);
  assert_int_equal(cublasSetVectorAsync(4, 4, a, 1, b, 1, s), CUBLAS_STATUS_SUCCESS);
  assert_memory_equal(a, b, sizeof(a));
  memset(b, 0, sizeof(b));
  assert_int_equal(cublasGetVectorAsync(4, 4, a, 1, b, 1, NULL), CUBLAS_STATUS_SUCCESS);
  assert_memory_equal(a, b, sizeof(a));
  memset(b, 0, sizeof(b));
  assert_int_equal(cublasSetMatrixAsync(2, 2, 4, a, 2, b, 2, s), CUBLAS_STATUS_SUCCESS);
  assert_memory_equal(a, b, sizeof(a));
  memset(b, 0, sizeof(b));
  assert_int_equal(cublasGetMatrixAsync(2, 2, 4, a, 2, b, 2, s), CUBLAS_STATUS_SUCCESS);
  assert_memory_equal(a, b, sizeof(a));
  memset(b, 0, sizeof(b));
  assert_int_equal(cublasSetVectorAsync_64(4, 4, a, 1, b, 1, s), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasGetVectorAsync_64(4, 4, a, 1, b, 1, s), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasSetMatrixAsync_64(2, 2, 4, a, 2, b, 2, s), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasGetMatrixAsync_64(2, 2, 4, a, 2, b, 2, s), CUBLAS_STATUS_SUCCESS);
  assert_memory_equal(a, b, sizeof(a));
  assert_int_equal(cudaStreamDestroy(s), cudaSuccess);
}

static void copies_check_sizes_increments_and_leading_dimensions_like_cublas(void **state) {
  (void)state;
  float a[16] = {0}, b[16] = {0};
  /* vectors: incx, incy, elemSize <= 0; n < 0 fails in the copy (as on an H200, cuBLAS 13.0) */
  assert_int_equal(cublasSetVector(4, 4, a, 0, b, 1), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSetVector(4, 4, a, 1, b, -1), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasGetVector(4, 0, a, 1, b, 1), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasGetVector(-1, 4, a, 1, b, 1), CUBLAS_STATUS_MAPPING_ERROR);
  assert_int_equal(cublasSetVectorAsync(4, 4, a, 1, b, 0, NULL), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSetVector(0, 4, a, 1, b, 1), CUBLAS_STATUS_SUCCESS);
  /* matrices: rows, cols < 0, elemSize, lda, ldb <= 0 */
  assert_int_equal(cublasSetMatrix(-1, 2, 4, a, 4, b, 4), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSetMatrix(2, -1, 4, a, 4, b, 4), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasGetMatrix(2, 2, 0, a, 4, b, 4), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasGetMatrix(2, 2, 4, a, 0, b, 4), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasGetMatrix_64(2, 2, 4, a, 4, b, 0), CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSetMatrixAsync(2, 2, 4, a, 4, b, -3, NULL), CUBLAS_STATUS_INVALID_VALUE);
  /* lda < rows: an invalid pitch for the copy the library issues */
  assert_int_equal(cublasSetMatrix(4, 2, 4, a, 3, b, 4), CUBLAS_STATUS_MAPPING_ERROR);
  assert_int_equal(cublasSetMatrix(0, 2, 4, a, 1, b, 1), CUBLAS_STATUS_SUCCESS);
}

/* What PyTorch calls beyond GEMMs and simcuda does not emulate answers with
 * cuBLAS's own status and leaves the output alone. */
static void routines_simcuda_does_not_emulate_are_not_supported(void **state) {
  cublasHandle_t h = *state;
  float x[2] = {1, 1}, r = -1;
  cuComplex cA[4] = {{1, 0}, {2, 0}, {3, 0}, {4, 0}}, cx[2] = {{1, 0}, {1, 0}},
            cy[2] = {{-1, 0}, {-1, 0}}, calpha = {1, 0}, cbeta = {0, 0};
  assert_int_equal(cublasCgemv(h, CUBLAS_OP_N, 2, 2, &calpha, cA, 2, cx, 1, &cbeta, cy, 1),
                   CUBLAS_STATUS_NOT_SUPPORTED);
  assert_true(cy[0].x == -1 && cy[1].x == -1);
  assert_int_equal(cublasSdot(h, 2, x, 1, x, 1, &r), CUBLAS_STATUS_NOT_SUPPORTED);
  assert_true(r == -1);
}

/* cublasSgemv / cublasDgemv: y = alpha op(A) x + beta y against a direct
 * sum, N and T, a padded lda, negative and strided increments; the
 * documented argument checks (m, n < 0, incx or incy 0, a bad op:
 * INVALID_VALUE; no handle: NOT_INITIALIZED); m = 0 leaves y alone. */
static void gemv_matches_reference_and_checks_arguments(void **state) {
  cublasHandle_t h = *state;
  enum { M = 3, N = 4, LDA = 5 };
  float A[LDA * N];
  double Ad[LDA * N];
  for (int i = 0; i < LDA * N; i++)
    Ad[i] = A[i] = (float)((i * 7) % 11) - 5;
  float x[2 * N], y[2 * N];
  double xd[2 * N], yd[2 * N];
  for (int t = 0; t < 2; t++) {
    cublasOperation_t op = t ? CUBLAS_OP_T : CUBLAS_OP_N;
    int rows = t ? N : M, cols = t ? M : N;
    for (int i = 0; i < 2 * N; i++) {
      xd[i] = x[i] = (float)(i + 1);
      yd[i] = y[i] = (float)(10 * i);
    }
    float alpha = 2, beta = 0.5f;
    double alphad = 2, betad = 0.5;
    /* x walked backwards (incx -2), y forwards with a gap (incy 2) */
    assert_int_equal(cublasSgemv(h, op, M, N, &alpha, A, LDA, x, -2, &beta, y, 2),
                     CUBLAS_STATUS_SUCCESS);
    assert_int_equal(cublasDgemv(h, op, M, N, &alphad, Ad, LDA, xd, -2, &betad, yd, 2),
                     CUBLAS_STATUS_SUCCESS);
    for (int i = 0; i < rows; i++) {
      double sum = 0;
      for (int j = 0; j < cols; j++) {
        double a = t ? A[j + i * LDA] : A[i + j * LDA];
        sum += a * (double)(2 * (cols - 1 - j) + 1); /* x[(cols-1-j)*2] */
      }
      double want = 2 * sum + 0.5 * (10 * 2 * i);
      assert_true(y[2 * i] == (float)want);
      assert_true(yd[2 * i] == want);
      assert_true(y[2 * i + 1] == (float)(10 * (2 * i + 1))); /* the gap is untouched */
    }
  }
  float one = 1, zero = 0, y0[2] = {-1, -1};
  assert_int_equal(cublasSgemv(h, CUBLAS_OP_N, 0, 2, &one, A, 1, x, 1, &zero, y0, 1),
                   CUBLAS_STATUS_SUCCESS);
  assert_true(y0[0] == -1 && y0[1] == -1);
  assert_int_equal(cublasSgemv(h, CUBLAS_OP_N, -1, 2, &one, A, 1, x, 1, &zero, y0, 1),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSgemv(h, CUBLAS_OP_N, 2, 2, &one, A, 2, x, 0, &zero, y0, 1),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSgemv(h, CUBLAS_OP_N, 2, 2, &one, A, 2, x, 1, &zero, y0, 0),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSgemv(h, (cublasOperation_t)7, 2, 2, &one, A, 2, x, 1, &zero, y0, 1),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(cublasSgemv(NULL, CUBLAS_OP_N, 2, 2, &one, A, 2, x, 1, &zero, y0, 1),
                   CUBLAS_STATUS_NOT_INITIALIZED);
  assert_true(y0[0] == -1 && y0[1] == -1);
}

/* cublasSetStream keeps the stream as an opaque value: a handle whose
 * memory cannot even be read is stored and handed back. */
static void set_stream_stores_the_handle_without_reading_it(void **state) {
  cublasHandle_t h = *state;
  long page = 4096;
  void *guard = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(guard != MAP_FAILED);
  cudaStream_t got = NULL;
  assert_int_equal(cublasSetStream(h, (cudaStream_t)guard), CUBLAS_STATUS_SUCCESS);
  assert_int_equal(cublasGetStream(h, &got), CUBLAS_STATUS_SUCCESS);
  assert_ptr_equal(got, guard);
  assert_int_equal(cublasSetStream(h, NULL), CUBLAS_STATUS_SUCCESS);
  munmap(guard, (size_t)page);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(sgemm_matches_reference_for_every_transpose_pair, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(dgemm_matches_reference_for_every_transpose_pair, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(hgemm_rounds_the_fp32_accumulator_once_to_fp16, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(beta_zero_does_not_read_c, setup, teardown),
      cmocka_unit_test_setup_teardown(gemmex_matches_reference_for_each_type_table_row, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(gemmex_refuses_fp8_and_combinations_outside_the_table, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(sgemmex_follows_its_type_table, setup, teardown),
      cmocka_unit_test_setup_teardown(leading_dimensions_and_sizes_are_checked_like_cublas, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(k_zero_scales_c_by_beta, setup, teardown),
      cmocka_unit_test_setup_teardown(tf32_math_mode_rounds_fp32_inputs_to_tf32, setup, teardown),
      cmocka_unit_test_setup_teardown(math_mode_and_stream_round_trip, setup, teardown),
      cmocka_unit_test_setup_teardown(device_pointer_mode_is_refused, setup, teardown),
      cmocka_unit_test(calls_without_a_handle_return_not_initialized),
      cmocka_unit_test_setup_teardown(strided_batched_forms_match_reference_per_member, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(batched_pointer_array_forms_match_reference_per_member, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(grouped_batched_forms_match_reference_per_group, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(wide_twins_of_the_single_gemms_match_reference, setup,
                                      teardown),
      cmocka_unit_test(status_names_and_strings_are_the_cublas_spellings),
      cmocka_unit_test(set_and_get_matrix_copy_rows_by_cols_between_leading_dimensions),
      cmocka_unit_test(set_and_get_vector_follow_incx_and_incy),
      cmocka_unit_test(async_copies_run_on_the_given_stream),
      cmocka_unit_test(copies_check_sizes_increments_and_leading_dimensions_like_cublas),
      cmocka_unit_test_setup_teardown(set_stream_stores_the_handle_without_reading_it, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(routines_simcuda_does_not_emulate_are_not_supported, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(gemv_matches_reference_and_checks_arguments, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
