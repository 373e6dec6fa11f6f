/* The process image being profiled: pid, parent, host, start time, and the
 * device once CUDA is up. The call path notes the device; the raw writer reads
 * it all. */
#include "profiler/process.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpp.h"
#include "profiler/gpu/gpu.h"
#include "profiler/settings.h"
#include "profiler/sites.h"

static mpp_process proc;

/* mpprof_rank's rank and world size in one word, so that a checkpoint never
 * reads a rank of one call and a world size of another: world_size << 32 |
 * (rank + 1); 0: none. Not reset by mpp_process_info_reset (a fork child keeps
 * it); a new image starts with none. */
static _Atomic uint64_t learned_rank;
/* The process whose execs carry learned_rank to the next image: the one that
 * declared it, or received it across exec (the same pid); 0: none. A fork
 * child inherits its parent's pid here, so its execs carry nothing. */
static _Atomic int rank_carry_pid;
static atomic_bool rank_logged_invalid, rank_logged_disagree;

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

static atomic_bool models_logged_full;

static bool model_field_ok(const char *s) {
  return s && !strpbrk(s, "\t\n") && strnlen(s, MPP_MODEL_TEXT_MAX + 1) <= MPP_MODEL_TEXT_MAX;
}

void mpp_process_note_model(const char *name, const char *module_class) {
  if (!model_field_ok(name) || !model_field_ok(module_class) || !*module_class) return;
  size_t nl = strlen(name);
  mpp_sites_lock();
  /* Remove the name's line, if any, then append it. */
  char *m = proc.models;
  for (char *line = m; *line;) {
    char *tab = strchr(line, '\t'), *end = strchr(line, '\n');
    if (!tab || !end) { /* cannot happen: every line is whole */
      *line = '\0';
      break;
    }
    if ((size_t)(tab - line) == nl && !memcmp(line, name, nl)) {
      memmove(line, end + 1, strlen(end + 1) + 1);
      continue;
    }
    line = end + 1;
  }
  size_t used = strlen(m), add = nl + strlen(module_class) + 2;
  bool fits = used + add < sizeof proc.models;
  if (fits) snprintf(m + used, sizeof proc.models - used, "%s\t%s\n", name, module_class);
  mpp_sites_unlock();
  if (!fits && !atomic_exchange(&models_logged_full, true))
    mpp_log(1,
            "mpprof_model_root(\"%s\"): no room for more models; its layers are listed as the "
            "main model's",
            name);
}

void mpp_process_note_rank(int rank, int world_size) {
  if (rank < 0 || world_size < 0 || (world_size && world_size <= rank)) {
    if (!atomic_exchange(&rank_logged_invalid, true))
      mpp_log(1, "mpprof_rank(%d, %d): not a rank of a world of that size, ignored", rank,
              world_size);
    return;
  }
  /* The launcher's variable wins (mpp_process_rank): say so when they differ.
   * Read here, on the caller's (application) thread, as activation reads it. */
  int env = mpp_rank_from_env();
  if (env >= 0 && env != rank && !atomic_exchange(&rank_logged_disagree, true))
    mpp_log(1, "the framework says rank %d, the environment rank %d: the environment's is kept",
            rank, env);
  atomic_store(&learned_rank, (uint64_t)(uint32_t)world_size << 32 | ((uint64_t)rank + 1));
  atomic_store(&rank_carry_pid, (int)getpid());
}

/* The next ':'-ended (or, last, NUL-ended) non-negative int of *s, -1 when none. */
static long carried_field(const char **s, char end) {
  char *e;
  if (**s < '0' || **s > '9') return -1;
  long v = strtol(*s, &e, 10);
  if (*e != end || v > INT_MAX) return -1;
  *s = e + (end ? 1 : 0);
  return v;
}

void mpp_process_take_exec_rank(void) {
  const char *v = getenv(MPP_EXEC_RANK_VAR);
  if (!v) return;
  long pid = carried_field(&v, ':'), rank = pid < 0 ? -1 : carried_field(&v, ':'),
       world = rank < 0 ? -1 : carried_field(&v, '\0');
  if (world < 0 || pid != (long)getpid() || (world && world <= rank)) return;
  atomic_store(&learned_rank, (uint64_t)(uint32_t)world << 32 | ((uint64_t)rank + 1));
  atomic_store(&rank_carry_pid, (int)pid);
}

