/* Measured error (shadow execution, `mpprof run --shadow`): the "shadow"
 * object of raw sites read and merged, per layer merged over its sites, the
 * best fp8 recipe per layer, the verdict check against --shadow-max-rel, and
 * the report.json objects. Definitions: docs/numerics.md "Shadow execution";
 * keys: analysis/raw_format.h (MP_RAW_SHADOW*) and analysis/schema_keys.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/raw_format.h"
#include "analysis/schema_keys.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

static const char *const skip_names[MPPROF_SH_SKIP_COUNT] = {
#define X(id, json, doc) json,
    MP_RAW_SHADOW_SKIPPED(X)
#undef X
};

void mpprof_shadow_free(mpprof_shadow *s) {
  if (!s) return;
  for (int c = 0; c < MP_SH_COUNT; c++)
    free(s->cand[c].samples);
  free(s);
}

/* null is +inf (the writer's spelling of it); numbers >= 0. */
static bool metric_of(const cJSON *o, const char *k, double *ret) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (cJSON_IsNull(v)) {
    *ret = INFINITY;
    return true;
  }
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0)) return false;
  *ret = v->valuedouble;
  return true;
}

static bool count_of(const cJSON *o, const char *k, uint64_t *ret) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 0x1p63) return false;
  *ret = (uint64_t)v->valuedouble;
  return true;
}

int mpprof_shadow_parse(const cJSON *o, mpprof_shadow **ret, char *err, size_t errlen) {
  *ret = NULL;
  if (!o) return 0;
  mpprof_shadow *s = calloc(1, sizeof *s);
  if (!s) return -1;
  const cJSON *sk = cJSON_GetObjectItemCaseSensitive(o, MP_RK_SHADOW.skipped),
              *cs = cJSON_GetObjectItemCaseSensitive(o, MP_RK_SHADOW.candidates), *it;
  if (!cJSON_IsObject(o) || !count_of(o, MP_RK_SHADOW.calls, &s->calls) || !cJSON_IsObject(cs) ||
      (sk && !cJSON_IsObject(sk))) {
    snprintf(err, errlen, "shadow: needs calls, candidates and an optional skipped object");
    goto bad;
  }
  cJSON_ArrayForEach(it, sk) {
    for (int r = 0; r < MPPROF_SH_SKIP_COUNT; r++)
      if (!strcmp(it->string, skip_names[r]) && !count_of(sk, it->string, &s->skipped[r])) {
        snprintf(err, errlen, "shadow.skipped.%s: not a count", it->string);
        goto bad;
      }
  }
  cJSON_ArrayForEach(it, cs) {
    int c = mp_shadow_cand_from_name(it->string);
    if (c < 0) continue; /* a newer writer's candidate */
    mpprof_shadow_cand *d = &s->cand[c];
    const cJSON *smp = cJSON_GetObjectItemCaseSensitive(it, MP_RK_SHADOW_CAND.rel_l2_samples);
    if (!count_of(it, MP_RK_SHADOW_CAND.calls, &d->calls) ||
        !metric_of(it, MP_RK_SHADOW_CAND.rel_l2, &d->worst.rel_l2) ||
        !metric_of(it, MP_RK_SHADOW_CAND.max_rel, &d->worst.max_rel) ||
        !metric_of(it, MP_RK_SHADOW_CAND.flushed, &d->worst.flushed) ||
        !count_of(it, MP_RK_SHADOW_CAND.nonfinite, &d->worst.nonfinite) || !cJSON_IsArray(smp)) {
      snprintf(err, errlen,
               "shadow.candidates.%s: needs calls, rel_l2, max_rel, flushed, nonfinite, "
               "rel_l2_samples",
               it->string);
      goto bad;
    }
    int n = cJSON_GetArraySize(smp);
    d->samples = malloc(((size_t)n + 1) * sizeof *d->samples);
    if (!d->samples) goto bad;
    const cJSON *v;
    cJSON_ArrayForEach(v, smp) {
      if (cJSON_IsNull(v))
        d->samples[d->n++] = INFINITY;
      else if (cJSON_IsNumber(v) && v->valuedouble >= 0)
        d->samples[d->n++] = v->valuedouble;
      else {
        snprintf(err, errlen, "shadow.candidates.%s.rel_l2_samples: not a number >= 0 or null",
                 it->string);
        goto bad;
      }
    }
  }
  *ret = s;
  return 0;
bad:
  mpprof_shadow_free(s);
  return -1;
}

