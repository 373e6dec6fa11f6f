/* mpprof_object_tree (report/raw_reader.c) builds the cJSON tree of a raw
 * file's site, event and range objects without cJSON's parse where it can.
 * What a user relies on: the report reads every file exactly as cJSON would,
 * odd spellings and corrupt bytes included. So every text here, hand-written
 * or mutated, must give cJSON_ParseWithLength's tree node for node (type,
 * key, string, the double's bits, the int), or NULL where cJSON fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "report/report_internal.h"

static void assert_same_tree(const cJSON *a, const cJSON *b, const char *text) {
  for (; a || b; a = a->next, b = b->next) {
    if (!a || !b) fail_msg("a member more or less than cJSON's, text: %s", text);
    if (a->type != b->type) fail_msg("type %d, cJSON %d, text: %s", a->type, b->type, text);
    if (!a->string != !b->string || (a->string && strcmp(a->string, b->string)))
      fail_msg("key \"%s\", cJSON \"%s\", text: %s", a->string ? a->string : "(none)",
               b->string ? b->string : "(none)", text);
    if (!a->valuestring != !b->valuestring ||
        (a->valuestring && strcmp(a->valuestring, b->valuestring)))
      fail_msg("string \"%s\", cJSON \"%s\", text: %s", a->valuestring ? a->valuestring : "",
               b->valuestring ? b->valuestring : "", text);
    if (memcmp(&a->valuedouble, &b->valuedouble, sizeof a->valuedouble) ||
        a->valueint != b->valueint)
      fail_msg("number %.17g/%d, cJSON %.17g/%d, text: %s", a->valuedouble, a->valueint,
               b->valuedouble, b->valueint, text);
    if (b->child && b->child->prev != b->child->next && !a->child->prev)
      fail_msg("no last-member link, text: %s", text);
    assert_same_tree(a->child, b->child, text);
  }
}

static void check(const char *t, size_t n) {
  char *shown = malloc(n + 1);
  assert_non_null(shown);
  for (size_t i = 0; i < n; i++)
    shown[i] = t[i] ? t[i] : '@';
  shown[n] = '\0';
  cJSON *a = mpprof_object_tree(t, n), *b = cJSON_ParseWithLength(t, n);
  if (!a != !b)
    fail_msg("%s where cJSON %s: %s", a ? "a tree" : "NULL", b ? "parses" : "fails", shown);
  if (a) assert_same_tree(a, b, shown);
  cJSON_Delete(a);
  cJSON_Delete(b);
  free(shown);
}

/* A site as mpprof writes it (its tensors taken out, as the reader does). */
static const char SITE[] =
    "{\"id\":0,\"layer\":\"block00000/fwd\",\"m\":8,\"api\":\"cublasGemmEx\",\"op\":\"gemm\","
    "\"n\":64,\"k\":64,\"batch\":1,\"transa\":\"N\",\"transb\":\"N\",\"lda\":64,\"ldb\":64,"
    "\"ldc\":64,\"types\":{\"A\":\"fp16\",\"B\":\"fp16\",\"C\":\"fp32\",\"D\":\"fp32\"},"
    "\"compute_type\":\"32F\",\"scale_type\":\"fp32\",\"math_mode\":\"DEFAULT\",\"calls\":10,"
    "\"scanned_calls\":10,\"tensors\":{},\"loss_scale\":65536.0,\"phase\":\"backward\","
    "\"fp8_scale_values\":{\"A\":{\"read\":3,\"unread\":0,\"min\":0.5,\"max\":2.25e-3}},"
    "\"conv\":{\"n\":1,\"pad\":[1,1],\"stride\":[2,2]},\"not_scanned\":null,\"ok\":true,"
    "\"bad\":false,\"ptr_align\":256,\"kernels\":[{\"name\":\"nvjet_hsh_128x64_64x4_1x2_h_bz_"
    "coopA_NNT\",\"count\":10,\"gpu_ns\":12345}],\"gpu_ns\":-12345}";

