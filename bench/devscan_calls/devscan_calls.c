/* devscan_calls: CUDA driver calls a scanned GEMM costs the calling thread.
 *
 * profiler/call.c on the fake libcuda.so.1 of tests/gpu/fakecuda (which
 * counts every entry point's calls per thread and runs the scan kernel on
 * the CPU): an SGEMM with A, B and D in (fake) device memory on a stream,
 * MPPROF_SCAN=all, hooked as cublasSgemm_v2 would be. The first call sets up
 * the context and learns the allocations; the figure is the calls of the
 * following ones (all equal), against the limit of issue 16 (4 per scanned
 * op: capture check, capture mode to relaxed and back, one launch), with the
 * kernel launches per GEMM. Also the host time of a scanned GEMM's hooks
 * with the stand-in kernels deferred (fakecuda_hold) and the fake's driver
 * calls costing next to nothing: mpprof's own share of the host time, of
 * which a GPU adds the driver's (scripts/gpu-check.sh measures that sum),
 * beside the same GEMM with scanning off, measured in the same run.
 *
 * usage: devscan_calls [CALLS]   (LD_LIBRARY_PATH=<fakecuda dir>) */
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/gpu.h"
#include "profiler/hooks/gemm_decode.h"
#include "profiler/call.h"
#include "profiler/hostmem.h"
#include "profiler/mpp.h"
#include "profiler/sites.h"
#include "tests/core_fixture.h"

enum { M = 64, N = 32, K = 48, LIMIT = 4 };

static void *dev_alloc(size_t bytes) {
  CUdeviceptr d = 0;
  if (mpp_cu()->mem_alloc(&d, bytes) != CUDA_SUCCESS) return NULL;
  return memset((void *)(uintptr_t)d, 0x3c, bytes); /* fp32 1.15: the fake's memory is the host's */
}

static void gemm(const float *a, const float *b, float *c) {
  static const float one = 1, zero = 0;
  static int stream_token;
  mpp_gemm_call g = {.api = "cublasSgemm_v2",
                     .m = M,
                     .n = N,
                     .k = K,
                     .lda = M,
                     .ldb = K,
                     .ldc = M,
                     .alpha = &one,
                     .beta = &zero,
                     .A = a,
                     .B = b,
                     .C = c,
                     .batch = 1,
                     .compute = 68};
  mpp_gemm_ctx ctx = {.stream = &stream_token, .host_visible = mpp_host_readable};
  mpp_op op;
  mpp_call call;
  mpp_gemm_decode(&op, &g, &ctx);
  mpp_call_begin(&call, &op);
  mpp_call_end(&call, &op, true);
}

int main(int argc, char **argv) {
  int calls = argc > 1 ? atoi(argv[1]) : 20;
  mpp_fixture_reset(MPP_SCAN_ALL, 16, 16);
  if (!mpp_cuda_available()) {
    fputs("devscan_calls: no driver (is LD_LIBRARY_PATH the fakecuda dir?)\n", stderr);
    return 1;
  }
  float *a = dev_alloc(M * K * 4), *b = dev_alloc(K * N * 4), *c = dev_alloc(M * N * 4);
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  long (*thread_calls)(void) = lib ? (long (*)(void))dlsym(lib, "fakecuda_thread_calls") : NULL;
  int (*launches)(void) = lib ? (int (*)(void))dlsym(lib, "fakecuda_launches") : NULL;
  if (!a || !b || !c || !thread_calls || !launches) {
    fputs("devscan_calls: not the fake driver of tests/gpu/fakecuda\n", stderr);
    return 1;
  }
  long c0 = thread_calls();
  gemm(a, b, c);
  long first = thread_calls() - c0;
  mpp_devscan_drain();
  long most = 0, total = 0;
  int l0 = launches();
  for (int i = 0; i < calls; i++) {
    long before = thread_calls();
    gemm(a, b, c);
    long used = thread_calls() - before;
    total += used;
    if (used > most) most = used;
    mpp_devscan_drain();
  }
  double per_launch = (double)(launches() - l0) / calls;
  /* Host time, kernels deferred: batches of BATCH GEMMs back to back (fewer
   * than the ring's slots), scanning on and off alternating, the fastest
   * batch of each. */
  void (*hold)(int) = (void (*)(int))dlsym(lib, "fakecuda_hold");
  double best[2] = {1e30, 1e30}; /* ns per GEMM: scanning on, off */
  if (hold) {
    enum { ROUNDS = 2, BATCHES = 2, WARM = 14, BATCH = 16 };
    for (int r = 0; r < ROUNDS; r++)
      for (int on = 1; on >= 0; on--) {
        mpp_fixture_reset(on ? MPP_SCAN_ALL : MPP_SCAN_NONE, 16, 16);
        gemm(a, b, c); /* the site and its memo */
        mpp_devscan_drain();
        for (int k = 0; k < BATCHES; k++) {
          struct timespec t0, t1;
          hold(1);
          for (int i = 0; i < WARM; i++) /* caches warm again after the drain */
            gemm(a, b, c);
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
          for (int i = 0; i < BATCH; i++)
            gemm(a, b, c);
          clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
          hold(0);
          mpp_devscan_drain();
          double ns =
              ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / BATCH;
          if (ns < best[!on]) best[!on] = ns;
        }
      }
  }
  printf("first scanned GEMM (context set-up): %ld driver calls\n", first);
  printf("%ld driver calls per scanned GEMM (A, B, D on the device; most of %d calls, mean %.2f), "
         "limit %d, ratio %.2f; %.2f kernel launches per GEMM\n",
         most, calls, (double)total / calls, LIMIT, (double)most / LIMIT, per_launch);
  if (hold)
    printf("host time per scanned GEMM, mpprof's own share (fake driver, kernels deferred): "
           "%.0f ns; scanning off %.0f ns; the scan's enqueue %+.0f ns\n",
           best[0], best[1], best[0] - best[1]);
  return most <= LIMIT ? 0 : 1;
}
