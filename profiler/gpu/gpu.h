/* The GPU side of libmpprof.so: CUDA driver access, CUPTI activity and device
 * scans. All of it is reached through dlopen ("libcuda.so.1", libcupti) and
 * tolerates a missing driver or CUPTI: functions then say "unavailable" and
 * the rest of the profiler carries on (numerics of host memory, dtypes, layers).
 *
 * Threading: every function may be called from any application thread; sinks
 * are called from mpprof's background thread or from mpp_*_flush/drain. */
#ifndef MPPROF_PROFILER_GPU_H
#define MPPROF_PROFILER_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/scan.h"
#include "analysis/shadow.h"

/* --- driver (cuda_driver.c) --- */
typedef enum mpp_mem_kind {
  MPP_MEM_UNKNOWN = 0,
  MPP_MEM_HOST,
  MPP_MEM_DEVICE,
  MPP_MEM_MANAGED
} mpp_mem_kind;

bool mpp_cuda_available(void); /* libcuda.so.1 loaded and cuInit succeeded */
bool mpp_cu_started(void);     /* mpprof opened the driver in this process (or its parent) */
bool mpp_cu_loaded(void);      /* libcuda.so.1 is loaded (nothing is called in it) */
mpp_mem_kind
mpp_cuda_pointer_kind(const void *p);         /* host memory also for plain malloc'd pointers */
bool mpp_cuda_stream_capturing(void *stream); /* CUstream being captured into a graph */
int mpp_cuda_device_info(char *ret_name, size_t n, int *ret_cc_major, int *ret_cc_minor);

/* --- CUPTI activity (cupti.c) --- */
/* Kernel activity tied, through external correlation, to the op id mpprof pushed. */
typedef void (*mpp_kernel_sink)(uint64_t op_id, const char *mangled_name, uint64_t start_ns,
                                uint64_t end_ns, uint32_t stream_id);
void mpp_cupti_set_sink(mpp_kernel_sink sink);
/* Idempotent; at activation. library: MPPROF_CUPTI (a path; "off" or "0"
 * disables; NULL or "": searched, then under cuda_home). Both strings must
 * outlive the process (mpp_cfg's). */
void mpp_cupti_start(const char *library, const char *cuda_home);
void mpp_cupti_push(uint64_t op_id); /* around every hooked real call (CUSTOM2 external id) */
/* Pushed around work mpprof issues itself (shadow execution's kernels and
 * GEMMs): the kernel sink drops what carries it. */
#define MPP_OWN_OP_ID UINT64_MAX
void mpp_cupti_pop(void);
/* Flush CUPTI's buffers and drain them into the sink. final (exit, exec): a
 * forced flush, every buffer, a kernel still running given without its
 * times, and kernels still waiting for their external record given
 * unattributed. Else (a checkpoint): CUPTI's default flush, only buffers
 * whose records are all complete (cupti_activity.h: the forced one is for
 * the session's end; a running kernel's record it returns has no times, and
 * its real ones never come); the rest come at a later flush. */
void mpp_cupti_flush(bool final);
/* Kernels held for an external record that has not come yet (the parser
 * matches them after each buffer; at a flush the rest are unattributed).
 * When full, the oldest quarter is delivered unattributed. */
#define MPP_CUPTI_MAX_WAITING 4096
/* Told around every flush: mark() before it, settle(mark) once every buffer
 * is parsed (tc_counters.c's mpp_tc_flush_mark/mpp_tc_settle, set by runtime.c:
 * cupti.c does not call the counter module, which is built on it). */
typedef uint64_t (*mpp_flush_mark_fn)(void);
typedef void (*mpp_flush_settle_fn)(uint64_t mark);
void mpp_cupti_set_flush_observer(mpp_flush_mark_fn mark, mpp_flush_settle_fn settle);
/* bench/cupti_parse: hand in a buffer as CUPTI's completion callback does
 * (from aligned_alloc, mpp_cupti_buffer_size() bytes; ownership passes). */
void mpp_cupti_complete_buffer(uint8_t *buf, size_t valid);
size_t mpp_cupti_buffer_size(void);
/* ok | disabled | unavailable | held_by_other_subscriber | error | held_by_program |
 * taken_by_program (the program's own buffer callbacks: cupti_program.h) */
const char *mpp_cupti_status(void);
/* Records lost: mpprof's own count and CUPTI's as of the last mpp_cupti_flush
 * (never asks CUPTI: called under locks held across fork). */
