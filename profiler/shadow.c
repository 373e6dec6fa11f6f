/* Shadow execution (`mpprof run --shadow[=N]`): every Nth call of a GEMM
 * site (and of a legacy cuDNN convolution on host memory, as its implicit
 * GEMM), after the real call returned, re-computes the product from
 * the operands with analysis/shadow.h's definitions (reference and candidate
 * precisions) and merges the errors into the site. It only reads A and B and
 * writes its own memory, so the program's results do not change.
 *
 * Host-readable operands (simcuda, host-visible memory) are shadowed here, at
 * once. Device operands go to profiler/gpu/devshadow.c: enqueued behind the
 * op on a private stream, delivered later (a later shadowed call, or exit)
 * to device_done; their loss scale comes from the site's earlier scans of the
 * role, and delayed scaling's history grows as results arrive.
 *
 * Shadow work is serialised by one mutex, which also guards every site's
 * shadow state; lock order: site lock, then it (the site lock is never taken
 * under it). */
#include "mpp.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/scan.h"
#include "analysis/raw_format.h"
#include "analysis/shadow.h"
#include "jsonw.h"
#include "profiler/gpu/gpu.h"
#include "profiler/hostmem.h"
#include "profiler/call.h"
#include "profiler/op.h"
#include "profiler/shadow.h"
#include "profiler/sites.h"

/* Why a sampled call was not shadowed: analysis/raw_format.h's table. */
typedef enum shadow_skip {
#define X(id, json, doc) SKIP_##id,
  MP_RAW_SHADOW_SKIPPED(X)
#undef X
      SKIP_COUNT
} shadow_skip;

static const char *const skip_names[SKIP_COUNT] = {
#define X(id, json, doc) json,
    MP_RAW_SHADOW_SKIPPED(X)
#undef X
};

struct mpp_shadow_site {
  uint64_t skipped[SKIP_COUNT];
  mp_shadow_agg agg;
  mp_amax_history hist[2]; /* A, B: delayed scaling */
};

static pthread_mutex_t shadow_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t shadow_once = PTHREAD_ONCE_INIT;

static void shadow_init(void) {
  mpp_fork_protect(&shadow_mu);
}

/* One malloc block, no pointers inside: the site frees it with free(). */
static struct mpp_shadow_site *shadow_site_new(void) {
  struct mpp_shadow_site *s = malloc(sizeof *s);
  if (!s) return NULL;
  memset(s->skipped, 0, sizeof s->skipped);
  mp_shadow_agg_init(&s->agg);
  mp_amax_history_init(&s->hist[0]);
  mp_amax_history_init(&s->hist[1]);
  return s;
}

/* The site's shadow state, made on first use (a stable pointer); NULL on ENOMEM. */
static struct mpp_shadow_site *site_state(int site) {
  struct mpp_shadow_site *s = mpp_site_shadow_install(site, NULL);
  if (s) return s;
  struct mpp_shadow_site *fresh = shadow_site_new();
  s = mpp_site_shadow_install(site, fresh);
  if (s != fresh) free(fresh); /* another thread's came first */
  return s;
}

static const mpp_role *role_named(const mpp_op *op, const char *name) {
  for (int i = 0; i < op->nroles; i++)
    if (!strcmp(op->roles[i].name, name)) return &op->roles[i];
  return NULL;
}

/* Every matrix the operand holds is host memory. */
static bool operand_readable(const mpp_role *r, int64_t batch) {
  if (!r->ptr_array) return mpp_host_readable(r->view.data);
  if (!mpp_host_readable(r->ptr_array)) return false;
  for (int64_t b = 0; b < batch; b++)
    if (!mpp_host_readable(r->ptr_array[b])) return false;
  return true;
}

static bool on_device(const void *p) {
  mpp_mem_kind k = mpp_cuda_pointer_kind(p);
  return k == MPP_MEM_DEVICE || k == MPP_MEM_MANAGED;
}

