/* A site's "tensors" object (STATS objects, docs/raw-format.md) read straight
 * from its text into compact records: 100k sites of a few hundred numbers
 * each, where a cJSON tree per site and a 17 KB expanded record per tensor
 * were half of the report's time.
 *
 * This is a fast path, not a second definition of the format: it accepts only
 * the spelling mpprof writes (keys without escapes, each once, no unknown
 * key; counts as plain integers; JSON-grammar numbers) and the values
 * mpprof_stats_from_json would accept. Anything else answers "not mine" and
 * the caller reads the object through cJSON and mpprof_stats_from_json,
 * which accepts it or names what is wrong: the result and every error
 * message are that reader's. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/formats.h"
#include "analysis/schema_keys.h"
#include "report/report_internal.h"

typedef struct scan {
  const char *p, *end;
} scan;

static void ws_run(scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
    s->p++;
}

/* mpprof writes no whitespace: one comparison says so (JSON's four are
 * below '!'), inline. */
static inline void ws(scan *s) {
  if (s->p < s->end && (unsigned char)*s->p <= ' ') ws_run(s);
}

static inline bool punct(scan *s, char c) {
  ws(s);
  if (s->p >= s->end || *s->p != c) return false;
  s->p++;
  return true;
}

/* A string without escapes or control characters: its bytes in *ret, *ret_n. */
static bool plain_string(scan *s, const char **ret, size_t *ret_n) {
  ws(s);
  if (s->p >= s->end || *s->p != '"') return false;
  const char *b = ++s->p;
  while (s->p < s->end && *s->p != '"') {
    if (*s->p == '\\' || (unsigned char)*s->p < 0x20) return false;
    s->p++;
  }
  if (s->p >= s->end) return false;
  *ret = b;
  *ret_n = (size_t)(s->p++ - b);
  return true;
}

/* What may follow a value: whitespace, ',', '}' or ']' (or the end). */
static bool value_ends(const scan *s) {
  if (s->p >= s->end) return true;
  switch (*s->p) {
  case ' ':
  case '\n':
  case '\r':
  case '\t':
  case ',':
  case '}':
  case ']':
    return true;
  default:
    return false;
  }
}

/* A count: 0 or digits without a leading zero, at most 15 (exact as the
 * double cJSON would read). */
static bool count(scan *s, uint64_t *ret) {
  if (s->p < s->end && (unsigned)(*s->p - '0') >= 10) ws(s);
  const char *b = s->p, *lim = s->end - b > 16 ? b + 16 : s->end;
  uint64_t v = 0;
  while (s->p < lim && (unsigned)(*s->p - '0') < 10)
    v = v * 10 + (uint64_t)(*s->p++ - '0');
  size_t n = (size_t)(s->p - b);
  if (n == 0 || n > 15 || (n > 1 && *b == '0') || !value_ends(s)) return false;
  *ret = v;
  return true;
}

static bool integer(scan *s, int *ret) {
  ws(s);
  bool neg = s->p < s->end && *s->p == '-';
  if (neg) s->p++;
  uint64_t v;
  if (s->p >= s->end || *s->p < '0' || *s->p > '9' || !count(s, &v) || v > 1000000) return false;
  *ret = neg ? -(int)v : (int)v;
  return true;
}

/* A JSON-grammar number b..e whose significant digits make an integer up to
 * 2^53 and a power of ten up to 10^22 either way, as strtod reads it: both
 * factors are exact doubles, so one multiplication or division rounds once,
 * correctly (Clinger's fast path). false: not such a number. */
static bool exact_decimal(const char *b, const char *e, double *ret) {
  static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  bool neg = *b == '-';
  const char *p = b + neg;
  uint64_t m = 0;
  int digits = 0, scale = 0;
  for (; p < e && (unsigned)(*p - '0') < 10; p++)
    if (digits || *p != '0') {
      m = m * 10 + (uint64_t)(*p - '0');
      digits++;
    }
  if (p < e && *p == '.')
    for (p++; p < e && (unsigned)(*p - '0') < 10; p++) {
      if (digits || *p != '0') {
        m = m * 10 + (uint64_t)(*p - '0');
        digits++;
      }
      scale--;
      if (digits > 16) return false;
    }
  /* an exponent part, or more than 2^53: strtod */
  if (p != e || digits > 16 || m > (UINT64_C(1) << 53)) return false;
  double v = (double)m;
  if (scale < -22) return false;
  v = scale ? v / pow10[-scale] : v;
  *ret = neg ? -v : v;
  return true;
}

