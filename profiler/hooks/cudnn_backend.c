/* cuDNN backend API hooks (libcudnn.so.9): the path PyTorch takes by default.
 *
 * Finalized backend descriptors cannot be read back (variant packs and graph
 * ops answer NOT_SUPPORTED), so mpprof keeps a shadow of every descriptor it
 * cares about, built from the attributes as they are set: tensors (uid,
 * dtype, dims, strides, virtual), convolutions, operations (copies of their
 * operand tensors, since frontends destroy tensor descriptors once the graph
 * is built), and the chain graph -> engine / heuristics -> engine config ->
 * plan as a shared, reference-counted graph summary. A variant pack shadow
 * maps uids to data pointers. cudnnBackendExecute then finds the plan's graph
 * and records each convolution / matmul in it as an op.
 *
 * Autotuning (cudnn.benchmark) executes every candidate plan of a graph:
 * once a graph has run with one plan, the first execution of each further
 * plan is counted as "autotune_calls" of its site and neither scanned nor
 * counted as a call. (The very first candidate is indistinguishable from a
 * real call and is recorded as one.) */
#include <cudnn.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "conv_decode.h"
#include "cuda_types.h"
#include "cudnn_common.h"
#include "hook.h"
#include "profiler/ptrmap.h"
#include "profiler/sites.h"

#define MPP_MODULE_SONAME "libcudnn.so.9"
#define MPP_MODULE_SYMS(X)                                                                         \
  X(cudnnBackendCreateDescriptor)                                                                  \
  X(cudnnBackendDestroyDescriptor)                                                                 \
  X(cudnnBackendSetAttribute)                                                                      \
  X(cudnnBackendGetAttribute)                                                                      \
  X(cudnnBackendFinalize)                                                                          \
  X(cudnnBackendExecute)
MPP_MODULE_TABLE(syms)

#define MAX_SHADOWS 65536
#define MAX_GRAPH_OPS 16
#define MAX_PLANS 16
#define MAX_VP 64

typedef struct be_tensor {
  bool set;
  int64_t uid;
  bool is_virtual;
  mpp_tensor_desc d;
} be_tensor;

enum { OPND_X = 0, OPND_W, OPND_Y, OPND_COUNT }; /* matmul: A, B, C */

typedef struct be_op {
  int type; /* cudnnBackendDescriptorType_t */
  be_tensor t[OPND_COUNT];
  mpp_conv_desc conv;
  bool has_conv;
  int comp_type; /* cudnnDataType_t of the matmul / pointwise / reduction descriptor, -1 unset */
  int pw_mode;   /* a pointwise op's POINTWISE_MODE (cudnnPointwiseMode_t), -1 unset */
  double alpha;  /* a convolution's ALPHA attribute (shadow execution); NAN unset */
  double beta;   /* its BETA attribute: non-zero, the output's prior value is read; 0 unset */
  /* A matmul's M, N, K overrides (tensors of per-batch values: each batch
   * member's product covers only that much of A, B and C) and its
   * deprecated irregularly strided batch count (0 unset). */
  bool override[3];
  int64_t irregular_batch;
} be_op;

/* Immutable once built; shared by engines, configs and plans of one graph. */
typedef struct be_graph {
  int refs; /* under shadows_mu */
  int nops;
  be_op ops[MAX_GRAPH_OPS];
  /* Each op's decode id (mpp_site_memo_op): an op decodes to the same site
   * key at every execution, so its site is looked up in the thread's cache. */
  uint64_t op_ids[MAX_GRAPH_OPS];
  /* Plans executed with this graph, for the autotuning filter. */
  int nplans;
  void *plans[MAX_PLANS];
  /* Where each recorded op's roles (in role order) take their data
   * pointers from: the tensors of the graph's ops (its own copies). */
  const be_tensor *role_src[MAX_GRAPH_OPS][MPP_MAX_ROLES];
  /* The recorded ops (recorded()) in graph order, decoded without their
   * data pointers, built at the graph's first execution (NULL before, or
   * without memory): an execution copies them and sets the pointers its
   * variant pack gives (~140 ns of decoding a convolution saved per
   * execution). */
  mpp_op *decoded;
} be_graph;

/* A variant pack: its uids and data pointers, as many of each as were set
 * (a uid past nptrs has no pointer). */
typedef struct be_vp {
  int nuids, nptrs;
  int64_t uids[MAX_VP];
  void *ptrs[MAX_VP];
} be_vp;

typedef struct be_shadow {
  int type; /* cudnnBackendDescriptorType_t; UNTRACKED for a descriptor mpprof only knows of */
  bool finalized;
  union {
    be_tensor tensor;
    mpp_conv_desc conv;
    struct {
      int type; /* MATMUL_COMP_TYPE, POINTWISE_MATH_PREC, REDUCTION_COMP_TYPE; -1 unset */
      int mode; /* POINTWISE_MODE; -1 unset */
    } comp;
    be_op op;
    be_vp vp;
  } u;
  be_graph *graph; /* graph, engine, heuristics, engine config, plan */
} be_shadow;

/* A descriptor of a type mpprof does not shadow is still entered in the
 * map, with this shadow (never written): a descriptor the map lacks is then
 * one mpprof never saw made, which may be another thread's variant pack
 * (vp_slot). */
enum { UNTRACKED = -1 };
static const be_shadow untracked = {.type = UNTRACKED};

static pthread_mutex_t shadows_mu = PTHREAD_MUTEX_INITIALIZER;
static mpp_ptrmap shadows = MPP_PTRMAP_INIT(1024, MAX_SHADOWS); /* descriptor -> be_shadow */
/* The shadows themselves (~1 KB each; PyTorch makes and destroys a variant
 * pack around every execution): under shadows_mu. */
static mpp_pool shadow_pool = MPP_POOL_INIT(sizeof(be_shadow));

__attribute__((constructor)) static void shadows_fork_protect(void) {
  mpp_fork_protect(&shadows_mu);
}

/* d's shadow, or NULL: not in the map, or an untracked descriptor's;
 * *known (when given) says whether the map has d. */