static void sites_and_odd_spellings_parse_as_cjson_parses_them(void **state) {
  (void)state;
  static const char *const texts[] = {
      SITE,
      "{}",
      "{ }",
      "[]",
      "{\"a\":[]}",
      "{\"a\":{}}",
      "{\"a\":[ ]}",
      "{ \"a\" : 1 , \"b\" : [ 1 , 2 ] }",
      "{\n\t\"a\":\r\n1}",
      "{\"a\":1}trailing",
      "{\"a\":1,}",
      "{\"a\" 1}",
      "{\"a\":1 \"b\":2}",
      "{\"a\":}",
      "{\"a\"}",
      "{a:1}",
      "{\"a\":1",
      "{\"a\":[1,2}",
      "{\"a\":1}}",
      "{\"a\":01}",
      "{\"a\":-0}",
      "{\"a\":-}",
      "{\"a\":+1}",
      "{\"a\":1.}",
      "{\"a\":.5}",
      "{\"a\":1e400}",
      "{\"a\":-1e400}",
      "{\"a\":1E+2}",
      "{\"a\":2147483648}",
      "{\"a\":-2147483649}",
      "{\"a\":999999999999999}",
      "{\"a\":9999999999999999}",
      "{\"a\":12345678901234567890}",
      "{\"a\":0x10}",
      "{\"a\":1-2}",
      "{\"a\":12abc}",
      "{\"a\":nullx}",
      "{\"a\":nul}",
      "{\"a\":tru}",
      "{\"a\":truefalse}",
      "{\"a\":NaN}",
      "{\"a\":\"x\\\"y\"}",
      "{\"a\":\"\\u00e9\\ud83d\\ude00\"}",
      "{\"a\":\"\\uZZZZ\"}",
      "{\"a\":\"\\q\"}",
      "{\"a\\\"b\":1}",
      "{\"a\\u0062\":1}",
      "{\"a\":\"tab\there\"}",
      "{\"\xc3\xa9\":\"\xff\xfe\"}",
      "{\"a\":1,\"a\":2}",
      "{\"\":\"\"}",
      "\xef\xbb\xbf{\"a\":1}",
      "{\"a\":\xef\xbb\xbf"
      "12}",
      " {\"a\":1}",
      "{\f\"a\":1}",
      "{\"a\":\v1}",
      "{\"a\":1\f}",
      "{\"a\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}",
      "{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":{\"f\":{\"g\":{\"h\":{\"i\":{\"j\":{\"k\":{\"l\":{\"m\":{"
      "\"n\":{\"o\":{\"p\":{\"q\":{\"r\":1}}}}}}}}}}}}}}}}}}",
      "{\"a\":[1,\"x\",null,true,{\"b\":[]},-2.5]}",
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    check(texts[i], strlen(texts[i]));
  /* bytes no C string holds: a NUL inside a string, a key, between tokens */
  static const char nul_str[] = "{\"a\":\"x\0y\"}", nul_key[] = "{\"a\0b\":1}",
                    nul_ws[] = "{\"a\":\0 1}";
  check(nul_str, sizeof nul_str - 1);
  check(nul_key, sizeof nul_key - 1);
  check(nul_ws, sizeof nul_ws - 1);
  /* a string and a key longer than the fast path's buffers */
  char longer[1200];
  memset(longer, 'x', sizeof longer);
  memcpy(longer, "{\"a\":\"", 6);
  memcpy(longer + sizeof longer - 2, "\"}", 2);
  check(longer, sizeof longer);
  memcpy(longer, "{\"", 2);
  memcpy(longer + sizeof longer - 5, "\":1}", 4);
  check(longer, sizeof longer - 1);
  /* every prefix of a site: truncated anywhere */
  for (size_t n = 1; n < sizeof SITE - 1; n++)
    check(SITE, n);
}

/* Mutated sites: bytes replaced, inserted and deleted at random (a fixed
 * seed), from an alphabet of JSON's structural bytes, digits, escapes and
 * control bytes, where the fast path and cJSON could part. */
static void mutated_sites_parse_as_cjson_parses_them(void **state) {
  (void)state;
  static const char alphabet[] = "{}[]\":,\\ \t\n\r\f\v-+.eE0123456789tfnulrsax\x01\x7f\xc3";
  uint64_t seed = 0x9e3779b97f4a7c15u;
  char t[sizeof SITE + 8];
  for (int iter = 0; iter < 60000; iter++) {
    size_t n = sizeof SITE - 1;
    memcpy(t, SITE, n);
    int edits = 1 + iter % 3;
    for (int e = 0; e < edits; e++) {
      seed = seed * 6364136223846793005u + 1442695040888963407u;
      size_t at = (size_t)(seed >> 33) % n;
      char c = alphabet[(seed >> 20) % (sizeof alphabet - 1)];
      switch ((seed >> 8) % 3) {
      case 0:
        t[at] = c;
        break;
      case 1:
        if (n < sizeof t) {
          memmove(t + at + 1, t + at, n - at);
          t[at] = c;
          n++;
        }
        break;
      default:
        if (n > 1) {
          memmove(t + at, t + at + 1, n - at - 1);
          n--;
        }
      }
    }
    check(t, n);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sites_and_odd_spellings_parse_as_cjson_parses_them),
      cmocka_unit_test(mutated_sites_parse_as_cjson_parses_them),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