/* The operand (or its pointer array) is device or managed memory. */
static bool operand_on_device(const mpp_role *r) {
  return on_device(r->ptr_array ? (const void *)r->ptr_array : r->view.data);
}

static bool operand_of(const mpp_role *r, char trans, mp_shadow_operand *o) {
  if (!r || !r->present || r->unscannable != MPP_NS_COUNT) return false;
  o->dtype = r->view.dtype;
  o->data = r->view.data;
  o->ptrs = r->ptr_array;
  o->ld = (int64_t)r->view.ld;
  o->stride = r->view.batch_stride;
  o->trans = trans == 'T' || trans == 'C';
  return trans == 'N' || o->trans;
}

/* The loss scale exponent an operand is rounded at in fp16_loss_scaled. */
static int operand_loss_scale(const mpp_role *r, int64_t batch) {
  if (!r || !r->present || r->unscannable != MPP_NS_COUNT) return 0;
  mp_stats *s = malloc(sizeof *s);
  if (!s) return 0;
  mp_stats_init(s, r->view.dtype);
  int rc = 0;
  if (r->ptr_array) {
    for (int64_t b = 0; rc == 0 && b < batch; b++) {
      mp_view v = r->view;
      v.data = r->ptr_array[b];
      v.batch = 1;
      rc = mp_scan(s, &v);
    }
  } else {
    rc = mp_scan(s, &r->view);
  }
  int ls = rc == 0 ? mp_shadow_loss_scale_log2(s) : 0;
  free(s);
  return ls;
}

static uint64_t shadow_cap(void) {
  return mpp_cfg.shadow_max_mb << 20;
}

static bool is_conv(const mpp_op *op) {
  return op->kind == MPP_OP_CONV_FWD || op->kind == MPP_OP_CONV_BWD_DATA ||
         op->kind == MPP_OP_CONV_BWD_FILTER;
}

/* The roles of a convolution's x, w, y whatever its direction (op.h
 * mpp_conv_role_names), and of its implicit GEMM's A and B
 * (analysis/shadow.h mp_shadow_conv_gemm). */
static void conv_roles(const mpp_op *op, const char *xwy[3], const char *ab[2]) {
  bool data = op->kind == MPP_OP_CONV_BWD_DATA, filter = op->kind == MPP_OP_CONV_BWD_FILTER;
  mpp_conv_role_names(op->kind, xwy);
  /* the implicit GEMM's operands: w x im2col(x), w' x dy, dy x im2col(x)' */
  ab[0] = filter ? xwy[2] : xwy[1];
  ab[1] = data ? xwy[2] : xwy[0];
}

/* The op's convolution geometry (op.h conv_shadow) and alpha. */
static void conv_of(const mpp_op *op, mp_shadow_conv_kind kind, mp_shadow_conv *cv) {
  memset(cv, 0, sizeof *cv);
  cv->g = op->conv_geom;
  cv->g.kind = kind;
  cv->alpha = op->alpha;
}

/* What the call rounds fp32 operands to (mp_shadow_gemm.fp32_as): its
 * compute type's reduced format, or, for 32F compute (what cublasSgemm and
 * the typed SGEMMs pass), the handle's math mode's: TF32_TENSOR_OP is TF32,
 * the deprecated TENSOR_OP "same effect as using CUBLAS_COMPUTE_32F_FAST_16F"
 * (cublas_api.h). cuBLASLt calls have no math mode (-1). */
static mp_dtype fp32_as(const mpp_op *op) {
  const char *ct = op->compute_type ? op->compute_type : "";
  if (strstr(ct, "TF32")) return MP_TF32;
  if (!strcmp(ct, "32F_FAST_16F")) return MP_FP16;
  if (!strcmp(ct, "32F_FAST_16BF")) return MP_BF16;
  if (strcmp(ct, "32F") != 0 || op->math_mode < 0) return MP_FP32;
  switch (op->math_mode & 0xf) {
  case 3: /* CUBLAS_TF32_TENSOR_OP_MATH */
    return MP_TF32;
  case 1: /* CUBLAS_TENSOR_OP_MATH */
    return MP_FP16;
  default:
    return MP_FP32;
  }
}

