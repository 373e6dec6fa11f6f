/* report_fixture: what the report tests share around rawgen: the process
 * most hand-made runs come from, a run directory begun with it, the report
 * generated there, and look-ups into report.json that fail the test where
 * a layer is missing. Needs cmocka (the checks are its assertions). */
#ifndef MPPROF_TESTS_REPORT_REPORT_FIXTURE_H
#define MPPROF_TESTS_REPORT_REPORT_FIXTURE_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "rawgen.h"

/* rank 0 of ./train on node01, pid 100, a 9.0 device */
extern const rg_proc RF_P0;

/* A fresh run directory (rg_tmpdir(tag), malloc'd) whose raw file a.json is
 * begun in r as RF_P0. */
char *rf_run_begin(rg_file *r, const char *tag);
/* The report of dir with the default options, written there. */
void rf_generate(const char *dir);
/* rf_generate, then dir/report.json parsed. */
cJSON *rf_report_of(const char *dir);

/* A forward GEMM site with fp16 inputs A, B in binades [2^-8, 2^4] and an
 * fp32 output spanning [2^lo, 2^hi]. */
cJSON *rf_fwd_site(int id, const char *layer_path, double lo, double hi);
/* A backward GEMM site whose fp32 output (a gradient) spans [2^lo, 2^hi]. */
cJSON *rf_bwd_site(int id, const char *layer_path, double lo, double hi);
/* A run for the verdicts' marks (rg_tmpdir(tag), malloc'd), its report not
 * yet generated: layer l (fp16 with a loss scale) whose incoming fp16
 * gradient is every value an fp16 subnormal (flushed before mpprof saw it),
 * f forward only, g forward and backward; with_grads false: f alone (an
 * eval-only run). */
char *rf_marks_run(const char *tag, bool with_grads);

/* o's member at a dotted path ("a.b.c"); NULL where there is none. */
/* A cuDNN convolution site (rawgen's rg_gemm with a "conv" object): api and
 * op as given, x/w/y of `types` ("x=fp16,w=fp16,y=fp16"), fp32 compute, 3
 * calls; n 8, c 16, 32x32, k 32, a 3x3 filter, pad/stride/dilation 1. */
cJSON *rf_conv_site(int id, const char *api, const char *op, const char *layer_path,
                    const char *types);
cJSON *rf_get(const cJSON *o, const char *path);
/* The layer of that name in rep's "layers"; fails the test where there is none. */
cJSON *rf_layer(const cJSON *rep, const char *name);
/* The first finding of that kind (of that layer, unless layer_name is NULL). */
cJSON *rf_finding(const cJSON *rep, const char *kind, const char *layer_name);

#endif
