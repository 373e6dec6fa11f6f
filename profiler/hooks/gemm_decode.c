/* cuBLAS GEMM arguments -> mpp_op (see gemm_decode.h). Column-major: op(A) is
 * m x k, op(B) k x n, C and D m x n; A as stored is m x k when TRANSA is N and
 * k x m otherwise. C is an input role only when beta != 0 (cuBLAS does not
 * read C otherwise), A and B only when alpha may be non-zero (with alpha == 0
 * BLAS reads neither); D is the output written over C. */
#include "gemm_decode.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/shadow_core.h"
#include "conv_decode.h"
#include "cuda_types.h"
#include "profiler/mpp.h"
#include "profiler/hostmem.h"

/* ptr_align of a pointer-array batch: its matrices' pointers, when the array
 * is host-readable (in device memory it is read only by the device scan; the
 * alignment then stays unknown). At most MPP_MAX_PTRS entries, like the scan. */
void mpp_op_note_ptr_array(mpp_op *op, const void *const *arr, int64_t n,
                           bool (*host_visible)(const void *p)) {
  if (!arr || n <= 0 || !host_visible || !host_visible(arr)) return;
  if (n > MPP_MAX_PTRS) n = MPP_MAX_PTRS;
  for (int64_t i = 0; i < n; i++)
    mpp_op_note_ptr(op, arr[i]);
}

char mpp_cublas_op_char(int op) {
  switch (op) {
  case 0:
    return 'N';
  case 1:
    return 'T';
  case 2:
    return 'C';
  default:
    return '?';
  }
}

static void set_view(mpp_role *r, int cuda_type, const void *p, const void *const *arr,
                     int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  r->view.dtype = mpp_cuda_dtype(cuda_type);
  r->view.data = p;
  r->ptr_array = arr;
  r->view.rows = rows > 0 ? (uint64_t)rows : 0;
  r->view.cols = cols > 0 ? (uint64_t)cols : 0;
  r->view.ld = ld > 0 ? (uint64_t)ld : 0;
  r->view.batch = batch > 0 ? (uint64_t)batch : 1;
  r->view.batch_stride = arr ? 0 : stride;
  if (r->view.dtype == MP_DTYPE_INVALID)
    r->unscannable = MPP_NS_DTYPE;
  else if (rows <= 0 || cols <= 0)
    r->present = false; /* empty operand: nothing to read */
}

/* Is C read? beta == 0 means no (C may even hold garbage). Unknown (a device
 * scalar we cannot read) counts as not read: scanning garbage would mislead. */
static bool beta_nonzero(const mpp_gemm_call *g, const mpp_gemm_ctx *ctx) {
  if (!g->beta) return false;
  if (ctx->pointer_mode != 0 && !(ctx->host_visible && ctx->host_visible(g->beta))) return false;
  return mpp_scalar_nonzero(g->beta, g->scale_type) == 1;
}

/* alpha's value for shadow execution: NAN when it cannot be read here. */
static double alpha_value(const void *alpha, int scale_type, bool readable) {
  double v;
  if (!alpha || !readable || mpp_scalar_value(alpha, scale_type, &v) != 0) return NAN;
  return v;
}

/* What alpha is known to be: 1 non-zero, 0 zero, -1 not known (a device
 * scalar not readable here, a scale type without a reading). With
 * alpha == 0 BLAS references neither A nor B (C = beta C: the reference
 * DGEMM's quick return, "if alpha is zero, A and B need not be set"): their
 * values, NaN or garbage, reach nothing, and a program may leave NULL in a
 * pointer array. Unknown: A and B may be read. */
static int alpha_known(const mpp_gemm_call *g, const mpp_gemm_ctx *ctx) {
  if (!g->alpha) return -1; /* cuBLAS refuses the call */
  if (ctx->pointer_mode != 0 && !(ctx->host_visible && ctx->host_visible(g->alpha))) return -1;
  return mpp_scalar_nonzero(g->alpha, g->scale_type);
}

/* Everything the decoding reads through alpha and beta: with these, the op
 * is a function of the call's other arguments and the context alone (the
 * memo below relies on it). */
typedef struct scalars {
  double alpha;       /* NAN: not readable here */
  bool alpha_nonzero; /* known non-zero: a pointer array's entries are followed */
  bool alpha_zero;    /* known zero: A and B are not read at all */
  bool beta_nonzero;
} scalars;

static scalars read_scalars(const mpp_gemm_call *g, const mpp_gemm_ctx *ctx) {
  bool readable = ctx->pointer_mode == 0 || (ctx->host_visible && ctx->host_visible(g->alpha));
  int a = alpha_known(g, ctx);
  return (scalars){.alpha = alpha_value(g->alpha, g->scale_type, readable),
                   .alpha_nonzero = a == 1,
                   .alpha_zero = a == 0,
                   .beta_nonzero = beta_nonzero(g, ctx)};
}

/* The call's own pointers in an op decoded for other ones (a memo hit): the
 * roles' matrices and the pointer alignment. Pointer-array calls are never
 * memoised: their roles and alignment depend on the arrays' contents. */
static inline void set_pointers(mpp_op *op, const mpp_gemm_call *g) {
  op->roles[0].view.data = g->A;
  op->roles[1].view.data = g->B;
  op->roles[2].view.data = g->C;
  op->roles[3].view.data = g->C;
  op->ptr_align = 0;
  mpp_op_note_ptr(op, g->A);
  mpp_op_note_ptr(op, g->B);
  mpp_op_note_ptr(op, g->C);
}

