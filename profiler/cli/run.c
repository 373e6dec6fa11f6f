/* mpprof run: launch a program with libmpprof.so injected, wait for it, and
 * build the report from the raw files its processes wrote.
 *
 * The child gets LD_PRELOAD (prepended), NVTX_INJECTION64_PATH,
 * CUDA_INJECTION64_PATH and the MPPROF_* settings; mpprof's own environment
 * is untouched. The child runs in its own process group; SIGINT/SIGTERM/SIGHUP
 * sent to mpprof are forwarded to it once (see "the child and signals"). The
 * exit status is the child's, 128 + signal when it was killed. */
#include <dirent.h>
#include <elf.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "analysis/advice.h"
#include "analysis/capture.h"
#include "commands.h"
#include "common/safefile.h"
#include "common/utf8.h"
#include "profiler/settings.h"

#define MPP_TEXT_(x) #x
#define MPP_TEXT(x) MPP_TEXT_(x) /* a number macro as a string literal */
#include "report/report.h"

#ifndef MPPROF_LIBDIR
#define MPPROF_LIBDIR "lib"
#endif

/* The most pids of still-running processes the report lists. */
#define MPP_STILL_RUNNING_MAX 64

typedef struct run_opts {
  const char *out;
  bool force;
  const char *scan;
  const char *sample;
  const char *checkpoint;
  const char *tc_counters;         /* "first" or N: MPPROF_TC_COUNTERS */
  const char *loss_scale;          /* MPPROF_LOSS_SCALE */
  bool python_off;                 /* --python off or MPPROF_PYTHON=0: no PYTHONPATH entry */
  const char *shadow;              /* N: MPPROF_SHADOW */
  const char *shadow_max_mb;       /* MPPROF_SHADOW_MAX_MB */
  double shadow_max_rel;           /* report verdict threshold; 0: default */
  const char *shadow_max_rel_text; /* MPPROF_SHADOW_MAX_REL: recorded in the raw files */
  /* The capture range: MPPROF_CAPTURE_RANGE, MPPROF_NVTX_CAPTURE, MPPROF_STEPS.
   * capture_given: one of the options was given, they replace all three variables. */
  const char *capture_range, *nvtx_capture, *steps;
  bool capture_given;
  char **argv;                       /* program and its arguments */
  long alive[MPP_STILL_RUNNING_MAX]; /* still_running(): the program's group alive after it */
  size_t n_alive;                    /* how many (may exceed the pids kept) */
  long exited_pid;                   /* the program, when it exited (not killed); else 0 */
  int exit_status;                   /* its exit status then */
  long killed_pid;                   /* the program, when a signal killed it; else 0 */
  int killed_signal;                 /* that signal */
  int pass_on;                       /* the terminal's signal to end mpprof's group by; 0 none */
} run_opts;

/* The capture range's variables and their options, in run_opts' order. */
enum { CAPTURE_VARS = 3 };
static const struct {
  const char *var, *option;
} capture_vars[CAPTURE_VARS] = {{"MPPROF_CAPTURE_RANGE", "--capture-range"},
                                {"MPPROF_NVTX_CAPTURE", "--nvtx-capture"},
                                {"MPPROF_STEPS", "--steps"}};

static void capture_values(const run_opts *o, const char *ret[CAPTURE_VARS]) {
  ret[0] = o->capture_range;
  ret[1] = o->nvtx_capture;
  ret[2] = o->steps;
}

static void usage(FILE *f) {
  fputs("usage: mpprof [run] [-o DIR] [--force] [--scan all|outputs|none] [--sample N|auto]\n"
        "                    [--checkpoint SECONDS] [--tc-counters[=N]] [--loss-scale S]\n"
        "                    [--python on|off]\n"
        "                    [--capture-range cudaProfilerApi|nvtx|none] [--nvtx-capture NAME]\n"
        "                    [--steps A:B]\n"
        "                    [--shadow[=N]] [--shadow-max-mb MB] [--shadow-max-rel X]\n"
        "                    [--] PROGRAM ARGS...\n"
        "  -o, --output DIR   where raw files and the report go\n"
        "                     (default: $MPPROF_OUT when set, else a new\n"
        "                     mpprof-<program>-<date>[-N] in the current directory)\n"
        "  --force            use DIR even when it is not empty (its old raw files are removed)\n"
        "  --scan MODE        which tensors are scanned: all (default), outputs, none\n"
        "  --sample N|auto    scan every Nth call of each op site; auto (default): every call\n"
        "                     for a site's first 64, then 1 in 2, 4, ... up to 1 in 64\n"
        "  --checkpoint S     write the raw files every S seconds while running (default 10,\n"
        "                     0: only at exit)\n"
        "  --tc-counters[=N]  decide Tensor Core use from hardware counters (CUPTI range\n"
        "                     profiler, kernel replay: serialises and replays the profiled\n"
        "                     calls' kernels) for the first call of each op site, or with =N\n"
        "                     for every Nth call of each site (=0 or =off: not asked)\n"
        "  --loss-scale S     the program multiplies its loss (so its gradients) by S\n"
        "                     (65536, 2^16, 1e3); for a fixed scale the program does not\n"
        "                     declare through the NVTX domain \"mpprof\" (its marks win)\n"
        "  --capture-range cudaProfilerApi|nvtx|none\n"
        "                     record only between cudaProfilerStart and cudaProfilerStop (or\n"
        "                     cuProfilerStart/Stop), or only while some thread is inside an\n"
        "                     NVTX range named by --nvtx-capture; calls outside are counted\n"
        "  --nvtx-capture NAME the NVTX push/pop range of --capture-range=nvtx\n"
        "  --steps A:B        record only steps A to B (inclusive) of the program's step\n"
        "                     marks (NVTX domain \"mpprof\" or mpprof_step(); one step: A)\n"
        "  --python on|off    PyTorch module attribution in Python programs (default on;\n"
        "                     MPPROF_PYTHON=0 also turns it off)\n"
        "  --shadow[=N]       shadow execution: re-compute every Nth GEMM call of each site\n"
        "                     (default 16) in fp16, bf16 and fp8 recipes and measure the error\n"
        "                     against an fp64 reference (docs/report.md, \"Measured error\");\n"
        "                     =0: off\n"
        "  --shadow-max-mb MB memory one shadowed call may use (default " MPP_TEXT(
            MPP_SET_SHADOW_MB_DEFAULT) "); larger calls\n"
                                       "                     are skipped as shadow_too_large (on "
                                       "the device: done in\n"
                                       "                     slices of D's columns when one column "
                                       "fits)\n"
                                       "  --shadow-max-rel X largest relative L2 error a precision "
                                       "may cause and still be\n"
                                       "                     recommended (default 2^-8 = "
                                       "0.00390625)\n",
        f);
}

/* --- options --- */

static const char *opt_value(int argc, char **argv, int *i, const char *name) {
  size_t n = strlen(name);
  if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=') return argv[*i] + n + 1;
  if (*i + 1 >= argc) {
    mpprof_fprint_term(stderr, "mpprof: run: %s needs a value\n", name);
    return NULL;
  }
  return argv[++*i];
}

static bool is_opt(const char *arg, const char *name) {
  size_t n = strlen(name);
  return !strncmp(arg, name, n) && (arg[n] == '\0' || arg[n] == '=');
}

/* Whether v, the value of option opt, is one the variable it sets (var)
 * takes (settings.c); else the one-line refusal. */
