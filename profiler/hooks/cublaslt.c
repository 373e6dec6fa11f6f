/* cuBLASLt hook (libcublasLt.so.13): cublasLtMatmul. Everything that decides
 * its precision lives in opaque descriptors, read back here through the
 * host-only getters (dtypes, compute and scale type, transposes, epilogue,
 * FP8 scale and amax pointers, layouts). When libcublas calls this from
 * inside a hooked cuBLAS GEMM, the depth guard lets it pass unrecorded.
 * Also the real functions of mpprof's own fp32 GEMMs in a program that loads
 * cuBLASLt without cuBLAS (profiler/gpu/devshadow_blas.h). */
#include <cublasLt.h>
#include <pthread.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "gemm_decode.h"
#include "hook.h"
#include "profiler/gpu/devshadow_blas.h"
#include "profiler/gpu/gpu.h"
#include "profiler/hostmem.h"

#define MPP_MODULE_SONAME "libcublasLt.so.13"
#define MPP_MODULE_SYMS(X)                                                                         \
  X(cublasLtMatmul)                                                                                \
  X(cublasLtMatmulDescGetAttribute)                                                                \
  X(cublasLtMatrixLayoutGetAttribute)                                                              \
  X(cublasLtCreate)                                                                                \
  X(cublasLtMatmulDescCreate)                                                                      \
  X(cublasLtMatmulDescSetAttribute)                                                                \
  X(cublasLtMatmulDescDestroy)                                                                     \
  X(cublasLtMatrixLayoutCreate)                                                                    \
  X(cublasLtMatrixLayoutSetAttribute)                                                              \
  X(cublasLtMatrixLayoutDestroy)                                                                   \
  X(cublasLtGetVersion)
MPP_MODULE_TABLE(syms)

static bool desc_get(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, void *buf,
                     size_t n) {
  __typeof__(&cublasLtMatmulDescGetAttribute) get = MPP_REAL(syms, cublasLtMatmulDescGetAttribute);
  size_t written = 0;
  return get && get(d, a, buf, n, &written) == CUBLAS_STATUS_SUCCESS;
}

static bool layout_get(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, void *buf,
                       size_t n) {
  __typeof__(&cublasLtMatrixLayoutGetAttribute) get =
      MPP_REAL(syms, cublasLtMatrixLayoutGetAttribute);
  size_t written = 0;
  return get && get(l, a, buf, n, &written) == CUBLAS_STATUS_SUCCESS;
}

