/* Input files that change, lie or attack (issue 14): a raw file or a .npy
 * file that shrinks while it is read, invalid UTF-8 and terminal escape
 * sequences in a raw file, a full disk while the report is written (the
 * report's and the diff's files replace their previous versions all or none:
 * a write of one fails, --wrap=write), and a site with 100k kernels (meson registers two tests: the
 * 100k-kernel case, argument 'kernels', has its own generous timeout). */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/safefile.h"
#include "common/utf8.h"
#include "report/diff.h"
#include "report/report.h"
#include "report/report_internal.h"
#include "report/tensorio/npy.h"
#include "tests/report/rawgen.h"

/* --- a file that shrinks between fstat and the read (linked --wrap=fstat64) --- */

static const char *shrink_path; /* truncated to shrink_to bytes right after its fstat */
static off_t shrink_to;
int __real_fstat64(int fd, struct stat *st);
int __wrap_fstat64(int fd, struct stat *st) {
  int rc = __real_fstat64(fd, st);
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, target, sizeof target - 1);
  if (rc == 0 && shrink_path && n > 0) {
    target[n] = '\0';
    if (!strcmp(target, shrink_path)) {
      assert_int_equal(truncate(shrink_path, shrink_to), 0);
      shrink_path = NULL;
    }
  }
  return rc;
}

/* --- a full disk at one output file (linked --wrap=write), a disk that
 * fails to sync it (--wrap=fdatasync) --- */

static const char *fail_name; /* this file's temporary fails ... */
static bool fail_at_sync;     /* ... its sync with EIO, else its writes with ENOSPC */

/* Whether fd is the temporary ".NAME.XXXXXXXX" of name (common/safefile.h). */
static bool temp_of(int fd, const char *name) {
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t len = name ? readlink(link, target, sizeof target - 1) : -1;
  if (len <= 0) return false;
  target[len] = '\0';
  const char *base = strrchr(target, '/');
  size_t fl = strlen(name);
  return base && base[1] == '.' && !strncmp(base + 2, name, fl) && base[2 + fl] == '.';
}

ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n) {
  if (!fail_at_sync && temp_of(fd, fail_name)) {
    errno = ENOSPC;
    return -1;
  }
  return __real_write(fd, buf, n);
}

/* What reached the disk before a rename (--wrap=fdatasync, fsync, renameat):
 * the inodes synced, the renames of a file not synced, the directories
 * synced. */
static ino_t synced[256];
static size_t n_synced;
static int renames, renames_unsynced, dir_syncs;

int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd) {
  if (fail_at_sync && temp_of(fd, fail_name)) {
    errno = EIO;
    return -1;
  }
  struct stat st;
  if (__real_fstat64(fd, &st) == 0 && n_synced < sizeof synced / sizeof *synced)
    synced[n_synced++] = st.st_ino;
  return __real_fdatasync(fd);
}

int __real_fsync(int fd);
int __wrap_fsync(int fd) {
  struct stat st;
  if (__real_fstat64(fd, &st) == 0 && S_ISDIR(st.st_mode)) dir_syncs++;
  return __real_fsync(fd);
}

int __real_renameat(int olddir, const char *old, int newdir, const char *new_name);
int __wrap_renameat(int olddir, const char *old, int newdir, const char *new_name) {
  struct stat st;
  if (fstatat(olddir, old, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    bool was_synced = false;
    for (size_t i = 0; i < n_synced; i++)
      was_synced |= synced[i] == st.st_ino;
    renames++;
    renames_unsynced += !was_synced;
  }
  return __real_renameat(olddir, old, newdir, new_name);
}

/* --- how much of a file is read (--wrap=read) --- */

static const char *read_path; /* the bytes read from this file are counted */
static size_t read_bytes;

ssize_t __real_read(int fd, void *buf, size_t n);
ssize_t __wrap_read(int fd, void *buf, size_t n) {
  ssize_t got = __real_read(fd, buf, n);
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t len = read_path && got > 0 ? readlink(link, target, sizeof target - 1) : -1;
  if (len > 0) {
    target[len] = '\0';
    if (!strcmp(target, read_path)) read_bytes += (size_t)got;
  }
  return got;
}

static const rg_proc P0 = {"node01", 100, 1, 0, true, "ok", "9.0", "train"};
static const rg_proc P1 = {"node01", 101, 1, 1, true, "ok", "9.0", "train"};

static void write_sites(const char *dir, const char *name, const rg_proc *p, int nsites) {
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, name, p), 0);
  for (int i = 0; i < nsites; i++) {
    char layer[64];
    snprintf(layer, sizeof layer, "net/l%d/fwd", i);
    cJSON *s =
        rg_gemm(i, "cublasGemmEx", layer, "A=fp16,B=fp16,D=fp32", "32F", "DEFAULT", 64, 64, 64, 3);
    rg_tensor(s, "A", MP_FP16, -4, 4, 64);
    rg_site_end(&r, s);
  }
  assert_int_equal(rg_end(&r), 0);
}

