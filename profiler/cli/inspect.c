/* `mpprof inspect`: the numerics of tensors saved to files, no GPU needed.
 *
 * For each file (each tensor of a safetensors, torch.save or .npz file): map it
 * (report/tensorio), scan it (analysis/scan.h), advise
 * (analysis/advice.h) and print either a summary a person can act on or, with
 * --json, one mpprof.tensor/1 object per line (JSON Lines). A bad file costs
 * one line on stderr; the others are still processed and the exit status is 1
 * at the end, as it is when stdout could not be written. Usage errors exit 2. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/advice.h"
#include "analysis/formats.h"
#include "analysis/stats.h"
#include "commands.h"
#include "report/tensorio/npy.h"
#include "report/tensorio/safetensors.h"
#include "report/tensorio/stats_json.h"
#include "report/tensorio/zipfile.h"

typedef struct inspect_opts {
  bool json;
  mpprof_tensor_spec spec;
  mp_advice_params params;
} inspect_opts;

static void usage(FILE *out) {
  fprintf(out,
          "usage: mpprof inspect [options] FILE...\n"
          "Numerics of saved tensors: special values, range, exponent span, what a cast to\n"
          "fp16/bf16/fp8 does to them, and the precision (and loss scale) they fit.\n"
          "\n"
          "FILE is a NumPy .npy file (versions 1-3, f8/f4/f2, either byte order, C or\n"
          "Fortran order), a safetensors file, a torch.save checkpoint or an np.savez\n"
          "archive (each float tensor as FILE:NAME), or headerless little-endian data\n"
          "with --shape.\n"
          "\n"
          "  --json                 one mpprof.tensor/1 JSON object per tensor, one per line\n"
          "  --dtype D              element type: fp64 fp32 fp16 bf16 fp8_e4m3 fp8_e5m2\n"
          "                         (not for files of many tensors: they name their dtypes);\n"
          "                         for .npy, reads integer storage of the same width\n"
          "                         (u2 for bf16, u1 for fp8) as the raw bits of D\n"
          "  --shape S              headerless raw file of this shape (e.g. 1024x768);\n"
          "                         needs --dtype\n"
          "  --underflow-max F      fraction allowed to flush to zero in fp16/bf16 (default %g)\n"
          "  --fp8-underflow-max F  same for fp8 with per-tensor scaling (default %g)\n"
          "  --prefer-fp8           recommend an fp8 format when one fits\n"
          "  -h, --help             this text\n"
          "\n"
          "Exit status: 0 when every file was read, 1 when some file could not be (or the\n"
          "output could not be written), 2 on a usage error.\n",
          MP_ADVICE_DEFAULT_UNDERFLOW_MAX, MP_ADVICE_DEFAULT_FP8_UNDERFLOW_MAX);
}

static int parse_fraction(const char *opt, const char *text, double *ret) {
  char *end;
  errno = 0;
  double f = strtod(text, &end);
  if (end == text || *end || errno || !(f >= 0 && f <= 1)) {
    fprintf(stderr, "mpprof: inspect: %s '%s': expected a fraction between 0 and 1\n", opt, text);
    return -1;
  }
  *ret = f;
  return 0;
}

/* 0 and *ret_first_file, or the exit status of a usage error / --help (as -code). */
static int parse_args(int argc, char **argv, inspect_opts *o, int *ret_first_file) {
  enum { OPT_DTYPE = 256, OPT_SHAPE, OPT_UFLOW, OPT_FP8_UFLOW, OPT_PREFER_FP8 };
  static const struct option longopts[] = {
      {"json", no_argument, NULL, 'j'},
      {"dtype", required_argument, NULL, OPT_DTYPE},
      {"shape", required_argument, NULL, OPT_SHAPE},
      {"underflow-max", required_argument, NULL, OPT_UFLOW},
      {"fp8-underflow-max", required_argument, NULL, OPT_FP8_UFLOW},
      {"prefer-fp8", no_argument, NULL, OPT_PREFER_FP8},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *shape = NULL;
  char err[256];
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":hj", longopts, NULL)) != -1) {
    switch (c) {
    case 'j':
      o->json = true;
      break;
    case OPT_DTYPE:
      o->spec.dtype = mp_dtype_from_name(optarg);
      if (!mp_dtype_scannable(o->spec.dtype)) {
        fprintf(stderr,
                "mpprof: inspect: --dtype '%s': expected fp64, fp32, fp16, bf16, fp8_e4m3 or "
                "fp8_e5m2\n",
                optarg);
        return -2;
      }
      break;
    case OPT_SHAPE:
      shape = optarg;
      break;
    case OPT_UFLOW:
      if (parse_fraction("--underflow-max", optarg, &o->params.underflow_max) < 0) return -2;
      break;
    case OPT_FP8_UFLOW:
      if (parse_fraction("--fp8-underflow-max", optarg, &o->params.fp8_underflow_max) < 0)
        return -2;
      break;
    case OPT_PREFER_FP8:
      o->params.prefer_fp8 = true;
      break;
    case 'h':
      usage(stdout);
      return -0x100; /* exit 0 */
    case ':':
      fprintf(stderr, "mpprof: inspect: option '%s' needs a value (see 'mpprof help inspect')\n",
              argv[optind - 1]);
      return -2;
    default:
      fprintf(stderr, "mpprof: inspect: unknown option '%s' (see 'mpprof help inspect')\n",
              argv[optind - 1]);
      return -2;
    }
  }
  if (shape) {
    if (o->spec.dtype == MP_DTYPE_INVALID) {
      fputs("mpprof: inspect: --shape needs --dtype (raw data has no header)\n", stderr);
      return -2;
    }
    if (mpprof_tensor_spec_shape(&o->spec, shape, err, sizeof err) < 0) {
      fprintf(stderr, "mpprof: inspect: --%s\n", err);
      return -2;
    }
  }
  if (optind >= argc) {
    fputs("mpprof: inspect: no FILE given\n", stderr);
    usage(stderr);
    return -2;
  }
  *ret_first_file = optind;
  return 0;
}

