/* What the device scan kernel (kernels/scan.cu) and its host side
 * (profiler/gpu/scan_plan.c, devscan.c, tests/gpu) share: the launch
 * parameters, the raw result record the kernel accumulates with atomics, and
 * the per-element logic, written once for both nvcc and the C compiler so the
 * host can run exactly what the GPU runs (tests/gpu does, without a GPU).
 *
 * The kernel works on bit patterns only. Cast outcomes are monotone in |x|, so
 * for each target the host finds, with the reference mp_cast_classify, the
 * smallest |x| bit pattern reaching "subnormal", "normal" and "overflow"; the
 * kernel counts elements at or above each threshold within the threshold's
 * own binade, and the host adds the binades above from the histogram. */
#ifndef MPPROF_KERNELS_SCAN_ABI_H
#define MPPROF_KERNELS_SCAN_ABI_H

#include <stdint.h>

#ifdef __CUDACC__
#define MPP_HD __host__ __device__ __forceinline__
#else
#define MPP_HD static inline
#endif

#define MPP_SCAN_TARGETS 4     /* = MP_TARGET_COUNT */
#define MPP_SCAN_LEVELS 3      /* thresholds: >= subnormal, >= normal, overflow */
#define MPP_SCAN_MAX_BINS 2098 /* fp64: -1074 .. 1023 */
#define MPP_SCAN_NO_BIN (-1)

/* Source encodings the kernel knows; the order of mpp_scan_kernel_names[]. */
typedef enum mpp_src {
  MPP_SRC_FP64 = 0,
  MPP_SRC_FP32,
  MPP_SRC_FP16,
  MPP_SRC_BF16,
  MPP_SRC_E4M3,
  MPP_SRC_E5M2,
  MPP_SRC_COUNT
} mpp_src;

typedef struct mpp_scan_fmt {
  unsigned width, exp_bits, man_bits;
  int bias;
  int has_inf; /* e4m3 (OCP fn) has no infinities; its only NaN is S.1111.111 */
  int hist_lo; /* lowest binade: 1 - bias - man_bits */
  int nbins;   /* hist_hi - hist_lo + 1 */
} mpp_scan_fmt;

/* Launch parameters (passed by value). Layout: column-major `rows` x `cols`
 * with leading dimension `ld`, `batch` matrices `batch_stride` elements apart,
 * or (ptrs set) `batch` matrices at the addresses held in the pointer array
 * `ptrs` (cublas*Batched): matrix b starts at ptrs[b], read by the kernel
 * itself from device memory so the host never waits for the array. */
typedef struct mpp_scan_params {
  const void *data;
  uint64_t rows, cols, ld, batch;
  int64_t batch_stride;
  uint64_t n;    /* rows * cols * batch */
  int flat;      /* elements are contiguous: index = i */
  int src;       /* mpp_src */
  int patterns;  /* 8-bit sources: the kernel only counts raw bit patterns into
                  * result->hist[0..255]; the host derives everything from them */
  int saturates; /* an fp8 output the op converted with saturation: the host
                  * counts its +-max patterns as saturated (mp_saturated_pattern) */
  uint64_t thr[MPP_SCAN_TARGETS][MPP_SCAN_LEVELS]; /* |x| bits; UINT64_MAX = never reached */
  int thr_bin[MPP_SCAN_TARGETS][MPP_SCAN_LEVELS];  /* binade index (e - hist_lo) or NO_BIN */
  /* Appended: device pointer to `batch` matrix base pointers, or NULL (then
   * matrix b is data + b * batch_stride). Set: data is NULL, flat is 0. */
  const void *const *ptrs;
} mpp_scan_params;

/* Zero-initialised record (accumulators start at zero): maxima of keys, so "none" is 0. */
/* Zeros and finite counts are derived on the host: finite = n - NaN - inf,
 * zeros = finite - sum(hist). */
typedef struct mpp_scan_result {
  unsigned long long nans, pos_infs, neg_infs, negatives;
  unsigned long long max_key;     /* ordered key of the largest finite value */
  unsigned long long min_key_inv; /* key_mask ^ key of the smallest finite value */
  unsigned long long absmax;      /* largest |x| bits over finite x */
  unsigned long long minabs_inv;  /* abs_mask ^ smallest non-zero finite |x| bits */
  unsigned long long within[MPP_SCAN_TARGETS][MPP_SCAN_LEVELS];
  unsigned long long hist[MPP_SCAN_MAX_BINS];
} mpp_scan_result;

/* One launch scans all tensors of an op (kernels/scan.cu, mpp_scan_ops). */
#define MPP_SCAN_MAX_TENSORS 4 /* per launch: an op with more roles takes two (call.c) */
#define MPP_SCAN_OK 1u         /* slot status: records valid */
#define MPP_SCAN_NO_CTX 2u     /* the stream's context has no accumulators: dropped */
#define MPP_SCAN_CTX_MAGIC 0x6d707073636e6374ull
/* 4-byte scalars in device memory the last block copies into the slot: an
 * op's A/B/C/D scale factors, AMAX_D, and its GELU aux's scale and amax
 * (cuBLASLt FP8). The launch is behind the op on its stream, so the amax
 * values hold the op's by then. */
#define MPP_SCAN_MAX_SCALARS 7

/* A result slot in pinned host memory mapped into the device: written only by
 * the launch's last block (records first, then seq), read by the host poller
 * once seq equals the launch's sequence number. No copy, no event. */
