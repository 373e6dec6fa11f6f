/* The ranges libmpprof reads its numeric MPPROF_* settings in
 * (profiler/core.c): a value outside is ignored there and the default
 * used, so the launcher (profiler/cli/run.c) refuses it instead. */
#ifndef MPPROF_PROFILER_SETTINGS_H
#define MPPROF_PROFILER_SETTINGS_H

#define MPP_SET_COUNT_MAX 4294967295u    /* MPPROF_SAMPLE, MPPROF_SHADOW: calls */
#define MPP_SET_SHADOW_MB_MAX (1u << 20) /* MPPROF_SHADOW_MAX_MB */
#define MPP_SET_SHADOW_MB_DEFAULT 256    /* MPPROF_SHADOW_MAX_MB unset */
#define MPP_SET_MAX_REL_MAX 1e6          /* MPPROF_SHADOW_MAX_REL: in (0, this) */

#endif
