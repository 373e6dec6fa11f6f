/* mpprof_report_generate: read OUT/raw, merge, advise, and write every output
 * of the report (report.html and MPPROF_REPORT_OTHER_FILES), each to a
 * temporary file, all renamed once every one is written. Prints a short human summary when asked.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/safefile.h"
#include "report/report.h"
#include "report/report_internal.h"

/* The program: the argv of the root process (whose parent is not profiled);
 * of several roots (the workers of a launcher that used no CUDA, the images
 * of a program that exec'd itself), the one that started first, not the
 * first raw file's name (<host>-<pid>.2.json sorts before <host>-<pid>.json).
 * Kept in m->program_argv for report.json and the page. */
static char *program_of(mpprof_model *m) {
  const mpprof_process *root = NULL;
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    bool child = false;
    for (size_t j = 0; j < m->n_procs; j++)
      if (m->procs[j].pid == p->ppid && !strcmp(m->procs[j].host, p->host)) child = true;
    if (!child && p->argv && (!root || p->start_ns < root->start_ns)) root = p;
  }
  if (!root && m->n_procs && m->procs[0].argv) root = &m->procs[0];
  m->program_argv = root ? root->argv : NULL;
  char *line = root ? mpprof_argv_line(root->argv) : NULL;
  return line || (root && cJSON_IsArray(root->argv)) ? line : strdup("");
}

/* Text from outside (names, findings quoting them, paths) in a summary line:
 * every control character escaped, a newline too, so that a name cannot
 * start a line of its own (print_summary keeps only the summary's own line
 * ends). */
static void put_text(FILE *f, const char *s) {
  char *t = s ? mpprof_text_escape(s, strlen(s)) : NULL;
  if (t) fputs(t, f);
  free(t);
}

static void put_finding(FILE *f, const mpprof_finding *x) {
  fprintf(f, "  [%s] ", x->severity);
  put_text(f, x->message);
  fputc('\n', f);
}

