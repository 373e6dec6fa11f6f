/* Per-layer exponent-histogram charts as PNG (libpng), drawn pixel by pixel
 * into a palette-indexed buffer at twice the size they are shown (sharp on high-density
 * screens): no plotting library, a 5x7 bitmap font for the labels.
 *
 * x: binade floor(log2|x|), one range shared by every chart of the page
 * (mpprof_chart_range) so layers compare at a glance. Two aligned panels, the
 * forward tensors on top (blue) and the gradients below (red), y =
 * log10(1 + count) on one scale for both, with labelled ticks at powers of
 * ten. Behind the bars: the fp16 range (normal darker, subnormal lighter),
 * the binades fp16 overflows (red tint) and those it flushes to zero (grey
 * tint). Above the gradient panel, the loss-scale window: a light red band
 * over the gradient binades fp16 holds at some scale of the window, a dark one
 * over those it holds at the chosen scale. Under the axis, one labelled strip
 * per format with its representable binades (fp16, bf16, e4m3, e5m2). */
#include <math.h>
#include <png.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/formats.h"
#include "report/report_internal.h"

#define SC 2 /* device pixels per CSS pixel */
#define W (MPPROF_CHART_W * SC)
#define H (MPPROF_CHART_H * SC)
/* Layout in CSS pixels. */
#define LEFT 64
#define RIGHT 12
#define FWD_Y0 8
#define PANEL_H 100
#define BAND_Y0 (FWD_Y0 + PANEL_H + 8)
#define BAND_H 10
#define GRAD_Y0 (BAND_Y0 + BAND_H + 4)
#define AXIS_Y (GRAD_Y0 + PANEL_H)
#define LABEL_Y (AXIS_Y + 5)
#define STRIP_Y (AXIS_Y + 20)
#define STRIP_H 8
#define STRIP_GAP 6
#define FONT 3 /* device pixels per font pixel */

/* The chart's colours: a palette image, drawn one byte per pixel and written
 * four bits per pixel (a sixth of the RGB bytes to filter and deflate; every
 * pixel is one of these, at most 16). */
enum {
  WHITE,
  AXIS,
  FWD,
  GRAD,
  FP16_N,
  FP16_S,
  OVER,
  FLUSH,
  C_FP16,
  C_BF16,
  C_E4M3,
  C_E5M2,
  BAND,
  BAND_W,
  GRID,
  TEXT,
  N_COLORS
};
_Static_assert(N_COLORS <= 16, "the PNG is written 4 bits per pixel");
static const png_color palette[N_COLORS] = {
    [WHITE] = {255, 255, 255}, [AXIS] = {60, 60, 60},      [FWD] = {31, 119, 180},
    [GRAD] = {214, 39, 40},    [FP16_N] = {205, 235, 205}, [FP16_S] = {228, 245, 228},
    [OVER] = {250, 222, 222},  [FLUSH] = {226, 226, 232},  [C_FP16] = {80, 170, 80},
    [C_BF16] = {90, 120, 200}, [C_E4M3] = {240, 150, 40},  [C_E5M2] = {150, 90, 190},
    [BAND] = {235, 120, 120},  [BAND_W] = {248, 205, 205}, [GRID] = {215, 215, 215},
    [TEXT] = {40, 40, 40}};
typedef unsigned char color; /* an index in palette */

typedef struct canvas {
  unsigned char *px; /* W * H palette indices */
} canvas;

/* Device-pixel rectangle. */
static void fill_dev(canvas *c, int x0, int y0, int x1, int y1, color col) {
  if (x0 < 0) x0 = 0;
  if (y0 < 0) y0 = 0;
  if (x1 > W) x1 = W;
  if (y1 > H) y1 = H;
  for (int y = y0; x0 < x1 && y < y1; y++)
    memset(&c->px[(size_t)y * W + x0], col, (size_t)(x1 - x0));
}

/* CSS-pixel rectangle (x may be fractional: device precision). */
static void fill(canvas *c, double x0, double y0, double x1, double y1, color col) {
  fill_dev(c, (int)lround(x0 * SC), (int)lround(y0 * SC), (int)lround(x1 * SC),
           (int)lround(y1 * SC), col);
}