static void decode_with(mpp_op *op, const mpp_gemm_call *g, const mpp_gemm_ctx *ctx,
                        const scalars *sc) {
  mpp_op_init(op, g->api, MPP_OP_GEMM);
  op->m = g->m;
  op->n = g->n;
  op->k = g->k;
  op->batch = g->batch > 0 ? g->batch : 1;
  op->lda = g->lda;
  op->ldb = g->ldb;
  op->ldc = g->ldc;
  op->transa = mpp_cublas_op_char(g->transa);
  op->transb = mpp_cublas_op_char(g->transb);
  mpp_op_type(op, "A", mpp_cuda_dtype_name(g->Atype));
  mpp_op_type(op, "B", mpp_cuda_dtype_name(g->Btype));
  mpp_op_type(op, "C", mpp_cuda_dtype_name(g->Ctype));
  mpp_op_type(op, "D", mpp_cuda_dtype_name(g->Ctype));
  op->compute_type = mpp_cublas_compute_name(g->compute);
  op->scale_type = mpp_cuda_dtype_name(g->scale_type);
  op->math_mode = ctx->math_mode;
  op->stream = ctx->stream;
  op->alpha = sc->alpha;

  bool an = g->transa == 0, bn = g->transb == 0;
  mpp_role *a = mpp_op_role(op, "A", true);
  set_view(a, g->Atype, g->A, g->Aarr, an ? g->m : g->k, an ? g->k : g->m, g->lda, op->batch,
           g->strideA);
  mpp_role *b = mpp_op_role(op, "B", true);
  set_view(b, g->Btype, g->B, g->Barr, bn ? g->k : g->n, bn ? g->n : g->k, g->ldb, op->batch,
           g->strideB);
  mpp_role *c = mpp_op_role(op, "C", true);
  set_view(c, g->Ctype, g->C, g->Carr, g->m, g->n, g->ldc, op->batch, g->strideC);
  if (!sc->beta_nonzero) c->present = false;
  /* alpha == 0: A and B are not read. A pointer array is followed only when
   * alpha is known non-zero: the device scan reads its entries on the GPU,
   * where the host cannot check them, and must follow them only when cuBLAS
   * itself will (a NULL-filled array with alpha = 0 is legal). */
  if (sc->alpha_zero || (!sc->alpha_nonzero && g->Aarr)) a->present = false;
  if (sc->alpha_zero || (!sc->alpha_nonzero && g->Barr)) b->present = false;
  mpp_role *d = mpp_op_role(op, "D", false);
  set_view(d, g->Ctype, g->C, g->Carr, g->m, g->n, g->ldc, op->batch, g->strideC);
  /* An operation code cuBLAS rejects (it then reads nothing): the operand's
   * geometry is unknown, and the input scan runs before the call. */
  if (op->transa == '?') a->unscannable = MPP_NS_LAYOUT;
  if (op->transb == '?') b->unscannable = MPP_NS_LAYOUT;
  /* Strided batches with a zero stride share one matrix: count it once. */
  for (int i = 0; i < op->nroles; i++) {
    mpp_role *r = &op->roles[i];
    if (!r->ptr_array && r->view.batch_stride == 0) r->view.batch = 1;
    /* batchCount 0: cuBLAS returns at once and reads nothing (a pointer
     * array may be empty); negative: it rejects the call. Read nothing. */
    if (g->batch <= 0) r->present = false;
  }

  set_pointers(op, g);
  /* Entries are read only where cuBLAS reads them (a NULL-filled array with
   * alpha = 0 is legal, and NULL is skipped anyway). */
  for (int i = 0; i < op->nroles; i++)
    if (op->roles[i].ptr_array && op->roles[i].present)
      mpp_op_note_ptr_array(op, op->roles[i].ptr_array, g->batch, mpp_host_readable);
}

void mpp_gemm_decode(mpp_op *op, const mpp_gemm_call *g, const mpp_gemm_ctx *ctx) {
  scalars sc = read_scalars(g, ctx);
  decode_with(op, g, ctx, &sc);
}

/* --- the per-thread memo of decoded calls ---
 * A training loop calls the same GEMMs step after step. The key is every
 * input of decode_with but the matrix pointers (which set_pointers puts in):
 * the call's other arguments, the context, and what alpha and beta said.
 * Each entry also keeps its op's site (mpp_site_memo, filled by call.c). */

typedef struct gemm_key { /* 8-byte fields only: compared with memcmp, no padding */
  const char *api;
  void *stream;
  bool (*host_visible)(const void *p);
  int64_t m, n, k, lda, ldb, ldc, strideA, strideB, strideC, batch;
  int64_t transa, transb, Atype, Btype, Ctype, compute, scale_type, math_mode, pointer_mode;
  uint64_t alpha_bits;
  int64_t flags; /* alpha_nonzero, beta_nonzero, alpha_zero */
} gemm_key;
_Static_assert(sizeof(gemm_key) == 24 * 8, "gemm_key has padding");

/* Eight-way sets; a key may live in either of two sets chosen by its hash
 * (two-choice), an entry's hash compared before its key, and a miss replaces
 * the way of the two sets used least recently: the GEMMs a model calls in
 * turn (a transformer layer's forward and backward: a dozen shapes per width)
 * keep their entries, and so their ops' ids, which key call.c's site cache.
 * With one set per key, 24 keys in turn were evicted in about 1 model of 80
 * (nine keys in a set); with two, none of 20,000 simulated models. */
#define MEMO_SETS 8
#define MEMO_WAYS 8
#define MEMO_SLOTS (MEMO_SETS * MEMO_WAYS)

/* cublasLtMatmul's memo (mpp_lt_decode_memo), sets and replacement alike;
 * its key is what the wrapper read from the descriptors, as 8-byte words. */
#define LT_SETS 4
#define LT_SLOTS (LT_SETS * MEMO_WAYS)
#define LT_KEY_WORDS (19 + 4 * 8)
/* Legacy cuDNN convolutions' memo (mpp_conv_decode_memo_key), sets and
 * replacement alike; its key is an mpp_conv_key. 128 entries: a ResNet-50
 * trains with 72 keys (24 shapes, three kinds each), called in turn
 * (a_resnets_convolutions_in_turn_keep_their_entries); about 230 KB a
 * thread, its pages touched as entries fill. */
#define CONV_SETS 16
#define CONV_SLOTS (CONV_SETS * MEMO_WAYS)
_Static_assert(sizeof(mpp_conv_key) == 3 * sizeof(void *) + sizeof(int32_t) +
                                           3 * sizeof(mpp_conv_key_tensor) + 14 * sizeof(int32_t),
               "a conv key has no padding: it is compared as bytes");
/* memo_slot picks sets by a mask: no division on every call. */
_Static_assert((MEMO_SETS & (MEMO_SETS - 1)) == 0 && (LT_SETS & (LT_SETS - 1)) == 0 &&
                   (CONV_SETS & (CONV_SETS - 1)) == 0,
               "memo sets are a power of two");

/* A slot's tag: its key's hash and when it was used last. */
typedef struct memo_tag {
  uint64_t hash;
  uint64_t last; /* the memo's clock at the slot's last use; 0: never used */
} memo_tag;

/* One block per thread that calls the hooked GEMMs and convolutions: the
 * GEMM entries, cublasLtMatmul's and the legacy cuDNN convolutions'. */
