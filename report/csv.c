/* OUT/layers.csv: one row per layer, the columns of the HTML table. RFC 4180:
 * CRLF line ends, a field with a comma, quote, CR or LF is quoted, and quotes
 * inside are doubled. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

/* A field a spreadsheet would run as a formula: one that starts with '=',
 * '+', '@', a tab or a CR, or with '-' and is not a decimal number ("-3",
 * "-1.5e-07" are ours; "-2+3+cmd|' /C calc'!A0" is a formula, and so are
 * "-inf", "-nan(x)" and "-0x1p3", which strtod reads as numbers and a
 * spreadsheet as names). Layer names, NVTX paths and kernel names are the
 * profiled program's text. */
static bool formula_like(const char *s) {
  if (s[0] && strchr("=+@\t\r", s[0])) return true;
  if (s[0] != '-') return false;
  if (s[1 + strspn(s + 1, "0123456789.eE+-")]) return true;
  char *end;
  (void)strtod(s, &end);
  return end == s || *end;
}

/* One CSV field (RFC 4180 quoting), then "," or the CRLF that ends the row.
 * A formula-like field is written with a leading "'" (the usual defence
 * against CSV injection: a spreadsheet shows the text, runs nothing).
 * Unlocked stdio: a report file is written by one thread (at 100k sites the
 * lock of each put was most of ops.csv's time). */
void mpprof_csv_field(FILE *f, const char *s, bool last) {
  size_t n = strcspn(s, ",\"\r\n");
  bool formula = formula_like(s);
  if (s[n]) {
    putc_unlocked('"', f);
    if (formula) putc_unlocked('\'', f);
    for (; *s; s++) {
      if (*s == '"') putc_unlocked('"', f);
      putc_unlocked(*s, f);
    }
    putc_unlocked('"', f);
  } else {
    if (formula) putc_unlocked('\'', f);
    fwrite_unlocked(s, 1, n, f);
  }
  if (last)
    fwrite_unlocked("\r\n", 1, 2, f);
  else
    putc_unlocked(',', f);
}

/* yes / no / "" (unknown) for a tri-state flag. */
const char *mpprof_csv_tri(int v) {
  return v < 0 ? "" : v ? "yes" : "no";
}

/* A measured error as report.json writes it (mpprof_double_text), "inf"
 * where report.json has null for a measured, infinite one; "" unmeasured. */
static const char *rel_text(const mpprof_shadow_cell *c, char buf[40]) {
  if (!c->c) return "";
  if (isinf(c->c->worst.rel_l2)) return "inf";
  buf[mpprof_double_text(c->c->worst.rel_l2, buf)] = '\0';
  return buf;
}

/* yes/no of a measured cell's flag, "" where it was not measured. */
static const char *flag(const mpprof_shadow_cell *c, bool v) {
  return c->c ? (v ? "yes" : "no") : "";
}

void mpprof_csv_shadow_fields(FILE *f, const mpprof_shadow_row *r) {
  char buf[40];
  mpprof_csv_field(f, rel_text(&r->now, buf), false);
  mpprof_csv_field(f, flag(&r->now, r->understated), false);
  mpprof_csv_field(f, rel_text(&r->fp16, buf), false);
  mpprof_csv_field(f, flag(&r->fp16, r->fp16_loss_scaled), false);
  mpprof_csv_field(f, flag(&r->fp16, r->fp16.rounded), false);
  mpprof_csv_field(f, rel_text(&r->bf16, buf), false);
  mpprof_csv_field(f, flag(&r->bf16, r->bf16.rounded), false);
  mpprof_csv_field(f, r->fp8.c ? r->fp8.name : "", false);
  mpprof_csv_field(f, rel_text(&r->fp8, buf), false);
  mpprof_csv_field(f, flag(&r->fp8, r->fp8.rounded), true);
}

