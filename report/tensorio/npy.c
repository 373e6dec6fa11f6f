/* .npy and raw tensor files: header parsing (a small parser for the Python
 * dict literal NumPy writes, not a Python evaluator), size checks against the
 * file, memory mapping, and the scan with byte-swapping when needed.
 *
 * Every check that can fail on a hostile file fails with a message; nothing is
 * read outside the buffer (the fuzz target in tests/fuzz holds us to it). */
#include "npy.h"

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/formats.h"

static const unsigned char npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

int mpprof_tensorio_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

uint64_t mpprof_le_uint(const unsigned char *b, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | b[i];
  return v;
}

void mpprof_tensor_spec_init(mpprof_tensor_spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->dtype = MP_DTYPE_INVALID;
}

void mpprof_shape_format(const uint64_t *shape, int ndim, char *buf, size_t len) {
  size_t n = 0;
  if (!len) return;
  buf[0] = '\0';
#define PUT(...)                                                                                   \
  do {                                                                                             \
    if (n < len) n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__);                             \
  } while (0)
  PUT("(");
  for (int i = 0; i < ndim; i++)
    PUT(i ? ", %" PRIu64 : "%" PRIu64, shape[i]);
  PUT(ndim == 1 ? ",)" : ")");
#undef PUT
}

/* count = product of shape, bytes = count * size; -1 on overflow of either. */
int mpprof_shape_size(const uint64_t *shape, int ndim, unsigned size, uint64_t *ret_count,
                      uint64_t *ret_bytes) {
  uint64_t count = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] && count > UINT64_MAX / shape[i]) return -1;
    count *= shape[i];
  }
  if (count > UINT64_MAX / size || count * size > SIZE_MAX) return -1;
  *ret_count = count;
  *ret_bytes = count * size;
  return 0;
}

/* A shape: dimensions separated by x or commas (1024x768, 2,3), optionally
 * in parentheses or brackets as Python writes them ((2, 3), (3,), [2, 3];
 * () is a scalar). A separator must be followed by a dimension, except a
 * comma before the closing bracket ((3,)); brackets must match. */
int mpprof_tensor_spec_shape(mpprof_tensor_spec *spec, const char *text, char *err, size_t errlen) {
  const char *p = text;
  int ndim = 0;
  while (*p == ' ')
    p++;
  char close = *p == '(' ? ')' : *p == '[' ? ']' : 0;
  if (close) p++;
  while (*p == ' ')
    p++;
  if (!close && !*p)
    return mpprof_tensorio_fail(err, errlen, "shape '%s': empty (a scalar is ())", text);
  while (*p && *p != close) {
    if (*p < '0' || *p > '9')
      return mpprof_tensorio_fail(err, errlen, "shape '%s': expected a dimension at '%s'", text, p);
    if (ndim == MPPROF_TENSOR_MAX_DIMS)
      return mpprof_tensorio_fail(err, errlen, "shape '%s': more than %d dimensions", text,
                                  MPPROF_TENSOR_MAX_DIMS);
    uint64_t d = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
      if (d > (UINT64_MAX - 9) / 10)
        return mpprof_tensorio_fail(err, errlen, "shape '%s': dimension too large", text);
      d = d * 10 + (uint64_t)(*p - '0');
    }
    spec->shape[ndim++] = d;
    while (*p == ' ')
      p++;
    if (*p == 'x' || *p == 'X' || *p == ',') {
      char sep = *p++;
      while (*p == ' ')
        p++;
      if (!*p || *p == close) {
        if (sep == ',' && close && *p == close) break; /* (3,) */
        return mpprof_tensorio_fail(err, errlen, "shape '%s': a dimension must follow '%c'", text,
                                    sep);
      }
    } else if (*p && *p != close) {
      return mpprof_tensorio_fail(err, errlen, "shape '%s': unexpected '%c'", text, *p);
    }
  }
  if (close && *p != close)
    return mpprof_tensorio_fail(err, errlen, "shape '%s': no closing '%c'", text, close);
  if (close) p++;
  while (*p == ' ')
    p++;
  if (*p) return mpprof_tensorio_fail(err, errlen, "shape '%s': trailing text '%s'", text, p);
  uint64_t count, bytes;
  if (mpprof_shape_size(spec->shape, ndim, 8, &count, &bytes) < 0)
    return mpprof_tensorio_fail(err, errlen, "shape '%s': product of dimensions overflows", text);
  spec->ndim = ndim;
  spec->raw = true;
  return 0;
}

/* ---- the header dict ---- */

typedef struct cursor {
  const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
    c->p++;
}