static void raw_file_shrinking_while_read_is_skipped_and_the_others_read(void **state) {
  (void)state;
  char *dir = rg_tmpdir("shrink");
  write_sites(dir, "node01-100.json", &P0, 200);
  write_sites(dir, "node01-101.json", &P1, 2);
  static char path[4200];
  snprintf(path, sizeof path, "%s/raw/node01-100.json", dir);
  shrink_path = path;
  shrink_to = 1000;
  mpprof_model m;
  mpprof_model_init(&m);
  FILE *warn = tmpfile();
  assert_int_equal(mpprof_read_raw_dir(&m, dir, warn, NULL), 0);
  assert_null(shrink_path); /* it did shrink */
  assert_int_equal(m.n_procs, 1);
  assert_int_equal(m.procs[0].pid, 101);
  assert_int_equal(m.n_skipped, 1);
  assert_non_null(strstr(m.skipped[0].reason, "changed while being read"));
  mpprof_model_free(&m);
  fclose(warn);
  rg_rmdir(dir);
  free(dir);
}

/* A raw file invalid from some byte on is rejected there, whatever its size:
 * the rest is not read (a garbage file of 1 GiB was read to its end; the
 * bytes after a valid header, read as one value, into a window as large).
 * Each file here is its first bytes and then a hole of 1 GiB of zeros. */
static void a_huge_invalid_raw_file_is_rejected_at_its_first_bad_bytes(void **state) {
  (void)state;
  static const struct {
    const char *head, *reason;
  } cases[] = {
      {"garbage", "not valid JSON at byte 0 (expected a JSON object)"},
      {"{\"schema\":\"mpprof.raw/1\",\"sites\":[",
       "not valid JSON at byte 34 (expected an object in the sites array)"},
      {"{\"schema\":\"mpprof.raw/1\",\"sites\":[\"a",
       "not valid JSON at byte 34 (expected an object in the sites array)"},
      {"{\"schema\":\"mpprof.raw/1\",\"sites\":[{\"a\":\"",
       "not valid JSON at byte 34 (inside the sites array)"},
      {"{\"schema\":\"mpprof.raw/1\",\"training\":{\"a\":[",
       "not valid JSON at byte 36 (inside a top-level value)"},
      {"{\"schema\":\"mpprof.raw/1\",\"host\":\"node",
       "not valid JSON at byte 32 (inside a top-level value)"},
      {"{\"schema\":\"mpprof.raw/1\",\"ho", "not valid JSON at byte 25 (inside a key)"},
      {"{\"schema\":\"mpprof.raw/1\",\"pid\":12",
       "not valid JSON at byte 31 (inside a top-level value)"},
      {"{\"schema\":\"mpprof.raw/1\",\"pid\":",
       "not valid JSON at byte 31 (inside a top-level value)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *dir = rg_tmpdir("huge");
    static char path[4200];
    snprintf(path, sizeof path, "%s/raw/r.json", dir);
    assert_int_equal(rg_write_text(dir, "r.json", cases[i].head, strlen(cases[i].head)), 0);
    assert_int_equal(truncate(path, (off_t)1 << 30), 0);
    read_path = path;
    read_bytes = 0;
    mpprof_model m;
    mpprof_model_init(&m);
    FILE *warn = tmpfile();
    assert_int_equal(mpprof_read_raw_dir(&m, dir, warn, NULL), 0);
    read_path = NULL;
    assert_int_equal(m.n_skipped, 1);
    assert_string_equal(m.skipped[0].reason, cases[i].reason);
    assert_true(read_bytes <= 2 * mpprof_raw_window);
    mpprof_model_free(&m);
    fclose(warn);
    rg_rmdir(dir);
    free(dir);
  }
}

static void npy_file_shrinking_while_scanned_fails_with_changed(void **state) {
  (void)state;
  char *dir = rg_tmpdir("npy");
  char path[4200];
  snprintf(path, sizeof path, "%s/t.npy", dir);
  enum { N = 1 << 20 };
  float *v = malloc(N * sizeof *v);
  for (int i = 0; i < N; i++)
    v[i] = (float)i;
  uint64_t shape[1] = {N};
  char err[512];
  assert_int_equal(
      mpprof_npy_write(path, 1, "<f4", false, 1, shape, v, N * sizeof *v, err, sizeof err), 0);
  free(v);
  mpprof_tensor_spec spec;
  mpprof_tensor_spec_init(&spec);
  mpprof_tensor t;
  assert_int_equal(mpprof_tensor_open(path, &spec, &t, err, sizeof err), 0);
  assert_int_equal(truncate(path, 1000), 0); /* np.save over the same name does this */
  mp_stats *s = malloc(sizeof *s);
  assert_int_equal(mpprof_tensor_scan(&t, s), -ESTALE);
  free(s);
  mpprof_tensor_close(&t);
  rg_rmdir(dir);
  free(dir);
}

static char *slurp(const char *path, size_t *ret_len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  char chunk[65536];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      buf = realloc(buf, cap);
    }
    memcpy(buf + len, chunk, n);
    len += n;
  }
  fclose(f);
  if (!buf) buf = calloc(1, 1);
  buf[len] = '\0';
  *ret_len = len;
  return buf;
}