/* 5x7 glyphs, rows top to bottom, bit 4 = leftmost column. */
static const struct {
  char ch;
  unsigned char row[7];
} glyphs[] = {
    {'0', {14, 17, 19, 21, 25, 17, 14}}, {'1', {4, 12, 4, 4, 4, 4, 14}},
    {'2', {14, 17, 1, 2, 4, 8, 31}},     {'3', {31, 2, 4, 2, 1, 17, 14}},
    {'4', {2, 6, 10, 18, 31, 2, 2}},     {'5', {31, 16, 30, 1, 1, 17, 14}},
    {'6', {6, 8, 16, 30, 17, 17, 14}},   {'7', {31, 1, 2, 4, 8, 8, 8}},
    {'8', {14, 17, 17, 14, 17, 17, 14}}, {'9', {14, 17, 17, 15, 1, 2, 12}},
    {'-', {0, 0, 0, 31, 0, 0, 0}},       {'a', {0, 0, 14, 1, 15, 17, 15}},
    {'b', {16, 16, 22, 25, 17, 17, 30}}, {'d', {1, 1, 13, 19, 17, 17, 15}},
    {'e', {0, 0, 14, 17, 31, 16, 14}},   {'f', {6, 9, 8, 28, 8, 8, 8}},
    {'g', {0, 15, 17, 17, 15, 1, 14}},   {'i', {4, 0, 12, 4, 4, 4, 14}},
    {'k', {16, 16, 18, 20, 24, 20, 18}}, {'l', {12, 4, 4, 4, 4, 4, 14}},
    {'m', {0, 0, 26, 21, 21, 17, 17}},   {'n', {0, 0, 22, 25, 17, 17, 17}},
    {'o', {0, 0, 14, 17, 17, 17, 14}},   {'p', {0, 0, 30, 17, 30, 16, 16}},
    {'r', {0, 0, 22, 25, 16, 16, 16}},   {'s', {0, 0, 14, 16, 14, 1, 30}},
    {'t', {8, 8, 28, 8, 8, 9, 6}},       {'u', {0, 0, 17, 17, 17, 19, 13}},
    {'w', {0, 0, 17, 17, 21, 21, 10}},   {'M', {17, 27, 21, 21, 17, 17, 17}},
    {'G', {14, 17, 16, 23, 17, 17, 15}}, {'T', {31, 4, 4, 4, 4, 4, 4}},
};

#define GLYPH_ADV (6 * FONT) /* device pixels per character */

static int text_width(const char *s) {
  return (int)strlen(s) * GLYPH_ADV - FONT;
}

/* Text with its top-left at CSS (x, y). */
static void text(canvas *c, double x, double y, const char *s, color col) {
  int dx = (int)lround(x * SC), dy = (int)lround(y * SC);
  for (; *s; s++, dx += GLYPH_ADV) {
    const unsigned char *rows = NULL;
    for (size_t g = 0; g < sizeof glyphs / sizeof *glyphs; g++)
      if (glyphs[g].ch == *s) rows = glyphs[g].row;
    if (!rows) continue;
    for (int r = 0; r < 7; r++)
      for (int b = 0; b < 5; b++)
        if (rows[r] & (16 >> b))
          fill_dev(c, dx + b * FONT, dy + r * FONT, dx + (b + 1) * FONT, dy + (r + 1) * FONT, col);
  }
}

/* Right-aligned at CSS x. */
static void text_right(canvas *c, double x, double y, const char *s, color col) {
  text(c, x - (double)text_width(s) / SC, y, s, col);
}

typedef struct xmap {
  int lo, hi; /* binade range shown */
  double bw;  /* CSS pixels per binade */
} xmap;

static double xpos(const xmap *m, double e) {
  return LEFT + (e - m->lo) * m->bw;
}

