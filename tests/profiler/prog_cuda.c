/* prog_cuda: the pieces the profiler's CUDA test programs share (prog_cuda.h). */
#include "prog_cuda.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void die(const char *what, int code) {
  fprintf(stderr, "%s: %s failed (%d)\n", program_invocation_short_name, what, code);
  exit(70);
}

uint16_t f2h(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int e = (int)((x >> 23) & 0xff) - 127 + 15;
  if ((x & 0x7fffffffu) == 0) return (uint16_t)sign;
  return (uint16_t)(sign | (uint32_t)e << 10 | ((x >> 13) & 0x3ffu));
}

cudnnBackendDescriptor_t be_new(cudnnBackendDescriptorType_t t) {
  cudnnBackendDescriptor_t d;
  CK(cudnnBackendCreateDescriptor(t, &d));
  return d;
}

static cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t dt, int nd, const int64_t *dims,
                                       const int64_t *strides, bool virt) {
  cudnnBackendDescriptor_t t = be_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  int64_t align = 16;
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
  if (virt)
    CK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt));
  CK(cudnnBackendFinalize(t));
  return t;
}

static void packed_strides(int nd, const int64_t *dims, int64_t *ret_strides) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; s *= dims[i], i--)
    ret_strides[i] = s;
}

cudnnBackendDescriptor_t be_tensor(int64_t uid, cudnnDataType_t dt, int nd, const int64_t *dims) {
  int64_t strides[8];
  packed_strides(nd, dims, strides);
  return tensor(uid, dt, nd, dims, strides, false);
}

cudnnBackendDescriptor_t be_tensor_strided(int64_t uid, cudnnDataType_t dt, int nd,
                                           const int64_t *dims, const int64_t *strides) {
  return tensor(uid, dt, nd, dims, strides, false);
}

cudnnBackendDescriptor_t be_vtensor(int64_t uid, cudnnDataType_t dt, int nd, const int64_t *dims) {
  int64_t strides[8];
  packed_strides(nd, dims, strides);
  return tensor(uid, dt, nd, dims, strides, true);
}

cudnnBackendDescriptor_t be_conv_nd(int nsp, cudnnConvolutionMode_t mode, const int64_t *pad,
                                    const int64_t *stride, const int64_t *dil) {
  cudnnBackendDescriptor_t conv = be_new(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  int64_t n = nsp;
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                              &f32));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE,
                              1, &mode));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &n));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, n, pad));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, n,
                              pad));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, n,
                              stride));
  CK(cudnnBackendSetAttribute(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, n, dil));
  CK(cudnnBackendFinalize(conv));
  return conv;
}

cudnnBackendDescriptor_t be_conv(int64_t pad) {
  const int64_t pads[2] = {pad, pad}, one2[2] = {1, 1};
  return be_conv_nd(2, CUDNN_CROSS_CORRELATION, pads, one2, one2);
}

cudnnBackendDescriptor_t be_matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b,
                                   cudnnBackendDescriptor_t c, cudnnBackendDescriptor_t m_override,
                                   cudnnDataType_t comp, cudnnBackendDescriptor_t *ret_mm) {
  cudnnBackendDescriptor_t mm = be_new(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
  CK(cudnnBackendFinalize(mm));
  cudnnBackendDescriptor_t op = be_new(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, BE_D, 1, &a));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, BE_D, 1, &b));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, BE_D, 1, &c));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, BE_D, 1, &mm));
  if (m_override)
    CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, BE_D, 1,
                                &m_override));
  CK(cudnnBackendFinalize(op));
  *ret_mm = mm;
  return op;
}

cudnnBackendDescriptor_t be_plan(cudnnHandle_t h, int nops, cudnnBackendDescriptor_t *ops,
                                 int64_t index, cudnnBackendDescriptor_t keep[4]) {
  cudnnBackendDescriptor_t graph = be_new(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, BE_D, nops, ops));
  CK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CK(cudnnBackendFinalize(graph));
  cudnnBackendDescriptor_t engine = be_new(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, BE_D, 1, &graph));
  CK(cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &index));
  CK(cudnnBackendFinalize(engine));
  cudnnBackendDescriptor_t cfg = be_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, BE_D, 1, &engine));
  CK(cudnnBackendFinalize(cfg));
  cudnnBackendDescriptor_t plan = be_new(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CK(cudnnBackendSetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, BE_D, 1, &cfg));
  CK(cudnnBackendFinalize(plan));
  keep[0] = graph, keep[1] = engine, keep[2] = cfg, keep[3] = plan;
  return plan;
}
