/* Convolution ops (see conv_decode.h). The implicit-GEMM shape follows the
 * usual mapping: forward m = N*P*Q, n = K, k = C*R*S; backward data
 * m = N*H*W, n = C, k = K*R*S; backward filter m = K, n = C*R*S, k = N*P*Q. */
#include "conv_decode.h"

#include <math.h>
#include <string.h>

#include <cudnn.h>

#include "cuda_types.h"

static int64_t dim(const mpp_tensor_desc *t, int i) {
  return i < t->nd ? t->dims[i] : 1;
}

static int64_t spatial(const mpp_tensor_desc *t) {
  int64_t n = 1;
  for (int i = 2; i < t->nd; i++)
    n *= t->dims[i];
  return n;
}

static int64_t count(const mpp_tensor_desc *t) {
  int64_t n = 1;
  for (int i = 0; i < t->nd; i++)
    n *= t->dims[i];
  return n;
}

/* Packed in some order: sorted by stride, each stride is the product of the
 * dims below it. A filter (no strides) is packed by definition. */
static bool packed(const mpp_tensor_desc *t) {
  bool any = false;
  for (int i = 0; i < t->nd; i++)
    any |= t->strides[i] != 0;
  if (!any) return true;
  bool used[MPP_CONV_MAX_DIMS] = {false};
  int64_t expect = 1;
  for (int n = 0; n < t->nd; n++) {
    int best = -1;
    for (int i = 0; i < t->nd; i++)
      if (!used[i] && (best < 0 || t->strides[i] < t->strides[best] ||
                       (t->strides[i] == t->strides[best] && t->dims[i] < t->dims[best])))
        best = i;
    used[best] = true;
    if (t->dims[best] == 1) continue;
    if (t->strides[best] != expect) return false;
    expect *= t->dims[best];
  }
  return true;
}

void mpp_conv_tensor_view(mpp_role *r, const mpp_tensor_desc *t, const void *p) {
  r->view.dtype = mpp_cudnn_dtype(t->dtype);
  r->view.data = p;
  int64_t n = count(t);
  r->view.rows = n > 0 ? (uint64_t)n : 0;
  r->view.cols = 1;
  r->view.ld = r->view.rows;
  r->view.batch = 1;
  if (r->view.dtype == MP_DTYPE_INVALID)
    r->unscannable = MPP_NS_DTYPE;
  else if (!packed(t))
    r->unscannable = MPP_NS_LAYOUT;
  if (n <= 0) r->present = false;
}

void mpp_conv_add_prior(mpp_op *op, const mpp_tensor_desc *out, const void *p) {
  mpp_role *r = mpp_op_role(op, mpp_conv_prior_name(op->kind), true);
  if (r) mpp_conv_tensor_view(r, out, p);
}

bool mpp_cudnn_scale_nonzero(const void *scale, int data_type) {
  if (!scale) return false;
  if (data_type == CUDNN_DATA_DOUBLE) return *(const double *)scale != 0;
  return *(const float *)scale != 0;
}

/* Role order of `kind` (0 forward, 1 backward data, 2 backward filter). */
static int role_order(mpp_op_kind kind) {
  return kind == MPP_OP_CONV_BWD_DATA ? 1 : kind == MPP_OP_CONV_BWD_FILTER ? 2 : 0;
}

/* Where the activation tensor x, the filter w and the output-side tensor y
 * lie among the tensors in role order (ri: role_order). */
static void xwy_at(int ri, int at[3]) {
  at[0] = ri == 1 ? 2 : 0;
  at[1] = ri == 2 ? 2 : 1;
  at[2] = ri == 0 ? 2 : ri == 1 ? 0 : 1;
}

/* x, w and y among the tensors in role order. */
static void xwy(int ri, const mpp_tensor_desc *t0, const mpp_tensor_desc *t1,
                const mpp_tensor_desc *t2, const mpp_tensor_desc **x, const mpp_tensor_desc **w,
                const mpp_tensor_desc **y) {
  const mpp_tensor_desc *t[3] = {t0, t1, t2};
  int at[3];
  xwy_at(ri, at);
  *x = t[at[0]];
  *w = t[at[1]];
  *y = t[at[2]];
}

