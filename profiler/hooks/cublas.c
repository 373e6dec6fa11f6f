/* cuBLAS hooks (libcublas.so.13): every GEMM entry point with its _64 twin,
 * and the handle state a GEMM's precision depends on. TF32 for fp32 GEMMs is
 * only visible in the handle's math mode, so cublasSetMathMode (and handle
 * creation/destruction) is tracked per handle. The plain cublasSgemm /
 * cublasDgemm exports are the legacy handle-less API with another signature
 * and are deliberately not defined here.
 *
 * libcublas calls cublasLtMatmul through its PLT: the depth guard taken by
 * these wrappers makes that inner call pass through, so one GEMM is one op. */
#include <cublas_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_types.h"
#include "gemm_decode.h"
#include "hook.h"
#include "profiler/gpu/devshadow_blas.h"
#include "profiler/gpu/gpu.h"
#include "profiler/hostmem.h"
#include "profiler/ptrmap.h"
#include "profiler/sites.h"

/* cuda_fp16.h declares __half only for C++; the ABI is a pointer either way. */
typedef struct mpp_half {
  unsigned short x;
} mpp_half;

#define HGEMM_PROTOS(I, suffix)                                                                    \
  cublasStatus_t cublasHgemm##suffix(cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I,   \
                                     I, const mpp_half *, const mpp_half *, I, const mpp_half *,   \
                                     I, const mpp_half *, mpp_half *, I);                          \
  cublasStatus_t cublasHgemmBatched##suffix(cublasHandle_t, cublasOperation_t, cublasOperation_t,  \
                                            I, I, I, const mpp_half *, const mpp_half *const[], I, \
                                            const mpp_half *const[], I, const mpp_half *,          \
                                            mpp_half *const[], I, I);                              \
  cublasStatus_t cublasHgemmStridedBatched##suffix(                                                \
      cublasHandle_t, cublasOperation_t, cublasOperation_t, I, I, I, const mpp_half *,             \
      const mpp_half *, I, long long int, const mpp_half *, I, long long int, const mpp_half *,    \
      mpp_half *, I, long long int, I);
HGEMM_PROTOS(int, )
HGEMM_PROTOS(int64_t, _64)

#define MPP_MODULE_SONAME "libcublas.so.13"
#define TWINS(X, name) X(name) X(name##_64)
#define MPP_MODULE_SYMS(X)                                                                         \
  TWINS(X, cublasSgemm_v2)                                                                         \
  TWINS(X, cublasDgemm_v2)                                                                         \
  TWINS(X, cublasHgemm)                                                                            \
  TWINS(X, cublasSgemmEx)                                                                          \
  TWINS(X, cublasGemmEx)                                                                           \
  TWINS(X, cublasSgemmBatched)                                                                     \
  TWINS(X, cublasDgemmBatched)                                                                     \
  TWINS(X, cublasHgemmBatched)                                                                     \
  TWINS(X, cublasSgemmStridedBatched)                                                              \
  TWINS(X, cublasDgemmStridedBatched)                                                              \
  TWINS(X, cublasHgemmStridedBatched)                                                              \
  TWINS(X, cublasGemmBatchedEx)                                                                    \
  TWINS(X, cublasGemmStridedBatchedEx)                                                             \
  TWINS(X, cublasSgemmGroupedBatched)                                                              \
  TWINS(X, cublasDgemmGroupedBatched)                                                              \
  TWINS(X, cublasGemmGroupedBatchedEx)                                                             \
  X(cublasCreate_v2)                                                                               \
  X(cublasDestroy_v2)                                                                              \
  X(cublasSetMathMode)                                                                             \
  X(cublasGetMathMode)                                                                             \
  X(cublasGetStream_v2)                                                                            \
  X(cublasSetStream_v2)                                                                            \
  X(cublasGetPointerMode_v2)
MPP_MODULE_TABLE(syms)

#define FAIL CUBLAS_STATUS_NOT_INITIALIZED

