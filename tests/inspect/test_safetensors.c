/* The safetensors reader: every tensor of a valid file reads back with the
 * stats of its values scanned directly (whatever its alignment), tensors of
 * other dtypes are listed and not scanned, and every malformed header is
 * refused with a message naming the file and the problem. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "helpers.h"
#include "report/tensorio/safetensors.h"

static const float vals[8] = {1.0f, -2.5f, 0.0f, NAN, 65520.0f, 1e-8f, 3e38f, -448.0f};

/* A safetensors image: the 8-byte length, the header text padded with pad
 * spaces, then data. Caller frees. */
static unsigned char *image(const char *header, size_t pad, const void *data, size_t nbytes,
                            size_t *ret_len) {
  size_t h = strlen(header) + pad;
  unsigned char *b = malloc(8 + h + nbytes + 1);
  for (int i = 0; i < 8; i++)
    b[i] = (unsigned char)((uint64_t)h >> (8 * i));
  memcpy(b + 8, header, strlen(header));
  memset(b + 8 + strlen(header), ' ', pad);
  if (nbytes) memcpy(b + 8 + h, data, nbytes);
  *ret_len = 8 + h + nbytes;
  return b;
}

static void expect_same_stats(const mpprof_tensor *t, mp_dtype dtype, const void *native,
                              uint64_t n) {
  assert_int_equal(t->dtype, dtype);
  assert_int_equal(t->count, n);
  mp_stats *got = malloc(sizeof *got), *want = malloc(sizeof *want);
  assert_int_equal(mpprof_tensor_scan(t, got), 0);
  mp_stats_init(want, dtype);
  assert_int_equal(mp_scan_contiguous(want, native, n), 0);
  assert_true(stats_identical(got, want));
  free(got);
  free(want);
}

/* Written by mpprof_safetensors_write, read back: names in order, the file's
 * dtype names, shapes, an integer tensor listed but not scannable, and each
 * float tensor's stats equal to a direct scan. */
static void a_written_file_reads_back_tensor_by_tensor(void **s) {
  (void)s;
  float f32[8];
  uint16_t bf16[8], f16[8];
  int64_t ids[3] = {1, 2, 3};
  double f64[8];
  for (int i = 0; i < 8; i++) {
    f32[i] = vals[i];
    mp_store(MP_BF16, bf16, (uint64_t)i, vals[i]);
    mp_store(MP_FP16, f16, (uint64_t)i, vals[i]);
    f64[i] = vals[i];
  }
  const uint64_t s24[] = {2, 4}, s8[] = {8}, s3[] = {3};
  const mpprof_st_write t[] = {
      {"layers.0.weight", "BF16", 2, s24, bf16, sizeof bf16},
      {"ids", "I64", 1, s3, ids, sizeof ids},
      {"layers.0.bias", "F32", 1, s8, f32, sizeof f32},
      {"h", "F16", 2, s24, f16, sizeof f16},
      {"d", "F64", 1, s8, f64, sizeof f64},
  };
  char err[512] = "";
  const char *path = tmp_path("w.safetensors");
  assert_int_equal(mpprof_safetensors_write(path, t, 5, err, sizeof err), 0);
  mpprof_tensor_set f;
  int rc = mpprof_safetensors_open(path, &f, err, sizeof err);
  if (rc) print_error("%s\n", err);
  assert_int_equal(rc, 0);
  assert_int_equal(f.n, 5);
  const char *names[] = {"layers.0.weight", "ids", "layers.0.bias", "h", "d"};
  for (int i = 0; i < 5; i++) {
    assert_string_equal(f.entries[i].name, names[i]);
    assert_string_equal(f.entries[i].dtype_name, t[i].dtype_name);
    assert_int_equal(f.entries[i].t.ndim, t[i].ndim);
  }
  assert_int_equal(f.entries[0].t.shape[1], 4);
  assert_int_equal(f.entries[1].t.dtype, MP_DTYPE_INVALID);
  expect_same_stats(&f.entries[0].t, MP_BF16, bf16, 8);
  expect_same_stats(&f.entries[2].t, MP_FP32, f32, 8);
  expect_same_stats(&f.entries[3].t, MP_FP16, f16, 8);
  expect_same_stats(&f.entries[4].t, MP_FP64, f64, 8);
  mpprof_tensor_set_close(&f);
}

