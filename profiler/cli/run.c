/* mpprof run: launch a program with libmpprof.so injected, wait for it, and
 * build the report from the raw files its processes wrote.
 *
 * The child gets LD_PRELOAD (prepended), NVTX_INJECTION64_PATH,
 * CUDA_INJECTION64_PATH and the MPPROF_* settings; mpprof's own environment
 * is untouched. SIGINT/SIGTERM/SIGHUP sent to mpprof are forwarded to the
 * child (a terminal's signal already reaches the whole foreground group, so
 * those are not sent twice). The exit status is the child's, 128 + signal
 * when it was killed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/advice.h"
#include "commands.h"
#include "report/report.h"

#ifndef MPPROF_LIBDIR
#define MPPROF_LIBDIR "lib"
#endif

typedef struct run_opts {
  const char *out;
  bool force;
  const char *scan;
  const char *sample;
  const char *checkpoint;
  const char *tc_counters; /* "first" or N: MPPROF_TC_COUNTERS */
  const char *loss_scale;  /* MPPROF_LOSS_SCALE */
  char **argv;             /* program and its arguments */
} run_opts;

static void usage(FILE *f) {
  fputs("usage: mpprof [run] [-o DIR] [--force] [--scan all|outputs|none] [--sample N|auto]\n"
        "                    [--checkpoint SECONDS] [--tc-counters[=N]] [--loss-scale S]\n"
        "                    [--] PROGRAM ARGS...\n"
        "  -o, --output DIR   where raw files and the report go\n"
        "                     (default: mpprof-<program>-<date> in the current directory)\n"
        "  --force            use DIR even when it is not empty (its old raw files are removed)\n"
        "  --scan MODE        which tensors are scanned: all (default), outputs, none\n"
        "  --sample N|auto    scan every Nth call of each op site; auto (default): every call\n"
        "                     for a site's first 64, then 1 in 2, 4, ... up to 1 in 64\n"        "  --checkpoint S     write the raw files every S seconds while running (default 10,\n"
        "                     0: only at exit)\n"
        "  --tc-counters[=N]  decide Tensor Core use from hardware counters (CUPTI range\n"
        "                     profiler, kernel replay: serialises and replays the profiled\n"
        "                     calls' kernels) for the first call of each op site, or with =N\n"
        "                     for every Nth call of each site\n"
        "  --loss-scale S     the program multiplies its loss (so its gradients) by S\n"
        "                     (65536, 2^16, 1e3); for a fixed scale the program does not\n"
        "                     declare through the NVTX domain \"mpprof\" (its marks win)\n",
        f);
}

/* --- options --- */

static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=') return argv[*i] + n + 1;
  if (*i + 1 >= argc) {
    fprintf(stderr, "mpprof: run: %s needs a value\n", name);
    return NULL;
  }
  return argv[++*i];
}

static bool is_opt(const char *arg, const char *name) {
  size_t n = strlen(name);
  return !strncmp(arg, name, n) && (arg[n] == '\0' || arg[n] == '=');
}

static bool valid_uint(const char *s, unsigned long lo) {
  char *end;
  errno = 0;
  unsigned long v = strtoul(s, &end, 10);
  return *s && !*end && !errno && v >= lo && s[0] != '-';
}

static bool valid_seconds(const char *s) {
  char *end;
  double v = strtod(s, &end);
  return *s && !*end && v >= 0 && v <= 1e6;
}

/* 0 ok, 1 help printed, 2 usage error (message printed). */
static int parse(int argc, char **argv, run_opts *o) {
  memset(o, 0, sizeof *o);
  int i;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--")) {
      i++;
      break;
    }
    if (a[0] != '-' || !a[1]) break;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 1;
    } else if (!strcmp(a, "-o") || is_opt(a, "--output")) {
      if (!(o->out = opt_value(argc, argv, &i, !strcmp(a, "-o") ? "-o" : "--output"))) return 2;
    } else if (!strcmp(a, "--force")) {
      o->force = true;
    } else if (is_opt(a, "--scan")) {
      if (!(o->scan = opt_value(argc, argv, &i, "--scan"))) return 2;
      if (strcmp(o->scan, "all") && strcmp(o->scan, "outputs") && strcmp(o->scan, "none")) {
        fprintf(stderr, "mpprof: run: --scan must be all, outputs or none, not '%s'\n", o->scan);
        return 2;
      }
    } else if (is_opt(a, "--sample")) {
      if (!(o->sample = opt_value(argc, argv, &i, "--sample"))) return 2;
      if (strcmp(o->sample, "auto") && !valid_uint(o->sample, 1)) {
        fprintf(stderr, "mpprof: run: --sample must be auto or a positive integer, not '%s'\n",
                o->sample);
        return 2;
      }
    } else if (is_opt(a, "--checkpoint")) {
      if (!(o->checkpoint = opt_value(argc, argv, &i, "--checkpoint"))) return 2;
      if (!valid_seconds(o->checkpoint)) {
        fprintf(stderr, "mpprof: run: --checkpoint must be seconds >= 0, not '%s'\n",
                o->checkpoint);
        return 2;
      }
    } else if (is_opt(a, "--loss-scale")) {
      if (!(o->loss_scale = opt_value(argc, argv, &i, "--loss-scale"))) return 2;
      double s;
      if (mp_parse_loss_scale(o->loss_scale, &s) < 0) {
        fprintf(stderr, "mpprof: run: --loss-scale must be a positive finite number or 2^k, not '%s'\n",
                o->loss_scale);
        return 2;
      }
    } else if (is_opt(a, "--tc-counters")) {
      /* The value only with '=': "--tc-counters prog" runs prog. */
      o->tc_counters = a[strlen("--tc-counters")] == '=' ? a + strlen("--tc-counters=") : "first";
      if (strcmp(o->tc_counters, "first") && !valid_uint(o->tc_counters, 1)) {
        fprintf(stderr, "mpprof: run: --tc-counters=N needs a positive integer, not '%s'\n",
                o->tc_counters);
        return 2;
      }
    } else {
      fprintf(stderr, "mpprof: run: unknown option '%s' (see 'mpprof help run')\n", a);
      return 2;
    }
  }
  if (i >= argc) {
    fputs("mpprof: run: no program to run (see 'mpprof help run')\n", stderr);
    return 2;
  }
  o->argv = argv + i;
  return 0;
}

