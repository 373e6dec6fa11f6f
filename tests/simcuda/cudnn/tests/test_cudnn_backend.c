/* The cuDNN backend (graph) API of simcuda's libcudnn.so.9: graphs of one
 * convolution (forward, backward data, backward filter) or one matmul built,
 * planned through the heuristics and executed against a naive reference;
 * the engines the heuristics offer; the read-back quirks of the real library
 * (finalized variant packs and graphs do not give back ids, pointers or
 * operations; operands come back as internal copies); and refusals. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cudnn.h>

#include "cudnn_test_util.h"

#define D CUDNN_TYPE_BACKEND_DESCRIPTOR

static cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t type) {
  cudnnBackendDescriptor_t d = NULL;
  assert_int_equal(cudnnBackendCreateDescriptor(type, &d), CUDNN_STATUS_SUCCESS);
  return d;
}

static void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a,
                cudnnBackendAttributeType_t t, int64_t n, const void *v) {
  assert_int_equal(cudnnBackendSetAttribute(d, a, t, n, v), CUDNN_STATUS_SUCCESS);
}

static void finalize(cudnnBackendDescriptor_t d) {
  assert_int_equal(cudnnBackendFinalize(d), CUDNN_STATUS_SUCCESS);
}

/* A packed (row-major) tensor descriptor, unfinalized so tests can alter it. */
static cudnnBackendDescriptor_t tensor_unfinalized(cudnnDataType_t dt, int nb, const int64_t *dims,
                                                   int64_t uid) {
  int64_t strides[8], s = 1, align = 16;
  for (int i = nb - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i];
  }
  cudnnBackendDescriptor_t t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nb, dims);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nb, strides);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  return t;
}

static cudnnBackendDescriptor_t tensor(cudnnDataType_t dt, int nb, const int64_t *dims,
                                       int64_t uid) {
  cudnnBackendDescriptor_t t = tensor_unfinalized(dt, nb, dims, uid);
  finalize(t);
  return t;
}

static cudnnBackendDescriptor_t conv_desc(const ref_conv *g) {
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = g->flip ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION;
  int64_t spatial = 2, pad[2] = {g->pad_h, g->pad_w}, str[2] = {g->str_h, g->str_w},
          dil[2] = {g->dil_h, g->dil_w};
  cudnnBackendDescriptor_t c = create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
  set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str);
  set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
  finalize(c);
  return c;
}

enum which { FPROP, DGRAD, WGRAD };
enum { UID_X = 'x', UID_W = 'w', UID_Y = 'y' };

static const cudnnBackendDescriptorType_t op_types[3] = {
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
/* Attribute ids of X, W, Y, CONV_DESC, ALPHA, BETA per operation. */
static const cudnnBackendAttributeName_t op_attrs[3][6] = {
    {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
    {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
     CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};

/* A finalized single-op graph. Tensor descriptors are destroyed right after
 * the operation is built, as frontends do. */
static cudnnBackendDescriptor_t conv_graph(cudnnHandle_t h, enum which op, const ref_conv *g,
                                           cudnnDataType_t dt, float alpha, double beta) {
  int64_t xd[4] = {g->n, g->c, g->h, g->w}, wd[4] = {g->k, g->c / g->groups, g->r, g->s},
          yd[4] = {g->n, g->k, ref_out_h(g), ref_out_w(g)};
  cudnnBackendDescriptor_t x = tensor(dt, 4, xd, UID_X), w = tensor(dt, 4, wd, UID_W),
                           y = tensor(dt, 4, yd, UID_Y), c = conv_desc(g);
  cudnnBackendDescriptor_t o = create(op_types[op]);
  set(o, op_attrs[op][0], D, 1, &x);
  set(o, op_attrs[op][1], D, 1, &w);
  set(o, op_attrs[op][2], D, 1, &y);
  set(o, op_attrs[op][3], D, 1, &c);
  set(o, op_attrs[op][4], CUDNN_TYPE_FLOAT, 1, &alpha);
  set(o, op_attrs[op][5], CUDNN_TYPE_DOUBLE, 1, &beta);
  finalize(o);
  cudnnBackendDestroyDescriptor(x);
  cudnnBackendDestroyDescriptor(w);
  cudnnBackendDestroyDescriptor(y);
  cudnnBackendDestroyDescriptor(c);
  cudnnBackendDescriptor_t graph = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, &o);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  finalize(graph);
  cudnnBackendDestroyDescriptor(o);
  return graph;
}

/* Engine global indices the heuristics offer, in order. */
/* cudnn-frontend asks for a count with a NULL array and a non-zero requested count. */
static void a_null_array_is_a_count_query(void **state) {
  (void)state;
  int64_t dims[4] = {2, 3, 4, 5};
  cudnnBackendDescriptor_t t = tensor(CUDNN_DATA_FLOAT, 4, dims, 7);
  int64_t count = -1;
  assert_int_equal(
      cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 8, &count, NULL),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(count, 4);
  assert_int_equal(
      cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 8, NULL, NULL),
      CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  cudnnBackendDestroyDescriptor(t);
}

static int heuristics(cudnnBackendDescriptor_t graph, cudnnBackendHeurMode_t mode,
                      int64_t ret_index[2]) {
  cudnnBackendDescriptor_t heur = create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, D, 1, &graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  finalize(heur);
  int64_t count = -1;
  assert_int_equal(
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, 0, &count, NULL),
      CUDNN_STATUS_SUCCESS);
  assert_true(count >= 0 && count <= 2);
  cudnnBackendDescriptor_t cfgs[2];
  for (int64_t i = 0; i < count; i++)
    cfgs[i] = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  assert_int_equal(
      cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, count, &count, cfgs),
      CUDNN_STATUS_SUCCESS);
  for (int64_t i = 0; i < count; i++) {
    cudnnBackendDescriptor_t engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t n = 0;
    assert_int_equal(
        cudnnBackendGetAttribute(cfgs[i], CUDNN_ATTR_ENGINECFG_ENGINE, D, 1, &n, &engine),
        CUDNN_STATUS_SUCCESS);
    assert_int_equal(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                              CUDNN_TYPE_INT64, 1, &n, &ret_index[i]),
                     CUDNN_STATUS_SUCCESS);
    cudnnBackendDestroyDescriptor(engine);
    cudnnBackendDestroyDescriptor(cfgs[i]);
  }
  cudnnBackendDestroyDescriptor(heur);
  return (int)count;
}

/* Plan for engine `index` (built by hand, as a frontend's fallback list does). */
static cudnnStatus_t try_plan(cudnnHandle_t h, cudnnBackendDescriptor_t graph, int64_t index,
                              cudnnBackendDescriptor_t *ret_plan) {
  cudnnBackendDescriptor_t engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  set(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, D, 1, &graph);
  set(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index);
  cudnnStatus_t st = cudnnBackendFinalize(engine);
  if (st != CUDNN_STATUS_SUCCESS) {
    cudnnBackendDestroyDescriptor(engine);
    return st;
  }
  cudnnBackendDescriptor_t cfg = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  set(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, D, 1, &engine);
  finalize(cfg);
  cudnnBackendDescriptor_t plan = create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D, 1, &cfg);
  finalize(plan);
  cudnnBackendDestroyDescriptor(cfg);
  cudnnBackendDestroyDescriptor(engine);
  *ret_plan = plan;
  return CUDNN_STATUS_SUCCESS;
}