/* What the call accumulates in (mp_shadow_gemm.accum): fp16 for cuBLAS's
 * compute type 16F (cublasHgemm, cublasGemmEx and cuBLASLt with
 * CUBLAS_COMPUTE_16F or 16F_PEDANTIC) and a cuDNN convolution of compute
 * type HALF (hooks/cuda_types.c names them "16F", "16F_PEDANTIC", "fp16");
 * else fp32 (0). */
static mp_dtype accum_of(const mpp_op *op) {
  const char *ct = op->compute_type ? op->compute_type : "";
  bool f16 = !strcmp(ct, "16F") || !strcmp(ct, "16F_PEDANTIC") ||
             ((is_conv(op) || op->kind == MPP_OP_MATMUL) && !strcmp(ct, mp_dtype_name(MP_FP16)));
  return f16 ? MP_FP16 : MP_FP32;
}

/* The epilogue the op applies to its product, as shadow execution does
 * (op.h shadow_epi: a cuBLASLt epilogue, the fused bias-activation
 * forward's bias and ReLU). */
static void epilogue_of(const mpp_op *op, mp_shadow_gemm *g) {
  g->epilogue = op->shadow_epi;
  g->bias = op->shadow_bias;
  g->bias_dtype = op->shadow_bias_dtype;
  g->bias_stride = op->shadow_bias_stride;
}

/* A cuDNN convolution as its implicit GEMMs, one per group (analysis/shadow.h
 * mp_shadow_conv_gemm): on host memory g reads the copies in *owned; on
 * device memory (*device) g is the shape and *conv what the device gathers
 * its operands from. */
static shadow_skip describe_conv(const mpp_op *op, mp_shadow_gemm *g, void **owned, bool *device,
                                 mp_shadow_conv *conv) {
  const char *names[3], *ab[2];
  conv_roles(op, names, ab);
  const mpp_role *t[3];
  for (int i = 0; i < 3; i++)
    if (!(t[i] = role_named(op, names[i]))) return SKIP_UNSUPPORTED;
  if (!op->conv_shadow || isnan(op->alpha)) return SKIP_UNSUPPORTED;
  mp_shadow_conv_kind kind = op->kind == MPP_OP_CONV_BWD_DATA     ? MP_SHADOW_CONV_BWD_DATA
                             : op->kind == MPP_OP_CONV_BWD_FILTER ? MP_SHADOW_CONV_BWD_FILTER
                                                                  : MP_SHADOW_CONV_FWD;
  const void *data[3];
  bool host = true, dev = true; /* where both inputs are */
  for (int i = 0; i < 3; i++) {
    bool input = t[i]->input;
    data[i] = input ? t[i]->view.data : NULL;
    if (!input) continue;
    if (!t[i]->present) return SKIP_UNSUPPORTED;
    host = host && mpp_host_readable(data[i]);
    dev = dev && on_device(data[i]);
  }
  if (op->shadow_bias) { /* read where the operands are */
    host = host && mpp_host_readable(op->shadow_bias);
    dev = dev && on_device(op->shadow_bias);
  }
  if (!host && !dev) return SKIP_UNSUPPORTED;
  mp_shadow_conv cv;
  conv_of(op, kind, &cv);
  cv.x_dtype = t[0]->view.dtype;
  cv.w_dtype = t[1]->view.dtype;
  cv.y_dtype = t[2]->view.dtype;
  cv.x = data[0];
  cv.wt = data[1];
  cv.y = data[2];
  if (!host) { /* the device gathers the operands (the cap is its own check) */
    if (mp_shadow_conv_shape(&cv, g)) return SKIP_UNSUPPORTED;
    g->accum = accum_of(op);
    epilogue_of(op, g);
    *conv = cv;
    *device = true;
    return SKIP_COUNT;
  }
  uint64_t bytes = mp_shadow_conv_bytes(&cv);
  if (bytes == UINT64_MAX) return SKIP_UNSUPPORTED;
  if (bytes > shadow_cap()) return SKIP_TOO_LARGE;
  int rc = mp_shadow_conv_gemm(&cv, g, owned);
  if (rc) return rc == -ENOMEM ? SKIP_NO_MEMORY : SKIP_UNSUPPORTED;
  g->accum = accum_of(op);
  epilogue_of(op, g);
  if (mp_shadow_work_bytes(g) > shadow_cap() - bytes) {
    free(*owned);
    *owned = NULL;
    return SKIP_TOO_LARGE;
  }
  return SKIP_COUNT;
}

