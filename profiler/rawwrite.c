/* The raw file of one process, OUT/raw/<host>-<pid>.json (docs/raw-format.md,
 * schema mpprof.raw/1). Rendered into memory under the site lock, then written
 * to a temporary file in the same directory and renamed, so a reader sees the
 * previous complete file or the new one, never a partial one. Checkpoints and
 * the final write are serialised; after the final write no checkpoint lands. */
#include "mpp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/schema_keys.h"
#include "jsonw.h"
#include "profiler/gpu/gpu.h"

uint64_t mpp_nvtx_marks(void);
uint64_t mpp_nvtx_start_end_ranges(void);

static struct {
  int pid, ppid;
  uint64_t start_ns;
  char host[256];
  bool device_known;
  char device_name[256];
  int cc_major, cc_minor;
} proc;

static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;
static bool final_written;

void mpp_process_info_reset(void) {
  proc.pid = (int)getpid();
  proc.ppid = (int)getppid();
  proc.start_ns = mpp_now_ns();
  if (gethostname(proc.host, sizeof proc.host) != 0)
    snprintf(proc.host, sizeof proc.host, "unknown");
  proc.host[sizeof proc.host - 1] = '\0';
  pthread_mutex_init(&write_mu, NULL);
  final_written = false;
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

/* --- argv from /proc/self/cmdline (the app's main() arguments are not ours) --- */

static void write_argv(mpp_jw *w) {
  mpp_jw_arr(w);
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0) {
      buf[n] = '\0';
      for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
        mpp_jw_str(w, buf + i);
    }
  }
  mpp_jw_arr_end(w);
}

static int rank_from_env(void) {
  static const char *const vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    char *end;
    if (v && *v) {
      long r = strtol(v, &end, 10);
      if (!*end && r >= 0 && r <= INT_MAX) return (int)r;
    }
  }
  return -1;
}

/* --- stats (the mpprof.tensor/1 stats object) --- */

static void write_stats(mpp_jw *w, const mp_stats *s) {
  static const char *const outcome[] = MP_CAST_OUTCOME_NAMES;
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_K_DTYPE);
  mpp_jw_str(w, mp_dtype_name(s->dtype));
  mpp_jw_key(w, MP_K_COUNT);
  mpp_jw_uint(w, s->count);
  mpp_jw_key(w, MP_K_ZEROS);
  mpp_jw_uint(w, s->zeros);
  mpp_jw_key(w, MP_K_NANS);
  mpp_jw_uint(w, s->nans);
  mpp_jw_key(w, MP_K_POS_INFS);
  mpp_jw_uint(w, s->pos_infs);
  mpp_jw_key(w, MP_K_NEG_INFS);
  mpp_jw_uint(w, s->neg_infs);
  mpp_jw_key(w, MP_K_NEGATIVES);
  mpp_jw_uint(w, s->negatives);
  mpp_jw_key(w, MP_K_MIN);
  mpp_jw_double(w, s->min);
  mpp_jw_key(w, MP_K_MAX);
  mpp_jw_double(w, s->max);
  mpp_jw_key(w, MP_K_ABSMAX);
  mpp_jw_double(w, s->absmax);
  mpp_jw_key(w, MP_K_MIN_ABS_NONZERO);
  mpp_jw_double(w, s->min_abs_nonzero); /* +inf (none) writes null */
  mpp_jw_key(w, MP_K_EXP_HIST);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_K_HIST_LO);
  mpp_jw_int(w, s->hist_lo);
  mpp_jw_key(w, MP_K_HIST_HI);
  mpp_jw_int(w, s->hist_hi);
  mpp_jw_key(w, MP_K_HIST_COUNTS);
  mpp_jw_arr(w);
  for (int e = s->hist_lo; e <= s->hist_hi; e++)
    mpp_jw_uint(w, mp_stats_hist_bin(s, e));
  mpp_jw_arr_end(w);
  mpp_jw_obj_end(w);
  mpp_jw_key(w, MP_K_CASTS);
  mpp_jw_obj(w);
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    mpp_jw_key(w, mp_target_name((mp_target)t));
    mpp_jw_obj(w);
    for (int o = 0; o < MP_CAST_OUTCOMES; o++) {
      mpp_jw_key(w, outcome[o]);
      mpp_jw_uint(w, s->casts[t][o]);
    }
    mpp_jw_obj_end(w);
  }
  mpp_jw_obj_end(w);
  mpp_jw_obj_end(w);
}