static bool eat(cursor *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

/* A Python string literal without escapes (NumPy never writes any). */
static int parse_str(cursor *c, char *buf, size_t len) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
  char q = *c->p++;
  size_t n = 0;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || n + 1 >= len) return -1;
    buf[n++] = *c->p++;
  }
  if (c->p >= c->end) return -1;
  c->p++;
  buf[n] = '\0';
  return 0;
}

static bool starts_with(cursor *c, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) >= n && !memcmp(c->p, word, n)) {
    c->p += n;
    return true;
  }
  return false;
}

/* A tuple (or list) of non-negative integers; Python 2 NumPy wrote "3L". */
static int parse_shape(cursor *c, mpprof_tensor *t, char *err, size_t errlen) {
  char close;
  if (eat(c, '('))
    close = ')';
  else if (eat(c, '['))
    close = ']';
  else
    return mpprof_tensorio_fail(err, errlen, "malformed header: 'shape' is not a tuple");
  t->ndim = 0;
  for (;;) {
    if (eat(c, close)) return 0;
    skip_ws(c);
    if (c->p < c->end && *c->p == '-')
      return mpprof_tensorio_fail(err, errlen, "malformed header: 'shape' holds a negative size");
    if (c->p >= c->end || *c->p < '0' || *c->p > '9')
      return mpprof_tensorio_fail(err, errlen, "malformed header: 'shape' holds a non-integer");
    if (t->ndim == MPPROF_TENSOR_MAX_DIMS)
      return mpprof_tensorio_fail(err, errlen, "unsupported shape: more than %d dimensions",
                                  MPPROF_TENSOR_MAX_DIMS);
    uint64_t d = 0;
    for (; c->p < c->end && *c->p >= '0' && *c->p <= '9'; c->p++) {
      if (d > (UINT64_MAX - 9) / 10)
        return mpprof_tensorio_fail(err, errlen, "shape overflows: a dimension exceeds 2^64");
      d = d * 10 + (uint64_t)(*c->p - '0');
    }
    if (c->p < c->end && *c->p == 'L') c->p++;
    t->shape[t->ndim++] = d;
    if (!eat(c, ',')) {
      if (eat(c, close)) return 0;
      return mpprof_tensorio_fail(err, errlen, "malformed header: 'shape' tuple not closed");
    }
  }
}

/* descr "<f4" etc. into dtype / byte order, honouring an explicit dtype. */
static int decode_descr(const char *descr, mp_dtype want, mpprof_tensor *t, char *err,
                        size_t errlen) {
  const char order = descr[0], kind = order ? descr[1] : '\0';
  char *end = NULL;
  errno = 0;
  long size =
      (order && kind && descr[2] >= '0' && descr[2] <= '9') ? strtol(descr + 2, &end, 10) : -1;
  if (size <= 0 || *end || errno || !strchr("<>|=", order))
    return mpprof_tensorio_fail(err, errlen, "unsupported dtype '%s'", descr);
  if (order == '|' && size != 1 && strchr("fiu", kind)) /* '|S4', '|V2' are sound, unread */
    return mpprof_tensorio_fail(
        err, errlen, "unsupported dtype '%s': no byte order for a %ld-byte type", descr, size);
  const bool big = order == '>' || (order == '=' && MPPROF_HOST_BIG_ENDIAN);
  t->byteswap = size > 1 && big != MPPROF_HOST_BIG_ENDIAN;
  if (kind == 'f') {
    mp_dtype d = size == 8 ? MP_FP64 : size == 4 ? MP_FP32 : size == 2 ? MP_FP16 : MP_DTYPE_INVALID;
    if (d == MP_DTYPE_INVALID)
      return mpprof_tensorio_fail(err, errlen, "unsupported dtype '%s' (float%ld)", descr,
                                  size * 8);
    if (want != MP_DTYPE_INVALID && want != d)
      return mpprof_tensorio_fail(
          err, errlen, "dtype '%s' is %s, not %s (raw bits need integer storage '%cu%u')", descr,
          mp_dtype_name(d), mp_dtype_name(want), order == '|' ? '<' : order, mp_dtype_size(want));
    t->dtype = d;
    return 0;
  }
  if (kind == 'u' || kind == 'i') {
    if (want == MP_DTYPE_INVALID)
      return mpprof_tensorio_fail(
          err, errlen,
          "unsupported dtype '%s' (integers; for raw float bits give --dtype "
          "bf16|fp8_e4m3|fp8_e5m2|fp16|fp32|fp64 of the same width)",
          descr);
    if ((long)mp_dtype_size(want) != size)
      return mpprof_tensorio_fail(err, errlen, "dtype '%s' has %ld-byte elements, %s needs %u",
                                  descr, size, mp_dtype_name(want), mp_dtype_size(want));
    t->dtype = want;
    return 0;
  }
  return mpprof_tensorio_fail(err, errlen, "unsupported dtype '%s'", descr);
}