static cudnnBackendDescriptor_t variant_pack(int n, const int64_t *uids, void *const *ptrs) {
  cudnnBackendDescriptor_t vp = create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  void *ws = NULL;
  set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
  set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
  set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  finalize(vp);
  return vp;
}

static const ref_conv odd = {.n = 2,
                             .c = 8,
                             .h = 7,
                             .w = 6,
                             .k = 8,
                             .r = 3,
                             .s = 2,
                             .groups = 1,
                             .pad_h = 1,
                             .pad_w = 2,
                             .str_h = 2,
                             .str_w = 1,
                             .dil_h = 1,
                             .dil_w = 2};

/* Build, plan on engine `index`, execute and compare one convolution. */
static void check_backend_conv(enum which op, const ref_conv *g, int dt, int64_t index, float alpha,
                               double beta) {
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t graph = conv_graph(h, op, g, (cudnnDataType_t)dt, alpha, beta);
  cudnnBackendDescriptor_t plan;
  assert_int_equal(try_plan(h, graph, index, &plan), CUDNN_STATUS_SUCCESS);
  size_t nx = ref_x_count(g), nw = ref_w_count(g), ny = ref_y_count(g);
  double *x = random_ints(nx, 21, -20, 20), *w = random_ints(nw, 22, -20, 20);
  double *y = random_ints(ny, 23, -20, 20);
  size_t n_out = op == FPROP ? ny : op == DGRAD ? nx : nw;
  double *old = random_ints(n_out, 24, -3, 3);
  void *xb = to_dtype(op == DGRAD ? old : x, nx, dt), *wb = to_dtype(op == WGRAD ? old : w, nw, dt);
  void *yb = to_dtype(op == FPROP ? old : y, ny, dt);
  int64_t uids[3] = {UID_Y, UID_X, UID_W};
  void *ptrs[3] = {yb, xb, wb};
  cudnnBackendDescriptor_t vp = variant_pack(3, uids, ptrs);
  sink_reset();
  assert_int_equal(cudnnBackendExecute(h, plan, vp), CUDNN_STATUS_SUCCESS);
  assert_int_equal(sink_count, 1);
  double *ref = op == FPROP   ? ref_fprop(g, x, w)
                : op == DGRAD ? ref_dgrad(g, y, w)
                              : ref_wgrad(g, x, y);
  const void *out = op == FPROP ? yb : op == DGRAD ? xb : wb;
  for (size_t i = 0; i < n_out; i++) {
    double want = rne_dtype(alpha * ref[i] + beta * old[i], dt), have = from_dtype(out, i, dt);
    if (have != want) fail_msg("op %d element %zu: got %.9g want %.9g", op, i, have, want);
  }
  free(x), free(w), free(y), free(old), free(xb), free(wb), free(yb), free(ref);
  cudnnBackendDestroyDescriptor(vp);
  cudnnBackendDestroyDescriptor(plan);
  cudnnBackendDestroyDescriptor(graph);
  cudnnDestroy(h);
}

static void forward_graph_matches_reference(void **state) {
  (void)state;
  check_backend_conv(FPROP, &odd, CUDNN_DATA_FLOAT, 1, 1.0f, 0.0);
  check_backend_conv(FPROP, &odd, CUDNN_DATA_HALF, 0, 1.0f, 0.0);
  ref_conv g = odd;
  g.flip = 1;
  check_backend_conv(FPROP, &g, CUDNN_DATA_BFLOAT16, 0, 2.0f, 1.0);
}

static void backward_data_graph_matches_reference(void **state) {
  (void)state;
  check_backend_conv(DGRAD, &odd, CUDNN_DATA_FLOAT, 1, 1.0f, 0.0);
  check_backend_conv(DGRAD, &odd, CUDNN_DATA_HALF, 0, 0.5f, 2.0);
}

static void backward_filter_graph_matches_reference(void **state) {
  (void)state;
  check_backend_conv(WGRAD, &odd, CUDNN_DATA_FLOAT, 1, 1.0f, 0.0);
  check_backend_conv(WGRAD, &odd, CUDNN_DATA_HALF, 0, 1.0f, 1.0);
}

static void heuristics_offer_the_tensor_core_engine_first(void **state) {
  (void)state;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  int64_t idx[2];
  cudnnBackendDescriptor_t graph = conv_graph(h, FPROP, &odd, CUDNN_DATA_FLOAT, 1.0f, 0.0);
  assert_int_equal(heuristics(graph, CUDNN_HEUR_MODE_A, idx), 2);
  assert_int_equal(idx[0], 0);
  assert_int_equal(idx[1], 1);
  assert_int_equal(heuristics(graph, CUDNN_HEUR_MODE_FALLBACK, idx), 2);
  assert_int_equal(idx[0], 1);
  int64_t count = 0, engines = 0;
  assert_int_equal(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                            CUDNN_TYPE_INT64, 1, &count, &engines),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(engines, 2);
  /* Engine 0 says Tensor Core; engine 1 has no numerical notes. */
  for (int64_t i = 0; i < 2; i++) {
    cudnnBackendDescriptor_t e = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    set(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, D, 1, &graph);
    set(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &i);
    finalize(e);
    cudnnBackendNumericalNote_t notes[4];
    assert_int_equal(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                              CUDNN_TYPE_NUMERICAL_NOTE, 4, &count, notes),
                     CUDNN_STATUS_SUCCESS);
    assert_int_equal(count, i == 0 ? 1 : 0);
    if (i == 0) assert_int_equal(notes[0], CUDNN_NUMERICAL_NOTE_TENSOR_CORE);
    cudnnBackendDestroyDescriptor(e);
  }
  cudnnBackendDestroyDescriptor(graph);
  /* Channels that are not multiples of 8: no Tensor Core engine. */
  ref_conv g = odd;
  g.c = 3;
  graph = conv_graph(h, FPROP, &g, CUDNN_DATA_HALF, 1.0f, 0.0);
  assert_int_equal(heuristics(graph, CUDNN_HEUR_MODE_A, idx), 1);
  assert_int_equal(idx[0], 1);
  cudnnBackendDescriptor_t plan;
  assert_int_equal(try_plan(h, graph, 0, &plan), CUDNN_STATUS_NOT_SUPPORTED);
  assert_int_equal(try_plan(h, graph, 7, &plan), CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND);
  cudnnBackendDestroyDescriptor(graph);
  cudnnDestroy(h);
}

