/* The raw profile format, OUT/raw/<host>-<pid>.json: every key that
 * libmpprof.so writes (profiler/rawwrite.c) and report/ reads
 * (report/raw_reader.c), defined once, as X-macro tables. docs/raw-format.md
 * describes the values; its key index is checked against these tables by the
 * raw_format_doc test.
 *
 * From MP_RAW_SITE_KEY (the site key) the runtime generates the site hash and
 * equality (profiler/sites.c) and the writer of those keys (rawwrite.c); the
 * report takes a site's identity from exactly these keys (an allowlist), so
 * that everything else in a SITE (counters, stats, kernels) merges.
 *
 * HOW TO ADD A FIELD (one place, then the compiler and the tests lead):
 *  - A field that makes two ops different sites: add the member to mpp_op
 *    (profiler/mpp.h) and a row to MP_RAW_SITE_KEY with the member's name, its
 *    JSON key and a kind (below). Hash, equality, writer and the report's
 *    identity follow. A new kind needs a hash/eq/write macro in sites.c and
 *    rawwrite.c (the build fails until it has them).
 *  - A counter, value or object that is not identity: add a row to the table
 *    of its object (MP_RAW_SITE_COUNTERS, MP_RAW_TOP, ...), write it in
 *    rawwrite.c with MP_RK_<OBJECT>.<name> and read it in raw_reader.c with the
 *    same constant; say in the row how sites merge it.
 *  - Add the row's key to the key index of docs/raw-format.md (the
 *    raw_format_doc test prints the expected index when it differs), and set
 *    the field in the round-trip test (profiler_raw_roundtrip), which fails
 *    for a key the writer emits that is not in these tables or not read back.
 *
 * Version rule: MP_RAW_VERSION is bumped when a key is removed or changes
 * meaning, not when one is added. A reader reads files of its own version
 * only and skips others with one line naming both versions; it ignores keys
 * it does not know (an older reader merges sites that differ only in a newer
 * key, as if the key did not exist). */
#ifndef MPPROF_ANALYSIS_RAW_FORMAT_H
#define MPPROF_ANALYSIS_RAW_FORMAT_H

#define MP_RAW_VERSION 1
#define MP_RAW_SCHEMA_PREFIX "mpprof.raw/"
#define MP_RAW_STR_(x) #x
#define MP_RAW_STR(x) MP_RAW_STR_(x)
#define MP_SCHEMA_RAW MP_RAW_SCHEMA_PREFIX MP_RAW_STR(MP_RAW_VERSION)

/* The tensor roles of a cuBLASLt GELU epilogue's aux buffer, keys of a
 * site's "tensors" (the decoder names them, report/advise.c classes them):
 * the pre-GELU values GELU_AUX / GELU_AUX_BIAS write (an output) and that
 * DGELU / DGELU_BGRAD read back (an input). */
#define MP_ROLE_AUX "aux"
#define MP_ROLE_AUX_IN "aux_in"

/* The largest value of an I64 member below (m, n, k, batch, lds): the
 * runtime keeps them as int64_t (mpp_op), so a reader refuses more. */
#define MP_RAW_I64_MAX INT64_MAX

/* The site key: X(member of mpp_op, "json key", kind, "what it is").
 * Kinds (how the runtime hashes, compares and writes the member):
 *   STR       static string, written always (null when NULL)
 *   STR_OPT   static string or NULL, written only when set
 *   OPKIND    mpp_op_kind, written as its name
 *   LAYER     the caller's layer: a scope's (profiler/include/mpprof.h) or its
 *             NVTX path (kept by the site, not the op, as are the next two)
 *   PHASE     the scope's phase, written as its name only inside a scope
 *   CLASS     the scope's module class, written only when set
 *   I64       int64, written always (null when negative: cleared in a site
 *             of merged shapes)
 *   I64_OPT   int64, -1 absent: written only when >= 0
 *   TRANS     'N'/'T'/'C', 0 absent: written only when set
 *   TYPES     ntypes/type_keys/type_names: the "types" object
 *   CONV      has_conv/conv: the "conv" object (MP_RAW_CONV)
 *   MATH      cuBLAS math mode, -1 null: written as its name
 *   FP8       MPP_FP8_* bits: the "fp8_scales" object when any is set
 *   SCALE     double, 0 none: written as a number, or null when 0
 *   FLAG      bool, written only when true
 *   ROLES     nroles/roles[].name: runtime only, no key of its own (the roles
 *             are the keys of "tensors"; stats are kept by role index, so a
 *             call with C and one without are two sites there, and the
 *             report merges them) */