/* A header whose length is no multiple of the element size leaves the data
 * misaligned: it is scanned through a copy, with the same stats; the
 * __metadata__ member is no tensor; FP8 dtypes are read. */
static void misaligned_data_and_metadata_and_fp8(void **s) {
  (void)s;
  float f32[8];
  uint8_t e4m3[8], e5m2[8];
  for (int i = 0; i < 8; i++) {
    f32[i] = vals[i];
    mp_store(MP_FP8_E4M3, e4m3, (uint64_t)i, vals[i]);
    mp_store(MP_FP8_E5M2, e5m2, (uint64_t)i, vals[i]);
  }
  unsigned char data[48];
  memcpy(data, f32, 32);
  memcpy(data + 32, e4m3, 8);
  memcpy(data + 40, e5m2, 8);
  const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"F32\",\"shape\":[8],"
                    "\"data_offsets\":[0,32]},\"q\":{\"shape\":[2,4],\"dtype\":\"F8_E4M3\","
                    "\"data_offsets\":[32,40]},\"r\":{\"dtype\":\"F8_E5M2\",\"shape\":[8],"
                    "\"data_offsets\":[40,48]}}";
  size_t len;
  unsigned char *img = image(hdr, 8 - strlen(hdr) % 8 + 1, data, sizeof data, &len);
  mpprof_tensor_set f;
  char err[256] = "";
  assert_int_equal(mpprof_safetensors_parse(img, len, &f, err, sizeof err), 0);
  assert_int_equal(f.n, 3);
  assert_true((uintptr_t)f.entries[0].t.data % 4 != 0);
  expect_same_stats(&f.entries[0].t, MP_FP32, f32, 8);
  expect_same_stats(&f.entries[1].t, MP_FP8_E4M3, e4m3, 8);
  expect_same_stats(&f.entries[2].t, MP_FP8_E5M2, e5m2, 8);
  mpprof_tensor_set_close(&f);
  /* a file of no tensors is a file */
  free(img);
  img = image("{}", 6, NULL, 0, &len);
  assert_int_equal(mpprof_safetensors_parse(img, len, &f, err, sizeof err), 0);
  assert_int_equal(f.n, 0);
  mpprof_tensor_set_close(&f);
  free(img);
}

static void expect_refused(const char *hdr, size_t data_len, const char *problem) {
  unsigned char data[64] = {0};
  size_t len;
  unsigned char *img = image(hdr, 0, data, data_len, &len);
  const char *path = tmp_path("bad.safetensors");
  write_bytes(path, img, len);
  free(img);
  mpprof_tensor_set f;
  char err[512] = "";
  assert_int_equal(mpprof_safetensors_open(path, &f, err, sizeof err), -1);
  assert_int_equal(f.n, 0);
  if (strncmp(err, path, strlen(path)) || !strstr(err, problem))
    fail_msg("header %s: got '%s', expected '%s: ...%s...'", hdr, err, path, problem);
}

