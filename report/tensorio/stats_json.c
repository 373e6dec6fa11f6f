/* Stats record <-> cJSON. Numbers are written as raw JSON text rather than
 * through cJSON_CreateNumber: cJSON prints integers above INT_MAX with %g and
 * decides that %.15g "round-trips" with a tolerance, so neither counts above
 * 2^31 nor doubles one ulp apart would survive. Readers therefore accept both
 * cJSON_Number (parsed files) and cJSON_Raw (trees built in memory). */
#include "stats_json.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/formats.h"
#include "analysis/schema_keys.h"
#include "common/utf8.h"
#include "report/tensorio/npy.h"

static const char *const outcome_names[MP_CAST_OUTCOMES] = MP_CAST_OUTCOME_NAMES;

/* ---- doubles as text ---- */

/* The text of a double is the first of %.15g, %.16g, %.17g that reads back
 * as it. printf and strtod each go through multi-precision arithmetic; a
 * report prints a million such doubles. So the same text is made here with
 * 128-bit integers where they suffice (|d| from about 1e-5 to 2^72, and any
 * power of two times a short odd number), exactly: the digits are d * 10^k
 * = A / B rounded half to even as printf rounds, and "reads back" is
 * decided against the half gap to d's neighbours as strtod rounds. Elsewhere
 * printf and strtod still do it. */
__extension__ typedef unsigned __int128 u128;

static u128 pow10_u128(int k) {
  static u128 t[39];
  if (!t[0]) {
    t[0] = 1;
    for (int i = 1; i < 39; i++)
      t[i] = t[i - 1] * 10;
  }
  return t[k];
}

static int bits_u128(u128 v) {
  uint64_t hi = (uint64_t)(v >> 64), lo = (uint64_t)v;
  return hi ? 128 - __builtin_clzll(hi) : lo ? 64 - __builtin_clzll(lo) : 0;
}

/* M * 2^e * 10^k = A / B exactly; false when A or B would pass 2^125. */
static bool scaled(uint64_t M, int e, int k, u128 *ret_a, u128 *ret_b) {
  if (k > 38 || k < -38) return false;
  u128 a = M, b = 1;
  if (k >= 0) {
    if (bits_u128(a) + bits_u128(pow10_u128(k)) > 125) return false;
    a *= pow10_u128(k);
  } else {
    b = pow10_u128(-k);
  }
  if (e >= 0) {
    if (bits_u128(a) + e > 125) return false;
    a <<= e;
  } else {
    if (bits_u128(b) - e > 125) return false;
    b <<= -e;
  }
  *ret_a = a;
  *ret_b = b;
  return true;
}

/* x * c against a: -1, 0 or 1. */
static int cmp_product(u128 x, u128 c, u128 a) {
  if (bits_u128(x) + bits_u128(c) <= 127) {
    u128 xc = x * c;
    return xc < a ? -1 : xc > a;
  }
  u128 q = a / c, r = a % c;
  return x < q ? -1 : x > q ? 1 : r ? -1 : 0;
}

/* %.*g of a (finite, normal, > 0) at precision p into out, when that text
 * reads back as a: its length; else 0 (it does not, or A / B does not fit). */
