/* OUT/trace.json: the run in Chrome trace-event format (opens in Perfetto and
 * chrome://tracing). Timestamps are microseconds from the earliest thing
 * recorded.
 *
 *  - One track per process and thread: the NVTX push/pop ranges the runtime
 *    recorded (cat "range", their real start and end) and every recorded call
 *    (cat "op") inside them. A process whose file has no ranges (none pushed,
 *    or an older file) gets layer slices rebuilt from the NVTX path of
 *    consecutive calls instead (cat "layer").
 *  - One track per process and GPU stream: the kernels CUPTI saw (cat
 *    "kernel"), each with a flow arrow from the call that launched it (ph
 *    "s" at the call, "f" with "bp":"e" at the kernel). A C++ kernel's slice
 *    is named demangled (CUPTI gives the mangled symbol; Perfetto shows
 *    names as they are), as report.html shows it.
 *
 *  - A process that hit a timeline cap: an instant where its kept slices
 *    end, naming what was dropped (the caps keep a run's first calls).
 *
 * Slices of a track are written parent first: by start, then longest first,
 * then ranges before ops, so a viewer that nests equal timestamps by order
 * nests them right. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kernel_class.h"
#include "report/report_internal.h"

/* GPU stream tracks get tids of their own, apart from any Linux tid (at
 * most 2^22, the kernel's PID_MAX_LIMIT) and inside the 31 bits Perfetto
 * keeps of a JSON tid (a larger one is dropped or merges tracks): stream
 * id s gets STREAM_TID_BASE + s, the rare id from 2^30 on the last tid. */
#define STREAM_TID_BASE (UINT64_C(1) << 30)
#define STREAM_TID_MAX ((UINT64_C(1) << 31) - 1)

typedef enum slice_kind { SL_RANGE = 0, SL_LAYER, SL_OP, SL_KERNEL } slice_kind;

typedef struct slice {
  uint32_t proc;
  uint64_t tid;
  int64_t start, dur;
  slice_kind kind;
  const char *name;
  size_t len;   /* of name (rebuilt layers point into a path) */
  size_t item;  /* event, range or kernel event index */
  int64_t flow; /* kernels: index of the launching event, -1 none */
} slice;

/* The slices to write, 8 bytes each: kind and index of the range, event,
 * kernel event or rebuilt layer slice, the rest read from the model when
 * sorted and written (at 100k sites a record of each slice, and the sort's
 * copy of them, were the report's peak memory). */
typedef struct slices {
  const mpprof_model *m;
  uint64_t *v; /* kind << 62 | index */
  size_t n;
  slice *layers; /* rebuilt layer slices (processes without ranges) */
  size_t n_layers, cap_layers;
  const char **kname; /* kernel event i: its name as shown */
  int64_t *flow;      /* kernel event i: the launching event, -1 none */
} slices;

#define REF_KIND_SHIFT 62
#define REF(kind, i) ((uint64_t)(kind) << REF_KIND_SHIFT | (uint64_t)(i))

/* What the slices are sorted by (name, len and flow left out). */
static void sort_view(const slices *s, uint64_t ref, slice *ret) {
  size_t i = (size_t)(ref & ((UINT64_C(1) << REF_KIND_SHIFT) - 1));
  const mpprof_model *m = s->m;
  switch ((slice_kind)(ref >> REF_KIND_SHIFT)) {
  case SL_RANGE: {
    const mpprof_range *r = &m->ranges[i];
    *ret = (slice){.proc = r->proc,
                   .tid = r->thread,
                   .start = r->start_ns,
                   .dur = r->end_ns - r->start_ns,
                   .kind = SL_RANGE,
                   .item = i};
    break;
  }
  case SL_LAYER:
    *ret = s->layers[i];
    break;
  case SL_OP: {
    const mpprof_event *e = &m->events[i];
    *ret = (slice){.proc = e->proc,
                   .tid = e->thread,
                   .start = e->t_ns,
                   .dur = e->dur_ns,
                   .kind = SL_OP,
                   .item = i};
    break;
  }
  default: {
    const mpprof_kevent *k = &m->kevents[i];
    *ret = (slice){.proc = k->proc,
                   .tid = k->stream < STREAM_TID_MAX - STREAM_TID_BASE ? STREAM_TID_BASE + k->stream
                                                                       : STREAM_TID_MAX,
                   .start = k->start_ns,
                   .dur = k->end_ns - k->start_ns,
                   .kind = SL_KERNEL,
                   .item = i};
  }
  }
}

