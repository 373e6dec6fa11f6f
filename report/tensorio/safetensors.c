/* safetensors files: the header is JSON (read with cJSON, bounded by the
 * format's 100 MiB limit), checked member by member against the data that
 * follows it; the tensors point into the file's mapping. */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "analysis/formats.h"

/* The file's dtype names of the formats mpprof scans. */
static const struct {
  const char *name;
  mp_dtype dtype;
} dtype_names[] = {
    {"F64", MP_FP64},  {"F32", MP_FP32},         {"F16", MP_FP16},
    {"BF16", MP_BF16}, {"F8_E4M3", MP_FP8_E4M3}, {"F8_E5M2", MP_FP8_E5M2},
};

static mp_dtype dtype_of(const char *name) {
  for (size_t i = 0; i < sizeof dtype_names / sizeof *dtype_names; i++)
    if (!strcmp(dtype_names[i].name, name)) return dtype_names[i].dtype;
  return MP_DTYPE_INVALID;
}

/* The element size of the format's other whole-byte dtypes (listed, never
 * scanned), so that their data is checked as a scanned tensor's is: a file
 * whose I64 tensor's data_offsets hold fewer bytes than its shape needs is
 * cut short or corrupt, not a tensor to skip (Hugging Face's reader refuses
 * it too). Names not here (sub-byte F4 / F6_*, future ones) are listed
 * unchecked. */
static const struct {
  const char *name;
  unsigned size;
} unread_sizes[] = {
    {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E8M0", 1}, {"U16", 2}, {"I16", 2},
    {"U32", 4},  {"I32", 4}, {"U64", 8}, {"I64", 8},     {"C64", 8},
};

/* Bytes per element of a tensor of dtype (as mpprof reads it) named name;
 * 0 when not known. */
static unsigned element_size(mp_dtype dtype, const char *name) {
  if (dtype != MP_DTYPE_INVALID) return mp_dtype_size(dtype);
  for (size_t i = 0; i < sizeof unread_sizes / sizeof *unread_sizes; i++)
    if (!strcmp(unread_sizes[i].name, name)) return unread_sizes[i].size;
  return 0;
}

bool mpprof_safetensors_sniff(const void *head, size_t len, const char *path) {
  static const char ext[] = ".safetensors";
  const size_t pl = strlen(path), el = sizeof ext - 1;
  return (len >= 9 && ((const unsigned char *)head)[8] == '{') ||
         (len > 0 && pl >= el && !strcmp(path + pl - el, ext));
}

/* A JSON number that is a whole number in [0, 2^53] (exact as a double). */
static bool whole(const cJSON *v, uint64_t *ret) {
  if (!cJSON_IsNumber(v)) return false;
  double d = v->valuedouble;
  if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d)) return false;
  *ret = (uint64_t)d;
  return true;
}

/* The refusal of a shape whose element count or byte size passes 2^64
 * (text: the shape as mpprof_shape_format writes it). */
static int shape_overflows(char *err, size_t errlen, const char *name, const char *text) {
  return mpprof_tensorio_fail(err, errlen, "tensor '%s': shape %s overflows 64 bits", name, text);
}

/* One member of the header: a tensor's dtype, shape and data offsets, checked
 * against the data (data_len bytes at data). */
