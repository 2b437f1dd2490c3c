#include "kernels/vulkan/vk_device.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "common/log.h"
#include "kernels/vulkan/vk_spirv.h"

namespace am::kernels::vulkan {
namespace {

constexpr uint32_t kApi11 = VK_MAKE_API_VERSION(0, 1, 1, 0);
constexpr uint32_t kApi12 = VK_MAKE_API_VERSION(0, 1, 2, 0);
// Buffers are never empty: Vulkan forbids size 0, and a dummy binding needs a real buffer.
constexpr std::size_t kMinBufferBytes = 16;
constexpr uint64_t kFenceTimeoutNs = 600ull * 1000 * 1000 * 1000;  // a hung device, not a slow one
constexpr uint32_t kTimestampQueries = 2;   // the submit's start and end
// Profiling: one timestamp per command after the two above; when they are used up the recorded
// work is submitted (like a full descriptor pool).
constexpr uint32_t kProfileSlots = 2048;
const std::string kCopyName = "copy";
const std::string kFillName = "fill";

// An instance with the 1.1 API (the lowest the backend uses: properties2, subgroup properties).
struct InstanceWithFns {
  InstanceHandle instance;
  InstanceFns fn;
};

Result<InstanceWithFns> create_instance(const VulkanLoader& loader) {
  uint32_t loader_api = VK_MAKE_API_VERSION(0, 1, 0, 0);
  if (loader.global().vkEnumerateInstanceVersion != nullptr &&
      loader.global().vkEnumerateInstanceVersion(&loader_api) != VK_SUCCESS) {
    loader_api = VK_MAKE_API_VERSION(0, 1, 0, 0);
  }
  if (loader_api < kApi11) return unsupported("no Vulkan device found: the loader is older than Vulkan 1.1");
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "accelmatrix";
  app.pEngineName = "accelmatrix";
  app.apiVersion = std::min(loader_api, kApi12);
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  VkInstance raw = VK_NULL_HANDLE;
  const VkResult r = loader.global().vkCreateInstance(&ci, nullptr, &raw);
  if (r != VK_SUCCESS) return unsupported("no Vulkan device found: vkCreateInstance: " + vk_result_name(r));
  PFN_vkDestroyInstance destroy = reinterpret_cast<PFN_vkDestroyInstance>(
      loader.global().vkGetInstanceProcAddr(raw, "vkDestroyInstance"));
  InstanceWithFns out{InstanceHandle(raw, destroy), {}};
  AM_ASSIGN_OR_RETURN(out.fn, loader.load_instance(raw));
  return out;
}

Result<std::vector<VkPhysicalDevice>> physical_devices(const InstanceFns& fn, VkInstance instance) {
  uint32_t count = 0;
  VkResult r = fn.vkEnumeratePhysicalDevices(instance, &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  if (r == VK_SUCCESS && count > 0) r = fn.vkEnumeratePhysicalDevices(instance, &count, devices.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    return unsupported("no Vulkan device found: vkEnumeratePhysicalDevices: " + vk_result_name(r));
  }
  devices.resize(count);
  if (devices.empty()) return unsupported("no Vulkan device found: the loader lists no physical device");
  return devices;
}

bool has_extension(const InstanceFns& fn, VkPhysicalDevice pd, const char* name) {
  uint32_t count = 0;
  if (fn.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> exts(count);
  if (fn.vkEnumerateDeviceExtensionProperties(pd, nullptr, &count, exts.data()) < VK_SUCCESS) return false;
  for (uint32_t i = 0; i < count; ++i) {
    if (std::strcmp(exts[i].extensionName, name) == 0) return true;
  }
  return false;
}

// Fills one feature struct (sType set by the caller) through vkGetPhysicalDeviceFeatures2.
void query_features(const InstanceFns& fn, VkPhysicalDevice pd, void* feature_struct) {
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = feature_struct;
  fn.vkGetPhysicalDeviceFeatures2(pd, &features);
}

// gemm_coopmat.comp: 4 subgroups of 32 per work-group; 34 KiB of shared memory at its largest
// K step (64).
constexpr uint32_t kCoopmatSubgroup = 32;
constexpr uint32_t kCoopmatSharedBytes = 2 * 64 * (64 + 8) * 2 + 64 * 64 * 4;

bool has_coopmat_f16(const InstanceFns& fn, VkPhysicalDevice pd) {
  if (fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV == nullptr ||
      !has_extension(fn, pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME)) {
    return false;
  }
  VkPhysicalDeviceCooperativeMatrixFeaturesNV feat{};
  feat.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  query_features(fn, pd, &feat);
  if (feat.cooperativeMatrix != VK_TRUE) return false;
  VkPhysicalDeviceCooperativeMatrixPropertiesNV stages{};
  stages.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  VkPhysicalDeviceProperties2 device_props{};
  device_props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  device_props.pNext = &stages;
  fn.vkGetPhysicalDeviceProperties2(pd, &device_props);
  if ((stages.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) == 0) return false;
  uint32_t count = 0;
  if (fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &count, nullptr) != VK_SUCCESS) return false;
  std::vector<VkCooperativeMatrixPropertiesNV> props(count);
  for (auto& p : props) p.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  if (fn.vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &count, props.data()) != VK_SUCCESS) return false;
  for (const auto& p : props) {
    if (p.MSize == 16 && p.NSize == 16 && p.KSize == 16 && p.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        p.BType == VK_COMPONENT_TYPE_FLOAT16_NV && p.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        p.DType == VK_COMPONENT_TYPE_FLOAT32_NV && p.scope == VK_SCOPE_SUBGROUP_NV) {
      return true;
    }
  }
  return false;
}

VulkanDeviceInfo describe(const InstanceFns& fn, VkPhysicalDevice pd, int index) {
  VulkanDeviceInfo d;
  d.index = index;
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  VkPhysicalDeviceProperties2 props{};
  props.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props.pNext = &subgroup;
  VkPhysicalDeviceProperties base{};
  fn.vkGetPhysicalDeviceProperties(pd, &base);
  const bool has_driver = base.apiVersion >= kApi12 || has_extension(fn, pd, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  if (has_driver) subgroup.pNext = &driver;
  fn.vkGetPhysicalDeviceProperties2(pd, &props);
  const VkPhysicalDeviceProperties& p = props.properties;
  d.name = p.deviceName;
  d.type = p.deviceType;
  d.vendor_id = p.vendorID;
  d.api_version = p.apiVersion;
  d.subgroup_size = subgroup.subgroupSize;
  d.subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                          (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  d.max_shared_bytes = p.limits.maxComputeSharedMemorySize;
  d.max_workgroup_invocations = p.limits.maxComputeWorkGroupInvocations;
  d.max_storage_buffer_range = p.limits.maxStorageBufferRange;
  d.timestamp_period_ns = p.limits.timestampPeriod;
  d.driver = has_driver ? std::string(driver.driverName) + " " + driver.driverInfo
                        : "driver " + std::to_string(p.driverVersion);
  d.software = d.type == VK_PHYSICAL_DEVICE_TYPE_CPU ||
               (has_driver && (driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE ||
                               driver.driverID == VK_DRIVER_ID_GOOGLE_SWIFTSHADER));

  const bool has_f16 = base.apiVersion >= kApi12 || has_extension(fn, pd, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  if (has_f16) {
    VkPhysicalDeviceShaderFloat16Int8Features f16{};
    f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    query_features(fn, pd, &f16);
    d.fp16 = f16.shaderFloat16 == VK_TRUE;
    d.int8 = f16.shaderInt8 == VK_TRUE;
  }
  // Through the KHR extension, not Vulkan 1.3 core: the instance asks for at most 1.2.
  if (has_extension(fn, pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME)) {
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{};
    dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    query_features(fn, pd, &dot);
    d.int_dot = dot.shaderIntegerDotProduct == VK_TRUE;
  }
  d.coopmat_f16 = d.fp16 && d.subgroup_size == kCoopmatSubgroup && d.max_shared_bytes >= kCoopmatSharedBytes &&
                  has_coopmat_f16(fn, pd);

  uint32_t families = 0;
  fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, nullptr);
  std::vector<VkQueueFamilyProperties> qf(families);
  fn.vkGetPhysicalDeviceQueueFamilyProperties(pd, &families, qf.data());
  // Prefer a compute family without graphics (a dedicated compute queue on discrete GPUs).
  int chosen = -1;
  for (uint32_t i = 0; i < families; ++i) {
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) continue;
    if (chosen < 0 || ((qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) == 0 &&
                       (qf[static_cast<std::size_t>(chosen)].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0)) {
      chosen = static_cast<int>(i);
    }
  }
  d.queue_family = chosen < 0 ? UINT32_MAX : static_cast<uint32_t>(chosen);
  if (chosen >= 0) d.timestamp_valid_bits = qf[static_cast<std::size_t>(chosen)].timestampValidBits;
  return d;
}

Result<std::vector<VulkanDeviceInfo>> list_with(const VulkanLoader& loader) {
  AM_ASSIGN_OR_RETURN(InstanceWithFns inst, create_instance(loader));
  AM_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> pds, physical_devices(inst.fn, inst.instance.get()));
  std::vector<VulkanDeviceInfo> out;
  for (std::size_t i = 0; i < pds.size(); ++i) {
    VulkanDeviceInfo d = describe(inst.fn, pds[i], static_cast<int>(i));
    // A device without a compute queue or the 1.1 API cannot run the backend at all.
    if (d.queue_family == UINT32_MAX || d.api_version < kApi11) continue;
    out.push_back(std::move(d));
  }
  if (out.empty()) return unsupported("no Vulkan device found: no device has a compute queue and Vulkan 1.1");
  return out;
}

// The memory type for `bits` with every flag of `want`, preferring one without `avoid`.
int memory_type(const VkPhysicalDeviceMemoryProperties& mem, uint32_t bits, VkMemoryPropertyFlags want,
                VkMemoryPropertyFlags avoid) {
  int fallback = -1;
  for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    if ((bits & (1u << i)) == 0 || (mem.memoryTypes[i].propertyFlags & want) != want) continue;
    if ((mem.memoryTypes[i].propertyFlags & avoid) == 0) return static_cast<int>(i);
    if (fallback < 0) fallback = static_cast<int>(i);
  }
  return fallback;
}

}  // namespace

const char* VulkanDeviceInfo::type_name() const {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string VulkanDeviceInfo::label() const {
  return name + " [vulkan:" + std::to_string(index) + ", " + type_name() + (software ? ", software" : "") + "]";
}

bool portable_shaders_forced() {
  const char* env = std::getenv(kVulkanPortableEnv);
  return env != nullptr && *env != '\0' && std::string_view(env) != "0";
}

Result<std::vector<VulkanDeviceInfo>> list_vulkan_devices() {
  AM_ASSIGN_OR_RETURN(std::shared_ptr<const VulkanLoader> loader, VulkanLoader::open());
  Result<std::vector<VulkanDeviceInfo>> devices = list_with(*loader);
  if (!devices.ok() && devices.status().code() != StatusCode::kUnsupported) {
    return unsupported("no Vulkan device found: " + devices.status().message());
  }
  return devices;
}

Result<VulkanDeviceInfo> select_vulkan_device() {
  AM_ASSIGN_OR_RETURN(std::vector<VulkanDeviceInfo> devices, list_vulkan_devices());
  if (const char* env = std::getenv(kVulkanDeviceEnv); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long index = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || index < 0) {
      return invalid_argument(std::string(kVulkanDeviceEnv) + "=" + env + " is not a device index");
    }
    for (const VulkanDeviceInfo& d : devices) {
      if (d.index == index) return d;
    }
    return invalid_argument(std::string(kVulkanDeviceEnv) + "=" + env + ": no such Vulkan device (" +
                            std::to_string(devices.size()) + " listed)");
  }
  for (VkPhysicalDeviceType t : {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU}) {
    for (const VulkanDeviceInfo& d : devices) {
      if (d.type == t) return d;
    }
  }
  return devices.front();
}

Result<std::unique_ptr<VulkanDevice>> VulkanDevice::create(const VulkanDeviceInfo& info,
                                                          const VulkanDeviceOptions& options) {
  std::unique_ptr<VulkanDevice> dev(new VulkanDevice());
  dev->info_ = info;
  dev->options_ = options;
  AM_ASSIGN_OR_RETURN(dev->loader_, VulkanLoader::open());
  AM_ASSIGN_OR_RETURN(InstanceWithFns inst, create_instance(*dev->loader_));
  dev->ifn_ = inst.fn;
  dev->instance_ = std::move(inst.instance);
  AM_ASSIGN_OR_RETURN(std::vector<VkPhysicalDevice> pds, physical_devices(dev->ifn_, dev->instance_.get()));
  if (info.index < 0 || static_cast<std::size_t>(info.index) >= pds.size()) {
    return invalid_argument("Vulkan device " + std::to_string(info.index) + " is gone");
  }
  dev->physical_ = pds[static_cast<std::size_t>(info.index)];
  dev->ifn_.vkGetPhysicalDeviceMemoryProperties(dev->physical_, &dev->memory_);
  VkPhysicalDeviceProperties props{};
  dev->ifn_.vkGetPhysicalDeviceProperties(dev->physical_, &props);
  dev->max_groups_x_ = props.limits.maxComputeWorkGroupCount[0];

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{};
  qci.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  qci.queueFamilyIndex = info.queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  // shaderFloat16 only where the device has it: the f16 FMA bench shader needs it; every other
  // shader reads halves through unpackHalf2x16 (core SPIR-V) and needs no feature.
  VkPhysicalDeviceShaderFloat16Int8Features f16{};
  f16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  f16.shaderFloat16 = info.fp16 ? VK_TRUE : VK_FALSE;
  std::vector<const char*> extensions;
  if (info.fp16 && info.api_version < kApi12) extensions.push_back(VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  // Integer dot products (the gemv_q *_dot shaders) unless the portable shaders are asked for.
  dev->int_dot_ = info.int_dot && !options.portable_shaders && !portable_shaders_forced();
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{};
  dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  dot.shaderIntegerDotProduct = VK_TRUE;
  void* chain = nullptr;
  if (dev->int_dot_) {
    extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    chain = &dot;
  }
  dev->coopmat_f16_ = info.coopmat_f16 && !options.portable_shaders && !portable_shaders_forced();
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{};
  coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  coop.cooperativeMatrix = VK_TRUE;
  if (dev->coopmat_f16_) {
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    coop.pNext = chain;
    chain = &coop;
  }
  if (info.fp16) {
    f16.pNext = chain;
    chain = &f16;
  }
  VkDeviceCreateInfo dci{};
  dci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  dci.pNext = chain;
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  dci.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
  dci.ppEnabledExtensionNames = extensions.data();
  VkDevice raw = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(dev->ifn_.vkCreateDevice(dev->physical_, &dci, nullptr, &raw), "vkCreateDevice"));
  auto destroy_device = reinterpret_cast<PFN_vkDestroyDevice>(dev->ifn_.vkGetDeviceProcAddr(raw, "vkDestroyDevice"));
  dev->device_ = LogicalDeviceHandle(raw, destroy_device);
  AM_ASSIGN_OR_RETURN(dev->fn, dev->loader_->load_device(dev->ifn_, raw));
  const DeviceFns& fn = dev->fn;
  fn.vkGetDeviceQueue(raw, info.queue_family, 0, &dev->queue_);

  VkCommandPoolCreateInfo pci{};
  pci.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pci.queueFamilyIndex = info.queue_family;
  VkCommandPool pool = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(fn.vkCreateCommandPool(raw, &pci, nullptr, &pool), "vkCreateCommandPool"));
  dev->command_pool_ = CommandPoolHandle(raw, pool, fn.vkDestroyCommandPool);
  VkCommandBufferAllocateInfo cai{};
  cai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  cai.commandPool = pool;
  cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cai.commandBufferCount = 1;
  AM_RETURN_IF_ERROR(vk_check(fn.vkAllocateCommandBuffers(raw, &cai, &dev->cmd_), "vkAllocateCommandBuffers"));

