/* A shim that one end-to-end test preloads with libmpprof.so: the first
 * open of /proc/self/status (mpprof's seccomp check, before its raw write)
 * gets a number that already names another file, as when a thread of the
 * program closes every descriptor and opens a file of its own in between:
 * the status file is opened, closed, and $STATUS_SWAP_FILE (a file of
 * "the program's", 13 bytes) opened in its place, at the same number. At
 * exit (after mpprof's exit handler: shared objects' destructors run last)
 * it writes to $STATUS_SWAP_OUT what became of that file: "intact", "closed"
 * (someone closed the program's descriptor) or "moved N" (its offset moved
 * to N: someone read it). */
/* Both names defined here: without the redirection of open to open64. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int swapped_fd = -1;
static ino_t swapped_ino;

/* open and open64 are one call on 64-bit Linux: both go to libc's open64. */
static int swap_open(const char *path, int flags, mode_t mode) {
  static int (*real_)(const char *, int, ...);
  if (!real_) real_ = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
  if (!real_) {
    errno = ENOSYS;
    return -1;
  }
  int fd = real_(path, flags, mode);
  const char *file = getenv("STATUS_SWAP_FILE");
  if (fd < 0 || swapped_fd >= 0 || !file || strcmp(path, "/proc/self/status") != 0) return fd;
  close(fd);
  int mine = real_(file, O_RDWR | O_CLOEXEC, 0);
  if (mine != fd) { /* not the same number: no swap to test */
    if (mine >= 0) close(mine);
    return real_(path, flags, mode);
  }
  struct stat st;
  if (fstat(mine, &st) == 0) swapped_ino = st.st_ino;
  swapped_fd = mine;
  return mine;
}

int open64(const char *path, int flags, ...) {
  va_list ap;
  va_start(ap, flags);
  mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  return swap_open(path, flags, mode);
}

int open(const char *path, int flags, ...) __attribute__((alias("open64")));

__attribute__((destructor)) static void status_swap_report(void) {
  const char *out = getenv("STATUS_SWAP_OUT");
  if (!out || swapped_fd < 0) return;
  FILE *f = fopen(out, "w");
  if (!f) return;
  struct stat st;
  off_t at = lseek(swapped_fd, 0, SEEK_CUR);
  if (at < 0 || fstat(swapped_fd, &st) != 0 || st.st_ino != swapped_ino) /* another file now */
    fputs("closed\n", f);
  else if (at != 0)
    fprintf(f, "moved %lld\n", (long long)at);
  else
    fputs("intact\n", f);
  fclose(f);
}
