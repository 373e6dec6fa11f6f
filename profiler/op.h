/* The op record (op.c): what a hooked call asked for, decoded by its hook
 * module — the site key and the tensors to scan — and its enums' raw-file
 * names. */
#ifndef MPPROF_PROFILER_OP_H
#define MPPROF_PROFILER_OP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "analysis/raw_format.h"
#include "analysis/scan.h"
#include "analysis/shadow_core.h"

/* Tensor roles of one call: a GEMM's A, B, C, D and a cuBLASLt epilogue's
 * bias and GELU aux; a convolution's three tensors, the output's prior
 * value it blends (beta != 0), a fused convolution's z and bias, a fused
 * backend graph's pointwise operands. At most 8: the device scan's cookie
 * keeps a role in 3 bits (call.c). */
#define MPP_MAX_ROLES 6
#define MPP_MAX_PTRS 65536 /* pointer-array batches scanned per role and call */

typedef enum mpp_op_kind {
  MPP_OP_GEMM = 0,
  MPP_OP_CONV_FWD,
  MPP_OP_CONV_BWD_DATA,
  MPP_OP_CONV_BWD_FILTER,
  MPP_OP_MATMUL,
} mpp_op_kind;
const char *mpp_op_kind_name(mpp_op_kind kind);

/* Why a tensor role of a call was not scanned: MP_RAW_NOT_SCANNED
 * (analysis/raw_format.h) names them as raw-file keys. */
typedef enum mpp_ns_reason {
#define X(id, json, doc) MPP_NS_##id,
  MP_RAW_NOT_SCANNED(X)
#undef X
      MPP_NS_COUNT
} mpp_ns_reason;
const char *mpp_ns_reason_name(mpp_ns_reason r);

typedef struct mpp_conv {
  int64_t n, c, h, w, k, r, s;
  int64_t pad[2], stride[2], dilation[2]; /* height, width */
  int64_t groups;                         /* >= 1: w holds c / groups input channels per filter */
  /* A 3-D convolution (5-D tensors): x's depth d, the filter's depth t and
   * the depth's pad, stride and dilation; d = t = 0 in 2-D. */
  int64_t d, t, pad_d, stride_d, dilation_d;
} mpp_conv;

typedef struct mpp_role {
  const char *name;             /* "A", "x", ... */
  bool present;                 /* participates in this call (C only when beta != 0) */
  bool input;                   /* read by the op (host scans before the call; call.c) */
  mp_view view;                 /* view.data: the tensor (NULL with ptr_array set) */
  const void *const *ptr_array; /* pointer-array batch: view.batch pointers */
  mpp_ns_reason unscannable;    /* MPP_NS_COUNT when scannable */
  bool saturates;               /* an fp8 output the op converts with saturation (cuBLASLt) */
} mpp_role;

/* A hook's per-thread memo of the site its decoded op went to (hooks/gemm_decode.c
 * keeps one per memoised call; call.c fills and checks it): it holds while
 * the site table, the layer and the loss scale are the ones it saw. */
typedef struct mpp_site_memo {
  uint64_t op;              /* the decode it memoises (mpp_site_memo_op); 0: none */
  uint64_t sites_gen;       /* mpp_sites_generation() when filled; 0: empty */
  const char *layer;        /* the site's own copy of its layer path */
  const char *path_seen;    /* the interned layer path it was filled for, or NULL */
  const char *module_class; /* the layer's, as mpp_layer_current gave it */
  uint64_t loss_scale_bits;
  uint8_t phase;
  int site;
  struct mpp_site_hot *hot; /* the site's call counters (sites.h) */
} mpp_site_memo;

/* A new decode's id for its memo's `op`: unique in the process (call.c's
 * cache of sites is keyed by it). */
uint64_t mpp_site_memo_op(void);

