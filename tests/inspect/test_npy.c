/* The .npy / raw tensor reader: every valid form it promises to read gives the
 * same stats as scanning the values directly, and every malformed file is
 * refused with a message naming the file and the problem. Files are generated
 * here, into a private temporary directory. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "helpers.h"
#include "report/tensorio/npy.h"

/* Mixed values: specials, fp16/fp8 boundaries, an fp32 subnormal. */
static const float vals[12] = {1.0f,      -2.5f,    0.0f,  -0.0f, NAN,    INFINITY,
                               -INFINITY, 65520.0f, 1e-8f, 3e38f, 1e-45f, 448.0f};
enum { NV = 12 };

static void swap_each(void *p, size_t n, size_t size) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++, b += size)
    for (size_t x = 0, y = size - 1; x < y; x++, y--) {
      unsigned char t = b[x];
      b[x] = b[y];
      b[y] = t;
    }
}

/* vals stored as dtype (native byte order) into out; returns the element size. */
static size_t encode(mp_dtype dtype, void *out) {
  for (int i = 0; i < NV; i++)
    mp_store(dtype, out, (uint64_t)i, vals[i]);
  return mp_dtype_size(dtype);
}

static void expect_stats_of(const char *path, const mpprof_tensor_spec *spec, mp_dtype dtype,
                            const void *native, uint64_t n) {
  char err[512] = "";
  mpprof_tensor t;
  int rc = mpprof_tensor_open(path, spec, &t, err, sizeof err);
  if (rc) print_error("%s\n", err);
  assert_int_equal(rc, 0);
  assert_int_equal(t.dtype, dtype);
  assert_int_equal(t.count, n);
  mp_stats *got = malloc(sizeof *got), *want = malloc(sizeof *want);
  assert_int_equal(mpprof_tensor_scan(&t, got), 0);
  mp_stats_init(want, dtype);
  assert_int_equal(mp_scan_contiguous(want, native, n), 0);
  assert_true(stats_identical(got, want));
  free(got);
  free(want);
  mpprof_tensor_close(&t);
}

static void expect_error(const char *path, const mpprof_tensor_spec *spec, const char *problem) {
  char err[512] = "";
  mpprof_tensor t;
  assert_int_equal(mpprof_tensor_open(path, spec, &t, err, sizeof err), -1);
  /* One line, "PATH: problem". */
  assert_memory_equal(err, path, strlen(path));
  assert_int_equal(err[strlen(path)], ':');
  assert_null(strchr(err, '\n'));
  if (!strstr(err, problem)) print_error("message '%s' lacks '%s'\n", err, problem);
  assert_non_null(strstr(err, problem));
  assert_null(t.map_);
}

static mpprof_tensor_spec npy_spec(mp_dtype dtype) {
  mpprof_tensor_spec s;
  mpprof_tensor_spec_init(&s);
  s.dtype = dtype;
  return s;
}

/* A (3, 4) tensor of vals in the given descr / version / order. */
static void roundtrip(int version, const char *descr, bool big, bool fortran, mp_dtype storage,
                      mp_dtype as) {
  unsigned char native[NV * 8], file[NV * 8];
  size_t size = encode(storage, native);
  memcpy(file, native, NV * size);
  if (big) swap_each(file, NV, size);
  char dict[128];
  snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (3, 4), }", descr,
           fortran ? "True" : "False");
  const char *path = tmp_path("t.npy");
  write_npy(path, version, dict, file, NV * size);
  /* Integer storage holds raw bits: only readable with an explicit dtype. */
  const bool bits = descr[1] == 'u' || descr[1] == 'i';
  mpprof_tensor_spec spec = npy_spec(bits ? as : MP_DTYPE_INVALID);
  expect_stats_of(path, &spec, as, native, NV);
}

