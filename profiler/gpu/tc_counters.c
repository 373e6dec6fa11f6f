/* Tensor Core use from hardware counters (mpprof --tc-counters, env
 * MPPROF_TC_COUNTERS): for sampled hooked calls, CUPTI's range profiler in
 * auto-range / kernel-replay mode measures every kernel the call launches,
 * and the profiler host API evaluates the chip's tensor-pipe metrics for each
 * of them. A kernel whose tensor metrics are all zero did not use Tensor Cores.
 *
 * Everything goes through the libcupti handle cupti.c opened (the C library's
 * dlsym, mpp_real_dlsym; the host API's structs are mirrored in
 * cupti_host_abi.h because its header is C++).
 * Sequence (NVIDIA's range_profiling sample, CUPTI docs section 2.9), once, on
 * the first sampled call's thread: cuptiProfilerInitialize,
 * cuptiDeviceGetChipName, cuptiProfilerGetCounterAvailability,
 * cuptiProfilerHostInitialize, cuptiProfilerHostConfigAddMetrics (one metric
 * at a time: a name the chip does not know is dropped, not fatal),
 * GetConfigImageSize/GetConfigImage/GetNumOfPasses, cuptiRangeProfilerEnable,
 * cuptiRangeProfilerGetCounterDataSize. Per sampled call: before the real call
 * cuptiRangeProfilerCounterDataImageInitialize (a fresh image),
 * cuptiRangeProfilerSetConfig (CUPTI_AutoRange, CUPTI_KernelReplay) and
 * cuptiRangeProfilerStart; after it cuptiRangeProfilerStop,
 * cuptiRangeProfilerDecodeData (synchronises the context),
 * cuptiRangeProfilerGetCounterDataInfo and cuptiProfilerHostEvaluateToGpuValues
 * per range. Any failure makes counters unavailable for the rest of the run,
 * with the reason; the name rules then decide alone.
 *
 * Auto ranges are numbered, not named: range i is the call's i-th kernel
 * launch. The kernels themselves arrive later through CUPTI activity with the
 * call's op id; once as many have arrived as there were ranges, they are put
 * in launch order (kernel replay serialises them, so start times order them)
 * and range i's verdict goes to the i-th. A count that does not match (another
 * thread launched into the same context during the window, a range dropped)
 * discards the call's verdicts: they are counted, never guessed.
 *
 * Concurrency: one profiled call at a time per process (an atomic flag, never
 * waited on: a call that finds it taken is simply not profiled), so no lock is
 * held across the application's call. The table of calls awaiting their
 * kernels has its own mutex, never held while calling CUPTI or the sites. The
 * calls run inside hooks, on the calling thread, at hook depth > 0, so
 * nothing CUPTI or the driver does here is recorded as the app's. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/cupti_host_abi.h"
#include "profiler/gpu/gpu.h"
#include "profiler/mpp.h"

#define MAX_RANGES 64  /* kernels of one profiled call */
#define MAX_PENDING 64 /* profiled calls waiting for their kernel records */

/* X(symbol, member, parameter type); all take one params struct. */
#define TC_FUNCS(X)                                                                                \
  X(cuptiProfilerInitialize, init, CUpti_Profiler_Initialize_Params)                               \
  X(cuptiDeviceGetChipName, chip_name, CUpti_Device_GetChipName_Params)                            \
  X(cuptiProfilerGetCounterAvailability, availability,                                             \
    CUpti_Profiler_GetCounterAvailability_Params)                                                  \
  X(cuptiProfilerHostInitialize, host_init, mpp_host_initialize_params)                            \
  X(cuptiProfilerHostDeinitialize, host_deinit, mpp_host_deinitialize_params)                      \
  X(cuptiProfilerHostConfigAddMetrics, host_add, mpp_host_config_add_metrics_params)               \
  X(cuptiProfilerHostGetConfigImageSize, host_config_size, mpp_host_get_config_image_size_params)  \
  X(cuptiProfilerHostGetConfigImage, host_config, mpp_host_get_config_image_params)                \
  X(cuptiProfilerHostGetNumOfPasses, host_passes, mpp_host_get_num_of_passes_params)               \
  X(cuptiProfilerHostEvaluateToGpuValues, host_eval, mpp_host_evaluate_params)                     \
  X(cuptiRangeProfilerEnable, rp_enable, CUpti_RangeProfiler_Enable_Params)                        \
  X(cuptiRangeProfilerDisable, rp_disable, CUpti_RangeProfiler_Disable_Params)                     \
  X(cuptiRangeProfilerGetCounterDataSize, rp_data_size,                                            \
    CUpti_RangeProfiler_GetCounterDataSize_Params)                                                 \
  X(cuptiRangeProfilerCounterDataImageInitialize, rp_data_init,                                    \
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params)                                        \
  X(cuptiRangeProfilerSetConfig, rp_set_config, CUpti_RangeProfiler_SetConfig_Params)              \
  X(cuptiRangeProfilerStart, rp_start, CUpti_RangeProfiler_Start_Params)                           \
  X(cuptiRangeProfilerStop, rp_stop, CUpti_RangeProfiler_Stop_Params)                              \
  X(cuptiRangeProfilerDecodeData, rp_decode, CUpti_RangeProfiler_DecodeData_Params)                \
  X(cuptiRangeProfilerGetCounterDataInfo, rp_data_info,                                            \
    CUpti_RangeProfiler_GetCounterDataInfo_Params)

