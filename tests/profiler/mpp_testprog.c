/* mpp_testprog: small purpose-built programs for the profiler's end-to-end
 * tests, one per mode (each a situation the injected library must survive
 * without changing what the program does):
 *   gemmex N      N cublasGemmEx fp16 x fp16 -> fp32 calls in NVTX range "t/gemmex"
 *   lt            one cublasLtMatmul call (fp16, BIAS epilogue) in range "t/lt"
 *   ltevict       2 rounds of 1500 cublasLtMatmul calls in range "t/evict", one
 *                 descriptor changed in place between calls: call i's bias pointer is
 *                 the bias + i % 1500 elements, its transb T for even i and N for odd
 *                 (1500 descriptor contents: more than mpprof remembers per thread)
 *   variants      every cuBLAS GEMM entry point (and its _64 twin) once
 *   mathmode      cublasSgemm_v2 with the default and then the TF32 math mode
 *   layers L      L layers (NVTX ranges "net/b<i>"), each 100 cublasSgemm_v2 calls of one
 *                 16 x 16 x 16 shape: a model with more layers than MPPROF_MAX_SITES
 *   shapes S      S shapes (8 x 8 x 8, lda 8 + i: a dynamic sequence length), each called
 *                 twice by cublasSgemm_v2, shape i in layer "dyn/l<i % 4>"
 *   threads T     T threads, each with its own handle and NVTX range "t<i>"
 *   fork          GEMM, fork; the child does 2 GEMMs and exits 0; the parent waits, 1 GEMM
 *   forkidle      GEMM, fork; the child only prints and exits 0 (a data-loader worker)
 *   forkloop N    GEMM, then N forks one after another, each child _exit(0) at once, waited
 *                 for (a fork loop while mpprof's checkpoint thread flushes CUPTI)
 *   forkfresh     fork before any CUDA call; the child creates its own handle, does 3 GEMMs
 *                 and exits 0; the parent waits, creates a handle and does 1 GEMM
 *   forkfresh_exit  as forkfresh, but the parent ends with _exit(0) (no exit handlers)
 *   autotune      cuDNN backend forward conv: plans A, B (autotuning), then A three times;
 *                 tensor descriptors destroyed once the graph is built, as frontends do
 *   churn D       autotune, with D backend descriptors created and destroyed (512 live at
 *                 most) before each of the five executions
 *   wrongpack     the autotune setup, then cudnnBackendExecute given the operation
 *                 descriptor where the variant pack belongs, and a variant pack never
 *                 finalized (cuDNN refuses both), then the autotune executions
 *   groups64      on a thread with a 48 KiB stack, one cublasSgemmGroupedBatched call
 *                 of 64 groups of one GEMM each, in NVTX range "t/groups"
 *   groups70      as groups64 with 70 groups; the last one's alpha is 1e5 (D beyond fp16)
 *   groupsmoe N   as groups64, N calls of 128 groups (experts of one shape); group 65's
 *                 alpha is 1e5 (D beyond fp16)
 *   groupsplit G  one cublasSgemmGroupedBatched call of G groups of one GEMM each, group g
 *                 of m = 1 + g % 16 rows and alpha 2^(g % 5) - 2^-(g % 7), in "grouped";
 *                 then the same G GEMMs as G cublasSgemm_v2 calls in "split"
 *   autotune_small [KiB]  autotune on a thread with a small stack (default 28 KiB)
 *   first_stack FILE  the first CUDA call (cublasCreate: mpprof starts there) on a
 *                 thread with a painted stack; the stack bytes it used into FILE
 *   exit3         one GEMM, then exit(3)
 *   cancelpending exec|exit|spawn  one GEMM; then a thread with a cancellation made pending
 *                 while it had cancellation disabled enables it and, with no cancellation
 *                 point in between, execs "gemmex 1" (exec), calls exit(5) (exit), or
 *                 posix_spawns "gemmex 2" with an environment of LD_LIBRARY_PATH only and
 *                 returns its pid, which main waits for and prints the status of (spawn).
 *                 None is a cancellation point: should the thread be cancelled after all,
 *                 main prints "cancelled" and ends with _exit(9) (no exit handlers)
 *   seccomp N     a seccomp filter that kills the process at unshare or close_range, then N
 *                 GEMMs 2 ms apart (checkpoints run in between)
 *   closeall N    one GEMM, then N rounds of: close every descriptor from 3 to 1023, then
 *                 write 20 GEMM results into a file of its own (mkstemp in /tmp, unlinked),
 *                 read it back and close it (a program that owns every descriptor above
 *                 the standard streams); prints how many rounds found their file, a write
 *                 or the close not as they left it
 *   chdir DIR     one GEMM, chdir(DIR), one more GEMM
 *   wait          three GEMMs, prints "ready", then sleeps until killed
 *   finalfails    one GEMM, mpprof_checkpoint() (when preloaded), the file size limit set
 *                 to that checkpoint's size, two GEMMs in "after_checkpoint", exit 0: the
 *                 final raw file cannot be written
 *   capture [ptds]  on a stream being captured into a CUDA graph: two cublasGemmEx calls
 *                 (handle's stream), one cublasLtMatmul (stream argument) and one legacy
 *                 cudnnConvolutionForward (cuDNN handle's stream); then, after
 *                 EndCapture, the same three calls again outside capture. simcuda runs
 *                 captured work at once and refuses to instantiate the graph (printed).
 *                 The stream is a created non-blocking one, or with ptds the per-thread
 *                 default stream (cudaStreamPerThread)
 *   lossscale     the mpprof protocol: a second thread marks loss_scale 1024 and step 7, then
 *                 one GEMM in "t/main"; fork: the child marks loss_scale 2^20, step 8 and
 *                 step_skipped 8, one GEMM in "t/child"; the parent waits, one more GEMM
 *   overflow      steps 0..4 (step marks), each three fp16 -> fp16 GEMMs in "l0", "l1",
 *                 "l2", l2 reading l1's output; in step 3 l1's A is 2^14 times larger and
 *                 its output overflows fp16 (the first op that produces Inf), which l2 reads
 *   exec N        six GEMMs, then (N > 0) exec itself as "exec N-1": N+1 images, one pid
 *   cleanexec     one GEMM, then a child (fork) execs "gemmex 1" with an environment of
 *                 LD_LIBRARY_PATH only (as a launcher that builds a clean one); waits for it
 *   rankexec [STEP:N]  one GEMM in each of six images of one pid, each started by another exec
 *                 function: (none) execv, v execve, e execvp, p execle, l fexecve, f (last).
 *                 The first declares mpprof_rank(1, 4) (when preloaded) and first forks a
 *                 child that execs "rankexec child:N" (declares nothing); the last declares
 *                 mpprof_rank(2, 4). N is the number of environment entries the exec passed:
 *                 each image prints whether its environment has exactly that many
 *   cleanspawn    one GEMM, then posix_spawn "gemmex 1" and posix_spawnp "gemmex 2" with an
 *                 environment of LD_LIBRARY_PATH only, posix_spawn "gemmex 3" with environ
 *                 and posix_spawn of a missing file (its result printed); waits for each
 *   groupconv G   a legacy fp32 convolution of G groups, forward and both backward ops,
 *                 in "grouped/<op>", then as G one-group convolutions on the groups'
 *                 slices in "split/g<i>/<op>"; prints each group's double reference
 *                 sums ("ref OP G SUMSQ MAXABS NONZERO") for test_shadow_e2e
 *   convbiasact   cudnnConvolutionBiasActivationForward (fp32 NHWC, 1 x 1 filter; ReLU, 2
 *                 groups, in "cba/fused"; identity in "cba/fused_id") and on the same data
 *                 the GEMMs they are through cublasLtMatmul (RELU_BIAS, BIAS) in "cba/gemm",
 *                 "cba/gemm_id"
 *   conv3d        legacy fp32 3-D convolutions (5-D tensors, 2 groups), forward and both
 *                 backward ops, checked against direct loops: in "conv3d/<op>", and one of
 *                 height 1 in "flat3d/<op>" whose data also runs as a 2-D one in "flat2d/<op>";
 *                 conv3d's also through cuDNN backend graphs in "backend3d/<op>"
 *   bematmul      a cuDNN backend matmul graph (fp32, A [2,5,40] row-major, B [1,40,3]
 *                 column-major, broadcast) twice in "bemm", then the same product as
 *                 cublasSgemmStridedBatched twice in "cublas"
 *   keepexec DIR  one GEMM, then a child (fork) changes to DIR and execs "rankexec c:N" with
 *                 LD_PRELOAD (when set) and LD_LIBRARY_PATH only (a launcher that keeps the
 *                 preload and drops the rest; ASAN_OPTIONS and UBSAN_OPTIONS kept when
 *                 set, N counting them); waits for it
 *   keepspawn DIR one GEMM, then posix_spawn and posix_spawnp "rankexec c:N", each in DIR
 *                 (file action) with the environment of keepexec; waits for each; then
 *                 posix_spawn of a missing file with it (its result printed)
 *   bigspawn DIR  one GEMM, then posix_spawn "rankexec c:N" in DIR with keepspawn's
 *                 environment and filler variables up to 16 bytes short of what the
 *                 kernel takes (found by trying the exec system call in fork children):
 *                 no room for the settings mpprof would add; its result printed, waits
 *   inflight      a second thread starts a 1024^3 cublasSgemm_v2 (seconds on the CPU);
 *                 the main thread exits 0 while it runs
 *   orphan S      one GEMM, fork: the child sleeps S seconds (default 3) and exits; the
 *                 parent exits 0 at once
 *   rank          one GEMM, mpprof_checkpoint(), mpprof_rank(5, 2) (refused), mpprof_rank(1,
 *                 2) (when preloaded), one GEMM, fork: the child does one GEMM and exits 0;
 *                 the parent waits, one more GEMM (a rank learned late, and kept by a fork)
 *   nvtxkinds     GemmEx calls in ranges of every kind of NVTX call a C program makes:
 *                 nvtxRangePushW L"wide_\u00e4" in "outer", then in "outer" again;
 *                 nvtxRangePushEx Unicode L"\u6ce8\u610f" and L"\u524d\u9988" in "outer" (two
 *                 names of no ASCII letter); a range of a domain made by nvtxDomainCreateW
 *                 with "outer" popped before it ("wd"); a "loss_scale" 64 mark in the domain
 *                 nvtxDomainCreateW(L"mpprof") before a call in "scaled"; and one start/end
 *                 range and one mark of each form (A, W, Ex, domain Ex) around a call in "se"
 *   setenv        sets MPPROF_CUPTI=off, MPPROF_TC_COUNTERS=first, MPPROF_LOSS_SCALE=8 and
 *                 MPPROF_SCAN=none, then two GEMMs in "t/gemmex" with RANK=7 set between them
 * Every mode prints a checksum of its results on stdout. Linked against the
 * CUDA libraries by soname; run with LD_LIBRARY_PATH=<simcuda>. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nvtx3/nvToolsExt.h>

#include "prog_cuda.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

/* Declared for C++ only in cublas_api.h; the ABI passes pointers. */
typedef uint16_t half_t;
cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const half_t *, const half_t *, int, const half_t *, int, const half_t *,
                           half_t *, int);
cublasStatus_t cublasHgemm_64(cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t,
                              int64_t, int64_t, const half_t *, const half_t *, int64_t,
                              const half_t *, int64_t, const half_t *, half_t *, int64_t);
cublasStatus_t cublasHgemmBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const half_t *, const half_t *const[], int,
                                  const half_t *const[], int, const half_t *, half_t *const[], int,
                                  int);
cublasStatus_t cublasHgemmBatched_64(cublasHandle_t, cublasOperation_t, cublasOperation_t, int64_t,
                                     int64_t, int64_t, const half_t *, const half_t *const[],
                                     int64_t, const half_t *const[], int64_t, const half_t *,
                                     half_t *const[], int64_t, int64_t);
cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                         int, int, const half_t *, const half_t *, int, long long,
                                         const half_t *, int, long long, const half_t *, half_t *,
                                         int, long long, int);
cublasStatus_t cublasHgemmStridedBatched_64(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                            int64_t, int64_t, int64_t, const half_t *,
                                            const half_t *, int64_t, long long, const half_t *,
                                            int64_t, long long, const half_t *, half_t *, int64_t,
                                            long long, int64_t);

#define N 16 /* every matrix is N x N */

/* Device buffers live until exit, as in most training programs; they stay
 * reachable from here (leak checkers run at exit). */
static void *live[1024];
static int nlive;

static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;

static void *dev_alloc(size_t bytes) {
  void *d;
  CK(cudaMalloc(&d, bytes));
  pthread_mutex_lock(&live_mu);
  if (nlive < 1024) live[nlive++] = d;
  pthread_mutex_unlock(&live_mu);
  return d;
}

static void *dev_upload(const void *host, size_t bytes) {
  void *d = dev_alloc(bytes);
  CK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
  return d;
}

typedef struct mats {
  void *a16, *b16; /* fp16 N x N */
  void *a32, *b32; /* fp32 */
  void *a64, *b64; /* fp64 */
  void *c32, *c64, *c16;
} mats;

static void mats_init(mats *m, int seed) {
  float a[N * N], b[N * N];
  double ad[N * N], bd[N * N];
  uint16_t ah[N * N], bh[N * N];
  for (int i = 0; i < N * N; i++) {
    a[i] = (float)((i * 7 + seed) % 5 - 2);
    b[i] = (float)((i * 3 + seed) % 7 - 3);
    ad[i] = a[i];
    bd[i] = b[i];
    ah[i] = f2h(a[i]);
    bh[i] = f2h(b[i]);
  }
  m->a16 = dev_upload(ah, sizeof ah);
  m->b16 = dev_upload(bh, sizeof bh);
  m->a32 = dev_upload(a, sizeof a);
  m->b32 = dev_upload(b, sizeof b);
  m->a64 = dev_upload(ad, sizeof ad);
  m->b64 = dev_upload(bd, sizeof bd);
  m->c32 = dev_alloc(4 * N * N * sizeof(float));
  m->c64 = dev_alloc(4 * N * N * sizeof(double));
  m->c16 = dev_alloc(4 * N * N * sizeof(uint16_t));
}

static double sum32(const void *dev, int n) {
  float h[4 * N * N];
  CK(cudaMemcpy(h, dev, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
  double s = 0;
  for (int i = 0; i < n; i++)
    s += h[i] * (double)(i % 13 + 1);
  return s;
}

static double gemmex(cublasHandle_t h, const mats *m) {
  const float one = 1, zero = 0;
  CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, N, N, N, &one, m->a16, CUDA_R_16F, N, m->b16,
                  CUDA_R_16F, N, &zero, m->c32, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                  CUBLAS_GEMM_DEFAULT));
  return sum32(m->c32, N * N);
}

static int mode_gemmex(int n) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 1);
  double s = 0;
  /* NVTX's return values are part of what the program sees: printed, so
   * that the plain and profiled runs are compared on them too. */
  int r0 = nvtxRangePushA("t");
  int r1 = nvtxRangePushA("gemmex");
  for (int i = 0; i < n; i++)
    s += gemmex(h, &m);
  int r2 = nvtxRangePop();
  int r3 = nvtxRangePop();
  printf("gemmex %d checksum %.17g nvtx %d %d %d %d\n", n, s, r0, r1, r2, r3);
  CK(cublasDestroy(h));
  return 0;
}

/* The environment changes once the process runs: mpprof's configuration is
 * the environment it started with (the rank: the one at the first CUDA call). */
