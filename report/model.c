/* The merged model: sites with the same identity (every field that is not a
 * per-call total) combine across processes and ranks; after all files are
 * read, sites are sorted by layer so that each layer is a contiguous range,
 * and events are renumbered to the final site ids. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/raw_format.h"
#include "report/report_internal.h"

void mpprof_model_init(mpprof_model *m) {
  memset(m, 0, sizeof *m);
  m->tc.counters_unavailable_note = -1;
  mpprof_phase_rules_default(&m->phases);
  mp_advice_params_default(&m->params);
}

void mpprof_site_free(mpprof_site *s) {
  if (!s) return;
  mpprof_shadow_free(s->shadow);
  free(s->fp8);
  free(s->conv);
  free(s->key);
  free(s->layer_name);
  free(s->not_scanned);
  free(s->ranks);
  mpprof_role_stats_free(s->tensors, s->n_tensors);
  free(s->tpack);
  free(s->kernels);
  memset(s, 0, sizeof *s);
}

void mpprof_process_free(mpprof_process *p) {
  if (!p) return;
  free(p->file);
  free(p->host);
  cJSON_Delete(p->incomplete_reasons);
  cJSON_Delete(p->argv);
  cJSON_Delete(p->training);
  free(p->nonfinite_site_key);
  free(p->scan);
  free(p->unprofiled);
  free(p->device_name);
  free(p->framework);
  free(p->framework_version);
  for (size_t k = 0; k < p->n_models; k++) {
    free(p->models[k].name);
    free(p->models[k].module_class);
  }
  free(p->models);
  free(p->mpprof_version);
  free(p->backward_marks);
  free(p->cupti_status);
  cJSON_Delete(p->unattributed_kernels);
  free(p->tc_counters_status);
  free(p->tc_counters_reason);
  free(p->tc_counters_chip);
  free(p->capture_mode);
  free(p->capture_nvtx);
  free(p->tc_counters_sample);
  cJSON_Delete(p->tc_counters_metrics);
  memset(p, 0, sizeof *p);
}

static void layer_free(mpprof_layer *l) {
  free(l->name);
  for (size_t i = 0; i < l->n_tensors; i++) {
    free(l->tensors[i].name);
    mpprof_cstats_free(&l->tensors[i].st);
    mpprof_cstats_free(&l->tensors[i].at_scale);
  }
  free(l->tensors);
  cJSON_Delete(l->adv.reasons);
  mpprof_shadow_free(l->shadow);
}

void mpprof_model_free(mpprof_model *m) {
  mpprof_plan_free(m);
  for (size_t i = 0; i < m->n_procs; i++)
    mpprof_process_free(&m->procs[i]);
  free(m->procs);
  for (size_t i = 0; i < m->n_skipped; i++) {
    free(m->skipped[i].file);
    free(m->skipped[i].reason);
  }
  free(m->skipped);
  free(m->still_running);
  for (size_t i = 0; i < m->n_sites; i++)
    mpprof_site_free(&m->sites[i]);
  free(m->sites);
  free(m->events);
  for (size_t i = 0; i < m->n_ranges; i++)
    free(m->ranges[i].name);
  free(m->ranges);
  for (size_t i = 0; i < m->n_kevents; i++)
    free(m->kevents[i].name);
  free(m->kevents);
  for (size_t i = 0; i < m->n_layers; i++)
    layer_free(&m->layers[i]);
  free(m->layers);
  for (size_t i = 0; i < m->n_findings; i++) {
    mpprof_finding *f = &m->findings[i];
    free(f->kind);
    free(f->severity);
    free(f->layer);
    free(f->message);
    free(f->action);
    cJSON_Delete(f->evidence);
  }
  free(m->findings);
  cJSON_Delete(m->loss_scale.limited_by);
  cJSON_Delete(m->loss_scale.per_step);
  free(m->loss_scale.note);
  cJSON_Delete(m->tc.cupti_notes);
  cJSON_Delete(m->tc.counters_notes);
  free(m->program);
  free(m->hash);
  mpprof_strpool_free(&m->strings);
  free(m->pack.p);
  mpprof_phase_rules_free(&m->phases);
  memset(m, 0, sizeof *m);
}

int mpprof_model_add_skipped(mpprof_model *m, const char *file, const char *reason) {
  if (mpprof_grow((void **)&m->skipped, &m->cap_skipped, m->n_skipped + 1, sizeof *m->skipped))
    return -1;
  mpprof_skipped *s = &m->skipped[m->n_skipped];
  s->file = mpprof_strdup_utf8(file); /* a reason names files too */
  s->reason = mpprof_strdup_utf8(reason);
  if (!s->file || !s->reason) {
    free(s->file);
    free(s->reason);
    return -1;
  }
  m->n_skipped++;
  return 0;
}