/* The whole slice. */
static slice view(const slices *s, uint64_t ref) {
  slice x;
  sort_view(s, ref, &x);
  if (x.kind == SL_LAYER) return x;
  x.flow = x.kind == SL_KERNEL ? s->flow[x.item] : -1;
  x.name = x.kind == SL_RANGE ? s->m->ranges[x.item].name
           : x.kind == SL_OP  ? s->m->sites[s->m->events[x.item].site].api
                              : s->kname[x.item];
  x.len = strlen(x.name);
  return x;
}

static int slice_cmp(const void *a, const void *b, void *ctx) {
  slice x0, y0, *x = &x0, *y = &y0;
  sort_view(ctx, *(const uint64_t *)a, x);
  sort_view(ctx, *(const uint64_t *)b, y);
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1; /* the parent first */
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return x->item < y->item ? -1 : x->item > y->item;
}

/* --- rebuilt layer slices (processes without ranges) --- */

typedef struct open_slice {
  const char *name; /* component, not NUL-terminated: len below */
  size_t len;
  int64_t start, end;
} open_slice;

static int ev_cmp(const void *a, const void *b, void *ctx) {
  const mpprof_event *ev = ctx;
  const mpprof_event *x = &ev[*(const size_t *)a], *y = &ev[*(const size_t *)b];
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  if (x->thread != y->thread) return x->thread < y->thread ? -1 : 1;
  if (x->t_ns != y->t_ns) return x->t_ns < y->t_ns ? -1 : 1;
  return 0;
}

static int push_layer(slices *s, slice x) {
  if (mpprof_reserve((void **)&s->layers, &s->cap_layers, s->n_layers + 1, sizeof *s->layers))
    return -1;
  s->layers[s->n_layers++] = x;
  return 0;
}

/* Consecutive calls of a thread sharing NVTX path components are wrapped in
 * one slice per component (the only layer slices an older file allows). */
static int rebuild_layers(const mpprof_model *m, const bool *has_ranges, slices *out) {
  size_t n = m->n_events;
  size_t *ord = malloc((n ? n : 1) * sizeof *ord);
  open_slice *stack = NULL;
  size_t depth = 0, cap = 0;
  int rc = 0;
  if (!ord) return -1;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (!has_ranges[m->events[i].proc]) ord[k++] = i;
  n = k;
  qsort_r(ord, n, sizeof *ord, ev_cmp, m->events);
  for (size_t i = 0; i <= n && rc == 0; i++) {
    const mpprof_event *e = i < n ? &m->events[ord[i]] : NULL;
    const mpprof_event *prev = i ? &m->events[ord[i - 1]] : NULL;
    bool new_track = !e || !prev || e->proc != prev->proc || e->thread != prev->thread;
    const char *path = e ? m->sites[e->site].layer : "";
    size_t keep = 0;
    const char *c = path;
    if (!new_track)
      while (keep < depth && *c) {
        const char *slash = strchr(c, '/');
        size_t len = slash ? (size_t)(slash - c) : strlen(c);
        if (len != stack[keep].len || strncmp(c, stack[keep].name, len)) break;
        keep++;
        c = slash ? slash + 1 : c + len;
      }
    while (depth > keep && rc == 0) {
      open_slice *s = &stack[--depth];
      rc = push_layer(out, (slice){.proc = prev->proc,
                                   .tid = prev->thread,
                                   .start = s->start,
                                   .dur = s->end - s->start,
                                   .kind = SL_LAYER,
                                   .name = s->name,
                                   .len = s->len,
                                   .flow = -1});
    }
    if (!e || rc) break;
    while (*c) {
      const char *slash = strchr(c, '/');
      size_t len = slash ? (size_t)(slash - c) : strlen(c);
      if (mpprof_grow((void **)&stack, &cap, depth + 1, sizeof *stack)) {
        rc = -1;
        break;
      }
      stack[depth++] = (open_slice){c, len, e->t_ns, e->t_ns};
      c = slash ? slash + 1 : c + len;
    }
    for (size_t d = 0; d < depth; d++)
      if (e->t_ns + e->dur_ns > stack[d].end) stack[d].end = e->t_ns + e->dur_ns;
  }
  free(ord);
  free(stack);
  return rc;
}