static int tensor_entry(const cJSON *m, const unsigned char *data, uint64_t data_len,
                        mpprof_named_tensor *e, uint64_t *ret_begin, uint64_t *ret_end, char *err,
                        size_t errlen) {
  const char *name = m->string;
  if (!cJSON_IsObject(m))
    return mpprof_tensorio_fail(err, errlen, "tensor '%s': not a JSON object", name);
  const cJSON *dt = NULL, *shape = NULL, *offs = NULL, *k;
  cJSON_ArrayForEach(k, m) {
    const cJSON **slot = !strcmp(k->string, "dtype")          ? &dt
                         : !strcmp(k->string, "shape")        ? &shape
                         : !strcmp(k->string, "data_offsets") ? &offs
                                                              : NULL;
    if (!slot)
      return mpprof_tensorio_fail(err, errlen, "tensor '%s': unknown key '%s'", name, k->string);
    if (*slot)
      return mpprof_tensorio_fail(err, errlen, "tensor '%s': key '%s' twice", name, k->string);
    *slot = k;
  }
  if (!dt || !shape || !offs)
    return mpprof_tensorio_fail(err, errlen, "tensor '%s': no '%s'", name,
                                !dt      ? "dtype"
                                : !shape ? "shape"
                                         : "data_offsets");
  if (!cJSON_IsString(dt) || strlen(dt->valuestring) >= sizeof e->dtype_name || !dt->valuestring[0])
    return mpprof_tensorio_fail(err, errlen, "tensor '%s': dtype is not a dtype name", name);
  snprintf(e->dtype_name, sizeof e->dtype_name, "%s", dt->valuestring);
  mpprof_tensor *t = &e->t;
  t->dtype = dtype_of(e->dtype_name);
  if (!cJSON_IsArray(shape))
    return mpprof_tensorio_fail(err, errlen, "tensor '%s': shape is not an array", name);
  int ndim = cJSON_GetArraySize(shape);
  if (ndim > MPPROF_TENSOR_MAX_DIMS)
    return mpprof_tensorio_fail(err, errlen, "tensor '%s': %d dimensions (at most %d)", name, ndim,
                                MPPROF_TENSOR_MAX_DIMS);
  t->ndim = 0;
  cJSON_ArrayForEach(k, shape) {
    if (!whole(k, &t->shape[t->ndim]))
      return mpprof_tensorio_fail(
          err, errlen, "tensor '%s': shape holds something other than a size in [0, 2^53]", name);
    t->ndim++;
  }
  uint64_t begin, end;
  if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
    return mpprof_tensorio_fail(
        err, errlen, "tensor '%s': data_offsets is not [begin, end] with begin <= end", name);
  if (!whole(cJSON_GetArrayItem(offs, 0), &begin) || !whole(cJSON_GetArrayItem(offs, 1), &end))
    return mpprof_tensorio_fail(
        err, errlen, "tensor '%s': data_offsets holds something other than an offset in [0, 2^53]",
        name);
  if (begin > end)
    return mpprof_tensorio_fail(
        err, errlen, "tensor '%s': data_offsets is not [begin, end] with begin <= end", name);
  if (end > data_len)
    return mpprof_tensorio_fail(err, errlen,
                                "tensor '%s': truncated data: it ends at byte %" PRIu64
                                " of the data, which has %" PRIu64,
                                name, end, data_len);
  t->data = data + begin;
  *ret_begin = begin;
  *ret_end = end;
  t->byteswap = MPPROF_HOST_BIG_ENDIAN;
  const unsigned size = element_size(t->dtype, e->dtype_name);
  if (!size) return 0; /* listed, never scanned, its size unknown */
  uint64_t count, bytes;
  char text[MPPROF_SHAPE_TEXT_MAX];
  mpprof_shape_format(t->shape, t->ndim, text, sizeof text);
  if (mpprof_shape_size(t->shape, t->ndim, size, &count, &bytes) < 0)
    return shape_overflows(err, errlen, name, text);
  if (t->dtype != MP_DTYPE_INVALID) t->count = count; /* a listed one has no values */
  if (bytes != end - begin)
    return mpprof_tensorio_fail(err, errlen,
                                "tensor '%s': shape %s of %s needs %" PRIu64
                                " bytes, data_offsets hold %" PRIu64,
                                name, text, e->dtype_name, bytes, end - begin);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(const mpprof_named_tensor *const *)a)->name,
                (*(const mpprof_named_tensor *const *)b)->name);
}

/* A tensor's data_offsets, for the overlap check. */
typedef struct span {
  uint64_t begin, end;
  const char *name;
} span;

static int by_begin(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->begin != y->begin ? (x->begin > y->begin) - (x->begin < y->begin)
                              : (x->end > y->end) - (x->end < y->end);
}

/* The format promises that tensors do not overlap: its README ("when reading
 * the file, there's a guarantee that addresses in the file do not overlap in
 * any way") and its reader (Metadata::validate, huggingface/safetensors,
 * refuses with InvalidOffset a tensor that does not begin where the one
 * before it, by offset, ended). Overlapping tensors would also make a small
 * file scan its data many times over. Tensors of no bytes overlap nothing;
 * bytes no tensor names (which that reader refuses too) cost no scan and are
 * let be. */
static int check_overlap(span *sp, size_t n, char *err, size_t errlen) {
  qsort(sp, n, sizeof *sp, by_begin);
  const span *last = NULL; /* the non-empty tensor that ends last so far */
  for (size_t i = 0; i < n; i++) {
    if (sp[i].begin == sp[i].end) continue;
    if (last && sp[i].begin < last->end)
      return mpprof_tensorio_fail(
          err, errlen,
          "tensors '%s' and '%s' overlap (data_offsets [%" PRIu64 ", %" PRIu64 "] and [%" PRIu64
          ", %" PRIu64 "]): the format does not allow it",
          last->name, sp[i].name, last->begin, last->end, sp[i].begin, sp[i].end);
    if (!last || sp[i].end > last->end) last = &sp[i];
  }
  return 0;
}