static size_t g_exact(double a, int p, char *out) {
  int e2;
  uint64_t m = (uint64_t)ldexp(frexp(a, &e2), 53); /* a = m * 2^E, 2^52 <= m < 2^53 */
  int E = e2 - 53, z = __builtin_ctzll(m), x = (int)floor(log10(a));
  u128 A, B, q, rem, diff;
  const u128 lo = pow10_u128(p - 1), hi = pow10_u128(p);
  for (int tries = 0;; tries++) { /* x = floor(log10(a)): log10 may be one off */
    if (tries == 3 || !scaled(m >> z, E + z, p - 1 - x, &A, &B)) return 0;
    if (!(B & (B - 1))) { /* a power of two: most values */
      q = A >> (bits_u128(B) - 1);
      rem = A & (B - 1);
    } else {
      q = A / B;
      rem = A % B;
    }
    if (q >= hi)
      x++;
    else if (q < lo)
      x--;
    else
      break;
  }
  bool up = 2 * rem > B || (2 * rem == B && (q & 1));
  q += up;
  diff = up ? B - rem : rem; /* |text - a| = diff / (B * 10^k) */
  /* Half the gap to a's neighbour is 2^(E-1) = A / (2m B 10^k) (a quarter
   * below a power of two): it reads back when diff < A / 2m, or equal with
   * m even (ties to even). */
  int c = diff ? cmp_product(diff, (u128)m * (!up && m == 1ull << 52 ? 4 : 2), A) : -1;
  if (c > 0 || (c == 0 && (m & 1))) return 0;
  if (q == hi) { /* rounded up to the next power of ten */
    q = lo;
    x++;
  }
  char dig[20];
  uint64_t q64 = (uint64_t)q; /* below 10^17 */
  for (int i = p - 1; i >= 0; i--, q64 /= 10)
    dig[i] = (char)('0' + (int)(q64 % 10));
  int nd = p; /* %g drops trailing zeros */
  while (nd > 1 && dig[nd - 1] == '0')
    nd--;
  size_t n = 0;
  if (x < -4 || x >= p) { /* d.ddde+XX */
    out[n++] = dig[0];
    if (nd > 1) out[n++] = '.';
    memcpy(out + n, dig + 1, (size_t)nd - 1);
    n += (size_t)nd - 1;
    int ax = abs(x);
    n += (size_t)sprintf(out + n, "e%c%02d", x < 0 ? '-' : '+', ax);
  } else if (x >= 0) { /* ddd.ddd */
    memcpy(out + n, dig, (size_t)x + 1);
    n += (size_t)x + 1;
    if (nd > x + 1) {
      out[n++] = '.';
      memcpy(out + n, dig + x + 1, (size_t)(nd - x - 1));
      n += (size_t)(nd - x - 1);
    }
  } else { /* 0.000ddd */
    memcpy(out + n, "0.0000", (size_t)(1 - x));
    n += (size_t)(1 - x);
    memcpy(out + n, dig, (size_t)nd);
    n += (size_t)nd;
  }
  out[n] = '\0';
  return n;
}

size_t mpprof_double_text(double d, char buf[40]) {
  if (!isfinite(d)) return 0;
  if (d != 0 && fabs(d) >= DBL_MIN) {
    buf[0] = '-';
    for (int prec = 15; prec <= 17; prec++) {
      size_t n = g_exact(fabs(d), prec, buf + (d < 0));
      if (n) return n + (d < 0);
    }
  }
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, 40, "%.*g", prec, d);
    if (strtod(buf, NULL) == d) break; /* exact comparison; 17 digits always round-trip */
  }
  /* %g of -0.0 is "-0", which strtod reads back as -0.0: the sign survives. */
  return strlen(buf);
}

cJSON *mpprof_json_double(double d) {
  char buf[40];
  return mpprof_double_text(d, buf) ? cJSON_CreateRaw(buf) : cJSON_CreateNull();
}

cJSON *mpprof_json_u64(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return cJSON_CreateRaw(buf);
}

cJSON *mpprof_json_i64(int64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRId64, v);
  return cJSON_CreateRaw(buf);
}

int mpprof_json_get_double(const cJSON *item, double *ret) {
  if (cJSON_IsNumber(item)) {
    *ret = item->valuedouble;
    return 0;
  }
  if (cJSON_IsRaw(item) && item->valuestring) {
    char *end;
    errno = 0;
    double d = strtod(item->valuestring, &end);
    if (end == item->valuestring || *end || errno == ERANGE) return -1;
    *ret = d;
    return 0;
  }
  return -1;
}

/* 0, or -1 when item is not a non-negative integer below 2^64. */
static int get_u64(const cJSON *item, uint64_t *ret) {
  if (cJSON_IsRaw(item) && item->valuestring && item->valuestring[0] >= '0' &&
      item->valuestring[0] <= '9') {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(item->valuestring, &end, 10);
    if (*end == '\0' && errno == 0) {
      *ret = v;
      return 0;
    }
  }
  double d;
  if (mpprof_json_get_double(item, &d) < 0) return -1;
  if (!(d >= 0 && d < 18446744073709551616.0) || d != floor(d)) return -1;
  *ret = (uint64_t)d;
  return 0;
}

static int get_int(const cJSON *item, int *ret) {
  double d;
  if (mpprof_json_get_double(item, &d) < 0) return -1;
  if (!(d >= INT32_MIN && d <= INT32_MAX) || d != floor(d)) return -1;
  *ret = (int)d;
  return 0;
}

/* cJSON_Add*ToObject returns NULL on failure; collect that in one flag. */
static void add(cJSON *obj, const char *key, cJSON *item, int *failed) {
  if (!item || !cJSON_AddItemToObject(obj, key, item)) {
    cJSON_Delete(item);
    *failed = 1;
  }
}

