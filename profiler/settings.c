/* The MPPROF_* variables and what their values must be (settings.h). Built
 * into libmpprof and into the launcher: libc and analysis/ only. */
#include "profiler/settings.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/advice.h"

#define LIB "libmpprof"
#define PHASE_WORDS "comma-separated words of NVTX range names that mark the phase"
static const mpp_setting settings[] = {
    {"MPPROF_OUT", MPP_SK_FREE, 0, 0, 0, LIB,
     "the output directory (default mpprof-out; mpprof run: -o when -o is not given)"},
    {"MPPROF_DISABLE", MPP_SK_FREE, 0, 0, 0, LIB, "any value but 0: every hook passes through"},
    {"MPPROF_SCAN", MPP_SK_SCAN, 0, 0, 0, LIB, NULL},
    {"MPPROF_SAMPLE", MPP_SK_SAMPLE, 1, MPP_SET_COUNT_MAX, 0, LIB, NULL},
    {"MPPROF_MAX_SITES", MPP_SK_UINT, 1, 1u << 20, 4096, LIB, NULL},
    {"MPPROF_MAX_EVENTS", MPP_SK_UINT, 0, 1ull << 32, 100000, LIB, NULL},
    {"MPPROF_MAX_RANGES", MPP_SK_UINT, 0, 1ull << 32, 100000, LIB, NULL},
    {"MPPROF_CHECKPOINT_S", MPP_SK_SECONDS, 0, 0, 10, LIB, NULL},
    {"MPPROF_LOSS_SCALE", MPP_SK_LOSS_SCALE, 0, 0, 0, LIB, NULL},
    {"MPPROF_TC_COUNTERS", MPP_SK_TC, 0, 0, 0, LIB, NULL},
    {"MPPROF_SHADOW", MPP_SK_UINT, 0, MPP_SET_COUNT_MAX, 0, LIB, NULL},
    {"MPPROF_SHADOW_MAX_MB", MPP_SK_UINT, 1, MPP_SET_SHADOW_MB_MAX, MPP_SET_SHADOW_MB_DEFAULT, LIB,
     NULL},
    {"MPPROF_SHADOW_MAX_REL", MPP_SK_MAX_REL, 0, 0, 0, LIB, NULL},
    /* checked together by mp_capture_parse (analysis/capture.h) */
    {"MPPROF_CAPTURE_RANGE", MPP_SK_FREE, 0, 0, 0, LIB,
     "cudaProfilerApi, nvtx or none (checked with the next two)"},
    {"MPPROF_NVTX_CAPTURE", MPP_SK_FREE, 0, 0, 0, LIB,
     "an NVTX range name, with MPPROF_CAPTURE_RANGE=nvtx"},
    {"MPPROF_STEPS", MPP_SK_FREE, 0, 0, 0, LIB, "A:B or A (not with MPPROF_CAPTURE_RANGE)"},
    {"MPPROF_LOG", MPP_SK_UINT, 0, 9, 0, LIB, NULL},
    {"MPPROF_CUPTI", MPP_SK_FREE, 0, 0, 0, LIB, "the path of libcupti.so, or off"},
    {MPP_EXEC_RANK_VAR, MPP_SK_FREE, 0, 0, 0, LIB,
     "set by libmpprof itself for the image an exec starts: PID:RANK:WORLD_SIZE"},
    {MPP_EXEC_ADDED_VAR, MPP_SK_FREE, 0, 0, 0, LIB,
     "set by libmpprof itself for the image an exec or a posix_spawn starts: PID:NAME,... or "
     "PPID:NAME,..."},
    {"MPPROF_LIB", MPP_SK_FREE, 0, 0, 0, "the launcher", "the path of libmpprof.so"},
    {"MPPROF_PYTHON", MPP_SK_FREE, 0, 0, 0, "the launcher and the Python integration",
     "0 or off: no PyTorch module attribution"},
    {"MPPROF_TORCH_MARKS", MPP_SK_FREE, 0, 0, 0, "the Python integration",
     "0: backward marks as Python tensor hooks"},
    {"MPPROF_CACHE_DIR", MPP_SK_FREE, 0, 0, 0, "the Python integration",
     "where C++ backward marks are built and found"},
    {"MPPROF_PHASE_FORWARD", MPP_SK_FREE, 0, 0, 0, "the report", PHASE_WORDS},
    {"MPPROF_PHASE_BACKWARD", MPP_SK_FREE, 0, 0, 0, "the report", PHASE_WORDS},
    {"MPPROF_PHASE_OPTIMIZER", MPP_SK_FREE, 0, 0, 0, "the report", PHASE_WORDS},
    {"MPPROF_DEMO_DIR", MPP_SK_FREE, 0, 0, 0, "scripts/demo.sh",
     "the demo's directory (default: a new temporary one)"},
};

