/* Running the kernels of kernels/ on the CPU through simt_shim.h: the shim's
 * globals and a launcher that runs each block as OS threads, blocks one after
 * another. Include once per program, after the kernel sources. The scan
 * kernel's per-context variable (mpp_scan_ctx_info) is an ordinary global
 * here: one "context". */
#ifndef MPPROF_TESTS_GPU_SIMT_LAUNCH_H
#define MPPROF_TESTS_GPU_SIMT_LAUNCH_H

#include <stdio.h>
#include <stdlib.h>

thread_local uint3 threadIdx;
uint3 blockIdx, gridDim, blockDim;
pthread_barrier_t simt::block_bar;
simt::warp_ex simt::warps[simt::MAX_WARPS];

/* Runs body() as every thread of `grid` blocks of `block` threads (block a
 * multiple of 32, at most 32 warps): a block's threads are OS threads, blocks
 * one after another. body is any callable, e.g. a lambda calling a kernel. */
template <class F> static void simt_run(unsigned grid, unsigned block, const F &body) {
  struct arg {
    const F *body;
    unsigned tid;
  };
  gridDim = uint3{grid, 1, 1};
  blockDim = uint3{block, 1, 1};
  pthread_barrier_init(&simt::block_bar, NULL, block);
  for (unsigned w = 0; w < block / 32; w++)
    pthread_barrier_init(&simt::warps[w].bar, NULL, 32);
  pthread_t *th = (pthread_t *)calloc(block, sizeof *th);
  arg *args = (arg *)calloc(block, sizeof *args);
  if (!th || !args) {
    fprintf(stderr, "simt: out of memory\n");
    exit(2);
  }
  for (unsigned b = 0; b < grid; b++) {
    blockIdx = uint3{b, 0, 0};
    for (unsigned t = 0; t < block; t++) {
      args[t] = arg{&body, t};
      if (pthread_create(
              &th[t], NULL,
              [](void *a) -> void * {
                arg *x = (arg *)a;
                threadIdx = uint3{x->tid, 0, 0};
                (*x->body)();
                return NULL;
              },
              &args[t]) != 0) {
        fprintf(stderr, "simt: cannot start threads\n");
        exit(2);
      }
    }
    for (unsigned t = 0; t < block; t++)
      pthread_join(th[t], NULL);
  }
  free(th);
  free(args);
  pthread_barrier_destroy(&simt::block_bar);
  for (unsigned w = 0; w < block / 32; w++)
    pthread_barrier_destroy(&simt::warps[w].bar);
}

#ifdef MPP_BLOCK
/* The scan kernel's entry point launch() runs: mpp_scan_ops, or one of its
 * variants (kernels/scan.cu, MPP_SCAN_VARIANTS). */
static void (*simt_scan_kernel)(mpp_scan_launch) = mpp_scan_ops;

/* Runs simt_scan_kernel(*l) with `grid` blocks (l->blk0[l->nt] on a real launch). */
static void launch(const mpp_scan_launch *l, unsigned grid) {
  void (*fn)(mpp_scan_launch) = simt_scan_kernel;
  simt_run(grid, MPP_BLOCK, [l, fn] { fn(*l); });
}
#endif

#endif