static bool read_layout(cublasLtMatrixLayout_t l, mpp_lt_layout *ret) {
  uint32_t type = 0;
  int32_t order = CUBLASLT_ORDER_COL, batch = 1;
  int64_t stride = 0;
  uint32_t mode = CUBLASLT_BATCH_MODE_STRIDED;
  if (!l || !layout_get(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, sizeof type) ||
      !layout_get(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &ret->rows, sizeof ret->rows) ||
      !layout_get(l, CUBLASLT_MATRIX_LAYOUT_COLS, &ret->cols, sizeof ret->cols) ||
      !layout_get(l, CUBLASLT_MATRIX_LAYOUT_LD, &ret->ld, sizeof ret->ld))
    return false;
  /* Optional attributes keep their defaults when a stand-in lacks them. */
  layout_get(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);
  layout_get(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
  layout_get(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride);
  layout_get(l, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, sizeof mode);
  ret->batch_mode = mode;
  ret->type = (int)type;
  ret->order = order;
  ret->batch = batch;
  ret->batch_stride = stride;
  return true;
}

/* --- what decode reads, memoised by the descriptors' bytes ---
 * cuBLASLt's descriptors are plain data: cublasLtMatmulDescInit and
 * cublasLtMatrixLayoutInit fill caller memory of sizeof(cublasLt*Opaque_t)
 * (cublasLt.h) that nothing releases, so every attribute a getter returns is
 * a function of those bytes (one library, one process). A call whose
 * descriptors hold the bytes of an earlier call's reads what that call read:
 * about 46 getter calls spared (PyTorch makes and destroys its descriptors
 * around every call: their addresses say nothing, their bytes do). The key
 * is the matmul descriptor's bytes and the four layouts' (C's zero when C's
 * layout is not given, with a flag); bias, scale and AMAX pointers are among
 * the bytes, so a model needs about an entry per layer and phase. Per
 * thread, LT_RAW_SETS x LT_RAW_WAYS entries, least recently used replaced;
 * after LT_RAW_TRIAL lookups a thread whose calls hit less than one time in
 * four stops looking (its descriptors never repeat: the lookup would only
 * add its cost). Only with a library of the major version whose header
 * sized the key (cublasLtGetVersion): the hooks bind whatever cuBLASLt the
 * program loaded, and older ones had smaller descriptors (a read of 256
 * bytes could pass the end of one). */
#define LT_DESC_WORDS (sizeof(cublasLtMatmulDescOpaque_t) / 8)
#define LT_LAYOUT_WORDS (sizeof(cublasLtMatrixLayoutOpaque_t) / 8)
#define LT_RAW_WORDS (LT_DESC_WORDS + 4 * LT_LAYOUT_WORDS + 1)
#define LT_RAW_SETS 256
#define LT_RAW_WAYS 4
#define LT_RAW_TRIAL 4096
_Static_assert(sizeof(cublasLtMatmulDescOpaque_t) % 8 == 0 &&
                   sizeof(cublasLtMatrixLayoutOpaque_t) % 8 == 0,
               "descriptors are whole words");

typedef struct lt_raw_entry {
  uint64_t key[LT_RAW_WORDS];
  uint64_t hash, last;   /* last: the memo's clock when used; 0: empty */
  mpp_lt_call g;         /* what decode read; its pointers set from each call that hits */
  mpp_lt_memo_hint hint; /* where g's calls went in the decode memo */
  /* The entry the thread's next call used the last time it used this one:
   * a training loop calls its layers in the same order at every step, so
   * that entry is compared first, without hashing the key (a guess: the
   * key is compared whole). */
  struct lt_raw_entry *next;
} lt_raw_entry;

typedef struct lt_raw_memo {
  uint64_t clock, lookups, hits;
  bool off;
  lt_raw_entry *prev; /* the entry of the thread's last call, or NULL */
  lt_raw_entry e[LT_RAW_SETS * LT_RAW_WAYS];
} lt_raw_memo;

/* A call's key, where it lies: the matmul descriptor, then A's, B's, C's (NULL
 * when not given: zeros in an entry's key, and the last word 0) and D's
 * layouts. Read in place, copied only into a new entry. */
typedef struct lt_raw_parts {
  const void *p[5];
} lt_raw_parts;

static size_t raw_part_words(int i) {
  return i == 0 ? LT_DESC_WORDS : LT_LAYOUT_WORDS;
}

_Static_assert(LT_DESC_WORDS % 2 == 0 && LT_LAYOUT_WORDS % 2 == 0, "parts hash by word pairs");

static __thread MPP_TLS lt_raw_memo *raw_memo;

static void raw_memo_free(void *p) {
  mpp_unmap(p, sizeof(lt_raw_memo));
  raw_memo = NULL;
}

static mpp_thread_key raw_memo_key = MPP_THREAD_KEY(raw_memo_free);

/* Whether the loaded cuBLASLt is of this header's major version. */
static int raw_memo_usable; /* 0: not asked yet, 1: yes, -1: no (atomic) */

static bool raw_memo_library_ok(void) {
  int ok = __atomic_load_n(&raw_memo_usable, __ATOMIC_RELAXED);
  if (!ok) {
    __typeof__(&cublasLtGetVersion) version = MPP_REAL(syms, cublasLtGetVersion);
    ok = version && version() / 10000 == CUBLAS_VER_MAJOR ? 1 : -1;
    __atomic_store_n(&raw_memo_usable, ok, __ATOMIC_RELAXED);
  }
  return ok > 0;
}

/* Mapped, off the program's heap (pages touched as entries fill); NULL when
 * the memo is not used. */
static lt_raw_memo *raw_memo_get(void) {
  if (!raw_memo) {
    if (!raw_memo_library_ok()) return NULL;
    raw_memo = mpp_map_zeroed(sizeof *raw_memo);
    if (raw_memo) mpp_thread_key_set(&raw_memo_key, raw_memo);
  }
  return raw_memo;
}

/* The key's hash. A lookup compares the whole key, so the hash only spreads
 * keys over sets. With SSE2 (every x86-64), 16 bytes at a time: xored with
 * keys that differ by position, each 8-byte half's two 32-bit halves
 * multiplied (pmuludq) and summed, the xored bytes summed besides (so that a
 * half whose low word the key zeroed still counts), about 6 instructions;
 * elsewhere a pair of words multiplied to 128 bits and folded. Then both
 * sums mixed down. */
#if defined(__SSE2__)
static uint64_t raw_hash(const lt_raw_parts *k) {
  __m128i acc = _mm_set_epi64x(0, (long long)(k->p[3] != NULL)), sum = _mm_setzero_si128();
  __m128i kv = _mm_set_epi64x((long long)0x9e3779b97f4a7c15ull, (long long)0xc2b2ae3d27d4eb4full);
  const __m128i step =
      _mm_set_epi64x((long long)0x165667b19e3779f9ull, (long long)0x27d4eb2f165667c5ull);
  for (int i = 0; i < 5; i++) {
    size_t n = raw_part_words(i) / 2;
    const unsigned char *p = k->p[i];
    if (!p) {
      for (size_t j = 0; j < n; j++)
        kv = _mm_add_epi64(kv, step);
      continue;
    }
    for (size_t j = 0; j < n; j++, kv = _mm_add_epi64(kv, step)) {
      __m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(p + 16 * j)), kv);
      acc = _mm_add_epi64(acc, _mm_mul_epu32(v, _mm_srli_epi64(v, 32)));
      sum = _mm_add_epi64(sum, v);
    }
  }
  uint64_t a[2], b[2];
  _mm_storeu_si128((__m128i *)(void *)a, acc);
  _mm_storeu_si128((__m128i *)(void *)b, sum);
  uint64_t h =
      a[0] ^ (a[1] << 29 | a[1] >> 35) ^ b[0] * 0x9e3779b97f4a7c15ull ^ (b[1] << 41 | b[1] >> 23);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ h >> 29;
}
#else
static uint64_t load64(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, sizeof w);
  return w;
}

