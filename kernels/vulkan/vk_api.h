// The Vulkan entry points the backend uses, reached through dlopen("libvulkan.so.1") so that no
// binary links the loader and every binary starts on a machine without it. <vulkan/vulkan.h>
// supplies types only (VK_NO_PROTOTYPES); every function comes from vkGetInstanceProcAddr /
// vkGetDeviceProcAddr.
//
// Contract:
//   - VulkanLoader::open() is Unsupported "no Vulkan loader: ..." when libvulkan cannot be
//     opened or lacks vkGetInstanceProcAddr (the caller turns that into "no Vulkan device").
//   - load_instance() / load_device() fill the instance- and device-level tables; a missing
//     function is Unsupported naming it (a Vulkan 1.0-only driver lacks the 1.1 queries).
//   - Tables are plain function pointers: thread-safety is Vulkan's own (external
//     synchronisation of queues, pools and command buffers is the caller's).
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <memory>
#include <string>

#include "common/dynamic_library.h"
#include "common/status.h"

namespace am::kernels::vulkan {

// X-macros: one line per function, so the tables and their loaders cannot drift apart.
#define AM_VK_GLOBAL_FUNCTIONS(X) \
  X(vkCreateInstance)             \
  X(vkEnumerateInstanceVersion)

#define AM_VK_INSTANCE_FUNCTIONS(X)            \
  X(vkDestroyInstance)                         \
  X(vkEnumeratePhysicalDevices)                \
  X(vkGetPhysicalDeviceProperties)             \
  X(vkGetPhysicalDeviceProperties2)            \
  X(vkGetPhysicalDeviceFeatures)               \
  X(vkGetPhysicalDeviceFeatures2)              \
  X(vkGetPhysicalDeviceQueueFamilyProperties)  \
  X(vkGetPhysicalDeviceMemoryProperties)       \
  X(vkEnumerateDeviceExtensionProperties)      \
  X(vkCreateDevice)                            \
  X(vkGetDeviceProcAddr)

#define AM_VK_DEVICE_FUNCTIONS(X)      \
  X(vkDestroyDevice)                   \
  X(vkGetDeviceQueue)                  \
  X(vkDeviceWaitIdle)                  \
  X(vkQueueSubmit)                     \
  X(vkCreateBuffer)                    \
  X(vkDestroyBuffer)                   \
  X(vkGetBufferMemoryRequirements)     \
  X(vkAllocateMemory)                  \
  X(vkFreeMemory)                      \
  X(vkBindBufferMemory)                \
  X(vkMapMemory)                       \
  X(vkUnmapMemory)                     \
  X(vkCreateShaderModule)              \
  X(vkDestroyShaderModule)             \
  X(vkCreateDescriptorSetLayout)       \
  X(vkDestroyDescriptorSetLayout)      \
  X(vkCreatePipelineLayout)            \
  X(vkDestroyPipelineLayout)           \
  X(vkCreateComputePipelines)          \
  X(vkDestroyPipeline)                 \
  X(vkCreateDescriptorPool)            \
  X(vkDestroyDescriptorPool)           \
  X(vkResetDescriptorPool)             \
  X(vkAllocateDescriptorSets)          \
  X(vkUpdateDescriptorSets)            \
  X(vkCreateCommandPool)               \
  X(vkDestroyCommandPool)              \
  X(vkAllocateCommandBuffers)          \
  X(vkResetCommandBuffer)              \
  X(vkBeginCommandBuffer)              \
  X(vkEndCommandBuffer)                \
  X(vkCmdBindPipeline)                 \
  X(vkCmdBindDescriptorSets)           \
  X(vkCmdPushConstants)                \
  X(vkCmdDispatch)                     \
  X(vkCmdPipelineBarrier)              \
  X(vkCmdCopyBuffer)                   \
  X(vkCmdFillBuffer)                   \
  X(vkCmdWriteTimestamp)               \
  X(vkCmdResetQueryPool)               \
  X(vkCreateQueryPool)                 \
  X(vkDestroyQueryPool)                \
  X(vkGetQueryPoolResults)             \
  X(vkCreateFence)                     \
  X(vkDestroyFence)                    \
  X(vkResetFences)                     \
  X(vkWaitForFences)

#define AM_VK_DECLARE(name) PFN_##name name = nullptr;

struct GlobalFns {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
  AM_VK_GLOBAL_FUNCTIONS(AM_VK_DECLARE)
};
struct InstanceFns {
  AM_VK_INSTANCE_FUNCTIONS(AM_VK_DECLARE)
  // Optional (null where the loader does not know VK_NV_cooperative_matrix).
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV vkGetPhysicalDeviceCooperativeMatrixPropertiesNV = nullptr;
};
struct DeviceFns {
  AM_VK_DEVICE_FUNCTIONS(AM_VK_DECLARE)
};

// The loader library and its global functions. Shared (shared_ptr) by everything created from
// it, so the library outlives every handle (it is opened RTLD_NODELETE anyway).
class VulkanLoader {
 public:
  static Result<std::shared_ptr<const VulkanLoader>> open();

  const GlobalFns& global() const { return global_; }
  const std::string& path() const { return library_.path(); }
  Result<InstanceFns> load_instance(VkInstance instance) const;
  Result<DeviceFns> load_device(const InstanceFns& inst, VkDevice device) const;

 private:
  explicit VulkanLoader(DynamicLibrary library) : library_(std::move(library)) {}
  DynamicLibrary library_;
  GlobalFns global_;
};

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc., for messages.
std::string vk_result_name(VkResult r);
// Internal "<what>: <VkResult>" unless r is VK_SUCCESS (out-of-memory results are
// ResourceExhausted).
Status vk_check(VkResult r, const char* what);

}  // namespace am::kernels::vulkan
