/* The few parameter structs of CUPTI's profiler host API (cupti_profiler_host.h)
 * that tc_counters.c passes, mirrored field for field: the real header
 * includes <string> and cannot be included from C. Layout and the
 * *_STRUCT_SIZE values (offset of the last field + its size, as
 * CUPTI_PROFILER_STRUCT_SIZE computes them) are checked against the real
 * header by tests/gpu/test_cupti_host_abi.cpp (a C++ test that includes both).
 * Only add fields at the end, in the header's order. */
#ifndef MPPROF_PROFILER_GPU_CUPTI_HOST_ABI_H
#define MPPROF_PROFILER_GPU_CUPTI_HOST_ABI_H

#include <stddef.h>
#include <stdint.h>

#include <cupti_result.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPP_HOST_STRUCT_SIZE(type_, last_) (offsetof(type_, last_) + sizeof(((type_ *)0)->last_))

typedef struct mpp_host_object mpp_host_object; /* CUpti_Profiler_Host_Object */

/* CUpti_ProfilerType: CUPTI_PROFILER_TYPE_RANGE_PROFILER */
enum { MPP_HOST_PROFILER_TYPE_RANGE = 0 };

typedef struct mpp_host_initialize_params { /* CUpti_Profiler_Host_Initialize_Params */
  size_t structSize;
  void *pPriv;
  int profilerType; /* CUpti_ProfilerType (an enum: int-sized) */
  const char *pChipName;
  const uint8_t *pCounterAvailabilityImage;
  mpp_host_object *pHostObject; /* out */
} mpp_host_initialize_params;
#define MPP_HOST_INITIALIZE_PARAMS_SIZE                                                            \
  MPP_HOST_STRUCT_SIZE(mpp_host_initialize_params, pHostObject)

typedef struct mpp_host_deinitialize_params { /* CUpti_Profiler_Host_Deinitialize_Params */
  size_t structSize;
  void *pPriv;
  mpp_host_object *pHostObject;
} mpp_host_deinitialize_params;
#define MPP_HOST_DEINITIALIZE_PARAMS_SIZE                                                          \
  MPP_HOST_STRUCT_SIZE(mpp_host_deinitialize_params, pHostObject)

typedef struct mpp_host_config_add_metrics_params { /* CUpti_Profiler_Host_ConfigAddMetrics_Params
                                                     */
  size_t structSize;
  void *pPriv;
  mpp_host_object *pHostObject;
  const char **ppMetricNames;
  size_t numMetrics;
} mpp_host_config_add_metrics_params;
#define MPP_HOST_CONFIG_ADD_METRICS_PARAMS_SIZE                                                    \
  MPP_HOST_STRUCT_SIZE(mpp_host_config_add_metrics_params, numMetrics)

typedef struct mpp_host_get_config_image_size_params { /* ..._GetConfigImageSize_Params */
  size_t structSize;
  void *pPriv;
  mpp_host_object *pHostObject;
  size_t configImageSize; /* out */
} mpp_host_get_config_image_size_params;
#define MPP_HOST_GET_CONFIG_IMAGE_SIZE_PARAMS_SIZE                                                 \
  MPP_HOST_STRUCT_SIZE(mpp_host_get_config_image_size_params, configImageSize)

typedef struct mpp_host_get_config_image_params { /* CUpti_Profiler_Host_GetConfigImage_Params */
  size_t structSize;
  void *pPriv;
  mpp_host_object *pHostObject;
  size_t configImageSize;
  uint8_t *pConfigImage; /* out: filled */
} mpp_host_get_config_image_params;
#define MPP_HOST_GET_CONFIG_IMAGE_PARAMS_SIZE                                                      \
  MPP_HOST_STRUCT_SIZE(mpp_host_get_config_image_params, pConfigImage)

typedef struct mpp_host_get_num_of_passes_params { /* CUpti_Profiler_Host_GetNumOfPasses_Params */
  size_t structSize;
  void *pPriv;
  size_t configImageSize;
  uint8_t *pConfigImage;
  size_t numOfPasses; /* out */
} mpp_host_get_num_of_passes_params;
#define MPP_HOST_GET_NUM_OF_PASSES_PARAMS_SIZE                                                     \
  MPP_HOST_STRUCT_SIZE(mpp_host_get_num_of_passes_params, numOfPasses)

typedef struct mpp_host_evaluate_params { /* CUpti_Profiler_Host_EvaluateToGpuValues_Params */
  size_t structSize;
  void *pPriv;
  mpp_host_object *pHostObject;
  const uint8_t *pCounterDataImage;
  size_t counterDataImageSize;
  size_t rangeIndex;
  const char **ppMetricNames;
  size_t numMetrics;
  double *pMetricValues; /* out: numMetrics values */
} mpp_host_evaluate_params;
#define MPP_HOST_EVALUATE_PARAMS_SIZE MPP_HOST_STRUCT_SIZE(mpp_host_evaluate_params, pMetricValues)

#ifdef __cplusplus
}
#endif

#endif
