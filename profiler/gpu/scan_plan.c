/* Host side of the device scan: thresholds, result decoding, CPU emulation.
 *
 * Thresholds come from the reference classifier (mp_cast_classify) by binary
 * search over the positive bit patterns of the source format, so the device
 * never spells a format limit and agrees with the host scanner by
 * construction. */
#include "profiler/gpu/scan_plan.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/convert.h"

static const char *g_kernel_name = "mpp_scan_ops";

const char *mpp_scan_kernel_name(void) {
  return g_kernel_name;
}

void mpp_scan_kernel_select(const char *name) {
  g_kernel_name = name;
}

static int src_of(mp_dtype d) {
  switch (d) {
  case MP_FP64:
    return MPP_SRC_FP64;
  case MP_FP32:
    return MPP_SRC_FP32;
  case MP_FP16:
    return MPP_SRC_FP16;
  case MP_BF16:
    return MPP_SRC_BF16;
  case MP_FP8_E4M3:
    return MPP_SRC_E4M3;
  case MP_FP8_E5M2:
    return MPP_SRC_E5M2;
  default:
    return -1;
  }
}

static mp_dtype dtype_of(int src) {
  static const mp_dtype d[MPP_SRC_COUNT] = {MP_FP64, MP_FP32,     MP_FP16,
                                            MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  return d[src];
}

/* Value of a positive bit pattern of the source format (exact). */
static double value_of(int src, uint64_t bits) {
  uint8_t buf[8];
  memcpy(buf, &bits, sizeof buf); /* little-endian: low bytes first */
  return mp_load(dtype_of(src), buf, 0);
}

static int rank_of(mp_cast_outcome o) {
  switch (o) {
  case MP_CAST_UNDERFLOW:
    return 0;
  case MP_CAST_SUBNORMAL:
    return 1;
  case MP_CAST_NORMAL:
    return 2;
  default:
    return 3;
  }
}

/* The thresholds of a source: a function of the format alone, found once per
 * process for every source (per tensor they cost a binary search per target
 * and level: 2-3 us a tensor, most of a scanned op's host time). */
typedef struct src_thresholds {
  uint64_t thr[MPP_SCAN_TARGETS][MPP_SCAN_LEVELS];
  int thr_bin[MPP_SCAN_TARGETS][MPP_SCAN_LEVELS];
} src_thresholds;

static src_thresholds g_thresholds[MPP_SRC_COUNT];
static pthread_once_t g_thresholds_once = PTHREAD_ONCE_INIT;

static void find_thresholds(int src, src_thresholds *ret) {
  mpp_scan_fmt f = mpp_scan_fmt_of(src);
  /* Largest finite positive pattern. */
  uint64_t max_bits =
      f.has_inf ? (((1ull << f.exp_bits) - 1) << f.man_bits) - 1 : (1ull << (f.width - 1)) - 2;
  for (int t = 0; t < MPP_SCAN_TARGETS; t++) {
    for (int k = 1; k <= MPP_SCAN_LEVELS; k++) {
      uint64_t *thr = &ret->thr[t][k - 1];
      int *bin = &ret->thr_bin[t][k - 1];
      if (rank_of(mp_cast_classify(value_of(src, max_bits), (mp_target)t)) < k) {
        *thr = UINT64_MAX;
        *bin = MPP_SCAN_NO_BIN;
        continue;
      }
      uint64_t lo = 1, hi = max_bits; /* smallest bits with rank >= k lies in [lo, hi] */
      while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (rank_of(mp_cast_classify(value_of(src, mid), (mp_target)t)) >= k)
          hi = mid;
        else
          lo = mid + 1;
      }
      *thr = lo;
      uint64_t abs;
      mpp_scan_classify64(&f, lo, &abs, bin);
    }
  }
}

static void find_all_thresholds(void) {
  for (int src = 0; src < MPP_SRC_COUNT; src++)
    find_thresholds(src, &g_thresholds[src]);
}

