/* Reading the raw files OUT/raw/<host>-<pid>.json (docs/raw-format.md) into the model.
 *
 * A raw file can hold 100k sites with full histograms: parsed as one cJSON
 * tree that would take gigabytes, and even its text is hundreds of MB. So the
 * file is read (not mapped: a file that shrinks meanwhile is a short read, not
 * a SIGBUS) in two streaming passes through a small window: the first walks
 * it at the top level with a structural scanner, parses each top-level value
 * but the arrays, and notes where each element of "sites", "events", "ranges"
 * and "kernel_events" lies; the second reads those elements back in blocks,
 * parses each by cJSON on its own and releases it. Memory is the window, the
 * element offsets and the compact records, not the file.
 * A file is validated completely before anything of it enters the model: a
 * truncated, corrupt, foreign or other-version file is skipped whole, named in
 * a one-line warning and listed in the report. Until then a site that merges
 * into one the model has is held packed (pending.c), not as a site record. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "analysis/raw_format.h"
#include "analysis/schema_keys.h"
#include "common/safefile.h"
#include "common/utf8.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

typedef struct span {
  size_t off, len;
} span;

typedef struct spans {
  span *v;
  size_t n, cap;
} spans;

typedef struct walk {
  /* The file, read through buf: buf[0] is byte off of the file, and p..end
   * the bytes not consumed yet (the first pass), or the elements of block
   * (the second). */
  int fd;
  size_t size; /* bytes to read: the size when it was opened */
  size_t got;  /* bytes read by the first pass */
  size_t off;
  char *buf;
  size_t cap;
  const char *p, *end;
  bool eof;                      /* no more bytes: all read, or a read failed (rerr) */
  bool oom;                      /* the window could not grow */
  char rerr[200];                /* why the file could not be read whole; "" when it was */
  const void *block;             /* the spans whose elements buf holds, or NULL */
  size_t block_first, block_end; /* their indices */
  char err[200];
  cJSON *header; /* every top-level key but sites/events */
  spans sites, events, ranges, kevents;
  mpprof_range *rg; /* parsed "ranges" and "kernel_events" (names owned until committed) */
  mpprof_kevent *kv;
  char *rest;            /* a site's text without its tensors (scan_tensors) */
  mpprof_tb idtext;      /* a site's identity text (identity_of) */
  mpprof_tb pack;        /* a merging site's packed record (mpprof_pending_pack) */
  size_t parsed;         /* sites parsed: staged (m->sites[at[i]]) or packed (pend[i]) */
  const char *rank_name; /* the name of a site's calls without "ranks" (default_ranks) */
  size_t rest_cap;
  bool has_sites;
  /* start_ns, end_ns to the nanosecond where the header's text gave them
   * (exact_value; the cJSON header holds them through a double) */
  int64_t exact_ns[2];
  bool has_exact_ns[2];
  /* training.first_nonfinite.t_ns likewise */
  int64_t exact_nf_t_ns;
  bool has_exact_nf_t_ns, seen_training;
  bool ended; /* a value ran into the end of the data */
} walk;

/* ---- reading ---- */

size_t mpprof_raw_window = 1u << 20;
#define WINDOW mpprof_raw_window

/* The file holds fewer bytes than when it was opened: left of them. */
static void changed_while_read(walk *w, size_t left) {
  snprintf(w->rerr, sizeof w->rerr, "changed while being read (%zu of %zu bytes left)", left,
           w->size);
}

/* Keep p..end, read more after it (the window doubles when that is more than
 * half of it). false at the end of the file, on a read error (rerr) and when
 * out of memory (oom). */
static bool more(walk *w) {
  if (w->eof) return false;
  size_t keep = (size_t)(w->end - w->p);
  w->off += (size_t)(w->p - w->buf);
  memmove(w->buf, w->p, keep);
  if (keep > w->cap / 2) {
    char *nb = realloc(w->buf, 2 * w->cap);
    if (!nb) {
      w->oom = w->eof = true;
      return false;
    }
    w->buf = nb;
    w->cap *= 2;
  }
  w->p = w->buf;
  w->end = w->buf + keep;
  size_t want = w->cap - keep < w->size - w->got ? w->cap - keep : w->size - w->got;
  ssize_t n;
  do
    n = read(w->fd, w->buf + keep, want);
  while (n < 0 && errno == EINTR);
  if (n < 0)
    snprintf(w->rerr, sizeof w->rerr, "cannot read: %s", strerror(errno));
  else if (n == 0)
    changed_while_read(w, w->got);
  if (n <= 0) {
    w->eof = true;
    return false;
  }
  w->got += (size_t)n;
  w->end += n;
  if (w->got == w->size) w->eof = true;
  return true;
}

/* After a failed walk, which stops where the text is wrong (the rest is
 * not read: a garbage file of any size is rejected at its first bytes): a
 * file that shrank meanwhile is reported as such, whatever its text looked
 * like. */
static void note_shrink(walk *w) {
  struct stat st;
  if (!w->eof && fstat(w->fd, &st) == 0 && (uint64_t)st.st_size < w->size)
    changed_while_read(w, (size_t)st.st_size);
}

/* Element i of s (the second pass), read with the elements after it up to a
 * window's worth by one pread. NULL when the file no longer holds it (rerr)
 * or out of memory (oom). */
static const char *element(walk *w, const spans *s, size_t i) {
  if (w->block != s || i < w->block_first || i >= w->block_end) {
    size_t start = s->v[i].off, j = i + 1;
    while (j < s->n && s->v[j].off + s->v[j].len - start <= WINDOW)
      j++;
    size_t n = s->v[j - 1].off + s->v[j - 1].len - start, got = 0;
    w->block = NULL;
    if (n > w->cap) {
      char *nb = realloc(w->buf, n);
      if (!nb) {
        w->oom = true;
        return NULL;
      }
      w->buf = nb;
      w->cap = n;
    }
    while (got < n) {
      ssize_t r = pread(w->fd, w->buf + got, n - got, (off_t)(start + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        if (r < 0)
          snprintf(w->rerr, sizeof w->rerr, "cannot read: %s", strerror(errno));
        else
          changed_while_read(w, start + got);
        return NULL;
      }
      got += (size_t)r;
    }
    mpp_utf8_sanitize(w->buf, n);
    w->block = s;
    w->block_first = i;
    w->block_end = j;
    w->off = start;
  }
  return w->buf + (s->v[i].off - w->off);
}

/* A failed element read: 1 (rerr says why to skip the file) or -1 (memory). */
static int element_failed(const walk *w, char *err, size_t errlen) {
  if (w->oom) return -1;
  snprintf(err, errlen, "%s", w->rerr);
  return 1;
}

/* Every byte that is not UTF-8 becomes MPP_UTF8_REPLACEMENT (common/utf8.h):
 * strings from a raw file are valid UTF-8 in every output. Done per value or
 * element: each starts after and ends before an ASCII byte, where a sequence
 * cannot continue, so the result is that of the whole file. */
static void sanitize(walk *w, const char *p, size_t n) {
  mpp_utf8_sanitize(w->buf + (p - w->buf), n);
}

/* ---- structural scanner ---- */

static void skip_ws(walk *w) {
  do
    while (w->p < w->end && mpprof_json_space(*w->p))
      w->p++;
  while (w->p == w->end && more(w));
}

/* End of the value at w->p, reading as far as it goes; NULL as skip_value. */
static const char *value_end(walk *w);

static int fail(walk *w, const char *what) {
  if ((w->p >= w->end || w->ended) && !strncmp(what, "expected ", 9))
    snprintf(w->err, sizeof w->err, "truncated: file ends where %s was expected", what + 9);
  else if (w->p >= w->end || w->ended)
    snprintf(w->err, sizeof w->err, "truncated: file ends %s", what);
  else
    snprintf(w->err, sizeof w->err, "not valid JSON at byte %zu (%s)",
             w->off + (size_t)(w->p - w->buf), what);
  return -1;
}

/* p at '"': pointer after the closing quote, or NULL at end of data. */
static const char *skip_string(const char *p, const char *end) {
  for (p++; p < end;) {
    const char *q = memchr(p, '"', (size_t)(end - p));
    if (!q) return NULL;
    /* escaped when an odd run of backslashes precedes it (p follows a quote) */
    size_t bs = 0;
    while (q - bs > p && q[-1 - (ptrdiff_t)bs] == '\\')
      bs++;
    if (!(bs & 1)) return q + 1;
    p = q + 1;
  }
  return NULL;
}

static const char *skip_value_raw(const char *p, const char *end);

/* A byte a JSON value can start with (one test per value, not a strchr). */
static bool value_start(char c) {
  return c == '{' || c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' ||
         c == 'f' || c == 'n';
}

/* The longest scalar a raw file's text can hold where a number, true, false
 * or null is (mpprof writes none of more than 24 bytes: a double as %.17g). */
#define SCALAR_MAX 256

/* A byte of a number, true, false or null. */
static bool scalar_byte(char c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' ||
         c == 't' || c == 'r' || c == 'u' || c == 'f' || c == 'a' || c == 'l' || c == 's' ||
         c == 'n';
}

/* End of the value starting at p (no leading whitespace), NULL if the data ends
 * first (*ret_ended set) or no value starts at p. A value that is none
 * already (a byte no value starts with; a scalar of other bytes, or longer
 * than any; a string or container holding a stray control byte) is not one the end stops: its file
 * is rejected without reading on (a garbage file was read to its end first). */
/* A control byte JSON has nowhere, in a string or out of one: all but the
 * whitespace tab, newline and carriage return (garbage's zeros, for one). */
static inline bool stray_control(char c) {
  return (unsigned char)c < 0x20 && c != '\t' && c != '\n' && c != '\r';
}

/* Whether the string at p ('"'), not closed before end, can still be one:
 * no stray control byte in it (as in a container). */
static bool string_goes_on(const char *p, const char *end) {
  for (p++; p < end; p++)
    if (stray_control(*p)) return false;
  return true;
}

static const char *skip_container(const char *p, const char *end, bool *ret_bad);

static const char *skip_value(const char *p, const char *end, bool *ret_ended) {
  if (p < end && (*p == '{' || *p == '[')) {
    bool bad = false;
    const char *e = skip_container(p, end, &bad);
    if (!e && !bad) *ret_ended = true;
    return e;
  }
  const char *e = skip_value_raw(p, end);
  if (e || p >= end || !value_start(*p)) return e;
  if (*p == '"' && !string_goes_on(p, end)) return NULL;
  if (*p != '"' && *p != '{' && *p != '[') {
    const char *q = p;
    while (q < end && scalar_byte(*q))
      q++;
    if (q < end || q - p > SCALAR_MAX) return NULL;
  }
  *ret_ended = true; /* a value started: only the end stops it */
  return NULL;
}

/* One byte of an array or object being skipped: strings (with their
 * escapes) hide brackets. true when the byte closes the outermost bracket. */
static inline bool container_byte(char c, long *depth, bool *in_str, bool *esc) {
  if (*in_str) {
    if (*esc)
      *esc = false;
    else if (c == '\\')
      *esc = true;
    else if (c == '"')
      *in_str = false;
    return false;
  }
  if (c == '"')
    *in_str = true;
  else if (c == '{' || c == '[')
    ++*depth;
  else if (c == '}' || c == ']')
    return --*depth == 0;
  return false;
}

/* p at '{' or '[': the byte after its closing bracket, NULL if the data ends
 * first or (*ret_bad set) a stray control byte comes before it. Sixteen bytes at a time where they
 * hold no backslash: the quotes' prefix parity marks the bytes inside strings, and only the
 * brackets outside them are walked (a site of some 2 KB has a few dozen; the byte loop was a tenth
 * of the report's time). A chunk with a backslash, and the tail, go byte by byte. */
static const char *skip_container(const char *p, const char *end, bool *ret_bad) {
  long depth = 0;
  bool in_str = false, esc = false;
  while (p < end) {
#ifdef __SSE2__
    if (!esc && end - p >= 16) {
      __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
      if (!_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')))) {
        unsigned q = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')));
        unsigned open = (unsigned)_mm_movemask_epi8(_mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8('{')), _mm_cmpeq_epi8(v, _mm_set1_epi8('['))));
        unsigned close = (unsigned)_mm_movemask_epi8(_mm_or_si128(
            _mm_cmpeq_epi8(v, _mm_set1_epi8('}')), _mm_cmpeq_epi8(v, _mm_set1_epi8(']'))));
        /* bit i: an odd number of quotes at 0..i, i.e. byte i (if not a
         * quote) lies inside a string, counting from outside one */
        unsigned inside = q;
        inside ^= inside << 1;
        inside ^= inside << 2;
        inside ^= inside << 4;
        inside ^= inside << 8;
        inside = (inside ^ (in_str ? 0xffffu : 0)) & 0xffffu;
        /* bytes <= 0x1f but the three whitespace ones */
        unsigned ctl =
            (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v));
        if (ctl)
          ctl &= ~(unsigned)_mm_movemask_epi8(
              _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                                        _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                           _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
        for (unsigned b = (open | close) & ~inside; b; b &= b - 1) {
          int i = __builtin_ctz(b);
          if (open >> i & 1)
            depth++;
          else if (--depth == 0) {
            *ret_bad = (ctl & ((2u << i) - 1)) != 0;
            return *ret_bad ? NULL : p + i + 1;
          }
        }
        if (ctl) {
          *ret_bad = true;
          return NULL;
        }
        in_str = inside >> 15;
        p += 16;
        continue;
      }
      for (const char *e = p + 16; p < e;) {
        if (stray_control(*p)) goto bad;
        if (container_byte(*p++, &depth, &in_str, &esc)) return p;
      }
      continue;
    }
#endif
    if (stray_control(*p)) goto bad;
    if (container_byte(*p++, &depth, &in_str, &esc)) return p;
  }
  return NULL;
bad:
  *ret_bad = true;
  return NULL;
}

/* A byte that ends a scalar: ',', ']', '}' or JSON whitespace. */
static inline bool scalar_end(char c) {
  switch (c) {
  case ',':
  case ']':
  case '}':
  case ' ':
  case '\t':
  case '\r':
  case '\n':
    return true;
  default:
    return false;
  }
}

static const char *skip_value_raw(const char *p, const char *end) {
  if (p >= end) return NULL;
  if (*p == '"') return skip_string(p, end);
  bool bad = false;
  if (*p == '{' || *p == '[') return skip_container(p, end, &bad);
  const char *s = p;
  while (p < end && !scalar_end(*p))
    p++;
  if (p == end) return NULL; /* a top-level scalar never ends a raw file */
  return p > s ? p : NULL;
}

