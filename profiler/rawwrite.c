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
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/raw_format.h"
#include "analysis/schema_keys.h"
#include "common/safefile.h"
#include "jsonw.h"
#include "profiler/gpu/gpu.h"
#include "profiler/process.h"
#include "profiler/rawwrite.h"
#include "profiler/call.h"
#include "profiler/capture.h"
#include "profiler/nvtx.h"
#include "profiler/op.h"
#include "profiler/scope.h"
#include "profiler/shadow.h"
#include "profiler/sites.h"
#include "profiler/train.h"

uint64_t mpp_nvtx_marks(void);
uint64_t mpp_nvtx_start_end_ranges(void);

static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;
static bool final_written;
/* The raw file's name suffix this process image claimed by its first write
 * (0: <host>-<pid>.json, n: <host>-<pid>.<n+1>.json); -1: none yet. An image
 * that exec() replaced, or an earlier process with the same pid, keeps its
 * file: a later image takes the next free name. Under write_mu. */
static int name_claim = -1;
#define MPP_RAW_NAME_TRIES 64

void mpp_raw_reset(void) {
  pthread_mutex_init(&write_mu, NULL);
  final_written = false;
  name_claim = -1;
}

void mpp_raw_exec_failed(void) {
  pthread_mutex_lock(&write_mu);
  final_written = false; /* the image goes on: later checkpoints and the exit write follow */
  pthread_mutex_unlock(&write_mu);
}

/* --- argv from /proc/self/cmdline (the app's main() arguments are not ours) --- */

/* At most this much of the command line is kept (Linux allows about 2 MiB of
 * arguments and environment together); a longer one is cut and the raw file
 * says so (incomplete_reasons "argv_truncated"). */
#define MPP_ARGV_MAX (1u << 20)

/* Writes argv; true when it was cut at MPP_ARGV_MAX. Read into the heap in
 * growing chunks: nothing big on the caller's stack. */
static bool write_argv(mpp_jw *w) {
  mpp_jw_arr(w);
  bool cut = false;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
      if (n == cap) {
        if (cap >= MPP_ARGV_MAX) {
          char probe;
          cut = read(fd, &probe, 1) == 1;
          break;
        }
        char *b = realloc(buf, 2 * cap + 1);
        if (!b) break;
        buf = b;
        cap *= 2;
      }
      ssize_t k = read(fd, buf + n, cap - n);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      n += (size_t)k;
    }
    close(fd);
    if (buf) {
      buf[n] = '\0'; /* a cut last argument ends here */
      for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        mpp_jw_str(w, buf + i);
      free(buf);
    }
  }
  mpp_jw_arr_end(w);
  return cut;
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
  if (s->saturated) {
    mpp_jw_key(w, MP_K_SATURATED);
    mpp_jw_uint(w, s->saturated);
  }
  mpp_jw_key(w, MP_K_MIN);
  mpp_jw_double(w, s->min);
  mpp_jw_key(w, MP_K_MAX);
  mpp_jw_double(w, s->max);
  mpp_jw_key(w, MP_K_ABSMAX);
  mpp_jw_double(w, s->absmax);
  mpp_jw_key(w, MP_K_MIN_ABS_NONZERO);
  mpp_jw_double(w, s->min_abs_nonzero); /* +inf (none) writes null */
  int lo, hi;
  mp_stats_hist_written(s, &lo, &hi);
  mpp_jw_key(w, MP_K_EXP_HIST);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_K_HIST_LO);
  mpp_jw_int(w, lo);
  mpp_jw_key(w, MP_K_HIST_HI);
  mpp_jw_int(w, hi);
  mpp_jw_key(w, MP_K_HIST_COUNTS);
  mpp_jw_arr(w);
  for (int e = lo; e <= hi; e++)
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

const char *mpp_math_mode_name(int mode, char *buf, size_t n) {
  /* cublasMath_t's values (cublas_api.h), without the CUBLAS_ and _MATH */
  static const char *const names[] = {[0] = "DEFAULT",
                                      [1] = "TENSOR_OP",
                                      [2] = "PEDANTIC",
                                      [3] = "TF32_TENSOR_OP",
                                      [4] = "FP32_EMULATED_BF16X9",
                                      [8] = "FP64_EMULATED_FIXEDPOINT"};
  unsigned base = (unsigned)mode & 0xf;
  const char *b = base < sizeof names / sizeof names[0] && names[base] ? names[base] : "UNKNOWN";
  snprintf(buf, n, "%s%s", b, (mode & 16) ? "+DISALLOW_REDUCED_PRECISION_REDUCTION" : "");
  return buf;
}

static void key_i64(mpp_jw *w, const char *k, int64_t v) {
  mpp_jw_key(w, k);
  mpp_jw_int(w, v);
}

static void key_u64(mpp_jw *w, const char *k, uint64_t v) {
  mpp_jw_key(w, k);
  mpp_jw_uint(w, v);
}