static struct {
#define TC_MEMBER(sym, member, ptype) CUptiResult (*member)(ptype *);
  TC_FUNCS(TC_MEMBER)
#undef TC_MEMBER
  CUptiResult (*result_string)(CUptiResult, const char **);
} api;

/* Tensor-pipe metrics per chip (cuptiDeviceGetChipName), from DESIGN.md /
 * cuda-facts.md, each with its role in the verdict (tc_role). Not every
 * tensor-pipe instruction is matrix math: on an H200 (GH100, cuBLAS 13.0,
 * 2026-12-04) cuBLAS's CUDA-core xmma ffma SGEMMs and split-K reduce kernels
 * issued a few HFMA2 on the tensor pipe (ncu agreed), counted by ..._hmma and
 * every all-instruction cycle metric, so "any tensor metric > 0" called them
 * Tensor Core kernels. A kernel used Tensor Cores when a TC_MATH metric is
 * > 0, or its TC_INST counts exceed its TC_NOT_MATH counts, or (lists not
 * yet checked against a GPU) any TC_ANY metric is > 0. Names a chip does not
 * know are dropped one by one (on a fresh host object each time: see
 * add_metrics); a dropped TC_NOT_MATH leaves TC_INST counting moves too. */
typedef enum tc_role {
  TC_ANY = 0,  /* > 0: Tensor Cores (unchecked lists) */
  TC_MATH,     /* counts MMA work only: > 0 is Tensor Core math */
  TC_INST,     /* tensor-pipe instructions, moves included */
  TC_NOT_MATH, /* the part of TC_INST that is not MMA (HFMA2 on the tensor pipe) */
} tc_role;

typedef struct chip_metrics {
  const char *prefix; /* chip name or prefix (GA10 = GA102..GA107) */
  const char *metrics[MPP_TC_MAX_METRICS];
  tc_role roles[MPP_TC_MAX_METRICS];
} chip_metrics;

static const chip_metrics chips[] = {
    /* Ampere: the same sm80 kernels as on GH100, so the same HFMA2 subtracted
     * (where the chip knows the metric; not seen on an Ampere GPU yet). */
    {"GA100",
     {"sm__inst_executed_pipe_tensor_op_hmma.sum",
      "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",
      "sm__inst_executed_pipe_tensor_op_imma.sum", "sm__inst_executed_pipe_tensor_op_dmma.sum"},
     {TC_INST, TC_NOT_MATH, TC_MATH, TC_MATH}},
    {"GA10",
     {"sm__inst_executed_pipe_tensor_op_hmma.sum",
      "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",
      "sm__inst_executed_pipe_tensor_op_imma.sum", "sm__inst_executed_pipe_tensor_op_dmma.sum"},
     {TC_INST, TC_NOT_MATH, TC_MATH, TC_MATH}},
    /* GH100: the MMA-only cycle counts decide (zero for every CUDA-core
     * kernel on the H200, non-zero for every wgmma and mma.sync one); the
     * instruction counts are kept for the report and as a second witness. */
    {"GH100",
     {"sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum",
      "sm__pipe_tensor_op_dmma_cycles_active.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum",
      "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum"},
     {TC_MATH, TC_MATH, TC_INST, TC_NOT_MATH}},
    {"AD10",
     {"sm__inst_executed_pipe_tensor_op_hmma_v2.sum",
      "sm__pipe_tensor_op_hmma_cycles_active_v2.sum", "sm__pipe_tensor_op_hmma_cycles_active.sum",
      "sm__pipe_tensor_cycles_active_v2.sum"},
     {TC_ANY, TC_ANY, TC_ANY, TC_ANY}},
    {"GB10",
     {"sm__inst_executed_pipe_tensor_subpipe_hmma.sum",
      "sm__inst_executed_pipe_tensor_subpipe_imma.sum", "sm__pipe_tensor_cycles_active.sum",
      "sm__pipe_tensor_subpipe_hmma_cycles_active.sum"},
     {TC_ANY, TC_ANY, TC_ANY, TC_ANY}},
};

/* A profiled call waiting for its kernels' activity records. */
typedef struct pending {
  uint64_t op_id; /* 0: free slot */
  int nranges;    /* -1: the call is still running */
  uint64_t end_seq;
  uint8_t tc[MAX_RANGES];
  double values[MAX_RANGES][MPP_TC_MAX_METRICS];
  int nk;
  struct {
    char *name;
    uint64_t start;
  } k[MAX_RANGES];
} pending;

