/* Like the real libcublas, simcuda's cuBLAS GEMMs reach cublasLtMatmul
 * through the dynamic symbol: this executable exports its own
 * cublasLtMatmul (as an LD_PRELOADed profiler would), counts the calls and
 * forwards to the next definition. One Lt call per GEMM call (per group for
 * the grouped forms) is what a profiler's double-count guard must expect. */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cublasLt.h>
#include <cublas_v2.h>

typedef cublasStatus_t (*lt_matmul_fn)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                       const void *, cublasLtMatrixLayout_t, const void *,
                                       cublasLtMatrixLayout_t, const void *, const void *,
                                       cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                       const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);

static int lt_calls;

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t ad, const void *B,
                              cublasLtMatrixLayout_t bd, const void *beta, const void *C,
                              cublasLtMatrixLayout_t cd, void *D, cublasLtMatrixLayout_t dd,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t wss,
                              cudaStream_t stream) {
  static lt_matmul_fn next;
  if (next == NULL) next = (lt_matmul_fn)dlsym(RTLD_NEXT, "cublasLtMatmul");
  lt_calls++;
  return next(h, desc, alpha, A, ad, B, bd, beta, C, cd, D, dd, algo, ws, wss, stream);
}

static void every_gemm_entry_point_calls_the_interposed_cublasLtMatmul_once(void **state) {
  (void)state;
  cublasHandle_t h;
  assert_int_equal(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  float A[64] = {0}, B[64] = {0}, C[64] = {0}, one = 1, zero = 0;
  const float *pa[2] = {A, A + 16}, *pb[2] = {B, B + 16};
  float *pc[2] = {C, C + 16};

  lt_calls = 0;
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, A, 4, B, 4, &zero, C, 4),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(lt_calls, 1);
  C[0] = 42;
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, A, 4, B, 4, &zero, C, 4),
                   CUBLAS_STATUS_SUCCESS);
  assert_true(C[0] == 0); /* the forwarded call did the work */

  lt_calls = 0;
  assert_int_equal(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 4, 4, &one, A, CUDA_R_32F, 4, B,
                                CUDA_R_32F, 4, &zero, C, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(lt_calls, 1);

  lt_calls = 0;
  assert_int_equal(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, A, 4, 16,
                                             B, 4, 16, &zero, C, 4, 16, 2),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(lt_calls, 1);

  lt_calls = 0;
  assert_int_equal(
      cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, pa, 4, pb, 4, &zero, pc, 4, 2),
      CUBLAS_STATUS_SUCCESS);
  assert_int_equal(lt_calls, 1);

  lt_calls = 0;
  cublasOperation_t ops[2] = {CUBLAS_OP_N, CUBLAS_OP_N};
  int dims[2] = {4, 4}, sizes[2] = {1, 1};
  float alphas[2] = {1, 1}, betas[2] = {0, 0};
  assert_int_equal(cublasSgemmGroupedBatched(h, ops, ops, dims, dims, dims, alphas, pa, dims, pb,
                                             dims, betas, pc, dims, 2, sizes),
                   CUBLAS_STATUS_SUCCESS);
  assert_int_equal(lt_calls, 2);

  /* Refused before reaching cuBLASLt: nothing to count. */
  lt_calls = 0;
  assert_int_equal(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, A, 3, B, 4, &zero, C, 4),
                   CUBLAS_STATUS_INVALID_VALUE);
  assert_int_equal(lt_calls, 0);
  cublasDestroy(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_gemm_entry_point_calls_the_interposed_cublasLtMatmul_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
