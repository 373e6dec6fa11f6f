/* fidelity_probe: the statuses and results simcuda claims the real cuBLAS /
 * cuBLASLt give where its documentation leaves room (argument checks simcuda
 * inferred, block-scale layouts), probed through the public API. Built
 * against simcuda it runs in CI; built against the real libraries on a GPU
 * (scripts/gpu-check.sh) it checks the claims themselves. cuDNN is loaded with
 * dlopen (libcudnn.so.9), so the probe links only cuBLAS / cuBLASLt. Each probe prints
 * "name value"; the expected file holds the claimed values, a name ending in
 * ".smNN" applies only on that compute capability.
 *
 *   fidelity_probe EXPECTED_FILE      exit 0 when every applicable line matches */
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

enum { MAX_LINES = 128 };
static char got[MAX_LINES][160];
static int n_got, sm;

static void put(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *name, const char *fmt, ...) {
  char v[120];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(v, sizeof v, fmt, ap);
  va_end(ap);
  if (n_got < MAX_LINES) snprintf(got[n_got++], sizeof got[0], "%s %s", name, v);
  printf("%s %s\n", name, v);
  fflush(stdout); /* a crash in a later probe keeps these */
}

static const char *st(cublasStatus_t s) {
  return cublasGetStatusName(s);
}

static void probe_copies(void) {
  float host[16] = {0}, *dev = NULL;
  cudaMalloc((void **)&dev, sizeof host);
  put("copy.setmatrix.lda_below_rows", "%s", st(cublasSetMatrix(4, 2, 4, host, 3, dev, 4)));
  put("copy.setmatrix.ldb_zero", "%s", st(cublasSetMatrix(2, 2, 4, host, 2, dev, 0)));
  put("copy.setmatrix.rows_negative", "%s", st(cublasSetMatrix(-1, 2, 4, host, 2, dev, 2)));
  put("copy.getmatrix.elemsize_zero", "%s", st(cublasGetMatrix(2, 2, 0, dev, 2, host, 2)));
  put("copy.setvector.n_negative", "%s", st(cublasSetVector(-1, 4, host, 1, dev, 1)));
  put("copy.setvector.n_zero", "%s", st(cublasSetVector(0, 4, host, 1, dev, 1)));
  put("copy.setvector.incx_zero", "%s", st(cublasSetVector(4, 4, host, 0, dev, 1)));
  put("copy.getvector.incy_negative", "%s", st(cublasGetVector(4, 4, dev, 1, host, -1)));
  for (int i = 0; i < 16; i++)
    host[i] = (float)i;
  cublasStatus_t s = cublasSetMatrix(3, 2, 4, host, 4, dev, 3);
  float back[6] = {0};
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasGetVector(6, 4, dev, 1, back, 1);
  put("copy.setmatrix.packs_columns", "%s %g %g %g", st(s), back[2], back[3], back[5]);
  cudaFree(dev);
}

/* A TN fp8 matmul of D (m x n, bf16) = sum over K blocks of sA sB A B. */
typedef struct bs_case {
  int amode, bmode;
  cudaDataType ab; /* CUDA_R_8F_E4M3 or CUDA_R_4F_E2M1 */
  int m, n, k;
} bs_case;

static float pow2(int r, int b) {
  return ldexpf(1.0f, (r * 3 + b * 5) % 5 - 2);
}

static int blk_of(int mode) {
  return mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3   ? 16
         : mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 ? 32
                                                            : 128;
}

/* Scale tensor of one operand (outer rows x K), in the documented layout. */
static size_t scales(int mode, int outer, int k, void **ret) {
  int b = blk_of(mode), kb = (k + b - 1) / b;
  if (mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 ||
      mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0) {
    int rt = (outer + 127) / 128, ct = (kb + 3) / 4;
    uint8_t *s = calloc((size_t)rt * ct, 512);
    for (int r = 0; r < outer; r++)
      for (int q = 0; q < kb; q++) {
        int e = ilogbf(pow2(r, q));
        size_t at =
            ((size_t)(r / 128) * ct + q / 4) * 512 + (r % 32) * 16 + (r % 128) / 32 * 4 + q % 4;
        s[at] = mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 ? (uint8_t)(127 + e)
                                                                 : (uint8_t)((7 + e) << 3);
      }
    *ret = s;
    return (size_t)rt * ct * 512;
  }
  if (mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F) {
    float *s = calloc((size_t)outer * kb, 4);
    for (int r = 0; r < outer; r++)
      for (int q = 0; q < kb; q++)
        s[r + q * outer] = pow2(r, q);
    *ret = s;
    return (size_t)outer * kb * 4;
  }
  int l4 = (kb + 3) / 4 * 4, ob = (outer + 127) / 128;
  float *s = calloc((size_t)l4 * ob, 4);
  for (int r = 0; r < ob; r++)
    for (int q = 0; q < kb; q++)
      s[q + r * l4] = pow2(r * 128, q);
  *ret = s;
  return (size_t)l4 * ob * 4;
}

