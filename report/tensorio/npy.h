/* Tensors saved to files: NumPy .npy (format versions 1-3) and headerless raw
 * binary, memory-mapped, ready for the host scanner.
 *
 * .npy dtypes: '<f8' '<f4' '<f2' (and their '>' big-endian forms) as fp64,
 * fp32, fp16; with an explicit dtype (bf16, fp8_e4m3, fp8_e5m2, or any source
 * dtype), integer storage of the same width ('<u2', '|u1', '<i2', ...) holds the
 * raw bits, as written by `t.view(torch.int16).numpy()` or ml_dtypes users.
 * Raw binary is little-endian, C order, dtype and shape given by the caller.
 *
 * Stats do not depend on element order, so C and Fortran order are both
 * scanned as one flat buffer; big-endian data is byte-swapped chunk by chunk.
 * Errors come back as one line, "FILE: problem", in the caller's buffer. */
#ifndef MPPROF_REPORT_TENSORIO_NPY_H
#define MPPROF_REPORT_TENSORIO_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/scan.h"
#include "analysis/stats.h"

#define MPPROF_TENSOR_MAX_DIMS 64 /* NumPy's NPY_MAXDIMS */

/* Why a read of a mapped file failed with -ESTALE (it shrank while read). */
#define MPPROF_TENSOR_CHANGED_MSG "changed while being read"

/* How to read a file. Zero-initialise, then set what the user gave. */
typedef struct mpprof_tensor_spec {
  mp_dtype dtype; /* MP_DTYPE_INVALID (set it!): take it from the .npy header */
  bool raw;       /* headerless file: dtype and shape must be given */
  int ndim;
  uint64_t shape[MPPROF_TENSOR_MAX_DIMS];
} mpprof_tensor_spec;

typedef struct mpprof_tensor {
  mp_dtype dtype;
  int ndim; /* 0 for a scalar */
  uint64_t shape[MPPROF_TENSOR_MAX_DIMS];
  uint64_t count;
  bool fortran_order;
  bool byteswap;   /* stored in the other byte order than the host's */
  int npy_version; /* 1, 2, 3; 0 for raw */
  char descr[16];  /* the .npy descr as found ("<f4"); "" for raw */
  /* mpprof_npy_parse failed only because mpprof does not read the dtype
   * (descr): the header and the data's size are sound. */
  bool dtype_unread;
  const unsigned char *data; /* count * mp_dtype_size(dtype) bytes (strided: the first element) */
  /* A view with strides (PyTorch): element i0..in at data + sum(i_k * stride[k]) elements;
   * scanned through a gathering copy, or in place when it covers a block of
   * count elements (a transposed or permuted contiguous tensor). */
  bool strided;
  uint64_t stride[MPPROF_TENSOR_MAX_DIMS];
  void *map_; /* private: the mapping (NULL when parsed from memory) */
  size_t map_len_;
} mpprof_tensor;

/* A file of many named tensors (safetensors, torch.save): the tensors point
 * into the one mapping the set holds; they are scanned with
 * mpprof_tensor_scan() and never closed one by one. */
typedef struct mpprof_named_tensor {
  char *name;          /* its name in the file */
  char dtype_name[24]; /* the dtype as the file names it ("BF16", "HalfStorage") */
  mpprof_tensor t;     /* dtype MP_DTYPE_INVALID: not a format mpprof scans (listed only) */
} mpprof_named_tensor;

typedef struct mpprof_tensor_set {
  size_t n;
  mpprof_named_tensor *entries;
  void *map_; /* private: the file's mapping (NULL when parsed from memory) */
  size_t map_len_;
} mpprof_tensor_set;

/* A parser of a file format holding many tensors: the image buf of len bytes
 * into *ret (the tensors point into buf). 0, or -1 with the problem in err. */
typedef int (*mpprof_tensor_set_parser)(const void *buf, size_t len, mpprof_tensor_set *ret,
                                        char *err, size_t errlen);

/* Map the file at path and parse it with parse, reads of the mapping guarded
 * against the file shrinking; on success *ret owns the mapping. 0, or -1 with
 * "PATH: problem" in err. */
int mpprof_tensor_set_open(const char *path, mpprof_tensor_set_parser parse, mpprof_tensor_set *ret,
                           char *err, size_t errlen);

/* Frees the names and entries and unmaps the file; accepts a zeroed set. */
void mpprof_tensor_set_close(mpprof_tensor_set *s);

/* Points every tensor of s at its mapping (map, len) for the SIGBUS guard of
 * the scan, and gives the mapping to s. */
void mpprof_tensor_set_own_map(mpprof_tensor_set *s, void *map, size_t len);

/* The bytes of the file the set was read from (0 when parsed from memory). */
size_t mpprof_tensor_set_file_bytes(const mpprof_tensor_set *s);

/* For each entry i of s, into ret_first[i] (s->n of them): the first entry
 * holding the identical view (same data, dtype, byte order, shape and
 * strides: a tied weight under each of its names), whose stats are its
 * stats; i itself when no entry before it does, and for a dtype mpprof does
 * not scan. 0, or -ENOMEM. */