/* Fill g from the op, or say why not; *device: the operands are in device
 * memory; *owned: memory g reads that the caller frees (convolutions on the
 * host); *conv: a device convolution's tensors. */
static shadow_skip describe(const mpp_op *op, mp_shadow_gemm *g, bool *device, void **owned,
                            mp_shadow_conv *conv) {
  memset(g, 0, sizeof *g);
  *device = false;
  *owned = NULL;
  if (is_conv(op)) return describe_conv(op, g, owned, device, conv);
  bool mm = op->kind == MPP_OP_MATMUL; /* a cuDNN backend matmul: C = A x B */
  if ((op->kind != MPP_OP_GEMM && !(mm && op->mm_shadow)) || op->shadow_unsupported ||
      isnan(op->alpha))
    return SKIP_UNSUPPORTED;
  const mpp_role *a = role_named(op, "A"), *b = role_named(op, "B"),
                 *d = role_named(op, mm ? "C" : "D");
  g->m = op->m;
  g->n = op->n;
  g->k = op->k;
  g->batch = op->batch;
  g->alpha = op->alpha;
  /* k = 0 or alpha = 0: D = beta*C, A and B are not read (not present) */
  if (mp_shadow_empty(g)) return SKIP_EMPTY_PRODUCT;
  if (mm) {
    /* its tensors' own layouts (op.h mm_shadow), not the flat views scanned */
    const mpp_role *ab[2] = {a, b};
    mp_shadow_operand *o[2] = {&g->a, &g->b};
    for (int i = 0; i < 2; i++) {
      if (!ab[i] || !ab[i]->present || !ab[i]->view.data) return SKIP_UNSUPPORTED;
      *o[i] = (mp_shadow_operand){.dtype = ab[i]->view.dtype,
                                  .data = ab[i]->view.data,
                                  .ld = op->mm_ld[i],
                                  .stride = op->mm_stride[i],
                                  .trans = op->mm_trans[i]};
    }
    if (!d) return SKIP_UNSUPPORTED;
  } else if (!d || !operand_of(a, op->transa, &g->a) || !operand_of(b, op->transb, &g->b)) {
    return SKIP_UNSUPPORTED;
  }
  g->out = d->view.dtype;
  g->fp32_as = fp32_as(op);
  g->accum = accum_of(op);
  epilogue_of(op, g);
  g->a.scale = op->shadow_scale[0];
  g->b.scale = op->shadow_scale[1];
  g->d_scale = op->shadow_scale[3];
  mp_shadow_operand *ab[2] = {&g->a, &g->b};
  for (int i = 0; i < 2; i++) {
    ab[i]->blocks = op->shadow_blocks[i];
    ab[i]->block_mode = op->shadow_block_mode[i];
    ab[i]->block_outer = i ? g->n : g->m;
  }
  /* What is read beside the operands: the bias, the fp8 scales. */
  const void *small[6] = {g->bias, g->a.scale, g->b.scale, g->d_scale, g->a.blocks, g->b.blocks};
  bool small_host = true, small_dev = true;
  for (int i = 0; i < 6; i++) {
    if (!small[i]) continue;
    small_host = small_host && mpp_host_readable(small[i]);
    small_dev = small_dev && on_device(small[i]);
  }
  if (operand_readable(a, g->batch) && operand_readable(b, g->batch) && small_host)
    return SKIP_COUNT;
  /* The device kernels may only touch device memory (a host pointer would
   * fault in the program's context): both operands, or their pointer arrays. */
  if (!operand_on_device(a) || !operand_on_device(b) || !small_dev) return SKIP_UNSUPPORTED;
  *device = true;
  return SKIP_COUNT;
}