static void v1_little_endian_f4_c_order_is_read(void **s) {
  (void)s;
  roundtrip(1, "<f4", false, false, MP_FP32, MP_FP32);
}
static void v2_header_is_read(void **s) {
  (void)s;
  roundtrip(2, "<f4", false, false, MP_FP32, MP_FP32);
}
static void v3_header_is_read(void **s) {
  (void)s;
  roundtrip(3, "<f8", false, false, MP_FP64, MP_FP64);
}
static void big_endian_f4_is_byteswapped(void **s) {
  (void)s;
  roundtrip(1, ">f4", true, false, MP_FP32, MP_FP32);
}
static void big_endian_f8_is_byteswapped(void **s) {
  (void)s;
  roundtrip(2, ">f8", true, false, MP_FP64, MP_FP64);
}
static void big_endian_f2_is_byteswapped(void **s) {
  (void)s;
  roundtrip(1, ">f2", true, false, MP_FP16, MP_FP16);
}
static void f2_is_fp16(void **s) {
  (void)s;
  roundtrip(1, "<f2", false, false, MP_FP16, MP_FP16);
}
static void f8_is_fp64(void **s) {
  (void)s;
  roundtrip(1, "<f8", false, false, MP_FP64, MP_FP64);
}
static void fortran_order_is_read(void **s) {
  (void)s;
  roundtrip(1, "<f4", false, true, MP_FP32, MP_FP32);
}
static void fortran_order_big_endian_is_read(void **s) {
  (void)s;
  roundtrip(3, ">f2", true, true, MP_FP16, MP_FP16);
}
static void u2_with_dtype_bf16_holds_raw_bits(void **s) {
  (void)s;
  roundtrip(1, "<u2", false, false, MP_BF16, MP_BF16);
}
static void big_endian_u2_with_dtype_bf16_is_byteswapped(void **s) {
  (void)s;
  roundtrip(1, ">u2", true, false, MP_BF16, MP_BF16);
}
static void u1_with_dtype_fp8_e4m3_holds_raw_bits(void **s) {
  (void)s;
  roundtrip(1, "|u1", false, false, MP_FP8_E4M3, MP_FP8_E4M3);
}
static void i1_with_dtype_fp8_e5m2_holds_raw_bits(void **s) {
  (void)s;
  roundtrip(1, "|i1", false, false, MP_FP8_E5M2, MP_FP8_E5M2);
}
static void explicit_dtype_matching_the_header_is_accepted(void **s) {
  (void)s;
  unsigned char native[NV * 4];
  encode(MP_FP32, native);
  write_npy(tmp_path("m.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (12,), }",
            native, sizeof native);
  mpprof_tensor_spec spec = npy_spec(MP_FP32);
  expect_stats_of(tmp_path("m.npy"), &spec, MP_FP32, native, NV);
}

static void header_shape_and_flags_are_reported(void **s) {
  (void)s;
  float z[6] = {0};
  write_npy(tmp_path("h.npy"), 2,
            "{\"descr\": \"<f4\", \"fortran_order\": True, \"shape\": (2, 3)}", z, sizeof z);
  mpprof_tensor t;
  char err[256];
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  assert_int_equal(mpprof_tensor_open(tmp_path("h.npy"), &spec, &t, err, sizeof err), 0);
  assert_int_equal(t.npy_version, 2);
  assert_true(t.fortran_order);
  assert_int_equal(t.ndim, 2);
  assert_int_equal(t.shape[0], 2);
  assert_int_equal(t.shape[1], 3);
  assert_string_equal(t.descr, "<f4");
  mpprof_tensor_close(&t);
}

static void scalar_shape_holds_one_element(void **s) {
  (void)s;
  float one = 1.5f;
  write_npy(tmp_path("s.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", &one,
            sizeof one);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_stats_of(tmp_path("s.npy"), &spec, MP_FP32, &one, 1);
}

static void zero_sized_shape_has_no_elements(void **s) {
  (void)s;
  write_npy(tmp_path("z.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 5), }",
            NULL, 0);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_stats_of(tmp_path("z.npy"), &spec, MP_FP32, NULL, 0);
}

static void python2_long_suffix_in_shape_is_accepted(void **s) {
  (void)s;
  float v[2] = {1, 2};
  write_npy(tmp_path("l.npy"), 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L,), }", v,
            sizeof v);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_stats_of(tmp_path("l.npy"), &spec, MP_FP32, v, 2);
}

static void misaligned_data_is_scanned_through_a_copy(void **s) {
  (void)s;
  /* Header padded to an odd total: data starts at an odd offset. */
  unsigned char native[NV * 4];
  encode(MP_FP32, native);
  size_t len;
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (12,)}";
  unsigned char *img = npy_image(1, dict, 1, native, sizeof native, &len);
  assert_true((len - sizeof native) % 4 != 0);
  write_bytes(tmp_path("odd.npy"), img, len);
  free(img);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  uint64_t copied = mpprof_tensor_copied_elements;
  expect_stats_of(tmp_path("odd.npy"), &spec, MP_FP32, native, NV);
  assert_int_equal(mpprof_tensor_copied_elements - copied, NV);
}