static uint64_t raw_hash(const lt_raw_parts *k) {
  uint64_t acc = 0x9e3779b97f4a7c15ull ^ (k->p[3] != NULL), kp = 0xc2b2ae3d27d4eb4full;
  for (int i = 0; i < 5; i++) {
    size_t n = raw_part_words(i);
    const unsigned char *p = k->p[i];
    if (!p) {
      kp += (n / 2) * 0x165667b19e3779f9ull;
      continue;
    }
    for (size_t j = 0; j < n; j += 2, kp += 0x165667b19e3779f9ull) {
      __uint128_t x = (__uint128_t)(load64(p + 8 * j) ^ kp) *
                      (load64(p + 8 * j + 8) ^ (kp * 0x27d4eb2f165667c5ull));
      acc += (uint64_t)x ^ (uint64_t)(x >> 64);
    }
  }
  acc ^= acc >> 31;
  acc *= 0xbf58476d1ce4e5b9ull;
  return acc ^ acc >> 29;
}
#endif

static lt_raw_entry *raw_set(lt_raw_memo *m, uint64_t hash) {
  return &m->e[(hash & (LT_RAW_SETS - 1)) * LT_RAW_WAYS];
}

/* Whether e holds the key k. With SSE2 (every x86-64), 16 bytes at a time
 * into one difference tested at the end, the loops unrolled: a hit, the
 * common case, reads the whole key anyway, and the loop with a test per
 * part and a memcmp before it cost a quarter of a memo hit. (32-byte AVX2
 * loads, a third fewer instructions again, ran 17 ns slower a call on a
 * Zen 5 VM: docs/bench.md, session 49.) */
static bool raw_equal(const lt_raw_entry *e, const lt_raw_parts *k) {
  static const uint64_t zeros[LT_LAYOUT_WORDS];
  const uint64_t *w = e->key;
#if defined(__SSE2__)
  __m128i diff = _mm_setzero_si128();
#pragma GCC unroll 5
  for (int i = 0; i < 5; i++) {
    size_t n = raw_part_words(i);
    const unsigned char *b = k->p[i] ? k->p[i] : (const void *)zeros;
#pragma GCC unroll 16
    for (size_t j = 0; j < n; j += 2)
      diff = _mm_or_si128(
          diff, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(w + j)),
                              _mm_loadu_si128((const __m128i *)(const void *)(b + 8 * j))));
    w += n;
  }
  if (_mm_movemask_epi8(_mm_cmpeq_epi8(diff, _mm_setzero_si128())) != 0xffff) return false;