typedef struct gemm_memo {
  uint64_t clock; /* uses so far, both memos */
  memo_tag tag[MEMO_SLOTS];
  struct {
    gemm_key key;
    mpp_op op;
    mpp_site_memo site;
  } slot[MEMO_SLOTS];
  memo_tag lt_tag[LT_SLOTS];
  struct {
    uint64_t key[LT_KEY_WORDS];
    uint64_t fill; /* the clock when the key was put (mpp_lt_memo_hint) */
    mpp_op op;
    mpp_site_memo site;
  } lt[LT_SLOTS];
  memo_tag conv_tag[CONV_SLOTS];
  struct {
    mpp_conv_key key;
    mpp_op op;
    mpp_site_memo site;
  } conv[CONV_SLOTS];
} gemm_memo;

static __thread MPP_TLS gemm_memo *memo;

/* The block is mapped (mpp_map_zeroed): on the program's heap it fenced the
 * program's chunks from the top, so that their frees stopped merging into it
 * and consolidating, and the cublasLtMatmul benchmark's program ran faster
 * under mpprof than without it. */
static void memo_free(void *p) {
  mpp_unmap(p, sizeof(gemm_memo));
  memo = NULL;
}

static mpp_thread_key memo_key = MPP_THREAD_KEY(memo_free);

/* Each memo's clock starts 2^40 uses past the one made before it: an lt
 * entry's fill is then a stamp no other fill in the process has, even in a
 * memo made again at a freed one's address (mpp_lt_memo_hint). */
static _Atomic uint64_t memo_epochs;

static gemm_memo *memo_get(void) {
  if (!memo) {
    memo = mpp_map_zeroed(sizeof *memo);
    if (memo) {
      memo->clock = (atomic_fetch_add_explicit(&memo_epochs, 1, memory_order_relaxed) + 1) << 40;
      mpp_thread_key_set(&memo_key, memo);
    }
  }
  return memo;
}

/* The slot for a key with this hash among tags (sets of MEMO_WAYS; sets a
 * power of two): a way of the key's two sets holding it (same), *hit; else
 * the way of the two used least recently (or never), tagged with hash, for
 * the caller to fill. */
static unsigned memo_slot(memo_tag *tags, unsigned sets, uint64_t hash,
                          bool (*same)(unsigned slot, const void *key), const void *key,
                          bool *hit) {
  unsigned set[2] = {(unsigned)hash & (sets - 1), (unsigned)(hash >> 32) & (sets - 1)};
  if (set[1] == set[0]) set[1] = (set[0] + 1) & (sets - 1);
  unsigned old = set[0] * MEMO_WAYS;
  for (int i = 0; i < 2; i++)
    for (unsigned w = set[i] * MEMO_WAYS; w < (set[i] + 1) * MEMO_WAYS; w++) {
      if (tags[w].last && tags[w].hash == hash && same(w, key)) {
        tags[w].last = ++memo->clock;
        *hit = true;
        return w;
      }
      if (tags[w].last < tags[old].last) old = w;
    }
  tags[old] = (memo_tag){.hash = hash, .last = ++memo->clock};
  *hit = false;
  return old;
}

/* A memo key's hash from its few telling fields combined into h: every bit
 * of h reaches every bit of the result (shapes are multiples of large powers
 * of two, whose products leave the low bits of h alike). Its halves modulo
 * the sets are the key's two sets; the ways compare it before the key. No
 * address enters it (the api name's moves with each run's layout): a
 * program's keys fall in the same sets every run. */
static uint64_t mix(uint64_t h) {
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  h *= 0x94d049bb133111ebull;
  return h ^ h >> 32;
}

static uint64_t key_hash(const gemm_key *k) {
  return mix((uint64_t)k->m * 0x9e3779b97f4a7c15ull ^ (uint64_t)k->n * 0xc2b2ae3d27d4eb4full ^
             (uint64_t)k->k * 0x165667b19e3779f9ull ^
             (uint64_t)(k->transa << 2 | k->transb << 4 | k->Atype << 8));
}

static bool gemm_same(unsigned slot, const void *key) {
  return memcmp(&memo->slot[slot].key, key, sizeof(gemm_key)) == 0;
}

mpp_op *mpp_gemm_decode_memo(mpp_op *scratch, const mpp_gemm_call *g, const mpp_gemm_ctx *ctx) {
  scalars sc = read_scalars(g, ctx);
  gemm_memo *mm = g->Aarr || g->Barr || g->Carr ? NULL : memo_get();
  if (!mm) {
    decode_with(scratch, g, ctx, &sc);
    return scratch;
  }
  gemm_key k;
  memset(&k, 0, sizeof k);
  k.api = g->api;
  k.stream = ctx->stream;
  k.host_visible = ctx->host_visible;
  k.m = g->m;
  k.n = g->n;
  k.k = g->k;
  k.lda = g->lda;
  k.ldb = g->ldb;
  k.ldc = g->ldc;
  k.strideA = g->strideA;
  k.strideB = g->strideB;
  k.strideC = g->strideC;
  k.batch = g->batch;
  k.transa = g->transa;
  k.transb = g->transb;
  k.Atype = g->Atype;
  k.Btype = g->Btype;
  k.Ctype = g->Ctype;
  k.compute = g->compute;
  k.scale_type = g->scale_type;
  k.math_mode = ctx->math_mode;
  k.pointer_mode = ctx->pointer_mode;
  memcpy(&k.alpha_bits, &sc.alpha, sizeof k.alpha_bits);
  k.flags = sc.alpha_nonzero | sc.beta_nonzero << 1 | sc.alpha_zero << 2;
  bool hit;
  __typeof__(mm->slot[0]) *e =
      &mm->slot[memo_slot(mm->tag, MEMO_SETS, key_hash(&k), gemm_same, &k, &hit)];
  if (!hit) {
    decode_with(&e->op, g, ctx, &sc);
    e->key = k;
    e->site = (mpp_site_memo){.op = mpp_site_memo_op()}; /* another op: its sites not known yet */
  }
  /* The entry's op is this call's: the wrapper records it (call.c sets its
   * per-call fields) and no other decode runs on this thread until the call
   * returns (the depth guard). */
  set_pointers(&e->op, g);
  e->op.site_memo = &e->site;
  return &e->op;
}
/* --- cublasLtMatmul --- */

const char *mpp_lt_epilogue_name(uint32_t e) {
  static const struct {
    uint32_t v;
    const char *name;
  } names[] = {
      {1, "DEFAULT"},    {2, "RELU"},          {130, "RELU_AUX"},
      {4, "BIAS"},       {6, "RELU_BIAS"},     {134, "RELU_AUX_BIAS"},
      {136, "DRELU"},    {152, "DRELU_BGRAD"}, {32, "GELU"},
      {160, "GELU_AUX"}, {36, "GELU_BIAS"},    {164, "GELU_AUX_BIAS"},
      {192, "DGELU"},    {208, "DGELU_BGRAD"}, {256, "BGRADA"},
      {512, "BGRADB"},
  };
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (names[i].v == e) return names[i].name;
  return "UNKNOWN";
}

