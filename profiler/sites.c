/* The site table: ops aggregated by their site key (MP_RAW_SITE_KEY in
 * analysis/raw_format.h: layer, API, dtypes, shape, ...), with per-site call counts, per-role
 * stats records (allocated on first use: one mp_stats is ~17 KB), kernels seen
 * through CUPTI, and the capped per-call event list for the timeline.
 *
 * Memory is bounded by MPPROF_MAX_SITES sites (each at most 4 stats records
 * and 32 kernel names), a quarter as many again of sites of merged shapes
 * (the keys of new sites past the cap, their shapes cleared: every layer
 * keeps its numerics), plus MPPROF_MAX_EVENTS events; a cap that is hit
 * makes the raw file say "incomplete" and why. One mutex protects everything but a
 * site's hot counters (atomic) and the threads' event buffers (their own
 * rules, below): the critical sections are short (a hash probe, a few
 * counters, a stats merge). */
#include "mpp.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/kernel_class.h"
#include "analysis/raw_format.h"
#include "analysis/shadow.h"
#include "profiler/jsonw.h"
#include "profiler/call.h"
#include "profiler/op.h"
#include "profiler/scope.h"
#include "profiler/shadow.h"
#include "profiler/sites.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* How many times the calling thread holds `mu` (0 or 1): the exit handler must
 * not wait for a lock its own thread holds (exit() from a signal handler that
 * interrupted a hook inside the lock would otherwise hang forever). */
static __thread MPP_TLS int held_here;

static mpp_site *sites;
static uint32_t nsites, sites_cap;
static uint32_t *index_; /* open addressing: site id + 1, 0 = empty */
static uint32_t index_cap;

/* Timeline events in chunks that never move (nothing is copied as the list
 * grows): a first one of EVENTS_FIRST events, made and touched at activation,
 * then chunks of 2 MiB, each mapped 2 MiB-aligned and advised to be one
 * transparent huge page. A fresh 4 KiB page costs its first write a fault, and
 * in a VM with shadow paging 10-20 us (measured here; ~0.5 us on bare metal):
 * at 102 events to a page, 100-200 ns per recorded call. One huge page is one
 * fault for 52,428 events. Where THP is off, the chunk is plain pages as before. */
#define EVENTS_FIRST 1024u
#define EVENT_CHUNK_BYTES ((size_t)2 << 20)
#define EVENTS_PER_CHUNK (EVENT_CHUNK_BYTES / sizeof(mpp_event))
static mpp_event **event_chunks; /* [0]: the first EVENTS_FIRST; then EVENTS_PER_CHUNK each */
static size_t *event_chunk_size; /* bytes mapped */
static uint32_t nevent_chunks, event_chunks_cap;
static mpp_event *event_next; /* where the next event goes, in the last chunk */
static atomic_bool events_full;
static uint64_t nevents, events_cap;
static _Atomic uint64_t events_dropped; /* also counted without the lock (mpp_site_record) */
static mpp_kernel_event *kevents;       /* filled by the CUPTI sink, capped by max_events too */
static uint64_t nkevents, kevents_cap, kevents_dropped;
/* Calls with no site (the cap, or no memory: each one counted) and calls
 * that failed. The process's calls are the sites' begun calls and the
 * unattributed ones (sites_total_calls); calls still in flight are the begun
 * ones not ended by a success, a failure or as autotuning (sites_in_flight):
 * no global counter is touched per call. */
static uint64_t ops_unattributed, failed_calls;
static uint64_t table_finds; /* mpp_site_find calls (under mu): memos and caches spare them */

/* Each site's counters every call touches (sites.h), in chunks that never
 * move when the site array grows: a memo keeps a pointer to its site's. */
#define HOT_CHUNK 1024u
/* MPPROF_MAX_SITES is at most 2^20, the merged reserve a quarter of it */
#define HOT_CHUNKS (((1u << 20) + (1u << 18)) / HOT_CHUNK)
static mpp_site_hot *hot_chunks[HOT_CHUNKS];
/* Multi-op calls begun per site (mpp_site_multi_again), chunked alike. */
static _Atomic uint64_t *multi_chunks[HOT_CHUNKS];

/* Site id's counters (id < nsites), from the chunk table alone: no line of
 * the site array is read. */
static mpp_site_hot *site_hot(uint32_t id) {
  return &hot_chunks[id / HOT_CHUNK][id % HOT_CHUNK];
}

static uint64_t sites_total_calls_locked(void) {
  uint64_t n = ops_unattributed;
  for (uint32_t i = 0; i < nsites; i++)
    n += atomic_load_explicit(&sites[i].hot->started, memory_order_relaxed);
  return n;
}

static uint64_t sites_in_flight_locked(void) {
  uint64_t begun = 0, ended = failed_calls;
  for (uint32_t i = 0; i < nsites; i++) {
    begun += atomic_load_explicit(&sites[i].hot->started, memory_order_relaxed);
    ended += sites[i].hot->calls + sites[i].autotune_calls;
  }
  return begun > ended ? begun - ended : 0;
}

#define MAX_REASONS 16
static struct {
  const char *key; /* static: one entry per kind of cap */
  char text[160];
} reasons[MAX_REASONS];
static uint32_t nreasons;
static const char *reason_ptrs[MAX_REASONS];

void mpp_sites_lock(void) {
  pthread_mutex_lock(&mu);
  held_here++;
}

void mpp_sites_unlock(void) {
  held_here--;
  pthread_mutex_unlock(&mu);
}

bool mpp_sites_locked_by_caller(void) {
  return held_here > 0;
}