static bool opt_ok(const char *opt, const char *var, const char *v) {
  const mpp_setting *s = mpp_setting_find(var);
  if (*v && mpp_setting_ok(s, v)) return true;
  char want[96];
  mpp_setting_want(s, want, sizeof want);
  mpprof_fprint_term(stderr, "mpprof: run: %s must be %s, not '%s'\n", opt, want, v);
  return false;
}

/* The MPPROF_* values in the environment the program would inherit, where
 * no option replaces them: a value libmpprof would ignore is refused here
 * (one line, 2); a name mpprof does not read gets a warning (a typo would
 * otherwise go unnoticed). */
static int check_environment(const run_opts *o) {
  const struct {
    const char *var, *option, *given;
  } opts[] = {
      {"MPPROF_SCAN", "--scan", o->scan},
      {"MPPROF_SAMPLE", "--sample", o->sample},
      {"MPPROF_CHECKPOINT_S", "--checkpoint", o->checkpoint},
      {"MPPROF_TC_COUNTERS", "--tc-counters", o->tc_counters},
      {"MPPROF_LOSS_SCALE", "--loss-scale", o->loss_scale},
      {"MPPROF_SHADOW", "--shadow", o->shadow},
      {"MPPROF_SHADOW_MAX_MB", "--shadow-max-mb", o->shadow_max_mb},
      {"MPPROF_SHADOW_MAX_REL", "--shadow-max-rel", o->shadow_max_rel_text},
  };
  size_t n;
  const mpp_setting *rows = mpp_settings(&n);
  for (size_t i = 0; i < n; i++) {
    const char *option = NULL, *v = getenv(rows[i].name);
    bool replaced = false;
    for (size_t j = 0; j < sizeof opts / sizeof opts[0]; j++)
      if (!strcmp(opts[j].var, rows[i].name)) option = opts[j].option, replaced = opts[j].given;
    if (replaced || mpp_setting_ok(&rows[i], v)) continue;
    char want[96];
    mpp_setting_want(&rows[i], want, sizeof want);
    mpprof_fprint_term(stderr,
                       "mpprof: run: %s='%s' in the environment must be %s (unset it%s%s)\n",
                       rows[i].name, v, want, option ? ", or give " : "", option ? option : "");
    return 2;
  }
  for (char **e = environ; *e; e++) {
    const char *eq = strchr(*e, '=');
    char name[64];
    if (strncmp(*e, "MPPROF_", 7) || !eq || (size_t)(eq - *e) >= sizeof name) continue;
    memcpy(name, *e, (size_t)(eq - *e));
    name[eq - *e] = '\0';
    if (mpp_setting_find(name)) continue;
    const char *near = mpp_setting_nearest(name);
    fprintf(stderr,
            "mpprof: run: warning: %s in the environment is not a variable mpprof reads%s%s%s\n",
            name, near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
  }
  return 0;
}

/* 0 ok, 1 help printed, 2 usage error (message printed). */
static int parse(int argc, char **argv, run_opts *o) {
  memset(o, 0, sizeof *o);
  const char *py = getenv("MPPROF_PYTHON");
  o->python_off = py && (!strcmp(py, "0") || !strcmp(py, "off"));
  int i, out;
  bool ended = false;
  for (i = 1; i < argc; i++) {
    const char *a = argv[i];
    mpprof_arg_kind k = mpprof_arg_kind_of(a, &ended);
    if (k == MPPROF_ARG_END) {
      i++;
      break;
    }
    if (k == MPPROF_ARG_OPERAND) break;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 1;
    } else if ((out = mpprof_out_option("run", argc, argv, &i, &o->out)) != 0) {
      if (out < 0) return 2;
    } else if (!strcmp(a, "--force")) {
      o->force = true;
    } else if (is_opt(a, "--scan")) {
      if (!(o->scan = opt_value(argc, argv, &i, "--scan"))) return 2;
      if (!opt_ok("--scan", "MPPROF_SCAN", o->scan)) return 2;
    } else if (is_opt(a, "--sample")) {
      if (!(o->sample = opt_value(argc, argv, &i, "--sample"))) return 2;
      if (!opt_ok("--sample", "MPPROF_SAMPLE", o->sample)) return 2;
    } else if (is_opt(a, "--checkpoint")) {
      if (!(o->checkpoint = opt_value(argc, argv, &i, "--checkpoint"))) return 2;
      if (!opt_ok("--checkpoint", "MPPROF_CHECKPOINT_S", o->checkpoint)) return 2;
    } else if (is_opt(a, "--loss-scale")) {
      if (!(o->loss_scale = opt_value(argc, argv, &i, "--loss-scale"))) return 2;
      if (!opt_ok("--loss-scale", "MPPROF_LOSS_SCALE", o->loss_scale)) return 2;
    } else if (is_opt(a, "--shadow")) {
      /* The value only with '=': "--shadow prog" runs prog. */
      o->shadow = a[strlen("--shadow")] == '=' ? a + strlen("--shadow=") : "16";
      if (!opt_ok("--shadow=N", "MPPROF_SHADOW", o->shadow)) return 2;
    } else if (is_opt(a, "--shadow-max-mb")) {
      if (!(o->shadow_max_mb = opt_value(argc, argv, &i, "--shadow-max-mb"))) return 2;
      if (!opt_ok("--shadow-max-mb", "MPPROF_SHADOW_MAX_MB", o->shadow_max_mb)) return 2;
    } else if (is_opt(a, "--shadow-max-rel")) {
      const char *v = opt_value(argc, argv, &i, "--shadow-max-rel");
      if (!v) return 2;
      if (mpprof_parse_max_rel("run", v, &o->shadow_max_rel)) return 2;
      o->shadow_max_rel_text = v;
    } else if (is_opt(a, "--tc-counters")) {
      /* The value only with '=': "--tc-counters prog" runs prog. */
      o->tc_counters = a[strlen("--tc-counters")] == '=' ? a + strlen("--tc-counters=") : "first";
      if (!opt_ok("--tc-counters=N", "MPPROF_TC_COUNTERS", o->tc_counters)) return 2;
    } else if (is_opt(a, "--capture-range")) {
      if (!(o->capture_range = opt_value(argc, argv, &i, "--capture-range"))) return 2;
      o->capture_given = true;
    } else if (is_opt(a, "--nvtx-capture")) {
      if (!(o->nvtx_capture = opt_value(argc, argv, &i, "--nvtx-capture"))) return 2;
      o->capture_given = true;
    } else if (is_opt(a, "--steps")) {
      if (!(o->steps = opt_value(argc, argv, &i, "--steps"))) return 2;
      o->capture_given = true;
    } else if (is_opt(a, "--python")) {
      const char *v = opt_value(argc, argv, &i, "--python");
      if (!v) return 2;
      if (strcmp(v, "on") && strcmp(v, "off")) {
        mpprof_fprint_term(stderr, "mpprof: run: --python must be on or off, not '%s'\n", v);
        return 2;
      }
      o->python_off = !strcmp(v, "off");
    } else {
      mpprof_fprint_term(stderr, "mpprof: run: unknown option '%s' (see 'mpprof help run')\n", a);
      return 2;
    }
  }
  if (i >= argc) {
    fputs("mpprof: run: no program to run (see 'mpprof help run')\n", stderr);
    return 2;
  }
  if (check_environment(o)) return 2;
  /* The capture range from the options, else from the environment the
   * program would inherit: either way refused here, in one line. */
  const char *env[CAPTURE_VARS], *given[CAPTURE_VARS];
  for (int v = 0; v < CAPTURE_VARS; v++)
    env[v] = getenv(capture_vars[v].var);
  if (!o->capture_given) {
    o->capture_range = env[0];
    o->nvtx_capture = env[1];
    o->steps = env[2];
  }
  capture_values(o, given);
  for (int v = 0; v < CAPTURE_VARS; v++)
    if (o->capture_given && env[v] && !given[v]) /* an option for another one replaced it */
      fprintf(stderr,
              "mpprof: run: note: %s=%s in the environment is not used: --capture-range, "
              "--nvtx-capture and --steps replace all three capture variables (%s not given)\n",
              capture_vars[v].var, env[v], capture_vars[v].option);
  mp_capture cap;
  char err[200];
  if (mp_capture_parse(o->capture_range, o->nvtx_capture, o->steps, &cap, err, sizeof err)) {
    const char *from = "(from MPPROF_CAPTURE_RANGE, MPPROF_NVTX_CAPTURE, MPPROF_STEPS) ";
    mpprof_fprint_term(stderr, "mpprof: run: %s%s\n", o->capture_given ? "" : from, err);
    return 2;
  }
  o->argv = argv + i;
  return 0;
}