enum { ST_UNTRIED = 0, ST_READY, ST_UNAVAILABLE };

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* pending table, stats, status text */
static pending g_pending[MAX_PENDING];
static atomic_int g_state;
static atomic_flag g_busy = ATOMIC_FLAG_INIT; /* one profiled call at a time */
static atomic_uint_fast64_t g_end_seq;
static char g_reason[256];
static char g_chip[64];
static const char *g_metrics[MPP_TC_MAX_METRICS];
static tc_role g_roles[MPP_TC_MAX_METRICS]; /* of g_metrics */
static int g_nmetrics;

/* Whether one range's values (g_metrics' order) say Tensor Core math (tc_role). */
static uint8_t tc_verdict(const double *v) {
  double inst = 0, not_math = 0;
  for (int m = 0; m < g_nmetrics; m++) {
    switch (g_roles[m]) {
    case TC_INST:
      inst += v[m];
      break;
    case TC_NOT_MATH:
      not_math += v[m];
      break;
    default: /* TC_ANY, TC_MATH */
      if (v[m] > 0) return 1;
    }
  }
  return inst - not_math > 0;
}

static size_t g_passes;
static CUcontext g_ctx;
static CUpti_RangeProfiler_Object *g_obj;
static mpp_host_object *g_host;
static uint8_t *g_config;
/* The counter availability image, alive as long as the host object (volatile:
 * only written, a store the compiler would otherwise drop, leaking it). */
static uint8_t *volatile g_avail;
static size_t g_config_size;
static uint8_t *g_data;
static size_t g_data_size;
static struct { uint64_t ops_profiled, kernels_profiled, ops_unmatched, ops_skipped; } g_stats;

static pthread_once_t g_fork_once = PTHREAD_ONCE_INIT;

static void on_fork_child(void);

static void register_fork_handler(void) {
  pthread_atfork(NULL, NULL, on_fork_child);
}

/* mpp_cfg.tc_every: MPPROF_TC_COUNTERS as read at init (core.c). */
int mpp_tc_every(void) {
  pthread_once(&g_fork_once, register_fork_handler);
  return mpp_cfg.tc_every;
}