/* Tensor-stats records made ready at activation for the first sites, so that
 * a first call does not allocate and clear them (17 KB each). */
#define STATS_POOL 8
static mp_stats *stats_pool[STATS_POOL];
static int nstats_pool;

/* Library kernels CUPTI saw outside every hooked call (MP_RAW_UNATTRIBUTED). */
static struct {
  uint64_t kernels, gpu_ns;
  char example[160];
} unattributed[MP_KLIB_COUNT];

void mpp_note_unattributed_kernel(const char *name, uint64_t gpu_ns) {
  mp_kernel_lib lib = mp_kernel_library(name);
  if (lib == MP_KLIB_NONE) return;
  mpp_sites_lock();
  unattributed[lib].kernels++;
  unattributed[lib].gpu_ns += gpu_ns;
  if (!unattributed[lib].example[0])
    snprintf(unattributed[lib].example, sizeof unattributed[lib].example, "%s", name);
  mpp_sites_unlock();
}

void mpp_unattributed_write_locked(mpp_jw *w) {
  bool any = false;
  for (int l = 1; l < MP_KLIB_COUNT; l++)
    any |= unattributed[l].kernels > 0;
  if (!any) return;
  mpp_jw_key(w, MP_RK_CUPTI.unattributed_kernels);
  mpp_jw_obj(w);
  for (int l = 1; l < MP_KLIB_COUNT; l++) {
    if (!unattributed[l].kernels) continue;
    mpp_jw_key(w, mp_kernel_lib_name((mp_kernel_lib)l));
    mpp_jw_obj(w);
    mpp_jw_key(w, MP_RK_UNATTRIBUTED.kernels);
    mpp_jw_uint(w, unattributed[l].kernels);
    mpp_jw_key(w, MP_RK_UNATTRIBUTED.gpu_ns);
    mpp_jw_uint(w, unattributed[l].gpu_ns);
    mpp_jw_key(w, MP_RK_UNATTRIBUTED.example);
    mpp_jw_str(w, unattributed[l].example);
    mpp_jw_obj_end(w);
  }
  mpp_jw_obj_end(w);
}

static void free_site(mpp_site *s) {
  free(s->layer);
  free(s->shadow); /* one malloc block (shadow.c makes it so) */
  for (int r = 0; r < MPP_MAX_ROLES; r++)
    free(s->stats[r]);
  for (int i = 0; i < s->nkernels; i++)
    free(s->kernels[i].name);
}

/* The chunk of event i, and i's place in it. */
static uint32_t event_chunk_of(uint64_t i, uint64_t *ret_offset) {
  if (i < EVENTS_FIRST) {
    *ret_offset = i;
    return 0;
  }
  *ret_offset = (i - EVENTS_FIRST) % EVENTS_PER_CHUNK;
  return 1 + (uint32_t)((i - EVENTS_FIRST) / EVENTS_PER_CHUNK);
}

/* Pages mapped for `bytes`, aligned to `align` (a power of two, at least a
 * page): the surplus of an over-sized mapping is unmapped. */
static void *map_aligned(size_t bytes, size_t align) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  if (align <= page) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
  }
  char *p = mmap(NULL, bytes + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  char *q = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
  if (q > p) munmap(p, (size_t)(q - p));
  munmap(q + bytes, (size_t)(p + align - q));
  return q;
}

/* The next chunk of the events: all mapped, none touched but the first
 * chunk's; false without memory. */
static bool add_event_chunk_locked(void) {
  if (nevent_chunks == event_chunks_cap) {
    uint32_t cap = event_chunks_cap ? 2 * event_chunks_cap : 8;
    mpp_event **nc = realloc(event_chunks, cap * sizeof *nc);
    if (!nc) return false;
    event_chunks = nc;
    size_t *ns = realloc(event_chunk_size, cap * sizeof *ns);
    if (!ns) return false;
    event_chunk_size = ns;
    event_chunks_cap = cap;
  }
  uint64_t left = mpp_cfg.max_events - events_cap, n;
  size_t bytes, page = (size_t)sysconf(_SC_PAGESIZE);
  mpp_event *p;
  if (nevent_chunks == 0) {
    n = left < EVENTS_FIRST ? left : EVENTS_FIRST;
    bytes = (n * sizeof(mpp_event) + page - 1) & ~(page - 1);
    p = map_aligned(bytes, page);
    if (!p) return false;
    for (size_t b = 0; b < bytes; b += page) /* the faults now, not in the first calls */
      ((volatile char *)p)[b] = 0;
  } else {
    n = left < EVENTS_PER_CHUNK ? left : EVENTS_PER_CHUNK;
    bytes = EVENT_CHUNK_BYTES; /* whole, even for the last events: a huge page is all or none */
    p = map_aligned(bytes, EVENT_CHUNK_BYTES);
    if (!p) return false;
#ifdef MADV_HUGEPAGE
    madvise(p, bytes, MADV_HUGEPAGE); /* a hint: refused, the chunk is plain pages */
#endif
  }
  event_chunks[nevent_chunks] = p;
  event_chunk_size[nevent_chunks++] = bytes;
  event_next = p;
  events_cap += n;
  return true;
}

static void free_event_chunks(void) {
  for (uint32_t k = 0; k < nevent_chunks; k++)
    munmap(event_chunks[k], event_chunk_size[k]);
  free(event_chunks);
  free(event_chunk_size);
  event_chunks = NULL;
  event_chunk_size = NULL;
  nevent_chunks = event_chunks_cap = 0;
  event_next = NULL;
}

