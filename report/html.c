/* OUT/report.html: one self-contained page read top to bottom: summary,
 * Tensor Cores, findings, the per-layer table (sorts and filters in the page,
 * small inline script), per-layer exponent-histogram charts (PNG as
 * data:image/png), processes and skipped files.
 *
 * Nothing is loaded from anywhere: no external script, style, font or image,
 * and a Content-Security-Policy that forbids it. Every string that comes from
 * the profiled program or the raw files (NVTX names, kernel names, argv, file
 * names, reasons) goes through html() before it reaches the page. Large runs
 * are capped (table rows, charts) with a note; layers.csv has every row. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

#define MAX_TABLE_ROWS 5000
#define MAX_CHARTS 200

static void html(FILE *f, const char *s) {
  mpprof_html(f, s);
}

/* A percentage as every output shows it (mpprof_pct_text), without the "%". */
static void pct(FILE *f, double p) {
  html(f, mpprof_pct_text(p).s); /* "<0.001" is escaped */
}

static void base64(FILE *f, const unsigned char *p, size_t n) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
                 (i + 2 < n ? p[i + 2] : 0);
    fputc(t[v >> 18 & 63], f);
    fputc(t[v >> 12 & 63], f);
    fputc(i + 1 < n ? t[v >> 6 & 63] : '=', f);
    fputc(i + 2 < n ? t[v & 63] : '=', f);
  }
}

static const char *tri(int v) {
  return v < 0 ? "?" : v ? "yes" : "no";
}

static const char *phase_of(const mpprof_layer *l) {
  int n = 0, last = 0;
  for (int p = 0; p < MPPROF_PHASE_COUNT; p++)
    if (l->phase_mask & (1u << p)) n++, last = p;
  return mpprof_phase_name(n == 1 ? (mpprof_phase)last : MPPROF_PHASE_MIXED);
}

static const char *rec_name(const mpprof_layer *l) {
  return l->adv.known ? mp_recommendation_name(l->adv.rec) : "unknown";
}

static const char css[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1500px;color:#222;"
    "padding:0 16px}h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid "
    "#ddd}h3{font-size:15px;margin:20px 0 4px}table{border-collapse:collapse;font-size:13px}"
    "th,td{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}"
    "th{background:#f4f4f4;cursor:pointer;user-select:none}td.n{text-align:right;"
    "font-variant-numeric:tabular-nums}.sev{display:inline-block;min-width:56px;font-weight:600}"
    ".high{color:#b00}.medium{color:#b60}.low{color:#555}.info{color:#357}.rec{font-weight:600}"
    ".fp16{color:#282}.fp16_loss_scale{color:#662}.bf16{color:#246}.fp32{color:#a22}"
    ".sw{display:inline-block;width:12px;height:10px;margin:0 4px 0 12px;vertical-align:middle}"
    "pre{background:#f8f8f8;padding:6px;overflow:auto;font-size:12px}code{font-size:12px}"
    ".big{font-size:17px;font-weight:600}img{max-width:100%;border:1px solid #eee}"
    "li{margin:4px 0}.muted{color:#777}.scroll{overflow-x:auto;max-width:100%}"
    "tr:target{background:#fff3b0}li,p{overflow-wrap:anywhere}li code,p "
    "code{word-break:break-all}#ops-table td{white-space:nowrap}#ops-table td.wrap{"
    "white-space:normal;min-width:28em}.chart{display:grid;grid-template-columns:auto 1fr;"
    "align-items:center;max-width:100%}.ytitle{writing-mode:vertical-rl;transform:rotate(180deg)"
    ";font-size:12px;color:#444;text-align:center}.xtitle{font-size:12px;color:#444;"
    "text-align:center}td.name,h3{overflow-wrap:anywhere}td.name{min-width:12em}"
    "#ops-table td.name{white-space:normal}";

static const char early_js[] =
    "window.addEventListener('error',function(e){document.documentElement.setAttribute("
    "'data-js-error',String(e.message));});";

/* Every <table class="sortable">: a header click sorts (numbers by data-v),
 * the search box named by data-q filters on column data-fcol (-1: the whole
 * row), the select named by data-sel keeps rows whose data-sel equals it, and
 * data-shown names the "rows shown" counter. #selftest (used by the browser
 * test) sorts both ways and filters each table, and reports on <body>. */
static const char table_js[] =
    "(function(){var res='ok';function setup(t){var tb=t.tBodies[0],rows=Array.prototype.slice."
    "call(tb.rows),ths=t.tHead.rows[0].cells,dir={},fc=parseInt(t.getAttribute('data-fcol')||"
    "'0',10),q=document.getElementById(t.getAttribute('data-q')),sel=document.getElementById("
    "t.getAttribute('data-sel')),shown=document.getElementById(t.getAttribute('data-shown'));"
    "function key(r,i){var c=r.cells[i],v=c.getAttribute('data-v');return v!==null?parseFloat(v)"
    ":c.textContent.toLowerCase();}function text(r){return(fc<0?r.textContent:r.cells[fc]."
    "textContent).toLowerCase();}function sortBy(i){dir[i]=!dir[i];var d=dir[i]?1:-1;rows.sort("
    "function(a,b){var x=key(a,i),y=key(b,i);return(x<y?-1:x>y?1:0)*d;});rows.forEach(function"
    "(r){tb.appendChild(r);});for(var j=0;j<ths.length;j++)ths[j].setAttribute('aria-sort',j"
    "===i?(d>0?'ascending':'descending'):'none');}for(var i=0;i<ths.length;i++)(function(i){"
    "ths[i].addEventListener('click',function(){sortBy(i);});})(i);function filter(){var s=q?q."
    "value.toLowerCase():'',r=sel?sel.value:'',n=0;rows.forEach(function(row){var ok=(!s||text("
    "row).indexOf(s)>=0)&&(!r||row.getAttribute('data-sel')===r);row.style.display=ok?'':"
    "'none';if(ok)n++;});if(shown)shown.textContent=String(n);}if(q)q.addEventListener('input',"
    "filter);if(sel)sel.addEventListener('change',filter);filter();"
    "if(location.hash==='#selftest'&&rows.length){try{var col=parseInt(t.getAttribute("
    "'data-numcol')||'2',10),i,v;sortBy(col);v=Array.prototype.map.call(tb.rows,function(r){"
    "return key(r,col);});for(i=1;i<v.length;i++)if(v[i-1]>v[i])res=t.id+': ascending sort "
    "wrong';sortBy(col);v=Array.prototype.map.call(tb.rows,function(r){return key(r,col);});"
    "for(i=1;i<v.length;i++)if(v[i-1]<v[i])res=t.id+': descending sort wrong';if(q){var name="
    "text(rows[0]).slice(0,40);q.value=name;filter();if(!(parseInt(shown.textContent,10)>=1))"
    "res=t.id+': filter shows nothing';rows.forEach(function(r){if(r.style.display!=='none'&&"
    "text(r).indexOf(name)<0)res=t.id+': filter wrong';});q.value='';}if(sel){sel.value=rows[0]"
    ".getAttribute('data-sel');filter();rows.forEach(function(r){if(r.style.display!=='none'&&r"
    ".getAttribute('data-sel')!==sel.value)res=t.id+': select filter wrong';});sel.value='';}"
    "filter();}catch(e){res='exception '+e.message;}}}var ts=document.querySelectorAll("
    "'table.sortable');for(var i=0;i<ts.length;i++)setup(ts[i]);if(location.hash==="
    "'#selftest'){var as=document.querySelectorAll('a[href^=\"#\"]');for(i=0;i<as.length;i++"
    ")if(!document.getElementById(as[i].getAttribute('href').slice(1)))res='link to nothing: '"
    "+as[i].getAttribute('href');if(document.documentElement.scrollWidth>window.innerWidth+1)"
    "res='the page is wider than the window ('+document.documentElement.scrollWidth+' > '+"
    "window.innerWidth+')';document.body.setAttribute('data-selftest',res);}document.body."
    "setAttribute("
    "'data-js','ok');})();";

/* The plan first: one configuration, its PyTorch code, plan.json. */
static void plan_section(const mpprof_model *m, FILE *f) {
  if (!m->plan.known && m->n_layers) { /* say why there is none */
    fputs("<section id=\"plan\"><h2>Plan</h2>\n<p class=\"big\">" MPPROF_NO_PLAN_TEXT
          ".</p></section>\n",
          f);
    return;
  }
  if (!m->plan.known) return;
  fputs("<section id=\"plan\"><h2>Plan</h2>\n<p class=\"big\">", f);
  html(f, m->plan.headline);
  fputs("</p>\n<p>Chosen from the layer verdicts below: a layer runs in the autocast dtype when "
        "it fits it (bf16: no overflow and flush within the allowed fraction; fp16: verdict "
        "fp16, or fp16 with a loss scale inside the global window); the others are kept in "
        "bf16 or fp32. The plan that keeps the fewest layers in fp32 wins, then the one that "
        "keeps the fewest out; on a tie, bf16 (no scaler to tune).</p>\n",
        f);
  if (m->plan_alt.known) {
    fputs("<p class=\"muted\">Alternative: ", f);
    html(f, m->plan_alt.headline);
    fputs("</p>\n", f);
  }
  if (m->plan_fp8.headline) { /* autocast has no fp8: a list beside the plan */
    fputs("<p class=\"muted\">FP8 (e.g. Transformer Engine, not autocast): ", f);
    html(f, m->plan_fp8.headline);
    fputs("</p>\n", f);
  }
  char *code = NULL;
  size_t len = 0;
  FILE *mf = open_memstream(&code, &len);
  if (mf) {
    mpprof_plan_snippet(m, &m->plan, mf);
    fclose(mf);
    fputs("<details open><summary>PyTorch</summary><pre>", f);
    html(f, code);
    fputs("</pre></details>\n", f);
  }
  free(code);
  fputs("<p><code>plan.json</code> has the same plan for scripts: layer &rarr; dtype, the loss "
        "scale, and the fp8 candidates.</p></section>\n",
        f);
}

/* Device(s), mpprof's version, when the run started (UTC). */
static void provenance(const mpprof_model *m, FILE *f) {
  fputs("<p class=\"muted\">", f);
  char dev[1024];
  bool sim;
  fputs(mpprof_devices_text(m, dev, sizeof dev, &sim) > 1 ? "<b>Devices:</b> " : "<b>Device:</b> ",
        f);
  html(f, dev);
  if (sim) fputs(" (" MPPROF_SIM_DEVICE_NOTE ")", f);
  fputs(" &middot; <b>mpprof</b> " MPPROF_VERSION_STRING, f);
  mpprof_capture_sum cs;
  char capture[512];
  mpprof_capture_summary(m, &cs);
  mpprof_capture_sentence(&cs, capture, sizeof capture);
  if (capture[0]) {
    fputs(" &middot; <b>", f);
    fputs("Captured:</b> ", f);
    html(f, capture);
  }
  int64_t start = 0;
  for (size_t i = 0; i < m->n_procs; i++)
    if (m->procs[i].start_ns > 0 && (!start || m->procs[i].start_ns < start))
      start = m->procs[i].start_ns;
  if (start > 946684800LL * 1000000000LL) { /* a wall-clock time (after 2000) */
    time_t t = (time_t)(start / 1000000000);
    struct tm tm;
    char date[40];
    if (gmtime_r(&t, &tm) && strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm))
      fprintf(f, " &middot; <b>run started</b> %s", date);
  }
  fputs("</p>\n", f);
}

