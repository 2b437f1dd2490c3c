// RAII owners for the Vulkan objects a device creates: each destroys its handle with the
// device's own vkDestroy*/vkFree* function. Move-only; a default-constructed owner holds
// VK_NULL_HANDLE and destroys nothing. The VkDevice must outlive every owner made from it
// (VulkanDevice declares its owners after the device, so they are destroyed first).
#pragma once

#include <utility>

#include "kernels/vulkan/vk_api.h"

namespace am::kernels::vulkan {

// Every vkDestroyX / vkFreeMemory shares the signature (VkDevice, X, const VkAllocationCallbacks*).
template <typename Handle>
class DeviceHandle {
 public:
  using Destroy = void(VKAPI_PTR*)(VkDevice, Handle, const VkAllocationCallbacks*);

  DeviceHandle() = default;
  DeviceHandle(VkDevice device, Handle handle, Destroy destroy)
      : device_(device), handle_(handle), destroy_(destroy) {}
  DeviceHandle(DeviceHandle&& o) noexcept
      : device_(o.device_), handle_(std::exchange(o.handle_, VK_NULL_HANDLE)), destroy_(o.destroy_) {}
  DeviceHandle& operator=(DeviceHandle&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      handle_ = std::exchange(o.handle_, VK_NULL_HANDLE);
      destroy_ = o.destroy_;
    }
    return *this;
  }
  DeviceHandle(const DeviceHandle&) = delete;
  DeviceHandle& operator=(const DeviceHandle&) = delete;
  ~DeviceHandle() { reset(); }

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != VK_NULL_HANDLE; }
  void reset() {
    if (handle_ != VK_NULL_HANDLE && destroy_ != nullptr) destroy_(device_, handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }

 private:
  VkDevice device_ = VK_NULL_HANDLE;
  Handle handle_ = VK_NULL_HANDLE;
  Destroy destroy_ = nullptr;
};

using BufferHandle = DeviceHandle<VkBuffer>;
using MemoryHandle = DeviceHandle<VkDeviceMemory>;
using ShaderModuleHandle = DeviceHandle<VkShaderModule>;
using DescriptorSetLayoutHandle = DeviceHandle<VkDescriptorSetLayout>;
using PipelineLayoutHandle = DeviceHandle<VkPipelineLayout>;
using PipelineHandle = DeviceHandle<VkPipeline>;
using DescriptorPoolHandle = DeviceHandle<VkDescriptorPool>;
using CommandPoolHandle = DeviceHandle<VkCommandPool>;
using FenceHandle = DeviceHandle<VkFence>;
using QueryPoolHandle = DeviceHandle<VkQueryPool>;

// The instance (destroyed with vkDestroyInstance) and the device (vkDestroyDevice).
class InstanceHandle {
 public:
  InstanceHandle() = default;
  InstanceHandle(VkInstance h, PFN_vkDestroyInstance destroy) : handle_(h), destroy_(destroy) {}
  InstanceHandle(InstanceHandle&& o) noexcept
      : handle_(std::exchange(o.handle_, VK_NULL_HANDLE)), destroy_(o.destroy_) {}
  InstanceHandle& operator=(InstanceHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, VK_NULL_HANDLE);
      destroy_ = o.destroy_;
    }
    return *this;
  }
  InstanceHandle(const InstanceHandle&) = delete;
  ~InstanceHandle() { reset(); }
  void reset() {
    if (handle_ != VK_NULL_HANDLE && destroy_ != nullptr) destroy_(handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }
  VkInstance get() const { return handle_; }

 private:
  VkInstance handle_ = VK_NULL_HANDLE;
  PFN_vkDestroyInstance destroy_ = nullptr;
};

class LogicalDeviceHandle {
 public:
  LogicalDeviceHandle() = default;
  LogicalDeviceHandle(VkDevice h, PFN_vkDestroyDevice destroy) : handle_(h), destroy_(destroy) {}
  LogicalDeviceHandle(LogicalDeviceHandle&& o) noexcept
      : handle_(std::exchange(o.handle_, VK_NULL_HANDLE)), destroy_(o.destroy_) {}
  LogicalDeviceHandle& operator=(LogicalDeviceHandle&& o) noexcept {
    if (this != &o) {
      reset();
      handle_ = std::exchange(o.handle_, VK_NULL_HANDLE);
      destroy_ = o.destroy_;
    }
    return *this;
  }
  LogicalDeviceHandle(const LogicalDeviceHandle&) = delete;
  ~LogicalDeviceHandle() { reset(); }
  void reset() {
    if (handle_ != VK_NULL_HANDLE && destroy_ != nullptr) destroy_(handle_, nullptr);
    handle_ = VK_NULL_HANDLE;
  }
  VkDevice get() const { return handle_; }

 private:
  VkDevice handle_ = VK_NULL_HANDLE;
  PFN_vkDestroyDevice destroy_ = nullptr;
};

}  // namespace am::kernels::vulkan