static bool is_fp8(mp_dtype d) {
  return d == MP_FP8_E4M3 || d == MP_FP8_E5M2;
}

/* The cudaDataType of the bias (or bias gradient) vector: BIAS_DATA_TYPE,
 * by default D's (cublasLt.h) with the header's exceptions: IMMA kernels
 * (32I compute, int8 C) take the scale type's; FP8 kernels (fp8 A and B)
 * take bf16 for an fp32 D and C's type (bf16 or fp16) for an fp8 D (the
 * cuBLAS documentation's cublasLtMatmul FP8 table: D fp32 -> bias bf16;
 * simcuda alike). */
static int lt_bias_type(const mpp_lt_call *g) {
  if (g->bias_type >= 0) return g->bias_type;
  if ((g->compute == 72 || g->compute == 73) && g->c.type == 3 /* CUDA_R_8I */)
    return g->scale_type;
  if (is_fp8(mpp_cuda_dtype(g->a.type))) {
    if (g->d.type == 0 /* CUDA_R_32F */) return 14; /* CUDA_R_16BF */
    if (is_fp8(mpp_cuda_dtype(g->d.type))) return g->c.type;
  }
  return g->d.type;
}

/* How the epilogue uses the bias pointer: 1 reads a bias (BIAS, RELU_BIAS,
 * GELU_BIAS and their AUX forms), 2 writes a bias gradient of D's rows
 * (DRELU_BGRAD, DGELU_BGRAD, BGRADA), 3 one of D's columns (BGRADB), 0
 * neither. */
static int lt_bias_use(uint32_t epilogue) {
  switch (epilogue) {
  case 4:
  case 6:
  case 134:
  case 36:
  case 164:
    return 1;
  case 152:
  case 208:
  case 256:
    return 2;
  case 512:
    return 3;
  default:
    return 0;
  }
}

int mpp_lt_aux_use(uint32_t epilogue) {
  switch (epilogue) {
  case 160: /* GELU_AUX */
  case 164: /* GELU_AUX_BIAS */
    return 1;
  case 192: /* DGELU */
  case 208: /* DGELU_BGRAD */
    return 2;
  default:
    return 0;
  }
}

/* The aux roles' names, one object each: set_lt_pointers knows a role by
 * its name's address. */
static const char role_aux[] = MP_ROLE_AUX, role_aux_in[] = MP_ROLE_AUX_IN;

/* The GELU aux buffer as a role (mpp_lt_aux_use): m x n like D, column-major
 * AUX_LD apart (the header's "leading dimension in elements"), per batch
 * member AUX_BATCH_STRIDE apart (0: one shared), of AUX_DATA_TYPE, by
 * default D's (cublasLt.h). Its values are the stored ones (an fp8 aux is
 * the GELU input times AUX_SCALE, saturated as D is). */
static void lt_aux_role(mpp_op *op, const mpp_lt_call *g) {
  int use = mpp_lt_aux_use(g->epilogue);
  if (!use || !g->aux) return;
  mpp_role *r = mpp_op_role(op, use == 1 ? role_aux : role_aux_in, use == 2);
  if (!r) return;
  r->view.dtype = mpp_cuda_dtype(g->aux_type >= 0 ? g->aux_type : g->d.type);
  r->view.data = g->aux;
  r->view.rows = g->d.rows;
  r->view.cols = g->d.cols;
  r->view.ld = g->aux_ld > 0 ? (uint64_t)g->aux_ld : 0;
  r->view.batch = op->batch > 1 && g->aux_stride != 0 ? (uint64_t)op->batch : 1;
  r->view.batch_stride = r->view.batch > 1 ? g->aux_stride : 0;
  r->saturates = use == 1 && is_fp8(r->view.dtype);
  if (r->view.dtype == MP_DTYPE_INVALID)
    r->unscannable = MPP_NS_DTYPE;
  else if (g->d.order != 0 || r->view.ld < r->view.rows)
    r->unscannable = MPP_NS_LAYOUT; /* a row-major D's aux: not documented */
  if (r->view.rows == 0 || r->view.cols == 0) r->present = false;
}

/* How shadow execution models an epilogue's effect on D: false when it does
 * not (the backward DRELU/DGELU ones read an aux buffer; unknown values). */
static bool lt_shadow_epilogue(mpp_op *op, const mpp_lt_call *g) {
  bool bias = false;
  switch (g->epilogue) {
  case 1:   /* DEFAULT */
  case 256: /* BGRADA, BGRADB: D is the product; the bias gradient is another output */
  case 512:
    op->shadow_epi = MP_SH_EPI_NONE;
    break;
  case 2: /* RELU, RELU_AUX */
  case 130:
    op->shadow_epi = MP_SH_EPI_RELU;
    break;
  case 6: /* RELU_BIAS, RELU_AUX_BIAS */
  case 134:
    op->shadow_epi = MP_SH_EPI_RELU;
    bias = true;
    break;
  case 32: /* GELU, GELU_AUX */
  case 160:
    op->shadow_epi = MP_SH_EPI_GELU;
    break;
  case 36: /* GELU_BIAS, GELU_AUX_BIAS */
  case 164:
    op->shadow_epi = MP_SH_EPI_GELU;
    bias = true;
    break;
  case 4: /* BIAS */
    op->shadow_epi = MP_SH_EPI_NONE;
    bias = true;
    break;
  default:
    return false;
  }
  if (!bias) return true;
  if (!g->bias) return false; /* cuBLASLt would refuse the call */
  op->shadow_bias = g->bias;
  op->shadow_bias_dtype = mpp_cuda_dtype(lt_bias_type(g));
  op->shadow_bias_stride = g->d.batch > 1 ? g->bias_stride : 0;
  return op->shadow_bias_dtype != MP_DTYPE_INVALID;
}

#define LT_BATCH_MODE_POINTER_ARRAY 1u /* cublasLtBatchMode_t */

