/* `mpprof diff A B`: two runs' reports side by side (e.g. the fp32 and the AMP
 * run of one program). Reads A/report.json and B/report.json (built by
 * `mpprof run` / `mpprof report`), matches layers by name and op sites by
 * (NVTX path, op, shape) — not by dtype, which is what changes between the
 * runs — and writes OUT/diff.json (schema mpprof.diff/1) and OUT/diff.html.
 *
 * Per layer, before and after: dtypes, compute types, TC share (Tensor Core
 * kernel time over kernel time), GPU time, fp16 overflow/flush percent,
 * verdict. Sites present in one run only are listed. The two runs' plan.json
 * are compared too (the recommended autocast dtype and loss scale, and each
 * layer the plans run otherwise); a plan.json not read is one line in
 * diff.json plan_unread and on stderr, and the rest is diffed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/schema_keys.h"
#include "report/diff.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

/* Whether text that did not parse is the start of a JSON object or array cut
 * short: it opens one and ends inside a string or an open bracket, with no
 * bracket closed that was not open. */
static bool ends_early(const char *text, size_t len) {
  size_t i = 0, depth = 0;
  while (i < len && mpprof_json_space(text[i]))
    i++;
  if (i == len || (text[i] != '{' && text[i] != '[')) return false;
  bool in_string = false;
  for (; i < len; i++) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      depth++;
    } else if (c == '}' || c == ']') {
      if (depth-- == 0) return false;
      if (depth == 0) return false; /* the top value closed: the fault is elsewhere */
    }
  }
  return in_string || depth > 0;
}

/* A JSON file of a run directory that the diff reads (both are written by
 * `mpprof run` and rewritten by `mpprof report`): its name, its schema id, what
 * it is called when it is not one ("not an mpprof report"), the keys the diff
 * needs (for the message) and whether a value of its schema has them. */
typedef struct run_file {
  const char *name, *schema, *what, *keys;
  bool (*has_keys)(const cJSON *j);
} run_file;

static bool report_has_keys(const cJSON *j) {
  return cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "layers")) &&
         cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "sites"));
}

/* recommended: null (no layer has a verdict) or a plan with its layers. */
static bool plan_has_keys(const cJSON *j) {
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "recommended");
  return cJSON_IsNull(r) ||
         (cJSON_IsObject(r) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "layers")));
}

static const run_file report_file = {"report.json", MP_SCHEMA_REPORT, "report", "layers/sites",
                                     report_has_keys};
static const run_file plan_file = {"plan.json", MP_SCHEMA_PLAN, "plan", "recommended/layers",
                                   plan_has_keys};

/* DIR/rf->name parsed, or NULL with ret_error set to one line naming the file
 * and what is wrong with it ("DIR/report.json: truncated ..."). */
#define MAX_LEADING_SPACE (1u << 20)

static cJSON *load_run_file(const char *dir, const run_file *rf, mpprof_error *ret_error) {
  char *path = mpprof_asprintf("%s/%s", dir, rf->name);
  if (!path) {
    mpprof_error_set(ret_error, ENOMEM, "out of memory");
    return NULL;
  }
  /* Non-blocking, and only a regular file is read: a FIFO must not hang. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    mpprof_error_set(ret_error, EINVAL, "%s: not a regular file", path);
    free(path);
    return NULL;
  }
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    int e = errno;
    if (fd >= 0) close(fd);
    if (e == ENOENT) /* a run whose report was never built */
      mpprof_error_set(ret_error, e, "%s: %s (run 'mpprof report %s' first?)", path, strerror(e),
                       dir);
    else
      mpprof_error_set(ret_error, e, "%s: %s", path, strerror(e));
    free(path);
    return NULL;
  }
  /* Read to its end only while it can be one: a file that does not start
   * as a JSON object (a garbage file of any size) is rejected at once. */
  char *text = NULL;
  size_t len = 0, cap = 0, ws = 0;
  bool not_object = false;
  for (;;) {
    if (len + 65536 + 1 > cap) {
      cap = cap ? cap * 2 : 1 << 20;
      char *n = realloc(text, cap);
      if (!n) break;
      text = n;
    }
    errno = 0;
    size_t r = fread(text + len, 1, cap - len - 1, f);
    len += r;
    while (ws < len && mpprof_json_space(text[ws]))
      ws++;
    /* Whitespace before it beyond the first read is no report either (one
     * mpprof wrote has none): a file of spaces is not read to its end. */
    not_object = ws < len ? text[ws] != '{' : ws > MAX_LEADING_SPACE;
    if (r == 0 || not_object) break;
  }
  int read_err = ferror(f) ? (errno ? errno : EIO) : 0; /* the failed fread's errno */
  fclose(f);
  cJSON *j = NULL;
  if (text && !not_object && !read_err) {
    text[len] = 0;
    /* The whole file is one JSON value: text after it is not a report. */
    const char *end = NULL;
    j = cJSON_ParseWithLengthOpts(text, len + 1, &end, true);
  }
  bool truncated = !j && text && !not_object && !read_err && ends_early(text, len);
  free(text);
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(j, "schema");
  const char *sv = cJSON_IsString(schema) ? schema->valuestring : NULL;
  if (read_err) {
    mpprof_error_set(ret_error, read_err, "%s: cannot read: %s", path, strerror(read_err));
  } else if (truncated) {
    mpprof_error_set(ret_error, EINVAL,
                     "%s: truncated (the JSON ends early; rebuild it with 'mpprof report %s')",
                     path, dir);
  } else if (sv && strcmp(sv, rf->schema) && !strncmp(sv, rf->schema, strlen(rf->schema) - 1)) {
    mpprof_error_set(ret_error, EINVAL,
                     "%s: unsupported version (schema \"%.40s\"; this mpprof reads %s)", path, sv,
                     rf->schema);
  } else if (sv && strcmp(sv, rf->schema)) {
    mpprof_error_set(ret_error, EINVAL, "%s: not an mpprof %s (schema \"%.40s\")", path, rf->what,
                     sv);
  } else if (j && (!sv || !rf->has_keys(j))) {
    mpprof_error_set(ret_error, EINVAL, "%s: not an mpprof %s (schema or %s missing)", path,
                     rf->what, rf->keys);
  } else if (!j) {
    mpprof_error_set(ret_error, EINVAL, "%s: not an mpprof %s (%s)", path, rf->what,
                     not_object ? "not a JSON object"
                     : len      ? "not JSON"
                                : "empty file");
  } else {
    free(path);
    return j;
  }
  cJSON_Delete(j);
  free(path);
  return NULL;
}

static cJSON *load_report(const char *dir, mpprof_error *ret_error) {
  /* A run that is not there is named itself, not its report.json (with a
   * hint to run `mpprof report` on a directory that does not exist). */
  struct stat dst;
  if (stat(dir, &dst) != 0) {
    int e = errno;
    mpprof_error_set(ret_error, e, "diff: %s: %s", dir, strerror(e));
    return NULL;
  }
  if (!S_ISDIR(dst.st_mode)) {
    mpprof_error_set(ret_error, ENOTDIR,
                     "diff: %s: not a directory (give the output directory of a run, the one "
                     "holding report.json)",
                     dir);
    return NULL;
  }
  mpprof_error e = {0};
  cJSON *j = load_run_file(dir, &report_file, &e);
  if (!j) mpprof_error_set(ret_error, e.errnum, "diff: %s", e.message);
  return j;
}

static const cJSON *get(const cJSON *o, const char *k) {
  return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double num(const cJSON *o, const char *k, double dflt) {
  double d;
  return mpprof_json_get_double(get(o, k), &d) ? dflt : d;
}

/* Layers and sites are looked up by name or match key in a sorted index, and
 * a layer's sites by position in an array: the diff is O(n log n) in layers
 * and sites (it was quadratic: two reports of 20k sites took minutes). */
typedef struct keyed {
  char *key; /* owned */
  const cJSON *item;
} keyed;

typedef struct key_index {
  keyed *v;
  size_t n;
} index_t;

static int keyed_cmp(const void *a, const void *b) {
  return strcmp(((const keyed *)a)->key, ((const keyed *)b)->key);
}

static void index_free(index_t *ix) {
  for (size_t i = 0; ix->v && i < ix->n; i++)
    free(ix->v[i].key);
  free(ix->v);
  memset(ix, 0, sizeof *ix);
}

/* Every element of arr with a key (key_of returns NULL to skip it), sorted
 * (a lookup asks whether a key is there, or finds a layer by its unique
 * name: ties need no order). -1 when out of memory. */
static int index_build(const cJSON *arr, char *(*key_of)(const cJSON *), index_t *ret) {
  memset(ret, 0, sizeof *ret);
  int n = cJSON_GetArraySize(arr);
  ret->v = calloc(n > 0 ? (size_t)n : 1, sizeof *ret->v);
  if (!ret->v) return -1;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    char *k = key_of(e);
    if (!k) continue;
    ret->v[ret->n].key = k;
    ret->v[ret->n].item = e;
    ret->n++;
  }
  qsort(ret->v, ret->n, sizeof *ret->v, keyed_cmp);
  return 0;
}

