/* Safe creation of output files (see safefile.h). */
#include "common/safefile.h"
#include "common/utf8.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TEMP_SUFFIX_LEN 8

/* mkdirat, then the owner's bits whatever the umask (see mpp_sf_create):
 * 0 when made, else -errno (-EEXIST included). */
static int mkdir_owned(int at, const char *path) {
  if (mkdirat(at, path, 0777) != 0) return -errno;
  /* Through a descriptor of the directory itself: a link put in its place
   * since mkdirat is not followed (O_NOFOLLOW), nor anything else changed. */
  int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) == 0 && (st.st_mode & S_IRWXU) != S_IRWXU)
    (void)fchmod(fd, (st.st_mode & 07777) | S_IRWXU);
  close(fd);
  return 0;
}

/* (the copy on the heap: this runs in exit() on the application's thread) */
static int mkdir_p(const char *path) {
  if (strlen(path) >= PATH_MAX) return -ENAMETOOLONG;
  char *tmp = strdup(path);
  if (!tmp) return -ENOMEM;
  int err = 0;
  for (char *p = tmp + 1; *p && !err; p++)
    if (*p == '/') {
      *p = '\0';
      if ((err = mkdir_owned(AT_FDCWD, tmp)) == -EEXIST) err = 0;
      *p = '/';
    }
  if (!err && (err = mkdir_owned(AT_FDCWD, tmp)) == -EEXIST) err = 0;
  free(tmp);
  return err;
}

int mpp_sf_open_dir(int at, const char *path, int flags) {
  if (!path || !*path) return -EINVAL;
  if (flags & MPP_SF_USER_PATH) {
    if (flags & MPP_SF_CREATE) {
      int err = at == AT_FDCWD || path[0] == '/' ? mkdir_p(path) : -EINVAL;
      if (err) return err;
    }
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
  }
  /* Component by component, none of them a link. */
  int cur = at;
  const char *p = path;
  if (*p == '/') return -EINVAL; /* only below a directory already opened */
  while (*p) {
    const char *slash = strchr(p, '/');
    size_t len = slash ? (size_t)(slash - p) : strlen(p);
    char comp[256];
    if (len >= sizeof comp) {
      if (cur != at) close(cur);
      return -ENAMETOOLONG;
    }
    memcpy(comp, p, len);
    comp[len] = '\0';
    p += len + (slash ? 1 : 0);
    if (len == 0 || !strcmp(comp, ".")) continue;
    if (!strcmp(comp, "..")) {
      if (cur != at) close(cur);
      return -EINVAL;
    }
    int made = flags & MPP_SF_CREATE ? mkdir_owned(cur, comp) : 0;
    if (made && made != -EEXIST) {
      if (cur != at) close(cur);
      return made;
    }
    int fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if (cur != at) close(cur);
    if (fd < 0) return -e;
    cur = fd;
  }
  return cur == at ? openat(at, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : cur;
}

/* Unpredictable characters: the kernel's generator, or (no entropy yet, or
 * an old kernel) the clock mixed with the pid and a counter; O_EXCL keeps even
 * a guessed name from being used through a planted file. */
static void random_suffix(char *out, size_t n) {
  static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char rnd[32];
  static unsigned counter;
  if (n > sizeof rnd) n = sizeof rnd;
  if (getrandom(rnd, n, GRND_NONBLOCK) != (ssize_t)n) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 16) ^
                 __atomic_add_fetch(&counter, 0x9e3779b9u, __ATOMIC_RELAXED);
    for (size_t i = 0; i < n; i++) {
      x ^= x >> 33;
      x *= 0xff51afd7ed558ccdull;
      x ^= x >> 29;
      rnd[i] = (unsigned char)x;
    }
  }
  for (size_t i = 0; i < n; i++)
    out[i] = alphabet[rnd[i] % (sizeof alphabet - 1)];
}

int mpp_sf_create(mpp_sfile *f, int dir, const char *name, mode_t mode) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  f->dir = dir;
  size_t len = strlen(name);
  if (len == 0 || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) return -EINVAL;
  if (len + TEMP_SUFFIX_LEN + 3 > sizeof f->tmp) return -ENAMETOOLONG;
  memcpy(f->name, name, len + 1);
  for (int attempt = 0; attempt < 100; attempt++) {
    char suffix[TEMP_SUFFIX_LEN + 1];
    random_suffix(suffix, TEMP_SUFFIX_LEN);
    suffix[TEMP_SUFFIX_LEN] = '\0';
    snprintf(f->tmp, sizeof f->tmp, ".%s.%s", name, suffix);
    int fd = openat(dir, f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) {
      /* The owner's bits of mode whatever the umask: libmpprof writes under
       * the profiled program's, and one without them (umask 0777) left the
       * raw file unreadable to the launcher of the same user. The group's
       * and others' bits stay the umask's. */
      struct stat st;
      mode_t own = mode & S_IRWXU;
      if (fstat(fd, &st) == 0 && (st.st_mode & own) != own)
        (void)fchmod(fd, (st.st_mode & 07777) | own);
      f->fd = fd;
      return 0;
    }
    if (errno != EEXIST) {
      int e = errno;
      f->tmp[0] = '\0';
      return -e;
    }
  }
  f->tmp[0] = '\0';
  return -EEXIST;
}

/* A file system that cannot sync (EINVAL, ENOTSUP, EROFS) gives what it
 * has: the file is written, only its durability is unknown. */
static bool sync_unsupported(int e) {
  return e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP || e == EROFS;
}