/* --- kernels to their calls --- */

typedef struct call_key {
  uint32_t proc, site, call;
  size_t event;
} call_key;

static int key_cmp(const void *a, const void *b) {
  const call_key *x = a, *y = b;
  if (x->proc != y->proc) return x->proc < y->proc ? -1 : 1;
  if (x->site != y->site) return x->site < y->site ? -1 : 1;
  if (x->call != y->call) return x->call < y->call ? -1 : 1;
  return 0;
}

/* --- writing --- */

static bool first = true;

static void sep(FILE *f) {
  fputs_unlocked(first ? "\n" : ",\n", f);
  first = false;
}

/* The pieces of a slice, without printf (some 200k slices at 100k sites). */
static void put(FILE *f, const char *s) {
  fputs_unlocked(s, f);
}

static void put_u64(FILE *f, uint64_t v) {
  char b[24];
  fwrite_unlocked(b, 1, mpprof_u64_text(v, b), f);
}

/* "%" PRIx64 */
static void put_hex(FILE *f, uint64_t v) {
  char b[16], *p = b + 16;
  do
    *--p = "0123456789abcdef"[v & 15];
  while (v >>= 4);
  fwrite_unlocked(p, 1, (size_t)(b + 16 - p), f);
}

/* A time in ns as µs with three decimals ("%.3f" of ns / 1e3). */
static void put_us(FILE *f, int64_t ns) {
  char b[32];
  fwrite_unlocked(b, 1, mpprof_milli_text(ns, b), f);
}

static void write_slice(FILE *f, const mpprof_model *m, const slice *s, int64_t t0) {
  static const char *const cats[] = {"range", "layer", "op", "kernel"};
  sep(f);
  put(f, "{\"name\":");
  mpprof_fput_json_string_n(f, s->name, s->len);
  put(f, ",\"cat\":\"");
  put(f, cats[s->kind]);
  put(f, "\",\"ph\":\"X\",\"pid\":");
  put_u64(f, s->proc + 1);
  put(f, ",\"tid\":");
  put_u64(f, s->tid);
  put(f, ",\"ts\":");
  put_us(f, s->start - t0);
  put(f, ",\"dur\":");
  put_us(f, s->dur);
  if (s->kind == SL_RANGE) {
    put(f, ",\"args\":{\"depth\":");
    put_u64(f, m->ranges[s->item].depth);
    put(f, "}");
  } else if (s->kind == SL_OP) {
    const mpprof_event *e = &m->events[s->item];
    const mpprof_site *st = &m->sites[e->site];
    put(f, ",\"args\":{\"site\":");
    put_u64(f, st->id);
    put(f, ",\"op\":");
    mpprof_fput_json_string(f, st->op);
    put(f, ",\"layer\":");
    mpprof_fput_json_string(f, st->layer);
    put(f, ",\"stream\":\"0x");
    put_hex(f, e->stream);
    put(f, "\"");
    if (e->call >= 0) {
      put(f, ",\"call\":");
      put_u64(f, (uint64_t)e->call);
    }
    put(f, "}");
  } else if (s->kind == SL_KERNEL) {
    const mpprof_kevent *k = &m->kevents[s->item];
    put(f, ",\"args\":{\"site\":");
    put_u64(f, m->sites[k->site].id);
    put(f, ",\"call\":");
    put_u64(f, k->call);
    put(f, ",\"stream\":");
    put_u64(f, k->stream);
    put(f, "}");
  }
  put(f, "}");
}

