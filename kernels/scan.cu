/* The device scan: one bandwidth-bound pass over each tensor of an op in
 * device memory, all tensors in one launch (mpp_scan_ops, at the end), into
 * the raw records of kernels/scan_abi.h, which the host turns into the same
 * mp_stats the host scanner produces, bit for bit. The last block to finish
 * delivers the records to a mapped host slot and resets the accumulators.
 *
 * Shape: grid-stride loop, 16-byte vector loads on the contiguous path,
 * per-element classification on bit patterns only (no float math, so no
 * rounding or flush-to-zero can creep in), a privatised shared-memory
 * histogram (how it is fed: MPP_SCAN_HIST below), a rarely taken path for
 * the few binades holding a cast threshold that counts in registers,
 * register counters and extrema reduced per warp, and one global atomic
 * merge per block. Min/max are ordered-integer keys (-0 < +0), NaNs are counted and
 * never compared. The kernel is extern "C" so CUPTI shows "mpp_scan_ops".
 * Batched GEMMs by pointer array take the general (non-flat) path, each
 * element's matrix base read from the device-resident array. The last block
 * also copies the op's scalars (FP8 scale factors, AMAX_D) into the slot. */
#include <stddef.h>
#include <stdint.h>

#include "scan_abi.h"

#define MPP_BLOCK 256
#define MPP_WARPS (MPP_BLOCK / 32)
#define MPP_FULL 0xffffffffu
#define MPP_NCNT 8 /* nans pinf ninf neg | max_key min_inv absmax minabs_inv */
#define MPP_NSUM 4
#define MPP_NTHR (MPP_SCAN_TARGETS * MPP_SCAN_LEVELS)
/* Bins of a warp's own histogram slice (MPP_HIST_WARP): fp32 has 277, bf16
 * 261, fp16 40; fp64's 2098 stay in the block's histogram. */
#define MPP_WARP_BINS 280

/* How a block's histogram is fed, one element at a time (a fourth feed,
 * per-thread register windows of 8 binades, measured 0.22 / 0.11 / 0.33 of a
 * copy for fp32 / fp16 / fp64 on the H200, was removed):
 *   MPP_HIST_MATCH  warp aggregation: __match_any_sync elects one lane per
 *                   distinct binade in the warp, which adds the count (one
 *                   shared atomic per binade, but a slow warp-wide match);
 *   MPP_HIST_BLOCK  every lane adds 1 to the block's histogram;
 *   MPP_HIST_WARP   every lane adds 1 to its warp's own slice (no contention
 *                   between warps), the slices summed at the end.
 * mpp_scan_ops uses MPP_SCAN_HIST; with MPP_SCAN_VARIANTS defined the fatbin
 * also carries mpp_scan_ops_match, _block, _warp, _warp4, _pat, _pat0, _lane, _lane0, _lane2,
 * _lane20 and _lane64
 * (tests/gpu/devscan_check --kernel NAME measures one; scan_kernel_on_cpu
 * requires bit-identical records of each). */
#define MPP_HIST_MATCH 0
#define MPP_HIST_BLOCK 1
#define MPP_HIST_WARP 2
/* MPP_HIST_PAT (sources of 16 and 32 bits): an element whose exponent field is
 * neither 0 nor all ones and whose binade holds no cast threshold (nearly
 * all of them in training tensors) only adds 1 to its warp's count of its
 * sign-and-exponent bits (bits >> man_bits: 64 patterns for fp16, 512 for
 * bf16 and fp32) and updates the extrema; sign and binade come from the
 * pattern when the block folds its counts into the record. Every other
 * element (zero, subnormal, NaN, inf, threshold binades, past the end) takes
 * the full per-element path into the block's histogram. The instruction
 * count, not the memory, bounds the other feeds (Nsight Compute on an H200:
 * about 71 instructions an element for fp16); this one was not yet measured. */
#define MPP_HIST_PAT 3
#define MPP_PAT_BINS 512 /* sign + 8 exponent bits (bf16, fp32) */
/* MPP_HIST_LANE (sources of 16 and 32 bits): as MPP_HIST_PAT, but each lane
 * counts its common elements in its own 16-bit counters (lane l of a warp
 * owns column l of the warp's [pattern][32] slice: no two lanes share an
 * address, so a plain load-add-store, no atomic, no conflict), and the test
 * for "common" is one bit of a register mask instead of a shared-memory
 * flag. A pattern is the sign and the exponent's offset in a window of 32
 * exponent fields: all of fp16's, and for bf16 and fp32 (fp64 under
 * MPP_HIST_LANE64) the window around the first normal element a block reads
 * (anything outside it takes the full path, so the window only moves work,
 * never results). Each lane folds its counters into the block's histogram
 * before they could wrap (lane_room) and at the end. Aimed at the
 * instruction count (about 16 an element on the common path, against 71
 * measured for _warp4); not yet measured on a GPU. */
#define MPP_HIST_LANE 4
/* MPP_HIST_LANE2: MPP_HIST_LANE, with 16-bit sources taken two elements at
 * a time from each 32-bit word of a load: when both are common, one test of
 * both, two counter increments, and the extremes by per-halfword SIMD
 * max/min (__vmaxs2, __vmaxu2, __vminu2: one instruction each on sm_90)
 * kept packed until the end; a word with a rare element feeds both through
 * MPP_HIST_LANE's element path. Aimed at fp16 and bf16 (about 10
 * instructions an element on the common path, against some 19 for _lane);
 * sources of 32 bits run exactly as _lane. Not yet measured on a GPU. */
#define MPP_HIST_LANE2 5
/* MPP_HIST_LANE64: MPP_HIST_LANE2, with fp64 on the lane path too (64-bit
 * extremes). Aimed at the block histogram's contention: every lane of the
 * other feeds' fp64 path adds to one shared histogram, and the lanes of a
 * warp mostly hit the same few binades. Its own entry point because the
 * 64-bit path raises the register count of the whole kernel (ptxas, sm_90:
 * the spills of _lane2 grow); not yet measured on a GPU. */
