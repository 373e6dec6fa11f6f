/* The symbol a C++ kernel has, from the readable form kernel_names.def keeps:
 * CUPTI's kernel records carry the name as compiled, so a C++ kernel comes
 * mangled (Itanium C++ ABI: "void cutlass::Kernel2<X>(X::Params)" is
 * "_ZN7cutlass7Kernel2I1XEEvNT_6ParamsE") and an extern "C" one as it is.
 * A small mangler rather than a second column keeps one definition per name.
 *
 * Covers what the table uses: "void " + a function template whose name may be
 * nested; template arguments that are types (builtin, named, nested,
 * template-ids, with a trailing " const", "*" or "&"), integers (int) and
 * true/false; a parameter list of such types, "..." and dependent names
 * "X::Params" whose first part is a template argument (T_). Substitutions
 * (S_, S0_, ...) are made in the ABI's order. Anything else gives NULL. */
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_internal.h"

#define MAX_COMPS 8
#define MAX_ARGS 24
#define MAX_NODES 256
#define MAX_SUBS 128
#define KEY_LEN 2048

typedef enum nkind { N_BUILTIN, N_NAME, N_INT, N_BOOL, N_ELLIPSIS } nkind;

typedef struct node node;
typedef struct comp {
  const char *id;
  size_t len;
  bool has_args;
  int nargs;
  node *args[MAX_ARGS];
} comp;

struct node {
  nkind kind;
  const char *code; /* N_BUILTIN: "i", "f", ... */
  long value;       /* N_INT, N_BOOL */
  int ncomp;        /* N_NAME: a::b::c */
  comp comps[MAX_COMPS];
  bool is_const; /* qualifiers after the base, innermost first: const, then *, then & */
  int ptr;
  bool ref;
};

/* ---- parsing the readable form ---- */

typedef struct parser {
  const char *p;
  node *pool;
  int used;
  bool bad;
} parser;

static node *new_node(parser *ps, nkind kind) {
  if (ps->used == MAX_NODES) {
    ps->bad = true;
    return NULL;
  }
  node *n = &ps->pool[ps->used++];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  return n;
}

static void skip_spaces(parser *ps) {
  while (*ps->p == ' ')
    ps->p++;
}

