/* The per-op (per-site) facts that the ops table of report.html and OUT/ops.csv
 * show, each defined once here: the compute label with TF32 written out, the
 * site's GPU time and share, achieved TFLOP/s (only when times are real), the
 * transposes and FP8 scale modes (from the site's identity), and ops.csv
 * itself. RFC 4180 CSV like layers.csv. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/raw_format.h"
#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

bool mpprof_times_real(const mpprof_model *m) {
  if (!m->has_gpu_ns && !m->tc.kernel_data) return false;
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].device_name && !strncmp(m->procs[i].device_name, "simcuda", 7)) return false;
  return true;
}

uint64_t mpprof_site_gpu_ns(const mpprof_site *s, bool *ret_known) {
  if (ret_known) *ret_known = s->has_gpu_ns || s->n_kernels > 0;
  return s->has_gpu_ns ? s->gpu_ns : s->kernel_ns;
}

double mpprof_site_gpu_share_pct(const mpprof_model *m, const mpprof_site *s) {
  bool known;
  uint64_t ns = mpprof_site_gpu_ns(s, &known);
  uint64_t total = m->has_gpu_ns ? m->total_gpu_ns : m->tc.gemm_conv_kernel_ns;
  return known && total ? 100.0 * (double)ns / (double)total : -1;
}

double mpprof_site_tflops(const mpprof_model *m, const mpprof_site *s) {
  bool known;
  uint64_t ns = mpprof_site_gpu_ns(s, &known);
  if (!known || !ns || !s->flop_per_call || !mpprof_times_real(m)) return -1;
  return (double)s->flop_per_call * (double)s->calls / ((double)ns * 1e3);
}

bool mpprof_site_is_tf32(const mpprof_site *s) {
  if (s->elig.tf32) return true;
  for (size_t k = 0; k < s->n_kernels; k++)
    if (s->kernels[k].cls.a_dtype == MP_TF32) return true;
  return false;
}

/* Appends s to buf (n bytes, *used of them used) as snprintf(buf + *used,
 * n - *used, "%s", s) would: cut to what fits, NUL-terminated. Some 100k
 * rows of ops.csv are built of such pieces; printf's parse was most of it. */
static void cat(char *buf, size_t n, size_t *used, const char *s) {
  size_t len = strlen(s), room = n - *used - 1;
  if (len > room) len = room;
  memcpy(buf + *used, s, len);
  *used += len;
  buf[*used] = '\0';
}

static void cat_u64(char *buf, size_t n, size_t *used, uint64_t v) {
  char d[24];
  mpprof_u64_text(v, d);
  cat(buf, n, used, d);
}

bool mpprof_site_fp8_fast_accum(const mpprof_site *s) {
  if (!s->fast_accum) return false;
  for (int i = 0; i < s->n_types; i++)
    if ((!strcmp(s->types[i].role, "A") || !strcmp(s->types[i].role, "B")) &&
        (s->types[i].dtype == MP_FP8_E4M3 || s->types[i].dtype == MP_FP8_E5M2))
      return true;
  return false;
}

mpprof_understated mpprof_site_current_understated(const mpprof_site *s) {
  if (mpprof_site_fp8_fast_accum(s)) return MPPROF_UNDERSTATED_FAST_ACCUM;
  if (strncmp(s->api, "cudnn", 5) != 0) return MPPROF_UNDERSTATED_NONE;
  for (size_t k = 0; k < s->n_kernels; k++)
    if (s->kernels[k].cls.a_dtype == MP_TF32) return MPPROF_UNDERSTATED_TF32_KERNELS;
  return !s->n_kernels && s->elig.tf32 ? MPPROF_UNDERSTATED_TF32_POSSIBLE : MPPROF_UNDERSTATED_NONE;
}

mpprof_understated mpprof_layer_current_understated(const mpprof_model *m, const mpprof_layer *l) {
  mpprof_understated u = MPPROF_UNDERSTATED_NONE;
  for (size_t i = l->first_site; i < l->first_site + l->n_sites; i++) {
    if (!m->sites[i].shadow) continue;
    mpprof_understated v = mpprof_site_current_understated(&m->sites[i]);
    if (v && (!u || v < u)) u = v;
  }
  return u;
}

