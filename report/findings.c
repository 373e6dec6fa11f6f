/* Findings: what the user should do, each with the numbers that show why and
 * a concrete action, ranked by impact (GPU time of the ops concerned, else the
 * number of values concerned).
 *
 * One small rule function per kind, listed in `rules` below: layer rules run
 * for every layer with a verdict (from its advice), model rules once (Tensor
 * Core findings from the per-site classification, the global loss scale);
 * problems are then ranked, and notes on the data itself (skipped files,
 * checkpoints, missing kernel data) follow in table order. Adding a kind is a
 * rule function, a row in `rules` and a test in tests/report/test_findings.c. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"
#include "report/tensorio/stats_json.h"

static mpprof_finding *add(mpprof_model *m, const char *kind, const char *severity,
                           const char *layer, char *message, char *action) {
  if (!message || !action ||
      mpprof_grow((void **)&m->findings, &m->cap_findings, m->n_findings + 1,
                  sizeof *m->findings)) {
    free(message);
    free(action);
    return NULL;
  }
  mpprof_finding *f = &m->findings[m->n_findings];
  f->kind = strdup(kind);
  f->severity = strdup(severity);
  f->layer = mpprof_strdup(layer);
  f->message = message;
  f->action = action;
  f->evidence = cJSON_CreateObject();
  if (!f->kind || !f->severity || (layer && !f->layer) || !f->evidence) {
    free(f->kind);
    free(f->severity);
    free(f->layer);
    free(message);
    free(action);
    cJSON_Delete(f->evidence);
    memset(f, 0, sizeof *f);
    return NULL;
  }
  m->n_findings++;
  return f;
}

static uint64_t layer_gpu(const mpprof_layer *l) {
  return l->has_gpu_ns ? l->gpu_ns : l->kernel_ns;
}

static const char *layer_label(const mpprof_layer *l) {
  return l->name[0] ? l->name : "(no NVTX range)";
}

static void ev_num(cJSON *e, const char *k, double v) {
  cJSON_AddItemToObject(e, k, mpprof_json_double(v));
}

/* Worst forward tensor of a layer by fp16 overflow, then by underflow. */
static const mpprof_layer_tensor *worst(const mpprof_layer *l, mp_tclass cls, bool overflow) {
  const mpprof_layer_tensor *w = NULL;
  double wv = 0;
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->cls != cls || !t->has_values) continue;
    double v = overflow ? t->adv.fp16_overflow_fraction : t->adv.fp16_underflow_fraction;
    if (v > wv) w = t, wv = v;
  }
  return w;
}

/* ---- layer rules: called only for layers with a verdict (adv.known) ---- */

static int rule_nonfinite_values(mpprof_model *m, const mpprof_layer *l) {
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (!t->has_values || !t->adv.nonfinite_input) continue;
    mpprof_finding *f = add(
        m, "nonfinite_values", "high", l->name,
        mpprof_asprintf("%s: %s already holds NaN or Inf (%" PRIu64 " NaN, %" PRIu64
                        " +Inf, %" PRIu64 " -Inf of %" PRIu64 " values)",
                        layer_label(l), t->name, t->st.nans, t->st.pos_infs, t->st.neg_infs,
                        t->st.count),
        strdup("find where the non-finite values first appear (an overflow upstream, a division "
               "by zero, a too-large learning rate) before lowering precision"));
    if (!f) return -1;
    cJSON_AddStringToObject(f->evidence, "tensor", t->name);
    ev_num(f->evidence, "nans", (double)t->st.nans);
    ev_num(f->evidence, "infs", (double)(t->st.pos_infs + t->st.neg_infs));
    f->impact_gpu_ns = layer_gpu(l);
    f->impact_elements = t->st.count;
  }
  return 0;
}

static int rule_fp16_overflow(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *ov = worst(l, MP_TCLASS_FORWARD, true);
  if (!ov) return 0;
  double fp16_max = mp_format_of(MP_FP16)->max_finite;
  bool fp32 = l->adv.rec == MP_REC_FP32;
  mpprof_finding *f =
      add(m, "fp16_overflow", "high", l->name,
          mpprof_asprintf("%s: %s reaches %.4g > fp16 max %.6g in %.3g%% of values", layer_label(l),
                          ov->name, ov->st.absmax, fp16_max, 100 * ov->adv.fp16_overflow_fraction),
          strdup(fp32 ? "keep this layer in fp32 (it does not fit bf16 either)"
                      : "keep this layer in bf16 or fp32 (exclude it from fp16 autocast)"));
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "tensor", ov->name);
  ev_num(f->evidence, "absmax", ov->st.absmax);
  ev_num(f->evidence, "fp16_max", fp16_max);
  ev_num(f->evidence, "overflow_fraction", ov->adv.fp16_overflow_fraction);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = ov->st.casts[MP_TGT_FP16][MP_CAST_OVERFLOW];
  return 0;
}

