/* Writes a varied run (fp16-safe, loss-scaled, overflowing, fp32 layers,
 * Tensor Core and CUDA-core kernels, a TF32 site, a hostile and long NVTX name) into DIR/raw and
 * builds its report: the input of the headless-browser test. usage: make_report DIR */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "rawgen.h"
#include "report/report.h"

static cJSON *site(int id, const char *layer, double lo, double hi, const char *kernel, long ns) {
  cJSON *s = rg_gemm(id, "cublasGemmEx", layer, "A=fp16,B=fp16,C=fp32,D=fp32", "32F", "DEFAULT",
                     128, 64, 64, 10 + id);
  rg_tensor(s, "A", MP_FP16, -8, 4, 200);
  rg_tensor(s, "B", MP_FP16, -6, 2, 200);
  rg_tensor(s, "D", MP_FP32, lo, hi, 400);
  rg_kernel(s, kernel, 10 + id, ns);
  return s;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fputs("usage: make_report DIR\n", stderr);
    return 2;
  }
  char raw[4096];
  snprintf(raw, sizeof raw, "%s/raw", argv[1]);
  mkdir(argv[1], 0755);
  mkdir(raw, 0755);
  const char *tc = "nvjet_hsh_128x64_64x4_1x2_h_bz_coopA_NNT";
  const char *simt = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_"
                     "ffma_aligna4_alignc4_execute_kernel__5x_cublas";
  rg_proc p = {"node01", 100, 1, 0, true, "ok", "9.0", "./train"};
  rg_file r;
  if (rg_begin(&r, argv[1], "node01-100.json", &p)) return 1;
  rg_site_end(&r, site(0, "mlp/fc1/fwd", -6, 6, tc, 4000));
  rg_site_end(&r, site(1, "mlp/fc1/bwd", -34, -20, tc, 5000));
  rg_site_end(&r, site(2, "mlp/fc2/fwd", 8, 18, tc, 3000));
  rg_site_end(&r, site(3, "mlp/fc2/bwd", -10, -2, simt, 9000));
  rg_site_end(&r, site(4, "mlp/fc3/fwd", -6, 6, tc, 2000));
  rg_site_end(&r, site(5, "mlp/fc3/bwd", -12, 0, tc, 2500));
  /* A hostile name, and a long one with no space to break at: the page must
   * still fit the window (it was 2312 px wide at 1400). */
  rg_site_end(&r, site(6,
                       "<script>alert(1)</script>"
                       "_transformer_encoder_layer_block_transformer_encoder_layer_block"
                       "_transformer_encoder_layer_block_transformer_encoder_layer_block"
                       "_transformer_encoder_layer_block_transformer_encoder_layer_block"
                       "_attn/fwd",
                       -3, 3, tc, 100));
  /* fp32 with the TF32 math mode: the ops table must say TF32. */
  cJSON *t = rg_gemm(7, "cublasGemmEx", "mlp/fc4/fwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F",
                     "TF32_TENSOR_OP", 128, 64, 64, 10);
  rg_tensor(t, "A", MP_FP32, -8, 4, 200);
  rg_tensor(t, "D", MP_FP32, -6, 6, 400);
  rg_kernel(t,
            "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas",
            10, 1500);
  rg_site_end(&r, t);
  for (int i = 0; i < 40; i++)
    rg_event(&r, i % 8, 1000L * i, 600, 7);
  if (rg_end(&r)) return 1;
  mpprof_report_options o = {.out_dir = argv[1], .program = NULL, .summary = stdout};
  return mpprof_report_generate(&o) ? 1 : 0;
}
