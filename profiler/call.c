/* One hooked call, after its hook module decoded it into an mpp_op: find the
 * site, decide whether this call is scanned (MPPROF_SCAN, MPPROF_SAMPLE, graph
 * capture), scan inputs before the real call and outputs after it, push the
 * op id to CUPTI around the real call, and record the call in its site.
 *
 * Host-visible memory is scanned here, synchronously, with the analysis/ host
 * scanner into per-thread scratch records that are merged into the site at the
 * end (so a failed call leaves no trace). Device tensors go to the device
 * scanner on the op's stream after the real call, all of a call's in one
 * kernel launch (inputs too: the op does not change them, unless an input
 * shares memory with an output, then inputs are launched before the call);
 * results arrive later through a sink. */
#include "mpp.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profiler/gpu/gpu.h"
#include "profiler/hostmem.h"
#include "profiler/include/mpprof.h"
#include "profiler/process.h"
#include "profiler/call.h"
#include "profiler/capture.h"
#include "profiler/op.h"
#include "profiler/scope.h"
#include "profiler/shadow.h"
#include "profiler/sites.h"
#include "profiler/train.h"
#include "kernels/scan_abi.h"

/* --- per-thread scratch stats --- */

static __thread MPP_TLS mp_stats *scratch[MPP_MAX_ROLES];

static void scratch_free(void *p) {
  mp_stats **s = p;
  for (int i = 0; i < MPP_MAX_ROLES; i++) {
    free(s[i]);
    s[i] = NULL;
  }
}

static mpp_thread_key scratch_key = MPP_THREAD_KEY(scratch_free);

/* Calls of this thread that hold its scratch records (begun, not parked, not
 * ended). A hook that opens several at once (one per group of a grouped GEMM,
 * one per operation of a cuDNN graph) parks each but the last as it is begun
 * (mpp_calls_begin), so they all use the scratch in turn; a call begun while
 * another holds it gets records of its own (freed by mpp_call_end). */
static __thread MPP_TLS int scratch_holders;

/* This thread's host-scanner workspace: the scanner's states stay from one
 * scanned call to the next instead of being allocated and cleared whole
 * for each tensor (most of a small tensor's cost). Mapped pages of their
 * own (about 390 KB of address space, resident as the paths used touch
 * them), off the program's heap. Used by one scan at a time: a hook cannot
 * run inside another on its thread. */
static __thread MPP_TLS mp_scan_ws *scan_ws;

static void scan_ws_release(void *block) {
  mpp_unmap(block, mp_scan_ws_bytes());
  scan_ws = NULL;
}

static mpp_thread_key scan_ws_key = MPP_THREAD_KEY(scan_ws_release);

static mp_scan_ws *scan_ws_get(void) {
  if (!scan_ws) {
    void *mem = mpp_map_zeroed(mp_scan_ws_bytes());
    if (!mem) return NULL;                   /* each scan allocates its own */
    if (!(scan_ws = mp_scan_ws_init(mem))) { /* pages are aligned: cannot happen */
      mpp_unmap(mem, mp_scan_ws_bytes());
      return NULL;
    }
    mpp_thread_key_set(&scan_ws_key, mem);
  }
  return scan_ws;
}

static mp_stats *scratch_get(int role) {
  if (!scratch[role]) {
    scratch[role] = malloc(sizeof(mp_stats));
    if (!scratch[role]) return NULL;
    /* Initialised once in full; each use re-initialises only what the
     * previous one touched (mp_stats_reinit_scanned). */
    mp_stats_init(scratch[role], MP_DTYPE_INVALID);
    mpp_thread_key_set(&scratch_key, scratch);
  }
  return scratch[role];
}

/* --- sinks --- */

/* op ids: site + 1 in the high half, the call's index in its site below. */
static uint64_t make_op_id(int site, uint64_t index) {
  return ((uint64_t)(site + 1) << 32) | (index & 0xffffffffu);
}

void mpp_kernel_sink_fn(uint64_t op_id, const char *mangled_name, uint64_t start_ns,
                        uint64_t end_ns, uint32_t stream_id) {
  if (op_id == MPP_OWN_OP_ID) return; /* mpprof's own work (shadow execution) */
  if (op_id >> 32 == 0) {             /* launched outside every hooked call */
    mpp_note_unattributed_kernel(mangled_name, end_ns > start_ns ? end_ns - start_ns : 0);
    return;
  }
  mpp_site_kernel((int)((op_id >> 32) - 1), (uint32_t)op_id, mangled_name, start_ns, end_ns,
                  stream_id);
  mpp_tc_kernel(op_id, mangled_name, start_ns); /* after: the kernel's entry exists */
}

void mpp_tc_verdict_sink_fn(uint64_t op_id, const char *mangled_name, bool tc, const double *values,
                            int nvalues) {
  if (op_id >> 32 == 0 || op_id == MPP_OWN_OP_ID) return;
  mpp_site_kernel_tc((int)((op_id >> 32) - 1), mangled_name, tc, values, nvalues);
}

