// kernels/scan.cu itself, run on the CPU through tests/gpu/simt_shim.h
// (threads, barriers, warp exchanges), against the host scanner: the
// kernel's indexing (vector body, misaligned head, tail, strided and
// broadcast batches, batches by pointer array), warp aggregation, reductions and atomic merges, for
// every source dtype, with several grid sizes. What it cannot check: real
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

static int check(const char *what, const mp_view *v, unsigned grid) {
  mpp_scan_params p;
  if (mpp_scan_plan(v, &p) != 0) {
    printf("FAIL %s %s: plan refused\n", mp_dtype_name(v->dtype), what);
    return 1;
  }
  mpp_scan_result *r = (mpp_scan_result *)calloc(1, sizeof *r);
  p.result = r;
  launch(kernel_of(p.src), &p, grid);
  mp_stats *got = (mp_stats *)malloc(sizeof *got), *want = (mp_stats *)malloc(sizeof *want);
  mp_stats_init(got, v->dtype);
  mp_stats_init(want, v->dtype);
  mpp_scan_finish(&p, r, got);
  mp_scan_with(want, v, MP_SCAN_PORTABLE);
  const char *diff = mpp_stats_diff(want, got);
  printf("%s %-8s %-28s grid %u: %s\n", diff ? "FAIL" : "ok  ", mp_dtype_name(v->dtype), what, grid,
         diff ? diff : "bit-identical");
  free(r);
  free(got);
  free(want);
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
  } else {
    mpp_scan_result *r = (mpp_scan_result *)calloc(1, sizeof *r);
    p.result = r;
    launch(kernel_of(p.src), &p, grid);
    mpp_scan_finish(&p, r, got);
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
    free(r);
  }
  for (unsigned b = 0; b < nb; b++)
    free(mats[b]);
  free(mats);
  free(ptrs);
  free(want);
  free(got);
  return bad;
}

int main() {
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
  printf("%s\n", bad ? "FAILED" : "all bit-identical");
  return bad ? 1 : 0;
}
