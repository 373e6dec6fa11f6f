/* What the simcuda libraries share among themselves (not a CUDA API).
 * Exported by simcuda's libcuda.so.1 with the simcuda_ prefix; the cuBLAS,
 * cuBLASLt and cuDNN stand-ins link it. All "device" memory is host memory;
 * streams are handles and work runs synchronously on the calling thread. */
#ifndef SIMCUDA_INTERNAL_H
#define SIMCUDA_INTERNAL_H

#include <stdint.h>

#include <cuda.h>

typedef struct simcuda_kernel {
  const char *name; /* realistic library kernel name (see kernel_names.def) */
  CUstream stream;  /* cudaStream_t and CUstream are the same handle in simcuda */
  unsigned grid[3];
  unsigned block[3];
} simcuda_kernel;

/* Bracket the host computation of one "kernel". When simcuda's CUPTI has
 * CONCURRENT_KERNEL enabled, finish emits a CUpti_ActivityKernel10 record
 * (plus the driver launch API record and, when an external id is pushed on
 * this thread, the external correlation record). */
uint64_t simcuda_kernel_start(const simcuda_kernel *k);
void simcuda_kernel_finish(const simcuda_kernel *k, uint64_t token);

#endif
