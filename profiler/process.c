/* The process image being profiled: pid, parent, host, start time, and the
 * device once CUDA is up. The call path notes the device; the raw writer reads
 * it all. */
#include "profiler/process.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mpp.h"
#include "profiler/gpu/gpu.h"
#include "profiler/sites.h"

static mpp_process proc;

const mpp_process *mpp_process_info(void) {
  return &proc;
}

void mpp_process_info_reset(void) {
  proc.pid = (int)getpid();
  proc.ppid = (int)getppid();
  proc.start_ns = mpp_now_ns();
  if (gethostname(proc.host, sizeof proc.host) != 0)
    snprintf(proc.host, sizeof proc.host, "unknown");
  proc.host[sizeof proc.host - 1] = '\0';
}

int mpp_process_pid(void) {
  return proc.pid;
}

void mpp_process_note_device(void) {
  if (!mpp_cuda_available()) return;
  /* Asked outside any lock (driver calls), published under the site lock,
   * which the writer holds while it reads proc.device_*: a checkpoint never
   * sees a half-written name. */
  char name[sizeof proc.device_name];
  int major = 0, minor = 0;
  if (mpp_cuda_device_info(name, sizeof name, &major, &minor) != 0) return;
  mpp_sites_lock();
  if (!proc.device_known) {
    memcpy(proc.device_name, name, sizeof name);
    proc.cc_major = major;
    proc.cc_minor = minor;
    proc.device_known = true;
  }
  mpp_sites_unlock();
}

/* Strings cut to their fields, published under the site lock as the device is. */
void mpp_process_note_framework(const char *name, const char *version, const char *backward_marks) {
  if (!name || !*name) return;
  mpp_sites_lock();
  snprintf(proc.framework, sizeof proc.framework, "%s", name);
  snprintf(proc.framework_version, sizeof proc.framework_version, "%s", version ? version : "");
  snprintf(proc.backward_marks, sizeof proc.backward_marks, "%s",
           backward_marks ? backward_marks : "");
  mpp_sites_unlock();
}