/* An argument as a shell would need it to read it back as one word: as is
 * when it holds only such characters, else in single quotes; control
 * characters escaped (mpprof_text_escape). */
static void shell_word(FILE *f, const char *a) {
  static const char plain[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                              "_./:=,+@%-";
  char *t = mpprof_text_escape(a, strlen(a));
  if (!t) return;
  if (t[0] && t[strspn(t, plain)] == '\0') {
    html(f, t);
  } else {
    fputc('\'', f);
    for (char *p = t, *q; *p; p = q + 1) {
      q = strchr(p, '\'');
      if (!q) {
        html(f, p);
        break;
      }
      *q = '\0';
      html(f, p);
      fputs("'\\''", f);
    }
    fputc('\'', f);
  }
  free(t);
}

static void summary(const mpprof_model *m, FILE *f) {
  fputs("<section id=\"summary\"><h2>Summary</h2>\n", f);
  fputs("<p><b>Program:</b> <code>", f);
  int words = 0;
  const cJSON *a;
  cJSON_ArrayForEach(a, m->program_argv) if (cJSON_IsString(a)) {
    if (words++) fputc(' ', f);
    shell_word(f, a->valuestring);
  }
  if (!words) html(f, m->program && m->program[0] ? m->program : "(unknown)");
  fputs("</code></p>\n", f);
  provenance(m, f);
  if (m->n_procs == 0) {
    fputs("<p class=\"big\">No raw profile files were read: nothing was profiled.</p>\n", f);
  } else if (mpprof_capture_all_outside(m)) {
    fprintf(f,
            "<p class=\"big\">No CUDA matrix call ran inside the capture range (%" PRId64
            " ran outside it): there is nothing to advise on.</p>\n",
            mpprof_capture_all_outside(m));
  } else if (m->total_calls == 0) {
    fprintf(f,
            "<p class=\"big\">The profiled program made no CUDA matrix calls (cuBLAS, cuBLASLt, "
            "cuDNN): there is nothing to advise on.</p><p>%zu process%s profiled.</p>\n",
            m->n_procs, m->n_procs == 1 ? "" : "es");
  } else {
    fprintf(f, "<p>%zu process%s, %" PRIu64 " calls in %zu sites, %zu layers", m->n_procs,
            m->n_procs == 1 ? "" : "es", m->total_calls, m->n_sites, m->n_layers);
    if (m->has_gpu_ns) fprintf(f, ", %.3f ms GPU time", (double)m->total_gpu_ns / 1e6);
    if (m->total_scanned_calls < m->total_calls)
      fprintf(f,
              "; %" PRIu64 " of the calls scanned (every share and verdict is of their "
              "values)",
              m->total_scanned_calls);
    char past[256];
    mpprof_calls_past_cap_text(m, past, sizeof past);
    html(f, past);
    fputs(".</p>\n<p class=\"big\">", f);
    size_t recs[MP_REC_COUNT] = {0}, unknown = 0;
    for (size_t i = 0; i < m->n_layers; i++) {
      if (m->layers[i].adv.known)
        recs[m->layers[i].adv.rec]++;
      else
        unknown++;
    }
    static const char *const words[MP_REC_COUNT] = {
        "fp16 as is", "fp16 with a loss scale", "bf16", "fp32", "fp8_e4m3", "fp8_e5m2"};
    bool first = true;
    char marks[MPPROF_MARKS_MAX];
    for (int r = 0; r < MP_REC_COUNT; r++)
      if (recs[r]) {
        fprintf(f, "%s%zu layer%s: %s", first ? "" : "; ", recs[r], recs[r] == 1 ? "" : "s",
                words[r]);
        html(f, mpprof_tally_marks(m, (mp_recommendation)r, marks));
        first = false;
      }
    /* Layers without a verdict, by why (the terminal summary's words): at
     * most a handful of distinct reasons. */
    char why[8][MPPROF_NO_VERDICT_TEXT_MAX];
    size_t n_why = 0, why_n[8] = {0};
    for (size_t i = 0; unknown && i < m->n_layers; i++) {
      if (m->layers[i].adv.known) continue;
      char buf[MPPROF_NO_VERDICT_TEXT_MAX];
      const char *w = mpprof_no_verdict_text(m, &m->layers[i], buf);
      size_t k = 0;
      while (k < n_why && strcmp(why[k], w))
        k++;
      if (k == n_why && n_why < 8) snprintf(why[n_why++], sizeof *why, "%s", w);
      if (k < n_why) why_n[k]++;
    }
    for (size_t k = 0; k < n_why; k++) {
      fprintf(f, "%s%zu layer%s: no verdict (%s", first ? "" : "; ", why_n[k],
              why_n[k] == 1 ? "" : "s", why_n[k] == 1 ? "" : "each: ");
      html(f, why[k]);
      fputc(')', f);
      first = false;
    }
    fputs("</p>\n", f);
    if (m->forward_only) fputs("<p>" MPPROF_FORWARD_ONLY_NOTE ".</p>\n", f);
    const mpprof_applied_scale *g = &m->loss_scale;
    char edges[MP_LOSS_SCALE_EDGES_TEXT_MAX];
    if (g->applicable && g->has_window)
      fprintf(
          f,
          "<p class=\"big\">Loss scale: 2<sup>%d</sup> (every scale in [2<sup>%d</sup>, "
          "2<sup>%d</sup>] fits all fp16 layers' gradients%s%s)</p>\n",
          g->recommended_log2, g->window_lo, g->window_hi,
          mpprof_edges_text(m, g->window_lo, g->window_hi, g->beyond_lo, g->beyond_hi, true, edges),
          mpprof_loss_scale_needed_clause(g) ? mpprof_loss_scale_needed_clause(g)
                                             : "; gradients fit fp16 even without one");
    else if (g->applicable)
      fputs("<p class=\"big\">Loss scale: no single scale fits every fp16 layer's gradients "
            "(see findings).</p>\n",
            f);
    char a[32], b[32];
    if (g->declared) fprintf(f, "<p>Applied loss scale: %s", mpprof_scale_str(g->min, a));
    if (g->declared && g->max != g->min) fprintf(f, " to %s", mpprof_scale_str(g->max, b));
    if (g->declared) {
      fputs(" (from ", f);
      html(f, mpprof_loss_scale_source_text(g));
      fputs("; " MPPROF_LOSS_SCALE_DECLARED_NOTE ").</p>\n", f);
    }
    /* high when the gradients need a scale (mpprof_loss_scale_unknown) */
    if (mpprof_loss_scale_note(g)) {
      fprintf(f, "<p%s>", mpprof_loss_scale_unknown(g) ? " class=\"high\"" : "");
      html(f, mpprof_loss_scale_note(g));
      fputs(".</p>\n", f);
    }
  }
  if (m->incomplete)
    fputs("<p class=\"high\">Incomplete data: some process did not finish, hit a profiler "
          "limit, or a raw file was skipped (see below).</p>\n",
          f);
  fputs("</section>\n", f);
}

/* One muted paragraph per string of `notes` (CUPTI and counters problems). */
static void muted_notes(FILE *f, const cJSON *notes) {
  const cJSON *n;
  cJSON_ArrayForEach(n, notes) {
    fputs("<p class=\"muted\">", f);
    html(f, n->valuestring);
    fputs("</p>\n", f);
  }
}

static void tensor_cores(const mpprof_model *m, FILE *f) {
  const mpprof_tc_summary *t = &m->tc;
  fputs("<section id=\"tensor-cores\"><h2>Tensor Cores</h2>\n", f);
  if (!t->kernel_data) {
    fputs("<p>No GPU kernel records: Tensor Core use is unknown. The numerics below are "
          "complete.</p>\n",
          f);
  } else {
    if (t->gemm_conv_kernel_ns) {
      fputs("<p class=\"big\">", f);
      pct(f, mpprof_pct(t->tc_ns, t->gemm_conv_kernel_ns));
      fputs("% of GEMM/conv GPU time ran on Tensor Cores</p>", f);
    } else { /* 0 of 0 is no share */
      fputs("<p>No GEMM/conv kernel time in the kernel records: no Tensor Core share.</p>", f);
    }
    fprintf(f,
            "<p>%.3f ms of %.3f ms (%.3f ms in kernels of unknown kind); %zu sites eligible, "
            "%zu on Tensor Cores, %zu eligible but not on them.</p>\n",
            (double)t->tc_ns / 1e6, (double)t->gemm_conv_kernel_ns / 1e6,
            (double)t->unknown_ns / 1e6, t->sites_eligible, t->sites_on_tc,
            t->sites_eligible_not_used);
  }
  if (t->sites_eligible_with_tf32)
    fprintf(f,
            "<p>%zu fp32 site%s eligible with TF32: TF32 (compute type 32F_FAST_TF32 or math "
            "mode TF32_TENSOR_OP) would put %s on Tensor Cores (see findings).</p>\n",
            t->sites_eligible_with_tf32, t->sites_eligible_with_tf32 == 1 ? " is" : "s are",
            t->sites_eligible_with_tf32 == 1 ? "it" : "them");
  if (t->sites_eligible_not_used) {
    fputs("<h3>Eligible but not on Tensor Cores</h3><ul>\n", f);
    size_t shown = 0;
    for (size_t i = 0; i < m->n_sites && shown < 50; i++) {
      const mpprof_site *s = &m->sites[i];
      if (!(s->elig.eligible && s->tc_used == 0)) continue;
      shown++;
      fputs("<li><code>", f);
      html(f, mpprof_site_layer_label(s));
      fputs("</code> ", f);
      html(f, s->api);
      char mnk[96];
      mpprof_site_mnk(s, mnk, sizeof mnk);
      fprintf(f, " <a href=\"#op-%zu\">site %zu</a>, %s: kernels ", s->id, s->id, mnk);
      for (size_t k = 0; k < s->n_kernels; k++) {
        char dm[MP_KERNEL_SHOWN_MAX]; /* readable: CUPTI gives C++ kernels mangled */
        fputs(k ? ", <code>" : "<code>", f);
        html(f, mp_kernel_demangle(s->kernels[k].name, dm, sizeof dm));
        fputs("</code>", f);
      }
      if (!s->elig.efficient) {
        fputs(" &mdash; ", f);
        html(f, s->elig.reason);
      }
      fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
  }
  if (t->kernel_data && (t->counters_requested || t->kernels_by_counters))
    fprintf(f,
            "<p>Tensor Core verdicts: %zu kernels from hardware counters, %zu from kernel-name "
            "rules.</p>\n",
            t->kernels_by_counters, t->kernels_by_name);
  muted_notes(f, t->cupti_notes);
  muted_notes(f, t->counters_notes);
  fputs("</section>\n", f);
}

/* The layer named `name` (layers are sorted by name), or -1. */
static long layer_index(const mpprof_model *m, const char *name) {
  size_t lo = 0, hi = m->n_layers;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(m->layers[mid].name, name);
    if (!c) return (long)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

static void site_link(FILE *f, size_t id, bool *first) {
  fprintf(f, "%s<a href=\"#op-%zu\">site %zu</a>", *first ? "" : ", ", id, id);
  *first = false;
}

typedef struct layer_set {
  size_t idx[16];
  size_t n;
} layer_set;

static void layer_set_add(layer_set *ls, size_t i) {
  for (size_t j = 0; j < ls->n; j++)
    if (ls->idx[j] == i) return;
  if (ls->n < 16) ls->idx[ls->n++] = i;
}

/* A site id of the evidence (written as a raw integer, or read back as a number). */
static bool valid_site(const mpprof_model *m, const cJSON *v, size_t *ret) {
  double d;
  if (!v || mpprof_json_get_double(v, &d) || !(d >= 0 && d < (double)m->n_sites)) return false;
  *ret = (size_t)d;
  return true;
}

/* "Ops: site 3, site 5 · Layer: fc1": links to the ops table rows and the
 * layer table rows a finding's evidence names (its "site"/"sites", else the
 * sites of its layer). */
static void finding_links(const mpprof_model *m, const mpprof_finding *x, FILE *f) {
  bool first = true;
  const cJSON *one = cJSON_GetObjectItemCaseSensitive(x->evidence, "site");
  const cJSON *many = cJSON_GetObjectItemCaseSensitive(x->evidence, "sites"), *e;
  layer_set ls = {.n = 0};
  long li = x->layer ? layer_index(m, x->layer) : -1;
  if (li >= 0) layer_set_add(&ls, (size_t)li);
  size_t id;
  if (valid_site(m, one, &id) || cJSON_GetArraySize(many) > 0) {
    fputs("<br><span class=\"muted\">Ops:</span> ", f);
    if (valid_site(m, one, &id)) {
      site_link(f, id, &first);
      layer_set_add(&ls, m->sites[id].layer_idx);
    }
    cJSON_ArrayForEach(e, many) if (valid_site(m, e, &id)) {
      site_link(f, id, &first);
      layer_set_add(&ls, m->sites[id].layer_idx);
    }
  } else if (li >= 0) {
    fputs("<br><span class=\"muted\">Ops:</span> ", f);
    const mpprof_layer *l = &m->layers[li];
    for (size_t i = 0; i < l->n_sites && i < 20; i++)
      site_link(f, m->sites[l->first_site + i].id, &first);
    if (l->n_sites > 20) fputs(", &hellip;", f);
  }
  for (size_t j = 0; j < ls.n; j++) {
    fprintf(f, "%s<a href=\"#lrow-%zu\">", j ? ", " : " <span class=\"muted\">Layer:</span> ",
            ls.idx[j]);
    html(f, mpprof_layer_label(&m->layers[ls.idx[j]]));
    fputs("</a>", f);
  }
}

static void findings(const mpprof_model *m, FILE *f) {
  fputs("<section id=\"findings\"><h2>Findings</h2>\n", f);
  if (!m->n_findings)
    fputs("<p>Nothing to report.</p>\n", f);
  else
    fputs("<ol>\n", f);
  for (size_t i = 0; i < m->n_findings; i++) {
    const mpprof_finding *x = &m->findings[i];
    fprintf(f, "<li class=\"finding\"><span class=\"sev %s\">%s</span> ", x->severity, x->severity);
    html(f, x->message);
    fputs("<br><b>Action:</b> ", f);
    html(f, x->action);
    finding_links(m, x, f);
    char *ev = x->evidence ? cJSON_Print(x->evidence) : NULL;
    if (ev && strcmp(ev, "{\n}") && strcmp(ev, "{}")) {
      fputs("<details><summary>evidence</summary><pre>", f);
      html(f, ev);
      fputs("</pre></details>", f);
    }
    free(ev);
    fputs("</li>\n", f);
  }
  if (m->n_findings) fputs("</ol>\n", f);
  fputs("</section>\n", f);
}

/* Layers by impact: GPU time, then values. */
static const mpprof_model *g_m;
static int impact_cmp(const void *a, const void *b) {
  const mpprof_layer *x = &g_m->layers[*(const size_t *)a], *y = &g_m->layers[*(const size_t *)b];
  uint64_t gx = x->has_gpu_ns ? x->gpu_ns : x->kernel_ns,
           gy = y->has_gpu_ns ? y->gpu_ns : y->kernel_ns;
  if (gx != gy) return gx > gy ? -1 : 1;
  if (x->elements != y->elements) return x->elements > y->elements ? -1 : 1;
  return x < y ? -1 : x > y;
}

static bool layer_tf32(const mpprof_model *m, const mpprof_layer *l) {
  for (size_t i = 0; i < l->n_sites; i++)
    if (mpprof_site_is_tf32(&m->sites[l->first_site + i])) return true;
  return false;
}

/* "with TF32" when no site is eligible as called but TF32 would make some. */
static const char *layer_eligible(const mpprof_layer *l) {
  if (l->tc_eligible == 1) return "yes";
  return l->tc_eligible_with_tf32 ? "with TF32" : tri(l->tc_eligible);
}

static void num_cell(FILE *f, double v, const char *fmt) {
  fprintf(f, "<td class=\"n\" data-v=\"%.17g\">", v);
  fprintf(f, fmt, v);
  fputs("</td>", f);
}

/* A share's cell: the percentage, and which tensor it is of; an em dash
 * when no tensor had a value to take it of (nothing scanned: not 0%). */
static void share_cell(FILE *f, const mpprof_share *s) {
  if (!s->tensor) {
    fputs("<td class=\"n\" data-v=\"-1\">&mdash;</td>", f);
    return;
  }
  fprintf(f, "<td class=\"n\" data-v=\"%.17g\" title=\"%s\">", s->pct, s->tensor ? s->tensor : "");
  pct(f, s->pct);
  if (s->estimate) fputc('~', f);
  if (s->tensor) fprintf(f, " <small>%s</small>", s->tensor);
  fputs("</td>", f);
}

/* --- Measured error (shadow execution): a column group in the layer and ops tables --- */

#define SHADOW_HEADERS                                                                             \
  "<th class=\"sh\" title=\"Measured error (--shadow): " MPPROF_SHADOW_CURRENT_DEF                 \
  "\">Measured now rel L2</th>"                                                                    \
  "<th class=\"sh\" title=\"Measured error (--shadow): relative L2 error of fp16 as AMP runs it "  \
  "(gradient operands at their loss scale) against an fp64 reference, worst call; marked with a "  \
  "dagger when the operands were already fp16 or of fewer mantissa bits (their rounding not in "   \
  "it)\">Measured "                                                                                \
  "fp16 rel L2</th><th class=\"sh\" title=\"Measured error (--shadow): bf16, worst call; marked "  \
  "with a dagger when the operands were already bf16 (their rounding not in it)\">"                \
  "Measured bf16 rel L2</th><th class=\"sh\" title=\"Measured error (--shadow): the fp8 recipe "   \
  "with the least relative L2 error (e4m3 forward, e5m2 backward)\">Measured best fp8</th>"

/* The ops table's columns, each defined where it is shown (its title). */
/* The Scanned columns' definition (the layer and ops tables). */
#define SCANNED_TITLE                                                                              \
  "Of the calls, those whose tensors mpprof scanned; --sample, --scan none and CUDA graph "        \
  "capture leave the others out (report.json not_scanned says why). Every share and verdict is "   \
  "of the scanned calls' values"
#define OPS_HEADERS                                                                                \
  "<th title=\"The op site's id: one per layer, phase, API, dtypes, compute type, shape and "      \
  "the rest of the site key (report.json sites)\">Site</th>"                                       \
  "<th title=\"The layer the site's calls ran in (its row in the layer table)\">Layer</th>"        \
  "<th title=\"forward, backward, optimizer, recompute, eval or unknown\">Phase</th>"              \
  "<th title=\"The hooked entry point called\">API</th>"                                           \
  "<th title=\"A GEMM's m&times;n&times;k&times;batch; a convolution's geometry: conv n= c= HxW "  \
  "k= RxS (3-D: DxHxW, TxRxS; g=G: G filter groups); various shapes: a site of shapes merged "     \
  "past MPPROF_MAX_SITES (ops.csv shape)\">Shape</th>"                                             \
  "<th title=\"transa/transb as called (N: as stored, T: transposed)\">Trans</th>"                 \
  "<th title=\"Operand dtypes per role\">Dtypes</th>"                                              \
  "<th title=\"Compute type and math mode; TF32 wherever TF32 applies\">Compute</th>"              \
  "<th title=\"cuBLASLt epilogue (bias, activation) applied to D\">Epilogue</th>"                  \
  "<th title=\"cuBLASLt FP8 scale and amax pointers the calls set, with the values read over "     \
  "the calls (min..max; amax_D: its largest)\">FP8 scales</th>"                                    \
  "<th title=\"Hooked calls of the site, scanned or not\">Calls</th>"                              \
  "<th title=\"" SCANNED_TITLE "\">Scanned</th>"                                                   \
  "<th title=\"GPU time of the site's kernels (CUPTI), in milliseconds; empty without kernel "     \
  "data\">GPU ms</th>"                                                                             \
  "<th title=\"The site's GPU time over the run's, in percent\">Share %</th>"                      \
  "<th title=\"2*m*n*k*batch per call over the GPU time; empty unless the times are from a real "  \
  "GPU\">TFLOP/s</th>"                                                                             \
  "<th title=\"The kernels the calls launched (CUPTI names; the full name on "                     \
  "hover)\">Kernels</th>"                                                                          \
  "<th title=\"yes: a Tensor Core kernel ran; no: every classified kernel is not one; ?: no "      \
  "kernel data\">TC used</th>"                                                                     \
  "<th title=\"yes: dtypes, compute type and math mode allow Tensor Cores; with TF32: TF32 "       \
  "would; "                                                                                        \
  "?: dtypes unknown\">TC eligible</th>"                                                           \
  "<th title=\"Why the site is not eligible, or what keeps it off Tensor Cores (alignment)\">"     \
  "Reason</th>"                                                                                    \
  "<th title=\"What decided TC used: kernel names, hardware counters, or unknown\">Source</th>"

/* The layer table's columns, each defined where it is shown (its title);
 * docs/report-schema.md has the same for report.json's layers. */
static void layer_headers(FILE *f, const mpprof_model *m) {
  fputs("<th title=\"The NVTX range path of the ops, or the PyTorch module's name (its class "
        "beside it)\">Layer</th>"
        "<th title=\"forward, backward, optimizer, recompute (activation-checkpoint "
        "recomputation), eval (a forward outside training: PyTorch under no_grad), unknown (no "
        "marker); mixed: the layer's sites ran in several "
        "phases\">Phase</th>"
        "<th title=\"Hooked calls of the layer's op sites, scanned or not\">Calls</th>"
        "<th title=\"" SCANNED_TITLE "\">Scanned</th>"
        "<th title=\"GPU time of the layer's ops from CUPTI's kernel records, in milliseconds; "
        "empty without kernel data\">GPU ms</th>"
        "<th title=\"Operand dtypes per role (A, B, C, D; convolutions x, w, y, ...); TF32 where "
        "it applies\">Dtypes</th>"
        "<th title=\"The verdict: the cheapest precision whose range holds every forward tensor "
        "and gradient; with --shadow, one whose measured error is also within --shadow-max-rel "
        "(else bf16, then fp32) (docs/report.md, Verdict)\">Recommended</th>",
        f);
  fprintf(f,
          "<th title=\"[a, b]: every loss scale 2^a .. 2^b keeps the layer's gradients inside "
          "fp16 (no overflow, at most %g%% flushed)\">Loss scale (log2)</th>"
          "<th title=\"Share of NaN and &plusmn;Inf among all the scanned values of the layer's "
          "tensor (input, output or gradient) with the most of them, named in the cell: values "
          "no precision is shown to hold\">NaN/Inf %%</th>"
          "<th title=\"Share of the worst tensor's finite non-zero values that round beyond "
          "fp16's largest finite value, 65504 (from 65520 on: to infinity), or that an fp8 output "
          "holds clamped at its max (saturated: true size unknown; see below the "
          "table)\">fp16 overflow %%</th>"
          "<th title=\"Share of the worst tensor's finite non-zero values that round to zero in "
          "fp16 (see below the table)\">fp16 underflow %%</th>"
          "<th title=\"As fp16 overflow %%, for bf16\">bf16 overflow %%</th>"
          "<th title=\"As fp16 underflow %%, for bf16\">bf16 underflow %%</th>"
          "<th title=\"Whether every forward tensor fits fp8 e4m3 at its own power-of-two scale "
          "(amax scaling; at most %g%% flushed)\">fp8 e4m3 fwd</th>"
          "<th title=\"Whether every gradient fits fp8 e5m2 at its own power-of-two scale (amax "
          "scaling; at most %g%% flushed)\">fp8 e5m2 grad</th>",
          100 * m->params.underflow_max, 100 * m->params.fp8_underflow_max,
          100 * m->params.fp8_underflow_max);
  fputs("<th title=\"yes: some site's dtypes, compute type and math mode allow Tensor Cores; "
        "with TF32: none as called, but TF32 would; ?: dtypes unknown\">TC eligible</th>"
        "<th title=\"yes: some site ran a Tensor Core kernel (kernel names, or hardware counters "
        "where marked); no: every classified kernel is not one; ?: no kernel data\">TC used</th>",
        f);
}

/* A shadowed site or layer with no measured call: the cell says why, from
 * the skipped counts (analysis/raw_format.h's reasons), e.g. every call had
 * k = 0 (empty_product: nothing to measure). Where other candidates were
 * measured, the skipped calls are not why this one was not (a candidate
 * undefined for the call, such as fp16_loss_scaled with an epilogue). */
static bool unmeasured_cell(FILE *f, const mpprof_shadow *sh) {
  static const char *const why[MPPROF_SH_SKIP_COUNT][2] = {
#define X(id, json, doc) {json, doc},
      MP_RAW_SHADOW_SKIPPED(X)
#undef X
  };
  if (!sh) return false;
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (sh->cand[c].calls) return false;
  bool any = false;
  for (int r = 0; r < MPPROF_SH_SKIP_COUNT; r++) {
    if (!sh->skipped[r]) continue;
    fprintf(f, "%s%s &times;%" PRIu64 " (%s)",
            any ? "; " : "<td class=\"n\" data-v=\"-1\" title=\"Not measured: ", why[r][0],
            sh->skipped[r], why[r][1]);
    any = true;
  }
  if (any) fputs("\">not measured</td>", f);
  return any;
}

/* A measured error on inputs already rounded to its format (fmt: "bf16",
 * ...; mpprof_shadow_cand.inputs_rounded): the number with a dagger, the
 * tooltip saying what it excludes. */
static void rounded_cell(FILE *f, const mpprof_shadow_cand *c, const char *name, const char *fmt,
                         double lim) {
  char note[320];
  snprintf(note, sizeof note, MPPROF_SHADOW_ROUNDED_TITLE, fmt);
  fprintf(f, "<td class=\"n\" data-v=\"%.17g\" title=\"%s\">", c->worst.rel_l2, note);
  if (name) fprintf(f, "%s ", name);
  fprintf(f, "%s&dagger;</td>", mpprof_rel_text(c->worst.rel_l2, lim).s);
}

/* A Measured rel L2 cell (mpprof_shadow_row: which candidate, its marks). */
static void rel_cell(FILE *f, const mpprof_shadow *sh, const mpprof_shadow_cell *c, double lim) {
  if (!c->c && unmeasured_cell(f, sh)) return;
  if (!c->c)
    fputs("<td class=\"n\" data-v=\"-1\"></td>", f);
  else if (isinf(c->c->worst.rel_l2))
    fputs("<td class=\"n\" data-v=\"1e308\">&infin;</td>", f);
  else if (c->rounded)
    rounded_cell(f, c->c, NULL, c->format, lim);
  else
    fprintf(f, "<td class=\"n\" data-v=\"%.17g\">%s</td>", c->c->worst.rel_l2,
            mpprof_rel_text(c->c->worst.rel_l2, lim).s);
}

/* The best fp8 cell: its recipe's name and error. */
static void fp8_cell(FILE *f, const mpprof_shadow *sh, const mpprof_shadow_cell *c, double lim) {
  if (!c->c && unmeasured_cell(f, sh)) return;
  if (!c->c) {
    fputs("<td data-v=\"-1\"></td>", f);
    return;
  }
  if (c->rounded) {
    rounded_cell(f, c->c, c->name, c->format, lim);
    return;
  }
  double v = c->c->worst.rel_l2;
  fprintf(f, "<td data-v=\"%.17g\">%s ", isinf(v) ? 1e308 : v, c->name);
  if (isinf(v))
    fputs("&infin;</td>", f);
  else
    fprintf(f, "%s</td>", mpprof_rel_text(v, lim).s);
}

/* The `current` cell, marked with * where it understates what the kernels
 * lose (its title says why). */
static void current_cell(FILE *f, const mpprof_shadow_row *r, double lim) {
  if (!r->understated) {
    rel_cell(f, r->sh, &r->now, lim);
    return;
  }
  fprintf(f, "<td class=\"n\" data-v=\"%.17g\" title=\"", r->now.c->worst.rel_l2);
  html(f, mpprof_understated_text(r->understated));
  fprintf(f, "\">%s*</td>", mpprof_rel_text(r->now.c->worst.rel_l2, lim).s);
}

/* Each error as mpprof_rel_text shows it beside the limit lim, which judges
 * them all (a verdict's candidates, and current_error_high's current). */
static void shadow_cells(FILE *f, const mpprof_shadow_row *r, double lim) {
  current_cell(f, r, lim);
  rel_cell(f, r->sh, &r->fp16, lim);
  rel_cell(f, r->sh, &r->bf16, lim);
  fp8_cell(f, r->sh, &r->fp8, lim);
}

static void verdict_basis(const mpprof_model *m, FILE *f) {
  if (m->has_shadow)
    fprintf(f,
            "<p>Verdicts use value ranges <b>and the measured error</b> (shadow execution): a "
            "precision stands only when its relative L2 error against an fp64 reference is at "
            "most %s (<code>--shadow-max-rel</code>); the Measured error columns show it "
            "(worst shadowed call).</p>\n",
            mpprof_rel_limit_text(mpprof_shadow_max_rel(m)).s);
  else
    fputs("<p>Verdicts are <b>range-only</b>: they rest on the values' ranges (overflow, flush to "
          "zero). Run with <code>--shadow</code> to measure the error each precision would "
          "really cause.</p>\n",
          f);
  size_t outs = mpprof_outputs_only_procs(m);
  if (outs)
    fprintf(f,
            "<p class=\"high\">Inputs were not scanned in %zu of %zu processes "
            "(<code>--scan outputs</code>): the verdicts rest on the ops' outputs; weights and "
            "incoming activations are not part of them.</p>\n",
            outs, m->n_procs);
}

static void layer_table(const mpprof_model *m, const size_t *order, const bool *charted, FILE *f) {
  fputs("<section id=\"layers\"><h2>Layers</h2>\n", f);
  if (!m->n_layers) {
    fputs("<p>No layers.</p></section>\n", f);
    return;
  }
  size_t rows = m->n_layers < MAX_TABLE_ROWS ? m->n_layers : MAX_TABLE_ROWS;
  fputs("<p><label>Filter by name <input id=\"filter\" type=\"search\"></label> <label>"
        "Recommended <select id=\"rec\"><option value=\"\">any</option>",
        f);
  for (int r = 0; r < MP_REC_COUNT; r++)
    fprintf(f, "<option>%s</option>", mp_recommendation_name((mp_recommendation)r));
  fprintf(f,
          "<option>unknown</option></select></label> <span id=\"shown\">%zu</span> of %zu "
          "rows shown%s. Click a column header to sort.</p>\n",
          rows, rows,
          rows < m->n_layers ? " (the layers with the most GPU time; layers.csv has all)" : "");
  verdict_basis(m, f);
  fputs("<div class=\"scroll\"><table id=\"layer-table\" class=\"sortable\" data-q=\"filter\" "
        "data-sel=\"rec\" "
        "data-shown=\"shown\" data-fcol=\"0\" "
        "data-numcol=\"2\"><thead><tr>",
        f);
  layer_headers(f, m);
  if (m->has_shadow) fputs(SHADOW_HEADERS, f); /* README: only with --shadow */
  fputs("</tr></thead><tbody>\n", f);
  for (size_t r = 0; r < rows; r++) {
    size_t i = order[r];
    const mpprof_layer *l = &m->layers[i];
    const mpprof_layer_advice *a = &l->adv;
    fprintf(f, "<tr id=\"lrow-%zu\" data-sel=\"%s\"><td class=\"name\">", i, rec_name(l));
    if (charted[i]) fprintf(f, "<a href=\"#layer-%zu\">", i);
    html(f, mpprof_layer_label(l));
    if (charted[i]) fputs("</a>", f);
    if (l->module_class) { /* a PyTorch module: its class */
      fputs(" <small>", f);
      html(f, l->module_class);
      fputs("</small>", f);
    }
    fprintf(f, "</td><td>%s</td>", phase_of(l));
    num_cell(f, (double)l->calls, "%.0f");
    num_cell(f, (double)l->scanned_calls, "%.0f");
    if (l->has_gpu_ns)
      num_cell(f, (double)l->gpu_ns / 1e6, "%.3f");
    else
      fputs("<td class=\"n\" data-v=\"-1\"></td>", f);
    char *dt = mpprof_layer_dtypes(m, l);
    fputs("<td>", f);
    html(f, dt);
    free(dt);
    if (layer_tf32(m, l)) fputs(" <b>TF32</b>", f);
    char marks[MPPROF_MARKS_MAX], edges[MP_LOSS_SCALE_EDGES_TEXT_MAX];
    fprintf(f, "</td><td class=\"rec %s\">%s", rec_name(l), rec_name(l));
    if (*mpprof_verdict_marks(m, l, marks)) fprintf(f, " <small>%s</small>", marks);
    fputs("</td>", f);
    /* the true edges where the search range cut the window */
    mpprof_edges_text(m, a->window_lo, a->window_hi, a->beyond_lo, a->beyond_hi, true, edges);
    if (a->has_window)
      fprintf(f, "<td data-v=\"%d\">[%d, %d]%s%s%s</td>", a->window_lo, a->window_lo, a->window_hi,
              edges[0] ? "<small>" : "", edges, edges[0] ? "</small>" : "");
    else
      fputs("<td data-v=\"-1000\"></td>", f);
    share_cell(f, &l->nonfinite);
    share_cell(f, &l->fp16_overflow);
    share_cell(f, &l->fp16_underflow);
    share_cell(f, &l->bf16_overflow);
    share_cell(f, &l->bf16_underflow);
    fprintf(f, "<td>%s</td><td>%s</td><td>%s</td><td>%s%s</td>", tri(a->fp8_e4m3_fits),
            tri(a->fp8_e5m2_fits), layer_eligible(l), tri(l->tc_used),
            l->tc_used >= 0 && l->tc_source == MP_TC_SRC_COUNTERS ? " (counters)" : "");
    if (m->has_shadow) {
      mpprof_shadow_row sr;
      mpprof_layer_shadow_row(m, l, &sr);
      shadow_cells(f, &sr, mpprof_shadow_max_rel(m));
    }
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table></div>\n<p>Each overflow / underflow % is of the finite non-zero values "
        "of the layer's worst forward or gradient tensor (named in the cell) over all scanned "
        "calls; gradients divided by the applied loss scale, cast at scale 1; ~: estimate. "
        "Definitions: docs/report.md, Shares.</p></section>\n",
        f);
}

/* Sites by impact: GPU time, then values, then id. */
static int site_impact_cmp(const void *a, const void *b) {
  const mpprof_site *x = &g_m->sites[*(const size_t *)a], *y = &g_m->sites[*(const size_t *)b];
  uint64_t gx = mpprof_site_gpu_ns(x, NULL), gy = mpprof_site_gpu_ns(y, NULL);
  if (gx != gy) return gx > gy ? -1 : 1;
  if (x->elements != y->elements) return x->elements > y->elements ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static const char *site_tc_eligible(const mpprof_site *s) {
  if (!s->elig_known) return "?";
  return s->elig.eligible ? "yes" : s->elig.eligible_with_tf32 ? "with TF32" : "no";
}

/* A kernel name cut to `max` characters, the full name on hover; a C++
 * kernel's demangled (CUPTI gives its mangled symbol). */
static void kernel_name(FILE *f, const char *symbol, size_t max) {
  char name[MP_KERNEL_SHOWN_MAX];
  mp_kernel_demangle(symbol, name, sizeof name);
  fputs("<code title=\"", f);
  html(f, name);
  fputs("\">", f);
  if (strlen(name) <= max) {
    html(f, name);
  } else {
    char cut[128];
    snprintf(cut, sizeof cut, "%.*s", (int)(max - 1 < sizeof cut - 1 ? max - 1 : sizeof cut - 1),
             name);
    html(f, cut);
    fputs("&hellip;", f);
  }
  fputs("</code>", f);
}

static int ops_table(const mpprof_model *m, FILE *f) {
  fputs("<section id=\"ops\"><h2>Ops</h2>\n", f);
  if (!m->n_sites) {
    fputs("<p>No ops.</p></section>\n", f);
    return 0;
  }
  size_t n = m->n_sites, rows = n < MAX_TABLE_ROWS ? n : MAX_TABLE_ROWS;
  size_t *order = malloc(n * sizeof *order);
  if (!order) return -1;
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  g_m = m;
  qsort(order, n, sizeof *order, site_impact_cmp);
  bool real = mpprof_times_real(m);
  fprintf(f,
          "<p>One row per op site (same layer, API, dtypes, compute type and shape). GPU time: "
          "the site's kernels; share: of the run's GPU time; TFLOP/s: 2&middot;m&middot;n&middot;"
          "k&middot;batch per call over the GPU time%s. Compute says <b>TF32</b> whenever TF32 "
          "applies (compute type, math mode, cuDNN default or TF32 kernels). TC eligible "
          "&ldquo;with TF32&rdquo;: an fp32 op that TF32 would put on Tensor Cores.</p>\n"
          "<p><label>Filter <input id=\"ops-filter\" type=\"search\"></label> <label>TC used "
          "<select id=\"ops-tc\"><option value=\"\">any</option><option>yes</option><option>"
          "no</option><option>?</option></select></label> <span id=\"ops-shown\">%zu</span> of "
          "%zu rows shown%s. Click a column header to sort.</p>\n",
          real ? "" : " (not shown: these times are not from a real GPU)", rows, rows,
          rows < n ? " (the sites with the most GPU time; ops.csv has all)" : "");
  fputs("<div class=\"scroll\"><table id=\"ops-table\" class=\"sortable\" data-q=\"ops-filter\" "
        "data-sel=\"ops-tc\" data-shown=\"ops-shown\" data-fcol=\"-1\" data-numcol=\"0\"><thead>"
        "<tr>" OPS_HEADERS,
        f);
  fputs(m->has_shadow ? SHADOW_HEADERS "</tr></thead><tbody>\n" : "</tr></thead><tbody>\n", f);
  for (size_t r = 0; r < rows; r++) {
    const mpprof_site *s = &m->sites[order[r]];
    mpprof_site_extra x;
    mpprof_site_extra_of(s, &x);
    char buf[192];
    fprintf(f, "<tr id=\"op-%zu\" data-sel=\"%s\">", s->id, tri(s->tc_used));
    num_cell(f, (double)s->id, "%.0f");
    fputs("<td class=\"name\">", f);
    const mpprof_layer *l = &m->layers[s->layer_idx];
    fprintf(f, "<a href=\"#lrow-%zu\">", s->layer_idx);
    html(f, mpprof_layer_label(l));
    fprintf(f, "</a></td><td>%s</td><td>", mpprof_phase_name(s->phase));
    html(f, s->api);
    fputs("</td><td>", f);
    mpprof_site_shape(s, buf, sizeof buf);
    html(f, buf);
    fputs("</td><td>", f);
    if (x.transa[0]) {
      html(f, x.transa);
      fputc('/', f);
      html(f, x.transb);
    }
    fputs("</td><td>", f);
    mpprof_site_dtypes(s, buf, sizeof buf);
    html(f, buf);
    fputs("</td><td>", f);
    mpprof_site_compute_label(s, buf, sizeof buf);
    if (!strncmp(buf, "TF32", 4)) {
      fputs("<b>TF32</b>", f);
      html(f, buf + 4);
    } else {
      html(f, buf);
    }
    fputs("</td><td>", f);
    html(f, s->epilogue ? s->epilogue : "");
    fputs("</td><td>", f);
    html(f, x.fp8_scales);
    fputs("</td>", f);
    num_cell(f, (double)s->calls, "%.0f");
    num_cell(f, (double)s->scanned_calls, "%.0f");
    bool known;
    uint64_t ns = mpprof_site_gpu_ns(s, &known);
    if (known)
      num_cell(f, (double)ns / 1e6, "%.3f");
    else
      fputs("<td class=\"n\" data-v=\"-1\"></td>", f);
    double sh = mpprof_site_gpu_share_pct(m, s), tf = mpprof_site_tflops(m, s);
    if (sh >= 0) {
      fprintf(f, "<td class=\"n\" data-v=\"%.17g\">", sh);
      pct(f, sh);
      fputs("</td>", f);
    } else
      fputs("<td class=\"n\" data-v=\"-1\"></td>", f);
    if (tf >= 0)
      num_cell(f, tf, "%.2f");
    else
      fputs("<td class=\"n\" data-v=\"-1\"></td>", f);
    fputs("<td>", f);
    for (size_t k = 0; k < s->n_kernels && k < 8; k++) {
      if (k) fputs("<br>", f);
      kernel_name(f, s->kernels[k].name, 40);
    }
    if (s->n_kernels > 8) fprintf(f, "<br>(%zu more)", s->n_kernels - 8);
    fprintf(f, "</td><td>%s</td><td>%s</td><td class=\"wrap\">", tri(s->tc_used),
            site_tc_eligible(s));
    html(f, s->elig.reason);
    fprintf(f, "</td><td>%s</td>", mp_tc_source_name(s->tc_source));
    if (m->has_shadow) {
      mpprof_shadow_row sr;
      mpprof_site_shadow_row(s, &sr);
      shadow_cells(f, &sr, mpprof_shadow_max_rel(m));
    }
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table></div></section>\n", f);
  free(order);
  return 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)

/* A chart panel without bars says why (an empty panel read as "nothing to
 * see"): no tensor of its class, or what its tensors held instead of finite
 * non-zero values, in the words of mpprof_dead_kind_text. */
static void empty_panel_note(const mpprof_layer *l, mp_tclass cls, FILE *f) {
  uint64_t n = 0, zeros = 0, nonfinite = 0;
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->cls != cls) continue;
    if (t->has_values) return;
    n += t->st.count;
    zeros += t->st.zeros;
    nonfinite += t->st.nans + t->st.pos_infs + t->st.neg_infs;
  }
  const char *what = cls == MP_TCLASS_GRADIENT ? "gradient" : "forward";
  mpprof_dead_kind k = mpprof_dead_kind_of(n, zeros, nonfinite);
  if (k)
    fprintf(f,
            "<p class=\"high\">No bars in the %s panel: its %s tensors were %s in every "
            "scanned call.</p>\n",
            what, what, mpprof_dead_kind_text(k));
  else
    fprintf(f, "<p class=\"muted\">No bars in the %s panel: no %s tensor was scanned.</p>\n", what,
            what);
}

/* The chart's numbers: one row per binade with values, and what fp16 does there. */
static void hist_table(const mpprof_layer *l, int lo, int hi, double *fwd, double *grad, FILE *f) {
  const mp_format *f16 = mp_format_of(MP_FP16);
  mpprof_layer_hist(l, lo, hi, fwd, grad);
  fputs("<details><summary>numbers</summary><table class=\"hist\"><thead><tr><th>binade</th>"
        "<th>range</th><th>forward values</th><th>gradient values</th><th>fp16 at scale 1</th>"
        "</tr></thead><tbody>\n",
        f);
  for (int e = lo; e <= hi; e++) {
    double a = fwd[e - lo], b = grad[e - lo];
    if (a <= 0 && b <= 0) continue;
    const char *what = e > f16->emax            ? "overflow"
                       : e < f16->emin_sub - 1  ? "flush to zero"
                       : e == f16->emin_sub - 1 ? "flush or subnormal (rounding)"
                       : e < f16->emin          ? "subnormal"
                                                : "normal";
    fprintf(f,
            "<tr><td class=\"n\">%d</td><td>[2<sup>%d</sup>, 2<sup>%d</sup>)</td><td class=\"n\">"
            "%.0f</td><td class=\"n\">%.0f</td><td>%s</td></tr>\n",
            e, e, e + 1, a, b, what);
  }
  fputs("</tbody></table></details>\n", f);
}

static bool layer_has_values(const mpprof_layer *l) {
  for (size_t t = 0; t < l->n_tensors; t++)
    if (l->tensors[t].has_values) return true;
  return false;
}

/* The layers that get a chart (those with values, at most MAX_CHARTS), in
 * the order CHARTS_RULE says; `order` is by impact. */
#define CHARTS_RULE                                                                                \
  "first the layers findings are about (high severity first), then those whose verdict is not "    \
  "the most common one, then those with the most GPU time or values"
static void choose_charts(const mpprof_model *m, const size_t *order, bool *charted) {
  size_t votes[MP_REC_COUNT + 1] = {0}, common = 0, c = 0;
  for (size_t i = 0; i < m->n_layers; i++)
    if (layer_has_values(&m->layers[i]))
      votes[m->layers[i].adv.known ? (size_t)m->layers[i].adv.rec : MP_REC_COUNT]++;
  for (size_t v = 1; v <= MP_REC_COUNT; v++)
    if (votes[v] > votes[common]) common = v;
  /* the findings are ranked: high first, then by impact */
  for (size_t k = 0; k < m->n_findings && c < MAX_CHARTS; k++) {
    long i = m->findings[k].layer ? layer_index(m, m->findings[k].layer) : -1;
    if (i >= 0 && !charted[i] && layer_has_values(&m->layers[i])) charted[i] = true, c++;
  }
  for (int pass = 0; pass < 2; pass++)
    for (size_t r = 0; r < m->n_layers && c < MAX_CHARTS; r++) {
      const mpprof_layer *l = &m->layers[order[r]];
      size_t v = l->adv.known ? (size_t)l->adv.rec : MP_REC_COUNT;
      if (!charted[order[r]] && layer_has_values(l) && (pass || v != common))
        charted[order[r]] = true, c++;
    }
}

static int charts(const mpprof_model *m, const size_t *order, const bool *charted, FILE *f) {
  fputs("<section id=\"charts\"><h2>Exponent histograms</h2>\n", f);
  size_t n = 0, with_values = 0;
  for (size_t i = 0; i < m->n_layers; i++) {
    n += charted[i];
    with_values += layer_has_values(&m->layers[i]);
  }
  if (!n) {
    fputs("<p>No scanned values.</p></section>\n", f);
    return 0;
  }
  fputs("<p>Per layer, on one binade range for all layers: values per binade floor(log2|x|), "
        "count on a log scale, two aligned panels: "
        "<span class=\"sw\" style=\"background:#1f77b4\"></span>forward tensors (top) and "
        "<span class=\"sw\" style=\"background:#d62728\"></span>gradients (bottom). Shaded: "
        "the fp16 range (darker: normal, lighter: subnormal), "
        "<span class=\"sw\" style=\"background:#fadede\"></span>binades fp16 overflows, "
        "<span class=\"sw\" style=\"background:#e2e2e8\"></span>binades fp16 flushes to "
        "zero. Labelled strips under the axis, top to bottom: "
        "<span class=\"sw\" style=\"background:#50aa50\"></span>fp16 "
        "<span class=\"sw\" style=\"background:#5a78c8\"></span>bf16 "
        "<span class=\"sw\" style=\"background:#f09628\"></span>fp8 e4m3 "
        "<span class=\"sw\" style=\"background:#965abe\"></span>fp8 e5m2 (unscaled). "
        "<span class=\"sw\" style=\"background:#eb7878\"></span>band above the gradients: "
        "the gradient "
        "binades fp16 holds at the layer's loss scale "
        "(<span class=\"sw\" style=\"background:#f8cdcd\"></span>lighter: at some scale of "
        "its window).",
        f);
  if (n < with_values)
    fprintf(f,
            " Charts for %zu of the %zu layers with scanned values: " CHARTS_RULE
            "; the layer table links each charted layer to its chart.",
            n, with_values);
  if (with_values < m->n_layers) fputs(" A layer without scanned values has no chart.", f);
  fputs("</p>\n", f);
  int lo, hi;
  mpprof_chart_range(m, charted, &lo, &hi);
  double *fwd = malloc((size_t)(hi - lo + 1) * sizeof *fwd),
         *grad = malloc((size_t)(hi - lo + 1) * sizeof *grad);
  if (!fwd || !grad) {
    free(fwd);
    free(grad);
    return -1;
  }
  for (size_t r = 0; r < m->n_layers; r++) {
    size_t i = order[r];
    if (!charted[i]) continue;
    const mpprof_layer *l = &m->layers[i];
    unsigned char *png = NULL;
    size_t len = 0;
    if (mpprof_layer_chart_png(m, l, lo, hi, &png, &len)) {
      free(fwd);
      free(grad);
      return -1;
    }
    fprintf(f, "<div class=\"layer\" id=\"layer-%zu\"><h3>", i);
    html(f, mpprof_layer_label(l));
    char marks[MPPROF_MARKS_MAX], edges[MP_LOSS_SCALE_EDGES_TEXT_MAX];
    fprintf(f, " &mdash; <span class=\"rec %s\">%s</span>%s", rec_name(l), rec_name(l),
            mpprof_verdict_marks(m, l, marks));
    if (l->adv.has_window)
      fprintf(f, ", loss scale window [2<sup>%d</sup>, 2<sup>%d</sup>]%s, band at 2<sup>%d</sup>",
              l->adv.window_lo, l->adv.window_hi,
              mpprof_edges_text(m, l->adv.window_lo, l->adv.window_hi, l->adv.beyond_lo,
                                l->adv.beyond_hi, true, edges),
              mpprof_chart_scale(m, l));
    fputs("</h3>\n<div class=\"chart\"><div class=\"ytitle\">values per binade (log scale)"
          "</div><img width=\"" STR(MPPROF_CHART_W) "\" height=\"" STR(
              MPPROF_CHART_H) "\" alt=\"exponent histogram of ",
          f);
    html(f, mpprof_layer_label(l));
    if (!mpprof_layer_has_gradient_tensor(l)) fputs(" (" MPPROF_NO_GRADIENTS_PANEL ")", f);
    fputs("\" src=\"data:image/png;base64,", f);
    base64(f, png, len);
    free(png);
    fputs("\"><div></div><div class=\"xtitle\">binade: floor(log2 |x|)</div></div>\n", f);
    empty_panel_note(l, MP_TCLASS_FORWARD, f);
    empty_panel_note(l, MP_TCLASS_GRADIENT, f);
    hist_table(l, lo, hi, fwd, grad, f);
    fputs("<ul>", f);
    const cJSON *rs;
    cJSON_ArrayForEach(rs, l->adv.reasons) {
      fputs("<li>", f);
      html(f, rs->valuestring);
      fputs("</li>", f);
    }
    fputs("</ul></div>\n", f);
  }
  free(fwd);
  free(grad);
  fputs("</section>\n", f);
  return 0;
}

static void processes(const mpprof_model *m, FILE *f) {
  fputs("<section id=\"processes\"><h2>Processes</h2>\n", f);
  if (m->n_procs) {
    fputs("<table><thead><tr><th>File</th><th>Host</th><th>PID</th><th>Rank</th><th>Device</th>"
          "<th>Framework</th><th>CUPTI</th><th>Calls</th><th>Final</th><th>Command</th></tr>"
          "</thead><tbody>\n",
          f);
    for (size_t i = 0; i < m->n_procs; i++) {
      const mpprof_process *p = &m->procs[i];
      fputs("<tr><td>", f);
      html(f, p->file);
      fputs("</td><td>", f);
      html(f, p->host);
      fprintf(f, "</td><td>%" PRId64 "</td><td>", p->pid);
      if (p->has_rank) fprintf(f, "%" PRId64, p->rank);
      fputs("</td><td>", f);
      html(f, p->device_name ? p->device_name : "none");
      fputs("</td><td>", f);
      if (p->framework) {
        html(f, p->framework);
        fputc(' ', f);
        html(f, p->framework_version);
        if (p->backward_marks)
          fputs(!strcmp(p->backward_marks, MP_RAW_MARKS_CXX) ? " (backward marks: C++)"
                                                             : " (backward marks: Python hooks)",
                f);
      }
      fputs("</td><td>", f);
      html(f, p->cupti_status);
      fprintf(f, "</td><td class=\"n\">%" PRIu64 "</td><td>%s</td><td><code>", p->calls,
              p->final ? "yes" : "no (checkpoint)");
      const cJSON *a;
      bool first = true;
      cJSON_ArrayForEach(a, p->argv) if (cJSON_IsString(a)) {
        if (!first) fputc(' ', f);
        html(f, a->valuestring);
        first = false;
      }
      fputs("</code></td></tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    char *ranks = mpprof_missing_ranks(m, NULL, NULL);
    if (ranks) {
      fputs("<p class=\"ranks-missing\">", f);
      html(f, ranks);
      fputs("</p>\n", f);
      free(ranks);
    }
  } else {
    fputs("<p>None.</p>\n", f);
  }
  if (m->n_skipped) {
    fputs("<h3>Skipped raw files</h3><ul>\n", f);
    for (size_t i = 0; i < m->n_skipped; i++) {
      fputs("<li><code>", f);
      html(f, m->skipped[i].file);
      fputs("</code>: ", f);
      html(f, m->skipped[i].reason);
      fputs("</li>\n", f);
    }
    fputs("</ul>\n", f);
  }
  fputs("</section>\n", f);
}

static int write_page(const mpprof_model *m, FILE *f) {
  size_t n = m->n_layers;
  size_t *order = malloc((n ? n : 1) * sizeof *order);
  bool *charted = calloc(n ? n : 1, sizeof *charted);
  if (!order || !charted) {
    free(order);
    free(charted);
    return -1;
  }
  for (size_t i = 0; i < n; i++)
    order[i] = i;
  g_m = m;
  qsort(order, n, sizeof *order, impact_cmp);
  choose_charts(m, order, charted);
  fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src "
        "data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<title>mpprof report</title>\n<script>",
        f);
  fputs(early_js, f);
  fprintf(f, "</script>\n<style>%s</style></head><body>\n<h1>mpprof report</h1>\n", css);
  plan_section(m, f);
  summary(m, f);
  tensor_cores(m, f);
  findings(m, f);
  layer_table(m, order, charted, f);
  int rc = ops_table(m, f);
  if (rc == 0) rc = charts(m, order, charted, f);
  processes(m, f);
  fprintf(f, "<script>%s</script>\n</body></html>\n", table_js);
  free(order);
  free(charted);
  return rc;
}

int mpprof_write_report_html(const mpprof_model *m, const char *path, mpprof_afile_set *set) {
  mpprof_afile a;
  if (mpprof_afile_open(&a, path, set)) return -1;
  if (write_page(m, a.f)) {
    mpprof_afile_close(&a, false);
    errno = ENOMEM;
    return -1;
  }
  return mpprof_afile_close(&a, true);
}