uint64_t mpp_cupti_dropped(void);
void *mpp_cupti_handle(void); /* the dlopen'ed libcupti (NULL when none): tc_counters.c */
/* runtime.c's atfork handlers: the parse lock held across fork (no parse, which
 * allocates, in progress in another thread), released in the parent, re-created
 * in the child. Callable before mpp_cupti_start. */
void mpp_cupti_fork_prepare(void);
void mpp_cupti_fork_parent(void);
void mpp_cupti_fork_child(void);

/* --- Tensor Core hardware counters (tc_counters.c, MPPROF_TC_COUNTERS) --- */
#define MPP_TC_MAX_METRICS 4
/* -1: not requested; 0: the first call of each site; N: every Nth call of each site. */
int mpp_tc_every(void);
/* Before a hooked call's real call (inputs scanned, op id pushed): profile its
 * kernels? call_index is the call's index in its site. True: counters run,
 * call mpp_tc_end(op_id) right after the real call, on the same thread. */
bool mpp_tc_begin(uint64_t op_id, uint64_t call_index, void *stream);
void mpp_tc_end(uint64_t op_id);
/* A kernel verdict: tc = any tensor metric > 0; values in the order of mpp_tc_info.metrics. */
typedef void (*mpp_tc_verdict_fn)(uint64_t op_id, const char *mangled_name, bool tc,
                                  const double *values, int nvalues);
void mpp_tc_set_verdict_sink(mpp_tc_verdict_fn fn);
/* From the kernel sink, for every attributed kernel (cheap when not requested). */
void mpp_tc_kernel(uint64_t op_id, const char *mangled_name, uint64_t start_ns);
/* mpp_cupti_flush's observer: mark before flushing, settle after (calls whose
 * kernels did not all arrive are given up and counted). */
uint64_t mpp_tc_flush_mark(void);
void mpp_tc_settle(uint64_t mark);
typedef struct mpp_tc_info {
  int every;          /* as mpp_tc_every() */
  const char *status; /* ok | unavailable | not_started (NULL when not requested) */
  char reason[256];   /* why unavailable, else "" */
  char chip[64];      /* cuptiDeviceGetChipName, "" before init */
  int nmetrics;
  const char *metrics[MPP_TC_MAX_METRICS];
  size_t passes;
  uint64_t ops_profiled, kernels_profiled, ops_unmatched, ops_skipped;
} mpp_tc_info;
void mpp_tc_info_get(mpp_tc_info *ret);

/* --- device scans (devscan.c, kernels/scan.cu) --- */
typedef void (*mpp_scan_sink)(void *cookie, const mp_stats *result);
/* Enqueue a scan of a device tensor on the op's stream; `sink` gets the result
 * once the GPU is done. 0 on success, -ENOSYS when the device scanner is
 * unavailable, -EBUSY when the result ring is full (the caller counts the drop). */
int mpp_devscan_enqueue(void *stream, const mp_view *view, mpp_scan_sink sink, void *cookie);
/* The same for a batch by pointer array in device memory (cublas*Batched):
 * `view` gives each matrix's dtype, rows, cols, ld and, in batch, their count
 * (data and batch_stride are ignored); `dev_ptrs` is the device array of
 * `batch` matrix base pointers, read by the scan kernel itself (no host
 * synchronisation). The whole batch is one scan, merged into one record; no
 * cap on the batch count. Same return codes (-EINVAL also for a NULL or
 * misaligned array). */
int mpp_devscan_enqueue_ptrs(void *stream, const mp_view *view, const void *const *dev_ptrs,
                             mpp_scan_sink sink, void *cookie);
/* All scanned tensors of one op in one kernel launch (at most
 * MPP_SCAN_MAX_TENSORS = 4 per call; past that, -E2BIG): each item a view (or, with dev_ptrs, a
 * batch by device pointer array as above) with its sink. Each item's rc says
 * what became of it: 0 (launched, or empty and delivered at once), -EINVAL
 * (refused view), or the launch's -ENOSYS / -EBUSY / -EIO. Returns the first
 * non-zero rc, else 0. */