#else
  for (int i = 0; i < 5; i++) {
    size_t n = raw_part_words(i);
    if (memcmp(w, k->p[i] ? k->p[i] : zeros, n * 8)) return false;
    w += n;
  }
#endif
  return *w == (k->p[3] != NULL);
}

/* The entry holding this key, or NULL (then *ret_hash is the key's hash):
 * the entry that followed the thread's last call's the last time first,
 * then the key's set. */
static lt_raw_entry *raw_find(lt_raw_memo *m, const lt_raw_parts *k, uint64_t *ret_hash) {
  /* Judged once, on the lookups before this one. */
  if (++m->lookups == LT_RAW_TRIAL && m->hits < LT_RAW_TRIAL / 4) m->off = true;
  lt_raw_entry *guess = m->prev ? m->prev->next : NULL, *found = NULL;
  if (guess && guess->last && raw_equal(guess, k)) {
    found = guess;
  } else {
    uint64_t hash = *ret_hash = raw_hash(k);
    lt_raw_entry *set = raw_set(m, hash);
    for (int w = 0; w < LT_RAW_WAYS && !found; w++)
      if (set[w].last && set[w].hash == hash && raw_equal(&set[w], k)) found = &set[w];
    if (!found) return NULL;
  }
  found->last = ++m->clock;
  m->hits++;
  return found;
}

/* e is the entry of the thread's call now. */
static void raw_follows(lt_raw_memo *m, lt_raw_entry *e) {
  if (m->prev) m->prev->next = e;
  m->prev = e;
}

/* What decode read for this key (the call's pointers are not kept): the
 * entry now holding it. */
static lt_raw_entry *raw_put(lt_raw_memo *m, uint64_t hash, const lt_raw_parts *k,
                             const mpp_lt_call *g) {
  lt_raw_entry *set = raw_set(m, hash), *old = &set[0];
  for (int w = 1; w < LT_RAW_WAYS; w++)
    if (set[w].last < old->last) old = &set[w];
  uint64_t *w = old->key;
  for (int i = 0; i < 5; i++) {
    size_t n = raw_part_words(i);
    if (k->p[i])
      mpp_memcpy_n(w, k->p[i], n * 8);
    else
      memset(w, 0, n * 8);
    w += n;
  }
  *w = k->p[3] != NULL;
  old->hash = hash;
  old->last = ++m->clock;
  old->g = *g;
  old->g.alpha = old->g.beta = old->g.A = old->g.B = old->g.C = NULL;
  old->g.D = NULL;
  old->hint = (mpp_lt_memo_hint){0}; /* another g */
  old->next = NULL;
  return old;
}

static bool host_visible(const void *p) {
  return mpp_host_readable(p);
}

