// The known-answer health job a device runs when its worker registers, every health interval and
// after a quarantine backoff (docs/PROTOCOL.md §5.11): a one-layer LLaMA-style decoder (matmul,
// RMSNorm, RoPE, grouped-query causal attention, SwiGLU, KV-cache decode) in accuracy mode on the
// device's own backend, checked by the job process against the cpu fp32 reference on the same
// seeded weights and inputs. Any status but `pass` fails the check.
//
// Contract: health_job_spec() is a valid jobs::JobSpec the device can run (device_can_run) when
// its backend runs f32 or any precision it advertises; it never enters a run, the store's jobs
// table or a report. health_job_id() gives ids no plan job can have ("health-" prefix; plan job
// ids are 16 hex digits). Pure, thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "coordinator/matching.h"
#include "jobs/job_spec.h"

namespace am::coord {

inline constexpr std::string_view kHealthModel = "health-check";
inline constexpr std::string_view kHealthJobPrefix = "health-";

jobs::JobSpec health_job_spec(const DeviceInfo& device);
std::string health_job_id(uint64_t sequence);
bool is_health_job_id(std::string_view job_id);

}  // namespace am::coord