void mpp_conv_decode(mpp_op *op, const char *api, mpp_op_kind kind, const mpp_tensor_desc *t0,
                     const mpp_tensor_desc *t1, const mpp_tensor_desc *t2, const mpp_conv_desc *c,
                     const void *p0, const void *p1, const void *p2) {
  int ri = role_order(kind), at[3];
  const char *names[3], *roles[3]; /* x, w, y; in role order */
  mpp_conv_role_names(kind, names);
  xwy_at(ri, at);
  for (int i = 0; i < 3; i++)
    roles[at[i]] = names[i];
  const mpp_tensor_desc *x, *w, *y;
  xwy(ri, t0, t1, t2, &x, &w, &y);

  mpp_op_init(op, api, kind);
  op->has_conv = true;
  mpp_conv *g = &op->conv;
  /* 3-D: the depth is the first spatial dimension of the tensors and of the
   * descriptor's pads, strides and dilations */
  int depth = x->nd == 5 && w->nd == 5 && c->nsp == 3;
  g->n = dim(x, 0);
  g->c = dim(x, 1);
  g->h = dim(x, 2 + depth);
  g->w = dim(x, 3 + depth);
  g->k = dim(w, 0);
  g->r = dim(w, 2 + depth);
  g->s = dim(w, 3 + depth);
  for (int i = 0; i < 2; i++) {
    g->pad[i] = c->pad[depth + i];
    g->stride[i] = c->stride[depth + i];
    g->dilation[i] = c->dilation[depth + i];
  }
  if (depth) {
    g->d = dim(x, 2);
    g->t = dim(w, 2);
    g->pad_d = c->pad[0];
    g->stride_d = c->stride[0];
    g->dilation_d = c->dilation[0];
  }
  /* Groups: as the descriptor says, else x's channels over w's (a filter
   * holds c / groups of them); each group is an implicit GEMM of its own, a
   * batch of groups. */
  int64_t wc = dim(w, 1);
  g->groups = c->groups > 1 ? c->groups : wc > 0 && g->c > wc && g->c % wc == 0 ? g->c / wc : 1;
  int64_t gc = g->c / g->groups, gk = g->k / g->groups;
  int64_t npq = dim(y, 0) * spatial(y), crs = gc * spatial(w), krs = gk * spatial(w);
  op->batch = g->groups;
  switch (kind) {
  case MPP_OP_CONV_BWD_DATA:
    op->m = g->n * spatial(x);
    op->n = gc;
    op->k = krs;
    break;
  case MPP_OP_CONV_BWD_FILTER:
    op->m = gk;
    op->n = crs;
    op->k = npq;
    break;
  default:
    op->m = npq;
    op->n = gk;
    op->k = crs;
  }
  mpp_op_type(op, "x", mpp_cudnn_dtype_name(x->dtype));
  mpp_op_type(op, "w", mpp_cudnn_dtype_name(w->dtype));
  mpp_op_type(op, "y", mpp_cudnn_dtype_name(y->dtype));
  op->compute_type = mpp_cudnn_dtype_name(c->comp_type);

  mpp_conv_tensor_view(mpp_op_role(op, roles[0], true), t0, p0);
  mpp_conv_tensor_view(mpp_op_role(op, roles[1], true), t1, p1);
  mpp_conv_tensor_view(mpp_op_role(op, roles[2], false), t2, p2);
  mpp_op_note_ptr(op, p0);
  mpp_op_note_ptr(op, p1);
  mpp_op_note_ptr(op, p2);
}

/* Are x, w, y (and c) a convolution shadow execution re-computes: 2-D on
 * 4-D tensors, 3-D on 5-D ones? */
static bool shadow_dims(const mpp_tensor_desc *x, const mpp_tensor_desc *w,
                        const mpp_tensor_desc *y, const mpp_conv_desc *c) {
  return (x->nd == 4 || x->nd == 5) && w->nd == x->nd && y->nd == x->nd && c->nsp == x->nd - 2;
}

/* The geometry shadow execution reads (op.h conv_geom), w's strides given
 * (x->nd of them). A 3-D convolution's depth (the first spatial dimension)
 * goes to the depth fields, its height and width where a 2-D one's are. */
static void conv_shadow_set(mpp_op *op, const mpp_tensor_desc *x, const mpp_tensor_desc *w,
                            const int64_t *ws, const mpp_tensor_desc *y, const mpp_conv_desc *c,
                            double alpha) {
  mp_sh_conv *g = &op->conv_geom;
  memset(g, 0, sizeof *g);
  int h = x->nd - 2; /* the height's dimension; the width's follows it */
  int64_t groups = op->conv.groups;
  g->flip = c->mode == CUDNN_CONVOLUTION;
  g->groups = groups;
  g->n = x->dims[0], g->c = x->dims[1] / groups, g->h = x->dims[h], g->w = x->dims[h + 1];
  g->k = w->dims[0] / groups, g->r = w->dims[h], g->s = w->dims[h + 1];
  g->p = y->dims[h], g->q = y->dims[h + 1];
  for (int i = 0; i < 2; i++) {
    g->pad[i] = c->pad[h - 2 + i];
    g->stride[i] = c->stride[h - 2 + i];
    g->dilation[i] = c->dilation[h - 2 + i];
  }
  const int at[4] = {0, 1, h, h + 1}; /* N, C, H, W among the dims */
  for (int i = 0; i < 4; i++) {
    g->xs[i] = x->strides[at[i]];
    g->ws[i] = ws[at[i]];
    g->ys[i] = y->strides[at[i]];
  }
  if (x->nd == 5) {
    g->d = x->dims[2], g->t = w->dims[2], g->o = y->dims[2];
    g->pad_d = c->pad[0], g->stride_d = c->stride[0], g->dilation_d = c->dilation[0];
    g->xs_d = x->strides[2], g->ws_d = ws[2], g->ys_d = y->strides[2];
  }
  op->alpha = alpha;
  op->conv_shadow = true;
}

