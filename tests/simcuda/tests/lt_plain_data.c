/* lt_plain_data: the premise of the cuBLASLt hook's memo of what it reads
 * from a call's descriptors (profiler/hooks/cublaslt.c): every attribute the
 * hook reads is a function of the descriptor's bytes. Descriptors made and
 * set through the library are copied byte for byte, the originals destroyed,
 * and every attribute the hook reads must read the same from the copies.
 * The functions used are host-only: this runs against the real
 * libcublasLt.so.13 without a GPU, and against simcuda's.
 *
 *   lt_plain_data PATH/libcublasLt.so.13    exit 0: the premise holds;
 *                                           77: the library cannot be loaded */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cublasLt.h>

static void *lib;
static int failures;

#define FN(name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(lib, #name)

static void same(const char *what, int attr, const void *a, const void *b, size_t n, int ra,
                 int rb) {
  if (ra != rb || (ra == CUBLAS_STATUS_SUCCESS && memcmp(a, b, n) != 0)) {
    printf("DIFFERS %s attribute %d (status %d / %d)\n", what, attr, ra, rb);
    failures++;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs("usage: lt_plain_data PATH/libcublasLt.so.13\n", stderr);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    printf("SKIP: %s\n", dlerror());
    return 77;
  }
  FN(cublasLtMatmulDescCreate);
  FN(cublasLtMatmulDescDestroy);
  FN(cublasLtMatmulDescSetAttribute);
  FN(cublasLtMatmulDescGetAttribute);
  FN(cublasLtMatrixLayoutCreate);
  FN(cublasLtMatrixLayoutDestroy);
  FN(cublasLtMatrixLayoutSetAttribute);
  FN(cublasLtMatrixLayoutGetAttribute);
  if (!p_cublasLtMatmulDescCreate || !p_cublasLtMatmulDescDestroy ||
      !p_cublasLtMatmulDescSetAttribute || !p_cublasLtMatmulDescGetAttribute ||
      !p_cublasLtMatrixLayoutCreate || !p_cublasLtMatrixLayoutDestroy ||
      !p_cublasLtMatrixLayoutSetAttribute || !p_cublasLtMatrixLayoutGetAttribute) {
    printf("FAIL: %s lacks a descriptor function\n", argv[1]);
    return 1;
  }
  cublasLtMatmulDesc_t d;
  cublasLtMatrixLayout_t l;
  if (p_cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F_FAST_16F, CUDA_R_32F) ||
      p_cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 64, 32, 80)) {
    printf("FAIL: %s made no descriptor\n", argv[1]);
    return 1;
  }
  /* Values a framework sets (not the defaults, so that a copy that lost them shows). */
  int32_t trans = CUBLAS_OP_T, pm = CUBLASLT_POINTER_MODE_DEVICE;
  uint32_t epi = CUBLASLT_EPILOGUE_GELU_BIAS;
  int32_t bias_type = CUDA_R_16F;
  int64_t bias_stride = 96;
  const void *ptrs[6] = {(void *)0x7f0000001000, (void *)0x7f0000002000, (void *)0x7f0000003000,
                         (void *)0x7f0000004000, (void *)0x7f0000005000, (void *)0x7f0000006000};
  p_cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans);
  p_cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
  p_cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  p_cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &ptrs[0], sizeof ptrs[0]);
  p_cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                   sizeof bias_type);
  p_cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                                   sizeof bias_stride);
  static const cublasLtMatmulDescAttributes_t ptr_attrs[5] = {
      CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
      CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
      CUBLASLT_MATMUL_DESC_AMAX_D_POINTER};
  for (int i = 0; i < 5; i++)
    p_cublasLtMatmulDescSetAttribute(d, ptr_attrs[i], &ptrs[i + 1], sizeof ptrs[i + 1]);
  int32_t batch = 7, order = CUBLASLT_ORDER_ROW;
  int64_t stride = 4096;
  p_cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch);
  p_cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                     sizeof stride);
  p_cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof order);

  /* Every attribute the hook reads (profiler/hooks/cublaslt.c decode and
   * read_layout), with the sizes it reads them with, from the original now
   * and from its copy later. */
  static const struct {
    cublasLtMatmulDescAttributes_t a;
    size_t n;
  } desc_attrs[] = {{CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 4},
                    {CUBLASLT_MATMUL_DESC_SCALE_TYPE, 4},
                    {CUBLASLT_MATMUL_DESC_POINTER_MODE, 4},
                    {CUBLASLT_MATMUL_DESC_TRANSA, 4},
                    {CUBLASLT_MATMUL_DESC_TRANSB, 4},
                    {CUBLASLT_MATMUL_DESC_EPILOGUE, 4},
                    {CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8},
                    {CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 4},
                    {CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8},
                    {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 8},
                    {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, 8},
                    {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, 8},
                    {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, 8},
                    {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, 4},
                    {CUBLASLT_MATMUL_DESC_B_SCALE_MODE, 4},
                    {CUBLASLT_MATMUL_DESC_C_SCALE_MODE, 4},
                    {CUBLASLT_MATMUL_DESC_D_SCALE_MODE, 4},
                    {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, 8}};
  static const struct {
    cublasLtMatrixLayoutAttribute_t a;
    size_t n;
  } layout_attrs[] = {{CUBLASLT_MATRIX_LAYOUT_TYPE, 4},
                      {CUBLASLT_MATRIX_LAYOUT_ROWS, 8},
                      {CUBLASLT_MATRIX_LAYOUT_COLS, 8},
                      {CUBLASLT_MATRIX_LAYOUT_LD, 8},
                      {CUBLASLT_MATRIX_LAYOUT_ORDER, 4},
                      {CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4},
                      {CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 8},
                      {CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, 4}};
  enum {
    ND = sizeof desc_attrs / sizeof desc_attrs[0],
    NL = sizeof layout_attrs / sizeof layout_attrs[0]
  };
  uint64_t dv[ND] = {0}, lv[NL] = {0};
  int dr[ND], lr[NL];
  size_t w;
  for (int i = 0; i < ND; i++)
    dr[i] = p_cublasLtMatmulDescGetAttribute(d, desc_attrs[i].a, &dv[i], desc_attrs[i].n, &w);
  for (int i = 0; i < NL; i++)
    lr[i] = p_cublasLtMatrixLayoutGetAttribute(l, layout_attrs[i].a, &lv[i], layout_attrs[i].n, &w);

  cublasLtMatmulDescOpaque_t dcopy;
  cublasLtMatrixLayoutOpaque_t lcopy;
  memcpy(&dcopy, d, sizeof dcopy);
  memcpy(&lcopy, l, sizeof lcopy);
  p_cublasLtMatmulDescDestroy(d);
  p_cublasLtMatrixLayoutDestroy(l);
  /* New descriptors may take the freed memory: the copies must not need it. */
  cublasLtMatmulDesc_t d2;
  cublasLtMatrixLayout_t l2;
  p_cublasLtMatmulDescCreate(&d2, CUBLAS_COMPUTE_64F, CUDA_R_64F);
  p_cublasLtMatrixLayoutCreate(&l2, CUDA_R_64F, 3, 3, 3);
  int checked = 0;
  for (int i = 0; i < ND; i++) {
    uint64_t v = 0;
    int r = p_cublasLtMatmulDescGetAttribute(&dcopy, desc_attrs[i].a, &v, desc_attrs[i].n, &w);
    same("matmul descriptor", desc_attrs[i].a, &dv[i], &v, sizeof v, dr[i], r);
    checked += r == CUBLAS_STATUS_SUCCESS;
  }
  for (int i = 0; i < NL; i++) {
    uint64_t v = 0;
    int r =
        p_cublasLtMatrixLayoutGetAttribute(&lcopy, layout_attrs[i].a, &v, layout_attrs[i].n, &w);
    same("matrix layout", layout_attrs[i].a, &lv[i], &v, sizeof v, lr[i], r);
    checked += r == CUBLAS_STATUS_SUCCESS;
  }
  p_cublasLtMatmulDescDestroy(d2);
  p_cublasLtMatrixLayoutDestroy(l2);
  /* The set values came back (not only equal failures). */
  if (dr[3] || (int32_t)dv[3] != trans || lr[5] || (int32_t)lv[5] != batch) {
    printf("FAIL: the set values did not read back from the originals\n");
    failures++;
  }
  printf("%s: %d attributes read the same from byte copies, %d differ\n", argv[1], checked,
         failures);
  return failures ? 1 : 0;
}