/* --- the output directory --- */

static bool dir_is_empty(const char *path) {
  DIR *d = opendir(path);
  if (!d) return true;
  struct dirent *e;
  bool empty = true;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
      empty = false;
      break;
    }
  closedir(d);
  return empty;
}

/* --force: raw files of an earlier run would be merged into this report. */
static void remove_old_raw_files(const char *out) {
  char raw[PATH_MAX + 8];
  snprintf(raw, sizeof raw, "%s/raw", out);
  DIR *d = opendir(raw);
  if (!d) return;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t n = strlen(e->d_name);
    if ((n > 5 && !strcmp(e->d_name + n - 5, ".json")) || strstr(e->d_name, ".json.tmp")) {
      char p[PATH_MAX + 272];
      snprintf(p, sizeof p, "%s/%s", raw, e->d_name);
      unlink(p);
    }
  }
  closedir(d);
}

static int mkdir_p(const char *path) {
  char tmp[PATH_MAX];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return -ENAMETOOLONG;
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -errno;
      *p = '/';
    }
  if (mkdir(tmp, 0777) != 0 && errno != EEXIST) return -errno;
  return 0;
}

static void default_out(char *buf, size_t n, const char *program) {
  const char *base = strrchr(program, '/');
  base = base ? base + 1 : program;
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  char date[32];
  strftime(date, sizeof date, "%Y%m%d-%H%M%S", &tm);
  snprintf(buf, n, "mpprof-%s-%s", base, date);
}

/* --- finding libmpprof.so --- */

static bool readable(const char *p) {
  return access(p, R_OK) == 0;
}

static int find_library(char *ret, size_t n) {
  const char *env = getenv("MPPROF_LIB");
  if (env && *env) {
    if (!realpath(env, ret) || !readable(ret)) {
      fprintf(stderr, "mpprof: MPPROF_LIB=%s: not a readable file\n", env);
      return -1;
    }
    return 0;
  }
#ifdef MPPROF_NO_PROFILER
  fputs("mpprof: this mpprof was built without the CUDA toolkit, so without libmpprof.so: "
        "`mpprof run` needs it (rebuild with -Dtoolkit_root=..., or set MPPROF_LIB); "
        "report, merge and inspect work\n",
        stderr);
  (void)n;
  return -1;
#endif
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) {
    fputs("mpprof: cannot read /proc/self/exe to find libmpprof.so\n", stderr);
    return -1;
  }
  exe[len] = '\0';
  char *slash = strrchr(exe, '/');
  *slash = '\0';
  /* Build tree: <builddir>/mpprof next to <builddir>/profiler/libmpprof.so;
   * installed: <prefix>/bin/mpprof and <prefix>/<libdir>/libmpprof.so. */
  const char *candidates[] = {"%s/profiler/libmpprof.so", "%s/../" MPPROF_LIBDIR "/libmpprof.so",
                              "%s/../lib/libmpprof.so", "%s/../lib64/libmpprof.so"};
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, candidates[i], exe);
    if (readable(p) && realpath(p, ret)) return 0;
  }
  (void)n;
  fprintf(stderr, "mpprof: libmpprof.so not found next to %s (set MPPROF_LIB)\n", exe);
  return -1;
}

/* --- the child --- */

static volatile pid_t child_pid;

static void forward_signal(int sig, siginfo_t *info, void *ctx) {
  (void)ctx;
  /* SI_KERNEL: the terminal sent it to the whole foreground group already. */
  if (child_pid > 0 && info->si_code != SI_KERNEL) kill(child_pid, sig);
}

