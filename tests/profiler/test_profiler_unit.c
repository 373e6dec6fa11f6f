/* Unit tests of libmpprof.so's internals (linked statically from the core
 * library, no CUDA library needed): NVTX layer stacks and the injection
 * entry point, decoding of cuBLAS / cuBLASLt / convolution calls, the site
 * table with its caps, sampling and scan modes, and the raw document. */
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <nvtx3/nvToolsExt.h>

#include "profiler/hooks/conv_decode.h"
#include "profiler/hooks/gemm_decode.h"
#include "profiler/hooks/gemm_decode.h" /* twice: the include guard covers all of it */
#include "profiler/hostmem.h"
#include "profiler/jsonw.h"
#include "profiler/include/mpprof.h"
#include "profiler/mpp.h"
#include "profiler/rawwrite.h"

#include <cublas_api.h>
#include "profiler/call.h"
#include "common/utf8.h"
#include "profiler/nvtx.h"
#include "analysis/shadow_core.h"
#include "profiler/op.h"
#include "profiler/settings.h"
#include "profiler/sites.h"
#include "profiler/train.h"
#include "tests/core_fixture.h"

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

static const char *layer(void) {
  uint64_t h;
  return mpp_nvtx_layer(&h);
}

static int reset_all(void **state) {
  (void)state;
  mpp_fixture_reset(MPP_SCAN_ALL, 1024, 1000);
  return 0;
}

/* --- NVTX stacks --- */

static void layer_is_empty_without_ranges(void **state) {
  (void)state;
  assert_string_equal(layer(), "");
}

static void nested_ranges_join_with_slash(void **state) {
  (void)state;
  assert_int_equal(mpp_nvtx_push(NULL, "step"), 0);
  assert_int_equal(mpp_nvtx_push(NULL, "mlp"), 1);
  mpp_nvtx_push(NULL, "fc1");
  assert_string_equal(layer(), "step/mlp/fc1");
}

static void pop_restores_the_parent_layer(void **state) {
  (void)state;
  mpp_nvtx_push(NULL, "a");
  mpp_nvtx_push(NULL, "b");
  assert_int_equal(mpp_nvtx_pop(NULL), 1);
  assert_string_equal(layer(), "a");
  uint64_t h1, h2;
  mpp_nvtx_layer(&h1);
  mpp_nvtx_push(NULL, "b");
  mpp_nvtx_pop(NULL);
  mpp_nvtx_layer(&h2);
  assert_true(h1 == h2);
}

static void pop_without_an_open_range_returns_negative(void **state) {
  (void)state;
  assert_true(mpp_nvtx_pop(NULL) < 0);
  assert_string_equal(layer(), "");
}

static void domain_pop_removes_that_domains_innermost_range(void **state) {
  (void)state;
  static int d;
  mpp_nvtx_push(NULL, "a");
  mpp_nvtx_push(&d, "b");
  mpp_nvtx_push(NULL, "c");
  assert_true(mpp_nvtx_pop(&d) >= 0);
  assert_string_equal(layer(), "a/c");
}

static void removing_the_outermost_range_keeps_the_inner_ones(void **state) {
  (void)state;
  static int d;
  mpp_nvtx_push(&d, "outer");
  mpp_nvtx_push(NULL, "x");
  mpp_nvtx_push(NULL, "y");
  mpp_nvtx_pop(&d);
  assert_string_equal(layer(), "x/y");
  mpp_nvtx_pop(NULL);
  assert_string_equal(layer(), "x");
}

static void ranges_beyond_64_levels_pop_back_to_the_same_layer(void **state) {
  (void)state;
  mpp_nvtx_push(NULL, "root");
  for (int i = 0; i < 100; i++)
    mpp_nvtx_push(NULL, "deep");
  for (int i = 0; i < 100; i++)
    mpp_nvtx_pop(NULL);
  assert_string_equal(layer(), "root");
}

/* One range name of 1023 bytes or more filled the layer path: a range pushed
 * inside it had its parent's layer, and so had its ops. A name is cut at 255
 * bytes (as a wide one was), so the ranges inside stay apart; the cut name
 * ends in "…" within those bytes (it was cut with nothing to say so). */
static void a_long_range_name_leaves_room_for_the_ranges_inside_it(void **state) {
  (void)state;
  char name[1101], want[300];
  memset(name, 'x', 1100);
  name[1100] = '\0';
  mpp_nvtx_push(NULL, name);
  mpp_nvtx_push(NULL, "inner");
  snprintf(want, sizeof want, "%.252s\xe2\x80\xa6/inner", name);
  assert_string_equal(layer(), want);
  mpp_nvtx_pop(NULL);
  assert_int_equal(strlen(layer()), 255);
  mpp_nvtx_push(NULL, "other");
  snprintf(want, sizeof want, "%.252s\xe2\x80\xa6/other", name);
  assert_string_equal(layer(), want);
}

/* A name of exactly 255 bytes is whole: no mark. */
static void a_range_name_of_255_bytes_is_not_marked_cut(void **state) {
  (void)state;
  char name[256];
  memset(name, 'x', 255);
  name[255] = '\0';
  mpp_nvtx_push(NULL, name);
  assert_string_equal(layer(), name);
}

/* The layer path is cut at 1023 bytes; the range that did not fit whole ends
 * in "…" too. */
static void a_range_cut_by_the_full_layer_path_is_marked_cut(void **state) {
  (void)state;
  char name[201];
  memset(name, 'y', 200);
  name[200] = '\0';
  for (int i = 0; i < 6; i++)
    mpp_nvtx_push(NULL, name); /* 200 + 4 x 201 = 1004 bytes, then "/" and 18 */
  const char *p = layer();
  assert_int_equal(strlen(p), 1023);
  assert_string_equal(p + 1020, "\xe2\x80\xa6");
}

static void last_range_name(void *ctx, const mpp_range *r) {
  if (r->depth == 0) memcpy(ctx, r->name, sizeof r->name);
}

/* A name cut in the middle of a character showed '?' in the report (the
 * broken bytes replaced): the layer path and the timeline's range names are
 * cut before the character that does not fit. */
static void a_cut_name_keeps_whole_characters(void **state) {
  (void)state;
  char name[401] = "z";
  for (int i = 0; i < 133; i++)
    memcpy(name + 1 + 3 * i, "\xe6\xb3\xa8", 3); /* U+6CE8, 3 bytes: 252 and 87 fall inside one */
  name[400] = '\0';
  mpp_nvtx_push(NULL, name);
  char path[300];
  snprintf(path, sizeof path, "%s", layer());
  assert_int_equal(strlen(path), 250 + 3); /* "z", 83 whole characters and "…" */
  assert_string_equal(path + 250, "\xe2\x80\xa6");
  assert_int_equal(mpp_utf8_sanitize(path, strlen(path)), 0);
  mpp_nvtx_pop(NULL);
  char kept[sizeof((mpp_range *)0)->name] = "";
  mpp_nvtx_ranges_each(last_range_name, kept);
  assert_int_equal(strlen(kept), 85);
  assert_int_equal(mpp_utf8_sanitize(kept, strlen(kept)), 0);
}

static void *other_thread(void *p) {
  char *out = p;
  strcpy(out, layer());
  mpp_nvtx_push(NULL, "other");
  strcat(out, "|");
  strcat(out, layer());
  return NULL;
}

static void ranges_are_per_thread(void **state) {
  (void)state;
  char seen[64] = "";
  mpp_nvtx_push(NULL, "main");
  pthread_t t;
  pthread_create(&t, NULL, other_thread, seen);
  pthread_join(t, NULL);
  assert_string_equal(seen, "|other");
  assert_string_equal(layer(), "main");
}

static void *one_range(void *p) {
  mpp_nvtx_push(NULL, (const char *)p);
  mpp_nvtx_pop(NULL);
  return NULL;
}

static void count_range(void *ctx, const mpp_range *r) {
  if (strcmp(r->name, "pool_task") == 0) ++*(int *)ctx;
}

/* A thread pool that churns (a task per thread, each in a range): every
 * range is kept, in the buffers of threads that ended, not in a new chunk of
 * 512 ranges per thread the program ever started. */
static void threads_that_end_leave_their_range_buffer_to_the_next(void **state) {
  (void)state;
  uint64_t max_ranges = mpp_cfg.max_ranges;
  mpp_cfg.max_ranges = 100000;
  mpp_nvtx_ranges_reset();
  uint64_t chunks = mpp_nvtx_range_chunks();
  for (int i = 0; i < 200; i++) {
    pthread_t t;
    pthread_create(&t, NULL, one_range, "pool_task");
    pthread_join(t, NULL);
  }
  int kept = 0;
  mpp_nvtx_ranges_each(count_range, &kept);
  assert_int_equal(kept, 200);
  assert_true(mpp_nvtx_range_chunks() - chunks <= 1);
  mpp_cfg.max_ranges = max_ranges;
}

/* A stand-in for the export table an NVTX copy hands to the injection. */
static NvtxFunctionPointer core_slots[NVTX_CBID_CORE_SIZE], core2_slots[NVTX_CBID_CORE2_SIZE];
static NvtxFunctionPointer *core_table[NVTX_CBID_CORE_SIZE], *core2_table[NVTX_CBID_CORE2_SIZE];

static int NVTX_API get_module(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned *size) {
  if (m == NVTX_CB_MODULE_CORE) {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; i++)
      core_table[i] = &core_slots[i];
    *out = core_table;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (m == NVTX_CB_MODULE_CORE2) {
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; i++)
      core2_table[i] = &core2_slots[i];
    *out = core2_table;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}

static const NvtxExportTableCallbacks callbacks = {sizeof callbacks, get_module};

static const void *NVTX_API get_export_table(uint32_t id) {
  return id == NVTX_ETID_CALLBACKS ? &callbacks : NULL;
}

static void injection_fills_core_and_core2_callbacks(void **state) {
  (void)state;
  memset(core_slots, 0, sizeof core_slots);
  memset(core2_slots, 0, sizeof core2_slots);
  assert_int_equal(InitializeInjectionNvtx2(get_export_table), 1);
  nvtxRangePushA_impl_fntype push_a =
      (nvtxRangePushA_impl_fntype)core_slots[NVTX_CBID_CORE_RangePushA];
  nvtxRangePop_impl_fntype pop = (nvtxRangePop_impl_fntype)core_slots[NVTX_CBID_CORE_RangePop];
  nvtxDomainCreateA_impl_fntype create =
      (nvtxDomainCreateA_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainCreateA];
  nvtxDomainRegisterStringA_impl_fntype reg =
      (nvtxDomainRegisterStringA_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainRegisterStringA];
  nvtxDomainRangePushEx_impl_fntype dpush =
      (nvtxDomainRangePushEx_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainRangePushEx];
  nvtxDomainRangePop_impl_fntype dpop =
      (nvtxDomainRangePop_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainRangePop];
  assert_non_null(push_a);
  assert_non_null(pop);
  assert_non_null(core_slots[NVTX_CBID_CORE_RangePushEx]);
  assert_non_null(core_slots[NVTX_CBID_CORE_RangeStartEx]);
  assert_non_null(core_slots[NVTX_CBID_CORE_RangeEnd]);
  assert_non_null(core_slots[NVTX_CBID_CORE_MarkA]);
  assert_non_null(create);
  assert_non_null(reg);
  assert_non_null(dpush);
  assert_non_null(dpop);

  /* The program sees what NVTX returns without a tool: no push/pop tracking. */
  assert_int_equal(push_a("fwd"), NVTX_NO_PUSH_POP_TRACKING);
  nvtxDomainHandle_t d = create("mydomain");
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = reg(d, "attention");
  assert_int_equal(dpush(d, &a), NVTX_NO_PUSH_POP_TRACKING);
  assert_string_equal(layer(), "fwd/attention");
  assert_int_equal(dpop(d), NVTX_NO_PUSH_POP_TRACKING);
  assert_int_equal(pop(), NVTX_NO_PUSH_POP_TRACKING);
  assert_string_equal(layer(), "");
}