static int mode_setenv(void) {
  setenv("MPPROF_CUPTI", "off", 1);
  setenv("MPPROF_TC_COUNTERS", "first", 1);
  setenv("MPPROF_LOSS_SCALE", "8", 1);
  setenv("MPPROF_SCAN", "none", 1);
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 1);
  nvtxRangePushA("t");
  nvtxRangePushA("gemmex");
  double s = gemmex(h, &m);
  setenv("RANK", "7", 1);
  s += gemmex(h, &m);
  nvtxRangePop();
  nvtxRangePop();
  printf("setenv checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

/* The cuBLASLt modes' set: a handle, an fp32 matmul descriptor with the
 * BIAS epilogue (a bias of 0 .. N-1 on the device) and transb T, fp16
 * layouts for A and B, and an fp32 layout for C and D where the mode asks
 * for one (mode_ltreuse keeps its own on the stack). */
typedef struct {
  cublasLtHandle_t lt;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
} lt_set;

static void lt_start(lt_set *s, bool with_lc) {
  float bias_h[N];
  for (int i = 0; i < N; i++)
    bias_h[i] = (float)i;
  void *bias = dev_upload(bias_h, sizeof bias_h);
  CK(cublasLtCreate(&s->lt));
  CK(cublasLtMatmulDescCreate(&s->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
  cublasOperation_t t = CUBLAS_OP_T;
  CK(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  CK(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                    sizeof bias));
  CK(cublasLtMatmulDescSetAttribute(s->desc, CUBLASLT_MATMUL_DESC_TRANSB, &t, sizeof t));
  CK(cublasLtMatrixLayoutCreate(&s->la, CUDA_R_16F, N, N, N));
  CK(cublasLtMatrixLayoutCreate(&s->lb, CUDA_R_16F, N, N, N));
  s->lc = NULL;
  if (with_lc) CK(cublasLtMatrixLayoutCreate(&s->lc, CUDA_R_32F, N, N, N));
}

static void lt_finish(lt_set *s) {
  cublasLtMatrixLayoutDestroy(s->la);
  cublasLtMatrixLayoutDestroy(s->lb);
  if (s->lc) cublasLtMatrixLayoutDestroy(s->lc);
  cublasLtMatmulDescDestroy(s->desc);
  cublasLtDestroy(s->lt);
}

/* calls identical cublasLtMatmul calls (one descriptor set, made once). */
static int mode_lt(int calls) {
  lt_set s;
  mats m;
  mats_init(&m, 2);
  lt_start(&s, true);
  const float one = 1, zero = 0;
  nvtxRangePushA("t");
  nvtxRangePushA("lt");
  for (int i = 0; i < calls; i++)
    CK(cublasLtMatmul(s.lt, s.desc, &one, m.a16, s.la, m.b16, s.lb, &zero, m.c32, s.lc, m.c32, s.lc,
                      NULL, NULL, 0, 0));
  nvtxRangePop();
  nvtxRangePop();
  printf("lt checksum %.17g\n", sum32(m.c32, N * N));
  lt_finish(&s);
  return 0;
}

/* One set of cuBLASLt descriptors used again and again, changed in place
 * between calls (an attribute set on the matmul descriptor, a layout on the
 * stack overwritten with another's bytes): each call must be decoded as its
 * descriptors are now, whatever mpprof remembers of them. Eight calls in
 * "t/reuse": transb T + BIAS twice, then transb N, then the DEFAULT
 * epilogue, then D in fp16; then B read with a leading dimension of 2N,
 * then twice with N again (B's layout on the stack, the only part of the
 * calls that changes: the last call follows one whose successor, the time
 * before, was the 2N call). */
static int mode_ltreuse(void) {
  lt_set s;
  cublasLtMatrixLayoutOpaque_t lc, lc16, lb, lb_narrow, lb_wide;
  mats m;
  mats_init(&m, 2);
  lt_start(&s, false);
  cublasOperation_t t;
  cublasLtEpilogue_t epi;
  CK(cublasLtMatrixLayoutInit(&lc, CUDA_R_32F, N, N, N));
  CK(cublasLtMatrixLayoutInit(&lc16, CUDA_R_16F, N, N, N));
  CK(cublasLtMatrixLayoutInit(&lb, CUDA_R_16F, N, N, N));
  CK(cublasLtMatrixLayoutInit(&lb_narrow, CUDA_R_16F, N, N, N));
  CK(cublasLtMatrixLayoutInit(&lb_wide, CUDA_R_16F, N, N, 2 * N));
  static uint16_t b_wide_h[2 * N * N]; /* fp16 ones in B's rows, zeros between */
  for (int j = 0; j < N; j++)
    for (int i = 0; i < N; i++)
      b_wide_h[2 * N * j + i] = 0x3c00;
  void *b_wide = dev_upload(b_wide_h, sizeof b_wide_h);
  const float one = 1, zero = 0;
  double sum = 0;
  nvtxRangePushA("t");
  nvtxRangePushA("reuse");
  for (int call = 0; call < 8; call++) {
    if (call == 2) {
      t = CUBLAS_OP_N;
      CK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &t, sizeof t));
    } else if (call == 3) {
      epi = CUBLASLT_EPILOGUE_DEFAULT;
      CK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    } else if (call == 4) {
      memcpy(&lc, &lc16, sizeof lc); /* plain data: a copy is that layout */
    } else if (call == 5) {
      memcpy(&lb, &lb_wide, sizeof lb);
    } else if (call == 6) {
      memcpy(&lb, &lb_narrow, sizeof lb);
    }
    void *c = call >= 4 ? m.c16 : m.c32;
    const void *b = call == 5 ? b_wide : m.b16;
    CK(cublasLtMatmul(s.lt, s.desc, &one, m.a16, s.la, b, &lb, &zero, c, &lc, c, &lc, NULL, NULL, 0,
                      0));
    sum += call >= 4 ? 0 : sum32(m.c32, N * N);
  }
  nvtxRangePop();
  nvtxRangePop();
  printf("ltreuse checksum %.17g\n", sum);
  lt_finish(&s);
  return 0;
}

/* mode_ltevict: descriptor contents that keep mpprof's memo by descriptor
 * bytes evicting entries, half of them replaced by a call of the other
 * transb: each call must be recorded as its descriptor is. */
enum { LTEVICT_KEYS = 1500 };
static int mode_ltevict(void) {
  lt_set s;
  mats m;
  mats_init(&m, 2);
  lt_start(&s, true);
  static float bias_h[LTEVICT_KEYS + N];
  for (int i = 0; i < LTEVICT_KEYS + N; i++)
    bias_h[i] = (float)(i % 7);
  float *bias = dev_upload(bias_h, sizeof bias_h);
  const float one = 1, zero = 0;
  nvtxRangePushA("t");
  nvtxRangePushA("evict");
  for (int round = 0; round < 2; round++)
    for (int i = 0; i < LTEVICT_KEYS; i++) {
      const float *b = bias + i;
      cublasOperation_t t = i % 2 ? CUBLAS_OP_N : CUBLAS_OP_T;
      CK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b));
      CK(cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB, &t, sizeof t));
      CK(cublasLtMatmul(s.lt, s.desc, &one, m.a16, s.la, m.b16, s.lb, &zero, m.c32, s.lc, m.c32,
                        s.lc, NULL, NULL, 0, 0));
    }
  nvtxRangePop();
  nvtxRangePop();
  printf("ltevict checksum %.17g\n", sum32(m.c32, N * N));
  lt_finish(&s);
  return 0;
}

/* Every GEMM entry point once: 15 pairs (entry point, _64 twin). */
static int mode_variants(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 3);
  const float one = 1, zero = 0;
  const double oned = 1, zerod = 0;
  const uint16_t oneh = 0x3c00, zeroh = 0;
  const cublasOperation_t n_ = CUBLAS_OP_N;
  double s = 0;
  CK(cublasSgemm_v2(h, n_, n_, N, N, N, &one, m.a32, N, m.b32, N, &zero, m.c32, N));
  CK(cublasSgemm_v2_64(h, n_, n_, N, N, N, &one, m.a32, N, m.b32, N, &zero, m.c32, N));
  CK(cublasDgemm_v2(h, n_, n_, N, N, N, &oned, m.a64, N, m.b64, N, &zerod, m.c64, N));
  CK(cublasDgemm_v2_64(h, n_, n_, N, N, N, &oned, m.a64, N, m.b64, N, &zerod, m.c64, N));
  CK(cublasHgemm(h, n_, n_, N, N, N, &oneh, m.a16, N, m.b16, N, &zeroh, m.c16, N));
  CK(cublasHgemm_64(h, n_, n_, N, N, N, &oneh, m.a16, N, m.b16, N, &zeroh, m.c16, N));
  CK(cublasSgemmEx(h, n_, n_, N, N, N, &one, m.a16, CUDA_R_16F, N, m.b16, CUDA_R_16F, N, &zero,
                   m.c32, CUDA_R_32F, N));
  CK(cublasSgemmEx_64(h, n_, n_, N, N, N, &one, m.a16, CUDA_R_16F, N, m.b16, CUDA_R_16F, N, &zero,
                      m.c32, CUDA_R_32F, N));
  CK(cublasGemmEx(h, n_, n_, N, N, N, &one, m.a16, CUDA_R_16F, N, m.b16, CUDA_R_16F, N, &zero,
                  m.c32, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CK(cublasGemmEx_64(h, n_, n_, N, N, N, &one, m.a16, CUDA_R_16F, N, m.b16, CUDA_R_16F, N, &zero,
                     m.c32, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  s += sum32(m.c32, N * N);

  /* Batched by pointer arrays (arrays in device memory, as cuBLAS requires). */
  const float *A32[2] = {m.a32, m.a32}, *B32[2] = {m.b32, m.b32};
  float *C32[2] = {m.c32, (float *)m.c32 + N * N};
  const double *A64[2] = {m.a64, m.a64}, *B64[2] = {m.b64, m.b64};
  double *C64[2] = {m.c64, (double *)m.c64 + N * N};
  const half_t *A16[2] = {m.a16, m.a16}, *B16[2] = {m.b16, m.b16};
  half_t *C16[2] = {m.c16, (half_t *)m.c16 + N * N};
  void *dA32 = dev_upload(A32, sizeof A32), *dB32 = dev_upload(B32, sizeof B32),
       *dC32 = dev_upload(C32, sizeof C32);
  void *dA64 = dev_upload(A64, sizeof A64), *dB64 = dev_upload(B64, sizeof B64),
       *dC64 = dev_upload(C64, sizeof C64);
  void *dA16 = dev_upload(A16, sizeof A16), *dB16 = dev_upload(B16, sizeof B16),
       *dC16 = dev_upload(C16, sizeof C16);
  CK(cublasSgemmBatched(h, n_, n_, N, N, N, &one, dA32, N, dB32, N, &zero, dC32, N, 2));
  CK(cublasSgemmBatched_64(h, n_, n_, N, N, N, &one, dA32, N, dB32, N, &zero, dC32, N, 2));
  CK(cublasDgemmBatched(h, n_, n_, N, N, N, &oned, dA64, N, dB64, N, &zerod, dC64, N, 2));
  CK(cublasDgemmBatched_64(h, n_, n_, N, N, N, &oned, dA64, N, dB64, N, &zerod, dC64, N, 2));
  CK(cublasHgemmBatched(h, n_, n_, N, N, N, &oneh, dA16, N, dB16, N, &zeroh, dC16, N, 2));
  CK(cublasHgemmBatched_64(h, n_, n_, N, N, N, &oneh, dA16, N, dB16, N, &zeroh, dC16, N, 2));
  CK(cublasGemmBatchedEx(h, n_, n_, N, N, N, &one, dA32, CUDA_R_32F, N, dB32, CUDA_R_32F, N, &zero,
                         dC32, CUDA_R_32F, N, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CK(cublasGemmBatchedEx_64(h, n_, n_, N, N, N, &one, dA32, CUDA_R_32F, N, dB32, CUDA_R_32F, N,
                            &zero, dC32, CUDA_R_32F, N, 2, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
  s += sum32(m.c32, 2 * N * N);

  /* Strided batches: A and B broadcast (stride 0), C strided. */
  CK(cublasSgemmStridedBatched(h, n_, n_, N, N, N, &one, m.a32, N, 0, m.b32, N, 0, &zero, m.c32, N,
                               N * N, 2));
  CK(cublasSgemmStridedBatched_64(h, n_, n_, N, N, N, &one, m.a32, N, 0, m.b32, N, 0, &zero, m.c32,
                                  N, N * N, 2));
  CK(cublasDgemmStridedBatched(h, n_, n_, N, N, N, &oned, m.a64, N, 0, m.b64, N, 0, &zerod, m.c64,
                               N, N * N, 2));
  CK(cublasDgemmStridedBatched_64(h, n_, n_, N, N, N, &oned, m.a64, N, 0, m.b64, N, 0, &zerod,
                                  m.c64, N, N * N, 2));
  CK(cublasHgemmStridedBatched(h, n_, n_, N, N, N, &oneh, m.a16, N, 0, m.b16, N, 0, &zeroh, m.c16,
                               N, N * N, 2));
  CK(cublasHgemmStridedBatched_64(h, n_, n_, N, N, N, &oneh, m.a16, N, 0, m.b16, N, 0, &zeroh,
                                  m.c16, N, N * N, 2));
  CK(cublasGemmStridedBatchedEx(h, n_, n_, N, N, N, &one, m.a16, CUDA_R_16F, N, 0, m.b16,
                                CUDA_R_16F, N, 0, &zero, m.c32, CUDA_R_32F, N, N * N, 2,
                                CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  CK(cublasGemmStridedBatchedEx_64(h, n_, n_, N, N, N, &one, m.a16, CUDA_R_16F, N, 0, m.b16,
                                   CUDA_R_16F, N, 0, &zero, m.c32, CUDA_R_32F, N, N * N, 2,
                                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  s += sum32(m.c32, 2 * N * N);

  /* Grouped: one group of 2 GEMMs; alpha/beta and shapes are host arrays. */
  const cublasOperation_t ta[1] = {CUBLAS_OP_N}, tb[1] = {CUBLAS_OP_N};
  const int dims[1] = {N}, size[1] = {2};
  const int64_t dims64[1] = {N}, size64[1] = {2};
  const float al[1] = {1}, be[1] = {0};
  const double ald[1] = {1}, bed[1] = {0};
  CK(cublasSgemmGroupedBatched(h, ta, tb, dims, dims, dims, al, dA32, dims, dB32, dims, be, dC32,
                               dims, 1, size));
  CK(cublasSgemmGroupedBatched_64(h, ta, tb, dims64, dims64, dims64, al, dA32, dims64, dB32, dims64,
                                  be, dC32, dims64, 1, size64));
  CK(cublasDgemmGroupedBatched(h, ta, tb, dims, dims, dims, ald, dA64, dims, dB64, dims, bed, dC64,
                               dims, 1, size));
  CK(cublasDgemmGroupedBatched_64(h, ta, tb, dims64, dims64, dims64, ald, dA64, dims64, dB64,
                                  dims64, bed, dC64, dims64, 1, size64));
  CK(cublasGemmGroupedBatchedEx(h, ta, tb, dims, dims, dims, al, dA32, CUDA_R_32F, dims, dB32,
                                CUDA_R_32F, dims, be, dC32, CUDA_R_32F, dims, 1, size,
                                CUBLAS_COMPUTE_32F));
  CK(cublasGemmGroupedBatchedEx_64(h, ta, tb, dims64, dims64, dims64, al, dA32, CUDA_R_32F, dims64,
                                   dB32, CUDA_R_32F, dims64, be, dC32, CUDA_R_32F, dims64, 1,
                                   size64, CUBLAS_COMPUTE_32F));
  s += sum32(m.c32, 2 * N * N);
  printf("variants checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

static int mode_mathmode(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 4);
  const float one = 1, zero = 0;
  CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, m.a32, N, m.b32, N, &zero, m.c32,
                    N));
  CK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
  CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, m.a32, N, m.b32, N, &zero, m.c32,
                    N));
  printf("mathmode checksum %.17g\n", sum32(m.c32, N * N));
  CK(cublasDestroy(h));
  return 0;
}

static int mode_layers(int layers) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 5);
  const float one = 1, zero = 0;
  double sum = 0;
  for (int l = 0; l < layers; l++) {
    char name[32];
    snprintf(name, sizeof name, "b%d", l);
    nvtxRangePushA("net");
    nvtxRangePushA(name);
    for (int i = 0; i < 100; i++)
      CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, m.a32, N, m.b32, N, &zero,
                        m.c32, N));
    nvtxRangePop();
    nvtxRangePop();
    sum += sum32(m.c32, N * N);
  }
  printf("layers checksum %.17g\n", sum);
  CK(cublasDestroy(h));
  return 0;
}

static int mode_shapes(int shapes) {
  enum { D = 8 };
  cublasHandle_t h;
  CK(cublasCreate(&h));
  size_t na = (size_t)(D + shapes) * D;
  float *a = malloc(na * sizeof *a), b[D * D];
  if (!a) die("malloc", 0);
  for (size_t i = 0; i < na; i++)
    a[i] = (float)((i * 7) % 5) - 2;
  for (int i = 0; i < D * D; i++)
    b[i] = (float)((i * 3) % 7) - 3;
  float *da = dev_upload(a, na * sizeof *a), *db = dev_upload(b, sizeof b);
  float *dc = dev_alloc(D * D * sizeof(float));
  free(a);
  const float one = 1, zero = 0;
  double sum = 0;
  for (int rep = 0; rep < 2; rep++)
    for (int i = 0; i < shapes; i++) {
      char name[16];
      snprintf(name, sizeof name, "l%d", i % 4);
      nvtxRangePushA("dyn");
      nvtxRangePushA(name);
      CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, D, D, D, &one, da, D + i, db, D, &zero, dc,
                        D));
      nvtxRangePop();
      nvtxRangePop();
    }
  sum += sum32(dc, D * D);
  printf("shapes checksum %.17g\n", sum);
  CK(cublasDestroy(h));
  return 0;
}

/* A thread of `calls` GemmEx calls in its layer; with `linger`, it then
 * waits there and never ends. */
typedef struct thread_arg {
  int index, calls;
  char layer[16];
  pthread_barrier_t *linger;
  double sum;
} thread_arg;

static void *thread_main(void *p) {
  thread_arg *a = p;
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, a->index);
  nvtxRangePushA(a->layer);
  for (int i = 0; i < a->calls; i++)
    a->sum += gemmex(h, &m);
  nvtxRangePop();
  if (a->linger) {
    pthread_barrier_wait(a->linger);
    for (;;)
      pause();
  }
  CK(cublasDestroy(h));
  return NULL;
}

static int mode_threads(int n) {
  pthread_t t[64];
  thread_arg a[64];
  if (n < 1 || n > 64) return 2;
  for (int i = 0; i < n; i++) {
    a[i] = (thread_arg){.index = i, .calls = 5};
    snprintf(a[i].layer, sizeof a[i].layer, "t%d", i);
    CK(pthread_create(&t[i], NULL, thread_main, &a[i]));
  }
  double s = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(t[i], NULL);
    s += a[i].sum;
  }
  printf("threads %d checksum %.17g\n", n, s);
  return 0;
}

/* threadevents: EV_THREADS threads of EV_CALLS GemmEx calls each (layers
 * "w<i>", ended and joined), one that makes EV_CALLS in "linger" and is
 * still waiting when the program exits, and EV_MAIN here in "main": more
 * events per thread than a thread keeps before moving them to the list,
 * and some kept by threads that ended or never end. */
enum { EV_THREADS = 3, EV_CALLS = 300, EV_MAIN = 130 };

static int mode_threadevents(void) {
  pthread_t t[EV_THREADS + 1];
  thread_arg a[EV_THREADS + 1];
  pthread_barrier_t done;
  pthread_barrier_init(&done, NULL, 2);
  for (int i = 0; i <= EV_THREADS; i++) {
    a[i] = (thread_arg){.index = 3, .calls = EV_CALLS, .linger = i < EV_THREADS ? NULL : &done};
    snprintf(a[i].layer, sizeof a[i].layer, i < EV_THREADS ? "w%d" : "linger", i);
    CK(pthread_create(&t[i], NULL, thread_main, &a[i]));
  }
  double s = 0;
  for (int i = 0; i < EV_THREADS; i++) {
    pthread_join(t[i], NULL);
    s += a[i].sum;
  }
  pthread_barrier_wait(&done);
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 4);
  nvtxRangePushA("main");
  for (int i = 0; i < EV_MAIN; i++)
    s += gemmex(h, &m);
  nvtxRangePop();
  printf("threadevents checksum %.17g\n", s + a[EV_THREADS].sum);
  fflush(stdout);
  exit(0);
}

/* Threads that frameworks create for work often get small stacks; the hooks
 * must not need much of it, whatever the call. */
#define GROUPS 128 /* room: groups64 calls 64 of them, groups70 70, groupsmoe all */
/* 48 KiB: enough for the program and simcuda, not for hooks that keep the
 * 64 groups' records (~50 KB) on the stack. Sanitizers' redzones need more. */
#ifdef __SANITIZE_ADDRESS__
#define SMALL_STACK (4 * 48 * 1024)
#else
#define SMALL_STACK (48 * 1024)
#endif

typedef struct groups_arg {
  int groups;
  int calls;
  int big; /* the group whose alpha is 1e5: values beyond fp16 (-1: none) */
  double sum;
} groups_arg;

