/* simcuda libcuda.so.1 and libcudart.so.13: what they report (device,
 * versions, host memory, no capture), what they do (copies, memsets,
 * streams, events), and what they refuse (unknown attributes, symbols they
 * do not implement, foreign pointers). */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include "simcuda_internal.h"

static void driver_reports_one_simcuda_device_of_compute_capability_9_0(void **state) {
  (void)state;
  int count = -1, version = 0, major = 0, minor = -1;
  char name[64];
  CUdevice dev = -1;
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuDriverGetVersion(&version), CUDA_SUCCESS);
  assert_int_equal(version, 13000);
  assert_int_equal(cuDeviceGetCount(&count), CUDA_SUCCESS);
  assert_int_equal(count, 1);
  assert_int_equal(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  assert_int_equal(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  assert_int_equal(cuDeviceGetName(name, sizeof(name), dev), CUDA_SUCCESS);
  assert_string_equal(name, "simcuda (CPU)");
  assert_int_equal(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
                   CUDA_SUCCESS);
  assert_int_equal(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
                   CUDA_SUCCESS);
  assert_int_equal(major, 9);
  assert_int_equal(minor, 0);
  int v;
  assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, dev),
                   CUDA_ERROR_NOT_SUPPORTED);
  /* A name shorter than the buffer still comes back terminated. */
  assert_int_equal(cuDeviceGetName(name, 4, dev), CUDA_SUCCESS);
  assert_string_equal(name, "sim");
}

/* cuda.h, cuStreamGetCtx: a special stream (NULL, CU_STREAM_LEGACY,
 * CU_STREAM_PER_THREAD) names the calling thread's current context, and
 * "If no context is current to the calling thread,
 * CUDA_ERROR_INVALID_CONTEXT is returned"; a created stream keeps the
 * context it was made in. What needs a current context fails alike; cudart
 * makes the primary one current again. */
static void special_streams_need_a_current_context(void **state) {
  (void)state;
  cuInit(0);
  CUcontext primary = NULL, c = NULL;
  CUgreenCtx green = NULL;
  CUdevice dev = -1;
  CUstream made, s2;
  assert_int_equal(cuDevicePrimaryCtxRetain(&primary, 0), CUDA_SUCCESS);
  assert_int_equal(cuStreamCreate(&made, 0), CUDA_SUCCESS);
  assert_int_equal(cuStreamGetCtx(NULL, &c), CUDA_SUCCESS);
  assert_ptr_equal(c, primary);

  assert_int_equal(cuCtxSetCurrent(NULL), CUDA_SUCCESS);
  c = primary;
  assert_int_equal(cuCtxGetCurrent(&c), CUDA_SUCCESS);
  assert_null(c);
  const CUstream special[] = {NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD};
  for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) {
    assert_int_equal(cuStreamGetCtx(special[i], &c), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cuStreamGetCtx_v2(special[i], &c, &green), CUDA_ERROR_INVALID_CONTEXT);
  }
  assert_int_equal(cuStreamGetCtx(made, &c), CUDA_SUCCESS);
  assert_ptr_equal(c, primary);
  assert_int_equal(cuCtxGetDevice(&dev), CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(cuStreamCreate(&s2, 0), CUDA_ERROR_INVALID_CONTEXT);

  cudaStream_t rs;
  assert_int_equal(cudaStreamCreate(&rs), cudaSuccess);
  assert_int_equal(cuStreamGetCtx(CU_STREAM_PER_THREAD, &c), CUDA_SUCCESS);
  assert_ptr_equal(c, primary);
  assert_int_equal(cudaStreamDestroy(rs), cudaSuccess);
  assert_int_equal(cuStreamDestroy(made), CUDA_SUCCESS);
}

typedef struct fresh_thread {
  CUstream made; /* created on the main thread */
  CUcontext primary;
  CUcontext before, after_query, after_runtime, after_launch;
  CUresult ctx_device, legacy_capturing, legacy_sync, create, made_capturing;
} fresh_thread;

