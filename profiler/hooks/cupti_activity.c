/* Hook of the CUPTI activity API's one shared setting: the buffer callbacks
 * (libcupti.so.13). CUPTI keeps one pair per process. A program that uses
 * the activity API itself without subscribing (cuptiSubscribe is how mpprof
 * finds CUPTI taken) registers its own pair: before mpprof's start, mpprof
 * then leaves CUPTI to it; after, the program's pair replaces mpprof's and
 * mpprof's kernel records end there (gpu/cupti.c mpp_cupti_program_registers).
 * What the program enables itself is noted, so that mpprof then turns off
 * only the records it enabled for itself. The real calls run and their
 * results are returned unchanged. */
#include <cupti_activity.h>

#include "hook.h"
#include "profiler/gpu/cupti_program.h"

#define MPP_MODULE_SONAME "libcupti.so.13"
#define MPP_MODULE_SYMS(X)                                                                         \
  X(cuptiActivityRegisterCallbacks)                                                                \
  X(cuptiActivityEnable)                                                                           \
  X(cuptiActivityDisable)                                                                          \
  X(cuptiActivityEnableDriverApi)                                                                  \
  X(cuptiActivityEnableRuntimeApi)
MPP_MODULE_TABLE(syms)

/* mpprof's own registration goes through its dlopen'ed handle (gpu/cupti.c),
 * never through this hook: every call here is the program's. No depth guard
 * and no activation: it is no matrix op, and activation would start CUPTI. */
MPP_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                      CUpti_BuffersCallbackCompleteFunc completed) {
  __typeof__(&cuptiActivityRegisterCallbacks) real = MPP_REAL(syms, cuptiActivityRegisterCallbacks);
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  return mpp_cupti_program_registers(real, requested, completed);
}

MPP_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  __typeof__(&cuptiActivityEnable) real = MPP_REAL(syms, cuptiActivityEnable);
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  CUptiResult r = real(kind);
  if (r == CUPTI_SUCCESS) mpp_cupti_program_enabled(kind, true);
  return r;
}

MPP_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  __typeof__(&cuptiActivityDisable) real = MPP_REAL(syms, cuptiActivityDisable);
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  CUptiResult r = real(kind);
  if (r == CUPTI_SUCCESS) mpp_cupti_program_enabled(kind, false);
  return r;
}

MPP_EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable) {
  __typeof__(&cuptiActivityEnableDriverApi) real = MPP_REAL(syms, cuptiActivityEnableDriverApi);
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  CUptiResult r = real(cbid, enable);
  if (r == CUPTI_SUCCESS) mpp_cupti_program_enabled_api(true, cbid, enable != 0);
  return r;
}

MPP_EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  __typeof__(&cuptiActivityEnableRuntimeApi) real = MPP_REAL(syms, cuptiActivityEnableRuntimeApi);
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  CUptiResult r = real(cbid, enable);
  if (r == CUPTI_SUCCESS) mpp_cupti_program_enabled_api(false, cbid, enable != 0);
  return r;
}
