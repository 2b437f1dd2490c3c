#include "kernels/vulkan/vk_api.h"

#include <vector>

namespace am::kernels::vulkan {
namespace {

const char* const kLoaderNames[] = {"libvulkan.so.1", "libvulkan.so"};

}  // namespace

Result<std::shared_ptr<const VulkanLoader>> VulkanLoader::open() {
  Result<DynamicLibrary> lib =
      DynamicLibrary::open_first(std::vector<std::string>(std::begin(kLoaderNames), std::end(kLoaderNames)));
  if (!lib.ok()) return unsupported("no Vulkan loader: " + lib.status().message());
  std::shared_ptr<VulkanLoader> loader(new VulkanLoader(std::move(lib).value()));
  GlobalFns& g = loader->global_;
  g.vkGetInstanceProcAddr = loader->library_.function<PFN_vkGetInstanceProcAddr>("vkGetInstanceProcAddr");
  if (g.vkGetInstanceProcAddr == nullptr) {
    return unsupported("no Vulkan loader: " + loader->path() + " does not export vkGetInstanceProcAddr");
  }
#define AM_VK_LOAD_GLOBAL(name) \
  g.name = reinterpret_cast<PFN_##name>(g.vkGetInstanceProcAddr(VK_NULL_HANDLE, #name));
  AM_VK_GLOBAL_FUNCTIONS(AM_VK_LOAD_GLOBAL)
#undef AM_VK_LOAD_GLOBAL
  if (g.vkCreateInstance == nullptr) return unsupported("no Vulkan loader: vkCreateInstance missing");
  // vkEnumerateInstanceVersion is absent from a 1.0 loader; instance creation then asks for 1.0
  // and device selection finds no device with the 1.1 queries the backend needs.
  return std::shared_ptr<const VulkanLoader>(std::move(loader));
}

Result<InstanceFns> VulkanLoader::load_instance(VkInstance instance) const {
  InstanceFns f;
#define AM_VK_LOAD_INSTANCE(name)                                                            \
  f.name = reinterpret_cast<PFN_##name>(global_.vkGetInstanceProcAddr(instance, #name));     \
  if (f.name == nullptr) return unsupported("Vulkan loader lacks " #name " (Vulkan 1.1 needed)");
  AM_VK_INSTANCE_FUNCTIONS(AM_VK_LOAD_INSTANCE)
#undef AM_VK_LOAD_INSTANCE
  f.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      global_.vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  return f;
}

Result<DeviceFns> VulkanLoader::load_device(const InstanceFns& inst, VkDevice device) const {
  DeviceFns f;
#define AM_VK_LOAD_DEVICE(name)                                                   \
  f.name = reinterpret_cast<PFN_##name>(inst.vkGetDeviceProcAddr(device, #name)); \
  if (f.name == nullptr) return unsupported("Vulkan driver lacks " #name);
  AM_VK_DEVICE_FUNCTIONS(AM_VK_LOAD_DEVICE)
#undef AM_VK_LOAD_DEVICE
  return f;
}

std::string vk_result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver installed)";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult " + std::to_string(static_cast<int>(r));
  }
}

Status vk_check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return Status::Ok();
  const std::string m = std::string(what) + ": " + vk_result_name(r);
  if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY) return resource_exhausted(m);
  return internal_error(m);
}

}  // namespace am::kernels::vulkan