/* Wide names (nvtxRangePushW, Unicode messages, wide registered strings and
 * domain names) are UTF-8: characters of 1 to 4 bytes, a value that is no
 * character is '?', and a name cut at 255 bytes keeps whole characters. */
static void wide_names_are_utf8(void **state) {
  (void)state;
  memset(core_slots, 0, sizeof core_slots);
  memset(core2_slots, 0, sizeof core2_slots);
  assert_int_equal(InitializeInjectionNvtx2(get_export_table), 1);
  nvtxRangePushW_impl_fntype push_w =
      (nvtxRangePushW_impl_fntype)core_slots[NVTX_CBID_CORE_RangePushW];
  nvtxRangePushEx_impl_fntype push_ex =
      (nvtxRangePushEx_impl_fntype)core_slots[NVTX_CBID_CORE_RangePushEx];
  nvtxRangePop_impl_fntype pop = (nvtxRangePop_impl_fntype)core_slots[NVTX_CBID_CORE_RangePop];
  nvtxDomainCreateW_impl_fntype create_w =
      (nvtxDomainCreateW_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainCreateW];
  nvtxDomainRegisterStringW_impl_fntype reg_w =
      (nvtxDomainRegisterStringW_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainRegisterStringW];
  nvtxDomainRangePushEx_impl_fntype dpush =
      (nvtxDomainRangePushEx_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainRangePushEx];
  nvtxDomainRangePop_impl_fntype dpop =
      (nvtxDomainRangePop_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainRangePop];
  assert_non_null(push_w);
  assert_non_null(create_w);
  assert_int_equal(push_w(L"a\u00e4\u6ce8\U0001F600"), NVTX_NO_PUSH_POP_TRACKING);
  assert_string_equal(layer(), "a\xc3\xa4\xe6\xb3\xa8\xf0\x9f\x98\x80");
  const wchar_t bad[] = {'x', 0xD800, (wchar_t)0x110000, -1, 'y', 0};
  push_w(bad);
  assert_string_equal(layer(), "a\xc3\xa4\xe6\xb3\xa8\xf0\x9f\x98\x80/x???y");
  pop();
  pop();
  wchar_t longw[200];
  for (int i = 0; i < 199; i++)
    longw[i] = i ? 0x6ce8 : 'z'; /* 1 + 3 x 83 = 250 bytes and "…" fit in 255, the 84th does not */
  longw[199] = 0;
  nvtxEventAttributes_t a = {0};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  a.message.unicode = longw;
  push_ex(&a);
  assert_int_equal(strlen(layer()), 253);
  assert_string_equal(layer() + 250, "\xe2\x80\xa6");
  pop();
  nvtxDomainHandle_t d = create_w(L"d\u00e4");
  assert_non_null(d);
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = reg_w(d, L"r\u00e4");
  dpush(d, &a);
  assert_string_equal(layer(), "r\xc3\xa4");
  assert_int_equal(pop(), NVTX_NO_PUSH_POP_TRACKING); /* not the default domain's */
  assert_string_equal(layer(), "r\xc3\xa4");
  dpop(d);
  assert_string_equal(layer(), "");
}

static void injection_fills_every_nvtx_copy_that_asks(void **state) {
  (void)state;
  assert_int_equal(InitializeInjectionNvtx2(get_export_table), 1);
  memset(core_slots, 0, sizeof core_slots);
  assert_int_equal(InitializeInjectionNvtx2(get_export_table), 1);
  assert_non_null(core_slots[NVTX_CBID_CORE_RangePushA]);
}

/* --- cuBLAS decoding --- */

static mpp_gemm_call gemm16(void) {
  static float a[64], b[64], c[64];
  static const float zero = 0;
  return (mpp_gemm_call){.api = "cublasGemmEx",
                         .transa = 0,
                         .transb = 0,
                         .m = 4,
                         .n = 2,
                         .k = 3,
                         .lda = 4,
                         .ldb = 3,
                         .ldc = 4,
                         .beta = &zero,
                         .A = a,
                         .B = b,
                         .C = c,
                         .batch = 1,
                         .Atype = 2,
                         .Btype = 2,
                         .Ctype = 0,
                         .compute = 68,
                         .scale_type = 0};
}

static void transposed_a_is_viewed_as_stored_k_by_m(void **state) {
  (void)state;
  mpp_gemm_call g = gemm16();
  g.transa = 1;
  g.lda = 3;
  mpp_op op;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_int_equal(op.transa, 'T');
  assert_int_equal(op.roles[0].view.rows, 3);
  assert_int_equal(op.roles[0].view.cols, 4);
  assert_int_equal(op.roles[0].view.dtype, MP_FP16);
  assert_int_equal(op.roles[1].view.rows, 3); /* B: k x n */
  assert_int_equal(op.roles[1].view.cols, 2);
}

static void c_is_an_input_role_only_when_beta_is_nonzero(void **state) {
  (void)state;
  mpp_gemm_call g = gemm16();
  mpp_op op;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_string_equal(op.roles[2].name, "C");
  assert_false(op.roles[2].present);
  const float beta = 0.5f;
  g.beta = &beta;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_true(op.roles[2].present);
  assert_true(op.roles[2].input);
  assert_false(op.roles[3].input); /* D */
}

/* alpha == 0: BLAS does not reference A and B, so a pointer array may hold
 * NULL for them; the device scan (which reads the array on the GPU) must not
 * follow it unless alpha is known non-zero (an unreadable device alpha may be
 * 0). Plain pointers are not scanned either when alpha is known to be 0
 * (their NaN reach nothing), and are when it is not known. */
static void zero_alpha_drops_pointer_array_a_and_b(void **state) {
  (void)state;
  static const void *arr[2] = {NULL, NULL};
  const float zero = 0, one = 1;
  mpp_gemm_call g = gemm16();
  g.A = g.B = NULL;
  g.Aarr = g.Barr = arr;
  g.batch = 2;
  g.alpha = &zero;
  mpp_op op;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_false(op.roles[0].present);
  assert_false(op.roles[1].present);
  assert_true(op.roles[3].present); /* D is written whatever alpha is */
  g.alpha = &one;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_true(op.roles[0].present);
  assert_true(op.roles[1].present);
  mpp_gemm_ctx dev = {.pointer_mode = 1}; /* alpha on the device: unknown */
  g.alpha = &one;
  mpp_gemm_decode(&op, &g, &dev);
  assert_false(op.roles[0].present);
  assert_false(op.roles[1].present);
  g = gemm16(); /* plain pointers: not read with alpha 0 */
  g.alpha = &zero;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_false(op.roles[0].present);
  assert_false(op.roles[1].present);
  assert_true(op.roles[3].present);
  const float minus_zero = -0.0f, nan = NAN;
  g.alpha = &minus_zero;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_false(op.roles[0].present);
  g.alpha = &nan; /* NaN is not zero: A and B are read */
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_true(op.roles[0].present);
  g.alpha = &zero;
  mpp_gemm_decode(&op, &g, &dev); /* 0, but on the device: may be read */
  assert_true(op.roles[0].present);
  assert_true(op.roles[1].present);
  /* The memo keeps alpha == 0 and alpha != 0 apart. */
  mpp_op scratch;
  g.alpha = &one;
  assert_true(mpp_gemm_decode_memo(&scratch, &g, &mpp_fixture_host_ctx)->roles[0].present);
  g.alpha = &zero;
  assert_false(mpp_gemm_decode_memo(&scratch, &g, &mpp_fixture_host_ctx)->roles[0].present);
}

static void device_beta_that_cannot_be_read_drops_c(void **state) {
  (void)state;
  mpp_gemm_call g = gemm16();
  const float beta = 1;
  g.beta = &beta;
  mpp_gemm_ctx ctx = {.pointer_mode = 1};
  mpp_op op;
  mpp_gemm_decode(&op, &g, &ctx);
  assert_false(op.roles[2].present);
}

static void legacy_cuda_r_32f_compute_type_reads_as_32F(void **state) {
  (void)state;
  mpp_gemm_call g = gemm16();
  g.compute = 0; /* CUDA_R_32F passed as a compute type */
  mpp_op op;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_string_equal(op.compute_type, "32F");
  g.compute = 77;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_string_equal(op.compute_type, "32F_FAST_TF32");
}

static void dtypes_of_all_four_operands_are_named(void **state) {
  (void)state;
  mpp_gemm_call g = gemm16();
  g.Atype = 28;
  g.Btype = 29;
  g.Ctype = 14;
  mpp_op op;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_int_equal(op.ntypes, 4);
  assert_string_equal(op.type_names[0], "fp8_e4m3");
  assert_string_equal(op.type_names[1], "fp8_e5m2");
  assert_string_equal(op.type_names[2], "bf16");
  assert_string_equal(op.type_names[3], "bf16");
}

static void complex_operands_are_marked_unscannable(void **state) {
  (void)state;
  mpp_gemm_call g = gemm16();
  g.Atype = 4; /* CUDA_C_32F */
  mpp_op op;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_string_equal(op.type_names[0], "complex_fp32");
  assert_int_equal(op.roles[0].unscannable, MPP_NS_DTYPE);
}

static void strided_batch_with_zero_stride_is_one_matrix(void **state) {
  (void)state;
  mpp_gemm_call g = gemm16();
  g.batch = 8;
  g.strideA = 0;
  g.strideB = 6;
  g.strideC = 8;
  mpp_op op;
  mpp_gemm_decode(&op, &g, &mpp_fixture_host_ctx);
  assert_int_equal(op.batch, 8);
  assert_int_equal(op.roles[0].view.batch, 1);
  assert_int_equal(op.roles[1].view.batch, 8);
  assert_int_equal(op.roles[1].view.batch_stride, 6);
}

static void pointer_alignment_is_the_largest_power_of_two_up_to_256(void **state) {
  (void)state;
  mpp_op op;
  mpp_op_init(&op, "x", MPP_OP_GEMM);
  mpp_op_note_ptr(&op, (void *)(uintptr_t)0x10000);
  assert_int_equal(op.ptr_align, 256);
  mpp_op_note_ptr(&op, (void *)(uintptr_t)0x10030);
  assert_int_equal(op.ptr_align, 16);
}

/* --- cuBLASLt decoding --- */

static mpp_lt_call lt16(void) {
  mpp_lt_layout a = {.type = 2, .order = 0, .rows = 8, .cols = 5, .ld = 8, .batch = 1};
  mpp_lt_layout b = {.type = 2, .order = 0, .rows = 5, .cols = 3, .ld = 5, .batch = 1};
  mpp_lt_layout d = {.type = 0, .order = 0, .rows = 8, .cols = 3, .ld = 8, .batch = 1};
  static char buf[1024];
  return (mpp_lt_call){.compute = 68,
                       .scale_type = 0,
                       .transa = 0,
                       .transb = 0,
                       .epilogue = 1,
                       .a = a,
                       .b = b,
                       .c = d,
                       .d = d,
                       .A = buf,
                       .B = buf,
                       .C = buf,
                       .D = buf};
}

static void lt_m_n_come_from_d_and_k_from_a_and_transa(void **state) {
  (void)state;
  mpp_lt_call g = lt16();
  mpp_op op;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.m, 8);
  assert_int_equal(op.n, 3);
  assert_int_equal(op.k, 5);
  g.transa = 1;
  g.a.rows = 5;
  g.a.cols = 8;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.k, 5);
  assert_string_equal(op.epilogue, "DEFAULT");
  assert_string_equal(op.api, "cublasLtMatmul");
}

