/* Host side of the device shadow (private to profiler/gpu and tests/gpu): the
 * parameters of kernels/shadow.cu's launches for one candidate of one GEMM,
 * so that the device pipeline computes what mp_shadow_run defines
 * (analysis/shadow.h): amax of op(A) and op(B), quant of both operands into
 * fp32 column-major matrices (A m x k with ld m, B k x n with ld k, batch
 * after batch), an fp32 GEMM (no TF32) of the two, err against the
 * reference's product. tests/gpu/test_shadow_kernel_cpu.cpp runs these plans
 * on the CPU and compares every output with the host path's. */
#ifndef MPPROF_PROFILER_GPU_SHADOW_PLAN_H
#define MPPROF_PROFILER_GPU_SHADOW_PLAN_H

#include <stdbool.h>

#include "analysis/shadow.h"
#include "kernels/shadow_abi.h"

#define MPP_SH_REFERENCE MP_SH_COUNT /* quant plan of the reference: exact fp32 operands */

/* Operand A (is_b false: m vectors) or B (n vectors) of g, of k values each. */
mpp_sh_src mpp_sh_src_of(const mp_shadow_gemm *g, bool is_b);
/* Can the device compute candidate c of g? Not the current precision of an
 * fp64 GEMM (it accumulates in double), not a candidate whose source is not
 * a float format, not one mp_shadow_cand_defined refuses. */
bool mpp_sh_cand_on_device(const mp_shadow_gemm *g, mp_shadow_cand c);
/* quant of operand is_b for candidate `cand` (or MPP_SH_REFERENCE) into out.
 * delayed[operand][e5m2]: delayed scaling's scales (mp_amax_history_scale);
 * amax_bits: the device words [A, B] mpp_shadow_amax fills. */
void mpp_sh_quant_plan(const mp_shadow_gemm *g, int cand, bool is_b, const float delayed[2][2],
                       const unsigned *amax_bits, float *out, mpp_sh_quant_params *ret);
/* err of candidate c: the fp32 products ref and cand (m*n*batch each). The
 * caller sets partials, ticket, result (and capture in tests). */
void mpp_sh_err_plan(const mp_shadow_gemm *g, mp_shadow_cand c, const float delayed[2][2],
                     const unsigned *amax_bits, const float *ref, const float *cand,
                     mpp_sh_err_params *ret);
/* The dense copies the device shadow works from (mpp_shadow_copy, on the
 * op's stream right after the op): piece w (MPP_SH_PIECE_*) is op(A), op(B)
 * or the bias as stored, each batch matrix with its leading dimension
 * tightened (one matrix when the op broadcasts it), or the fp8 scale of A,
 * B or D (one float: the program may change it after the op). Bytes of
 * piece w; 0 for one g does not have. */
uint64_t mpp_sh_copy_bytes(const mp_shadow_gemm *g, int w);
/* Every piece (mpp_sh_copy_plan's pieces); a convolution's gather makes A
 * and B, the copy the rest. */
#define MPP_SH_PIECES_ALL ((1u << MPP_SH_COPY_PIECES) - 1)
#define MPP_SH_PIECES_BESIDE_AB (MPP_SH_PIECES_ALL & ~(1u << MPP_SH_PIECE_A | 1u << MPP_SH_PIECE_B))
/* The copy launch of g's pieces among `pieces` (MPP_SH_PIECE_* bits) into
 * dst[w] (mpp_sh_copy_bytes(g, w) bytes each), and *snap: g reading those
 * copies instead of the program's memory. */
void mpp_sh_copy_plan(const mp_shadow_gemm *g, unsigned pieces, void *const dst[MPP_SH_COPY_PIECES],
                      mpp_sh_copy_params *ret, mp_shadow_gemm *snap);
/* A convolution's implicit-GEMM operands gathered (mpp_shadow_gather) into
 * dst[0], dst[1] (mpp_sh_copy_bytes(g, 0 / 1) bytes), g being
 * mp_shadow_conv_shape(cv); *snap: g reading them. */
void mpp_sh_gather_plan(const mp_shadow_conv *cv, const mp_shadow_gemm *g, void *const dst[2],
                        mpp_sh_gather_params *ret, mp_shadow_gemm *snap);
/* The fp16-accumulating products (mpp_shadow_dot16) of g's quant outputs qa,
 * qb into out: what candidate c's fp32 GEMM is replaced by where
 * mp_shadow_cand_accum(g, c) is MP_FP16 (false: c has an fp32 GEMM). */
bool mpp_sh_dot16_plan(const mp_shadow_gemm *g, mp_shadow_cand c, const float *qa, const float *qb,
                       float *out, mpp_sh_dot_params *ret);
/* Blocks for `work` units of MPP_SH_BLOCK threads, at most `cap` (>= 1). */
unsigned mpp_sh_grid(uint64_t work, unsigned cap);

#endif