/* Without a loss scale the loss-scaled candidate is the fp16 one. */
static void fill_unscaled(mp_shadow_metrics m[MP_SH_COUNT], int *done) {
  m[MP_SH_FP16_SCALED] = m[MP_SH_FP16];
  if (*done >> MP_SH_FP16 & 1) *done |= 1 << MP_SH_FP16_SCALED;
}

static void merge(struct mpp_shadow_site *site, const mp_shadow_metrics m[MP_SH_COUNT], int done) {
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (done >> c & 1) mp_shadow_agg_add(&site->agg, (mp_shadow_cand)c, &m[c]);
}

/* Whether fp16_loss_scaled differs from fp16 for g: some operand or the
 * output is rounded at a scale other than 1 (else it is fp16's figure). */
static bool loss_scaled(const mp_shadow_gemm *g) {
  return g->scale_log2[0] || g->scale_log2[1] || g->out_scale_log2;
}

static shadow_skip run_host_locked(struct mpp_shadow_site *site, mp_shadow_gemm *g) {
  unsigned mask = MP_SHADOW_ALL;
  bool scaled = loss_scaled(g);
  if (!scaled) mask &= ~(1u << MP_SH_FP16_SCALED);
  mp_shadow_metrics m[MP_SH_COUNT];
  int done = mp_shadow_run(g, mask, site->hist, m);
  if (done == -EDOM) return SKIP_NO_FINITE_REFERENCE;
  if (done == -ENODATA) return SKIP_EMPTY_PRODUCT;
  if (done < 0) return done == -EINVAL ? SKIP_UNSUPPORTED : SKIP_NO_MEMORY;
  if (!scaled) fill_unscaled(m, &done);
  merge(site, m, done);
  return SKIP_COUNT;
}

/* A device shadow's results (devshadow.c's sink, under shadow_mu): the
 * cookie is the site's state, its low bit set when the call had a loss scale. */
static void device_done(void *cookie, const mpp_devshadow_result *r) {
  struct mpp_shadow_site *site = (struct mpp_shadow_site *)((uintptr_t)cookie & ~(uintptr_t)1);
  bool scaled = (uintptr_t)cookie & 1;
  if (r->rc) {
    site->skipped[SKIP_DEVICE_ERROR]++;
    return;
  }
  mp_shadow_metrics m[MP_SH_COUNT];
  int done = (int)r->done;
  bool measured = true; /* all or none: the reference is every candidate's */
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (done >> c & 1) measured = mp_shadow_metrics_of(&r->err[c], &m[c]) && measured;
  if (!measured) {
    site->skipped[SKIP_NO_FINITE_REFERENCE]++; /* as mp_shadow_run's -EDOM */
  } else {
    if (!scaled) fill_unscaled(m, &done);
    merge(site, m, done);
  }
  /* Delayed scaling: this call's amax joins the history (as mp_shadow_run does). */
  mp_amax_history_push(&site->hist[0], r->amax[0]);
  mp_amax_history_push(&site->hist[1], r->amax[1]);
}

