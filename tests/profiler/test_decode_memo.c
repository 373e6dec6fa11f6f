/* The per-thread memo of decoded GEMM calls and of their sites
 * (mpp_gemm_decode_memo, call.c's find_site): a call decoded from the memo is
 * the op a fresh decode gives, field by field, whatever argument differs from
 * the call memoised before; the same call goes to the same site, and a call
 * that differs in any decoded field, in its layer or in the loss scale in
 * force goes to its own; site ids memoised before the tables were reset (a
 * fork child) are not used again. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "profiler/call.h"
#include "profiler/include/mpprof.h"
#include "profiler/hooks/gemm_decode.h"
#include "profiler/mpp.h"
#include "profiler/nvtx.h"
#include "profiler/op.h"
#include "profiler/rawwrite.h"
#include "profiler/sites.h"
#include "profiler/train.h"
#include "tests/core_fixture.h"

static int reset_all(void **state) {
  (void)state;
  mpp_fixture_reset(MPP_SCAN_NONE, 1024, 1000);
  return 0;
}

static float mats[4][64];
static const float zero = 0, one = 1, two = 2;
static const double d_one = 1, d_zero = 0;
static bool visible(const void *p) {
  return p != NULL;
}

static mpp_gemm_call base_call(void) {
  mpp_gemm_call g = mpp_fixture_gemm4("cublasGemmEx", mats[0], mats[1], mats[2]);
  g.alpha = &one;
  g.beta = &zero;
  return g;
}

static void assert_str_same(const char *a, const char *b) {
  if (a && b)
    assert_string_equal(a, b);
  else
    assert_ptr_equal(a, b);
}

static void assert_same_double(double a, double b) {
  assert_memory_equal(&a, &b, sizeof a);
}

/* Every field of the op but site_memo (which says where it came from). */
static void assert_same_op(const mpp_op *a, const mpp_op *b) {
  assert_ptr_equal(a->api, b->api);
  assert_int_equal(a->kind, b->kind);
  assert_int_equal(a->m, b->m);
  assert_int_equal(a->n, b->n);
  assert_int_equal(a->k, b->k);
  assert_int_equal(a->batch, b->batch);
  assert_int_equal(a->lda, b->lda);
  assert_int_equal(a->ldb, b->ldb);
  assert_int_equal(a->ldc, b->ldc);
  assert_int_equal(a->ldd, b->ldd);
  assert_int_equal(a->transa, b->transa);
  assert_int_equal(a->transb, b->transb);
  assert_int_equal(a->has_conv, b->has_conv);
  assert_int_equal(a->fast_accum, b->fast_accum);
  assert_int_equal(a->ntypes, b->ntypes);
  for (int i = 0; i < a->ntypes; i++) {
    assert_str_same(a->type_keys[i], b->type_keys[i]);
    assert_str_same(a->type_names[i], b->type_names[i]);
  }
  assert_str_same(a->compute_type, b->compute_type);
  assert_str_same(a->scale_type, b->scale_type);
  assert_int_equal(a->math_mode, b->math_mode);
  assert_str_same(a->epilogue, b->epilogue);
  assert_int_equal(a->fp8_scales, b->fp8_scales);
  assert_same_double(a->loss_scale, b->loss_scale);
  assert_ptr_equal(a->stream, b->stream);
  assert_same_double(a->alpha, b->alpha);
  assert_int_equal(a->shadow_unsupported, b->shadow_unsupported);
  assert_int_equal(a->shadow_epi, b->shadow_epi);
  assert_ptr_equal(a->shadow_bias, b->shadow_bias);
  assert_int_equal(a->shadow_bias_dtype, b->shadow_bias_dtype);
  assert_int_equal(a->shadow_bias_stride, b->shadow_bias_stride);
  for (int i = 0; i < 4; i++) {
    assert_same_double(a->fp8_scale[i], b->fp8_scale[i]);
    assert_int_equal(a->fp8_scale_unread[i], b->fp8_scale_unread[i]);
    assert_ptr_equal(a->fp8_scale_ptr[i], b->fp8_scale_ptr[i]);
  }
  assert_ptr_equal(a->amax_d_ptr, b->amax_d_ptr);
  assert_int_equal(a->ptr_align, b->ptr_align);
  assert_int_equal(a->nroles, b->nroles);
  for (int i = 0; i < a->nroles; i++) {
    const mpp_role *x = &a->roles[i], *y = &b->roles[i];
    assert_str_same(x->name, y->name);
    assert_int_equal(x->present, y->present);
    assert_int_equal(x->input, y->input);
    assert_int_equal(x->view.dtype, y->view.dtype);
    assert_ptr_equal(x->view.data, y->view.data);
    assert_int_equal(x->view.rows, y->view.rows);
    assert_int_equal(x->view.cols, y->view.cols);
    assert_int_equal(x->view.ld, y->view.ld);
    assert_int_equal(x->view.batch, y->view.batch);
    assert_int_equal(x->view.batch_stride, y->view.batch_stride);
    assert_ptr_equal(x->ptr_array, y->ptr_array);
    assert_int_equal(x->unscannable, y->unscannable);
    assert_int_equal(x->saturates, y->saturates);
  }
}

/* One argument or context field changed from the base call. */
typedef struct variant {
  const char *what;
  void (*apply)(mpp_gemm_call *g, mpp_gemm_ctx *ctx);
} variant;

#define VARIANT(name, body)                                                                        \
  static void name(mpp_gemm_call *g, mpp_gemm_ctx *ctx) {                                          \
    (void)g;                                                                                       \
    (void)ctx;                                                                                     \
    body;                                                                                          \
  }
VARIANT(v_api, g->api = "cublasSgemm_v2")
VARIANT(v_m, g->m = 3)
VARIANT(v_n, g->n = 3)
VARIANT(v_k, g->k = 3)
VARIANT(v_lda, g->lda = 8)
VARIANT(v_ldb, g->ldb = 8)
VARIANT(v_ldc, g->ldc = 8)
VARIANT(v_transa, g->transa = 1)
VARIANT(v_transb, g->transb = 2)
VARIANT(v_bad_trans, g->transa = 7)
VARIANT(v_atype, g->Atype = 2)
VARIANT(v_btype, g->Btype = 14)
VARIANT(v_ctype, g->Ctype = 2)
VARIANT(v_compute, g->compute = 77)
VARIANT(v_scale_type, {
  g->scale_type = 1; /* double scalars */
  g->alpha = &d_one;
  g->beta = &d_zero;
})
VARIANT(v_beta, g->beta = &one)
VARIANT(v_alpha, g->alpha = &two)
VARIANT(v_alpha_zero, g->alpha = &zero)
VARIANT(v_no_alpha, g->alpha = NULL)
VARIANT(v_strided, {
  g->batch = 3;
  g->strideA = 16;
  g->strideB = 0;
  g->strideC = 16;
})
VARIANT(v_batch_zero, g->batch = 0)
VARIANT(v_pointers, {
  g->A = mats[3] + 1;
  g->B = mats[2] + 2;
  g->C = mats[1] + 4;
})
VARIANT(v_null_c, g->C = NULL)
VARIANT(v_math, ctx->math_mode = 3)
VARIANT(v_device_pointer_mode, ctx->pointer_mode = 1)
VARIANT(v_device_mode_visible, {
  ctx->pointer_mode = 1;
  ctx->host_visible = visible;
})
VARIANT(v_stream, ctx->stream = (void *)0x1234)

