/* Set-up for driving libmpprof's core in-process (see core_fixture.h). */
#include "tests/core_fixture.h"

#include "profiler/nvtx.h"
#include "profiler/sites.h"
#include "profiler/train.h"

const mpp_gemm_ctx mpp_fixture_host_ctx = {.math_mode = 0, .pointer_mode = 0};

void mpp_fixture_reset(mpp_scan_mode scan, uint32_t max_sites, uint64_t max_events) {
  mpp_nvtx_thread_reset();
  mpp_sites_reset();
  mpp_train_reset();
  mpp_cfg.scan = scan;
  mpp_cfg.sample = 1;
  mpp_cfg.max_sites = max_sites;
  mpp_cfg.max_events = max_events;
}

mpp_gemm_call mpp_fixture_gemm4(const char *api, const void *a, const void *b, const void *c) {
  return (mpp_gemm_call){.api = api,
                         .m = 4,
                         .n = 4,
                         .k = 4,
                         .lda = 4,
                         .ldb = 4,
                         .ldc = 4,
                         .A = a,
                         .B = b,
                         .C = c,
                         .batch = 1,
                         .Atype = 0, /* CUDA_R_32F */
                         .Btype = 0,
                         .Ctype = 0,
                         .compute = 68, /* CUBLAS_COMPUTE_32F */
                         .scale_type = 0};
}

void mpp_fixture_record(const mpp_gemm_call *g, const mpp_gemm_ctx *ctx, mpp_op *ret_op,
                        mpp_call *ret_call) {
  mpp_op op;
  mpp_call call;
  mpp_op *o = ret_op ? ret_op : &op;
  mpp_call *c = ret_call ? ret_call : &call;
  mpp_gemm_decode(o, g, ctx);
  mpp_call_begin(c, o);
  mpp_call_end(c, o, true);
}
