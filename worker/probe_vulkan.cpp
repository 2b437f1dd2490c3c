// The Vulkan probe (logger "worker/probe/vulkan"): every physical device the loader
// (libvulkan.so.1, opened with dlopen; <vulkan/vulkan.h> supplies types only) reports.
//
// Answers source "vulkan": {"library": {...}, "instance_version", "instance_api_version",
//   "instance_status": VkResult, "devices_status": VkResult, "devices": [{"properties":
//   {"deviceName", "deviceType", "vendorID", "deviceID", "apiVersion", "driverVersion"},
//   "limits": {"maxStorageBufferRange", "maxComputeWorkGroupInvocations",
//   "maxComputeSharedMemorySize"}, "driver": {"driverID", "driverName", "driverInfo"},
//   "subgroup": {"subgroupSize", "supportedStages", "supportedOperations"}, "features":
//   {"shaderFloat16", "shaderInt8", "shaderIntegerDotProduct", "shaderInt16", "shaderFloat64"},
//   "memory_heaps": [{"size", "flags"}], "extensions": [...]} | {"error"}]}
// Versions are Vulkan's packed integers, as the API returns them. Parts a device cannot answer
// (driver properties before 1.2, ...) are left out.
//
// Record parts written:
//   "runtimes"."vulkan": {"present": false} without a loader, else {"present": true, "library",
//       "instance_version", "devices", "skipped_devices", optional "error"}
//   one "devices" entry per physical device, key "vulkan:<n>": {"backend": "vulkan", "name",
//       "vendor", "vendor_id", "device_id", "driver", "driver_version", "api_version", "type",
//       "software", "schedulable", "memory_bytes" (largest device-local heap),
//       "memory_heaps", "precisions", "features": {"fp16", "int8", "int_dot_product",
//       "subgroup_size", "max_storage_buffer_range"}, "hardware_class"}
// "precisions" are what the Vulkan backend's own supports() answers (vulkan_precisions()); a
// device is schedulable exactly when the build has the Vulkan backend (tested on lavapipe, as
// the OpenCL backend is on PoCL) and the backend would open it (Vulkan 1.1, enough invocations
// per work-group; otherwise no precisions and "unschedulable_reason" says why) — without the
// backend, no precisions and not schedulable. Jobs reach a
// Vulkan device only when a plan names backend "vulkan" (the default plans do not).
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/log.h"
#if defined(AM_HAVE_VULKAN)
#include "kernels/vulkan/vulkan_backend.h"
#endif
#include "worker/device_selection.h"
#include "worker/probe.h"
#include "worker/probe_devices.h"
#include "worker/probe_dynlib.h"
#include "worker/probe_files.h"
#include "worker/probe_json.h"

namespace am::worker {

std::vector<jobs::Precision> vulkan_precisions(const std::string& name) {
#if defined(AM_HAVE_VULKAN)
  const kernels::VulkanTraits traits{name};
  return kernels::supported_precisions([&](kernels::Op op, kernels::WeightFormat f) {
    return kernels::VulkanBackend::supports_on(traits, op, f);
  });
#else
  (void)name;
  return {};
#endif
}

namespace {

constexpr uint32_t kApi10 = VK_MAKE_API_VERSION(0, 1, 0, 0);
constexpr uint32_t kApi11 = VK_MAKE_API_VERSION(0, 1, 1, 0);
#if defined(AM_HAVE_VULKAN)
static_assert(std::string_view(kernels::vulkan::kVulkanDeviceEnv) == kVulkanDeviceVariable,
              "the worker sets the variable the Vulkan backend reads");
constexpr uint64_t kVulkanBackendMinInvocations = kernels::VulkanBackend::kMinWorkgroupInvocations;
#else
constexpr uint64_t kVulkanBackendMinInvocations = 0;   // no backend: no precisions to withdraw
#endif
constexpr uint32_t kApi12 = VK_MAKE_API_VERSION(0, 1, 2, 0);
constexpr uint32_t kApi13 = VK_MAKE_API_VERSION(0, 1, 3, 0);
// The newest API the probe's structures know; asking for more would not tell it more.
constexpr uint32_t kProbeApi = kApi13;
constexpr uint32_t kPciVendorNvidia = 0x10DE;

const char* const kLoaderNames[] = {"libvulkan.so.1", "libvulkan.so"};

std::string vk_result_name(int64_t r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver installed)";
    default: return "VkResult " + std::to_string(r);
  }
}

// ---- gathering ---------------------------------------------------------------------------