static void *groups_main(void *arg) {
  groups_arg *ga = arg;
  double *sum = &ga->sum;
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 5);
  const float *A[GROUPS], *B[GROUPS];
  float *C[GROUPS];
  cublasOperation_t ta[GROUPS], tb[GROUPS];
  int dims[GROUPS], size[GROUPS];
  float al[GROUPS], be[GROUPS];
  float *c = dev_alloc(GROUPS * N * N * sizeof(float));
  for (int g = 0; g < GROUPS; g++) {
    A[g] = m.a32;
    B[g] = m.b32;
    C[g] = c + g * N * N;
    ta[g] = tb[g] = CUBLAS_OP_N;
    dims[g] = N;
    size[g] = 1;
    al[g] = (float)(g % 3 + 1);
    be[g] = 0;
  }
  if (ga->big >= 0) al[ga->big] = 1e5f;
  const float **dA = dev_upload(A, sizeof A), **dB = dev_upload(B, sizeof B);
  float **dC = dev_upload(C, sizeof C);
  nvtxRangePushA("t");
  nvtxRangePushA("groups");
  for (int i = 0; i < ga->calls; i++)
    CK(cublasSgemmGroupedBatched(h, ta, tb, dims, dims, dims, al, (const float *const *)dA, dims,
                                 (const float *const *)dB, dims, be, dC, dims, ga->groups, size));
  nvtxRangePop();
  nvtxRangePop();
  static float host[GROUPS * N * N];
  CK(cudaMemcpy(host, c, sizeof host, cudaMemcpyDeviceToHost));
  for (int i = 0; i < ga->groups * N * N; i++)
    *sum += host[i] * (double)(i % 13 + 1);
  CK(cublasDestroy(h));
  return NULL;
}

static int groups_mode(int groups, int calls, int big) {
  pthread_attr_t at;
  pthread_t t;
  groups_arg a = {.groups = groups, .calls = calls, .big = big};
  CK(pthread_attr_init(&at));
  CK(pthread_attr_setstacksize(&at, SMALL_STACK));
  CK(pthread_create(&t, &at, groups_main, &a));
  pthread_join(t, NULL);
  pthread_attr_destroy(&at);
  printf("groups%d checksum %.17g\n", groups, a.sum);
  return 0;
}

static int mode_groups64(void) {
  return groups_mode(64, 1, -1);
}

static int mode_groups70(void) {
  return groups_mode(70, 1, 69); /* the 70th: past the 64th */
}

static int mode_groupsmoe(int calls) {
  return groups_mode(128, calls, 65);
}

/* One group's m and alpha (groupsplit): 16 shapes, values of many binades. */
static int split_m(int g) {
  return 1 + g % N;
}

static float split_alpha(int g) {
  return ldexpf(1, g % 5) - ldexpf(1, -(g % 7));
}

static int mode_groupsplit(int groups) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 3);
  size_t n = (size_t)groups;
  const float **A = calloc(n, sizeof *A), **B = calloc(n, sizeof *B);
  float **C = calloc(n, sizeof *C), *al = calloc(n, sizeof *al), *be = calloc(n, sizeof *be);
  cublasOperation_t *ta = calloc(n, sizeof *ta);
  int *ms = calloc(n, sizeof *ms), *dims = calloc(n, sizeof *dims), *size = calloc(n, sizeof *size);
  float *c = dev_alloc(n * N * N * sizeof(float));
  if (!A || !B || !C || !al || !be || !ta || !ms || !dims || !size) return 1;
  for (int g = 0; g < groups; g++) {
    A[g] = m.a32;
    B[g] = m.b32;
    C[g] = c + (size_t)g * N * N;
    ta[g] = CUBLAS_OP_N;
    ms[g] = split_m(g);
    dims[g] = N;
    size[g] = 1;
    al[g] = split_alpha(g);
  }
  const float **dA = dev_upload(A, n * sizeof *A), **dB = dev_upload(B, n * sizeof *B);
  float **dC = dev_upload(C, n * sizeof *C);
  nvtxRangePushA("grouped");
  CK(cublasSgemmGroupedBatched(h, ta, ta, ms, dims, dims, al, (const float *const *)dA, dims,
                               (const float *const *)dB, dims, be, dC, dims, groups, size));
  nvtxRangePop();
  double sum = sum32(c, 4 * N * N);
  nvtxRangePushA("split");
  for (int g = 0; g < groups; g++)
    CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, ms[g], N, N, &al[g], A[g], N, B[g], N, &be[g],
                      C[g], N));
  nvtxRangePop();
  printf("groupsplit%d checksum %.17g %.17g\n", groups, sum, sum32(c, 4 * N * N));
  free(A);
  free(B);
  free(C);
  free(al);
  free(be);
  free(ta);
  free(ms);
  free(dims);
  free(size);
  CK(cublasDestroy(h));
  return 0;
}

/* mpprof starts in the program's first hooked call, on that call's thread:
 * its start-up (settings, CUPTI's dlopen) must take little of that stack,
 * which may be small. The first call, cublasCreate, on a thread whose stack
 * is painted: the bytes it used, written to FILE ("-1" under ASan, which
 * moves frames off the stack). */
enum { PAINTED_STACK = 1 << 20 };

static void *first_stack_main(void *arg) {
  cublasHandle_t h;
  CK(cublasCreate(&h));
  CK(cublasDestroy(h));
  return arg;
}

static int mode_first_stack(const char *file) {
  unsigned char *stk = malloc(PAINTED_STACK);
  if (!stk) die("malloc", -1);
  memset(stk, 0xa5, PAINTED_STACK);
  pthread_attr_t at;
  pthread_t t;
  CK(pthread_attr_init(&at));
  CK(pthread_attr_setstack(&at, stk, PAINTED_STACK));
  CK(pthread_create(&t, &at, first_stack_main, NULL));
  pthread_join(t, NULL);
  pthread_attr_destroy(&at);
  size_t i = 0;
  while (i < PAINTED_STACK && stk[i] == 0xa5)
    i++;
  FILE *f = fopen(file, "w");
  if (!f) die("fopen", -1);
#ifdef __SANITIZE_ADDRESS__
  fputs("-1\n", f);
#else
  fprintf(f, "%zu\n", (size_t)PAINTED_STACK - i);
#endif
  fclose(f);
  free(stk);
  puts("first_stack done");
  return 0;
}

static int mode_fork(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 5);
  double s = gemmex(h, &m);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork", -1);
  if (pid == 0) {
    double c = gemmex(h, &m) + gemmex(h, &m);
    printf("child checksum %.17g\n", c);
    exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  s += gemmex(h, &m);
  printf("parent checksum %.17g child status %d\n", s, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  CK(cublasDestroy(h));
  return 0;
}

/* A launcher's worker: forked before the parent used CUDA at all. */
static int forkfresh(bool parent_exit_now) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork", -1);
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 5);
  if (pid == 0) {
    double c = gemmex(h, &m) + gemmex(h, &m) + gemmex(h, &m);
    printf("child checksum %.17g\n", c);
    CK(cublasDestroy(h));
    exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  double s = gemmex(h, &m);
  printf("parent checksum %.17g child status %d\n", s, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  CK(cublasDestroy(h));
  fflush(stdout);
  if (parent_exit_now) _exit(0);
  return 0;
}

static int mode_forkfresh(void) {
  return forkfresh(false);
}

static int mode_forkfresh_exit(void) {
  return forkfresh(true);
}

/* --- the mpprof protocol (NVTX domain "mpprof") --- */

static nvtxDomainHandle_t mpprof_domain;

static void mark(const char *message, bool is_double, double d, uint64_t n) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  a.payloadType = is_double ? NVTX_PAYLOAD_TYPE_DOUBLE : NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  if (is_double)
    a.payload.dValue = d;
  else
    a.payload.ullValue = n;
  nvtxDomainMarkEx(mpprof_domain, &a);
}

static void *mark_from_thread(void *arg) {
  (void)arg;
  mark("loss_scale", true, 1024, 0);
  mark("step", false, 0, 7);
  return NULL;
}

static int mode_lossscale(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 8);
  mpprof_domain = nvtxDomainCreateA("mpprof");
  pthread_t t;
  if (pthread_create(&t, NULL, mark_from_thread, NULL)) die("pthread_create", -1);
  pthread_join(t, NULL);
  nvtxRangePushA("t");
  nvtxRangePushA("main");
  double s = gemmex(h, &m);
  nvtxRangePop();
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork", -1);
  if (pid == 0) {
    mark("loss_scale", true, 0x1p20, 0);
    mark("step", false, 0, 8);
    mark("step_skipped", false, 0, 8);
    nvtxRangePushA("child");
    printf("child checksum %.17g\n", gemmex(h, &m));
    exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  nvtxRangePushA("main");
  s += gemmex(h, &m);
  printf("parent checksum %.17g child status %d\n", s, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  CK(cublasDestroy(h));
  return 0;
}

/* Every kind of NVTX call a C program makes (wide, Unicode, domains made from
 * wide names, start/end ranges and marks of each form) around GemmEx calls. */
static int mode_nvtxkinds(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 1);
  double s = 0;
  nvtxRangePushA("outer");
  nvtxRangePushW(L"wide_\u00e4");
  s += gemmex(h, &m);
  nvtxRangePop();
  s += gemmex(h, &m);
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof a);
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  const wchar_t *names[] = {L"\u6ce8\u610f", L"\u524d\u9988"};
  for (int i = 0; i < 2; i++) {
    a.message.unicode = names[i];
    nvtxRangePushEx(&a);
    s += gemmex(h, &m);
    nvtxRangePop();
  }
  nvtxDomainHandle_t wd = nvtxDomainCreateW(L"wdom");
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "wd";
  nvtxDomainRangePushEx(wd, &a);
  nvtxRangePop(); /* "outer", the default domain's range */
  s += gemmex(h, &m);
  nvtxDomainRangePop(wd);
  mpprof_domain = nvtxDomainCreateW(L"mpprof");
  mark("loss_scale", true, 64, 0);
  nvtxRangePushA("scaled");
  s += gemmex(h, &m);
  nvtxRangePop();
  a.message.ascii = "se";
  nvtxRangeId_t r[4] = {nvtxRangeStartA("se"), nvtxRangeStartW(L"se"), nvtxRangeStartEx(&a),
                        nvtxDomainRangeStartEx(wd, &a)};
  nvtxMarkA("m");
  nvtxMarkW(L"m");
  nvtxMarkEx(&a);
  nvtxDomainMarkEx(wd, &a);
  nvtxRangePushA("se");
  s += gemmex(h, &m);
  nvtxRangePop();
  for (int i = 0; i < 3; i++)
    nvtxRangeEnd(r[i]);
  nvtxDomainRangeEnd(wd, r[3]);
  printf("nvtxkinds checksum %.17g ids %llu %llu %llu %llu\n", s, (unsigned long long)r[0],
         (unsigned long long)r[1], (unsigned long long)r[2], (unsigned long long)r[3]);
  CK(cublasDestroy(h));
  return 0;
}

/* D (fp16) = A B for fp16 A, B; returns a checksum of D. */
static double gemm16(cublasHandle_t h, const void *a, const void *b, void *d) {
  const float one = 1, zero = 0;
  CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, a, CUDA_R_16F, N, b, CUDA_R_16F, N,
                  &zero, d, CUDA_R_16F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  uint16_t out[N * N];
  CK(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost));
  double sum = 0;
  for (int i = 0; i < N * N; i++)
    sum += out[i] * (double)(i % 13 + 1); /* the bits: Inf and NaN count too */
  return sum;
}