/* A strided view (PyTorch) that covers a block of count elements in another
 * order (a transpose, a permutation, with dimensions of one element
 * anywhere) is scanned in place; one with gaps or overlaps is gathered.
 * Either way the record is the scan of the elements it holds. */
static void permuted_views_are_scanned_in_place_and_others_gathered(void **s) {
  (void)s;
  float buf[120];
  for (int i = 0; i < 120; i++)
    buf[i] = i % 7 == 0 ? 0.0f : (float)(i - 60) * 0.37f * (i % 3 ? 1e-4f : 1e3f);
  const struct {
    int ndim;
    uint64_t shape[4], stride[4];
    bool in_place;
  } views[] = {
      {3, {4, 5, 6}, {1, 4, 20}, true},        /* C order reversed */
      {3, {5, 4, 6}, {4, 1, 20}, true},        /* a permutation */
      {4, {6, 1, 20, 1}, {20, 7, 1, 3}, true}, /* ones anywhere, their strides any */
      {2, {4, 5}, {1, 8}, false},              /* gaps */
      {2, {3, 3}, {1, 1}, false},              /* overlaps */
      {2, {10, 12}, {12, 1}, true},            /* already C order */
  };
  mp_stats *got = malloc(sizeof *got), *want = malloc(sizeof *want);
  for (size_t k = 0; k < sizeof views / sizeof views[0]; k++) {
    mpprof_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = MP_FP32;
    t.ndim = views[k].ndim;
    t.count = 1;
    t.strided = true;
    t.data = (const unsigned char *)buf;
    float elems[120];
    for (int d = 0; d < t.ndim; d++) {
      t.shape[d] = views[k].shape[d];
      t.stride[d] = views[k].stride[d];
      t.count *= t.shape[d];
    }
    for (uint64_t i = 0; i < t.count; i++) { /* the view's elements, by a plain odometer */
      uint64_t rest = i, off = 0;
      for (int d = t.ndim - 1; d >= 0; d--) {
        off += rest % t.shape[d] * t.stride[d];
        rest /= t.shape[d];
      }
      elems[i] = buf[off];
    }
    mp_stats_init(want, MP_FP32);
    assert_int_equal(mp_scan_contiguous(want, elems, t.count), 0);
    uint64_t copied = mpprof_tensor_copied_elements;
    assert_int_equal(mpprof_tensor_scan(&t, got), 0);
    assert_true(stats_identical(got, want));
    assert_int_equal(mpprof_tensor_copied_elements - copied, views[k].in_place ? 0 : t.count);
  }
  free(got);
  free(want);
}

static void writer_output_reads_back(void **s) {
  (void)s;
  double v[NV];
  encode(MP_FP64, v);
  char err[256];
  const uint64_t shape[3] = {2, 3, 2};
  for (int version = 1; version <= 3; version++) {
    assert_int_equal(mpprof_npy_write(tmp_path("w.npy"), version, "<f8", true, 3, shape, v,
                                      sizeof v, err, sizeof err),
                     0);
    mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
    expect_stats_of(tmp_path("w.npy"), &spec, MP_FP64, v, NV);
  }
}