static int rule_fp16_forward_underflow(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *fu = worst(l, MP_TCLASS_FORWARD, false);
  if (!fu || fu->adv.fp16 == MP_FP16_SAFE || fu->adv.fp16_overflow_fraction != 0 ||
      fu->adv.fp16_underflow_fraction <= m->params.underflow_max)
    return 0;
  mpprof_finding *f =
      add(m, "fp16_forward_underflow", "medium", l->name,
          mpprof_asprintf("%s: %s flushes to zero in fp16 for %.3g%% of values (smallest |x| "
                          "%.4g); a loss scale does not reach forward tensors",
                          layer_label(l), fu->name, 100 * fu->adv.fp16_underflow_fraction,
                          fu->st.min_abs_nonzero),
          strdup(l->adv.rec == MP_REC_FP32 ? "keep this layer in fp32" : "run this layer in bf16"));
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "tensor", fu->name);
  ev_num(f->evidence, "underflow_fraction", fu->adv.fp16_underflow_fraction);
  ev_num(f->evidence, "min_abs_nonzero", fu->st.min_abs_nonzero);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = fu->st.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW];
  return 0;
}

/* The gradient the two gradient rules are about: the worst by fp16 underflow,
 * when it is not fp16-safe. */
static const mpprof_layer_tensor *unsafe_gradient(const mpprof_layer *l) {
  const mpprof_layer_tensor *gu = worst(l, MP_TCLASS_GRADIENT, false);
  return gu && gu->adv.fp16 != MP_FP16_SAFE ? gu : NULL;
}

static void gradient_evidence(mpprof_finding *f, const mpprof_layer *l,
                              const mpprof_layer_tensor *gu) {
  cJSON_AddStringToObject(f->evidence, "tensor", gu->name);
  ev_num(f->evidence, "underflow_fraction", gu->adv.fp16_underflow_fraction);
  ev_num(f->evidence, "overflow_fraction", gu->adv.fp16_overflow_fraction);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = gu->st.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW];
}

static int rule_gradient_underflow(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *gu = unsafe_gradient(l);
  const mpprof_layer_advice *a = &l->adv;
  /* The layer's window when it runs in fp16, else what the gradients alone allow. */
  if (!gu || !(a->has_window || gu->adv.has_window)) return 0;
  int wlo = a->has_window ? a->window_lo : gu->adv.window_lo;
  int whi = a->has_window ? a->window_hi : gu->adv.window_hi;
  bool scaled = a->rec == MP_REC_FP16_LOSS_SCALE;
  mpprof_finding *f =
      add(m, "gradient_underflow", scaled ? "medium" : "low", l->name,
          mpprof_asprintf("gradients of %s (%s) flush to zero in fp16 for %.3g%% of values at "
                          "scale 1; every loss scale in [2^%d, 2^%d] fits%s",
                          layer_label(l), gu->name, 100 * gu->adv.fp16_underflow_fraction, wlo, whi,
                          whi == m->params.scale_log2_max ? " (the search stops there)" : ""),
          scaled ? mpprof_asprintf("train this layer in fp16 with a loss scale in [2^%d, 2^%d] "
                                   "(e.g. 2^%d), or use bf16",
                                   wlo, whi, wlo + (whi - wlo) / 2)
                 : mpprof_asprintf("nothing for the gradients alone: the layer is advised %s "
                                   "for its other tensors",
                                   mp_recommendation_name(a->rec)));
  if (!f) return -1;
  cJSON *w = cJSON_AddArrayToObject(f->evidence, "window_log2");
  cJSON_AddItemToArray(w, cJSON_CreateNumber(wlo));
  cJSON_AddItemToArray(w, cJSON_CreateNumber(whi));
  gradient_evidence(f, l, gu);
  return 0;
}

