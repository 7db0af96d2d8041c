// Exports for the kernel layer: the type table, reference (de)quantizers, a direct matrix
// product for kernel tests, and the kernel level switch.
#include <napi.h>

namespace kiln {

void registerKernelExports(Napi::Env env, Napi::Object exports) {}

}  // namespace kiln