static bool is_ident_char(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

/* `word` at the cursor as a whole word; advances past it. */
static bool eat_word(parser *ps, const char *word) {
  size_t n = strlen(word);
  if (strncmp(ps->p, word, n) != 0 || is_ident_char(ps->p[n])) return false;
  ps->p += n;
  return true;
}

static node *parse_type(parser *ps);

static node *parse_arg(parser *ps) {
  skip_spaces(ps);
  if (isdigit((unsigned char)*ps->p) || (*ps->p == '-' && isdigit((unsigned char)ps->p[1]))) {
    node *n = new_node(ps, N_INT);
    if (n == NULL) return NULL;
    char *end;
    n->value = strtol(ps->p, &end, 10);
    ps->p = end;
    return n;
  }
  bool t = eat_word(ps, "true");
  if (t || eat_word(ps, "false")) {
    node *n = new_node(ps, N_BOOL);
    if (n != NULL) n->value = t;
    return n;
  }
  return parse_type(ps);
}

/* "<" arg ("," arg)* ">" into c. */
static bool parse_args(parser *ps, comp *c) {
  ps->p++; /* '<' */
  c->has_args = true;
  for (;;) {
    if (c->nargs == MAX_ARGS) return false;
    node *a = parse_arg(ps);
    if (a == NULL) return false;
    c->args[c->nargs++] = a;
    skip_spaces(ps);
    if (*ps->p == ',') {
      ps->p++;
      continue;
    }
    if (*ps->p != '>') return false;
    ps->p++;
    return true;
  }
}

static node *parse_name(parser *ps) {
  node *n = new_node(ps, N_NAME);
  if (n == NULL) return NULL;
  for (;;) {
    skip_spaces(ps);
    if (n->ncomp == MAX_COMPS || !(isalpha((unsigned char)*ps->p) || *ps->p == '_')) return NULL;
    comp *c = &n->comps[n->ncomp++];
    c->id = ps->p;
    while (is_ident_char(*ps->p))
      ps->p++;
    c->len = (size_t)(ps->p - c->id);
    if (*ps->p == '<' && !parse_args(ps, c)) return NULL;
    if (strncmp(ps->p, "::", 2) != 0) return n;
    ps->p += 2;
  }
}

static node *parse_type(parser *ps) {
  /* Longest spelling first: "unsigned long long" before "unsigned long". */
  static const struct {
    const char *s, *code;
  } builtin[] = {
      {"unsigned long long", "y"},
      {"unsigned long", "m"},
      {"unsigned int", "j"},
      {"unsigned short", "t"},
      {"unsigned char", "h"},
      {"signed char", "a"},
      {"long long", "x"},
      {"unsigned", "j"},
      {"long", "l"},
      {"int", "i"},
      {"short", "s"},
      {"char", "c"},
      {"bool", "b"},
      {"float", "f"},
      {"double", "d"},
      {"void", "v"},
  };
  skip_spaces(ps);
  bool const_first = eat_word(ps, "const");
  skip_spaces(ps);
  node *n = NULL;
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0] && n == NULL; i++)
    if (eat_word(ps, builtin[i].s)) {
      n = new_node(ps, N_BUILTIN);
      if (n != NULL) n->code = builtin[i].code;
    }
  if (n == NULL) n = parse_name(ps);
  if (n == NULL) return NULL;
  n->is_const = const_first;
  for (;;) {
    skip_spaces(ps);
    if (n->ptr == 0 && !n->ref && eat_word(ps, "const")) {
      n->is_const = true;
    } else if (*ps->p == '*' && !n->ref) {
      n->ptr++;
      ps->p++;
    } else if (*ps->p == '&' && !n->ref) {
      n->ref = true;
      ps->p++;
    } else {
      return n;
    }
  }
}

/* ---- emitting the mangled form ---- */

typedef struct emitter {
  char *out;
  size_t len, cap;
  bool bad;
  bool nosub;           /* computing a key: the plain encoding, no substitutions */
  const comp *tmpl;     /* the function's template arguments, for T_ */
  bool in_sig;          /* in the return and parameter types (T_ applies) */
  char *subs[MAX_SUBS]; /* keys of the substitution candidates, in order */
  int nsubs;
} emitter;

static void put(emitter *e, const char *s, size_t n) {
  if (e->len + n + 1 > e->cap) {
    e->bad = true;
    return;
  }
  memcpy(e->out + e->len, s, n);
  e->len += n;
  e->out[e->len] = '\0';
}

static void puts_(emitter *e, const char *s) {
  put(e, s, strlen(s));
}

static void put_source(emitter *e, const comp *c) {
  char num[24];
  snprintf(num, sizeof num, "%zu", c->len);
  puts_(e, num);
  put(e, c->id, c->len);
}

typedef enum part { P_TYPE, P_PREFIX } part;
static void emit_type(emitter *e, const node *t, int layer);
static void emit_name(emitter *e, const node *n, int upto, bool upto_args);

/* The plain encoding of a type layer or a name prefix, its identity as a
 * substitution candidate. */
static void key_of(const emitter *e, part what, const node *n, int a, bool b, char *ret_key) {
  emitter k = {.out = ret_key, .cap = KEY_LEN, .nosub = true, .tmpl = e->tmpl, .in_sig = e->in_sig};
  ret_key[0] = '\0';
  if (what == P_TYPE)
    emit_type(&k, n, a);
  else
    emit_name(&k, n, a, b);
  if (k.bad) ret_key[0] = '\0';
}

