/* report.html without a browser: program-derived strings are escaped, nothing
 * is loaded from outside the file, and every embedded image decodes as PNG.
 * Also the text outputs: layers.csv quoting (RFC 4180) and trace.json. */
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rawgen.h"
#include "report_fixture.h"
#include "report/report.h"
#include "report/report_internal.h"

static const char HOSTILE[] = "<script>alert(1)</script>";

/* A run whose NVTX names, kernel name and argv are hostile. */
static char *hostile_run(void) {
  char *dir = rg_tmpdir("html");
  rg_proc p = {"node01", 100, 1, 0, true, "ok", "9.0", "./train\"><img src=x onerror=alert(2)>"};
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &p), 0);
  const char *layers[] = {"<script>alert(1)</script>/fwd", "<script>alert(1)</script>/bwd",
                          "a,\"b\"/fwd", "safe/fwd"};
  for (int i = 0; i < 4; i++) {
    cJSON *s = rg_gemm(i, "cublasGemmEx", layers[i], "A=fp16,B=fp16,D=fp32", "32F", "DEFAULT", 64,
                       64, 64, 5);
    rg_tensor(s, "A", MP_FP16, -8, 4, 100);
    rg_tensor(s, "D", MP_FP32, i == 1 ? -30 : -4, i == 1 ? -20 : 4 + 6 * (i == 2), 200);
    rg_kernel(
        s, i == 3 ? "<b>kernel</b>&amp;_gemv2T_kernel" : "nvjet_hsh_128x64_64x4_1x2_h_bz_coopA_NNT",
        5, 1000 * (i + 1));
    rg_site_end(&r, s);
  }
  for (int i = 0; i < 8; i++)
    rg_event(&r, i % 4, 1000 * i, 400, 42);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  return dir;
}

static void hostile_nvtx_names_are_escaped(void **state) {
  (void)state;
  char *dir = hostile_run();
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  assert_null(strstr(html, HOSTILE));
  assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  assert_null(strstr(html, "<img src=x"));
  assert_null(strstr(html, "<b>kernel</b>"));
  assert_non_null(strstr(html, "&lt;b&gt;kernel&lt;/b&gt;&amp;amp;"));
  /* exactly the page's own two inline scripts */
  size_t scripts = 0;
  for (const char *p = html; (p = strstr(p, "<script")); p++)
    scripts++;
  assert_int_equal(scripts, 2);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* The measured_* fields that end a layers.csv or ops.csv row without --shadow. */
#define NO_MEASURED ",,,,,,,,,,"
/* layers.csv's bf16 share tensors and six *_estimate fields, empty without shares */
#define NO_SHARE_EXTRAS ",,,,,,,,"

/* CUPTI names a C++ kernel by its mangled symbol; the page and ops.csv's
 * kernels column show it readable (the raw name stays in report.json's
 * "name" and ops.csv's kernel_symbols). */
static void the_page_shows_cpp_kernel_names_demangled(void **state) {
  (void)state;
  char *dir = rg_tmpdir("html_mangled");
  rg_proc p = {"node01", 100, 1, 0, true, "ok", "9.0", "./train"};
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &p), 0);
  cJSON *s = rg_gemm(0, "cublasSgemm_v2", "net/fc", "A=fp32,B=fp32,D=fp32", "32F", "DEFAULT", 63,
                     63, 63, 5);
  rg_tensor(s, "A", MP_FP32, -8, 4, 100);
  rg_kernel(s, "_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE", 5,
            1000);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  mpprof_report_options o = {.out_dir = dir, .program = NULL, .summary = NULL};
  assert_int_equal(mpprof_report_generate(&o), 0);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  assert_null(strstr(html, "_ZN7cutlass"));
  assert_non_null(
      strstr(html, "cutlass::Kernel2&lt;cutlass_80_simt_sgemm_64x64_8x5_nn_align1&gt;"));
  free(html);
  /* ops.csv's kernels column as the page shows them, the symbol in the last */
  char *csv = rg_read_text(dir, "ops.csv", NULL);
  assert_non_null(csv);
  const char *row = strstr(csv, "\r\n");
  assert_non_null(row);
  assert_non_null(strstr(csv, ",kernels,"));
  assert_non_null(strstr(csv, ",scanned_calls,kernel_symbols,measured_now_rel_l2,"));
  assert_non_null(strstr(row, ",cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nn_align1>,"));
  assert_non_null(strstr(
      row,
      ",_ZN7cutlass7Kernel2I41cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE" NO_MEASURED
      "\r\n"));
  assert_int_equal(strstr(row, "_ZN7cutlass") - row,
                   strstr(row, ",_ZN7cutlass") + 1 - row); /* only there */
  free(csv);
  rg_rmdir(dir);
  free(dir);
}

static void the_page_loads_nothing_from_outside(void **state) {
  (void)state;
  char *dir = hostile_run();
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  /* every src is an embedded PNG, every href a fragment, no CSS url()/@import */
  for (const char *p = html; (p = strstr(p, " src=\"")); p++)
    assert_int_equal(strncmp(p + 6, "data:image/png;base64,", 22), 0);
  for (const char *p = html; (p = strstr(p, " href=\"")); p++)
    assert_int_equal(p[7], '#');
  assert_null(strstr(html, "url("));
  assert_null(strstr(html, "@import"));
  assert_null(strstr(html, "<link"));
  assert_null(strstr(html, "<iframe"));
  assert_non_null(strstr(html, "Content-Security-Policy"));
  free(html);
  rg_rmdir(dir);
  free(dir);
}