static cJSON *fp8_advice_to_json(const mp_fp8_advice *f, int *failed) {
  cJSON *o = cJSON_CreateObject();
  if (!o) {
    *failed = 1;
    return NULL;
  }
  add(o, MP_K_ADV_FITS, cJSON_CreateBool(f->fits), failed);
  add(o, MP_K_ADV_SCALE_LOG2, cJSON_CreateNumber(f->scale_log2), failed);
  add(o, MP_K_ADV_UNDERFLOW_FRACTION, mpprof_json_double(f->underflow_fraction), failed);
  add(o, MP_K_ADV_ESTIMATE, cJSON_CreateBool(f->estimate), failed);
  return o;
}

cJSON *mpprof_advice_to_json(const mp_advice *a) {
  int failed = 0;
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  /* Nothing to judge (no finite non-zero value): every verdict is null, as
   * recommended is; "fp16 safe, fp8 fits at 2^0" would be true of no value. */
  add(o, MP_K_ADV_FP16,
      a->judged ? cJSON_CreateString(mp_fp16_verdict_name(a->fp16)) : cJSON_CreateNull(), &failed);
  if (a->judged && a->has_window) {
    const int w[2] = {a->window_lo, a->window_hi};
    add(o, MP_K_ADV_LOSS_SCALE_LOG2, cJSON_CreateIntArray(w, 2), &failed);
  } else {
    add(o, MP_K_ADV_LOSS_SCALE_LOG2, cJSON_CreateNull(), &failed);
  }
  add(o, MP_K_ADV_LOSS_SCALE_ESTIMATE, cJSON_CreateBool(a->has_window && a->window_estimate),
      &failed);
  add(o, MP_K_ADV_FP8_E4M3,
      a->judged ? fp8_advice_to_json(&a->fp8_e4m3, &failed) : cJSON_CreateNull(), &failed);
  add(o, MP_K_ADV_FP8_E5M2,
      a->judged ? fp8_advice_to_json(&a->fp8_e5m2, &failed) : cJSON_CreateNull(), &failed);
  add(o, MP_K_ADV_RECOMMENDED,
      a->judged ? cJSON_CreateString(mp_advice_recommended_name(a)) : cJSON_CreateNull(),
      &failed); /* nothing to judge: no finite non-zero value */
  if (failed) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* The counts array is one raw item holding its JSON text ("[3,0,17]"): one
 * allocation instead of two per bin (a report of 100k sites writes millions
 * of bins; the per-bin nodes were most of report.json's writing time). */
static cJSON *hist_to_json(const mp_stats *s, int *failed) {
  cJSON *h = cJSON_CreateObject();
  int lo, hi;
  mp_stats_hist_written(s, &lo, &hi);
  size_t nbins = hi >= lo ? (size_t)(hi - lo + 1) : 0;
  size_t cap = 3 + nbins * 21; /* "[", up to 20 digits and a separator per bin, "]", NUL */
  char *text = malloc(cap);
  if (!h || !text) {
    cJSON_Delete(h);
    free(text);
    *failed = 1;
    return NULL;
  }
  size_t len = 0;
  text[len++] = '[';
  for (int e = lo; e <= hi; e++)
    len += (size_t)snprintf(text + len, cap - len, "%s%" PRIu64, e > lo ? "," : "",
                            mp_stats_hist_bin(s, e));
  text[len++] = ']';
  text[len] = '\0';
  add(h, MP_K_HIST_LO, cJSON_CreateNumber(lo), failed);
  add(h, MP_K_HIST_HI, cJSON_CreateNumber(hi), failed);
  add(h, MP_K_HIST_COUNTS, cJSON_CreateRaw(text), failed);
  free(text);
  return h;
}

static cJSON *casts_to_json(const mp_stats *s, int *failed) {
  cJSON *casts = cJSON_CreateObject();
  if (!casts) {
    *failed = 1;
    return NULL;
  }
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    cJSON *o = cJSON_CreateObject();
    if (!o) {
      *failed = 1;
      break;
    }
    for (int k = 0; k < MP_CAST_OUTCOMES; k++)
      add(o, outcome_names[k], mpprof_json_u64(s->casts[t][k]), failed);
    add(casts, mp_target_name((mp_target)t), o, failed);
  }
  return casts;
}

cJSON *mpprof_stats_to_json(const mp_stats *s, const mp_advice *advice) {
  int failed = 0;
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  add(o, MP_K_DTYPE,
      s->dtype == MP_DTYPE_INVALID ? cJSON_CreateNull()
                                   : cJSON_CreateString(mp_dtype_name(s->dtype)),
      &failed);
  add(o, MP_K_COUNT, mpprof_json_u64(s->count), &failed);
  add(o, MP_K_ZEROS, mpprof_json_u64(s->zeros), &failed);
  add(o, MP_K_NANS, mpprof_json_u64(s->nans), &failed);
  add(o, MP_K_POS_INFS, mpprof_json_u64(s->pos_infs), &failed);
  add(o, MP_K_NEG_INFS, mpprof_json_u64(s->neg_infs), &failed);
  add(o, MP_K_NEGATIVES, mpprof_json_u64(s->negatives), &failed);
  if (s->saturated) add(o, MP_K_SATURATED, mpprof_json_u64(s->saturated), &failed);
  add(o, MP_K_MIN, mpprof_json_double(s->min), &failed);
  add(o, MP_K_MAX, mpprof_json_double(s->max), &failed);
  add(o, MP_K_ABSMAX, mpprof_json_double(s->absmax), &failed);
  add(o, MP_K_MIN_ABS_NONZERO, mpprof_json_double(s->min_abs_nonzero), &failed);
  add(o, MP_K_EXP_HIST, hist_to_json(s, &failed), &failed);
  add(o, MP_K_CASTS, casts_to_json(s, &failed), &failed);
  if (advice) add(o, MP_K_ADVICE, mpprof_advice_to_json(advice), &failed);
  if (failed) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* A UTF-8 copy of text (bytes that are not UTF-8 replaced) as a JSON string. */
static cJSON *utf8_string(const char *text) {
  char *copy = strdup(text);
  if (!copy) return NULL;
  mpp_utf8_sanitize(copy, strlen(copy));
  cJSON *j = cJSON_CreateString(copy);
  free(copy);
  return j;
}

cJSON *mpprof_tensor_to_json(const char *file, const char *tensor, const uint64_t *shape, int ndim,
                             const mp_stats *s, const mp_advice *advice) {
  int failed = 0;
  cJSON *stats = mpprof_stats_to_json(s, advice);
  cJSON *o = cJSON_CreateObject();
  cJSON *dims = cJSON_CreateArray();
  if (!stats || !o || !dims) {
    cJSON_Delete(stats);
    cJSON_Delete(o);
    cJSON_Delete(dims);
    return NULL;
  }
  for (int i = 0; i < ndim; i++) {
    cJSON *d = mpprof_json_u64(shape[i]);
    if (!d || !cJSON_AddItemToArray(dims, d)) {
      cJSON_Delete(d);
      failed = 1;
    }
  }
  add(o, MP_K_SCHEMA, cJSON_CreateString(MP_SCHEMA_TENSOR), &failed);
  /* A path is bytes: those that are not UTF-8 are replaced (common/utf8.h),
   * so the object is valid JSON whatever the file is called. */
  add(o, MP_K_FILE, utf8_string(file), &failed);
  if (tensor) add(o, MP_K_TENSOR, utf8_string(tensor), &failed);
  /* Key order as documented: dtype before shape, the other stats after. */
  add(o, MP_K_DTYPE, cJSON_DetachItemFromObjectCaseSensitive(stats, MP_K_DTYPE), &failed);
  add(o, MP_K_SHAPE, dims, &failed);
  while (stats->child) {
    cJSON *item = cJSON_DetachItemViaPointer(stats, stats->child);
    if (!cJSON_AddItemToArray(o, item)) { /* keeps item's key */
      cJSON_Delete(item);
      failed = 1;
    }
  }
  cJSON_Delete(stats);
  if (failed) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* ---- reading ---- */

static int read_count(const cJSON *obj, const char *where, const char *key, uint64_t *ret,
                      char *err, size_t errlen) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!item) return mpprof_tensorio_fail(err, errlen, "%s%s: missing", where, key);
  if (get_u64(item, ret) < 0)
    return mpprof_tensorio_fail(err, errlen, "%s%s: not a non-negative integer", where, key);
  return 0;
}

/* A finite number, or null meaning "none" (then *ret is left as initialised). */
static int read_extreme(const cJSON *obj, const char *key, double *ret, char *err, size_t errlen) {
  const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!item) return mpprof_tensorio_fail(err, errlen, "%s: missing", key);
  if (cJSON_IsNull(item)) return 0;
  double d;
  if (mpprof_json_get_double(item, &d) < 0 || !isfinite(d))
    return mpprof_tensorio_fail(err, errlen, "%s: not a number or null", key);
  *ret = d;
  return 0;
}