static double scale_at(int mode, int r, int q) {
  int b = q / blk_of(mode);
  return mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F ? pow2(r / 128 * 128, b) : pow2(r, b);
}

/* Element values: small integers (exact in e4m3 and e2m1, sums exact). */
static int value(int seed, int i) {
  return (int)((i * 7 + seed * 13) % 5) - 2;
}

static uint8_t encode(cudaDataType t, int v) {
  if (t == CUDA_R_4F_E2M1) {
    int a = v < 0 ? -v : v;
    return (uint8_t)((v < 0 ? 8 : 0) | (a == 0 ? 0 : a == 1 ? 2 : 4));
  }
  /* e4m3: 0, +-1, +-2 */
  if (v == 0) return 0;
  return (uint8_t)((v < 0 ? 0x80 : 0) | ((v < 0 ? -v : v) == 1 ? 0x38 : 0x40));
}

static void *operand(cudaDataType t, int seed, int rows_k, int cols) {
  size_t n = (size_t)rows_k * cols;
  size_t bytes = t == CUDA_R_4F_E2M1 ? n / 2 : n;
  uint8_t *h = calloc(bytes, 1);
  for (size_t i = 0; i < n; i++) {
    uint8_t c = encode(t, value(seed, (int)i));
    if (t == CUDA_R_4F_E2M1)
      h[i / 2] |= (uint8_t)(c << (i % 2 ? 4 : 0));
    else
      h[i] = c;
  }
  void *d = NULL;
  cudaMalloc(&d, bytes);
  cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice);
  free(h);
  return d;
}

static uint16_t f2bf(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1)) >> 16);
}

static float bf2f(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, 4);
  return f;
}

/* The call as NVIDIA's samples make it: the heuristic's first algorithm with a
 * 32 MiB workspace on offer (none found: NOT_SUPPORTED), then the matmul on
 * the default stream and a device sync (a fault: EXECUTION_FAILED). */
static cublasStatus_t lt_matmul(cublasLtHandle_t lt, cublasLtMatmulDesc_t desc,
                                cublasLtMatrixLayout_t la, const void *A, cublasLtMatrixLayout_t lb,
                                const void *B, cublasLtMatrixLayout_t lc, const void *C,
                                cublasLtMatrixLayout_t ld, void *D) {
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  size_t ws_size = 32u << 20;
  void *ws = NULL;
  cudaMalloc(&ws, ws_size);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_size,
                                       sizeof ws_size);
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, ld, pref, 1, &r, &found);
  if (s == CUBLAS_STATUS_SUCCESS && found == 0) s = CUBLAS_STATUS_NOT_SUPPORTED;
  float alpha = 1, beta = 0;
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, C, lc, D, ld, &r.algo, ws, ws_size,
                       0);
  if (s == CUBLAS_STATUS_SUCCESS && cudaDeviceSynchronize() != cudaSuccess)
    s = CUBLAS_STATUS_EXECUTION_FAILED;
  cudaFree(ws);
  cublasLtMatmulPreferenceDestroy(pref);
  return s;
}