/* Emits S_/S<seq>_ when `key` is a candidate already. */
static bool try_sub(emitter *e, const char *key) {
  if (e->nosub || key[0] == '\0') return false;
  for (int i = 0; i < e->nsubs; i++) {
    if (strcmp(e->subs[i], key) != 0) continue;
    char buf[16] = "S";
    size_t o = 1;
    if (i > 0) {
      char digits[12];
      int nd = 0;
      for (unsigned v = (unsigned)i - 1;; v /= 36) {
        digits[nd++] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[v % 36];
        if (v < 36) break;
      }
      while (nd > 0)
        buf[o++] = digits[--nd];
    }
    buf[o++] = '_';
    buf[o] = '\0';
    puts_(e, buf);
    return true;
  }
  return false;
}

static void add_sub(emitter *e, const char *key) {
  if (e->nosub || key[0] == '\0') return;
  if (e->nsubs == MAX_SUBS) {
    e->bad = true;
    return;
  }
  e->subs[e->nsubs] = strdup(key);
  if (e->subs[e->nsubs] == NULL) e->bad = true;
  e->nsubs++;
}

static void add_key(emitter *e, part what, const node *n, int a, bool b) {
  if (e->nosub) return;
  char key[KEY_LEN];
  key_of(e, what, n, a, b, key);
  add_sub(e, key);
}

static void emit_arg(emitter *e, const node *a) {
  char buf[40];
  if (a->kind == N_INT) {
    snprintf(buf, sizeof buf, a->value < 0 ? "Lin%ldE" : "Li%ldE",
             a->value < 0 ? -a->value : a->value);
    puts_(e, buf);
  } else if (a->kind == N_BOOL) {
    puts_(e, a->value ? "Lb1E" : "Lb0E");
  } else {
    emit_type(e, a, 0);
  }
}

static void emit_args(emitter *e, const comp *c) {
  puts_(e, "I");
  for (int i = 0; i < c->nargs; i++)
    emit_arg(e, c->args[i]);
  puts_(e, "E");
}

/* Index of the function's template argument the first part of a dependent
 * name in the signature stands for ("X" of "X::Params"), or -1. */
static int tmpl_param(const emitter *e, const node *n) {
  if (!e->in_sig || e->tmpl == NULL || n->ncomp < 2 || n->comps[0].has_args) return -1;
  for (int i = 0; i < e->tmpl->nargs; i++) {
    const node *a = e->tmpl->args[i];
    if (a->kind == N_NAME && a->ncomp == 1 && !a->comps[0].has_args && !a->is_const &&
        a->ptr == 0 && !a->ref && a->comps[0].len == n->comps[0].len &&
        memcmp(a->comps[0].id, n->comps[0].id, n->comps[0].len) == 0)
      return i;
  }
  return -1;
}

/* The name's parts 0..upto, the last with its template arguments when
 * upto_args. The whole name's own candidate (a type's) is its caller's. */
static void emit_name(emitter *e, const node *n, int upto, bool upto_args) {
  bool nested = upto > 0;
  if (nested) puts_(e, "N");
  int start = 0;
  bool start_args = false; /* resume with part `start`'s arguments */
  /* The longest proper prefix that is a candidate already. */
  for (int i = upto; i >= 0 && !e->nosub && start == 0 && !start_args; i--) {
    for (int with = 1; with >= 0; with--) {
      if (with && !n->comps[i].has_args) continue;
      if (i == upto && (with || !upto_args || !n->comps[i].has_args)) continue; /* not proper */
      char key[KEY_LEN];
      key_of(e, P_PREFIX, n, i, with, key);
      if (try_sub(e, key)) {
        start = with || !n->comps[i].has_args ? i + 1 : i;
        start_args = !with && n->comps[i].has_args;
        break;
      }
    }
  }
  int tp = start == 0 && !start_args ? tmpl_param(e, n) : -1;
  for (int i = start; i <= upto; i++) {
    const comp *c = &n->comps[i];
    bool args = c->has_args && (i < upto || upto_args);
    if (!(i == start && start_args)) {
      if (i == 0 && tp >= 0) {
        char buf[16];
        snprintf(buf, sizeof buf, tp == 0 ? "T_" : "T%d_", tp - 1);
        puts_(e, buf);
        add_sub(e, buf);
      } else {
        put_source(e, c);
        if (i < upto || args) add_key(e, P_PREFIX, n, i, false);
      }
    }
    if (args) {
      emit_args(e, c);
      if (i < upto) add_key(e, P_PREFIX, n, i, true);
    }
  }
  if (nested) puts_(e, "E");
}

