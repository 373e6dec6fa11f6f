/* `mpprof inspect` end to end: runs the built executable (argv[1]) on files
 * generated here and by gen_tensors (argv[2]), and checks what a user or a
 * script relies on: the JSON keys, the figures, the verdicts of the demo
 * tensors, one stderr line per bad file, and the exit status. */
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "analysis/convert.h"
#include "analysis/scan.h"
#include "common/utf8.h"
#include "helpers.h"
#include "report/tensorio/safetensors.h"
#include "report/tensorio/stats_json.h"

extern char **environ;

static const char *mpprof_path, *gen_path;

typedef struct run_result {
  int status; /* exit status, or -1 when killed */
  char *out, *err;
} run_result;

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = '\0';
  fclose(f);
  return b;
}

/* Run argv (NULL-terminated) with stdout to stdout_path (NULL: captured in
 * out) and stderr captured. */
static run_result run_to(char *const argv[], const char *stdout_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  char out_path[512], err_path[512];
  snprintf(out_path, sizeof out_path, "%s", tmp_path("stdout"));
  snprintf(err_path, sizeof err_path, "%s", tmp_path("stderr"));
  write_bytes(out_path, "", 0);
  posix_spawn_file_actions_addopen(&fa, 1, stdout_path ? stdout_path : out_path,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, argv[0], &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  int ws;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  run_result r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, slurp(out_path), slurp(err_path)};
  return r;
}

static run_result run(char *const argv[]) {
  return run_to(argv, NULL);
}

static void run_free(run_result *r) {
  free(r->out);
  free(r->err);
}

static int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++)
    n += *s == '\n';
  return n;
}

/* The demo tensors, generated once for the whole group. */
static int setup(void **state) {
  if (make_tmp_dir(state)) return -1;
  char *argv[] = {(char *)gen_path, tmp_dir, NULL};
  pid_t pid;
  int ws;
  if (posix_spawn(&pid, gen_path, NULL, NULL, argv, environ) || waitpid(pid, &ws, 0) != pid ||
      !WIFEXITED(ws) || WEXITSTATUS(ws))
    return -1;
  return 0;
}

static void write_small_npy(const char *name, const float *v, size_t n) {
  char dict[128];
  snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': (%zu,), }", n);
  write_npy(tmp_path(name), 1, dict, v, n * sizeof *v);
}

static const float small[6] = {1.0f, -2.0f, 0.0f, 70000.0f, 1e-9f, NAN};

