/* safetensors files (Hugging Face's checkpoint format): many named tensors,
 * each scanned as one mpprof_tensor.
 *
 * Layout: an 8-byte little-endian header length N, N bytes of a JSON object
 * (each member a tensor, {"dtype": "BF16", "shape": [4096, 4096],
 * "data_offsets": [begin, end]}, offsets into the data after the header; or
 * "__metadata__", an object of strings), then the data, little-endian, C
 * order. Floating-point dtypes mpprof scans: F64 F32 F16 BF16 F8_E4M3
 * F8_E5M2. Any other dtype (integers, BOOL, F8_E8M0, complex ...) is listed
 * with dtype MP_DTYPE_INVALID and never scanned, its data still checked
 * against its shape where its element size is known. dtype_name: the file's.
 *
 * Every check that can fail on a hostile file fails with a one-line message
 * (the fuzz target in tests/fuzz holds the parser to it). */
#ifndef MPPROF_REPORT_TENSORIO_SAFETENSORS_H
#define MPPROF_REPORT_TENSORIO_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>

#include "report/tensorio/npy.h"

/* The format's own bound on the header (the reference implementation refuses
 * larger ones), which also bounds what a hostile file makes us parse. */
#define MPPROF_SAFETENSORS_MAX_HEADER (100u << 20)

/* Is a file named path that starts with these bytes (len > 0 of them), and
 * is neither a .npy (mpprof_npy_sniff) nor a zip archive, a safetensors
 * file: its 9th byte '{' (after the 8-byte header length, whatever that
 * length says), or its name ending in ".safetensors"? A file cut short or
 * with a header length beyond it is then refused as safetensors, not as a
 * .npy with a bad magic. */
bool mpprof_safetensors_sniff(const void *head, size_t len, const char *path);

/* Parse a safetensors image in memory; the tensors point into buf. 0, or -1
 * with the problem in err (nothing to free then). */
int mpprof_safetensors_parse(const void *buf, size_t len, mpprof_tensor_set *ret, char *err,
                             size_t errlen);

/* Map a file and parse it: 0, or -1 with "PATH: problem" in err.
 * mpprof_tensor_set_close() releases the set. */
int mpprof_safetensors_open(const char *path, mpprof_tensor_set *ret, char *err, size_t errlen);

/* Write a safetensors file of the given tensors (names, file dtype names,
 * shapes, data), for tests and the demo generator. 0, or -1 with
 * "PATH: problem" in err. */
typedef struct mpprof_st_write {
  const char *name, *dtype_name;
  int ndim;
  const uint64_t *shape;
  const void *data;
  size_t nbytes;
} mpprof_st_write;
int mpprof_safetensors_write(const char *path, const mpprof_st_write *t, size_t n, char *err,
                             size_t errlen);

#endif