/* --- the output directory --- */

/* Below this much free space on OUT's filesystem a warning is printed before
 * the program starts (raw files of a long run with many sites take tens of MB). */
#define MPPROF_LOW_FREE_BYTES (256ull << 20)

static bool dir_is_empty(int dir) {
  int fd = dup(dir);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return true;
  }
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

/* A raw file name libmpprof writes (<host>-<pid>.json) or one of its
 * temporaries: the only files --force removes. */
static bool is_raw_file_name(const char *name) {
  size_t n = strlen(name);
  return mpp_sf_is_temp_name(name) || (name[0] != '.' && n > 5 && !strcmp(name + n - 5, ".json"));
}

/* --force: raw files of an earlier run would be merged into this report.
 * Only regular files with raw-file names inside the real OUT/raw go (a raw/
 * that is a link is refused), and only once the program has started: until
 * then they are set aside under temporary names (mpp_sf_set_aside), which the
 * report skips, and a program that cannot start (a binary of another
 * architecture: execve's ENOEXEC) gets them back. */
typedef struct old_raw {
  int raw; /* OUT/raw, or -1 when there is none */
  struct old_raw_file {
    char name[256]; /* "" for a temporary found there (nothing to put back) */
    char tmp[256];
  } * v;
  size_t n;
} old_raw;

static void old_raw_close(old_raw *o) {
  free(o->v);
  if (o->raw >= 0) close(o->raw);
  *o = (old_raw){.raw = -1};
}

/* The program did not start: the old raw files back under their names. */
static void old_raw_put_back(old_raw *o, const char *out_name) {
  for (size_t i = 0; i < o->n; i++) {
    if (!o->v[i].name[0]) continue;
    int rc = mpp_sf_put_back(o->raw, o->v[i].tmp, o->v[i].name);
    if (rc)
      mpprof_fprint_term(stderr, "mpprof: cannot rename %s/raw/%s back to %s: %s\n", out_name,
                         o->v[i].tmp, o->v[i].name, strerror(-rc));
  }
  old_raw_close(o);
}

/* The program started: the old raw files go. */
static void old_raw_remove(old_raw *o) {
  for (size_t i = 0; i < o->n; i++)
    if (o->v[i].tmp[0]) mpp_sf_remove_regular(o->raw, o->v[i].tmp);
  old_raw_close(o);
}

/* The names first, then the renames: readdir may or may not list a name
 * made while it reads. 0 or -1 (message printed, nothing set aside). */
static int old_raw_set_aside(int out, const char *out_name, old_raw *ret) {
  *ret = (old_raw){.raw = mpp_sf_open_dir(out, "raw", 0)};
  if (ret->raw == -ENOENT) {
    ret->raw = -1;
    return 0;
  }
  if (ret->raw < 0) {
    mpprof_fprint_term(stderr,
                       "mpprof: %s/raw: %s (not a directory, or a symbolic link): not used\n",
                       out_name, strerror(-ret->raw));
    ret->raw = -1;
    return -1;
  }
  int fd = dup(ret->raw);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return 0;
  }
  size_t cap = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (is_raw_file_name(e->d_name) && strlen(e->d_name) < sizeof ret->v->name) {
      if (ret->n == cap) {
        cap = cap ? 2 * cap : 16;
        void *nv = realloc(ret->v, cap * sizeof *ret->v);
        if (!nv) {
          closedir(d);
          fputs("mpprof: out of memory\n", stderr);
          old_raw_close(ret);
          return -1;
        }
        ret->v = nv;
      }
      struct old_raw_file *f = &ret->v[ret->n++];
      bool temp = mpp_sf_is_temp_name(e->d_name);
      snprintf(f->name, sizeof f->name, "%s", temp ? "" : e->d_name);
      snprintf(f->tmp, sizeof f->tmp, "%s", temp ? e->d_name : "");
    }
  closedir(d);
  for (size_t i = 0; i < ret->n; i++) {
    struct old_raw_file *f = &ret->v[i];
    if (!f->name[0]) continue;
    int rc = mpp_sf_set_aside(ret->raw, f->name, f->tmp);
    if (rc == -EPERM || rc == -ENOENT) { /* not a regular file, or gone: not ours to move */
      f->name[0] = '\0';
      continue;
    }
    if (rc) {
      mpprof_fprint_term(stderr, "mpprof: cannot set %s/raw/%s aside: %s\n", out_name, f->name,
                         strerror(-rc));
      ret->n = i; /* put back those before it */
      old_raw_put_back(ret, out_name);
      return -1;
    }
  }
  return 0;
}

/* The checks before the program starts: OUT/raw can be created, a file can be
 * created in it (a probe, removed again), and free space. 0 or -1 (message
 * printed: the program is not started). */
static int check_out_writable(int out, const char *out_name) {
  int raw = mpp_sf_open_dir(out, "raw", MPP_SF_CREATE);
  if (raw < 0) {
    mpprof_fprint_term(stderr, "mpprof: cannot create %s/raw: %s\n", out_name, strerror(-raw));
    return -1;
  }
  mpp_sfile probe;
  int err = mpp_sf_create(&probe, raw, "mpprof-probe", 0600);
  if (!err) err = mpp_sf_write_all(probe.fd, "probe\n", 6);
  if (probe.tmp[0]) mpp_sf_commit(&probe, -ECANCELED); /* removes it */
  if (err) {
    mpprof_fprint_term(stderr, "mpprof: cannot write in %s/raw: %s\n", out_name, strerror(-err));
    close(raw);
    return -1;
  }
  struct statvfs vfs;
  if (fstatvfs(raw, &vfs) == 0) {
    unsigned long long avail = (unsigned long long)vfs.f_bavail * vfs.f_frsize;
    if (avail < MPPROF_LOW_FREE_BYTES)
      mpprof_fprint_term(stderr, "mpprof: warning: only %llu MiB free on the filesystem of %s\n",
                         avail >> 20, out_name);
  }
  close(raw);
  return 0;
}

/* Nothing recorded: what this run made goes again, each only if empty: raw/
 * (the probe's), and OUT with the directories above it this run made
 * (made_top: mpprof_topmost_missing's; "" none). An empty OUT the user gave
 * stays empty, so a later run on it is not refused as non-empty. */