static void json_object_has_exactly_the_tensor_schema_keys_in_order(void **st) {
  (void)st;
  write_small_npy("small.npy", small, 6);
  char *argv[] = {(char *)mpprof_path, "inspect", "--json", (char *)tmp_path("small.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_int_equal(count_lines(r.out), 1);
  cJSON *j = cJSON_Parse(r.out);
  assert_non_null(j);
  const char *keys[] = {"schema", "file",  "dtype",    "shape",           "count",
                        "zeros",  "nans",  "pos_infs", "neg_infs",        "negatives",
                        "min",    "max",   "absmax",   "min_abs_nonzero", "exp_hist",
                        "casts",  "advice"};
  const size_t nkeys = sizeof keys / sizeof keys[0];
  assert_int_equal(cJSON_GetArraySize(j), nkeys);
  size_t i = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, j) assert_string_equal(item->string, keys[i++]);
  assert_string_equal(cJSON_GetObjectItem(j, "schema")->valuestring, "mpprof.tensor/1");
  assert_string_equal(cJSON_GetObjectItem(j, "file")->valuestring, tmp_path("small.npy"));
  assert_string_equal(cJSON_GetObjectItem(j, "dtype")->valuestring, "fp32");
  const cJSON *shape = cJSON_GetObjectItem(j, "shape");
  assert_int_equal(cJSON_GetArraySize(shape), 1);
  assert_int_equal(cJSON_GetArrayItem(shape, 0)->valueint, 6);
  const char *adv_keys[] = {"fp16",     "loss_scale_log2", "loss_scale_estimate",
                            "fp8_e4m3", "fp8_e5m2",        "recommended"};
  const cJSON *adv = cJSON_GetObjectItem(j, "advice");
  assert_int_equal(cJSON_GetArraySize(adv), 6);
  i = 0;
  cJSON_ArrayForEach(item, adv) assert_string_equal(item->string, adv_keys[i++]);
  cJSON_Delete(j);
  run_free(&r);
}

/* A file name is bytes: one that is not UTF-8 (a Latin-1 name) must still
 * give a valid JSON line, its bad bytes replaced as in every other output. */
static void json_of_a_file_name_that_is_not_utf8_is_valid_utf8(void **st) {
  (void)st;
  write_small_npy("gr\xfc\xdf"
                  "e.npy",
                  small, 6);
  char *argv[] = {(char *)mpprof_path, "inspect", "--json",
                  (char *)tmp_path("gr\xfc\xdf"
                                   "e.npy"),
                  NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  const size_t n = strlen(r.out);
  for (size_t i = 0, k; i < n; i += k) {
    k = mpp_utf8_seq_len((const unsigned char *)r.out + i, n - i);
    assert_int_not_equal(k, 0);
  }
  cJSON *j = cJSON_Parse(r.out);
  assert_non_null(j);
  assert_string_equal(cJSON_GetObjectItem(j, "file")->valuestring, tmp_path("gr??e.npy"));
  cJSON_Delete(j);
  run_free(&r);
}

static void json_stats_equal_a_direct_scan(void **st) {
  (void)st;
  write_small_npy("small2.npy", small, 6);
  char *argv[] = {(char *)mpprof_path, "inspect", "--json", (char *)tmp_path("small2.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  cJSON *j = cJSON_Parse(r.out);
  mp_stats got, want;
  char err[256];
  assert_int_equal(mpprof_stats_from_json(j, &got, err, sizeof err), 0);
  mp_stats_init(&want, MP_FP32);
  assert_int_equal(mp_scan_contiguous(&want, small, 6), 0);
  assert_true(stats_identical(&got, &want));
  assert_int_equal(got.casts[MP_TGT_FP16][MP_CAST_OVERFLOW], 1);  /* 70000 */
  assert_int_equal(got.casts[MP_TGT_FP16][MP_CAST_UNDERFLOW], 1); /* 1e-9 */
  cJSON_Delete(j);
  run_free(&r);
}

/* recommended / fp16 verdict of one demo tensor. */
static void expect_demo_verdict(const char *name, const char *fp16, const char *recommended) {
  char *argv[] = {(char *)mpprof_path, "inspect", "--json", (char *)tmp_path(name), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  cJSON *j = cJSON_Parse(r.out);
  assert_non_null(j);
  const cJSON *adv = cJSON_GetObjectItem(j, "advice");
  assert_string_equal(cJSON_GetObjectItem(adv, "fp16")->valuestring, fp16);
  assert_string_equal(cJSON_GetObjectItem(adv, "recommended")->valuestring, recommended);
  const cJSON *window = cJSON_GetObjectItem(adv, "loss_scale_log2");
  if (!strcmp(fp16, "loss_scale")) {
    /* |g| in 2^-30 .. 2^-12 (18 binades, 5.6% each). 2^4 would flush the
     * lowest binade; 2^5 moves it to [2^-25, 2^-24), above the flush point.
     * 2^27 puts the top binade in [2^14, 2^15); 2^28 only fits if absmax
     * stays below 65520 * 2^-28, 2^29 overflows. */
    assert_int_equal(cJSON_GetArraySize(window), 2);
    int lo = cJSON_GetArrayItem(window, 0)->valueint, hi = cJSON_GetArrayItem(window, 1)->valueint;
    assert_int_equal(lo, 5);
    assert_true(hi == 27 || hi == 28);
  }
  if (!strcmp(fp16, "unsafe")) assert_true(cJSON_IsNull(window));
  cJSON_Delete(j);
  run_free(&r);
}

static void demo_activation_fits_fp16_as_is(void **st) {
  (void)st;
  expect_demo_verdict("activation.npy", "safe", "fp16");
}
static void demo_gradient_needs_a_loss_scale(void **st) {
  (void)st;
  expect_demo_verdict("grad_underflow.npy", "loss_scale", "fp16_loss_scale");
}
static void demo_overflowing_tensor_needs_bf16(void **st) {
  (void)st;
  expect_demo_verdict("overflow.npy", "unsafe", "bf16");
}

static void bad_file_among_good_ones_is_one_stderr_line_and_exit_1(void **st) {
  (void)st;
  write_small_npy("good.npy", small, 6);
  write_bytes(tmp_path("bad.npy"), "not a numpy file", 16);
  char *argv[] = {(char *)mpprof_path,
                  "inspect",
                  "--json",
                  (char *)tmp_path("good.npy"),
                  (char *)tmp_path("bad.npy"),
                  (char *)tmp_path("missing.npy"),
                  (char *)tmp_path("good.npy"),
                  NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 1);
  assert_int_equal(count_lines(r.out), 2); /* both good files still printed */
  assert_int_equal(count_lines(r.err), 2);
  char *second = strchr(r.err, '\n') + 1;
  assert_non_null(strstr(r.err, tmp_path("bad.npy")));
  assert_true(strstr(r.err, "bad magic") < second);
  assert_non_null(strstr(second, tmp_path("missing.npy")));
  assert_non_null(strstr(second, "No such file"));
  run_free(&r);
}

/* A file under a long path (here 3 components of 200 bytes: far from
 * PATH_MAX) is named in full, and its problem after it: the line was cut at
 * 512 bytes, which held the path's start only. */
static void a_long_path_leaves_the_problem_in_the_line(void **st) {
  (void)st;
  char dir[1024];
  int n = snprintf(dir, sizeof dir, "%s", tmp_dir);
  for (int level = 0; level < 3; level++) {
    n += snprintf(dir + n, sizeof dir - (size_t)n, "/%0200d", level);
    assert_int_equal(mkdir(dir, 0755), 0);
  }
  char npy[1100], sft[1100], missing[1100];
  snprintf(npy, sizeof npy, "%s/cut.npy", dir);
  snprintf(sft, sizeof sft, "%s/cut.safetensors", dir);
  snprintf(missing, sizeof missing, "%s/missing.npy", dir);
  size_t len;
  unsigned char *img = npy_image(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 64,
                                 small, 12, &len);
  write_bytes(npy, img, len);
  free(img);
  write_bytes(sft, "\xff\0\0\0\0\0\0\0{}", 10);
  char *argv[] = {(char *)mpprof_path, "inspect", npy, sft, missing, NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 1);
  assert_int_equal(count_lines(r.err), 3);
  const char *want[3][2] = {
      {npy, ": truncated data: shape (4,) of fp32 needs 16 bytes, 12 present\n"},
      {sft, ": header length 255 beyond the file (2 bytes after it)\n"},
      {missing, ": cannot open: No such file or directory\n"},
  };
  const char *line = r.err;
  for (int i = 0; i < 3; i++) {
    char expect[1300];
    snprintf(expect, sizeof expect, "mpprof: inspect: %s%s", want[i][0], want[i][1]);
    assert_memory_equal(line, expect, strlen(expect));
    line += strlen(expect);
  }
  run_free(&r);
}

/* The summary's first line names the whole shape of a tensor of 64
 * dimensions (it was cut at 127 bytes, without its closing parenthesis). */
static void a_shape_of_64_dimensions_is_shown_whole(void **st) {
  (void)st;
  char shape[MPPROF_SHAPE_TEXT_MAX], dict[MPPROF_SHAPE_TEXT_MAX + 128];
  size_t n = 0;
  for (int i = 0; i < MPPROF_TENSOR_MAX_DIMS; i++)
    n += (size_t)snprintf(shape + n, sizeof shape - n, i ? ", %d" : "(%d", i < 63 ? 1 : 3);
  snprintf(shape + n, sizeof shape - n, ")");
  snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shape);
  write_npy(tmp_path("dims.npy"), 1, dict, small, 12);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("dims.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  char want[sizeof shape + 600];
  snprintf(want, sizeof want, "%s: fp32 %s, 3 values\n", tmp_path("dims.npy"), shape);
  assert_memory_equal(r.out, want, strlen(want));
  run_free(&r);
}

/* A safetensors checkpoint: each floating-point tensor is summarised as
 * FILE:NAME in the header's order, an integer tensor gets one "skipped" line
 * (and no --json line); --json lines carry "tensor" right after "file" and
 * the same stats as a direct scan. --dtype does not apply to such a file, and
 * a bad header is one stderr line while the other files are still read. */
static void a_safetensors_file_is_read_tensor_by_tensor(void **st) {
  (void)st;
  uint16_t w[8];
  float g[4] = {1e-6f, -2e-8f, 3e-6f, 0.0f};
  int32_t ids[2] = {7, 8};
  for (int i = 0; i < 8; i++)
    mp_store(MP_BF16, w, (uint64_t)i, 0.5 * (i + 1));
  const uint64_t s24[] = {2, 4}, s4[] = {4}, s2[] = {2};
  const mpprof_st_write t[] = {{"model.w", "BF16", 2, s24, w, sizeof w},
                               {"ids", "I32", 1, s2, ids, sizeof ids},
                               {"model.g", "F32", 1, s4, g, sizeof g}};
  char err[256];
  const char *path = tmp_path("m.safetensors");
  assert_int_equal(mpprof_safetensors_write(path, t, 3, err, sizeof err), 0);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)path, NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  char want[600];
  snprintf(want, sizeof want, "%s:model.w: bf16 (2, 4), 8 values\n", path);
  char *a = strstr(r.out, want);
  snprintf(want, sizeof want,
           "%s:ids: I32 (2,): not a floating-point format mpprof reads, skipped\n", path);
  char *b = strstr(r.out, want);
  snprintf(want, sizeof want, "%s:model.g: fp32 (4,), 4 values\n", path);
  char *c = strstr(r.out, want);
  assert_true(a && b && c && a == r.out && a < b && b < c);
  assert_non_null(strstr(c, "recommended fp16_loss_scale"));
  /* the file's last line adds them up */
  snprintf(want, sizeof want,
           "\n\n%s: 3 tensors: 2 read (recommended: fp16 1, fp16_loss_scale 1), 1 skipped (not "
           "a floating-point format)\n",
           path);
  assert_true(strlen(r.out) > strlen(want) && !strcmp(r.out + strlen(r.out) - strlen(want), want));
  run_free(&r);

  char *jargv[] = {(char *)mpprof_path, "inspect", "--json", (char *)path, NULL};
  r = run(jargv);
  assert_int_equal(r.status, 0);
  assert_int_equal(count_lines(r.out), 2);
  cJSON *j = cJSON_Parse(strchr(r.out, '\n') + 1);
  assert_non_null(j);
  assert_string_equal(j->child->next->string, "file");
  assert_string_equal(j->child->next->valuestring, path);
  assert_string_equal(j->child->next->next->string, "tensor");
  assert_string_equal(j->child->next->next->valuestring, "model.g");
  mp_stats got, want_st;
  assert_int_equal(mpprof_stats_from_json(j, &got, err, sizeof err), 0);
  mp_stats_init(&want_st, MP_FP32);
  assert_int_equal(mp_scan_contiguous(&want_st, g, 4), 0);
  assert_true(stats_identical(&got, &want_st));
  cJSON_Delete(j);
  run_free(&r);

  char *dargv[] = {(char *)mpprof_path, "inspect", "--dtype", "fp16", (char *)path, NULL};
  r = run(dargv);
  assert_int_equal(r.status, 1);
  assert_int_equal(count_lines(r.err), 1);
  assert_non_null(strstr(r.err, "a safetensors file names its tensors' dtypes"));
  run_free(&r);

  /* a header whose tensor runs past the data, between two good files */
  const char hdr[] = "{\"x\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]}}";
  unsigned char img[8 + sizeof hdr - 1 + 4] = {sizeof hdr - 1};
  memcpy(img + 8, hdr, sizeof hdr - 1);
  write_bytes(tmp_path("bad.safetensors"), img, sizeof img);
  char *bargv[] = {
      (char *)mpprof_path, "inspect", "--json", (char *)path, (char *)tmp_path("bad.safetensors"),
      (char *)path,        NULL};
  r = run(bargv);
  assert_int_equal(r.status, 1);
  assert_int_equal(count_lines(r.out), 4);
  assert_int_equal(count_lines(r.err), 1);
  snprintf(want, sizeof want,
           "mpprof: inspect: %s: tensor 'x': truncated data: it ends at byte 8 of the data, which "
           "has 4\n",
           tmp_path("bad.safetensors"));
  assert_string_equal(r.err, want);
  run_free(&r);
}

/* A safetensors file cut short (a truncated download) or with a header
 * length beyond it is refused for that, as safetensors, not as a .npy of a
 * bad magic: by its '{' after the length, or by its name. */
static void a_safetensors_header_length_beyond_the_file_is_named(void **st) {
  (void)st;
  const char hdr[] = "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
  unsigned char img[8 + sizeof hdr - 1 + 4] = {sizeof hdr - 1};
  memcpy(img + 8, hdr, sizeof hdr - 1);
  write_bytes(tmp_path("cut.bin"), img, 30); /* the first 30 bytes */
  img[3] = 0x10;                             /* 256 MiB + the length */
  write_bytes(tmp_path("huge.bin"), img, sizeof img);
  write_bytes(tmp_path("four.safetensors"), img, 4);
  char *argv[] = {(char *)mpprof_path,
                  "inspect",
                  (char *)tmp_path("cut.bin"),
                  (char *)tmp_path("huge.bin"),
                  (char *)tmp_path("four.safetensors"),
                  NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 1);
  char want[1500];
  snprintf(want, sizeof want,
           "mpprof: inspect: %s: header length %zu beyond the file (22 bytes after it)\n"
           "mpprof: inspect: %s: header length %zu beyond the format's limit of 104857600 "
           "bytes\n"
           "mpprof: inspect: %s: truncated: 4 bytes, no safetensors header length\n",
           tmp_path("cut.bin"), sizeof hdr - 1, tmp_path("huge.bin"),
           (sizeof hdr - 1) + ((size_t)0x10 << 24), tmp_path("four.safetensors"));
  assert_string_equal(r.err, want);
  run_free(&r);
}

/* A name is bytes too: control characters in a tensor's name or a file's
 * are written escaped in the text and in error messages, so that a name
 * cannot split a line or forge one ("a\nmpprof: inspect: ..."). */
static void control_characters_of_names_are_escaped(void **st) {
  (void)st;
  float v[2] = {1.0f, 2.0f};
  const uint64_t s2[] = {2};
  const mpprof_st_write t[] = {{"a\nmpprof: inspect: fake", "F32", 1, s2, v, sizeof v},
                               {"b\t\x01\x7f\xc2\x9b", "F32", 1, s2, v, sizeof v}};
  char err[256], want[1200];
  const char *path = tmp_path("ctl.safetensors"), *bad = tmp_path("bad\nname.npy");
  assert_int_equal(mpprof_safetensors_write(path, t, 2, err, sizeof err), 0);
  write_bytes(bad, "not a numpy file", 16);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)path, (char *)bad, NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 1);
  snprintf(want, sizeof want, "%s:a\\nmpprof: inspect: fake: fp32 (2,), 2 values\n", path);
  assert_ptr_equal(strstr(r.out, want), r.out);
  /* C1 controls too (U+009B: a terminal's CSI), as the report's summaries write them */
  snprintf(want, sizeof want, "\n%s:b\\t\\x01\\x7f\\u009b: fp32 (2,), 2 values\n", path);
  assert_non_null(strstr(r.out, want));
  assert_null(strstr(r.out, "\nmpprof: inspect: fake"));
  snprintf(want, sizeof want,
           "mpprof: inspect: %s/bad\\nname.npy: bad magic: not a .npy file (raw data needs "
           "--dtype and --shape)\n",
           tmp_dir);
  assert_string_equal(r.err, want);
  run_free(&r);
}

/* Output that cannot be written (a full disk) fails the command in one
 * line, as a file that cannot be read does: a script must not take an
 * empty or cut result for a complete one. */
static void a_failed_write_to_stdout_is_one_stderr_line_and_exit_1(void **st) {
  (void)st;
  if (access("/dev/full", W_OK) != 0) skip();
  write_small_npy("good.npy", small, 6);
  for (int json = 0; json < 2; json++) {
    char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("good.npy"),
                    json ? "--json" : NULL, NULL};
    run_result r = run_to(argv, "/dev/full");
    assert_int_equal(r.status, 1);
    assert_int_equal(count_lines(r.err), 1);
    assert_non_null(strstr(r.err, "mpprof: inspect: standard output: write failed: "));
    assert_non_null(strstr(r.err, "No space left on device"));
    run_free(&r);
  }
}

static void summary_names_verdict_and_what_to_do(void **st) {
  (void)st;
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("grad_underflow.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "fp32 (256, 1024), 262144 values"));
  assert_non_null(strstr(r.out, "loss scale"));
  assert_non_null(strstr(r.out, "recommended fp16_loss_scale"));
  assert_non_null(strstr(r.out, "what to do"));
  assert_string_equal(r.err, "");
  run_free(&r);
}

/* Values all at 2^-40: the search range cuts the window at 2^32; the line
 * says how far it truly reaches (2^55: 2^-40 * 2^56 overflows), and the
 * scale suggested is the window's end nearest the true middle 2^35, at which
 * the values are fp16 normals (no precision line): the window's own middle
 * 2^24 left them subnormals. */
static void a_window_cut_by_the_search_range_shows_its_true_edges(void **st) {
  (void)st;
  float v[64];
  for (int i = 0; i < 64; i++)
    v[i] = 0x1p-40f;
  write_small_npy("tiny_grad.npy", v, 64);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("tiny_grad.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(
      r.out,
      "loss scale  2^16 .. 2^32 fits fp16 (searched 2^-32 .. 2^32; 2^16 .. 2^55 fits in all)\n"));
  assert_non_null(strstr(r.out, "fp16 with a loss scale in [2^16, 2^32], e.g. 2^32 "));
  assert_null(strstr(r.out, "precision"));
  run_free(&r);
}

/* A file does not say whether a tensor is a gradient, and only gradients
 * take a loss scale: a weight too large for fp16 (a window of scales below 1)
 * is told what a gradient would do and what it needs as a weight (bf16), not
 * only "use fp16 with a loss scale in [2^-30, 2^-3]". The same for a tensor
 * too small (the demo's gradient). */
static void a_loss_scale_is_advised_for_gradients_only(void **st) {
  (void)st;
  float big[64];
  for (int i = 0; i < 64; i++)
    big[i] = 1e5f * (1.0f + (float)i / 64) * (i % 2 ? 1 : -1);
  write_small_npy("big_weight.npy", big, 64);
  const char *files[] = {"big_weight.npy", "grad_underflow.npy"};
  for (int i = 0; i < 2; i++) {
    char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path(files[i]), NULL};
    run_result r = run(argv);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "recommended fp16_loss_scale"));
    assert_non_null(strstr(r.out, "what to do  if a gradient: fp16 with a loss scale in [2^"));
    assert_non_null(strstr(r.out, "; a weight or activation takes no loss scale: use bf16.\n"));
    run_free(&r);
  }
}