int mpp_scan_plan(const mp_view *v, mpp_scan_params *p) {
  memset(p, 0, sizeof *p);
  int src = v ? src_of(v->dtype) : -1;
  if (src < 0 || !v->data) return -EINVAL;
  uint64_t batch = v->batch ? v->batch : 1;
  if (v->ld < v->rows && v->cols > 1) return -EINVAL;
  p->data = v->data;
  p->rows = v->rows;
  p->cols = v->cols;
  p->ld = v->ld < v->rows ? v->rows : v->ld;
  p->batch = batch;
  p->batch_stride = v->batch_stride;
  p->n = v->rows * v->cols * batch;
  p->flat = (p->ld == p->rows || p->cols <= 1) &&
            (batch == 1 || v->batch_stride == (int64_t)(p->rows * p->cols));
  p->src = src;
  p->patterns = mpp_scan_fmt_of(src).width == 8;
  pthread_once(&g_thresholds_once, find_all_thresholds);
  _Static_assert(sizeof p->thr == sizeof g_thresholds[0].thr, "thresholds' shape");
  _Static_assert(sizeof p->thr_bin == sizeof g_thresholds[0].thr_bin, "thresholds' shape");
  memcpy(p->thr, g_thresholds[src].thr, sizeof p->thr);
  memcpy(p->thr_bin, g_thresholds[src].thr_bin, sizeof p->thr_bin);
  return 0;
}

int mpp_scan_plan_ptrs(const mp_view *v, const void *const *ptrs, mpp_scan_params *p) {
  if (!v || !ptrs) {
    memset(p, 0, sizeof *p);
    return -EINVAL;
  }
  mp_view shape = *v;
  shape.data = (const void *)ptrs; /* any non-NULL: the plan only checks it is set */
  shape.batch_stride = 0;
  int rc = mpp_scan_plan(&shape, p);
  if (rc < 0) return rc;
  p->data = NULL;
  p->ptrs = ptrs;
  p->batch_stride = 0;
  p->flat = 0; /* the matrices lie anywhere */
  return 0;
}

/* One element (c times), exactly as kernels/scan.cu does it (same word width). */
static void emulate_element(const mpp_scan_params *p, const mpp_scan_fmt *f, uint64_t bits,
                            uint64_t c, mpp_scan_result *r) {
  uint64_t abs, key;
  int bin, cls;
  if (f->width <= 32) {
    uint32_t a32;
    cls = mpp_scan_classify32(f, (uint32_t)bits, &a32, &bin);
    abs = a32;
    key = mpp_scan_key32(f, (uint32_t)bits);
  } else {
    cls = mpp_scan_classify64(f, bits, &abs, &bin);
    key = mpp_scan_key64(f, bits);
  }
  uint64_t mask = mpp_scan_key_mask(f);
  uint64_t abs_mask = (1ull << (f->width - 1)) - 1;
  switch (cls) {
  case MPP_EL_NAN:
    r->nans += c;
    return;
  case MPP_EL_PINF:
    r->pos_infs += c;
    return;
  case MPP_EL_NINF:
    r->neg_infs += c;
    r->negatives += c;
    return;
  case MPP_EL_FINITE:
    r->negatives += c * (bits >> (f->width - 1));
    break;
  default:
    break;
  }
  if (key > r->max_key) r->max_key = key;
  if ((mask ^ key) > r->min_key_inv) r->min_key_inv = mask ^ key;
  if (abs > r->absmax) r->absmax = abs;
  if (cls != MPP_EL_FINITE) return;
  if ((abs_mask ^ abs) > r->minabs_inv) r->minabs_inv = abs_mask ^ abs;
  r->hist[bin] += c;
  for (int t = 0; t < MPP_SCAN_TARGETS; t++)
    for (int k = 0; k < MPP_SCAN_LEVELS; k++)
      r->within[t][k] += c * (bin == p->thr_bin[t][k] && abs >= p->thr[t][k]);
}

static mpp_scan_result *from_patterns(const mpp_scan_params *p, const mpp_scan_result *r) {
  mpp_scan_fmt f = mpp_scan_fmt_of(p->src);
  mpp_scan_result *full = calloc(1, sizeof *full);
  if (!full) return NULL;
  for (uint64_t pat = 0; pat < 256; pat++)
    if (r->hist[pat]) emulate_element(p, &f, pat, r->hist[pat], full);
  return full;
}