typedef struct mpp_scan_slot {
  unsigned long long seq;
  unsigned int status, ntensors;
  unsigned int scalar[MPP_SCAN_MAX_SCALARS]; /* the 4-byte values behind the launch's scalar[] */
  unsigned int pad;
  mpp_scan_result rec[MPP_SCAN_MAX_TENSORS];
} mpp_scan_slot;

/* Device-side accumulators of one slot, per context: zero between launches
 * (zeroed once at set-up, then by each launch's last block after it copied
 * them out), so no launch needs a memset. */
typedef struct mpp_scan_acc {
  unsigned int ticket; /* blocks finished */
  unsigned int pad[3];
  mpp_scan_result rec[MPP_SCAN_MAX_TENSORS];
} mpp_scan_acc;

/* Per context, in the module's __device__ variable mpp_scan_ctx_info: where
 * that context's accumulators are. A kernel that lands in a context mpprof
 * never set up (a stale cached context) finds no valid entry and says so
 * (MPP_SCAN_NO_CTX) instead of touching another device's memory. */
typedef struct mpp_scan_ctx {
  mpp_scan_acc *acc; /* nslots accumulators */
  unsigned long long nslots;
  unsigned long long check; /* acc ^ nslots ^ MAGIC: a torn or absent copy fails */
} mpp_scan_ctx;

/* The kernel's one parameter: the op's tensors, the blocks of each (tensor
 * k owns blocks blk0[k] .. blk0[k+1]-1; the grid is blk0[nt]), and where the
 * results go. nt may be 0 when only scalars are read: then blk0[0] = 1 block. */
typedef struct mpp_scan_launch {
  mpp_scan_params t[MPP_SCAN_MAX_TENSORS];
  unsigned int nt;
  unsigned int blk0[MPP_SCAN_MAX_TENSORS + 1];
  unsigned int slot;      /* index of the slot and of its accumulators */
  unsigned long long seq; /* written to out->seq last */
  mpp_scan_slot *out;     /* device address of the mapped slot */
  /* Scalars to copy into out->scalar[] (NULL: none). */
  const unsigned int *scalar[MPP_SCAN_MAX_SCALARS];
} mpp_scan_launch;

MPP_HD unsigned long long mpp_scan_ctx_check(const mpp_scan_ctx *c) {
  return (unsigned long long)(uintptr_t)c->acc ^ c->nslots ^ MPP_SCAN_CTX_MAGIC;
}

MPP_HD mpp_scan_fmt mpp_scan_fmt_of(int src) {
  mpp_scan_fmt f;
  switch (src) {
  case MPP_SRC_FP64:
    f.width = 64;
    f.exp_bits = 11;
    f.man_bits = 52;
    f.bias = 1023;
    f.has_inf = 1;
    break;
  case MPP_SRC_FP16:
    f.width = 16;
    f.exp_bits = 5;
    f.man_bits = 10;
    f.bias = 15;
    f.has_inf = 1;
    break;
  case MPP_SRC_BF16:
    f.width = 16;
    f.exp_bits = 8;
    f.man_bits = 7;
    f.bias = 127;
    f.has_inf = 1;
    break;
  case MPP_SRC_E4M3:
    f.width = 8;
    f.exp_bits = 4;
    f.man_bits = 3;
    f.bias = 7;
    f.has_inf = 0;
    break;
  case MPP_SRC_E5M2:
    f.width = 8;
    f.exp_bits = 5;
    f.man_bits = 2;
    f.bias = 15;
    f.has_inf = 1;
    break;
  default:
    f.width = 32;
    f.exp_bits = 8;
    f.man_bits = 23;
    f.bias = 127;
    f.has_inf = 1;
    break;
  }
  f.hist_lo = 1 - f.bias - (int)f.man_bits;
  /* highest binade: emax = (2^E - 2) - bias, e4m3 also uses the all-ones exponent */
  int emax = (int)((1u << f.exp_bits) - (f.has_inf ? 2 : 1)) - f.bias;
  f.nbins = emax - f.hist_lo + 1;
  return f;
}

/* Element classes. */
enum { MPP_EL_ZERO = 0, MPP_EL_FINITE, MPP_EL_NAN, MPP_EL_PINF, MPP_EL_NINF };

#ifdef __CUDA_ARCH__
#define MPP_CLZ32(v) __clz((int)(v))
#define MPP_CLZ64(v) __clzll((long long)(v))
#else
#define MPP_CLZ32(v) __builtin_clz(v)
#define MPP_CLZ64(v) __builtin_clzll(v)
#endif

#define MPP_UT uint32_t
#define MPP_SUF 32
#define MPP_CLZ MPP_CLZ32
#include "scan_elem.inc"
#undef MPP_UT
#undef MPP_SUF
#undef MPP_CLZ
#define MPP_UT uint64_t
#define MPP_SUF 64
#define MPP_CLZ MPP_CLZ64
#include "scan_elem.inc"
#undef MPP_UT
#undef MPP_SUF
#undef MPP_CLZ

MPP_HD uint64_t mpp_scan_key_mask(const mpp_scan_fmt *f) {
  return f->width == 64 ? ~0ull : (1ull << f->width) - 1;
}

MPP_HD uint64_t mpp_scan_key_to_bits(const mpp_scan_fmt *f, uint64_t key) {
  uint64_t sign = 1ull << (f->width - 1);
  uint64_t mask = mpp_scan_key_mask(f);
  return (key & sign) ? (key & ~sign) : (~key & mask);
}

#endif