static void write_summary(const mpprof_model *m, const char *out_dir, FILE *f) {
  bool skipped = mpprof_model_all_skipped(m);
  if (skipped || m->n_procs == 0) {
    fputs(skipped ? "mpprof: no usable raw profile file in " : "mpprof: no raw profile files in ",
          f);
    put_text(f, out_dir);
    fputs(skipped ? "/raw: every one was skipped\n" : "/raw: nothing was profiled\n", f);
  } else if (mpprof_capture_all_outside(m))
    fprintf(f,
            "mpprof: %zu process%s, no CUDA matrix op ran inside the capture range (%" PRId64
            " ran outside it)\n",
            m->n_procs, m->n_procs == 1 ? "" : "es", mpprof_capture_all_outside(m));
  else if (m->total_calls == 0) {
    fprintf(f, "mpprof: %zu process%s, no CUDA matrix ops (cuBLAS/cuBLASLt/cuDNN) were called\n",
            m->n_procs, m->n_procs == 1 ? "" : "es");
    /* ... through an entry point mpprof intercepts: say so when their kernels
     * ran, when matrix kernels of no hooked library ran, or when a process
     * ran without mpprof (a clean environment). */
    for (size_t i = 0; i < m->n_findings; i++)
      if (!strcmp(m->findings[i].kind, "library_not_intercepted") ||
          !strcmp(m->findings[i].kind, "process_without_mpprof") ||
          !strcmp(m->findings[i].kind, "matrix_kernels_not_hooked"))
        put_finding(f, &m->findings[i]);
  } else {
    fprintf(f, "mpprof: %zu process%s, %" PRIu64 " op call%s in %zu site%s, %zu layer%s",
            m->n_procs, m->n_procs == 1 ? "" : "es", m->total_calls, m->total_calls == 1 ? "" : "s",
            m->n_sites, m->n_sites == 1 ? "" : "s", m->n_layers, m->n_layers == 1 ? "" : "s");
    if (m->has_gpu_ns) fprintf(f, ", %.3f ms GPU", (double)m->total_gpu_ns / 1e6);
    if (m->total_scanned_calls < m->total_calls)
      fprintf(f, "; %" PRIu64 " of the calls scanned", m->total_scanned_calls);
    char past[256];
    mpprof_calls_past_cap_text(m, past, sizeof past);
    fputs(past, f);
    fputc('\n', f);
    /* Every layer in the tally: those without a verdict too (the count
     * above included them, the tally left them out). */
    size_t recs[MP_REC_COUNT] = {0}, no_verdict = 0;
    for (size_t i = 0; i < m->n_layers; i++)
      if (m->layers[i].adv.known)
        recs[m->layers[i].adv.rec]++;
      else
        no_verdict++;
    int first = 1;
    char marks[MPPROF_MARKS_MAX], edges[MP_LOSS_SCALE_EDGES_TEXT_MAX];
    for (int r = 0; r < MP_REC_COUNT; r++)
      if (recs[r]) {
        fprintf(f, "%s %s %zu%s", first ? "  layers:" : ",",
                mp_recommendation_name((mp_recommendation)r), recs[r],
                mpprof_tally_marks(m, (mp_recommendation)r, marks));
        first = 0;
      }
    if (no_verdict) fprintf(f, "%s no verdict %zu", first ? "  layers:" : ",", no_verdict);
    if (m->n_layers) fputc('\n', f);
    if (m->forward_only) fputs("  " MPPROF_FORWARD_ONLY_NOTE "\n", f);
    if (m->n_layers <= 12) /* small models: every layer's verdict */
      for (size_t i = 0; i < m->n_layers; i++) {
        const mpprof_layer *l = &m->layers[i];
        char *name = mpprof_text_escape(l->name, strlen(l->name));
        fprintf(f, "    %-32s %s",
                !name     ? ""
                : name[0] ? name
                          : MPPROF_NO_LAYER_LABEL,
                l->adv.known ? mp_recommendation_name(l->adv.rec) : "no verdict");
        free(name);
        fputs(mpprof_verdict_marks(m, l, marks), f);
        if (l->adv.known && l->adv.has_window && l->adv.rec == MP_REC_FP16_LOSS_SCALE)
          fprintf(f, " (its gradients fit loss scales 2^%d .. 2^%d%s)", l->adv.window_lo,
                  l->adv.window_hi,
                  mpprof_edges_text(m, l->adv.window_lo, l->adv.window_hi, l->adv.beyond_lo,
                                    l->adv.beyond_hi, false, edges));
        else if (!l->adv.known) {
          char why[MPPROF_NO_VERDICT_TEXT_MAX];
          fprintf(f, " (%s)", mpprof_no_verdict_text(m, l, why));
        }
        fputc('\n', f);
      }
    size_t outs = mpprof_outputs_only_procs(m);
    if (outs)
      fprintf(f,
              "  inputs not scanned in %zu of %zu process%s (--scan outputs): verdicts leave out "
              "weights and incoming activations\n",
              outs, m->n_procs, m->n_procs == 1 ? "" : "es");
    if (m->plan.known) {
      fputs("  plan: ", f);
      put_text(f, m->plan.headline);
      fputc('\n', f);
    } else if (m->n_layers) {
      fputs("  plan: " MPPROF_NO_PLAN_TEXT "\n", f);
    }
    if (m->plan_fp8.headline) {
      fputs("  fp8: ", f);
      put_text(f, m->plan_fp8.headline);
      fputc('\n', f);
    }
    const mpprof_applied_scale *g = &m->loss_scale;
    if (g->applicable && g->has_window)
      fprintf(f, "  loss scale: 2^%d (every fp16 layer's gradients fit 2^%d .. 2^%d%s%s)\n",
              g->recommended_log2, g->window_lo, g->window_hi,
              mpprof_edges_text(m, g->window_lo, g->window_hi, g->beyond_lo, g->beyond_hi, false,
                                edges),
              mpprof_loss_scale_needed_clause(g) ? mpprof_loss_scale_needed_clause(g)
                                                 : "; not needed");
    else if (g->applicable)
      fputs("  loss scale: no single scale fits every fp16 layer (see findings)\n", f);
    char sa[32], sb[32];
    if (g->declared)
      fprintf(f, "  applied loss scale: %s%s%s (from %s; " MPPROF_LOSS_SCALE_DECLARED_NOTE ")\n",
              mpprof_scale_str(g->min, sa), g->max != g->min ? " to " : "",
              g->max != g->min ? mpprof_scale_str(g->max, sb) : "",
              mpprof_loss_scale_source_text(g));
    if (mpprof_loss_scale_note(g)) {
      fputs("  ", f);
      put_text(f, mpprof_loss_scale_note(g));
      fputc('\n', f);
    }
    if (m->tc.kernel_data && m->tc.gemm_conv_kernel_ns)
      fprintf(f, "  Tensor Cores: %s%% of GEMM/conv GPU time%s\n",
              mpprof_pct_text(mpprof_pct(m->tc.tc_ns, m->tc.gemm_conv_kernel_ns)).s,
              m->tc.kernels_by_counters ? " (hardware counters decided some kernels)" : "");
    else if (!m->tc.kernel_data && m->total_calls) {
      /* said, not left out: why (the first process's) */
      const char *note = cJSON_GetStringValue(cJSON_GetArrayItem(m->tc.cupti_notes, 0));
      fputs("  Tensor Cores: unknown, no GPU kernel records", f);
      if (note) {
        fputs(" (", f);
        put_text(f, note);
        fputc(')', f);
      }
      fputc('\n', f);
    }
    /* The three with most impact, and any further high-severity one (up to 6
     * lines); ranks_missing has its own line below. */
    for (size_t i = 0, shown = 0; i < m->n_findings && shown < 6; i++)
      if (strcmp(m->findings[i].kind, "ranks_missing") &&
          (i < 3 || !strcmp(m->findings[i].severity, "high"))) {
        put_finding(f, &m->findings[i]);
        shown++;
      }
  }
  if (m->n_skipped) fprintf(f, "  %zu raw file(s) skipped (listed in the report)\n", m->n_skipped);
  /* Ranks of the world size the processes declared with no raw file here. */
  char *ranks = mpprof_missing_ranks(m, NULL, NULL);
  if (ranks) {
    fputs("  ", f);
    put_text(f, ranks);
    fputc('\n', f);
    free(ranks);
  }
  /* A process that finished but hit a limit (MPPROF_MAX_SITES: its further
   * ops are in no site, so in no verdict): said here, not only in the
   * findings past the top ones. Checkpoint-only files are warned about when
   * read. */
  size_t n_incomplete = 0, n_reasons = 0;
  const char *why = NULL;
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].final && m->procs[i].incomplete) {
      const cJSON *r;
      cJSON_ArrayForEach(r, m->procs[i].incomplete_reasons) {
        if (!cJSON_IsString(r)) continue;
        /* The site cap first: its ops are in no verdict (a timeline cap is not). */
        if (!why || (strncmp(why, "max_sites", 9) && !strncmp(r->valuestring, "max_sites", 9)))
          why = r->valuestring;
        n_reasons++;
      }
      n_incomplete++;
    }
  if (n_incomplete) {
    fprintf(f, "  incomplete: %zu process%s recorded only part of the run (", n_incomplete,
            n_incomplete == 1 ? "" : "es");
    put_text(f, why ? why : "see incomplete_reasons");
    fprintf(f, "%s); see report.json\n", why && (n_incomplete > 1 || n_reasons > 1) ? ", ..." : "");
  }
  mpprof_capture_sum cs;
  char capture[512];
  mpprof_capture_summary(m, &cs);
  mpprof_capture_sentence(&cs, capture, sizeof capture);
  if (capture[0]) {
    fputs("  ", f);
    put_text(f, capture);
    fputc('\n', f);
  }
  if (m->n_procs) {
    char dev[1024];
    bool sim;
    fputs(mpprof_devices_text(m, dev, sizeof dev, &sim) > 1 ? "  devices: " : "  device: ", f);
    put_text(f, dev);
    fprintf(f, "%s; mpprof %s\n", sim ? " (GPU times not meaningful)" : "", MPPROF_VERSION_STRING);
  }
  fputs("  report: ", f);
  put_text(f, out_dir);
  fputs("/report.html (also " MPPROF_REPORT_OTHER_FILES ")\n", f);
}