#define MP_RAW_SITE_KEY(X)                                                                         \
  X(api, "api", STR, "the hooked entry point")                                                     \
  X(kind, "op", OPKIND, "gemm | conv_fwd | conv_bwd_data | conv_bwd_filter | matmul")              \
  X(layer, "layer", LAYER, "NVTX range stack of the calling thread joined with /, or a scope's")   \
  X(phase, "phase", PHASE, "a scope's phase: forward | backward | optimizer | recompute | eval")   \
  X(module_class, "module_class", CLASS, "a scope's module class (PyTorch: Linear, ...)")          \
  X(m, "m", I64, "GEMM m (convs: implicit-GEMM shape)")                                            \
  X(n, "n", I64, "GEMM n")                                                                         \
  X(k, "k", I64, "GEMM k")                                                                         \
  X(batch, "batch", I64, "batch count")                                                            \
  X(transa, "transa", TRANS, "GEMMs only")                                                         \
  X(transb, "transb", TRANS, "GEMMs only")                                                         \
  X(lda, "lda", I64_OPT, "leading dimension of A")                                                 \
  X(ldb, "ldb", I64_OPT, "leading dimension of B")                                                 \
  X(ldc, "ldc", I64_OPT, "leading dimension of C")                                                 \
  X(ldd, "ldd", I64_OPT, "leading dimension of D (cublasLt only)")                                 \
  X(conv, "conv", CONV, "convolution geometry (convs only)")                                       \
  X(types, "types", TYPES, "dtype per operand role")                                               \
  X(compute_type, "compute_type", STR, "compute type")                                             \
  X(scale_type, "scale_type", STR, "dtype of alpha/beta")                                          \
  X(math_mode, "math_mode", MATH, "cuBLAS handle math mode")                                       \
  X(epilogue, "epilogue", STR_OPT, "cublasLt epilogue")                                            \
  X(conv_math, "conv_math_type", STR_OPT, "legacy cuDNN cudnnMathType_t")                          \
  X(fp8_scales, "fp8_scales", FP8, "cublasLt FP8 scale pointers set")                              \
  X(fast_accum, "fast_accum", FLAG,                                                                \
    "cublasLt FAST_ACCUM: FP8 partial sums not promoted periodically")                             \
  X(loss_scale, "loss_scale", SCALE,                                                               \
    "declared loss scale in force for the calls; null: none, or a marked forward, recompute, "     \
    "eval or optimizer phase (values not scaled)")                                                 \
  X(shapes_merged, "shapes_merged", FLAG,                                                          \
    "calls of new shapes past MPPROF_MAX_SITES: m/n/k/batch null, no lds, no conv")                \
  X(roles, "", ROLES, "tensor roles of the call (runtime only)")

/* The rest of a SITE: X(name, "json key", "how sites with the same key merge").
 * None of these is identity. */
#define MP_RAW_SITE_COUNTERS(X)                                                                    \
  X(id, "id", "unique within one raw file; events refer to it")                                    \
  X(calls, "calls", "summed: calls that returned success")                                         \
  X(scanned_calls, "scanned_calls", "summed")                                                      \
  X(autotune_calls, "autotune_calls", "summed: cuDNN autotuning executions, not in calls")         \
  X(not_scanned, "not_scanned", "summed per reason (MP_RAW_NOT_SCANNED)")                          \
  X(tensors, "tensors", "stats merged per role")                                                   \
  X(gpu_ns, "gpu_ns", "summed")                                                                    \
  X(kernels, "kernels", "merged per kernel name (MP_RAW_KERNEL)")                                  \
  X(ptr_align, "ptr_align", "minimum")                                                             \
  X(shadow, "shadow", "--shadow only: MP_RAW_SHADOW, merged per candidate")                        \
  X(fp8_scale_values, "fp8_scale_values", "MP_RAW_FP8_VALUE per operand with a scale pointer set") \
  X(amax_D, "amax_D",                                                                              \
    "MP_RAW_FP8_VALUE of AMAX_D read back after the call, when its pointer is set")                \
  X(amax_aux, "amax_aux",                                                                          \
    "MP_RAW_FP8_VALUE of EPILOGUE_AUX_AMAX read back after the call, when its pointer is set")     \
  X(ranks, "ranks", "report only: calls per rank, summed")

