/* The pointer-keyed table of the hook modules (profiler/ptrmap.h): lookups,
 * replacement, deletion by tombstone and its reuse, the bound on live keys,
 * and a table that stays small under create/destroy churn. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "profiler/ptrmap.h"

/* Keys are never dereferenced: any non-NULL address will do. */
static const void *key(uintptr_t i) {
  return (const void *)(0x10000 + i * 64);
}

static void *val(uintptr_t i) {
  return (void *)(i + 1);
}

/* Two distinct keys whose probes start at the same slot of a cap-slot table. */
static void colliding_keys(uint32_t cap, const void **ret_a, const void **ret_b) {
  *ret_a = key(0);
  uint32_t s = mpp_ptrmap_slot_of(*ret_a, cap);
  for (uintptr_t i = 1;; i++)
    if (mpp_ptrmap_slot_of(key(i), cap) == s) {
      *ret_b = key(i);
      return;
    }
}

static void an_empty_map_finds_nothing(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 100);
  void *v = val(7);
  assert_false(mpp_ptrmap_find(&m, key(1), &v));
  assert_ptr_equal(v, val(7)); /* untouched on a miss */
  assert_null(mpp_ptrmap_get(&m, key(1)));
  assert_false(mpp_ptrmap_del(&m, key(1), NULL));
}

static void a_put_key_is_found_with_its_value(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 100);
  assert_int_equal(mpp_ptrmap_put(&m, key(1), val(1)), 0);
  assert_int_equal(mpp_ptrmap_put(&m, key(2), NULL), 0);
  assert_ptr_equal(mpp_ptrmap_get(&m, key(1)), val(1));
  void *v = val(9);
  assert_true(mpp_ptrmap_find(&m, key(2), &v)); /* a NULL value is still present */
  assert_null(v);
  assert_false(mpp_ptrmap_find(&m, key(3), NULL));
  mpp_ptrmap_clear(&m);
}

static void putting_a_present_key_replaces_its_value(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 1);
  assert_int_equal(mpp_ptrmap_put(&m, key(1), val(1)), 0);
  assert_int_equal(mpp_ptrmap_put(&m, key(1), val(2)), 0); /* no second key: max_live is 1 */
  assert_ptr_equal(mpp_ptrmap_get(&m, key(1)), val(2));
  assert_int_equal(m.live, 1);
  mpp_ptrmap_clear(&m);
}

static void a_null_key_is_refused(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 100);
  assert_int_equal(mpp_ptrmap_put(&m, NULL, val(1)), -EINVAL);
  assert_false(mpp_ptrmap_find(&m, NULL, NULL));
  assert_int_equal(m.live, 0);
}

static void a_deleted_key_is_gone_and_returns_its_value(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 100);
  mpp_ptrmap_put(&m, key(1), val(1));
  void *v = NULL;
  assert_true(mpp_ptrmap_del(&m, key(1), &v));
  assert_ptr_equal(v, val(1));
  assert_false(mpp_ptrmap_find(&m, key(1), NULL));
  assert_false(mpp_ptrmap_del(&m, key(1), NULL));
  assert_int_equal(m.live, 0);
  mpp_ptrmap_clear(&m);
}

/* The tombstone keeps the probe chain: a key placed after a deleted one is still found. */
static void a_key_behind_a_deleted_one_is_still_found(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 100);
  const void *a, *b;
  colliding_keys(16, &a, &b);
  mpp_ptrmap_put(&m, a, val(1));
  mpp_ptrmap_put(&m, b, val(2));
  assert_int_equal(m.cap, 16);
  mpp_ptrmap_del(&m, a, NULL);
  assert_ptr_equal(mpp_ptrmap_get(&m, b), val(2));
  mpp_ptrmap_clear(&m);
}

static void a_put_reuses_the_tombstone_on_its_probe_path(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 100);
  const void *a, *b;
  colliding_keys(16, &a, &b);
  mpp_ptrmap_put(&m, a, val(1));
  mpp_ptrmap_del(&m, a, NULL);
  assert_int_equal(m.used, 1);
  assert_int_equal(mpp_ptrmap_put(&m, b, val(2)), 0);
  assert_int_equal(m.used, 1); /* b took a's tombstone: no new slot used */
  assert_int_equal(m.live, 1);
  assert_ptr_equal(mpp_ptrmap_get(&m, b), val(2));
  assert_false(mpp_ptrmap_find(&m, a, NULL));
  mpp_ptrmap_clear(&m);
}