static int b64(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

static unsigned char *unbase64(const char *s, size_t n, size_t *ret_len) {
  unsigned char *out = malloc(n / 4 * 3 + 3);
  size_t o = 0;
  assert_int_equal(n % 4, 0);
  for (size_t i = 0; i < n; i += 4) {
    int v[4];
    for (int j = 0; j < 4; j++)
      v[j] = s[i + j] == '=' ? 0 : b64(s[i + j]);
    for (int j = 0; j < 4; j++)
      assert_true(v[j] >= 0);
    unsigned w = (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
    out[o++] = (unsigned char)(w >> 16);
    if (s[i + 2] != '=') out[o++] = (unsigned char)(w >> 8);
    if (s[i + 3] != '=') out[o++] = (unsigned char)w;
  }
  *ret_len = o;
  return out;
}

static void every_embedded_image_decodes_as_png(void **state) {
  (void)state;
  char *dir = hostile_run();
  char *html = rg_read_text(dir, "report.html", NULL);
  int images = 0;
  const char *tag = "src=\"data:image/png;base64,";
  for (const char *p = html; (p = strstr(p, tag)); images++) {
    p += strlen(tag);
    const char *end = strchr(p, '"');
    assert_non_null(end);
    size_t len = 0;
    unsigned char *png = unbase64(p, (size_t)(end - p), &len);
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    assert_int_not_equal(png_image_begin_read_from_memory(&img, png, len), 0);
    img.format = PNG_FORMAT_RGB;
    unsigned char *px = malloc(PNG_IMAGE_SIZE(img));
    assert_int_not_equal(png_image_finish_read(&img, NULL, px, 0, NULL), 0);
    /* drawn at twice the size the page shows it */
    assert_int_equal(img.width, 2 * 1000);
    assert_int_equal(img.height, 2 * 312);
    /* not blank: some bar pixels in the forward colour */
    size_t blue = 0;
    for (size_t i = 0; i < (size_t)img.width * img.height; i++)
      blue += px[3 * i] == 31 && px[3 * i + 1] == 119 && px[3 * i + 2] == 180;
    assert_true(blue > 0);
    free(px);
    free(png);
    p = end;
  }
  assert_int_equal(images, 3); /* layers "<script>...", "a,\"b\"", "safe" */
  /* each chart's numbers as a table under a <details> */
  int tables = 0;
  for (const char *p = html; (p = strstr(p, "<details><summary>numbers</summary><table")); p++)
    tables++;
  assert_int_equal(tables, 3);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

static void csv_quotes_fields_per_rfc4180(void **state) {
  (void)state;
  char *dir = hostile_run();
  char *csv = rg_read_text(dir, "layers.csv", NULL);
  assert_non_null(csv);
  assert_non_null(strstr(csv, "\r\n\"a,\"\"b\"\"\",forward,1,5,"));
  assert_int_equal(strncmp(csv, "layer,phase,sites,calls,gpu_ns,dtypes,recommended,", 50), 0);
  /* every record ends in CRLF, no bare LF */
  for (const char *p = csv; *p; p++)
    if (*p == '\n') assert_int_equal(p[-1], '\r');
  free(csv);
  rg_rmdir(dir);
  free(dir);
}

/* A field a spreadsheet would run as a formula is written as text, with a
 * leading "'" (CSV injection: a layer name is the profiled program's text);
 * mpprof's own numbers, negative ones too, stay numbers. */
static void csv_fields_that_look_like_formulas_are_text(void **state) {
  (void)state;
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"=HYPERLINK(\"http://x\")", "\"'=HYPERLINK(\"\"http://x\"\")\""},
      {"-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"},
      {"+1", "'+1"},
      {"@SUM(A1)", "'@SUM(A1)"},
      {"\tx", "'\tx"},
      {"=a,b", "\"'=a,b\""},
      {"-", "'-"},
      {"-inf", "'-inf"},
      {"-nan(cmd)", "'-nan(cmd)"},
      {"-0x1p3", "'-0x1p3"},
      {"-3", "-3"},
      {"-1.5e-07", "-1.5e-07"},
      {"-0.25", "-0.25"},
      {"a=b", "a=b"},
      {"", ""},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    mpprof_csv_field(f, cases[i].in, true);
    assert_int_equal(fclose(f), 0);
    char *want = NULL;
    assert_true(asprintf(&want, "%s\r\n", cases[i].out) > 0);
    assert_string_equal(buf, want);
    free(want);
    free(buf);
  }
  /* and in a report: the layer named by an NVTX range "=cmd|..." */
  rg_file r;
  char *dir = rf_run_begin(&r, "csvf");
  cJSON *s = rg_gemm(0, "cublasGemmEx", "=cmd|' /C calc'!A0/fwd", "A=fp16,B=fp16,D=fp32", "32F",
                     "DEFAULT", 64, 64, 64, 5);
  rg_tensor(s, "A", MP_FP16, -8, 4, 100);
  rg_tensor(s, "D", MP_FP32, -4, 4, 200);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *csv = rg_read_text(dir, "layers.csv", NULL);
  assert_non_null(csv);
  assert_non_null(strstr(csv, "\r\n'=cmd|' /C calc'!A0,forward,1,5,"));
  free(csv);
  csv = rg_read_text(dir, "ops.csv", NULL);
  assert_non_null(csv);
  assert_non_null(strstr(csv, ",'=cmd|' /C calc'!A0,'=cmd|' /C calc'!A0/fwd,forward,"));
  assert_null(strstr(csv, ",=cmd"));
  free(csv);
  rg_rmdir(dir);
  free(dir);
}

/* The CSV field `col` (0-based) of the first data row whose text contains `needle`. */
static char *csv_field(const char *csv, const char *needle, int col) {
  const char *row = strstr(csv, needle);
  if (!row) return NULL;
  while (row > csv && row[-1] != '\n')
    row--;
  static char buf[256];
  int c = 0;
  size_t n = 0;
  bool q = false;
  for (const char *p = row; *p && *p != '\r'; p++) {
    if (*p == '"') {
      if (q && p[1] == '"') {
        if (c == col && n < sizeof buf - 1) buf[n++] = '"';
        p++;
      } else {
        q = !q;
      }
    } else if (*p == ',' && !q) {
      if (c == col) break;
      c++;
    } else if (c == col && n < sizeof buf - 1) {
      buf[n++] = *p;
    }
  }
  buf[n] = 0;
  return buf;
}

/* ops.csv: TF32 written out for the TF32 math mode, "eligible with TF32" for a
 * plain fp32 GEMM (and counted once in report.json), TFLOP/s from 2mnk per call
 * on a real GPU. */
static void ops_csv_writes_tf32_out_and_tflops(void **state) {
  (void)state;
  rg_file r;
  char *dir = rf_run_begin(&r, "ops");
  cJSON *s = rg_gemm(0, "cublasGemmEx", "tf/fwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F",
                     "TF32_TENSOR_OP", 128, 64, 32, 10);
  rg_tensor(s, "D", MP_FP32, -4, 4, 100);
  rg_kernel(s,
            "sm90_xmma_gemm_f32f32_tf32f32_f32_nt_n_tilesize128x128x32_warpgroupsize1x1x1_"
            "execute_segment_k_off_kernel__5x_cublas",
            10, 1000000);
  rg_site_end(&r, s);
  s = rg_gemm(1, "cublasGemmEx", "plain/fwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F", "DEFAULT", 64,
              64, 64, 5);
  rg_tensor(s, "D", MP_FP32, -4, 4, 100);
  rg_kernel(s,
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_"
            "aligna4_alignc4_execute_kernel__5x_cublas",
            5, 2000);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *csv = rg_read_text(dir, "ops.csv", NULL);
  assert_non_null(csv);
  assert_int_equal(strncmp(csv, "site,layer,nvtx_path,phase,api,op,shape,", 40), 0);
  assert_string_equal(csv_field(csv, "tf/fwd", 14), "TF32 (compute 32F, math mode TF32_TENSOR_OP)");
  assert_string_equal(csv_field(csv, "tf/fwd", 15), "yes");
  /* 2*128*64*32 flop * 10 calls in 1 ms = 0.0052 TFLOP/s */
  assert_string_equal(csv_field(csv, "tf/fwd", 23), "0.00524288");
  assert_string_equal(csv_field(csv, "plain/fwd", 14), "32F");
  assert_string_equal(csv_field(csv, "plain/fwd", 26), "no");  /* tc_eligible */
  assert_string_equal(csv_field(csv, "plain/fwd", 27), "yes"); /* tc_eligible_with_tf32 */
  free(csv);
  char *json = rg_read_text(dir, "report.json", NULL);
  cJSON *rep = cJSON_Parse(json);
  free(json);
  const cJSON *tc = cJSON_GetObjectItem(rep, "tensor_cores");
  assert_int_equal(cJSON_GetObjectItem(tc, "sites_eligible_with_tf32")->valuedouble, 1);
  int tf32_findings = 0;
  const cJSON *f;
  cJSON_ArrayForEach(
      f,
      cJSON_GetObjectItem(rep, "findings")) if (!strcmp(cJSON_GetObjectItem(f, "kind")->valuestring,
                                                        "fp32_without_tf32")) {
    tf32_findings++;
    assert_int_equal(
        cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(f, "evidence"), "sites")), 1);
  }
  assert_int_equal(tf32_findings, 1);
  cJSON_Delete(rep);
  rg_rmdir(dir);
  free(dir);
}

/* A shadow object as the raw file has it: fp16 at scale 1, fp16 at the loss
 * scales, bf16 (worst rel_l2 of one call each). */
