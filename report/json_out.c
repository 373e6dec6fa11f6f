/* OUT/report.json (schema mpprof.report/1, every key in docs/report-schema.md).
 *
 * Written piece by piece: the small top-level parts are cJSON objects, and
 * each layer and each site is built, printed on its own line and released, so
 * that 100k sites never sit in one cJSON tree. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/raw_format.h"
#include "analysis/schema_keys.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

static cJSON *tri_bool(int v) {
  return v < 0 ? cJSON_CreateNull() : cJSON_CreateBool(v);
}

static cJSON *u64_or_null(bool has, uint64_t v) {
  return has ? mpprof_json_u64(v) : cJSON_CreateNull();
}

static cJSON *str_or_null(const char *s) {
  return s ? cJSON_CreateString(s) : cJSON_CreateNull();
}

/* Writes `"key": <v>` and releases v. Returns -1 when v is NULL (ENOMEM). */
static int put(FILE *f, const char *key, cJSON *v, bool formatted, bool comma) {
  if (!v) return -1;
  char *s = formatted ? cJSON_Print(v) : cJSON_PrintUnformatted(v);
  cJSON_Delete(v);
  if (!s) return -1;
  fprintf(f, "%s\"%s\": %s", comma ? ",\n" : "", key, s);
  free(s);
  return 0;
}

static cJSON *counts_obj(const mpprof_count *c, size_t n) {
  cJSON *o = cJSON_CreateObject();
  for (size_t i = 0; o && i < n; i++)
    cJSON_AddItemToObject(o, c[i].name, mpprof_json_u64(c[i].n));
  return o;
}

static cJSON *fp8_value_json(const mpprof_fp8_value *v) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddItemToObject(o, MP_RK_FP8_VALUE.min,
                        v->read ? cJSON_CreateNumber(v->min) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, MP_RK_FP8_VALUE.max,
                        v->read ? cJSON_CreateNumber(v->max) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, MP_RK_FP8_VALUE.read, mpprof_json_u64(v->read));
  cJSON_AddItemToObject(o, MP_RK_FP8_VALUE.unread, mpprof_json_u64(v->unread));
  return o;
}

/* The raw keys "fp8_scale_values", "amax_D" and "amax_aux", merged, only
 * when some call set them: the scales by their row's name. */
static void add_fp8_values(cJSON *o, const mpprof_site *s) {
#define X(f, json, doc) json,
  static const char *const names[] = {MP_RAW_FP8_SCALES(X)};
#undef X
  const mpprof_fp8_values *v = mpprof_site_fp8(s);
  cJSON *sv = NULL;
  for (int i = 0; i < MP_FP8_ROWS; i++) {
    if (!v->v[i].read && !v->v[i].unread) continue;
    if (mpprof_fp8_row_is_amax(i)) {
      cJSON_AddItemToObject(o, i == MP_FP8_ROW_amax_D ? MP_RK_SITE.amax_D : MP_RK_SITE.amax_aux,
                            fp8_value_json(&v->v[i]));
      continue;
    }
    if (!sv) sv = cJSON_AddObjectToObject(o, MP_RK_SITE.fp8_scale_values);
    if (sv) cJSON_AddItemToObject(sv, names[i], fp8_value_json(&v->v[i]));
  }
}

static cJSON *process_json(const mpprof_process *p) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "file", p->file);
  cJSON_AddStringToObject(o, "host", p->host);
  cJSON_AddItemToObject(o, MP_RK_TOP.mpprof_version, str_or_null(p->mpprof_version));
  cJSON_AddItemToObject(o, "pid", mpprof_json_u64((uint64_t)p->pid));
  cJSON_AddItemToObject(o, "ppid", mpprof_json_u64((uint64_t)p->ppid));
  cJSON_AddItemToObject(o, "rank",
                        p->has_rank ? cJSON_CreateNumber((double)p->rank) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, MP_RK_TOP.world_size,
                        p->world_size > 0 ? cJSON_CreateNumber((double)p->world_size)
                                          : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "argv", p->argv ? cJSON_Duplicate(p->argv, true) : cJSON_CreateArray());
  cJSON_AddBoolToObject(o, "final", p->final);
  cJSON_AddItemToObject(o, "unprofiled",
                        p->unprofiled ? cJSON_CreateString(p->unprofiled) : cJSON_CreateNull());
  if (p->killed_signal) {
    cJSON *k = cJSON_AddObjectToObject(o, "killed_by");
    cJSON_AddNumberToObject(k, "signal", p->killed_signal);
    mpprof_signal_str name = mpprof_signal_name(p->killed_signal);
    cJSON_AddItemToObject(k, "name", name.s[0] ? cJSON_CreateString(name.s) : cJSON_CreateNull());
  } else {
    cJSON_AddNullToObject(o, "killed_by");
  }
  cJSON_AddBoolToObject(o, "incomplete", p->incomplete);
  cJSON_AddItemToObject(o, "incomplete_reasons", cJSON_Duplicate(p->incomplete_reasons, true));
  cJSON_AddItemToObject(o, "start_ns", mpprof_json_i64(p->start_ns));
  cJSON_AddItemToObject(o, "end_ns", mpprof_json_i64(p->end_ns));
  cJSON_AddStringToObject(o, "scan", p->scan);
  if (p->sample == 0)
    cJSON_AddStringToObject(o, "sample", "auto");
  else
    cJSON_AddItemToObject(o, "sample", cJSON_CreateNumber((double)p->sample));
  if (p->device_name) {
    cJSON *d = cJSON_AddObjectToObject(o, "device");
    cJSON_AddStringToObject(d, "name", p->device_name);
    char cc[32];
    snprintf(cc, sizeof cc, "%d.%d", p->cc_major, p->cc_minor);
    cJSON_AddStringToObject(d, "cc", cc);
  } else {
    cJSON_AddNullToObject(o, "device");
  }
  if (p->framework) {
    cJSON *fw = cJSON_AddObjectToObject(o, MP_RK_TOP.framework);
    cJSON_AddStringToObject(fw, MP_RK_FRAMEWORK.name, p->framework);
    cJSON_AddStringToObject(fw, MP_RK_FRAMEWORK.version, p->framework_version);
    cJSON_AddItemToObject(fw, MP_RK_FRAMEWORK.backward_marks, str_or_null(p->backward_marks));
  } else {
    cJSON_AddNullToObject(o, MP_RK_TOP.framework);
  }
  cJSON *c = cJSON_AddObjectToObject(o, "cupti");
  cJSON_AddStringToObject(c, "status", p->cupti_status);
  cJSON_AddItemToObject(c, "dropped_records", cJSON_CreateNumber((double)p->cupti_dropped));
  if (p->unattributed_kernels)
    cJSON_AddItemToObject(c, MP_RK_CUPTI.unattributed_kernels,
                          cJSON_Duplicate(p->unattributed_kernels, true));
  if (p->tc_counters_status) { /* --tc-counters was requested */
    cJSON *tc = cJSON_AddObjectToObject(o, "tc_counters");
    cJSON_AddStringToObject(tc, "status", p->tc_counters_status);
    cJSON_AddItemToObject(tc, "reason", str_or_null(p->tc_counters_reason));
    cJSON_AddItemToObject(tc, "chip", str_or_null(p->tc_counters_chip));
    cJSON_AddItemToObject(tc, "kernels_profiled",
                          cJSON_CreateNumber((double)p->tc_counters_kernels));
    cJSON_AddItemToObject(tc, "ops_profiled",
                          cJSON_CreateNumber((double)p->tc_counters_ops_profiled));
    cJSON_AddItemToObject(tc, "ops_unmatched",
                          cJSON_CreateNumber((double)p->tc_counters_ops_unmatched));
  }
  cJSON_AddItemToObject(o, "sites", mpprof_json_u64(p->n_sites));
  cJSON_AddItemToObject(o, "events", mpprof_json_u64(p->n_events));
  cJSON_AddItemToObject(o, "calls", mpprof_json_u64(p->calls));
  return o;
}