static void probe_block(cublasLtHandle_t lt, const char *name, bs_case c) {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  int32_t opT = CUBLAS_OP_T;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &c.amode, sizeof c.amode);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &c.bmode, sizeof c.bmode);
  void *hsa, *hsb, *dsa = NULL, *dsb = NULL;
  size_t na = scales(c.amode, c.m, c.k, &hsa), nb = scales(c.bmode, c.n, c.k, &hsb);
  cudaMalloc(&dsa, na);
  cudaMalloc(&dsb, nb);
  cudaMemcpy(dsa, hsa, na, cudaMemcpyHostToDevice);
  cudaMemcpy(dsb, hsb, nb, cudaMemcpyHostToDevice);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dsa, sizeof dsa);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dsb, sizeof dsb);
  cublasLtMatrixLayoutCreate(&la, c.ab, (uint64_t)c.k, (uint64_t)c.m, c.k);
  cublasLtMatrixLayoutCreate(&lb, c.ab, (uint64_t)c.k, (uint64_t)c.n, c.k);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, (uint64_t)c.m, (uint64_t)c.n, c.m);
  void *A = operand(c.ab, 1, c.k, c.m), *B = operand(c.ab, 2, c.k, c.n), *D = NULL;
  size_t dbytes = (size_t)c.m * c.n * 2;
  cudaMalloc(&D, dbytes);
  cudaMemset(D, 0, dbytes);
  cublasStatus_t s = lt_matmul(lt, desc, la, A, lb, B, ld, D, ld, D);
  int bad = -1;
  if (s == CUBLAS_STATUS_SUCCESS) {
    uint16_t *h = malloc(dbytes);
    cudaMemcpy(h, D, dbytes, cudaMemcpyDeviceToHost);
    bad = 0;
    for (int j = 0; j < c.n; j++)
      for (int i = 0; i < c.m; i++) {
        double want = 0;
        for (int q = 0; q < c.k; q++) {
          double a = value(1, q + i * c.k), b = value(2, q + j * c.k); /* exact in e4m3, e2m1 */
          want += scale_at(c.amode, i, q) * a * scale_at(c.bmode, j, q) * b;
        }
        if (bf2f(h[i + j * c.m]) != bf2f(f2bf((float)want))) bad++;
      }
    free(h);
  }
  if (s == CUBLAS_STATUS_SUCCESS)
    put(name, "%s mismatches=%d", st(s), bad);
  else
    put(name, "%s", st(s));
  cudaFree(A), cudaFree(B), cudaFree(D), cudaFree(dsa), cudaFree(dsb);
  free(hsa), free(hsb);
  cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb), cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
}

/* Per-tensor FP8 (e4m3 A^T x e4m3 B, bf16 C, e4m3 D at a D scale, AMAX_D):
 * the A, B and D scale pointers `apart` bytes from each other in one
 * allocation. Status of the call only. */
static void probe_scale_apart(cublasLtHandle_t lt, const char *name, size_t apart) {
  const int n = 128;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc, ld;
  int32_t opT = CUBLAS_OP_T;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
  char *sc = NULL;
  float *amax = NULL;
  cudaMalloc((void **)&sc, 3 * 256);
  cudaMalloc((void **)&amax, 256);
  const float one = 1;
  void *p[3];
  for (int i = 0; i < 3; i++) {
    p[i] = sc + i * apart;
    cudaMemcpy(p[i], &one, sizeof one, cudaMemcpyHostToDevice);
  }
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &p[0], sizeof p[0]);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &p[1], sizeof p[1]);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &p[2], sizeof p[2]);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, &amax, sizeof amax);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, n, n, n);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, n, n, n);
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, n, n, n);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_8F_E4M3, n, n, n);
  void *A = operand(CUDA_R_8F_E4M3, 1, n, n), *B = operand(CUDA_R_8F_E4M3, 2, n, n), *C = NULL,
       *D = NULL;
  cudaMalloc(&C, (size_t)n * n * 2);
  cudaMemset(C, 0, (size_t)n * n * 2);
  cudaMalloc(&D, (size_t)n * n);
  put(name, "%s", st(lt_matmul(lt, desc, la, A, lb, B, lc, C, ld, D)));
  cudaFree(A), cudaFree(B), cudaFree(C), cudaFree(D), cudaFree(sc), cudaFree(amax);
  cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lc), cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
}

/* --- what alpha and beta say is read (BLAS: alpha 0 reads neither A nor B,
 * beta 0 not C), the vector pointer modes, the FP8 bias's default type --- */

static int count_nans(const float *v, int n) {
  int k = 0;
  for (int i = 0; i < n; i++)
    k += isnan(v[i]);
  return k;
}

static void *dev_floats(const float *h, int n) {
  void *d = NULL;
  cudaMalloc(&d, (size_t)n * sizeof(float));
  cudaMemcpy(d, h, (size_t)n * sizeof(float), cudaMemcpyHostToDevice);
  return d;
}

/* fp32 D = alpha A B + beta C, 4x4x4, C and D distinct, alpha and beta as
 * the pointer mode takes them. D's values back in d[16]. */
static cublasStatus_t lt_f32_4(cublasLtHandle_t lt, int32_t pm, const void *alpha, const void *A,
                               const void *B, const void *beta, const void *C, float d[16]) {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t l;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pm, sizeof pm);
  cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, 4, 4, 4);
  void *D = NULL;
  cudaMalloc(&D, 64);
  cudaMemset(D, 0, 64);
  cublasStatus_t s =
      cublasLtMatmul(lt, desc, alpha, A, l, B, l, beta, C, l, D, l, NULL, NULL, 0, 0);
  if (s == CUBLAS_STATUS_SUCCESS && cudaDeviceSynchronize() != cudaSuccess)
    s = CUBLAS_STATUS_EXECUTION_FAILED;
  cudaMemcpy(d, D, 64, cudaMemcpyDeviceToHost);
  cudaFree(D);
  cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(desc);
  return s;
}

