/* The cuDNN backend (graph) API of simcuda's libcudnn.so.9: descriptors for
 * tensors, convolutions, matmuls, pointwise ops, operation graphs, engines,
 * engine configs, heuristics, execution plans and variant packs, and
 * cudnnBackendExecute running one convolution (forward, backward data,
 * backward filter) or matmul, optionally followed by a chain of pointwise
 * operations on its (virtual) output -- the bias / activation fusions
 * frontends build -- as one simulated kernel.
 *
 * Descriptors hold values, never pointers to other descriptors: setting an
 * operand copies the finalized descriptor's content, so callers may destroy
 * tensor descriptors once the graph is built (frontends do).
 *
 * Engines: global index 0 is the Tensor Core engine (HMMA for fp16/bf16,
 * TF32 for fp32; numerical note TENSOR_CORE), index 1 the CUDA-core FMA
 * engine. An engine that has no kernel for the graph fails to finalize with
 * NOT_SUPPORTED, as real engines do, and heuristics list only applicable ones.
 * Each engine has one knob, KERNEL_CFG, with the single value 0 (one kernel
 * configuration): heuristics return it as the config's knob choice, and an
 * engine config whose choices name another knob or value does not finalize
 * (NOT_SUPPORTED). Engine configs report no workspace and no shared memory.
 *
 * Read-back mirrors the real library (see ../shared/cuda-facts.md): on
 * finalized descriptors VARIANT_PACK_UNIQUE_IDS / DATA_POINTERS and
 * OPERATIONGRAPH_OPS return CUDNN_STATUS_NOT_SUPPORTED, and an operation's
 * tensor operands come back as internal copies (conv operands padded to 5-D)
 * with UNIQUE_ID -1. Only a tensor descriptor's own attributes read back
 * faithfully, which is why mpprof shadows descriptors as they are set. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_sim.h"

#define BK_MAGIC 0x636e6e62u /* "cnnb" */
#define BK_MAX_OPS 8
#define BK_MAX_VP 64
#define BK_ENGINE_COUNT 2
#define BK_ENGINE_TC 0
#define BK_ENGINE_FMA 1
#define BK_MAX_KNOBS 8

enum { T_DTYPE = 1, T_DIMS = 2, T_STRIDES = 4, T_UID = 8, T_ALIGN = 16 };
enum { C_COMP = 1, C_MODE = 2, C_SPATIAL = 4, C_DIL = 8, C_STR = 16, C_PRE = 32, C_POST = 64 };
enum { P_MODE = 1 };
enum { K_TYPE = 1, K_VALUE = 2 };

typedef struct bk_tensor {
  simcudnn_tensor t;
  int64_t uid, align;
  bool is_virtual;
  unsigned have;
  int n_strides;
} bk_tensor;

typedef struct bk_conv {
  cudnnDataType_t comp;
  cudnnConvolutionMode_t mode;
  int64_t spatial;
  int64_t dil[CUDNN_DIM_MAX], str[CUDNN_DIM_MAX], pre[CUDNN_DIM_MAX], post[CUDNN_DIM_MAX];
  int n_dil, n_str, n_pre, n_post;
  unsigned have;
} bk_conv;

typedef struct bk_pw {
  cudnnPointwiseMode_t mode;
  cudnnDataType_t prec;
  double lower, upper, slope; /* RELU_FWD clipping */
  unsigned have;
} bk_pw;

/* One operation; operands by forward role (x, w, y). Matmul: a = x, b = w,
 * c = y. Pointwise: x, b, y; alpha = ALPHA1, beta = ALPHA2. */
typedef struct bk_op {
  cudnnBackendDescriptorType_t type;
  bk_tensor x, w, y, b;
  bool have_x, have_w, have_y, have_b, have_conv, have_mm, have_pw;
  bk_tensor ovr[3]; /* matmul GEMM_M / N / K_OVERRIDE_DESC */
  bool have_ovr[3];
  bk_conv conv;
  cudnnDataType_t mm_comp;
  bk_pw pw;
  double alpha, beta;
} bk_op;

/* After finalize: ops[main] is the convolution or matmul, chain[] the
 * pointwise ops applied to its output, in order. */
typedef struct bk_graph {
  cudnnHandle_t handle;
  int n_ops, main, n_chain;
  bk_op ops[BK_MAX_OPS];
  int chain[BK_MAX_OPS];
} bk_graph;

typedef struct bk_engine {
  bk_graph graph;
  bool have_graph, have_index;
  int64_t index;
} bk_engine;

/* A knob choice (KNOB_CHOICE descriptor) or, read back from an engine, a
 * knob's range (KNOB_INFO descriptor). */
typedef struct bk_knob {
  cudnnBackendKnobType_t type;
  int64_t value;            /* choice */
  int64_t min, max, stride; /* info */
  unsigned have;
} bk_knob;

/* The knobs every simcuda engine has. */
static const bk_knob engine_knobs[] = {
    {.type = CUDNN_KNOB_TYPE_KERNEL_CFG, .min = 0, .max = 0, .stride = 1},
};
#define BK_ENGINE_KNOBS ((int)(sizeof engine_knobs / sizeof engine_knobs[0]))

typedef struct bk_cfg {
  bk_engine engine;
  bool have_engine;
  int n_knobs;
  bk_knob knobs[BK_MAX_KNOBS];
} bk_cfg;

typedef struct bk_plan {
  cudnnHandle_t handle;
  bk_cfg cfg;
  bool have_cfg;
} bk_plan;

typedef struct bk_heur {
  bk_graph graph;
  bool have_graph, have_mode;
  cudnnBackendHeurMode_t mode;
  int n_results;
  int64_t results[BK_ENGINE_COUNT];
} bk_heur;

typedef struct bk_vpack {
  int n_uids, n_ptrs;
  int64_t uids[BK_MAX_VP];
  void *ptrs[BK_MAX_VP];
  void *workspace;
} bk_vpack;

typedef struct bk_desc {
  uint32_t magic;
  cudnnBackendDescriptorType_t type;
  bool finalized;
  union {
    bk_tensor tensor;
    bk_conv conv;
    bk_pw pw;
    bk_op op;
    cudnnDataType_t mm_comp; /* MATMUL_DESCRIPTOR */
    bk_graph graph;
    bk_engine engine;
    bk_cfg cfg;
    bk_plan plan;
    bk_heur heur;
    bk_vpack vp;
    bk_knob knob;
  } u;
} bk_desc;

static bk_desc *as_desc(cudnnBackendDescriptor_t d) {
  bk_desc *b = d;
  return b && b->magic == BK_MAGIC ? b : NULL;
}

static bool is_conv_op(cudnnBackendDescriptorType_t t) {
  return t == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
         t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
         t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}

static bool is_main_op(cudnnBackendDescriptorType_t t) {
  return is_conv_op(t) || t == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR;
}

static bool is_op(cudnnBackendDescriptorType_t t) {
  return is_main_op(t) || t == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR;
}

