/* shadow_host: cost of shadow execution's host path per shadowed call,
 * against the op itself, under simcuda, in one run.
 *
 * The same program (this executable, --child) runs an NxNxN cublasSgemm_v2
 * on host-visible (simcuda) memory in a loop: bare, with libmpprof.so and
 * shadow execution off, and with MPPROF_SHADOW=1 (every call shadowed: fp64
 * reference and the ten candidates of analysis/shadow.h). The figure is the
 * shadow's extra time per call; the limit it is put against is the op itself
 * (simcuda's CPU GEMM, measured in the same run): the ratio says how many
 * times the op a shadowed call costs (the host path does one fp64 and ten
 * fp32 GEMMs of the same shape, plus the casts).
 *
 * usage: shadow_host PATH/libmpprof.so [N [CALLS]]   (LD_LIBRARY_PATH=<simcuda>) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int child(int dim, long calls) {
  cublasHandle_t h;
  float *a, *b, *c;
  size_t bytes = (size_t)dim * (size_t)dim * sizeof(float);
  float *host = malloc(bytes);
  if (!host) return 1;
  for (int i = 0; i < dim * dim; i++)
    host[i] = (float)(i % 7) * 0.25f - 0.75f;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cudaMalloc((void **)&a, bytes) ||
      cudaMalloc((void **)&b, bytes) || cudaMalloc((void **)&c, bytes)) {
    fputs("shadow_host: CUDA setup failed (is LD_LIBRARY_PATH the simcuda dir?)\n", stderr);
    return 1;
  }
  cudaMemcpy(a, host, bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(b, host, bytes, cudaMemcpyHostToDevice);
  const float one = 1, zero = 0;
  cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &one, a, dim, b, dim, &zero, c, dim);
  double t0 = now_ns();
  for (long i = 0; i < calls; i++)
    cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &one, a, dim, b, dim, &zero, c, dim);
  double t1 = now_ns();
  printf("%.1f\n", (t1 - t0) / (double)calls);
  cublasDestroy(h);
  free(host);
  return 0;
}

static double run_child(const char *self, const char *lib, const char *out, int dim, long calls,
                        const char *shadow) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    if (shadow) {
      setenv("LD_PRELOAD", lib, 1);
      setenv("MPPROF_OUT", out, 1);
      setenv("MPPROF_CHECKPOINT_S", "0", 1);
      setenv("MPPROF_SCAN", "none", 1);
      setenv("MPPROF_CUPTI", "off", 1);
      setenv("MPPROF_SHADOW", shadow, 1);
    }
    char d[32], n[32];
    snprintf(d, sizeof d, "%d", dim);
    snprintf(n, sizeof n, "%ld", calls);
    execl(self, self, "--child", d, n, (char *)NULL);
    _exit(127);
  }
  close(fd[1]);
  char buf[64] = "";
  ssize_t got = read(fd[0], buf, sizeof buf - 1);
  close(fd[0]);
  int st;
  waitpid(pid, &st, 0);
  if (got <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return -1;
  return atof(buf);
}

int main(int argc, char **argv) {
  if (argc >= 4 && !strcmp(argv[1], "--child")) return child(atoi(argv[2]), atol(argv[3]));
  if (argc < 2) {
    fputs("usage: shadow_host PATH/libmpprof.so [N [CALLS]]\n", stderr);
    return 2;
  }
  const char *lib = argv[1];
  int dim = argc > 2 ? atoi(argv[2]) : 128;
  long calls = argc > 3 ? atol(argv[3]) : 20;
  if (dim < 1 || calls < 1) return 2;
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  char out[] = "/tmp/mpprof-shadow-host-XXXXXX";
  if (!mkdtemp(out)) {
    perror("shadow_host: mkdtemp");
    return 1;
  }
  /* Interleaved rounds, the fastest of each kept (the machine may be shared). */
  enum { ROUNDS = 3 };
  static const char *const names[3] = {"op itself (no mpprof)", "mpprof, shadow off",
                                       "mpprof, --shadow=1 (every call)"};
  static const char *const shadow[3] = {NULL, "0", "1"};
  double ns[3] = {1e300, 1e300, 1e300};
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < 3; i++) {
      double t = run_child(self, lib, out, dim, calls, shadow[i]);
      if (t < 0 || ns[i] < 0)
        ns[i] = -1;
      else if (t < ns[i])
        ns[i] = t;
    }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
  if (system(cmd) != 0) fprintf(stderr, "shadow_host: could not remove %s\n", out);
  if (ns[0] < 0 || ns[1] < 0 || ns[2] < 0) {
    fputs("shadow_host: a run failed\n", stderr);
    return 1;
  }
  printf("shadow_host: %ld calls of cublasSgemm_v2 %dx%dx%d (fp32) under simcuda, fastest of %d "
         "rounds\n",
         calls, dim, dim, dim, ROUNDS);
  for (int i = 0; i < 3; i++)
    printf("%-34s %14.0f ns/call\n", names[i], ns[i]);
  printf("shadow cost per shadowed call: %.0f ns = %.2f x the op itself\n", ns[2] - ns[1],
         (ns[2] - ns[1]) / ns[0]);
  return 0;
}
