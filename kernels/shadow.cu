/* The device side of shadow execution (`mpprof run --shadow` on device
 * memory): the small kernels around the fp32 GEMMs that form a shadowed
 * call's reference and candidates, with the host path's per-value
 * definitions (analysis/shadow_core.h through kernels/shadow_abi.h). They are
 * extern "C" so CUPTI names them as written, and plain enough (no warp
 * intrinsics; shared-memory tree reductions) to run on the CPU through
 * tests/gpu/simt_shim.h (tests/gpu/test_shadow_kernel_cpu.cpp).
 *
 * Shapes: one thread per MPP_SH_KBLOCK values of k of one vector (row of
 * op(A), column of op(B)) in amax and quant, so an MX block is one thread's
 * and the per-tensor recipes walk the same units; one thread per output,
 * grid-stride, in err. */
#include <stddef.h>
#include <stdint.h>

#include "shadow_abi.h"

__device__ __forceinline__ const void *mpp_sh_matrix(const mpp_sh_src &x, uint64_t b) {
  if (x.ptrs) return x.ptrs[b];
  return (const char *)x.data + (int64_t)b * x.stride * (int64_t)x.esize;
}

/* Units of work: (batch matrix, vector, block of k) */
__device__ __forceinline__ uint64_t mpp_sh_units(const mpp_sh_src &x) {
  return x.batch * x.rows * ((x.k + MPP_SH_KBLOCK - 1) / MPP_SH_KBLOCK);
}

__device__ __forceinline__ void mpp_sh_unit(const mpp_sh_src &x, uint64_t u, uint64_t *b,
                                            uint64_t *v, uint64_t *k0, uint64_t *k1) {
  uint64_t nkb = (x.k + MPP_SH_KBLOCK - 1) / MPP_SH_KBLOCK;
  uint64_t kb = u % nkb;
  u /= nkb;
  *v = u % x.rows;
  *b = u / x.rows;
  *k0 = kb * MPP_SH_KBLOCK;
  *k1 = *k0 + MPP_SH_KBLOCK < x.k ? *k0 + MPP_SH_KBLOCK : x.k;
}

/* The units of x this thread owns (grid-stride): body(base, vector, k0, k1)
 * with base the unit's batch matrix and [k0, k1) its values of k. */
template <class Body>
__device__ __forceinline__ void mpp_sh_each_unit(const mpp_sh_src &x, Body body) {
  uint64_t units = mpp_sh_units(x);
  for (uint64_t u = (uint64_t)blockIdx.x * MPP_SH_BLOCK + threadIdx.x; u < units;
       u += (uint64_t)gridDim.x * MPP_SH_BLOCK) {
    uint64_t b, v, k0, k1;
    mpp_sh_unit(x, u, &b, &v, &k0, &k1);
    body(mpp_sh_matrix(x, b), b, v, k0, k1);
  }
}

__device__ __forceinline__ void mpp_sh_copy_elem(const void *src, void *dst, unsigned esize) {
  switch (esize) {
  case 1:
    *(uint8_t *)dst = *(const uint8_t *)src;
    break;
  case 2:
    *(uint16_t *)dst = *(const uint16_t *)src;
    break;
  case 4:
    *(uint32_t *)dst = *(const uint32_t *)src;
    break;
  default:
    *(uint64_t *)dst = *(const uint64_t *)src;
    break;
  }
}

/* One thread per element of the dense copies (grid-stride, piece after
 * piece), consecutive threads on consecutive elements of a column. */
extern "C" __global__ void __launch_bounds__(MPP_SH_BLOCK) mpp_shadow_copy(mpp_sh_copy_params p) {
  uint64_t total = 0;
  for (unsigned i = 0; i < p.n; i++)
    total += p.p[i].inner * p.p[i].outer * p.p[i].batch;
  for (uint64_t e = (uint64_t)blockIdx.x * MPP_SH_BLOCK + threadIdx.x; e < total;
       e += (uint64_t)gridDim.x * MPP_SH_BLOCK) {
    uint64_t r = e;
    unsigned i = 0;
    while (r >= p.p[i].inner * p.p[i].outer * p.p[i].batch) {
      r -= p.p[i].inner * p.p[i].outer * p.p[i].batch;
      i++;
    }
    const mpp_sh_copy_piece &c = p.p[i];
    uint64_t mat = c.inner * c.outer, b = r / mat, in = r % mat;
    const char *m = c.ptrs ? (const char *)c.ptrs[b]
                           : (const char *)c.data + (int64_t)b * c.stride * (int64_t)c.esize;
    mpp_sh_copy_elem(m + ((in / c.inner) * c.ld + in % c.inner) * c.esize,
                     (char *)c.dst + r * c.esize, c.esize);
  }
}