static int read_counts(const cJSON *counts, int lo, int hi, mp_stats *s, char *err, size_t errlen);

static int read_hist(const cJSON *obj, mp_stats *s, char *err, size_t errlen) {
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(obj, MP_K_EXP_HIST);
  if (!cJSON_IsObject(h))
    return mpprof_tensorio_fail(err, errlen, MP_K_EXP_HIST ": missing or not an object");
  int lo, hi;
  if (get_int(cJSON_GetObjectItemCaseSensitive(h, MP_K_HIST_LO), &lo) < 0 ||
      get_int(cJSON_GetObjectItemCaseSensitive(h, MP_K_HIST_HI), &hi) < 0)
    return mpprof_tensorio_fail(err, errlen, MP_K_EXP_HIST ": lo/hi missing or not integers");
  if (lo < MP_HIST_MIN || hi > MP_HIST_MAX || lo > hi)
    return mpprof_tensorio_fail(err, errlen, MP_K_EXP_HIST ": range [%d, %d] not within [%d, %d]",
                                lo, hi, MP_HIST_MIN, MP_HIST_MAX);
  const cJSON *counts = cJSON_GetObjectItemCaseSensitive(h, MP_K_HIST_COUNTS);
  /* A tree made by mpprof_stats_to_json (not parsed from text) holds the
   * counts as one raw item: its text is parsed here. */
  cJSON *parsed = NULL;
  if (cJSON_IsRaw(counts) && counts->valuestring)
    counts = parsed = cJSON_Parse(counts->valuestring);
  int rc = read_counts(counts, lo, hi, s, err, errlen);
  cJSON_Delete(parsed);
  return rc;
}

