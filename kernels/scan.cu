/* The device scan: one bandwidth-bound pass over a tensor in device memory
 * into the raw record of kernels/scan_abi.h, which the host turns into the
 * same mp_stats the host scanner produces, bit for bit.
 *
 * Shape: grid-stride loop, 16-byte vector loads on the contiguous path,
 * per-element classification on bit patterns only (no float math, so no
 * rounding or flush-to-zero can creep in), a privatised shared-memory
 * histogram per block fed through warp aggregation (__match_any_sync: one
 * shared atomic per distinct binade in a warp, since exponents cluster), a
 * rarely taken path for the few binades holding a cast threshold, register
 * counters and extrema reduced per warp, and one global atomic merge per
 * block. Min/max are ordered-integer keys (-0 < +0), NaNs are counted and
 * never compared. Kernels are extern "C" so CUPTI shows "mpp_scan_<src>". */
#include <stdint.h>

#include "scan_abi.h"

#define MPP_BLOCK 256
#define MPP_WARPS (MPP_BLOCK / 32)
#define MPP_FULL 0xffffffffu
#define MPP_NCNT 10 /* zeros nans pinf ninf neg finite | max_key min_inv absmax minabs_inv */

template <typename T> struct block_state {
  unsigned int hist[MPP_SCAN_MAX_BINS];
  unsigned char thr_flag[MPP_SCAN_MAX_BINS];
  unsigned long long within[MPP_SCAN_TARGETS * MPP_SCAN_LEVELS];
  unsigned long long warp_part[MPP_WARPS][MPP_NCNT];
};

struct thread_acc {
  unsigned long long zeros, nans, pinf, ninf, neg, finite;
  unsigned long long max_key, min_inv, absmax, minabs_inv;
};

/* The few binades holding a cast threshold: rare, kept out of line. */
__device__ __noinline__ void count_within(const mpp_scan_params &p, unsigned long long *within,
                                          int bin, uint64_t abs) {
  for (int t = 0; t < MPP_SCAN_TARGETS; t++)
    for (int k = 0; k < MPP_SCAN_LEVELS; k++)
      if (bin == p.thr_bin[t][k] && abs >= p.thr[t][k])
        atomicAdd(&within[t * MPP_SCAN_LEVELS + k], 1ull);
}

template <int SRC, typename T>
__device__ __forceinline__ void scan_element(const mpp_scan_params &p, block_state<T> &sh,
                                             thread_acc &a, T raw, bool valid, unsigned lane) {
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const uint64_t key_mask = mpp_scan_key_mask(&f);
  const uint64_t abs_mask = (1ull << (f.width - 1)) - 1;
  uint64_t bits = (uint64_t)raw, abs = 0;
  int bin = MPP_SCAN_NO_BIN;
  int cls = valid ? mpp_scan_classify(&f, bits, &abs, &bin) : -1;
  if (cls == MPP_EL_FINITE || cls == MPP_EL_ZERO) {
    a.finite++;
    a.zeros += cls == MPP_EL_ZERO;
    a.neg += (cls == MPP_EL_FINITE) & (unsigned)(bits >> (f.width - 1));
    uint64_t key = mpp_scan_key(&f, bits);
    a.max_key = key > a.max_key ? key : a.max_key;
    a.min_inv = (key_mask ^ key) > a.min_inv ? (key_mask ^ key) : a.min_inv;
    a.absmax = abs > a.absmax ? abs : a.absmax;
    if (cls == MPP_EL_FINITE && (abs_mask ^ abs) > a.minabs_inv) a.minabs_inv = abs_mask ^ abs;
  } else if (cls >= 0) {
    a.nans += cls == MPP_EL_NAN;
    a.pinf += cls == MPP_EL_PINF;
    a.ninf += cls == MPP_EL_NINF;
    a.neg += cls == MPP_EL_NINF;
  }
  /* Warp aggregation: lanes with the same binade elect one leader. */
  unsigned peers = __match_any_sync(MPP_FULL, bin);
  if (bin != MPP_SCAN_NO_BIN) {
    if (lane == (unsigned)(__ffs(peers) - 1)) atomicAdd(&sh.hist[bin], (unsigned)__popc(peers));
    if (sh.thr_flag[bin]) count_within(p, sh.within, bin, abs);
  }
}

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(MPP_FULL, v, o);
  return v;
}

__device__ __forceinline__ unsigned long long warp_max(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long w = __shfl_down_sync(MPP_FULL, v, o);
    v = w > v ? w : v;
  }
  return v;
}