static be_shadow *lookup_locked(void *d, bool *known) {
  be_shadow *s = mpp_ptrmap_get(&shadows, d);
  if (known) *known = s != NULL;
  return s == &untracked ? NULL : s;
}

static be_shadow *find_locked(void *d) {
  return lookup_locked(d, NULL);
}

/* --- a thread's own variant pack ---
 *
 * PyTorch (and cudnn-frontend's execute) makes a variant pack, sets it,
 * finalizes it, executes it and destroys it on one thread around every
 * execution. A thread keeps the pack it made, while it lives, in a slot of
 * its own, away from the shared map and its lock: those five calls then
 * take no lock (the execution neither, once the thread remembers its plan:
 * below). Further packs the thread makes while its slot is held go to the
 * map.
 *
 * A slot is entered in a registry (slots) that other threads read: a
 * thread that finds neither in its own slot nor in the map a descriptor it
 * sets a pack's attribute on, finalizes or destroys, may be touching
 * another thread's pack, and empties the slot that holds that address, if
 * any (foreign_touch); no other slot is affected. That pack is then one
 * found nowhere, like any other: an execution with it records its ops
 * without tensor pointers, so no pointer that may have been replaced is
 * scanned, and the run is noted incomplete. Every descriptor mpprof sees
 * made is in a slot or the map (UNTRACKED types too), so in a run that
 * keeps each pack on its thread no slot is ever emptied by another.
 *
 * The thread also remembers the plans it executed, with their graphs, in a
 * table by plan address (PLAN_MEMOS entries, one a plan; a plan whose entry
 * another took is looked up again), valid while chain_gen is unchanged: an
 * execution with the thread's own pack and a plan it remembers takes no
 * lock at all. A graph is never changed once its first execution decoded it
 * (decode_graph_locked), and it lives as long as a plan that holds it;
 * chain_gen moves whenever a plan leaves the map or is linked to another
 * config, so a plan at a reused address is looked up again. */
#define PLAN_MEMO_BITS 8
#define PLAN_MEMOS (1 << PLAN_MEMO_BITS)

typedef struct plan_memo {
  void *plan; /* NULL: empty */
  be_graph *graph;
  uint64_t gen; /* chain_gen when filled */
  /* The site memo of the graph's first recorded op (its decode id tells
   * whose it is); the graph's further ops start afresh at each execution. */
  mpp_site_memo site;
} plan_memo;

typedef struct vp_slot {
  /* The pack; NULL when the slot holds none. Written by its thread, and
   * emptied (compare-and-swap) by any thread that touched that pack. */
  void *_Atomic desc;
  atomic_bool claimed; /* a live thread's slot */
  bool finalized;
  be_vp vp;
  plan_memo plans[PLAN_MEMOS]; /* ~25 KB, mapped: off the program's heap */
} vp_slot;

static _Atomic uint64_t chain_gen; /* changed under shadows_mu */
/* Variant packs in the map (changed under shadows_mu): while there are
 * none, a pack made into a slot has no stale entry to remove there. */
static _Atomic int map_vps;

/* The registry: slots made so far, the first nslots of MAX_SLOTS entries.
 * A slot is never unmapped (another thread may be reading it); a thread
 * that ends frees its slot for the next thread. Threads beyond MAX_SLOTS
 * keep their packs in the map. */
enum { MAX_SLOTS = 128 };
static vp_slot *_Atomic slots[MAX_SLOTS];
static _Atomic int nslots;
static __thread MPP_TLS vp_slot *slot;

static void slot_release(vp_slot *t) {
  atomic_store_explicit(&t->desc, NULL, memory_order_relaxed);
  atomic_store_explicit(&t->claimed, false, memory_order_release);
}

static void slot_free(void *p) {
  slot_release(p);
  slot = NULL;
}

/* In a forked child only the forking thread lives on. */
static void slots_fork_child(void) {
  int n = atomic_load_explicit(&nslots, memory_order_acquire);
  for (int i = 0; i < n && i < MAX_SLOTS; i++) {
    vp_slot *t = atomic_load_explicit(&slots[i], memory_order_acquire);
    if (t && t != slot) slot_release(t);
  }
}

__attribute__((constructor)) static void slots_fork_setup(void) {
  pthread_atfork(NULL, NULL, slots_fork_child);
}

static mpp_thread_key slot_key = MPP_THREAD_KEY(slot_free);

static vp_slot *slot_claim(void) {
  int n = atomic_load_explicit(&nslots, memory_order_acquire);
  for (int i = 0; i < n && i < MAX_SLOTS; i++) {
    vp_slot *t = atomic_load_explicit(&slots[i], memory_order_acquire);
    bool no = false;
    if (t && atomic_compare_exchange_strong(&t->claimed, &no, true)) {
      memset(t->plans, 0, sizeof t->plans);
      return t;
    }
  }
  int i = atomic_fetch_add_explicit(&nslots, 1, memory_order_acq_rel);
  if (i >= MAX_SLOTS) {
    atomic_store_explicit(&nslots, MAX_SLOTS, memory_order_relaxed);
    return NULL;
  }
  vp_slot *t = mpp_map_zeroed(sizeof *t);
  if (t) {
    atomic_store_explicit(&t->claimed, true, memory_order_relaxed);
    atomic_store_explicit(&slots[i], t, memory_order_release);
  }
  return t;
}

static vp_slot *slot_get(void) {
  if (!slot) {
    slot = slot_claim();
    if (slot) mpp_thread_key_set(&slot_key, slot);
  }
  return slot;
}

static inline void *slot_desc(const vp_slot *t) {
  return atomic_load_explicit(&((vp_slot *)t)->desc, memory_order_relaxed);
}

/* This thread's slot when it holds pack d, else NULL. */
static inline vp_slot *own_pack(void *d) {
  vp_slot *t = slot;
  return t && d && slot_desc(t) == d ? t : NULL;
}

/* d, found nowhere, was touched: it may be another thread's pack, which is
 * then no longer trusted. */
