/* `mpprof report OUT_DIR`: rebuild OUT_DIR's report from OUT_DIR/raw.
 * `mpprof merge DIR... -o OUT_DIR`: put the raw files of several runs (ranks
 * or nodes profiled separately) into OUT_DIR/raw, then build its report.
 * Files are hard-linked when possible and copied otherwise; a name already
 * taken by a different file gets a numbered prefix instead of replacing it. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "analysis/raw_format.h"
#include "commands.h"
#include "profiler/settings.h"
#include "report/diff.h"
#include "common/safefile.h"
#include "report/report.h"

static void report_usage(FILE *out) {
  fputs("usage: mpprof report [--shadow-max-rel X] OUT_DIR\n"
        "  reads OUT_DIR/raw/*.json and writes OUT_DIR/report.html and\n"
        "  " MPPROF_REPORT_OTHER_FILES ";\n"
        "  --shadow-max-rel: the measured-error limit of the verdicts (default: the one\n"
        "  the run recorded, else 2^-8)\n",
        out);
}

int mpprof_parse_max_rel(const char *cmd, const char *v, double *ret) {
  const mpp_setting *s = mpp_setting_find("MPPROF_SHADOW_MAX_REL");
  if (!v || !*v || !mpp_setting_ok(s, v)) {
    char want[96];
    mpp_setting_want(s, want, sizeof want);
    mpprof_fprint_term(stderr, "mpprof: %s: --shadow-max-rel must be %s, not '%s'\n", cmd, want,
                       v ? v : "");
    return -1;
  }
  *ret = strtod(v, NULL);
  return 0;
}

static void merge_usage(FILE *out) {
  fputs("usage: mpprof merge DIR... -o|--output OUT_DIR\n"
        "  DIR is a run's output directory (with raw/) or a raw/ directory itself;\n"
        "  their raw files go to OUT_DIR/raw, then the report is built there;\n"
        "  OUT_DIR must be new or empty\n",
        out);
}

const char *mpprof_why_not_made(const char *path, int err, char *buf, size_t n) {
  struct stat st;
  char target[PATH_MAX];
  ssize_t len = -1;
  if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && stat(path, &st) != 0 && errno == ENOENT)
    len = readlink(path, target, sizeof target - 1);
  if (len < 0) {
    snprintf(buf, n, "%s", strerror(err));
    return buf;
  }
  target[len] = '\0';
  snprintf(buf, n, "a symbolic link to %s, which does not exist", target);
  return buf;
}

/* mpprof_clean_up_on_signals' made_dir and made_top; "" none */
static char made_out[PATH_MAX], made_top[PATH_MAX];

void mpprof_topmost_missing(const char *path, char *top, size_t n) {
  struct stat st;
  size_t len = strlen(path);
  top[0] = '\0';
  if (len >= n || lstat(path, &st) == 0) return;
  memcpy(top, path, len + 1);
  for (;;) {
    while (len > 1 && top[len - 1] == '/')
      top[--len] = '\0';
    char *slash = strrchr(top, '/');
    if (!slash) return;
    size_t plen = slash == top ? 1 : (size_t)(slash - top);
    char c = top[plen];
    top[plen] = '\0';
    bool parent_exists = lstat(top, &st) == 0;
    if (parent_exists) {
      top[plen] = c;
      return;
    }
    len = plen;
  }
}

void mpprof_remove_made(const char *path, const char *top) {
  char cur[PATH_MAX];
  size_t len = strlen(path), tlen = strlen(top);
  if (!tlen || len >= sizeof cur || tlen > len || strncmp(path, top, tlen)) return;
  memcpy(cur, path, len + 1);
  for (;;) {
    if (rmdir(cur) != 0 || len <= tlen) return;
    while (len > tlen && cur[len - 1] == '/') /* the trailing slashes */
      cur[--len] = '\0';
    while (len > tlen && cur[len - 1] != '/') /* the last component */
      cur[--len] = '\0';
    while (len > tlen && cur[len - 1] == '/') /* the slashes before it */
      cur[--len] = '\0';
  }
}

/* A merge's OUT_DIR and OUT_DIR/raw while it brings files and builds the
 * report: everything in raw/ is the merge's (OUT_DIR was new or empty, and
 * is locked); -1 none. */
static volatile int merge_out = -1, merge_raw = -1;

/* What an interrupted merge brought, then raw/: unless its report is there
 * (report.json is renamed first), when only its summary was left to print.
 * Async-signal-safe: getdents64 and unlinkat, not readdir. */
static void remove_merge(void) {
  int out = merge_out, raw = merge_raw;
  struct stat st;
  if (raw < 0 || fstatat(out, "report.json", &st, AT_SYMLINK_NOFOLLOW) == 0) return;
  static char buf[8192];
  for (bool removed = true; removed;) {
    removed = false;
    lseek(raw, 0, SEEK_SET);
    long n = syscall(SYS_getdents64, raw, buf, sizeof buf);
    for (long off = 0; off < n;) {
      const struct dirent64 *d = (const void *)(buf + off);
      off += d->d_reclen;
      if (strcmp(d->d_name, ".") && strcmp(d->d_name, "..") && unlinkat(raw, d->d_name, 0) == 0)
        removed = true;
    }
  }
  unlinkat(out, "raw", AT_REMOVEDIR);
}