static bool valid_utf8(const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t k = mpp_utf8_seq_len((const unsigned char *)s + i, n - i);
    if (!k) return false;
    i += k;
  }
  return true;
}

static void invalid_utf8_in_a_raw_file_gives_valid_reports(void **state) {
  (void)state;
  char *dir = rg_tmpdir("utf8");
  rg_proc p = P0;
  p.host = "\xff\xfe<script>";
  p.argv0 = "tr\xc3\x28in";
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "h-100.json", &p), 0);
  cJSON *s = rg_gemm(0, "cublasGemmEx", "net/\xed\xa0\x80/fwd", "A=fp16,B=fp16,D=fp32", "32F",
                     "DEFAULT", 8, 8, 8, 1);
  rg_kernel(s, "sm90_\xc0\xafkernel", 1, 100);
  rg_site_end(&r, s);
  rg_event(&r, 0, 1000, 10, 1);
  assert_int_equal(rg_end(&r), 0);
  mpprof_report_options o = {.out_dir = dir, .program = NULL, .summary = NULL};
  assert_int_equal(mpprof_report_generate(&o), 0);
  const char *outs[] = {"report.json", "trace.json", "layers.csv", "report.html"};
  for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
    char path[4300];
    snprintf(path, sizeof path, "%s/%s", dir, outs[i]);
    size_t len;
    char *text = slurp(path, &len);
    if (!valid_utf8(text, len)) fail_msg("%s is not valid UTF-8", outs[i]);
    free(text);
  }
  cJSON *rep = rg_read_json(dir, "report.json");
  assert_non_null(rep); /* parses: valid JSON */
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

static void terminal_escape_sequences_in_names_are_escaped_in_the_summary(void **state) {
  (void)state;
  char *dir = rg_tmpdir("escape");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "h-100.json", &P0), 0);
  cJSON *s = rg_gemm(0, "cublasGemmEx", "\x1b]0;TITLE\x07/fwd", "A=fp16,B=fp16,D=fp32", "32F",
                     "DEFAULT", 8, 8, 8, 1);
  rg_tensor(s, "A", MP_FP16, -4, 4, 64);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  FILE *sum = tmpfile();
  mpprof_report_options o = {.out_dir = dir, .program = NULL, .summary = sum};
  assert_int_equal(mpprof_report_generate(&o), 0);
  fflush(sum);
  rewind(sum);
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, sum);
  buf[n] = '\0';
  fclose(sum);
  assert_null(memchr(buf, 0x1b, n));
  assert_null(memchr(buf, 0x07, n));
  assert_non_null(strstr(buf, "\\x1b]0;TITLE\\x07"));
  rg_rmdir(dir);
  free(dir);
}

