/* Internals shared by the files of simcuda's cuDNN 9 stand-in (libcudnn.so.9).
 *
 * The legacy API (cudnn_legacy.c) and the backend graph API (cudnn_backend.c)
 * both reduce a convolution to a simcudnn_conv_problem and a matmul to a
 * simcudnn_matmul_problem, which conv_compute.c runs as one simulated "kernel"
 * on host memory. Nothing here is a CUDA API. */
#ifndef SIMCUDA_CUDNN_SIM_H
#define SIMCUDA_CUDNN_SIM_H

#include <stdbool.h>
#include <stdint.h>

/* The public cuDNN API is what libcudnn.so.9 exports; simcuda builds with
 * -fvisibility=hidden, so the declarations are made default-visible here. */
#pragma GCC visibility push(default)
#include <cudnn.h>
#pragma GCC visibility pop

#include "simcuda_internal.h"

#define SIMCUDNN_MAX_SPATIAL 3 /* 1-D, 2-D and 3-D convolutions */

struct cudnnContext {
  uint32_t magic;
  cudaStream_t stream;
};
#define SIMCUDNN_HANDLE_MAGIC 0x636e6e68u /* "cnnh" */

bool simcudnn_handle_ok(cudnnHandle_t h);

/* Record why a call was refused; cudnnGetLastErrorString returns it. */
void simcudnn_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A strided tensor view: element (i0, i1, ...) lives at sum(i_k * strides[k]). */
typedef struct simcudnn_tensor {
  cudnnDataType_t dtype;
  int nb_dims;
  int64_t dims[CUDNN_DIM_MAX];
  int64_t strides[CUDNN_DIM_MAX];
} simcudnn_tensor;

/* Fully packed strides for dims in the given order (NCHW-like row-major). */
void simcudnn_packed_strides(int nb_dims, const int64_t *dims, int64_t *ret_strides);
/* Bytes per element of the data types the compute loops read and write; 0 otherwise. */
unsigned simcudnn_dtype_size(cudnnDataType_t dtype);
/* Number of elements / span in bytes (largest offset + 1 element). */
int64_t simcudnn_tensor_span_bytes(const simcudnn_tensor *t);

/* Element i of a float/half/bfloat16 buffer as float (exact), and the store
 * with round-to-nearest-even; simcudnn_round_to rounds a value to the type. */
float simcudnn_load(cudnnDataType_t dt, const void *base, int64_t i);
void simcudnn_store(cudnnDataType_t dt, void *base, int64_t i, float v);
float simcudnn_round_to(cudnnDataType_t dt, float v);

/* Which arithmetic a kernel performs. TC: Tensor Core MMA (fp16/bf16 inputs;
 * fp32 inputs are rounded to TF32); FMA: CUDA-core fp32 FMA on exact inputs. */
typedef enum simcudnn_math { SIMCUDNN_MATH_TC = 0, SIMCUDNN_MATH_FMA = 1 } simcudnn_math;

/* True unless NVIDIA_TF32_OVERRIDE=0 forbids TF32 (as it does for real cuDNN). */
bool simcudnn_tf32_allowed(void);

typedef enum simcudnn_conv_kind {
  SIMCUDNN_FPROP = 0, /* y  = conv(x, w) */
  SIMCUDNN_DGRAD,     /* dx = conv^T(dy, w) */
  SIMCUDNN_WGRAD,     /* dw = corr(x, dy) */
} simcudnn_conv_kind;

typedef struct simcudnn_conv_geom {
  int spatial; /* 1..SIMCUDNN_MAX_SPATIAL */
  int64_t pre_pad[SIMCUDNN_MAX_SPATIAL];
  int64_t post_pad[SIMCUDNN_MAX_SPATIAL];
  int64_t stride[SIMCUDNN_MAX_SPATIAL];
  int64_t dilation[SIMCUDNN_MAX_SPATIAL];
  cudnnConvolutionMode_t mode;
  cudnnDataType_t compute;
  int groups; /* 0: infer from C(x) / C(w) */
} simcudnn_conv_geom;

/* One convolution. x/w/y always name the forward roles: for DGRAD x is dx
 * (written) and y is dy (read); for WGRAD w is dw (written). */