static void key_str(mpp_jw *w, const char *k, const char *v) {
  mpp_jw_key(w, k);
  mpp_jw_str(w, v);
}

static void write_conv(mpp_jw *w, const char *key, const mpp_op *op) {
  if (!op->has_conv) return;
  const mpp_conv *c = &op->conv;
  mpp_jw_key(w, key);
  mpp_jw_obj(w);
  key_i64(w, MP_RK_CONV.n, c->n);
  key_i64(w, MP_RK_CONV.c, c->c);
  key_i64(w, MP_RK_CONV.h, c->h);
  key_i64(w, MP_RK_CONV.w, c->w);
  key_i64(w, MP_RK_CONV.k, c->k);
  key_i64(w, MP_RK_CONV.r, c->r);
  key_i64(w, MP_RK_CONV.s, c->s);
  if (c->d) { /* 3-D */
    key_i64(w, MP_RK_CONV.d, c->d);
    key_i64(w, MP_RK_CONV.t, c->t);
  }
  const char *names[] = {MP_RK_CONV.pad, MP_RK_CONV.stride, MP_RK_CONV.dilation};
  const int64_t *vals[] = {c->pad, c->stride, c->dilation};
  const int64_t depth[] = {c->pad_d, c->stride_d, c->dilation_d};
  for (int i = 0; i < 3; i++) {
    mpp_jw_key(w, names[i]);
    mpp_jw_arr(w);
    if (c->d) mpp_jw_int(w, depth[i]);
    mpp_jw_int(w, vals[i][0]);
    mpp_jw_int(w, vals[i][1]);
    mpp_jw_arr_end(w);
  }
  if (c->groups > 1) key_i64(w, MP_RK_CONV.groups, c->groups);
  mpp_jw_obj_end(w);
}

static void write_types(mpp_jw *w, const char *key, const mpp_op *op) {
  mpp_jw_key(w, key);
  mpp_jw_obj(w);
  for (int i = 0; i < op->ntypes; i++)
    key_str(w, op->type_keys[i], op->type_names[i]);
  mpp_jw_obj_end(w);
}

static void write_fp8_value(mpp_jw *w, const char *key, const mpp_fp8_value *v) {
  mpp_jw_key(w, key);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_FP8_VALUE.min);
  mpp_jw_double(w, v->read ? v->min : NAN); /* NaN writes null */
  mpp_jw_key(w, MP_RK_FP8_VALUE.max);
  mpp_jw_double(w, v->read ? v->max : NAN);
  key_u64(w, MP_RK_FP8_VALUE.read, v->read);
  key_u64(w, MP_RK_FP8_VALUE.unread, v->unread);
  mpp_jw_obj_end(w);
}

/* "fp8_scale_values", "amax_D" and "amax_aux": only for pointers some call set. */
static void write_fp8_values(mpp_jw *w, const mpp_site *s) {
  const char *names[5] = {MP_RK_FP8_SCALES.A, MP_RK_FP8_SCALES.B, MP_RK_FP8_SCALES.C,
                          MP_RK_FP8_SCALES.D, MP_RK_FP8_SCALES.aux};
  const mpp_fp8_value *v[5] = {&s->fp8_scale[0], &s->fp8_scale[1], &s->fp8_scale[2],
                               &s->fp8_scale[3], &s->aux_scale};
  bool any = false;
  for (int i = 0; i < 5; i++)
    any |= v[i]->read + v[i]->unread > 0;
  if (any) {
    mpp_jw_key(w, MP_RK_SITE.fp8_scale_values);
    mpp_jw_obj(w);
    for (int i = 0; i < 5; i++)
      if (v[i]->read + v[i]->unread) write_fp8_value(w, names[i], v[i]);
    mpp_jw_obj_end(w);
  }
  if (s->amax_d.read + s->amax_d.unread) write_fp8_value(w, MP_RK_SITE.amax_D, &s->amax_d);
  if (s->amax_aux.read + s->amax_aux.unread) write_fp8_value(w, MP_RK_SITE.amax_aux, &s->amax_aux);
}

static void write_fp8_scales(mpp_jw *w, const char *key, unsigned bits) {
  if (!bits) return;
#define X(f, json, doc) json,
  static const char *const names[] = {MP_RAW_FP8_SCALES(X)};
#undef X
  mpp_jw_key(w, key);
  mpp_jw_obj(w);
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
    mpp_jw_key(w, names[i]);
    mpp_jw_bool(w, (bits >> i) & 1);
  }
  mpp_jw_obj_end(w);
}

static void write_trans(mpp_jw *w, const char *key, char t) {
  if (!t) return;
  char v[2] = {t, 0};
  key_str(w, key, v);
}

