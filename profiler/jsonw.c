/* Streaming JSON writer (see jsonw.h). Output is compact, one document. */
#include "jsonw.h"

#include "common/utf8.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mpp_jw_init(mpp_jw *w) {
  memset(w, 0, sizeof *w);
  w->first[0] = true;
}

void mpp_jw_init_fixed(mpp_jw *w, char *buf, size_t cap) {
  mpp_jw_init(w);
  w->buf = buf;
  w->cap = cap;
  w->fixed = true;
  if (cap) buf[0] = '\0';
}

mpp_jw_mark mpp_jw_mark_now(const mpp_jw *w) {
  return (mpp_jw_mark){.len = w->len, .first = w->first[w->depth], .after_key = w->after_key};
}

void mpp_jw_undo(mpp_jw *w, mpp_jw_mark m) {
  w->len = m.len;
  w->first[w->depth] = m.first;
  w->after_key = m.after_key;
  w->oom = false;
  if (w->buf) w->buf[w->len] = '\0';
}

void mpp_jw_free(mpp_jw *w) {
  if (!w->fixed) free(w->buf);
  w->buf = NULL;
  w->len = w->cap = 0;
}

static void put(mpp_jw *w, const char *s, size_t n) {
  if (w->oom) return;
  if (w->len + n + 1 > w->cap) {
    if (w->fixed) {
      w->oom = true;
      return;
    }
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->len + n + 1)
      cap *= 2;
    char *nb = realloc(w->buf, cap);
    if (!nb) {
      w->oom = true;
      return;
    }
    w->buf = nb;
    w->cap = cap;
  }
  memcpy(w->buf + w->len, s, n);
  w->len += n;
  w->buf[w->len] = '\0';
}

static void puts_(mpp_jw *w, const char *s) {
  put(w, s, strlen(s));
}

/* Separator before a value: none after a key, a comma after a sibling. */
static void before_value(mpp_jw *w) {
  if (w->after_key) {
    w->after_key = false;
    return;
  }
  if (!w->first[w->depth]) put(w, ",", 1);
  w->first[w->depth] = false;
}

static void open_(mpp_jw *w, const char *c) {
  before_value(w);
  put(w, c, 1);
  if (w->depth + 1 < MPP_JW_MAX_DEPTH) w->depth++;
  w->first[w->depth] = true;
}

static void close_(mpp_jw *w, const char *c) {
  if (w->depth > 0) w->depth--;
  put(w, c, 1);
}

void mpp_jw_obj(mpp_jw *w) {
  open_(w, "{");
}
void mpp_jw_obj_end(mpp_jw *w) {
  close_(w, "}");
}
void mpp_jw_arr(mpp_jw *w) {
  open_(w, "[");
}
void mpp_jw_arr_end(mpp_jw *w) {
  close_(w, "]");
}

/* Names come from the application (NVTX ranges, argv, kernel names): bytes
 * that are not UTF-8 become MPP_UTF8_REPLACEMENT (common/utf8.h, the one
 * definition the reader shares), so every reader can parse the file. */
static void put_string(mpp_jw *w, const char *s) {
  put(w, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[8];
    switch (*p) {
    case '"':
      puts_(w, "\\\"");
      break;
    case '\\':
      puts_(w, "\\\\");
      break;
    case '\n':
      puts_(w, "\\n");
      break;
    case '\r':
      puts_(w, "\\r");
      break;
    case '\t':
      puts_(w, "\\t");
      break;
    default:
      if (*p < 0x20) {
        snprintf(esc, sizeof esc, "\\u%04x", *p);
        puts_(w, esc);
      } else {
        /* 4: the string's NUL ends a sequence before any byte past it is read. */
        size_t n = mpp_utf8_seq_len(p, 4);
        if (n == 0) {
          const char r = MPP_UTF8_REPLACEMENT;
          put(w, &r, 1);
        } else {
          put(w, (const char *)p, n);
          p += n - 1;
        }
      }
    }
  }
  put(w, "\"", 1);
}

void mpp_jw_key(mpp_jw *w, const char *key) {
  before_value(w);
  put_string(w, key);
  put(w, ":", 1);
  w->after_key = true;
}

void mpp_jw_str(mpp_jw *w, const char *s) {
  if (!s) {
    mpp_jw_null(w);
    return;
  }
  before_value(w);
  put_string(w, s);
}

void mpp_jw_int(mpp_jw *w, int64_t v) {
  char b[32];
  before_value(w);
  snprintf(b, sizeof b, "%" PRId64, v);
  puts_(w, b);
}

void mpp_jw_uint(mpp_jw *w, uint64_t v) {
  char b[32];
  before_value(w);
  snprintf(b, sizeof b, "%" PRIu64, v);
  puts_(w, b);
}

void mpp_jw_double(mpp_jw *w, double v) {
  char b[40];
  if (!isfinite(v)) {
    mpp_jw_null(w);
    return;
  }
  before_value(w);
  snprintf(b, sizeof b, "%.17g", v);
  puts_(w, b);
}

void mpp_jw_bool(mpp_jw *w, bool v) {
  before_value(w);
  puts_(w, v ? "true" : "false");
}

void mpp_jw_null(mpp_jw *w) {
  before_value(w);
  puts_(w, "null");
}
