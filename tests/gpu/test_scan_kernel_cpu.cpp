// kernels/scan.cu itself, run on the CPU through tests/gpu/simt_shim.h
// (threads, barriers, warp exchanges), against the host scanner: the
// kernel's indexing (vector body, misaligned head, tail, strided and
// broadcast batches, batches by pointer array), warp aggregation, reductions and atomic merges, for
// every source dtype, with several grid sizes; several tensors of mixed
// types in one launch and the last block's finalisation (records, seq,
// accumulators back to zero), and a launch in a context never set up. What it cannot check: real
// GPU memory behaviour and speed (scripts/gpu-check.sh does, on a GPU).
#include "tests/gpu/simt_shim.h"

#define MPP_SCAN_VARIANTS    /* every entry point, each checked below */
#define MPP_LANE_FOLD_AT 40u /* _lane's counters folded every few rounds: the folds run too */
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

/* An fp8 output converted with saturation (descriptor flagged `saturates`):
 * the kernel's record decodes to the host path's, saturated count included
 * (mp_scan + mp_count_saturated): +-max, NaN, the neighbours of max, random
 * patterns; contiguous, strided and by pointer array, 1-3 blocks. Unflagged,
 * or a wider source, nothing counts as saturated (as on the host path). */
static int check_saturated(mp_dtype dt, unsigned grid) {
  uint64_t n = 3001, rows = 37, cols = 11, ld = 40;
  int top = mp_saturated_pattern(dt);
  uint8_t *buf = (uint8_t *)mpp_scan_test_data(dt, n, 700 + (uint64_t)dt);
  /* Runs of every boundary pattern among the random ones. */
  const uint8_t marks[] = {
      (uint8_t)top, (uint8_t)(top | 0x80), (uint8_t)(top - 1), (uint8_t)(top + 1), 0x7f,
      0xff,         (uint8_t)(top | 0x80)};
  for (uint64_t i = 0; i < n; i += 5)
    buf[i] = marks[(i / 5) % sizeof marks];
  const void *ptrs[3] = {buf + 1, buf + 1000, buf + 2003 - 40};
  mp_view views[3] = {{dt, buf, n, 1, n, 1, 0},
                      {dt, buf + 3, rows, cols, ld, 3, (int64_t)(ld * cols + 7)},
                      {dt, NULL, rows, cols, ld, 3, 0}};
  const char *what[3] = {"contiguous", "ld 40, batch 3 strided", "pointer array of 3"};
  int bad = 0;
  mp_stats *want = (mp_stats *)malloc(sizeof *want), *got = (mp_stats *)malloc(sizeof *got);
  for (int k = 0; k < 3; k++) {
    for (int flag = 0; flag < 2; flag++) {
      mpp_scan_params p;
      int rc = k == 2 ? mpp_scan_plan_ptrs(&views[k], (const void *const *)ptrs, &p)
                      : mpp_scan_plan(&views[k], &p);
      if (rc != 0) {
        printf("FAIL %s saturated %s: plan refused\n", mp_dtype_name(dt), what[k]);
        bad = 1;
        continue;
      }
      p.saturates = flag;
      if (!run_ops(&p, 1, &grid, 0)) {
        bad = 1;
        continue;
      }
      mp_stats_init(want, dt);
      mp_stats_init(got, dt);
      for (int b = 0; b < (k == 2 ? 3 : 1); b++) {
        mp_view one = views[k];
        if (k == 2) one = mp_view{dt, ptrs[b], rows, cols, ld, 1, 0};
        mp_scan_with(want, &one, MP_SCAN_PORTABLE);
        if (flag) want->saturated += mp_count_saturated(&one);
      }
      mpp_scan_finish(&p, &g_out[0].rec[0], got);
      const char *diff = mpp_stats_diff(want, got);
      if (!diff && flag && got->saturated == 0) diff = "no saturated value in the test data";
      printf("%s %-8s %-22s saturates %d grid %u: %llu saturated, %s\n", diff ? "FAIL" : "ok  ",
             mp_dtype_name(dt), what[k], flag, grid, (unsigned long long)got->saturated,
             diff ? diff : "bit-identical to the host path");
      bad |= diff != NULL;
    }
  }
  /* A wider source flagged as saturating: nothing is saturated (mp_count_saturated: 0). */
  float x[4] = {448.0f, -448.0f, 57344.0f, 1.0f};
  mp_view fv = {MP_FP32, x, 4, 1, 4, 1, 0};
  mpp_scan_params p;
  mpp_scan_plan(&fv, &p);
  p.saturates = 1;
  unsigned one_block = 1;
  if (run_ops(&p, 1, &one_block, 0)) {
    mp_stats_init(got, MP_FP32);
    mpp_scan_finish(&p, &g_out[0].rec[0], got);
    if (got->saturated) {
      printf("FAIL fp32 flagged saturating: %llu saturated\n", (unsigned long long)got->saturated);
      bad = 1;
    }
  } else {
    bad = 1;
  }
  free(want);
  free(got);
  free(buf);
  return bad;
}

/* The last block copies the launch's scalars (FP8 scales, AMAX_D) into the
 * slot, also in a launch without tensors (one block); absent ones untouched. */
