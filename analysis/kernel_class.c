/* Tensor Core truth from a kernel's name. The rows of analysis/kernel_rules.def
 * are tried in order on the lower-cased name; the first whose token occurs
 * decides, and family decoders (nvjet, xmma, CUTLASS 3.x, legacy instruction
 * tokens) read the dtype field the name encodes. Also a small Itanium
 * demangler for the function-name part of CUPTI's mangled names. */
#include "kernel_class.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum kdec { KDEC_NONE, KDEC_NVJET, KDEC_XMMA, KDEC_CUTLASS3X, KDEC_LEGACY } kdec;

typedef struct krule {
  const char *id;
  const char *token; /* lower-cased at compare time */
  mp_tc_verdict tc;
  const char *instr;
  mp_dtype a, acc;
  kdec decoder;
} krule;

static const krule k_rules[] = {
#define MP_KRULE(id, token, tc, instr, a, acc, dec) {id, token, tc, instr, a, acc, dec},
#include "kernel_rules.def"
#undef MP_KRULE
};

#define NAME_MAX_LEN 1024

/* Case-insensitive substring search; `hay` is already lower case. */
static const char *find_token(const char *hay, const char *token) {
  char low[64];
  size_t n = strlen(token);
  if (n >= sizeof low) return NULL;
  for (size_t i = 0; i <= n; i++)
    low[i] = (char)tolower((unsigned char)token[i]);
  return strstr(hay, low);
}

/* One dtype spelling of the xmma / CUTLASS families at *p; advances *p. */
static mp_dtype eat_dtype(const char **p) {
  static const struct {
    const char *s;
    mp_dtype d;
  } k[] = {{"bf16", MP_BF16}, {"tf32", MP_TF32},     {"f16", MP_FP16},      {"f32", MP_FP32},
           {"f64", MP_FP64},  {"e4m3", MP_FP8_E4M3}, {"e5m2", MP_FP8_E5M2}, {"i8", MP_INT8},
           {"i32", MP_INT32}, {"s8", MP_INT8},       {"s32", MP_INT32}};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
    size_t n = strlen(k[i].s);
    if (strncmp(*p, k[i].s, n) == 0) {
      *p += n;
      return k[i].d;
    }
  }
  return MP_DTYPE_INVALID;
}

/* A '_'-delimited token made only of 1-2 dtype spellings ("f16f32", "bf16").
 * Returns how many were read (0 when the token is something else). */
static int parse_dtype_token(const char *tok, size_t len, mp_dtype ret[2]) {
  const char *p = tok, *end = tok + len;
  int n = 0;
  while (p < end && n < 2) {
    mp_dtype d = eat_dtype(&p);
    if (d == MP_DTYPE_INVALID || p > end) return 0;
    ret[n++] = d;
  }
  return p == end ? n : 0;
}

static size_t token_len(const char *p) {
  size_t n = 0;
  while (p[n] && (isalnum((unsigned char)p[n])))
    n++;
  return n;
}

/* "sm90_" / "sm100_" right before `at` (or at the start of the nvjet field). */
static int arch_before(const char *name, const char *at) {
  const char *p = at;
  while (p > name && isdigit((unsigned char)p[-1]))
    p--;
  if (p == at || p - name < 2 || p[-2] != 's' || p[-1] != 'm') return 0;
  return atoi(p);
}

static bool is_wgmma(const char *low) {
  return strstr(low, "warpgroupsize") || strstr(low, "gmma");
}

static bool has_mma_shape_token(const char *low) {
  for (const char *p = strstr(low, "tensor"); p; p = strstr(p + 1, "tensor"))
    if (isdigit((unsigned char)p[6])) return true; /* tensor16x8x16, tensor64x128x32 */
  return false;
}

static const char *instr_for(mp_dtype a, int arch, bool wgmma) {
  if (arch >= 100 && arch < 120) return "tcgen05"; /* sm_120 keeps warp-level mma */
  switch (a) {
  case MP_INT8:
    return wgmma ? "igmma" : "imma";
  case MP_FP8_E4M3:
  case MP_FP8_E5M2:
    return wgmma ? "qgmma" : "qmma";
  case MP_FP64:
    return "dmma";
  default:
    return wgmma ? "gmma" : "hmma";
  }
}