/* ---- key hash ---- */

/* Eight bytes a step (a key is some 300 bytes; byte-wise FNV-1a was a
 * multiply per byte), mixed at the end so that the low bits index well. */
static uint64_t hash_str(const char *s) {
  size_t n = strlen(s);
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
  for (; n >= 8; n -= 8, s += 8) {
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

static int hash_rebuild(mpprof_model *m, size_t cap) {
  size_t *h = calloc(cap, sizeof *h);
  if (!h) return -1;
  for (size_t i = 0; i < m->n_sites; i++) {
    size_t j = hash_str(m->sites[i].key) & (cap - 1);
    while (h[j])
      j = (j + 1) & (cap - 1);
    h[j] = i + 1;
  }
  free(m->hash);
  m->hash = h;
  m->hash_cap = cap;
  return 0;
}

/* Slot of key: either holding it or empty. */
static size_t hash_slot(const mpprof_model *m, const char *key) {
  size_t j = hash_str(key) & (m->hash_cap - 1);
  while (m->hash[j] && strcmp(m->sites[m->hash[j] - 1].key, key))
    j = (j + 1) & (m->hash_cap - 1);
  return j;
}

/* ---- merging ---- */

static int merge_counts(mpprof_count **arr, size_t *n, const mpprof_count *src, size_t nsrc) {
  for (size_t i = 0; i < nsrc; i++) {
    size_t j = 0;
    while (j < *n && strcmp((*arr)[j].name, src[i].name))
      j++;
    if (j == *n) {
      mpprof_count *na = realloc(*arr, (*n + 1) * sizeof *na);
      if (!na) return -1;
      *arr = na;
      na[j].name = src[i].name; /* interned */
      na[j].n = 0;
      (*n)++;
    }
    (*arr)[j].n += src[i].n;
  }
  return 0;
}

static void merge_kernel(mpprof_kernel *k, const mpprof_kernel *src) {
  k->count += src->count;
  k->gpu_ns += src->gpu_ns;
  if (src->counters_tc > k->counters_tc) k->counters_tc = src->counters_tc;
  k->tc_profiled += src->tc_profiled;
  if (k->n_tc_values == src->n_tc_values)
    for (int v = 0; v < k->n_tc_values; v++)
      k->tc_values[v] += src->tc_values[v];
  else
    k->n_tc_values = 0; /* different metric lists: no sum means anything */
}

/* d's kernel entries by name (mpprof_name_index, built for this merge): a
 * site with 100k kernels merges in linear time (a list scan was quadratic). */
static int merge_kernels(mpprof_site *d, mpprof_site *s) {
  if (!s->n_kernels) return 0;
  size_t nd = d->n_kernels, total = nd + s->n_kernels;
  if (nd * s->n_kernels <= 64) { /* a few kernels (most sites): by name, no index */
    size_t added = 0;
    for (size_t i = 0; i < s->n_kernels; i++) {
      size_t j = 0;
      while (j < nd && strcmp(d->kernels[j].name, s->kernels[i].name))
        j++;
      if (j < nd) {
        merge_kernel(&d->kernels[j], &s->kernels[i]);
        continue;
      }
      if (!added++) {
        mpprof_kernel *nk = realloc(d->kernels, total * sizeof *nk);
        if (!nk) return -1;
        d->kernels = nk;
      }
      d->kernels[nd] = s->kernels[i];
      s->kernels[i].name = NULL; /* taken over */
      d->n_kernels = ++nd;
    }
    return 0;
  }
  mpprof_kernel *nk = realloc(d->kernels, total * sizeof *nk);
  if (!nk) return -1;
  d->kernels = nk;
  const char **names = malloc(total * sizeof *names);
  mpprof_name_index ix = {0};
  if (!names || mpprof_name_index_init(&ix, total)) {
    free(names);
    return -1;
  }
  for (size_t i = 0; i < nd; i++) {
    names[i] = d->kernels[i].name;
    size_t *sl = mpprof_name_index_slot(&ix, names[i], names);
    if (!*sl) *sl = i + 1; /* a repeated name keeps its first entry */
  }
  for (size_t i = 0; i < s->n_kernels; i++) {
    size_t *sl = mpprof_name_index_slot(&ix, s->kernels[i].name, names);
    if (*sl) {
      merge_kernel(&d->kernels[*sl - 1], &s->kernels[i]);
    } else {
      d->kernels[nd] = s->kernels[i];
      names[nd] = d->kernels[nd].name;
      s->kernels[i].name = NULL; /* taken over */
      *sl = ++nd;
    }
  }
  d->n_kernels = nd;
  mpprof_name_index_free(&ix);
  free(names);
  return 0;
}

/* d: a site of m, its tensors packed again after the merge. */
static int merge_into(mpprof_model *m, mpprof_site *d, mpprof_site *s) {
  if (mpprof_site_unpack_tensors(d) || mpprof_site_unpack_tensors(s)) return -1;
  d->calls += s->calls;
  d->scanned_calls += s->scanned_calls;
  d->autotune_calls += s->autotune_calls;
  if (merge_counts(&d->not_scanned, &d->n_not_scanned, s->not_scanned, s->n_not_scanned) ||
      merge_counts(&d->ranks, &d->n_ranks, s->ranks, s->n_ranks))
    return -1;
  for (size_t i = 0; i < s->n_tensors; i++) {
    size_t j = 0;
    while (j < d->n_tensors && strcmp(d->tensors[j].role, s->tensors[i].role))
      j++;
    if (j == d->n_tensors) {
      mpprof_role_stats *nt = realloc(d->tensors, (d->n_tensors + 1) * sizeof *nt);
      if (!nt) return -1;
      d->tensors = nt;
      nt[j] = s->tensors[i]; /* take over */
      memset(&s->tensors[i], 0, sizeof s->tensors[i]);
      d->n_tensors++;
    } else if (mpprof_cstats_merge(&d->tensors[j].st, &s->tensors[i].st)) {
      return -1;
    }
  }
  if (s->has_gpu_ns) {
    d->gpu_ns += s->gpu_ns;
    d->has_gpu_ns = true;
  }
  if (merge_kernels(d, s)) return -1;
  if (s->ptr_align && (!d->ptr_align || s->ptr_align < d->ptr_align)) d->ptr_align = s->ptr_align;
  if (s->fp8) {
    if (!d->fp8 && !(d->fp8 = calloc(1, sizeof *d->fp8))) return -1;
    for (int i = 0; i < MP_FP8_ROWS; i++)
      mpprof_fp8_value_merge(&d->fp8->v[i], &s->fp8->v[i]);
  }
  if (mpprof_shadow_merge(&d->shadow, s->shadow)) return -1;
  /* Mixed architectures: eligibility follows the oldest one. */
  if (s->cc_major &&
      (!d->cc_major || s->cc_major * 10 + s->cc_minor < d->cc_major * 10 + d->cc_minor)) {
    d->cc_major = s->cc_major;
    d->cc_minor = s->cc_minor;
  }
  return mpprof_site_pack_tensors(d, &m->pack);
}

const mpprof_fp8_values *mpprof_site_fp8(const mpprof_site *s) {
  static const mpprof_fp8_values none;
  return s->fp8 ? s->fp8 : &none;
}

size_t mpprof_model_find_site(const mpprof_model *m, const char *key) {
  if (!m->hash_cap) return SIZE_MAX;
  size_t slot = hash_slot(m, key);
  return m->hash[slot] ? m->hash[slot] - 1 : SIZE_MAX;
}

int mpprof_model_merge_site(mpprof_model *m, size_t idx, mpprof_site *s) {
  int rc = merge_into(m, &m->sites[idx], s);
  mpprof_site_free(s);
  return rc;
}

/* Room for need sites. Not mpprof_grow: no zeroing of pages not used yet
 * (a page of the array costs memory only once a site is written to it). */
static int reserve(mpprof_model *m, size_t need) {
  return mpprof_reserve((void **)&m->sites, &m->cap_sites, need, sizeof *m->sites);
}

size_t mpprof_model_stage(mpprof_model *m, size_t k) {
  return reserve(m, m->n_sites + k + 1) ? SIZE_MAX : m->n_sites + k;
}

int mpprof_model_add_staged(mpprof_model *m, size_t at, size_t *ret_idx) {
  mpprof_site s = m->sites[at];
  memset(&m->sites[at], 0, sizeof s);
  int rc = mpprof_model_add_site(m, &s, ret_idx);
  if (rc) mpprof_site_free(&s); /* not taken: freed here (a failed merge emptied it already) */
  return rc;
}

int mpprof_model_add_site(mpprof_model *m, mpprof_site *s, size_t *ret_idx) {
  if (m->n_sites + 1 > m->hash_cap / 2 && hash_rebuild(m, m->hash_cap ? m->hash_cap * 2 : 1024))
    return -1;
  size_t slot = hash_slot(m, s->key);
  if (m->hash[slot]) {
    size_t idx = m->hash[slot] - 1;
    int rc = merge_into(m, &m->sites[idx], s);
    mpprof_site_free(s);
    *ret_idx = idx;
    return rc;
  }
  if (reserve(m, m->n_sites + 1) || mpprof_site_pack_tensors(s, &m->pack)) return -1;
  m->sites[m->n_sites] = *s;
  memset(s, 0, sizeof *s);
  m->hash[slot] = m->n_sites + 1;
  *ret_idx = m->n_sites++;
  return 0;
}

/* ---- finishing: sort by layer, build layers ---- */

static int site_cmp(const void *a, const void *b) {
  const mpprof_site *x = a, *y = b;
  int c = strcmp(x->layer_name, y->layer_name);
  return c ? c : strcmp(x->key, y->key);
}

/* Sites are sorted by pointer (a site is some 900 bytes: qsort moved them). */
static int site_ptr_cmp(const void *a, const void *b) {
  return site_cmp(*(mpprof_site *const *)a, *(mpprof_site *const *)b);
}

int mpprof_model_finish(mpprof_model *m) {
  const mpprof_site *prev = NULL; /* the last site whose path was read for markers */
  for (size_t i = 0; i < m->n_sites; i++) {
    mpprof_site *s = &m->sites[i];
    /* A framework scope names its phase; an NVTX path carries marker words
     * (read once for a run of sites of one layer: the paths are interned). */
    if (s->scope_phase > 0) {
      s->phase = (mpprof_phase)s->scope_phase;
      s->layer_name = strdup(s->layer);
    } else if (prev && prev->layer == s->layer) {
      s->phase = prev->phase;
      s->layer_name = strdup(prev->layer_name);
    } else {
      s->phase = mpprof_phase_of(&m->phases, s->layer, &s->layer_name);
      prev = s;
    }
    if (!s->layer_name) return -1;
    if (!s->tpack) { /* packed ones were summed when packed */
      s->elements = 0;
      for (size_t t = 0; t < s->n_tensors; t++)
        s->elements += s->tensors[t].st.count;
    }
  }
  /* Sort pointers, renumber events by the old index, then move the sites
   * in place along the permutation's cycles (no second array of them). */
  size_t n = m->n_sites ? m->n_sites : 1;
  mpprof_site **p = malloc(n * sizeof *p);
  size_t *newid = malloc(n * sizeof *newid);
  if (!p || !newid) {
    free(p);
    free(newid);
    return -1;
  }
  for (size_t i = 0; i < m->n_sites; i++)
    p[i] = &m->sites[i];
  qsort(p, m->n_sites, sizeof *p, site_ptr_cmp);
  for (size_t i = 0; i < m->n_sites; i++)
    newid[p[i] - m->sites] = i;
  free(p);
  for (size_t i = 0; i < m->n_events; i++)
    m->events[i].site = (uint32_t)newid[m->events[i].site];
  for (size_t i = 0; i < m->n_kevents; i++)
    m->kevents[i].site = (uint32_t)newid[m->kevents[i].site];
  for (size_t i = 0; i < m->n_sites; i++) {
    /* the site now at i belongs at newid[i]: swap it there until i holds its own */
    while (newid[i] != i) {
      size_t j = newid[i];
      mpprof_site t = m->sites[j];
      m->sites[j] = m->sites[i];
      m->sites[i] = t;
      newid[i] = newid[j];
      newid[j] = j;
    }
  }
  for (size_t i = 0; i < m->n_sites; i++)
    m->sites[i].id = i;
  free(newid);
  free(m->hash); /* keys are no longer looked up */
  m->hash = NULL;
  m->hash_cap = 0;

  /* Layers: runs of equal layer_name. */
  size_t nl = 0;
  for (size_t i = 0; i < m->n_sites; i++)
    if (i == 0 || strcmp(m->sites[i].layer_name, m->sites[i - 1].layer_name)) nl++;
  m->layers = calloc(nl ? nl : 1, sizeof *m->layers);
  if (!m->layers) return -1;
  m->n_layers = 0;
  for (size_t i = 0; i < m->n_sites; i++) {
    mpprof_site *s = &m->sites[i];
    if (i == 0 || strcmp(s->layer_name, m->sites[i - 1].layer_name)) {
      mpprof_layer *l = &m->layers[m->n_layers++];
      l->name = strdup(s->layer_name);
      if (!l->name) return -1;
      l->first_site = i;
      l->tc_eligible = l->tc_used = -1;
    }
    mpprof_layer *l = &m->layers[m->n_layers - 1];
    s->layer_idx = m->n_layers - 1;
    l->n_sites++;
    l->phase_mask |= 1u << s->phase;
    if (!l->module_class && s->module_class) l->module_class = s->module_class;
    l->calls += s->calls;
    l->scanned_calls += s->scanned_calls;
    l->elements += s->elements;
    if (s->has_gpu_ns) {
      l->gpu_ns += s->gpu_ns;
      l->has_gpu_ns = true;
      m->total_gpu_ns += s->gpu_ns;
      m->has_gpu_ns = true;
    }
    m->total_calls += s->calls;
    m->total_scanned_calls += s->scanned_calls;
    if (s->shapes_merged) m->merged_calls += s->calls, m->merged_sites++;
  }
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].not_attributed > 0) m->not_attributed += (uint64_t)m->procs[i].not_attributed;
  m->total_calls += m->not_attributed;
  return 0;
}

