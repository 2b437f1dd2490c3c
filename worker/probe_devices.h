// Helpers the runtime probes share for writing their part of the capability record.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace am::worker {

// Appends `device` (which names its "backend") to record["devices"], keyed "<backend>:<n>" with
// n counting that backend's devices already listed, and fingerprints it ("hardware_class") with
// the record's "cpu" part (a software device with the host's memory, topology.memory_limit_bytes).
// Returns the key.
std::string add_device(nlohmann::json& record, nlohmann::json device);

// record["runtimes"][name] = entry.
void set_runtime(nlohmann::json& record, std::string_view name, nlohmann::json entry);

// The runtime entry of a runtime that is not installed.
nlohmann::json absent_runtime();

// Whether a device or driver name is one of the CPU renderers that pose as GPUs (Mesa's
// llvmpipe/lavapipe/softpipe, Google's SwiftShader). Case-insensitive substring match.
bool is_software_renderer_name(std::string_view name);

// "12.4" from a CUDA/HIP-style packed version (major*1000 + minor*10 for CUDA).
std::string cuda_version_string(int packed);

}  // namespace am::worker