static int parse_header(const char *text, size_t len, mp_dtype want, mpprof_tensor *t, char *err,
                        size_t errlen) {
  cursor c = {text, text + len};
  bool have_descr = false, have_order = false, have_shape = false;
  char descr[sizeof t->descr];
  if (!eat(&c, '{')) return mpprof_tensorio_fail(err, errlen, "malformed header: not a dict");
  for (;;) {
    if (eat(&c, '}')) break;
    char key[32];
    if (parse_str(&c, key, sizeof key) < 0)
      return mpprof_tensorio_fail(err, errlen, "malformed header: expected a quoted key or '}'");
    if (!eat(&c, ':'))
      return mpprof_tensorio_fail(err, errlen, "malformed header: expected ':' after '%s'", key);
    if (!strcmp(key, "descr") && !have_descr) {
      skip_ws(&c);
      if (c.p < c.end && *c.p == '[')
        return mpprof_tensorio_fail(err, errlen, "unsupported dtype: structured (record) array");
      if (parse_str(&c, descr, sizeof descr) < 0)
        return mpprof_tensorio_fail(err, errlen, "malformed header: 'descr' is not a dtype string");
      have_descr = true;
    } else if (!strcmp(key, "fortran_order") && !have_order) {
      skip_ws(&c);
      if (starts_with(&c, "True"))
        t->fortran_order = true;
      else if (starts_with(&c, "False"))
        t->fortran_order = false;
      else
        return mpprof_tensorio_fail(err, errlen,
                                    "malformed header: 'fortran_order' is not True or False");
      have_order = true;
    } else if (!strcmp(key, "shape") && !have_shape) {
      if (parse_shape(&c, t, err, errlen) < 0) return -1;
      have_shape = true;
    } else {
      return mpprof_tensorio_fail(err, errlen, "malformed header: unexpected or repeated key '%s'",
                                  key);
    }
    if (!eat(&c, ',')) {
      if (eat(&c, '}')) break;
      return mpprof_tensorio_fail(err, errlen, "malformed header: expected ',' or '}'");
    }
  }
  skip_ws(&c);
  if (c.p != c.end)
    return mpprof_tensorio_fail(err, errlen, "malformed header: text after the dict");
  if (!have_descr || !have_order || !have_shape)
    return mpprof_tensorio_fail(err, errlen, "malformed header: missing key '%s'",
                                !have_descr   ? "descr"
                                : !have_order ? "fortran_order"
                                              : "shape");
  memcpy(t->descr, descr, sizeof descr);
  return decode_descr(descr, want, t, err, errlen);
}

/* Check that exactly count * size bytes of data follow the header, for
 * elements of size bytes of the type named type. */
static int check_bytes(mpprof_tensor *t, unsigned size, const char *type, size_t avail, char *err,
                       size_t errlen) {
  uint64_t bytes;
  char shape[MPPROF_SHAPE_TEXT_MAX];
  mpprof_shape_format(t->shape, t->ndim, shape, sizeof shape);
  if (mpprof_shape_size(t->shape, t->ndim, size, &t->count, &bytes) < 0)
    return mpprof_tensorio_fail(err, errlen, "shape %s overflows: its product exceeds 2^64 bytes",
                                shape);
  if (bytes > avail)
    return mpprof_tensorio_fail(
        err, errlen, "truncated data: shape %s of %s needs %" PRIu64 " bytes, %zu present", shape,
        type, bytes, avail);
  if (bytes < avail)
    return mpprof_tensorio_fail(err, errlen,
                                "%" PRIu64 " bytes after the data: shape %s of %s needs %" PRIu64
                                " (shape or header size wrong?)",
                                (uint64_t)avail - bytes, shape, type, bytes);
  return 0;
}

static int check_data(mpprof_tensor *t, size_t avail, char *err, size_t errlen) {
  return check_bytes(t, mp_dtype_size(t->dtype), mp_dtype_name(t->dtype), avail, err, errlen);
}

/* The element size of a .npy descr (NumPy's type string: byte order, kind,
 * size) whose data is raw elements; 0 when it has none (objects) or is not
 * understood. */