/* ---- create / destroy ---- */

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *descriptor) {
  if (!descriptor) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  switch (type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
  case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
    break;
  default:
    simcudnn_set_error("simcuda cuDNN: backend descriptor type %d not implemented", type);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  bk_desc *d = calloc(1, sizeof *d);
  if (!d) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
  d->magic = BK_MAGIC;
  d->type = type;
  if (is_op(type)) {
    d->u.op.type = type;
    d->u.op.alpha = 1.0;
    d->u.op.beta = type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR ? 1.0 : 0.0;
  }
  if (type == CUDNN_BACKEND_POINTWISE_DESCRIPTOR) {
    d->u.pw.prec = CUDNN_DATA_FLOAT;
    d->u.pw.upper = HUGE_VAL;
  }
  if (type == CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR) d->u.conv.mode = CUDNN_CROSS_CORRELATION;
  if (type == CUDNN_BACKEND_TENSOR_DESCRIPTOR) d->u.tensor.t.dtype = CUDNN_DATA_FLOAT;
  *descriptor = d;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  if (!descriptor) return CUDNN_STATUS_SUCCESS;
  bk_desc *d = as_desc(descriptor);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  d->magic = 0;
  free(d);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  (void)descriptor;
  simcudnn_set_error("simcuda cuDNN: cudnnBackendInitialize (deprecated) not implemented");
  return CUDNN_STATUS_NOT_SUPPORTED;
}

/* ---- attribute plumbing ---- */

/* Which attribute ids belong to which descriptor type (by the header's numbering). */
static bool belongs(cudnnBackendDescriptorType_t t, cudnnBackendAttributeName_t a) {
  switch (t) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    return a >= 900 && a < 1000;
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
    return a >= 100 && a < 200;
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    return a >= 200 && a < 300;
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    return a >= 300 && a < 400;
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    return a >= 400 && a < 500;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    return a >= 700 && a <= 705;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    return a >= 706 && a <= 711;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    return a >= 712 && a <= 717;
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    return a >= 800 && a < 900;
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    return a >= 1000 && a < 1100;
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    return a >= 1300 && a < 1400;
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    return a >= 1500 && a < 1520;
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
    return a >= 1520 && a < 1550;
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    return a < 100;
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
    return a >= 750 && a <= 758;
  case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
    return a >= 600 && a < 700;
  case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
    return a >= 1200 && a < 1300;
  default:
    return false;
  }
}

static cudnnStatus_t unimplemented(cudnnBackendAttributeName_t a) {
  simcudnn_set_error("simcuda cuDNN: backend attribute %d not implemented", a);
  return CUDNN_STATUS_NOT_SUPPORTED;
}

static cudnnStatus_t want(cudnnBackendAttributeType_t got, cudnnBackendAttributeType_t expected,
                          int64_t count, int64_t lo, int64_t hi) {
  if (got != expected) return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
  if (count < lo || count > hi) return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

/* A finalized descriptor of the given type passed as an attribute value. */
static cudnnStatus_t finalized_arg(const void *elems, int64_t i, cudnnBackendDescriptorType_t type,
                                   const bk_desc **ret) {
  const bk_desc *d = as_desc(((cudnnBackendDescriptor_t const *)elems)[i]);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  if (d->type != type) return CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE;
  if (!d->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  *ret = d;
  return CUDNN_STATUS_SUCCESS;
}

static double scalar_of(cudnnBackendAttributeType_t type, const void *elems) {
  return type == CUDNN_TYPE_FLOAT ? *(const float *)elems : *(const double *)elems;
}

static cudnnStatus_t set_tensor(bk_tensor *t, cudnnBackendAttributeName_t a,
                                cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_TENSOR_DATA_TYPE:
    if ((st = want(type, CUDNN_TYPE_DATA_TYPE, n, 1, 1))) return st;
    t->t.dtype = *(const cudnnDataType_t *)v;
    t->have |= T_DTYPE;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_DIMENSIONS:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, CUDNN_DIM_MAX))) return st;
    memcpy(t->t.dims, v, n * sizeof(int64_t));
    t->t.nb_dims = (int)n;
    t->have |= T_DIMS;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_STRIDES:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, CUDNN_DIM_MAX))) return st;
    memcpy(t->t.strides, v, n * sizeof(int64_t));
    t->n_strides = (int)n;
    t->have |= T_STRIDES;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_UNIQUE_ID:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, 1))) return st;
    t->uid = *(const int64_t *)v;
    t->have |= T_UID;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, 1))) return st;
    t->align = *(const int64_t *)v;
    t->have |= T_ALIGN;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
    if ((st = want(type, CUDNN_TYPE_BOOLEAN, n, 1, 1))) return st;
    t->is_virtual = *(const bool *)v;
    return CUDNN_STATUS_SUCCESS;
  /* Defaults frontends set explicitly are accepted; anything else is not implemented. */
  case CUDNN_ATTR_TENSOR_VECTOR_COUNT:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, 1))) return st;
    return *(const int64_t *)v == 1 ? CUDNN_STATUS_SUCCESS : unimplemented(a);
  case CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, 1))) return st;
    return *(const int64_t *)v == -1 ? CUDNN_STATUS_SUCCESS : unimplemented(a);
  case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
    if ((st = want(type, CUDNN_TYPE_BOOLEAN, n, 1, 1))) return st;
    return !*(const bool *)v ? CUDNN_STATUS_SUCCESS : unimplemented(a);
  case CUDNN_ATTR_TENSOR_REORDERING_MODE:
    if ((st = want(type, CUDNN_TYPE_TENSOR_REORDERING_MODE, n, 1, 1))) return st;
    return *(const cudnnBackendTensorReordering_t *)v == CUDNN_TENSOR_REORDERING_NONE
               ? CUDNN_STATUS_SUCCESS
               : unimplemented(a);
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_i64_array(int64_t *dst, int *ret_n, unsigned *have, unsigned bit,
                                   cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  cudnnStatus_t st = want(type, CUDNN_TYPE_INT64, n, 1, CUDNN_DIM_MAX);
  if (st) return st;
  memcpy(dst, v, n * sizeof(int64_t));
  *ret_n = (int)n;
  *have |= bit;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t set_conv(bk_conv *c, cudnnBackendAttributeName_t a,
                              cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
    if ((st = want(type, CUDNN_TYPE_DATA_TYPE, n, 1, 1))) return st;
    c->comp = *(const cudnnDataType_t *)v;
    c->have |= C_COMP;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_CONVOLUTION_CONV_MODE:
    if ((st = want(type, CUDNN_TYPE_CONVOLUTION_MODE, n, 1, 1))) return st;
    c->mode = *(const cudnnConvolutionMode_t *)v;
    if (c->mode != CUDNN_CONVOLUTION && c->mode != CUDNN_CROSS_CORRELATION)
      return CUDNN_STATUS_BAD_PARAM;
    c->have |= C_MODE;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, 1))) return st;
    c->spatial = *(const int64_t *)v;
    c->have |= C_SPATIAL;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_CONVOLUTION_DILATIONS:
    return set_i64_array(c->dil, &c->n_dil, &c->have, C_DIL, type, n, v);
  case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
    return set_i64_array(c->str, &c->n_str, &c->have, C_STR, type, n, v);
  case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS:
    return set_i64_array(c->pre, &c->n_pre, &c->have, C_PRE, type, n, v);
  case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS:
    return set_i64_array(c->post, &c->n_post, &c->have, C_POST, type, n, v);
  default:
    return unimplemented(a);
  }
}

typedef enum role {
  R_NONE,
  R_ALPHA,
  R_BETA,
  R_CONV,
  R_X,
  R_W,
  R_Y,
  R_B,
  R_MM,
  R_PW,
  R_OVR_M,
  R_OVR_N,
  R_OVR_K
} role;

static role op_role(cudnnBackendAttributeName_t a) {
  switch (a) {
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA:
  case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1:
    return R_ALPHA;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA:
  case CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2:
    return R_BETA;
  case CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR:
    return R_PW;
  case CUDNN_ATTR_OPERATION_POINTWISE_BDESC:
    return R_B;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC:
    return R_CONV;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X:
  case CUDNN_ATTR_OPERATION_MATMUL_ADESC:
  case CUDNN_ATTR_OPERATION_POINTWISE_XDESC:
    return R_X;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW:
  case CUDNN_ATTR_OPERATION_MATMUL_BDESC:
    return R_W;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY:
  case CUDNN_ATTR_OPERATION_MATMUL_CDESC:
  case CUDNN_ATTR_OPERATION_POINTWISE_YDESC:
    return R_Y;
  case CUDNN_ATTR_OPERATION_MATMUL_DESC:
    return R_MM;
  case CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC:
    return R_OVR_M;
  case CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC:
    return R_OVR_N;
  case CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC:
    return R_OVR_K;
  default:
    return R_NONE;
  }
}

