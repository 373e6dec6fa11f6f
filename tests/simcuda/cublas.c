/* simcuda's libcublas.so.13: the cuBLAS handle API and every GEMM entry
 * point mpprof hooks (S/D/H gemm, SgemmEx, GemmEx, their batched, strided
 * batched and grouped batched forms, and the _64 twins). Each checks its
 * arguments the way cuBLAS does (INVALID_VALUE for negative sizes and short
 * leading dimensions, NOT_SUPPORTED for type combinations outside the
 * cublasGemmEx / cublasSgemmEx tables of the cuBLAS 13.0 documentation),
 * then describes the product to cuBLASLt and calls cublasLtMatmul through
 * the PLT, as the real libcublas does: an interposed cublasLtMatmul sees the
 * inner call. Only host pointer mode is supported. The legacy handle-less
 * cublasSgemm / cublasDgemm are deliberately not exported. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_api.h>

#include "cublas_status.h"
#include "simcuda_internal.h"

#define SIM_API __attribute__((visibility("default")))

enum { CUBLAS_HANDLE_MAGIC = 0x43424c53 };

struct cublasContext {
  uint32_t magic;
  cublasLtHandle_t lt;
  cudaStream_t stream;
  cublasMath_t math;
  cublasPointerMode_t pointer_mode;
  int sm_count;
};

static int handle_ok(cublasHandle_t h) {
  return h != NULL && h->magic == CUBLAS_HANDLE_MAGIC;
}

/* ---- handle ---- */