/* X(name, "json key", "what it is") for the objects inside a SITE. */
#define MP_RAW_CONV(X)                                                                             \
  X(n, "n", "batch")                                                                               \
  X(c, "c", "input channels")                                                                      \
  X(h, "h", "input height")                                                                        \
  X(w, "w", "input width")                                                                         \
  X(k, "k", "output channels")                                                                     \
  X(r, "r", "filter height")                                                                       \
  X(s, "s", "filter width")                                                                        \
  X(pad, "pad", "[h, w], or [d, h, w] when d is present")                                          \
  X(stride, "stride", "[h, w], or [d, h, w] when d is present")                                    \
  X(dilation, "dilation", "[h, w], or [d, h, w] when d is present")                                \
  X(groups, "groups", "filter groups (w: k filters of c / groups channels); absent: 1")            \
  X(d, "d", "input depth of a 3-D convolution (5-D tensors); absent: 2-D")                         \
  X(t, "t", "filter depth of a 3-D convolution; present with d")

/* Shadow execution of a site's sampled calls (analysis/shadow.h). */
#define MP_RAW_SHADOW(X)                                                                           \
  X(calls, "calls", "calls shadowed and measured, summed")                                         \
  X(skipped, "skipped", "sampled calls not shadowed, summed per reason (MP_RAW_SHADOW_SKIPPED)")   \
  X(candidates, "candidates", "MP_RAW_SHADOW_CAND per candidate name (mp_shadow_cand_name)")

/* Why a sampled call was not shadowed, or shadowed but not measured
 * (profiler/shadow.c's reasons, in this order). */
#define MP_RAW_SHADOW_SKIPPED(X)                                                                   \
  X(TOO_LARGE, "shadow_too_large", "work memory above MPPROF_SHADOW_MAX_MB")                       \
  X(GRAPH_CAPTURE, "graph_capture", "stream being captured into a CUDA graph")                     \
  X(FORK_CHILD, "fork_child", "call in a fork child")                                              \
  X(DEVICE_MEMORY, "device_memory", "device operands, no device path (no device kernels/driver)")  \
  X(UNSUPPORTED, "shadow_unsupported",                                                             \
    "not a GEMM, dtype, layout, fp8 scale mode, DRELU/DGELU, alpha")                               \
  X(NO_MEMORY, "out_of_memory", "work memory could not be allocated")                              \
  X(BUSY, "shadow_busy", "device: earlier shadowed calls still running (slots or memory cap)")     \
  X(NO_HANDLE, "no_cublas_handle",                                                                 \
    "device: private stream or cuBLAS/cuBLASLt handle not made (neither library loaded)")          \
  X(DEVICE_ERROR, "device_error",                                                                  \
    "device: a driver or cuBLAS/cuBLASLt call of the shadow work failed")                          \
  X(NO_FINITE_REFERENCE, "no_finite_reference",                                                    \
    "computed, but every output's reference is inf/NaN (operands' Inf/NaN): nothing to measure")   \
  X(EMPTY_PRODUCT, "empty_product",                                                                \
    "k = 0 or alpha = 0: D = beta*C, no product in any precision: nothing to measure")
#define MP_RAW_ENUM_ROW_(id, json, doc) MP_RAW_SHADOW_SKIP_##id,
enum { MP_RAW_SHADOW_SKIPPED(MP_RAW_ENUM_ROW_) MP_RAW_SHADOW_SKIP_COUNT };
#undef MP_RAW_ENUM_ROW_

#define MP_RAW_SHADOW_CAND(X)                                                                      \
  X(calls, "calls", "calls that measured the candidate, summed")                                   \
  X(rel_l2, "rel_l2", "maximum over calls; null = +inf")                                           \
  X(max_rel, "max_rel", "maximum; null = +inf")                                                    \
  X(flushed, "flushed", "maximum")                                                                 \
  X(nonfinite, "nonfinite", "maximum")                                                             \
  X(rel_l2_samples, "rel_l2_samples", "per-call rel_l2 values kept for the median, pooled")

