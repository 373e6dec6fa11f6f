/* Hand-made raw profile files for tests and benchmarks (see rawgen.h). */
#include "rawgen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/raw_format.h"
#include "analysis/schema_keys.h"
#include "analysis/stats.h"
#include "report/tensorio/stats_json.h"

char *rg_tmpdir(const char *tag) {
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char *dir = NULL;
  if (asprintf(&dir, "%s/mpprof-%s-XXXXXX", base, tag) < 0) return NULL;
  if (!mkdtemp(dir)) {
    free(dir);
    return NULL;
  }
  char *raw = NULL;
  if (asprintf(&raw, "%s/raw", dir) < 0 || mkdir(raw, 0755)) {
    free(raw);
    free(dir);
    return NULL;
  }
  free(raw);
  return dir;
}

void rg_rmdir(const char *dir) {
  char *cmd = NULL;
  if (dir && strstr(dir, "/mpprof-") && asprintf(&cmd, "rm -rf '%s'", dir) >= 0) {
    if (system(cmd)) { /* best effort */
    }
  }
  free(cmd);
}

int rg_begin(rg_file *r, const char *dir, const char *name, const rg_proc *p) {
  memset(r, 0, sizeof *r);
  char *path = NULL;
  if (asprintf(&path, "%s/raw/%s", dir, name) < 0) return -1;
  r->f = fopen(path, "w");
  free(path);
  if (!r->f) return -1;
  fprintf(r->f, "{\"schema\":\"%s\",\"final\":%s,\"pid\":%d,\"ppid\":%d,\"host\":\"%s\",",
          MP_SCHEMA_RAW, p->final ? "true" : "false", p->pid, p->ppid, p->host ? p->host : "node");
  if (p->rank >= 0)
    fprintf(r->f, "\"rank\":%d,", p->rank);
  else
    fputs("\"rank\":null,", r->f);
  cJSON *argv0 = cJSON_CreateString(p->argv0 ? p->argv0 : "./train");
  char *a0 = cJSON_PrintUnformatted(argv0);
  fprintf(r->f,
          "\"argv\":[%s,\"--steps\",\"2\"],\"start_ns\":1000,\"end_ns\":2000000,"
          "\"incomplete\":false,\"incomplete_reasons\":[],\"scan\":\"all\",\"sample\":1,",
          a0);
  free(a0);
  cJSON_Delete(argv0);
  if (p->device_cc)
    fprintf(r->f, "\"device\":{\"name\":\"NVIDIA H200\",\"cc\":\"%s\"},", p->device_cc);
  else
    fputs("\"device\":null,", r->f);
  fprintf(r->f, "\"cupti\":{\"status\":\"%s\",\"dropped_records\":0},\n\"sites\":[",
          p->cupti ? p->cupti : "ok");
  return 0;
}

cJSON *rg_gemm(int id, const char *api, const char *layer, const char *types,
               const char *compute_type, const char *math_mode, int m, int n, int k, int calls) {
  cJSON *s = cJSON_CreateObject();
  cJSON_AddNumberToObject(s, "id", id);
  cJSON_AddStringToObject(s, "api", api);
  cJSON_AddStringToObject(s, "op", "gemm");
  cJSON_AddStringToObject(s, "layer", layer);
  cJSON_AddNumberToObject(s, "m", m);
  cJSON_AddNumberToObject(s, "n", n);
  cJSON_AddNumberToObject(s, "k", k);
  cJSON_AddNumberToObject(s, "batch", 1);
  cJSON_AddStringToObject(s, "transa", "N");
  cJSON_AddStringToObject(s, "transb", "N");
  cJSON_AddNumberToObject(s, "lda", m);
  cJSON_AddNumberToObject(s, "ldb", k);
  cJSON_AddNumberToObject(s, "ldc", m);
  cJSON *t = cJSON_AddObjectToObject(s, "types");
  char buf[128];
  snprintf(buf, sizeof buf, "%s", types);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(tok, '=');
    if (!eq) continue;
    *eq = 0;
    cJSON_AddStringToObject(t, tok, eq + 1);
  }
  cJSON_AddStringToObject(s, "compute_type", compute_type);
  cJSON_AddStringToObject(s, "scale_type", "fp32");
  if (math_mode)
    cJSON_AddStringToObject(s, "math_mode", math_mode);
  else
    cJSON_AddNullToObject(s, "math_mode");
  cJSON_AddNumberToObject(s, "calls", calls);
  cJSON_AddNumberToObject(s, "scanned_calls", calls);
  cJSON_AddObjectToObject(s, "tensors");
  cJSON_AddNumberToObject(s, "ptr_align", 256);
  return s;
}

static void add_stats(cJSON *site, const char *role, const mp_stats *st) {
  cJSON *t = cJSON_GetObjectItemCaseSensitive(site, "tensors");
  cJSON_AddItemToObject(t, role, mpprof_stats_to_json(st, NULL));
}

