#include <algorithm>
#include <array>
#include <string_view>

#include "jobs/job_spec.h"

namespace am::jobs {
namespace {

constexpr std::array<std::string_view, 7> kBackends = {"cpu", "opencl", "vulkan", "cuda",
                                                      "rocm", "openvino", "qnn"};
constexpr std::array<std::string_view, 9> kPrecisions = {"f32",  "f16",  "bf16", "q8_0", "q4_0",
                                                        "q4_1", "q3_k", "q2_k", "mixed"};
constexpr std::array<std::string_view, 11> kArchitectures = {
    "encoder-only", "decoder-only", "encoder-decoder", "vision", "vision-encoder-text-decoder",
    "speech",       "multimodal",   "diffusion",       "mixture-of-experts", "state-space", "rag"};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view s) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

}  // namespace

bool is_known_backend(std::string_view b) { return contains(kBackends, b); }
bool is_known_precision(std::string_view p) { return contains(kPrecisions, p); }
bool is_known_architecture(std::string_view a) { return contains(kArchitectures, a); }

}  // namespace am::jobs
