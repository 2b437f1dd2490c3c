// The capability record a worker advertises in HELLO and `accelmatrix-worker --probe` prints.
//
// Contract: probe_capabilities() runs every probe; a probe whose runtime is missing contributes
// {"present": false} under "runtimes" and no devices, a failing probe is logged and skipped — it
// never fails as a whole. The record (schema 2; docs/PROTOCOL.md §6.1 is the full description) is:
//   {
//     "schema": 2,
//     "host": {"hostname", "os", "kernel"},
//     "cpu": {"vendor", "model", "arch", "isa": {"avx2": bool, "fma": bool, ...}, "isa_level"},
//     "topology": {"packages", "cores", "pus",
//                  "caches": [{"level", "type", "size_bytes", "line_bytes", "count"}],
//                  "numa_nodes": [{"os_index", "memory_bytes"}],
//                  "memory_bytes_hwloc", "memory_bytes_os", "memory_limit_bytes",
//                  "memory_limit_source"},
//     "runtimes": {"opencl": {"present": bool, ...}, "vulkan": {...}, "cuda": {...},
//                  "rocm": {...}, "openvino": {...}, "qnn": {...}},
//     "devices": [{"key": "cpu:0" | "opencl:0" | "vulkan:0" | "cuda:0" ..., "backend", "name",
//                  "vendor", "driver", "type", "software": bool, "schedulable": bool,
//                  "compute_units", "memory_bytes", "precisions": [...], "features": {...},
//                  "hardware_class": "<backend>-<16 hex>", ...backend-specific fields}]
//   }
// "software" marks devices that run on the CPU (PoCL, lavapipe/llvmpipe, SwiftShader): never
// GPUs. "schedulable": false marks devices probed for the record that no accelmatrix backend can
// run jobs on yet (Vulkan, CUDA); they list no precisions and the coordinator never matches them.
// Schema 1 records (no "runtimes", no "schedulable") are read as cpu devices that are schedulable.
// "hardware_class" is a fingerprint of (backend, device name, driver, ISA level or compute
// capability, memory rounded to GiB): identical boxes share it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace am::worker {

nlohmann::json probe_capabilities();

// Fingerprint used as "hardware_class" (exposed for tests). The ISA part is the device's own
// "isa_level" when it has one, else the CPU's for the cpu backend and software devices, else "".
std::string hardware_class_id(const nlohmann::json& device, const nlohmann::json& cpu);

}  // namespace am::worker
