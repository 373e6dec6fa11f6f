/* Host scanner throughput, with the limit measured in the same run.
 *
 * For each source dtype: fill a buffer (256 MiB by default) with values shaped
 * like activations and gradients (magnitudes over ~2^-30..2^10, a few zeros),
 * then time (best of several passes) a plain one-pass read that sums the
 * buffer as 64-bit words (with and without software prefetch: the faster is
 * the limit) and the full scan (MP_SCAN_AUTO), interleaved so both
 * see the same machine; the portable scan is timed once, for reference.
 * On an AVX-512 CPU, more rows on the same buffer and read: "fp32/np"
 * (MP_SCAN_AVX512_NO_PLANES, the AVX-512 kernel before the bit planes) and
 * "/avx2" rows (MP_SCAN_AVX2: what a CPU without AVX-512 runs; for fp64 the
 * scalar path), so every path is measured in one run. Prints GB/s and the
 * ratio scan/read.
 * Then small views (64 to 4096 values, the tensors of small layers): ns per
 * scan (thread CPU time, best of reps x 2000 scans) through a workspace, as
 * libmpprof scans (mp_scan_ws: the paths' states kept between scans), and
 * without one, as mpprof inspect scans, against issue 16's aim of 1 us for
 * a tiny tensor. On an AVX-512 CPU a third column times MP_SCAN_AVX2 through
 * a workspace: what a CPU without AVX-512 pays for the same view.
 * Usage: scan_host [MiB] [reps] [dtype] (a dtype name limits the run to that
 * source, for quick iterations). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "analysis/scan_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

typedef struct stamp {
  double wall, cpu;
} stamp;

/* Wall time, and this thread's CPU time: on a shared machine the second is
 * not inflated by the time other processes hold the core. */
static stamp now(void) {
  struct timespec w, c;
  clock_gettime(CLOCK_MONOTONIC, &w);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
  return (stamp){(double)w.tv_sec + 1e-9 * (double)w.tv_nsec,
                 (double)c.tv_sec + 1e-9 * (double)c.tv_nsec};
}

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* The plain read: every byte loaded once, as few instructions per byte as
 * the CPU allows (AVX2 adds of 32 bytes, four independent accumulators);
 * with prefetch, it also asks for the lines ahead as the scan kernels do
 * (scan_prefetch), which reads memory faster on some machines (2-core Intel
 * AVX-512 VM: 13.5-14.1 GB/s against 12.7-13.1). The limit is the faster of
 * the two in each pass. */
#if defined(__x86_64__)
__attribute__((target("avx2"))) static uint64_t plain_read_avx2(const void *p, size_t bytes,
                                                                bool prefetch) {
  const __m256i *v = p;
  size_t n = bytes / 32;
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    if (prefetch) scan_prefetch(v + i, 2);
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(v + i));
    a1 = _mm256_add_epi64(a1, _mm256_loadu_si256(v + i + 1));
    a2 = _mm256_add_epi64(a2, _mm256_loadu_si256(v + i + 2));
    a3 = _mm256_add_epi64(a3, _mm256_loadu_si256(v + i + 3));
  }
  for (; i < n; i++)
    a0 = _mm256_add_epi64(a0, _mm256_loadu_si256(v + i));
  a0 = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
  uint64_t out[4];
  _mm256_storeu_si256((__m256i *)out, a0);
  return out[0] + out[1] + out[2] + out[3];
}
#endif

static uint64_t plain_read_scalar(const void *p, size_t bytes) {
  const uint64_t *w = p;
  size_t n = bytes / 8;
  uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (size_t i = 0; i + 4 <= n; i += 4) {
    a0 += w[i];
    a1 += w[i + 1];
    a2 += w[i + 2];
    a3 += w[i + 3];
  }
  return a0 + a1 + a2 + a3;
}

static uint64_t plain_read(const void *p, size_t bytes, bool prefetch) {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) return plain_read_avx2(p, bytes, prefetch);
#endif
  (void)prefetch;
  return plain_read_scalar(p, bytes);
}

static void fill(mp_dtype d, void *buf, uint64_t n) {
  uint64_t s = 2026;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t r = rng_next(&s);
    double v;
    if ((r & 1023) == 0) {
      v = 0.0;
    } else {
      /* Roughly log-uniform magnitudes over 2^-30 .. 2^10, both signs. */
      double m = 1.0 + (double)(r >> 41) / 8388608.0;
      v = ldexp((r & 2) ? -m : m, (int)((r >> 16) % 41) - 30);
    }
    mp_store(d, buf, i, v);
  }
}