  VkFenceCreateInfo fci{};
  fci.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  VkFence fence = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(fn.vkCreateFence(raw, &fci, nullptr, &fence), "vkCreateFence"));
  dev->fence_ = FenceHandle(raw, fence, fn.vkDestroyFence);

  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorSetsPerPool * kMaxBindings};
  VkDescriptorPoolCreateInfo dpci{};
  dpci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
  dpci.maxSets = kDescriptorSetsPerPool;
  dpci.poolSizeCount = 1;
  dpci.pPoolSizes = &size;
  VkDescriptorPool dpool = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(fn.vkCreateDescriptorPool(raw, &dpci, nullptr, &dpool), "vkCreateDescriptorPool"));
  dev->descriptor_pool_ = DescriptorPoolHandle(raw, dpool, fn.vkDestroyDescriptorPool);

  if (info.timestamp_valid_bits > 0 && info.timestamp_period_ns > 0.0f) {
    const bool profile = options.profile || device_profiling_requested();
    VkQueryPoolCreateInfo qpci{};
    qpci.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO;
    qpci.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qpci.queryCount = kTimestampQueries + (profile ? kProfileSlots : 0);
    VkQueryPool qp = VK_NULL_HANDLE;
    if (fn.vkCreateQueryPool(raw, &qpci, nullptr, &qp) == VK_SUCCESS) {
      dev->query_pool_ = QueryPoolHandle(raw, qp, fn.vkDestroyQueryPool);
      dev->timestamps_ = true;
      dev->profiling_ = profile;
    }
  }
  return dev;
}