static unsigned descr_item_size(const char *descr) {
  if (!descr[0] || !descr[1] || !strchr("<>|=", descr[0]) || !strchr("biufcmMSUV", descr[1]))
    return 0;
  const char kind = descr[1];
  char *end;
  errno = 0;
  const unsigned long n = strtoul(descr + 2, &end, 10);
  if (end == descr + 2 || errno || !n || n > (1ul << 20)) return 0;
  if (*end && !((kind == 'm' || kind == 'M') && *end == '[')) return 0; /* "<M8[ns]" */
  return (unsigned)(kind == 'U' ? 4 * n : n);
}

bool mpprof_npy_sniff(const void *head, size_t len) {
  return len >= sizeof npy_magic && !memcmp(head, npy_magic, sizeof npy_magic);
}

int mpprof_npy_parse(const void *buf, size_t len, mp_dtype dtype, mpprof_tensor *ret, char *err,
                     size_t errlen) {
  const unsigned char *b = buf;
  memset(ret, 0, sizeof *ret);
  ret->dtype = MP_DTYPE_INVALID;
  if (!mpprof_npy_sniff(b, len))
    return mpprof_tensorio_fail(err, errlen,
                                "bad magic: not a .npy file (raw data needs --dtype and --shape)");
  if (len < 10) return mpprof_tensorio_fail(err, errlen, "truncated header: %zu bytes", len);
  const int major = b[6], minor = b[7];
  if (major < 1 || major > 3 || minor != 0)
    return mpprof_tensorio_fail(err, errlen, "unsupported .npy format version %d.%d", major, minor);
  size_t hstart, hlen;
  if (major == 1) {
    hstart = 10;
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
  } else {
    if (len < 12) return mpprof_tensorio_fail(err, errlen, "truncated header: %zu bytes", len);
    hstart = 12;
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
  }
  if (hlen > len - hstart)
    return mpprof_tensorio_fail(err, errlen,
                                "header length %zu exceeds the file's %zu bytes after the preamble",
                                hlen, len - hstart);
  ret->npy_version = major;
  if (parse_header((const char *)b + hstart, hlen, dtype, ret, err, errlen) < 0) {
    /* A sound header of a dtype mpprof does not read: its data must still be
     * whole for the file to be sound. */
    ret->dtype_unread = ret->descr[0] && ret->dtype == MP_DTYPE_INVALID;
    const unsigned isize = ret->dtype_unread ? descr_item_size(ret->descr) : 0;
    if (isize && check_bytes(ret, isize, ret->descr, len - hstart - hlen, err, errlen) < 0)
      ret->dtype_unread = false;
    ret->count = 0;
    return -1;
  }
  ret->data = b + hstart + hlen;
  return check_data(ret, len - hstart - hlen, err, errlen);
}

/* ---- files ---- */

/* ---- a mapped file that shrinks under the reader ----
 *
 * Reading a page of a mapping beyond the file's current end raises SIGBUS
 * (np.save over the same name truncates the file first). Around the reads of
 * a map, SIGBUS at an address inside it jumps back here and the read fails
 * with -ESTALE (MPPROF_TENSOR_CHANGED_MSG); any other SIGBUS keeps its
 * default action. The reads run on the calling thread only. */
static __thread sigjmp_buf *bus_env;
static __thread const char *bus_lo, *bus_hi;

static void on_sigbus(int sig, siginfo_t *si, void *ctx) {
  (void)ctx;
  const char *a = si->si_addr;
  if (bus_env && a >= bus_lo && a < bus_hi) siglongjmp(*bus_env, 1);
  signal(sig, SIG_DFL); /* not ours: the fault repeats with the default action */
}

int mpprof_tensor_guard(const void *map, size_t len, int (*fn)(void *), void *arg) {
  struct sigaction sa = {0}, old;
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGBUS, &sa, &old) != 0) return fn(arg);
  sigjmp_buf env;
  volatile int rc = -ESTALE;
  bus_lo = map;
  bus_hi = (const char *)map + len;
  if (sigsetjmp(env, 1) == 0) {
    bus_env = &env;
    rc = fn(arg);
  }
  bus_env = NULL;
  sigaction(SIGBUS, &old, NULL);
  return rc;
}

typedef struct parse_args {
  const void *map;
  size_t size;
  mp_dtype dtype;
  mpprof_tensor *t;
  char *err;
  size_t errlen;
} parse_args;

static int guarded_parse(void *arg) {
  parse_args *p = arg;
  return mpprof_npy_parse(p->map, p->size, p->dtype, p->t, p->err, p->errlen);
}