typedef struct best {
  double read_s, scan_s, portable_s;       /* wall */
  double read_cpu, scan_cpu, portable_cpu; /* thread CPU */
} best;

static void keep_min(double *best, double t) {
  if (t < *best) *best = t;
}

#define SMALL_AIM_NS 1000.0 /* issue 16: a tiny tensor's scan under 1 us */
#define SMALL_SCANS 2000

/* ns per scan of a small view: the best of reps rounds of SMALL_SCANS. */
static double small_ns(mp_scan_ws *ws, mp_stats *s, const mp_view *v, mp_scan_impl impl, int reps) {
  double best = INFINITY;
  for (int r = 0; r < reps; r++) {
    stamp t0 = now();
    for (int k = 0; k < SMALL_SCANS; k++)
      mp_scan_ws_scan(ws, s, v, impl);
    keep_min(&best, (now().cpu - t0.cpu) / SMALL_SCANS * 1e9);
  }
  return best;
}

static void small_views(mp_stats *s, void *buf, int reps, const char *only) {
  static const mp_dtype ds[] = {MP_FP32, MP_FP16, MP_BF16, MP_FP8_E4M3, MP_FP8_E5M2, MP_FP64};
  static const uint64_t sizes[] = {64, 256, 1024, 4096};
  mp_scan_ws *ws = mp_scan_ws_new();
  if (!ws) return;
  printf("\nsmall views: ns per scan (thread CPU), auto path, through a workspace as libmpprof "
         "scans\n(and without one, as mpprof inspect); aim %.0f ns, ratio = with / aim\n",
         SMALL_AIM_NS);
  bool avx2_too = strcmp(mp_scan_auto_name(), "avx512") == 0;
  if (avx2_too) printf("avx2: MP_SCAN_AVX2 through a workspace (a CPU without AVX-512)\n");
  printf("%-9s %8s %10s %10s %6s%s\n", "dtype", "values", "workspace", "without", "ratio",
         avx2_too ? "       avx2  ratio" : "");
  for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
    if (only && strcmp(only, mp_dtype_name(ds[i])) != 0) continue;
    fill(ds[i], buf, 4096);
    for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
      mp_view v = {
          .dtype = ds[i], .data = buf, .rows = sizes[j], .cols = 1, .ld = sizes[j], .batch = 1};
      mp_stats_init(s, ds[i]);
      double with = INFINITY, without = INFINITY, avx2 = INFINITY;
      for (int r = 0; r < 2; r++) { /* alternating, so all see the same machine */
        keep_min(&with, small_ns(ws, s, &v, MP_SCAN_AUTO, reps));
        keep_min(&without, small_ns(NULL, s, &v, MP_SCAN_AUTO, reps));
        if (avx2_too) keep_min(&avx2, small_ns(ws, s, &v, MP_SCAN_AVX2, reps));
      }
      printf("%-9s %8llu %10.0f %10.0f %6.2f", mp_dtype_name(ds[i]), (unsigned long long)sizes[j],
             with, without, with / SMALL_AIM_NS);
      if (avx2_too) printf(" %10.0f %6.2f", avx2, avx2 / SMALL_AIM_NS);
      printf("\n");
    }
  }
  mp_scan_ws_free(ws);
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  const char *only = argc > 3 ? argv[3] : NULL;
  if (mib == 0 || reps <= 0) {
    fprintf(stderr, "scan_host: usage: scan_host [MiB > 0] [reps > 0] [dtype]\n");
    return 2;
  }
  size_t bytes = mib << 20;
  void *buf = aligned_alloc(64, bytes);
  if (!buf) {
    fprintf(stderr, "scan_host: cannot allocate %zu MiB\n", mib);
    return 1;
  }
  printf("scan_host: %zu MiB per dtype, best of %d, auto path = %s\n", mib, reps,
         mp_scan_auto_name());
  printf("GB/s from wall time (and from thread CPU time); ratio = scan / read\n");
  printf("%-13s %16s %16s %16s %6s %6s\n", "dtype", "read", "scan", "portable", "ratio", "(cpu)");
  /* Rows: dtype and scanner; "fp32/np" reuses the fp32 buffer. */
  const struct {
    mp_dtype d;
    mp_scan_impl impl;
    const char *label;
  } rows[] = {{MP_FP32, MP_SCAN_AUTO, "fp32"},
              {MP_FP32, MP_SCAN_AVX512_NO_PLANES, "fp32/np"},
              {MP_FP32, MP_SCAN_AVX2, "fp32/avx2"},
              {MP_FP16, MP_SCAN_AUTO, "fp16"},
              {MP_FP16, MP_SCAN_AVX2, "fp16/avx2"},
              {MP_BF16, MP_SCAN_AUTO, "bf16"},
              {MP_BF16, MP_SCAN_AVX2, "bf16/avx2"},
              {MP_FP8_E4M3, MP_SCAN_AUTO, "fp8_e4m3"},
              {MP_FP8_E4M3, MP_SCAN_AVX2, "fp8_e4m3/avx2"},
              {MP_FP8_E5M2, MP_SCAN_AUTO, "fp8_e5m2"},
              {MP_FP8_E5M2, MP_SCAN_AVX2, "fp8_e5m2/avx2"},
              {MP_FP64, MP_SCAN_AUTO, "fp64"},
              {MP_FP64, MP_SCAN_AVX2, "fp64/avx2"}};
  volatile uint64_t sink = 0;
  mp_stats *s = malloc(sizeof *s);
  if (!s) return 1;
  mp_dtype filled = MP_DTYPE_INVALID;
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
    mp_dtype d = rows[k].d;
    if (only && strcmp(only, mp_dtype_name(d)) != 0) continue;
    /* Rows of a path this CPU lacks, or that AUTO already is, are left out.
     * "/avx2": what a CPU without AVX-512 runs. */
    if (rows[k].impl == MP_SCAN_AVX512_NO_PLANES && strcmp(mp_scan_auto_name(), "avx512") != 0)
      continue;
    if (rows[k].impl == MP_SCAN_AVX2 && strcmp(mp_scan_auto_name(), "avx512") != 0) continue;
    uint64_t n = bytes / mp_dtype_size(d);
    if (filled != d) fill(d, buf, n);
    filled = d;
    mp_view v = {.dtype = d, .data = buf, .rows = n, .cols = 1, .ld = n, .batch = 1};
    best b = {INFINITY, INFINITY, INFINITY, INFINITY, INFINITY, INFINITY};
    uint64_t count = 0;
    for (int r = 0; r < reps; r++) {
      /* Interleaved, so both see the same machine conditions. */
      stamp tp = now();
      sink += plain_read(buf, bytes, true);
      stamp t0 = now();
      sink += plain_read(buf, bytes, false);
      stamp t1 = now();
      keep_min(&b.read_s, t0.wall - tp.wall);
      keep_min(&b.read_cpu, t0.cpu - tp.cpu);
      mp_stats_init(s, d);
      mp_scan_with(s, &v, rows[k].impl);
      stamp t2 = now();
      count = s->count;
      keep_min(&b.read_s, t1.wall - t0.wall);
      keep_min(&b.read_cpu, t1.cpu - t0.cpu);
      keep_min(&b.scan_s, t2.wall - t1.wall);
      keep_min(&b.scan_cpu, t2.cpu - t1.cpu);
      if (r == 0 && rows[k].impl == MP_SCAN_AUTO) {
        mp_stats_init(s, d);
        mp_scan_with(s, &v, MP_SCAN_PORTABLE);
        stamp t3 = now();
        b.portable_s = t3.wall - t2.wall;
        b.portable_cpu = t3.cpu - t2.cpu;
      }
    }
    if (count != n) {
      fprintf(stderr, "scan_host: %s: scanned %llu of %llu elements\n", mp_dtype_name(d),
              (unsigned long long)count, (unsigned long long)n);
      return 1;
    }
    double gb = (double)bytes / 1e9;
    char portable[32] = "               -"; /* timed on the AUTO rows only */
    if (isfinite(b.portable_s))
      snprintf(portable, sizeof portable, "%7.2f (%6.2f)", gb / b.portable_s, gb / b.portable_cpu);
    printf("%-13s %7.2f (%6.2f) %7.2f (%6.2f) %s %6.2f %6.2f\n", rows[k].label, gb / b.read_s,
           gb / b.read_cpu, gb / b.scan_s, gb / b.scan_cpu, portable, b.read_s / b.scan_s,
           b.read_cpu / b.scan_cpu);
    fflush(stdout);
  }
  small_views(s, buf, reps, only);
  free(s);
  free(buf);
  (void)sink;
  return 0;
}