/* Kernel lists are written as one raw JSON item each, not a cJSON object per
 * kernel (a site may hold 100k kernels: the per-kernel objects were most of
 * report.json's writing time). The text is what cJSON would print. */
/* One kernel entry; count and gpu_ns given (a layer sums them over sites). */
static void kernel_text(mpprof_tb *b, const mpprof_kernel *k, uint64_t count, uint64_t gpu_ns) {
  mpprof_tb_cstr(b, "{\"name\":");
  mpprof_tb_json_str(b, k->name);
  char dm[MP_KERNEL_SHOWN_MAX];
  mp_kernel_demangle(k->name, dm, sizeof dm);
  if (strcmp(dm, k->name)) {
    mpprof_tb_cstr(b, ",\"demangled\":");
    mpprof_tb_json_str(b, dm);
  }
  mpprof_tb_cstr(b, ",\"count\":");
  mpprof_tb_u64(b, count);
  mpprof_tb_cstr(b, ",\"gpu_ns\":");
  mpprof_tb_u64(b, gpu_ns);
  mpprof_tb_cstr(b, ",\"tc\":");
  mpprof_tb_cstr(b, k->cls.tc == MP_TC_UNKNOWN ? "null"
                    : k->cls.tc == MP_TC_YES   ? "true"
                                               : "false");
  mpprof_tb_cstr(b, ",\"tc_source\":");
  mpprof_tb_json_str(b, mp_tc_source_name(k->cls.source));
  mpprof_tb_cstr(b, ",\"rule\":");
  mpprof_tb_json_str(b, k->cls.rule);
  mpprof_tb_cstr(b, ",\"instr\":");
  mpprof_tb_json_str(b, k->cls.instr);
  mpprof_tb_cstr(b, "}");
}

/* The raw item of a list built in b ("[...]"); NULL on ENOMEM. */
static cJSON *tb_raw(mpprof_tb *b) {
  cJSON *r = b->oom ? NULL : cJSON_CreateRaw(b->p ? b->p : "[]");
  free(b->p);
  return r;
}

/* The stats from the compact records (no cJSON tree and no expanded record
 * per tensor: most of a site's text). */
static void tensors_text(mpprof_tb *b, const mpprof_site *s) {
  const mpprof_role_stats *ts;
  bool owned;
  if (mpprof_site_tensors(s, &ts, &owned)) {
    b->oom = true;
    return;
  }
  for (size_t i = 0; i < s->n_tensors; i++) {
    mpprof_tb_put(b, i ? "," : "{", 1);
    mpprof_tb_json_str(b, ts[i].role);
    mpprof_tb_put(b, ":", 1);
    mpprof_tb_cstats(b, &ts[i].st);
  }
  mpprof_tb_cstr(b, s->n_tensors ? "}" : "{}");
  if (owned) mpprof_role_stats_free((mpprof_role_stats *)ts, s->n_tensors);
}

static void kernels_text(mpprof_tb *b, const mpprof_site *s) {
  mpprof_tb_cstr(b, "[");
  for (size_t i = 0; i < s->n_kernels; i++) {
    if (i) mpprof_tb_cstr(b, ",");
    kernel_text(b, &s->kernels[i], s->kernels[i].count, s->kernels[i].gpu_ns);
  }
  mpprof_tb_cstr(b, "]");
}

