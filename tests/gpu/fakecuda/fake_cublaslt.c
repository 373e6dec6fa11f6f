/* A fake libcublasLt.so.13 beside the fake libcuda.so.1, for a program that
 * uses cuBLASLt without cuBLAS and for mpprof's own GEMMs in such a program
 * (profiler/gpu/devshadow.c through hooks/cublaslt.c): handles, matmul
 * descriptors and matrix layouts with the attributes mpprof sets and reads
 * (the real sizes and defaults, cublasLt.h; others are refused with
 * INVALID_VALUE), and cublasLtMatmul for what those use: fp32 A, B, C, D in
 * column order, compute type COMPUTE_32F or COMPUTE_32F_PEDANTIC, fp32 scale,
 * host alpha and beta, the default epilogue, no scale pointers (anything else
 * NOT_SUPPORTED, as a library without the kernel answers). The product is
 * fake_sgemm.h's, on the call's stream (a stream the fake driver holds back
 * runs it on its turn). The tests read what ran and what is left
 * (fakecublaslt_*). */
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "fake_sgemm.h"

#define API __attribute__((visibility("default")))

enum { HANDLE_MAGIC = 0xfa7e17, DESC_MAGIC = 0xfa7ed5, LAYOUT_MAGIC = 0xfa7e1a };

struct cublasLtContext {
  unsigned magic;
};

typedef struct desc {
  unsigned magic;
  int32_t compute, scale_type, pointer_mode, transa, transb, transc, bias_type;
  int32_t scale_mode[4];
  uint32_t epilogue;
  const void *bias, *scale[4];
  void *amax_d;
  int64_t bias_stride;
} desc;

typedef struct layout {
  unsigned magic;
  uint32_t type, batch_mode;
  int32_t order, batch;
  uint64_t rows, cols;
  int64_t ld, stride;
} layout;

typedef struct slot {
  int attr;
  size_t offset, size;
} slot;
#define SLOT(a, type, field)                                                                       \
  { a, offsetof(type, field), sizeof(((type *)0)->field) }
static const slot desc_slots[] = {
    SLOT(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, desc, compute),
    SLOT(CUBLASLT_MATMUL_DESC_SCALE_TYPE, desc, scale_type),
    SLOT(CUBLASLT_MATMUL_DESC_POINTER_MODE, desc, pointer_mode),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSA, desc, transa),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSB, desc, transb),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSC, desc, transc),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE, desc, epilogue),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_POINTER, desc, bias),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, desc, bias_stride),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, desc, bias_type),
    SLOT(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, desc, scale[0]),
    SLOT(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, desc, scale[1]),
    SLOT(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, desc, scale[2]),
    SLOT(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, desc, scale[3]),
    SLOT(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, desc, scale_mode[0]),
    SLOT(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, desc, scale_mode[1]),
    SLOT(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, desc, scale_mode[2]),
    SLOT(CUBLASLT_MATMUL_DESC_D_SCALE_MODE, desc, scale_mode[3]),
    SLOT(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, desc, amax_d),
};
static const slot layout_slots[] = {
    SLOT(CUBLASLT_MATRIX_LAYOUT_TYPE, layout, type),
    SLOT(CUBLASLT_MATRIX_LAYOUT_ORDER, layout, order),
    SLOT(CUBLASLT_MATRIX_LAYOUT_ROWS, layout, rows),
    SLOT(CUBLASLT_MATRIX_LAYOUT_COLS, layout, cols),
    SLOT(CUBLASLT_MATRIX_LAYOUT_LD, layout, ld),
    SLOT(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, layout, batch),
    SLOT(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, layout, stride),
    SLOT(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, layout, batch_mode),
};
#undef SLOT
#define NSLOTS(a) (sizeof(a) / sizeof((a)[0]))

static _Atomic int g_live, g_matmuls, g_pedantic;
enum { STREAMS = 16 };
static struct {
  void *stream;
  int matmuls;
} g_streams[STREAMS]; /* the first streams matmuls ran on (a test's calls are serial) */

/* Descriptors and layouts created and not destroyed. */
API int fakecublaslt_live(void) {
  return g_live;
}
API int fakecublaslt_matmuls(void) {
  return g_matmuls;
}
/* Of those, at COMPUTE_32F_PEDANTIC. */
API int fakecublaslt_pedantic_matmuls(void) {
  return g_pedantic;
}
/* Of those, on `stream`. */
API int fakecublaslt_matmuls_on(void *stream) {
  for (int i = 0; i < STREAMS; i++)
    if (g_streams[i].matmuls && g_streams[i].stream == stream) return g_streams[i].matmuls;
  return 0;
}

