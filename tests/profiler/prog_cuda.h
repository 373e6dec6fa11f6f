/* prog_cuda: what the profiler's CUDA test programs (mpp_testprog,
 * mpp_fidelity_prog) share: failing on a nonzero status, fp16 from small
 * floats, and the cuDNN backend descriptors their graphs are built from.
 * Every function exits 70 with the program's name and the failed call on
 * stderr when a call fails. */
#ifndef MPPROF_TESTS_PROG_CUDA_H
#define MPPROF_TESTS_PROG_CUDA_H

#include <stdint.h>

#include <cudnn.h>

_Noreturn void die(const char *what, int code);
#define CK(call)                                                                                   \
  do {                                                                                             \
    int rc_ = (int)(call);                                                                         \
    if (rc_ != 0) die(#call, rc_);                                                                 \
  } while (0)

/* exact for the small integers the programs use */
uint16_t f2h(float f);

#define BE_D CUDNN_TYPE_BACKEND_DESCRIPTOR

cudnnBackendDescriptor_t be_new(cudnnBackendDescriptorType_t t);
/* A tensor with 16-byte alignment, packed row major ... */
cudnnBackendDescriptor_t be_tensor(int64_t uid, cudnnDataType_t dt, int nd, const int64_t *dims);
/* ... with strides of its own ... */
cudnnBackendDescriptor_t be_tensor_strided(int64_t uid, cudnnDataType_t dt, int nd,
                                           const int64_t *dims, const int64_t *strides);
/* ... or virtual (inside a fused graph: no memory), packed. */
cudnnBackendDescriptor_t be_vtensor(int64_t uid, cudnnDataType_t dt, int nd, const int64_t *dims);

/* A 2-d cross-correlation of unit strides and dilations, padded by `pad`
 * on every side, computing in fp32. */
/* A convolution descriptor: fp32 compute, nsp spatial dimensions (the
 * same padding before and after); be_conv: 2-D cross-correlation of padding
 * pad, strides and dilations 1. */
cudnnBackendDescriptor_t be_conv_nd(int nsp, cudnnConvolutionMode_t mode, const int64_t *pad,
                                    const int64_t *stride, const int64_t *dil);
cudnnBackendDescriptor_t be_conv(int64_t pad);

/* A matmul operation C = A B computing in `comp`, with an M override
 * tensor unless m_override is NULL; its matmul descriptor goes to *ret_mm. */
cudnnBackendDescriptor_t be_matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                                   cudnnBackendDescriptor_t c, cudnnBackendDescriptor_t m_override,
                                   cudnnDataType_t comp, cudnnBackendDescriptor_t *ret_mm);

/* The plan of a graph of ops[0..nops) on engine `index`; the graph, engine,
 * engine config and plan go to keep[0..3] (the caller destroys them). */
cudnnBackendDescriptor_t be_plan(cudnnHandle_t h, int nops, cudnnBackendDescriptor_t *ops,
                                 int64_t index, cudnnBackendDescriptor_t keep[4]);

#endif