/* A JSON integer at *pp of at most max_digits digits (no sign, no leading
 * zero, no fraction or exponent): its value, exact below 10^19, in *u and
 * *pp past it; false for anything else. */
static bool sf_uint(const char **pp, const char *end, int max_digits, uint64_t *u) {
  const char *p = *pp, *b = p;
  uint64_t x = 0;
  while (p < end && (unsigned)(*p - '0') < 10 && p - b <= max_digits)
    x = x * 10 + (uint64_t)(*p++ - '0');
  if (p == b || p - b > max_digits || (p - b > 1 && *b == '0')) return false;
  if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return false;
  *u = x;
  *pp = p;
  return true;
}

/* ---- times to the nanosecond ----
 * cJSON keeps a number as a double, and i64_of truncates that: a time in ns
 * since 1970 (19 digits, about 2^60.6: CLOCK_REALTIME, CUPTI's timestamps)
 * comes back in steps of 256 ns, so a trace would show every kernel as a
 * multiple of 256 ns (1.792 or 2.048 us for one of 2.000). Times are
 * therefore read again from their text, exactly, where that text is a
 * plain integer that reads as cJSON read it. */

/* u (negated when neg), the integer whose text cJSON's path read as approx:
 * u itself when it is within i64_of's bound and its nearest double (what
 * strtod gives) truncates to approx; approx otherwise. */
static int64_t exact_integer(uint64_t u, bool neg, int64_t approx) {
  if (u > (1ull << 61)) return approx;
  double d = neg ? -(double)u : (double)u;
  int64_t v = neg ? -(int64_t)u : (int64_t)u;
  return (int64_t)d == approx ? v : approx;
}

/* The integer whose text starts at p (optional '-', at most 19 digits),
 * exactly, where cJSON's path read it as approx; approx for any other text. */
static int64_t exact_value(const char *p, const char *end, int64_t approx) {
  bool neg = p < end && *p == '-';
  const char *q = p + neg;
  uint64_t u;
  return sf_uint(&q, end, 19, &u) ? exact_integer(u, neg, approx) : approx;
}

static const char *json_ws(const char *p, const char *end) {
  while (p < end && mpprof_json_space(*p))
    p++;
  return p;
}

/* The value text of member key of the object text t (n bytes): the first
 * member spelled key, as cJSON_GetObjectItemCaseSensitive finds it; NULL
 * where a key before it has an escape (it might be key spelled otherwise)
 * or the text ends first. */
static const char *member_value(const char *t, size_t n, const char *key) {
  const char *p = t, *end = t + n;
  size_t kn = strlen(key);
  p = json_ws(p, end);
  if (p >= end || *p++ != '{') return NULL;
  while (true) {
    p = json_ws(p, end);
    const char *ke = p < end && *p == '"' ? skip_string(p, end) : NULL;
    if (!ke || memchr(p, '\\', (size_t)(ke - p))) return NULL;
    bool match = (size_t)(ke - p) == kn + 2 && !memcmp(p + 1, key, kn);
    p = json_ws(ke, end);
    if (p >= end || *p++ != ':') return NULL;
    p = json_ws(p, end);
    if (match) return p;
    p = skip_value_raw(p, end);
    if (!p) return NULL;
    p = json_ws(p, end);
    if (p >= end || *p++ != ',') return NULL;
  }
}

/* Member key of the object text t (n bytes) to the nanosecond, where its
 * cJSON tree gave approx (member_value, exact_value); approx otherwise. */
static int64_t exact_member(const char *t, size_t n, const char *key, int64_t approx) {
  const char *v = member_value(t, n, key);
  return v ? exact_value(v, t + n, approx) : approx;
}

/* ---- an element's cJSON tree ---- */

/* A scalar member value p..e (e from skip_value_raw) that cJSON reads in a
 * known way, made as cJSON makes it (the same type, valuestring,
 * valuedouble and valueint): a string without escapes or control bytes, an
 * integer of at most 15 digits without a leading zero (exact as the double
 * strtod gives), true, false, null. NULL: anything else. */
static cJSON *plain_scalar(const char *p, const char *e) {
  size_t n = (size_t)(e - p);
  if (*p == '"') {
    char buf[256];
    if (n < 2 || n - 2 >= sizeof buf || e[-1] != '"') return NULL;
    for (const char *q = p + 1; q < e - 1; q++)
      if (*q == '\\' || *q == '"' || (unsigned char)*q < 0x20) return NULL;
    memcpy(buf, p + 1, n - 2);
    buf[n - 2] = '\0';
    return cJSON_CreateString(buf);
  }
  const char *d = p + (*p == '-');
  if (d < e && (unsigned)(*d - '0') < 10 && e - d <= 15 && (e - d == 1 || *d != '0')) {
    uint64_t v = 0;
    for (const char *q = d; q < e; q++) {
      if ((unsigned)(*q - '0') >= 10) return NULL;
      v = v * 10 + (uint64_t)(*q - '0');
    }
    return cJSON_CreateNumber(d > p ? -(double)v : (double)v);
  }
  if (n == 4 && !memcmp(p, "true", 4)) {
    cJSON *v = cJSON_CreateTrue();
    if (v) v->valueint = 1; /* as cJSON's parse sets it */
    return v;
  }
  if (n == 5 && !memcmp(p, "false", 5)) return cJSON_CreateFalse();
  if (n == 4 && !memcmp(p, "null", 4)) return cJSON_CreateNull();
  return NULL;
}

/* Containers nested deeper than this are left to cJSON: far below its own
 * nesting limit, so a text the fast path takes cJSON takes too. */
#define TREE_DEPTH 16

static cJSON *tree_value(const char **pp, const char *end, int depth);

/* The object (obj) or array at *pp, its members read by tree_value. */
static cJSON *tree_container(const char **pp, const char *end, int depth, bool obj) {
  const char *p = *pp + 1;
  char close = obj ? '}' : ']';
#define WS()                                                                                       \
  while (p < end && mpprof_json_space(*p))                                                         \
  p++
  cJSON *o = obj ? cJSON_CreateObject() : cJSON_CreateArray();
  if (!o) return NULL;
  WS();
  if (p < end && *p == close) {
    *pp = p + 1;
    return o;
  }
  while (true) {
    char key[256];
    WS();
    if (obj) {
      if (p >= end || *p++ != '"') break;
      const char *ks = p;
      while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
        p++;
      if (p >= end || *p != '"' || (size_t)(p - ks) >= sizeof key) break;
      memcpy(key, ks, (size_t)(p - ks));
      key[p - ks] = '\0';
      p++;
      WS();
      if (p >= end || *p++ != ':') break;
      WS();
    }
    cJSON *v = tree_value(&p, end, depth + 1);
    if (!v) break;
    if (!(obj ? cJSON_AddItemToObject(o, key, v) : cJSON_AddItemToArray(o, v))) {
      cJSON_Delete(v);
      break;
    }
    WS();
    if (p < end && *p == ',') {
      p++;
      continue;
    }
    if (p < end && *p == close) {
      *pp = p + 1;
      return o;
    }
    break;
  }
#undef WS
  cJSON_Delete(o);
  return NULL;
}

/* The value at *pp (no whitespace before it), *pp moved past it; NULL:
 * leave the text to cJSON. Scalars cJSON reads in a known way are made
 * directly (plain_scalar), containers by tree_container, any other value
 * (a fraction, an exponent, a string with escapes) by cJSON from its own
 * bytes: the same bytes parse alike in place, as a value's parse reads
 * nothing past its end, which is checked. */
static cJSON *tree_value(const char **pp, const char *end, int depth) {
  const char *p = *pp;
  if (p >= end || !value_start(*p)) return NULL;
  if (*p == '{' || *p == '[')
    return depth < TREE_DEPTH ? tree_container(pp, end, depth, *p == '{') : NULL;
  const char *ve = skip_value_raw(p, end);
  if (!ve) return NULL;
  cJSON *v = plain_scalar(p, ve);
  if (!v) {
    const char *pe = NULL;
    v = cJSON_ParseWithLengthOpts(p, (size_t)(ve - p), &pe, false);
    if (v && pe != ve) {
      cJSON_Delete(v);
      v = NULL;
    }
  }
  if (v) *pp = ve;
  return v;
}

/* The tree cJSON_ParseWithLength(t, n) would give when t is an object (a
 * site, an event, a range) in the spelling mpprof writes, built without
 * cJSON's parse of it (a site's dozen integers through strtod were most of
 * that). NULL when the text is any other spelling (keys with escapes or
 * control bytes, whitespace other than JSON's four, a value cJSON would
 * read otherwise in place, nesting past TREE_DEPTH): the caller parses it
 * whole, so the result is always cJSON's. */
static cJSON *object_tree_fast(const char *t, size_t n) {
  const char *p = t;
  return n && *p == '{' ? tree_container(&p, t + n, 0, true) : NULL;
}

cJSON *mpprof_object_tree(const char *t, size_t n) {
  cJSON *o = object_tree_fast(t, n);
  return o ? o : cJSON_ParseWithLength(t, n);
}

static const char *value_end(walk *w) {
  const char *e;
  while (!(e = skip_value(w->p, w->end, &w->ended)) && w->ended && more(w))
    w->ended = false;
  return e;
}

static int push_span(spans *s, size_t off, size_t len) {
  if (mpprof_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v)) return -1;
  s->v[s->n++] = (span){off, len};
  return 0;
}

/* The elements of a raw file's arrays are objects (a site, an event, a
 * range, a kernel event): anything else rejects the file where it starts. */
static int walk_array(walk *w, spans *out, const char *key) {
  char what[64], object[80];
  snprintf(what, sizeof what, "inside the %s array", key);
  snprintf(object, sizeof object, "expected an object in the %s array", key);
  if (*w->p != '[') return fail(w, "expected an array");
  w->p++;
  skip_ws(w);
  if (w->p < w->end && *w->p == ']') {
    w->p++;
    return 0;
  }
  while (true) {
    skip_ws(w);
    if (w->p < w->end && *w->p != '{') return fail(w, object);
    const char *e = value_end(w);
    if (!e) return fail(w, what);
    if (push_span(out, w->off + (size_t)(w->p - w->buf), (size_t)(e - w->p))) {
      snprintf(w->err, sizeof w->err, "out of memory");
      return -1;
    }
    w->p = e;
    skip_ws(w);
    if (w->p >= w->end) return fail(w, what);
    if (*w->p == ',') {
      w->p++;
      continue;
    }
    if (*w->p == ']') {
      w->p++;
      return 0;
    }
    return fail(w, what);
  }
}

static bool i64_of(const cJSON *v, int64_t *ret);

static int walk_top(walk *w) {
  skip_ws(w);
  if (w->p >= w->end) return fail(w, "before any JSON");
  if (*w->p != '{') return fail(w, "expected a JSON object");
  w->p++;
  w->header = cJSON_CreateObject();
  if (!w->header) return -1;
  skip_ws(w);
  if (w->p < w->end && *w->p == '}') {
    w->p++;
    goto end;
  }
  while (true) {
    skip_ws(w);
    if (w->p >= w->end || *w->p != '"') return fail(w, "expected a key");
    const char *ke;
    while (!(ke = skip_string(w->p, w->end)) && string_goes_on(w->p, w->end) && more(w))
      ;
    if (!ke) {
      w->ended = string_goes_on(w->p, w->end);
      return fail(w, "inside a key");
    }
    const char *ks = w->p + 1;
    size_t klen = (size_t)(ke - 1 - ks);
    sanitize(w, ks, klen);
    char key[64];
    snprintf(key, sizeof key, "%.*s", (int)(klen < 63 ? klen : 63), ks);
    w->p = ke;
    skip_ws(w);
    if (w->p >= w->end || *w->p != ':') return fail(w, "expected ':'");
    w->p++;
    skip_ws(w);
    if (!strcmp(key, MP_RK_TOP.sites)) {
      if (walk_array(w, &w->sites, MP_RK_TOP.sites)) return -1;
      w->has_sites = true;
    } else if (!strcmp(key, MP_RK_TOP.events)) {
      if (walk_array(w, &w->events, MP_RK_TOP.events)) return -1;
    } else if (!strcmp(key, MP_RK_TOP.ranges)) {
      if (walk_array(w, &w->ranges, MP_RK_TOP.ranges)) return -1;
    } else if (!strcmp(key, MP_RK_TOP.kernel_events)) {
      if (walk_array(w, &w->kevents, MP_RK_TOP.kernel_events)) return -1;
    } else {
      const char *e = value_end(w);
      if (!e) return fail(w, "inside a top-level value");
      sanitize(w, w->p, (size_t)(e - w->p));
      cJSON *v = cJSON_ParseWithLength(w->p, (size_t)(e - w->p));
      if (!v) return fail(w, key);
      int which = !strcmp(key, MP_RK_TOP.start_ns) ? 0 : !strcmp(key, MP_RK_TOP.end_ns) ? 1 : -1;
      int64_t approx;
      /* the first of a repeated key, as the header's getters find it */
      if (which >= 0 && !w->has_exact_ns[which] && i64_of(v, &approx)) {
        w->exact_ns[which] = exact_value(w->p, e, approx);
        w->has_exact_ns[which] = true;
      }
      const cJSON *nf = cJSON_GetObjectItemCaseSensitive(v, MP_RK_TRAINING.first_nonfinite);
      const char *nft = !strcmp(key, MP_RK_TOP.training) && !w->seen_training && cJSON_IsObject(nf)
                            ? member_value(w->p, (size_t)(e - w->p), MP_RK_TRAINING.first_nonfinite)
                            : NULL;
      if (nft && i64_of(cJSON_GetObjectItemCaseSensitive(nf, MP_RK_NONFINITE.t_ns), &approx)) {
        w->exact_nf_t_ns = exact_member(nft, (size_t)(e - nft), MP_RK_NONFINITE.t_ns, approx);
        w->has_exact_nf_t_ns = true;
      }
      if (!strcmp(key, MP_RK_TOP.training)) w->seen_training = true;
      cJSON_AddItemToObject(w->header, key, v);
      w->p = e;
    }
    skip_ws(w);
    if (w->p >= w->end) return fail(w, "before the closing '}'");
    if (*w->p == ',') {
      w->p++;
      continue;
    }
    if (*w->p == '}') {
      w->p++;
      break;
    }
    return fail(w, "expected ',' or '}'");
  }
end:
  skip_ws(w);
  if (w->p != w->end) return fail(w, "data after the top-level object");
  return 0;
}

/* ---- field helpers ---- */

static bool u64_of(const cJSON *v, uint64_t *ret) {
  double d;
  if (!v || !cJSON_IsNumber(v) || mpprof_json_get_double(v, &d) || !(d >= 0) || d > 1.8e19)
    return false;
  *ret = (uint64_t)d;
  return true;
}