static void tf32_engine_rounds_inputs_and_names_a_tf32_kernel(void **state) {
  (void)state;
  ref_conv g = {.n = 1,
                .c = 8,
                .h = 1,
                .w = 1,
                .k = 8,
                .r = 1,
                .s = 1,
                .groups = 1,
                .str_h = 1,
                .str_w = 1,
                .dil_h = 1,
                .dil_w = 1};
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t graph = conv_graph(h, FPROP, &g, CUDNN_DATA_FLOAT, 1.0f, 0.0);
  _Alignas(16) float x[8], w[64], y[8];
  for (int i = 0; i < 8; i++)
    x[i] = 1.0f + 0x1p-11f;
  for (int i = 0; i < 64; i++)
    w[i] = 1.0f;
  int64_t uids[3] = {UID_X, UID_W, UID_Y};
  void *ptrs[3] = {x, w, y};
  cudnnBackendDescriptor_t vp = variant_pack(3, uids, ptrs);
  float want[2] = {8.0f, 8.0f + 8 * 0x1p-11f};
  for (int64_t i = 0; i < 2; i++) {
    cudnnBackendDescriptor_t plan;
    assert_int_equal(try_plan(h, graph, i, &plan), CUDNN_STATUS_SUCCESS);
    sink_reset();
    assert_int_equal(cudnnBackendExecute(h, plan, vp), CUDNN_STATUS_SUCCESS);
    assert_true(y[0] == want[i]);
    assert_true((strstr(sink_name, "tf32") != NULL) == (i == 0));
    cudnnBackendDestroyDescriptor(plan);
  }
  /* NVIDIA_TF32_OVERRIDE=0 removes the TF32 engine. */
  setenv("NVIDIA_TF32_OVERRIDE", "0", 1);
  int64_t idx[2];
  int n = heuristics(graph, CUDNN_HEUR_MODE_A, idx);
  unsetenv("NVIDIA_TF32_OVERRIDE");
  assert_int_equal(n, 1);
  assert_int_equal(idx[0], 1);
  cudnnBackendDestroyDescriptor(vp);
  cudnnBackendDestroyDescriptor(graph);
  cudnnDestroy(h);
}

/* C[b] = A[b] x B[b] with A broadcast over the batch; strides make B column-major.
 * A and B are of type dt, C of type ct. */
static void run_matmul_into(cudnnDataType_t dt, cudnnDataType_t ct, int64_t index, bool expect_ok) {
  enum { BATCH = 2, M = 3, K = 5, N = 4 };
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  int64_t ad[3] = {1, M, K}, bd[3] = {BATCH, K, N}, cd[3] = {BATCH, M, N};
  cudnnBackendDescriptor_t a = tensor(dt, 3, ad, 1), c = tensor(ct, 3, cd, 3);
  cudnnBackendDescriptor_t b = tensor_unfinalized(dt, 3, bd, 2);
  int64_t bstr[3] = {K * N, 1, K}, align = 16;
  set(b, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 3, bstr);
  set(b, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  finalize(b);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t mm = create(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  finalize(mm);
  cudnnBackendDescriptor_t op = create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, D, 1, &a);
  set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, D, 1, &b);
  set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, D, 1, &c);
  set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, D, 1, &mm);
  finalize(op);
  cudnnBackendDescriptor_t graph = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, &op);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  finalize(graph);
  cudnnBackendDescriptor_t plan;
  cudnnStatus_t st = try_plan(h, graph, index, &plan);
  if (!expect_ok) {
    assert_int_equal(st, CUDNN_STATUS_NOT_SUPPORTED);
  } else {
    assert_int_equal(st, CUDNN_STATUS_SUCCESS);
    double *av = random_ints(M * K, 31, -30, 30), *bv = random_ints(BATCH * K * N, 32, -30, 30);
    void *abuf = to_dtype(av, M * K, dt), *bbuf = to_dtype(bv, BATCH * K * N, dt);
    void *cbuf = calloc(BATCH * M * N, 4);
    int64_t uids[3] = {1, 2, 3};
    void *ptrs[3] = {abuf, bbuf, cbuf};
    cudnnBackendDescriptor_t vp = variant_pack(3, uids, ptrs);
    sink_reset();
    assert_int_equal(cudnnBackendExecute(h, plan, vp), CUDNN_STATUS_SUCCESS);
    assert_int_equal(sink_count, 1);
    for (int bi = 0; bi < BATCH; bi++)
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          double acc = 0;
          for (int l = 0; l < K; l++)
            acc += av[i * K + l] * bv[bi * K * N + j * K + l];
          double have = from_dtype(cbuf, (size_t)(bi * M + i) * N + j, ct);
          assert_true(have == rne_dtype(acc, ct));
        }
    free(av), free(bv), free(abuf), free(bbuf), free(cbuf);
    cudnnBackendDestroyDescriptor(vp);
    cudnnBackendDestroyDescriptor(plan);
  }
  cudnnBackendDestroyDescriptor(graph);
  cudnnBackendDestroyDescriptor(op);
  cudnnBackendDestroyDescriptor(mm);
  cudnnBackendDestroyDescriptor(a);
  cudnnBackendDestroyDescriptor(b);
  cudnnBackendDestroyDescriptor(c);
  cudnnDestroy(h);
}

static void run_matmul(cudnnDataType_t dt, int64_t index, bool expect_ok) {
  run_matmul_into(dt, dt, index, expect_ok);
}

/* bf16 (and fp16) A and B with an fp32 C: the Tensor Core engine stores its
 * fp32 accumulator; there is no CUDA-core engine for 16-bit inputs. */
static void matmul_of_bf16_into_fp32_runs_on_the_tensor_core_engine(void **state) {
  (void)state;
  run_matmul_into(CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, 0, true);
  assert_non_null(strstr(sink_name, "bf16"));
  run_matmul_into(CUDNN_DATA_HALF, CUDNN_DATA_FLOAT, 0, true);
  run_matmul_into(CUDNN_DATA_BFLOAT16, CUDNN_DATA_FLOAT, 1, false);
  /* fp32 inputs into a 16-bit C are still no kernel's business. */
  run_matmul_into(CUDNN_DATA_FLOAT, CUDNN_DATA_BFLOAT16, 1, false);
}

static void matmul_graph_matches_reference(void **state) {
  (void)state;
  run_matmul(CUDNN_DATA_FLOAT, 1, true);
  run_matmul(CUDNN_DATA_HALF, 0, true);
  assert_non_null(strstr(sink_name, "f16f16_f16f32"));
  run_matmul(CUDNN_DATA_BFLOAT16, 0, true);
}

static void matmul_of_16_bit_data_has_no_cuda_core_engine(void **state) {
  (void)state;
  run_matmul(CUDNN_DATA_HALF, 1, false);
}

static void finalized_variant_pack_hides_ids_and_pointers(void **state) {
  (void)state;
  float buf[4];
  int64_t uids[2] = {5, 6}, got[2], n = -1;
  void *ptrs[2] = {buf, buf + 2}, *gotp[2], *ws = (void *)1;
  cudnnBackendDescriptor_t vp = create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 2, uids);
  set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 2, ptrs);
  set(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  finalize(vp);
  assert_int_equal(cudnnBackendGetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                            CUDNN_TYPE_INT64, 2, &n, got),
                   CUDNN_STATUS_NOT_SUPPORTED);
  assert_int_equal(cudnnBackendGetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                            CUDNN_TYPE_VOID_PTR, 2, &n, gotp),
                   CUDNN_STATUS_NOT_SUPPORTED);
  void *got_ws = NULL;
  assert_int_equal(cudnnBackendGetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                            CUDNN_TYPE_VOID_PTR, 1, &n, &got_ws),
                   CUDNN_STATUS_SUCCESS);
  assert_ptr_equal(got_ws, ws);
  cudnnBackendDestroyDescriptor(vp);
}

static void finalized_graph_hides_its_operations(void **state) {
  (void)state;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t graph = conv_graph(h, FPROP, &odd, CUDNN_DATA_FLOAT, 1.0f, 0.0);
  cudnnBackendDescriptor_t op = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  int64_t n = -1;
  assert_int_equal(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, &n, &op),
                   CUDNN_STATUS_NOT_SUPPORTED);
  cudnnHandle_t got = NULL;
  assert_int_equal(cudnnBackendGetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                                            CUDNN_TYPE_HANDLE, 1, &n, &got),
                   CUDNN_STATUS_SUCCESS);
  assert_ptr_equal(got, h);
  cudnnBackendDestroyDescriptor(op);
  cudnnBackendDestroyDescriptor(graph);
  cudnnDestroy(h);
}