/* --- devices --- */

static const char *device_of(const char *name) {
  return name ? name : "no GPU";
}

static const char *proc_device(const void *ctx, size_t i) {
  return ((const mpprof_process *)ctx)[i].device_name;
}

size_t mpprof_device_list_text(const char *(*name_of)(const void *ctx, size_t i), const void *ctx,
                               size_t n_procs, char *buf, size_t n, bool *ret_sim) {
  size_t len = 0, distinct = 0;
  bool sim = false;
  const char **seen = calloc(n_procs ? n_procs : 1, sizeof *seen);
  buf[0] = '\0';
  for (size_t i = 0; i < n_procs; i++) {
    const char *d = device_of(name_of(ctx, i));
    bool dup = false;
    /* without memory, compared with the processes before it */
    for (size_t j = 0; j < (seen ? distinct : i) && !dup; j++)
      dup = !strcmp(d, seen ? seen[j] : device_of(name_of(ctx, j)));
    if (dup) continue;
    if (seen) seen[distinct] = d;
    sim |= !strncmp(d, "simcuda", 7);
    if (distinct++ < MPPROF_DEVICES_NAMED && len < n)
      len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "", d);
  }
  free(seen);
  if (distinct > MPPROF_DEVICES_NAMED && len < n)
    snprintf(buf + len, n - len, " and %zu more", distinct - MPPROF_DEVICES_NAMED);
  if (!distinct) snprintf(buf, n, "none");
  if (ret_sim) *ret_sim = sim;
  return distinct;
}

