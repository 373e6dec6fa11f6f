/* Benchmark: time and peak memory to build the report from synthetic raw
 * files of 1k, 10k and 100k sites (two processes, 100 sites per layer, fp16
 * inputs and an fp32 output per site, a kernel each). Report generation must
 * be linear in sites: the figures printed are per-site cost and the growth
 * ratio against 10x fewer sites (1.0 = linear).
 *
 * At 100k sites the figures are also held against issue 16's limits (5 s
 * CPU, 200 MiB peak RSS): figure, limit and ratio (1.0 = at the limit).
 *
 * Each size runs in a child process so that its peak RSS (wait4) is its own.
 * usage: report_scale [max_sites]   (default 100000)
 *        report_scale --make DIR N  (just write DIR/raw with N sites per process) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"
#include "tests/report/rawgen.h"

static void make_run(const char *dir, int sites) {
  for (int p = 0; p < 2; p++) {
    rg_proc proc = {p ? "node02" : "node01", 100 + p, 1, p, true, "ok", "9.0", "./train"};
    rg_file r;
    char name[64];
    snprintf(name, sizeof name, "%s-%d.json", proc.host, proc.pid);
    if (rg_begin(&r, dir, name, &proc)) {
      fprintf(stderr, "report_scale: %s/raw/%s: cannot write: %s\n", dir, name, strerror(errno));
      exit(1);
    }
    cJSON *proto = rg_gemm(0, "cublasGemmEx", "", "A=fp16,B=fp16,C=fp32,D=fp32", "32F", "DEFAULT",
                           64, 64, 64, 10);
    rg_tensor(proto, "A", MP_FP16, -10, 4, 256);
    rg_tensor(proto, "B", MP_FP16, -8, 2, 256);
    rg_tensor(proto, "D", MP_FP32, -30, 8, 512);
    rg_kernel(proto, "nvjet_hsh_128x64_64x4_1x2_h_bz_coopA_NNT", 10, 12345);
    cJSON_DeleteItemFromObject(proto, "id");
    cJSON_DeleteItemFromObject(proto, "layer");
    cJSON_DeleteItemFromObject(proto, "m");
    char *text = cJSON_PrintUnformatted(proto);
    cJSON_Delete(proto);
    /* Both processes hold the same sites (ranks of one job): they merge. */
    for (int i = 0; i < sites; i++)
      fprintf(r.f, "%s{\"id\":%d,\"layer\":\"block%05d/%s\",\"m\":%d,%s", i ? ",\n" : "", i,
              i / 200, (i / 100) % 2 ? "bwd" : "fwd", 8 * (1 + i % 100), text + 1);
    r.nsites = sites;
    /* event times as a run writes them: CLOCK_REALTIME ns, 19 digits */
    for (int i = 0; i < sites; i++)
      rg_event(&r, i, 1796385748327034849L + 1000L * i, 500, 7);
    free(text);
    if (rg_end(&r)) exit(1);
  }
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--make")) { /* only write DIR/raw with N sites (profiling) */
    char raw[4096];
    snprintf(raw, sizeof raw, "%s/raw", argv[2]);
    mkdir(argv[2], 0755); /* DIR and DIR/raw made when missing; rg_begin says if they cannot be */
    mkdir(raw, 0755);
    make_run(argv[2], atoi(argv[3]));
    return 0;
  }
  int max = argc > 1 ? atoi(argv[1]) : 100000;
  int sizes[] = {1000, 10000, 100000};
  double secs[3] = {0}, cpu[3] = {0};
  long rss[3] = {0};
  printf("%8s %9s %9s %12s %9s %12s %12s %11s\n", "sites", "wall s", "cpu s", "cpu us/site",
         "peak MiB", "cpu growth", "wall growth", "mem growth");
  for (int i = 0; i < 3 && sizes[i] <= max; i++) {
    char *dir = rg_tmpdir("bench");
    if (!dir) return 1;
    make_run(dir, sizes[i]);
    double t0 = now();
    pid_t pid = fork();
    if (pid == 0) {
      mpprof_report_options o = {.out_dir = dir, .program = NULL, .summary = NULL};
      _exit(mpprof_report_generate(&o) ? 1 : 0);
    }
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status)) {
      fprintf(stderr, "report_scale: report generation failed for %d sites\n", sizes[i]);
      return 1;
    }
    secs[i] = now() - t0;
    cpu[i] = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec * 1e-6 + (double)ru.ru_stime.tv_sec +
             ru.ru_stime.tv_usec * 1e-6;
    rss[i] = ru.ru_maxrss; /* KiB */
    printf("%8d %9.3f %9.3f %12.1f %9.1f", sizes[i], secs[i], cpu[i], cpu[i] / sizes[i] * 1e6,
           rss[i] / 1024.0);
    if (i) {
      double f = (double)sizes[i] / sizes[i - 1];
      printf(" %12.2f %12.2f %11.2f\n", cpu[i] / cpu[i - 1] / f, secs[i] / secs[i - 1] / f,
             (double)rss[i] / rss[i - 1]);
    } else {
      printf(" %12s %12s %11s\n", "-", "-", "-");
    }
    rg_rmdir(dir);
    free(dir);
  }
  puts("growth: (t(N) / t(N/10)) / 10, 1.0 = linear; mem growth: peak RSS ratio (10 = linear)");
  if (max >= 100000 && cpu[2] > 0) {
    const double cpu_limit = 5.0, mib_limit = 200.0; /* issue 16 */
    double mib = rss[2] / 1024.0;
    printf("100k sites: %.2f s CPU, limit %.0f s, ratio %.2f; peak %.1f MiB, limit %.0f MiB, "
           "ratio %.2f\n",
           cpu[2], cpu_limit, cpu[2] / cpu_limit, mib, mib_limit, mib / mib_limit);
  }
  return 0;
}
