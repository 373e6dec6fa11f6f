/* May mpprof read this memory on the host? A service of the call path (hook
 * modules, scans, shadow execution) over the driver's pointer attributes. */
#include "mpp.h"

#include <sys/uio.h>
#include <unistd.h>

#include "profiler/hostmem.h"

/* Can this process read the byte at p? The kernel copies it for us and says
 * EFAULT where a load would fault; nothing is touched. */
static bool readable_here(const void *p) {
  char b;
  struct iovec local = {&b, 1}, remote = {(void *)(uintptr_t)p, 1};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 1;
}

mpp_mem_kind mpp_mem_kind_of(const void *p) {
  mpp_mem_kind k = mpp_cuda_pointer_kind(p);
  bool driver = mpp_cuda_available();
  /* Without a driver there is no device memory: the pointer is the host's. */
  if (k == MPP_MEM_UNKNOWN && !driver) k = MPP_MEM_HOST;
  /* Except in a fork child, where mpprof leaves the parent's CUDA state alone:
   * a pointer may be one of the parent's device allocations, not mapped
   * readable here (cuBLAS would just fail; a host scan would crash). */
  if (k == MPP_MEM_HOST && !driver && p && mpp_in_forked_child() && !readable_here(p))
    k = MPP_MEM_DEVICE;
  return k;
}

bool mpp_host_readable(const void *p) {
  return p && mpp_mem_kind_of(p) == MPP_MEM_HOST;
}