/* A finite JSON-grammar number, or null (*ret untouched). */
static bool extreme(scan *s, double *ret) {
  ws(s);
  if (s->end - s->p >= 4 && !memcmp(s->p, "null", 4)) {
    s->p += 4;
    return value_ends(s);
  }
  const char *b = s->p, *q = b;
  if (q < s->end && *q == '-') q++;
  const char *d = q;
  while (q < s->end && *q >= '0' && *q <= '9')
    q++;
  if (q == d || (q - d > 1 && *d == '0')) return false;
  if (q < s->end && *q == '.') {
    const char *f = ++q;
    while (q < s->end && *q >= '0' && *q <= '9')
      q++;
    if (q == f) return false;
  }
  if (q < s->end && (*q == 'e' || *q == 'E')) {
    q++;
    if (q < s->end && (*q == '+' || *q == '-')) q++;
    const char *x = q;
    while (q < s->end && *q >= '0' && *q <= '9')
      q++;
    if (q == x) return false;
  }
  s->p = q;
  if (!value_ends(s)) return false;
  if (exact_decimal(b, q, ret)) return true;
  char buf[48];
  if (q - b >= (long)sizeof buf) return false;
  memcpy(buf, b, (size_t)(q - b));
  buf[q - b] = '\0';
  char *e;
  double v = strtod(buf, &e);
  if (*e || !isfinite(v)) return false;
  *ret = v;
  return true;
}

/* k (n bytes, no NUL: plain_string takes none) is name: compared inline, a
 * few bytes each (strncmp's call was a twentieth of the report's reading). */
static bool key_is(const char *k, size_t n, const char *name) {
  size_t i = 0;
  for (; i < n; i++)
    if (k[i] != name[i]) return false; /* name's NUL differs from every byte of k */
  return !name[i];
}

/* The index of key k (n bytes) in names[count]: the one after *last first
 * (mpprof writes them in order), else any; count when none. */
static int key_index(const char *k, size_t n, const char *const *names, int count, int *last) {
  int f = *last + 1 < count ? *last + 1 : 0;
  if (!key_is(k, n, names[f]))
    for (f = 0; f < count && !key_is(k, n, names[f]); f++)
      ;
  if (f < count) *last = f;
  return f;
}

/* The keys of an object (at most 32) and each one's spelling as mpprof
 * writes it, '"name":', compared in one memcmp (the byte loop was half of
 * the keys' time); filled on first use (the report is built on one thread). */
typedef struct keyset {
  const char *const *names;
  int count;
  bool ready;
  unsigned char len[32]; /* of quoted[f]; 0: too long, plain_string reads it */
  char quoted[32][32];
} keyset;

static const keyset *keys_ready(keyset *k) {
  if (!k->ready) {
    for (int f = 0; f < k->count; f++) {
      size_t n = strlen(k->names[f]);
      if (n + 3 >= sizeof k->quoted[f]) continue;
      k->quoted[f][0] = '"';
      memcpy(k->quoted[f] + 1, k->names[f], n);
      memcpy(k->quoted[f] + 1 + n, "\":", 2);
      k->len[f] = (unsigned char)(n + 3);
    }
    k->ready = true;
  }
  return k;
}

/* Key f written plainly at s->p (the spelling mpprof writes, in order: one
 * comparison, no scan of the string): consumed, true. false, nothing
 * consumed: any other text (plain_string reads it). */
static bool expect_key(scan *s, const keyset *k, int f) {
  size_t n = k->len[f];
  const char *q = k->quoted[f];
  if (!n || (size_t)(s->end - s->p) < n) return false;
  if (n >= 8 && n <= 16) { /* most keys: two 8-byte words (overlapping), not a call */
    uint64_t a0, a1, b0, b1;
    memcpy(&a0, s->p, 8);
    memcpy(&a1, s->p + n - 8, 8);
    memcpy(&b0, q, 8);
    memcpy(&b1, q + n - 8, 8);
    if (a0 != b0 || a1 != b1) return false;
  } else if (memcmp(s->p, q, n)) {
    return false;
  }
  s->p += n;
  return true;
}