/* nvjet_[smNN_]<letters>[_tf32]_...: A letter then the compute/accumulate
 * letter; a leading "qq" means fp8 A and B (e4m3 in every observed trace). */
static void decode_nvjet(const char *low, const char *at, mp_kernel_class *k) {
  const char *p = at + strlen("nvjet_");
  int arch = 0;
  if (p[0] == 's' && p[1] == 'm' && isdigit((unsigned char)p[2])) {
    arch = atoi(p + 2);
    p = strchr(p, '_');
    if (!p) return;
    p++;
  }
  size_t n = token_len(p);
  mp_dtype a = MP_DTYPE_INVALID, acc = MP_DTYPE_INVALID;
  const char *l = p;
  if (n >= 2 && l[0] == 'q' && l[1] == 'q') {
    a = MP_FP8_E4M3;
    l += 2;
    n -= 2;
    if (n >= 2) acc = l[1] == 's' ? MP_FP32 : l[1] == 'h' ? MP_FP16 : MP_DTYPE_INVALID;
  } else if (n == 3 && strncmp(l, "biu", 3) == 0) {
    a = MP_INT8;
    acc = MP_INT32;
  } else if (n >= 2) {
    static const char letters[] = "htsd";
    static const mp_dtype dts[] = {MP_FP16, MP_BF16, MP_FP32, MP_FP64};
    const char *ia = strchr(letters, l[0]), *ic = strchr(letters, l[1]);
    if (ia) a = dts[ia - letters];
    if (ic) acc = dts[ic - letters];
  }
  k->tc = MP_TC_YES;
  if (a == MP_FP32) {
    /* No fp32 nvjet without a tf32 token has been seen: don't guess. */
    if (strncmp(p + n, "_tf32", 5) == 0)
      a = MP_TF32;
    else
      k->tc = MP_TC_UNKNOWN;
  }
  k->a_dtype = a;
  k->acc_dtype = acc;
  (void)low;
  if (arch == 90 || (arch >= 100 && arch < 120))
    k->instr = instr_for(a, arch, true);
  else if (arch >= 120)
    k->instr = instr_for(a, arch, false);
  else
    k->instr = "mma"; /* untagged names run on Hopper and Blackwell alike */
}

/* smXX_xmma_<op>_..._<A><C>_<compute-in><acc>_<out>_...: the compute-in type
 * decides; f32 there (no tf32) is the SIMT family even when `ffma` was cut. */
static void decode_xmma(const char *low, const char *at, mp_kernel_class *k) {
  int arch = arch_before(low, at > low ? at - 1 : at);
  mp_dtype g1[2] = {MP_DTYPE_INVALID, MP_DTYPE_INVALID},
           g2[2] = {MP_DTYPE_INVALID, MP_DTYPE_INVALID};
  int n1 = 0, n2 = 0;
  for (const char *p = at + strlen("xmma_"); *p;) {
    size_t len = 0;
    while (p[len] && p[len] != '_' && isalnum((unsigned char)p[len]))
      len++;
    if (len > 0) {
      if (!n1) {
        n1 = parse_dtype_token(p, len, g1);
      } else {
        n2 = parse_dtype_token(p, len, g2);
        break;
      }
    }
    if (!p[len] || !(p[len] == '_')) break;
    p += len + 1;
  }
  mp_dtype math = n2 ? g2[0] : n1 ? g1[0] : MP_DTYPE_INVALID;
  mp_dtype acc = n2 == 2 ? g2[1] : MP_DTYPE_INVALID;
  /* Hopper has fp8 only as wgmma, so a cut name still tells. */
  bool wg = is_wgmma(low) || (arch == 90 && (math == MP_FP8_E4M3 || math == MP_FP8_E5M2));
  k->a_dtype = math;
  k->acc_dtype = acc;
  switch (math) {
  case MP_FP32:
    k->tc = MP_TC_NO;
    k->instr = "ffma";
    return;
  case MP_FP16:
  case MP_BF16:
  case MP_TF32:
  case MP_FP8_E4M3:
  case MP_FP8_E5M2:
  case MP_INT8:
    k->tc = MP_TC_YES;
    break;
  case MP_FP64:
    k->tc = has_mma_shape_token(low) || strstr(low, "dmma") ? MP_TC_YES : MP_TC_UNKNOWN;
    break;
  default:
    k->tc = wg || has_mma_shape_token(low) ? MP_TC_YES : MP_TC_UNKNOWN;
    break;
  }
  if (k->tc == MP_TC_YES) k->instr = instr_for(math, arch, wg);
}