static void remove_if_empty(int out, const char *out_name, bool made_raw, const char *made_top) {
  if (made_raw || made_top[0]) unlinkat(out, "raw", AT_REMOVEDIR);
  mpprof_remove_made(out_name, made_top);
}

/* mpprof-PROGRAM-DATE, PROGRAM's name cut (at a character) so that the name,
 * with the "-N" mpprof_mkdir_fresh may append, is one a directory can have:
 * a long program name was refused ("File name too long") and not run. */
static void default_out(char *buf, size_t n, const char *program) {
  const char *base = strrchr(program, '/');
  base = base ? base + 1 : program;
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  char date[32];
  strftime(date, sizeof date, "%Y%m%d-%H%M%S", &tm);
  size_t fixed =
      strlen("mpprof--") + strlen(date) + (size_t)snprintf(NULL, 0, "-%d", MPPROF_FRESH_TRIES);
  size_t room = NAME_MAX > fixed ? NAME_MAX - fixed : 0, len = strlen(base);
  snprintf(buf, n, "mpprof-%.*s-%s", (int)mpp_utf8_cut(base, len < room ? len : room), base, date);
}

/* --- finding libmpprof.so --- */

static bool readable(const char *p) {
  return access(p, R_OK) == 0;
}

/* The first n bytes of file, or fewer: how many were read (-1: none). */
static ssize_t read_head(const char *file, unsigned char *b, size_t n) {
  int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t got = read(fd, b, n);
  close(fd);
  return got;
}

/* Whether file starts with ELF's magic (a program or a shared library). */
static bool has_elf_magic(const char *file) {
  unsigned char b[SELFMAG];
  return read_head(file, b, sizeof b) == SELFMAG && !memcmp(b, ELFMAG, SELFMAG);
}

/* The loader splits LD_PRELOAD at each of these, and cannot quote one. */
#define MPP_PRELOAD_SEPARATORS " :"

/* Why the loader could not preload lib, in words, or NULL: the program would
 * run with nothing recorded, after a loader's "ignored" line at most. */
static const char *not_preloadable(const char *lib) {
  struct stat st;
  if (stat(lib, &st) != 0 || !S_ISREG(st.st_mode)) return "not a regular file";
  if (!has_elf_magic(lib)) return "not a shared library (no ELF header)";
  if (strpbrk(lib, MPP_PRELOAD_SEPARATORS))
    return "its path holds a blank or ':', at which LD_PRELOAD splits it (put mpprof, or a copy "
           "of libmpprof.so named by MPPROF_LIB, under a path without one)";
  return NULL;
}

static int find_library(char *ret, size_t n) {
  const char *env = getenv("MPPROF_LIB");
  if (env && *env) {
    const char *why = !realpath(env, ret) || !readable(ret) ? "not a readable file" : NULL;
    if (!why) why = not_preloadable(ret);
    if (why) {
      mpprof_fprint_term(stderr, "mpprof: MPPROF_LIB=%s: %s\n", env, why);
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
    if (readable(p) && realpath(p, ret)) {
      const char *why = not_preloadable(ret);
      if (why) mpprof_fprint_term(stderr, "mpprof: %s: %s\n", ret, why);
      return why ? -1 : 0;
    }
  }
  (void)n;
  mpprof_fprint_term(stderr, "mpprof: libmpprof.so not found next to %s (set MPPROF_LIB)\n", exe);
  return -1;
}

/* The PyTorch integration (a sitecustomize package, profiler/python/) next to
 * the library: <dir of lib>/python in the build tree, <libdir>/mpprof/python
 * when installed. ret is "" when there is none. */
static void find_python_dir(const char *lib, char *ret, size_t n) {
  const char *slash = strrchr(lib, '/');
  int dl = slash ? (int)(slash - lib) : 0;
  const char *candidates[] = {"%.*s/python", "%.*s/mpprof/python"};
  ret[0] = '\0';
  for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, candidates[i], dl, lib);
    char f[PATH_MAX + 96];
    snprintf(f, sizeof f, "%s/sitecustomize.py", p);
    if (readable(f) && strlen(p) < n) {
      snprintf(ret, n, "%s", p);
      return;
    }
  }
}

static void prepend_env(const char *var, const char *value) {
  const char *old = getenv(var);
  if (old && *old) {
    size_t n = strlen(value) + strlen(old) + 2;
    char *v = malloc(n);
    if (v) {
      snprintf(v, n, "%s:%s", value, old);
      setenv(var, v, 1);
    }
  } else {
    setenv(var, value, 1);
  }
}

/* --- secure execution --- */

/* Where execvp finds prog (no '/') in the directories of path (NULL or
 * empty: /bin:/usr/bin), into buf: 0, else ENOENT, or EACCES when only what
 * cannot be run is there (as execvp). */
static int search_path(const char *prog, const char *path, char *buf, size_t n) {
  struct stat st;
  int err = ENOENT;
  if (!path || !*path) path = "/bin:/usr/bin";
  while (*path) {
    const char *colon = strchr(path, ':');
    size_t len = colon ? (size_t)(colon - path) : strlen(path);
    if (snprintf(buf, n, "%.*s/%s", (int)len, len ? path : ".", prog) < (int)n &&
        stat(buf, &st) == 0) {
      if (access(buf, X_OK) == 0 && S_ISREG(st.st_mode)) return 0;
      err = EACCES;
    }
    path += len + (colon ? 1 : 0);
  }
  return err;
}

/* The program file as execvp would find it, into buf; false when there is none. */
static bool program_path(const char *prog, char *buf, size_t n) {
  struct stat st;
  if (strchr(prog, '/')) return snprintf(buf, n, "%s", prog) < (int)n && stat(prog, &st) == 0;
  return search_path(prog, getenv("PATH"), buf, n) == 0;
}

/* The program file as execvp would find it: 0 and its stat, or -1 (errno). */
static int stat_program(const char *prog, struct stat *ret) {
  char file[PATH_MAX];
  if (!program_path(prog, file, sizeof file)) {
    if (!strchr(prog, '/')) errno = ENOENT;
    return -1;
  }
  return stat(file, ret);
}

/* The capabilities this process holds (CapPrm in /proc/self/status); 0 when unknown. */
static uint64_t permitted_caps(void) {
  FILE *f = fopen("/proc/self/status", "re");
  char line[256];
  uint64_t caps = 0;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "CapPrm:", 7)) caps = strtoull(line + 7, NULL, 16);
  if (f) fclose(f);
  return caps;
}

/* Whether the program file's capabilities (security.capability, set by
 * setcap) give it some this process lacks: exec then runs it in
 * secure-execution mode, as a setuid program. */
static bool gains_file_caps(const char *prog) {
  char file[PATH_MAX];
  uint32_t cap[6] = {0}; /* struct vfs_cap_data, little-endian (v3: the root uid last) */
  if (!program_path(prog, file, sizeof file)) return false;
  ssize_t n = getxattr(file, "security.capability", cap, sizeof cap);
  if (n < (ssize_t)(3 * sizeof cap[0])) return false;
  uint64_t file_permitted =
      le32toh(cap[1]) | (n >= (ssize_t)(5 * sizeof cap[0]) ? (uint64_t)le32toh(cap[3]) << 32 : 0);
  return (file_permitted & ~permitted_caps()) != 0;
}