static void operation_operands_read_back_as_internal_copies(void **state) {
  (void)state;
  int64_t xd[4] = {2, 8, 7, 6}, wd[4] = {8, 8, 3, 2}, yd[4] = {2, 8, 4, 8};
  cudnnBackendDescriptor_t x = tensor(CUDNN_DATA_HALF, 4, xd, UID_X);
  cudnnBackendDescriptor_t w = tensor(CUDNN_DATA_HALF, 4, wd, UID_W);
  cudnnBackendDescriptor_t y = tensor(CUDNN_DATA_HALF, 4, yd, UID_Y), c = conv_desc(&odd);
  cudnnBackendDescriptor_t o = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &x);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &w);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &y);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &c);
  finalize(o);
  /* The tensor descriptor itself reads back faithfully... */
  int64_t n = 0, uid = 0, dims[8];
  cudnnDataType_t dt;
  assert_int_equal(
      cudnnBackendGetAttribute(y, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &n, &uid),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(uid, UID_Y);
  assert_int_equal(
      cudnnBackendGetAttribute(y, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 8, &n, dims),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(n, 4);
  assert_int_equal(dims[3], 8);
  assert_int_equal(
      cudnnBackendGetAttribute(y, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &n, &dt),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(dt, CUDNN_DATA_HALF);
  /* ...the operation's Y comes back as a 5-D internal copy with id -1. */
  cudnnBackendDescriptor_t back = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  assert_int_equal(
      cudnnBackendGetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &n, &back),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnBackendGetAttribute(back, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &n, &uid),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(uid, -1);
  assert_int_equal(
      cudnnBackendGetAttribute(back, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 8, &n, dims),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(n, 5);
  assert_int_equal(dims[2], 1);
  assert_int_equal(dims[4], 8);
  cudnnBackendDestroyDescriptor(back);
  cudnnBackendDestroyDescriptor(o);
  cudnnBackendDestroyDescriptor(x);
  cudnnBackendDestroyDescriptor(w);
  cudnnBackendDestroyDescriptor(y);
  cudnnBackendDestroyDescriptor(c);
}

static void plan_reports_its_workspace_and_config(void **state) {
  (void)state;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t graph = conv_graph(h, WGRAD, &odd, CUDNN_DATA_HALF, 1.0f, 0.0), plan;
  assert_int_equal(try_plan(h, graph, 0, &plan), CUDNN_STATUS_SUCCESS);
  int64_t n = 0, ws = -1, index = -1;
  assert_int_equal(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                            CUDNN_TYPE_INT64, 1, &n, &ws),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(ws, 0);
  cudnnBackendDescriptor_t cfg = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR),
                           engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  assert_int_equal(
      cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D, 1, &n, &cfg),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, D, 1, &n, &engine),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                            CUDNN_TYPE_INT64, 1, &n, &index),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(index, 0);
  cudnnBackendDestroyDescriptor(engine);
  cudnnBackendDestroyDescriptor(cfg);
  cudnnBackendDestroyDescriptor(plan);
  cudnnBackendDestroyDescriptor(graph);
  cudnnDestroy(h);
}

static void incomplete_or_inconsistent_descriptors_are_bad_param(void **state) {
  (void)state;
  int64_t d4[4] = {1, 8, 4, 4}, uid = 9, two = 2;
  /* A tensor without byte alignment does not finalize. */
  cudnnBackendDescriptor_t t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  int64_t strides[4] = {128, 16, 4, 1};
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, d4);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  assert_int_equal(cudnnBackendFinalize(t), CUDNN_STATUS_BAD_PARAM);
  /* Wrong attribute type, attribute of another descriptor, read before finalize. */
  assert_int_equal(
      cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT32, 1, &uid),
      CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
  assert_int_equal(
      cudnnBackendSetAttribute(t, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &two),
      CUDNN_STATUS_BAD_PARAM);
  int64_t n;
  assert_int_equal(
      cudnnBackendGetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &n, &uid),
      CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  /* An unfinalized tensor cannot be an operand. */
  cudnnBackendDescriptor_t o = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  assert_int_equal(
      cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &t),
      CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  int64_t align = 16;
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  finalize(t);
  /* Finalized descriptors are immutable. */
  assert_int_equal(
      cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid),
      CUDNN_STATUS_BAD_PARAM);
  /* A tensor where a convolution descriptor belongs. */
  assert_int_equal(
      cudnnBackendSetAttribute(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &t),
      CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE);
  /* Output shape that does not follow from the convolution. */
  int64_t wd[4] = {8, 8, 3, 3}, yd[4] = {1, 8, 4, 5};
  cudnnBackendDescriptor_t w = tensor(CUDNN_DATA_FLOAT, 4, wd, 10),
                           y = tensor(CUDNN_DATA_FLOAT, 4, yd, 11);
  ref_conv g = {
      .r = 3, .s = 3, .pad_h = 1, .pad_w = 1, .str_h = 1, .str_w = 1, .dil_h = 1, .dil_w = 1};
  cudnnBackendDescriptor_t c = conv_desc(&g);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &t);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &w);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &y);
  assert_int_equal(cudnnBackendFinalize(o), CUDNN_STATUS_BAD_PARAM); /* no CONV_DESC yet */
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &c);
  assert_int_equal(cudnnBackendFinalize(o), CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH);
  /* Variant pack with more ids than pointers. */
  cudnnBackendDescriptor_t vp = create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  int64_t uids[2] = {1, 2};
  void *ptrs[1] = {&n};
  set(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 2, uids);
  set(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 1, ptrs);
  assert_int_equal(cudnnBackendFinalize(vp), CUDNN_STATUS_BAD_PARAM);
  cudnnBackendDescriptor_t none = NULL;
  assert_int_equal(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, NULL),
                   CUDNN_STATUS_BAD_PARAM_NULL_POINTER);
  assert_int_equal(cudnnBackendFinalize(none), CUDNN_STATUS_BAD_PARAM);
  cudnnBackendDestroyDescriptor(vp);
  cudnnBackendDestroyDescriptor(c);
  cudnnBackendDestroyDescriptor(w);
  cudnnBackendDestroyDescriptor(y);
  cudnnBackendDestroyDescriptor(o);
  cudnnBackendDestroyDescriptor(t);
}