/* The report over RLIMIT_FSIZE: a write fails with EFBIG, as a full disk
 * fails with ENOSPC; the error names that error, not a bare I/O error. The
 * library prints nothing itself: the CLI prints the error. */
static void a_failing_report_write_names_the_real_error(void **state) {
  (void)state;
  char *dir = rg_tmpdir("efbig");
  write_sites(dir, "node01-100.json", &P0, 20);
  char errpath[4300], msgpath[4300];
  snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
  snprintf(msgpath, sizeof msgpath, "%s/error.txt", dir);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl;
    getrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = 4096;
    setrlimit(RLIMIT_FSIZE, &rl);
    int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    mpprof_error e = {0};
    mpprof_report_options o = {
        .out_dir = dir, .program = NULL, .summary = NULL, .warnings = stderr, .error = &e};
    int rc = mpprof_report_generate(&o);
    FILE *msg = fopen(msgpath, "w");
    if (msg) fprintf(msg, "%d %s", e.errnum, e.message);
    if (msg) fclose(msg);
    _exit(rc == 0 ? 0 : 1);
  }
  int st;
  waitpid(pid, &st, 0);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 1);
  size_t len;
  char *err = slurp(errpath, &len);
  assert_int_equal(len, 0); /* nothing printed by the library */
  free(err);
  char *msg = slurp(msgpath, &len);
  if (!strstr(msg, strerror(EFBIG)) || strstr(msg, strerror(EIO)) || !strstr(msg, "cannot write "))
    fail_msg("error: %s", msg);
  char want[32];
  snprintf(want, sizeof want, "%d ", EFBIG);
  assert_true(!strncmp(msg, want, strlen(want)));
  free(msg);
  rg_rmdir(dir);
  free(dir);
}

static const char *const REPORT_FILES[] = {"report.json", "plan.json",  "layers.csv",
                                           "ops.csv",     "trace.json", "report.html"};
enum { N_REPORT_FILES = sizeof REPORT_FILES / sizeof *REPORT_FILES };

static char *slurp_in(const char *dir, const char *name, size_t *ret_len) {
  char path[4300];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return slurp(path, ret_len);
}

/* No name in dir is one of mpp_sf_create's temporaries (".NAME.XXXXXXXX"). */
static void assert_no_temporary(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  while ((e = readdir(d)))
    if (mpp_sf_is_temp_name(e->d_name)) fail_msg("temporary left: %s/%s", dir, e->d_name);
  closedir(d);
}

static int report_failing_at(const char *dir, const char *name, mpprof_error *ret_error) {
  mpprof_report_options o = {.out_dir = dir, .program = NULL, .summary = NULL, .error = ret_error};
  fail_name = name;
  int rc = mpprof_report_generate(&o);
  fail_name = NULL;
  return rc;
}

/* Each file of the report reaches the disk before it replaces the previous
 * one, and the directory after: a machine that crashes or loses power right
 * after `mpprof report` keeps the old report or the new one, never empty
 * files (a rename can reach the disk before the data it names). */
static void report_files_reach_the_disk_before_they_replace_the_old_ones(void **state) {
  (void)state;
  char *dir = rg_tmpdir("durable");
  write_sites(dir, "node01-100.json", &P0, 3);
  n_synced = 0;
  renames = renames_unsynced = dir_syncs = 0;
  mpprof_error e = {0};
  assert_int_equal(report_failing_at(dir, NULL, &e), 0);
  assert_true(renames >= N_REPORT_FILES);
  assert_int_equal(renames_unsynced, 0);
  assert_int_equal(dir_syncs, 1); /* one directory: synced once, after every rename */
  rg_rmdir(dir);
  free(dir);
}

/* A full disk at any one of the report's files (report.html among them):
 * every file of the previous report is left as it was, byte for byte, no
 * temporary stays, and the one error line names the file and the error. The
 * set the run would have written differs (a second process's sites). */