/* Bit i of mpp_op.fp8_scales is row i. */
#define MP_RAW_FP8_SCALES(X)                                                                       \
  X(A, "A", "scale pointer of A set")                                                              \
  X(B, "B", "scale pointer of B set")                                                              \
  X(C, "C", "scale pointer of C set")                                                              \
  X(D, "D", "scale pointer of D set")                                                              \
  X(amax_D, "amax_D", "AMAX_D_POINTER set")                                                        \
  X(aux, "aux", "EPILOGUE_AUX_SCALE_POINTER set (GELU_AUX*: the aux stored times it)")             \
  X(amax_aux, "amax_aux", "EPILOGUE_AUX_AMAX_POINTER set (GELU_AUX*)")

/* The rows of MP_RAW_FP8_SCALES by name (MP_FP8_ROW_A .. MP_FP8_ROW_amax_aux):
 * bit i of the fp8_scales bits, value i of a site's FP8 scalars. */
#define X(f, json, doc) MP_FP8_ROW_##f,
enum mp_fp8_row { MP_RAW_FP8_SCALES(X) MP_FP8_ROWS };
#undef X

/* A cuBLASLt FP8 scalar (a scale of A, B, C, D or the GELU aux; AMAX_D or
 * the aux's amax) over a site's calls, as read. min/max merged, counts summed. */
#define MP_RAW_FP8_VALUE(X)                                                                        \
  X(min, "min", "smallest value read; null: none read")                                            \
  X(max, "max", "largest value read; null: none read")                                             \
  X(read, "read", "calls whose value was read")                                                    \
  X(unread, "unread", "calls whose pointer was set but not read (device memory, block scales)")

/* Why a tensor role of a call was not scanned: mpp_ns_reason is generated
 * from this table (profiler/mpp.h), in this order. */
#define MP_RAW_NOT_SCANNED(X)                                                                      \
  X(SAMPLED_OUT, "sampled_out", "MPPROF_SAMPLE skipped the call")                                  \
  X(GRAPH_CAPTURE, "graph_capture", "stream being captured into a CUDA graph")                     \
  X(DEVICE_UNAVAILABLE, "device_scanner_unavailable", "device scanner not loaded")                 \
  X(RING_FULL, "scan_ring_full", "result ring full")                                               \
  X(DTYPE, "dtype_unscannable", "int8, fp4, complex, ...")                                         \
  X(LAYOUT, "layout_unsupported", "padded or tiled layouts")                                       \
  X(UNKNOWN, "pointer_unreadable", "no data pointer, virtual tensor, unknown memory")              \
  X(ROLES_FULL, "roles_full", "a tensor beyond the roles one op records (MPP_MAX_ROLES)")

#define MP_RAW_KERNEL(X)                                                                           \
  X(name, "name", "raw kernel name from CUPTI")                                                    \
  X(count, "count", "launches, summed")                                                            \
  X(gpu_ns, "gpu_ns", "summed")                                                                    \
  X(tc, "tc", "--tc-counters verdict (only for measured kernels)")                                 \
  X(tc_source, "tc_source", "\"counters\" (only for measured kernels)")                            \
  X(tc_profiled, "tc_profiled", "launches measured")                                               \
  X(tc_values, "tc_values", "metric values summed over them, in tc_counters.metrics order")

