/* Reference loops behind every simulated cuDNN kernel: convolution forward,
 * backward data, backward filter (with cuDNN's alpha/beta blending and the
 * fused bias + ReLU epilogue) and the backend matmul, on strided host tensors.
 *
 * Arithmetic is what the real kernels do, in a fixed order: inputs decoded
 * exactly (fp16/bf16 via analysis/convert.h), rounded to TF32 (RNE) when the
 * kernel is a TF32 Tensor Core kernel, products accumulated in fp32, the
 * result blended as alpha * acc + beta * old in fp32 and stored with RNE.
 * As documented for cuDNN, beta == 0 means the old output is not read. */
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"
#include "cudnn_sim.h"
#include "simcuda_internal.h"

bool simcudnn_tf32_allowed(void) {
  const char *v = getenv("NVIDIA_TF32_OVERRIDE");
  return !(v && strcmp(v, "0") == 0);
}

unsigned simcudnn_dtype_size(cudnnDataType_t dtype) {
  switch (dtype) {
  case CUDNN_DATA_FLOAT:
    return 4;
  case CUDNN_DATA_HALF:
  case CUDNN_DATA_BFLOAT16:
    return 2;
  default:
    return 0;
  }
}

void simcudnn_packed_strides(int nb_dims, const int64_t *dims, int64_t *ret_strides) {
  int64_t s = 1;
  for (int i = nb_dims - 1; i >= 0; i--) {
    ret_strides[i] = s;
    s *= dims[i];
  }
}

int64_t simcudnn_tensor_span_bytes(const simcudnn_tensor *t) {
  int64_t last = 0;
  for (int i = 0; i < t->nb_dims; i++)
    last += (t->dims[i] - 1) * t->strides[i];
  return (last + 1) * (int64_t)simcudnn_dtype_size(t->dtype);
}

static inline float load(cudnnDataType_t dt, const void *base, int64_t i) {
  switch (dt) {
  case CUDNN_DATA_HALF:
    return mp_fp16_to_float(((const uint16_t *)base)[i]);
  case CUDNN_DATA_BFLOAT16:
    return mp_bf16_to_float(((const uint16_t *)base)[i]);
  default:
    return ((const float *)base)[i];
  }
}

static inline void store(cudnnDataType_t dt, void *base, int64_t i, float v) {
  switch (dt) {
  case CUDNN_DATA_HALF:
    ((uint16_t *)base)[i] = mp_float_to_fp16(v);
    break;
  case CUDNN_DATA_BFLOAT16:
    ((uint16_t *)base)[i] = mp_float_to_bf16(v);
    break;
  default:
    ((float *)base)[i] = v;
    break;
  }
}

float simcudnn_load(cudnnDataType_t dt, const void *base, int64_t i) {
  return load(dt, base, i);
}

void simcudnn_store(cudnnDataType_t dt, void *base, int64_t i, float v) {
  store(dt, base, i, v);
}

float simcudnn_round_to(cudnnDataType_t dt, float v) {
  switch (dt) {
  case CUDNN_DATA_HALF:
    return mp_fp16_to_float(mp_float_to_fp16(v));
  case CUDNN_DATA_BFLOAT16:
    return mp_bf16_to_float(mp_float_to_bf16(v));
  default:
    return v;
  }
}

/* An operand as the MMA unit sees it: TF32 kernels drop fp32 inputs to TF32. */
static inline float operand(cudnnDataType_t dt, const void *base, int64_t i, bool tf32) {
  float v = load(dt, base, i);
  return tf32 ? mp_float_to_tf32(v) : v;
}

static inline float blend(float alpha, float acc, float beta, cudnnDataType_t dt, const void *out,
                          int64_t i) {
  float r = alpha * acc;
  if (beta != 0.0f) r += beta * load(dt, out, i);
  return r;
}

int64_t simcudnn_conv_out_dim(int64_t in, int64_t filter, int64_t pre, int64_t post, int64_t stride,
                              int64_t dilation) {
  int64_t span = (filter - 1) * dilation + 1;
  int64_t room = in + pre + post - span;
  if (room < 0 || stride <= 0) return 0;
  return room / stride + 1;
}

