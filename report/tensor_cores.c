/* Tensor Core truth per site and layer: which kernels ran on Tensor Cores
 * (hardware counters when the raw file has them, else the kernel-name rules
 * of analysis/kernel_class.h) against what the call was eligible for
 * (analysis/tc_eligibility.h). Decided here rather than in libmpprof.so so
 * that newer rules apply to old raw files. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

static mp_dtype type_of(const mpprof_site *s, const char *role) {
  for (int i = 0; i < s->n_types; i++)
    if (!strcmp(s->types[i].role, role)) return s->types[i].dtype;
  return MP_DTYPE_INVALID;
}

void mpprof_site_gemm_dtypes(const mpprof_site *s, mp_dtype *a, mp_dtype *b, mp_dtype *c,
                             mp_dtype *d) {
  /* Convolutions carry the descriptors' dtypes as x/w/y whatever the
   * direction (dy has y's dtype, dx x's, dw w's); role names are accepted too. */
  *c = MP_DTYPE_INVALID;
  if (!strcmp(s->op, "conv_bwd_data")) {
    *a = type_of(s, "dy"), *b = type_of(s, "w"), *d = type_of(s, "dx");
    if (*a == MP_DTYPE_INVALID) *a = type_of(s, "y");
    if (*d == MP_DTYPE_INVALID) *d = type_of(s, "x");
  } else if (!strcmp(s->op, "conv_bwd_filter")) {
    *a = type_of(s, "x"), *b = type_of(s, "dy"), *d = type_of(s, "dw");
    if (*b == MP_DTYPE_INVALID) *b = type_of(s, "y");
    if (*d == MP_DTYPE_INVALID) *d = type_of(s, "w");
  } else if (type_of(s, "A") != MP_DTYPE_INVALID) {
    *a = type_of(s, "A"), *b = type_of(s, "B"), *c = type_of(s, "C"), *d = type_of(s, "D");
  } else {
    *a = type_of(s, "x"), *b = type_of(s, "w"), *d = type_of(s, "y");
  }
  if (*c == MP_DTYPE_INVALID) *c = *d;
}

bool mpprof_gemm_flop(uint64_t m, uint64_t n, uint64_t k, uint64_t batch, uint64_t *ret) {
  uint64_t f = 2;
  const uint64_t factor[] = {m, n, k, batch ? batch : 1};
  bool fits = true;
  for (int i = 0; i < 4; i++)
    fits = !__builtin_mul_overflow(f, factor[i], &f) && fits;
  /* an empty product (a factor 0) is 0 whatever the others */
  fits = fits || !m || !n || !k;
  *ret = fits ? f : 0;
  return fits;
}

/* 0, or -1 (memory: the reason could not be interned). */
static int eligibility(mpprof_strpool *pool, mpprof_site *s) {
  mp_tc_query q = {
      .a = MP_DTYPE_INVALID, .b = MP_DTYPE_INVALID, .c = MP_DTYPE_INVALID, .d = MP_DTYPE_INVALID};
  q.compute_type = s->compute_type;
  q.math_mode = s->math_mode;
  q.conv_math = s->conv_math_type;
  q.cc_major = s->cc_major;
  q.cc_minor = s->cc_minor;
  q.ptr_align = s->ptr_align;
  mpprof_site_gemm_dtypes(s, &q.a, &q.b, &q.c, &q.d);
  if (s->conv) {
    /* The implicit GEMM of the convolution. */
    /* Unsigned: dimensions come from a file; a product that wraps is nonsense, not UB. */
    const mpprof_conv *cv = s->conv;
    const int64_t *d = cv->dims;
    uint64_t n = (uint64_t)d[0], c = (uint64_t)d[1], h = (uint64_t)d[2], w = (uint64_t)d[3],
             k = (uint64_t)d[4], r = (uint64_t)d[5], sx = (uint64_t)d[6];
    int64_t pe = cv->stride[0]
                     ? (d[2] + 2 * cv->pad[0] - cv->dil[0] * (d[5] - 1) - 1) / cv->stride[0] + 1
                     : 0;
    int64_t qe = cv->stride[1]
                     ? (d[3] + 2 * cv->pad[1] - cv->dil[1] * (d[6] - 1) - 1) / cv->stride[1] + 1
                     : 0;
    uint64_t p = pe > 0 ? (uint64_t)pe : 0, qq = qe > 0 ? (uint64_t)qe : 0;
    /* 3-D: the depth multiplies the output positions, the filter's depth the taps */
    uint64_t dd = 1, t = 1, o = 1;
    if (cv->three) {
      int64_t oe = cv->stride_d
                       ? (cv->d + 2 * cv->pad_d - cv->dil_d * (cv->t - 1) - 1) / cv->stride_d + 1
                       : 0;
      dd = (uint64_t)cv->d, t = (uint64_t)cv->t, o = oe > 0 ? (uint64_t)oe : 0;
    }
    /* per group: c / groups input and k / groups output channels */
    uint64_t g = cv->groups > 1 ? (uint64_t)cv->groups : 1;
    c /= g, k /= g;
    uint64_t npq = n * o * p * qq, crs = c * t * r * sx;
    if (!strcmp(s->op, "conv_bwd_data"))
      q.m = n * dd * h * w, q.n = c, q.k = k * t * r * sx;
    else if (!strcmp(s->op, "conv_bwd_filter"))
      q.m = k, q.n = crs, q.k = npq;
    else
      q.m = npq, q.n = k, q.k = crs;
  } else {
    q.m = s->m, q.n = s->n, q.k = s->k;
    q.lda = s->lda, q.ldb = s->ldb, q.ldc = s->ldc;
  }
  /* 0 (unknown): merged shapes, or a convolution's product past 2^64 */
  if (s->shapes_merged ||
      !mpprof_gemm_flop(q.m, q.n, q.k,
                        s->conv ? (s->conv->groups > 1 ? (uint64_t)s->conv->groups : 1) : s->batch,
                        &s->flop_per_call))
    s->flop_per_call = 0;
  s->elig_known = q.a != MP_DTYPE_INVALID;
  mp_tc_eligibility e;
  memset(&e, 0, sizeof e);
  if (s->elig_known)
    mp_tc_eligible(&q, &e);
  else
    snprintf(e.reason, sizeof e.reason, "operand dtypes unknown");
  /* No dims to judge alignment by: eligible as the dtypes say, efficiency unknown. */
  if (s->shapes_merged && e.efficient) {
    e.efficient = false;
    snprintf(e.reason, sizeof e.reason, "%s: alignment of m, n, k not judged",
             MPPROF_VARIOUS_SHAPES);
  }
  s->elig = (mpprof_site_elig){.eligible = e.eligible,
                               .efficient = e.efficient,
                               .tf32 = e.tf32,
                               .eligible_with_tf32 = e.eligible_with_tf32,
                               .reason = mpprof_intern(pool, e.reason),
                               .path = e.path};
  return s->elig.reason ? 0 : -1;
}