/* Shade binades [a, b] between rows y0..y1 (clipped to the range shown). */
static void span(canvas *c, const xmap *m, int a, int b, double y0, double y1, color col) {
  if (a < m->lo) a = m->lo;
  if (b > m->hi) b = m->hi;
  if (a > b) return;
  fill(c, xpos(m, a), y0, xpos(m, b + 1), y1, col);
}

static void add_hist(const mpprof_cstats *s, double *bins, int lo, int hi) {
  for (int e = s->nz_lo; e <= s->nz_hi; e++)
    if (e >= lo && e <= hi) bins[e - lo] += (double)s->bins[e - s->nz_lo];
}

typedef struct membuf {
  unsigned char *p;
  size_t len, cap;
  bool oom;
} membuf;

static void png_write_mem(png_structp png, png_bytep data, png_size_t n) {
  membuf *b = png_get_io_ptr(png);
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 8192;
    while (cap < b->len + n)
      cap *= 2;
    unsigned char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = true;
      return;
    }
    b->p = np, b->cap = cap;
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static void png_flush_mem(png_structp png) {
  (void)png;
}

static int encode_png(const canvas *c, unsigned char **ret, size_t *ret_len) {
  membuf b = {0};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  if (!png || !info) goto fail;
  if (setjmp(png_jmpbuf(png))) goto fail;
  png_set_write_fn(png, &b, png_write_mem, png_flush_mem);
  png_set_IHDR(png, info, W, H, 4, PNG_COLOR_TYPE_PALETTE, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_PLTE(png, info, palette, N_COLORS);
  /* Most rows equal the one above: "up" makes them zeros, which run-length
   * deflate packs tighter than level 6 did the adaptive RGB rows (200
   * charts, 4-bit rows: ~0.27 s; 8-bit rows at level 1: ~0.5 s; RGB at
   * level 6: 3-4 s). */
  png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_UP);
  png_set_compression_level(png, 1);
  png_set_compression_strategy(png, Z_RLE);
  /* run-length matches use no hash: the smallest one, which zlib slides
   * every 32 KB for nothing (that slide was a third of the deflate's time) */
  png_set_compression_mem_level(png, 1);
  png_write_info(png, info);
  /* two indices a byte, packed here (libpng's png_set_packing goes bit by
   * bit: it cost more than the deflate) */
  unsigned char row[(W + 1) / 2];
  for (int y = 0; y < H; y++) {
    const unsigned char *px = c->px + (size_t)y * W;
    int x = 0;
#ifdef __SSE2__
    /* 32 indices -> 16 bytes: each 16-bit lane (a, b) -> a << 4 | b */
    const __m128i lo = _mm_set1_epi16(0x00ff);
    for (; x + 16 <= W / 2; x += 16) {
      __m128i p0 = _mm_loadu_si128((const __m128i *)(const void *)(px + 2 * x));
      __m128i p1 = _mm_loadu_si128((const __m128i *)(const void *)(px + 2 * x + 16));
      __m128i q0 = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(p0, lo), 4), _mm_srli_epi16(p0, 8));
      __m128i q1 = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(p1, lo), 4), _mm_srli_epi16(p1, 8));
      _mm_storeu_si128((__m128i *)(void *)(row + x), _mm_packus_epi16(q0, q1));
    }
#endif
    for (; x < W / 2; x++)
      row[x] = (unsigned char)(px[2 * x] << 4 | px[2 * x + 1]);
    if (W % 2) row[W / 2] = (unsigned char)(px[W - 1] << 4);
    png_write_row(png, row);
  }
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  if (b.oom) {
    free(b.p);
    return -1;
  }
  *ret = b.p;
  *ret_len = b.len;
  return 0;
fail:
  if (png) png_destroy_write_struct(&png, info ? &info : NULL);
  free(b.p);
  return -1;
}

/* The loss scale whose fp16 range the band shows: the global one when it is in
 * this layer's window, else the one the layer's window suggests. */
int mpprof_chart_scale(const mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_advice *a = &l->adv;
  const mpprof_applied_scale *g = &m->loss_scale;
  if (g->has_window && g->recommended_log2 >= a->window_lo && g->recommended_log2 <= a->window_hi)
    return g->recommended_log2;
  return mp_loss_scale_pick(a->window_lo, a->window_hi, a->beyond_lo, a->beyond_hi);
}

