/* Kernel names of the backend matmul engines of simcuda's cuDNN stand-in.
 *
 * Convolution kernels come from simcuda's shared table (../kernel_names.def
 * through simcuda_conv_kernel_name). cuDNN's own matmul engines have no row
 * there, so this file holds the four: the Hopper xmma GEMM family of
 * ../shared/kernel-names.md section 1 (seen with the "__5x_cublas" suffix)
 * with the "__5x_cudnn" suffix cuDNN's own xmma kernels carry (section 2),
 * i.e. names by analogy, the dtype field <A><B>_<in><acc>_<out> and the
 * instruction tokens (warpgroupsize = wgmma, ffma = CUDA cores) kept as seen.
 * No row exists for fp16/bf16 matmul without Tensor Cores: the FMA engine
 * refuses that combination. */
#include <stddef.h>

#include "cudnn_sim.h"

typedef struct row {
  cudnnDataType_t dtype;
  simcudnn_math math;
  simcudnn_kernel_name k;
} row;

static const row rows[] = {
    /* Backend matmul: the cuBLAS sm90 xmma GEMM family (§1 Hopper rows) with
     * cuDNN's "__5x_cudnn" suffix, by analogy with the conv rows. */
    {CUDNN_DATA_HALF,
     SIMCUDNN_MATH_TC,
     {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_"
      "k_off_kernel__5x_cudnn",
      128}},
    {CUDNN_DATA_BFLOAT16,
     SIMCUDNN_MATH_TC,
     {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
      "segment_k_off_kernel__5x_cudnn",
      128}},
    {CUDNN_DATA_FLOAT,
     SIMCUDNN_MATH_TC,
     {"sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_"
      "segment_k_off_kernel__5x_cudnn",
      128}},
    {CUDNN_DATA_FLOAT,
     SIMCUDNN_MATH_FMA, /* §1 row "…nn_n_tilesize256x128x8…ffma" */
     {"sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_"
      "alignc4_execute_kernel__5x_cudnn",
      256}},
};

const simcudnn_kernel_name *simcudnn_matmul_kernel(cudnnDataType_t dtype, simcudnn_math math) {
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
    if (rows[i].dtype == dtype && rows[i].math == math) return &rows[i].k;
  return NULL;
}
