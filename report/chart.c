/* Per-layer exponent-histogram charts as PNG (libpng), drawn pixel by pixel
 * into an RGB buffer: no plotting library, no fonts beyond a 3x5 digit font
 * for the axis.
 *
 * x: binade floor(log2|x|); y: log10(1 + count), forward tensors in the left
 * half of each bin (blue), gradients in the right half (red). Behind the bars
 * the fp16 range is shaded (normal darker, subnormal lighter); under the axis,
 * one strip per format shows its representable binades (fp16, bf16,
 * fp8_e4m3, fp8_e5m2). Above the plot, the loss-scale window: a light red band
 * over the gradient binades fp16 holds at some scale of the window, a dark one
 * over those it holds at the chosen scale. */
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/formats.h"
#include "report/report_internal.h"

#define W 720
#define H 230
#define LEFT 10
#define RIGHT 10
#define TOP 16 /* loss-scale band */
#define PLOT_H 140
#define AXIS_Y (TOP + PLOT_H)
#define LABEL_Y (AXIS_Y + 4)
#define STRIP_Y (AXIS_Y + 14)
#define STRIP_H 6
#define STRIP_GAP 3

typedef struct rgb {
  unsigned char r, g, b;
} rgb;

typedef struct canvas {
  unsigned char *px; /* W * H * 3 */
} canvas;

static const rgb WHITE = {255, 255, 255}, AXIS = {60, 60, 60}, FWD = {31, 119, 180},
                 GRAD = {214, 39, 40}, FP16_N = {205, 235, 205}, FP16_S = {228, 245, 228},
                 C_FP16 = {80, 170, 80}, C_BF16 = {90, 120, 200}, C_E4M3 = {240, 150, 40},
                 C_E5M2 = {150, 90, 190}, BAND = {235, 120, 120}, BAND_W = {248, 205, 205},
                 GRID = {225, 225, 225};

static void fill(canvas *c, int x0, int y0, int x1, int y1, rgb col) {
  if (x0 < 0) x0 = 0;
  if (y0 < 0) y0 = 0;
  if (x1 > W) x1 = W;
  if (y1 > H) y1 = H;
  for (int y = y0; y < y1; y++)
    for (int x = x0; x < x1; x++) {
      unsigned char *p = &c->px[(y * W + x) * 3];
      p[0] = col.r, p[1] = col.g, p[2] = col.b;
    }
}

/* 3x5 glyphs for '0'..'9' and '-', rows top to bottom, 3 bits each. */
static const unsigned char glyphs[11][5] = {
    {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7},
    {5, 5, 7, 1, 1}, {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1},
    {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}, {0, 0, 7, 0, 0},
};

static void text(canvas *c, int x, int y, const char *s, rgb col) {
  for (; *s; s++, x += 4) {
    int g = *s == '-' ? 10 : *s - '0';
    if (g < 0 || g > 10) continue;
    for (int r = 0; r < 5; r++)
      for (int b = 0; b < 3; b++)
        if (glyphs[g][r] & (4 >> b)) fill(c, x + b, y + r, x + b + 1, y + r + 1, col);
  }
}

typedef struct xmap {
  int lo, hi; /* binade range shown */
  double bw;  /* pixels per binade */
} xmap;

static int xpos(const xmap *m, double e) {
  return LEFT + (int)lround((e - m->lo) * m->bw);
}

/* Shade binades [a, b] between rows y0..y1 (clipped to the range shown). */
static void span(canvas *c, const xmap *m, int a, int b, int y0, int y1, rgb col) {
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
  png_bytep *rows = malloc(H * sizeof *rows);
  if (!png || !info || !rows) goto fail;
  if (setjmp(png_jmpbuf(png))) goto fail;
  png_set_write_fn(png, &b, png_write_mem, png_flush_mem);
  png_set_IHDR(png, info, W, H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_compression_level(png, 6);
  for (int y = 0; y < H; y++)
    rows[y] = c->px + (size_t)y * W * 3;
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, NULL);
  png_destroy_write_struct(&png, &info);
  free(rows);
  if (b.oom) {
    free(b.p);
    return -1;
  }
  *ret = b.p;
  *ret_len = b.len;
  return 0;
fail:
  if (png) png_destroy_write_struct(&png, info ? &info : NULL);
  free(rows);
  free(b.p);
  return -1;
}

/* The loss scale whose fp16 range the band shows: the global one when it is in
 * this layer's window, else the middle of the layer's window. */
int mpprof_chart_scale(const mpprof_model *m, const mpprof_layer *l) {
  const mpprof_layer_advice *a = &l->adv;
  const mpprof_loss_scale *g = &m->loss_scale;
  if (g->has_window && g->recommended_log2 >= a->window_lo && g->recommended_log2 <= a->window_hi)
    return g->recommended_log2;
  return (int)floor((a->window_lo + (double)a->window_hi) / 2);
}