static void probe_scalars(cublasLtHandle_t lt) {
  float nan16[16], ones[16], c[16], d[16];
  for (int i = 0; i < 16; i++) {
    nan16[i] = NAN;
    ones[i] = 1;
    c[i] = (float)(i + 1);
  }
  void *dnan = dev_floats(nan16, 16), *dones = dev_floats(ones, 16), *dc = dev_floats(c, 16);
  const float zero = 0, one = 1;
  /* cublasSgemm: A all NaN, alpha 0, beta 0, C NaN before: C = 0. */
  cublasHandle_t h;
  cublasStatus_t s = cublasCreate(&h);
  void *dout = dev_floats(nan16, 16);
  if (s == CUBLAS_STATUS_SUCCESS)
    s = cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &zero, dnan, 4, dones, 4, &zero, dout, 4);
  if (s == CUBLAS_STATUS_SUCCESS && cudaDeviceSynchronize() != cudaSuccess)
    s = CUBLAS_STATUS_EXECUTION_FAILED;
  cudaMemcpy(d, dout, 64, cudaMemcpyDeviceToHost);
  put("blas.sgemm.alpha0_nan_a_beta0_nan_c", "%s nans=%d", st(s), count_nans(d, 16));
  cudaFree(dout);
  cublasDestroy(h);
  /* cublasLtMatmul: A all NaN, alpha 0, beta 1: D = C. */
  s = lt_f32_4(lt, CUBLASLT_POINTER_MODE_HOST, &zero, dnan, dones, &one, dc, d);
  put("lt.alpha0_nan_a", "%s nans=%d d15=%g", st(s), count_nans(d, 16), d[15]);
  /* beta 0, C all NaN: D = A B (4 everywhere). */
  s = lt_f32_4(lt, CUBLASLT_POINTER_MODE_HOST, &one, dones, dones, &zero, dnan, d);
  put("lt.beta0_nan_c", "%s nans=%d d0=%g", st(s), count_nans(d, 16), d[0]);
  /* DEVICE_VECTOR: alphas 1, betas 0 but for row 3 (2): row 3 is 4 + 2 C. */
  const float betas[4] = {0, 0, 0, 2};
  void *dalpha = dev_floats(ones, 4), *dbeta = dev_floats(betas, 4);
  s = lt_f32_4(lt, CUBLASLT_POINTER_MODE_DEVICE_VECTOR, dalpha, dones, dones, dbeta, dc, d);
  put("lt.device_vector", "%s d0=%g d3=%g d15=%g", st(s), d[0], d[3], d[15]);
  /* ALPHA_DEVICE_VECTOR_BETA_HOST: alphas 0, A all NaN, beta 1: D = C. */
  void *dzeros = NULL;
  cudaMalloc(&dzeros, 16);
  cudaMemset(dzeros, 0, 16);
  s = lt_f32_4(lt, CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST, dzeros, dnan, dones, &one,
               dc, d);
  put("lt.alpha_vector_zero_nan_a", "%s nans=%d d15=%g", st(s), count_nans(d, 16), d[15]);
  /* ALPHA_DEVICE_VECTOR_BETA_HOST: alphas {0, 1, 1, 1}, row 0 of A NaN
   * (the rest 1), beta 0: rows 1..3 of D are 4; row 0 is 0 if a row whose
   * alpha is 0 reads nothing of A, NaN (4 of them) if the kernel forms the
   * whole product first and scales the row after (0 NaN = NaN). */
  float a_row0[16], alphas[4] = {0, 1, 1, 1};
  for (int i = 0; i < 16; i++)
    a_row0[i] = i % 4 == 0 ? NAN : 1;
  void *darow0 = dev_floats(a_row0, 16), *dalphas = dev_floats(alphas, 4);
  s = lt_f32_4(lt, CUBLASLT_POINTER_MODE_ALPHA_DEVICE_VECTOR_BETA_HOST, dalphas, darow0, dones,
               &zero, dc, d);
  put("lt.alpha_vector_row0_nan_a", "%s nans=%d d1=%g", st(s), count_nans(d, 16), d[1]);
  cudaFree(darow0), cudaFree(dalphas);
  cudaFree(dnan), cudaFree(dones), cudaFree(dc), cudaFree(dalpha), cudaFree(dbeta),
      cudaFree(dzeros);
}

/* FP8 (e4m3 A^T, B all 1, 16x16x16) with an fp32 C and D and a BIAS
 * epilogue of the default BIAS_DATA_TYPE: bf16 by the cuBLAS
 * documentation's FP8 table (here 1.5 as bf16: D = 17.5; read as fp32 the
 * pairs would be 1.5009...). */