static int mode_overflow(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 9);
  uint16_t big[N * N];
  for (int i = 0; i < N * N; i++)
    big[i] = f2h((float)((i * 7 + 9) % 5 - 2) * 0x1p14f);
  void *a_big = dev_upload(big, sizeof big);
  void *d1 = dev_alloc(N * N * sizeof(uint16_t)), *d2 = dev_alloc(N * N * sizeof(uint16_t));
  mpprof_domain = nvtxDomainCreateA("mpprof");
  double s = 0;
  for (uint64_t step = 0; step < 5; step++) {
    mark("step", false, 0, step);
    nvtxRangePushA("l0");
    s += gemm16(h, m.a16, m.b16, m.c16);
    nvtxRangePop();
    nvtxRangePushA("l1");
    s += gemm16(h, step == 3 ? a_big : m.a16, m.b16, d1);
    nvtxRangePop();
    nvtxRangePushA("l2");
    s += gemm16(h, d1, m.b16, d2);
    nvtxRangePop();
  }
  printf("overflow checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

/* Shadow execution with nothing to measure: layer "allinf" multiplies an A
 * that is +Inf everywhere (every output's reference is inf or NaN), layer
 * "finite" the ordinary operands; two calls each. */
static int mode_infref(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 5);
  uint16_t inf[N * N];
  for (int i = 0; i < N * N; i++)
    inf[i] = 0x7c00; /* fp16 +Inf */
  void *a_inf = dev_upload(inf, sizeof inf), *d = dev_alloc(N * N * sizeof(uint16_t));
  double s = 0;
  for (int i = 0; i < 2; i++) {
    nvtxRangePushA("allinf");
    s += gemm16(h, a_inf, m.b16, d);
    nvtxRangePop();
    nvtxRangePushA("finite");
    s += gemm16(h, m.a16, m.b16, d);
    nvtxRangePop();
  }
  printf("infref checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

/* Shadow execution's edge cases, one layer each (tests/profiler/test_shadow_e2e.c):
 * "hgemm" and "gemmex16f": 2 x 2 products of k = 4096 fp16 ones in compute
 * type 16F (cublasHgemm; cublasGemmEx with CUBLAS_COMPUTE_16F), which a GPU
 * sums in fp16 (2048 + 1 rounds back to 2048); "kzero": a GemmEx with k = 0
 * (D = beta*C); "gelu": a cuBLASLt fp32 GEMM with the GELU epilogue whose
 * products run from -6.5 to 0.5 (fp32 GELU is exactly 0 below about -5.6). */
static int mode_shadowedge(void) {
  enum { K16 = 4096 };
  cublasHandle_t h;
  CK(cublasCreate(&h));
  static uint16_t ones[2 * K16];
  for (int i = 0; i < 2 * K16; i++)
    ones[i] = 0x3c00;
  void *a = dev_upload(ones, sizeof ones), *b = dev_upload(ones, sizeof ones);
  void *d = dev_alloc(4 * sizeof(uint16_t));
  uint16_t one16 = 0x3c00, zero16 = 0, out[4];
  double s = 0;
  nvtxRangePushA("hgemm");
  CK(cublasHgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, K16, &one16, a, K16, b, K16, &zero16, d, 2));
  nvtxRangePop();
  CK(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost));
  s += out[0];
  nvtxRangePushA("gemmex16f");
  CK(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 2, 2, K16, &one16, a, CUDA_R_16F, K16, b, CUDA_R_16F,
                  K16, &zero16, d, CUDA_R_16F, 2, CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT));
  nvtxRangePop();
  CK(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost));
  s += out[0];
  const float onef = 1, zerof = 0;
  nvtxRangePushA("kzero");
  CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 0, &onef, a, CUDA_R_16F, 2, b, CUDA_R_16F, 1,
                  &zerof, d, CUDA_R_16F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  nvtxRangePop();
  CK(cudaMemcpy(out, d, sizeof out, cudaMemcpyDeviceToHost));
  s += out[0];
  /* GELU: D (8 x 1) = x * 1, x from -6.5 by 1 */
  float x[8], y[8];
  for (int i = 0; i < 8; i++)
    x[i] = -6.5f + (float)i;
  void *dx = dev_upload(x, sizeof x), *done = dev_upload(&onef, sizeof onef),
       *dy = dev_alloc(sizeof y);
  cublasLtHandle_t lt;
  CK(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, ld;
  CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_GELU;
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, 8, 1, 8));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, 1, 1, 1));
  CK(cublasLtMatrixLayoutCreate(&ld, CUDA_R_32F, 8, 1, 8));
  nvtxRangePushA("gelu");
  CK(cublasLtMatmul(lt, desc, &onef, dx, la, done, lb, &zerof, dy, ld, dy, ld, NULL, NULL, 0,
                    NULL));
  nvtxRangePop();
  CK(cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost));
  for (int i = 0; i < 8; i++)
    s += y[i];
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(desc);
  CK(cublasLtDestroy(lt));
  printf("shadowedge checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

/* Grouped convolutions (mode groupconv G): one legacy fp32 cuDNN
 * convolution of G groups (C = K = 8 channels, N = 2, 6 x 6, 3 x 3 filter,
 * pad 1), forward, backward data and backward filter, in layers
 * "grouped/fwd", "grouped/bwd_data", "grouped/bwd_filter"; then the same
 * data as G one-group convolutions on each group's slice of the tensors
 * (strided views of x, y, dy, dx; the group's filters), in layers
 * "split/g<i>/<op>". The grouped outputs must equal the split ones bit for
 * bit, and both the direct double sums (else exit 1). Prints, per op and
 * group, what an independent check of shadow execution needs: the double
 * reference's sum of squares, largest magnitude and non-zero count
 * ("ref OP G SUMSQ MAXABS NONZERO"). */
enum { GC_N = 2, GC_C = 8, GC_HW = 6, GC_R = 3 };

static float gc_value(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return (float)((double)(*state >> 8) / (double)(1u << 24) * 2.0 - 1.0);
}

/* The double sum of output element o of op `kind` (0 fwd, 1 bwd data, 2
 * bwd filter) of group-count G, and the sum of its products' magnitudes. */
static double gc_direct(int kind, int groups, const float *x, const float *w, const float *dy,
                        size_t o, double *mag) {
  int cg = GC_C / groups, kg = GC_C / groups;
  double sum = 0;
  *mag = 0;
  if (kind == 0 || kind == 1) { /* o indexes y (fwd) or dx (bwd data): N, channel, h, w */
    int ww = (int)(o % GC_HW), hh = (int)(o / GC_HW % GC_HW),
        ch = (int)(o / (GC_HW * GC_HW) % GC_C), n = (int)(o / (GC_HW * GC_HW * GC_C));
    int grp = kind == 0 ? ch / kg : ch / cg;
    for (int j = 0; j < (kind == 0 ? cg : kg); j++)
      for (int a = 0; a < GC_R; a++)
        for (int b = 0; b < GC_R; b++) {
          int ih = kind == 0 ? hh + a - 1 : hh - a + 1, iw = kind == 0 ? ww + b - 1 : ww - b + 1;
          if (ih < 0 || ih >= GC_HW || iw < 0 || iw >= GC_HW) continue;
          int c = kind == 0 ? grp * cg + j : ch, k = kind == 0 ? ch : grp * kg + j;
          double in = kind == 0 ? x[((n * GC_C + c) * GC_HW + ih) * GC_HW + iw]
                                : dy[((n * GC_C + k) * GC_HW + ih) * GC_HW + iw];
          double p = in * w[((k * cg + c % cg) * GC_R + a) * GC_R + b];
          sum += p;
          *mag += fabs(p);
        }
    return sum;
  }
  int b = (int)(o % GC_R), a = (int)(o / GC_R % GC_R), cl = (int)(o / (GC_R * GC_R) % cg),
      k = (int)(o / (GC_R * GC_R * cg)), c = k / kg * cg + cl;
  for (int n = 0; n < GC_N; n++)
    for (int hh = 0; hh < GC_HW; hh++)
      for (int ww = 0; ww < GC_HW; ww++) {
        int ih = hh + a - 1, iw = ww + b - 1;
        if (ih < 0 || ih >= GC_HW || iw < 0 || iw >= GC_HW) continue;
        double p = (double)x[((n * GC_C + c) * GC_HW + ih) * GC_HW + iw] *
                   dy[((n * GC_C + k) * GC_HW + hh) * GC_HW + ww];
        sum += p;
        *mag += fabs(p);
      }
  return sum;
}

static void gc_tensor(cudnnTensorDescriptor_t d, int c, int c_total) {
  CK(cudnnSetTensor4dDescriptorEx(d, CUDNN_DATA_FLOAT, GC_N, c, GC_HW, GC_HW,
                                  c_total * GC_HW * GC_HW, GC_HW * GC_HW, GC_HW, 1));
}

/* One convolution of `groups` groups: out = op(in, other) as conv_train's
 * legacy_execute; x, y: descriptors of the tensors as seen (a group's slice
 * for a split one), wd the filter's, cd with the group count set. */
static void gc_run(cudnnHandle_t h, int kind, cudnnTensorDescriptor_t xd,
                   cudnnFilterDescriptor_t wd, cudnnConvolutionDescriptor_t cd,
                   cudnnTensorDescriptor_t yd, const void *in, const void *other, void *out,
                   void *ws, size_t ws_size) {
  const float one = 1, zero = 0;
  if (kind == 0)
    CK(cudnnConvolutionForward(h, &one, xd, in, wd, other, cd,
                               CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, ws, ws_size, &zero,
                               yd, out));
  else if (kind == 1)
    CK(cudnnConvolutionBackwardData(h, &one, wd, other, yd, in, cd,
                                    CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, ws, ws_size, &zero, xd,
                                    out));
  else
    CK(cudnnConvolutionBackwardFilter(h, &one, xd, in, yd, other, cd,
                                      CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, ws, ws_size, &zero, wd,
                                      out));
}

static int mode_groupconv(int groups) {
  if (groups < 1 || GC_C % groups) {
    fprintf(stderr, "mpp_testprog groupconv: G must divide %d\n", GC_C);
    return 2;
  }
  static const char *const ops[3] = {"fwd", "bwd_data", "bwd_filter"};
  int cg = GC_C / groups;
  size_t nt = (size_t)GC_N * GC_C * GC_HW * GC_HW, nw = (size_t)GC_C * cg * GC_R * GC_R;
  float *x = malloc(nt * 4), *dy = malloc(nt * 4), *w = malloc(nw * 4);
  float *got = malloc(nt * 4), *split = malloc(nt * 4);
  if (!x || !dy || !w || !got || !split) die("malloc", 0);
  uint32_t st = 12345u + (uint32_t)groups;
  for (size_t i = 0; i < nt; i++)
    x[i] = gc_value(&st);
  for (size_t i = 0; i < nt; i++)
    dy[i] = gc_value(&st);
  for (size_t i = 0; i < nw; i++)
    w[i] = gc_value(&st) * (float)(1 + i / (nw / (size_t)groups)); /* groups of other sizes */
  void *dx_ = dev_upload(x, nt * 4), *ddy = dev_upload(dy, nt * 4), *dw_ = dev_upload(w, nw * 4);
  void *dout = dev_alloc(nt * 4), *dsplit = dev_alloc(nt * 4), *ws = dev_alloc(1 << 20);
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  cudnnTensorDescriptor_t xd, yd, xs, ys;
  cudnnFilterDescriptor_t wd, wsd;
  cudnnConvolutionDescriptor_t cd, csd;
  CK(cudnnCreateTensorDescriptor(&xd));
  CK(cudnnCreateTensorDescriptor(&yd));
  CK(cudnnCreateTensorDescriptor(&xs));
  CK(cudnnCreateTensorDescriptor(&ys));
  CK(cudnnCreateFilterDescriptor(&wd));
  CK(cudnnCreateFilterDescriptor(&wsd));
  CK(cudnnCreateConvolutionDescriptor(&cd));
  CK(cudnnCreateConvolutionDescriptor(&csd));
  gc_tensor(xd, GC_C, GC_C);
  gc_tensor(yd, GC_C, GC_C);
  gc_tensor(xs, cg, GC_C); /* one group's channels of x, y, dy, dx */
  gc_tensor(ys, cg, GC_C);
  CK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, GC_C, cg, GC_R, GC_R));
  CK(cudnnSetFilter4dDescriptor(wsd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, cg, cg, GC_R, GC_R));
  cudnnConvolutionDescriptor_t both[2] = {cd, csd};
  for (int i = 0; i < 2; i++)
    CK(cudnnSetConvolution2dDescriptor(both[i], 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                       CUDNN_DATA_FLOAT));
  CK(cudnnSetConvolutionGroupCount(cd, groups));
  size_t slice = (size_t)cg * GC_HW * GC_HW, wslice = (size_t)cg * cg * GC_R * GC_R;
  uint64_t hash = 0xcbf29ce484222325ull; /* FNV-1a of every output's bytes */
  for (int kind = 0; kind < 3; kind++) {
    size_t n_out = kind == 2 ? nw : nt;
    /* in, other: fwd (x, w), bwd data (dy, w), bwd filter (x, dy) */
    const char *in = kind == 1 ? ddy : dx_;
    const char *other = kind == 2 ? ddy : dw_;
    char name[64];
    snprintf(name, sizeof name, "grouped/%s", ops[kind]);
    nvtxRangePushA(name);
    gc_run(h, kind, xd, wd, cd, yd, in, other, dout, ws, 1 << 20);
    nvtxRangePop();
    for (int g = 0; g < groups; g++) {
      /* group g: channels g*cg.. of x, y, dy, dx; filters g*cg.. of w, dw */
      const char *gin = in + g * slice * 4;
      const char *gother = other + (kind == 2 ? g * slice : g * wslice) * 4;
      char *gout = (char *)dsplit + (kind == 2 ? g * wslice : g * slice) * 4;
      snprintf(name, sizeof name, "split/g%d/%s", g, ops[kind]);
      nvtxRangePushA(name);
      gc_run(h, kind, xs, wsd, csd, ys, gin, gother, gout, ws, 1 << 20);
      nvtxRangePop();
    }
    CK(cudaMemcpy(got, dout, n_out * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(split, dsplit, n_out * 4, cudaMemcpyDeviceToHost));
    if (memcmp(got, split, n_out * 4)) {
      fprintf(stderr, "groupconv: %s: grouped != split\n", ops[kind]);
      return 1;
    }
    for (size_t i = 0; i < n_out * 4; i++)
      hash = (hash ^ ((const unsigned char *)got)[i]) * 0x100000001b3ull;
    for (int g = 0; g < groups; g++) {
      double sumsq = 0, maxabs = 0;
      long nonzero = 0;
      for (size_t o = 0; o < n_out; o++) {
        /* which group o belongs to: its channel (fwd, bwd data) or filter (bwd filter) */
        size_t ch = kind == 2 ? o / (size_t)(cg * GC_R * GC_R) : o / (size_t)(GC_HW * GC_HW) % GC_C;
        if ((int)(ch / (size_t)cg) != g) continue;
        double mag, ref = gc_direct(kind, groups, x, w, dy, o, &mag);
        if (!(fabs(got[o] - ref) <= 0x1p-20 * mag + 0x1p-23 * fabs(ref))) {
          fprintf(stderr, "groupconv: %s element %zu = %.9g, direct %.9g\n", ops[kind], o, got[o],
                  ref);
          return 1;
        }
        sumsq += ref * ref;
        if (fabs(ref) > maxabs) maxabs = fabs(ref);
        nonzero += ref != 0;
      }
      printf("ref %s %d %.17g %.17g %ld\n", ops[kind], g, sumsq, maxabs, nonzero);
    }
  }
  printf("groupconv %d outputs fnv1a %016llx\n", groups, (unsigned long long)hash);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(xs);
  cudnnDestroyTensorDescriptor(ys);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyFilterDescriptor(wsd);
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroyConvolutionDescriptor(csd);
  CK(cudnnDestroy(h));
  free(x);
  free(dy);
  free(w);
  free(got);
  free(split);
  return 0;
}

static int mode_forkidle(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 8);
  double s = gemmex(h, &m);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) die("fork", -1);
  if (pid == 0) {
    printf("worker done\n");
    exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  printf("forkidle checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

static int mode_forkloop(int n) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 8);
  double s = gemmex(h, &m);
  fflush(stdout);
  for (int i = 0; i < n; i++) {
    pid_t pid = fork();
    if (pid < 0) die("fork", -1);
    if (pid == 0) _exit(0);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) die("child", -1);
  }
  printf("forkloop %d checksum %.17g\n", n, s);
  CK(cublasDestroy(h));
  return 0;
}

/* A variant pack's attributes set on another thread (pack_thread): made
 * there, or only given its pointers and finalized there. */
typedef struct pack_job {
  cudnnBackendDescriptor_t vp; /* NULL: made by the thread */
  const int64_t *uids;
  void **ptrs, *ws;
} pack_job;

static void pack_set(cudnnBackendDescriptor_t vp, const int64_t *uids, void **ptrs, void *ws) {
  if (uids)
    CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
  CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                              ptrs));
  CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
}

/* A cuDNN backend graph's plain matmul (mode bematmul), fp32, executed
 * twice in layer "bemm": A [2, 5, 40] row-major, B [1, 40, 3] stored
 * column by column (strides 120, 1, 40) and broadcast over the batch, C
 * [2, 5, 3], on engine 1 (simcuda's fp32 CUDA-core one; engine 0 computes
 * in TF32); then the same product as cublasSgemmStridedBatched (op(A) =
 * A^T of the stored K x M, B as stored, B's batch stride 0) twice in layer
 * "cublas". Prints a checksum of each's outputs; exits 1 unless both
 * give the same C. */
static int mode_bematmul(void) {
  enum { B = 2, M = 5, K = 40, NN = 3 };
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  const int64_t ad[3] = {B, M, K}, as[3] = {M * K, K, 1};
  const int64_t bd[3] = {1, K, NN}, bs[3] = {K * NN, 1, K};
  const int64_t cd[3] = {B, M, NN}, cs[3] = {M * NN, NN, 1};
  cudnnBackendDescriptor_t a = be_tensor_strided('a', CUDNN_DATA_FLOAT, 3, ad, as),
                           b = be_tensor_strided('b', CUDNN_DATA_FLOAT, 3, bd, bs),
                           c = be_tensor_strided('c', CUDNN_DATA_FLOAT, 3, cd, cs);
  cudnnBackendDescriptor_t mm, op = be_matmul(a, b, c, NULL, CUDNN_DATA_FLOAT, &mm);
  cudnnBackendDescriptor_t keep[4];
  /* engine 1, simcuda's CUDA-core one: fp32, as the cuBLAS call below */
  cudnnBackendDescriptor_t plan = be_plan(h, 1, &op, 1, keep);
  static float ha[B * M * K], hb[K * NN], hc[B * M * NN];
  uint32_t st = 777u;
  for (int i = 0; i < B * M * K; i++)
    ha[i] = gc_value(&st) * (i % 7 == 0 ? 300.0f : 1.0f); /* some beyond fp16's fine range */
  for (int i = 0; i < K * NN; i++)
    hb[i] = gc_value(&st);
  void *da = dev_upload(ha, sizeof ha), *db = dev_upload(hb, sizeof hb);
  void *dc = dev_alloc(sizeof hc), *dc2 = dev_alloc(sizeof hc), *ws = NULL;
  double s = 0;
  for (int call = 0; call < 2; call++) {
    int64_t uids[3] = {'a', 'b', 'c'};
    void *ptrs[3] = {da, db, dc};
    cudnnBackendDescriptor_t vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack_set(vp, uids, ptrs, ws);
    CK(cudnnBackendFinalize(vp));
    nvtxRangePushA("bemm");
    CK(cudnnBackendExecute(h, plan, vp));
    nvtxRangePop();
    cudnnBackendDestroyDescriptor(vp);
    CK(cudaMemcpy(hc, dc, sizeof hc, cudaMemcpyDeviceToHost));
    for (int i = 0; i < B * M * NN; i++)
      s += hc[i] * (i % 13 + 1);
  }
  printf("bematmul backend checksum %.17g\n", s);
  cublasHandle_t bh;
  CK(cublasCreate(&bh));
  const float one = 1, zero = 0;
  s = 0;
  for (int call = 0; call < 2; call++) {
    nvtxRangePushA("cublas");
    CK(cublasSgemmStridedBatched(bh, CUBLAS_OP_T, CUBLAS_OP_N, M, NN, K, &one, da, K, M * K, db, K,
                                 0, &zero, dc2, M, M * NN, B));
    nvtxRangePop();
    CK(cudaMemcpy(hc, dc2, sizeof hc, cudaMemcpyDeviceToHost));
    for (int i = 0; i < B * M * NN; i++)
      s += hc[i] * (i % 13 + 1);
  }
  printf("bematmul cublas checksum %.17g\n", s);
  /* the same product: C row-major, cuBLAS's column-major */
  static float hc1[B * M * NN];
  CK(cudaMemcpy(hc1, dc, sizeof hc1, cudaMemcpyDeviceToHost));
  for (int bi = 0; bi < B; bi++)
    for (int i = 0; i < M; i++)
      for (int j = 0; j < NN; j++) {
        float x = hc1[(bi * M + i) * NN + j], y = hc[bi * M * NN + i + j * M];
        if (!(fabsf(x - y) <= 1e-5f * fabsf(y) + 1e-5f)) {
          fprintf(stderr, "bematmul: C[%d][%d][%d] = %.9g, cuBLAS %.9g\n", bi, i, j, x, y);
          return 1;
        }
      }
  CK(cublasDestroy(bh));
  cudnnBackendDescriptor_t all[] = {keep[3], keep[2], keep[1], keep[0], op, mm, a, b, c};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cudnnBackendDestroyDescriptor(all[i]);
  CK(cudnnDestroy(h));
  return 0;
}

/* 3-D convolutions (mode conv3d): legacy fp32 cuDNN convolutions of 2
 * groups on 5-D tensors through the Nd descriptors, forward, backward data
 * and backward filter (gc_run), each checked against a direct double loop
 * (else exit 1):
 *   "conv3d/<op>"     N 2, C 4, 5 x 6 x 5 (D x H x W), K 4 filters of 3 x 3 x 2,
 *                     padding 1 1 0, stride 2 1 1, dilation 1 1 2, NCDHW,
 *                     cross-correlation
 *   "backend3d/<op>"  conv3d's, on the same data, through cuDNN backend graphs
 *   "flat3d/<op>"     one of height 1 (1-high filters): D 7, W 6, T 3, S 2,
 *                     padding 2 0 1, stride 1 1 2, dilation 2 1 1, NDHWC
 *                     tensors and filter, convolution mode
 *   "flat2d/<op>"     the same data as a 2-D convolution over (D, W) (NHWC):
 *                     its implicit GEMMs are flat3d's, element for element
 * Prints an FNV-1a hash of every output. */
typedef struct c3_conv {
  int nsp, nhwc, mode;
  int x[3], f[3], pad[3], stride[3], dil[3]; /* spatial: depth first */
  int y[3];                                  /* the output's, computed */
} c3_conv;

enum { C3_N = 2, C3_C = 4, C3_K = 4, C3_G = 2 };

/* Dims of a tensor of `ch` channels and spatial size sp[0..nsp) and its
 * strides (packed NC[D]HW, or channels innermost); returns its elements. */
static size_t c3_layout(const c3_conv *cv, int outer, int ch, const int *sp, int dims[5],
                        int strides[5]) {
  int nd = cv->nsp + 2;
  dims[0] = outer, dims[1] = ch;
  for (int i = 0; i < cv->nsp; i++)
    dims[2 + i] = sp[i];
  int s = 1;
  if (cv->nhwc) {
    strides[1] = 1, s = ch;
    for (int i = nd - 1; i >= 2; i--)
      strides[i] = s, s *= dims[i];
    strides[0] = s, s *= outer;
  } else {
    for (int i = nd - 1; i >= 0; i--)
      strides[i] = s, s *= dims[i];
  }
  return (size_t)s;
}

/* Element offset of (a, b, spatial index i[]) in a tensor laid out as c3_layout's. */
static size_t c3_at(const c3_conv *cv, const int strides[5], int a, int b, const int *i) {
  size_t o = (size_t)a * (size_t)strides[0] + (size_t)b * (size_t)strides[1];
  for (int d = 0; d < cv->nsp; d++)
    o += (size_t)i[d] * (size_t)strides[2 + d];
  return o;
}

/* The direct double sums of all three ops at once (ref[kind], with the sums
 * of the products' magnitudes in mag[kind]), over every (n, k, c, output
 * position, tap) whose input position lies inside x. */