/* The summary goes to a terminal: written to memory first, then printed with
 * control characters escaped (layer names and findings quote the program's
 * NVTX names). */
static void print_summary(const mpprof_model *m, const char *out_dir, FILE *f) {
  if (!f) return;
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return;
  write_summary(m, out_dir, mem);
  if (fclose(mem) == 0 && text) mpprof_fput_term(f, text);
  free(text);
}

static int write_one(const mpprof_model *m, const char *dir, const char *name,
                     int (*fn)(const mpprof_model *, const char *, mpprof_afile_set *),
                     mpprof_afile_set *set, mpprof_error *ret_error) {
  char *path = mpprof_asprintf("%s/%s", dir, name);
  if (!path) {
    mpprof_error_set(ret_error, ENOMEM, "report: out of memory");
    return -1;
  }
  int rc = fn(m, path, set);
  if (rc)
    mpprof_error_set(ret_error, errno, "cannot write %s: %s; no report file was replaced", path,
                     strerror(errno));
  free(path);
  return rc;
}

/* The report's files replace the previous ones together: each is written to
 * its temporary, and they are renamed only once all were (a full disk at
 * report.html leaves the previous report.json, CSVs, plan and trace, which
 * agree with the previous page). */
static int write_all(const mpprof_model *m, const char *dir, mpprof_error *ret_error) {
  static const struct {
    const char *name;
    int (*fn)(const mpprof_model *, const char *, mpprof_afile_set *);
  } files[] = {
      {"report.json", mpprof_write_report_json}, {"layers.csv", mpprof_write_layers_csv},
      {"ops.csv", mpprof_write_ops_csv},         {"plan.json", mpprof_write_plan_json},
      {"trace.json", mpprof_write_trace_json},   {"report.html", mpprof_write_report_html},
  };
  /* The temporaries of a report killed before its renames (Ctrl-C: each as
   * large as its file) go; the CLI holds dir's lock, so none is in progress. */
  const char *names[sizeof files / sizeof *files];
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    names[i] = files[i].name;
  int dfd = mpp_sf_open_dir(AT_FDCWD, dir, MPP_SF_USER_PATH);
  if (dfd >= 0) {
    mpp_sf_remove_temps_of(dfd, names, sizeof names / sizeof *names);
    close(dfd);
  }
  mpprof_afile_set set;
  mpprof_afile_set_init(&set);
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    if (write_one(m, dir, files[i].name, files[i].fn, &set, ret_error)) {
      mpprof_afile_set_abort(&set);
      return -1;
    }
  }
  const char *failed;
  size_t done;
  if (mpprof_afile_set_commit(&set, &failed, &done) == 0) return 0;
  int e = errno;
  if (done == 0)
    mpprof_error_set(ret_error, e, "cannot replace %s/%s: %s; no report file was replaced", dir,
                     failed, strerror(e));
  else
    mpprof_error_set(ret_error, e,
                     "cannot replace %s/%s: %s; the %zu report files before it were replaced, "
                     "it and the rest were not",
                     dir, failed, strerror(e), done);
  return -1;
}