/* Values near 1e-30 span one binade: fp16 would hold them at 2^100, outside
 * the searched scales, so the verdict names the range it searched. */
static void an_unsafe_verdict_names_the_scales_searched(void **st) {
  (void)st;
  float tiny[64];
  for (int i = 0; i < 64; i++)
    tiny[i] = 1e-30f * (1.0f + (float)i / 64);
  write_small_npy("tiny.npy", tiny, 64);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("tiny.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "unsafe at every power-of-two scale in 2^-32 .. 2^32"));
  run_free(&r);
}

/* Values in [2^-20, 2^-19): fp16 holds them without overflow or flush, so
 * the verdict is fp16, but every one is an fp16 subnormal (5 significant
 * bits): the summary says so and names the scale of the window that keeps
 * them normal (2^6 moves them to [2^-14, 2^-13)); it no longer says "cast
 * to fp16 as is". A tensor of normal values gets no such line. */
static void fp16_subnormal_values_are_named_with_their_precision(void **st) {
  (void)st;
  float sub[64];
  for (int i = 0; i < 64; i++)
    sub[i] = ldexpf(1.0f + (float)i / 64, -20);
  write_small_npy("subnormal.npy", sub, 64);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("subnormal.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "recommended fp16"));
  assert_non_null(strstr(r.out, "precision   100% of the values are fp16 subnormals at scale "
                                "2^0 (|x| < 2^-14: fewer than 11 significant bits); at 2^6, "
                                "inside the fp16 window, 0 are"));
  assert_null(strstr(r.out, "cast to fp16 as is"));
  run_free(&r);
  char *argv2[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("activation.npy"), NULL};
  r = run(argv2);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "recommended fp16"));
  assert_null(strstr(r.out, "precision"));
  assert_non_null(strstr(r.out, "cast to fp16 as is"));
  run_free(&r);
}