/* cutlass3x_smXX_<kind>_<shape>gemm_<A>_<B>_<acc>_...: CUTLASS 3.x library names. */
static void decode_cutlass3x(const char *low, mp_kernel_class *k) {
  const char *c = strstr(low, "cutlass3x_");
  int arch = 0;
  if (c && strncmp(c + 10, "sm", 2) == 0) arch = atoi(c + 12);
  const char *g = NULL;
  static const char *const ops[] = {"gemm_", "fprop_", "dgrad_", "wgrad_"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
    const char *f = strstr(c ? c : low, ops[i]);
    if (f && (!g || f < g)) g = f;
  }
  mp_dtype t[3] = {MP_DTYPE_INVALID, MP_DTYPE_INVALID, MP_DTYPE_INVALID};
  if (g) {
    const char *p = strchr(g, '_') + 1;
    /* "implicit_gemm_fprop_bf16_...": skip operation words up to the first dtype. */
    for (mp_dtype d[2]; *p;) {
      size_t len = 0;
      while (p[len] && p[len] != '_' && isalnum((unsigned char)p[len]))
        len++;
      if (parse_dtype_token(p, len, d) == 1 || p[len] != '_' || len == 0) break;
      p += len + 1;
    }
    for (int i = 0; i < 3 && *p; i++) {
      size_t len = 0;
      while (p[len] && p[len] != '_' && isalnum((unsigned char)p[len]))
        len++;
      mp_dtype d[2];
      if (parse_dtype_token(p, len, d) != 1) break;
      t[i] = d[0];
      if (p[len] != '_') break;
      p += len + 1;
    }
  }
  if (t[0] != MP_DTYPE_INVALID) k->a_dtype = t[0];
  if (t[2] != MP_DTYPE_INVALID) k->acc_dtype = t[2];
  if (strstr(low, "tensorop")) k->tc = MP_TC_YES;
  if (k->tc == MP_TC_YES && !k->instr) k->instr = instr_for(k->a_dtype, arch, arch == 90);
}

/* Whole-word dtype tokens next to a legacy instruction token. */
static void decode_legacy(const char *low, const krule *r, mp_kernel_class *k) {
  static const struct {
    const char *s;
    mp_dtype d;
  } words[] = {{"bf16", MP_BF16},     {"fp16", MP_FP16},    {"f16", MP_FP16}, {"half", MP_FP16},
               {"tf32", MP_TF32},     {"s8", MP_INT8},      {"i8", MP_INT8},  {"f64", MP_FP64},
               {"e4m3", MP_FP8_E4M3}, {"e5m2", MP_FP8_E5M2}};
  for (const char *p = low; *p;) {
    while (*p && !isalnum((unsigned char)*p))
      p++;
    size_t len = token_len(p);
    for (size_t i = 0; i < sizeof words / sizeof words[0] && len; i++)
      if (strlen(words[i].s) == len && strncmp(p, words[i].s, len) == 0) {
        k->a_dtype = words[i].d;
        return;
      }
    p += len;
  }
  if (k->a_dtype != MP_DTYPE_INVALID) return;
  /* No dtype word: the instruction shape tells (m16n8k8 with fp32 data is TF32). */
  if (strcmp(r->token, "s1688") == 0) k->a_dtype = MP_TF32;
  if (strcmp(r->token, "s884") == 0) k->a_dtype = MP_FP16;
}

