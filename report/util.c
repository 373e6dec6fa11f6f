/* Small helpers of report/: strings, growing arrays, compact stats records,
 * and writing an output file safely and atomically (common/safefile.h: a
 * reader never sees half a report, nothing is written through a link). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/safefile.h"
#include "common/utf8.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

char *mpprof_strdup(const char *s) {
  return s ? strdup(s) : NULL;
}

char *mpprof_strdup_utf8(const char *s) {
  char *d = strdup(s);
  if (d) mpp_utf8_sanitize(d, strlen(d));
  return d;
}

void mpprof_error_set(mpprof_error *e, int errnum, const char *fmt, ...) {
  if (!e) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  e->errnum = errnum;
}

char *mpprof_asprintf(const char *fmt, ...) {
  va_list ap;
  char *ret = NULL;
  va_start(ap, fmt);
  if (vasprintf(&ret, fmt, ap) < 0) ret = NULL;
  va_end(ap);
  return ret;
}

int mpprof_reserve(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need)
    ncap *= 2;
  void *np = realloc(*p, ncap * elem);
  if (!np) return -1;
  *p = np;
  *cap = ncap;
  return 0;
}

int mpprof_grow(void **p, size_t *cap, size_t need, size_t elem) {
  size_t old = *cap;
  if (need <= old) return 0;
  if (mpprof_reserve(p, cap, need, elem)) return -1;
  memset((char *)*p + old * elem, 0, (*cap - old) * elem);
  return 0;
}

/* s escaped for HTML text and attribute values (NULL: nothing). Runs of
 * plain characters are written whole: a page quotes 100k names. */
void mpprof_html(FILE *f, const char *s) {
  while (s && *s) {
    size_t n = strcspn(s, "&<>\"'");
    fwrite(s, 1, n, f);
    s += n;
    if (!*s) break;
    fputs(*s == '&'   ? "&amp;"
          : *s == '<' ? "&lt;"
          : *s == '>' ? "&gt;"
          : *s == '"' ? "&quot;"
                      : "&#39;",
          f);
    s++;
  }
}

double mpprof_pct(uint64_t num, uint64_t den) {
  return den ? 100.0 * (double)num / (double)den : 0.0;
}

/* ---- shares: the one definition of every percentage the report prints ---- */

mpprof_signal_str mpprof_signal_name(int sig) {
  mpprof_signal_str r;
  const char *abbrev = sigabbrev_np(sig);
  snprintf(r.s, 24, "%s%.16s", abbrev ? "SIG" : "", abbrev ? abbrev : "");
  return r;
}

mpprof_signal_str mpprof_signal_text(int sig) {
  mpprof_signal_str r, name = mpprof_signal_name(sig);
  if (name.s[0])
    snprintf(r.s, sizeof r.s, "%.24s (signal %d)", name.s, sig);
  else
    snprintf(r.s, sizeof r.s, "signal %d", sig);
  return r;
}

mpprof_pct_str mpprof_pct_text(double pct) {
  mpprof_pct_str t;
  if (!(pct > 0)) /* NaN too */
    snprintf(t.s, sizeof t.s, "0");
  else if (pct >= 100)
    snprintf(t.s, sizeof t.s, "100");
  else if (pct < 0.001)
    snprintf(t.s, sizeof t.s, "<0.001");
  else if (pct > 99.999)
    snprintf(t.s, sizeof t.s, ">99.999");
  else
    snprintf(t.s, sizeof t.s, pct >= 99.95 ? "%.5g" : "%.3g", pct);
  return t;
}

mpprof_rel_str mpprof_rel_limit_text(double lim) {
  mpprof_rel_str t;
  for (int p = 1; p <= 17; p++) {
    snprintf(t.s, sizeof t.s, "%.*g", p, lim);
    if (strtod(t.s, NULL) == lim) break;
  }
  return t;
}

mpprof_rel_str mpprof_rel_text(double v, double lim) {
  mpprof_rel_str t;
  if (!isfinite(v)) {
    snprintf(t.s, sizeof t.s, isnan(v) ? "nan" : "inf");
    return t;
  }
  for (int p = 3; p <= 17; p++) {
    snprintf(t.s, sizeof t.s, "%.*g", p, v);
    if ((strtod(t.s, NULL) > lim) == (v > lim)) break;
  }
  return t;
}

static uint64_t finite_nonzero(const mpprof_cstats *c) {
  uint64_t bad = c->zeros + c->nans + c->pos_infs + c->neg_infs;
  return c->count > bad ? c->count - bad : 0;
}

const mp_dtype mpprof_saturated_formats[2] = {MP_FP8_E4M3, MP_FP8_E5M2};

char *mpprof_saturated_at(const mpprof_layer_tensor *lt) {
  const mp_dtype *fmt = mpprof_saturated_formats;
  char part[2][64];
  int n = 0;
  uint64_t known = lt->saturated_as[0] + lt->saturated_as[1];
  for (int i = 0; i < 2; i++) {
    if (!lt->saturated_as[i]) continue;
    snprintf(part[n++], sizeof part[0], "the %s max %.6g", mp_dtype_name(fmt[i]),
             mp_format_of(fmt[i])->max_finite);
  }
  if (n == 1 && known == lt->st.saturated) return strdup(part[0]);
  if (n == 2 && known == lt->st.saturated)
    return mpprof_asprintf("%s (%" PRIu64 ") and %s (%" PRIu64 ")", part[0], lt->saturated_as[0],
                           part[1], lt->saturated_as[1]);
  return strdup("its fp8 format's max");
}