static bool succeeded(cublasStatus_t r) {
  return r == CUBLAS_STATUS_SUCCESS;
}

/* --- handle -> math mode --- */

#define MAX_HANDLES 1024 /* beyond this, modes are queried per call */
static pthread_mutex_t handles_mu = PTHREAD_MUTEX_INITIALIZER;
static mpp_ptrmap handles = MPP_PTRMAP_INIT(64, MAX_HANDLES); /* value: the mode */

__attribute__((constructor)) static void handles_fork_protect(void) {
  mpp_fork_protect(&handles_mu);
}

/* Bumped (under handles_mu) by every change of the table: a thread's memo of
 * the last handle's mode (math_mode_of) holds while it is unchanged. */
static _Atomic uint64_t handles_gen = 1;

static void handle_set(cublasHandle_t h, int mode) {
  pthread_mutex_lock(&handles_mu);
  mpp_ptrmap_put(&handles, h, (void *)(intptr_t)mode); /* full: queried per call */
  atomic_fetch_add_explicit(&handles_gen, 1, memory_order_release);
  pthread_mutex_unlock(&handles_mu);
}

static bool handle_get(cublasHandle_t h, int *ret_mode) {
  void *v;
  pthread_mutex_lock(&handles_mu);
  bool found = mpp_ptrmap_find(&handles, h, &v);
  pthread_mutex_unlock(&handles_mu);
  if (found) *ret_mode = (int)(intptr_t)v;
  return found;
}

static void handle_forget(cublasHandle_t h) {
  pthread_mutex_lock(&handles_mu);
  mpp_ptrmap_del(&handles, h, NULL);
  atomic_fetch_add_explicit(&handles_gen, 1, memory_order_release);
  pthread_mutex_unlock(&handles_mu);
}

static int query_math_mode(cublasHandle_t h) {
  cublasMath_t mode;
  __typeof__(&cublasGetMathMode) get = MPP_REAL(syms, cublasGetMathMode);
  if (get && get(h, &mode) == CUBLAS_STATUS_SUCCESS) return (int)mode;
  return -1;
}

/* The calling thread's last handle found in the table, valid for one
 * generation of it: the common call (same handle, no mode change since)
 * takes no lock. A mode queried per call (table full) is never memoised. */
static __thread MPP_TLS struct {
  cublasHandle_t h;
  uint64_t gen;
  int mode;
} mode_memo;

static int math_mode_of(cublasHandle_t h) {
  uint64_t gen = atomic_load_explicit(&handles_gen, memory_order_acquire);
  if (mode_memo.gen == gen && mode_memo.h == h) return mode_memo.mode;
  int mode;
  if (handle_get(h, &mode)) {
    /* gen was read before the lookup: a change in between makes the next call look again. */
    mode_memo.h = h;
    mode_memo.gen = gen;
    mode_memo.mode = mode;
    return mode;
  }
  /* A handle created before mpprof was loaded, or by a library we do not see. */
  mode = query_math_mode(h);
  if (mode >= 0) handle_set(h, mode);
  return mode;
}

static bool host_visible(const void *p) {
  return mpp_host_readable(p);
}

/* The handle state a call's decoding depends on. */
static mpp_gemm_ctx context(cublasHandle_t h) {
  /* Pointer mode unknown until asked: beta may be a device pointer, and only
   * a host-visible one may be read. */
  mpp_gemm_ctx ctx = {
      .math_mode = math_mode_of(h), .pointer_mode = 1, .host_visible = host_visible};
  cudaStream_t stream = NULL;
  cublasPointerMode_t pm = CUBLAS_POINTER_MODE_HOST;
  __typeof__(&cublasGetStream_v2) get_stream = MPP_REAL(syms, cublasGetStream_v2);
  __typeof__(&cublasGetPointerMode_v2) get_pm = MPP_REAL(syms, cublasGetPointerMode_v2);
  if (get_stream && get_stream(h, &stream) == CUBLAS_STATUS_SUCCESS) ctx.stream = stream;
  /* Pointer mode decides whether beta can be read (whether C is scanned) and
   * alpha (shadow execution needs its value). Without --scan all and without
   * --shadow neither is read: with the device pointer mode it is device memory. */
  if (mpp_cfg.scan != MPP_SCAN_ALL && !mpp_cfg.shadow)
    ctx.host_visible = NULL;
  else if (get_pm && get_pm(h, &pm) == CUBLAS_STATUS_SUCCESS)
    ctx.pointer_mode = (int)pm;
  return ctx;
}