static const cJSON *index_find(const index_t *ix, const char *key) {
  size_t lo = 0, hi = ix->n;
  while (lo < hi) { /* the first element not below key */
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(ix->v[mid].key, key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < ix->n && !strcmp(ix->v[lo].key, key) ? ix->v[lo].item : NULL;
}

static char *layer_name_key(const cJSON *l) {
  const cJSON *n = get(l, "name");
  return cJSON_IsString(n) ? strdup(n->valuestring) : NULL;
}

/* "A=fp16 B=fp16 D=fp32": a layer's dtypes object flattened. */
static char *dtypes_str(const cJSON *l) {
  char buf[256] = "";
  const cJSON *role, *d;
  cJSON_ArrayForEach(role, get(l, "dtypes")) {
    size_t used = strlen(buf);
    snprintf(buf + used, sizeof buf - used, "%s%s=", used ? " " : "", role->string);
    bool first = true;
    cJSON_ArrayForEach(d, role) if (cJSON_IsString(d)) {
      used = strlen(buf);
      snprintf(buf + used, sizeof buf - used, "%s%s", first ? "" : "|", d->valuestring);
      first = false;
    }
  }
  return strdup(buf);
}

static char *strings_str(const cJSON *arr) {
  char buf[256] = "";
  const cJSON *d;
  cJSON_ArrayForEach(d, arr) if (cJSON_IsString(d)) {
    size_t used = strlen(buf);
    snprintf(buf + used, sizeof buf - used, "%s%s", used ? " " : "", d->valuestring);
  }
  return strdup(buf);
}

/* A report's sites by position (a layer's "sites" are their indices; cJSON's
 * own lookup by index walks the list). */
typedef struct site_vec {
  const cJSON **at;
  size_t n;
} site_vec;

static int site_vec_build(const cJSON *rep, site_vec *ret) {
  const cJSON *arr = get(rep, "sites"), *s;
  int n = cJSON_GetArraySize(arr);
  ret->n = 0;
  ret->at = calloc(n > 0 ? (size_t)n : 1, sizeof *ret->at);
  if (!ret->at) return -1;
  cJSON_ArrayForEach(s, arr) ret->at[ret->n++] = s;
  return 0;
}

/* TF32 when some site of the layer runs TF32 (report.json sites[].tf32). */
static bool layer_tf32(const site_vec *sites, const cJSON *l) {
  const cJSON *id;
  cJSON_ArrayForEach(id, get(l, "sites")) {
    double d;
    if (mpprof_json_get_double(id, &d) || !(d >= 0 && d < (double)sites->n)) continue;
    if (cJSON_IsTrue(get(sites->at[(size_t)d], "tf32"))) return true;
  }
  return false;
}

/* One side of a layer row. */
static cJSON *side_json(const site_vec *sites, const cJSON *l) {
  if (!l) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  char *dt = dtypes_str(l), *ct = strings_str(get(l, "compute_types"));
  cJSON_AddStringToObject(o, "dtypes", dt ? dt : "");
  cJSON_AddStringToObject(o, "compute_types", ct ? ct : "");
  free(dt);
  free(ct);
  cJSON_AddBoolToObject(o, "tf32", layer_tf32(sites, l));
  double kns = num(l, "kernel_ns", 0), tns = num(l, "tc_ns", 0);
  cJSON_AddItemToObject(o, "tc_share",
                        kns > 0 ? mpprof_json_double(tns / kns) : cJSON_CreateNull());
  const cJSON *g = get(l, "gpu_ns");
  cJSON_AddItemToObject(o, "gpu_ns",
                        g && !cJSON_IsNull(g) ? cJSON_Duplicate(g, true) : cJSON_CreateNull());
  const cJSON *pc = get(l, "percent"), *sh = get(l, "shares");
  cJSON_AddItemToObject(o, "fp16_overflow_pct", mpprof_json_double(num(pc, "fp16_overflow", 0)));
  cJSON_AddItemToObject(o, "fp16_underflow_pct", mpprof_json_double(num(pc, "fp16_underflow", 0)));
  /* The same for the worst gradient as recorded, at the loss scale the run
   * applied: what a change of loss scale changes (the above are unscaled). */
  static const char *const applied[][2] = {
      {"fp16_overflow_at_applied_scale", "fp16_overflow_at_applied_scale_pct"},
      {"fp16_underflow_at_applied_scale", "fp16_underflow_at_applied_scale_pct"}};
  for (size_t i = 0; i < 2; i++) {
    double pct;
    cJSON_AddItemToObject(o, applied[i][1],
                          mpprof_json_get_double(get(get(sh, applied[i][0]), "pct"), &pct)
                              ? cJSON_CreateNull()
                              : mpprof_json_double(pct));
  }
  /* Which tensor each of the four is of (report.json shares.*.tensor): two
   * runs' figures of different tensors (a gradient all zero in one run, so
   * the worst tensor there is a forward one) are not the same measurement. */
  static const char *const named[][2] = {
      {"fp16_overflow", "fp16_overflow_tensor"},
      {"fp16_underflow", "fp16_underflow_tensor"},
      {"fp16_overflow_at_applied_scale", "fp16_overflow_at_applied_scale_tensor"},
      {"fp16_underflow_at_applied_scale", "fp16_underflow_at_applied_scale_tensor"}};
  for (size_t i = 0; i < 4; i++) {
    const cJSON *t = get(get(sh, named[i][0]), "tensor");
    cJSON_AddItemToObject(o, named[i][1],
                          cJSON_IsString(t) ? cJSON_CreateString(t->valuestring)
                                            : cJSON_CreateNull());
  }
  const cJSON *rec = get(get(l, "advice"), "recommended");
  cJSON_AddItemToObject(o, "verdict",
                        cJSON_IsString(rec) ? cJSON_CreateString(rec->valuestring)
                                            : cJSON_CreateNull());
  return o;
}

/* ---- measured error (shadow execution, `--shadow`) ---- */

/* diff.json's measured-error keys (docs/report.md, "Comparing two runs"): per
 * run whether it measured; per layer in both runs, each side's limit, why it
 * has nothing measured, and its candidates, each with report.json's own
 * metric keys (MP_RK_SHADOW_CAND, MP_K_SH_INPUTS_ALREADY_ROUNDED) and values. */
#define DK_RUN_SHADOW "shadow"
#define DK_RUN_DEVICES "devices"
#define DK_MEASURED_ERROR "measured_error"
#define DK_ME_LIMIT MPPROF_K_SHADOW_MAX_REL
#define DK_ME_NOT_MEASURED "not_measured"
#define DK_ME_CANDIDATES "candidates"
#define DK_ME_CROSSED "current_crossed_limit"
#define DK_ME_NARROWER "current_on_narrower_operands"
#define DK_MN_OPERANDS "operands"
#define DK_MN_OTHER_OPERANDS "other_run_operands"
#define DK_MN_OTHER_CAND "other_run_candidate"
#define DK_MN_OTHER_REL "other_run_rel_l2"

/* Why a side of a layer has no measured error: diff.json not_measured, and
 * what the page and the summary say. */
enum { NM_NO_SHADOW, NM_NOT_SHADOWED, NM_NO_MEASURED_CALL, NM_COUNT };
static const char *const not_measured[NM_COUNT][2] = {
    {"no_shadow", "the run was not profiled with --shadow"},
    {"not_shadowed", "none of the layer's ops was shadowed"},
    {"no_measured_call",
     "no shadowed call of the layer measured anything (report.json shadow.skipped says why)"},
};

/* Whether a run measured errors: something was shadowed (report.json
 * summary.verdict_basis). */
static bool run_shadowed(const cJSON *rep) {
  const cJSON *vb = get(get(rep, "summary"), MPPROF_K_VERDICT_BASIS);
  return cJSON_IsString(vb) && !strcmp(vb->valuestring, MPPROF_VERDICT_BASIS_MEASURED);
}

/* A layer's measured candidates (report.json layers[].shadow.candidates). */
static const cJSON *layer_candidates(const cJSON *l) {
  return get(get(l, MP_RK_SITE.shadow), MP_RK_SHADOW.candidates);
}

/* A measured rel_l2 as diff.json and report.json hold it: a number, or null
 * for infinite (*ret INFINITY); -1 when it is neither. */
static int rel_value(const cJSON *v, double *ret) {
  if (cJSON_IsNull(v)) {
    *ret = INFINITY;
    return 0;
  }
  return mpprof_json_get_double(v, ret) ? -1 : 0;
}

/* A side's measured `current` (diff.json measured_error.<side>.candidates), or NULL. */
static const cJSON *side_current(const cJSON *side) {
  return get(get(side, DK_ME_CANDIDATES), mp_shadow_cand_name(MP_SH_CURRENT));
}

/* One candidate as diff.json gives it: report.json's calls, rel_l2 (null:
 * infinite) and inputs_already_rounded, copied. */
static cJSON *candidate_json(const cJSON *c) {
  const char *const keys[] = {MP_RK_SHADOW_CAND.calls, MP_RK_SHADOW_CAND.rel_l2,
                              MP_K_SH_INPUTS_ALREADY_ROUNDED};
  cJSON *o = cJSON_CreateObject();
  for (size_t i = 0; o && i < sizeof keys / sizeof *keys; i++) {
    const cJSON *v = get(c, keys[i]);
    cJSON_AddItemToObject(o, keys[i], v ? cJSON_Duplicate(v, true) : cJSON_CreateNull());
  }
  return o;
}

/* One side of a layer's measured error: the limit its run judged by (null
 * without --shadow), why nothing was measured (null when something was), and
 * its candidates: `current`, and each one measured in the other run too. */
static cJSON *measured_side_json(const cJSON *rep, const cJSON *l, const cJSON *other) {
  cJSON *o = cJSON_CreateObject();
  bool shadowed = run_shadowed(rep);
  double lim;
  cJSON_AddItemToObject(
      o, DK_ME_LIMIT,
      shadowed && !mpprof_json_get_double(get(get(rep, "summary"), MPPROF_K_SHADOW_MAX_REL), &lim)
          ? mpprof_json_double(lim)
          : cJSON_CreateNull());
  const cJSON *cs = layer_candidates(l), *c;
  int why = !shadowed                                    ? NM_NO_SHADOW
            : !cJSON_IsObject(get(l, MP_RK_SITE.shadow)) ? NM_NOT_SHADOWED
            : !cJSON_GetArraySize(cs)                    ? NM_NO_MEASURED_CALL
                                                         : -1;
  cJSON_AddItemToObject(o, DK_ME_NOT_MEASURED,
                        why < 0 ? cJSON_CreateNull() : cJSON_CreateString(not_measured[why][0]));
  cJSON *out = cJSON_AddObjectToObject(o, DK_ME_CANDIDATES);
  const char *current = mp_shadow_cand_name(MP_SH_CURRENT);
  cJSON_ArrayForEach(c, cs) {
    if (!cJSON_IsObject(c) ||
        (strcmp(c->string, current) && !cJSON_IsObject(get(layer_candidates(other), c->string))))
      continue;
    cJSON_AddItemToObject(out, c->string, candidate_json(c));
  }
  return o;
}

/* A side's measured `current` against its limit: 1 within, 0 above (null
 * rel_l2: infinite), -1 not measured. */
static int current_within(const cJSON *side) {
  const cJSON *c = side_current(side);
  double lim, e;
  if (!c || mpprof_json_get_double(get(side, DK_ME_LIMIT), &lim) ||
      rel_value(get(c, MP_RK_SHADOW_CAND.rel_l2), &e))
    return -1;
  return e <= lim;
}

/* The one operand dtype of a layer's A and B (report.json layers[].dtypes):
 * MP_DTYPE_INVALID when they differ or are several (a mixed layer). */
static mp_dtype layer_operand_dtype(const cJSON *l) {
  mp_dtype d = MP_DTYPE_INVALID;
  const char *const roles[] = {"A", "B"};
  for (int r = 0; r < 2; r++) {
    const cJSON *list = get(get(l, "dtypes"), roles[r]);
    if (cJSON_GetArraySize(list) != 1) return MP_DTYPE_INVALID;
    mp_dtype x = mp_dtype_from_name(cJSON_GetStringValue(cJSON_GetArrayItem(list, 0)));
    if (x == MP_DTYPE_INVALID || (r && x != d)) return MP_DTYPE_INVALID;
    d = x;
  }
  return d;
}

/* diff.json measured_error.<side>.current_on_narrower_operands: a layer
 * whose operands are of fewer mantissa bits in this run than in the other
 * (fp32 in A, bf16 in B) has a `current` measured from operands the program
 * already rounded: it is the op's own error, without the rounding of its
 * inputs into that format, so it is no measure of what moving the layer
 * cost. Says the two operand dtypes and, when the other run measured a
 * candidate of this run's operand format from its wider operands, the
 * lowest such (other_run_candidate, other_run_rel_l2): that measurement
 * includes the input rounding. Null otherwise. */
static cJSON *narrower_json(const cJSON *l, const cJSON *other, const cJSON *other_cands) {
  mp_dtype d = layer_operand_dtype(l), o = layer_operand_dtype(other);
  const mp_format *fd = mp_format_of(d), *fo = mp_format_of(o);
  if (!fd || !fo || !fd->is_float || !fo->is_float || fd->man_bits >= fo->man_bits)
    return cJSON_CreateNull();
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, DK_MN_OPERANDS, mp_dtype_name(d));
  cJSON_AddStringToObject(j, DK_MN_OTHER_OPERANDS, mp_dtype_name(o));
  const char *best = NULL;
  double best_rel = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, other_cands) {
    int k = mp_shadow_cand_from_name(c->string);
    double e;
    if (k < 0 || mp_shadow_cand_format((mp_shadow_cand)k) != d ||
        rel_value(get(c, MP_RK_SHADOW_CAND.rel_l2), &e))
      continue;
    if (!best || e < best_rel) {
      best = c->string;
      best_rel = e;
    }
  }
  cJSON_AddItemToObject(j, DK_MN_OTHER_CAND, best ? cJSON_CreateString(best) : cJSON_CreateNull());
  cJSON_AddItemToObject(j, DK_MN_OTHER_REL,
                        best && isfinite(best_rel) ? mpprof_json_double(best_rel)
                                                   : cJSON_CreateNull());
  return j;
}