mpprof_share mpprof_share_of(const mpprof_layer_tensor *lt, mp_target t, mp_cast_outcome o,
                             bool at_scale) {
  mpprof_share s = {0};
  if (!lt) return s;
  const mpprof_cstats *c = at_scale && lt->cls == MP_TCLASS_GRADIENT ? &lt->at_scale : &lt->st;
  s.tensor = lt->name;
  s.num = c->casts[t][o];
  s.den = finite_nonzero(c);
  /* Values an op clamped to its fp8 output's max: their true size is
   * unknown, and the advice counts them as fp16 overflow (docs/numerics.md,
   * "Saturation"); the share says so too, so that the table, the CSV, the
   * plan and diff read what the verdict and the finding read. So are the
   * +-Inf an fp16 forward output's op made from finite inputs (op_infs),
   * counted in the base as well. */
  if (t == MP_TGT_FP16 && o == MP_CAST_OVERFLOW) s.num += c->saturated;
  if (c == &lt->st && t == MP_TGT_FP16) {
    s.den += lt->op_infs;
    if (o == MP_CAST_OVERFLOW) s.num += lt->op_infs;
  }
  s.pct = mpprof_pct(s.num, s.den);
  s.estimate = !at_scale && (lt->unscale_estimate || lt->casts_estimate);
  return s;
}

mpprof_share mpprof_share_scaled(const mpprof_layer_tensor *lt, mp_target t, mp_cast_outcome o,
                                 int scale_log2, mp_stats *scratch) {
  mpprof_share s = mpprof_share_of(lt, t, o, false);
  if (!lt || scale_log2 == 0) return s;
  mpprof_cstats_unpack(&lt->st, scratch);
  mp_scaled_casts sc;
  mp_scaled_casts_compute(scratch, t, scale_log2, &sc);
  /* as mpprof_share_of: saturated values (and an fp16 output's op-made
   * Inf) are overflow at any scale */
  s.num = sc.hi[o];
  if (t == MP_TGT_FP16 && o == MP_CAST_OVERFLOW) s.num += lt->st.saturated + lt->op_infs;
  s.pct = mpprof_pct(s.num, s.den);
  s.estimate = s.estimate || sc.lo[o] != sc.hi[o];
  return s;
}

mpprof_share mpprof_nonfinite_share_of(const mpprof_layer_tensor *lt) {
  mpprof_share s = {.tensor = lt->name,
                    .num = lt->st.nans + lt->st.pos_infs + lt->st.neg_infs,
                    .den = lt->st.count};
  s.pct = mpprof_pct(s.num, s.den);
  return s;
}

cJSON *mpprof_share_json(const mpprof_share *s) {
  if (!s->tensor) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddItemToObject(o, "pct", mpprof_json_double(s->pct));
  cJSON_AddItemToObject(o, "count", mpprof_json_u64(s->num));
  cJSON_AddItemToObject(o, "of", mpprof_json_u64(s->den));
  cJSON_AddStringToObject(o, "tensor", s->tensor);
  cJSON_AddBoolToObject(o, "estimate", s->estimate);
  return o;
}

size_t mpprof_outputs_only_procs(const mpprof_model *m) {
  size_t n = 0;
  for (size_t i = 0; i < m->n_procs; i++)
    n += m->procs[i].scan && !strcmp(m->procs[i].scan, "outputs");
  return n;
}

const char *mpprof_edges_text(const mpprof_model *m, int lo, int hi, int beyond_lo, int beyond_hi,
                              bool html, char buf[MP_LOSS_SCALE_EDGES_TEXT_MAX]) {
  return mp_loss_scale_edges_text(lo, hi, beyond_lo, beyond_hi, m->params.scale_log2_min,
                                  m->params.scale_log2_max, html ? "2<sup>" : "2^",
                                  html ? "</sup>" : "", buf);
}

cJSON *mpprof_true_window_json(bool has, int lo, int hi, int beyond_lo, int beyond_hi) {
  if (!has) return cJSON_CreateNull();
  int t[2];
  mp_loss_scale_true_window(lo, hi, beyond_lo, beyond_hi, t);
  cJSON *a = cJSON_CreateArray();
  cJSON_AddItemToArray(a, cJSON_CreateNumber(t[0]));
  cJSON_AddItemToArray(a, cJSON_CreateNumber(t[1]));
  return a;
}

const char *mpprof_scale_str(double s, char *buf) {
  int k;
  if (s > 0 && mp_scale_log2(s, &k))
    snprintf(buf, 32, "2^%d", k);
  else
    snprintf(buf, 32, "%g", s);
  return buf;
}

/* ---- compact stats ---- */