int mpp_sf_close_temp(mpp_sfile *f, int err) {
  if (f->fd < 0) return err;
  if (!err && fdatasync(f->fd) != 0 && !sync_unsupported(errno)) err = -errno;
  if (close(f->fd) != 0 && !err) err = -errno;
  f->fd = -1;
  return err;
}

static int commit(mpp_sfile *f, int err, bool replace, bool sync_dir) {
  err = mpp_sf_close_temp(f, err);
  if (!f->tmp[0]) return err ? err : -EBADF;
  if (!err) {
    int r = replace ? renameat(f->dir, f->tmp, f->dir, f->name)
                    : renameat2(f->dir, f->tmp, f->dir, f->name, RENAME_NOREPLACE);
    if (r != 0) err = -errno;
    /* the rename itself: done, whatever the directory's sync says */
    if (r == 0 && sync_dir) mpp_sf_sync_dir(f->dir);
  }
  if (err) unlinkat(f->dir, f->tmp, 0);
  f->tmp[0] = '\0';
  return err;
}

int mpp_sf_commit(mpp_sfile *f, int err) {
  return commit(f, err, true, true);
}

int mpp_sf_commit_new(mpp_sfile *f, int err) {
  return commit(f, err, false, true);
}

int mpp_sf_commit_in_set(mpp_sfile *f) {
  return commit(f, 0, true, false);
}

void mpp_sf_sync_dir(int dir) {
  (void)fsync(dir);
}

/* Writing at the file size limit (RLIMIT_FSIZE) sends SIGXFSZ, which ends a
 * process that keeps its default action: a profiled program whose limit is
 * below its raw file's size. Such a write is refused before it starts. */
static bool beyond_size_limit(int fd, size_t n) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return false;
  off_t at = lseek(fd, 0, SEEK_CUR); /* fails on a pipe, which has no size limit */
  return at >= 0 && (uint64_t)at + n > (uint64_t)rl.rlim_cur;
}

int mpp_sf_write_all(int fd, const void *buf, size_t n) {
  if (beyond_size_limit(fd, n)) return -EFBIG;
  const char *p = buf;
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (k == 0) return -EIO;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

bool mpp_sf_is_temp_name(const char *name) {
  size_t len = strlen(name);
  if (len < TEMP_SUFFIX_LEN + 3 || name[0] != '.' || name[len - TEMP_SUFFIX_LEN - 1] != '.')
    return false;
  for (size_t i = len - TEMP_SUFFIX_LEN; i < len; i++)
    if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= 'A' && name[i] <= 'Z') ||
          (name[i] >= '0' && name[i] <= '9')))
      return false;
  return true;
}

bool mpp_sf_is_temp_of(const char *entry, const char *name) {
  size_t n = strlen(name);
  return entry[0] == '.' && !strncmp(entry + 1, name, n) && entry[n + 1] == '.' &&
         strlen(entry) == n + 2 + TEMP_SUFFIX_LEN && mpp_sf_is_temp_name(entry);
}

void mpp_sf_remove_temps_of(int dir, const char *const *names, size_t n) {
  int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d) {
    if (fd >= 0) close(fd);
    return;
  }
  struct dirent *e;
  while ((e = readdir(d)))
    for (size_t i = 0; i < n; i++)
      if (mpp_sf_is_temp_of(e->d_name, names[i])) {
        mpp_sf_remove_regular(dirfd(d), e->d_name);
        break;
      }
  closedir(d);
}

/* renameat without replacing: RENAME_NOREPLACE, or where the file system
 * cannot do that (EINVAL), a rename to a name found free just before. */
static int rename_new(int dir, const char *from, const char *to) {
  if (renameat2(dir, from, dir, to, RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL) return -errno;
  struct stat st;
  if (fstatat(dir, to, &st, AT_SYMLINK_NOFOLLOW) == 0) return -EEXIST;
  return renameat(dir, from, dir, to) == 0 ? 0 : -errno;
}

int mpp_sf_set_aside(int dir, const char *name, char *ret_tmp) {
  struct stat st;
  size_t len = strlen(name);
  ret_tmp[0] = '\0';
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return -errno;
  if (!S_ISREG(st.st_mode)) return -EPERM;
  /* The name cut (at a character) where .NAME.XXXXXXXX would pass NAME_MAX:
   * the caller keeps which name it was. */
  size_t room = sizeof((mpp_sfile *)0)->tmp - TEMP_SUFFIX_LEN - 3;
  int keep = (int)mpp_utf8_cut(name, len < room ? len : room);
  for (int attempt = 0; attempt < 100; attempt++) {
    char suffix[TEMP_SUFFIX_LEN + 1];
    random_suffix(suffix, TEMP_SUFFIX_LEN);
    suffix[TEMP_SUFFIX_LEN] = '\0';
    snprintf(ret_tmp, sizeof((mpp_sfile *)0)->tmp, ".%.*s.%s", keep, name, suffix);
    int rc = rename_new(dir, name, ret_tmp);
    if (rc != -EEXIST) {
      if (rc) ret_tmp[0] = '\0';
      return rc;
    }
  }
  ret_tmp[0] = '\0';
  return -EEXIST;
}

int mpp_sf_put_back(int dir, const char *tmp, const char *name) {
  return rename_new(dir, tmp, name);
}

int mpp_sf_remove_regular(int dir, const char *name) {
  struct stat st;
  if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return -errno;
  if (!S_ISREG(st.st_mode)) return -EPERM;
  /* unlinkat never follows a link: a swap after the check removes the link. */
  return unlinkat(dir, name, 0) == 0 ? 0 : -errno;
}
