/* hook_overhead: CPU cost per call of a hooked tiny GEMM under simcuda.
 *
 * The same program (this executable, --child) runs a 4x4x4 cublasSgemm_v2 in
 * a loop, first bare and then with libmpprof.so preloaded in several
 * configurations, all in one run. The figure is ns per call; the overhead is
 * the difference to the bare call, measured in the same run, and the ratio
 * puts it against the bare call (which under simcuda includes the stand-in's
 * CPU GEMM and its kernel bookkeeping). A second column gives the child's CPU
 * time per call (CLOCK_PROCESS_CPUTIME_ID, all its threads): on a shared,
 * loaded machine it is not inflated by time spent waiting for a core.
 *
 * Where cuDNN is there, another table times a cudnnBackendExecute of a tiny
 * convolution as PyTorch's cuDNN v8/v9 path makes it: the execution plan
 * built once and kept, a variant pack created, set, finalized and destroyed
 * around every execution, then the same from 64 plans in turn (each of a
 * graph of its own, as a model's layers make them); and another a
 * cudnnConvolutionForward of the same convolution through the legacy API,
 * its descriptors made once, as C programs and older frameworks call it.
 *
 * A table of many layers times the same GEMM as a model's layers call it:
 * LAYERS layers named as the PyTorch integration names them (mpprof_layer_id,
 * a scope pushed around each call, as its module hooks do), each calling
 * the GEMM in turn, so that every call is a site of its own, and between two
 * calls the program reads SWEEP_BYTES of a SWEEP_TOTAL buffer, standing in
 * for the framework's own work, which evicts mpprof's per-site data from
 * the caches as a training step does (the bare call reads it too). The
 * calls are timed once every site's --sample auto schedule is at its cap,
 * as in a long run (the warm-up: LAYERS x 4096 calls), and, as in a long
 * run, past the default MPPROF_MAX_EVENTS (no timeline event, no clock read).
 *
 * A further table times the first hooked call of a process on its own (what
 * start-up work mpprof leaves to the first call costs the caller's thread)
 * against the median of the next calls.
 *
 * usage: hook_overhead PATH/libmpprof.so [CALLS]   (LD_LIBRARY_PATH=<simcuda>) */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "profiler/call.h" /* MPP_SAMPLE_AUTO_*: where a site's --sample auto schedule settles */
#ifdef HOOK_OVERHEAD_CUDNN
#include <cudnn.h>
#endif

#define DIM 4

static double now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int child(long calls) {
  cublasHandle_t h;
  float *a, *b, *c, host[DIM * DIM];
  for (int i = 0; i < DIM * DIM; i++)
    host[i] = (float)(i % 5) - 2.0f;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cudaMalloc((void **)&a, sizeof host) ||
      cudaMalloc((void **)&b, sizeof host) || cudaMalloc((void **)&c, sizeof host)) {
    fputs("hook_overhead: CUDA setup failed (is LD_LIBRARY_PATH the simcuda dir?)\n", stderr);
    return 1;
  }
  cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemcpy(b, host, sizeof host, cudaMemcpyHostToDevice);
  const float one = 1, zero = 0;
  for (long i = 0; i < calls / 10 + 100; i++) /* warm up: sites, caches, lazy init */
    cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &one, a, DIM, b, DIM, &zero, c, DIM);
  double t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (long i = 0; i < calls; i++)
    cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &one, a, DIM, b, DIM, &zero, c, DIM);
  double t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  printf("%.1f %.1f\n", (t1 - t0) / (double)calls, (c1 - c0) / (double)calls);
  cublasDestroy(h);
  return 0;
}

/* The many-layers table: 200 modules' forward and two backward GEMMs (the
 * torch_hooks benchmark's GEMM model has as many sites). */
enum { LAYERS = 600, SWEEP_BYTES = 8 << 10, SWEEP_TOTAL = 16 << 20 };