static bool i64_of(const cJSON *v, int64_t *ret) {
  double d;
  /* +-2^61: any time, id or size a raw file can hold; sums of two stay in range */
  if (!v || !cJSON_IsNumber(v) || mpprof_json_get_double(v, &d) || !(fabs(d) <= 0x1p61))
    return false;
  *ret = (int64_t)d;
  return true;
}

static const char *str_of(const cJSON *v) {
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool get_u64(const cJSON *o, const char *key, uint64_t *ret) {
  return u64_of(cJSON_GetObjectItemCaseSensitive(o, key), ret);
}

static bool get_i64(const cJSON *o, const char *key, int64_t *ret) {
  return i64_of(cJSON_GetObjectItemCaseSensitive(o, key), ret);
}

static const char *get_str(const cJSON *o, const char *key) {
  return str_of(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* Optional count or size v (member key) into *ret: absent or null leaves
 * *ret; 0, or -1 with err naming key when it is anything else. */
static int opt_u64(const cJSON *v, const char *key, uint64_t *ret, char *err, size_t errlen) {
  if (!v || cJSON_IsNull(v) || u64_of(v, ret)) return 0;
  snprintf(err, errlen, "%s: not a non-negative integer", key);
  return -1;
}

/* What no run records in a site, read either way (site_fast or
 * site_from_json): NULL, or the reason naming the field. A call counted in
 * calls is one that returned success; kernels without one come only from
 * cuDNN's autotuning (autotune_calls, not in calls). */
static const char *site_impossible(const mpprof_site *s, char *err, size_t errlen) {
  const uint64_t dim[] = {s->m, s->n, s->k, s->batch};
  const char *const dim_key[] = {MP_RK_SITE.m, MP_RK_SITE.n, MP_RK_SITE.k, MP_RK_SITE.batch};
  for (int i = 0; i < 4; i++)
    if (dim[i] > (uint64_t)MP_RAW_I64_MAX) {
      snprintf(err, errlen, "%s: %" PRIu64 " is more than %" PRId64 ", the most a run records",
               dim_key[i], dim[i], (int64_t)MP_RAW_I64_MAX);
      return err;
    }
  uint64_t flop, kernel_ns = 0;
  if (!s->conv && !mpprof_gemm_flop(s->m, s->n, s->k, s->batch, &flop)) {
    snprintf(err, errlen, "%s, %s, %s, %s: more than 2^64 FLOP in one call", MP_RK_SITE.m,
             MP_RK_SITE.n, MP_RK_SITE.k, MP_RK_SITE.batch);
    return err;
  }
  if (s->scanned_calls > s->calls) {
    snprintf(err, errlen, "%s: %" PRIu64 " of %" PRIu64 " %s", MP_RK_SITE.scanned_calls,
             s->scanned_calls, s->calls, MP_RK_SITE.calls);
    return err;
  }
  bool launched = s->n_kernels || (s->has_gpu_ns && s->gpu_ns);
  if (launched && !s->calls && !s->autotune_calls) {
    snprintf(err, errlen, "%s: launched by a site of 0 %s", MP_RK_SITE.kernels, MP_RK_SITE.calls);
    return err;
  }
  for (size_t i = 0; i < s->n_kernels; i++)
    if (__builtin_add_overflow(kernel_ns, s->kernels[i].gpu_ns, &kernel_ns)) kernel_ns = UINT64_MAX;
  if (s->has_gpu_ns && kernel_ns > s->gpu_ns) {
    snprintf(err, errlen, "%s: %" PRIu64 ", less than its %s' %" PRIu64, MP_RK_SITE.gpu_ns,
             s->gpu_ns, MP_RK_SITE.kernels, kernel_ns);
    return err;
  }
  return NULL;
}

/* A site's members by key, the first of a repeated one as
 * cJSON_GetObjectItemCaseSensitive finds it: some 40 look-ups per site were
 * a walk of its list each. An object of more members is walked. */
#define MEMBER_SLOTS 128
typedef struct members {
  const cJSON *o;
  bool walk;
  const cJSON *slot[MEMBER_SLOTS];
} members;

static unsigned key_hash(const char *k) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *k; k++)
    h = (h ^ (unsigned char)*k) * 16777619u;
  return h & (MEMBER_SLOTS - 1);
}

static void members_of(const cJSON *o, members *ret) {
  ret->o = o;
  ret->walk = false;
  memset(ret->slot, 0, sizeof ret->slot);
  size_t n = 0;
  for (const cJSON *c = o->child; c && !ret->walk; c = c->next, n++) {
    if (n == MEMBER_SLOTS / 2 || !c->string) {
      ret->walk = true;
      break;
    }
    unsigned i = key_hash(c->string);
    while (ret->slot[i] && strcmp(ret->slot[i]->string, c->string))
      i = (i + 1) & (MEMBER_SLOTS - 1);
    if (!ret->slot[i]) ret->slot[i] = c;
  }
}

static const cJSON *member(const members *m, const char *key) {
  if (m->walk) return cJSON_GetObjectItemCaseSensitive(m->o, key);
  unsigned i = key_hash(key);
  while (m->slot[i] && strcmp(m->slot[i]->string, key))
    i = (i + 1) & (MEMBER_SLOTS - 1);
  return m->slot[i];
}

/* ---- sites ---- */

static int str_ptr_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* 1 + the place of k among the identity keys sorted by strcmp, or 0 when k
 * is none of them: the sort of a site's identity members compares these
 * (their strcmp was a tenth of reading a site). By hash: every member of
 * every site is asked (the report is built on one thread; the set is
 * filled on first use). */
static int identity_rank(const char *k) {
  static const char *set[MEMBER_SLOTS];
  static int rank[MEMBER_SLOTS];
  static bool filled;
  if (!filled) {
    const char *sorted[MEMBER_SLOTS];
    size_t n = 0;
    for (const char *const *i = mp_raw_identity_keys; *i; i++)
      if (**i && n < MEMBER_SLOTS / 2) sorted[n++] = *i;
    qsort(sorted, n, sizeof *sorted, str_ptr_cmp);
    for (size_t r = 0; r < n; r++) {
      unsigned h = key_hash(sorted[r]);
      while (set[h] && strcmp(set[h], sorted[r]))
        h = (h + 1) & (MEMBER_SLOTS - 1);
      set[h] = sorted[r];
      rank[h] = (int)r + 1;
    }
    filled = true;
  }
  unsigned h = key_hash(k);
  while (set[h] && strcmp(set[h], k))
    h = (h + 1) & (MEMBER_SLOTS - 1);
  return set[h] ? rank[h] : 0;
}

/* v as cJSON_PrintUnformatted prints it, without building its text through
 * cJSON: the common values directly (an integer's digits, a string escaped
 * alike), anything else by cJSON itself. */
static void json_text(mpprof_tb *b, const cJSON *v) {
  if (cJSON_IsString(v)) {
    mpprof_tb_json_str(b, v->valuestring);
  } else if (cJSON_IsNumber(v) && fabs(v->valuedouble) < 1e15 &&
             v->valuedouble == (double)(int64_t)v->valuedouble && !signbit(v->valuedouble)) {
    mpprof_tb_u64(b, (uint64_t)v->valuedouble);
  } else if (cJSON_IsNumber(v) && fabs(v->valuedouble) < 1e15 &&
             v->valuedouble == (double)(int64_t)v->valuedouble && v->valuedouble != 0) {
    mpprof_tb_put(b, "-", 1);
    mpprof_tb_u64(b, (uint64_t)-v->valuedouble);
  } else if (cJSON_IsObject(v) || cJSON_IsArray(v)) {
    bool obj = cJSON_IsObject(v);
    mpprof_tb_put(b, obj ? "{" : "[", 1);
    for (const cJSON *c = v->child; c; c = c->next) {
      if (c != v->child) mpprof_tb_put(b, ",", 1);
      if (obj) {
        mpprof_tb_json_str(b, c->string);
        mpprof_tb_put(b, ":", 1);
      }
      json_text(b, c);
    }
    mpprof_tb_put(b, obj ? "}" : "]", 1);
  } else if (cJSON_IsTrue(v) || cJSON_IsFalse(v) || cJSON_IsNull(v)) {
    mpprof_tb_cstr(b, cJSON_IsTrue(v) ? "true" : cJSON_IsFalse(v) ? "false" : "null");
  } else {
    char *text = cJSON_PrintUnformatted(v);
    if (text)
      mpprof_tb_cstr(b, text);
    else
      b->oom = true;
    cJSON_free(text);
  }
}

/* The identity of a site: its site-key fields (MP_RAW_SITE_KEY, an allowlist),
 * keys sorted, as compact JSON (cJSON_PrintUnformatted's text of an object
 * of those fields). Everything else merges. The text lies in *text, a buffer
 * kept across sites; NULL when out of memory. */
static const char *identity_of(const cJSON *o, mpprof_tb *text) {
  typedef struct ranked {
    const cJSON *c;
    int rank; /* identity_rank */
  } ranked;
  ranked few[64], *v = few;
  size_t n = 0, k = 0;
  for (const cJSON *c = o->child; c; c = c->next)
    n++;
  if (n > sizeof few / sizeof few[0] && !(v = malloc(n * sizeof *v))) return NULL;
  for (const cJSON *c = o->child; c; c = c->next) {
    int r = identity_rank(c->string);
    if (r) v[k++] = (ranked){c, r};
  }
  for (size_t i = 1; i < k; i++) { /* some 15 keys, mostly in order: insertion */
    ranked x = v[i];
    size_t j = i;
    for (; j && v[j - 1].rank > x.rank; j--)
      v[j] = v[j - 1];
    v[j] = x;
  }
  mpprof_tb b = *text; /* the text is built in a buffer kept across sites */
  b.n = 0;
  mpprof_tb_put(&b, "{", 1);
  for (size_t i = 0; i < k; i++) {
    if (i) mpprof_tb_put(&b, ",", 1);
    mpprof_tb_json_str(&b, v[i].c->string);
    mpprof_tb_put(&b, ":", 1);
    json_text(&b, v[i].c);
  }
  mpprof_tb_put(&b, "}", 1);
  if (v != few) free(v);
  *text = b;
  return b.oom ? NULL : b.p;
}

static int parse_counts(mpprof_strpool *pool, const cJSON *o, mpprof_count **ret, size_t *ret_n,
                        const char *what, char *err, size_t errlen) {
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) {
    snprintf(err, errlen, "%s: not an object", what);
    return -1;
  }
  for (const cJSON *c = o->child; c; c = c->next) {
    double d;
    if (!cJSON_IsNumber(c) || mpprof_json_get_double(c, &d) || !(d >= 0 && d <= 1.8e19)) {
      snprintf(err, errlen, "%s.%s: not a count", what, c->string);
      return -1;
    }
    if (d == 0) continue;
    mpprof_count *na = realloc(*ret, (*ret_n + 1) * sizeof *na);
    if (!na) return -1;
    *ret = na;
    na[*ret_n].name = mpprof_intern(pool, c->string);
    na[*ret_n].n = (uint64_t)d;
    if (!na[*ret_n].name) return -1;
    (*ret_n)++;
  }
  return 0;
}

static int parse_kernels(mpprof_strpool *pool, const cJSON *a, mpprof_site *s, char *err,
                         size_t errlen) {
  if (!a || cJSON_IsNull(a)) return 0;
  if (!cJSON_IsArray(a)) {
    snprintf(err, errlen, "kernels: not an array");
    return -1;
  }
  int n = cJSON_GetArraySize(a);
  s->kernels = calloc(n ? (size_t)n : 1, sizeof *s->kernels);
  if (!s->kernels) return -1;
  int i = 0;
  for (const cJSON *k = a->child; k; k = k->next, i++) {
    const char *name = get_str(k, MP_RK_KERNEL.name);
    mpprof_kernel *kk = &s->kernels[s->n_kernels];
    if (!name || !get_u64(k, MP_RK_KERNEL.count, &kk->count)) {
      snprintf(err, errlen, "kernels[%d]: needs a name and a count", i);
      return -1;
    }
    get_u64(k, MP_RK_KERNEL.gpu_ns, &kk->gpu_ns);
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(k, MP_RK_KERNEL.tc);
    const char *src = get_str(k, MP_RK_KERNEL.tc_source);
    /* A verdict from counters only ("counters" is the one source a raw file has). */
    kk->counters_tc =
        cJSON_IsBool(tc) && (!src || !strcmp(src, "counters")) ? cJSON_IsTrue(tc) : -1;
    get_u64(k, MP_RK_KERNEL.tc_profiled, &kk->tc_profiled);
    const cJSON *vals = cJSON_GetObjectItemCaseSensitive(k, MP_RK_KERNEL.tc_values), *v;
    if (!cJSON_IsArray(vals)) vals = NULL;
    cJSON_ArrayForEach(v, vals) {
      if (kk->n_tc_values == (int)(sizeof kk->tc_values / sizeof kk->tc_values[0])) break;
      kk->tc_values[kk->n_tc_values++] = cJSON_IsNumber(v) ? v->valuedouble : 0;
    }
    kk->name = mpprof_intern(pool, name);
    if (!kk->name) return -1;
    s->n_kernels++;
  }
  return 0;
}

static int parse_tensors(mpprof_strpool *pool, const cJSON *o, mpprof_site *s, mp_stats *scratch,
                         char *err, size_t errlen) {
  if (!o || cJSON_IsNull(o)) return 0;
  if (!cJSON_IsObject(o)) {
    snprintf(err, errlen, "tensors: not an object");
    return -1;
  }
  int n = cJSON_GetArraySize(o);
  s->tensors = calloc(n ? (size_t)n : 1, sizeof *s->tensors);
  if (!s->tensors) return -1;
  for (const cJSON *c = o->child; c; c = c->next) {
    char e[160];
    if (mpprof_stats_from_json(c, scratch, e, sizeof e)) {
      snprintf(err, errlen, "tensors.%s: %s", c->string, e);
      return -1;
    }
    mpprof_role_stats *r = &s->tensors[s->n_tensors];
    r->st.nz_lo = 1;
    r->role = mpprof_intern(pool, c->string);
    if (!r->role || mpprof_cstats_pack(scratch, &r->st)) return -1;
    s->n_tensors++;
  }
  return 0;
}

static void parse_types(const cJSON *o, mpprof_site *s) {
  if (!cJSON_IsObject(o)) return;
  for (const cJSON *c = o->child; c && s->n_types < 6; c = c->next) {
    size_t n = strnlen(c->string, sizeof s->types[0].role - 1); /* cut as snprintf would */
    memcpy(s->types[s->n_types].role, c->string, n);
    s->types[s->n_types].role[n] = '\0';
    s->types[s->n_types].dtype =
        cJSON_IsString(c) ? mp_dtype_from_name(c->valuestring) : MP_DTYPE_INVALID;
    s->n_types++;
  }
}