/* A setuid/setgid program, or one that gains file capabilities, runs in
 * secure-execution mode (AT_SECURE): the loader drops LD_PRELOAD and
 * libmpprof.so, loaded by CUDA injection, stays passive. Said before the run
 * rather than a report that shows no calls. */
static void warn_secure_execution(const char *prog) {
  struct stat st;
  if (stat_program(prog, &st) != 0) return;
  const char *is = NULL, *kind = NULL;
  if (((st.st_mode & S_ISUID) && st.st_uid != getuid()) ||
      ((st.st_mode & S_ISGID) && st.st_gid != getgid()))
    is = "is setuid/setgid", kind = "setuid/setgid programs";
  else if (gains_file_caps(prog))
    is = "gains file capabilities (setcap)", kind = "programs that gain capabilities";
  if (is)
    fprintf(stderr,
            "mpprof: warning: %s %s: it runs in secure-execution mode, where libmpprof.so "
            "records and writes nothing; %s are not profiled\n",
            prog, is, kind);
}

#define MPP_SHEBANG_MAX 256 /* the bytes of a "#!" line read, as Linux reads them */

/* A script's "#!" line, read into line (MPP_SHEBANG_MAX bytes) and cut in
 * place into its interpreter (*interp) and the one argument the kernel passes
 * with it (*arg: the rest of the line, the blanks around it dropped; "" when
 * none, NULL when the line goes on past the bytes read); false when path is
 * not such a script (or cannot be read). */
static bool script_interpreter(const char *path, char *line, char **interp, char **arg) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t got = read(fd, line, MPP_SHEBANG_MAX - 1);
  close(fd);
  if (got < 3 || line[0] != '#' || line[1] != '!') return false;
  line[got] = '\0';
  char *p = line + 2;
  while (*p == ' ' || *p == '\t')
    p++;
  size_t len = strcspn(p, " \t\n");
  if (!len) return false;
  char *end = strchr(p, '\n');
  if (end) *end = '\0';
  *interp = p;
  *arg = end || got < MPP_SHEBANG_MAX - 1 ? p + len + (p[len] != '\0') : NULL;
  p[len] = '\0';
  if (*arg) {
    while (**arg == ' ' || **arg == '\t')
      (*arg)++;
    for (char *t = *arg + strlen(*arg); t > *arg && (t[-1] == ' ' || t[-1] == '\t');)
      *--t = '\0';
  }
  return true;
}

/* The command env(1) runs for arg, the one argument a "#!" line gives it
 * (-S splits it on blanks), and the PATH it searches (*path: mpprof's on
 * entry, NULL when env unsets it), both in place in arg; NULL when env would
 * run no command from the line (only options and assignments: it runs the
 * script), or arg holds what this does not follow: an option other than -S,
 * -i, -u, -v, -, a command with a blank (no -S), a quote, escape, variable or
 * comment in -S's string. */