#define MPP_HIST_LANE64 6
#define MPP_LANE_WIN 32 /* exponent fields of the window */
#define MPP_LANE_PATS (2 * MPP_LANE_WIN)
#ifndef MPP_LANE_FOLD_AT
/* elements a lane counts between folds: a 16-bit counter holds them all */
#define MPP_LANE_FOLD_AT 65535u
#endif
static_assert(MPP_LANE_FOLD_AT <= 65535u, "lane counters are 16 bits");
/* mpp_scan_ops': the fastest on an H200 (devscan_check --kernel, 1 GiB of
 * N(0, 1) data, 2026-12-04: scan / copy fp32 0.32, fp16 0.15, fp64 0.42,
 * against 0.25 / 0.12 / 0.36 for _match, 0.31 / 0.15 / 0.40 for _block,
 * 0.30 / 0.15 / 0.40 for _warp without the register bound), held to
 * MPP_SCAN_MIN_BLOCKS blocks an SM. */
#ifndef MPP_SCAN_HIST
#define MPP_SCAN_HIST MPP_HIST_WARP
#endif
#ifndef MPP_SCAN_MIN_BLOCKS
#define MPP_SCAN_MIN_BLOCKS 4 /* 64 registers a thread (a few spills): more loads in flight */
#endif

/* The word the per-element logic works in: 32-bit integer ops for sources up
 * to 32 bits (half the instructions of 64-bit ones), 64-bit for fp64. */
template <typename T> struct word_of { typedef unsigned int type; };
template <> struct word_of<unsigned long long> { typedef unsigned long long type; };

__device__ __forceinline__ int classify(const mpp_scan_fmt *f, unsigned int b, unsigned int *abs,
                                        int *bin) {
  return mpp_scan_classify32(f, b, abs, bin);
}
__device__ __forceinline__ int classify(const mpp_scan_fmt *f, unsigned long long b,
                                        unsigned long long *abs, int *bin) {
  uint64_t a;
  int c = mpp_scan_classify64(f, b, &a, bin);
  *abs = a;
  return c;
}
__device__ __forceinline__ unsigned int key_of(const mpp_scan_fmt *f, unsigned int b) {
  return mpp_scan_key32(f, b);
}
__device__ __forceinline__ unsigned long long key_of(const mpp_scan_fmt *f, unsigned long long b) {
  return mpp_scan_key64(f, b);
}

struct block_state {
  union {
    unsigned int hist[MPP_SCAN_MAX_BINS];         /* MPP_HIST_MATCH, _BLOCK; fp64 */
    unsigned int whist[MPP_WARPS][MPP_WARP_BINS]; /* MPP_HIST_WARP, up to 32-bit sources */
  };
  /* one more: MPP_HIST_PAT reads the flag of an all-ones exponent's binade */
  unsigned char thr_flag[MPP_SCAN_MAX_BINS + 1];
  unsigned long long within[MPP_NTHR];
  unsigned long long thr[MPP_NTHR]; /* copies of the params' */
  int thr_bin[MPP_NTHR];
  unsigned long long warp_part[MPP_WARPS][MPP_NCNT];
};

/* Per-thread: counts fit 32 bits (a thread sees far fewer than 2^32
 * elements), the threshold counts too (registers: constant indices only). */
template <typename W> struct thread_acc {
  unsigned int nans, pinf, ninf, neg;
  W max_key, min_inv, absmax, minabs_inv;
  unsigned int within[MPP_NTHR];
};

/* MPP_HIST_PAT's per-warp pattern counts: beside the block's histogram, which
 * the rare elements feed at the same time. */
struct pat_state {
  unsigned int phist[MPP_WARPS][MPP_PAT_BINS];
};

/* The signed word of the same width (MPP_HIST_LANE's signed maximum). */
template <typename W> struct signed_of { typedef int type; };
template <> struct signed_of<unsigned long long> { typedef long long type; };

/* A thread's MPP_HIST_LANE state: its column of counters, the window, and
 * the extremes of its common elements in the source's word W (see
 * lane_extremes). */
template <typename W> struct lane_ctx {
  unsigned short *lc;
  unsigned base, fast;
  W smax, umax, amin;
  unsigned since; /* elements fed since the last fold */
  /* MPP_HIST_LANE2's packed extremes of 16-bit pairs (per halfword: signed
   * max, unsigned max, unsigned min of |x|), unpacked by lane_unpack2. */
  unsigned smax2, umax2, amin2;
};

/* MPP_HIST_LANE's lane counters and the block's window. */
struct lane_state {
  unsigned short lh[MPP_WARPS][MPP_LANE_PATS][32];
  unsigned base; /* exponent field of window offset 0 */
};

/* Shared memory only the _pat or the _lane kernels hold, beside block_smem
 * (each its own: the other's pointer is null). */
struct feed_state {
  pat_state *pat;
  lane_state *lane;
};

/* Whether a source takes MPP_HIST_LANE's lane path (16- and 32-bit sources;
 * fp64 under MPP_HIST_LANE64; 8-bit sources count their 256 patterns as they are). */
template <int HV, typename T> struct lane_path {
  static const bool value =
      ((HV == MPP_HIST_LANE || HV == MPP_HIST_LANE2) && (sizeof(T) == 2 || sizeof(T) == 4)) ||
      (HV == MPP_HIST_LANE64 && sizeof(T) >= 2);
};

/* Whether a source takes MPP_HIST_LANE2's pairs (16-bit sources). */
template <int HV, typename T> struct lane_pairs {
  static const bool value = (HV == MPP_HIST_LANE2 || HV == MPP_HIST_LANE64) && sizeof(T) == 2;
};

/* Whether a source takes MPP_HIST_PAT's pattern path (fp64 does not). */
template <int HV, typename T> struct pat_path {
  static const bool value = HV == MPP_HIST_PAT && sizeof(T) <= 4;
};