/* An object whose keys are those of k, each at most once: value(s, f, ctx)
 * reads the value of key f. mpprof writes the keys in order, so the one
 * after the last is tried first. The keys seen, or 0 when the text is
 * anything else. */
typedef bool (*value_fn)(scan *s, int f, void *ctx);
static unsigned known_keys(scan *s, keyset *keys, value_fn value, void *ctx) {
  const keyset *k = keys_ready(keys);
  int count = k->count;
  unsigned seen = 0;
  int last = -1;
  if (!punct(s, '{')) return 0;
  do {
    ws(s);
    int f = last + 1 < count ? last + 1 : 0;
    if (expect_key(s, k, f)) {
      last = f;
    } else {
      const char *kt;
      size_t n;
      if (!plain_string(s, &kt, &n) || !punct(s, ':')) return 0;
      f = key_index(kt, n, k->names, count, &last);
    }
    if (f == count || seen & 1u << f || !value(s, f, ctx)) return 0;
    seen |= 1u << f;
  } while (punct(s, ','));
  return punct(s, '}') ? seen : 0;
}

#define ALL_KEYS(count) ((1u << (count)) - 1)

static bool outcome_value(scan *s, int o, void *counts) {
  return count(s, &((uint64_t *)counts)[o]);
}

static const char *const outcome_names[MP_CAST_OUTCOMES] = MP_CAST_OUTCOME_NAMES;
static keyset outcome_keys = {.names = outcome_names, .count = MP_CAST_OUTCOMES};
static const char *target_names[MP_TARGET_COUNT];
static keyset target_keys = {.names = target_names, .count = MP_TARGET_COUNT};

/* The cast targets' keys (names from mp_target_name), filled on first use
 * (the report is built on one thread). */
static const keyset *targets_ready(void) {
  if (!target_names[0])
    for (int t = 0; t < MP_TARGET_COUNT; t++)
      target_names[t] = mp_target_name((mp_target)t);
  return keys_ready(&target_keys);
}

/* {"overflow": n, ...}: the four outcomes of one target, each once. */
static bool outcomes(scan *s, uint64_t ret[MP_CAST_OUTCOMES]) {
  return known_keys(s, &outcome_keys, outcome_value, ret) == ALL_KEYS(MP_CAST_OUTCOMES);
}

static bool target_value(scan *s, int t, void *c) {
  return outcomes(s, ((mpprof_cstats *)c)->casts[t]);
}

static bool casts(scan *s, mpprof_cstats *c) {
  targets_ready();
  return known_keys(s, &target_keys, target_value, c) == ALL_KEYS(MP_TARGET_COUNT);
}

/* The histogram being read: its bounds into c, its counts into bins. */
typedef struct hist_read {
  mpprof_cstats *c;
  uint64_t *bins;
  size_t nb;
} hist_read;

static bool hist_counts(scan *s, hist_read *h) {
  if (!punct(s, '[')) return false;
  ws(s);
  if (s->p < s->end && *s->p == ']') return false; /* never a valid histogram */
  while (true) {
    if (h->nb == MP_HIST_BINS) return false;
    /* most bins: a few digits and a comma, read here without count() */
    const char *p = s->p, *lim = s->end - p > 16 ? p + 16 : s->end;
    uint64_t v = 0;
    while (p < lim && (unsigned)(*p - '0') < 10)
      v = v * 10 + (uint64_t)(*p++ - '0');
    if (p > s->p && p - s->p <= 15 && (p - s->p == 1 || *s->p != '0') && p < s->end && *p == ',') {
      h->bins[h->nb++] = v;
      s->p = p + 1;
      continue;
    }
    if (!count(s, &h->bins[h->nb++])) return false;
    if (!punct(s, ',')) break;
  }
  return punct(s, ']');
}

static bool hist_value(scan *s, int f, void *ctx) {
  hist_read *h = ctx;
  return f == 0   ? integer(s, &h->c->hist_lo)
         : f == 1 ? integer(s, &h->c->hist_hi)
                  : hist_counts(s, h);
}