/* Whether the JSON string text s[0..n) (between its quotes) reads as lit,
 * an ASCII string without NUL. */
static bool key_is(const char *s, size_t n, const char *lit) {
  for (size_t i = 0; i < n; i++, lit++) {
    unsigned c = (unsigned char)s[i];
    if (c == '\\' && ++i < n) {
      switch (s[i]) {
      case 'b':
        c = '\b';
        break;
      case 'f':
        c = '\f';
        break;
      case 'n':
        c = '\n';
        break;
      case 'r':
        c = '\r';
        break;
      case 't':
        c = '\t';
        break;
      case 'u': {
        char hex[5] = {0};
        if (n - i < 5) return false;
        memcpy(hex, s + i + 1, 4);
        c = (unsigned)strtoul(hex, NULL, 16);
        i += 4;
        break;
      }
      default:
        c = (unsigned char)s[i]; /* \" \\ \/ */
      }
    }
    if (!*lit || c != (unsigned char)*lit) return false;
  }
  return !*lit;
}

/* Containers nested in a header (a valid one nests 3: the header, a tensor's
 * entry, its shape or data_offsets). */
#define HEADER_MAX_NESTING 16

/* One open container of the header's text, for header_scan. */
typedef struct jlevel {
  bool object, expect_key;
  uint64_t count;  /* values it holds so far */
  const char *key; /* an object's key for the value being read: its text */
  size_t key_len;
} jlevel;

/* The header's text h[0..n), scanned before cJSON builds a tree of it: what
 * JSON or the format forbids and cJSON would take, or would build a large
 * tree of, is refused here, in one pass, with nothing allocated.
 * - a raw byte below 0x20 in a string (JSON allows it only escaped; cJSON
 *   takes it, and a raw NUL would cut a name short);
 * - a key that holds \u0000 (cJSON ends a string at its NUL, so "a\u0000x"
 *   and "a\u0000y" would both read as "a"); a value may hold one;
 * - a __metadata__ that is not an object, or holds a value that is not a
 *   string (the format allows strings only, and Hugging Face's reader
 *   refuses others): its 20 MB of [0,0,...] took 841 MB as cJSON's tree;
 * - a tensor's entry that is an array, that has a key other than dtype,
 *   shape and data_offsets, that holds an array or object of more than
 *   MPPROF_TENSOR_MAX_DIMS values, or a container inside one of its arrays:
 *   its arrays are a shape of at most that many dimensions and two offsets,
 *   so no entry makes more cJSON nodes than a valid one can (an entry of
 *   60 unknown keys of 60 values each, repeated through 20 MB, took 772 MB);
 * - nesting deeper than HEADER_MAX_NESTING.
 * Text that is not JSON is left to cJSON to refuse: 0 then. */