static int layers_child(long calls) {
  cublasHandle_t h;
  float *a, *b, *c, host[DIM * DIM];
  for (int i = 0; i < DIM * DIM; i++)
    host[i] = (float)(i % 5) - 2.0f;
  uint64_t *sweep = malloc(SWEEP_TOTAL);
  if (!sweep || cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cudaMalloc((void **)&a, sizeof host) ||
      cudaMalloc((void **)&b, sizeof host) || cudaMalloc((void **)&c, sizeof host)) {
    fputs("hook_overhead: CUDA setup failed (is LD_LIBRARY_PATH the simcuda dir?)\n", stderr);
    return 1;
  }
  for (size_t i = 0; i < SWEEP_TOTAL / sizeof *sweep; i++)
    sweep[i] = i;
  cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemcpy(b, host, sizeof host, cudaMemcpyHostToDevice);
  /* libmpprof.so's scope API when it is preloaded; the bare call has none. */
  int32_t (*layer_id)(const char *, const char *) =
      (int32_t(*)(const char *, const char *))dlsym(RTLD_DEFAULT, "mpprof_layer_id");
  void (*push)(int32_t, int32_t) =
      (void (*)(int32_t, int32_t))dlsym(RTLD_DEFAULT, "mpprof_scope_push");
  void (*pop)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mpprof_scope_pop");
  static int32_t ids[LAYERS];
  for (int l = 0; l < LAYERS; l++) {
    char name[32];
    snprintf(name, sizeof name, "model.%d", l);
    ids[l] = layer_id && push && pop ? layer_id(name, "Linear") : -1;
  }
  const float one = 1, zero = 0;
  uint64_t sum = 0;
  size_t at = 0;
  double t0 = 0, c0 = 0;
  /* Warm-up: every site past --sample auto's phases, at its cap (1 in
   * MPP_SAMPLE_AUTO_CAP), as in a long run. */
  long warm = LAYERS * (long)(MPP_SAMPLE_AUTO_FIRST * MPP_SAMPLE_AUTO_CAP);
  for (long i = 0; i < warm + calls; i++) {
    if (i == warm) t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    int l = (int)(i % LAYERS);
    if (ids[l] >= 0) push(ids[l], 0);
    cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &one, a, DIM, b, DIM, &zero, c, DIM);
    if (ids[l] >= 0) pop();
    for (size_t k = 0; k < SWEEP_BYTES / sizeof *sweep; k += 8) /* a line each */
      sum += sweep[at + k];
    at = (at + SWEEP_BYTES / sizeof *sweep) % (SWEEP_TOTAL / sizeof *sweep);
  }
  double t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  printf("%.1f %.1f %llu\n", (t1 - t0) / (double)calls, (c1 - c0) / (double)calls,
         (unsigned long long)(sum & 1));
  cublasDestroy(h);
  free(sweep);
  return 0;
}

/* One cublasLtMatmul as PyTorch's addmm with a bias makes it (gemm_and_bias):
 * a matmul descriptor and three layouts created, attributes set (transposes,
 * the BIAS epilogue and its pointer), the call, everything destroyed. */
static cublasStatus_t lt_call(cublasLtHandle_t lt, const float *a, const float *b, float *c,
                              const float *bias) {
  const float one = 1, zero = 0;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasStatus_t st = cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (st != CUBLAS_STATUS_SUCCESS) return st;
  cublasOperation_t n = CUBLAS_OP_N;
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &n, sizeof n);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, DIM, DIM, DIM);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, DIM, DIM, DIM);
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, DIM, DIM, DIM);
  st = cublasLtMatmul(lt, op, &one, a, la, b, lb, &zero, c, lc, c, lc, NULL, NULL, 0, 0);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(op);
  return st;
}

