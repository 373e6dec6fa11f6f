/* The host scanner: one pass over a buffer in host memory into a stats record.
 *
 * Layout is column-major as cuBLAS stores matrices: `rows` contiguous elements
 * per column, `ld` elements between column starts (ld >= rows; only the rows
 * logical elements of each column are counted), `batch` matrices
 * `batch_stride` elements apart. A contiguous vector is rows = n, cols = 1.
 * `data` is aligned to its element's size, as every tensor a library or
 * framework hands over is: the scanners read through typed pointers (mpprof
 * inspect copies a misaligned tensor from a file before scanning it). */
#ifndef MPPROF_ANALYSIS_SCAN_H
#define MPPROF_ANALYSIS_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "stats.h"

typedef struct mp_view {
  mp_dtype dtype;
  const void *data;
  uint64_t rows;
  uint64_t cols;
  uint64_t ld;
  uint64_t batch;       /* 0 is treated as 1 */
  int64_t batch_stride; /* elements, may be 0 (broadcast) */
} mp_view;

typedef enum mp_scan_impl {
  MP_SCAN_AUTO = 0,         /* fastest path the CPU supports (value by value for small views) */
  MP_SCAN_PORTABLE,         /* plain C, the reference the fast paths must match bit for bit */
  MP_SCAN_AVX2,             /* AUTO as on a CPU without AVX-512, size cut-offs included (tests,
                               benchmarks; AUTO where AVX2 is missing) */
  MP_SCAN_AVX512_NO_PLANES, /* AUTO without the bit-plane and class-plane kernels (tests,
                               benchmarks) */
} mp_scan_impl;

/* Accumulate the view's elements into s (s->dtype must equal v->dtype, or s was
 * initialised for it). Returns 0, or -EINVAL for an unscannable dtype or bad geometry. */
int mp_scan(mp_stats *s, const mp_view *v);
/* Elements of an fp8 view (e4m3, e5m2) at +-max finite of the format (the
 * values a saturating conversion clamps to); 0 for any other dtype. */
uint64_t mp_count_saturated(const mp_view *v);
/* The bit pattern of +max finite of an fp8 dtype (-max: | 0x80), -1 for any
 * other dtype: what mp_count_saturated counts, for the device scan's decoder. */
int mp_saturated_pattern(mp_dtype dtype);
int mp_scan_with(mp_stats *s, const mp_view *v, mp_scan_impl impl);
/* A scanner's workspace, for a caller that scans often (libmpprof keeps one
 * per thread): the vector paths' states, kept from one scan to the next,
 * where each scan without one allocates them and clears them whole (tens
 * of KB: most of a small view's cost). One scan at a time may use a
 * workspace; the records are the same with or without one. Made in a
 * zeroed block of mp_scan_ws_bytes() the caller owns, aligned to 64 bytes
 * (libmpprof: mapped pages, off the program's heap; nothing else to
 * release), or by mp_scan_ws_new (NULL when out of memory: scan with NULL
 * then). */
typedef struct mp_scan_ws mp_scan_ws;
size_t mp_scan_ws_bytes(void);
mp_scan_ws *mp_scan_ws_init(void *zeroed);
mp_scan_ws *mp_scan_ws_new(void);
void mp_scan_ws_free(mp_scan_ws *ws); /* one of mp_scan_ws_new (or NULL) */
int mp_scan_ws_scan(mp_scan_ws *ws, mp_stats *s, const mp_view *v, mp_scan_impl impl);
/* Shorthand for a contiguous buffer of n elements of s->dtype. */
int mp_scan_contiguous(mp_stats *s, const void *data, uint64_t n);
/* One contiguous scan fed in pieces: begin (the path is chosen for total
 * elements; NULL for an unscannable dtype or no memory), feed each piece in
 * order (it reads the data only where it holds no lock and every allocation
 * is already in the state: a SIGBUS guard may leave it by longjmp, after
 * which only end may follow), end (the counts into s, the state freed). The
 * record equals mp_scan_contiguous's over the pieces put together. */
typedef struct mp_scan_stream mp_scan_stream;
mp_scan_stream *mp_scan_stream_begin(mp_stats *s, uint64_t total);
void mp_scan_stream_feed(mp_scan_stream *st, const void *data, uint64_t n);
void mp_scan_stream_end(mp_scan_stream *st);
/* Name of the implementation MP_SCAN_AUTO picks on this CPU ("avx512", "avx2", "portable"). */
const char *mp_scan_auto_name(void);
/* Builds the per-format tables every scan uses (done by the first scan
 * otherwise: about a millisecond). Idempotent, thread-safe. */
void mp_scan_prepare(void);

#endif
