/* lt_host_fidelity: simcuda's cuBLASLt descriptor functions answer as the
 * real library's. These functions are host-only, so the real
 * libcublasLt.so.13 runs them here without a GPU: the same probe runs
 * against each library in a child process of its own (the two share a
 * soname) and every line must match. The probe: descriptor and layout
 * creation over compute, scale and data types and shapes; every attribute
 * number 0..79 (matmul descriptor), 0..19 (layout) and 0..19 (preference)
 * read with 4 and 8 bytes and by size query, with the defaults; every
 * attribute 0..39 / 0..11 set with six values at sizes 1, 2, 4 and 8.
 *
 *   lt_host_fidelity REAL/libcublasLt.so.13 SIMCUDA/libcublasLt.so.13
 *   exit 0: the same answers; 1: differences (printed); 77: the real
 *   library cannot be loaded */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cublasLt.h>

#define FN(name) __typeof__(&name) p_##name = (__typeof__(&name))dlsym(lib, #name)

static int probe(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 77;
  FN(cublasLtMatmulDescCreate);
  FN(cublasLtMatmulDescSetAttribute);
  FN(cublasLtMatmulDescGetAttribute);
  FN(cublasLtMatrixLayoutCreate);
  FN(cublasLtMatrixLayoutSetAttribute);
  FN(cublasLtMatrixLayoutGetAttribute);
  FN(cublasLtMatmulPreferenceCreate);
  FN(cublasLtMatmulPreferenceGetAttribute);
  if (!p_cublasLtMatmulDescCreate || !p_cublasLtMatmulDescSetAttribute ||
      !p_cublasLtMatmulDescGetAttribute || !p_cublasLtMatrixLayoutCreate ||
      !p_cublasLtMatrixLayoutSetAttribute || !p_cublasLtMatrixLayoutGetAttribute ||
      !p_cublasLtMatmulPreferenceCreate || !p_cublasLtMatmulPreferenceGetAttribute)
    return 1;
  static const int computes[] = {CUBLAS_COMPUTE_16F,           CUBLAS_COMPUTE_32F,
                                 CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_64F,
                                 CUBLAS_COMPUTE_32I,           12345};
  static const int scales[] = {CUDA_R_16F, CUDA_R_32F, CUDA_R_64F, CUDA_R_32I, CUDA_R_8F_E4M3, 999};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      cublasLtMatmulDesc_t x = NULL;
      printf("desc create %d %d: %d\n", computes[i], scales[j],
             p_cublasLtMatmulDescCreate(&x, computes[i], scales[j]));
    }
  static const uint64_t dims[] = {0, 1, 64};
  static const int64_t lds[] = {0, 1, 64, -1};
  static const int types[] = {CUDA_R_16F, CUDA_R_8F_E4M3, 999};
  for (int r = 0; r < 3; r++)
    for (int c = 0; c < 3; c++)
      for (int ld = 0; ld < 4; ld++)
        for (int t = 0; t < 3; t++) {
          cublasLtMatrixLayout_t x = NULL;
          printf("layout create %d %llu %llu %lld: %d\n", types[t], (unsigned long long)dims[r],
                 (unsigned long long)dims[c], (long long)lds[ld],
                 p_cublasLtMatrixLayoutCreate(&x, types[t], dims[r], dims[c], lds[ld]));
        }
  cublasLtMatmulDesc_t d;
  cublasLtMatrixLayout_t l;
  cublasLtMatmulPreference_t p;
  if (p_cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
      p_cublasLtMatrixLayoutCreate(&l, CUDA_R_16F, 64, 32, 64) ||
      p_cublasLtMatmulPreferenceCreate(&p))
    return 1;
