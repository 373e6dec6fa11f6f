/* A stand-in for a CUDA injection library (what mpprof is when named by
 * CUDA_INJECTION64_PATH): counts InitializeInjection calls and calls back
 * into the driver from inside, as a real tool does. */
#include <cuda.h>

__attribute__((visibility("default"))) int simcuda_test_injection_calls;
__attribute__((visibility("default"))) CUresult simcuda_test_injection_nested;

__attribute__((visibility("default"))) int InitializeInjection(void) {
  simcuda_test_injection_calls++;
  simcuda_test_injection_nested = cuInit(0);
  return 1;
}