/* The bounds read hold nb counts and lie in the histogram's range. */
static bool hist_fits(const mpprof_cstats *c, size_t nb) {
  return c->hist_lo >= MP_HIST_MIN && c->hist_hi <= MP_HIST_MAX && c->hist_lo <= c->hist_hi &&
         nb == (size_t)(c->hist_hi - c->hist_lo + 1);
}

/* {"lo": a, "hi": b, "counts": [...]}: counts into bins (MP_HIST_BINS). */
static bool hist(scan *s, mpprof_cstats *c, uint64_t *bins) {
  static const char *const names[] = {MP_K_HIST_LO, MP_K_HIST_HI, MP_K_HIST_COUNTS};
  static keyset keys = {.names = names, .count = 3};
  hist_read h = {c, bins, 0};
  return known_keys(s, &keys, hist_value, &h) == ALL_KEYS(3) && hist_fits(c, h.nb);
}

enum {
  F_DTYPE,
  F_COUNT,
  F_ZEROS,
  F_NANS,
  F_POS_INFS,
  F_NEG_INFS,
  F_NEGATIVES,
  F_SATURATED,
  F_MIN,
  F_MAX,
  F_ABSMAX,
  F_MIN_ABS_NONZERO,
  F_EXP_HIST,
  F_CASTS,
  F_COUNT_
};

static const char *const field_names[F_COUNT_] = {
    MP_K_DTYPE,    MP_K_COUNT,           MP_K_ZEROS,     MP_K_NANS, MP_K_POS_INFS,
    MP_K_NEG_INFS, MP_K_NEGATIVES,       MP_K_SATURATED, MP_K_MIN,  MP_K_MAX,
    MP_K_ABSMAX,   MP_K_MIN_ABS_NONZERO, MP_K_EXP_HIST,  MP_K_CASTS};

static bool dtype(scan *s, mp_dtype *ret) {
  ws(s);
  if (s->end - s->p >= 4 && !memcmp(s->p, "null", 4)) {
    s->p += 4;
    *ret = MP_DTYPE_INVALID; /* a merge of different source dtypes */
    return value_ends(s);
  }
  const char *k;
  size_t n;
  char name[24];
  if (!plain_string(s, &k, &n) || n >= sizeof name) return false;
  memcpy(name, k, n);
  name[n] = '\0';
  *ret = mp_dtype_from_name(name);
  return mp_dtype_scannable(*ret);
}

/* mpprof_stats_from_json's sums: specials within count, each target's
 * outcomes and the histogram summing to the finite non-zero values. */
static bool sums_hold(const mpprof_cstats *c, const uint64_t *bins, size_t nb) {
  /* every number is below 10^15: no sum of a few thousand wraps */
  uint64_t special = c->zeros + c->nans + c->pos_infs + c->neg_infs;
  if (special > c->count || c->saturated > c->count || c->negatives > c->count) return false;
  uint64_t fnz = c->count - special, h = 0;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t sum = 0;
    for (int o = 0; o < MP_CAST_OUTCOMES; o++)
      sum += c->casts[t][o];
    if (sum != fnz) return false;
  }
  for (size_t i = 0; i < nb; i++)
    h += bins[i];
  return h == fnz;
}

/* A STATS object being read. */
typedef struct stats_read {
  mpprof_cstats *c;
  uint64_t *bins;
} stats_read;

static bool stats_value(scan *s, int f, void *ctx) {
  stats_read *r = ctx;
  mpprof_cstats *c = r->c;
  /* where each field goes, as offsets (not a table of pointers built per call) */
  static const size_t at[F_COUNT_] = {[F_COUNT] = offsetof(mpprof_cstats, count),
                                      [F_ZEROS] = offsetof(mpprof_cstats, zeros),
                                      [F_NANS] = offsetof(mpprof_cstats, nans),
                                      [F_POS_INFS] = offsetof(mpprof_cstats, pos_infs),
                                      [F_NEG_INFS] = offsetof(mpprof_cstats, neg_infs),
                                      [F_NEGATIVES] = offsetof(mpprof_cstats, negatives),
                                      [F_SATURATED] = offsetof(mpprof_cstats, saturated),
                                      [F_MIN] = offsetof(mpprof_cstats, min),
                                      [F_MAX] = offsetof(mpprof_cstats, max),
                                      [F_ABSMAX] = offsetof(mpprof_cstats, absmax),
                                      [F_MIN_ABS_NONZERO] =
                                          offsetof(mpprof_cstats, min_abs_nonzero)};
  void *field = (char *)c + at[f];
  return f == F_DTYPE             ? dtype(s, &c->dtype)
         : f <= F_SATURATED       ? count(s, field)
         : f <= F_MIN_ABS_NONZERO ? extreme(s, field)
         : f == F_EXP_HIST        ? hist(s, c, r->bins)
                                  : casts(s, c);
}

