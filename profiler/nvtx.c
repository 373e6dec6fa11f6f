/* NVTX injection: the layer of an op is the NVTX range stack of the thread
 * that called it, joined with "/".
 *
 * Every library that carries its own NVTX copy calls InitializeInjectionNvtx2
 * with its own export table, so the entry point fills whatever table it is
 * given, every time. Stacks are per thread (PyTorch runs backward on autograd
 * threads); ranges of all domains share one stack in push order, and a
 * domain's pop removes that domain's innermost range. Start/end ranges and
 * marks are not nested, so they never define a layer; they are counted.
 *
 * The timeline: every push/pop range that ends is kept with its start and end
 * time (CLOCK_REALTIME) in a buffer of its thread (chunks that are only
 * appended to, the count published last, so the raw writer reads them while
 * the thread goes on), at most MPPROF_MAX_RANGES in the process; more are
 * counted as dropped and the raw file says so. Ranges still open when the
 * file is written are not in it.
 *
 * Marks in the domain named "mpprof" declare the training state (train.c):
 * "loss_scale" with a double payload, "step" and "step_skipped" with an
 * unsigned 64-bit payload (README.md). Other messages there are ignored. */
#include "common/utf8.h"
#include "mpp.h"
#include "profiler/capture.h"
#include "profiler/nvtx.h"
#include "profiler/sites.h"
#include "profiler/train.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

#define MAX_DEPTH 64
#define MAX_PATH 1024 /* a layer path is cut at MAX_PATH - 1 bytes */
/* One range's name in the path is cut at MAX_NAME bytes (ASCII and wide
 * alike), at a character boundary: a long name leaves room for the ranges
 * nested in it (one 1023-byte name filled the path, and every range inside
 * it had its parent's layer). A cut name ends in CUT_MARK, within those
 * bytes: the raw file has no other word for it, and the report shows it. */
#define MAX_NAME 255
#define CUT_MARK "\xe2\x80\xa6" /* U+2026 "…" */
/* A wide name converted for a push: one character (up to 4 bytes) more
 * than MAX_NAME fits, so the push sees that the name was longer. */
#define WIDE_NAME_BUF (MAX_NAME + 4 + 1)
#define MAX_STRINGS 65536
#define MAX_DOMAINS 4096
#define RANGE_CHUNK 512

/* --- ended ranges, per thread --- */

typedef struct range_chunk {
  struct range_chunk *next;
  mpp_range r[RANGE_CHUNK];
} range_chunk;

/* A thread's buffer outlives it (the raw writer reads its ranges), and the
 * next thread that keeps a range appends to it: a program whose thread pool
 * churns holds as many buffers as it ever had threads alive at once, not one
 * partly used chunk per thread it ever started. Each record names its own
 * thread. */
typedef struct range_buf {
  struct range_buf *next;      /* all buffers ever made: never unlinked */
  struct range_buf *next_free; /* on the free list: its thread ended (under bufs_mu) */
  uint32_t thread;
  _Atomic uint64_t n; /* records published */
  range_chunk *head, *tail;
} range_buf;

static _Atomic(range_buf *) range_bufs;
static range_buf *free_bufs; /* under bufs_mu */
static pthread_mutex_t bufs_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint_fast64_t ranges_kept, ranges_dropped, range_chunks;

__attribute__((constructor)) static void bufs_fork_protect(void) {
  mpp_fork_protect(&bufs_mu);
}

static void release_range_buf(range_buf *b) {
  if (!b) return;
  pthread_mutex_lock(&bufs_mu);
  b->next_free = free_bufs;
  free_bufs = b;
  pthread_mutex_unlock(&bufs_mu);
}

typedef struct nvtx_thread {
  uint32_t overflow; /* pushes beyond MAX_DEPTH, popped first */
  uint32_t n;
  struct {
    uint32_t start; /* offset of this range's segment ("/" + name, or name at 0) */
    const void *domain;
    uint64_t t0_ns; /* the push */
    bool capture;   /* the range is the --nvtx-capture range (capture.c) */
  } e[MAX_DEPTH];
  uint32_t len;
  uint64_t hash;
  range_buf *ranges; /* this thread's ended ranges; NULL until the first */
  char path[MAX_PATH];
} nvtx_thread;