typedef struct simcudnn_conv_problem {
  simcudnn_conv_kind kind;
  simcudnn_tensor x, w, y;
  simcudnn_conv_geom geom;
  simcudnn_math math;
  void *x_ptr, *w_ptr, *y_ptr;
  float alpha, beta;
  /* The output is an internal (virtual) tensor of a fused graph: its data
   * type may differ from the inputs'. */
  bool output_any;
  /* Fused epilogue (cudnnConvolutionBiasActivationForward only):
   * y = act(alpha * conv + alpha2 * z + bias). */
  bool epilogue;
  float alpha2;
  const simcudnn_tensor *z;
  const void *z_ptr;
  const simcudnn_tensor *bias;
  const void *bias_ptr;
  bool relu;
} simcudnn_conv_problem;

/* Shape check; fills geom.groups when 0. BAD_PARAM (legacy) or
 * BAD_PARAM_SHAPE_MISMATCH (backend: shape_status) on inconsistency. */
cudnnStatus_t simcudnn_conv_check_shapes(simcudnn_conv_problem *p, cudnnStatus_t shape_status);
/* Output spatial size of a forward convolution, <= 0 when the window doesn't fit. */
int64_t simcudnn_conv_out_dim(int64_t in, int64_t filter, int64_t pre, int64_t post, int64_t stride,
                              int64_t dilation);
/* Data/compute types and math the loops implement; NOT_SUPPORTED* otherwise. */
cudnnStatus_t simcudnn_conv_check_types(const simcudnn_conv_problem *p);
/* The data type of the two inputs (x and w; dy and w for DGRAD). */
cudnnDataType_t simcudnn_conv_input_dtype(const simcudnn_conv_problem *p);
/* Run one convolution as one simulated kernel on the handle's stream. */
cudnnStatus_t simcudnn_conv_run(cudnnHandle_t h, const simcudnn_conv_problem *p);
/* The two halves of simcudnn_conv_run, for fused graphs that add an epilogue
 * inside the same kernel: the kernel's name and geometry, and the loops. */
void simcudnn_conv_kernel(cudnnHandle_t h, const simcudnn_conv_problem *p, simcuda_kernel *ret);
void simcudnn_conv_compute(const simcudnn_conv_problem *p);

/* C[b] = A[b] x B[b]; A: [B, M, K], B: [B, K, N], C: [B, M, N] (2-D means B = 1).
 * A batch of 1 broadcasts. fp32 accumulation, C rounded to its type with RNE. */
typedef struct simcudnn_matmul_problem {
  simcudnn_tensor a, b, c;
  cudnnDataType_t compute;
  simcudnn_math math;
  const void *a_ptr, *b_ptr;
  void *c_ptr;
  bool output_any; /* as for convolutions */
  /* GEMM_M / N / K_OVERRIDE_DESC: tensors of one int32 or int64 value per
   * batch member, the M, N, K its product covers (at most the dims'): only
   * the leading rows / columns of A, B and C are read and written, the rest
   * of C is left as it was. has_ovr without ovr_ptr: shapes only checked. */
  bool has_ovr[3];
  simcudnn_tensor ovr[3];
  const void *ovr_ptr[3];
} simcudnn_matmul_problem;

cudnnStatus_t simcudnn_matmul_check(const simcudnn_matmul_problem *p);
cudnnStatus_t simcudnn_matmul_run(cudnnHandle_t h, const simcudnn_matmul_problem *p);
bool simcudnn_matmul_kernel_of(cudnnHandle_t h, const simcudnn_matmul_problem *p,
                               simcuda_kernel *ret);
void simcudnn_matmul_compute(const simcudnn_matmul_problem *p);

/* Which arithmetic a convolution runs with, as real cuDNN 9 on sm_90 picks
 * it: Tensor Cores unless CUDNN_FMA_MATH, fp32 with TF32 forbidden
 * (NVIDIA_TF32_OVERRIDE=0), channels not multiples of 8 or a grouped conv
 * (the rule simcuda_conv_kernel_name applies to pick the kernel, so the name
 * and the numerics agree). Needs checked shapes (geom.groups known). */
simcudnn_math simcudnn_conv_math(cudnnMathType_t requested, const simcudnn_conv_problem *p);

/* Kernel of the backend matmul engines (kernel_names.c): the name real cuDNN
 * shows on an sm_90 device, NULL when there is none for the data type/math
 * (the caller refuses with NOT_SUPPORTED). */
typedef struct simcudnn_kernel_name {
  const char *name;
  unsigned block; /* threads per block the real kernel uses */
} simcudnn_kernel_name;

const simcudnn_kernel_name *simcudnn_matmul_kernel(cudnnDataType_t dtype, simcudnn_math math);

#endif