/* The flow arrow of kernel slice s from the call that launched it: starts
 * mid-call, so that it binds to the call's slice and not to a range that
 * begins at the same time. */
static void write_flow(FILE *f, const mpprof_model *m, const slice *s, size_t id, int64_t t0) {
  const mpprof_event *e = &m->events[s->flow];
  sep(f);
  put(f, "{\"name\":\"launch\",\"cat\":\"launch\",\"ph\":\"s\",\"id\":");
  put_u64(f, id);
  put(f, ",\"pid\":");
  put_u64(f, e->proc + 1);
  put(f, ",\"tid\":");
  put_u64(f, e->thread);
  put(f, ",\"ts\":");
  put_us(f, e->t_ns + e->dur_ns / 2 - t0);
  put(f, "}");
  sep(f);
  put(f, "{\"name\":\"launch\",\"cat\":\"launch\",\"ph\":\"f\",\"bp\":\"e\",\"id\":");
  put_u64(f, id);
  put(f, ",\"pid\":");
  put_u64(f, s->proc + 1);
  put(f, ",\"tid\":");
  put_u64(f, s->tid);
  put(f, ",\"ts\":");
  put_us(f, s->start - t0);
  put(f, "}");
}

static void write_track_names(FILE *f, const slices *all) {
  slice prev = {0}, cur;
  for (size_t i = 0; i < all->n; i++, prev = cur) {
    const slice *s = &cur;
    sort_view(all, all->v[i], &cur);
    if (i && s->proc == prev.proc && s->tid == prev.tid) continue;
    sep(f);
    fprintf(f,
            "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu64
            ",\"args\":{\"name\":",
            s->proc + 1, s->tid);
    if (s->kind == SL_KERNEL && s->tid == STREAM_TID_MAX)
      fprintf(f, "\"GPU streams %" PRIu64 " and up\"}}", s->tid - STREAM_TID_BASE);
    else if (s->kind == SL_KERNEL)
      fprintf(f, "\"GPU stream %" PRIu64 "\"}}", s->tid - STREAM_TID_BASE);
    else
      fprintf(f, "\"thread %" PRIu64 "\"}}", s->tid);
  }
}

/* --- kernel names as the trace shows them --- */

/* Each mangled kernel symbol's demangled name, made once per distinct symbol
 * (a run launches the same few kernels millions of times): open addressing
 * on the symbol's FNV-1a hash, load at most one half. */
typedef struct shown_entry {
  uint64_t hash;
  const char *raw;
  char *shown;
} shown_entry;

typedef struct shown_names {
  shown_entry *v;
  size_t cap, n;
} shown_names;

static uint64_t fnv1a(const char *s) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
  return h;
}

static shown_entry *shown_slot(shown_entry *v, size_t cap, uint64_t h, const char *raw) {
  for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1))
    if (!v[i].raw || (v[i].hash == h && !strcmp(v[i].raw, raw))) return &v[i];
}

/* The name kernel symbol `raw` is shown by: raw itself unless mangled
 * ("_Z..."), else its demangled form; NULL when out of memory. */
static const char *shown_name(shown_names *t, const char *raw) {
  if (strncmp(raw, "_Z", 2) != 0) return raw;
  if ((t->n + 1) * 2 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    shown_entry *v = calloc(cap, sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < t->cap; i++)
      if (t->v[i].raw) *shown_slot(v, cap, t->v[i].hash, t->v[i].raw) = t->v[i];
    free(t->v);
    t->v = v;
    t->cap = cap;
  }
  uint64_t h = fnv1a(raw);
  shown_entry *e = shown_slot(t->v, t->cap, h, raw);
  if (!e->raw) {
    char dm[MP_KERNEL_SHOWN_MAX];
    if (!(e->shown = strdup(mp_kernel_demangle(raw, dm, sizeof dm)))) return NULL;
    e->hash = h;
    e->raw = raw;
    t->n++;
  }
  return e->shown;
}