static int cand_merge(mpprof_shadow_cand *d, const mpprof_shadow_cand *s) {
  if (!s->calls) return 0;
  if (s->n) {
    double *v = realloc(d->samples, (d->n + s->n) * sizeof *v);
    if (!v) return -1;
    memcpy(v + d->n, s->samples, s->n * sizeof *v);
    d->samples = v;
    d->n += s->n;
  }
  if (!d->calls)
    d->worst = s->worst;
  else
    mp_shadow_metrics_worst(&d->worst, &s->worst);
  d->calls += s->calls;
  d->inputs_rounded |= s->inputs_rounded;
  return 0;
}

int mpprof_shadow_merge(mpprof_shadow **dst, const mpprof_shadow *src) {
  if (!src) return 0;
  if (!*dst && !(*dst = calloc(1, sizeof **dst))) return -1;
  mpprof_shadow *d = *dst;
  d->calls += src->calls;
  for (int r = 0; r < MPPROF_SH_SKIP_COUNT; r++)
    d->skipped[r] += src->skipped[r];
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (cand_merge(&d->cand[c], &src->cand[c])) return -1;
  return 0;
}

/* --- per layer --- */

static const struct {
  const char *name;
  const char *te; /* Transformer Engine's recipe class (transformer_engine.common.recipe) */
  mp_shadow_cand fwd, bwd;
} fp8_recipes[MPPROF_FP8_RECIPES] = {
    {"fp8_current", "Float8CurrentScaling", MP_SH_E4M3_CURRENT, MP_SH_E5M2_CURRENT},
    {"fp8_delayed", "DelayedScaling", MP_SH_E4M3_DELAYED, MP_SH_E5M2_DELAYED},
    {"mxfp8", "MXFP8BlockScaling", MP_SH_MXFP8_E4M3, MP_SH_MXFP8_E5M2},
};

const char *mpprof_fp8_recipe_name(int r) {
  return r >= 0 && r < MPPROF_FP8_RECIPES ? fp8_recipes[r].name : NULL;
}

const char *mpprof_fp8_recipe_te(int r) {
  return r >= 0 && r < MPPROF_FP8_RECIPES ? fp8_recipes[r].te : NULL;
}

double mpprof_shadow_max_rel(const mpprof_model *m) {
  return m->shadow_max_rel > 0 ? m->shadow_max_rel : MP_SHADOW_DEFAULT_MAX_REL;
}

/* A candidate measured over some calls passes when its worst rel_l2 is
 * within the limit; measured on inputs already rounded to it, that is no
 * evidence for their rounding (MPPROF_SHADOW_WITHIN_ROUNDED). Above the limit
 * it fails either way: the inputs' rounding would only add to the error. */
static int verdict_of(const mpprof_shadow_cand *c, double max_rel) {
  if (!c->calls) return -1;
  if (!(c->worst.rel_l2 <= max_rel)) return 0;
  return c->inputs_rounded ? MPPROF_SHADOW_WITHIN_ROUNDED : 1;
}

bool mpprof_site_inputs_rounded(const mpprof_site *s, mp_shadow_cand c) {
  mp_dtype a, b, cc, d;
  mpprof_site_gemm_dtypes(s, &a, &b, &cc, &d);
  return mp_shadow_inputs_already_rounded(c, a, b);
}

int mpprof_shadow_cand_within(const mpprof_model *m, const mpprof_shadow_cand *c) {
  return verdict_of(c, mpprof_shadow_max_rel(m));
}

/* The layer's fp8 recipes (HYBRID, as Transformer Engine trains: e4m3 for
 * forward GEMMs, e5m2 for backward ones), their worst rel_l2, and the best. */