static void foreign_touch(void *d) {
  int n = atomic_load_explicit(&nslots, memory_order_acquire);
  for (int i = 0; i < n && i < MAX_SLOTS; i++) {
    vp_slot *t = atomic_load_explicit(&slots[i], memory_order_acquire);
    void *was = d;
    if (t && slot_desc(t) == d)
      atomic_compare_exchange_strong_explicit(&t->desc, &was, NULL, memory_order_acq_rel,
                                              memory_order_relaxed);
  }
}

static void vp_set(be_vp *vp, int name, int64_t n, const void *v) {
  int k = (int)(n < MAX_VP ? n : MAX_VP);
  if (name == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS) {
    vp->nuids = k;
    mpp_memcpy_n(vp->uids, v, (size_t)k * sizeof(int64_t));
  } else if (name == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS) {
    vp->nptrs = k;
    mpp_memcpy_n(vp->ptrs, v, (size_t)k * sizeof(void *));
  }
}

static bool is_vp_attr(int name) {
  return name == CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS ||
         name == CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS ||
         name == CUDNN_ATTR_VARIANT_PACK_WORKSPACE || name == CUDNN_ATTR_VARIANT_PACK_INTERMEDIATES;
}

static void graph_unref_locked(be_graph *g) {
  if (g && --g->refs == 0) {
    free(g->decoded);
    free(g);
  }
}