static void add_shadow(cJSON *site, double fp16, double fp16_scaled, double bf16) {
  cJSON *sh = cJSON_AddObjectToObject(site, "shadow");
  cJSON_AddNumberToObject(sh, "calls", 1);
  cJSON *cs = cJSON_AddObjectToObject(sh, "candidates");
  const char *names[3] = {"fp16", "fp16_loss_scaled", "bf16"};
  const double rel[3] = {fp16, fp16_scaled, bf16};
  for (int i = 0; i < 3; i++)
    rg_shadow_candidate(cs, names[i], rel[i], 1);
}

/* The layer table's cell of the column headed `head` in the row of layer `name`. */
static char *layer_cell(const char *html, const char *name, const char *head) {
  const char *t = strstr(html, "<table id=\"layer-table\"");
  assert_non_null(t);
  const char *h = strstr(t, head), *tr = strstr(t, "<tr id=\"lrow-");
  assert_true(h && tr && h < tr);
  int col = 0; /* the cells before it */
  for (const char *p = strstr(t, "</th>"); p && p < h; p = strstr(p + 1, "</th>"))
    col++;
  char want[160];
  snprintf(want, sizeof want, ">%s<", name);
  const char *row = strstr(t, want);
  assert_non_null(row);
  for (const char *b = row; b > t; b--)
    if (!strncmp(b, "<tr", 3)) {
      row = b;
      break;
    }
  const char *td = strstr(row, "<td");
  for (int i = 0; i < col; i++)
    td = strstr(td + 1, "<td");
  const char *end = strstr(td, "</td>");
  char *cell = strndup(td, (size_t)(end - td));
  assert_non_null(cell);
  return cell;
}

/* A layer whose forward output and gradient are NaN/Inf in every scanned
 * call, beside a forward input of finite values with a few NaN/Inf (the
 * user trial's net/nanlayer). */
static char *nan_layer_run(void) {
  char *dir = rg_tmpdir("html_nan");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &RF_P0), 0);
  double a[16], bad[8];
  for (int i = 0; i < 16; i++)
    a[i] = i == 0 ? NAN : i == 1 ? INFINITY : 0.25 + i;
  for (int i = 0; i < 8; i++)
    bad[i] = i % 3 ? NAN : i % 2 ? INFINITY : -INFINITY;
  cJSON *f = rg_gemm(0, "cublasSgemm_v2", "net/nan/fwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F",
                     "DEFAULT", 4, 4, 4, 3);
  rg_tensor_values(f, "A", MP_FP32, a, 16);
  rg_tensor_values(f, "D", MP_FP32, bad, 8);
  rg_site_end(&r, f);
  cJSON *b = rg_gemm(1, "cublasSgemm_v2", "net/nan/bwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F",
                     "DEFAULT", 4, 4, 4, 3);
  rg_tensor_values(b, "D", MP_FP32, bad, 8);
  rg_site_end(&r, b);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  return dir;
}

/* The page's summary gives the reason the terminal summary gives (it said
 * "1 without scanned values" of a layer whose every call was scanned). */
