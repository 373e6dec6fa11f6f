// kernels/scan.cu itself, run on the CPU through tests/gpu/simt_shim.h
// (threads, barriers, warp exchanges), against the host scanner: the
// kernel's indexing (vector body, misaligned head, tail, strided and
// broadcast batches, batches by pointer array), warp aggregation, reductions and atomic merges, for
// every source dtype, with several grid sizes; several tensors of mixed
// types in one launch and the last block's finalisation (records, seq,
// accumulators back to zero), and a launch in a context never set up. What it cannot check: real
// GPU memory behaviour and speed (scripts/gpu-check.sh does, on a GPU).
#include "tests/gpu/simt_shim.h"

#include "kernels/scan.cu"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "analysis/scan.h"
#include "profiler/gpu/scan_plan.h"
#include "tests/gpu/scan_data.h"
}

#include "tests/gpu/simt_launch.h"

/* The one "context" of this process: accumulators for 2 slots, zeroed once. */
enum { NSLOTS = 2 };
static mpp_scan_acc *g_acc;
static mpp_scan_slot *g_out; /* the "mapped" ring */
static unsigned long long g_seq;

static void set_up_context(void) {
  g_acc = (mpp_scan_acc *)calloc(NSLOTS, sizeof *g_acc);
  g_out = (mpp_scan_slot *)calloc(NSLOTS, sizeof *g_out);
  mpp_scan_ctx_info.acc = g_acc;
  mpp_scan_ctx_info.nslots = NSLOTS;
  mpp_scan_ctx_info.check = mpp_scan_ctx_check(&mpp_scan_ctx_info);
}

static bool all_zero(const void *p, size_t n) {
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++)
    if (b[i]) return false;
  return true;
}

/* One launch of nt tensors, blocks[k] blocks for tensor k, into `slot`.
 * Checks what the last block owes: the slot's seq and status, and every
 * accumulator back to zero for the next launch. */
static bool run_ops(const mpp_scan_params *ps, unsigned nt, const unsigned *blocks, unsigned slot) {
  mpp_scan_launch l;
  memset(&l, 0, sizeof l);
  l.nt = nt;
  unsigned at = 0;
  for (unsigned k = 0; k < nt; k++) {
    l.t[k] = ps[k];
    l.blk0[k] = at;
    at += blocks[k];
  }
  l.blk0[nt] = at;
  l.slot = slot;
  l.seq = ++g_seq;
  l.out = &g_out[slot];
  launch(&l, at);
  bool ok = g_out[slot].seq == l.seq && g_out[slot].status == MPP_SCAN_OK &&
            g_out[slot].ntensors == nt && all_zero(&g_acc[slot], sizeof g_acc[slot]);
  if (!ok) printf("FAIL launch of %u tensors: seq/status/accumulators not finalised\n", nt);
  return ok;
}

static const char *diff_of(const mp_view *v, const mpp_scan_params *p, const mpp_scan_result *r) {
  static mp_stats got, want;
  mp_stats_init(&got, v->dtype);
  mp_stats_init(&want, v->dtype);
  mpp_scan_finish(p, r, &got);
  mp_scan_with(&want, v, MP_SCAN_PORTABLE);
  return mpp_stats_diff(&want, &got);
}

static int check(const char *what, const mp_view *v, unsigned grid) {
  mpp_scan_params p;
  if (mpp_scan_plan(v, &p) != 0) {
    printf("FAIL %s %s: plan refused\n", mp_dtype_name(v->dtype), what);
    return 1;
  }
  if (!run_ops(&p, 1, &grid, 0)) return 1;
  const char *diff = diff_of(v, &p, &g_out[0].rec[0]);
  printf("%s %-8s %-28s grid %u: %s\n", diff ? "FAIL" : "ok  ", mp_dtype_name(v->dtype), what, grid,
         diff ? diff : "bit-identical");
  return diff != NULL;
}

/* A batch by pointer array: `nb` matrices rows x cols with leading dimension
 * ld, each in its own allocation; the kernel against mp_scan of each matrix
 * merged into one record. */