static int rule_gradient_range(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_tensor *gu = unsafe_gradient(l);
  if (!gu || l->adv.has_window || gu->adv.has_window) return 0;
  mpprof_finding *f = add(
      m, "gradient_range", "high", l->name,
      mpprof_asprintf("gradients of %s span more than fp16 holds: %.3g%% flush to zero "
                      "and %.3g%% overflow at scale 1, and no single loss scale fits "
                      "(|x| from %.4g to %.4g)",
                      layer_label(l), 100 * gu->adv.fp16_underflow_fraction,
                      100 * gu->adv.fp16_overflow_fraction, gu->st.min_abs_nonzero, gu->st.absmax),
      strdup(l->adv.rec == MP_REC_FP32 ? "keep this layer's gradients in fp32"
                                       : "use bf16 for this layer"));
  if (!f) return -1;
  gradient_evidence(f, l, gu);
  return 0;
}

static int rule_bf16_unsafe(mpprof_model *m, const mpprof_layer *l) {
  if (l->adv.rec != MP_REC_FP32) return 0;
  mpprof_finding *f =
      add(m, "bf16_unsafe", "high", l->name,
          mpprof_asprintf("%s: values exceed bf16 (%.3g%% overflow, %.3g%% flush "
                          "to zero)",
                          layer_label(l), l->bf16_overflow_pct, l->bf16_underflow_pct),
          strdup("keep this layer in fp32"));
  if (!f) return -1;
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = l->elements;
  return 0;
}

/* An opportunity: the layer computes in fp32 but its values allow less. */
static int rule_lower_precision_possible(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_advice *a = &l->adv;
  bool fp32_inputs = false;
  for (size_t i = 0; i < l->n_sites && !fp32_inputs; i++) {
    const mpprof_site *s = &m->sites[l->first_site + i];
    for (int t = 0; t < s->n_types; t++)
      if (s->types[t].dtype == MP_FP32 &&
          (!strcmp(s->types[t].role, "A") || !strcmp(s->types[t].role, "x")))
        fp32_inputs = true;
  }
  if (!fp32_inputs ||
      !(a->rec == MP_REC_FP16 || a->rec == MP_REC_FP16_LOSS_SCALE || a->rec == MP_REC_BF16))
    return 0;
  mpprof_finding *f =
      add(m, "lower_precision_possible", "medium", l->name,
          mpprof_asprintf("%s runs fp32 GEMMs/convs but its values fit %s", layer_label(l),
                          a->rec == MP_REC_BF16   ? "bf16"
                          : a->rec == MP_REC_FP16 ? "fp16 as is"
                                                  : "fp16 with a loss scale"),
          mpprof_asprintf("run this layer in %s (autocast), halving its memory traffic and using "
                          "Tensor Cores",
                          a->rec == MP_REC_BF16 ? "bf16" : "fp16"));
  if (!f) return -1;
  cJSON_AddStringToObject(f->evidence, "recommended", mp_recommendation_name(a->rec));
  ev_num(f->evidence, "fp16_overflow_pct", l->fp16_overflow_pct);
  ev_num(f->evidence, "fp16_underflow_pct", l->fp16_underflow_pct);
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = l->elements;
  return 0;
}

static int rule_fp8_candidate(mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_advice *a = &l->adv;
  if (a->fp8_e4m3_fits != 1 || a->fp8_e5m2_fits == 0) return 0;
  mpprof_finding *f = add(m, "fp8_candidate", "info", l->name,
                          mpprof_asprintf("%s fits fp8 with per-tensor scaling (e4m3 forward "
                                          "%.3g%% flush to zero%s)",
                                          layer_label(l), l->e4m3_underflow_pct,
                                          a->fp8_e5m2_fits == 1 ? ", e5m2 gradients fit too" : ""),
                          strdup("consider FP8 (e4m3 forward, e5m2 gradients) with per-tensor "
                                 "amax scaling, e.g. Transformer Engine"));
  if (!f) return -1;
  f->impact_gpu_ns = layer_gpu(l);
  f->impact_elements = 0; /* an option, not a problem: ranks after problems of equal time */
  return 0;
}

/* The same predicate as the Tensor Core section's "eligible with TF32". */
static bool is_fp32_gemm_without_tf32(const mpprof_site *s) {
  return s->elig.eligible_with_tf32;
}

/* ---- model rules: once per report ---- */