static const char *result_name(CUptiResult r) {
  switch (r) {
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (GPU performance counters are restricted to "
           "admin users: run as root or load the driver with "
           "NVreg_RestrictProfilingToAdminUsers=0)";
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    return "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES (profiling not enabled for this "
           "vGPU)";
  case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another profiler holds the counters)";
  case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    return "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED (another tool uses the older profiler API)";
  case CUPTI_ERROR_NOT_SUPPORTED:
    return "CUPTI_ERROR_NOT_SUPPORTED";
  case CUPTI_ERROR_INVALID_PARAMETER:
    return "CUPTI_ERROR_INVALID_PARAMETER";
  case CUPTI_ERROR_NOT_INITIALIZED:
    return "CUPTI_ERROR_NOT_INITIALIZED";
  case CUPTI_ERROR_INVALID_OPERATION:
    return "CUPTI_ERROR_INVALID_OPERATION";
  case CUPTI_ERROR_INVALID_CHIP_NAME:
    return "CUPTI_ERROR_INVALID_CHIP_NAME";
  case CUPTI_ERROR_INVALID_METRIC_NAME:
    return "CUPTI_ERROR_INVALID_METRIC_NAME";
  default:
    break;
  }
  const char *s = NULL;
  if (api.result_string && api.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error";
}

/* First failure wins; g_mu held by the caller or not needed (init). */
static void set_unavailable_locked(const char *fmt, const char *what, CUptiResult r) {
  if (atomic_load(&g_state) == ST_UNAVAILABLE) return;
  if (r == CUPTI_SUCCESS)
    snprintf(g_reason, sizeof g_reason, fmt, what);
  else
    snprintf(g_reason, sizeof g_reason, "%s failed: %s (%d)", what, result_name(r), (int)r);
  atomic_store(&g_state, ST_UNAVAILABLE);
}

static void set_unavailable(const char *fmt, const char *what, CUptiResult r) {
  pthread_mutex_lock(&g_mu);
  set_unavailable_locked(fmt, what, r);
  pthread_mutex_unlock(&g_mu);
  mpp_log(1, "--tc-counters: counters unavailable: %s", g_reason);
}

#define CALL(member, p)                                                                            \
  do {                                                                                             \
    CUptiResult r_ = api.member(&(p));                                                             \
    if (r_ != CUPTI_SUCCESS) {                                                                     \
      set_unavailable(NULL, tc_sym_##member, r_);                                                  \
      return false;                                                                                \
    }                                                                                              \
  } while (0)

#define TC_NAME(sym, member, ptype)                                                                \
  __attribute__((unused)) static const char tc_sym_##member[] = #sym;
TC_FUNCS(TC_NAME)
#undef TC_NAME

static const chip_metrics *metrics_for(const char *chip) {
  for (size_t i = 0; i < sizeof chips / sizeof chips[0]; i++)
    if (!strncmp(chip, chips[i].prefix, strlen(chips[i].prefix))) return &chips[i];
  return NULL;
}

/* A range profiler object for ctx and a counter data image sized for it. */
static bool enable_object(CUcontext ctx) {
  CUpti_RangeProfiler_Enable_Params en = {.structSize =
                                              CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  en.ctx = ctx;
  CALL(rp_enable, en);
  g_obj = en.pRangeProfilerObject;
  g_ctx = ctx;
  CUpti_RangeProfiler_GetCounterDataSize_Params ds = {
      .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pRangeProfilerObject = g_obj;
  ds.pMetricNames = g_metrics;
  ds.numMetrics = (size_t)g_nmetrics;
  ds.maxNumOfRanges = MAX_RANGES;
  ds.maxNumRangeTreeNodes = MAX_RANGES;
  CALL(rp_data_size, ds);
  if (!g_data || ds.counterDataSize != g_data_size) {
    free(g_data);
    g_data_size = ds.counterDataSize;
    g_data = malloc(g_data_size ? g_data_size : 1);
  }
  if (!g_data) {
    set_unavailable("%s", "out of memory for the counter data image", CUPTI_SUCCESS);
    return false;
  }
  return true;
}

/* Adds cm's metrics to g_host one at a time, keeping those the chip
 * accepts. The real host object refuses every later add once one name was
 * refused (CUPTI_ERROR_UNKNOWN: seen with libcupti 13's host API, GA102
 * refusing ..._dmma.sum), so after a refusal g_host is made again (hi) with
 * the names kept so far. false (unavailable set) when that fails. */
static bool add_metrics(const chip_metrics *cm, mpp_host_initialize_params *hi) {
  for (int i = 0; i < MPP_TC_MAX_METRICS && cm->metrics[i]; i++) {
    mpp_host_config_add_metrics_params am = {.structSize = MPP_HOST_CONFIG_ADD_METRICS_PARAMS_SIZE};
    am.pHostObject = g_host;
    const char *one[1] = {cm->metrics[i]};
    am.ppMetricNames = one;
    am.numMetrics = 1;
    if (api.host_add(&am) == CUPTI_SUCCESS) {
      g_roles[g_nmetrics] = cm->roles[i];
      g_metrics[g_nmetrics++] = cm->metrics[i];
      continue;
    }
    mpp_log(1, "--tc-counters: chip %s does not know %s: not used", g_chip, cm->metrics[i]);
    mpp_host_deinitialize_params hd = {.structSize = MPP_HOST_DEINITIALIZE_PARAMS_SIZE};
    hd.pHostObject = g_host;
    CUptiResult r = api.host_deinit(&hd);
    g_host = NULL;
    if (r != CUPTI_SUCCESS) return set_unavailable(NULL, tc_sym_host_deinit, r), false;
    hi->pHostObject = NULL;
    if ((r = api.host_init(hi)) != CUPTI_SUCCESS)
      return set_unavailable(NULL, tc_sym_host_init, r), false;
    g_host = hi->pHostObject;
    if (!g_nmetrics) continue;
    am.pHostObject = g_host;
    am.ppMetricNames = g_metrics;
    am.numMetrics = (size_t)g_nmetrics;
    if ((r = api.host_add(&am)) != CUPTI_SUCCESS)
      return set_unavailable(NULL, tc_sym_host_add, r), false;
  }
  return true;
}

/* The one-time setup for ctx, the first sampled call's context, current
 * (init_for); runs on that call's thread with g_busy held. */
static bool init(CUcontext ctx) {
  if (strcmp(mpp_cupti_status(), "ok")) {
    char why[128];
    snprintf(why, sizeof why, "CUPTI activity is '%s': kernels cannot be tied to calls",
             mpp_cupti_status());
    set_unavailable("%s", why, CUPTI_SUCCESS);
    return false;
  }
  void *h = mpp_cupti_handle();
  if (!h) {
    set_unavailable("%s", "CUPTI not loaded", CUPTI_SUCCESS);
    return false;
  }
#define TC_RESOLVE(sym, member, ptype) *(void **)&api.member = mpp_real_dlsym(h, #sym);
  TC_FUNCS(TC_RESOLVE)
#undef TC_RESOLVE
  *(void **)&api.result_string = mpp_real_dlsym(h, "cuptiGetResultString");
#define TC_CHECK(sym, member, ptype)                                                               \
  if (!api.member && strcmp(#member, "availability")) {                                            \
    set_unavailable("%s not in this CUPTI (the range profiler needs CUDA 12.6 update 2 or newer)", \
                    #sym, CUPTI_SUCCESS);                                                          \
    return false;                                                                                  \
  }
  TC_FUNCS(TC_CHECK)
#undef TC_CHECK
  const mpp_cu_api *cu = mpp_cu();
  CUdevice dev = 0;
  if (!cu || !cu->ctx_device || cu->ctx_device(&dev) != CUDA_SUCCESS) {
    set_unavailable("%s", "no device for the first profiled call's CUDA context", CUPTI_SUCCESS);
    return false;
  }

  CUpti_Profiler_Initialize_Params pi = {.structSize =
                                             CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CALL(init, pi);
  CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  cn.deviceIndex = (size_t)dev;
  CALL(chip_name, cn);
  snprintf(g_chip, sizeof g_chip, "%s", cn.pChipName ? cn.pChipName : "?");
  const chip_metrics *cm = metrics_for(g_chip);
  if (!cm) {
    char why[160];
    snprintf(why, sizeof why, "no Tensor Core metric known for chip %s", g_chip);
    set_unavailable("%s", why, CUPTI_SUCCESS);
    return false;
  }

  /* Counter availability (optional: "required for future chip support"). */
  uint8_t *avail = NULL;
  if (api.availability) {
    CUpti_Profiler_GetCounterAvailability_Params ga = {
        .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
    ga.ctx = ctx;
    CUptiResult r = api.availability(&ga);
    if (r == CUPTI_SUCCESS && ga.counterAvailabilityImageSize &&
        (avail = malloc(ga.counterAvailabilityImageSize))) {
      ga.pCounterAvailabilityImage = avail;
      r = api.availability(&ga);
    }
    if (r != CUPTI_SUCCESS) {
      free(avail);
      set_unavailable(NULL, "cuptiProfilerGetCounterAvailability", r);
      return false;
    }
  }

  mpp_host_initialize_params hi = {.structSize = MPP_HOST_INITIALIZE_PARAMS_SIZE};
  hi.profilerType = MPP_HOST_PROFILER_TYPE_RANGE;
  hi.pChipName = g_chip;
  hi.pCounterAvailabilityImage = avail;
  CUptiResult r = api.host_init(&hi);
  /* Kept for the life of the host object (NVIDIA's sample keeps it alive too:
   * the header does not say the object copies it). */
  g_avail = avail;
  if (r != CUPTI_SUCCESS) {
    set_unavailable(NULL, tc_sym_host_init, r);
    return false;
  }
  g_host = hi.pHostObject;

  if (!add_metrics(cm, &hi)) return false;
  if (!g_nmetrics) {
    char why[160];
    snprintf(why, sizeof why, "chip %s accepted none of its Tensor Core metrics", g_chip);
    set_unavailable("%s", why, CUPTI_SUCCESS);
    return false;
  }
  mpp_host_get_config_image_size_params cs = {.structSize =
                                                  MPP_HOST_GET_CONFIG_IMAGE_SIZE_PARAMS_SIZE};
  cs.pHostObject = g_host;
  CALL(host_config_size, cs);
  g_config_size = cs.configImageSize;
  g_config = malloc(g_config_size ? g_config_size : 1);
  if (!g_config) {
    set_unavailable("%s", "out of memory for the config image", CUPTI_SUCCESS);
    return false;
  }
  mpp_host_get_config_image_params gc = {.structSize = MPP_HOST_GET_CONFIG_IMAGE_PARAMS_SIZE};
  gc.pHostObject = g_host;
  gc.configImageSize = g_config_size;
  gc.pConfigImage = g_config;
  CALL(host_config, gc);
  mpp_host_get_num_of_passes_params np = {.structSize = MPP_HOST_GET_NUM_OF_PASSES_PARAMS_SIZE};
  np.configImageSize = g_config_size;
  np.pConfigImage = g_config;
  CALL(host_passes, np);
  g_passes = np.numOfPasses;

  if (!enable_object(ctx)) return false;
  atomic_store(&g_state, ST_READY);
  return true;
}

/* Per call: a fresh counter data image, the configuration, start. On
 * failure *ret_what names the call. */
static CUptiResult try_start(const char **ret_what) {
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params di = {
      .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  di.pRangeProfilerObject = g_obj;
  di.counterDataSize = g_data_size;
  di.pCounterData = g_data;
  CUptiResult r = api.rp_data_init(&di);
  if (r != CUPTI_SUCCESS) return *ret_what = tc_sym_rp_data_init, r;
  CUpti_RangeProfiler_SetConfig_Params sc = {.structSize =
                                                 CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  sc.pRangeProfilerObject = g_obj;
  sc.configSize = g_config_size;
  sc.pConfig = g_config;
  sc.counterDataImageSize = g_data_size;
  sc.pCounterDataImage = g_data;
  sc.range = CUPTI_AutoRange;
  sc.replayMode = CUPTI_KernelReplay;
  sc.maxRangesPerPass = MAX_RANGES;
  sc.numNestingLevels = 1;
  sc.minNestingLevel = 1;
  sc.passIndex = 0;
  sc.targetNestingLevel = 1;
  r = api.rp_set_config(&sc);
  if (r != CUPTI_SUCCESS) return *ret_what = tc_sym_rp_set_config, r;
  CUpti_RangeProfiler_Start_Params st = {.structSize =
                                             CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  st.pRangeProfilerObject = g_obj;
  r = api.rp_start(&st);
  if (r != CUPTI_SUCCESS) return *ret_what = tc_sym_rp_start, r;
  return CUPTI_SUCCESS;
}

static uint64_t g_sessions; /* sessions started on g_obj (g_busy held) */

/* NVIDIA's sample configures once and starts once; the docs allow resetting
 * the image. Should a CUPTI refuse a second configuration of the same object,
 * the object is disabled and enabled afresh (what tools that profile one
 * measurement at a time do) and the session tried once more. */
static bool start_session(void) {
  const char *what = NULL;
  CUptiResult r = try_start(&what);
  if (r != CUPTI_SUCCESS && g_sessions > 0) {
    mpp_log(1, "--tc-counters: %s refused a new session (%d): enabling the range profiler again",
            what, (int)r);
    CUpti_RangeProfiler_Disable_Params dp = {.structSize =
                                                 CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    dp.pRangeProfilerObject = g_obj;
    CUptiResult rd = api.rp_disable(&dp);
    g_obj = NULL;
    g_sessions = 0;
    if (rd != CUPTI_SUCCESS) {
      set_unavailable(NULL, tc_sym_rp_disable, rd);
      return false;
    }
    if (!enable_object(g_ctx)) return false;
    r = try_start(&what);
  }
  if (r != CUPTI_SUCCESS) {
    set_unavailable(NULL, what, r);
    return false;
  }
  g_sessions++;
  return true;
}

/* init with ctx current: it need not be the calling thread's (see op_context). */
static bool init_for(const mpp_cu_api *cu, CUcontext ctx) {
  CUcontext cur = NULL;
  bool pushed = cu->ctx_current && cu->ctx_current(&cur) == CUDA_SUCCESS && cur != ctx &&
                cu->ctx_push && cu->ctx_push(ctx) == CUDA_SUCCESS;
  bool ok = init(ctx);
  if (pushed && cu->ctx_pop) cu->ctx_pop(&cur);
  return ok;
}

/* The context the op's kernels run in (cuStreamGetCtx): a created stream's
 * own, the calling thread's current one for the NULL and per-thread
 * streams. NULL while that is not known: a thread that has not used CUDA
 * before has no current context at the hook's entry (cuda.h,
 * cuCtxGetCurrent); the library makes one current inside the call
 * (cuda_runtime_api.h, "Initialization and Tear-Down"). */
static CUcontext op_context(const mpp_cu_api *cu, void *stream) {
  CUcontext ctx = NULL;
  if (!cu) return NULL;
  if (cu->stream_ctx) {
    if (cu->stream_ctx((CUstream)stream, &ctx) != CUDA_SUCCESS) ctx = NULL;
  } else if (!cu->ctx_current || cu->ctx_current(&ctx) != CUDA_SUCCESS) {
    ctx = NULL;
  }
  return ctx;
}

static pending *find_locked(uint64_t op_id) {
  for (int i = 0; i < MAX_PENDING; i++)
    if (g_pending[i].op_id == op_id) return &g_pending[i];
  return NULL;
}

static void drop_locked(pending *p) {
  for (int i = 0; i < p->nk; i++)
    free(p->k[i].name);
  p->op_id = 0;
  p->nk = 0;
}

/* The CUPTI calls synchronise the context (auto range, decode): they run in
 * relaxed capture mode (mpp_cu_capture_relax), never across the app's call. */
bool mpp_tc_begin(uint64_t op_id, uint64_t call_index, void *stream) {
  int every = mpp_tc_every();
  if (every < 0 || op_id == 0 || !mpp_cuda_ours()) return false;
  if (every == 0 ? call_index != 0 : call_index % (uint64_t)every != 0) return false;
  if (atomic_load(&g_state) == ST_UNAVAILABLE) return false;
  /* Kernel replay cannot run work that is only being recorded into a graph. */
  if (mpp_cuda_stream_capturing(stream) || atomic_flag_test_and_set(&g_busy)) {
    pthread_mutex_lock(&g_mu);
    g_stats.ops_skipped++;
    pthread_mutex_unlock(&g_mu);
    return false;
  }
  const mpp_cu_api *cu = mpp_cu();
  CUcontext ctx = op_context(cu, stream);
  if (!ctx) { /* not known yet: this call only, the setup waits for one that is */
    pthread_mutex_lock(&g_mu);
    g_stats.ops_skipped++;
    pthread_mutex_unlock(&g_mu);
    atomic_flag_clear(&g_busy);
    return false;
  }
  CUstreamCaptureMode mode = mpp_cu_capture_relax(cu);
  bool ready = atomic_load(&g_state) != ST_UNTRIED || init_for(cu, ctx);
  mpp_cu_capture_restore(cu, mode);
  /* Not ready: init failed, or an earlier holder of g_busy found it unavailable. */
  if (!ready || atomic_load(&g_state) != ST_READY) {
    atomic_flag_clear(&g_busy);
    return false;
  }
  pthread_mutex_lock(&g_mu);
  pending *p = ctx == g_ctx ? find_locked(0) : NULL;
  if (p) {
    p->op_id = op_id;
    p->nranges = -1;
    p->nk = 0;
  } else {
    g_stats.ops_skipped++; /* another context, or too many calls still waiting */
  }
  pthread_mutex_unlock(&g_mu);
  if (!p) {
    atomic_flag_clear(&g_busy);
    return false;
  }
  mode = mpp_cu_capture_relax(mpp_cu());
  bool started = start_session();
  mpp_cu_capture_restore(mpp_cu(), mode);
  if (!started) {
    pthread_mutex_lock(&g_mu);
    drop_locked(p);
    pthread_mutex_unlock(&g_mu);
    atomic_flag_clear(&g_busy);
    return false;
  }
  return true;
}

/* Verdicts ready to go to the sites, handed out without g_mu. */
typedef struct verdict {
  char *name;
  bool tc;
  double values[MPP_TC_MAX_METRICS];
} verdict;

/* All kernels of p are in: pair them with the ranges in launch order. */
static int settle_locked(pending *p, verdict *out) {
  if (p->nranges < 0 || p->nk < p->nranges) return 0;
  if (p->nk > p->nranges) {
    g_stats.ops_unmatched++;
    drop_locked(p);
    return 0;
  }
  /* Insertion sort by start time, stable. */
  for (int i = 1; i < p->nk; i++)
    for (int j = i; j > 0 && p->k[j].start < p->k[j - 1].start; j--) {
      __typeof__(p->k[0]) t = p->k[j];
      p->k[j] = p->k[j - 1];
      p->k[j - 1] = t;
    }
  for (int i = 0; i < p->nk; i++) {
    out[i].name = p->k[i].name;
    out[i].tc = p->tc[i];
    memcpy(out[i].values, p->values[i], sizeof out[i].values);
    p->k[i].name = NULL;
  }
  int n = p->nk;
  g_stats.kernels_profiled += (uint64_t)n;
  drop_locked(p); /* names handed out: NULL here */
  return n;
}

static void hand_out(uint64_t op_id, verdict *v, int n, mpp_tc_verdict_fn fn) {
  for (int i = 0; i < n; i++) {
    if (fn) fn(op_id, v[i].name, v[i].tc, v[i].values, g_nmetrics);
    free(v[i].name);
  }
}

static mpp_tc_verdict_fn g_fn;

void mpp_tc_set_verdict_sink(mpp_tc_verdict_fn fn) {
  pthread_mutex_lock(&g_mu);
  g_fn = fn;
  pthread_mutex_unlock(&g_mu);
}

void mpp_tc_end(uint64_t op_id) {
  int n = -1;
  uint8_t tc[MAX_RANGES];
  double values[MAX_RANGES][MPP_TC_MAX_METRICS];
  bool ok = true;
  CUstreamCaptureMode mode = mpp_cu_capture_relax(mpp_cu());
  CUpti_RangeProfiler_Stop_Params sp = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  sp.pRangeProfilerObject = g_obj;
  CUptiResult r = api.rp_stop(&sp);
  if (r != CUPTI_SUCCESS) set_unavailable(NULL, tc_sym_rp_stop, r), ok = false;
  CUpti_RangeProfiler_DecodeData_Params dd = {
      .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  dd.pRangeProfilerObject = g_obj;
  if (ok && (r = api.rp_decode(&dd)) != CUPTI_SUCCESS)
    set_unavailable(NULL, tc_sym_rp_decode, r), ok = false;
  CUpti_RangeProfiler_GetCounterDataInfo_Params ci = {
      .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  ci.pCounterDataImage = g_data;
  ci.counterDataImageSize = g_data_size;
  if (ok && (r = api.rp_data_info(&ci)) != CUPTI_SUCCESS)
    set_unavailable(NULL, tc_sym_rp_data_info, r), ok = false;
  /* Dropped ranges or more kernels than the image holds: no pairing possible. */
  if (ok && !dd.numOfRangeDropped && ci.numTotalRanges <= MAX_RANGES) {
    n = (int)ci.numTotalRanges;
    for (int i = 0; i < n && ok; i++) {
      mpp_host_evaluate_params ev = {.structSize = MPP_HOST_EVALUATE_PARAMS_SIZE};
      ev.pHostObject = g_host;
      ev.pCounterDataImage = g_data;
      ev.counterDataImageSize = g_data_size;
      ev.rangeIndex = (size_t)i;
      ev.ppMetricNames = g_metrics;
      ev.numMetrics = (size_t)g_nmetrics;
      ev.pMetricValues = values[i];
      if ((r = api.host_eval(&ev)) != CUPTI_SUCCESS) {
        set_unavailable(NULL, tc_sym_host_eval, r), ok = false;
        break;
      }
      tc[i] = tc_verdict(values[i]);
    }
  }
  mpp_cu_capture_restore(mpp_cu(), mode);
  verdict v[MAX_RANGES];
  int nv = 0;
  mpp_tc_verdict_fn fn;
  pthread_mutex_lock(&g_mu);
  fn = g_fn;
  pending *p = find_locked(op_id);
  /* Measured: counted whether or not it can be paired (ops_unmatched is a part of it;
   * p may already be gone: more kernels than ranges, counted as unmatched then). */
  if (ok) g_stats.ops_profiled++;
  if (p) {
    if (!ok || n < 0) {
      if (ok) g_stats.ops_unmatched++;
      drop_locked(p);
    } else {
      p->nranges = n;
      mpp_memcpy_n(p->tc, tc, (size_t)n);
      memcpy(p->values, values, (size_t)n * sizeof values[0]);
      p->end_seq = atomic_fetch_add(&g_end_seq, 1) + 1;
      nv = settle_locked(p, v);
    }
  }
  pthread_mutex_unlock(&g_mu);
  atomic_flag_clear(&g_busy);
  hand_out(op_id, v, nv, fn);
}

void mpp_tc_kernel(uint64_t op_id, const char *name, uint64_t start_ns) {
  if (op_id == 0 || mpp_tc_every() < 0) return;
  verdict v[MAX_RANGES];
  int nv = 0;
  mpp_tc_verdict_fn fn;
  pthread_mutex_lock(&g_mu);
  fn = g_fn;
  pending *p = find_locked(op_id);
  if (p) {
    if (p->nk == MAX_RANGES || (p->nranges >= 0 && p->nk >= p->nranges)) {
      g_stats.ops_unmatched++; /* more kernels than ranges */
      drop_locked(p);
    } else {
      char *copy = strdup(name ? name : "?");
      if (!copy) {
        g_stats.ops_unmatched++;
        drop_locked(p);
      } else {
        p->k[p->nk].name = copy;
        p->k[p->nk].start = start_ns;
        p->nk++;
        nv = settle_locked(p, v);
      }
    }
  }
  pthread_mutex_unlock(&g_mu);
  hand_out(op_id, v, nv, fn);
}

uint64_t mpp_tc_flush_mark(void) {
  return atomic_load(&g_end_seq);
}

void mpp_tc_settle(uint64_t mark) {
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < MAX_PENDING; i++) {
    pending *p = &g_pending[i];
    /* Ended before the flush began: every kernel record it will get is in. */
    if (p->op_id && p->nranges >= 0 && p->end_seq <= mark) {
      g_stats.ops_unmatched++;
      drop_locked(p);
    }
  }
  pthread_mutex_unlock(&g_mu);
}

void mpp_tc_info_get(mpp_tc_info *ret) {
  memset(ret, 0, sizeof *ret);
  ret->every = mpp_tc_every();
  if (ret->every < 0) return;
  pthread_mutex_lock(&g_mu);
  int st = atomic_load(&g_state);
  ret->status = st == ST_READY ? "ok" : st == ST_UNAVAILABLE ? "unavailable" : "not_started";
  snprintf(ret->reason, sizeof ret->reason, "%s", st == ST_UNAVAILABLE ? g_reason : "");
  /* The setup (init) writes the chip, metrics and passes without g_mu, on
   * the first profiled call's thread, and is over once the state leaves
   * ST_UNTRIED (the store that does it comes after them, and nothing writes
   * them after it): until then a checkpoint would read them half written. */
  if (st != ST_UNTRIED) {
    snprintf(ret->chip, sizeof ret->chip, "%s", g_chip);
    ret->nmetrics = g_nmetrics;
    for (int i = 0; i < g_nmetrics; i++)
      ret->metrics[i] = g_metrics[i];
    ret->passes = g_passes;
  }
  ret->ops_profiled = g_stats.ops_profiled;
  ret->kernels_profiled = g_stats.kernels_profiled;
  ret->ops_unmatched = g_stats.ops_unmatched;
  ret->ops_skipped = g_stats.ops_skipped;
  pthread_mutex_unlock(&g_mu);
}

static void on_fork_child(void) {
  /* The child never touches the parent's CUPTI: no more profiling there. */
  pthread_mutex_init(&g_mu, NULL);
  for (int i = 0; i < MAX_PENDING; i++)
    g_pending[i].op_id = 0, g_pending[i].nk = 0;
  snprintf(g_reason, sizeof g_reason, "fork child: counters are the parent's");
  atomic_store(&g_state, ST_UNAVAILABLE);
  atomic_flag_clear(&g_busy);
}
