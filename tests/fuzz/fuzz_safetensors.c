/* libFuzzer target for the safetensors reader (fuzz_tensor_set.h). */
#include "report/tensorio/safetensors.h"
#include "tests/fuzz/fuzz_tensor_set.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_tensor_set(mpprof_safetensors_parse, data, size);
}
