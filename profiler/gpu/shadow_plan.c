/* See shadow_plan.h. The candidate -> recipe mapping here is the host path's
 * (analysis/shadow.c): rounding format, how the value is scaled before the
 * cast, and the output rounding in err. */
#include "profiler/gpu/shadow_plan.h"

#include <string.h>

mpp_sh_src mpp_sh_src_of(const mp_shadow_gemm *g, bool is_b) {
  const mp_shadow_operand *o = is_b ? &g->b : &g->a;
  mpp_sh_src s;
  memset(&s, 0, sizeof s);
  s.data = o->ptrs ? NULL : o->data;
  s.ptrs = o->ptrs;
  s.dtype = o->dtype;
  s.esize = (unsigned)mp_dtype_size(o->dtype);
  /* A: op(A)(i,kk) = trans ? A[kk + i*ld] : A[i + kk*ld];
   * B: op(B)(kk,j) = trans ? B[j + kk*ld] : B[kk + j*ld] */
  bool v_contig = is_b ? o->trans : !o->trans;
  s.vstride = v_contig ? 1 : (uint64_t)o->ld;
  s.kstride = v_contig ? (uint64_t)o->ld : 1;
  s.stride = o->stride;
  s.rows = (uint64_t)(is_b ? g->n : g->m);
  s.k = (uint64_t)g->k;
  s.batch = (uint64_t)g->batch;
  s.scale = o->scale;
  s.blocks = o->blocks;
  s.block_mode = o->block_mode;
  s.block_outer = (uint64_t)o->block_outer;
  return s;
}

static bool float_source(mp_dtype d) {
  return d == MP_FP64 || d == MP_FP32 || d == MP_FP16 || d == MP_BF16 || d == MP_FP8_E4M3 ||
         d == MP_FP8_E5M2;
}

bool mpp_sh_cand_on_device(const mp_shadow_gemm *g, mp_shadow_cand c) {
  if (!float_source(g->a.dtype) || !float_source(g->b.dtype)) return false;
  if (!mp_shadow_cand_defined(g, c)) return false;
  return c != MP_SH_CURRENT || (g->a.dtype != MP_FP64 && g->b.dtype != MP_FP64);
}

static mpp_sh_scale scale_kind(int cand) {
  switch (cand) {
  case MP_SH_FP16_SCALED:
    return MPP_SH_SCALE_POW2;
  case MP_SH_E4M3_CURRENT:
  case MP_SH_E5M2_CURRENT:
    return MPP_SH_SCALE_AMAX;
  case MP_SH_E4M3_DELAYED:
  case MP_SH_E5M2_DELAYED:
    return MPP_SH_SCALE_GIVEN;
  case MP_SH_MXFP8_E4M3:
  case MP_SH_MXFP8_E5M2:
    return MPP_SH_SCALE_MX;
  default:
    return MPP_SH_SCALE_NONE;
  }
}

static float fp8_max_of(mp_dtype fmt) {
  return (float)mp_format_of(fmt == MP_FP8_E5M2 ? MP_FP8_E5M2 : MP_FP8_E4M3)->max_finite;
}

void mpp_sh_quant_plan(const mp_shadow_gemm *g, int cand, bool is_b, const float delayed[2][2],
                       const unsigned *amax_bits, float *out, mpp_sh_quant_params *ret) {
  mpp_sh_quant_params q;
  memset(&q, 0, sizeof q);
  q.x = mpp_sh_src_of(g, is_b);
  q.out = out;
  q.out_vstride = is_b ? (uint64_t)g->k : 1;
  q.out_kstride = is_b ? 1 : (uint64_t)g->m;
  mp_dtype src = is_b ? g->b.dtype : g->a.dtype;
  mp_dtype fmt;
  if (cand == MPP_SH_REFERENCE)
    fmt = MP_FP32;
  else if (cand == MP_SH_CURRENT)
    fmt = mp_shadow_current_format(g, src);
  else
    fmt = mp_shadow_cand_format((mp_shadow_cand)cand);
  q.fmt = fmt;
  if (cand == MP_SH_CURRENT) q.x.scale = NULL; /* the op computes on the stored values */
  q.scale = cand == MPP_SH_REFERENCE ? MPP_SH_SCALE_NONE : scale_kind(cand);
  q.scale_log2 = g->scale_log2[is_b];
  q.scale_value = delayed ? delayed[is_b][fmt == MP_FP8_E5M2] : 1.0f;
  q.fp8_max = fp8_max_of(fmt);
  q.amax_bits = amax_bits ? amax_bits + is_b : NULL;
  *ret = q;
}