static void *driver_calls_then_runtime(void *p) {
  fresh_thread *t = p;
  CUdevice dev;
  CUstream s;
  CUstreamCaptureStatus st;
  cuCtxGetCurrent(&t->before);
  t->ctx_device = cuCtxGetDevice(&dev);
  t->legacy_capturing = cuStreamIsCapturing(NULL, &st);
  t->legacy_sync = cuStreamSynchronize(CU_STREAM_LEGACY);
  t->create = cuStreamCreate(&s, 0);
  t->made_capturing = cuStreamIsCapturing(t->made, &st);
  int n = 0, d = -1;
  cudaGetDeviceCount(&n); /* device queries need no context */
  cudaGetDevice(&d);
  cuCtxGetCurrent(&t->after_query);
  void *m = NULL;
  cudaMalloc(&m, 16);
  cudaFree(m);
  cuCtxGetCurrent(&t->after_runtime);
  return NULL;
}

static void *library_launch(void *p) {
  fresh_thread *t = p;
  simcuda_kernel k = {.name = "k", .stream = NULL, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  cuCtxGetCurrent(&t->before);
  simcuda_kernel_finish(&k, simcuda_kernel_start(&k));
  cuCtxGetCurrent(&t->after_launch);
  return NULL;
}

/* cuda.h, cuCtxGetCurrent: with no context bound to the thread *pctx is
 * NULL. A thread starts with none: the driver binds one only when told
 * (cuCtxSetCurrent); cuda_runtime_api.h ("Initialization and Tear-Down"):
 * the runtime makes the primary context current at a thread's first call
 * that requires an active context, and the libraries' launches (their
 * static runtime) alike. Until then the special streams are
 * CUDA_ERROR_INVALID_CONTEXT, a created stream still works. */
static void a_new_thread_has_no_context_until_the_runtime_binds_the_primary_one(void **state) {
  (void)state;
  fresh_thread t;
  memset(&t, 0, sizeof t);
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuDevicePrimaryCtxRetain(&t.primary, 0), CUDA_SUCCESS);
  assert_int_equal(cudaStreamCreate((cudaStream_t *)&t.made), cudaSuccess);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, driver_calls_then_runtime, &t), 0);
  pthread_join(th, NULL);
  assert_null(t.before);
  assert_int_equal(t.ctx_device, CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(t.legacy_capturing, CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(t.legacy_sync, CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(t.create, CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(t.made_capturing, CUDA_SUCCESS);
  assert_null(t.after_query);
  assert_ptr_equal(t.after_runtime, t.primary);

  memset(&t.before, 0, sizeof t.before);
  assert_int_equal(pthread_create(&th, NULL, library_launch, &t), 0);
  pthread_join(th, NULL);
  assert_null(t.before);
  assert_ptr_equal(t.after_launch, t.primary);
  assert_int_equal(cudaStreamDestroy((cudaStream_t)t.made), cudaSuccess);
}

typedef struct stack_seen {
  CUcontext primary;
  CUcontext after_push, after_set_null, after_pop;
  CUresult push, pop, popped_empty, set_null_empty;
  CUcontext popped;
} stack_seen;

static void *push_and_pop(void *p) {
  stack_seen *t = p;
  t->set_null_empty = cuCtxSetCurrent(NULL); /* "a no-op if ... empty" */
  t->push = cuCtxPushCurrent(t->primary);
  cuCtxGetCurrent(&t->after_push);
  assert_int_equal(cuCtxPushCurrent(t->primary), CUDA_SUCCESS);
  assert_int_equal(cuCtxSetCurrent(NULL), CUDA_SUCCESS); /* pops the top one */
  cuCtxGetCurrent(&t->after_set_null);
  t->pop = cuCtxPopCurrent(&t->popped);
  cuCtxGetCurrent(&t->after_pop);
  t->popped_empty = cuCtxPopCurrent(&t->popped);
  return NULL;
}

/* cuda.h: cuCtxPushCurrent makes ctx current on top of the thread's stack,
 * cuCtxPopCurrent hands back the top and makes the one below current (none
 * left: no current context), cuCtxSetCurrent(NULL) pops the top or does
 * nothing on an empty stack. Both are found by cuGetProcAddress. */
static void contexts_push_and_pop_on_a_per_thread_stack(void **state) {
  (void)state;
  stack_seen t;
  memset(&t, 0, sizeof t);
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuDevicePrimaryCtxRetain(&t.primary, 0), CUDA_SUCCESS);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, push_and_pop, &t), 0);
  pthread_join(th, NULL);
  assert_int_equal(t.set_null_empty, CUDA_SUCCESS);
  assert_int_equal(t.push, CUDA_SUCCESS);
  assert_ptr_equal(t.after_push, t.primary);
  assert_ptr_equal(t.after_set_null, t.primary); /* the pushed one below */
  assert_int_equal(t.pop, CUDA_SUCCESS);
  assert_ptr_equal(t.popped, t.primary);
  assert_null(t.after_pop);
  assert_int_equal(t.popped_empty, CUDA_ERROR_INVALID_CONTEXT);
  void *fn = NULL;
  assert_int_equal(
      cuGetProcAddress("cuCtxPushCurrent", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
      CUDA_SUCCESS);
  assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, "cuCtxPushCurrent_v2"));
  assert_int_equal(
      cuGetProcAddress("cuCtxPopCurrent", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
      CUDA_SUCCESS);
  assert_ptr_equal(fn, dlsym(RTLD_DEFAULT, "cuCtxPopCurrent_v2"));
}