/* Whether a source's histogram lives in per-warp slices under MPP_HIST_WARP. */
template <int HV, typename T> struct warp_slices {
  static const bool value = HV == MPP_HIST_WARP && sizeof(T) <= 4;
};

template <int SRC, typename T, int HV>
__device__ __forceinline__ void scan_element(const mpp_scan_params &p, block_state &sh,
                                             thread_acc<typename word_of<T>::type> &a, T raw,
                                             bool valid, unsigned lane, unsigned warp) {
  typedef typename word_of<T>::type W;
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const W key_mask = (W)(~(W)0 >> (sizeof(W) * 8 - f.width));
  const W abs_mask = key_mask >> 1;
  W bits = (W)raw, abs = 0;
  int bin = MPP_SCAN_NO_BIN;
  int cls = valid ? classify(&f, bits, &abs, &bin) : -1;
  if (cls == MPP_EL_FINITE || cls == MPP_EL_ZERO) {
    a.neg += (cls == MPP_EL_FINITE) & (unsigned)(bits >> (f.width - 1));
    W key = key_of(&f, bits);
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
  if (HV == MPP_HIST_MATCH) {
    /* Warp aggregation: lanes with the same binade elect one leader. */
    unsigned peers = __match_any_sync(MPP_FULL, bin);
    if (bin != MPP_SCAN_NO_BIN && lane == (unsigned)(__ffs(peers) - 1))
      atomicAdd(&sh.hist[bin], (unsigned)__popc(peers));
  } else if (bin != MPP_SCAN_NO_BIN) {
    atomicAdd(warp_slices<HV, T>::value ? &sh.whist[warp][bin] : &sh.hist[bin], 1u);
  }
  /* The few binades holding a cast threshold (rare): the thresholds are read
   * from shared memory (taking the address of the kernel parameters would
   * copy them to local memory in every thread), the counts kept in registers. */
  if (bin != MPP_SCAN_NO_BIN && sh.thr_flag[bin]) {
#pragma unroll
    for (int i = 0; i < MPP_NTHR; i++)
      a.within[i] += (unsigned)(bin == sh.thr_bin[i] && (uint64_t)abs >= sh.thr[i]);
  }
}

/* MPP_HIST_PAT's element: the common case here, the rest by scan_element. */
template <int SRC, typename T>
__device__ __forceinline__ void pat_element(const mpp_scan_params &p, block_state &sh, unsigned *ph,
                                            thread_acc<unsigned> &a, T raw, bool valid,
                                            unsigned lane, unsigned warp) {
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const unsigned key_mask = ~0u >> (32 - f.width), abs_mask = key_mask >> 1;
  const unsigned sign = 1u << (f.width - 1), emask = (1u << f.exp_bits) - 1;
  const unsigned bits = (unsigned)raw, abs = bits & abs_mask, e = abs >> f.man_bits;
  /* e + man_bits - 1 is the binade of a normal value; for e = 0 and e = emask
   * the flag read is harmless (those are rare anyway) */
  if (!valid || e == 0 || e == emask || sh.thr_flag[e + f.man_bits - 1]) {
    scan_element<SRC, T, MPP_HIST_BLOCK>(p, sh, a, raw, valid, lane, warp);
    return;
  }
  atomicAdd(&ph[bits >> f.man_bits], 1u);
  const unsigned key = (bits & sign) ? (~bits & key_mask) : (bits | sign);
  a.max_key = key > a.max_key ? key : a.max_key;
  a.min_inv = (key ^ key_mask) > a.min_inv ? (key ^ key_mask) : a.min_inv;
  a.absmax = abs > a.absmax ? abs : a.absmax;
  a.minabs_inv = (abs ^ abs_mask) > a.minabs_inv ? (abs ^ abs_mask) : a.minabs_inv;
}

/* MPP_HIST_LANE's element: common ones into the lane's counter, the rest by
 * scan_element. lc: this lane's column of its warp's slice (stride 32);
 * fast: bit d set where window offset d is a normal exponent whose binade
 * holds no cast threshold. */
template <int SRC, typename T, typename W>
__device__ __forceinline__ void lane_element(const mpp_scan_params &p, block_state &sh,
                                             lane_ctx<W> &lx, thread_acc<W> &a, T raw, bool valid,
                                             unsigned lane, unsigned warp) {
  typedef typename signed_of<W>::type SW;
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const int wbits = (int)sizeof(W) * 8;
  const W abs_mask = ~(W)0 >> (wbits + 1 - f.width), bits = (W)raw;
  const unsigned emask = (1u << f.exp_bits) - 1;
  const unsigned d = ((unsigned)(bits >> f.man_bits) & emask) - lx.base;
  /* shift clamped at 32: offsets outside the window (d wraps) read 0 */
  if (!valid || !(__funnelshift_rc(lx.fast, 0u, d) & 1u)) {
    scan_element<SRC, T, MPP_HIST_BLOCK>(p, sh, a, raw, valid, lane, warp);
    return;
  }
  lx.lc[(((unsigned)(bits >> (f.width - 1)) * MPP_LANE_WIN) | d) * 32]++;
  /* Sign-extended for the signed maximum: the largest positive element if
   * the lane saw one; the unsigned one: the negative of largest magnitude. */
  const SW sbits = (SW)(bits << (wbits - f.width)) >> (wbits - f.width);
  lx.smax = (SW)lx.smax > sbits ? lx.smax : (W)sbits;
  lx.umax = lx.umax > bits ? lx.umax : bits;
  lx.amin = lx.amin < (bits & abs_mask) ? lx.amin : (bits & abs_mask);
}

/* MPP_HIST_LANE2's pair: the two 16-bit elements of word w (low half
 * first). Both common: counted here, extremes packed; else each by
 * lane_element (which tests it again). */
template <int SRC>
__device__ __forceinline__ void lane_pair(const mpp_scan_params &p, block_state &sh,
                                          lane_ctx<unsigned> &lx, thread_acc<unsigned> &a,
                                          unsigned w, bool valid, unsigned lane, unsigned warp) {
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const unsigned emask = (1u << f.exp_bits) - 1;
  const unsigned lo = w & 0xffffu, hi = w >> 16;
  const unsigned dlo = ((lo >> f.man_bits) & emask) - lx.base;
  const unsigned dhi = ((hi >> f.man_bits) & emask) - lx.base;
  if (!valid || !(__funnelshift_rc(lx.fast, 0u, dlo) & __funnelshift_rc(lx.fast, 0u, dhi) & 1u)) {
    lane_element<SRC, unsigned short>(p, sh, lx, a, (unsigned short)lo, valid, lane, warp);
    lane_element<SRC, unsigned short>(p, sh, lx, a, (unsigned short)hi, valid, lane, warp);
    return;
  }
  lx.lc[(((lo >> 15) * MPP_LANE_WIN) | dlo) * 32]++;
  lx.lc[(((hi >> 15) * MPP_LANE_WIN) | dhi) * 32]++;
  lx.smax2 = __vmaxs2(lx.smax2, w);
  lx.umax2 = __vmaxu2(lx.umax2, w);
  lx.amin2 = __vminu2(lx.amin2, w & 0x7fff7fffu);
}

/* The packed extremes into the lane's own (lane_element's terms: smax
 * sign-extended, umax and amin zero-extended). Their start values change
 * nothing: signed -32768 and 0 are no common element's bits (+-0 is rare),
 * and 0xffff is above every |x| (lane_extremes reads it as none). */
__device__ __forceinline__ void lane_unpack2(lane_ctx<unsigned> &lx) {
  const int s0 = (int)(short)(lx.smax2 & 0xffffu), s1 = (int)(short)(lx.smax2 >> 16);
  const int s = s0 > s1 ? s0 : s1;
  lx.smax = (int)lx.smax > s ? lx.smax : (unsigned)s;
  const unsigned u0 = lx.umax2 & 0xffffu, u1 = lx.umax2 >> 16, u = u0 > u1 ? u0 : u1;
  lx.umax = lx.umax > u ? lx.umax : u;
  const unsigned m0 = lx.amin2 & 0xffffu, m1 = lx.amin2 >> 16, m = m0 < m1 ? m0 : m1;
  lx.amin = lx.amin < m ? lx.amin : m;
}

/* A lane's counters into the block's histogram (binade of exponent field e:
 * e + man_bits - 1) and its negatives, zeroing them. */
template <int SRC, typename W>
__device__ __forceinline__ void lane_fold(block_state &sh, unsigned short *lc, unsigned base,
                                          thread_acc<W> &a) {
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  for (int pat = 0; pat < MPP_LANE_PATS; pat++) {
    unsigned c = lc[pat * 32];
    if (!c) continue;
    lc[pat * 32] = 0;
    atomicAdd(&sh.hist[(pat % MPP_LANE_WIN) + base + f.man_bits - 1], c);
    if (pat >= MPP_LANE_WIN) a.neg += c;
  }
}

/* Before a round that feeds this lane n more elements: folds first if its
 * counters could otherwise wrap. */
template <int SRC, typename W>
__device__ __forceinline__ void lane_room(block_state &sh, lane_ctx<W> &lx, thread_acc<W> &a,
                                          unsigned n) {
  if (lx.since + n > MPP_LANE_FOLD_AT) {
    lane_fold<SRC>(sh, lx.lc, lx.base, a);
    lx.since = 0;
  }
  lx.since += n;
}

/* The lane's extremes of its common elements (all finite, non-zero, normal)
 * into its accumulators: smax is the largest element if one was positive,
 * umax the smallest if one was negative; else all were negative (the largest
 * is the one of least magnitude, amin) or all positive (the smallest is
 * amin). */
template <int SRC, typename W>
__device__ __forceinline__ void lane_extremes(thread_acc<W> &a, W smax, W umax, W amin) {
  typedef typename signed_of<W>::type SW;
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const W key_mask = ~(W)0 >> ((int)sizeof(W) * 8 - f.width), abs_mask = key_mask >> 1,
          sign = abs_mask + 1;
  if (amin > abs_mask) return; /* no common element */
  const bool has_pos = (SW)smax >= 0, has_neg = (umax & sign) != 0;
  const W mx = has_pos ? smax & key_mask : amin | sign;
  const W mn = has_neg ? umax : amin;
  const W kmax = (mx & sign) ? (~mx & key_mask) : (mx | sign);
  const W kmin = (mn & sign) ? (~mn & key_mask) : (mn | sign);
  a.max_key = kmax > a.max_key ? kmax : a.max_key;
  a.min_inv = (kmin ^ key_mask) > a.min_inv ? (kmin ^ key_mask) : a.min_inv;
  const W apos = has_pos ? smax & abs_mask : 0, aneg = has_neg ? umax & abs_mask : 0;
  const W amax = apos > aneg ? apos : aneg;
  a.absmax = amax > a.absmax ? amax : a.absmax;
  a.minabs_inv = (amin ^ abs_mask) > a.minabs_inv ? (amin ^ abs_mask) : a.minabs_inv;
}

/* Calls the element function of the feed HV. */
template <int SRC, typename T, int HV>
__device__ __forceinline__ void feed_element(const mpp_scan_params &p, block_state &sh,
                                             unsigned *ph, lane_ctx<typename word_of<T>::type> &lx,
                                             thread_acc<typename word_of<T>::type> &a, T raw,
                                             bool valid, unsigned lane, unsigned warp) {
  if constexpr (lane_path<HV, T>::value)
    lane_element<SRC, T, typename word_of<T>::type>(p, sh, lx, a, raw, valid, lane, warp);
  else if constexpr (pat_path<HV, T>::value)
    pat_element<SRC, T>(p, sh, ph, a, raw, valid, lane, warp);
  else
    scan_element<SRC, T,
                 HV == MPP_HIST_PAT || HV == MPP_HIST_LANE || HV == MPP_HIST_LANE2 ||
                         HV == MPP_HIST_LANE64
                     ? MPP_HIST_BLOCK
                     : HV>(p, sh, a, raw, valid, lane, warp);
}

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(MPP_FULL, v, o);
  return v;
}