static void devscan_sink(void *cookie, const mp_stats *result) {
  uintptr_t v = (uintptr_t)cookie - 1;
  if (result) mpp_site_merge_stats((int)(v >> 3), (int)(v & 7), result);
}

/* FP8 scales and amax values read by the device scan (fp32 values, as the host path reads them). */
_Static_assert(MPP_DEVSCAN_SCALARS == MPP_FP8_VALUES, "a device scalar per MPP_FP8_* bit");
static void fp8_scalar_sink(void *cookie, const uint32_t *bits, unsigned requested, unsigned read) {
  double values[MPP_DEVSCAN_SCALARS];
  for (int i = 0; i < MPP_DEVSCAN_SCALARS; i++) {
    float f;
    memcpy(&f, &bits[i], sizeof f);
    values[i] = f;
  }
  mpp_site_note_fp8((int)((uintptr_t)cookie - 1), values, requested, read);
}

/* --- scanning --- */

static bool would_scan(const mpp_role *r) {
  return r->present && (mpp_cfg.scan == MPP_SCAN_ALL || !r->input);
}

/* A record of a call's own (several calls open at once): initialised in full
 * here, since mp_stats_reinit_scanned clears only what a previous use touched. */
static mp_stats *owned_stats(void) {
  mp_stats *s = malloc(sizeof *s);
  if (s) mp_stats_init(s, MP_DTYPE_INVALID);
  return s;
}

static void host_scan(mpp_call *c, int ri, const mp_view *v, bool saturates) {
  mp_stats *s = c->tmp_used[ri] ? c->tmp[ri] : c->tmp_owned ? owned_stats() : scratch_get(ri);
  if (!s) {
    c->ns_counts[MPP_NS_UNKNOWN]++;
    return;
  }
  if (!c->tmp_used[ri]) {
    mp_stats_reinit_scanned(s, v->dtype);
    c->tmp[ri] = s;
    c->tmp_used[ri] = true;
  }
  if (mp_scan_ws_scan(scan_ws_get(), s, v, MP_SCAN_AUTO) < 0)
    c->ns_counts[MPP_NS_LAYOUT]++;
  else if (saturates)
    s->saturated += mp_count_saturated(v);
}

/* Device tensors are collected, not launched one by one: all of a call's go
 * to the device scanner together (flush_device_scans), in one kernel launch. */
static void device_scan(mpp_call *c, int ri) {
  c->dev_roles |= (uint8_t)(1u << ri);
}

static bool on_device(const void *p) {
  mpp_mem_kind k = mpp_mem_kind_of(p);
  return k == MPP_MEM_DEVICE || k == MPP_MEM_MANAGED;
}

/* The call's FP8 scalars in device memory (scalar scales, AMAX_D, the aux's), for the
 * launch behind the op: read by the kernel, no driver call of their own. */
static bool device_scalars(const mpp_op *op, mpp_devscan_scalars *ret) {
  bool any = false;
  memset(ret, 0, sizeof *ret);
  for (int i = 0; i < 4; i++)
    if (op->fp8_scale_ptr[i] && on_device(op->fp8_scale_ptr[i])) {
      ret->ptr[i] = op->fp8_scale_ptr[i];
      any = true;
    }
  /* The rest as MPP_FP8_* bit 1 << i: AMAX_D, the aux's scale and amax. */
  const void *rest[3] = {op->amax_d_ptr, op->aux_scale_ptr, op->amax_aux_ptr};
  for (int i = 0; i < 3; i++)
    if (rest[i] && on_device(rest[i])) {
      ret->ptr[4 + i] = rest[i];
      any = true;
    }
  return any;
}

/* A launch scans at most MPP_SCAN_MAX_TENSORS tensors: an op with more
 * roles to scan takes two. */
#define DEVSCAN_TENSORS MPP_SCAN_MAX_TENSORS
_Static_assert(MPP_MAX_ROLES <= 8, "a role is 3 bits of a device scan's cookie");
_Static_assert(MPP_MAX_ROLES <= 2 * DEVSCAN_TENSORS, "an op's roles fit in two launches");

/* One launch for the collected roles (a pointer-array role: the kernel reads
 * the device-resident array itself, the whole batch in one record; past
 * DEVSCAN_TENSORS of them a second launch); after the call the last launch
 * also reads the op's FP8 scalars in device memory. */