static void probe_fp8_bias(cublasLtHandle_t lt, const char *name) {
  enum { n = 16 };
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t l8, l32;
  int32_t opT = CUBLAS_OP_T;
  uint32_t epi = CUBLASLT_EPILOGUE_BIAS;
  uint8_t ab[n * n];
  memset(ab, 0x38, sizeof ab); /* e4m3 1 */
  uint16_t bias[n];
  for (int i = 0; i < n; i++)
    bias[i] = f2bf(1.5f);
  void *dab = NULL, *dbias = NULL, *dd = NULL;
  cudaMalloc(&dab, sizeof ab);
  cudaMemcpy(dab, ab, sizeof ab, cudaMemcpyHostToDevice);
  cudaMalloc(&dbias, sizeof bias);
  cudaMemcpy(dbias, bias, sizeof bias, cudaMemcpyHostToDevice);
  cudaMalloc(&dd, n * n * 4);
  cudaMemset(dd, 0, n * n * 4);
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias);
  cublasLtMatrixLayoutCreate(&l8, CUDA_R_8F_E4M3, n, n, n);
  cublasLtMatrixLayoutCreate(&l32, CUDA_R_32F, n, n, n);
  cublasStatus_t s = lt_matmul(lt, desc, l8, dab, l8, dab, l32, dd, l32, dd);
  float d0 = 0;
  cudaMemcpy(&d0, dd, 4, cudaMemcpyDeviceToHost);
  if (s == CUBLAS_STATUS_SUCCESS)
    put(name, "%s d0=%g", st(s), d0);
  else
    put(name, "%s", st(s));
  cudaFree(dab), cudaFree(dbias), cudaFree(dd);
  cublasLtMatrixLayoutDestroy(l8), cublasLtMatrixLayoutDestroy(l32);
  cublasLtMatmulDescDestroy(desc);
}

static void probe_lt(cublasLtHandle_t lt) {
  const int V128 = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F,
            B128 = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F,
            MX = CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0,
            NV = CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
  char name[64];
  snprintf(name, sizeof name, "lt.block.v128_b128.sm%d", sm);
  probe_block(lt, name, (bs_case){V128, B128, CUDA_R_8F_E4M3, 64, 256, 384});
  snprintf(name, sizeof name, "lt.block.b128_v128.sm%d", sm);
  probe_block(lt, name, (bs_case){B128, V128, CUDA_R_8F_E4M3, 256, 64, 384});
  snprintf(name, sizeof name, "lt.block.v128_v128.sm%d", sm);
  probe_block(lt, name, (bs_case){V128, V128, CUDA_R_8F_E4M3, 64, 64, 256});
  snprintf(name, sizeof name, "lt.block.b128_b128.sm%d", sm);
  probe_block(lt, name, (bs_case){B128, B128, CUDA_R_8F_E4M3, 128, 128, 256});
  snprintf(name, sizeof name, "lt.block.mxfp8.sm%d", sm);
  probe_block(lt, name, (bs_case){MX, MX, CUDA_R_8F_E4M3, 256, 128, 256});
  snprintf(name, sizeof name, "lt.block.nvfp4.sm%d", sm);
  probe_block(lt, name, (bs_case){NV, NV, CUDA_R_4F_E2M1, 256, 128, 256});
  probe_scale_apart(lt, "lt.fp8_scalar.scales_4_apart", 4);
  probe_scale_apart(lt, "lt.fp8_scalar.scales_16_apart", 16);
  probe_scale_apart(lt, "lt.fp8_scalar.scales_256_apart", 256);
  snprintf(name, sizeof name, "lt.fp8_bias_default_f32d.sm%d", sm);
  probe_fp8_bias(lt, name);
  probe_scalars(lt);

  /* An algo made for fp16 used with fp32 descriptors. */
  cublasLtMatmulAlgo_t algo;
  cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                         CUDA_R_16F, 0, &algo);
  int ids[256], n = 0;
  cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                           CUDA_R_16F, 256, ids, &n);
  put("lt.algoids.fp16_listed", "%s", n > 0 ? "yes" : "no");
  if (n > 0)
    cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F,
                           CUDA_R_16F, ids[0], &algo);
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t l32;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayoutCreate(&l32, CUDA_R_32F, 64, 64, 64);
  cublasLtMatmulHeuristicResult_t r;
  put("lt.algocheck.other_types", "%s",
      st(cublasLtMatmulAlgoCheck(lt, desc, l32, l32, l32, l32, &algo, &r)));
  put("lt.algoinit.unknown_id", "%s",
      st(cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                CUDA_R_32F, CUDA_R_32F, 1 << 30, &algo)));
  put("lt.algoids.requested_zero", "%s",
      st(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                  CUDA_R_32F, CUDA_R_32F, 0, ids, &n)));
  cublasLtMatrixLayoutDestroy(l32);
  cublasLtMatmulDescDestroy(desc);
}