/* The wrappers' decode step (one op per call): handle state, then the pure
 * decoding, memoised per thread (gemm_decode.h). */
static mpp_op *decode(mpp_op *scratch, cublasHandle_t h, const mpp_gemm_call *g) {
  mpp_gemm_ctx ctx = context(h);
  return mpp_gemm_decode_memo(scratch, g, &ctx);
}

/* --- GEMM wrappers, one macro per family, each defining the twin pair --- */

/* The fields every GEMM entry point passes under the same names. */
#define GEMM_COMMON(name)                                                                          \
  .api = #name, .transa = transa, .transb = transb, .m = m, .n = n, .k = k, .lda = lda,            \
  .ldb = ldb, .ldc = ldc, .alpha = alpha, .beta = beta

#define GEMM_PARAMS(T, I)                                                                          \
  (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,       \
   const T *alpha, const T *A, I lda, const T *B, I ldb, const T *beta, T *C, I ldc)
#define GEMM_ARGS (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)
#define TYPED_GEMM(name, T, I, dt, ct)                                                             \
  MPP_MEMO_OP_HOOK(syms, cublasStatus_t, name, GEMM_PARAMS(T, I), GEMM_ARGS, FAIL, succeeded,      \
                   decode,                                                                         \
                   (handle, &(mpp_gemm_call){GEMM_COMMON(name), .A = A, .B = B, .C = C,            \
                                             .batch = 1, .Atype = dt, .Btype = dt, .Ctype = dt,    \
                                             .compute = ct, .scale_type = dt}))