static int open_fail(mpprof_tensor *t, const char *path, char *err, size_t errlen, int saved) {
  /* The parse step wrote "problem" into err: make it "PATH: problem". */
  if (err && errlen) {
    char *msg = strdup(err);
    snprintf(err, errlen, "%s: %s", path, msg ? msg : strerror(saved));
    free(msg);
  }
  mpprof_tensor_close(t);
  return -1;
}

int mpprof_tensor_map_file(const char *path, void **ret_map, size_t *ret_len, char *err,
                           size_t errlen) {
  *ret_map = NULL;
  *ret_len = 0;
  /* O_NONBLOCK: a FIFO must not hang the open; fstat below refuses it. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return mpprof_tensorio_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    return mpprof_tensorio_fail(err, errlen, "%s: cannot stat: %s", path, strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return mpprof_tensorio_fail(err, errlen, "%s: is a directory", path);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return mpprof_tensorio_fail(err, errlen, "%s: not a regular file", path);
  }
  const size_t size = (size_t)st.st_size;
  if (size) {
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      int e = errno;
      close(fd);
      return mpprof_tensorio_fail(err, errlen, "%s: cannot map: %s", path, strerror(e));
    }
    madvise(map, size, MADV_SEQUENTIAL);
    *ret_map = map;
    *ret_len = size;
  }
  close(fd);
  return 0;
}

int mpprof_tensor_open(const char *path, const mpprof_tensor_spec *spec, mpprof_tensor *ret,
                       char *err, size_t errlen) {
  memset(ret, 0, sizeof *ret);
  ret->dtype = MP_DTYPE_INVALID;
  if (spec->raw && !mp_dtype_scannable(spec->dtype))
    return mpprof_tensorio_fail(err, errlen, "%s: raw data needs a source dtype (--dtype)", path);
  if (mpprof_tensor_map_file(path, &ret->map_, &ret->map_len_, err, errlen) < 0) return -1;
  const size_t size = ret->map_len_;
  if (!spec->raw) {
    if (!size) return mpprof_tensorio_fail(err, errlen, "%s: empty file, not a .npy file", path);
    void *map = ret->map_;
    parse_args pa = {map, size, spec->dtype, ret, err, errlen};
    int rc = mpprof_tensor_guard(map, size, guarded_parse, &pa);
    if (rc == -ESTALE) snprintf(err, errlen, "%s", MPPROF_TENSOR_CHANGED_MSG);
    ret->map_ = map; /* parse zeroed the tensor */
    ret->map_len_ = size;
    return rc < 0 ? open_fail(ret, path, err, errlen, EINVAL) : 0;
  }
  ret->dtype = spec->dtype;
  ret->ndim = spec->ndim;
  memcpy(ret->shape, spec->shape, sizeof ret->shape);
  ret->data = ret->map_;
  if (check_data(ret, size, err, errlen) < 0) return open_fail(ret, path, err, errlen, EINVAL);
  return 0;
}

void mpprof_tensor_close(mpprof_tensor *t) {
  if (t->map_) munmap(t->map_, t->map_len_);
  t->map_ = NULL;
  t->map_len_ = 0;
  t->data = NULL;
}

void mpprof_tensor_set_close(mpprof_tensor_set *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->entries[i].name);
  free(s->entries);
  if (s->map_) munmap(s->map_, s->map_len_);
  memset(s, 0, sizeof *s);
}

typedef struct set_parse_args {
  mpprof_tensor_set_parser parse;
  const void *map;
  size_t len;
  mpprof_tensor_set *s;
  char *err;
  size_t errlen;
} set_parse_args;

static int guarded_set_parse(void *arg) {
  set_parse_args *p = arg;
  return p->parse(p->map, p->len, p->s, p->err, p->errlen);
}

int mpprof_tensor_set_open(const char *path, mpprof_tensor_set_parser parse, mpprof_tensor_set *ret,
                           char *err, size_t errlen) {
  memset(ret, 0, sizeof *ret);
  void *map;
  size_t len;
  if (mpprof_tensor_map_file(path, &map, &len, err, errlen) < 0) return -1;
  set_parse_args pa = {parse, map, len, ret, err, errlen};
  int rc = mpprof_tensor_guard(map, len, guarded_set_parse, &pa);
  if (rc < 0) {
    /* -ESTALE: the parse was cut short while it read the map; what it had
     * built may be half-linked, so it is left (lost) rather than freed. */
    char *msg = rc == -ESTALE ? NULL : strdup(err);
    snprintf(err, errlen, "%s: %s", path, msg ? msg : MPPROF_TENSOR_CHANGED_MSG);
    free(msg);
    if (rc != -ESTALE) mpprof_tensor_set_close(ret);
    if (map) munmap(map, len);
    return -1;
  }
  mpprof_tensor_set_own_map(ret, map, len);
  return 0;
}