void mpp_scan_finish(const mpp_scan_params *p, const mpp_scan_result *r, mp_stats *s) {
  mpp_scan_result *full = NULL;
  /* Saturated: the +-max patterns, as mp_count_saturated counts them. */
  int top = p->saturates && p->patterns ? mp_saturated_pattern(dtype_of(p->src)) : -1;
  uint64_t saturated = top < 0 ? 0 : r->hist[top] + r->hist[top | 0x80];
  if (p->patterns) {
    /* 8-bit sources: the device counted bit patterns; expand them here. */
    full = from_patterns(p, r);
    if (!full) return;
    r = full;
  }
  mpp_scan_fmt f = mpp_scan_fmt_of(p->src);
  /* Written into s itself: no 17 KB record on the stack of the thread that
   * delivers, which may be the application's (exit(), exec). */
  uint64_t nonzero = 0;
  for (int b = 0; b < f.nbins; b++)
    nonzero += r->hist[b];
  uint64_t finite = p->n - r->nans - r->pos_infs - r->neg_infs;
  s->count = p->n;
  s->zeros = finite - nonzero;
  s->nans = r->nans;
  s->pos_infs = r->pos_infs;
  s->neg_infs = r->neg_infs;
  s->negatives = r->negatives;
  s->saturated = saturated;
  if (finite) {
    uint64_t mask = mpp_scan_key_mask(&f);
    s->max = value_of(p->src, mpp_scan_key_to_bits(&f, r->max_key));
    s->min = value_of(p->src, mpp_scan_key_to_bits(&f, mask ^ r->min_key_inv));
    s->absmax = value_of(p->src, r->absmax);
  }
  uint64_t abs_mask = (1ull << (f.width - 1)) - 1;
  if (r->minabs_inv) s->min_abs_nonzero = value_of(p->src, abs_mask ^ r->minabs_inv);
  for (int b = 0; b < f.nbins; b++)
    s->exp_hist[f.hist_lo + b - MP_HIST_MIN] = r->hist[b];
  for (int t = 0; t < MPP_SCAN_TARGETS; t++) {
    uint64_t ge[MPP_SCAN_LEVELS + 1];
    ge[0] = nonzero;
    for (int k = 0; k < MPP_SCAN_LEVELS; k++) {
      int bin = p->thr_bin[t][k];
      if (bin == MPP_SCAN_NO_BIN) {
        ge[k + 1] = 0;
        continue;
      }
      uint64_t above = r->within[t][k];
      for (int b = bin + 1; b < f.nbins; b++)
        above += r->hist[b];
      ge[k + 1] = above;
    }
    s->casts[t][MP_CAST_UNDERFLOW] = ge[0] - ge[1];
    s->casts[t][MP_CAST_SUBNORMAL] = ge[1] - ge[2];
    s->casts[t][MP_CAST_NORMAL] = ge[2] - ge[3];
    s->casts[t][MP_CAST_OVERFLOW] = ge[3];
  }
  free(full);
}

static uint64_t load_bits(const mpp_scan_fmt *f, const void *data, uint64_t i) {
  const uint8_t *b = (const uint8_t *)data + i * (f->width / 8);
  uint64_t v = 0;
  memcpy(&v, b, f->width / 8);
  return v;
}

void mpp_scan_emulate(const mpp_scan_params *p, mpp_scan_result *r) {
  mpp_scan_fmt f = mpp_scan_fmt_of(p->src);
  for (uint64_t i = 0; i < p->n; i++) {
    uint64_t off = i;
    const void *base = p->data;
    if (!p->flat) {
      uint64_t per = p->rows * p->cols, b = i / per, rc = i % per;
      off = (rc / p->rows) * p->ld + rc % p->rows;
      if (p->ptrs)
        base = p->ptrs[b];
      else
        off += (uint64_t)((int64_t)b * p->batch_stride);
    }
    uint64_t bits = load_bits(&f, base, off);
    if (p->patterns)
      r->hist[bits]++; /* what the kernel does for 8-bit sources */
    else
      emulate_element(p, &f, bits, 1, r);
  }
}