int mpprof_cstats_pack(const mp_stats *s, mpprof_cstats *ret) {
  mpprof_cstats c = {
      .dtype = s->dtype,
      .hist_lo = s->hist_lo,
      .hist_hi = s->hist_hi,
      .hist_shift = s->hist_shift,
      .count = s->count,
      .zeros = s->zeros,
      .nans = s->nans,
      .pos_infs = s->pos_infs,
      .neg_infs = s->neg_infs,
      .negatives = s->negatives,
      .saturated = s->saturated,
      .min = s->min,
      .max = s->max,
      .absmax = s->absmax,
      .min_abs_nonzero = s->min_abs_nonzero,
      .nz_lo = 1,
      .nz_hi = 0,
  };
  memcpy(c.casts, s->casts, sizeof c.casts);
  int lo = s->hist_lo < MP_HIST_MIN ? MP_HIST_MIN : s->hist_lo;
  int hi = s->hist_hi > MP_HIST_MAX ? MP_HIST_MAX : s->hist_hi;
  for (int e = lo; e <= hi; e++)
    if (s->exp_hist[e - MP_HIST_MIN]) {
      if (c.nz_lo > c.nz_hi) c.nz_lo = e;
      c.nz_hi = e;
    }
  if (c.nz_lo <= c.nz_hi) {
    size_t n = (size_t)(c.nz_hi - c.nz_lo + 1);
    c.bins = malloc(n * sizeof *c.bins);
    if (!c.bins) return -1;
    memcpy(c.bins, &s->exp_hist[c.nz_lo - MP_HIST_MIN], n * sizeof *c.bins);
  }
  mpprof_cstats_free(ret);
  *ret = c;
  return 0;
}

void mpprof_cstats_unpack(const mpprof_cstats *c, mp_stats *s) {
  memset(s, 0, sizeof *s);
  s->dtype = c->dtype;
  s->hist_lo = c->hist_lo;
  s->hist_hi = c->hist_hi;
  s->hist_shift = c->hist_shift;
  s->count = c->count;
  s->zeros = c->zeros;
  s->nans = c->nans;
  s->pos_infs = c->pos_infs;
  s->neg_infs = c->neg_infs;
  s->negatives = c->negatives;
  s->saturated = c->saturated;
  s->min = c->min;
  s->max = c->max;
  s->absmax = c->absmax;
  s->min_abs_nonzero = c->min_abs_nonzero;
  memcpy(s->casts, c->casts, sizeof s->casts);
  if (c->nz_lo <= c->nz_hi)
    memcpy(&s->exp_hist[c->nz_lo - MP_HIST_MIN], c->bins,
           (size_t)(c->nz_hi - c->nz_lo + 1) * sizeof *c->bins);
}

int mpprof_cstats_copy(const mpprof_cstats *c, mpprof_cstats *ret) {
  mpprof_cstats d = *c;
  d.bins = NULL;
  if (c->nz_lo <= c->nz_hi) {
    size_t n = (size_t)(c->nz_hi - c->nz_lo + 1);
    if (!(d.bins = malloc(n * sizeof *d.bins))) return -1;
    memcpy(d.bins, c->bins, n * sizeof *d.bins);
  }
  mpprof_cstats_free(ret);
  *ret = d;
  return 0;
}

void mpprof_cstats_free(mpprof_cstats *c) {
  if (!c) return;
  free(c->bins);
  c->bins = NULL;
  c->nz_lo = 1;
  c->nz_hi = 0;
}

void mpprof_fp8_value_merge(mpprof_fp8_value *dst, const mpprof_fp8_value *src) {
  if (src->read) {
    if (!dst->read || src->min < dst->min) dst->min = src->min;
    if (!dst->read || src->max > dst->max) dst->max = src->max;
  }
  dst->read += src->read;
  dst->unread += src->unread;
}

/* mp_stats_merge on compact records, without expanding them: a merge of
 * 100k sites must not cost two 17 KB records each. Same result as unpack,
 * merge, pack (the bins of a record lie inside its hist_lo..hist_hi). */
int mpprof_cstats_merge(mpprof_cstats *dst, const mpprof_cstats *src) {
  if (src->nz_lo <= src->nz_hi) {
    bool had = dst->nz_lo <= dst->nz_hi;
    int lo = had && dst->nz_lo < src->nz_lo ? dst->nz_lo : src->nz_lo;
    int hi = had && dst->nz_hi > src->nz_hi ? dst->nz_hi : src->nz_hi;
    uint64_t *bins = dst->bins;
    if (!had || lo != dst->nz_lo || hi != dst->nz_hi) {
      bins = calloc((size_t)(hi - lo + 1), sizeof *bins);
      if (!bins) return -1;
      if (had)
        memcpy(&bins[dst->nz_lo - lo], dst->bins,
               (size_t)(dst->nz_hi - dst->nz_lo + 1) * sizeof *bins);
    }
    for (int e = src->nz_lo; e <= src->nz_hi; e++)
      bins[e - lo] += src->bins[e - src->nz_lo];
    /* A sum that wrapped to 0 at an end is no longer in the span (as pack does). */
    int nlo = lo, nhi = hi;
    while (nlo <= nhi && !bins[nlo - lo])
      nlo++;
    while (nhi >= nlo && !bins[nhi - lo])
      nhi--;
    if (nlo > nhi) {
      free(bins);
      bins = NULL;
    } else if (nlo != lo || nhi != hi) {
      memmove(bins, &bins[nlo - lo], (size_t)(nhi - nlo + 1) * sizeof *bins);
    }
    if (bins != dst->bins) free(dst->bins);
    dst->bins = bins;
    dst->nz_lo = nlo > nhi ? 1 : nlo;
    dst->nz_hi = nlo > nhi ? 0 : nhi;
  }
  MP_STATS_MERGE_HEAD(dst, src);
  return 0;
}