static int lt_child(long calls) {
  cublasLtHandle_t lt;
  float *a, *b, *c, *bias, host[DIM * DIM];
  for (int i = 0; i < DIM * DIM; i++)
    host[i] = (float)(i % 5) - 2.0f;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS || cudaMalloc((void **)&a, sizeof host) ||
      cudaMalloc((void **)&b, sizeof host) || cudaMalloc((void **)&c, sizeof host) ||
      cudaMalloc((void **)&bias, DIM * sizeof(float))) {
    fputs("hook_overhead: CUDA setup failed (is LD_LIBRARY_PATH the simcuda dir?)\n", stderr);
    return 1;
  }
  cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemcpy(b, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemcpy(bias, host, DIM * sizeof(float), cudaMemcpyHostToDevice);
  for (long i = 0; i < calls / 10 + 100; i++) /* warm up: sites, caches, lazy init */
    if (lt_call(lt, a, b, c, bias) != CUBLAS_STATUS_SUCCESS) return 1;
  double t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (long i = 0; i < calls; i++)
    lt_call(lt, a, b, c, bias);
  double t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  printf("%.1f %.1f\n", (t1 - t0) / (double)calls, (c1 - c0) / (double)calls);
  cublasLtDestroy(lt);
  return 0;
}

#ifdef HOOK_OVERHEAD_CUDNN
/* A 1x1 convolution of a 1x1xDIMxDIM tensor: the backend graph up to its
 * plan, built once (PyTorch caches plans by shape). Returns the plan or NULL. */
enum { CV_UID_X = 1, CV_UID_W, CV_UID_Y };
static cudnnBackendDescriptor_t cv_tensor(int64_t uid, const int64_t dims[4]) {
  int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  int64_t alignment = 16;
  cudnnDataType_t dt = CUDNN_DATA_FLOAT;
  cudnnBackendDescriptor_t t;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t)) return NULL;
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  return cudnnBackendFinalize(t) ? NULL : t;
}

static cudnnBackendDescriptor_t cv_plan(cudnnHandle_t h) {
  int64_t xd[4] = {1, 1, DIM, DIM}, wd[4] = {1, 1, 1, 1};
  cudnnBackendDescriptor_t x = cv_tensor(CV_UID_X, xd), w = cv_tensor(CV_UID_W, wd),
                           y = cv_tensor(CV_UID_Y, xd);
  if (!x || !w || !y) return NULL;
  cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  int64_t nsd = 2, ones[2] = {1, 1}, pads[2] = {0, 0};
  cudnnBackendDescriptor_t c, op, g, heur, cfg, plan;
  const cudnnBackendAttributeType_t D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &c)) return NULL;
  cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
                           &mode);
  cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &nsd);
  cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones);
  cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones);
  cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  if (cudnnBackendFinalize(c)) return NULL;
  float alpha = 1, beta = 0;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, &op))
    return NULL;
  cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &x);
  cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &w);
  cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &y);
  cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &c);
  cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1,
                           &alpha);
  cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1,
                           &beta);
  if (cudnnBackendFinalize(op)) return NULL;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g)) return NULL;
  cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, &op);
  cudnnBackendSetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  if (cudnnBackendFinalize(g)) return NULL;
  cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur)) return NULL;
  cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, D, 1, &g);
  cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm);
  if (cudnnBackendFinalize(heur)) return NULL;
  int64_t count = 0;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg)) return NULL;
  if (cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, 1, &count, &cfg) ||
      count < 1)
    return NULL;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan)) return NULL;
  cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D, 1, &cfg);
  return cudnnBackendFinalize(plan) ? NULL : plan;
}

/* One execution as a framework makes it: a new variant pack around the call. */
static cudnnStatus_t cv_call(cudnnHandle_t h, cudnnBackendDescriptor_t plan, void *ptrs[3],
                             void *ws) {
  int64_t uids[3] = {CV_UID_X, CV_UID_W, CV_UID_Y};
  cudnnBackendDescriptor_t vp;
  cudnnStatus_t st = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
  if (st) return st;
  cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
  cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs);
  cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
  st = cudnnBackendFinalize(vp);
  if (!st) st = cudnnBackendExecute(h, plan, vp);
  cudnnBackendDestroyDescriptor(vp);
  return st;
}