static const variant variants[] = {
    {"api", v_api},
    {"m", v_m},
    {"n", v_n},
    {"k", v_k},
    {"lda", v_lda},
    {"ldb", v_ldb},
    {"ldc", v_ldc},
    {"transa", v_transa},
    {"transb", v_transb},
    {"invalid transa", v_bad_trans},
    {"Atype", v_atype},
    {"Btype", v_btype},
    {"Ctype", v_ctype},
    {"compute", v_compute},
    {"scale_type", v_scale_type},
    {"beta nonzero", v_beta},
    {"alpha value", v_alpha},
    {"alpha zero", v_alpha_zero},
    {"alpha NULL", v_no_alpha},
    {"strided batch", v_strided},
    {"batch 0", v_batch_zero},
    {"matrix pointers", v_pointers},
    {"C NULL", v_null_c},
    {"math mode", v_math},
    {"device pointer mode", v_device_pointer_mode},
    {"device pointer mode, host-visible scalars", v_device_mode_visible},
    {"stream (another handle)", v_stream},
};

static void memo_gives_the_op_a_fresh_decode_gives(void **state) {
  (void)state;
  mpp_gemm_call base = base_call();
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
    mpp_gemm_call g = base_call();
    mpp_gemm_ctx ctx = mpp_fixture_host_ctx;
    variants[i].apply(&g, &ctx);
    mpp_op fresh, scratch;
    print_message("variant: %s\n", variants[i].what);
    /* The base call memoised, then the variant, then the base again. */
    mpp_gemm_decode_memo(&scratch, &base, &mpp_fixture_host_ctx);
    mpp_gemm_decode(&fresh, &g, &ctx);
    assert_same_op(mpp_gemm_decode_memo(&scratch, &g, &ctx), &fresh);
    assert_same_op(mpp_gemm_decode_memo(&scratch, &g, &ctx), &fresh); /* now from the memo */
    mpp_gemm_decode(&fresh, &base, &mpp_fixture_host_ctx);
    assert_same_op(mpp_gemm_decode_memo(&scratch, &base, &mpp_fixture_host_ctx), &fresh);
  }
}

/* --- cublasLtMatmul --- */

enum { LAYERS = 300, ROUNDS = 3 };
static int site_calls(int ret_calls[], int max);

static const float bias_vec[4] = {1, 2, 3, 4};

static mpp_lt_call lt_base(void) {
  mpp_lt_layout l = {.type = 0, .order = 0, .rows = 4, .cols = 4, .ld = 4, .batch = 1};
  return (mpp_lt_call){.compute = 68, /* CUBLAS_COMPUTE_32F */
                       .scale_type = 0,
                       .epilogue = 4, /* BIAS */
                       .bias = bias_vec,
                       .bias_type = -1,
                       .a = l,
                       .b = l,
                       .c = l,
                       .d = l,
                       .alpha = &one,
                       .beta = &zero,
                       .A = mats[0],
                       .B = mats[1],
                       .C = mats[2],
                       .D = mats[2]};
}

typedef struct lt_variant {
  const char *what;
  void (*apply)(mpp_lt_call *g, void **stream, bool (**hv)(const void *));
  bool memoised;
} lt_variant;

#define LT_VARIANT(name, body)                                                                     \
  static void name(mpp_lt_call *g, void **stream, bool (**hv)(const void *)) {                     \
    (void)g;                                                                                       \
    (void)stream;                                                                                  \
    (void)hv;                                                                                      \
    body;                                                                                          \
  }
LT_VARIANT(lt_compute, g->compute = 77)
LT_VARIANT(lt_scale_type, {
  g->scale_type = 1;
  g->alpha = &d_one;
  g->beta = &d_zero;
})
LT_VARIANT(lt_device_alpha, g->pointer_mode = 1)
LT_VARIANT(lt_device_alpha_visible, {
  g->pointer_mode = 1;
  *hv = visible;
})
LT_VARIANT(lt_transa, g->transa = 1)
LT_VARIANT(lt_transb, g->transb = 1)
LT_VARIANT(lt_relu, g->epilogue = 2)
LT_VARIANT(lt_gelu_bias, g->epilogue = 36)
LT_VARIANT(lt_no_bias, g->bias = NULL)
LT_VARIANT(lt_other_bias, g->bias = bias_vec + 1)
LT_VARIANT(lt_bias_type, g->bias_type = 2)
LT_VARIANT(lt_bias_stride, {
  g->d.batch = g->c.batch = 2;
  g->d.batch_stride = g->c.batch_stride = 16;
  g->bias_stride = 4;
})
LT_VARIANT(lt_no_c, g->C = NULL)
LT_VARIANT(lt_beta, g->beta = &one)
LT_VARIANT(lt_alpha, g->alpha = &two)
LT_VARIANT(lt_alpha_zero, g->alpha = &zero) /* A and B not read */
static const float vec_ones[4] = {1, 1, 1, 1}, vec_beta_last[4] = {0, 0, 0, 2}, vec_zeros[4];
LT_VARIANT(lt_vector_beta, { /* DEVICE_VECTOR, host-readable: beta 0 but for the last row */
                             g->pointer_mode = 2;
                             g->alpha = vec_ones;
                             g->beta = vec_beta_last;
                             *hv = visible;
})
LT_VARIANT(lt_vector_alpha_zero, { /* ALPHA_DEVICE_VECTOR_BETA_HOST, every alpha 0 */
                                   g->pointer_mode = 4;
                                   g->alpha = vec_zeros;
                                   g->beta = &one;
                                   *hv = visible;
})
LT_VARIANT(lt_a_rows, g->a.rows = 3)
LT_VARIANT(lt_a_cols, g->a.cols = 2)
LT_VARIANT(lt_b_ld, g->b.ld = 8)
LT_VARIANT(lt_a_type, g->a.type = 2)
LT_VARIANT(lt_d_fp8, g->d.type = 28) /* CUDA_R_8F_E4M3: saturating */
LT_VARIANT(lt_row_major, g->a.order = 1)
LT_VARIANT(lt_tiled, g->b.order = 2)
LT_VARIANT(lt_strided, {
  g->a.batch = g->b.batch = g->c.batch = g->d.batch = 3;
  g->a.batch_stride = g->c.batch_stride = g->d.batch_stride = 16;
})
LT_VARIANT(lt_unknown_batch_mode, g->b.batch_mode = 7)
LT_VARIANT(lt_empty, g->d.rows = 0)
LT_VARIANT(lt_pointers, {
  g->A = mats[3] + 1;
  g->B = mats[2] + 2;
  g->D = g->C = mats[1] + 4;
})
LT_VARIANT(lt_stream, *stream = (void *)0x1234)
LT_VARIANT(lt_pointer_array, g->a.batch_mode = 1)
LT_VARIANT(lt_scale_ptr, g->scale_ptr[1] = &two)
LT_VARIANT(lt_amax, g->amax_d = mats[3])
LT_VARIANT(lt_fast_accum, g->fast_accum = 1)