const mpp_event *mpp_tables_event(const mpp_tables *t, uint64_t i) {
  (void)t; /* the chunks are sites.c's; the view says how many events there are */
  uint64_t off;
  uint32_t k = event_chunk_of(i, &off);
  return &event_chunks[k][off];
}

/* Site ids hold until the tables are reset: memos of them (mpp_site_memo)
 * record the generation they saw. */
static _Atomic uint64_t generation = 1;

uint64_t mpp_sites_generation(void) {
  return atomic_load_explicit(&generation, memory_order_acquire);
}

static void event_bufs_reset(void);

void mpp_sites_reset(void) {
  atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
  pthread_mutex_init(&mu, NULL);
  held_here = 0; /* a fork child: the prepare handler took the lock on this thread */
  for (uint32_t i = 0; i < nsites; i++)
    free_site(&sites[i]);
  free(sites);
  free(index_);
  free_event_chunks();
  event_bufs_reset();
  free(kevents);
  sites = NULL;
  index_ = NULL;
  kevents = NULL;
  nsites = sites_cap = index_cap = 0;
  nevents = events_cap = 0;
  atomic_store(&events_dropped, 0);
  nkevents = kevents_cap = kevents_dropped = 0;
  atomic_store(&events_full, false);
  ops_unattributed = failed_calls = 0;
  table_finds = 0;
  for (uint32_t i = 0; i < HOT_CHUNKS; i++) {
    free(hot_chunks[i]);
    hot_chunks[i] = NULL;
    free(multi_chunks[i]);
    multi_chunks[i] = NULL;
  }
  memset(unattributed, 0, sizeof unattributed);
  nreasons = 0;
}

/* Keep the first message per kind; later ones only update its counts. */
static void note_reason_locked(const char *key, const char *fmt, va_list ap) {
  uint32_t i;
  for (i = 0; i < nreasons; i++)
    if (!strcmp(reasons[i].key, key)) break;
  if (i == nreasons) {
    if (nreasons == MAX_REASONS) return;
    nreasons++;
    reasons[i].key = key;
  }
  vsnprintf(reasons[i].text, sizeof reasons[i].text, fmt, ap);
}

static void note_reason(const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  note_reason_locked(key, fmt, ap);
  va_end(ap);
}

void mpp_note_incomplete(const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  mpp_sites_lock();
  note_reason_locked(key, fmt, ap);
  mpp_sites_unlock();
  va_end(ap);
}

void mpp_note_failed_call(void) {
  mpp_sites_lock();
  failed_calls++;
  mpp_sites_unlock();
}

/* --- keys --- */

/* One multiply per field: the key has ~25 fields and is hashed on every call. */
static uint64_t mix(uint64_t h, uint64_t v) {
  return (h ^ v) * 0x100000001b3ull + (h >> 29);
}