static int rule_fp32_without_tf32(mpprof_model *m) {
  size_t n = 0;
  uint64_t calls = 0, gpu = 0, elems = 0;
  cJSON *ids = cJSON_CreateArray();
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    if (!is_fp32_gemm_without_tf32(s)) continue;
    n++;
    calls += s->calls;
    gpu += s->has_gpu_ns ? s->gpu_ns : s->kernel_ns;
    elems += s->elements;
    if (cJSON_GetArraySize(ids) < 50) cJSON_AddItemToArray(ids, mpprof_json_u64(s->id));
  }
  if (!n) {
    cJSON_Delete(ids);
    return 0;
  }
  mpprof_finding *f =
      add(m, "fp32_without_tf32", "medium", NULL,
          mpprof_asprintf("%zu fp32 GEMM/conv site%s (%" PRIu64 " calls) run without TF32: "
                          "eligible for Tensor Cores with TF32, but their compute type and math "
                          "mode keep them off",
                          n, n == 1 ? "" : "s", calls),
          strdup("enable TF32 (torch.backends.cuda.matmul.allow_tf32 = True, "
                 "cublasSetMathMode(CUBLAS_TF32_TENSOR_OP_MATH) or CUBLAS_COMPUTE_32F_FAST_TF32) "
                 "or autocast to bf16/fp16"));
  if (!f) {
    cJSON_Delete(ids);
    return -1;
  }
  cJSON_AddItemToObject(f->evidence, "sites", ids);
  ev_num(f->evidence, "calls", (double)calls);
  f->impact_gpu_ns = gpu;
  f->impact_elements = elems;
  return 0;
}

static const char *site_layer_label(const mpprof_site *s) {
  return s->layer_name[0] ? s->layer_name : "(no NVTX range)";
}

static int rule_tensor_cores_not_used(mpprof_model *m) {
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    if (!s->elig.eligible || s->tc_used != 0) continue;
    const char *k0 = s->n_kernels ? s->kernels[0].name : "";
    mpprof_finding *f =
        add(m, "tensor_cores_not_used", "high", s->layer_name,
            mpprof_asprintf("%s: %s site %zu (m=%" PRIu64 " n=%" PRIu64 " k=%" PRIu64
                            ") is eligible for Tensor Cores but its kernels ran on CUDA cores "
                            "(%s%s)%s%s",
                            site_layer_label(s), s->api, s->id, s->m, s->n, s->k, k0,
                            s->n_kernels > 1 ? ", ..." : "", s->elig.efficient ? "" : ": ",
                            s->elig.efficient ? "" : s->elig.reason),
            strdup(s->elig.efficient
                       ? "check what made the library pick a CUDA-core kernel (math mode "
                         "PEDANTIC, a workspace limit, a deterministic/heuristic setting)"
                       : "pad m, n, k and leading dimensions to multiples of 16 bytes (8 fp16 "
                         "elements) and align pointers to 16 bytes"));
    if (!f) return -1;
    cJSON_AddItemToObject(f->evidence, "site", mpprof_json_u64(s->id));
    cJSON_AddStringToObject(f->evidence, "eligibility",
                            s->elig.efficient && s->elig.path ? s->elig.path : s->elig.reason);
    cJSON *kn = cJSON_AddArrayToObject(f->evidence, "kernels");
    for (size_t k = 0; k < s->n_kernels; k++)
      cJSON_AddItemToArray(kn, cJSON_CreateString(s->kernels[k].name));
    f->impact_gpu_ns = s->kernel_ns;
    f->impact_elements = s->elements;
  }
  return 0;
}

static int rule_tensor_cores_inefficient(mpprof_model *m) {
  for (size_t i = 0; i < m->n_sites; i++) {
    const mpprof_site *s = &m->sites[i];
    if (!s->elig.eligible || s->tc_used == 0 || s->elig.efficient) continue;
    mpprof_finding *f =
        add(m, "tensor_cores_inefficient", "low", s->layer_name,
            mpprof_asprintf("%s: %s site %zu (m=%" PRIu64 " n=%" PRIu64 " k=%" PRIu64
                            ") is not aligned for efficient Tensor Core use: %s",
                            site_layer_label(s), s->api, s->id, s->m, s->n, s->k, s->elig.reason),
            strdup("pad m, n, k and leading dimensions to multiples of 16 bytes and align "
                   "pointers to 16 bytes"));
    if (!f) return -1;
    cJSON_AddItemToObject(f->evidence, "site", mpprof_json_u64(s->id));
    f->impact_gpu_ns = s->has_gpu_ns ? s->gpu_ns : s->kernel_ns;
    f->impact_elements = 0;
  }
  return 0;
}