static bk_tensor *op_tensor(bk_op *op, role r, bool **ret_have) {
  switch (r) {
  case R_OVR_M:
  case R_OVR_N:
  case R_OVR_K:
    *ret_have = &op->have_ovr[r - R_OVR_M];
    return &op->ovr[r - R_OVR_M];
  case R_X:
    *ret_have = &op->have_x;
    return &op->x;
  case R_W:
    *ret_have = &op->have_w;
    return &op->w;
  case R_B:
    *ret_have = &op->have_b;
    return &op->b;
  default:
    *ret_have = &op->have_y;
    return &op->y;
  }
}

static cudnnStatus_t set_op(bk_op *op, cudnnBackendAttributeName_t a,
                            cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  const bk_desc *arg;
  cudnnStatus_t st;
  role r = op_role(a);
  switch (r) {
  case R_ALPHA:
  case R_BETA:
    if (type != CUDNN_TYPE_FLOAT && type != CUDNN_TYPE_DOUBLE)
      return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
    if (n != 1) return CUDNN_STATUS_BAD_PARAM;
    *(r == R_ALPHA ? &op->alpha : &op->beta) = scalar_of(type, v);
    return CUDNN_STATUS_SUCCESS;
  case R_CONV:
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, 1))) return st;
    if ((st = finalized_arg(v, 0, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &arg))) return st;
    op->conv = arg->u.conv;
    op->have_conv = true;
    return CUDNN_STATUS_SUCCESS;
  case R_MM:
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, 1))) return st;
    if ((st = finalized_arg(v, 0, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &arg))) return st;
    op->mm_comp = arg->u.mm_comp;
    op->have_mm = true;
    return CUDNN_STATUS_SUCCESS;
  case R_PW:
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, 1))) return st;
    if ((st = finalized_arg(v, 0, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &arg))) return st;
    op->pw = arg->u.pw;
    op->have_pw = true;
    return CUDNN_STATUS_SUCCESS;
  case R_OVR_M:
  case R_OVR_N:
  case R_OVR_K:
    if (op->type != CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) return unimplemented(a);
    /* fall through */
  case R_X:
  case R_W:
  case R_Y:
  case R_B: {
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, 1))) return st;
    if ((st = finalized_arg(v, 0, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &arg))) return st;
    bool *have;
    *op_tensor(op, r, &have) = arg->u.tensor;
    *have = true;
    return CUDNN_STATUS_SUCCESS;
  }
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_pw(bk_pw *p, cudnnBackendAttributeName_t a,
                            cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_POINTWISE_MODE:
    if ((st = want(type, CUDNN_TYPE_POINTWISE_MODE, n, 1, 1))) return st;
    p->mode = *(const cudnnPointwiseMode_t *)v;
    p->have |= P_MODE;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_POINTWISE_MATH_PREC:
    if ((st = want(type, CUDNN_TYPE_DATA_TYPE, n, 1, 1))) return st;
    p->prec = *(const cudnnDataType_t *)v;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_POINTWISE_NAN_PROPAGATION: /* deprecated; NaN always propagates here */
    return want(type, CUDNN_TYPE_NAN_PROPOGATION, n, 1, 1);
  case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP:
  case CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP:
  case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE: {
    if (type != CUDNN_TYPE_FLOAT && type != CUDNN_TYPE_DOUBLE)
      return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
    if (n != 1) return CUDNN_STATUS_BAD_PARAM;
    double x = scalar_of(type, v);
    *(a == CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP   ? &p->lower
      : a == CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP ? &p->upper
                                                  : &p->slope) = x;
    return CUDNN_STATUS_SUCCESS;
  }
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_graph(bk_graph *g, cudnnBackendAttributeName_t a,
                               cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
    if ((st = want(type, CUDNN_TYPE_HANDLE, n, 1, 1))) return st;
    if (!simcudnn_handle_ok(*(cudnnHandle_t const *)v)) return CUDNN_STATUS_BAD_PARAM;
    g->handle = *(cudnnHandle_t const *)v;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_OPERATIONGRAPH_OPS:
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, INT64_MAX))) return st;
    if (n > BK_MAX_OPS) {
      simcudnn_set_error("simcuda cuDNN: graph with %lld operations", (long long)n);
      return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
    }
    for (int64_t i = 0; i < n; i++) {
      const bk_desc *op = as_desc(((cudnnBackendDescriptor_t const *)v)[i]);
      if (!op) return CUDNN_STATUS_BAD_PARAM;
      if (!is_op(op->type)) return CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE;
      if (!op->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
      g->ops[i] = op->u.op;
    }
    g->n_ops = (int)n;
    return CUDNN_STATUS_SUCCESS;
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_engine(bk_engine *e, cudnnBackendAttributeName_t a,
                                cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  const bk_desc *arg;
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_ENGINE_OPERATION_GRAPH:
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, 1))) return st;
    if ((st = finalized_arg(v, 0, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &arg))) return st;
    e->graph = arg->u.graph;
    e->have_graph = true;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, 1))) return st;
    e->index = *(const int64_t *)v;
    e->have_index = true;
    return CUDNN_STATUS_SUCCESS;
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_cfg(bk_cfg *c, cudnnBackendAttributeName_t a,
                             cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  const bk_desc *arg;
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_ENGINECFG_ENGINE:
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, 1))) return st;
    if ((st = finalized_arg(v, 0, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &arg))) return st;
    c->engine = arg->u.engine;
    c->have_engine = true;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES: /* checked against the engine at finalize */
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 0, BK_MAX_KNOBS))) return st;
    for (int64_t i = 0; i < n; i++) {
      if ((st = finalized_arg(v, i, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &arg))) return st;
      c->knobs[i] = arg->u.knob;
    }
    c->n_knobs = (int)n;
    return CUDNN_STATUS_SUCCESS;
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_knob_choice(bk_knob *k, cudnnBackendAttributeName_t a,
                                     cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE:
    if ((st = want(type, CUDNN_TYPE_KNOB_TYPE, n, 1, 1))) return st;
    k->type = *(const cudnnBackendKnobType_t *)v;
    k->have |= K_TYPE;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 1, 1))) return st;
    k->value = *(const int64_t *)v;
    k->have |= K_VALUE;
    return CUDNN_STATUS_SUCCESS;
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_plan(bk_plan *p, cudnnBackendAttributeName_t a,
                              cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  const bk_desc *arg;
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_EXECUTION_PLAN_HANDLE:
    if ((st = want(type, CUDNN_TYPE_HANDLE, n, 1, 1))) return st;
    if (!simcudnn_handle_ok(*(cudnnHandle_t const *)v)) return CUDNN_STATUS_BAD_PARAM;
    p->handle = *(cudnnHandle_t const *)v;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, 1))) return st;
    if ((st = finalized_arg(v, 0, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &arg))) return st;
    p->cfg = arg->u.cfg;
    p->have_cfg = true;
    return CUDNN_STATUS_SUCCESS;
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_heur(bk_heur *h, cudnnBackendAttributeName_t a,
                              cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  const bk_desc *arg;
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
    if ((st = want(type, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, 1, 1))) return st;
    if ((st = finalized_arg(v, 0, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &arg))) return st;
    h->graph = arg->u.graph;
    h->have_graph = true;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_ENGINEHEUR_MODE:
    if ((st = want(type, CUDNN_TYPE_HEUR_MODE, n, 1, 1))) return st;
    h->mode = *(const cudnnBackendHeurMode_t *)v;
    if (h->mode < CUDNN_HEUR_MODE_INSTANT || h->mode >= CUDNN_HEUR_MODES_COUNT)
      return CUDNN_STATUS_BAD_PARAM;
    h->have_mode = true;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_ENGINEHEUR_SM_COUNT_TARGET: /* a hint; every engine runs on any SM count */
    if ((st = want(type, CUDNN_TYPE_INT32, n, 1, 1))) return st;
    return CUDNN_STATUS_SUCCESS;
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t set_vpack(bk_vpack *p, cudnnBackendAttributeName_t a,
                               cudnnBackendAttributeType_t type, int64_t n, const void *v) {
  cudnnStatus_t st;
  switch (a) {
  case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS:
    if ((st = want(type, CUDNN_TYPE_INT64, n, 0, BK_MAX_VP))) return st;
    if (n) memcpy(p->uids, v, n * sizeof(int64_t));
    p->n_uids = (int)n;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
    if ((st = want(type, CUDNN_TYPE_VOID_PTR, n, 0, BK_MAX_VP))) return st;
    if (n) memcpy(p->ptrs, v, n * sizeof(void *));
    p->n_ptrs = (int)n;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_VARIANT_PACK_WORKSPACE:
    if ((st = want(type, CUDNN_TYPE_VOID_PTR, n, 1, 1))) return st;
    p->workspace = *(void *const *)v;
    return CUDNN_STATUS_SUCCESS;
  default:
    return unimplemented(a);
  }
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t elementCount,
                                       const void *arrayOfElements) {
  bk_desc *d = as_desc(descriptor);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  if (d->finalized) {
    simcudnn_set_error("simcuda cuDNN: descriptor already finalized");
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (elementCount < 0) return CUDNN_STATUS_BAD_PARAM;
  if (elementCount > 0 && !arrayOfElements) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!belongs(d->type, name)) return CUDNN_STATUS_BAD_PARAM;
  const void *v = arrayOfElements;
  switch (d->type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    return set_tensor(&d->u.tensor, name, type, elementCount, v);
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
    return set_conv(&d->u.conv, name, type, elementCount, v);
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    return set_pw(&d->u.pw, name, type, elementCount, v);
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR: {
    if (name != CUDNN_ATTR_MATMUL_COMP_TYPE) return unimplemented(name);
    cudnnStatus_t st = want(type, CUDNN_TYPE_DATA_TYPE, elementCount, 1, 1);
    if (!st) d->u.mm_comp = *(const cudnnDataType_t *)v;
    return st;
  }
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    return set_graph(&d->u.graph, name, type, elementCount, v);
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    return set_engine(&d->u.engine, name, type, elementCount, v);
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    return set_cfg(&d->u.cfg, name, type, elementCount, v);
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    return set_plan(&d->u.plan, name, type, elementCount, v);
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    return set_heur(&d->u.heur, name, type, elementCount, v);
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    return set_vpack(&d->u.vp, name, type, elementCount, v);
  case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
    return set_knob_choice(&d->u.knob, name, type, elementCount, v);
  default: /* KNOB_INFO is filled by the library (ENGINE_KNOB_INFO), not set */
    return is_op(d->type) ? set_op(&d->u.op, name, type, elementCount, v) : unimplemented(name);
  }
}

/* ---- building the compute problem of a graph ---- */

static void to_geom(const bk_conv *c, simcudnn_conv_geom *g) {
  memset(g, 0, sizeof *g);
  g->spatial = (int)c->spatial;
  g->mode = c->mode;
  g->compute = c->comp;
  for (int i = 0; i < g->spatial && i < SIMCUDNN_MAX_SPATIAL; i++) {
    g->pre_pad[i] = c->pre[i];
    g->post_pad[i] = c->post[i];
    g->stride[i] = c->str[i];
    g->dilation[i] = c->dil[i];
  }
}

/* The tensor an operation writes. */
static const bk_tensor *op_output(const bk_op *op) {
  switch (op->type) {
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    return &op->x;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    return &op->w;
  default:
    return &op->y;
  }
}

/* A virtual output lives in an fp32 scratch buffer, packed. */
static void make_internal(simcudnn_tensor *t) {
  t->dtype = CUDNN_DATA_FLOAT;
  simcudnn_packed_strides(t->nb_dims, t->dims, t->strides);
}

static void conv_problem(const bk_op *op, simcudnn_math math, simcudnn_conv_problem *p) {
  memset(p, 0, sizeof *p);
  p->kind = op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ? SIMCUDNN_FPROP
            : op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                ? SIMCUDNN_DGRAD
                : SIMCUDNN_WGRAD;
  p->x = op->x.t;
  p->w = op->w.t;
  p->y = op->y.t;
  to_geom(&op->conv, &p->geom);
  p->math = math;
  p->alpha = (float)op->alpha;
  p->beta = (float)op->beta;
  if (op_output(op)->is_virtual) {
    make_internal(p->kind == SIMCUDNN_FPROP ? &p->y : p->kind == SIMCUDNN_DGRAD ? &p->x : &p->w);
    p->output_any = true;
  }
}

static void matmul_problem(const bk_op *op, simcudnn_math math, simcudnn_matmul_problem *p) {
  memset(p, 0, sizeof *p);
  p->a = op->x.t;
  p->b = op->w.t;
  p->c = op->y.t;
  p->compute = op->mm_comp;
  p->math = math;
  for (int d = 0; d < 3; d++) {
    p->has_ovr[d] = op->have_ovr[d];
    p->ovr[d] = op->ovr[d].t;
  }
  if (op->y.is_virtual) {
    make_internal(&p->c);
    p->output_any = true;
  }
}

static simcudnn_math engine_math(int64_t index) {
  return index == BK_ENGINE_TC ? SIMCUDNN_MATH_TC : SIMCUDNN_MATH_FMA;
}

/* Whether engine `index` has a kernel for the graph (its convolution or
 * matmul; the pointwise chain runs in the kernel's epilogue). */
static cudnnStatus_t engine_applies(const bk_graph *g, int64_t index) {
  const bk_op *op = &g->ops[g->main];
  cudnnDataType_t in_dt = op->type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
                              ? op->y.t.dtype
                              : op->x.t.dtype;
  if (index == BK_ENGINE_TC && in_dt == CUDNN_DATA_FLOAT && !simcudnn_tf32_allowed()) {
    simcudnn_set_error("simcuda cuDNN: NVIDIA_TF32_OVERRIDE=0 disables the TF32 engine");
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  for (int i = 0; i < g->n_chain; i++) {
    const bk_op *pw = &g->ops[g->chain[i]];
    if (simcudnn_dtype_size(pw->y.t.dtype) == 0 ||
        (pw->have_b && simcudnn_dtype_size(pw->b.t.dtype) == 0)) {
      simcudnn_set_error("simcuda cuDNN: pointwise data types (float, half, bfloat16)");
      return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
    }
  }
  if (is_conv_op(op->type)) {
    simcudnn_conv_problem p;
    conv_problem(op, engine_math(index), &p);
    cudnnStatus_t st = simcudnn_conv_check_shapes(&p, CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
    if (st) return st;
    if (index == BK_ENGINE_TC && simcudnn_conv_math(CUDNN_TENSOR_OP_MATH, &p) != SIMCUDNN_MATH_TC) {
      simcudnn_set_error("simcuda cuDNN: no Tensor Core kernel (channels not multiples of 8, "
                         "grouped, or TF32 disabled)");
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
    return simcudnn_conv_check_types(&p);
  }
  simcudnn_matmul_problem p;
  matmul_problem(op, engine_math(index), &p);
  return simcudnn_matmul_check(&p);
}

static bool pw_binary(cudnnPointwiseMode_t m) {
  return m == CUDNN_POINTWISE_ADD || m == CUDNN_POINTWISE_SUB || m == CUDNN_POINTWISE_MUL ||
         m == CUDNN_POINTWISE_MAX || m == CUDNN_POINTWISE_MIN;
}

/* y = op(alpha1 * x, alpha2 * b); NaN propagates through every mode. */
static float pw_apply(const bk_pw *pw, float a, float b) {
  switch (pw->mode) {
  case CUDNN_POINTWISE_ADD:
    return a + b;
  case CUDNN_POINTWISE_SUB:
    return a - b;
  case CUDNN_POINTWISE_MUL:
    return a * b;
  case CUDNN_POINTWISE_MAX:
    return a != a || b != b ? a + b : a > b ? a : b;
  case CUDNN_POINTWISE_MIN:
    return a != a || b != b ? a + b : a < b ? a : b;
  case CUDNN_POINTWISE_RELU_FWD:
    if (a < pw->lower) return (float)pw->lower;
    if (a > pw->upper) return (float)pw->upper;
    return a;
  default: /* IDENTITY */
    return a;
  }
}

static bool same_dims(const simcudnn_tensor *a, const simcudnn_tensor *b) {
  if (a->nb_dims != b->nb_dims) return false;
  for (int i = 0; i < a->nb_dims; i++)
    if (a->dims[i] != b->dims[i]) return false;
  return true;
}

/* b broadcasts to y: same rank, each dim equal or 1. */
static bool broadcasts_to(const simcudnn_tensor *b, const simcudnn_tensor *y) {
  if (b->nb_dims != y->nb_dims) return false;
  for (int i = 0; i < b->nb_dims; i++)
    if (b->dims[i] != y->dims[i] && b->dims[i] != 1) return false;
  return true;
}

/* ---- finalize ---- */

static cudnnStatus_t finalize_tensor(bk_tensor *t) {
  unsigned need = T_DTYPE | T_DIMS | T_STRIDES | T_UID | T_ALIGN;
  if ((t->have & need) != need || t->n_strides != t->t.nb_dims || t->align <= 0) {
    simcudnn_set_error("simcuda cuDNN: tensor needs data type, dims, strides (same count), unique "
                       "id and byte alignment");
    return CUDNN_STATUS_BAD_PARAM;
  }
  for (int i = 0; i < t->t.nb_dims; i++)
    if (t->t.dims[i] <= 0 || t->t.strides[i] <= 0) return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_conv(const bk_conv *c) {
  unsigned need = C_COMP | C_SPATIAL | C_DIL | C_STR | C_PRE | C_POST;
  if ((c->have & need) != need) return CUDNN_STATUS_BAD_PARAM;
  if (c->spatial < 1 || c->n_dil != c->spatial || c->n_str != c->spatial ||
      c->n_pre != c->spatial || c->n_post != c->spatial)
    return CUDNN_STATUS_BAD_PARAM;
  if (c->spatial > SIMCUDNN_MAX_SPATIAL) {
    simcudnn_set_error("simcuda cuDNN: %lld-D convolution (1..3 supported)", (long long)c->spatial);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  for (int i = 0; i < c->spatial; i++)
    if (c->dil[i] < 1 || c->str[i] < 1 || c->pre[i] < 0 || c->post[i] < 0)
      return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_pw(const bk_pw *pw) {
  if (!(pw->have & P_MODE)) return CUDNN_STATUS_BAD_PARAM;
  if (!pw_binary(pw->mode) && pw->mode != CUDNN_POINTWISE_RELU_FWD &&
      pw->mode != CUDNN_POINTWISE_IDENTITY) {
    simcudnn_set_error("simcuda cuDNN: pointwise mode %d not implemented (ADD, SUB, MUL, MAX, MIN, "
                       "RELU_FWD, IDENTITY)",
                       pw->mode);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  if (pw->prec != CUDNN_DATA_FLOAT || pw->slope != 0.0) {
    simcudnn_set_error("simcuda cuDNN: pointwise math precision must be float, ReLU slope 0");
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_pw_op(const bk_op *op) {
  if (!op->have_x || !op->have_y || !op->have_pw) return CUDNN_STATUS_BAD_PARAM;
  if (pw_binary(op->pw.mode) && !op->have_b) return CUDNN_STATUS_BAD_PARAM;
  if (!same_dims(&op->x.t, &op->y.t) || (op->have_b && !broadcasts_to(&op->b.t, &op->y.t)))
    return CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_op(const bk_op *op) {
  if (op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR) return finalize_pw_op(op);
  if (!op->have_x || !op->have_w || !op->have_y) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st;
  if (is_conv_op(op->type)) {
    if (!op->have_conv) return CUDNN_STATUS_BAD_PARAM;
    simcudnn_conv_problem p;
    conv_problem(op, SIMCUDNN_MATH_TC, &p);
    st = simcudnn_conv_check_shapes(&p, CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
  } else {
    if (!op->have_mm) return CUDNN_STATUS_BAD_PARAM;
    simcudnn_matmul_problem p;
    matmul_problem(op, SIMCUDNN_MATH_TC, &p);
    st = simcudnn_matmul_check(&p);
  }
  /* Shapes are the operation's business; data types are the engine's. */
  return CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_BAD_PARAM ? st : CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t pattern(const char *why) {
  simcudnn_set_error("simcuda cuDNN: graph pattern not implemented: %s", why);
  return CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN;
}

/* One convolution or matmul; if its output is virtual, a chain of pointwise
 * operations leads from it to a non-virtual tensor (bias, activation...). */
static cudnnStatus_t finalize_graph(bk_graph *g) {
  if (g->n_ops < 1) return CUDNN_STATUS_BAD_PARAM;
  int main = -1;
  for (int i = 0; i < g->n_ops; i++)
    if (is_main_op(g->ops[i].type)) {
      if (main >= 0) return pattern("more than one convolution / matmul");
      main = i;
    }
  if (main < 0) return pattern("no convolution or matmul");
  const bk_op *m = &g->ops[main];
  const bk_tensor *out = op_output(m), *ts[3] = {&m->x, &m->w, &m->y};
  for (int i = 0; i < 3; i++)
    if (ts[i] != out && ts[i]->is_virtual) return pattern("virtual input");
  if (m->x.uid == m->w.uid || m->x.uid == m->y.uid || m->w.uid == m->y.uid)
    return CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES;
  if (out->is_virtual && is_conv_op(m->type) && m->beta != 0.0)
    return pattern("beta blending into a virtual output");
  bool used[BK_MAX_OPS] = {false};
  int n_chain = 0;
  for (const bk_tensor *cur = out; cur->is_virtual;) {
    int next = -1;
    for (int i = 0; i < g->n_ops && next < 0; i++)
      if (!used[i] && g->ops[i].type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
          g->ops[i].x.uid == cur->uid)
        next = i;
    if (next < 0) return pattern("virtual tensor not consumed as a pointwise X");
    const bk_op *pw = &g->ops[next];
    if (!same_dims(&pw->x.t, &cur->t)) return CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
    if (pw->have_b && pw->b.is_virtual) return pattern("virtual pointwise B");
    used[next] = true;
    g->chain[n_chain++] = next;
    cur = &pw->y;
  }
  if (n_chain != g->n_ops - 1) return pattern("operations outside one chain");
  g->main = main;
  g->n_chain = n_chain;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_engine(const bk_engine *e) {
  if (!e->have_graph || !e->have_index) return CUDNN_STATUS_BAD_PARAM;
  if (e->index < 0 || e->index >= BK_ENGINE_COUNT) return CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND;
  cudnnStatus_t st = engine_applies(&e->graph, e->index);
  return CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED ? CUDNN_STATUS_NOT_SUPPORTED : st;
}

/* Every knob choice names a knob of the engine, once, with a value in its
 * range on its stride. */
static cudnnStatus_t finalize_cfg(const bk_cfg *c) {
  if (!c->have_engine) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < c->n_knobs; i++) {
    const bk_knob *k = &c->knobs[i];
    for (int j = 0; j < i; j++)
      if (c->knobs[j].type == k->type) return CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES;
    const bk_knob *info = NULL;
    for (int j = 0; j < BK_ENGINE_KNOBS; j++)
      if (engine_knobs[j].type == k->type) info = &engine_knobs[j];
    if (!info || k->value < info->min || k->value > info->max ||
        (k->value - info->min) % info->stride != 0) {
      simcudnn_set_error("simcuda cuDNN: engine %lld has no knob %d = %lld",
                         (long long)c->engine.index, k->type, (long long)k->value);
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_heur(bk_heur *h) {
  if (!h->have_graph || !h->have_mode) return CUDNN_STATUS_BAD_PARAM;
  /* Fastest first; FALLBACK mode lists the broadly applicable CUDA-core engine first. */
  int64_t order[BK_ENGINE_COUNT] = {BK_ENGINE_TC, BK_ENGINE_FMA};
  if (h->mode == CUDNN_HEUR_MODE_FALLBACK) {
    order[0] = BK_ENGINE_FMA;
    order[1] = BK_ENGINE_TC;
  }
  h->n_results = 0;
  for (int i = 0; i < BK_ENGINE_COUNT; i++)
    if (engine_applies(&h->graph, order[i]) == CUDNN_STATUS_SUCCESS)
      h->results[h->n_results++] = order[i];
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t finalize_vpack(const bk_vpack *p) {
  if (p->n_uids != p->n_ptrs) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < p->n_uids; i++)
    for (int j = i + 1; j < p->n_uids; j++)
      if (p->uids[i] == p->uids[j]) return CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  bk_desc *d = as_desc(descriptor);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  if (d->finalized) return CUDNN_STATUS_BAD_PARAM;
  cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
  switch (d->type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    st = finalize_tensor(&d->u.tensor);
    break;
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
    st = finalize_conv(&d->u.conv);
    break;
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    st = finalize_pw(&d->u.pw);
    break;
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    break;
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    st = finalize_graph(&d->u.graph);
    break;
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    st = finalize_engine(&d->u.engine);
    break;
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    st = finalize_cfg(&d->u.cfg);
    break;
  case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
    st = (d->u.knob.have & (K_TYPE | K_VALUE)) == (K_TYPE | K_VALUE) ? CUDNN_STATUS_SUCCESS
                                                                     : CUDNN_STATUS_BAD_PARAM;
    break;
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    if (!d->u.plan.have_cfg) return CUDNN_STATUS_BAD_PARAM;
    if (!d->u.plan.handle) d->u.plan.handle = d->u.plan.cfg.engine.graph.handle;
    st = d->u.plan.handle ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_BAD_PARAM;
    break;
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    st = finalize_heur(&d->u.heur);
    break;
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    st = finalize_vpack(&d->u.vp);
    break;
  default:
    st = is_op(d->type) ? finalize_op(&d->u.op) : CUDNN_STATUS_NOT_SUPPORTED;
    break;
  }
  if (st == CUDNN_STATUS_SUCCESS) d->finalized = true;
  return st;
}

/* ---- get ---- */

static cudnnStatus_t put(cudnnBackendAttributeType_t got, cudnnBackendAttributeType_t expected,
                         const void *src, size_t elsize, int64_t n, int64_t requested,
                         int64_t *count, void *dst) {
  if (got != expected) return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
  if (count) *count = n;
  int64_t m = requested < n ? requested : n;
  if (m > 0) memcpy(dst, src, (size_t)m * elsize);
  return CUDNN_STATUS_SUCCESS;
}

#define PUT(expected, src, n)                                                                      \
  put(type, (expected), (src), sizeof *(src), (n), requested, count, out)

/* Fill caller-created descriptor number i of `out` with a finalized copy. */
static cudnnStatus_t fill(void *out, int64_t i, cudnnBackendDescriptorType_t type,
                          const void *value, size_t size) {
  bk_desc *d = as_desc(((cudnnBackendDescriptor_t *)out)[i]);
  if (!d) return CUDNN_STATUS_BAD_PARAM;
  if (d->type != type) return CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE;
  memcpy(&d->u, value, size);
  d->finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t fill_one(cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                              void *out, cudnnBackendDescriptorType_t dtype, const void *value,
                              size_t size) {
  if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
  if (count) *count = 1;
  return requested >= 1 ? fill(out, 0, dtype, value, size) : CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t get_tensor(const bk_tensor *t, cudnnBackendAttributeName_t a,
                                cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                                void *out) {
  static const int64_t one = 1, minus_one = -1;
  static const bool no = false;
  static const cudnnBackendTensorReordering_t none = CUDNN_TENSOR_REORDERING_NONE;
  switch (a) {
  case CUDNN_ATTR_TENSOR_DATA_TYPE:
    return PUT(CUDNN_TYPE_DATA_TYPE, &t->t.dtype, 1);
  case CUDNN_ATTR_TENSOR_DIMENSIONS:
    return PUT(CUDNN_TYPE_INT64, t->t.dims, t->t.nb_dims);
  case CUDNN_ATTR_TENSOR_STRIDES:
    return PUT(CUDNN_TYPE_INT64, t->t.strides, t->t.nb_dims);
  case CUDNN_ATTR_TENSOR_UNIQUE_ID:
    return PUT(CUDNN_TYPE_INT64, &t->uid, 1);
  case CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT:
    return PUT(CUDNN_TYPE_INT64, &t->align, 1);
  case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
    return PUT(CUDNN_TYPE_BOOLEAN, &t->is_virtual, 1);
  case CUDNN_ATTR_TENSOR_VECTOR_COUNT:
    return PUT(CUDNN_TYPE_INT64, &one, 1);
  case CUDNN_ATTR_TENSOR_VECTORIZED_DIMENSION:
    return PUT(CUDNN_TYPE_INT64, &minus_one, 1);
  case CUDNN_ATTR_TENSOR_IS_BY_VALUE:
    return PUT(CUDNN_TYPE_BOOLEAN, &no, 1);
  case CUDNN_ATTR_TENSOR_REORDERING_MODE:
    return PUT(CUDNN_TYPE_TENSOR_REORDERING_MODE, &none, 1);
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t get_conv(const bk_conv *c, cudnnBackendAttributeName_t a,
                              cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                              void *out) {
  switch (a) {
  case CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
    return PUT(CUDNN_TYPE_DATA_TYPE, &c->comp, 1);
  case CUDNN_ATTR_CONVOLUTION_CONV_MODE:
    return PUT(CUDNN_TYPE_CONVOLUTION_MODE, &c->mode, 1);
  case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
    return PUT(CUDNN_TYPE_INT64, &c->spatial, 1);
  case CUDNN_ATTR_CONVOLUTION_DILATIONS:
    return PUT(CUDNN_TYPE_INT64, c->dil, c->n_dil);
  case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
    return PUT(CUDNN_TYPE_INT64, c->str, c->n_str);
  case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS:
    return PUT(CUDNN_TYPE_INT64, c->pre, c->n_pre);
  case CUDNN_ATTR_CONVOLUTION_POST_PADDINGS:
    return PUT(CUDNN_TYPE_INT64, c->post, c->n_post);
  default:
    return unimplemented(a);
  }
}

/* The internal copy an operation hands back for an operand: unique id -1,
 * and for convolutions the 5-D (N, C, D, H, W) form cuDNN works in. */
static bk_tensor internal_copy(const bk_op *op, const bk_tensor *t) {
  bk_tensor c = *t;
  c.uid = -1;
  c.is_virtual = false;
  if (is_conv_op(op->type) && c.t.nb_dims == 4) {
    int64_t dims[5] = {c.t.dims[0], c.t.dims[1], 1, c.t.dims[2], c.t.dims[3]};
    int64_t strides[5] = {c.t.strides[0], c.t.strides[1], c.t.strides[2] * c.t.dims[2],
                          c.t.strides[2], c.t.strides[3]};
    memcpy(c.t.dims, dims, sizeof dims);
    memcpy(c.t.strides, strides, sizeof strides);
    c.t.nb_dims = c.n_strides = 5;
  }
  return c;
}

static cudnnStatus_t get_op(const bk_op *op, cudnnBackendAttributeName_t a,
                            cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                            void *out) {
  role r = op_role(a);
  switch (r) {
  case R_ALPHA:
  case R_BETA: {
    double v = r == R_ALPHA ? op->alpha : op->beta;
    if (type == CUDNN_TYPE_DOUBLE) return PUT(CUDNN_TYPE_DOUBLE, &v, 1);
    float f = (float)v;
    return PUT(CUDNN_TYPE_FLOAT, &f, 1);
  }
  case R_CONV:
    return fill_one(type, requested, count, out, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &op->conv,
                    sizeof op->conv);
  case R_MM:
    return fill_one(type, requested, count, out, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &op->mm_comp,
                    sizeof op->mm_comp);
  case R_PW:
    return fill_one(type, requested, count, out, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &op->pw,
                    sizeof op->pw);
  case R_X:
  case R_W:
  case R_Y:
  case R_B: {
    bool *have;
    bk_tensor copy = internal_copy(op, op_tensor((bk_op *)op, r, &have));
    return fill_one(type, requested, count, out, CUDNN_BACKEND_TENSOR_DESCRIPTOR, &copy,
                    sizeof copy);
  }
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t get_pw(const bk_pw *p, cudnnBackendAttributeName_t a,
                            cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                            void *out) {
  switch (a) {
  case CUDNN_ATTR_POINTWISE_MODE:
    return PUT(CUDNN_TYPE_POINTWISE_MODE, &p->mode, 1);
  case CUDNN_ATTR_POINTWISE_MATH_PREC:
    return PUT(CUDNN_TYPE_DATA_TYPE, &p->prec, 1);
  case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP:
  case CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP:
  case CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE: {
    double v = a == CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP   ? p->lower
               : a == CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP ? p->upper
                                                           : p->slope;
    if (type == CUDNN_TYPE_DOUBLE) return PUT(CUDNN_TYPE_DOUBLE, &v, 1);
    float f = (float)v;
    return PUT(CUDNN_TYPE_FLOAT, &f, 1);
  }
  default:
    return unimplemented(a);
  }
}

/* Fill caller-created KNOB_INFO / KNOB_CHOICE descriptors, one per knob. */
static cudnnStatus_t fill_knobs(cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                                void *out, cudnnBackendDescriptorType_t dtype, const bk_knob *knobs,
                                int n) {
  if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
  if (count) *count = n;
  for (int64_t i = 0; i < requested && i < n; i++) {
    bk_knob k = knobs[i];
    k.have = K_TYPE | K_VALUE;
    cudnnStatus_t st = fill(out, i, dtype, &k, sizeof k);
    if (st) return st;
  }
  return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t get_knob(const bk_desc *d, cudnnBackendAttributeName_t a,
                              cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                              void *out) {
  const bk_knob *k = &d->u.knob;
  switch (a) {
  case CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE:
  case CUDNN_ATTR_KNOB_INFO_TYPE:
    return PUT(CUDNN_TYPE_KNOB_TYPE, &k->type, 1);
  case CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE:
    return PUT(CUDNN_TYPE_INT64, &k->value, 1);
  case CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE:
    return PUT(CUDNN_TYPE_INT64, &k->max, 1);
  case CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE:
    return PUT(CUDNN_TYPE_INT64, &k->min, 1);
  case CUDNN_ATTR_KNOB_INFO_STRIDE:
    return PUT(CUDNN_TYPE_INT64, &k->stride, 1);
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t get_engine(const bk_engine *e, cudnnBackendAttributeName_t a,
                                cudnnBackendAttributeType_t type, int64_t requested, int64_t *count,
                                void *out) {
  static const cudnnBackendNumericalNote_t tc = CUDNN_NUMERICAL_NOTE_TENSOR_CORE;
  switch (a) {
  case CUDNN_ATTR_ENGINE_OPERATION_GRAPH:
    return fill_one(type, requested, count, out, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &e->graph,
                    sizeof e->graph);
  case CUDNN_ATTR_ENGINE_GLOBAL_INDEX:
    return PUT(CUDNN_TYPE_INT64, &e->index, 1);
  case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE:
    return PUT(CUDNN_TYPE_NUMERICAL_NOTE, &tc, e->index == BK_ENGINE_TC ? 1 : 0);
  case CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE: /* none */
    if (type != CUDNN_TYPE_BEHAVIOR_NOTE) return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
    if (count) *count = 0;
    return CUDNN_STATUS_SUCCESS;
  case CUDNN_ATTR_ENGINE_KNOB_INFO:
    return fill_knobs(type, requested, count, out, CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, engine_knobs,
                      BK_ENGINE_KNOBS);
  default:
    return unimplemented(a);
  }
}

static cudnnStatus_t get_heur_results(const bk_heur *h, cudnnBackendAttributeType_t type,
                                      int64_t requested, int64_t *count, void *out) {
  if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR) return CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE;
  if (count) *count = h->n_results;
  for (int64_t i = 0; i < requested && i < h->n_results; i++) {
    bk_cfg cfg = {.engine = {.graph = h->graph,
                             .have_graph = true,
                             .have_index = true,
                             .index = h->results[i]},
                  .have_engine = true,
                  .n_knobs = BK_ENGINE_KNOBS};
    for (int j = 0; j < BK_ENGINE_KNOBS; j++) {
      cfg.knobs[j] = engine_knobs[j];
      cfg.knobs[j].value = engine_knobs[j].min;
      cfg.knobs[j].have = K_TYPE | K_VALUE;
    }
    cudnnStatus_t st = fill(out, i, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg, sizeof cfg);
    if (st) return st;
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                       cudnnBackendAttributeName_t a,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t *count, void *out) {
  const bk_desc *d = as_desc(descriptor);
  static const int64_t zero = 0, engines = BK_ENGINE_COUNT;
  if (!d || requested < 0) return CUDNN_STATUS_BAD_PARAM;
  /* A NULL array is a count query whatever the requested count (cudnn-frontend
   * asks that way); without somewhere to put the count it is an error. */
  if (!out) requested = 0;
  if (!count && requested == 0) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  if (!belongs(d->type, a)) return CUDNN_STATUS_BAD_PARAM;
  if (!d->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  switch (d->type) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
    return get_tensor(&d->u.tensor, a, type, requested, count, out);
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
    return get_conv(&d->u.conv, a, type, requested, count, out);
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    return get_pw(&d->u.pw, a, type, requested, count, out);
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    if (a != CUDNN_ATTR_MATMUL_COMP_TYPE) return unimplemented(a);
    return PUT(CUDNN_TYPE_DATA_TYPE, &d->u.mm_comp, 1);
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
    switch (a) {
    case CUDNN_ATTR_OPERATIONGRAPH_OPS: /* as the real library: not readable once finalized */
      simcudnn_set_error("simcuda cuDNN: OPERATIONGRAPH_OPS cannot be read from a finalized graph");
      return CUDNN_STATUS_NOT_SUPPORTED;
    case CUDNN_ATTR_OPERATIONGRAPH_HANDLE:
      return PUT(CUDNN_TYPE_HANDLE, &d->u.graph.handle, 1);
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
      return PUT(CUDNN_TYPE_INT64, &engines, 1);
    default:
      return unimplemented(a);
    }
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
    return get_engine(&d->u.engine, a, type, requested, count, out);
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
    switch (a) {
    case CUDNN_ATTR_ENGINECFG_ENGINE:
      return fill_one(type, requested, count, out, CUDNN_BACKEND_ENGINE_DESCRIPTOR,
                      &d->u.cfg.engine, sizeof d->u.cfg.engine);
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
    case CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED: /* host loops: none of either */
      return PUT(CUDNN_TYPE_INT64, &zero, 1);
    case CUDNN_ATTR_ENGINECFG_KNOB_CHOICES:
      return fill_knobs(type, requested, count, out, CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR,
                        d->u.cfg.knobs, d->u.cfg.n_knobs);
    default:
      return unimplemented(a);
    }
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
    switch (a) {
    case CUDNN_ATTR_EXECUTION_PLAN_HANDLE:
      return PUT(CUDNN_TYPE_HANDLE, &d->u.plan.handle, 1);
    case CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG:
      return fill_one(type, requested, count, out, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                      &d->u.plan.cfg, sizeof d->u.plan.cfg);
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
      return PUT(CUDNN_TYPE_INT64, &zero, 1);
    default:
      return unimplemented(a);
    }
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
    switch (a) {
    case CUDNN_ATTR_ENGINEHEUR_RESULTS:
      return get_heur_results(&d->u.heur, type, requested, count, out);
    case CUDNN_ATTR_ENGINEHEUR_MODE:
      return PUT(CUDNN_TYPE_HEUR_MODE, &d->u.heur.mode, 1);
    case CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH:
      return fill_one(type, requested, count, out, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR,
                      &d->u.heur.graph, sizeof d->u.heur.graph);
    default:
      return unimplemented(a);
    }
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    switch (a) {
    case CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS: /* as the real library: write-only */
    case CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS:
      simcudnn_set_error("simcuda cuDNN: variant pack ids/pointers cannot be read once finalized");
      return CUDNN_STATUS_NOT_SUPPORTED;
    case CUDNN_ATTR_VARIANT_PACK_WORKSPACE:
      return PUT(CUDNN_TYPE_VOID_PTR, &d->u.vp.workspace, 1);
    default:
      return unimplemented(a);
    }
  case CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR:
  case CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR:
    return get_knob(d, a, type, requested, count, out);
  default:
    return is_op(d->type) ? get_op(&d->u.op, a, type, requested, count, out) : unimplemented(a);
  }
}

/* ---- execute ---- */

static cudnnStatus_t pointer_of(const bk_vpack *vp, const bk_tensor *t, void **ret) {
  for (int i = 0; i < vp->n_uids; i++)
    if (vp->uids[i] == t->uid) {
      if (!vp->ptrs[i]) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
      if ((uintptr_t)vp->ptrs[i] % (uintptr_t)t->align != 0) {
        simcudnn_set_error("simcuda cuDNN: pointer of tensor %lld not %lld-byte aligned",
                           (long long)t->uid, (long long)t->align);
        return CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER;
      }
      *ret = vp->ptrs[i];
      return CUDNN_STATUS_SUCCESS;
    }
  simcudnn_set_error("simcuda cuDNN: variant pack has no pointer for tensor %lld",
                     (long long)t->uid);
  return CUDNN_STATUS_BAD_PARAM;
}

/* Pointer of a non-virtual operand; NULL stays NULL for virtual ones. */
static cudnnStatus_t operand_ptr(const bk_vpack *vp, const bk_tensor *t, void **ret) {
  *ret = NULL;
  return t->is_virtual ? CUDNN_STATUS_SUCCESS : pointer_of(vp, t, ret);
}

/* The epilogue of a fused graph: every element of the main op's fp32 result
 * goes through the pointwise chain (virtual intermediates rounded to their
 * declared type) into the final non-virtual tensor. */
static void run_chain(const bk_graph *g, const bk_tensor *out, const float *acc,
                      void *const *b_ptrs, void *final_ptr) {
  const bk_tensor *final = &g->ops[g->chain[g->n_chain - 1]].y;
  int nd = out->t.nb_dims;
  int64_t idx[CUDNN_DIM_MAX] = {0}, total = 1;
  for (int d = 0; d < nd; d++)
    total *= out->t.dims[d];
  for (int64_t i = 0; i < total; i++) {
    float v = simcudnn_round_to(out->t.dtype, acc[i]);
    for (int c = 0; c < g->n_chain; c++) {
      const bk_op *pw = &g->ops[g->chain[c]];
      float b = 0.0f;
      if (pw->have_b) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++)
          off += (pw->b.t.dims[d] == 1 ? 0 : idx[d]) * pw->b.t.strides[d];
        b = simcudnn_load(pw->b.t.dtype, b_ptrs[c], off);
      }
      v = pw_apply(&pw->pw, (float)pw->alpha * v, (float)pw->beta * b);
      if (pw->y.is_virtual) v = simcudnn_round_to(pw->y.t.dtype, v);
    }
    int64_t off = 0;
    for (int d = 0; d < nd; d++)
      off += idx[d] * final->t.strides[d];
    simcudnn_store(final->t.dtype, final_ptr, off, v);
    for (int d = nd - 1; d >= 0 && ++idx[d] == out->t.dims[d]; d--)
      idx[d] = 0;
  }
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                                  cudnnBackendDescriptor_t variantPack) {
  const bk_desc *plan = as_desc(executionPlan), *vpd = as_desc(variantPack);
  if (!simcudnn_handle_ok(handle) || !plan || !vpd) return CUDNN_STATUS_BAD_PARAM;
  if (plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR ||
      vpd->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    return CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE;
  if (!plan->finalized || !vpd->finalized) return CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED;
  const bk_engine *e = &plan->u.plan.cfg.engine;
  const bk_graph *g = &e->graph;
  const bk_op *op = &g->ops[g->main];
  const bk_vpack *vp = &vpd->u.vp;
  void *x, *w, *y, *b_ptrs[BK_MAX_OPS] = {NULL}, *final_ptr = NULL;
  cudnnStatus_t st;
  if ((st = operand_ptr(vp, &op->x, &x)) || (st = operand_ptr(vp, &op->w, &w)) ||
      (st = operand_ptr(vp, &op->y, &y)))
    return st;
  for (int c = 0; c < g->n_chain; c++) {
    const bk_op *pw = &g->ops[g->chain[c]];
    if (pw->have_b && (st = pointer_of(vp, &pw->b, &b_ptrs[c]))) return st;
    if (c == g->n_chain - 1 && (st = pointer_of(vp, &pw->y, &final_ptr))) return st;
  }
  const bk_tensor *out = op_output(op);
  float *acc = NULL;
  if (g->n_chain > 0) {
    int64_t total = 1;
    for (int d = 0; d < out->t.nb_dims; d++)
      total *= out->t.dims[d];
    acc = malloc((size_t)total * sizeof *acc);
    if (!acc) return CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
    *(out == &op->x ? &x : out == &op->w ? &w : &y) = acc;
  }
  simcuda_kernel k;
  simcudnn_conv_problem cp;
  simcudnn_matmul_problem mp;
  if (is_conv_op(op->type)) {
    conv_problem(op, engine_math(e->index), &cp);
    if ((st = simcudnn_conv_check_shapes(&cp, CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH))) {
      free(acc);
      return st;
    }
    cp.x_ptr = x;
    cp.w_ptr = w;
    cp.y_ptr = y;
    simcudnn_conv_kernel(handle, &cp, &k);
  } else {
    matmul_problem(op, engine_math(e->index), &mp);
    mp.a_ptr = x;
    mp.b_ptr = w;
    mp.c_ptr = y;
    for (int d = 0; d < 3; d++) {
      void *v = NULL;
      if (op->have_ovr[d] && (st = pointer_of(vp, &op->ovr[d], &v))) {
        free(acc);
        return st;
      }
      mp.ovr_ptr[d] = v;
    }
    if (!simcudnn_matmul_kernel_of(handle, &mp, &k)) {
      free(acc);
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
  }
  /* One kernel: the convolution / matmul with the pointwise chain as its epilogue. */
  uint64_t token = simcuda_kernel_start(&k);
  if (is_conv_op(op->type))
    simcudnn_conv_compute(&cp);
  else
    simcudnn_matmul_compute(&mp);
  if (g->n_chain > 0) run_chain(g, out, acc, b_ptrs, final_ptr);
  simcuda_kernel_finish(&k, token);
  free(acc);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendPopulateCudaGraph(cudnnHandle_t handle,
                                            cudnnBackendDescriptor_t executionPlan,
                                            cudnnBackendDescriptor_t variantPack,
                                            cudaGraph_t graph) {
  (void)handle, (void)executionPlan, (void)variantPack, (void)graph;
  simcudnn_set_error("simcuda cuDNN: CUDA graph population not implemented");
  return CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API;
}

cudnnStatus_t cudnnBackendUpdateCudaGraph(cudnnHandle_t handle,
                                          cudnnBackendDescriptor_t executionPlan,
                                          cudnnBackendDescriptor_t variantPack, cudaGraph_t graph) {
  (void)handle, (void)executionPlan, (void)variantPack, (void)graph;
  simcudnn_set_error("simcuda cuDNN: CUDA graph update not implemented");
  return CUDNN_STATUS_NOT_SUPPORTED_CUDA_GRAPH_NATIVE_API;
}