static void write_scale(mpp_jw *w, const char *key, double s) {
  mpp_jw_key(w, key);
  if (s > 0)
    mpp_jw_double(w, s);
  else
    mpp_jw_null(w);
}

/* Negative: cleared in a site of merged shapes. */
static void write_i64_or_null(mpp_jw *w, const char *key, int64_t v) {
  if (v >= 0) {
    key_i64(w, key, v);
    return;
  }
  mpp_jw_key(w, key);
  mpp_jw_null(w);
}

static void write_math_mode(mpp_jw *w, const char *key, int mode) {
  char buf[96];
  key_str(w, key, mode >= 0 ? mpp_math_mode_name(mode, buf, sizeof buf) : NULL);
}

/* The site key, one step per row of MP_RAW_SITE_KEY (analysis/raw_format.h). */
#define W_STR(f, key) key_str(w, key, k->f)
#define W_STR_OPT(f, key)                                                                          \
  if (k->f) key_str(w, key, k->f)
#define W_OPKIND(f, key) key_str(w, key, mpp_op_kind_name(k->f))
#define W_LAYER(f, key) key_str(w, key, s->layer)
#define W_PHASE(f, key)                                                                            \
  if (mpp_scope_phase_name(s->f)) key_str(w, key, mpp_scope_phase_name(s->f))
#define W_CLASS(f, key)                                                                            \
  if (s->f) key_str(w, key, s->f)
#define W_I64(f, key) write_i64_or_null(w, key, k->f)
#define W_I64_OPT(f, key)                                                                          \
  if (k->f >= 0) key_i64(w, key, k->f)
#define W_TRANS(f, key) write_trans(w, key, k->f)
#define W_TYPES(f, key) write_types(w, key, k)
#define W_CONV(f, key) write_conv(w, key, k)
#define W_MATH(f, key) write_math_mode(w, key, k->f)
#define W_FP8(f, key) write_fp8_scales(w, key, k->f)
#define W_SCALE(f, key) write_scale(w, key, k->f)
#define W_ROLES(f, key) /* the keys of "tensors" */
#define W_FLAG(f, key)                                                                             \
  if (k->f) {                                                                                      \
    mpp_jw_key(w, key);                                                                            \
    mpp_jw_bool(w, true);                                                                          \
  }

static void write_site_key(mpp_jw *w, const mpp_site *s) {
  const mpp_op *k = &s->key;
#define X(f, json, kind, doc) W_##kind(f, json);
  MP_RAW_SITE_KEY(X)
#undef X
}

/* Metrics of the tc_values arrays (rendering runs one at a time: pass_mu). */
static int tc_nmetrics;

static void write_kernel(mpp_jw *w, const mpp_site_kernel_t *kn) {
  mpp_jw_obj(w);
  key_str(w, MP_RK_KERNEL.name, kn->name);
  key_u64(w, MP_RK_KERNEL.count, kn->count);
  key_u64(w, MP_RK_KERNEL.gpu_ns, kn->gpu_ns);
  if (kn->tc >= 0) { /* --tc-counters measured it */
    mpp_jw_key(w, MP_RK_KERNEL.tc);
    mpp_jw_bool(w, kn->tc == 1);
    key_str(w, MP_RK_KERNEL.tc_source, "counters");
    key_u64(w, MP_RK_KERNEL.tc_profiled, kn->tc_profiled);
    mpp_jw_key(w, MP_RK_KERNEL.tc_values);
    mpp_jw_arr(w);
    for (int m = 0; m < tc_nmetrics && m < MPP_SITE_TC_VALUES; m++)
      mpp_jw_double(w, kn->tc_values[m]);
    mpp_jw_arr_end(w);
  }
  mpp_jw_obj_end(w);
}

static void write_site(mpp_jw *w, uint32_t id, const mpp_site *s) {
  const mpp_op *k = &s->key;
  mpp_jw_obj(w);
  key_i64(w, MP_RK_SITE.id, id);
  write_site_key(w, s);
  key_u64(w, MP_RK_SITE.calls, s->hot->calls);
  key_u64(w, MP_RK_SITE.scanned_calls, s->scanned_calls);
  if (s->autotune_calls) key_u64(w, MP_RK_SITE.autotune_calls, s->autotune_calls);
  mpp_jw_key(w, MP_RK_SITE.not_scanned);
  mpp_jw_obj(w);
  for (int r = 0; r < MPP_NS_COUNT; r++)
    if (s->not_scanned[r]) key_u64(w, mpp_ns_reason_name((mpp_ns_reason)r), s->not_scanned[r]);
  mpp_jw_obj_end(w);
  if (s->shadow) mpp_shadow_write(w, s->shadow);
  mpp_jw_key(w, MP_RK_SITE.tensors);
  mpp_jw_obj(w);
  for (int r = 0; r < k->nroles; r++)
    if (s->stats[r]) {
      mpp_jw_key(w, k->roles[r].name);
      write_stats(w, s->stats[r]);
    }
  mpp_jw_obj_end(w);
  if (s->kernel_launches) {
    key_u64(w, MP_RK_SITE.gpu_ns, s->gpu_ns);
    mpp_jw_key(w, MP_RK_SITE.kernels);
    mpp_jw_arr(w);
    for (int i = 0; i < s->nkernels; i++)
      write_kernel(w, &s->kernels[i]);
    mpp_jw_arr_end(w);
  }
  if (s->hot->ptr_align) key_u64(w, MP_RK_SITE.ptr_align, s->hot->ptr_align);
  write_fp8_values(w, s);
  mpp_jw_obj_end(w);
}

