/* simcuda's libcublasLt.so.13: cuBLASLt handles, descriptors, preferences,
 * heuristics and cublasLtMatmul on the CPU. Every simcuda GEMM ends here
 * (libcublas.so.13 calls cublasLtMatmul through the PLT, as the real one
 * does), so this file holds the one GEMM implementation:
 *   D = epilogue(alpha * sA * sB * op(A) op(B) + beta * sC * C + bias) [* sD]
 * with inputs decoded exactly (analysis/convert.h), TF32 / fp16 / bf16 input
 * rounding where the compute type asks for it, fp32 accumulation (fp64 for
 * COMPUTE_64F, int32 for COMPUTE_32I), and one RNE rounding to D's type.
 * Type combinations follow the cuBLASLt documentation's cublasLtMatmul
 * tables (CUDA 13.0 "cublasLtMatmul() regular / FP8 data types"); anything
 * else is refused with CUBLAS_STATUS_NOT_SUPPORTED. Each matmul is one
 * simcuda kernel with the name kernel_names.def gives it. */
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "analysis/convert.h"
#include "simcuda_internal.h"
#include "cublas_status.h"

#define SIM_API __attribute__((visibility("default")))

enum { LT_HANDLE_MAGIC = 0x4c544844, LT_LAYOUT_MAGIC = 0x4c544c59, LT_DESC_MAGIC = 0x4c544453 };
enum { LT_PREF_MAGIC = 0x4c545046 };

struct cublasLtContext {
  uint32_t magic;
};

typedef struct lt_layout {
  uint32_t magic;
  uint32_t type;
  int32_t order;
  int32_t batch_count;
  uint64_t rows, cols;
  int64_t ld;
  int64_t stride;
  int64_t plane_offset;
  uint32_t batch_mode;
} lt_layout;
_Static_assert(sizeof(lt_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout fits");

typedef struct lt_desc {
  uint32_t magic;
  int32_t compute, scale_type, pointer_mode, transa, transb, transc, fill_mode;
  uint32_t epilogue;
  int32_t sm_count, aux_type, bias_type;
  /* Attribute 16: no name in cublasLt.h, yet cuBLASLt 13.1 keeps an int32
   * there (any value accepted, default 0; tests/simcuda/tests/lt_host_fidelity.c). */
  int32_t attr16;
  int32_t a_scale_mode, b_scale_mode, c_scale_mode, d_scale_mode, aux_scale_mode, d_out_scale_mode;
  int8_t fast_accum;
  const void *bias;
  int64_t bias_stride;
  void *aux;
  int64_t aux_ld, aux_stride, alpha_vec_stride;
  const void *a_scale, *b_scale, *c_scale, *d_scale;
  void *amax_d, *aux_scale, *aux_amax, *d_out_scale;
  void *emulation;
} lt_desc;
_Static_assert(sizeof(lt_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "desc fits");

typedef struct lt_pref {
  uint32_t magic;
  uint32_t search_mode, reduction_mask, align_a, align_b, align_c, align_d;
  float max_waves;
  uint64_t max_workspace, impl_mask;
} lt_pref;
_Static_assert(sizeof(lt_pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "pref fits");

/* ---- attribute tables: one place for each attribute's field and size ---- */

typedef struct attr_slot {
  int attr;
  size_t offset, size;
} attr_slot;

#define SLOT(a, type, field)                                                                       \
  { a, offsetof(type, field), sizeof(((type *)0)->field) }
static const attr_slot layout_slots[] = {
    SLOT(CUBLASLT_MATRIX_LAYOUT_TYPE, lt_layout, type),
    SLOT(CUBLASLT_MATRIX_LAYOUT_ORDER, lt_layout, order),
    SLOT(CUBLASLT_MATRIX_LAYOUT_ROWS, lt_layout, rows),
    SLOT(CUBLASLT_MATRIX_LAYOUT_COLS, lt_layout, cols),
    SLOT(CUBLASLT_MATRIX_LAYOUT_LD, lt_layout, ld),
    SLOT(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, lt_layout, batch_count),
    SLOT(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, lt_layout, stride),
    SLOT(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, lt_layout, plane_offset),
    SLOT(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, lt_layout, batch_mode),
};
static const attr_slot desc_slots[] = {
    SLOT(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, lt_desc, compute),
    SLOT(CUBLASLT_MATMUL_DESC_SCALE_TYPE, lt_desc, scale_type),
    SLOT(CUBLASLT_MATMUL_DESC_POINTER_MODE, lt_desc, pointer_mode),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSA, lt_desc, transa),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSB, lt_desc, transb),
    SLOT(CUBLASLT_MATMUL_DESC_TRANSC, lt_desc, transc),
    SLOT(CUBLASLT_MATMUL_DESC_FILL_MODE, lt_desc, fill_mode),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE, lt_desc, epilogue),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_POINTER, lt_desc, bias),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, lt_desc, bias_stride),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, lt_desc, aux),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, lt_desc, aux_ld),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, lt_desc, aux_stride),
    SLOT(CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, lt_desc, alpha_vec_stride),
    SLOT(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, lt_desc, sm_count),
    SLOT(16, lt_desc, attr16),
    SLOT(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, lt_desc, a_scale),
    SLOT(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, lt_desc, b_scale),
    SLOT(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, lt_desc, c_scale),
    SLOT(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, lt_desc, d_scale),
    SLOT(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, lt_desc, amax_d),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, lt_desc, aux_type),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, lt_desc, aux_scale),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, lt_desc, aux_amax),
    SLOT(CUBLASLT_MATMUL_DESC_FAST_ACCUM, lt_desc, fast_accum),
    SLOT(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, lt_desc, bias_type),
    SLOT(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, lt_desc, a_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, lt_desc, b_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, lt_desc, c_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_D_SCALE_MODE, lt_desc, d_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, lt_desc, aux_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, lt_desc, d_out_scale),
    SLOT(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, lt_desc, d_out_scale_mode),
    SLOT(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, lt_desc, emulation),
};
static const attr_slot pref_slots[] = {
    SLOT(CUBLASLT_MATMUL_PREF_SEARCH_MODE, lt_pref, search_mode),
    SLOT(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, lt_pref, max_workspace),
    SLOT(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, lt_pref, reduction_mask),
    SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, lt_pref, align_a),
    SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, lt_pref, align_b),
    SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, lt_pref, align_c),
    SLOT(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, lt_pref, align_d),
    SLOT(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, lt_pref, max_waves),
    SLOT(CUBLASLT_MATMUL_PREF_IMPL_MASK, lt_pref, impl_mask),
};
#undef SLOT

static const attr_slot *find_slot(const attr_slot *slots, size_t n, int attr) {
  for (size_t i = 0; i < n; i++)
    if (slots[i].attr == attr) return &slots[i];
  return NULL;
}

/* Setters take exactly the attribute's size (cuBLASLt: INVALID_VALUE when
 * buf is NULL or sizeInBytes does not match). */