static int check_ptrs(mp_dtype dt, uint64_t rows, uint64_t cols, uint64_t ld, unsigned nb,
                      unsigned grid, uint64_t seed) {
  unsigned w = mp_dtype_size(dt);
  void **mats = (void **)calloc(nb, sizeof *mats);
  const void **ptrs = (const void **)calloc(nb, sizeof *ptrs);
  mp_stats *want = (mp_stats *)malloc(sizeof *want), *got = (mp_stats *)malloc(sizeof *got);
  mp_stats_init(want, dt);
  mp_stats_init(got, dt);
  for (unsigned b = 0; b < nb; b++) {
    /* Unrelated addresses: separate allocations, an odd element offset, and
     * the later matrices allocated first so they need not ascend. */
    unsigned k = nb - 1 - b;
    mats[k] = mpp_scan_test_data(dt, ld * cols + 3, seed + k);
    ptrs[k] = (const uint8_t *)mats[k] + (k % 2 ? 3 : 1) * w;
  }
  for (unsigned b = 0; b < nb; b++) {
    mp_view one = {dt, ptrs[b], rows, cols, ld, 1, 0};
    mp_scan_with(want, &one, MP_SCAN_PORTABLE);
  }
  mp_view shape = {dt, NULL, rows, cols, ld, nb, 0};
  mpp_scan_params p;
  int bad = 0;
  if (mpp_scan_plan_ptrs(&shape, (const void *const *)ptrs, &p) != 0 || p.flat) {
    printf("FAIL %s pointer array: plan refused or flat\n", mp_dtype_name(dt));
    bad = 1;
  } else if (!run_ops(&p, 1, &grid, 1)) {
    bad = 1;
  } else {
    mpp_scan_finish(&p, &g_out[1].rec[0], got);
    const char *diff = mpp_stats_diff(want, got);
    printf("%s %-8s pointer array %ux %llux%llu ld %llu grid %u: %s\n", diff ? "FAIL" : "ok  ",
           mp_dtype_name(dt), nb, (unsigned long long)rows, (unsigned long long)cols,
           (unsigned long long)ld, grid, diff ? diff : "bit-identical");
    bad = diff != NULL;
    /* The kernel and its CPU emulation agree too (test_scan_plan relies on it). */
    mpp_scan_result *e = (mpp_scan_result *)calloc(1, sizeof *e);
    mpp_scan_emulate(&p, e);
    mp_stats_init(got, dt);
    mpp_scan_finish(&p, e, got);
    if ((diff = mpp_stats_diff(want, got)) != NULL) {
      printf("FAIL %s pointer array emulation: %s\n", mp_dtype_name(dt), diff);
      bad = 1;
    }
    free(e);
  }
  for (unsigned b = 0; b < nb; b++)
    free(mats[b]);
  free(mats);
  free(ptrs);
  free(want);
  free(got);
  return bad;
}

/* One launch for all tensors of an op, of mixed source types (each block
 * scans one tensor), incl. a batch by pointer array: every record == the
 * host scanner's; run twice on the same slot (the first launch's last block
 * must have left the accumulators at zero). */
static int check_multi(unsigned b0, unsigned b1, unsigned b2, unsigned b3) {
  enum { NB = 3 };
  const mp_dtype dts[4] = {MP_FP8_E4M3, MP_BF16, MP_FP64, MP_FP16};
  void *bufs[4], *mats[NB];
  const void *ptrs[NB];
  mp_view v[4];
  mpp_scan_params p[4];
  uint64_t rows = 29, cols = 21, ld = 31;
  v[0] = mp_view{dts[0], NULL, 3001, 1, 3001, 1, 0};
  v[1] = mp_view{dts[1], NULL, 37, 11, 40, 3, 40 * 11 + 5};
  v[2] = mp_view{dts[2], NULL, 777, 1, 777, 1, 0};
  for (int k = 0; k < 3; k++) {
    bufs[k] = mpp_scan_test_data(dts[k], 3001 + 40 * 11 * 3 + 8, 1200 + k);
    v[k].data = bufs[k];
  }
  bufs[3] = NULL;
  for (unsigned b = 0; b < NB; b++) {
    mats[b] = mpp_scan_test_data(dts[3], ld * cols + 2, 1300 + b);
    ptrs[b] = (const uint8_t *)mats[b] + (b % 2) * 2;
  }
  mp_view shape = {dts[3], NULL, rows, cols, ld, NB, 0};
  int bad = 0;
  for (int k = 0; k < 3; k++)
    bad |= mpp_scan_plan(&v[k], &p[k]) != 0;
  bad |= mpp_scan_plan_ptrs(&shape, (const void *const *)ptrs, &p[3]) != 0;
  const unsigned blocks[4] = {b0, b1, b2, b3};
  for (int round = 0; round < 2 && !bad; round++) {
    if (!run_ops(p, 4, blocks, 0)) {
      bad = 1;
      break;
    }
    for (int k = 0; k < 3; k++) {
      const char *diff = diff_of(&v[k], &p[k], &g_out[0].rec[k]);
      if (diff) printf("FAIL multi tensor %d (%s): %s\n", k, mp_dtype_name(dts[k]), diff);
      bad |= diff != NULL;
    }
    mp_stats *want = (mp_stats *)malloc(sizeof *want), *got = (mp_stats *)malloc(sizeof *got);
    mp_stats_init(want, dts[3]);
    mp_stats_init(got, dts[3]);
    for (unsigned b = 0; b < NB; b++) {
      mp_view one = {dts[3], ptrs[b], rows, cols, ld, 1, 0};
      mp_scan_with(want, &one, MP_SCAN_PORTABLE);
    }
    mpp_scan_finish(&p[3], &g_out[0].rec[3], got);
    const char *diff = mpp_stats_diff(want, got);
    if (diff) printf("FAIL multi tensor 3 (fp16 pointer array): %s\n", diff);
    bad |= diff != NULL;
    free(want);
    free(got);
  }
  printf("%s one launch, 4 tensors (e4m3, bf16 strided, fp64, fp16 pointer array), blocks "
         "%u/%u/%u/%u, "
         "twice on one slot: %s\n",
         bad ? "FAIL" : "ok  ", b0, b1, b2, b3, bad ? "differs" : "bit-identical");
  for (int k = 0; k < 3; k++)
    free(bufs[k]);
  for (unsigned b = 0; b < NB; b++)
    free(mats[b]);
  return bad;
}

