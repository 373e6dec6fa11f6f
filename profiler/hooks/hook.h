/* The one pattern every wrapper follows (after Darshan's wrapper macros):
 *
 *   1. resolve the real symbol (table filled early by mpp_init, lazily again
 *      for libraries the application dlopen'ed later);
 *   2. inner or mpprof-own calls, MPPROF_DISABLE and undecodable calls go
 *      straight through;
 *   3. decode the arguments into an mpp_op, begin the call (site, input
 *      scans, CUPTI op id), call the real function and keep its result, end
 *      the call (output scans, record) with the module's verdict of success,
 *      return the result unchanged.
 *
 * Four macros generate wrappers: MPP_OP_HOOK (one op per call; MPP_MEMO_OP_HOOK
 * when the decode step keeps its ops in a per-thread memo),
 * MPP_MULTI_OP_HOOK (several ops around one real call) and MPP_STATE_HOOK
 * (no op: handle or descriptor state). docs/hook-module.md walks through a
 * module.
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

/* A parenthesised argument list without its parentheses: the op goes in front of it. */
#define MPP_ARGS_(...) __VA_ARGS__

/* The body both one-op wrappers share: `get_op` is an expression giving the
 * op to record (mpp_op *; it may fill the wrapper's `scratch_`), NULL when
 * the call is not recorded. */
#define MPP_ONE_OP_HOOK_(tab, ret_t, name, params, args, missing, ok, get_op)                      \
  MPP_EXPORT ret_t name params {                                                                   \
    __typeof__(&name) real_ = MPP_REAL(tab, name);                                                 \
    if (!real_) return missing;                                                                    \
    if (!mpp_enter()) return real_ args;                                                           \
    mpp_op scratch_;                                                                               \
    mpp_op *op_ = get_op;                                                                          \
    ret_t ret_;                                                                                    \
    if (!op_) {                                                                                    \
      ret_ = real_ args;                                                                           \
    } else {                                                                                       \
      mpp_call call_;                                                                              \
      mpp_call_begin(&call_, op_);                                                                 \
      ret_ = real_ args;                                                                           \
      mpp_call_end(&call_, op_, ok(ret_));                                                         \
    }                                                                                              \
    mpp_leave();                                                                                   \
    return ret_;                                                                                   \
  }

/* A wrapper of a recorded op. Nothing is captured from the expansion: the
 * module names its pieces.
 *   ok      a predicate `bool ok(ret_t)`: did the real call succeed (the
 *           module's `static bool succeeded(cublasStatus_t r)`);
 *   decode  `bool decode(mpp_op *op, dargs...)` fills op from the wrapper's
 *           arguments listed in `dargs`; false: the call is not recorded. */
#define MPP_OP_HOOK(tab, ret_t, name, params, args, missing, ok, decode, dargs)                    \
  MPP_ONE_OP_HOOK_(tab, ret_t, name, params, args, missing, ok,                                    \
                   (decode(&scratch_, MPP_ARGS_ dargs) ? &scratch_ : NULL))

/* MPP_OP_HOOK whose decode step may hand back an op it keeps itself (a
 * per-thread memo's, hooks/gemm_decode.h) instead of filling the wrapper's:
 *   decode  `mpp_op *decode(mpp_op *scratch, dargs...)` the op to record,
 *           `scratch` filled or one of its own; NULL: not recorded. */
#define MPP_MEMO_OP_HOOK(tab, ret_t, name, params, args, missing, ok, decode, dargs)               \
  MPP_ONE_OP_HOOK_(tab, ret_t, name, params, args, missing, ok, decode(&scratch_, MPP_ARGS_ dargs))

/* A wrapper of a call that records several ops around its one real call (a
 * grouped GEMM's groups, a cuDNN graph's convolutions and matmuls). The same
 * beats as MPP_OP_HOOK, with an mpp_calls (call.c) instead of one op:
 *   decode  `bool decode(mpp_calls *c, dargs...)` reserves room for the ops
 *           (mpp_calls_reserve: on the heap, never on the application's
 *           stack, which may be small), fills c->ops[0 .. c->n) and may mark
 *           the execution as autotuning; false or no op: not recorded.
 * The ops are begun in order before the real call and ended in reverse
 * order after it, all with one verdict of `ok`. */
#define MPP_MULTI_OP_HOOK(tab, ret_t, name, params, args, missing, ok, decode, dargs)              \
  MPP_EXPORT ret_t name params {                                                                   \
    __typeof__(&name) real_ = MPP_REAL(tab, name);                                                 \
    if (!real_) return missing;                                                                    \
    if (!mpp_enter()) return real_ args;                                                           \
    mpp_calls calls_ = {0};                                                                        \
    ret_t ret_;                                                                                    \
    if (!decode(&calls_, MPP_ARGS_ dargs) || calls_.n <= 0) {                                      \
      ret_ = real_ args;                                                                           \
    } else {                                                                                       \
      mpp_calls_begin(&calls_);                                                                    \
      ret_ = real_ args;                                                                           \
      mpp_calls_end(&calls_, ok(ret_));                                                            \
    }                                                                                              \
    mpp_calls_release(&calls_);                                                                    \
    mpp_leave();                                                                                   \
    return ret_;                                                                                   \
  }

/* A wrapper that only observes (handle state, descriptors): the real call
 * runs under the depth guard; when `ok` says it succeeded, `after aargs`
 * updates mpprof's state (e.g. after = handle_set, aargs = (handle, mode)). */
#define MPP_STATE_HOOK(tab, ret_t, name, params, args, missing, ok, after, aargs)                  \
  MPP_EXPORT ret_t name params {                                                                   \
    __typeof__(&name) real_ = MPP_REAL(tab, name);                                                 \
    if (!real_) return missing;                                                                    \
    if (!mpp_enter()) return real_ args;                                                           \
    ret_t ret_ = real_ args;                                                                       \
    if (ok(ret_)) after aargs;                                                                     \
    mpp_leave();                                                                                   \
    return ret_;                                                                                   \
  }

#endif
