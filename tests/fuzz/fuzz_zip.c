/* libFuzzer target for the zip reader (torch.save checkpoints, .npz; strided
 * views gathered when scanned): fuzz_tensor_set.h. */
#include "report/tensorio/zipfile.h"
#include "tests/fuzz/fuzz_tensor_set.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_tensor_set(mpprof_zip_parse, data, size);
}