static void lt_row_major_layout_is_viewed_transposed(void **state) {
  (void)state;
  mpp_lt_call g = lt16();
  g.a.order = 1;
  g.a.ld = 5;
  mpp_op op;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.roles[0].view.rows, 5);
  assert_int_equal(op.roles[0].view.cols, 8);
  assert_int_equal(op.roles[0].unscannable, MPP_NS_COUNT);
  g.a.order = 2; /* COL32: tiled */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.roles[0].unscannable, MPP_NS_LAYOUT);
}

static void lt_fp8_scale_and_amax_pointers_are_flagged(void **state) {
  (void)state;
  mpp_lt_call g = lt16();
  static float sa, amax;
  g.a.type = g.b.type = 28;
  g.scale_ptr[0] = &sa;
  g.amax_d = &amax;
  g.epilogue = 36;
  mpp_op op;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.fp8_scales, MPP_FP8_A | MPP_FP8_AMAX_D);
  assert_string_equal(op.epilogue, "GELU_BIAS");
  assert_string_equal(op.type_names[0], "fp8_e4m3");
}

static bool all_host(const void *p) {
  (void)p;
  return true;
}

/* An fp8 GELU aux is stored times EPILOGUE_AUX_SCALE, its amax written to
 * EPILOGUE_AUX_AMAX_POINTER (cublasLt.h), as D's with D_SCALE and AMAX_D:
 * both flagged, the scale read on the host path (a block scale mode: not
 * read), the amax pointer kept for after the call; only for the epilogues
 * that write an aux (not DGELU, which reads one). */
static void lt_fp8_aux_scale_and_amax_are_read_as_ds(void **state) {
  (void)state;
  static uint8_t aux[64];
  static float scale = 0.0625f, amax;
  mpp_lt_call g = lt16();
  g.a.type = g.b.type = g.d.type = 28; /* CUDA_R_8F_E4M3 */
  g.c.type = 2;
  g.bias_type = -1;
  g.aux_type = 28;
  g.epilogue = 160; /* GELU_AUX */
  g.aux = aux;
  g.aux_ld = 8;
  g.aux_scale = &scale;
  g.aux_amax = &amax;
  mpp_op op, scratch;
  mpp_lt_decode(&op, &g, NULL, all_host);
  assert_int_equal(op.fp8_scales, MPP_FP8_AUX | MPP_FP8_AMAX_AUX);
  assert_true(op.aux_scale == 0.0625);
  assert_false(op.aux_scale_unread);
  assert_ptr_equal(op.amax_aux_ptr, &amax);
  assert_true(isnan(op.amax_aux)); /* read after the call (call.c) */
  assert_true(op.roles[4].saturates);
  /* Not through the memo: the scale is memory the call points to. */
  assert_ptr_equal(mpp_lt_decode_memo(&scratch, &g, NULL, all_host), &scratch);
  /* Not host memory: left for the device scan. */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_true(isnan(op.aux_scale) && op.aux_scale_unread);
  assert_ptr_equal(op.aux_scale_ptr, &scale);
  /* A block scale mode: never read. */
  g.aux_scale_mode = 2;
  mpp_lt_decode(&op, &g, NULL, all_host);
  assert_true(isnan(op.aux_scale) && op.aux_scale_unread);
  assert_null(op.aux_scale_ptr);
  /* DGELU reads the aux: no scale or amax of its own recorded. */
  g.aux_scale_mode = 0;
  g.epilogue = 192;
  mpp_lt_decode(&op, &g, NULL, all_host);
  assert_int_equal(op.fp8_scales, 0);
  assert_null(op.amax_aux_ptr);
}

/* Shadow execution applies the epilogues that change D (bias, ReLU, GELU, and
 * their AUX forms) and refuses those it does not model (DRELU/DGELU read an
 * aux buffer); a bias takes BIAS_DATA_TYPE, by default D's type. */
static void lt_epilogues_map_to_what_shadow_execution_applies(void **state) {
  (void)state;
  static const struct {
    uint32_t epi;
    int shadow_epi;
    bool bias, unsupported;
  } rows[] = {
      {1, MP_SH_EPI_NONE, false, false},
      {2, MP_SH_EPI_RELU, false, false},
      {130, MP_SH_EPI_RELU, false, false},
      {4, MP_SH_EPI_NONE, true, false},
      {6, MP_SH_EPI_RELU, true, false},
      {134, MP_SH_EPI_RELU, true, false},
      {32, MP_SH_EPI_GELU, false, false},
      {160, MP_SH_EPI_GELU, false, false},
      {36, MP_SH_EPI_GELU, true, false},
      {164, MP_SH_EPI_GELU, true, false},
      {256, MP_SH_EPI_NONE, false, false},
      {512, MP_SH_EPI_NONE, false, false},
      {136, 0, false, true},
      {152, 0, false, true},
      {192, 0, false, true},
      {208, 0, false, true},
      {12345, 0, false, true},
  };
  static uint16_t bias[16];
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    mpp_lt_call g = lt16();
    g.epilogue = rows[i].epi;
    g.bias = bias;
    g.bias_type = -1;
    mpp_op op;
    mpp_lt_decode(&op, &g, NULL, NULL);
    assert_int_equal(op.shadow_unsupported, rows[i].unsupported);
    if (rows[i].unsupported) continue;
    assert_int_equal(op.shadow_epi, rows[i].shadow_epi);
    assert_ptr_equal(op.shadow_bias, rows[i].bias ? bias : NULL);
    if (rows[i].bias) assert_int_equal(op.shadow_bias_dtype, MP_FP32); /* D's type */
  }
  mpp_lt_call g = lt16();
  g.epilogue = 6;
  g.bias = bias;
  g.bias_type = 2; /* CUDA_R_16F */
  g.d.batch = g.c.batch = 3;
  g.bias_stride = 9;
  mpp_op op;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.shadow_bias_dtype, MP_FP16);
  assert_int_equal(op.shadow_bias_stride, 9);
  /* An fp8 D's default bias type is C's (bf16 here), not D's e4m3. */
  g.bias = bias;
  g.bias_type = -1;
  g.d.batch = g.c.batch = 1;
  g.a.type = g.b.type = g.d.type = 28; /* CUDA_R_8F_E4M3 */
  g.c.type = 14;                       /* CUDA_R_16BF */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.shadow_bias_dtype, MP_BF16);
  g.bias = NULL; /* a bias epilogue without a bias pointer: not modelled */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_true(op.shadow_unsupported);
}

static void lt_beta_zero_pointer_mode_drops_c(void **state) {
  (void)state;
  mpp_lt_call g = lt16();
  const float beta = 1;
  g.beta = &beta;
  mpp_op op;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_true(op.roles[2].present);
  g.pointer_mode = 3; /* ALPHA_DEVICE_VECTOR_BETA_ZERO */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_false(op.roles[2].present);
}

/* The device memory of lt_alpha_device_vector_is_never_read: a page that
 * cannot be read stands for it (a host read faults). */
static void *device_page;

static bool readable_but_device_page(const void *p) {
  return p && p != device_page;
}

/* CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST: beta is a host
 * scalar, alpha a device array of m values (cublasLt.h), which the decode
 * must not read on the host, nor take alpha[0] for a scalar alpha. Not
 * known, alpha may be non-zero: A and B are scanned (not followed as
 * pointer arrays). The memo's path reads alpha's readability too. */
static void lt_alpha_device_vector_is_never_read(void **state) {
  (void)state;
  long page = sysconf(_SC_PAGESIZE);
  void *dev = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  assert_true(dev != MAP_FAILED);
  device_page = dev;
  const float beta = 1;
  mpp_lt_call g = lt16();
  g.alpha = dev;
  g.beta = &beta;
  for (int pm = 2; pm <= 4; pm++) {
    g.pointer_mode = pm;
    mpp_op op, scratch;
    mpp_lt_decode(&op, &g, NULL, readable_but_device_page);
    assert_true(isnan(op.alpha)); /* not a scalar: shadow execution does not model it */
    assert_false(op.roles[0].ptr_array);
    assert_true(op.roles[0].present && op.roles[1].present);
    /* beta 1, read in the modes where beta is a host scalar (HOST is 0,
     * ALPHA_DEVICE_VECTOR_BETA_HOST 4) or host-readable (DEVICE_VECTOR 2). */
    assert_true(op.roles[2].present == (pm != 3));
    mpp_op *m = mpp_lt_decode_memo(&scratch, &g, NULL, readable_but_device_page);
    assert_true(isnan(m->alpha));
  }
  munmap(dev, (size_t)page);
}

/* DEVICE_VECTOR modes with the vectors in memory read here (simcuda, host
 * memory): one value per row of D. C is read when any row's beta is
 * non-zero (not beta[0] alone), A and B unless every alpha is 0; per batch
 * member ALPHA_VECTOR_BATCH_STRIDE apart. Not readable: C not scanned (as
 * any unknown beta), A and B scanned (as any unknown alpha). */
static void lt_vector_alpha_and_beta_are_read_whole(void **state) {
  (void)state;
  mpp_lt_call g = lt16(); /* m = 8 */
  float alpha[16] = {0}, beta[8] = {0};
  g.alpha = alpha;
  g.beta = beta;
  g.pointer_mode = 2; /* DEVICE_VECTOR */
  mpp_op op, scratch;
  mpp_lt_decode(&op, &g, NULL, mpp_host_readable);
  assert_false(op.roles[0].present); /* every alpha 0: A and B are not read */
  assert_false(op.roles[1].present);
  assert_false(op.roles[2].present); /* every beta 0 */
  beta[7] = 2;                       /* the last row's beta only */
  alpha[5] = 1;
  mpp_lt_decode(&op, &g, NULL, mpp_host_readable);
  assert_true(op.roles[0].present);
  assert_true(op.roles[2].present);
  assert_true(mpp_lt_decode_memo(&scratch, &g, NULL, mpp_host_readable)->roles[2].present);
  beta[7] = 0;
  assert_false(mpp_lt_decode_memo(&scratch, &g, NULL, mpp_host_readable)->roles[2].present);
  mpp_lt_decode(&op, &g, NULL, NULL); /* not readable */
  assert_true(op.roles[0].present);
  assert_false(op.roles[2].present);
  /* ALPHA_DEVICE_VECTOR_BETA_HOST, batch 2: the second member's alphas 8 past the first's. */
  g.pointer_mode = 4;
  g.beta = &beta[0];
  g.a.batch = g.b.batch = g.c.batch = g.d.batch = 2;
  g.a.batch_stride = 40, g.b.batch_stride = 15, g.c.batch_stride = g.d.batch_stride = 24;
  alpha[5] = 0;
  alpha[8 + 3] = 1;
  mpp_lt_decode(&op, &g, NULL, mpp_host_readable);
  assert_false(op.roles[0].present); /* no stride: the first member's 8 alphas, all 0 */
  g.alpha_vec_stride = 8;
  mpp_lt_decode(&op, &g, NULL, mpp_host_readable);
  assert_true(op.roles[0].present);
  assert_true(mpp_lt_decode_memo(&scratch, &g, NULL, mpp_host_readable)->roles[0].present);
  alpha[8 + 3] = 0;
  assert_false(mpp_lt_decode_memo(&scratch, &g, NULL, mpp_host_readable)->roles[0].present);
}

/* cuBLASLt reads A and B only when alpha may be non-zero, as cuBLAS. */
static void lt_zero_alpha_reads_neither_a_nor_b(void **state) {
  (void)state;
  mpp_lt_call g = lt16();
  const float zero = 0, one = 1;
  g.alpha = &zero;
  g.beta = &one;
  mpp_op op, scratch;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_false(op.roles[0].present);
  assert_false(op.roles[1].present);
  assert_true(op.roles[2].present);
  assert_true(op.roles[3].present);
  assert_false(mpp_lt_decode_memo(&scratch, &g, NULL, NULL)->roles[0].present);
  g.alpha = &one;
  assert_true(mpp_lt_decode_memo(&scratch, &g, NULL, NULL)->roles[0].present);
  g.pointer_mode = 1; /* a device scalar not readable here: may be non-zero */
  g.alpha = &zero;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_true(op.roles[0].present);
}