size_t mpprof_devices_text(const mpprof_model *m, char *buf, size_t n, bool *ret_sim) {
  return mpprof_device_list_text(proc_device, m->procs, m->n_procs, buf, n, ret_sim);
}

/* --- the capture range --- */

void mpprof_capture_summary(const mpprof_model *m, mpprof_capture_sum *ret) {
  memset(ret, 0, sizeof *ret);
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    if (!p->has_capture || !strcmp(p->capture_mode, "all")) continue;
    if (!ret->any) {
      ret->mode = p->capture_mode;
      ret->nvtx = p->capture_nvtx;
      ret->has_steps = p->has_capture_steps;
      ret->first = p->capture_first;
      ret->last = p->capture_last;
    } else if (strcmp(ret->mode, p->capture_mode)) {
      ret->mode = "mixed";
    }
    ret->any = true;
    ret->procs++;
    ret->never_opened += p->capture_never_opened;
    ret->captured += p->capture_captured;
    ret->not_started += p->capture_not_started;
    ret->stopped += p->capture_stopped;
    const cJSON *steps = cJSON_GetObjectItemCaseSensitive(p->training, MP_RK_TRAINING.steps);
    const cJSON *marked = cJSON_GetObjectItemCaseSensitive(steps, MP_RK_STEPS.marked);
    if (cJSON_IsNumber(marked)) ret->steps_marked += (int64_t)marked->valuedouble;
  }
  if (!ret->any) { /* everything recorded: captured = all calls seen */
    ret->mode = "all";
    for (size_t i = 0; i < m->n_procs; i++)
      ret->captured +=
          m->procs[i].has_capture ? m->procs[i].capture_captured : m->procs[i].raw_calls;
  }
}