static void no_more_than_max_live_keys_are_held(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 3);
  for (uintptr_t i = 0; i < 3; i++)
    assert_int_equal(mpp_ptrmap_put(&m, key(i), val(i)), 0);
  assert_int_equal(mpp_ptrmap_put(&m, key(3), val(3)), -ENOSPC);
  assert_false(mpp_ptrmap_find(&m, key(3), NULL));
  assert_true(mpp_ptrmap_del(&m, key(0), NULL));
  assert_int_equal(mpp_ptrmap_put(&m, key(3), val(3)), 0); /* room again */
  assert_ptr_equal(mpp_ptrmap_get(&m, key(3)), val(3));
  mpp_ptrmap_clear(&m);
}

static void many_keys_grow_the_table_and_stay_found(void **state) {
  (void)state;
  enum { N = 20000 };
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, N);
  for (uintptr_t i = 0; i < N; i++)
    assert_int_equal(mpp_ptrmap_put(&m, key(i), val(i)), 0);
  assert_true(m.cap >= 2 * N); /* load at most one half */
  for (uintptr_t i = 0; i < N; i++)
    assert_ptr_equal(mpp_ptrmap_get(&m, key(i)), val(i));
  for (uintptr_t i = 0; i < N; i += 2)
    assert_true(mpp_ptrmap_del(&m, key(i), NULL));
  for (uintptr_t i = 0; i < N; i++)
    assert_int_equal(mpp_ptrmap_find(&m, key(i), NULL), i % 2 == 1);
  mpp_ptrmap_clear(&m);
}

/* A program creating and destroying a descriptor per call: tombstones are
 * cleared by rebuilds, the table does not grow and a miss stays cheap. */
static void create_destroy_churn_keeps_the_table_at_its_first_size(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 1000);
  mpp_ptrmap_put(&m, key(0), val(0)); /* one long-lived key */
  for (uintptr_t i = 1; i < 100000; i++) {
    assert_int_equal(mpp_ptrmap_put(&m, key(i), val(i)), 0);
    assert_true(mpp_ptrmap_del(&m, key(i), NULL));
  }
  assert_int_equal(m.cap, 16);
  assert_true(m.used * 2 <= m.cap);
  assert_ptr_equal(mpp_ptrmap_get(&m, key(0)), val(0));
  mpp_ptrmap_clear(&m);
}

static void a_cleared_map_is_empty_and_usable(void **state) {
  (void)state;
  mpp_ptrmap m = MPP_PTRMAP_INIT(16, 100);
  mpp_ptrmap_put(&m, key(1), val(1));
  mpp_ptrmap_clear(&m);
  assert_false(mpp_ptrmap_find(&m, key(1), NULL));
  assert_int_equal(mpp_ptrmap_put(&m, key(2), val(2)), 0);
  assert_ptr_equal(mpp_ptrmap_get(&m, key(2)), val(2));
  mpp_ptrmap_clear(&m);
  mpp_ptrmap_clear(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(an_empty_map_finds_nothing),
      cmocka_unit_test(a_put_key_is_found_with_its_value),
      cmocka_unit_test(putting_a_present_key_replaces_its_value),
      cmocka_unit_test(a_null_key_is_refused),
      cmocka_unit_test(a_deleted_key_is_gone_and_returns_its_value),
      cmocka_unit_test(a_key_behind_a_deleted_one_is_still_found),
      cmocka_unit_test(a_put_reuses_the_tombstone_on_its_probe_path),
      cmocka_unit_test(no_more_than_max_live_keys_are_held),
      cmocka_unit_test(many_keys_grow_the_table_and_stay_found),
      cmocka_unit_test(create_destroy_churn_keeps_the_table_at_its_first_size),
      cmocka_unit_test(a_cleared_map_is_empty_and_usable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