static void c3_direct(const c3_conv *cv, const int xs[5], const int ws[5], const int ys[5],
                      const float *x, const float *w, const float *dy, double *ref[3],
                      double *mag[3]) {
  int cg = C3_C / C3_G, kg = C3_K / C3_G, no = 1, nt = 1;
  for (int d = 0; d < cv->nsp; d++)
    no *= cv->y[d], nt *= cv->f[d];
  for (int n = 0; n < C3_N; n++)
    for (int k = 0; k < C3_K; k++)
      for (int c = 0; c < cg; c++)
        for (int po = 0; po < no; po++)
          for (int pt = 0; pt < nt; pt++) {
            int o[3], t[3], i[3], ft[3], ro = po, rt = pt;
            bool inside = true;
            for (int d = cv->nsp - 1; d >= 0; d--) {
              o[d] = ro % cv->y[d], ro /= cv->y[d];
              t[d] = rt % cv->f[d], rt /= cv->f[d];
              i[d] = o[d] * cv->stride[d] - cv->pad[d] + t[d] * cv->dil[d];
              ft[d] = cv->mode == CUDNN_CONVOLUTION ? cv->f[d] - 1 - t[d] : t[d];
              inside = inside && i[d] >= 0 && i[d] < cv->x[d];
            }
            if (!inside) continue;
            int ca = k / kg * cg + c; /* x's channel */
            size_t xo = c3_at(cv, xs, n, ca, i), wo = c3_at(cv, ws, k, c, ft),
                   yo = c3_at(cv, ys, n, k, o);
            double p[3] = {(double)x[xo] * w[wo], (double)dy[yo] * w[wo], (double)x[xo] * dy[yo]};
            size_t at[3] = {yo, xo, wo};
            for (int kind = 0; kind < 3; kind++) {
              ref[kind][at[kind]] += p[kind];
              mag[kind][at[kind]] += fabs(p[kind]);
            }
          }
}

/* cv's op `kind` (gc_run's in, other, out) through a cuDNN backend graph of
 * one convolution operation on engine 1 (simcuda's fp32 CUDA-core one), its
 * tensors x, w, y of dims[i] and strides[i] (the group count: x's channels
 * over w's). */
static void c3_backend(cudnnHandle_t h, const c3_conv *cv, int kind, int dims[3][5],
                       int strides[3][5], void *in, void *other, void *out, void *ws) {
  static const cudnnBackendDescriptorType_t types[3] = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR};
  /* x, w, y, the convolution, alpha, beta */
  static const cudnnBackendAttributeName_t names[3][6] = {
      {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA},
      {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA}};
  int nd = cv->nsp + 2;
  int64_t uids[3] = {'x', 'w', 'y'};
  cudnnBackendDescriptor_t t[3];
  for (int i = 0; i < 3; i++) {
    int64_t d[5], st[5];
    for (int j = 0; j < nd; j++)
      d[j] = dims[i][j], st[j] = strides[i][j];
    t[i] = be_tensor_strided(uids[i], CUDNN_DATA_FLOAT, nd, d, st);
  }
  int64_t pad[3], stride[3], dil[3];
  for (int i = 0; i < cv->nsp; i++)
    pad[i] = cv->pad[i], stride[i] = cv->stride[i], dil[i] = cv->dil[i];
  cudnnBackendDescriptor_t conv =
      be_conv_nd(cv->nsp, (cudnnConvolutionMode_t)cv->mode, pad, stride, dil);
  float alpha = 1, beta = 0;
  cudnnBackendDescriptor_t op = be_new(types[kind]);
  for (int i = 0; i < 3; i++)
    CK(cudnnBackendSetAttribute(op, names[kind][i], BE_D, 1, &t[i]));
  CK(cudnnBackendSetAttribute(op, names[kind][3], BE_D, 1, &conv));
  CK(cudnnBackendSetAttribute(op, names[kind][4], CUDNN_TYPE_FLOAT, 1, &alpha));
  CK(cudnnBackendSetAttribute(op, names[kind][5], CUDNN_TYPE_FLOAT, 1, &beta));
  CK(cudnnBackendFinalize(op));
  cudnnBackendDescriptor_t keep[4];
  cudnnBackendDescriptor_t plan = be_plan(h, 1, &op, 1, keep);
  /* x, w, y: fwd (in, other, out), bwd data (out, other, in), bwd filter (in, out, other) */
  void *ptrs[3] = {kind == 1 ? out : in, kind == 2 ? out : other,
                   kind == 0   ? out
                   : kind == 1 ? in
                               : other};
  cudnnBackendDescriptor_t vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack_set(vp, uids, ptrs, ws);
  CK(cudnnBackendFinalize(vp));
  CK(cudnnBackendExecute(h, plan, vp));
  cudnnBackendDescriptor_t all[] = {vp, keep[3], keep[2], keep[1], keep[0],
                                    op, conv,    t[0],    t[1],    t[2]};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cudnnBackendDestroyDescriptor(all[i]);
}

/* Mode convbiasact: cudnnConvolutionBiasActivationForward on fp32 NHWC
 * tensors of one image with a 1 x 1 filter is a GEMM: per group g,
 * y[j][g*KG + i] = act(sum_c w[g*KG + i][c] x[j][g*CG + c] + bias[g*KG + i]).
 * The same data runs both ways: "cba/fused" (ReLU, 2 groups; z at alpha2 0)
 * and "cba/gemm" (cublasLtMatmul, RELU_BIAS, 2 strided batches, the bias
 * KG apart), then "cba/fused_id" (identity, one group,
 * IMPLICIT_PRECOMP_GEMM) and "cba/gemm_id" (BIAS). Each pair's outputs
 * must agree to 1e-5; their checksums are printed. */
enum { CBA_C = 24, CBA_K = 16, CBA_H = 4, CBA_W = 5 };

static int cba_pair(cudnnHandle_t h, cublasLtHandle_t lt, int groups, bool relu, const void *dx,
                    const void *dw, const void *dbias, float *got, float *want) {
  enum { NP = CBA_H * CBA_W };
  int cg = CBA_C / groups, kg = CBA_K / groups;
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnActivationDescriptor_t ad;
  CK(cudnnCreateTensorDescriptor(&xd));
  CK(cudnnCreateTensorDescriptor(&yd));
  CK(cudnnCreateTensorDescriptor(&bd));
  CK(cudnnCreateFilterDescriptor(&wd));
  CK(cudnnCreateConvolutionDescriptor(&cd));
  CK(cudnnCreateActivationDescriptor(&ad));
  CK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, CBA_C, CBA_H, CBA_W));
  CK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, CBA_K, CBA_H, CBA_W));
  CK(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, CBA_K, 1, 1));
  CK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CBA_K, cg, 1, 1));
  CK(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                     CUDNN_DATA_FLOAT));
  CK(cudnnSetConvolutionGroupCount(cd, groups));
  CK(cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH)); /* no TF32: the GEMM's fp32 */
  CK(cudnnSetActivationDescriptor(ad, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                  CUDNN_PROPAGATE_NAN, 0));
  void *dy = dev_alloc(NP * CBA_K * 4), *dd = dev_alloc(NP * CBA_K * 4), *ws = dev_alloc(1 << 16);
  const float one = 1, zero = 0;
  nvtxRangePushA(relu ? "fused" : "fused_id");
  CK(cudnnConvolutionBiasActivationForward(h, &one, xd, dx, wd, dw, cd,
                                           CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, ws,
                                           1 << 16, &zero, yd, dy, bd, dbias, ad, yd, dy));
  nvtxRangePop();
  /* the GEMM: A = w stored C/G x K (transposed), B = x stored C x NP (a
   * group's rows at an offset), D = y stored K x NP, batch g KG rows on */
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lo;
  CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtEpilogue_t epi = relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
  cublasOperation_t t = CUBLAS_OP_T;
  int64_t bias_stride = kg;
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_stride,
                                    sizeof bias_stride));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, cg, kg, cg));
  CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, cg, NP, CBA_C));
  CK(cublasLtMatrixLayoutCreate(&lo, CUDA_R_32F, kg, NP, CBA_K));
  cublasLtMatrixLayout_t lays[3] = {la, lb, lo};
  int64_t offs[3] = {(int64_t)kg * cg, cg, kg};
  int32_t batch = groups;
  for (int i = 0; i < 3; i++) {
    CK(cublasLtMatrixLayoutSetAttribute(lays[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                        sizeof batch));
    CK(cublasLtMatrixLayoutSetAttribute(lays[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                        &offs[i], sizeof offs[i]));
  }
  nvtxRangePushA(relu ? "gemm" : "gemm_id");
  CK(cublasLtMatmul(lt, desc, &one, dw, la, dx, lb, &zero, dd, lo, dd, lo, NULL, NULL, 0, 0));
  nvtxRangePop();
  CK(cudaMemcpy(got, dy, NP * CBA_K * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(want, dd, NP * CBA_K * 4, cudaMemcpyDeviceToHost));
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(lo);
  cublasLtMatmulDescDestroy(desc);
  cudnnDestroyActivationDescriptor(ad);
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyTensorDescriptor(bd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(xd);
  int clipped = 0;
  double sum = 0;
  for (int i = 0; i < NP * CBA_K; i++) {
    sum += got[i];
    if (fabsf(got[i] - want[i]) > 1e-5f * (1 + fabsf(want[i]))) {
      fprintf(stderr, "convbiasact: %s element %d = %.9g, the GEMM's %.9g\n",
              relu ? "relu" : "identity", i, got[i], want[i]);
      return 1;
    }
    clipped += got[i] == 0;
  }
  printf("convbiasact %s checksum %.17g zeros %d\n", relu ? "relu" : "identity", sum, clipped);
  return 0;
}

static int mode_convbiasact(void) {
  float x[CBA_H * CBA_W * CBA_C], w[CBA_K * CBA_C], bias[CBA_K];
  float got[CBA_H * CBA_W * CBA_K], want[CBA_H * CBA_W * CBA_K];
  uint32_t st = 4242u;
  for (size_t i = 0; i < sizeof x / 4; i++)
    x[i] = gc_value(&st);
  for (size_t i = 0; i < sizeof w / 4; i++)
    w[i] = gc_value(&st);
  for (size_t i = 0; i < sizeof bias / 4; i++)
    bias[i] = 2 * gc_value(&st);
  void *dx = dev_upload(x, sizeof x), *dw = dev_upload(w, sizeof w),
       *db = dev_upload(bias, sizeof bias);
  cudnnHandle_t h;
  cublasLtHandle_t lt;
  CK(cudnnCreate(&h));
  CK(cublasLtCreate(&lt));
  nvtxRangePushA("cba");
  /* w: CBA_K filters of C/G channels each, as each pair reads it */
  int rc = cba_pair(h, lt, 2, true, dx, dw, db, got, want);
  if (!rc) rc = cba_pair(h, lt, 1, false, dx, dw, db, got, want);
  nvtxRangePop();
  cublasLtDestroy(lt);
  cudnnDestroy(h);
  return rc;
}

/* Runs cv's three ops in layers "<name>/<op>" on fresh data (seed), checks
 * them against c3_direct; their outputs in out[kind] (malloc'ed). be_name:
 * each op then runs again through a backend graph (c3_backend) on the same
 * data, in "<be_name>/<op>", checked likewise. */
static int c3_run(cudnnHandle_t h, const char *name, const char *be_name, c3_conv *cv,
                  uint32_t seed, float *out[3], size_t n_out[3]) {
  static const char *const ops[3] = {"fwd", "bwd_data", "bwd_filter"};
  int nd = cv->nsp + 2;
  for (int d = 0; d < cv->nsp; d++)
    cv->y[d] = (cv->x[d] + 2 * cv->pad[d] - cv->dil[d] * (cv->f[d] - 1) - 1) / cv->stride[d] + 1;
  int dims[3][5], strides[3][5]; /* x, w, y */
  int *xd_ = dims[0], *xs = strides[0], *wd_ = dims[1], *ws = strides[1], *yd_ = dims[2],
      *ys = strides[2];
  size_t nx = c3_layout(cv, C3_N, C3_C, cv->x, xd_, xs),
         nw = c3_layout(cv, C3_K, C3_C / C3_G, cv->f, wd_, ws),
         ny = c3_layout(cv, C3_N, C3_K, cv->y, yd_, ys);
  float *x = malloc(nx * 4), *w = malloc(nw * 4), *dy = malloc(ny * 4);
  double *ref[3], *mag[3];
  n_out[0] = ny, n_out[1] = nx, n_out[2] = nw;
  for (int kind = 0; kind < 3; kind++) {
    ref[kind] = calloc(n_out[kind], sizeof(double));
    mag[kind] = calloc(n_out[kind], sizeof(double));
    out[kind] = malloc(n_out[kind] * 4);
    if (!ref[kind] || !mag[kind] || !out[kind]) die("malloc", 0);
  }
  if (!x || !w || !dy) die("malloc", 0);
  for (size_t i = 0; i < nx; i++)
    x[i] = gc_value(&seed);
  for (size_t i = 0; i < nw; i++)
    w[i] = gc_value(&seed);
  for (size_t i = 0; i < ny; i++)
    dy[i] = gc_value(&seed);
  c3_direct(cv, xs, ws, ys, x, w, dy, ref, mag);
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  CK(cudnnCreateTensorDescriptor(&xd));
  CK(cudnnCreateTensorDescriptor(&yd));
  CK(cudnnCreateFilterDescriptor(&wd));
  CK(cudnnCreateConvolutionDescriptor(&cd));
  CK(cudnnSetTensorNdDescriptor(xd, CUDNN_DATA_FLOAT, nd, xd_, xs));
  CK(cudnnSetTensorNdDescriptor(yd, CUDNN_DATA_FLOAT, nd, yd_, ys));
  CK(cudnnSetFilterNdDescriptor(wd, CUDNN_DATA_FLOAT,
                                cv->nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, nd, wd_));
  CK(cudnnSetConvolutionNdDescriptor(cd, cv->nsp, cv->pad, cv->stride, cv->dil,
                                     (cudnnConvolutionMode_t)cv->mode, CUDNN_DATA_FLOAT));
  CK(cudnnSetConvolutionGroupCount(cd, C3_G));
  void *dx_ = dev_upload(x, nx * 4), *dw_ = dev_upload(w, nw * 4), *ddy = dev_upload(dy, ny * 4);
  void *dout = dev_alloc((nx > nw ? (nx > ny ? nx : ny) : (nw > ny ? nw : ny)) * 4);
  void *wsp = dev_alloc(1 << 20);
  int rc = 0;
  for (int kind = 0; kind < 3; kind++)
    for (int be = 0; be < (be_name ? 2 : 1); be++) {
      char layer[64];
      snprintf(layer, sizeof layer, "%s/%s", be ? be_name : name, ops[kind]);
      void *in = kind == 1 ? ddy : dx_, *other = kind == 2 ? ddy : dw_;
      nvtxRangePushA(layer);
      if (be)
        c3_backend(h, cv, kind, dims, strides, in, other, dout, wsp);
      else
        gc_run(h, kind, xd, wd, cd, yd, in, other, dout, wsp, 1 << 20);
      nvtxRangePop();
      CK(cudaMemcpy(out[kind], dout, n_out[kind] * 4, cudaMemcpyDeviceToHost));
      for (size_t o = 0; o < n_out[kind] && !rc; o++)
        if (!(fabs(out[kind][o] - ref[kind][o]) <= 0x1p-20 * mag[kind][o])) {
          fprintf(stderr, "conv3d: %s element %zu = %.9g, direct %.9g\n", layer, o, out[kind][o],
                  ref[kind][o]);
          rc = 1;
        }
    }
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyConvolutionDescriptor(cd);
  for (int kind = 0; kind < 3; kind++)
    free(ref[kind]), free(mag[kind]);
  free(x), free(w), free(dy);
  return rc;
}

static int mode_conv3d(void) {
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  c3_conv deep = {
      3, 0, CUDNN_CROSS_CORRELATION, {5, 6, 5}, {3, 3, 2}, {1, 1, 0}, {2, 1, 1}, {1, 1, 2}, {0}};
  c3_conv flat3 = {3,         1,         CUDNN_CONVOLUTION, {7, 1, 6}, {3, 1, 2},
                   {2, 0, 1}, {1, 1, 2}, {2, 1, 1},         {0}};
  c3_conv flat2 = {2, 1, CUDNN_CONVOLUTION, {7, 6}, {3, 2}, {2, 1}, {1, 2}, {2, 1}, {0}};
  float *out[3][3];
  size_t n_out[3][3];
  int rc = c3_run(h, "conv3d", "backend3d", &deep, 777u, out[0], n_out[0]);
  rc = rc ? rc : c3_run(h, "flat3d", NULL, &flat3, 999u, out[1], n_out[1]);
  rc = rc ? rc : c3_run(h, "flat2d", NULL, &flat2, 999u, out[2], n_out[2]);
  if (rc) return rc;
  uint64_t hash = 0xcbf29ce484222325ull; /* FNV-1a of every output's bytes */
  for (int c = 0; c < 3; c++)
    for (int kind = 0; kind < 3; kind++) {
      for (size_t i = 0; i < n_out[c][kind] * 4; i++)
        hash = (hash ^ ((const unsigned char *)out[c][kind])[i]) * 0x100000001b3ull;
      free(out[c][kind]);
    }
  printf("conv3d outputs fnv1a %016llx\n", (unsigned long long)hash);
  CK(cudnnDestroy(h));
  return 0;
}

static void *pack_thread(void *arg) {
  pack_job *j = arg;
  if (!j->vp) {
    j->vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    pack_set(j->vp, j->uids, j->ptrs, j->ws);
  } else {
    pack_set(j->vp, NULL, j->ptrs, j->ws);
  }
  CK(cudnnBackendFinalize(j->vp));
  return NULL;
}

static cudnnBackendDescriptor_t pack_on_thread(cudnnBackendDescriptor_t vp, const int64_t *uids,
                                               void **ptrs, void *ws) {
  pack_job j = {.vp = vp, .uids = uids, .ptrs = ptrs, .ws = ws};
  pthread_t t;
  CK(pthread_create(&t, NULL, pack_thread, &j));
  pthread_join(t, NULL);
  return j.vp;
}

/* A convolution graph as cudnn-frontend builds it, up to its engine
 * configs: x [1, 4, hw, hw] (uid 'x') with w [4, 4, 3, 3] ('w'), padding 1,
 * into y ('y'), fp32; its tensor descriptors dropped once the graph exists. */
typedef struct conv_chain {
  cudnnBackendDescriptor_t conv, op, graph, heur, cfg[8];
  int64_t count; /* engine configs */
} conv_chain;

static void conv_chain_build(cudnnHandle_t h, int64_t hw, conv_chain *c) {
  const cudnnBackendAttributeType_t D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  int64_t xd[4] = {1, 4, hw, hw}, yd[4] = {1, 4, hw, hw}, wd[4] = {4, 4, 3, 3};
  cudnnBackendDescriptor_t x = be_tensor('x', CUDNN_DATA_FLOAT, 4, xd),
                           y = be_tensor('y', CUDNN_DATA_FLOAT, 4, yd),
                           w = be_tensor('w', CUDNN_DATA_FLOAT, 4, wd);
  cudnnBackendDescriptor_t conv = c->conv = be_conv(1);
  float alpha = 1, beta = 0;
  cudnnBackendDescriptor_t op = c->op =
      be_new(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D, 1, &x));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D, 1, &w));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D, 1, &y));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D, 1, &conv));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT,
                              1, &alpha));
  CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT,
                              1, &beta));
  CK(cudnnBackendFinalize(op));
  cudnnBackendDescriptor_t graph = c->graph = be_new(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, 1, &op));
  CK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CK(cudnnBackendFinalize(graph));
  /* Frontends drop the tensor descriptors once the graph exists. */
  CK(cudnnBackendDestroyDescriptor(x));
  CK(cudnnBackendDestroyDescriptor(y));
  CK(cudnnBackendDestroyDescriptor(w));

  cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
  cudnnBackendDescriptor_t heur = c->heur = be_new(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, D, 1, &graph));
  CK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
  CK(cudnnBackendFinalize(heur));
  c->count = 0;
  CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, 0, &c->count, NULL));
  if (c->count > 8) c->count = 8;
  for (int64_t i = 0; i < c->count; i++)
    c->cfg[i] = be_new(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, c->count, &c->count, c->cfg));
}