/* One thread per element of op(A) then op(B), in the destinations' order. */
extern "C" __global__ void __launch_bounds__(MPP_SH_BLOCK)
    mpp_shadow_gather(mpp_sh_gather_params p) {
  /* group after group: op(A) of every group, then op(B) of every group */
  int64_t groups = mp_sh_conv_groups(&p.conv), mk = p.m * p.k, kn = p.k * p.n;
  uint64_t na = (uint64_t)(mk * groups), total = na + (uint64_t)(kn * groups);
  for (uint64_t e = (uint64_t)blockIdx.x * MPP_SH_BLOCK + threadIdx.x; e < total;
       e += (uint64_t)gridDim.x * MPP_SH_BLOCK) {
    if (e < na) {
      int64_t g = (int64_t)e / mk, i = (int64_t)e % mk;
      int64_t at = mp_sh_conv_a_at(&p.conv, i / p.k, i % p.k) + mp_sh_conv_a_group(&p.conv, g);
      mpp_sh_copy_elem((const char *)p.a_src + at * (int64_t)p.ea, (char *)p.a_dst + e * p.ea,
                       p.ea);
      continue;
    }
    int64_t o = (int64_t)(e - na), g = o / kn, i = o % kn;
    int64_t kk = p.b_trans ? i / p.n : i % p.k, col = p.b_trans ? i % p.n : i / p.k;
    int64_t at = mp_sh_conv_b_at(&p.conv, kk, col);
    if (at >= 0) at += mp_sh_conv_b_group(&p.conv, g);
    const uint64_t zero = 0; /* every float format's zero is all bits clear */
    const void *src = at < 0 ? (const void *)&zero : (const char *)p.b_src + at * (int64_t)p.eb;
    mpp_sh_copy_elem(src, (char *)p.b_dst + o * (int64_t)p.eb, p.eb);
  }
}

extern "C" __global__ void __launch_bounds__(MPP_SH_BLOCK) mpp_shadow_amax(mpp_sh_amax_params p) {
  __shared__ unsigned part[MPP_SH_BLOCK];
  unsigned m = 0;
  mpp_sh_each_unit(p.x, [&](const void *base, uint64_t, uint64_t v, uint64_t k0, uint64_t k1) {
    for (uint64_t kk = k0; kk < k1; kk++) {
      unsigned w = mpp_sh_amax_word(mpp_sh_value(&p.x, base, p.x.v0 + v, kk));
      if (w > m) m = w;
    }
  });
  part[threadIdx.x] = m;
  __syncthreads();
  for (unsigned s = MPP_SH_BLOCK / 2; s > 0; s /= 2) {
    if (threadIdx.x < s && part[threadIdx.x + s] > part[threadIdx.x])
      part[threadIdx.x] = part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0 && part[0]) atomicMax(p.amax_bits, part[0]);
}

extern "C" __global__ void __launch_bounds__(MPP_SH_BLOCK) mpp_shadow_quant(mpp_sh_quant_params p) {
  mp_dtype fmt = (mp_dtype)p.fmt;
  float scale = p.scale_value;
  if (p.scale == MPP_SH_SCALE_AMAX)
    scale = mp_sh_current_scale(mpp_sh_amax_of_word(*p.amax_bits), p.fp8_max);
  mpp_sh_each_unit(p.x, [&](const void *base, uint64_t b, uint64_t v, uint64_t k0, uint64_t k1) {
    float *out = p.out + b * p.x.rows * p.x.k + v * p.out_vstride;
    if (p.scale == MPP_SH_SCALE_MX) {
      float amax = 0;
      for (uint64_t kk = k0; kk < k1; kk++)
        amax = mp_sh_amax_add(amax, mpp_sh_value(&p.x, base, p.x.v0 + v, kk));
      int e = mp_sh_mx_exp(amax, p.fp8_max);
      for (uint64_t kk = k0; kk < k1; kk++) {
        float x = mpp_sh_value(&p.x, base, p.x.v0 + v, kk);
        out[kk * p.out_kstride] = mp_pow2_scale(mp_sh_round(mp_pow2_scale(x, -e), fmt), e);
      }
      return;
    }
    for (uint64_t kk = k0; kk < k1; kk++) {
      float x = mpp_sh_value(&p.x, base, p.x.v0 + v, kk);
      if (p.scale == MPP_SH_SCALE_POW2)
        x = mp_pow2_scale(x, p.scale_log2);
      else if (p.scale != MPP_SH_SCALE_NONE)
        x = x * scale;
      out[kk * p.out_kstride] = mp_sh_round(x, fmt);
    }
  });
}

