/* The program the safety tests run (no CUDA):
 *   inject            what the CUDA driver does with CUDA_INJECTION64_PATH:
 *                     dlopen it and call InitializeInjection, then exit 0
 *   sigcount SECONDS  count SIGINT/SIGTERM/SIGHUP for SECONDS, print "signals N"
 *   sleep SECONDS     sleep (default signal actions)
 *   fillstderr        fill stderr (a pipe nobody reads) and exit 0
 *   vfork N           N times vfork + execve /bin/true with an environment of
 *                     LD_PRELOAD and PATH only (as CPython's subprocess), then
 *                     the same once in each of N threads (4 at a time, after
 *                     a warm-up round: the C library keeps stacks); prints
 *                     "grew K threads T" (KiB the address space grew by) */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t nsignals;

static void count(int sig) {
  (void)sig;
  nsignals++;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long vm_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmSize:", 7)) v = atol(line + 7);
  if (f) fclose(f);
  return v;
}

static char preload[4200], asan[4200];

static void *vfork_exec(void *failed) {
  /* a sanitized build's libmpprof needs its ASAN_OPTIONS (the link order
   * check off) in /bin/true too */
  char *env[] = {preload, "PATH=/usr/bin:/bin", asan[0] ? asan : NULL, NULL};
  char *av[] = {"true", NULL};
  pid_t pid = vfork();
  if (pid == 0) {
    execve("/bin/true", av, env);
    _exit(127);
  }
  int st;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
    *(int *)failed = 1;
  return NULL;
}

static bool vfork_exec_threads(int *failed) {
  pthread_t t[4];
  for (int j = 0; j < 4; j++)
    if (pthread_create(&t[j], NULL, vfork_exec, failed)) return false;
  for (int j = 0; j < 4; j++)
    pthread_join(t[j], NULL);
  return true;
}

static int vfork_execs(int n) {
  snprintf(preload, sizeof preload, "LD_PRELOAD=%s",
           getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
  if (getenv("ASAN_OPTIONS"))
    snprintf(asan, sizeof asan, "ASAN_OPTIONS=%s", getenv("ASAN_OPTIONS"));
  int failed = 0;
  long before = vm_kib();
  for (int i = 0; i < n && !failed; i++)
    vfork_exec(&failed);
  long grew = vm_kib() - before;
  if (!vfork_exec_threads(&failed)) return 1;
  before = vm_kib();
  for (int i = 0; i < n / 4; i++)
    if (!vfork_exec_threads(&failed)) return 1;
  if (failed) return 1;
  printf("grew %ld threads %ld\n", grew, vm_kib() - before);
  return 0;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  double secs = argc > 2 ? atof(argv[2]) : 1.0;
  if (!strcmp(mode, "inject")) {
    const char *lib = getenv("CUDA_INJECTION64_PATH");
    void *h = lib ? dlopen(lib, RTLD_NOW) : NULL;
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
    if (!init) {
      fprintf(stderr, "safety_prog: cannot load %s\n", lib ? lib : "(unset)");
      return 2;
    }
    init();
    return 0;
  }
  if (!strcmp(mode, "sigcount")) {
    struct sigaction sa = {0};
    sa.sa_handler = count;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    for (double end = now() + secs; now() < end;)
      usleep(1000);
    printf("signals %d\n", (int)nsignals);
    return 0;
  }
  if (!strcmp(mode, "sleep")) {
    usleep((useconds_t)(secs * 1e6));
    return 0;
  }
  if (!strcmp(mode, "fillstderr")) {
    int fl = fcntl(2, F_GETFL);
    fcntl(2, F_SETFL, fl | O_NONBLOCK);
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    while (write(2, buf, sizeof buf) > 0 || errno == EINTR)
      ;
    while (write(2, buf, 1) > 0) /* the last bytes of a full pipe */
      ;
    fcntl(2, F_SETFL, fl); /* shared with mpprof: blocking again */
    return 0;
  }
  if (!strcmp(mode, "vfork")) return vfork_execs(argc > 2 ? atoi(argv[2]) : 100);
  fprintf(stderr, "usage: safety_prog inject | sigcount S | sleep S | fillstderr | vfork N\n");
  return 2;
}
