/* fake_sgemm.h's GEMM, compiled into each fake library that runs it. */
#include "fake_sgemm.h"

#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

typedef struct job {
  fake_sgemm g;
  bool heap;
} job;

static void run(void *arg) {
  const job *j = arg;
  const fake_sgemm *g = &j->g;
  for (int b = 0; b < g->batch; b++)
    for (int c = 0; c < g->n; c++)
      for (int i = 0; i < g->m; i++) {
        float acc = 0;
        for (int q = 0; q < g->k; q++) {
          float x = g->ta == CUBLAS_OP_N ? g->A[b * g->sa + i + (long long)q * g->lda]
                                         : g->A[b * g->sa + q + (long long)i * g->lda];
          float y = g->tb == CUBLAS_OP_N ? g->B[b * g->sb + q + (long long)c * g->ldb]
                                         : g->B[b * g->sb + c + (long long)q * g->ldb];
          acc = fmaf(x, y, acc);
        }
        float r = g->alpha * acc;
        g->D[b * g->sd + i + (long long)c * g->ldd] =
            g->beta == 0 ? r : fmaf(g->beta, g->C[b * g->sc + i + (long long)c * g->ldc], r);
      }
  if (j->heap) free(arg);
}

void fake_sgemm_on_stream(cudaStream_t s, const fake_sgemm *g) {
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  int (*defer)(void *, void (*)(void *), void *) =
      (int (*)(void *, void (*)(void *), void *))(cuda ? dlsym(cuda, "fakecuda_defer") : NULL);
  job *heap = malloc(sizeof *heap);
  if (defer && heap) {
    *heap = (job){*g, true};
    if (defer(s, run, heap)) return;
  }
  free(heap);
  job now = {*g, false};
  run(&now);
}