template <int SRC, typename T> __device__ void scan_impl(const mpp_scan_params &p) {
  __shared__ block_state<T> sh;
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  for (int b = tid; b < f.nbins; b += MPP_BLOCK) {
    sh.hist[b] = 0;
    sh.thr_flag[b] = 0;
  }
  if (tid < MPP_SCAN_TARGETS * MPP_SCAN_LEVELS) sh.within[tid] = 0;
  __syncthreads();
  if (tid < MPP_SCAN_TARGETS * MPP_SCAN_LEVELS) {
    int b = p.thr_bin[tid / MPP_SCAN_LEVELS][tid % MPP_SCAN_LEVELS];
    if (b != MPP_SCAN_NO_BIN) sh.thr_flag[b] = 1;
  }
  __syncthreads();

  thread_acc a = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const T *data = (const T *)p.data;
  const uint64_t grid = (uint64_t)gridDim.x * MPP_BLOCK;
  if (p.flat) {
    /* Scalar head up to 16-byte alignment, vector body, scalar tail. */
    constexpr int VEC = 16 / sizeof(T);
    uint64_t mis = ((uintptr_t)data & 15) / sizeof(T);
    uint64_t head = ((uintptr_t)data % sizeof(T)) ? p.n : (mis ? VEC - mis : 0);
    if (head > p.n) head = p.n;
    uint64_t nvec = (p.n - head) / VEC;
    uint64_t tail0 = head + nvec * VEC, nscalar = head + (p.n - tail0);
    const uint4 *vdata = (const uint4 *)(data + head);
    for (uint64_t base = (uint64_t)blockIdx.x * MPP_BLOCK; base < nvec; base += grid) {
      uint64_t vi = base + tid;
      bool valid = vi < nvec;
      union {
        uint4 v;
        T e[VEC];
      } u;
      u.v = valid ? __ldg(vdata + vi) : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int j = 0; j < VEC; j++) scan_element<SRC, T>(p, sh, a, u.e[j], valid, lane);
    }
    if (blockIdx.x == gridDim.x - 1) {
      for (uint64_t base = 0; base < nscalar; base += MPP_BLOCK) {
        uint64_t s = base + tid;
        bool valid = s < nscalar;
        uint64_t i = s < head ? s : tail0 + (s - head);
        scan_element<SRC, T>(p, sh, a, valid ? data[i] : (T)0, valid, lane);
      }
    }
  } else {
    const uint64_t per = p.rows * p.cols;
    for (uint64_t base = (uint64_t)blockIdx.x * MPP_BLOCK; base < p.n; base += grid) {
      uint64_t i = base + tid;
      bool valid = i < p.n;
      T raw = 0;
      if (valid) {
        uint64_t b = i / per, rc = i - b * per, c = rc / p.rows, r = rc - c * p.rows;
        raw = data[(int64_t)b * p.batch_stride + (int64_t)(c * p.ld + r)];
      }
      scan_element<SRC, T>(p, sh, a, raw, valid, lane);
    }
  }

  /* Per-warp reduction of the register counters, then one merge per block. */
  unsigned long long v[MPP_NCNT] = {a.zeros, a.nans, a.pinf, a.ninf, a.neg, a.finite,
                                    a.max_key, a.min_inv, a.absmax, a.minabs_inv};
#pragma unroll
  for (int c = 0; c < MPP_NCNT; c++) v[c] = c < 6 ? warp_sum(v[c]) : warp_max(v[c]);
  if (lane == 0)
    for (int c = 0; c < MPP_NCNT; c++) sh.warp_part[warp][c] = v[c];
  __syncthreads();
  mpp_scan_result *out = (mpp_scan_result *)p.result;
  if (tid < MPP_NCNT) {
    unsigned long long s = 0;
    for (int w = 0; w < MPP_WARPS; w++) {
      unsigned long long x = sh.warp_part[w][tid];
      s = tid < 6 ? s + x : (x > s ? x : s);
    }
    unsigned long long *dst[MPP_NCNT] = {&out->zeros,   &out->nans,        &out->pos_infs,
                                         &out->neg_infs, &out->negatives,  &out->finite,
                                         &out->max_key, &out->min_key_inv, &out->absmax,
                                         &out->minabs_inv};
    if (tid < 6) {
      if (s) atomicAdd(dst[tid], s);
    } else if (s) {
      atomicMax(dst[tid], s);
    }
  }
  if (tid < MPP_SCAN_TARGETS * MPP_SCAN_LEVELS && sh.within[tid])
    atomicAdd(&out->within[tid / MPP_SCAN_LEVELS][tid % MPP_SCAN_LEVELS], sh.within[tid]);
  for (int b = tid; b < f.nbins; b += MPP_BLOCK)
    if (sh.hist[b]) atomicAdd(&out->hist[b], (unsigned long long)sh.hist[b]);
}

#define MPP_SCAN_KERNEL(name, SRC, T)                                                              \
  extern "C" __global__ void __launch_bounds__(MPP_BLOCK) name(mpp_scan_params p) {                \
    scan_impl<SRC, T>(p);                                                                          \
  }

MPP_SCAN_KERNEL(mpp_scan_fp64, MPP_SRC_FP64, unsigned long long)
MPP_SCAN_KERNEL(mpp_scan_fp32, MPP_SRC_FP32, unsigned int)
MPP_SCAN_KERNEL(mpp_scan_fp16, MPP_SRC_FP16, unsigned short)
MPP_SCAN_KERNEL(mpp_scan_bf16, MPP_SRC_BF16, unsigned short)
MPP_SCAN_KERNEL(mpp_scan_e4m3, MPP_SRC_E4M3, unsigned char)
MPP_SCAN_KERNEL(mpp_scan_e5m2, MPP_SRC_E5M2, unsigned char)
