/* A table keyed by pointer (library handles, descriptors): open addressing
 * with linear probing, deletion by tombstone, load kept at most one half.
 * It holds no lock: its users already serialise updates and lookups under
 * their own mutex (which their fork handler protects).
 *
 * Memory is bounded: `max_live` keys at most (a put beyond answers -ENOSPC),
 * and the table is rebuilt without tombstones when live keys plus tombstones
 * would fill half of it, doubling when live keys would fill a quarter, so a
 * program that creates and destroys a descriptor per call keeps a small
 * table and short probes. */
#ifndef MPPROF_PROFILER_PTRMAP_H
#define MPPROF_PROFILER_PTRMAP_H

#include <stdbool.h>
#include <stdint.h>

typedef struct mpp_ptrmap_slot {
  const void *key; /* NULL empty; mpp_ptrmap's tombstone marks a deleted one */
  void *val;
} mpp_ptrmap_slot;

typedef struct mpp_ptrmap {
  mpp_ptrmap_slot *slots;
  uint32_t cap;      /* a power of two; 0 until the first put */
  uint32_t live;     /* keys present */
  uint32_t used;     /* live keys and tombstones: a miss probes up to an empty slot */
  uint32_t min_cap;  /* first allocation (a power of two) */
  uint32_t max_live; /* most keys held at once */
} mpp_ptrmap;

#define MPP_PTRMAP_INIT(min_cap_, max_live_)                                                       \
  { .min_cap = (min_cap_), .max_live = (max_live_) }

/* The value under key and true, or false when key is absent (or NULL). */
bool mpp_ptrmap_find(const mpp_ptrmap *m, const void *key, void **ret_val);
/* The value under key, NULL when absent: for tables whose values are never NULL. */
void *mpp_ptrmap_get(const mpp_ptrmap *m, const void *key);
/* Sets key's value (replacing it when present): 0, -EINVAL for a NULL key,
 * -ENOSPC when max_live keys are held, -ENOMEM when the table cannot grow. */
int mpp_ptrmap_put(mpp_ptrmap *m, const void *key, void *val);
/* Removes key (its slot becomes a tombstone, reused by later puts): true and
 * its value in *ret_val (when not NULL) if it was present. */
bool mpp_ptrmap_del(mpp_ptrmap *m, const void *key, void **ret_val);
/* Frees the slots; the map is empty and usable again. NULL is accepted. */
void mpp_ptrmap_clear(mpp_ptrmap *m);
/* The probe start of key in a table of cap slots (exposed for tests). */
uint32_t mpp_ptrmap_slot_of(const void *key, uint32_t cap);

#endif