/* ---- the human summary ---- */

/* A fraction f of the values as a percentage, by the rule of every output
 * (mpprof_pct_text: "100%" only when exact, ">99.999%", "<0.001%"); none at
 * all is a bare "0" in these tables. */
static const char *frac(double f, char *buf, size_t len) {
  if (!isfinite(f) || f <= 0)
    snprintf(buf, len, "0");
  else
    snprintf(buf, len, "%s%%", mpprof_pct_text(100 * f).s);
  return buf;
}

/* n of `of` values, as frac() writes it. */
static const char *pct(uint64_t n, uint64_t of, char *buf, size_t len) {
  return frac(n == 0 || of == 0 ? 0 : n >= of ? 1 : (double)n / (double)of, buf, len);
}

static const char *num(double d, char *buf, size_t len) {
  if (isfinite(d))
    snprintf(buf, len, "%.6g", d);
  else
    snprintf(buf, len, "none");
  return buf;
}

static void print_range(const mp_stats *s) {
  char a[32], b[32], c[32], d[32];
  printf("  range       min %s  max %s  |x| from %s to %s\n", num(s->min, a, sizeof a),
         num(s->max, b, sizeof b), num(s->min_abs_nonzero, c, sizeof c),
         num(s->absmax, d, sizeof d));
  int lo = INT32_MAX, hi = INT32_MIN, held = 0;
  for (int e = s->hist_lo; e <= s->hist_hi; e++)
    if (mp_stats_hist_bin(s, e)) {
      if (e < lo) lo = e;
      hi = e;
      held++;
    }
  /* The span of the finite non-zero values, and how many of its binades hold
   * any: a span with gaps says so rather than reading as full. */
  if (lo == hi)
    printf("  binades     2^%d (1 binade holds the finite non-zero values)\n", lo);
  else if (lo < hi && held == hi - lo + 1)
    printf("  binades     2^%d .. 2^%d (%d binades, each holding finite non-zero values)\n", lo, hi,
           held);
  else if (lo < hi)
    printf("  binades     2^%d .. 2^%d (%d binades, %d of them holding finite non-zero values)\n",
           lo, hi, hi - lo + 1, held);
  else
    printf("  binades     none (no finite non-zero value)\n");
}

