/* What the simcuda libraries share among themselves (not a CUDA API).
 * Exported by simcuda's libcuda.so.1 with the simcuda_ prefix; the cuBLAS,
 * cuBLASLt and cuDNN stand-ins link it. All "device" memory is host memory;
 * streams are handles and work runs synchronously on the calling thread. */
#ifndef SIMCUDA_INTERNAL_H
#define SIMCUDA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

typedef struct simcuda_kernel {
  const char *name; /* realistic library kernel name (see kernel_names.def) */
  CUstream stream;  /* cudaStream_t and CUstream are the same handle in simcuda */
  unsigned grid[3];
  unsigned block[3];
} simcuda_kernel;

/* Bracket the host computation of one "kernel". When simcuda's CUPTI has
 * CONCURRENT_KERNEL enabled, finish emits a CUpti_ActivityKernel10 record
 * (plus the driver launch API record and, when an external id is pushed on
 * this thread, the external correlation record). */
uint64_t simcuda_kernel_start(const simcuda_kernel *k);
void simcuda_kernel_finish(const simcuda_kernel *k, uint64_t token);

/* ---- Added by simcuda's libcuda (compatible extensions) ---- */

/* The one clock of simcuda: CLOCK_REALTIME in nanoseconds (what CUPTI
 * timestamps and cuptiGetTimestamp report). */
uint64_t simcuda_now_ns(void);

/* Compute capability of the simulated device times ten: 90 (default) or
 * 100 when SIMCUDA_SM=100. */
int simcuda_device_sm(void);

/* The stream-capture check of a "potentially unsafe" call (cuda.h,
 * cuThreadExchangeStreamCaptureMode; simcuda's: cudaMalloc, cudaMallocHost,
 * cudaEventQuery and cudaEventSynchronize of an event not captured),
 * by the calling thread's capture interaction mode: CUDA_SUCCESS, or
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED with the captures it breaks
 * invalidated. */
CUresult simcuda_unsafe_call(void);

/* What using stream s meets from the captures in progress: issuing work to
 * it (sync 0), or waiting for or querying its work (sync 1). CUDA_SUCCESS;
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT for the legacy stream while a blocking
 * stream captures; CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED for waiting on a
 * capturing stream. An error invalidates the captures concerned. s must be
 * valid (simcuda_stream_valid). */
CUresult simcuda_stream_use(CUstream s, int sync);

/* The runtime's allocations, as the driver's pointer queries know them:
 * track a live one (0, or -1 when out of memory), untrack it when freed. */
int simcuda_mem_track(const void *p, size_t size);
void simcuda_mem_untrack(const void *p);

/* Numeric id of a stream as CUPTI reports it (the NULL/legacy/per-thread
 * default stream is 7, created streams count up from 13). 0 for a handle
 * simcuda did not create. */
uint32_t simcuda_stream_id(CUstream stream);
/* 1 when the handle is NULL, a default-stream alias or a live simcuda stream. */
int simcuda_stream_valid(CUstream stream);

/* One finished kernel as the hub hands it to simcuda's CUPTI. */
typedef struct simcuda_kernel_event {
  const simcuda_kernel *kernel;
  uint32_t stream_id;
  uint64_t api_start, api_end; /* the cuLaunchKernel call */
  uint64_t start, end;         /* the kernel itself */
} simcuda_kernel_event;

/* libcupti.so.13 registers its sink here (NULL detaches). Called on the
 * thread that ran the kernel, so thread-local state (external correlation
 * stacks) is the launching thread's. */
void simcuda_cupti_attach(void (*sink)(const simcuda_kernel_event *ev));

/* Kernel-name lookup (kernel_names.def). Types are cudaDataType_t values,
 * compute a cublasComputeType_t; op 'N' / 'T' / 'C'. aligned: every pointer
 * and leading dimension is a multiple of 16 bytes. epilogue_bias: a bias
 * epilogue is fused. Returns the name and fills grid/block. */
typedef struct simcuda_gemm_shape {
  int a_type, b_type, c_type, d_type;
  int compute;
  char op_a, op_b;
  uint64_t m, n, k, batch;
  int aligned;
  int epilogue_bias;
} simcuda_gemm_shape;
const char *simcuda_gemm_kernel_name(const simcuda_gemm_shape *g, unsigned grid[3],
                                     unsigned block[3]);

/* cuDNN convolution kernels. data_type / compute_type: cudnnDataType_t
 * values (FLOAT 0, DOUBLE 1, HALF 2, BFLOAT16 9); math_type: cudnnMathType_t
 * (DEFAULT 0, TENSOR_OP 1, TENSOR_OP_ALLOW_CONVERSION 2, FMA 3). Dimensions
 * give the implicit GEMM shape used for the grid: gemm_m = N*P*Q (fprop),
 * gemm_n = K, as the caller computes them. channels_aligned: C and K are
 * multiples of 8 (what the Tensor Core implicit-GEMM kernels need). */
typedef enum simcuda_conv_op {
  SIMCUDA_CONV_FPROP = 0,
  SIMCUDA_CONV_DGRAD = 1,
  SIMCUDA_CONV_WGRAD = 2,
} simcuda_conv_op;
typedef struct simcuda_conv_shape {
  simcuda_conv_op op;
  int data_type;
  int compute_type;
  int math_type;
  int groups;
  int channels_aligned;
  uint64_t gemm_m, gemm_n;
} simcuda_conv_shape;
const char *simcuda_conv_kernel_name(const simcuda_conv_shape *c, unsigned grid[3],
                                     unsigned block[3]);

/* The Itanium-mangled symbol of a readable C++ kernel name of
 * kernel_names.def ("void ns::k<...>(...)"), malloc'ed; NULL for a name that
 * is not of that form (extern "C" names: reported as they are). mangle.c. */
char *simcuda_mangle(const char *readable);

#endif