/* Layer 0 is the type as written; each layer peels one qualifier off the
 * outside: & then * (each) then const. */
static void emit_type(emitter *e, const node *t, int layer) {
  if (t->kind == N_ELLIPSIS) {
    puts_(e, "z");
    return;
  }
  int quals = (t->ref ? 1 : 0) + t->ptr + (t->is_const ? 1 : 0);
  if (layer == quals && t->kind == N_BUILTIN) {
    puts_(e, t->code);
    return;
  }
  char key[KEY_LEN] = "";
  if (!e->nosub) {
    key_of(e, P_TYPE, t, layer, false, key);
    if (try_sub(e, key)) return;
  }
  int at = layer;
  if (t->ref && at == 0) {
    puts_(e, "R");
    emit_type(e, t, layer + 1);
  } else if (at < (t->ref ? 1 : 0) + t->ptr) {
    puts_(e, "P");
    emit_type(e, t, layer + 1);
  } else if (at < quals) {
    puts_(e, "K");
    emit_type(e, t, layer + 1);
  } else {
    emit_name(e, t, t->ncomp - 1, true);
  }
  add_sub(e, key);
}

__attribute__((visibility("default"))) char *simcuda_mangle(const char *readable) {
  if (readable == NULL || strncmp(readable, "void ", 5) != 0) return NULL;
  node *pool = malloc(sizeof(node) * MAX_NODES);
  char *out = malloc(KEY_LEN * 2);
  if (pool == NULL || out == NULL) {
    free(pool);
    free(out);
    return NULL;
  }
  parser ps = {.p = readable + 5, .pool = pool};
  node *fn = parse_name(&ps);
  node *params[MAX_ARGS];
  int nparams = 0;
  bool ok = fn != NULL && !ps.bad && fn->comps[fn->ncomp - 1].has_args && *ps.p == '(';
  if (ok) {
    ps.p++;
    skip_spaces(&ps);
    while (ok && *ps.p != ')') {
      node *p = NULL;
      if (strncmp(ps.p, "...", 3) == 0) {
        ps.p += 3;
        p = new_node(&ps, N_ELLIPSIS);
      } else {
        p = parse_type(&ps);
      }
      ok = p != NULL && nparams < MAX_ARGS;
      if (ok) params[nparams++] = p;
      skip_spaces(&ps);
      if (ok && *ps.p == ',') {
        ps.p++;
        skip_spaces(&ps);
      } else {
        ok = ok && *ps.p == ')';
      }
    }
    ok = ok && ps.p[0] == ')' && ps.p[1] == '\0';
  }
  emitter e = {.out = out, .cap = KEY_LEN * 2};
  if (ok) {
    e.tmpl = &fn->comps[fn->ncomp - 1];
    puts_(&e, "_Z");
    emit_name(&e, fn, fn->ncomp - 1, true);
    e.in_sig = true;
    puts_(&e, "v"); /* a function template's encoding carries its return type */
    if (nparams == 0) puts_(&e, "v");
    for (int i = 0; i < nparams; i++)
      emit_type(&e, params[i], 0);
  }
  for (int i = 0; i < e.nsubs; i++)
    free(e.subs[i]);
  free(pool);
  if (!ok || e.bad) {
    free(out);
    return NULL;
  }
  return out;
}