/* 0, or -1 (memory). */
static int parse_conv(const cJSON *o, mpprof_site *s) {
  if (!cJSON_IsObject(o)) return 0;
  const char *const keys[] = {MP_RK_CONV.n, MP_RK_CONV.c, MP_RK_CONV.h, MP_RK_CONV.w,
                              MP_RK_CONV.k, MP_RK_CONV.r, MP_RK_CONV.s};
  mpprof_conv *cv = s->conv = calloc(1, sizeof *s->conv);
  if (!cv) return -1;
  /* Implausible dimensions (negative, >= 2^24) count as unknown (0). */
  for (int i = 0; i < 7; i++)
    if (!get_i64(o, keys[i], &cv->dims[i]) || cv->dims[i] < 0 || cv->dims[i] >= (1 << 24))
      cv->dims[i] = 0;
  /* 3-D: d and t, and the arrays [d, h, w] (whenever d is there, even an
   * implausible one, which counts as unknown: 0) */
  bool three = cv->three = cJSON_GetObjectItemCaseSensitive(o, MP_RK_CONV.d) != NULL;
  if (!three || !get_i64(o, MP_RK_CONV.d, &cv->d) || cv->d <= 0 || cv->d >= (1 << 24)) cv->d = 0;
  if (!three || !get_i64(o, MP_RK_CONV.t, &cv->t) || cv->t < 0 || cv->t >= (1 << 24)) cv->t = 0;
  const char *const pk[] = {MP_RK_CONV.pad, MP_RK_CONV.stride, MP_RK_CONV.dilation};
  int64_t *dst[] = {cv->pad, cv->stride, cv->dil},
          *depth[] = {&cv->pad_d, &cv->stride_d, &cv->dil_d};
  int first = three ? 1 : 0; /* where the height's entry is */
  for (int i = 0; i < 3; i++) {
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, pk[i]);
    for (int j = 0; j < 2 + first; j++) {
      const cJSON *v = cJSON_GetArrayItem(a, j);
      double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
      int64_t x = d >= 0 && d < (1 << 24) ? (int64_t)d : (i == 0 ? 0 : 1);
      if (j < first)
        *depth[i] = x;
      else
        dst[i][j - first] = x;
    }
  }
  /* Groups that do not divide both channel counts are implausible: 1. */
  int64_t g;
  cv->groups = get_i64(o, MP_RK_CONV.groups, &g) && g > 1 && g < (1 << 24) &&
                       cv->dims[1] % g == 0 && cv->dims[4] % g == 0
                   ? g
                   : 1;
  return 0;
}

static char trans_of(const cJSON *v) {
  return cJSON_IsString(v) && strlen(v->valuestring) == 1 ? v->valuestring[0] : 0;
}

/* An MP_RAW_FP8_VALUE object; a missing or malformed one reads as nothing read. */
static void fp8_value_of(const cJSON *o, mpprof_fp8_value *ret) {
  *ret = (mpprof_fp8_value){0};
  if (!cJSON_IsObject(o)) return;
  get_u64(o, MP_RK_FP8_VALUE.read, &ret->read);
  get_u64(o, MP_RK_FP8_VALUE.unread, &ret->unread);
  const cJSON *lo = cJSON_GetObjectItemCaseSensitive(o, MP_RK_FP8_VALUE.min),
              *hi = cJSON_GetObjectItemCaseSensitive(o, MP_RK_FP8_VALUE.max);
  if (ret->read && cJSON_IsNumber(lo) && cJSON_IsNumber(hi)) {
    ret->min = lo->valuedouble;
    ret->max = hi->valuedouble;
  } else {
    ret->read = 0;
  }
}

static unsigned fp8_scales_of(const cJSON *o) {
#define X(f, json, doc) json,
  static const char *const names[] = {MP_RAW_FP8_SCALES(X)};
#undef X
  unsigned bits = 0;
  for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, names[i]))) bits |= 1u << i;
  return bits;
}

/* The interned string of item; NULL when it is none, or out of memory
 * (*oom set). */
static const char *intern_or_null(mpprof_strpool *pool, const cJSON *item, bool *oom) {
  const char *v = str_of(item), *r = v ? mpprof_intern(pool, v) : NULL;
  if (v && !r) *oom = true;
  return r;
}

/* A site without "ranks": all its calls are its process's, named by rank,
 * else host:pid (the interned name made once per file, in *name_of_p).
 * 0 or -1 (memory). */
static int default_ranks(mpprof_strpool *sp, const mpprof_process *p, const char **name_of_p,
                         mpprof_site *s) {
  s->ranks = calloc(1, sizeof *s->ranks);
  if (!s->ranks) return -1;
  if (*name_of_p) {
    s->ranks[0] = (mpprof_count){.name = *name_of_p, .n = s->calls};
    s->n_ranks = 1;
    return 0;
  }
  char name[256], *long_name = NULL;
  if (p->has_rank)
    snprintf(name, sizeof name, "%" PRId64, p->rank);
  else if (strlen(p->host) < 200)
    snprintf(name, sizeof name, "%s:%" PRId64, p->host, p->pid);
  else if (!(long_name = mpprof_asprintf("%s:%" PRId64, p->host, p->pid)))
    return -1;
  s->ranks[0].name = *name_of_p = mpprof_intern(sp, long_name ? long_name : name);
  free(long_name);
  s->ranks[0].n = s->calls;
  if (!s->ranks[0].name) return -1;
  s->n_ranks = 1;
  return 0;
}

/* Parse one SITE of process p into *s; its tensors are pre (n_pre, taken
 * over) when read already, else o's. *ret_into: the index of the site of m
 * it merges into, else SIZE_MAX; when it merges, s keeps only what merges
 * (no identity strings, no key: site *ret_into has them). 0, or -1 with err
 * set ("" for ENOMEM). */
static int site_from_json(cJSON *o, const mpprof_process *p, mpprof_model *m, mp_stats *scratch,
                          mpprof_tb *text, const char **rank_name, mpprof_site *s,
                          mpprof_role_stats *pre, size_t n_pre, int64_t *ret_id, size_t *ret_into,
                          char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  s->tensors = pre;
  s->n_tensors = n_pre;
  err[0] = 0;
  if (!cJSON_IsObject(o)) {
    snprintf(err, errlen, "not an object");
    return -1;
  }
  members ix;
  members_of(o, &ix);
#define M(key) member(&ix, key)
  const char *api = str_of(M(MP_RK_SITE.api)), *op = str_of(M(MP_RK_SITE.kind)),
             *layer = str_of(M(MP_RK_SITE.layer));
  if (!i64_of(M(MP_RK_SITE.id), ret_id) || !api || !op || !layer ||
      !u64_of(M(MP_RK_SITE.calls), &s->calls)) {
    snprintf(err, errlen, "needs id, api, op, layer and calls");
    return -1;
  }
  const char *key = identity_of(o, text);
  if (!key) return -1;
  *ret_into = mpprof_model_find_site(m, key);
  mpprof_strpool *sp = &m->strings;
  if (*ret_into == SIZE_MAX) { /* else the model's site has the key and the strings below */
    /* a copy of exactly its length (a site keeps it; a shrinking realloc left
     * a small free chunk per site behind, which slowed every later malloc) */
    size_t n = strlen(key) + 1;
    if (!(s->key = malloc(n))) return -1;
    memcpy(s->key, key, n);
    bool oom = false;
    s->api = mpprof_intern(sp, api);
    s->op = mpprof_intern(sp, op);
    s->layer = mpprof_intern(sp, layer);
    s->compute_type = intern_or_null(sp, M(MP_RK_SITE.compute_type), &oom);
    s->math_mode = intern_or_null(sp, M(MP_RK_SITE.math_mode), &oom);
    s->scale_type = intern_or_null(sp, M(MP_RK_SITE.scale_type), &oom);
    s->epilogue = intern_or_null(sp, M(MP_RK_SITE.epilogue), &oom);
    s->conv_math_type = intern_or_null(sp, M(MP_RK_SITE.conv_math), &oom);
    s->module_class = intern_or_null(sp, M(MP_RK_SITE.module_class), &oom);
    if (!s->api || !s->op || !s->layer || oom) return -1;
  }
  const cJSON *ls = M(MP_RK_SITE.loss_scale);
  if (ls && !cJSON_IsNull(ls)) {
    double v = cJSON_IsNumber(ls) ? ls->valuedouble : -1;
    if (!(v > 0) || !isfinite(v)) {
      snprintf(err, errlen, "%s: not a positive number", MP_RK_SITE.loss_scale);
      return -1;
    }
    s->loss_scale = v;
  }
  const char *phase = str_of(M(MP_RK_SITE.phase));
  if (phase && (s->scope_phase = mpprof_phase_parse(phase)) <= 0) {
    snprintf(err, errlen, "phase: unknown phase \"%.40s\"", phase);
    return -1;
  }
  s->batch = 1;
  const char *const counts[] = {
      MP_RK_SITE.scanned_calls, MP_RK_SITE.autotune_calls, MP_RK_SITE.m, MP_RK_SITE.n, MP_RK_SITE.k,
      MP_RK_SITE.batch};
  uint64_t *count_at[] = {&s->scanned_calls, &s->autotune_calls, &s->m, &s->n, &s->k, &s->batch};
  for (int i = 0; i < 6; i++)
    if (opt_u64(M(counts[i]), counts[i], count_at[i], err, errlen)) return -1;
  u64_of(M(MP_RK_SITE.lda), &s->lda);
  u64_of(M(MP_RK_SITE.ldb), &s->ldb);
  u64_of(M(MP_RK_SITE.ldc), &s->ldc);
  u64_of(M(MP_RK_SITE.ldd), &s->ldd);
  s->shapes_merged = cJSON_IsTrue(M(MP_RK_SITE.shapes_merged));
  s->fast_accum = cJSON_IsTrue(M(MP_RK_SITE.fast_accum));
  s->transa = trans_of(M(MP_RK_SITE.transa));
  s->transb = trans_of(M(MP_RK_SITE.transb));
  s->fp8_scales = fp8_scales_of(M(MP_RK_SITE.fp8_scales));
  parse_types(M(MP_RK_SITE.types), s);
  if (parse_conv(M(MP_RK_SITE.conv), s)) return -1;
  uint64_t align = 0;
  if (u64_of(M(MP_RK_SITE.ptr_align), &align)) s->ptr_align = align > 4096 ? 4096 : (unsigned)align;
  const cJSON *sv = M(MP_RK_SITE.fp8_scale_values);
#define X(f, json, doc) json,
  static const char *const fp8_rows[] = {MP_RAW_FP8_SCALES(X)};
#undef X
  mpprof_fp8_values fp8;
  bool any = false;
  for (int i = 0; i < MP_FP8_ROWS; i++) { /* the scales in fp8_scale_values, each amax a key */
    const cJSON *o = i == MP_FP8_ROW_amax_D     ? M(MP_RK_SITE.amax_D)
                     : i == MP_FP8_ROW_amax_aux ? M(MP_RK_SITE.amax_aux)
                                                : cJSON_GetObjectItemCaseSensitive(sv, fp8_rows[i]);
    fp8_value_of(o, &fp8.v[i]);
    any = any || fp8.v[i].read || fp8.v[i].unread;
  }
  if (any) {
    if (!(s->fp8 = malloc(sizeof *s->fp8))) return -1;
    *s->fp8 = fp8;
  }
  const cJSON *gpu_ns = M(MP_RK_SITE.gpu_ns);
  if (opt_u64(gpu_ns, MP_RK_SITE.gpu_ns, &s->gpu_ns, err, errlen)) return -1;
  s->has_gpu_ns = gpu_ns && !cJSON_IsNull(gpu_ns);
  s->cc_major = p->cc_major;
  s->cc_minor = p->cc_minor;
  if (parse_counts(sp, M(MP_RK_SITE.not_scanned), &s->not_scanned, &s->n_not_scanned,
                   MP_RK_SITE.not_scanned, err, errlen) ||
      parse_kernels(sp, M(MP_RK_SITE.kernels), s, err, errlen) ||
      (!pre && parse_tensors(sp, M(MP_RK_SITE.tensors), s, scratch, err, errlen)) ||
      mpprof_shadow_parse(M(MP_RK_SITE.shadow), &s->shadow, err, errlen))
    return -1;
  /* Per-rank calls: a merged file may carry them already. */
  const cJSON *ranks = M(MP_RK_SITE.ranks);
  if (cJSON_IsObject(ranks)) {
    if (parse_counts(sp, ranks, &s->ranks, &s->n_ranks, MP_RK_SITE.ranks, err, errlen)) return -1;
  } else if (default_ranks(sp, p, rank_name, s)) {
    return -1;
  }
#undef M
  return 0;
}

/* Where the value of a site's first top-level "tensors" member starts in
 * the site's text t (n bytes). false when there is none, or some key before
 * it has an escape (cJSON would match its decoded spelling). */
static bool tensors_member(const char *t, size_t n, size_t *ret_off) {
  const char *p = t, *end = t + n;
  size_t tn = strlen(MP_RK_SITE.tensors);
#define WS()                                                                                       \
  while (p < end && mpprof_json_space(*p))                                                         \
  p++
  if (p >= end || *p++ != '{') return false;
  while (true) {
    WS();
    const char *ke = p < end && *p == '"' ? skip_string(p, end) : NULL;
    if (!ke || memchr(p, '\\', (size_t)(ke - p))) return false;
    bool hit = (size_t)(ke - p) == tn + 2 && !memcmp(p + 1, MP_RK_SITE.tensors, tn);
    p = ke;
    WS();
    if (p >= end || *p++ != ':') return false;
    WS();
    if (hit) {
      *ret_off = (size_t)(p - t);
      return p < end && *p == '{';
    }
    const char *ve = skip_value_raw(p, end);
    if (!ve) return false;
    p = ve;
    WS();
    if (p >= end || *p++ != ',') return false;
  }
#undef WS
}

/* A site's tensors read by mpprof_tensors_scan when they are in mpprof's
 * spelling; *ret_rest is then the site's text with an empty object in their
 * place (w->rest), for cJSON to parse. 1 (*ret, *ret_n, *ret_rest,
 * *ret_rest_len set), 0 (cJSON reads them), -1 (memory). */