void mpprof_capture_sentence(const mpprof_capture_sum *c, char *buf, size_t n) {
  if (!c->any) {
    buf[0] = '\0';
    return;
  }
  char what[200];
  if (!strcmp(c->mode, "steps") && c->has_steps)
    snprintf(what, sizeof what, "steps %" PRId64 " to %" PRId64, c->first, c->last);
  else if (!strcmp(c->mode, "nvtx") && c->nvtx)
    snprintf(what, sizeof what, "inside NVTX ranges \"%.120s\"", c->nvtx);
  else if (!strcmp(c->mode, "cudaProfilerApi"))
    snprintf(what, sizeof what, "between cudaProfilerStart and cudaProfilerStop");
  else
    snprintf(what, sizeof what, "%s", c->mode);
  int64_t outside = c->not_started + c->stopped;
  if (c->never_opened && c->never_opened == c->procs) {
    /* Where nothing opened it: the call, the range or the step never seen. */
    char why[160];
    if (!strcmp(c->mode, "steps") && c->has_steps && !c->steps_marked)
      snprintf(why, sizeof why, "the program marked no step: mpprof_step() or NVTX mark \"step\"");
    else if (!strcmp(c->mode, "steps") && c->has_steps && !c->stopped)
      snprintf(why, sizeof why, "no op call ran at step %" PRId64 " or later", c->first);
    else if (!strcmp(c->mode, "steps") && c->has_steps) { /* the steps went past it */
      char at[64];
      if (c->first == c->last)
        snprintf(at, sizeof at, "step %" PRId64, c->first);
      else
        snprintf(at, sizeof at, "steps %" PRId64 " to %" PRId64, c->first, c->last);
      snprintf(why, sizeof why,
               "no op call ran at %s: %" PRId64 " ran before it, %" PRId64 " after it", at,
               c->not_started, c->stopped);
    } else
      snprintf(why, sizeof why, "%s",
               !strcmp(c->mode, "cudaProfilerApi") ? "cudaProfilerStart was never called"
               : !strcmp(c->mode, "nvtx")          ? "no thread pushed that NVTX range"
                                                   : "no process's range opened");
    snprintf(buf, n,
             "capture range %s: it never opened (%s), so none of the %" PRId64
             " op call%s was recorded",
             what, why, outside, outside == 1 ? "" : "s");
    return;
  }
  int len = snprintf(buf, n,
                     "capture range %s: %" PRId64 " op calls recorded, %" PRId64
                     " outside it not recorded (%" PRId64 " before it opened, %" PRId64
                     " after it closed)",
                     what, c->captured, outside, c->not_started, c->stopped);
  if (c->never_opened && len > 0 && (size_t)len < n)
    snprintf(buf + len, n - (size_t)len, "; it never opened in %zu of %zu processes",
             c->never_opened, c->procs);
}

void mpprof_calls_past_cap_text(const mpprof_model *m, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = '\0';
  if (m->merged_calls)
    used += (size_t)snprintf(buf, n,
                             "; %" PRIu64 " calls in %zu site%s of merged shapes (past "
                             "MPPROF_MAX_SITES)",
                             m->merged_calls, m->merged_sites, m->merged_sites == 1 ? "" : "s");
  if (m->not_attributed && used < n)
    snprintf(buf + used, n - used,
             "%s%" PRIu64 " calls in no site (past MPPROF_MAX_SITES and its reserve: in no "
             "verdict)",
             used ? ", " : "; ", m->not_attributed);
}

int64_t mpprof_capture_all_outside(const mpprof_model *m) {
  if (m->total_calls) return 0;
  mpprof_capture_sum c;
  mpprof_capture_summary(m, &c);
  return c.any ? c.not_started + c.stopped : 0;
}