/* Executions as a model's layers make them: CV_PLANS plans, each of a graph
 * of its own (the same convolution, so that every execution does the same
 * work), executed in turn; plans = 1: one plan again and again. */
enum { CV_PLANS = 64 };
static int cudnn_child(long calls, int plans) {
  cudnnHandle_t h;
  float *x, *w, *y, host[DIM * DIM];
  void *ws;
  for (int i = 0; i < DIM * DIM; i++)
    host[i] = (float)(i % 5) - 2.0f;
  if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS || cudaMalloc((void **)&x, sizeof host) ||
      cudaMalloc((void **)&w, sizeof(float)) || cudaMalloc((void **)&y, sizeof host) ||
      cudaMalloc(&ws, 1 << 16)) {
    fputs("hook_overhead: CUDA setup failed (is LD_LIBRARY_PATH the simcuda dir?)\n", stderr);
    return 1;
  }
  cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemcpy(w, host, sizeof(float), cudaMemcpyHostToDevice);
  cudnnBackendDescriptor_t plan[CV_PLANS];
  for (int i = 0; i < plans; i++)
    if (!(plan[i] = cv_plan(h))) {
      fputs("hook_overhead: the cuDNN backend plan did not finalize\n", stderr);
      return 1;
    }
  void *ptrs[3] = {x, w, y};
  for (long i = 0; i < calls / 10 + 100; i++) /* warm up: sites, caches, lazy init */
    if (cv_call(h, plan[i % plans], ptrs, ws) != CUDNN_STATUS_SUCCESS) return 1;
  double t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (long i = 0; i < calls; i++)
    cv_call(h, plan[i % plans], ptrs, ws);
  double t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  printf("%.1f %.1f\n", (t1 - t0) / (double)calls, (c1 - c0) / (double)calls);
  cudnnDestroy(h);
  return 0;
}
/* The legacy API as C programs and older frameworks call it: descriptors
 * made once, a cudnnConvolutionForward per call (the same 1x1 convolution). */
static int cudnn_legacy_child(long calls) {
  cudnnHandle_t h;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  float *x, *w, *y, host[DIM * DIM], one = 1, zero = 0;
  void *ws;
  for (int i = 0; i < DIM * DIM; i++)
    host[i] = (float)(i % 5) - 2.0f;
  if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS || cudaMalloc((void **)&x, sizeof host) ||
      cudaMalloc((void **)&w, sizeof(float)) || cudaMalloc((void **)&y, sizeof host) ||
      cudaMalloc(&ws, 1 << 16) || cudnnCreateTensorDescriptor(&xd) ||
      cudnnCreateTensorDescriptor(&yd) || cudnnCreateFilterDescriptor(&wd) ||
      cudnnCreateConvolutionDescriptor(&cd) ||
      cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, DIM, DIM) ||
      cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, DIM, DIM) ||
      cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 1, 1) ||
      cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                      CUDNN_DATA_FLOAT)) {
    fputs("hook_overhead: cuDNN legacy setup failed (is LD_LIBRARY_PATH the simcuda dir?)\n",
          stderr);
    return 1;
  }
  cudaMemcpy(x, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemcpy(w, host, sizeof(float), cudaMemcpyHostToDevice);
  const cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  for (long i = 0; i < calls / 10 + 100; i++) /* warm up: sites, caches, lazy init */
    if (cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo, ws, 1 << 16, &zero, yd, y) !=
        CUDNN_STATUS_SUCCESS)
      return 1;
  double t0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  for (long i = 0; i < calls; i++)
    cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo, ws, 1 << 16, &zero, yd, y);
  double t1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  printf("%.1f %.1f\n", (t1 - t0) / (double)calls, (c1 - c0) / (double)calls);
  cudnnDestroy(h);
  return 0;
}
#endif

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The first call timed alone, then the median of the next FIRST_NEXT. */
enum { FIRST_NEXT = 201 };
static int first_child(void) {
  cublasHandle_t h;
  float *a, *b, *c, host[DIM * DIM];
  for (int i = 0; i < DIM * DIM; i++)
    host[i] = (float)(i % 5) - 2.0f;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cudaMalloc((void **)&a, sizeof host) ||
      cudaMalloc((void **)&b, sizeof host) || cudaMalloc((void **)&c, sizeof host))
    return 1;
  cudaMemcpy(a, host, sizeof host, cudaMemcpyHostToDevice);
  cudaMemcpy(b, host, sizeof host, cudaMemcpyHostToDevice);
  const float one = 1, zero = 0;
  static double t[FIRST_NEXT + 1];
  for (int i = 0; i <= FIRST_NEXT; i++) {
    double t0 = now_ns(CLOCK_MONOTONIC);
    cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &one, a, DIM, b, DIM, &zero, c, DIM);
    t[i] = now_ns(CLOCK_MONOTONIC) - t0;
  }
  qsort(t + 1, FIRST_NEXT, sizeof t[0], cmp_double);
  printf("%.1f %.1f\n", t[0], t[1 + FIRST_NEXT / 2]);
  cublasDestroy(h);
  return 0;
}