void mpprof_tensor_set_own_map(mpprof_tensor_set *s, void *map, size_t len) {
  s->map_ = map;
  s->map_len_ = len;
  for (size_t i = 0; i < s->n; i++) {
    s->entries[i].t.map_ = map;
    s->entries[i].t.map_len_ = len;
  }
}

size_t mpprof_tensor_set_file_bytes(const mpprof_tensor_set *s) {
  return s->map_len_;
}

/* *ret: t without the dimensions it repeats (stride 0, more than one
 * element: an expanded tensor), their sizes 1. Returns how many times t
 * holds each element of *ret (1: nothing repeated). */
static uint64_t without_repeats(const mpprof_tensor *t, mpprof_tensor *ret) {
  *ret = *t;
  uint64_t k = 1;
  if (!t->strided || t->count == 0) return 1;
  for (int d = 0; d < t->ndim; d++)
    if (t->stride[d] == 0 && t->shape[d] > 1) {
      k *= t->shape[d]; /* a divisor of count: no overflow */
      ret->shape[d] = 1;
    }
  ret->count = t->count / k;
  return k;
}

/* Whether the strided view t holds exactly the count consecutive elements
 * from its first one, in some order (a transposed or permuted contiguous
 * tensor: its dimensions of more than one element, by stride, are laid out
 * as a C-order array's). The record does not depend on the order, so such a
 * view is scanned as the contiguous block it covers. */
static bool dense_in_some_order(const mpprof_tensor *t) {
  int dims[MPPROF_TENSOR_MAX_DIMS], n = 0;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] > 1) {
      int k = n++;
      for (; k > 0 && t->stride[dims[k - 1]] > t->stride[d]; k--)
        dims[k] = dims[k - 1];
      dims[k] = d;
    }
  uint64_t expect = 1; /* the product of shapes so far: at most count */
  for (int k = 0; k < n; k++) {
    if (t->stride[dims[k]] != expect) return false;
    expect *= t->shape[dims[k]];
  }
  return true;
}

uint64_t mpprof_tensor_scan_bytes(const mpprof_tensor *t) {
  mpprof_tensor r;
  without_repeats(t, &r);
  const unsigned size = mp_dtype_size(r.dtype);
  return r.count > UINT64_MAX / (size ? size : 1) ? UINT64_MAX : r.count * size;
}

typedef struct view_ref {
  const mpprof_tensor *t;
  size_t i;
} view_ref;

static int cmp_u64(uint64_t a, uint64_t b) {
  return (a > b) - (a < b);
}

/* Views in an order where identical ones are adjacent, each run in entry order. */
static int view_order(const void *x, const void *y) {
  const view_ref *p = x, *q = y;
  const mpprof_tensor *a = p->t, *b = q->t;
  int c = cmp_u64((uintptr_t)a->data, (uintptr_t)b->data);
  if (!c) c = cmp_u64((uint64_t)a->dtype, (uint64_t)b->dtype);
  if (!c) c = cmp_u64(a->byteswap, b->byteswap);
  if (!c) c = cmp_u64(a->fortran_order, b->fortran_order);
  if (!c) c = cmp_u64(a->strided, b->strided);
  if (!c) c = cmp_u64((uint64_t)a->ndim, (uint64_t)b->ndim);
  if (!c) c = cmp_u64(a->count, b->count);
  for (int k = 0; !c && k < a->ndim; k++) {
    c = cmp_u64(a->shape[k], b->shape[k]);
    if (!c && a->strided) c = cmp_u64(a->stride[k], b->stride[k]);
  }
  return c ? c : cmp_u64(p->i, q->i);
}

int mpprof_tensor_set_same_views(const mpprof_tensor_set *s, size_t *ret_first) {
  view_ref *v = malloc((s->n ? s->n : 1) * sizeof *v);
  if (!v) return -ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++) {
    ret_first[i] = i;
    if (mp_dtype_scannable(s->entries[i].t.dtype)) v[n++] = (view_ref){&s->entries[i].t, i};
  }
  qsort(v, n, sizeof *v, view_order);
  for (size_t j = 1; j < n; j++) {
    view_ref a = v[j - 1], b = v[j];
    a.i = b.i = 0; /* the views alone */
    if (!view_order(&a, &b)) ret_first[v[j].i] = ret_first[v[j - 1].i];
  }
  free(v);
  return 0;
}