/* The text at s->p is lit (n bytes): consumed, true; else nothing consumed. */
static inline bool lit(scan *s, const char *lit, size_t n) {
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, lit, n)) return false;
  s->p += n;
  return true;
}
#define LIT(s, text) lit(s, text, sizeof text - 1)

/* One byte c, then key f of k, at s->p: consumed, true. */
static inline bool next_key(scan *s, char c, const keyset *k, int f) {
  if (s->p >= s->end || *s->p != c) return false;
  s->p++;
  return expect_key(s, k, f);
}

/* A STATS object in exactly the order and spelling mpprof writes it
 * (mpprof_tb_cstats; no whitespace): each key is compared with the one that
 * comes next, nothing is looked up or counted (the generic reader's work
 * per key was most of reading a site). false at the first byte that
 * differs, where the caller reads the object again by known_keys, which
 * takes any order; true only where known_keys reads the same values. */
static bool stats_in_order(scan *s, mpprof_cstats *c, uint64_t *bins) {
  const keyset *tk = targets_ready(), *ok = keys_ready(&outcome_keys);
  if (!LIT(s, "{\"" MP_K_DTYPE "\":") || !dtype(s, &c->dtype) || !LIT(s, ",\"" MP_K_COUNT "\":") ||
      !count(s, &c->count) || !LIT(s, ",\"" MP_K_ZEROS "\":") || !count(s, &c->zeros) ||
      !LIT(s, ",\"" MP_K_NANS "\":") || !count(s, &c->nans) || !LIT(s, ",\"" MP_K_POS_INFS "\":") ||
      !count(s, &c->pos_infs) || !LIT(s, ",\"" MP_K_NEG_INFS "\":") || !count(s, &c->neg_infs) ||
      !LIT(s, ",\"" MP_K_NEGATIVES "\":") || !count(s, &c->negatives))
    return false;
  if (LIT(s, ",\"" MP_K_SATURATED "\":") && !count(s, &c->saturated)) return false; /* when set */
  hist_read h = {c, bins, 0};
  if (!LIT(s, ",\"" MP_K_MIN "\":") || !extreme(s, &c->min) || !LIT(s, ",\"" MP_K_MAX "\":") ||
      !extreme(s, &c->max) || !LIT(s, ",\"" MP_K_ABSMAX "\":") || !extreme(s, &c->absmax) ||
      !LIT(s, ",\"" MP_K_MIN_ABS_NONZERO "\":") || !extreme(s, &c->min_abs_nonzero) ||
      !LIT(s, ",\"" MP_K_EXP_HIST "\":{\"" MP_K_HIST_LO "\":") || !integer(s, &c->hist_lo) ||
      !LIT(s, ",\"" MP_K_HIST_HI "\":") || !integer(s, &c->hist_hi) ||
      !LIT(s, ",\"" MP_K_HIST_COUNTS "\":") || !hist_counts(s, &h) || !LIT(s, "}") ||
      !hist_fits(c, h.nb) || !LIT(s, ",\"" MP_K_CASTS "\":"))
    return false;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    if (!next_key(s, t ? ',' : '{', tk, t)) return false;
    for (int o = 0; o < MP_CAST_OUTCOMES; o++)
      if (!next_key(s, o ? ',' : '{', ok, o) || !count(s, &c->casts[t][o])) return false;
    if (!LIT(s, "}")) return false;
  }
  return LIT(s, "}}");
}

/* One STATS object into *c (bins allocated); false: not in mpprof's
 * spelling, or not valid (the cJSON reader says why). */