cJSON *mpprof_cstats_to_json(const mpprof_cstats *c, const mp_advice *adv, mp_stats *scratch) {
  mpprof_cstats_unpack(c, scratch);
  return mpprof_stats_to_json(scratch, adv);
}

/* ---- JSON text in memory ---- */

bool mpprof_tb_room(mpprof_tb *b, size_t len) {
  if (b->oom) return false;
  if (b->n + len + 1 <= b->cap) return true;
  size_t cap = b->cap ? 2 * b->cap : 1024; /* doubling, not zeroed (mpprof_grow zeroes) */
  while (cap < b->n + len + 1)
    cap *= 2;
  char *np = realloc(b->p, cap);
  if (!np) {
    b->oom = true;
    return false;
  }
  b->p = np;
  b->cap = cap;
  return true;
}

void mpprof_tb_cstr(mpprof_tb *b, const char *s) {
  mpprof_tb_put(b, s, strlen(s));
}

void mpprof_tb_json_str(mpprof_tb *b, const char *s) {
  if (!s) {
    mpprof_tb_cstr(b, "null");
    return;
  }
  mpprof_tb_put(b, "\"", 1);
  const char *run = s;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c >= 32 && c != '"' && c != '\\') continue;
    mpprof_tb_put(b, run, (size_t)(s - run));
    char esc[8];
    switch (c) {
    case '"':
      mpprof_tb_cstr(b, "\\\"");
      break;
    case '\\':
      mpprof_tb_cstr(b, "\\\\");
      break;
    case '\b':
      mpprof_tb_cstr(b, "\\b");
      break;
    case '\f':
      mpprof_tb_cstr(b, "\\f");
      break;
    case '\n':
      mpprof_tb_cstr(b, "\\n");
      break;
    case '\r':
      mpprof_tb_cstr(b, "\\r");
      break;
    case '\t':
      mpprof_tb_cstr(b, "\\t");
      break;
    default:
      snprintf(esc, sizeof esc, "\\u%04x", c);
      mpprof_tb_cstr(b, esc);
    }
    run = s + 1;
  }
  mpprof_tb_put(b, run, (size_t)(s - run));
  mpprof_tb_put(b, "\"", 1);
}

/* Digits of v at the end of buf[24]; returns where they start. */
static char *u64_digits(uint64_t v, char *buf) {
  char *p = buf + 24;
  do
    *--p = (char)('0' + v % 10);
  while (v /= 10);
  return p;
}

size_t mpprof_u64_text(uint64_t v, char buf[24]) {
  char d[24], *p = u64_digits(v, d);
  size_t n = (size_t)(d + 24 - p);
  memcpy(buf, p, n);
  buf[n] = '\0';
  return n;
}

size_t mpprof_milli_text(int64_t v, char buf[32]) {
  /* Below 10^15, (double)v is exact and v / 1e3 (< 2^40) within 2^-14 of
   * v / 1000, far nearer than 0.0005: %.3f of it prints v's own digits. */
  if (v <= -1000000000000000 || v >= 1000000000000000) {
    snprintf(buf, 32, "%.3f", (double)v / 1e3);
    return strlen(buf);
  }
  uint64_t a = v < 0 ? (uint64_t)-v : (uint64_t)v;
  char d[48], *p = u64_digits(a % 1000 + 1000, d + 24); /* "1ddd" at d[44..47] */
  *p = '.';
  p = u64_digits(a / 1000, d + 20); /* the integer part, ending at d[43] */
  if (v < 0) *--p = '-';
  size_t n = (size_t)(d + 48 - p);
  memcpy(buf, p, n);
  buf[n] = '\0';
  return n;
}

void mpprof_tb_u64(mpprof_tb *b, uint64_t v) {
  /* in place, not through a memcpy call: most of a site's text is counts */
  size_t n = 1;
  for (uint64_t t = v; t >= 10; t /= 10)
    n++;
  if (b->oom || (b->n + n + 1 > b->cap && !mpprof_tb_room(b, n))) return;
  char *e = b->p + b->n + n;
  *e = '\0';
  do
    *--e = (char)('0' + v % 10);
  while (v /= 10);
  b->n += n;
}

void mpprof_tb_double(mpprof_tb *b, double d) {
  /* An integer below 10^15 is what %.15g prints: its digits, "-0" for -0. */
  if (d == d && fabs(d) < 1e15 && d == (double)(int64_t)d) {
    char buf[24], *p = u64_digits((uint64_t)(int64_t)fabs(d), buf);
    if (signbit(d)) *--p = '-';
    mpprof_tb_put(b, p, (size_t)(buf + 24 - p));
    return;
  }
  char buf[40];
  size_t n = mpprof_double_text(d, buf);
  if (n)
    mpprof_tb_put(b, buf, n);
  else
    mpprof_tb_put(b, "null", 4);
}