static void the_summary_says_why_a_layer_of_nan_has_no_verdict(void **state) {
  (void)state;
  char *dir = nan_layer_run();
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  assert_non_null(strstr(html, "1 layer: no verdict (its gradients were Inf/NaN in every scanned "
                               "call)</p>"));
  assert_null(strstr(html, "without scanned values"));
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* The row shows the NaN/Inf (it read 0% overflow and fp8 e4m3 "yes", as if
 * clean), and layers.csv has the same column. */
static void a_layer_of_nan_shows_them_in_its_row_and_csv(void **state) {
  (void)state;
  char *dir = nan_layer_run();
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  char *cell = layer_cell(html, "net/nan", ">NaN/Inf %</th>");
  assert_non_null(strstr(cell, ">100 <small>backward.D</small>"));
  free(cell);
  cell = layer_cell(html, "net/nan", ">fp8 e4m3 fwd</th>");
  assert_string_equal(cell, "<td>?");
  free(cell);
  char *csv = rg_read_text(dir, "layers.csv", NULL);
  assert_non_null(csv);
  assert_non_null(strstr(
      csv, ",scanned_calls,has_gradients,flushed_before_seen,nonfinite_pct,nonfinite_tensor,"));
  /* scanned_calls, no verdict (has_gradients, flushed_before_seen empty), the share */
  /* then the bf16 shares' tensors and the six estimates (forward.A's exact
   * shares; none at the applied scale: no finite gradient) */
  assert_non_null(
      strstr(csv, ",6,,,100,backward.D,forward.A,forward.A,no,no,no,no,," NO_MEASURED "\r\n"));
  free(csv);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* The chart's empty gradient panel says why it is empty; the finding names
 * every tensor holding NaN/Inf (forward.D, 100% of it, was named nowhere). */
static void a_layer_of_nan_names_each_tensor_and_its_empty_panel(void **state) {
  (void)state;
  char *dir = nan_layer_run();
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  assert_non_null(strstr(html, "No bars in the gradient panel: its gradient tensors were Inf/NaN "
                               "in every scanned call."));
  assert_null(strstr(html, "No bars in the forward panel"));
  assert_non_null(strstr(html, "net/nan: backward.D already holds NaN or Inf"));
  assert_non_null(strstr(html, "; also in forward.A (2 of 16 values), forward.D (8 of 8 values)"));
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* Nothing scanned (--scan none): the share cells are blank, not a
 * measured-looking 0 (report.json has null). */
static void without_scanned_values_the_share_cells_are_blank_not_zero(void **state) {
  (void)state;
  char *dir = rg_tmpdir("html_scan_none");
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &RF_P0), 0);
  rg_site_end(&r, rg_gemm(0, "cublasSgemm_v2", "net/fc/fwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F",
                          "DEFAULT", 8, 8, 8, 2));
  assert_int_equal(rg_end(&r), 0);
  assert_int_equal(rg_set_scan(dir, "a.json", "none"), 0);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  const char *heads[] = {">NaN/Inf %</th>", ">fp16 overflow %</th>", ">fp16 underflow %</th>",
                         ">bf16 overflow %</th>", ">bf16 underflow %</th>"};
  for (int i = 0; i < 5; i++) {
    char *cell = layer_cell(html, "net/fc", heads[i]);
    assert_string_equal(cell, "<td class=\"n\" data-v=\"-1\">&mdash;");
    free(cell);
  }
  char *csv = rg_read_text(dir, "layers.csv", NULL);
  assert_non_null(csv);
  /* recommended, loss scale lo/hi, the four shares and their tensors: empty */
  assert_non_null(strstr(csv, ",A=fp32 B=fp32 C=fp32 D=fp32,,,,,,,,,,"));
  /* scanned_calls, no verdict, then no NaN/Inf share */
  assert_non_null(strstr(csv, ",2,,,," NO_SHARE_EXTRAS NO_MEASURED "\r\n"));
  free(csv);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* With --shadow, the layer table's "Measured fp16 rel L2" is fp16 as AMP runs
 * it: loss-scaled for a layer with gradients, at scale 1 for a forward layer,
 * which a loss scale never reaches (and whose fp16 verdict is measured at 1).
 * A forward layer whose product flushes in fp16 (0.26 at scale 1) showed the
 * loss-scaled 0.0004 beside its bf16 verdict, as if fp16 lost nothing. */
static void the_layer_tables_measured_fp16_is_at_scale_1_for_a_forward_layer(void **state) {
  (void)state;
  rg_file r;
  char *dir = rf_run_begin(&r, "layer-shadow-fp16");
  const char *paths[3] = {"act/fwd", "lin/fwd", "lin/bwd"};
  for (int i = 0; i < 3; i++) {
    cJSON *s = rg_gemm(i, "cublasGemmEx", paths[i], "A=fp32,B=fp32,C=fp32,D=fp32", "32F", "DEFAULT",
                       64, 64, 64, 5);
    rg_tensor(s, "D", MP_FP32, -4, 4, 100);
    if (i == 0) add_shadow(s, 0.26, 0.0004, 0.003);
    if (i == 2) add_shadow(s, 0.31, 0.0005, 0.003);
    rg_site_end(&r, s);
  }
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  char *act = layer_cell(html, "act", "Measured fp16 rel L2"),
       *lin = layer_cell(html, "lin", "Measured fp16 rel L2");
  assert_non_null(strstr(act, ">0.26"));
  assert_non_null(strstr(lin, ">0.0005"));
  free(act);
  free(lin);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* A verdict says what it did not see, in its row, its chart and the summary's
 * tally: a forward-only layer's gradients (its empty gradient panel says so),
 * values flushed before mpprof saw them (flush is a lower bound). They read
 * "fp16" with no word (the user trial's repros 6 and 7; the run: rf_marks_run). */
static void a_verdicts_row_chart_and_tally_say_what_it_did_not_see(void **state) {
  (void)state;
  char *dir = rf_marks_run("marks-html", true);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  char *f = layer_cell(html, "f", "Recommended"), *l = layer_cell(html, "l", "Recommended"),
       *g = layer_cell(html, "g", "Recommended");
  assert_non_null(strstr(f, ">fp16 <small> (" MPPROF_MARK_FORWARD_ONLY ")</small>"));
  assert_null(strstr(f, MPPROF_MARK_FLUSHED));
  assert_non_null(strstr(l, ">fp16_loss_scale <small> (" MPPROF_MARK_FLUSHED ")</small>"));
  assert_null(strstr(l, MPPROF_GRADS_NOT_SEEN));
  assert_null(strstr(g, "<small>"));
  free(f);
  free(l);
  free(g);
  assert_non_null(strstr(html, "2 layers: fp16 as is (" MPPROF_MARK_FORWARD_ONLY ": 1)"));
  assert_non_null(strstr(html, "1 layer: fp16 with a loss scale (" MPPROF_MARK_FLUSHED ": 1)"));
  assert_non_null(strstr(html, "alt=\"exponent histogram of f (" MPPROF_NO_GRADIENTS_PANEL ")\""));
  assert_non_null(strstr(html, "alt=\"exponent histogram of g\""));
  assert_non_null(
      strstr(html, "<span class=\"rec fp16\">fp16</span> (" MPPROF_MARK_FORWARD_ONLY ")"));
  assert_non_null(strstr(
      html,
      "<span class=\"rec fp16_loss_scale\">fp16_loss_scale</span> (" MPPROF_MARK_FLUSHED ")"));
  assert_null(strstr(html, MPPROF_FORWARD_ONLY_NOTE)); /* g and l had gradients */
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* A run without gradients (eval only): one note for all layers, not a mark
 * beside every verdict. */
static void an_eval_only_run_says_gradients_not_seen_once(void **state) {
  (void)state;
  char *dir = rf_marks_run("marks-eval", false);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  char *f = layer_cell(html, "f", "Recommended");
  assert_null(strstr(f, "<small>"));
  free(f);
  assert_non_null(strstr(html, "<p>" MPPROF_FORWARD_ONLY_NOTE ".</p>"));
  assert_non_null(strstr(html, "1 layer: fp16 as is</p>"));
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* A measured backward layer whose fp16_loss_scaled candidate is undefined
 * (its GEMMs have an epilogue: a forward recomputed in backward) while some
 * of its calls were skipped: the "Measured fp16 rel L2" cell said "not
 * measured: shadow_busy" as if the busy device were why; the calls were
 * measured, and the cell stays empty. */
static void a_measured_layers_undefined_candidate_is_not_said_unmeasured(void **state) {
  (void)state;
  rg_file r;
  char *dir = rf_run_begin(&r, "layer-shadow-undefined");
  cJSON *s = rg_gemm(0, "cublasGemmEx", "lin/bwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F", "DEFAULT",
                     64, 64, 64, 5);
  rg_tensor(s, "D", MP_FP32, -4, 4, 100);
  add_shadow(s, 0.001, 0.002, 0.003);
  cJSON *sh = cJSON_GetObjectItem(s, "shadow");
  cJSON_DeleteItemFromObject(cJSON_GetObjectItem(sh, "candidates"), "fp16_loss_scaled");
  cJSON_AddNumberToObject(cJSON_AddObjectToObject(sh, "skipped"), "shadow_busy", 2);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  char *lin = layer_cell(html, "lin", "Measured fp16 rel L2");
  assert_null(strstr(lin, "not measured"));
  free(lin);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* An FP8 GEMM called with cuBLASLt's FAST_ACCUM: its measured `current`
 * (fp32 sums) understates what the kernel loses, so its cell is marked and
 * says why; the same measurement without the flag is a plain number. */
static void a_fast_accumulating_fp8_layers_current_is_marked(void **state) {
  (void)state;
  rg_file r;
  char *dir = rf_run_begin(&r, "layer-shadow-fast-accum");
  const char *paths[2] = {"fast/fwd", "plain/fwd"};
  for (int i = 0; i < 2; i++) {
    cJSON *s = rg_gemm(i, "cublasLtMatmul", paths[i], "A=fp8_e4m3,B=fp8_e4m3,C=bf16,D=bf16", "32F",
                       "DEFAULT", 64, 64, 64, 5);
    if (i == 0) cJSON_AddTrueToObject(s, "fast_accum");
    rg_tensor(s, "D", MP_BF16, -4, 4, 100);
    add_shadow(s, 0.001, 0.002, 0.003);
    rg_shadow_candidate(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "shadow"), "candidates"),
                        "current", 0.0625, 1);
    rg_site_end(&r, s);
  }
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  char *fast = layer_cell(html, "fast", "Measured now rel L2"),
       *plain = layer_cell(html, "plain", "Measured now rel L2");
  assert_non_null(strstr(fast, ">0.0625*"));
  assert_non_null(strstr(fast, "FAST_ACCUM"));
  assert_non_null(strstr(plain, ">0.0625"));
  assert_null(strstr(plain, "*"));
  free(fast);
  free(plain);
  assert_non_null(strstr(html, "32F, FP8 fast accumulation")); /* the ops table's compute */
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* A layer whose first site's `current` may be understated (an fp32 cuDNN
 * convolution at default math, no kernel seen: TF32 possible) and whose
 * second's is (its kernel ran TF32): the layer's cell gives the stronger
 * reason, as its `current` is the worst over both. */
static void a_layers_current_mark_gives_its_strongest_reason(void **state) {
  (void)state;
  rg_file r;
  char *dir = rf_run_begin(&r, "layer-understated-mix");
  for (int i = 0; i < 2; i++) {
    cJSON *s =
        rf_conv_site(i, "cudnnConvolutionForward", "conv_fwd", "mix/fwd", "x=fp32,w=fp32,y=fp32");
    /* the site without kernels sorts first (a batch of 16 before one of 8) */
    cJSON_ReplaceItemInObject(rf_get(s, "conv"), "n", cJSON_CreateNumber(i == 0 ? 16 : 8));
    if (i == 1)
      rg_kernel(
          s,
          "sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_"
          "stage4_warpsize2x2x1_g1_tensor16x8x8",
          3, 100);
    rg_tensor(s, "y", MP_FP32, -4, 4, 100);
    add_shadow(s, 0.001, 0.002, 0.003);
    rg_shadow_candidate(cJSON_GetObjectItem(cJSON_GetObjectItem(s, "shadow"), "candidates"),
                        "current", 1e-7, 1);
    rg_site_end(&r, s);
  }
  assert_int_equal(rg_end(&r), 0);
  cJSON *rep = rf_report_of(dir);
  const cJSON *sites = rf_get(rep, "sites");
  assert_string_equal(rf_get(cJSON_GetArrayItem(sites, 0), "current_understated")->valuestring,
                      "tf32_possible");
  assert_string_equal(rf_get(cJSON_GetArrayItem(sites, 1), "current_understated")->valuestring,
                      "tf32_kernels");
  cJSON_Delete(rep);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  char *mix = layer_cell(html, "mix", "Measured now rel L2");
  if (!strstr(mix, ">1e-07*") || !strstr(mix, "understated: its kernels ran TF32") ||
      strstr(mix, "may be"))
    fail_msg("%s", mix);
  free(mix);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* The column of layers.csv or ops.csv headed `name`, -1 where none. */
static int csv_col(const char *csv, const char *name) {
  const char *head0 = strncmp(csv, "site,", 5) ? "layer,phase," : "site,layer,";
  for (int c = 0; c < 80; c++)
    if (!strcmp(csv_field(csv, head0, c), name)) return c;
  return -1;
}

/* Field `name` of the CSV row containing `needle`, or starting with what
 * follows needle's leading "\n" (strdup'd). */
static char *csv_get(const char *csv, const char *needle, const char *name) {
  int col = csv_col(csv, name);
  if (col < 0) fail_msg("no column %s", name);
  if (needle[0] == '\n') {
    csv = strstr(csv, needle);
    assert_non_null(csv);
    csv++, needle++;
  }
  char *v = strdup(csv_field(csv, needle, col));
  assert_non_null(v);
  return v;
}

/* The ops table's cell of the column headed `head` in the row of site `id`. */
static char *ops_cell(const char *html, int id, const char *head) {
  const char *t = strstr(html, "<table id=\"ops-table\"");
  assert_non_null(t);
  const char *h = strstr(t, head);
  char want[40];
  snprintf(want, sizeof want, "<tr id=\"op-%d\"", id);
  const char *row = strstr(t, want);
  assert_true(h && row && h < row);
  int col = 0;
  for (const char *p = strstr(t, "</th>"); p && p < h; p = strstr(p + 1, "</th>"))
    col++;
  const char *td = strstr(row, "<td");
  for (int i = 0; i < col; i++)
    td = strstr(td + 1, "<td");
  char *cell = strndup(td, (size_t)(strstr(td, "</td>") - td));
  assert_non_null(cell);
  return cell;
}

/* One Measured cell three ways: the CSV's rel_l2 field is report.json's
 * number (null: "inf"), the page's cell shows it (%.2g; null: infinity);
 * the CSV's flag (NULL: none) is yes exactly where the page's cell has
 * `mark`. Frees field, cell and flag. */
static void measured_agree(char *field, const cJSON *rel, char *cell, char *flag,
                           const char *mark) {
  if (!rel) fail_msg("not in report.json: %s (page: %s)", field, cell);
  if (cJSON_IsNull(rel)) {
    assert_string_equal(field, "inf");
    assert_non_null(strstr(cell, "&infin;"));
  } else {
    char want[40];
    snprintf(want, sizeof want, "%.2g", rel->valuedouble);
    if (!(strtod(field, NULL) == rel->valuedouble) || !strstr(cell, want))
      fail_msg("csv %s, json %.17g, page %s", field, rel->valuedouble, cell);
  }
  if (flag && (!strcmp(flag, "yes") != !!strstr(cell, mark)))
    fail_msg("flag %s, page %s", flag, cell);
  free(field);
  free(cell);
  free(flag);
}

/* A shadowed site: the first n candidates, one call each; an infinite
 * error is written as the raw file writes it (null). */
static void shadow_site(cJSON *site, const char *const *names, const double *rel, int n) {
  cJSON *sh = cJSON_AddObjectToObject(site, "shadow");
  cJSON_AddNumberToObject(sh, "calls", 1);
  cJSON *cs = cJSON_AddObjectToObject(sh, "candidates");
  for (int i = 0; i < n; i++) {
    rg_shadow_candidate(cs, names[i], isinf(rel[i]) ? 1 : rel[i], 1);
    if (!isinf(rel[i])) continue;
    cJSON *c = cJSON_GetObjectItem(cs, names[i]);
    cJSON_ReplaceItemInObject(c, "rel_l2", cJSON_CreateNull());
    cJSON_ReplaceItemInArray(cJSON_GetObjectItem(c, "rel_l2_samples"), 0, cJSON_CreateNull());
  }
}

/* A --shadow run: layers.csv and ops.csv end their rows with the page's
 * Measured columns, each the report.json value the page shows (they had
 * none). lin: a bf16 forward site (its 16-bit candidates on inputs already
 * rounded: daggers) and an fp32 backward one whose `current` and e5m2
 * current-scaling errors are infinite; fast: an FP8 GEMM with FAST_ACCUM
 * (`current` understated: *); plain: not shadowed (empty fields). */
static void the_csv_files_carry_the_pages_measured_columns(void **state) {
  (void)state;
  rg_file r;
  char *dir = rf_run_begin(&r, "csv-shadow");
  static const char *const names[] = {"current",          "fp16",
                                      "fp16_loss_scaled", "bf16",
                                      "fp8_e4m3_current", "fp8_e4m3_delayed",
                                      "mxfp8_e4m3",       "fp8_e5m2_current",
                                      "fp8_e5m2_delayed", "mxfp8_e5m2"};
  static const struct {
    const char *path, *api, *types;
    double rel[10];
  } sites[4] = {
      {"lin/fwd",
       "cublasGemmEx",
       "A=bf16,B=bf16,C=fp32,D=fp32",
       {1e-7, 0.001, 0.0004, 0.003, 0.03, 0.02, 0.025}},
      {"lin/bwd",
       "cublasGemmEx",
       "A=fp32,B=fp32,C=fp32,D=fp32",
       {INFINITY, 0.2, 0.0005, 0.004, 0, 0, 0, INFINITY, 0.09, 0.07}},
      {"fast/fwd",
       "cublasLtMatmul",
       "A=fp8_e4m3,B=fp8_e4m3,C=bf16,D=bf16",
       {0.0625, 0.001, 0.002, 0.003, 0.04, 0.05, 0.06}},
      {"plain/fwd", "cublasGemmEx", "A=fp32,B=fp32,C=fp32,D=fp32", {0}},
  };
  for (int i = 0; i < 4; i++) {
    cJSON *s =
        rg_gemm(i, sites[i].api, sites[i].path, sites[i].types, "32F", "DEFAULT", 64, 64, 64, 5);
    rg_tensor(s, "D", MP_FP32, -4, 4, 100);
    if (i == 2) cJSON_AddTrueToObject(s, "fast_accum");
    if (i < 3) shadow_site(s, names, sites[i].rel, i == 1 ? 10 : 7);
    if (i == 1) /* a backward site measures e5m2 alone */
      for (int c = 4; c < 7; c++)
        cJSON_DeleteItemFromObject(rf_get(s, "shadow.candidates"), names[c]);
    rg_site_end(&r, s);
  }
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL),
       *lcsv = rg_read_text(dir, "layers.csv", NULL), *ocsv = rg_read_text(dir, "ops.csv", NULL);
  cJSON *rep = rg_read_json(dir, "report.json");
  assert_true(html && lcsv && ocsv && rep);
  /* appended: the columns before keep their places */
  assert_non_null(strstr(lcsv, ",nonfinite_tensor,bf16_overflow_tensor,"));
  assert_non_null(strstr(lcsv, ",fp16_underflow_at_applied_scale_estimate,measured_now_rel_l2,"));
  assert_non_null(strstr(ocsv, ",kernel_symbols,measured_now_rel_l2,"));
  for (int pass = 0; pass < 2; pass++) { /* layers, then sites */
    const char *csv = pass ? ocsv : lcsv;
    for (int i = 0; i < (pass ? 3 : 2); i++) {
      const char *name = pass ? sites[i].path : i ? "fast" : "lin";
      char needle[40];
      snprintf(needle, sizeof needle, pass ? ",%s," : "\n%s,", name);
      const cJSON *o = pass ? NULL : rf_layer(rep, name), *x;
      cJSON_ArrayForEach(
          x, rf_get(rep, "sites")) if (pass && !strcmp(rf_get(x, "layer")->valuestring, name)) o =
          x;
      assert_non_null(o);
      int id = pass ? (int)rf_get(o, "id")->valuedouble : -1;
      const cJSON *cs = rf_get(o, "shadow.candidates");
#define CELL(head) (pass ? ops_cell(html, id, head) : layer_cell(html, name, head))
      measured_agree(csv_get(csv, needle, "measured_now_rel_l2"), rf_get(cs, "current.rel_l2"),
                     CELL("Measured now rel L2"), csv_get(csv, needle, "measured_now_understated"),
                     "*");
      char *scaled = csv_get(csv, needle, "measured_fp16_loss_scaled");
      /* fp16 as AMP runs it: loss-scaled in lin (it has gradients) and lin/bwd */
      assert_string_equal(scaled, (pass ? i == 1 : i == 0) ? "yes" : "no");
      const cJSON *fp16 =
          cJSON_GetObjectItem(cs, strcmp(scaled, "yes") ? "fp16" : "fp16_loss_scaled");
      free(scaled);
      measured_agree(csv_get(csv, needle, "measured_fp16_rel_l2"), rf_get(fp16, "rel_l2"),
                     CELL("Measured fp16 rel L2"),
                     csv_get(csv, needle, "measured_fp16_inputs_rounded"), "&dagger;");
      assert_true(cJSON_IsTrue(rf_get(fp16, "inputs_already_rounded")) == (pass ? i != 1 : true));
      measured_agree(csv_get(csv, needle, "measured_bf16_rel_l2"), rf_get(cs, "bf16.rel_l2"),
                     CELL("Measured bf16 rel L2"),
                     csv_get(csv, needle, "measured_bf16_inputs_rounded"), "&dagger;");
      /* best fp8: the layer's recipe (report.json best_fp8), a site's candidate */
      static const char *const best[2][3] = {
          {"mxfp8", "fp8_current"}, {"fp8_e4m3_delayed", "mxfp8_e5m2", "fp8_e4m3_current"}};
      char *b = csv_get(csv, needle, "measured_best_fp8"), *cell = CELL("Measured best fp8");
      assert_string_equal(b, best[pass][i]);
      assert_non_null(strstr(cell, b));
      char key[64];
      snprintf(key, sizeof key, "%s.rel_l2", b);
      if (!pass) assert_string_equal(rf_get(o, "shadow.best_fp8")->valuestring, b);
      measured_agree(csv_get(csv, needle, "measured_best_fp8_rel_l2"),
                     rf_get(pass ? cs : rf_get(o, "shadow.fp8_recipes"), key), cell,
                     csv_get(csv, needle, "measured_best_fp8_inputs_rounded"), "&dagger;");
      free(b);
#undef CELL
    }
  }
  char *under = csv_get(ocsv, ",fast/fwd,", "measured_now_understated"),
       *inf = csv_get(lcsv, "\nlin,", "measured_now_rel_l2");
  assert_string_equal(under, "yes");
  assert_string_equal(inf, "inf");
  free(under);
  free(inf);
  /* not shadowed: every measured field empty, in both files */
  for (int pass = 0; pass < 2; pass++) {
    const char *csv = pass ? ocsv : lcsv;
    const char *row = strstr(csv, pass ? ",plain/fwd," : "\nplain,");
    assert_non_null(row);
    const char *end = strstr(row, "\r\n");
    assert_true(end - row > 10 && !strncmp(end - 10, ",,,,,,,,,,", 10));
  }
  cJSON_Delete(rep);
  free(html);
  free(lcsv);
  free(ocsv);
  rg_rmdir(dir);
  free(dir);
}

/* A layer of plain fp32 GEMMs that TF32 would put on Tensor Cores: the page's
 * layer table says "with TF32", and layers.csv and report.json say the same
 * (they said only tc_eligible no / false). */
static void a_layer_eligible_with_tf32_says_so_in_csv_json_and_html(void **state) {
  (void)state;
  rg_file r;
  char *dir = rf_run_begin(&r, "layer-tf32");
  cJSON *s = rg_gemm(0, "cublasGemmEx", "plain/fwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F",
                     "DEFAULT", 64, 64, 64, 5);
  rg_tensor(s, "D", MP_FP32, -4, 4, 100);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *csv = rg_read_text(dir, "layers.csv", NULL);
  assert_non_null(csv);
  int col = -1, elig = -1;
  for (int c = 0; c < 40 && col < 0; c++) {
    const char *h = csv_field(csv, "layer,phase,", c);
    if (!strcmp(h, "tc_eligible")) elig = c;
    if (!strcmp(h, "tc_eligible_with_tf32")) col = c;
  }
  assert_true(col >= 0);
  assert_string_equal(csv_field(csv, "plain,forward,", elig), "no");
  assert_string_equal(csv_field(csv, "plain,forward,", col), "yes");
  free(csv);
  cJSON *rep = rg_read_json(dir, "report.json");
  assert_non_null(rep);
  const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "layers"), 0);
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(l, "tc_eligible")));
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(l, "tc_eligible_with_tf32")));
  cJSON_Delete(rep);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  const char *row = strstr(html, "<tr id=\"lrow-0\"");
  assert_non_null(row);
  const char *end = strstr(row, "</tr>");
  assert_non_null(end);
  const char *cell = strstr(row, "<td>with TF32</td>");
  assert_true(cell && cell < end);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* Every column of the layer and ops tables says what it is where it is shown:
 * each header cell has a non-empty title, and the limits in the fp8 and
 * loss-scale titles are the advice's own (0.1%, 1%). */