void rg_tensor(cJSON *site, const char *role, mp_dtype dtype, double lo_log2, double hi_log2,
               int n) {
  mp_stats *st = malloc(sizeof *st);
  mp_stats_init(st, dtype);
  for (int i = 0; i < n; i++) {
    double e = n > 1 ? lo_log2 + (hi_log2 - lo_log2) * i / (n - 1) : lo_log2;
    double x = exp2(e);
    mp_stats_add(st, i % 2 ? -x : x);
  }
  add_stats(site, role, st);
  free(st);
}

void rg_tensor_values(cJSON *site, const char *role, mp_dtype dtype, const double *v, int n) {
  mp_stats *st = malloc(sizeof *st);
  mp_stats_init(st, dtype);
  for (int i = 0; i < n; i++)
    mp_stats_add(st, v[i]);
  add_stats(site, role, st);
  free(st);
}

void rg_shadow_candidate(cJSON *cands, const char *name, double rel_l2, int calls) {
  cJSON *c = cJSON_AddObjectToObject(cands, name);
  cJSON_AddNumberToObject(c, "calls", calls);
  cJSON_AddNumberToObject(c, "rel_l2", rel_l2);
  cJSON_AddNumberToObject(c, "max_rel", rel_l2);
  cJSON_AddNumberToObject(c, "flushed", 0);
  cJSON_AddNumberToObject(c, "nonfinite", 0);
  cJSON_AddItemToArray(cJSON_AddArrayToObject(c, "rel_l2_samples"), cJSON_CreateNumber(rel_l2));
}

void rg_kernel(cJSON *site, const char *name, int count, long gpu_ns) {
  cJSON *ks = cJSON_GetObjectItemCaseSensitive(site, "kernels");
  if (!ks) ks = cJSON_AddArrayToObject(site, "kernels");
  cJSON *k = cJSON_CreateObject();
  cJSON_AddStringToObject(k, "name", name);
  cJSON_AddNumberToObject(k, "count", count);
  cJSON_AddNumberToObject(k, "gpu_ns", (double)gpu_ns);
  cJSON_AddItemToArray(ks, k);
  cJSON *g = cJSON_GetObjectItemCaseSensitive(site, "gpu_ns");
  double total = (g ? g->valuedouble : 0) + (double)gpu_ns;
  if (g)
    cJSON_SetNumberValue(g, total);
  else
    cJSON_AddNumberToObject(site, "gpu_ns", total);
}

void rg_site_end(rg_file *r, cJSON *site) {
  char *s = cJSON_PrintUnformatted(site);
  fprintf(r->f, "%s\n%s", r->nsites++ ? "," : "", s);
  free(s);
  cJSON_Delete(site);
}

void rg_event(rg_file *r, int site, long t_ns, long dur_ns, long thread) {
  if (!r->in_events) {
    fputs("],\n\"events\":[", r->f);
    r->in_events = true;
  }
  fprintf(r->f, "%s{\"site\":%d,\"t_ns\":%ld,\"dur_ns\":%ld,\"thread\":%ld,\"stream\":\"0x0\"}",
          r->nevents++ ? "," : "", site, t_ns, dur_ns, thread);
}

int rg_end(rg_file *r) {
  if (!r->in_events) fputs("],\n\"events\":[", r->f);
  fputs("]}\n", r->f);
  return fclose(r->f);
}

int rg_write_text(const char *dir, const char *name, const char *text, size_t len) {
  char *path = NULL;
  if (asprintf(&path, "%s/raw/%s", dir, name) < 0) return -1;
  FILE *f = fopen(path, "w");
  free(path);
  if (!f) return -1;
  size_t w = fwrite(text, 1, len, f);
  return fclose(f) || w != len ? -1 : 0;
}

int rg_edit(const char *dir, const char *name, const char *was, const char *now) {
  char *path = NULL;
  if (asprintf(&path, "raw/%s", name) < 0) return -1;
  char *raw = rg_read_text(dir, path, NULL);
  free(path);
  char *at = raw ? strstr(raw, was) : NULL;
  char *edited = NULL;
  int rc = -1;
  if (at && asprintf(&edited, "%.*s%s%s", (int)(at - raw), raw, now, at + strlen(was)) > 0)
    rc = rg_write_text(dir, name, edited, strlen(edited));
  free(edited);
  free(raw);
  return rc;
}

int rg_set_scan(const char *dir, const char *name, const char *mode) {
  char *now = NULL;
  if (asprintf(&now, "\"scan\":\"%s\"", mode) < 0) return -1;
  int rc = rg_edit(dir, name, "\"scan\":\"all\"", now);
  free(now);
  return rc;
}

char *rg_read_text(const char *dir, const char *name, size_t *ret_len) {
  char *path = NULL;
  if (asprintf(&path, "%s/%s", dir, name) < 0) return NULL;
  FILE *f = fopen(path, "rb");
  free(path);
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) {
    buf[n] = 0;
    if (ret_len) *ret_len = (size_t)n;
  }
  return buf;
}

cJSON *rg_read_json(const char *dir, const char *name) {
  char *t = rg_read_text(dir, name, NULL);
  cJSON *j = t ? cJSON_Parse(t) : NULL;
  free(t);
  return j;
}