typedef struct config {
  const char *name;
  const char *env[6]; /* NAME=VALUE, NULL-terminated; preload added when `preload` */
  int preload;
} config;

/* Wall and CPU ns per call into ret[0], ret[1]; -1 if the child failed. */
static int run_child(const char *self, const char *lib, const char *out, long calls,
                     const config *cfg, double ret[2], const char *mode) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    if (cfg->preload) {
      setenv("LD_PRELOAD", lib, 1);
      setenv("CUDA_INJECTION64_PATH", lib, 1); /* as `mpprof run` does: activation at cuInit */
      setenv("MPPROF_OUT", out, 1);
      setenv("MPPROF_CHECKPOINT_S", "0", 1);
    }
    for (int i = 0; cfg->env[i]; i++)
      putenv((char *)cfg->env[i]);
    char n[32];
    snprintf(n, sizeof n, "%ld", calls);
    execl(self, self, mode, n, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char buf[64] = "";
  ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int st;
  waitpid(pid, &st, 0);
  if (got <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  buf[got] = '\0';
  return sscanf(buf, "%lf %lf", &ret[0], &ret[1]) == 2 ? 0 : -1;
}

/* Each configuration's child timed in interleaved rounds, printed against
 * the bare call (configs[0]); non-zero if a child failed. */
static int table(const char *self, const char *lib, const char *out, long calls,
                 const config *configs, size_t nc, const char *mode) {
  double ns[8], cpu[8];
  /* The machine may be shared: rounds interleave the configurations and each
   * keeps its fastest round, which is the least disturbed one. */
  enum { ROUNDS = 5 };
  printf("%-48s %10s %12s %8s %10s %12s %8s\n", "configuration", "ns/call", "overhead ns", "ratio",
         "cpu ns", "cpu overhead", "ratio");
  int rc = 0;
  for (size_t i = 0; i < nc; i++)
    ns[i] = cpu[i] = 1e300;
  for (int round = 0; round < ROUNDS; round++)
    for (size_t i = 0; i < nc; i++) {
      double t[2];
      if (run_child(self, lib, out, calls, &configs[i], t, mode) < 0 || ns[i] < 0) {
        ns[i] = -1;
        continue;
      }
      if (t[0] < ns[i]) ns[i] = t[0];
      if (t[1] < cpu[i]) cpu[i] = t[1];
    }
  printf("(fastest of %d interleaved rounds)\n", ROUNDS);
  for (size_t i = 0; i < nc; i++) {
    if (ns[i] < 0) {
      printf("%-48s failed\n", configs[i].name);
      rc = 1;
      continue;
    }
    if (i == 0)
      printf("%-48s %10.1f %12s %8s %10.1f %12s %8s\n", configs[i].name, ns[i], "-", "1.00", cpu[i],
             "-", "1.00");
    else
      printf("%-48s %10.1f %12.1f %8.2f %10.1f %12.1f %8.2f\n", configs[i].name, ns[i],
             ns[i] - ns[0], ns[i] / ns[0], cpu[i], cpu[i] - cpu[0], cpu[i] / cpu[0]);
  }
  return rc;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "--child")) return child(argc > 2 ? atol(argv[2]) : 100000);
  if (argc >= 2 && !strcmp(argv[1], "--first-child")) return first_child();
  if (argc >= 2 && !strcmp(argv[1], "--layers-child"))
    return layers_child(argc > 2 ? atol(argv[2]) : 100000);
  if (argc >= 2 && !strcmp(argv[1], "--lt-child"))
    return lt_child(argc > 2 ? atol(argv[2]) : 100000);