struct InstanceFns {
  PFN_vkDestroyInstance destroy = nullptr;
  PFN_vkEnumeratePhysicalDevices enumerate_devices = nullptr;
  PFN_vkGetPhysicalDeviceProperties properties = nullptr;
  PFN_vkGetPhysicalDeviceProperties2 properties2 = nullptr;
  PFN_vkGetPhysicalDeviceFeatures2 features2 = nullptr;
  PFN_vkGetPhysicalDeviceMemoryProperties memory = nullptr;
  PFN_vkEnumerateDeviceExtensionProperties extensions = nullptr;
};

// Owns a VkInstance.
class Instance {
 public:
  Instance(VkInstance handle, PFN_vkDestroyInstance destroy) : handle_(handle), destroy_(destroy) {}
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() {
    if (handle_ != VK_NULL_HANDLE && destroy_ != nullptr) destroy_(handle_, nullptr);
  }
  VkInstance get() const { return handle_; }

 private:
  VkInstance handle_;
  PFN_vkDestroyInstance destroy_;
};

bool has_name(const std::vector<std::string>& names, const char* name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

nlohmann::json gather_device(const InstanceFns& vk, VkPhysicalDevice pd, uint32_t instance_api) {
  nlohmann::json dev = nlohmann::json::object();
  VkPhysicalDeviceProperties props{};
  vk.properties(pd, &props);
  dev["properties"] = {{"deviceName", std::string(props.deviceName)},
                       {"deviceType", static_cast<int>(props.deviceType)},
                       {"vendorID", props.vendorID},
                       {"deviceID", props.deviceID},
                       {"apiVersion", props.apiVersion},
                       {"driverVersion", props.driverVersion}};
  dev["limits"] = {{"maxStorageBufferRange", props.limits.maxStorageBufferRange},
                   {"maxComputeWorkGroupInvocations", props.limits.maxComputeWorkGroupInvocations},
                   {"maxComputeSharedMemorySize", props.limits.maxComputeSharedMemorySize}};

  std::vector<std::string> extensions;
  uint32_t count = 0;
  if (vk.extensions(pd, nullptr, &count, nullptr) == VK_SUCCESS && count > 0) {
    std::vector<VkExtensionProperties> exts(count);
    if (vk.extensions(pd, nullptr, &count, exts.data()) >= VK_SUCCESS) {
      exts.resize(count);
      for (const auto& e : exts) extensions.emplace_back(e.extensionName);
    }
  }
  std::sort(extensions.begin(), extensions.end());
  dev["extensions"] = extensions;

  VkPhysicalDeviceMemoryProperties mem{};
  vk.memory(pd, &mem);
  nlohmann::json heaps = nlohmann::json::array();
  for (uint32_t i = 0; i < mem.memoryHeapCount && i < VK_MAX_MEMORY_HEAPS; ++i) {
    heaps.push_back({{"size", mem.memoryHeaps[i].size}, {"flags", mem.memoryHeaps[i].flags}});
  }
  dev["memory_heaps"] = std::move(heaps);

  // Structures may be chained only when the device's API version (capped by the instance's) or
  // one of its extensions defines them; anything else is invalid usage.
  const uint32_t api = std::min(props.apiVersion, instance_api);
  if (api < kApi11 || vk.properties2 == nullptr || vk.features2 == nullptr) return dev;

  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  VkPhysicalDeviceProperties2 props2{};
  props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  props2.pNext = &subgroup;
  const bool has_driver = api >= kApi12 || has_name(extensions, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  if (has_driver) subgroup.pNext = &driver;
  vk.properties2(pd, &props2);
  dev["subgroup"] = {{"subgroupSize", subgroup.subgroupSize},
                     {"supportedStages", subgroup.supportedStages},
                     {"supportedOperations", subgroup.supportedOperations}};
  if (has_driver) {
    dev["driver"] = {{"driverID", static_cast<int>(driver.driverID)},
                     {"driverName", std::string(driver.driverName)},
                     {"driverInfo", std::string(driver.driverInfo)}};
  }

  VkPhysicalDeviceShaderFloat16Int8Features f16i8{};
  f16i8.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{};
  dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  const bool has_f16i8 = api >= kApi12 || has_name(extensions, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME);
  const bool has_dot = api >= kApi13 || has_name(extensions, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
  void** tail = &features.pNext;
  if (has_f16i8) {
    *tail = &f16i8;
    tail = &f16i8.pNext;
  }
  if (has_dot) *tail = &dot;
  vk.features2(pd, &features);
  nlohmann::json f = {{"shaderInt16", features.features.shaderInt16 == VK_TRUE},
                      {"shaderFloat64", features.features.shaderFloat64 == VK_TRUE}};
  if (has_f16i8) {
    f["shaderFloat16"] = f16i8.shaderFloat16 == VK_TRUE;
    f["shaderInt8"] = f16i8.shaderInt8 == VK_TRUE;
  }
  if (has_dot) f["shaderIntegerDotProduct"] = dot.shaderIntegerDotProduct == VK_TRUE;
  dev["features"] = std::move(f);
  return dev;
}

nlohmann::json gather_vulkan() {
  Result<DynamicLibrary> lib =
      DynamicLibrary::open_first(std::vector<std::string>(std::begin(kLoaderNames), std::end(kLoaderNames)));
  nlohmann::json answers = {{"library", library_answers(lib)}, {"devices", nlohmann::json::array()}};
  if (!lib.ok()) return answers;
  auto gipa = lib->function<PFN_vkGetInstanceProcAddr>("vkGetInstanceProcAddr");
  if (gipa == nullptr) {
    answers["error"] = lib->path() + " does not export vkGetInstanceProcAddr";
    return answers;
  }
  auto get = [&](VkInstance inst, const char* name) { return gipa(inst, name); };

  uint32_t loader_api = kApi10;  // a 1.0 loader has no vkEnumerateInstanceVersion
  if (auto enumerate_version =
          reinterpret_cast<PFN_vkEnumerateInstanceVersion>(get(VK_NULL_HANDLE, "vkEnumerateInstanceVersion"))) {
    if (enumerate_version(&loader_api) != VK_SUCCESS) loader_api = kApi10;
  }
  answers["instance_version"] = loader_api;
  const uint32_t instance_api = loader_api >= kApi11 ? std::min(loader_api, kProbeApi) : kApi10;
  answers["instance_api_version"] = instance_api;

  auto create = reinterpret_cast<PFN_vkCreateInstance>(get(VK_NULL_HANDLE, "vkCreateInstance"));
  if (create == nullptr) {
    answers["error"] = "the loader does not provide vkCreateInstance";
    return answers;
  }
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "accelmatrix-probe";
  app.pEngineName = "accelmatrix";
  app.apiVersion = instance_api;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance raw = VK_NULL_HANDLE;
  const VkResult created = create(&info, nullptr, &raw);
  answers["instance_status"] = static_cast<int>(created);
  if (created != VK_SUCCESS) return answers;
  InstanceFns vk;
  vk.destroy = reinterpret_cast<PFN_vkDestroyInstance>(get(raw, "vkDestroyInstance"));
  Instance instance(raw, vk.destroy);
  vk.enumerate_devices = reinterpret_cast<PFN_vkEnumeratePhysicalDevices>(get(raw, "vkEnumeratePhysicalDevices"));
  vk.properties = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(get(raw, "vkGetPhysicalDeviceProperties"));
  vk.properties2 = reinterpret_cast<PFN_vkGetPhysicalDeviceProperties2>(get(raw, "vkGetPhysicalDeviceProperties2"));
  vk.features2 = reinterpret_cast<PFN_vkGetPhysicalDeviceFeatures2>(get(raw, "vkGetPhysicalDeviceFeatures2"));
  vk.memory = reinterpret_cast<PFN_vkGetPhysicalDeviceMemoryProperties>(get(raw, "vkGetPhysicalDeviceMemoryProperties"));
  vk.extensions = reinterpret_cast<PFN_vkEnumerateDeviceExtensionProperties>(
      get(raw, "vkEnumerateDeviceExtensionProperties"));
  if (!vk.destroy || !vk.enumerate_devices || !vk.properties || !vk.memory || !vk.extensions) {
    answers["error"] = "the loader lacks Vulkan 1.0 physical-device functions";
    return answers;
  }
  uint32_t count = 0;
  VkResult listed = vk.enumerate_devices(instance.get(), &count, nullptr);
  std::vector<VkPhysicalDevice> devices(count);
  if (listed == VK_SUCCESS && count > 0) listed = vk.enumerate_devices(instance.get(), &count, devices.data());
  answers["devices_status"] = static_cast<int>(listed);
  if (listed != VK_SUCCESS && listed != VK_INCOMPLETE) return answers;
  devices.resize(count);
  for (VkPhysicalDevice pd : devices) answers["devices"].push_back(gather_device(vk, pd, instance_api));
  return answers;
}

// ---- interpretation ----------------------------------------------------------------------

std::string version_string(uint64_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

// NVIDIA packs its driver version as 10.8.8.6 bits; everyone else on Linux uses Vulkan's
// own packing (Mesa puts its release there).
std::string driver_version_string(uint64_t v, uint64_t vendor_id) {
  if (vendor_id == kPciVendorNvidia) {
    // NVIDIA prints the third field with two digits ("550.107.02").
    char buf[48];
    std::snprintf(buf, sizeof buf, "%u.%u.%02u", unsigned((v >> 22) & 0x3ff), unsigned((v >> 14) & 0xff),
                  unsigned((v >> 6) & 0xff));
    std::string s = buf;
    if ((v & 0x3f) != 0) s += "." + std::to_string(v & 0x3f);
    return s;
  }
  return version_string(v);
}

// PCI vendor ids, and the Khronos ids (VkVendorId) of vendors without one.
std::string vendor_name(uint64_t id) {
  switch (id) {
    case 0x1002: return "AMD";
    case 0x1010: return "Imagination Technologies";
    case 0x106B: return "Apple";
    case 0x10DE: return "NVIDIA";
    case 0x13B5: return "ARM";
    case 0x14E4: return "Broadcom";
    case 0x1AE0: return "Google";
    case 0x5143: return "Qualcomm";
    case 0x8086: return "Intel";
    case VK_VENDOR_ID_MESA: return "Mesa";
    case VK_VENDOR_ID_POCL: return "PoCL";
    default: return "vendor " + hex_string(id, 4);
  }
}

std::string device_type_name(uint64_t t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual_gpu";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

std::string unusable_reason(const nlohmann::json& dev) {
  if (!dev.is_object()) return "answers are not an object";
  if (std::string e = json_string(dev, "error"); !e.empty()) return e;
  auto props = dev.find("properties");
  if (props == dev.end() || !props->is_object()) return "no properties";
  if (json_string(*props, "deviceName").empty()) return "no deviceName";
  if (!json_u64(*props, "deviceType")) return "no deviceType";
  return {};
}

nlohmann::json device_entry(const nlohmann::json& dev) {
  const nlohmann::json& props = json_object(dev, "properties");
  const nlohmann::json& driver = json_object(dev, "driver");
  const nlohmann::json& features = json_object(dev, "features");
  const nlohmann::json& subgroup = json_object(dev, "subgroup");
  const nlohmann::json& limits = json_object(dev, "limits");
  const std::string name = json_string(props, "deviceName");
  const uint64_t type = json_u64(props, "deviceType").value_or(VK_PHYSICAL_DEVICE_TYPE_OTHER);
  const uint64_t vendor_id = json_u64(props, "vendorID").value_or(0);
  const uint64_t driver_id = json_u64(driver, "driverID").value_or(0);
  const std::string driver_name = json_string(driver, "driverName");
  const std::string version = driver_version_string(json_u64(props, "driverVersion").value_or(0), vendor_id);
  const bool software = type == VK_PHYSICAL_DEVICE_TYPE_CPU || driver_id == VK_DRIVER_ID_MESA_LLVMPIPE ||
                        driver_id == VK_DRIVER_ID_GOOGLE_SWIFTSHADER || is_software_renderer_name(name) ||
                        is_software_renderer_name(driver_name);

  std::string driver_text = trim_copy(driver_name + " " + json_string(driver, "driverInfo"));
  if (driver_text.empty()) driver_text = version;

  uint64_t local_memory = 0;
  nlohmann::json heaps = nlohmann::json::array();
  for (const auto& h : json_array(dev, "memory_heaps")) {
    const uint64_t size = json_u64(h, "size").value_or(0);
    const bool device_local = (json_u64(h, "flags").value_or(0) & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0;
    heaps.push_back({{"size_bytes", size}, {"device_local", device_local}});
    // The largest device-local heap is the device's memory: a discrete GPU also lists a small
    // device-local BAR window, which is part of the same VRAM.
    if (device_local) local_memory = std::max(local_memory, size);
  }

  nlohmann::json precisions = nlohmann::json::array();
  for (jobs::Precision p : vulkan_precisions(name)) precisions.push_back(std::string(jobs::to_string(p)));
  // What VulkanBackend::create and the device layer require: a device they would refuse gets no
  // jobs (its jobs would only end in `error`), and the record says why.
  // The live probe always records the limit; answers without it are not refused on a guess.
  const uint64_t invocations =
      json_u64(limits, "maxComputeWorkGroupInvocations").value_or(kVulkanBackendMinInvocations);
  const uint64_t api = json_u64(props, "apiVersion").value_or(0);
  std::string refused;
  if (precisions.empty()) {
    // no backend in this build: nothing to refuse
  } else if (api < kApi11) {
    refused = "Vulkan " + version_string(api) + " device; the backend needs 1.1";
  } else if (invocations < kVulkanBackendMinInvocations) {
    refused = std::to_string(invocations) + " invocations per work-group; the backend needs " +
              std::to_string(kVulkanBackendMinInvocations);
  }
  if (!refused.empty()) precisions = nlohmann::json::array();

  nlohmann::json entry = {
      {"backend", "vulkan"},
      {"name", name},
      {"vendor", vendor_name(vendor_id)},
      {"vendor_id", hex_string(vendor_id, 4)},
      {"device_id", hex_string(json_u64(props, "deviceID").value_or(0), 4)},
      {"driver", driver_text},
      {"driver_version", version},
      {"api_version", version_string(json_u64(props, "apiVersion").value_or(0))},
      // A CPU renderer posing as a GPU is listed as what it runs on.
      {"type", software ? std::string("cpu") : device_type_name(type)},
      {"software", software},
      {"schedulable", !precisions.empty()},
      {"memory_bytes", local_memory},
      {"memory_heaps", std::move(heaps)},
      {"precisions", std::move(precisions)},
      {"features",
       {{"fp16", json_bool(features, "shaderFloat16", false)},
        {"int8", json_bool(features, "shaderInt8", false)},
        {"int_dot_product", json_bool(features, "shaderIntegerDotProduct", false)},
        {"subgroup_size", json_u64(subgroup, "subgroupSize").value_or(0)},
        {"max_storage_buffer_range", json_u64(limits, "maxStorageBufferRange").value_or(0)}}},
  };
  if (!refused.empty()) entry["unschedulable_reason"] = refused;
  if (software && type != VK_PHYSICAL_DEVICE_TYPE_CPU) entry["reported_type"] = device_type_name(type);
  return entry;
}

class VulkanProbe final : public Probe {
 public:
  explicit VulkanProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "vulkan"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    auto log = get_logger("worker/probe/vulkan");
    AM_ASSIGN_OR_RETURN(nlohmann::json answers, probe_answers(options_, "vulkan", gather_vulkan));
    if (!library_loaded(answers)) {
      log->debug("no Vulkan loader: {}", json_string(json_object(answers, "library"), "error"));
      set_runtime(record, "vulkan", absent_runtime());
      return Status::Ok();
    }
    nlohmann::json runtime = {{"present", true},
                              {"library", json_string(json_object(answers, "library"), "path")},
                              {"devices", 0},
                              {"skipped_devices", nlohmann::json::array()}};
    if (auto v = json_u64(answers, "instance_version")) runtime["instance_version"] = version_string(*v);
    if (std::string e = json_string(answers, "error"); !e.empty()) runtime["error"] = e;
    if (auto s = json_i64(answers, "instance_status"); s && *s != VK_SUCCESS) {
      runtime["error"] = "vkCreateInstance: " + vk_result_name(*s);
    }
    if (auto s = json_i64(answers, "devices_status"); s && *s != VK_SUCCESS && *s != VK_INCOMPLETE) {
      runtime["error"] = "vkEnumeratePhysicalDevices: " + vk_result_name(*s);
    }
    const nlohmann::json devices = json_array(answers, "devices");
    int listed = 0;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      if (std::string why = unusable_reason(devices[i]); !why.empty()) {
        log->warn("skipping Vulkan device {}: {}", i, why);
        runtime["skipped_devices"].push_back({{"device", i}, {"reason", why}});
        continue;
      }
      nlohmann::json entry = device_entry(devices[i]);
      // The value of ACCELMATRIX_VULKAN_DEVICE that opens this device (worker/device_selection.h).
      entry["selector"] = std::to_string(i);
      const std::string key = add_device(record, entry);
      ++listed;
      log->debug("{}: {} ({}{})", key, entry["name"].get<std::string>(), entry["type"].get<std::string>(),
                 entry["software"].get<bool>() ? ", software" : "");
    }
    runtime["devices"] = listed;
    set_runtime(record, "vulkan", std::move(runtime));
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
};

}  // namespace

std::unique_ptr<Probe> make_vulkan_probe(const ProbeOptions& options) {
  return std::make_unique<VulkanProbe>(options);
}

}  // namespace am::worker