static void lt_view(mpp_role *r, const mpp_lt_layout *l, const void *p) {
  r->view.dtype = mpp_cuda_dtype(l->type);
  /* A row-major matrix is the column-major view of its transpose: same elements. */
  bool row = l->order == 1;
  r->view.rows = row ? l->cols : l->rows;
  r->view.cols = row ? l->rows : l->cols;
  r->view.ld = l->ld > 0 ? (uint64_t)l->ld : 0;
  r->view.batch = l->batch > 1 ? (uint64_t)l->batch : 1;
  if (l->batch_mode == LT_BATCH_MODE_POINTER_ARRAY) {
    /* p is an array of batch matrix pointers (one per batch member, even a
     * batch of one), each matrix described by the layout. */
    r->ptr_array = p;
    r->view.data = NULL;
    r->view.batch_stride = 0;
  } else {
    r->view.data = p;
    r->view.batch_stride = l->batch_stride;
    if (r->view.batch > 1 && l->batch_stride == 0) r->view.batch = 1; /* broadcast: one matrix */
  }
  if (r->view.dtype == MP_DTYPE_INVALID)
    r->unscannable = MPP_NS_DTYPE;
  else if (l->order != 0 && l->order != 1)
    r->unscannable = MPP_NS_LAYOUT;
  else if (l->batch_mode > LT_BATCH_MODE_POINTER_ARRAY)
    r->unscannable = MPP_NS_LAYOUT; /* a batch mode this decoder does not know */
  if (l->rows == 0 || l->cols == 0) r->present = false;
}

/* Can alpha be read on the host (shadow execution's scalar alpha)? Only
 * a scalar: in the DEVICE_VECTOR modes (2, 3 and 4: ALPHA_DEVICE_VECTOR_
 * BETA_HOST too, whose beta alone is on the host) alpha is a device array
 * of m values (cublasLt.h), never read here. */
static bool lt_alpha_host(const mpp_lt_call *g, bool (*host_visible)(const void *)) {
  return g->pointer_mode == 0 ||
         (g->pointer_mode == 1 && host_visible && g->alpha && host_visible(g->alpha));
}

static size_t scale_size(int t) {
  switch (t) {
  case 0:  /* CUDA_R_32F */
  case 10: /* CUDA_R_32I */
    return 4;
  case 1: /* CUDA_R_64F */
    return 8;
  case 2:  /* CUDA_R_16F */
  case 14: /* CUDA_R_16BF */
    return 2;
  default:
    return 0;
  }
}

/* What a vector of scalars (the DEVICE_VECTOR pointer modes: one value per
 * row of D, cublasLt.h; per batch member `stride` values apart when a
 * stride is given) is known to be: 1 some value non-zero, 0 all zero, -1 not
 * known (not readable here: device memory is never read on the host). A row
 * whose value is 0 leaves its row of op(A) (alpha) or of C (beta) unread:
 * the whole operand counts as read when any row's value is non-zero. */
static int lt_vector_known(const void *v, int64_t stride, const mpp_lt_call *g,
                           bool (*host_visible)(const void *)) {
  size_t es = scale_size(g->scale_type);
  if (!v || !es || !host_visible || !host_visible(v)) return -1;
  int64_t nb = stride > 0 && g->d.batch > 1 ? g->d.batch : 1;
  for (int64_t b = 0; b < nb; b++)
    for (uint64_t i = 0; i < g->d.rows; i++) {
      int r =
          mpp_scalar_nonzero((const char *)v + ((uint64_t)(b * stride) + i) * es, g->scale_type);
      if (r != 0) return r;
    }
  return 0;
}

/* What beta is known to be (1 non-zero, 0 zero, -1 not known) in the call's
 * pointer mode: a host scalar (HOST, ALPHA_DEVICE_VECTOR_BETA_HOST), zero
 * (ALPHA_DEVICE_VECTOR_BETA_ZERO), a device scalar or (DEVICE_VECTOR) a
 * device vector, read only where host-readable. */
static int lt_beta_known(const mpp_lt_call *g, bool (*host_visible)(const void *)) {
  if (!g->beta && g->pointer_mode != 3) return -1;
  switch (g->pointer_mode) {
  case 0: /* HOST */
  case 4: /* ALPHA_DEVICE_VECTOR_BETA_HOST */
    return mpp_scalar_nonzero(g->beta, g->scale_type);
  case 3: /* ALPHA_DEVICE_VECTOR_BETA_ZERO */
    return 0;
  case 1: /* DEVICE */
    if (!host_visible || !host_visible(g->beta)) return -1;
    return mpp_scalar_nonzero(g->beta, g->scale_type);
  case 2: /* DEVICE_VECTOR */
    return lt_vector_known(g->beta, 0, g, host_visible);
  default:
    return -1;
  }
}

/* Is C read? Only with beta != 0: unknown (a device scalar or vector not
 * readable here) counts as not read, as for cuBLAS (beta_nonzero above). */
static bool lt_beta_nonzero(const mpp_lt_call *g, bool (*host_visible)(const void *)) {
  return lt_beta_known(g, host_visible) == 1;
}

/* What alpha is known to be (1 non-zero, 0 zero, -1 not known; see
 * alpha_known above): a host or device scalar, or in the DEVICE_VECTOR
 * modes (2, 3, 4) a vector of m values per batch member,
 * ALPHA_VECTOR_BATCH_STRIDE apart. */
static int lt_alpha_known(const mpp_lt_call *g, bool (*host_visible)(const void *)) {
  if (!g->alpha) return -1;
  switch (g->pointer_mode) {
  case 0:
    return mpp_scalar_nonzero(g->alpha, g->scale_type);
  case 1:
    if (!host_visible || !host_visible(g->alpha)) return -1;
    return mpp_scalar_nonzero(g->alpha, g->scale_type);
  case 2:
  case 3:
  case 4:
    return lt_vector_known(g->alpha, g->alpha_vec_stride, g, host_visible);
  default:
    return -1;
  }
}

/* A scale pointer's value: a scalar scale is one value of the compute type
 * (fp32 for fp8 GEMMs), read on the host path into *ret_value, or (device
 * memory) left in *ret_ptr for the device scan after the call (call.c);
 * block and vector scale arrays are not read. Not read here: *ret_unread. */
static void lt_scale_value(const mpp_lt_call *g, const void *ptr, int32_t mode,
                           bool (*host_visible)(const void *p), double *ret_value, bool *ret_unread,
                           const void **ret_ptr) {
  bool scalar = mode == 0 && g->scale_type == 0 /* CUDA_R_32F */;
  if (scalar && host_visible && host_visible(ptr)) {
    *ret_value = *(const float *)ptr;
    return;
  }
  *ret_unread = true;
  if (scalar) *ret_ptr = ptr;
}

/* The fp8 scales shadow execution applies (op->shadow_scale, and
 * op->shadow_blocks for A's and B's block scales): cuBLASLt multiplies fp8
 * A and B by their scale (or each block by its own) and stores an fp8 D
 * times its scale; a scale pointer elsewhere is not applied (simcuda's
 * reading; the real library refuses the call). False where one that
 * applies is neither one fp32 scalar nor a block mode with a known layout
 * (outer-vector scales, NVFP4, a block-scaled D: not modelled). */