static int scan_tensors(walk *w, mpprof_strpool *pool, const char *t, size_t n,
                        mpprof_role_stats **ret, size_t *ret_n, const char **ret_rest,
                        size_t *ret_rest_len) {
  size_t off, len;
  if (!tensors_member(t, n, &off)) return 0;
  int rc = mpprof_tensors_scan(pool, t + off, n - off, ret, ret_n, &len);
  if (rc != 1) return rc;
  size_t rest = n - len + 2;
  if (mpprof_grow((void **)&w->rest, &w->rest_cap, rest, 1)) {
    mpprof_site unused = {.tensors = *ret, .n_tensors = *ret_n};
    mpprof_site_free(&unused);
    return -1;
  }
  memcpy(w->rest, t, off);
  memcpy(w->rest + off, "{}", 2);
  memcpy(w->rest + off + 2, t + off + len, n - off - len);
  *ret_rest = w->rest;
  *ret_rest_len = rest;
  return 1;
}

/* ---- a site in mpprof's own spelling, without cJSON ---- */

/* A site read straight from its text into the record, without a cJSON tree:
 * at 100k sites the trees of the members other than tensors, their look-ups
 * and the identity built from them were a fifth of the report's time.
 *
 * A fast path, not a second definition: it takes only a site in the
 * spelling mpprof writes, valid as site_from_json reads it, with nothing
 * site_from_json would read otherwise: no whitespace, keys without escapes
 * each once and each a site key of analysis/raw_format.h, scalars that are
 * strings without escapes or control bytes, integers of at most 15 digits
 * without sign or leading zero, or null; "types" an object of such strings,
 * "kernels" an array of objects of name, count and gpu_ns only, "tensors"
 * what mpprof_tensors_scan reads; no conv, fp8, shadow, not_scanned or ranks
 * member. Anything else answers "not mine" and the site is read by cJSON and
 * site_from_json, which accept it or say what is wrong. Every member's text
 * is then its compact JSON, so the identity is the identity members' texts
 * in identity_of's order. The test report_fast_sites reads the same files
 * both ways and requires the same outputs. */
bool mpprof_raw_fast_sites = true;
size_t mpprof_raw_fast_sites_read;
size_t mpprof_raw_fast_events_read;

#define SF_ENUM_(name, json, ...) SF_##name,
enum { MP_RAW_SITE_ALL_(SF_ENUM_) SF_COUNT };
#undef SF_ENUM_
_Static_assert(SF_COUNT <= 64, "a site's members are marked in a 64-bit word");

typedef struct sf_value {
  const char *p; /* the value's text (a string's without its quotes) */
  uint32_t n;
  char kind;  /* 's' string, 'i' integer, 'z' null, 'o' object, 'a' array */
  uint64_t u; /* an integer's value */
} sf_value;

#define SF_KEY_SLOTS 128
typedef struct sf_keys {
  signed char slot[SF_KEY_SLOTS]; /* field + 1, 0 empty */
  const char *json[SF_COUNT];
  unsigned char len[SF_COUNT];
  int rank[SF_COUNT]; /* identity_rank */
} sf_keys;

static unsigned sf_hash(const char *k, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)k[i]) * 16777619u;
  return h & (SF_KEY_SLOTS - 1);
}

static const sf_keys *sf_keys_ready(void) {
  static sf_keys k;
  static bool filled;
  if (filled) return &k;
#define SF_JSON_(name, json, ...) json,
  static const char *const json[SF_COUNT] = {MP_RAW_SITE_ALL_(SF_JSON_)};
#undef SF_JSON_
  for (int f = 0; f < SF_COUNT; f++) {
    k.json[f] = json[f];
    k.len[f] = (unsigned char)strlen(json[f]);
    k.rank[f] = identity_rank(json[f]);
    if (!k.len[f]) continue; /* roles: no key of its own */
    unsigned h = sf_hash(json[f], k.len[f]);
    while (k.slot[h])
      h = (h + 1) & (SF_KEY_SLOTS - 1);
    k.slot[h] = (signed char)(f + 1);
  }
  filled = true;
  return &k;
}

/* The field of key k (n bytes), or -1. */
static int sf_field(const sf_keys *k, const char *s, size_t n) {
  for (unsigned h = sf_hash(s, n); k->slot[h]; h = (h + 1) & (SF_KEY_SLOTS - 1)) {
    int f = k->slot[h] - 1;
    if (k->len[f] == n && !memcmp(k->json[f], s, n)) return f;
  }
  return -1;
}

/* A key: p at its '"', *p moved past its ':'. */
static bool sf_key(const char **pp, const char *end, const char **ret, size_t *ret_n) {
  const char *p = *pp;
  if (p >= end || *p != '"') return false;
  const char *b = ++p;
  while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
    p++;
  if (p + 1 >= end || *p != '"' || p[1] != ':') return false;
  *ret = b;
  *ret_n = (size_t)(p - b);
  *pp = p + 2;
  return true;
}

/* A scalar (string, integer, null) at *pp into *v. */
static bool sf_scalar(const char **pp, const char *end, sf_value *v) {
  const char *p = *pp;
  if (p >= end) return false;
  if (*p == '"') {
    const char *b = ++p;
    while (p < end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20)
      p++;
    if (p >= end || *p != '"' || p - b > UINT32_MAX) return false;
    *v = (sf_value){.p = b, .n = (uint32_t)(p - b), .kind = 's'};
    *pp = p + 1;
    return true;
  }
  if ((unsigned)(*p - '0') < 10) {
    const char *b = p;
    uint64_t u;
    if (!sf_uint(&p, end, 15, &u)) return false; /* exact as cJSON's double */
    *v = (sf_value){.p = b, .n = (uint32_t)(p - b), .kind = 'i', .u = u};
    *pp = p;
    return true;
  }
  if (end - p >= 4 && !memcmp(p, "null", 4)) {
    *v = (sf_value){.p = p, .n = 4, .kind = 'z'};
    *pp = p + 4;
    return true;
  }
  return false;
}

/* "types": an object of strings, its text in *v. */
static bool sf_types(const char **pp, const char *end, sf_value *v) {
  const char *p = *pp, *b = p;
  if (p >= end || *p++ != '{') return false;
  if (p < end && *p == '}') {
    p++;
  } else {
    while (true) {
      const char *k;
      size_t kn;
      sf_value s;
      if (!sf_key(&p, end, &k, &kn) || !sf_scalar(&p, end, &s) || s.kind != 's') return false;
      if (p < end && *p == ',') {
        p++;
        continue;
      }
      if (p < end && *p == '}') {
        p++;
        break;
      }
      return false;
    }
  }
  *v = (sf_value){.p = b, .n = (uint32_t)(p - b), .kind = 'o'};
  *pp = p;
  return true;
}

#define SF_KERNELS 32
typedef struct sf_kernel {
  sf_value name;
  uint64_t count, gpu_ns;
} sf_kernel;

/* "kernels": an array of {"name", "count", "gpu_ns"} objects. */
static bool sf_kernels(const char **pp, const char *end, sf_kernel *kv, size_t *ret_n) {
  const char *p = *pp;
  size_t n = 0;
  if (p >= end || *p++ != '[') return false;
  if (p < end && *p == ']') {
    *ret_n = 0;
    *pp = p + 1;
    return true;
  }
  while (true) {
    if (n == SF_KERNELS || p >= end || *p++ != '{') return false;
    unsigned seen = 0;
    sf_kernel *k = &kv[n++];
    *k = (sf_kernel){0};
    while (true) {
      const char *key;
      size_t kn;
      sf_value v;
      if (!sf_key(&p, end, &key, &kn) || !sf_scalar(&p, end, &v)) return false;
      unsigned bit;
      if (kn == strlen(MP_RK_KERNEL.name) && !memcmp(key, MP_RK_KERNEL.name, kn) && v.kind == 's')
        k->name = v, bit = 1;
      else if (kn == strlen(MP_RK_KERNEL.count) && !memcmp(key, MP_RK_KERNEL.count, kn) &&
               v.kind == 'i')
        k->count = v.u, bit = 2;
      else if (kn == strlen(MP_RK_KERNEL.gpu_ns) && !memcmp(key, MP_RK_KERNEL.gpu_ns, kn) &&
               v.kind == 'i')
        k->gpu_ns = v.u, bit = 4;
      else
        return false;
      if (seen & bit) return false;
      seen |= bit;
      if (p < end && *p == ',') {
        p++;
        continue;
      }
      if (p < end && *p == '}') {
        p++;
        break;
      }
      return false;
    }
    if ((seen & 3) != 3) return false; /* site_from_json names what is missing */
    if (p < end && *p == ',') {
      p++;
      continue;
    }
    if (p < end && *p == ']') {
      *ret_n = n;
      *pp = p + 1;
      return true;
    }
    return false;
  }
}

/* Site text t (n bytes) of process p read as site_from_json reads it, its
 * tensors too: 1 (*s, *ret_id, *ret_into as there), 0 (not mpprof's
 * spelling, or a site that reader rejects: read it that way; nothing
 * changed but strings interned), -1 (memory). */
static int site_fast(walk *w, const mpprof_process *p, mpprof_model *m, const char *t, size_t n,
                     mpprof_site *s, int64_t *ret_id, size_t *ret_into) {
  const sf_keys *keys = sf_keys_ready();
  sf_value v[SF_COUNT];
  const char *member_at[SF_COUNT]; /* where its "key": starts */
  sf_kernel kv[SF_KERNELS];
  size_t nk = 0;
  uint64_t seen = 0;
  mpprof_strpool *sp = &m->strings;
  mpprof_role_stats *tensors = NULL;
  size_t n_tensors = 0;
  const char *q = t, *end = t + n;
  int rc = 0;
  if (q >= end || *q++ != '{' || q >= end || *q == '}') return 0;
  while (true) {
    const char *k, *at = q;
    size_t kn;
    if (!sf_key(&q, end, &k, &kn)) goto out;
    int f = sf_field(keys, k, kn);
    /* f < SF_COUNT always; said here for GCC's -Warray-bounds under
     * -fsanitize=address, which takes member_at[f] for past the end */
    if (f < 0 || f >= SF_COUNT || seen >> f & 1) goto out;
    seen |= 1ull << f;
    member_at[f] = at;
    bool ok;
    if (f == SF_types) {
      ok = sf_types(&q, end, &v[f]);
    } else if (f == SF_kernels && q < end && *q == 'n') { /* null: none */
      ok = sf_scalar(&q, end, &v[f]) && v[f].kind == 'z';
    } else if (f == SF_kernels) {
      ok = sf_kernels(&q, end, kv, &nk);
      v[f].kind = 'a';
    } else if (f == SF_tensors) {
      size_t len;
      int r = mpprof_tensors_scan(sp, q, (size_t)(end - q), &tensors, &n_tensors, &len);
      if (r < 0) rc = -1;
      ok = r == 1;
      q += ok ? len : 0;
      v[f].kind = 'o';
    } else {
      ok = sf_scalar(&q, end, &v[f]);
    }
    if (!ok) goto out;
    if (q < end && *q == ',') {
      q++;
      continue;
    }
    if (q + 1 == end && *q == '}') break;
    goto out;
  }
  /* members read otherwise, or that must be there */
  const uint64_t other = 1ull << SF_conv | 1ull << SF_fp8_scales | 1ull << SF_fp8_scale_values |
                         1ull << SF_amax_D | 1ull << SF_amax_aux | 1ull << SF_not_scanned |
                         1ull << SF_shadow | 1ull << SF_ranks | 1ull << SF_shapes_merged |
                         1ull << SF_fast_accum;
  const uint64_t need = 1ull << SF_id | 1ull << SF_api | 1ull << SF_kind | 1ull << SF_layer |
                        1ull << SF_calls | 1ull << SF_tensors;
  if (seen & other || (seen & need) != need) goto out;
  if (!(seen >> SF_types & 1)) v[SF_types].kind = 0;
  for (int f = 0; f < SF_COUNT; f++) {
    if (!(seen >> f & 1) || f == SF_types || f == SF_kernels || f == SF_tensors) continue;
    char want; /* 's' or 'i'; null reads as absent for both */
    switch (f) {
    case SF_api:
    case SF_kind:
    case SF_layer:
    case SF_phase:
    case SF_module_class:
    case SF_compute_type:
    case SF_scale_type:
    case SF_math_mode:
    case SF_epilogue:
    case SF_conv_math:
    case SF_transa:
    case SF_transb:
      want = 's';
      break;
    default:
      want = 'i';
    }
    if (v[f].kind != want && v[f].kind != 'z') goto out;
  }
  const sf_value *api = &v[SF_api], *op = &v[SF_kind], *layer = &v[SF_layer];
  if (v[SF_id].kind != 'i' || api->kind != 's' || op->kind != 's' || layer->kind != 's' ||
      v[SF_calls].kind != 'i')
    goto out;
  char phase[32] = "";
  int scope_phase = 0;
  if (seen >> SF_phase & 1 && v[SF_phase].kind == 's') {
    if (v[SF_phase].n >= sizeof phase) goto out;
    memcpy(phase, v[SF_phase].p, v[SF_phase].n);
    phase[v[SF_phase].n] = '\0';
    if ((scope_phase = mpprof_phase_parse(phase)) <= 0) goto out;
  }
  if (seen >> SF_loss_scale & 1 && v[SF_loss_scale].kind == 'i' && !v[SF_loss_scale].u) goto out;

  /* the identity: its members' texts, as identity_of orders them */
  int order[SF_COUNT], k = 0;
  for (int f = 0; f < SF_COUNT; f++) {
    if (!(seen >> f & 1) || !keys->rank[f]) continue;
    int j = k++;
    for (; j && keys->rank[order[j - 1]] > keys->rank[f]; j--)
      order[j] = order[j - 1];
    order[j] = f;
  }
  mpprof_tb b = w->idtext;
  b.n = 0;
  mpprof_tb_put(&b, "{", 1);
  for (int i = 0; i < k; i++) {
    int f = order[i];
    const char *e = v[f].p + v[f].n + (v[f].kind == 's'); /* a string's closing quote */
    if (i) mpprof_tb_put(&b, ",", 1);
    mpprof_tb_put(&b, member_at[f], (size_t)(e - member_at[f]));
  }
  mpprof_tb_put(&b, "}", 2); /* and its NUL */
  w->idtext = b;
  if (b.oom) {
    rc = -1;
    goto out;
  }

  memset(s, 0, sizeof *s);
  s->tensors = tensors;
  s->n_tensors = n_tensors;
  tensors = NULL;
  *ret_id = (int64_t)v[SF_id].u;
  s->calls = v[SF_calls].u;
  *ret_into = mpprof_model_find_site(m, b.p);
#define SF_STR(f) (seen >> (f)&1 && v[f].kind == 's')
#define SF_INTERN(f) (SF_STR(f) ? mpprof_intern_n(sp, v[f].p, v[f].n) : NULL)
#define SF_U64(f, dst) (seen >> (f)&1 && v[f].kind == 'i' ? ((dst) = v[f].u, true) : false)
  if (*ret_into == SIZE_MAX) {
    if (!(s->key = malloc(b.n))) goto oom;
    memcpy(s->key, b.p, b.n);
    const int opt[] = {SF_compute_type, SF_math_mode, SF_scale_type,
                       SF_epilogue,     SF_conv_math, SF_module_class};
    const char **dst[] = {&s->compute_type, &s->math_mode,      &s->scale_type,
                          &s->epilogue,     &s->conv_math_type, &s->module_class};
    s->api = SF_INTERN(SF_api);
    s->op = SF_INTERN(SF_kind);
    s->layer = SF_INTERN(SF_layer);
    if (!s->api || !s->op || !s->layer) goto oom;
    for (int i = 0; i < 6; i++)
      if (SF_STR(opt[i]) && !(*dst[i] = SF_INTERN(opt[i]))) goto oom;
  }
  if (seen >> SF_loss_scale & 1 && v[SF_loss_scale].kind == 'i')
    s->loss_scale = (double)v[SF_loss_scale].u;
  s->scope_phase = scope_phase;
  s->batch = 1;
  SF_U64(SF_scanned_calls, s->scanned_calls);
  SF_U64(SF_autotune_calls, s->autotune_calls);
  SF_U64(SF_m, s->m);
  SF_U64(SF_n, s->n);
  SF_U64(SF_k, s->k);
  SF_U64(SF_batch, s->batch);
  SF_U64(SF_lda, s->lda);
  SF_U64(SF_ldb, s->ldb);
  SF_U64(SF_ldc, s->ldc);
  SF_U64(SF_ldd, s->ldd);
  s->transa = SF_STR(SF_transa) && v[SF_transa].n == 1 ? v[SF_transa].p[0] : 0;
  s->transb = SF_STR(SF_transb) && v[SF_transb].n == 1 ? v[SF_transb].p[0] : 0;
  if (v[SF_types].kind == 'o') { /* as parse_types: the first six, roles cut */
    const char *tq = v[SF_types].p + 1, *te = v[SF_types].p + v[SF_types].n;
    while (s->n_types < 6 && tq + 1 < te) {
      const char *rk;
      size_t rn;
      sf_value d;
      sf_key(&tq, te, &rk, &rn);
      sf_scalar(&tq, te, &d);
      tq++; /* ',' or '}' */
      size_t cut = rn < sizeof s->types[0].role - 1 ? rn : sizeof s->types[0].role - 1;
      memcpy(s->types[s->n_types].role, rk, cut);
      s->types[s->n_types].role[cut] = '\0';
      char name[64];
      s->types[s->n_types].dtype = MP_DTYPE_INVALID;
      if (d.n < sizeof name) {
        memcpy(name, d.p, d.n);
        name[d.n] = '\0';
        s->types[s->n_types].dtype = mp_dtype_from_name(name);
      }
      s->n_types++;
    }
  }
  uint64_t align = 0;
  if (SF_U64(SF_ptr_align, align)) s->ptr_align = align > 4096 ? 4096 : (unsigned)align;
  s->has_gpu_ns = SF_U64(SF_gpu_ns, s->gpu_ns);
  s->cc_major = p->cc_major;
  s->cc_minor = p->cc_minor;
  if (seen >> SF_kernels & 1 && v[SF_kernels].kind == 'a') { /* as parse_kernels */
    if (!(s->kernels = calloc(nk ? nk : 1, sizeof *s->kernels))) goto oom;
    for (size_t i = 0; i < nk; i++) {
      s->kernels[i] = (mpprof_kernel){.count = kv[i].count,
                                      .gpu_ns = kv[i].gpu_ns,
                                      .counters_tc = -1,
                                      .name = mpprof_intern_n(sp, kv[i].name.p, kv[i].name.n)};
      if (!s->kernels[i].name) goto oom;
      s->n_kernels++;
    }
  }
  if (default_ranks(sp, p, &w->rank_name, s)) goto oom;
#undef SF_STR
#undef SF_INTERN
#undef SF_U64
  mpprof_raw_fast_sites_read++;
  return 1;
oom:
  mpprof_site_free(s);
  return -1;
out:
  if (tensors) {
    mpprof_site unused = {.tensors = tensors, .n_tensors = n_tensors};
    mpprof_site_free(&unused);
  }
  return rc;
}