/* An fp64 tensor beyond fp32's range, or flushed by it, is advised fp64 (it
 * was "fp32", which overflows or flushes too); just below fp32's overflow threshold, fp32 stays; at
 * it, the message prints the two apart. */
static void fp64_values_beyond_fp32_are_advised_fp64(void **st) {
  (void)st;
  const double big[4] = {1e300, -2.0, 0.5, 1e-3};
  const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }";
  write_npy(tmp_path("big64.npy"), 1, dict, big, sizeof big);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("big64.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "recommended fp64"));
  assert_non_null(strstr(r.out, "keep fp64: |x| reaches 1e+300, beyond fp32's range"));
  run_free(&r);
  char *json[] = {(char *)mpprof_path, "inspect", "--json", (char *)tmp_path("big64.npy"), NULL};
  r = run(json);
  cJSON *j = cJSON_Parse(r.out);
  assert_non_null(j);
  const cJSON *rec = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "advice"), "recommended");
  assert_true(cJSON_IsString(rec));
  assert_string_equal(rec->valuestring, "fp64");
  cJSON_Delete(j);
  run_free(&r);
  const double edge[2] = {0x1.fffffefffffffp127, 1.0}; /* rounds to FLT_MAX in fp32 */
  const char *dict2 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  write_npy(tmp_path("edge64.npy"), 1, dict2, edge, sizeof edge);
  char *argv2[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("edge64.npy"), NULL};
  r = run(argv2);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "recommended fp32"));
  run_free(&r);
  /* at fp32's rounding edge, which %g printed as fp32's largest value */
  const double tie[2] = {0x1p128 - 0x1p103, 1.0};
  write_npy(tmp_path("tie64.npy"), 1, dict2, tie, sizeof tie);
  char *argv3[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("tie64.npy"), NULL};
  r = run(argv3);
  assert_int_equal(r.status, 0);
  assert_non_null(
      strstr(r.out, "|x| reaches 3.402824e+38, beyond fp32's range (largest 3.402823e+38)"));
  run_free(&r);
  /* below fp32's range: 2^-150 and less round to zero there (it said "keep
   * fp32", which keeps none of them) */
  const double tiny[4] = {1e-50, -2e-50, 0x1p-151, 1.0};
  write_npy(tmp_path("tiny64.npy"), 1, dict, tiny, sizeof tiny);
  char *argv4[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("tiny64.npy"), NULL};
  r = run(argv4);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "recommended fp64"));
  assert_non_null(strstr(
      r.out, "keep fp64: 75% of the values are at most 2^-150 (7.00649e-46), which fp32 rounds"));
  run_free(&r);
}