static const char *const columns[] = {
    "layer",
    "phase",
    "sites",
    "calls",
    "gpu_ns",
    "dtypes",
    "recommended",
    "loss_scale_log2_lo",
    "loss_scale_log2_hi",
    "loss_scale_true_log2_lo",
    "loss_scale_true_log2_hi",
    "fp16_overflow_pct",
    "fp16_underflow_pct",
    "bf16_overflow_pct",
    "bf16_underflow_pct",
    "fp16_overflow_tensor",
    "fp16_underflow_tensor",
    "fp8_e4m3_fits",
    "fp8_e5m2_fits",
    "tc_eligible",
    "tc_eligible_with_tf32",
    "tc_used",
    "tc_source",
    "fp16_overflow_at_applied_scale_pct",
    "fp16_underflow_at_applied_scale_pct",
    "fp16_overflow_at_applied_scale_tensor",
    "fp16_underflow_at_applied_scale_tensor",
    "scanned_calls",
    "has_gradients",
    "flushed_before_seen",
    "nonfinite_pct",
    "nonfinite_tensor",
    "bf16_overflow_tensor",
    "bf16_underflow_tensor",
    "fp16_overflow_estimate",
    "fp16_underflow_estimate",
    "bf16_overflow_estimate",
    "bf16_underflow_estimate",
    "fp16_overflow_at_applied_scale_estimate",
    "fp16_underflow_at_applied_scale_estimate",
    MPPROF_CSV_SHADOW_COLUMNS,
};

/* A percentage as report.json writes it (mpprof_double_text), "" when not finite. */
static void pct_text(double pct, char buf[40]) {
  buf[mpprof_double_text(pct, buf)] = '\0';
}