/* Most sites share a few kernel names: each live name (by address; the
 * model's are interned) is classified once, then looked up. */
enum { KMEMO_SLOTS = 256 };
typedef struct kernel_memo {
  const char *name[KMEMO_SLOTS];
  mp_kernel_class cls[KMEMO_SLOTS];
} kernel_memo;

static void classify_name(kernel_memo *km, const char *name, mp_kernel_class *ret) {
  size_t h = (size_t)(((uintptr_t)name * UINT64_C(0x9E3779B97F4A7C15)) >> 56) % KMEMO_SLOTS;
  if (name && km->name[h] == name) {
    *ret = km->cls[h];
    return;
  }
  mp_kernel_classify(name, ret);
  km->name[h] = name;
  km->cls[h] = *ret;
}

static void classify_kernels(kernel_memo *km, mpprof_site *s) {
  s->kernel_ns = s->tc_ns = s->unknown_ns = 0;
  s->tc_used = -1;
  s->tc_source = MP_TC_SRC_UNKNOWN;
  bool yes = false, all_no = s->n_kernels > 0;
  for (size_t i = 0; i < s->n_kernels; i++) {
    mpprof_kernel *k = &s->kernels[i];
    if (k->counters_tc >= 0) {
      memset(&k->cls, 0, sizeof k->cls);
      k->cls.tc = k->counters_tc ? MP_TC_YES : MP_TC_NO;
      k->cls.source = MP_TC_SRC_COUNTERS;
      k->cls.a_dtype = k->cls.acc_dtype = MP_DTYPE_INVALID;
    } else {
      classify_name(km, k->name, &k->cls);
    }
    s->kernel_ns += k->gpu_ns;
    if (k->cls.tc == MP_TC_YES) s->tc_ns += k->gpu_ns, yes = true;
    if (k->cls.tc == MP_TC_UNKNOWN) s->unknown_ns += k->gpu_ns;
    if (k->cls.tc != MP_TC_NO) all_no = false;
    /* The best source of any deciding kernel: counters over names. */
    if (k->cls.tc != MP_TC_UNKNOWN && k->cls.source > s->tc_source) s->tc_source = k->cls.source;
  }
  s->tc_used = yes ? 1 : all_no ? 0 : -1;
}