/* --- sites --- */

static const char *math_mode_name(int mode, char *buf, size_t n) {
  static const char *const names[] = {"DEFAULT", "TENSOR_OP", "PEDANTIC", "TF32_TENSOR_OP"};
  int base = mode & 0xf;
  const char *b = base < 4 ? names[base] : "UNKNOWN";
  snprintf(buf, n, "%s%s", b, (mode & 16) ? "+DISALLOW_REDUCED_PRECISION_REDUCTION" : "");
  return buf;
}

static void key_i64(mpp_jw *w, const char *k, int64_t v) {
  mpp_jw_key(w, k);
  mpp_jw_int(w, v);
}

static void write_conv(mpp_jw *w, const mpp_conv *c) {
  mpp_jw_key(w, "conv");
  mpp_jw_obj(w);
  key_i64(w, "n", c->n);
  key_i64(w, "c", c->c);
  key_i64(w, "h", c->h);
  key_i64(w, "w", c->w);
  key_i64(w, "k", c->k);
  key_i64(w, "r", c->r);
  key_i64(w, "s", c->s);
  const char *names[] = {"pad", "stride", "dilation"};
  const int64_t *vals[] = {c->pad, c->stride, c->dilation};
  for (int i = 0; i < 3; i++) {
    mpp_jw_key(w, names[i]);
    mpp_jw_arr(w);
    mpp_jw_int(w, vals[i][0]);
    mpp_jw_int(w, vals[i][1]);
    mpp_jw_arr_end(w);
  }
  mpp_jw_obj_end(w);
}

/* Metrics of the tc_values arrays (rendering runs one at a time: pass_mu). */
static int tc_nmetrics;

