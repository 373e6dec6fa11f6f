/* Zip archives of tensors: torch.save checkpoints and .npz archives. The zip
 * directory (with its zip64 forms), a bounded pickle interpreter for
 * data.pkl, and the walk that names the tensors it built. */
#include "zipfile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "analysis/formats.h"

#define MAX_DEPTH 200          /* nesting of saved containers walked */
#define MAX_MEMO (1u << 24)    /* pickle memo slots */
#define MAX_MEMBERS (1u << 20) /* zip members */

bool mpprof_zip_sniff(const void *head, size_t len) {
  /* a local file header, or the end record of an archive of no members (what
   * np.savez writes given no array) */
  return len >= 4 && (!memcmp(head, "PK\3\4", 4) || !memcmp(head, "PK\5\6", 4));
}

bool mpprof_zip_torch_legacy_sniff(const void *head, size_t len) {
  /* PROTO n, [FRAME,] LONG1 of 10 bytes: 0x1950a86a20f9469cfc6c, torch's MAGIC_NUMBER */
  static const unsigned char magic[] = {0x8a, 10,   0x6c, 0xfc, 0x9c, 0x46,
                                        0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
  const unsigned char *b = head;
  size_t at = len > 2 && b[2] == 0x95 ? 11 : 2; /* a FRAME (protocol 4 on) first */
  return len >= at + sizeof magic && b[0] == 0x80 && !memcmp(b + at, magic, sizeof magic);
}

/* ---- the zip directory ---- */

typedef struct member {
  const char *name; /* into the image, not terminated */
  size_t name_len;
  unsigned method;
  uint64_t size; /* uncompressed */
  const unsigned char *data;
} member;

typedef struct zip {
  member *m;
  size_t n;
  member **by_name; /* the members sorted by name (then archive order), for find() */
} zip;

/* a (al bytes) against the name p1 + p2, as memcmp orders them. */
static int name_cmp(const char *a, size_t al, const char *p1, size_t l1, const char *p2,
                    size_t l2) {
  int c = memcmp(a, p1, al < l1 ? al : l1);
  if (c || al < l1) return c ? c : -1;
  a += l1, al -= l1;
  c = memcmp(a, p2, al < l2 ? al : l2);
  return c ? c : (al > l2) - (al < l2);
}

static int by_name(const void *x, const void *y) {
  const member *a = *(const member *const *)x, *b = *(const member *const *)y;
  int c = name_cmp(a->name, a->name_len, b->name, b->name_len, "", 0);
  return c ? c : (a > b) - (a < b);
}

static int zip_read(const unsigned char *b, size_t len, zip *z, char *err, size_t errlen) {
  memset(z, 0, sizeof *z);
  if (len < 22) return mpprof_tensorio_fail(err, errlen, "truncated zip archive (%zu bytes)", len);
  size_t eocd = SIZE_MAX;
  for (size_t i = len - 22 + 1, stop = len - 22 > 65535 ? len - 22 - 65535 : 0; i-- > stop;)
    if (!memcmp(b + i, "PK\5\6", 4)) {
      eocd = i;
      break;
    }
  if (eocd == SIZE_MAX)
    return mpprof_tensorio_fail(err, errlen, "no zip directory (a truncated archive?)");
  uint64_t count = mpprof_le_uint(b + eocd + 10, 2), cd_size = mpprof_le_uint(b + eocd + 12, 4),
           cd_off = mpprof_le_uint(b + eocd + 16, 4);
  if (count == 0xffff || cd_size == 0xffffffff || cd_off == 0xffffffff) { /* zip64 */
    if (eocd < 20 || memcmp(b + eocd - 20, "PK\6\7", 4))
      return mpprof_tensorio_fail(err, errlen, "zip64 archive without its locator");
    uint64_t e64 = mpprof_le_uint(b + eocd - 20 + 8, 8);
    if (len < 56 || e64 > len - 56 || memcmp(b + e64, "PK\6\6", 4))
      return mpprof_tensorio_fail(err, errlen, "zip64 directory record out of the file");
    count = mpprof_le_uint(b + e64 + 32, 8);
    cd_size = mpprof_le_uint(b + e64 + 40, 8);
    cd_off = mpprof_le_uint(b + e64 + 48, 8);
  }
  if (cd_off > len || cd_size > len - cd_off)
    return mpprof_tensorio_fail(err, errlen, "zip directory out of the file");
  if (count > MAX_MEMBERS || count > cd_size / 46 + 1)
    return mpprof_tensorio_fail(err, errlen, "zip directory claims %" PRIu64 " members", count);
  z->m = calloc(count ? count : 1, sizeof *z->m);
  if (!z->m) return mpprof_tensorio_fail(err, errlen, "out of memory");
  const unsigned char *p = b + cd_off, *end = b + cd_off + cd_size;
  for (uint64_t i = 0; i < count; i++) {
    if (end - p < 46 || memcmp(p, "PK\1\2", 4))
      return mpprof_tensorio_fail(err, errlen, "zip directory entry %" PRIu64 " malformed", i);
    member *m = &z->m[z->n];
    m->method = (unsigned)mpprof_le_uint(p + 10, 2);
    uint64_t csize = mpprof_le_uint(p + 20, 4), usize = mpprof_le_uint(p + 24, 4);
    size_t nl = (size_t)mpprof_le_uint(p + 28, 2), xl = (size_t)mpprof_le_uint(p + 30, 2),
           cl = (size_t)mpprof_le_uint(p + 32, 2);
    uint64_t off = mpprof_le_uint(p + 42, 4);
    if ((size_t)(end - p) - 46 < nl + xl + cl)
      return mpprof_tensorio_fail(err, errlen, "zip directory entry %" PRIu64 " malformed", i);
    m->name = (const char *)p + 46;
    m->name_len = nl;
    for (const unsigned char *x = p + 46 + nl; x + 4 <= p + 46 + nl + xl;) { /* zip64 sizes */
      size_t id = (size_t)mpprof_le_uint(x, 2), sz = (size_t)mpprof_le_uint(x + 2, 2);
      const unsigned char *v = x + 4, *vend = v + sz;
      if (vend > p + 46 + nl + xl) break;
      if (id == 1) {
        if (usize == 0xffffffff && vend - v >= 8) usize = mpprof_le_uint(v, 8), v += 8;
        if (csize == 0xffffffff && vend - v >= 8) csize = mpprof_le_uint(v, 8), v += 8;
        if (off == 0xffffffff && vend - v >= 8) off = mpprof_le_uint(v, 8);
      }
      x = vend;
    }
    p += 46 + nl + xl + cl;
    if (off > len || len - off < 30 || memcmp(b + off, "PK\3\4", 4))
      return mpprof_tensorio_fail(err, errlen, "zip member '%.*s': its header is out of the file",
                                  (int)nl, m->name);
    uint64_t start = off + 30 + mpprof_le_uint(b + off + 26, 2) + mpprof_le_uint(b + off + 28, 2);
    if (start > len || csize > len - start)
      return mpprof_tensorio_fail(err, errlen, "zip member '%.*s': truncated data", (int)nl,
                                  m->name);
    if (m->method == 0 && csize != usize)
      return mpprof_tensorio_fail(err, errlen, "zip member '%.*s': stored with two sizes", (int)nl,
                                  m->name);
    m->size = csize;
    m->data = b + start;
    z->n++;
  }
  z->by_name = malloc((z->n ? z->n : 1) * sizeof *z->by_name);
  if (!z->by_name) return mpprof_tensorio_fail(err, errlen, "out of memory");
  for (size_t i = 0; i < z->n; i++)
    z->by_name[i] = &z->m[i];
  qsort(z->by_name, z->n, sizeof *z->by_name, by_name);
  /* A name twice: which member is meant is the reader's guess (Python's
   * zipfile, so np.load, takes the last; find() the first), and an .npz
   * would list both under one name. Neither np.savez nor torch.save writes
   * one. */
  for (size_t i = 1; i < z->n; i++) {
    const member *a = z->by_name[i - 1], *m = z->by_name[i];
    if (!name_cmp(a->name, a->name_len, m->name, m->name_len, "", 0))
      return mpprof_tensorio_fail(err, errlen, "zip member '%.*s' twice in the archive",
                                  (int)m->name_len, m->name);
  }
  return 0;
}

/* The first member named prefix + name (a binary search: a checkpoint of n
 * tensors looks up n storages). */
static const member *find(const zip *z, const char *prefix, size_t plen, const char *name) {
  size_t nl = strlen(name), lo = 0, hi = z->n;
  while (lo < hi) { /* the first member not below the name */
    size_t mid = lo + (hi - lo) / 2;
    const member *m = z->by_name[mid];
    if (name_cmp(m->name, m->name_len, prefix, plen, name, nl) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  const member *m = lo < z->n ? z->by_name[lo] : NULL;
  return m && !name_cmp(m->name, m->name_len, prefix, plen, name, nl) ? m : NULL;
}

/* ---- the pickle interpreter ---- */

typedef enum kind {
  K_NONE,
  K_BOOL,
  K_INT,
  K_FLOAT,
  K_STR,
  K_TUPLE,
  K_LIST,
  K_DICT,
  K_GLOBAL,
  K_STORAGE,
  K_TENSOR,
  K_OBJ,
  K_MARK
} kind;

typedef struct node node;
struct node {
  kind k;
  bool open; /* being walked: a container reached from inside itself is not walked again */
  int64_t i;
  const char *s; /* K_STR: text (into the image); K_GLOBAL: "module.name" (owned by the arena) */
  size_t slen;
  node **c; /* K_TUPLE/K_LIST: items; K_DICT: key, value, ...; K_OBJ: callable, args, state */
  size_t n, cap;
  /* K_STORAGE */
  mp_dtype dtype;
  char dtype_name[24];
  const unsigned char *data;
  uint64_t numel;
  /* K_TENSOR */
  node *storage;
  uint64_t offset;
  int ndim;
  uint64_t *shape, *stride; /* ndim each, one block owned by the node: a node per opcode
                               stays small */
};

typedef struct vm {
  const unsigned char *p, *end;
  node **all; /* every node, freed at the end */
  size_t n_all, cap_all;
  node **stack;
  size_t sp, stack_cap;
  size_t *marks;
  size_t n_marks, marks_cap;
  node **memo;
  size_t memo_cap, memo_used;
  size_t size; /* the pickle's bytes: a memo index beyond them is refused */
  const zip *z;
  const char *prefix; /* "archive/" */
  size_t plen;
  bool big_endian;
  char *err;
  size_t errlen;
  int failed;
} vm;

static bool grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap * 2 : 16;
  while (c < need)
    c *= 2;
  void *n = realloc(*arr, c * elem);
  if (!n) return false;
  memset((char *)n + *cap * elem, 0, (c - *cap) * elem);
  *arr = n;
  *cap = c;
  return true;
}

static node *mk(vm *v, kind k) {
  if (!grow((void **)&v->all, &v->cap_all, v->n_all + 1, sizeof *v->all)) return NULL;
  node *x = calloc(1, sizeof *x);
  if (!x) return NULL;
  x->k = k;
  v->all[v->n_all++] = x;
  return x;
}

static bool add_child(node *x, node *c) {
  if (!grow((void **)&x->c, &x->cap, x->n + 1, sizeof *x->c)) return false;
  x->c[x->n++] = c;
  return true;
}

static bool push(vm *v, node *x) {
  if (!x || !grow((void **)&v->stack, &v->stack_cap, v->sp + 1, sizeof *v->stack)) return false;
  v->stack[v->sp++] = x;
  return true;
}

static node *pop(vm *v) {
  return v->sp && v->stack[v->sp - 1]->k != K_MARK ? v->stack[--v->sp] : NULL;
}

static node *top(vm *v) {
  return v->sp && v->stack[v->sp - 1]->k != K_MARK ? v->stack[v->sp - 1] : NULL;
}

/* Whatever is above the last MARK, as the items of a new node of kind k. */
static node *pop_mark(vm *v, kind k) {
  if (!v->n_marks) return NULL;
  size_t m = v->marks[--v->n_marks];
  if (m >= v->sp || v->stack[m]->k != K_MARK) return NULL;
  node *x = mk(v, k);
  if (!x) return NULL;
  for (size_t i = m + 1; i < v->sp; i++)
    if (!add_child(x, v->stack[i])) return NULL;
  v->sp = m;
  return x;
}

static bool need(vm *v, size_t n) {
  return (size_t)(v->end - v->p) >= n;
}

static bool is_global(const node *g, const char *name) {
  return g && g->k == K_GLOBAL && !strcmp(g->s, name);
}

static const struct {
  const char *name;
  mp_dtype dtype;
} storages[] = {
    {"torch.FloatStorage", MP_FP32},
    {"torch.DoubleStorage", MP_FP64},
    {"torch.HalfStorage", MP_FP16},
    {"torch.BFloat16Storage", MP_BF16},
    {"torch.Float8_e4m3fnStorage", MP_FP8_E4M3},
    {"torch.Float8_e5m2Storage", MP_FP8_E5M2},
};

/* The element size of the other storages torch.save writes (listed, never
 * scanned), so that their members and views are checked as a scanned
 * storage's are: a LongStorage cut short is a damaged file, not a tensor to
 * skip. A storage type not here is listed with only its views checked
 * against its element count. */
static const struct {
  const char *name;
  unsigned size;
} unread_storages[] = {
    {"torch.LongStorage", 8},
    {"torch.IntStorage", 4},
    {"torch.ShortStorage", 2},
    {"torch.CharStorage", 1},
    {"torch.ByteStorage", 1},
    {"torch.BoolStorage", 1},
    {"torch.UInt16Storage", 2},
    {"torch.UInt32Storage", 4},
    {"torch.UInt64Storage", 8},
    {"torch.ComplexFloatStorage", 8},
    {"torch.ComplexDoubleStorage", 16},
    {"torch.QInt8Storage", 1},
    {"torch.QUInt8Storage", 1},
    {"torch.QInt32Storage", 4},
    {"torch.QUInt4x2Storage", 1},
    {"torch.QUInt2x4Storage", 1},
    {"torch.Float8_e4m3fnuzStorage", 1},
    {"torch.Float8_e5m2fnuzStorage", 1},
    {"torch.Float8_e8m0fnuStorage", 1},
};

/* Bytes per element of a storage of this type (mpprof's dtype for it, or
 * MP_DTYPE_INVALID); 0 when not known. */
static unsigned storage_element_size(mp_dtype dtype, const char *type) {
  if (dtype != MP_DTYPE_INVALID) return mp_dtype_size(dtype);
  for (size_t i = 0; i < sizeof unread_storages / sizeof *unread_storages; i++)
    if (!strcmp(type, unread_storages[i].name)) return unread_storages[i].size;
  return 0;
}

/* BINPERSID: ('storage', torch.XStorage, key, location, numel). */
static node *storage(vm *v, node *pid) {
  if (!pid || pid->k != K_TUPLE || pid->n != 5 || pid->c[0]->k != K_STR || pid->c[0]->slen != 7 ||
      memcmp(pid->c[0]->s, "storage", 7) || pid->c[1]->k != K_GLOBAL || pid->c[2]->k != K_STR ||
      pid->c[4]->k != K_INT || pid->c[4]->i < 0)
    return NULL;
  node *s = mk(v, K_STORAGE);
  if (!s) return NULL;
  const char *type = pid->c[1]->s;
  s->dtype = MP_DTYPE_INVALID;
  for (size_t i = 0; i < sizeof storages / sizeof *storages; i++)
    if (!strcmp(type, storages[i].name)) s->dtype = storages[i].dtype;
  snprintf(s->dtype_name, sizeof s->dtype_name, "%s", strncmp(type, "torch.", 6) ? type : type + 6);
  s->numel = (uint64_t)pid->c[4]->i;
  char key[80];
  if (pid->c[2]->slen > 64) return NULL;
  snprintf(key, sizeof key, "data/%.*s", (int)pid->c[2]->slen, pid->c[2]->s);
  const member *m = find(v->z, v->prefix, v->plen, key);
  if (!m) {
    v->failed =
        mpprof_tensorio_fail(v->err, v->errlen, "storage '%s' is not in the archive", key + 5);
    return NULL;
  }
  if (m->method != 0) {
    v->failed = mpprof_tensorio_fail(
        v->err, v->errlen, "storage '%s' is compressed (torch.save stores them)", key + 5);
    return NULL;
  }
  const unsigned size = storage_element_size(s->dtype, type);
  if (size && m->size / size < s->numel) {
    v->failed = mpprof_tensorio_fail(v->err, v->errlen,
                                     "storage '%s': %" PRIu64
                                     " elements of %s need more than its %" PRIu64 " bytes",
                                     key + 5, s->numel, s->dtype_name, m->size);
    return NULL;
  }
  s->data = m->data;
  return s;
}

/* A tuple of sizes (or strides) into out. */
static bool dims(const node *t, uint64_t *out, int *n) {
  if (!t || t->k != K_TUPLE || t->n > MPPROF_TENSOR_MAX_DIMS) return false;
  for (size_t i = 0; i < t->n; i++) {
    if (t->c[i]->k != K_INT || t->c[i]->i < 0) return false;
    out[i] = (uint64_t)t->c[i]->i;
  }
  *n = (int)t->n;
  return true;
}

/* _rebuild_tensor_v2(storage, offset, size, stride, ...): checked against
 * the storage's elements. */
static node *tensor(vm *v, node *args) {
  if (!args || args->k != K_TUPLE || args->n < 4 || args->c[0]->k != K_STORAGE ||
      args->c[1]->k != K_INT || args->c[1]->i < 0)
    return NULL;
  node *t = mk(v, K_TENSOR);
  uint64_t shape[MPPROF_TENSOR_MAX_DIMS], stride[MPPROF_TENSOR_MAX_DIMS];
  int ns = 0;
  if (!t || !dims(args->c[2], shape, &t->ndim) || !dims(args->c[3], stride, &ns) || ns != t->ndim ||
      !(t->shape = malloc(2 * sizeof *shape * (size_t)(ns ? ns : 1))))
    return NULL;
  t->stride = t->shape + ns;
  memcpy(t->shape, shape, sizeof *shape * (size_t)ns);
  memcpy(t->stride, stride, sizeof *stride * (size_t)ns);
  t->storage = args->c[0];
  t->offset = (uint64_t)args->c[1]->i;
  /* within its storage's elements, whatever their dtype */
  uint64_t count = 1, last = t->offset;
  for (int k = 0; k < t->ndim; k++) {
    if (t->shape[k] && count > UINT64_MAX / t->shape[k]) return NULL;
    count *= t->shape[k];
  }
  if (count) {
    for (int k = 0; k < t->ndim; k++) {
      uint64_t span = t->shape[k] - 1;
      if (t->stride[k] && span > (UINT64_MAX - last) / t->stride[k]) return NULL;
      last += span * t->stride[k];
    }
    if (last >= t->storage->numel) {
      v->failed = mpprof_tensorio_fail(
          v->err, v->errlen, "a tensor reaches element %" PRIu64 " of a storage of %" PRIu64, last,
          t->storage->numel);
      return NULL;
    }
  }
  return t;
}

static int run(vm *v) {
  while (v->p < v->end) {
    unsigned op = *v->p++;
    node *x = NULL, *a, *b;
    uint64_t n = 0;
    switch (op) {
    case 0x80: /* PROTO */
      if (!need(v, 1)) return -1;
      v->p++;
      continue;
    case 0x95: /* FRAME */
      if (!need(v, 8)) return -1;
      v->p += 8;
      continue;
    case '.': /* STOP */
      return v->sp == 1 ? 0 : -1;
    case '(': /* MARK */
      if (!grow((void **)&v->marks, &v->marks_cap, v->n_marks + 1, sizeof *v->marks)) return -1;
      v->marks[v->n_marks++] = v->sp;
      x = mk(v, K_MARK);
      break;
    case 'N':
      x = mk(v, K_NONE);
      break;
    case 0x88:
    case 0x89:
      if ((x = mk(v, K_BOOL))) x->i = op == 0x88;
      break;
    case 'J':
      if (!need(v, 4)) return -1;
      if ((x = mk(v, K_INT))) x->i = (int32_t)(uint32_t)mpprof_le_uint(v->p, 4);
      v->p += 4;
      break;
    case 'K':
      if (!need(v, 1)) return -1;
      if ((x = mk(v, K_INT))) x->i = *v->p;
      v->p += 1;
      break;
    case 'M':
      if (!need(v, 2)) return -1;
      if ((x = mk(v, K_INT))) x->i = (int64_t)mpprof_le_uint(v->p, 2);
      v->p += 2;
      break;
    case 0x8a: /* LONG1: n bytes, little-endian two's complement */
      if (!need(v, 1) || !need(v, 1 + (size_t)v->p[0])) return -1;
      n = v->p[0];
      if ((x = mk(v, K_INT))) {
        if (n > 8) { /* beyond int64: a number, never a size */
          x->i = -1;
        } else if (n) {
          uint64_t u = mpprof_le_uint(v->p + 1, (int)n);
          if (n < 8 && (v->p[n] & 0x80)) u |= ~UINT64_C(0) << (8 * n);
          x->i = (int64_t)u;
        }
      }
      v->p += 1 + n;
      break;
    case 'G':
      if (!need(v, 8)) return -1;
      x = mk(v, K_FLOAT);
      v->p += 8;
      break;
    case 'X':    /* BINUNICODE */
    case 'B':    /* BINBYTES */
    case 'T':    /* BINSTRING */
    case 0x8c:   /* SHORT_BINUNICODE */
    case 'C':    /* SHORT_BINBYTES */
    case 'U':    /* SHORT_BINSTRING */
    case 0x8d:   /* BINUNICODE8 */
    case 0x8e:   /* BINBYTES8 */
    case 0x96: { /* BYTEARRAY8 */
      int w = op == 'X' || op == 'B' || op == 'T' ? 4 : op >= 0x8d ? 8 : 1;
      if (!need(v, (size_t)w)) return -1;
      n = mpprof_le_uint(v->p, w);
      if (n > (uint64_t)(v->end - v->p) - (size_t)w) return -1;
      if ((x = mk(v, K_STR))) {
        x->s = (const char *)v->p + w;
        x->slen = (size_t)n;
      }
      v->p += (size_t)w + n;
      break;
    }
    case ')':
      x = mk(v, K_TUPLE);
      break;
    case ']':
      x = mk(v, K_LIST);
      break;
    case '}':
      x = mk(v, K_DICT);
      break;
    case 't':
      x = pop_mark(v, K_TUPLE);
      break;
    case 'l':
    case 0x91: /* FROZENSET */
      x = pop_mark(v, K_LIST);
      break;
    case 0x85:
    case 0x86:
    case 0x87: {
      size_t k = op - 0x84;
      if (v->sp < k) return -1;
      if (!(x = mk(v, K_TUPLE))) return -1;
      for (size_t i = v->sp - k; i < v->sp; i++)
        if (v->stack[i]->k == K_MARK || !add_child(x, v->stack[i])) return -1;
      v->sp -= k;
      break;
    }
    case 'c': { /* GLOBAL: "module\nname\n" */
      const char *s = (const char *)v->p, *e1 = memchr(s, '\n', (size_t)(v->end - v->p));
      const char *e2 =
          e1 ? memchr(e1 + 1, '\n', (size_t)(v->end - (const unsigned char *)e1 - 1)) : NULL;
      if (!e2 || e2 - s > 200) return -1;
      if (!(x = mk(v, K_GLOBAL))) return -1;
      char *g = malloc((size_t)(e2 - s) + 1);
      if (!g) return -1;
      snprintf(g, (size_t)(e2 - s) + 1, "%.*s.%.*s", (int)(e1 - s), s, (int)(e2 - e1 - 1), e1 + 1);
      x->s = g;
      x->slen = 1; /* owned */
      v->p = (const unsigned char *)e2 + 1;
      break;
    }
    case 0x93: { /* STACK_GLOBAL */
      b = pop(v);
      a = pop(v);
      if (!a || !b || a->k != K_STR || b->k != K_STR || a->slen + b->slen > 200) return -1;
      if (!(x = mk(v, K_GLOBAL))) return -1;
      char *g = malloc(a->slen + b->slen + 2);
      if (!g) return -1;
      snprintf(g, a->slen + b->slen + 2, "%.*s.%.*s", (int)a->slen, a->s, (int)b->slen, b->s);
      x->s = g;
      x->slen = 1;
      break;
    }
    case 'Q': /* BINPERSID */
      x = storage(v, pop(v));
      break;
    case 'R':    /* REDUCE */
    case 0x81:   /* NEWOBJ */
    case 0x92: { /* NEWOBJ_EX: cls, args, kwargs (searched as the state is) */
      node *kw = op == 0x92 ? pop(v) : NULL;
      if (op == 0x92 && !kw) return -1;
      b = pop(v);
      a = pop(v);
      if (!a || !b) return -1;
      /* a quantized tensor (_rebuild_qtensor) takes the same first four
       * arguments: listed under its own name as a state_dict names it, its
       * quantizer's parameters (per-channel scales) part of it, not tensors
       * of their own */
      if (op == 'R' && (is_global(a, "torch._utils._rebuild_tensor_v2") ||
                        is_global(a, "torch._utils._rebuild_tensor") ||
                        is_global(a, "torch._utils._rebuild_qtensor"))) {
        x = tensor(v, b);
      } else if (op == 'R' &&
                 (is_global(a, "torch._utils._rebuild_parameter") ||
                  is_global(a, "torch._utils._rebuild_parameter_with_state")) &&
                 b->k == K_TUPLE && b->n >= 1) {
        x = b->c[0];
      } else if (is_global(a, "collections.OrderedDict")) {
        x = mk(v, K_DICT);
      } else if ((x = mk(v, K_OBJ))) {
        if (!add_child(x, a) || !add_child(x, b) || (kw && !add_child(x, kw))) return -1;
      }
      break;
    }
    case 'b': /* BUILD: the state goes with the object, searched as its arguments are */
      a = pop(v);
      x = top(v);
      if (!a || !x) return -1;
      if (x->k == K_OBJ && !add_child(x, a)) return -1;
      continue;
    case 's': /* SETITEM */
      b = pop(v);
      a = pop(v);
      x = top(v);
      if (!a || !b || !x || x->k != K_DICT || !add_child(x, a) || !add_child(x, b)) return -1;
      continue;
    case 'u':    /* SETITEMS */
    case 'e':    /* APPENDS */
    case 0x90: { /* ADDITEMS */
      node *items = pop_mark(v, K_TUPLE);
      x = top(v);
      if (!items || !x || (op == 'u' ? x->k != K_DICT || items->n % 2 : x->k != K_LIST)) return -1;
      for (size_t i = 0; i < items->n; i++)
        if (!add_child(x, items->c[i])) return -1;
      continue;
    }
    case 'a': /* APPEND */
      a = pop(v);
      x = top(v);
      if (!a || !x || x->k != K_LIST || !add_child(x, a)) return -1;
      continue;
    case 0x8f: /* EMPTY_SET */
      x = mk(v, K_LIST);
      break;
    case '0': /* POP */
      if (!pop(v)) return -1;
      continue;
    case '2': /* DUP */
      x = top(v);
      break;
    case 'q':
    case 'r':
    case 0x94: { /* BINPUT, LONG_BINPUT, MEMOIZE */
      int w = op == 'q' ? 1 : op == 'r' ? 4 : 0;
      if (!need(v, (size_t)w)) return -1;
      n = w ? mpprof_le_uint(v->p, w) : v->memo_used; /* MEMOIZE: the memo's size, as Python's */
      v->p += w;
      x = top(v);
      if (!x) return -1;
      /* A pickler numbers its memo 0, 1, 2 ... (a byte at least per entry):
       * an index beyond the pickle's size is no pickler's, and would make the
       * memo many times the file (Python's is a dict). MAX_MEMO bounds a
       * large pickle's. */
      if (n >= v->size) {
        v->failed = mpprof_tensorio_fail(
            v->err, v->errlen, "data.pkl: memo index %" PRIu64 " beyond the pickle's %zu bytes", n,
            v->size);
        return -1;
      }
      if (n >= MAX_MEMO) {
        v->failed = mpprof_tensorio_fail(v->err, v->errlen,
                                         "data.pkl: memo index %" PRIu64
                                         " beyond the %u entries this reader keeps",
                                         n, MAX_MEMO);
        return -1;
      }
      if (!grow((void **)&v->memo, &v->memo_cap, n + 1, sizeof *v->memo)) return -1;
      v->memo_used += !v->memo[n];
      v->memo[n] = x;
      continue;
    }
    case 'h':
    case 'j': { /* BINGET, LONG_BINGET */
      int w = op == 'h' ? 1 : 4;
      if (!need(v, (size_t)w)) return -1;
      n = mpprof_le_uint(v->p, w);
      v->p += w;
      if (n >= v->memo_cap || !v->memo[n]) return -1;
      x = v->memo[n];
      break;
    }
    default:
      return -1;
    }
    if (!push(v, x)) return -1;
  }
  return -1;
}

/* ---- the walk: tensors named by their path ---- */

/* Every path to a tensor is named, as a state_dict names a tied weight or a
 * shared submodule under each of its names; a container inside itself is
 * walked once. Objects shared along many paths multiply the walk: bounded. */
#define MAX_VISITS (1u << 22)  /* nodes walked, one reached by k paths counting k times */
#define MAX_TENSORS (1u << 20) /* tensors named */

typedef struct walk {
  mpprof_tensor_set *set;
  size_t cap;
  bool big_endian;
  /* the path walked so far, one segment per level (into the pickle's
   * strings or a caller's number): joined only when a tensor is reached, so
   * that a visit costs the same whatever the keys above it */
  struct {
    const char *s;
    size_t n;
  } seg[MAX_DEPTH + 2];
  uint64_t visits;
  uint64_t mem, mem_max; /* bytes of entries and names, and their bound */
  char *err;
  size_t errlen;
} walk;

/* Charge n bytes of entries and names to w: 0, or -1 beyond its bound. */
static int charge(walk *w, uint64_t n) {
  if (n <= w->mem_max - w->mem) {
    w->mem += n;
    return 0;
  }
  return mpprof_tensorio_fail(w->err, w->errlen,
                              "data.pkl: its tensors' names would take more than %" PRIu64
                              " bytes of memory (one tensor named along many paths, or names "
                              "joined from very long keys)",
                              w->mem_max);
}

static bool module_level(const char *s, size_t n) {
  return (n == 11 && !memcmp(s, "_parameters", 11)) || (n == 8 && !memcmp(s, "_buffers", 8)) ||
         (n == 8 && !memcmp(s, "_modules", 8));
}

/* The tensor t, reached along the path of w->seg[0..depth) (len bytes
 * '.'-joined), as an entry of w->set. */
static int add_tensor(walk *w, const node *t, size_t len, int depth) {
  if (w->set->n >= MAX_TENSORS)
    return mpprof_tensorio_fail(w->err, w->errlen, "data.pkl: more than %u tensors", MAX_TENSORS);
  if (charge(w, sizeof *w->set->entries + (uint64_t)len + 1) < 0) return -1;
  if (!grow((void **)&w->set->entries, &w->cap, w->set->n + 1, sizeof *w->set->entries))
    return mpprof_tensorio_fail(w->err, w->errlen, "out of memory");
  mpprof_named_tensor *e = &w->set->entries[w->set->n];
  memset(e, 0, sizeof *e);
  char *name = malloc(len + 1);
  if (!name) return mpprof_tensorio_fail(w->err, w->errlen, "out of memory");
  size_t at = 0;
  for (int k = 0; k < depth; k++) {
    if (!w->seg[k].n) continue;
    if (at) name[at++] = '.';
    memcpy(name + at, w->seg[k].s, w->seg[k].n);
    at += w->seg[k].n;
  }
  name[at] = '\0';
  e->name = name;
  w->set->n++;
  const node *s = t->storage;
  snprintf(e->dtype_name, sizeof e->dtype_name, "%s", s->dtype_name);
  mpprof_tensor *x = &e->t;
  x->dtype = s->dtype;
  x->ndim = t->ndim;
  memcpy(x->shape, t->shape, sizeof *x->shape * (size_t)t->ndim);
  x->byteswap = w->big_endian != MPPROF_HOST_BIG_ENDIAN;
  if (s->dtype == MP_DTYPE_INVALID) return 0;
  x->count = 1;
  for (int k = 0; k < t->ndim; k++)
    x->count *= t->shape[k];
  x->data = x->count ? s->data + t->offset * mp_dtype_size(s->dtype) : s->data;
  uint64_t expect = 1; /* C order: the last dimension moves by 1 */
  for (int k = t->ndim - 1; k >= 0; k--) {
    if (t->shape[k] != 1 && t->stride[k] != expect) x->strided = true;
    expect *= t->shape[k];
  }
  if (x->strided) memcpy(x->stride, t->stride, sizeof *x->stride * (size_t)t->ndim);
  if (!x->count) x->strided = false;
  return 0;
}

/* The i-th child's name under x into seg (or a pointer to the key's text):
 * its length, 0 for a level that names nothing (a module's _parameters, an
 * object's arguments and state). */
static size_t segment(const node *x, size_t i, char *num, size_t numlen, const char **ret) {
  *ret = num;
  if (x->k == K_OBJ) return 0;
  if (x->k != K_DICT) return (size_t)snprintf(num, numlen, "%zu", i);
  const node *key = x->c[i];
  if (key->k == K_STR) {
    *ret = key->s;
    return module_level(key->s, key->slen) ? 0 : key->slen;
  }
  if (key->k == K_INT) return (size_t)snprintf(num, numlen, "%" PRId64, key->i);
  return (size_t)snprintf(num, numlen, "%zu", i / 2);
}

/* Walks x, reached along the path of w->seg[0..depth) (len bytes '.'-joined). */
static int walk_node(walk *w, node *x, size_t len, int depth) {
  if (x->open) return 0;
  if (++w->visits > MAX_VISITS)
    return mpprof_tensorio_fail(
        w->err, w->errlen,
        "data.pkl: more than %u objects to walk (objects shared along many paths)", MAX_VISITS);
  if (depth > MAX_DEPTH)
    return mpprof_tensorio_fail(w->err, w->errlen, "data.pkl: objects nested deeper than %d levels",
                                MAX_DEPTH);
  if (x->k == K_TENSOR) return add_tensor(w, x, len, depth);
  if (x->k != K_DICT && x->k != K_LIST && x->k != K_TUPLE && x->k != K_OBJ) return 0;
  x->open = true;
  size_t step = x->k == K_DICT ? 2 : 1;
  int rc = 0;
  for (size_t i = x->k == K_OBJ ? 1 : 0; rc == 0 && i + step - 1 < x->n; i += step) {
    char num[24];
    size_t sl = segment(x, i, num, sizeof num, &w->seg[depth].s);
    w->seg[depth].n = sl;
    rc = walk_node(w, x->c[i + step - 1], sl ? len + (len > 0) + sl : len, depth + 1);
  }
  x->open = false;
  return rc;
}

/* ---- the two kinds of archive ---- */

static int torch_parse(const zip *z, const member *pkl, size_t file_len, mpprof_tensor_set *ret,
                       char *err, size_t errlen) {
  vm v = {.p = pkl->data,
          .end = pkl->data + pkl->size,
          .size = pkl->size,
          .z = z,
          .err = err,
          .errlen = errlen};
  v.prefix = pkl->name;
  v.plen = pkl->name_len - strlen("data.pkl");
  /* the byte order of the storages (torch.save writes it from torch 2.1 on;
   * without it torch.load takes the reading host's, as here) */
  const member *bo = find(z, v.prefix, v.plen, "byteorder");
  if (bo && bo->method != 0)
    v.failed = mpprof_tensorio_fail(err, errlen, "byteorder is compressed (torch.save stores it)");
  else if (bo && bo->size == 3 && !memcmp(bo->data, "big", 3))
    v.big_endian = true;
  else if (bo && !(bo->size == 6 && !memcmp(bo->data, "little", 6))) {
    int n = bo->size > 16 ? -1 : (int)bo->size; /* shown when short and printable */
    for (int i = 0; i < n; i++)
      if (bo->data[i] < 0x20 || bo->data[i] > 0x7e || bo->data[i] == '"') n = -1;
    v.failed =
        n < 0 ? mpprof_tensorio_fail(err, errlen, "byteorder is neither \"little\" nor \"big\"")
              : mpprof_tensorio_fail(err, errlen,
                                     "byteorder \"%.*s\" is neither \"little\" nor \"big\"", n,
                                     (const char *)bo->data);
  } else
    v.big_endian = bo ? false : MPPROF_HOST_BIG_ENDIAN;
  if (!v.failed && pkl->method != 0)
    v.failed = mpprof_tensorio_fail(err, errlen, "data.pkl is compressed (torch.save stores it)");
  int rc = v.failed ? -1 : run(&v);
  if (rc < 0 && !v.failed)
    mpprof_tensorio_fail(err, errlen, "data.pkl: not a pickle this reader follows");
  if (rc == 0) {
    walk w = {.set = ret, .big_endian = v.big_endian, .err = err, .errlen = errlen};
    w.mem_max = (uint64_t)file_len > UINT64_MAX / MPPROF_ZIP_NAMES_MEM_PER_FILE_BYTE
                    ? UINT64_MAX
                    : (uint64_t)file_len * MPPROF_ZIP_NAMES_MEM_PER_FILE_BYTE;
    if (w.mem_max < MPPROF_ZIP_NAMES_MEM_MIN) w.mem_max = MPPROF_ZIP_NAMES_MEM_MIN;
    rc = walk_node(&w, v.stack[0], 0, 0);
  }
  for (size_t i = 0; i < v.n_all; i++) {
    if (v.all[i]->k == K_GLOBAL) free((char *)v.all[i]->s);
    if (v.all[i]->k == K_TENSOR) free(v.all[i]->shape);
    free(v.all[i]->c);
    free(v.all[i]);
  }
  free(v.all);
  free(v.stack);
  free(v.marks);
  free(v.memo);
  return rc;
}

static int npz_parse(const zip *z, mpprof_tensor_set *ret, char *err, size_t errlen) {
  size_t cap = 0;
  for (size_t i = 0; i < z->n; i++) {
    const member *m = &z->m[i];
    if (m->name_len < 4 || memcmp(m->name + m->name_len - 4, ".npy", 4)) continue;
    if (m->method != 0)
      return mpprof_tensorio_fail(
          err, errlen,
          "member '%.*s' is compressed (np.savez_compressed); save with np.savez to "
          "inspect it",
          (int)m->name_len, m->name);
    if (!grow((void **)&ret->entries, &cap, ret->n + 1, sizeof *ret->entries))
      return mpprof_tensorio_fail(err, errlen, "out of memory");
    mpprof_named_tensor *e = &ret->entries[ret->n];
    memset(e, 0, sizeof *e);
    e->name = strndup(m->name, m->name_len - 4);
    if (!e->name) return mpprof_tensorio_fail(err, errlen, "out of memory");
    ret->n++;
    char sub[MPPROF_SHAPE_TEXT_MAX + 256]; /* the member's problem, which may name its shape */
    int prc = mpprof_npy_parse(m->data, (size_t)m->size, MP_DTYPE_INVALID, &e->t, sub, sizeof sub);
    snprintf(e->dtype_name, sizeof e->dtype_name, "%s", e->t.descr);
    /* A dtype it does not read (labels as '<i8'): listed, as in a checkpoint. */
    if (prc < 0 && e->t.dtype_unread) {
      e->t.count = 0;
      e->t.data = NULL;
      continue;
    }
    if (prc < 0) return mpprof_tensorio_fail(err, errlen, "member '%s': %s", e->name, sub);
  }
  return 0;
}

int mpprof_zip_parse(const void *buf, size_t len, mpprof_tensor_set *ret, char *err,
                     size_t errlen) {
  memset(ret, 0, sizeof *ret);
  zip z;
  int rc = zip_read(buf, len, &z, err, errlen);
  const member *pkl = NULL;
  for (size_t i = 0; rc == 0 && i < z.n && !pkl; i++) { /* "<archive>/data.pkl" */
    const member *m = &z.m[i];
    const char *slash = memchr(m->name, '/', m->name_len);
    if (slash && (size_t)(slash - m->name) + 9 == m->name_len && !memcmp(slash + 1, "data.pkl", 8))
      pkl = m;
  }
  if (rc == 0)
    rc = pkl ? torch_parse(&z, pkl, len, ret, err, errlen) : npz_parse(&z, ret, err, errlen);
  if (rc == 0 && !pkl && !ret->n && z.n) /* no members at all: an .npz of no arrays */
    rc = mpprof_tensorio_fail(err, errlen,
                              "a zip archive with neither data.pkl (torch.save) nor .npy members");
  free(z.m);
  free(z.by_name);
  if (rc) mpprof_tensor_set_close(ret);
  return rc;
}

int mpprof_zip_open(const char *path, mpprof_tensor_set *ret, char *err, size_t errlen) {
  return mpprof_tensor_set_open(path, mpprof_zip_parse, ret, err, errlen);
}