static int rule_loss_scale_conflict(mpprof_model *m) {
  const mpprof_loss_scale *g = &m->loss_scale;
  if (!g->applicable || g->has_window) return 0;
  char *names = cJSON_PrintUnformatted(g->limited_by);
  mpprof_finding *f = add(m, "loss_scale_conflict", "high", NULL,
                          mpprof_asprintf("no single loss scale fits every fp16 layer's "
                                          "gradients; the conflict is between %s",
                                          names ? names : "layers"),
                          strdup("run the layers at one end of the conflict in bf16, or scale "
                                 "their gradients separately"));
  free(names);
  if (!f) return -1;
  cJSON_AddItemToObject(f->evidence, "limited_by", cJSON_Duplicate(g->limited_by, true));
  f->impact_gpu_ns = m->total_gpu_ns;
  return 0;
}

/* ---- notes on the data: after the ranked problems ---- */

static int rule_no_cuda_ops(mpprof_model *m) {
  if (!m->n_procs || m->total_calls != 0) return 0;
  return add(m, "no_cuda_ops", "info", NULL,
             strdup("the profiled program made no cuBLAS, cuBLASLt or cuDNN matrix calls: there "
                    "is nothing to advise on"),
             strdup("check that the program uses the GPU libraries mpprof hooks (see README) and "
                    "that it ran under mpprof"))
             ? 0
             : -1;
}

static int rule_skipped_files(mpprof_model *m) {
  if (!m->n_skipped) return 0;
  return add(m, "skipped_files", "info", NULL,
             mpprof_asprintf("%zu raw file%s skipped (unreadable, or a duplicate of a process "
                             "already read; see skipped_files)",
                             m->n_skipped, m->n_skipped == 1 ? " was" : "s were"),
             strdup("the report covers the remaining processes only"))
             ? 0
             : -1;
}

static int rule_incomplete_process(mpprof_model *m) {
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    if (p->final && !p->incomplete) continue;
    mpprof_finding *f =
        add(m, "incomplete_process", "info", NULL,
            mpprof_asprintf("%s (pid %" PRId64 "): %s", p->file, p->pid,
                            !p->final ? "checkpoint only: the process did not finish, its "
                                        "data is incomplete"
                                      : "the profiler hit a limit; see incomplete_reasons"),
            strdup(!p->final ? "let the program exit normally, or accept partial data"
                             : "raise the limit named in incomplete_reasons (MPPROF_MAX_SITES, "
                               "MPPROF_MAX_EVENTS)"));
    if (!f) return -1;
    cJSON_AddItemToObject(f->evidence, "incomplete_reasons",
                          cJSON_Duplicate(p->incomplete_reasons, true));
  }
  return 0;
}

static int rule_no_kernel_data(mpprof_model *m) {
  if (!m->total_calls || m->tc.kernel_data) return 0;
  mpprof_finding *f =
      add(m, "no_kernel_data", "info", NULL,
          strdup("no GPU kernel records: Tensor Core use is unknown (numerics are complete)"),
          strdup("run without other profilers attached (CUPTI allows one subscriber) on a "
                 "machine with CUPTI"));
  if (!f) return -1;
  cJSON_AddItemToObject(f->evidence, "notes", cJSON_Duplicate(m->tc.cupti_notes, true));
  return 0;
}

static int rule_tc_counters_unmatched(mpprof_model *m) {
  if (!m->tc.counters_requested || m->tc.counters_unmatched <= 0) return 0;
  mpprof_finding *f = add(
      m, "tc_counters_unmatched", "info", NULL,
      mpprof_asprintf("--tc-counters measured %" PRId64 " calls but decided nothing for %" PRId64
                      " of them: their kernels could not be paired with the counter ranges; "
                      "kernel-name rules decided those",
                      m->tc.counters_ops, m->tc.counters_unmatched),
      strdup("counters pair a call with the kernels it launches under its own id: calls "
             "that launch kernels for several ops at once (grouped GEMMs, fused cuDNN "
             "graphs) or threads launching kernels concurrently cannot be measured; "
             "profile such calls in a single-threaded run, or rely on the kernel names"));
  if (!f) return -1;
  ev_num(f->evidence, "ops_profiled", (double)m->tc.counters_ops);
  ev_num(f->evidence, "ops_unmatched", (double)m->tc.counters_unmatched);
  cJSON_AddItemToObject(f->evidence, "notes", cJSON_Duplicate(m->tc.counters_notes, true));
  return 0;
}