__device__ __forceinline__ unsigned long long warp_max(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long w = __shfl_down_sync(MPP_FULL, v, o);
    v = w > v ? w : v;
  }
  return v;
}

/* 8-bit sources: only 256 bit patterns exist, so each warp counts raw bytes
 * into its own 256-bin slice of shared memory (one shared atomic per element,
 * no classification) and the host derives the whole record from the pattern
 * counts (profiler/gpu/scan_plan.c). */
__device__ __forceinline__ void count_word(unsigned int *wh, unsigned int w) {
#pragma unroll
  for (int k = 0; k < 4; k++)
    atomicAdd(&wh[(w >> (8 * k)) & 0xffu], 1u);
}

__device__ void scan_patterns(const mpp_scan_params &p, unsigned int *hist_base,
                              mpp_scan_result *out, unsigned bid, unsigned nblk) {
  const unsigned tid = threadIdx.x, warp = tid >> 5;
  unsigned int *wh = hist_base + warp * 256;
  const unsigned char *data = (const unsigned char *)p.data;
  const uint64_t grid = (uint64_t)nblk * MPP_BLOCK;
  if (p.flat) {
    uint64_t mis = (uintptr_t)data & 15;
    uint64_t head = mis ? 16 - mis : 0;
    if (head > p.n) head = p.n;
    uint64_t nvec = (p.n - head) / 16, tail0 = head + nvec * 16, nscalar = head + (p.n - tail0);
    const uint4 *vdata = (const uint4 *)(data + head);
    for (uint64_t vi = (uint64_t)bid * MPP_BLOCK + tid; vi < nvec; vi += 2 * grid) {
      uint4 u0 = __ldg(vdata + vi);
      bool has1 = vi + grid < nvec;
      uint4 u1 = has1 ? __ldg(vdata + vi + grid) : make_uint4(0, 0, 0, 0);
      count_word(wh, u0.x);
      count_word(wh, u0.y);
      count_word(wh, u0.z);
      count_word(wh, u0.w);
      if (has1) {
        count_word(wh, u1.x);
        count_word(wh, u1.y);
        count_word(wh, u1.z);
        count_word(wh, u1.w);
      }
    }
    if (bid == nblk - 1)
      for (uint64_t s = tid; s < nscalar; s += MPP_BLOCK)
        atomicAdd(&wh[data[s < head ? s : tail0 + (s - head)]], 1u);
  } else {
    const uint64_t per = p.rows * p.cols;
    for (uint64_t i = (uint64_t)bid * MPP_BLOCK + tid; i < p.n; i += grid) {
      uint64_t b = i / per, rc = i - b * per, c = rc / p.rows, r = rc - c * p.rows;
      const unsigned char *m =
          p.ptrs ? (const unsigned char *)p.ptrs[b] : data + (int64_t)b * p.batch_stride;
      atomicAdd(&wh[m[c * p.ld + r]], 1u);
    }
  }
  __syncthreads();
  for (unsigned b = tid; b < 256; b += MPP_BLOCK) {
    unsigned long long sum = 0;
    for (int w = 0; w < MPP_WARPS; w++)
      sum += hist_base[w * 256 + b];
    if (sum) atomicAdd(&out->hist[b], sum);
  }
}