static void count_on(void *stream) {
  for (int i = 0; i < STREAMS; i++)
    if (!g_streams[i].matmuls || g_streams[i].stream == stream) {
      g_streams[i].stream = stream;
      g_streams[i].matmuls++;
      return;
    }
}

static const slot *find(const slot *s, size_t n, int attr) {
  for (size_t i = 0; i < n; i++)
    if (s[i].attr == attr) return &s[i];
  return NULL;
}

/* cuBLASLt's setters take exactly the attribute's size. */
static cublasStatus_t set(void *obj, const slot *s, size_t n, int attr, const void *buf,
                          size_t size) {
  const slot *at = find(s, n, attr);
  if (!obj || !at || !buf || size != at->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy((char *)obj + at->offset, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

/* ... and the getters: size 0 with `written` asks for the size. */
static cublasStatus_t get(const void *obj, const slot *s, size_t n, int attr, void *buf,
                          size_t size, size_t *written) {
  const slot *at = find(s, n, attr);
  if (!obj || !at) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0 && written) {
    *written = at->size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || size != at->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, (const char *)obj + at->offset, size);
  if (written) *written = size;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  struct cublasLtContext *c = calloc(1, sizeof *c);
  if (!c) return CUBLAS_STATUS_ALLOC_FAILED;
  c->magic = HANDLE_MAGIC;
  *h = c;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  if (!h || h->magic != HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->magic = 0;
  free(h);
  return CUBLAS_STATUS_SUCCESS;
}

static desc *as_desc(cublasLtMatmulDesc_t p) {
  desc *d = (desc *)p;
  return d && d->magic == DESC_MAGIC ? d : NULL;
}

static layout *as_layout(cublasLtMatrixLayout_t p) {
  layout *l = (layout *)p;
  return l && l->magic == LAYOUT_MAGIC ? l : NULL;
}

API cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *ret, cublasComputeType_t compute,
                                            cudaDataType_t scale) {
  if (!ret) return CUBLAS_STATUS_INVALID_VALUE;
  desc *d = calloc(1, sizeof(cublasLtMatmulDescOpaque_t));
  if (!d) return CUBLAS_STATUS_ALLOC_FAILED;
  d->magic = DESC_MAGIC;
  d->compute = compute;
  d->scale_type = scale;
  d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  d->transa = d->transb = d->transc = CUBLAS_OP_N;
  d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  d->bias_type = -1;
  g_live++;
  *ret = (cublasLtMatmulDesc_t)d;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t p) {
  if (!p) return CUBLAS_STATUS_SUCCESS;
  desc *d = as_desc(p);
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  d->magic = 0;
  free(d);
  g_live--;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                  cublasLtMatmulDescAttributes_t attr,
                                                  const void *buf, size_t size) {
  return set(as_desc(d), desc_slots, NSLOTS(desc_slots), attr, buf, size);
}

API cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d,
                                                  cublasLtMatmulDescAttributes_t attr, void *buf,
                                                  size_t size, size_t *written) {
  return get(as_desc(d), desc_slots, NSLOTS(desc_slots), attr, buf, size, written);
}

API cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *ret, cudaDataType type,
                                              uint64_t rows, uint64_t cols, int64_t ld) {
  if (!ret) return CUBLAS_STATUS_INVALID_VALUE;
  layout *l = calloc(1, sizeof(cublasLtMatrixLayoutOpaque_t));
  if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
  l->magic = LAYOUT_MAGIC;
  l->type = (uint32_t)type;
  l->order = CUBLASLT_ORDER_COL;
  l->batch = 1;
  l->batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  g_live++;
  *ret = (cublasLtMatrixLayout_t)l;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t p) {
  if (!p) return CUBLAS_STATUS_SUCCESS;
  layout *l = as_layout(p);
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  l->magic = 0;
  free(l);
  g_live--;
  return CUBLAS_STATUS_SUCCESS;
}

API cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                    cublasLtMatrixLayoutAttribute_t attr,
                                                    const void *buf, size_t size) {
  return set(as_layout(l), layout_slots, NSLOTS(layout_slots), attr, buf, size);
}

API cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l,
                                                    cublasLtMatrixLayoutAttribute_t attr, void *buf,
                                                    size_t size, size_t *written) {
  return get(as_layout(l), layout_slots, NSLOTS(layout_slots), attr, buf, size, written);
}

/* A layout of rows x cols matrices, as many as D's. */
static int shaped(const layout *l, uint64_t rows, uint64_t cols, int32_t batch) {
  return l->rows == rows && l->cols == cols && l->ld >= (int64_t)(rows > 1 ? rows : 1) &&
         l->batch == batch && l->batch >= 1;
}

static int plain_fp32(const layout *l) {
  return l->type == CUDA_R_32F && l->order == CUBLASLT_ORDER_COL &&
         l->batch_mode == CUBLASLT_BATCH_MODE_STRIDED;
}

API cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t dp, const void *alpha,
                                  const void *A, cublasLtMatrixLayout_t ap, const void *B,
                                  cublasLtMatrixLayout_t bp, const void *beta, const void *C,
                                  cublasLtMatrixLayout_t cp, void *D, cublasLtMatrixLayout_t dlp,
                                  const cublasLtMatmulAlgo_t *algo, void *workspace,
                                  size_t workspace_size, cudaStream_t stream) {
  (void)algo, (void)workspace, (void)workspace_size;
  if (!h || h->magic != HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  const desc *d = as_desc(dp);
  const layout *a = as_layout(ap), *b = as_layout(bp), *c = as_layout(cp), *o = as_layout(dlp);
  if (!d || !a || !b || !c || !o || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
  int ops[2] = {d->transa, d->transb};
  for (int i = 0; i < 2; i++)
    if (ops[i] != CUBLAS_OP_N && ops[i] != CUBLAS_OP_T && ops[i] != CUBLAS_OP_C)
      return CUBLAS_STATUS_INVALID_VALUE;
  uint64_t m = o->rows, n = o->cols, k = d->transa == CUBLAS_OP_N ? a->cols : a->rows;
  int na = d->transa == CUBLAS_OP_N, nb = d->transb == CUBLAS_OP_N;
  if (!shaped(a, na ? m : k, na ? k : m, o->batch) ||
      !shaped(b, nb ? k : n, nb ? n : k, o->batch) || !shaped(c, m, n, o->batch) ||
      !shaped(o, m, n, o->batch))
    return CUBLAS_STATUS_INVALID_VALUE;
  if ((d->compute != CUBLAS_COMPUTE_32F && d->compute != CUBLAS_COMPUTE_32F_PEDANTIC) ||
      d->scale_type != CUDA_R_32F || d->pointer_mode != CUBLASLT_POINTER_MODE_HOST ||
      d->transc != CUBLAS_OP_N || d->epilogue != CUBLASLT_EPILOGUE_DEFAULT || d->scale[0] ||
      d->scale[1] || d->scale[2] || d->scale[3] || d->amax_d || !plain_fp32(a) || !plain_fp32(b) ||
      !plain_fp32(c) || !plain_fp32(o))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX) return CUBLAS_STATUS_NOT_SUPPORTED;
  float al = *(const float *)alpha, be = *(const float *)beta;
  if ((k > 0 && (!A || !B)) || !D || (be != 0 && !C)) return CUBLAS_STATUS_INVALID_VALUE;
  g_matmuls++;
  if (d->compute == CUBLAS_COMPUTE_32F_PEDANTIC) g_pedantic++;
  count_on(stream);
  fake_sgemm g = {.ta = na ? CUBLAS_OP_N : CUBLAS_OP_T,
                  .tb = nb ? CUBLAS_OP_N : CUBLAS_OP_T,
                  .m = (int)m,
                  .n = (int)n,
                  .k = (int)k,
                  .lda = (int)a->ld,
                  .ldb = (int)b->ld,
                  .ldc = (int)c->ld,
                  .ldd = (int)o->ld,
                  .batch = o->batch,
                  .alpha = al,
                  .beta = be,
                  .A = A,
                  .B = B,
                  .C = C,
                  .D = D,
                  .sa = a->stride,
                  .sb = b->stride,
                  .sc = c->stride,
                  .sd = o->stride};
  fake_sgemm_on_stream(stream, &g);
  return CUBLAS_STATUS_SUCCESS;
}