/* diff.json layers[].measured_error: null unless the layer is in both runs
 * (la, lb) and some run measured; else each side and whether `current`
 * crossed the limit, within in one run and above in the other (each judged by
 * its own run's limit). */
static cJSON *measured_json(const cJSON *a, const cJSON *la, const cJSON *b, const cJSON *lb) {
  if (!la || !lb || (!run_shadowed(a) && !run_shadowed(b))) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject(), *sa = measured_side_json(a, la, lb),
        *sb = measured_side_json(b, lb, la);
  int wa = current_within(sa), wb = current_within(sb);
  cJSON_AddItemToObject(o, "a", sa);
  cJSON_AddItemToObject(o, "b", sb);
  cJSON_AddBoolToObject(o, DK_ME_CROSSED, wa >= 0 && wb >= 0 && wa != wb);
  if (side_current(sa))
    cJSON_AddItemToObject(sa, DK_ME_NARROWER, narrower_json(la, lb, layer_candidates(lb)));
  if (side_current(sb))
    cJSON_AddItemToObject(sb, DK_ME_NARROWER, narrower_json(lb, la, layer_candidates(la)));
  return o;
}

/* A site's identity across runs: NVTX path, op and shape, not its dtypes. A
 * site of merged shapes (report.json shapes_merged: calls of new shapes past
 * MPPROF_MAX_SITES, m/n/k null) stands for every shape of its layer and op:
 * its shape is "*". */
static bool site_shapes_merged(const cJSON *s) {
  return cJSON_IsTrue(get(s, "shapes_merged"));
}

static char *site_layer_op_key(const cJSON *s) {
  const cJSON *l = get(s, "layer"), *op = get(s, "op");
  return mpprof_asprintf("%s|%s", cJSON_IsString(l) ? l->valuestring : "",
                         cJSON_IsString(op) ? op->valuestring : "");
}

static char *site_match_key(const cJSON *s) {
  char *lo = site_layer_op_key(s);
  if (!lo) return NULL;
  char *k = site_shapes_merged(s)
                ? mpprof_asprintf("%s|*", lo)
                : mpprof_asprintf("%s|%.0f|%.0f|%.0f|%.0f", lo, num(s, "m", 0), num(s, "n", 0),
                                  num(s, "k", 0), num(s, "batch", 1));
  free(lo);
  return k;
}

/* The other run's sites, by match key and by layer and op. */
typedef struct {
  index_t exact, layer_op;
} site_index;

/* Whether the other run has site s: a site of the same match key, or one of
 * merged shapes of its layer and op; a site of merged shapes is there when the
 * other run has any site of its layer and op. */
static bool site_in(const site_index *other, const cJSON *s, const char *key) {
  if (index_find(&other->exact, key)) return true;
  char *lo = site_layer_op_key(s);
  char *any = lo ? mpprof_asprintf("%s|*", lo) : NULL;
  bool in = lo && (site_shapes_merged(s) ? index_find(&other->layer_op, lo) != NULL
                                         : any && index_find(&other->exact, any) != NULL);
  free(any);
  free(lo);
  return in;
}

/* The sites of rep not in other (site_in). */
static cJSON *only_in(const cJSON *rep, const site_index *other) {
  cJSON *arr = cJSON_CreateArray();
  const cJSON *s;
  cJSON_ArrayForEach(s, get(rep, "sites")) {
    char *k = site_match_key(s);
    if (k && !site_in(other, s, k)) {
      cJSON *e = cJSON_CreateObject();
      cJSON_AddItemToObject(e, "site", cJSON_Duplicate(get(s, "id"), true));
      const cJSON *v;
      if (cJSON_IsString(v = get(s, "layer_name")))
        cJSON_AddStringToObject(e, "layer", v->valuestring);
      if (cJSON_IsString(v = get(s, "api"))) cJSON_AddStringToObject(e, "api", v->valuestring);
      if (cJSON_IsString(v = get(s, "op"))) cJSON_AddStringToObject(e, "op", v->valuestring);
      cJSON_AddStringToObject(e, "match_key", k);
      cJSON_AddItemToArray(arr, e);
    }
    free(k);
  }
  return arr;
}

static int double_cmp(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The distinct ranks of a run's processes (report.json processes[].rank),
 * ascending; empty when no process has one. */
static cJSON *ranks_json(const cJSON *rep) {
  const cJSON *procs = get(rep, "processes"), *p;
  int n = cJSON_GetArraySize(procs);
  double *v = calloc(n > 0 ? (size_t)n : 1, sizeof *v);
  size_t k = 0;
  cJSON_ArrayForEach(p, procs) {
    double r;
    if (v && !mpprof_json_get_double(get(p, "rank"), &r)) v[k++] = r;
  }
  qsort(v, k, sizeof *v, double_cmp);
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; arr && i < k; i++)
    if (!i || v[i] != v[i - 1]) cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[i]));
  free(v);
  return arr;
}

/* "rank 1", "ranks 0-3, 6": a run's ranks (ranks_json) for a sentence. */
static void ranks_text(const cJSON *ranks, char *buf, size_t n) {
  int k = cJSON_GetArraySize(ranks);
  size_t used = (size_t)snprintf(buf, n, "%s", k == 1 ? "rank " : "ranks ");
  for (int i = 0; i < k && used < n;) {
    double lo = cJSON_GetArrayItem(ranks, i)->valuedouble, hi = lo;
    int j = i + 1;
    for (; j < k && cJSON_GetArrayItem(ranks, j)->valuedouble == hi + 1; j++)
      hi++;
    used += (size_t)(hi > lo ? snprintf(buf + used, n - used, "%s%.0f-%.0f", i ? ", " : "", lo, hi)
                             : snprintf(buf + used, n - used, "%s%.0f", i ? ", " : "", lo));
    i = j;
  }
}

static bool same_device(const cJSON *a, const cJSON *b) {
  if (!cJSON_IsString(a) || !cJSON_IsString(b)) return cJSON_IsString(a) == cJSON_IsString(b);
  return !strcmp(a->valuestring, b->valuestring);
}

/* The distinct devices of a run's processes (report.json
 * processes[].device.name; null: a process without one), in process order. */
static cJSON *devices_json(const cJSON *rep) {
  cJSON *arr = cJSON_CreateArray();
  const cJSON *p;
  cJSON_ArrayForEach(p, get(rep, "processes")) {
    const cJSON *name = get(get(p, "device"), "name"), *e;
    bool seen = false;
    cJSON_ArrayForEach(e, arr) seen |= same_device(e, name);
    if (!seen)
      cJSON_AddItemToArray(arr, cJSON_IsString(name) ? cJSON_CreateString(name->valuestring)
                                                     : cJSON_CreateNull());
  }
  return arr;
}

static const char *device_at(const void *ctx, size_t i) {
  const cJSON *e = cJSON_GetArrayItem(ctx, (int)i);
  return cJSON_IsString(e) ? e->valuestring : NULL;
}

/* A run's devices as report.html names them, with its simcuda note. */
static void devices_text(const cJSON *run, char *buf, size_t n) {
  const cJSON *d = get(run, DK_RUN_DEVICES);
  bool sim;
  mpprof_device_list_text(device_at, d, (size_t)cJSON_GetArraySize(d), buf, n, &sim);
  size_t len = strlen(buf);
  if (sim && len < n) snprintf(buf + len, n - len, " (" MPPROF_SIM_DEVICE_NOTE ")");
}

static cJSON *run_json(const char *dir, const cJSON *rep) {
  cJSON *o = cJSON_CreateObject();
  char *text = mpprof_strdup_utf8(dir); /* a path is any bytes; diff.json is UTF-8 */
  cJSON_AddStringToObject(o, "dir", text ? text : "");
  free(text);
  cJSON_AddItemToObject(o, "ranks", ranks_json(rep));
  cJSON_AddItemToObject(o, DK_RUN_DEVICES, devices_json(rep));
  cJSON_AddBoolToObject(o, DK_RUN_SHADOW, run_shadowed(rep));
  const cJSON *p = get(rep, "program");
  cJSON_AddStringToObject(o, "program", cJSON_IsString(p) ? p->valuestring : "");
  const cJSON *sum = get(rep, "summary");
  const cJSON *g = get(sum, "gpu_ns");
  cJSON_AddItemToObject(o, "gpu_ns",
                        g && !cJSON_IsNull(g) ? cJSON_Duplicate(g, true) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "calls", cJSON_Duplicate(get(sum, "calls"), true));
  const cJSON *tc = get(get(rep, "tensor_cores"), "tensor_core_share");
  cJSON_AddItemToObject(o, "tc_share",
                        tc && !cJSON_IsNull(tc) ? cJSON_Duplicate(tc, true) : cJSON_CreateNull());
  /* The loss scale(s) the run applied (report.json loss_scale.applied). */
  const cJSON *ap = get(get(rep, "loss_scale"), "applied");
  double lo, hi;
  if (cJSON_IsTrue(get(ap, "known")) && !mpprof_json_get_double(get(ap, "min"), &lo) &&
      !mpprof_json_get_double(get(ap, "max"), &hi)) {
    cJSON *ls = cJSON_AddObjectToObject(o, "loss_scale_applied");
    cJSON_AddItemToObject(ls, "min", mpprof_json_double(lo));
    cJSON_AddItemToObject(ls, "max", mpprof_json_double(hi));
  } else {
    cJSON_AddNullToObject(o, "loss_scale_applied");
  }
  return o;
}

