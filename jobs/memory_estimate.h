// Memory a job needs: weights at its precision + activations + KV cache / recurrent state, from
// the model_config keys of its architecture family, so a worker can skip a job its device
// cannot hold (with the reason) instead of crashing.
//
// Contract:
//   - estimate_job_bytes() is a pure, thread-safe function of the JobSpec (architecture,
//     model_config, precision, batch, seq_len). It returns nullopt when the architecture is
//     unknown or its config lacks a key the estimate needs (never a guess).
//   - Weights: linear-layer parameters at the precision's stored bits per weight (f32 32,
//     f16/bf16 16, q8_0 8.5, q4_0 4.5, q4_1 5, q3_k 3.4375, q2_k 2.625; "mixed" by tensor role:
//     attention and output/embedding projections 8.5, feed-forward 4.5), while embedding tables,
//     norms, biases, convolutions and recurrent parameters count at f32 — as the inference core
//     stores them.
//   - Activations: the largest working set of one pass (hidden states, the feed-forward
//     intermediate, attention scores) for batch x tokens, f32, times a small factor for the
//     buffers live at once. KV cache (f32 keys and values per layer over prompt + decode steps)
//     for generative families; per-layer state for recurrent ones.
//   - An estimate, not a measurement: within tens of percent of peak RSS for large models.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "jobs/job_spec.h"

namespace am::jobs {

std::optional<int64_t> estimate_job_bytes(const JobSpec& spec);

}  // namespace am::jobs