/* The site object through cJSON: for the sites site_text leaves to it. */
static cJSON *site_json(const mpprof_model *m, const mpprof_site *s) {
  cJSON *o = cJSON_CreateObject(), *id = cJSON_Parse(s->key);
  if (!o || !id) {
    cJSON_Delete(o);
    cJSON_Delete(id);
    return NULL;
  }
  cJSON_AddItemToObject(o, "id", mpprof_json_u64(s->id));
  while (id->child) {
    cJSON *c = cJSON_DetachItemViaPointer(id, id->child);
    if (!strcmp(c->string, "phase")) { /* the raw scope phase: "phase" below says it */
      cJSON_Delete(c);
      continue;
    }
    cJSON_AddItemToObject(o, c->string, c);
  }
  cJSON_Delete(id);
  cJSON_AddStringToObject(o, "layer_name", s->layer_name);
  cJSON_AddStringToObject(o, "phase", mpprof_phase_name(s->phase));
  cJSON_AddItemToObject(o, "calls", mpprof_json_u64(s->calls));
  cJSON_AddItemToObject(o, "scanned_calls", mpprof_json_u64(s->scanned_calls));
  if (s->autotune_calls)
    cJSON_AddItemToObject(o, "autotune_calls", mpprof_json_u64(s->autotune_calls));
  cJSON_AddItemToObject(o, "not_scanned", counts_obj(s->not_scanned, s->n_not_scanned));
  mpprof_tb tb = {0};
  tensors_text(&tb, s);
  cJSON_AddItemToObject(o, "tensors", tb_raw(&tb));
  cJSON_AddItemToObject(o, "gpu_ns", u64_or_null(s->has_gpu_ns, s->gpu_ns));
  mpprof_tb kb = {0};
  kernels_text(&kb, s);
  cJSON_AddItemToObject(o, "kernels", tb_raw(&kb));
  cJSON_AddItemToObject(o, "ptr_align",
                        s->ptr_align ? cJSON_CreateNumber(s->ptr_align) : cJSON_CreateNull());
  add_fp8_values(o, s);
  cJSON_AddItemToObject(o, "ranks", counts_obj(s->ranks, s->n_ranks));
  if (s->shadow) cJSON_AddItemToObject(o, MP_RK_SITE.shadow, mpprof_shadow_json(s->shadow, NULL));
  const char *under =
      s->shadow ? mpprof_understated_name(mpprof_site_current_understated(s)) : NULL;
  if (under) cJSON_AddStringToObject(o, "current_understated", under);
  cJSON_AddItemToObject(o, "tc_eligible", tri_bool(s->elig_known ? s->elig.eligible : -1));
  cJSON_AddItemToObject(o, "tc_efficient",
                        tri_bool(s->elig_known && !s->shapes_merged ? s->elig.efficient : -1));
  cJSON_AddStringToObject(o, "tc_reason", s->elig.reason);
  cJSON_AddBoolToObject(o, "tc_eligible_with_tf32", s->elig.eligible_with_tf32);
  char comp[160];
  mpprof_site_compute_label(s, comp, sizeof comp);
  cJSON_AddStringToObject(o, "compute", comp);
  cJSON_AddBoolToObject(o, "tf32", mpprof_site_is_tf32(s));
  cJSON_AddItemToObject(o, "flop_per_call",
                        s->flop_per_call ? mpprof_json_u64(s->flop_per_call) : cJSON_CreateNull());
  double tf = mpprof_site_tflops(m, s);
  cJSON_AddItemToObject(o, "tflops", tf >= 0 ? mpprof_json_double(tf) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "tc_used", tri_bool(s->tc_used));
  cJSON_AddStringToObject(o, "tc_source", mp_tc_source_name(s->tc_source));
  return o;
}

/* ---- a site's text without a cJSON tree (100k sites) ---- */

static void key_text(mpprof_tb *b, const char *key) {
  mpprof_tb_put(b, ",\"", 2);
  mpprof_tb_cstr(b, key);
  mpprof_tb_put(b, "\":", 2);
}

/* A string member; none when s is NULL (cJSON_AddStringToObject adds none). */
static void str_member(mpprof_tb *b, const char *key, const char *s) {
  if (!s) return;
  key_text(b, key);
  mpprof_tb_json_str(b, s);
}

static void u64_member(mpprof_tb *b, const char *key, bool has, uint64_t v) {
  key_text(b, key);
  if (has)
    mpprof_tb_u64(b, v);
  else
    mpprof_tb_cstr(b, "null");
}

static void tri_member(mpprof_tb *b, const char *key, int v) {
  key_text(b, key);
  mpprof_tb_cstr(b, v < 0 ? "null" : v ? "true" : "false");
}

static void counts_text(mpprof_tb *b, const char *key, const mpprof_count *c, size_t n) {
  key_text(b, key);
  mpprof_tb_put(b, "{", 1);
  for (size_t i = 0; i < n; i++) {
    if (i) mpprof_tb_put(b, ",", 1);
    mpprof_tb_json_str(b, c[i].name);
    mpprof_tb_put(b, ":", 1);
    mpprof_tb_u64(b, c[i].n);
  }
  mpprof_tb_put(b, "}", 1);
}

/* Members made by cJSON (rare ones: FP8 scale values, shadow results), their
 * text without the braces of the object that holds them. */
static void cjson_members_text(mpprof_tb *b, cJSON *o) {
  char *t = o ? cJSON_PrintUnformatted(o) : NULL;
  if (!t) {
    b->oom = true;
  } else if (strlen(t) > 2) {
    mpprof_tb_put(b, ",", 1);
    mpprof_tb_put(b, t + 1, strlen(t) - 2);
  }
  cJSON_free(t);
  cJSON_Delete(o);
}

/* What cJSON_PrintUnformatted(site_json(m, s)) prints, written directly: the
 * identity members are the text of the key (which is cJSON's text of them).
 * false when the key holds the raw scope "phase", which the site's object
 * leaves out: site_json then. */
static bool site_text(mpprof_tb *b, const mpprof_model *m, const mpprof_site *s) {
  size_t klen = strlen(s->key);
  if (strstr(s->key, "\"phase\":") || klen < 2) return false;
  mpprof_tb_cstr(b, "{\"id\":");
  mpprof_tb_u64(b, s->id);
  if (klen > 2) {
    mpprof_tb_put(b, ",", 1);
    mpprof_tb_put(b, s->key + 1, klen - 2);
  }
  str_member(b, "layer_name", s->layer_name);
  str_member(b, "phase", mpprof_phase_name(s->phase));
  u64_member(b, "calls", true, s->calls);
  u64_member(b, "scanned_calls", true, s->scanned_calls);
  if (s->autotune_calls) u64_member(b, "autotune_calls", true, s->autotune_calls);
  counts_text(b, "not_scanned", s->not_scanned, s->n_not_scanned);
  key_text(b, "tensors");
  tensors_text(b, s);
  u64_member(b, "gpu_ns", s->has_gpu_ns, s->gpu_ns);
  key_text(b, "kernels");
  kernels_text(b, s);
  u64_member(b, "ptr_align", s->ptr_align, s->ptr_align);
  const mpprof_fp8_values *v = mpprof_site_fp8(s);
  bool fp8 = false;
  for (int i = 0; i < MP_FP8_ROWS; i++)
    fp8 = fp8 || v->v[i].read || v->v[i].unread;
  if (fp8) {
    cJSON *o = cJSON_CreateObject();
    if (o) add_fp8_values(o, s);
    cjson_members_text(b, o);
  }
  counts_text(b, "ranks", s->ranks, s->n_ranks);
  if (s->shadow) {
    cJSON *o = cJSON_CreateObject();
    if (o) cJSON_AddItemToObject(o, MP_RK_SITE.shadow, mpprof_shadow_json(s->shadow, NULL));
    cjson_members_text(b, o);
    str_member(b, "current_understated",
               mpprof_understated_name(mpprof_site_current_understated(s)));
  }
  tri_member(b, "tc_eligible", s->elig_known ? s->elig.eligible : -1);
  tri_member(b, "tc_efficient", s->elig_known && !s->shapes_merged ? s->elig.efficient : -1);
  str_member(b, "tc_reason", s->elig.reason);
  tri_member(b, "tc_eligible_with_tf32", s->elig.eligible_with_tf32);
  char comp[160];
  mpprof_site_compute_label(s, comp, sizeof comp);
  str_member(b, "compute", comp);
  tri_member(b, "tf32", mpprof_site_is_tf32(s));
  u64_member(b, "flop_per_call", s->flop_per_call, s->flop_per_call);
  double tf = mpprof_site_tflops(m, s);
  key_text(b, "tflops");
  if (tf >= 0)
    mpprof_tb_double(b, tf);
  else
    mpprof_tb_cstr(b, "null");
  tri_member(b, "tc_used", s->tc_used);
  str_member(b, "tc_source", mp_tc_source_name(s->tc_source));
  mpprof_tb_put(b, "}", 1);
  return true;
}