/* ---- the process header ---- */

/* "capture" (MP_RAW_CAPTURE); a file without it recorded everything. 0 or -1. */
static int capture_from_header(const cJSON *h, mpprof_process *p, char *err, size_t errlen) {
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.capture);
  if (!c || cJSON_IsNull(c)) return 0;
  const char *mode = cJSON_IsObject(c) ? get_str(c, MP_RK_CAPTURE.mode) : NULL;
  if (!mode) {
    snprintf(err, errlen, "\"%s\" needs a mode", MP_RK_TOP.capture);
    return -1;
  }
  p->has_capture = true;
  if (!(p->capture_mode = strdup(mode))) return -1;
  const char *nvtx = get_str(c, MP_RK_CAPTURE.nvtx);
  if (nvtx && !(p->capture_nvtx = strdup(nvtx))) return -1;
  const cJSON *steps = cJSON_GetObjectItemCaseSensitive(c, MP_RK_CAPTURE.steps);
  if (cJSON_IsArray(steps) && cJSON_GetArraySize(steps) == 2 &&
      cJSON_IsNumber(cJSON_GetArrayItem(steps, 0)) &&
      cJSON_IsNumber(cJSON_GetArrayItem(steps, 1))) {
    p->has_capture_steps = true;
    p->capture_first = (int64_t)cJSON_GetArrayItem(steps, 0)->valuedouble;
    p->capture_last = (int64_t)cJSON_GetArrayItem(steps, 1)->valuedouble;
  }
  get_i64(c, MP_RK_CAPTURE.captured, &p->capture_captured);
  const cJSON *opened = cJSON_GetObjectItemCaseSensitive(c, MP_RK_CAPTURE.opened);
  p->capture_never_opened = cJSON_IsFalse(opened); /* absent (older files): not known */
  const cJSON *out = cJSON_GetObjectItemCaseSensitive(c, MP_RK_CAPTURE.outside);
  get_i64(out, MP_RK_CAPTURE_OUTSIDE.NOT_STARTED, &p->capture_not_started);
  get_i64(out, MP_RK_CAPTURE_OUTSIDE.STOPPED, &p->capture_stopped);
  return 0;
}

static int process_from_header(const cJSON *h, const char *file, mpprof_process *p, char *err,
                               size_t errlen) {
  memset(p, 0, sizeof *p);
  const char *schema = get_str(h, MP_RK_TOP.schema);
  if (!schema) {
    snprintf(err, errlen, "not an mpprof raw file (no \"schema\" key)");
    return -1;
  }
  if (strcmp(schema, MP_SCHEMA_RAW)) {
    const char *by = get_str(h, MP_RK_TOP.mpprof_version); /* which mpprof reads it */
    if (!strncmp(schema, MP_RAW_SCHEMA_PREFIX, strlen(MP_RAW_SCHEMA_PREFIX)))
      snprintf(err, errlen,
               "schema \"%.40s\"%s%.40s%s is not supported by this mpprof " MPPROF_VERSION_STRING
               " (reads %s)",
               schema, by ? " (written by mpprof " : "", by ? by : "", by ? ")" : "",
               MP_SCHEMA_RAW);
    else
      snprintf(err, errlen, "not an mpprof raw file (schema \"%.40s\")", schema);
    return -1;
  }
  if (!get_i64(h, MP_RK_TOP.pid, &p->pid)) {
    snprintf(err, errlen, "\"pid\" missing or not a number");
    return -1;
  }
  const cJSON *fin = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.final);
  if (fin && !cJSON_IsBool(fin)) {
    snprintf(err, errlen, "\"final\" is not a boolean");
    return -1;
  }
  p->final = !fin || cJSON_IsTrue(fin);
  p->incomplete = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.incomplete));
  get_i64(h, MP_RK_TOP.ppid, &p->ppid);
  p->has_rank = get_i64(h, MP_RK_TOP.rank, &p->rank);
  /* null, absent (a file before the key) or not a size: not known */
  if (!get_i64(h, MP_RK_TOP.world_size, &p->world_size) || p->world_size <= 0) p->world_size = 0;
  get_i64(h, MP_RK_TOP.start_ns, &p->start_ns);
  get_i64(h, MP_RK_TOP.end_ns, &p->end_ns);
  const char *sample_mode = get_str(h, MP_RK_TOP.sample);
  if (sample_mode && !strcmp(sample_mode, "auto"))
    p->sample = 0;
  else if (!get_i64(h, MP_RK_TOP.sample, &p->sample))
    p->sample = 1;
  const cJSON *mr = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.shadow_max_rel);
  double mrv;
  if (mr && cJSON_IsNumber(mr) && !mpprof_json_get_double(mr, &mrv) && mrv > 0)
    p->shadow_max_rel = mrv;
  const char *host = get_str(h, MP_RK_TOP.host);
  p->host = strdup(host ? host : "unknown");
  const char *version = get_str(h, MP_RK_TOP.mpprof_version); /* absent before the key */
  if (version) p->mpprof_version = strdup(version);
  p->file = mpprof_strdup_utf8(file);
  p->scan = strdup(get_str(h, MP_RK_TOP.scan) ? get_str(h, MP_RK_TOP.scan) : "unknown");
  const cJSON *reasons = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.incomplete_reasons);
  p->incomplete_reasons =
      cJSON_IsArray(reasons) ? cJSON_Duplicate(reasons, true) : cJSON_CreateArray();
  const cJSON *argv = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.argv);
  if (cJSON_IsArray(argv)) p->argv = cJSON_Duplicate(argv, true);
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.device);
  if (cJSON_IsObject(dev)) {
    const char *name = get_str(dev, MP_RK_DEVICE.name), *cc = get_str(dev, MP_RK_DEVICE.cc);
    p->device_name = strdup(name ? name : "unknown");
    if (cc) sscanf(cc, "%d.%d", &p->cc_major, &p->cc_minor);
  }
  const cJSON *fw = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.framework);
  const char *fw_name = cJSON_IsObject(fw) ? get_str(fw, MP_RK_FRAMEWORK.name) : NULL;
  if (fw_name) {
    const char *v = get_str(fw, MP_RK_FRAMEWORK.version);
    const char *marks = get_str(fw, MP_RK_FRAMEWORK.backward_marks);
    p->framework = strdup(fw_name);
    p->framework_version = strdup(v ? v : "");
    if (marks && (!strcmp(marks, MP_RAW_MARKS_CXX) || !strcmp(marks, MP_RAW_MARKS_PYTHON)))
      p->backward_marks = strdup(marks);
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(fw, MP_RK_FRAMEWORK.models), *e;
    int nm = cJSON_IsArray(models) ? cJSON_GetArraySize(models) : 0;
    p->models = nm ? calloc((size_t)nm, sizeof *p->models) : NULL;
    const cJSON *walk = p->models ? models : NULL;
    cJSON_ArrayForEach(e, walk) {
      const char *name = get_str(e, MP_RK_MODEL.name), *cls = get_str(e, MP_RK_MODEL.module_class);
      if (!name || !cls || !*cls) continue; /* not one: left out */
      struct mpprof_named_model *d = &p->models[p->n_models];
      d->name = strdup(name);
      d->module_class = strdup(cls);
      if (!d->name || !d->module_class) {
        free(d->name);
        free(d->module_class);
        continue;
      }
      p->n_models++;
    }
  }
  const cJSON *cupti = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.cupti);
  const char *st = cJSON_IsObject(cupti) ? get_str(cupti, MP_RK_CUPTI.status) : NULL;
  p->cupti_status = strdup(st ? st : "missing");
  if (cJSON_IsObject(cupti)) get_i64(cupti, MP_RK_CUPTI.dropped_records, &p->cupti_dropped);
  const cJSON *un = cJSON_GetObjectItemCaseSensitive(cupti, MP_RK_CUPTI.unattributed_kernels);
  if (cJSON_IsObject(un)) {
    /* Only well-formed entries pass: {"kernels": n, "gpu_ns": n, "example": "..."} per library. */
    p->unattributed_kernels = cJSON_CreateObject();
    const cJSON *lib;
    cJSON_ArrayForEach(lib, un) {
      uint64_t n = 0, ns = 0;
      const char *ex = get_str(lib, MP_RK_UNATTRIBUTED.example);
      if (!lib->string || !get_u64(lib, MP_RK_UNATTRIBUTED.kernels, &n) || !n) continue;
      get_u64(lib, MP_RK_UNATTRIBUTED.gpu_ns, &ns);
      cJSON *e = cJSON_AddObjectToObject(p->unattributed_kernels, lib->string);
      if (!e) continue;
      cJSON_AddNumberToObject(e, MP_RK_UNATTRIBUTED.kernels, (double)n);
      cJSON_AddNumberToObject(e, MP_RK_UNATTRIBUTED.gpu_ns, (double)ns);
      cJSON_AddStringToObject(e, MP_RK_UNATTRIBUTED.example, ex ? ex : "");
    }
  }
  const cJSON *tcc = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.tc_counters);
  if (cJSON_IsObject(tcc)) { /* only with --tc-counters */
    const char *ts = get_str(tcc, MP_RK_TC_COUNTERS.status),
               *why = get_str(tcc, MP_RK_TC_COUNTERS.reason),
               *chip = get_str(tcc, MP_RK_TC_COUNTERS.chip);
    p->tc_counters_status = strdup(ts ? ts : "missing");
    if (why) p->tc_counters_reason = strdup(why);
    if (chip) p->tc_counters_chip = strdup(chip);
    get_i64(tcc, MP_RK_TC_COUNTERS.kernels_profiled, &p->tc_counters_kernels);
    const cJSON *sample = cJSON_GetObjectItemCaseSensitive(tcc, MP_RK_TC_COUNTERS.sample);
    if (cJSON_IsString(sample)) p->tc_counters_sample = strdup(sample->valuestring);
    if (cJSON_IsNumber(sample))
      p->tc_counters_sample = mpprof_asprintf("%.0f", sample->valuedouble);
    const cJSON *metrics = cJSON_GetObjectItemCaseSensitive(tcc, MP_RK_TC_COUNTERS.metrics);
    if (cJSON_IsArray(metrics)) p->tc_counters_metrics = cJSON_Duplicate(metrics, true);
    get_i64(tcc, MP_RK_TC_COUNTERS.passes, &p->tc_counters_passes);
    get_i64(tcc, MP_RK_TC_COUNTERS.ops_profiled, &p->tc_counters_ops_profiled);
    get_i64(tcc, MP_RK_TC_COUNTERS.ops_unmatched, &p->tc_counters_ops_unmatched);
    get_i64(tcc, MP_RK_TC_COUNTERS.ops_skipped, &p->tc_counters_ops_skipped);
    if (!p->tc_counters_status) return -1;
  }
  const cJSON *tr = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.training);
  if (tr && !cJSON_IsNull(tr)) {
    if (!cJSON_IsObject(tr)) {
      snprintf(err, errlen, "\"%s\" is not an object", MP_RK_TOP.training);
      return -1;
    }
    if (!(p->training = cJSON_Duplicate(tr, true))) return -1;
  }
  p->forked = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.forked));
  const char *unprofiled = get_str(h, MP_RK_TOP.unprofiled);
  if (unprofiled && !(p->unprofiled = strdup(unprofiled))) return -1;
  get_i64(h, MP_RK_TOP.calls, &p->raw_calls);
  get_i64(h, MP_RK_TOP.failed_calls, &p->failed_calls);
  get_i64(h, MP_RK_TOP.not_attributed, &p->not_attributed);
  const cJSON *nvtx = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.nvtx);
  get_i64(nvtx, MP_RK_NVTX.marks, &p->nvtx_marks);
  get_i64(nvtx, MP_RK_NVTX.start_end_ranges, &p->nvtx_start_end_ranges);
  if (capture_from_header(h, p, err, errlen)) return -1;
  const cJSON *tl = cJSON_GetObjectItemCaseSensitive(h, MP_RK_TOP.timeline);
  int64_t *caps[] = {&p->max_events, &p->events_dropped, &p->max_ranges, &p->ranges_dropped,
                     &p->kernel_events_dropped};
  const char *cap_keys[] = {MP_RK_TIMELINE.max_events, MP_RK_TIMELINE.events_dropped,
                            MP_RK_TIMELINE.max_ranges, MP_RK_TIMELINE.ranges_dropped,
                            MP_RK_TIMELINE.kernel_events_dropped};
  for (size_t i = 0; i < sizeof caps / sizeof caps[0]; i++)
    if (!cJSON_IsObject(tl) || !get_i64(tl, cap_keys[i], caps[i])) *caps[i] = -1;
  if (!p->host || !p->file || !p->scan || !p->incomplete_reasons || !p->cupti_status) return -1;
  return 0;
}

