/* The lifecycle of libmpprof.so (runtime.c): init once, activation at the
 * first hooked call, the per-thread depth guard hooks run inside, real
 * symbols, exec. */
#ifndef MPPROF_PROFILER_RUNTIME_H
#define MPPROF_PROFILER_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void mpp_init(void); /* idempotent, pthread_once; also run from the constructor */
void mpp_activate(
    void); /* idempotent: the process uses CUDA (first hooked call or cuInit injection) */
bool mpp_enter(
    void); /* start of a hooked call: true when it is to be recorded (then call mpp_leave) */
void mpp_leave(void);

/* Real symbols: resolved early by mpp_init (RTLD_NEXT), lazily again when a
 * library was loaded later (dlopen'ed by the app), falling back to the
 * already loaded library by soname when RTLD_NEXT does not see it. */
typedef struct mpp_sym {
  const char *name;
  const char *soname;
  void *fn;           /* atomic */
  uint64_t missed_at; /* atomic: 1 + loader generation of the last failed lookup (0: none) */
} mpp_sym;
void *mpp_sym_lookup(mpp_sym *s); /* resolves s (or says again that it is missing) */
/* The real function, or NULL while it is missing: a resolved symbol costs one
 * load in the hook, no call. */
static inline void *mpp_sym_get(mpp_sym *s) {
  void *fn = __atomic_load_n(&s->fn, __ATOMIC_ACQUIRE);
  return fn ? fn : mpp_sym_lookup(s);
}
void mpp_sym_resolve_all(mpp_sym *tab, size_t n);
void mpp_register_syms(mpp_sym *tab, size_t n); /* called by each hook module's constructor */
/* dlsym.c: a program looked `name` up on a CUDA library's own handle and got
 * `real`; the hook forwards there unless its real symbol is known already.
 * False when mpprof has no entry of that name. */
bool mpp_sym_adopt(const char *name, void *real);
/* dlsym.c: a dlclose unloaded something. The symbols that pointed into it
 * are forgotten, to be resolved again at their next call: a library the
 * program reloads is called where it is now. */
void mpp_sym_forget_unloaded(void);
/* Keeps the library that defines fn loaded for good: mpprof made an object
 * of its own in it (a private cuBLAS handle), which an unload would leave
 * dangling. */
void mpp_sym_pin(void *fn);

/* --- exec (exec.c) --- */
void mpp_runtime_before_exec(void); /* writes the raw file as final (exec, mpprof_exit_now) */
void mpp_runtime_exec_failed(void); /* the image goes on: later writes follow */

/* --- mpprof_checkpoint (entry.c, mpprof.h) --- */
void mpp_runtime_checkpoint(void); /* a checkpoint pass now, on the calling thread */

#endif
