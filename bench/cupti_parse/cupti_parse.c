/* bench/cupti_parse: mpprof's own share of kernel correlation, without CUDA.
 *
 * libmpprof's CUPTI path (profiler/gpu/cupti.c) is fed synthetic activity
 * buffers in the layout CUPTI and simcuda write: per op, the external
 * correlation record (CUSTOM2 = the op id), the launch's driver API record
 * and its CUpti_ActivityKernel10 record, all with one correlation id. The
 * timed part is what libmpprof does with a completed buffer: queue it, walk
 * it (cuptiActivityGetNextRecord of the loaded libcupti, simcuda's here),
 * fill the correlation table, match each kernel to its op and update the
 * op's site (kernel name, count, GPU time, timeline event). The limit,
 * measured in the same run, is a bare walk of the same buffers through
 * cuptiActivityGetNextRecord reading each record's kind: what any consumer
 * pays. The aim (issue 16) is under 300 ns per op.
 *
 * Usage: cupti_parse [OPS_PER_BUFFER [BUFFERS]]; LD_LIBRARY_PATH must reach a
 * libcupti.so.13 (simcuda's under meson). CPU time of the whole process
 * (the parser may run on libmpprof's own thread); best of 5 rounds. */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profiler/gpu/gpu.h"
#include "profiler/mpp.h"
#include "profiler/sites.h"
#include "tests/core_fixture.h"

static const char *const kernel_names[] = {
    "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
    "segment_k_off_kernel__5x_cublas",
    "void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>("
    "cublasSplitKParams<float>, float const*, float const*, float*, float const*, float const*, "
    "float const*, float const*, float*, void*, long, float*, int*)",
    "ampere_sgemm_32x32_sliced1x4_nn",
};
#define NNAMES (sizeof kernel_names / sizeof kernel_names[0])

static float host_a[16], host_b[16], host_d[16];

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static size_t align8(size_t v) {
  return (v + 7) & ~(size_t)7;
}

/* One buffer of `ops` ops (3 records each) for site 0; correlation ids from *corr. */
static size_t fill(uint8_t *buf, size_t cap, int ops, uint32_t *corr, uint64_t *call) {
  size_t used = 0;
  for (int i = 0; i < ops; i++) {
    size_t need = align8(sizeof(CUpti_ActivityExternalCorrelation)) +
                  align8(sizeof(CUpti_ActivityAPI)) + align8(sizeof(CUpti_ActivityKernel10));
    if (used + need > cap) break;
    uint32_t c = ++*corr;
    uint64_t op_id = (1ull << 32) | (*call)++; /* site 0: op ids are site + 1 above */
    CUpti_ActivityExternalCorrelation *x = (void *)(buf + used);
    memset(x, 0, sizeof *x);
    x->kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM2;
    x->externalId = op_id;
    x->correlationId = c;
    used += align8(sizeof *x);
    CUpti_ActivityAPI *a = (void *)(buf + used);
    memset(a, 0, sizeof *a);
    a->kind = CUPTI_ACTIVITY_KIND_DRIVER;
    a->cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
    a->correlationId = c;
    used += align8(sizeof *a);
    CUpti_ActivityKernel10 *k = (void *)(buf + used);
    memset(k, 0, sizeof *k);
    k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k->correlationId = c;
    k->start = 1000ull * c;
    k->end = 1000ull * c + 500;
    k->streamId = 7;
    k->name = kernel_names[c % NNAMES];
    used += align8(sizeof *k);
  }
  return used;
}