/* The file name part of the n bytes at w (up to its last '/'). */
static void word_base(const char *w, size_t n, char *buf, size_t cap) {
  const char *b = w;
  for (size_t i = 0; i < n; i++)
    if (w[i] == '/') b = w + i + 1;
  size_t len = (size_t)(w + n - b);
  if (len >= cap) len = cap - 1;
  memcpy(buf, b, len);
  buf[len] = '\0';
}

void mpprof_program_identity(const char *cmdline, char *buf, size_t n) {
  if (n == 0) return;
  buf[0] = '\0';
  const char *p = cmdline ? cmdline : "", *first = NULL;
  size_t first_len = 0;
  bool after_m = false;
  while (*p) {
    while (*p == ' ')
      p++;
    if (!*p) break;
    const char *w = p;
    while (*p && *p != ' ')
      p++;
    size_t len = (size_t)(p - w);
    if (!first) {
      first = w;
      first_len = len;
    } else if (after_m || (len > 3 && !memcmp(w + len - 3, ".py", 3))) {
      word_base(w, len, buf, n);
      return;
    }
    after_m = len == 2 && !memcmp(w, "-m", 2);
  }
  if (first) word_base(first, first_len, buf, n);
}

static int str_cmp(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

/* lines[0..n) sorted, each once, one a line, in one malloc'd string (NULL
 * when n is 0 or out of memory); frees the lines and the array. The one form
 * of a run's command lines that diff and merge compare. */
static char *line_set(char **lines, size_t n) {
  char *out = NULL;
  if (n) {
    qsort(lines, n, sizeof *lines, str_cmp);
    size_t len = 1;
    for (size_t i = 0; i < n; i++)
      len += strlen(lines[i]) + 1;
    char *end = out = malloc(len);
    for (size_t i = 0; out && i < n; i++) {
      if (i && !strcmp(lines[i], lines[i - 1])) continue;
      end = stpcpy(end, lines[i]);
      *end++ = '\n';
      *end = 0;
    }
  }
  for (size_t i = 0; i < n; i++)
    free(lines[i]);
  free(lines);
  return out;
}

/* The command lines of a run's processes from report.json (mpprof_argv_line of
 * each), as line_set gives them: a merged run holds several, a launcher and
 * its workers too. NULL when no process has one (or out of memory). */
static char *command_lines(const cJSON *rep) {
  const cJSON *procs = get(rep, "processes"), *p;
  int n = cJSON_GetArraySize(procs);
  size_t k = 0;
  char **lines = n > 0 ? calloc((size_t)n, sizeof *lines) : NULL;
  if (!lines) return NULL;
  cJSON_ArrayForEach(p, procs) {
    char *line = mpprof_argv_line(get(p, "argv"));
    if (line && *line)
      lines[k++] = line;
    else
      free(line);
  }
  return line_set(lines, k);
}

/* ---- the two runs' plans (plan.json) ---- */

/* A plan layer's key in its plan's "layers" object. */
static char *plan_layer_key(const cJSON *e) {
  return e->string ? strdup(e->string) : NULL;
}

/* One side of a plan row: how the plan runs the layer (plan.json
 * recommended.layers[name]: dtype, autocast, inside); null when the layer is
 * not in that run's plan. */
static cJSON *plan_layer_json(const cJSON *e) {
  if (!e) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  const cJSON *dt = get(e, "dtype"), *in = get(e, "inside");
  cJSON_AddItemToObject(
      o, "dtype", cJSON_IsString(dt) ? cJSON_CreateString(dt->valuestring) : cJSON_CreateNull());
  cJSON_AddBoolToObject(o, "autocast", cJSON_IsTrue(get(e, "autocast")));
  cJSON_AddItemToObject(
      o, "inside", cJSON_IsString(in) ? cJSON_CreateString(in->valuestring) : cJSON_CreateNull());
  return o;
}

/* A plan row's side as shown: "bf16 (autocast)", "fp32 (kept out)", "fp32
 * (inside step/mlp)", "not in plan". Two sides that read differently are a
 * change of the plan (the summary, the page and diff.json list the same). */
static void plan_layer_text(const cJSON *side, char *buf, size_t n) {
  const cJSON *dt = get(side, "dtype"), *in = get(side, "inside");
  const char *d = cJSON_IsString(dt) ? dt->valuestring : "no dtype";
  if (!side || cJSON_IsNull(side))
    snprintf(buf, n, "not in plan");
  else if (cJSON_IsTrue(get(side, "autocast")))
    snprintf(buf, n, "%s (autocast)", d);
  else if (cJSON_IsString(in))
    snprintf(buf, n, "%s (inside %s)", d, in->valuestring);
  else
    snprintf(buf, n, "%s (kept out)", d);
}

/* One run's recommended plan in brief: autocast dtype, loss scale (null:
 * none, or no plan) and headline (plan.json recommended; all null when the
 * run has no plan, no layer having a verdict). */
static cJSON *plan_run_json(const cJSON *plan) {
  const cJSON *rec = get(plan, "recommended");
  const cJSON *ac = get(rec, "autocast"), *ls = get(rec, "loss_scale"), *sum = get(rec, "summary");
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(
      o, "autocast", cJSON_IsString(ac) ? cJSON_CreateString(ac->valuestring) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "loss_scale",
                        cJSON_IsObject(ls) ? cJSON_Duplicate(ls, true) : cJSON_CreateNull());
  /* an fp16 plan of gradients as computed (no scale declared): said beside its
   * loss scale. Not a run that declared a scale for some gradients (its note
   * names the others): "no loss scale declared" would be false of it. */
  const char *note = cJSON_GetStringValue(get(rec, "loss_scale_note"));
  cJSON_AddBoolToObject(o, "loss_scale_as_computed",
                        note && !strcmp(note, MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE));
  cJSON_AddItemToObject(o, "summary",
                        cJSON_IsString(sum) ? cJSON_CreateString(sum->valuestring)
                                            : cJSON_CreateNull());
  return o;
}

/* diff.json "plan": each run's recommended autocast and loss scale, and the
 * layers whose plan rows read differently (plan_layer_text), A's order then
 * those only in B. NULL when out of memory. */
static cJSON *plan_diff_json(const cJSON *pa, const cJSON *pb) {
  const cJSON *la = get(get(pa, "recommended"), "layers"),
              *lb = get(get(pb, "recommended"), "layers");
  index_t ia, ib;
  int rc = index_build(la, plan_layer_key, &ia) | index_build(lb, plan_layer_key, &ib);
  cJSON *o = rc ? NULL : cJSON_CreateObject();
  if (o) {
    cJSON_AddItemToObject(o, "a", plan_run_json(pa));
    cJSON_AddItemToObject(o, "b", plan_run_json(pb));
    cJSON *rows = cJSON_AddArrayToObject(o, "layers");
    for (int pass = 0; pass < 2; pass++) {
      const cJSON *e;
      cJSON_ArrayForEach(e, (pass ? lb : la)) {
        if (!e->string || !cJSON_IsObject(e)) continue;
        const cJSON *other = index_find(pass ? &ia : &ib, e->string);
        if (pass && other) continue;
        cJSON *sa = plan_layer_json(pass ? NULL : e), *sb = plan_layer_json(pass ? e : other);
        char ta[256], tb[256];
        plan_layer_text(sa, ta, sizeof ta);
        plan_layer_text(sb, tb, sizeof tb);
        if (!strcmp(ta, tb)) {
          cJSON_Delete(sa);
          cJSON_Delete(sb);
          continue;
        }
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "layer", e->string);
        cJSON_AddItemToObject(row, "a", sa);
        cJSON_AddItemToObject(row, "b", sb);
        cJSON_AddItemToArray(rows, row);
      }
    }
  }
  index_free(&ia);
  index_free(&ib);
  return o;
}

/* A plan's autocast dtype as shown ("none": no plan). */
static void plan_autocast_text(const cJSON *run, char *buf, size_t n) {
  const cJSON *ac = get(run, "autocast");
  snprintf(buf, n, "%s", cJSON_IsString(ac) ? ac->valuestring : "none");
}

/* A window [lo, hi] of log2 scales (window_log2, true_window_log2): false
 * where absent or not two numbers. */
static bool plan_window(const cJSON *w, double *lo, double *hi) {
  return cJSON_GetArraySize(w) == 2 && !mpprof_json_get_double(cJSON_GetArrayItem(w, 0), lo) &&
         !mpprof_json_get_double(cJSON_GetArrayItem(w, 1), hi);
}

/* A plan's loss scale as shown: "65536 (window 2^10 .. 2^20)", "none"; where
 * the search range cut the window, its true edges beside it ("(window 2^13
 * .. 2^32; 2^13 .. 2^53 fits in all)", as the run's summary says them);
 * then, for a plan of gradients as computed, "; "
 * MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE (mpprof's wording, not the file's). */
static void plan_loss_scale_text(const cJSON *run, char *buf, size_t n) {
  const cJSON *ls = get(run, "loss_scale");
  double s, lo, hi, tlo, thi;
  if (!cJSON_IsObject(ls))
    snprintf(buf, n, "none");
  else if (mpprof_json_get_double(get(ls, "init_scale"), &s))
    snprintf(buf, n, "unknown");
  else if (!plan_window(get(ls, "window_log2"), &lo, &hi))
    snprintf(buf, n, "%g", s);
  else if (plan_window(get(ls, "true_window_log2"), &tlo, &thi) && (tlo != lo || thi != hi))
    snprintf(buf, n, "%g (window 2^%g .. 2^%g; 2^%g .. 2^%g fits in all)", s, lo, hi, tlo, thi);
  else
    snprintf(buf, n, "%g (window 2^%g .. 2^%g)", s, lo, hi);
  size_t len = strlen(buf);
  if (cJSON_IsTrue(get(run, "loss_scale_as_computed")) && len < n)
    snprintf(buf + len, n - len, "; %s", MPPROF_LOSS_SCALE_AS_COMPUTED_NOTE);
}