static cJSON *window_json(bool has, int lo, int hi) {
  if (!has) return cJSON_CreateNull();
  cJSON *a = cJSON_CreateArray();
  cJSON_AddItemToArray(a, cJSON_CreateNumber(lo));
  cJSON_AddItemToArray(a, cJSON_CreateNumber(hi));
  return a;
}

static cJSON *fp8_json(const mpprof_layer *l, int fits, mp_tclass cls, bool e5m2) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddItemToObject(o, "fits", tri_bool(fits));
  cJSON *ts = cJSON_AddObjectToObject(o, "tensors");
  for (size_t i = 0; ts && i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->cls != cls || !t->has_values) continue;
    const mp_fp8_advice *f = e5m2 ? &t->adv.fp8_e5m2 : &t->adv.fp8_e4m3;
    cJSON *e = cJSON_AddObjectToObject(ts, t->name);
    cJSON_AddBoolToObject(e, "fits", f->fits);
    cJSON_AddNumberToObject(e, "scale_log2", f->scale_log2);
    cJSON_AddItemToObject(e, "underflow_fraction", mpprof_json_double(f->underflow_fraction));
    cJSON_AddBoolToObject(e, "estimate", f->estimate);
  }
  return o;
}

static void add_distinct(cJSON *arr, const char *s) {
  if (!s) return;
  const cJSON *c;
  cJSON_ArrayForEach(c, arr) if (!strcmp(c->valuestring, s)) return;
  cJSON_AddItemToArray(arr, cJSON_CreateString(s));
}

/* The layer's kernels merged by name over its sites (same fields as a site's);
 * by name through mpprof_name_index: linear in the kernels. */
static cJSON *layer_kernels(const mpprof_model *m, const mpprof_layer *l) {
  size_t total = 0;
  for (size_t i = 0; i < l->n_sites; i++)
    total += m->sites[l->first_site + i].n_kernels;
  size_t cap = total ? total : 1;
  const char **names = malloc(cap * sizeof *names);
  const mpprof_kernel **first = malloc(cap * sizeof *first);
  uint64_t *counts = calloc(cap, sizeof *counts), *ns = calloc(cap, sizeof *ns);
  mpprof_name_index ix = {0};
  cJSON *arr = NULL;
  if (!names || !first || !counts || !ns || mpprof_name_index_init(&ix, total)) goto out;
  size_t n = 0;
  for (size_t i = 0; i < l->n_sites; i++) {
    const mpprof_site *s = &m->sites[l->first_site + i];
    for (size_t k = 0; k < s->n_kernels; k++) {
      const mpprof_kernel *kn = &s->kernels[k];
      size_t *sl = mpprof_name_index_slot(&ix, kn->name, names);
      if (!*sl) {
        names[n] = kn->name;
        first[n] = kn;
        *sl = ++n;
      }
      counts[*sl - 1] += kn->count;
      ns[*sl - 1] += kn->gpu_ns;
    }
  }
  mpprof_tb b = {0};
  mpprof_tb_cstr(&b, "[");
  for (size_t i = 0; i < n; i++) {
    if (i) mpprof_tb_cstr(&b, ",");
    kernel_text(&b, first[i], counts[i], ns[i]); /* fields but the sums: the first site's */
  }
  mpprof_tb_cstr(&b, "]");
  arr = tb_raw(&b);
out:
  mpprof_name_index_free(&ix);
  free(names);
  free(first);
  free(counts);
  free(ns);
  return arr;
}

