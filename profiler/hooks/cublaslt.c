/* cuBLASLt hook (libcublasLt.so.13): cublasLtMatmul. Everything that decides
 * its precision lives in opaque descriptors, read back here through the
 * host-only getters (dtypes, compute and scale type, transposes, epilogue,
 * FP8 scale and amax pointers, layouts). When libcublas calls this from
 * inside a hooked cuBLAS GEMM, the depth guard lets it pass unrecorded.
 * Also the real functions of mpprof's own fp32 GEMMs in a program that loads
 * cuBLASLt without cuBLAS (profiler/gpu/devshadow_blas.h). */
#include <cublasLt.h>

#include "gemm_decode.h"
#include "hook.h"
#include "profiler/gpu/devshadow_blas.h"
#include "profiler/gpu/gpu.h"
#include "profiler/hostmem.h"

#define MPP_MODULE_SONAME "libcublasLt.so.13"
#define MPP_MODULE_SYMS(X)                                                                         \
  X(cublasLtMatmul)                                                                                \
  X(cublasLtMatmulDescGetAttribute)                                                                \
  X(cublasLtMatrixLayoutGetAttribute)                                                              \
  X(cublasLtCreate)                                                                                \
  X(cublasLtMatmulDescCreate)                                                                      \
  X(cublasLtMatmulDescSetAttribute)                                                                \
  X(cublasLtMatmulDescDestroy)                                                                     \
  X(cublasLtMatrixLayoutCreate)                                                                    \
  X(cublasLtMatrixLayoutSetAttribute)                                                              \
  X(cublasLtMatrixLayoutDestroy)
MPP_MODULE_TABLE(syms)

static bool desc_get(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, void *buf,
                     size_t n) {
  __typeof__(&cublasLtMatmulDescGetAttribute) get = MPP_REAL(syms, cublasLtMatmulDescGetAttribute);
  size_t written = 0;
  return get && get(d, a, buf, n, &written) == CUBLAS_STATUS_SUCCESS;
}

static bool layout_get(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, void *buf,
                       size_t n) {
  __typeof__(&cublasLtMatrixLayoutGetAttribute) get =
      MPP_REAL(syms, cublasLtMatrixLayoutGetAttribute);
  size_t written = 0;
  return get && get(l, a, buf, n, &written) == CUBLAS_STATUS_SUCCESS;
}