static const lt_variant lt_variants[] = {
    {"compute", lt_compute, true},
    {"scale type", lt_scale_type, true},
    {"device alpha", lt_device_alpha, true},
    {"device alpha, host-visible", lt_device_alpha_visible, true},
    {"transa", lt_transa, true},
    {"transb", lt_transb, true},
    {"epilogue RELU", lt_relu, true},
    {"epilogue GELU_BIAS", lt_gelu_bias, true},
    {"no bias pointer", lt_no_bias, true},
    {"another bias pointer", lt_other_bias, true},
    {"bias type", lt_bias_type, true},
    {"bias batch stride", lt_bias_stride, true},
    {"C NULL", lt_no_c, true},
    {"beta nonzero", lt_beta, true},
    {"alpha value", lt_alpha, true},
    {"alpha zero", lt_alpha_zero, true},
    {"vector beta, non-zero in one row", lt_vector_beta, true},
    {"vector alpha, all zero", lt_vector_alpha_zero, true},
    {"A rows", lt_a_rows, true},
    {"A cols", lt_a_cols, true},
    {"B ld", lt_b_ld, true},
    {"A type", lt_a_type, true},
    {"D fp8", lt_d_fp8, true},
    {"A row-major", lt_row_major, true},
    {"B tiled", lt_tiled, true},
    {"strided batch", lt_strided, true},
    {"unknown batch mode", lt_unknown_batch_mode, true},
    {"D empty", lt_empty, true},
    {"matrix pointers", lt_pointers, true},
    {"stream", lt_stream, true},
    {"pointer array", lt_pointer_array, false},
    {"fp8 scale pointer", lt_scale_ptr, false},
    {"AMAX_D pointer", lt_amax, false},
    {"FAST_ACCUM", lt_fast_accum, true},
};

/* For a variant of every field the decoding reads, the memo gives the op a
 * fresh mpp_lt_decode gives (then from the memo, then the base again); the
 * calls whose op depends on memory they point to are never memoised. */
static void lt_memo_gives_the_op_a_fresh_decode_gives(void **state) {
  (void)state;
  mpp_lt_call base = lt_base();
  for (size_t i = 0; i < sizeof lt_variants / sizeof lt_variants[0]; i++) {
    mpp_lt_call g = lt_base();
    void *stream = NULL;
    bool (*hv)(const void *) = NULL;
    lt_variants[i].apply(&g, &stream, &hv);
    mpp_op fresh, scratch;
    print_message("variant: %s\n", lt_variants[i].what);
    mpp_lt_decode_memo(&scratch, &base, NULL, NULL);
    mpp_lt_decode(&fresh, &g, stream, hv);
    mpp_op *a = mpp_lt_decode_memo(&scratch, &g, stream, hv);
    assert_same_op(a, &fresh);
    assert_int_equal(a != &scratch, lt_variants[i].memoised);
    assert_same_op(mpp_lt_decode_memo(&scratch, &g, stream, hv), &fresh);
    mpp_lt_decode(&fresh, &base, NULL, NULL);
    assert_same_op(mpp_lt_decode_memo(&scratch, &base, NULL, NULL), &fresh);
  }
}

/* A hint (mpp_lt_memo_hint) takes a call to the entry it names only while
 * that entry holds the call's key: not once other keys have been through
 * the memo and refilled it, nor for a call whose alpha, beta, C or stream
 * differ from the hinted call's. */
static void an_lt_hint_goes_only_to_an_entry_holding_the_calls_key(void **state) {
  (void)state;
  mpp_lt_call g = lt_base();
  mpp_lt_memo_hint hint = {0};
  mpp_op scratch, fresh;
  mpp_op *a = mpp_lt_decode_memo_hinted(&scratch, &g, NULL, NULL, &hint);
  assert_ptr_not_equal(a, &scratch);
  assert_int_not_equal(hint.fill, 0);
  assert_ptr_equal(mpp_lt_decode_memo_hinted(&scratch, &g, NULL, NULL, &hint), a);
  assert_ptr_equal(mpp_lt_decode_memo(&scratch, &g, NULL, NULL), a);
  /* other pointers for alpha (2), beta (nonzero), C (none), the stream */
  for (int v = 0; v < 4; v++) {
    mpp_lt_call o = g;
    mpp_lt_memo_hint h = hint;
    void *stream = v == 3 ? (void *)0x1234 : NULL;
    if (v == 0) o.alpha = &two;
    if (v == 1) o.beta = &one;
    if (v == 2) o.C = NULL;
    mpp_lt_decode(&fresh, &o, stream, NULL);
    assert_same_op(mpp_lt_decode_memo_hinted(&scratch, &o, stream, NULL, &h), &fresh);
    assert_int_not_equal(memcmp(&h, &hint, sizeof h), 0); /* set to that call's entry */
  }
  /* 64 keys of other shapes through the memo (32 entries): g's entry
   * refilled, the hint's words those of every one of them */
  mpp_lt_memo_hint old = hint;
  for (int i = 0; i < 64; i++) {
    mpp_lt_call o = lt_base();
    o.c.rows = o.d.rows = (uint64_t)(5 + i);
    mpp_lt_decode_memo(&scratch, &o, NULL, NULL);
  }
  mpp_lt_decode(&fresh, &g, NULL, NULL);
  mpp_op *b = mpp_lt_decode_memo_hinted(&scratch, &g, NULL, NULL, &old);
  assert_same_op(b, &fresh);
  assert_int_not_equal(old.fill, hint.fill);
}

/* Each thread's memo has its own clock, started past every other's: the
 * same first fill of the same entry in two threads' memos (keys that differ
 * in the compute type only) does not give one thread's hint to the other's
 * entry. */
typedef struct hint_run {
  mpp_lt_call g;
  mpp_lt_memo_hint *hint;
  bool first; /* fill the memo with another key first */
  mpp_op out;
} hint_run;

static void *hinted_in_a_thread(void *p) {
  hint_run *r = p;
  mpp_op scratch;
  if (r->first) {
    mpp_lt_call other = r->g;
    other.compute = 77; /* CUBLAS_COMPUTE_32F_FAST_TF32 */
    mpp_lt_decode_memo(&scratch, &other, NULL, NULL);
  }
  r->out = *mpp_lt_decode_memo_hinted(&scratch, &r->g, NULL, NULL, r->hint);
  return NULL;
}

static void an_lt_hint_from_another_threads_memo_is_not_taken(void **state) {
  (void)state;
  mpp_lt_memo_hint hint = {0};
  hint_run r1 = {.g = lt_base(), .hint = &hint},
           r2 = {.g = lt_base(), .hint = &hint, .first = true};
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, hinted_in_a_thread, &r1), 0);
  pthread_join(t, NULL);
  assert_int_not_equal(hint.fill, 0);
  mpp_lt_memo_hint given = hint;
  assert_int_equal(pthread_create(&t, NULL, hinted_in_a_thread, &r2), 0);
  pthread_join(t, NULL);
  mpp_op fresh;
  mpp_lt_decode(&fresh, &r2.g, NULL, NULL);
  assert_same_op(&r2.out, &fresh);
  assert_int_not_equal(hint.fill, given.fill);
}

