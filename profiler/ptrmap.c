/* The pointer-keyed table (ptrmap.h). */
#include "ptrmap.h"

#include <errno.h>
#include <stdlib.h>

/* A deleted slot: an address no caller can pass as a key of its own. */
static const char tombstone_;
#define TOMBSTONE ((const void *)&tombstone_)

uint32_t mpp_ptrmap_slot_of(const void *key, uint32_t cap) {
  uintptr_t v = (uintptr_t)key;
  v ^= v >> 17;
  v *= 0xed5ad4bbu;
  return (uint32_t)(v ^ (v >> 11)) & (cap - 1);
}

/* The slot holding key, or -1. */
static int64_t find_slot(const mpp_ptrmap *m, const void *key) {
  if (!m->cap || !key) return -1;
  uint32_t j = mpp_ptrmap_slot_of(key, m->cap);
  for (uint32_t n = 0; n < m->cap && m->slots[j].key; n++, j = (j + 1) & (m->cap - 1))
    if (m->slots[j].key == key) return j;
  return -1;
}

bool mpp_ptrmap_find(const mpp_ptrmap *m, const void *key, void **ret_val) {
  int64_t j = find_slot(m, key);
  if (j < 0) return false;
  if (ret_val) *ret_val = m->slots[j].val;
  return true;
}

void *mpp_ptrmap_get(const mpp_ptrmap *m, const void *key) {
  void *v = NULL;
  return mpp_ptrmap_find(m, key, &v) ? v : NULL;
}

/* Rebuilds without tombstones, doubling while live keys (and the one about
 * to be put) would fill more than a quarter: at least a quarter of the slots
 * are then free for puts before the next rebuild (amortised O(1)). */
static int rebuild(mpp_ptrmap *m) {
  uint32_t cap = m->cap ? m->cap : (m->min_cap ? m->min_cap : 16);
  while ((uint64_t)(m->live + 1) * 4 > cap)
    cap *= 2;
  mpp_ptrmap_slot *t = calloc(cap, sizeof *t);
  if (!t) return -ENOMEM;
  for (uint32_t i = 0; i < m->cap; i++) {
    const void *k = m->slots[i].key;
    if (!k || k == TOMBSTONE) continue;
    uint32_t j = mpp_ptrmap_slot_of(k, cap);
    while (t[j].key)
      j = (j + 1) & (cap - 1);
    t[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = t;
  m->cap = cap;
  m->used = m->live;
  return 0;
}

int mpp_ptrmap_put(mpp_ptrmap *m, const void *key, void *val) {
  if (!key) return -EINVAL;
  int64_t j = find_slot(m, key);
  if (j >= 0) {
    m->slots[j].val = val;
    return 0;
  }
  if (m->live >= m->max_live) return -ENOSPC;
  if ((uint64_t)(m->used + 1) * 2 > m->cap) {
    int r = rebuild(m);
    if (r < 0) return r;
  }
  /* The first tombstone or empty slot on key's probe path. */
  uint32_t i = mpp_ptrmap_slot_of(key, m->cap);
  while (m->slots[i].key && m->slots[i].key != TOMBSTONE)
    i = (i + 1) & (m->cap - 1);
  if (!m->slots[i].key) m->used++; /* a reused tombstone was counted already */
  m->slots[i].key = key;
  m->slots[i].val = val;
  m->live++;
  return 0;
}

bool mpp_ptrmap_del(mpp_ptrmap *m, const void *key, void **ret_val) {
  int64_t j = find_slot(m, key);
  if (j < 0) return false;
  if (ret_val) *ret_val = m->slots[j].val;
  m->slots[j].key = TOMBSTONE;
  m->slots[j].val = NULL;
  m->live--;
  return true;
}

void mpp_ptrmap_clear(mpp_ptrmap *m) {
  if (!m) return;
  free(m->slots);
  m->slots = NULL;
  m->cap = m->live = m->used = 0;
}