void mpp_sh_err_plan(const mp_shadow_gemm *g, mp_shadow_cand c, const float delayed[2][2],
                     const unsigned *amax_bits, const float *ref, const float *cand,
                     mpp_sh_err_params *ret) {
  mpp_sh_err_params p;
  memset(&p, 0, sizeof p);
  mp_dtype fmt = mp_shadow_cand_format(c);
  mpp_sh_scale kind = scale_kind(c);
  p.ref = ref;
  p.cand = cand;
  p.n = (uint64_t)(g->m * g->n * g->batch);
  p.alpha = g->alpha;
  p.alpha_f = (float)g->alpha;
  p.cand_fmt = fmt == MP_DTYPE_INVALID ? MP_FP32 : fmt;
  p.is_current = c == MP_SH_CURRENT;
  p.out_dtype = g->out;
  p.out_scale_log2 = c == MP_SH_FP16_SCALED ? g->out_scale_log2 : 0;
  p.unscale_log2 =
      c == MP_SH_FP16_SCALED ? g->scale_log2[0] + g->scale_log2[1] + g->out_scale_log2 : 0;
  p.use_amax = kind == MPP_SH_SCALE_AMAX;
  p.amax_bits = amax_bits;
  p.fp8_max = fp8_max_of(fmt);
  int e5 = fmt == MP_FP8_E5M2;
  p.scale_a = kind == MPP_SH_SCALE_GIVEN && delayed ? delayed[0][e5] : 1.0f;
  p.scale_b = kind == MPP_SH_SCALE_GIVEN && delayed ? delayed[1][e5] : 1.0f;
  if (c == MP_SH_CURRENT) {
    p.post_a = g->a.scale;
    p.post_b = g->b.scale;
    p.d_scale = g->d_scale;
  }
  p.epilogue = g->epilogue;
  p.bias = g->bias;
  p.bias_dtype = g->bias_dtype;
  p.bias_stride = g->bias_stride;
  p.m = (uint64_t)g->m;
  p.mn = (uint64_t)(g->m * g->n);
  *ret = p;
}

/* The copy of operand is_b of g (stored rows x columns per matrix). */
static mpp_sh_copy_piece operand_piece(const mp_shadow_gemm *g, bool is_b) {
  const mp_shadow_operand *o = is_b ? &g->b : &g->a;
  int64_t rows = is_b ? g->k : g->m, cols = is_b ? g->n : g->k; /* op(X) */
  mpp_sh_copy_piece c;
  memset(&c, 0, sizeof c);
  c.data = o->ptrs ? NULL : o->data;
  c.ptrs = o->ptrs;
  c.esize = (unsigned)mp_dtype_size(o->dtype);
  c.inner = (uint64_t)(o->trans ? cols : rows);
  c.outer = (uint64_t)(o->trans ? rows : cols);
  c.ld = (uint64_t)o->ld;
  c.stride = o->stride;
  c.batch = o->ptrs || o->stride ? (uint64_t)g->batch : 1;
  return c;
}

static mpp_sh_copy_piece bias_piece(const mp_shadow_gemm *g) {
  mpp_sh_copy_piece c;
  memset(&c, 0, sizeof c);
  c.data = g->bias;
  c.esize = (unsigned)mp_dtype_size(g->bias_dtype);
  c.inner = (uint64_t)g->m;
  c.outer = 1;
  c.ld = (uint64_t)g->m;
  c.stride = g->bias_stride;
  c.batch = g->bias_stride ? (uint64_t)g->batch : 1;
  return c;
}

/* An operand's fp8 scale: one float, or its block scales as laid out
 * (copied as bytes: the layout is kept). */
static mpp_sh_copy_piece scale_piece(const void *scale, uint64_t bytes) {
  mpp_sh_copy_piece c;
  memset(&c, 0, sizeof c);
  c.data = scale;
  c.esize = 1;
  c.inner = c.ld = bytes;
  c.outer = c.batch = 1;
  return c;
}

static uint64_t blocks_bytes(const mp_shadow_gemm *g, const mp_shadow_operand *o) {
  return mp_sh_blocks_bytes(o->block_mode, (unsigned long long)o->block_outer,
                            (unsigned long long)g->k);
}

/* Where piece w's source is (NULL: g has none). */
static const void *piece_source(const mp_shadow_gemm *g, int w) {
  switch (w) {
  case MPP_SH_PIECE_A:
  case MPP_SH_PIECE_B:
    return g; /* always there */
  case MPP_SH_PIECE_BIAS:
    return g->bias;
  case MPP_SH_PIECE_SA:
    return g->a.scale ? (const void *)g->a.scale : g->a.blocks;
  case MPP_SH_PIECE_SB:
    return g->b.scale ? (const void *)g->b.scale : g->b.blocks;
  default:
    return g->d_scale;
  }
}

