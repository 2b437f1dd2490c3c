#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/opencl/opencl_backend.h"
#if defined(AM_HAVE_VULKAN)
#include "kernels/vulkan/vulkan_backend.h"
#endif

namespace am::kernels {

Result<std::unique_ptr<Backend>> make_backend(std::string_view name, const ExecContext& ctx) {
  if (name == "cpu") return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(ctx));
  if (name == "opencl") return make_opencl_backend();
  if (name == "vulkan") {
#if defined(AM_HAVE_VULKAN)
    return make_vulkan_backend();
#else
    return unsupported("backend vulkan is not available in this build (glslc or the Vulkan headers were missing "
                       "when it was configured)");
#endif
  }
  return unsupported("backend " + std::string(name) + " is not available in this build");
}

}  // namespace am::kernels