static void print_casts(const mp_stats *s) {
  const uint64_t base = mp_stats_nonzero_finite(s);
  char o[16], u[16], sub[16];
  printf("  cast to     %-10s %-12s %-10s (of %" PRIu64 " finite non-zero value%s)\n", "overflow",
         "flush-to-0", "subnormal", base, base == 1 ? "" : "s");
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    printf("    %-9s %-10s %-12s %s\n", mp_target_name((mp_target)t),
           pct(s->casts[t][MP_CAST_OVERFLOW], base, o, sizeof o),
           pct(s->casts[t][MP_CAST_UNDERFLOW], base, u, sizeof u),
           pct(s->casts[t][MP_CAST_SUBNORMAL], base, sub, sizeof sub));
}

static void print_verdict(const mp_advice *a, const mp_advice_params *p) {
  char ov[16], uf[16];
  const char *est = a->window_estimate ? " (estimate: a boundary binade decides an end)" : "";
  switch (a->fp16) {
  case MP_FP16_SAFE:
    printf("  fp16        safe as is");
    break;
  case MP_FP16_LOSS_SCALE:
    printf("  fp16        needs a loss scale: as is, %s overflow and %s flush to zero",
           frac(a->fp16_overflow_fraction, ov, sizeof ov),
           frac(a->fp16_underflow_fraction, uf, sizeof uf));
    break;
  default:
    printf("  fp16        unsafe at every power-of-two scale in 2^%d .. 2^%d: as is, %s overflow "
           "and %s flush to zero",
           p->scale_log2_min, p->scale_log2_max, frac(a->fp16_overflow_fraction, ov, sizeof ov),
           frac(a->fp16_underflow_fraction, uf, sizeof uf));
    break;
  }
  putchar('\n');
  if (a->has_window) {
    char edges[MP_LOSS_SCALE_EDGES_TEXT_MAX]; /* where the search range cut the window */
    printf("  loss scale  2^%d .. 2^%d fits fp16%s%s\n", a->window_lo, a->window_hi, est,
           mp_loss_scale_edges_text(a->window_lo, a->window_hi, a->beyond_lo, a->beyond_hi,
                                    p->scale_log2_min, p->scale_log2_max, "2^", "", edges));
  }
  printf("  bf16        %s\n", a->bf16_ok ? "fits" : "does not fit (overflow or too much flushed)");
  const mp_fp8_advice *f8[2] = {&a->fp8_e4m3, &a->fp8_e5m2};
  const char *names[2] = {"fp8_e4m3", "fp8_e5m2"};
  for (int i = 0; i < 2; i++)
    printf("  %-10s  %s at per-tensor scale 2^%d, %s flush to zero%s\n", names[i],
           f8[i]->fits ? "fits" : "does not fit", f8[i]->scale_log2,
           frac(f8[i]->underflow_fraction, uf, sizeof uf), f8[i]->estimate ? " (estimate)" : "");
}

/* Where fp16 fits, what it keeps: from MP_ADVICE_FP16_SUBNORMAL_NOTE of the
 * values in fp16's subnormal range at 2^k on, the share, and the smallest
 * scale of the window at which fewer are. True when it printed a note. */
static bool print_fp16_precision(const mp_stats *s, const mp_advice *a, int k) {
  double share = mp_fp16_subnormal_share(s, k);
  if (share < MP_ADVICE_FP16_SUBNORMAL_NOTE) return false;
  char sh[16];
  const mp_format *f16 = mp_format_of(MP_FP16);
  printf("  precision   %s of the values are fp16 subnormals at scale 2^%d (|x| < 2^%d: fewer "
         "than %d significant bits); ",
         frac(share, sh, sizeof sh), k, f16->emin, (int)f16->man_bits + 1);
  for (int j = k + 1; a->has_window && j <= a->window_hi; j++)
    if (j >= a->window_lo && mp_fp16_subnormal_share(s, j) < MP_ADVICE_FP16_SUBNORMAL_NOTE) {
      printf("at 2^%d, inside the fp16 window, %s are\n", j,
             frac(mp_fp16_subnormal_share(s, j), sh, sizeof sh));
      return true;
    }
  puts("no scale that fits fp16 keeps them normal, bf16 does");
  return true;
}