const char *const mpp_scan_names[MPP_SCAN_MODES] = {"all", "outputs", "none"};

const mpp_setting *mpp_settings(size_t *ret_n) {
  *ret_n = sizeof settings / sizeof settings[0];
  return settings;
}

bool mpp_setting_carried(const mpp_setting *s) {
  return s && !strcmp(s->reader, LIB) && strcmp(s->name, MPP_EXEC_RANK_VAR) &&
         strcmp(s->name, MPP_EXEC_ADDED_VAR);
}

const mpp_setting *mpp_setting_find(const char *name) {
  for (size_t i = 0; name && i < sizeof settings / sizeof settings[0]; i++)
    if (!strcmp(settings[i].name, name)) return &settings[i];
  return NULL;
}

static bool uint_in(const char *v, uint64_t lo, uint64_t hi) {
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  return v[0] >= '0' && v[0] <= '9' && !*end && !errno && x >= lo && x <= hi;
}

static bool number(const char *v, double *ret) {
  char *end;
  *ret = strtod(v, &end);
  return *v && !*end;
}

bool mpp_setting_ok(const mpp_setting *s, const char *v) {
  double x;
  if (!v || !*v) return true;
  switch (s->kind) {
  case MPP_SK_FREE:
    return true;
  case MPP_SK_UINT:
    return uint_in(v, s->lo, s->hi);
  case MPP_SK_SAMPLE:
    return !strcmp(v, "auto") || uint_in(v, s->lo, s->hi);
  case MPP_SK_SCAN:
    for (int i = 0; i < MPP_SCAN_MODES; i++)
      if (!strcmp(v, mpp_scan_names[i])) return true;
    return false;
  case MPP_SK_SECONDS:
    return number(v, &x) && x >= 0 && x <= MPP_SET_SECONDS_MAX;
  case MPP_SK_LOSS_SCALE:
    return mp_parse_loss_scale(v, &x) == 0;
  case MPP_SK_MAX_REL:
    return number(v, &x) && x > 0 && x < MPP_SET_MAX_REL_MAX;
  case MPP_SK_TC:
    return mpp_tc_counters_parse(v) != MPP_TC_BAD;
  }
  return false;
}

int mpp_tc_counters_parse(const char *v) {
  if (!v || !*v || !strcmp(v, "0") || !strcmp(v, "off")) return -1;
  if (!strcmp(v, "first") || !strcmp(v, "1st")) return 0;
  if (!uint_in(v, 1, UINT64_MAX)) return MPP_TC_BAD;
  unsigned long long n = strtoull(v, NULL, 10);
  return n > INT32_MAX ? INT32_MAX : (int)n;
}

void mpp_setting_want(const mpp_setting *s, char *buf, size_t n) {
  switch (s->kind) {
  case MPP_SK_FREE:
    snprintf(buf, n, "%s", s->text ? s->text : "any text");
    break;
  case MPP_SK_UINT:
  case MPP_SK_SAMPLE:
    snprintf(buf, n, "%san integer in [%" PRIu64 ", %" PRIu64 "]",
             s->kind == MPP_SK_SAMPLE ? "auto or " : "", s->lo, s->hi);
    break;
  case MPP_SK_SCAN:
    snprintf(buf, n, "%s, %s or %s", mpp_scan_names[0], mpp_scan_names[1], mpp_scan_names[2]);
    break;
  case MPP_SK_SECONDS:
    snprintf(buf, n, "seconds in [0, %g] (0: only at exit)", MPP_SET_SECONDS_MAX);
    break;
  case MPP_SK_LOSS_SCALE:
    snprintf(buf, n, "a number or 2^k in [2^%d, %g] (float32's range)", MP_LOSS_SCALE_MIN_LOG2,
             FLT_MAX);
    break;
  case MPP_SK_MAX_REL:
    snprintf(buf, n, "a number in (0, %g)", MPP_SET_MAX_REL_MAX);
    break;
  case MPP_SK_TC:
    snprintf(buf, n, "first, N >= 1, or off");
    break;
  }
}

/* Edits (insert, delete, substitute) from a to b, up to 3 ("more"). */
static int edits(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > lb + 2 || lb > la + 2 || lb >= 64) return 3;
  int row[64];
  for (size_t j = 0; j <= lb; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int diag = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

const char *mpp_setting_nearest(const char *name) {
  const char *best = NULL;
  int best_d = 3;
  for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
    int d = edits(name, settings[i].name);
    if (d < best_d) best_d = d, best = settings[i].name;
  }
  return best;
}