VulkanDevice::~VulkanDevice() {
  if (device_.get() != VK_NULL_HANDLE && fn.vkDeviceWaitIdle != nullptr) {
    if (recording_) (void)fn.vkEndCommandBuffer(cmd_);
    (void)fn.vkDeviceWaitIdle(device_.get());
  }
  // Members below device_ are destroyed first (reverse declaration order).
}

Result<Buffer> VulkanDevice::make_buffer(std::size_t bytes, BufferUse use) {
  const bool mapped_use = use != BufferUse::kDevice;
  if (use == BufferUse::kDevice && bytes > info_.max_storage_buffer_range) {
    return unsupported("a buffer of " + std::to_string(bytes) + " bytes exceeds maxStorageBufferRange (" +
                       std::to_string(info_.max_storage_buffer_range) + ") on Vulkan device " + info_.name);
  }
  const std::size_t size = std::max(bytes, kMinBufferBytes);
  VkBufferCreateInfo bci{};
  bci.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkDevice dev = device_.get();
  VkBuffer raw = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(fn.vkCreateBuffer(dev, &bci, nullptr, &raw), "vkCreateBuffer"));
  Buffer b;
  b.buffer = BufferHandle(dev, raw, fn.vkDestroyBuffer);
  b.bytes = bytes;
  VkMemoryRequirements req{};
  fn.vkGetBufferMemoryRequirements(dev, raw, &req);
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  int type = -1;
  if (use == BufferUse::kStaging) {
    // Cached host memory makes downloads read at memcpy speed.
    type = memory_type(memory_, req.memoryTypeBits, host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, 0);
    if (type < 0) type = memory_type(memory_, req.memoryTypeBits, host, 0);
  } else if (use == BufferUse::kHostInput) {
    // Written once by the host, read by many invocations: from VRAM when the device maps some
    // to the host, else over the bus from host memory.
    type = memory_type(memory_, req.memoryTypeBits, host | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    if (type < 0) type = memory_type(memory_, req.memoryTypeBits, host, 0);
  } else {
    // Device-local memory the host cannot see (VRAM behind PCIe) first; on unified-memory
    // devices (lavapipe, integrated GPUs) the device-local type is also host-visible.
    type = memory_type(memory_, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
                       VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    if (type < 0) type = memory_type(memory_, req.memoryTypeBits, host, 0);
  }
  if (type < 0) return internal_error("no Vulkan memory type fits a buffer on " + info_.name);
  VkMemoryAllocateInfo mai{};
  mai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = static_cast<uint32_t>(type);
  VkDeviceMemory mem = VK_NULL_HANDLE;
  VkResult allocated = fn.vkAllocateMemory(dev, &mai, nullptr, &mem);
  if (allocated != VK_SUCCESS && use == BufferUse::kHostInput &&
      (memory_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) != 0) {
    // The host-visible part of VRAM is small (256 MiB without resizable BAR) and may be full:
    // host memory then.
    const int fallback = memory_type(memory_, req.memoryTypeBits, host, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    if (fallback >= 0) {
      type = fallback;
      mai.memoryTypeIndex = static_cast<uint32_t>(type);
      allocated = fn.vkAllocateMemory(dev, &mai, nullptr, &mem);
    }
  }
  AM_RETURN_IF_ERROR(vk_check(allocated, "vkAllocateMemory"));
  b.memory = MemoryHandle(dev, mem, fn.vkFreeMemory);
  AM_RETURN_IF_ERROR(vk_check(fn.vkBindBufferMemory(dev, raw, mem, 0), "vkBindBufferMemory"));
  const VkMemoryPropertyFlags flags = memory_.memoryTypes[type].propertyFlags;
  if ((flags & host) == host && (mapped_use || !options_.staging_transfers)) {
    // Mapped for the buffer's lifetime; vkFreeMemory unmaps.
    AM_RETURN_IF_ERROR(vk_check(fn.vkMapMemory(dev, mem, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory"));
  }
  return b;
}

Result<Buffer> VulkanDevice::create_buffer(std::size_t bytes) { return make_buffer(bytes, BufferUse::kDevice); }
Result<Buffer> VulkanDevice::create_staging(std::size_t bytes) { return make_buffer(bytes, BufferUse::kStaging); }

Result<Buffer*> VulkanDevice::staging(std::size_t bytes) {
  if (!staging_ || staging_.bytes < bytes) {
    staging_ = Buffer();
    AM_ASSIGN_OR_RETURN(staging_, make_buffer(bytes, BufferUse::kStaging));
  }
  return &staging_;
}

Status VulkanDevice::upload(const Buffer& dst, const void* src, std::size_t bytes, std::size_t offset) {
  if (bytes == 0) return Status::Ok();
  if (offset + bytes > dst.bytes) return internal_error("vulkan upload past the end of a buffer");
  AM_RETURN_IF_ERROR(submit());  // earlier dispatches may still read the old contents
  if (dst.mapped != nullptr) {
    std::memcpy(static_cast<uint8_t*>(dst.mapped) + offset, src, bytes);
    return Status::Ok();
  }
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(kStagingChunkBytes, bytes - done);
    AM_ASSIGN_OR_RETURN(Buffer* s, staging(n));
    std::memcpy(s->mapped, static_cast<const uint8_t*>(src) + done, n);
    AM_RETURN_IF_ERROR(copy(s->get(), dst.get(), n, 0, offset + done));
    AM_RETURN_IF_ERROR(submit());
    done += n;
  }
  return Status::Ok();
}

Result<const Buffer*> VulkanDevice::host_input(const void* src, std::size_t bytes) {
  if (bytes > kHostInputMaxBytes) return internal_error("vulkan host input above kHostInputMaxBytes");
  // Bounds the work a batch of host inputs waits on; they are reused only from
  // recycle_host_inputs(), between ops.
  if (inputs_used_.size() >= kHostInputsPerSubmit) AM_RETURN_IF_ERROR(submit());
  // The smallest free buffer that fits and is not kHostInputReuseFactor times too big, else a
  // new one.
  auto best = inputs_free_.end();
  for (auto it = inputs_free_.begin(); it != inputs_free_.end(); ++it) {
    if (it->bytes >= bytes && it->bytes <= kHostInputReuseFactor * std::max(bytes, kHostInputMinBytes) &&
        (best == inputs_free_.end() || it->bytes < best->bytes)) {
      best = it;
    }
  }
  Buffer b;
  if (best != inputs_free_.end()) {
    b = std::move(*best);
    inputs_free_.erase(best);
  } else {
    std::size_t size = kHostInputMinBytes;
    while (size < bytes) size *= 2;
    AM_ASSIGN_OR_RETURN(b, make_buffer(size, BufferUse::kHostInput));
    if (b.mapped == nullptr) return internal_error("vulkan staging memory is not mappable on " + info_.name);
  }
  if (bytes > 0) std::memcpy(b.mapped, src, bytes);
  inputs_used_.push_back(std::move(b));
  return &inputs_used_.back();
}

void VulkanDevice::recycle_host_inputs() {
  if (recording_) return;  // recorded work may still read them
  for (Buffer& b : inputs_used_) inputs_free_.push_back(std::move(b));
  inputs_used_.clear();
}

Status VulkanDevice::download(const Buffer& src, void* dst, std::size_t bytes, std::size_t offset) {
  if (bytes == 0) return Status::Ok();
  if (offset + bytes > src.bytes) return internal_error("vulkan download past the end of a buffer");
  AM_RETURN_IF_ERROR(submit());
  if (src.mapped != nullptr) {
    std::memcpy(dst, static_cast<const uint8_t*>(src.mapped) + offset, bytes);
    return Status::Ok();
  }
  for (std::size_t done = 0; done < bytes;) {
    const std::size_t n = std::min(kStagingChunkBytes, bytes - done);
    AM_ASSIGN_OR_RETURN(Buffer* s, staging(n));
    AM_RETURN_IF_ERROR(copy(src.get(), s->get(), n, offset + done, 0));
    AM_RETURN_IF_ERROR(submit());
    std::memcpy(static_cast<uint8_t*>(dst) + done, s->mapped, n);
    done += n;
  }
  return Status::Ok();
}

Result<const Pipeline*> VulkanDevice::pipeline(const std::string& name, uint32_t bindings,
                                                std::span<const int32_t> spec) {
  std::string key = name;
  for (int32_t v : spec) key += "/" + std::to_string(v);
  if (auto it = pipelines_.find(key); it != pipelines_.end()) return it->second.get();
  const std::span<const uint32_t> code = find_spirv(name);
  if (code.empty()) return internal_error("no SPIR-V for Vulkan shader " + name + " in this build");
  if (bindings > kMaxBindings) return internal_error("shader " + name + " has too many bindings");
  VkDevice dev = device_.get();
  auto p = std::make_unique<Pipeline>();
  p->bindings = bindings;
  p->name = name;
  VkShaderModuleCreateInfo smci{};
  smci.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
  smci.codeSize = code.size_bytes();
  smci.pCode = code.data();
  VkShaderModule module = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(fn.vkCreateShaderModule(dev, &smci, nullptr, &module), "vkCreateShaderModule"));
  p->module = ShaderModuleHandle(dev, module, fn.vkDestroyShaderModule);

  VkDescriptorSetLayoutBinding binding[kMaxBindings]{};
  for (uint32_t i = 0; i < bindings; ++i) {
    binding[i].binding = i;
    binding[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    binding[i].descriptorCount = 1;
    binding[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo dslci{};
  dslci.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
  dslci.bindingCount = bindings;
  dslci.pBindings = binding;
  VkDescriptorSetLayout dsl = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(fn.vkCreateDescriptorSetLayout(dev, &dslci, nullptr, &dsl), "vkCreateDescriptorSetLayout"));
  p->set_layout = DescriptorSetLayoutHandle(dev, dsl, fn.vkDestroyDescriptorSetLayout);

  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushConstantBytes};
  VkPipelineLayoutCreateInfo plci{};
  plci.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
  plci.setLayoutCount = 1;
  plci.pSetLayouts = &dsl;
  plci.pushConstantRangeCount = 1;
  plci.pPushConstantRanges = &range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(fn.vkCreatePipelineLayout(dev, &plci, nullptr, &layout), "vkCreatePipelineLayout"));
  p->layout = PipelineLayoutHandle(dev, layout, fn.vkDestroyPipelineLayout);

  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (std::size_t i = 0; i < spec.size(); ++i) {
    entries[i] = {static_cast<uint32_t>(i), static_cast<uint32_t>(i * sizeof(int32_t)), sizeof(int32_t)};
  }
  VkSpecializationInfo si{};
  si.mapEntryCount = static_cast<uint32_t>(entries.size());
  si.pMapEntries = entries.data();
  si.dataSize = spec.size_bytes();
  si.pData = spec.data();
  VkComputePipelineCreateInfo cpci{};
  cpci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
  cpci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpci.stage.module = module;
  cpci.stage.pName = "main";
  cpci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
  cpci.layout = layout;
  VkPipeline pipe = VK_NULL_HANDLE;
  AM_RETURN_IF_ERROR(vk_check(fn.vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, nullptr, &pipe),
                              ("vkCreateComputePipelines (" + name + ")").c_str()));
  p->pipeline = PipelineHandle(dev, pipe, fn.vkDestroyPipeline);
  const Pipeline* out = p.get();
  pipelines_.emplace(std::move(key), std::move(p));
  return out;
}

Status VulkanDevice::fail_on_error(Status st) {
  if (!st.ok() && failed_.ok()) failed_ = Status(st.code(), st.message() + " (the Vulkan device is unusable from here on)");
  return st;
}

Status VulkanDevice::wait_idle() {
  const Status submitted = submit();   // the failure, if the device already failed
  // Waited for even then: work submitted before a fence timeout may still be running.
  if (fn.vkDeviceWaitIdle != nullptr) {
    AM_RETURN_IF_ERROR(fail_on_error(vk_check(fn.vkDeviceWaitIdle(device_.get()), "vkDeviceWaitIdle")));
  }
  return submitted;
}

Status VulkanDevice::begin_if_needed() {
  AM_RETURN_IF_ERROR(failed_);
  if (recording_) return Status::Ok();
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  AM_RETURN_IF_ERROR(vk_check(fn.vkBeginCommandBuffer(cmd_, &bi), "vkBeginCommandBuffer"));
  recording_ = true;
  recorded_ = 0;
  if (timestamps_) {
    fn.vkCmdResetQueryPool(cmd_, query_pool_.get(), 0, kTimestampQueries + (profiling_ ? kProfileSlots : 0));
    fn.vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, query_pool_.get(), 0);
  }
  return Status::Ok();
}

void VulkanDevice::barrier() {
  if (!barriers_) return;
  // Every command may read what the previous one wrote: one global memory barrier between
  // compute and transfer work in both directions.
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  fn.vkCmdPipelineBarrier(cmd_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

Status VulkanDevice::reserve_profile_slot() {
  if (profiling_ && profiled_.size() >= kProfileSlots) return submit();
  return Status::Ok();
}

void VulkanDevice::note_command(const std::string& name) {
  if (!profiling_) return;
  // After the command (and before its barrier): written once the command has completed, so
  // the gap to the previous timestamp is this command's time, its wait for the one before
  // included.
  fn.vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_.get(),
                         kTimestampQueries + static_cast<uint32_t>(profiled_.size()));
  profiled_.push_back(&name);
}

Status VulkanDevice::read_profile() {
  if (profiled_.empty()) return Status::Ok();
  std::vector<uint64_t> ticks(kTimestampQueries + profiled_.size());
  AM_RETURN_IF_ERROR(vk_check(fn.vkGetQueryPoolResults(device_.get(), query_pool_.get(), 0,
                                                       static_cast<uint32_t>(ticks.size()),
                                                       ticks.size() * sizeof(uint64_t), ticks.data(),
                                                       sizeof(uint64_t),
                                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                              "vkGetQueryPoolResults (profile)"));
  const uint64_t mask = info_.timestamp_valid_bits >= 64 ? ~0ull : ((1ull << info_.timestamp_valid_bits) - 1);
  uint64_t prev = ticks[0];
  for (std::size_t i = 0; i < profiled_.size(); ++i) {
    const uint64_t t = ticks[kTimestampQueries + i];
    profile_.add(*profiled_[i], static_cast<double>((t - prev) & mask) * info_.timestamp_period_ns * 1e-9);
    prev = t;
  }
  profiled_.clear();
  return Status::Ok();
}

Result<VkDescriptorSet> VulkanDevice::allocate_set(const Pipeline& p) {
  VkDescriptorSetLayout layout = p.set_layout.get();
  VkDescriptorSetAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
  ai.descriptorPool = descriptor_pool_.get();
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  VkDescriptorSet set = VK_NULL_HANDLE;
  VkResult r = fn.vkAllocateDescriptorSets(device_.get(), &ai, &set);
  if (r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTED_POOL) {
    return resource_exhausted("descriptor pool full");
  }
  AM_RETURN_IF_ERROR(vk_check(r, "vkAllocateDescriptorSets"));
  return set;
}

Status VulkanDevice::dispatch(const Pipeline& p, std::initializer_list<VkBuffer> buffers, const void* push,
                              uint32_t push_bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (buffers.size() != p.bindings) {
    return internal_error("shader " + p.name + " takes " + std::to_string(p.bindings) + " buffers, got " +
                          std::to_string(buffers.size()));
  }
  if (push_bytes > kPushConstantBytes) return internal_error("push constants of " + p.name + " too large");
  if (gx == 0 || gy == 0 || gz == 0) return Status::Ok();
  AM_RETURN_IF_ERROR(reserve_profile_slot());
  Result<VkDescriptorSet> set = allocate_set(p);
  if (!set.ok() && set.status().code() == StatusCode::kResourceExhausted) {
    // The pool is reset only once the work using its sets has completed.
    AM_RETURN_IF_ERROR(submit());
    set = allocate_set(p);
  }
  AM_RETURN_IF_ERROR(set.status());
  AM_RETURN_IF_ERROR(begin_if_needed());
  VkDescriptorBufferInfo infos[kMaxBindings]{};
  VkWriteDescriptorSet writes[kMaxBindings]{};
  uint32_t i = 0;
  for (VkBuffer b : buffers) {
    infos[i] = {b, 0, VK_WHOLE_SIZE};
    writes[i].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
    writes[i].dstSet = *set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &infos[i];
    ++i;
  }
  fn.vkUpdateDescriptorSets(device_.get(), i, writes, 0, nullptr);
  fn.vkCmdBindPipeline(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline.get());
  fn.vkCmdBindDescriptorSets(cmd_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout.get(), 0, 1, &*set, 0, nullptr);
  if (push_bytes > 0) fn.vkCmdPushConstants(cmd_, p.layout.get(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes, push);
  fn.vkCmdDispatch(cmd_, gx, gy, gz);
  note_command(p.name);
  barrier();
  ++recorded_;
  return Status::Ok();
}

Status VulkanDevice::copy(VkBuffer src, VkBuffer dst, std::size_t bytes, std::size_t src_offset,
                          std::size_t dst_offset) {
  if (bytes == 0) return Status::Ok();
  AM_RETURN_IF_ERROR(reserve_profile_slot());
  AM_RETURN_IF_ERROR(begin_if_needed());
  VkBufferCopy region{src_offset, dst_offset, bytes};
  fn.vkCmdCopyBuffer(cmd_, src, dst, 1, &region);
  note_command(kCopyName);
  barrier();
  ++recorded_;
  return Status::Ok();
}

Status VulkanDevice::fill_zero(VkBuffer dst, std::size_t bytes) {
  if (bytes == 0) return Status::Ok();
  if (bytes % 4 != 0) return internal_error("vulkan fill of a size that is not a multiple of 4");
  AM_RETURN_IF_ERROR(reserve_profile_slot());
  AM_RETURN_IF_ERROR(begin_if_needed());
  fn.vkCmdFillBuffer(cmd_, dst, 0, bytes, 0u);
  note_command(kFillName);
  barrier();
  ++recorded_;
  return Status::Ok();
}

Result<double> VulkanDevice::submit_timed() {
  AM_RETURN_IF_ERROR(failed_);
  if (!recording_) return 0.0;
  if (timestamps_) fn.vkCmdWriteTimestamp(cmd_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, query_pool_.get(), 1);
  // A fence wait alone does not make device writes visible to the host (Vulkan spec, "Host
  // Write Ordering" / "Memory Dependencies"): every submit ends with a barrier to host reads, so
  // download()'s memcpy from a mapped or staging buffer sees what the commands wrote. Recorded
  // even with barriers_ off: it orders the batch against the host, not its commands.
  VkMemoryBarrier to_host{};
  to_host.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  to_host.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  fn.vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                          VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
  recording_ = false;
  AM_RETURN_IF_ERROR(fail_on_error(vk_check(fn.vkEndCommandBuffer(cmd_), "vkEndCommandBuffer")));
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cmd_;
  VkDevice dev = device_.get();
  VkFence fence = fence_.get();
  const auto start = std::chrono::steady_clock::now();
  AM_RETURN_IF_ERROR(fail_on_error(vk_check(fn.vkQueueSubmit(queue_, 1, &si, fence), "vkQueueSubmit")));
  const VkResult waited = fn.vkWaitForFences(dev, 1, &fence, VK_TRUE, kFenceTimeoutNs);
  const auto end = std::chrono::steady_clock::now();
  // From here an error leaves the command buffer pending or the fence in use: nothing may be
  // recorded or submitted again (fail_on_error makes every later call answer this error).
  AM_RETURN_IF_ERROR(fail_on_error(vk_check(waited, "vkWaitForFences")));
  AM_RETURN_IF_ERROR(fail_on_error(vk_check(fn.vkResetFences(dev, 1, &fence), "vkResetFences")));
  AM_RETURN_IF_ERROR(fail_on_error(vk_check(fn.vkResetCommandBuffer(cmd_, 0), "vkResetCommandBuffer")));
  AM_RETURN_IF_ERROR(fail_on_error(
      vk_check(fn.vkResetDescriptorPool(dev, descriptor_pool_.get(), 0), "vkResetDescriptorPool")));
  if (profiling_) AM_RETURN_IF_ERROR(read_profile());
  if (timestamps_) {
    uint64_t ticks[kTimestampQueries] = {0, 0};
    AM_RETURN_IF_ERROR(vk_check(fn.vkGetQueryPoolResults(dev, query_pool_.get(), 0, kTimestampQueries, sizeof ticks,
                                                         ticks, sizeof(uint64_t),
                                                         VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                                "vkGetQueryPoolResults"));
    const uint64_t mask = info_.timestamp_valid_bits >= 64 ? ~0ull : ((1ull << info_.timestamp_valid_bits) - 1);
    const uint64_t delta = (ticks[1] - ticks[0]) & mask;
    return static_cast<double>(delta) * static_cast<double>(info_.timestamp_period_ns) * 1e-9;
  }
  return std::chrono::duration<double>(end - start).count();
}

Status VulkanDevice::submit() { return submit_timed().status(); }

}  // namespace am::kernels::vulkan