static cublasStatus_t set_attr(void *obj, const attr_slot *slots, size_t n, int attr,
                               const void *buf, size_t size) {
  const attr_slot *s = find_slot(slots, n, attr);
  if (s == NULL || buf == NULL || size != s->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy((char *)obj + s->offset, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

/* Getters: sizeInBytes == 0 with sizeWritten asks for the size; otherwise
 * buf must be non-NULL and sizeInBytes must match; sizeWritten (optional)
 * receives the bytes written. */
static cublasStatus_t get_attr(const void *obj, const attr_slot *slots, size_t n, int attr,
                               void *buf, size_t size, size_t *written) {
  const attr_slot *s = find_slot(slots, n, attr);
  if (s == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0) {
    if (written == NULL) return CUBLAS_STATUS_INVALID_VALUE;
    *written = s->size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == NULL || size != s->size) return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, (const char *)obj + s->offset, s->size);
  if (written != NULL) *written = s->size;
  return CUBLAS_STATUS_SUCCESS;
}

#define NSLOTS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- handle ---- */

SIM_API cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  if (handle == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  struct cublasLtContext *h = calloc(1, sizeof(*h));
  if (h == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  /* The real library initialises the driver here, and fails where it cannot
   * (a fork child of a process that had initialised it). */
  if (cuInit(0) != CUDA_SUCCESS) {
    free(h);
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  h->magic = LT_HANDLE_MAGIC;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == NULL || handle->magic != LT_HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->magic = 0;
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API size_t cublasLtGetVersion(void) {
  return CUBLAS_VERSION; /* cuBLASLt ships with and reports cuBLAS's version */
}

SIM_API size_t cublasLtGetCudartVersion(void) {
  return CUDART_VERSION;
}

SIM_API cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value) {
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

SIM_API const char *cublasLtGetStatusName(cublasStatus_t status) {
  return simcuda_cublas_status_name(status);
}

SIM_API const char *cublasLtGetStatusString(cublasStatus_t status) {
  return simcuda_cublas_status_string(status);
}

/* ---- matrix layout ---- */

static void layout_init(lt_layout *l, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  memset(l, 0, sizeof(*l));
  l->magic = LT_LAYOUT_MAGIC;
  l->type = (uint32_t)type;
  l->order = CUBLASLT_ORDER_COL;
  l->batch_count = 1;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
}

SIM_API cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t layout, size_t size,
                                                         cudaDataType type, uint64_t rows,
                                                         uint64_t cols, int64_t ld) {
  if (layout == NULL || size < sizeof(lt_layout)) return CUBLAS_STATUS_INVALID_VALUE;
  layout_init((lt_layout *)layout, type, rows, cols, ld);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                                  uint64_t rows, uint64_t cols, int64_t ld) {
  if (layout == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  lt_layout *l = calloc(1, sizeof(cublasLtMatrixLayoutOpaque_t));
  if (l == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  layout_init(l, type, rows, cols, ld);
  *layout = (cublasLtMatrixLayout_t)l;
  return CUBLAS_STATUS_SUCCESS;
}

static lt_layout *as_layout(cublasLtMatrixLayout_t p) {
  lt_layout *l = (lt_layout *)p;
  return l != NULL && l->magic == LT_LAYOUT_MAGIC ? l : NULL;
}

SIM_API cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  if (layout == NULL) return CUBLAS_STATUS_SUCCESS;
  lt_layout *l = as_layout(layout);
  if (l == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  l->magic = 0;
  free(l);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                        cublasLtMatrixLayoutAttribute_t attr,
                                                        const void *buf, size_t size) {
  lt_layout *l = as_layout(layout);
  if (l == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return set_attr(l, layout_slots, NSLOTS(layout_slots), attr, buf, size);
}

SIM_API cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                        cublasLtMatrixLayoutAttribute_t attr,
                                                        void *buf, size_t size, size_t *written) {
  lt_layout *l = as_layout(layout);
  if (l == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return get_attr(l, layout_slots, NSLOTS(layout_slots), attr, buf, size, written);
}

/* ---- matmul descriptor ---- */

static void desc_init(lt_desc *d, cublasComputeType_t compute, cudaDataType_t scale) {
  memset(d, 0, sizeof(*d));
  d->magic = LT_DESC_MAGIC;
  d->compute = compute;
  d->scale_type = scale;
  d->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  d->transa = d->transb = d->transc = CUBLAS_OP_N;
  d->fill_mode = CUBLAS_FILL_MODE_FULL;
  d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  d->aux_type = -1;
  d->bias_type = -1;
}

SIM_API cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t desc, size_t size,
                                                       cublasComputeType_t compute,
                                                       cudaDataType_t scale) {
  if (desc == NULL || size < sizeof(lt_desc)) return CUBLAS_STATUS_INVALID_VALUE;
  desc_init((lt_desc *)desc, compute, scale);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                                cublasComputeType_t compute, cudaDataType_t scale) {
  if (desc == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  lt_desc *d = calloc(1, sizeof(cublasLtMatmulDescOpaque_t));
  if (d == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  desc_init(d, compute, scale);
  *desc = (cublasLtMatmulDesc_t)d;
  return CUBLAS_STATUS_SUCCESS;
}

static lt_desc *as_desc(cublasLtMatmulDesc_t p) {
  lt_desc *d = (lt_desc *)p;
  return d != NULL && d->magic == LT_DESC_MAGIC ? d : NULL;
}

SIM_API cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  if (desc == NULL) return CUBLAS_STATUS_SUCCESS;
  lt_desc *d = as_desc(desc);
  if (d == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  d->magic = 0;
  free(d);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                      cublasLtMatmulDescAttributes_t attr,
                                                      const void *buf, size_t size) {
  lt_desc *d = as_desc(desc);
  if (d == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return set_attr(d, desc_slots, NSLOTS(desc_slots), attr, buf, size);
}

SIM_API cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc,
                                                      cublasLtMatmulDescAttributes_t attr,
                                                      void *buf, size_t size, size_t *written) {
  lt_desc *d = as_desc(desc);
  if (d == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return get_attr(d, desc_slots, NSLOTS(desc_slots), attr, buf, size, written);
}

/* ---- preference ---- */

static void pref_init(lt_pref *p) {
  memset(p, 0, sizeof(*p));
  p->magic = LT_PREF_MAGIC;
  p->search_mode = CUBLASLT_SEARCH_BEST_FIT;
  p->reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  p->align_a = p->align_b = p->align_c = p->align_d = 256;
  p->impl_mask = UINT64_MAX;
}

SIM_API cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                                             size_t size) {
  if (pref == NULL || size < sizeof(lt_pref)) return CUBLAS_STATUS_INVALID_VALUE;
  pref_init((lt_pref *)pref);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  if (pref == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  lt_pref *p = calloc(1, sizeof(cublasLtMatmulPreferenceOpaque_t));
  if (p == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  pref_init(p);
  *pref = (cublasLtMatmulPreference_t)p;
  return CUBLAS_STATUS_SUCCESS;
}

static lt_pref *as_pref(cublasLtMatmulPreference_t p) {
  lt_pref *q = (lt_pref *)p;
  return q != NULL && q->magic == LT_PREF_MAGIC ? q : NULL;
}

SIM_API cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  if (pref == NULL) return CUBLAS_STATUS_SUCCESS;
  lt_pref *p = as_pref(pref);
  if (p == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  p->magic = 0;
  free(p);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
    size_t size) {
  lt_pref *p = as_pref(pref);
  if (p == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return set_attr(p, pref_slots, NSLOTS(pref_slots), attr, buf, size);
}

SIM_API cublasStatus_t cublasLtMatmulPreferenceGetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, void *buf,
    size_t size, size_t *written) {
  lt_pref *p = as_pref(pref);
  if (p == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return get_attr(p, pref_slots, NSLOTS(pref_slots), attr, buf, size, written);
}

/* ---- the matmul ---- */

static mp_dtype mp_of(int t) {
  switch (t) {
  case CUDA_R_64F:
    return MP_FP64;
  case CUDA_R_32F:
    return MP_FP32;
  case CUDA_R_16F:
    return MP_FP16;
  case CUDA_R_16BF:
    return MP_BF16;
  case CUDA_R_8F_E4M3:
    return MP_FP8_E4M3;
  case CUDA_R_8F_E5M2:
    return MP_FP8_E5M2;
  case CUDA_R_8I:
    return MP_INT8;
  case CUDA_R_32I:
    return MP_INT32;
  default:
    return MP_DTYPE_INVALID;
  }
}

static size_t elem_size(int t) {
  mp_dtype d = mp_of(t);
  return d == MP_DTYPE_INVALID ? 0 : mp_dtype_size(d);
}

static int is_fp8(int t) {
  return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2;
}

static int is_16(int t) {
  return t == CUDA_R_16F || t == CUDA_R_16BF;
}

typedef enum acc_kind { ACC_F32, ACC_F64, ACC_I32 } acc_kind;
typedef enum in_round { IN_EXACT, IN_TF32, IN_FP16, IN_BF16 } in_round;

/* Everything cublasLtMatmul and the heuristic need to know, checked once. */
typedef struct lt_plan {
  const lt_desc *desc;
  const lt_layout *a, *b, *c, *d;
  uint64_t m, n, k;
  int32_t batch;
  acc_kind acc;
  in_round round;
  int bias_type;
  int relu, gelu, bias;
  /* The aux epilogues (cublasLt.h): RELU_AUX* write the ReLU bit mask
   * (mask), GELU_AUX* the GELU's input (aux_out, of aux_type); DRELU* read
   * the mask (drelu), DGELU* the GELU input (dgelu) and multiply the
   * product by the activation's derivative there; *_BGRAD also write the
   * bias gradient, D's row sums (bgrad). */
  int mask, aux_out, drelu, dgelu, bgrad, aux_type;
  int blk; /* block-scaled A/B: K elements per scale (16 NVFP4, 32 MXFP8, 128), 0: scalar */
} lt_plan;

static int compute_base(int compute) {
  switch (compute) {
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    return CUBLAS_COMPUTE_16F;
  case CUBLAS_COMPUTE_32F_PEDANTIC:
    return CUBLAS_COMPUTE_32F;
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    return CUBLAS_COMPUTE_64F;
  case CUBLAS_COMPUTE_32I_PEDANTIC:
    return CUBLAS_COMPUTE_32I;
  default:
    return compute;
  }
}

/* cuBLASLt docs, cublasLtMatmul type tables (CUDA 13.0). Returns SUCCESS or
 * NOT_SUPPORTED and fills acc / round. */
static cublasStatus_t check_types(lt_plan *p) {
  int at = (int)p->a->type, bt = (int)p->b->type, ct = (int)p->c->type, dt = (int)p->d->type;
  int compute = compute_base(p->desc->compute), scale = p->desc->scale_type;
  p->round = IN_EXACT;
  if (at == CUDA_R_4F_E2M1 || bt == CUDA_R_4F_E2M1) {
    /* NVFP4 (Blackwell): e2m1 A and B, fp32 compute and scale, D = C of
     * bf16/fp16/fp32 (an fp4 D needs output quantization: not emulated), TN. */
    if (at != bt || simcuda_device_sm() < 100) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ct != dt || (ct != CUDA_R_32F && !is_16(ct))) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (p->desc->transa != CUBLAS_OP_T || p->desc->transb != CUBLAS_OP_N)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    p->acc = ACC_F32;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (is_fp8(at) || is_fp8(bt)) {
    /* FP8 table: e4m3/e5m2 in any pairing but e5m2 x e5m2; fp32 compute and
     * scale; C is bf16/fp16/fp32; D is C's type, or fp8 when C is 16-bit.
     * On sm_90 only the TN layout (A transposed, B not) is implemented. */
    if (!is_fp8(at) || !is_fp8(bt) || (at == CUDA_R_8F_E5M2 && bt == CUDA_R_8F_E5M2))
      return CUBLAS_STATUS_NOT_SUPPORTED;
    if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ct == CUDA_R_32F) {
      if (dt != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    } else if (is_16(ct)) {
      int d_fp8_ok = dt == CUDA_R_8F_E4M3 ||
                     (dt == CUDA_R_8F_E5M2 && (at == CUDA_R_8F_E5M2 || bt == CUDA_R_8F_E5M2));
      if (dt != ct && !d_fp8_ok) return CUBLAS_STATUS_NOT_SUPPORTED;
    } else {
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (p->desc->transa != CUBLAS_OP_T || p->desc->transb != CUBLAS_OP_N)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    p->acc = ACC_F32;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (at != bt || ct != dt) return CUBLAS_STATUS_NOT_SUPPORTED;
  switch (compute) {
  case CUBLAS_COMPUTE_16F:
    if (scale != CUDA_R_16F || at != CUDA_R_16F || ct != CUDA_R_16F)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    p->acc = ACC_F32; /* simcuda accumulates fp16-compute GEMMs in fp32 (docs/simcuda.md) */
    return CUBLAS_STATUS_SUCCESS;
  case CUBLAS_COMPUTE_32I:
    if (scale != CUDA_R_32I || at != CUDA_R_8I || ct != CUDA_R_32I)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    p->acc = ACC_I32;
    return CUBLAS_STATUS_SUCCESS;
  case CUBLAS_COMPUTE_64F:
    if (scale != CUDA_R_64F || at != CUDA_R_64F || ct != CUDA_R_64F)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    p->acc = ACC_F64;
    return CUBLAS_STATUS_SUCCESS;
  case CUBLAS_COMPUTE_32F:
    if (scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (at == CUDA_R_32F && ct == CUDA_R_32F) break;
    if (is_16(at) && (ct == at || ct == CUDA_R_32F)) break;
    if (at == CUDA_R_8I && ct == CUDA_R_32F) break; /* cublasSgemmEx / GemmEx int8 -> fp32 */
    return CUBLAS_STATUS_NOT_SUPPORTED;
  case CUBLAS_COMPUTE_32F_FAST_TF32:
  case CUBLAS_COMPUTE_32F_FAST_16F:
  case CUBLAS_COMPUTE_32F_FAST_16BF:
    if (scale != CUDA_R_32F || at != CUDA_R_32F || ct != CUDA_R_32F)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    p->round = compute == CUBLAS_COMPUTE_32F_FAST_TF32  ? IN_TF32
               : compute == CUBLAS_COMPUTE_32F_FAST_16F ? IN_FP16
                                                        : IN_BF16;
    break;
  default:
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  p->acc = ACC_F32;
  return CUBLAS_STATUS_SUCCESS;
}

static int layout_ok(const lt_layout *l, uint64_t rows, uint64_t cols) {
  if (l->rows != rows || l->cols != cols) return 0;
  uint64_t need = l->order == CUBLASLT_ORDER_COL ? rows : cols;
  return l->ld >= 1 && (uint64_t)l->ld >= need;
}

static int is_narrow(int t) {
  return is_fp8(t) || t == CUDA_R_4F_E2M1;
}

/* Is `elems` elements of the type a whole number of 16-byte units? */
static int whole_16_bytes(int type, int64_t elems) {
  if (type == CUDA_R_4F_E2M1) return elems % 32 == 0; /* two a byte */
  return (elems * (int64_t)elem_size(type)) % 16 == 0;
}

/* The FP8 (and FP4) kernels' layout requirements, cuBLAS documentation,
 * cublasLtMatmul, "To use FP8 kernels, the following set of requirements
 * must be satisfied": A transposed and B not (check_types), "all matrix
 * dimensions must meet the optimal requirements listed in Tensor Core Usage
 * (i.e. pointers and matrix dimension must support 16-byte alignment)".
 * Encoded as: A and B column-major (only the column-major TN form runs:
 * tensorflow/tensorflow#59515 canonicalizes fp8 operands to it), every
 * leading dimension and batch stride a whole number of 16 bytes (lda % 16
 * for fp8, NVIDIA/TransformerEngine#2894), and m and k multiples of 16:
 * cuBLASLt's own log says "Unsupported M dimension for FP8 matrix
 * multiplication. M must be divisible by 16" (vllm-project/vllm#4691), and
 * PyTorch's _scaled_mm requires of mat2 (K x N, cuBLAS's k x m after its
 * operand swap) both dimensions divisible by 16; n is free (PyTorch's M).
 * Else NOT_SUPPORTED, which the heuristic returns with no result. The
 * pointers' 16-byte alignment is checked by cublasLtMatmul. */
static cublasStatus_t fp8_layouts_ok(const lt_plan *p) {
  if (!is_narrow((int)p->a->type)) return CUBLAS_STATUS_SUCCESS;
  if (p->a->order != CUBLASLT_ORDER_COL || p->b->order != CUBLASLT_ORDER_COL)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (p->m % 16 != 0 || p->k % 16 != 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  const lt_layout *ls[4] = {p->a, p->b, p->c, p->d};
  for (int i = 0; i < 4; i++) {
    int t = (int)ls[i]->type;
    if (!whole_16_bytes(t, ls[i]->ld)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ls[i]->batch_mode == CUBLASLT_BATCH_MODE_STRIDED && ls[i]->batch_count > 1 &&
        !whole_16_bytes(t, ls[i]->stride))
      return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* A/B scale modes (cublasLtMatmulMatrixScale_t). Emulated: scalar scales;
 * on sm_90 (the default part) the 128-element modes Hopper has, A and B each
 * VEC128_32F (1x128) or BLK128x128_32F, not both 128x128; on sm_100
 * (SIMCUDA_SM=100) MXFP8, VEC32_UE8M0 on both A and B with K a multiple of
 * 32, and NVFP4, VEC16_UE4M3 on both e2m1 A and B with K a multiple of 16.
 * Refused with NOT_SUPPORTED, as a device without the kernel does:
 * OUTER_VEC_32F, block-scaled C/D/aux (output quantization), an fp8 or fp4
 * D, a batch with block-scaled inputs, e2m1 data without its block scales. */
static cublasStatus_t plan_scales(lt_plan *p) {
  const lt_desc *d = p->desc;
  int am = d->a_scale_mode, bm = d->b_scale_mode;
  p->blk = 0;
  if (d->c_scale_mode || d->d_scale_mode || d->aux_scale_mode || d->d_out_scale_mode ||
      d->d_out_scale != NULL)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  int fp4 = (int)p->a->type == CUDA_R_4F_E2M1;
  if (am == CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F &&
      bm == CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F)
    return fp4 ? CUBLAS_STATUS_NOT_SUPPORTED /* NVFP4 needs its block scales */
               : CUBLAS_STATUS_SUCCESS;
  if ((!is_fp8((int)p->a->type) && !fp4) || is_fp8((int)p->d->type) || p->batch != 1)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  int sm = simcuda_device_sm();
  int is128a = am == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F ||
               am == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  int is128b = bm == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F ||
               bm == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
  if (fp4) {
    if (am != CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 ||
        bm != CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 || p->k % 16 != 0)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    p->blk = 16;
  } else if (am == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 &&
             bm == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0) {
    if (sm < 100 || p->k % 32 != 0) return CUBLAS_STATUS_NOT_SUPPORTED;
    p->blk = 32;
  } else if (is128a && is128b &&
             !(am == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F &&
               bm == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F)) {
    if (sm != 90) return CUBLAS_STATUS_NOT_SUPPORTED;
    p->blk = 128;
  } else {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* The aux buffer (cublasLt.h, EPILOGUE_AUX_*): AUX_LD at least D's rows, a
 * multiple of 128 (bits, the ReLU mask) or 8 (elements, the GELU input), as
 * the batch stride; the GELU input of AUX_DATA_TYPE, by default D's, another
 * only for an e4m3 FP8 GELU_AUX (fp16 or e4m3 with an fp16 C, bf16 with a
 * bf16 C; the cuBLAS documentation), else INVALID_VALUE; the ReLU mask has
 * no data type. An fp8 GELU input read back (DGELU): not simulated. */
static cublasStatus_t plan_aux(lt_plan *p) {
  const lt_desc *d = p->desc;
  int bits = p->mask || p->drelu;
  if (!bits && !p->aux_out && !p->dgelu) return CUBLAS_STATUS_SUCCESS;
  int64_t unit = bits ? 128 : 8;
  if (d->aux_ld < (int64_t)p->m || d->aux_ld % unit != 0 || d->aux_stride % unit != 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (bits) return d->aux_type == -1 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
  int dt = (int)p->d->type, ct = (int)p->c->type, at = d->aux_type == -1 ? dt : d->aux_type;
  int fp8 = dt == CUDA_R_8F_E4M3 && (int)p->a->type == CUDA_R_8F_E4M3 &&
            (int)p->b->type == CUDA_R_8F_E4M3 && d->epilogue == CUBLASLT_EPILOGUE_GELU_AUX;
  int other = fp8 && ((ct == CUDA_R_16F && (at == CUDA_R_16F || at == CUDA_R_8F_E4M3)) ||
                      (ct == CUDA_R_16BF && at == CUDA_R_16BF));
  if (at != dt && !other) return CUBLAS_STATUS_INVALID_VALUE;
  if (p->dgelu && is_fp8(at)) return CUBLAS_STATUS_NOT_SUPPORTED;
  p->aux_type = at;
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t plan_matmul(lt_plan *p, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t ad,
                                  cublasLtMatrixLayout_t bd, cublasLtMatrixLayout_t cd,
                                  cublasLtMatrixLayout_t dd) {
  memset(p, 0, sizeof(*p));
  p->desc = as_desc(desc);
  p->a = as_layout(ad);
  p->b = as_layout(bd);
  p->c = as_layout(cd);
  p->d = as_layout(dd);
  if (p->desc == NULL || p->a == NULL || p->b == NULL || p->c == NULL || p->d == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  const lt_desc *d = p->desc;
  const lt_layout *ls[4] = {p->a, p->b, p->c, p->d};
  for (int i = 0; i < 4; i++) {
    if (ls[i]->order != CUBLASLT_ORDER_COL && ls[i]->order != CUBLASLT_ORDER_ROW)
      return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ls[i]->plane_offset != 0) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (ls[i]->batch_mode != CUBLASLT_BATCH_MODE_STRIDED &&
        ls[i]->batch_mode != CUBLASLT_BATCH_MODE_POINTER_ARRAY)
      return CUBLAS_STATUS_INVALID_VALUE;
    if (ls[i]->batch_count < 1 || ls[i]->batch_count != p->d->batch_count)
      return CUBLAS_STATUS_INVALID_VALUE;
  }
  int ops[2] = {d->transa, d->transb};
  for (int i = 0; i < 2; i++)
    if (ops[i] != CUBLAS_OP_N && ops[i] != CUBLAS_OP_T && ops[i] != CUBLAS_OP_C)
      return CUBLAS_STATUS_INVALID_VALUE;
  if (d->transc != CUBLAS_OP_N || d->fill_mode != CUBLAS_FILL_MODE_FULL)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  p->m = p->d->rows;
  p->n = p->d->cols;
  p->k = d->transa == CUBLAS_OP_N ? p->a->cols : p->a->rows;
  p->batch = p->d->batch_count;
  uint64_t a_rows = d->transa == CUBLAS_OP_N ? p->m : p->k;
  uint64_t a_cols = d->transa == CUBLAS_OP_N ? p->k : p->m;
  uint64_t b_rows = d->transb == CUBLAS_OP_N ? p->k : p->n;
  uint64_t b_cols = d->transb == CUBLAS_OP_N ? p->n : p->k;
  if (!layout_ok(p->a, a_rows, a_cols) || !layout_ok(p->b, b_rows, b_cols) ||
      !layout_ok(p->c, p->m, p->n) || !layout_ok(p->d, p->m, p->n))
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasStatus_t st = check_types(p);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  st = fp8_layouts_ok(p);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  st = plan_scales(p);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (d->pointer_mode < CUBLASLT_POINTER_MODE_HOST ||
      d->pointer_mode > CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  switch (d->epilogue) {
  case CUBLASLT_EPILOGUE_DEFAULT:
    break;
  case CUBLASLT_EPILOGUE_RELU:
    p->relu = 1;
    break;
  case CUBLASLT_EPILOGUE_BIAS:
    p->bias = 1;
    break;
  case CUBLASLT_EPILOGUE_RELU_BIAS:
    p->relu = p->bias = 1;
    break;
  case CUBLASLT_EPILOGUE_GELU:
    p->gelu = 1;
    break;
  case CUBLASLT_EPILOGUE_GELU_BIAS:
    p->gelu = p->bias = 1;
    break;
  case CUBLASLT_EPILOGUE_RELU_AUX:
    p->relu = p->mask = 1;
    break;
  case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
    p->relu = p->mask = p->bias = 1;
    break;
  case CUBLASLT_EPILOGUE_GELU_AUX:
    p->gelu = p->aux_out = 1;
    break;
  case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
    p->gelu = p->aux_out = p->bias = 1;
    break;
  case CUBLASLT_EPILOGUE_DRELU:
    p->drelu = 1;
    break;
  case CUBLASLT_EPILOGUE_DRELU_BGRAD:
    p->drelu = p->bgrad = 1;
    break;
  case CUBLASLT_EPILOGUE_DGELU:
    p->dgelu = 1;
    break;
  case CUBLASLT_EPILOGUE_DGELU_BGRAD:
    p->dgelu = p->bgrad = 1;
    break;
  default:
    return CUBLAS_STATUS_NOT_SUPPORTED; /* BGRADA, BGRADB: not simulated */
  }
  st = plan_aux(p);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (p->bias || p->bgrad) {
    if (p->acc != ACC_F32) return CUBLAS_STATUS_NOT_SUPPORTED;
    /* BIAS_DATA_TYPE's default (cublasLt.h): D's type, but for FP8 kernels
     * bf16 with an fp32 D and C's type with an fp8 D (the cuBLAS
     * documentation's FP8 table). */
    int dt = (int)p->d->type;
    int fp8_kernel = is_fp8((int)p->a->type);
    int def = fp8_kernel && dt == CUDA_R_32F ? CUDA_R_16BF : is_fp8(dt) ? (int)p->c->type : dt;
    p->bias_type = d->bias_type == -1 ? def : d->bias_type;
    if (p->bias_type != CUDA_R_32F && p->bias_type != CUDA_R_16F && p->bias_type != CUDA_R_16BF)
      return CUBLAS_STATUS_NOT_SUPPORTED;
  } else if ((p->relu || p->gelu || p->drelu || p->dgelu) && p->acc != ACC_F32) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* Address of matrix `batch` of an operand, for either batch mode. */
static const void *batch_base(const lt_layout *l, const void *ptr, int32_t batch) {
  if (l->batch_mode == CUBLASLT_BATCH_MODE_POINTER_ARRAY) return ((const void *const *)ptr)[batch];
  return (const char *)ptr + (int64_t)batch * l->stride * (int64_t)elem_size((int)l->type);
}

static uint64_t elem_index(const lt_layout *l, uint64_t row, uint64_t col) {
  return l->order == CUBLASLT_ORDER_COL ? row + col * (uint64_t)l->ld : row * (uint64_t)l->ld + col;
}

static double round_input(double v, in_round r) {
  switch (r) {
  case IN_TF32:
    return mp_float_to_tf32((float)v);
  case IN_FP16:
    return mp_fp16_to_float(mp_float_to_fp16((float)v));
  case IN_BF16:
    return mp_bf16_to_float(mp_float_to_bf16((float)v));
  default:
    return v;
  }
}

static double read_scalar(int type, const void *p) {
  switch (type) {
  case CUDA_R_16F:
    return mp_fp16_to_float(*(const uint16_t *)p);
  case CUDA_R_32F:
    return *(const float *)p;
  case CUDA_R_64F:
    return *(const double *)p;
  case CUDA_R_32I:
    return *(const int32_t *)p;
  default:
    return NAN;
  }
}

/* Is any of the m values of each of `batch` vectors (`stride` values apart) non-zero? */
static bool any_nonzero(int type, const void *v, uint64_t m, int32_t batch, int64_t stride) {
  size_t es = elem_size(type);
  for (int32_t b = 0; b < (stride != 0 ? batch : 1); b++)
    for (uint64_t i = 0; i < m; i++)
      if (read_scalar(type, (const char *)v + ((int64_t)b * stride + (int64_t)i) * (int64_t)es) !=
          0)
        return true;
  return false;
}

static float gelu_tanh(float x) {
  /* cuBLASLt's GELU is the tanh approximation. */
  const float c = 0.7978845608028654f; /* sqrt(2/pi) */
  return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

/* The derivative of gelu_tanh (DGELU). */
static float dgelu_tanh(float x) {
  const float c = 0.7978845608028654f;
  float th = tanhf(c * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * c * (1.0f + 3.0f * 0.044715f * x * x);
}

static void store_out(int type, void *base, uint64_t idx, double v) {
  switch (type) {
  /* fp8 outputs saturate to the largest finite value (the hardware's
   * cvt.rn.satfinite), as cuBLASLt's fp8 epilogue does. */
  case CUDA_R_8F_E4M3:
    ((uint8_t *)base)[idx] = mp_float_to_e4m3((float)v, true);
    break;
  case CUDA_R_8F_E5M2:
    ((uint8_t *)base)[idx] = mp_float_to_e5m2((float)v, true);
    break;
  case CUDA_R_32I: {
    double c = v > 2147483647.0 ? 2147483647.0 : v < -2147483648.0 ? -2147483648.0 : v;
    ((int32_t *)base)[idx] = (int32_t)c;
    break;
  }
  default:
    mp_store(mp_of(type), base, idx, v);
    break;
  }
}

/* alpha and beta: scalars, or in the DEVICE_VECTOR pointer modes one value
 * per row of D (cublasLt.h), each batch member's alphas ALPHA_VECTOR_BATCH_
 * STRIDE values past the previous member's. A row whose alpha is 0 reads
 * neither A nor B (C = beta C, the BLAS rule), one whose beta is 0 not C. */
typedef struct lt_args {
  double alpha, beta;           /* scalars, already multiplied by the A*B and C scales */
  double ab_scale, c_scale;     /* those scales, for vector alphas and betas */
  const char *alpha_v, *beta_v; /* vectors (this batch member's); NULL: the scalar */
  int64_t alpha_v_stride;       /* values between batch members' alpha vectors */
  int scale_type;
  bool any_alpha, any_beta; /* some alpha / beta non-zero: A and B / C are read */
  double d_scale;
  double aux_scale;  /* an fp8 GELU input's AUX_SCALE */
  float *aux_amax;   /* max |GELU input| so far (AUX_AMAX_POINTER) */
  int64_t aux_first; /* this batch member's first aux element (bit) */
  float *dsum;       /* this batch member's bias gradient (D's row sums), or NULL */
  const void *A, *B, *C;
  void *D;
} lt_args;

/* Dot products of row i of op(A) with columns j0 .. j0+jn-1 of op(B), each
 * accumulated in k order in the accumulator type; four columns at a time so
 * the four independent chains overlap (same results as one at a time). */
static void dot_block(acc_kind kind, const void *ao, const void *bo, uint64_t i, uint64_t j0,
                      uint64_t jn, uint64_t k, double acc[4]) {
  if (kind == ACC_F32) {
    const float *ar = (const float *)ao + i * k, *b = (const float *)bo + j0 * k;
    float s[4] = {0, 0, 0, 0};
    if (jn == 4) {
      for (uint64_t q = 0; q < k; q++) {
        float a = ar[q];
        s[0] += a * b[q];
        s[1] += a * b[k + q];
        s[2] += a * b[2 * k + q];
        s[3] += a * b[3 * k + q];
      }
    } else {
      for (uint64_t t = 0; t < jn; t++)
        for (uint64_t q = 0; q < k; q++)
          s[t] += ar[q] * b[t * k + q];
    }
    for (uint64_t t = 0; t < jn; t++)
      acc[t] = s[t];
  } else if (kind == ACC_F64) {
    const double *ar = (const double *)ao + i * k, *b = (const double *)bo + j0 * k;
    double s[4] = {0, 0, 0, 0};
    for (uint64_t q = 0; q < k; q++)
      for (uint64_t t = 0; t < jn; t++)
        s[t] += ar[q] * b[t * k + q];
    for (uint64_t t = 0; t < jn; t++)
      acc[t] = s[t];
  } else {
    /* int8 operands were gathered as exact floats; int32 accumulation wraps. */
    const float *ar = (const float *)ao + i * k, *b = (const float *)bo + j0 * k;
    for (uint64_t t = 0; t < jn; t++) {
      uint32_t s = 0;
      for (uint64_t q = 0; q < k; q++)
        s += (uint32_t)((int32_t)ar[q] * (int32_t)b[t * k + q]);
      acc[t] = (int32_t)s;
    }
  }
}

/* alpha, beta * C, the epilogue, amax, the D scale and the one rounding into
 * D for element (i, j) of one batch member. */
static void finish_one(const lt_plan *p, const lt_args *x, const void *C, void *D, const void *bias,
                       uint64_t i, uint64_t j, double acc, float *amax) {
  int dt = (int)p->d->type;
  mp_dtype ct = mp_of((int)p->c->type);
  size_t es = elem_size(x->scale_type);
  double alpha =
      x->alpha_v ? read_scalar(x->scale_type, x->alpha_v + i * es) * x->ab_scale : x->alpha;
  double beta = x->beta_v ? read_scalar(x->scale_type, x->beta_v + i * es) * x->c_scale : x->beta;
  if (alpha == 0) acc = 0; /* A and B not referenced: their NaN or Inf reach nothing */
  if (beta == 0) C = NULL; /* C not read */
  double out;
  if (p->acc == ACC_F64) {
    out = alpha * acc;
    if (C != NULL) out += beta * mp_load(ct, C, elem_index(p->c, i, j));
  } else if (p->acc == ACC_I32) {
    out = alpha * acc;
    if (C != NULL) out += beta * (double)((const int32_t *)C)[elem_index(p->c, i, j)];
  } else {
    float t = (float)alpha * (float)acc;
    if (C != NULL) t += (float)beta * (float)mp_load(ct, C, elem_index(p->c, i, j));
    if (bias != NULL) t += (float)mp_load(mp_of(p->bias_type), bias, i);
    if (p->mask || p->aux_out || p->drelu || p->dgelu) {
      uint64_t ai = (uint64_t)(x->aux_first + (int64_t)i + (int64_t)j * p->desc->aux_ld);
      uint8_t *bits = p->desc->aux, bit = (uint8_t)(1u << (ai % 8));
      if (p->mask) bits[ai / 8] = t > 0 ? bits[ai / 8] | bit : bits[ai / 8] & (uint8_t)~bit;
      if (p->drelu && !(bits[ai / 8] & bit)) t = 0;
      if (p->dgelu) t *= dgelu_tanh((float)mp_load(mp_of(p->aux_type), p->desc->aux, ai));
      if (p->aux_out) {
        if (fabsf(t) > *x->aux_amax) *x->aux_amax = fabsf(t);
        store_out(p->aux_type, p->desc->aux, ai, is_fp8(p->aux_type) ? t * x->aux_scale : t);
      }
    }
    if (p->relu) t = t > 0 ? t : 0;
    if (p->gelu) t = gelu_tanh(t);
    if (x->dsum) x->dsum[i] += t;
    if (fabsf(t) > *amax) *amax = fabsf(t); /* NaN compares false: ignored, as fmaxf */
    if (is_fp8(dt)) t *= (float)x->d_scale;
    out = t;
  }
  store_out(dt, D, elem_index(p->d, i, j), out);
}

/* Element idx of an operand: fp4 e2m1 is packed two to a byte, the first
 * in the low nibble; every other type through analysis/convert.h. */
static double load_operand(int type, const void *base, uint64_t idx) {
  if (type != CUDA_R_4F_E2M1) return mp_load(mp_of(type), base, idx);
  static const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  uint8_t byte = ((const uint8_t *)base)[idx / 2];
  uint8_t v = idx % 2 ? byte >> 4 : byte & 0xf;
  return (v & 8 ? -1.0 : 1.0) * e2m1[v & 7];
}

/* The scale of block `blk` (along K) of row `r` of op(A) or column `r` of
 * op(B), for an operand with `outer` rows / columns, as the cuBLASLt
 * documentation lays the scale tensors out (scaling factors layouts):
 *   VEC32_UE8M0  128x4 tiles of bytes, tile (r / 128, blk / 4) in row-major
 *                tile order, byte (r % 32) * 16 + (r % 128) / 32 * 4 + blk % 4;
 *                value 2^(byte - 127), 0xff is NaN;
 *   VEC16_UE4M3  the same tiles over blocks of 16, e4m3 bytes (sign ignored);
 *   VEC128_32F   float [r + blk * outer] (outer dimension contiguous);
 *   BLK128x128   float [blk + (r / 128) * L4], L4 = ceil(K / 128) rounded up to 4. */
static float block_scale(int mode, const void *scales, uint64_t r, uint64_t blk, uint64_t outer,
                         uint64_t k) {
  switch (mode) {
  case CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3: {
    uint64_t col_tiles = (k / 16 + 3) / 4;
    uint64_t tile = (r / 128) * col_tiles + blk / 4;
    uint8_t e =
        ((const uint8_t *)scales)[tile * 512 + (r % 32) * 16 + (r % 128) / 32 * 4 + blk % 4];
    return mp_e4m3_to_float(e & 0x7f); /* UE4M3: e4m3 without its sign */
  }
  case CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0: {
    uint64_t col_tiles = (k / 32 + 3) / 4;
    uint64_t tile = (r / 128) * col_tiles + blk / 4;
    uint8_t e =
        ((const uint8_t *)scales)[tile * 512 + (r % 32) * 16 + (r % 128) / 32 * 4 + blk % 4];
    return e == 0xff ? NAN : ldexpf(1.0f, (int)e - 127);
  }
  case CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F:
    return ((const float *)scales)[r + blk * outer];
  default: { /* BLK128x128_32F */
    uint64_t l4 = ((k + 127) / 128 + 3) / 4 * 4;
    return ((const float *)scales)[blk + (r / 128) * l4];
  }
  }
}

/* Block-scaled dot product: each K block is summed in fp32 and multiplied by
 * the product of its A and B scales before it joins the fp32 total (how the
 * kernels promote block partial sums). */
static double dot_block_scaled(const lt_plan *p, const float *ar, const float *bc, uint64_t i,
                               uint64_t j) {
  const lt_desc *d = p->desc;
  float total = 0;
  for (uint64_t q0 = 0, blk = 0; q0 < p->k; q0 += (uint64_t)p->blk, blk++) {
    uint64_t q1 = q0 + (uint64_t)p->blk < p->k ? q0 + (uint64_t)p->blk : p->k;
    float part = 0;
    for (uint64_t q = q0; q < q1; q++)
      part += ar[q] * bc[q];
    float sa = block_scale(d->a_scale_mode, d->a_scale, i, blk, p->m, p->k);
    float sb = block_scale(d->b_scale_mode, d->b_scale, j, blk, p->n, p->k);
    total += sa * sb * part;
  }
  return total;
}

/* One matrix of the batch. Operands are gathered into op() order first so
 * the inner product runs over contiguous memory. */
static cublasStatus_t run_one(const lt_plan *p, const lt_args *xa, int32_t bi, float *amax) {
  const lt_desc *d = p->desc;
  lt_args xb = *xa, *x = &xb; /* this batch member's alpha vector */
  if (x->alpha_v) x->alpha_v += (int64_t)bi * x->alpha_v_stride * (int64_t)elem_size(x->scale_type);
  uint64_t m = p->m, n = p->n, k = p->k;
  /* alpha == 0 everywhere: A and B are not read (their pointers may even be
   * NULL in a pointer array). */
  const void *A = x->any_alpha ? batch_base(p->a, x->A, bi) : NULL;
  const void *B = x->any_alpha ? batch_base(p->b, x->B, bi) : NULL;
  const void *C = x->any_beta ? batch_base(p->c, x->C, bi) : NULL;
  void *D = (void *)batch_base(p->d, x->D, bi);
  size_t wsz = p->acc == ACC_F64 ? sizeof(double) : sizeof(float);
  size_t an = m * k > 0 ? m * k : 1, bn = n * k > 0 ? n * k : 1;
  void *ao = calloc(an, wsz), *bo = calloc(bn, wsz);
  if (ao == NULL || bo == NULL) {
    free(ao);
    free(bo);
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  for (uint64_t i = 0; i < m && A != NULL; i++)
    for (uint64_t q = 0; q < k; q++) {
      uint64_t idx = d->transa == CUBLAS_OP_N ? elem_index(p->a, i, q) : elem_index(p->a, q, i);
      double v = round_input(load_operand((int)p->a->type, A, idx), p->round);
      if (p->acc == ACC_F64)
        ((double *)ao)[i * k + q] = v;
      else
        ((float *)ao)[i * k + q] = (float)v;
    }
  for (uint64_t j = 0; j < n && B != NULL; j++)
    for (uint64_t q = 0; q < k; q++) {
      uint64_t idx = d->transb == CUBLAS_OP_N ? elem_index(p->b, q, j) : elem_index(p->b, j, q);
      double v = round_input(load_operand((int)p->b->type, B, idx), p->round);
      if (p->acc == ACC_F64)
        ((double *)bo)[j * k + q] = v;
      else
        ((float *)bo)[j * k + q] = (float)v;
    }
  const void *bias = NULL;
  if (p->bias)
    bias = (const char *)d->bias + (int64_t)bi * d->bias_stride * (int64_t)elem_size(p->bias_type);
  x->aux_first = (int64_t)bi * d->aux_stride;
  x->dsum = p->bgrad ? calloc(m, sizeof(float)) : NULL;
  if (p->bgrad && x->dsum == NULL) {
    free(ao);
    free(bo);
    return CUBLAS_STATUS_ALLOC_FAILED;
  }
  for (uint64_t j0 = 0; j0 < n && p->blk != 0; j0++)
    for (uint64_t i = 0; i < m; i++)
      finish_one(p, x, C, D, bias, i, j0,
                 A == NULL ? 0
                           : dot_block_scaled(p, (const float *)ao + i * k,
                                              (const float *)bo + j0 * k, i, j0),
                 amax);
  for (uint64_t j0 = 0; j0 < n && p->blk == 0; j0 += 4) {
    uint64_t jn = n - j0 < 4 ? n - j0 : 4;
    for (uint64_t i = 0; i < m; i++) {
      double acc[4];
      dot_block(p->acc, ao, bo, i, j0, jn, k, acc);
      for (uint64_t t = 0; t < jn; t++)
        finish_one(p, x, C, D, bias, i, j0 + t, acc[t], amax);
    }
  }
  if (x->dsum) { /* the bias gradient, one value per row of D */
    void *db = (char *)d->bias + (int64_t)bi * d->bias_stride * (int64_t)elem_size(p->bias_type);
    for (uint64_t i = 0; i < m; i++)
      store_out(p->bias_type, db, i, x->dsum[i]);
    free(x->dsum);
  }
  free(ao);
  free(bo);
  return CUBLAS_STATUS_SUCCESS;
}

static int aligned16(const lt_layout *l, const void *ptr) {
  size_t es = elem_size((int)l->type);
  if (l->batch_mode == CUBLASLT_BATCH_MODE_POINTER_ARRAY) {
    const void *const *arr = ptr;
    for (int32_t i = 0; i < l->batch_count; i++)
      if ((uintptr_t)arr[i] % 16 != 0) return 0;
  } else {
    if ((uintptr_t)ptr % 16 != 0) return 0;
    if (l->batch_count > 1 && ((uint64_t)l->stride * es) % 16 != 0) return 0;
  }
  return ((uint64_t)l->ld * es) % 16 == 0;
}

static char op_letter(int op) {
  return op == CUBLAS_OP_N ? 'N' : op == CUBLAS_OP_T ? 'T' : 'C';
}

static void fill_shape(const lt_plan *p, simcuda_gemm_shape *g, int aligned) {
  memset(g, 0, sizeof(*g));
  g->a_type = (int)p->a->type;
  g->b_type = (int)p->b->type;
  g->c_type = (int)p->c->type;
  g->d_type = (int)p->d->type;
  g->compute = compute_base(p->desc->compute);
  g->op_a = op_letter(p->desc->transa);
  g->op_b = op_letter(p->desc->transb);
  g->m = p->m;
  g->n = p->n;
  g->k = p->k;
  g->batch = (uint64_t)p->batch;
  g->aligned = aligned;
  g->epilogue_bias = p->bias;
}

static double scale_or_one(const void *p) {
  return p == NULL ? 1.0 : (double)*(const float *)p;
}

/* ---- algorithms: simcuda has one, id 0, with no tunable configuration ----
 * cublasLtMatmulAlgo_t is 8 opaque words; simcuda keeps its id and the
 * configuration attributes there behind a tag, so an algo that was never
 * initialised is recognised, and the types it was made for: an algo used
 * with other types does not match its descriptors (INVALID_VALUE, as
 * cublasLtMatmulAlgoCheck documents). */
enum { LT_ALGO_MAGIC = 0x53494d43 /* "SIMC" */, LT_ALGO_ID = 0 };

typedef struct lt_algo {
  uint32_t magic;
  int32_t id, splitk;
  uint32_t tile, reduction, swizzle, custom, stages;
  uint16_t inner_shape, cluster_shape;
  int32_t types[6]; /* compute, scale, A, B, C, D */
  uint8_t align[4]; /* bytes its A..D pointers need (CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_*) */
} lt_algo;
_Static_assert(sizeof(lt_algo) <= sizeof(cublasLtMatmulAlgo_t), "algo fits");

#define SLOT(a, type, field)                                                                       \
  { a, offsetof(type, field), sizeof(((type *)0)->field) }
static const attr_slot algo_slots[] = {
    SLOT(CUBLASLT_ALGO_CONFIG_ID, lt_algo, id),
    SLOT(CUBLASLT_ALGO_CONFIG_TILE_ID, lt_algo, tile),
    SLOT(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, lt_algo, splitk),
    SLOT(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, lt_algo, reduction),
    SLOT(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, lt_algo, swizzle),
    SLOT(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, lt_algo, custom),
    SLOT(CUBLASLT_ALGO_CONFIG_STAGES_ID, lt_algo, stages),
    SLOT(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, lt_algo, inner_shape),
    SLOT(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, lt_algo, cluster_shape),
};
#undef SLOT

static uint32_t matrix_alignment(const int32_t types[6], int matrix);

static void algo_init(cublasLtMatmulAlgo_t *a, const int32_t types[6]) {
  memset(a, 0, sizeof(*a));
  lt_algo *l = (lt_algo *)a;
  memcpy(l->types, types, sizeof(l->types));
  for (int i = 0; i < 4; i++)
    l->align[i] = (uint8_t)matrix_alignment(types, i);
  l->magic = LT_ALGO_MAGIC;
  l->id = LT_ALGO_ID;
  l->splitk = 1;
  l->tile = CUBLASLT_MATMUL_TILE_UNDEFINED;
  l->reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  l->stages = CUBLASLT_MATMUL_STAGES_UNDEFINED;
  l->cluster_shape = CUBLASLT_CLUSTER_SHAPE_AUTO;
}

static const lt_algo *as_algo(const cublasLtMatmulAlgo_t *a) {
  const lt_algo *l = (const lt_algo *)a;
  return l != NULL && l->magic == LT_ALGO_MAGIC ? l : NULL;
}

/* The alignment, in bytes, an algo made for these types needs of matrix
 * 0..3 (A..D): of its pointer, leading dimension and batch stride, as
 * cublasLt.h defines CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES. 16 for every
 * matrix of an fp8 / fp4 matmul (cuBLAS documentation, cublasLtMatmul: "All
 * matrix pointers must be 16-byte aligned", quoted in
 * NVIDIA/CUDALibrarySamples#172; cublasLtMatmul refuses other pointers); 4
 * for int8 (the IMMA kernels' "All matrix pointers must be 4-byte aligned",
 * quoted from the same documentation in OpenNMT/CTranslate2#1937; it names
 * no int8 kernel needing less, so the stricter value); else the element's
 * own size: a GPU load of a misaligned element faults, and cuBLASLt has
 * algos for fp16 pointers 2 bytes off (PyTorch declares such alignments to
 * the heuristic: pytorch/pytorch#98975). */
static uint32_t matrix_alignment(const int32_t types[6], int matrix) {
  int t = types[2 + matrix];
  if (is_narrow(types[2])) return 16;
  if (t == CUDA_R_8I) return 4;
  size_t es = elem_size(t);
  return es != 0 ? (uint32_t)es : 16; /* no such algo: types_supported refuses the type */
}

/* The vector width of the fastest GEMM kernels' loads (128 bits). */
enum { LT_VECTOR_BYTES = 16 };

/* need, or the largest power of two dividing v when that is smaller
 * (v == 0 divides by anything). */
static uint64_t min_pow2_divisor(uint64_t need, uint64_t v) {
  uint64_t p2 = v & (~v + 1);
  return v != 0 && p2 < need ? p2 : need;
}

/* An algo run on pointers less aligned than it needs: NOT_SUPPORTED (see
 * cublasLtMatmulAlgoGetHeuristic). Matrices not read (NULL) are skipped. */
static cublasStatus_t algo_alignment_ok(const lt_algo *l, const lt_plan *p,
                                        const void *const m[4]) {
  const lt_layout *ls[4] = {p->a, p->b, p->c, p->d};
  for (int i = 0; i < 4; i++) {
    if (m[i] == NULL) continue;
    int array = ls[i]->batch_mode == CUBLASLT_BATCH_MODE_POINTER_ARRAY;
    for (int32_t bi = 0; bi < (array ? p->batch : 1); bi++) {
      const void *ptr = array ? ((const void *const *)m[i])[bi] : m[i];
      if ((uintptr_t)ptr % l->align[i] != 0) return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* The types an algo is made for: compute, scale, A, B, C, D. */
static void plan_types(const lt_plan *p, int32_t ret[6]) {
  ret[0] = p->desc->compute;
  ret[1] = p->desc->scale_type;
  ret[2] = (int32_t)p->a->type;
  ret[3] = (int32_t)p->b->type;
  ret[4] = (int32_t)p->c->type;
  ret[5] = (int32_t)p->d->type;
}

/* The algo was made for these types, and in the configuration the
 * capabilities advertise: anything else (split K, a tile, stages, a custom
 * option) is a configuration this algo cannot run. */
static cublasStatus_t algo_config_ok(const cublasLtMatmulAlgo_t *a, const lt_plan *p) {
  const lt_algo *l = as_algo(a);
  int32_t types[6];
  plan_types(p, types);
  if (l == NULL || memcmp(types, l->types, sizeof(types)) != 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (l->id != LT_ALGO_ID || l->splitk != 1 || l->tile != CUBLASLT_MATMUL_TILE_UNDEFINED ||
      l->reduction != CUBLASLT_REDUCTION_SCHEME_NONE || l->swizzle != 0 || l->custom != 0 ||
      l->stages != CUBLASLT_MATMUL_STAGES_UNDEFINED || l->inner_shape != 0 ||
      l->cluster_shape != CUBLASLT_CLUSTER_SHAPE_AUTO)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_SUCCESS;
}

enum { LT_EMU_MAGIC = 0x4c54454d };

typedef struct lt_emu {
  uint32_t magic;
  int32_t strategy, special_values, mantissa_control, max_mantissa_bits, mantissa_offset;
  int32_t *mantissa_bits_out;
} lt_emu;
_Static_assert(sizeof(lt_emu) <= sizeof(cublasLtEmulationDescOpaque_t), "emulation desc fits");

/* A matmul with an emulation descriptor ran without emulation (simcuda has
 * none): the descriptor's mantissa-bit-count pointer, if set, says -1. */
static void note_no_emulation(const void *emulation_desc) {
  const lt_emu *e = emulation_desc;
  if (e != NULL && e->magic == LT_EMU_MAGIC && e->mantissa_bits_out != NULL)
    *e->mantissa_bits_out = -1;
}

SIM_API cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                      const void *alpha, const void *A, cublasLtMatrixLayout_t ad,
                                      const void *B, cublasLtMatrixLayout_t bd, const void *beta,
                                      const void *C, cublasLtMatrixLayout_t cd, void *D,
                                      cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t *algo,
                                      void *workspace, size_t workspace_size, cudaStream_t stream) {
  (void)workspace;
  (void)workspace_size;
  if (handle == NULL || handle->magic != LT_HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  lt_plan p;
  cublasStatus_t st = plan_matmul(&p, desc, ad, bd, cd, dd);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  if (algo != NULL && (st = algo_config_ok(algo, &p)) != CUBLAS_STATUS_SUCCESS) return st;
  int pm = p.desc->pointer_mode;
  /* ALPHA_DEVICE_VECTOR_BETA_ZERO: beta is zero, whatever its pointer. */
  if (alpha == NULL ||
      (beta == NULL && pm != CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO) ||
      !simcuda_stream_valid((CUstream)stream))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (pm == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO && p.desc->alpha_vec_stride != 0)
    return CUBLAS_STATUS_INVALID_VALUE; /* cublasLt.h: this mode has no batched alpha */
  if (p.m == 0 || p.n == 0) return CUBLAS_STATUS_SUCCESS;
  lt_args x;
  memset(&x, 0, sizeof x);
  int scale = p.desc->scale_type;
  x.scale_type = scale;
  x.ab_scale = x.c_scale = 1;
  bool alpha_vec = pm >= CUBLASLT_POINTER_MODE_DEVICE_VECTOR;
  x.alpha_v = alpha_vec ? alpha : NULL;
  x.alpha_v_stride = p.desc->alpha_vec_stride;
  x.alpha = alpha_vec ? 0 : read_scalar(scale, alpha);
  x.beta_v = pm == CUBLASLT_POINTER_MODE_DEVICE_VECTOR ? beta : NULL;
  x.beta = pm == CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_ZERO || x.beta_v
               ? 0
               : read_scalar(scale, beta);
  x.any_alpha =
      alpha_vec ? any_nonzero(scale, alpha, p.m, p.batch, x.alpha_v_stride) : x.alpha != 0;
  x.any_beta = x.beta_v ? any_nonzero(scale, beta, p.m, 1, 0) : x.beta != 0;
  if ((p.k > 0 && x.any_alpha && (A == NULL || B == NULL)) || D == NULL ||
      (x.any_beta && C == NULL))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (algo != NULL) {
    int reads_ab = p.k > 0 && x.any_alpha;
    const void *read[4] = {reads_ab ? A : NULL, reads_ab ? B : NULL, x.any_beta ? C : NULL, D};
    if ((st = algo_alignment_ok(as_algo(algo), &p, read)) != CUBLAS_STATUS_SUCCESS) return st;
  }
  if ((p.bias || p.bgrad) && p.desc->bias == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  if ((p.mask || p.aux_out || p.drelu || p.dgelu) && p.desc->aux == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (p.blk != 0 && (p.desc->a_scale == NULL || p.desc->b_scale == NULL))
    return CUBLAS_STATUS_INVALID_VALUE; /* block scales have no default */
  if (is_narrow((int)p.a->type)) {
    /* "All matrix pointers must be 16-byte aligned" (fp8_layouts_ok), for
     * each batch member of a pointer array too. */
    const void *mats[4] = {A, B, C, D};
    const lt_layout *ls[4] = {p.a, p.b, p.c, p.d};
    for (int i = 0; i < 4; i++) {
      if (mats[i] == NULL) continue; /* not read (alpha or beta 0) */
      int array = ls[i]->batch_mode == CUBLASLT_BATCH_MODE_POINTER_ARRAY;
      for (int32_t bi = 0; bi < (array ? p.batch : 1); bi++) {
        const void *m = array ? ((const void *const *)mats[i])[bi] : mats[i];
        if ((uintptr_t)m % 16) return CUBLAS_STATUS_NOT_SUPPORTED;
      }
    }
  }
  if (is_fp8((int)p.a->type)) {
    /* Per-tensor scale and amax pointers 16-byte aligned, else NOT_SUPPORTED
     * (the H200's cuBLASLt 13.1 refused scales 4 bytes apart and took them
     * 256 apart; 16 is the inferred rule: tests/simcuda/fidelity). */
    const void *scalars[] = {p.blk == 0 ? p.desc->a_scale : NULL,
                             p.blk == 0 ? p.desc->b_scale : NULL, p.desc->c_scale, p.desc->d_scale,
                             p.desc->amax_d};
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
      if ((uintptr_t)scalars[i] % 16) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (p.blk == 0) x.ab_scale = scale_or_one(p.desc->a_scale) * scale_or_one(p.desc->b_scale);
    x.c_scale = scale_or_one(p.desc->c_scale);
    x.alpha *= x.ab_scale;
    x.beta *= x.c_scale;
  }
  x.d_scale = scale_or_one(p.desc->d_scale);
  x.aux_scale = scale_or_one(p.desc->aux_scale);
  float aux_amax = 0;
  x.aux_amax = &aux_amax;
  x.A = A;
  x.B = B;
  x.C = C;
  x.D = D;

  int aligned = (!x.any_alpha || (aligned16(p.a, A) && aligned16(p.b, B))) && aligned16(p.d, D) &&
                (!x.any_beta || aligned16(p.c, C));
  simcuda_gemm_shape g;
  fill_shape(&p, &g, aligned);
  simcuda_kernel k = {.stream = (CUstream)stream};
  k.name = simcuda_gemm_kernel_name(&g, k.grid, k.block);
  uint64_t token = simcuda_kernel_start(&k);
  float amax = 0;
  for (int32_t bi = 0; bi < p.batch && st == CUBLAS_STATUS_SUCCESS; bi++)
    st = run_one(&p, &x, bi, &amax);
  if (st == CUBLAS_STATUS_SUCCESS && p.desc->amax_d != NULL) *(float *)p.desc->amax_d = amax;
  if (st == CUBLAS_STATUS_SUCCESS && p.aux_out && p.desc->aux_amax != NULL)
    *(float *)p.desc->aux_amax = aux_amax;
  if (st == CUBLAS_STATUS_SUCCESS) note_no_emulation(p.desc->emulation);
  simcuda_kernel_finish(&k, token);
  return st;
}

SIM_API cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t ad,
    cublasLtMatrixLayout_t bd, cublasLtMatrixLayout_t cd, cublasLtMatrixLayout_t dd,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int *returned) {
  if (handle == NULL || handle->magic != LT_HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || results == NULL || returned == NULL || as_pref(pref) == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  lt_plan p;
  cublasStatus_t st = plan_matmul(&p, desc, ad, bd, cd, dd);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  /* One algorithm: the host loop, the one id cublasLtMatmulAlgoGetIds lists.
   * A declared minimum alignment (PREF_MIN_ALIGNMENT_*_BYTES, default 256)
   * below what it needs excludes it (cublasLt.h: "Selecting a smaller value
   * will exclude algorithms that can not work with matrix A that is not as
   * strictly aligned as they need"); with no algorithm left the answer is
   * NOT_SUPPORTED and no result, as for a layout no kernel runs (Transformer
   * Engine's cublaslt_gemm.cu reads NOT_SUPPORTED from the heuristic as
   * "Unable to find suitable cuBLAS GEMM algorithm"; gradium-ai/xn#55 saw it
   * for fp8 shapes). A declared alignment that is not a multiple of the need
   * (0, 24 for 16) does not promise it either: the header is silent, this is
   * the stricter reading. MAX_WORKSPACE_BYTES (default 0) never excludes the
   * host loop: it needs no workspace, and says so (workspaceSize 0). */
  const lt_pref *pr = as_pref(pref);
  const uint32_t declared[4] = {pr->align_a, pr->align_b, pr->align_c, pr->align_d};
  int32_t types[6];
  plan_types(&p, types);
  for (int i = 0; i < 4; i++)
    if (declared[i] == 0 || declared[i] % matrix_alignment(types, i) != 0)
      return CUBLAS_STATUS_NOT_SUPPORTED;
  memset(&results[0], 0, sizeof(results[0]));
  algo_init(&results[0].algo, types);
  /* The algorithm found is one for pointers as aligned as declared (the
   * heuristic sees no pointer), up to the 16 bytes of the widest vector
   * loads, and for rows as aligned as the layouts' leading dimensions and
   * batch strides: cublasLtMatmul refuses it for pointers less aligned
   * (NOT_SUPPORTED, as PyTorch met on an H100 for fp32 pointers 8 bytes
   * aligned with an algo found under the default 256, pytorch/pytorch#97205,
   * and for fp16 ones 2 bytes aligned, #92201). Reduction schemes: the one
   * algorithm splits no K (CUBLASLT_REDUCTION_SCHEME_NONE), which no
   * REDUCTION_SCHEME_MASK filters out (programs set the mask to 0 to forbid
   * split-K and run the algo returned). */
  const lt_layout *ls[4] = {p.a, p.b, p.c, p.d};
  lt_algo *found = (lt_algo *)&results[0].algo;
  for (int i = 0; i < 4; i++) {
    uint64_t es = elem_size((int)ls[i]->type);
    uint64_t need = declared[i] < LT_VECTOR_BYTES ? declared[i] : LT_VECTOR_BYTES;
    need = min_pow2_divisor(need, (uint64_t)ls[i]->ld * es);
    if (ls[i]->batch_count > 1 && ls[i]->batch_mode != CUBLASLT_BATCH_MODE_POINTER_ARRAY)
      need = min_pow2_divisor(need, (uint64_t)ls[i]->stride * es);
    if (need > found->align[i]) found->align[i] = (uint8_t)need;
  }
  results[0].workspaceSize = 0;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned = 1;
  return CUBLAS_STATUS_SUCCESS;
}

/* The type combinations cublasLtMatmul runs, without layouts: checked on
 * stand-in descriptors (fp8 in the TN layout it requires). */
static cublasStatus_t types_supported(cublasComputeType_t compute, cudaDataType_t scale, int at,
                                      int bt, int ct, int dt) {
  lt_desc d;
  lt_layout a, b, c, dd;
  desc_init(&d, compute, scale);
  d.transa = CUBLAS_OP_T;
  layout_init(&a, (cudaDataType)at, 1, 1, 1);
  layout_init(&b, (cudaDataType)bt, 1, 1, 1);
  layout_init(&c, (cudaDataType)ct, 1, 1, 1);
  layout_init(&dd, (cudaDataType)dt, 1, 1, 1);
  lt_plan p = {.desc = &d, .a = &a, .b = &b, .c = &c, .d = &dd};
  return check_types(&p);
}

SIM_API cublasStatus_t cublasLtMatmulAlgoGetIds(cublasLtHandle_t handle,
                                                cublasComputeType_t compute, cudaDataType_t scale,
                                                cudaDataType_t at, cudaDataType_t bt,
                                                cudaDataType_t ct, cudaDataType_t dt, int requested,
                                                int ids[], int *returned) {
  if (handle == NULL || handle->magic != LT_HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested <= 0 || ids == NULL || returned == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  *returned = 0;
  if (types_supported(compute, scale, at, bt, ct, dt) == CUBLAS_STATUS_SUCCESS) {
    ids[0] = LT_ALGO_ID;
    *returned = 1;
  }
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t handle, cublasComputeType_t compute,
                                              cudaDataType_t scale, cudaDataType_t at,
                                              cudaDataType_t bt, cudaDataType_t ct,
                                              cudaDataType_t dt, int id,
                                              cublasLtMatmulAlgo_t *algo) {
  if (handle == NULL || handle->magic != LT_HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (algo == NULL || id != LT_ALGO_ID) return CUBLAS_STATUS_INVALID_VALUE;
  cublasStatus_t st = types_supported(compute, scale, at, bt, ct, dt);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  const int32_t types[6] = {compute, scale, at, bt, ct, dt};
  algo_init(algo, types);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                               cublasLtMatrixLayout_t ad, cublasLtMatrixLayout_t bd,
                                               cublasLtMatrixLayout_t cd, cublasLtMatrixLayout_t dd,
                                               const cublasLtMatmulAlgo_t *algo,
                                               cublasLtMatmulHeuristicResult_t *result) {
  if (handle == NULL || handle->magic != LT_HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (algo == NULL || result == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  lt_plan p;
  cublasStatus_t st = plan_matmul(&p, desc, ad, bd, cd, dd);
  if (st == CUBLAS_STATUS_SUCCESS) st = algo_config_ok(algo, &p);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  /* result->algo is never written: algo may point to it. */
  result->workspaceSize = 0;
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.0f;
  return CUBLAS_STATUS_SUCCESS;
}

/* Capabilities of the host loop: no split K, no tiles or stages to choose,
 * strided and pointer-array batches, out-of-place D, both pointer modes, the
 * epilogues it emulates; the alignments (value 0 here) are its types'
 * (matrix_alignment). */
typedef struct algo_cap {
  int attr;
  size_t size; /* bytes of one element */
  size_t count;
  uint64_t values[4];
} algo_cap;

static const algo_cap algo_caps[] = {
    {CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, 4, 1, {CUBLASLT_REDUCTION_SCHEME_NONE}},
    {CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT, 4, 1, {1}},
    {CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT, 4, 1, {1}},
    {CUBLASLT_ALGO_CAP_UPLO_SUPPORT, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_TILE_IDS, 4, 1, {CUBLASLT_MATMUL_TILE_UNDEFINED}},
    {CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_CUSTOM_MEMORY_ORDER, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_POINTER_MODE_MASK,
     4,
     1,
     {CUBLASLT_POINTER_MODE_MASK_HOST | CUBLASLT_POINTER_MODE_MASK_DEVICE |
      CUBLASLT_POINTER_MODE_MASK_DEVICE_VECTOR |
      CUBLASLT_POINTER_MODE_MASK_ALPHA_DEVICE_VECTOR_BETA_ZERO |
      CUBLASLT_POINTER_MODE_MASK_ALPHA_DEVICE_VECTOR_BETA_HOST}},
    {CUBLASLT_ALGO_CAP_EPILOGUE_MASK,
     4,
     1,
     {CUBLASLT_EPILOGUE_DEFAULT | CUBLASLT_EPILOGUE_RELU | CUBLASLT_EPILOGUE_BIAS |
      CUBLASLT_EPILOGUE_GELU | CUBLASLT_EPILOGUE_RELU_AUX | CUBLASLT_EPILOGUE_DRELU_BGRAD |
      CUBLASLT_EPILOGUE_DGELU_BGRAD}},
    {CUBLASLT_ALGO_CAP_STAGES_IDS, 4, 1, {CUBLASLT_MATMUL_STAGES_UNDEFINED}},
    {CUBLASLT_ALGO_CAP_LD_NEGATIVE, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS,
     8,
     1,
     {CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA | CUBLASLT_NUMERICAL_IMPL_FLAGS_ACCUMULATOR_32F}},
    {CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES, 4, 1, {0}},
    {CUBLASLT_ALGO_CAP_POINTER_ARRAY_BATCH_SUPPORT, 4, 1, {1}},
    {CUBLASLT_ALGO_CAP_FLOATING_POINT_EMULATION_SUPPORT, 4, 1, {0}},
};

/* Scalars need exactly their size; the array attributes (tile and stage ids)
 * take any buffer that holds them, as the header's example uses them. */
SIM_API cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                         cublasLtMatmulAlgoCapAttributes_t attr,
                                                         void *buf, size_t size, size_t *written) {
  const lt_algo *l = as_algo(algo);
  if (l == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  algo_cap found = {0};
  const algo_cap *c = NULL;
  for (size_t i = 0; i < NSLOTS(algo_caps); i++)
    if (algo_caps[i].attr == (int)attr) c = &algo_caps[i];
  if (c == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  if (attr >= CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES &&
      attr <= CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES) {
    found = *c;
    found.values[0] = l->align[attr - CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES];
    c = &found;
  }
  int array = attr == CUBLASLT_ALGO_CAP_TILE_IDS || attr == CUBLASLT_ALGO_CAP_STAGES_IDS;
  size_t need = c->size * c->count;
  if (size == 0) {
    if (written == NULL) return CUBLAS_STATUS_INVALID_VALUE;
    *written = need;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == NULL || (array ? size < need : size != need)) return CUBLAS_STATUS_INVALID_VALUE;
  for (size_t i = 0; i < c->count; i++) {
    if (c->size == 8) {
      memcpy((char *)buf + 8 * i, &c->values[i], 8);
    } else {
      uint32_t v = (uint32_t)c->values[i];
      memcpy((char *)buf + 4 * i, &v, 4);
    }
  }
  if (written != NULL) *written = need;
  return CUBLAS_STATUS_SUCCESS;
}

/* CONFIG_ID is read-only (set by cublasLtMatmulAlgoInit). */
SIM_API cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(
    cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr, const void *buf,
    size_t size) {
  if (algo == NULL || attr == CUBLASLT_ALGO_CONFIG_ID) return CUBLAS_STATUS_INVALID_VALUE;
  return set_attr(algo, algo_slots, NSLOTS(algo_slots), attr, buf, size);
}

SIM_API cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(
    const cublasLtMatmulAlgo_t *algo, cublasLtMatmulAlgoConfigAttributes_t attr, void *buf,
    size_t size, size_t *written) {
  if (algo == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return get_attr(algo, algo_slots, NSLOTS(algo_slots), attr, buf, size, written);
}

/* ---- matrix transform: C = alpha * op(A) + beta * op(B) ---- */

enum { LT_XFORM_MAGIC = 0x4c545846 };

typedef struct lt_xform {
  uint32_t magic;
  int32_t scale_type, pointer_mode, transa, transb;
} lt_xform;
_Static_assert(sizeof(lt_xform) <= sizeof(cublasLtMatrixTransformDescOpaque_t), "xform fits");

#define SLOT(a, type, field)                                                                       \
  { a, offsetof(type, field), sizeof(((type *)0)->field) }
static const attr_slot xform_slots[] = {
    SLOT(CUBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE, lt_xform, scale_type),
    SLOT(CUBLASLT_MATRIX_TRANSFORM_DESC_POINTER_MODE, lt_xform, pointer_mode),
    SLOT(CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, lt_xform, transa),
    SLOT(CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSB, lt_xform, transb),
};
#undef SLOT

static void xform_init(lt_xform *x, cudaDataType scale) {
  memset(x, 0, sizeof(*x));
  x->magic = LT_XFORM_MAGIC;
  x->scale_type = scale;
  x->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  x->transa = x->transb = CUBLAS_OP_N;
}

static lt_xform *as_xform(cublasLtMatrixTransformDesc_t p) {
  lt_xform *x = (lt_xform *)p;
  return x != NULL && x->magic == LT_XFORM_MAGIC ? x : NULL;
}

SIM_API cublasStatus_t cublasLtMatrixTransformDescInit_internal(cublasLtMatrixTransformDesc_t desc,
                                                                size_t size, cudaDataType scale) {
  if (desc == NULL || size < sizeof(lt_xform)) return CUBLAS_STATUS_ALLOC_FAILED;
  xform_init((lt_xform *)desc, scale);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatrixTransformDescCreate(cublasLtMatrixTransformDesc_t *desc,
                                                         cudaDataType scale) {
  if (desc == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  lt_xform *x = calloc(1, sizeof(cublasLtMatrixTransformDescOpaque_t));
  if (x == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  xform_init(x, scale);
  *desc = (cublasLtMatrixTransformDesc_t)x;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatrixTransformDescDestroy(cublasLtMatrixTransformDesc_t desc) {
  if (desc == NULL) return CUBLAS_STATUS_SUCCESS;
  lt_xform *x = as_xform(desc);
  if (x == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  x->magic = 0;
  free(x);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtMatrixTransformDescSetAttribute(
    cublasLtMatrixTransformDesc_t desc, cublasLtMatrixTransformDescAttributes_t attr,
    const void *buf, size_t size) {
  lt_xform *x = as_xform(desc);
  if (x == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return set_attr(x, xform_slots, NSLOTS(xform_slots), attr, buf, size);
}

SIM_API cublasStatus_t cublasLtMatrixTransformDescGetAttribute(
    cublasLtMatrixTransformDesc_t desc, cublasLtMatrixTransformDescAttributes_t attr, void *buf,
    size_t size, size_t *written) {
  lt_xform *x = as_xform(desc);
  if (x == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return get_attr(x, xform_slots, NSLOTS(xform_slots), attr, buf, size, written);
}

/* Is `l` a rows x cols matrix of type t, as op() of it is described? */
static int xform_layout_ok(const lt_layout *l, int op, uint64_t rows, uint64_t cols, int t,
                           int32_t batch) {
  uint64_t r = op == CUBLAS_OP_N ? rows : cols, c = op == CUBLAS_OP_N ? cols : rows;
  return l->type == (uint32_t)t && layout_ok(l, r, c) && l->batch_count == batch;
}

/* Column- and row-major orders, strided batches, one data type for A, B and
 * C with the scale type cuBLASLt pairs with it (fp64 for fp64 data, fp32 for
 * fp32 / fp16 / bf16); the IMMA orders (COL32, COL4_4R2_8C, ...), int8 and
 * planar complex are refused with NOT_SUPPORTED. */
SIM_API cublasStatus_t cublasLtMatrixTransform(cublasLtHandle_t handle,
                                               cublasLtMatrixTransformDesc_t desc,
                                               const void *alpha, const void *A,
                                               cublasLtMatrixLayout_t ad, const void *beta,
                                               const void *B, cublasLtMatrixLayout_t bd, void *C,
                                               cublasLtMatrixLayout_t cd, cudaStream_t stream) {
  if (handle == NULL || handle->magic != LT_HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
  const lt_xform *x = as_xform(desc);
  const lt_layout *lc = as_layout(cd), *la = as_layout(ad), *lb = as_layout(bd);
  if (x == NULL || lc == NULL || alpha == NULL || beta == NULL || C == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if ((A != NULL && la == NULL) || (B != NULL && lb == NULL)) return CUBLAS_STATUS_INVALID_VALUE;
  if (!simcuda_stream_valid((CUstream)stream)) return CUBLAS_STATUS_INVALID_VALUE;
  int t = (int)lc->type;
  int want_scale = t == CUDA_R_64F ? CUDA_R_64F : CUDA_R_32F;
  if ((t != CUDA_R_32F && t != CUDA_R_16F && t != CUDA_R_16BF && t != CUDA_R_64F) ||
      x->scale_type != want_scale)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const lt_layout *ls[3] = {lc, la, lb};
  for (int i = 0; i < 3; i++)
    if (ls[i] != NULL &&
        ((ls[i]->order != CUBLASLT_ORDER_COL && ls[i]->order != CUBLASLT_ORDER_ROW) ||
         ls[i]->batch_mode != CUBLASLT_BATCH_MODE_STRIDED))
      return CUBLAS_STATUS_NOT_SUPPORTED;
  if ((x->transa != CUBLAS_OP_N && x->transa != CUBLAS_OP_T) ||
      (x->transb != CUBLAS_OP_N && x->transb != CUBLAS_OP_T))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (x->pointer_mode != CUBLASLT_POINTER_MODE_HOST &&
      x->pointer_mode != CUBLASLT_POINTER_MODE_DEVICE)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  double a = read_scalar(x->scale_type, alpha), b = read_scalar(x->scale_type, beta);
  if ((a != 0 && A == NULL) || (b != 0 && B == NULL)) return CUBLAS_STATUS_INVALID_VALUE;
  if (a != 0 && !xform_layout_ok(la, x->transa, lc->rows, lc->cols, t, lc->batch_count))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (b != 0 && !xform_layout_ok(lb, x->transb, lc->rows, lc->cols, t, lc->batch_count))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (!layout_ok(lc, lc->rows, lc->cols)) return CUBLAS_STATUS_INVALID_VALUE;
  mp_dtype dt = mp_of(t);
  simcuda_kernel k = {.stream = (CUstream)stream,
                      .name = "_ZN8cublasLt23matrix_transform_kernelEv",
                      .grid = {1, 1, 1},
                      .block = {256, 1, 1}};
  uint64_t token = simcuda_kernel_start(&k);
  for (int32_t bi = 0; bi < lc->batch_count; bi++) {
    char *cb = (char *)C + (int64_t)bi * lc->stride * (int64_t)elem_size(t);
    for (uint64_t j = 0; j < lc->cols; j++)
      for (uint64_t i = 0; i < lc->rows; i++) {
        /* fp32 scale: inputs and the sum are fp32, as the descriptor says */
        double v = 0;
        if (a != 0) {
          const char *ab = (const char *)A + (int64_t)bi * la->stride * (int64_t)elem_size(t);
          uint64_t idx = x->transa == CUBLAS_OP_N ? elem_index(la, i, j) : elem_index(la, j, i);
          v = want_scale == CUDA_R_32F ? (double)((float)a * (float)mp_load(dt, ab, idx))
                                       : a * mp_load(dt, ab, idx);
        }
        if (b != 0) {
          const char *bb = (const char *)B + (int64_t)bi * lb->stride * (int64_t)elem_size(t);
          uint64_t idx = x->transb == CUBLAS_OP_N ? elem_index(lb, i, j) : elem_index(lb, j, i);
          v = want_scale == CUDA_R_32F ? (double)((float)v + (float)b * (float)mp_load(dt, bb, idx))
                                       : v + b * mp_load(dt, bb, idx);
        }
        mp_store(dt, cb, elem_index(lc, i, j), v);
      }
  }
  simcuda_kernel_finish(&k, token);
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- floating point emulation descriptor ----
 * Stored and read back. simcuda never runs an emulated GEMM (the emulated
 * compute types are NOT_SUPPORTED), which is what a device that does not use
 * emulation does: the mantissa-bit-count pointer, when set, receives -1. */

#define SLOT(a, type, field)                                                                       \
  { a, offsetof(type, field), sizeof(((type *)0)->field) }
static const attr_slot emu_slots[] = {
    SLOT(CUBLASLT_EMULATION_DESC_STRATEGY, lt_emu, strategy),
    SLOT(CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT, lt_emu, special_values),
    SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_CONTROL, lt_emu, mantissa_control),
    SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MAX_MANTISSA_BIT_COUNT, lt_emu, max_mantissa_bits),
    SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_OFFSET, lt_emu, mantissa_offset),
    SLOT(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER, lt_emu, mantissa_bits_out),
};
#undef SLOT

static void emu_init(lt_emu *e) {
  memset(e, 0, sizeof(*e));
  e->magic = LT_EMU_MAGIC;
  e->special_values = 0xFFFF;
}

static lt_emu *as_emu(cublasLtEmulationDesc_t p) {
  lt_emu *e = (lt_emu *)p;
  return e != NULL && e->magic == LT_EMU_MAGIC ? e : NULL;
}

SIM_API cublasStatus_t cublasLtEmulationDescInit_internal(cublasLtEmulationDesc_t desc,
                                                          size_t size) {
  if (desc == NULL || size < sizeof(lt_emu)) return CUBLAS_STATUS_ALLOC_FAILED;
  emu_init((lt_emu *)desc);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtEmulationDescCreate(cublasLtEmulationDesc_t *desc) {
  if (desc == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  lt_emu *e = calloc(1, sizeof(cublasLtEmulationDescOpaque_t));
  if (e == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  emu_init(e);
  *desc = (cublasLtEmulationDesc_t)e;
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtEmulationDescDestroy(cublasLtEmulationDesc_t desc) {
  if (desc == NULL) return CUBLAS_STATUS_SUCCESS;
  lt_emu *e = as_emu(desc);
  if (e == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  e->magic = 0;
  free(e);
  return CUBLAS_STATUS_SUCCESS;
}

SIM_API cublasStatus_t cublasLtEmulationDescSetAttribute(cublasLtEmulationDesc_t desc,
                                                         cublasLtEmulationDescAttributes_t attr,
                                                         const void *buf, size_t size) {
  lt_emu *e = as_emu(desc);
  if (e == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return set_attr(e, emu_slots, NSLOTS(emu_slots), attr, buf, size);
}

SIM_API cublasStatus_t cublasLtEmulationDescGetAttribute(cublasLtEmulationDesc_t desc,
                                                         cublasLtEmulationDescAttributes_t attr,
                                                         void *buf, size_t size, size_t *written) {
  lt_emu *e = as_emu(desc);
  if (e == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  return get_attr(e, emu_slots, NSLOTS(emu_slots), attr, buf, size, written);
}