static void write_site(mpp_jw *w, uint32_t id, const mpp_site *s) {
  const mpp_op *k = &s->key;
  char buf[96];
  mpp_jw_obj(w);
  key_i64(w, "id", id);
  mpp_jw_key(w, "api");
  mpp_jw_str(w, k->api);
  mpp_jw_key(w, "op");
  mpp_jw_str(w, mpp_op_kind_name(k->kind));
  mpp_jw_key(w, "layer");
  mpp_jw_str(w, s->layer);
  key_i64(w, "m", k->m);
  key_i64(w, "n", k->n);
  key_i64(w, "k", k->k);
  key_i64(w, "batch", k->batch);
  if (k->transa) {
    char t[2] = {k->transa, 0};
    mpp_jw_key(w, "transa");
    mpp_jw_str(w, t);
    t[0] = k->transb;
    mpp_jw_key(w, "transb");
    mpp_jw_str(w, t);
  }
  const char *ldn[] = {"lda", "ldb", "ldc", "ldd"};
  const int64_t ldv[] = {k->lda, k->ldb, k->ldc, k->ldd};
  for (int i = 0; i < 4; i++)
    if (ldv[i] >= 0) key_i64(w, ldn[i], ldv[i]);
  if (k->has_conv) write_conv(w, &k->conv);
  mpp_jw_key(w, "types");
  mpp_jw_obj(w);
  for (int i = 0; i < k->ntypes; i++) {
    mpp_jw_key(w, k->type_keys[i]);
    mpp_jw_str(w, k->type_names[i]);
  }
  mpp_jw_obj_end(w);
  mpp_jw_key(w, "compute_type");
  mpp_jw_str(w, k->compute_type);
  mpp_jw_key(w, "scale_type");
  mpp_jw_str(w, k->scale_type);
  mpp_jw_key(w, "math_mode");
  mpp_jw_str(w, k->math_mode >= 0 ? math_mode_name(k->math_mode, buf, sizeof buf) : NULL);
  if (k->epilogue) {
    mpp_jw_key(w, "epilogue");
    mpp_jw_str(w, k->epilogue);
  }
  if (k->conv_math) {
    mpp_jw_key(w, "conv_math_type");
    mpp_jw_str(w, k->conv_math);
  }
  if (k->fp8_scales) {
    const char *fk[] = {"A", "B", "C", "D", "amax_D"};
    mpp_jw_key(w, "fp8_scales");
    mpp_jw_obj(w);
    for (int i = 0; i < 5; i++) {
      mpp_jw_key(w, fk[i]);
      mpp_jw_bool(w, (k->fp8_scales >> i) & 1);
    }
    mpp_jw_obj_end(w);
  }
  mpp_jw_key(w, "calls");
  mpp_jw_uint(w, s->calls);
  mpp_jw_key(w, "scanned_calls");
  mpp_jw_uint(w, s->scanned_calls);
  if (s->autotune_calls) {
    mpp_jw_key(w, "autotune_calls");
    mpp_jw_uint(w, s->autotune_calls);
  }
  mpp_jw_key(w, "not_scanned");
  mpp_jw_obj(w);
  for (int r = 0; r < MPP_NS_COUNT; r++)
    if (s->not_scanned[r]) {
      mpp_jw_key(w, mpp_ns_reason_name((mpp_ns_reason)r));
      mpp_jw_uint(w, s->not_scanned[r]);
    }
  mpp_jw_obj_end(w);
  mpp_jw_key(w, "tensors");
  mpp_jw_obj(w);
  for (int r = 0; r < k->nroles; r++)
    if (s->stats[r]) {
      mpp_jw_key(w, k->roles[r].name);
      write_stats(w, s->stats[r]);
    }
  mpp_jw_obj_end(w);
  if (s->kernel_launches) {
    mpp_jw_key(w, "gpu_ns");
    mpp_jw_uint(w, s->gpu_ns);
    mpp_jw_key(w, "kernels");
    mpp_jw_arr(w);
    for (int i = 0; i < s->nkernels; i++) {
      mpp_jw_obj(w);
      mpp_jw_key(w, "name");
      mpp_jw_str(w, s->kernels[i].name);
      mpp_jw_key(w, "count");
      mpp_jw_uint(w, s->kernels[i].count);
      mpp_jw_key(w, "gpu_ns");
      mpp_jw_uint(w, s->kernels[i].gpu_ns);
      if (s->kernels[i].tc >= 0) { /* --tc-counters measured it */
        mpp_jw_key(w, "tc");
        mpp_jw_bool(w, s->kernels[i].tc == 1);
        mpp_jw_key(w, "tc_source");
        mpp_jw_str(w, "counters");
        mpp_jw_key(w, "tc_profiled");
        mpp_jw_uint(w, s->kernels[i].tc_profiled);
        mpp_jw_key(w, "tc_values");
        mpp_jw_arr(w);
        for (int m = 0; m < tc_nmetrics && m < MPP_SITE_TC_VALUES; m++)
          mpp_jw_double(w, s->kernels[i].tc_values[m]);
        mpp_jw_arr_end(w);
      }
      mpp_jw_obj_end(w);
    }
    mpp_jw_arr_end(w);
  }
  if (s->ptr_align) {
    mpp_jw_key(w, "ptr_align");
    mpp_jw_uint(w, s->ptr_align);
  }
  mpp_jw_obj_end(w);
}