void mp_kernel_classify(const char *name, mp_kernel_class *ret) {
  *ret = (mp_kernel_class){MP_TC_UNKNOWN, MP_TC_SRC_UNKNOWN, NULL,
                           NULL,          MP_DTYPE_INVALID,  MP_DTYPE_INVALID};
  if (!name || !*name) return;
  char dem[NAME_MAX_LEN], low[NAME_MAX_LEN];
  mp_kernel_demangle(name, dem, sizeof dem);
  size_t i = 0;
  for (; dem[i] && i + 1 < sizeof low; i++)
    low[i] = (char)tolower((unsigned char)dem[i]);
  low[i] = '\0';

  for (size_t r = 0; r < sizeof k_rules / sizeof k_rules[0]; r++) {
    const krule *rule = &k_rules[r];
    const char *at = find_token(low, rule->token);
    if (!at) continue;
    ret->tc = rule->tc;
    ret->instr = rule->instr;
    ret->a_dtype = rule->a;
    ret->acc_dtype = rule->acc;
    switch (rule->decoder) {
    case KDEC_NVJET:
      decode_nvjet(low, at, ret);
      break;
    case KDEC_XMMA:
      decode_xmma(low, at, ret);
      break;
    case KDEC_CUTLASS3X:
      decode_cutlass3x(low, ret);
      break;
    case KDEC_LEGACY:
      decode_legacy(low, rule, ret);
      break;
    case KDEC_NONE:
      break;
    }
    ret->rule = rule->id;
    ret->source = MP_TC_SRC_NAME;
    return;
  }
}

const char *mp_tc_source_name(mp_tc_source s) {
  switch (s) {
  case MP_TC_SRC_NAME:
    return "name";
  case MP_TC_SRC_COUNTERS:
    return "counters";
  default:
    return "unknown";
  }
}

/* ---- Itanium demangling of the name part (best effort, bounded) ----
 * Renders what libstdc++'s __cxa_demangle (c++filt) prints for the name,
 * without the return type and the parameters: "T const", "> >", literal
 * suffixes, "(anonymous namespace)"; a name longer than the buffer is cut,
 * ending in "...". Substitution candidates are recorded as the ABI numbers them
 * (prefixes and template prefixes, template-ids and qualified or pointer
 * types used as types; not builtins, not the function's own name); what this
 * does not know (std:: abbreviations other than St, template parameters,
 * function types, ...) leaves the name mangled. */

#define DM_SUBS 128 /* substitution candidates kept (later ones: left mangled) */
#define DM_DEPTH 64 /* nesting of types and names (deeper: left mangled) */

typedef struct dm {
  const char *p;
  char *out;
  size_t n, len;
  bool bad;
  int depth;
  size_t sub_at[DM_SUBS], sub_len[DM_SUBS]; /* in out: a candidate's rendered text */
  int nsubs;
} dm;

static void dm_put(dm *d, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (d->len + 1 >= d->n) {
      d->bad = true;
      return;
    }
    d->out[d->len++] = s[i];
  }
  d->out[d->len] = '\0';
}

static void dm_puts(dm *d, const char *s) {
  dm_put(d, s, strlen(s));
}

static void dm_add_sub(dm *d, size_t start) {
  if (d->nsubs < DM_SUBS) {
    d->sub_at[d->nsubs] = start;
    d->sub_len[d->nsubs++] = d->len - start;
  }
}

static bool dm_type(dm *d);
static bool dm_name(dm *d, bool is_type);

static bool dm_source_name(dm *d) {
  if (!isdigit((unsigned char)*d->p)) return false;
  char *end;
  unsigned long n = strtoul(d->p, &end, 10);
  if (n == 0 || strnlen(end, n) < n) return false;
  d->p = end;
  static const char anon[] = "_GLOBAL__N"; /* an anonymous namespace, as c++filt says it */
  if (n >= sizeof anon - 1 && !strncmp(d->p, anon, sizeof anon - 1))
    dm_puts(d, "(anonymous namespace)");
  else
    dm_put(d, d->p, n);
  d->p += n;
  return true;
}

/* "S_" (the first candidate) or "S<seq-id>_" (base 36, digits and upper
 * case: candidate seq-id + 1): the candidate's text. */