static void shown_names_free(shown_names *t) {
  for (size_t i = 0; i < t->cap; i++)
    free(t->v[i].shown);
  free(t->v);
}

static int collect(const mpprof_model *m, shown_names *names, slices *all, int64_t *ret_t0) {
  bool *has_ranges = calloc(m->n_procs ? m->n_procs : 1, sizeof *has_ranges);
  size_t nk = m->n_kevents;
  all->kname = malloc((nk ? nk : 1) * sizeof *all->kname);
  all->flow = malloc((nk ? nk : 1) * sizeof *all->flow);
  int rc = has_ranges && all->kname && all->flow ? 0 : -1;
  int64_t t0 = INT64_MAX;
  for (size_t i = 0; rc == 0 && i < m->n_ranges; i++) {
    const mpprof_range *r = &m->ranges[i];
    has_ranges[r->proc] = true;
    if (r->start_ns < t0) t0 = r->start_ns;
  }
  for (size_t i = 0; rc == 0 && i < m->n_events; i++)
    if (m->events[i].t_ns < t0) t0 = m->events[i].t_ns;
  if (rc == 0 && nk) { /* each kernel's launching call: keys only while they are needed */
    call_key *keys = malloc((m->n_events ? m->n_events : 1) * sizeof *keys);
    if (!keys) rc = -1;
    for (size_t i = 0; rc == 0 && i < m->n_events; i++) {
      const mpprof_event *e = &m->events[i];
      keys[i] = (call_key){e->proc, e->site, (uint32_t)e->call, i};
    }
    if (rc == 0) qsort(keys, m->n_events, sizeof *keys, key_cmp);
    for (size_t i = 0; rc == 0 && i < nk; i++) {
      const mpprof_kevent *k = &m->kevents[i];
      if (k->start_ns < t0) t0 = k->start_ns;
      call_key want = {k->proc, k->site, k->call, 0};
      const call_key *hit = bsearch(&want, keys, m->n_events, sizeof *keys, key_cmp);
      /* Calls whose events were not kept (cap, older files) have no arrow. */
      bool linked = hit && m->events[hit->event].call >= 0;
      all->flow[i] = linked ? (int64_t)hit->event : -1;
      if (!(all->kname[i] = shown_name(names, k->name))) rc = -1;
    }
    free(keys);
  }
  if (rc == 0) rc = rebuild_layers(m, has_ranges, all);
  free(has_ranges);
  /* in the order the slices were made before (equal ones keep it) */
  size_t n = m->n_ranges + m->n_events + nk + all->n_layers;
  if (rc == 0 && !(all->v = malloc((n ? n : 1) * sizeof *all->v))) rc = -1;
  for (size_t i = 0; rc == 0 && i < m->n_ranges; i++)
    all->v[all->n++] = REF(SL_RANGE, i);
  for (size_t i = 0; rc == 0 && i < m->n_events; i++)
    all->v[all->n++] = REF(SL_OP, i);
  for (size_t i = 0; rc == 0 && i < nk; i++)
    all->v[all->n++] = REF(SL_KERNEL, i);
  for (size_t i = 0; rc == 0 && i < all->n_layers; i++)
    all->v[all->n++] = REF(SL_LAYER, i);
  *ret_t0 = t0 == INT64_MAX ? 0 : t0;
  return rc;
}

static void slices_free(slices *s) {
  free(s->v);
  free(s->layers);
  free(s->kname);
  free(s->flow);
}

