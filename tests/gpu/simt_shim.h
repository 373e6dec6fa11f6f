/* A tiny CPU stand-in for the CUDA features kernels/scan.cu uses, so the real
 * kernel source runs here: one OS thread per CUDA thread, blocks one after
 * another, __syncthreads as a block barrier, warp intrinsics (__match_any_sync,
 * __shfl_down_sync) as lockstep exchanges through a per-warp barrier, shared
 * memory as static storage, atomics as GCC atomics. Slow and only for tests. */
#ifndef MPPROF_TESTS_GPU_SIMT_SHIM_H
#define MPPROF_TESTS_GPU_SIMT_SHIM_H

#include <pthread.h>
#include <stdint.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __shared__ static

struct uint3 {
  unsigned x, y, z;
};
struct uint4 {
  unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) {
  return uint4{a, b, c, d};
}

extern thread_local uint3 threadIdx;
extern uint3 blockIdx, gridDim, blockDim;

namespace simt {
enum { MAX_WARPS = 32 };
struct warp_ex {
  pthread_barrier_t bar;
  unsigned long long v[32];
};
extern pthread_barrier_t block_bar;
extern warp_ex warps[MAX_WARPS];
} // namespace simt

template <class T> static inline T __ldg(const T *p) {
  return *p;
}
static inline void __syncthreads() {
  pthread_barrier_wait(&simt::block_bar);
}
static inline void __threadfence() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
static inline void __threadfence_system() {
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}
static inline unsigned atomicAdd(unsigned *p, unsigned v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
  return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
}
static inline unsigned atomicMax(unsigned *p, unsigned v) {
  unsigned old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v &&
         !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
static inline unsigned long long atomicMax(unsigned long long *p, unsigned long long v) {
  unsigned long long old = __atomic_load_n(p, __ATOMIC_RELAXED);
  while (old < v &&
         !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
  return old;
}
static inline int __ffs(unsigned v) {
  return __builtin_ffs((int)v);
}
static inline int __popc(unsigned v) {
  return __builtin_popcount(v);
}
/* (hi:lo) >> min(shift, 32), low 32 bits */
static inline unsigned __funnelshift_rc(unsigned lo, unsigned hi, unsigned shift) {
  unsigned long long x = (unsigned long long)hi << 32 | lo;
  return (unsigned)(x >> (shift < 32 ? shift : 32));
}
/* Per-halfword SIMD max/min: signed max, unsigned max, unsigned min. */
static inline unsigned simt_halves(unsigned lo, unsigned hi) {
  return (lo & 0xffffu) | hi << 16;
}
static inline unsigned __vmaxs2(unsigned a, unsigned b) {
  short a0 = (short)(a & 0xffffu), b0 = (short)(b & 0xffffu), a1 = (short)(a >> 16),
        b1 = (short)(b >> 16);
  return simt_halves((unsigned short)(a0 > b0 ? a0 : b0), (unsigned short)(a1 > b1 ? a1 : b1));
}
static inline unsigned __vmaxu2(unsigned a, unsigned b) {
  unsigned a0 = a & 0xffffu, b0 = b & 0xffffu, a1 = a >> 16, b1 = b >> 16;
  return simt_halves(a0 > b0 ? a0 : b0, a1 > b1 ? a1 : b1);
}
static inline unsigned __vminu2(unsigned a, unsigned b) {
  unsigned a0 = a & 0xffffu, b0 = b & 0xffffu, a1 = a >> 16, b1 = b >> 16;
  return simt_halves(a0 < b0 ? a0 : b0, a1 < b1 ? a1 : b1);
}
/* Lockstep exchange: every lane of the warp publishes a value, then reads. */
static inline simt::warp_ex &simt_publish(unsigned long long v) {
  simt::warp_ex &w = simt::warps[threadIdx.x / 32];
  w.v[threadIdx.x % 32] = v;
  pthread_barrier_wait(&w.bar);
  return w;
}
static inline unsigned __match_any_sync(unsigned mask, int value) {
  (void)mask;
  simt::warp_ex &w = simt_publish((unsigned long long)(long long)value);
  unsigned peers = 0;
  for (int l = 0; l < 32; l++)
    peers |= (w.v[l] == (unsigned long long)(long long)value) << l;
  pthread_barrier_wait(&w.bar);
  return peers;
}
static inline unsigned long long __shfl_down_sync(unsigned mask, unsigned long long v, int d) {
  (void)mask;
  simt::warp_ex &w = simt_publish(v);
  unsigned lane = threadIdx.x % 32;
  unsigned long long r = lane + d < 32 ? w.v[lane + d] : v;
  pthread_barrier_wait(&w.bar);
  return r;
}

#endif