static bool dm_substitution(dm *d) {
  d->p++; /* 'S' */
  unsigned long idx = 0;
  if (*d->p != '_') {
    unsigned long v = 0;
    for (; isdigit((unsigned char)*d->p) || (*d->p >= 'A' && *d->p <= 'Z'); d->p++) {
      v = v * 36 + (unsigned long)(isdigit((unsigned char)*d->p) ? *d->p - '0' : *d->p - 'A' + 10);
      if (v >= DM_SUBS) return false;
    }
    idx = v + 1;
  }
  if (*d->p != '_' || idx >= (unsigned long)d->nsubs) return false;
  d->p++;
  /* the candidate's text lies before d->len in out, which only grows */
  size_t at = d->sub_at[idx], n = d->sub_len[idx];
  for (size_t i = 0; i < n && !d->bad; i++)
    dm_put(d, d->out + at + i, 1);
  return true;
}

/* c++filt's form of an integer literal of builtin type t. */
static void dm_literal(dm *d, char t, bool neg, const char *v, size_t n) {
  static const char *const suffix[26] = {['j' - 'a'] = "u",
                                         ['l' - 'a'] = "l",
                                         ['m' - 'a'] = "ul",
                                         ['x' - 'a'] = "ll",
                                         ['y' - 'a'] = "ull"};
  static const char *const cast[26] = {['a' - 'a'] = "(signed char)",
                                       ['c' - 'a'] = "(char)",
                                       ['h' - 'a'] = "(unsigned char)",
                                       ['s' - 'a'] = "(short)",
                                       ['t' - 'a'] = "(unsigned short)"};
  if (t == 'b') {
    dm_puts(d, n == 1 && *v == '1' ? "true" : "false");
    return;
  }
  bool lower = t >= 'a' && t <= 'z';
  if (lower && cast[t - 'a']) dm_puts(d, cast[t - 'a']);
  if (neg) dm_puts(d, "-");
  dm_put(d, v, n);
  if (lower && suffix[t - 'a']) dm_puts(d, suffix[t - 'a']);
}

static bool dm_template_args(dm *d) {
  if (*d->p != 'I') return true;
  d->p++;
  dm_puts(d, "<");
  for (bool first = true; *d->p && *d->p != 'E'; first = false) {
    if (!first) dm_puts(d, ", ");
    if (*d->p == 'L') { /* literal: L <builtin type> [n] <digits> E */
      d->p++;
      char t = *d->p++;
      if (!(t >= 'a' && t <= 'z')) return false;
      bool neg = *d->p == 'n';
      if (neg) d->p++;
      const char *v = d->p;
      while (isdigit((unsigned char)*d->p))
        d->p++;
      if (*d->p != 'E' || d->p == v) return false;
      dm_literal(d, t, neg, v, (size_t)(d->p - v));
      d->p++;
    } else if (!dm_type(d)) {
      return false;
    }
  }
  if (*d->p != 'E') return false;
  d->p++;
  if (d->len && d->out[d->len - 1] == '>') dm_puts(d, " "); /* "> >" as c++filt */
  dm_puts(d, ">");
  return true;
}

/* A name; is_type: used as a type (the whole template-id is a candidate),
 * else the encoding's function name (it is not). */
static bool dm_name(dm *d, bool is_type) {
  if (++d->depth > DM_DEPTH) return false;
  bool ok = true;
  size_t start = d->len;
  if (*d->p == 'N') {
    d->p++;
    for (bool first = true; ok && *d->p && *d->p != 'E'; first = false) {
      if (*d->p == 'I') {
        ok = dm_template_args(d);
        if (ok && (is_type || *d->p != 'E')) dm_add_sub(d, start); /* template-id prefix */
        continue;
      }
      if (!first) dm_puts(d, "::");
      if (d->p[0] == 'S' && d->p[1] == 't') { /* std, not a candidate */
        d->p += 2;
        dm_puts(d, "std");
      } else if (*d->p == 'S') { /* a candidate as the prefix */
        ok = dm_substitution(d);
      } else {
        ok = dm_source_name(d);
        if (ok) dm_add_sub(d, start); /* prefix (or template prefix) */
      }
    }
    ok = ok && *d->p == 'E';
    if (ok) d->p++;
  } else {
    if (d->p[0] == 'S' && d->p[1] == 't') { /* std::name */
      d->p += 2;
      dm_puts(d, "std::");
    }
    ok = dm_source_name(d);
    if (ok && *d->p == 'I') {
      dm_add_sub(d, start); /* the template name */
      ok = dm_template_args(d);
      if (ok && is_type) dm_add_sub(d, start); /* the template-id */
    } else if (ok && is_type) {
      dm_add_sub(d, start);
    }
  }
  d->depth--;
  return ok;
}