/* The rows of a plan's brief (plan.a / plan.b): label and text as shown. */
static const struct {
  const char *label;
  void (*text)(const cJSON *run, char *buf, size_t n);
} plan_rows[] = {{"autocast", plan_autocast_text}, {"loss scale", plan_loss_scale_text}};
#define N_PLAN_ROWS (sizeof plan_rows / sizeof *plan_rows)

/* Whether paths a and b name one directory (`mpprof diff r0 r0`, or r0 and
 * ./r0): a run compared with itself, which shows no change whatever it did. */
static bool same_dir(const char *a, const char *b) {
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The diff of reports a and b (of directories da and db) and of their plans
 * plan_a and plan_b (NULL: not read; unread says why, one line each, and is
 * taken). */
static cJSON *build_diff(const char *da, const cJSON *a, const char *db, const cJSON *b,
                         const cJSON *plan_a, const cJSON *plan_b, cJSON *unread) {
  cJSON *d = cJSON_CreateObject();
  cJSON_AddStringToObject(d, "schema", "mpprof.diff/1");
  cJSON_AddItemToObject(d, "a", run_json(da, a));
  cJSON_AddItemToObject(d, "b", run_json(db, b));
  cJSON_AddBoolToObject(d, "same_dir", same_dir(da, db));
  const cJSON *pa = get(a, "program"), *pb = get(b, "program");
  bool strings = cJSON_IsString(pa) && cJSON_IsString(pb);
  char ida[256], idb[256];
  mpprof_program_identity(strings ? pa->valuestring : "", ida, sizeof ida);
  mpprof_program_identity(strings ? pb->valuestring : "", idb, sizeof idb);
  cJSON_AddBoolToObject(d, "same_program", strings && ida[0] && !strcmp(ida, idb));
  /* The same command: every command line of one run is one of the other's
   * (a merge of runs with other arguments is not the run it holds). */
  char *ca = command_lines(a), *cb = command_lines(b);
  bool same_command =
      ca && cb ? !strcmp(ca, cb) : strings && !strcmp(pa->valuestring, pb->valuestring);
  free(ca);
  free(cb);
  cJSON_AddBoolToObject(d, "same_command", same_command);
  /* Other ranks: both runs name theirs and the sets differ (a run without
   * ranks, one process not launched as a rank, is not told apart). */
  const cJSON *ra = get(get(d, "a"), "ranks"), *rb = get(get(d, "b"), "ranks");
  cJSON_AddBoolToObject(d, "same_ranks",
                        !cJSON_GetArraySize(ra) || !cJSON_GetArraySize(rb) ||
                            cJSON_Compare(ra, rb, true));
  index_t la, lb;
  site_index sa, sb;
  site_vec va, vb;
  int rc = index_build(get(a, "layers"), layer_name_key, &la) |
           index_build(get(b, "layers"), layer_name_key, &lb) |
           index_build(get(a, "sites"), site_match_key, &sa.exact) |
           index_build(get(b, "sites"), site_match_key, &sb.exact) |
           index_build(get(a, "sites"), site_layer_op_key, &sa.layer_op) |
           index_build(get(b, "sites"), site_layer_op_key, &sb.layer_op) | site_vec_build(a, &va) |
           site_vec_build(b, &vb);
  cJSON *layers = cJSON_AddArrayToObject(d, "layers");
  const cJSON *l;
  /* A's layers in A's order, then those only in B. */
  for (int pass = 0; pass < 2 && !rc; pass++) {
    cJSON_ArrayForEach(l, get(pass ? b : a, "layers")) {
      const cJSON *n = get(l, "name");
      if (!cJSON_IsString(n)) continue;
      const cJSON *other = index_find(pass ? &la : &lb, n->valuestring);
      if (pass && other) continue;
      cJSON *row = cJSON_CreateObject();
      cJSON_AddStringToObject(row, "layer", n->valuestring);
      cJSON_AddItemToObject(row, "a", side_json(&va, pass ? NULL : l));
      cJSON_AddItemToObject(row, "b", side_json(&vb, pass ? l : other));
      cJSON_AddItemToObject(row, DK_MEASURED_ERROR,
                            measured_json(a, pass ? NULL : l, b, pass ? l : other));
      cJSON_AddItemToArray(layers, row);
    }
  }
  if (!rc) {
    cJSON_AddItemToObject(d, "sites_only_in_a", only_in(a, &sb));
    cJSON_AddItemToObject(d, "sites_only_in_b", only_in(b, &sa));
    cJSON *plan = plan_a && plan_b ? plan_diff_json(plan_a, plan_b) : cJSON_CreateNull();
    rc = !plan;
    cJSON_AddItemToObject(d, "plan", plan);
  }
  cJSON_AddItemToObject(d, "plan_unread", unread);
  index_free(&la);
  index_free(&lb);
  index_free(&sa.exact);
  index_free(&sb.exact);
  index_free(&sa.layer_op);
  index_free(&sb.layer_op);
  free(va.at);
  free(vb.at);
  if (rc) {
    cJSON_Delete(d);
    return NULL;
  }
  return d;
}

/* ---- HTML ---- */

static void html(FILE *f, const char *s) {
  mpprof_html(f, s);
}

static void cell_str(FILE *f, const cJSON *side, const char *k) {
  const cJSON *v = get(side, k);
  fputs("<td>", f);
  if (cJSON_IsString(v)) html(f, v->valuestring);
  fputs("</td>", f);
}

static void cell_num(FILE *f, const cJSON *side, const char *k, double scale, const char *fmt) {
  double d;
  fputs("<td class=\"n\">", f);
  if (!mpprof_json_get_double(get(side, k), &d)) fprintf(f, fmt, d * scale);
  fputs("</td>", f);
}

/* The columns of a layer row after Layer and Run: diff.json key and header.
 * The page shows them; the terminal summary lists, per layer, those whose B
 * cell reads differently from A's (the page's highlighted cells). */
enum { COL_DTYPES, COL_COMPUTE, COL_TC_SHARE, COL_GPU_NS };
static const char *const layer_cols[][2] = {
    {"dtypes", "Dtypes"},
    {"compute_types", "Compute"},
    {"tc_share", "TC share %"},
    {"gpu_ns", "GPU ms"},
    {"fp16_overflow_pct", "fp16 overflow %, unscaled"},
    {"fp16_underflow_pct", "fp16 flush %, unscaled"},
    {"fp16_overflow_at_applied_scale_pct", "fp16 gradient overflow % at applied scale"},
    {"fp16_underflow_at_applied_scale_pct", "fp16 gradient flush % at applied scale"},
    {"verdict", "Verdict"}};
#define N_LAYER_COLS (sizeof layer_cols / sizeof *layer_cols)

/* Cell k of a layer row (layer_cols[k]) as shown, into buf: text as is
 * (compute types with " (TF32)"), GPU time in ms, the TC share and the rest
 * (percentages) as every output shows a percentage (mpprof_pct_text); ""
 * when absent. */
static void layer_cell_text(const cJSON *side, size_t k, char *buf, size_t n) {
  const char *key = layer_cols[k][0];
  const cJSON *v = get(side, key);
  double x;
  buf[0] = '\0';
  if (cJSON_IsString(v)) {
    snprintf(buf, n, "%s%s", v->valuestring,
             k == COL_COMPUTE && cJSON_IsTrue(get(side, "tf32")) ? " (TF32)" : "");
  } else if (!mpprof_json_get_double(v, &x)) {
    if (k == COL_GPU_NS)
      snprintf(buf, n, "%.3f", x / 1e6);
    else
      snprintf(buf, n, "%s", mpprof_pct_text(k == COL_TC_SHARE ? x * 100 : x).s);
    /* a share (a key ending "_pct"): of which tensor ("..._tensor") */
    size_t kn = strlen(key);
    const cJSON *t = NULL;
    if (kn > 4 && !strcmp(key + kn - 4, "_pct")) {
      char tkey[96];
      snprintf(tkey, sizeof tkey, "%.*s_tensor", (int)(kn - 4), key);
      t = get(side, tkey);
    }
    size_t used = strlen(buf);
    if (cJSON_IsString(t) && used < n) snprintf(buf + used, n - used, " (%s)", t->valuestring);
  } else if (!strcmp(key, "verdict")) {
    snprintf(buf, n, "no verdict");
  }
}

/* Whether B's cell k reads differently from A's (GPU time excepted: it
 * differs between any two runs; 13.216% and 13.22% both read 13.2). */
static bool cell_changed(const cJSON *a, const cJSON *b, size_t k) {
  if (k == COL_GPU_NS || cJSON_IsNull(a) || cJSON_IsNull(b)) return false;
  char ta[256], tb[256];
  layer_cell_text(a, k, ta, sizeof ta);
  layer_cell_text(b, k, tb, sizeof tb);
  return strcmp(ta, tb) != 0;
}

/* A run's applied loss scale as shown: "65536", "1024 .. 2048", "unknown". */
static void loss_scale_text(const cJSON *run, char *buf, size_t n) {
  const cJSON *ls = get(run, "loss_scale_applied");
  double lo, hi;
  if (mpprof_json_get_double(get(ls, "min"), &lo) || mpprof_json_get_double(get(ls, "max"), &hi))
    snprintf(buf, n, "unknown");
  else if (lo == hi)
    snprintf(buf, n, "%g", lo);
  else
    snprintf(buf, n, "%g .. %g", lo, hi);
}

/* A candidate's measured rel_l2 as shown beside its run's limit lim
 * (mpprof_rel_text): "0.0082", "inf" (null: infinite). */
static void rel_text(const cJSON *c, double lim, char *buf, size_t n) {
  double e;
  if (rel_value(get(c, MP_RK_SHADOW_CAND.rel_l2), &e))
    snprintf(buf, n, "?");
  else
    snprintf(buf, n, "%s", mpprof_rel_text(e, lim).s);
}

/* A side's measured `current` against its run's limit, as the summary shows
 * it: "0.0082 (above --shadow-max-rel 0.00391)". */
static void current_side_text(const cJSON *side, char *buf, size_t n) {
  char r[40];
  double lim = 0;
  mpprof_json_get_double(get(side, DK_ME_LIMIT), &lim);
  rel_text(side_current(side), lim, r, sizeof r);
  snprintf(buf, n, "%s (%s --shadow-max-rel %s)", r, current_within(side) > 0 ? "within" : "above",
           mpprof_rel_limit_text(lim).s);
}

/* What a side's current_on_narrower_operands says (page tooltip and
 * summary): "measured on operands already bf16 (fp32 in A): the op's own
 * error, without the rounding of its inputs into bf16; A measured bf16 from
 * its fp32 operands at 0.0029". other: the other run, "A" or "B". */
static void narrower_text(const cJSON *nj, const char *other, char *buf, size_t n) {
  const char *ops = cJSON_GetStringValue(get(nj, DK_MN_OPERANDS)),
             *oops = cJSON_GetStringValue(get(nj, DK_MN_OTHER_OPERANDS)),
             *cand = cJSON_GetStringValue(get(nj, DK_MN_OTHER_CAND));
  int len = snprintf(buf, n,
                     "measured on operands already %s (%s in %s): the op's own error, without the "
                     "rounding of its inputs into %s; ",
                     ops ? ops : "?", oops ? oops : "?", other, ops ? ops : "?");
  if (len < 0 || (size_t)len >= n) return;
  double e;
  if (!cand)
    snprintf(buf + len, n - (size_t)len, "%s measured no %s candidate", other, ops ? ops : "?");
  else if (rel_value(get(nj, DK_MN_OTHER_REL), &e) || isinf(e))
    snprintf(buf + len, n - (size_t)len, "%s measured %s from its %s operands: inf", other, cand,
             oops ? oops : "?");
  else
    snprintf(buf + len, n - (size_t)len, "%s measured %s from its %s operands at %.2g", other, cand,
             oops ? oops : "?", e);
}

/* The line the page and the summary say when exactly one run measured
 * errors (false otherwise: then both did, or neither, and nothing is said). */
static bool one_run_measured_text(const cJSON *d, char *buf, size_t n) {
  bool sa = cJSON_IsTrue(get(get(d, "a"), DK_RUN_SHADOW)),
       sb = cJSON_IsTrue(get(get(d, "b"), DK_RUN_SHADOW));
  if (sa == sb) return false;
  snprintf(buf, n,
           "measured error (--shadow): only %s was profiled with --shadow, %s was not, so no "
           "layer's measured error is compared",
           sa ? "A" : "B", sa ? "B" : "A");
  return true;
}

/* Whether both runs measured errors: the layer table's measured columns. */
static bool both_runs_measured(const cJSON *d) {
  return cJSON_IsTrue(get(get(d, "a"), DK_RUN_SHADOW)) &&
         cJSON_IsTrue(get(get(d, "b"), DK_RUN_SHADOW));
}

/* A measured rel_l2 on the page, with a dagger and report.html's tooltip
 * (MPPROF_SHADOW_ROUNDED_TITLE) when measured on operands already of the
 * candidate's format. */
static void html_rel(FILE *f, const cJSON *c, const char *cand, double lim) {
  char t[40];
  rel_text(c, lim, t, sizeof t);
  bool rounded = cJSON_IsTrue(get(c, MP_K_SH_INPUTS_ALREADY_ROUNDED));
  if (rounded) {
    char note[320];
    int k = mp_shadow_cand_from_name(cand);
    snprintf(note, sizeof note, MPPROF_SHADOW_ROUNDED_TITLE,
             k < 0 ? cand : mp_dtype_name(mp_shadow_cand_format((mp_shadow_cand)k)));
    fputs("<span title=\"", f);
    html(f, note);
    fputs("\">", f);
  }
  fputs(strcmp(t, "inf") ? t : "&infin;", f);
  if (rounded) fputs("&dagger;</span>", f);
}

#define MEASURED_HEADERS                                                                           \
  "<th title=\"Measured error (--shadow): " MPPROF_SHADOW_CURRENT_DEF                              \
  "\">Measured now rel L2</th><th title=\"Measured error (--shadow): relative L2 error of each "   \
  "candidate precision measured in both runs, worst call\">Measured rel L2, candidates</th>"

/* The measured columns of side i (0: A) of a layer row (diff.json
 * measured_error): `current` against the run's limit, highlighted in B when
 * it crossed it, "not measured" with why; then the candidates measured in
 * both runs. */
static void measured_cells(FILE *f, const cJSON *me, int i) {
  const cJSON *side = get(me, i ? "b" : "a");
  if (!cJSON_IsObject(side)) {
    fputs("<td></td><td></td>", f);
    return;
  }
  const char *current = mp_shadow_cand_name(MP_SH_CURRENT);
  const cJSON *cs = get(side, DK_ME_CANDIDATES), *cur = get(cs, current), *c;
  double lim = 0;
  mpprof_json_get_double(get(side, DK_ME_LIMIT), &lim);
  if (!cur) {
    const cJSON *why = get(side, DK_ME_NOT_MEASURED);
    const char *text = "no shadowed call measured the precision the op runs in";
    for (int k = 0; k < NM_COUNT; k++)
      if (cJSON_IsString(why) && !strcmp(why->valuestring, not_measured[k][0]))
        text = not_measured[k][1];
    fputs("<td title=\"Not measured: ", f);
    html(f, text);
    fputs("\">not measured</td>", f);
  } else {
    char t[128], nt[400];
    current_side_text(side, t, sizeof t);
    bool chg = i && cJSON_IsTrue(get(me, DK_ME_CROSSED));
    const cJSON *nj = get(side, DK_ME_NARROWER);
    fprintf(f, "<td class=\"n%s\" title=\"", chg ? " chg" : "");
    html(f, t);
    if (cJSON_IsObject(nj)) {
      narrower_text(nj, i ? "A" : "B", nt, sizeof nt);
      fputs("; ", f);
      html(f, nt);
    }
    fputs("\">", f);
    html_rel(f, cur, current, lim);
    if (cJSON_IsObject(nj)) fputs("&Dagger;", f);
    fputs("</td>", f);
  }
  fputs("<td>", f);
  bool any = false;
  cJSON_ArrayForEach(c, cs) {
    if (!strcmp(c->string, current)) continue;
    fputs(any ? "; " : "", f);
    html(f, c->string);
    fputc(' ', f);
    html_rel(f, c, c->string, lim);
    any = true;
  }
  fputs("</td>", f);
}

static const char css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1500px;color:#222;"
    "padding:0 16px}h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid "
    "#ddd}table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #ddd;padding:3px "
    "6px;text-align:left;vertical-align:top}th{background:#f4f4f4}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums}.chg{background:#fff3b0}.scroll{overflow-x:auto}"
    ".warn{color:#b00}code{font-size:12px;word-break:break-all}";

/* The plans' section: each run's recommended autocast dtype, loss scale and
 * headline, then the layers the plans run otherwise; or why the plans were
 * not compared. B's cells that read differently are highlighted. */
static void write_plan_html(const cJSON *d, FILE *f) {
  const cJSON *p = get(d, "plan"), *e;
  fputs("<section id=\"plan\"><h2>Plan</h2>\n", f);
  if (!cJSON_IsObject(p)) {
    cJSON_ArrayForEach(e, get(d, "plan_unread")) {
      fputs("<p class=\"warn\">", f);
      html(f, e->valuestring);
      fputs("; the plans are not compared.</p>\n", f);
    }
    fputs("</section>\n", f);
    return;
  }
  fputs("<p>The configuration each run's plan.json recommends, and the layers the two plans "
        "run otherwise (in another dtype, or in one plan's autocast and out of the other's)."
        "</p>\n<table><thead><tr><th></th><th>A (before)</th>"
        "<th>B (after)</th></tr></thead><tbody>\n",
        f);
  char ta[256], tb[256];
  for (size_t k = 0; k < N_PLAN_ROWS + 1; k++) {
    if (k < N_PLAN_ROWS) {
      plan_rows[k].text(get(p, "a"), ta, sizeof ta);
      plan_rows[k].text(get(p, "b"), tb, sizeof tb);
    }
    const cJSON *sa = get(get(p, "a"), "summary"), *sb = get(get(p, "b"), "summary");
    fputs("<tr><td>", f);
    html(f, k < N_PLAN_ROWS ? plan_rows[k].label : "summary");
    fputs("</td><td>", f);
    html(f, k < N_PLAN_ROWS ? ta : cJSON_IsString(sa) ? sa->valuestring : "no plan");
    fprintf(f, "</td><td%s>", k < N_PLAN_ROWS && strcmp(ta, tb) ? " class=\"chg\"" : "");
    html(f, k < N_PLAN_ROWS ? tb : cJSON_IsString(sb) ? sb->valuestring : "no plan");
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
  if (!cJSON_GetArraySize(get(p, "layers"))) {
    fputs("<p>Every layer runs as before: the same dtype, in or out of autocast alike.</p>\n"
          "</section>\n",
          f);
    return;
  }
  fputs("<table><thead><tr><th>Layer</th><th>A (before)</th><th>B (after)</th></tr></thead>"
        "<tbody>\n",
        f);
  cJSON_ArrayForEach(e, get(p, "layers")) {
    plan_layer_text(get(e, "a"), ta, sizeof ta);
    plan_layer_text(get(e, "b"), tb, sizeof tb);
    fputs("<tr><td>", f);
    html(f, get(e, "layer")->valuestring);
    fputs("</td><td>", f);
    html(f, ta);
    fputs("</td><td class=\"chg\">", f);
    html(f, tb);
    fputs("</td></tr>\n", f);
  }
  fputs("</tbody></table></section>\n", f);
}

static void write_html(const cJSON *d, FILE *f) {
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">\n<meta name=\"viewport\" content=\"width=device-width, "
        "initial-scale=1\">\n<title>mpprof diff</title>\n",
        f);
  fprintf(f, "<style>%s</style></head><body>\n<h1>mpprof diff</h1>\n", css);
  const char *side[2] = {"a", "b"};
  fputs("<section id=\"runs\"><table><thead><tr><th></th><th>Run</th><th>Program</th>"
        "<th>Device</th><th>Calls</th><th>GPU ms</th><th>TC share %</th><th>Loss scale "
        "applied</th></tr></thead><tbody>\n",
        f);
  for (int i = 0; i < 2; i++) {
    const cJSON *r = get(d, side[i]);
    fprintf(f, "<tr><td>%s</td>", i ? "B (after)" : "A (before)");
    cell_str(f, r, "dir");
    fputs("<td><code>", f);
    html(f, get(r, "program")->valuestring);
    fputs("</code></td><td>", f);
    char dev[1024];
    devices_text(r, dev, sizeof dev);
    html(f, dev);
    fputs("</td>", f);
    cell_num(f, r, "calls", 1, "%.0f");
    cell_num(f, r, "gpu_ns", 1e-6, "%.3f");
    double tc;
    fputs("<td class=\"n\">", f);
    if (!mpprof_json_get_double(get(r, "tc_share"), &tc)) html(f, mpprof_pct_text(100 * tc).s);
    fputs("</td>", f);
    char ls[96];
    loss_scale_text(r, ls, sizeof ls);
    fprintf(f, "<td class=\"n\">%s</td></tr>\n", ls);
  }
  fputs("</tbody></table>\n", f);
  if (cJSON_IsTrue(get(d, "same_dir")))
    fputs("<p class=\"warn\">A and B are one directory: the run is compared with itself.</p>\n", f);
  if (!cJSON_IsTrue(get(d, "same_program")))
    fputs("<p class=\"warn\">The two runs profiled different programs (another script or "
          "executable): layers are matched by name all the same.</p>\n",
          f);
  else if (!cJSON_IsTrue(get(d, "same_command")))
    fputs("<p>A and B ran " MPPROF_SAME_PROGRAM_OTHER_ARGS " (command lines above).</p>\n", f);
  char rt[2][160];
  for (int i = 0; i < 2; i++)
    ranks_text(get(get(d, side[i]), "ranks"), rt[i], sizeof rt[i]);
  if (!cJSON_IsTrue(get(d, "same_ranks"))) {
    fputs("<p class=\"warn\">The two runs hold other ranks (A: ", f);
    html(f, rt[0]);
    fputs("; B: ", f);
    html(f, rt[1]);
    fputs("): each layer's figures are of other processes' GEMMs, compared all the same; "
          "diff the same rank's runs (or two merges of every rank) to see what a change "
          "did.</p>\n",
          f);
  }
  bool measured = both_runs_measured(d);
  char one[256];
  fputs("</section>\n<section id=\"layers\"><h2>Layers</h2>\n", f);
  if (one_run_measured_text(d, one, sizeof one)) {
    fputs("<p>", f);
    html(f, one);
    fputs(".</p>\n", f);
  }
  if (measured)
    fputs("<p>Measured now rel L2 (<code>--shadow</code>; report.json "
          "<code>shadow.candidates.current.rel_l2</code>): " MPPROF_SHADOW_CURRENT_DEF
          ". B's is highlighted where it crossed the limit, within it in one run and above it "
          "in the other (<code>--shadow-max-rel</code>, each run's own: hover a cell). Then each "
          "candidate measured in both runs; &dagger;: measured on operands already of that "
          "format, so the error excludes their rounding (a drop after moving a layer to that "
          "dtype may be that, not a gain).</p>\n",
          f);
  fputs("<p>Per layer, A then B; changed "
        "cells are highlighted. TC share: Tensor Core kernel time over the layer's kernel time. "
        "fp16 overflow/flush, unscaled: percent of the finite non-zero values of the layer's "
        "worst tensor that a cast to fp16 overflows / flushes to zero, gradients divided by the "
        "loss scale the run applied (as at scale 1; report.json <code>percent</code>). At applied "
        "scale: the same for the worst gradient as recorded, at the loss scale the run applied "
        "(report.json <code>shares</code>), what a change of loss scale changes.</p>\n"
        "<div class=\"scroll\"><table><thead><tr><th>Layer</th><th>Run</th>",
        f);
  for (size_t k = 0; k < N_LAYER_COLS; k++)
    fprintf(f, "<th>%s</th>", layer_cols[k][1]);
  if (measured) fputs(MEASURED_HEADERS, f);
  fputs("</tr></thead><tbody>\n", f);
  const cJSON *row;
  cJSON_ArrayForEach(row, get(d, "layers")) {
    const cJSON *a = get(row, "a"), *b = get(row, "b");
    for (int i = 0; i < 2; i++) {
      const cJSON *s = i ? b : a, *o = i ? a : b;
      fputs("<tr>", f);
      if (!i) {
        fputs("<td rowspan=\"2\">", f);
        html(f, get(row, "layer")->valuestring);
        fputs("</td>", f);
      }
      fprintf(f, "<td>%s</td>", i ? "B" : "A");
      if (cJSON_IsNull(s)) {
        fprintf(f, "<td colspan=\"%zu\">(not in this run)</td></tr>\n",
                N_LAYER_COLS + (measured ? 2 : 0));
        continue;
      }
      for (size_t k = 0; k < N_LAYER_COLS; k++) {
        char tv[256];
        const cJSON *v = get(s, layer_cols[k][0]);
        layer_cell_text(s, k, tv, sizeof tv);
        bool chg = i && cell_changed(o, s, k);
        fprintf(f, "<td%s%s>", chg ? " class=\"chg\"" : "",
                cJSON_IsNumber(v) || cJSON_IsRaw(v) ? " style=\"text-align:right\"" : "");
        html(f, tv);
        fputs("</td>", f);
      }
      if (measured) measured_cells(f, get(row, DK_MEASURED_ERROR), i);
      fputs("</tr>\n", f);
    }
  }
  fputs("</tbody></table></div></section>\n", f);
  write_plan_html(d, f);
  for (int i = 0; i < 2; i++) {
    const cJSON *arr = get(d, i ? "sites_only_in_b" : "sites_only_in_a"), *e;
    fprintf(f, "<section id=\"only-%s\"><h2>Op sites only in %s</h2>\n", side[i], i ? "B" : "A");
    if (!cJSON_GetArraySize(arr))
      fputs("<p>None: every site (NVTX path, op, shape) is in both runs.</p>\n", f);
    else
      fputs("<ul>\n", f);
    cJSON_ArrayForEach(e, arr) {
      fputs("<li><code>", f);
      html(f, get(e, "match_key")->valuestring);
      fputs("</code> (", f);
      const cJSON *api = get(e, "api");
      if (cJSON_IsString(api)) html(f, api->valuestring);
      fputs(")</li>\n", f);
    }
    if (cJSON_GetArraySize(arr)) fputs("</ul>\n", f);
    fputs("</section>\n", f);
  }
  fputs("</body></html>\n", f);
}

static int write_text(const char *path, const char *text, mpprof_afile_set *set) {
  mpprof_afile af;
  if (mpprof_afile_open(&af, path, set)) return -1;
  fputs(text, af.f);
  return mpprof_afile_close(&af, true);
}

/* At most this many layers' changes are listed in the terminal summary (of
 * the layers, and of the plans). */
#define SUMMARY_LAYERS_MAX 20

/* The line after a list cut at SUMMARY_LAYERS_MAX: "and 5 more layers with
 * changes (diff.html)". */
static void print_more(FILE *out, size_t more, const char *what) {
  if (more)
    fprintf(out, "  and %zu more layer%s with %s (diff.html)\n", more, more == 1 ? "" : "s", what);
}

/* The summary's lines under its first: the applied loss scale when it reads
 * differently, then per layer in both runs what the page highlights
 * ("fc2: Dtypes: A=fp32 ... -> A=bf16 ...; Verdict: fp16 -> bf16"; an empty
 * cell reads "none"), the first SUMMARY_LAYERS_MAX layers. */
static void print_changes(const cJSON *d, FILE *out) {
  char la[96], lb[96];
  loss_scale_text(get(d, "a"), la, sizeof la);
  loss_scale_text(get(d, "b"), lb, sizeof lb);
  if (strcmp(la, lb)) fprintf(out, "  loss scale applied: %s -> %s\n", la, lb);
  size_t listed = 0, more = 0;
  const cJSON *row;
  cJSON_ArrayForEach(row, get(d, "layers")) {
    const cJSON *a = get(row, "a"), *b = get(row, "b");
    bool any = false;
    for (size_t k = 0; k < N_LAYER_COLS; k++) {
      if (!cell_changed(a, b, k)) continue;
      if (!any && listed == SUMMARY_LAYERS_MAX) {
        more++;
        break;
      }
      char ta[256], tb[256];
      layer_cell_text(a, k, ta, sizeof ta);
      layer_cell_text(b, k, tb, sizeof tb);
      if (!any) mpprof_fprint_term(out, "  %s: ", get(row, "layer")->valuestring);
      fprintf(out, "%s%s: %s -> %s", any ? "; " : "", layer_cols[k][1], ta[0] ? ta : "none",
              tb[0] ? tb : "none");
      any = true;
    }
    if (any) {
      fputc('\n', out);
      listed++;
    }
  }
  print_more(out, more, "changes");
}

/* The summary's lines on the measured error: where exactly one run measured,
 * one line saying so; where both did, one line per layer whose `current`
 * crossed the limit (diff.json current_crossed_limit: "fc3: measured error
 * now, rel L2: 2e-08 (within --shadow-max-rel 0.00391) -> 0.0082 (above
 * --shadow-max-rel 0.00391)"), the first SUMMARY_LAYERS_MAX. */
static void print_measured_changes(const cJSON *d, FILE *out) {
  char one[256];
  if (one_run_measured_text(d, one, sizeof one)) fprintf(out, "  %s\n", one);
  if (!both_runs_measured(d)) return;
  size_t listed = 0, more = 0;
  const cJSON *row;
  cJSON_ArrayForEach(row, get(d, "layers")) {
    const cJSON *me = get(row, DK_MEASURED_ERROR);
    if (!cJSON_IsTrue(get(me, DK_ME_CROSSED))) continue;
    if (listed == SUMMARY_LAYERS_MAX) {
      more++;
      continue;
    }
    char ta[128], tb[128];
    current_side_text(get(me, "a"), ta, sizeof ta);
    current_side_text(get(me, "b"), tb, sizeof tb);
    mpprof_fprint_term(out, "  %s: ", get(row, "layer")->valuestring);
    fprintf(out, "measured error now, rel L2: %s -> %s\n", ta, tb);
    listed++;
  }
  print_more(out, more, "measured error across the limit");
  /* layers on narrower operands in one run: their `current` is no measure of
   * the move; one line per layer whose other-run measurement of that format
   * is above this run's limit, then a count of the rest */
  size_t narrower = 0, warned = 0;
  char first[160] = "";
  cJSON_ArrayForEach(row, get(d, "layers")) {
    const cJSON *me = get(row, DK_MEASURED_ERROR);
    for (int i = 0; i < 2; i++) {
      const cJSON *side = get(me, i ? "b" : "a"), *nj = get(side, DK_ME_NARROWER);
      if (!cJSON_IsObject(nj)) continue;
      double e, lim;
      bool measured =
          cJSON_IsString(get(nj, DK_MN_OTHER_CAND)) && !rel_value(get(nj, DK_MN_OTHER_REL), &e);
      if (measured && !mpprof_json_get_double(get(side, DK_ME_LIMIT), &lim) && e > lim &&
          warned < SUMMARY_LAYERS_MAX) {
        mpprof_fprint_term(out, "  %s: ", get(row, "layer")->valuestring);
        fprintf(out,
                "%s runs it on %s operands; %s measured %s from %s operands at %s, above "
                "--shadow-max-rel %s (%s's own measurement leaves out that input rounding)\n",
                i ? "B" : "A", cJSON_GetStringValue(get(nj, DK_MN_OPERANDS)), i ? "A" : "B",
                cJSON_GetStringValue(get(nj, DK_MN_OTHER_CAND)),
                cJSON_GetStringValue(get(nj, DK_MN_OTHER_OPERANDS)), mpprof_rel_text(e, lim).s,
                mpprof_rel_limit_text(lim).s, i ? "B" : "A");
        warned++;
      } else if (!narrower++) {
        snprintf(first, sizeof first, "%s", get(row, "layer")->valuestring);
      }
    }
  }
  if (narrower) {
    fprintf(out, "  %zu layer%s (", narrower, narrower == 1 ? "" : "s");
    mpprof_fprint_term(out, "%s%s", first, narrower > 1 ? ", ..." : "");
    fprintf(out,
            ") run%s on narrower operands in one run: %s measured error now leaves out the "
            "rounding of %s inputs; the other run's measurement of that precision is on the "
            "page\n",
            narrower == 1 ? "s" : "", narrower == 1 ? "its" : "their",
            narrower == 1 ? "its" : "their");
  }
}

/* The summary's lines on the plans: the recommended autocast dtype and loss
 * scale when they read differently, then each layer the plan runs otherwise
 * ("plan step/mlp/fc3: fp32 (kept out) -> bf16 (autocast)"), the first
 * SUMMARY_LAYERS_MAX; one line when nothing changed. Nothing when the plans
 * were not compared (stderr says why). */
static void print_plan_changes(const cJSON *d, FILE *out) {
  const cJSON *p = get(d, "plan"), *row;
  if (!cJSON_IsObject(p)) return;
  bool any = false;
  char ta[256], tb[256];
  for (size_t k = 0; k < N_PLAN_ROWS; k++) {
    plan_rows[k].text(get(p, "a"), ta, sizeof ta);
    plan_rows[k].text(get(p, "b"), tb, sizeof tb);
    if (strcmp(ta, tb))
      mpprof_fprint_term(out, "  plan %s: %s -> %s\n", plan_rows[k].label, ta, tb);
    any |= strcmp(ta, tb) != 0;
  }
  size_t listed = 0;
  cJSON_ArrayForEach(row, get(p, "layers")) {
    if (listed == SUMMARY_LAYERS_MAX) break;
    plan_layer_text(get(row, "a"), ta, sizeof ta);
    plan_layer_text(get(row, "b"), tb, sizeof tb);
    mpprof_fprint_term(out, "  plan %s: %s -> %s\n", get(row, "layer")->valuestring, ta, tb);
    listed++;
  }
  int n = cJSON_GetArraySize(get(p, "layers"));
  print_more(out, (size_t)n - listed, "plan changes");
  if (!any && !n) {
    plan_autocast_text(get(p, "a"), ta, sizeof ta);
    plan_loss_scale_text(get(p, "a"), tb, sizeof tb);
    mpprof_fprint_term(out, "  plan: the same in both runs (autocast %s, loss scale %s)\n", ta, tb);
  }
}

/* diff.json and diff.html appear together or not at all (a failed write
 * leaves neither, nor a temporary). */
static int write_both(const char *out_dir, const char *const paths[2], const char *const texts[2],
                      mpprof_error *ret_error) {
  mpprof_afile_set set;
  mpprof_afile_set_init(&set);
  for (int i = 0; i < 2; i++) {
    if (write_text(paths[i], texts[i], &set)) {
      mpprof_error_set(ret_error, errno, "diff: cannot write %s: %s; neither diff file was written",
                       paths[i], strerror(errno));
      mpprof_afile_set_abort(&set);
      return -1;
    }
  }
  const char *failed;
  size_t done;
  if (mpprof_afile_set_commit(&set, &failed, &done) == 0) return 0;
  int e = errno;
  mpprof_error_set(ret_error, e, "diff: cannot replace %s/%s: %s%s", out_dir, failed, strerror(e),
                   done ? "; diff.json was written, diff.html not"
                        : "; neither diff file was written");
  return -1;
}

int mpprof_diff_generate(const char *dir_a, const char *dir_b, const char *out_dir, FILE *summary,
                         mpprof_error *ret_error) {
  cJSON *a = load_report(dir_a, ret_error);
  cJSON *b = a ? load_report(dir_b, ret_error) : NULL;
  if (!a || !b) {
    cJSON_Delete(a);
    return -1;
  }
  /* The plans are compared when both are read; a plan.json missing, unreadable
   * or of another version is one line in plan_unread and the rest is diffed. */
  cJSON *unread = cJSON_CreateArray(), *plan[2];
  const char *dirs[2] = {dir_a, dir_b};
  for (int i = 0; i < 2; i++) {
    mpprof_error e = {0};
    plan[i] = load_run_file(dirs[i], &plan_file, &e);
    char *text = plan[i] ? NULL : mpprof_strdup_utf8(e.message); /* it names a path */
    if (text) cJSON_AddItemToArray(unread, cJSON_CreateString(text));
    free(text);
  }
  cJSON *d = build_diff(dir_a, a, dir_b, b, plan[0], plan[1], unread);
  cJSON_Delete(a);
  cJSON_Delete(b);
  cJSON_Delete(plan[0]);
  cJSON_Delete(plan[1]);
  char *json = d ? cJSON_Print(d) : NULL;
  char *html_text = NULL;
  size_t len = 0;
  FILE *mf = d ? open_memstream(&html_text, &len) : NULL;
  if (mf) {
    write_html(d, mf);
    fclose(mf);
  }
  int rc = -1;
  char *pj = mpprof_asprintf("%s/diff.json", out_dir),
       *ph = mpprof_asprintf("%s/diff.html", out_dir);
  if (json && html_text && pj && ph)
    rc = write_both(out_dir, (const char *const[]){pj, ph}, (const char *const[]){json, html_text},
                    ret_error);
  else
    mpprof_error_set(ret_error, ENOMEM, "diff: out of memory");
  if (!rc && summary) {
    /* A layer in one run only is counted as such, not as changed. */
    size_t changed = 0, only_a = 0, only_b = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, get(d, "layers")) {
      const cJSON *sa = get(row, "a"), *sb = get(row, "b");
      if (cJSON_IsNull(sb)) {
        only_a++;
        continue;
      }
      if (cJSON_IsNull(sa)) {
        only_b++;
        continue;
      }
      if (!cJSON_Compare(get(sa, "verdict"), get(sb, "verdict"), true) ||
          !cJSON_Compare(get(sa, "dtypes"), get(sb, "dtypes"), true))
        changed++;
    }
    int nl = cJSON_GetArraySize(get(d, "layers"));
    fprintf(summary,
            "mpprof diff: %d layer%s: %zu with other dtypes or verdicts, %zu only in A, %zu only "
            "in B; %d op sites only in A, %d only in B\n",
            nl, nl == 1 ? "" : "s", changed, only_a, only_b,
            cJSON_GetArraySize(get(d, "sites_only_in_a")),
            cJSON_GetArraySize(get(d, "sites_only_in_b")));
    print_changes(d, summary);
    print_measured_changes(d, summary);
    print_plan_changes(d, summary);
    /* On stderr, as merge's warning of the same kind. */
    if (cJSON_IsTrue(get(d, "same_dir")))
      mpprof_fprint_term(stderr,
                         "mpprof diff: warning: A and B are one directory (%s): the run is "
                         "compared with itself\n",
                         dir_a);
    if (!cJSON_IsTrue(get(d, "same_program")))
      fputs("mpprof diff: warning: the two runs profiled different programs\n", stderr);
    if (!cJSON_IsTrue(get(d, "same_ranks"))) {
      char rt[2][160];
      ranks_text(get(get(d, "a"), "ranks"), rt[0], sizeof rt[0]);
      ranks_text(get(get(d, "b"), "ranks"), rt[1], sizeof rt[1]);
      fprintf(stderr,
              "mpprof diff: warning: the two runs hold other ranks (A: %s; B: %s): their "
              "layers are compared all the same\n",
              rt[0], rt[1]);
    }
    if (cJSON_IsTrue(get(d, "same_program")) && !cJSON_IsTrue(get(d, "same_command")))
      mpprof_fprint_term(
          summary, "  A and B ran " MPPROF_SAME_PROGRAM_OTHER_ARGS " (A: %s; B: %s)\n",
          get(get(d, "a"), "program")->valuestring, get(get(d, "b"), "program")->valuestring);
    const cJSON *line;
    cJSON_ArrayForEach(line, get(d, "plan_unread")) {
      mpprof_fprint_term(stderr, "mpprof diff: warning: %s; the plans are not compared\n",
                         line->valuestring);
    }
    fprintf(summary, "  diff: %s (also diff.json)\n", ph);
  }
  free(pj);
  free(ph);
  free(json);
  free(html_text);
  cJSON_Delete(d);
  return rc;
}