static void flush_device_scans(mpp_call *c, const mpp_op *op, bool after_call) {
  mpp_devscan_item items[MPP_MAX_ROLES];
  int n = 0;
  for (int i = 0; i < op->nroles; i++) {
    if (!(c->dev_roles & (1u << i))) continue;
    const mpp_role *r = &op->roles[i];
    void *cookie = (void *)(uintptr_t)((((uintptr_t)c->site << 3) | (uintptr_t)i) + 1);
    items[n++] = (mpp_devscan_item){.view = r->view,
                                    .dev_ptrs = r->ptr_array,
                                    .saturates = r->saturates,
                                    .sink = devscan_sink,
                                    .cookie = cookie};
  }
  c->dev_roles = 0;
  mpp_devscan_scalars sc;
  bool scalars = after_call && device_scalars(op, &sc);
  if (n == 0 && !scalars) return;
  if (scalars) {
    sc.sink = fp8_scalar_sink;
    sc.cookie = (void *)(uintptr_t)(c->site + 1);
  }
  int first = n > DEVSCAN_TENSORS ? n - DEVSCAN_TENSORS : 0; /* the last launch's items */
  if (first) mpp_devscan_enqueue_op(op->stream, items, first);
  mpp_devscan_enqueue_op_scalars(op->stream, items + first, n - first, scalars ? &sc : NULL);
  if (scalars && sc.rc == 0)
    for (int i = 0; i < MPP_DEVSCAN_SCALARS; i++)
      if (sc.ptr[i]) c->fp8_on_device |= (uint8_t)(1u << i);
  for (int k = 0; k < n; k++) {
    if (items[k].rc == -EBUSY)
      c->ns_counts[MPP_NS_RING_FULL]++;
    else if (items[k].rc < 0)
      c->ns_counts[MPP_NS_DEVICE_UNAVAILABLE]++;
  }
}

/* The bytes a role may touch: its view's span, or its pointer array. */
static void role_extent(const mpp_role *r, uintptr_t *ret_lo, uintptr_t *ret_hi) {
  const mp_view *v = &r->view;
  if (r->ptr_array) {
    *ret_lo = (uintptr_t)r->ptr_array;
    *ret_hi = *ret_lo + (v->batch ? v->batch : 1) * sizeof(void *);
    return;
  }
  uint64_t stride = v->batch_stride < 0 ? (uint64_t)-v->batch_stride : (uint64_t)v->batch_stride;
  uint64_t more = v->batch ? v->batch - 1 : 0; /* matrices after the first */
  uint64_t span =
      (v->rows ? v->rows - 1 : 0) + (v->cols ? v->cols - 1 : 0) * v->ld + more * stride + 1;
  uint64_t size = mp_dtype_size(v->dtype) ? mp_dtype_size(v->dtype) : 1;
  *ret_lo = (uintptr_t)v->data - (v->batch_stride < 0 ? more * stride * size : 0);
  *ret_hi = *ret_lo + span * size;
}

/* Inputs are scanned after the call (with the outputs, one launch) unless
 * the op may overwrite them: an input sharing memory with an output (C == D
 * with beta != 0) is launched before the call, as it must be read first. */
static bool inputs_may_be_overwritten(const mpp_call *c, const mpp_op *op) {
  for (int i = 0; i < op->nroles; i++) {
    if (!(c->dev_roles & (1u << i))) continue;
    uintptr_t lo, hi;
    role_extent(&op->roles[i], &lo, &hi);
    for (int o = 0; o < op->nroles; o++) {
      const mpp_role *out = &op->roles[o];
      if (!out->present || out->input || (!out->view.data && !out->ptr_array)) continue;
      uintptr_t olo, ohi;
      role_extent(out, &olo, &ohi);
      if (lo < ohi && olo < hi) return true;
    }
  }
  return false;
}

static void scan_role(mpp_call *c, const mpp_op *op, int ri) {
  const mpp_role *r = &op->roles[ri];
  if (r->unscannable != MPP_NS_COUNT) {
    c->ns_counts[r->unscannable]++;
    return;
  }
  if (!mp_dtype_scannable(r->view.dtype)) {
    c->ns_counts[MPP_NS_DTYPE]++;
    return;
  }
  if (r->ptr_array) {
    /* A batch of matrices by pointer. In device memory (what cuBLAS requires
     * on a GPU): the device scanner reads the array on the GPU, the whole
     * batch in one scan. Readable here (simcuda): the host scanner follows
     * it. Anything else (managed, unknown) is not followed. */
    mpp_mem_kind k = mpp_mem_kind_of(r->ptr_array);
    if (k == MPP_MEM_DEVICE) {
      device_scan(c, ri);
      return;
    }
    if (k != MPP_MEM_HOST) {
      c->ns_counts[MPP_NS_DEVICE_UNAVAILABLE]++;
      return;
    }
    uint64_t nb = r->view.batch ? r->view.batch : 1;
    if (nb > MPP_MAX_PTRS) nb = MPP_MAX_PTRS;
    for (uint64_t b = 0; b < nb; b++) {
      mp_view v = r->view;
      v.data = r->ptr_array[b];
      v.batch = 1;
      v.batch_stride = 0;
      if (!v.data || mpp_mem_kind_of(v.data) != MPP_MEM_HOST) {
        c->ns_counts[v.data ? MPP_NS_DEVICE_UNAVAILABLE : MPP_NS_UNKNOWN]++;
        return;
      }
      host_scan(c, ri, &v, r->saturates);
    }
    return;
  }
  if (!r->view.data) {
    c->ns_counts[MPP_NS_UNKNOWN]++;
    return;
  }
  if (mpp_mem_kind_of(r->view.data) == MPP_MEM_HOST)
    host_scan(c, ri, &r->view, r->saturates);
  else
    device_scan(c, ri);
}

