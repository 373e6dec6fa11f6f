/* Training phase of an op from its NVTX path: forward, backward or optimizer,
 * decided by marker words in the range names ("fwd", "backward",
 * "AddmmBackward0", "optimizer_step"), and the layer name with the markers
 * taken out, so that "mlp/fc1/fwd" and "mlp/fc1/bwd" are one layer, "mlp/fc1".
 *
 * A marker matches a word of a path component, case-insensitively; words are
 * delimited by non-letters and by lower-to-upper case changes (camelCase).
 * The innermost (last) component with a marker decides. Marker lists come
 * from MPPROF_PHASE_FORWARD / _BACKWARD / _OPTIMIZER (comma-separated) or the
 * defaults below. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

static const char *const default_words[MPPROF_PHASE_COUNT] = {
    [MPPROF_PHASE_FORWARD] = "fwd,forward",
    [MPPROF_PHASE_BACKWARD] = "bwd,backward",
    [MPPROF_PHASE_OPTIMIZER] = "optim,optimizer",
};
static const char *const env_names[MPPROF_PHASE_COUNT] = {
    [MPPROF_PHASE_FORWARD] = "MPPROF_PHASE_FORWARD",
    [MPPROF_PHASE_BACKWARD] = "MPPROF_PHASE_BACKWARD",
    [MPPROF_PHASE_OPTIMIZER] = "MPPROF_PHASE_OPTIMIZER",
};

const char *mpprof_phase_name(mpprof_phase p) {
  static const char *const names[] = {"unknown",   "forward", "backward", "optimizer",
                                      "recompute", "eval",    "mixed"};
  return (unsigned)p < MPPROF_PHASE_COUNT ? names[p] : "unknown";
}

int mpprof_phase_parse(const char *s) {
  for (int p = MPPROF_PHASE_FORWARD; p < MPPROF_PHASE_MIXED; p++)
    if (!strcmp(s, mpprof_phase_name((mpprof_phase)p))) return p;
  return -1;
}

void mpprof_phase_rules_default(mpprof_phase_rules *r) {
  memset(r, 0, sizeof *r);
  for (int p = MPPROF_PHASE_FORWARD; p <= MPPROF_PHASE_OPTIMIZER; p++) {
    const char *env = getenv(env_names[p]);
    r->words[p] = strdup(env ? env : default_words[p]);
  }
}

void mpprof_phase_rules_free(mpprof_phase_rules *r) {
  for (int p = 0; p < MPPROF_PHASE_COUNT; p++)
    free(r->words[p]);
  memset(r, 0, sizeof *r);
}

static bool is_word_start(const char *c, size_t i) {
  if (i == 0) return true;
  unsigned char prev = (unsigned char)c[i - 1], cur = (unsigned char)c[i];
  if (!isalpha(prev)) return true;
  return islower(prev) && isupper(cur);
}

static bool is_word_end(const char *c, size_t i) {
  unsigned char next = (unsigned char)c[i];
  if (!next || !isalpha(next)) return true;
  return islower((unsigned char)c[i - 1]) && isupper(next);
}

/* Position of `word` (length n) as a word of component c (length len), or -1. */
static long find_word(const char *c, size_t len, const char *word, size_t n) {
  if (!n || n > len) return -1;
  for (size_t i = 0; i + n <= len; i++)
    if (!strncasecmp(c + i, word, n) && is_word_start(c, i) && is_word_end(c, i + n))
      return (long)i;
  return -1;
}

/* The marker of phase p found in component c: position and length. */
static bool find_marker(const mpprof_phase_rules *r, int p, const char *c, size_t len,
                        long *ret_pos, size_t *ret_n) {
  const char *w = r->words[p];
  while (w && *w) {
    const char *end = strchr(w, ',');
    size_t n = end ? (size_t)(end - w) : strlen(w);
    while (n && isspace((unsigned char)*w))
      w++, n--;
    while (n && isspace((unsigned char)w[n - 1]))
      n--;
    long pos = find_word(c, len, w, n);
    if (pos >= 0) {
      *ret_pos = pos;
      *ret_n = n;
      return true;
    }
    if (!end) break;
    w = end + 1;
  }
  return false;
}

static bool is_sep(char ch) {
  return ch == '_' || ch == '.' || ch == '-' || ch == ':' || ch == ' ';
}

mpprof_phase mpprof_phase_of(const mpprof_phase_rules *r, const char *path, char **ret_layer) {
  mpprof_phase phase = MPPROF_PHASE_UNKNOWN;
  size_t plen = strlen(path);
  char *out = malloc(plen + 1);
  if (!out) {
    *ret_layer = NULL;
    return phase;
  }
  size_t o = 0;
  const char *c = path;
  while (true) {
    const char *slash = strchr(c, '/');
    size_t len = slash ? (size_t)(slash - c) : strlen(c);
    /* keep [c, c+len) minus the marker (and one separator next to it) */
    size_t cut_pos = 0, cut_n = 0;
    for (int p = MPPROF_PHASE_FORWARD; p <= MPPROF_PHASE_OPTIMIZER; p++) {
      long pos;
      size_t n;
      if (!find_marker(r, p, c, len, &pos, &n)) continue;
      phase = (mpprof_phase)p;
      if (n == len) {
        cut_pos = 0, cut_n = len; /* the whole component is a marker */
      } else if ((size_t)pos + n < len && is_sep(c[pos + n])) {
        cut_pos = (size_t)pos, cut_n = n + 1;
      } else if (pos > 0 && is_sep(c[pos - 1])) {
        cut_pos = (size_t)pos - 1, cut_n = n + 1;
      }
      break;
    }
    if (cut_n < len) {
      if (o) out[o++] = '/';
      memcpy(out + o, c, cut_pos);
      o += cut_pos;
      memcpy(out + o, c + cut_pos + cut_n, len - cut_pos - cut_n);
      o += len - cut_pos - cut_n;
    }
    if (!slash) break;
    c = slash + 1;
  }
  out[o] = 0;
  *ret_layer = out;
  return phase;
}