static int check_scalars(void) {
  static const float vals[MPP_SCAN_MAX_SCALARS] = {2.0f, 0.5f, 0, 0.25f, 448.0f};
  float x[300];
  for (int i = 0; i < 300; i++)
    x[i] = (float)i;
  mp_view v = {MP_FP32, x, 300, 1, 300, 1, 0};
  int bad = 0;
  for (int nt = 0; nt < 2; nt++) {
    mpp_scan_launch l;
    memset(&l, 0, sizeof l);
    if (nt) {
      mpp_scan_plan(&v, &l.t[0]);
      l.blk0[1] = 2;
    } else {
      l.blk0[0] = 1; /* the one block of a launch without tensors */
    }
    l.nt = (unsigned)nt;
    for (int i = 0; i < MPP_SCAN_MAX_SCALARS; i++)
      if (i != 2) l.scalar[i] = (const unsigned int *)&vals[i];
    l.slot = 1;
    l.seq = ++g_seq;
    l.out = &g_out[1];
    memset(g_out[1].scalar, 0xab, sizeof g_out[1].scalar);
    launch(&l, nt ? 2 : 1);
    bool ok = g_out[1].seq == l.seq && g_out[1].status == MPP_SCAN_OK &&
              all_zero(&g_acc[1], sizeof g_acc[1]) && g_out[1].scalar[2] == 0xababababu;
    for (int i = 0; i < MPP_SCAN_MAX_SCALARS; i++)
      if (i != 2) ok &= memcmp(&g_out[1].scalar[i], &vals[i], 4) == 0;
    if (nt) {
      mp_stats *want = (mp_stats *)malloc(sizeof *want), *got = (mp_stats *)malloc(sizeof *got);
      mp_stats_init(want, MP_FP32);
      mp_stats_init(got, MP_FP32);
      mp_scan_with(want, &v, MP_SCAN_PORTABLE);
      mpp_scan_finish(&l.t[0], &g_out[1].rec[0], got);
      ok &= mpp_stats_diff(want, got) == NULL;
      free(want);
      free(got);
    }
    printf("%s scalars copied to the slot by the last block, %d tensor(s): %s\n",
           ok ? "ok  " : "FAIL", nt, ok ? "values as stored" : "wrong");
    bad |= !ok;
  }
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

/* Every check, with the kernel's entry point set to `fn`. */
/* N(0, 1) data (few binades, nothing rare: the common paths of the _pat and
 * _lane feeds, whose extremes then decide the record's), as drawn, all
 * positive and all negative (the sign bit of every element cleared or set:
 * an extreme is then the element of least magnitude). */
static int check_normal(mp_dtype dt, uint64_t seed) {
  static const char *const what[3] = {"N(0, 1)", "|N(0, 1)|", "-|N(0, 1)|"};
  unsigned w = mp_dtype_size(dt);
  uint64_t n = 3001;
  uint8_t *buf = (uint8_t *)mpp_scan_normal_data(dt, n, seed);
  uint8_t *al = (uint8_t *)aligned_alloc(16, (n * w + 15) / 16 * 16);
  int bad = 0;
  for (int sign = 0; sign < 3; sign++) {
    memcpy(al, buf, n * w);
    for (uint64_t i = 0; sign && i < n;
         i++) /* little-endian: the sign is the last byte's top bit */
      al[(i + 1) * w - 1] = sign == 1 ? al[(i + 1) * w - 1] & 0x7f : al[(i + 1) * w - 1] | 0x80;
    mp_view v = {dt, al, n, 1, n, 1, 0};
    bad += check(what[sign], &v, 2);
  }
  free(buf);
  free(al);
  return bad;
}

static int check_all(void) {
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
    if (w > 1) bad += check_normal(dt, 700 + i); /* 8-bit: one pattern path in every variant */
  }
  for (unsigned grid = 1; grid <= 3; grid++) {
    bad += check_saturated(MP_FP8_E4M3, grid);
    bad += check_saturated(MP_FP8_E5M2, grid);
  }
  bad += check_scalars();
  bad += check_multi(1, 1, 1, 1);
  bad += check_multi(2, 3, 1, 2);
  bad += check_no_context();
  return bad;
}

int main() {
  set_up_context();
  /* Each way of feeding the histogram (kernels/scan.cu MPP_HIST_*); _warp4,
   * _pat0, _lane0 and _lane20 differ from _warp, _pat, _lane and _lane2 only
   * in their register bound, nothing the CPU runs. */
  static const struct {
    void (*fn)(mpp_scan_launch);
    const char *name;
  } variants[] = {
      {mpp_scan_ops_match, "mpp_scan_ops_match"},  {mpp_scan_ops_block, "mpp_scan_ops_block"},
      {mpp_scan_ops_warp, "mpp_scan_ops_warp"},    {mpp_scan_ops_pat, "mpp_scan_ops_pat"},
      {mpp_scan_ops_lane, "mpp_scan_ops_lane"},    {mpp_scan_ops_lane2, "mpp_scan_ops_lane2"},
      {mpp_scan_ops_lane64, "mpp_scan_ops_lane64"}};
  int bad = 0;
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
    printf("--- %s\n", variants[i].name);
    simt_scan_kernel = variants[i].fn;
    bad += check_all();
  }
  printf("%s\n", bad ? "FAILED" : "all bit-identical");
  return bad ? 1 : 0;
}
