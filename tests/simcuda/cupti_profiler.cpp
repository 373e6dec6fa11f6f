/* simcuda's CUPTI range profiler and profiler host API (part of
 * libcupti.so.13): what mpprof --tc-counters drives, on simcuda's simulated
 * GPU. Written in C++ so that it includes the real cupti_profiler_host.h
 * (which includes <string>): the ABI it checks is NVIDIA's, not a mirror.
 *
 * The documented call sequence is enforced with CUPTI's error codes
 * (cupti_range_profiler.h, cupti_profiler_host.h, CUPTI docs 2.9):
 * cuptiProfilerInitialize before anything else (CUPTI_ERROR_NOT_INITIALIZED);
 * every params struct's structSize equal to its *_STRUCT_SIZE and pPriv NULL
 * (CUPTI_ERROR_INVALID_PARAMETER); the host object from a known chip
 * (CUPTI_ERROR_INVALID_CHIP_NAME) with metrics that chip has
 * (CUPTI_ERROR_INVALID_METRIC_NAME); cuptiRangeProfilerEnable once per
 * context; SetConfig with an initialised counter data image and a config
 * image from the host, not while a session runs; kernel replay only with auto
 * range; Start after SetConfig; Stop after Start; DecodeData after Stop;
 * EvaluateToGpuValues on a decoded image, for a range it holds.
 *
 * Auto range: every kernel simcuda runs on the context between Start and Stop
 * is one range, numbered from 0 (range names "0", "1", ...). Kernel replay
 * changes nothing here: simcuda's kernels are deterministic host code run
 * once, and their counters are derived, not measured.
 *
 * The simulated hardware's truth: a kernel uses the tensor pipe unless it is
 * one of the CUDA-core families of simcuda's kernel-name table
 * (kernel_names.def, evidence in /work/shared/kernel-names.md: cuBLAS gemv
 * kernels, cutlass simt / xmma ffma SGEMMs, cuDNN direct, implicit_convolve,
 * dgrad2d_alg and wgrad_alg kernels, simcuda's unlisted fallbacks). Counter
 * values per kernel: tensor instructions = 16 per warp of the grid, active
 * cycles = 64 per warp, zero for CUDA-core kernels. On GH100 the sm90 / nvjet
 * (wgmma) kernels count under ..._gmma and ..._hmma alike, the others under
 * ..._hmma. Also on GH100, as seen on an H200 (ncu and mpprof, cuBLAS 13.0,
 * 2026-12-04): cuBLAS's CUDA-core xmma ffma SGEMMs and its split-K reduce
 * kernels issue a few HFMA2 instructions on the tensor pipe (moves, not
 * matrix math), counted by ..._hmma, by ..._hmma_type_hfma2 and by the cycle
 * metrics that take every tensor-pipe instruction (2 cycles each), and by
 * neither the MMA-only cycle metrics (..._type_hmma_hgmma_qgmma...) nor
 * ..._gmma: here one per warp. Cutlass simt SGEMMs issue none.
 *
 * Knobs (environment): SIMCUDA_CHIP (cuptiDeviceGetChipName; default
 * GH100), SIMCUDA_PROFILER_DENIED=1 (cuptiRangeProfilerEnable answers
 * CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, as without admin rights on counters),
 * SIMCUDA_TC_TRUTH=substring=0|1[,...] (kernels whose name contains the
 * substring get that truth: lets a test give a kernel a misleading name),
 * SIMCUDA_RP_ONE_SESSION=1 (SetConfig on an object that already ran a session
 * answers CUPTI_ERROR_INVALID_OPERATION: a CUPTI that wants a fresh
 * cuptiRangeProfilerEnable per measurement), SIMCUDA_RP_KILLED_IN_SETUP=1
 * (cuptiProfilerHostGetConfigImageSize, a step of a profiler's setup, first
 * has another thread call mpprof_checkpoint() when libmpprof.so is loaded,
 * waits for it, then kills the process: the raw file left is what a
 * checkpoint wrote while the setup was under way). */
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <pthread.h>

#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include "cupti_sim.h"

#define SIM_API extern "C" __attribute__((visibility("default")))