static const char *const understated[MPPROF_UNDERSTATED_COUNT][2] = {
    [MPPROF_UNDERSTATED_FAST_ACCUM] = {"fp8_fast_accumulation",
                                       "understated: FP8 fast accumulation (cuBLASLt "
                                       "FAST_ACCUM) in its calls, the measurement sums in fp32"},
    [MPPROF_UNDERSTATED_TF32_KERNELS] = {"tf32_kernels",
                                         "understated: its kernels ran TF32 (the cuDNN engine's "
                                         "choice, not known at the call), the measurement keeps "
                                         "the fp32 inputs"},
    [MPPROF_UNDERSTATED_TF32_POSSIBLE] = {"tf32_possible",
                                          "may be understated: cuDNN's default math lets its "
                                          "engine round fp32 inputs to TF32, which the "
                                          "measurement does not, and its kernels were not seen"},
};

const char *mpprof_understated_name(mpprof_understated u) {
  return u > MPPROF_UNDERSTATED_NONE && u < MPPROF_UNDERSTATED_COUNT ? understated[u][0] : NULL;
}

const char *mpprof_understated_text(mpprof_understated u) {
  return u > MPPROF_UNDERSTATED_NONE && u < MPPROF_UNDERSTATED_COUNT ? understated[u][1] : NULL;
}

void mpprof_site_compute_label(const mpprof_site *s, char *buf, size_t n) {
  const char *ct = s->compute_type ? s->compute_type : "?";
  const char *mm = s->math_mode;
  bool plain_mm = !mm || !strcmp(mm, "DEFAULT");
  if (mpprof_site_is_tf32(s)) {
    if (strstr(ct, "TF32"))
      snprintf(buf, n, "TF32 (compute %s)", ct);
    else if (mm && strstr(mm, "TF32"))
      snprintf(buf, n, "TF32 (compute %s, math mode %s)", ct, mm);
    else if (s->elig.tf32)
      snprintf(buf, n, "TF32 (compute %s, cuDNN default math)", ct);
    else
      snprintf(buf, n, "TF32 (compute %s; its kernels are TF32)", ct);
  } else if (plain_mm) {
    size_t used = 0;
    cat(buf, n, &used, ct);
  } else {
    snprintf(buf, n, "%s, math mode %s", ct, mm);
  }
  if (mpprof_site_fp8_fast_accum(s)) {
    size_t used = strlen(buf);
    cat(buf, n, &used, MPPROF_FAST_ACCUM_LABEL);
  }
}

void mpprof_site_extra_of(const mpprof_site *s, mpprof_site_extra *ret) {
  memset(ret, 0, sizeof *ret);
  if (s->transa) ret->transa[0] = s->transa;
  if (s->transb) ret->transb[0] = s->transb;
#define X(f, json, doc) json,
  static const char *const names[] = {MP_RAW_FP8_SCALES(X)};
#undef X
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (s->fp8_scales >> i & 1) {
      /* With the values read: "A=2", "A=0.5..2" over calls, "amax_D=4096" (its max). */
      const mpprof_fp8_value *v = &mpprof_site_fp8(s)->v[i];
      size_t used = strlen(ret->fp8_scales), left = sizeof ret->fp8_scales - used;
      if (!v->read)
        snprintf(ret->fp8_scales + used, left, "%s%s", used ? " " : "", names[i]);
      else if (!mpprof_fp8_row_is_amax((int)i) && v->min != v->max)
        snprintf(ret->fp8_scales + used, left, "%s%s=%.4g..%.4g", used ? " " : "", names[i], v->min,
                 v->max);
      else
        snprintf(ret->fp8_scales + used, left, "%s%s=%.4g", used ? " " : "", names[i], v->max);
    }
}

void mpprof_site_mnk(const mpprof_site *s, char *buf, size_t n) {
  if (s->shapes_merged)
    snprintf(buf, n, MPPROF_VARIOUS_SHAPES);
  else
    snprintf(buf, n, "m=%" PRIu64 " n=%" PRIu64 " k=%" PRIu64, s->m, s->n, s->k);
}