#define T(body) "{\"t\":{" body "}}"
static void malformed_headers_are_refused_with_the_problem(void **s) {
  (void)s;
  expect_refused("[1]", 0, "not a JSON object");
  expect_refused("{\"t\":", 0, "invalid JSON");
  expect_refused("{} x", 0, "text after the header");
  expect_refused("{\"t\":3}", 0, "tensor 't': not a JSON object");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1"), 4,
                 "unknown key 'x'");
  expect_refused(T("\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]"), 4,
                 "key 'dtype' twice");
  expect_refused(T("\"dtype\":\"F32\",\"data_offsets\":[0,4]"), 4, "no 'shape'");
  expect_refused(T("\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]"), 4, "not a dtype name");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]"), 4,
                 "other than a size");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]"), 4,
                 "other than a size");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]"), 4, "begin <= end");
  /* an offset past 2^53 (or negative, or not whole) is named as such: it was
   * "not [begin, end] with begin <= end" */
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[1],"
                   "\"data_offsets\":[9007199254740994,9007199254740998]"),
                 4, "tensor 't': data_offsets holds something other than an offset in [0, 2^53]");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]"), 4,
                 "data_offsets holds something other than an offset in [0, 2^53]");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]"), 4,
                 "data_offsets is not [begin, end]");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]"), 4,
                 "truncated data: it ends at byte 8 of the data, which has 4");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]"), 4,
                 "shape (2,) of F32 needs 8 bytes, data_offsets hold 4");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]"), 4,
                 "overflows 64 bits");
  /* a size is a whole number in [0, 2^53] (past it cJSON rounds: 2^54 was
   * read and printed as is), as data_offsets are */
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,4]"), 4,
                 "tensor 't': shape holds something other than a size in [0, 2^53]");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[1e20],\"data_offsets\":[0,4]"), 4,
                 "tensor 't': shape holds something other than a size in [0, 2^53]");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[0,18014398509481984],\"data_offsets\":[0,0]"), 0,
                 "tensor 't': shape holds something other than a size in [0, 2^53]");
  expect_refused(T("\"dtype\":\"F32\",\"shape\":[9007199254740994,0],\"data_offsets\":[0,0]"), 0,
                 "tensor 't': shape holds something other than a size in [0, 2^53]");
  expect_refused("{\"t\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                 "\"t\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                 1, "tensor 't' twice");
  /* a dtype listed, not scanned, is checked whole all the same (an I64
   * tensor cut short was "skipped" with exit 0); one whose size mpprof does
   * not know is listed as it is */
  expect_refused(T("\"dtype\":\"I64\",\"shape\":[100],\"data_offsets\":[0,8]"), 8,
                 "tensor 't': shape (100,) of I64 needs 800 bytes, data_offsets hold 8");
  expect_refused(T("\"dtype\":\"BOOL\",\"shape\":[2,2],\"data_offsets\":[0,5]"), 5,
                 "shape (2, 2) of BOOL needs 4 bytes, data_offsets hold 5");
  expect_refused(T("\"dtype\":\"U16\",\"shape\":[4294967296,4294967296],"
                   "\"data_offsets\":[0,4]"),
                 4, "overflows 64 bits");
  {
    unsigned char data[8] = {0};
    size_t len;
    unsigned char *img = image("{\"a\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                               "\"b\":{\"dtype\":\"F4\",\"shape\":[100],\"data_offsets\":[8,8]}}",
                               0, data, sizeof data, &len);
    mpprof_tensor_set f;
    char err[256] = "";
    assert_int_equal(mpprof_safetensors_parse(img, len, &f, err, sizeof err), 0);
    assert_int_equal(f.n, 2);
    assert_int_equal(f.entries[0].t.dtype, MP_DTYPE_INVALID);
    assert_int_equal(f.entries[0].t.count, 0);
    assert_string_equal(f.entries[1].dtype_name, "F4");
    mpprof_tensor_set_close(&f);
    free(img);
  }
  expect_refused("{\"__metadata__\":[]}", 0, "__metadata__ is not a JSON object");
  /* a NUL in a name (cJSON would cut both at it: a duplicate 'a'); in a
   * metadata value it is harmless */
  size_t len;
  const unsigned char byte = 7;
  unsigned char *img = image("{\"__metadata__\":{\"k\\u0000\\\\\":\"v\\u0000w\"},"
                             "\"t\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
                             0, &byte, 1, &len);
  mpprof_tensor_set f;
  char err[256] = "";
  assert_int_equal(mpprof_safetensors_parse(img, len, &f, err, sizeof err), -1);
  free(img);
  img = image("{\"__metadata__\":{\"k\":\"v\\u0000w\\\\\"},"
              "\"t\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}",
              0, &byte, 1, &len);
  assert_int_equal(mpprof_safetensors_parse(img, len, &f, err, sizeof err), 0);
  assert_int_equal(f.n, 1);
  mpprof_tensor_set_close(&f);
  free(img);
  expect_refused("{\"a\\u0000x\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                 "\"a\\u0000y\" :{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[1,2]}}",
                 2, "a name in the header holds a NUL character (\\u0000)");
  char many[1024] = "{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,4],\"shape\":[";
  for (int i = 0; i < MPPROF_TENSOR_MAX_DIMS + 1; i++)
    strcat(many, i ? ",1" : "1");
  strcat(many, "]}}");
  expect_refused(many, 4, "65 dimensions (at most 64)");
}

