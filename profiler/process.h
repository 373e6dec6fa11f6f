/* The process image being profiled (process.c): who it is, for the raw file's
 * identity and name. Reset at init and in a fork child. */
#ifndef MPPROF_PROFILER_PROCESS_H
#define MPPROF_PROFILER_PROCESS_H

#include <stdbool.h>
#include <stdint.h>

/* Room for mpprof_framework's strings (longer ones are cut). */
#define MPP_FRAMEWORK_FIELD 64
#define MPP_MARKS_FIELD 16

typedef struct mpp_process {
  int pid, ppid;
  uint64_t start_ns;
  char host[256];
  /* Published under the site lock (mpp_sites_lock): read them under it. */
  bool device_known;
  char device_name[256];
  int cc_major, cc_minor;
  /* What a framework integration reported (mpprof_framework); framework[0]
   * == 0: none. Kept in a fork child (the same interpreter). */
  char framework[MPP_FRAMEWORK_FIELD], framework_version[MPP_FRAMEWORK_FIELD],
      backward_marks[MPP_MARKS_FIELD];
} mpp_process;

const mpp_process *mpp_process_info(void);
void mpp_process_info_reset(void);  /* start time, pid, host: at init and in a fork child */
void mpp_process_note_device(void); /* once CUDA is up: device name and compute capability */
int mpp_process_pid(void);          /* this image's pid as recorded at start / fork */
void mpp_process_note_framework(const char *name, const char *version, const char *backward_marks);
/* The rank a framework integration learned (mpprof_rank): rank >= 0 and
 * world_size > rank, or world_size 0 (not known); anything else is ignored
 * (logged once). The latest call holds. Lock-free, any thread. Kept in a fork
 * child, which belongs to its parent's rank until it says otherwise (as it
 * inherits a launcher's RANK); not across exec. */
void mpp_process_note_rank(int rank, int world_size);
/* The rank of the raw file: the launcher's (mpp_cfg.rank, from the
 * environment at activation) when it set one, else the learned one, else -1.
 * The world size (0: not known) in *ret_world_size when not NULL: with the
 * launcher's rank, the launcher's (mpp_cfg.world_size), else the learned one
 * when it is above that rank; with the learned rank, the learned one. */
int mpp_process_rank(int *ret_world_size);

#endif