static bool lt_shadow_scales(mpp_op *op, const mpp_lt_call *g) {
  bool fp8_ab = is_fp8(mpp_cuda_dtype(g->a.type)), fp8_d = is_fp8(mpp_cuda_dtype(g->d.type));
  for (int i = 0; i < 4; i++) {
    op->shadow_scale[i] = NULL;
    if (i < 2) op->shadow_blocks[i] = NULL, op->shadow_block_mode[i] = 0;
    bool applies = i == 3 ? fp8_d : i < 2 && fp8_ab;
    if (!g->scale_ptr[i] || !applies) continue;
    if (g->scale_mode[i] != 0 && i < 2 && mp_sh_blocks_k(g->scale_mode[i])) {
      op->shadow_blocks[i] = g->scale_ptr[i]; /* its layout: shadow_core.h */
      op->shadow_block_mode[i] = g->scale_mode[i];
      continue;
    }
    if (g->scale_mode[i] != 0 || g->scale_type != 0 /* CUDA_R_32F */) return false;
    op->shadow_scale[i] = (const float *)g->scale_ptr[i];
  }
  return true;
}

void mpp_lt_decode(mpp_op *op, const mpp_lt_call *g, void *stream,
                   bool (*host_visible)(const void *p)) {
  mpp_op_init(op, "cublasLtMatmul", MPP_OP_GEMM);
  op->m = (int64_t)g->d.rows;
  op->n = (int64_t)g->d.cols;
  op->k = (int64_t)(g->transa == 0 ? g->a.cols : g->a.rows);
  op->batch = g->d.batch > 1 ? g->d.batch : 1;
  op->lda = g->a.ld;
  op->ldb = g->b.ld;
  op->ldc = g->c.ld;
  op->ldd = g->d.ld;
  op->transa = mpp_cublas_op_char(g->transa);
  op->transb = mpp_cublas_op_char(g->transb);
  mpp_op_type(op, "A", mpp_cuda_dtype_name(g->a.type));
  mpp_op_type(op, "B", mpp_cuda_dtype_name(g->b.type));
  mpp_op_type(op, "C", mpp_cuda_dtype_name(g->c.type));
  mpp_op_type(op, "D", mpp_cuda_dtype_name(g->d.type));
  op->compute_type = mpp_cublas_compute_name(g->compute);
  op->scale_type = mpp_cuda_dtype_name(g->scale_type);
  op->epilogue = mpp_lt_epilogue_name(g->epilogue);
  static const uint8_t bits[4] = {MPP_FP8_A, MPP_FP8_B, MPP_FP8_C, MPP_FP8_D};
  for (int i = 0; i < 4; i++)
    if (g->scale_ptr[i]) op->fp8_scales |= bits[i];
  if (g->amax_d) op->fp8_scales |= MPP_FP8_AMAX_D;
  op->fast_accum = g->fast_accum != 0;
  for (int i = 0; i < 4; i++)
    if (g->scale_ptr[i])
      lt_scale_value(g, g->scale_ptr[i], g->scale_mode[i], host_visible, &op->fp8_scale[i],
                     &op->fp8_scale_unread[i], &op->fp8_scale_ptr[i]);
  op->amax_d_ptr = g->amax_d;
  /* The GELU aux a GELU_AUX* epilogue writes: its scale and amax as D's. */
  if (mpp_lt_aux_use(g->epilogue) == 1 && g->aux) {
    if (g->aux_scale) {
      op->fp8_scales |= MPP_FP8_AUX;
      lt_scale_value(g, g->aux_scale, g->aux_scale_mode, host_visible, &op->aux_scale,
                     &op->aux_scale_unread, &op->aux_scale_ptr);
    }
    if (g->aux_amax) op->fp8_scales |= MPP_FP8_AMAX_AUX;
    op->amax_aux_ptr = g->aux_amax;
  }
  op->stream = stream;
  /* Shadow execution reads column-major A and B with scalar alpha and, for
   * fp8 operands and output, scalar scales (lt_shadow_scales). */
  op->alpha = alpha_value(g->alpha, g->scale_type, lt_alpha_host(g, host_visible));
  op->shadow_unsupported =
      g->a.order != 0 || g->b.order != 0 || !lt_shadow_scales(op, g) || !lt_shadow_epilogue(op, g);

  mpp_role *a = mpp_op_role(op, "A", true);
  lt_view(a, &g->a, g->A);
  mpp_role *b = mpp_op_role(op, "B", true);
  lt_view(b, &g->b, g->B);
  mpp_role *c = mpp_op_role(op, "C", true);
  lt_view(c, &g->c, g->C);
  if (!g->C || !lt_beta_nonzero(g, host_visible)) c->present = false;
  /* With alpha == 0 A and B are not read (pointer arrays may hold NULLs):
   * arrays are followed only when alpha is known non-zero (decode_with). */
  int ak = lt_alpha_known(g, host_visible);
  if (ak == 0 || (ak != 1 && a->ptr_array)) a->present = false;
  if (ak == 0 || (ak != 1 && b->ptr_array)) b->present = false;
  mpp_role *d = mpp_op_role(op, "D", false);
  lt_view(d, &g->d, g->D);
  /* cuBLASLt converts an fp8 D with saturation (values beyond the format's
   * max are stored as +-max): those are counted as saturated (call.c). */
  d->saturates = is_fp8(d->view.dtype);
  /* The epilogue's bias: a vector the library reads (an input, D = ... +
   * bias: its NaN is not the product's), or the bias gradient it writes;
   * one per batch member BIAS_BATCH_STRIDE apart (0: one shared). */
  int use = lt_bias_use(g->epilogue);
  if (use && g->bias) {
    mpp_role *r = mpp_op_role(op, use == 1 ? "bias" : "dbias", use == 1);
    if (r) {
      int bt = lt_bias_type(g);
      uint64_t len = use == 3 ? g->d.cols : g->d.rows;
      r->view.dtype = mpp_cuda_dtype(bt);
      r->view.data = g->bias;
      r->view.rows = len;
      r->view.cols = 1;
      r->view.ld = len;
      r->view.batch = op->batch > 1 && g->bias_stride != 0 ? (uint64_t)op->batch : 1;
      r->view.batch_stride = r->view.batch > 1 ? g->bias_stride : 0;
      if (r->view.dtype == MP_DTYPE_INVALID) r->unscannable = MPP_NS_DTYPE;
      if (len == 0) r->present = false;
    }
  }
  lt_aux_role(op, g);

  for (int i = 0; i < op->nroles && i < 4; i++) { /* the matrices' alignment, not the bias's */
    const mpp_role *r = &op->roles[i];
    if (!r->ptr_array)
      mpp_op_note_ptr(op, r->view.data);
    else if (r->present)
      mpp_op_note_ptr_array(op, r->ptr_array, (int64_t)r->view.batch, host_visible);
  }
}