static void scan_roles(mpp_call *c, const mpp_op *op, bool inputs) {
  for (int i = 0; i < op->nroles; i++)
    if (would_scan(&op->roles[i]) && op->roles[i].input == inputs) scan_role(c, op, i);
}

/* --- sampling --- */

_Static_assert((MPP_SAMPLE_AUTO_CAP & (MPP_SAMPLE_AUTO_CAP - 1)) == 0,
               "the auto schedule's intervals are powers of two");

bool mpp_sample_scans(uint64_t sample, uint64_t index) {
  if (sample != MPP_SAMPLE_AUTO) return index % sample == 0;
  /* Phase k (interval 2^k) starts at call 64 (2^k - 1) and scans 64 calls:
   * call i is in phase floor(log2(i / 64 + 1)), the last one at the cap. */
  unsigned k = 63 - (unsigned)__builtin_clzll(index / MPP_SAMPLE_AUTO_FIRST + 1);
  uint64_t interval = (uint64_t)1 << k;
  if (interval > MPP_SAMPLE_AUTO_CAP) interval = MPP_SAMPLE_AUTO_CAP;
  uint64_t start = MPP_SAMPLE_AUTO_FIRST * (interval - 1);
  return ((index - start) & (interval - 1)) == 0;
}

/* The calling thread's scan records, allocated and cleared now (the thread
 * that activates mpprof is usually the one that calls the ops). */
void mpp_call_prepare_thread(void) {
  for (int i = 0; i < MPP_MAX_ROLES; i++)
    scratch_get(i);
}

/* --- the call --- */

