/* The entry-point tables of docs/simcuda.md ("Entry points PyTorch and the
 * NVIDIA samples call") list what simcuda does with each cuBLAS, cuBLASLt
 * and cuDNN function those programs call. Every name in a table's first
 * column must be exported by the simcuda library it belongs to, under the
 * version node the real library uses (its soname), so the table cannot go
 * stale: a name simcuda lacks, or a row without an answer, fails here.
 *
 * usage: test_entry_points DOC libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dlvsym */
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LIB_CUBLAS, LIB_CUBLASLT, LIB_CUDNN, NLIBS };
static const char *const sonames[NLIBS] = {"libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9"};

static int lib_of(const char *name) {
  if (strncmp(name, "cublasLt", 8) == 0) return LIB_CUBLASLT;
  if (strncmp(name, "cublas", 6) == 0) return LIB_CUBLAS;
  if (strncmp(name, "cudnn", 5) == 0) return LIB_CUDNN;
  return -1;
}

/* Checks the backticked names of a row's first cell; returns failures. */
static int check_row(const char *row, void *const handles[NLIBS], int line, int *ret_names) {
  const char *cell_end = strchr(row + 1, '|');
  const char *answer_end = NULL;
  if (cell_end != NULL) {
    const char *called_end = strchr(cell_end + 1, '|');
    if (called_end != NULL) answer_end = strchr(called_end + 1, '|');
    if (answer_end != NULL && answer_end - strchr(cell_end + 1, '|') < 4) answer_end = NULL;
  }
  if (answer_end == NULL) {
    fprintf(stderr, "line %d: row needs three non-empty cells: %s", line, row);
    return 1;
  }
  int bad = 0;
  for (const char *p = strchr(row, '`'); p != NULL && p < cell_end; p = strchr(p, '`')) {
    const char *q = strchr(p + 1, '`');
    if (q == NULL || q > cell_end) break;
    char name[128];
    size_t n = (size_t)(q - p - 1);
    if (n == 0 || n >= sizeof name) {
      fprintf(stderr, "line %d: bad name cell\n", line);
      return bad + 1;
    }
    memcpy(name, p + 1, n);
    name[n] = '\0';
    p = q + 1;
    int lib = lib_of(name);
    if (lib < 0) {
      fprintf(stderr, "line %d: %s is no cuBLAS / cuBLASLt / cuDNN name\n", line, name);
      bad++;
      continue;
    }
    (*ret_names)++;
    if (dlvsym(handles[lib], name, sonames[lib]) == NULL) {
      fprintf(stderr, "line %d: %s is not exported as %s@%s\n", line, name, name, sonames[lib]);
      bad++;
    }
  }
  return bad;
}

int main(int argc, char **argv) {
  if (argc != 2 + NLIBS) {
    fprintf(stderr, "usage: %s DOC LIBCUBLAS LIBCUBLASLT LIBCUDNN\n", argv[0]);
    return 2;
  }
  void *handles[NLIBS];
  for (int i = 0; i < NLIBS; i++) {
    handles[i] = dlopen(argv[2 + i], RTLD_NOW | RTLD_LOCAL);
    if (handles[i] == NULL) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
  }
  FILE *f = fopen(argv[1], "r");
  if (f == NULL) {
    perror(argv[1]);
    return 1;
  }
  char row[4096];
  int line = 0, in_section = 0, bad = 0, names = 0, rows = 0;
  while (fgets(row, sizeof row, f) != NULL) {
    line++;
    if (strncmp(row, "## ", 3) == 0)
      in_section = strncmp(row, "## Entry points PyTorch and the NVIDIA samples call", 51) == 0;
    else if (in_section && strncmp(row, "| `", 3) == 0) {
      rows++;
      bad += check_row(row, handles, line, &names);
    }
  }
  fclose(f);
  printf("%d rows, %d names, %d problems\n", rows, names, bad);
  /* The section has to be there and hold the tables (a renamed heading
   * must not make this pass with nothing checked). */
  if (names < 150) {
    fprintf(stderr, "only %d names found in the entry-point tables\n", names);
    return 1;
  }
  return bad == 0 ? 0 : 1;
}