static void print_todo(const mp_stats *s, const mp_advice *a) {
  printf("  recommended %s\n", mp_advice_recommended_name(a));
  bool subnormal =
      a->recommended == MP_REC_FP16 ? print_fp16_precision(s, a, 0)
      : a->recommended == MP_REC_FP16_LOSS_SCALE
          ? print_fp16_precision(
                s, a, mp_loss_scale_pick(a->window_lo, a->window_hi, a->beyond_lo, a->beyond_hi))
          : false;
  printf("  what to do  ");
  if (a->nonfinite_input) printf("the tensor already holds NaN/Inf: find where they come from; ");
  switch (a->recommended) {
  case MP_REC_FP16:
    puts(subnormal ? "fp16 holds the values without overflow or flush, at reduced precision (see "
                     "above): measure the error it costs, or use bf16."
                   : "cast to fp16 as is; no loss scale needed.");
    break;
  case MP_REC_FP16_LOSS_SCALE:
    /* A file says nothing of a tensor's role, and only gradients take a loss
     * scale: a weight or activation that needs one (scale 1 is outside the
     * window) does not fit fp16 and needs what bf16_ok says. */
    printf("if a gradient: fp16 with a loss scale in [2^%d, 2^%d], e.g. 2^%d (a dynamic scaler "
           "must stay in that window)%s; a weight or activation takes no loss scale: %s.\n",
           a->window_lo, a->window_hi,
           mp_loss_scale_pick(a->window_lo, a->window_hi, a->beyond_lo, a->beyond_hi),
           subnormal ? ", see the precision above" : "",
           a->bf16_ok ? "use bf16" : "keep fp32 (bf16 does not hold it either)");
    break;
  case MP_REC_BF16:
    puts("use bf16: no power-of-two scale fits fp16, bf16's range holds the values.");
    break;
  case MP_REC_FP32:
    if (a->fp32_overflow) {
      /* digits enough to tell them apart (2^128 - 2^103 reads 3.40282e+38 too) */
      int d = 6;
      char x[40], max[40];
      do
        snprintf(x, sizeof x, "%.*g", d, s->absmax),
            snprintf(max, sizeof max, "%.*g", d, (double)FLT_MAX);
      while (!strcmp(x, max) && ++d <= 17);
      printf("keep fp64: |x| reaches %s, beyond fp32's range (largest %s) too.\n", x, max);
    } else if (a->fp32_flush) {
      char sh[16];
      printf("keep fp64: %s of the values are at most 2^%d (%g), which fp32 rounds to zero "
             "too.\n",
             frac(a->fp32_flush_fraction, sh, sizeof sh), mp_format_of(MP_FP32)->emin_sub - 1,
             mp_format_of(MP_FP32)->flush_at);
    } else if (a->nonfinite_input)
      puts("keep fp32 until then: the verdicts above judge only the finite values.");
    else
      puts("keep fp32: the values do not fit bf16 either.");
    break;
  case MP_REC_FP8_E4M3:
    printf("fp8_e4m3 with a per-tensor scale of 2^%d (amax scaling).\n", a->fp8_e4m3.scale_log2);
    break;
  case MP_REC_FP8_E5M2:
    printf("fp8_e5m2 with a per-tensor scale of 2^%d (amax scaling).\n", a->fp8_e5m2.scale_log2);
    break;
  default:
    putchar('\n');
  }
}

static void print_summary(const char *path, const mpprof_tensor *t, const mp_stats *s,
                          const mp_advice *a, const mp_advice_params *p) {
  char shape[MPPROF_SHAPE_TEXT_MAX], z[16], n[16];
  mpprof_shape_format(t->shape, t->ndim, shape, sizeof shape);
  printf("%s: %s %s%s, %" PRIu64 " %s\n", path, mp_dtype_name(t->dtype), shape,
         t->fortran_order && t->ndim > 1 ? " (Fortran order)" : "", s->count,
         s->count == 1 ? "value" : "values");
  printf("  special     zeros %" PRIu64 " (%s)  NaN %" PRIu64 "  +Inf %" PRIu64 "  -Inf %" PRIu64
         "  negative %" PRIu64 " (%s)\n",
         s->zeros, pct(s->zeros, s->count, z, sizeof z), s->nans, s->pos_infs, s->neg_infs,
         s->negatives, pct(s->negatives, s->count, n, sizeof n));
  print_range(s);
  print_casts(s);
  if (!a->judged) {
    /* All zeros (or NaN/Inf only): no value says anything about a format. */
    printf("  verdict     nothing to judge: no finite non-zero value\n");
    printf("  recommended none\n");
    if (a->nonfinite_input)
      printf("  what to do  the tensor holds only NaN/Inf besides zeros: find where they come "
             "from.\n");
    else
      printf("  what to do  an all-zero tensor (a zero-initialised bias, a dead or flushed "
             "gradient, an unused buffer): check where it comes from.\n");
    return;
  }
  print_verdict(a, p);
  print_todo(s, a);
}