/* --- the FP8 kernels' layout requirements (cuBLAS documentation,
 * cublasLtMatmul: TN, column-major, 16-byte aligned pointers and leading
 * dimensions; m and k multiples of 16) --- */

/* e4m3 A^T (k x m, lda) x e4m3 B (k x n), bf16 C = D (m x n): the heuristic's
 * status and result count; with `d_off`, cublasLtMatmul's status with D that
 * many bytes past a 256-byte aligned allocation. */
static void probe_fp8_layout(cublasLtHandle_t lt, const char *name, int m, int n, int k,
                             int64_t lda, int a_row, size_t d_off) {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  int32_t opT = CUBLAS_OP_T, row = CUBLASLT_ORDER_ROW;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
  cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, lda); /* A^T is m x k */
  if (a_row) cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_ORDER, &row, sizeof row);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k);
  cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, m, n, m);
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulHeuristicResult_t r;
  int got = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &r, &got);
  cublasLtMatmulPreferenceDestroy(pref);
  if (d_off == 0) {
    put(name, "%s results=%d", st(s), s == CUBLAS_STATUS_SUCCESS ? got : 0);
  } else {
    void *A = NULL, *B = NULL, *D = NULL;
    cudaMalloc(&A, (size_t)lda * 256), cudaMalloc(&B, (size_t)k * n);
    cudaMalloc(&D, (size_t)m * n * 2 + 256);
    cudaMemset(A, 0, (size_t)lda * 256), cudaMemset(B, 0, (size_t)k * n);
    float alpha = 1, beta = 0;
    char *d = (char *)D + d_off;
    s = cublasLtMatmul(lt, desc, &alpha, A, la, B, lb, &beta, d, lc, d, lc, NULL, NULL, 0, 0);
    if (s == CUBLAS_STATUS_SUCCESS && cudaDeviceSynchronize() != cudaSuccess)
      s = CUBLAS_STATUS_EXECUTION_FAILED;
    put(name, "%s", st(s));
    cudaFree(A), cudaFree(B), cudaFree(D);
  }
  cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb), cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
}

static void probe_fp8_layouts(cublasLtHandle_t lt) {
  probe_fp8_layout(lt, "lt.fp8_layout.m16_n8_k32", 16, 8, 32, 32, 0, 0);
  probe_fp8_layout(lt, "lt.fp8_layout.m8", 8, 16, 32, 32, 0, 0);
  probe_fp8_layout(lt, "lt.fp8_layout.k24", 16, 16, 24, 32, 0, 0);
  probe_fp8_layout(lt, "lt.fp8_layout.lda40", 16, 16, 32, 40, 0, 0);
  probe_fp8_layout(lt, "lt.fp8_layout.a_row", 16, 16, 32, 32, 1, 0);
  probe_fp8_layout(lt, "lt.fp8_layout.d_aligned", 16, 16, 32, 32, 0, 256);
  probe_fp8_layout(lt, "lt.fp8_layout.d_2_bytes_off", 16, 16, 32, 32, 0, 258);
}

/* The heuristic with declared minimum alignments (PREF_MIN_ALIGNMENT_*_BYTES)
 * for A, B, C and D: an fp8 TN matmul (m = n = 16, k = 32, bf16 C = D) or an
 * fp16 NN one (m = n = k = 64). With a result: its algo's MIN_ALIGNMENT caps,
 * printed for fp8, checked against the declared ones for fp16. */
static void probe_pref_align(cublasLtHandle_t lt, const char *name, int fp8,
                             const uint32_t declared[4]) {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  int32_t opT = CUBLAS_OP_T;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  if (fp8) {
    cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof opT);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, 32, 16, 32);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, 32, 16, 32);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, 16, 16, 16);
  } else {
    cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, 64, 64, 64);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, 64, 64, 64);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, 64, 64, 64);
  }
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  for (int i = 0; i < 4; i++)
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES + i,
                                         &declared[i], sizeof declared[i]);
  cublasLtMatmulHeuristicResult_t r;
  int got = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &r, &got);
  if (s != CUBLAS_STATUS_SUCCESS || got == 0) {
    put(name, "%s results=%d", st(s), s == CUBLAS_STATUS_SUCCESS ? got : 0);
  } else {
    uint32_t cap[4] = {0, 0, 0, 0};
    int within = 1;
    for (int i = 0; i < 4; i++) {
      cublasLtMatmulAlgoCapGetAttribute(&r.algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES + i,
                                        &cap[i], sizeof cap[i], NULL);
      within &= cap[i] >= 1 && cap[i] <= declared[i];
    }
    if (fp8)
      put(name, "%s results=%d caps=%u,%u,%u,%u", st(s), got, cap[0], cap[1], cap[2], cap[3]);
    else
      put(name, "%s results=%d caps_within_declared=%s", st(s), got, within ? "yes" : "no");
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la), cublasLtMatrixLayoutDestroy(lb), cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
}

