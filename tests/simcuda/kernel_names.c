/* Picks the kernel name a simcuda GEMM or convolution reports, from the rows
 * of kernel_names.def (first match wins), and the launch geometry that goes
 * with it. A name is the kernel's symbol, as CUPTI reports it: C++ kernels
 * mangled (mangle.c), extern "C" ones as written. Names with op-letter
 * placeholders are expanded once per (row, opA, opB), and every name is made
 * once and kept for the life of the process, so the pointer stays valid in
 * CUPTI records. Part of libcuda.so.1 (exported for the cuBLASLt and
 * cuDNN stand-ins). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_api.h>
#include <library_types.h>

#include "simcuda_internal.h"

#define SIM_API __attribute__((visibility("default")))

enum sc_math {
  SC_M_ANY,
  SC_M_SIMT,
  SC_M_TF32,
  SC_M_F16IN,
  SC_M_BF16IN,
  SC_M_ACC16,
  SC_M_ACC32,
  SC_M_DMMA,
  SC_M_IMMA,
};
enum sc_shape { SC_S_ANY, SC_S_GEMV_MISALIGNED, SC_S_GEMV, SC_S_MISALIGNED, SC_S_BIAS, SC_S_SMALL };
enum sc_conv_math { SC_C_ANY, SC_C_TC, SC_C_FMA };
enum sc_group { SC_G_ANY, SC_G_GROUPED };

typedef struct gemm_row {
  int a, b, d;
  enum sc_math math;
  enum sc_shape shape;
  unsigned tile_m, tile_n, threads;
  const char *name;
} gemm_row;

typedef struct conv_row {
  int op, data;
  enum sc_conv_math math;
  enum sc_group group;
  unsigned tile_m, tile_n, threads;
  const char *name;
} conv_row;

static const gemm_row gemm_rows[] = {
#define SIMCUDA_GEMM(a, b, d, math, shape, tm, tn, thr, name, seen)                                \
  {a, b, d, math, shape, tm, tn, thr, name},
#define SIMCUDA_CONV(op, data, math, group, tm, tn, thr, name, seen)
#include "kernel_names.def"
#undef SIMCUDA_GEMM
#undef SIMCUDA_CONV
};

static const conv_row conv_rows[] = {
#define SIMCUDA_GEMM(a, b, d, math, shape, tm, tn, thr, name, seen)
#define SIMCUDA_CONV(op, data, math, group, tm, tn, thr, name, seen)                               \
  {op, data, math, group, tm, tn, thr, name},
#include "kernel_names.def"
#undef SIMCUDA_GEMM
#undef SIMCUDA_CONV
};

enum {
  N_GEMM_ROWS = sizeof(gemm_rows) / sizeof(gemm_rows[0]),
  N_CONV_ROWS = sizeof(conv_rows) / sizeof(conv_rows[0])
};

/* The math class the real library would use for these types and compute type. */
static enum sc_math gemm_math(const simcuda_gemm_shape *g) {
  switch (g->compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    return SC_M_ACC16;
  case CUBLAS_COMPUTE_32I:
  case CUBLAS_COMPUTE_32I_PEDANTIC:
    return SC_M_IMMA;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    return g->a_type == CUDA_R_64F ? SC_M_DMMA : SC_M_ANY;
  default:
    break;
  }
  if (g->a_type != CUDA_R_32F) return SC_M_ACC32;
  switch (g->compute) {
  case CUBLAS_COMPUTE_32F_FAST_TF32:
    return SC_M_TF32;
  case CUBLAS_COMPUTE_32F_FAST_16F:
    return SC_M_F16IN;
  case CUBLAS_COMPUTE_32F_FAST_16BF:
    return SC_M_BF16IN;
  default:
    return SC_M_SIMT;
  }
}

static int math_matches(enum sc_math row, enum sc_math have) {
  return row == SC_M_ANY || row == have;
}

static int shape_matches(enum sc_shape s, const simcuda_gemm_shape *g) {
  int gemv = g->m == 1 || g->n == 1;
  switch (s) {
  case SC_S_ANY:
    return 1;
  case SC_S_GEMV_MISALIGNED:
    return gemv && !g->aligned;
  case SC_S_GEMV:
    return gemv;
  case SC_S_MISALIGNED:
    return !g->aligned;
  case SC_S_BIAS:
    return g->epilogue_bias;
  case SC_S_SMALL:
    return g->m <= 64 && g->n <= 64;
  }
  return 0;
}

static int op_index(char op) {
  return op == 'T' ? 1 : op == 'C' ? 2 : 0;
}

static pthread_mutex_t name_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *_Atomic expanded[N_GEMM_ROWS][3][3];
static const char *_Atomic conv_symbols[N_CONV_ROWS];

/* The symbol of a readable name (takes `made`, which may be NULL). */
static const char *symbol(char *made, const char *readable) {
  const char *name = made != NULL ? made : readable;
  char *mangled = simcuda_mangle(name);
  if (mangled == NULL) return name;
  free(made);
  return mangled;
}