static bool dm_type(dm *d) {
  static const char *const builtin[26] = {['a' - 'a'] = "signed char",
                                          ['b' - 'a'] = "bool",
                                          ['c' - 'a'] = "char",
                                          ['d' - 'a'] = "double",
                                          ['e' - 'a'] = "long double",
                                          ['f' - 'a'] = "float",
                                          ['h' - 'a'] = "unsigned char",
                                          ['i' - 'a'] = "int",
                                          ['j' - 'a'] = "unsigned int",
                                          ['l' - 'a'] = "long",
                                          ['m' - 'a'] = "unsigned long",
                                          ['n' - 'a'] = "__int128",
                                          ['o' - 'a'] = "unsigned __int128",
                                          ['s' - 'a'] = "short",
                                          ['t' - 'a'] = "unsigned short",
                                          ['v' - 'a'] = "void",
                                          ['w' - 'a'] = "wchar_t",
                                          ['x' - 'a'] = "long long",
                                          ['y' - 'a'] = "unsigned long long"};
  char c = *d->p;
  if (c >= 'a' && c <= 'z' && builtin[c - 'a']) { /* not a candidate */
    d->p++;
    dm_puts(d, builtin[c - 'a']);
    return true;
  }
  if (++d->depth > DM_DEPTH) return false;
  bool ok;
  size_t start = d->len;
  if (c == 'P' || c == 'R') {
    d->p++;
    ok = dm_type(d);
    dm_puts(d, c == 'P' ? "*" : "&");
    if (ok) dm_add_sub(d, start);
  } else if (c == 'r' || c == 'V' || c == 'K') { /* a qualifier set: one candidate */
    bool r = *d->p == 'r' && d->p++;
    bool v = *d->p == 'V' && d->p++;
    bool k = *d->p == 'K' && d->p++;
    ok = dm_type(d);
    if (k) dm_puts(d, " const");
    if (v) dm_puts(d, " volatile");
    if (r) dm_puts(d, " restrict");
    if (ok) dm_add_sub(d, start);
  } else if (c == 'S' && d->p[1] != 't') {
    ok = dm_substitution(d);
    if (ok && *d->p == 'I') { /* a candidate template name with its arguments */
      ok = dm_template_args(d);
      if (ok) dm_add_sub(d, start);
    }
  } else {
    ok = dm_name(d, true);
  }
  d->depth--;
  return ok;
}

char *mp_kernel_demangle(const char *name, char *ret_buf, size_t n) {
  if (!ret_buf || n == 0) return ret_buf;
  ret_buf[0] = '\0';
  if (!name) return ret_buf;
  if (strncmp(name, "_Z", 2) != 0) {
    snprintf(ret_buf, n, "%s", name);
    return ret_buf;
  }
  dm d = {.p = name + 2, .out = ret_buf, .n = n};
  if (!dm_name(&d, false)) {
    snprintf(ret_buf, n, "%s", name); /* unreadable: keep the mangled form */
    return ret_buf;
  }
  if (d.bad && n > 3) memcpy(ret_buf + n - 4, "...", 4); /* read, but longer than n - 1 */
  return ret_buf;
}

