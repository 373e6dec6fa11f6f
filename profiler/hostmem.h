/* May mpprof read this memory on the host (hostmem.c)? */
#ifndef MPPROF_PROFILER_HOSTMEM_H
#define MPPROF_PROFILER_HOSTMEM_H

#include <stdbool.h>

#include "profiler/gpu/gpu.h"

/* Host memory, or no driver? In a fork child without a driver the byte at p
 * is probed first. */
bool mpp_host_readable(const void *p);
/* Where p lives as mpprof must treat it: host memory when there is no driver,
 * except a fork child's unreadable pointer (the parent's device memory). */
mpp_mem_kind mpp_mem_kind_of(const void *p);

#endif