/* "tc_counters": what --tc-counters did; written only when it was requested. */
static void write_tc_counters(mpp_jw *w, const mpp_tc_info *t) {
  mpp_jw_key(w, MP_RK_TOP.tc_counters);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.status);
  mpp_jw_str(w, t->status);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.reason);
  mpp_jw_str(w, t->reason[0] ? t->reason : NULL);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.sample);
  if (t->every == 0)
    mpp_jw_str(w, "first");
  else
    mpp_jw_uint(w, (uint64_t)t->every);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.chip);
  mpp_jw_str(w, t->chip[0] ? t->chip : NULL);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.metrics);
  mpp_jw_arr(w);
  for (int i = 0; i < t->nmetrics; i++)
    mpp_jw_str(w, t->metrics[i]);
  mpp_jw_arr_end(w);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.passes);
  mpp_jw_uint(w, t->passes);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.ops_profiled);
  mpp_jw_uint(w, t->ops_profiled);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.kernels_profiled);
  mpp_jw_uint(w, t->kernels_profiled);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.ops_unmatched);
  mpp_jw_uint(w, t->ops_unmatched);
  mpp_jw_key(w, MP_RK_TC_COUNTERS.ops_skipped);
  mpp_jw_uint(w, t->ops_skipped);
  mpp_jw_obj_end(w);
}

/* --- the timeline lists (MP_RAW_TIMELINE, MP_RAW_RANGE) --- */

static void write_timeline_caps(mpp_jw *w, const mpp_tables *t) {
  mpp_jw_key(w, MP_RK_TOP.timeline);
  mpp_jw_obj(w);
  key_u64(w, MP_RK_TIMELINE.max_events, mpp_cfg.max_events);
  key_u64(w, MP_RK_TIMELINE.events_dropped, t->events_dropped);
  key_u64(w, MP_RK_TIMELINE.max_ranges, mpp_cfg.max_ranges);
  key_u64(w, MP_RK_TIMELINE.ranges_dropped, mpp_nvtx_ranges_dropped());
  key_u64(w, MP_RK_TIMELINE.kernel_events_dropped, t->kevents_dropped);
  mpp_jw_obj_end(w);
}

static void write_range(void *ctx, const mpp_range *r) {
  mpp_jw *w = ctx;
  mpp_jw_obj(w);
  key_str(w, MP_RK_RANGE.name, r->name);
  key_u64(w, MP_RK_RANGE.thread, r->thread);
  key_u64(w, MP_RK_RANGE.depth, r->depth);
  key_u64(w, MP_RK_RANGE.start_ns, r->start_ns);
  key_u64(w, MP_RK_RANGE.end_ns, r->end_ns);
  mpp_jw_obj_end(w);
}

/* framework.models from mpp_process.models' lines (process.h). */
static void write_models(mpp_jw *w, const char *models) {
  mpp_jw_key(w, MP_RK_FRAMEWORK.models);
  mpp_jw_arr(w);
  for (const char *line = models; *line;) {
    const char *tab = strchr(line, '\t'), *end = tab ? strchr(tab, '\n') : NULL;
    if (!end) break;
    char name[MPP_MODEL_TEXT_MAX + 1], cls[MPP_MODEL_TEXT_MAX + 1];
    snprintf(name, sizeof name, "%.*s", (int)(tab - line), line);
    snprintf(cls, sizeof cls, "%.*s", (int)(end - tab - 1), tab + 1);
    mpp_jw_obj(w);
    mpp_jw_key(w, MP_RK_MODEL.name);
    mpp_jw_str(w, name);
    mpp_jw_key(w, MP_RK_MODEL.module_class);
    mpp_jw_str(w, cls);
    mpp_jw_obj_end(w);
    line = end + 1;
  }
  mpp_jw_arr_end(w);
}