/* The top level of the file. */
#define MP_RAW_TOP(X)                                                                              \
  X(schema, "schema", "mpprof.raw/<MP_RAW_VERSION>")                                               \
  X(mpprof_version, "mpprof_version", "the mpprof that wrote it (meson project version)")          \
  X(final, "final", "false for a periodic checkpoint")                                             \
  X(pid, "pid", "process id")                                                                      \
  X(ppid, "ppid", "parent process id")                                                             \
  X(host, "host", "host name")                                                                     \
  X(rank, "rank", "RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, else mpprof_rank")          \
  X(world_size, "world_size",                                                                      \
    "WORLD_SIZE etc. beside that rank, else mpprof_rank's; null: unknown")                         \
  X(argv, "argv", "/proc/self/cmdline")                                                            \
  X(start_ns, "start_ns", "CLOCK_REALTIME at init")                                                \
  X(end_ns, "end_ns", "CLOCK_REALTIME at the write")                                               \
  X(incomplete, "incomplete", "a cap was hit")                                                     \
  X(incomplete_reasons, "incomplete_reasons", "why, one string each")                              \
  X(scan, "scan", "MPPROF_SCAN")                                                                   \
  X(sample, "sample", "MPPROF_SAMPLE")                                                             \
  X(shadow_max_rel, "shadow_max_rel", "MPPROF_SHADOW_MAX_REL when set: the verdicts' error limit") \
  X(forked, "forked", "written by a fork child")                                                   \
  X(unprofiled, "unprofiled",                                                                      \
    "the image ran without mpprof: why (written by the exec that started it); absent otherwise")   \
  X(calls, "calls", "hooked op calls seen")                                                        \
  X(failed_calls, "failed_calls", "calls whose real function returned an error")                   \
  X(not_attributed, "not_attributed",                                                              \
    "calls in no site: site cap and merged reserve full, or OOM")                                  \
  X(nvtx, "nvtx", "MP_RAW_NVTX")                                                                   \
  X(device, "device", "MP_RAW_DEVICE, or null")                                                    \
  X(framework, "framework", "MP_RAW_FRAMEWORK (mpprof_framework), or null")                        \
  X(cupti, "cupti", "MP_RAW_CUPTI")                                                                \
  X(tc_counters, "tc_counters", "MP_RAW_TC_COUNTERS, only with --tc-counters")                     \
  X(training, "training", "MP_RAW_TRAINING: what the program declared (profiler/train.c)")         \
  X(capture, "capture", "MP_RAW_CAPTURE: the capture range and the calls outside it")              \
  X(timeline, "timeline", "MP_RAW_TIMELINE: caps and drops of the timeline lists below")           \
  X(sites, "sites", "SITE objects")                                                                \
  X(events, "events", "MP_RAW_EVENT objects")                                                      \
  X(ranges, "ranges", "MP_RAW_RANGE objects: NVTX push/pop ranges that ended")                     \
  X(kernel_events, "kernel_events", "MP_RAW_KERNEL_EVENT objects: kernels of recorded calls")

#define MP_RAW_NVTX(X)                                                                             \
  X(marks, "marks", "NVTX marks seen")                                                             \
  X(start_end_ranges, "start_end_ranges", "start/end ranges seen (not layers)")

#define MP_RAW_DEVICE(X)                                                                           \
  X(name, "name", "device name")                                                                   \
  X(cc, "cc", "compute capability \"major.minor\"")

/* What a framework integration reported (mpprof.h mpprof_framework): the
 * PyTorch integration (profiler/python/mpprof_torch) once torch is bound. */
#define MP_RAW_FRAMEWORK(X)                                                                        \
  X(name, "name", "\"torch\"")                                                                     \
  X(version, "version", "its version string")                                                      \
  X(backward_marks, "backward_marks", "cxx | python: how backward ops were named (README)")        \
  X(models, "models", "MP_RAW_MODEL objects (mpprof_model_root), absent when none was named")

/* A model the integration named: layers named name + "." + a module path are
 * its modules (name "": the main model, no prefix). */
#define MP_RAW_MODEL(X)                                                                            \
  X(name, "name", "the prefix of its layers' names, without the dot")                              \
  X(module_class, "class", "its class (a wrapper's inner module's)")

/* backward_marks' values (the PyTorch integration, hooks.py, writes them). */
#define MP_RAW_MARKS_CXX "cxx"       /* C++ pre-hooks on grad_fn (_marks.cpp) */
#define MP_RAW_MARKS_PYTHON "python" /* Python tensor hooks (_fast.c) */

/* cupti.status of a fork child whose parent had started CUDA or CUPTI: it
 * leaves them alone, so it has no kernel data. */
#define MP_CUPTI_FORKED_AFTER_INIT "forked_after_cuda_init"
/* cupti.status of a process whose program registered CUPTI activity buffer
 * callbacks of its own (without subscribing): before mpprof's start (mpprof
 * left CUPTI to it: no kernel data) or after (mpprof's kernel records end
 * there). */