/* One thread per output (grid-stride), consecutive threads on consecutive rows. */
extern "C" __global__ void __launch_bounds__(MPP_SH_BLOCK) mpp_shadow_dot16(mpp_sh_dot_params p) {
  uint64_t mn = p.m * p.n, total = mn * p.batch;
  for (uint64_t o = (uint64_t)blockIdx.x * MPP_SH_BLOCK + threadIdx.x; o < total;
       o += (uint64_t)gridDim.x * MPP_SH_BLOCK) {
    uint64_t b = o / mn, i = o % mn % p.m, j = o % mn / p.m;
    const float *a = p.qa + b * p.m * p.k + i, *x = p.qb + b * p.k * p.n + j * p.k;
    float s = 0;
    for (uint64_t kk = 0; kk < p.k; kk++)
      s = mp_sh_fma_fp16(a[kk * p.m], x[kk], s);
    p.out[o] = s;
  }
}

extern "C" __global__ void __launch_bounds__(MPP_SH_BLOCK) mpp_shadow_err(mpp_sh_err_params p) {
  __shared__ mp_sh_err part[MPP_SH_BLOCK];
  __shared__ unsigned last;
  float inv_a, inv_b;
  if (p.use_amax) {
    inv_a = 1.0f / mp_sh_current_scale(mpp_sh_amax_of_word(p.amax_bits[0]), p.fp8_max);
    inv_b = 1.0f / mp_sh_current_scale(mpp_sh_amax_of_word(p.amax_bits[1]), p.fp8_max);
  } else {
    inv_a = 1.0f / p.scale_a;
    inv_b = 1.0f / p.scale_b;
  }
  if (p.post_a) inv_a = *p.post_a;
  if (p.post_b) inv_b = *p.post_b;
  mp_sh_err e = {0, 0, 0, 0, 0, 0, 0, 0};
  for (uint64_t o = (uint64_t)blockIdx.x * MPP_SH_BLOCK + threadIdx.x; o < p.n;
       o += (uint64_t)gridDim.x * MPP_SH_BLOCK) {
    float v = p.cand[o] * inv_a * inv_b * p.alpha_f;
    double r = MP_SH_DMUL((double)p.ref[o], p.alpha);
    int zeroed = 0; /* the epilogue's own zero: not a flush */
    if (p.epilogue || p.bias) {
      if (p.bias) {
        float bv = mpp_sh_load(p.bias, p.bias_dtype,
                               (uint64_t)((int64_t)(o / p.mn) * p.bias_stride) + o % p.m);
        v = MP_SH_FADD(v, bv);
        r = MP_SH_DADD(r, (double)bv);
      }
      float in = v;
      v = mp_sh_epi_f(p.epilogue, v);
      zeroed = mp_sh_epi_zeroed(in, v);
      r = mp_sh_epi_d(p.epilogue, r);
    }
    if (p.out_scale_log2) v = mp_pow2_scale(v, p.out_scale_log2);
    float d =
        p.d_scale /* the current precision's fp8 D at its scale */
            ? mp_sh_current_scaled_output((mp_dtype)p.out_dtype, v, *p.d_scale)
            : mp_sh_round_output((mp_dtype)p.cand_fmt, p.is_current, (mp_dtype)p.out_dtype, v);
    if (p.unscale_log2) d = mp_pow2_scale(d, -p.unscale_log2);
    if (p.capture) p.capture[o] = d;
    mp_sh_err_add(&e, r, (double)d, zeroed);
  }
  part[threadIdx.x] = e;
  __syncthreads();
  for (unsigned s = MPP_SH_BLOCK / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) mp_sh_err_merge(&part[threadIdx.x], &part[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    p.partials[blockIdx.x] = part[0];
    __threadfence(); /* the partial before the ticket */
    last = atomicAdd(p.ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last || threadIdx.x != 0) return;
  __threadfence();
  mp_sh_err r = p.partials[0];
  for (unsigned b = 1; b < gridDim.x; b++) {
    mp_sh_err pb = p.partials[b];
    mp_sh_err_merge(&r, &pb);
  }
  mp_sh_err_merge(p.result, &r); /* zeroed by the host: slices of one product add up */
  *p.ticket = 0;                 /* for the next launch */
}
