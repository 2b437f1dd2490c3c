// The CUDA probe (logger "worker/probe/cuda"): the NVIDIA driver API (libcuda.so.1) and, when
// installed, NVML (libnvidia-ml.so.1) for the driver's own version string. Both are opened with
// dlopen and declared here from the driver API's documented C signatures, so neither headers nor
// libraries are needed to build.
//
// Answers source "cuda": {"library": {...}, "init_status": CUresult, "driver_version": int,
//   "devices_status": CUresult, "devices": [{"name", "total_mem", "cc_major", "cc_minor",
//   "multiprocessors", "clock_khz", "pci_bus_id"} | {"error"}],
//   "nvml": {"library": {...}, "init_status", "driver_version", "nvml_version"}}
//
// Record parts written:
//   "runtimes"."cuda": {"present": false} without libcuda, else {"present": true, "library",
//       "driver_api_version": "12.4", "devices", "skipped_devices", "nvml": {"present", ...},
//       optional "error"}
//   one "devices" entry per GPU, key "cuda:<n>": {"backend": "cuda", "name", "vendor": "NVIDIA",
//       "driver", "compute_capability", "isa_level": "sm_<cc>", "type": "gpu", "software": false,
//       "schedulable": false, "compute_units" (SMs), "clock_mhz", "memory_bytes", "pci_bus_id",
//       "precisions": [], "features": {"fp16", "bf16", "int_dot_product", "tensor_cores"},
//       "hardware_class"}
// CUDA devices are not schedulable: accelmatrix has no CUDA backend yet (the same GPU is
// reachable through OpenCL).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"
#include "worker/probe.h"
#include "worker/probe_devices.h"
#include "worker/probe_dynlib.h"
#include "worker/probe_files.h"
#include "worker/probe_json.h"