/* "tc_counters": what --tc-counters did; written only when it was requested. */
static void write_tc_counters(mpp_jw *w, const mpp_tc_info *t) {
  mpp_jw_key(w, "tc_counters");
  mpp_jw_obj(w);
  mpp_jw_key(w, "status");
  mpp_jw_str(w, t->status);
  mpp_jw_key(w, "reason");
  mpp_jw_str(w, t->reason[0] ? t->reason : NULL);
  mpp_jw_key(w, "sample");
  if (t->every == 0)
    mpp_jw_str(w, "first");
  else
    mpp_jw_uint(w, (uint64_t)t->every);
  mpp_jw_key(w, "chip");
  mpp_jw_str(w, t->chip[0] ? t->chip : NULL);
  mpp_jw_key(w, "metrics");
  mpp_jw_arr(w);
  for (int i = 0; i < t->nmetrics; i++)
    mpp_jw_str(w, t->metrics[i]);
  mpp_jw_arr_end(w);
  mpp_jw_key(w, "passes");
  mpp_jw_uint(w, t->passes);
  mpp_jw_key(w, "ops_profiled");
  mpp_jw_uint(w, t->ops_profiled);
  mpp_jw_key(w, "kernels_profiled");
  mpp_jw_uint(w, t->kernels_profiled);
  mpp_jw_key(w, "ops_unmatched");
  mpp_jw_uint(w, t->ops_unmatched);
  mpp_jw_key(w, "ops_skipped");
  mpp_jw_uint(w, t->ops_skipped);
  mpp_jw_obj_end(w);
}

/* What comes from outside the site tables, read before their lock is taken
 * (CUPTI may call back into the kernel sink, which takes it). */
typedef struct outside {
  mpp_tc_info tc; /* --tc-counters */
  const char *cupti_status;
  uint64_t cupti_dropped;
  uint64_t marks, start_end_ranges;
  uint64_t end_ns;
} outside;

static void write_doc(mpp_jw *w, bool final, const mpp_tables *t, const outside *o) {
  mpp_jw_obj(w);
  mpp_jw_key(w, "schema");
  mpp_jw_str(w, MP_SCHEMA_RAW);
  mpp_jw_key(w, "final");
  mpp_jw_bool(w, final);
  key_i64(w, "pid", proc.pid);
  key_i64(w, "ppid", proc.ppid);
  mpp_jw_key(w, "host");
  mpp_jw_str(w, proc.host);
  int rank = rank_from_env();
  mpp_jw_key(w, "rank");
  if (rank >= 0)
    mpp_jw_int(w, rank);
  else
    mpp_jw_null(w);
  mpp_jw_key(w, "argv");
  write_argv(w);
  mpp_jw_key(w, "start_ns");
  mpp_jw_uint(w, proc.start_ns);
  mpp_jw_key(w, "end_ns");
  mpp_jw_uint(w, o->end_ns);
  mpp_jw_key(w, "incomplete");
  mpp_jw_bool(w, t->nreasons > 0);
  mpp_jw_key(w, "incomplete_reasons");
  mpp_jw_arr(w);
  for (uint32_t i = 0; i < t->nreasons; i++)
    mpp_jw_str(w, t->reasons[i]);
  mpp_jw_arr_end(w);
  mpp_jw_key(w, "scan");
  mpp_jw_str(w, mpp_scan_mode_name(mpp_cfg.scan));
  mpp_jw_key(w, "sample");
  mpp_jw_uint(w, mpp_cfg.sample);
  mpp_jw_key(w, "forked");
  mpp_jw_bool(w, mpp_in_forked_child());
  mpp_jw_key(w, "calls");
  mpp_jw_uint(w, t->total_calls);
  mpp_jw_key(w, "failed_calls");
  mpp_jw_uint(w, t->failed_calls);
  mpp_jw_key(w, "nvtx");
  mpp_jw_obj(w);
  mpp_jw_key(w, "marks");
  mpp_jw_uint(w, o->marks);
  mpp_jw_key(w, "start_end_ranges");
  mpp_jw_uint(w, o->start_end_ranges);
  mpp_jw_obj_end(w);
  mpp_jw_key(w, "device");
  if (proc.device_known) {
    char cc[32];
    snprintf(cc, sizeof cc, "%d.%d", proc.cc_major, proc.cc_minor);
    mpp_jw_obj(w);
    mpp_jw_key(w, "name");
    mpp_jw_str(w, proc.device_name);
    mpp_jw_key(w, "cc");
    mpp_jw_str(w, cc);
    mpp_jw_obj_end(w);
  } else {
    mpp_jw_null(w);
  }
  mpp_jw_key(w, "cupti");
  mpp_jw_obj(w);
  mpp_jw_key(w, "status");
  mpp_jw_str(w, o->cupti_status);
  mpp_jw_key(w, "dropped_records");
  mpp_jw_uint(w, o->cupti_dropped);
  mpp_jw_obj_end(w);
  if (o->tc.status) write_tc_counters(w, &o->tc);
  mpp_jw_key(w, "sites");
  mpp_jw_arr(w);
  /* Sites whose every call failed (or is still running) carry nothing. */
  for (uint32_t i = 0; i < t->nsites; i++)
    if (t->sites[i].calls || t->sites[i].autotune_calls) write_site(w, i, &t->sites[i]);
  mpp_jw_arr_end(w);
  mpp_jw_key(w, "events");
  mpp_jw_arr(w);
  for (uint64_t i = 0; i < t->nevents; i++) {
    const mpp_event *e = &t->events[i];
    char stream[32];
    snprintf(stream, sizeof stream, "0x%lx", (unsigned long)e->stream);
    mpp_jw_obj(w);
    key_i64(w, "site", e->site);
    mpp_jw_key(w, "t_ns");
    mpp_jw_uint(w, e->t_ns);
    mpp_jw_key(w, "dur_ns");
    mpp_jw_uint(w, e->dur_ns);
    key_i64(w, "thread", e->thread);
    mpp_jw_key(w, "stream");
    mpp_jw_str(w, stream);
    mpp_jw_obj_end(w);
  }
  mpp_jw_arr_end(w);
  mpp_jw_obj_end(w);
}