/* --json says which figures are estimates, as the text does: e4m3 at scale
 * 2^8 flushes 2^-18 (2^-10 scaled, a tie to zero) and not 1.5 * 2^-18, one
 * binade: the fraction, 0.1, counts both (an upper bound; 0.05 exact). */
static void json_advice_says_what_is_an_estimate(void **st) {
  (void)st;
  float v[100];
  for (int i = 0; i < 100; i++)
    v[i] = i < 90 ? 1.0f : i < 95 ? 0x1p-18f : 0x1.8p-18f;
  write_small_npy("est.npy", v, 100);
  char *argv[] = {(char *)mpprof_path, "inspect", "--json", (char *)tmp_path("est.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  cJSON *j = cJSON_Parse(r.out);
  assert_non_null(j);
  const cJSON *adv = cJSON_GetObjectItem(j, "advice");
  const cJSON *e4 = cJSON_GetObjectItem(adv, "fp8_e4m3");
  assert_int_equal(cJSON_GetObjectItem(e4, "scale_log2")->valueint, 8);
  assert_true(cJSON_GetObjectItem(e4, "underflow_fraction")->valuedouble == 0.1);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(e4, "estimate")));
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(adv, "fp8_e5m2"), "estimate")));
  assert_true(cJSON_IsBool(cJSON_GetObjectItem(adv, "loss_scale_estimate")));
  cJSON_Delete(j);
  run_free(&r);
}