/* cublasLtMatmul as PyTorch's Linear layers call it (addmm with a bias, or
 * a GELU and a bias fused): the four Linear shapes of a transformer layer in
 * two model widths, with either epilogue, 16 keys called in turn, keep their
 * memo entries and op ids after the first round. */
static void a_models_lt_calls_in_turn_keep_their_entries(void **state) {
  (void)state;
  enum { KEYS = 16 };
  mpp_lt_call g[KEYS];
  int n = 0;
  for (int w = 0; w < 2; w++) {
    int64_t h = w ? 768 : 512, f = 4 * h, t = 1024;
    const int64_t shapes[4][2] = {{3 * h, h}, {h, h}, {f, h}, {h, f}}; /* out, in */
    for (int i = 0; i < 4; i++)
      for (int e = 0; e < 2; e++) {
        g[n] = lt_base();
        g[n].epilogue = e ? 36 : 4; /* GELU_BIAS, BIAS */
        g[n].a.rows = shapes[i][1], g[n].a.cols = shapes[i][0], g[n].a.ld = shapes[i][1];
        g[n].b.rows = shapes[i][1], g[n].b.cols = t, g[n].b.ld = shapes[i][1];
        g[n].c.rows = g[n].d.rows = shapes[i][0];
        g[n].c.cols = g[n].d.cols = t;
        g[n].c.ld = g[n].d.ld = shapes[i][0];
        g[n].transa = 1; /* T */
        n++;
      }
  }
  assert_int_equal(n, KEYS);
  mpp_op scratch, *first[KEYS];
  uint64_t ids[KEYS];
  for (int i = 0; i < KEYS; i++) {
    first[i] = mpp_lt_decode_memo(&scratch, &g[i], NULL, NULL);
    assert_ptr_not_equal(first[i], &scratch);
    ids[i] = first[i]->site_memo->op;
  }
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < KEYS; i++) {
      mpp_op *op = mpp_lt_decode_memo(&scratch, &g[i], NULL, NULL);
      assert_ptr_equal(op, first[i]);
      assert_int_equal(op->site_memo->op, ids[i]);
    }
}

/* As PyTorch's Linear layers make them (new descriptors, same contents):
 * the same GEMM in every layer finds its sites without the table after the
 * first round. */
static void lt_calls_in_many_layers_find_their_sites_without_the_table(void **state) {
  (void)state;
  int32_t ids[LAYERS];
  char name[32];
  for (int i = 0; i < LAYERS; i++) {
    snprintf(name, sizeof name, "layers.%d", i);
    ids[i] = mpprof_layer_id(name, "Linear");
  }
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < LAYERS; i++) {
      mpp_lt_call g = lt_base();
      mpp_op scratch;
      mpp_call c;
      mpprof_scope_push(ids[i], MPPROF_SCOPE_FORWARD);
      mpp_op *op = mpp_lt_decode_memo(&scratch, &g, NULL, NULL);
      mpp_call_begin(&c, op);
      mpp_call_end(&c, op, true);
      mpprof_scope_pop();
    }
  assert_int_equal(mpp_sites_table_finds(), LAYERS);
  int calls[LAYERS];
  assert_int_equal(site_calls(calls, LAYERS), LAYERS);
  for (int i = 0; i < LAYERS; i++)
    assert_int_equal(calls[i], ROUNDS);
}

/* --- legacy cuDNN convolutions (mpp_conv_decode_memo) --- */

/* A 2-D convolution's descriptors as the legacy getters give them: fp16
 * NCHW x (n, cin, hw, hw) and y, packed; a filter (k, cin, r, r) without
 * strides; fp32 compute, square pads and strides, no dilation. */
static void conv_descs(mpp_tensor_desc t[3], mpp_conv_desc *c, int64_t n, int64_t cin, int64_t k,
                       int64_t hw, int64_t r, int64_t pad, int64_t stride) {
  memset(t, 0, 3 * sizeof *t);
  memset(c, 0, sizeof *c);
  int64_t out = (hw + 2 * pad - r) / stride + 1;
  const int64_t dims[3][4] = {{n, cin, hw, hw}, {k, cin, r, r}, {n, k, out, out}};
  for (int i = 0; i < 3; i++) {
    t[i].dtype = 2; /* CUDNN_DATA_HALF */
    t[i].nd = 4;
    int64_t st = 1;
    for (int d = 3; d >= 0; d--) {
      t[i].dims[d] = dims[i][d];
      t[i].strides[d] = i == 1 ? 0 : st; /* a filter: packed, no strides */
      st *= dims[i][d];
    }
  }
  c->comp_type = 0; /* CUDNN_DATA_FLOAT */
  c->nsp = 2;
  for (int i = 0; i < 2; i++) {
    c->pad[i] = pad;
    c->stride[i] = stride;
    c->dilation[i] = 1;
  }
}

static void conv_base(mpp_tensor_desc t[3], mpp_conv_desc *c) {
  conv_descs(t, c, 2, 3, 4, 8, 3, 0, 1); /* y: 2, 4, 6, 6 */
}

/* What the memo is keyed by, one field at a time. */
static void conv_variant(int v, mpp_tensor_desc t[3], mpp_conv_desc *c, const char **math,
                         void **stream, mpp_op_kind *kind) {
  switch (v) {
  case 0:
    t[0].dtype = 0;
    break;
  case 1:
    t[0].dims[2] = 9;
    break;
  case 2:
    t[0].strides[3] = 2;
    break;
  case 3:
    t[1].dims[0] = 5;
    break;
  case 4:
    t[1].format = 1;
    break;
  case 5:
    t[2].dims[3] = 7;
    break;
  case 6:
    t[2].nd = 3;
    break;
  case 7:
    c->pad[1] = 1;
    break;
  case 8:
    c->stride[0] = 2;
    break;
  case 9:
    c->dilation[1] = 2;
    break;
  case 10:
    c->mode = 1;
    break;
  case 11:
    c->comp_type = 2;
    break;
  case 12:
    *math = "TENSOR_OP_MATH";
    break;
  case 13:
    *stream = (void *)0x40;
    break;
  case 14:
    *kind = MPP_OP_CONV_BWD_DATA;
    break;
  case 15: /* a 3-D convolution's width (the key holds every spatial entry) */
    c->stride[MPP_CONV_MAX_SPATIAL - 1] = 3;
    break;
  default:
    break;
  }
}
enum { CONV_VARIANTS = 16 };

static void assert_same_conv_op(const mpp_op *a, const mpp_op *b) {
  assert_same_op(a, b);
  assert_memory_equal(&a->conv, &b->conv, sizeof a->conv);
  assert_str_same(a->conv_math, b->conv_math);
}

static mpp_op *conv_memo(mpp_op *scratch, mpp_op_kind kind, const mpp_tensor_desc t[3],
                         const mpp_conv_desc *c, const char *math, void *stream, int p) {
  return mpp_conv_decode_memo(scratch, "cudnnConvolutionForward", kind, t, c, math, stream, mats[p],
                              mats[p + 1], mats[p + 2]);
}

static void conv_fresh(mpp_op *op, mpp_op_kind kind, const mpp_tensor_desc t[3],
                       const mpp_conv_desc *c, const char *math, void *stream, int p) {
  mpp_conv_decode(op, "cudnnConvolutionForward", kind, &t[0], &t[1], &t[2], c, mats[p], mats[p + 1],
                  mats[p + 2]);
  op->conv_math = math;
  op->stream = stream;
}

