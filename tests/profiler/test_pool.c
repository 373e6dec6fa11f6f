/* mpprof's pool of same-size objects (profiler/mpp.h, mpp_pool): objects
 * come zeroed and aligned, never overlap across chunks, are recycled after a
 * put (zeroed again), and none of this takes memory from the program's heap. */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "profiler/mpp.h"

#define OBJ 1041 /* an odd size: rounded up to 1056 */
#define MANY 300 /* about five chunks of 64 KiB */

static bool all_zero(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return false;
  return true;
}

static void objects_are_zeroed_aligned_and_disjoint(void **state) {
  (void)state;
  static unsigned char *o[MANY];
  mpp_pool p = MPP_POOL_INIT(OBJ);
  assert_int_equal(p.size, 1056);
  for (int i = 0; i < MANY; i++) {
    o[i] = mpp_pool_get(&p);
    assert_non_null(o[i]);
    assert_int_equal((uintptr_t)o[i] % 16, 0);
    assert_true(all_zero(o[i], OBJ));
    memset(o[i], i & 0xff ? i & 0xff : 1, OBJ); /* a write past its end would show below */
  }
  for (int i = 0; i < MANY; i++)
    for (size_t b = 0; b < OBJ; b++)
      assert_int_equal(o[i][b], i & 0xff ? i & 0xff : 1);
}

static void a_put_object_comes_back_zeroed(void **state) {
  (void)state;
  mpp_pool p = MPP_POOL_INIT(OBJ);
  unsigned char *a = mpp_pool_get(&p), *b = mpp_pool_get(&p);
  memset(a, 0xa5, OBJ);
  memset(b, 0x5a, OBJ);
  mpp_pool_put(&p, a);
  mpp_pool_put(&p, NULL); /* nothing */
  unsigned char *c = mpp_pool_get(&p);
  assert_ptr_equal(c, a);
  assert_true(all_zero(c, OBJ));
  for (size_t i = 0; i < OBJ; i++)
    assert_int_equal(b[i], 0x5a); /* the other one untouched */
  unsigned char *d = mpp_pool_get(&p);
  assert_ptr_not_equal(d, a);
  assert_ptr_not_equal(d, b);
}

/* Create and destroy per call, as PyTorch does with variant packs: the
 * program's heap does not move (glibc's count of bytes in use; a sanitizer's
 * allocator reports zeros and the check holds trivially there). */
static void churn_takes_nothing_from_the_heap(void **state) {
  (void)state;
  mpp_pool p = MPP_POOL_INIT(OBJ);
  void *keep[8];
  struct mallinfo2 before = mallinfo2();
  for (int round = 0; round < 10000; round++) {
    for (int i = 0; i < 8; i++)
      assert_non_null(keep[i] = mpp_pool_get(&p));
    if (round == 0 || round == 9999) { /* eight live objects: none on the heap */
      struct mallinfo2 live = mallinfo2();
      assert_int_equal(live.uordblks, before.uordblks);
      assert_int_equal(live.hblkhd, before.hblkhd);
    }
    for (int i = 0; i < 8; i++)
      mpp_pool_put(&p, keep[i]);
  }
  /* Recycled: the eight live at once stay in the first chunk. */
  char *first = mpp_pool_get(&p);
  assert_true(p.next - first <= (ptrdiff_t)(8 * p.size));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(objects_are_zeroed_aligned_and_disjoint),
      cmocka_unit_test(a_put_object_comes_back_zeroed),
      cmocka_unit_test(churn_takes_nothing_from_the_heap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