static int header_scan(const char *h, size_t n, char *err, size_t errlen) {
  jlevel lv[HEADER_MAX_NESTING];
  int d = 0;           /* containers open; the header's object is lv[0] */
  const char *tk = ""; /* the key of the root member being read, and */
  size_t tkl = 0;      /* its length */
  bool meta = false;   /* that member is __metadata__ */
  for (size_t i = 0; i < n; i++) {
    const char c = h[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':') continue;
    if ((unsigned char)c < 0x20) /* cJSON skips it as white space */
      return mpprof_tensorio_fail(
          err, errlen, "the header holds the raw control byte 0x%02x (not JSON)", (unsigned char)c);
    if (c == ',') {
      if (d) lv[d - 1].expect_key = lv[d - 1].object;
      continue;
    }
    if (c == '}' || c == ']') {
      if (!d) return 0;
      const jlevel *l = &lv[--d];
      if (d >= 1 && !meta && l->count > MPPROF_TENSOR_MAX_DIMS) {
        if (d == 2 && !l->object && key_is(lv[1].key, lv[1].key_len, "shape"))
          return mpprof_tensorio_fail(err, errlen,
                                      "tensor '%.*s': %" PRIu64 " dimensions (at most %d)",
                                      (int)tkl, tk, l->count, MPPROF_TENSOR_MAX_DIMS);
        if (d == 1)
          return mpprof_tensorio_fail(err, errlen,
                                      "tensor '%.*s': %" PRIu64
                                      " keys in its entry (dtype, shape and data_offsets are its "
                                      "keys)",
                                      (int)tkl, tk, l->count);
        return mpprof_tensorio_fail(err, errlen,
                                    "tensor '%.*s': its entry holds %s of %" PRIu64
                                    " values (a shape holds at most %d sizes)",
                                    (int)tkl, tk, l->object ? "an object" : "an array", l->count,
                                    MPPROF_TENSOR_MAX_DIMS);
      }
      if (!d) return 0; /* the header's object ends: cJSON reads the rest */
      continue;
    }
    /* a value, or an object's key */
    const char *str = NULL;
    size_t str_len = 0;
    if (c == '"') {
      bool nul = false;
      size_t j = i + 1;
      for (; j < n && h[j] != '"'; j++) {
        if ((unsigned char)h[j] < 0x20)
          return mpprof_tensorio_fail(err, errlen,
                                      "a string in the header holds the raw control byte 0x%02x "
                                      "(JSON allows it only escaped)",
                                      (unsigned char)h[j]);
        if (h[j] == '\\' && ++j < n && h[j] == 'u' && n - j > 4 && !memcmp(h + j + 1, "0000", 4))
          nul = true;
      }
      if (j >= n) return 0;
      str = h + i + 1;
      str_len = j - i - 1;
      i = j;
      if (d && lv[d - 1].expect_key) {
        if (nul)
          return mpprof_tensorio_fail(err, errlen,
                                      "a name in the header holds a NUL character (\\u0000), which "
                                      "would cut it short");
        lv[d - 1].key = str;
        lv[d - 1].key_len = str_len;
        lv[d - 1].expect_key = false;
        if (d == 2 && !meta && !key_is(str, str_len, "dtype") && !key_is(str, str_len, "shape") &&
            !key_is(str, str_len, "data_offsets")) /* as tensor_entry says it */
          return mpprof_tensorio_fail(err, errlen, "tensor '%.*s': unknown key '%.*s'", (int)tkl,
                                      tk, (int)str_len, str);
        continue;
      }
    } else if (c != '{' && c != '[') { /* a number, true, false, null */
      while (i + 1 < n && !strchr(",:]}[{\" \t\n\r", h[i + 1]))
        i++;
    }
    if (d) {
      jlevel *p = &lv[d - 1];
      p->count++;
      if (d == 1) { /* a member of the header: a tensor, or __metadata__ */
        tk = p->key;
        tkl = p->key_len;
        meta = key_is(tk, tkl, "__metadata__");
        if (meta && c != '{')
          return mpprof_tensorio_fail(err, errlen, "__metadata__ is not a JSON object");
        if (!meta && c == '[')
          return mpprof_tensorio_fail(err, errlen, "tensor '%.*s': not a JSON object", (int)tkl,
                                      tk);
      } else if (d == 2 && meta && !str) {
        return mpprof_tensorio_fail(err, errlen,
                                    "__metadata__: the value of '%.*s' is not a string (the "
                                    "format allows only strings)",
                                    (int)p->key_len, p->key);
      }
    }
    if (c == '{' || c == '[') {
      if (d >= 3 && !meta) /* in a tensor's shape or data_offsets: sizes only */
        return mpprof_tensorio_fail(err, errlen, "tensor '%.*s': its entry nests %s in an array",
                                    (int)tkl, tk, c == '{' ? "an object" : "an array");
      if (d == HEADER_MAX_NESTING)
        return mpprof_tensorio_fail(err, errlen, "the header nests more than %d levels deep",
                                    HEADER_MAX_NESTING);
      lv[d++] = (jlevel){.object = c == '{', .expect_key = c == '{', .key = "", .key_len = 0};
    }
  }
  return 0;
}