#define MP_CUPTI_HELD_BY_PROGRAM "held_by_program"
#define MP_CUPTI_TAKEN_BY_PROGRAM "taken_by_program"

#define MP_RAW_CUPTI(X)                                                                            \
  X(status, "status",                                                                              \
    "ok | disabled | unavailable | held_by_other_subscriber | held_by_program | "                  \
    "taken_by_program | error | forked_after_cuda_init")                                           \
  X(dropped_records, "dropped_records", "activity records CUPTI dropped")                          \
  X(unattributed_kernels, "unattributed_kernels", "MP_RAW_UNATTRIBUTED per library, when any")

/* Kernels whose names are a library's (analysis/kernel_class.h
 * mp_kernel_library: "cublas", "cudnn") that CUPTI saw outside every hooked
 * call: launched by a copy of the library mpprof did not intercept. */
#define MP_RAW_UNATTRIBUTED(X)                                                                     \
  X(kernels, "kernels", "launches")                                                                \
  X(gpu_ns, "gpu_ns", "their GPU time")                                                            \
  X(example, "example", "the first such kernel name")

#define MP_RAW_TC_COUNTERS(X)                                                                      \
  X(status, "status", "ok | unavailable | not_started")                                            \
  X(reason, "reason", "why unavailable, or null")                                                  \
  X(sample, "sample", "\"first\" or N")                                                            \
  X(chip, "chip", "chip name, or null")                                                            \
  X(metrics, "metrics", "metrics the chip accepted")                                               \
  X(passes, "passes", "replay passes")                                                             \
  X(ops_profiled, "ops_profiled", "calls measured")                                                \
  X(kernels_profiled, "kernels_profiled", "kernel launches given a verdict")                       \
  X(ops_unmatched, "ops_unmatched", "measured calls whose records did not match")                  \
  X(ops_skipped, "ops_skipped", "sampled calls not measured")

/* The training state the program declared (NVTX domain "mpprof", mpprof.h,
 * --loss-scale): written by profiler/train.c, read by the report. */
#define MP_RAW_TRAINING(X)                                                                         \
  X(loss_scale_source, "loss_scale_source", "marks | option | null (none declared)")               \
  X(loss_scale, "loss_scale", "in force when the file was written; null: none")                    \
  X(scale_changes, "scale_changes", "MP_RAW_SCALE_CHANGE objects, every declaration (first 4096)") \
  X(scale_changes_dropped, "scale_changes_dropped", "declarations beyond 4096")                    \
  X(steps, "steps", "MP_RAW_STEPS, or null without step marks")                                    \
  X(step_scales, "step_scales", "MP_RAW_STEP_SCALE runs (first 4096)")                             \
  X(step_scales_dropped, "step_scales_dropped", "runs beyond 4096")                                \
  X(skipped_steps, "skipped_steps", "MP_RAW_SKIPPED")                                              \
  X(invalid_marks, "invalid_marks", "marks with a payload that is not a valid scale or step")      \
  X(first_nonfinite, "first_nonfinite", "MP_RAW_NONFINITE, or null")

#define MP_RAW_SCALE_CHANGE(X)                                                                     \
  X(scale, "scale", "the declared scale")                                                          \
  X(step, "step", "the step in force then, or null")                                               \
  X(t_ns, "t_ns", "CLOCK_REALTIME of the declaration")

#define MP_RAW_STEPS(X)                                                                            \
  X(marked, "marked", "step marks")                                                                \
  X(first, "first", "first marked step")                                                           \
  X(last, "last", "last marked step")

#define MP_RAW_STEP_SCALE(X)                                                                       \
  X(first, "first", "first step of the run")                                                       \
  X(last, "last", "last step of the run")                                                          \
  X(scale, "scale",                                                                                \
    "scale in force at their step marks (else the first declared in the step); null: none")

#define MP_RAW_SKIPPED(X)                                                                          \
  X(count, "count", "step_skipped marks")                                                          \
  X(steps, "steps", "the first 1024 skipped steps")