namespace {

struct chip_info {
  const char *name;
  std::vector<std::string> metrics; /* with the .sum rollup */
};

const std::vector<chip_info> &chips() {
  static const std::vector<chip_info> c = {
      {"GA100",
       {"sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_imma.sum",
        "sm__inst_executed_pipe_tensor_op_dmma.sum", "sm__pipe_tensor_op_hmma_cycles_active.sum",
        "sm__pipe_tensor_cycles_active.sum"}},
      /* no FP64 tensor pipe: libcupti 13's host API refuses ..._dmma.sum for GA102 */
      {"GA102",
       {"sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_imma.sum",
        "sm__pipe_tensor_op_hmma_cycles_active.sum", "sm__pipe_tensor_cycles_active.sum"}},
      /* as libcupti 13 / ncu list them for gh100 (names with "tensor" or "mma") */
      {"GH100",
       {"sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
        "sm__inst_executed_pipe_tensor_op_dmma.sum", "sm__inst_executed_pipe_tensor_op_imma.sum",
        "sm__inst_executed_pipe_tensor_op_hmma_type_hfma2.sum",
        "sm__pipe_tensor_op_hmma_cycles_active.sum", "sm__pipe_tensor_cycles_active.sum",
        "sm__pipe_tensor_op_dmma_cycles_active.sum", "sm__pipe_tensor_op_imma_cycles_active.sum",
        "sm__pipe_tensor_op_hmma_type_hmma_hgmma_qgmma_cycles_active.sum",
        "sm__pipe_tensor_type_hmma_hgmma_qgmma_imma_igmma_bmma_bgmma_cycles_active.sum"}},
      {"AD102",
       {"sm__inst_executed_pipe_tensor_op_hmma_v2.sum",
        "sm__pipe_tensor_op_hmma_cycles_active_v2.sum", "sm__pipe_tensor_op_hmma_cycles_active.sum",
        "sm__pipe_tensor_cycles_active_v2.sum"}},
      {"GB100",
       {"sm__inst_executed_pipe_tensor_subpipe_hmma.sum",
        "sm__inst_executed_pipe_tensor_subpipe_imma.sum", "sm__pipe_tensor_cycles_active.sum",
        "sm__pipe_tensor_subpipe_hmma_cycles_active.sum"}},
      {"TU102", {"sm__pipe_tensor_cycles_active.sum"}},
  };
  return c;
}

const chip_info *find_chip(const char *name) {
  if (!name) return nullptr;
  for (const auto &c : chips())
    if (!strcmp(c.name, name)) return &c;
  return nullptr;
}

const char *sim_chip() {
  const char *v = getenv("SIMCUDA_CHIP");
  return v && *v ? v : "GH100";
}

enum class mma { hmma, wgmma, imma, dmma };

struct range {
  bool tc;
  mma kind; /* which instruction class a Tensor Core kernel issues */
  double warps;
  double hfma2; /* GH100: HFMA2 instructions a CUDA-core kernel issues on the tensor pipe */
};

/* Counter data image layout (simcuda's own; clients only size and pass it). */
constexpr uint64_t DATA_MAGIC = 0x53494d4344415441ull; /* "SIMCDATA" */
constexpr size_t NAME_LEN = 96;
struct data_header {
  uint64_t magic;
  uint64_t max_ranges;
  uint64_t nmetrics;
  uint64_t nranges;
  uint64_t decoded;
  /* then nmetrics names of NAME_LEN bytes, then max_ranges * nmetrics doubles */
};

size_t data_size(size_t max_ranges, size_t nmetrics) {
  return sizeof(data_header) + nmetrics * NAME_LEN + max_ranges * nmetrics * sizeof(double);
}

constexpr char CONFIG_MAGIC[8] = {'S', 'I', 'M', 'C', 'C', 'F', 'G', '1'};

struct host_object {
  const chip_info *chip;
  std::vector<std::string> metrics;
  bool refused; /* a name was refused: every later add fails, as libcupti 13's does */
};

enum class rp_state { enabled, configured, started, stopped };

struct rp_object {
  CUcontext ctx;
  rp_state state = rp_state::enabled;
  uint8_t *data = nullptr;
  size_t data_size = 0;
  size_t max_per_pass = 0;
  std::vector<range> pending;
  size_t dropped = 0;
  size_t sessions = 0;          /* Start calls */
  size_t layout_max_ranges = 0; /* from GetCounterDataSize */
  std::vector<std::string> layout_metrics;
};

std::mutex mu;
bool initialized;
rp_object *active; /* one context in simcuda: one object */

template <typename P> bool bad_struct(const P *p, size_t want) {
  return !p || p->structSize != want || p->pPriv != nullptr;
}

bool truth_override(const char *name, bool *ret) {
  const char *v = getenv("SIMCUDA_TC_TRUTH");
  if (!v || !*v) return false;
  std::string s(v);
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t eq = item.rfind('=');
    if (eq != std::string::npos && eq > 0 && strstr(name, item.substr(0, eq).c_str())) {
      *ret = item.substr(eq + 1) == "1";
      return true;
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return false;
}

bool uses_tensor_pipe(const char *name) {
  bool forced;
  if (truth_override(name, &forced)) return forced;
  static const char *const cuda_core[] = {
      "gemvx::kernel",         "gemv2T_kernel",     "_simt_",      "_ffma_",
      "grouped_direct_kernel", "implicit_convolve", "dgrad2d_alg", "wgrad_alg",
      "simcuda_unlisted",
  };
  for (const char *t : cuda_core)
    if (strstr(name, t)) return false;
  return true;
}

double *values_of(uint8_t *data, size_t r) {
  auto *h = reinterpret_cast<data_header *>(data);
  return reinterpret_cast<double *>(data + sizeof(data_header) + h->nmetrics * NAME_LEN) +
         r * h->nmetrics;
}

const char *metric_name_of(const uint8_t *data, size_t m) {
  return reinterpret_cast<const char *>(data + sizeof(data_header) + m * NAME_LEN);
}

bool valid_data(const uint8_t *data, size_t size) {
  if (!data || size < sizeof(data_header)) return false;
  auto *h = reinterpret_cast<const data_header *>(data);
  return h->magic == DATA_MAGIC && size == data_size(h->max_ranges, h->nmetrics);
}

/* Instruction counts by class (GH100: wgmma kernels under _gmma; other chips
 * count every 16-bit / tf32 / fp8 MMA under _hmma), cycle counts for any class. */
double metric_value(const std::string &metric, const range &r) {
  bool gh100 = !strcmp(sim_chip(), "GH100");
  bool inst = metric.find("inst_executed") != std::string::npos;
  /* The MMA-only cycle metrics (GH100): every class but DMMA, or 16-bit/tf32/fp8 only. */
  bool mma_cycles = metric.find("_type_hmma_hgmma_qgmma") != std::string::npos;
  bool mma_int_too = metric.find("_imma_igmma_bmma_bgmma") != std::string::npos;
  if (metric.find("_hmma_type_hfma2") != std::string::npos) return r.hfma2;
  if (!r.tc) {
    /* Tensor-pipe HFMA2: in the all-instruction counts, never in the MMA-only ones. */
    if (mma_cycles || metric.find("_gmma") != std::string::npos ||
        metric.find("_dmma") != std::string::npos || metric.find("_imma") != std::string::npos)
      return 0;
    return inst ? r.hfma2 : 2 * r.hfma2;
  }
  mma k = r.kind == mma::wgmma && !gh100 ? mma::hmma : r.kind;
  if (!inst) {
    if (mma_cycles) return k == mma::dmma || (k == mma::imma && !mma_int_too) ? 0 : 64 * r.warps;
    if (metric.find("_op_dmma") != std::string::npos) return k == mma::dmma ? 64 * r.warps : 0;
    if (metric.find("_op_imma") != std::string::npos) return k == mma::imma ? 64 * r.warps : 0;
    return 64 * r.warps;
  }
  bool counted = metric.find("_gmma") != std::string::npos   ? k == mma::wgmma
                 : metric.find("_dmma") != std::string::npos ? k == mma::dmma
                 : metric.find("_imma") != std::string::npos ? k == mma::imma
                 : metric.find("_hmma") != std::string::npos ? k == mma::hmma || k == mma::wgmma
                                                             : false;
  return counted ? 16 * r.warps : 0;
}

} // namespace

/* From cupti.c's kernel sink: one kernel finished on the launching thread. */
extern "C" void simcuda_rp_kernel(const simcuda_kernel_event *ev) {
  std::lock_guard<std::mutex> g(mu);
  if (!active || active->state != rp_state::started) return;
  const simcuda_kernel *k = ev->kernel;
  const char *name = k->name ? k->name : "";
  double blocks = (double)k->grid[0] * k->grid[1] * k->grid[2];
  double warps = blocks * ((k->block[0] * k->block[1] * k->block[2] + 31) / 32);
  mma kind = strstr(name, "f64")                                  ? mma::dmma
             : strstr(name, "i8i32") || strstr(name, "_i8_")      ? mma::imma
             : strstr(name, "sm90") || !strncmp(name, "nvjet", 5) ? mma::wgmma
                                                                  : mma::hmma;
  bool tc = uses_tensor_pipe(name);
  bool gh100 = !strcmp(sim_chip(), "GH100");
  double hfma2 =
      !tc && gh100 && (strstr(name, "_xmma_") || strstr(name, "splitKreduce")) ? warps : 0;
  range r{tc, kind, warps, hfma2};
  if (active->pending.size() >= active->max_per_pass)
    active->dropped++;
  else
    active->pending.push_back(r);
}

/* ---- target side (cupti_profiler_target.h, cupti_target.h) ---- */

SIM_API CUptiResult cuptiProfilerInitialize(CUpti_Profiler_Initialize_Params *p) {
  if (bad_struct(p, CUpti_Profiler_Initialize_Params_STRUCT_SIZE))
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  initialized = true;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiProfilerDeInitialize(CUpti_Profiler_DeInitialize_Params *p) {
  if (bad_struct(p, CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE))
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  initialized = false;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiDeviceGetChipName(CUpti_Device_GetChipName_Params *p) {
  if (bad_struct(p, CUpti_Device_GetChipName_Params_STRUCT_SIZE) || p->deviceIndex != 0)
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  if (!initialized) return CUPTI_ERROR_NOT_INITIALIZED;
  p->pChipName = sim_chip();
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult
cuptiProfilerGetCounterAvailability(CUpti_Profiler_GetCounterAvailability_Params *p) {
  if (bad_struct(p, CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE) || !p->ctx)
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  if (!initialized) return CUPTI_ERROR_NOT_INITIALIZED;
  constexpr size_t size = 64;
  if (!p->pCounterAvailabilityImage) {
    p->counterAvailabilityImageSize = size;
    return CUPTI_SUCCESS;
  }
  if (p->counterAvailabilityImageSize < size) return CUPTI_ERROR_INVALID_PARAMETER;
  memset(p->pCounterAvailabilityImage, 0xa5, size);
  return CUPTI_SUCCESS;
}

/* ---- host side (cupti_profiler_host.h) ---- */

SIM_API CUptiResult cuptiProfilerHostInitialize(CUpti_Profiler_Host_Initialize_Params *p) {
  if (bad_struct(p, CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE) ||
      p->profilerType != CUPTI_PROFILER_TYPE_RANGE_PROFILER || !p->pChipName)
    return CUPTI_ERROR_INVALID_PARAMETER;
  const chip_info *c = find_chip(p->pChipName);
  if (!c) return CUPTI_ERROR_INVALID_CHIP_NAME;
  p->pHostObject = reinterpret_cast<CUpti_Profiler_Host_Object *>(new host_object{c, {}, false});
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiProfilerHostDeinitialize(CUpti_Profiler_Host_Deinitialize_Params *p) {
  if (bad_struct(p, CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE) || !p->pHostObject)
    return CUPTI_ERROR_INVALID_PARAMETER;
  delete reinterpret_cast<host_object *>(p->pHostObject);
  p->pHostObject = nullptr;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult
cuptiProfilerHostConfigAddMetrics(CUpti_Profiler_Host_ConfigAddMetrics_Params *p) {
  if (bad_struct(p, CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE) || !p->pHostObject ||
      !p->ppMetricNames || !p->numMetrics)
    return CUPTI_ERROR_INVALID_PARAMETER;
  auto *h = reinterpret_cast<host_object *>(p->pHostObject);
  /* The real host object (libcupti 13, host API run without a GPU): an
   * unknown name gives CUPTI_ERROR_INVALID_PARAMETER, and from then on every
   * add on that object gives CUPTI_ERROR_UNKNOWN, known names included. */
  if (h->refused) return CUPTI_ERROR_UNKNOWN;
  for (size_t i = 0; i < p->numMetrics; i++) {
    bool known = false;
    for (const auto &m : h->chip->metrics)
      known |= p->ppMetricNames[i] && m == p->ppMetricNames[i];
    if (!known) {
      h->refused = true;
      return CUPTI_ERROR_INVALID_PARAMETER;
    }
  }
  for (size_t i = 0; i < p->numMetrics; i++)
    h->metrics.emplace_back(p->ppMetricNames[i]);
  return CUPTI_SUCCESS;
}

static size_t config_size(const host_object *h) {
  size_t n = sizeof CONFIG_MAGIC;
  for (const auto &m : h->metrics)
    n += m.size() + 1;
  return n;
}

static void *call_checkpoint(void *fn) {
  reinterpret_cast<void (*)(void)>(fn)();
  return nullptr;
}

/* SIMCUDA_RP_KILLED_IN_SETUP (see the knobs). */
static void killed_in_setup() {
  const char *v = getenv("SIMCUDA_RP_KILLED_IN_SETUP");
  if (!v || strcmp(v, "1")) return;
  void *fn = dlsym(RTLD_DEFAULT, "mpprof_checkpoint");
  pthread_t t;
  if (fn && !pthread_create(&t, nullptr, call_checkpoint, fn)) pthread_join(t, nullptr);
  raise(SIGKILL);
}

SIM_API CUptiResult
cuptiProfilerHostGetConfigImageSize(CUpti_Profiler_Host_GetConfigImageSize_Params *p) {
  killed_in_setup();
  if (bad_struct(p, CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE) || !p->pHostObject)
    return CUPTI_ERROR_INVALID_PARAMETER;
  auto *h = reinterpret_cast<host_object *>(p->pHostObject);
  if (h->metrics.empty()) return CUPTI_ERROR_INVALID_OPERATION;
  p->configImageSize = config_size(h);
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiProfilerHostGetConfigImage(CUpti_Profiler_Host_GetConfigImage_Params *p) {
  if (bad_struct(p, CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE) || !p->pHostObject ||
      !p->pConfigImage)
    return CUPTI_ERROR_INVALID_PARAMETER;
  auto *h = reinterpret_cast<host_object *>(p->pHostObject);
  if (h->metrics.empty()) return CUPTI_ERROR_INVALID_OPERATION;
  if (p->configImageSize < config_size(h)) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t *o = p->pConfigImage;
  memcpy(o, CONFIG_MAGIC, sizeof CONFIG_MAGIC);
  o += sizeof CONFIG_MAGIC;
  for (const auto &m : h->metrics) {
    memcpy(o, m.c_str(), m.size() + 1);
    o += m.size() + 1;
  }
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiProfilerHostGetNumOfPasses(CUpti_Profiler_Host_GetNumOfPasses_Params *p) {
  if (bad_struct(p, CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE) || !p->pConfigImage ||
      p->configImageSize < sizeof CONFIG_MAGIC ||
      memcmp(p->pConfigImage, CONFIG_MAGIC, sizeof CONFIG_MAGIC))
    return CUPTI_ERROR_INVALID_PARAMETER;
  p->numOfPasses = 1; /* every tensor metric of simcuda's chips fits one pass */
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult
cuptiProfilerHostEvaluateToGpuValues(CUpti_Profiler_Host_EvaluateToGpuValues_Params *p) {
  if (bad_struct(p, CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE) ||
      !p->pHostObject || !p->ppMetricNames || !p->pMetricValues || !p->numMetrics ||
      !valid_data(p->pCounterDataImage, p->counterDataImageSize))
    return CUPTI_ERROR_INVALID_PARAMETER;
  auto *h = reinterpret_cast<const data_header *>(p->pCounterDataImage);
  if (!h->decoded || p->rangeIndex >= h->nranges) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t *data = const_cast<uint8_t *>(p->pCounterDataImage);
  for (size_t i = 0; i < p->numMetrics; i++) {
    size_t m = 0;
    while (m < h->nmetrics &&
           (!p->ppMetricNames[i] || strcmp(metric_name_of(data, m), p->ppMetricNames[i])))
      m++;
    if (m == h->nmetrics) return CUPTI_ERROR_INVALID_METRIC_NAME;
    p->pMetricValues[i] = values_of(data, p->rangeIndex)[m];
  }
  return CUPTI_SUCCESS;
}

/* ---- range profiler (cupti_range_profiler.h) ---- */

SIM_API CUptiResult cuptiRangeProfilerEnable(CUpti_RangeProfiler_Enable_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE) || !p->ctx)
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  if (!initialized) return CUPTI_ERROR_NOT_INITIALIZED;
  const char *denied = getenv("SIMCUDA_PROFILER_DENIED");
  if (denied && !strcmp(denied, "1")) return CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  if (active) return CUPTI_ERROR_INVALID_OPERATION; /* already enabled on this context */
  active = new rp_object{};
  active->ctx = p->ctx;
  p->pRangeProfilerObject = reinterpret_cast<CUpti_RangeProfiler_Object *>(active);
  return CUPTI_SUCCESS;
}

static rp_object *object_of(CUpti_RangeProfiler_Object *o) {
  auto *r = reinterpret_cast<rp_object *>(o);
  return r && r == active ? r : nullptr;
}

SIM_API CUptiResult cuptiRangeProfilerDisable(CUpti_RangeProfiler_Disable_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE))
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  rp_object *r = object_of(p->pRangeProfilerObject);
  if (!r) return CUPTI_ERROR_INVALID_PARAMETER;
  delete r;
  active = nullptr;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult
cuptiRangeProfilerGetCounterDataSize(CUpti_RangeProfiler_GetCounterDataSize_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE) ||
      !p->pMetricNames || !p->numMetrics || !p->maxNumOfRanges ||
      p->maxNumRangeTreeNodes < p->maxNumOfRanges)
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  if (!object_of(p->pRangeProfilerObject)) return CUPTI_ERROR_INVALID_PARAMETER;
  const chip_info *c = find_chip(sim_chip());
  for (size_t i = 0; i < p->numMetrics; i++) {
    bool known = false;
    for (const auto &m : c ? c->metrics : std::vector<std::string>{})
      known |= p->pMetricNames[i] && m == p->pMetricNames[i] && m.size() < NAME_LEN;
    if (!known) return CUPTI_ERROR_INVALID_METRIC_NAME;
  }
  /* The image holds the metric names: CounterDataImageInitialize writes them. */
  rp_object *r = object_of(p->pRangeProfilerObject);
  r->layout_max_ranges = p->maxNumOfRanges;
  r->layout_metrics.assign(p->pMetricNames, p->pMetricNames + p->numMetrics);
  p->counterDataSize = data_size(p->maxNumOfRanges, p->numMetrics);
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiRangeProfilerCounterDataImageInitialize(
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE) ||
      !p->pCounterData)
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  rp_object *r = object_of(p->pRangeProfilerObject);
  if (!r || r->layout_metrics.empty() ||
      p->counterDataSize != data_size(r->layout_max_ranges, r->layout_metrics.size()))
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (r->state == rp_state::started) return CUPTI_ERROR_INVALID_OPERATION;
  memset(p->pCounterData, 0, p->counterDataSize);
  auto *h = reinterpret_cast<data_header *>(p->pCounterData);
  *h = data_header{DATA_MAGIC, r->layout_max_ranges, r->layout_metrics.size(), 0, 0};
  for (size_t m = 0; m < r->layout_metrics.size(); m++)
    memcpy(p->pCounterData + sizeof(data_header) + m * NAME_LEN, r->layout_metrics[m].c_str(),
           r->layout_metrics[m].size() + 1);
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiRangeProfilerSetConfig(CUpti_RangeProfiler_SetConfig_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE) || !p->pConfig ||
      p->configSize < sizeof CONFIG_MAGIC ||
      memcmp(p->pConfig, CONFIG_MAGIC, sizeof CONFIG_MAGIC) ||
      !valid_data(p->pCounterDataImage, p->counterDataImageSize) || !p->maxRangesPerPass)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->range != CUPTI_AutoRange && p->range != CUPTI_UserRange)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->replayMode != CUPTI_KernelReplay && p->replayMode != CUPTI_UserReplay &&
      p->replayMode != CUPTI_ApplicationReplay)
    return CUPTI_ERROR_INVALID_PARAMETER;
  /* Kernel replay "is only supported in Auto Range Mode"; auto range has one level. */
  if (p->replayMode == CUPTI_KernelReplay && p->range != CUPTI_AutoRange)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (p->range == CUPTI_AutoRange && p->numNestingLevels != 1) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  rp_object *r = object_of(p->pRangeProfilerObject);
  if (!r) return CUPTI_ERROR_INVALID_PARAMETER;
  if (r->state == rp_state::started) return CUPTI_ERROR_INVALID_OPERATION;
  const char *once = getenv("SIMCUDA_RP_ONE_SESSION");
  if (once && !strcmp(once, "1") && r->sessions > 0) return CUPTI_ERROR_INVALID_OPERATION;
  /* simcuda implements what mpprof uses: auto range with kernel replay. */
  if (p->replayMode != CUPTI_KernelReplay) return CUPTI_ERROR_NOT_SUPPORTED;
  r->data = p->pCounterDataImage;
  r->data_size = p->counterDataImageSize;
  r->max_per_pass = p->maxRangesPerPass;
  r->state = rp_state::configured;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiRangeProfilerStart(CUpti_RangeProfiler_Start_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_Start_Params_STRUCT_SIZE))
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  rp_object *r = object_of(p->pRangeProfilerObject);
  if (!r) return CUPTI_ERROR_INVALID_PARAMETER;
  if (r->state != rp_state::configured && r->state != rp_state::stopped)
    return CUPTI_ERROR_INVALID_OPERATION;
  if (!r->data) return CUPTI_ERROR_INVALID_OPERATION;
  r->pending.clear();
  r->dropped = 0;
  r->sessions++;
  r->state = rp_state::started;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiRangeProfilerStop(CUpti_RangeProfiler_Stop_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE))
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  rp_object *r = object_of(p->pRangeProfilerObject);
  if (!r) return CUPTI_ERROR_INVALID_PARAMETER;
  if (r->state != rp_state::started) return CUPTI_ERROR_INVALID_OPERATION;
  r->state = rp_state::stopped;
  p->passIndex = 0;
  p->targetNestingLevel = 1;
  p->isAllPassSubmitted = 1; /* kernel replay: CUPTI replays each kernel itself */
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult cuptiRangeProfilerDecodeData(CUpti_RangeProfiler_DecodeData_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE))
    return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> g(mu);
  rp_object *r = object_of(p->pRangeProfilerObject);
  if (!r) return CUPTI_ERROR_INVALID_PARAMETER;
  if (r->state != rp_state::stopped) return CUPTI_ERROR_INVALID_OPERATION;
  if (!valid_data(r->data, r->data_size)) return CUPTI_ERROR_INVALID_PARAMETER;
  auto *h = reinterpret_cast<data_header *>(r->data);
  size_t dropped = r->dropped;
  for (const range &rg : r->pending) {
    if (h->nranges >= h->max_ranges) {
      dropped++;
      continue;
    }
    double *v = values_of(r->data, h->nranges);
    for (size_t m = 0; m < h->nmetrics; m++)
      v[m] = metric_value(metric_name_of(r->data, m), rg);
    h->nranges++;
  }
  h->decoded = 1;
  r->pending.clear();
  r->dropped = 0;
  p->numOfRangeDropped = dropped;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult
cuptiRangeProfilerGetCounterDataInfo(CUpti_RangeProfiler_GetCounterDataInfo_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE) ||
      !valid_data(p->pCounterDataImage, p->counterDataImageSize))
    return CUPTI_ERROR_INVALID_PARAMETER;
  p->numTotalRanges = reinterpret_cast<const data_header *>(p->pCounterDataImage)->nranges;
  return CUPTI_SUCCESS;
}

SIM_API CUptiResult
cuptiRangeProfilerCounterDataGetRangeInfo(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *p) {
  if (bad_struct(p, CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE) ||
      !valid_data(p->pCounterDataImage, p->counterDataImageSize))
    return CUPTI_ERROR_INVALID_PARAMETER;
  auto *h = reinterpret_cast<const data_header *>(p->pCounterDataImage);
  if (p->rangeIndex >= h->nranges) return CUPTI_ERROR_INVALID_PARAMETER;
  /* Auto range: ranges are numbered from 0. */
  static const char *const digits[] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
  static thread_local std::string name;
  name = p->rangeIndex < 10 ? digits[p->rangeIndex] : std::to_string(p->rangeIndex);
  p->rangeName = name.c_str();
  return CUPTI_SUCCESS;
}