/* For a change of every field the key holds, the memo gives the op a fresh
 * decode gives, from an entry of its own (then the base again from its
 * entry); the same descriptors with other buffers hit the entry, the
 * buffers put in. */
static void conv_memo_gives_the_op_a_fresh_decode_gives(void **state) {
  (void)state;
  mpp_tensor_desc bt[3];
  mpp_conv_desc bc;
  conv_base(bt, &bc);
  mpp_op fresh, scratch;
  mpp_op *base = conv_memo(&scratch, MPP_OP_CONV_FWD, bt, &bc, "DEFAULT_MATH", NULL, 0);
  assert_ptr_not_equal(base, &scratch);
  mpp_site_memo *base_site = base->site_memo;
  for (int v = 0; v < CONV_VARIANTS; v++) {
    print_message("variant %d\n", v);
    mpp_tensor_desc t[3];
    mpp_conv_desc c;
    conv_base(t, &c);
    const char *math = "DEFAULT_MATH";
    void *stream = NULL;
    mpp_op_kind kind = MPP_OP_CONV_FWD;
    conv_variant(v, t, &c, &math, &stream, &kind);
    conv_fresh(&fresh, kind, t, &c, math, stream, 0);
    mpp_op *a = conv_memo(&scratch, kind, t, &c, math, stream, 0);
    assert_same_conv_op(a, &fresh);
    assert_ptr_not_equal(a->site_memo, base_site); /* an entry of its own */
    assert_same_conv_op(conv_memo(&scratch, kind, t, &c, math, stream, 0), &fresh);
    conv_fresh(&fresh, MPP_OP_CONV_FWD, bt, &bc, "DEFAULT_MATH", NULL, 0);
    mpp_op *b = conv_memo(&scratch, MPP_OP_CONV_FWD, bt, &bc, "DEFAULT_MATH", NULL, 0);
    assert_same_conv_op(b, &fresh);
    assert_ptr_equal(b->site_memo, base_site);
  }
  /* other buffers: the same entry, their pointers and alignment */
  conv_fresh(&fresh, MPP_OP_CONV_FWD, bt, &bc, "DEFAULT_MATH", NULL, 1);
  mpp_op *o = conv_memo(&scratch, MPP_OP_CONV_FWD, bt, &bc, "DEFAULT_MATH", NULL, 1);
  assert_ptr_equal(o->site_memo, base_site);
  assert_same_conv_op(o, &fresh);
  assert_ptr_equal(o->roles[0].view.data, mats[1]);
  assert_ptr_equal(o->roles[2].view.data, mats[3]);
}

/* The memo keys on ints, as cuDNN's legacy getters give them: a tensor
 * whose stride does not fit one is decoded afresh, not taken for the
 * tensor with that stride's low 32 bits. */
static void conv_values_past_an_int_are_decoded_afresh(void **state) {
  (void)state;
  mpp_tensor_desc t[3];
  mpp_conv_desc c;
  conv_base(t, &c);
  mpp_op scratch, fresh;
  mpp_op *base = conv_memo(&scratch, MPP_OP_CONV_FWD, t, &c, "DEFAULT_MATH", NULL, 0);
  assert_ptr_not_equal(base, &scratch);
  t[0].strides[0] += (int64_t)1 << 32;
  conv_fresh(&fresh, MPP_OP_CONV_FWD, t, &c, "DEFAULT_MATH", NULL, 0);
  mpp_op *big = conv_memo(&scratch, MPP_OP_CONV_FWD, t, &c, "DEFAULT_MATH", NULL, 0);
  assert_ptr_equal(big, &scratch);
  assert_same_conv_op(big, &fresh);
}

/* A ResNet-50's convolutions (batch 32, 224 x 224), forward, backward data
 * and backward filter: 72 keys called in turn keep their entries and op ids
 * after the first round, as a training loop calls them step after step.
 * (With 32 entries every call of the three rounds was decoded again: keys
 * called in a cycle longer than the memo evict each other before their turn.) */
typedef struct conv_shape {
  int64_t c, k, hw, r, stride;
} conv_shape;

static int resnet50_shapes(conv_shape *s) {
  int n = 0;
  s[n++] = (conv_shape){3, 64, 224, 7, 2};
  const int64_t mid[4] = {64, 128, 256, 512}, size[4] = {56, 56, 28, 14};
  int64_t in = 64;
  for (int st = 0; st < 4; st++) {
    int64_t m = mid[st], out = 4 * m, hw = size[st], stride = st ? 2 : 1, hw2 = hw / stride;
    s[n++] = (conv_shape){in, m, hw, 1, 1};        /* first block: reduce */
    s[n++] = (conv_shape){m, m, hw, 3, stride};    /* 3x3, strided after stage 1 */
    s[n++] = (conv_shape){m, out, hw2, 1, 1};      /* expand */
    s[n++] = (conv_shape){in, out, hw, 1, stride}; /* downsample */
    s[n++] = (conv_shape){out, m, hw2, 1, 1};      /* other blocks: reduce */
    if (stride != 1) s[n++] = (conv_shape){m, m, hw2, 3, 1};
    in = out;
  }
  return n;
}

static void conv_of(const conv_shape *s, mpp_tensor_desc t[3], mpp_conv_desc *c) {
  conv_descs(t, c, 32, s->c, s->k, s->hw, s->r, s->r / 2, s->stride);
}

static void a_resnets_convolutions_in_turn_keep_their_entries(void **state) {
  (void)state;
  conv_shape shapes[32];
  int nshapes = resnet50_shapes(shapes);
  enum { MAXKEYS = 96 };
  mpp_tensor_desc t[MAXKEYS][3];
  mpp_conv_desc c[MAXKEYS];
  mpp_op_kind kind[MAXKEYS];
  int n = 0;
  const mpp_op_kind kinds[3] = {MPP_OP_CONV_FWD, MPP_OP_CONV_BWD_DATA, MPP_OP_CONV_BWD_FILTER};
  for (int i = 0; i < nshapes; i++)
    for (int k = 0; k < 3; k++, n++) {
      assert_true(n < MAXKEYS);
      conv_of(&shapes[i], t[n], &c[n]);
      kind[n] = kinds[k];
    }
  assert_int_equal(n, 72);
  mpp_op scratch, *first[MAXKEYS];
  uint64_t ids[MAXKEYS];
  for (int i = 0; i < n; i++) {
    first[i] = conv_memo(&scratch, kind[i], t[i], &c[i], "DEFAULT_MATH", NULL, 0);
    ids[i] = first[i]->site_memo->op;
  }
  int misses = 0;
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < n; i++) {
      mpp_op *op = conv_memo(&scratch, kind[i], t[i], &c[i], "DEFAULT_MATH", NULL, 0);
      misses += op != first[i] || op->site_memo->op != ids[i];
    }
  assert_int_equal(misses, 0);
}