static void every_layer_and_op_column_is_defined_where_it_is_shown(void **state) {
  (void)state;
  char *dir = hostile_run();
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  const char *table = NULL;
  for (int t = 0; t < 2; t++) {
    table = strstr(html, t ? "<table id=\"ops-table\"" : "<table id=\"layer-table\"");
    assert_non_null(table);
    const char *end = strstr(table, "</thead>");
    assert_non_null(end);
    int cols = 0;
    for (const char *th = table; (th = strstr(th, "<th")) && th < end; th++) {
      if (th[3] != ' ' && th[3] != '>') continue; /* <thead> */
      const char *close = strchr(th, '>');
      const char *title = strstr(th, " title=\"");
      assert_true(title && title < close);
      assert_true(title[8] != '"'); /* not empty */
      cols++;
    }
    assert_true(cols >= 15);
  }
  table = strstr(html, "<table id=\"layer-table\"");
  assert_non_null(strstr(table, "at most 0.1% flushed)\">Loss scale (log2)</th>"));
  assert_non_null(strstr(table, "at most 1% flushed)\">fp8 e4m3 fwd</th>"));
  assert_non_null(strstr(table, "several phases\">Phase</th>"));
  /* The ops table's shape cell of a convolution is its geometry (conv n= c=
   * ...), not the implicit GEMM's m, n, k the header said it was. */
  table = strstr(html, "<table id=\"ops-table\"");
  assert_non_null(strstr(table, "a convolution's geometry: conv n= c= HxW k= RxS"));
  assert_null(strstr(table, "their implicit GEMM's"));
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* README: the Measured error columns come with --shadow; without it both
 * tables showed four empty ones. (With it: the tests above.) */
static void the_measured_error_columns_appear_only_with_shadow(void **state) {
  (void)state;
  char *dir = hostile_run();
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  assert_non_null(strstr(html, "<table id=\"ops-table\""));
  assert_null(strstr(html, "<th class=\"sh\""));
  assert_null(strstr(html, "Measured now rel L2"));
  free(html);
  rg_rmdir(dir);
  free(dir);
}

static void trace_nests_ops_inside_layer_slices(void **state) {
  (void)state;
  char *dir = hostile_run();
  cJSON *t = rg_read_json(dir, "trace.json");
  assert_non_null(t);
  const cJSON *evs = cJSON_GetObjectItem(t, "traceEvents"), *e;
  int ops = 0, layers = 0;
  cJSON_ArrayForEach(e, evs) {
    const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
    const cJSON *cat = cJSON_GetObjectItem(e, "cat");
    if (strcmp(ph, "X")) continue;
    assert_int_equal(cJSON_GetObjectItem(e, "tid")->valuedouble, 42);
    if (!strcmp(cat->valuestring, "op")) {
      ops++;
      /* its layer's innermost slice encloses it */
      double ts = cJSON_GetObjectItem(e, "ts")->valuedouble;
      double end = ts + cJSON_GetObjectItem(e, "dur")->valuedouble;
      const char *path = cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "layer")->valuestring;
      const char *leaf = strrchr(path, '/') + 1;
      bool enclosed = false;
      const cJSON *l;
      cJSON_ArrayForEach(l, evs) {
        const cJSON *lc = cJSON_GetObjectItem(l, "cat");
        if (!lc || strcmp(lc->valuestring, "layer")) continue;
        double lts = cJSON_GetObjectItem(l, "ts")->valuedouble;
        double lend = lts + cJSON_GetObjectItem(l, "dur")->valuedouble;
        if (!strcmp(cJSON_GetObjectItem(l, "name")->valuestring, leaf) && lts <= ts && end <= lend)
          enclosed = true;
      }
      assert_true(enclosed);
    } else {
      layers++;
    }
  }
  assert_int_equal(ops, 8);
  assert_true(layers >= 8); /* each op's path has two components, none shared by neighbours */
  cJSON_Delete(t);
  rg_rmdir(dir);
  free(dir);
}