void mpp_process_forget_exec_rank(void) {
  if (getenv(MPP_EXEC_RANK_VAR)) unsetenv(MPP_EXEC_RANK_VAR);
}

/* The libmpprof settings this image started with, "NAME=value\0" each,
 * MPPROF_OUT first and absolute; filled at init (before the constructor
 * removes anything from environ), read-only afterwards. A setting that does
 * not fit is not carried (logged). */
#define MPP_EXEC_CARRY_BYTES 8192
static char carry[MPP_EXEC_CARRY_BYTES];
static size_t carry_len;

static void carry_add(const char *name, const char *value) {
  size_t ln = strlen(name), lv = strlen(value);
  if (carry_len + ln + lv + 2 > sizeof carry) {
    mpp_log(1, "%s is too long to carry to an exec'd image", name);
    return;
  }
  memcpy(carry + carry_len, name, ln);
  carry[carry_len + ln] = '=';
  memcpy(carry + carry_len + ln + 1, value, lv + 1);
  carry_len += ln + lv + 2;
}

void mpp_process_keep_settings(void) {
  carry_len = 0;
  if (mpp_cfg.disabled) return;
  static const char out[] = "MPPROF_OUT";
  carry_add(out, mpp_cfg.out_dir);
  size_t n;
  const mpp_setting *rows = mpp_settings(&n);
  for (size_t i = 0; i < n; i++) {
    const char *v = getenv(rows[i].name);
    if (v && mpp_setting_carried(&rows[i]) && strcmp(rows[i].name, out)) carry_add(rows[i].name, v);
  }
}

const char *mpp_process_carried_settings(size_t *ret_len) {
  *ret_len = carry_len;
  return carry;
}

void mpp_process_forget_exec_added(void) {
  const char *v = getenv(MPP_EXEC_ADDED_VAR);
  if (!v) return;
  /* an exec's: this pid's; a posix_spawn's: a child's of that pid (not one
   * reparented since, nor a grandchild: those keep the variables they were
   * given, and read the same settings from them) */
  bool spawned = v[0] == MPP_EXEC_ADDED_CHILD[0];
  char *end;
  long pid = strtol(v + spawned, &end, 10), mine = spawned ? (long)getppid() : (long)getpid();
  /* (the value stays where exec put it while the variables are removed) */
  for (const char *at = end + 1; *end == ':' && pid == mine && *at;) {
    size_t len = strcspn(at, ",");
    char name[64];
    if (len < sizeof name) {
      memcpy(name, at, len);
      name[len] = '\0';
      if (mpp_setting_carried(mpp_setting_find(name))) unsetenv(name);
    }
    at += len + (at[len] ? 1 : 0);
  }
  unsetenv(MPP_EXEC_ADDED_VAR);
}

size_t mpp_process_exec_rank_entry(char *buf, size_t n) {
  int pid = atomic_load(&rank_carry_pid);
  if (!pid || pid != (int)getpid()) return 0; /* before anything else: a vfork child stops here */
  uint64_t v = atomic_load(&learned_rank);
  if (!v) return 0;
  int len = snprintf(buf, n, "%s=%d:%d:%d", MPP_EXEC_RANK_VAR, pid, (int)((v & 0xffffffffu) - 1),
                     (int)(v >> 32));
  return len > 0 && (size_t)len < n ? (size_t)len : 0;
}

int mpp_process_rank(int *ret_world_size) {
  uint64_t v = atomic_load(&learned_rank);
  int learned_world = (int)(v >> 32);
  if (mpp_cfg.rank >= 0) {
    /* The launcher's world size with its rank; else the declared one when
     * that world holds the launcher's rank. */
    int w = mpp_cfg.world_size > mpp_cfg.rank ? mpp_cfg.world_size
            : learned_world > mpp_cfg.rank    ? learned_world
                                              : 0;
    if (ret_world_size) *ret_world_size = w;
    return mpp_cfg.rank;
  }
  if (ret_world_size) *ret_world_size = learned_world;
  return v ? (int)((v & 0xffffffffu) - 1) : -1;
}