/* ---- one file ---- */

typedef struct id_map {
  int64_t raw;
  size_t idx;
} id_map;

static int id_cmp(const void *a, const void *b) {
  int64_t x = ((const id_map *)a)->raw, y = ((const id_map *)b)->raw;
  return (x > y) - (x < y);
}

static const char *base_name(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* " (from INPUT)" when the raw file at path was brought from an input
 * (mpprof merge), else "". */
static const char *origin_note(const mpprof_model *m, const char *path, char *buf, size_t len) {
  const char *from = m->raw_origin ? m->raw_origin(m->raw_origin_ctx, base_name(path)) : NULL;
  if (!from) return "";
  snprintf(buf, len, " (from %s)", from);
  return buf;
}

/* pp is the program mpprof run waited for, whose pid was pid (0: not
 * known): this host's process of that pid. */
static bool program_is(long pid, const mpprof_process *pp) {
  char host[256];
  if (!pid || pp->pid != pid || !pp->host) return false;
  if (gethostname(host, sizeof host) != 0) return false;
  host[sizeof host - 1] = '\0';
  return strcmp(host, pp->host) == 0;
}

/* Only where a fork child of the program wrote one (a fork without exec:
 * the main process ran the program's own code, as a launcher, a shell,
 * torchrun, a Python subprocess, does not): a launcher's missing raw file is
 * no loss. */
long mpprof_find_program_without_raw_file(const mpprof_model *m) {
  long pid = m->exited_pid ? m->exited_pid : m->killed_pid;
  if (!pid || !m->n_procs) return 0;
  bool forked_from_it = false;
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    if (program_is(pid, p)) return 0;
    if (p->forked && p->ppid == pid) forked_from_it = true;
  }
  return forked_from_it ? pid : 0;
}

/* "; N KiB free on its file system" for the file at path ("" when
 * unknown): a full disk or quota is the likely cause of a failed write. */
static const char *free_space_note(const char *path, char *buf, size_t len) {
  struct statvfs vs;
  if (statvfs(path, &vs) != 0) return "";
  snprintf(buf, len, "; %llu KiB free on its file system",
           (unsigned long long)vs.f_bavail * vs.f_frsize / 1024);
  return buf;
}

static int skip_file(mpprof_model *m, const char *path, const char *reason, FILE *warn) {
  char from[4200];
  if (warn)
    mpprof_fprint_term(warn, "mpprof: skipping %s%s: %s\n", path,
                       origin_note(m, path, from, sizeof from), reason);
  m->incomplete = true; /* the report covers less than the run */
  return mpprof_model_add_skipped(m, base_name(path), reason) ? -1 : 1;
}

static bool same_process(const mpprof_process *a, const mpprof_process *b) {
  return a->pid == b->pid && a->start_ns == b->start_ns && !strcmp(a->host, b->host);
}

/* "ranges" and "kernel_events" into w->rg / w->kv; 0, 1 (invalid: err), -1 (memory). */
static int parse_timeline(walk *w, const mpprof_model *m, const size_t *at,
                          const mpprof_pending *pend, const size_t *into, const id_map *ids,
                          size_t ns, char *err, size_t errlen) {
  w->rg = calloc(w->ranges.n ? w->ranges.n : 1, sizeof *w->rg);
  w->kv = calloc(w->kevents.n ? w->kevents.n : 1, sizeof *w->kv);
  if (!w->rg || !w->kv) return -1;
  for (size_t i = 0; i < w->ranges.n; i++) {
    const char *t = element(w, &w->ranges, i);
    if (!t) return element_failed(w, err, errlen);
    cJSON *o = mpprof_object_tree(t, w->ranges.v[i].len);
    int64_t thread = 0, depth = 0, t0 = 0, t1 = 0;
    const char *name = o ? get_str(o, MP_RK_RANGE.name) : NULL;
    bool ok = name && get_i64(o, MP_RK_RANGE.start_ns, &t0) && get_i64(o, MP_RK_RANGE.end_ns, &t1);
    if (ok) {
      t0 = exact_member(t, w->ranges.v[i].len, MP_RK_RANGE.start_ns, t0);
      t1 = exact_member(t, w->ranges.v[i].len, MP_RK_RANGE.end_ns, t1);
      get_i64(o, MP_RK_RANGE.thread, &thread);
      get_i64(o, MP_RK_RANGE.depth, &depth);
      w->rg[i] = (mpprof_range){.depth = depth < 0 ? 0 : (uint32_t)depth,
                                .thread = (uint64_t)thread,
                                .start_ns = t0,
                                .end_ns = t1 < t0 ? t0 : t1,
                                .name = strdup(name)};
    }
    cJSON_Delete(o);
    if (!ok) {
      snprintf(err, errlen, "ranges[%zu]: needs name, start_ns and end_ns", i);
      return 1;
    }
    if (!w->rg[i].name) return -1;
  }
  for (size_t i = 0; i < w->kevents.n; i++) {
    const char *t = element(w, &w->kevents, i);
    if (!t) return element_failed(w, err, errlen);
    cJSON *o = mpprof_object_tree(t, w->kevents.v[i].len);
    int64_t sid = 0, call = 0, k = 0, stream = 0, t0 = 0, t1 = 0;
    bool ok =
        o && get_i64(o, MP_RK_KERNEL_EVENT.site, &sid) &&
        get_i64(o, MP_RK_KERNEL_EVENT.call, &call) && get_i64(o, MP_RK_KERNEL_EVENT.kernel, &k) &&
        get_i64(o, MP_RK_KERNEL_EVENT.start_ns, &t0) && get_i64(o, MP_RK_KERNEL_EVENT.end_ns, &t1);
    if (ok) {
      get_i64(o, MP_RK_KERNEL_EVENT.stream, &stream);
      t0 = exact_member(t, w->kevents.v[i].len, MP_RK_KERNEL_EVENT.start_ns, t0);
      t1 = exact_member(t, w->kevents.v[i].len, MP_RK_KERNEL_EVENT.end_ns, t1);
    }
    cJSON_Delete(o);
    id_map key = {sid, 0};
    const id_map *hit = ok ? bsearch(&key, ids, ns, sizeof *ids, id_cmp) : NULL;
    bool fresh = hit && into[hit->idx] == SIZE_MAX; /* else a pending merge */
    if (!hit || k < 0 ||
        (size_t)k >= (fresh ? m->sites[at[hit->idx]].n_kernels : pend[hit->idx].n_kernels)) {
      snprintf(err, errlen, "kernel_events[%zu]: %s", i,
               ok ? "refers to a site or kernel that is not in the file"
                  : "needs site, call, kernel, start_ns and end_ns");
      return 1;
    }
    w->kv[i] = (mpprof_kevent){
        .site = (uint32_t)hit->idx,
        .call = (uint32_t)call,
        .stream = (uint64_t)stream,
        .start_ns = t0,
        .end_ns = t1 < t0 ? t0 : t1,
        .name = strdup(fresh ? m->sites[at[hit->idx]].kernels[k].name
                             : mpprof_pending_kernel_name(&pend[hit->idx], (size_t)k))};
    if (!w->kv[i].name) return -1;
  }
  return 0;
}

/* An event in mpprof's own spelling (profiler/rawwrite.c: MP_RAW_EVENT's
 * members in its order, "call" optional, no whitespace, the stream string as
 * sf_scalar reads it): its members in ret[], read in place, as the cJSON path
 * reads them; how many (5 or 6). 0 for any other text, which the cJSON path
 * reads. Integers take up to 19 digits (a CLOCK_REALTIME t_ns has 19) and
 * become what that path makes of them: the double nearest the value (strtod's
 * and the conversion's rounding agree), within +-2^61 (i64_of), truncated;
 * t_ns then to the nanosecond, as exact_member reads it there. */
static int event_fast(const char *t, size_t n, sf_value ret[6]) {
#define EV_JSON_(name, json, ...) json,
  static const char *const keys[] = {MP_RAW_EVENT(EV_JSON_)};
#undef EV_JSON_
  _Static_assert(sizeof keys / sizeof keys[0] == 6, "an event's members, stream the fifth");
  const char *p = t, *end = t + n;
  if (p >= end || *p++ != '{') return 0;
  int i = 0;
  for (; i < 6 && p < end; i++) {
    if (i == 5 && *p == '}') break; /* no "call" */
    if (i && *p++ != ',') return 0;
    const char *k;
    size_t kn;
    if (!sf_key(&p, end, &k, &kn) || strlen(keys[i]) != kn || memcmp(keys[i], k, kn)) return 0;
    if (i == 4) {
      if (!sf_scalar(&p, end, &ret[i]) || ret[i].kind != 's') return 0;
      continue;
    }
    uint64_t u;
    if (!sf_uint(&p, end, 19, &u)) return 0;
    double d = (double)u;
    if (d > 0x1p61) return 0;
    int64_t v = (int64_t)d;
    if (i == 1) v = exact_integer(u, false, v); /* t_ns */
    ret[i] = (sf_value){.kind = 'i', .u = (uint64_t)v};
  }
  return i >= 5 && p + 1 == end && *p == '}' ? i : 0;
}

/* Parse the mapped file into temporaries; 0 ok, 1 invalid (reason in err), -1 ENOMEM. */