/* The heuristic's algo under the default declared alignment (256) run on an
 * fp32 64^3 matmul, with every pointer as cudaMalloc gave it, then with A 4
 * bytes further. */
static void probe_algo_align(cublasLtHandle_t lt) {
  enum { N = 64 };
  float *buf[3];
  for (int i = 0; i < 3; i++) {
    cudaMalloc((void **)&buf[i], (N * N + 4) * sizeof(float));
    cudaMemset(buf[i], 0, (N * N + 4) * sizeof(float));
  }
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t l;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayoutCreate(&l, CUDA_R_32F, N, N, N);
  put("lt.algo_align.fp32_aligned", "%s",
      st(lt_matmul(lt, desc, l, buf[0], l, buf[1], l, buf[2], l, buf[2])));
  put("lt.algo_align.fp32_a_off4", "%s",
      st(lt_matmul(lt, desc, l, buf[0] + 1, l, buf[1], l, buf[2], l, buf[2])));
  cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(desc);
  for (int i = 0; i < 3; i++)
    cudaFree(buf[i]);
}

static void probe_pref_aligns(cublasLtHandle_t lt) {
  probe_pref_align(lt, "lt.pref_align.fp8_16", 1, (const uint32_t[4]){16, 16, 16, 16});
  probe_pref_align(lt, "lt.pref_align.fp8_a8", 1, (const uint32_t[4]){8, 16, 16, 16});
  probe_pref_align(lt, "lt.pref_align.fp8_d4", 1, (const uint32_t[4]){16, 16, 16, 4});
  probe_pref_align(lt, "lt.pref_align.fp16_2", 0, (const uint32_t[4]){2, 2, 2, 2});
  probe_pref_align(lt, "lt.pref_align.fp16_a1", 0, (const uint32_t[4]){1, 2, 2, 2});
}

/* --- legacy cuDNN convolution algorithms (loaded at run time, so the
 * probe links only the cuBLAS libraries): forward DIRECT never runs,
 * WINOGRAD only 3x3 stride 1, backward-filter WINOGRAD never; FFT needs
 * workspace and refuses a call given less --- */