static cJSON *layer_json(const mpprof_model *m, const mpprof_layer *l, mp_stats *scratch) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "name", l->name);
  cJSON_AddItemToObject(o, "module_class", str_or_null(l->module_class));
  int nph = 0, last = 0;
  cJSON *phases = cJSON_CreateArray();
  for (int p = 0; p < MPPROF_PHASE_COUNT; p++)
    if (l->phase_mask & (1u << p)) {
      nph++, last = p;
      cJSON_AddItemToArray(phases, cJSON_CreateString(mpprof_phase_name((mpprof_phase)p)));
    }
  cJSON_AddStringToObject(o, "phase",
                          mpprof_phase_name(nph == 1 ? (mpprof_phase)last : MPPROF_PHASE_MIXED));
  cJSON_AddItemToObject(o, "phases", phases);
  cJSON *ids = cJSON_AddArrayToObject(o, "sites");
  cJSON *dt = cJSON_CreateObject(), *ct = cJSON_CreateArray(), *mm = cJSON_CreateArray(),
        *apis = cJSON_CreateArray();
  for (size_t i = 0; i < l->n_sites; i++) {
    const mpprof_site *s = &m->sites[l->first_site + i];
    cJSON_AddItemToArray(ids, mpprof_json_u64(s->id));
    for (int t = 0; t < s->n_types; t++) {
      cJSON *arr = cJSON_GetObjectItemCaseSensitive(dt, s->types[t].role);
      if (!arr) arr = cJSON_AddArrayToObject(dt, s->types[t].role);
      add_distinct(arr, mp_dtype_name(s->types[t].dtype));
    }
    add_distinct(ct, s->compute_type);
    add_distinct(mm, s->math_mode);
    add_distinct(apis, s->api);
  }
  cJSON_AddItemToObject(o, "calls", mpprof_json_u64(l->calls));
  cJSON_AddItemToObject(o, "scanned_calls", mpprof_json_u64(l->scanned_calls));
  cJSON_AddItemToObject(o, "gpu_ns", u64_or_null(l->has_gpu_ns, l->gpu_ns));
  cJSON_AddItemToObject(o, "elements", mpprof_json_u64(l->elements));
  cJSON_AddItemToObject(o, "apis", apis);
  cJSON_AddItemToObject(o, "dtypes", dt);
  cJSON_AddItemToObject(o, "compute_types", ct);
  cJSON_AddItemToObject(o, "math_modes", mm);
  cJSON *ts = cJSON_AddObjectToObject(o, "tensors");
  for (size_t i = 0; ts && i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    cJSON *js = mpprof_cstats_to_json(&t->st, &t->adv, scratch);
    if (js) {
      cJSON_AddStringToObject(js, "class", mp_tclass_name(t->cls));
      cJSON_AddItemToObject(js, "scanned_calls", mpprof_json_u64(t->scanned_calls));
      if (t->cls != MP_TCLASS_FORWARD && t->cls != MP_TCLASS_OPTIMIZER) {
        /* The scale its values were taken at; gradients are shown divided by it. */
        cJSON *ls = cJSON_AddObjectToObject(js, "loss_scale");
        cJSON_AddItemToObject(ls, "applied_min",
                              t->scale_min > 0 ? mpprof_json_double(t->scale_min)
                                               : cJSON_CreateNull());
        cJSON_AddItemToObject(ls, "applied_max",
                              t->scale_max > 0 ? mpprof_json_double(t->scale_max)
                                               : cJSON_CreateNull());
        cJSON_AddBoolToObject(ls, "undeclared", t->scale_undeclared);
        cJSON_AddStringToObject(ls, "values",
                                t->cls != MP_TCLASS_GRADIENT               ? "as_recorded"
                                : t->unscale_estimate || t->casts_estimate ? "unscaled_estimate"
                                                                           : "unscaled");
      }
    }
    cJSON_AddItemToObject(ts, t->name, js);
  }
  cJSON *pct = cJSON_AddObjectToObject(o, "percent");
  cJSON_AddItemToObject(pct, "fp16_overflow", mpprof_json_double(l->fp16_overflow.pct));
  cJSON_AddItemToObject(pct, "fp16_underflow", mpprof_json_double(l->fp16_underflow.pct));
  cJSON_AddItemToObject(pct, "bf16_overflow", mpprof_json_double(l->bf16_overflow.pct));
  cJSON_AddItemToObject(pct, "bf16_underflow", mpprof_json_double(l->bf16_underflow.pct));
  cJSON_AddItemToObject(pct, "fp8_e4m3_underflow", mpprof_json_double(l->e4m3_underflow.pct));
  cJSON_AddItemToObject(pct, "fp8_e5m2_underflow", mpprof_json_double(l->e5m2_underflow.pct));
  /* The same shares with their tensor and denominator (docs/report.md "Shares"). */
  cJSON *sh = cJSON_AddObjectToObject(o, "shares");
  cJSON_AddItemToObject(sh, "fp16_overflow", mpprof_share_json(&l->fp16_overflow));
  cJSON_AddItemToObject(sh, "fp16_underflow", mpprof_share_json(&l->fp16_underflow));
  cJSON_AddItemToObject(sh, "bf16_overflow", mpprof_share_json(&l->bf16_overflow));
  cJSON_AddItemToObject(sh, "bf16_underflow", mpprof_share_json(&l->bf16_underflow));
  cJSON_AddItemToObject(sh, "fp8_e4m3_underflow", mpprof_share_json(&l->e4m3_underflow));
  cJSON_AddItemToObject(sh, "fp8_e5m2_underflow", mpprof_share_json(&l->e5m2_underflow));
  cJSON_AddItemToObject(sh, "fp16_overflow_at_applied_scale",
                        mpprof_share_json(&l->applied_fp16_overflow));
  cJSON_AddItemToObject(sh, "fp16_underflow_at_applied_scale",
                        mpprof_share_json(&l->applied_fp16_underflow));
  cJSON_AddItemToObject(sh, "nonfinite", mpprof_share_json(&l->nonfinite));
  const mpprof_layer_advice *a = &l->adv;
  cJSON *adv = cJSON_AddObjectToObject(o, "advice");
  cJSON_AddItemToObject(adv, "recommended",
                        a->known ? cJSON_CreateString(mp_recommendation_name(a->rec))
                                 : cJSON_CreateNull());
  cJSON_AddBoolToObject(adv, "has_gradients", a->has_gradients);
  cJSON_AddBoolToObject(adv, "flushed_before_seen", mpprof_layer_flushed_unseen(l));
  cJSON_AddItemToObject(adv, "loss_scale_log2",
                        window_json(a->has_window, a->window_lo, a->window_hi));
  cJSON_AddItemToObject(adv, "loss_scale_true_log2",
                        mpprof_true_window_json(a->has_window, a->window_lo, a->window_hi,
                                                a->beyond_lo, a->beyond_hi));
  cJSON_AddBoolToObject(adv, "loss_scale_estimate", a->window_estimate);
  cJSON_AddItemToObject(adv, "fp8_e4m3", fp8_json(l, a->fp8_e4m3_fits, MP_TCLASS_FORWARD, false));
  cJSON_AddItemToObject(adv, "fp8_e5m2", fp8_json(l, a->fp8_e5m2_fits, MP_TCLASS_GRADIENT, true));
  cJSON_AddItemToObject(adv, "reasons",
                        a->reasons ? cJSON_Duplicate(a->reasons, true) : cJSON_CreateArray());
  cJSON_AddItemToObject(o, MP_RK_SITE.shadow, mpprof_shadow_json(l->shadow, l));
  cJSON_AddItemToObject(o, "tc_eligible", tri_bool(l->tc_eligible));
  cJSON_AddBoolToObject(o, "tc_eligible_with_tf32", l->tc_eligible_with_tf32);
  cJSON_AddItemToObject(o, "tc_used", tri_bool(l->tc_used));
  cJSON_AddStringToObject(o, "tc_source", mp_tc_source_name(l->tc_source));
  cJSON_AddItemToObject(o, "kernel_ns", mpprof_json_u64(l->kernel_ns));
  cJSON_AddItemToObject(o, "tc_ns", mpprof_json_u64(l->tc_ns));
  cJSON_AddItemToObject(o, "kernels", layer_kernels(m, l));
  return o;
}