#define PROBE_GETS(label, get, obj, nattr)                                                         \
  for (int a = 0; a < (nattr); a++) {                                                              \
    uint64_t v4 = 0, v8 = 0;                                                                       \
    size_t w4 = 999, w8 = 999, wq = 999;                                                           \
    int r4 = get(obj, a, &v4, 4, &w4);                                                             \
    int r8 = get(obj, a, &v8, 8, &w8);                                                             \
    int rq = get(obj, a, NULL, 0, &wq);                                                            \
    printf(label " get %d: %d %llx %zu | %d %llx %zu | %d %zu\n", a, r4,                           \
           (unsigned long long)(r4 ? 0 : v4), r4 ? 0 : w4, r8, (unsigned long long)(r8 ? 0 : v8),  \
           r8 ? 0 : w8, rq, rq ? 0 : wq);                                                          \
  }
  /* Every attribute number at 4 and 8 bytes and by size query. */
  PROBE_GETS("desc", p_cublasLtMatmulDescGetAttribute, d, 80)
  PROBE_GETS("layout", p_cublasLtMatrixLayoutGetAttribute, l, 20)
#undef PROBE_GETS
  for (int a = 0; a < 20; a++) {
    uint64_t v = 0;
    size_t w = 999;
    int rq = p_cublasLtMatmulPreferenceGetAttribute(p, a, NULL, 0, &w);
    size_t n = rq == 0 && w <= 8 ? w : 8;
    int r = p_cublasLtMatmulPreferenceGetAttribute(p, a, &v, n, &w);
    printf("preference get %d: %d %zu | %d %llx\n", a, rq, rq ? 0 : w, r,
           (unsigned long long)(r ? 0 : v));
  }
  static const int64_t values[] = {0, 1, 2, 3, 99, -1};
  for (int a = 0; a < 40; a++)
    for (int v = 0; v < 6; v++)
      for (size_t n = 1; n <= 8; n *= 2) {
        cublasLtMatmulDesc_t x;
        if (p_cublasLtMatmulDescCreate(&x, CUBLAS_COMPUTE_32F, CUDA_R_32F)) return 1;
        printf("desc set %d %lld %zu: %d\n", a, (long long)values[v], n,
               p_cublasLtMatmulDescSetAttribute(x, a, &values[v], n));
      }
  for (int a = 0; a < 12; a++)
    for (int v = 0; v < 6; v++)
      for (size_t n = 1; n <= 8; n *= 2) {
        cublasLtMatrixLayout_t x;
        if (p_cublasLtMatrixLayoutCreate(&x, CUDA_R_16F, 64, 32, 64)) return 1;
        printf("layout set %d %lld %zu: %d\n", a, (long long)values[v], n,
               p_cublasLtMatrixLayoutSetAttribute(x, a, &values[v], n));
      }
  return 0;
}

/* The probe's output against path, from a child; NULL if it failed. */
static char *run(const char *path, int *status) {
  int fd[2];
  if (pipe(fd)) return NULL;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    int rc = probe(path);
    fflush(stdout);
    _exit(rc);
  }
  close(fd[1]);
  size_t cap = 1 << 18, len = 0;
  char *buf = malloc(cap);
  ssize_t got;
  while (buf && (got = read(fd[0], buf + len, cap - 1 - len)) > 0) {
    len += (size_t)got;
    if (len + 1 == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  close(fd[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  if (buf) buf[len] = '\0';
  return buf;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fputs("usage: lt_host_fidelity REAL/libcublasLt.so.13 SIMCUDA/libcublasLt.so.13\n", stderr);
    return 2;
  }
  int sr, ss;
  char *real = run(argv[1], &sr), *sim = run(argv[2], &ss);
  if (sr == 77) {
    printf("SKIP: %s cannot be loaded\n", argv[1]);
    free(real);
    free(sim);
    return 77;
  }
  if (!real || !sim || sr || ss) {
    printf("FAIL: the probe did not finish (real %d, simcuda %d)\n", sr, ss);
    free(real);
    free(sim);
    return 1;
  }
  int lines = 0, diffs = 0;
  char *rs, *ss_;
  char *r = strtok_r(real, "\n", &rs), *s = strtok_r(sim, "\n", &ss_);
  for (; r || s; r = strtok_r(NULL, "\n", &rs), s = strtok_r(NULL, "\n", &ss_)) {
    lines++;
    if (!r || !s || strcmp(r, s)) {
      if (diffs++ < 20) printf("DIFFERS real: %s\n        simcuda: %s\n", r ? r : "-", s ? s : "-");
    }
  }
  printf("%d answers, %d differ\n", lines, diffs);
  free(real);
  free(sim);
  return diffs ? 1 : 0;
}