#define MP_RAW_NONFINITE(X)                                                                        \
  X(site, "site", "SITE id")                                                                       \
  X(call_index, "call_index", "the call's index in its site, from 0")                              \
  X(t_ns, "t_ns", "CLOCK_REALTIME at the call's start")                                            \
  X(thread, "thread", "Linux tid")                                                                 \
  X(step, "step", "step in force, or null")                                                        \
  X(loss_scale, "loss_scale", "declared scale in force, or null")                                  \
  X(role, "role", "the output role that held Inf/NaN")                                             \
  X(inputs_scanned, "inputs_scanned", "some input was scanned (all were finite)")                  \
  X(count, "count", "values of that output in that call")                                          \
  X(nans, "nans", "NaN among them")                                                                \
  X(pos_infs, "pos_infs", "+Inf among them")                                                       \
  X(neg_infs, "neg_infs", "-Inf among them")

#define MP_RAW_EVENT(X)                                                                            \
  X(site, "site", "SITE id")                                                                       \
  X(t_ns, "t_ns", "CLOCK_REALTIME at the call's start")                                            \
  X(dur_ns, "dur_ns", "CPU wall time of the call")                                                 \
  X(thread, "thread", "Linux tid")                                                                 \
  X(stream, "stream", "the op's stream handle, \"0x...\"")                                         \
  X(call, "call", "the call's index in its site, from 0 (kernel_events[].call)")

/* What `mpprof run --capture-range` / --steps recorded (profiler/capture.c). */
#define MP_RAW_CAPTURE(X)                                                                          \
  X(mode, "mode", "all | cudaProfilerApi | nvtx | steps")                                          \
  X(nvtx, "nvtx", "the range name of mode nvtx, else null")                                        \
  X(steps, "steps", "[A, B] of mode steps, else null")                                             \
  X(captured, "captured", "op calls inside the capture range (recorded)")                          \
  X(opened, "opened", "whether the range ever opened (false: no call ran inside it)")              \
  X(outside, "outside", "op calls outside it, not recorded, per MP_RAW_CAPTURE_OUTSIDE reason")

/* Why an op call was outside the capture range, in this order (mpp_capture_reason). */
#define MP_RAW_CAPTURE_OUTSIDE(X)                                                                  \
  X(NOT_STARTED, "not_started", "before the range first opened (or before step A)")                \
  X(STOPPED, "stopped", "after it closed (between ranges, or after step B)")

/* The timeline lists' caps: a list that hit its cap says how much it dropped. */
#define MP_RAW_TIMELINE(X)                                                                         \
  X(max_events, "max_events", "MPPROF_MAX_EVENTS: cap of events and of kernel_events")             \
  X(events_dropped, "events_dropped", "calls recorded without an event")                           \
  X(max_ranges, "max_ranges", "MPPROF_MAX_RANGES: cap of ranges")                                  \
  X(ranges_dropped, "ranges_dropped", "ended ranges not kept")                                     \
  X(kernel_events_dropped, "kernel_events_dropped", "kernels of recorded calls not kept")

/* One NVTX push/pop range of one thread (profiler/nvtx.c). */
#define MP_RAW_RANGE(X)                                                                            \
  X(name, "name", "the range's message")                                                           \
  X(thread, "thread", "Linux tid")                                                                 \
  X(depth, "depth", "nesting level on its thread, 0 outermost")                                    \
  X(start_ns, "start_ns", "CLOCK_REALTIME at the push")                                            \
  X(end_ns, "end_ns", "CLOCK_REALTIME at the pop")

/* One kernel launched by a recorded call (CUPTI). */
#define MP_RAW_KERNEL_EVENT(X)                                                                     \
  X(site, "site", "SITE id")                                                                       \
  X(call, "call", "the launching call's index in its site (events[].call), low 32 bits")           \
  X(kernel, "kernel", "index into the site's kernels[]")                                           \
  X(stream, "stream", "CUPTI stream id")                                                           \
  X(start_ns, "start_ns", "kernel start, CUPTI timestamp (ns)")                                    \
  X(end_ns, "end_ns", "kernel end, CUPTI timestamp (ns)")

/* Every table as a struct of key strings: MP_RK_SITE.calls is "calls". */
#define MP_RAW_KEY_MEMBER_(name, json, ...) const char *name;
#define MP_RAW_KEY_INIT_(name, json, ...) .name = json,
#define MP_RAW_KEYS_(type, var, table)                                                             \
  static const struct type { table(MP_RAW_KEY_MEMBER_) } var = {table(MP_RAW_KEY_INIT_)}