int mpprof_tensor_set_same_views(const mpprof_tensor_set *s, size_t *ret_first);

/* The bytes a scan of t reads: its elements times their size, a repeated
 * dimension (stride 0, an expanded tensor) read once; UINT64_MAX when that
 * overflows. */
uint64_t mpprof_tensor_scan_bytes(const mpprof_tensor *t);

/* The host's byte order (1: big-endian). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define MPPROF_HOST_BIG_ENDIAN 1
#else
#define MPPROF_HOST_BIG_ENDIAN 0
#endif

/* The tensor readers' error convention: the message formatted into err (when
 * err is given), and -1 returned. */
int mpprof_tensorio_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The unsigned little-endian integer of the n (1 to 8) bytes at b. */
uint64_t mpprof_le_uint(const unsigned char *b, int n);

/* A spec that reads .npy files with the header's dtype. */
void mpprof_tensor_spec_init(mpprof_tensor_spec *spec);

/* Parse "1024x768", "1024,768", "(1024, 768)" or "" / "()" (a scalar) into
 * spec->shape and set spec->raw. 0, or -1 with a reason in err. */
int mpprof_tensor_spec_shape(mpprof_tensor_spec *spec, const char *text, char *err, size_t errlen);

/* Does a file that starts with these bytes (len of them) start with the .npy
 * magic, "\x93NUMPY"? */
bool mpprof_npy_sniff(const void *head, size_t len);

/* Parse a .npy image in memory (the fuzz target's entry point). The tensor
 * points into buf. dtype as in the spec. 0, or -1 with the problem in err. */
int mpprof_npy_parse(const void *buf, size_t len, mp_dtype dtype, mpprof_tensor *ret, char *err,
                     size_t errlen);

/* Map a file and parse it per spec. 0, or -1 with "PATH: problem" in err.
 * On success the tensor holds the mapping until mpprof_tensor_close(). */
int mpprof_tensor_open(const char *path, const mpprof_tensor_spec *spec, mpprof_tensor *ret,
                       char *err, size_t errlen);
void mpprof_tensor_close(mpprof_tensor *t); /* accepts a closed/zeroed tensor */

/* The scanner's view of the data, when it can be scanned in place (host byte
 * order, element-aligned): Fortran order as a column-major matrix of shape[0]
 * rows, otherwise one contiguous column. -1 when it must go through
 * mpprof_tensor_scan's copying path. */
int mpprof_tensor_view(const mpprof_tensor *t, mp_view *ret);

/* Initialise *ret for t's dtype and scan every element (byte-swapping or
 * realigning in chunks when needed; a repeated dimension, stride 0, is read
 * once and its counts multiplied). 0, or a negative errno: -ESTALE when the
 * file shrank while it was read (MPPROF_TENSOR_CHANGED_MSG). */
int mpprof_tensor_scan(const mpprof_tensor *t, mp_stats *ret);
/* Elements mpprof_tensor_scan has read through its copying path (gathered,
 * byte-swapped or realigned), summed over the process: for tests. */
extern uint64_t mpprof_tensor_copied_elements;

/* The element count and byte size of a shape of elements of size bytes: 0,
 * or -1 when either overflows 64 bits (or size_t). */
int mpprof_shape_size(const uint64_t *shape, int ndim, unsigned size, uint64_t *ret_count,
                      uint64_t *ret_bytes);

/* Open and map a regular file read-only (*ret_map NULL for an empty one). 0,
 * or -1 with "PATH: problem" in err (missing, a directory, a FIFO ...). */
int mpprof_tensor_map_file(const char *path, void **ret_map, size_t *ret_len, char *err,
                           size_t errlen);

/* Run fn(arg) with reads of [map, map + len) guarded: a SIGBUS there (the
 * file shrank under its mapping) makes it return -ESTALE. */
int mpprof_tensor_guard(const void *map, size_t len, int (*fn)(void *), void *arg);

/* The bytes of the longest text mpprof_shape_format writes, its NUL
 * included: MPPROF_TENSOR_MAX_DIMS sizes of up to 20 digits, each with ", ",
 * and the parentheses. */
#define MPPROF_SHAPE_TEXT_MAX (MPPROF_TENSOR_MAX_DIMS * 22 + 4)

/* "(3, 4)", "(5,)", "()" into buf (of MPPROF_SHAPE_TEXT_MAX bytes for any
 * shape), as NumPy prints shapes. */
void mpprof_shape_format(const uint64_t *shape, int ndim, char *buf, size_t len);

/* Write a .npy file (format version 1, 2 or 3; header padded to 64 bytes).
 * descr e.g. "<f4"; data is written as is, in the descr's byte order.
 * 0, or -1 with "PATH: problem" in err. For tests and the demo generator. */
int mpprof_npy_write(const char *path, int version, const char *descr, bool fortran_order, int ndim,
                     const uint64_t *shape, const void *data, size_t nbytes, char *err,
                     size_t errlen);

#endif