static uint64_t double_bits(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

/* The op's site: from the hook's memo when it holds for this layer and loss
 * scale (the same op decoded before: no hash, no key comparison), else from
 * this thread's site cache, else from the site table, memoised for the next
 * call. The checks are those of the site key (sites.c): the layer's path by
 * content against the site's own copy (an interned path by its address), its
 * class and phase, the scale in force. */
static bool same_layer_as(uint8_t phase, const char *module_class, const char *path_seen,
                          const char *site_layer, const mpp_layer *layer) {
  return phase == layer->phase && module_class == layer->module_class &&
         ((layer->interned && path_seen == layer->path) ||
          (site_layer[0] == layer->path[0] &&
           (!site_layer[0] || strcmp(site_layer, layer->path) == 0)));
}

static bool same_layer(const mpp_site_memo *m, const mpp_layer *layer) {
  return same_layer_as(m->phase, m->module_class, m->path_seen, m->layer, layer);
}

static bool memo_holds(const mpp_site_memo *m, uint64_t gen, uint64_t scale_bits,
                       const mpp_layer *layer) {
  return m->sites_gen == gen && m->loss_scale_bits == scale_bits && same_layer(m, layer);
}

/* This thread's sites of memoised ops in other layers than their memo's: a
 * hook's memo holds one, but a model calls the same GEMM in every block (one
 * decoded op, a layer and a phase each: a 48-block transformer's GEMMs are
 * ~900 of them). An open-addressing table keyed by (decoded op, layer path,
 * class, phase), at most half full, growing from SITE_CACHE_FIRST entries
 * to SITE_CACHE_MAX (64 bytes each), after which new keys go to the site
 * table every call; an entry whose loss scale is not the one in force is
 * refilled in place. Emptied when the site tables are reset (its entries
 * point into them); freed at thread exit. */
#define SITE_CACHE_FIRST 256
#define SITE_CACHE_MAX 32768

/* A memo's fields but its generation (the table's), in one cache line: a
 * model's sites outgrow the CPU caches, and a lookup reads only this line. */
typedef struct site_cache_entry {
  uint64_t op; /* 0: empty */
  uint64_t layer_hash;
  const char *layer, *path_seen, *module_class;
  uint64_t loss_scale_bits;
  struct mpp_site_hot *hot;
  int site;
  uint8_t phase;
} __attribute__((aligned(64))) site_cache_entry;
_Static_assert(sizeof(site_cache_entry) == 64, "a cache entry is one cache line");

typedef struct site_cache {
  uint64_t gen; /* mpp_sites_generation() of the entries */
  uint32_t cap, n;
  site_cache_entry *e;
} site_cache;

static __thread MPP_TLS site_cache *cache;

static void site_cache_free(void *p) {
  site_cache *c = p;
  mpp_unmap(c->e, c->cap * sizeof *c->e);
  free(c);
  cache = NULL;
}

static mpp_thread_key site_cache_key = MPP_THREAD_KEY(site_cache_free);

static uint64_t cache_hash(uint64_t op, uint64_t layer_hash, uint8_t phase) {
  uint64_t h = (op * 0x9e3779b97f4a7c15ull) ^ layer_hash ^ ((uint64_t)phase << 7);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ h >> 29;
}

static bool cache_key_eq(const site_cache_entry *e, uint64_t op, const mpp_layer *layer) {
  return e->op == op && e->layer_hash == layer->hash &&
         same_layer_as(e->phase, e->module_class, e->path_seen, e->layer, layer);
}

/* The key's entry, or the empty one where it would go; NULL without a cache. */
static site_cache_entry *cache_slot(uint64_t op, const mpp_layer *layer, uint64_t gen) {
  site_cache *c = cache;
  if (!c) {
    c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->e = mpp_map_zeroed(SITE_CACHE_FIRST * sizeof *c->e); /* off the program's heap */
    if (!c->e) {
      free(c);
      return NULL;
    }
    c->cap = SITE_CACHE_FIRST;
    c->gen = gen;
    cache = c;
    mpp_thread_key_set(&site_cache_key, c);
  }
  if (c->gen != gen) {
    memset(c->e, 0, c->cap * sizeof *c->e);
    c->n = 0;
    c->gen = gen;
  }
  for (uint32_t j = (uint32_t)cache_hash(op, layer->hash, layer->phase) & (c->cap - 1);;
       j = (j + 1) & (c->cap - 1))
    if (!c->e[j].op || cache_key_eq(&c->e[j], op, layer)) return &c->e[j];
}

static bool cache_grow(site_cache *c) {
  if (c->cap >= SITE_CACHE_MAX) return false;
  uint32_t cap = c->cap * 2;
  site_cache_entry *ne = mpp_map_zeroed(cap * sizeof *ne);
  if (!ne) return false;
  for (uint32_t i = 0; i < c->cap; i++) {
    const site_cache_entry *e = &c->e[i];
    if (!e->op) continue;
    uint32_t j = (uint32_t)cache_hash(e->op, e->layer_hash, e->phase) & (cap - 1);
    while (ne[j].op)
      j = (j + 1) & (cap - 1);
    ne[j] = *e;
  }
  mpp_unmap(c->e, c->cap * sizeof *c->e);
  c->e = ne;
  c->cap = cap;
  return true;
}

/* The site just found for m's op in this layer, into e (cache_slot's). */
static void cache_put(site_cache_entry *e, const mpp_layer *layer, const mpp_site_memo *m) {
  site_cache *c = cache;
  if (!e->op) { /* a new key */
    if ((c->n + 1) * 2 > c->cap) {
      if (!cache_grow(c)) return;
      e = cache_slot(m->op, layer, c->gen);
    }
    c->n++;
  }
  *e = (site_cache_entry){.op = m->op,
                          .layer_hash = layer->hash,
                          .layer = m->layer,
                          .path_seen = m->path_seen,
                          .module_class = m->module_class,
                          .loss_scale_bits = m->loss_scale_bits,
                          .hot = m->hot,
                          .site = m->site,
                          .phase = m->phase};
}

/* The loss scale of a site's key: gradients computed now carry the scale in
 * force, so sites of the backward (or of no marked phase, where a tensor may
 * be a gradient) are split by it and the report unscales each one exactly.
 * A marked forward, recomputation, evaluation or optimizer scope computes no
 * scaled values: its sites are not split (a dynamic scaler's every backoff
 * would otherwise make a new site of every forward op) and record no scale. */
static double key_scale(double in_force, const mpp_layer *layer) {
  switch (layer->phase) {
  case MPPROF_SCOPE_FORWARD:
  case MPPROF_SCOPE_RECOMPUTE:
  case MPPROF_SCOPE_EVAL:
  case MPPROF_SCOPE_OPTIMIZER:
    return 0;
  default:
    return in_force;
  }
}

static int find_site(const mpp_op *op, const mpp_layer *layer, uint64_t *ret_index) {
  mpp_site_memo *m = op->site_memo;
  uint64_t gen = mpp_sites_generation();
  uint64_t scale_bits = double_bits(op->loss_scale);
  bool memoisable = m && !isnan(op->loss_scale);
  if (memoisable && memo_holds(m, gen, scale_bits, layer)) {
    *ret_index = mpp_site_again(m->hot);
    return m->site;
  }
  /* the entry's key is this op's in this layer, in this generation */
  site_cache_entry *e = memoisable && m->op ? cache_slot(m->op, layer, gen) : NULL;
  if (e && e->op && e->loss_scale_bits == scale_bits) {
    *m = (mpp_site_memo){.op = e->op,
                         .sites_gen = gen,
                         .layer = e->layer,
                         .path_seen = e->path_seen,
                         .module_class = e->module_class,
                         .loss_scale_bits = e->loss_scale_bits,
                         .phase = e->phase,
                         .site = e->site,
                         .hot = e->hot};
    *ret_index = mpp_site_again(m->hot);
    return m->site;
  }
  const char *site_layer = NULL;
  mpp_site_hot *hot = NULL;
  int site = mpp_site_find(op, layer, ret_index, &site_layer, &hot);
  if (memoisable && site >= 0) {
    *m = (mpp_site_memo){.op = m->op,
                         .sites_gen = gen,
                         .layer = site_layer,
                         .path_seen = layer->interned ? layer->path : NULL,
                         .module_class = layer->module_class,
                         .loss_scale_bits = scale_bits,
                         .phase = layer->phase,
                         .site = site,
                         .hot = hot};
    if (e) cache_put(e, layer, m);
  }
  return site;
}

/* The sampling index of ops[i] of a multi-op call (site: the one just
 * found): an op of a site that an earlier op of this call has shares that
 * op's, so the call's ops of one site are scanned (and shadowed) all or
 * none; the first gets the site's next multi-op call index. The schedule
 * counts real calls: counted per op, a grouped call of 128 experts of one
 * shape took indices 128 apart, and under --sample auto its odd experts past
 * the 64th were never scanned, call after call. One probe of the call's
 * table of first ops per op (not a search of the earlier ops: 1024 groups
 * of 1024 shapes would compare half a million pairs). */
static uint64_t multi_sample_index(mpp_calls *m, int i, int site) {
  uint32_t mask = m->first_cap - 1;
  for (uint32_t j = ((uint32_t)site * 0x9e3779b1u) & mask;; j = (j + 1) & mask) {
    int32_t f = m->first[j];
    if (!f) {
      m->first[j] = i + 1;
      return mpp_site_multi_again(site);
    }
    if (m->calls[f - 1].site == site) return m->calls[f - 1].sample_index;
  }
}

/* multi: the multi-op call whose op i this is, NULL for a single op. */
static void call_begin(mpp_call *c, mpp_op *op, mpp_calls *multi, int i) {
  static atomic_bool device_noted;
  if (!atomic_load_explicit(&device_noted, memory_order_relaxed) &&
      !atomic_exchange(&device_noted, true))
    mpp_process_note_device(); /* the app's first op: its CUDA context exists */
  memset(c, 0, sizeof *c);
  c->tmp_owned = scratch_holders++ > 0;
  if (mpp_capture_check() >= 0) { /* outside the capture range: counted, not recorded */
    c->site = -1;
    return;
  }
  uint64_t index = 0;
  mpp_layer layer;
  mpp_layer_current(&layer);
  c->scale = mpp_train_scale();
  op->loss_scale = key_scale(c->scale, &layer);
  c->has_step = mpp_train_step(&c->step);
  c->site = find_site(op, &layer, &index);
  c->index = index;
  if (c->site >= 0) {
    c->sample_index = multi ? multi_sample_index(multi, i, c->site) : index;
    c->op_id = make_op_id(c->site, index);
    bool any = false;
    if (mpp_cfg.scan != MPP_SCAN_NONE)
      for (int i = 0; i < op->nroles; i++)
        any |= would_scan(&op->roles[i]);
    if (any) {
      mpp_ns_reason skip = MPP_NS_COUNT;
      if (!mpp_sample_scans(mpp_cfg.sample, c->sample_index))
        skip = MPP_NS_SAMPLED_OUT;
      else if (op->stream && mpp_cuda_stream_capturing(op->stream))
        skip = MPP_NS_GRAPH_CAPTURE; /* the op does not run now: nothing to read */
      if (skip == MPP_NS_COUNT) {
        c->scan = true;
        scan_roles(c, op, true);
        if (inputs_may_be_overwritten(c, op)) flush_device_scans(c, op, false);
      } else {
        for (int i = 0; i < op->nroles; i++)
          if (would_scan(&op->roles[i])) c->ns_counts[skip]++;
      }
    }
    /* tensors the op had no role for: never scanned, counted */
    if (op->roles_dropped && mpp_cfg.scan != MPP_SCAN_NONE)
      c->ns_counts[MPP_NS_ROLES_FULL] += (uint32_t)op->roles_dropped;
    mpp_cupti_push(c->op_id);
    /* Last before the real call: the range profiler's window holds only its
     * kernels. Without --tc-counters (mpp_tc_every() < 0) there is nothing to begin. */
    c->tc_counting = mpp_cfg.tc_every >= 0 && mpp_tc_begin(c->op_id, index, op->stream);
  }
  /* Timestamps only feed timeline events: once those are capped, the two
   * clock reads per call (not free in a VM) are skipped. */
  c->timed = mpp_events_wanted();
  if (c->timed) c->t0_ns = mpp_now_ns();
}

void mpp_call_begin(mpp_call *c, mpp_op *op) {
  call_begin(c, op, NULL, 0);
}

static void call_close(mpp_call *c) {
  scratch_holders--;
  if (!c->tmp_owned) return;
  for (int i = 0; i < MPP_MAX_ROLES; i++)
    if (c->tmp_used[i]) free(c->tmp[i]);
}

/* The call as a first-non-finite candidate: every input scanned here was
 * finite and an output scanned here holds Inf/NaN. (Device scans report
 * later, per tensor: they do not take part.) */
static bool nonfinite_output(const mpp_call *c, const mpp_op *op, mpp_nonfinite *ret) {
  int bad = -1;
  bool inputs = false;
  for (int i = 0; i < op->nroles; i++) {
    if (!c->tmp_used[i]) continue;
    const mp_stats *s = c->tmp[i];
    bool nonfinite = s->nans + s->pos_infs + s->neg_infs > 0;
    if (op->roles[i].input) {
      if (nonfinite) return false;
      inputs = true;
    } else if (nonfinite && bad < 0) {
      bad = i;
    }
  }
  if (bad < 0) return false;
  const mp_stats *s = c->tmp[bad];
  *ret = (mpp_nonfinite){.site = (uint32_t)c->site,
                         .thread = mpp_thread_id(),
                         .call_index = c->index,
                         .t_ns = c->timed ? c->t0_ns : mpp_now_ns(),
                         .has_step = c->has_step,
                         .inputs_scanned = inputs,
                         .step = c->step,
                         .scale = c->scale,
                         .role = op->roles[bad].name,
                         .count = s->count,
                         .nans = s->nans,
                         .pos_infs = s->pos_infs,
                         .neg_infs = s->neg_infs};
  return true;
}

void mpp_call_end(mpp_call *c, mpp_op *op, bool ok) {
  uint64_t t1 = c->timed ? mpp_now_ns() : 0;
  if (c->site < 0) {
    call_close(c);
    return;
  }
  /* First after the real call, before output scans enqueue mpprof's own kernels. */
  if (c->tc_counting) mpp_tc_end(c->op_id);
  mpp_cupti_pop();
  if (!ok) {
    /* Nothing of a failed call is kept: its collected device scans are not launched. */
    mpp_note_failed_call();
    call_close(c);
    return;
  }
  if (c->scan) {
    scan_roles(c, op, false);
    /* Inputs collected before the call, outputs now, and the FP8 scalars in
     * device memory (AMAX_D is the op's: the launch runs behind it). */
    flush_device_scans(c, op, true);
  }
  /* AMAX_D is written by the op: on the host path it is there now. In device
   * memory the scan launch above reads it (a call not scanned: unread). */
  if (op->amax_d_ptr && mpp_host_readable(op->amax_d_ptr))
    op->amax_d = *(const float *)op->amax_d_ptr;
  if (op->amax_aux_ptr && mpp_host_readable(op->amax_aux_ptr)) /* the aux's, as AMAX_D */
    op->amax_aux = *(const float *)op->amax_aux_ptr;
  mpp_nonfinite nf;
  bool nonfinite = c->scan && nonfinite_output(c, op, &nf);
  mpp_site_record(c->site, op, c, t1 > c->t0_ns ? t1 - c->t0_ns : 0);
  if (nonfinite) {
    mpp_sites_lock();
    mpp_train_note_nonfinite_locked(&nf);
    mpp_sites_unlock();
  }
  /* After the op returned and was recorded: reads its inputs, writes nothing of the app's. */
  if (mpp_cfg.shadow && c->sample_index % mpp_cfg.shadow == 0) mpp_shadow_call(c, op);
  call_close(c);
}

void mpp_call_autotune(mpp_op *op) {
  if (!mpp_capture_inside()) return;
  uint64_t index;
  mpp_layer layer;
  mpp_layer_current(&layer);
  op->loss_scale = key_scale(mpp_train_scale(), &layer);
  int site = mpp_site_find(op, &layer, &index, NULL, NULL);
  if (site >= 0) mpp_site_record_autotune(site);
}

/* --- several ops around one real call --- */

/* The call's host-scan records (its inputs', scanned as it began) packed
 * onto the end of the park; the scratch is free for the next op. Without
 * memory the records are dropped and counted as not scanned. */
static void call_park(mpp_call *c, mpp_calls *cs) {
  for (int i = 0; i < MPP_MAX_ROLES; i++) {
    if (!c->tmp_used[i]) continue;
    size_t size = mp_stats_packed_size(c->tmp[i]);
    size_t at = cs->park_len;
    if (at + size > cs->park_cap && at + size <= UINT32_MAX) {
      size_t cap = cs->park_cap ? cs->park_cap : 4096;
      while (cap < at + size)
        cap *= 2;
      char *mem = realloc(cs->park, cap);
      if (mem) {
        cs->park = mem;
        cs->park_cap = cap;
      }
    }
    if (at + size <= cs->park_cap && at + size <= UINT32_MAX) {
      mp_stats_pack_scanned(c->tmp[i], cs->park + at);
      cs->park_len = at + size;
      c->park_at[i] = (uint32_t)at;
    } else {
      c->tmp_used[i] = false;
      c->ns_counts[MPP_NS_UNKNOWN]++;
    }
    if (c->tmp_owned) free(c->tmp[i]);
    c->tmp[i] = NULL;
  }
  c->parked = true;
  scratch_holders--;
}

/* Back from the park into the scratch (or records of the call's own). */
static void call_unpark(mpp_call *c, const mpp_calls *cs) {
  c->tmp_owned = scratch_holders++ > 0;
  c->parked = false;
  for (int i = 0; i < MPP_MAX_ROLES; i++) {
    if (!c->tmp_used[i]) continue;
    mp_stats *s = c->tmp_owned ? owned_stats() : scratch_get(i);
    if (!s) {
      c->tmp_used[i] = false;
      c->ns_counts[MPP_NS_UNKNOWN]++;
      continue;
    }
    mp_stats_unpack_scanned(s, cs->park + c->park_at[i]);
    c->tmp[i] = s;
  }
}

/* The thread's block for multi-op calls: kept from call to call. */
/* An op, its call, its memo and four slots of the first-op table. */
enum {
  CALLS_FIRST_PER_OP = 4,
  CALLS_ROW = sizeof(mpp_op) + sizeof(mpp_call) + sizeof(mpp_site_memo) +
              CALLS_FIRST_PER_OP * sizeof(int32_t)
};

typedef struct calls_block {
  void *mem;
  int cap;
  bool lent;
  char *park; /* the lent calls' park (mpp_calls), kept from call to call */
  size_t park_cap;
} calls_block;

static __thread MPP_TLS calls_block *calls_tls;

static void calls_block_free(void *p) {
  calls_block *b = p;
  mpp_unmap(b->mem, (size_t)b->cap * CALLS_ROW);
  free(b->park);
  free(b);
  calls_tls = NULL;
}

static mpp_thread_key calls_block_key = MPP_THREAD_KEY(calls_block_free);

/* The thread's block with room for cap ops, lent; NULL: none to lend. */
static void *calls_lend(int cap) {
  calls_block *b = calls_tls;
  if (!b) {
    b = calloc(1, sizeof *b);
    if (!b) return NULL;
    calls_tls = b;
    mpp_thread_key_set(&calls_block_key, b);
  }
  if (b->lent) return NULL; /* a call inside a call (a signal handler's) */
  if (b->cap < cap) {       /* mapped: off the program's heap (mpp_map_zeroed) */
    void *mem = mpp_map_zeroed((size_t)cap * CALLS_ROW);
    if (!mem) return NULL;
    mpp_unmap(b->mem, (size_t)b->cap * CALLS_ROW);
    b->mem = mem;
    b->cap = cap;
  }
  b->lent = true;
  return b->mem;
}

bool mpp_calls_reserve(mpp_calls *c, int cap, const char *what) {
  if (cap <= 0) return false;
  /* ~1.7 KB an op, its call and its memo (CALLS_ROW): a grouped call's
   * records (up to 1024 groups) would not fit a small thread stack. */
  void *block = calls_lend(cap);
  c->owned = !block;
  if (!block) block = malloc((size_t)cap * CALLS_ROW);
  if (!block) {
    mpp_note_incomplete("no_memory", "out of memory: %s was not recorded", what);
    return false;
  }
  c->ops = block;
  c->calls = (mpp_call *)(c->ops + cap);
  c->memos = (mpp_site_memo *)(c->calls + cap);
  c->first = (int32_t *)(c->memos + cap);
  /* the largest power of two in CALLS_FIRST_PER_OP * cap slots: more than
   * 2 * cap, so the table is at most half full */
  c->first_cap = 1u << (31 - __builtin_clz((unsigned)cap * CALLS_FIRST_PER_OP));
  c->cap = cap;
  c->n = 0;
  /* the thread's park with its block: no allocation once it is large enough */
  c->park = c->owned ? NULL : calls_tls->park;
  c->park_cap = c->owned ? 0 : calls_tls->park_cap;
  c->park_len = 0;
  return true;
}

/* The last op begun keeps the scratch: it is the first to end. */
void mpp_calls_begin(mpp_calls *c) {
  if (c->autotune) return;
  c->park_len = 0;
  memset(c->first, 0, c->first_cap * sizeof *c->first);
  for (int i = 0; i < c->n; i++) {
    call_begin(&c->calls[i], &c->ops[i], c, i);
    if (i < c->n - 1) call_park(&c->calls[i], c);
  }
}

void mpp_calls_end(mpp_calls *c, bool ok) {
  if (c->autotune) {
    if (ok)
      for (int i = 0; i < c->n; i++)
        mpp_call_autotune(&c->ops[i]);
    return;
  }
  for (int i = c->n; i-- > 0;) {
    if (c->calls[i].parked) call_unpark(&c->calls[i], c);
    mpp_call_end(&c->calls[i], &c->ops[i], ok);
  }
}

void mpp_calls_memo(mpp_calls *c, int i, uint64_t op_id) {
  c->memos[i] = (mpp_site_memo){.op = op_id};
  c->ops[i].site_memo = &c->memos[i];
}

void mpp_calls_release(mpp_calls *c) {
  if (c->owned) {
    free(c->ops);
    free(c->park);
  } else if (c->ops && calls_tls) {
    calls_tls->lent = false; /* the thread's block and park: back to it */
    calls_tls->park = c->park;
    calls_tls->park_cap = c->park_cap;
  }
  c->ops = NULL;
  c->calls = NULL;
  c->memos = NULL;
  c->first = NULL;
  c->first_cap = 0;
  c->park = NULL;
  c->park_len = c->park_cap = 0;
  c->cap = c->n = 0;
}