int mpprof_layer_chart_png(const mpprof_model *m, const mpprof_layer *l, unsigned char **ret,
                           size_t *ret_len) {
  const mp_format *f16 = mp_format_of(MP_FP16), *bf16 = mp_format_of(MP_BF16),
                  *e4 = mp_format_of(MP_FP8_E4M3), *e5 = mp_format_of(MP_FP8_E5M2);
  if (!f16 || !bf16 || !e4 || !e5) return -1;
  /* Range: the data plus the fp16 range, two binades of margin. */
  int lo = f16->emin_sub - 2, hi = f16->emax + 2;
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_cstats *s = &l->tensors[i].st;
    if (s->nz_lo > s->nz_hi) continue;
    if (s->nz_lo - 2 < lo) lo = s->nz_lo - 2;
    if (s->nz_hi + 2 > hi) hi = s->nz_hi + 2;
  }
  int nb = hi - lo + 1;
  double *fwd = calloc((size_t)nb, sizeof *fwd), *grad = calloc((size_t)nb, sizeof *grad);
  canvas c = {malloc(W * H * 3)};
  if (!fwd || !grad || !c.px) {
    free(fwd);
    free(grad);
    free(c.px);
    return -1;
  }
  for (size_t i = 0; i < l->n_tensors; i++) {
    const mpprof_layer_tensor *t = &l->tensors[i];
    if (t->cls == MP_TCLASS_FORWARD) add_hist(&t->st, fwd, lo, hi);
    if (t->cls == MP_TCLASS_GRADIENT) add_hist(&t->st, grad, lo, hi);
  }
  double maxc = 0;
  for (int i = 0; i < nb; i++)
    maxc = fmax(maxc, fmax(fwd[i], grad[i]));
  xmap xm = {lo, hi, (double)(W - LEFT - RIGHT) / nb};

  fill(&c, 0, 0, W, H, WHITE);
  span(&c, &xm, f16->emin_sub, f16->emin - 1, TOP, AXIS_Y, FP16_S);
  span(&c, &xm, f16->emin, f16->emax, TOP, AXIS_Y, FP16_N);
  for (int e = (lo / 10) * 10; e <= hi; e += 10)
    if (e >= lo) fill(&c, xpos(&xm, e), TOP, xpos(&xm, e) + 1, AXIS_Y, GRID);
  if (l->adv.has_window) {
    int k = mpprof_chart_scale(m, l);
    /* light: binades fp16 holds at some scale of the window; dark: at the chosen one */
    span(&c, &xm, f16->emin_sub - l->adv.window_hi, f16->emax - l->adv.window_lo, 2, TOP - 4,
         BAND_W);
    span(&c, &xm, f16->emin_sub - k, f16->emax - k, 4, TOP - 6, BAND);
  }
  double denom = log10(1 + maxc);
  for (int i = 0; i < nb; i++) {
    int x0 = xpos(&xm, lo + i), x1 = xpos(&xm, lo + i + 1), mid = (x0 + x1 + 1) / 2;
    int hf = fwd[i] > 0 ? (int)fmax(1, lround(PLOT_H * log10(1 + fwd[i]) / denom)) : 0;
    int hg = grad[i] > 0 ? (int)fmax(1, lround(PLOT_H * log10(1 + grad[i]) / denom)) : 0;
    if (x1 - x0 >= 2) {
      fill(&c, x0, AXIS_Y - hf, mid, AXIS_Y, FWD);
      fill(&c, mid, AXIS_Y - hg, x1, AXIS_Y, GRAD);
    } else { /* too narrow to split: the shorter bar drawn over the taller */
      bool fwd_first = hf >= hg;
      fill(&c, x0, AXIS_Y - (fwd_first ? hf : hg), x1, AXIS_Y, fwd_first ? FWD : GRAD);
      fill(&c, x0, AXIS_Y - (fwd_first ? hg : hf), x1, AXIS_Y, fwd_first ? GRAD : FWD);
    }
  }
  fill(&c, LEFT, AXIS_Y, W - RIGHT, AXIS_Y + 1, AXIS);
  for (int e = (lo / 10) * 10; e <= hi; e += 10) {
    if (e < lo) continue;
    int x = xpos(&xm, e);
    fill(&c, x, AXIS_Y, x + 1, AXIS_Y + (e == 0 ? 4 : 3), AXIS);
    char num[16];
    snprintf(num, sizeof num, "%d", e);
    text(&c, x - (int)strlen(num) * 2, LABEL_Y + 1, num, AXIS);
  }
  const mp_format *fm[4] = {f16, bf16, e4, e5};
  rgb col[4] = {C_FP16, C_BF16, C_E4M3, C_E5M2};
  for (int i = 0; i < 4; i++) {
    int y = STRIP_Y + i * (STRIP_H + STRIP_GAP);
    span(&c, &xm, fm[i]->emin_sub, fm[i]->emax, y, y + STRIP_H, col[i]);
  }
  free(fwd);
  free(grad);
  int rc = encode_png(&c, ret, ret_len);
  free(c.px);
  return rc;
}