/* A plan on config i, or NULL where it does not finalize. */
static cudnnBackendDescriptor_t conv_plan(cudnnHandle_t h, cudnnBackendDescriptor_t cfg) {
  cudnnBackendDescriptor_t p = be_new(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  CK(cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
  CK(cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                              CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
  if (cudnnBackendFinalize(p) == CUDNN_STATUS_SUCCESS) return p;
  cudnnBackendDestroyDescriptor(p);
  return NULL;
}

static void conv_chain_destroy(conv_chain *c) {
  for (int64_t i = 0; i < c->count; i++)
    cudnnBackendDestroyDescriptor(c->cfg[i]);
  cudnnBackendDestroyDescriptor(c->heur);
  cudnnBackendDestroyDescriptor(c->graph);
  cudnnBackendDestroyDescriptor(c->op);
  cudnnBackendDestroyDescriptor(c->conv);
}

/* Five executions of a convolution graph with two plans (A, B, A, A, A: B's
 * is autotuning), a new variant pack for each. wrong_pack: application bugs
 * first; churn: descriptors made and destroyed in bulk between executions;
 * cross_thread: a sixth execution (A); the third's pack is made while
 * another is held, the sixth's just before another is made, the fourth's is
 * made on another thread, and the fifth's is made here with decoy pointers
 * that another thread replaces. */
static int mode_autotune(bool wrong_pack, int churn, bool cross_thread) {
  enum { B = 1, C = 4, K = 4, HW = 8, R = 3 };
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  conv_chain ch;
  conv_chain_build(h, HW, &ch);
  /* Two plans (the first two configs that finalize, or the first one twice). */
  cudnnBackendDescriptor_t plans[2];
  int nplans = 0;
  for (int round = 0; round < 2 && nplans < 2; round++)
    for (int64_t i = 0; i < ch.count && nplans < 2; i++)
      if ((plans[nplans] = conv_plan(h, ch.cfg[i]))) nplans++;
  if (nplans < 2) die("two execution plans", nplans);

  float xh[B * C * HW * HW], wh[K * C * R * R];
  for (int i = 0; i < B * C * HW * HW; i++)
    xh[i] = (float)(i % 7) - 3;
  for (int i = 0; i < K * C * R * R; i++)
    wh[i] = (float)(i % 5) - 2;
  void *px = dev_upload(xh, sizeof xh), *pw = dev_upload(wh, sizeof wh);
  void *py = dev_alloc(sizeof(float) * B * K * HW * HW), *ws = dev_alloc(1 << 20);
  int64_t uids[3] = {'x', 'w', 'y'};
  void *ptrs[3] = {px, pw, py};
  for (int i = 0; i < B * C * HW * HW; i++)
    xh[i] = 1e20f;
  void *decoy[3] = {dev_upload(xh, sizeof xh), pw, dev_alloc(sizeof(float) * B * K * HW * HW)};
  const int order[6] = {0, 1, 0, 0, 0, 0};
  double s = 0;
  nvtxRangePushA("conv");
  if (wrong_pack) { /* application bugs cuDNN reports; they must not become crashes */
    printf("wrong pack status %d\n", (int)cudnnBackendExecute(h, plans[0], ch.op));
    /* A variant pack never finalized, its pointers not valid yet. */
    void *bad[3] = {(void *)8, (void *)8, (void *)8};
    cudnnBackendDescriptor_t vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
    CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                                bad));
    printf("unfinalized pack status %d\n", (int)cudnnBackendExecute(h, plans[0], vp));
    CK(cudnnBackendDestroyDescriptor(vp));
  }
  for (int i = 0; i < (cross_thread ? 6 : 5); i++) {
    /* Descriptors created and destroyed in bulk between executions (a
     * frontend that builds graphs per call): the profiler's table of them is
     * rebuilt several times while the plans must stay followed. */
    for (int done = 0; done < churn;) {
      cudnnBackendDescriptor_t t[512];
      int n = churn - done < 512 ? churn - done : 512;
      for (int j = 0; j < n; j++)
        t[j] = be_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
      for (int j = 0; j < n; j++)
        CK(cudnnBackendDestroyDescriptor(t[j]));
      done += n;
    }
    cudnnBackendDescriptor_t vp, held = NULL;
    if (cross_thread && i == 3) {
      vp = pack_on_thread(NULL, uids, ptrs, ws);
    } else if (cross_thread && i == 4) {
      vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      pack_set(vp, uids, decoy, ws);
      pack_on_thread(vp, NULL, ptrs, ws);
    } else {
      if (cross_thread && i == 2) held = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      if (cross_thread && i == 5) held = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
      pack_set(vp, uids, ptrs, ws);
      CK(cudnnBackendFinalize(vp));
    }
    CK(cudnnBackendExecute(h, plans[order[i]], vp));
    CK(cudnnBackendDestroyDescriptor(vp));
    if (held) CK(cudnnBackendDestroyDescriptor(held));
    s += sum32(py, B * K * HW * HW < 4 * N * N ? B * K * HW * HW : 4 * N * N);
  }
  nvtxRangePop();
  printf("autotune checksum %.17g\n", s);
  cudnnBackendDestroyDescriptor(plans[0]);
  cudnnBackendDestroyDescriptor(plans[1]);
  conv_chain_destroy(&ch);
  CK(cudnnDestroy(h));
  return 0;
}

/* The first plan of c that finalizes. */
static cudnnBackendDescriptor_t first_plan(cudnnHandle_t h, const conv_chain *c) {
  for (int64_t i = 0; i < c->count; i++) {
    cudnnBackendDescriptor_t p = conv_plan(h, c->cfg[i]);
    if (p) return p;
  }
  die("an execution plan", 0);
}

static void conv_execute(cudnnHandle_t h, cudnnBackendDescriptor_t plan, void **ptrs, void *ws) {
  static const int64_t uids[3] = {'x', 'w', 'y'};
  cudnnBackendDescriptor_t vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack_set(vp, uids, ptrs, ws);
  CK(cudnnBackendFinalize(vp));
  CK(cudnnBackendExecute(h, plan, vp));
  CK(cudnnBackendDestroyDescriptor(vp));
}

/* A plan of an 8 x 8 convolution executed, then destroyed with its whole
 * graph, and a plan of a 16 x 16 one made in its place (at its address,
 * with glibc's allocator: stderr says) and executed: each execution must be
 * recorded as its own plan's graph. */
static int mode_planswap(void) {
  enum { HW = 16 };
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  float xh[4 * HW * HW], wh[4 * 4 * 3 * 3];
  for (int i = 0; i < 4 * HW * HW; i++)
    xh[i] = (float)(i % 7) - 3;
  for (int i = 0; i < 4 * 4 * 3 * 3; i++)
    wh[i] = (float)(i % 5) - 2;
  void *ptrs[3] = {dev_upload(xh, sizeof xh), dev_upload(wh, sizeof wh),
                   dev_alloc(sizeof(float) * 4 * HW * HW)};
  void *ws = dev_alloc(1 << 20);
  conv_chain a, b;
  conv_chain_build(h, 8, &a);
  cudnnBackendDescriptor_t pa = first_plan(h, &a);
  nvtxRangePushA("swap");
  conv_execute(h, pa, ptrs, ws);
  double s = sum32(ptrs[2], 4 * 8 * 8);
  conv_chain_build(h, HW, &b);
  /* glibc hands out the oldest free chunk of a size first: the tensor
   * descriptors b dropped are taken before pa is freed. */
  cudnnBackendDescriptor_t soak[3] = {be_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                                      be_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR),
                                      be_new(CUDNN_BACKEND_TENSOR_DESCRIPTOR)};
  CK(cudnnBackendDestroyDescriptor(pa));
  cudnnBackendDescriptor_t pb = first_plan(h, &b);
  fprintf(stderr, "planswap: the second plan is %sat the first's address\n",
          pb == pa ? "" : "not ");
  conv_chain_destroy(&a);
  for (int i = 0; i < 3; i++)
    CK(cudnnBackendDestroyDescriptor(soak[i]));
  conv_execute(h, pb, ptrs, ws);
  nvtxRangePop();
  printf("planswap checksum %.17g\n", s + sum32(ptrs[2], 4 * HW * HW));
  cudnnBackendDestroyDescriptor(pb);
  conv_chain_destroy(&b);
  CK(cudnnDestroy(h));
  return 0;
}

/* What the threaded backend modes execute: a handle, an 8 x 8
 * convolution's chain and first plan, its x, w and y (x[i] and w[i] are
 * (i + shift) % 7 - 3) and a workspace. */
typedef struct conv_rig {
  cudnnHandle_t h;
  conv_chain c;
  cudnnBackendDescriptor_t plan;
  void *ptrs[3], *ws;
} conv_rig;

static const int64_t conv_uids[3] = {'x', 'w', 'y'};

static void conv_rig_open(conv_rig *r, int shift) {
  CK(cudnnCreate(&r->h));
  conv_chain_build(r->h, 8, &r->c);
  r->plan = first_plan(r->h, &r->c);
  float xh[4 * 8 * 8];
  for (int i = 0; i < 4 * 8 * 8; i++)
    xh[i] = (float)((i + shift) % 7) - 3;
  r->ptrs[0] = dev_upload(xh, sizeof xh);
  r->ptrs[1] = dev_upload(xh, 4 * 4 * 3 * 3 * sizeof(float));
  r->ptrs[2] = dev_alloc(sizeof xh);
  r->ws = dev_alloc(1 << 20);
}

/* The sum of y. */
static double conv_rig_y(const conv_rig *r) {
  return sum32(r->ptrs[2], 4 * 8 * 8);
}

static void conv_rig_close(conv_rig *r) {
  cudnnBackendDestroyDescriptor(r->plan);
  conv_chain_destroy(&r->c);
  CK(cudnnDestroy(r->h));
}

/* A pack of r's pointers, set and finalized. */
static cudnnBackendDescriptor_t conv_rig_pack(const conv_rig *r) {
  cudnnBackendDescriptor_t vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack_set(vp, conv_uids, (void **)r->ptrs, r->ws);
  CK(cudnnBackendFinalize(vp));
  return vp;
}

/* PyTorch's cuDNN path on several threads at once (after one execution in
 * the layer "main": mode_convthreads): CONV_THREADS threads,
 * each with its handle, its graph and plan, and CONV_EXECS executions in
 * the layer "t<i>" (a variant pack made, set, finalized and destroyed
 * around each), while another thread makes and destroys knob choices and
 * plans of a graph of its own (descriptors mpprof does not shadow, plans
 * leaving its table). */
enum { CONV_THREADS = 4, CONV_EXECS = 200, CONV_CHURN = 400 };

typedef struct conv_worker {
  int index;
  double sum;
} conv_worker;

static void *conv_worker_main(void *arg) {
  conv_worker *cw = arg;
  conv_rig r;
  conv_rig_open(&r, cw->index);
  char layer[8];
  snprintf(layer, sizeof layer, "t%d", cw->index);
  nvtxRangePushA(layer);
  for (int i = 0; i < CONV_EXECS; i++) {
    conv_execute(r.h, r.plan, r.ptrs, r.ws);
    cw->sum += conv_rig_y(&r);
  }
  nvtxRangePop();
  conv_rig_close(&r);
  return NULL;
}

static void *conv_churn_main(void *arg) {
  (void)arg;
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  conv_chain c;
  conv_chain_build(h, 8, &c);
  for (int i = 0; i < CONV_CHURN; i++) {
    cudnnBackendDescriptor_t knob = be_new(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    cudnnBackendDescriptor_t plan = first_plan(h, &c);
    CK(cudnnBackendDestroyDescriptor(plan));
    CK(cudnnBackendDestroyDescriptor(knob));
  }
  conv_chain_destroy(&c);
  CK(cudnnDestroy(h));
  return NULL;
}

static void *knob_main(void *arg) {
  (void)arg;
  CK(cudnnBackendDestroyDescriptor(be_new(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR)));
  cudnnBackendDestroyDescriptor(NULL); /* not a pack either */
  return NULL;
}

static int mode_convthreads(void) {
  /* First, in the layer "main", one execution whose pack is held here
   * while another thread makes and destroys a knob choice, and destroys
   * NULL. */
  conv_rig r;
  conv_rig_open(&r, 0);
  cudnnBackendDescriptor_t vp = conv_rig_pack(&r);
  pthread_t k;
  CK(pthread_create(&k, NULL, knob_main, NULL));
  pthread_join(k, NULL);
  nvtxRangePushA("main");
  CK(cudnnBackendExecute(r.h, r.plan, vp));
  nvtxRangePop();
  CK(cudnnBackendDestroyDescriptor(vp));
  double s = conv_rig_y(&r);
  conv_rig_close(&r);

  pthread_t t[CONV_THREADS + 1];
  conv_worker w[CONV_THREADS];
  for (int i = 0; i < CONV_THREADS; i++) {
    w[i] = (conv_worker){.index = i};
    CK(pthread_create(&t[i], NULL, conv_worker_main, &w[i]));
  }
  CK(pthread_create(&t[CONV_THREADS], NULL, conv_churn_main, NULL));
  for (int i = 0; i <= CONV_THREADS; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < CONV_THREADS; i++)
    s += w[i].sum;
  printf("convthreads checksum %.17g\n", s);
  return 0;
}

/* packreuse: a pack made here is destroyed by another thread, which then
 * makes a pack of its own (at the same address: one malloc arena for all
 * threads; stderr says) and gives it decoy pointers (x: 1e20); this thread
 * then sets the real pointers on it, taking it for its own; the other
 * thread finalizes it and executes it in the layer "reuse". */
typedef struct reuse_job {
  const conv_rig *r;
  cudnnBackendDescriptor_t mine, vp;
  void **decoy;
  pthread_barrier_t *go, *made, *set;
} reuse_job;

static void *reuse_main(void *arg) {
  reuse_job *j = arg;
  pthread_barrier_wait(j->go);
  CK(cudnnBackendDestroyDescriptor(j->mine));
  j->vp = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack_set(j->vp, conv_uids, j->decoy, j->r->ws);
  pthread_barrier_wait(j->made);
  pthread_barrier_wait(j->set);
  CK(cudnnBackendFinalize(j->vp));
  nvtxRangePushA("reuse");
  CK(cudnnBackendExecute(j->r->h, j->r->plan, j->vp));
  nvtxRangePop();
  CK(cudnnBackendDestroyDescriptor(j->vp));
  return NULL;
}

static int mode_packreuse(void) {
  mallopt(M_ARENA_MAX, 1);
  conv_rig r;
  conv_rig_open(&r, 0);
  float xh[4 * 8 * 8];
  for (int i = 0; i < 4 * 8 * 8; i++)
    xh[i] = 1e20f;
  void *decoy[3] = {dev_upload(xh, sizeof xh), r.ptrs[1], r.ptrs[2]};
  pthread_barrier_t go, made, set;
  pthread_barrier_init(&go, NULL, 2);
  pthread_barrier_init(&made, NULL, 2);
  pthread_barrier_init(&set, NULL, 2);
  reuse_job j = {.r = &r, .decoy = decoy, .go = &go, .made = &made, .set = &set};
  pthread_t t;
  CK(pthread_create(&t, NULL, reuse_main, &j));
  j.mine = be_new(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack_set(j.mine, conv_uids, r.ptrs, r.ws);
  pthread_barrier_wait(&go);
  pthread_barrier_wait(&made);
  fprintf(stderr, "packreuse: the other thread's pack is %sat the destroyed one's address\n",
          j.vp == j.mine ? "" : "not ");
  CK(cudnnBackendSetAttribute(j.vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                              r.ptrs));
  pthread_barrier_wait(&set);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&go);
  pthread_barrier_destroy(&made);
  pthread_barrier_destroy(&set);
  printf("packreuse checksum %.17g\n", conv_rig_y(&r));
  conv_rig_close(&r);
  return 0;
}

/* packcascade: two threads, A and B, each in the middle of PyTorch's
 * sequence (a pack made, set and finalized, not yet executed) while this
 * thread executes and destroys a pack made on another thread (layer "x");
 * then A and B execute theirs (layers "a" and "b"), B makes its next pack,
 * A destroys its first, and B executes its next. Only the execution in "x"
 * may go unscanned: nothing that happened to another pack is a reason to
 * distrust A's or B's. The steps are ordered by one barrier. */
typedef struct cascade_worker {
  const char *layer;
  pthread_barrier_t *step;
  double sum;
} cascade_worker;

static void *cascade_main(void *arg) {
  cascade_worker *cw = arg;
  bool b = cw->layer[0] == 'b';
  conv_rig r;
  conv_rig_open(&r, b);
  cudnnBackendDescriptor_t vp = conv_rig_pack(&r), next = NULL;
  pthread_barrier_wait(cw->step); /* 1: mid-sequence */
  pthread_barrier_wait(cw->step); /* 2: "x" executed and destroyed */
  nvtxRangePushA(cw->layer);
  CK(cudnnBackendExecute(r.h, r.plan, vp));
  cw->sum += conv_rig_y(&r);
  if (b) {
    CK(cudnnBackendDestroyDescriptor(vp));
    next = conv_rig_pack(&r);
  }
  pthread_barrier_wait(cw->step); /* 3: B's next pack made */
  if (!b) CK(cudnnBackendDestroyDescriptor(vp));
  pthread_barrier_wait(cw->step); /* 4: A's first destroyed */
  if (b) {
    CK(cudnnBackendExecute(r.h, r.plan, next));
    cw->sum += conv_rig_y(&r);
    CK(cudnnBackendDestroyDescriptor(next));
  }
  nvtxRangePop();
  conv_rig_close(&r);
  return NULL;
}

static int mode_packcascade(void) {
  conv_rig r;
  conv_rig_open(&r, 2);
  pthread_barrier_t step;
  pthread_barrier_init(&step, NULL, 3);
  cascade_worker w[2] = {{.layer = "a", .step = &step}, {.layer = "b", .step = &step}};
  pthread_t t[2];
  for (int i = 0; i < 2; i++)
    CK(pthread_create(&t[i], NULL, cascade_main, &w[i]));
  pthread_barrier_wait(&step); /* 1 */
  cudnnBackendDescriptor_t vp = pack_on_thread(NULL, conv_uids, r.ptrs, r.ws);
  nvtxRangePushA("x");
  CK(cudnnBackendExecute(r.h, r.plan, vp));
  nvtxRangePop();
  CK(cudnnBackendDestroyDescriptor(vp));
  double s = conv_rig_y(&r);
  for (int i = 2; i <= 4; i++)
    pthread_barrier_wait(&step);
  for (int i = 0; i < 2; i++) {
    pthread_join(t[i], NULL);
    s += w[i].sum;
  }
  pthread_barrier_destroy(&step);
  printf("packcascade checksum %.17g\n", s);
  conv_rig_close(&r);
  return 0;
}

/* packmany: PACK_THREADS threads, all alive at once (more than
 * cudnn_backend.c keeps slots for), each makes, sets and finalizes a pack,
 * then executes it in turn (one handle, one plan, under a lock) in the
 * layer "many" and destroys it: each execution is scanned. */
enum { PACK_THREADS = 160 };

typedef struct many_job {
  const conv_rig *r;
  pthread_barrier_t *all;
  pthread_mutex_t *turn;
  double sum;
} many_job;

static void *many_main(void *arg) {
  many_job *j = arg;
  pthread_barrier_wait(j->all);
  cudnnBackendDescriptor_t vp = conv_rig_pack(j->r);
  pthread_barrier_wait(j->all); /* every thread holds its pack */
  pthread_mutex_lock(j->turn);
  nvtxRangePushA("many");
  CK(cudnnBackendExecute(j->r->h, j->r->plan, vp));
  nvtxRangePop();
  j->sum += conv_rig_y(j->r);
  pthread_mutex_unlock(j->turn);
  CK(cudnnBackendDestroyDescriptor(vp));
  return NULL;
}

static int mode_packmany(void) {
  conv_rig r;
  conv_rig_open(&r, 0);
  pthread_barrier_t all;
  pthread_barrier_init(&all, NULL, PACK_THREADS);
  pthread_mutex_t turn = PTHREAD_MUTEX_INITIALIZER;
  many_job j = {.r = &r, .all = &all, .turn = &turn};
  pthread_t t[PACK_THREADS];
  for (int i = 0; i < PACK_THREADS; i++)
    CK(pthread_create(&t[i], NULL, many_main, &j));
  for (int i = 0; i < PACK_THREADS; i++)
    pthread_join(t[i], NULL);
  pthread_barrier_destroy(&all);
  printf("packmany checksum %.17g\n", j.sum);
  conv_rig_close(&r);
  return 0;
}

/* One cublasLtMatmul of the 16 x 16 fp16 matrices into c32 on `stream`. */
static void lt_matmul(cublasLtHandle_t lt, const mats *m, cudaStream_t stream) {
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lc;
  CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, N, N, N));
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, N, N, N));
  const float one = 1, zero = 0;
  CK(cublasLtMatmul(lt, desc, &one, m->a16, la, m->b16, la, &zero, m->c32, lc, m->c32, lc, NULL,
                    NULL, 0, stream));
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lc);
  cublasLtMatmulDescDestroy(desc);
}