/* ---- one file ---- */

/* Scan one tensor and print its summary or JSON line. label: what the
 * summary calls it; file and tensor (NULL for a file of one): the JSON's
 * names. printed: summaries printed so far (separated by a blank line). */
/* What a file of many tensors adds up to: its last line. */
typedef struct rollup {
  size_t read, skipped, failed, nothing; /* nothing: no finite non-zero value */
  struct {
    const char *name;
    size_t n;
  } rec[MP_REC_COUNT + 1]; /* + fp64 */
  size_t nrec;
  size_t overflow; /* tensors with values beyond fp16's range */
  char first[3][96];
} rollup;

static void rollup_add(rollup *r, const char *name, const mp_advice *a) {
  r->read++;
  if (!a->judged) {
    r->nothing++;
    return;
  }
  const char *rec = mp_advice_recommended_name(a);
  size_t i = 0;
  while (i < r->nrec && strcmp(r->rec[i].name, rec))
    i++;
  if (i == r->nrec && r->nrec < sizeof r->rec / sizeof r->rec[0]) r->rec[r->nrec++].name = rec;
  if (i < r->nrec) r->rec[i].n++;
  if (a->fp16_overflow_fraction > 0 && r->overflow++ < 3)
    snprintf(r->first[r->overflow - 1], sizeof r->first[0], "%s", name);
}

static void rollup_print(const char *path, const rollup *r, size_t n) {
  printf("%s: %zu tensor%s: %zu read", path, n, n == 1 ? "" : "s", r->read);
  for (size_t i = 0; i < r->nrec; i++)
    printf("%s%s %zu", i ? ", " : " (recommended: ", r->rec[i].name, r->rec[i].n);
  if (r->nrec) putchar(')');
  if (r->nothing) printf(", %zu with no finite non-zero value", r->nothing);
  if (r->skipped) printf(", %zu skipped (not a floating-point format)", r->skipped);
  if (r->failed) printf(", %zu could not be read", r->failed);
  if (r->overflow) {
    printf("; %zu overflow fp16:", r->overflow);
    for (size_t i = 0; i < r->overflow && i < 3; i++)
      printf("%s %s", i ? "," : "", r->first[i]);
    if (r->overflow > 3) fputs(", ...", stdout);
  }
  putchar('\n');
}

/* A reader's "FILE: problem" (err) as the one stderr line of a bad file:
 * the path and names in it escaped (mpprof_text_escape), as in all text. */
static void report_err(const char *err) {
  char *text = mpprof_text_escape(err, strlen(err));
  fprintf(stderr, "mpprof: inspect: %s\n", text ? text : "out of memory");
  free(text);
}

/* A failed scan of the tensor called label: one stderr line. */
static void scan_failed(const char *label, int rc) {
  if (rc == -ESTALE)
    fprintf(stderr, "mpprof: inspect: %s: %s\n", label, MPPROF_TENSOR_CHANGED_MSG);
  else
    fprintf(stderr, "mpprof: inspect: %s: scan failed: %s\n", label, strerror(-rc));
}

/* Advise on t's stats s and print its summary or JSON line. label: what the
 * summary calls it, shown: its name there (both escaped); file and tensor:
 * the JSON's (as they are). */
