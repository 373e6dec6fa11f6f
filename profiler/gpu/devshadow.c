/* Shadow execution on the device (`--shadow` with operands in device memory):
 * the launches of kernels/shadow.cu and the fp32 GEMMs between them, planned
 * by shadow_plan.c, on a private stream and BLAS handle of the op's context.
 *
 * Per shadowed call, on the op's own stream right after the op:
 * stream-ordered work memory (cuMemAllocFromPoolAsync from a pool of
 * mpprof's own, freed on the private stream when the work is done) and one
 * launch of mpp_shadow_copy, which copies the
 * operands (and the bias) as the op read them (of mpp_shadow_gather for a
 * convolution: its implicit GEMM's operands, gathered from its tensors).
 * Then on the private stream, behind an event recorded on the op's stream
 * after the copy (the program's stream never waits on mpprof), from the
 * copies only: the amax of op(A) and op(B), the reference (exact fp32
 * operands, one strided-batched SGEMM in pedantic math: no TF32, no
 * reduced-precision reduction), then per candidate quant A, quant B, SGEMM,
 * err; err's last block writes the candidate's error sums straight into
 * pinned, mapped host memory; the amax words are copied behind them and an
 * event closes the call. The copy is the one piece of mpprof's work the
 * program's stream runs (a read and a write of the operands' bytes, a
 * fraction of the op's own time): without it the shadow would read the
 * program's memory unordered against the program's later work on it (an
 * in-place update, a stream-ordered free). Nothing waits: mpp_devshadow_poll
 * hands finished calls to their sink when the event says so; at exit
 * mpp_devshadow_drain waits, bounded.
 *
 * The GEMMs are the program's libcublas.so.13 (a handle in pedantic math) or,
 * in a program that loaded only libcublasLt.so.13, its cuBLASLt (compute
 * type COMPUTE_32F_PEDANTIC): the library's own functions (never mpprof's
 * hooks), handed over by the hook modules (devshadow_blas.h).
 *
 * Every kernel of the work runs inside a pushed external correlation id
 * (MPP_OWN_OP_ID) that the CUPTI sink drops: the private handle's GEMM kernels
 * are not the program's. The caller (profiler/shadow.c) serialises all calls
 * and keeps the depth guard held (calls come from inside a hooked call), so
 * the library's own inner calls pass through mpprof's hooks unrecorded. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "profiler/gpu/cuda_driver.h"
#include "profiler/gpu/gpu.h"
#include "profiler/gpu/shadow_plan.h"
#include "profiler/gpu/devshadow_blas.h"

#define MAX_CTX 8
#define JOBS 4 /* shadowed calls in flight */
#define ERR_GRID_PER_SM 4
#define MIN_GRID 8
#define ALIGN 256

typedef struct sh_ctx {
  CUcontext ctx;
  bool tried, ready;
  int rc; /* why not ready */
  CUstream stream;
  void *handle; /* g_blas's */
  CUevent after_op[JOBS], done[JOBS];
  unsigned grid_cap;   /* blocks of quant/amax/err launches */
  CUdeviceptr out_dev; /* g_out as this context addresses it */
  /* Work memory: a pool of mpprof's own, not the device's default pool the
   * program may allocate from, with reuse across streams through inserted
   * dependencies off: an allocation on the op's stream never waits for the
   * private stream's work on a block freed there (the default pool allows
   * it: CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, cuda.h). */
  CUmemoryPool pool;
} sh_ctx;

/* What the device writes for one job: in pinned, mapped host memory. */
typedef struct sh_out {
  mp_sh_err err[MP_SH_COUNT];
  unsigned amax[2];
} sh_out;

typedef struct sh_job {
  bool busy;
  sh_ctx *cs;
  int rc;
  unsigned done;
  uint64_t bytes;
  mpp_devshadow_sink sink;
  void *cookie;
} sh_job;

static sh_ctx g_ctx[MAX_CTX];
static int g_nctx;
static sh_job g_jobs[JOBS];
static sh_out *g_out; /* JOBS entries */
static uint64_t g_bytes_in_flight;
static CUfunction g_copy, g_gather, g_amax, g_quant, g_dot16, g_err;
static bool g_kernels_tried;
static const mpp_devshadow_blas *g_blas; /* the first backend found, kept */
static mpp_devshadow_blas_fn _Atomic g_blas_get[MPP_DEVSHADOW_BACKENDS];