/* ---- an arena for per-site cJSON trees ---- */

typedef struct arena {
  char *base;
  size_t used, cap;
} arena;

static arena g_arena;

static void *arena_alloc(size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (g_arena.cap - g_arena.used < n) return malloc(n);
  void *p = g_arena.base + g_arena.used;
  g_arena.used += n;
  return p;
}

static void arena_free(void *p) {
  if ((char *)p < g_arena.base || (char *)p >= g_arena.base + g_arena.cap) free(p);
}

bool mpprof_json_arena_begin(void) {
  if (!g_arena.base) {
    g_arena.cap = (size_t)1 << 20;
    if (!(g_arena.base = malloc(g_arena.cap))) {
      g_arena.cap = 0;
      return false;
    }
  }
  g_arena.used = 0;
  cJSON_Hooks h = {arena_alloc, arena_free};
  cJSON_InitHooks(&h);
  return true;
}

void mpprof_json_arena_end(void) {
  cJSON_InitHooks(NULL);
  g_arena.used = 0;
}

void mpprof_json_arena_release(void) {
  free(g_arena.base);
  g_arena = (arena){0};
}

/* ---- names -> entries ---- */

int mpprof_name_index_init(mpprof_name_index *ix, size_t max_entries) {
  ix->cap = 16;
  while (ix->cap < 2 * max_entries)
    ix->cap *= 2;
  ix->slot = calloc(ix->cap, sizeof *ix->slot);
  return ix->slot ? 0 : -1;
}

size_t *mpprof_name_index_slot(const mpprof_name_index *ix, const char *name,
                               const char *const *names) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (const char *p = name; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ull;
  size_t i = (size_t)h & (ix->cap - 1);
  while (ix->slot[i] && strcmp(names[ix->slot[i] - 1], name))
    i = (i + 1) & (ix->cap - 1);
  return &ix->slot[i];
}

void mpprof_name_index_free(mpprof_name_index *ix) {
  free(ix->slot);
  ix->slot = NULL;
}

/* report_internal.h */
char *mpprof_argv_line(const cJSON *argv) {
  if (!cJSON_IsArray(argv)) return NULL;
  size_t len = 1;
  const cJSON *a;
  cJSON_ArrayForEach(a, argv) if (cJSON_IsString(a)) len += strlen(a->valuestring) + 1;
  char *out = malloc(len), *end = out;
  if (!out) return NULL;
  *end = 0;
  cJSON_ArrayForEach(a, argv) if (cJSON_IsString(a)) {
    if (end != out) *end++ = ' ';
    end = stpcpy(end, a->valuestring);
  }
  return out;
}

/* ---- safe output files ---- */

/* The temporaries that exist now (an afile open, or a set not committed),
 * for mpprof_remove_temporaries() in a signal handler: a slot is filled
 * before it is marked used, and unmarked before its temporary or directory
 * goes. More at once than there are slots: the rest are not listed. */
#define TEMP_SLOTS (2 * MPPROF_AFILE_SET_MAX)
static struct {
  volatile sig_atomic_t used;
  int dir;
  char tmp[sizeof((mpp_sfile *)0)->tmp];
} temp_slots[TEMP_SLOTS];

static int temp_listed(int dir, const char *tmp) {
  for (int i = 0; i < TEMP_SLOTS; i++)
    if (!temp_slots[i].used) {
      temp_slots[i].dir = dir;
      memcpy(temp_slots[i].tmp, tmp, sizeof temp_slots[i].tmp);
      __atomic_signal_fence(__ATOMIC_SEQ_CST);
      temp_slots[i].used = 1;
      return i;
    }
  return -1;
}