/* MPP_HIST_LANE's window for a block: fp16's every exponent field; for
 * wider exponents 32 fields around the first normal element among the
 * first few the block reads (a default around 1 without one), 20 below it
 * and 11 above (activations and gradients reach further down than up). */
template <int SRC, typename T>
__device__ unsigned lane_window(const mpp_scan_params &p, unsigned bid) {
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const unsigned emask = (1u << f.exp_bits) - 1;
  if (emask < MPP_LANE_WIN) return 0;
  unsigned e = (unsigned)f.bias;
  if (p.flat) {
    const T *data = (const T *)p.data;
    uint64_t first = (uint64_t)bid * MPP_BLOCK * (16 / sizeof(T));
    for (uint64_t i = first; i < first + 8 && i < p.n; i++) {
      unsigned x = (unsigned)((typename word_of<T>::type)data[i] >> f.man_bits) & emask;
      if (x > 0 && x < emask) {
        e = x;
        break;
      }
    }
  }
  unsigned lo = e > 20 ? e - 20 : 1;
  return lo + MPP_LANE_WIN <= emask ? lo : emask - MPP_LANE_WIN;
}

template <int SRC, typename T, int HV>
__device__ void scan_general(const mpp_scan_params &p, block_state &sh, const feed_state &xs,
                             mpp_scan_result *out, unsigned bid, unsigned nblk) {
  const mpp_scan_fmt f = mpp_scan_fmt_of(SRC);
  const unsigned tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const bool slices = warp_slices<HV, T>::value, pat = pat_path<HV, T>::value;
  const int npat = 1 << (f.width - f.man_bits); /* sign and exponent patterns */
  unsigned *ph = pat ? xs.pat->phist[warp] : nullptr;
  constexpr bool lanes = lane_path<HV, T>::value;
  typedef typename word_of<T>::type W;
  lane_ctx<W> lx = {nullptr, 0, 0, (W)1 << (sizeof(W) * 8 - 1), 0, ~(W)0, 0, 0x80008000u, 0, ~0u};
  for (int b = tid; b <= f.nbins && b < MPP_SCAN_MAX_BINS + 1; b += MPP_BLOCK) {
    if (b < f.nbins) {
      if (slices) {
        for (int w = 0; w < MPP_WARPS; w++)
          sh.whist[w][b] = 0;
      } else {
        sh.hist[b] = 0;
      }
    }
    sh.thr_flag[b] = 0;
  }
  if (pat)
    for (int b = tid; b < MPP_WARPS * npat; b += MPP_BLOCK)
      xs.pat->phist[b / npat][b % npat] = 0;
  if constexpr (lanes) {
    unsigned short *all = &xs.lane->lh[0][0][0];
    for (int b = tid; b < MPP_WARPS * MPP_LANE_PATS * 32; b += MPP_BLOCK)
      all[b] = 0;
    lx.lc = &xs.lane->lh[warp][0][lane];
    if (tid == 0) xs.lane->base = lane_window<SRC, T>(p, bid);
  }
  if (tid < MPP_NTHR) {
    sh.within[tid] = 0;
    sh.thr[tid] = p.thr[tid / MPP_SCAN_LEVELS][tid % MPP_SCAN_LEVELS];
    sh.thr_bin[tid] = p.thr_bin[tid / MPP_SCAN_LEVELS][tid % MPP_SCAN_LEVELS];
  }
  __syncthreads();
  if (tid < MPP_SCAN_TARGETS * MPP_SCAN_LEVELS && sh.thr_bin[tid] != MPP_SCAN_NO_BIN)
    sh.thr_flag[sh.thr_bin[tid]] = 1;
  __syncthreads();
  if constexpr (lanes) {
    /* Window offsets whose exponent is normal and whose binade holds no
     * threshold (every thread the same mask). */
    const unsigned emask = (1u << f.exp_bits) - 1;
    lx.base = xs.lane->base;
    for (unsigned d = 0; d < MPP_LANE_WIN; d++) {
      unsigned e = lx.base + d;
      if (e > 0 && e < emask && !sh.thr_flag[e + f.man_bits - 1]) lx.fast |= 1u << d;
    }
  }

  thread_acc<typename word_of<T>::type> a = {};
  const T *data = (const T *)p.data;
  const uint64_t grid = (uint64_t)nblk * MPP_BLOCK;
  if (p.flat) {
    /* Scalar head up to 16-byte alignment, vector body, scalar tail. */
    constexpr int VEC = 16 / sizeof(T);
    uint64_t mis = ((uintptr_t)data & 15) / sizeof(T);
    uint64_t head = ((uintptr_t)data % sizeof(T)) ? p.n : (mis ? VEC - mis : 0);
    if (head > p.n) head = p.n;
    uint64_t nvec = (p.n - head) / VEC;
    uint64_t tail0 = head + nvec * VEC, nscalar = head + (p.n - tail0);
    const uint4 *vdata = (const uint4 *)(data + head);
    /* Two 16-byte loads in flight per thread before any is consumed. */
    for (uint64_t base = (uint64_t)bid * MPP_BLOCK; base < nvec; base += 2 * grid) {
      if constexpr (lanes) lane_room<SRC>(sh, lx, a, 2 * VEC);
      uint64_t vi0 = base + tid, vi1 = vi0 + grid;
      bool valid0 = vi0 < nvec, valid1 = vi1 < nvec;
      union {
        uint4 v;
        T e[VEC];
      } u0, u1;
      u0.v = valid0 ? __ldg(vdata + vi0) : make_uint4(0, 0, 0, 0);
      u1.v = valid1 ? __ldg(vdata + vi1) : make_uint4(0, 0, 0, 0);
      if constexpr (lane_pairs<HV, T>::value) {
        const unsigned w0[4] = {u0.v.x, u0.v.y, u0.v.z, u0.v.w};
        const unsigned w1[4] = {u1.v.x, u1.v.y, u1.v.z, u1.v.w};
#pragma unroll
        for (int j = 0; j < 4; j++)
          lane_pair<SRC>(p, sh, lx, a, w0[j], valid0, lane, warp);
#pragma unroll
        for (int j = 0; j < 4; j++)
          lane_pair<SRC>(p, sh, lx, a, w1[j], valid1, lane, warp);
      } else {
#pragma unroll
        for (int j = 0; j < VEC; j++)
          feed_element<SRC, T, HV>(p, sh, ph, lx, a, u0.e[j], valid0, lane, warp);
#pragma unroll
        for (int j = 0; j < VEC; j++)
          feed_element<SRC, T, HV>(p, sh, ph, lx, a, u1.e[j], valid1, lane, warp);
      }
    }
    if (bid == nblk - 1) {
      for (uint64_t base = 0; base < nscalar; base += MPP_BLOCK) {
        uint64_t s = base + tid;
        bool valid = s < nscalar;
        uint64_t i = s < head ? s : tail0 + (s - head);
        if constexpr (lanes) lane_room<SRC>(sh, lx, a, 1);
        feed_element<SRC, T, HV>(p, sh, ph, lx, a, valid ? data[i] : (T)0, valid, lane, warp);
      }
    }
  } else {
    const uint64_t per = p.rows * p.cols;
    for (uint64_t base = (uint64_t)bid * MPP_BLOCK; base < p.n; base += grid) {
      if constexpr (lanes) lane_room<SRC>(sh, lx, a, 1);
      uint64_t i = base + tid;
      bool valid = i < p.n;
      T raw = 0;
      if (valid) {
        uint64_t b = i / per, rc = i - b * per, c = rc / p.rows, r = rc - c * p.rows;
        /* Pointer array: neighbouring threads share b, so the base pointer
         * load hits the same cached line; the branch is uniform. */
        const T *m = p.ptrs ? (const T *)p.ptrs[b] : data + (int64_t)b * p.batch_stride;
        raw = m[c * p.ld + r];
      }
      feed_element<SRC, T, HV>(p, sh, ph, lx, a, raw, valid, lane, warp);
    }
  }
  if constexpr (lanes) {
    lane_fold<SRC>(sh, lx.lc, lx.base, a);
    if constexpr (lane_pairs<HV, T>::value) lane_unpack2(lx);
    lane_extremes<SRC>(a, lx.smax, lx.umax, lx.amin);
  }
  if (pat) {
    /* Fold the warps' pattern counts into the block's histogram (binade
     * e + man_bits - 1) and this thread's negatives (sign set). */
    __syncthreads();
    const int ne = npat / 2;
    for (int e = tid; e < ne; e += MPP_BLOCK) {
      unsigned long long pos = 0, neg = 0;
      for (int w = 0; w < MPP_WARPS; w++) {
        pos += xs.pat->phist[w][e];
        neg += xs.pat->phist[w][e + ne];
      }
      if (pos + neg) atomicAdd(&sh.hist[e + f.man_bits - 1], (unsigned)(pos + neg));
      a.neg += (unsigned)neg;
    }
  }

  /* Per-warp reduction of the register counters, then one merge per block. */
  unsigned long long v[MPP_NCNT] = {a.nans,    a.pinf,    a.ninf,   a.neg,
                                    a.max_key, a.min_inv, a.absmax, a.minabs_inv};
#pragma unroll
  for (int c = 0; c < MPP_NCNT; c++)
    v[c] = c < MPP_NSUM ? warp_sum(v[c]) : warp_max(v[c]);
  if (lane == 0)
    for (int c = 0; c < MPP_NCNT; c++)
      sh.warp_part[warp][c] = v[c];
#pragma unroll
  for (int i = 0; i < MPP_NTHR; i++) {
    unsigned long long w = warp_sum(a.within[i]);
    if (lane == 0 && w) atomicAdd(&sh.within[i], w);
  }
  __syncthreads();
  if (tid < MPP_NCNT) {
    unsigned long long s = 0;
    for (int w = 0; w < MPP_WARPS; w++) {
      unsigned long long x = sh.warp_part[w][tid];
      s = tid < MPP_NSUM ? s + x : (x > s ? x : s);
    }
    unsigned long long *dst[MPP_NCNT] = {&out->nans,      &out->pos_infs,  &out->neg_infs,
                                         &out->negatives, &out->max_key,   &out->min_key_inv,
                                         &out->absmax,    &out->minabs_inv};
    if (tid < MPP_NSUM) {
      if (s) atomicAdd(dst[tid], s);
    } else if (s) {
      atomicMax(dst[tid], s);
    }
  }
  if (tid < MPP_NTHR && sh.within[tid])
    atomicAdd(&out->within[tid / MPP_SCAN_LEVELS][tid % MPP_SCAN_LEVELS], sh.within[tid]);
  for (int b = tid; b < f.nbins; b += MPP_BLOCK) {
    unsigned long long sum = 0;
    if (slices) {
      for (int w = 0; w < MPP_WARPS; w++)
        sum += sh.whist[w][b];
    } else {
      sum = sh.hist[b];
    }
    if (sum) atomicAdd(&out->hist[b], sum);
  }
}