/* Tensors may not share data bytes (the format promises it, and a small
 * file of many tensors over the same bytes would scan them many times over):
 * refused naming both; a tensor of no bytes overlaps nothing. */
#define F32_AT(name, n, b, e)                                                                      \
  "\"" name "\":{\"dtype\":\"F32\",\"shape\":[" #n "],\"data_offsets\":[" #b "," #e "]}"
/* expect_refused with the byte raw in place of each '#' of hdr. */
static void expect_refused_raw(const char *hdr, unsigned char raw, size_t data_len,
                               const char *problem) {
  unsigned char data[64] = {0};
  size_t len;
  unsigned char *img = image(hdr, 0, data, data_len, &len);
  for (size_t i = 8; i < len - data_len; i++)
    if (img[i] == '#') img[i] = raw;
  mpprof_tensor_set f;
  char err[512] = "";
  if (mpprof_safetensors_parse(img, len, &f, err, sizeof err) == 0) {
    mpprof_tensor_set_close(&f);
    fail_msg("header %s with 0x%02x for '#': read, expected '%s'", hdr, raw, problem);
  }
  if (!strstr(err, problem))
    fail_msg("header %s with 0x%02x for '#': got '%s', expected '%s'", hdr, raw, err, problem);
  free(img);
}

/* cJSON takes raw control bytes: inside a string (a raw NUL cut the name
 * "w\0evil" to a tensor 'w', read) and between tokens (as white space). JSON
 * allows neither: refused. */
static void raw_control_bytes_are_refused(void **s) {
  (void)s;
  const char *rawnul = "{\"w#evil\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  expect_refused_raw(rawnul, 0, 4, "a string in the header holds the raw control byte 0x00");
  expect_refused_raw(rawnul, 0x1f, 4, "a string in the header holds the raw control byte 0x1f");
  expect_refused_raw("{\"__metadata__\":{\"k\":\"v#\"},\"w\":{\"dtype\":\"I8\",\"shape\":[1],"
                     "\"data_offsets\":[0,1]}}",
                     '\n', 1, "the raw control byte 0x0a");
  expect_refused_raw("{\"w\":{\"dtype\":\"I8\",#\"shape\":[1],\"data_offsets\":[0,1]}}", 0x0b, 1,
                     "the header holds the raw control byte 0x0b (not JSON)");
  /* escaped, a control character is JSON (in a name, NUL aside) */
  size_t len;
  const unsigned char byte = 7;
  unsigned char *img =
      image("{\"w\\u001f\\n\":{\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 0, &byte,
            1, &len);
  mpprof_tensor_set f;
  char err[256] = "";
  assert_int_equal(mpprof_safetensors_parse(img, len, &f, err, sizeof err), 0);
  assert_string_equal(f.entries[0].name, "w\x1f\n");
  mpprof_tensor_set_close(&f);
  free(img);
}

/* Bytes cJSON allocated (counted by its hooks). */
static size_t cjson_bytes;
static void *counting_malloc(size_t n) {
  cjson_bytes += n;
  return malloc(n);
}

/* __metadata__ maps strings to strings (Hugging Face's reader refuses any
 * other value); a tensor's entry holds 3 keys and arrays of at most 64
 * values. Past that a header is refused as it is scanned, before cJSON
 * builds a tree of it: 20 MB of [0,0,...] under a metadata key made 841 MB
 * of cJSON nodes (2 bytes of text, 64 of node). */