/* The signals end_by_signal cleans up after. */
static const int cleanup_sigs[] = {SIGINT, SIGTERM, SIGHUP};

/* Blocks them (set: those; old, unless NULL: the mask before). */
static void block_cleanup_signals(sigset_t *set, sigset_t *old) {
  sigemptyset(set);
  for (size_t i = 0; i < sizeof cleanup_sigs / sizeof *cleanup_sigs; i++)
    sigaddset(set, cleanup_sigs[i]);
  sigprocmask(SIG_BLOCK, set, old);
}

static void end_by_signal(int sig) {
  mpprof_remove_temporaries();
  remove_merge();
  if (made_out[0]) mpprof_remove_made(made_out, made_top);
  signal(sig, SIG_DFL);
  raise(sig); /* blocked until the handler returns */
}

void mpprof_clean_up_on_signals(const char *made_dir, const char *top) {
  struct sigaction sa = {.sa_handler = end_by_signal, .sa_flags = SA_RESTART};
  sigset_t old;
  block_cleanup_signals(&sa.sa_mask, &old); /* made_out is not read half-written */
  bool fits = made_dir && top && strlen(made_dir) < PATH_MAX && strlen(top) < PATH_MAX;
  snprintf(made_out, sizeof made_out, "%s", fits ? made_dir : "");
  snprintf(made_top, sizeof made_top, "%s", fits ? top : "");
  for (size_t i = 0; i < sizeof cleanup_sigs / sizeof *cleanup_sigs; i++) {
    struct sigaction now;
    if (sigaction(cleanup_sigs[i], NULL, &now) == 0 && now.sa_handler != SIG_IGN)
      sigaction(cleanup_sigs[i], &sa, NULL);
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
}

void mpprof_print_error(const mpprof_error *e) {
  if (e->message[0]) mpprof_fprint_term(stderr, "mpprof: %s\n", e->message);
}

bool mpprof_mkdir_fresh(char *buf, size_t n) {
  size_t len = strlen(buf);
  for (int i = 1; i <= MPPROF_FRESH_TRIES; i++) {
    if (i > 1 && (size_t)snprintf(buf + len, n - len, "-%d", i) >= n - len) break;
    if (mkdir(buf, 0777) == 0) return true;
    if (errno != EEXIST) break;
  }
  buf[len] = '\0';
  return false;
}

/* mpprof_lock_out with flock's op: LOCK_EX, or LOCK_SH for a reader. */
static int lock_dir(int fd, int op, const char *name, const char *cmd, const char *hint) {
  if (flock(fd, op | LOCK_NB) == 0) return 0;
  const char *sep = *cmd ? ": " : "";
  if (errno == EWOULDBLOCK)
    mpprof_fprint_term(stderr,
                       "mpprof: %s%s%s is in use by another mpprof run or merge (locked); %s\n",
                       cmd, sep, name, hint);
  else
    mpprof_fprint_term(stderr, "mpprof: %s%scannot lock %s: %s\n", cmd, sep, name, strerror(errno));
  return -1;
}

int mpprof_lock_out(int fd, const char *name, const char *cmd, const char *hint) {
  return lock_dir(fd, LOCK_EX, name, cmd, hint);
}

/* Run directory dir (or at/dir) opened for command cmd and locked with op:
 * LOCK_EX for report (it writes there), LOCK_SH for merge's inputs (two
 * merges may read one run). Either is refused while a run or a merge writes
 * dir: its raw files are a checkpoint's, not the run's. The descriptor
 * (closing it releases the lock), or after one line on stderr -1 (cannot
 * open) or -2 (in use: exit 2). */
static int lock_run_dir(int at, const char *dir, const char *name, const char *cmd, int op) {
  int fd = mpp_sf_open_dir(at, dir, MPP_SF_USER_PATH);
  if (fd < 0) {
    mpprof_fprint_term(stderr, "mpprof: %s: %s: %s\n", cmd, name, strerror(-fd));
    return -1;
  }
  if (lock_dir(fd, op, name, cmd, "try again when it has ended")) {
    close(fd);
    return -2;
  }
  return fd;
}

/* The report of opts->out_dir: the raw files' warnings and the error on
 * stderr. */
static int generate(mpprof_report_options *o) {
  mpprof_error err = {0};
  o->warnings = stderr;
  o->error = &err;
  int rc = mpprof_report_generate(o);
  if (rc) mpprof_print_error(&err);
  return rc;
}

int mpprof_cmd_report(int argc, char **argv) {
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    report_usage(stdout);
    return 0;
  }
  const char *dir = NULL;
  double max_rel = 0;
  int ndirs = 0;
  bool ended = false;
  for (int i = 1; i < argc; i++) {
    mpprof_arg_kind k = mpprof_arg_kind_of(argv[i], &ended);
    if (k == MPPROF_ARG_END) continue;
    if (k == MPPROF_ARG_OPTION &&
        (!strcmp(argv[i], "--shadow-max-rel") || !strncmp(argv[i], "--shadow-max-rel=", 17))) {
      const char *v = argv[i][16] == '=' ? argv[i] + 17 : i + 1 < argc ? argv[++i] : NULL;
      if (mpprof_parse_max_rel("report", v, &max_rel)) return 2;
    } else if (k == MPPROF_ARG_OPTION) {
      mpprof_fprint_term(stderr, "mpprof: report: unknown option '%s' (see 'mpprof help report')\n",
                         argv[i]);
      return 2;
    } else {
      dir = argv[i];
      ndirs++;
    }
  }
  if (ndirs != 1) {
    report_usage(stderr);
    return 2;
  }
  /* The argument named when it is not a directory, not DIR/raw under it. */
  struct stat st;
  int e = stat(dir, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
  if (e) {
    mpprof_fprint_term(stderr, "mpprof: report: %s: %s\n", dir, strerror(e));
    return 1;
  }
  /* Not while a run or a merge writes DIR (its lock, held to the end). */
  int fd = lock_run_dir(AT_FDCWD, dir, dir, "report", LOCK_EX);
  if (fd < 0) return fd == -2 ? 2 : 1;
  mpprof_report_options o = {.out_dir = dir,
                             .program = NULL,
                             .summary = stdout,
                             .shadow_max_rel = max_rel,
                             .need_raw_files = true};
  mpprof_clean_up_on_signals(NULL, NULL);
  int rc = generate(&o) ? 1 : 0;
  close(fd);
  return rc;
}

/* Copies src to name in out_raw, the one safe way (common/safefile.h). */
static int copy_file(const char *src, int out_raw, const char *name) {
  int in = open(src, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (in >= 0) {
      close(in);
      errno = EINVAL; /* not a regular file */
    }
    return -1;
  }
  mpp_sfile f;
  int rc = mpp_sf_create(&f, out_raw, name, 0644);
  char buf[1 << 16];
  ssize_t n;
  while (rc == 0 && (n = read(in, buf, sizeof buf)) != 0)
    rc = n < 0 ? -errno : mpp_sf_write_all(f.fd, buf, (size_t)n);
  close(in);
  if (f.tmp[0]) rc = mpp_sf_commit(&f, rc);
  if (rc) errno = -rc;
  return rc ? -1 : 0;
}

static bool same_file(const char *a, int dir, const char *name) {
  struct stat x, y;
  return stat(a, &x) == 0 && fstatat(dir, name, &y, AT_SYMLINK_NOFOLLOW) == 0 &&
         x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The raw files merge brought: OUT/raw's name of each, and the input path it
 * came from (warnings of the report name both). */
typedef struct brought {
  char **name, **src;
  size_t n, cap;
} brought;

static int brought_add(brought *b, const char *name, const char *src) {
  if (b->n == b->cap && b->cap > SIZE_MAX / 4 / sizeof(char *)) goto oom;
  if (b->n == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 16;
    char **n = realloc(b->name, cap * sizeof *n);
    if (n) b->name = n;
    char **s = realloc(b->src, cap * sizeof *s);
    if (s) b->src = s;
    if (!n || !s) goto oom;
    b->cap = cap;
  }
  b->name[b->n] = strdup(name);
  b->src[b->n] = strdup(src);
  if (!b->name[b->n] || !b->src[b->n]) {
    free(b->name[b->n]);
    free(b->src[b->n]);
    goto oom;
  }
  b->n++;
  return 0;
oom:
  fputs("mpprof: merge: out of memory\n", stderr);
  return -1;
}

static void brought_free(brought *b) {
  for (size_t i = 0; i < b->n; i++) {
    free(b->name[i]);
    free(b->src[i]);
  }
  free(b->name);
  free(b->src);
}

static const char *brought_origin(void *ctx, const char *name) {
  const brought *b = ctx;
  for (size_t i = 0; i < b->n; i++)
    if (!strcmp(b->name[i], name)) return b->src[i];
  return NULL;
}

/* The non-negative integer of key in a raw file's head, or -1 (null, absent). */
static long long head_number(const char *buf, const char *name) {
  char key[32];
  snprintf(key, sizeof key, "\"%s\":", name);
  const char *k = strstr(buf, key);
  char *end = NULL;
  long long v = k ? strtoll(k + strlen(key), &end, 10) : -1;
  if (k && end == k + strlen(key)) v = -1;
  return v < 0 ? -1 : v;
}

/* How far a raw file's process went, from its head: its start (the process),
 * whether the file is final, and the time of its write. */
typedef struct raw_progress {
  long long start_ns, end_ns; /* -1: not in the head */
  bool final;
} raw_progress;

static bool progress_of_raw(const char *path, raw_progress *ret) {
  char *buf = mpprof_raw_head(path);
  if (!buf) return false;
  char key[32];
  snprintf(key, sizeof key, "\"%s\":true", MP_RK_TOP.final);
  ret->final = strstr(buf, key) != NULL;
  ret->start_ns = head_number(buf, MP_RK_TOP.start_ns);
  ret->end_ns = head_number(buf, MP_RK_TOP.end_ns);
  free(buf);
  return ret->start_ns >= 0;
}

/* Of two files of one name, whether they are the same process (same start)
 * at two moments, one a checkpoint (a copy taken while the job ran): 1 when
 * a went further (final, or the later checkpoint), -1 when b did, 0 when they
 * are other processes or as far (the report counts such a copy once). */
static int further(const char *a, const char *b) {
  raw_progress x, y;
  if (!progress_of_raw(a, &x) || !progress_of_raw(b, &y) || x.start_ns != y.start_ns ||
      (x.final && y.final))
    return 0;
  if (x.final != y.final) return x.final ? 1 : -1;
  return x.end_ns > y.end_ns ? 1 : x.end_ns < y.end_ns ? -1 : 0;
}

static void brought_forget(brought *b, const char *name) {
  for (size_t i = 0; i < b->n; i++)
    if (!strcmp(b->name[i], name)) {
      free(b->name[i]);
      free(b->src[i]);
      b->name[i] = b->name[--b->n];
      b->src[i] = b->src[b->n];
      return;
    }
}

/* Link or copy src into out_raw under its name, or a numbered variant when the
 * name is taken by another file; noted in *b. */
static int bring(const char *src, const char *name, int out_raw, const char *out_raw_name,
                 brought *b) {
  for (int i = 0; i < 1000; i++) {
    char dst[300];
    if (i)
      snprintf(dst, sizeof dst, "%d-%s", i, name);
    else
      snprintf(dst, sizeof dst, "%s", name);
    if (same_file(src, out_raw, dst)) /* already there (an input given twice) */
      return brought_add(b, dst, src);
    struct stat st;
    if (fstatat(out_raw, dst, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      /* One process twice, a checkpoint and a file that went further: only
       * the latter is brought (the report would keep the one it reads first). */
      char there[4400];
      snprintf(there, sizeof there, "%s/%s", out_raw_name, dst);
      int f = further(src, there);
      const char *origin = brought_origin(b, dst), *held = origin ? origin : there;
      if (f)
        fprintf(stderr,
                "mpprof: merge: skipping %s: a checkpoint of the same process as %s, which "
                "went further\n",
                f < 0 ? src : held, f < 0 ? held : src);
      if (f < 0) return 0;
      if (f == 0) continue;
      if (unlinkat(out_raw, dst, 0)) {
        mpprof_fprint_term(stderr, "mpprof: merge: cannot replace %s: %s\n", there,
                           strerror(errno));
        return -1;
      }
      brought_forget(b, dst);
    }
    /* A regular file is hard-linked where it can be; anything else (a
     * symbolic link among the inputs, say) is copied from what it names, so
     * OUT/raw holds only its own regular files. */
    bool plain = lstat(src, &st) == 0 && S_ISREG(st.st_mode);
    int rc =
        plain && linkat(AT_FDCWD, src, out_raw, dst, 0) == 0 ? 0 : copy_file(src, out_raw, dst);
    if (rc && errno == EINVAL) { /* a FIFO, a device, a link to one: not a raw file */
      mpprof_fprint_term(stderr, "mpprof: merge: %s: not a regular file, skipped\n", src);
      return 0;
    }
    if (rc) {
      mpprof_fprint_term(stderr, "mpprof: merge: cannot copy %s to %s/%s: %s\n", src, out_raw_name,
                         dst, strerror(errno));
      return rc;
    }
    return brought_add(b, dst, src);
  }
  mpprof_fprint_term(stderr, "mpprof: merge: too many files named %s\n", name);
  return -1;
}

/* The raw directory of input DIR (DIR/raw, or DIR itself), opened, its path
 * in *ret_raw; NULL after one line naming DIR and the problem. */
static DIR *open_input(const char *dir, char **ret_raw) {
  char *raw = NULL;
  struct stat st;
  if (asprintf(&raw, "%s/raw", dir) < 0) return NULL;
  if (stat(raw, &st) != 0 || !S_ISDIR(st.st_mode)) {
    free(raw);
    raw = strdup(dir); /* DIR may be a raw/ directory itself */
    if (!raw) return NULL;
  }
  DIR *d = opendir(raw);
  if (!d) {
    mpprof_fprint_term(stderr, "mpprof: merge: %s: %s\n", dir, strerror(errno));
    free(raw);
    return NULL;
  }
  *ret_raw = raw;
  return d;
}

/* Whether input dir, open as fd, is a run's raw/ itself: named raw, without
 * a raw/ of its own. */
static bool is_raw_itself(int fd, const char *dir) {
  struct stat st;
  if (fstatat(fd, "raw", &st, 0) == 0 && S_ISDIR(st.st_mode)) return false;
  size_t n = strlen(dir);
  while (n > 1 && dir[n - 1] == '/')
    n--;
  return n >= 3 && !strncmp(dir + n - 3, "raw", 3) && (n == 3 || dir[n - 4] == '/');
}

/* Input dir locked for reading (lock_run_dir): the run directory above it
 * when it is a run's raw/ itself, as that is where a run holds its lock. */
static int lock_input(const char *dir) {
  int fd = lock_run_dir(AT_FDCWD, dir, dir, "merge", LOCK_SH);
  if (fd < 0 || !is_raw_itself(fd, dir)) return fd;
  int up = lock_run_dir(fd, "..", dir, "merge", LOCK_SH);
  close(fd);
  return up;
}

static void close_all(int *fd, int n) {
  for (int i = 0; i < n; i++)
    if (fd[i] >= 0) close(fd[i]);
}

static int bring_dir(const char *dir, int out_raw, const char *out_raw_name, brought *b) {
  char *raw = NULL;
  DIR *d = open_input(dir, &raw);
  if (!d) return -1;
  int rc = 0, n = 0;
  struct dirent *e;
  while (rc == 0 && (e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json")) continue;
    char *src = NULL;
    if (asprintf(&src, "%s/%s", raw, e->d_name) < 0) {
      rc = -1;
      break;
    }
    rc = bring(src, e->d_name, out_raw, out_raw_name, b);
    free(src);
    n++;
  }
  closedir(d);
  if (rc == 0 && n == 0)
    mpprof_fprint_term(stderr, "mpprof: merge: %s: no raw files (*.json)\n", raw);
  free(raw);
  return rc;
}

/* The rank in a raw file's header ("rank": N near its start), or -1 (null,
 * absent, unreadable); its start_ns in *ret_start_ns (-1 when not in the
 * head: an argv of more than 64 KiB before it). */
static long rank_of_raw(const char *path, long long *ret_start_ns) {
  *ret_start_ns = -1;
  char *buf = mpprof_raw_head(path);
  if (!buf) return -1;
  long r = (long)head_number(buf, MP_RK_TOP.rank);
  *ret_start_ns = head_number(buf, MP_RK_TOP.start_ns);
  free(buf);
  return r;
}

/* A raw file of an input with a rank. Its process is its name (host-pid.json)
 * and start, as the report tells processes apart: the same name in two inputs
 * is one process (brought once) unless it started at another time (a pid that
 * came round again, as pids do in containers). */
typedef struct ranked {
  long rank;
  long long start_ns; /* -1: not known */
  char name[256];
} ranked;

static bool same_process(const ranked *a, const ranked *b) {
  return !strcmp(a->name, b->name) &&
         (a->start_ns < 0 || b->start_ns < 0 || a->start_ns == b->start_ns);
}

/* The raw files of dir that hold a rank, into *ret (malloc'd). */
static size_t ranks_of_input(const char *dir, ranked **ret) {
  *ret = NULL;
  char *raw = NULL;
  DIR *d = open_input(dir, &raw);
  if (!d) return 0;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (e->d_name[0] == '.' || len < 6 || len >= sizeof(*ret)->name ||
        strcmp(e->d_name + len - 5, ".json"))
      continue;
    char *p = NULL;
    if (asprintf(&p, "%s/%s", raw, e->d_name) < 0) break;
    long long start_ns;
    long r = rank_of_raw(p, &start_ns);
    free(p);
    if (r < 0) continue;
    if (n == cap) {
      ranked *g = realloc(*ret, (cap = cap ? 2 * cap : 8) * sizeof *g);
      if (!g) break;
      *ret = g;
    }
    (*ret)[n].rank = r;
    (*ret)[n].start_ns = start_ns;
    memcpy((*ret)[n].name, e->d_name, len + 1);
    n++;
  }
  closedir(d);
  free(raw);
  return n;
}

static int long_order(const void *x, const void *y) {
  long a = *(const long *)x, b = *(const long *)y;
  return (a > b) - (a < b);
}

/* "0-3, 5, 7" from n sorted ranks (repeats dropped), cut with ", ..." where
 * buf is full. */
static void ranks_text(const long *r, size_t n, char *buf, size_t cap) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j + 1 < n && (r[j + 1] == r[j] || r[j + 1] == r[j] + 1))
      j++;
    char part[48];
    if (r[j] == r[i])
      snprintf(part, sizeof part, "%s%ld", len ? ", " : "", r[i]);
    else
      snprintf(part, sizeof part, "%s%ld-%ld", len ? ", " : "", r[i], r[j]);
    if (len + strlen(part) + 6 >= cap) {
      snprintf(buf + len, cap - len, ", ...");
      return;
    }
    len += (size_t)snprintf(buf + len, cap - len, "%s", part);
    i = j + 1;
  }
}