void mpprof_site_shape(const mpprof_site *s, char *buf, size_t n) {
  if (s->shapes_merged) {
    snprintf(buf, n, MPPROF_VARIOUS_SHAPES);
    return;
  }
  const int64_t *d = s->conv ? s->conv->dims : NULL;
  char groups[32] = "";
  if (d && s->conv->groups > 1) snprintf(groups, sizeof groups, " g=%" PRId64, s->conv->groups);
  char xd[24] = "", wd[24] = ""; /* 3-D: the depths first */
  if (d && s->conv->three) {
    snprintf(xd, sizeof xd, "%" PRId64 "x", s->conv->d);
    snprintf(wd, sizeof wd, "%" PRId64 "x", s->conv->t);
  }
  if (d)
    snprintf(buf, n,
             "conv n=%" PRId64 " c=%" PRId64 " %s%" PRId64 "x%" PRId64 " k=%" PRId64 " %s%" PRId64
             "x%" PRId64 "%s",
             d[0], d[1], xd, d[2], d[3], d[4], wd, d[5], d[6], groups);
  else {
    size_t used = 0;
    const uint64_t dims[] = {s->m, s->n, s->k, s->batch ? s->batch : 1};
    buf[0] = 0;
    for (int i = 0; i < 4; i++) {
      if (i) cat(buf, n, &used, "x");
      cat_u64(buf, n, &used, dims[i]);
    }
  }
}

void mpprof_site_dtypes(const mpprof_site *s, char *buf, size_t n) {
  size_t used = 0;
  buf[0] = 0;
  for (int t = 0; t < s->n_types; t++) {
    if (t) cat(buf, n, &used, " ");
    cat(buf, n, &used, s->types[t].role);
    cat(buf, n, &used, "=");
    cat(buf, n, &used, mp_dtype_name(s->types[t].dtype));
  }
}

/* ---- ops.csv ---- */

/* The columns, in order; docs/report.md describes each. */
static const char *const columns[] = {
    "site",
    "layer",
    "nvtx_path",
    "phase",
    "api",
    "op",
    "shape",
    "m",
    "n",
    "k",
    "batch",
    "transa",
    "transb",
    "dtypes",
    "compute",
    "tf32",
    "compute_type",
    "math_mode",
    "epilogue",
    "fp8_scales",
    "calls",
    "gpu_ns",
    "gpu_share_pct",
    "tflops",
    "kernels",
    "tc_used",
    "tc_eligible",
    "tc_eligible_with_tf32",
    "tc_reason",
    "tc_source",
    "scanned_calls",
    "kernel_symbols",
    MPPROF_CSV_SHADOW_COLUMNS,
};

/* A site's kernels, ';'-separated: as the page shows them (a C++ kernel's
 * mangled symbol demangled) or as CUPTI gave them (`shown` false); malloc'd,
 * NULL when out of memory. Appended at the end: strcat would rescan
 * (quadratic). */
static char *kernel_list(const mpprof_site *s, bool shown) {
  size_t len = 1;
  for (size_t k = 0; k < s->n_kernels; k++)
    len += strlen(s->kernels[k].name) + (shown ? MP_KERNEL_SHOWN_MAX : 0) + 1;
  char *list = malloc(len), *end = list;
  if (!list) return NULL;
  for (size_t k = 0; k < s->n_kernels; k++) {
    char dm[MP_KERNEL_SHOWN_MAX];
    const char *name = s->kernels[k].name;
    if (shown && !strncmp(name, "_Z", 2)) name = mp_kernel_demangle(name, dm, sizeof dm);
    if (k) *end++ = ';';
    size_t n = strlen(name);
    memcpy(end, name, n);
    end += n;
  }
  *end = '\0';
  return list;
}

