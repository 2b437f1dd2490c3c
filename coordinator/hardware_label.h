// Readable names for hardware classes, built from a worker's capability record.
//
// A hardware class id ("cpu-17c5240c3fea2575", worker/hardware_class.cpp) is what jobs and
// matrices key on; people read a label instead:
//   cpu device        "AMD EPYC · 2 cores · AVX2"            (model · cores · widest vector ISA)
//   software device   "PoCL on AMD EPYC · 2 cores · AVX2"    (the host CPU does the work)
//                     "lavapipe on AMD EPYC · 2 cores · AVX2"
//   other devices     "NVIDIA RTX 4090 · Vulkan · driver 550.54"
// The ISA summary is the widest vector extension the record lists with its AI extras:
// "AVX-512 VNNI/BF16", "AVX-512", "AVX2", "AVX", "SSE4.2", "NEON/SVE", ... (empty when unknown).
//
// Contract: pure functions of the JSON they are given; any field may be missing or of the wrong
// type (records come from peers) and then is left out of the label, never an error. Thread-safe.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace am::coord {

// The label of one device of a capability record (`device` is an element of "devices", `cpu`
// the record's "cpu" object, `topology` its "topology" object).
std::string hardware_class_label(const nlohmann::json& device, const nlohmann::json& cpu,
                                 const nlohmann::json& topology);

// "AVX-512 VNNI/BF16", "AVX2", ... from a cpu object's "isa" flags; "" when none is known.
std::string isa_summary(const nlohmann::json& cpu);

}  // namespace am::coord