/* A launch that lands in a context mpprof never set up (the kernel's
 * per-context variable absent or torn) touches no accumulator and says so. */
static int check_no_context(void) {
  mpp_scan_ctx saved = mpp_scan_ctx_info;
  float x[64] = {1};
  mp_view v = {MP_FP32, x, 64, 1, 64, 1, 0};
  mpp_scan_params p;
  mpp_scan_plan(&v, &p);
  int bad = 0;
  for (int torn = 0; torn < 2; torn++) {
    if (torn)
      mpp_scan_ctx_info.nslots = NSLOTS + 1; /* check no longer matches */
    else
      memset(&mpp_scan_ctx_info, 0, sizeof mpp_scan_ctx_info);
    mpp_scan_launch l;
    memset(&l, 0, sizeof l);
    l.nt = 1;
    l.blk0[1] = 2;
    l.t[0] = p;
    l.seq = ++g_seq;
    l.out = &g_out[0];
    launch(&l, 2);
    bool ok = g_out[0].seq == l.seq && g_out[0].status == MPP_SCAN_NO_CTX &&
              all_zero(g_acc, NSLOTS * sizeof *g_acc);
    printf("%s launch in a context without %s accumulators: %s\n", ok ? "ok  " : "FAIL",
           torn ? "valid" : "any", ok ? "NO_CTX, nothing touched" : "wrong");
    bad |= !ok;
    mpp_scan_ctx_info = saved;
  }
  return bad;
}

int main() {
  set_up_context();
  static const mp_dtype dts[] = {MP_FP64, MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2};
  int bad = 0;
  for (size_t i = 0; i < sizeof dts / sizeof dts[0]; i++) {
    mp_dtype dt = dts[i];
    unsigned w = mp_dtype_size(dt);
    uint64_t n = 4001; /* several grid-stride rounds and a tail with 1-3 blocks */
    uint8_t *buf = (uint8_t *)mpp_scan_test_data(dt, n + 1, 500 + i);
    /* 16-byte aligned copy so the vector path is taken as on a GPU */
    uint8_t *al = (uint8_t *)aligned_alloc(16, ((n + 1) * w + 15) / 16 * 16);
    memcpy(al, buf, (n + 1) * w);
    mp_view v = {dt, al, n, 1, n, 1, 0};
    bad += check("contiguous", &v, 3);
    bad += check("contiguous", &v, 1);
    mp_view m = {dt, al + w, n - 1, 1, n - 1, 1, 0};
    bad += check("start misaligned by 1 elem", &m, 2);
    mp_view s = {dt, al, 37, 11, 40, 3, 40 * 11 + 5};
    bad += check("ld 40, batch 3 strided", &s, 2);
    mp_view bc = {dt, al, 37, 11, 40, 3, 0};
    bad += check("batch 3 broadcast", &bc, 2);
    mp_view tiny = {dt, al, 5, 1, 5, 1, 0};
    bad += check("5 elements", &tiny, 2);
    free(buf);
    free(al);
    bad += check_ptrs(dt, 37, 11, 40, 3, 2, 900 + i * 10);
    bad += check_ptrs(dt, 29, 50, 33, 4, 3, 950 + i * 10); /* several grid-stride rounds */
  }
  bad += check_multi(1, 1, 1, 1);
  bad += check_multi(2, 3, 1, 2);
  bad += check_no_context();
  printf("%s\n", bad ? "FAILED" : "all bit-identical");
  return bad ? 1 : 0;
}