static bool stats(scan *s, mpprof_cstats *c, uint64_t *bins, bool *oom) {
  const mpprof_cstats none = {
      .min = NAN, .max = NAN, .absmax = NAN, .min_abs_nonzero = INFINITY, .nz_lo = 1, .nz_hi = 0};
  const char *start = s->p;
  *c = none;
  if (!stats_in_order(s, c, bins)) {
    s->p = start;
    *c = none;
    stats_read r = {c, bins};
    static keyset keys = {.names = field_names, .count = F_COUNT_};
    unsigned seen = known_keys(s, &keys, stats_value, &r);
    if ((seen | 1u << F_SATURATED) != ALL_KEYS(F_COUNT_)) return false;
  }
  size_t nb = (size_t)(c->hist_hi - c->hist_lo + 1);
  if (!sums_hold(c, bins, nb)) return false;
  size_t lo = 0, hi = nb;
  while (lo < hi && !bins[lo])
    lo++;
  while (hi > lo && !bins[hi - 1])
    hi--;
  if (lo < hi) {
    if (!(c->bins = malloc((hi - lo) * sizeof *c->bins))) {
      *oom = true;
      return false;
    }
    memcpy(c->bins, &bins[lo], (hi - lo) * sizeof *c->bins);
    c->nz_lo = c->hist_lo + (int)lo;
    c->nz_hi = c->hist_lo + (int)hi - 1;
  }
  mp_stats_hist_read_range(c->dtype, &c->hist_lo, &c->hist_hi);
  return true;
}

/* The records' contents (not the array). */
static void free_roles(mpprof_role_stats *r, size_t n) {
  for (size_t i = 0; i < n; i++)
    mpprof_cstats_free(&r[i].st);
}

int mpprof_tensors_scan(mpprof_strpool *pool, const char *text, size_t len, mpprof_role_stats **ret,
                        size_t *ret_n, size_t *ret_len) {
  scan s = {text, text + len};
  /* one histogram at a time, read here (the report is built on one thread):
   * not a 17 KB malloc and free per site */
  static uint64_t bins[MP_HIST_BINS];
  /* the records are built here, then copied to a block of their exact size
   * (a site keeps it; a shrinking realloc per site fragmented the heap) */
  mpprof_role_stats few[8], *r = few;
  size_t n = 0, cap = sizeof few / sizeof few[0];
  bool oom = false, ok = false;
  if (!oom && punct(&s, '{')) {
    ws(&s);
    if (s.p < s.end && *s.p == '}') {
      s.p++;
      ok = true;
    } else {
      do {
        const char *k;
        size_t kn;
        if (!plain_string(&s, &k, &kn) || !punct(&s, ':')) break;
        if (n == cap) {
          mpprof_role_stats *nr = malloc(2 * cap * sizeof *nr);
          if (!nr) {
            oom = true;
            break;
          }
          memcpy(nr, r, n * sizeof *r);
          if (r != few) free(r);
          r = nr;
          cap *= 2;
        }
        if (!(r[n].role = mpprof_intern_n(pool, k, kn))) {
          oom = true;
          break;
        }
        r[n].st = (mpprof_cstats){.nz_lo = 1};
        n++;
        if (!stats(&s, &r[n - 1].st, bins, &oom)) break;
        ok = !punct(&s, ',');
      } while (!ok);
      ok = ok && punct(&s, '}');
    }
  }
  mpprof_role_stats *exact = oom || !ok ? NULL : malloc((n ? n : 1) * sizeof *exact);
  if (exact)
    memcpy(exact, r, n * sizeof *r);
  else
    free_roles(r, n);
  if (r != few) free(r);
  if (!exact) return oom || ok ? -1 : 0;
  *ret = exact;
  *ret_n = n;
  *ret_len = (size_t)(s.p - text);
  return 1;
}

/* ---- writing ---- */

/* A literal piece of text: its length is known (most of a site's text is
 * such pieces; a strlen each was a tenth of writing it). */
#define TB_LIT(b, lit) mpprof_tb_put(b, lit, sizeof lit - 1)

static void tb_int(mpprof_tb *b, int v) {
  if (v < 0) TB_LIT(b, "-");
  mpprof_tb_u64(b, v < 0 ? -(uint64_t)v : (uint64_t)v);
}

/* '{"name":' ... for each cast target, and '"name":' for each outcome:
 * built on first use (the report is built on one thread). */
typedef struct piece {
  unsigned char len;
  char text[30];
} piece;

