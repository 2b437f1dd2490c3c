#include "coordinator/health_job.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/reliability.h"

namespace am::coord {

jobs::JobSpec health_job_spec(const DeviceInfo& device) {
  jobs::JobSpec s;
  s.model = std::string(kHealthModel);
  s.architecture = "decoder-only";
  // Small enough to run in well under a second anywhere, large enough that every kernel of the
  // decoder path (GQA: 4 query heads over 2 KV heads, a row length that is not a power of two
  // in the MLP) is exercised.
  s.model_config = {{"style", "llama"},     {"layers", 1},        {"hidden", 64},
                    {"heads", 4},           {"kv_heads", 2},      {"intermediate", 96},
                    {"vocab", 256},         {"max_positions", 64}, {"rope_theta", 10000.0},
                    {"norm_eps", 1e-5},     {"activation", "silu"}, {"tie_embeddings", false},
                    {"decode_steps", 2}};
  s.scaled = true;
  s.backend = device.backend;
  const bool has_f32 = std::find(device.precisions.begin(), device.precisions.end(), jobs::Precision::kF32) !=
                       device.precisions.end();
  s.precision = has_f32 || device.precisions.empty() ? jobs::Precision::kF32 : device.precisions.front();
  s.batch = 1;
  s.seq_len = 16;
  s.mode = jobs::kModeAccuracy;
  s.seed = 1;
  s.timeout_s = reliability::kHealthJobTimeoutS;
  s.threads = 1;
  return s;
}

std::string health_job_id(uint64_t sequence) {
  return fmt::format("{}{:016x}", kHealthJobPrefix, sequence);
}

bool is_health_job_id(std::string_view job_id) { return job_id.substr(0, kHealthJobPrefix.size()) == kHealthJobPrefix; }

}  // namespace am::coord