/* --- the per-thread memo of decoded cublasLtMatmul calls ---
 * Frameworks make new descriptors for every call (PyTorch's addmm), so the
 * descriptors' addresses say nothing: the wrapper reads their attributes
 * every call (host-only getters), and the memo's key is what was read, with
 * what the decoding reads through alpha and beta, but not the matrix and
 * bias pointers (set_lt_pointers puts them in). Calls with pointer arrays,
 * FP8 scale pointers or an AMAX_D (or aux amax) pointer are decoded afresh: their ops
 * depend on memory the call points to (array contents, scale values). Each
 * entry keeps its op's site as the GEMM memo's do. */

enum { LT_LAYOUT_WORDS = 8 };
_Static_assert(LT_KEY_WORDS == 19 + 4 * LT_LAYOUT_WORDS, "LT_KEY_WORDS: 19 words and 4 layouts");

static uint64_t *put_layout(uint64_t *k, const mpp_lt_layout *l) {
  *k++ = (uint64_t)(int64_t)l->type;
  *k++ = (uint64_t)(int64_t)l->order;
  *k++ = l->rows;
  *k++ = l->cols;
  *k++ = (uint64_t)l->ld;
  *k++ = (uint64_t)(int64_t)l->batch;
  *k++ = (uint64_t)l->batch_stride;
  *k++ = l->batch_mode;
  return k;
}

/* The op's roles (A, B, C, D, as mpp_lt_decode adds them) and bias get this
 * call's pointers; the alignment is taken again from them. */
static void set_lt_pointers(mpp_op *op, const mpp_lt_call *g) {
  const void *p[4] = {g->A, g->B, g->C, g->D};
  op->ptr_align = 0;
  for (int i = 0; i < 4; i++) {
    op->roles[i].view.data = p[i];
    mpp_op_note_ptr(op, p[i]);
  }
  /* The epilogue's bias and aux roles: the key holds whether there are any. */
  for (int i = 4; i < op->nroles; i++) {
    const char *name = op->roles[i].name;
    op->roles[i].view.data = name == role_aux || name == role_aux_in ? g->aux : g->bias;
  }
  if (op->shadow_bias) op->shadow_bias = g->bias; /* the key holds whether there is one */
}

static bool lt_same(unsigned slot, const void *key) {
  return memcmp(memo->lt[slot].key, key, sizeof memo->lt[slot].key) == 0;
}

mpp_op *mpp_lt_decode_memo(mpp_op *scratch, const mpp_lt_call *g, void *stream,
                           bool (*host_visible)(const void *p)) {
  return mpp_lt_decode_memo_hinted(scratch, g, stream, host_visible, NULL);
}

mpp_op *mpp_lt_decode_memo_hinted(mpp_op *scratch, const mpp_lt_call *g, void *stream,
                                  bool (*host_visible)(const void *p), mpp_lt_memo_hint *hint) {
  bool arrays = g->a.batch_mode == LT_BATCH_MODE_POINTER_ARRAY ||
                g->b.batch_mode == LT_BATCH_MODE_POINTER_ARRAY ||
                g->c.batch_mode == LT_BATCH_MODE_POINTER_ARRAY ||
                g->d.batch_mode == LT_BATCH_MODE_POINTER_ARRAY;
  bool fp8 = g->amax_d || g->scale_ptr[0] || g->scale_ptr[1] || g->scale_ptr[2] ||
             g->scale_ptr[3] || g->aux_scale || g->aux_amax;
  gemm_memo *mm = arrays || fp8 ? NULL : memo_get();
  if (!mm) {
    if (hint) hint->fill = 0;
    mpp_lt_decode(scratch, g, stream, host_visible);
    return scratch;
  }
  /* The key's words from the call's pointers: what mpp_lt_decode reads
   * through alpha and beta, as it reads it, and the stream. */
  bool alpha_host = lt_alpha_host(g, host_visible);
  double alpha = alpha_value(g->alpha, g->scale_type, alpha_host);
  int ak = lt_alpha_known(g, host_visible);
  uint64_t words[5] = {g->C != NULL,
                       (uint64_t)lt_beta_nonzero(g, host_visible) | (uint64_t)(ak == 1) << 1 |
                           (uint64_t)(ak == 0) << 2,
                       alpha_host, 0, (uint64_t)(uintptr_t)stream};
  memcpy(&words[3], &alpha, sizeof alpha);
  _Static_assert(sizeof words == sizeof hint->words, "a hint holds the call's words");
  __typeof__(mm->lt[0]) *e;
  if (hint && hint->fill && hint->slot < LT_SLOTS && mm->lt[hint->slot].fill == hint->fill &&
      !memcmp(words, hint->words, sizeof words)) {
    e = &mm->lt[hint->slot];
    mm->lt_tag[hint->slot].last = ++mm->clock;
    set_lt_pointers(&e->op, g);
    e->op.site_memo = &e->site;
    return &e->op;
  }
  uint64_t key[LT_KEY_WORDS], *k = key;
  *k++ = (uint64_t)(int64_t)g->compute;
  *k++ = (uint64_t)(int64_t)g->scale_type;
  *k++ = (uint64_t)(int64_t)g->pointer_mode;
  *k++ = (uint64_t)(int64_t)g->transa;
  *k++ = (uint64_t)(int64_t)g->transb;
  *k++ = g->epilogue;
  *k++ = (uint64_t)(int64_t)g->bias_type;
  *k++ = (uint64_t)g->bias_stride;
  *k++ = g->bias != NULL;
  *k++ = (uint64_t)(g->aux != NULL) | (uint64_t)(g->fast_accum != 0) << 1;
  *k++ = (uint64_t)(int64_t)g->aux_type;
  *k++ = (uint64_t)g->aux_ld;
  *k++ = (uint64_t)g->aux_stride;
  for (int i = 0; i < 5; i++)
    *k++ = words[i];
  *k++ = (uint64_t)(uintptr_t)host_visible;
  k = put_layout(k, &g->a);
  k = put_layout(k, &g->b);
  k = put_layout(k, &g->c);
  k = put_layout(k, &g->d);
  uint64_t h = g->d.rows * 0x9e3779b97f4a7c15ull ^ g->d.cols * 0xc2b2ae3d27d4eb4full ^
               g->a.cols * 0x165667b19e3779f9ull ^ g->a.rows ^
               (uint64_t)(g->transa << 2 | g->transb << 4 | g->a.type << 8) ^
               (uint64_t)g->epilogue << 20;
  bool hit;
  unsigned slot = memo_slot(mm->lt_tag, LT_SETS, mix(h), lt_same, key, &hit);
  e = &mm->lt[slot];
  if (!hit) {
    mpp_lt_decode(&e->op, g, stream, host_visible);
    memcpy(e->key, key, sizeof key);
    e->fill = mm->lt_tag[slot].last;                     /* the clock's value at this fill */
    e->site = (mpp_site_memo){.op = mpp_site_memo_op()}; /* another op: its sites not known yet */
  }
  if (hint) {
    hint->fill = e->fill;
    hint->slot = slot;
    memcpy(hint->words, words, sizeof words);
  }
  set_lt_pointers(&e->op, g);
  e->op.site_memo = &e->site;
  return &e->op;
}