static int report_tensor(const char *label, const char *shown, const char *file, const char *tensor,
                         const mpprof_tensor *t, const mp_stats *s, const inspect_opts *o,
                         int *printed, rollup *r) {
  mp_advice a;
  mp_advise(s, &o->params, &a);
  if (r) rollup_add(r, shown, &a);
  int rc = 0;
  if (o->json) {
    cJSON *j = mpprof_tensor_to_json(file, tensor, t->shape, t->ndim, s, &a);
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    if (text) {
      puts(text);
    } else {
      fprintf(stderr, "mpprof: inspect: %s: out of memory\n", label);
      rc = -1;
    }
    free(text);
    cJSON_Delete(j);
  } else {
    if ((*printed)++) putchar('\n');
    print_summary(label, t, s, &a, &o->params);
  }
  return rc;
}

/* Which reader a file's first bytes (and, for safetensors, its name) call
 * for: 's' safetensors, 'z' a zip (torch.save, .npz), 'l' torch.save's
 * legacy format (named, not read), 0 anything else (a .npy; a file that
 * cannot be read says so when it is opened as one). In this order: a .npy
 * magic, a zip, the legacy magic, then mpprof_safetensors_sniff. */
static int file_kind(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  unsigned char head[32];
  int kind = 0;
  ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? pread(fd, head, sizeof head, 0) : -1;
  if (got > 0) {
    size_t n = (size_t)got;
    kind = mpprof_npy_sniff(head, n)                 ? 0
           : mpprof_zip_sniff(head, n)               ? 'z'
           : mpprof_zip_torch_legacy_sniff(head, n)  ? 'l'
           : mpprof_safetensors_sniff(head, n, path) ? 's'
                                                     : 0;
  }
  close(fd);
  return kind;
}

/* How many times its size a file of many tensors may have scanned:
 * identical views are scanned once and a repeated dimension (stride 0, an
 * expanded tensor) is read once, so only views overlapping in one storage
 * come near it; beyond it the file is refused before anything is printed.
 * README, `mpprof inspect`. */
#define MPPROF_INSPECT_SCAN_PER_FILE_BYTE 64

/* The stats of a view with identical views later in the file are kept for
 * them in one of at most this many slots (beyond, they are scanned again). */
#define MAX_KEPT 256

/* What reading a file of many does per entry, decided before anything is
 * printed: scan its view (keeping the stats in slot keep[i] >= 0 for an
 * identical view later), or take them from slot from[i] >= 0. */
typedef struct scan_plan {
  int32_t *keep, *from;
  int32_t slots;  /* slots used */
  uint64_t bytes; /* scanned in all (UINT64_MAX when beyond) */
  uint64_t scans;
} scan_plan;

static void plan_free(scan_plan *p) {
  free(p->keep);
  free(p->from);
}

static int plan_scans(const mpprof_tensor_set *f, scan_plan *p) {
  memset(p, 0, sizeof *p);
  const size_t n = f->n ? f->n : 1;
  size_t *first = malloc(n * sizeof *first), *last = malloc(n * sizeof *last);
  int32_t *slot_of = malloc(n * sizeof *slot_of), free_slots[MAX_KEPT];
  p->keep = malloc(n * sizeof *p->keep);
  p->from = malloc(n * sizeof *p->from);
  int rc = first && last && slot_of && p->keep && p->from ? mpprof_tensor_set_same_views(f, first)
                                                          : -ENOMEM;
  int32_t n_free = 0;
  for (int32_t k = MAX_KEPT; k-- > 0;)
    free_slots[n_free++] = k;
  for (size_t i = 0; rc == 0 && i < f->n; i++) {
    last[first[i]] = i;
    slot_of[i] = -1;
  }
  for (size_t i = 0; rc == 0 && i < f->n; i++) {
    const mpprof_tensor *t = &f->entries[i].t;
    const size_t g = first[i];
    p->keep[i] = p->from[i] = -1;
    if (!mp_dtype_scannable(t->dtype)) continue;
    if (slot_of[g] >= 0) {
      p->from[i] = slot_of[g];
      if (last[g] == i) free_slots[n_free++] = slot_of[g];
      continue;
    }
    uint64_t b = mpprof_tensor_scan_bytes(t);
    p->bytes = b > UINT64_MAX - p->bytes ? UINT64_MAX : p->bytes + b;
    p->scans++;
    if (last[g] != i && n_free) {
      p->keep[i] = slot_of[g] = free_slots[--n_free];
      if (slot_of[g] >= p->slots) p->slots = slot_of[g] + 1;
    }
  }
  free(first);
  free(last);
  free(slot_of);
  if (rc) plan_free(p);
  return rc;
}