/* The epilogue's bias is a role of its own: an input it reads (BIAS,
 * RELU_BIAS, GELU_BIAS and AUX forms; m values of BIAS_DATA_TYPE, per batch
 * member BIAS_BATCH_STRIDE apart), or the bias gradient it writes (BGRAD
 * epilogues: D's rows, BGRADB D's columns). Its default type is D's, but
 * bf16 for an FP8 GEMM with an fp32 D and C's for an fp8 D (cuBLAS
 * documentation, FP8 table), the scale type for IMMA (int8 C, 32I). */
static void lt_bias_is_a_role_of_its_own(void **state) {
  (void)state;
  static uint16_t bias[64];
  mpp_lt_call g = lt16(); /* m 8, n 3, fp32 D */
  g.epilogue = 4;         /* BIAS */
  g.bias = bias;
  g.bias_type = -1;
  mpp_op op, scratch;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.nroles, 5);
  assert_string_equal(op.roles[4].name, "bias");
  assert_true(op.roles[4].input && op.roles[4].present);
  assert_ptr_equal(op.roles[4].view.data, bias);
  assert_int_equal(op.roles[4].view.rows, 8);
  assert_int_equal(op.roles[4].view.cols, 1);
  assert_int_equal(op.roles[4].view.dtype, MP_FP32); /* D's */
  assert_int_equal(op.roles[4].view.batch, 1);
  /* The memo gives each call its own bias pointer. */
  g.bias = bias + 8;
  assert_ptr_equal(mpp_lt_decode_memo(&scratch, &g, NULL, NULL)->roles[4].view.data, bias + 8);
  g.bias = bias;
  assert_ptr_equal(mpp_lt_decode_memo(&scratch, &g, NULL, NULL)->roles[4].view.data, bias);
  /* FP8 A and B with an fp32 C and D: bf16 (not D's fp32). */
  g.a.type = g.b.type = 28;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.roles[4].view.dtype, MP_BF16);
  assert_int_equal(op.shadow_bias_dtype, MP_BF16);
  g.bias_type = 2; /* set: as set */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.roles[4].view.dtype, MP_FP16);
  /* IMMA: 32I compute, int8 C and D, fp32 scale: the scale type. */
  g = lt16();
  g.epilogue = 4;
  g.bias = bias;
  g.bias_type = -1;
  g.compute = 72;
  g.a.type = g.b.type = g.c.type = g.d.type = 3;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.roles[4].view.dtype, MP_FP32);
  /* Batched, one bias per member. */
  g = lt16();
  g.epilogue = 6;
  g.bias = bias;
  g.bias_type = -1;
  g.a.batch = g.b.batch = g.c.batch = g.d.batch = 3;
  g.bias_stride = 8;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.roles[4].view.batch, 3);
  assert_int_equal(op.roles[4].view.batch_stride, 8);
  /* Bias gradients: outputs, D's rows or (BGRADB) columns. */
  g = lt16();
  g.bias = bias;
  g.bias_type = -1;
  g.epilogue = 256; /* BGRADA */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_string_equal(op.roles[4].name, "dbias");
  assert_false(op.roles[4].input);
  assert_int_equal(op.roles[4].view.rows, 8);
  g.epilogue = 512; /* BGRADB */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.roles[4].view.rows, 3);
  /* No bias epilogue, or no pointer: no role. */
  g.epilogue = 1;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.nroles, 4);
  g.epilogue = 4;
  g.bias = NULL;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.nroles, 4);
}

/* The epilogue's aux buffer: GELU_AUX and GELU_AUX_BIAS write the GELU's
 * input (the pre-GELU values, m x n per batch member, AUX_LD apart,
 * AUX_BATCH_STRIDE between members) as numbers of EPILOGUE_AUX_DATA_TYPE (by
 * default D's): an output role, aux, where their fp16/bf16/fp8 overflow
 * shows; DGELU and DGELU_BGRAD read it back: an input role, aux_in. The ReLU
 * forms' aux is a bit mask, no numbers: no role. */
static void lt_gelu_aux_is_a_role_of_its_own(void **state) {
  (void)state;
  static uint16_t aux[64], bias[8];
  mpp_lt_call g = lt16();  /* m 8, n 3 */
  g.d.type = g.c.type = 2; /* fp16 D */
  g.bias_type = g.aux_type = -1;
  g.epilogue = 164; /* GELU_AUX_BIAS */
  g.bias = bias;
  g.aux = aux;
  g.aux_ld = 16;
  mpp_op op, scratch;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.nroles, 6);
  assert_string_equal(op.roles[4].name, "bias");
  mpp_role *r = &op.roles[5];
  assert_string_equal(r->name, "aux");
  assert_false(r->input);
  assert_true(r->present);
  assert_int_equal(r->unscannable, MPP_NS_COUNT);
  assert_ptr_equal(r->view.data, aux);
  assert_int_equal(r->view.dtype, MP_FP16); /* D's */
  assert_int_equal(r->view.rows, 8);
  assert_int_equal(r->view.cols, 3);
  assert_int_equal(r->view.ld, 16);
  assert_int_equal(r->view.batch, 1);
  /* The memo gives each call its own aux and bias pointers. */
  g.aux = aux + 8;
  g.bias = bias + 1;
  mpp_op *m = mpp_lt_decode_memo(&scratch, &g, NULL, NULL);
  assert_ptr_equal(m->roles[5].view.data, aux + 8);
  assert_ptr_equal(m->roles[4].view.data, bias + 1);
  g.aux = aux;
  m = mpp_lt_decode_memo(&scratch, &g, NULL, NULL);
  assert_ptr_equal(m->roles[5].view.data, aux);
  /* ... and another ld is another entry. */
  g.aux_ld = 8;
  assert_int_equal(mpp_lt_decode_memo(&scratch, &g, NULL, NULL)->roles[5].view.ld, 8);
  /* AUX_DATA_TYPE as set: fp8 pre-GELU values saturate as D's do. */
  g.aux_type = 28; /* CUDA_R_8F_E4M3 */
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.roles[5].view.dtype, MP_FP8_E4M3);
  assert_true(op.roles[5].saturates);
  /* GELU_AUX without a bias, batched: one per member. */
  g = lt16();
  g.bias_type = g.aux_type = -1;
  g.epilogue = 160;
  g.aux = aux;
  g.aux_ld = 8;
  g.aux_stride = 24;
  g.a.batch = g.b.batch = g.c.batch = g.d.batch = 2;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.nroles, 5);
  assert_string_equal(op.roles[4].name, "aux");
  assert_int_equal(op.roles[4].view.dtype, MP_FP32);
  assert_int_equal(op.roles[4].view.batch, 2);
  assert_int_equal(op.roles[4].view.batch_stride, 24);
  /* DGELU reads it: an input; DGELU_BGRAD also writes dbias. */
  g = lt16();
  g.bias_type = g.aux_type = -1;
  g.epilogue = 192;
  g.aux = aux;
  g.aux_ld = 8;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.nroles, 5);
  assert_string_equal(op.roles[4].name, "aux_in");
  assert_true(op.roles[4].input && op.roles[4].present);
  g.epilogue = 208;
  g.bias = bias;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.nroles, 6);
  assert_string_equal(op.roles[4].name, "dbias");
  assert_string_equal(op.roles[5].name, "aux_in");
  assert_ptr_equal(mpp_lt_decode_memo(&scratch, &g, NULL, NULL)->roles[5].view.data, aux);
  /* The ReLU forms' bit mask is no tensor of numbers: never a role. */
  static const uint32_t relu[] = {130, 134, 136, 152};
  for (size_t i = 0; i < sizeof relu / sizeof relu[0]; i++) {
    g.epilogue = relu[i];
    mpp_lt_decode(&op, &g, NULL, NULL);
    for (int k = 0; k < op.nroles; k++)
      assert_true(strncmp(op.roles[k].name, "aux", 3) != 0);
  }
  /* No pointer: no role. */
  g.epilogue = 160;
  g.aux = NULL;
  mpp_lt_decode(&op, &g, NULL, NULL);
  assert_int_equal(op.nroles, 4);
}

/* --- convolutions --- */

static mpp_tensor_desc nchw(int dt, int64_t n, int64_t c, int64_t h, int64_t w) {
  return (mpp_tensor_desc){
      .dtype = dt, .nd = 4, .dims = {n, c, h, w}, .strides = {c * h * w, h * w, w, 1}};
}

static void conv_forward_has_its_implicit_gemm_shape(void **state) {
  (void)state;
  mpp_tensor_desc x = nchw(2, 4, 8, 16, 16), y = nchw(2, 4, 32, 16, 16);
  mpp_tensor_desc w = {.dtype = 2, .nd = 4, .dims = {32, 8, 3, 3}};
  mpp_conv_desc c = {.comp_type = 0, .nsp = 2, .pad = {1, 1}, .stride = {1, 1}, .dilation = {1, 1}};
  static char buf[64];
  mpp_op op;
  mpp_conv_decode(&op, "cudnnConvolutionForward", MPP_OP_CONV_FWD, &x, &w, &y, &c, buf, buf, buf);
  assert_int_equal(op.m, 4 * 16 * 16);
  assert_int_equal(op.n, 32);
  assert_int_equal(op.k, 8 * 9);
  assert_int_equal(op.conv.k, 32);
  assert_int_equal(op.conv.r, 3);
  assert_string_equal(op.compute_type, "fp32");
  assert_string_equal(op.type_keys[0], "x");
  assert_string_equal(op.type_names[0], "fp16");
  assert_int_equal(op.roles[2].view.rows, 4 * 32 * 16 * 16);
}

/* beta != 0 (y = alpha conv + beta y): the output's prior value is read, an
 * input role of its own over the output (y_prior, dx_prior, dw_prior), its
 * pointer each call's (the memo's key holds whether the call blends). With
 * beta == 0 cuDNN does not read the output: no role. */
static void a_blending_convolution_reads_the_output_first(void **state) {
  (void)state;
  mpp_conv_key k;
  memset(&k, 0, sizeof k);
  k.api = "cudnnConvolutionBackwardData";
  k.kind = MPP_OP_CONV_BWD_DATA;
  k.t[0] =
      (mpp_conv_key_tensor){.dtype = 0, .nd = 4, .dims = {1, 4, 2, 2}, .strides = {16, 4, 2, 1}};
  k.t[1] = (mpp_conv_key_tensor){.dtype = 0, .nd = 4, .dims = {4, 3, 1, 1}};
  k.t[2] =
      (mpp_conv_key_tensor){.dtype = 0, .nd = 4, .dims = {1, 3, 2, 2}, .strides = {12, 4, 2, 1}};
  k.nsp = 2;
  k.stride[0] = k.stride[1] = k.dilation[0] = k.dilation[1] = 1;
  static float bufs[4][16];
  mpp_op scratch;
  mpp_op *op = mpp_conv_decode_memo_key(&scratch, &k, bufs[0], bufs[1], bufs[2]);
  assert_int_equal(op->nroles, 3);
  k.blend = 1;
  op = mpp_conv_decode_memo_key(&scratch, &k, bufs[0], bufs[1], bufs[2]);
  assert_int_equal(op->nroles, 4);
  assert_string_equal(op->roles[3].name, "dx_prior");
  assert_true(op->roles[3].input && op->roles[3].present);
  assert_ptr_equal(op->roles[3].view.data, bufs[2]);
  assert_int_equal(op->roles[3].view.rows, 12);
  op = mpp_conv_decode_memo_key(&scratch, &k, bufs[0], bufs[1], bufs[3]); /* a memo hit */
  assert_ptr_equal(op->roles[3].view.data, bufs[3]);
  assert_ptr_equal(op->roles[2].view.data, bufs[3]);
  float one = 1, zero = 0;
  double dzero = 0;
  assert_true(mpp_cudnn_scale_nonzero(&one, 0));
  assert_false(mpp_cudnn_scale_nonzero(&zero, 0));
  assert_false(mpp_cudnn_scale_nonzero(&dzero, 1 /* CUDNN_DATA_DOUBLE */));
  assert_false(mpp_cudnn_scale_nonzero(NULL, 0));
}