#ifdef HOOK_OVERHEAD_CUDNN
  if (argc >= 2 && !strcmp(argv[1], "--cudnn-child"))
    return cudnn_child(argc > 2 ? atol(argv[2]) : 100000, 1);
  if (argc >= 2 && !strcmp(argv[1], "--cudnn-plans-child"))
    return cudnn_child(argc > 2 ? atol(argv[2]) : 100000, CV_PLANS);
  if (argc >= 2 && !strcmp(argv[1], "--cudnn-legacy-child"))
    return cudnn_legacy_child(argc > 2 ? atol(argv[2]) : 100000);
#endif
  if (argc < 2) {
    fputs("usage: hook_overhead PATH/libmpprof.so [CALLS]\n", stderr);
    return 2;
  }
  const char *lib = argv[1];
  long calls = argc > 2 ? atol(argv[2]) : 100000;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  char out[] = "/tmp/mpprof-hook-overhead-XXXXXX";
  if (!mkdtemp(out)) {
    perror("hook_overhead: mkdtemp");
    return 1;
  }

  static const config configs[] = {
      {"bare call (no mpprof)", {NULL}, 0},
      {"mpprof, scan none, CUPTI off", {"MPPROF_SCAN=none", "MPPROF_CUPTI=off", NULL}, 1},
      {"  same, timeline events capped (no clock reads)",
       {"MPPROF_SCAN=none", "MPPROF_CUPTI=off", "MPPROF_MAX_EVENTS=0", NULL},
       1},
      {"mpprof, scan none, CUPTI on", {"MPPROF_SCAN=none", NULL}, 1},
      {"mpprof, scan all (host scanner), CUPTI off",
       {"MPPROF_SCAN=all", "MPPROF_SAMPLE=1", "MPPROF_CUPTI=off", NULL},
       1},
      {"mpprof default (scan all, sample auto, CUPTI on)", {NULL}, 1},
      {"mpprof disabled (MPPROF_DISABLE=1)", {"MPPROF_DISABLE=1", NULL}, 1},
  };
  printf("hook_overhead: %ld calls of cublasSgemm_v2 %dx%dx%d under simcuda\n", calls, DIM, DIM,
         DIM);
  int rc = table(self, lib, out, calls, configs, sizeof configs / sizeof configs[0], "--child");
  static const config short_configs[] = {
      {"bare call (no mpprof)", {NULL}, 0},
      {"mpprof, scan none, CUPTI off", {"MPPROF_SCAN=none", "MPPROF_CUPTI=off", NULL}, 1},
      {"mpprof default (scan all, sample auto, CUPTI on)", {NULL}, 1},
  };
  printf("\nhook_overhead: %ld calls of the same GEMM from %d layers in turn (a scope each, as "
         "the PyTorch integration pushes), %d KiB of a %d MiB buffer read between two calls, timed "
         "once every site samples at its cap\n",
         calls, LAYERS, SWEEP_BYTES >> 10, SWEEP_TOTAL >> 20);
  rc |= table(self, lib, out, calls, short_configs, sizeof short_configs / sizeof short_configs[0],
              "--layers-child");
  printf("\nhook_overhead: %ld calls of cublasLtMatmul %dx%dx%d with a bias, descriptors and "
         "layouts made and destroyed around each (as PyTorch's addmm does)\n",
         calls, DIM, DIM, DIM);
  rc |= table(self, lib, out, calls, short_configs, sizeof short_configs / sizeof short_configs[0],
              "--lt-child");