static void same_arguments_with_other_matrices_hit_the_memo(void **state) {
  (void)state;
  mpp_gemm_call g = base_call();
  mpp_op scratch;
  mpp_op *a = mpp_gemm_decode_memo(&scratch, &g, &mpp_fixture_host_ctx);
  mpp_site_memo *site = a->site_memo;
  g.A = mats[3];
  g.C = mats[0] + 2;
  mpp_op *b = mpp_gemm_decode_memo(&scratch, &g, &mpp_fixture_host_ctx);
  assert_non_null(site);
  assert_ptr_equal(b->site_memo, site);
  assert_ptr_equal(b->roles[0].view.data, mats[3]);
  assert_ptr_equal(b->roles[3].view.data, mats[0] + 2);
  assert_int_equal(b->ptr_align, 8);
}

/* Two GEMMs called in turn keep their memo entries, whatever set their keys
 * share: no decode again, the same op id (which keys the site cache). With
 * one entry per set, some of these 63 pairs would evict each other. */
static void two_gemms_in_turn_keep_their_entries(void **state) {
  (void)state;
  mpp_gemm_call base = base_call();
  mpp_op scratch;
  for (int64_t m = 5; m < 68; m++) {
    mpp_gemm_call other = base_call();
    other.m = m;
    mpp_op *a = mpp_gemm_decode_memo(&scratch, &base, &mpp_fixture_host_ctx);
    uint64_t a_id = a->site_memo->op;
    mpp_op *b = mpp_gemm_decode_memo(&scratch, &other, &mpp_fixture_host_ctx);
    uint64_t b_id = b->site_memo->op;
    assert_ptr_not_equal(a, b);
    for (int r = 0; r < 3; r++) {
      assert_ptr_equal(mpp_gemm_decode_memo(&scratch, &base, &mpp_fixture_host_ctx), a);
      assert_int_equal(a->site_memo->op, a_id);
      assert_ptr_equal(mpp_gemm_decode_memo(&scratch, &other, &mpp_fixture_host_ctx), b);
      assert_int_equal(b->site_memo->op, b_id);
    }
  }
}

/* The GEMMs of a transformer layer (hidden h, FFN 4h, 1024 tokens; cuBLAS
 * column-major as PyTorch calls it): forward q/k/v, output projection, FC1,
 * FC2, and backward the gradients of their inputs and weights, twelve shapes
 * per width; g gets those of two widths, 24 GEMMs. */
enum { MODEL_GEMMS = 24 };
static void model_gemms(mpp_gemm_call g[MODEL_GEMMS], const int64_t width[2]) {
  int n = 0;
  for (int w = 0; w < 2; w++) {
    int64_t h = width[w], f = 4 * h, t = 1024;
    const int64_t fwd[4][3] = {{3 * h, t, h}, {h, t, h}, {f, t, h}, {h, t, f}}; /* m, n, k */
    for (int i = 0; i < 4; i++) {
      int64_t out = fwd[i][0], in = fwd[i][2];
      const int64_t mnk[3][3] = {{out, t, in}, {in, t, out}, {in, out, t}}; /* y, dx, dw */
      const char ta[3] = {'T', 'N', 'N'}, tb[3] = {'N', 'N', 'T'};
      for (int j = 0; j < 3; j++) {
        g[n] = base_call();
        g[n].m = mnk[j][0];
        g[n].n = mnk[j][1];
        g[n].k = mnk[j][2];
        g[n].transa = ta[j] == 'T' ? 1 : 0;
        g[n].transb = tb[j] == 'T' ? 1 : 0;
        g[n].lda = ta[j] == 'T' ? g[n].k : g[n].m;
        g[n].ldb = tb[j] == 'T' ? g[n].n : g[n].k;
        g[n].ldc = g[n].m;
        n++;
      }
    }
  }
  assert_int_equal(n, MODEL_GEMMS);
}

/* How many of a model's GEMMs, called in turn round after round, were
 * decoded again or got another op id after the first round (0: they keep
 * their memo entries). */
static int model_misses(const int64_t width[2]) {
  mpp_gemm_call g[MODEL_GEMMS];
  model_gemms(g, width);
  mpp_op scratch, *first[MODEL_GEMMS];
  uint64_t ids[MODEL_GEMMS];
  for (int i = 0; i < MODEL_GEMMS; i++) {
    first[i] = mpp_gemm_decode_memo(&scratch, &g[i], &mpp_fixture_host_ctx);
    ids[i] = first[i]->site_memo->op;
  }
  int misses = 0;
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < MODEL_GEMMS; i++) {
      mpp_op *op = mpp_gemm_decode_memo(&scratch, &g[i], &mpp_fixture_host_ctx);
      misses += op != first[i] || op->site_memo->op != ids[i];
    }
  return misses;
}

/* Widths 512 and 768: 24 GEMMs in turn keep their entries and op ids after
 * the first round (with one set per key, three keys of one set would evict
 * each other at every call if the sets had two ways). */
static void a_models_gemms_in_turn_keep_their_entries(void **state) {
  (void)state;
  assert_int_equal(model_misses((const int64_t[2]){512, 768}), 0);
}

/* Every pair of 16 widths a model may have (256 to 8192): each model's 24
 * GEMMs keep their entries. A memo that gives a key one set fails some of
 * these 120 models (nine of their keys in one set); the memo is the same in
 * every run, its hash taking no address. */
static void models_of_many_widths_keep_their_entries(void **state) {
  (void)state;
  const int64_t widths[] = {256,  384,  512,  640,  768,  1024, 1280, 1536,
                            2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192};
  enum { WIDTHS = sizeof widths / sizeof widths[0] };
  int failed = 0;
  for (int i = 0; i < WIDTHS; i++)
    for (int j = i + 1; j < WIDTHS; j++) {
      reset_all(NULL);
      int misses = model_misses((const int64_t[2]){widths[i], widths[j]});
      if (misses)
        print_message("widths %lld, %lld: %d misses\n", (long long)widths[i], (long long)widths[j],
                      misses);
      failed += misses > 0;
    }
  assert_int_equal(failed, 0);
}

static void pointer_array_calls_are_not_memoised(void **state) {
  (void)state;
  const void *arr[1] = {mats[0]};
  mpp_gemm_call g = base_call();
  g.A = g.B = g.C = NULL;
  g.Aarr = g.Barr = g.Carr = arr;
  mpp_op scratch;
  mpp_op *op = mpp_gemm_decode_memo(&scratch, &g, &mpp_fixture_host_ctx);
  assert_ptr_equal(op, &scratch);
  assert_null(op->site_memo);
}

/* --- sites --- */

static void run(const mpp_gemm_call *g) {
  mpp_op scratch;
  mpp_call c;
  mpp_op *op = mpp_gemm_decode_memo(&scratch, g, &mpp_fixture_host_ctx);
  mpp_call_begin(&c, op);
  mpp_call_end(&c, op, true);
}

static cJSON *sites(void) {
  size_t len;
  char *s = mpp_raw_render(true, &len);
  assert_non_null(s);
  cJSON *doc = cJSON_Parse(s);
  free(s);
  assert_non_null(doc);
  return doc;
}

/* Calls per site, in site order, as the raw file has them; the count of sites. */
static int site_calls(int ret_calls[], int max) {
  cJSON *doc = sites();
  cJSON *arr = cJSON_GetObjectItem(doc, "sites");
  int n = cJSON_GetArraySize(arr);
  for (int i = 0; i < n && i < max; i++)
    ret_calls[i] =
        (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, i), "calls"));
  cJSON_Delete(doc);
  return n;
}