static void a_header_that_would_build_a_large_tree_is_refused_first(void **s) {
  (void)s;
  expect_refused("{\"__metadata__\":{\"a\":[0,0,0]}}", 0,
                 "__metadata__: the value of 'a' is not a string (the format allows only strings)");
  expect_refused("{\"__metadata__\":{\"format\":\"pt\",\"b\":1}}", 0,
                 "__metadata__: the value of 'b' is not a string");
  expect_refused("{\"__metadata__\":{\"c\":{}}}", 0,
                 "__metadata__: the value of 'c' is not a string");
  expect_refused("{\"__metadata__\":{\"d\":null}}", 0,
                 "__metadata__: the value of 'd' is not a string");
  expect_refused("{\"\\u005f_metadat\\u0061__\":\"x\"}", 0, "__metadata__ is not a JSON object");
  expect_refused("{\"t\":[0,0]}", 0, "tensor 't': not a JSON object");

  /* large ones: refused with nothing built */
  const size_t n = 1 << 20;
  char *big = malloc(32 * n + 64);
  const struct {
    const char *head, *item, *tail, *problem;
  } cases[] = {
      {"{\"__metadata__\":{\"a\":[", "0,", "0]}}",
       "__metadata__: the value of 'a' is not a string"},
      {"{\"__metadata__\":{", "\"k\":0,", "\"k\":0}}",
       "__metadata__: the value of 'k' is not a string"},
      {"{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,0],\"shape\":[", "0,", "0]}}",
       "tensor 't': 1048577 dimensions (at most 64)"},
      {"{\"t\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[", "0,", "0]}}",
       "tensor 't': its entry holds an array of 1048577 values"},
      {"{\"t\":{", "\"k\":0,", "\"k\":0}}", "tensor 't': unknown key 'k'"},
  };
  cJSON_InitHooks(&(cJSON_Hooks){.malloc_fn = counting_malloc, .free_fn = free});
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    size_t at = (size_t)sprintf(big, "%s", cases[c].head);
    for (size_t i = 0; i < n; i++)
      at += (size_t)sprintf(big + at, "%s", cases[c].item);
    sprintf(big + at, "%s", cases[c].tail);
    cjson_bytes = 0;
    expect_refused(big, 0, cases[c].problem);
    if (cjson_bytes > n) fail_msg("%s...: cJSON allocated %zu bytes", cases[c].head, cjson_bytes);
  }
  /* entries that each build a tree of their own: unknown keys of arrays,
   * arrays in a shape (each within the 64-value bound) */
  const char *entries[][2] = {
      {"\"t\":{\"a0\":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]},",
       "tensor 't': unknown key 'a0'"},
      {"\"t\":{\"shape\":[[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]]},",
       "tensor 't': its entry nests an array in an array"},
  };
  for (size_t c = 0; c < sizeof entries / sizeof *entries; c++) {
    size_t at = (size_t)sprintf(big, "{");
    while (at + 200 < 16 * n)
      at += (size_t)sprintf(big + at, "%s", entries[c][0]);
    sprintf(big + at, "\"u\":{}}");
    cjson_bytes = 0;
    expect_refused(big, 0, entries[c][1]);
    if (cjson_bytes > at)
      fail_msg("%.20s...: cJSON allocated %zu bytes", entries[c][0], cjson_bytes);
  }
  cJSON_InitHooks(NULL);
  free(big);
}

/* 2^53 itself is a size (a tensor of none of them reads). */
static void a_dimension_of_2_to_the_53_is_read(void **s) {
  (void)s;
  size_t len;
  unsigned char *img =
      image(T("\"dtype\":\"F32\",\"shape\":[9007199254740992,0],\"data_offsets\":[0,0]"), 0, NULL,
            0, &len);
  mpprof_tensor_set f;
  char err[256] = "";
  assert_int_equal(mpprof_safetensors_parse(img, len, &f, err, sizeof err), 0);
  assert_int_equal(f.n, 1);
  assert_int_equal(f.entries[0].t.ndim, 2);
  assert_true(f.entries[0].t.shape[0] == UINT64_C(9007199254740992));
  assert_int_equal(f.entries[0].t.count, 0);
  mpprof_tensor_set_close(&f);
  free(img);
}