void mpprof_chart_range(const mpprof_model *m, const bool *charted, int *ret_lo, int *ret_hi) {
  const mp_format *f16 = mp_format_of(MP_FP16);
  /* The fp16 range and every charted layer's values, one binade of margin. */
  int lo = f16->emin_sub - 2, hi = f16->emax + 2;
  for (size_t i = 0; i < m->n_layers; i++) {
    if (!charted[i]) continue;
    const mpprof_layer *l = &m->layers[i];
    for (size_t t = 0; t < l->n_tensors; t++) {
      const mpprof_cstats *s = &l->tensors[t].st;
      if (s->nz_lo > s->nz_hi) continue;
      if (s->nz_lo - 1 < lo) lo = s->nz_lo - 1;
      if (s->nz_hi + 1 > hi) hi = s->nz_hi + 1;
    }
  }
  *ret_lo = lo;
  *ret_hi = hi;
}

void mpprof_layer_hist(const mpprof_layer *l, int lo, int hi, double *fwd, double *grad) {
  memset(fwd, 0, (size_t)(hi - lo + 1) * sizeof *fwd);
  memset(grad, 0, (size_t)(hi - lo + 1) * sizeof *grad);
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->cls == MP_TCLASS_FORWARD) add_hist(&t->st, fwd, lo, hi);
    if (t->cls == MP_TCLASS_GRADIENT) add_hist(&t->st, grad, lo, hi);
  }
}

/* "1", "10", "100", "1k", ... "1T": the label of 10^p. */
static void decade_label(int p, char *buf, size_t n) {
  static const char *const unit[] = {"", "k", "M", "G", "T"};
  int u = p / 3 < 4 ? p / 3 : 4;
  int z = p - 3 * u;
  snprintf(buf, n, "1%s%s", z == 0 ? "" : z == 1 ? "0" : "00", unit[u]);
}

/* One panel: background marks, grid, y ticks, bars, its title. */
static void panel(canvas *c, const xmap *xm, double y0, const double *bins, double denom, color bar,
                  const char *title) {
  const mp_format *f16 = mp_format_of(MP_FP16);
  double y1 = y0 + PANEL_H;
  /* flushed by fp16 (|x| <= 2^(emin_sub-1): binades below emin_sub - 1 entirely) and overflowing */
  span(c, xm, xm->lo, f16->emin_sub - 2, y0, y1, FLUSH);
  span(c, xm, f16->emax + 1, xm->hi, y0, y1, OVER);
  span(c, xm, f16->emin_sub, f16->emin - 1, y0, y1, FP16_S);
  span(c, xm, f16->emin, f16->emax, y0, y1, FP16_N);
  for (int e = (int)floor(xm->lo / 10.0) * 10; e <= xm->hi; e += 10)
    if (e >= xm->lo) fill(c, xpos(xm, e), y0, xpos(xm, e) + 0.5, y1, GRID);
  /* y ticks at powers of ten of the count: height = log10(1 + count) / denom */
  for (int p = 0; denom > 0 && p <= (int)denom; p++) {
    double y = y1 - PANEL_H * log10(1 + pow(10, p)) / denom;
    if (p > 0 && y < y0 + 4) break;
    fill(c, LEFT - 4, y, LEFT, y + 0.5, AXIS);
    fill(c, LEFT, y, xpos(xm, xm->hi + 1), y + 0.5, GRID);
    char lab[16];
    decade_label(p, lab, sizeof lab);
    text_right(c, LEFT - 6, y - 5.25 / SC * FONT, lab, TEXT);
  }
  for (int i = 0; i <= xm->hi - xm->lo; i++) {
    if (bins[i] <= 0) continue;
    double h = fmax(1, PANEL_H * log10(1 + bins[i]) / denom);
    double x0 = xpos(xm, xm->lo + i), x1 = xpos(xm, xm->lo + i + 1);
    fill(c, x0 + (x1 - x0 > 3 ? 0.5 : 0), y1 - h, x1, y1, bar);
  }
  fill(c, LEFT - 0.5, y0, LEFT, y1, AXIS);
  fill(c, LEFT, y1 - 0.5, xpos(xm, xm->hi + 1), y1, AXIS);
  text(c, LEFT + 6, y0 + 3, title, bar);
}