static void a_failing_report_file_leaves_the_previous_report_whole(void **state) {
  (void)state;
  char *dir = rg_tmpdir("allornone");
  write_sites(dir, "node01-100.json", &P0, 3);
  mpprof_error e = {0};
  assert_int_equal(report_failing_at(dir, NULL, &e), 0);
  char *old[N_REPORT_FILES];
  size_t old_len[N_REPORT_FILES];
  for (int i = 0; i < N_REPORT_FILES; i++)
    old[i] = slurp_in(dir, REPORT_FILES[i], &old_len[i]);
  write_sites(dir, "node01-101.json", &P1, 5);
  for (int f = 0; f < 2 * N_REPORT_FILES; f++) {
    memset(&e, 0, sizeof e);
    /* a full disk at each file, then a failing sync of each */
    fail_at_sync = f >= N_REPORT_FILES;
    int want = fail_at_sync ? EIO : ENOSPC;
    const char *name = REPORT_FILES[f % N_REPORT_FILES];
    assert_int_equal(report_failing_at(dir, name, &e), -1);
    fail_at_sync = false;
    assert_int_equal(e.errnum, want);
    if (!strstr(e.message, name) || !strstr(e.message, strerror(want)) || strchr(e.message, '\n'))
      fail_msg("failing %s, error: %s", name, e.message);
    for (int i = 0; i < N_REPORT_FILES; i++) {
      size_t len;
      char *now = slurp_in(dir, REPORT_FILES[i], &len);
      if (len != old_len[i] || memcmp(now, old[i], len))
        fail_msg("failing %s replaced %s", name, REPORT_FILES[i]);
      free(now);
    }
    assert_no_temporary(dir);
  }
  /* with room again, the new set replaces every file */
  assert_int_equal(report_failing_at(dir, NULL, &e), 0);
  size_t len;
  char *now = slurp_in(dir, "report.json", &len);
  assert_true(len != old_len[0] || memcmp(now, old[0], len));
  free(now);
  for (int i = 0; i < N_REPORT_FILES; i++)
    free(old[i]);
  rg_rmdir(dir);
  free(dir);
}

/* The same for the diff: diff.html failing leaves no diff.json either. */
static void a_failing_diff_file_leaves_neither(void **state) {
  (void)state;
  char *a = rg_tmpdir("diffa"), *b = rg_tmpdir("diffb"), *out = rg_tmpdir("diffout");
  write_sites(a, "node01-100.json", &P0, 3);
  write_sites(b, "node01-100.json", &P0, 4);
  mpprof_error e = {0};
  assert_int_equal(report_failing_at(a, NULL, &e), 0);
  assert_int_equal(report_failing_at(b, NULL, &e), 0);
  static const char *const names[] = {"diff.json", "diff.html"};
  for (int f = 0; f < 2; f++) {
    memset(&e, 0, sizeof e);
    fail_name = names[f];
    assert_int_equal(mpprof_diff_generate(a, b, out, NULL, &e), -1);
    fail_name = NULL;
    assert_int_equal(e.errnum, ENOSPC);
    if (!strstr(e.message, names[f])) fail_msg("failing %s, error: %s", names[f], e.message);
    for (int i = 0; i < 2; i++) {
      char path[4300];
      snprintf(path, sizeof path, "%s/%s", out, names[i]);
      if (access(path, F_OK) == 0) fail_msg("failing %s left %s", names[f], names[i]);
    }
    assert_no_temporary(out);
  }
  assert_int_equal(mpprof_diff_generate(a, b, out, NULL, &e), 0);
  rg_rmdir(a);
  rg_rmdir(b);
  rg_rmdir(out);
  free(a);
  free(b);
  free(out);
}

/* The bytes this process has read so far (/proc/self/io's rchar: stdio's
 * reads too, which --wrap=read does not see); -1 when not known. */
static long long bytes_read_so_far(void) {
  FILE *f = fopen("/proc/self/io", "re");
  long long n = -1;
  if (f && fscanf(f, "rchar: %lld", &n) != 1) n = -1;
  if (f) fclose(f);
  return n;
}

/* A run's report.json that is no JSON object, of any size, is rejected by
 * diff at its first bytes (a 1 GiB garbage file was read whole into memory
 * first). Its first bytes, then a hole of 1 GiB. */