/* Nothing inside the capture may synchronise or copy on the legacy stream
 * (that would invalidate a real capture), so results are read afterwards. */
/* The autotune program on a thread with a small stack (KiB from the command
 * line, default 28): cudnnBackendExecute keeps its graph's op records (16 ops,
 * ~13 KB) off the application's stack. Measured with simcuda: the program
 * needs about 20 KiB; with the records on the stack 28 KiB crashes. */
#ifdef __SANITIZE_ADDRESS__
#define AUTOTUNE_STACK (4 * 28 * 1024)
#else
#define AUTOTUNE_STACK (28 * 1024)
#endif
static void *autotune_main(void *arg) {
  *(int *)arg = mode_autotune(false, 0, false);
  return NULL;
}

static int mode_autotune_small(int kib) {
  pthread_attr_t at;
  pthread_t t;
  int rc = 1;
  CK(pthread_attr_init(&at));
  CK(pthread_attr_setstacksize(&at, kib > 0 ? (size_t)kib * 1024 : AUTOTUNE_STACK));
  CK(pthread_create(&t, &at, autotune_main, &rc));
  pthread_join(t, NULL);
  pthread_attr_destroy(&at);
  return rc;
}

/* A 1x1 fp32 convolution through cuDNN's legacy API: x, an N x N image,
 * times a 1x1 filter (its first element w) into y. */
typedef struct legacy_conv {
  cudnnTensorDescriptor_t xd, yd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
} legacy_conv;

static void legacy_conv_init(legacy_conv *c) {
  CK(cudnnCreateTensorDescriptor(&c->xd));
  CK(cudnnCreateTensorDescriptor(&c->yd));
  CK(cudnnCreateFilterDescriptor(&c->wd));
  CK(cudnnCreateConvolutionDescriptor(&c->cd));
  CK(cudnnSetTensor4dDescriptor(c->xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, N, N));
  CK(cudnnSetTensor4dDescriptor(c->yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, N, N));
  CK(cudnnSetFilter4dDescriptor(c->wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 1, 1));
  CK(cudnnSetConvolution2dDescriptor(c->cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                     CUDNN_DATA_FLOAT));
}

static void legacy_conv_run(cudnnHandle_t h, const legacy_conv *c, const void *x, const void *w,
                            void *y) {
  const float one = 1, zero = 0;
  CK(cudnnConvolutionForward(h, &one, c->xd, x, c->wd, w, c->cd,
                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, NULL, 0, &zero, c->yd, y));
}

static void legacy_conv_destroy(legacy_conv *c) {
  cudnnDestroyTensorDescriptor(c->xd);
  cudnnDestroyTensorDescriptor(c->yd);
  cudnnDestroyFilterDescriptor(c->wd);
  cudnnDestroyConvolutionDescriptor(c->cd);
}

static int mode_capture(const char *which) {
  bool ptds = which != NULL && strcmp(which, "ptds") == 0;
  if (which != NULL && !ptds) die("capture: the stream is ptds or the default", -1);
  cublasHandle_t h;
  cublasLtHandle_t lt;
  cudaStream_t s = cudaStreamPerThread;
  mats m;
  CK(cublasCreate(&h));
  CK(cublasLtCreate(&lt));
  if (!ptds) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cublasSetStream(h, s));
  cudnnHandle_t hd;
  legacy_conv conv;
  CK(cudnnCreate(&hd));
  CK(cudnnSetStream(hd, s));
  legacy_conv_init(&conv);
  mats_init(&m, 9);
  void *conv_y = dev_alloc(N * N * sizeof(float));
  const float one = 1, zero = 0;
  nvtxRangePushA("t");
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  enum cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  CK(cudaStreamIsCapturing(s, &st));
  printf("capturing %d\n", st == cudaStreamCaptureStatusActive);
  for (int i = 0; i < 2; i++)
    CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, N, N, N, &one, m.a16, CUDA_R_16F, N, m.b16,
                    CUDA_R_16F, N, &zero, m.c32, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
  lt_matmul(lt, &m, s);
  legacy_conv_run(hd, &conv, m.a32, m.b32, conv_y);
  cudaGraph_t graph = NULL;
  CK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = NULL;
  cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  printf("instantiate %s\n", cudaGetErrorName(inst));
  if (inst == cudaSuccess) {
    CK(cudaGraphLaunch(exec, s));
    CK(cudaGraphExecDestroy(exec));
  }
  (void)cudaGetLastError(); /* simcuda's refusal is sticky; the next CK must not see it */
  CK(cudaGraphDestroy(graph));
  CK(cudaStreamSynchronize(s));
  double captured = sum32(m.c32, N * N);
  /* The same calls outside capture. */
  for (int i = 0; i < 2; i++)
    CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_T, N, N, N, &one, m.a16, CUDA_R_16F, N, m.b16,
                    CUDA_R_16F, N, &zero, m.c32, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
  lt_matmul(lt, &m, s);
  legacy_conv_run(hd, &conv, m.a32, m.b32, conv_y);
  CK(cudaStreamSynchronize(s));
  nvtxRangePop();
  printf("capture checksum %.17g eager checksum %.17g conv checksum %.17g\n", captured,
         sum32(m.c32, N * N), sum32(conv_y, N * N));
  legacy_conv_destroy(&conv);
  cudnnDestroy(hd);
  if (!ptds) CK(cudaStreamDestroy(s));
  cublasLtDestroy(lt);
  CK(cublasDestroy(h));
  return 0;
}

/* Mode seccomp N: a seccomp filter that kills the process at unshare or
 * close_range (a sandbox that allows only what the program itself needs,
 * as systemd's SystemCallFilter= without an errno does), then N GEMMs with
 * pauses for checkpoints to run. */
static int mode_seccomp(int calls) {
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 2, 0),
#ifdef SYS_close_range
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 1, 0),
#else
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 436, 1, 0),
#endif
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof code / sizeof code[0]), code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
    die("seccomp", -1);
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 11);
  double s = 0;
  for (int i = 0; i < calls; i++) {
    s += gemmex(h, &m);
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  printf("seccomp checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

static int mode_closeall(int rounds) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 10);
  double s = gemmex(h, &m);
  int changed = 0;
  for (int r = 0; r < rounds; r++) {
    for (int fd = 3; fd < 1024; fd++)
      close(fd);
    char name[] = "/tmp/mpp_closeall.XXXXXX", want[1024], got[1024];
    int fd = mkstemp(name), len = 0;
    if (fd < 0) die("mkstemp", -1);
    unlink(name);
    bool bad = false;
    for (int i = 0; i < 20; i++) {
      s += gemmex(h, &m);
      int k = snprintf(want + len, sizeof want - (size_t)len, "%d %.17g\n", i, s);
      bad |= write(fd, want + len, (size_t)k) != k;
      len += k;
    }
    bad |= lseek(fd, 0, SEEK_SET) != 0 || read(fd, got, sizeof got) != len ||
           memcmp(got, want, (size_t)len) != 0;
    bad |= close(fd) != 0;
    changed += bad;
  }
  printf("closeall checksum %.17g, rounds changed under it %d\n", s, changed);
  CK(cublasDestroy(h));
  return 0;
}

/* One round of a program that closes every descriptor it did not open and
 * opens a file of its own: false when the file did not keep what was
 * written to it (another writer, or a close, met its descriptor). */
static bool closeall_round(void) {
  for (int fd = 3; fd < 1024; fd++)
    close(fd);
  char name[] = "/tmp/mpp_closeall.XXXXXX", want[1024], got[1024];
  int fd = mkstemp(name), len = 0;
  if (fd < 0) return false;
  unlink(name);
  bool bad = false;
  for (int i = 0; i < 20; i++) {
    int k = snprintf(want + len, sizeof want - (size_t)len, "%d line of the program's own\n", i);
    bad |= write(fd, want + len, (size_t)k) != k;
    len += k;
  }
  bad |= lseek(fd, 0, SEEK_SET) != 0 || read(fd, got, sizeof got) != len ||
         memcmp(got, want, (size_t)len) != 0;
  bad |= close(fd) != 0;
  return !bad;
}

static atomic_int closeall_rounds;

static void *closeall_forever(void *arg) {
  (void)arg;
  for (;;) {
    if (!closeall_round()) _exit(66); /* seen by the exit status */
    atomic_fetch_add(&closeall_rounds, 1);
  }
  return NULL;
}

/* closeall while the program exits: a thread goes on closing every
 * descriptor and opening its own files while exit() runs the exit handlers
 * (mpprof's final raw write among them). Exit status 66: a file of the
 * thread's changed under it. */
static int mode_closeall_exit(int calls) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 10);
  double s = 0;
  for (int i = 0; i < calls; i++)
    s += gemmex(h, &m);
  printf("closeall_exit checksum %.17g\n", s);
  fflush(stdout);
#ifdef __SANITIZE_ADDRESS__
  /* LeakSanitizer's check at exit stops the threads through descriptors that
   * the closing thread would close under it (a fatal error, exit 134): the
   * check runs here instead, before that thread starts (the one at exit is
   * then skipped). */
  __lsan_do_leak_check();
#endif
  pthread_t t;
  if (pthread_create(&t, NULL, closeall_forever, NULL) != 0) die("pthread_create", -1);
  while (atomic_load(&closeall_rounds) < 2)
    sched_yield();
  exit(0);
}

/* A child made by the clone system call without fork's handlers (as
 * sandboxes and some runtimes make it) runs a GEMM and calls exit(4). */
static int mode_rawclone(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 10);
  double s = gemmex(h, &m);
  fflush(stdout);
  long pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid < 0) die("clone", -1);
  if (pid == 0) {
    gemmex(h, &m);
    exit(4);
  }
  int st;
  if (waitpid((pid_t)pid, &st, 0) != (pid_t)pid) die("waitpid", -1);
  s += gemmex(h, &m);
  printf("rawclone checksum %.17g, child status %d\n", s, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
  CK(cublasDestroy(h));
  return 0;
}

static int mode_chdir(const char *dir) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 10);
  double s = gemmex(h, &m);
  if (!dir || chdir(dir) != 0) die("chdir", -1);
  s += gemmex(h, &m);
  printf("chdir checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

static _Noreturn void mode_exit3(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 6);
  printf("exit3 checksum %.17g\n", gemmex(h, &m));
  fflush(stdout);
  exit(3);
}

static pthread_barrier_t cancel_barrier;

static void *cancel_pending_thread(void *what) {
  int old;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  pthread_barrier_wait(&cancel_barrier); /* main cancels this thread now */
  pthread_barrier_wait(&cancel_barrier); /* pending */
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
  if (!strcmp(what, "exec")) {
    char *argv[] = {"mpp_testprog", "gemmex", "1", NULL};
    execv("/proc/self/exe", argv);
  } else if (!strcmp(what, "exit")) {
    exit(5);
  } else if (!strcmp(what, "spawn")) {
    char lib[4200];
    snprintf(lib, sizeof lib, "LD_LIBRARY_PATH=%s",
             getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
    char *env[] = {lib, NULL}, *argv[] = {"mpp_testprog", "gemmex", "2", NULL};
    pid_t pid = 0;
    static pid_t spawned;
    int rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, env);
    spawned = rc == 0 ? pid : -rc;
    return &spawned; /* waited for by main (waitpid is a cancellation point) */
  }
  return NULL;
}

static int mode_cancelpending(const char *what) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 6);
  printf("cancelpending checksum %.17g\n", gemmex(h, &m));
  fflush(stdout);
  if (!what) die("cancelpending needs exec, exit or spawn", -1);
  pthread_t t;
  pthread_barrier_init(&cancel_barrier, NULL, 2);
  if (pthread_create(&t, NULL, cancel_pending_thread, (void *)what)) die("pthread_create", -1);
  pthread_barrier_wait(&cancel_barrier);
  pthread_cancel(t);
  pthread_barrier_wait(&cancel_barrier);
  void *r;
  pthread_join(t, &r);
  if (r == PTHREAD_CANCELED) {
    printf("cancelled\n");
    fflush(stdout);
    _exit(9);
  }
  if (r) { /* spawn */
    pid_t pid = *(pid_t *)r;
    int st = -1;
    if (pid > 0 && waitpid(pid, &st, 0) != pid) st = -1;
    printf("spawned %s, status %d\n", pid > 0 ? "a child" : strerror(-pid), st);
  }
  CK(cublasDestroy(h));
  return 0;
}

/* The rank a framework learns once the process has run (and written a
 * checkpoint without it): mpprof_rank, when preloaded. */
static int mode_rank(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 10);
  double s = gemmex(h, &m);
  void (*checkpoint)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mpprof_checkpoint");
  void (*rank)(int32_t, int32_t) = (void (*)(int32_t, int32_t))dlsym(RTLD_DEFAULT, "mpprof_rank");
  if (checkpoint) checkpoint();
  if (rank) {
    rank(5, 2);
    rank(1, 2);
  }
  s += gemmex(h, &m);
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    printf("rank child checksum %.17g\n", gemmex(h, &m));
    exit(0);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) return 1;
  s += gemmex(h, &m);
  printf("rank checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

/* Models named as the PyTorch integration names them (mpprof_model_root,
 * when preloaded): the main one, a second one given twice (the second class
 * holds), a name with a tab (ignored), then more than fit. */
static int mode_models(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 10);
  void (*fw)(const char *, const char *, const char *) =
      (void (*)(const char *, const char *, const char *))dlsym(RTLD_DEFAULT, "mpprof_framework");
  void (*model)(const char *, const char *) =
      (void (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "mpprof_model_root");
  if (fw) fw("torch", "2.4.0", "cxx");
  if (model) {
    model("", "Generator");
    model("Disc", "Sequential");
    model("Bad\tname", "X");
    model("Disc", "Discriminator");
    for (int i = 0; i < 20; i++) {
      char name[64];
      snprintf(name, sizeof name, "Model_with_a_rather_long_class_name_%02d", i);
      model(name, "Model_with_a_rather_long_class_name");
    }
  }
  printf("models checksum %.17g\n", gemmex(h, &m));
  CK(cublasDestroy(h));
  return 0;
}

/* A checkpoint (mpprof_checkpoint, when preloaded), then the file size limit
 * lowered to that checkpoint's size and GEMMs of a second site: the final
 * raw file, larger, cannot be written (as on a disk that filled up), and the
 * program exits 0 all the same. */
static int mode_finalfails(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 8);
  double s = gemmex(h, &m);
  void (*checkpoint)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "mpprof_checkpoint");
  const char *out = getenv("MPPROF_OUT");
  char path[4096], tail[32];
  snprintf(path, sizeof path, "%s/raw", out ? out : "");
  snprintf(tail, sizeof tail, "-%d.json", (int)getpid());
  DIR *d = checkpoint && out ? (checkpoint(), opendir(path)) : NULL;
  struct dirent *e;
  while (d && (e = readdir(d))) {
    size_t n = strlen(e->d_name), t = strlen(tail);
    struct stat st;
    if (n > t && !strcmp(e->d_name + n - t, tail) && !fstatat(dirfd(d), e->d_name, &st, 0)) {
      struct rlimit rl = {(rlim_t)st.st_size, (rlim_t)st.st_size};
      setrlimit(RLIMIT_FSIZE, &rl);
    }
  }
  if (d) closedir(d);
  nvtxRangePushA("after_checkpoint");
  s += gemmex(h, &m) + gemmex(h, &m);
  nvtxRangePop();
  printf("finalfails checksum %.17g\n", s);
  CK(cublasDestroy(h));
  return 0;
}