static void probe_cudnn(void) {
  void *lib = dlopen("libcudnn.so.9", RTLD_NOW);
  if (lib == NULL) {
    put("cudnn.loaded", "no");
    return;
  }
  /* Declared by cudnn.h, looked up here: __typeof__ names no symbol. */
#define SYM(name) __typeof__(&name) name##_ = (__typeof__(&name))dlsym(lib, #name)
  SYM(cudnnCreate);
  SYM(cudnnDestroy);
  SYM(cudnnCreateTensorDescriptor);
  SYM(cudnnCreateFilterDescriptor);
  SYM(cudnnCreateConvolutionDescriptor);
  SYM(cudnnDestroyTensorDescriptor);
  SYM(cudnnDestroyFilterDescriptor);
  SYM(cudnnDestroyConvolutionDescriptor);
  SYM(cudnnSetTensor4dDescriptor);
  SYM(cudnnSetFilter4dDescriptor);
  SYM(cudnnSetConvolution2dDescriptor);
  SYM(cudnnGetConvolutionForwardWorkspaceSize);
  SYM(cudnnGetConvolutionBackwardFilterWorkspaceSize);
  SYM(cudnnConvolutionForward);
  SYM(cudnnGetErrorString);
#undef SYM
  cudnnHandle_t h;
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnCreate_(&h);
  cudnnCreateTensorDescriptor_(&xd), cudnnCreateTensorDescriptor_(&yd);
  cudnnCreateFilterDescriptor_(&wd), cudnnCreateConvolutionDescriptor_(&cd);
  /* 1x8x16x16 fp32, 8 3x3 filters, pad 1: y 1x8x16x16 at stride 1, 8x8 at 2. */
  cudnnSetTensor4dDescriptor_(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 8, 16, 16);
  cudnnSetFilter4dDescriptor_(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, 8, 3, 3);
  void *x = NULL, *w = NULL, *y = NULL;
  cudaMalloc(&x, 8 * 16 * 16 * 4), cudaMalloc(&w, 8 * 8 * 9 * 4), cudaMalloc(&y, 8 * 16 * 16 * 4);
  cudaMemset(x, 0, 8 * 16 * 16 * 4), cudaMemset(w, 0, 8 * 8 * 9 * 4);
  float one = 1, zero = 0;
  size_t ws = 0;
  for (int stride = 1; stride <= 2; stride++) {
    int out = 16 / stride;
    cudnnSetConvolution2dDescriptor_(cd, 1, 1, stride, stride, 1, 1, CUDNN_CROSS_CORRELATION,
                                     CUDNN_DATA_FLOAT);
    cudnnSetTensor4dDescriptor_(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 8, out, out);
    char name[64];
    snprintf(name, sizeof name, "cudnn.fwd.winograd_3x3_stride%d", stride);
    put(name, "%s",
        cudnnGetErrorString_(cudnnGetConvolutionForwardWorkspaceSize_(
            h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, &ws)));
  }
  cudnnSetConvolution2dDescriptor_(cd, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  cudnnSetTensor4dDescriptor_(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 8, 16, 16);
  put("cudnn.fwd.direct.workspace", "%s",
      cudnnGetErrorString_(cudnnGetConvolutionForwardWorkspaceSize_(
          h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, &ws)));
  put("cudnn.fwd.direct.run", "%s",
      cudnnGetErrorString_(cudnnConvolutionForward_(
          h, &one, xd, x, wd, w, cd, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, NULL, 0, &zero, yd, y)));
  put("cudnn.bwd_filter.winograd.workspace", "%s",
      cudnnGetErrorString_(cudnnGetConvolutionBackwardFilterWorkspaceSize_(
          h, xd, yd, cd, wd, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD, &ws)));
  ws = 0;
  cudnnStatus_t s = cudnnGetConvolutionForwardWorkspaceSize_(h, xd, wd, cd, yd,
                                                             CUDNN_CONVOLUTION_FWD_ALGO_FFT, &ws);
  put("cudnn.fwd.fft.workspace", "%s %s", cudnnGetErrorString_(s), ws > 0 ? "positive" : "zero");
  if (s == CUDNN_STATUS_SUCCESS && ws > 0) {
    void *wsp = NULL;
    cudaMalloc(&wsp, ws);
    put("cudnn.fwd.fft.run_short_workspace", "%s",
        cudnnGetErrorString_(cudnnConvolutionForward_(
            h, &one, xd, x, wd, w, cd, CUDNN_CONVOLUTION_FWD_ALGO_FFT, wsp, ws - 1, &zero, yd, y)));
    cudaFree(wsp);
  }
  cudaFree(x), cudaFree(w), cudaFree(y);
  cudnnDestroyTensorDescriptor_(xd), cudnnDestroyTensorDescriptor_(yd);
  cudnnDestroyFilterDescriptor_(wd), cudnnDestroyConvolutionDescriptor_(cd);
  cudnnDestroy_(h);
}

static int check(const char *expected_path) {
  FILE *f = fopen(expected_path, "r");
  if (f == NULL) {
    perror(expected_path);
    return 2;
  }
  char line[200];
  int bad = 0, checked = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0') continue;
    char name[100];
    if (sscanf(line, "%99s", name) != 1) continue;
    const char *arch = strstr(name, ".sm");
    if (arch != NULL && atoi(arch + 3) != sm) continue; /* another architecture's claim */
    checked++;
    int found = 0;
    for (int i = 0; i < n_got; i++) {
      size_t len = strlen(name);
      if (strncmp(got[i], name, len) == 0 && got[i][len] == ' ') {
        found = 1;
        if (strcmp(got[i], line) != 0) {
          printf("MISMATCH %s: got \"%s\", claimed \"%s\"\n", name, got[i] + len + 1,
                 line + len + 1);
          bad++;
        }
      }
    }
    if (!found) {
      printf("MISSING %s\n", name);
      bad++;
    }
  }
  fclose(f);
  printf("fidelity_probe: sm_%d, %d claims checked, %d differ\n", sm, checked, bad);
  return bad == 0 && checked > 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s EXPECTED_FILE\n", argv[0]);
    return 2;
  }
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    fprintf(stderr, "fidelity_probe: no CUDA device\n");
    return 77;
  }
  sm = prop.major * 10 + prop.minor;
  probe_copies();
  cublasLtHandle_t lt;
  if (cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) return 1;
  probe_lt(lt);
  probe_fp8_layouts(lt);
  probe_pref_aligns(lt);
  probe_algo_align(lt);
  cublasLtDestroy(lt);
  probe_cudnn();
  return check(argv[1]);
}