static void execute_refuses_missing_or_misaligned_pointers(void **state) {
  (void)state;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t graph = conv_graph(h, FPROP, &odd, CUDNN_DATA_FLOAT, 1.0f, 0.0), plan;
  assert_int_equal(try_plan(h, graph, 1, &plan), CUDNN_STATUS_SUCCESS);
  float *buf = calloc(4096, sizeof *buf);
  int64_t uids[3] = {UID_X, UID_W, UID_Y};
  void *two[2] = {buf, buf};
  cudnnBackendDescriptor_t vp = variant_pack(2, uids, two);
  assert_int_equal(cudnnBackendExecute(h, plan, vp), CUDNN_STATUS_BAD_PARAM);
  cudnnBackendDestroyDescriptor(vp);
  void *misaligned[3] = {buf, buf + 1, buf};
  vp = variant_pack(3, uids, misaligned);
  assert_int_equal(cudnnBackendExecute(h, plan, vp), CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER);
  /* Plan and variant pack swapped; unfinalized plan. */
  assert_int_equal(cudnnBackendExecute(h, vp, plan), CUDNN_STATUS_BAD_PARAM_DESCRIPTOR_TYPE);
  cudnnBackendDescriptor_t raw = create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  assert_int_equal(cudnnBackendExecute(h, raw, vp), CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  assert_int_equal(cudnnBackendExecute(NULL, plan, vp), CUDNN_STATUS_BAD_PARAM);
  cudnnBackendDestroyDescriptor(raw);
  cudnnBackendDestroyDescriptor(vp);
  free(buf);
  cudnnBackendDestroyDescriptor(plan);
  cudnnBackendDestroyDescriptor(graph);
  cudnnDestroy(h);
}

static void unimplemented_graphs_and_descriptors_are_not_supported(void **state) {
  (void)state;
  /* Entry points PyTorch calls that simcuda does not emulate: the library's
   * own status and a reason, never an undefined symbol. */
  cudnnDropoutDescriptor_t drop = NULL;
  assert_int_equal(cudnnCreateDropoutDescriptor(&drop), CUDNN_STATUS_NOT_SUPPORTED);
  assert_null(drop);
  char why[256] = "";
  cudnnGetLastErrorString(why, sizeof why);
  assert_non_null(strstr(why, "cudnnCreateDropoutDescriptor"));
  float one = 1;
  assert_int_equal(cudnnAddTensor(NULL, &one, NULL, NULL, &one, NULL, NULL),
                   CUDNN_STATUS_NOT_SUPPORTED);
  cudnnBackendDescriptor_t d = NULL;
  assert_int_equal(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, &d),
                   CUDNN_STATUS_NOT_SUPPORTED);
  assert_int_equal(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &d),
                   CUDNN_STATUS_NOT_SUPPORTED);
  /* Two operations in one graph (a fused pattern), and a virtual operand. */
  int64_t xd[4] = {1, 8, 4, 4}, wd[4] = {8, 8, 1, 1};
  ref_conv g = {.r = 1, .s = 1, .str_h = 1, .str_w = 1, .dil_h = 1, .dil_w = 1};
  cudnnBackendDescriptor_t x = tensor(CUDNN_DATA_FLOAT, 4, xd, 1),
                           w = tensor(CUDNN_DATA_FLOAT, 4, wd, 2),
                           y = tensor_unfinalized(CUDNN_DATA_FLOAT, 4, xd, 3), c = conv_desc(&g);
  bool yes = true;
  set(y, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
  finalize(y);
  cudnnBackendDescriptor_t o = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &x);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &w);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &y);
  set(o, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &c);
  finalize(o);
  cudnnBackendDescriptor_t ops[2] = {o, o};
  cudnnBackendDescriptor_t graph = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 2, ops);
  assert_int_equal(cudnnBackendFinalize(graph), CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, ops);
  assert_int_equal(cudnnBackendFinalize(graph), CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
  /* Non-default vector count is a layout simcuda does not implement. */
  int64_t four = 4;
  cudnnBackendDescriptor_t t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  assert_int_equal(
      cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_VECTOR_COUNT, CUDNN_TYPE_INT64, 1, &four),
      CUDNN_STATUS_NOT_SUPPORTED);
  cudnnBackendDestroyDescriptor(t);
  cudnnBackendDestroyDescriptor(graph);
  cudnnBackendDestroyDescriptor(o);
  cudnnBackendDestroyDescriptor(x);
  cudnnBackendDestroyDescriptor(w);
  cudnnBackendDestroyDescriptor(y);
  cudnnBackendDestroyDescriptor(c);
}

/* ---- 3-D convolutions (5-D tensors) ---- */

typedef struct geo5 {
  int64_t x[5], w[5], y[5], pad[3], str[3], dil[3];
} geo5;

static size_t count5(const int64_t *d) {
  return (size_t)(d[0] * d[1] * d[2] * d[3] * d[4]);
}

/* Direct 3-D cross-correlation in double on packed NCDHW / KCTRS buffers. */
static double *ref_fprop3(const geo5 *g, const double *x, const double *w) {
  double *y = calloc(count5(g->y), sizeof *y);
  int64_t o[3], f[3], at[3];
  for (int64_t n = 0; n < g->y[0]; n++)
    for (int64_t k = 0; k < g->y[1]; k++)
      for (o[0] = 0; o[0] < g->y[2]; o[0]++)
        for (o[1] = 0; o[1] < g->y[3]; o[1]++)
          for (o[2] = 0; o[2] < g->y[4]; o[2]++)
            for (int64_t c = 0; c < g->x[1]; c++)
              for (f[0] = 0; f[0] < g->w[2]; f[0]++)
                for (f[1] = 0; f[1] < g->w[3]; f[1]++)
                  for (f[2] = 0; f[2] < g->w[4]; f[2]++) {
                    bool in = true;
                    for (int i = 0; i < 3; i++) {
                      at[i] = o[i] * g->str[i] - g->pad[i] + f[i] * g->dil[i];
                      in = in && at[i] >= 0 && at[i] < g->x[2 + i];
                    }
                    if (!in) continue;
                    size_t xi = (size_t)((((n * g->x[1] + c) * g->x[2] + at[0]) * g->x[3] + at[1]) *
                                             g->x[4] +
                                         at[2]);
                    size_t wi =
                        (size_t)((((k * g->w[1] + c) * g->w[2] + f[0]) * g->w[3] + f[1]) * g->w[4] +
                                 f[2]);
                    size_t yi =
                        (size_t)((((n * g->y[1] + k) * g->y[2] + o[0]) * g->y[3] + o[1]) * g->y[4] +
                                 o[2]);
                    y[yi] += x[xi] * w[wi];
                  }
  return y;
}

static double dot(const float *a, const double *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++)
    s += a[i] * b[i];
  return s;
}