/* ---- raw files ---- */

static mpprof_tensor_spec raw_spec(mp_dtype dtype, const char *shape) {
  mpprof_tensor_spec s = npy_spec(dtype);
  char err[256];
  assert_int_equal(mpprof_tensor_spec_shape(&s, shape, err, sizeof err), 0);
  return s;
}

static void raw_file_with_dtype_and_shape_is_read(void **s) {
  (void)s;
  uint16_t bits[NV];
  encode(MP_BF16, bits);
  write_bytes(tmp_path("r.bin"), bits, sizeof bits);
  mpprof_tensor_spec spec = raw_spec(MP_BF16, "3x4");
  expect_stats_of(tmp_path("r.bin"), &spec, MP_BF16, bits, NV);
}

static void raw_file_of_the_wrong_size_is_refused(void **s) {
  (void)s;
  float v[NV] = {0};
  write_bytes(tmp_path("r2.bin"), v, sizeof v);
  mpprof_tensor_spec spec = raw_spec(MP_FP32, "3,5");
  expect_error(tmp_path("r2.bin"), &spec, "truncated data");
  spec = raw_spec(MP_FP32, "(2, 4)");
  expect_error(tmp_path("r2.bin"), &spec, "bytes after the data");
}

static void raw_npy_magic_is_not_special_with_shape(void **s) {
  (void)s;
  /* With --shape the file is raw even when it starts like a .npy. */
  unsigned char b[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  write_bytes(tmp_path("r3.bin"), b, sizeof b);
  mpprof_tensor_spec spec = raw_spec(MP_FP8_E4M3, "8");
  mpprof_tensor t;
  char err[256];
  assert_int_equal(mpprof_tensor_open(tmp_path("r3.bin"), &spec, &t, err, sizeof err), 0);
  assert_int_equal(t.count, 8);
  mpprof_tensor_close(&t);
}

static void shape_text_forms_are_parsed(void **s) {
  (void)s;
  mpprof_tensor_spec spec = raw_spec(MP_FP32, "1024x768");
  assert_int_equal(spec.ndim, 2);
  assert_int_equal(spec.shape[0], 1024);
  assert_int_equal(spec.shape[1], 768);
  spec = raw_spec(MP_FP32, "(2, 3, 4)");
  assert_int_equal(spec.ndim, 3);
  assert_int_equal(spec.shape[2], 4);
  spec = raw_spec(MP_FP32, "()");
  assert_int_equal(spec.ndim, 0);
  assert_true(spec.raw);
  spec = raw_spec(MP_FP32, "(7,)"); /* Python's one-tuple */
  assert_int_equal(spec.ndim, 1);
  assert_int_equal(spec.shape[0], 7);
  spec = raw_spec(MP_FP32, "[2, 3]");
  assert_int_equal(spec.ndim, 2);
}

static void bad_shape_text_is_refused(void **s) {
  (void)s;
  const char *bad[] = {"3xa",
                       "3x-4",
                       "3 4",
                       "99999999999999999999999",
                       "4294967296x4294967296",
                       "3x",
                       "",
                       "(3,4",
                       "3,4)",
                       "(3,4]",
                       "3,",
                       "(3x)",
                       "(,)"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mpprof_tensor_spec spec = npy_spec(MP_FP32);
    char err[256];
    assert_int_equal(mpprof_tensor_spec_shape(&spec, bad[i], err, sizeof err), -1);
    assert_non_null(strstr(err, bad[i]));
  }
}

/* ---- malformed files ---- */

static void write_f4_header(const char *name, int version, const char *dict, size_t nbytes) {
  unsigned char zeros[64] = {0};
  assert_true(nbytes <= sizeof zeros);
  write_npy(tmp_path(name), version, dict, zeros, nbytes);
}

static void missing_file_is_named(void **s) {
  (void)s;
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("does-not-exist.npy"), &spec, "No such file");
}

static void directory_is_refused(void **s) {
  (void)s;
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_dir, &spec, "is a directory");
}