/* cuda.h, cuPointerGetAttribute: memory CUDA did not allocate, map or
 * register is CUDA_ERROR_INVALID_VALUE; cuPointerGetAttributes instead
 * succeeds with "default NULL values"; a value that is no attribute is
 * CUDA_ERROR_INVALID_VALUE, and so is a NULL data pointer.
 * cuda_runtime_api.h: cudaPointerGetAttributes says cudaMemoryTypeUnregistered. */
static void memory_cuda_never_saw_is_refused_or_null(void **state) {
  (void)state;
  cuInit(0);
  int x = 0;
  CUmemorytype type = CU_MEMORYTYPE_DEVICE;
  CUcontext pctx = (CUcontext)&x;
  const CUpointer_attribute every[] = {
      CU_POINTER_ATTRIBUTE_MEMORY_TYPE,      CU_POINTER_ATTRIBUTE_CONTEXT,
      CU_POINTER_ATTRIBUTE_DEVICE_POINTER,   CU_POINTER_ATTRIBUTE_HOST_POINTER,
      CU_POINTER_ATTRIBUTE_IS_MANAGED,       CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof every / sizeof every[0]; i++)
    assert_int_equal(cuPointerGetAttribute(&v, every[i], (CUdeviceptr)&x),
                     CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)&x),
                   CUDA_ERROR_INVALID_VALUE);
  assert_int_equal(cuPointerGetAttribute(&v, (CUpointer_attribute)999, (CUdeviceptr)&x),
                   CUDA_ERROR_INVALID_VALUE);
  CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT};
  void *data[2] = {&type, &pctx};
  assert_int_equal(cuPointerGetAttributes(2, attrs, data, (CUdeviceptr)&x), CUDA_SUCCESS);
  assert_int_equal(type, 0);
  assert_null(pctx);
  struct cudaPointerAttributes ra;
  assert_int_equal(cudaPointerGetAttributes(&ra, &x), cudaSuccess);
  assert_int_equal(ra.type, cudaMemoryTypeUnregistered);
}