static void make_piece(piece *p, const char *before, const char *name) {
  int n = snprintf(p->text, sizeof p->text, "%s\"%s\":", before, name);
  p->len = n > 0 && (size_t)n < sizeof p->text ? (unsigned char)n : 0;
}

void mpprof_tb_cstats(mpprof_tb *b, const mpprof_cstats *c) {
  static piece target_first[MP_TARGET_COUNT], target_next[MP_TARGET_COUNT],
      outcome_first[MP_CAST_OUTCOMES], outcome_next[MP_CAST_OUTCOMES];
  static bool made;
  if (!made) {
    static const char *const outcome_names[MP_CAST_OUTCOMES] = MP_CAST_OUTCOME_NAMES;
    for (int t = 0; t < MP_TARGET_COUNT; t++) {
      make_piece(&target_first[t], "{", mp_target_name((mp_target)t));
      make_piece(&target_next[t], ",", mp_target_name((mp_target)t));
    }
    for (int o = 0; o < MP_CAST_OUTCOMES; o++) {
      make_piece(&outcome_first[o], "{", outcome_names[o]);
      make_piece(&outcome_next[o], ",", outcome_names[o]);
    }
    made = true;
  }
  TB_LIT(b, "{\"" MP_K_DTYPE "\":");
  mpprof_tb_json_str(b, c->dtype == MP_DTYPE_INVALID ? NULL : mp_dtype_name(c->dtype));
  TB_LIT(b, ",\"" MP_K_COUNT "\":");
  mpprof_tb_u64(b, c->count);
  TB_LIT(b, ",\"" MP_K_ZEROS "\":");
  mpprof_tb_u64(b, c->zeros);
  TB_LIT(b, ",\"" MP_K_NANS "\":");
  mpprof_tb_u64(b, c->nans);
  TB_LIT(b, ",\"" MP_K_POS_INFS "\":");
  mpprof_tb_u64(b, c->pos_infs);
  TB_LIT(b, ",\"" MP_K_NEG_INFS "\":");
  mpprof_tb_u64(b, c->neg_infs);
  TB_LIT(b, ",\"" MP_K_NEGATIVES "\":");
  mpprof_tb_u64(b, c->negatives);
  if (c->saturated) { /* only when set */
    TB_LIT(b, ",\"" MP_K_SATURATED "\":");
    mpprof_tb_u64(b, c->saturated);
  }
  TB_LIT(b, ",\"" MP_K_MIN "\":");
  mpprof_tb_double(b, c->min);
  TB_LIT(b, ",\"" MP_K_MAX "\":");
  mpprof_tb_double(b, c->max);
  TB_LIT(b, ",\"" MP_K_ABSMAX "\":");
  mpprof_tb_double(b, c->absmax);
  TB_LIT(b, ",\"" MP_K_MIN_ABS_NONZERO "\":");
  mpprof_tb_double(b, c->min_abs_nonzero);
  int lo, hi;
  mp_hist_written_range(c->hist_lo, c->hist_hi, c->nz_lo, c->nz_hi, &lo, &hi);
  TB_LIT(b, ",\"" MP_K_EXP_HIST "\":{\"" MP_K_HIST_LO "\":");
  tb_int(b, lo);
  TB_LIT(b, ",\"" MP_K_HIST_HI "\":");
  tb_int(b, hi);
  TB_LIT(b, ",\"" MP_K_HIST_COUNTS "\":[");
  for (int e = lo; e <= hi; e++) {
    if (e > lo) TB_LIT(b, ",");
    if (e < c->nz_lo || e > c->nz_hi)
      TB_LIT(b, "0");
    else
      mpprof_tb_u64(b, c->bins[e - c->nz_lo]);
  }
  TB_LIT(b, "]},\"" MP_K_CASTS "\":");
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const piece *tp = t ? &target_next[t] : &target_first[t];
    mpprof_tb_put(b, tp->text, tp->len);
    for (int o = 0; o < MP_CAST_OUTCOMES; o++) {
      const piece *op = o ? &outcome_next[o] : &outcome_first[o];
      mpprof_tb_put(b, op->text, op->len);
      mpprof_tb_u64(b, c->casts[t][o]);
    }
    TB_LIT(b, "}");
  }
  TB_LIT(b, "}}");
}