/* One rank in two inputs, in two different processes, is most likely the
 * same rank profiled twice: its calls would be added together as if they
 * were one rank's. Said, not refused (runs merged on purpose are the user's
 * call), once per pair of inputs with every such rank; the same input given
 * twice is not a second rank. */
static void warn_repeated_ranks(char **dirs, int ndirs) {
  ranked **rk = calloc((size_t)ndirs, sizeof *rk);
  size_t *n = calloc((size_t)ndirs, sizeof *n);
  for (int i = 0; rk && n && i < ndirs; i++) {
    n[i] = ranks_of_input(dirs[i], &rk[i]);
    for (int j = 0; j < i; j++) {
      long *both = malloc((n[i] ? n[i] : 1) * sizeof *both);
      size_t nb = 0;
      for (size_t a = 0; both && a < n[i]; a++) {
        bool in_j = false;
        for (size_t b = 0; b < n[j] && !in_j; b++)
          in_j = rk[i][a].rank == rk[j][b].rank && !same_process(&rk[i][a], &rk[j][b]);
        if (in_j) both[nb++] = rk[i][a].rank;
      }
      if (nb) {
        qsort(both, nb, sizeof *both, long_order);
        size_t distinct = 1;
        for (size_t k = 1; k < nb; k++)
          distinct += both[k] != both[k - 1];
        char list[256];
        ranks_text(both, nb, list, sizeof list);
        if (distinct == 1)
          fprintf(stderr,
                  "mpprof: merge: warning: rank %s is in both %s and %s (the same rank "
                  "profiled twice?); its processes are merged all the same\n",
                  list, dirs[j], dirs[i]);
        else
          fprintf(stderr,
                  "mpprof: merge: warning: %zu ranks (%s) are in both %s and %s (the same "
                  "ranks profiled twice?); their processes are merged all the same\n",
                  distinct, list, dirs[j], dirs[i]);
      }
      free(both);
    }
  }
  for (int i = 0; rk && i < ndirs; i++)
    free(rk[i]);
  free(rk);
  free(n);
}

