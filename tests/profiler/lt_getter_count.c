/* A cuBLASLt shim that one end-to-end test preloads after libmpprof.so:
 * it counts the descriptor getter calls that reach the library (mpprof's:
 * the test program makes none) and writes the count to $LT_COUNT_OUT at
 * exit. With $LT_COUNT_VERSION set, cublasLtGetVersion reports that version
 * instead (an older cuBLASLt, whose descriptors mpprof must not memoise). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublasLt.h>

static unsigned long getter_calls;

#define REAL(name)                                                                                 \
  static __typeof__(&name) real_;                                                                  \
  if (!real_) real_ = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

/* A getter that counts its call and passes it on. */
#define COUNTED_GETTER(name, object_t, attr_t)                                                     \
  cublasStatus_t name(object_t obj, attr_t attr, void *buf, size_t size, size_t *written) {        \
    REAL(name);                                                                                    \
    __atomic_fetch_add(&getter_calls, 1, __ATOMIC_RELAXED);                                        \
    return real_ ? real_(obj, attr, buf, size, written) : CUBLAS_STATUS_NOT_INITIALIZED;           \
  }

COUNTED_GETTER(cublasLtMatmulDescGetAttribute, cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t)
COUNTED_GETTER(cublasLtMatrixLayoutGetAttribute, cublasLtMatrixLayout_t,
               cublasLtMatrixLayoutAttribute_t)

size_t cublasLtGetVersion(void) {
  const char *v = getenv("LT_COUNT_VERSION");
  if (v) return (size_t)strtoul(v, NULL, 10);
  REAL(cublasLtGetVersion);
  return real_ ? real_() : 0;
}

__attribute__((destructor)) static void lt_count_write(void) {
  const char *out = getenv("LT_COUNT_OUT");
  FILE *f = out ? fopen(out, "w") : NULL;
  if (!f) return;
  fprintf(f, "%lu\n", __atomic_load_n(&getter_calls, __ATOMIC_RELAXED));
  fclose(f);
}