/* A process whose timeline hit a cap (MPPROF_MAX_EVENTS, MPPROF_MAX_RANGES)
 * holds only the first calls, kernels or ranges of its run: one instant on
 * its track where what was kept ends says so and what is missing, so the
 * trace does not look like a run that stopped there. */
static int write_cap_marks(FILE *f, const mpprof_model *m, const slices *all, int64_t t0) {
  int64_t *end = malloc((m->n_procs ? m->n_procs : 1) * sizeof *end);
  if (!end) return -1;
  for (size_t i = 0; i < m->n_procs; i++)
    end[i] = t0;
  for (size_t i = 0; i < all->n; i++) {
    slice s;
    sort_view(all, all->v[i], &s);
    if (s.start + s.dur > end[s.proc]) end[s.proc] = s.start + s.dur;
  }
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    int64_t calls = p->events_dropped > 0 ? p->events_dropped : 0;
    int64_t kernels = p->kernel_events_dropped > 0 ? p->kernel_events_dropped : 0;
    int64_t ranges = p->ranges_dropped > 0 ? p->ranges_dropped : 0;
    if (!calls && !kernels && !ranges) continue;
    sep(f);
    fputs("{\"name\":\"timeline capped: later ", f);
    const char *what[] = {"calls", "kernels", "NVTX ranges"};
    int64_t n[] = {calls, kernels, ranges};
    bool any = false;
    for (int k = 0; k < 3; k++)
      if (n[k]) {
        fprintf(f, "%s%s", any ? ", " : "", what[k]);
        any = true;
      }
    fprintf(f,
            " not recorded (MPPROF_MAX_EVENTS, MPPROF_MAX_RANGES)\",\"cat\":\"mpprof\","
            "\"ph\":\"i\",\"s\":\"p\",\"pid\":%zu,\"ts\":",
            i + 1);
    put_us(f, end[i] - t0);
    fprintf(f,
            ",\"args\":{\"calls_dropped\":%" PRId64 ",\"kernels_dropped\":%" PRId64
            ",\"ranges_dropped\":%" PRId64 ",\"max_events\":%" PRId64 ",\"max_ranges\":%" PRId64
            "}}",
            calls, kernels, ranges, p->max_events, p->max_ranges);
  }
  free(end);
  return 0;
}

static int write_events(const mpprof_model *m, FILE *f) {
  first = true;
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    char *name = p->has_rank
                     ? mpprof_asprintf("%s pid %" PRId64 " rank %" PRId64, p->host, p->pid, p->rank)
                     : mpprof_asprintf("%s pid %" PRId64, p->host, p->pid);
    if (!name) return -1;
    sep(f);
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%zu,\"args\":{\"name\":", i + 1);
    mpprof_fput_json_string(f, name);
    fputs("}}", f);
    free(name);
  }
  slices all = {.m = m};
  shown_names names = {0};
  int64_t t0 = 0;
  if (collect(m, &names, &all, &t0)) {
    slices_free(&all);
    shown_names_free(&names);
    return -1;
  }
  if (all.n) qsort_r(all.v, all.n, sizeof *all.v, slice_cmp, &all);
  write_track_names(f, &all);
  size_t flows = 0;
  for (size_t i = 0; i < all.n; i++) {
    slice s = view(&all, all.v[i]);
    write_slice(f, m, &s, t0);
    if (s.flow >= 0) write_flow(f, m, &s, ++flows, t0);
  }
  int rc = write_cap_marks(f, m, &all, t0);
  slices_free(&all);
  shown_names_free(&names);
  if (rc) return -1;
  fputs("\n]}\n", f);
  return 0;
}

int mpprof_write_trace_json(const mpprof_model *m, const char *path, mpprof_afile_set *set) {
  mpprof_afile a;
  if (mpprof_afile_open(&a, path, set)) return -1;
  if (write_events(m, a.f)) {
    mpprof_afile_close(&a, false);
    errno = ENOMEM;
    return -1;
  }
  return mpprof_afile_close(&a, true);
}