static int read_counts(const cJSON *counts, int lo, int hi, mp_stats *s, char *err, size_t errlen) {
  if (!cJSON_IsArray(counts))
    return mpprof_tensorio_fail(err, errlen,
                                MP_K_EXP_HIST "." MP_K_HIST_COUNTS ": missing or not an array");
  int n = cJSON_GetArraySize(counts);
  if (n != hi - lo + 1)
    return mpprof_tensorio_fail(
        err, errlen, MP_K_EXP_HIST "." MP_K_HIST_COUNTS ": %d entries, expected %d (lo %d, hi %d)",
        n, hi - lo + 1, lo, hi);
  s->hist_lo = lo;
  s->hist_hi = hi;
  mp_stats_hist_read_range(s->dtype, &s->hist_lo, &s->hist_hi);
  int e = lo;
  const cJSON *c;
  cJSON_ArrayForEach(c, counts) {
    if (get_u64(c, &s->exp_hist[e - MP_HIST_MIN]) < 0)
      return mpprof_tensorio_fail(
          err, errlen, MP_K_EXP_HIST "." MP_K_HIST_COUNTS "[%d]: not a non-negative integer",
          e - lo);
    e++;
  }
  return 0;
}

static int read_casts(const cJSON *obj, mp_stats *s, char *err, size_t errlen) {
  const cJSON *casts = cJSON_GetObjectItemCaseSensitive(obj, MP_K_CASTS);
  if (!cJSON_IsObject(casts))
    return mpprof_tensorio_fail(err, errlen, MP_K_CASTS ": missing or not an object");
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    const char *name = mp_target_name((mp_target)t);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(casts, name);
    if (!cJSON_IsObject(o))
      return mpprof_tensorio_fail(err, errlen, MP_K_CASTS ".%s: missing or not an object", name);
    char where[48];
    snprintf(where, sizeof where, MP_K_CASTS ".%s.", name);
    for (int k = 0; k < MP_CAST_OUTCOMES; k++)
      if (read_count(o, where, outcome_names[k], &s->casts[t][k], err, errlen) < 0) return -1;
  }
  return 0;
}

/* Sum with overflow detection; returns -1 when the sum exceeds 2^64 - 1. */
static int add_u64(uint64_t *acc, uint64_t v) {
  if (*acc > UINT64_MAX - v) return -1;
  *acc += v;
  return 0;
}

