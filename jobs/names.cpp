#include "jobs/names.h"

#include <algorithm>
#include <array>
#include <string_view>

#include "jobs/job_spec.h"

namespace am::jobs {
namespace {

constexpr std::array<std::string_view, 7> kBackends = {"cpu", "opencl", "vulkan", "cuda",
                                                      "rocm", "openvino", "qnn"};
constexpr std::array<std::string_view, 11> kArchitectures = {
    "encoder-only", "decoder-only", "encoder-decoder", "vision", "vision-encoder-text-decoder",
    "speech",       "multimodal",   "diffusion",       "mixture-of-experts", "state-space", "rag"};
constexpr std::array<std::string_view, 3> kModes = {kModeAccuracy, kModePerf, kModeBoth};

bool contains(std::span<const std::string_view> names, std::string_view s) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

}  // namespace

std::span<const std::string_view> known_backends() { return kBackends; }
std::span<const std::string_view> known_architectures() { return kArchitectures; }
std::span<const std::string_view> known_modes() { return kModes; }

bool is_known_backend(std::string_view b) { return contains(kBackends, b); }
bool is_known_architecture(std::string_view a) { return contains(kArchitectures, a); }
bool is_known_mode(std::string_view m) { return contains(kModes, m); }

std::string run_id_problem(std::string_view run_id) {
  if (run_id.empty() || is_valid_identifier(run_id)) return {};
  return "run id '" + std::string(run_id.substr(0, 128)) +
         "' is not valid (1-64 of letters, digits, '.', '_', '-', not starting with '.' or '-')";
}

bool is_valid_identifier(std::string_view name) {
  if (name.empty() || name.size() > kMaxIdentifierLength) return false;
  if (name.front() == '.' || name.front() == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

std::string join_names(std::span<const std::string_view> names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

}  // namespace am::jobs