/* What the capture range recorded (docs/report.md, "Capture range"). */
static cJSON *capture_json(const mpprof_model *m) {
  mpprof_capture_sum c;
  mpprof_capture_summary(m, &c);
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "mode", c.mode);
  cJSON_AddItemToObject(o, "nvtx", c.nvtx ? cJSON_CreateString(c.nvtx) : cJSON_CreateNull());
  cJSON *steps = c.has_steps ? cJSON_CreateArray() : cJSON_CreateNull();
  if (c.has_steps) {
    cJSON_AddItemToArray(steps, mpprof_json_u64((uint64_t)c.first));
    cJSON_AddItemToArray(steps, mpprof_json_u64((uint64_t)c.last));
  }
  cJSON_AddItemToObject(o, "steps", steps);
  cJSON_AddItemToObject(o, "captured", mpprof_json_u64((uint64_t)c.captured));
  cJSON *out = cJSON_AddObjectToObject(o, "outside");
  cJSON_AddItemToObject(out, "not_started", mpprof_json_u64((uint64_t)c.not_started));
  cJSON_AddItemToObject(out, "stopped", mpprof_json_u64((uint64_t)c.stopped));
  cJSON_AddItemToObject(o, "never_opened", mpprof_json_u64(c.never_opened));
  char sentence[512];
  mpprof_capture_sentence(&c, sentence, sizeof sentence);
  cJSON_AddItemToObject(o, "message",
                        sentence[0] ? cJSON_CreateString(sentence) : cJSON_CreateNull());
  return o;
}

/* The timeline lists in trace.json and the caps they ran under (summed over processes). */
static cJSON *timeline_json(const mpprof_model *m) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  int64_t max_events = 0, max_ranges = 0, ev_drop = 0, rg_drop = 0, kv_drop = 0;
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    if (p->max_events > max_events) max_events = p->max_events;
    if (p->max_ranges > max_ranges) max_ranges = p->max_ranges;
    ev_drop += p->events_dropped > 0 ? p->events_dropped : 0;
    rg_drop += p->ranges_dropped > 0 ? p->ranges_dropped : 0;
    kv_drop += p->kernel_events_dropped > 0 ? p->kernel_events_dropped : 0;
  }
  cJSON_AddItemToObject(o, "events", mpprof_json_u64(m->n_events));
  cJSON_AddItemToObject(o, "ranges", mpprof_json_u64(m->n_ranges));
  cJSON_AddItemToObject(o, "kernel_events", mpprof_json_u64(m->n_kevents));
  cJSON_AddItemToObject(o, "max_events", mpprof_json_u64((uint64_t)max_events));
  cJSON_AddItemToObject(o, "max_ranges", mpprof_json_u64((uint64_t)max_ranges));
  cJSON_AddItemToObject(o, "events_dropped", mpprof_json_u64((uint64_t)ev_drop));
  cJSON_AddItemToObject(o, "ranges_dropped", mpprof_json_u64((uint64_t)rg_drop));
  cJSON_AddItemToObject(o, "kernel_events_dropped", mpprof_json_u64((uint64_t)kv_drop));
  return o;
}

static cJSON *summary_json(const mpprof_model *m) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddItemToObject(o, "processes", mpprof_json_u64(m->n_procs));
  cJSON_AddItemToObject(o, "skipped_files", mpprof_json_u64(m->n_skipped));
  cJSON_AddItemToObject(o, "sites", mpprof_json_u64(m->n_sites));
  cJSON_AddItemToObject(o, "layers", mpprof_json_u64(m->n_layers));
  cJSON_AddItemToObject(o, "calls", mpprof_json_u64(m->total_calls));
  cJSON_AddItemToObject(o, "calls_in_merged_sites", mpprof_json_u64(m->merged_calls));
  cJSON_AddItemToObject(o, "calls_not_attributed", mpprof_json_u64(m->not_attributed));
  cJSON_AddItemToObject(o, "scanned_calls", mpprof_json_u64(m->total_scanned_calls));
  cJSON_AddItemToObject(o, "events", mpprof_json_u64(m->n_events));
  cJSON_AddItemToObject(o, "gpu_ns", u64_or_null(m->has_gpu_ns, m->total_gpu_ns));
  cJSON_AddBoolToObject(o, "no_cuda_ops", m->total_calls == 0);
  cJSON *alive = cJSON_AddArrayToObject(o, "still_running");
  for (size_t i = 0; alive && i < m->n_still_running; i++)
    cJSON_AddItemToArray(alive, cJSON_CreateNumber((double)m->still_running[i]));
  /* Which evidence the layer verdicts rest on (docs/report.md "Measured error"). */
  cJSON_AddStringToObject(o, MPPROF_K_VERDICT_BASIS,
                          m->has_shadow ? MPPROF_VERDICT_BASIS_MEASURED
                                        : MPPROF_VERDICT_BASIS_RANGE);
  cJSON_AddNumberToObject(o, MPPROF_K_SHADOW_MAX_REL, mpprof_shadow_max_rel(m));
  cJSON_AddItemToObject(o, "capture", capture_json(m));
  cJSON_AddItemToObject(o, "timeline", timeline_json(m));
  char *msg;
  if (mpprof_model_all_skipped(m))
    msg = strdup("no usable raw profile file: every one was skipped (skipped_files)");
  else if (m->n_procs == 0)
    msg = strdup("no raw profile files were read: nothing was profiled");
  else if (mpprof_capture_all_outside(m))
    msg = mpprof_asprintf("no CUDA matrix op ran inside the capture range (%" PRId64
                          " ran outside it)",
                          mpprof_capture_all_outside(m));
  else if (m->total_calls == 0)
    msg = strdup("no CUDA matrix ops (cuBLAS, cuBLASLt, cuDNN) were called by the profiled "
                 "program");
  else {
    char past[256];
    mpprof_calls_past_cap_text(m, past, sizeof past);
    msg = mpprof_asprintf("%" PRIu64 " call%s in %zu site%s, %zu layer%s, %zu process%s%s",
                          m->total_calls, m->total_calls == 1 ? "" : "s", m->n_sites,
                          m->n_sites == 1 ? "" : "s", m->n_layers, m->n_layers == 1 ? "" : "s",
                          m->n_procs, m->n_procs == 1 ? "" : "es", past);
  }
  cJSON_AddItemToObject(o, "message", cJSON_CreateString(msg ? msg : ""));
  free(msg);
  size_t recs[MP_REC_COUNT] = {0}, unknown = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    if (m->layers[i].adv.known)
      recs[m->layers[i].adv.rec]++;
    else
      unknown++;
  }
  cJSON *r = cJSON_AddObjectToObject(o, "layers_by_recommendation");
  for (int i = 0; i < MP_REC_COUNT; i++)
    if (recs[i])
      cJSON_AddItemToObject(r, mp_recommendation_name((mp_recommendation)i),
                            mpprof_json_u64(recs[i]));
  if (unknown) cJSON_AddItemToObject(r, "unknown", mpprof_json_u64(unknown));
  cJSON_AddItemToObject(o, "loss_scale_note", str_or_null(mpprof_loss_scale_note(&m->loss_scale)));
  return o;
}