int mpprof_tensor_view(const mpprof_tensor *t, mp_view *ret) {
  const unsigned size = mp_dtype_size(t->dtype);
  if (t->byteswap || t->strided || !size || (uintptr_t)t->data % size) return -1;
  memset(ret, 0, sizeof *ret);
  ret->dtype = t->dtype;
  ret->data = t->data;
  ret->batch = 1;
  if (t->fortran_order && t->ndim >= 2 && t->shape[0]) {
    ret->rows = t->shape[0];
    ret->cols = t->count / t->shape[0];
  } else {
    ret->rows = t->count;
    ret->cols = 1;
  }
  ret->ld = ret->rows ? ret->rows : 1;
  return 0;
}

static void swap_bytes(unsigned char *p, size_t n, unsigned size) {
  for (size_t i = 0; i < n; i++, p += size)
    for (unsigned a = 0, b = size - 1; a < b; a++, b--) {
      unsigned char tmp = p[a];
      p[a] = p[b];
      p[b] = tmp;
    }
}

enum { CHUNK_BYTES = 1 << 20 };

typedef struct copy_args {
  void *dst;
  const void *src;
  size_t n;
} copy_args;

static int copy_body(void *arg) {
  const copy_args *c = arg;
  memcpy(c->dst, c->src, c->n);
  return 0;
}

/* A strided view's next n elements, from the index in at (advanced), into
 * dst: an odometer over the shape, last dimension fastest. */
typedef struct gather_args {
  const mpprof_tensor *t;
  uint64_t *at; /* t->ndim indices */
  unsigned char *dst;
  size_t n;
} gather_args;

/* One run along the last dimension: n elements of size bytes, stride apart. */
static void gather_run(unsigned char *dst, const unsigned char *src, size_t n, uint64_t stride,
                       unsigned size) {
  switch (size) {
  case 1:
    for (size_t i = 0; i < n; i++)
      dst[i] = src[i * stride];
    break;
  case 2:
    for (size_t i = 0; i < n; i++)
      memcpy(dst + 2 * i, src + 2 * i * stride, 2);
    break;
  case 4:
    for (size_t i = 0; i < n; i++)
      memcpy(dst + 4 * i, src + 4 * i * stride, 4);
    break;
  default:
    for (size_t i = 0; i < n; i++)
      memcpy(dst + size * i, src + size * i * stride, size);
  }
}

static int gather_body(void *arg) {
  const gather_args *g = arg;
  const mpprof_tensor *t = g->t;
  const unsigned size = mp_dtype_size(t->dtype);
  const int last = t->ndim - 1; /* a strided tensor has a dimension */
  for (size_t done = 0; done < g->n;) {
    uint64_t off = 0;
    for (int k = 0; k < t->ndim; k++)
      off += g->at[k] * t->stride[k];
    /* the rest of this run along the last dimension, within this chunk */
    uint64_t left = t->shape[last] - g->at[last];
    size_t n = left < g->n - done ? (size_t)left : g->n - done;
    gather_run(g->dst + done * size, t->data + off * size, n, t->stride[last], size);
    done += n;
    g->at[last] += n;
    for (int k = last; k > 0 && g->at[k] == t->shape[k]; k--) {
      g->at[k] = 0;
      g->at[k - 1]++;
    }
  }
  return 0;
}

typedef struct feed_args {
  mp_scan_stream *st;
  const void *data;
  uint64_t n;
} feed_args;

static int feed_body(void *arg) {
  const feed_args *f = arg;
  mp_scan_stream_feed(f->st, f->data, f->n);
  return 0;
}

/* A contiguous mapped tensor, element-aligned, in the host's byte order is
 * scanned in place, in one pass under the SIGBUS guard: the scanner's state
 * is made before the guard and ended after it, so a longjmp out of the scan
 * leaks nothing (mp_scan_stream). Before, it was copied 1 MiB at a time into
 * a buffer and scanned from there, which took half the time of `mpprof
 * inspect` on a 1 GiB fp16 .npy (perf, Intel VM, 2026-12-04). A strided
 * view that covers a block of its storage in another order (a transpose) is
 * that block. Any other strided, a byte-swapped or a misaligned tensor is
 * still copied (gathered, swapped) in 1 MiB chunks under the guard and each
 * chunk fed to one scan outside it. Either way the record equals one pass
 * over the whole tensor. */
uint64_t mpprof_tensor_copied_elements;

