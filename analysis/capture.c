/* Parsing of the capture range settings (analysis/capture.h). */
#include "analysis/capture.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

const char *mp_capture_mode_name(mp_capture_mode mode) {
  static const char *const names[] = {"all", "cudaProfilerApi", "nvtx", "steps"};
  return (unsigned)mode < sizeof names / sizeof names[0] ? names[mode] : "all";
}

static bool parse_u64(const char *s, const char *end, uint64_t *ret) {
  if (s == end || end - s > 20) return false;
  uint64_t v = 0;
  for (const char *c = s; c < end; c++) {
    if (*c < '0' || *c > '9') return false;
    uint64_t d = (uint64_t)(*c - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *ret = v;
  return true;
}

int mp_parse_steps(const char *s, uint64_t *ret_first, uint64_t *ret_last) {
  if (!s) return -1;
  const char *colon = strchr(s, ':');
  const char *end = s + strlen(s);
  uint64_t a, b;
  if (!parse_u64(s, colon ? colon : end, &a)) return -1;
  if (colon ? !parse_u64(colon + 1, end, &b) : (b = a, false)) return -1;
  if (b < a) return -1;
  *ret_first = a;
  *ret_last = b;
  return 0;
}

static bool set(const char *s) {
  return s && *s;
}

int mp_capture_parse(const char *range, const char *nvtx, const char *steps, mp_capture *ret,
                     char *err, unsigned errlen) {
  memset(ret, 0, sizeof *ret);
  if (set(range)) {
    if (!strcmp(range, "cudaProfilerApi")) {
      ret->mode = MP_CAPTURE_PROFILER_API;
    } else if (!strcmp(range, "nvtx")) {
      ret->mode = MP_CAPTURE_NVTX;
    } else if (!strcmp(range, "none")) {
      ret->mode = MP_CAPTURE_ALL;
    } else {
      snprintf(err, errlen, "--capture-range must be cudaProfilerApi, nvtx or none, not '%s'",
               range);
      return -1;
    }
  }
  if (ret->mode == MP_CAPTURE_NVTX && !set(nvtx)) {
    snprintf(err, errlen, "--capture-range=nvtx needs --nvtx-capture NAME");
    return -1;
  }
  if (set(nvtx) && ret->mode != MP_CAPTURE_NVTX) {
    snprintf(err, errlen, "--nvtx-capture needs --capture-range=nvtx");
    return -1;
  }
  ret->nvtx = ret->mode == MP_CAPTURE_NVTX ? nvtx : NULL;
  if (set(steps)) {
    if (ret->mode != MP_CAPTURE_ALL) {
      snprintf(err, errlen, "--steps and --capture-range=%s cannot be combined",
               mp_capture_mode_name(ret->mode));
      return -1;
    }
    if (mp_parse_steps(steps, &ret->first, &ret->last)) {
      snprintf(err, errlen,
               "--steps must be A:B with step numbers A <= B (or one step A), not '%s'", steps);
      return -1;
    }
    ret->mode = MP_CAPTURE_STEPS;
  }
  return 0;
}