static cJSON *loss_scale_json(const mpprof_applied_scale *g) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddBoolToObject(o, "applicable", g->applicable);
  cJSON_AddItemToObject(o, "recommended_log2",
                        g->has_window ? cJSON_CreateNumber(g->recommended_log2)
                                      : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "window_log2", window_json(g->has_window, g->window_lo, g->window_hi));
  cJSON_AddItemToObject(o, "true_window_log2",
                        mpprof_true_window_json(g->has_window, g->window_lo, g->window_hi,
                                                g->beyond_lo, g->beyond_hi));
  cJSON_AddBoolToObject(o, "needed", g->needed);
  cJSON_AddBoolToObject(o, "flush_edge", g->flush_edge);
  cJSON_AddBoolToObject(o, "subnormal", g->subnormal);
  cJSON_AddItemToObject(o, "limited_by",
                        g->limited_by ? cJSON_Duplicate(g->limited_by, true) : cJSON_CreateArray());
  cJSON *ap = cJSON_AddObjectToObject(o, "applied");
  cJSON_AddBoolToObject(ap, "known", g->declared);
  cJSON_AddItemToObject(ap, "source", str_or_null(g->source));
  cJSON_AddItemToObject(ap, "first",
                        g->declared ? mpprof_json_double(g->first) : cJSON_CreateNull());
  cJSON_AddItemToObject(ap, "last", g->declared ? mpprof_json_double(g->last) : cJSON_CreateNull());
  cJSON_AddItemToObject(ap, "min", g->declared ? mpprof_json_double(g->min) : cJSON_CreateNull());
  cJSON_AddItemToObject(ap, "max", g->declared ? mpprof_json_double(g->max) : cJSON_CreateNull());
  cJSON_AddItemToObject(ap, "per_step",
                        g->per_step ? cJSON_Duplicate(g->per_step, true) : cJSON_CreateArray());
  cJSON_AddItemToObject(ap, "steps_marked", mpprof_json_u64(g->steps_marked));
  cJSON_AddItemToObject(ap, "skipped_steps", mpprof_json_u64(g->skipped_steps));
  cJSON_AddItemToObject(ap, "note", str_or_null(mpprof_loss_scale_note(g)));
  return o;
}

static cJSON *first_nonfinite_json(const mpprof_model *m) {
  const mpprof_nonfinite *r = &m->first_nonfinite;
  if (!r->found) return cJSON_CreateNull();
  const mpprof_site *s = &m->sites[r->site];
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddItemToObject(o, "site", mpprof_json_u64(s->id));
  cJSON_AddStringToObject(o, "layer", s->layer_name);
  cJSON_AddStringToObject(o, "nvtx_path", s->layer);
  cJSON_AddStringToObject(o, "api", s->api);
  cJSON_AddStringToObject(o, "process", r->proc->file);
  cJSON_AddItemToObject(o, "thread", mpprof_json_u64(r->thread));
  cJSON_AddItemToObject(o, "t_ns", mpprof_json_u64(r->t_ns));
  cJSON_AddItemToObject(o, "call_index", mpprof_json_u64(r->call_index));
  cJSON_AddItemToObject(o, "step", r->has_step ? mpprof_json_u64(r->step) : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "loss_scale",
                        r->scale > 0 ? mpprof_json_double(r->scale) : cJSON_CreateNull());
  cJSON_AddStringToObject(o, "output", r->role);
  cJSON_AddBoolToObject(o, "inputs_scanned", r->inputs_scanned);
  cJSON_AddItemToObject(o, "count", mpprof_json_u64(r->count));
  cJSON_AddItemToObject(o, "nans", mpprof_json_u64(r->nans));
  cJSON_AddItemToObject(o, "pos_infs", mpprof_json_u64(r->pos_infs));
  cJSON_AddItemToObject(o, "neg_infs", mpprof_json_u64(r->neg_infs));
  return o;
}

cJSON *mpprof_tc_summary_json(const mpprof_model *m) {
  const mpprof_tc_summary *t = &m->tc;
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddBoolToObject(o, "kernel_data", t->kernel_data);
  cJSON_AddItemToObject(o, "gemm_conv_gpu_ns", mpprof_json_u64(t->gemm_conv_kernel_ns));
  cJSON_AddItemToObject(o, "tensor_core_gpu_ns", mpprof_json_u64(t->tc_ns));
  cJSON_AddItemToObject(o, "unknown_gpu_ns", mpprof_json_u64(t->unknown_ns));
  cJSON_AddItemToObject(o, "tensor_core_share",
                        t->gemm_conv_kernel_ns
                            ? mpprof_json_double((double)t->tc_ns / (double)t->gemm_conv_kernel_ns)
                            : cJSON_CreateNull());
  cJSON_AddItemToObject(o, "sites_eligible", mpprof_json_u64(t->sites_eligible));
  cJSON_AddItemToObject(o, "sites_eligible_with_tf32",
                        mpprof_json_u64(t->sites_eligible_with_tf32));
  cJSON_AddItemToObject(o, "sites_on_tensor_cores", mpprof_json_u64(t->sites_on_tc));
  cJSON_AddItemToObject(o, "kernels_by_counters", mpprof_json_u64(t->kernels_by_counters));
  cJSON_AddItemToObject(o, "kernels_by_name", mpprof_json_u64(t->kernels_by_name));
  cJSON_AddBoolToObject(o, "counters_requested", t->counters_requested);
  cJSON_AddItemToObject(o, "counters_notes",
                        t->counters_notes ? cJSON_Duplicate(t->counters_notes, true)
                                          : cJSON_CreateArray());
  cJSON *nu = cJSON_AddArrayToObject(o, "eligible_not_used");
  for (size_t i = 0; nu && i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    if (!(s->elig.eligible && s->tc_used == 0)) continue;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToObject(e, "site", mpprof_json_u64(s->id));
    cJSON_AddStringToObject(e, "layer", s->layer_name);
    cJSON_AddStringToObject(e, "api", s->api);
    cJSON_AddItemToObject(e, "gpu_ns", mpprof_json_u64(s->kernel_ns));
    char *why = mpprof_asprintf(
        "%s%s%s", s->elig.efficient ? "" : s->elig.reason, s->elig.efficient ? "" : "; ",
        s->n_kernels ? "its kernels are not Tensor Core kernels" : "no kernels");
    cJSON_AddStringToObject(e, "reason", why ? why : "");
    free(why);
    cJSON *kn = cJSON_AddArrayToObject(e, "kernels");
    for (size_t k = 0; k < s->n_kernels; k++)
      cJSON_AddItemToArray(kn, cJSON_CreateString(s->kernels[k].name));
    cJSON_AddItemToArray(nu, e);
  }
  cJSON_AddItemToObject(
      o, "notes", t->cupti_notes ? cJSON_Duplicate(t->cupti_notes, true) : cJSON_CreateArray());
  return o;
}