/* ---- the programs of a run directory ---- */

/* argv of one raw file: the header comes before "sites", so the first 64 KiB hold it.
 * Only a regular file is read (a FIFO among the raw files must not block). */
char *mpprof_raw_head(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    fd = -1;
  }
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    if (fd >= 0) close(fd);
    return NULL;
  }
  char *buf = malloc(65537);
  size_t n = buf ? fread(buf, 1, 65536, f) : 0;
  fclose(f);
  if (buf) buf[n] = 0;
  return buf;
}

static char *argv_of_file(const char *path) {
  char *buf = mpprof_raw_head(path);
  if (!buf) return NULL;
  const char *k = strstr(buf, "\"argv\":");
  cJSON *arr = k ? cJSON_ParseWithOpts(k + 7, NULL, false) : NULL;
  char *out = mpprof_argv_line(arr);
  cJSON_Delete(arr);
  free(buf);
  return out;
}

char *mpprof_run_programs(const char *dir) {
  char *raw = mpprof_asprintf("%s/raw", dir);
  if (!raw) return NULL;
  DIR *d = opendir(raw);
  if (!d) d = opendir(dir);
  const char *base = d && access(raw, F_OK) == 0 ? raw : dir;
  char **progs = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
    char *p = mpprof_asprintf("%s/%s", base, e->d_name);
    char *a = p ? argv_of_file(p) : NULL;
    free(p);
    if (a && !mpprof_grow((void **)&progs, &cap, n + 1, sizeof *progs))
      progs[n++] = a;
    else
      free(a);
  }
  if (d) closedir(d);
  free(raw);
  char *out = line_set(progs, n);
  return out ? out : n ? NULL : strdup("");
}