static bool read_layout(cublasLtMatrixLayout_t l, mpp_lt_layout *ret) {
  uint32_t type = 0;
  int32_t order = CUBLASLT_ORDER_COL, batch = 1;
  int64_t stride = 0;
  uint32_t mode = CUBLASLT_BATCH_MODE_STRIDED;
  if (!l || !layout_get(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type) ||
      !layout_get(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &ret->rows, sizeof ret->rows) ||
      !layout_get(l, CUBLASLT_MATRIX_LAYOUT_COLS, &ret->cols, sizeof ret->cols) ||
      !layout_get(l, CUBLASLT_MATRIX_LAYOUT_LD, &ret->ld, sizeof ret->ld))
    return false;
  /* Optional attributes keep their defaults when a stand-in lacks them. */
  layout_get(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);
  layout_get(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
  layout_get(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
  layout_get(l, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof mode);
  ret->batch_mode = mode;
  ret->type = (int)type;
  ret->order = order;
  ret->batch = batch;
  ret->batch_stride = stride;
  return true;
}

static bool host_visible(const void *p) {
  return mpp_host_readable(p);
}

static mpp_op *decode(mpp_op *scratch, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                      cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
                      const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                      cublasLtMatrixLayout_t Ddesc, cudaStream_t stream) {
  mpp_lt_call g = {.alpha = alpha, .beta = beta, .A = A, .B = B, .C = C, .D = D};
  int32_t compute = 0, scale = 0, pm = 0, ta = 0, tb = 0;
  uint32_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (!desc || !desc_get(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute, sizeof compute) ||
      !desc_get(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale, sizeof scale))
    return NULL;
  desc_get(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
  desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  g.bias_type = -1;
  desc_get(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias);
  desc_get(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &g.bias_type, sizeof g.bias_type);
  desc_get(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &g.bias_stride, sizeof g.bias_stride);
  static const cublasLtMatmulDescAttributes_t scale_attrs[4] = {
      CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
      CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER};
  for (int i = 0; i < 4; i++)
    desc_get(desc, scale_attrs[i], &g.scale_ptr[i], sizeof g.scale_ptr[i]);
  static const cublasLtMatmulDescAttributes_t mode_attrs[4] = {
      CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
      CUBLASLT_MATMUL_DESC_C_SCALE_MODE, CUBLASLT_MATMUL_DESC_D_SCALE_MODE};
  for (int i = 0; i < 4; i++)
    if (g.scale_ptr[i]) desc_get(desc, mode_attrs[i], &g.scale_mode[i], sizeof g.scale_mode[i]);
  desc_get(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &g.amax_d, sizeof g.amax_d);
  g.compute = compute;
  g.scale_type = scale;
  g.pointer_mode = pm;
  g.transa = ta;
  g.transb = tb;
  g.epilogue = epi;
  if (!read_layout(Adesc, &g.a) || !read_layout(Bdesc, &g.b) || !read_layout(Ddesc, &g.d))
    return NULL;
  if (!Cdesc || !read_layout(Cdesc, &g.c))
    g.c = g.d; /* C described like D when its layout is not given */
  return mpp_lt_decode_memo(scratch, &g, stream, host_visible);
}

static bool succeeded(cublasStatus_t r) {
  return r == CUBLAS_STATUS_SUCCESS;
}

MPP_MEMO_OP_HOOK(syms, cublasStatus_t, cublasLtMatmul,
                 (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
                  const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                  cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                  cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                  const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSizeInBytes,
                  cudaStream_t stream),
                 (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                  algo, workspace, workspaceSizeInBytes, stream),
                 CUBLAS_STATUS_NOT_INITIALIZED, succeeded, decode,
                 (computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, stream))

/* --- mpprof's own fp32 GEMMs (profiler/gpu/devshadow.c): the real functions --- */

static bool own_create(void **ret_handle) {
  cublasLtHandle_t h = NULL;
  if (MPP_REAL(syms, cublasLtCreate)(&h) != CUBLAS_STATUS_SUCCESS) return false;
  *ret_handle = h;
  return true;
}

static bool own_desc_set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, int32_t v) {
  return MPP_REAL(syms, cublasLtMatmulDescSetAttribute)(d, a, &v, sizeof v) ==
         CUBLAS_STATUS_SUCCESS;
}

/* fp32 rows x cols matrices, `batch` of them `stride` elements apart; NULL on failure. */
static cublasLtMatrixLayout_t own_layout(int rows, int cols, int ld, int32_t batch,
                                         int64_t stride) {
  cublasLtMatrixLayout_t l = NULL;
  if (MPP_REAL(syms, cublasLtMatrixLayoutCreate)(&l, CUDA_R_32F, (uint64_t)rows, (uint64_t)cols,
                                                 ld) != CUBLAS_STATUS_SUCCESS)
    return NULL;
  __typeof__(&cublasLtMatrixLayoutSetAttribute) set =
      MPP_REAL(syms, cublasLtMatrixLayoutSetAttribute);
  if (set(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch) != CUBLAS_STATUS_SUCCESS ||
      set(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride) !=
          CUBLAS_STATUS_SUCCESS) {
    MPP_REAL(syms, cublasLtMatrixLayoutDestroy)(l);
    return NULL;
  }
  return l;
}

/* cublasSgemmStridedBatched's product as one matmul: compute type
 * COMPUTE_32F_PEDANTIC (no TF32, no reduced-precision reduction: what
 * CUBLAS_PEDANTIC_MATH is on a cuBLAS handle), fp32 scale, the default
 * heuristic (algo NULL) without workspace. The descriptors live for the call
 * only: shadowed calls are sampled, and a few host calls are small beside
 * the GEMM. */
static bool own_sgemm(void *handle, cudaStream_t stream, cublasOperation_t ta, cublasOperation_t tb,
                      int m, int n, int k, const float *alpha, const float *A, int lda,
                      long long sa, const float *B, int ldb, long long sb, const float *beta,
                      float *C, int ldc, long long sc, int batch) {
  cublasLtMatmulDesc_t desc = NULL;
  if (MPP_REAL(syms, cublasLtMatmulDescCreate)(&desc, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F) !=
      CUBLAS_STATUS_SUCCESS)
    return false;
  bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  cublasLtMatrixLayout_t l[3] = {own_layout(na ? m : k, na ? k : m, lda, batch, sa),
                                 own_layout(nb ? k : n, nb ? n : k, ldb, batch, sb),
                                 own_layout(m, n, ldc, batch, sc)};
  bool ok = l[0] && l[1] && l[2] && own_desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, ta) &&
            own_desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, tb) &&
            MPP_REAL(syms, cublasLtMatmul)(handle, desc, alpha, A, l[0], B, l[1], beta, C, l[2], C,
                                           l[2], NULL, NULL, 0, stream) == CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < 3; i++)
    if (l[i]) MPP_REAL(syms, cublasLtMatrixLayoutDestroy)(l[i]);
  MPP_REAL(syms, cublasLtMatmulDescDestroy)(desc);
  return ok;
}

static const mpp_devshadow_blas *own_blas(void) {
  static const mpp_devshadow_blas fns = {.create = own_create, .sgemm_strided = own_sgemm};
  bool loaded =
      MPP_REAL(syms, cublasLtMatmul) && MPP_REAL(syms, cublasLtCreate) &&
      MPP_REAL(syms, cublasLtMatmulDescCreate) && MPP_REAL(syms, cublasLtMatmulDescSetAttribute) &&
      MPP_REAL(syms, cublasLtMatmulDescDestroy) && MPP_REAL(syms, cublasLtMatrixLayoutCreate) &&
      MPP_REAL(syms, cublasLtMatrixLayoutSetAttribute) &&
      MPP_REAL(syms, cublasLtMatrixLayoutDestroy);
  return loaded ? &fns : NULL;
}

__attribute__((constructor)) static void own_blas_register(void) {
  mpp_devshadow_set_blas(MPP_DEVSHADOW_CUBLASLT, own_blas);
}
