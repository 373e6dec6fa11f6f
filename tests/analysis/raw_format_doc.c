/* docs/raw-format.md's key index against analysis/raw_format.h.
 *
 *   raw_format_doc DOC     exit 0 when the index between the raw-keys markers
 *                          of DOC is the one the tables give; else print the
 *                          expected index (paste it into DOC) and exit 1
 *   raw_format_doc --print print the index */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/raw_format.h"

#define BEGIN "<!-- raw-keys begin: generated from analysis/raw_format.h (raw_format_doc) -->\n"
#define END "<!-- raw-keys end -->\n"

typedef struct buf {
  char *p;
  size_t n;
} buf;

static void add(buf *b, const char *object, const char *key, const char *kind, const char *doc) {
  char esc[256], line[512];
  size_t j = 0;
  for (const char *c = doc; *c && j + 2 < sizeof esc; c++) { /* '|' would end the cell */
    if (*c == '|') esc[j++] = '\\';
    esc[j++] = *c;
  }
  esc[j] = '\0';
  int n = snprintf(line, sizeof line, "| %s | `%s` | %s | %s |\n", object, key, kind, esc);
  b->p = realloc(b->p, b->n + (size_t)n + 1);
  if (!b->p) exit(2);
  memcpy(b->p + b->n, line, (size_t)n + 1);
  b->n += (size_t)n;
}

static buf index_text(void) {
  buf b = {0};
  char head[256];
  snprintf(head, sizeof head,
           BEGIN "Format version %d (`\"schema\": \"%s\"`).\n\n"
                 "| object | key | site key | what |\n|---|---|---|---|\n",
           MP_RAW_VERSION, MP_SCHEMA_RAW);
  b.p = strdup(head);
  b.n = strlen(head);
#define ROW(object, json, doc) add(&b, object, json, "", doc);
#define T(name, json, doc) ROW("top", json, doc)
  MP_RAW_TOP(T)
#undef T
#define K(name, json, kind, doc)                                                                   \
  if (*json) add(&b, "SITE", json, "yes", doc);
  MP_RAW_SITE_KEY(K)
#undef K
#define T(name, json, doc) ROW("SITE", json, doc)
  MP_RAW_SITE_COUNTERS(T)
#undef T
#define T(name, json, doc) ROW("SITE.conv", json, doc)
  MP_RAW_CONV(T)
#undef T
#define T(name, json, doc) ROW("SITE.fp8_scales", json, doc)
  MP_RAW_FP8_SCALES(T)
#undef T
#define T(name, json, doc) ROW("SITE.fp8_scale_values.* and SITE.amax_D", json, doc)
  MP_RAW_FP8_VALUE(T)
#undef T
#define T(name, json, doc) ROW("SITE.not_scanned", json, doc)
  MP_RAW_NOT_SCANNED(T)
#undef T
#define T(name, json, doc) ROW("SITE.shadow", json, doc)
  MP_RAW_SHADOW(T)
#undef T
#define T(name, json, doc) ROW("SITE.shadow.skipped", json, doc)
  MP_RAW_SHADOW_SKIPPED(T)
#undef T
#define T(name, json, doc) ROW("SITE.shadow.candidates.*", json, doc)
  MP_RAW_SHADOW_CAND(T)
#undef T
#define T(name, json, doc) ROW("SITE.kernels[]", json, doc)
  MP_RAW_KERNEL(T)
#undef T
#define T(name, json, doc) ROW("nvtx", json, doc)
  MP_RAW_NVTX(T)
#undef T
#define T(name, json, doc) ROW("device", json, doc)
  MP_RAW_DEVICE(T)
#undef T
#define T(name, json, doc) ROW("framework", json, doc)
  MP_RAW_FRAMEWORK(T)
#undef T
#define T(name, json, doc) ROW("model", json, doc)
  MP_RAW_MODEL(T)
#undef T
#define T(name, json, doc) ROW("cupti", json, doc)
  MP_RAW_CUPTI(T)
#undef T
#define T(name, json, doc) ROW("cupti.unattributed_kernels.*", json, doc)
  MP_RAW_UNATTRIBUTED(T)
#undef T
#define T(name, json, doc) ROW("tc_counters", json, doc)
  MP_RAW_TC_COUNTERS(T)
#undef T
#define T(name, json, doc) ROW("events[]", json, doc)
  MP_RAW_EVENT(T)
#undef T
#define T(name, json, doc) ROW("ranges[]", json, doc)
  MP_RAW_RANGE(T)
#undef T
#define T(name, json, doc) ROW("kernel_events[]", json, doc)
  MP_RAW_KERNEL_EVENT(T)
#undef T
#define T(name, json, doc) ROW("timeline", json, doc)
  MP_RAW_TIMELINE(T)
#undef T
#define T(name, json, doc) ROW("capture", json, doc)
  MP_RAW_CAPTURE(T)
#undef T
#define T(name, json, doc) ROW("capture.outside", json, doc)
  MP_RAW_CAPTURE_OUTSIDE(T)
#undef T
#define T(name, json, doc) ROW("training", json, doc)
  MP_RAW_TRAINING(T)
#undef T
#define T(name, json, doc) ROW("training.scale_changes[]", json, doc)
  MP_RAW_SCALE_CHANGE(T)
#undef T
#define T(name, json, doc) ROW("training.steps", json, doc)
  MP_RAW_STEPS(T)
#undef T
#define T(name, json, doc) ROW("training.step_scales[]", json, doc)
  MP_RAW_STEP_SCALE(T)
#undef T
#define T(name, json, doc) ROW("training.skipped_steps", json, doc)
  MP_RAW_SKIPPED(T)
#undef T
#define T(name, json, doc) ROW("training.first_nonfinite", json, doc)
  MP_RAW_NONFINITE(T)
#undef T
  b.p = realloc(b.p, b.n + sizeof END);
  if (!b.p) exit(2);
  memcpy(b.p + b.n, END, sizeof END);
  b.n += sizeof END - 1;
  return b;
}

int main(int argc, char **argv) {
  buf want = index_text();
  if (argc == 2 && !strcmp(argv[1], "--print")) {
    fputs(want.p, stdout);
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: raw_format_doc DOC | --print\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "r");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  static char doc[1 << 20];
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[n] = '\0';
  const char *b = strstr(doc, BEGIN), *e = b ? strstr(b, END) : NULL;
  if (!b || !e) {
    fprintf(stderr, "%s: no key index between the raw-keys markers; expected:\n%s", argv[1],
            want.p);
    return 1;
  }
  size_t len = (size_t)(e - b) + strlen(END);
  if (len != want.n || memcmp(b, want.p, len)) {
    fprintf(stderr,
            "%s: the key index differs from analysis/raw_format.h; expected (paste it in):\n%s",
            argv[1], want.p);
    return 1;
  }
  free(want.p);
  return 0;
}