static void cuda_memory_is_host_memory_in_the_primary_context(void **state) {
  (void)state;
  cuInit(0);
  CUcontext ctx = NULL, sctx = NULL;
  assert_int_equal(cuCtxGetCurrent(&ctx), CUDA_SUCCESS);
  assert_non_null(ctx);
  char *buf = NULL;
  assert_int_equal(cudaMalloc((void **)&buf, 100), cudaSuccess);
  CUdeviceptr x = (CUdeviceptr)(buf + 10);
  CUmemorytype type = 0;
  assert_int_equal(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, x), CUDA_SUCCESS);
  assert_int_equal(type, CU_MEMORYTYPE_HOST);
  CUdeviceptr start = 0;
  size_t size = 0;
  assert_int_equal(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, x),
                   CUDA_SUCCESS);
  assert_int_equal(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, x), CUDA_SUCCESS);
  assert_ptr_equal((void *)start, buf);
  assert_int_equal(size, 100);
  CUpointer_attribute attrs[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_CONTEXT};
  CUcontext pctx = NULL;
  void *data[2] = {&type, &pctx};
  type = 0;
  assert_int_equal(cuPointerGetAttributes(2, attrs, data, x), CUDA_SUCCESS);
  assert_int_equal(type, CU_MEMORYTYPE_HOST);
  assert_ptr_equal(pctx, ctx);
  struct cudaPointerAttributes ra;
  assert_int_equal(cudaPointerGetAttributes(&ra, buf), cudaSuccess);
  assert_int_equal(ra.type, cudaMemoryTypeHost);
  assert_int_equal(cudaFree(buf), cudaSuccess);
  /* Freed, the address is no CUDA memory any more. */
  assert_int_equal(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, x),
                   CUDA_ERROR_INVALID_VALUE);
  CUstream s;
  assert_int_equal(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  assert_int_equal(cuStreamGetCtx(s, &sctx), CUDA_SUCCESS);
  assert_ptr_equal(sctx, ctx);
  CUstreamCaptureStatus cap = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  assert_int_equal(cuStreamIsCapturing(s, &cap), CUDA_SUCCESS);
  assert_int_equal(cap, CU_STREAM_CAPTURE_STATUS_NONE);
  assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
  assert_int_equal(cuStreamSynchronize(NULL), CUDA_SUCCESS);
  assert_int_equal(cuStreamDestroy(s), CUDA_SUCCESS);
  int garbage[4] = {0};
  assert_int_equal(cuStreamSynchronize((CUstream)garbage), CUDA_ERROR_INVALID_HANDLE);
}

typedef CUresult (*get_count_fn)(int *);
typedef CUresult (*stream_sync_fn)(CUstream);

