#include "coordinator/hardware_label.h"

#include <string_view>
#include <vector>

namespace am::coord {
namespace {

std::string text(const nlohmann::json& doc, const char* key) {
  if (!doc.is_object()) return {};
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool flag(const nlohmann::json& isa, const char* key) {
  if (!isa.is_object()) return false;
  auto it = isa.find(key);
  return it != isa.end() && it->is_boolean() && it->get<bool>();
}

int64_t positive(const nlohmann::json& doc, const char* key) {
  if (!doc.is_object()) return 0;
  auto it = doc.find(key);
  if (it == doc.end() || !it->is_number_integer()) return 0;
  const int64_t v = it->get<int64_t>();
  return v > 0 ? v : 0;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

std::string backend_name(const std::string& backend) {
  if (backend == "opencl") return "OpenCL";
  if (backend == "vulkan") return "Vulkan";
  if (backend == "cuda") return "CUDA";
  if (backend == "rocm") return "ROCm";
  if (backend == "cpu") return "CPU";
  return backend;
}

// What a software device is called, from its platform or driver strings.
std::string software_name(const nlohmann::json& device) {
  const std::string platform = text(device, "platform"), driver = text(device, "driver"),
                    name = text(device, "name");
  if (platform.find("Portable Computing Language") != std::string::npos) return "PoCL";
  if (driver.find("llvmpipe") != std::string::npos || name.find("llvmpipe") != std::string::npos) {
    return "lavapipe";
  }
  if (name.find("SwiftShader") != std::string::npos) return "SwiftShader";
  return backend_name(text(device, "backend")) + " software device";
}

}  // namespace

std::string isa_summary(const nlohmann::json& cpu) {
  const nlohmann::json isa = cpu.is_object() && cpu.contains("isa") ? cpu["isa"] : nlohmann::json();
  if (flag(isa, "avx512f")) {
    std::vector<std::string> extras;
    if (flag(isa, "avx512_vnni")) extras.emplace_back("VNNI");
    if (flag(isa, "avx512_bf16")) extras.emplace_back("BF16");
    if (flag(isa, "avx512_fp16")) extras.emplace_back("FP16");
    if (flag(isa, "amx_tile")) extras.emplace_back("AMX");
    return extras.empty() ? "AVX-512" : "AVX-512 " + join(extras, "/");
  }
  if (flag(isa, "avx2")) return flag(isa, "avx_vnni") ? "AVX2 VNNI" : "AVX2";
  if (flag(isa, "avx")) return "AVX";
  if (flag(isa, "sse4_2")) return "SSE4.2";
  std::vector<std::string> arm;
  if (flag(isa, "neon") || flag(isa, "asimd")) arm.emplace_back("NEON");
  if (flag(isa, "sve")) arm.emplace_back("SVE");
  if (flag(isa, "i8mm")) arm.emplace_back("I8MM");
  if (!arm.empty()) return join(arm, "/");
  return text(cpu, "isa_level");
}

std::string hardware_class_label(const nlohmann::json& device, const nlohmann::json& cpu,
                                 const nlohmann::json& topology) {
  const std::string backend = text(device, "backend");
  const bool software = device.is_object() && device.contains("software") && device["software"].is_boolean() &&
                        device["software"].get<bool>();
  int64_t cores = positive(topology, "cores");
  if (cores == 0 && backend == "cpu") cores = positive(device, "compute_units");
  std::string host_cpu = text(cpu, "model");
  if (host_cpu.empty()) host_cpu = text(device, "name");
  const std::string host = join({host_cpu, cores > 0 ? std::to_string(cores) + " cores" : std::string(),
                                 isa_summary(cpu)},
                                " · ");
  if (backend == "cpu") return host.empty() ? "CPU" : host;
  if (software) return software_name(device) + " on " + (host.empty() ? "CPU" : host);
  const std::string driver = text(device, "driver");
  return join({text(device, "name"), backend_name(backend), driver.empty() ? std::string() : "driver " + driver},
              " · ");
}

}  // namespace am::coord