static void a_repeated_call_goes_to_its_site_and_a_changed_one_to_another(void **state) {
  (void)state;
  mpp_gemm_call g = base_call(), other = base_call();
  other.ldc = 8;
  run(&g);
  run(&g);
  run(&other);
  run(&g);
  run(&other);
  int calls[4];
  assert_int_equal(site_calls(calls, 4), 2);
  assert_int_equal(calls[0], 3);
  assert_int_equal(calls[1], 2);
}

static void the_same_call_in_another_layer_goes_to_that_layers_site(void **state) {
  (void)state;
  mpp_gemm_call g = base_call();
  run(&g);
  mpp_nvtx_push(NULL, "fc1");
  run(&g);
  mpp_nvtx_pop(NULL);
  mpp_nvtx_push(NULL, "fc2"); /* the same path buffer, other contents */
  run(&g);
  run(&g);
  mpp_nvtx_pop(NULL);
  mpp_nvtx_push(NULL, "fc1");
  run(&g);
  mpp_nvtx_pop(NULL);
  run(&g);
  int calls[4];
  assert_int_equal(site_calls(calls, 4), 3);
  assert_int_equal(calls[0], 2); /* "" */
  assert_int_equal(calls[1], 2); /* fc1 */
  assert_int_equal(calls[2], 2); /* fc2 */
}

static void a_new_loss_scale_gives_the_same_call_a_new_site(void **state) {
  (void)state;
  mpp_gemm_call g = base_call();
  run(&g);
  mpp_train_loss_scale(1024);
  run(&g);
  run(&g);
  int calls[4];
  assert_int_equal(site_calls(calls, 4), 2);
  assert_int_equal(calls[0], 1);
  assert_int_equal(calls[1], 2);
}

static void a_site_memoised_before_a_reset_is_not_used_after_it(void **state) {
  (void)state;
  mpp_gemm_call g = base_call(), other = base_call();
  other.m = 2;
  run(&g);           /* site 0, memoised */
  mpp_sites_reset(); /* as in a fork child */
  run(&other);       /* now site 0 */
  run(&g);           /* must be a site of its own */
  int calls[4];
  assert_int_equal(site_calls(calls, 4), 2);
  assert_int_equal(calls[0], 1);
  assert_int_equal(calls[1], 1);
}

/* One GEMM in every block of a model, forward and backward (the call's
 * memo holds one layer): after the first round each call finds its site
 * without the table, and every site has its own calls. Layers named as the
 * PyTorch integration names them (interned, with a class) and by NVTX (one
 * path buffer, other contents). */
static void the_same_call_in_many_layers_finds_each_site_without_the_table(void **state) {
  (void)state;
  mpp_gemm_call g = base_call();
  int32_t ids[LAYERS];
  char name[32];
  for (int i = 0; i < LAYERS; i++) {
    snprintf(name, sizeof name, "blocks.%d.mlp", i);
    ids[i] = mpprof_layer_id(name, "Linear");
    assert_true(ids[i] >= 0);
  }
  uint64_t finds_after_first = 0;
  for (int r = 0; r < ROUNDS; r++) {
    for (int phase = MPPROF_SCOPE_FORWARD; phase <= MPPROF_SCOPE_BACKWARD; phase++)
      for (int i = 0; i < LAYERS; i++) {
        mpprof_scope_push(ids[i], phase);
        run(&g);
        mpprof_scope_pop();
      }
    for (int i = 0; i < LAYERS; i++) {
      snprintf(name, sizeof name, "nvtx.%d", i);
      mpp_nvtx_push(NULL, name);
      run(&g);
      mpp_nvtx_pop(NULL);
    }
    if (r == 0) finds_after_first = mpp_sites_table_finds();
  }
  assert_int_equal(finds_after_first, 3 * LAYERS);
  assert_int_equal(mpp_sites_table_finds(), 3 * LAYERS);
  cJSON *doc = sites();
  cJSON *arr = cJSON_GetObjectItem(doc, "sites");
  assert_int_equal(cJSON_GetArraySize(arr), 3 * LAYERS);
  for (int i = 0; i < 3 * LAYERS; i++) {
    cJSON *site = cJSON_GetArrayItem(arr, i);
    const char *layer = cJSON_GetStringValue(cJSON_GetObjectItem(site, "layer"));
    const char *phase = cJSON_GetStringValue(cJSON_GetObjectItem(site, "phase"));
    if (i < 2 * LAYERS) {
      snprintf(name, sizeof name, "blocks.%d.mlp", i % LAYERS);
      assert_string_equal(phase, i < LAYERS ? "forward" : "backward");
    } else {
      snprintf(name, sizeof name, "nvtx.%d", i % LAYERS);
    }
    assert_string_equal(layer, name);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(site, "calls")), ROUNDS);
  }
  cJSON_Delete(doc);
}

/* A multi-op call (a cuDNN graph's operations, as hooks/cudnn_backend.c
 * decodes them) with a stable id per op: after the first round each op finds
 * its site in every layer without the table, and two ops of one call keep
 * their own sites. */
static void multi_op_calls_with_ids_find_their_sites_without_the_table(void **state) {
  (void)state;
  uint64_t id[2] = {mpp_site_memo_op(), mpp_site_memo_op()};
  int32_t ids[LAYERS];
  char name[32];
  for (int i = 0; i < LAYERS; i++) {
    snprintf(name, sizeof name, "convs.%d", i);
    ids[i] = mpprof_layer_id(name, "Conv2d");
  }
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < LAYERS; i++) {
      mpp_calls c = {0};
      assert_true(mpp_calls_reserve(&c, 2, "a test call"));
      for (int k = 0; k < 2; k++) {
        mpp_gemm_call g = base_call();
        g.m = 2 + k; /* two ops, two site keys */
        mpp_gemm_decode(&c.ops[k], &g, &mpp_fixture_host_ctx);
        mpp_calls_memo(&c, k, id[k]);
      }
      c.n = 2;
      mpprof_scope_push(ids[i], MPPROF_SCOPE_FORWARD);
      mpp_calls_begin(&c);
      mpp_calls_end(&c, true);
      mpprof_scope_pop();
      mpp_calls_release(&c);
    }
  assert_int_equal(mpp_sites_table_finds(), 2 * LAYERS);
  int calls[2 * LAYERS];
  assert_int_equal(site_calls(calls, 2 * LAYERS), 2 * LAYERS);
  for (int i = 0; i < 2 * LAYERS; i++)
    assert_int_equal(calls[i], ROUNDS);
}

/* The room of a multi-op call is the thread's, lent and given back: the
 * next call gets the same block (no allocation), a call made while it is
 * lent (from a signal handler) gets one of its own, and a larger call grows it. */