TYPED_GEMM(cublasSgemm_v2, float, int, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_GEMM(cublasSgemm_v2_64, float, int64_t, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_GEMM(cublasDgemm_v2, double, int, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_GEMM(cublasDgemm_v2_64, double, int64_t, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_GEMM(cublasHgemm, mpp_half, int, CUDA_R_16F, CUBLAS_COMPUTE_16F)
TYPED_GEMM(cublasHgemm_64, mpp_half, int64_t, CUDA_R_16F, CUBLAS_COMPUTE_16F)

#define SGEMMEX(name, I)                                                                           \
  MPP_MEMO_OP_HOOK(                                                                                \
      syms, cublasStatus_t, name,                                                                  \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,   \
       const float *alpha, const void *A, cudaDataType Atype, I lda, const void *B,                \
       cudaDataType Btype, I ldb, const float *beta, void *C, cudaDataType Ctype, I ldc),          \
      (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc), \
      FAIL, succeeded, decode,                                                                     \
      (handle, &(mpp_gemm_call){GEMM_COMMON(name), .A = A, .B = B, .C = C, .batch = 1,             \
                                .Atype = Atype, .Btype = Btype, .Ctype = Ctype,                    \
                                .compute = CUBLAS_COMPUTE_32F, .scale_type = CUDA_R_32F}))
SGEMMEX(cublasSgemmEx, int)
SGEMMEX(cublasSgemmEx_64, int64_t)

#define GEMMEX(name, I)                                                                            \
  MPP_MEMO_OP_HOOK(                                                                                \
      syms, cublasStatus_t, name,                                                                  \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,   \
       const void *alpha, const void *A, cudaDataType Atype, I lda, const void *B,                 \
       cudaDataType Btype, I ldb, const void *beta, void *C, cudaDataType Ctype, I ldc,            \
       cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                    \
      (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,  \
       computeType, algo),                                                                         \
      FAIL, succeeded, decode,                                                                     \
      (handle,                                                                                     \
       &(mpp_gemm_call){GEMM_COMMON(name), .A = A, .B = B, .C = C, .batch = 1, .Atype = Atype,     \
                        .Btype = Btype, .Ctype = Ctype, .compute = computeType,                    \
                        .scale_type = mpp_cublas_compute_scale_type(computeType)}))
GEMMEX(cublasGemmEx, int)
GEMMEX(cublasGemmEx_64, int64_t)

#define TYPED_BATCHED(name, T, I, dt, ct)                                                          \
  MPP_MEMO_OP_HOOK(                                                                                \
      syms, cublasStatus_t, name,                                                                  \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,   \
       const T *alpha, const T *const Aarray[], I lda, const T *const Barray[], I ldb,             \
       const T *beta, T *const Carray[], I ldc, I batchCount),                                     \
      (handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc,        \
       batchCount),                                                                                \
      FAIL, succeeded, decode,                                                                     \
      (handle,                                                                                     \
       &(mpp_gemm_call){GEMM_COMMON(name), .Aarr = (const void *const *)Aarray,                    \
                        .Barr = (const void *const *)Barray, .Carr = (const void *const *)Carray,  \
                        .batch = batchCount, .Atype = dt, .Btype = dt, .Ctype = dt, .compute = ct, \
                        .scale_type = dt}))
TYPED_BATCHED(cublasSgemmBatched, float, int, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_BATCHED(cublasSgemmBatched_64, float, int64_t, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_BATCHED(cublasDgemmBatched, double, int, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_BATCHED(cublasDgemmBatched_64, double, int64_t, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_BATCHED(cublasHgemmBatched, mpp_half, int, CUDA_R_16F, CUBLAS_COMPUTE_16F)
TYPED_BATCHED(cublasHgemmBatched_64, mpp_half, int64_t, CUDA_R_16F, CUBLAS_COMPUTE_16F)

#define TYPED_STRIDED(name, T, I, dt, ct)                                                          \
  MPP_MEMO_OP_HOOK(                                                                                \
      syms, cublasStatus_t, name,                                                                  \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,   \
       const T *alpha, const T *A, I lda, long long int strideA, const T *B, I ldb,                \
       long long int strideB, const T *beta, T *C, I ldc, long long int strideC, I batchCount),    \
      (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc,     \
       strideC, batchCount),                                                                       \
      FAIL, succeeded, decode,                                                                     \
      (handle,                                                                                     \
       &(mpp_gemm_call){GEMM_COMMON(name), .A = A, .B = B, .C = C, .strideA = strideA,             \
                        .strideB = strideB, .strideC = strideC, .batch = batchCount, .Atype = dt,  \
                        .Btype = dt, .Ctype = dt, .compute = ct, .scale_type = dt}))
TYPED_STRIDED(cublasSgemmStridedBatched, float, int, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_STRIDED(cublasSgemmStridedBatched_64, float, int64_t, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_STRIDED(cublasDgemmStridedBatched, double, int, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_STRIDED(cublasDgemmStridedBatched_64, double, int64_t, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_STRIDED(cublasHgemmStridedBatched, mpp_half, int, CUDA_R_16F, CUBLAS_COMPUTE_16F)
TYPED_STRIDED(cublasHgemmStridedBatched_64, mpp_half, int64_t, CUDA_R_16F, CUBLAS_COMPUTE_16F)

#define BATCHEDEX(name, I)                                                                         \
  MPP_MEMO_OP_HOOK(                                                                                \
      syms, cublasStatus_t, name,                                                                  \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,   \
       const void *alpha, const void *const Aarray[], cudaDataType Atype, I lda,                   \
       const void *const Barray[], cudaDataType Btype, I ldb, const void *beta,                    \
       void *const Carray[], cudaDataType Ctype, I ldc, I batchCount,                              \
       cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                    \
      (handle, transa, transb, m, n, k, alpha, Aarray, Atype, lda, Barray, Btype, ldb, beta,       \
       Carray, Ctype, ldc, batchCount, computeType, algo),                                         \
      FAIL, succeeded, decode,                                                                     \
      (handle,                                                                                     \
       &(mpp_gemm_call){GEMM_COMMON(name), .Aarr = Aarray, .Barr = Barray,                         \
                        .Carr = (const void *const *)Carray, .batch = batchCount, .Atype = Atype,  \
                        .Btype = Btype, .Ctype = Ctype, .compute = computeType,                    \
                        .scale_type = mpp_cublas_compute_scale_type(computeType)}))
BATCHEDEX(cublasGemmBatchedEx, int)
BATCHEDEX(cublasGemmBatchedEx_64, int64_t)

#define STRIDEDEX(name, I)                                                                         \
  MPP_MEMO_OP_HOOK(                                                                                \
      syms, cublasStatus_t, name,                                                                  \
      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, I m, I n, I k,   \
       const void *alpha, const void *A, cudaDataType Atype, I lda, long long int strideA,         \
       const void *B, cudaDataType Btype, I ldb, long long int strideB, const void *beta, void *C, \
       cudaDataType Ctype, I ldc, long long int strideC, I batchCount,                             \
       cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                    \
      (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB,     \
       beta, C, Ctype, ldc, strideC, batchCount, computeType, algo),                               \
      FAIL, succeeded, decode,                                                                     \
      (handle,                                                                                     \
       &(mpp_gemm_call){GEMM_COMMON(name), .A = A, .B = B, .C = C, .strideA = strideA,             \
                        .strideB = strideB, .strideC = strideC, .batch = batchCount,               \
                        .Atype = Atype, .Btype = Btype, .Ctype = Ctype, .compute = computeType,    \
                        .scale_type = mpp_cublas_compute_scale_type(computeType)}))
STRIDEDEX(cublasGemmStridedBatchedEx, int)
STRIDEDEX(cublasGemmStridedBatchedEx_64, int64_t)

/* --- grouped batched: one op per group (groups have their own shapes) --- */

typedef struct grouped {
  const char *api;
  int64_t groups;
  const cublasOperation_t *ta, *tb;
  const void *m, *n, *k, *lda, *ldb, *ldc, *size; /* int or int64_t arrays */
  bool i64;
  const void *alpha, *beta; /* arrays, element size by scale type */
  const void *const *A, *const *B, *const *C;
  int Atype, Btype, Ctype, compute, scale_type;
} grouped;

static int64_t at(const void *arr, bool i64, int64_t i) {
  return i64 ? ((const int64_t *)arr)[i] : ((const int *)arr)[i];
}

static size_t scale_size(int t) {
  return t == CUDA_R_64F ? 8 : t == CUDA_R_16F ? 2 : 4;
}

/* Ops recorded per grouped call; more groups are left out (max_groups note).
 * One op per group, each with its call and site memo (~1.7 KB), in the
 * thread's multi-op block (mpp_calls_reserve: mapped off the program's heap,
 * never on its stack, grown to the largest call the thread made and kept):
 * 1024 groups take ~1.7 MB, once, where the program made a call that large.
 * It was 64, and a mixture of experts with more (128, 256, 384 experts) lost
 * its later experts while the layer's verdict rested on the first 64. */
#define MAX_GROUPS 1024

/* One op per group, each from its own shapes and its own slice of the
 * pointer arrays. */
static bool decode_grouped(mpp_calls *c, cublasHandle_t h, const grouped *g) {
  int64_t n = g->groups < MAX_GROUPS ? g->groups : MAX_GROUPS;
  /* Malformed calls go straight to cuBLAS, which reports them. */
  if (n <= 0 || !g->ta || !g->tb || !g->m || !g->n || !g->k || !g->lda || !g->ldb || !g->ldc ||
      !g->size || !g->beta || !g->A || !g->B || !g->C)
    return false;
  /* A negative group size (rejected by cuBLAS) would offset the later groups'
   * pointer arrays before their start. */
  for (int64_t i = 0; i < n; i++)
    if (at(g->size, g->i64, i) < 0) return false;
  if (!mpp_calls_reserve(c, (int)n, "a grouped GEMM call")) return false;
  int64_t first = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t size = at(g->size, g->i64, i);
    mpp_gemm_ctx ctx = context(h);
    mpp_gemm_decode(
        &c->ops[i],
        &(mpp_gemm_call){.api = g->api,
                         .transa = g->ta[i],
                         .transb = g->tb[i],
                         .m = at(g->m, g->i64, i),
                         .n = at(g->n, g->i64, i),
                         .k = at(g->k, g->i64, i),
                         .lda = at(g->lda, g->i64, i),
                         .ldb = at(g->ldb, g->i64, i),
                         .ldc = at(g->ldc, g->i64, i),
                         .alpha = g->alpha ? (const char *)g->alpha + i * scale_size(g->scale_type)
                                           : NULL,
                         .beta = (const char *)g->beta + i * scale_size(g->scale_type),
                         .Aarr = g->A + first,
                         .Barr = g->B + first,
                         .Carr = g->C + first,
                         .batch = size,
                         .Atype = g->Atype,
                         .Btype = g->Btype,
                         .Ctype = g->Ctype,
                         .compute = g->compute,
                         .scale_type = g->scale_type},
        &ctx);
    first += size;
  }
  c->n = (int)n;
  if (g->groups > MAX_GROUPS)
    mpp_note_incomplete("max_groups",
                        "grouped GEMM calls with more than %d groups: later groups not recorded",
                        MAX_GROUPS);
  return true;
}

/* The leading fields of `grouped` that every grouped entry point passes alike. */
#define GROUPED_SHAPE(name, I)                                                                     \
#name, group_count, transa_array, transb_array, m_array, n_array, k_array, lda_array, ldb_array, \
      ldc_array, group_size, sizeof(I) == 8, alpha_array, beta_array

#define TYPED_GROUPED(name, T, I, dt, ct)                                                          \
  MPP_MULTI_OP_HOOK(                                                                               \
      syms, cublasStatus_t, name,                                                                  \
      (cublasHandle_t handle, const cublasOperation_t transa_array[],                              \
       const cublasOperation_t transb_array[], const I m_array[], const I n_array[],               \
       const I k_array[], const T alpha_array[], const T *const Aarray[], const I lda_array[],     \
       const T *const Barray[], const I ldb_array[], const T beta_array[], T *const Carray[],      \
       const I ldc_array[], I group_count, const I group_size[]),                                  \
      (handle, transa_array, transb_array, m_array, n_array, k_array, alpha_array, Aarray,         \
       lda_array, Barray, ldb_array, beta_array, Carray, ldc_array, group_count, group_size),      \
      FAIL, succeeded, decode_grouped,                                                             \
      (handle,                                                                                     \
       &(grouped){GROUPED_SHAPE(name, I), (const void *const *)Aarray,                             \
                  (const void *const *)Barray, (const void *const *)Carray, dt, dt, dt, ct, dt}))
TYPED_GROUPED(cublasSgemmGroupedBatched, float, int, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_GROUPED(cublasSgemmGroupedBatched_64, float, int64_t, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_GROUPED(cublasDgemmGroupedBatched, double, int, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_GROUPED(cublasDgemmGroupedBatched_64, double, int64_t, CUDA_R_64F, CUBLAS_COMPUTE_64F)

#define EX_GROUPED(name, I)                                                                        \
  MPP_MULTI_OP_HOOK(syms, cublasStatus_t, name,                                                    \
                    (cublasHandle_t handle, const cublasOperation_t transa_array[],                \
                     const cublasOperation_t transb_array[], const I m_array[], const I n_array[], \
                     const I k_array[], const void *alpha_array, const void *const Aarray[],       \
                     cudaDataType_t Atype, const I lda_array[], const void *const Barray[],        \
                     cudaDataType_t Btype, const I ldb_array[], const void *beta_array,            \
                     void *const Carray[], cudaDataType_t Ctype, const I ldc_array[],              \
                     I group_count, const I group_size[], cublasComputeType_t computeType),        \
                    (handle, transa_array, transb_array, m_array, n_array, k_array, alpha_array,   \
                     Aarray, Atype, lda_array, Barray, Btype, ldb_array, beta_array, Carray,       \
                     Ctype, ldc_array, group_count, group_size, computeType),                      \
                    FAIL, succeeded, decode_grouped,                                               \
                    (handle, &(grouped){GROUPED_SHAPE(name, I), Aarray, Barray,                    \
                                        (const void *const *)Carray, Atype, Btype, Ctype,          \
                                        computeType, mpp_cublas_compute_scale_type(computeType)}))
EX_GROUPED(cublasGemmGroupedBatchedEx, int)
EX_GROUPED(cublasGemmGroupedBatchedEx_64, int64_t)

/* --- handle state --- */

static void handle_created(const cublasHandle_t *handle) {
  if (!handle) return;
  int mode = query_math_mode(*handle);
  handle_set(*handle, mode >= 0 ? mode : CUBLAS_DEFAULT_MATH);
}

MPP_STATE_HOOK(syms, cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle), FAIL,
               succeeded, handle_created, (handle))

MPP_STATE_HOOK(syms, cublasStatus_t, cublasDestroy_v2, (cublasHandle_t handle), (handle), FAIL,
               succeeded, handle_forget, (handle))

MPP_STATE_HOOK(syms, cublasStatus_t, cublasSetMathMode, (cublasHandle_t handle, cublasMath_t mode),
               (handle, mode), FAIL, succeeded, handle_set, (handle, (int)mode))

/* --- mpprof's own fp32 GEMMs (profiler/gpu/devshadow.c): the real functions --- */

static bool own_create(void **ret_handle) {
  cublasHandle_t h = NULL;
  if (MPP_REAL(syms, cublasCreate_v2)(&h) != CUBLAS_STATUS_SUCCESS) return false;
  if (MPP_REAL(syms, cublasSetMathMode)(h, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) {
    MPP_REAL(syms, cublasDestroy_v2)(h);
    return false;
  }
  mpp_sym_pin((void *)MPP_REAL(syms, cublasCreate_v2)); /* the handle lives in it */
  *ret_handle = h;
  return true;
}

static bool own_sgemm(void *handle, cudaStream_t stream, cublasOperation_t ta, cublasOperation_t tb,
                      int m, int n, int k, const float *alpha, const float *A, int lda,
                      long long sa, const float *B, int ldb, long long sb, const float *beta,
                      float *C, int ldc, long long sc, int batch) {
  return MPP_REAL(syms, cublasSetStream_v2)(handle, stream) == CUBLAS_STATUS_SUCCESS &&
         MPP_REAL(syms, cublasSgemmStridedBatched)(handle, ta, tb, m, n, k, alpha, A, lda, sa, B,
                                                   ldb, sb, beta, C, ldc, sc,
                                                   batch) == CUBLAS_STATUS_SUCCESS;
}

static const mpp_devshadow_blas *own_blas(void) {
  static const mpp_devshadow_blas fns = {.create = own_create, .sgemm_strided = own_sgemm};
  bool loaded = MPP_REAL(syms, cublasCreate_v2) && MPP_REAL(syms, cublasDestroy_v2) &&
                MPP_REAL(syms, cublasSetMathMode) && MPP_REAL(syms, cublasSetStream_v2) &&
                MPP_REAL(syms, cublasSgemmStridedBatched);
  return loaded ? &fns : NULL;
}

__attribute__((constructor)) static void own_blas_register(void) {
  mpp_devshadow_set_blas(MPP_DEVSHADOW_CUBLAS, own_blas);
}
