/* Scopes: the layer and phase a framework says the calling thread is in
 * (profiler/include/mpprof.h). The PyTorch integration opens one per module
 * forward, sets one per module on autograd threads and one per optimizer
 * step; an op issued inside a scope is attributed to the scope's layer
 * instead of the NVTX range path, so this file and nvtx.c are the only two
 * sources of an op's layer (mpp_layer_current).
 *
 * Layer names are interned once (mpprof_layer_id) into a fixed table that is
 * only appended to: a hot-path reader indexes it without a lock. Per-thread
 * stacks are small heap blocks, freed at thread exit as nvtx.c does. */
#include "mpp.h"
#include "profiler/include/mpprof.h"
#include "profiler/nvtx.h"
#include "profiler/scope.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS 65536
#define INDEX_CAP (2 * MAX_LAYERS) /* open addressing, load <= 1/2 */
#define MAX_NAME 1023
#define MAX_DEPTH 64

/* Entries in place, indexed by id (no pointer to follow: a model's layers
 * outgrow the CPU caches, and an op's layer is one line read). An entry is
 * published by its name, stored last (release); a reader that loads it
 * (acquire) sees the rest. Untouched entries cost no memory. */
typedef struct layer_entry {
  _Atomic(const char *) name; /* NULL: not (yet) an entry */
  const char *cls;            /* NULL when not given */
  uint64_t hash;
} layer_entry;

static layer_entry layers[MAX_LAYERS];
static uint32_t index_[INDEX_CAP]; /* id + 1; 0 = empty; under mu */
static uint32_t nlayers;           /* under mu */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct scope_thread {
  uint32_t n, overflow;
  struct {
    int32_t layer;
    uint32_t ops; /* ops attributed to this scope while innermost (mpprof_scope_ops) */
    uint8_t phase;
  } e[MAX_DEPTH];
} scope_thread;

static __thread MPP_TLS scope_thread *tls;

static void tls_free(void *p) {
  if (tls == p) tls = NULL;
  free(p);
}

static mpp_thread_key tls_key = MPP_THREAD_KEY(tls_free);

static scope_thread *thread_state(void) {
  if (!tls) {
    tls = calloc(1, sizeof *tls);
    if (tls) mpp_thread_key_set(&tls_key, tls);
  }
  return tls;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static size_t bounded_len(const char *s) {
  size_t n = 0;
  while (n < MAX_NAME && s[n])
    n++;
  return n;
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

MPP_EXPORT int32_t mpprof_layer_id(const char *name, const char *module_class) {
  if (!name) return -1;
  size_t nl = bounded_len(name), cl = module_class ? bounded_len(module_class) : 0;
  /* The path hash (what nvtx.c computes for a range path) identifies the
   * name; the class goes into the slot hash only. */
  uint64_t path_h = fnv(1469598103934665603ull, name, nl);
  uint64_t slot_h = fnv(path_h ^ (module_class ? 0x9e3779b97f4a7c15ull : 0),
                        module_class ? module_class : "", cl);
  int32_t id = -1;
  pthread_mutex_lock(&mu);
  uint32_t j = (uint32_t)slot_h & (INDEX_CAP - 1);
  for (; index_[j]; j = (j + 1) & (INDEX_CAP - 1)) {
    const layer_entry *e = &layers[index_[j] - 1];
    const char *en = atomic_load_explicit(&e->name, memory_order_relaxed);
    if (e->hash == path_h && strlen(en) == nl && !memcmp(en, name, nl) &&
        (e->cls == NULL) == (module_class == NULL) &&
        (!e->cls || (strlen(e->cls) == cl && !memcmp(e->cls, module_class, cl)))) {
      id = (int32_t)(index_[j] - 1);
      goto out;
    }
  }
  if (nlayers < MAX_LAYERS) {
    char *n = dup_n(name, nl), *c = module_class ? dup_n(module_class, cl) : NULL;
    if (n && (!module_class || c)) {
      id = (int32_t)nlayers++;
      layer_entry *e = &layers[id];
      e->cls = c;
      e->hash = path_h;
      atomic_store_explicit(&e->name, n, memory_order_release);
      index_[j] = (uint32_t)id + 1;
    } else {
      free(n);
      free(c);
    }
  }
  if (id < 0)
    mpp_log(1, "layer table full (%d layers): further module names are not attributed", MAX_LAYERS);
out:
  pthread_mutex_unlock(&mu);
  return id;
}

static uint8_t valid_phase(int32_t phase) {
  return phase >= MPPROF_SCOPE_NONE && phase <= MPPROF_SCOPE_EVAL ? (uint8_t)phase : 0;
}

MPP_EXPORT void mpprof_scope_push(int32_t layer, int32_t phase) {
  scope_thread *t = thread_state();
  if (!t) return;
  if (t->n == MAX_DEPTH) {
    t->overflow++;
    return;
  }
  t->e[t->n].layer = layer;
  t->e[t->n].phase = valid_phase(phase);
  t->e[t->n].ops = 0;
  t->n++;
}

MPP_EXPORT void mpprof_scope_pop(void) {
  scope_thread *t = tls;
  if (!t) return;
  if (t->overflow)
    t->overflow--;
  else if (t->n)
    t->n--;
}

MPP_EXPORT void mpprof_scope_set(int32_t layer, int32_t phase) {
  scope_thread *t = thread_state();
  if (!t) return;
  if (t->n == 0 || t->overflow) {
    mpprof_scope_push(layer, phase);
    return;
  }
  t->e[t->n - 1].layer = layer;
  t->e[t->n - 1].phase = valid_phase(phase);
  t->e[t->n - 1].ops = 0;
}

MPP_EXPORT uint32_t mpprof_scope_ops(void) {
  const scope_thread *t = tls;
  return t && t->n ? t->e[t->n - 1].ops : 0;
}

const char *mpp_scope_phase_name(int phase) {
  static const char *const names[] = {NULL,        "forward",   "backward",
                                      "optimizer", "recompute", "eval"};
  return phase > 0 && phase < (int)(sizeof names / sizeof names[0]) ? names[phase] : NULL;
}

void mpp_layer_current(mpp_layer *ret) {
  scope_thread *t = tls;
  memset(ret, 0, sizeof *ret);
  if (t && t->n) { /* beyond MAX_DEPTH: the deepest kept scope */
    if (t->e[t->n - 1].ops != UINT32_MAX) t->e[t->n - 1].ops++;
    int32_t id = t->e[t->n - 1].layer;
    ret->phase = t->e[t->n - 1].phase;
    const layer_entry *e = id >= 0 && id < MAX_LAYERS ? &layers[id] : NULL;
    const char *name = e ? atomic_load_explicit(&e->name, memory_order_acquire) : NULL;
    if (name) {
      ret->path = name;
      ret->hash = e->hash;
      ret->module_class = e->cls;
      ret->interned = true;
      return;
    }
  }
  ret->path = mpp_nvtx_layer(&ret->hash);
}