SIM_API cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
  if (handle == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  struct cublasContext *h = calloc(1, sizeof(*h));
  if (h == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  if (cublasLtCreate(&h->lt) != CUBLAS_STATUS_SUCCESS) {
    free(h);
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  h->magic = CUBLAS_HANDLE_MAGIC;
  h->math = CUBLAS_DEFAULT_MATH;
  h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  cublasLtDestroy(handle->lt);
  handle->magic = 0;
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (version == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value) {
  if (value == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
  case MAJOR_VERSION:
    *value = CUBLAS_VER_MAJOR;
    break;
  case MINOR_VERSION:
    *value = CUBLAS_VER_MINOR;
    break;
  case PATCH_LEVEL:
    *value = CUBLAS_VER_PATCH;
    break;
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API const char *cublasGetStatusName(cublasStatus_t status) {
  return simcuda_cublas_status_name(status);
}

SIM_API const char *cublasGetStatusString(cublasStatus_t status) {
  return simcuda_cublas_status_string(status);
}

SIM_API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t size) {
  (void)workspace;
  (void)size; /* the host loop needs none */
  return handle_ok(handle) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

/* The stream is opaque to cuBLAS: it is stored, never looked into (a bad
 * handle shows up when a GEMM is launched on it). */
SIM_API cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *stream) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  unsigned base = (unsigned)mode & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH &&
      base != CUBLAS_PEDANTIC_MATH && base != CUBLAS_TF32_TENSOR_OP_MATH &&
      base != CUBLAS_FP32_EMULATED_BF16X9_MATH && base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

/* simcuda supports host pointer mode only: device-side alpha/beta would be
 * read the same way here, but a program relying on it would not be testing
 * what it thinks, so it is refused. */
SIM_API cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (mode != CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int count) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (count < 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->sm_count = count;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int *count) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (count == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  *count = handle->sm_count;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- host <-> "device" copies (cublasSetMatrix & co.) ----
 * All memory is host memory in simcuda, so each is a strided copy. Argument
 * rules of the cuBLAS documentation: vectors INVALID_VALUE when incx, incy
 * or elemSize <= 0; matrices INVALID_VALUE when rows or cols < 0 or
 * elemSize, lda, ldb <= 0. A vector length n < 0 passes those checks and
 * fails in the copy the library issues, as does a leading dimension shorter
 * than rows (an invalid pitch for its cudaMemcpy2D): MAPPING_ERROR, the
 * status it maps copy failures to (both seen on an H200 with cuBLAS 13.0,
 * tests/simcuda/fidelity). The Async forms check the stream the copy is
 * issued on the same way. */

static cublasStatus_t copy_vector(int64_t n, int64_t elem, const void *x, int64_t incx, void *y,
                                  int64_t incy) {
  if (elem <= 0 || incx <= 0 || incy <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (n == 0) return CUBLAS_STATUS_SUCCESS;
  if (n < 0 || x == NULL || y == NULL) return CUBLAS_STATUS_MAPPING_ERROR;
  if (incx == 1 && incy == 1) {
    memmove(y, x, (size_t)(n * elem));
    return CUBLAS_STATUS_SUCCESS;
  }
  for (int64_t i = 0; i < n; i++)
    memmove((char *)y + i * incy * elem, (const char *)x + i * incx * elem, (size_t)elem);
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t copy_matrix(int64_t rows, int64_t cols, int64_t elem, const void *A,
                                  int64_t lda, void *B, int64_t ldb) {
  if (rows < 0 || cols < 0 || elem <= 0 || lda <= 0 || ldb <= 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (rows == 0 || cols == 0) return CUBLAS_STATUS_SUCCESS;
  if (lda < rows || ldb < rows || A == NULL || B == NULL) return CUBLAS_STATUS_MAPPING_ERROR;
  for (int64_t j = 0; j < cols; j++)
    memmove((char *)B + j * ldb * elem, (const char *)A + j * lda * elem, (size_t)(rows * elem));
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t copy_stream_ok(cudaStream_t stream) {
  return simcuda_stream_valid((CUstream)stream) ? CUBLAS_STATUS_SUCCESS
                                                : CUBLAS_STATUS_MAPPING_ERROR;
}

/* Set and Get differ only in which side is "device" memory: one body each
 * for the vector and the matrix form, int and _64 signatures, sync and Async. */
#define DEFINE_VECTOR_COPY(NAME, ASYNC, IDX)                                                       \
  SIM_API cublasStatus_t NAME(IDX n, IDX elemSize, const void *x, IDX incx, void *y, IDX incy) {   \
    return copy_vector(n, elemSize, x, incx, y, incy);                                             \
  }                                                                                                \
  SIM_API cublasStatus_t ASYNC(IDX n, IDX elemSize, const void *x, IDX incx, void *y, IDX incy,    \
                               cudaStream_t stream) {                                              \
    cublasStatus_t st = copy_vector(n, elemSize, x, incx, y, incy);                                \
    return st == CUBLAS_STATUS_SUCCESS && n > 0 ? copy_stream_ok(stream) : st;                     \
  }
#define DEFINE_MATRIX_COPY(NAME, ASYNC, IDX)                                                       \
  SIM_API cublasStatus_t NAME(IDX rows, IDX cols, IDX elemSize, const void *A, IDX lda, void *B,   \
                              IDX ldb) {                                                           \
    return copy_matrix(rows, cols, elemSize, A, lda, B, ldb);                                      \
  }                                                                                                \
  SIM_API cublasStatus_t ASYNC(IDX rows, IDX cols, IDX elemSize, const void *A, IDX lda, void *B,  \
                               IDX ldb, cudaStream_t stream) {                                     \
    cublasStatus_t st = copy_matrix(rows, cols, elemSize, A, lda, B, ldb);                         \
    return st == CUBLAS_STATUS_SUCCESS && rows > 0 && cols > 0 ? copy_stream_ok(stream) : st;      \
  }

DEFINE_VECTOR_COPY(cublasSetVector, cublasSetVectorAsync, int)
DEFINE_VECTOR_COPY(cublasGetVector, cublasGetVectorAsync, int)
DEFINE_VECTOR_COPY(cublasSetVector_64, cublasSetVectorAsync_64, int64_t)
DEFINE_VECTOR_COPY(cublasGetVector_64, cublasGetVectorAsync_64, int64_t)
DEFINE_MATRIX_COPY(cublasSetMatrix, cublasSetMatrixAsync, int)
DEFINE_MATRIX_COPY(cublasGetMatrix, cublasGetMatrixAsync, int)
DEFINE_MATRIX_COPY(cublasSetMatrix_64, cublasSetMatrixAsync_64, int64_t)
DEFINE_MATRIX_COPY(cublasGetMatrix_64, cublasGetMatrixAsync_64, int64_t)

/* ---- the one GEMM path ---- */

typedef struct gemm_call {
  cublasHandle_t h;
  cublasOperation_t ta, tb;
  int64_t m, n, k;
  const void *alpha, *beta;
  const void *A, *B;
  void *C;
  int at, bt, ct;
  int64_t lda, ldb, ldc;
  long long sa, sb, sc; /* element strides between batch members */
  int64_t batch;
  int pointer_array; /* A, B, C are arrays of batch pointers */
  int compute;       /* cublasComputeType_t as cuBLASLt will see it */
  int scale_type;
} gemm_call;

static int64_t max1(int64_t v) {
  return v > 1 ? v : 1;
}

static int op_ok(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

/* cuBLAS argument rules: sizes >= 0, lda >= max(1, rows of A as stored), ... */
static cublasStatus_t check_args(const gemm_call *g) {
  if (!handle_ok(g->h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!op_ok(g->ta) || !op_ok(g->tb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (g->m < 0 || g->n < 0 || g->k < 0 || g->batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (g->lda < max1(g->ta == CUBLAS_OP_N ? g->m : g->k)) return CUBLAS_STATUS_INVALID_VALUE;
  if (g->ldb < max1(g->tb == CUBLAS_OP_N ? g->k : g->n)) return CUBLAS_STATUS_INVALID_VALUE;
  if (g->ldc < max1(g->m)) return CUBLAS_STATUS_INVALID_VALUE;
  if (g->batch > INT32_MAX) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

/* Compute type for fp32 data under the handle's math mode (cuBLAS docs,
 * cublasSetMathMode: TF32_TENSOR_OP_MATH lets single-precision routines and
 * COMPUTE_32F use TF32; the deprecated TENSOR_OP_MATH means FAST_16F). */
static int fp32_compute(cublasHandle_t h, int requested) {
  if (requested != CUBLAS_COMPUTE_32F) return requested;
  switch ((unsigned)h->math & 0xfu) {
  case CUBLAS_TF32_TENSOR_OP_MATH:
    return CUBLAS_COMPUTE_32F_FAST_TF32;
  case CUBLAS_TENSOR_OP_MATH:
    return CUBLAS_COMPUTE_32F_FAST_16F;
  case CUBLAS_PEDANTIC_MATH:
    return CUBLAS_COMPUTE_32F_PEDANTIC;
  default:
    return CUBLAS_COMPUTE_32F;
  }
}

static cublasStatus_t run_gemm(const gemm_call *g) {
  cublasStatus_t st = check_args(g);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (g->h->pointer_mode != CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (g->m == 0 || g->n == 0 || g->batch == 0) return CUBLAS_STATUS_SUCCESS;
  if (g->alpha == NULL || g->beta == NULL) return CUBLAS_STATUS_INVALID_VALUE;

  cublasLtMatmulDescOpaque_t desc_mem;
  cublasLtMatrixLayoutOpaque_t la_mem, lb_mem, lc_mem;
  cublasLtMatmulDesc_t desc = &desc_mem;
  cublasLtMatrixLayout_t la = &la_mem, lb = &lb_mem, lc = &lc_mem;
  int32_t ta = g->ta, tb = g->tb;
  st = cublasLtMatmulDescInit(desc, (cublasComputeType_t)g->compute, (cudaDataType_t)g->scale_type);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta));
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb));
  uint64_t a_rows = (uint64_t)(g->ta == CUBLAS_OP_N ? g->m : g->k);
  uint64_t a_cols = (uint64_t)(g->ta == CUBLAS_OP_N ? g->k : g->m);
  uint64_t b_rows = (uint64_t)(g->tb == CUBLAS_OP_N ? g->k : g->n);
  uint64_t b_cols = (uint64_t)(g->tb == CUBLAS_OP_N ? g->n : g->k);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatrixLayoutInit(la, (cudaDataType)g->at, a_rows, a_cols, g->lda);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatrixLayoutInit(lb, (cudaDataType)g->bt, b_rows, b_cols, g->ldb);
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatrixLayoutInit(lc, (cudaDataType)g->ct, (uint64_t)g->m, (uint64_t)g->n, g->ldc);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (g->batch > 1 || g->pointer_array) {
    int32_t count = (int32_t)g->batch;
    uint32_t mode =
        g->pointer_array ? CUBLASLT_BATCH_MODE_POINTER_ARRAY : CUBLASLT_BATCH_MODE_STRIDED;
    cublasLtMatrixLayout_t ls[3] = {la, lb, lc};
    int64_t strides[3] = {g->sa, g->sb, g->sc};
    for (int i = 0; i < 3 && st == CUBLAS_STATUS_SUCCESS; i++) {
      st = cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                            sizeof(count));
      if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode,
                                              sizeof(mode));
      if (st == CUBLAS_STATUS_SUCCESS && !g->pointer_array)
        st = cublasLtMatrixLayoutSetAttribute(ls[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                              &strides[i], sizeof(strides[i]));
    }
    if (st != CUBLAS_STATUS_SUCCESS) return st;
  }
  /* The real libcublas reaches cublasLtMatmul through its PLT: so does this. */
  return cublasLtMatmul(g->h->lt, desc, g->alpha, g->A, la, g->B, lb, g->beta, g->C, lc, g->C, lc,
                        NULL, NULL, 0, g->h->stream);
}

/* ---- type rules of the Ex entry points ---- */

static int is_fp8(int t) {
  return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2 || t == CUDA_R_8F_UE8M0 || t == CUDA_R_4F_E2M1;
}

static int known_compute(int c) {
  switch (c) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
  case CUBLAS_COMPUTE_32F:
  case CUBLAS_COMPUTE_32F_PEDANTIC:
  case CUBLAS_COMPUTE_32F_FAST_16F:
  case CUBLAS_COMPUTE_32F_FAST_16BF:
  case CUBLAS_COMPUTE_32F_FAST_TF32:
  case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
  case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
  case CUBLAS_COMPUTE_32I:
  case CUBLAS_COMPUTE_32I_PEDANTIC:
    return 1;
  default:
    return 0;
  }
}

/* cublasGemmEx: alpha/beta have the compute type's scale type. FP8 is a
 * cuBLASLt-only feature and the emulated compute types are not simulated:
 * NOT_SUPPORTED, as for any combination outside the table. */
static cublasStatus_t ex_types(gemm_call *g, int compute) {
  if (!known_compute(compute)) return CUBLAS_STATUS_INVALID_VALUE;
  if (is_fp8(g->at) || is_fp8(g->bt) || is_fp8(g->ct)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (compute == CUBLAS_COMPUTE_32F_EMULATED_16BFX9 ||
      compute == CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  switch (compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    g->scale_type = CUDA_R_16F;
    break;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    g->scale_type = CUDA_R_64F;
    break;
  case CUBLAS_COMPUTE_32I:
  case CUBLAS_COMPUTE_32I_PEDANTIC:
    g->scale_type = CUDA_R_32I;
    break;
  default:
    g->scale_type = CUDA_R_32F;
    break;
  }
  g->compute = g->at == CUDA_R_32F ? fp32_compute(g->h, compute) : compute;
  return CUBLAS_STATUS_SUCCESS;
}

/* cublasSgemmEx table: fp32 compute and scale; A/B in {bf16, fp16, int8,
 * fp32}; C bf16/fp16 only with the same A type, else fp32. */
static cublasStatus_t sgemmex_types(gemm_call *g) {
  int a = g->at, c = g->ct;
  if (a != g->bt) return CUBLAS_STATUS_NOT_SUPPORTED;
  int ok = (a == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)) ||
           (a == CUDA_R_16F && (c == CUDA_R_16F || c == CUDA_R_32F)) ||
           (a == CUDA_R_8I && c == CUDA_R_32F) || (a == CUDA_R_32F && c == CUDA_R_32F);
  if (!ok) return CUBLAS_STATUS_NOT_SUPPORTED;
  g->scale_type = CUDA_R_32F;
  g->compute = a == CUDA_R_32F ? fp32_compute(g->h, CUBLAS_COMPUTE_32F) : CUBLAS_COMPUTE_32F;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- entry points ---- */

/* Typed GEMMs: S = fp32 (math-mode dependent TF32), D = fp64, H = fp16 with
 * fp16 compute. Arguments common to all forms are spelled once here. */
#define GEMM_HEAD cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb
#define GEMM_INIT(M, N, K)                                                                         \
  .h = handle, .ta = transa, .tb = transb, .m = (M), .n = (N), .k = (K), .batch = 1

static void set_typed(gemm_call *g, char t) {
  int dt = t == 'S' ? CUDA_R_32F : t == 'D' ? CUDA_R_64F : CUDA_R_16F;
  g->at = g->bt = g->ct = dt;
  g->scale_type = dt;
  g->compute = t == 'S'
                   ? (handle_ok(g->h) ? fp32_compute(g->h, CUBLAS_COMPUTE_32F) : CUBLAS_COMPUTE_32F)
               : t == 'D' ? CUBLAS_COMPUTE_64F
                          : CUBLAS_COMPUTE_16F;
}

static cublasStatus_t typed_gemm(char t, gemm_call g) {
  set_typed(&g, t);
  return run_gemm(&g);
}

#define DEFINE_TYPED(T, NAME, ELEM)                                                                \
  SIM_API cublasStatus_t NAME##_64(GEMM_HEAD, int64_t m, int64_t n, int64_t k, const ELEM *alpha,  \
                                   const ELEM *A, int64_t lda, const ELEM *B, int64_t ldb,         \
                                   const ELEM *beta, ELEM *C, int64_t ldc) {                       \
    return typed_gemm(T, (gemm_call){GEMM_INIT(m, n, k), .alpha = alpha, .beta = beta, .A = A,     \
                                     .B = B, .C = C, .lda = lda, .ldb = ldb, .ldc = ldc});         \
  }                                                                                                \
  SIM_API cublasStatus_t NAME(GEMM_HEAD, int m, int n, int k, const ELEM *alpha, const ELEM *A,    \
                              int lda, const ELEM *B, int ldb, const ELEM *beta, ELEM *C,          \
                              int ldc) {                                                           \
    return NAME##_64(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);        \
  }

#define DEFINE_STRIDED(T, NAME, ELEM)                                                              \
  SIM_API cublasStatus_t NAME##_64(GEMM_HEAD, int64_t m, int64_t n, int64_t k, const ELEM *alpha,  \
                                   const ELEM *A, int64_t lda, long long sa, const ELEM *B,        \
                                   int64_t ldb, long long sb, const ELEM *beta, ELEM *C,           \
                                   int64_t ldc, long long sc, int64_t batch) {                     \
    gemm_call g = {                                                                                \
        GEMM_INIT(m, n, k), .alpha = alpha, .beta = beta, .A = A,   .B = B,   .C = C,              \
        .lda = lda,         .ldb = ldb,     .ldc = ldc,   .sa = sa, .sb = sb, .sc = sc};           \
    g.batch = batch;                                                                               \
    return typed_gemm(T, g);                                                                       \
  }                                                                                                \
  SIM_API cublasStatus_t NAME(GEMM_HEAD, int m, int n, int k, const ELEM *alpha, const ELEM *A,    \
                              int lda, long long sa, const ELEM *B, int ldb, long long sb,         \
                              const ELEM *beta, ELEM *C, int ldc, long long sc, int batch) {       \
    return NAME##_64(handle, transa, transb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, \
                     sc, batch);                                                                   \
  }

#define DEFINE_BATCHED(T, NAME, ELEM)                                                              \
  SIM_API cublasStatus_t NAME##_64(GEMM_HEAD, int64_t m, int64_t n, int64_t k, const ELEM *alpha,  \
                                   const ELEM *const A[], int64_t lda, const ELEM *const B[],      \
                                   int64_t ldb, const ELEM *beta, ELEM *const C[], int64_t ldc,    \
                                   int64_t batch) {                                                \
    gemm_call g = {                                                                                \
        GEMM_INIT(m, n, k), .alpha = alpha, .beta = beta, .A = A,     .B = B,                      \
        .C = (void *)C,     .lda = lda,     .ldb = ldb,   .ldc = ldc, .pointer_array = 1};         \
    g.batch = batch;                                                                               \
    return typed_gemm(T, g);                                                                       \
  }                                                                                                \
  SIM_API cublasStatus_t NAME(GEMM_HEAD, int m, int n, int k, const ELEM *alpha,                   \
                              const ELEM *const A[], int lda, const ELEM *const B[], int ldb,      \
                              const ELEM *beta, ELEM *const C[], int ldc, int batch) {             \
    return NAME##_64(handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc, batch); \
  }

/* __half is a 2-byte struct in cuda_fp16.h and the H prototypes are C++-only
 * in cublas_api.h; uint16_t is the same ABI for pointers to it. */
typedef uint16_t sim_half;

DEFINE_TYPED('S', cublasSgemm_v2, float)
DEFINE_TYPED('D', cublasDgemm_v2, double)
DEFINE_TYPED('H', cublasHgemm, sim_half)
DEFINE_STRIDED('S', cublasSgemmStridedBatched, float)
DEFINE_STRIDED('D', cublasDgemmStridedBatched, double)
DEFINE_STRIDED('H', cublasHgemmStridedBatched, sim_half)
DEFINE_BATCHED('S', cublasSgemmBatched, float)
DEFINE_BATCHED('D', cublasDgemmBatched, double)
DEFINE_BATCHED('H', cublasHgemmBatched, sim_half)

/* Matrix-vector products (cublasSgemv / cublasDgemv): y = alpha op(A) x +
 * beta y, A m x n column-major. Argument rules of the cuBLAS documentation:
 * INVALID_VALUE when m or n < 0, incx or incy is 0, or trans is none of
 * N/T/C; nothing launched when m or n is 0. One "kernel" named as cuBLAS's
 * GEMV kernels are (kernel_names.def, a GEMM with n = 1). mpprof does not
 * hook these: their kernels are what CUPTI sees outside its calls. */
static cublasStatus_t run_gemv(cublasHandle_t handle, cublasOperation_t trans, int64_t m, int64_t n,
                               int64_t lda, int64_t incx, int64_t incy, int dt,
                               void (*body)(const void *ctx, int64_t rows, int64_t cols),
                               const void *ctx) {
  if (!handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (trans != CUBLAS_OP_N && trans != CUBLAS_OP_T && trans != CUBLAS_OP_C)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || incx == 0 || incy == 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (handle->pointer_mode != CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  int64_t rows = trans == CUBLAS_OP_N ? m : n, cols = trans == CUBLAS_OP_N ? n : m;
  simcuda_gemm_shape g = {.a_type = dt,
                          .b_type = dt,
                          .c_type = dt,
                          .d_type = dt,
                          .compute = dt == CUDA_R_64F ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
                          .op_a = trans == CUBLAS_OP_N ? 'N' : 'T',
                          .op_b = 'N',
                          .m = (uint64_t)rows,
                          .n = 1,
                          .k = (uint64_t)cols,
                          .batch = 1,
                          .aligned = lda % 4 == 0 && incx == 1 && incy == 1};
  simcuda_kernel k = {.stream = (CUstream)handle->stream};
  k.name = simcuda_gemm_kernel_name(&g, k.grid, k.block);
  uint64_t token = simcuda_kernel_start(&k);
  body(ctx, rows, cols);
  simcuda_kernel_finish(&k, token);
  return CUBLAS_STATUS_SUCCESS;
}

/* One gemv body per element type: element (i, j) of op(A) is A[i + j*lda]
 * (N) or A[j + i*lda] (T, C: real data), sums in the element type's own
 * precision in the order j = 0, 1, ...; a negative increment walks the
 * vector from its end, as BLAS does. */
#define DEFINE_GEMV(NAME, ELEM, DT)                                                                \
  typedef struct NAME##_ctx {                                                                      \
    cublasOperation_t trans;                                                                       \
    ELEM alpha, beta;                                                                              \
    const ELEM *A, *x;                                                                             \
    ELEM *y;                                                                                       \
    int64_t lda, incx, incy;                                                                       \
  } NAME##_ctx;                                                                                    \
  static void NAME##_body(const void *vctx, int64_t rows, int64_t cols) {                          \
    const NAME##_ctx *c = vctx;                                                                    \
    int64_t x0 = c->incx > 0 ? 0 : (cols - 1) * -c->incx;                                          \
    int64_t y0 = c->incy > 0 ? 0 : (rows - 1) * -c->incy;                                          \
    for (int64_t i = 0; i < rows; i++) {                                                           \
      ELEM sum = 0;                                                                                \
      for (int64_t j = 0; j < cols; j++) {                                                         \
        ELEM a = c->trans == CUBLAS_OP_N ? c->A[i + j * c->lda] : c->A[j + i * c->lda];            \
        sum += a * c->x[x0 + j * c->incx];                                                         \
      }                                                                                            \
      ELEM *y = &c->y[y0 + i * c->incy];                                                           \
      *y = c->beta == 0 ? c->alpha * sum : c->alpha * sum + c->beta * *y;                          \
    }                                                                                              \
  }                                                                                                \
  SIM_API cublasStatus_t NAME##_64(cublasHandle_t handle, cublasOperation_t trans, int64_t m,      \
                                   int64_t n, const ELEM *alpha, const ELEM *A, int64_t lda,       \
                                   const ELEM *x, int64_t incx, const ELEM *beta, ELEM *y,         \
                                   int64_t incy) {                                                 \
    if (handle_ok(handle) && m > 0 && n > 0 && (alpha == NULL || beta == NULL))                    \
      return CUBLAS_STATUS_INVALID_VALUE;                                                          \
    NAME##_ctx c = {trans, alpha ? *alpha : 0, beta ? *beta : 0, A, x, y, lda, incx, incy};        \
    return run_gemv(handle, trans, m, n, lda, incx, incy, DT, NAME##_body, &c);                    \
  }                                                                                                \
  SIM_API cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, int m, int n,        \
                              const ELEM *alpha, const ELEM *A, int lda, const ELEM *x, int incx,  \
                              const ELEM *beta, ELEM *y, int incy) {                               \
    return NAME##_64(handle, trans, m, n, alpha, A, lda, x, incx, beta, y, incy);                  \
  }

DEFINE_GEMV(cublasSgemv_v2, float, CUDA_R_32F)
DEFINE_GEMV(cublasDgemv_v2, double, CUDA_R_64F)

SIM_API cublasStatus_t cublasSgemmEx_64(GEMM_HEAD, int64_t m, int64_t n, int64_t k,
                                        const float *alpha, const void *A, cudaDataType Atype,
                                        int64_t lda, const void *B, cudaDataType Btype, int64_t ldb,
                                        const float *beta, void *C, cudaDataType Ctype,
                                        int64_t ldc) {
  gemm_call g = {
      GEMM_INIT(m, n, k), .alpha = alpha, .beta = beta, .A = A,     .B = B,     .C = C,
      .at = Atype,        .bt = Btype,    .ct = Ctype,  .lda = lda, .ldb = ldb, .ldc = ldc};
  cublasStatus_t st = check_args(&g);
  if (st == CUBLAS_STATUS_SUCCESS) st = sgemmex_types(&g);
  return st == CUBLAS_STATUS_SUCCESS ? run_gemm(&g) : st;
}

SIM_API cublasStatus_t cublasSgemmEx(GEMM_HEAD, int m, int n, int k, const float *alpha,
                                     const void *A, cudaDataType Atype, int lda, const void *B,
                                     cudaDataType Btype, int ldb, const float *beta, void *C,
                                     cudaDataType Ctype, int ldc) {
  return cublasSgemmEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
                          beta, C, Ctype, ldc);
}

/* Every algo value in cublasGemmAlgo_t is accepted and, as documented for
 * sm_80 and newer, ignored; any other value is "not supported". */
static int algo_known(cublasGemmAlgo_t algo) {
  int a = (int)algo;
  return (a >= CUBLAS_GEMM_DEFAULT && a <= CUBLAS_GEMM_ALGO23) ||
         (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP) ||
         a == CUBLAS_GEMM_AUTOTUNE;
}

static cublasStatus_t ex_gemm(gemm_call g, int compute, cublasGemmAlgo_t algo) {
  cublasStatus_t st = check_args(&g);
  if (st == CUBLAS_STATUS_SUCCESS && !algo_known(algo)) st = CUBLAS_STATUS_NOT_SUPPORTED;
  if (st == CUBLAS_STATUS_SUCCESS) st = ex_types(&g, compute);
  return st == CUBLAS_STATUS_SUCCESS ? run_gemm(&g) : st;
}

SIM_API cublasStatus_t cublasGemmEx_64(GEMM_HEAD, int64_t m, int64_t n, int64_t k,
                                       const void *alpha, const void *A, cudaDataType Atype,
                                       int64_t lda, const void *B, cudaDataType Btype, int64_t ldb,
                                       const void *beta, void *C, cudaDataType Ctype, int64_t ldc,
                                       cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  return ex_gemm((gemm_call){GEMM_INIT(m, n, k), .alpha = alpha, .beta = beta, .A = A, .B = B,
                             .C = C, .at = Atype, .bt = Btype, .ct = Ctype, .lda = lda, .ldb = ldb,
                             .ldc = ldc},
                 computeType, algo);
}

SIM_API cublasStatus_t cublasGemmEx(GEMM_HEAD, int m, int n, int k, const void *alpha,
                                    const void *A, cudaDataType Atype, int lda, const void *B,
                                    cudaDataType Btype, int ldb, const void *beta, void *C,
                                    cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                    cublasGemmAlgo_t algo) {
  return cublasGemmEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta,
                         C, Ctype, ldc, computeType, algo);
}

SIM_API cublasStatus_t cublasGemmStridedBatchedEx_64(
    GEMM_HEAD, int64_t m, int64_t n, int64_t k, const void *alpha, const void *A,
    cudaDataType Atype, int64_t lda, long long sa, const void *B, cudaDataType Btype, int64_t ldb,
    long long sb, const void *beta, void *C, cudaDataType Ctype, int64_t ldc, long long sc,
    int64_t batch, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  gemm_call g = {
      GEMM_INIT(m, n, k), .alpha = alpha, .beta = beta, .A = A,     .B = B,     .C = C,
      .at = Atype,        .bt = Btype,    .ct = Ctype,  .lda = lda, .ldb = ldb, .ldc = ldc,
      .sa = sa,           .sb = sb,       .sc = sc};
  g.batch = batch;
  return ex_gemm(g, computeType, algo);
}

SIM_API cublasStatus_t cublasGemmStridedBatchedEx(GEMM_HEAD, int m, int n, int k, const void *alpha,
                                                  const void *A, cudaDataType Atype, int lda,
                                                  long long sa, const void *B, cudaDataType Btype,
                                                  int ldb, long long sb, const void *beta, void *C,
                                                  cudaDataType Ctype, int ldc, long long sc,
                                                  int batch, cublasComputeType_t computeType,
                                                  cublasGemmAlgo_t algo) {
  return cublasGemmStridedBatchedEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, sa, B,
                                       Btype, ldb, sb, beta, C, Ctype, ldc, sc, batch, computeType,
                                       algo);
}

SIM_API cublasStatus_t cublasGemmBatchedEx_64(
    GEMM_HEAD, int64_t m, int64_t n, int64_t k, const void *alpha, const void *const A[],
    cudaDataType Atype, int64_t lda, const void *const B[], cudaDataType Btype, int64_t ldb,
    const void *beta, void *const C[], cudaDataType Ctype, int64_t ldc, int64_t batch,
    cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  gemm_call g = {GEMM_INIT(m, n, k), .alpha = alpha, .beta = beta,      .A = A,      .B = B,
                 .C = (void *)C,     .at = Atype,    .bt = Btype,       .ct = Ctype, .lda = lda,
                 .ldb = ldb,         .ldc = ldc,     .pointer_array = 1};
  g.batch = batch;
  return ex_gemm(g, computeType, algo);
}

SIM_API cublasStatus_t cublasGemmBatchedEx(GEMM_HEAD, int m, int n, int k, const void *alpha,
                                           const void *const A[], cudaDataType Atype, int lda,
                                           const void *const B[], cudaDataType Btype, int ldb,
                                           const void *beta, void *const C[], cudaDataType Ctype,
                                           int ldc, int batch, cublasComputeType_t computeType,
                                           cublasGemmAlgo_t algo) {
  return cublasGemmBatchedEx_64(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype,
                                ldb, beta, C, Ctype, ldc, batch, computeType, algo);
}

/* ---- grouped batched: one cublasLtMatmul per group (pointer-array batch) ---- */

typedef struct group_args {
  cublasHandle_t h;
  const cublasOperation_t *ta, *tb;
  const void *m, *n, *k, *lda, *ldb, *ldc, *group_size; /* int[] or int64_t[] */
  int wide;                                             /* the _64 form */
  const char *alpha, *beta;                             /* arrays of scale_type */
  size_t scale_size;
  const void *const *A, *const *B;
  void *const *C;
  int64_t groups;
  int at, bt, ct;
  char typed; /* 'S', 'D' or 0 for Ex */
  int compute;
} group_args;

static int64_t group_val(const void *arr, int wide, int64_t i) {
  return wide ? ((const int64_t *)arr)[i] : ((const int *)arr)[i];
}

static cublasStatus_t run_grouped(const group_args *a) {
  if (!handle_ok(a->h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (a->groups < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (a->groups == 0) return CUBLAS_STATUS_SUCCESS;
  if (a->ta == NULL || a->tb == NULL || a->m == NULL || a->n == NULL || a->k == NULL ||
      a->lda == NULL || a->ldb == NULL || a->ldc == NULL || a->group_size == NULL ||
      a->alpha == NULL || a->beta == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  /* Check every group before running any, so a bad group changes nothing. */
  int64_t offset = 0;
  for (int pass = 0; pass < 2; pass++) {
    offset = 0;
    for (int64_t i = 0; i < a->groups; i++) {
      gemm_call g = {.h = a->h,
                     .ta = a->ta[i],
                     .tb = a->tb[i],
                     .m = group_val(a->m, a->wide, i),
                     .n = group_val(a->n, a->wide, i),
                     .k = group_val(a->k, a->wide, i),
                     .lda = group_val(a->lda, a->wide, i),
                     .ldb = group_val(a->ldb, a->wide, i),
                     .ldc = group_val(a->ldc, a->wide, i),
                     .batch = group_val(a->group_size, a->wide, i),
                     .pointer_array = 1,
                     .at = a->at,
                     .bt = a->bt,
                     .ct = a->ct};
      g.alpha = a->alpha + (size_t)i * a->scale_size;
      g.beta = a->beta + (size_t)i * a->scale_size;
      g.A = a->A + offset;
      g.B = a->B + offset;
      g.C = (void *)(a->C + offset);
      cublasStatus_t st = check_args(&g);
      if (st != CUBLAS_STATUS_SUCCESS) return st;
      if (a->typed) {
        set_typed(&g, a->typed);
      } else {
        st = ex_types(&g, a->compute);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
      }
      if (pass == 1) {
        st = run_gemm(&g);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
      }
      offset += g.batch;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

#define DEFINE_GROUPED(T, NAME, ELEM, IDX, WIDE, DT)                                               \
  SIM_API cublasStatus_t NAME(                                                                     \
      cublasHandle_t handle, const cublasOperation_t ta[], const cublasOperation_t tb[],           \
      const IDX m[], const IDX n[], const IDX k[], const ELEM alpha[], const ELEM *const A[],      \
      const IDX lda[], const ELEM *const B[], const IDX ldb[], const ELEM beta[], ELEM *const C[], \
      const IDX ldc[], IDX groups, const IDX group_size[]) {                                       \
    group_args a = {.h = handle,                                                                   \
                    .ta = ta,                                                                      \
                    .tb = tb,                                                                      \
                    .m = m,                                                                        \
                    .n = n,                                                                        \
                    .k = k,                                                                        \
                    .lda = lda,                                                                    \
                    .ldb = ldb,                                                                    \
                    .ldc = ldc,                                                                    \
                    .group_size = group_size,                                                      \
                    .wide = WIDE,                                                                  \
                    .alpha = (const char *)alpha,                                                  \
                    .beta = (const char *)beta,                                                    \
                    .scale_size = sizeof(ELEM),                                                    \
                    .A = (const void *const *)A,                                                   \
                    .B = (const void *const *)B,                                                   \
                    .C = (void *const *)C,                                                         \
                    .groups = groups,                                                              \
                    .at = DT,                                                                      \
                    .bt = DT,                                                                      \
                    .ct = DT,                                                                      \
                    .typed = T};                                                                   \
    return run_grouped(&a);                                                                        \
  }

DEFINE_GROUPED('S', cublasSgemmGroupedBatched, float, int, 0, CUDA_R_32F)
DEFINE_GROUPED('S', cublasSgemmGroupedBatched_64, float, int64_t, 1, CUDA_R_32F)
DEFINE_GROUPED('D', cublasDgemmGroupedBatched, double, int, 0, CUDA_R_64F)
DEFINE_GROUPED('D', cublasDgemmGroupedBatched_64, double, int64_t, 1, CUDA_R_64F)

static size_t scale_size_of(int compute) {
  switch (compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    return 2;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    return 8;
  default:
    return 4;
  }
}

#define DEFINE_GROUPED_EX(NAME, IDX, WIDE)                                                         \
  SIM_API cublasStatus_t NAME(                                                                     \
      cublasHandle_t handle, const cublasOperation_t ta[], const cublasOperation_t tb[],           \
      const IDX m[], const IDX n[], const IDX k[], const void *alpha, const void *const A[],       \
      cudaDataType_t Atype, const IDX lda[], const void *const B[], cudaDataType_t Btype,          \
      const IDX ldb[], const void *beta, void *const C[], cudaDataType_t Ctype, const IDX ldc[],   \
      IDX groups, const IDX group_size[], cublasComputeType_t computeType) {                       \
    group_args a = {.h = handle,                                                                   \
                    .ta = ta,                                                                      \
                    .tb = tb,                                                                      \
                    .m = m,                                                                        \
                    .n = n,                                                                        \
                    .k = k,                                                                        \
                    .lda = lda,                                                                    \
                    .ldb = ldb,                                                                    \
                    .ldc = ldc,                                                                    \
                    .group_size = group_size,                                                      \
                    .wide = WIDE,                                                                  \
                    .alpha = alpha,                                                                \
                    .beta = beta,                                                                  \
                    .scale_size = scale_size_of(computeType),                                      \
                    .A = A,                                                                        \
                    .B = B,                                                                        \
                    .C = C,                                                                        \
                    .groups = groups,                                                              \
                    .at = Atype,                                                                   \
                    .bt = Btype,                                                                   \
                    .ct = Ctype,                                                                   \
                    .compute = computeType};                                                       \
    return run_grouped(&a);                                                                        \
  }

DEFINE_GROUPED_EX(cublasGemmGroupedBatchedEx, int, 0)
DEFINE_GROUPED_EX(cublasGemmGroupedBatchedEx_64, int64_t, 1)