static void layer_fp8(const mpprof_model *m, mpprof_layer *l) {
  l->best_fp8 = -1;
  for (int r = 0; r < MPPROF_FP8_RECIPES; r++) {
    mpprof_shadow_cand *agg = &l->fp8[r];
    memset(agg, 0, sizeof *agg);
    for (size_t i = 0; i < l->n_sites; i++) {
      const mpprof_site *s = &m->sites[l->first_site + i];
      if (!s->shadow) continue;
      mp_shadow_cand c =
          s->phase == MPPROF_PHASE_BACKWARD ? fp8_recipes[r].bwd : fp8_recipes[r].fwd;
      const mpprof_shadow_cand *sc = &s->shadow->cand[c];
      if (!sc->calls) continue;
      if (!agg->calls)
        agg->worst = sc->worst;
      else
        mp_shadow_metrics_worst(&agg->worst, &sc->worst);
      agg->calls += sc->calls;
      agg->inputs_rounded |= sc->inputs_rounded;
    }
    if (agg->calls && (l->best_fp8 < 0 || agg->worst.rel_l2 < l->fp8[l->best_fp8].worst.rel_l2))
      l->best_fp8 = r;
  }
}

static int add_reason(mpprof_layer *l, const char *buf) {
  cJSON *s = cJSON_CreateString(buf);
  if (!s) return -1;
  if (!l->adv.reasons && !(l->adv.reasons = cJSON_CreateArray())) {
    cJSON_Delete(s);
    return -1;
  }
  cJSON_AddItemToArray(l->adv.reasons, s);
  return 0;
}

int mpprof_shadow_layer_within(const mpprof_model *m, const mpprof_layer *l, mp_shadow_cand c) {
  if (!l->shadow || (unsigned)c >= MP_SH_COUNT) return -1;
  return verdict_of(&l->shadow->cand[c], mpprof_shadow_max_rel(m));
}

/* The candidate that measures a recommendation, or -1 (fp32: nothing to check). */
static int cand_of_rec(const mpprof_layer *l, mp_recommendation r, const mpprof_shadow_cand **ret) {
  switch (r) {
  case MP_REC_FP16:
    *ret = &l->shadow->cand[MP_SH_FP16];
    return 0;
  case MP_REC_FP16_LOSS_SCALE: /* gradients at their loss scale; forward operands at 1 */
    *ret = &l->shadow->cand[MP_SH_FP16_SCALED];
    return 0;
  case MP_REC_BF16:
    *ret = &l->shadow->cand[MP_SH_BF16];
    return 0;
  case MP_REC_FP8_E4M3:
  case MP_REC_FP8_E5M2:
    if (l->best_fp8 < 0) return -1;
    *ret = &l->fp8[l->best_fp8];
    return 0;
  default:
    return -1;
  }
}

/* The range verdict stands only where the measured error of its precision is
 * within the limit; otherwise the next wider precision that passes. */
static int judge(const mpprof_model *m, mpprof_layer *l) {
  double lim = mpprof_shadow_max_rel(m);
  mp_recommendation r = l->adv.rec;
  for (;;) {
    const mpprof_shadow_cand *c;
    if (cand_of_rec(l, r, &c) < 0) return 0;
    int v = verdict_of(c, lim);
    if (v < 0) return 0; /* not measured: the range verdict stands */
    char buf[480], note[200] = "";
    /* the operands' format: fp8 verdicts are HYBRID (e4m3 and e5m2) */
    const char *fmt = r == MP_REC_FP8_E4M3 || r == MP_REC_FP8_E5M2 ? "fp8"
                      : r == MP_REC_BF16                           ? "bf16"
                                                                   : "fp16";
    if (c->inputs_rounded) {
      snprintf(note, sizeof note, "; " MPPROF_SHADOW_ROUNDED_NOTE, fmt);
      if (v == MPPROF_SHADOW_WITHIN_ROUNDED)
        snprintf(note + strlen(note), sizeof note - strlen(note),
                 ", so it is no evidence for them: %s stands on the value ranges alone",
                 mp_recommendation_name(r));
    }
    snprintf(buf, sizeof buf,
             "measured: %s causes relative L2 error %s %s --shadow-max-rel %s "
             "(%llu calls)%s",
             mp_recommendation_name(r), mpprof_rel_text(c->worst.rel_l2, lim).s, v ? "<=" : ">",
             mpprof_rel_limit_text(lim).s, (unsigned long long)c->calls, note);
    if (v) return add_reason(l, buf);
    if (add_reason(l, buf)) return -1;
    r = r == MP_REC_BF16 ? MP_REC_FP32 : MP_REC_BF16; /* bf16's range covers fp16's and fp8's */
    l->adv.rec = r;
  }
}