/* The binade line names the span of |x| and how many binades of it hold
 * values: 1, 1024 and 3 span 2^0 .. 2^10 but fill only three binades (it
 * said "11 binades hold the finite non-zero values"); one value is one
 * binade and one value, in the singular. */
static void the_binade_line_counts_the_binades_that_hold_values(void **st) {
  (void)st;
  const float gap[3] = {1.0f, 1024.0f, -3.0f}, one[1] = {3.5f};
  write_small_npy("gap.npy", gap, 3);
  write_small_npy("one.npy", one, 1);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("gap.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(
      r.out, "binades     2^0 .. 2^10 (11 binades, 3 of them holding finite non-zero values)\n"));
  run_free(&r);
  char *argv2[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("one.npy"), NULL};
  r = run(argv2);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "binades     2^1 (1 binade holds the finite non-zero values)\n"));
  assert_non_null(strstr(r.out, "(of 1 finite non-zero value)\n"));
  run_free(&r);
}

/* A share that is not all of the values never reads "100%" (as one that is
 * not none never reads "0"): 9,997 of 10,000 overflowing read 99.97%, and
 * 100,000 of 100,001 ">99.999%" (both read "100%"). */
static void a_share_short_of_all_never_reads_100_percent(void **st) {
  (void)st;
  enum { N = 100001 };
  float *v = malloc(N * sizeof *v);
  assert_non_null(v);
  for (int i = 0; i < N; i++)
    v[i] = 1e5f; /* over fp16's 65504 */
  v[0] = v[1] = v[2] = 1.0f;
  write_small_npy("most.npy", v, 10000);
  v[1] = v[2] = 1e5f;
  write_small_npy("nearly.npy", v, N);
  free(v);
  const char *want[2][2] = {
      {"most.npy", "    fp16      99.97%     0            0\n"},
      {"nearly.npy", "    fp16      >99.999%   0            0\n"},
  };
  for (int i = 0; i < 2; i++) {
    char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path(want[i][0]), NULL};
    run_result r = run(argv);
    assert_int_equal(r.status, 0);
    if (!strstr(r.out, want[i][1]))
      fail_msg("%s: want '%s' in:\n%s", want[i][0], want[i][1], r.out);
    assert_null(strstr(r.out, "100%"));
    run_free(&r);
  }
}