/* One input directory named twice (the same path, or another path to it)
 * is brought once: its processes are counted once. Said, once per repeat,
 * naming the input, as a copy of it and one rank profiled twice are. */
static void warn_repeated_inputs(char **dirs, int ndirs) {
  for (int i = 1; i < ndirs; i++) {
    struct stat si, sj;
    if (stat(dirs[i], &si)) continue;
    for (int j = 0; j < i; j++) {
      if (stat(dirs[j], &sj) || si.st_dev != sj.st_dev || si.st_ino != sj.st_ino) continue;
      if (!strcmp(dirs[i], dirs[j]))
        fprintf(stderr,
                "mpprof: merge: warning: %s is given twice; its processes are counted "
                "once\n",
                dirs[i]);
      else
        fprintf(stderr,
                "mpprof: merge: warning: %s and %s are one directory, given twice; its "
                "processes are counted once\n",
                dirs[j], dirs[i]);
      break;
    }
  }
}

/* Runs of different programs would blend unrelated layers: say so (ranks of
 * one job share their command line; a run's own child processes are kept
 * together, so two runs match when they share any command line). */
static void warn_different_programs(char **dirs, int ndirs) {
  char *first = ndirs ? mpprof_run_programs(dirs[0]) : NULL;
  for (int i = 1; first && first[0] && i < ndirs; i++) {
    char *p = mpprof_run_programs(dirs[i]);
    bool shared = false;
    for (const char *line = p; p && *line && !shared;) {
      const char *nl = strchr(line, '\n');
      size_t len = nl ? (size_t)(nl - line) : strlen(line);
      for (const char *q = first; *q && !shared;) {
        const char *qn = strchr(q, '\n');
        size_t ql = qn ? (size_t)(qn - q) : strlen(q);
        shared = ql == len && !strncmp(q, line, len);
        q += ql + (qn ? 1 : 0);
      }
      line += len + (nl ? 1 : 0);
    }
    if (p && p[0] && !shared) {
      /* The first command line of each; the same program (its script, else
       * its executable, as diff judges it) with other arguments said so. */
      char *nl1 = strchr(first, '\n'), *nl2 = strchr(p, '\n');
      int l1 = (int)(nl1 ? nl1 - first : (long)strlen(first));
      int l2 = (int)(nl2 ? nl2 - p : (long)strlen(p));
      char c1[4096], c2[4096], id1[256], id2[256];
      snprintf(c1, sizeof c1, "%.*s", l1, first);
      snprintf(c2, sizeof c2, "%.*s", l2, p);
      mpprof_program_identity(c1, id1, sizeof id1);
      mpprof_program_identity(c2, id2, sizeof id2);
      fprintf(stderr,
              "mpprof: merge: warning: %s profiled %s than %s ('%s' vs '%s'); "
              "their layers are merged by name all the same\n",
              dirs[i],
              id1[0] && !strcmp(id1, id2) ? MPPROF_SAME_PROGRAM_OTHER_ARGS : "another program",
              dirs[0], c2, c1);
    }
    free(p);
  }
  free(first);
}