static shadow_skip run_device_locked(struct mpp_shadow_site *site, const mpp_op *op,
                                     mp_shadow_gemm *g, const mp_shadow_conv *conv) {
  mpp_devshadow_poll(); /* finished calls first: their amax joins delayed scaling's history */
  unsigned mask = MP_SHADOW_ALL;
  bool scaled = loss_scaled(g);
  if (!scaled) mask &= ~(1u << MP_SH_FP16_SCALED);
  float delayed[2][2];
  for (int w = 0; w < 2; w++) {
    delayed[w][0] = mp_amax_history_scale(&site->hist[w], MP_FP8_E4M3);
    delayed[w][1] = mp_amax_history_scale(&site->hist[w], MP_FP8_E5M2);
  }
  /* Without history the recipe has no scale yet: the call only seeds it. */
  if (site->hist[0].n == 0 && site->hist[1].n == 0)
    mask &= ~(1u << MP_SH_E4M3_DELAYED | 1u << MP_SH_E5M2_DELAYED);
  void *cookie = (void *)((uintptr_t)site | (scaled ? 1 : 0));
  int rc = conv ? mpp_devshadow_enqueue_conv(op->stream, conv, g, mask, (const float(*)[2])delayed,
                                             shadow_cap(), device_done, cookie)
                : mpp_devshadow_enqueue(op->stream, g, mask, (const float(*)[2])delayed,
                                        shadow_cap(), device_done, cookie);
  switch (rc) {
  case 0:
    return SKIP_COUNT;
  case -E2BIG:
    return SKIP_TOO_LARGE;
  case -EBUSY:
    return SKIP_BUSY;
  case -ENODEV:
    return SKIP_NO_HANDLE;
  case -EINVAL:
    return SKIP_UNSUPPORTED;
  case -EIO:
    return SKIP_DEVICE_ERROR;
  default: /* -ENOSYS */
    return SKIP_DEVICE_MEMORY;
  }
}

static int role_index(const mpp_op *op, const char *name) {
  const mpp_role *r = role_named(op, name);
  return r ? (int)(r - op->roles) : -1;
}

void mpp_shadow_call(const mpp_call *c, const mpp_op *op) {
  if (c->site < 0) return;
  pthread_once(&shadow_once, shadow_init);
  struct mpp_shadow_site *site = site_state(c->site);
  if (!site) return;
  mp_shadow_gemm g;
  bool device = false;
  void *owned = NULL;
  mp_shadow_conv conv;
  shadow_skip why = SKIP_COUNT;
  if (!mpp_cuda_ours())
    why = SKIP_FORK_CHILD; /* the parent's CUDA state is not ours to touch */
  else if (op->stream && mpp_cuda_stream_capturing(op->stream))
    why = SKIP_GRAPH_CAPTURE; /* the op has not run: its inputs are not final */
  else
    why = describe(op, &g, &device, &owned, &conv);
  if (why == SKIP_COUNT && !device && mp_shadow_work_bytes(&g) > shadow_cap()) why = SKIP_TOO_LARGE;
  /* The loss scale each operand is rounded at in fp16_loss_scaled: from the
   * operand itself on the host, from the role's scans so far on the device
   * (before shadow_mu: the site lock is taken first). */
  const char *ab[2] = {"A", "B"}, *xwy[3], *out = op->kind == MPP_OP_MATMUL ? "C" : "D";
  if (is_conv(op)) { /* the tensors A and B are made from, and the one it writes */
    conv_roles(op, xwy, ab);
    for (int i = 0; i < 3; i++)
      if (xwy[i] != ab[0] && xwy[i] != ab[1]) out = xwy[i];
  }
  /* The output's own loss scale, where it needs more than the operands'
   * give it (the product of values that fit fp16 can flush). */
  int out_ls = 0;
  /* An fp8 call's per-tensor scales are its scaling: no loss scale on top
   * (its operands' statistics are of the stored values, not of the values
   * the scales make): fp16_loss_scaled is then fp16. */
  bool scalable = why == SKIP_COUNT && !g.a.scale && !g.b.scale && !g.a.blocks && !g.b.blocks;
  if (scalable && !device) {
    g.scale_log2[0] = operand_loss_scale(role_named(op, ab[0]), g.batch);
    g.scale_log2[1] = operand_loss_scale(role_named(op, ab[1]), g.batch);
    out_ls = operand_loss_scale(role_named(op, out), g.batch);
  } else if (scalable) {
    g.scale_log2[0] = mpp_site_role_loss_scale_log2(c->site, role_index(op, ab[0]));
    g.scale_log2[1] = mpp_site_role_loss_scale_log2(c->site, role_index(op, ab[1]));
    out_ls = mpp_site_role_loss_scale_log2(c->site, role_index(op, out));
  }
  if (scalable && out_ls > g.scale_log2[0] + g.scale_log2[1])
    g.out_scale_log2 = out_ls - (g.scale_log2[0] + g.scale_log2[1]);
  pthread_mutex_lock(&shadow_mu);
  if (why == SKIP_COUNT)
    why = device ? run_device_locked(site, op, &g, is_conv(op) ? &conv : NULL)
                 : run_host_locked(site, &g);
  if (why != SKIP_COUNT) site->skipped[why]++;
  pthread_mutex_unlock(&shadow_mu);
  free(owned);
  if (why != SKIP_COUNT && why != SKIP_UNSUPPORTED)
    mpp_log(1, "shadow: a call of %s was skipped (%s)", op->api, skip_names[why]);
}