/* Shared memory of a block, whichever tensor it scans (one static buffer for
 * all source types: per-type buffers would add up). */
union block_smem {
  block_state general;
  unsigned int patterns[MPP_WARPS * 256]; /* one 256-pattern slice per warp */
};

template <int SRC, typename T, int HV>
__device__ void scan_impl(const mpp_scan_params &p, block_smem &sm, const feed_state &xs,
                          mpp_scan_result *out, unsigned bid, unsigned nblk) {
  if constexpr (sizeof(T) == 1) {
    for (int b = threadIdx.x; b < MPP_WARPS * 256; b += MPP_BLOCK)
      sm.patterns[b] = 0;
    __syncthreads();
    scan_patterns(p, sm.patterns, out, bid, nblk);
  } else {
    scan_general<SRC, T, HV>(p, sm.general, xs, out, bid, nblk);
  }
}

/* Per context: where its accumulators are (set by the host once per context). */
__device__ mpp_scan_ctx mpp_scan_ctx_info;

template <int HV>
__device__ void scan_tensor(const mpp_scan_params &p, block_smem &sm, const feed_state &xs,
                            mpp_scan_result *out, unsigned bid, unsigned nblk) {
  switch (p.src) {
  case MPP_SRC_FP64:
    scan_impl<MPP_SRC_FP64, unsigned long long, HV>(p, sm, xs, out, bid, nblk);
    break;
  case MPP_SRC_FP32:
    scan_impl<MPP_SRC_FP32, unsigned int, HV>(p, sm, xs, out, bid, nblk);
    break;
  case MPP_SRC_FP16:
    scan_impl<MPP_SRC_FP16, unsigned short, HV>(p, sm, xs, out, bid, nblk);
    break;
  case MPP_SRC_BF16:
    scan_impl<MPP_SRC_BF16, unsigned short, HV>(p, sm, xs, out, bid, nblk);
    break;
  case MPP_SRC_E4M3:
    scan_impl<MPP_SRC_E4M3, unsigned char, HV>(p, sm, xs, out, bid, nblk);
    break;
  default:
    scan_impl<MPP_SRC_E5M2, unsigned char, HV>(p, sm, xs, out, bid, nblk);
    break;
  }
}