/* The one rule for a percentage in every output: "100" and "0" only when
 * exact, ">99.999" and "<0.001" for the shares that would round to them. */
static void a_percentage_reads_100_or_0_only_when_exact(void **state) {
  (void)state;
  assert_string_equal(mpprof_pct_text(0).s, "0");
  assert_string_equal(mpprof_pct_text(1e-9).s, "<0.001");
  assert_string_equal(mpprof_pct_text(0.0004).s, "<0.001");
  assert_string_equal(mpprof_pct_text(0.001).s, "0.001");
  assert_string_equal(mpprof_pct_text(13.25653076171875).s, "13.3");
  assert_string_equal(mpprof_pct_text(99.94).s, "99.9");
  assert_string_equal(mpprof_pct_text(99.97).s, "99.97");
  assert_string_equal(mpprof_pct_text(99.9989).s, "99.999");
  assert_string_equal(mpprof_pct_text(99.9991).s, ">99.999");
  assert_string_equal(mpprof_pct_text(100).s, "100");
}

/* A layer whose forward.D overflows fp16 in 9997 of 10000 values and whose
 * gradients flush in 9997 of 10000, with 99.97% of the GEMM time on Tensor
 * Cores: no output rounds any of it to 100% (as "%.3g" did). */
static void a_share_short_of_all_never_reads_100_percent(void **state) {
  (void)state;
  rg_file r;
  char *dir = rf_run_begin(&r, "pct");
  static double v[10000];
  cJSON *s = rg_gemm(0, "cublasGemmEx", "big/fwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F", "DEFAULT",
                     100, 100, 1, 1);
  for (int i = 0; i < 10000; i++)
    v[i] = i < 9997 ? 1e5 : 1.0;
  rg_tensor_values(s, "D", MP_FP32, v, 10000);
  rg_kernel(s, "nvjet_hsh_128x64_64x4_1x2_h_bz_coopA_NNT", 1, 999700);
  rg_site_end(&r, s);
  s = rg_gemm(1, "cublasGemmEx", "big/bwd", "A=fp32,B=fp32,C=fp32,D=fp32", "32F", "DEFAULT", 100,
              100, 1, 1);
  for (int i = 0; i < 10000; i++)
    v[i] = i < 9997 ? 1e-12 : 1.0;
  rg_tensor_values(s, "D", MP_FP32, v, 10000);
  rg_kernel(s,
            "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_"
            "aligna4_alignc4_execute_kernel__5x_cublas",
            1, 300);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  char *summary = NULL;
  size_t summary_len = 0;
  FILE *sf = open_memstream(&summary, &summary_len);
  mpprof_report_options o = {.out_dir = dir, .program = NULL, .summary = sf};
  assert_int_equal(mpprof_report_generate(&o), 0);
  fclose(sf);
  assert_non_null(strstr(summary, "Tensor Cores: 99.97% of GEMM/conv GPU time"));
  assert_non_null(strstr(summary, "in 99.97% of values"));
  assert_null(strstr(summary, "100%"));
  char *json = rg_read_text(dir, "report.json", NULL);
  assert_non_null(json);
  assert_null(strstr(json, "100%")); /* findings' messages, the verdict's reasons */
  assert_non_null(strstr(json, "forward.D reaches 1e+05 > fp16 max 65504 in 99.97% of values"));
  assert_non_null(strstr(json, "flush to zero in fp16 for 99.97% of values at scale 1"));
  free(json);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  assert_null(strstr(html, "100%<"));
  assert_null(strstr(html, "100% "));
  assert_null(strstr(html, ">100 <small>")); /* the layer table's share cells */
  assert_non_null(strstr(html, ">99.97 <small>forward.D</small>"));
  assert_non_null(strstr(html, ">99.97% of GEMM/conv GPU time ran on Tensor Cores"));
  free(html);
  char *csv = rg_read_text(dir, "layers.csv", NULL);
  assert_non_null(csv);
  const char *cols[] = {"fp16_overflow_pct", "fp16_underflow_pct"};
  for (int k = 0; k < 2; k++) {
    char *v = csv_get(csv, "big", cols[k]);
    assert_string_equal(v, "99.97");
    free(v);
  }
  free(csv);
  free(summary);
  rg_rmdir(dir);
  free(dir);
}