/* MPPROF_LOG=2 or more: what reading a file of many cost, for tests and the
 * curious. */
static void log_scans(const char *path, const mpprof_tensor_set *f, const scan_plan *p) {
  const char *v = getenv("MPPROF_LOG");
  if (v && atoi(v) >= 2)
    fprintf(stderr,
            "mpprof: inspect: %s: %zu tensors, %" PRIu64 " scans of %" PRIu64
            " bytes in all (file: %zu bytes)\n",
            path, f->n, p->scans, p->bytes, mpprof_tensor_set_file_bytes(f));
}

/* The plan's bytes within MPPROF_INSPECT_SCAN_PER_FILE_BYTE times the file's:
 * 0, or -1 after one stderr line. */
static int check_scan_bound(const char *path, const mpprof_tensor_set *f, const scan_plan *p) {
  const uint64_t size = mpprof_tensor_set_file_bytes(f);
  if (size > UINT64_MAX / MPPROF_INSPECT_SCAN_PER_FILE_BYTE ||
      p->bytes <= size * MPPROF_INSPECT_SCAN_PER_FILE_BYTE)
    return 0;
  fprintf(stderr,
          "mpprof: inspect: %s: its tensors overlap too much: reading them scans %" PRIu64
          " bytes, more than %d times the file's %" PRIu64 " (views overlapping in one storage)\n",
          path, p->bytes, MPPROF_INSPECT_SCAN_PER_FILE_BYTE, size);
  return -1;
}

/* Every tensor of a file of many (safetensors, torch.save, .npz), in the
 * file's order, each as "FILE:NAME" ("FILE" for a file that saved one bare
 * tensor); tensors of other dtypes (integers, ...) get one line in the
 * summary and none in --json. shown: the path as text (escaped). */
static int inspect_set(const char *path, const char *shown, int kind, const inspect_opts *o,
                       int *printed, char *err, size_t errlen) {
  const char *what = kind == 's' ? "a safetensors file" : "a zip archive (torch.save or .npz)";
  if (o->spec.dtype != MP_DTYPE_INVALID) {
    fprintf(stderr,
            "mpprof: inspect: %s: %s names its tensors' dtypes (--dtype is for .npy and raw "
            "files)\n",
            shown, what);
    return -1;
  }
  mpprof_tensor_set f;
  int rc = kind == 's' ? mpprof_safetensors_open(path, &f, err, errlen)
                       : mpprof_zip_open(path, &f, err, errlen);
  if (rc < 0) {
    report_err(err);
    return -1;
  }
  scan_plan plan;
  if (plan_scans(&f, &plan) < 0) {
    fprintf(stderr, "mpprof: inspect: %s: out of memory\n", shown);
    mpprof_tensor_set_close(&f);
    return -1;
  }
  log_scans(shown, &f, &plan);
  mp_stats *slots = NULL, *scratch = NULL; /* ~17 KiB each: off the stack */
  int slot_rc[MAX_KEPT];
  bool refused = check_scan_bound(shown, &f, &plan) < 0;
  if (!refused && (!(scratch = malloc(sizeof *scratch)) ||
                   (plan.slots && !(slots = malloc((size_t)plan.slots * sizeof *slots))))) {
    fprintf(stderr, "mpprof: inspect: %s: out of memory\n", shown);
    refused = true;
  }
  rollup sum = {0};
  for (size_t i = 0; !refused && i < f.n; i++) {
    const mpprof_named_tensor *e = &f.entries[i];
    char *name = mpprof_text_escape(e->name, strlen(e->name)), *label = NULL;
    if (!name || asprintf(&label, name[0] ? "%s:%s" : "%s", shown, name) < 0) {
      free(name);
      fprintf(stderr, "mpprof: inspect: %s: out of memory\n", shown);
      rc = -1;
      break;
    }
    if (e->t.dtype == MP_DTYPE_INVALID) {
      sum.skipped++;
      if (!o->json) {
        char shape[MPPROF_SHAPE_TEXT_MAX];
        mpprof_shape_format(e->t.shape, e->t.ndim, shape, sizeof shape);
        if ((*printed)++) putchar('\n');
        printf("%s: %s %s: not a floating-point format mpprof reads, skipped\n", label,
               e->dtype_name, shape);
      }
    } else {
      const int32_t from = plan.from[i], keep = plan.keep[i];
      mp_stats *s = from >= 0 ? &slots[from] : keep >= 0 ? &slots[keep] : scratch;
      int trc = from >= 0 ? slot_rc[from] : mpprof_tensor_scan(&e->t, s);
      if (keep >= 0) slot_rc[keep] = trc;
      if (trc < 0)
        scan_failed(label, trc);
      else
        trc = report_tensor(label, name, path, e->name, &e->t, s, o, printed, &sum);
      if (trc < 0) {
        sum.failed++;
        rc = -1;
      }
    }
    free(label);
    free(name);
    if (fflush(stdout) != 0) break; /* the caller reports the failed write */
  }
  free(scratch);
  free(slots);
  plan_free(&plan);
  if (refused) {
    rc = -1;
  } else if (!f.n && !o->json) {
    if ((*printed)++) putchar('\n');
    printf("%s: %s with no tensors\n", shown, what);
  } else if (f.n > 1 && !o->json) {
    putchar('\n');
    rollup_print(shown, &sum, f.n);
  }
  mpprof_tensor_set_close(&f);
  return rc;
}