static mpp_op *decode(mpp_op *scratch, cublasLtMatmulDesc_t desc, const void *alpha, const void *A,
                      cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
                      const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
                      cublasLtMatrixLayout_t Ddesc, cudaStream_t stream) {
  lt_raw_memo *rm = desc && Adesc && Bdesc && Ddesc ? raw_memo_get() : NULL;
  if (rm && rm->off) rm = NULL;
  const lt_raw_parts key = {{desc, Adesc, Bdesc, Cdesc, Ddesc}};
  uint64_t hash = 0;
  lt_raw_entry *seen = rm ? raw_find(rm, &key, &hash) : NULL;
  if (seen) { /* the thread's own entry: this call's pointers set in place */
    raw_follows(rm, seen);
    mpp_lt_call *s = &seen->g;
    s->alpha = alpha, s->beta = beta, s->A = A, s->B = B, s->C = C, s->D = D;
    return mpp_lt_decode_memo_hinted(scratch, s, stream, host_visible, &seen->hint);
  }
  mpp_lt_call g = {.alpha = alpha, .beta = beta, .A = A, .B = B, .C = C, .D = D};
  int32_t compute = 0, scale = 0, pm = 0, ta = 0, tb = 0;
  uint32_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  if (!desc || !desc_get(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute, sizeof compute) ||
      !desc_get(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale, sizeof scale))
    return NULL;
  desc_get(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
  if (pm >= CUBLASLT_POINTER_MODE_DEVICE_VECTOR) /* alpha a vector per batch member */
    desc_get(desc, CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, &g.alpha_vec_stride,
             sizeof g.alpha_vec_stride);
  desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
  desc_get(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
  desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  g.bias_type = -1;
  desc_get(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof g.bias);
  desc_get(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &g.bias_type, sizeof g.bias_type);
  desc_get(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &g.bias_stride, sizeof g.bias_stride);
  g.aux_type = -1;
  if (mpp_lt_aux_use(epi)) { /* the GELU aux buffer's numbers (not the ReLU forms' bit mask) */
    desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux, sizeof g.aux);
    desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &g.aux_ld, sizeof g.aux_ld);
    desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, &g.aux_stride,
             sizeof g.aux_stride);
    desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, &g.aux_type, sizeof g.aux_type);
    /* An fp8 aux is stored times AUX_SCALE and its amax written to
     * AUX_AMAX_POINTER, as D is with D_SCALE and AMAX_D (cublasLt.h). */
    desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, &g.aux_scale,
             sizeof g.aux_scale);
    if (g.aux_scale)
      desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, &g.aux_scale_mode,
               sizeof g.aux_scale_mode);
    desc_get(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, &g.aux_amax, sizeof g.aux_amax);
  }
  static const cublasLtMatmulDescAttributes_t scale_attrs[4] = {
      CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
      CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER};
  for (int i = 0; i < 4; i++)
    desc_get(desc, scale_attrs[i], &g.scale_ptr[i], sizeof g.scale_ptr[i]);
  static const cublasLtMatmulDescAttributes_t mode_attrs[4] = {
      CUBLASLT_MATMUL_DESC_A_SCALE_MODE, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
      CUBLASLT_MATMUL_DESC_C_SCALE_MODE, CUBLASLT_MATMUL_DESC_D_SCALE_MODE};
  for (int i = 0; i < 4; i++)
    if (g.scale_ptr[i]) desc_get(desc, mode_attrs[i], &g.scale_mode[i], sizeof g.scale_mode[i]);
  desc_get(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &g.amax_d, sizeof g.amax_d);
  desc_get(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &g.fast_accum, sizeof g.fast_accum);
  g.compute = compute;
  g.scale_type = scale;
  g.pointer_mode = pm;
  g.transa = ta;
  g.transb = tb;
  g.epilogue = epi;
  if (!read_layout(Adesc, &g.a) || !read_layout(Bdesc, &g.b) || !read_layout(Ddesc, &g.d))
    return NULL;
  if (!Cdesc || !read_layout(Cdesc, &g.c))
    g.c = g.d; /* C described like D when its layout is not given */
  /* g and the new entry's differ only in their data pointers: its hint holds */
  lt_raw_entry *put = rm ? raw_put(rm, hash, &key, &g) : NULL;
  if (put) raw_follows(rm, put);
  return mpp_lt_decode_memo_hinted(scratch, &g, stream, host_visible, put ? &put->hint : NULL);
}

static bool succeeded(cublasStatus_t r) {
  return r == CUBLAS_STATUS_SUCCESS;
}

MPP_MEMO_OP_HOOK(syms, cublasStatus_t, cublasLtMatmul,
                 (cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
                  const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                  cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                  cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                  const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSizeInBytes,
                  cudaStream_t stream),
                 (lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                  algo, workspace, workspaceSizeInBytes, stream),
                 CUBLAS_STATUS_NOT_INITIALIZED, succeeded, decode,
                 (computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, stream))

/* --- mpprof's own fp32 GEMMs (profiler/gpu/devshadow.c): the real functions --- */

static bool own_create(void **ret_handle) {
  cublasLtHandle_t h = NULL;
  if (MPP_REAL(syms, cublasLtCreate)(&h) != CUBLAS_STATUS_SUCCESS) return false;
  mpp_sym_pin((void *)MPP_REAL(syms, cublasLtCreate)); /* the handle lives in it */
  *ret_handle = h;
  return true;
}

