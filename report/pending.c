/* Compact pending-merge records: what a parsed site of a raw file adds to a
 * site the model already has (the fields mpprof_model_merge_site merges),
 * packed into one block of bytes while the rest of its file is validated.
 * As an mpprof_site with its tensor, kernel and count records that was some
 * 2.5 KB a site in 30 small blocks; packed it is a few hundred bytes in one.
 * The model's own sites keep their tensors packed the same way.
 *
 * The bytes: counts as LEB128 varints (signed ones zigzagged), doubles as
 * their 8 bytes, strings NUL-terminated; in the order pack writes them. They
 * live in memory only, read back by this file's unpack. */
#include <stdlib.h>
#include <string.h>

#include "report/report_internal.h"

/* ---- writing ---- */

/* A varint at t (at most 10 bytes): the byte after it. Written in place
 * (some hundred a site: a memcpy call each was most of packing). */
static unsigned char *varint(unsigned char *t, uint64_t v) {
  for (; v > 0x7f; v >>= 7)
    *t++ = (unsigned char)(v | 0x80);
  *t++ = (unsigned char)v;
  return t;
}

static unsigned char *zigzag(unsigned char *t, int64_t v) {
  return varint(t, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_u(mpprof_tb *b, uint64_t v) {
  if (b->oom || (b->n + 11 > b->cap && !mpprof_tb_room(b, 10))) return;
  b->n = (size_t)((char *)varint((unsigned char *)b->p + b->n, v) - b->p);
  b->p[b->n] = '\0';
}

static void put_z(mpprof_tb *b, int64_t v) {
  put_u(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_d(mpprof_tb *b, double d) {
  mpprof_tb_put(b, (const char *)&d, sizeof d);
}

static void put_s(mpprof_tb *b, const char *s) {
  mpprof_tb_put(b, s, strlen(s) + 1);
}

static void put_counts(mpprof_tb *b, const mpprof_count *c, size_t n) {
  put_u(b, n);
  for (size_t i = 0; i < n; i++) {
    put_s(b, c[i].name);
    put_u(b, c[i].n);
  }
}

static void put_fp8(mpprof_tb *b, const mpprof_fp8_value *v) {
  static const double zero = 0;
  bool ext = memcmp(&v->min, &zero, sizeof zero) || memcmp(&v->max, &zero, sizeof zero);
  put_u(b, v->read);
  put_u(b, v->unread);
  put_u(b, ext);
  if (ext) {
    put_d(b, v->min);
    put_d(b, v->max);
  }
}

/* Room for the most a record takes is made once, and its varints written
 * in place (a check per number was most of the packing). */
static void put_cstats(mpprof_tb *b, const mpprof_cstats *c) {
  size_t nb = c->nz_lo <= c->nz_hi ? (size_t)(c->nz_hi - c->nz_lo + 1) : 0;
  size_t most = (4 + 7 + MP_TARGET_COUNT * MP_CAST_OUTCOMES + 2 + nb) * 10 + 4 * sizeof(double);
  if (b->oom || (b->n + most + 1 > b->cap && !mpprof_tb_room(b, most))) return;
  unsigned char *t = (unsigned char *)b->p + b->n;
  t = zigzag(t, c->dtype);
  t = zigzag(t, c->hist_lo);
  t = zigzag(t, c->hist_hi);
  t = zigzag(t, c->hist_shift);
  const uint64_t counts[] = {c->count,    c->zeros,     c->nans,     c->pos_infs,
                             c->neg_infs, c->negatives, c->saturated};
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
    t = varint(t, counts[i]);
  const double extremes[] = {c->min, c->max, c->absmax, c->min_abs_nonzero};
  memcpy(t, extremes, sizeof extremes);
  t += sizeof extremes;
  for (int g = 0; g < MP_TARGET_COUNT; g++)
    for (int o = 0; o < MP_CAST_OUTCOMES; o++)
      t = varint(t, c->casts[g][o]);
  t = zigzag(t, c->nz_lo);
  t = zigzag(t, c->nz_hi);
  for (size_t i = 0; i < nb; i++)
    t = varint(t, c->bins[i]);
  b->n = (size_t)((char *)t - b->p);
  b->p[b->n] = '\0';
}

static void put_kernel(mpprof_tb *b, const mpprof_kernel *k) {
  put_s(b, k->name);
  put_u(b, k->count);
  put_u(b, k->gpu_ns);
  put_z(b, k->counters_tc);
  put_u(b, k->tc_profiled);
  put_z(b, k->n_tc_values);
  for (int i = 0; i < k->n_tc_values; i++)
    put_d(b, k->tc_values[i]);
  /* not cls: the Tensor Core pass fills it after reading */
}

int mpprof_pending_pack(mpprof_site *s, mpprof_tb *scratch, mpprof_pending *ret) {
  mpprof_tb b = *scratch; /* kept across sites: one exact copy per site */
  b.n = 0;
  put_u(&b, s->calls);
  put_u(&b, s->scanned_calls);
  put_u(&b, s->autotune_calls);
  put_u(&b, s->has_gpu_ns);
  put_u(&b, s->gpu_ns);
  put_u(&b, s->ptr_align);
  put_z(&b, s->cc_major);
  put_z(&b, s->cc_minor);
  put_u(&b, s->fp8 != NULL);
  if (s->fp8) {
    for (int i = 0; i < MP_FP8_ROWS; i++)
      put_fp8(&b, &s->fp8->v[i]);
  }
  put_counts(&b, s->not_scanned, s->n_not_scanned);
  put_counts(&b, s->ranks, s->n_ranks);
  put_u(&b, s->n_tensors);
  for (size_t i = 0; i < s->n_tensors; i++) {
    put_s(&b, s->tensors[i].role);
    put_cstats(&b, &s->tensors[i].st);
  }
  size_t kernels_at = b.n;
  put_u(&b, s->n_kernels);
  for (size_t i = 0; i < s->n_kernels; i++)
    put_kernel(&b, &s->kernels[i]);
  *scratch = b;
  if (b.oom) return -1;
  unsigned char *p = malloc(b.n ? b.n : 1);
  if (!p) return -1;
  memcpy(p, b.p, b.n);
  *ret = (mpprof_pending){.bytes = p,
                          .len = b.n,
                          .kernels_at = kernels_at,
                          .n_kernels = s->n_kernels,
                          .shadow = s->shadow};
  s->shadow = NULL; /* taken over */
  return 0;
}

/* ---- reading ---- */

typedef struct rd {
  const unsigned char *p, *end;
} rd;

static uint64_t get_u(rd *r) {
  uint64_t v = 0;
  for (int shift = 0; r->p < r->end && shift < 64; shift += 7) {
    unsigned char c = *r->p++;
    v |= (uint64_t)(c & 0x7f) << shift;
    if (!(c & 0x80)) break;
  }
  return v;
}

static int64_t get_z(rd *r) {
  uint64_t u = get_u(r);
  return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static double get_d(rd *r) {
  double d;
  memcpy(&d, r->p, sizeof d);
  r->p += sizeof d;
  return d;
}

static const char *get_s(rd *r) {
  const char *s = (const char *)r->p;
  r->p += strlen(s) + 1;
  return s;
}

static int get_counts(rd *r, mpprof_strpool *pool, mpprof_count **ret, size_t *ret_n) {
  size_t n = (size_t)get_u(r);
  if (!n) return 0;
  if (!(*ret = calloc(n, sizeof **ret))) return -1;
  for (; *ret_n < n; (*ret_n)++) {
    mpprof_count *c = &(*ret)[*ret_n];
    if (!(c->name = mpprof_intern(pool, get_s(r)))) return -1;
    c->n = get_u(r);
  }
  return 0;
}

static void get_fp8(rd *r, mpprof_fp8_value *v) {
  v->read = get_u(r);
  v->unread = get_u(r);
  if (get_u(r)) {
    v->min = get_d(r);
    v->max = get_d(r);
  }
}

/* Read through a local copy of *r: the stores into *c then cannot move its
 * position, which stays in a register (half of unpacking's instructions). */
static int get_cstats(rd *from, mpprof_cstats *c) {
  rd l = *from, *r = &l;
  c->dtype = (mp_dtype)get_z(r);
  c->hist_lo = (int)get_z(r);
  c->hist_hi = (int)get_z(r);
  c->hist_shift = (int)get_z(r);
  c->count = get_u(r);
  c->zeros = get_u(r);
  c->nans = get_u(r);
  c->pos_infs = get_u(r);
  c->neg_infs = get_u(r);
  c->negatives = get_u(r);
  c->saturated = get_u(r);
  c->min = get_d(r);
  c->max = get_d(r);
  c->absmax = get_d(r);
  c->min_abs_nonzero = get_d(r);
  for (int t = 0; t < MP_TARGET_COUNT; t++)
    for (int o = 0; o < MP_CAST_OUTCOMES; o++)
      c->casts[t][o] = get_u(r);
  c->nz_lo = (int)get_z(r);
  c->nz_hi = (int)get_z(r);
  *from = l;
  if (c->nz_lo > c->nz_hi) return 0;
  size_t nb = (size_t)(c->nz_hi - c->nz_lo + 1);
  uint64_t *bins = malloc(nb * sizeof *bins);
  if (!(c->bins = bins)) return -1;
  for (size_t i = 0; i < nb; i++)
    bins[i] = get_u(r);
  *from = l;
  return 0;
}

/* A kernel record into *k but its name, which is returned (in the bytes). */
static const char *read_kernel(rd *r, mpprof_kernel *k) {
  const char *name = get_s(r);
  k->count = get_u(r);
  k->gpu_ns = get_u(r);
  k->counters_tc = (int)get_z(r);
  k->tc_profiled = get_u(r);
  k->n_tc_values = (int)get_z(r);
  for (int i = 0; i < k->n_tc_values; i++)
    k->tc_values[i] = get_d(r);
  return name;
}

int mpprof_pending_unpack(mpprof_pending *pd, mpprof_strpool *pool, mpprof_site *ret) {
  memset(ret, 0, sizeof *ret);
  rd r = {pd->bytes, pd->bytes + pd->len};
  ret->calls = get_u(&r);
  ret->scanned_calls = get_u(&r);
  ret->autotune_calls = get_u(&r);
  ret->has_gpu_ns = get_u(&r);
  ret->gpu_ns = get_u(&r);
  ret->ptr_align = (unsigned)get_u(&r);
  ret->cc_major = (int)get_z(&r);
  ret->cc_minor = (int)get_z(&r);
  if (get_u(&r)) {
    if (!(ret->fp8 = calloc(1, sizeof *ret->fp8))) return -1;
    for (int i = 0; i < MP_FP8_ROWS; i++)
      get_fp8(&r, &ret->fp8->v[i]);
  }
  if (get_counts(&r, pool, &ret->not_scanned, &ret->n_not_scanned) ||
      get_counts(&r, pool, &ret->ranks, &ret->n_ranks))
    return -1;
  size_t nt = (size_t)get_u(&r);
  if (nt && !(ret->tensors = calloc(nt, sizeof *ret->tensors))) return -1;
  for (; ret->n_tensors < nt; ret->n_tensors++) {
    mpprof_role_stats *t = &ret->tensors[ret->n_tensors];
    t->st.nz_lo = 1; /* no bins until read: what mpprof_cstats_free expects */
    if (!(t->role = mpprof_intern(pool, get_s(&r))) || get_cstats(&r, &t->st)) {
      ret->n_tensors++;
      return -1;
    }
  }
  size_t nk = (size_t)get_u(&r);
  if (nk && !(ret->kernels = calloc(nk, sizeof *ret->kernels))) return -1;
  for (; ret->n_kernels < nk; ret->n_kernels++) {
    mpprof_kernel *k = &ret->kernels[ret->n_kernels];
    if (!(k->name = mpprof_intern(pool, read_kernel(&r, k)))) return -1;
  }
  ret->shadow = pd->shadow; /* taken over */
  pd->shadow = NULL;
  return 0;
}

const char *mpprof_pending_kernel_name(const mpprof_pending *pd, size_t k) {
  rd r = {pd->bytes + pd->kernels_at, pd->bytes + pd->len};
  size_t nk = (size_t)get_u(&r);
  for (size_t i = 0; i < nk; i++) {
    mpprof_kernel kk = {0};
    const char *name = read_kernel(&r, &kk);
    if (i == k) return name;
  }
  return NULL;
}

void mpprof_pending_free(mpprof_pending *pd) {
  free(pd->bytes);
  mpprof_shadow_free(pd->shadow);
  memset(pd, 0, sizeof *pd);
}

/* ---- a model site's tensors ---- */

/* The records as pending keeps them, each role as its interned pointer. */
int mpprof_site_pack_tensors(mpprof_site *s, mpprof_tb *scratch) {
  if (s->tpack || !s->tensors) return 0;
  if (!s->n_tensors) { /* an empty record array: nothing to keep */
    free(s->tensors);
    s->tensors = NULL;
    return 0;
  }
  mpprof_tb b = *scratch;
  b.n = 0;
  s->elements = 0;
  for (size_t i = 0; i < s->n_tensors; i++) {
    mpprof_tb_put(&b, (const char *)&s->tensors[i].role, sizeof s->tensors[i].role);
    put_cstats(&b, &s->tensors[i].st);
    s->elements += s->tensors[i].st.count;
  }
  *scratch = b;
  unsigned char *p = b.oom ? NULL : malloc(b.n ? b.n : 1);
  if (!p) return -1;
  memcpy(p, b.p, b.n);
  mpprof_role_stats_free(s->tensors, s->n_tensors);
  s->tensors = NULL;
  s->tpack = p;
  s->tpack_len = b.n;
  return 0;
}

static int unpack_tensors(const mpprof_site *s, mpprof_role_stats **ret) {
  mpprof_role_stats *t = calloc(s->n_tensors ? s->n_tensors : 1, sizeof *t);
  if (!t) return -1;
  rd r = {s->tpack, s->tpack + s->tpack_len};
  for (size_t i = 0; i < s->n_tensors; i++) {
    memcpy(&t[i].role, r.p, sizeof t[i].role);
    r.p += sizeof t[i].role;
    t[i].st.nz_lo = 1; /* no bins until read: what mpprof_cstats_free expects */
    if (get_cstats(&r, &t[i].st)) {
      mpprof_role_stats_free(t, i + 1);
      return -1;
    }
  }
  *ret = t;
  return 0;
}

int mpprof_site_unpack_tensors(mpprof_site *s) {
  if (!s->tpack) return 0;
  mpprof_role_stats *t;
  if (unpack_tensors(s, &t)) return -1;
  free(s->tpack);
  s->tpack = NULL;
  s->tpack_len = 0;
  s->tensors = t;
  return 0;
}

int mpprof_site_tensors(const mpprof_site *s, const mpprof_role_stats **ret, bool *ret_owned) {
  *ret_owned = s->tpack != NULL;
  if (!s->tpack) {
    *ret = s->tensors;
    return 0;
  }
  mpprof_role_stats *t;
  if (unpack_tensors(s, &t)) return -1;
  *ret = t;
  return 0;
}

void mpprof_role_stats_free(mpprof_role_stats *t, size_t n) {
  if (!t) return;
  for (size_t i = 0; i < n; i++)
    mpprof_cstats_free(&t[i].st);
  free(t);
}