/* Room for a reader's problem after the path in its "PATH: problem" (the
 * buffer is the path's length plus this: a fixed 512 bytes let a long path
 * push the problem, and the path's end, out of the line). */
#define MPPROF_INSPECT_PROBLEM_MAX (MPPROF_SHAPE_TEXT_MAX + 512) /* it may name a shape */

/* printed: summaries printed so far (they are separated by a blank line). */
static int inspect_file(const char *path, const inspect_opts *o, int *printed) {
  char *shown = mpprof_text_escape(path, strlen(path)); /* the path in text */
  const size_t errlen = strlen(path) + MPPROF_INSPECT_PROBLEM_MAX;
  char *err = malloc(errlen);
  if (!shown || !err) {
    fputs("mpprof: inspect: out of memory\n", stderr);
    free(shown);
    free(err);
    return -1;
  }
  int kind = o->spec.raw ? 0 : file_kind(path), rc;
  if (kind == 'l') {
    fprintf(stderr,
            "mpprof: inspect: %s: torch.save's legacy format (_use_new_zipfile_serialization=False "
            "or PyTorch before 1.6), which mpprof does not read: save it again with "
            "torch.save(obj, path) to inspect it\n",
            shown);
    rc = -1;
  } else if (kind) {
    rc = inspect_set(path, shown, kind, o, printed, err, errlen);
  } else {
    mpprof_tensor t;
    if (mpprof_tensor_open(path, &o->spec, &t, err, errlen) < 0) {
      report_err(err);
      rc = -1;
    } else {
      mp_stats *s = malloc(sizeof *s); /* ~17 KiB of histogram: keep it off the stack */
      rc = s ? mpprof_tensor_scan(&t, s) : -ENOMEM;
      if (rc < 0)
        scan_failed(shown, rc);
      else
        rc = report_tensor(shown, shown, path, NULL, &t, s, o, printed, NULL);
      free(s);
      mpprof_tensor_close(&t);
    }
  }
  free(err);
  free(shown);
  return rc;
}

int mpprof_cmd_inspect(int argc, char **argv) {
  inspect_opts o = {0};
  mpprof_tensor_spec_init(&o.spec);
  mp_advice_params_default(&o.params);
  int first;
  int rc = parse_args(argc, argv, &o, &first);
  if (rc == -0x100) return 0;
  if (rc < 0) return -rc;
  int failed = 0, printed = 0, out_errno = 0;
  for (int i = first; i < argc; i++) {
    if (inspect_file(argv[i], &o, &printed) < 0) failed++;
    /* Each file's output before the next file's stderr line; a failed write
     * (a full disk, a closed pipe) is kept to fail the command. */
    if (fflush(stdout) != 0 && !out_errno) out_errno = errno ? errno : EIO;
  }
  return mpprof_check_stdout("inspect", out_errno) || failed ? 1 : 0;
}