/* The document up to its sites, under the site lock. */
static void write_doc_locked(mpp_jw *w, bool final, const mpp_tables *t, const mpp_raw_facts *o) {
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_TOP.schema);
  mpp_jw_str(w, MP_SCHEMA_RAW);
  mpp_jw_key(w, MP_RK_TOP.mpprof_version);
  mpp_jw_str(w, MPPROF_VERSION);
  mpp_jw_key(w, MP_RK_TOP.final);
  mpp_jw_bool(w, final);
  key_i64(w, MP_RK_TOP.pid, mpp_process_info()->pid);
  key_i64(w, MP_RK_TOP.ppid, mpp_process_info()->ppid);
  mpp_jw_key(w, MP_RK_TOP.host);
  mpp_jw_str(w, mpp_process_info()->host);
  mpp_jw_key(w, MP_RK_TOP.rank);
  if (o->rank >= 0)
    mpp_jw_int(w, o->rank);
  else
    mpp_jw_null(w);
  mpp_jw_key(w, MP_RK_TOP.world_size);
  if (o->world_size > 0)
    mpp_jw_int(w, o->world_size);
  else
    mpp_jw_null(w);
  mpp_jw_key(w, MP_RK_TOP.argv);
  bool argv_cut = write_argv(w);
  mpp_jw_key(w, MP_RK_TOP.start_ns);
  mpp_jw_uint(w, mpp_process_info()->start_ns);
  mpp_jw_key(w, MP_RK_TOP.end_ns);
  mpp_jw_uint(w, o->end_ns);
  mpp_jw_key(w, MP_RK_TOP.incomplete);
  mpp_jw_bool(w, t->nreasons > 0 || argv_cut);
  mpp_jw_key(w, MP_RK_TOP.incomplete_reasons);
  mpp_jw_arr(w);
  for (uint32_t i = 0; i < t->nreasons; i++)
    mpp_jw_str(w, t->reasons[i]);
  if (argv_cut) {
    char msg[128];
    snprintf(msg, sizeof msg,
             "argv_truncated: the command line is longer than %u KiB; argv holds its first %u KiB",
             MPP_ARGV_MAX >> 10, MPP_ARGV_MAX >> 10);
    mpp_jw_str(w, msg);
  }
  mpp_jw_arr_end(w);
  mpp_jw_key(w, MP_RK_TOP.scan);
  mpp_jw_str(w, mpp_scan_mode_name(mpp_cfg.scan));
  mpp_jw_key(w, MP_RK_TOP.sample);
  if (mpp_cfg.sample == MPP_SAMPLE_AUTO)
    mpp_jw_str(w, "auto");
  else
    mpp_jw_uint(w, mpp_cfg.sample);
  if (mpp_cfg.shadow_max_rel > 0) {
    mpp_jw_key(w, MP_RK_TOP.shadow_max_rel);
    mpp_jw_double(w, mpp_cfg.shadow_max_rel);
  }
  mpp_jw_key(w, MP_RK_TOP.forked);
  mpp_jw_bool(w, o->forked);
  mpp_jw_key(w, MP_RK_TOP.calls);
  mpp_jw_uint(w, t->total_calls);
  mpp_jw_key(w, MP_RK_TOP.failed_calls);
  mpp_jw_uint(w, t->failed_calls);
  mpp_jw_key(w, MP_RK_TOP.not_attributed);
  mpp_jw_uint(w, t->ops_unattributed);
  mpp_jw_key(w, MP_RK_TOP.nvtx);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_NVTX.marks);
  mpp_jw_uint(w, o->marks);
  mpp_jw_key(w, MP_RK_NVTX.start_end_ranges);
  mpp_jw_uint(w, o->start_end_ranges);
  mpp_jw_obj_end(w);
  mpp_jw_key(w, MP_RK_TOP.device);
  if (o->device_known) {
    char cc[32];
    snprintf(cc, sizeof cc, "%d.%d", o->cc_major, o->cc_minor);
    mpp_jw_obj(w);
    mpp_jw_key(w, MP_RK_DEVICE.name);
    mpp_jw_str(w, o->device_name);
    mpp_jw_key(w, MP_RK_DEVICE.cc);
    mpp_jw_str(w, cc);
    mpp_jw_obj_end(w);
  } else {
    mpp_jw_null(w);
  }
  mpp_jw_key(w, MP_RK_TOP.framework);
  if (o->framework[0]) {
    mpp_jw_obj(w);
    mpp_jw_key(w, MP_RK_FRAMEWORK.name);
    mpp_jw_str(w, o->framework);
    mpp_jw_key(w, MP_RK_FRAMEWORK.version);
    mpp_jw_str(w, o->framework_version);
    mpp_jw_key(w, MP_RK_FRAMEWORK.backward_marks);
    if (o->backward_marks[0])
      mpp_jw_str(w, o->backward_marks);
    else
      mpp_jw_null(w);
    if (o->models[0]) write_models(w, o->models);
    mpp_jw_obj_end(w);
  } else {
    mpp_jw_null(w);
  }
  mpp_jw_key(w, MP_RK_TOP.cupti);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_CUPTI.status);
  mpp_jw_str(w, o->cupti_status);
  mpp_jw_key(w, MP_RK_CUPTI.dropped_records);
  mpp_jw_uint(w, o->cupti_dropped);
  mpp_unattributed_write_locked(w);
  mpp_jw_obj_end(w);
  if (o->tc.status) write_tc_counters(w, &o->tc);
  mpp_jw_key(w, MP_RK_TOP.training);
  mpp_train_write_locked(w);
  mpp_jw_key(w, MP_RK_TOP.capture);
  mpp_capture_write(w);
  write_timeline_caps(w, t);
  mpp_jw_key(w, MP_RK_TOP.sites);
  mpp_jw_arr(w);
  /* Sites whose every call failed (or is still running) carry nothing. */
  for (uint32_t i = 0; i < t->nsites; i++)
    if (t->sites[i].hot->calls || t->sites[i].autotune_calls) write_site(w, i, &t->sites[i]);
  mpp_jw_arr_end(w);
}