int main(int argc, char **argv) {
  int ops = argc > 1 ? atoi(argv[1]) : 10000;
  int nbuf = argc > 2 ? atoi(argv[2]) : 20;
  size_t cap = mpp_cupti_buffer_size();
  if (ops <= 0 || nbuf <= 0) {
    fputs("usage: cupti_parse [OPS_PER_BUFFER [BUFFERS]]\n", stderr);
    return 2;
  }
  /* One site, made by a real call through the core (host memory, no CUDA);
   * every kernel a timeline event: the dearest case. */
  mpp_fixture_reset(MPP_SCAN_NONE, 16, 1ull << 32);
  mpp_gemm_call g = mpp_fixture_gemm4("cublasSgemm_v2", host_a, host_b, host_d);
  mpp_fixture_record(&g, &mpp_fixture_host_ctx, NULL, NULL);

  mpp_cupti_start(NULL, NULL); /* the library on LD_LIBRARY_PATH */
  if (strcmp(mpp_cupti_status(), "ok") != 0) {
    fprintf(stderr, "cupti_parse: CUPTI %s (is simcuda's libcupti.so.13 on LD_LIBRARY_PATH?)\n",
            mpp_cupti_status());
    return 1;
  }
  mpp_cupti_set_sink(mpp_kernel_sink_fn);
  CUptiResult (*next)(uint8_t *, size_t, CUpti_Activity **) =
      (CUptiResult(*)(uint8_t *, size_t, CUpti_Activity **))dlsym(mpp_cupti_handle(),
                                                                  "cuptiActivityGetNextRecord");
  if (!next) return 1;

  uint32_t corr = 0;
  uint64_t call = 1;
  double best_parse = 1e300, best_walk = 1e300;
  long total_ops = 0;
  enum { ROUNDS = 5 };
  for (int round = 0; round < ROUNDS; round++) {
    uint8_t **bufs = calloc((size_t)nbuf, sizeof *bufs);
    size_t *valid = calloc((size_t)nbuf, sizeof *valid);
    if (!bufs || !valid) return 1;
    long n = 0;
    for (int b = 0; b < nbuf; b++) {
      bufs[b] = aligned_alloc(8, cap);
      if (!bufs[b]) return 1;
      uint32_t before = corr;
      valid[b] = fill(bufs[b], cap, ops, &corr, &call);
      n += corr - before;
    }
    /* The limit: a bare walk of the same records. */
    volatile uint64_t kinds = 0;
    double t0 = cpu_ns();
    for (int b = 0; b < nbuf; b++) {
      CUpti_Activity *rec = NULL;
      while (next(bufs[b], valid[b], &rec) == CUPTI_SUCCESS)
        kinds += rec->kind;
    }
    double walk = (cpu_ns() - t0) / (double)n;
    /* mpprof's path: completed, parsed (its thread or this flush), matched, recorded. */
    t0 = cpu_ns();
    for (int b = 0; b < nbuf; b++)
      mpp_cupti_complete_buffer(bufs[b], valid[b]);
    mpp_cupti_flush(true);
    double parse = (cpu_ns() - t0) / (double)n;
    if (parse < best_parse) best_parse = parse;
    if (walk < best_walk) best_walk = walk;
    total_ops += n;
    free(bufs);
    free(valid);
  }
  printf("cupti_parse: %d buffers x %d ops (ext correlation + driver API + kernel record "
         "each), best of %d rounds, process CPU time\n",
         nbuf, ops, ROUNDS);
  printf("%-58s %10s\n", "", "ns/op");
  printf("%-58s %10.1f\n", "bare walk, cuptiActivityGetNextRecord (limit)", best_walk);
  printf("%-58s %10.1f\n", "mpprof: queue, parse, correlate, site + timeline update", best_parse);
  printf("%-58s %10.1f\n", "  over the bare walk", best_parse - best_walk);
  printf("%-58s %10.1f\n", "aim (issue 16)", 300.0);
  printf("ratio to the bare walk %.2f; to the aim %.2f (%s)\n", best_parse / best_walk,
         best_parse / 300.0, best_parse < 300.0 ? "met" : "not met");
  mpp_tables t;
  mpp_sites_lock();
  mpp_tables_get(&t, 0);
  unsigned long long launches = t.nsites ? (unsigned long long)t.sites[0].kernel_launches : 0;
  mpp_sites_unlock();
  printf("kernels attributed to the site: %llu of %ld\n", launches, total_ops);
  return launches == (unsigned long long)total_ops ? 0 : 1;
}
