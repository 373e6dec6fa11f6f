/* The C mirror of CUPTI's profiler host structs (profiler/gpu/cupti_host_abi.h,
 * used by tc_counters.c because cupti_profiler_host.h is C++ only) against the
 * real header: every size, field offset, field size and *_STRUCT_SIZE must be
 * identical, and the profiler type constant must be the header's. A mismatch
 * fails the build (static_assert) and, for the record, the test run. */
#include <cstddef>
#include <cstdio>

#include <cupti_profiler_host.h>

#include "profiler/gpu/cupti_host_abi.h"

#define SAME_FIELD(mirror, real, field)                                                            \
  static_assert(offsetof(mirror, field) == offsetof(real, field), #real "." #field " offset");     \
  static_assert(sizeof(((mirror *)0)->field) == sizeof(((real *)0)->field),                        \
                #real "." #field " size");
#define SAME_STRUCT(mirror, real, mirror_size)                                                     \
  static_assert(sizeof(mirror) == sizeof(real), #real " size");                                    \
  static_assert(mirror_size == real##_STRUCT_SIZE, #real "_STRUCT_SIZE");                          \
  SAME_FIELD(mirror, real, structSize)                                                             \
  SAME_FIELD(mirror, real, pPriv)

SAME_STRUCT(mpp_host_initialize_params, CUpti_Profiler_Host_Initialize_Params,
            MPP_HOST_INITIALIZE_PARAMS_SIZE)
SAME_FIELD(mpp_host_initialize_params, CUpti_Profiler_Host_Initialize_Params, profilerType)
SAME_FIELD(mpp_host_initialize_params, CUpti_Profiler_Host_Initialize_Params, pChipName)
SAME_FIELD(mpp_host_initialize_params, CUpti_Profiler_Host_Initialize_Params,
           pCounterAvailabilityImage)
SAME_FIELD(mpp_host_initialize_params, CUpti_Profiler_Host_Initialize_Params, pHostObject)
static_assert((int)MPP_HOST_PROFILER_TYPE_RANGE == (int)CUPTI_PROFILER_TYPE_RANGE_PROFILER,
              "profiler type");
static_assert(sizeof(int) == sizeof(CUpti_ProfilerType), "CUpti_ProfilerType is int-sized");

SAME_STRUCT(mpp_host_deinitialize_params, CUpti_Profiler_Host_Deinitialize_Params,
            MPP_HOST_DEINITIALIZE_PARAMS_SIZE)
SAME_FIELD(mpp_host_deinitialize_params, CUpti_Profiler_Host_Deinitialize_Params, pHostObject)

SAME_STRUCT(mpp_host_config_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params,
            MPP_HOST_CONFIG_ADD_METRICS_PARAMS_SIZE)
SAME_FIELD(mpp_host_config_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params,
           pHostObject)
SAME_FIELD(mpp_host_config_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params,
           ppMetricNames)
SAME_FIELD(mpp_host_config_add_metrics_params, CUpti_Profiler_Host_ConfigAddMetrics_Params,
           numMetrics)

SAME_STRUCT(mpp_host_get_config_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params,
            MPP_HOST_GET_CONFIG_IMAGE_SIZE_PARAMS_SIZE)
SAME_FIELD(mpp_host_get_config_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params,
           pHostObject)
SAME_FIELD(mpp_host_get_config_image_size_params, CUpti_Profiler_Host_GetConfigImageSize_Params,
           configImageSize)

SAME_STRUCT(mpp_host_get_config_image_params, CUpti_Profiler_Host_GetConfigImage_Params,
            MPP_HOST_GET_CONFIG_IMAGE_PARAMS_SIZE)
SAME_FIELD(mpp_host_get_config_image_params, CUpti_Profiler_Host_GetConfigImage_Params, pHostObject)
SAME_FIELD(mpp_host_get_config_image_params, CUpti_Profiler_Host_GetConfigImage_Params,
           configImageSize)
SAME_FIELD(mpp_host_get_config_image_params, CUpti_Profiler_Host_GetConfigImage_Params,
           pConfigImage)

SAME_STRUCT(mpp_host_get_num_of_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params,
            MPP_HOST_GET_NUM_OF_PASSES_PARAMS_SIZE)
SAME_FIELD(mpp_host_get_num_of_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params,
           configImageSize)
SAME_FIELD(mpp_host_get_num_of_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params,
           pConfigImage)
SAME_FIELD(mpp_host_get_num_of_passes_params, CUpti_Profiler_Host_GetNumOfPasses_Params,
           numOfPasses)

SAME_STRUCT(mpp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params,
            MPP_HOST_EVALUATE_PARAMS_SIZE)
SAME_FIELD(mpp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pHostObject)
SAME_FIELD(mpp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params,
           pCounterDataImage)
SAME_FIELD(mpp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params,
           counterDataImageSize)
SAME_FIELD(mpp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, rangeIndex)
SAME_FIELD(mpp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, ppMetricNames)
SAME_FIELD(mpp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, numMetrics)
SAME_FIELD(mpp_host_evaluate_params, CUpti_Profiler_Host_EvaluateToGpuValues_Params, pMetricValues)

/* The same numbers once more at run time, printed: what the build checked. */
int main() {
  struct row {
    const char *name;
    size_t mirror, real;
  } rows[] = {
      {"Initialize", MPP_HOST_INITIALIZE_PARAMS_SIZE,
       CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE},
      {"Deinitialize", MPP_HOST_DEINITIALIZE_PARAMS_SIZE,
       CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE},
      {"ConfigAddMetrics", MPP_HOST_CONFIG_ADD_METRICS_PARAMS_SIZE,
       CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE},
      {"GetConfigImageSize", MPP_HOST_GET_CONFIG_IMAGE_SIZE_PARAMS_SIZE,
       CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE},
      {"GetConfigImage", MPP_HOST_GET_CONFIG_IMAGE_PARAMS_SIZE,
       CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE},
      {"GetNumOfPasses", MPP_HOST_GET_NUM_OF_PASSES_PARAMS_SIZE,
       CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE},
      {"EvaluateToGpuValues", MPP_HOST_EVALUATE_PARAMS_SIZE,
       CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE},
  };
  int bad = 0;
  for (const row &r : rows) {
    printf("%-20s mirror %zu real %zu\n", r.name, r.mirror, r.real);
    bad += r.mirror != r.real;
  }
  return bad ? 1 : 0;
}