/* "$T" -> "TN", "$t" -> "tn" (conjugate transpose reads as T, as in cuBLAS names). */
static char *expand(const char *tmpl, char op_a, char op_b) {
  char ua = op_a == 'N' ? 'N' : 'T', ub = op_b == 'N' ? 'N' : 'T';
  size_t len = strlen(tmpl);
  char *out = malloc(len + 1);
  if (out == NULL) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < len; i++) {
    if (tmpl[i] == '$' && (tmpl[i + 1] == 'T' || tmpl[i + 1] == 't')) {
      int lower = tmpl[i + 1] == 't';
      out[o++] = lower ? (char)(ua + ('a' - 'A')) : ua;
      out[o++] = lower ? (char)(ub + ('a' - 'A')) : ub;
      i++;
    } else {
      out[o++] = tmpl[i];
    }
  }
  out[o] = '\0';
  return out;
}

static const char *gemm_row_name(size_t row, char op_a, char op_b) {
  int ia = op_index(op_a), ib = op_index(op_b);
  const char *name = expanded[row][ia][ib];
  if (name != NULL) return name;
  pthread_mutex_lock(&name_lock);
  name = expanded[row][ia][ib];
  if (name == NULL) {
    name = symbol(expand(gemm_rows[row].name, op_a, op_b), gemm_rows[row].name);
    expanded[row][ia][ib] = name;
  }
  pthread_mutex_unlock(&name_lock);
  return name;
}

static unsigned ceil_div(uint64_t a, unsigned b) {
  uint64_t q = (a + b - 1) / b;
  return q == 0 ? 1 : q > 0x7fffffffu ? 0x7fffffffu : (unsigned)q;
}

static void geometry(uint64_t m, uint64_t n, uint64_t batch, unsigned tm, unsigned tn,
                     unsigned threads, unsigned grid[3], unsigned block[3]) {
  grid[0] = ceil_div(m, tm);
  grid[1] = ceil_div(n, tn);
  grid[2] = batch == 0 ? 1 : batch > 65535 ? 65535 : (unsigned)batch;
  block[0] = threads;
  block[1] = 1;
  block[2] = 1;
}

SIM_API const char *simcuda_gemm_kernel_name(const simcuda_gemm_shape *g, unsigned grid[3],
                                             unsigned block[3]) {
  enum sc_math math = gemm_math(g);
  for (size_t i = 0; i < N_GEMM_ROWS; i++) {
    const gemm_row *r = &gemm_rows[i];
    if ((r->a != -1 && r->a != g->a_type) || (r->b != -1 && r->b != g->b_type) ||
        (r->d != -1 && r->d != g->d_type) || !math_matches(r->math, math) ||
        !shape_matches(r->shape, g))
      continue;
    geometry(g->m, g->n, g->batch, r->tile_m, r->tile_n, r->threads, grid, block);
    return gemm_row_name(i, g->op_a, g->op_b);
  }
  /* Not reachable for the type combinations cuBLASLt accepts; a visible
   * generic name rather than a guess at a real one. */
  geometry(g->m, g->n, g->batch, 128, 128, 128, grid, block);
  return "simcuda_unlisted_gemm_kernel";
}

static enum sc_conv_math conv_math(const simcuda_conv_shape *c) {
  /* cudnnMathType_t: FMA (3) forbids Tensor Cores; fp64 never uses them. */
  if (c->math_type == 3 || c->data_type == 1 || !c->channels_aligned || c->groups > 1)
    return SC_C_FMA;
  return SC_C_TC;
}

static const char *conv_row_name(size_t row) {
  const char *name = conv_symbols[row];
  if (name != NULL) return name;
  pthread_mutex_lock(&name_lock);
  name = conv_symbols[row];
  if (name == NULL) {
    name = symbol(NULL, conv_rows[row].name);
    conv_symbols[row] = name;
  }
  pthread_mutex_unlock(&name_lock);
  return name;
}

SIM_API const char *simcuda_conv_kernel_name(const simcuda_conv_shape *c, unsigned grid[3],
                                             unsigned block[3]) {
  enum sc_conv_math math = conv_math(c);
  for (size_t i = 0; i < N_CONV_ROWS; i++) {
    const conv_row *r = &conv_rows[i];
    if ((int)r->op != (int)c->op || (r->data != -1 && r->data != c->data_type) ||
        (r->math != SC_C_ANY && r->math != math) || (r->group == SC_G_GROUPED && c->groups <= 1))
      continue;
    geometry(c->gemm_m, c->gemm_n, 1, r->tile_m, r->tile_n, r->threads, grid, block);
    return conv_row_name(i);
  }
  geometry(c->gemm_m, c->gemm_n, 1, 128, 128, 128, grid, block);
  return "simcuda_unlisted_conv_kernel";
}