namespace am::worker {
namespace {

using CUresult = int;
using CUdevice = int;
using CuInitFn = CUresult (*)(unsigned int);
using CuDriverGetVersionFn = CUresult (*)(int*);
using CuDeviceGetCountFn = CUresult (*)(int*);
using CuDeviceGetFn = CUresult (*)(CUdevice*, int);
using CuDeviceGetNameFn = CUresult (*)(char*, int, CUdevice);
using CuDeviceTotalMemFn = CUresult (*)(size_t*, CUdevice);
using CuDeviceGetAttributeFn = CUresult (*)(int*, int, CUdevice);

using NvmlReturn = int;
using NvmlInitFn = NvmlReturn (*)();
using NvmlShutdownFn = NvmlReturn (*)();
using NvmlStringFn = NvmlReturn (*)(char*, unsigned int);

constexpr CUresult kCudaSuccess = 0;
// CUdevice_attribute values from the driver API reference.
constexpr int kAttrClockRateKhz = 13;
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrPciBusId = 33;
constexpr int kAttrPciDeviceId = 34;
constexpr int kAttrPciDomainId = 50;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;
constexpr int kDeviceNameBytes = 256;
constexpr unsigned kNvmlStringBytes = 96;  // NVML asks for at least 80 for versions
constexpr uint64_t kKhzPerMhz = 1000;

const std::vector<std::string> kCudaNames = {"libcuda.so.1", "libcuda.so"};
const std::vector<std::string> kNvmlNames = {"libnvidia-ml.so.1", "libnvidia-ml.so"};

std::string cuda_error_name(int64_t code) {
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 35: return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUresult " + std::to_string(code);
  }
}

// ---- gathering ---------------------------------------------------------------------------

nlohmann::json gather_nvml() {
  Result<DynamicLibrary> lib = DynamicLibrary::open_first(kNvmlNames);
  nlohmann::json answers = {{"library", library_answers(lib)}};
  if (!lib.ok()) return answers;
  auto init = lib->function<NvmlInitFn>("nvmlInit_v2");
  auto shutdown = lib->function<NvmlShutdownFn>("nvmlShutdown");
  auto driver = lib->function<NvmlStringFn>("nvmlSystemGetDriverVersion");
  auto version = lib->function<NvmlStringFn>("nvmlSystemGetNVMLVersion");
  if (!init || !shutdown || !driver || !version) {
    answers["error"] = lib->path() + " lacks nvmlInit_v2/nvmlSystemGetDriverVersion";
    return answers;
  }
  const NvmlReturn status = init();
  answers["init_status"] = status;
  if (status != 0) return answers;
  char buf[kNvmlStringBytes] = {};
  if (driver(buf, sizeof buf) == 0) answers["driver_version"] = trim_copy(buf);
  char vbuf[kNvmlStringBytes] = {};
  if (version(vbuf, sizeof vbuf) == 0) answers["nvml_version"] = trim_copy(vbuf);
  shutdown();
  return answers;
}

nlohmann::json gather_cuda() {
  Result<DynamicLibrary> lib = DynamicLibrary::open_first(kCudaNames);
  nlohmann::json answers = {{"library", library_answers(lib)}, {"devices", nlohmann::json::array()}};
  if (!lib.ok()) return answers;
  auto init = lib->function<CuInitFn>("cuInit");
  auto driver_version = lib->function<CuDriverGetVersionFn>("cuDriverGetVersion");
  auto count_fn = lib->function<CuDeviceGetCountFn>("cuDeviceGetCount");
  auto get = lib->function<CuDeviceGetFn>("cuDeviceGet");
  auto name_fn = lib->function<CuDeviceGetNameFn>("cuDeviceGetName");
  auto total_mem = lib->function<CuDeviceTotalMemFn>("cuDeviceTotalMem_v2");
  auto attribute = lib->function<CuDeviceGetAttributeFn>("cuDeviceGetAttribute");
  if (!init || !driver_version || !count_fn || !get || !name_fn || !total_mem || !attribute) {
    answers["error"] = lib->path() + " lacks driver API functions (cuInit, cuDeviceTotalMem_v2, ...)";
    return answers;
  }
  int version = 0;
  if (driver_version(&version) == kCudaSuccess) answers["driver_version"] = version;
  answers["nvml"] = gather_nvml();
  const CUresult init_status = init(0);
  answers["init_status"] = init_status;
  if (init_status != kCudaSuccess) return answers;
  int count = 0;
  const CUresult count_status = count_fn(&count);
  answers["devices_status"] = count_status;
  if (count_status != kCudaSuccess) return answers;
  for (int i = 0; i < count; ++i) {
    nlohmann::json dev = nlohmann::json::object();
    CUdevice d = 0;
    char name[kDeviceNameBytes] = {};
    size_t bytes = 0;
    int major = 0, minor = 0;
    CUresult r = get(&d, i);
    if (r == kCudaSuccess) r = name_fn(name, sizeof name - 1, d);
    if (r == kCudaSuccess) r = total_mem(&bytes, d);
    if (r == kCudaSuccess) r = attribute(&major, kAttrComputeCapabilityMajor, d);
    if (r == kCudaSuccess) r = attribute(&minor, kAttrComputeCapabilityMinor, d);
    if (r != kCudaSuccess) {
      dev["error"] = "device " + std::to_string(i) + ": " + cuda_error_name(r);
      answers["devices"].push_back(std::move(dev));
      continue;
    }
    dev["name"] = trim_copy(name);
    dev["total_mem"] = static_cast<uint64_t>(bytes);
    dev["cc_major"] = major;
    dev["cc_minor"] = minor;
    int value = 0;
    if (attribute(&value, kAttrMultiprocessorCount, d) == kCudaSuccess) dev["multiprocessors"] = value;
    if (attribute(&value, kAttrClockRateKhz, d) == kCudaSuccess) dev["clock_khz"] = value;
    int domain = 0, bus = 0, slot = 0;
    if (attribute(&domain, kAttrPciDomainId, d) == kCudaSuccess &&
        attribute(&bus, kAttrPciBusId, d) == kCudaSuccess &&
        attribute(&slot, kAttrPciDeviceId, d) == kCudaSuccess) {
      char pci[32];
      std::snprintf(pci, sizeof pci, "%04x:%02x:%02x.0", domain, bus, slot);
      dev["pci_bus_id"] = pci;
    }
    answers["devices"].push_back(std::move(dev));
  }
  return answers;
}

// ---- interpretation ----------------------------------------------------------------------

// Arithmetic the hardware has natively, by compute capability (CUDA C Programming Guide):
// half arithmetic from 5.3, dp4a from 6.1, tensor cores from 7.0, bf16 from 8.0.
nlohmann::json cuda_features(uint64_t major, uint64_t minor) {
  const uint64_t cc = major * 10 + minor;
  return {{"fp16", cc >= 53}, {"bf16", cc >= 80}, {"int_dot_product", cc >= 61}, {"tensor_cores", cc >= 70}};
}

class CudaProbe final : public Probe {
 public:
  explicit CudaProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "cuda"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    auto log = get_logger("worker/probe/cuda");
    AM_ASSIGN_OR_RETURN(nlohmann::json answers, probe_answers(options_, "cuda", gather_cuda));
    if (!library_loaded(answers)) {
      log->debug("no CUDA driver: {}", json_string(json_object(answers, "library"), "error"));
      set_runtime(record, "cuda", absent_runtime());
      return Status::Ok();
    }
    nlohmann::json runtime = {{"present", true},
                              {"library", json_string(json_object(answers, "library"), "path")},
                              {"devices", 0},
                              {"skipped_devices", nlohmann::json::array()}};
    if (auto v = json_i64(answers, "driver_version")) {
      runtime["driver_api_version"] = cuda_version_string(static_cast<int>(*v));
    }
    const nlohmann::json& nvml = json_object(answers, "nvml");
    std::string nvml_driver;
    if (library_loaded(nvml)) {
      nvml_driver = json_string(nvml, "driver_version");
      nlohmann::json n = {{"present", true}, {"library", json_string(json_object(nvml, "library"), "path")}};
      if (!nvml_driver.empty()) n["driver_version"] = nvml_driver;
      if (std::string v = json_string(nvml, "nvml_version"); !v.empty()) n["nvml_version"] = v;
      if (auto s = json_i64(nvml, "init_status"); s && *s != 0) n["error"] = "nvmlInit_v2 returned " + std::to_string(*s);
      runtime["nvml"] = std::move(n);
    } else {
      runtime["nvml"] = absent_runtime();
    }
    if (std::string e = json_string(answers, "error"); !e.empty()) runtime["error"] = e;
    if (auto s = json_i64(answers, "init_status"); s && *s != kCudaSuccess) {
      runtime["error"] = "cuInit: " + cuda_error_name(*s);
    }
    if (auto s = json_i64(answers, "devices_status"); s && *s != kCudaSuccess) {
      runtime["error"] = "cuDeviceGetCount: " + cuda_error_name(*s);
    }
    // NVML knows the driver release people quote ("550.54.14"); the driver API only its CUDA level.
    const std::string driver = !nvml_driver.empty() ? nvml_driver
                               : runtime.contains("driver_api_version")
                                   ? "CUDA " + runtime["driver_api_version"].get<std::string>()
                                   : std::string();
    const nlohmann::json devices = json_array(answers, "devices");
    int listed = 0;
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const nlohmann::json& dev = devices[i];
      std::string why = json_string(dev, "error");
      const auto major = json_u64(dev, "cc_major");
      const auto minor = json_u64(dev, "cc_minor");
      if (why.empty() && (json_string(dev, "name").empty() || !major || !minor || !json_u64(dev, "total_mem"))) {
        why = "answers lack name, compute capability or memory";
      }
      if (!why.empty()) {
        log->warn("skipping CUDA device {}: {}", i, why);
        runtime["skipped_devices"].push_back({{"device", i}, {"reason", why}});
        continue;
      }
      const std::string cc = std::to_string(*major) + "." + std::to_string(*minor);
      nlohmann::json entry = {
          {"backend", "cuda"},
          {"name", json_string(dev, "name")},
          {"vendor", "NVIDIA"},
          {"driver", driver},
          {"compute_capability", cc},
          {"isa_level", "sm_" + std::to_string(*major) + std::to_string(*minor)},
          {"type", "gpu"},
          {"software", false},
          {"schedulable", false},
          {"compute_units", json_u64(dev, "multiprocessors").value_or(0)},
          {"clock_mhz", json_u64(dev, "clock_khz").value_or(0) / kKhzPerMhz},
          {"memory_bytes", json_u64(dev, "total_mem").value_or(0)},
          {"precisions", nlohmann::json::array()},
          {"features", cuda_features(*major, *minor)},
      };
      if (std::string pci = json_string(dev, "pci_bus_id"); !pci.empty()) entry["pci_bus_id"] = pci;
      const std::string key = add_device(record, entry);
      ++listed;
      log->debug("{}: {} (compute capability {})", key, entry["name"].get<std::string>(), cc);
    }
    runtime["devices"] = listed;
    set_runtime(record, "cuda", std::move(runtime));
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
};

}  // namespace

std::unique_ptr<Probe> make_cuda_probe(const ProbeOptions& options) {
  return std::make_unique<CudaProbe>(options);
}

}  // namespace am::worker
