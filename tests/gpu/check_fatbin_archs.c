/* check_fatbin_archs FILE "sm_75 ... compute_100": the fatbin inside FILE (a
 * fatbin or a library embedding one) holds exactly these architectures.
 * Prints what it found; exit 0 on a match, 1 on a mismatch, 2 on bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/fatbin_info.h"

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s FILE ARCHS\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  unsigned char *buf = n > 0 ? malloc((size_t)n) : NULL;
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "%s: cannot read\n", argv[1]);
    return 2;
  }
  fclose(f);
  size_t len = 0;
  const void *fb = mpp_fatbin_find(buf, (size_t)n, &len);
  char archs[512];
  if (!fb || mpp_fatbin_archs(fb, len, archs, sizeof archs) <= 0) {
    fprintf(stderr, "%s: no well-formed fatbin inside\n", argv[1]);
    free(buf);
    return 1;
  }
  printf("%s: %s\n", argv[1], archs);
  int ok = strcmp(archs, argv[2]) == 0;
  if (!ok) fprintf(stderr, "%s: expected %s\n", argv[1], argv[2]);
  free(buf);
  return ok ? 0 : 1;
}