static void conv_backward_roles_are_named_after_their_tensors(void **state) {
  (void)state;
  mpp_tensor_desc x = nchw(0, 2, 3, 8, 8), y = nchw(0, 2, 4, 8, 8);
  mpp_tensor_desc w = {.dtype = 0, .nd = 4, .dims = {4, 3, 3, 3}};
  mpp_conv_desc c = {.pad = {1, 1}, .stride = {1, 1}, .dilation = {1, 1}};
  static char buf[64];
  mpp_op op;
  mpp_conv_decode(&op, "b", MPP_OP_CONV_BWD_DATA, &y, &w, &x, &c, buf, buf, buf);
  assert_string_equal(op.roles[0].name, "dy");
  assert_string_equal(op.roles[2].name, "dx");
  assert_false(op.roles[2].input);
  assert_int_equal(op.conv.c, 3); /* x is dx here */
  mpp_conv_decode(&op, "b", MPP_OP_CONV_BWD_FILTER, &x, &y, &w, &c, buf, buf, buf);
  assert_string_equal(op.roles[1].name, "dy");
  assert_string_equal(op.roles[2].name, "dw");
  assert_int_equal(op.m, 4);
  assert_int_equal(op.n, 27);
  assert_int_equal(op.k, 2 * 64);
}

static void packed_nhwc_tensor_is_scannable_and_padded_one_is_not(void **state) {
  (void)state;
  mpp_tensor_desc t = {.dtype = 0, .nd = 4, .dims = {2, 3, 4, 5}, .strides = {60, 1, 15, 3}};
  mpp_role r = {.unscannable = MPP_NS_COUNT, .present = true};
  mpp_conv_tensor_view(&r, &t, &r);
  assert_int_equal(r.unscannable, MPP_NS_COUNT);
  assert_int_equal(r.view.rows, 120);
  t.strides[0] = 64; /* padded batch stride */
  r.unscannable = MPP_NS_COUNT;
  mpp_conv_tensor_view(&r, &t, &r);
  assert_int_equal(r.unscannable, MPP_NS_LAYOUT);
}

/* --- sites, scans, caps, raw document --- */

static float host_a[16], host_b[16], host_d[16];

static void make_op(mpp_op *op, const char *api) {
  mpp_gemm_call g = mpp_fixture_gemm4(api, host_a, host_b, host_d);
  mpp_gemm_decode(op, &g, &mpp_fixture_host_ctx);
}

static void run_op(const char *api, bool ok) {
  mpp_op op;
  mpp_call c;
  make_op(&op, api);
  mpp_call_begin(&c, &op);
  for (int i = 0; i < 16; i++)
    host_d[i] = (float)i;
  mpp_call_end(&c, &op, ok);
}

static cJSON *render(void) {
  size_t len;
  char *s = mpp_raw_render(true, &len);
  assert_non_null(s);
  cJSON *doc = cJSON_Parse(s);
  free(s);
  assert_non_null(doc);
  return doc;
}

static cJSON *site0(cJSON *doc) {
  return cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "sites"), 0);
}

static double num(cJSON *o, const char *path) {
  char buf[128];
  strcpy(buf, path);
  for (char *k = strtok(buf, "."); k; k = strtok(NULL, "."))
    o = cJSON_GetObjectItem(o, k);
  assert_non_null(o);
  return cJSON_GetNumberValue(o);
}

static void same_op_in_the_same_layer_is_one_site(void **state) {
  (void)state;
  for (int i = 0; i < 16; i++)
    host_a[i] = host_b[i] = 1;
  run_op("api", true);
  run_op("api", true);
  cJSON *doc = render();
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites")), 1);
  cJSON *s = site0(doc);
  assert_int_equal(num(s, "calls"), 2);
  assert_int_equal(num(s, "scanned_calls"), 2);
  assert_int_equal(num(s, "tensors.A.count"), 32);
  assert_int_equal(num(s, "tensors.D.zeros"), 2);
  assert_null(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "tensors"), "C"));
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "events")), 2);
  cJSON_Delete(doc);
}

/* An op with more tensors than MPP_MAX_ROLES (a fused cuDNN graph with many
 * pointwise operands) scans the first ones and counts each one left out as
 * not_scanned roles_full, per call: what was not seen is said. */
static void tensors_beyond_the_roles_are_counted_not_scanned(void **state) {
  (void)state;
  for (int call = 0; call < 2; call++) {
    mpp_op op;
    make_op(&op, "roles");
    while (op.nroles < MPP_MAX_ROLES)
      assert_non_null(mpp_op_role(&op, "pw_b", true));
    assert_null(mpp_op_role(&op, "pw_b", true));
    assert_null(mpp_op_role(&op, "pw_b", true));
    mpp_call c;
    mpp_call_begin(&c, &op);
    mpp_call_end(&c, &op, true);
  }
  cJSON *doc = render();
  assert_int_equal(num(site0(doc), "not_scanned.roles_full"), 4);
  cJSON_Delete(doc);
}

static void ops_in_different_layers_are_different_sites(void **state) {
  (void)state;
  run_op("api", true);
  mpp_nvtx_push(NULL, "layer2");
  run_op("api", true);
  cJSON *doc = render();
  cJSON *sites = cJSON_GetObjectItem(doc, "sites");
  assert_int_equal(cJSON_GetArraySize(sites), 2);
  assert_string_equal(
      cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(sites, 1), "layer")), "layer2");
  cJSON_Delete(doc);
}

/* --- framework scopes (mpprof.h) --- */

static const char *site_str(cJSON *sites, int i, const char *key) {
  return cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(sites, i), key));
}

static void layer_ids_are_stable_per_name_and_class(void **state) {
  (void)state;
  int32_t a = mpprof_layer_id("enc.fc1", "Linear");
  assert_true(a >= 0);
  assert_int_equal(mpprof_layer_id("enc.fc1", "Linear"), a);
  assert_int_not_equal(mpprof_layer_id("enc.fc1", "Conv2d"), a);
  assert_int_not_equal(mpprof_layer_id("enc.fc2", "Linear"), a);
  assert_int_equal(mpprof_layer_id(NULL, "Linear"), -1);
}

static void a_scope_names_the_layer_instead_of_the_nvtx_path(void **state) {
  (void)state;
  mpp_nvtx_push(NULL, "outer");
  mpprof_scope_push(mpprof_layer_id("enc.fc1", "Linear"), MPPROF_SCOPE_FORWARD);
  run_op("api", true);
  mpprof_scope_pop();
  run_op("api", true);
  cJSON *doc = render();
  cJSON *sites = cJSON_GetObjectItem(doc, "sites");
  assert_int_equal(cJSON_GetArraySize(sites), 2);
  assert_string_equal(site_str(sites, 0, "layer"), "enc.fc1");
  assert_string_equal(site_str(sites, 0, "phase"), "forward");
  assert_string_equal(site_str(sites, 0, "module_class"), "Linear");
  assert_string_equal(site_str(sites, 1, "layer"), "outer");
  assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(sites, 1), "phase"));
  assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(sites, 1), "module_class"));
  cJSON_Delete(doc);
}

static void set_replaces_the_innermost_scope_and_phases_split_sites(void **state) {
  (void)state;
  int32_t fc1 = mpprof_layer_id("enc.fc1", "Linear"), fc2 = mpprof_layer_id("enc.fc2", "Linear");
  mpprof_scope_push(-1, MPPROF_SCOPE_BACKWARD); /* backward, no module yet: the NVTX path */
  run_op("api", true);
  mpprof_scope_set(fc2, MPPROF_SCOPE_BACKWARD);
  run_op("api", true);
  mpprof_scope_push(fc1, MPPROF_SCOPE_RECOMPUTE); /* nested: recomputation inside backward */
  run_op("api", true);
  mpprof_scope_pop();
  mpprof_scope_set(fc1, MPPROF_SCOPE_BACKWARD);
  run_op("api", true);
  mpprof_scope_pop();
  mpprof_scope_pop(); /* no scope open: a no-op */
  mpprof_scope_push(fc1, MPPROF_SCOPE_FORWARD);
  run_op("api", true);
  mpprof_scope_pop();
  cJSON *doc = render();
  cJSON *sites = cJSON_GetObjectItem(doc, "sites");
  assert_int_equal(cJSON_GetArraySize(sites), 5);
  const char *want[][2] = {{"", "backward"},
                           {"enc.fc2", "backward"},
                           {"enc.fc1", "recompute"},
                           {"enc.fc1", "backward"},
                           {"enc.fc1", "forward"}};
  for (int i = 0; i < 5; i++) {
    assert_string_equal(site_str(sites, i, "layer"), want[i][0]);
    assert_string_equal(site_str(sites, i, "phase"), want[i][1]);
  }
  cJSON_Delete(doc);
}

static void scope_ops_counts_the_innermost_scopes_own_ops(void **state) {
  (void)state;
  int32_t blk = mpprof_layer_id("blk", "Block"), fc = mpprof_layer_id("blk.fc", "Linear");
  assert_int_equal(mpprof_scope_ops(), 0); /* no scope open */
  mpprof_scope_push(blk, MPPROF_SCOPE_FORWARD);
  run_op("api", true);
  assert_int_equal(mpprof_scope_ops(), 1);
  mpprof_scope_push(fc, MPPROF_SCOPE_FORWARD);
  assert_int_equal(mpprof_scope_ops(), 0); /* a new scope starts at 0 */
  run_op("api", true);
  run_op("api", true);
  assert_int_equal(mpprof_scope_ops(), 2);
  mpprof_scope_pop();
  assert_int_equal(mpprof_scope_ops(), 1); /* the child's ops are not the parent's */
  mpprof_scope_set(fc, MPPROF_SCOPE_BACKWARD);
  assert_int_equal(mpprof_scope_ops(), 0); /* set opens a new scope in its place */
  mpprof_scope_pop();
  assert_int_equal(mpprof_scope_ops(), 0);
}

static cJSON *site_of(cJSON *doc, const char *api);

/* run_op with the GEMM's m changed (the key only; the data stay 4 x 4) in
 * NVTX range `layer`. */
static void run_op_shape(const char *layer, int64_t m) {
  mpp_op op;
  mpp_call c;
  make_op(&op, "api");
  op.m = m;
  op.site_memo = NULL; /* its decode's memo is of m = 4 */
  mpp_nvtx_push(NULL, layer);
  mpp_call_begin(&c, &op);
  mpp_call_end(&c, &op, true);
  mpp_nvtx_pop(NULL);
}

static cJSON *merged_site_of(cJSON *doc, const char *layer) {
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(doc, "sites")) {
    if (cJSON_IsTrue(cJSON_GetObjectItem(s, "shapes_merged")) &&
        !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "layer")), layer))
      return s;
  }
  fail_msg("no site of merged shapes in %s", layer);
  return NULL;
}

/* MPPROF_MAX_SITES 8 (a reserve of 2): the ninth shape and the ones after it
 * go to their layer's site of merged shapes, one per layer, with their
 * values' stats; nothing is left out, so the file is complete. */