int mpprof_tensor_scan(const mpprof_tensor *t, mp_stats *ret) {
  if (!mp_dtype_scannable(t->dtype)) return -EINVAL;
  mpprof_tensor once;
  const uint64_t repeats = without_repeats(t, &once);
  if (repeats > 1) {
    /* Each element once, the counts times the repeats: the same record. */
    int rc = mpprof_tensor_scan(&once, ret);
    if (rc == 0) mp_stats_repeat(ret, repeats);
    return rc;
  }
  if (t->strided && dense_in_some_order(t)) {
    once.strided = false; /* the same elements, read in storage order */
    t = &once;
  }
  mp_stats_init(ret, t->dtype);
  if (!t->count) return 0;
  mp_view v;
  const bool in_place = mpprof_tensor_view(t, &v) == 0; /* host order, element-aligned */
  if (in_place && !t->map_) return mp_scan(ret, &v);
  if (in_place) { /* the view is dense: its elements are the storage's, in any order */
    mp_scan_stream *st = mp_scan_stream_begin(ret, t->count);
    if (!st) return -ENOMEM;
    feed_args f = {st, t->data, t->count};
    int rc = mpprof_tensor_guard(t->map_, t->map_len_, feed_body, &f);
    mp_scan_stream_end(st);
    return rc;
  }
  const unsigned size = mp_dtype_size(t->dtype);
  const size_t per_chunk = CHUNK_BYTES / size;
  unsigned char *buf = aligned_alloc(64, CHUNK_BYTES);
  mp_scan_stream *st = buf ? mp_scan_stream_begin(ret, t->count) : NULL;
  if (!st) {
    free(buf);
    return -ENOMEM;
  }
  int rc = 0;
  uint64_t at[MPPROF_TENSOR_MAX_DIMS] = {0};
  for (uint64_t done = 0; done < t->count && rc == 0;) {
    size_t n = t->count - done < per_chunk ? (size_t)(t->count - done) : per_chunk;
    copy_args c = {buf, t->data + done * size, n * size};
    gather_args g = {t, at, buf, n};
    int (*body)(void *) = t->strided ? gather_body : copy_body;
    void *arg = t->strided ? (void *)&g : (void *)&c;
    rc = t->map_ ? mpprof_tensor_guard(t->map_, t->map_len_, body, arg) : body(arg);
    if (rc) break;
    if (t->byteswap) swap_bytes(buf, n, size);
    mp_scan_stream_feed(st, buf, n);
    __atomic_fetch_add(&mpprof_tensor_copied_elements, n, __ATOMIC_RELAXED);
    done += n;
  }
  mp_scan_stream_end(st);
  free(buf);
  return rc;
}

int mpprof_npy_write(const char *path, int version, const char *descr, bool fortran_order, int ndim,
                     const uint64_t *shape, const void *data, size_t nbytes, char *err,
                     size_t errlen) {
  if (version < 1 || version > 3)
    return mpprof_tensorio_fail(err, errlen, "%s: no .npy version %d", path, version);
  char shape_text[MPPROF_SHAPE_TEXT_MAX];
  mpprof_shape_format(shape, ndim, shape_text, sizeof shape_text);
  char dict[sizeof shape_text + 128];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr,
                   fortran_order ? "True" : "False", shape_text);
  const size_t pre = version == 1 ? 10 : 12;
  size_t total = pre + (size_t)n + 1; /* + '\n' */
  total = (total + 63) / 64 * 64;
  const size_t hlen = total - pre;
  if (version == 1 && hlen > 0xffff)
    return mpprof_tensorio_fail(err, errlen, "%s: header too long for v1", path);
  unsigned char *hdr = malloc(total);
  if (!hdr) return mpprof_tensorio_fail(err, errlen, "%s: out of memory", path);
  memcpy(hdr, npy_magic, sizeof npy_magic);
  hdr[6] = (unsigned char)version;
  hdr[7] = 0;
  for (size_t i = 0; i < pre - 8; i++)
    hdr[8 + i] = (unsigned char)(hlen >> (8 * i));
  memcpy(hdr + pre, dict, (size_t)n);
  memset(hdr + pre + n, ' ', total - pre - (size_t)n - 1);
  hdr[total - 1] = '\n';
  FILE *f = fopen(path, "wb");
  int rc = 0;
  if (!f) {
    rc = mpprof_tensorio_fail(err, errlen, "%s: cannot create: %s", path, strerror(errno));
  } else {
    if (fwrite(hdr, 1, total, f) != total || (nbytes && fwrite(data, 1, nbytes, f) != nbytes))
      rc = mpprof_tensorio_fail(err, errlen, "%s: write failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && rc == 0)
      rc = mpprof_tensorio_fail(err, errlen, "%s: write failed: %s", path, strerror(errno));
  }
  free(hdr);
  return rc;
}