static uint64_t finish_hash(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

/* Key strings are static (hook modules and the dtype tables define each
 * spelling once), so their addresses hash them; equality still compares the
 * characters. A spelling defined twice would only split a site in two. */
static uint64_t mix_str(uint64_t h, const char *s) {
  return mix(h, (uint64_t)(uintptr_t)s);
}

static uint64_t double_bits(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
}

static uint64_t mix_conv(uint64_t h, const mpp_op *op) {
  if (!op->has_conv) return mix(h, 0);
  const mpp_conv *c = &op->conv;
  const int64_t v[] = {c->n,         c->c,           c->h,           c->w,         c->k,
                       c->r,         c->s,           c->pad[0],      c->pad[1],    c->stride[0],
                       c->stride[1], c->dilation[0], c->dilation[1], c->groups,    c->d,
                       c->t,         c->pad_d,       c->stride_d,    c->dilation_d};
  h = mix(h, 1);
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
    h = mix(h, (uint64_t)v[i]);
  return h;
}

static uint64_t mix_types(uint64_t h, const mpp_op *op) {
  for (int i = 0; i < op->ntypes; i++)
    h = mix_str(h, op->type_names[i]);
  return h;
}

static uint64_t mix_roles(uint64_t h, const mpp_op *op) {
  for (int i = 0; i < op->nroles; i++)
    h = mix_str(h, op->roles[i].name);
  return h;
}

/* Hash and equality of the site key, one step per row of MP_RAW_SITE_KEY
 * (analysis/raw_format.h); the kind of a row names the step. */
#define HASH_STR(f) h = mix_str(h, op->f)
#define HASH_STR_OPT(f) h = mix_str(h, op->f)
#define HASH_OPKIND(f) h = mix(h, (uint64_t)op->f)
#define HASH_LAYER(f) h = mix(h, layer->hash)
#define HASH_PHASE(f) h = mix(h, layer->phase)
#define HASH_CLASS(f) h = mix_str(h, layer->module_class) /* interned by scope.c */
#define HASH_I64(f) h = mix(h, (uint64_t)op->f)
#define HASH_I64_OPT(f) h = mix(h, (uint64_t)op->f)
#define HASH_TRANS(f) h = mix(h, (uint64_t)(unsigned char)op->f)
#define HASH_TYPES(f) h = mix_types(h, op)
#define HASH_CONV(f) h = mix_conv(h, op)
#define HASH_MATH(f) h = mix(h, (uint64_t)(int64_t)op->f)
#define HASH_FP8(f) h = mix(h, op->f)
#define HASH_SCALE(f) h = mix(h, double_bits(op->f))
#define HASH_ROLES(f) h = mix_roles(h, op)
#define HASH_FLAG(f) h = mix(h, op->f)

static uint64_t op_hash(const mpp_op *op, const mpp_layer *layer) {
  uint64_t h = 0;
#define X(f, json, kind, doc) HASH_##kind(f);
  MP_RAW_SITE_KEY(X)
#undef X
  return finish_hash(h);
}

static bool str_eq(const char *a, const char *b) {
  return a == b || (a && b && !strcmp(a, b));
}

static bool types_eq(const mpp_op *a, const mpp_op *b) {
  if (a->ntypes != b->ntypes) return false;
  for (int i = 0; i < a->ntypes; i++)
    if (!str_eq(a->type_keys[i], b->type_keys[i]) || !str_eq(a->type_names[i], b->type_names[i]))
      return false;
  return true;
}

static bool conv_eq(const mpp_op *a, const mpp_op *b) {
  return a->has_conv == b->has_conv &&
         (!a->has_conv || !memcmp(&a->conv, &b->conv, sizeof a->conv));
}

static bool roles_eq(const mpp_op *a, const mpp_op *b) {
  if (a->nroles != b->nroles) return false;
  for (int i = 0; i < a->nroles; i++)
    if (!str_eq(a->roles[i].name, b->roles[i].name)) return false;
  return true;
}

#define EQ_STR(f) str_eq(k->f, op->f)
#define EQ_STR_OPT(f) str_eq(k->f, op->f)
#define EQ_OPKIND(f) (k->f == op->f)
#define EQ_LAYER(f) true /* compared last: the longest */
#define EQ_PHASE(f) (s->phase == layer->phase)
#define EQ_CLASS(f) str_eq(s->module_class, layer->module_class)
#define EQ_I64(f) (k->f == op->f)
#define EQ_I64_OPT(f) (k->f == op->f)
#define EQ_TRANS(f) (k->f == op->f)
#define EQ_TYPES(f) types_eq(k, op)
#define EQ_CONV(f) conv_eq(k, op)
#define EQ_MATH(f) (k->f == op->f)
#define EQ_FP8(f) (k->f == op->f)
#define EQ_SCALE(f) (k->f == op->f)
#define EQ_ROLES(f) roles_eq(k, op)
#define EQ_FLAG(f) (k->f == op->f)

static bool op_key_eq(const mpp_site *s, const mpp_op *op, const mpp_layer *layer) {
  const mpp_op *k = &s->key;
#define X(f, json, kind, doc) &&EQ_##kind(f)
  return true MP_RAW_SITE_KEY(X) && !strcmp(s->layer, layer->path);
#undef X
}

static bool grow_index(void) {
  uint32_t cap = index_cap ? index_cap * 2 : 64;
  uint32_t *ni = calloc(cap, sizeof *ni);
  if (!ni) return false;
  for (uint32_t i = 0; i < nsites; i++) {
    uint32_t j = (uint32_t)sites[i].hash & (cap - 1);
    while (ni[j])
      j = (j + 1) & (cap - 1);
    ni[j] = i + 1;
  }
  free(index_);
  index_ = ni;
  index_cap = cap;
  return true;
}

/* The site id of op's key in the index, or -1. */
static int index_find_locked(const mpp_op *op, const mpp_layer *layer, uint64_t h) {
  if (!index_cap) return -1;
  for (uint32_t j = (uint32_t)h & (index_cap - 1); index_[j]; j = (j + 1) & (index_cap - 1)) {
    mpp_site *s = &sites[index_[j] - 1];
    if (s->hash == h && op_key_eq(s, op, layer)) return (int)(index_[j] - 1);
  }
  return -1;
}

/* Sites of merged shapes past MPPROF_MAX_SITES: a quarter as many again, at
 * least one. */
static uint32_t merged_reserve(void) {
  return mpp_cfg.max_sites / 4 ? mpp_cfg.max_sites / 4 : 1;
}

/* A new site of op's key (hash h); -1 without memory. */
static int new_site_locked(const mpp_op *op, const mpp_layer *layer, uint64_t h) {
  uint32_t cap_all = mpp_cfg.max_sites + merged_reserve();
  if ((nsites + 1) * 2 > index_cap && !grow_index()) return -1;
  if (nsites == sites_cap) {
    uint32_t cap = sites_cap ? sites_cap * 2 : 64;
    if (cap > cap_all) cap = cap_all;
    mpp_site *ns = realloc(sites, cap * sizeof *ns);
    if (!ns) return -1;
    sites = ns;
    sites_cap = cap;
  }
  if (nsites / HOT_CHUNK >= HOT_CHUNKS) return -1;
  mpp_site_hot **chunk = &hot_chunks[nsites / HOT_CHUNK];
  if (!*chunk && !(*chunk = aligned_alloc(64, HOT_CHUNK * sizeof **chunk))) return -1;
  _Atomic uint64_t **multi = &multi_chunks[nsites / HOT_CHUNK];
  if (!*multi && !(*multi = calloc(HOT_CHUNK, sizeof **multi))) return -1; /* zero until reset */
  char *l = strdup(layer->path);
  if (!l) return -1;
  mpp_site *s = &sites[nsites];
  memset(s, 0, sizeof *s);
  s->hash = h;
  s->layer = l;
  s->module_class = layer->module_class;
  s->phase = layer->phase;
  s->key = *op;
  s->key.stream = NULL;
  s->key.ptr_align = 0;
  s->key.site_memo = NULL;
  s->hot = site_hot(nsites);
  memset(s->hot, 0, sizeof *s->hot);
  for (int i = 0; i < MPP_MAX_ROLES; i++) {
    memset(&s->key.roles[i].view, 0, sizeof s->key.roles[i].view);
    s->key.roles[i].view.dtype = op->roles[i].view.dtype;
    s->key.roles[i].ptr_array = NULL;
  }
  uint32_t j = (uint32_t)h & (index_cap - 1);
  while (index_[j])
    j = (j + 1) & (index_cap - 1);
  index_[j] = nsites + 1;
  return (int)nsites++;
}

/* op's key with the shape's fields cleared (as the writer leaves them out),
 * into the table's one scratch op (under mu: an op is too big for the stack
 * of a hook). */
static mpp_op merged_scratch;

static const mpp_op *merged_key_locked(const mpp_op *op) {
  mpp_op *k = &merged_scratch;
  *k = *op;
  k->m = k->n = k->k = k->batch = -1;
  k->lda = k->ldb = k->ldc = k->ldd = -1;
  k->has_conv = false;
  memset(&k->conv, 0, sizeof k->conv);
  k->shapes_merged = true;
  return k;
}

/* A site for a key the table does not hold: a new one below MPPROF_MAX_SITES;
 * past it, the site of the same key with its shapes merged (one per layer,
 * API, dtypes, ...: every layer keeps its numerics), new ones of those up to
 * the reserve; past that, -1 and the call is counted as not attributed. */
static int add_site_locked(const mpp_op *op, const mpp_layer *layer, uint64_t h) {
  int id = -1;
  if (nsites < mpp_cfg.max_sites) {
    id = new_site_locked(op, layer, h);
    if (id < 0 && ops_unattributed++ == 0) note_reason("max_sites", "out of memory for sites");
    return id;
  }
  const mpp_op *mk = merged_key_locked(op);
  uint64_t mh = op_hash(mk, layer);
  id = index_find_locked(mk, layer, mh);
  if (id >= 0) return id;
  if (nsites < mpp_cfg.max_sites + merged_reserve()) {
    id = new_site_locked(mk, layer, mh);
    if (id < 0 && ops_unattributed++ == 0) note_reason("max_sites", "out of memory for sites");
    return id;
  }
  if (ops_unattributed++ == 0)
    note_reason("max_sites", "max_sites (%u) and the reserve of %u sites of merged shapes reached",
                mpp_cfg.max_sites, merged_reserve());
  return -1;
}

int mpp_site_find(const mpp_op *op, const mpp_layer *layer, uint64_t *ret_call_index,
                  const char **ret_layer, mpp_site_hot **ret_hot) {
  uint64_t h = op_hash(op, layer);
  int id = -1;
  mpp_sites_lock();
  table_finds++;
  id = index_find_locked(op, layer, h);
  if (id < 0) id = add_site_locked(op, layer, h);
  if (id >= 0) {
    *ret_call_index = atomic_fetch_add_explicit(&sites[id].hot->started, 1, memory_order_relaxed);
    if (ret_layer) *ret_layer = sites[id].layer;
    if (ret_hot) *ret_hot = sites[id].hot;
  }
  mpp_sites_unlock();
  return id;
}

uint64_t mpp_sites_table_finds(void) {
  mpp_sites_lock();
  uint64_t n = table_finds;
  mpp_sites_unlock();
  return n;
}

/* No lock: `started` is an atomic that stays where it is. */
uint64_t mpp_site_again(mpp_site_hot *hot) {
  return atomic_fetch_add_explicit(&hot->started, 1, memory_order_relaxed);
}

uint64_t mpp_site_multi_again(int site) {
  _Atomic uint64_t *n = &multi_chunks[(uint32_t)site / HOT_CHUNK][(uint32_t)site % HOT_CHUNK];
  return atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
}

void mpp_site_record_autotune(int site) {
  mpp_sites_lock();
  sites[site].autotune_calls++;
  mpp_sites_unlock();
}

static mp_stats *role_stats_locked(mpp_site *s, int role, mp_dtype dtype) {
  if (!s->stats[role] && nstats_pool > 0) {
    s->stats[role] = stats_pool[--nstats_pool];
    mp_stats_reinit_scanned(s->stats[role], dtype); /* cleared in full when pooled */
  }
  if (!s->stats[role]) {
    s->stats[role] = malloc(sizeof(mp_stats));
    if (!s->stats[role]) {
      note_reason("oom_stats", "out of memory: some tensor stats dropped");
      return NULL;
    }
    mp_stats_init(s->stats[role], dtype);
  }
  return s->stats[role];
}

/* Start-up work of the tables, done at activation rather than in the first
 * hooked op a program may be timing: the site table, its index and the first
 * block of timeline events allocated and touched (page faults included), and
 * the stats pool filled. Memory only; nothing here needs CUDA. */
void mpp_sites_prepare(void) {
  mpp_sites_lock();
  if (!index_cap) grow_index();
  if (!sites_cap && mpp_cfg.max_sites > 0) {
    uint32_t cap = mpp_cfg.max_sites < 64 ? mpp_cfg.max_sites : 64;
    mpp_site *ns = malloc(cap * sizeof *ns);
    if (ns) {
      memset(ns, 0, cap * sizeof *ns);
      sites = ns;
      sites_cap = cap;
    }
  }
  if (!events_cap && mpp_cfg.max_events > 0) add_event_chunk_locked();
  while (nstats_pool < STATS_POOL) {
    mp_stats *s = malloc(sizeof *s);
    if (!s) break;
    mp_stats_init(s, MP_DTYPE_INVALID);
    stats_pool[nstats_pool++] = s;
  }
  mpp_sites_unlock();
}

bool mpp_events_wanted(void) {
  return !atomic_load_explicit(&events_full, memory_order_relaxed);
}

/* One event into the list (or counted as dropped at its cap). */
static void store_event_locked(const mpp_event *e) {
  if (nevents == events_cap) {
    if (events_cap >= mpp_cfg.max_events) {
      /* The hot path of a long run: count only, the text is made when read. */
      if (atomic_fetch_add_explicit(&events_dropped, 1, memory_order_relaxed) == 0)
        note_reason("max_events", "max_events (%llu) reached",
                    (unsigned long long)mpp_cfg.max_events);
      atomic_store_explicit(&events_full, true, memory_order_relaxed);
      return;
    }
    if (!add_event_chunk_locked()) {
      if (atomic_fetch_add_explicit(&events_dropped, 1, memory_order_relaxed) == 0)
        note_reason("max_events", "out of memory for events");
      return;
    }
  }
  *event_next++ = *e;
  nevents++;
}

/* --- a thread's events, written without the lock ---
 *
 * A thread writes its calls' events into a buffer of its own and moves them
 * to the list under the lock when the buffer is full; whoever reads the
 * list (mpp_tables_get, under the lock) first takes every thread's events
 * written so far. The owner alone writes `written` (release, after the
 * event); `taken` is changed under the lock only, and so is `written` reset
 * to 0 (by the owner, its buffer full). The buffers are listed (under the
 * lock); a thread that ends moves its events and frees its buffer. */
#define THREAD_EVENTS 128u

typedef struct event_buf {
  _Atomic uint32_t written;
  uint32_t taken;
  struct event_buf *next;
  mpp_event ev[THREAD_EVENTS];
} event_buf;

static event_buf *event_bufs; /* under mu */
static __thread MPP_TLS event_buf *my_events;

static void take_events_locked(event_buf *b) {
  uint32_t w = atomic_load_explicit(&b->written, memory_order_acquire);
  for (uint32_t i = b->taken; i < w; i++)
    store_event_locked(&b->ev[i]);
  b->taken = w;
}

static void take_all_events_locked(void) {
  for (event_buf *b = event_bufs; b; b = b->next)
    take_events_locked(b);
}

static void event_buf_free(void *p) {
  event_buf *b = p;
  /* A thread that ends from a signal handler that interrupted it inside
   * the lock: its buffer stays listed, and the next raw write takes its
   * events. */
  if (mpp_sites_locked_by_caller()) return;
  mpp_sites_lock();
  take_events_locked(b);
  for (event_buf **q = &event_bufs; *q; q = &(*q)->next)
    if (*q == b) {
      *q = b->next;
      break;
    }
  mpp_sites_unlock();
  mpp_unmap(b, sizeof *b);
  my_events = NULL;
}

static mpp_thread_key events_key = MPP_THREAD_KEY(event_buf_free);

static event_buf *event_buf_get(void) {
  if (!my_events) {
    event_buf *b = mpp_map_zeroed(sizeof *b);
    if (!b) return NULL;
    mpp_sites_lock();
    b->next = event_bufs;
    event_bufs = b;
    mpp_sites_unlock();
    my_events = b;
    mpp_thread_key_set(&events_key, b);
  }
  return my_events;
}

/* In a forked child (mpp_sites_reset) only this thread's buffer has an
 * owner: the others are freed, this one emptied. */
static void event_bufs_reset(void) {
  for (event_buf *b = event_bufs, *next; b; b = next) {
    next = b->next;
    if (b != my_events) mpp_unmap(b, sizeof *b);
  }
  event_bufs = my_events;
  if (my_events) {
    my_events->next = NULL;
    my_events->taken = 0;
    atomic_store_explicit(&my_events->written, 0, memory_order_relaxed);
  }
}

/* The call's event, into this thread's buffer (the list when there is none). */
static void add_event(int site, const mpp_op *op, const mpp_call *c, uint64_t dur_ns) {
  if (!c->timed) {
    atomic_fetch_add_explicit(&events_dropped, 1, memory_order_relaxed);
    return;
  }
  mpp_event e = {.site = (uint32_t)site,
                 .thread = mpp_thread_id(),
                 .t_ns = c->t0_ns,
                 .dur_ns = dur_ns,
                 .stream = (uintptr_t)op->stream,
                 .call = c->index};
  event_buf *b = event_buf_get();
  uint32_t w = b ? atomic_load_explicit(&b->written, memory_order_relaxed) : 0;
  if (!b || w == THREAD_EVENTS) {
    mpp_sites_lock();
    if (b) {
      take_events_locked(b);
      b->taken = 0;
      atomic_store_explicit(&b->written, 0, memory_order_relaxed);
      w = 0;
    } else {
      store_event_locked(&e);
    }
    mpp_sites_unlock();
    if (!b) return;
  }
  b->ev[w] = e;
  atomic_store_explicit(&b->written, w + 1, memory_order_release);
}

static void fp8_value_note(mpp_fp8_value *v, double x, bool unread) {
  if (unread) {
    v->unread++;
    return;
  }
  if (isnan(x)) return; /* no pointer set */
  if (v->read++ == 0) {
    v->min = v->max = x;
    return;
  }
  if (x < v->min) v->min = x;
  if (x > v->max) v->max = x;
}

static void note_ptr_align(mpp_site_hot *hot, uint64_t align) {
  uint64_t was = atomic_load_explicit(&hot->ptr_align, memory_order_relaxed);
  while (align && (!was || align < was) &&
         !atomic_compare_exchange_weak_explicit(&hot->ptr_align, &was, align, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}

/* Whether the call has more to record than its count, its sampled-out
 * roles, its alignment and its event: a host scan's stats, other reasons
 * not scanned, FP8 scalars. */
static bool record_needs_lock(const mpp_op *op, const mpp_call *c) {
  uint32_t others = 0; /* (no branch per reason) */
#pragma GCC unroll 16
  for (int r = 0; r < MPP_NS_COUNT; r++)
    others |= r == MPP_NS_SAMPLED_OUT ? 0 : c->ns_counts[r];
  return c->scan || op->fp8_scales || op->amax_d_ptr || op->amax_aux_ptr || others;
}

/* A call with nothing more to record than its count, sampled-out roles,
 * alignment and event takes no lock. */
void mpp_site_record(int site, const mpp_op *op, const mpp_call *c, uint64_t dur_ns) {
  mpp_site_hot *hot = site_hot((uint32_t)site);
  atomic_fetch_add_explicit(&hot->calls, 1, memory_order_relaxed);
  note_ptr_align(hot, op->ptr_align);
  if (!record_needs_lock(op, c)) {
    if (c->ns_counts[MPP_NS_SAMPLED_OUT])
      atomic_fetch_add_explicit(&hot->sampled_out, c->ns_counts[MPP_NS_SAMPLED_OUT],
                                memory_order_relaxed);
    add_event(site, op, c, dur_ns);
    return;
  }
  mpp_sites_lock();
  mpp_site *s = &sites[site];
  if (c->scan) s->scanned_calls++;
  /* Zero counts are not added: lines not written are not missed. */
  for (int r = 0; r < MPP_NS_COUNT; r++)
    if (c->ns_counts[r]) s->not_scanned[r] += c->ns_counts[r];
  if (c->scan) /* host scans ran only then */
    for (int r = 0; r < op->nroles; r++) {
      if (!c->tmp_used[r]) continue;
      mp_stats *dst = role_stats_locked(s, r, c->tmp[r]->dtype);
      if (dst) mp_stats_merge_scanned(dst, c->tmp[r]); /* a host scan's record */
    }
  /* Values the device scan reads are noted by its sink (mpp_site_note_fp8).
   * Without a scale pointer (fp8_scales) every value is NAN and none unread. */
  if (op->fp8_scales) {
    for (int i = 0; i < 4; i++)
      if (!(c->fp8_on_device & (1u << i)))
        fp8_value_note(&s->fp8_scale[i], op->fp8_scale[i], op->fp8_scale_unread[i]);
    if ((op->fp8_scales & MPP_FP8_AUX) && !(c->fp8_on_device & MPP_FP8_AUX))
      fp8_value_note(&s->aux_scale, op->aux_scale, op->aux_scale_unread);
  }
  if (op->amax_d_ptr && !(c->fp8_on_device & MPP_FP8_AMAX_D))
    fp8_value_note(&s->amax_d, op->amax_d, isnan(op->amax_d));
  if (op->amax_aux_ptr && !(c->fp8_on_device & MPP_FP8_AMAX_AUX))
    fp8_value_note(&s->amax_aux, op->amax_aux, isnan(op->amax_aux));
  mpp_sites_unlock();
  add_event(site, op, c, dur_ns);
}

void mpp_site_note_fp8(int site, const double values[MPP_FP8_VALUES], unsigned requested,
                       unsigned read) {
  mpp_sites_lock();
  if (site >= 0 && (uint32_t)site < nsites) {
    mpp_site *s = &sites[site];
    mpp_fp8_value *slot[MPP_FP8_VALUES] = {&s->fp8_scale[0], &s->fp8_scale[1], &s->fp8_scale[2],
                                           &s->fp8_scale[3], &s->amax_d,       &s->aux_scale,
                                           &s->amax_aux};
    /* As mpp_site_record notes host-read values (a NaN amax: unread). */
    for (int i = 0; i < MPP_FP8_VALUES; i++) {
      bool amax = (1u << i) & (MPP_FP8_AMAX_D | MPP_FP8_AMAX_AUX);
      if (requested & (1u << i))
        fp8_value_note(slot[i], values[i], !(read & (1u << i)) || (amax && isnan(values[i])));
    }
  }
  mpp_sites_unlock();
}

void mpp_site_merge_stats(int site, int role, const mp_stats *st) {
  mpp_sites_lock();
  if (site >= 0 && (uint32_t)site < nsites && role >= 0 && role < MPP_MAX_ROLES) {
    mp_stats *dst = role_stats_locked(&sites[site], role, st->dtype);
    if (dst) mp_stats_merge(dst, st);
  }
  mpp_sites_unlock();
}

static void add_kernel_event_locked(int site, uint32_t call, uint32_t kernel, uint64_t start_ns,
                                    uint64_t end_ns, uint32_t stream) {
  if (nkevents == kevents_cap) {
    uint64_t cap = kevents_cap ? kevents_cap * 2 : 1024;
    if (cap > mpp_cfg.max_events) cap = mpp_cfg.max_events;
    mpp_kernel_event *ne = cap > kevents_cap ? realloc(kevents, cap * sizeof *ne) : NULL;
    if (!ne) {
      if (kevents_dropped++ == 0)
        note_reason("max_kernel_events", "max_events (%llu) kernel events reached",
                    (unsigned long long)mpp_cfg.max_events);
      return;
    }
    kevents = ne;
    kevents_cap = cap;
  }
  kevents[nkevents++] = (mpp_kernel_event){.site = (uint32_t)site,
                                           .call = call,
                                           .kernel = kernel,
                                           .stream = stream,
                                           .start_ns = start_ns,
                                           .end_ns = end_ns};
}

void mpp_site_kernel(int site, uint32_t call, const char *name, uint64_t start_ns, uint64_t end_ns,
                     uint32_t stream) {
  uint64_t gpu_ns = end_ns > start_ns ? end_ns - start_ns : 0;
  mpp_sites_lock();
  if (site < 0 || (uint32_t)site >= nsites) {
    mpp_sites_unlock();
    return;
  }
  mpp_site *s = &sites[site];
  s->gpu_ns += gpu_ns;
  s->kernel_launches++;
  int i;
  for (i = 0; i < s->nkernels; i++)
    if (!strcmp(s->kernels[i].name, name ? name : "?")) break;
  if (i == s->nkernels) {
    char *copy = NULL;
    if (s->nkernels < MPP_SITE_MAX_KERNELS) copy = strdup(name ? name : "?");
    if (!copy) {
      if (s->kernels_other++ == 0)
        note_reason("max_kernels",
                    "more than %d kernel names in a site: launches counted in gpu_ns only",
                    MPP_SITE_MAX_KERNELS);
      mpp_sites_unlock();
      return;
    }
    s->kernels[i] = (mpp_site_kernel_t){.name = copy, .tc = -1};
    s->nkernels++;
  }
  s->kernels[i].count++;
  s->kernels[i].gpu_ns += gpu_ns;
  add_kernel_event_locked(site, call, (uint32_t)i, start_ns, end_ns, stream);
  mpp_sites_unlock();
}

void mpp_site_kernel_tc(int site, const char *name, bool tc, const double *values, int nvalues) {
  mpp_sites_lock();
  if (site >= 0 && (uint32_t)site < nsites) {
    mpp_site *s = &sites[site];
    for (int i = 0; i < s->nkernels; i++) {
      mpp_site_kernel_t *k = &s->kernels[i];
      if (strcmp(k->name, name ? name : "?")) continue;
      /* Any measured launch on the tensor pipe makes the kernel a Tensor Core one. */
      if (k->tc < (tc ? 1 : 0)) k->tc = tc ? 1 : 0;
      k->tc_profiled++;
      for (int m = 0; m < nvalues && m < MPP_SITE_TC_VALUES; m++)
        k->tc_values[m] += values[m];
      break;
    }
  }
  mpp_sites_unlock();
}

void mpp_sites_note_in_flight(void) {
  mpp_sites_lock();
  uint64_t n = sites_in_flight_locked();
  if (n)
    note_reason("calls_in_flight",
                "calls_in_flight: %llu calls had not returned at exit (other threads inside "
                "a hooked call): counted in calls, in no site",
                (unsigned long long)n);
  mpp_sites_unlock();
}

/* Reason texts with the counts as of now: "<first message>: N ops not attributed". */
static void finish_reasons_locked(uint64_t ranges_dropped) {
  for (uint32_t i = 0; i < nreasons; i++) {
    uint64_t n = ops_unattributed;
    const char *what = NULL;
    if (!strcmp(reasons[i].key, "max_sites")) {
      n = ops_unattributed;
      what = "ops not attributed";
    } else if (!strcmp(reasons[i].key, "max_events")) {
      n = events_dropped;
      what = "events dropped";
    } else if (!strcmp(reasons[i].key, "max_kernel_events")) {
      n = kevents_dropped;
      what = "kernel events dropped";
    } else if (!strcmp(reasons[i].key, "max_ranges")) {
      n = ranges_dropped;
      what = "NVTX ranges dropped";
    }
    if (!what) continue;
    char *colon = strstr(reasons[i].text, ": ");
    if (colon) *colon = '\0';
    size_t len = strlen(reasons[i].text);
    snprintf(reasons[i].text + len, sizeof reasons[i].text - len, ": %llu %s",
             (unsigned long long)n, what);
  }
}

void mpp_tables_get(mpp_tables *t, uint64_t ranges_dropped) {
  take_all_events_locked();
  for (uint32_t i = 0; i < nsites; i++)
    sites[i].not_scanned[MPP_NS_SAMPLED_OUT] +=
        atomic_exchange_explicit(&sites[i].hot->sampled_out, 0, memory_order_relaxed);
  finish_reasons_locked(ranges_dropped);
  t->sites = sites;
  t->nsites = nsites;
  t->nevents = nevents;
  t->events_dropped = events_dropped;
  t->kevents = kevents;
  t->nkevents = nkevents;
  t->kevents_dropped = kevents_dropped;
  t->ops_unattributed = ops_unattributed;
  t->failed_calls = failed_calls;
  t->total_calls = sites_total_calls_locked();
  for (uint32_t i = 0; i < nreasons; i++)
    reason_ptrs[i] = reasons[i].text;
  t->nreasons = nreasons;
  t->reasons = reason_ptrs;
}

struct mpp_shadow_site *mpp_site_shadow_install(int site, struct mpp_shadow_site *fresh) {
  mpp_sites_lock();
  mpp_site *s = &sites[site];
  if (!s->shadow) s->shadow = fresh;
  struct mpp_shadow_site *p = s->shadow;
  mpp_sites_unlock();
  return p;
}

int mpp_site_role_loss_scale_log2(int site, int role) {
  int ls = 0;
  mpp_sites_lock();
  if (site >= 0 && (uint32_t)site < nsites && role >= 0 && role < MPP_MAX_ROLES) {
    const mp_stats *st = sites[site].stats[role];
    if (st && st->count) ls = mp_shadow_loss_scale_log2(st);
  }
  mpp_sites_unlock();
  return ls;
}