static bool own_desc_set(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, int32_t v) {
  return MPP_REAL(syms, cublasLtMatmulDescSetAttribute)(d, a, &v, sizeof v) ==
         CUBLAS_STATUS_SUCCESS;
}

/* fp32 rows x cols matrices, `batch` of them `stride` elements apart; NULL on failure. */
static cublasLtMatrixLayout_t own_layout(int rows, int cols, int ld, int32_t batch,
                                         int64_t stride) {
  cublasLtMatrixLayout_t l = NULL;
  if (MPP_REAL(syms, cublasLtMatrixLayoutCreate)(&l, CUDA_R_32F, (uint64_t)rows, (uint64_t)cols,
                                                 ld) != CUBLAS_STATUS_SUCCESS)
    return NULL;
  __typeof__(&cublasLtMatrixLayoutSetAttribute) set =
      MPP_REAL(syms, cublasLtMatrixLayoutSetAttribute);
  if (set(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch) != CUBLAS_STATUS_SUCCESS ||
      set(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride) !=
          CUBLAS_STATUS_SUCCESS) {
    MPP_REAL(syms, cublasLtMatrixLayoutDestroy)(l);
    return NULL;
  }
  return l;
}

/* cublasSgemmStridedBatched's product as one matmul: compute type
 * COMPUTE_32F_PEDANTIC (no TF32, no reduced-precision reduction: what
 * CUBLAS_PEDANTIC_MATH is on a cuBLAS handle), fp32 scale, the default
 * heuristic (algo NULL) without workspace. The descriptors live for the call
 * only: shadowed calls are sampled, and a few host calls are small beside
 * the GEMM. */
static bool own_sgemm(void *handle, cudaStream_t stream, cublasOperation_t ta, cublasOperation_t tb,
                      int m, int n, int k, const float *alpha, const float *A, int lda,
                      long long sa, const float *B, int ldb, long long sb, const float *beta,
                      float *C, int ldc, long long sc, int batch) {
  cublasLtMatmulDesc_t desc = NULL;
  if (MPP_REAL(syms, cublasLtMatmulDescCreate)(&desc, CUBLAS_COMPUTE_32F_PEDANTIC, CUDA_R_32F) !=
      CUBLAS_STATUS_SUCCESS)
    return false;
  bool na = ta == CUBLAS_OP_N, nb = tb == CUBLAS_OP_N;
  cublasLtMatrixLayout_t l[3] = {own_layout(na ? m : k, na ? k : m, lda, batch, sa),
                                 own_layout(nb ? k : n, nb ? n : k, ldb, batch, sb),
                                 own_layout(m, n, ldc, batch, sc)};
  bool ok = l[0] && l[1] && l[2] && own_desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, ta) &&
            own_desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, tb) &&
            MPP_REAL(syms, cublasLtMatmul)(handle, desc, alpha, A, l[0], B, l[1], beta, C, l[2], C,
                                           l[2], NULL, NULL, 0, stream) == CUBLAS_STATUS_SUCCESS;
  for (int i = 0; i < 3; i++)
    if (l[i]) MPP_REAL(syms, cublasLtMatrixLayoutDestroy)(l[i]);
  MPP_REAL(syms, cublasLtMatmulDescDestroy)(desc);
  return ok;
}

static const mpp_devshadow_blas *own_blas(void) {
  static const mpp_devshadow_blas fns = {.create = own_create, .sgemm_strided = own_sgemm};
  bool loaded =
      MPP_REAL(syms, cublasLtMatmul) && MPP_REAL(syms, cublasLtCreate) &&
      MPP_REAL(syms, cublasLtMatmulDescCreate) && MPP_REAL(syms, cublasLtMatmulDescSetAttribute) &&
      MPP_REAL(syms, cublasLtMatmulDescDestroy) && MPP_REAL(syms, cublasLtMatrixLayoutCreate) &&
      MPP_REAL(syms, cublasLtMatrixLayoutSetAttribute) &&
      MPP_REAL(syms, cublasLtMatrixLayoutDestroy);
  return loaded ? &fns : NULL;
}

__attribute__((constructor)) static void own_blas_register(void) {
  mpp_devshadow_set_blas(MPP_DEVSHADOW_CUBLASLT, own_blas);
}