/* Runs one 3-D op on the CUDA-core engine; returns the output buffer (float). */
static float *run3(cudnnHandle_t h, enum which op, const geo5 *g, const double *x, const double *w,
                   const double *y) {
  cudnnBackendDescriptor_t xd = tensor(CUDNN_DATA_FLOAT, 5, g->x, UID_X),
                           wd = tensor(CUDNN_DATA_FLOAT, 5, g->w, UID_W),
                           yd = tensor(CUDNN_DATA_FLOAT, 5, g->y, UID_Y);
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t spatial = 3;
  cudnnBackendDescriptor_t c = create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  set(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  set(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  set(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 3, g->dil);
  set(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 3, g->str);
  set(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 3, g->pad);
  set(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 3, g->pad);
  finalize(c);
  cudnnBackendDescriptor_t o = create(op_types[op]);
  set(o, op_attrs[op][0], D, 1, &xd);
  set(o, op_attrs[op][1], D, 1, &wd);
  set(o, op_attrs[op][2], D, 1, &yd);
  set(o, op_attrs[op][3], D, 1, &c);
  finalize(o);
  cudnnBackendDescriptor_t graph = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR), plan;
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, &o);
  finalize(graph);
  assert_int_equal(try_plan(h, graph, 1, &plan), CUDNN_STATUS_SUCCESS);
  float *xb = to_dtype(x, count5(g->x), 0), *wb = to_dtype(w, count5(g->w), 0),
        *yb = to_dtype(y, count5(g->y), 0);
  int64_t uids[3] = {UID_X, UID_W, UID_Y};
  void *ptrs[3] = {xb, wb, yb};
  cudnnBackendDescriptor_t vp = variant_pack(3, uids, ptrs);
  assert_int_equal(cudnnBackendExecute(h, plan, vp), CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t all[] = {xd, wd, yd, c, o, graph, plan, vp};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cudnnBackendDestroyDescriptor(all[i]);
  float *out = op == FPROP ? yb : op == DGRAD ? xb : wb;
  if (out != xb) free(xb);
  if (out != wb) free(wb);
  if (out != yb) free(yb);
  return out;
}

/* fprop against a direct 3-D loop; dgrad and wgrad through the adjoint
 * identities <fprop(x, w), dy> = <x, dgrad(dy, w)> = <w, wgrad(x, dy)>,
 * exact on integer data. */
static void three_d_convolutions_match_reference(void **state) {
  (void)state;
  geo5 g = {.x = {2, 3, 4, 5, 6},
            .w = {4, 3, 2, 3, 2},
            .pad = {1, 0, 1},
            .str = {2, 1, 1},
            .dil = {1, 2, 1}};
  g.y[0] = 2;
  g.y[1] = 4;
  for (int i = 0; i < 3; i++)
    g.y[2 + i] = (g.x[2 + i] + 2 * g.pad[i] - ((g.w[2 + i] - 1) * g.dil[i] + 1)) / g.str[i] + 1;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  size_t nx = count5(g.x), nw = count5(g.w), ny = count5(g.y);
  double *x = random_ints(nx, 41, -3, 3), *w = random_ints(nw, 42, -3, 3);
  double *dy = random_ints(ny, 43, -3, 3), *zeros_x = calloc(nx, sizeof(double)),
         *zeros_w = calloc(nw, sizeof(double)), *zeros_y = calloc(ny, sizeof(double));
  double *ref = ref_fprop3(&g, x, w);
  float *y = run3(h, FPROP, &g, x, w, zeros_y);
  for (size_t i = 0; i < ny; i++)
    assert_true(y[i] == (float)ref[i]);
  float *dx = run3(h, DGRAD, &g, zeros_x, w, dy), *dw = run3(h, WGRAD, &g, x, zeros_w, dy);
  double lhs = 0;
  for (size_t i = 0; i < ny; i++)
    lhs += ref[i] * dy[i];
  assert_true(lhs != 0);
  assert_true(dot(dx, x, nx) == lhs);
  assert_true(dot(dw, w, nw) == lhs);
  free(x), free(w), free(dy), free(zeros_x), free(zeros_w), free(zeros_y), free(ref), free(y),
      free(dx), free(dw);
  cudnnDestroy(h);
}

/* ---- fused graphs: convolution / matmul -> pointwise chain ---- */

static cudnnBackendDescriptor_t virtual_tensor(cudnnDataType_t dt, int nb, const int64_t *dims,
                                               int64_t uid) {
  cudnnBackendDescriptor_t t = tensor_unfinalized(dt, nb, dims, uid);
  bool yes = true;
  set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &yes);
  finalize(t);
  return t;
}

static cudnnBackendDescriptor_t pointwise_op(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x,
                                             cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t y,
                                             float alpha2) {
  cudnnBackendDescriptor_t pw = create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  finalize(pw);
  cudnnBackendDescriptor_t op = create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, D, 1, &pw);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, D, 1, &x);
  if (b) set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, D, 1, &b);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, D, 1, &y);
  set(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &alpha2);
  finalize(op);
  cudnnBackendDestroyDescriptor(pw);
  return op;
}

static cudnnBackendDescriptor_t graph_of(cudnnHandle_t h, int n, cudnnBackendDescriptor_t *ops) {
  cudnnBackendDescriptor_t g = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, n, ops);
  set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  return g;
}

enum { UID_B = 'b', UID_V1 = 1001, UID_V2 = 1002 };

/* y = relu(conv(x, w) + 0.5 * bias[k]) in one kernel; the conv output and the
 * sum are virtual. The operations are listed out of order: the chain is
 * found through the unique ids. */