static cJSON *finding_json(const mpprof_finding *f) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "kind", f->kind);
  cJSON_AddStringToObject(o, "severity", f->severity);
  cJSON_AddItemToObject(o, "layer", str_or_null(f->layer));
  cJSON_AddStringToObject(o, "message", f->message);
  cJSON_AddStringToObject(o, "action", f->action);
  cJSON_AddItemToObject(o, "evidence",
                        f->evidence ? cJSON_Duplicate(f->evidence, true) : cJSON_CreateObject());
  cJSON *imp = cJSON_AddObjectToObject(o, "impact");
  cJSON_AddItemToObject(imp, "gpu_ns", mpprof_json_u64(f->impact_gpu_ns));
  cJSON_AddItemToObject(imp, "elements", mpprof_json_u64(f->impact_elements));
  return o;
}

static cJSON *program_argv(const mpprof_model *m) {
  return m->program_argv ? cJSON_Duplicate(m->program_argv, true) : cJSON_CreateArray();
}

static int write_all(const mpprof_model *m, FILE *f, mp_stats *scratch) {
  fputs("{\n", f);
  if (put(f, "schema", cJSON_CreateString(MP_SCHEMA_REPORT), false, false) ||
      put(f, "program", cJSON_CreateString(m->program ? m->program : ""), false, true) ||
      put(f, "argv", program_argv(m), false, true) ||
      put(f, "summary", summary_json(m), true, true))
    return -1;
  cJSON *inc = cJSON_CreateBool(m->incomplete);
  if (put(f, "incomplete", inc, false, true)) return -1;
  cJSON *procs = cJSON_CreateArray();
  for (size_t i = 0; procs && i < m->n_procs; i++)
    cJSON_AddItemToArray(procs, process_json(&m->procs[i]));
  cJSON *sk = cJSON_CreateArray();
  for (size_t i = 0; sk && i < m->n_skipped; i++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "file", m->skipped[i].file);
    cJSON_AddStringToObject(e, "reason", m->skipped[i].reason);
    cJSON_AddItemToArray(sk, e);
  }
  cJSON *cfg = cJSON_CreateObject();
  if (cfg) {
    cJSON *ph = cJSON_AddObjectToObject(cfg, "phase_markers");
    for (int p = MPPROF_PHASE_FORWARD; p <= MPPROF_PHASE_OPTIMIZER; p++)
      cJSON_AddStringToObject(ph, mpprof_phase_name((mpprof_phase)p), m->phases.words[p]);
    cJSON_AddItemToObject(cfg, "underflow_max", mpprof_json_double(m->params.underflow_max));
    cJSON_AddItemToObject(cfg, "fp8_underflow_max",
                          mpprof_json_double(m->params.fp8_underflow_max));
    cJSON_AddNumberToObject(cfg, "scale_log2_min", m->params.scale_log2_min);
    cJSON_AddNumberToObject(cfg, "scale_log2_max", m->params.scale_log2_max);
  }
  cJSON *fs = cJSON_CreateArray();
  for (size_t i = 0; fs && i < m->n_findings; i++)
    cJSON_AddItemToArray(fs, finding_json(&m->findings[i]));
  if (put(f, "processes", procs, true, true) || put(f, "skipped_files", sk, true, true) ||
      put(f, "settings", cfg, true, true) ||
      put(f, "loss_scale", loss_scale_json(&m->loss_scale), true, true) ||
      put(f, "first_nonfinite", first_nonfinite_json(m), true, true) ||
      put(f, "tensor_cores", mpprof_tc_summary_json(m), true, true) ||
      put(f, "findings", fs, true, true))
    return -1;
  fputs(",\n\"layers\": [", f);
  for (size_t i = 0; i < m->n_layers; i++) {
    cJSON *l = layer_json(m, &m->layers[i], scratch);
    char *s = l ? cJSON_PrintUnformatted(l) : NULL;
    cJSON_Delete(l);
    if (!s) return -1;
    fprintf(f, "%s\n%s", i ? "," : "", s);
    free(s);
  }
  fputs("],\n\"sites\": [", f);
  mpprof_tb b = {0};
  for (size_t i = 0; i < m->n_sites; i++) {
    b.n = 0;
    if (site_text(&b, m, &m->sites[i])) {
      if (b.oom) break;
      fputs(i ? ",\n" : "\n", f);
      fwrite(b.p, 1, b.n, f);
      continue;
    }
    bool arena = mpprof_json_arena_begin();
    cJSON *o = site_json(m, &m->sites[i]);
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (s) fprintf(f, "%s\n%s", i ? "," : "", s);
    cJSON_free(s);
    if (arena) mpprof_json_arena_end();
    if (!s) {
      b.oom = true;
      break;
    }
  }
  free(b.p);
  mpprof_json_arena_release();
  if (b.oom) return -1;
  fputs("]\n}\n", f);
  return 0;
}

int mpprof_write_report_json(const mpprof_model *m, const char *path, mpprof_afile_set *set) {
  mpprof_afile a;
  if (mpprof_afile_open(&a, path, set)) return -1;
  mp_stats *scratch = malloc(sizeof *scratch);
  int rc = scratch ? write_all(m, a.f, scratch) : -1;
  free(scratch);
  if (rc) {
    mpprof_afile_close(&a, false);
    errno = ENOMEM;
    return -1;
  }
  return mpprof_afile_close(&a, true);
}