static int rule_tc_counters_unavailable(mpprof_model *m) {
  if (!m->tc.counters_requested || m->tc.counters_unavailable_note < 0 ||
      m->tc.counters_unavailable_note >= cJSON_GetArraySize(m->tc.counters_notes))
    return 0;
  mpprof_finding *f = add(
      m, "tc_counters_unavailable", "info", NULL,
      mpprof_asprintf(
          "--tc-counters was requested but hardware counters did not decide "
          "(%s); kernel-name rules decided Tensor Core use",
          cJSON_GetArrayItem(m->tc.counters_notes, m->tc.counters_unavailable_note)->valuestring),
      strdup("allow GPU performance counters (root, or the driver option "
             "NVreg_RestrictProfilingToAdminUsers=0), run without other profilers, on a "
             "CUPTI with the range profiler (CUDA 12.6 update 2 or newer)"));
  if (!f) return -1;
  cJSON_AddItemToObject(f->evidence, "notes", cJSON_Duplicate(m->tc.counters_notes, true));
  return 0;
}

/* Every kind, in the order the rules run (layer rules layer by layer). */
const mpprof_finding_rule mpprof_finding_rules[] = {
    {"nonfinite_values", rule_nonfinite_values, NULL, false},
    {"fp16_overflow", rule_fp16_overflow, NULL, false},
    {"fp16_forward_underflow", rule_fp16_forward_underflow, NULL, false},
    {"gradient_underflow", rule_gradient_underflow, NULL, false},
    {"gradient_range", rule_gradient_range, NULL, false},
    {"bf16_unsafe", rule_bf16_unsafe, NULL, false},
    {"lower_precision_possible", rule_lower_precision_possible, NULL, false},
    {"fp8_candidate", rule_fp8_candidate, NULL, false},
    {"fp32_without_tf32", NULL, rule_fp32_without_tf32, false},
    {"tensor_cores_not_used", NULL, rule_tensor_cores_not_used, false},
    {"tensor_cores_inefficient", NULL, rule_tensor_cores_inefficient, false},
    {"loss_scale_conflict", NULL, rule_loss_scale_conflict, false},
    {"no_cuda_ops", NULL, rule_no_cuda_ops, true},
    {"skipped_files", NULL, rule_skipped_files, true},
    {"incomplete_process", NULL, rule_incomplete_process, true},
    {"no_kernel_data", NULL, rule_no_kernel_data, true},
    {"tc_counters_unavailable", NULL, rule_tc_counters_unavailable, true},
    {"tc_counters_unmatched", NULL, rule_tc_counters_unmatched, true},
};
const size_t mpprof_n_finding_rules = sizeof mpprof_finding_rules / sizeof mpprof_finding_rules[0];

int mpprof_finding_rule_run(mpprof_model *m, const mpprof_finding_rule *r) {
  if (r->model) return r->model(m);
  for (size_t i = 0; i < m->n_layers; i++)
    if (m->layers[i].adv.known && r->layer(m, &m->layers[i])) return -1;
  return 0;
}

static int sev_rank(const char *s) {
  return !strcmp(s, "high") ? 0 : !strcmp(s, "medium") ? 1 : !strcmp(s, "low") ? 2 : 3;
}

static int finding_cmp(const void *a, const void *b) {
  const mpprof_finding *x = a, *y = b;
  /* Severity first (a value that overflows fp16 breaks training; a missed
   * Tensor Core only slows it), then impact within a severity; "info"
   * (options, notes) last. */
  int c = sev_rank(x->severity) - sev_rank(y->severity);
  if (c) return c;
  if (x->impact_gpu_ns != y->impact_gpu_ns) return x->impact_gpu_ns > y->impact_gpu_ns ? -1 : 1;
  if (x->impact_elements != y->impact_elements)
    return x->impact_elements > y->impact_elements ? -1 : 1;
  c = strcmp(x->layer ? x->layer : "", y->layer ? y->layer : "");
  return c ? c : strcmp(x->kind, y->kind);
}

int mpprof_build_findings(mpprof_model *m) {
  const mpprof_finding_rule *r = mpprof_finding_rules, *end = r + mpprof_n_finding_rules;
  for (size_t i = 0; i < m->n_layers; i++) /* layer by layer: ties keep this order */
    for (const mpprof_finding_rule *k = r; k < end; k++)
      if (k->layer && m->layers[i].adv.known && k->layer(m, &m->layers[i])) return -1;
  for (const mpprof_finding_rule *k = r; k < end; k++)
    if (k->model && !k->note && k->model(m)) return -1;
  /* Problems rank by impact; notes about the data (impact 0) go last. */
  if (m->n_findings) qsort(m->findings, m->n_findings, sizeof *m->findings, finding_cmp);
  for (const mpprof_finding_rule *k = r; k < end; k++)
    if (k->note && k->model(m)) return -1;
  return 0;
}