static __thread MPP_TLS nvtx_thread *tls;
static atomic_uint_fast64_t marks, start_end_ranges;
static atomic_uint_fast32_t nstrings, ndomains;

/* Runs on the exiting thread. Later destructors of that thread (another
 * library's thread-local cleanup) may still push or pop a range: they must
 * get a fresh state, not the freed one. */
static void tls_free(void *p) {
  if (tls == p) tls = NULL;
  release_range_buf(((nvtx_thread *)p)->ranges);
  free(p);
}

static mpp_thread_key tls_key = MPP_THREAD_KEY(tls_free);

static nvtx_thread *thread_state(void) {
  if (!tls) {
    tls = calloc(1, sizeof *tls);
    if (tls) mpp_thread_key_set(&tls_key, tls);
  }
  return tls;
}

static uint64_t path_hash(const char *s, uint32_t n) {
  uint64_t h = 1469598103934665603ull;
  for (uint32_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

static void rehash(nvtx_thread *t) {
  t->path[t->len] = '\0';
  t->hash = path_hash(t->path, t->len);
}

const char *mpp_nvtx_layer(uint64_t *ret_hash) {
  nvtx_thread *t = tls;
  if (!t || t->len == 0) {
    *ret_hash = path_hash("", 0);
    return "";
  }
  *ret_hash = t->hash;
  return t->path;
}

int mpp_nvtx_push(const void *domain, const char *name) {
  nvtx_thread *t = thread_state();
  if (!t) return -1;
  int level = (int)(t->n + t->overflow);
  if (t->n == MAX_DEPTH) {
    t->overflow++;
    return level;
  }
  if (!name || !*name) name = "(unnamed)";
  uint32_t start = t->len;
  if (t->n > 0 && t->len < MAX_PATH - 1) t->path[t->len++] = '/';
  size_t room = MAX_PATH - 1 - t->len;
  size_t full = strnlen(name, MAX_NAME + 1);
  size_t nl = full > MAX_NAME ? MAX_NAME : full;
  if (nl > room) nl = room;
  size_t mark = nl < full && nl >= sizeof CUT_MARK - 1 ? sizeof CUT_MARK - 1 : 0;
  nl = mpp_utf8_cut(name, nl - mark);
  memcpy(t->path + t->len, name, nl);
  if (mark) memcpy(t->path + t->len + nl, CUT_MARK, sizeof CUT_MARK - 1); /* fixed size: no loop */
  t->len += (uint32_t)(nl + mark);
  t->e[t->n].start = start;
  t->e[t->n].domain = domain;
  t->e[t->n].t0_ns = mpp_now_ns();
  t->e[t->n].capture = mpp_capture_nvtx_push(name);
  t->n++;
  rehash(t);
  return level;
}

/* The calling thread's buffer: one an ended thread left, or a new one. */
static range_buf *take_range_buf(void) {
  pthread_mutex_lock(&bufs_mu);
  range_buf *b = free_bufs;
  if (b) free_bufs = b->next_free;
  pthread_mutex_unlock(&bufs_mu);
  if (!b) {
    if (!(b = calloc(1, sizeof *b))) return NULL;
    b->next = atomic_load(&range_bufs);
    while (!atomic_compare_exchange_weak(&range_bufs, &b->next, b))
      ;
  }
  b->thread = mpp_thread_id();
  return b;
}

static void note_dropped(void) {
  if (atomic_fetch_add(&ranges_dropped, 1) == 0)
    mpp_note_incomplete("max_ranges", "max_ranges (%llu) reached",
                        (unsigned long long)mpp_cfg.max_ranges);
}

/* Keep the ended range of entry i (its segment still in the path). */
static void keep_range(nvtx_thread *t, uint32_t i, uint64_t end_ns) {
  if (atomic_load_explicit(&ranges_kept, memory_order_relaxed) >= mpp_cfg.max_ranges ||
      atomic_fetch_add(&ranges_kept, 1) >= mpp_cfg.max_ranges) {
    note_dropped();
    return;
  }
  range_buf *b = t->ranges ? t->ranges : (t->ranges = take_range_buf());
  if (!b) {
    note_dropped();
    return;
  }
  uint64_t n = atomic_load_explicit(&b->n, memory_order_relaxed);
  if (n % RANGE_CHUNK == 0) { /* the next chunk: kept from before a reset, or a new one */
    range_chunk *c = n == 0 ? b->head : b->tail->next;
    if (!c) {
      if (!(c = calloc(1, sizeof *c))) {
        note_dropped();
        return;
      }
      atomic_fetch_add(&range_chunks, 1);
      if (n == 0)
        b->head = c;
      else
        b->tail->next = c;
    }
    b->tail = c;
  }
  mpp_range *r = &b->tail->r[n % RANGE_CHUNK];
  uint32_t rs = t->e[i].start;
  uint32_t re = i + 1 < t->n ? t->e[i + 1].start : t->len;
  if (i > 0 && rs < re) rs++; /* the "/" before the name */
  uint32_t nl = re - rs < sizeof r->name - 1 ? re - rs : (uint32_t)sizeof r->name - 1;
  if (nl < re - rs) nl = (uint32_t)mpp_utf8_cut(t->path + rs, nl);
  mpp_memcpy_n(r->name, t->path + rs, nl);
  r->name[nl] = '\0';
  r->thread = b->thread;
  r->depth = i;
  r->start_ns = t->e[i].t0_ns;
  r->end_ns = end_ns;
  atomic_store_explicit(&b->n, n + 1, memory_order_release);
}

/* Remove the segment of entry i (not necessarily the innermost). */
static void remove_entry(nvtx_thread *t, uint32_t i) {
  if (t->e[i].capture) mpp_capture_nvtx_pop();
  keep_range(t, i, mpp_now_ns());
  uint32_t rs = t->e[i].start;
  uint32_t re = i + 1 < t->n ? t->e[i + 1].start : t->len;
  if (i == 0 && t->n > 1 && re < t->len)
    re++; /* the next segment's "/" would become the first character */
  uint32_t cut = re - rs;
  memmove(t->path + rs, t->path + re, t->len - re);
  t->len -= cut;
  for (uint32_t j = i + 1; j < t->n; j++) {
    t->e[j - 1] = t->e[j];
    t->e[j - 1].start = t->e[j].start >= re ? t->e[j].start - cut : rs;
  }
  t->n--;
  rehash(t);
}

int mpp_nvtx_pop(const void *domain) {
  nvtx_thread *t = tls;
  if (!t || (t->n == 0 && t->overflow == 0)) return -1;
  int level = (int)(t->n + t->overflow) - 1;
  if (t->overflow) {
    t->overflow--;
    return level;
  }
  for (uint32_t i = t->n; i-- > 0;)
    if (t->e[i].domain == domain) {
      remove_entry(t, i);
      return level;
    }
  return -1; /* no open range of this domain on this thread */
}

void mpp_nvtx_thread_reset(void) {
  if (tls) {
    tls->n = tls->overflow = tls->len = 0;
    rehash(tls);
  }
}

uint64_t mpp_nvtx_ranges_dropped(void) {
  return atomic_load(&ranges_dropped);
}

uint64_t mpp_nvtx_range_chunks(void) {
  return atomic_load(&range_chunks);
}

void mpp_nvtx_ranges_each(void (*fn)(void *ctx, const mpp_range *r), void *ctx) {
  for (range_buf *b = atomic_load(&range_bufs); b; b = b->next) {
    uint64_t n = atomic_load_explicit(&b->n, memory_order_acquire);
    const range_chunk *c = b->head;
    for (uint64_t i = 0; i < n && c; i++) {
      fn(ctx, &c->r[i % RANGE_CHUNK]);
      if (i % RANGE_CHUNK == RANGE_CHUNK - 1) c = c->next;
    }
  }
}

/* A fork child (only the forking thread is left) and tests: no ended ranges.
 * Chunks are kept for reuse: the calling thread keeps its buffer, every other
 * one is free for the next thread (in a fork child their threads are gone;
 * tests reset with no other thread keeping ranges). */
void mpp_nvtx_ranges_reset(void) {
  range_buf *own = tls ? tls->ranges : NULL;
  pthread_mutex_lock(&bufs_mu);
  free_bufs = NULL;
  for (range_buf *b = atomic_load(&range_bufs); b; b = b->next) {
    atomic_store(&b->n, 0);
    b->thread = mpp_thread_id();
    if (b != own) {
      b->next_free = free_bufs;
      free_bufs = b;
    }
  }
  pthread_mutex_unlock(&bufs_mu);
  atomic_store(&ranges_kept, 0);
  atomic_store(&ranges_dropped, 0);
}

/* --- registered strings and domains: the handle points at our own copy --- */

/* Handles stay valid for the process's life (the application keeps them);
 * all of them hang off one list so they stay reachable. */
typedef struct mpp_nvtx_string {
  char *s;
  struct mpp_nvtx_string *next;
} mpp_nvtx_string;

static _Atomic(mpp_nvtx_string *) handles;

static void keep_handle(mpp_nvtx_string *h) {
  h->next = atomic_load(&handles);
  while (!atomic_compare_exchange_weak(&handles, &h->next, h))
    ;
}

/* The UTF-8 form of wide string w in buf (n > 0 bytes), cut before the first
 * character that does not fit; a value that is no Unicode character (a
 * surrogate, beyond U+10FFFF) is '?'. */
static char *utf8_of_wide(const wchar_t *w, char *buf, size_t n) {
  size_t o = 0;
  for (; *w; w++) {
    uint32_t c = (uint32_t)*w;
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = '?';
    size_t k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (k > n - 1 - o) break;
    if (k == 1) {
      buf[o++] = (char)c;
      continue;
    }
    static const unsigned char lead[] = {0, 0, 0xC0, 0xE0, 0xF0};
    for (size_t i = k - 1; i > 0; i--, c >>= 6)
      buf[o + i] = (char)(0x80 | (c & 0x3F));
    buf[o] = (char)(lead[k] | c);
    o += k;
  }
  buf[o] = '\0';
  return buf;
}

/* A heap copy of w in UTF-8 (its first MAX_PATH characters). */
static char *narrow(const wchar_t *w) {
  size_t n = 0;
  while (w[n] && n < MAX_PATH)
    n++;
  char *s = malloc(4 * n + 1);
  return s ? utf8_of_wide(w, s, 4 * n + 1) : NULL;
}

static nvtxStringHandle_t register_string(char *copy) {
  if (!copy) return NULL;
  if (atomic_fetch_add(&nstrings, 1) >= MAX_STRINGS) {
    free(copy);
    return NULL;
  }
  mpp_nvtx_string *h = malloc(sizeof *h);
  if (!h) {
    free(copy);
    return NULL;
  }
  h->s = copy;
  keep_handle(h);
  return (nvtxStringHandle_t)h;
}

/* Name of a range from its attributes; `buf` holds converted wide strings. */
static const char *message_of(const nvtxEventAttributes_t *a, char *buf, size_t n) {
  if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return NULL;
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII:
    return a->message.ascii;
  case NVTX_MESSAGE_TYPE_UNICODE:
    return a->message.unicode ? utf8_of_wide(a->message.unicode, buf, n) : NULL;
  case NVTX_MESSAGE_TYPE_REGISTERED:
    return a->message.registered ? ((const mpp_nvtx_string *)a->message.registered)->s : NULL;
  default:
    return NULL;
  }
}

/* --- CORE --- */

/* What the program gets back is what NVTX returns with no tool attached:
 * push/pop NVTX_NO_PUSH_POP_TRACKING, range start id 0. Returning the nesting
 * level (as some tools do) would change what the observed program sees. */
static int NVTX_API core_push_a(const char *message) {
  mpp_nvtx_push(NULL, message);
  return NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API core_push_w(const wchar_t *message) {
  char buf[WIDE_NAME_BUF];
  mpp_nvtx_push(NULL, message ? utf8_of_wide(message, buf, sizeof buf) : NULL);
  return NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API core_push_ex(const nvtxEventAttributes_t *a) {
  char buf[WIDE_NAME_BUF];
  mpp_nvtx_push(NULL, message_of(a, buf, sizeof buf));
  return NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API core_pop(void) {
  mpp_nvtx_pop(NULL);
  return NVTX_NO_PUSH_POP_TRACKING;
}

static nvtxRangeId_t NVTX_API core_start_ex(const nvtxEventAttributes_t *a) {
  (void)a;
  atomic_fetch_add(&start_end_ranges, 1);
  return 0;
}

static nvtxRangeId_t NVTX_API core_start_a(const char *message) {
  (void)message;
  atomic_fetch_add(&start_end_ranges, 1);
  return 0;
}

static nvtxRangeId_t NVTX_API core_start_w(const wchar_t *message) {
  (void)message;
  atomic_fetch_add(&start_end_ranges, 1);
  return 0;
}

static void NVTX_API core_end(nvtxRangeId_t id) {
  (void)id;
}

static void NVTX_API core_mark_a(const char *message) {
  (void)message;
  atomic_fetch_add(&marks, 1);
}

static void NVTX_API core_mark_w(const wchar_t *message) {
  (void)message;
  atomic_fetch_add(&marks, 1);
}

static void NVTX_API core_mark_ex(const nvtxEventAttributes_t *a) {
  (void)a;
  atomic_fetch_add(&marks, 1);
}

/* --- CORE2 --- */

/* The handle is opaque to the application; ours holds the name (`copy`,
 * taken over). */
static nvtxDomainHandle_t new_domain(char *copy) {
  mpp_nvtx_string *h = NULL;
  if (copy && atomic_fetch_add(&ndomains, 1) < MAX_DOMAINS) h = malloc(sizeof *h);
  if (!h) {
    free(copy);
    return NULL;
  }
  h->s = copy;
  keep_handle(h);
  return (nvtxDomainHandle_t)h;
}

static nvtxDomainHandle_t NVTX_API core2_domain_create_a(const char *name) {
  return new_domain(strdup(name ? name : ""));
}

static nvtxDomainHandle_t NVTX_API core2_domain_create_w(const wchar_t *name) {
  return new_domain(name ? narrow(name) : strdup(""));
}

static void NVTX_API core2_domain_destroy(nvtxDomainHandle_t d) {
  (void)d; /* ranges of the domain may still be open on some thread */
}

static nvtxStringHandle_t NVTX_API core2_register_string_a(nvtxDomainHandle_t d, const char *s) {
  (void)d;
  return register_string(strdup(s ? s : ""));
}

static nvtxStringHandle_t NVTX_API core2_register_string_w(nvtxDomainHandle_t d, const wchar_t *s) {
  (void)d;
  return register_string(s ? narrow(s) : strdup(""));
}

static int NVTX_API core2_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char buf[WIDE_NAME_BUF];
  mpp_nvtx_push(d, message_of(a, buf, sizeof buf));
  return NVTX_NO_PUSH_POP_TRACKING;
}

static int NVTX_API core2_pop(nvtxDomainHandle_t d) {
  mpp_nvtx_pop(d);
  return NVTX_NO_PUSH_POP_TRACKING;
}

static nvtxRangeId_t NVTX_API core2_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  (void)d;
  return core_start_ex(a);
}

static void NVTX_API core2_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  (void)d;
  (void)id;
}

/* A numeric payload as double / as an unsigned integer; false when the
 * attributes carry none (or a negative integer for a step). */
static bool payload_double(const nvtxEventAttributes_t *a, double *ret) {
  switch (a->payloadType) {
  case NVTX_PAYLOAD_TYPE_DOUBLE:
    *ret = a->payload.dValue;
    return true;
  case NVTX_PAYLOAD_TYPE_FLOAT:
    *ret = a->payload.fValue;
    return true;
  case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
    *ret = (double)a->payload.ullValue;
    return true;
  case NVTX_PAYLOAD_TYPE_INT64:
    *ret = (double)a->payload.llValue;
    return true;
  default:
    return false;
  }
}

static bool payload_u64(const nvtxEventAttributes_t *a, uint64_t *ret) {
  switch (a->payloadType) {
  case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
    *ret = a->payload.ullValue;
    return true;
  case NVTX_PAYLOAD_TYPE_INT64:
    *ret = (uint64_t)a->payload.llValue;
    return a->payload.llValue >= 0;
  case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
    *ret = a->payload.uiValue;
    return true;
  case NVTX_PAYLOAD_TYPE_INT32:
    *ret = (uint64_t)a->payload.iValue;
    return a->payload.iValue >= 0;
  default:
    return false;
  }
}

static bool is_mpprof_domain(nvtxDomainHandle_t d) {
  const mpp_nvtx_string *h = (const mpp_nvtx_string *)d;
  return h && h->s && !strcmp(h->s, "mpprof");
}

/* The training-state marks of the "mpprof" domain (see the top of the file). */
static void training_mark(const nvtxEventAttributes_t *a) {
  char buf[32];
  const char *msg = message_of(a, buf, sizeof buf);
  if (!msg || a->size < offsetof(nvtxEventAttributes_t, payload) + sizeof(a->payload)) return;
  double d;
  uint64_t n;
  if (!strcmp(msg, "loss_scale"))
    mpp_train_loss_scale(payload_double(a, &d) ? d : NAN); /* NaN: counted invalid */
  else if (!strcmp(msg, "step") && payload_u64(a, &n))
    mpp_train_mark_step(n);
  else if (!strcmp(msg, "step_skipped") && payload_u64(a, &n))
    mpp_train_mark_skipped(n);
}

static void NVTX_API core2_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  atomic_fetch_add(&marks, 1);
  if (a && is_mpprof_domain(d)) training_mark(a);
}