static void past_the_site_cap_new_shapes_go_to_their_layers_site_of_merged_shapes(void **state) {
  (void)state;
  mpp_cfg.max_sites = 8;
  for (int m = 1; m <= 8; m++)
    run_op_shape("a", m);
  run_op_shape("a", 9);
  run_op_shape("a", 10);
  run_op_shape("a", 10);
  run_op_shape("b", 11);
  run_op_shape("a", 3); /* a shape with a site of its own still goes there */
  cJSON *doc = render();
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites")), 10);
  cJSON *a = merged_site_of(doc, "a"), *b = merged_site_of(doc, "b");
  assert_int_equal(num(a, "calls"), 3);
  assert_int_equal(num(b, "calls"), 1);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(a, "m"))); /* no invented shape */
  assert_null(cJSON_GetObjectItem(a, "lda"));
  assert_int_equal(num(a, "tensors.D.count"), 3 * 16); /* the stats of all three calls */
  assert_int_equal(num(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "sites"), 2), "calls"),
                   2); /* m = 3's own site */
  assert_int_equal(num(doc, "not_attributed"), 0);
  assert_int_equal(num(doc, "calls"), 13);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(doc, "incomplete")));
  cJSON_Delete(doc);
}

/* Past MPPROF_MAX_SITES and its reserve of sites of merged shapes (1 with a
 * cap of 1), a call of a new key is in no site: counted, and the file says
 * so. */
static void past_the_reserve_calls_are_not_attributed_and_the_file_incomplete(void **state) {
  (void)state;
  mpp_cfg.max_sites = 1;
  run_op("one", true);
  run_op("two", true); /* the reserve's one site: "two" with its shapes merged */
  run_op("three", true);
  run_op("three", true);
  cJSON *doc = render();
  assert_int_equal(num(doc, "not_attributed"), 2);
  assert_int_equal(num(doc, "calls"), 4);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "incomplete")));
  const char *why =
      cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "incomplete_reasons"), 0));
  assert_non_null(strstr(
      why,
      "max_sites (1) and the reserve of 1 sites of merged shapes reached: 2 ops not attributed"));
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(site_of(doc, "two"), "shapes_merged")));
  cJSON_Delete(doc);
}

static void event_cap_makes_the_raw_file_incomplete(void **state) {
  (void)state;
  mpp_cfg.max_events = 2;
  for (int i = 0; i < 3; i++)
    run_op("api", true);
  cJSON *doc = render();
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "events")), 2);
  assert_int_equal(num(site0(doc), "calls"), 3);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(doc, "incomplete")));
  cJSON_Delete(doc);
}

/* Events are kept in chunks (a small first one, then 2 MiB ones): across the
 * seams every event up to the cap is kept, in the order of its calls. */
static void events_keep_every_call_in_order_across_chunks(void **state) {
  (void)state;
  enum { CALLS = 120000, CAP = CALLS - 5 }; /* > 1024 + 2 * 2 MiB of 40-byte events */
  mpp_cfg.scan = MPP_SCAN_NONE;
  mpp_cfg.max_events = CAP;
  for (int i = 0; i < CALLS; i++)
    run_op("api", true);
  mpp_sites_lock();
  mpp_tables t;
  mpp_tables_get(&t, 0);
  assert_int_equal(t.nevents, CAP);
  assert_int_equal(t.events_dropped, CALLS - CAP);
  for (uint64_t i = 0; i < t.nevents; i++) {
    const mpp_event *e = mpp_tables_event(&t, i);
    assert_int_equal(e->site, 0);
    assert_int_equal(e->call, i);
  }
  mpp_sites_unlock();
}

static void sampling_scans_every_nth_call_of_a_site(void **state) {
  (void)state;
  mpp_cfg.sample = 2;
  for (int i = 0; i < 4; i++)
    run_op("api", true);
  cJSON *doc = render();
  cJSON *s = site0(doc);
  assert_int_equal(num(s, "calls"), 4);
  assert_int_equal(num(s, "scanned_calls"), 2);
  assert_int_equal(num(s, "not_scanned.sampled_out"), 2 * 3); /* A, B, D of two calls */
  assert_int_equal(num(s, "tensors.A.count"), 32);
  cJSON_Delete(doc);
}

static void scan_outputs_mode_scans_only_the_output(void **state) {
  (void)state;
  mpp_cfg.scan = MPP_SCAN_OUTPUTS;
  run_op("api", true);
  cJSON *doc = render();
  cJSON *t = cJSON_GetObjectItem(site0(doc), "tensors");
  assert_null(cJSON_GetObjectItem(t, "A"));
  assert_non_null(cJSON_GetObjectItem(t, "D"));
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "scan")), "outputs");
  cJSON_Delete(doc);
}

static void a_failed_call_is_counted_but_not_recorded(void **state) {
  (void)state;
  run_op("api", false);
  cJSON *doc = render();
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites")), 0);
  assert_int_equal(num(doc, "failed_calls"), 1);
  cJSON_Delete(doc);
}

/* --- several ops around one real call (mpp_calls: grouped GEMMs, cuDNN graphs) --- */

static void reserve_ops(mpp_calls *c, const char *const *apis, int n) {
  assert_true(mpp_calls_reserve(c, n, "a test call"));
  assert_int_equal(c->cap, n);
  for (int i = 0; i < n; i++)
    make_op(&c->ops[i], apis[i]);
  c->n = n;
}

static cJSON *site_of(cJSON *doc, const char *api) {
  cJSON *s;
  cJSON_ArrayForEach(s, cJSON_GetObjectItem(doc, "sites")) {
    if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "api")), api)) return s;
  }
  fail_msg("no site of %s", api);
  return NULL;
}

/* Under --sample auto, a multi-op call's ops of one site are sampled as one
 * call of that site, whatever order they come in: 100 calls of ops of the
 * sites a, b, a, c, b, a (interleaved) scan each site in the calls the
 * schedule takes (82 of 100), all of its ops of a call or none. */
static void a_multi_op_calls_ops_of_one_site_are_sampled_together(void **state) {
  (void)state;
  mpp_cfg.sample = MPP_SAMPLE_AUTO;
  static const char *const apis[] = {"sa", "sb", "sa", "sc", "sb", "sa"};
  int calls = 100, scanned = 0;
  for (int k = 0; k < calls; k++) {
    mpp_calls c = {0};
    reserve_ops(&c, apis, 6);
    mpp_calls_begin(&c);
    mpp_calls_end(&c, true);
    mpp_calls_release(&c);
    scanned += mpp_sample_scans(MPP_SAMPLE_AUTO, (uint64_t)k);
  }
  cJSON *doc = render();
  assert_int_equal(num(site_of(doc, "sa"), "scanned_calls"), 3 * scanned);
  assert_int_equal(num(site_of(doc, "sb"), "scanned_calls"), 2 * scanned);
  assert_int_equal(num(site_of(doc, "sc"), "scanned_calls"), scanned);
  assert_int_equal(num(site_of(doc, "sa"), "calls"), 3 * calls);
  cJSON_Delete(doc);
}

static void each_op_of_a_multi_op_call_is_recorded_at_its_own_site(void **state) {
  (void)state;
  static const char *const apis[] = {"group0", "group1", "group2"};
  mpp_calls c = {0};
  reserve_ops(&c, apis, 3);
  mpp_calls_begin(&c);
  mpp_calls_end(&c, true);
  mpp_calls_release(&c);
  cJSON *doc = render();
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites")), 3);
  for (int i = 0; i < 3; i++)
    assert_int_equal(num(site_of(doc, apis[i]), "calls"), 1);
  cJSON_Delete(doc);
}

static void a_failed_multi_op_call_counts_each_op_as_failed(void **state) {
  (void)state;
  static const char *const apis[] = {"group0", "group1"};
  mpp_calls c = {0};
  reserve_ops(&c, apis, 2);
  mpp_calls_begin(&c);
  mpp_calls_end(&c, false);
  mpp_calls_release(&c);
  cJSON *doc = render();
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites")), 0);
  assert_int_equal(num(doc, "failed_calls"), 2);
  cJSON_Delete(doc);
}

/* Heap bytes in use (mallinfo2: the main arena, the others, mmapped chunks). */
static size_t heap_in_use(void) {
  struct mallinfo2 m = mallinfo2();
  return m.uordblks + m.hblkhd;
}

/* Heap bytes a multi-op call of n ops, every input scanned on the host,
 * holds between its ops' begin and their end (the real call). */
static size_t held_during_multi_op_call(int n) {
  static const char *apis[1024];
  for (int i = 0; i < n; i++)
    apis[i] = "group";
  mpp_calls c = {0};
  reserve_ops(&c, apis, n);
  size_t before = heap_in_use();
  mpp_calls_begin(&c);
  size_t held = heap_in_use() - before;
  mpp_calls_end(&c, true);
  mpp_calls_release(&c);
  return held;
}

/* Open ops wait for the real call with their input scans packed (the head
 * of a stats record and the bins their values span), not in a 17 KB stats
 * record per scanned input: a 1024-group GEMM held 35 MB while it ran. */
static void an_open_multi_op_call_holds_far_less_than_a_stats_record_per_op(void **state) {
  (void)state;
#ifdef __SANITIZE_ADDRESS__
  skip(); /* ASan's allocator is not glibc's: mallinfo2 does not see it */
#endif
  for (int i = 0; i < 16; i++)
    host_a[i] = host_b[i] = (float)(i - 8);
  held_during_multi_op_call(256); /* the site exists and its ops' room is the thread's */
  /* ... its park too: the thread's, kept (no allocation per call) */
  assert_int_equal(held_during_multi_op_call(256), 0);
  /* a larger call grows it by what its packed scans take */
  size_t held = held_during_multi_op_call(1024);
  assert_true(held < 1024 * sizeof(mp_stats) / 8);
  cJSON *doc = render();
  cJSON *s = site_of(doc, "group");
  assert_int_equal(num(s, "scanned_calls"), 256 + 256 + 1024);
  assert_int_equal(num(s, "tensors.A.count"), (256 + 256 + 1024) * 16);
  assert_int_equal(num(s, "tensors.A.zeros"), 256 + 256 + 1024);
  cJSON_Delete(doc);
}

/* One multi-op execution of "conv" marked as autotuning. */
static void run_autotune_call(void) {
  static const char *const apis[] = {"conv"};
  mpp_calls c = {0};
  reserve_ops(&c, apis, 1);
  c.autotune = true;
  mpp_calls_begin(&c);
  mpp_calls_end(&c, true);
  mpp_calls_release(&c);
}

/* The process's calls are every call begun, in a site or not (the cap), and
 * the calls in flight at exit those begun and not ended, whether they ended
 * by a success, a failure or as autotuning (sites.c derives both from the
 * sites' counters instead of counting them on every call). */
static void process_calls_and_calls_in_flight_count_every_kind_of_call(void **state) {
  (void)state;
  mpp_cfg.max_sites = 2;
  run_op("one", true);
  run_op("one", true);
  run_op("one", false); /* failed */
  run_autotune_call();
  run_op("two", true); /* a third site: past the cap, "two" with its shapes merged */
  mpp_op op;
  mpp_call open;
  make_op(&op, "one");
  mpp_call_begin(&open, &op); /* still inside at "exit" */
  mpp_sites_note_in_flight();
  cJSON *doc = render();
  assert_int_equal(num(doc, "calls"), 6);
  assert_int_equal(num(doc, "failed_calls"), 1);
  assert_int_equal(num(site_of(doc, "one"), "calls"), 2);
  const cJSON *why = cJSON_GetObjectItem(doc, "incomplete_reasons");
  bool in_flight = false;
  for (int i = 0; i < cJSON_GetArraySize(why); i++)
    in_flight |= strstr(cJSON_GetStringValue(cJSON_GetArrayItem(why, i)),
                        "calls_in_flight: 1 calls") != NULL;
  assert_true(in_flight);
  cJSON_Delete(doc);
  mpp_call_end(&open, &op, true);
}

static void an_autotuning_multi_op_call_counts_autotune_calls_not_calls(void **state) {
  (void)state;
  run_autotune_call();
  cJSON *doc = render();
  cJSON *s = site_of(doc, "conv");
  assert_int_equal(num(s, "calls"), 0);
  assert_int_equal(num(s, "autotune_calls"), 1);
  cJSON_Delete(doc);
}