static void temp_unlisted(int slot) {
  if (slot >= 0) temp_slots[slot].used = 0;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void mpprof_remove_temporaries(void) {
  for (int i = 0; i < TEMP_SLOTS; i++)
    if (temp_slots[i].used) unlinkat(temp_slots[i].dir, temp_slots[i].tmp, 0);
}

/* The FILE writes through these: the first failing write's errno is kept
 * (stdio would report a full disk as a bare EIO at close). */
static ssize_t afile_write(void *cookie, const char *buf, size_t n) {
  mpprof_afile *a = cookie;
  if (a->err) {
    errno = a->err;
    return -1;
  }
  int rc = mpp_sf_write_all(a->sf.fd, buf, n);
  if (rc) {
    a->err = -rc;
    errno = -rc;
    return -1;
  }
  return (ssize_t)n;
}

int mpprof_afile_open(mpprof_afile *a, const char *path, mpprof_afile_set *set) {
  memset(a, 0, sizeof *a);
  a->dir = -1;
  a->sf.fd = -1;
  a->slot = -1;
  if (set && set->n == MPPROF_AFILE_SET_MAX) {
    errno = EMFILE;
    return -1;
  }
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
  int rc = dir ? 0 : -ENOMEM;
  if (rc == 0) {
    a->dir = mpp_sf_open_dir(AT_FDCWD, dir, MPP_SF_USER_PATH);
    if (a->dir < 0) rc = a->dir;
  }
  free(dir);
  if (rc == 0) rc = mpp_sf_create(&a->sf, a->dir, slash ? slash + 1 : path, 0666);
  if (rc == 0) a->slot = temp_listed(a->dir, a->sf.tmp);
  if (rc == 0) {
    cookie_io_functions_t io = {.write = afile_write};
    a->f = fopencookie(a, "w", io);
    if (!a->f) rc = -(errno ? errno : ENOMEM);
  }
  /* without the buffer: stdio's own (slower, same bytes) */
  if (rc == 0 && (a->buf = malloc(MPPROF_AFILE_BUF)) &&
      setvbuf(a->f, a->buf, _IOFBF, MPPROF_AFILE_BUF) != 0) {
    free(a->buf);
    a->buf = NULL;
  }
  if (rc == 0) {
    a->set = set;
    return 0;
  }
  temp_unlisted(a->slot);
  if (a->sf.tmp[0]) mpp_sf_commit(&a->sf, rc);
  if (a->dir >= 0) close(a->dir);
  memset(a, 0, sizeof *a);
  errno = -rc;
  return -1;
}

int mpprof_afile_close(mpprof_afile *a, bool ok) {
  if (!a->f) return -1;
  int e = 0;
  if (fclose(a->f) != 0 || a->err) e = a->err ? a->err : errno ? errno : EIO;
  free(a->buf); /* after fclose: its last flush writes from it */
  if (!ok && !e) e = ECANCELED;
  int rc;
  if (a->set && !e) {
    /* complete: the set renames it, from its directory (kept open) */
    mpprof_afile_set *s = a->set;
    rc = mpp_sf_close_temp(&a->sf, 0);
    if (rc == 0) {
      s->done[s->n].sf = a->sf;
      s->done[s->n].dir = a->dir;
      s->done[s->n].slot = a->slot;
      s->n++;
      memset(a, 0, sizeof *a);
      return 0;
    }
    temp_unlisted(a->slot);
    unlinkat(a->dir, a->sf.tmp, 0);
  } else {
    rc = mpp_sf_commit(&a->sf, e ? -e : 0);
    temp_unlisted(a->slot); /* after: renamed or removed */
  }
  close(a->dir);
  memset(a, 0, sizeof *a);
  if (rc) {
    errno = -rc;
    return -1;
  }
  return 0;
}

void mpprof_afile_set_init(mpprof_afile_set *s) {
  s->n = 0;
}

/* What rename cannot replace with a file, found before anything is renamed:
 * a directory at the name (EISDIR). */
static int set_blocked(const mpprof_afile_set *s, size_t *ret_i) {
  for (size_t i = 0; i < s->n; i++) {
    struct stat st;
    if (fstatat(s->done[i].dir, s->done[i].sf.name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISDIR(st.st_mode)) {
      *ret_i = i;
      return EISDIR;
    }
  }
  return 0;
}

/* Whether two descriptors are of one directory. */
static bool same_dir(int a, int b) {
  struct stat x, y;
  return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int mpprof_afile_set_commit(mpprof_afile_set *s, const char **ret_failed, size_t *ret_done) {
  size_t i = 0, done = 0;
  int e = set_blocked(s, &i);
  for (; !e && i < s->n; i++, done++) {
    int r = mpp_sf_commit_in_set(&s->done[i].sf);
    temp_unlisted(s->done[i].slot);
    s->done[i].slot = -1;
    if (r) {
      e = -r;
      break;
    }
  }
  /* each directory of the renamed files synced once */
  for (size_t k = 0; k < done; k++) {
    bool seen = false;
    for (size_t j = 0; j < k && !seen; j++)
      seen = same_dir(s->done[j].dir, s->done[k].dir);
    if (!seen) mpp_sf_sync_dir(s->done[k].dir);
  }
  *ret_done = done;
  *ret_failed = e ? s->done[i].sf.name : NULL;
  mpprof_afile_set_abort(s);
  if (!e) return 0;
  errno = e;
  return -1;
}

void mpprof_afile_set_abort(mpprof_afile_set *s) {
  for (size_t i = 0; i < s->n; i++) {
    if (s->done[i].sf.tmp[0]) unlinkat(s->done[i].dir, s->done[i].sf.tmp, 0);
    temp_unlisted(s->done[i].slot);
    s->done[i].sf.tmp[0] = '\0';
    close(s->done[i].dir);
  }
  s->n = 0;
}

/* ---- text output helpers ---- */

/* The one rule for text from outside (names, paths, messages quoting them)
 * shown as text: the character at p (before end) as out, and the bytes it
 * takes. Control bytes (C0, DEL) become \0 \t \n \r or \xNN, C1 controls
 * (UTF-8 U+0080..U+009F, which terminals act on) \u00NN; a newline stays
 * one where keep_newline (a multi-line summary). */
static size_t term_char(const unsigned char *p, const unsigned char *end, bool keep_newline,
                        char out[8]) {
  unsigned char c = *p;
  if (c == '\n' && keep_newline) {
    snprintf(out, 8, "\n");
  } else if (c < 0x20 || c == 0x7f) {
    const char *s = c == 0      ? "\\0"
                    : c == '\t' ? "\\t"
                    : c == '\n' ? "\\n"
                    : c == '\r' ? "\\r"
                                : NULL;
    if (s)
      snprintf(out, 8, "%s", s);
    else
      snprintf(out, 8, "\\x%02x", c);
  } else if (c == 0xc2 && end - p > 1 && p[1] >= 0x80 && p[1] <= 0x9f) {
    snprintf(out, 8, "\\u%04x", p[1]);
    return 2;
  } else {
    out[0] = (char)c;
    out[1] = '\0';
  }
  return 1;
}

void mpprof_fput_term(FILE *f, const char *s) {
  const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
  char out[8];
  while (p < end) {
    p += term_char(p, end, true, out);
    fputs(out, f);
  }
}

char *mpprof_text_escape(const char *s, size_t n) {
  char *text = n < SIZE_MAX / 4 ? malloc(4 * n + 1) : NULL, *o = text, out[8];
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (text && p < end) {
    p += term_char(p, end, false, out);
    size_t len = strlen(out);
    memcpy(o, out, len);
    o += len;
  }
  if (text) *o = '\0';
  return text;
}

void mpprof_fprint_term(FILE *f, const char *fmt, ...) {
  va_list ap;
  char *text = NULL;
  va_start(ap, fmt);
  int n = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  bool ends_line = n > 0 && text[n - 1] == '\n';
  const unsigned char *p = (const unsigned char *)text, *end = p + n - ends_line;
  char out[8];
  while (p < end) {
    p += term_char(p, end, false, out);
    fputs(out, f);
  }
  if (ends_line) fputc('\n', f);
  free(text);
}

void mpprof_fput_json_string_n(FILE *f, const char *s, size_t n) {
  fputc_unlocked('"', f); /* unlocked: a report file is written by one thread */
  const unsigned char *p = (const unsigned char *)s, *run = p, *end = p + n;
  for (; p < end; p++) {
    if (*p != '"' && *p != '\\' && *p >= 0x20) continue;
    fwrite_unlocked(run, 1, (size_t)(p - run), f); /* the plain characters before it, at once */
    if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else
      fprintf(f, "\\u%04x", *p);
    run = p + 1;
  }
  fwrite_unlocked(run, 1, (size_t)(p - run), f);
  fputc_unlocked('"', f);
}

void mpprof_fput_json_string(FILE *f, const char *s) {
  mpprof_fput_json_string_n(f, s, strlen(s));
}

char *mpprof_layer_dtypes(const mpprof_model *m, const mpprof_layer *l) {
  /* "A=fp16 B=fp16 D=fp32|fp16": per role, the distinct dtypes of its sites. */
  char roles[16][8];
  char vals[16][64];
  int nr = 0;
  for (size_t i = 0; i < l->n_sites; i++) {
    const mpprof_site *s = &m->sites[l->first_site + i];
    for (int t = 0; t < s->n_types; t++) {
      int r = 0;
      while (r < nr && strcmp(roles[r], s->types[t].role))
        r++;
      if (r == nr) {
        if (nr == 16) continue;
        snprintf(roles[nr], sizeof roles[nr], "%s", s->types[t].role);
        vals[nr][0] = 0;
        nr++;
      }
      const char *dn = mp_dtype_name(s->types[t].dtype);
      /* distinct, '|'-separated */
      bool seen = false;
      const char *v = vals[r];
      size_t dl = strlen(dn);
      while (*v) {
        const char *bar = strchr(v, '|');
        size_t vl = bar ? (size_t)(bar - v) : strlen(v);
        if (vl == dl && !strncmp(v, dn, dl)) seen = true;
        v += vl + (bar ? 1 : 0);
      }
      if (!seen && strlen(vals[r]) + dl + 2 < sizeof vals[r]) {
        if (vals[r][0]) strcat(vals[r], "|");
        strcat(vals[r], dn);
      }
    }
  }
  size_t len = 1;
  for (int r = 0; r < nr; r++)
    len += strlen(roles[r]) + strlen(vals[r]) + 2;
  char *out = malloc(len);
  if (!out) return NULL;
  out[0] = 0;
  for (int r = 0; r < nr; r++) {
    if (r) strcat(out, " ");
    strcat(out, roles[r]);
    strcat(out, "=");
    strcat(out, vals[r]);
  }
  return out;
}

/* ---- interned strings ---- */

#define STRPOOL_BLOCK ((size_t)64 << 10)

static uint64_t strpool_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull ^ n; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h ^ (h >> 29);
}

static size_t strpool_find(const mpprof_strpool *p, const char *s, size_t n, uint64_t h) {
  size_t i = (size_t)h & (p->cap - 1);
  while (p->slot[i] && (strncmp(p->slot[i], s, n) || p->slot[i][n]))
    i = (i + 1) & (p->cap - 1);
  return i;
}

static int strpool_rehash(mpprof_strpool *p) {
  size_t cap = p->cap ? 2 * p->cap : 256;
  const char **slot = calloc(cap, sizeof *slot);
  if (!slot) return -1;
  mpprof_strpool np = {.slot = slot, .cap = cap};
  for (size_t i = 0; i < p->cap; i++)
    if (p->slot[i]) {
      size_t n = strlen(p->slot[i]);
      slot[strpool_find(&np, p->slot[i], n, strpool_hash(p->slot[i], n))] = p->slot[i];
    }
  free(p->slot);
  p->slot = slot;
  p->cap = cap;
  return 0;
}

/* Room for n bytes: the current block, a new one, or (long strings) a
 * block of their own behind the current one. */
static char *strpool_alloc(mpprof_strpool *p, size_t n) {
  if (n <= p->room - p->used && p->block) {
    char *r = p->block + p->used;
    p->used += n;
    return r;
  }
  size_t hdr = sizeof(char *), big = n > STRPOOL_BLOCK / 4;
  char *b = malloc(hdr + (big ? n : STRPOOL_BLOCK));
  if (!b) return NULL;
  if (big && p->block) { /* linked behind the current block, which stays current */
    memcpy(b, p->block, hdr);
    memcpy(p->block, &b, hdr);
    return b + hdr;
  }
  memcpy(b, &p->block, hdr);
  p->block = b;
  p->used = hdr + n;
  p->room = hdr + (big ? n : STRPOOL_BLOCK);
  return b + hdr;
}

const char *mpprof_intern_n(mpprof_strpool *p, const char *s, size_t n) {
  if (2 * (p->n + 1) > p->cap && strpool_rehash(p)) return NULL;
  uint64_t h = strpool_hash(s, n);
  size_t i = strpool_find(p, s, n, h);
  if (p->slot[i]) return p->slot[i];
  char *c = strpool_alloc(p, n + 1);
  if (!c) return NULL;
  memcpy(c, s, n);
  c[n] = '\0';
  p->n++;
  return p->slot[i] = c;
}

const char *mpprof_intern(mpprof_strpool *p, const char *s) {
  return s ? mpprof_intern_n(p, s, strlen(s)) : NULL;
}

void mpprof_strpool_free(mpprof_strpool *p) {
  if (!p) return;
  char *b = p->block;
  while (b) {
    char *prev;
    memcpy(&prev, b, sizeof prev);
    free(b);
    b = prev;
  }
  free(p->slot);
  memset(p, 0, sizeof *p);
}

double mpprof_fp16_flush_edge(const mpprof_layer_tensor *t) {
  const mpprof_cstats *c = t->at_scale.count ? &t->at_scale : &t->st; /* as recorded */
  if (c->dtype != MP_FP16 || strncmp(t->name, "backward.", 9)) return 0;
  uint64_t sub = c->casts[MP_TGT_FP16][MP_CAST_SUBNORMAL],
           nonzero = sub + c->casts[MP_TGT_FP16][MP_CAST_NORMAL];
  double share = nonzero ? (double)sub / (double)nonzero : 0;
  return share >= MPPROF_FLUSH_EDGE_SUBNORMAL_MIN ? share : 0;
}

bool mpprof_layer_grads_unseen(const mpprof_model *m, const mpprof_layer *l) {
  return l->adv.known && !l->adv.has_gradients && !m->forward_only;
}

bool mpprof_layer_flushed_unseen(const mpprof_layer *l) {
  if (!l->adv.known || (l->adv.rec != MP_REC_FP16 && l->adv.rec != MP_REC_FP16_LOSS_SCALE))
    return false;
  for (size_t t = 0; t < l->n_tensors; t++)
    if (mpprof_fp16_flush_edge(&l->tensors[t]) > 0) return true;
  return false;
}

const char *mpprof_verdict_marks(const mpprof_model *m, const mpprof_layer *l,
                                 char buf[MPPROF_MARKS_MAX]) {
  bool g = mpprof_layer_grads_unseen(m, l), fl = mpprof_layer_flushed_unseen(l);
  snprintf(buf, MPPROF_MARKS_MAX, "%s%s%s%s%s", g || fl ? " (" : "",
           g ? MPPROF_MARK_FORWARD_ONLY : "", g && fl ? "; " : "", fl ? MPPROF_MARK_FLUSHED : "",
           g || fl ? ")" : "");
  return buf;
}

const char *mpprof_tally_marks(const mpprof_model *m, mp_recommendation rec,
                               char buf[MPPROF_MARKS_MAX]) {
  size_t g = 0, fl = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    if (!l->adv.known || l->adv.rec != rec) continue;
    g += mpprof_layer_grads_unseen(m, l);
    fl += mpprof_layer_flushed_unseen(l);
  }
  char a[64] = "", b[96] = "";
  if (g) snprintf(a, sizeof a, MPPROF_MARK_FORWARD_ONLY ": %zu", g);
  if (fl) snprintf(b, sizeof b, MPPROF_MARK_FLUSHED ": %zu", fl);
  snprintf(buf, MPPROF_MARKS_MAX, "%s%s%s%s%s", g || fl ? " (" : "", a, g && fl ? "; " : "", b,
           g || fl ? ")" : "");
  return buf;
}

const char *mpprof_layer_label(const mpprof_layer *l) {
  return l->name[0] ? l->name : MPPROF_NO_LAYER_LABEL;
}

const char *mpprof_site_layer_label(const mpprof_site *s) {
  return s->layer_name[0] ? s->layer_name : MPPROF_NO_LAYER_LABEL;
}