/* The timeline lists and the document's end: t's events and kernel events,
 * from copies (events, kevents) when given, which may be written after the
 * site lock is released, as the NVTX ranges (published without it) may;
 * else from the tables, under the lock. */
static void write_doc_timeline(mpp_jw *w, const mpp_tables *t, const mpp_event *events,
                               const mpp_kernel_event *kevents) {
  mpp_jw_key(w, MP_RK_TOP.events);
  mpp_jw_arr(w);
  for (uint64_t i = 0; i < t->nevents; i++) {
    const mpp_event *e = events ? &events[i] : mpp_tables_event(t, i);
    char stream[32];
    snprintf(stream, sizeof stream, "0x%lx", (unsigned long)e->stream);
    mpp_jw_obj(w);
    key_i64(w, MP_RK_EVENT.site, e->site);
    mpp_jw_key(w, MP_RK_EVENT.t_ns);
    mpp_jw_uint(w, e->t_ns);
    mpp_jw_key(w, MP_RK_EVENT.dur_ns);
    mpp_jw_uint(w, e->dur_ns);
    key_i64(w, MP_RK_EVENT.thread, e->thread);
    mpp_jw_key(w, MP_RK_EVENT.stream);
    mpp_jw_str(w, stream);
    key_u64(w, MP_RK_EVENT.call, e->call);
    mpp_jw_obj_end(w);
  }
  mpp_jw_arr_end(w);
  mpp_jw_key(w, MP_RK_TOP.ranges);
  mpp_jw_arr(w);
  mpp_nvtx_ranges_each(write_range, w);
  mpp_jw_arr_end(w);
  mpp_jw_key(w, MP_RK_TOP.kernel_events);
  mpp_jw_arr(w);
  for (uint64_t i = 0; i < t->nkevents; i++) {
    const mpp_kernel_event *k = kevents ? &kevents[i] : &t->kevents[i];
    mpp_jw_obj(w);
    key_u64(w, MP_RK_KERNEL_EVENT.site, k->site);
    key_u64(w, MP_RK_KERNEL_EVENT.call, k->call);
    key_u64(w, MP_RK_KERNEL_EVENT.kernel, k->kernel);
    key_u64(w, MP_RK_KERNEL_EVENT.stream, k->stream);
    key_u64(w, MP_RK_KERNEL_EVENT.start_ns, k->start_ns);
    key_u64(w, MP_RK_KERNEL_EVENT.end_ns, k->end_ns);
    mpp_jw_obj_end(w);
  }
  mpp_jw_arr_end(w);
  mpp_jw_obj_end(w);
}

static _Atomic size_t render_locked_len;

size_t mpp_raw_render_locked_len(void) {
  return atomic_load(&render_locked_len);
}