static void overlapping_tensors_are_refused(void **s) {
  (void)s;
  expect_refused("{" F32_AT("a", 2, 0, 8) "," F32_AT("b", 2, 4, 12) "}", 12,
                 "tensors 'a' and 'b' overlap (data_offsets [0, 8] and [4, 12])");
  expect_refused("{" F32_AT("b", 1, 4, 8) "," F32_AT("a", 3, 0, 12) "}", 12,
                 "tensors 'a' and 'b' overlap (data_offsets [0, 12] and [4, 8])");
  expect_refused("{" F32_AT("x", 1, 0, 4) "," F32_AT("y", 1, 0, 4) "}", 4,
                 "tensors 'x' and 'y' overlap (data_offsets [0, 4] and [0, 4])");
  /* the overlap is found past tensors that end before it */
  expect_refused("{" F32_AT("p", 1, 0, 4) "," F32_AT("q", 2, 4, 12) "," F32_AT("r", 1, 8, 12) "}",
                 12, "tensors 'q' and 'r' overlap");
  unsigned char data[12] = {0};
  size_t len;
  unsigned char *img =
      image("{" F32_AT("a", 3, 0, 12) "," F32_AT("e", 0, 4, 4) "}", 0, data, sizeof data, &len);
  mpprof_tensor_set f;
  char err[256] = "";
  assert_int_equal(mpprof_safetensors_parse(img, len, &f, err, sizeof err), 0);
  assert_int_equal(f.n, 2);
  mpprof_tensor_set_close(&f);
  free(img);
}

/* The 8-byte length: short files, a length beyond the file or the format's
 * limit; an empty or non-regular file is named as such. */
static void a_bad_length_is_refused(void **s) {
  (void)s;
  mpprof_tensor_set f;
  char err[512];
  const unsigned char shortb[4] = {1, 0, 0, 0};
  assert_int_equal(mpprof_safetensors_parse(shortb, sizeof shortb, &f, err, sizeof err), -1);
  assert_non_null(strstr(err, "truncated: 4 bytes"));
  unsigned char b[16] = {100, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
  assert_int_equal(mpprof_safetensors_parse(b, sizeof b, &f, err, sizeof err), -1);
  assert_non_null(strstr(err, "header length 100 beyond the file (8 bytes after it)"));
  b[3] = 0x10; /* 256 MiB + 100 */
  assert_int_equal(mpprof_safetensors_parse(b, sizeof b, &f, err, sizeof err), -1);
  assert_non_null(strstr(err, "beyond the format's limit of 104857600 bytes"));
  /* a '{' after the length is safetensors whatever the length says, so that
   * the length is refused as above, not the file as a .npy */
  assert_true(mpprof_safetensors_sniff(b, sizeof b, "w.bin"));
  b[8] = 'x';
  assert_false(mpprof_safetensors_sniff(b, sizeof b, "w.bin"));
  assert_true(mpprof_safetensors_sniff(b, sizeof b, "w.safetensors"));
  assert_true(mpprof_safetensors_sniff(b, 1, "w.safetensors"));
  assert_false(mpprof_safetensors_sniff(b, 0, "w.safetensors"));
  assert_false(mpprof_safetensors_sniff(b, 8, "w.bin"));
  const unsigned char npy[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 'v', 0};
  assert_true(mpprof_npy_sniff(npy, sizeof npy));
  assert_false(mpprof_npy_sniff(b, sizeof b));
  assert_int_equal(mpprof_safetensors_open(tmp_dir, &f, err, sizeof err), -1);
  assert_non_null(strstr(err, "is a directory"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_written_file_reads_back_tensor_by_tensor),
      cmocka_unit_test(misaligned_data_and_metadata_and_fp8),
      cmocka_unit_test(malformed_headers_are_refused_with_the_problem),
      cmocka_unit_test(a_dimension_of_2_to_the_53_is_read),
      cmocka_unit_test(raw_control_bytes_are_refused),
      cmocka_unit_test(a_header_that_would_build_a_large_tree_is_refused_first),
      cmocka_unit_test(overlapping_tensors_are_refused),
      cmocka_unit_test(a_bad_length_is_refused),
  };
  return cmocka_run_group_tests(tests, make_tmp_dir, remove_tmp_dir);
}