/* --- legacy cuDNN convolutions --- */

static bool conv_same(unsigned slot, const void *key) {
  return memcmp(&memo->conv[slot].key, key, sizeof(mpp_conv_key)) == 0;
}

void mpp_conv_key_descs(const mpp_conv_key *k, mpp_tensor_desc t[3], mpp_conv_desc *c) {
  for (int i = 0; i < 3; i++) {
    const mpp_conv_key_tensor *kt = &k->t[i];
    t[i] = (mpp_tensor_desc){.dtype = kt->dtype, .nd = kt->nd, .format = kt->format};
    for (int d = 0; d < kt->nd && d < MPP_CONV_MAX_DIMS; d++) {
      t[i].dims[d] = kt->dims[d];
      t[i].strides[d] = kt->strides[d];
    }
  }
  *c = (mpp_conv_desc){
      .comp_type = k->comp_type, .nsp = k->nsp, .mode = k->mode, .groups = k->groups};
  for (int i = 0; i < MPP_CONV_MAX_SPATIAL; i++) {
    c->pad[i] = k->pad[i];
    c->stride[i] = k->stride[i];
    c->dilation[i] = k->dilation[i];
  }
}

mpp_op *mpp_conv_decode_memo_key(mpp_op *scratch, const mpp_conv_key *k, const void *p0,
                                 const void *p1, const void *p2) {
  gemm_memo *mm = memo_get();
  if (!mm) {
    mpp_tensor_desc t[3];
    mpp_conv_desc c;
    mpp_conv_key_descs(k, t, &c);
    mpp_conv_decode_call(scratch, k->api, (mpp_op_kind)k->kind, t, &c, k->conv_math, k->stream, p0,
                         p1, p2);
    if (k->blend) mpp_conv_add_prior(scratch, &t[2], p2);
    return scratch;
  }
  /* x's first four dims, w's first, the kind and x's type */
  const int32_t *x = k->t[0].dims;
  uint64_t h = mix((uint64_t)(uint32_t)x[0] * 0x9e3779b97f4a7c15ull ^
                   (uint64_t)(uint32_t)x[1] * 0xc2b2ae3d27d4eb4full ^
                   (uint64_t)(uint32_t)x[2] * 0x165667b19e3779f9ull ^ (uint64_t)(uint32_t)x[3] ^
                   (uint64_t)(uint32_t)k->t[1].dims[0] * 0x27d4eb2f165667c5ull ^
                   ((uint64_t)(uint32_t)k->kind << 4 | (uint64_t)(uint32_t)k->t[0].dtype << 8));
  bool hit;
  __typeof__(mm->conv[0]) *e = &mm->conv[memo_slot(mm->conv_tag, CONV_SETS, h, conv_same, k, &hit)];
  if (!hit) {
    mpp_tensor_desc t[3];
    mpp_conv_desc c;
    mpp_conv_key_descs(k, t, &c);
    mpp_conv_decode_call(&e->op, k->api, (mpp_op_kind)k->kind, t, &c, k->conv_math, k->stream, NULL,
                         NULL, NULL);
    if (k->blend) mpp_conv_add_prior(&e->op, &t[2], NULL);
    memcpy(&e->key, k, sizeof *k);
    e->site = (mpp_site_memo){.op = mpp_site_memo_op()}; /* another op: its sites not known yet */
  }
  /* The pointers, where mpp_conv_decode puts them (roles in role order),
   * and the output's prior value's (the output's memory). */
  const void *p[3] = {p0, p1, p2};
  e->op.ptr_align = 0;
  for (int i = 0; i < 3; i++) {
    e->op.roles[i].view.data = p[i];
    mpp_op_note_ptr(&e->op, p[i]);
  }
  if (e->op.nroles > 3) e->op.roles[3].view.data = p2;
  e->op.site_memo = &e->site;
  return &e->op;
}

static bool fits_int32(int64_t v) {
  return v >= INT32_MIN && v <= INT32_MAX;
}

mpp_op *mpp_conv_decode_memo(mpp_op *scratch, const char *api, mpp_op_kind kind,
                             const mpp_tensor_desc t[3], const mpp_conv_desc *c,
                             const char *conv_math, void *stream, const void *p0, const void *p1,
                             const void *p2) {
  mpp_conv_key k;
  memset(&k, 0, sizeof k);
  k.api = api;
  k.conv_math = conv_math;
  k.stream = stream;
  k.kind = (int32_t)kind;
  bool fits = true;
  for (int i = 0; i < 3; i++) {
    mpp_conv_key_tensor *kt = &k.t[i];
    kt->dtype = t[i].dtype;
    kt->nd = t[i].nd;
    kt->format = t[i].format;
    for (int d = 0; d < t[i].nd && d < MPP_CONV_MAX_DIMS; d++) {
      fits = fits && fits_int32(t[i].dims[d]) && fits_int32(t[i].strides[d]);
      kt->dims[d] = (int32_t)t[i].dims[d];
      kt->strides[d] = (int32_t)t[i].strides[d];
    }
  }
  k.comp_type = c->comp_type;
  k.nsp = c->nsp;
  k.mode = c->mode;
  k.groups = c->groups;
  for (int i = 0; i < MPP_CONV_MAX_SPATIAL; i++) {
    fits = fits && fits_int32(c->pad[i]) && fits_int32(c->stride[i]) && fits_int32(c->dilation[i]);
    k.pad[i] = (int32_t)c->pad[i];
    k.stride[i] = (int32_t)c->stride[i];
    k.dilation[i] = (int32_t)c->dilation[i];
  }
  if (!fits) {
    mpp_conv_decode_call(scratch, api, kind, t, c, conv_math, stream, p0, p1, p2);
    return scratch;
  }
  return mpp_conv_decode_memo_key(scratch, &k, p0, p1, p2);
}
