/* Running the scan kernel of kernels/scan.cu on the CPU through
 * simt_shim.h: the shim's globals and a launcher that runs each block as 256
 * OS threads, blocks one after another. Include once per program, after
 * kernels/scan.cu. The kernel's per-context variable (mpp_scan_ctx_info) is
 * an ordinary global here: one "context". */
#ifndef MPPROF_TESTS_GPU_SIMT_LAUNCH_H
#define MPPROF_TESTS_GPU_SIMT_LAUNCH_H

#include <stdio.h>
#include <stdlib.h>

thread_local uint3 threadIdx;
uint3 blockIdx, gridDim, blockDim;
pthread_barrier_t simt::block_bar;
simt::warp_ex simt::warps[simt::MAX_WARPS];

struct thread_arg {
  const mpp_scan_launch *l;
  unsigned tid;
};

static void *thread_main(void *a) {
  thread_arg *t = (thread_arg *)a;
  threadIdx = uint3{t->tid, 0, 0};
  mpp_scan_ops(*t->l);
  return NULL;
}

/* Runs mpp_scan_ops(*l) with `grid` blocks (l->blk0[l->nt] on a real launch). */
static void launch(const mpp_scan_launch *l, unsigned grid) {
  gridDim = uint3{grid, 1, 1};
  blockDim = uint3{MPP_BLOCK, 1, 1};
  pthread_barrier_init(&simt::block_bar, NULL, MPP_BLOCK);
  for (int w = 0; w < MPP_WARPS; w++)
    pthread_barrier_init(&simt::warps[w].bar, NULL, 32);
  for (unsigned b = 0; b < grid; b++) {
    blockIdx = uint3{b, 0, 0};
    pthread_t th[MPP_BLOCK];
    thread_arg args[MPP_BLOCK];
    for (unsigned t = 0; t < MPP_BLOCK; t++) {
      args[t] = thread_arg{l, t};
      if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0) {
        fprintf(stderr, "simt: cannot start threads\n");
        exit(2);
      }
    }
    for (unsigned t = 0; t < MPP_BLOCK; t++)
      pthread_join(th[t], NULL);
  }
  pthread_barrier_destroy(&simt::block_bar);
  for (int w = 0; w < MPP_WARPS; w++)
    pthread_barrier_destroy(&simt::warps[w].bar);
}

#endif