static char *env_command(char *arg, const char **path) {
  char *split = NULL;
  if (!strncmp(arg, "--split-string=", 15)) {
    split = arg + 15;
  } else if (arg[0] == '-' && arg[1] && arg[1] != '-') {
    for (char *c = arg + 1; *c && !split; c++)
      if (*c == 'S')
        split = c + 1;
      else if (*c == 'i')
        *path = NULL;
      else if (*c != 'v')
        return NULL; /* -u NAME takes the rest: no command */
  }
  if (!split) return arg[0] == '-' || strpbrk(arg, "= \t") ? NULL : arg;
  if (strpbrk(split, "\\'\"$")) return NULL;
  char *w[MPP_SHEBANG_MAX / 2];
  size_t nw = 0;
  for (char *save, *t = strtok_r(split, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
    w[nw++] = t;
  size_t i = 0;
  for (; i < nw && w[i][0] == '-' && w[i][1]; i++) {
    const char *unset = NULL;
    if (!strcmp(w[i], "--")) {
      i++;
      break;
    } else if (!strcmp(w[i], "--ignore-environment"))
      *path = NULL;
    else if (!strncmp(w[i], "--unset=", 8))
      unset = w[i] + 8;
    else if (!strcmp(w[i], "--unset") && i + 1 < nw)
      unset = w[++i];
    else if (w[i][1] == '-')
      return NULL;
    else
      for (const char *c = w[i] + 1; *c && !unset; c++)
        if (*c == 'i')
          *path = NULL;
        else if (*c == 'u' && (c[1] || i + 1 < nw))
          unset = c[1] ? c + 1 : w[++i];
        else if (*c != 'v')
          return NULL;
    if (unset && !strcmp(unset, "PATH")) *path = NULL;
  }
  if (i < nw && !strcmp(w[i], "-")) {
    *path = NULL;
    i++;
  }
  for (; i < nw && strchr(w[i], '='); i++)
    if (!strncmp(w[i], "PATH=", 5)) *path = w[i] + 5;
  return i < nw && w[i][0] != '#' ? w[i] : NULL;
}

/* When file is a script whose interpreter cannot be run, or runs a command
 * with env(1) that env cannot find or run: why (an errno value), the
 * interpreter as the #! line names it (with env's argument) in interp and
 * what is wrong, in words, in what; else 0. */
static int interpreter_missing(const char *file, char *interp, size_t n, char *what, size_t wn) {
  char line[MPP_SHEBANG_MAX], *in, *arg;
  if (!script_interpreter(file, line, &in, &arg) || strlen(in) >= n) return 0;
  snprintf(interp, n, "%s", in);
  if (access(in, X_OK) != 0) {
    int err = errno;
    snprintf(what, wn, "%s", strerror(err));
    return err;
  }
  const char *base = strrchr(in, '/');
  if (!arg || strcmp(base ? base + 1 : in, "env") != 0) return 0;
  snprintf(interp, n, "%s %s", in, arg);
  const char *path = getenv("PATH");
  char *cmd = env_command(arg, &path), found[PATH_MAX];
  int err = !cmd               ? 0
            : strchr(cmd, '/') ? (access(cmd, X_OK) != 0 ? errno : 0)
                               : search_path(cmd, path, found, sizeof found);
  if (err == ENOENT && !strchr(cmd, '/'))
    snprintf(what, wn, "%s not found in PATH", cmd);
  else if (err)
    snprintf(what, wn, "%s: %s", cmd, strerror(err));
  return err;
}

#define MPP_BINARY_SAMPLE 80 /* the bytes bash reads to tell a binary from a script */

/* Whether a file the kernel refuses to execute (ENOEXEC) is a binary, which a
 * shell reports as "cannot execute binary file" (126) rather than run as a
 * script with /bin/sh, as execvp does with any such file (a program built for
 * another architecture would be read as shell text): ELF's magic, or a NUL
 * byte before the first newline (bash's check_binary_file; dash's is alike). */
static bool looks_binary(const char *file) {
  unsigned char b[MPP_BINARY_SAMPLE];
  ssize_t got = read_head(file, b, sizeof b);
  if (got >= SELFMAG && !memcmp(b, ELFMAG, SELFMAG)) return true;
  for (ssize_t i = 0; i < got && b[i] != '\n'; i++)
    if (b[i] == '\0') return true;
  return false;
}

/* 0 when execvp could start prog (found, a regular file, executable, and a
 * script's interpreter, and env's command, found and executable), else why
 * not (an errno value). */
static int program_startable(const char *prog) {
  char file[PATH_MAX], interp[PATH_MAX], what[PATH_MAX + 64];
  struct stat st;
  if (!program_path(prog, file, sizeof file) || stat(file, &st) != 0)
    return strchr(prog, '/') ? errno : ENOENT;
  if (!S_ISREG(st.st_mode)) return S_ISDIR(st.st_mode) ? EISDIR : EACCES; /* as a shell says */
  if (access(file, X_OK) != 0) return errno;
  return interpreter_missing(file, interp, sizeof interp, what, sizeof what);
}

/* Why prog could not be started (err from execvp), as one line on stderr
 * (after "mpprof: cannot run "), and the exit status a shell gives: 127 when
 * it was not found (nor a script's interpreter, nor env's command), 126
 * when it was found and cannot be run (not executable, a directory, not a
 * program). */
static int report_start_failure(const char *prog, int err, const char *tail) {
  char file[PATH_MAX], interp[PATH_MAX], what[PATH_MAX + 64];
  bool found = program_path(prog, file, sizeof file);
  struct stat st; /* execvp's EACCES for a directory: "Is a directory", as a shell says */
  if (found && err == EACCES && stat(file, &st) == 0 && S_ISDIR(st.st_mode)) err = EISDIR;
  int why = found && (err == ENOENT || err == EACCES)
                ? interpreter_missing(file, interp, sizeof interp, what, sizeof what)
                : 0;
  if (why)
    mpprof_fprint_term(stderr, "mpprof: cannot run %s: its interpreter %s (#! line): %s%s\n", prog,
                       interp, what, tail);
  else if (found && err == ENOENT)
    fprintf(stderr,
            "mpprof: cannot run %s: %s (the file exists: its dynamic loader is missing)%s\n", prog,
            strerror(err), tail);
  else
    mpprof_fprint_term(stderr, "mpprof: cannot run %s: %s%s\n", prog, strerror(err), tail);
  return err == ENOENT || err == ENOTDIR ? 127 : 126;
}

/* --- the child and signals (docs/profiler.md, Signals) ---
 *
 * The program runs in its own process group, which gets the terminal when
 * mpprof has it: a terminal's Ctrl-C or Ctrl-Z reaches the program's group
 * directly, and a signal sent to mpprof, or to mpprof's process group
 * (timeout(1), kill -- -PGID), reaches mpprof only and is forwarded once to
 * the program's group. The forwarded signals are blocked from before fork
 * until the program's pid is known, so one that arrives meanwhile is held
 * pending by the kernel and forwarded then, not lost. A sender that signals
 * mpprof itself and then its group (timeout(1) does) is forwarded once: the
 * same signal from the same sender within MPPROF_SIGNAL_DEDUP_NS is one. After
 * the program has exited, the actions mpprof was started with are back: the
 * report phase can be interrupted. */

#define MPPROF_SIGNAL_DEDUP_NS 200000000ll /* 0.2 s */

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};
#define NFORWARDED (sizeof forwarded / sizeof forwarded[0])

static volatile pid_t child_pid;
static struct {
  pid_t sender;
  long long t_ns;
} last_forward[NFORWARDED];

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void forward_signal(int sig, siginfo_t *info, void *ctx) {
  (void)ctx;
  int saved = errno;
  pid_t pid = child_pid;
  size_t i = 0;
  while (i < NFORWARDED && forwarded[i] != sig)
    i++;
  if (pid > 0 && i < NFORWARDED) {
    long long t = now_ns();
    bool user = info->si_code == SI_USER || info->si_code == SI_QUEUE;
    bool dup = user && last_forward[i].t_ns && last_forward[i].sender == info->si_pid &&
               t - last_forward[i].t_ns < MPPROF_SIGNAL_DEDUP_NS;
    if (!dup) {
      last_forward[i].sender = user ? info->si_pid : 0;
      last_forward[i].t_ns = t;
      /* The program's group (its workers too); the program itself if it
       * left that group. */
      if (kill(-pid, sig) != 0) kill(pid, sig);
    }
  }
  errno = saved;
}

/* The terminal mpprof runs in the foreground of, or -1. */
static int foreground_tty(void) {
  for (int fd = 0; fd <= 2; fd++)
    if (isatty(fd) && tcgetpgrp(fd) == getpgrp()) return fd;
  return -1;
}

/* tcsetpgrp from a background group: SIGTTOU blocked, as shells do. */
static void give_terminal(int tty, pid_t pgrp) {
  if (tty < 0) return;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(tty, pgrp);
  sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The actions mpprof was started with (kept by the first set_handlers()). A
 * signal ignored there (nohup: SIGHUP; a shell's background job: SIGINT)
 * stays ignored in the program, as it would be without mpprof; it is still
 * forwarded while the program runs (a program that sets its own handler gets
 * it, as it would without mpprof). */
static struct sigaction started_with[NFORWARDED];
static bool started_with_kept;

/* fn: forward the signals; NULL: back to the actions mpprof was started with. */
static void set_handlers(void (*fn)(int, siginfo_t *, void *)) {
  if (!started_with_kept) {
    for (size_t i = 0; i < NFORWARDED; i++)
      sigaction(forwarded[i], NULL, &started_with[i]);
    started_with_kept = true;
  }
  struct sigaction sa = {0};
  sa.sa_sigaction = fn;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < NFORWARDED; i++)
    sigaddset(&sa.sa_mask, forwarded[i]);
  for (size_t i = 0; i < NFORWARDED; i++)
    sigaction(forwarded[i], fn ? &sa : &started_with[i], NULL);
}

static void set_child_env(const run_opts *o, const char *lib, const char *out) {
  prepend_env("LD_PRELOAD", lib);
  char py[PATH_MAX];
  find_python_dir(lib, py, sizeof py);
  if (py[0] && !o->python_off) prepend_env("PYTHONPATH", py);
  /* The option stands for the variable, as the others do: --python on in an
   * environment holding MPPROF_PYTHON=0 turns it on in the program. */
  if (!o->python_off) setenv("MPPROF_PYTHON", "1", 1);
  setenv("NVTX_INJECTION64_PATH", lib, 1);
  setenv("CUDA_INJECTION64_PATH", lib, 1);
  setenv("MPPROF_OUT", out, 1);
  if (o->scan) setenv("MPPROF_SCAN", o->scan, 1);
  if (o->sample) setenv("MPPROF_SAMPLE", o->sample, 1);
  if (o->checkpoint) setenv("MPPROF_CHECKPOINT_S", o->checkpoint, 1);
  if (o->tc_counters) setenv("MPPROF_TC_COUNTERS", o->tc_counters, 1);
  if (o->loss_scale) setenv("MPPROF_LOSS_SCALE", o->loss_scale, 1);
  if (o->shadow) setenv("MPPROF_SHADOW", o->shadow, 1);
  if (o->shadow_max_mb) setenv("MPPROF_SHADOW_MAX_MB", o->shadow_max_mb, 1);
  if (o->shadow_max_rel_text) setenv("MPPROF_SHADOW_MAX_REL", o->shadow_max_rel_text, 1);
  if (o->capture_given) {
    const char *given[CAPTURE_VARS];
    capture_values(o, given);
    for (int v = 0; v < CAPTURE_VARS; v++)
      if (given[v])
        setenv(capture_vars[v].var, given[v], 1);
      else
        unsetenv(capture_vars[v].var);
  }
}

static void warn_other_injection(const char *var, const char *lib) {
  const char *v = getenv(var);
  if (v && *v && strcmp(v, lib) != 0)
    mpprof_fprint_term(stderr, "mpprof: %s was %s; replaced by libmpprof.so for this run\n", var,
                       v);
}

/* Waits for the program; with the terminal handed over, a stop of the program
 * (Ctrl-Z) stops mpprof too, and `fg` continues both. */
/* Processes of the program's process group still alive after the program
 * exited (an orphaned child; one that left the group with setsid() is not
 * seen): their pids in ret (at most max), how many there are. */
static size_t still_running(pid_t pgid, long *ret, size_t max) {
  DIR *d = opendir("/proc");
  if (!d) return 0;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0 || pid == (long)getpid()) continue;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t k = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (k <= 0) continue;
    buf[k] = '\0';
    /* pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses. */
    char *rp = strrchr(buf, ')');
    char state;
    long ppid, pgrp;
    if (!rp || sscanf(rp + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp != (long)pgid || state == 'Z' || state == 'X') continue;
    if (n < max) ret[n] = pid;
    n++;
  }
  closedir(d);
  return n;
}

/* The program, holding the terminal, was ended by sig: was it the
 * terminal's Ctrl-C or Ctrl-\\? Without mpprof that signal would have reached
 * the whole foreground group: the shell script, make or Python that runs
 * mpprof too, which then stops (a shell stops its loop when it got SIGINT
 * and its child died of it). With mpprof only the program's group got it,
 * and a script went on to its next command. Only SIGINT and SIGQUIT, not
 * forwarded by mpprof (a signal sent to mpprof's group reached the caller
 * already), and not ignored where mpprof was started. Returns sig, or 0. */
static int terminal_signal(int sig) {
  if (sig != SIGINT && sig != SIGQUIT) return 0;
  for (size_t i = 0; i < NFORWARDED; i++)
    if (forwarded[i] == sig && (last_forward[i].t_ns || started_with[i].sa_handler == SIG_IGN))
      return 0;
  struct sigaction now;
  if (sig == SIGQUIT && (sigaction(SIGQUIT, NULL, &now) || now.sa_handler == SIG_IGN)) return 0;
  return sig;
}

/* Ends mpprof's process group by sig, as the terminal would have (see
 * terminal_signal): after the report, so nothing of it is lost. mpprof
 * itself dies of it: its caller sees "killed by SIGINT", as it would have
 * seen of the program. */
static int pass_on_terminal_signal(const run_opts *o, int status) {
  if (!o->pass_on) return status;
  fflush(NULL);
  signal(o->pass_on, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, o->pass_on);
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  kill(0, o->pass_on);
  return status; /* not reached unless the signal is blocked after all */
}

static int wait_child(pid_t pid, int tty) {
  int st = 0;
  for (;;) {
    pid_t r = waitpid(pid, &st, tty >= 0 ? WUNTRACED : 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return 0;
    if (!WIFSTOPPED(st)) return st;
    give_terminal(tty, getpgrp());
    raise(SIGTSTP); /* mpprof stops here until continued */
    give_terminal(tty, pid);
    kill(-pid, SIGCONT);
  }
}

/* Whether child pid (alive, or not yet reaped) got past its execve: the
 * kernel clears PF_FORKNOEXEC there, before the descriptors closed on exec
 * (the start pipe's end) go. A child that ended before it (a signal: Ctrl-C
 * or a kill in the first moments, the OOM killer) closes that end too. true
 * when /proc cannot tell. */
static bool child_execd(pid_t pid) {
  enum { PF_FORKNOEXEC_ = 0x40 }; /* include/linux/sched.h */
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return true;
  buf[n] = '\0';
  const char *p = strrchr(buf, ')'); /* after the name, which may hold anything */
  unsigned long flags;
  /* state ppid pgrp session tty_nr tpgid flags */
  if (!p || sscanf(p + 1, " %*s %*d %*d %*d %*d %*d %lu", &flags) != 1) return true;
  return !(flags & PF_FORKNOEXEC_);
}

/* Runs the program; returns its exit status (128 + signal), or 127/126 when
 * it could not be started (report_start_failure, with tail), or 128 + signal
 * when a signal ended it before its exec (then *ret_started is false). The old raw files (--force)
 * go as soon as it has started (the caller puts them back when it has not). */
static int run_child(run_opts *o, const char *lib, const char *out, old_raw *old, const char *tail,
                     bool *ret_started) {
  int pipefd[2];
  *ret_started = false;
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    mpprof_fprint_term(stderr, "mpprof: pipe: %s\n", strerror(errno));
    return 127;
  }
  sigset_t fwd, old_mask;
  sigemptyset(&fwd);
  for (size_t i = 0; i < NFORWARDED; i++)
    sigaddset(&fwd, forwarded[i]);
  sigprocmask(SIG_BLOCK, &fwd, &old_mask); /* before the handlers: none is lost */
  set_handlers(forward_signal);
  int tty = foreground_tty();

  pid_t pid = fork();
  if (pid < 0) {
    mpprof_fprint_term(stderr, "mpprof: fork: %s\n", strerror(errno));
    set_handlers(NULL);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    return 127;
  }
  if (pid == 0) {
    close(pipefd[0]);
    setpgid(0, 0);
    give_terminal(tty, getpid());
    set_handlers(NULL);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    set_child_env(o, lib, out);
    /* A script run by env(1) starts even when the command env runs is
     * missing: refused as a missing interpreter is, in this environment. */
    char file[PATH_MAX], interp[PATH_MAX], what[PATH_MAX + 64];
    bool found = program_path(o->argv[0], file, sizeof file);
    int err = found ? interpreter_missing(file, interp, sizeof interp, what, sizeof what) : 0;
    if (!err) {
      /* A binary execs without execvp's /bin/sh fallback: ENOEXEC, as a shell says. */
      if (found && looks_binary(file))
        execv(file, o->argv);
      else
        execvp(o->argv[0], o->argv);
      err = errno;
    }
    ssize_t ignored = write(pipefd[1], &err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  setpgid(pid, pid); /* both sides: whichever runs first */
  give_terminal(tty, pid);
  child_pid = pid;
  sigprocmask(SIG_SETMASK, &old_mask, NULL); /* held signals are forwarded now */
  close(pipefd[1]);
  int err = 0;
  ssize_t n;
  while ((n = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR)
    ;
  close(pipefd[0]);
  /* End of file: exec'd, or ended before it (then it never ran). */
  bool execd = n != (ssize_t)sizeof err && child_execd(pid);
  if (execd) old_raw_remove(old); /* the program runs */

  int st = wait_child(pid, tty);
  o->n_alive = still_running(pid, o->alive, MPP_STILL_RUNNING_MAX);
  set_handlers(NULL); /* the report phase can be interrupted (unless ignored) */
  child_pid = 0;
  give_terminal(tty, getpgrp());
  if (n == (ssize_t)sizeof err) return report_start_failure(o->argv[0], err, tail);
  if (!execd) {
    if (WIFSIGNALED(st))
      mpprof_fprint_term(stderr, "mpprof: %s was killed by %s before it started%s\n", o->argv[0],
                         mpprof_signal_text(WTERMSIG(st)).s, tail);
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  }
  *ret_started = true;
  if (WIFSIGNALED(st) && tty >= 0) o->pass_on = terminal_signal(WTERMSIG(st));
  if (WIFSIGNALED(st)) {
    o->killed_pid = pid;
    o->killed_signal = WTERMSIG(st);
    return 128 + WTERMSIG(st);
  }
  if (!WIFEXITED(st)) return 1;
  o->exited_pid = pid;
  o->exit_status = WEXITSTATUS(st);
  return WEXITSTATUS(st);
}

int mpprof_cmd_run(int argc, char **argv) {
  run_opts o;
  int rc = parse(argc, argv, &o);
  if (rc) return rc == 1 ? 0 : 2;

  char lib[PATH_MAX];
  if (find_library(lib, sizeof lib) < 0) return 2;

  char outbuf[PATH_MAX];
  bool made_default = false;
  /* MPPROF_OUT in the environment stands for -o, as the other variables
   * stand for their options (it would otherwise be replaced silently). */
  const char *env_out = getenv("MPPROF_OUT");
  if (!o.out && env_out && *env_out) o.out = env_out;
  char top[PATH_MAX]; /* the topmost directory this run makes for OUT; "" none */
  top[0] = '\0';
  if (!o.out) {
    default_out(outbuf, sizeof outbuf, o.argv[0]);
    made_default = mpprof_mkdir_fresh(outbuf, sizeof outbuf);
    o.out = outbuf;
    if (made_default) snprintf(top, sizeof top, "%s", outbuf);
  }
  struct stat stt;
  bool existed = !made_default && stat(o.out, &stt) == 0;
  if (!made_default) mpprof_topmost_missing(o.out, top, sizeof top);
  if (existed && !S_ISDIR(stt.st_mode)) {
    mpprof_fprint_term(stderr, "mpprof: %s exists and is not a directory\n", o.out);
    return 2;
  }
  int out = mpp_sf_open_dir(AT_FDCWD, o.out, MPP_SF_CREATE | MPP_SF_USER_PATH);
  char out_abs[PATH_MAX];
  if (out < 0 || !realpath(o.out, out_abs)) {
    char why[PATH_MAX + 64];
    mpprof_fprint_term(stderr, "mpprof: cannot create %s: %s\n", o.out,
                       mpprof_why_not_made(o.out, out < 0 ? -out : errno, why, sizeof why));
    if (out >= 0) close(out);
    return 2;
  }
  /* out stays open (and locked) until mpprof exits. */
  if (mpprof_lock_out(out, o.out, "", "use another -o DIR")) return 2; /* one run per OUT */
  old_raw old = {.raw = -1};
  char tail[PATH_MAX + 32] = "";
  if (existed && !dir_is_empty(out)) {
    if (!o.force) {
      mpprof_fprint_term(stderr, "mpprof: %s is not empty (use --force to reuse it)\n", o.out);
      return 2;
    }
    /* A program that cannot start (a typo) must not cost the earlier run's
     * raw files: refused before they are set aside (and given back when
     * execve refuses it all the same). */
    snprintf(tail, sizeof tail, " (%s is left as it was)", o.out);
    int why = program_startable(o.argv[0]);
    if (why) return report_start_failure(o.argv[0], why, tail);
    if (old_raw_set_aside(out, o.out, &old)) return 2;
  }
  struct stat rawst;
  bool made_raw = fstatat(out, "raw", &rawst, AT_SYMLINK_NOFOLLOW) != 0;
  if (check_out_writable(out, o.out)) {
    old_raw_put_back(&old, o.out);
    return 2;
  }
  warn_secure_execution(o.argv[0]);

  warn_other_injection("NVTX_INJECTION64_PATH", lib);
  warn_other_injection("CUDA_INJECTION64_PATH", lib);
  bool started;
  int status = run_child(&o, lib, out_abs, &old, tail, &started);
  /* Nothing to keep from a program that never started: the directory goes
   * again when this run made it (rmdir: only if still empty). */
  if (!started) {
    old_raw_put_back(&old, o.out);
    remove_if_empty(out, o.out, made_raw, top);
    return status;
  }
  int raw = mpp_sf_open_dir(out, "raw", 0);
  bool recorded = raw >= 0 && !dir_is_empty(raw);
  if (raw >= 0) close(raw);
  if (!recorded) {
    /* libmpprof's own test (profiler/core.c): set and not "0" turns it off. */
    const char *off = getenv("MPPROF_DISABLE");
    if (off && *off && strcmp(off, "0"))
      fprintf(stderr,
              "mpprof: %s: nothing was recorded: MPPROF_DISABLE=%s is set in the environment "
              "(every hook passes straight through; unset it to profile)\n",
              o.argv[0], off);
    else {
      /* A raw file larger than the file size limit the program inherits is
       * not written (libmpprof refuses it rather than take SIGXFSZ). */
      struct rlimit fs;
      char limit[96] = "";
      if (getrlimit(RLIMIT_FSIZE, &fs) == 0 && fs.rlim_cur != RLIM_INFINITY)
        snprintf(limit, sizeof limit, " (the file size limit, ulimit -f, is %llu bytes)",
                 (unsigned long long)fs.rlim_cur);
      char killed[128] = "";
      if (o.killed_signal)
        snprintf(killed, sizeof killed, "; %s was killed by %s before its first checkpoint",
                 o.argv[0], mpprof_signal_text(o.killed_signal).s);
      fprintf(stderr,
              "mpprof: %s: no CUDA matrix ops were seen: no process wrote a raw file (none "
              "called the CUDA libraries mpprof hooks, each that did ended without exit "
              "handlers, as os._exit() and SIGKILL do, before its first checkpoint, or its raw "
              "file could not be written%s: MPPROF_LOG=1 says why)%s\n",
              o.argv[0], limit, killed);
    }
    /* --force removed the earlier run's raw files, not its report: say that
     * what is left there no longer has raw files behind it. */
    struct stat rs;
    if (existed && fstatat(out, "report.json", &rs, AT_SYMLINK_NOFOLLOW) == 0)
      fprintf(stderr,
              "mpprof: the report in %s is an earlier run's (its raw files were removed by "
              "--force, and this run recorded nothing)\n",
              out_abs);
    remove_if_empty(out, o.out, made_raw, top);
    return pass_on_terminal_signal(&o, status);
  }

  if (o.n_alive)
    fprintf(stderr,
            "mpprof: %zu process%s of %s %s still running (pid %ld%s): the report covers what "
            "they wrote so far; run `mpprof report %s` again once they have exited\n",
            o.n_alive, o.n_alive == 1 ? "" : "es", o.argv[0], o.n_alive == 1 ? "is" : "are",
            o.alive[0], o.n_alive > 1 ? ", ..." : "", out_abs);
  size_t kept = o.n_alive < MPP_STILL_RUNNING_MAX ? o.n_alive : MPP_STILL_RUNNING_MAX;
  mpprof_report_options ro = {.out_dir = out_abs,
                              .program = NULL,
                              .summary = stderr,
                              .shadow_max_rel = o.shadow_max_rel,
                              .still_running = o.alive,
                              .n_still_running = kept,
                              .exited_pid = o.exited_pid,
                              .exit_status = o.exit_status,
                              .killed_pid = o.killed_pid,
                              .killed_signal = o.killed_signal};
  mpprof_error err = {0};
  ro.warnings = stderr;
  ro.error = &err;
  mpprof_clean_up_on_signals(NULL, NULL);
  if (mpprof_report_generate(&ro) != 0) {
    mpprof_print_error(&err);
    mpprof_fprint_term(stderr,
                       "mpprof: the report of %s was not written; raw files are in %s/raw\n",
                       o.argv[0], out_abs);
  }
  return pass_on_terminal_signal(&o, status);
}