static void graph_set_locked(be_shadow *s, be_graph *g) {
  if (s->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
    atomic_fetch_add_explicit(&chain_gen, 1, memory_order_release);
  if (g) g->refs++;
  graph_unref_locked(s->graph);
  s->graph = g;
}

static bool shadowed_type(int t) {
  switch (t) {
  case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
  case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
  case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
  case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
  case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
  case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
  case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
    return true;
  default:
    return false;
  }
}

/* Descriptors that only carry a compute type for an operation. */
static bool is_comp_desc(int t) {
  return t == CUDNN_BACKEND_MATMUL_DESCRIPTOR || t == CUDNN_BACKEND_POINTWISE_DESCRIPTOR ||
         t == CUDNN_BACKEND_REDUCTION_DESCRIPTOR;
}

/* The graph -> plan chain. */
static bool is_chain_desc(int t) {
  return t == CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR || t == CUDNN_BACKEND_ENGINE_DESCRIPTOR ||
         t == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR || t == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR ||
         t == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR;
}

/* Removes the map's entry for desc, if any (on a create: a descriptor at
 * its address destroyed unseen); false when there was none. */
static bool drop_locked(void *desc) {
  be_shadow *stale = NULL;
  if (!mpp_ptrmap_del(&shadows, desc, (void **)&stale)) return false;
  if (stale == &untracked) return true;
  if (stale->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
    atomic_fetch_add_explicit(&chain_gen, 1, memory_order_release);
  if (stale->type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    atomic_fetch_sub_explicit(&map_vps, 1, memory_order_relaxed);
  graph_unref_locked(stale->graph);
  mpp_pool_put(&shadow_pool, stale);
  return true;
}

static void note_full(void) {
  mpp_note_incomplete("cudnn_shadows",
                      "more than %d live cuDNN backend descriptors: later ones not followed",
                      MAX_SHADOWS);
}

static void on_create(int type, void *desc) {
  if (!desc) return;
  if (type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
    vp_slot *t = slot_get();
    /* (A slot still holding desc: that pack was destroyed unseen.) */
    void *held = t ? slot_desc(t) : NULL;
    if (t && (!held || held == desc)) {
      if (atomic_load_explicit(&map_vps, memory_order_relaxed) > 0) {
        pthread_mutex_lock(&shadows_mu);
        drop_locked(desc);
        pthread_mutex_unlock(&shadows_mu);
      }
      t->finalized = false;
      t->vp.nuids = t->vp.nptrs = 0;
      atomic_store_explicit(&t->desc, desc, memory_order_release);
      return;
    }
  } else if (own_pack(desc)) {
    /* the slot's pack was destroyed unseen: its address is another's now */
    atomic_store_explicit(&slot->desc, NULL, memory_order_relaxed);
  }
  pthread_mutex_lock(&shadows_mu);
  drop_locked(desc);
  if (!shadowed_type(type)) {
    int r = mpp_ptrmap_put(&shadows, desc, (void *)&untracked);
    pthread_mutex_unlock(&shadows_mu);
    if (r < 0) note_full();
    return;
  }
  be_shadow *s = mpp_pool_get(&shadow_pool);
  if (!s) {
    pthread_mutex_unlock(&shadows_mu);
    return;
  }
  s->type = type;
  if (is_comp_desc(type)) {
    s->u.comp.type = s->u.comp.mode = -1;
  } else if (type == CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR) {
    s->u.conv.mode = CUDNN_CROSS_CORRELATION; /* what cuDNN computes unless told */
  } else if (!is_chain_desc(type) && type != CUDNN_BACKEND_TENSOR_DESCRIPTOR &&
             type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
    s->u.op.comp_type = s->u.op.pw_mode = -1;
    s->u.op.alpha = NAN;
  }
  int r = mpp_ptrmap_put(&shadows, desc, s);
  if (r < 0)
    mpp_pool_put(&shadow_pool, s);
  else if (type == CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    atomic_fetch_add_explicit(&map_vps, 1, memory_order_relaxed);
  pthread_mutex_unlock(&shadows_mu);
  if (r < 0) note_full();
}

/* (A NULL descriptor is no pack: cuDNN accepts destroying it.) */
static void on_destroy(void *desc) {
  if (!desc) return;
  if (own_pack(desc)) {
    atomic_store_explicit(&slot->desc, NULL, memory_order_relaxed);
    return;
  }
  pthread_mutex_lock(&shadows_mu);
  bool known = drop_locked(desc);
  pthread_mutex_unlock(&shadows_mu);
  if (!known) foreign_touch(desc);
}

/* --- attributes --- */

static void copy_i64(int64_t *dst, const void *src, int64_t n, int max) {
  mpp_memcpy_n(dst, src, (size_t)(n < max ? n : max) * sizeof(int64_t));
}

static void set_tensor_attr(be_tensor *t, int name, int64_t n, const void *v) {
  switch (name) {
  case CUDNN_ATTR_TENSOR_DATA_TYPE:
    t->d.dtype = *(const int *)v;
    break;
  case CUDNN_ATTR_TENSOR_DIMENSIONS:
    t->d.nd = (int)(n < MPP_CONV_MAX_DIMS ? n : MPP_CONV_MAX_DIMS);
    copy_i64(t->d.dims, v, n, MPP_CONV_MAX_DIMS);
    break;
  case CUDNN_ATTR_TENSOR_STRIDES:
    copy_i64(t->d.strides, v, n, MPP_CONV_MAX_DIMS);
    break;
  case CUDNN_ATTR_TENSOR_UNIQUE_ID:
    t->uid = *(const int64_t *)v;
    break;
  case CUDNN_ATTR_TENSOR_IS_VIRTUAL:
    t->is_virtual = *(const bool *)v;
    break;
  default:
    return;
  }
  t->set = true;
}

static void set_conv_attr(mpp_conv_desc *c, int name, int64_t n, const void *v) {
  int64_t tmp[MPP_CONV_MAX_DIMS] = {0};
  int64_t k = n < MPP_CONV_MAX_SPATIAL ? n : MPP_CONV_MAX_SPATIAL;
  switch (name) {
  case CUDNN_ATTR_CONVOLUTION_COMP_TYPE:
    c->comp_type = *(const int *)v;
    break;
  case CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS:
    c->nsp = (int)*(const int64_t *)v;
    break;
  case CUDNN_ATTR_CONVOLUTION_CONV_MODE:
    c->mode = *(const int *)v;
    break;
  case CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS:
    copy_i64(tmp, v, n, MPP_CONV_MAX_DIMS);
    mpp_memcpy_n(c->pad, tmp, (size_t)k * sizeof(int64_t));
    break;
  case CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES:
    copy_i64(tmp, v, n, MPP_CONV_MAX_DIMS);
    mpp_memcpy_n(c->stride, tmp, (size_t)k * sizeof(int64_t));
    break;
  case CUDNN_ATTR_CONVOLUTION_DILATIONS:
    copy_i64(tmp, v, n, MPP_CONV_MAX_DIMS);
    mpp_memcpy_n(c->dilation, tmp, (size_t)k * sizeof(int64_t));
    break;
  default:
    break;
  }
}

/* Which operand an operation attribute names, or -1. */
static int operand_of(int type, int name) {
  switch (name) {
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X:
  case CUDNN_ATTR_OPERATION_MATMUL_ADESC:
  case CUDNN_ATTR_OPERATION_POINTWISE_XDESC:
  case CUDNN_ATTR_OPERATION_REDUCTION_XDESC:
    return OPND_X;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY:
  case CUDNN_ATTR_OPERATION_MATMUL_BDESC:
  case CUDNN_ATTR_OPERATION_POINTWISE_BDESC:
    return OPND_W;
  case CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX:
  case CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW:
  case CUDNN_ATTR_OPERATION_MATMUL_CDESC:
  case CUDNN_ATTR_OPERATION_POINTWISE_YDESC:
  case CUDNN_ATTR_OPERATION_REDUCTION_YDESC:
    return OPND_Y;
  default:
    (void)type;
    return -1;
  }
}

static bool is_conv_desc_attr(int name) {
  return name == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC ||
         name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC ||
         name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC;
}

/* The operation attribute that names its compute-type descriptor. */
static bool is_comp_desc_attr(int name) {
  return name == CUDNN_ATTR_OPERATION_MATMUL_DESC ||
         name == CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR ||
         name == CUDNN_ATTR_OPERATION_REDUCTION_DESC;
}

static void set_comp_attr(int *comp_type, int *mode, int name, int atype, int64_t n,
                          const void *v) {
  if ((name == CUDNN_ATTR_MATMUL_COMP_TYPE || name == CUDNN_ATTR_POINTWISE_MATH_PREC ||
       name == CUDNN_ATTR_REDUCTION_COMP_TYPE) &&
      atype == CUDNN_TYPE_DATA_TYPE && n >= 1)
    *comp_type = *(const int *)v;
  else if (name == CUDNN_ATTR_POINTWISE_MODE && atype == CUDNN_TYPE_POINTWISE_MODE && n >= 1)
    *mode = *(const int *)v;
}

static bool is_conv_alpha_attr(int name) {
  return name == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA ||
         name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA ||
         name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA;
}

static bool is_conv_beta_attr(int name) {
  return name == CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA ||
         name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA ||
         name == CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA;
}

static double scalar_attr(int atype, const void *v) {
  return atype == CUDNN_TYPE_DOUBLE  ? *(const double *)v
         : atype == CUDNN_TYPE_FLOAT ? *(const float *)v
                                     : NAN;
}

static void set_op_attr_locked(be_op *op, int name, int atype, int64_t n, const void *v) {
  if (n >= 1 && is_conv_alpha_attr(name)) {
    op->alpha = scalar_attr(atype, v);
    return;
  }
  if (n >= 1 && is_conv_beta_attr(name)) {
    op->beta = scalar_attr(atype, v); /* a type cuDNN refuses (NAN): counted as blending */
    return;
  }
  if (n >= 1 && name == CUDNN_ATTR_OPERATION_MATMUL_IRREGULARLY_STRIDED_BATCH_COUNT &&
      atype == CUDNN_TYPE_INT64) {
    op->irregular_batch = *(const int64_t *)v;
    return;
  }
  if (n >= 1 && atype == CUDNN_TYPE_BACKEND_DESCRIPTOR &&
      name >= CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC &&
      name <= CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC) {
    op->override[name - CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC] =
        *(void *const *)v != NULL;
    return;
  }
  if (atype != CUDNN_TYPE_BACKEND_DESCRIPTOR || n < 1) return;
  be_shadow *ref = find_locked(*(void *const *)v);
  if (!ref) return;
  int o = operand_of(op->type, name);
  if (o >= 0 && ref->type == CUDNN_BACKEND_TENSOR_DESCRIPTOR)
    /* a copy: the tensor descriptor may be destroyed (by libc: GCC copies
     * a struct on a path it deems cold with `rep movs`) */
    mpp_memcpy_n(&op->t[o], &ref->u.tensor, sizeof op->t[o]);
  else if (is_conv_desc_attr(name) && ref->type == CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR) {
    mpp_memcpy_n(&op->conv, &ref->u.conv, sizeof op->conv);
    op->has_conv = true;
  } else if (is_comp_desc_attr(name) && is_comp_desc(ref->type)) {
    op->comp_type = ref->u.comp.type; /* a copy, like the tensors */
    op->pw_mode = ref->u.comp.mode;
  }
}

static void set_graph_ops_locked(be_shadow *s, int64_t n, const void *v) {
  be_graph *g = calloc(1, sizeof *g);
  if (!g) return;
  void *const *ops = v;
  for (int64_t i = 0; i < n && g->nops < MAX_GRAPH_OPS; i++) {
    be_shadow *o = find_locked(ops[i]);
    if (o && o->type != CUDNN_BACKEND_TENSOR_DESCRIPTOR &&
        o->type != CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR) {
      g->op_ids[g->nops] = mpp_site_memo_op();
      g->ops[g->nops++] = o->u.op;
    }
  }
  graph_set_locked(s, g);
}

/* Links whose target carries the graph summary along. */
static bool is_graph_link(int type, int name) {
  return (type == CUDNN_BACKEND_ENGINE_DESCRIPTOR && name == CUDNN_ATTR_ENGINE_OPERATION_GRAPH) ||
         (type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR &&
          name == CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH) ||
         (type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR && name == CUDNN_ATTR_ENGINECFG_ENGINE) ||
         (type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR &&
          name == CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
}

static void on_set(void *desc, int name, int atype, int64_t n, const void *v) {
  if (!desc || !v || n < 0) return;
  vp_slot *t = own_pack(desc);
  if (t) {
    vp_set(&t->vp, name, n, v);
    return;
  }
  pthread_mutex_lock(&shadows_mu);
  bool known;
  be_shadow *s = lookup_locked(desc, &known);
  if (s) {
    switch (s->type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      set_tensor_attr(&s->u.tensor, name, n, v);
      break;
    case CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR:
      set_conv_attr(&s->u.conv, name, n, v);
      break;
    case CUDNN_BACKEND_MATMUL_DESCRIPTOR:
    case CUDNN_BACKEND_POINTWISE_DESCRIPTOR:
    case CUDNN_BACKEND_REDUCTION_DESCRIPTOR:
      set_comp_attr(&s->u.comp.type, &s->u.comp.mode, name, atype, n, v);
      break;
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      if (name == CUDNN_ATTR_OPERATIONGRAPH_OPS && atype == CUDNN_TYPE_BACKEND_DESCRIPTOR)
        set_graph_ops_locked(s, n, v);
      break;
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR:
      vp_set(&s->u.vp, name, n, v);
      break;
    default:
      if (is_graph_link(s->type, name) && atype == CUDNN_TYPE_BACKEND_DESCRIPTOR && n >= 1) {
        be_shadow *ref = find_locked(*(void *const *)v);
        if (ref) graph_set_locked(s, ref->graph);
      } else if (s->type != CUDNN_BACKEND_ENGINE_DESCRIPTOR &&
                 s->type != CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR &&
                 s->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR &&
                 s->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR) {
        s->u.op.type = s->type;
        set_op_attr_locked(&s->u.op, name, atype, n, v);
      }
    }
  }
  pthread_mutex_unlock(&shadows_mu);
  if (!known && is_vp_attr(name)) foreign_touch(desc);
}

static void on_finalize(void *desc) {
  if (!desc) return;
  vp_slot *t = own_pack(desc);
  if (t) {
    t->finalized = true;
    return;
  }
  pthread_mutex_lock(&shadows_mu);
  bool known;
  be_shadow *s = lookup_locked(desc, &known);
  if (s) s->finalized = true;
  pthread_mutex_unlock(&shadows_mu);
  /* (a pack another thread holds and has not finalized would stay unusable
   * to it: its executions would not be recorded at all) */
  if (!known) foreign_touch(desc);
}

/* Engine configs handed out by heuristics belong to the heuristics' graph. */
static void on_get(void *desc, int name, int64_t n, void *elements) {
  if (name != CUDNN_ATTR_ENGINEHEUR_RESULTS || !elements || n <= 0) return;
  pthread_mutex_lock(&shadows_mu);
  be_shadow *h = find_locked(desc);
  if (h && h->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR && h->graph) {
    void **cfgs = elements;
    for (int64_t i = 0; i < n; i++) {
      be_shadow *c = find_locked(cfgs[i]);
      if (c && c->type == CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) graph_set_locked(c, h->graph);
    }
  }
  pthread_mutex_unlock(&shadows_mu);
}

/* --- execute --- */

static mpp_op_kind kind_of(int type) {
  switch (type) {
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    return MPP_OP_CONV_FWD;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    return MPP_OP_CONV_BWD_DATA;
  case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
    return MPP_OP_CONV_BWD_FILTER;
  default:
    return MPP_OP_MATMUL;
  }
}

static void *ptr_of(const be_vp *vp, const be_tensor *t) {
  if (!vp || !t->set || t->is_virtual) return NULL;
  for (int i = 0; i < vp->nuids; i++)
    if (vp->uids[i] == t->uid) return i < vp->nptrs ? vp->ptrs[i] : NULL;
  return NULL;
}

/* A virtual output feeds pointwise ops (bias, activation): follow them to the
 * tensor that is materialised, which is what the graph writes. */
static const be_tensor *materialised(const be_graph *g, const be_tensor *t) {
  for (int hops = 0; t->is_virtual && hops < MAX_GRAPH_OPS; hops++) {
    const be_tensor *next = NULL;
    for (int i = 0; i < g->nops && !next; i++)
      if (g->ops[i].type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
          g->ops[i].t[OPND_X].set && g->ops[i].t[OPND_X].uid == t->uid && g->ops[i].t[OPND_Y].set)
        next = &g->ops[i].t[OPND_Y];
    if (!next) break;
    t = next;
  }
  return t;
}

/* The batch count C's dims give: all but its last two. */
static int64_t matmul_batch(const mpp_tensor_desc *c) {
  int64_t b = 1;
  for (int i = 0; i + 2 < c->nd; i++)
    b *= c->dims[i];
  return b;
}

static void decode_matmul(mpp_op *op, const be_op *o, void *pa, void *pb, void *pc) {
  const mpp_tensor_desc *a = &o->t[OPND_X].d, *b = &o->t[OPND_W].d, *c = &o->t[OPND_Y].d;
  mpp_op_init(op, "cudnnBackendExecute", MPP_OP_MATMUL);
  /* [batch..., M, K] x [batch..., K, N] -> [batch..., M, N] */
  int na = a->nd, nc = c->nd;
  op->m = na >= 2 ? a->dims[na - 2] : 1;
  op->k = na >= 1 ? a->dims[na - 1] : 1;
  op->n = nc >= 1 ? c->dims[nc - 1] : 1;
  op->batch = 1;
  for (int i = 0; i + 2 < nc; i++)
    op->batch *= c->dims[i];
  mpp_op_type(op, "A", mpp_cudnn_dtype_name(a->dtype));
  mpp_op_type(op, "B", mpp_cudnn_dtype_name(b->dtype));
  mpp_op_type(op, "C", mpp_cudnn_dtype_name(c->dtype));
  if (o->comp_type >= 0) op->compute_type = mpp_cudnn_dtype_name(o->comp_type);
  mpp_role *ra = mpp_op_role(op, "A", true), *rb = mpp_op_role(op, "B", true),
           *rc = mpp_op_role(op, "C", false);
  mpp_conv_tensor_view(ra, a, pa);
  mpp_conv_tensor_view(rb, b, pb);
  mpp_conv_tensor_view(rc, c, pc);
  /* M, N or K overridden: each batch member's product covers only the
   * leading rows / columns its override tensor says (device values, ragged
   * sequences), the rest of A, B and C is neither read nor written: padding
   * whose values mean nothing. The extent read is not a view mpprof can
   * scan: those operands are not scanned (M: A's rows and C's, N: B's
   * columns and C's, K: A's columns and B's rows). Likewise a batch count
   * other than C's dims' (the deprecated irregularly strided batch). */
  bool irregular = o->irregular_batch > 0 && o->irregular_batch != matmul_batch(c);
  if (o->override[0] || o->override[2] || irregular) ra->unscannable = MPP_NS_LAYOUT;
  if (o->override[1] || o->override[2] || irregular) rb->unscannable = MPP_NS_LAYOUT;
  if (o->override[0] || o->override[1] || irregular) rc->unscannable = MPP_NS_LAYOUT;
  mpp_op_note_ptr(op, pa);
  mpp_op_note_ptr(op, pb);
  mpp_op_note_ptr(op, pc);
}

/* op(X) (rows x cols, element (r, c) at r*srow + c*scol) as
 * analysis/shadow.h's column-major operand: rows packed (not transposed,
 * ld = scol) or columns packed (transposed, ld = srow). A dimension of
 * extent 1 takes any stride. false: neither. */
static bool mm_layout(int64_t rows, int64_t cols, int64_t srow, int64_t scol, bool *trans,
                      int64_t *ld) {
  if (rows < 1 || cols < 1) return false;
  if ((rows == 1 || srow == 1) && (cols == 1 || scol >= rows)) {
    *trans = false;
    *ld = cols == 1 ? rows : scol;
    return true;
  }
  if ((cols == 1 || scol == 1) && (rows == 1 || srow >= cols)) {
    *trans = true;
    *ld = rows == 1 ? cols : srow;
    return true;
  }
  return false;
}

/* What shadow execution needs to re-compute a graph's plain matmul (op.h
 * mm_shadow): C [B, M, N] = A [B, M, K] x B [B, K, N] (or the rank-2
 * [M, K] x [K, N]), each operand's batch extent C's or 1 (broadcast, as
 * cuDNN's backend engines do), M and K (K and N) of A (B) in a layout
 * mm_layout takes, no M/N/K override and no irregular batch count. */
static void mpp_matmul_shadow_of(mpp_op *op, const be_op *o) {
  const mpp_tensor_desc *t[3] = {&o->t[OPND_X].d, &o->t[OPND_W].d, &o->t[OPND_Y].d};
  int nd = t[2]->nd;
  if ((nd != 2 && nd != 3) || t[0]->nd != nd || t[1]->nd != nd || o->override[0] ||
      o->override[1] || o->override[2] ||
      (o->irregular_batch > 0 && o->irregular_batch != matmul_batch(t[2])))
    return;
  int r = nd - 2; /* the first matrix dimension */
  int64_t m = t[0]->dims[r], k = t[0]->dims[r + 1], n = t[1]->dims[r + 1];
  int64_t batch = nd == 3 ? t[2]->dims[0] : 1;
  if (t[1]->dims[r] != k || t[2]->dims[r] != m || t[2]->dims[r + 1] != n || batch < 1) return;
  for (int i = 0; i < 2; i++) {
    int64_t b = nd == 3 ? t[i]->dims[0] : 1, sb = nd == 3 ? t[i]->strides[0] : 0;
    if (b != batch && b != 1) return;
    if (b > 1 && sb <= 0) return;
    op->mm_stride[i] = b > 1 ? sb : 0;
    int64_t rows = i ? k : m, cols = i ? n : k;
    if (!mm_layout(rows, cols, t[i]->strides[r], t[i]->strides[r + 1], &op->mm_trans[i],
                   &op->mm_ld[i]))
      return;
  }
  if (op->m != m || op->n != n || op->k != k || op->batch != batch) return; /* as decoded */
  op->alpha = 1; /* the backend's matmul has no scaling factor */
  op->mm_shadow = true;
}

/* Pointwise and reduction ops are the fused graph's epilogue, not ops of
 * their own; an op without an input tensor is not one mpprof knows. */
static bool recorded(const be_op *o) {
  return o->type != CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
         o->type != CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR && o->t[OPND_X].set;
}

/* The role of a pointwise op's B operand, which the fused kernel reads in
 * its epilogue: a bias added (ADD of a tensor broadcast to the output's
 * shape, [1,K,1,1] as frontends build it), a residual added (ADD of a
 * tensor of the output's size: z, as in cudnnConvolutionBiasActivationForward),
 * a scale multiplied (MUL), another binary operand (pw_b). */
static const char *pointwise_role(const be_op *pw) {
  const mpp_tensor_desc *b = &pw->t[OPND_W].d, *y = &pw->t[OPND_Y].d;
  int64_t nb = 1, ny = 1;
  for (int i = 0; i < b->nd; i++)
    nb *= b->dims[i];
  for (int i = 0; i < y->nd; i++)
    ny *= y->dims[i];
  if (pw->pw_mode == CUDNN_POINTWISE_ADD) return nb < ny ? "bias" : "z";
  return pw->pw_mode == CUDNN_POINTWISE_MUL ? "scale" : "pw_b";
}

/* The pointwise ops a fused graph applies to t, an op's virtual output, on
 * the way to the tensor it writes (materialised): each one's B operand in
 * memory is an input of the op, a role of its own (pointwise_role) whose
 * pointer comes from that tensor (src). */
static void add_pointwise_inputs(mpp_op *op, const be_graph *g, const be_tensor *t,
                                 const be_tensor **src) {
  for (int hops = 0; t->is_virtual && hops < MAX_GRAPH_OPS; hops++) {
    const be_op *pw = NULL;
    for (int i = 0; i < g->nops && !pw; i++)
      if (g->ops[i].type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR &&
          g->ops[i].t[OPND_X].set && g->ops[i].t[OPND_X].uid == t->uid && g->ops[i].t[OPND_Y].set)
        pw = &g->ops[i];
    if (!pw) break;
    const be_tensor *b = &pw->t[OPND_W];
    if (b->set && !b->is_virtual) {
      mpp_role *r = mpp_op_role(op, pointwise_role(pw), true);
      if (r) {
        mpp_conv_tensor_view(r, &b->d, NULL);
        src[op->nroles - 1] = b;
      }
    }
    t = &pw->t[OPND_Y];
  }
}

/* A graph op decoded without its data pointers: all of it but the pointers
 * is fixed by the graph (and the process's settings); src[r]: the tensor
 * role r's pointer comes from. */
static void decode_graph_op(mpp_op *op, const be_graph *g, const be_op *o, const be_tensor **src) {
  const be_tensor *out = materialised(g, &o->t[OPND_Y]);
  src[0] = &o->t[OPND_X];
  src[1] = &o->t[OPND_W];
  src[2] = out;
  if (o->type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
    decode_matmul(op, o, NULL, NULL, NULL);
    add_pointwise_inputs(op, g, &o->t[OPND_Y], src);
    /* as convolutions: only a product the graph writes as it is */
    if (mpp_cfg.shadow && out == &o->t[OPND_Y] && !out->is_virtual) mpp_matmul_shadow_of(op, o);
    return;
  }
  mpp_conv_desc c = o->conv;
  if (!o->has_conv) memset(&c, 0, sizeof c);
  mpp_conv_decode(op, "cudnnBackendExecute", kind_of(o->type), &o->t[OPND_X].d, &o->t[OPND_W].d,
                  &out->d, &c, NULL, NULL, NULL);
  /* beta != 0: y = alpha conv + beta y, the output's prior value read (a
   * virtual output has no memory to read). */
  if (o->beta != 0 && !o->t[OPND_Y].is_virtual) {
    mpp_conv_add_prior(op, &out->d, NULL);
    src[op->nroles - 1] = out;
  }
  add_pointwise_inputs(op, g, &o->t[OPND_Y], src);
  /* Shadow execution re-computes alpha times the convolution: not a graph
   * that fuses more into its output (a virtual one). */
  if (mpp_cfg.shadow && o->has_conv && out == &o->t[OPND_Y] && !out->is_virtual)
    mpp_conv_shadow_of_strided(op, &o->t[OPND_X].d, &o->t[OPND_W].d, &out->d, &c, o->alpha);
}

/* g->decoded, once (left NULL without memory: each execution decodes). */
static void decode_graph_locked(be_graph *g) {
  if (g->decoded) return;
  int n = 0;
  for (int k = 0; k < g->nops; k++)
    if (recorded(&g->ops[k])) n++;
  mpp_op *d = calloc(n ? (size_t)n : 1, sizeof *d);
  if (!d) return;
  n = 0;
  for (int k = 0; k < g->nops; k++)
    if (recorded(&g->ops[k])) {
      decode_graph_op(&d[n], g, &g->ops[k], g->role_src[n]);
      n++;
    }
  g->decoded = d;
}

/* The plan's graph's convolutions and matmuls as ops (none when mpprof does
 * not know the plan); an execution of a further plan of a graph already run
 * is autotuning. */
static bool decode_execute(mpp_calls *rec, cudnnHandle_t handle, void *plan, void *varpack) {
  /* Room for a whole graph (~19 KB, the thread's kept block), reserved before the shadows' lock. */
  if (!mpp_calls_reserve(rec, MAX_GRAPH_OPS, "a cuDNN graph execution")) return false;
  mpp_op *ops = rec->ops;
  int n = 0;
  vp_slot *own = own_pack(varpack), *t = slot;
  plan_memo *pm =
      t && plan ? &t->plans[((uintptr_t)plan * 0x9e3779b97f4a7c15ull) >> (64 - PLAN_MEMO_BITS)]
                : NULL;
  bool cached =
      pm && pm->plan == plan && pm->gen == atomic_load_explicit(&chain_gen, memory_order_acquire);
  bool locked = !cached || !own;
  if (locked) pthread_mutex_lock(&shadows_mu);
  /* A pack of another type (an application bug cuDNN refuses) must not be
   * read as one, whose uid/pointer table would then be other fields, taken
   * for pointers to scan; nor one never finalized: cuDNN refuses it, its
   * pointers may not be set yet. Such an execution is not recorded. */
  const be_vp *vp = own ? &own->vp : NULL;
  bool usable = !own || own->finalized;
  bool unknown = false;
  if (!own) {
    bool known;
    be_shadow *vs = lookup_locked(varpack, &known);
    if (known && (!vs || vs->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR || !vs->finalized))
      usable = false;
    else if (vs)
      vp = &vs->u.vp;
    else
      unknown = true;
  }
  be_graph *g = NULL;
  if (usable && cached) {
    g = pm->graph;
  } else if (usable) {
    be_shadow *p = find_locked(plan);
    /* likewise a plan of another type; an unfinalized plan cannot run */
    if (p && p->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR && p->finalized) g = p->graph;
    if (g) {
      int i;
      for (i = 0; i < g->nplans; i++)
        if (g->plans[i] == plan) break;
      if (i == g->nplans) {
        rec->autotune = g->nplans > 0;
        if (g->nplans < MAX_PLANS) g->plans[g->nplans++] = plan;
      }
      decode_graph_locked(g);
      if (pm && g->decoded && i < MAX_PLANS) {
        pm->plan = plan;
        pm->graph = g;
        pm->gen = atomic_load_explicit(&chain_gen, memory_order_relaxed);
        cached = true;
      }
    }
  }
  if (g) {
    for (int k = 0; k < g->nops && n < MAX_GRAPH_OPS; k++) {
      const be_op *o = &g->ops[k];
      if (!recorded(o)) continue;
      mpp_op *op = &ops[n];
      const be_tensor *own_src[MPP_MAX_ROLES], **src = g->decoded ? g->role_src[n] : own_src;
      if (g->decoded)
        *op = g->decoded[n];
      else
        decode_graph_op(op, g, o, own_src);
      /* The pointers, in the order the decode made the roles. Virtual
       * operands (inside a fused graph) have no memory to read. */
      for (int r = 0; r < op->nroles; r++) {
        const be_tensor *t = src[r];
        void *ptr = ptr_of(vp, t);
        op->roles[r].view.data = ptr;
        mpp_op_note_ptr(op, ptr);
        if (t->is_virtual || !ptr) op->roles[r].unscannable = MPP_NS_UNKNOWN;
      }
      if (cached && n == 0) { /* the memo the plan's last execution here left */
        mpp_site_memo *m = &pm->site;
        if (m->op != g->op_ids[k]) *m = (mpp_site_memo){.op = g->op_ids[k]};
        op->site_memo = m;
      } else {
        mpp_calls_memo(rec, n, g->op_ids[k]);
      }
      n++;
    }
  }
  if (locked) pthread_mutex_unlock(&shadows_mu);
  if (unknown && n)
    mpp_note_incomplete("cudnn_variant_pack_threads",
                        "a cuDNN variant pack made on another thread than the one executing it, "
                        "or changed by another thread, was executed: that execution's tensors "
                        "were not scanned");
  void *stream = n ? mpp_cudnn_stream(handle) : NULL;
  for (int i = 0; i < n; i++)
    ops[i].stream = stream;
  rec->n = n;
  return true;
}

MPP_MULTI_OP_HOOK(syms, cudnnStatus_t, cudnnBackendExecute,
                  (cudnnHandle_t handle, cudnnBackendDescriptor_t executionPlan,
                   cudnnBackendDescriptor_t variantPack),
                  (handle, executionPlan, variantPack), CUDNN_STATUS_NOT_INITIALIZED,
                  mpp_cudnn_succeeded, decode_execute, (handle, executionPlan, variantPack))

/* --- descriptor lifecycle: shadowed after the real call succeeded --- */

#define FAIL CUDNN_STATUS_NOT_INITIALIZED

static void created(cudnnBackendDescriptorType_t type, const cudnnBackendDescriptor_t *desc) {
  if (desc) on_create((int)type, *desc);
}

/* The configs a heuristics query handed out (at most as many as asked for). */
static void got(cudnnBackendDescriptor_t desc, cudnnBackendAttributeName_t name, int64_t requested,
                const int64_t *count, void *elements) {
  if (elements && count) on_get(desc, (int)name, *count < requested ? *count : requested, elements);
}

MPP_STATE_HOOK(syms, cudnnStatus_t, cudnnBackendCreateDescriptor,
               (cudnnBackendDescriptorType_t descriptorType, cudnnBackendDescriptor_t *descriptor),
               (descriptorType, descriptor), FAIL, mpp_cudnn_succeeded, created,
               (descriptorType, descriptor))

MPP_STATE_HOOK(syms, cudnnStatus_t, cudnnBackendDestroyDescriptor,
               (cudnnBackendDescriptor_t descriptor), (descriptor), FAIL, mpp_cudnn_succeeded,
               on_destroy, (descriptor))

MPP_STATE_HOOK(syms, cudnnStatus_t, cudnnBackendFinalize, (cudnnBackendDescriptor_t descriptor),
               (descriptor), FAIL, mpp_cudnn_succeeded, on_finalize, (descriptor))

MPP_STATE_HOOK(syms, cudnnStatus_t, cudnnBackendSetAttribute,
               (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t attributeName,
                cudnnBackendAttributeType_t attributeType, int64_t elementCount,
                const void *arrayOfElements),
               (descriptor, attributeName, attributeType, elementCount, arrayOfElements), FAIL,
               mpp_cudnn_succeeded, on_set,
               (descriptor, (int)attributeName, (int)attributeType, elementCount, arrayOfElements))

MPP_STATE_HOOK(syms, cudnnStatus_t, cudnnBackendGetAttribute,
               (cudnnBackendDescriptor_t const descriptor,
                cudnnBackendAttributeName_t attributeName,
                cudnnBackendAttributeType_t attributeType, int64_t requestedElementCount,
                int64_t *elementCount, void *arrayOfElements),
               (descriptor, attributeName, attributeType, requestedElementCount, elementCount,
                arrayOfElements),
               FAIL, mpp_cudnn_succeeded, got,
               (descriptor, attributeName, requestedElementCount, elementCount, arrayOfElements))
