// hardware_class_id(): identical boxes must share a class, so the fingerprint uses only what
// identifies the hardware and its software stack — never the hostname — and memory rounded to
// whole GiB, because MemTotal differs by a few MiB between identical machines (kernel and
// firmware reservations).
//
// The ISA part: a device's own "isa_level" when it has one (a GPU's compute capability "sm_89",
// an AMD GPU's "gfx1100"); otherwise the CPU's for the cpu device and for software devices
// (PoCL, lavapipe), whose speed is the host CPU's; otherwise empty — a GPU's class must not change
// with the CPU of the box it sits in.
#include <cstdint>
#include <string>

#include "common/hash.h"
#include "worker/capability.h"

namespace am::worker {
namespace {

constexpr uint64_t kBytesPerGiB = uint64_t{1} << 30;
// 2^34 GiB = 2^64 bytes: the most memory a device can report as an integer.
constexpr double kMaxRepresentableGiB = 17179869184.0;

std::string string_field(const nlohmann::json& doc, const char* key) {
  if (!doc.is_object()) return {};
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

uint64_t memory_gib(const nlohmann::json& device) {
  if (!device.is_object()) return 0;
  auto it = device.find("memory_bytes");
  if (it == device.end() || !it->is_number()) return 0;
  if (it->is_number_unsigned()) return (it->get<uint64_t>() + kBytesPerGiB / 2) / kBytesPerGiB;
  if (it->is_number_integer()) {
    const int64_t v = it->get<int64_t>();
    return v > 0 ? (static_cast<uint64_t>(v) + kBytesPerGiB / 2) / kBytesPerGiB : 0;
  }
  // A double is whatever a peer claims: NaN, negative or beyond 2^64 bytes has no class of its
  // own, it shares "0" with a device that reports no memory (converting it would be undefined).
  const double gib = it->get<double>() / static_cast<double>(kBytesPerGiB) + 0.5;
  return gib >= 1.0 && gib < kMaxRepresentableGiB ? static_cast<uint64_t>(gib) : 0;
}

}  // namespace

std::string hardware_class_id(const nlohmann::json& device, const nlohmann::json& cpu) {
  std::string backend = string_field(device, "backend");
  std::string isa_level;
  const bool software = device.is_object() && device.contains("software") &&
                        device["software"].is_boolean() && device["software"].get<bool>();
  if (device.is_object() && device.contains("isa_level") && device["isa_level"].is_string()) {
    isa_level = device["isa_level"].get<std::string>();
  } else if (backend == "cpu" || software) {
    isa_level = string_field(cpu, "isa_level");
  }
  // '|' separates fields so that ("ab","c") and ("a","bc") hash differently.
  const std::string fingerprint = backend + '|' + string_field(device, "name") + '|' +
                                  string_field(device, "driver") + '|' +
                                  isa_level + '|' +
                                  std::to_string(memory_gib(device));
  if (backend.empty()) backend = "device";
  return backend + '-' + hex64(fnv1a64(fingerprint));
}

}  // namespace am::worker