static void empty_file_is_refused(void **s) {
  (void)s;
  write_bytes(tmp_path("empty.npy"), "", 0);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("empty.npy"), &spec, "empty file");
}

static void bad_magic_is_refused(void **s) {
  (void)s;
  write_bytes(tmp_path("magic.npy"), "\x93NUMPX\x01\x00\x10\x00", 10);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("magic.npy"), &spec, "bad magic");
}

static void file_shorter_than_the_preamble_is_refused(void **s) {
  (void)s;
  write_bytes(tmp_path("short.npy"), "\x93NUMPY\x01", 7);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("short.npy"), &spec, "truncated header");
}

static void unsupported_version_is_refused(void **s) {
  (void)s;
  write_bytes(tmp_path("v4.npy"), "\x93NUMPY\x04\x00\x00\x00\x00\x00", 12);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("v4.npy"), &spec, "version 4.0");
}

static void header_length_beyond_the_file_is_refused(void **s) {
  (void)s;
  size_t len;
  unsigned char *img = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 64,
                                 "abcd", 4, &len);
  img[8] = 0xff; /* header claims 0x??ff bytes */
  img[9] = 0x10;
  write_bytes(tmp_path("hlen.npy"), img, len);
  free(img);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("hlen.npy"), &spec, "header length 4351 exceeds");
}

static void header_length_short_of_the_dict_is_refused(void **s) {
  (void)s;
  size_t len;
  unsigned char *img = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 64,
                                 "abcd", 4, &len);
  img[8] = 20; /* the dict is cut in the middle */
  write_bytes(tmp_path("hcut.npy"), img, len);
  free(img);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("hcut.npy"), &spec, "malformed header");
}

static void truncated_data_is_refused(void **s) {
  (void)s;
  write_f4_header("trunc.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
                  44);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("trunc.npy"), &spec,
               "truncated data: shape (3, 4) of fp32 needs 48 bytes, 44 present");
}

/* The problem names the whole shape, whatever its dimensions (the text was
 * cut at 63 bytes: "(1, 1, ... 1, 1, of fp32 needs"); the shape of the
 * widest text, 64 sizes of 20 digits, fits too. */
static void a_shape_of_64_dimensions_is_named_whole(void **s) {
  (void)s;
  char shape[MPPROF_SHAPE_TEXT_MAX], dict[MPPROF_SHAPE_TEXT_MAX + 128], want[2 * sizeof shape];
  size_t n = 0;
  for (int i = 0; i < MPPROF_TENSOR_MAX_DIMS; i++)
    n += (size_t)snprintf(shape + n, sizeof shape - n, i ? ", %d" : "(%d", i < 63 ? 1 : 3);
  snprintf(shape + n, sizeof shape - n, ")");
  snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape);
  write_f4_header("dims.npy", 1, dict, 8);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  snprintf(want, sizeof want, "truncated data: shape %s of fp32 needs 12 bytes, 8 present", shape);
  expect_error(tmp_path("dims.npy"), &spec, want);
  uint64_t widest[MPPROF_TENSOR_MAX_DIMS];
  for (int i = 0; i < MPPROF_TENSOR_MAX_DIMS; i++)
    widest[i] = UINT64_MAX;
  mpprof_shape_format(widest, MPPROF_TENSOR_MAX_DIMS, shape, sizeof shape);
  assert_int_equal(strlen(shape), 1 + 64 * 20 + 63 * 2 + 1); /* not cut */
  assert_string_equal(shape + strlen(shape) - 23, ", 18446744073709551615)");
}

static void bytes_after_the_data_are_refused(void **s) {
  (void)s;
  write_f4_header("extra.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 16);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("extra.npy"), &spec, "4 bytes after the data");
}

static void shape_whose_product_overflows_is_refused(void **s) {
  (void)s;
  write_f4_header("ovf.npy", 1,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
                  0);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("ovf.npy"), &spec, "overflows");
  write_f4_header("ovf2.npy", 1,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }", 0);
  expect_error(tmp_path("ovf2.npy"), &spec, "overflows");
  write_f4_header("ovf3.npy", 1,
                  "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
                  0);
  expect_error(tmp_path("ovf3.npy"), &spec, "overflows");
}