/* Words of a record the source can have touched: counters, within, then
 * nbins histogram bins (256 pattern counts for 8-bit sources). */
__device__ __forceinline__ unsigned record_words(const mpp_scan_params &p) {
  unsigned bins = p.patterns ? 256u : (unsigned)mpp_scan_fmt_of(p.src).nbins;
  return (unsigned)(offsetof(mpp_scan_result, hist) / sizeof(unsigned long long)) + bins;
}

/* The last block: the finished records go to the mapped slot, the
 * accumulators back to zero for the slot's next launch, then seq. */
__device__ void finish_launch(const mpp_scan_launch &l, mpp_scan_acc *acc) {
  for (unsigned k = 0; k < l.nt; k++) {
    volatile unsigned long long *src = (volatile unsigned long long *)&acc->rec[k];
    unsigned long long *dst = (unsigned long long *)&l.out->rec[k];
    unsigned words = record_words(l.t[k]);
    for (unsigned w = threadIdx.x; w < words; w += MPP_BLOCK) {
      dst[w] = src[w];
      src[w] = 0;
    }
  }
  if (threadIdx.x == 0) {
    acc->ticket = 0;
    /* The op's scale factors and AMAX_D: this launch runs behind the op on
     * its stream, so they hold what the op used and wrote. Constant indices
     * (a computed one would copy the parameters to local memory). */
#pragma unroll
    for (int i = 0; i < MPP_SCAN_MAX_SCALARS; i++)
      if (l.scalar[i]) l.out->scalar[i] = *l.scalar[i];
  }
  __threadfence_system(); /* records before seq, to the host */
  __syncthreads();
  if (threadIdx.x == 0) {
    l.out->ntensors = l.nt;
    l.out->status = MPP_SCAN_OK;
    __threadfence_system();
    *(volatile unsigned long long *)&l.out->seq = l.seq;
  }
}