static void fused_conv_bias_relu_graph_matches_reference(void **state) {
  (void)state;
  const ref_conv *g = &odd;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  int64_t xd[4] = {g->n, g->c, g->h, g->w}, wd[4] = {g->k, g->c, g->r, g->s},
          yd[4] = {g->n, g->k, ref_out_h(g), ref_out_w(g)}, bd[4] = {1, g->k, 1, 1};
  cudnnDataType_t f16 = CUDNN_DATA_HALF, f32 = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t x = tensor(f16, 4, xd, UID_X), w = tensor(f16, 4, wd, UID_W),
                           y = tensor(f16, 4, yd, UID_Y), b = tensor(f16, 4, bd, UID_B),
                           v1 = virtual_tensor(f32, 4, yd, UID_V1),
                           v2 = virtual_tensor(f32, 4, yd, UID_V2), c = conv_desc(g);
  cudnnBackendDescriptor_t conv = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &x);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &w);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &v1);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &c);
  finalize(conv);
  cudnnBackendDescriptor_t add = pointwise_op(CUDNN_POINTWISE_ADD, v1, b, v2, 0.5f);
  cudnnBackendDescriptor_t relu = pointwise_op(CUDNN_POINTWISE_RELU_FWD, v2, NULL, y, 1.0f);
  cudnnBackendDescriptor_t ops[3] = {relu, conv, add};
  cudnnBackendDescriptor_t graph = graph_of(h, 3, ops);
  finalize(graph);
  int64_t idx[2];
  assert_int_equal(heuristics(graph, CUDNN_HEUR_MODE_A, idx), 2);
  cudnnBackendDescriptor_t plan;
  assert_int_equal(try_plan(h, graph, idx[0], &plan), CUDNN_STATUS_SUCCESS);
  size_t nx = ref_x_count(g), nw = ref_w_count(g), ny = ref_y_count(g);
  double *xv = random_ints(nx, 51, -20, 20), *wv = random_ints(nw, 52, -20, 20),
         *bv = random_ints((size_t)g->k, 53, -400, 400);
  void *xb = to_dtype(xv, nx, f16), *wb = to_dtype(wv, nw, f16), *bb = to_dtype(bv, g->k, f16);
  uint16_t *yb = calloc(ny, sizeof *yb);
  int64_t uids[4] = {UID_X, UID_W, UID_B, UID_Y};
  void *ptrs[4] = {xb, wb, bb, yb};
  cudnnBackendDescriptor_t vp = variant_pack(4, uids, ptrs);
  sink_reset();
  assert_int_equal(cudnnBackendExecute(h, plan, vp), CUDNN_STATUS_SUCCESS);
  assert_int_equal(sink_count, 1);
  assert_non_null(strstr(sink_name, "fprop"));
  double *ref = ref_fprop(g, xv, wv);
  size_t per_k = ny / (size_t)(g->n * g->k);
  int zeros = 0;
  for (size_t i = 0; i < ny; i++) {
    double v = ref[i] + 0.5 * bv[(i / per_k) % (size_t)g->k];
    double want = rne_fp16(v < 0 ? 0 : v), have = fp16_decode(yb[i]);
    zeros += want == 0;
    if (have != want) fail_msg("element %zu: got %g want %g", i, have, want);
  }
  assert_true(zeros > 0 && zeros < (int)ny);
  /* The final output reads back as an internal copy; the pointwise mode faithfully. */
  cudnnBackendDescriptor_t back = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                           pw = create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  int64_t n = 0, uid = 0;
  assert_int_equal(
      cudnnBackendGetAttribute(relu, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, D, 1, &n, &back),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnBackendGetAttribute(back, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &n, &uid),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(uid, -1);
  assert_int_equal(
      cudnnBackendGetAttribute(relu, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, D, 1, &n, &pw),
      CUDNN_STATUS_SUCCESS);
  cudnnPointwiseMode_t mode = CUDNN_POINTWISE_ADD;
  assert_int_equal(cudnnBackendGetAttribute(pw, CUDNN_ATTR_POINTWISE_MODE,
                                            CUDNN_TYPE_POINTWISE_MODE, 1, &n, &mode),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(mode, CUDNN_POINTWISE_RELU_FWD);
  cudnnBackendDescriptor_t all[] = {back, pw, vp, plan, graph, relu, add, conv,
                                    c,    v2, v1, b,    y,     w,    x};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cudnnBackendDestroyDescriptor(all[i]);
  free(xv), free(wv), free(bv), free(xb), free(wb), free(bb), free(yb), free(ref);
  cudnnDestroy(h);
}

/* A virtual tensor declared HALF holds fp16 values: the matmul result is
 * rounded to fp16 before the next operation, even with fp32 in and out. */
static void virtual_intermediates_round_to_their_declared_type(void **state) {
  (void)state;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  int64_t ad[3] = {1, 2, 1}, bd[3] = {1, 1, 2}, cd[3] = {1, 2, 2};
  cudnnDataType_t f32 = CUDNN_DATA_FLOAT, f16 = CUDNN_DATA_HALF;
  cudnnBackendDescriptor_t a = tensor(f32, 3, ad, 1), b = tensor(f32, 3, bd, 2),
                           v = virtual_tensor(f16, 3, cd, 3), c = tensor(f32, 3, cd, 4);
  cudnnBackendDescriptor_t mm = create(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32);
  finalize(mm);
  cudnnBackendDescriptor_t op = create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, D, 1, &a);
  set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, D, 1, &b);
  set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, D, 1, &v);
  set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, D, 1, &mm);
  finalize(op);
  cudnnBackendDescriptor_t id = pointwise_op(CUDNN_POINTWISE_IDENTITY, v, NULL, c, 1.0f);
  cudnnBackendDescriptor_t ops[2] = {op, id}, graph = graph_of(h, 2, ops), plan;
  finalize(graph);
  assert_int_equal(try_plan(h, graph, 1, &plan), CUDNN_STATUS_SUCCESS);
  /* 2049 and 1 + 2^-11 are not fp16 values: they round (to even) to 2048 and 1. */
  _Alignas(16) float av[2] = {2049.0f, 1.0f + 0x1p-11f};
  _Alignas(16) float bv[2] = {1.0f, -1.0f};
  _Alignas(16) float cv[4];
  int64_t uids[3] = {1, 2, 4};
  void *ptrs[3] = {av, bv, cv};
  cudnnBackendDescriptor_t vp = variant_pack(3, uids, ptrs);
  assert_int_equal(cudnnBackendExecute(h, plan, vp), CUDNN_STATUS_SUCCESS);
  assert_true(cv[0] == 2048.0f && cv[1] == -2048.0f && cv[2] == 1.0f && cv[3] == -1.0f);
  cudnnBackendDescriptor_t all[] = {vp, plan, graph, id, op, mm, a, b, v, c};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cudnnBackendDestroyDescriptor(all[i]);
  cudnnDestroy(h);
}

static void unimplemented_fusions_are_refused(void **state) {
  (void)state;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  /* A pointwise mode outside ADD/SUB/MUL/MAX/MIN/RELU_FWD/IDENTITY. */
  cudnnBackendDescriptor_t pw = create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  cudnnPointwiseMode_t tanh_mode = CUDNN_POINTWISE_TANH_FWD;
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &tanh_mode);
  assert_int_equal(cudnnBackendFinalize(pw), CUDNN_STATUS_NOT_SUPPORTED);
  cudnnBackendDestroyDescriptor(pw);
  /* beta blending into a virtual convolution output; a virtual B operand. */
  int64_t xd[4] = {1, 8, 4, 4}, wd[4] = {8, 8, 1, 1};
  ref_conv g = {.r = 1, .s = 1, .str_h = 1, .str_w = 1, .dil_h = 1, .dil_w = 1};
  cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t x = tensor(f32, 4, xd, 1), w = tensor(f32, 4, wd, 2),
                           v = virtual_tensor(f32, 4, xd, 3), vb = virtual_tensor(f32, 4, xd, 4),
                           y = tensor(f32, 4, xd, 5), c = conv_desc(&g);
  cudnnBackendDescriptor_t conv = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  double beta = 1.0;
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &x);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &w);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &v);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &c);
  set(conv, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_DOUBLE, 1, &beta);
  finalize(conv);
  cudnnBackendDescriptor_t relu = pointwise_op(CUDNN_POINTWISE_RELU_FWD, v, NULL, y, 1.0f);
  cudnnBackendDescriptor_t ops[2] = {conv, relu}, graph = graph_of(h, 2, ops);
  assert_int_equal(cudnnBackendFinalize(graph), CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
  cudnnBackendDestroyDescriptor(graph);
  cudnnBackendDescriptor_t add = pointwise_op(CUDNN_POINTWISE_ADD, v, vb, y, 1.0f);
  ops[1] = add;
  graph = graph_of(h, 2, ops);
  assert_int_equal(cudnnBackendFinalize(graph), CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
  /* A pointwise op alone is no graph simcuda runs. */
  cudnnBackendDestroyDescriptor(graph);
  graph = graph_of(h, 1, &relu);
  assert_int_equal(cudnnBackendFinalize(graph), CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN);
  cudnnBackendDescriptor_t all[] = {graph, add, relu, conv, c, y, vb, v, w, x};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cudnnBackendDestroyDescriptor(all[i]);
  cudnnDestroy(h);
}

/* ---- engine config knobs (KNOB_CHOICE / KNOB_INFO) and shared memory ---- */

static cudnnBackendDescriptor_t knob_choice(cudnnBackendKnobType_t type, int64_t value) {
  cudnnBackendDescriptor_t k = create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  set(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type);
  set(k, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value);
  finalize(k);
  return k;
}

/* What cudnn-frontend reads from a heuristics result: its knob choices
 * (count query first, then caller-created KNOB_CHOICE descriptors), the
 * engine's knob ranges, workspace and shared memory. */
static void heuristic_configs_carry_knob_choices_and_shared_memory(void **state) {
  (void)state;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t graph = conv_graph(h, FPROP, &odd, CUDNN_DATA_HALF, 1.0f, 0.0);
  cudnnBackendDescriptor_t heur = create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, D, 1, &graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  finalize(heur);
  cudnnBackendDescriptor_t cfg = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t n = 0;
  assert_int_equal(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, 1, &n, &cfg),
                   CUDNN_STATUS_SUCCESS);
  assert_true(n >= 1);
  int64_t count = -1;
  assert_int_equal(
      cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, D, 0, &count, NULL),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(count, 1);
  cudnnBackendDescriptor_t choice = create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  assert_int_equal(
      cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, D, 1, &count, &choice),
      CUDNN_STATUS_SUCCESS);
  cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
  int64_t value = -1;
  assert_int_equal(cudnnBackendGetAttribute(choice, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                            CUDNN_TYPE_KNOB_TYPE, 1, &n, &type),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnBackendGetAttribute(choice, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                            CUDNN_TYPE_INT64, 1, &n, &value),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(type, CUDNN_KNOB_TYPE_KERNEL_CFG);
  assert_int_equal(value, 0);
  int64_t shmem = -1, ws = -1;
  assert_int_equal(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED,
                                            CUDNN_TYPE_INT64, 1, &n, &shmem),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(shmem, 0);
  assert_int_equal(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE,
                                            CUDNN_TYPE_INT64, 1, &n, &ws),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(ws, 0);
  /* The engine's knob: KERNEL_CFG in [0, 0]. */
  cudnnBackendDescriptor_t engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  assert_int_equal(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, D, 1, &n, &engine),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_KNOB_INFO, D, 0, &count, NULL),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(count, 1);
  cudnnBackendDescriptor_t info = create(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR);
  assert_int_equal(
      cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_KNOB_INFO, D, 1, &count, &info),
      CUDNN_STATUS_SUCCESS);
  int64_t lo = -1, hi = -1, stride = -1;
  assert_int_equal(
      cudnnBackendGetAttribute(info, CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnBackendGetAttribute(info, CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE,
                                            CUDNN_TYPE_INT64, 1, &n, &lo),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(cudnnBackendGetAttribute(info, CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE,
                                            CUDNN_TYPE_INT64, 1, &n, &hi),
                   CUDNN_STATUS_SUCCESS);
  assert_int_equal(
      cudnnBackendGetAttribute(info, CUDNN_ATTR_KNOB_INFO_STRIDE, CUDNN_TYPE_INT64, 1, &n, &stride),
      CUDNN_STATUS_SUCCESS);
  assert_int_equal(type, CUDNN_KNOB_TYPE_KERNEL_CFG);
  assert_true(lo == 0 && hi == 0 && stride == 1);
  /* The heuristic's config plans and runs. */
  cudnnBackendDescriptor_t plan = create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D, 1, &cfg);
  finalize(plan);
  cudnnBackendDestroyDescriptor(plan);
  cudnnBackendDestroyDescriptor(info);
  cudnnBackendDestroyDescriptor(engine);
  cudnnBackendDestroyDescriptor(choice);
  cudnnBackendDestroyDescriptor(cfg);
  cudnnBackendDestroyDescriptor(heur);
  cudnnBackendDestroyDescriptor(graph);
  cudnnDestroy(h);
}