static void set_child_env(const run_opts *o, const char *lib, const char *out) {
  const char *old = getenv("LD_PRELOAD");
  if (old && *old) {
    size_t n = strlen(lib) + strlen(old) + 2;
    char *v = malloc(n);
    if (v) {
      snprintf(v, n, "%s:%s", lib, old);
      setenv("LD_PRELOAD", v, 1);
    }
  } else {
    setenv("LD_PRELOAD", lib, 1);
  }
  setenv("NVTX_INJECTION64_PATH", lib, 1);
  setenv("CUDA_INJECTION64_PATH", lib, 1);
  setenv("MPPROF_OUT", out, 1);
  if (o->scan) setenv("MPPROF_SCAN", o->scan, 1);
  if (o->sample) setenv("MPPROF_SAMPLE", o->sample, 1);
  if (o->checkpoint) setenv("MPPROF_CHECKPOINT_S", o->checkpoint, 1);
  if (o->tc_counters) setenv("MPPROF_TC_COUNTERS", o->tc_counters, 1);
  if (o->loss_scale) setenv("MPPROF_LOSS_SCALE", o->loss_scale, 1);
}

static void warn_other_injection(const char *var, const char *lib) {
  const char *v = getenv(var);
  if (v && *v && strcmp(v, lib) != 0)
    fprintf(stderr, "mpprof: %s was %s; replaced by libmpprof.so for this run\n", var, v);
}

/* Runs the program; returns its exit status (128 + signal), or 127 when it
 * could not be started (then *ret_started is false). */
static int run_child(const run_opts *o, const char *lib, const char *out, bool *ret_started) {
  int pipefd[2];
  *ret_started = false;
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    fprintf(stderr, "mpprof: pipe: %s\n", strerror(errno));
    return 127;
  }
  struct sigaction sa = {0};
  sa.sa_sigaction = forward_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
    sigaction(sigs[i], &sa, NULL);

  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "mpprof: fork: %s\n", strerror(errno));
    return 127;
  }
  if (pid == 0) {
    close(pipefd[0]);
    struct sigaction dfl = {0};
    dfl.sa_handler = SIG_DFL;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
      sigaction(sigs[i], &dfl, NULL);
    set_child_env(o, lib, out);
    execvp(o->argv[0], o->argv);
    int err = errno;
    ssize_t ignored = write(pipefd[1], &err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  child_pid = pid;
  close(pipefd[1]);
  int err = 0;
  ssize_t n;
  while ((n = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR)
    ;
  close(pipefd[0]);

  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  child_pid = 0;
  if (n == (ssize_t)sizeof err) {
    fprintf(stderr, "mpprof: cannot run %s: %s\n", o->argv[0], strerror(err));
    return 127;
  }
  *ret_started = true;
  if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

int mpprof_cmd_run(int argc, char **argv) {
  run_opts o;
  int rc = parse(argc, argv, &o);
  if (rc) return rc == 1 ? 0 : 2;

  char lib[PATH_MAX];
  if (find_library(lib, sizeof lib) < 0) return 2;

  char outbuf[PATH_MAX];
  if (!o.out) {
    default_out(outbuf, sizeof outbuf, o.argv[0]);
    o.out = outbuf;
  }
  struct stat stt;
  bool existed = stat(o.out, &stt) == 0;
  if (existed) {
    if (!S_ISDIR(stt.st_mode)) {
      fprintf(stderr, "mpprof: %s exists and is not a directory\n", o.out);
      return 2;
    }
    if (!dir_is_empty(o.out)) {
      if (!o.force) {
        fprintf(stderr, "mpprof: %s is not empty (use --force to reuse it)\n", o.out);
        return 2;
      }
      remove_old_raw_files(o.out);
    }
  }
  int err = mkdir_p(o.out);
  char out_abs[PATH_MAX];
  if (err < 0 || !realpath(o.out, out_abs)) {
    fprintf(stderr, "mpprof: cannot create %s: %s\n", o.out, strerror(err < 0 ? -err : errno));
    return 2;
  }

  warn_other_injection("NVTX_INJECTION64_PATH", lib);
  warn_other_injection("CUDA_INJECTION64_PATH", lib);
  bool started;
  int status = run_child(&o, lib, out_abs, &started);
  /* Nothing to keep from a program that never started: the directory goes
   * again when this run made it (rmdir: only if still empty). */
  if (!started) {
    if (!existed) rmdir(out_abs);
    return status;
  }
  char raw[PATH_MAX + 8];
  snprintf(raw, sizeof raw, "%s/raw", out_abs);
  if (stat(raw, &stt) != 0) {
    fprintf(stderr,
            "mpprof: %s: no CUDA matrix ops were seen (no process loaded the CUDA libraries "
            "mpprof hooks, so nothing was recorded)\n",
            o.argv[0]);
    if (!existed) rmdir(out_abs);
    return status;
  }

  mpprof_report_options ro = {.out_dir = out_abs, .program = NULL, .summary = stderr};
  if (mpprof_report_generate(&ro) != 0)
    fprintf(stderr, "mpprof: the report of %s was not written; raw files are in %s/raw\n",
            o.argv[0], out_abs);
  return status;
}