void mpp_devshadow_set_blas(mpp_devshadow_backend which, mpp_devshadow_blas_fn get) {
  if ((unsigned)which < MPP_DEVSHADOW_BACKENDS) g_blas_get[which] = get;
}

/* The first backend whose library is loaded (callers are serialised). */
static const mpp_devshadow_blas *blas(void) {
  for (int b = 0; b < MPP_DEVSHADOW_BACKENDS && !g_blas; b++) {
    mpp_devshadow_blas_fn get = g_blas_get[b];
    if (get) g_blas = get();
  }
  return g_blas;
}
static mpp_devshadow_result g_result; /* delivery scratch (calls are serialised) */

static uint64_t align_up(uint64_t x) {
  return (x + ALIGN - 1) / ALIGN * ALIGN;
}

/* Byte offsets of the pieces of one job's work memory, and the columns of D
 * (vectors of op(B)) one slice of the products covers: the whole of op(A),
 * and op(B), the reference and a candidate product for `cols` columns. */
typedef struct layout {
  uint64_t copy[MPP_SH_COPY_PIECES], words, partials, qa, qb, ref, cand, total;
  int64_t cols;
} layout;

static layout layout_of(const mp_shadow_gemm *g, unsigned grid_cap, int64_t cols) {
  uint64_t mk = (uint64_t)(g->m * g->k * g->batch), kn = (uint64_t)(g->k * cols * g->batch),
           mn = (uint64_t)(g->m * cols * g->batch);
  layout l;
  l.cols = cols;
  uint64_t at = 0;
  for (int w = 0; w < MPP_SH_COPY_PIECES; w++) {
    l.copy[w] = at;
    at += align_up(mpp_sh_copy_bytes(g, w));
  }
  l.words = at; /* amax A, amax B, err's ticket */
  l.partials = l.words + align_up(4 * sizeof(unsigned));
  l.qa = l.partials + align_up((uint64_t)grid_cap * sizeof(mp_sh_err));
  l.qb = l.qa + align_up(mk * sizeof(float));
  l.ref = l.qb + align_up(kn * sizeof(float));
  l.cand = l.ref + align_up(mn * sizeof(float));
  l.total = l.cand + align_up(mn * sizeof(float));
  return l;
}

/* The layout for g within max_bytes: all of n at once when it fits, else the
 * fewest equal slices of columns that fit (each slice's products are formed
 * and their errors merged in turn); .total > max_bytes when one column does
 * not fit. */
static layout plan_slices(const mp_shadow_gemm *g, unsigned grid_cap, uint64_t max_bytes) {
  layout l = layout_of(g, grid_cap, g->n);
  if (l.total <= max_bytes) return l;
  layout one = layout_of(g, grid_cap, 1);
  if (one.total > max_bytes) return one;
  /* per column: op(B)'s k values and two products' m, each batch matrix (+ alignment) */
  uint64_t per = (uint64_t)(g->k + 2 * g->m) * sizeof(float) * (uint64_t)g->batch;
  int64_t fit = 1 + (int64_t)((max_bytes - one.total) / per);
  while (fit > 1 && layout_of(g, grid_cap, fit).total > max_bytes)
    fit--;
  int64_t slices = (g->n + fit - 1) / fit;
  return layout_of(g, grid_cap, (g->n + slices - 1) / slices);
}

/* The grid cap of a device with `sms` SMs. */
static unsigned grid_cap_of(int sms) {
  unsigned cap = (unsigned)(sms > 0 ? sms : 1) * ERR_GRID_PER_SM;
  return cap < MIN_GRID ? MIN_GRID : cap;
}

static bool kernels(void) {
  if (!g_kernels_tried) {
    g_kernels_tried = true;
    g_copy = (CUfunction)mpp_devscan_library_kernel("mpp_shadow_copy");
    g_gather = (CUfunction)mpp_devscan_library_kernel("mpp_shadow_gather");
    g_amax = (CUfunction)mpp_devscan_library_kernel("mpp_shadow_amax");
    g_quant = (CUfunction)mpp_devscan_library_kernel("mpp_shadow_quant");
    g_dot16 = (CUfunction)mpp_devscan_library_kernel("mpp_shadow_dot16");
    g_err = (CUfunction)mpp_devscan_library_kernel("mpp_shadow_err");
  }
  return g_copy && g_gather && g_amax && g_quant && g_dot16 && g_err;
}

