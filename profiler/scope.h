/* The layer of an op (scope.c): a framework scope, else the NVTX path. */
#ifndef MPPROF_PROFILER_SCOPE_H
#define MPPROF_PROFILER_SCOPE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mpp_layer {
  const char *path;         /* module name or NVTX range path ("" without either) */
  uint64_t hash;            /* of path */
  const char *module_class; /* interned; NULL outside a module scope */
  uint8_t phase;            /* MPPROF_SCOPE_* (profiler/include/mpprof.h); 0: none */
  bool interned;            /* path is an interned layer name: its address names its contents */
} mpp_layer;
void mpp_layer_current(mpp_layer *ret);
const char *mpp_scope_phase_name(int phase); /* raw-file spelling; NULL for none */

#endif
