// Presence-and-version probes for runtimes accelmatrix has no backend for yet (loggers
// "worker/probe/rocm", ".../openvino", ".../qnn"). Each opens the runtime's library with dlopen
// and asks only what a stable C entry point answers; none of them adds devices (an AMD GPU shows
// up through OpenCL and Vulkan).
//
// Answers and record entries ("runtimes".<name>; {"present": false} when no library loads):
//   rocm      answers {"library", "runtime_version_status", "runtime_version", "driver_version",
//             "device_count_status", "device_count", "hsa": {"library"}}
//             entry   {"present", "library", "hip_runtime_version", "hip_driver_version",
//                      "devices", "hsa_runtime", optional "error"}
//   openvino  answers {"library", "c_api": bool, "version_status", "build_number", "description"}
//             entry   {"present", "library", "version", "description"}
//   qnn       answers {"backends": {"htp": {"library"}, "system": {...}, "cpu": {...}, "gpu": {...}}}
//             entry   {"present", "backends": {"htp": path, ...}}
#include <cstdint>
#include <cstdlib>
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

// ---- ROCm (HIP) --------------------------------------------------------------------------

using HipIntFn = int (*)(int*);
constexpr int kHipSuccess = 0;
// HIP packs versions as major * 10^7 + minor * 10^5 + patch.
constexpr int64_t kHipMajorScale = 10000000;
constexpr int64_t kHipMinorScale = 100000;

// ROCm registers /opt/rocm/lib with the dynamic loader on most installs; the explicit path
// covers those that do not.
const std::vector<std::string> kHipNames = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
                                            "/opt/rocm/lib/libamdhip64.so"};
const std::vector<std::string> kHsaNames = {"libhsa-runtime64.so.1", "/opt/rocm/lib/libhsa-runtime64.so.1"};

std::string hip_version_string(int64_t v) {
  return std::to_string(v / kHipMajorScale) + "." + std::to_string((v / kHipMinorScale) % 100) + "." +
         std::to_string(v % kHipMinorScale);
}

nlohmann::json gather_rocm() {
  Result<DynamicLibrary> lib = DynamicLibrary::open_first(kHipNames);
  nlohmann::json answers = {{"library", library_answers(lib)}};
  {
    Result<DynamicLibrary> hsa = DynamicLibrary::open_first(kHsaNames);
    answers["hsa"] = {{"library", library_answers(hsa)}};
  }
  if (!lib.ok()) return answers;
  auto runtime_version = lib->function<HipIntFn>("hipRuntimeGetVersion");
  auto driver_version = lib->function<HipIntFn>("hipDriverGetVersion");
  auto device_count = lib->function<HipIntFn>("hipGetDeviceCount");
  if (runtime_version) {
    int v = 0;
    const int s = runtime_version(&v);
    answers["runtime_version_status"] = s;
    if (s == kHipSuccess) answers["runtime_version"] = v;
  }
  if (driver_version) {
    int v = 0;
    if (driver_version(&v) == kHipSuccess) answers["driver_version"] = v;
  }
  if (device_count) {
    int n = 0;
    const int s = device_count(&n);
    answers["device_count_status"] = s;
    if (s == kHipSuccess) answers["device_count"] = n;
  }
  return answers;
}

nlohmann::json interpret_rocm(const nlohmann::json& answers) {
  const nlohmann::json& hsa = json_object(answers, "hsa");
  const bool hip = library_loaded(answers);
  const bool hsa_loaded = library_loaded(hsa);
  if (!hip && !hsa_loaded) return absent_runtime();
  nlohmann::json entry = {{"present", true}};
  if (hip) entry["library"] = json_string(json_object(answers, "library"), "path");
  if (hsa_loaded) entry["hsa_runtime"] = json_string(json_object(hsa, "library"), "path");
  if (auto v = json_i64(answers, "runtime_version")) entry["hip_runtime_version"] = hip_version_string(*v);
  if (auto v = json_i64(answers, "driver_version")) entry["hip_driver_version"] = hip_version_string(*v);
  if (auto n = json_i64(answers, "device_count")) entry["devices"] = *n;
  if (auto s = json_i64(answers, "device_count_status"); s && *s != kHipSuccess) {
    entry["devices"] = 0;
    entry["error"] = "hipGetDeviceCount returned " + std::to_string(*s);
  }
  if (!hip) entry["error"] = "HSA runtime without HIP: " + json_string(json_object(answers, "library"), "error");
  return entry;
}

// ---- OpenVINO ----------------------------------------------------------------------------

// The C API's version record (openvino/c/ov_common.h): two C strings owned by the library.
struct OvVersion {
  const char* build_number;
  const char* description;
};
using OvGetVersionFn = int (*)(OvVersion*);
using OvVersionFreeFn = void (*)(OvVersion*);
constexpr int kOvOk = 0;