static int write_rows(const mpprof_model *m, FILE *f) {
  size_t nc = sizeof columns / sizeof *columns;
  for (size_t i = 0; i < nc; i++)
    mpprof_csv_field(f, columns[i], i + 1 == nc);
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    mpprof_site_extra x;
    mpprof_site_extra_of(s, &x);
    char id[24], shape[160], mm[24], nn[24], kk[24], bb[24], dt[128], comp[160], calls[24], gpu[24],
        share[40], tfl[32];
    mpprof_u64_text(s->id, id);
    mpprof_site_shape(s, shape, sizeof shape);
    mpprof_u64_text(s->m, mm);
    mpprof_u64_text(s->n, nn);
    mpprof_u64_text(s->k, kk);
    mpprof_u64_text(s->batch ? s->batch : 1, bb);
    mpprof_site_dtypes(s, dt, sizeof dt);
    mpprof_site_compute_label(s, comp, sizeof comp);
    mpprof_u64_text(s->calls, calls);
    bool known;
    uint64_t ns = mpprof_site_gpu_ns(s, &known);
    if (known)
      mpprof_u64_text(ns, gpu);
    else
      gpu[0] = 0;
    double sh = mpprof_site_gpu_share_pct(m, s), tf = mpprof_site_tflops(m, s);
    if (sh >= 0) /* as report.json writes numbers: six digits would round 99.99995 to 100 */
      mpprof_double_text(sh, share);
    else
      share[0] = 0;
    if (tf >= 0)
      snprintf(tfl, sizeof tfl, "%.6g", tf);
    else
      tfl[0] = 0;
    char *kn = kernel_list(s, true), *ksym = kernel_list(s, false);
    if (!kn || !ksym) {
      free(kn);
      free(ksym);
      return -1;
    }
    mpprof_csv_field(f, id, false);
    mpprof_csv_field(f, s->layer_name, false);
    mpprof_csv_field(f, s->layer, false);
    mpprof_csv_field(f, mpprof_phase_name(s->phase), false);
    mpprof_csv_field(f, s->api, false);
    mpprof_csv_field(f, s->op, false);
    mpprof_csv_field(f, shape, false);
    bool dims = !s->conv && !s->shapes_merged;
    mpprof_csv_field(f, dims ? mm : "", false);
    mpprof_csv_field(f, dims ? nn : "", false);
    mpprof_csv_field(f, dims ? kk : "", false);
    mpprof_csv_field(f, dims ? bb : "", false);
    mpprof_csv_field(f, x.transa, false);
    mpprof_csv_field(f, x.transb, false);
    mpprof_csv_field(f, dt, false);
    mpprof_csv_field(f, comp, false);
    mpprof_csv_field(f, mpprof_site_is_tf32(s) ? "yes" : "no", false);
    mpprof_csv_field(f, s->compute_type ? s->compute_type : "", false);
    mpprof_csv_field(f, s->math_mode ? s->math_mode : "", false);
    mpprof_csv_field(f, s->epilogue ? s->epilogue : "", false);
    mpprof_csv_field(f, x.fp8_scales, false);
    mpprof_csv_field(f, calls, false);
    mpprof_csv_field(f, gpu, false);
    mpprof_csv_field(f, share, false);
    mpprof_csv_field(f, tfl, false);
    mpprof_csv_field(f, kn, false);
    free(kn);
    mpprof_csv_field(f, mpprof_csv_tri(s->tc_used), false);
    mpprof_csv_field(f, s->elig_known ? (s->elig.eligible ? "yes" : "no") : "", false);
    mpprof_csv_field(f, s->elig.eligible_with_tf32 ? "yes" : "no", false);
    mpprof_csv_field(f, s->elig.reason, false);
    mpprof_csv_field(f, mp_tc_source_name(s->tc_source), false);
    mpprof_u64_text(s->scanned_calls, calls);
    mpprof_csv_field(f, calls, false);
    mpprof_csv_field(f, ksym, false);
    free(ksym);
    mpprof_shadow_row sr; /* the page's Measured columns (--shadow), empty without */
    mpprof_site_shadow_row(s, &sr);
    mpprof_csv_shadow_fields(f, &sr);
  }
  return 0;
}

int mpprof_write_ops_csv(const mpprof_model *m, const char *path, mpprof_afile_set *set) {
  mpprof_afile a;
  if (mpprof_afile_open(&a, path, set)) return -1;
  if (write_rows(m, a.f)) {
    mpprof_afile_close(&a, false);
    errno = ENOMEM;
    return -1;
  }
  return mpprof_afile_close(&a, true);
}