void mpp_shadow_drain(void) {
  if (!mpp_cfg.shadow || !mpp_cuda_ours()) return;
  pthread_mutex_lock(&shadow_mu);
  mpp_devshadow_drain();
  pthread_mutex_unlock(&shadow_mu);
}

/* --- raw file --- */

void mpp_shadow_write(struct mpp_jw *w, struct mpp_shadow_site *s) {
  pthread_mutex_lock(&shadow_mu);
  mpp_jw_key(w, MP_RK_SITE.shadow);
  mpp_jw_obj(w);
  mpp_jw_key(w, MP_RK_SHADOW.calls);
  mpp_jw_uint(w, s->agg.calls[MP_SH_CURRENT]);
  mpp_jw_key(w, MP_RK_SHADOW.skipped);
  mpp_jw_obj(w);
  for (int r = 0; r < SKIP_COUNT; r++)
    if (s->skipped[r]) {
      mpp_jw_key(w, skip_names[r]);
      mpp_jw_uint(w, s->skipped[r]);
    }
  mpp_jw_obj_end(w);
  mpp_jw_key(w, MP_RK_SHADOW.candidates);
  mpp_jw_obj(w);
  for (int c = 0; c < MP_SH_COUNT; c++) {
    if (!s->agg.calls[c]) continue;
    const mp_shadow_metrics *m = &s->agg.worst[c];
    mpp_jw_key(w, mp_shadow_cand_name((mp_shadow_cand)c));
    mpp_jw_obj(w);
    mpp_jw_key(w, MP_RK_SHADOW_CAND.calls);
    mpp_jw_uint(w, s->agg.calls[c]);
    mpp_jw_key(w, MP_RK_SHADOW_CAND.rel_l2); /* null: +inf */
    mpp_jw_double(w, m->rel_l2);
    mpp_jw_key(w, MP_RK_SHADOW_CAND.max_rel);
    mpp_jw_double(w, m->max_rel);
    mpp_jw_key(w, MP_RK_SHADOW_CAND.flushed);
    mpp_jw_double(w, m->flushed);
    mpp_jw_key(w, MP_RK_SHADOW_CAND.nonfinite);
    mpp_jw_uint(w, m->nonfinite);
    mpp_jw_key(w, MP_RK_SHADOW_CAND.rel_l2_samples);
    mpp_jw_arr(w);
    for (uint32_t i = 0; i < s->agg.nsamples[c]; i++)
      mpp_jw_double(w, s->agg.samples[c][i]);
    mpp_jw_arr_end(w);
    mpp_jw_obj_end(w);
  }
  mpp_jw_obj_end(w);
  mpp_jw_obj_end(w);
  pthread_mutex_unlock(&shadow_mu);
}