/* All tensors of an op in one launch: each block scans its tensor's share
 * and merges it into the context's accumulators with atomics; the block that
 * finishes last (atomic ticket) delivers the records. */
template <int HV> __device__ __forceinline__ void scan_ops(const mpp_scan_launch &l) {
  __shared__ block_smem sm;
  __shared__ unsigned last;
  feed_state xs = {nullptr, nullptr}; /* _pat's and _lane's counts: only their kernels hold them */
  if constexpr (HV == MPP_HIST_PAT) {
    __shared__ pat_state pat;
    xs.pat = &pat;
  }
  if constexpr (HV == MPP_HIST_LANE || HV == MPP_HIST_LANE2 || HV == MPP_HIST_LANE64) {
    __shared__ lane_state lanes;
    xs.lane = &lanes;
  }
  const mpp_scan_ctx c = mpp_scan_ctx_info;
  if (c.check != mpp_scan_ctx_check(&c) || !c.acc || l.slot >= c.nslots) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
      l.out->status = MPP_SCAN_NO_CTX;
      __threadfence_system();
      *(volatile unsigned long long *)&l.out->seq = l.seq;
    }
    return;
  }
  mpp_scan_acc *acc = c.acc + l.slot;
  unsigned k = 0;
  while (k + 1 < l.nt && blockIdx.x >= l.blk0[k + 1])
    k++;
  if (l.nt) /* else a launch for the scalars alone */
    scan_tensor<HV>(l.t[k], sm, xs, &acc->rec[k], blockIdx.x - l.blk0[k],
                    l.blk0[k + 1] - l.blk0[k]);
  __threadfence(); /* this block's merges before its ticket */
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(&acc->ticket, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  finish_launch(l, acc);
}

extern "C" __global__ void __launch_bounds__(MPP_BLOCK, MPP_SCAN_MIN_BLOCKS)
    mpp_scan_ops(mpp_scan_launch l) {
  scan_ops<MPP_SCAN_HIST>(l);
}

#ifdef MPP_SCAN_VARIANTS
extern "C" __global__ void __launch_bounds__(MPP_BLOCK) mpp_scan_ops_match(mpp_scan_launch l) {
  scan_ops<MPP_HIST_MATCH>(l);
}
extern "C" __global__ void __launch_bounds__(MPP_BLOCK) mpp_scan_ops_block(mpp_scan_launch l) {
  scan_ops<MPP_HIST_BLOCK>(l);
}
extern "C" __global__ void __launch_bounds__(MPP_BLOCK) mpp_scan_ops_warp(mpp_scan_launch l) {
  scan_ops<MPP_HIST_WARP>(l);
}
/* Sign-and-exponent pattern counts (MPP_HIST_PAT), with and without the register bound. */
extern "C" __global__ void __launch_bounds__(MPP_BLOCK, MPP_SCAN_MIN_BLOCKS)
    mpp_scan_ops_pat(mpp_scan_launch l) {
  scan_ops<MPP_HIST_PAT>(l);
}
extern "C" __global__ void __launch_bounds__(MPP_BLOCK) mpp_scan_ops_pat0(mpp_scan_launch l) {
  scan_ops<MPP_HIST_PAT>(l);
}
/* Lane-private pattern counts (MPP_HIST_LANE), with and without the register bound. */
extern "C" __global__ void __launch_bounds__(MPP_BLOCK, MPP_SCAN_MIN_BLOCKS)
    mpp_scan_ops_lane(mpp_scan_launch l) {
  scan_ops<MPP_HIST_LANE>(l);
}
extern "C" __global__ void __launch_bounds__(MPP_BLOCK) mpp_scan_ops_lane0(mpp_scan_launch l) {
  scan_ops<MPP_HIST_LANE>(l);
}
/* Lane-private counts with 16-bit pairs (MPP_HIST_LANE2), with and without
 * the register bound (ptxas for sm_90: 40 bytes spilled with it, none
 * without). */
extern "C" __global__ void __launch_bounds__(MPP_BLOCK, MPP_SCAN_MIN_BLOCKS)
    mpp_scan_ops_lane2(mpp_scan_launch l) {
  scan_ops<MPP_HIST_LANE2>(l);
}
extern "C" __global__ void __launch_bounds__(MPP_BLOCK) mpp_scan_ops_lane20(mpp_scan_launch l) {
  scan_ops<MPP_HIST_LANE2>(l);
}
/* _lane2 with fp64 on the lane path (MPP_HIST_LANE64), without the register bound. */
extern "C" __global__ void __launch_bounds__(MPP_BLOCK) mpp_scan_ops_lane64(mpp_scan_launch l) {
  scan_ops<MPP_HIST_LANE64>(l);
}
/* The same as _warp held to 64 registers (4 blocks an SM, more loads in flight, some spills). */
extern "C" __global__ void __launch_bounds__(MPP_BLOCK, MPP_SCAN_MIN_BLOCKS)
    mpp_scan_ops_warp4(mpp_scan_launch l) {
  scan_ops<MPP_HIST_WARP>(l);
}
#endif