bool mpprof_layer_has_gradient_tensor(const mpprof_layer *l) {
  for (size_t i = 0; i < l->n_tensors; i++)
    if (l->tensors[i].cls == MP_TCLASS_GRADIENT && l->tensors[i].st.count) return true;
  return false;
}

int mpprof_layer_chart_png(const mpprof_model *m, const mpprof_layer *l, int lo, int hi,
                           unsigned char **ret, size_t *ret_len) {
  const mp_format *f16 = mp_format_of(MP_FP16), *bf16 = mp_format_of(MP_BF16),
                  *e4 = mp_format_of(MP_FP8_E4M3), *e5 = mp_format_of(MP_FP8_E5M2);
  if (!f16 || !bf16 || !e4 || !e5 || hi < lo) return -1;
  int nb = hi - lo + 1;
  double *fwd = calloc((size_t)nb, sizeof *fwd), *grad = calloc((size_t)nb, sizeof *grad);
  canvas c = {malloc((size_t)W * H)};
  if (!fwd || !grad || !c.px) {
    free(fwd);
    free(grad);
    free(c.px);
    return -1;
  }
  mpprof_layer_hist(l, lo, hi, fwd, grad);
  double maxc = 0;
  for (int i = 0; i < nb; i++)
    maxc = fmax(maxc, fmax(fwd[i], grad[i]));
  xmap xm = {lo, hi, (double)(MPPROF_CHART_W - LEFT - RIGHT) / nb};
  double denom = maxc > 0 ? log10(1 + maxc) : 1;

  fill_dev(&c, 0, 0, W, H, WHITE);
  panel(&c, &xm, FWD_Y0, fwd, denom, FWD, "forward");
  panel(&c, &xm, GRAD_Y0, grad, denom, GRAD,
        mpprof_layer_has_gradient_tensor(l) ? "gradients" : MPPROF_NO_GRADIENTS_PANEL);
  if (l->adv.has_window) {
    int k = mpprof_chart_scale(m, l);
    /* light: binades fp16 holds at some scale of the window; dark: at the chosen one */
    span(&c, &xm, f16->emin_sub - l->adv.window_hi, f16->emax - l->adv.window_lo, BAND_Y0,
         BAND_Y0 + BAND_H, BAND_W);
    span(&c, &xm, f16->emin_sub - k, f16->emax - k, BAND_Y0 + 2, BAND_Y0 + BAND_H - 2, BAND);
  }
  for (int e = (int)floor(lo / 10.0) * 10; e <= hi; e += 10) {
    if (e < lo) continue;
    double x = xpos(&xm, e);
    fill(&c, x, AXIS_Y, x + 0.5, AXIS_Y + 4, AXIS);
    char num[16];
    snprintf(num, sizeof num, "%d", e);
    text(&c, x - (double)text_width(num) / SC / 2, LABEL_Y, num, TEXT);
  }
  const mp_format *fm[4] = {f16, bf16, e4, e5};
  static const char *const names[4] = {"fp16", "bf16", "e4m3", "e5m2"};
  color col[4] = {C_FP16, C_BF16, C_E4M3, C_E5M2};
  for (int i = 0; i < 4; i++) {
    double y = STRIP_Y + i * (STRIP_H + STRIP_GAP);
    span(&c, &xm, fm[i]->emin_sub, fm[i]->emax, y, y + STRIP_H, col[i]);
    text_right(&c, LEFT - 6, y + STRIP_H / 2.0 - 3.5 * FONT / SC, names[i], col[i]);
  }
  free(fwd);
  free(grad);
  int rc = encode_png(&c, ret, ret_len);
  free(c.px);
  return rc;
}