/* Name tokens of cuDNN's kernels (checked first: its implicit-GEMM names say
 * "gemm" too, and its SDPA kernels are cuDNN's), of fused attention
 * ("void pytorch_flash::flash_fwd_kernel<...>", FlashAttention 3's
 * "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::
 * FlashAttnFwdSm90<...>>>", FlashAttention 4's "flash_fwd_sm100_bf16_..."
 * and "...FlashAttentionForwardSm100...", the memory-efficient SDPA's
 * "fmha_cutlassF_bf16_aligned_64x64_rf_sm80"), of Triton's templates
 * ("triton_tem_fused_mm_0"), of CUTLASS GEMM templates a framework compiled
 * itself (their kernel type is a cutlass::gemm::kernel:: template:
 * "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<...>>",
 * PyTorch's row-wise scaled _scaled_mm and grouped mm; cuBLAS's own CUTLASS
 * kernels are named instances, "cutlass::Kernel2<cutlass_80_tensorop_...>")
 * and of cuBLAS/cuBLASLt's. Other Triton and flash kernels (elementwise,
 * reductions) are none of these. */
static const char *const cudnn_tokens[] = {"cudnn", "fprop",  "dgrad",
                                           "wgrad", "conv2d", "implicit_convolve"};
static const char *const attention_tokens[] = {"flash_fwd",  "flash_bwd", "fmha_",
                                               "flash_attn", "flashattn", "flashattention"};
/* The kernel families cuBLAS/cuBLASLt ship (../shared/kernel-names.md):
 * nvjet_*, smXX_xmma_gemm_*, CUTLASS instances cutlass_80_tensorop_* /
 * cutlass_75_wmma_* and cutlass3x_* (cuBLAS on sm_100), its GEMV, small-N,
 * k = 1 and split-K helpers, and names that carry cuBLAS's own parameter
 * types (cublasGemvParamsEx, cublasSplitKParams); the legacy arch-prefixed
 * names (ampere_sgemm_*, volta_h884gemm_*, turing_fp16_s1688gemm_*) are
 * arch_gemm's. */
static const char *const cublas_tokens[] = {
    "nvjet",   "xmma_gemm", "cutlass3x_",   "gemv2",  "gemvx",      "gemvNSP",
    "gemmSN_", "gemmk1",    "splitKreduce", "cublas", "fermiCgemm", "sgemm_largek"};
/* A name with a matrix token (matrix_token) that is no library's above is a
 * GEMM of no hooked library (the program's own, a user's Triton kernel,
 * DeepGEMM's deep_gemm::, TensorRT's trt_* and *_trt, TensorRT-LLM's
 * cudaCoreGemm, a CUTLASS library kernel compiled into the program). */

static bool has_any(const char *name, const char *const *tokens, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcasestr(name, tokens[i])) return true;
  return false;
}

/* cuBLAS's CUTLASS instances: "cutlass_" and a two-digit architecture
 * ("cutlass_80_tensorop_s1688gemm_...", "cutlass_75_wmma_tensorop_..."),
 * as the instance name or inside cutlass::Kernel2<...>. */
static bool cublas_cutlass_instance(const char *name) {
  for (const char *c = strstr(name, "cutlass_"); c; c = strstr(c + 1, "cutlass_"))
    if (isdigit((unsigned char)c[8]) && isdigit((unsigned char)c[9]) && c[10] == '_') return true;
  return false;
}

/* cuBLAS's legacy names begin with the architecture they were tuned for and
 * say gemm ("ampere_sgemm_128x64_nn", "volta_h884gemm_64x64_ldg8_nn",
 * "turing_fp16_s1688gemm_fp16_...") or with the BLAS routine's own name and
 * a tile ("sgemm_128x128x8_TN_vec"; a user's "sgemm_naive" is not).
 * TensorRT's "trt_ampere_h16816gemm_..." begins otherwise. */
static bool arch_gemm(const char *name) {
  static const char *const archs[] = {"maxwell_", "pascal_", "volta_", "turing_",
                                      "ampere_",  "ada_",    "hopper_"};
  static const char *const routines[] = {"sgemm_", "dgemm_", "hgemm_", "cgemm_", "zgemm_"};
  if (!strncmp(name, "void ", 5)) name += 5;
  for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
    if (!strncmp(name, archs[i], strlen(archs[i]))) return strcasestr(name, "gemm") != NULL;
  for (size_t i = 0; i < sizeof routines / sizeof routines[0]; i++)
    if (!strncmp(name, routines[i], 6)) return isdigit((unsigned char)name[6]) != 0;
  return false;
}