/* Whether directory path holds nothing but . and .. (false if unreadable). */
static bool dir_is_empty(const char *path) {
  DIR *d = opendir(path);
  bool empty = d != NULL;
  struct dirent *e;
  while (d && empty && (e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) empty = false;
  if (d) closedir(d);
  return empty;
}

int mpprof_cmd_merge(int argc, char **argv) {
  const char *out = NULL;
  int ndirs = 0;
  char **dirs = calloc((size_t)argc, sizeof *dirs);
  int *in_fd = malloc((size_t)argc * sizeof *in_fd); /* each input's lock */
  if (!dirs || !in_fd) {
    free(dirs);
    free(in_fd);
    return 1;
  }
  bool ended = false;
  for (int i = 1; i < argc; i++) {
    mpprof_arg_kind k = mpprof_arg_kind_of(argv[i], &ended);
    if (k == MPPROF_ARG_END) continue;
    if (k == MPPROF_ARG_OPTION && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
      merge_usage(stdout);
      free(dirs);
      free(in_fd);
      return 0;
    }
    if (k == MPPROF_ARG_OPERAND) {
      dirs[ndirs++] = argv[i];
      continue;
    }
    int got = mpprof_out_option("merge", argc, argv, &i, &out);
    if (got > 0) continue;
    if (got == 0)
      mpprof_fprint_term(stderr, "mpprof: merge: unknown option '%s' (see 'mpprof help merge')\n",
                         argv[i]);
    free(dirs);
    free(in_fd);
    return 2;
  }
  if (!out || ndirs == 0) {
    merge_usage(stderr);
    free(dirs);
    free(in_fd);
    return 2;
  }
  /* Every input readable and none in use before anything is brought: a merge
   * that fails on its second input left the first one's raw files in
   * OUT_DIR/raw. Each input stays locked until its files are brought. */
  for (int i = 0; i < ndirs; i++)
    in_fd[i] = -1;
  for (int i = 0; i < ndirs; i++) {
    char *raw = NULL;
    in_fd[i] = lock_input(dirs[i]);
    DIR *d = in_fd[i] < 0 ? NULL : open_input(dirs[i], &raw);
    if (!d) {
      int in_use = in_fd[i] == -2;
      close_all(in_fd, ndirs);
      free(in_fd);
      free(dirs);
      return in_use ? 2 : 1;
    }
    closedir(d);
    free(raw);
  }
  /* OUT_DIR is new or empty: raw files already there would be counted in a
   * report the user asked of these inputs (another merge's, an input's own
   * when merging into it), and an earlier report would be replaced. */
  struct stat st;
  bool existed = lstat(out, &st) == 0;
  if (existed && stat(out, &st) == 0 && S_ISDIR(st.st_mode) && !dir_is_empty(out)) {
    mpprof_fprint_term(stderr, "mpprof: merge: %s is not empty (merge writes a new OUT_DIR)\n",
                       out);
    close_all(in_fd, ndirs);
    free(in_fd);
    free(dirs);
    return 2;
  }
  char *out_raw = NULL;
  int rc = asprintf(&out_raw, "%s/raw", out) < 0 ? -1 : 0;
  int out_fd = -1, raw_fd = -1;
  char top[PATH_MAX]; /* what making OUT_DIR makes */
  mpprof_topmost_missing(out, top, sizeof top);
  /* Blocked from making OUT_DIR until the handler knows it (or, when the
   * merge fails before, until the failure has removed it): a signal between
   * left OUT_DIR and raw/ behind. */
  sigset_t sigs, old_mask;
  block_cleanup_signals(&sigs, &old_mask);
  if (rc == 0) out_fd = mpp_sf_open_dir(AT_FDCWD, out, MPP_SF_CREATE | MPP_SF_USER_PATH);
  /* One command per OUT_DIR: a run or another merge that took it meanwhile. */
  bool busy = out_fd >= 0 && mpprof_lock_out(out_fd, out, "merge", "name another OUT_DIR");
  if (busy) rc = -1;
  if (rc == 0) {
    /* OUT/raw is never a link: nothing is written outside OUT. */
    raw_fd = out_fd < 0 ? out_fd : mpp_sf_open_dir(out_fd, "raw", MPP_SF_CREATE);
    if (raw_fd < 0) {
      char why[PATH_MAX + 64];
      mpprof_fprint_term(
          stderr, "mpprof: merge: cannot create %s: %s\n", out_fd < 0 ? out : out_raw,
          out_fd < 0 ? mpprof_why_not_made(out, -raw_fd, why, sizeof why) : strerror(-raw_fd));
      rc = -1;
    }
  }
  if (rc == 0) {
    /* Interrupted from here on, it leaves what it left when it fails. */
    merge_out = out_fd;
    merge_raw = raw_fd;
    mpprof_clean_up_on_signals(existed ? NULL : out, top);
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    warn_repeated_inputs(dirs, ndirs);
    warn_different_programs(dirs, ndirs);
    warn_repeated_ranks(dirs, ndirs);
  }
  brought b = {0};
  for (int i = 0; rc == 0 && i < ndirs; i++) {
    rc = bring_dir(dirs[i], raw_fd, out_raw, &b);
    close(in_fd[i]);
    in_fd[i] = -1;
  }
  close_all(in_fd, ndirs);
  free(in_fd);
  free(dirs);
  if (rc == 0) {
    mpprof_report_options o = {.out_dir = out,
                               .program = NULL,
                               .summary = stdout,
                               .need_raw_files = true,
                               .raw_origin = brought_origin,
                               .raw_origin_ctx = &b};
    rc = generate(&o);
  }
  /* Blocked again until a failure's clean-up is done: from here the handler
   * no longer removes what the merge made. */
  sigprocmask(SIG_BLOCK, &sigs, NULL);
  merge_raw = -1;
  merge_out = -1;
  mpprof_clean_up_on_signals(NULL, NULL);
  /* A failed merge (an input unreadable, no usable raw file) leaves nothing:
   * the files it brought, then raw/ and OUT_DIR when it made them. */
  if (rc && !busy && out_fd >= 0) {
    for (size_t i = 0; raw_fd >= 0 && i < b.n; i++)
      unlinkat(raw_fd, b.name[i], 0);
    unlinkat(out_fd, "raw", AT_REMOVEDIR);
    if (!existed) mpprof_remove_made(out, top);
  }
  sigprocmask(SIG_SETMASK, &old_mask, NULL);
  if (raw_fd >= 0) close(raw_fd);
  if (out_fd >= 0) close(out_fd);
  brought_free(&b);
  free(out_raw);
  return busy ? 2 : rc ? 1 : 0;
}

static void diff_usage(FILE *out) {
  fputs("usage: mpprof diff A B [-o|--output OUT_DIR]\n"
        "  compares two runs' reports (A/report.json, B/report.json) layer by layer:\n"
        "  dtypes, compute type, Tensor Core share, GPU time, fp16 overflow/flush,\n"
        "  verdict, the op sites found in one run only, and the two runs' plans\n"
        "  (plan.json: autocast dtype, loss scale, layers kept out); writes\n"
        "  OUT_DIR/diff.html and diff.json (default OUT_DIR: a new\n"
        "  mpprof-diff-<date>[-N]; a given one must be empty)\n",
        out);
}

int mpprof_cmd_diff(int argc, char **argv) {
  const char *out = NULL, *ab[2] = {NULL, NULL};
  int n = 0;
  bool ended = false;
  for (int i = 1; i < argc; i++) {
    mpprof_arg_kind k = mpprof_arg_kind_of(argv[i], &ended);
    if (k == MPPROF_ARG_END) continue;
    if (k == MPPROF_ARG_OPTION && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
      diff_usage(stdout);
      return 0;
    }
    if (k == MPPROF_ARG_OPTION) {
      int got = mpprof_out_option("diff", argc, argv, &i, &out);
      if (got > 0) continue;
      if (got == 0)
        mpprof_fprint_term(stderr, "mpprof: diff: unknown option '%s' (see 'mpprof help diff')\n",
                           argv[i]);
      return 2;
    } else if (n < 2) {
      ab[n++] = argv[i];
    } else {
      fputs("mpprof: diff: two run directories, not more (see 'mpprof help diff')\n", stderr);
      return 2;
    }
  }
  if (n != 2) {
    fputs("mpprof: diff: needs two run directories A and B (see 'mpprof help diff')\n", stderr);
    return 2;
  }
  char def[64];
  bool made = false;
  if (!out) {
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(def, sizeof def, "mpprof-diff-%Y%m%d-%H%M%S", &tm);
    made = mpprof_mkdir_fresh(def, sizeof def);
    out = def;
  }
  struct stat st;
  bool existed = !made && stat(out, &st) == 0;
  if (existed) {
    if (!S_ISDIR(st.st_mode) || !dir_is_empty(out)) {
      mpprof_fprint_term(stderr, "mpprof: diff: %s %s\n", out,
                         S_ISDIR(st.st_mode) ? "is not empty" : "exists and is not a directory");
      return 2;
    }
  } else if (!made && mkdir(out, 0777) != 0) {
    char why[PATH_MAX + 64];
    mpprof_fprint_term(stderr, "mpprof: diff: cannot create %s: %s\n", out,
                       mpprof_why_not_made(out, errno, why, sizeof why));
    return 1;
  }
  mpprof_clean_up_on_signals(existed ? NULL : out, out);
  mpprof_error err = {0};
  int rc = mpprof_diff_generate(ab[0], ab[1], out, stdout, &err);
  if (rc) mpprof_print_error(&err);
  if (rc && !existed) rmdir(out);
  return rc ? 1 : 0;
}
