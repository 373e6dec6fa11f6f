/* Tensor Core truth from a kernel's name: rules from a data table
 * (analysis/kernel_rules.def) of name patterns, the instruction class they
 * imply (hmma, gmma, imma, qgmma, dmma, or none: simt/ffma/gemv/...) and the
 * operand dtypes the name encodes. Names may be mangled or demangled. */
#ifndef MPPROF_ANALYSIS_KERNEL_CLASS_H
#define MPPROF_ANALYSIS_KERNEL_CLASS_H

#include <stdbool.h>
#include <stddef.h>

#include "formats.h"

typedef enum mp_tc_verdict { MP_TC_UNKNOWN = -1, MP_TC_NO = 0, MP_TC_YES = 1 } mp_tc_verdict;

typedef enum mp_tc_source {
  MP_TC_SRC_UNKNOWN = 0,
  MP_TC_SRC_NAME,
  MP_TC_SRC_COUNTERS
} mp_tc_source;

typedef struct mp_kernel_class {
  mp_tc_verdict tc;
  mp_tc_source source; /* MP_TC_SRC_NAME when a rule matched, else UNKNOWN */
  const char *rule;    /* id of the rule that decided, NULL when none */
  const char *instr;   /* "hmma", "gmma", "imma", "qgmma", "dmma", "ffma", ... or NULL */
  mp_dtype a_dtype;    /* operand dtype the name encodes, MP_DTYPE_INVALID when it doesn't */
  mp_dtype acc_dtype;  /* accumulator dtype the name encodes, or MP_DTYPE_INVALID */
} mp_kernel_class;

/* Classify a kernel by name. Always fills *ret (tc = MP_TC_UNKNOWN when no rule matches). */
void mp_kernel_classify(const char *name, mp_kernel_class *ret);
/* Itanium-demangle the function name part when `name` is mangled (best effort, no
 * allocation beyond `n`: a longer name is cut, ending in "..."); copies `name`
 * unchanged otherwise (also a mangled name it cannot read). Returns ret_buf.
 * Where the report shows a kernel's name, its buffer holds MP_KERNEL_SHOWN_MAX
 * bytes (a longer name is cut there). */
#define MP_KERNEL_SHOWN_MAX 512
char *mp_kernel_demangle(const char *name, char *ret_buf, size_t n);
const char *mp_tc_source_name(mp_tc_source s); /* "unknown" | "name" | "counters" */

/* Which library a kernel's name says launched it, for kernels seen outside
 * every hooked call: cuBLAS's or cuDNN's (a statically linked or privately
 * loaded copy), or matrix kernels of no hooked library at all: fused
 * attention (flash attention, PyTorch's memory-efficient SDPA), Triton
 * templates (torch.compile's matmul and attention templates) and CUTLASS
 * GEMM templates compiled into a framework (PyTorch's row-wise scaled FP8
 * _scaled_mm and grouped mm, MoE layers), and other GEMMs (a name saying
 * gemm, gemv or matmul that is of none of cuBLAS's kernel families: the
 * program's own, DeepGEMM's, TensorRT's). */
typedef enum mp_kernel_lib {
  MP_KLIB_NONE = 0,
  MP_KLIB_CUBLAS,
  MP_KLIB_CUDNN,
  MP_KLIB_ATTENTION,
  MP_KLIB_TRITON_TEMPLATE,
  MP_KLIB_CUTLASS,
  MP_KLIB_OTHER_GEMM,
  MP_KLIB_COUNT
} mp_kernel_lib;
mp_kernel_lib mp_kernel_library(const char *name);
/* "cublas" | "cudnn" | "attention" | "triton_template" | "cutlass" |
 * "other_gemm" | NULL */
const char *mp_kernel_lib_name(mp_kernel_lib l);
/* Whether l is a library mpprof hooks (cuBLAS/cuBLASLt, cuDNN). */
bool mp_kernel_lib_hooked(mp_kernel_lib l);

#endif