/* The page's Program line and report.json's argv are the root process's
 * (a launcher's, whose workers' files may be read first): argv came from the
 * first process with one. Words a shell would split are quoted on the page:
 * "./my train's" read as two arguments. */
/* A long NVTX name without a space widened the Layer columns and the chart
 * heading past the window (2312 px at 1400): its cells and the headings wrap
 * anywhere (the browser test checks the width). */
static void a_long_layer_name_wraps_in_the_tables_and_the_chart_heading(void **state) {
  (void)state;
  char *dir = rg_tmpdir("html_long");
  rg_proc p = {"node01", 100, 1, 0, true, "ok", "9.0", "./train"};
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &p), 0);
  char name[420] = "model/";
  for (int i = 0; i < 12; i++)
    strcat(name, "transformer_encoder_layer_block_");
  strcat(name, "attn/fwd");
  cJSON *s =
      rg_gemm(0, "cublasGemmEx", name, "A=fp16,B=fp16,D=fp32", "32F", "DEFAULT", 64, 64, 64, 5);
  rg_tensor(s, "A", MP_FP16, -8, 4, 100);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  assert_non_null(strstr(html, "td.name,h3{overflow-wrap:anywhere}"));
  assert_non_null(strstr(html, "#ops-table td.name{white-space:normal}"));
  name[strlen(name) - 4] = '\0'; /* the layer: without its phase word */
  char want[512];
  snprintf(want, sizeof want, "<td class=\"name\"><a href=\"#layer-0\">%s</a>", name);
  assert_non_null(strstr(html, want)); /* the layer table */
  snprintf(want, sizeof want, "<td class=\"name\"><a href=\"#lrow-0\">%s</a>", name);
  assert_non_null(strstr(html, want)); /* the ops table */
  snprintf(want, sizeof want, "<h3>%s &mdash;", name);
  assert_non_null(strstr(html, want));
  free(html);
  rg_rmdir(dir);
  free(dir);
}

