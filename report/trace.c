/* OUT/trace.json: the run in Chrome trace-event format (opens in Perfetto and
 * chrome://tracing). One track per process and thread; each recorded call is a
 * complete ("X") slice, and the NVTX path of consecutive calls becomes nested
 * layer slices around them. Timestamps are microseconds from the first call. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

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

static bool first = true;

static void sep(FILE *f) {
  fputs(first ? "\n" : ",\n", f);
  first = false;
}

static void slice(FILE *f, uint32_t pid, uint64_t tid, const char *name, size_t len,
                  const char *cat, int64_t start, int64_t dur, int64_t t0) {
  char *n = strndup(name, len);
  sep(f);
  fputs("{\"name\":", f);
  mpprof_fput_json_string(f, n ? n : "");
  free(n);
  fprintf(f,
          ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu64
          ",\"ts\":%.3f,\"dur\":%.3f}",
          cat, pid, tid, (double)(start - t0) / 1e3, (double)dur / 1e3);
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
  size_t n = m->n_events;
  size_t *ord = malloc((n ? n : 1) * sizeof *ord);
  open_slice *stack = NULL;
  size_t depth = 0, cap = 0;
  if (!ord) return -1;
  int64_t t0 = n ? m->events[0].t_ns : 0;
  for (size_t i = 0; i < n; i++) {
    ord[i] = i;
    if (m->events[i].t_ns < t0) t0 = m->events[i].t_ns;
  }
  qsort_r(ord, n, sizeof *ord, ev_cmp, m->events);
  for (size_t i = 0; i <= n; i++) {
    const mpprof_event *e = i < n ? &m->events[ord[i]] : NULL;
    const mpprof_event *prev = i ? &m->events[ord[i - 1]] : NULL;
    bool new_track = !e || !prev || e->proc != prev->proc || e->thread != prev->thread;
    const char *path = e ? m->sites[e->site].layer : "";
    /* How many open layer slices this event shares. */
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
    while (depth > keep) {
      open_slice *s = &stack[--depth];
      slice(f, prev->proc + 1, prev->thread, s->name, s->len, "layer", s->start, s->end - s->start,
            t0);
    }
    if (!e) break;
    if (new_track) {
      sep(f);
      fprintf(f,
              "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu64
              ",\"args\":{\"name\":\"thread %" PRIu64 "\"}}",
              e->proc + 1, e->thread, e->thread);
    }
    while (*c) {
      const char *slash = strchr(c, '/');
      size_t len = slash ? (size_t)(slash - c) : strlen(c);
      if (mpprof_grow((void **)&stack, &cap, depth + 1, sizeof *stack)) {
        free(ord);
        free(stack);
        return -1;
      }
      stack[depth++] = (open_slice){c, len, e->t_ns, e->t_ns};
      c = slash ? slash + 1 : c + len;
    }
    for (size_t d = 0; d < depth; d++)
      if (e->t_ns + e->dur_ns > stack[d].end) stack[d].end = e->t_ns + e->dur_ns;
    const mpprof_site *s = &m->sites[e->site];
    sep(f);
    fputs("{\"name\":", f);
    mpprof_fput_json_string(f, s->api);
    fprintf(f,
            ",\"cat\":\"op\",\"ph\":\"X\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu64
            ",\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"site\":%zu,\"op\":",
            e->proc + 1, e->thread, (double)(e->t_ns - t0) / 1e3, (double)e->dur_ns / 1e3, s->id);
    mpprof_fput_json_string(f, s->op);
    fputs(",\"layer\":", f);
    mpprof_fput_json_string(f, s->layer);
    fprintf(f, ",\"stream\":\"0x%" PRIx64 "\"}}", e->stream);
  }
  free(ord);
  free(stack);
  fputs("\n]}\n", f);
  return 0;
}

int mpprof_write_trace_json(const mpprof_model *m, const char *path) {
  mpprof_afile a;
  if (mpprof_afile_open(&a, path)) return -1;
  if (write_events(m, a.f)) {
    mpprof_afile_close(&a, false);
    errno = ENOMEM;
    return -1;
  }
  return mpprof_afile_close(&a, true);
}