/* A CUTLASS 3 library kernel a program or framework compiled itself: the
 * instance named cutlass3x_... as the template argument of
 * cutlass::device_kernel (PyTorch Inductor's CUTLASS backend, the CUTLASS
 * profiler; ptxas and CUPTI give "_ZN7cutlass13device_kernelI128cutlass3x_
 * sm90_..."). cuBLAS's own cutlass3x_smXX_ kernels are named plainly. */
static bool cutlass_library_kernel(const char *name) {
  return (strstr(name, "cutlass::device_kernel<cutlass3x_") ||
          !strncmp(name, "_ZN7cutlass13device_kernelI", 27)) &&
         strstr(name, "cutlass3x_");
}

/* A matrix-kernel token: gemm (not Gemma's, a model's name), gemv, matmul. */
static bool matrix_token(const char *name) {
  for (const char *g = strcasestr(name, "gemm"); g; g = strcasestr(g + 4, "gemm"))
    if (tolower((unsigned char)g[4]) != 'a') return true;
  return strcasestr(name, "gemv") || strcasestr(name, "matmul");
}

/* TensorRT's own xmma tactics end "_trt" ("..._execute_kernel_trt"), as
 * cuBLAS's end "_cublas". */
static bool tensorrt_kernel(const char *name) {
  size_t n = strlen(name);
  return n > 4 && !strcmp(name + n - 4, "_trt");
}

/* A kernel whose type is a cutlass::gemm::kernel:: template, demangled or
 * as CUPTI names it (mangled): "cutlass" first seen in the gemm::kernel
 * namespace ("N7cutlass4gemm6kernel"), or a name in the cutlass namespace
 * ("_ZN7cutlass13device_kernelI...") whose first substitution, S_, is
 * cutlass ("NS_4gemm6kernel"). */
static bool cutlass_gemm_kernel(const char *name) {
  return strstr(name, "cutlass::gemm::kernel::") || strstr(name, "N7cutlass4gemm6kernel") ||
         (!strncmp(name, "_ZN7cutlass", 11) && strstr(name, "NS_4gemm6kernel"));
}

mp_kernel_lib mp_kernel_library(const char *name) {
  if (!name) return MP_KLIB_NONE;
  if (has_any(name, cudnn_tokens, sizeof cudnn_tokens / sizeof cudnn_tokens[0]))
    return MP_KLIB_CUDNN;
  if (has_any(name, attention_tokens, sizeof attention_tokens / sizeof attention_tokens[0]))
    return MP_KLIB_ATTENTION;
  if (!strncmp(name, "triton_tem_", 11)) return MP_KLIB_TRITON_TEMPLATE;
  if (cutlass_gemm_kernel(name)) return MP_KLIB_CUTLASS;
  if (strcasestr(name, "triton") || strcasestr(name, "flash")) return MP_KLIB_NONE;
  if (cutlass_library_kernel(name) || tensorrt_kernel(name))
    return matrix_token(name) ? MP_KLIB_OTHER_GEMM : MP_KLIB_NONE;
  if (has_any(name, cublas_tokens, sizeof cublas_tokens / sizeof cublas_tokens[0]) ||
      cublas_cutlass_instance(name) || arch_gemm(name))
    return MP_KLIB_CUBLAS;
  if (matrix_token(name)) return MP_KLIB_OTHER_GEMM;
  return MP_KLIB_NONE;
}

const char *mp_kernel_lib_name(mp_kernel_lib l) {
  static const char *const names[MP_KLIB_COUNT] = {
      [MP_KLIB_CUBLAS] = "cublas",       [MP_KLIB_CUDNN] = "cudnn",
      [MP_KLIB_ATTENTION] = "attention", [MP_KLIB_TRITON_TEMPLATE] = "triton_template",
      [MP_KLIB_CUTLASS] = "cutlass",     [MP_KLIB_OTHER_GEMM] = "other_gemm",
  };
  return l > MP_KLIB_NONE && l < MP_KLIB_COUNT ? names[l] : NULL;
}

bool mp_kernel_lib_hooked(mp_kernel_lib l) {
  return l == MP_KLIB_CUBLAS || l == MP_KLIB_CUDNN;
}
