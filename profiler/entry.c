/* Entry points other libraries and programs call into libmpprof.so (besides
 * the hooks): NVTX's injection initialiser and the mpprof.h training marks,
 * framework and rank notes. Each one initialises the runtime first, then
 * hands over to the module that does the work (nvtx.c, train.c, process.c),
 * so those modules never call up into the runtime (docs/profiler.md, "Inside
 * libmpprof.so"). */
#include "mpp.h"

#include "profiler/include/mpprof.h"
#include "profiler/nvtx.h"
#include "profiler/process.h"
#include "profiler/runtime.h"
#include "profiler/train.h"

MPP_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  mpp_init();
  if (mpp_cfg.disabled || !get_export_table) return 0;
  return mpp_nvtx_inject(get_export_table);
}

static bool enabled(void) {
  mpp_init();
  return !mpp_cfg.disabled;
}

MPP_EXPORT void mpprof_loss_scale(double s) {
  if (enabled()) mpp_train_loss_scale(s);
}

MPP_EXPORT void mpprof_framework(const char *name, const char *version,
                                 const char *backward_marks) {
  if (enabled()) mpp_process_note_framework(name, version, backward_marks);
}

MPP_EXPORT void mpprof_model_root(const char *name, const char *module_class) {
  if (enabled()) mpp_process_note_model(name, module_class);
}

MPP_EXPORT void mpprof_rank(int32_t rank, int32_t world_size) {
  if (enabled()) mpp_process_note_rank(rank, world_size);
}

MPP_EXPORT void mpprof_checkpoint(void) {
  if (enabled()) mpp_runtime_checkpoint();
}

MPP_EXPORT void mpprof_exit_now(void) {
  if (enabled()) mpp_runtime_before_exec();
}

MPP_EXPORT void mpprof_step(uint64_t n) {
  if (enabled()) mpp_train_mark_step(n);
}

MPP_EXPORT void mpprof_step_skipped(uint64_t n) {
  if (enabled()) mpp_train_mark_skipped(n);
}