static int parse_file(walk *w, const char *path, mpprof_model *m, mpprof_process *p,
                      size_t **ret_at, mpprof_pending **ret_pend, size_t **ret_into,
                      id_map **ret_ids, mp_stats *scratch, char *err, size_t errlen) {
  int walked = walk_top(w);
  if (walked) note_shrink(w);
  if (w->oom) return -1;
  if (w->rerr[0]) { /* as if nothing had been read */
    snprintf(err, errlen, "%s", w->rerr);
    return 1;
  }
  if (walked) {
    if (!w->err[0]) return -1;
    snprintf(err, errlen, "%s", w->err);
    return 1;
  }
  if (process_from_header(w->header, base_name(path), p, err, errlen)) return err[0] ? 1 : -1;
  if (w->has_exact_ns[0]) p->start_ns = w->exact_ns[0];
  if (w->has_exact_ns[1]) p->end_ns = w->exact_ns[1];
  p->has_nonfinite_t_ns = w->has_exact_nf_t_ns;
  p->nonfinite_t_ns = w->exact_nf_t_ns;
  if (!w->has_sites) {
    snprintf(err, errlen, "no \"sites\" array");
    return 1;
  }
  size_t ns = w->sites.n;
  /* Site i is a new site, staged after the model's (m->sites[at[i]]), or
   * merges into one of the model (pend[i]; a calloc'd array's pages not
   * written cost no memory). */
  size_t *at = malloc((ns ? ns : 1) * sizeof *at), n_new = 0;
  mpprof_pending *pend = calloc(ns ? ns : 1, sizeof *pend);
  size_t *into = malloc((ns ? ns : 1) * sizeof *into);
  id_map *ids = calloc(ns ? ns : 1, sizeof *ids);
  *ret_at = at;
  *ret_pend = pend;
  *ret_into = into;
  *ret_ids = ids;
  /* Event i is staged after the model's events (m->events[m->n_events + i]),
   * as new sites are after its sites: the commit completes them in place. */
  if (!at || !pend || !into || !ids ||
      mpprof_reserve((void **)&m->events, &m->cap_events, m->n_events + w->events.n,
                     sizeof *m->events))
    return -1;
  /* NULL while the model holds no event and this file brings none (no
   * offset to a null pointer: ev is then never indexed). */
  mpprof_event *ev = m->events ? m->events + m->n_events : NULL;
  for (size_t i = 0; i < ns; i++) {
    const char *t = element(w, &w->sites, i);
    if (!t) return element_failed(w, err, errlen);
    int64_t rid = 0;
    mpprof_site cur;
    size_t len = w->sites.v[i].len;
    int fast = mpprof_raw_fast_sites ? site_fast(w, p, m, t, len, &cur, &rid, &into[i]) : 0;
    if (fast < 0) return -1;
    if (!fast) {
      mpprof_role_stats *pre = NULL;
      size_t n_pre = 0;
      if (scan_tensors(w, &m->strings, t, len, &pre, &n_pre, &t, &len) < 0) return -1;
      bool arena = mpprof_json_arena_begin();
      cJSON *o = mpprof_object_tree(t, len);
      char e[200] = "";
      int rc = o ? site_from_json(o, p, m, scratch, &w->idtext, &w->rank_name, &cur, pre, n_pre,
                                  &rid, &into[i], e, sizeof e)
                 : -1;
      if (!o && pre) { /* not taken over */
        mpprof_site unused = {.tensors = pre, .n_tensors = n_pre};
        mpprof_site_free(&unused);
      }
      cJSON_Delete(o);
      if (arena) mpprof_json_arena_end();
      if (rc) {
        if (o) mpprof_site_free(&cur);
        if (o && !e[0]) return -1;
        snprintf(err, errlen, "sites[%zu]: %s", i, o ? e : "not valid JSON");
        return 1;
      }
    }
    char e[200];
    if (site_impossible(&cur, e, sizeof e)) {
      mpprof_site_free(&cur);
      snprintf(err, errlen, "sites[%zu]: %s", i, e);
      return 1;
    }
    p->calls += cur.calls;
    if (into[i] == SIZE_MAX) {
      if (mpprof_site_pack_tensors(&cur, &w->pack) ||
          (at[i] = mpprof_model_stage(m, n_new)) == SIZE_MAX) {
        mpprof_site_free(&cur);
        return -1;
      }
      m->sites[at[i]] = cur;
      n_new++;
    } else {
      int packed = mpprof_pending_pack(&cur, &w->pack, &pend[i]);
      mpprof_site_free(&cur);
      if (packed) return -1;
    }
    w->parsed = i + 1;
    ids[i] = (id_map){rid, i};
  }
  qsort(ids, ns, sizeof *ids, id_cmp);
  for (size_t i = 1; i < ns; i++)
    if (ids[i].raw == ids[i - 1].raw) {
      snprintf(err, errlen, "two sites with id %" PRId64, ids[i].raw);
      return 1;
    }
  const cJSON *nf = cJSON_GetObjectItemCaseSensitive(p->training, MP_RK_TRAINING.first_nonfinite);
  if (cJSON_IsObject(nf)) {
    int64_t sid;
    id_map key = {0, 0}, *hit = NULL;
    if (get_i64(nf, MP_RK_NONFINITE.site, &sid)) {
      key.raw = sid;
      hit = bsearch(&key, ids, ns, sizeof *ids, id_cmp);
    }
    if (!hit) {
      snprintf(err, errlen, "training.first_nonfinite: refers to a site that is not in the file");
      return 1;
    }
    size_t to = into[hit->idx];
    const char *sk = m->sites[to == SIZE_MAX ? at[hit->idx] : to].key;
    if (!(p->nonfinite_site_key = strdup(sk))) return -1;
  }
  for (size_t i = 0; i < w->events.n; i++) {
    const char *text = element(w, &w->events, i);
    if (!text) return element_failed(w, err, errlen);
    int64_t sid, t = 0, dur = 0, thread = 0, call = -1;
    sf_value v[6];
    int nv = mpprof_raw_fast_sites ? event_fast(text, w->events.v[i].len, v) : 0;
    bool ok = nv > 0;
    if (ok) {
      sid = (int64_t)v[0].u, t = (int64_t)v[1].u, dur = (int64_t)v[2].u, thread = (int64_t)v[3].u;
      if (nv == 6) call = (int64_t)v[5].u;
      char stream[32];
      if (v[4].n < sizeof stream) {
        memcpy(stream, v[4].p, v[4].n);
        stream[v[4].n] = '\0';
        ev[i].stream = strtoull(stream, NULL, 0);
      } else {
        ok = false;
      }
      mpprof_raw_fast_events_read += ok;
    }
    if (!ok) {
      bool arena = mpprof_json_arena_begin();
      cJSON *o = mpprof_object_tree(text, w->events.v[i].len);
      call = -1, t = dur = thread = 0;
      ok = o && get_i64(o, MP_RK_EVENT.site, &sid) && get_i64(o, MP_RK_EVENT.t_ns, &t);
      if (ok) {
        t = exact_member(text, w->events.v[i].len, MP_RK_EVENT.t_ns, t);
        if (!get_i64(o, MP_RK_EVENT.call, &call) || call < 0) call = -1;
        get_i64(o, MP_RK_EVENT.dur_ns, &dur);
        get_i64(o, MP_RK_EVENT.thread, &thread);
        const char *stream = get_str(o, MP_RK_EVENT.stream);
        ev[i].stream = stream ? strtoull(stream, NULL, 0) : 0;
      }
      cJSON_Delete(o);
      if (arena) mpprof_json_arena_end();
    }
    id_map key = {ok ? sid : 0, 0}, *hit = ok ? bsearch(&key, ids, ns, sizeof *ids, id_cmp) : NULL;
    if (!hit) {
      snprintf(err, errlen, "events[%zu]: %s", i,
               ok ? "refers to a site that is not in the file" : "needs site and t_ns");
      return 1;
    }
    ev[i].site = (uint32_t)hit->idx;
    ev[i].t_ns = t;
    ev[i].dur_ns = dur < 0 ? 0 : dur;
    ev[i].thread = (uint64_t)thread;
    ev[i].call = call;
  }
  int rc = parse_timeline(w, m, at, pend, into, ids, ns, err, errlen);
  if (rc) return rc;
  p->n_sites = ns;
  p->n_events = w->events.n;
  return 0;
}

/* Open a raw file for the two passes. Regular files only, opened without
 * blocking (a FIFO must not hang the report). 0, 1 (err says why to skip
 * it), -1 (memory). */
/* name in directory at (AT_FDCWD: a path). A symbolic link is not followed:
 * raw files are mpprof's own regular files, and a link left in DIR/raw (by
 * `--force`, which deletes only regular files) would bring another run's
 * data, or any file, into the report. */
static int open_raw(int at, const char *name, walk *w, char *err, size_t errlen) {
  int fd = openat(at, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  struct stat st;
  if (fd < 0 && errno == ELOOP) {
    snprintf(err, errlen, "a symbolic link: not read (raw files are mpprof's own regular files)");
    return 1;
  }
  if (fd < 0 || fstat(fd, &st) != 0) {
    snprintf(err, errlen, "cannot read: %s", strerror(errno));
    if (fd >= 0) close(fd);
    return 1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "not a regular file");
    close(fd);
    return 1;
  }
  if (st.st_size == 0) {
    close(fd);
    snprintf(err, errlen, "empty file");
    return 1;
  }
  w->fd = fd;
  w->size = (size_t)st.st_size;
  w->cap = w->size < WINDOW ? w->size : WINDOW;
  if (!(w->buf = malloc(w->cap))) {
    close(fd);
    return -1;
  }
  w->p = w->end = w->buf;
  return 0;
}

/* The raw file name in directory dir_fd, called path in messages. */
static int read_raw_at(mpprof_model *m, int dir_fd, const char *name, const char *path,
                       FILE *warn) {
  char err[256] = "";
  walk w = {.fd = -1};
  int rc0 = open_raw(dir_fd, name, &w, err, sizeof err);
  if (rc0) return rc0 < 0 ? -1 : skip_file(m, path, err, warn);
  mp_stats *scratch = malloc(2 * sizeof *scratch);
  mpprof_process p = {0};
  size_t *at = NULL, committed = 0; /* sites of the file the model holds */
  mpprof_pending *pend = NULL;
  id_map *ids = NULL;
  size_t *into = NULL;
  int rc =
      scratch ? parse_file(&w, path, m, &p, &at, &pend, &into, &ids, scratch, err, sizeof err) : -1;
  size_t ns = w.sites.n;
  bool dup = false;
  if (rc == 0)
    for (size_t i = 0; i < m->n_procs && !dup; i++)
      if (same_process(&m->procs[i], &p)) {
        dup = true;
        snprintf(err, sizeof err,
                 "same process as %s (host %s, pid %" PRId64 "): not counted twice",
                 m->procs[i].file, p.host, p.pid);
        rc = 1;
      }
  if (rc == 0) {
    /* Commit: nothing above changed what the model holds (new sites are
     * staged after its own). */
    if (mpprof_grow((void **)&m->procs, &m->cap_procs, m->n_procs + 1, sizeof *m->procs) ||
        mpprof_grow((void **)&m->ranges, &m->cap_ranges, m->n_ranges + w.ranges.n,
                    sizeof *m->ranges) ||
        mpprof_grow((void **)&m->kevents, &m->cap_kevents, m->n_kevents + w.kevents.n,
                    sizeof *m->kevents)) {
      rc = -1;
    } else {
      uint32_t proc = (uint32_t)m->n_procs;
      m->procs[m->n_procs++] = p;
      memset(&p, 0, sizeof p);
      size_t *idx = malloc((ns ? ns : 1) * sizeof *idx);
      if (!idx) rc = -1;
      for (size_t i = 0; rc == 0 && i < ns; i++) {
        committed = i + 1; /* its staged record or packed one is used up */
        if (into[i] == SIZE_MAX) {
          if (mpprof_model_add_staged(m, at[i], &idx[i])) rc = -1;
          continue;
        }
        mpprof_site t;
        idx[i] = into[i];
        if (mpprof_pending_unpack(&pend[i], &m->strings, &t)) {
          mpprof_site_free(&t);
          rc = -1;
        } else if (mpprof_model_merge_site(m, into[i], &t)) {
          rc = -1;
        }
        mpprof_pending_free(&pend[i]); /* early: the merge may allocate */
      }
      for (size_t i = 0; rc == 0 && i < w.events.n; i++) { /* staged by parse_file */
        mpprof_event *e = &m->events[m->n_events++];
        e->site = (uint32_t)idx[e->site];
        e->proc = proc;
      }
      for (size_t i = 0; rc == 0 && i < w.ranges.n; i++) {
        w.rg[i].proc = proc;
        m->ranges[m->n_ranges++] = w.rg[i];
        w.rg[i].name = NULL; /* the model's now */
      }
      for (size_t i = 0; rc == 0 && i < w.kevents.n; i++) {
        w.kv[i].site = (uint32_t)idx[w.kv[i].site];
        w.kv[i].proc = proc;
        m->kevents[m->n_kevents++] = w.kv[i];
        w.kv[i].name = NULL;
      }
      free(idx);
      mpprof_process *pp = &m->procs[proc];
      if (!pp->final || pp->incomplete) m->incomplete = true;
      char from[4200], free_note[96];
      pp->final_unwritten = !pp->final && program_is(m->exited_pid, pp);
      pp->killed_signal =
          !pp->final && m->killed_signal && program_is(m->killed_pid, pp) ? m->killed_signal : 0;
      if (pp->final_unwritten && warn)
        mpprof_fprint_term(warn,
                           "mpprof: %s%s is a checkpoint (\"final\": false): process %" PRId64
                           " exited (status %d) but its final raw file could not be written "
                           "(MPPROF_LOG=1 says why%s): the ops after this checkpoint are "
                           "missing\n",
                           path, origin_note(m, path, from, sizeof from), pp->pid, m->exit_status,
                           free_space_note(path, free_note, sizeof free_note));
      else if (pp->killed_signal && warn)
        mpprof_fprint_term(warn,
                           "mpprof: %s%s is a checkpoint (\"final\": false): process %" PRId64
                           " was killed by %s: the ops after this checkpoint are missing\n",
                           path, origin_note(m, path, from, sizeof from), pp->pid,
                           mpprof_signal_text(pp->killed_signal).s);
      else if (!pp->final && warn)
        mpprof_fprint_term(warn,
                           "mpprof: %s%s is a checkpoint (\"final\": false): process %" PRId64
                           " did not finish; its data is incomplete\n",
                           path, origin_note(m, path, from, sizeof from), pp->pid);
    }
  }
  if (rc == 1) {
    bool was_incomplete = m->incomplete;
    rc = skip_file(m, path, err, warn);
    if (dup) m->incomplete = was_incomplete; /* nothing is missing: it was counted once */
  }
  for (size_t i = committed; i < w.parsed; i++) /* what the model did not take */
    if (into[i] == SIZE_MAX)
      mpprof_site_free(&m->sites[at[i]]);
    else
      mpprof_pending_free(&pend[i]);
  free(at);
  free(pend);
  free(into);
  free(ids);
  mpprof_process_free(&p);
  free(scratch);
  cJSON_Delete(w.header);
  free(w.sites.v);
  free(w.events.v);
  for (size_t i = 0; w.rg && i < w.ranges.n; i++)
    free(w.rg[i].name);
  for (size_t i = 0; w.kv && i < w.kevents.n; i++)
    free(w.kv[i].name);
  free(w.rg);
  free(w.kv);
  free(w.ranges.v);
  free(w.kevents.v);
  free(w.buf);
  free(w.rest);
  free(w.idtext.p);
  free(w.pack.p);
  close(w.fd);
  mpprof_json_arena_release();
  return rc;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int mpprof_read_raw_file(mpprof_model *m, const char *path, FILE *warn) {
  return read_raw_at(m, AT_FDCWD, path, path, warn);
}

int mpprof_read_raw_dir(mpprof_model *m, const char *out_dir, FILE *warn, mpprof_error *ret_error) {
  char *dir = mpprof_asprintf("%s/raw", out_dir);
  if (!dir) {
    mpprof_error_set(ret_error, ENOMEM, "report: out of memory");
    return -1;
  }
  /* OUT as the user named it, raw/ below it never through a link (as the
   * raw files are written: common/safefile.h). */
  int out = mpp_sf_open_dir(AT_FDCWD, out_dir, MPP_SF_USER_PATH);
  int raw = out < 0 ? out : mpp_sf_open_dir(out, "raw", 0);
  if (out >= 0) close(out);
  DIR *d = raw < 0 ? NULL : fdopendir(raw);
  if (!d) {
    int e = raw < 0 ? -raw : errno;
    if (raw >= 0) close(raw);
    struct stat st;
    if (e == ELOOP || (e == ENOTDIR && lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)))
      mpprof_error_set(ret_error, e,
                       "%s: a symbolic link: not read (raw/ is mpprof's own directory)", dir);
    else
      mpprof_error_set(ret_error, e, "%s: %s", dir, strerror(e));
    free(dir);
    return -1;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
    if (mpprof_grow((void **)&names, &cap, n + 1, sizeof *names) ||
        !(names[n++] = strdup(e->d_name))) {
      rc = -1;
      break;
    }
  }
  if (rc == 0 && n) qsort(names, n, sizeof *names, name_cmp); /* deterministic order */
  for (size_t i = 0; rc == 0 && i < n; i++) {
    char *path = mpprof_asprintf("%s/%s", dir, names[i]);
    if (!path || read_raw_at(m, dirfd(d), names[i], path, warn) < 0) rc = -1;
    free(path);
  }
  closedir(d);
  for (size_t i = 0; i < n; i++)
    free(names[i]);
  free(names);
  free(dir);
  if (rc) mpprof_error_set(ret_error, ENOMEM, "report: out of memory");
  return rc;
}