int mpprof_shadow_layers(mpprof_model *m) {
  for (size_t i = 0; i < m->n_sites; i++) {
    mpprof_site *s = &m->sites[i];
    if (!s->shadow) continue;
    m->has_shadow = true;
    for (int c = 0; c < MP_SH_COUNT; c++)
      s->shadow->cand[c].inputs_rounded =
          s->shadow->cand[c].calls && mpprof_site_inputs_rounded(s, (mp_shadow_cand)c);
  }
  for (size_t i = 0; i < m->n_layers; i++) {
    mpprof_layer *l = &m->layers[i];
    for (size_t j = 0; j < l->n_sites; j++)
      if (mpprof_shadow_merge(&l->shadow, m->sites[l->first_site + j].shadow)) return -1;
    if (!l->shadow) continue;
    layer_fp8(m, l);
    if (l->adv.known && judge(m, l)) return -1;
  }
  return 0;
}

/* --- the Measured columns of a row (report.html, layers.csv, ops.csv) --- */

static mpprof_shadow_cell cell_of(const mpprof_shadow_cand *c, const char *name,
                                  const char *format) {
  mpprof_shadow_cell r = {0};
  if (!c || !c->calls) return r;
  r.c = c;
  r.name = name;
  r.format = format;
  r.rounded = c->inputs_rounded && !isinf(c->worst.rel_l2);
  return r;
}

static mpprof_shadow_cell cand_cell(const mpprof_shadow *sh, mp_shadow_cand which) {
  return cell_of(&sh->cand[which], mp_shadow_cand_name(which),
                 mp_dtype_name(mp_shadow_cand_format(which)));
}

/* The cells common to both rows; fp16: the candidate AMP runs (fp16 with
 * loss scale where there are gradients; a loss scale never reaches forward
 * operands, whose fp16 is at scale 1, what a forward verdict is measured by). */
static void row_of(const mpprof_shadow *sh, bool scaled, mpprof_understated u,
                   mpprof_shadow_row *ret) {
  memset(ret, 0, sizeof *ret);
  ret->sh = sh;
  if (!sh) return;
  ret->now = cand_cell(sh, MP_SH_CURRENT);
  ret->now.format = NULL; /* the call's own precision */
  if (ret->now.c && !isinf(ret->now.c->worst.rel_l2)) ret->understated = u;
  ret->fp16 = cand_cell(sh, scaled ? MP_SH_FP16_SCALED : MP_SH_FP16);
  ret->fp16_loss_scaled = scaled;
  ret->bf16 = cand_cell(sh, MP_SH_BF16);
}

void mpprof_layer_shadow_row(const mpprof_model *m, const mpprof_layer *l, mpprof_shadow_row *ret) {
  bool scaled = (l->phase_mask & 1u << MPPROF_PHASE_BACKWARD) || l->adv.has_gradients ||
                l->adv.rec == MP_REC_FP16_LOSS_SCALE;
  row_of(l->shadow, scaled, l->shadow ? mpprof_layer_current_understated(m, l) : 0, ret);
  if (l->shadow && l->best_fp8 >= 0)
    ret->fp8 = cell_of(&l->fp8[l->best_fp8], fp8_recipes[l->best_fp8].name, "fp8");
}