static int write_rows(const mpprof_model *m, FILE *f) {
  size_t nc = sizeof columns / sizeof *columns;
  for (size_t i = 0; i < nc; i++)
    mpprof_csv_field(f, columns[i], i + 1 == nc);
  for (size_t i = 0; i < m->n_layers; i++) {
    const mpprof_layer *l = &m->layers[i];
    const mpprof_layer_advice *a = &l->adv;
    char *dt = mpprof_layer_dtypes(m, l);
    if (!dt) return -1;
    char num[15][40];
    int nph = 0, ph = 0;
    for (int p = 0; p < MPPROF_PHASE_COUNT; p++)
      if (l->phase_mask & (1u << p)) nph++, ph = p;
    snprintf(num[0], 32, "%zu", l->n_sites);
    snprintf(num[1], 32, "%" PRIu64, l->calls);
    if (l->has_gpu_ns)
      snprintf(num[2], 32, "%" PRIu64, l->gpu_ns);
    else
      num[2][0] = 0;
    /* the window as searched, then its true edges (report.json advice
     * loss_scale_log2, loss_scale_true_log2) */
    if (a->has_window) {
      snprintf(num[3], 32, "%d", a->window_lo);
      snprintf(num[4], 32, "%d", a->window_hi);
      int t[2];
      mp_loss_scale_true_window(a->window_lo, a->window_hi, a->beyond_lo, a->beyond_hi, t);
      snprintf(num[13], 32, "%d", t[0]);
      snprintf(num[14], 32, "%d", t[1]);
    } else {
      num[3][0] = num[4][0] = num[13][0] = num[14][0] = 0;
    }
    /* shares as report.json writes them: six digits would round 99.99995 to 100 */
    const mpprof_share *sh[4] = {&l->fp16_overflow, &l->fp16_underflow, &l->bf16_overflow,
                                 &l->bf16_underflow};
    for (int k = 0; k < 4; k++) /* empty, as report.json's null: no tensor, no share */
      if (sh[k]->tensor)
        pct_text(sh[k]->pct, num[5 + k]);
      else
        num[5 + k][0] = 0;
    mpprof_csv_field(f, l->name, false);
    mpprof_csv_field(f, mpprof_phase_name(nph == 1 ? (mpprof_phase)ph : MPPROF_PHASE_MIXED), false);
    mpprof_csv_field(f, num[0], false);
    mpprof_csv_field(f, num[1], false);
    mpprof_csv_field(f, num[2], false);
    mpprof_csv_field(f, dt, false);
    mpprof_csv_field(f, a->known ? mp_recommendation_name(a->rec) : "", false);
    for (int k = 3; k <= 4; k++)
      mpprof_csv_field(f, num[k], false);
    for (int k = 13; k <= 14; k++)
      mpprof_csv_field(f, num[k], false);
    for (int k = 5; k <= 8; k++)
      mpprof_csv_field(f, num[k], false);
    mpprof_csv_field(f, l->fp16_overflow.tensor ? l->fp16_overflow.tensor : "", false);
    mpprof_csv_field(f, l->fp16_underflow.tensor ? l->fp16_underflow.tensor : "", false);
    mpprof_csv_field(f, mpprof_csv_tri(a->fp8_e4m3_fits), false);
    mpprof_csv_field(f, mpprof_csv_tri(a->fp8_e5m2_fits), false);
    mpprof_csv_field(f, mpprof_csv_tri(l->tc_eligible), false);
    mpprof_csv_field(f, mpprof_csv_tri(l->tc_eligible_with_tf32), false);
    mpprof_csv_field(f, mpprof_csv_tri(l->tc_used), false);
    mpprof_csv_field(f, mp_tc_source_name(l->tc_source), false);
    /* the worst gradient as recorded, at the loss scale the run applied
     * (report.json shares.*_at_applied_scale); empty without one */
    const mpprof_share *at[2] = {&l->applied_fp16_overflow, &l->applied_fp16_underflow};
    for (int k = 0; k < 2; k++) {
      if (at[k]->tensor)
        pct_text(at[k]->pct, num[9 + k]);
      else
        num[9 + k][0] = 0;
      mpprof_csv_field(f, num[9 + k], false);
    }
    for (int k = 0; k < 2; k++)
      mpprof_csv_field(f, at[k]->tensor ? at[k]->tensor : "", false);
    snprintf(num[11], 32, "%" PRIu64, l->scanned_calls);
    mpprof_csv_field(f, num[11], false);
    /* what the verdict did not see (report.json's advice keys of the same names) */
    mpprof_csv_field(f, a->known ? mpprof_csv_tri(a->has_gradients) : "", false);
    mpprof_csv_field(f, a->known ? mpprof_csv_tri(mpprof_layer_flushed_unseen(l)) : "", false);
    /* NaN/Inf of the worst tensor, over all its values (report.json shares.nonfinite) */
    if (l->nonfinite.tensor)
      pct_text(l->nonfinite.pct, num[12]);
    else
      num[12][0] = 0;
    mpprof_csv_field(f, num[12], false);
    mpprof_csv_field(f, l->nonfinite.tensor ? l->nonfinite.tensor : "", false);
    /* the bf16 shares' tensors, as the page names them in their cells */
    for (int k = 2; k < 4; k++)
      mpprof_csv_field(f, sh[k]->tensor ? sh[k]->tensor : "", false);
    /* yes: the share is an estimate (report.json shares.*.estimate, the
     * page's ~); empty without the share */
    const mpprof_share *est[6] = {sh[0], sh[1], sh[2], sh[3], at[0], at[1]};
    for (int k = 0; k < 6; k++)
      mpprof_csv_field(f, est[k]->tensor ? mpprof_csv_tri(est[k]->estimate) : "", false);
    /* the page's Measured columns (--shadow), empty without */
    mpprof_shadow_row sr;
    mpprof_layer_shadow_row(m, l, &sr);
    mpprof_csv_shadow_fields(f, &sr);
    free(dt);
  }
  return 0;
}

int mpprof_write_layers_csv(const mpprof_model *m, const char *path, mpprof_afile_set *set) {
  mpprof_afile a;
  if (mpprof_afile_open(&a, path, set)) return -1;
  if (write_rows(m, a.f)) {
    mpprof_afile_close(&a, false);
    errno = ENOMEM;
    return -1;
  }
  return mpprof_afile_close(&a, true);
}