int mpprof_report_generate(const mpprof_report_options *opts) {
  if (!opts || !opts->out_dir) {
    if (opts) mpprof_error_set(opts->error, EINVAL, "report: no output directory");
    return -1;
  }
  mpprof_error *err = opts->error;
  mpprof_model m;
  mpprof_model_init(&m);
  m.raw_origin = opts->raw_origin;
  m.raw_origin_ctx = opts->raw_origin_ctx;
  m.exited_pid = opts->exited_pid;
  m.exit_status = opts->exit_status;
  m.killed_pid = opts->killed_pid;
  m.killed_signal = opts->killed_signal;
  int rc = mpprof_read_raw_dir(&m, opts->out_dir, opts->warnings, err);
  if (rc == 0 && opts->need_raw_files && m.n_procs == 0) {
    if (m.n_skipped)
      mpprof_error_set(err, EINVAL,
                       "%s/raw: every raw file was skipped (see above): nothing to report, "
                       "nothing written",
                       opts->out_dir);
    else
      mpprof_error_set(err, ENOENT, "%s/raw: no raw files (*.json): nothing to report",
                       opts->out_dir);
    rc = -1;
  } else if (rc == 0) {
    m.program_without_raw_file = mpprof_find_program_without_raw_file(&m);
    if (m.program_without_raw_file && opts->warnings) {
      char *w = mpprof_program_without_raw_file(m.program_without_raw_file);
      if (w) fprintf(opts->warnings, "mpprof: %s\n", w);
      free(w);
    }
    rc = mpprof_model_finish(&m);
    /* The limit asked for here, else the one the run recorded (the
     * strictest when merged runs differ), else the default. */
    m.shadow_max_rel = opts->shadow_max_rel;
    for (size_t i = 0; !(opts->shadow_max_rel > 0) && i < m.n_procs; i++) {
      double r = m.procs[i].shadow_max_rel;
      if (r > 0 && (!(m.shadow_max_rel > 0) || r < m.shadow_max_rel)) m.shadow_max_rel = r;
    }
    if (rc == 0 && opts->n_still_running) {
      m.still_running = malloc(opts->n_still_running * sizeof *m.still_running);
      if (!m.still_running)
        rc = -1;
      else {
        memcpy(m.still_running, opts->still_running,
               opts->n_still_running * sizeof *m.still_running);
        m.n_still_running = opts->n_still_running;
      }
    }
    if (rc == 0) rc = mpprof_advise_layers(&m);
    if (rc == 0) rc = mpprof_shadow_layers(&m);
    if (rc == 0) rc = mpprof_global_loss_scale(&m); /* of the verdicts the check left */
    if (rc == 0) rc = mpprof_tensor_cores(&m);
    if (rc == 0) {
      m.program = opts->program ? strdup(opts->program) : program_of(&m);
      if (!m.program) rc = -1;
    }
    if (rc == 0) rc = mpprof_build_findings(&m);
    if (rc == 0) rc = mpprof_build_plan(&m);
    if (rc) mpprof_error_set(err, ENOMEM, "report: out of memory");
  }
  if (rc == 0) rc = write_all(&m, opts->out_dir, err);
  if (rc == 0) print_summary(&m, opts->out_dir, opts->summary);
  mpprof_model_free(&m);
  return rc ? -1 : 0;
}
