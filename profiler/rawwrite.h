/* The raw file of one process (rawwrite.c): OUT/raw/<host>-<pid>.json, keys
 * from analysis/raw_format.h. */
#ifndef MPPROF_PROFILER_RAWWRITE_H
#define MPPROF_PROFILER_RAWWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profiler/gpu/gpu.h"
#include "profiler/process.h"

/* Write OUT/raw/<host>-<pid>.json (temp + rename). 0 or -errno. */
int mpp_raw_write(bool final);
/* Serialise the raw document into a malloc'd buffer (tests). */
char *mpp_raw_render(bool final, size_t *ret_len);
/* The writer's own state (name claimed, final written): at init and in a fork child. */
void mpp_raw_reset(void);
void mpp_raw_exec_failed(void); /* the image goes on: later writes follow */
/* The raw file of an image that runs without mpprof (the environment an
 * exec is about to start it with, or a posix_spawn started it with, does
 * not preload libmpprof): process pid, started by ppid, argv (as much as
 * fits whole) and "unprofiled": why; under pid's first free raw file name,
 * in ret_name. No allocation, no lock, about 1.1 KiB of stack: a vfork child
 * calls it. OUT/raw must exist. 0 or -errno (ret_name ""). */
int mpp_raw_note_unprofiled(int pid, int ppid, char *const argv[], const char *why, char *ret_name,
                            size_t n);
/* That file removed again: the exec failed. */
void mpp_raw_note_drop(const char *name);
/* A cublasMath_t as the raw file spells it ("TF32_TENSOR_OP",
 * "+DISALLOW_REDUCED_PRECISION_REDUCTION" added when that flag is set,
 * "UNKNOWN" for a value cublas_api.h does not name), into buf. */
const char *mpp_math_mode_name(int mode, char *buf, size_t n);

/* Everything in the raw document besides the site tables and the process
 * identity (pid, host, start): mpp_raw_render gathers it; tests give their own. */
typedef struct mpp_raw_facts {
  int rank;       /* -1: none */
  int world_size; /* 0: not known */
  bool forked;
  bool device_known;
  char device_name[256];
  int cc_major, cc_minor;
  /* framework[0] == 0: none */
  char framework[MPP_FRAMEWORK_FIELD], framework_version[MPP_FRAMEWORK_FIELD],
      backward_marks[MPP_MARKS_FIELD];
  char models[MPP_MODELS_FIELD]; /* mpp_process.models */
  mpp_tc_info tc;                /* tc.status NULL: --tc-counters not requested */
  const char *cupti_status;
  uint64_t cupti_dropped;
  uint64_t marks, start_end_ranges; /* NVTX */
  uint64_t end_ns;
} mpp_raw_facts;
char *mpp_raw_render_facts(bool final, const mpp_raw_facts *f, size_t *ret_len);
/* Bytes of the last rendered document formatted while the site lock was
 * held (tests: the timeline lists are formatted after it is released). */
size_t mpp_raw_render_locked_len(void);

#endif