void mpprof_site_shadow_row(const mpprof_site *s, mpprof_shadow_row *ret) {
  bool bwd = s->phase == MPPROF_PHASE_BACKWARD;
  row_of(s->shadow, bwd, s->shadow ? mpprof_site_current_understated(s) : 0, ret);
  if (!s->shadow) return;
  int best = -1; /* e4m3 forward, e5m2 backward, as the layer's HYBRID recipes */
  for (int r = 0; r < MPPROF_FP8_RECIPES; r++) {
    mp_shadow_cand c = bwd ? fp8_recipes[r].bwd : fp8_recipes[r].fwd;
    const mpprof_shadow_cand *sc = &s->shadow->cand[c];
    if (sc->calls && (best < 0 || sc->worst.rel_l2 < s->shadow->cand[best].worst.rel_l2))
      best = (int)c;
  }
  if (best >= 0) ret->fp8 = cand_cell(s->shadow, (mp_shadow_cand)best);
}

/* --- report.json --- */

/* Exact, as report.json's other numbers (mpprof_json_double; cJSON's own
 * printing drops the last digit of some: 0.0476693116947736 for
 * 0.047669311694773592); null when not finite. layers.csv and ops.csv write
 * the same text. */
static cJSON *num_or_null(double v) {
  return mpprof_json_double(v);
}

static cJSON *metrics_json(const mpprof_shadow_cand *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, MP_RK_SHADOW_CAND.calls, (double)c->calls);
  cJSON_AddItemToObject(o, MP_RK_SHADOW_CAND.rel_l2, num_or_null(c->worst.rel_l2));
  cJSON_AddItemToObject(o, MP_K_SH_SQNR_DB, num_or_null(mp_shadow_sqnr_db(c->worst.rel_l2)));
  cJSON_AddItemToObject(o, MP_RK_SHADOW_CAND.max_rel, num_or_null(c->worst.max_rel));
  cJSON_AddItemToObject(o, MP_RK_SHADOW_CAND.flushed, num_or_null(c->worst.flushed));
  cJSON_AddNumberToObject(o, MP_RK_SHADOW_CAND.nonfinite, (double)c->worst.nonfinite);
  cJSON_AddBoolToObject(o, MP_K_SH_INPUTS_ALREADY_ROUNDED, c->inputs_rounded);
  if (c->n) {
    double *v = malloc(c->n * sizeof *v);
    if (v) {
      memcpy(v, c->samples, c->n * sizeof *v);
      cJSON_AddItemToObject(o, MP_K_SH_MEDIAN_REL_L2, num_or_null(mp_shadow_median(v, c->n)));
      free(v);
    }
  }
  return o;
}

cJSON *mpprof_shadow_json(const mpprof_shadow *s, const mpprof_layer *l) {
  if (!s) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, MP_RK_SHADOW.calls, (double)s->calls);
  cJSON *sk = cJSON_AddObjectToObject(o, MP_RK_SHADOW.skipped);
  for (int r = 0; sk && r < MPPROF_SH_SKIP_COUNT; r++)
    if (s->skipped[r]) cJSON_AddNumberToObject(sk, skip_names[r], (double)s->skipped[r]);
  cJSON *cs = cJSON_AddObjectToObject(o, MP_RK_SHADOW.candidates);
  for (int c = 0; cs && c < MP_SH_COUNT; c++)
    if (s->cand[c].calls)
      cJSON_AddItemToObject(cs, mp_shadow_cand_name((mp_shadow_cand)c), metrics_json(&s->cand[c]));
  if (l) {
    cJSON *rs = cJSON_AddObjectToObject(o, "fp8_recipes");
    for (int r = 0; rs && r < MPPROF_FP8_RECIPES; r++)
      if (l->fp8[r].calls) cJSON_AddItemToObject(rs, fp8_recipes[r].name, metrics_json(&l->fp8[r]));
    cJSON_AddItemToObject(o, "best_fp8",
                          l->best_fp8 >= 0 ? cJSON_CreateString(fp8_recipes[l->best_fp8].name)
                                           : cJSON_CreateNull());
  }
  return o;
}
