/* The process image being profiled (process.c): who it is, for the raw file's
 * identity and name. Reset at init and in a fork child. */
#ifndef MPPROF_PROFILER_PROCESS_H
#define MPPROF_PROFILER_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for mpprof_framework's strings (longer ones are cut). */
#define MPP_FRAMEWORK_FIELD 64
#define MPP_MARKS_FIELD 16
/* mpprof_model_root's models, "name\tclass\n" each (a model that does not
 * fit is left out, logged once): a few models, as a GAN's two. */
#define MPP_MODELS_FIELD 512
/* A model's name or class longer than this (bytes, without the NUL) is
 * ignored by mpp_process_note_model; the raw writer's line buffers hold one. */
#define MPP_MODEL_TEXT_MAX 127

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
  /* The models a framework integration named (mpprof_model_root), as
   * MPP_MODELS_FIELD says; kept in a fork child, as framework is. */
  char models[MPP_MODELS_FIELD];
} mpp_process;

const mpp_process *mpp_process_info(void);
void mpp_process_info_reset(void);  /* start time, pid, host: at init and in a fork child */
void mpp_process_note_device(void); /* once CUDA is up: device name and compute capability */
int mpp_process_pid(void);          /* this image's pid as recorded at start / fork */
void mpp_process_note_framework(const char *name, const char *version, const char *backward_marks);
/* A model whose layers are named name + "." + their path (name "" for the
 * main model, whose layers carry no prefix; a one-layer model's only layer is
 * named name itself), an instance of module_class. Names with a tab or a
 * newline, or too long for the field, are ignored; a name given again takes
 * the new class. */
void mpp_process_note_model(const char *name, const char *module_class);
/* The rank a framework integration learned (mpprof_rank): rank >= 0 and
 * world_size > rank, or world_size 0 (not known); anything else is ignored
 * (logged once). The latest call holds. Lock-free, any thread. Kept in a fork
 * child, which belongs to its parent's rank until it says otherwise (as it
 * inherits a launcher's RANK). Carried across exec to the images of the
 * process that declared it (mpp_process_exec_rank_entry), not to those of
 * its fork children. */
void mpp_process_note_rank(int rank, int world_size);
/* At init: the rank an exec carried to this image (MPP_EXEC_RANK_VAR naming
 * this pid), taken as declared; a variable naming another pid is ignored. */
void mpp_process_take_exec_rank(void);
/* Before main (the constructor): the variable removed from the environment,
 * which is then the one the exec passed. */
void mpp_process_forget_exec_rank(void);
/* The environment entry "MPP_EXEC_RANK_VAR=PID:RANK:WORLD_SIZE" that carries
 * the declared rank to an image this process execs, in buf: its length, 0
 * when there is none to carry (no rank declared or carried to this process,
 * or the caller is a fork or vfork child of the one that declared it, or it
 * does not fit). No allocation, no lock: a vfork child may call it. */
size_t mpp_process_exec_rank_entry(char *buf, size_t n);

/* The libmpprof settings this image started with (MPP_EXEC_ADDED_VAR):
 * kept at init, after mpp_config_read and before the constructor removes
 * anything; as "NAME=value\0" entries, MPPROF_OUT first (absolute), *ret_len
 * bytes in all (0: none, or disabled). Read-only after init: an exec
 * (a vfork child's too) or a posix_spawn adds those its environment lacks. */
void mpp_process_keep_settings(void);
const char *mpp_process_carried_settings(size_t *ret_len);
/* The variables an exec or a posix_spawn added for this image
 * (MPP_EXEC_ADDED_VAR names them, for this pid or for a child of its parent)
 * removed from the environment, and that one: in the constructor, before
 * main, after the settings were read. */
void mpp_process_forget_exec_added(void);
/* The rank of the raw file: the launcher's (mpp_cfg.rank, from the
 * environment at activation) when it set one, else the learned one, else -1.
 * The world size (0: not known) in *ret_world_size when not NULL: with the
 * launcher's rank, the launcher's (mpp_cfg.world_size), else the learned one
 * when it is above that rank; with the learned rank, the learned one. */
int mpp_process_rank(int *ret_world_size);

#endif