static void unsupported_dtypes_are_refused(void **s) {
  (void)s;
  /* each header with exactly its data's bytes (one element) */
  const struct {
    const char *dict;
    size_t bytes;
  } files[] = {
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", 8},
      {"{'descr': '<f16', 'fortran_order': False, 'shape': (1,), }", 16},
      {"{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", 4},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': (1,), }", 4},
      {"{'descr': 'f4', 'fortran_order': False, 'shape': (1,), }", 4},
      {"{'descr': '<U8', 'fortran_order': False, 'shape': (1,), }", 32},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4},
  };
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    write_f4_header("dt.npy", 1, files[i].dict, files[i].bytes);
    expect_error(tmp_path("dt.npy"), &spec, "unsupported dtype");
  }
  /* NumPy's own byte strings and void items carry '|' whatever their width:
   * unread, with no word of a byte order (it said "no byte order for a
   * 4-byte type") */
  write_f4_header("dt.npy", 1, "{'descr': '|S4', 'fortran_order': False, 'shape': (2,), }", 8);
  expect_error(tmp_path("dt.npy"), &spec, ": unsupported dtype '|S4'");
  char err[512] = "";
  mpprof_tensor t;
  assert_int_equal(mpprof_tensor_open(tmp_path("dt.npy"), &spec, &t, err, sizeof err), -1);
  assert_null(strstr(err, "byte order"));
  write_f4_header("dt.npy", 1, "{'descr': '|V2', 'fortran_order': False, 'shape': (2,), }", 4);
  assert_int_equal(mpprof_tensor_open(tmp_path("dt.npy"), &spec, &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "unsupported dtype '|V2'"));
  assert_null(strstr(err, "byte order"));
  /* a file of such a dtype whose data is cut short is, first, cut short */
  write_f4_header("dt.npy", 1, files[0].dict, 4);
  expect_error(tmp_path("dt.npy"), &spec,
               "truncated data: shape (1,) of <c8 needs 8 bytes, 4 present");
}

static void explicit_dtype_contradicting_the_header_is_refused(void **s) {
  (void)s;
  write_f4_header("c.npy", 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4);
  mpprof_tensor_spec spec = npy_spec(MP_BF16);
  expect_error(tmp_path("c.npy"), &spec, "is fp32, not bf16");
  write_f4_header("c2.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 4);
  spec = npy_spec(MP_FP8_E4M3);
  expect_error(tmp_path("c2.npy"), &spec, "fp8_e4m3 needs 1");
}

static void malformed_header_dicts_are_refused(void **s) {
  (void)s;
  const char *dicts[] = {
      "'descr': '<f4', 'fortran_order': False, 'shape': (1,)",           /* not a dict */
      "{'descr': '<f4', 'fortran_order': False}",                        /* no shape */
      "{'descr': '<f4', 'shape': (1,)}",                                 /* no fortran_order */
      "{'fortran_order': False, 'shape': (1,)}",                         /* no descr */
      "{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}",             /* not a bool */
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,)}",       /* not an int */
      "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",        /* negative */
      "{'descr': '<f4', 'fortran_order': False, 'shape': 1}",            /* not a tuple */
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,}",          /* unclosed */
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", /* unknown key */
      "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", /* repeated */
      "{'descr: '<f4', 'fortran_order': False, 'shape': (1,)}",                  /* unterminated */
      "{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}",                  /* no comma */
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x",               /* trailing text */
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", /* no closing brace */
  };
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  for (size_t i = 0; i < sizeof dicts / sizeof dicts[0]; i++) {
    write_f4_header("bad.npy", 1, dicts[i], 4);
    expect_error(tmp_path("bad.npy"), &spec, "malformed header");
  }
  /* a negative size is named as such (it read "holds a non-integer") */
  write_f4_header("bad.npy", 1, dicts[6], 4);
  expect_error(tmp_path("bad.npy"), &spec, "'shape' holds a negative size");
}