typedef struct mpp_op {
  /* The site key (with the caller's layer). */
  const char *api; /* static string */
  mpp_op_kind kind;
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd; /* -1: absent */
  char transa, transb;        /* 0 for non-GEMMs */
  bool has_conv;
  mpp_conv conv;
  int ntypes;
  const char *type_keys[4];  /* "A".."D" or "x","w","y" */
  const char *type_names[4]; /* static: dtype names */
  const char *compute_type;  /* static or NULL */
  const char *scale_type;    /* static or NULL */
  int math_mode;             /* -1: null */
  const char *epilogue;      /* static or NULL */
  const char *conv_math;     /* legacy cuDNN cudnnMathType_t name, static or NULL */
  uint8_t fp8_scales;        /* MPP_FP8_* bits */
  bool fast_accum;           /* cuBLASLt FAST_ACCUM set (FP8 kernels may accumulate in less) */
  double loss_scale;         /* declared loss scale in force at the call; 0: none (call.c) */
  bool shapes_merged;        /* a site's key only: shapes cleared past the site cap (sites.c) */
  /* Per call, not part of the key. */
  void *stream;
  double alpha;            /* NAN: not readable here (device pointer, vector) */
  bool shadow_unsupported; /* a layout, scaling or epilogue shadow execution does not model */
  /* cuBLASLt epilogue as shadow execution applies it (analysis/shadow_core.h
   * MP_SH_EPI_*), and its bias vector (NULL: none), per call. */
  int shadow_epi;
  const void *shadow_bias;
  mp_dtype shadow_bias_dtype;
  int64_t shadow_bias_stride;
  /* A cuDNN convolution as shadow execution re-computes it (per call;
   * hooks/cudnn.c, hooks/cudnn_backend.c): set only for 4-D tensors (2-D
   * convolutions) or 5-D ones (3-D), groups that divide the channels
   * (op->conv.groups), a filter in NC[D]HW or N[D]HWC (legacy) or of
   * positive strides, alpha read (op->alpha). conv_geom: its geometry and
   * strides in elements, one group's channels and filters (all of
   * analysis/shadow_core.h mp_sh_conv but kind, which shadow.c sets). */
  bool conv_shadow;
  mp_sh_conv conv_geom;
  /* A cuDNN backend graph's plain matmul (per call; hooks/cudnn_backend.c
   * mpp_matmul_shadow_of) as shadow execution re-computes it: a strided
   * batched GEMM, op(A) m x k and op(B) k x n column-major in the sense of
   * analysis/shadow.h mp_shadow_operand (trans, ld), batch strides in
   * elements (0: the operand's batch extent 1, broadcast); alpha 1. */
  bool mm_shadow;
  bool mm_trans[2];
  int64_t mm_ld[2], mm_stride[2];
  /* cuBLASLt FP8 (per call): scalar A/B/C/D scales and AMAX_D as read on the
   * host path, NAN when not read (unset: no pointer; device memory; a block
   * scale mode); amax_d_ptr is read back after the call (call.c). A scalar
   * scale not readable here is in fp8_scale_ptr[] too: the device scan of a
   * scanned call reads it (call.c). */
  double fp8_scale[4];
  bool fp8_scale_unread[4]; /* a pointer was set but its value not read here */
  const void *fp8_scale_ptr[4];
  /* The scalar fp32 scales shadow execution applies (per call): A's and B's
   * where A is fp8, D's where D is fp8 (cuBLASLt applies them there), as
   * the op's pointers, host or device memory; NULL: none (C's is not used:
   * C is left out of the product measured). */
  const float *shadow_scale[4];
  /* ... or A's and B's per-block scales (A_/B_SCALE_MODE one of
   * analysis/shadow_core.h MP_SH_BLOCKS_*), per call; NULL: none. */
  const void *shadow_blocks[2];
  int shadow_block_mode[2];
  const void *amax_d_ptr;
  double amax_d;
  /* The same for the aux a GELU_AUX* epilogue writes (an fp8 aux is stored
   * times AUX_SCALE; AUX_AMAX is its max |x| before the scale). */
  double aux_scale;
  bool aux_scale_unread;
  const void *aux_scale_ptr;
  const void *amax_aux_ptr;
  double amax_aux;
  uint64_t ptr_align;       /* 0: no pointer seen */
  mpp_site_memo *site_memo; /* per call: NULL, or the hook's memo of this op's site */
  int nroles;
  int roles_dropped; /* tensors mpp_op_role had no room for: not_scanned roles_full */
  mpp_role roles[MPP_MAX_ROLES];
} mpp_op;

#define MPP_FP8_A 1u
#define MPP_FP8_B 2u
#define MPP_FP8_C 4u
#define MPP_FP8_D 8u
#define MPP_FP8_AMAX_D 16u
#define MPP_FP8_AUX 32u      /* EPILOGUE_AUX_SCALE_POINTER set (GELU_AUX*) */
#define MPP_FP8_AMAX_AUX 64u /* EPILOGUE_AUX_AMAX_POINTER set (GELU_AUX*) */
#define MPP_FP8_VALUES 7     /* the values behind those bits (bit 1 << i: value i) */
_Static_assert(MPP_FP8_AMAX_D == 1u << MP_FP8_ROW_amax_D && MPP_FP8_AUX == 1u << MP_FP8_ROW_aux &&
                   MPP_FP8_AMAX_AUX == 1u << MP_FP8_ROW_amax_aux && MPP_FP8_VALUES == MP_FP8_ROWS,
               "MPP_FP8_* bit i is row i of MP_RAW_FP8_SCALES");

void mpp_op_init(mpp_op *op, const char *api, mpp_op_kind kind);
/* Adds a role; returns it for the caller to fill its view, or NULL when the
 * op holds MPP_MAX_ROLES already (counted in roles_dropped: the call's
 * not_scanned roles_full). */
mpp_role *mpp_op_role(mpp_op *op, const char *name, bool input);
void mpp_op_type(mpp_op *op, const char *key, const char *dtype_name);
/* ptr_align: the largest power of two (up to 256) dividing every pointer
 * noted. In line: a memoised GEMM notes its three pointers on every call. */
static inline void mpp_op_note_ptr(mpp_op *op, const void *p) {
  if (!p) return;
  uint64_t a = (uint64_t)(uintptr_t)p;
  a &= -a; /* lowest set bit: the largest power of two dividing p */
  if (a > 256) a = 256;
  if (!op->ptr_align || a < op->ptr_align) op->ptr_align = a;
}
/* mpp_host_readable: profiler/hostmem.h */

/* A convolution's tensors by what they are, x (the activations, or their
 * gradient dx), w (the filter, or dw), y (the output, or dy), named as the
 * site's roles for each kind. The one table of those names: the decoder
 * names the tensors with it, the shadow finds them by it. */
static inline void mpp_conv_role_names(mpp_op_kind kind, const char *xwy[3]) {
  bool data = kind == MPP_OP_CONV_BWD_DATA, filter = kind == MPP_OP_CONV_BWD_FILTER;
  xwy[0] = data ? "dx" : "x";
  xwy[1] = filter ? "dw" : "w";
  xwy[2] = data || filter ? "dy" : "y";
}

/* The role of an output's prior value, which a convolution reads when it
 * blends its result into it (cuDNN's beta != 0: y = alpha conv + beta y):
 * an input over the output's memory, named for the output. */
static inline const char *mpp_conv_prior_name(mpp_op_kind kind) {
  return kind == MPP_OP_CONV_BWD_DATA     ? "dx_prior"
         : kind == MPP_OP_CONV_BWD_FILTER ? "dw_prior"
                                          : "y_prior";
}

#endif