static _Noreturn void mode_wait(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 7);
  double s = gemmex(h, &m) + gemmex(h, &m) + gemmex(h, &m);
  printf("ready checksum %.17g\n", s);
  fflush(stdout);
  for (;;)
    pause();
}

static int mode_exec(int n) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 8);
  double s = 0;
  for (int i = 0; i < 6; i++)
    s += gemmex(h, &m);
  printf("exec %d checksum %.17g\n", n, s);
  fflush(stdout);
  CK(cublasDestroy(h));
  if (n <= 0) return 0;
  char next[16];
  snprintf(next, sizeof next, "%d", n - 1);
  char *argv[] = {"mpp_testprog", "exec", next, NULL};
  execv("/proc/self/exe", argv);
  perror("execv");
  return 1;
}

/* The environment entries of env. */
static int env_count(char *const *env) {
  int n = 0;
  while (env && env[n])
    n++;
  return n;
}

extern char **environ;

static int mode_rankexec(const char *arg) {
  char step = arg ? arg[0] : 's';
  const char *colon = arg ? strchr(arg, ':') : NULL;
  int passed = colon ? atoi(colon + 1) : env_count(environ);
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 11);
  void (*rank)(int32_t, int32_t) = (void (*)(int32_t, int32_t))dlsym(RTLD_DEFAULT, "mpprof_rank");
  if (rank && step == 's') rank(1, 4);
  if (rank && step == 'f') rank(2, 4);
  double s = gemmex(h, &m);
  printf("rankexec %c checksum %.17g environment %s\n", step, s,
         env_count(environ) == passed ? "as passed" : "differs");
  fflush(stdout);
  CK(cublasDestroy(h));
  if (step == 'c' || step == 'f') return 0;
  char next[32], self[] = "/proc/self/exe";
  if (step == 's') {
    snprintf(next, sizeof next, "child:%d", env_count(environ));
    char *cargv[] = {"mpp_testprog", "rankexec", next, NULL};
    pid_t pid = fork();
    if (pid == 0) {
      execv(self, cargv);
      _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) return 1;
  }
  static const char chain[] = "svepl", after[] = "veplf";
  char next_step = after[strchr(chain, step) - chain];
  snprintf(next, sizeof next, "%c:%d", next_step, env_count(environ));
  char *argv[] = {"mpp_testprog", "rankexec", next, NULL};
  switch (step) {
  case 's':
    execv(self, argv);
    break;
  case 'v':
    execve(self, argv, environ);
    break;
  case 'e':
    execvp(self, argv);
    break;
  case 'p':
    execle(self, argv[0], argv[1], argv[2], (char *)NULL, environ);
    break;
  case 'l': {
    int fd = open(self, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) fexecve(fd, argv, environ);
    break;
  }
  }
  perror("rankexec");
  return 1;
}

static int mode_cleanexec(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 12);
  printf("cleanexec checksum %.17g\n", gemmex(h, &m));
  fflush(stdout);
  CK(cublasDestroy(h));
  char lib[4200];
  snprintf(lib, sizeof lib, "LD_LIBRARY_PATH=%s",
           getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
  char *env[] = {lib, NULL}, *argv[] = {"mpp_testprog", "gemmex", "1", NULL};
  pid_t pid = fork();
  if (pid == 0) {
    execve("/proc/self/exe", argv, env);
    _exit(127);
  }
  int st = 0;
  return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int spawn_wait(pid_t pid) {
  int st = 0;
  return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static int mode_cleanspawn(void) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 13);
  printf("cleanspawn checksum %.17g\n", gemmex(h, &m));
  fflush(stdout);
  CK(cublasDestroy(h));
  char lib[4200];
  snprintf(lib, sizeof lib, "LD_LIBRARY_PATH=%s",
           getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
  char *env[] = {lib, NULL}, *argv1[] = {"mpp_testprog", "gemmex", "1", NULL},
       *argv2[] = {"mpp_testprog", "gemmex", "2", NULL},
       *argv3[] = {"mpp_testprog", "gemmex", "3", NULL};
  pid_t pid = 0;
  int bad = 0;
  if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv1, env) || spawn_wait(pid)) bad++;
  if (posix_spawnp(&pid, "/proc/self/exe", NULL, NULL, argv2, env) || spawn_wait(pid)) bad++;
  if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv3, environ) || spawn_wait(pid)) bad++;
  errno = 0;
  int rc = posix_spawn(&pid, "/nonexistent/mpp_testprog", NULL, NULL, argv1, env);
  printf("cleanspawn missing file: %d (%s), errno %d\n", rc, strerror(rc), errno);
  return bad;
}

/* The environment of a launcher that keeps the preload and drops the rest
 * (keepexec, keepspawn): LD_LIBRARY_PATH, LD_PRELOAD (when set), and the
 * sanitized build's runtime options (the test harness's, not mpprof's:
 * without verify_asan_link_order=0 an ASan image that preloads libmpprof
 * refuses to start); count gets "c:N", N the number of entries. */
typedef struct kept_env {
  char lib[4200], pre[4200], opts[2][512], count[16];
  char *env[5];
} kept_env;

static void keep_preload_only(kept_env *k) {
  snprintf(k->lib, sizeof k->lib, "LD_LIBRARY_PATH=%s",
           getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
  snprintf(k->pre, sizeof k->pre, "LD_PRELOAD=%s",
           getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
  int n = 0;
  k->env[n++] = k->lib;
  k->env[n++] = k->pre;
  static const char *const keep[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS"};
  for (int i = 0; i < 2; i++)
    if (getenv(keep[i])) {
      snprintf(k->opts[i], sizeof k->opts[i], "%s=%s", keep[i], getenv(keep[i]));
      k->env[n++] = k->opts[i];
    }
  k->env[n] = NULL;
  snprintf(k->count, sizeof k->count, "c:%d", n);
}

static int mode_keepexec(const char *dir) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 14);
  printf("keepexec checksum %.17g\n", gemmex(h, &m));
  fflush(stdout);
  CK(cublasDestroy(h));
  static kept_env k;
  keep_preload_only(&k);
  char **env = k.env, *argv[] = {"mpp_testprog", "rankexec", k.count, NULL};
  pid_t pid = fork();
  if (pid == 0) {
    if (!dir || chdir(dir)) _exit(126);
    execve("/proc/self/exe", argv, env);
    _exit(127);
  }
  return pid > 0 ? spawn_wait(pid) : 1;
}

static int mode_keepspawn(const char *dir) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 15);
  printf("keepspawn checksum %.17g\n", gemmex(h, &m));
  fflush(stdout);
  CK(cublasDestroy(h));
  static kept_env k;
  keep_preload_only(&k);
  char *argv[] = {"mpp_testprog", "rankexec", k.count, NULL};
  posix_spawn_file_actions_t fa;
  if (!dir || posix_spawn_file_actions_init(&fa) || posix_spawn_file_actions_addchdir_np(&fa, dir))
    return 126;
  pid_t pid = 0;
  int bad = 0;
  if (posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, k.env) || spawn_wait(pid)) bad++;
  if (posix_spawnp(&pid, "/proc/self/exe", &fa, NULL, argv, k.env) || spawn_wait(pid)) bad++;
  int rc = posix_spawn(&pid, "/nonexistent/mpp_testprog", &fa, NULL, argv, k.env);
  printf("keepspawn missing file: %d (%s)\n", rc, strerror(rc));
  posix_spawn_file_actions_destroy(&fa);
  return bad;
}

/* keepspawn's environment with `bytes` of filler variables ("F000=xxx...",
 * each at most FILL_CHUNK bytes with its NUL) after it, in env (room for
 * FILL_MAX of them); buf holds them. k->count: "c:NNN", the entries of env
 * (always as many bytes). */
enum { FILL_CHUNK = 100000, FILL_MAX = 96 };

static void fill_env(kept_env *k, char *buf, size_t bytes, char **env) {
  size_t n = 0, i = 0;
  while (k->env[n]) {
    env[n] = k->env[n];
    n++;
  }
  for (size_t at = 0; at < bytes && i < FILL_MAX; i++) {
    size_t len = bytes - at < FILL_CHUNK ? bytes - at : FILL_CHUNK;
    if (len < 6) break; /* "F000=" and the NUL */
    snprintf(buf + at, len, "F%03zu=", i);
    memset(buf + at + 5, 'x', len - 6);
    buf[at + len - 1] = '\0';
    env[n++] = buf + at;
    at += len;
  }
  env[n] = NULL;
  snprintf(k->count, sizeof k->count, "c:%03zu", n);
}

/* Whether the kernel takes an exec of "/proc/self/exe" with argv and env: a
 * fork child makes it with the system call itself (no hook), with the preload
 * renamed (the same bytes, not loaded) and argv[1] changed in its last letter
 * (an unknown mode: the program only prints its usage, on stderr, which is
 * /dev/null). */
static bool exec_fits(char *const argv[], char **env) {
  char mode[64], pre[4200];
  snprintf(mode, sizeof mode, "%s", argv[1]);
  mode[strlen(mode) - 1] ^= 1;
  char *probe_argv[] = {argv[0], mode, argv[2], NULL};
  char *pre_was = NULL;
  for (size_t i = 0; env[i]; i++)
    if (!strncmp(env[i], "LD_PRELOAD=", 11)) {
      snprintf(pre, sizeof pre, "%s", env[i]);
      pre[9] = 'X';
      pre_was = env[i];
      env[i] = pre;
    }
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 2);
    syscall(SYS_execve, "/proc/self/exe", probe_argv, env);
    _exit(errno == E2BIG ? 99 : 98);
  }
  for (size_t i = 0; pre_was && env[i]; i++)
    if (env[i] == pre) env[i] = pre_was;
  int st = 0;
  return pid > 0 && waitpid(pid, &st, 0) == pid && !(WIFEXITED(st) && WEXITSTATUS(st) == 99);
}

static int mode_bigspawn(const char *dir) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 16);
  printf("bigspawn checksum %.17g\n", gemmex(h, &m));
  fflush(stdout);
  CK(cublasDestroy(h));
  static kept_env k;
  keep_preload_only(&k);
  char *argv[] = {"mpp_testprog", "rankexec", k.count, NULL};
  static char *env[FILL_MAX + 8];
  size_t cap = (size_t)FILL_CHUNK * FILL_MAX, lo = 0, hi = cap;
  char *buf = malloc(cap);
  if (!buf) return 1;
  while (hi - lo > 1) { /* the most filler that fits (lo), to the byte */
    size_t mid = lo + (hi - lo) / 2;
    fill_env(&k, buf, mid, env);
    *(exec_fits(argv, env) ? &lo : &hi) = mid;
  }
  fill_env(&k, buf, lo > 16 ? lo - 16 : 0, env);
  posix_spawn_file_actions_t fa;
  if (!dir || posix_spawn_file_actions_init(&fa) || posix_spawn_file_actions_addchdir_np(&fa, dir))
    return 126;
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(buf);
  /* the child's lines first: its output and this line are in one order */
  int st = rc ? 1 : spawn_wait(pid);
  printf("bigspawn: %d\n", rc);
  fflush(stdout);
  return st;
}

enum { BIG = 1024 };
static atomic_int big_started;

static void *big_gemm(void *p) {
  cublasHandle_t h = p;
  float *a, *c;
  CK(cudaMalloc((void **)&a, sizeof(float) * BIG * BIG));
  CK(cudaMalloc((void **)&c, sizeof(float) * BIG * BIG));
  CK(cudaMemset(a, 0, sizeof(float) * BIG * BIG));
  const float one = 1, zero = 0;
  atomic_store(&big_started, 1);
  CK(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, BIG, BIG, BIG, &one, a, BIG, a, BIG, &zero, c,
                    BIG));
  return NULL;
}

static _Noreturn void mode_inflight(void) {
  cublasHandle_t h;
  CK(cublasCreate(&h));
  pthread_t t;
  pthread_create(&t, NULL, big_gemm, h);
  while (!atomic_load(&big_started))
    usleep(1000);
  usleep(100000); /* inside the call by now: it takes seconds */
  printf("inflight exit\n");
  fflush(stdout);
  exit(0);
}

static int mode_orphan(int secs) {
  cublasHandle_t h;
  mats m;
  CK(cublasCreate(&h));
  mats_init(&m, 9);
  printf("orphan checksum %.17g\n", gemmex(h, &m));
  fflush(stdout);
  CK(cublasDestroy(h));
  pid_t pid = fork();
  if (pid == 0) {
    sleep((unsigned)secs);
    _exit(0);
  }
  return pid > 0 ? 0 : 1;
}

/* The autotune program's variants, and the modes that never return. */
static int run_autotune(void) {
  return mode_autotune(false, 0, false);
}
static int run_packthreads(void) {
  return mode_autotune(false, 0, true);
}
static int run_wrongpack(void) {
  return mode_autotune(true, 0, false);
}
static int run_churn(int n) {
  return mode_autotune(false, n, false);
}
static int run_inflight(void) {
  mode_inflight();
}
static int run_exit3(void) {
  mode_exit3();
}
static int run_wait(void) {
  mode_wait();
}

/* The modes and their arguments as the usage line shows them. A mode takes
 * no argument (plain), argv[2] as a number (counted; dflt when missing) or
 * as it is (named; NULL when missing). */
static const struct {
  const char *name, *args;
  int (*plain)(void);
  int (*counted)(int);
  int dflt;
  int (*named)(const char *);
} modes[] = {
    {"gemmex", " N", .counted = mode_gemmex, .dflt = 1},
    {"lt", " N", .counted = mode_lt, .dflt = 1},
    {"convbiasact", "", .plain = mode_convbiasact},
    {"ltreuse", "", .plain = mode_ltreuse},
    {"ltevict", "", .plain = mode_ltevict},
    {"setenv", "", .plain = mode_setenv},
    {"variants", "", .plain = mode_variants},
    {"mathmode", "", .plain = mode_mathmode},
    {"layers", " L", .counted = mode_layers, .dflt = 1},
    {"shapes", " S", .counted = mode_shapes, .dflt = 1},
    {"threads", " T", .counted = mode_threads, .dflt = 1},
    {"threadevents", "", .plain = mode_threadevents},
    {"fork", "", .plain = mode_fork},
    {"autotune", "", .plain = run_autotune},
    {"wrongpack", "", .plain = run_wrongpack},
    {"churn", " N", .counted = run_churn, .dflt = 1},
    {"packthreads", "", .plain = run_packthreads},
    {"planswap", "", .plain = mode_planswap},
    {"packreuse", "", .plain = mode_packreuse},
    {"packcascade", "", .plain = mode_packcascade},
    {"packmany", "", .plain = mode_packmany},
    {"convthreads", "", .plain = mode_convthreads},
    {"forkidle", "", .plain = mode_forkidle},
    {"forkloop", " N", .counted = mode_forkloop, .dflt = 100},
    {"closeall", " N", .counted = mode_closeall, .dflt = 100},
    {"seccomp", " N", .counted = mode_seccomp, .dflt = 50},
    {"closeall_exit", " N", .counted = mode_closeall_exit, .dflt = 1},
    {"rawclone", "", .plain = mode_rawclone},
    {"forkfresh", "", .plain = mode_forkfresh},
    {"forkfresh_exit", "", .plain = mode_forkfresh_exit},
    {"capture", " [ptds]", .named = mode_capture},
    {"chdir", " DIR", .named = mode_chdir},
    {"cancelpending", " exec|exit|spawn", .named = mode_cancelpending},
    {"groups64", "", .plain = mode_groups64},
    {"groups70", "", .plain = mode_groups70},
    {"groupsmoe", " N", .counted = mode_groupsmoe, .dflt = 1},
    {"groupsplit", " G", .counted = mode_groupsplit, .dflt = 64},
    {"first_stack", " FILE", .named = mode_first_stack},
    {"autotune_small", " [KIB]", .counted = mode_autotune_small, .dflt = 0},
    {"lossscale", "", .plain = mode_lossscale},
    {"nvtxkinds", "", .plain = mode_nvtxkinds},
    {"overflow", "", .plain = mode_overflow},
    {"infref", "", .plain = mode_infref},
    {"shadowedge", "", .plain = mode_shadowedge},
    {"groupconv", " G", .counted = mode_groupconv, .dflt = 2},
    {"conv3d", "", .plain = mode_conv3d},
    {"bematmul", "", .plain = mode_bematmul},
    {"exec", " [N]", .counted = mode_exec, .dflt = 0},
    {"rankexec", " [STEP:N]", .named = mode_rankexec},
    {"cleanexec", "", .plain = mode_cleanexec},
    {"cleanspawn", "", .plain = mode_cleanspawn},
    {"keepexec", " DIR", .named = mode_keepexec},
    {"keepspawn", " DIR", .named = mode_keepspawn},
    {"bigspawn", " DIR", .named = mode_bigspawn},
    {"inflight", "", .plain = run_inflight},
    {"orphan", " [SECS]", .counted = mode_orphan, .dflt = 3},
    {"exit3", "", .plain = run_exit3},
    {"wait", "", .plain = run_wait},
    {"finalfails", "", .plain = mode_finalfails},
    {"rank", "", .plain = mode_rank},
    {"models", "", .plain = mode_models},
};

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (!strcmp(mode, modes[i].name)) {
      const char *arg = argc > 2 ? argv[2] : NULL;
      if (modes[i].plain) return modes[i].plain();
      if (modes[i].counted) return modes[i].counted(arg ? atoi(arg) : modes[i].dflt);
      return modes[i].named(arg);
    }
  fputs("usage: mpp_testprog MODE [ARG], MODE one of:", stderr);
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    fprintf(stderr, "%s %s%s", i ? " |" : "", modes[i].name, modes[i].args);
  fputc('\n', stderr);
  return 2;
}