static void a_huge_garbage_report_is_rejected_by_diff_at_its_first_bytes(void **state) {
  (void)state;
  if (bytes_read_so_far() < 0) skip();
  char *a = rg_tmpdir("diffbig"), *out = rg_tmpdir("diffbigout");
  char path[4300];
  snprintf(path, sizeof path, "%s/report.json", a);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("  garbage", f);
  fclose(f);
  assert_int_equal(truncate(path, (off_t)1 << 30), 0);
  mpprof_error e = {0};
  long long before = bytes_read_so_far();
  assert_int_equal(mpprof_diff_generate(a, a, out, NULL, &e), -1);
  long long read = bytes_read_so_far() - before;
  if (!strstr(e.message, "report.json: not an mpprof report (not a JSON object)"))
    fail_msg("error: %s", e.message);
  if (read > 16ll << 20) fail_msg("%lld bytes read of a garbage report.json", read);
  rg_rmdir(a);
  rg_rmdir(out);
  free(a);
  free(out);
}

/* Two processes with the same site, 100k kernels each (same names): merged
 * by name into 100k entries with summed counts. The figure printed is the
 * time of the whole report (no threshold: the bound is meson's timeout). */
static void kernels_100k_in_one_site_merge_by_name(void **state) {
  (void)state;
  enum { NK = 100000 };
  char *dir = rg_tmpdir("kernels");
  const rg_proc *procs[2] = {&P0, &P1};
  for (int p = 0; p < 2; p++) {
    rg_file r;
    char name[64];
    snprintf(name, sizeof name, "node01-%d.json", procs[p]->pid);
    assert_int_equal(rg_begin(&r, dir, name, procs[p]), 0);
    cJSON *s = rg_gemm(0, "cublasGemmEx", "net/fc/fwd", "A=fp16,B=fp16,D=fp32", "32F", "DEFAULT",
                       64, 64, 64, 1);
    for (int k = 0; k < NK; k++) {
      char kn[64];
      snprintf(kn, sizeof kn, "sm90_xmma_gemm_f16f16_f32_%d", k);
      rg_kernel(s, kn, 1, 10);
    }
    rg_site_end(&r, s);
    assert_int_equal(rg_end(&r), 0);
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  mpprof_report_options o = {.out_dir = dir, .program = NULL, .summary = NULL};
  assert_int_equal(mpprof_report_generate(&o), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  printf("report of 2 x %d kernels in one site: %.2f s\n", NK,
         (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
  cJSON *rep = rg_read_json(dir, "report.json");
  assert_non_null(rep);
  cJSON *site = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "sites"), 0);
  cJSON *ks = cJSON_GetObjectItem(site, "kernels");
  assert_int_equal(cJSON_GetArraySize(ks), NK);
  cJSON *k0 = cJSON_GetArrayItem(ks, 0);
  assert_int_equal(cJSON_GetObjectItem(k0, "count")->valuedouble, 2);
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

int main(int argc, char **argv) {
  const struct CMUnitTest files[] = {
      cmocka_unit_test(raw_file_shrinking_while_read_is_skipped_and_the_others_read),
      cmocka_unit_test(npy_file_shrinking_while_scanned_fails_with_changed),
      cmocka_unit_test(a_huge_invalid_raw_file_is_rejected_at_its_first_bad_bytes),
      cmocka_unit_test(invalid_utf8_in_a_raw_file_gives_valid_reports),
      cmocka_unit_test(terminal_escape_sequences_in_names_are_escaped_in_the_summary),
      cmocka_unit_test(a_failing_report_write_names_the_real_error),
      cmocka_unit_test(a_failing_report_file_leaves_the_previous_report_whole),
      cmocka_unit_test(report_files_reach_the_disk_before_they_replace_the_old_ones),
      cmocka_unit_test(a_failing_diff_file_leaves_neither),
      cmocka_unit_test(a_huge_garbage_report_is_rejected_by_diff_at_its_first_bytes),
  };
  const struct CMUnitTest kernels[] = {
      cmocka_unit_test(kernels_100k_in_one_site_merge_by_name),
  };
  if (argc > 1 && !strcmp(argv[1], "kernels")) return cmocka_run_group_tests(kernels, NULL, NULL);
  return cmocka_run_group_tests(files, NULL, NULL);
}