#define MP_RAW_SITE_ALL_(X) MP_RAW_SITE_KEY(X) MP_RAW_SITE_COUNTERS(X)
MP_RAW_KEYS_(mp_rk_site, MP_RK_SITE, MP_RAW_SITE_ALL_);
MP_RAW_KEYS_(mp_rk_conv, MP_RK_CONV, MP_RAW_CONV);
MP_RAW_KEYS_(mp_rk_kernel, MP_RK_KERNEL, MP_RAW_KERNEL);
MP_RAW_KEYS_(mp_rk_top, MP_RK_TOP, MP_RAW_TOP);
MP_RAW_KEYS_(mp_rk_nvtx, MP_RK_NVTX, MP_RAW_NVTX);
MP_RAW_KEYS_(mp_rk_device, MP_RK_DEVICE, MP_RAW_DEVICE);
MP_RAW_KEYS_(mp_rk_framework, MP_RK_FRAMEWORK, MP_RAW_FRAMEWORK);
MP_RAW_KEYS_(mp_rk_model, MP_RK_MODEL, MP_RAW_MODEL);
MP_RAW_KEYS_(mp_rk_cupti, MP_RK_CUPTI, MP_RAW_CUPTI);
MP_RAW_KEYS_(mp_rk_tc_counters, MP_RK_TC_COUNTERS, MP_RAW_TC_COUNTERS);
MP_RAW_KEYS_(mp_rk_event, MP_RK_EVENT, MP_RAW_EVENT);
MP_RAW_KEYS_(mp_rk_capture, MP_RK_CAPTURE, MP_RAW_CAPTURE);
MP_RAW_KEYS_(mp_rk_capture_outside, MP_RK_CAPTURE_OUTSIDE, MP_RAW_CAPTURE_OUTSIDE);
MP_RAW_KEYS_(mp_rk_timeline, MP_RK_TIMELINE, MP_RAW_TIMELINE);
MP_RAW_KEYS_(mp_rk_range, MP_RK_RANGE, MP_RAW_RANGE);
MP_RAW_KEYS_(mp_rk_kernel_event, MP_RK_KERNEL_EVENT, MP_RAW_KERNEL_EVENT);
MP_RAW_KEYS_(mp_rk_training, MP_RK_TRAINING, MP_RAW_TRAINING);
MP_RAW_KEYS_(mp_rk_scale_change, MP_RK_SCALE_CHANGE, MP_RAW_SCALE_CHANGE);
MP_RAW_KEYS_(mp_rk_steps, MP_RK_STEPS, MP_RAW_STEPS);
MP_RAW_KEYS_(mp_rk_step_scale, MP_RK_STEP_SCALE, MP_RAW_STEP_SCALE);
MP_RAW_KEYS_(mp_rk_skipped, MP_RK_SKIPPED, MP_RAW_SKIPPED);
MP_RAW_KEYS_(mp_rk_nonfinite, MP_RK_NONFINITE, MP_RAW_NONFINITE);
MP_RAW_KEYS_(mp_rk_shadow, MP_RK_SHADOW, MP_RAW_SHADOW);
MP_RAW_KEYS_(mp_rk_shadow_cand, MP_RK_SHADOW_CAND, MP_RAW_SHADOW_CAND);
MP_RAW_KEYS_(mp_rk_fp8_value, MP_RK_FP8_VALUE, MP_RAW_FP8_VALUE);
MP_RAW_KEYS_(mp_rk_fp8_scales, MP_RK_FP8_SCALES, MP_RAW_FP8_SCALES);
MP_RAW_KEYS_(mp_rk_unattributed, MP_RK_UNATTRIBUTED, MP_RAW_UNATTRIBUTED);

/* The JSON keys of the site key in table order, NULL-terminated: the
 * report's identity of a site (ROLES, "", has no key of its own). */
#define MP_RAW_IDENTITY_KEY_(name, json, kind, doc) json,
static const char *const mp_raw_identity_keys[] = {MP_RAW_SITE_KEY(MP_RAW_IDENTITY_KEY_) 0};

#endif
