/* mpprof.h: the public interface of libmpprof.so for programs and frameworks.
 *
 * libmpprof.so is injected by `mpprof run` (LD_PRELOAD); these functions are
 * looked up at run time (dlsym(RTLD_DEFAULT, "mpprof_loss_scale"), or ctypes
 * as the PyTorch integration does), so a program that uses them runs
 * unchanged without mpprof. Every function is callable from any thread and
 * does nothing when mpprof is disabled (MPPROF_DISABLE=1); all but
 * mpprof_checkpoint are cheap and never block.
 *
 * Loss scale and steps: a C program usually declares them through NVTX instead
 * (domain "mpprof", marks "loss_scale", "step", "step_skipped"; README.md),
 * which costs nothing without mpprof; the functions below have the same
 * meaning as those marks and are process-wide.
 *
 * Scopes name what the calling thread is doing: an op issued while a scope is
 * open is attributed to the scope's layer and phase instead of the thread's
 * NVTX range path. Scopes are per thread and nest (push/pop); `set` replaces
 * the innermost one, which is how autograd threads switch module during the
 * backward pass without a matching pop. */
#ifndef MPPROF_H
#define MPPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Gradients computed from now on, on every thread of this process, carry the
 * factor s (a float32 value: 2^-149 <= s <= FLT_MAX; other values are
 * counted as invalid and ignored), until the next call. */
void mpprof_loss_scale(double s);
/* Step n starts now. */
void mpprof_step(uint64_t n);
/* Step n's update was skipped (its gradients were not finite). */
void mpprof_step_skipped(uint64_t n);

/* Phase of a scope; the raw file and the report spell them "forward",
 * "backward", "optimizer", "recompute" and "eval". */
enum mpprof_scope_phase {
  MPPROF_SCOPE_NONE = 0, /* layer only: the phase comes from NVTX range words */
  MPPROF_SCOPE_FORWARD = 1,
  MPPROF_SCOPE_BACKWARD = 2,
  MPPROF_SCOPE_OPTIMIZER = 3,
  MPPROF_SCOPE_RECOMPUTE = 4, /* activation-checkpoint recomputation: forward values */
  MPPROF_SCOPE_EVAL = 5, /* a forward outside training (PyTorch: under no_grad): forward values */
};

/* Id of the layer `name` (e.g. "encoder.layers.0.fc1", at most 1023 bytes)
 * of class `module_class` ("Linear"; may be NULL), the same id for the same
 * pair for the process's life; -1 when the table (65536 layers) is full or
 * name is NULL. */
int32_t mpprof_layer_id(const char *name, const char *module_class);

/* Open a scope on the calling thread: layer id from mpprof_layer_id, or -1
 * for "no layer" (the NVTX path names the layer, the phase still applies). */
void mpprof_scope_push(int32_t layer, int32_t phase);
/* Close the calling thread's innermost scope (no-op when none is open). */
void mpprof_scope_pop(void);
/* Replace the calling thread's innermost scope (open one when none is). */
void mpprof_scope_set(int32_t layer, int32_t phase);
/* How many CUDA matrix ops were attributed to the calling thread's innermost
 * scope since it was opened (or set), not counting those of scopes opened
 * inside it; 0 when none is open. The PyTorch integration marks a module's
 * backward only when its forward issued ops of its own. */
uint32_t mpprof_scope_ops(void);

/* A framework integration says what it is, for the raw file's "framework":
 * its name ("torch"), version, and how it names backward ops ("cxx" or
 * "python"; may be NULL); strings longer than mpprof keeps are cut
 * (profiler/process.h). The latest call holds. */
void mpprof_framework(const char *name, const char *version, const char *backward_marks);

/* The layers named name + "." + a module path belong to a model of class
 * module_class (name "" for the main model, whose layers carry no prefix; a
 * model with no submodules has one layer, named name). The PyTorch
 * integration calls it for each model it names, so that the report's plan
 * tells keep_in() which model a layer is in (a GAN's discriminator, a
 * teacher). A name given again takes the new class; names with a tab or a
 * newline are ignored, and models beyond a few (profiler/process.h) are left
 * out (logged with MPPROF_LOG=1). They are written in the raw file's
 * "framework" object: a program that never calls mpprof_framework writes
 * none. */
void mpprof_model_root(const char *name, const char *module_class);

/* This process is rank `rank` of `world_size` processes (world_size > rank,
 * or 0 when not known; other values are ignored, logged with MPPROF_LOG=1):
 * for a program whose launcher set none of RANK, OMPI_COMM_WORLD_RANK,
 * PMI_RANK, SLURM_PROCID (torch.multiprocessing.spawn with
 * init_process_group(rank=r)). The PyTorch integration calls it when
 * torch.distributed.init_process_group returns. A launcher's variable, when
 * set, wins (a rank that differs is logged). The raw file written next (a
 * checkpoint, the exit) carries it; the latest call holds, and a fork child
 * keeps its parent's until it calls it itself. */
void mpprof_rank(int32_t rank, int32_t world_size);

/* Write this process's raw file now, as the periodic checkpoint does (not
 * final; the exit still writes the final one). For a runtime that may end
 * without running exit handlers: the PyTorch integration calls it from
 * Python's atexit, since CPython ends an uncaught KeyboardInterrupt (Ctrl-C)
 * by killing itself with SIGINT after its own finalisation. Unlike the
 * functions above it writes a file and may wait for a checkpoint in
 * progress; a no-op before the process's first CUDA call. */
void mpprof_checkpoint(void);

/* The process ends now without exit handlers (Python's os._exit(), which a
 * multiprocessing child started by fork always ends by): write its raw file
 * as final, as before an exec. The PyTorch integration calls it from its
 * os._exit wrapper. Same conditions as mpprof_checkpoint. */
void mpprof_exit_now(void);

#ifdef __cplusplus
}
#endif

#endif
