/* The one pattern every wrapper follows (after Darshan's wrapper macros):
 *
 *   1. resolve the real symbol (table filled early by mpp_init, lazily again
 *      for libraries the application dlopen'ed later);
 *   2. inner or mpprof-own calls, MPPROF_DISABLE and undecodable calls go
 *      straight through;
 *   3. decode the arguments into an mpp_op, begin the call (site, input
 *      scans, CUPTI op id), call the real function and keep its result, end
 *      the call (output scans, record), return the result unchanged.
 *
 * A hook module lists its symbols once in an X-macro (name) and gets an enum
 * and a table of mpp_sym from it; MPP_REAL(name) is the typed real pointer. */
#ifndef MPPROF_PROFILER_HOOKS_HOOK_H
#define MPPROF_PROFILER_HOOKS_HOOK_H

#include "profiler/mpp.h"
#include "profiler/call.h"
#include "profiler/op.h"
#include "profiler/runtime.h"

#define MPP_SYM_ENUM_(name) MPP_SYM_##name,
#define MPP_SYM_ROW_(sym) {.name = #sym, .soname = MPP_MODULE_SONAME},

/* In a module: #define MPP_MODULE_SONAME "libcublas.so.13" and
 * #define MPP_MODULE_SYMS(X) X(cublasSgemm_v2) X(...), then MPP_MODULE_TABLE(tab). */
#define MPP_MODULE_TABLE(tab)                                                                      \
  enum { MPP_MODULE_SYMS(MPP_SYM_ENUM_) MPP_SYM_COUNT_ };                                          \
  static mpp_sym tab[] = {MPP_MODULE_SYMS(MPP_SYM_ROW_)};                                          \
  __attribute__((constructor(150))) static void tab##_register(void) {                             \
    mpp_register_syms(tab, MPP_SYM_COUNT_);                                                        \
  }

#define MPP_REAL(tab, name) ((__typeof__(&name))mpp_sym_get(&tab[MPP_SYM_##name]))

/* A wrapper of a recorded op. `decode` is an expression that fills `op_`
 * (an mpp_op *) from the arguments and is false when the call is not
 * recorded; `ok` tells from `ret` whether the call succeeded. */
#define MPP_OP_HOOK(tab, ret_t, name, params, args, missing, ok, decode)                           \
  MPP_EXPORT ret_t name params {                                                                   \
    __typeof__(&name) real_ = MPP_REAL(tab, name);                                                 \
    if (!real_) return missing;                                                                    \
    if (!mpp_enter()) return real_ args;                                                           \
    mpp_op op_storage_, *op_ = &op_storage_;                                                       \
    ret_t ret;                                                                                     \
    if (!(decode)) {                                                                               \
      ret = real_ args;                                                                            \
    } else {                                                                                       \
      mpp_call call_;                                                                              \
      mpp_call_begin(&call_, op_);                                                                 \
      ret = real_ args;                                                                            \
      mpp_call_end(&call_, op_, (ok));                                                             \
    }                                                                                              \
    mpp_leave();                                                                                   \
    return ret;                                                                                    \
  }

/* A wrapper that only observes (handle state, descriptors): the real call
 * runs under the depth guard, then `after` sees `ret`. */
#define MPP_STATE_HOOK(tab, ret_t, name, params, args, missing, after)                             \
  MPP_EXPORT ret_t name params {                                                                   \
    __typeof__(&name) real_ = MPP_REAL(tab, name);                                                 \
    if (!real_) return missing;                                                                    \
    if (!mpp_enter()) return real_ args;                                                           \
    ret_t ret = real_ args;                                                                        \
    after;                                                                                         \
    mpp_leave();                                                                                   \
    return ret;                                                                                    \
  }

#endif
