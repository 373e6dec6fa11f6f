#!/bin/sh
# tc_audit turns site lines into verdicts: an fp32 SGEMM on an ffma kernel is
# not eligible and not on Tensor Cores; an fp16 GEMM on nvjet is both.
set -eu
out=$(printf 'fp32\tfp32\tfp32\tfp32\t32F\tDEFAULT\t9.0\t64\t64\t64\t64\t64\t64\t256\tsm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas\nfp16\tfp16\tfp32\tfp32\t32F\tDEFAULT\t9.0\t64\t64\t64\t64\t64\t64\t256\tnvjet_sm90_hsh_32x64_64x16_4x1_v_bz_NNN\n' | "$1" | cut -f1-4 | tr '\t' ' ')
want="0 0 no invalid
1 1 yes fp16"
[ "$out" = "$want" ] || { printf 'got:\n%s\nwant:\n%s\n' "$out" "$want" >&2; exit 1; }
