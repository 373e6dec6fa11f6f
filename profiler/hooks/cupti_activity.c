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

/* mpprof's own registration goes through its dlopen'ed handle with the C
 * library's dlsym (gpu/cupti.c, mpp_real_dlsym), never through this hook: every
 * call here is the program's, linked or looked up on libcupti's handle
 * (dlsym.c answers that lookup with this hook). No depth guard and no
 * activation: it is no matrix op, and activation would start CUPTI. */
MPP_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                      CUpti_BuffersCallbackCompleteFunc completed) {
  __typeof__(&cuptiActivityRegisterCallbacks) real = MPP_REAL(syms, cuptiActivityRegisterCallbacks);
  if (!real) return CUPTI_ERROR_NOT_INITIALIZED;
  return mpp_cupti_program_registers(real, requested, completed);
}

/* The four switches: the real call, and what it turned on or off, noted
 * when it succeeded (`note nargs`). */
#define MPP_CUPTI_SWITCH_HOOK(name, params, args, note, nargs)                                     \
  MPP_EXPORT CUptiResult name params {                                                             \
    __typeof__(&name) real_ = MPP_REAL(syms, name);                                                \
    if (!real_) return CUPTI_ERROR_NOT_INITIALIZED;                                                \
    CUptiResult r_ = real_ args;                                                                   \
    if (r_ == CUPTI_SUCCESS) note nargs;                                                           \
    return r_;                                                                                     \
  }

MPP_CUPTI_SWITCH_HOOK(cuptiActivityEnable, (CUpti_ActivityKind kind), (kind),
                      mpp_cupti_program_enabled, (kind, true))
MPP_CUPTI_SWITCH_HOOK(cuptiActivityDisable, (CUpti_ActivityKind kind), (kind),
                      mpp_cupti_program_enabled, (kind, false))
MPP_CUPTI_SWITCH_HOOK(cuptiActivityEnableDriverApi, (CUpti_CallbackId cbid, uint8_t enable),
                      (cbid, enable), mpp_cupti_program_enabled_api, (true, cbid, enable != 0))
MPP_CUPTI_SWITCH_HOOK(cuptiActivityEnableRuntimeApi, (CUpti_CallbackId cbid, uint8_t enable),
                      (cbid, enable), mpp_cupti_program_enabled_api, (false, cbid, enable != 0))