static void multi_op_room_is_the_threads_and_lent_once(void **state) {
  (void)state;
  mpp_calls a = {0}, b = {0};
  assert_true(mpp_calls_reserve(&a, 4, "a test call"));
  void *first = a.ops;
  assert_ptr_equal(a.calls, (void *)(a.ops + 4));
  assert_ptr_equal(a.memos, (void *)(a.calls + 4));
  assert_true(mpp_calls_reserve(&b, 4, "a nested call"));
  assert_ptr_not_equal(b.ops, first);
  mpp_calls_release(&b);
  mpp_calls_release(&a);
  assert_true(mpp_calls_reserve(&a, 2, "a test call"));
  assert_ptr_equal(a.ops, first);
  mpp_calls_release(&a);
  assert_true(mpp_calls_reserve(&a, 64, "a larger call"));
  assert_int_equal(a.cap, 64);
  void *grown = a.ops;
  mpp_calls_release(&a);
  assert_true(mpp_calls_reserve(&a, 3, "a test call"));
  assert_ptr_equal(a.ops, grown);
  mpp_calls_release(&a);
}

/* A decode that replaces another in the hook's memo leaves none of the old
 * op's cached sites to it: the calls alternate two ops in two layers. */
static void cached_sites_belong_to_their_op(void **state) {
  (void)state;
  mpp_gemm_call g = base_call(), other = base_call();
  other.m = 2;
  int32_t a = mpprof_layer_id("a", "Linear"), b = mpprof_layer_id("b", "Linear");
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < 4; i++) {
      mpprof_scope_push(i % 2 ? b : a, MPPROF_SCOPE_FORWARD);
      run(i < 2 ? &g : &other);
      mpprof_scope_pop();
    }
  int calls[8];
  assert_int_equal(site_calls(calls, 8), 4);
  for (int i = 0; i < 4; i++)
    assert_int_equal(calls[i], ROUNDS);
}

/* A cached site is one of the scale it was found under: after the scale
 * changes, calls in layers the memo no longer holds go to the new scale's. */
static void a_new_loss_scale_reaches_cached_sites(void **state) {
  (void)state;
  mpp_gemm_call g = base_call();
  int32_t a = mpprof_layer_id("a", "Linear"), b = mpprof_layer_id("b", "Linear");
  for (int r = 0; r < ROUNDS; r++) {
    if (r == 1) mpp_train_loss_scale(1024);
    for (int i = 0; i < 2; i++) {
      mpprof_scope_push(i ? b : a, MPPROF_SCOPE_BACKWARD);
      run(&g);
      mpprof_scope_pop();
    }
  }
  cJSON *doc = sites();
  cJSON *arr = cJSON_GetObjectItem(doc, "sites");
  assert_int_equal(cJSON_GetArraySize(arr), 4);
  static const struct {
    const char *layer;
    double scale;
    int calls;
  } want[] = {{"a", 0, 1}, {"b", 0, 1}, {"a", 1024, ROUNDS - 1}, {"b", 1024, ROUNDS - 1}};
  for (int i = 0; i < 4; i++) {
    cJSON *site = cJSON_GetArrayItem(arr, i);
    assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(site, "layer")), want[i].layer);
    cJSON *scale = cJSON_GetObjectItem(site, "loss_scale");
    if (want[i].scale == 0)
      assert_true(cJSON_IsNull(scale)); /* none declared */
    else
      assert_true(cJSON_GetNumberValue(scale) == want[i].scale);
    assert_int_equal(cJSON_GetNumberValue(cJSON_GetObjectItem(site, "calls")), want[i].calls);
  }
  cJSON_Delete(doc);
}

enum { THREADS = 4, CALLS = 4000 };
static pthread_barrier_t start;

static void *run_calls(void *p) {
  (void)p;
  mpp_gemm_call g = base_call();
  run(&g); /* the site found and memoised */
  pthread_barrier_wait(&start);
  for (int i = 1; i < CALLS; i++)
    run(&g);
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Memoised calls take their index in the site without the lock: calls of
 * several threads still get every index once. */
static void threads_calling_one_site_get_distinct_call_indices(void **state) {
  (void)state;
  mpp_cfg.max_events = THREADS * CALLS;
  pthread_t t[THREADS];
  pthread_barrier_init(&start, NULL, THREADS);
  for (int i = 0; i < THREADS; i++)
    assert_int_equal(pthread_create(&t[i], NULL, run_calls, NULL), 0);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&start);
  cJSON *doc = sites();
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites")), 1);
  cJSON *events = cJSON_GetObjectItem(doc, "events");
  int n = cJSON_GetArraySize(events);
  assert_int_equal(n, THREADS * CALLS);
  uint64_t *idx = calloc((size_t)n, sizeof *idx);
  assert_non_null(idx);
  for (int i = 0; i < n; i++)
    idx[i] =
        (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(events, i), "call"));
  qsort(idx, (size_t)n, sizeof *idx, cmp_u64);
  for (int i = 0; i < n; i++)
    assert_int_equal(idx[i], i);
  free(idx);
  cJSON_Delete(doc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(memo_gives_the_op_a_fresh_decode_gives, reset_all),
      cmocka_unit_test_setup(same_arguments_with_other_matrices_hit_the_memo, reset_all),
      cmocka_unit_test_setup(conv_memo_gives_the_op_a_fresh_decode_gives, reset_all),
      cmocka_unit_test_setup(a_resnets_convolutions_in_turn_keep_their_entries, reset_all),
      cmocka_unit_test_setup(conv_values_past_an_int_are_decoded_afresh, reset_all),
      cmocka_unit_test_setup(pointer_array_calls_are_not_memoised, reset_all),
      cmocka_unit_test_setup(two_gemms_in_turn_keep_their_entries, reset_all),
      cmocka_unit_test_setup(a_models_gemms_in_turn_keep_their_entries, reset_all),
      cmocka_unit_test_setup(models_of_many_widths_keep_their_entries, reset_all),
      cmocka_unit_test_setup(a_models_lt_calls_in_turn_keep_their_entries, reset_all),
      cmocka_unit_test_setup(lt_memo_gives_the_op_a_fresh_decode_gives, reset_all),
      cmocka_unit_test_setup(an_lt_hint_goes_only_to_an_entry_holding_the_calls_key, reset_all),
      cmocka_unit_test_setup(an_lt_hint_from_another_threads_memo_is_not_taken, reset_all),
      cmocka_unit_test_setup(lt_calls_in_many_layers_find_their_sites_without_the_table, reset_all),
      cmocka_unit_test_setup(a_repeated_call_goes_to_its_site_and_a_changed_one_to_another,
                             reset_all),
      cmocka_unit_test_setup(the_same_call_in_another_layer_goes_to_that_layers_site, reset_all),
      cmocka_unit_test_setup(a_new_loss_scale_gives_the_same_call_a_new_site, reset_all),
      cmocka_unit_test_setup(a_site_memoised_before_a_reset_is_not_used_after_it, reset_all),
      cmocka_unit_test_setup(the_same_call_in_many_layers_finds_each_site_without_the_table,
                             reset_all),
      cmocka_unit_test_setup(cached_sites_belong_to_their_op, reset_all),
      cmocka_unit_test_setup(multi_op_calls_with_ids_find_their_sites_without_the_table, reset_all),
      cmocka_unit_test_setup(multi_op_room_is_the_threads_and_lent_once, reset_all),
      cmocka_unit_test_setup(a_new_loss_scale_reaches_cached_sites, reset_all),
      cmocka_unit_test_setup(threads_calling_one_site_get_distinct_call_indices, reset_all),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