static void integer_storage_without_dtype_says_how_to_read_it(void **s) {
  (void)s;
  write_f4_header("u2.npy", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 4);
  mpprof_tensor_spec spec = npy_spec(MP_DTYPE_INVALID);
  expect_error(tmp_path("u2.npy"), &spec, "--dtype bf16");
}

static void parse_from_memory_reports_problem_without_path(void **s) {
  (void)s;
  mpprof_tensor t;
  char err[256];
  assert_int_equal(mpprof_npy_parse("PK\x03\x04", 4, MP_DTYPE_INVALID, &t, err, sizeof err), -1);
  assert_non_null(strstr(err, "bad magic"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(v1_little_endian_f4_c_order_is_read),
      cmocka_unit_test(v2_header_is_read),
      cmocka_unit_test(v3_header_is_read),
      cmocka_unit_test(big_endian_f4_is_byteswapped),
      cmocka_unit_test(big_endian_f8_is_byteswapped),
      cmocka_unit_test(big_endian_f2_is_byteswapped),
      cmocka_unit_test(f2_is_fp16),
      cmocka_unit_test(f8_is_fp64),
      cmocka_unit_test(fortran_order_is_read),
      cmocka_unit_test(fortran_order_big_endian_is_read),
      cmocka_unit_test(u2_with_dtype_bf16_holds_raw_bits),
      cmocka_unit_test(big_endian_u2_with_dtype_bf16_is_byteswapped),
      cmocka_unit_test(u1_with_dtype_fp8_e4m3_holds_raw_bits),
      cmocka_unit_test(i1_with_dtype_fp8_e5m2_holds_raw_bits),
      cmocka_unit_test(explicit_dtype_matching_the_header_is_accepted),
      cmocka_unit_test(header_shape_and_flags_are_reported),
      cmocka_unit_test(scalar_shape_holds_one_element),
      cmocka_unit_test(zero_sized_shape_has_no_elements),
      cmocka_unit_test(python2_long_suffix_in_shape_is_accepted),
      cmocka_unit_test(misaligned_data_is_scanned_through_a_copy),
      cmocka_unit_test(permuted_views_are_scanned_in_place_and_others_gathered),
      cmocka_unit_test(writer_output_reads_back),
      cmocka_unit_test(raw_file_with_dtype_and_shape_is_read),
      cmocka_unit_test(raw_file_of_the_wrong_size_is_refused),
      cmocka_unit_test(raw_npy_magic_is_not_special_with_shape),
      cmocka_unit_test(shape_text_forms_are_parsed),
      cmocka_unit_test(bad_shape_text_is_refused),
      cmocka_unit_test(missing_file_is_named),
      cmocka_unit_test(directory_is_refused),
      cmocka_unit_test(empty_file_is_refused),
      cmocka_unit_test(bad_magic_is_refused),
      cmocka_unit_test(file_shorter_than_the_preamble_is_refused),
      cmocka_unit_test(unsupported_version_is_refused),
      cmocka_unit_test(header_length_beyond_the_file_is_refused),
      cmocka_unit_test(header_length_short_of_the_dict_is_refused),
      cmocka_unit_test(truncated_data_is_refused),
      cmocka_unit_test(bytes_after_the_data_are_refused),
      cmocka_unit_test(a_shape_of_64_dimensions_is_named_whole),
      cmocka_unit_test(shape_whose_product_overflows_is_refused),
      cmocka_unit_test(unsupported_dtypes_are_refused),
      cmocka_unit_test(explicit_dtype_contradicting_the_header_is_refused),
      cmocka_unit_test(malformed_header_dicts_are_refused),
      cmocka_unit_test(integer_storage_without_dtype_says_how_to_read_it),
      cmocka_unit_test(parse_from_memory_reports_problem_without_path),
  };
  return cmocka_run_group_tests(tests, make_tmp_dir, remove_tmp_dir);
}