int mpprof_tensor_cores(mpprof_model *m) {
  int rc = 0;
  mpprof_tc_summary *t = &m->tc;
  t->cupti_notes = cJSON_CreateArray();
  t->counters_notes = cJSON_CreateArray();
  t->counters_unavailable_note = -1;
  for (size_t i = 0; i < m->n_procs; i++) {
    const mpprof_process *p = &m->procs[i];
    if (p->tc_counters_status) {
      t->counters_requested = true;
      char *cn = NULL;
      if (!strcmp(p->tc_counters_status, "unavailable"))
        cn = mpprof_asprintf("%s (pid %" PRId64 "): hardware counters unavailable: %s", p->file,
                             p->pid, p->tc_counters_reason ? p->tc_counters_reason : "no reason");
      else if (strcmp(p->tc_counters_status, "ok"))
        cn = mpprof_asprintf("%s (pid %" PRId64 "): hardware counters never ran (%s)", p->file,
                             p->pid, p->tc_counters_status);
      if (cn && t->counters_unavailable_note < 0 && t->counters_notes)
        t->counters_unavailable_note = cJSON_GetArraySize(t->counters_notes);
      if (!cn && p->tc_counters_ops_unmatched > 0) {
        /* Counters ran, but some measured calls got no verdict (tc_counters.c pairs
         * a call's ranges with its own kernels only when the counts agree). */
        t->counters_ops += p->tc_counters_ops_profiled;
        t->counters_unmatched += p->tc_counters_ops_unmatched;
        cn = mpprof_asprintf(
            "%s (pid %" PRId64 "): hardware counters decided nothing for %" PRId64 " of %" PRId64
            " profiled calls: their kernel records could not be paired with the counter ranges "
            "(kernels launched under another call's id, as grouped GEMMs and fused cuDNN graphs "
            "do, or by another thread during the call, or ranges dropped)",
            p->file, p->pid, p->tc_counters_ops_unmatched, p->tc_counters_ops_profiled);
      } else if (!cn) {
        t->counters_ops += p->tc_counters_ops_profiled;
      }
      if (cn && t->counters_notes) cJSON_AddItemToArray(t->counters_notes, cJSON_CreateString(cn));
      free(cn);
    }
    const char *why = NULL;
    if (!strcmp(p->cupti_status, "held_by_other_subscriber"))
      why = "CUPTI was held by another tool (one subscriber per process): no kernel data";
    else if (!strcmp(p->cupti_status, MP_CUPTI_HELD_BY_PROGRAM))
      why = "the program registered CUPTI activity callbacks of its own (without subscribing), "
            "so mpprof left CUPTI to it: no kernel data";
    else if (!strcmp(p->cupti_status, MP_CUPTI_TAKEN_BY_PROGRAM))
      why = "kernel records incomplete: the program registered CUPTI activity callbacks of its own "
            "(without subscribing) during the run, which replaced mpprof's: kernels after that "
            "went to the program";
    else if (!strcmp(p->cupti_status, "unavailable"))
      why = "CUPTI was not available: no kernel data";
    else if (!strcmp(p->cupti_status, "disabled"))
      why = "kernel collection was disabled";
    else if (!strcmp(p->cupti_status, MP_CUPTI_FORKED_AFTER_INIT))
      why = "no kernel data: the process was forked after its parent had initialised CUDA or "
            "CUPTI, whose state a fork child must not touch (fork before the first CUDA call, or "
            "use spawn, to profile its kernels)";
    else if (!strcmp(p->cupti_status, "error"))
      why = "CUPTI failed: no kernel data";
    else if (!strcmp(p->cupti_status, "missing"))
      why = "the raw file has no CUPTI status";
    char *note = NULL;
    if (why)
      note = mpprof_asprintf("%s (pid %" PRId64 "): %s", p->file, p->pid, why);
    else if (p->cupti_dropped > 0)
      note = mpprof_asprintf("%s (pid %" PRId64 "): %" PRId64 " CUPTI records dropped", p->file,
                             p->pid, p->cupti_dropped);
    if (note && t->cupti_notes) cJSON_AddItemToArray(t->cupti_notes, cJSON_CreateString(note));
    free(note);
  }
  kernel_memo km = {0};
  for (size_t i = 0; i < m->n_sites; i++) {
    mpprof_site *s = &m->sites[i];
    if (eligibility(&m->strings, s)) rc = -1;
    classify_kernels(&km, s);
    for (size_t k = 0; k < s->n_kernels; k++)
      if (s->kernels[k].cls.source == MP_TC_SRC_COUNTERS)
        t->kernels_by_counters++;
      else if (s->kernels[k].cls.tc != MP_TC_UNKNOWN)
        t->kernels_by_name++;
    if (s->n_kernels) t->kernel_data = true;
    t->gemm_conv_kernel_ns += s->kernel_ns;
    t->tc_ns += s->tc_ns;
    t->unknown_ns += s->unknown_ns;
    if (s->elig.eligible) t->sites_eligible++;
    if (s->tc_used == 1) t->sites_on_tc++;
    if (s->elig.eligible && s->tc_used == 0) t->sites_eligible_not_used++;
    if (s->elig.eligible_with_tf32) t->sites_eligible_with_tf32++;

    mpprof_layer *l = &m->layers[s->layer_idx];
    if (s->elig_known) {
      if (s->elig.eligible)
        l->tc_eligible = 1;
      else if (l->tc_eligible < 0)
        l->tc_eligible = 0;
    }
    if (s->elig.eligible_with_tf32) l->tc_eligible_with_tf32 = true;
    if (s->tc_used == 1)
      l->tc_used = 1;
    else if (s->tc_used == 0 && l->tc_used < 0)
      l->tc_used = 0;
    if (s->tc_source > l->tc_source) l->tc_source = s->tc_source;
    l->kernel_ns += s->kernel_ns;
    l->tc_ns += s->tc_ns;
  }
  return rc;
}