static int check_sums(const mp_stats *s, char *err, size_t errlen) {
  uint64_t special = 0;
  if (add_u64(&special, s->zeros) || add_u64(&special, s->nans) || add_u64(&special, s->pos_infs) ||
      add_u64(&special, s->neg_infs) || special > s->count)
    return mpprof_tensorio_fail(err, errlen, "zeros + nans + infs exceed count %" PRIu64, s->count);
  if (s->saturated > s->count)
    return mpprof_tensorio_fail(err, errlen, "saturated %" PRIu64 " exceeds count %" PRIu64,
                                s->saturated, s->count);
  if (s->negatives > s->count)
    return mpprof_tensorio_fail(err, errlen, "negatives %" PRIu64 " exceed count %" PRIu64,
                                s->negatives, s->count);
  const uint64_t finite_nonzero = s->count - special;
  for (int t = 0; t < MP_TARGET_COUNT; t++) {
    uint64_t sum = 0;
    for (int k = 0; k < MP_CAST_OUTCOMES; k++)
      if (add_u64(&sum, s->casts[t][k])) sum = UINT64_MAX;
    if (sum != finite_nonzero)
      return mpprof_tensorio_fail(err, errlen,
                                  MP_K_CASTS ".%s: outcomes sum to %" PRIu64 ", expected %" PRIu64
                                             " finite non-zero values",
                                  mp_target_name((mp_target)t), sum, finite_nonzero);
  }
  uint64_t hsum = 0;
  for (int e = s->hist_lo; e <= s->hist_hi; e++)
    if (add_u64(&hsum, s->exp_hist[e - MP_HIST_MIN])) hsum = UINT64_MAX;
  if (hsum != finite_nonzero)
    return mpprof_tensorio_fail(err, errlen,
                                MP_K_EXP_HIST ": counts sum to %" PRIu64 ", expected %" PRIu64
                                              " finite non-zero values",
                                hsum, finite_nonzero);
  return 0;
}

int mpprof_stats_from_json(const cJSON *obj, mp_stats *ret, char *err, size_t errlen) {
  if (!cJSON_IsObject(obj)) return mpprof_tensorio_fail(err, errlen, "stats: not an object");
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(obj, MP_K_DTYPE);
  mp_dtype dtype;
  if (cJSON_IsNull(dt)) {
    dtype = MP_DTYPE_INVALID; /* a merge of different source dtypes */
  } else if (cJSON_IsString(dt)) {
    dtype = mp_dtype_from_name(dt->valuestring);
    if (!mp_dtype_scannable(dtype))
      return mpprof_tensorio_fail(err, errlen, MP_K_DTYPE ": '%s' is not a source dtype",
                                  dt->valuestring);
  } else {
    return mpprof_tensorio_fail(err, errlen, MP_K_DTYPE ": missing or not a string");
  }
  /* The "none" values of min/max/... are whatever mp_stats_init uses, so a
   * record with no finite value reads back identical to a fresh one. */
  memset(ret, 0, sizeof *ret);
  mp_stats_init(ret, dtype == MP_DTYPE_INVALID ? MP_FP64 : dtype);
  ret->dtype = dtype;
  memset(ret->exp_hist, 0, sizeof ret->exp_hist);
  if (read_count(obj, "", MP_K_COUNT, &ret->count, err, errlen) ||
      read_count(obj, "", MP_K_ZEROS, &ret->zeros, err, errlen) ||
      read_count(obj, "", MP_K_NANS, &ret->nans, err, errlen) ||
      read_count(obj, "", MP_K_POS_INFS, &ret->pos_infs, err, errlen) ||
      read_count(obj, "", MP_K_NEG_INFS, &ret->neg_infs, err, errlen) ||
      read_count(obj, "", MP_K_NEGATIVES, &ret->negatives, err, errlen) ||
      read_extreme(obj, MP_K_MIN, &ret->min, err, errlen) ||
      read_extreme(obj, MP_K_MAX, &ret->max, err, errlen) ||
      read_extreme(obj, MP_K_ABSMAX, &ret->absmax, err, errlen) ||
      read_extreme(obj, MP_K_MIN_ABS_NONZERO, &ret->min_abs_nonzero, err, errlen) ||
      read_hist(obj, ret, err, errlen) || read_casts(obj, ret, err, errlen))
    return -1;
  if (cJSON_GetObjectItemCaseSensitive(obj, MP_K_SATURATED) &&
      read_count(obj, "", MP_K_SATURATED, &ret->saturated, err, errlen))
    return -1;
  return check_sums(ret, err, errlen);
}