cudnnStatus_t simcudnn_conv_check_shapes(simcudnn_conv_problem *p, cudnnStatus_t shape_status) {
  const simcudnn_conv_geom *g = &p->geom;
  int nd = g->spatial + 2;
  if (g->spatial < 1 || g->spatial > SIMCUDNN_MAX_SPATIAL) {
    simcudnn_set_error("simcuda cuDNN: %d spatial dimensions (1..3 supported)", g->spatial);
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  if (p->x.nb_dims != nd || p->w.nb_dims != nd || p->y.nb_dims != nd) {
    simcudnn_set_error("simcuda cuDNN: x/w/y have %d/%d/%d dims, convolution needs %d",
                       p->x.nb_dims, p->w.nb_dims, p->y.nb_dims, nd);
    return shape_status;
  }
  for (int i = 0; i < nd; i++)
    if (p->x.dims[i] <= 0 || p->w.dims[i] <= 0 || p->y.dims[i] <= 0 || p->x.strides[i] <= 0 ||
        p->w.strides[i] <= 0 || p->y.strides[i] <= 0) {
      simcudnn_set_error("simcuda cuDNN: non-positive dimension or stride");
      return shape_status;
    }
  for (int i = 0; i < g->spatial; i++)
    if (g->stride[i] < 1 || g->dilation[i] < 1 || g->pre_pad[i] < 0 || g->post_pad[i] < 0) {
      simcudnn_set_error("simcuda cuDNN: invalid convolution stride/dilation/padding");
      return shape_status;
    }
  int64_t n = p->x.dims[0], c = p->x.dims[1], k = p->w.dims[0], cg = p->w.dims[1];
  int groups = g->groups;
  if (groups == 0) {
    if (c % cg != 0) {
      simcudnn_set_error("simcuda cuDNN: C(x)=%lld is not a multiple of C(w)=%lld", (long long)c,
                         (long long)cg);
      return shape_status;
    }
    groups = (int)(c / cg);
  }
  if (c != cg * groups || k % groups != 0 || p->y.dims[0] != n || p->y.dims[1] != k) {
    simcudnn_set_error("simcuda cuDNN: channels do not match (x C=%lld, w K=%lld C=%lld, y N=%lld "
                       "K=%lld, groups %d)",
                       (long long)c, (long long)k, (long long)cg, (long long)p->y.dims[0],
                       (long long)p->y.dims[1], groups);
    return shape_status;
  }
  for (int i = 0; i < g->spatial; i++) {
    int64_t out = simcudnn_conv_out_dim(p->x.dims[2 + i], p->w.dims[2 + i], g->pre_pad[i],
                                        g->post_pad[i], g->stride[i], g->dilation[i]);
    if (out <= 0 || out != p->y.dims[2 + i]) {
      simcudnn_set_error("simcuda cuDNN: output spatial dim %d is %lld, the convolution gives %lld",
                         i, (long long)p->y.dims[2 + i], (long long)out);
      return shape_status;
    }
  }
  p->geom.groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

cudnnDataType_t simcudnn_conv_input_dtype(const simcudnn_conv_problem *p) {
  return p->kind == SIMCUDNN_DGRAD ? p->y.dtype : p->x.dtype;
}

static const simcudnn_tensor *conv_output(const simcudnn_conv_problem *p) {
  return p->kind == SIMCUDNN_FPROP ? &p->y : p->kind == SIMCUDNN_DGRAD ? &p->x : &p->w;
}

cudnnStatus_t simcudnn_conv_check_types(const simcudnn_conv_problem *p) {
  const simcudnn_tensor *out = conv_output(p);
  const simcudnn_tensor *in_a = p->kind == SIMCUDNN_DGRAD ? &p->y : &p->x;
  const simcudnn_tensor *in_b = p->kind == SIMCUDNN_WGRAD ? &p->y : &p->w;
  if (in_a->dtype != in_b->dtype || (out->dtype != in_a->dtype && !p->output_any)) {
    simcudnn_set_error("simcuda cuDNN: mixed x/w/y data types (%d/%d/%d)", p->x.dtype, p->w.dtype,
                       p->y.dtype);
    return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  }
  if (simcudnn_dtype_size(in_a->dtype) == 0 || simcudnn_dtype_size(out->dtype) == 0) {
    simcudnn_set_error("simcuda cuDNN: data type %d not implemented (float, half, bfloat16)",
                       simcudnn_dtype_size(in_a->dtype) == 0 ? in_a->dtype : out->dtype);
    return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  }
  if (p->geom.compute != CUDNN_DATA_FLOAT) {
    simcudnn_set_error("simcuda cuDNN: compute type %d not implemented (float only)",
                       p->geom.compute);
    return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  }
  return CUDNN_STATUS_SUCCESS;
}

simcudnn_math simcudnn_conv_math(cudnnMathType_t requested, const simcudnn_conv_problem *p) {
  if (requested == CUDNN_FMA_MATH) return SIMCUDNN_MATH_FMA;
  if (simcudnn_conv_input_dtype(p) == CUDNN_DATA_FLOAT && !simcudnn_tf32_allowed())
    return SIMCUDNN_MATH_FMA;
  if (p->x.dims[1] % 8 != 0 || p->w.dims[0] % 8 != 0 || p->geom.groups > 1)
    return SIMCUDNN_MATH_FMA;
  return SIMCUDNN_MATH_TC;
}

/* Geometry padded to three spatial dims (size 1, stride 0) so one loop nest serves 1-D to 3-D. */
typedef struct geo3 {
  int64_t n, c, k, cg, kg;
  int64_t in[3], flt[3], out[3];
  int64_t pad[3], str[3], dil[3];
  int64_t xs[5], ws[5], ys[5]; /* strides: batch/channel, then 3 spatial */
  bool flip;
} geo3;

static void geo3_init(const simcudnn_conv_problem *p, geo3 *g) {
  const simcudnn_conv_geom *cg = &p->geom;
  g->n = p->x.dims[0];
  g->c = p->x.dims[1];
  g->k = p->w.dims[0];
  g->cg = p->w.dims[1];
  g->kg = g->k / cg->groups;
  for (int i = 0; i < 2; i++) {
    g->xs[i] = p->x.strides[i];
    g->ws[i] = p->w.strides[i];
    g->ys[i] = p->y.strides[i];
  }
  for (int i = 0; i < 3; i++) {
    bool used = i < cg->spatial;
    g->in[i] = used ? p->x.dims[2 + i] : 1;
    g->flt[i] = used ? p->w.dims[2 + i] : 1;
    g->out[i] = used ? p->y.dims[2 + i] : 1;
    g->pad[i] = used ? cg->pre_pad[i] : 0;
    g->str[i] = used ? cg->stride[i] : 1;
    g->dil[i] = used ? cg->dilation[i] : 1;
    g->xs[2 + i] = used ? p->x.strides[2 + i] : 0;
    g->ws[2 + i] = used ? p->w.strides[2 + i] : 0;
    g->ys[2 + i] = used ? p->y.strides[2 + i] : 0;
  }
  /* CUDNN_CONVOLUTION is the mathematical convolution: the filter is applied flipped. */
  g->flip = cg->mode == CUDNN_CONVOLUTION;
}

/* Offset of the filter tap r (logical, already un-flipped) for output channel k, input channel cg.
 */
static inline int64_t w_off(const geo3 *g, int64_t k, int64_t cg, const int64_t r[3]) {
  int64_t o = k * g->ws[0] + cg * g->ws[1];
  for (int i = 0; i < 3; i++)
    o += (g->flip ? g->flt[i] - 1 - r[i] : r[i]) * g->ws[2 + i];
  return o;
}

static float epilogue(const simcudnn_conv_problem *p, int64_t n, int64_t k, const int64_t q[3],
                      float v) {
  if (p->alpha2 != 0.0f) {
    int64_t zo = n * p->z->strides[0] + k * p->z->strides[1];
    for (int i = 0; i < p->geom.spatial; i++)
      zo += q[i] * p->z->strides[2 + i];
    v += p->alpha2 * load(p->z->dtype, p->z_ptr, zo);
  }
  if (p->bias_ptr) v += load(p->bias->dtype, p->bias_ptr, k * p->bias->strides[1]);
  if (p->relu && v < 0.0f) v = 0.0f; /* NaN passes through */
  return v;
}

static void fprop(const simcudnn_conv_problem *p, const geo3 *g, bool tf32) {
  cudnnDataType_t xt = p->x.dtype, wt = p->w.dtype, yt = p->y.dtype;
  int64_t q[3], r[3];
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t k = 0; k < g->k; k++)
      for (q[0] = 0; q[0] < g->out[0]; q[0]++)
        for (q[1] = 0; q[1] < g->out[1]; q[1]++)
          for (q[2] = 0; q[2] < g->out[2]; q[2]++) {
            int64_t grp = k / g->kg;
            float acc = 0.0f;
            for (int64_t cg = 0; cg < g->cg; cg++) {
              int64_t c = grp * g->cg + cg;
              for (r[0] = 0; r[0] < g->flt[0]; r[0]++)
                for (r[1] = 0; r[1] < g->flt[1]; r[1]++)
                  for (r[2] = 0; r[2] < g->flt[2]; r[2]++) {
                    int64_t xo = n * g->xs[0] + c * g->xs[1];
                    bool inside = true;
                    for (int i = 0; i < 3; i++) {
                      int64_t at = q[i] * g->str[i] - g->pad[i] + r[i] * g->dil[i];
                      inside = inside && at >= 0 && at < g->in[i];
                      xo += at * g->xs[2 + i];
                    }
                    if (!inside) continue;
                    acc += operand(xt, p->x_ptr, xo, tf32) *
                           operand(wt, p->w_ptr, w_off(g, k, cg, r), tf32);
                  }
            }
            int64_t yo = n * g->ys[0] + k * g->ys[1];
            for (int i = 0; i < 3; i++)
              yo += q[i] * g->ys[2 + i];
            float v = blend(p->alpha, acc, p->beta, yt, p->y_ptr, yo);
            if (p->epilogue) v = epilogue(p, n, k, q, v);
            store(yt, p->y_ptr, yo, v);
          }
}

static void dgrad(const simcudnn_conv_problem *p, const geo3 *g, bool tf32) {
  cudnnDataType_t xt = p->x.dtype, wt = p->w.dtype, yt = p->y.dtype;
  int64_t at[3], r[3], q[3];
  for (int64_t n = 0; n < g->n; n++)
    for (int64_t c = 0; c < g->c; c++)
      for (at[0] = 0; at[0] < g->in[0]; at[0]++)
        for (at[1] = 0; at[1] < g->in[1]; at[1]++)
          for (at[2] = 0; at[2] < g->in[2]; at[2]++) {
            int64_t grp = c / g->cg, cg = c % g->cg;
            float acc = 0.0f;
            for (int64_t kk = 0; kk < g->kg; kk++) {
              int64_t k = grp * g->kg + kk;
              for (r[0] = 0; r[0] < g->flt[0]; r[0]++)
                for (r[1] = 0; r[1] < g->flt[1]; r[1]++)
                  for (r[2] = 0; r[2] < g->flt[2]; r[2]++) {
                    int64_t yo = n * g->ys[0] + k * g->ys[1];
                    bool hit = true;
                    for (int i = 0; i < 3; i++) {
                      int64_t t = at[i] + g->pad[i] - r[i] * g->dil[i];
                      q[i] = t / g->str[i];
                      hit = hit && t >= 0 && t % g->str[i] == 0 && q[i] < g->out[i];
                      yo += q[i] * g->ys[2 + i];
                    }
                    if (!hit) continue;
                    acc += operand(yt, p->y_ptr, yo, tf32) *
                           operand(wt, p->w_ptr, w_off(g, k, cg, r), tf32);
                  }
            }
            int64_t xo = n * g->xs[0] + c * g->xs[1];
            for (int i = 0; i < 3; i++)
              xo += at[i] * g->xs[2 + i];
            store(xt, p->x_ptr, xo, blend(p->alpha, acc, p->beta, xt, p->x_ptr, xo));
          }
}

static void wgrad(const simcudnn_conv_problem *p, const geo3 *g, bool tf32) {
  cudnnDataType_t xt = p->x.dtype, wt = p->w.dtype, yt = p->y.dtype;
  int64_t r[3], q[3];
  for (int64_t k = 0; k < g->k; k++)
    for (int64_t cg = 0; cg < g->cg; cg++)
      for (r[0] = 0; r[0] < g->flt[0]; r[0]++)
        for (r[1] = 0; r[1] < g->flt[1]; r[1]++)
          for (r[2] = 0; r[2] < g->flt[2]; r[2]++) {
            int64_t c = (k / g->kg) * g->cg + cg;
            float acc = 0.0f;
            for (int64_t n = 0; n < g->n; n++)
              for (q[0] = 0; q[0] < g->out[0]; q[0]++)
                for (q[1] = 0; q[1] < g->out[1]; q[1]++)
                  for (q[2] = 0; q[2] < g->out[2]; q[2]++) {
                    int64_t xo = n * g->xs[0] + c * g->xs[1];
                    int64_t yo = n * g->ys[0] + k * g->ys[1];
                    bool inside = true;
                    for (int i = 0; i < 3; i++) {
                      int64_t at = q[i] * g->str[i] - g->pad[i] + r[i] * g->dil[i];
                      inside = inside && at >= 0 && at < g->in[i];
                      xo += at * g->xs[2 + i];
                      yo += q[i] * g->ys[2 + i];
                    }
                    if (!inside) continue;
                    acc += operand(xt, p->x_ptr, xo, tf32) * operand(yt, p->y_ptr, yo, tf32);
                  }
            int64_t wo = w_off(g, k, cg, r);
            store(wt, p->w_ptr, wo, blend(p->alpha, acc, p->beta, wt, p->w_ptr, wo));
          }
}

static unsigned grid_of(int64_t work, unsigned per_block) {
  int64_t b = (work + per_block - 1) / per_block;
  return b < 1 ? 1u : b > 0x7fffffff ? 0x7fffffffu : (unsigned)b;
}

/* The implicit GEMM a convolution is: M x N output tiles, as simcuda's table sizes grids. */
static void implicit_gemm(const simcudnn_conv_problem *p, uint64_t *ret_m, uint64_t *ret_n) {
  uint64_t spatial_x = 1, spatial_y = 1, spatial_w = 1;
  for (int i = 0; i < p->geom.spatial; i++) {
    spatial_x *= (uint64_t)p->x.dims[2 + i];
    spatial_y *= (uint64_t)p->y.dims[2 + i];
    spatial_w *= (uint64_t)p->w.dims[2 + i];
  }
  switch (p->kind) {
  case SIMCUDNN_FPROP:
    *ret_m = (uint64_t)p->y.dims[0] * spatial_y;
    *ret_n = (uint64_t)p->w.dims[0];
    break;
  case SIMCUDNN_DGRAD:
    *ret_m = (uint64_t)p->x.dims[0] * spatial_x;
    *ret_n = (uint64_t)p->x.dims[1];
    break;
  case SIMCUDNN_WGRAD:
    *ret_m = (uint64_t)p->w.dims[0];
    *ret_n = (uint64_t)p->w.dims[1] * spatial_w;
    break;
  }
}

void simcudnn_conv_kernel(cudnnHandle_t h, const simcudnn_conv_problem *p, simcuda_kernel *ret) {
  bool tc = p->math == SIMCUDNN_MATH_TC;
  /* The caller chose the math with simcudnn_conv_math, so the table's own
   * Tensor Core rule agrees with it; FMA is forced with CUDNN_FMA_MATH (3). */
  simcuda_conv_shape shape = {.op = (simcuda_conv_op)p->kind,
                              .data_type = simcudnn_conv_input_dtype(p),
                              .compute_type = p->geom.compute,
                              .math_type = tc ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH,
                              .groups = p->geom.groups,
                              .channels_aligned = tc};
  implicit_gemm(p, &shape.gemm_m, &shape.gemm_n);
  memset(ret, 0, sizeof *ret);
  ret->stream = (CUstream)h->stream;
  ret->name = simcuda_conv_kernel_name(&shape, ret->grid, ret->block);
}

void simcudnn_conv_compute(const simcudnn_conv_problem *p) {
  geo3 g;
  geo3_init(p, &g);
  bool tf32 = p->math == SIMCUDNN_MATH_TC && simcudnn_conv_input_dtype(p) == CUDNN_DATA_FLOAT;
  switch (p->kind) {
  case SIMCUDNN_FPROP:
    fprop(p, &g, tf32);
    break;
  case SIMCUDNN_DGRAD:
    dgrad(p, &g, tf32);
    break;
  case SIMCUDNN_WGRAD:
    wgrad(p, &g, tf32);
    break;
  }
}

cudnnStatus_t simcudnn_conv_run(cudnnHandle_t h, const simcudnn_conv_problem *p) {
  simcuda_kernel k;
  simcudnn_conv_kernel(h, p, &k);
  uint64_t token = simcuda_kernel_start(&k);
  simcudnn_conv_compute(p);
  simcuda_kernel_finish(&k, token);
  return CUDNN_STATUS_SUCCESS;
}

/* Matmul operand shapes as (batch, rows, cols) with strides; 2-D tensors are batch 1. */
typedef struct mat3 {
  int64_t b, r, c, sb, sr, sc;
} mat3;

static bool mat3_of(const simcudnn_tensor *t, mat3 *m) {
  if (t->nb_dims == 2) {
    *m = (mat3){1, t->dims[0], t->dims[1], 0, t->strides[0], t->strides[1]};
    return true;
  }
  if (t->nb_dims != 3) return false;
  *m = (mat3){t->dims[0], t->dims[1], t->dims[2], t->strides[0], t->strides[1], t->strides[2]};
  return true;
}

cudnnStatus_t simcudnn_matmul_check(const simcudnn_matmul_problem *p) {
  mat3 a, b, c;
  if (!mat3_of(&p->a, &a) || !mat3_of(&p->b, &b) || !mat3_of(&p->c, &c)) {
    simcudnn_set_error("simcuda cuDNN: matmul operands must be 2-D or 3-D");
    return CUDNN_STATUS_NOT_SUPPORTED_SHAPE;
  }
  if (a.c != b.r || c.r != a.r || c.c != b.c || (a.b != c.b && a.b != 1) ||
      (b.b != c.b && b.b != 1)) {
    simcudnn_set_error("simcuda cuDNN: matmul shapes [%lld,%lld,%lld] x [%lld,%lld,%lld] -> "
                       "[%lld,%lld,%lld] do not match",
                       (long long)a.b, (long long)a.r, (long long)a.c, (long long)b.b,
                       (long long)b.r, (long long)b.c, (long long)c.b, (long long)c.r,
                       (long long)c.c);
    return CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH;
  }
  /* A and B of one type (float, half, bfloat16); C of that type or, for half
   * and bfloat16 inputs, float (the fp32 accumulator stored as is). */
  cudnnDataType_t dt = p->a.dtype;
  bool c_ok =
      p->c.dtype == dt || p->output_any ||
      (p->c.dtype == CUDNN_DATA_FLOAT && (dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16));
  if (p->b.dtype != dt || !c_ok || simcudnn_dtype_size(dt) == 0 ||
      simcudnn_dtype_size(p->c.dtype) == 0) {
    simcudnn_set_error("simcuda cuDNN: matmul data types %d/%d/%d (A = B one of float, half, "
                       "bfloat16; C the same or float)",
                       p->a.dtype, p->b.dtype, p->c.dtype);
    return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  }
  /* An override: one int32 or int64 value per batch member of C. */
  for (int d = 0; d < 3; d++) {
    if (!p->has_ovr[d]) continue;
    int64_t count = 1;
    for (int i = 0; i < p->ovr[d].nb_dims; i++)
      count *= p->ovr[d].dims[i];
    if ((p->ovr[d].dtype != CUDNN_DATA_INT32 && p->ovr[d].dtype != CUDNN_DATA_INT64) ||
        count != c.b) {
      simcudnn_set_error("simcuda cuDNN: a matmul M/N/K override holds one int32 or int64 value "
                         "per batch member (%lld)",
                         (long long)c.b);
      return CUDNN_STATUS_BAD_PARAM;
    }
  }
  if (p->compute != CUDNN_DATA_FLOAT) {
    simcudnn_set_error("simcuda cuDNN: matmul compute type %d not implemented (float only)",
                       p->compute);
    return CUDNN_STATUS_NOT_SUPPORTED_DATA_TYPE;
  }
  if (!simcudnn_matmul_kernel(dt, p->math)) {
    simcudnn_set_error("simcuda cuDNN: no matmul kernel for this data type/math");
    return CUDNN_STATUS_NOT_SUPPORTED;
  }
  return CUDNN_STATUS_SUCCESS;
}

bool simcudnn_matmul_kernel_of(cudnnHandle_t h, const simcudnn_matmul_problem *p,
                               simcuda_kernel *ret) {
  const simcudnn_kernel_name *kn = simcudnn_matmul_kernel(p->a.dtype, p->math);
  mat3 c;
  if (!kn || !mat3_of(&p->c, &c)) return false;
  *ret = (simcuda_kernel){.name = kn->name,
                          .stream = (CUstream)h->stream,
                          .grid = {grid_of(c.r, 128u), grid_of(c.c, 128u), (unsigned)c.b},
                          .block = {kn->block, 1, 1}};
  return true;
}

/* Batch member bi's M, N or K (d = 0, 1, 2): its override's value, at most
 * the full extent (negative: 0). */
static int64_t overridden(const simcudnn_matmul_problem *p, int d, int64_t bi, int64_t full) {
  if (!p->ovr_ptr[d]) return full;
  int64_t v = p->ovr[d].dtype == CUDNN_DATA_INT64 ? ((const int64_t *)p->ovr_ptr[d])[bi]
                                                  : ((const int32_t *)p->ovr_ptr[d])[bi];
  return v < 0 ? 0 : v < full ? v : full;
}

void simcudnn_matmul_compute(const simcudnn_matmul_problem *p) {
  mat3 a, b, c;
  if (!mat3_of(&p->a, &a) || !mat3_of(&p->b, &b) || !mat3_of(&p->c, &c)) return;
  cudnnDataType_t dt = p->a.dtype, ct = p->c.dtype;
  bool tf32 = p->math == SIMCUDNN_MATH_TC && dt == CUDNN_DATA_FLOAT;
  for (int64_t bi = 0; bi < c.b; bi++) {
    int64_t ab = a.b == 1 ? 0 : bi * a.sb, bb = b.b == 1 ? 0 : bi * b.sb;
    int64_t mb = overridden(p, 0, bi, c.r), nb = overridden(p, 1, bi, c.c),
            kb = overridden(p, 2, bi, a.c);
    for (int64_t i = 0; i < mb; i++)
      for (int64_t j = 0; j < nb; j++) {
        float acc = 0.0f;
        for (int64_t l = 0; l < kb; l++)
          acc += operand(dt, p->a_ptr, ab + i * a.sr + l * a.sc, tf32) *
                 operand(dt, p->b_ptr, bb + l * b.sr + j * b.sc, tf32);
        store(ct, p->c_ptr, bi * c.sb + i * c.sr + j * c.sc, acc);
      }
  }
}

cudnnStatus_t simcudnn_matmul_run(cudnnHandle_t h, const simcudnn_matmul_problem *p) {
  simcuda_kernel k;
  if (!simcudnn_matmul_kernel_of(h, p, &k)) return CUDNN_STATUS_NOT_SUPPORTED;
  uint64_t token = simcuda_kernel_start(&k);
  simcudnn_matmul_compute(p);
  simcuda_kernel_finish(&k, token);
  return CUDNN_STATUS_SUCCESS;
}