static void reserving_no_ops_gives_no_room_and_release_accepts_it(void **state) {
  (void)state;
  mpp_calls c = {0};
  assert_false(mpp_calls_reserve(&c, 0, "a test call"));
  assert_null(c.ops);
  mpp_calls_release(&c);
  assert_true(mpp_calls_reserve(&c, 2, "a test call"));
  assert_ptr_equal(c.calls, (void *)(c.ops + 2)); /* one block: ops, then calls */
  mpp_calls_release(&c);
  assert_null(c.ops);
  assert_int_equal(c.cap, 0);
}

static void raw_document_carries_schema_and_full_stats(void **state) {
  (void)state;
  run_op("cublasSgemm_v2", true);
  cJSON *doc = render();
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(doc, "schema")), "mpprof.raw/1");
  cJSON *d = cJSON_GetObjectItem(cJSON_GetObjectItem(site0(doc), "tensors"), "D");
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(d, "dtype")), "fp32");
  /* the binades of the values, 1 .. 15 (not fp32's whole -149 .. 127) */
  assert_int_equal(num(d, "exp_hist.lo"), 0);
  assert_int_equal(num(d, "exp_hist.hi"), 3);
  assert_int_equal(
      cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "exp_hist"), "counts")), 4);
  assert_int_equal(num(d, "max"), 15);
  assert_int_equal(num(d, "casts.fp16.normal"), 15);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(site0(doc), "transa")), "N");
  cJSON_Delete(doc);
}

static void rank_comes_from_the_first_launcher_variable_set(void **state) {
  (void)state;
  unsetenv("RANK");
  setenv("SLURM_PROCID", "5", 1);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  assert_int_equal(mpp_rank_from_env(), 3);
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("SLURM_PROCID");
  assert_int_equal(mpp_rank_from_env(), -1);
}

/* The world size is the one the launcher that gave the rank set beside it:
 * another launcher's, or one not above the rank, is none. */
static void world_size_comes_with_the_rank_of_the_same_launcher(void **state) {
  (void)state;
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  assert_int_equal(mpp_world_size_from_env(), 0);
  setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
  setenv("SLURM_NTASKS", "16", 1);
  assert_int_equal(mpp_world_size_from_env(), 8);
  setenv("RANK", "1", 1); /* RANK wins, and WORLD_SIZE is not set */
  assert_int_equal(mpp_world_size_from_env(), 0);
  setenv("WORLD_SIZE", "4", 1);
  assert_int_equal(mpp_world_size_from_env(), 4);
  setenv("WORLD_SIZE", "1", 1); /* not above the rank */
  assert_int_equal(mpp_world_size_from_env(), 0);
  setenv("WORLD_SIZE", "x", 1);
  assert_int_equal(mpp_world_size_from_env(), 0);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
  unsetenv("OMPI_COMM_WORLD_RANK");
  unsetenv("OMPI_COMM_WORLD_SIZE");
  unsetenv("SLURM_NTASKS");
}

/* The rank is read once, at activation, on the application's thread: a
 * checkpoint written later by mpprof's thread never calls getenv (which would
 * race with the application's setenv). */
static void the_raw_file_carries_the_rank_read_at_activation(void **state) {
  (void)state;
  mpp_cfg.rank = 3;
  mpp_cfg.world_size = 4;
  setenv("RANK", "9", 1);
  setenv("WORLD_SIZE", "16", 1);
  cJSON *doc = render();
  assert_int_equal(num(doc, "rank"), 3);
  assert_int_equal(num(doc, "world_size"), 4);
  cJSON_Delete(doc);
  mpp_cfg.rank = -1;
  mpp_cfg.world_size = 0;
  doc = render();
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "rank")));
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "world_size")));
  cJSON_Delete(doc);
  unsetenv("RANK");
  unsetenv("WORLD_SIZE");
}

static void json_writer_escapes_strings_and_writes_nan_as_null(void **state) {
  (void)state;
  mpp_jw w;
  mpp_jw_init(&w);
  mpp_jw_obj(&w);
  mpp_jw_key(&w, "s");
  mpp_jw_str(&w, "a\"b\\c\n\x01");
  mpp_jw_key(&w, "x");
  mpp_jw_double(&w, 0.0 / 0.0);
  mpp_jw_key(&w, "y");
  mpp_jw_double(&w, 0.1);
  mpp_jw_obj_end(&w);
  assert_string_equal(w.buf,
                      "{\"s\":\"a\\\"b\\\\c\\n\\u0001\",\"x\":null,\"y\":0.10000000000000001}");
  mpp_jw_free(&w);
}

static void json_writer_replaces_bytes_that_are_not_utf8(void **state) {
  (void)state;
  mpp_jw w;
  mpp_jw_init(&w);
  /* é, a stray byte, a cut sequence, €, an encoded surrogate */
  mpp_jw_str(&w, "a"
                 "\xc3\xa9"
                 "b"
                 "\xff"
                 "\xc3"
                 "("
                 "\xe2\x82\xac"
                 "\xed\xa0\x80");
  assert_string_equal(w.buf, "\"a"
                             "\xc3\xa9"
                             "b"
                             "?"
                             "?"
                             "("
                             "\xe2\x82\xac"
                             "?"
                             "?"
                             "?"
                             "\"");
  mpp_jw_free(&w);
}

/* --- the training-state protocol (NVTX domain "mpprof", mpprof.h) --- */

static nvtxDomainMarkEx_impl_fntype domain_mark(void) {
  memset(core2_slots, 0, sizeof core2_slots);
  assert_int_equal(InitializeInjectionNvtx2(get_export_table), 1);
  assert_non_null(core2_slots[NVTX_CBID_CORE2_DomainMarkEx]);
  return (nvtxDomainMarkEx_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainMarkEx];
}

static nvtxDomainHandle_t domain(const char *name) {
  return ((nvtxDomainCreateA_impl_fntype)core2_slots[NVTX_CBID_CORE2_DomainCreateA])(name);
}

static nvtxEventAttributes_t mark_attr(const char *msg, int payload_type) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = msg;
  a.payloadType = payload_type;
  return a;
}

static void mark_scale(nvtxDomainHandle_t d, double s) {
  nvtxEventAttributes_t a = mark_attr("loss_scale", NVTX_PAYLOAD_TYPE_DOUBLE);
  a.payload.dValue = s;
  domain_mark()(d, &a);
}

static void mark_u64(nvtxDomainHandle_t d, const char *msg, uint64_t n) {
  nvtxEventAttributes_t a = mark_attr(msg, NVTX_PAYLOAD_TYPE_UNSIGNED_INT64);
  a.payload.ullValue = n;
  domain_mark()(d, &a);
}

static void *mark_scale_1024(void *d) {
  mark_scale(d, 1024);
  return NULL;
}

static double site_scale(cJSON *doc, int i) {
  cJSON *v =
      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "sites"), i), "loss_scale");
  assert_non_null(v);
  return cJSON_IsNull(v) ? 0 : cJSON_GetNumberValue(v);
}

static void loss_scale_mark_from_another_thread_applies_to_later_calls(void **state) {
  (void)state;
  domain_mark();
  nvtxDomainHandle_t d = domain("mpprof");
  run_op("api", true); /* before any mark: no scale declared */
  pthread_t t;
  pthread_create(&t, NULL, mark_scale_1024, d);
  pthread_join(t, NULL);
  run_op("api", true);
  cJSON *doc = render();
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "sites")), 2);
  assert_true(site_scale(doc, 0) == 0);
  assert_true(site_scale(doc, 1) == 1024);
  assert_true(num(doc, "training.loss_scale") == 1024);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "training"),
                                                               "loss_scale_source")),
                      "marks");
  cJSON_Delete(doc);
}

static void marks_of_other_domains_and_messages_change_nothing(void **state) {
  (void)state;
  domain_mark();
  mark_scale(domain("other"), 8);
  mark_scale(NULL, 8);
  nvtxDomainHandle_t d = domain("mpprof");
  nvtxEventAttributes_t a = mark_attr("lossscale", NVTX_PAYLOAD_TYPE_DOUBLE);
  a.payload.dValue = 8;
  domain_mark()(d, &a);
  assert_true(mpp_train_scale() == 0);
  mark_scale(d, -1); /* invalid: counted, ignored */
  mark_scale(d, 0);
  mark_scale(d, 1e39);         /* beyond float32: no float loss carries it */
  mpprof_loss_scale(0x1p-150); /* below float32's smallest */
  assert_true(mpp_train_scale() == 0);
  cJSON *doc = render();
  assert_int_equal(num(doc, "training.invalid_marks"), 4);
  cJSON_Delete(doc);
}

static void step_marks_give_per_step_scales_and_skipped_steps(void **state) {
  (void)state;
  domain_mark();
  nvtxDomainHandle_t d = domain("mpprof");
  mpprof_loss_scale(65536); /* the exported twin of the mark */
  for (uint64_t n = 10; n < 13; n++)
    mark_u64(d, "step", n);
  mark_u64(d, "step_skipped", 12);
  mark_scale(d, 32768);
  mpprof_step(13);
  uint64_t step;
  assert_true(mpp_train_step(&step));
  assert_int_equal(step, 13);
  cJSON *doc = render();
  assert_int_equal(num(doc, "training.steps.marked"), 4);
  assert_int_equal(num(doc, "training.steps.first"), 10);
  assert_int_equal(num(doc, "training.skipped_steps.count"), 1);
  cJSON *seg = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "training"), "step_scales");
  assert_int_equal(cJSON_GetArraySize(seg), 2);
  assert_int_equal(num(cJSON_GetArrayItem(seg, 0), "last"), 12);
  assert_true(num(cJSON_GetArrayItem(seg, 0), "scale") == 65536);
  assert_int_equal(num(cJSON_GetArrayItem(seg, 1), "first"), 13);
  assert_true(num(cJSON_GetArrayItem(seg, 1), "scale") == 32768);
  cJSON_Delete(doc);
}

/* A GradScaler declares its scale at its first scale(loss), after step 0's
 * forward: the steps marked before any scale keep none, but the one in force
 * takes the first scale declared in it (it was listed with none). */
static void a_step_marked_before_any_scale_takes_the_first_declared_in_it(void **state) {
  (void)state;
  mpprof_step(0);
  mpprof_step(1);
  mpprof_loss_scale(65536); /* during step 1 */
  mpprof_step(2);
  mpprof_loss_scale(32768); /* step 2 had one: it keeps it */
  mpprof_step(3);
  cJSON *doc = render();
  cJSON *seg = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "training"), "step_scales");
  assert_int_equal(cJSON_GetArraySize(seg), 3);
  assert_int_equal(num(cJSON_GetArrayItem(seg, 0), "last"), 0);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetArrayItem(seg, 0), "scale")));
  assert_int_equal(num(cJSON_GetArrayItem(seg, 1), "first"), 1);
  assert_int_equal(num(cJSON_GetArrayItem(seg, 1), "last"), 2);
  assert_true(num(cJSON_GetArrayItem(seg, 1), "scale") == 65536);
  assert_int_equal(num(cJSON_GetArrayItem(seg, 2), "first"), 3);
  assert_true(num(cJSON_GetArrayItem(seg, 2), "scale") == 32768);
  cJSON_Delete(doc);
}

static void run_op_writing(float d0) {
  mpp_op op;
  mpp_call c;
  make_op(&op, "api");
  mpp_call_begin(&c, &op);
  for (int i = 0; i < 16; i++)
    host_d[i] = i ? (float)i : d0;
  mpp_call_end(&c, &op, true);
}