/* Do x's, w's and y's channels make `groups` groups, as the op was decoded
 * (mpp_conv_decode: op->conv.groups)? x holds groups * C channels, w K
 * filters of C channels each, K a multiple of groups, y K channels. */
static bool groups_fit(const mpp_op *op, const mpp_tensor_desc *x, const mpp_tensor_desc *w,
                       const mpp_tensor_desc *y, int64_t groups) {
  return groups >= 1 && groups == op->conv.groups && w->dims[1] > 0 &&
         x->dims[1] == w->dims[1] * groups && w->dims[0] % groups == 0 && y->dims[1] == w->dims[0];
}

/* What shadow execution needs to re-compute a convolution (op.h
 * conv_shadow): 4-D x, w, y (dx, dw, dy backward) or 5-D ones, any group
 * count, a filter in NC[D]HW or N[D]HWC, alpha (host memory: double for
 * double data, else float). */
void mpp_conv_shadow_of(mpp_op *op, const mpp_tensor_desc *t0, const mpp_tensor_desc *t1,
                        const mpp_tensor_desc *t2, const mpp_conv_desc *c, const void *alpha) {
  const mpp_tensor_desc *x, *w, *y;
  xwy(role_order(op->kind), t0, t1, t2, &x, &w, &y);
  if (!alpha || !shadow_dims(x, w, y, c) || !groups_fit(op, x, w, y, c->groups) ||
      (w->format != CUDNN_TENSOR_NCHW && w->format != CUDNN_TENSOR_NHWC))
    return;
  /* a packed filter's strides: K, C, then the spatial dims in order
   * (NC[D]HW), or C innermost (N[D]HWC) */
  int64_t ws[5], inner = 1;
  for (int i = w->nd - 1; i >= 2; i--) {
    ws[i] = inner * (w->format == CUDNN_TENSOR_NHWC ? w->dims[1] : 1);
    inner *= w->dims[i];
  }
  ws[1] = w->format == CUDNN_TENSOR_NHWC ? 1 : inner;
  ws[0] = inner * w->dims[1];
  conv_shadow_set(op, x, w, ws, y, c,
                  x->dtype == CUDNN_DATA_DOUBLE ? *(const double *)alpha : *(const float *)alpha);
}

void mpp_conv_shadow_bias_act(mpp_op *op, const mpp_tensor_desc *b, const void *pb, bool relu) {
  if (!op->conv_shadow) return;
  const mp_sh_conv *g = &op->conv_geom;
  int64_t k = g->k * g->groups; /* output channels */
  bool ok = pb && (b->nd == 4 || b->nd == 5) && b->dims[1] == k && (k == 1 || b->strides[1] == 1);
  for (int i = 0; ok && i < b->nd; i++)
    ok = i == 1 || b->dims[i] == 1;
  mp_dtype dt = mpp_cudnn_dtype(b->dtype);
  if (!ok || dt == MP_DTYPE_INVALID) {
    op->conv_shadow = false;
    return;
  }
  op->shadow_epi = relu ? MP_SH_EPI_RELU : MP_SH_EPI_NONE;
  op->shadow_bias = pb;
  op->shadow_bias_dtype = dt;
  op->shadow_bias_stride = g->groups > 1 ? g->k : 0; /* a group's channels follow the last's */
}

void mpp_conv_shadow_of_strided(mpp_op *op, const mpp_tensor_desc *t0, const mpp_tensor_desc *t1,
                                const mpp_tensor_desc *t2, const mpp_conv_desc *c, double alpha) {
  const mpp_tensor_desc *x, *w, *y;
  xwy(role_order(op->kind), t0, t1, t2, &x, &w, &y);
  /* the group count: x's channels over w's (w: K, C / groups, [T,] R, S) */
  if (isnan(alpha) || !shadow_dims(x, w, y, c) || w->dims[1] <= 0 || x->dims[1] % w->dims[1] != 0 ||
      !groups_fit(op, x, w, y, x->dims[1] / w->dims[1]))
    return;
  for (int i = 0; i < x->nd; i++)
    if (x->strides[i] <= 0 || w->strides[i] <= 0 || y->strides[i] <= 0) return;
  conv_shadow_set(op, x, w, w->strides, y, c, alpha);
}

void mpp_conv_decode_call(mpp_op *op, const char *api, mpp_op_kind kind, const mpp_tensor_desc t[3],
                          const mpp_conv_desc *c, const char *conv_math, void *stream,
                          const void *p0, const void *p1, const void *p2) {
  mpp_conv_decode(op, api, kind, &t[0], &t[1], &t[2], c, p0, p1, p2);
  op->conv_math = conv_math;
  op->stream = stream;
}