/* Bytes of scale piece w (a float, or an operand's block scales). */
static uint64_t scale_bytes(const mp_shadow_gemm *g, int w) {
  const mp_shadow_operand *o = w == MPP_SH_PIECE_SA ? &g->a : w == MPP_SH_PIECE_SB ? &g->b : NULL;
  return o && !o->scale && o->blocks ? blocks_bytes(g, o) : sizeof(float);
}

static mpp_sh_copy_piece piece(const mp_shadow_gemm *g, int w) {
  switch (w) {
  case MPP_SH_PIECE_A:
  case MPP_SH_PIECE_B:
    return operand_piece(g, w == MPP_SH_PIECE_B);
  case MPP_SH_PIECE_BIAS:
    return bias_piece(g);
  default:
    return scale_piece(piece_source(g, w), scale_bytes(g, w));
  }
}

uint64_t mpp_sh_copy_bytes(const mp_shadow_gemm *g, int w) {
  if (!piece_source(g, w)) return 0;
  mpp_sh_copy_piece c = piece(g, w);
  return c.inner * c.outer * c.batch * c.esize;
}

void mpp_sh_copy_plan(const mp_shadow_gemm *g, unsigned pieces, void *const dst[MPP_SH_COPY_PIECES],
                      mpp_sh_copy_params *ret, mp_shadow_gemm *snap) {
  mpp_sh_copy_params p;
  memset(&p, 0, sizeof p);
  *snap = *g;
  for (int w = 0; w < MPP_SH_COPY_PIECES; w++) {
    if (!(pieces >> w & 1) || !piece_source(g, w)) continue;
    mpp_sh_copy_piece c = piece(g, w);
    c.dst = dst[w];
    p.p[p.n++] = c;
    int64_t dense = (int64_t)(c.inner * c.outer);
    switch (w) {
    case MPP_SH_PIECE_A:
    case MPP_SH_PIECE_B: {
      mp_shadow_operand *o = w == MPP_SH_PIECE_B ? &snap->b : &snap->a;
      o->data = dst[w];
      o->ptrs = NULL;
      o->ld = (int64_t)c.inner;
      o->stride = c.batch > 1 ? dense : 0;
      break;
    }
    case MPP_SH_PIECE_BIAS:
      snap->bias = dst[w];
      snap->bias_stride = c.batch > 1 ? dense : 0;
      break;
    case MPP_SH_PIECE_SA:
    case MPP_SH_PIECE_SB: {
      mp_shadow_operand *o = w == MPP_SH_PIECE_SB ? &snap->b : &snap->a;
      if (o->scale)
        o->scale = (const float *)dst[w];
      else
        o->blocks = dst[w];
      break;
    }
    default:
      snap->d_scale = (const float *)dst[w];
      break;
    }
  }
  *ret = p;
}

void mpp_sh_gather_plan(const mp_shadow_conv *cv, const mp_shadow_gemm *g, void *const dst[2],
                        mpp_sh_gather_params *ret, mp_shadow_gemm *snap) {
  mpp_sh_gather_params p;
  memset(&p, 0, sizeof p);
  p.conv = cv->g;
  p.a_src = cv->g.kind == MP_SHADOW_CONV_BWD_FILTER ? cv->y : cv->wt;
  p.b_src = cv->g.kind == MP_SHADOW_CONV_BWD_DATA ? cv->y : cv->x;
  p.a_dst = dst[0];
  p.b_dst = dst[1];
  p.ea = (unsigned)mp_dtype_size(g->a.dtype);
  p.eb = (unsigned)mp_dtype_size(g->b.dtype);
  p.m = g->m;
  p.n = g->n;
  p.k = g->k;
  p.b_trans = g->b.trans;
  *ret = p;
  *snap = *g;
  snap->a.data = dst[0];
  snap->b.data = dst[1];
}

bool mpp_sh_dot16_plan(const mp_shadow_gemm *g, mp_shadow_cand c, const float *qa, const float *qb,
                       float *out, mpp_sh_dot_params *ret) {
  if (mp_shadow_cand_accum(g, c) != MP_FP16) return false;
  *ret = (mpp_sh_dot_params){
      qa, qb, out, (uint64_t)g->m, (uint64_t)g->n, (uint64_t)g->k, (uint64_t)g->batch};
  return true;
}

unsigned mpp_sh_grid(uint64_t work, unsigned cap) {
  uint64_t blocks = (work + MPP_SH_BLOCK - 1) / MPP_SH_BLOCK;
  if (blocks < 1) blocks = 1;
  return blocks < cap ? (unsigned)blocks : cap;
}