typedef struct mpp_devscan_item {
  mp_view view;
  const void *const *dev_ptrs; /* NULL: view.data */
  bool saturates; /* an fp8 output converted with saturation: +-max counted as saturated */
  mpp_scan_sink sink;
  void *cookie;
  int rc; /* out */
} mpp_devscan_item;
int mpp_devscan_enqueue_op(void *stream, mpp_devscan_item *items, int n);
/* Scalars of the op read by the same launch, without a driver call of their
 * own (cuBLASLt FP8: the A/B/C/D scale factors, AMAX_D and the GELU aux's
 * scale and amax, 4-byte values in
 * device memory): the kernel's last block copies the value behind each
 * non-NULL ptr[i] into the result slot. The launch runs behind the op on its
 * stream, so AMAX_D holds the op's result. Once it finished, `sink` gets the
 * values' bits, the mask of ptr[] set (`requested`) and of those read (`read`:
 * 0 when the launch ran in a context mpprof had not set up). rc (out): 0 when
 * launched (the sink will be called once, unless the GPU never finishes it),
 * -EINVAL (a pointer not 4-byte aligned: nothing read), else the launch's
 * -ENOSYS / -EBUSY / -EIO. With no item to scan the launch reads only these. */
#define MPP_DEVSCAN_SCALARS 7 /* A/B/C/D scales, AMAX_D, the aux's scale and amax */
typedef void (*mpp_scalar_sink)(void *cookie, const uint32_t *bits, unsigned requested,
                                unsigned read);
typedef struct mpp_devscan_scalars {
  const void *ptr[MPP_DEVSCAN_SCALARS];
  mpp_scalar_sink sink;
  void *cookie;
  int rc; /* out */
} mpp_devscan_scalars;
int mpp_devscan_enqueue_op_scalars(void *stream, mpp_devscan_item *items, int n,
                                   mpp_devscan_scalars *scalars);
void mpp_devscan_drain(void); /* at exit: wait for outstanding scans (bounded) and deliver them */
/* How long an exit waits for mpprof's outstanding device work at most (a hung
 * GPU must not hang the program's exit). */
#define MPP_GPU_DRAIN_TIMEOUT_NS 5000000000ull
/* A kernel of the embedded fatbin by name (the library loaded once; a
 * CUkernel launches as a CUfunction in any context), or NULL. */
void *mpp_devscan_library_kernel(const char *name);

/* --- device shadow execution (devshadow.c, kernels/shadow.cu) ---
 * Not thread-safe: the caller serialises every call (profiler/shadow.c's lock). */
typedef struct mpp_devshadow_result {
  int rc;        /* 0, or -EIO: a launch or GEMM call of the work failed (nothing measured) */
  unsigned done; /* candidates computed: bits 1u << mp_shadow_cand */
  mp_sh_err err[MP_SH_COUNT];
  float amax[2]; /* op(A), op(B) of this call: delayed scaling's history */
} mpp_devshadow_result;
typedef void (*mpp_devshadow_sink)(void *cookie, const mpp_devshadow_result *r);
/* Shadow g (operands in device memory, the op already enqueued on `stream`):
 * the candidates in mask (those the device can compute) on mpprof's private
 * stream of the stream's context, behind an event recorded on `stream`; the
 * program's stream never waits for it. delayed[operand][e5m2]: delayed
 * scaling's scales. max_bytes caps the work memory of all shadowed calls in
 * flight. Returns 0 (sink called once when the device finished: from
 * mpp_devshadow_poll or _drain), -ENOSYS (no driver, no device kernels),
 * -ENODEV (neither libcublas nor libcublasLt loaded, or the private stream
 * or BLAS handle could not be made), -EBUSY
 * (earlier shadowed calls still running: slots or memory; the caller polls
 * first to free what finished), -E2BIG (g alone
 * needs more than max_bytes), -EINVAL (dimensions beyond cuBLAS's int API),
 * -EIO (a driver call failed before any work was enqueued). */
int mpp_devshadow_enqueue(void *stream, const mp_shadow_gemm *g, unsigned mask,
                          const float delayed[2][2], uint64_t max_bytes, mpp_devshadow_sink sink,
                          void *cookie);
/* The same for a convolution (its tensors in device memory): g is
 * mp_shadow_conv_shape(cv), whose operands mpp_shadow_gather makes from
 * cv's tensors on `stream` right after the op. */
int mpp_devshadow_enqueue_conv(void *stream, const mp_shadow_conv *cv, const mp_shadow_gemm *g,
                               unsigned mask, const float delayed[2][2], uint64_t max_bytes,
                               mpp_devshadow_sink sink, void *cookie);
void mpp_devshadow_poll(void);  /* deliver finished work, without waiting */
void mpp_devshadow_drain(void); /* at exit: wait (bounded) for all of it and deliver */

#endif