static void
first_nonfinite_is_the_first_call_with_finite_inputs_and_nonfinite_output(void **state) {
  (void)state;
  for (int i = 0; i < 16; i++)
    host_a[i] = host_b[i] = 1;
  mpprof_step(4);
  run_op_writing(0);
  mpprof_step(5);
  run_op_writing(INFINITY); /* the first: finite inputs, +Inf out */
  host_a[3] = NAN;
  run_op_writing(NAN); /* NaN in, NaN out: not a producer */
  host_a[3] = 1;
  run_op_writing(-INFINITY); /* later */
  cJSON *doc = render();
  cJSON *nf = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "training"), "first_nonfinite");
  assert_int_equal(num(nf, "call_index"), 1);
  assert_int_equal(num(nf, "step"), 5);
  assert_int_equal(num(nf, "pos_infs"), 1);
  assert_int_equal(num(nf, "neg_infs"), 0);
  assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(nf, "role")), "D");
  cJSON_Delete(doc);
}

/* --- settings --- */

/* libmpprof reads each MPPROF_* setting through its row (profiler/settings.c):
 * a value in range is used, one outside (or not a number) is ignored for the
 * row's default, exactly as the launcher's check says it would be. */
static void settings_outside_their_rows_fall_back_to_the_defaults(void **state) {
  (void)state;
  __typeof__(mpp_cfg) saved = mpp_cfg;
  const char *vars[] = {"MPPROF_MAX_SITES",      "MPPROF_SAMPLE",        "MPPROF_CHECKPOINT_S",
                        "MPPROF_SHADOW_MAX_REL", "MPPROF_SHADOW_MAX_MB", "MPPROF_SCAN",
                        "MPPROF_LOSS_SCALE"};
  const char *good[] = {"2048", "7", "0.5", "0.25", "1048576", "outputs", "2^10"};
  const char *bad[] = {"0", "every", "nan", "0", "1048577", "some", "-1"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const mpp_setting *row = mpp_setting_find(vars[i]);
    assert_non_null(row);
    assert_true(mpp_setting_ok(row, good[i]));
    assert_false(mpp_setting_ok(row, bad[i]));
  }
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    setenv(vars[i], good[i], 1);
  mpp_config_read();
  assert_int_equal(mpp_cfg.max_sites, 2048);
  assert_int_equal(mpp_cfg.sample, 7);
  assert_true(mpp_cfg.checkpoint_s == 0.5);
  assert_true(mpp_cfg.shadow_max_rel == 0.25);
  assert_int_equal(mpp_cfg.shadow_max_mb, 1048576);
  assert_int_equal(mpp_cfg.scan, MPP_SCAN_OUTPUTS);
  assert_true(mpp_cfg.loss_scale == 1024);
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    setenv(vars[i], bad[i], 1);
  mpp_config_read();
  assert_int_equal(mpp_cfg.max_sites, 4096);
  assert_int_equal(mpp_cfg.sample, MPP_SAMPLE_AUTO);
  assert_true(mpp_cfg.checkpoint_s == 10);
  assert_true(mpp_cfg.shadow_max_rel == 0);
  assert_int_equal(mpp_cfg.shadow_max_mb, MPP_SET_SHADOW_MB_DEFAULT);
  assert_int_equal(mpp_cfg.scan, MPP_SCAN_ALL);
  assert_true(mpp_cfg.loss_scale == 0);
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    unsetenv(vars[i]);
  mpp_cfg = saved;
}

/* A typo of a variable's name is found (the launcher's warning names it). */
static void a_misspelt_variable_names_the_one_meant(void **state) {
  (void)state;
  assert_string_equal(mpp_setting_nearest("MPPROF_SAMPLES"), "MPPROF_SAMPLE");
  assert_string_equal(mpp_setting_nearest("MPPROF_SHADOW_MAXMB"), "MPPROF_SHADOW_MAX_MB");
  assert_null(mpp_setting_nearest("MPPROF_SOMETHING_ELSE"));
  assert_null(mpp_setting_find("MPPROF_SAMPLES"));
}

/* Every cublasMath_t of cublas_api.h has its name in the raw file (the
 * BF16x9 and fixed-point emulation modes read "UNKNOWN"). */
static void every_math_mode_of_the_header_is_named(void **state) {
  (void)state;
  char buf[96];
  assert_string_equal(mpp_math_mode_name(CUBLAS_TF32_TENSOR_OP_MATH, buf, sizeof buf),
                      "TF32_TENSOR_OP");
  assert_string_equal(mpp_math_mode_name(CUBLAS_FP32_EMULATED_BF16X9_MATH, buf, sizeof buf),
                      "FP32_EMULATED_BF16X9");
  assert_string_equal(mpp_math_mode_name(CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH |
                                             CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION,
                                         buf, sizeof buf),
                      "FP64_EMULATED_FIXEDPOINT+DISALLOW_REDUCED_PRECISION_REDUCTION");
  assert_string_equal(mpp_math_mode_name(5, buf, sizeof buf), "UNKNOWN");
  assert_string_equal(mpp_math_mode_name(15, buf, sizeof buf), "UNKNOWN");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(every_math_mode_of_the_header_is_named),
      cmocka_unit_test_setup(layer_is_empty_without_ranges, reset_all),
      cmocka_unit_test_setup(settings_outside_their_rows_fall_back_to_the_defaults, reset_all),
      cmocka_unit_test(a_misspelt_variable_names_the_one_meant),
      cmocka_unit_test_setup(layer_ids_are_stable_per_name_and_class, reset_all),
      cmocka_unit_test_setup(a_scope_names_the_layer_instead_of_the_nvtx_path, reset_all),
      cmocka_unit_test_setup(set_replaces_the_innermost_scope_and_phases_split_sites, reset_all),
      cmocka_unit_test_setup(nested_ranges_join_with_slash, reset_all),
      cmocka_unit_test_setup(pop_restores_the_parent_layer, reset_all),
      cmocka_unit_test_setup(pop_without_an_open_range_returns_negative, reset_all),
      cmocka_unit_test_setup(domain_pop_removes_that_domains_innermost_range, reset_all),
      cmocka_unit_test_setup(removing_the_outermost_range_keeps_the_inner_ones, reset_all),
      cmocka_unit_test_setup(ranges_beyond_64_levels_pop_back_to_the_same_layer, reset_all),
      cmocka_unit_test_setup(a_long_range_name_leaves_room_for_the_ranges_inside_it, reset_all),
      cmocka_unit_test_setup(a_range_name_of_255_bytes_is_not_marked_cut, reset_all),
      cmocka_unit_test_setup(a_range_cut_by_the_full_layer_path_is_marked_cut, reset_all),
      cmocka_unit_test_setup(a_cut_name_keeps_whole_characters, reset_all),
      cmocka_unit_test_setup(ranges_are_per_thread, reset_all),
      cmocka_unit_test_setup(threads_that_end_leave_their_range_buffer_to_the_next, reset_all),
      cmocka_unit_test_setup(injection_fills_core_and_core2_callbacks, reset_all),
      cmocka_unit_test_setup(wide_names_are_utf8, reset_all),
      cmocka_unit_test_setup(injection_fills_every_nvtx_copy_that_asks, reset_all),
      cmocka_unit_test(transposed_a_is_viewed_as_stored_k_by_m),
      cmocka_unit_test(c_is_an_input_role_only_when_beta_is_nonzero),
      cmocka_unit_test(device_beta_that_cannot_be_read_drops_c),
      cmocka_unit_test(zero_alpha_drops_pointer_array_a_and_b),
      cmocka_unit_test(legacy_cuda_r_32f_compute_type_reads_as_32F),
      cmocka_unit_test(dtypes_of_all_four_operands_are_named),
      cmocka_unit_test(complex_operands_are_marked_unscannable),
      cmocka_unit_test(strided_batch_with_zero_stride_is_one_matrix),
      cmocka_unit_test(pointer_alignment_is_the_largest_power_of_two_up_to_256),
      cmocka_unit_test(lt_m_n_come_from_d_and_k_from_a_and_transa),
      cmocka_unit_test(lt_row_major_layout_is_viewed_transposed),
      cmocka_unit_test(lt_fp8_scale_and_amax_pointers_are_flagged),
      cmocka_unit_test(lt_fp8_aux_scale_and_amax_are_read_as_ds),
      cmocka_unit_test(lt_beta_zero_pointer_mode_drops_c),
      cmocka_unit_test(a_blending_convolution_reads_the_output_first),
      cmocka_unit_test(lt_vector_alpha_and_beta_are_read_whole),
      cmocka_unit_test(lt_zero_alpha_reads_neither_a_nor_b),
      cmocka_unit_test(lt_bias_is_a_role_of_its_own),
      cmocka_unit_test(lt_gelu_aux_is_a_role_of_its_own),
      cmocka_unit_test(lt_alpha_device_vector_is_never_read),
      cmocka_unit_test(lt_epilogues_map_to_what_shadow_execution_applies),
      cmocka_unit_test(conv_forward_has_its_implicit_gemm_shape),
      cmocka_unit_test(conv_backward_roles_are_named_after_their_tensors),
      cmocka_unit_test(packed_nhwc_tensor_is_scannable_and_padded_one_is_not),
      cmocka_unit_test_setup(same_op_in_the_same_layer_is_one_site, reset_all),
      cmocka_unit_test_setup(each_op_of_a_multi_op_call_is_recorded_at_its_own_site, reset_all),
      cmocka_unit_test_setup(a_multi_op_calls_ops_of_one_site_are_sampled_together, reset_all),
      cmocka_unit_test_setup(a_failed_multi_op_call_counts_each_op_as_failed, reset_all),
      cmocka_unit_test_setup(an_open_multi_op_call_holds_far_less_than_a_stats_record_per_op,
                             reset_all),
      cmocka_unit_test_setup(an_autotuning_multi_op_call_counts_autotune_calls_not_calls,
                             reset_all),
      cmocka_unit_test_setup(reserving_no_ops_gives_no_room_and_release_accepts_it, reset_all),
      cmocka_unit_test_setup(tensors_beyond_the_roles_are_counted_not_scanned, reset_all),
      cmocka_unit_test_setup(ops_in_different_layers_are_different_sites, reset_all),
      cmocka_unit_test_setup(scope_ops_counts_the_innermost_scopes_own_ops, reset_all),
      cmocka_unit_test_setup(past_the_site_cap_new_shapes_go_to_their_layers_site_of_merged_shapes,
                             reset_all),
      cmocka_unit_test_setup(past_the_reserve_calls_are_not_attributed_and_the_file_incomplete,
                             reset_all),
      cmocka_unit_test_setup(process_calls_and_calls_in_flight_count_every_kind_of_call, reset_all),
      cmocka_unit_test_setup(event_cap_makes_the_raw_file_incomplete, reset_all),
      cmocka_unit_test_setup(events_keep_every_call_in_order_across_chunks, reset_all),
      cmocka_unit_test_setup(sampling_scans_every_nth_call_of_a_site, reset_all),
      cmocka_unit_test_setup(scan_outputs_mode_scans_only_the_output, reset_all),
      cmocka_unit_test_setup(a_failed_call_is_counted_but_not_recorded, reset_all),
      cmocka_unit_test_setup(raw_document_carries_schema_and_full_stats, reset_all),
      cmocka_unit_test_setup(rank_comes_from_the_first_launcher_variable_set, reset_all),
      cmocka_unit_test(world_size_comes_with_the_rank_of_the_same_launcher),
      cmocka_unit_test_setup(the_raw_file_carries_the_rank_read_at_activation, reset_all),
      cmocka_unit_test_setup(loss_scale_mark_from_another_thread_applies_to_later_calls, reset_all),
      cmocka_unit_test_setup(marks_of_other_domains_and_messages_change_nothing, reset_all),
      cmocka_unit_test_setup(step_marks_give_per_step_scales_and_skipped_steps, reset_all),
      cmocka_unit_test_setup(a_step_marked_before_any_scale_takes_the_first_declared_in_it,
                             reset_all),
      cmocka_unit_test_setup(
          first_nonfinite_is_the_first_call_with_finite_inputs_and_nonfinite_output, reset_all),
      cmocka_unit_test(json_writer_escapes_strings_and_writes_nan_as_null),
      cmocka_unit_test(json_writer_replaces_bytes_that_are_not_utf8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
