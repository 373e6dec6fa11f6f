/* The set-up of tests and benchmarks that drive libmpprof's core in-process,
 * without CUDA: a clean core, the small fp32 GEMM they record, and a call
 * recorded whole. Shared by tests/profiler, tests/gpu's fake-driver tests
 * and bench/cupti_parse, so each set-up is written once. */
#ifndef MPPROF_TESTS_CORE_FIXTURE_H
#define MPPROF_TESTS_CORE_FIXTURE_H

#include <stdint.h>

#include "profiler/call.h"
#include "profiler/hooks/gemm_decode.h"
#include "profiler/mpp.h"

/* Host scalars (pointer mode 0), default math mode, no stream: the context
 * of a plain host call. */
extern const mpp_gemm_ctx mpp_fixture_host_ctx;

/* Empty site tables, no open NVTX range on this thread, no training state
 * (loss scale, step), and every call sampled, with the scan mode and caps
 * given. */
void mpp_fixture_reset(mpp_scan_mode scan, uint32_t max_sites, uint64_t max_events);

/* A 4x4x4 fp32 GEMM as cuBLAS passes it: CUDA_R_32F A, B and C,
 * CUBLAS_COMPUTE_32F, fp32 scalars, no transposes, one matrix, leading
 * dimensions 4, on a, b and c; alpha and beta NULL. */
mpp_gemm_call mpp_fixture_gemm4(const char *api, const void *a, const void *b, const void *c);

/* g decoded (mpp_gemm_decode) and recorded as one call that succeeded, with
 * nothing between its begin and end; ret_op and ret_call (either may be
 * NULL) get the op and the call as the core left them. */
void mpp_fixture_record(const mpp_gemm_call *g, const mpp_gemm_ctx *ctx, mpp_op *ret_op,
                        mpp_call *ret_call);

#endif
