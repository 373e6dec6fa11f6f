/* A small streaming JSON writer into a growable memory buffer, used by the raw
 * file writer inside libmpprof.so (no cJSON in the injected library: the
 * application may carry its own copy). Commas and nesting are tracked here;
 * callers write keys and values in order. A failed allocation sets `oom` and
 * turns every later call into a no-op. A writer into a fixed buffer
 * (mpp_jw_init_fixed) never allocates, so a vfork child can use it: a value
 * that does not fit sets `oom` the same way, and mpp_jw_undo takes the
 * writer back to a mark (mpp_jw_mark) at the same depth. */
#ifndef MPPROF_PROFILER_JSONW_H
#define MPPROF_PROFILER_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MPP_JW_MAX_DEPTH 32

typedef struct mpp_jw {
  char *buf;
  size_t len, cap;
  bool oom;
  int depth;
  bool first[MPP_JW_MAX_DEPTH]; /* no value written yet at this level */
  bool after_key;
  bool fixed; /* buf is the caller's, cap bytes: never grown nor freed */
} mpp_jw;

/* Where a writer stood: its length and separator state at its depth. */
typedef struct mpp_jw_mark {
  size_t len;
  bool first, after_key;
} mpp_jw_mark;

void mpp_jw_init(mpp_jw *w);
/* Writes into buf (cap bytes, the last for the NUL kept after the text). */
void mpp_jw_init_fixed(mpp_jw *w, char *buf, size_t cap);
mpp_jw_mark mpp_jw_mark_now(const mpp_jw *w);
/* Back to m (taken at this depth): what was written since is gone, oom cleared. */
void mpp_jw_undo(mpp_jw *w, mpp_jw_mark m);
void mpp_jw_free(mpp_jw *w);
void mpp_jw_obj(mpp_jw *w);
void mpp_jw_obj_end(mpp_jw *w);
void mpp_jw_arr(mpp_jw *w);
void mpp_jw_arr_end(mpp_jw *w);
void mpp_jw_key(mpp_jw *w, const char *key);
void mpp_jw_str(mpp_jw *w, const char *s); /* NULL writes null */
void mpp_jw_int(mpp_jw *w, int64_t v);
void mpp_jw_uint(mpp_jw *w, uint64_t v);
void mpp_jw_double(mpp_jw *w, double v); /* %.17g; NaN and infinities write null */
void mpp_jw_bool(mpp_jw *w, bool v);
void mpp_jw_null(mpp_jw *w);

#endif