char *mpp_raw_render_facts(bool final, const mpp_raw_facts *f, size_t *ret_len) {
  /* Numbers in the C locale whatever the application set (decimal point). */
  locale_t c_loc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
  locale_t old = c_loc ? uselocale(c_loc) : (locale_t)0;
  mpp_jw w;
  mpp_jw_init(&w);
  tc_nmetrics = f->tc.nmetrics;
  mpp_tables t;
  mpp_sites_lock();
  mpp_tables_get(&t, mpp_nvtx_ranges_dropped());
  write_doc_locked(&w, final, &t, f);
  /* The timeline (most of a long run's file: 100,000 events, kernel events
   * and ranges by default) is written after the lock is released, from
   * copies taken under it, so that a checkpoint does not hold up the
   * program's calls that need the lock while it formats them (a 31 MB file
   * held a scanned call up to 0.6 s). Without memory for the copies, under
   * the lock as before. */
  mpp_event *ev = t.nevents ? malloc(t.nevents * sizeof *ev) : NULL;
  mpp_kernel_event *kev = t.nkevents ? malloc(t.nkevents * sizeof *kev) : NULL;
  if ((ev || !t.nevents) && (kev || !t.nkevents)) {
    for (uint64_t i = 0; i < t.nevents; i++)
      ev[i] = *mpp_tables_event(&t, i);
    if (t.nkevents) memcpy(kev, t.kevents, t.nkevents * sizeof *kev);
    mpp_tables copy = t;
    copy.kevents = NULL; /* the table's, which may move: never read after the lock */
    atomic_store(&render_locked_len, w.len);
    mpp_sites_unlock();
    write_doc_timeline(&w, &copy, ev, kev); /* NULL only for none */
  } else {
    write_doc_timeline(&w, &t, NULL, NULL);
    atomic_store(&render_locked_len, w.len);
    mpp_sites_unlock();
  }
  free(ev);
  free(kev);
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

char *mpp_raw_render(bool final, size_t *ret_len) {
  bool child = mpp_in_forked_child();
  /* A child forked after CUDA started leaves CUPTI alone: the status it
   * inherited is the parent's (unless CUPTI was turned off). */
  bool ours = mpp_cuda_ours();
  const char *cupti_status = mpp_cupti_status();
  if (!ours && strcmp(cupti_status, "disabled") != 0) cupti_status = MP_CUPTI_FORKED_AFTER_INIT;
  /* Read before the site lock is taken: CUPTI may call back into the kernel
   * sink, which takes it. */
  int world_size = 0;
  int rank = mpp_process_rank(&world_size);
  mpp_raw_facts f = {.rank = rank,
                     .world_size = world_size,
                     .forked = child,
                     .cupti_status = cupti_status,
                     .cupti_dropped = ours ? mpp_cupti_dropped() : 0,
                     .marks = mpp_nvtx_marks(),
                     .start_end_ranges = mpp_nvtx_start_end_ranges(),
                     .end_ns = mpp_now_ns()};
  mpp_tc_info_get(&f.tc);
  if (!ours) f.tc.status = NULL; /* the parent's counters are not the child's */
  mpp_sites_lock(); /* mpp_process_info()->device_* and framework* are published under it */
  f.device_known = mpp_process_info()->device_known;
  memcpy(f.device_name, mpp_process_info()->device_name, sizeof f.device_name);
  f.cc_major = mpp_process_info()->cc_major;
  f.cc_minor = mpp_process_info()->cc_minor;
  memcpy(f.framework, mpp_process_info()->framework, sizeof f.framework);
  memcpy(f.framework_version, mpp_process_info()->framework_version, sizeof f.framework_version);
  memcpy(f.backward_marks, mpp_process_info()->backward_marks, sizeof f.backward_marks);
  memcpy(f.models, mpp_process_info()->models, sizeof f.models);
  mpp_sites_unlock();
  return mpp_raw_render_facts(final, &f, ret_len);
}

/* OUT/raw opened for this write: OUT as the user named it, raw/ below it never
 * through a link (common/safefile.h). */
static int open_raw_dir(void) {
  int out = mpp_sf_open_dir(AT_FDCWD, mpp_cfg.out_dir, MPP_SF_CREATE | MPP_SF_USER_PATH);
  if (out < 0) return out;
  int raw = mpp_sf_open_dir(out, "raw", MPP_SF_CREATE);
  close(out);
  return raw;
}

/* <host>-<pid>.json (suffix 0) or <host>-<pid>.<suffix+1>.json, the host
 * name made safe as one file name component. */
static void raw_file_name_of(char *buf, size_t n, int pid, int suffix) {
  if (suffix > 0)
    snprintf(buf, n, "%s-%d.%d.json", mpp_process_info()->host, pid, suffix + 1);
  else
    snprintf(buf, n, "%s-%d.json", mpp_process_info()->host, pid);
  for (char *p = buf; *p; p++)
    if (*p == '/' || (p == buf && *p == '.')) *p = '_';
}

static void raw_file_name(char *buf, size_t n, int suffix) {
  raw_file_name_of(buf, n, mpp_process_info()->pid, suffix);
}

int mpp_raw_write(bool final) {
  int err = 0;
  /* (its callers' passes turn cancellation off: their waits are cancellation points too) */
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
  doc[len] = '\n'; /* the writer keeps a byte spare for the NUL */
  char name[sizeof mpp_process_info()->host + 48];
  int raw = open_raw_dir();
  if (raw < 0) {
    err = raw;
  } else if (name_claim >= 0) {
    raw_file_name(name, sizeof name, name_claim);
    mpp_sfile f;
    err = mpp_sf_create(&f, raw, name, 0666);
    if (!err) err = mpp_sf_commit(&f, mpp_sf_write_all(f.fd, doc, len + 1));
  } else {
    /* The first write claims the first free name (never replacing another
     * image's file); a file system that cannot refuse to replace gets the
     * plain name. */
    err = -EEXIST;
    for (int i = 0; i < MPP_RAW_NAME_TRIES && err == -EEXIST; i++) {
      raw_file_name(name, sizeof name, i);
      mpp_sfile f;
      err = mpp_sf_create(&f, raw, name, 0666);
      if (!err) err = mpp_sf_commit_new(&f, mpp_sf_write_all(f.fd, doc, len + 1));
      if (!err) name_claim = i;
      if (err == -EINVAL || err == -ENOSYS) {
        raw_file_name(name, sizeof name, 0);
        err = mpp_sf_create(&f, raw, name, 0666);
        if (!err) err = mpp_sf_commit(&f, mpp_sf_write_all(f.fd, doc, len + 1));
        if (!err) name_claim = 0;
      }
    }
  }
  if (raw >= 0) close(raw);
  free(doc);
  if (final && !err) final_written = true;
  pthread_mutex_unlock(&write_mu);
  return err;
}

/* --- the raw file of an image that runs without mpprof --- */

/* Room for the document: the identity and as much of argv as fits. */
#define MPP_NOTE_DOC 512

/* Written by mpp_jw into a buffer on the stack (a vfork child writes it: no
 * allocation, no lock), so its strings are escaped and made UTF-8 as the
 * raw writer's are. */
static int note_unprofiled(int pid, int ppid, char *const argv[], const char *why, char *ret_name,
                           size_t n) {
  char doc[MPP_NOTE_DOC];
  mpp_jw w;
  /* the arguments leave room for "]}" and the newline */
  mpp_jw_init_fixed(&w, doc, sizeof doc - 3);
  mpp_jw_obj(&w);
  mpp_jw_key(&w, MP_RK_TOP.schema);
  mpp_jw_str(&w, MP_SCHEMA_RAW);
  mpp_jw_key(&w, MP_RK_TOP.mpprof_version);
  mpp_jw_str(&w, MPPROF_VERSION);
  mpp_jw_key(&w, MP_RK_TOP.final);
  mpp_jw_bool(&w, true);
  mpp_jw_key(&w, MP_RK_TOP.pid);
  mpp_jw_int(&w, pid);
  mpp_jw_key(&w, MP_RK_TOP.ppid);
  mpp_jw_int(&w, ppid);
  mpp_jw_key(&w, MP_RK_TOP.host);
  mpp_jw_str(&w, mpp_process_info()->host);
  mpp_jw_key(&w, MP_RK_TOP.unprofiled);
  mpp_jw_str(&w, why);
  mpp_jw_key(&w, MP_RK_TOP.sites);
  mpp_jw_arr(&w);
  mpp_jw_arr_end(&w);
  mpp_jw_key(&w, MP_RK_TOP.argv);
  mpp_jw_arr(&w);
  if (w.oom) return -ENAMETOOLONG;
  /* As many arguments as fit whole. */
  for (size_t i = 0; argv && argv[i]; i++) {
    mpp_jw_mark before = mpp_jw_mark_now(&w);
    mpp_jw_str(&w, argv[i]);
    if (w.oom) {
      mpp_jw_undo(&w, before);
      break;
    }
  }
  w.cap = sizeof doc;
  mpp_jw_arr_end(&w);
  mpp_jw_obj_end(&w);
  size_t len = w.len;
  doc[len++] = '\n';
  int out = mpp_sf_open_dir(AT_FDCWD, mpp_cfg.out_dir, MPP_SF_USER_PATH);
  if (out < 0) return out;
  int raw = mpp_sf_open_dir(out, "raw", 0);
  close(out);
  if (raw < 0) return raw;
  int err = -EEXIST;
  for (int i = 0; i < MPP_RAW_NAME_TRIES && err == -EEXIST; i++) {
    raw_file_name_of(ret_name, n, pid, i);
    mpp_sfile f;
    err = mpp_sf_create(&f, raw, ret_name, 0666);
    if (!err) err = mpp_sf_commit_new(&f, mpp_sf_write_all(f.fd, doc, len));
  }
  close(raw);
  if (err) ret_name[0] = '\0';
  return err;
}

/* Written on the thread that spawns or execs (no cancellation point in
 * either): its file I/O with cancellation off (mpp_cancel_off). */
int mpp_raw_note_unprofiled(int pid, int ppid, char *const argv[], const char *why, char *ret_name,
                            size_t n) {
  int cancel = mpp_cancel_off();
  int err = note_unprofiled(pid, ppid, argv, why, ret_name, n);
  mpp_cancel_restore(cancel);
  return err;
}

void mpp_raw_note_drop(const char *name) {
  int cancel = mpp_cancel_off();
  int out = mpp_sf_open_dir(AT_FDCWD, mpp_cfg.out_dir, MPP_SF_USER_PATH);
  int raw = out < 0 ? out : mpp_sf_open_dir(out, "raw", 0);
  if (out >= 0) close(out);
  if (raw >= 0) {
    mpp_sf_remove_regular(raw, name);
    close(raw);
  }
  mpp_cancel_restore(cancel);
}