#ifdef HOOK_OVERHEAD_CUDNN
  printf("\nhook_overhead: %ld calls of cudnnBackendExecute, a 1x1 convolution of 1x1x%dx%d, "
         "the plan kept, a variant pack made and destroyed around each (as PyTorch's cuDNN "
         "path does)\n",
         calls, DIM, DIM);
  rc |= table(self, lib, out, calls, short_configs, sizeof short_configs / sizeof short_configs[0],
              "--cudnn-child");
  printf("\nhook_overhead: %ld calls of cudnnBackendExecute from %d plans in turn (as a model's "
         "layers make them; each of a graph of its own, the same convolution), a variant pack "
         "made and destroyed around each\n",
         calls, CV_PLANS);
  rc |= table(self, lib, out, calls, short_configs, sizeof short_configs / sizeof short_configs[0],
              "--cudnn-plans-child");
  printf("\nhook_overhead: %ld calls of cudnnConvolutionForward (the legacy API), the same "
         "convolution, its descriptors made once\n",
         calls);
  rc |= table(self, lib, out, calls, short_configs, sizeof short_configs / sizeof short_configs[0],
              "--cudnn-legacy-child");
#endif
  /* The first call: median over processes (each process has one first call). */
  static const config firsts[] = {
      {"bare call (no mpprof)", {NULL}, 0},
      {"mpprof --sample 1 (scan all), CUPTI on", {"MPPROF_SCAN=all", "MPPROF_SAMPLE=1", NULL}, 1},
      {"mpprof --sample 1, CUPTI off",
       {"MPPROF_SCAN=all", "MPPROF_SAMPLE=1", "MPPROF_CUPTI=off", NULL},
       1},
      {"mpprof scan none, CUPTI off", {"MPPROF_SCAN=none", "MPPROF_CUPTI=off", NULL}, 1},
  };
  enum { PROCS = 9 };
  printf("\nfirst hooked call of a process (median of %d processes) vs the median of the next %d "
         "calls\n",
         PROCS, FIRST_NEXT);
  printf("%-48s %12s %12s %8s\n", "configuration", "first ns", "next ns", "ratio");
  for (size_t i = 0; i < sizeof firsts / sizeof firsts[0]; i++) {
    double f[PROCS], x[PROCS];
    int ok = 1;
    for (int r = 0; r < PROCS && ok; r++) {
      double t[2];
      if (run_child(self, lib, out, 0, &firsts[i], t, "--first-child") < 0)
        ok = 0;
      else
        f[r] = t[0], x[r] = t[1];
    }
    if (!ok) {
      printf("%-48s failed\n", firsts[i].name);
      rc = 1;
      continue;
    }
    qsort(f, PROCS, sizeof f[0], cmp_double);
    qsort(x, PROCS, sizeof x[0], cmp_double);
    printf("%-48s %12.1f %12.1f %8.1f\n", firsts[i].name, f[PROCS / 2], x[PROCS / 2],
           f[PROCS / 2] / x[PROCS / 2]);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
  if (system(cmd) != 0) rc = 1;
  return rc;
}