static void an_all_zero_tensor_has_nothing_to_judge(void **st) {
  (void)st;
  static const float zeros[64];
  write_small_npy("zeros.npy", zeros, 64);
  char *argv[] = {(char *)mpprof_path, "inspect", (char *)tmp_path("zeros.npy"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "nothing to judge"));
  assert_null(strstr(r.out, "recommended fp16"));
  /* a checkpoint's zero bias is the common all-zero tensor, named first */
  assert_non_null(strstr(r.out, "(a zero-initialised bias, a dead or flushed gradient"));
  run_free(&r);
  char *jargv[] = {(char *)mpprof_path, "inspect", "--json", (char *)tmp_path("zeros.npy"), NULL};
  r = run(jargv);
  assert_int_equal(r.status, 0);
  cJSON *j = cJSON_Parse(r.out);
  assert_non_null(j);
  assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "advice"), "recommended")));
  cJSON_Delete(j);
  run_free(&r);
}

static void raw_file_is_read_with_dtype_and_shape(void **st) {
  (void)st;
  write_bytes(tmp_path("raw.bin"), small, sizeof small);
  char *argv[] = {
      (char *)mpprof_path,         "inspect", "--json", "--dtype", "fp32", "--shape", "2x3",
      (char *)tmp_path("raw.bin"), NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  cJSON *j = cJSON_Parse(r.out);
  const cJSON *shape = cJSON_GetObjectItem(j, "shape");
  assert_int_equal(cJSON_GetArraySize(shape), 2);
  assert_int_equal(cJSON_GetArrayItem(shape, 1)->valueint, 3);
  assert_int_equal(cJSON_GetObjectItem(j, "nans")->valueint, 1);
  cJSON_Delete(j);
  run_free(&r);
}

static void underflow_threshold_option_changes_the_verdict(void **st) {
  (void)st;
  /* With 90% flushed allowed (28% flush), the demo gradient is "safe" in fp16 as is. */
  char *argv[] = {(char *)mpprof_path,
                  "inspect",
                  "--json",
                  "--underflow-max",
                  "0.9",
                  (char *)tmp_path("grad_underflow.npy"),
                  NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  cJSON *j = cJSON_Parse(r.out);
  assert_string_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "advice"), "fp16")->valuestring,
                      "safe");
  cJSON_Delete(j);
  run_free(&r);
}