/* Stream, events, BLAS handle and the mapped results of the current
 * context (cs->ctx). */
static int init_ctx(const mpp_cu_api *cu, sh_ctx *cs) {
  if (!cu->stream_create || !cu->stream_wait_event || !cu->mem_alloc_pool_async ||
      !cu->mem_free_async || !cu->mem_pool_create || !cu->mem_pool_set_attr || !cu->event_create ||
      !cu->event_record || !cu->event_query || !cu->memset_d8_async || !cu->memcpy_dtoh_async ||
      !cu->mem_host_register || !cu->mem_host_device_ptr || !cu->launch)
    return -ENOSYS;
  /* mpprof's own memory (mpp_cu_mapped_host: it outlives a context reset) */
  if (!g_out && !(g_out = mpp_cu_mapped_host(cu, sizeof(sh_out) * JOBS))) return -ENODEV;
  if (cu->mem_host_device_ptr(&cs->out_dev, g_out, 0) != CUDA_SUCCESS) return -ENODEV;
  CUdevice dev = 0;
  int sms = 0;
  if (cu->ctx_device && cu->ctx_device(&dev) == CUDA_SUCCESS && cu->device_attr)
    cu->device_attr(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
  cs->grid_cap = grid_cap_of(sms);
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = (int)dev;
  int off = 0;
  if (cu->mem_pool_create(&cs->pool, &props) != CUDA_SUCCESS) {
    cs->pool = NULL;
    return -ENODEV;
  }
  if (cu->mem_pool_set_attr(cs->pool, CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES, &off) !=
      CUDA_SUCCESS)
    return -ENODEV;
  if (cu->stream_create(&cs->stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS) return -ENODEV;
  for (int j = 0; j < JOBS; j++)
    if (cu->event_create(&cs->after_op[j], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS ||
        cu->event_create(&cs->done[j], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
      return -ENODEV;
  if (!g_blas->create(&cs->handle)) {
    cs->handle = NULL;
    return -ENODEV;
  }
  return 0;
}

/* The state of the context `stream` belongs to (the calling thread's
 * current context for the legacy default stream), set up on first use. */
static sh_ctx *ctx_of(const mpp_cu_api *cu, CUstream stream, int *rc) {
  CUcontext ctx = NULL;
  if (stream && cu->stream_ctx && cu->stream_ctx(stream, &ctx) != CUDA_SUCCESS) ctx = NULL;
  if (!ctx && (!cu->ctx_current || cu->ctx_current(&ctx) != CUDA_SUCCESS || !ctx)) {
    *rc = -ENODEV;
    return NULL;
  }
  sh_ctx *cs = NULL;
  for (int i = 0; i < g_nctx && !cs; i++)
    if (g_ctx[i].ctx == ctx) cs = &g_ctx[i];
  if (!cs) {
    if (g_nctx == MAX_CTX) {
      *rc = -ENODEV;
      return NULL;
    }
    cs = &g_ctx[g_nctx++];
    cs->ctx = ctx;
  }
  if (!cs->tried) {
    cs->tried = true;
    /* The stream, events and handle belong to the stream's context, which
     * need not be the current one (as in devscan.c's ctx_lookup). */
    CUcontext cur = NULL;
    bool switched = cu->ctx_current && cu->ctx_current(&cur) == CUDA_SUCCESS && cur != ctx &&
                    cu->ctx_push && cu->ctx_push(ctx) == CUDA_SUCCESS;
    cs->rc = init_ctx(cu, cs);
    if (switched && cu->ctx_pop) cu->ctx_pop(&cur);
    cs->ready = cs->rc == 0;
  }
  *rc = cs->rc;
  return cs->ready ? cs : NULL;
}

static bool launch(const mpp_cu_api *cu, CUfunction f, unsigned grid, CUstream s, void *params) {
  void *args[] = {params};
  return cu->launch(f, grid, 1, 1, MPP_SH_BLOCK, 1, 1, 0, s, args, NULL) == CUDA_SUCCESS;
}

static bool sgemm(const sh_ctx *cs, const mp_shadow_gemm *g, CUdeviceptr qa, CUdeviceptr qb,
                  CUdeviceptr out) {
  static const float one = 1, zero = 0;
  int m = (int)g->m, n = (int)g->n, k = (int)g->k;
  return g_blas->sgemm_strided(cs->handle, (cudaStream_t)cs->stream, CUBLAS_OP_N, CUBLAS_OP_N, m, n,
                               k, &one, (const float *)(uintptr_t)qa, m, (long long)m * k,
                               (const float *)(uintptr_t)qb, k, (long long)k * n, &zero,
                               (float *)(uintptr_t)out, m, (long long)m * n, (int)g->batch);
}

/* The products of columns [j0, j0 + l->cols) of D (op(A) whole, the slice
 * of op(B)), the reference's then each candidate's with its err, whose sums
 * merge into the job's result. */
static bool enqueue_slice(const mpp_cu_api *cu, const sh_ctx *cs, int j, const mp_shadow_gemm *g,
                          unsigned mask, const float delayed[2][2], CUdeviceptr mem,
                          const layout *l, int64_t j0) {
  CUstream s = cs->stream;
  unsigned *words = (unsigned *)(uintptr_t)(mem + l->words);
  CUdeviceptr qa = mem + l->qa, qb = mem + l->qb, ref = mem + l->ref, cand = mem + l->cand;
  mp_shadow_gemm gs = *g; /* the slice: its n columns, B's vectors from j0 */
  gs.n = g->n - j0 < l->cols ? g->n - j0 : l->cols;
  mpp_sh_quant_params q;
  for (int c = -1; c < MP_SH_COUNT; c++) {
    if (c >= 0 && !(mask >> c & 1)) continue;
    int which = c < 0 ? MPP_SH_REFERENCE : c;
    for (int w = 0; w < 2; w++) {
      mpp_sh_quant_plan(&gs, which, w, delayed, words, (float *)(uintptr_t)(w ? qb : qa), &q);
      if (w) q.x.v0 = (uint64_t)j0;
      uint64_t units = q.x.batch * q.x.rows * ((q.x.k + MPP_SH_KBLOCK - 1) / MPP_SH_KBLOCK);
      if (!launch(cu, g_quant, mpp_sh_grid(units, cs->grid_cap), s, &q)) return false;
    }
    mpp_sh_dot_params d; /* a 16F call's own precision: fp16 sums, not an SGEMM */
    if (c >= 0 && mpp_sh_dot16_plan(&gs, (mp_shadow_cand)c, (const float *)(uintptr_t)qa,
                                    (const float *)(uintptr_t)qb, (float *)(uintptr_t)cand, &d)) {
      if (!launch(cu, g_dot16, mpp_sh_grid(d.m * d.n * d.batch, cs->grid_cap), s, &d)) return false;
    } else if (!sgemm(cs, &gs, qa, qb, c < 0 ? ref : cand)) {
      return false;
    }
    if (c < 0) continue;
    mpp_sh_err_params e;
    mpp_sh_err_plan(&gs, (mp_shadow_cand)c, delayed, words, (const float *)(uintptr_t)ref,
                    (const float *)(uintptr_t)cand, &e);
    e.partials = (mp_sh_err *)(uintptr_t)(mem + l->partials);
    e.ticket = words + 2;
    e.result = (mp_sh_err *)(uintptr_t)(cs->out_dev + (CUdeviceptr)j * sizeof(sh_out) +
                                        offsetof(sh_out, err) + (CUdeviceptr)c * sizeof(mp_sh_err));
    if (!launch(cu, g_err, mpp_sh_grid(e.n, cs->grid_cap), s, &e)) return false;
  }
  return true;
}

/* The work of one job on cs->stream, from the reference to the last err.
 * False at the first failing call (what was enqueued still runs). */
static bool enqueue_work(const mpp_cu_api *cu, const sh_ctx *cs, int j, const mp_shadow_gemm *g,
                         unsigned mask, const float delayed[2][2], CUdeviceptr mem,
                         const layout *l) {
  CUstream s = cs->stream;
  unsigned *words = (unsigned *)(uintptr_t)(mem + l->words);
  if (cu->memset_d8_async(mem + l->words, 0, 4 * sizeof(unsigned), s) != CUDA_SUCCESS) return false;
  for (int w = 0; w < 2; w++) {
    mpp_sh_amax_params p = {mpp_sh_src_of(g, w), words + w};
    uint64_t units = p.x.batch * p.x.rows * ((p.x.k + MPP_SH_KBLOCK - 1) / MPP_SH_KBLOCK);
    if (!launch(cu, g_amax, mpp_sh_grid(units, cs->grid_cap), s, &p)) return false;
  }
  for (int64_t j0 = 0; j0 < g->n; j0 += l->cols)
    if (!enqueue_slice(cu, cs, j, g, mask, delayed, mem, l, j0)) return false;
  return cu->memcpy_dtoh_async(g_out[j].amax, mem + l->words, sizeof g_out[j].amax, s) ==
         CUDA_SUCCESS;
}

/* The launches that make the work's operands on the op's stream: the copy
 * of g's operands, or the gather of the convolution's (then a copy of its
 * bias, the fused bias-activation forward's); *snap reads them. */
static bool launch_operands(const mpp_cu_api *cu, const sh_ctx *cs, CUstream stream,
                            const mp_shadow_gemm *g, const mp_shadow_conv *conv,
                            void *const dst[MPP_SH_COPY_PIECES], mp_shadow_gemm *snap) {
  uint64_t elems = 0;
  mp_shadow_gemm gathered;
  if (conv) {
    mpp_sh_gather_params gp;
    mpp_sh_gather_plan(conv, g, dst, &gp, &gathered);
    elems = (uint64_t)((g->m * g->k + g->k * g->n) * g->batch); /* batch: the groups */
    if (!launch(cu, g_gather, mpp_sh_grid(elems, cs->grid_cap), stream, &gp)) return false;
    g = &gathered;
    elems = 0;
  }
  mpp_sh_copy_params cp;
  mpp_sh_copy_plan(g, conv ? MPP_SH_PIECES_BESIDE_AB : MPP_SH_PIECES_ALL, dst, &cp, snap);
  if (cp.n == 0) return true;
  for (unsigned w = 0; w < cp.n; w++)
    elems += cp.p[w].inner * cp.p[w].outer * cp.p[w].batch;
  return launch(cu, g_copy, mpp_sh_grid(elems, cs->grid_cap), stream, &cp);
}

static int enqueue(void *stream, const mp_shadow_gemm *g, const mp_shadow_conv *conv, unsigned mask,
                   const float delayed[2][2], uint64_t max_bytes, mpp_devshadow_sink sink,
                   void *cookie) {
  const mpp_cu_api *cu = mpp_cu();
  if (!cu || !kernels()) return -ENOSYS;
  if (!blas()) return -ENODEV;
  if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->batch > INT_MAX || g->m <= 0 ||
      g->n <= 0 || g->k <= 0 || g->batch <= 0)
    return -EINVAL;
  /* block scales: one matrix, a layout known for the operand's own vectors */
  const mp_shadow_operand *ab[2] = {&g->a, &g->b};
  for (int i = 0; i < 2; i++)
    if (ab[i]->blocks && (g->batch != 1 || !mp_sh_blocks_k(ab[i]->block_mode) ||
                          ab[i]->block_outer != (i ? g->n : g->m)))
      return -EINVAL;
  for (int c = 0; c < MP_SH_COUNT; c++)
    if (!mpp_sh_cand_on_device(g, (mp_shadow_cand)c)) mask &= ~(1u << c);
  CUstreamCaptureMode mode = mpp_cu_capture_relax(cu);
  int rc = 0;
  CUcontext cur = NULL;
  bool pushed = false;
  sh_ctx *cs = NULL;
  if (cu->ctx_current && cu->ctx_current(&cur) != CUDA_SUCCESS) cur = NULL;
  cs = ctx_of(cu, (CUstream)stream, &rc);
  if (cs && cs->ctx != cur) {
    pushed = cu->ctx_push && cu->ctx_push(cs->ctx) == CUDA_SUCCESS;
    if (!pushed) rc = -ENODEV;
  }
  int j = -1;
  layout l;
  if (cs && rc == 0) {
    l = plan_slices(g, cs->grid_cap, max_bytes);
    for (int i = 0; i < JOBS && j < 0; i++)
      if (!g_jobs[i].busy) j = i;
    if (l.total > max_bytes)
      rc = -E2BIG;
    else if (j < 0 || g_bytes_in_flight + l.total > max_bytes)
      rc = -EBUSY;
  }
  CUdeviceptr mem = 0;
  mp_shadow_gemm snap; /* g reading the copies */
  if (cs && rc == 0) {
    mpp_cupti_push(MPP_OWN_OP_ID);
    if (cu->mem_alloc_pool_async(&mem, l.total, cs->pool, (CUstream)stream) != CUDA_SUCCESS) {
      rc = -EIO;
    } else {
      void *dst[MPP_SH_COPY_PIECES];
      for (int w = 0; w < MPP_SH_COPY_PIECES; w++)
        dst[w] = (void *)(uintptr_t)(mem + l.copy[w]);
      if (!launch_operands(cu, cs, (CUstream)stream, g, conv, dst, &snap) ||
          cu->event_record(cs->after_op[j], (CUstream)stream) != CUDA_SUCCESS ||
          cu->stream_wait_event(cs->stream, cs->after_op[j], 0) != CUDA_SUCCESS) {
        cu->mem_free_async(mem, (CUstream)stream); /* behind whatever was enqueued */
        rc = -EIO;
      }
    }
    if (rc) mpp_cupti_pop();
  }
  if (cs && rc == 0) {
    sh_job *job = &g_jobs[j];
    memset(&g_out[j], 0, sizeof g_out[j]);
    bool ok = enqueue_work(cu, cs, j, &snap, mask, delayed, mem, &l);
    mpp_cupti_pop();
    /* Whatever was enqueued runs; the memory goes back behind it. */
    bool freed = cu->mem_free_async(mem, cs->stream) == CUDA_SUCCESS;
    bool closed = cu->event_record(cs->done[j], cs->stream) == CUDA_SUCCESS;
    if (closed) {
      *job = (sh_job){.busy = true,
                      .cs = cs,
                      .rc = ok ? 0 : -EIO,
                      .done = mask,
                      .bytes = freed ? l.total : 0,
                      .sink = sink,
                      .cookie = cookie};
      g_bytes_in_flight += job->bytes;
    } else {
      rc = -EIO; /* nothing will say when it finished: not delivered, nothing read */
    }
  }
  if (pushed) cu->ctx_pop(&cur);
  mpp_cu_capture_restore(cu, mode);
  return rc;
}

int mpp_devshadow_enqueue(void *stream, const mp_shadow_gemm *g, unsigned mask,
                          const float delayed[2][2], uint64_t max_bytes, mpp_devshadow_sink sink,
                          void *cookie) {
  return enqueue(stream, g, NULL, mask, delayed, max_bytes, sink, cookie);
}

int mpp_devshadow_enqueue_conv(void *stream, const mp_shadow_conv *cv, const mp_shadow_gemm *g,
                               unsigned mask, const float delayed[2][2], uint64_t max_bytes,
                               mpp_devshadow_sink sink, void *cookie) {
  return enqueue(stream, g, cv, mask, delayed, max_bytes, sink, cookie);
}

static void deliver(sh_job *job, int rc) {
  int j = (int)(job - g_jobs);
  mpp_devshadow_result *r = &g_result;
  memset(r, 0, sizeof *r);
  r->rc = rc ? rc : job->rc;
  if (r->rc == 0) {
    r->done = job->done;
    memcpy(r->err, g_out[j].err, sizeof r->err);
    for (int w = 0; w < 2; w++)
      r->amax[w] = mpp_sh_amax_of_word(g_out[j].amax[w]);
  }
  job->busy = false;
  g_bytes_in_flight -= job->bytes;
  job->sink(job->cookie, r);
}

/* Deliver finished jobs; with wait, poll until none is left or the timeout. */
static void poll(bool wait) {
  const mpp_cu_api *cu = mpp_cu();
  if (!cu || !cu->event_query) return;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    int left = 0;
    CUstreamCaptureMode mode = mpp_cu_capture_relax(cu);
    for (int j = 0; j < JOBS; j++) {
      sh_job *job = &g_jobs[j];
      if (!job->busy) continue;
      CUresult q = cu->event_query(job->cs->done[j]);
      if (q == CUDA_SUCCESS)
        deliver(job, 0);
      else if (q == CUDA_ERROR_NOT_READY)
        left++;
      else
        deliver(job, -EIO);
    }
    mpp_cu_capture_restore(cu, mode);
    if (!wait || !left) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t el = (uint64_t)(now.tv_sec - t0.tv_sec) * 1000000000ull + (uint64_t)now.tv_nsec -
                  (uint64_t)t0.tv_nsec;
    if (el > MPP_GPU_DRAIN_TIMEOUT_NS) return; /* a hung GPU must not hang the exit */
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
}

void mpp_devshadow_poll(void) {
  poll(false);
}

void mpp_devshadow_drain(void) {
  poll(true);
}