static void get_proc_address_finds_implemented_entry_points_only(void **state) {
  (void)state;
  void *fn = NULL;
  CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  assert_int_equal(
      cuGetProcAddress("cuDeviceGetCount", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &q),
      CUDA_SUCCESS);
  assert_int_equal(q, CU_GET_PROC_ADDRESS_SUCCESS);
  int count = 0;
  assert_int_equal(((get_count_fn)fn)(&count), CUDA_SUCCESS);
  assert_int_equal(count, 1);
  assert_int_equal(cuGetProcAddress("cuStreamSynchronize", &fn, 13000,
                                    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &q),
                   CUDA_SUCCESS);
  assert_int_equal(((stream_sync_fn)fn)(NULL), CUDA_SUCCESS);
  assert_int_equal(cuGetProcAddress("cuLaunchKernel", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &q),
                   CUDA_ERROR_NOT_FOUND);
  assert_null(fn);
  assert_int_equal(q, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  /* cuStreamGetId exists from CUDA 12.0 on. */
  assert_int_equal(cuGetProcAddress("cuStreamGetId", &fn, 11080, CU_GET_PROC_ADDRESS_DEFAULT, &q),
                   CUDA_ERROR_NOT_FOUND);
  assert_int_equal(q, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

typedef CUresult (*stream_ctx_v2_fn)(CUstream, CUcontext *, CUgreenCtx *);

/* From 12.5 on the name cuStreamGetCtx resolves to the three-argument form
 * (PFN_cuStreamGetCtx_v12050); older versions get the two-argument one. */
static void get_proc_address_versions_cuStreamGetCtx_like_the_driver(void **state) {
  (void)state;
  void *fn = NULL;
  CUcontext ctx = NULL;
  CUgreenCtx green = (CUgreenCtx)&fn;
  assert_int_equal(
      cuGetProcAddress("cuStreamGetCtx", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
      CUDA_SUCCESS);
  assert_int_equal(((stream_ctx_v2_fn)fn)(NULL, &ctx, &green), CUDA_SUCCESS);
  assert_non_null(ctx);
  assert_null(green);
  assert_int_equal(
      cuGetProcAddress("cuStreamGetCtx", &fn, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL),
      CUDA_SUCCESS);
  assert_ptr_equal(fn, (void *)cuStreamGetCtx);
}

typedef CUresult (*ctx_get_device_v2_fn)(CUdevice *, CUcontext);
typedef CUresult (*ctx_sync_v2_fn)(CUcontext);

/* CUDA 13 gave both a context parameter: from 13.0 on their names resolve
 * to cuCtxGetDevice_v2 / cuCtxSynchronize_v2 (PFN_cuCtxGetDevice_v13000,
 * PFN_cuCtxSynchronize_v13000); older versions get the forms without it. */
static void get_proc_address_versions_the_context_calls_like_the_driver(void **state) {
  (void)state;
  void *fn = NULL;
  CUdriverProcAddressQueryResult q = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
  assert_int_equal(cuGetProcAddress("cuCtxGetDevice", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &q),
                   CUDA_SUCCESS);
  assert_int_equal(q, CU_GET_PROC_ADDRESS_SUCCESS);
  void *v2 = dlsym(RTLD_DEFAULT, "cuCtxGetDevice_v2"); /* exported as by the driver */
  assert_non_null(v2);
  assert_ptr_equal(fn, v2);
  CUdevice dev = -1;
  assert_int_equal(((ctx_get_device_v2_fn)fn)(&dev, NULL), CUDA_SUCCESS);
  assert_int_equal(dev, 0);
  assert_int_equal(((ctx_get_device_v2_fn)fn)(&dev, (CUcontext)&dev), CUDA_ERROR_INVALID_CONTEXT);
  assert_int_equal(cuGetProcAddress("cuCtxGetDevice", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &q),
                   CUDA_SUCCESS);
  assert_ptr_equal(fn, (void *)cuCtxGetDevice);
  assert_int_equal(
      cuGetProcAddress("cuCtxSynchronize", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &q),
      CUDA_SUCCESS);
  v2 = dlsym(RTLD_DEFAULT, "cuCtxSynchronize_v2");
  assert_non_null(v2);
  assert_ptr_equal(fn, v2);
  assert_int_equal(((ctx_sync_v2_fn)fn)(NULL), CUDA_SUCCESS);
  assert_int_equal(
      cuGetProcAddress("cuCtxSynchronize", &fn, 12080, CU_GET_PROC_ADDRESS_DEFAULT, &q),
      CUDA_SUCCESS);
  assert_ptr_equal(fn, (void *)cuCtxSynchronize);
}

/* What simcuda cannot do (run device code, allocate through the driver) is
 * simply not there, so a program fails at the call instead of computing
 * nothing. */
typedef CUresult (*void_fn)(void);

/* A program bracketing steps with cudaProfilerStart/Stop (nsys's capture
 * range) links and runs on simcuda: both pairs exist and succeed, and the
 * driver pair is found by cuGetProcAddress as well. */
static void profiler_start_and_stop_exist_in_runtime_and_driver(void **state) {
  (void)state;
  assert_int_equal(cudaProfilerStart(), cudaSuccess);
  assert_int_equal(cudaProfilerStop(), cudaSuccess);
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  assert_int_equal(cuProfilerStart(), CUDA_SUCCESS);
  assert_int_equal(cuProfilerStop(), CUDA_SUCCESS);
  void *fn = NULL;
  CUdriverProcAddressQueryResult q;
  assert_int_equal(cuGetProcAddress("cuProfilerStop", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &q),
                   CUDA_SUCCESS);
  assert_int_equal(((void_fn)fn)(), CUDA_SUCCESS);
}

static void unimplemented_driver_entry_points_are_not_exported(void **state) {
  (void)state;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(lib);
  assert_non_null(dlsym(lib, "cuInit"));
  assert_null(dlsym(lib, "cuLaunchKernel"));
  assert_null(dlsym(lib, "cuModuleLoadData"));
  assert_null(dlsym(lib, "cuMemAlloc_v2"));
  dlclose(lib);
}

static void runtime_copies_and_sets_memory_on_the_host(void **state) {
  (void)state;
  unsigned char *d = NULL, *h = NULL;
  assert_int_equal(cudaMalloc((void **)&d, 64), cudaSuccess);
  assert_int_equal((uintptr_t)d % 256, 0);
  assert_int_equal(cudaMallocHost((void **)&h, 64), cudaSuccess);
  for (int i = 0; i < 64; i++)
    h[i] = (unsigned char)i;
  assert_int_equal(cudaMemcpy(d, h, 64, cudaMemcpyHostToDevice), cudaSuccess);
  assert_int_equal(cudaMemsetAsync(d + 8, 0xab, 8, NULL), cudaSuccess);
  memset(h, 0, 64);
  assert_int_equal(cudaMemcpyAsync(h, d, 64, cudaMemcpyDeviceToHost, NULL), cudaSuccess);
  assert_int_equal(cudaStreamSynchronize(NULL), cudaSuccess);
  for (int i = 0; i < 64; i++)
    assert_int_equal(h[i], i >= 8 && i < 16 ? 0xab : i);
  assert_int_equal(cudaMemcpy(h, d, 4, (enum cudaMemcpyKind)42), cudaErrorInvalidMemcpyDirection);
  assert_int_equal(cudaFree(d), cudaSuccess);
  assert_int_equal(cudaFreeHost(h), cudaSuccess);
  assert_int_equal(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
  assert_int_equal(cudaGetLastError(), cudaSuccess);
}

static void runtime_refuses_pointers_it_did_not_allocate(void **state) {
  (void)state;
  void *h = NULL;
  assert_int_equal(cudaMallocHost(&h, 16), cudaSuccess);
  assert_int_equal(cudaFree(h), cudaErrorInvalidValue); /* pinned host, not device */
  assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidValue);
  assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
  assert_int_equal(cudaFreeHost(h), cudaSuccess);
  assert_int_equal(cudaFree(NULL), cudaSuccess);
}

static void runtime_reports_the_device_and_versions(void **state) {
  (void)state;
  struct cudaDeviceProp p;
  int count = 0, dev = -1, rt = 0, drv = 0;
  assert_int_equal(cudaGetDeviceCount(&count), cudaSuccess);
  assert_int_equal(count, 1);
  assert_int_equal(cudaSetDevice(0), cudaSuccess);
  assert_int_equal(cudaSetDevice(1), cudaErrorInvalidDevice);
  assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
  assert_int_equal(dev, 0);
  assert_int_equal(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  assert_string_equal(p.name, "simcuda (CPU)");
  assert_int_equal(p.major, 9);
  assert_int_equal(p.minor, 0);
  assert_true(p.multiProcessorCount > 0);
  assert_int_equal(cudaRuntimeGetVersion(&rt), cudaSuccess);
  assert_int_equal(cudaDriverGetVersion(&drv), cudaSuccess);
  assert_int_equal(rt, 13000);
  assert_int_equal(drv, 13000);
  assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
  assert_string_equal(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  assert_string_equal(cudaGetErrorString(cudaSuccess), "no error");
  cudaGetLastError();
}

static void streams_have_distinct_ids_and_events_measure_host_time(void **state) {
  (void)state;
  cudaStream_t a, b;
  unsigned long long ia = 0, ib = 0, idef = 0;
  assert_int_equal(cudaStreamCreate(&a), cudaSuccess);
  assert_int_equal(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking), cudaSuccess);
  assert_int_equal(cudaStreamGetId(a, &ia), cudaSuccess);
  assert_int_equal(cudaStreamGetId(b, &ib), cudaSuccess);
  assert_int_equal(cudaStreamGetId(NULL, &idef), cudaSuccess);
  assert_int_not_equal(ia, ib);
  assert_int_equal(idef, 7);
  assert_int_equal(simcuda_stream_id((CUstream)a), ia);
  cudaEvent_t e0, e1, quiet;
  assert_int_equal(cudaEventCreate(&e0), cudaSuccess);
  assert_int_equal(cudaEventCreate(&e1), cudaSuccess);
  assert_int_equal(cudaEventCreateWithFlags(&quiet, cudaEventDisableTiming), cudaSuccess);
  float ms = -1;
  assert_int_equal(cudaEventElapsedTime(&ms, e0, e1),
                   cudaErrorInvalidResourceHandle); /* unrecorded */
  assert_int_equal(cudaEventRecord(e0, a), cudaSuccess);
  assert_int_equal(cudaEventRecord(e1, b), cudaSuccess);
  assert_int_equal(cudaEventRecord(quiet, b), cudaSuccess);
  assert_int_equal(cudaEventSynchronize(e1), cudaSuccess);
  assert_int_equal(cudaEventQuery(e1), cudaSuccess);
  assert_int_equal(cudaEventElapsedTime(&ms, e0, e1), cudaSuccess);
  assert_true(ms >= 0);
  assert_int_equal(cudaEventElapsedTime(&ms, e0, quiet), cudaErrorInvalidResourceHandle);
  assert_int_equal(cudaStreamWaitEvent(b, e0, 0), cudaSuccess);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaEventDestroy(quiet);
  assert_int_equal(cudaStreamDestroy(a), cudaSuccess);
  assert_int_equal(cudaStreamDestroy(b), cudaSuccess);
  cudaGetLastError();
}

/* A fork child of a process that initialised the driver cannot use it: the
 * real driver answers CUDA_ERROR_NOT_INITIALIZED to cuInit and to the calls
 * that need it there; the parent goes on as before. */
static void a_fork_child_of_an_initialised_process_cannot_use_the_driver(void **state) {
  (void)state;
  int count = -1;
  assert_int_equal(cuInit(0), CUDA_SUCCESS);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    CUdevice dev = -1;
    bool refused = cuInit(0) == CUDA_ERROR_NOT_INITIALIZED &&
                   cuDeviceGetCount(&count) == CUDA_ERROR_NOT_INITIALIZED &&
                   cuDeviceGet(&dev, 0) == CUDA_ERROR_NOT_INITIALIZED;
    _exit(refused ? 0 : 1);
  }
  int st = -1;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  assert_int_equal(cuDeviceGetCount(&count), CUDA_SUCCESS);
  assert_int_equal(count, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(driver_reports_one_simcuda_device_of_compute_capability_9_0),
      cmocka_unit_test(memory_cuda_never_saw_is_refused_or_null),
      cmocka_unit_test(cuda_memory_is_host_memory_in_the_primary_context),
      cmocka_unit_test(get_proc_address_finds_implemented_entry_points_only),
      cmocka_unit_test(get_proc_address_versions_cuStreamGetCtx_like_the_driver),
      cmocka_unit_test(special_streams_need_a_current_context),
      cmocka_unit_test(a_new_thread_has_no_context_until_the_runtime_binds_the_primary_one),
      cmocka_unit_test(contexts_push_and_pop_on_a_per_thread_stack),
      cmocka_unit_test(get_proc_address_versions_the_context_calls_like_the_driver),
      cmocka_unit_test(profiler_start_and_stop_exist_in_runtime_and_driver),
      cmocka_unit_test(unimplemented_driver_entry_points_are_not_exported),
      cmocka_unit_test(runtime_copies_and_sets_memory_on_the_host),
      cmocka_unit_test(runtime_refuses_pointers_it_did_not_allocate),
      cmocka_unit_test(runtime_reports_the_device_and_versions),
      cmocka_unit_test(streams_have_distinct_ids_and_events_measure_host_time),
      cmocka_unit_test(a_fork_child_of_an_initialised_process_cannot_use_the_driver),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