static void expect_usage_error(char *const argv[]) {
  run_result r = run(argv);
  assert_int_equal(r.status, 2);
  assert_string_equal(r.out, "");
  assert_true(count_lines(r.err) >= 1);
  run_free(&r);
}

static void usage_errors_exit_2(void **st) {
  (void)st;
  char *no_file[] = {(char *)mpprof_path, "inspect", "--json", NULL};
  expect_usage_error(no_file);
  char *unknown[] = {(char *)mpprof_path, "inspect", "--frobnicate", "x.npy", NULL};
  expect_usage_error(unknown);
  char *shape_only[] = {(char *)mpprof_path, "inspect", "--shape", "4", "x.bin", NULL};
  expect_usage_error(shape_only);
  char *bad_dtype[] = {(char *)mpprof_path, "inspect", "--dtype", "int8", "x.npy", NULL};
  expect_usage_error(bad_dtype);
  char *bad_frac[] = {(char *)mpprof_path, "inspect", "--underflow-max", "2", "x.npy", NULL};
  expect_usage_error(bad_frac);
}

/* README: an unknown option is one line naming it and pointing at
 * `mpprof help inspect` (not the whole usage text); so is a missing value. */
static void an_unknown_option_is_one_line(void **st) {
  (void)st;
  char *unknown[] = {(char *)mpprof_path, "inspect", "--frobnicate", "x.npy", NULL};
  run_result r = run(unknown);
  assert_int_equal(r.status, 2);
  assert_int_equal(count_lines(r.err), 1);
  assert_non_null(strstr(r.err, "unknown option '--frobnicate' (see 'mpprof help inspect')"));
  run_free(&r);
  char *no_value[] = {(char *)mpprof_path, "inspect", "--dtype", NULL};
  r = run(no_value);
  assert_int_equal(r.status, 2);
  assert_int_equal(count_lines(r.err), 1);
  assert_non_null(strstr(r.err, "'--dtype' needs a value (see 'mpprof help inspect')"));
  run_free(&r);
}

static void help_exits_0_on_stdout(void **st) {
  (void)st;
  char *argv[] = {(char *)mpprof_path, "inspect", "--help", NULL};
  run_result r = run(argv);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "usage: mpprof inspect"));
  run_free(&r);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MPPROF GEN_TENSORS\n", argv[0]);
    return 2;
  }
  mpprof_path = argv[1];
  gen_path = argv[2];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(json_object_has_exactly_the_tensor_schema_keys_in_order),
      cmocka_unit_test(json_of_a_file_name_that_is_not_utf8_is_valid_utf8),
      cmocka_unit_test(fp64_values_beyond_fp32_are_advised_fp64),
      cmocka_unit_test(json_advice_says_what_is_an_estimate),
      cmocka_unit_test(json_stats_equal_a_direct_scan),
      cmocka_unit_test(demo_activation_fits_fp16_as_is),
      cmocka_unit_test(demo_gradient_needs_a_loss_scale),
      cmocka_unit_test(demo_overflowing_tensor_needs_bf16),
      cmocka_unit_test(bad_file_among_good_ones_is_one_stderr_line_and_exit_1),
      cmocka_unit_test(a_failed_write_to_stdout_is_one_stderr_line_and_exit_1),
      cmocka_unit_test(a_safetensors_file_is_read_tensor_by_tensor),
      cmocka_unit_test(a_safetensors_header_length_beyond_the_file_is_named),
      cmocka_unit_test(a_long_path_leaves_the_problem_in_the_line),
      cmocka_unit_test(a_shape_of_64_dimensions_is_shown_whole),
      cmocka_unit_test(control_characters_of_names_are_escaped),
      cmocka_unit_test(summary_names_verdict_and_what_to_do),
      cmocka_unit_test(a_window_cut_by_the_search_range_shows_its_true_edges),
      cmocka_unit_test(raw_file_is_read_with_dtype_and_shape),
      cmocka_unit_test(fp16_subnormal_values_are_named_with_their_precision),
      cmocka_unit_test(a_loss_scale_is_advised_for_gradients_only),
      cmocka_unit_test(an_unsafe_verdict_names_the_scales_searched),
      cmocka_unit_test(a_share_short_of_all_never_reads_100_percent),
      cmocka_unit_test(an_all_zero_tensor_has_nothing_to_judge),
      cmocka_unit_test(the_binade_line_counts_the_binades_that_hold_values),
      cmocka_unit_test(underflow_threshold_option_changes_the_verdict),
      cmocka_unit_test(usage_errors_exit_2),
      cmocka_unit_test(an_unknown_option_is_one_line),
      cmocka_unit_test(help_exits_0_on_stdout),
  };
  return cmocka_run_group_tests(tests, setup, remove_tmp_dir);
}