/* Hand-built configs: a choice of the engine's knob within its range
 * finalizes; another knob or value is a config the engine cannot run. */
static void engine_config_knob_choices_are_checked_against_the_engine(void **state) {
  (void)state;
  cudnnHandle_t h;
  assert_int_equal(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudnnBackendDescriptor_t graph = conv_graph(h, FPROP, &odd, CUDNN_DATA_FLOAT, 1.0f, 0.0);
  cudnnBackendDescriptor_t engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  int64_t index = 1;
  set(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, D, 1, &graph);
  set(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index);
  finalize(engine);
  cudnnBackendDescriptor_t good = knob_choice(CUDNN_KNOB_TYPE_KERNEL_CFG, 0),
                           out_of_range = knob_choice(CUDNN_KNOB_TYPE_KERNEL_CFG, 5),
                           other = knob_choice(CUDNN_KNOB_TYPE_TILE_SIZE, 0);
  struct {
    cudnnBackendDescriptor_t knobs[2];
    int n;
    cudnnStatus_t want;
  } cases[] = {
      {{good}, 1, CUDNN_STATUS_SUCCESS},
      {{out_of_range}, 1, CUDNN_STATUS_NOT_SUPPORTED},
      {{other}, 1, CUDNN_STATUS_NOT_SUPPORTED},
      {{good, good}, 2, CUDNN_STATUS_BAD_PARAM_DUPLICATED_ENTRIES},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cudnnBackendDescriptor_t cfg = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    set(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, D, 1, &engine);
    set(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, D, cases[i].n, cases[i].knobs);
    assert_int_equal(cudnnBackendFinalize(cfg), cases[i].want);
    if (cases[i].want == CUDNN_STATUS_SUCCESS) {
      int64_t count = -1;
      assert_int_equal(
          cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, D, 0, &count, NULL),
          CUDNN_STATUS_SUCCESS);
      assert_int_equal(count, 1);
      cudnnBackendDescriptor_t plan = create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
      set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D, 1, &cfg);
      finalize(plan);
      cudnnBackendDestroyDescriptor(plan);
    }
    cudnnBackendDestroyDescriptor(cfg);
  }
  /* A knob choice needs both attributes, and must be finalized to be used. */
  cudnnBackendDescriptor_t half = create(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_KERNEL_CFG;
  set(half, CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &type);
  cudnnBackendDescriptor_t cfg = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  assert_int_equal(cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, D, 1, &half),
                   CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED);
  assert_int_equal(cudnnBackendFinalize(half), CUDNN_STATUS_BAD_PARAM);
  int64_t v = 0;
  assert_int_equal(
      cudnnBackendSetAttribute(half, CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT32, 1, &v),
      CUDNN_STATUS_BAD_PARAM_ATTRIBUTE_TYPE);
  cudnnBackendDestroyDescriptor(cfg);
  cudnnBackendDestroyDescriptor(half);
  cudnnBackendDestroyDescriptor(good);
  cudnnBackendDestroyDescriptor(out_of_range);
  cudnnBackendDestroyDescriptor(other);
  cudnnBackendDestroyDescriptor(engine);
  cudnnBackendDestroyDescriptor(graph);
  cudnnDestroy(h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_null_array_is_a_count_query),
      cmocka_unit_test(forward_graph_matches_reference),
      cmocka_unit_test(backward_data_graph_matches_reference),
      cmocka_unit_test(backward_filter_graph_matches_reference),
      cmocka_unit_test(heuristics_offer_the_tensor_core_engine_first),
      cmocka_unit_test(tf32_engine_rounds_inputs_and_names_a_tf32_kernel),
      cmocka_unit_test(matmul_graph_matches_reference),
      cmocka_unit_test(matmul_of_16_bit_data_has_no_cuda_core_engine),
      cmocka_unit_test(finalized_variant_pack_hides_ids_and_pointers),
      cmocka_unit_test(finalized_graph_hides_its_operations),
      cmocka_unit_test(operation_operands_read_back_as_internal_copies),
      cmocka_unit_test(plan_reports_its_workspace_and_config),
      cmocka_unit_test(incomplete_or_inconsistent_descriptors_are_bad_param),
      cmocka_unit_test(execute_refuses_missing_or_misaligned_pointers),
      cmocka_unit_test(unimplemented_graphs_and_descriptors_are_not_supported),
      cmocka_unit_test(three_d_convolutions_match_reference),
      cmocka_unit_test(fused_conv_bias_relu_graph_matches_reference),
      cmocka_unit_test(virtual_intermediates_round_to_their_declared_type),
      cmocka_unit_test(unimplemented_fusions_are_refused),
      cmocka_unit_test(matmul_of_bf16_into_fp32_runs_on_the_tensor_core_engine),
      cmocka_unit_test(heuristic_configs_carry_knob_choices_and_shared_memory),
      cmocka_unit_test(engine_config_knob_choices_are_checked_against_the_engine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