char *mpp_raw_render(bool final, size_t *ret_len) {
  /* Numbers in the C locale whatever the application set (decimal point). */
  locale_t c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  locale_t old = c_loc ? uselocale(c_loc) : (locale_t)0;
  mpp_jw w;
  mpp_jw_init(&w);
  bool child = mpp_in_forked_child();
  outside o = {.cupti_status = child ? "disabled" : mpp_cupti_status(),
               .cupti_dropped = child ? 0 : mpp_cupti_dropped(),
               .marks = mpp_nvtx_marks(),
               .start_end_ranges = mpp_nvtx_start_end_ranges(),
               .end_ns = mpp_now_ns()};
  mpp_tc_info_get(&o.tc);
  if (child) o.tc.status = NULL; /* the parent's counters are not the child's */
  tc_nmetrics = o.tc.nmetrics;
  mpp_tables t;
  mpp_sites_lock();
  mpp_tables_get(&t);
  write_doc(&w, final, &t, &o);
  mpp_sites_unlock();
  if (c_loc) {
    uselocale(old);
    freelocale(c_loc);
  }
  if (w.oom) {
    mpp_jw_free(&w);
    return NULL;
  }
  *ret_len = w.len;
  return w.buf;
}

static int mkdir_p(const char *path) {
  char tmp[4608];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -errno;
      *p = '/';
    }
  if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -errno;
  return 0;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

int mpp_raw_write(bool final) {
  int err = 0;
  pthread_mutex_lock(&write_mu);
  if (final_written) {
    pthread_mutex_unlock(&write_mu);
    return 0;
  }
  size_t len = 0;
  char *doc = mpp_raw_render(final, &len);
  if (!doc) {
    pthread_mutex_unlock(&write_mu);
    return -ENOMEM;
  }
  char dir[4200], path[4600], tmp[4700];
  snprintf(dir, sizeof dir, "%s/raw", mpp_cfg.out_dir);
  snprintf(path, sizeof path, "%s/%s-%d.json", dir, proc.host, proc.pid);
  snprintf(tmp, sizeof tmp, "%s/.%s-%d.json.tmp", dir, proc.host, proc.pid);
  err = mkdir_p(dir);
  if (!err) {
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0) {
      err = -errno;
    } else {
      err = write_all(fd, doc, len);
      if (!err) err = write_all(fd, "\n", 1);
      if (close(fd) != 0 && !err) err = -errno;
      if (!err && rename(tmp, path) != 0) err = -errno;
      if (err) unlink(tmp);
    }
  }
  free(doc);
  if (final && !err) final_written = true;
  pthread_mutex_unlock(&write_mu);
  return err;
}