int mpprof_safetensors_parse(const void *buf, size_t len, mpprof_tensor_set *ret, char *err,
                             size_t errlen) {
  const unsigned char *b = buf;
  memset(ret, 0, sizeof *ret);
  if (len < 8)
    return mpprof_tensorio_fail(err, errlen, "truncated: %zu bytes, no safetensors header length",
                                len);
  const uint64_t n = mpprof_le_uint(b, 8);
  if (n > MPPROF_SAFETENSORS_MAX_HEADER)
    return mpprof_tensorio_fail(err, errlen,
                                "header length %" PRIu64 " beyond the format's limit of %u bytes",
                                n, MPPROF_SAFETENSORS_MAX_HEADER);
  if (n > len - 8)
    return mpprof_tensorio_fail(
        err, errlen, "header length %" PRIu64 " beyond the file (%zu bytes after it)", n, len - 8);
  const char *h = (const char *)b + 8;
  if (!n || h[0] != '{')
    return mpprof_tensorio_fail(err, errlen, "the header is not a JSON object");
  if (header_scan(h, (size_t)n, err, errlen) < 0) return -1;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(h, (size_t)n, &end, false);
  if (!root || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return mpprof_tensorio_fail(err, errlen, "the header is not a JSON object (invalid JSON)");
  }
  for (const char *p = end; p < h + n; p++) /* writers pad the header with spaces */
    if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
      cJSON_Delete(root);
      return mpprof_tensorio_fail(err, errlen, "text after the header's JSON object");
    }
  const unsigned char *data = b + 8 + n;
  const uint64_t data_len = len - 8 - n;
  size_t count = 0;
  const cJSON *m;
  cJSON_ArrayForEach(m, root) count++;
  ret->entries = calloc(count ? count : 1, sizeof *ret->entries);
  mpprof_named_tensor **sorted = calloc(count ? count : 1, sizeof *sorted);
  span *spans = calloc(count ? count : 1, sizeof *spans);
  int rc = ret->entries && sorted && spans ? 0 : mpprof_tensorio_fail(err, errlen, "out of memory");
  cJSON_ArrayForEach(m, root) {
    if (rc) break;
    if (!strcmp(m->string, "__metadata__")) {
      if (!cJSON_IsObject(m))
        rc = mpprof_tensorio_fail(err, errlen, "__metadata__ is not a JSON object");
      continue;
    }
    mpprof_named_tensor *e = &ret->entries[ret->n];
    e->t.dtype = MP_DTYPE_INVALID;
    e->name = strdup(m->string);
    if (!e->name) {
      rc = mpprof_tensorio_fail(err, errlen, "out of memory");
      break;
    }
    sorted[ret->n] = e;
    span *sp = &spans[ret->n++];
    sp->name = e->name;
    rc = tensor_entry(m, data, data_len, e, &sp->begin, &sp->end, err, errlen);
  }
  if (!rc && ret->n > 1) { /* cJSON keeps both of a repeated key */
    qsort(sorted, ret->n, sizeof *sorted, by_name);
    for (size_t i = 1; i < ret->n && !rc; i++)
      if (!strcmp(sorted[i - 1]->name, sorted[i]->name))
        rc = mpprof_tensorio_fail(err, errlen, "tensor '%s' twice in the header", sorted[i]->name);
  }
  if (!rc) rc = check_overlap(spans, ret->n, err, errlen);
  free(spans);
  free(sorted);
  cJSON_Delete(root);
  if (rc) mpprof_tensor_set_close(ret);
  return rc;
}

int mpprof_safetensors_open(const char *path, mpprof_tensor_set *ret, char *err, size_t errlen) {
  return mpprof_tensor_set_open(path, mpprof_safetensors_parse, ret, err, errlen);
}

int mpprof_safetensors_write(const char *path, const mpprof_st_write *t, size_t n, char *err,
                             size_t errlen) {
  cJSON *root = cJSON_CreateObject();
  uint64_t off = 0;
  for (size_t i = 0; root && i < n; i++) {
    cJSON *m = cJSON_AddObjectToObject(root, t[i].name);
    cJSON *shape = m ? cJSON_AddArrayToObject(m, "shape") : NULL;
    cJSON *offs = shape ? cJSON_AddArrayToObject(m, "data_offsets") : NULL;
    if (!offs || !cJSON_AddStringToObject(m, "dtype", t[i].dtype_name)) {
      cJSON_Delete(root);
      root = NULL;
      break;
    }
    for (int d = 0; d < t[i].ndim; d++)
      cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t[i].shape[d]));
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
    off += t[i].nbytes;
    cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
  }
  char *text = root ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  if (!text) return mpprof_tensorio_fail(err, errlen, "%s: out of memory", path);
  size_t hlen = strlen(text), padded = (hlen + 7) / 8 * 8;
  unsigned char len8[8];
  for (int i = 0; i < 8; i++)
    len8[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  FILE *f = fopen(path, "wb");
  int rc = 0;
  if (!f) {
    rc = mpprof_tensorio_fail(err, errlen, "%s: cannot create: %s", path, strerror(errno));
  } else {
    bool ok = fwrite(len8, 1, 8, f) == 8 && fwrite(text, 1, hlen, f) == hlen;
    for (size_t i = hlen; ok && i < padded; i++)
      ok = fputc(' ', f) != EOF;
    for (size_t i = 0; ok && i < n; i++)
      ok = !t[i].nbytes || fwrite(t[i].data, 1, t[i].nbytes, f) == t[i].nbytes;
    if (!ok) rc = mpprof_tensorio_fail(err, errlen, "%s: write failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && rc == 0)
      rc = mpprof_tensorio_fail(err, errlen, "%s: write failed: %s", path, strerror(errno));
  }
  free(text);
  return rc;
}