uint64_t mpp_nvtx_marks(void) {
  return atomic_load(&marks);
}

uint64_t mpp_nvtx_start_end_ranges(void) {
  return atomic_load(&start_end_ranges);
}

/* --- injection entry point --- */

static void fill(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn) {
  if (id < size && table[id]) *table[id] = fn;
}

#define FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

int mpp_nvtx_inject(NvtxGetExportTableFunc_t get_export_table) {
  if (!get_export_table) return 0;
  const NvtxExportTableCallbacks *cb = get_export_table(NVTX_ETID_CALLBACKS);
  if (!cb || !cb->GetModuleFunctionTable) return 0;
  NvtxFunctionTable t = NULL;
  unsigned size = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size) && t) {
    fill(t, size, NVTX_CBID_CORE_RangePushA, FN(core_push_a));
    fill(t, size, NVTX_CBID_CORE_RangePushW, FN(core_push_w));
    fill(t, size, NVTX_CBID_CORE_RangePushEx, FN(core_push_ex));
    fill(t, size, NVTX_CBID_CORE_RangePop, FN(core_pop));
    fill(t, size, NVTX_CBID_CORE_RangeStartA, FN(core_start_a));
    fill(t, size, NVTX_CBID_CORE_RangeStartW, FN(core_start_w));
    fill(t, size, NVTX_CBID_CORE_RangeStartEx, FN(core_start_ex));
    fill(t, size, NVTX_CBID_CORE_RangeEnd, FN(core_end));
    fill(t, size, NVTX_CBID_CORE_MarkA, FN(core_mark_a));
    fill(t, size, NVTX_CBID_CORE_MarkW, FN(core_mark_w));
    fill(t, size, NVTX_CBID_CORE_MarkEx, FN(core_mark_ex));
  }
  t = NULL;
  size = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &size) && t) {
    fill(t, size, NVTX_CBID_CORE2_DomainCreateA, FN(core2_domain_create_a));
    fill(t, size, NVTX_CBID_CORE2_DomainCreateW, FN(core2_domain_create_w));
    fill(t, size, NVTX_CBID_CORE2_DomainDestroy, FN(core2_domain_destroy));
    fill(t, size, NVTX_CBID_CORE2_DomainRegisterStringA, FN(core2_register_string_a));
    fill(t, size, NVTX_CBID_CORE2_DomainRegisterStringW, FN(core2_register_string_w));
    fill(t, size, NVTX_CBID_CORE2_DomainRangePushEx, FN(core2_push_ex));
    fill(t, size, NVTX_CBID_CORE2_DomainRangePop, FN(core2_pop));
    fill(t, size, NVTX_CBID_CORE2_DomainRangeStartEx, FN(core2_start_ex));
    fill(t, size, NVTX_CBID_CORE2_DomainRangeEnd, FN(core2_end));
    fill(t, size, NVTX_CBID_CORE2_DomainMarkEx, FN(core2_mark_ex));
  }
  return 1;
}
