/* Running a program under simcuda for the end-to-end tests (profiler_e2e,
 * tc_counters_sim): a child with LD_LIBRARY_PATH set to the stand-in
 * libraries, stdout captured to a file in the test's scratch directory, exit
 * status as a shell reports it. The including test sets `simcuda` and
 * `workdir` from its environment before the first run. Header-only: each
 * test is one file. */
#ifndef MPP_TESTS_SIM_RUN_H
#define MPP_TESTS_SIM_RUN_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *simcuda, *workdir;

typedef struct result {
  int status; /* exit status, 128 + signal */
  char *out;  /* stdout */
  char *err;  /* stderr (run_err), else NULL */
} result;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return strdup("");
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = '\0';
  fclose(f);
  return s;
}

/* Start argv with LD_LIBRARY_PATH=simcuda plus `env` (NAME=VALUE, NULL-ended);
 * stderr to err_path unless NULL. */
static pid_t spawn_err(char *const argv[], const char *const env[], const char *out_path,
                       const char *err_path) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setenv("LD_LIBRARY_PATH", simcuda, 1);
    unsetenv("LD_PRELOAD"); /* the test itself may run under a sanitizer preload */
    for (int i = 0; env && env[i]; i++)
      putenv((char *)env[i]);
    int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    close(fd);
    if (err_path) {
      fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 2);
      close(fd);
    }
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

static pid_t spawn(char *const argv[], const char *const env[], const char *out_path) {
  return spawn_err(argv, env, out_path, NULL);
}

static int wait_status(pid_t pid) {
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

static result run(char *const argv[], const char *const env[]) {
  char out[4200];
  snprintf(out, sizeof out, "%s/stdout.txt", workdir);
  result r;
  r.status = wait_status(spawn(argv, env, out));
  r.out = slurp(out);
  r.err = NULL;
  return r;
}

/* As run(), stderr captured too. */
static inline result run_err(char *const argv[], const char *const env[]) {
  char out[4200], err[4200];
  snprintf(out, sizeof out, "%s/stdout.txt", workdir);
  snprintf(err, sizeof err, "%s/stderr.txt", workdir);
  result r;
  r.status = wait_status(spawn_err(argv, env, out, err));
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/* A fresh, empty output directory for one mpprof run. */
static const char *outdir(const char *name) {
  static char path[4200];
  snprintf(path, sizeof path, "%s/%s", workdir, name);
  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
  assert_int_equal(system(cmd), 0);
  return path;
}

#endif
