/* The MPPROF_* environment variables: one row each, with what a value must
 * be (profiler/settings.c). libmpprof (profiler/core.c) reads its settings
 * through these checks and ignores a value outside them (logged), so the
 * launcher (profiler/cli/run.c) refuses such a value, from its options or
 * from its environment, before the program starts. */
#ifndef MPPROF_PROFILER_SETTINGS_H
#define MPPROF_PROFILER_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MPP_SET_COUNT_MAX 4294967295u    /* MPPROF_SAMPLE, MPPROF_SHADOW: calls */
#define MPP_SET_SHADOW_MB_MAX (1u << 20) /* MPPROF_SHADOW_MAX_MB */
#define MPP_SET_SHADOW_MB_DEFAULT 256    /* MPPROF_SHADOW_MAX_MB unset */
#define MPP_SET_MAX_REL_MAX 1e6          /* MPPROF_SHADOW_MAX_REL: in (0, this) */
#define MPP_SET_SECONDS_MAX 1e6          /* MPPROF_CHECKPOINT_S */

/* The variable libmpprof adds to the environment an exec passes on, carrying
 * a rank declared with mpprof_rank to the new image: "PID:RANK:WORLD_SIZE",
 * for the process of that pid only (process.c). */
#define MPP_EXEC_RANK_VAR "MPPROF_EXEC_RANK"

/* The variable libmpprof adds beside the settings it adds to the
 * environment an exec or a posix_spawn passes on: the libmpprof settings
 * this image started with (MPPROF_OUT as an absolute path) that the
 * environment lacks, so that an image whose launcher kept LD_PRELOAD and
 * dropped the rest still writes into the run with the run's settings.
 * "PID:NAME,NAME..." (an exec): the image of that pid reads its settings,
 * then removes those variables and this one before main; "PPID:NAME,..."
 * (MPP_EXEC_ADDED_CHILD, then the pid of a process that called posix_spawn:
 * the child's pid is not known before it starts): an image whose parent is
 * that pid does (exec.c, process.c). */
#define MPP_EXEC_ADDED_VAR "MPPROF_EXEC_ADDED"
#define MPP_EXEC_ADDED_CHILD "P"

typedef enum mpp_setting_kind {
  MPP_SK_FREE,       /* any text (a path, a name, a flag); checked where it is used */
  MPP_SK_UINT,       /* an integer in [lo, hi] */
  MPP_SK_SAMPLE,     /* auto, or an integer in [lo, hi] */
  MPP_SK_SCAN,       /* all, outputs or none */
  MPP_SK_SECONDS,    /* seconds in [0, MPP_SET_SECONDS_MAX] */
  MPP_SK_LOSS_SCALE, /* a number or 2^k in float32's range (mp_parse_loss_scale) */
  MPP_SK_MAX_REL,    /* a number in (0, MPP_SET_MAX_REL_MAX) */
  MPP_SK_TC,         /* off, 0, first, or an integer >= 1 */
} mpp_setting_kind;

/* MPPROF_SCAN's values, indexed by mpp_scan_mode (profiler/mpp.h). */
#define MPP_SCAN_MODES 3
extern const char *const mpp_scan_names[MPP_SCAN_MODES];

typedef struct mpp_setting {
  const char *name;
  mpp_setting_kind kind;
  uint64_t lo, hi, dflt; /* MPP_SK_UINT, MPP_SK_SAMPLE */
  const char *reader;    /* who reads it: "libmpprof", "the launcher", ... */
  const char *text;      /* MPP_SK_FREE: what the value is (mpp_setting_want) */
} mpp_setting;

/* Whether libmpprof reads s at start-up, so that an exec carries it to an
 * image whose environment lost it (MPP_EXEC_ADDED_VAR): not the variables
 * libmpprof sets itself for the next image. */
bool mpp_setting_carried(const mpp_setting *s);

/* Every MPPROF_* variable mpprof reads, in the README's order; n gets how many. */
const mpp_setting *mpp_settings(size_t *ret_n);

/* The row of name, or NULL (not a variable mpprof reads). */
const mpp_setting *mpp_setting_find(const char *name);

/* Whether v is a value s takes ("" counts as unset: always). */
bool mpp_setting_ok(const mpp_setting *s, const char *v);

/* What a value of s must be, as a phrase ("an integer in [1, 1048576]"). */
void mpp_setting_want(const mpp_setting *s, char *buf, size_t n);

/* MPPROF_TC_COUNTERS's value: -1 not requested (unset, "", 0, off), 0 the
 * first call of each site (first, 1st), N >= 1 every Nth call (capped at
 * INT32_MAX); MPP_TC_BAD for any other text. The one reading of its words. */
#define MPP_TC_BAD (-2)
int mpp_tc_counters_parse(const char *v);

/* The known variable nearest to name (at most two edits away), or NULL. */
const char *mpp_setting_nearest(const char *name);

#endif
