/* Creating mpprof's output files safely: the one way every file mpprof writes
 * is made (libmpprof.so's raw files and checkpoints; the report's
 * report.json, report.html, layers.csv, trace.json; merge copies; any new
 * output file). libc only: it is linked into the injected library too.
 *
 * What it guarantees:
 *   - A symbolic link planted under OUT is never followed: OUT itself is
 *     opened once (the user's path, links in it followed as the user wrote
 *     it), every directory below it with O_DIRECTORY|O_NOFOLLOW through
 *     openat(), and every file through *at() calls on those descriptors.
 *   - A file is written to an unpredictable temporary ".NAME.XXXXXXXX" made
 *     with O_CREAT|O_EXCL|O_NOFOLLOW in the target directory and renamed over
 *     NAME when complete: readers see the old complete file or the new one,
 *     and a link or file planted at NAME is replaced, never written through.
 *   - The temporary's data reach the disk (fdatasync) before the rename, and
 *     the directory is synced after it: a machine that crashes or loses power
 *     leaves the old NAME or the new one, never an empty or partial NAME.
 *
 * How to use it (errors are negative errno values):
 *
 *   int out = mpp_sf_open_dir(AT_FDCWD, out_path, MPP_SF_CREATE | MPP_SF_USER_PATH);
 *   int raw = mpp_sf_open_dir(out, "raw", MPP_SF_CREATE);    // below OUT: no link followed
 *   mpp_sfile f;
 *   int err = mpp_sf_create(&f, raw, "host-42.json", 0644);
 *   if (!err) {
 *     err = mpp_sf_write_all(f.fd, buf, len);   // or fdopen(f.fd) and set f.fd = -1
 *     err = mpp_sf_commit(&f, err);             // err == 0: rename; else remove the temp
 *   }
 *   close(raw); close(out);
 *
 * report/ wraps it in mpprof_afile (a FILE *); libmpprof's raw writer uses it
 * directly. mpp_sf_is_temp_name() recognises the temporaries (for --force). */
#ifndef MPPROF_COMMON_SAFEFILE_H
#define MPPROF_COMMON_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum {
  MPP_SF_CREATE = 1,    /* create missing directories (mode 0777 & ~umask) */
  MPP_SF_USER_PATH = 2, /* the path the user gave (OUT): links in it are followed */
};

/* Opens directory `path` relative to `at` (AT_FDCWD or a directory fd) and
 * returns its descriptor (O_CLOEXEC). Without MPP_SF_USER_PATH each
 * component is opened with O_NOFOLLOW: a link gives -ELOOP or -ENOTDIR. */
int mpp_sf_open_dir(int at, const char *path, int flags);

typedef struct mpp_sfile {
  int dir; /* not owned */
  int fd;  /* the temporary, open for writing; -1 once the caller closed it */
  char tmp[256];
  char name[256];
} mpp_sfile;

/* Creates the temporary for `name` (one component) in `dir`. */
int mpp_sf_create(mpp_sfile *f, int dir, const char *name, mode_t mode);

/* Syncs (when err == 0) and closes the temporary, leaving it to be renamed;
 * f->fd is -1 after. Returns the first error (err, else the sync's or the
 * close's). A file system that cannot sync is not an error. */
int mpp_sf_close_temp(mpp_sfile *f, int err);

/* err == 0: syncs and closes the temporary (mpp_sf_close_temp; unless f->fd
 * is -1) and renames it to its name, then syncs the directory; otherwise, or
 * when that fails, removes it. Returns the first error. */
int mpp_sf_commit(mpp_sfile *f, int err);
/* mpp_sf_commit of a temporary already closed (mpp_sf_close_temp), one of a
 * set renamed together, without the directory's sync: the caller syncs each
 * directory once after the set (mpp_sf_sync_dir). */
int mpp_sf_commit_in_set(mpp_sfile *f);
/* Syncs a directory (its renames reach the disk); errors ignored: what was
 * renamed stays renamed. */
void mpp_sf_sync_dir(int dir);
/* The same as mpp_sf_commit, but never replaces an existing NAME: -EEXIST then (the temporary
 * is removed). -EINVAL where the file system cannot rename without replacing. */
int mpp_sf_commit_new(mpp_sfile *f, int err);

/* All n bytes, or a negative errno; -EFBIG, nothing written, where they
 * would pass the process's file size limit (no SIGXFSZ). */
int mpp_sf_write_all(int fd, const void *buf, size_t n);

/* Whether `name` is one of mpp_sf_create's temporaries. */
bool mpp_sf_is_temp_name(const char *name);
/* Whether entry is one of mpp_sf_create's temporaries for `name`. */
bool mpp_sf_is_temp_of(const char *entry, const char *name);
/* Removes from dir the regular files that are temporaries of one of names[n]:
 * what a writer killed before its commit left (a Ctrl-C during a report).
 * Only for a caller that alone writes those names in dir (it holds dir's
 * lock): another writer's temporary in progress would go too. */
void mpp_sf_remove_temps_of(int dir, const char *const *names, size_t n);

/* Removes `name` from `dir` only when it is a regular file (never a link's
 * target, never a directory). 0, -ENOENT, -EPERM for anything else. */
int mpp_sf_remove_regular(int dir, const char *name);

/* Renames the regular file `name` in `dir` to a new temporary name of it
 * (ret_tmp, 256 bytes; as mpp_sf_create's: readers of NAME skip it,
 * mpp_sf_is_temp_name() knows it), never replacing anything: a file kept
 * aside until it is known whether it is still wanted (mpp_sf_put_back, or
 * mpp_sf_remove_regular). Any name a file can have: one too long for the
 * temporary's form is cut there (at a character), so the caller keeps the
 * name to put it back. 0, -EPERM when not a regular file, or -errno. */
int mpp_sf_set_aside(int dir, const char *name, char *ret_tmp);
/* Renames tmp (mpp_sf_set_aside's) back to name, never replacing a file
 * made there since. 0 or -errno (-EEXIST). */
int mpp_sf_put_back(int dir, const char *tmp, const char *name);

#endif
