/* tc_audit: Tensor Core verdicts for sites read from stdin, with the project's
 * own rules (analysis/kernel_class.h, analysis/tc_eligibility.h), for
 * scripts/gpu-check.sh (which parses the raw files in Python).
 *
 * Input, one site per line, tab-separated:
 *   A B C D compute_type math_mode cc m n k lda ldb ldc ptr_align kernel...
 * ("-" for an unknown field; cc as "9.0"). Output, one line per site:
 *   eligible efficient used used_dtype reason
 * used: yes (some kernel is a Tensor Core kernel), no (every kernel decided
 * and none is), unknown (no kernel, or an undecided one and no yes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/kernel_class.h"
#include "analysis/tc_eligibility.h"

static const char *field(char **p) {
  char *s = *p, *t = s ? strchr(s, '\t') : NULL;
  if (t) *t++ = '\0';
  *p = t;
  return s && strcmp(s, "-") ? s : NULL;
}

static mp_dtype dt(const char *s) {
  return s ? mp_dtype_from_name(s) : MP_DTYPE_INVALID;
}

static uint64_t num(const char *s) {
  return s ? strtoull(s, NULL, 10) : 0;
}

int main(void) {
  static char line[1 << 16];
  int lineno = 0;
  while (fgets(line, sizeof line, stdin)) {
    lineno++;
    line[strcspn(line, "\n")] = '\0';
    char *p = line;
    mp_tc_query q = {0};
    q.a = dt(field(&p));
    q.b = dt(field(&p));
    q.c = dt(field(&p));
    q.d = dt(field(&p));
    q.compute_type = field(&p);
    q.math_mode = field(&p);
    const char *cc = field(&p);
    if (cc && sscanf(cc, "%d.%d", &q.cc_major, &q.cc_minor) != 2) {
      fprintf(stderr, "tc_audit: stdin line %d: bad compute capability '%s'\n", lineno, cc);
      return 2;
    }
    q.m = num(field(&p));
    q.n = num(field(&p));
    q.k = num(field(&p));
    q.lda = num(field(&p));
    q.ldb = num(field(&p));
    q.ldc = num(field(&p));
    q.ptr_align = (unsigned)num(field(&p));
    mp_tc_eligibility e;
    mp_tc_eligible(&q, &e);
    const char *used = "unknown";
    mp_dtype used_dt = MP_DTYPE_INVALID;
    int nk = 0, no = 0;
    while (p) {
      const char *name = field(&p);
      if (!name) continue;
      mp_kernel_class k;
      mp_kernel_classify(name, &k);
      nk++;
      if (k.tc == MP_TC_YES && used_dt == MP_DTYPE_INVALID) {
        used = "yes";
        used_dt = k.a_dtype;
      }
      no += k.tc == MP_TC_NO;
    }
    if (strcmp(used, "yes") && nk > 0 && no == nk) used = "no";
    printf("%d\t%d\t%s\t%s\t%s\n", e.eligible, e.efficient, used, mp_dtype_name(used_dt), e.reason);
  }
  return 0;
}
