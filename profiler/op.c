/* The op record (mpp_op): what a hooked call asked for, as its hook module
 * decoded it — the site key and the tensors to scan — and the names the raw
 * file gives its enums. Plain data: used by the hook modules, the call path,
 * the site table and the writer, and using none of them. */
#include "mpp.h"
#include "profiler/op.h"

#include <math.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic uint64_t memo_ops;

uint64_t mpp_site_memo_op(void) {
  return atomic_fetch_add_explicit(&memo_ops, 1, memory_order_relaxed) + 1;
}

const char *mpp_op_kind_name(mpp_op_kind kind) {
  static const char *const names[] = {"gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_filter",
                                      "matmul"};
  return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "gemm";
}

const char *mpp_ns_reason_name(mpp_ns_reason r) {
#define X(id, json, doc) json,
  static const char *const names[MPP_NS_COUNT] = {MP_RAW_NOT_SCANNED(X)};
#undef X
  return (unsigned)r < MPP_NS_COUNT ? names[r] : "unknown";
}

void mpp_op_init(mpp_op *op, const char *api, mpp_op_kind kind) {
  memset(op, 0, sizeof *op);
  op->api = api;
  op->kind = kind;
  op->batch = 1;
  op->lda = op->ldb = op->ldc = op->ldd = -1;
  op->math_mode = -1;
  op->alpha = NAN;
  for (int i = 0; i < 4; i++)
    op->fp8_scale[i] = NAN;
  op->amax_d = NAN;
  op->aux_scale = op->amax_aux = NAN;
}

mpp_role *mpp_op_role(mpp_op *op, const char *name, bool input) {
  if (op->nroles == MPP_MAX_ROLES) {
    op->roles_dropped++;
    return NULL;
  }
  mpp_role *r = &op->roles[op->nroles++];
  memset(r, 0, sizeof *r);
  r->name = name;
  r->present = true;
  r->input = input;
  r->view.dtype = MP_DTYPE_INVALID;
  r->unscannable = MPP_NS_COUNT;
  return r;
}

void mpp_op_type(mpp_op *op, const char *key, const char *dtype_name) {
  if (op->ntypes == 4) return;
  op->type_keys[op->ntypes] = key;
  op->type_names[op->ntypes] = dtype_name;
  op->ntypes++;
}