/* More layers than the page charts (200): the layer a high finding is about
 * got no chart when 200 others had more GPU time, and the page did not say
 * how many were charted. It is charted, and the page says "N of M" and the
 * rule. */
static void charts_go_first_to_the_layers_findings_are_about(void **state) {
  (void)state;
  char *dir = rg_tmpdir("html_charts");
  rg_proc p = {"node01", 100, 1, 0, true, "ok", "9.0", "./train"};
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a.json", &p), 0);
  const char *tc = "nvjet_hsh_128x64_64x4_1x2_h_bz_coopA_NNT";
  for (int i = 0; i < 205; i++) {
    char layer[64];
    snprintf(layer, sizeof layer, "deep/block%03d/fwd", i);
    cJSON *s =
        rg_gemm(i, "cublasGemmEx", layer, "A=fp16,B=fp16,D=fp32", "32F", "DEFAULT", 64, 64, 64, 5);
    rg_tensor(s, "A", MP_FP16, -8, 4, 100);
    rg_tensor(s, "D", MP_FP32, -8, 4, 100);
    rg_kernel(s, tc, 5, 10000 + i);
    rg_site_end(&r, s);
  }
  cJSON *s = rg_gemm(205, "cublasGemmEx", "net/big/fwd", "A=fp32,B=fp32,D=fp32", "32F", "DEFAULT",
                     64, 64, 64, 5);
  rg_tensor(s, "A", MP_FP32, -8, 4, 100);
  rg_tensor(s, "D", MP_FP32, 17, 20, 100); /* beyond fp16's 65504: a high finding */
  rg_kernel(s, tc, 5, 10);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  char *html = rg_read_text(dir, "report.html", NULL);
  assert_non_null(html);
  assert_non_null(strstr(html, "<span class=\"sev high\">high</span> net/big"));
  assert_non_null(strstr(html, "<h3>net/big &mdash;"));
  assert_non_null(strstr(html, "Charts for 200 of the 206 layers with scanned values: first the "
                               "layers findings are about (high severity first), then those whose "
                               "verdict is not the most common one, then those with the most GPU "
                               "time or values"));
  size_t charts = 0;
  for (const char *q = html; (q = strstr(q, "<div class=\"layer\"")); q++)
    charts++;
  assert_int_equal(charts, 200);
  free(html);
  rg_rmdir(dir);
  free(dir);
}

static void the_program_line_is_the_root_process_argv_quoted(void **state) {
  (void)state;
  char *dir = rg_tmpdir("argv_root");
  rg_proc worker = {"node01", 200, 100, 0, true, "ok", "9.0", "./worker"};
  rg_proc root = {"node01", 100, 1, -1, true, "ok", "9.0", "./my train's"};
  rg_file r;
  assert_int_equal(rg_begin(&r, dir, "a-worker.json", &worker), 0);
  cJSON *s =
      rg_gemm(0, "cublasGemmEx", "l/fwd", "A=fp16,B=fp16,D=fp32", "32F", "DEFAULT", 8, 8, 8, 1);
  rg_tensor(s, "D", MP_FP32, -4, 4, 100);
  rg_site_end(&r, s);
  assert_int_equal(rg_end(&r), 0);
  assert_int_equal(rg_begin(&r, dir, "b-root.json", &root), 0);
  assert_int_equal(rg_end(&r), 0);
  rf_generate(dir);
  cJSON *rep = rg_read_json(dir, "report.json");
  assert_non_null(rep);
  assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(rep, "argv"), 0)->valuestring,
                      "./my train's");
  assert_string_equal(cJSON_GetObjectItem(rep, "program")->valuestring, "./my train's --steps 2");
  cJSON_Delete(rep);
  char *page = rg_read_text(dir, "report.html", NULL);
  assert_non_null(page);
  assert_non_null(strstr(page, "<b>Program:</b> <code>'./my train'\\''s' --steps 2</code>"));
  free(page);
  rg_rmdir(dir);
  free(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(hostile_nvtx_names_are_escaped),
      cmocka_unit_test(the_page_shows_cpp_kernel_names_demangled),
      cmocka_unit_test(the_page_loads_nothing_from_outside),
      cmocka_unit_test(every_embedded_image_decodes_as_png),
      cmocka_unit_test(csv_quotes_fields_per_rfc4180),
      cmocka_unit_test(csv_fields_that_look_like_formulas_are_text),
      cmocka_unit_test(ops_csv_writes_tf32_out_and_tflops),
      cmocka_unit_test(a_layer_eligible_with_tf32_says_so_in_csv_json_and_html),
      cmocka_unit_test(the_layer_tables_measured_fp16_is_at_scale_1_for_a_forward_layer),
      cmocka_unit_test(a_measured_layers_undefined_candidate_is_not_said_unmeasured),
      cmocka_unit_test(a_fast_accumulating_fp8_layers_current_is_marked),
      cmocka_unit_test(a_layers_current_mark_gives_its_strongest_reason),
      cmocka_unit_test(the_csv_files_carry_the_pages_measured_columns),
      cmocka_unit_test(every_layer_and_op_column_is_defined_where_it_is_shown),
      cmocka_unit_test(the_measured_error_columns_appear_only_with_shadow),
      cmocka_unit_test(trace_nests_ops_inside_layer_slices),
      cmocka_unit_test(a_percentage_reads_100_or_0_only_when_exact),
      cmocka_unit_test(a_share_short_of_all_never_reads_100_percent),
      cmocka_unit_test(the_program_line_is_the_root_process_argv_quoted),
      cmocka_unit_test(a_long_layer_name_wraps_in_the_tables_and_the_chart_heading),
      cmocka_unit_test(charts_go_first_to_the_layers_findings_are_about),
      cmocka_unit_test(a_verdicts_row_chart_and_tally_say_what_it_did_not_see),
      cmocka_unit_test(an_eval_only_run_says_gradients_not_seen_once),
      cmocka_unit_test(the_summary_says_why_a_layer_of_nan_has_no_verdict),
      cmocka_unit_test(a_layer_of_nan_shows_them_in_its_row_and_csv),
      cmocka_unit_test(a_layer_of_nan_names_each_tensor_and_its_empty_panel),
      cmocka_unit_test(without_scanned_values_the_share_cells_are_blank_not_zero),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