std::vector<std::string> openvino_names() {
  std::vector<std::string> names = {"libopenvino_c.so"};
  // setupvars.sh exports INTEL_OPENVINO_DIR; archives install the libraries below it.
  if (const char* dir = std::getenv("INTEL_OPENVINO_DIR"); dir != nullptr && *dir != '\0') {
    names.push_back(std::string(dir) + "/runtime/lib/intel64/libopenvino_c.so");
    names.push_back(std::string(dir) + "/runtime/lib/aarch64/libopenvino_c.so");
  }
  names.push_back("libopenvino.so");
  return names;
}

nlohmann::json gather_openvino() {
  Result<DynamicLibrary> lib = DynamicLibrary::open_first(openvino_names());
  nlohmann::json answers = {{"library", library_answers(lib)}};
  if (!lib.ok()) return answers;
  auto get_version = lib->function<OvGetVersionFn>("ov_get_openvino_version");
  auto free_version = lib->function<OvVersionFreeFn>("ov_version_free");
  answers["c_api"] = get_version != nullptr && free_version != nullptr;
  if (get_version == nullptr || free_version == nullptr) return answers;
  OvVersion v{nullptr, nullptr};
  const int s = get_version(&v);
  answers["version_status"] = s;
  if (s == kOvOk) {
    if (v.build_number != nullptr) answers["build_number"] = std::string(v.build_number);
    if (v.description != nullptr) answers["description"] = std::string(v.description);
    free_version(&v);
  }
  return answers;
}

nlohmann::json interpret_openvino(const nlohmann::json& answers) {
  if (!library_loaded(answers)) return absent_runtime();
  nlohmann::json entry = {{"present", true}, {"library", json_string(json_object(answers, "library"), "path")}};
  if (std::string v = json_string(answers, "build_number"); !v.empty()) entry["version"] = v;
  if (std::string d = json_string(answers, "description"); !d.empty()) entry["description"] = d;
  if (!json_bool(answers, "c_api", false)) entry["error"] = "no C API (libopenvino_c): version unknown";
  if (auto s = json_i64(answers, "version_status"); s && *s != kOvOk) {
    entry["error"] = "ov_get_openvino_version returned " + std::to_string(*s);
  }
  return entry;
}

// ---- QNN ---------------------------------------------------------------------------------

struct QnnBackend {
  const char* name;
  const char* library;
};
// The Qualcomm AI Engine Direct SDK's backend libraries; found through LD_LIBRARY_PATH as its
// set-up script arranges.
constexpr QnnBackend kQnnBackends[] = {
    {"htp", "libQnnHtp.so"}, {"system", "libQnnSystem.so"}, {"cpu", "libQnnCpu.so"}, {"gpu", "libQnnGpu.so"}};

nlohmann::json gather_qnn() {
  nlohmann::json backends = nlohmann::json::object();
  for (const QnnBackend& b : kQnnBackends) {
    Result<DynamicLibrary> lib = DynamicLibrary::open_first({b.library});
    backends[b.name] = {{"library", library_answers(lib)}};
  }
  return {{"backends", std::move(backends)}};
}

nlohmann::json interpret_qnn(const nlohmann::json& answers) {
  nlohmann::json found = nlohmann::json::object();
  if (auto it = answers.find("backends"); it != answers.end() && it->is_object()) {
    for (const auto& [name, backend] : it->items()) {
      if (library_loaded(backend)) found[name] = json_string(json_object(backend, "library"), "path");
    }
  }
  if (found.empty()) return absent_runtime();
  return {{"present", true}, {"backends", std::move(found)}};
}

// ---- the probe component -----------------------------------------------------------------

using Gather = nlohmann::json (*)();
using Interpret = nlohmann::json (*)(const nlohmann::json&);

class RuntimePresenceProbe final : public Probe {
 public:
  RuntimePresenceProbe(ProbeOptions options, std::string_view runtime, Gather gather, Interpret interpret)
      : options_(std::move(options)), runtime_(runtime), gather_(gather), interpret_(interpret) {}

  std::string_view name() const override { return runtime_; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    AM_ASSIGN_OR_RETURN(nlohmann::json answers, probe_answers(options_, runtime_, gather_));
    nlohmann::json entry = interpret_(answers);
    get_logger("worker/probe/" + std::string(runtime_))
        ->debug("{}: {}", runtime_, json_bool(entry, "present", false) ? entry.dump() : "absent");
    set_runtime(record, runtime_, std::move(entry));
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
  std::string_view runtime_;
  Gather gather_;
  Interpret interpret_;
};

}  // namespace

std::unique_ptr<Probe> make_rocm_probe(const ProbeOptions& options) {
  return std::make_unique<RuntimePresenceProbe>(options, "rocm", gather_rocm, interpret_rocm);
}

std::unique_ptr<Probe> make_openvino_probe(const ProbeOptions& options) {
  return std::make_unique<RuntimePresenceProbe>(options, "openvino", gather_openvino, interpret_openvino);
}

std::unique_ptr<Probe> make_qnn_probe(const ProbeOptions& options) {
  return std::make_unique<RuntimePresenceProbe>(options, "qnn", gather_qnn, interpret_qnn);
}

}  // namespace am::worker
