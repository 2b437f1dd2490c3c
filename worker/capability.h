// The capability record a worker advertises in HELLO and `accelmatrix-worker --probe` prints.
//
// Contract: probe_capabilities() runs every probe; a probe whose runtime is missing contributes
// nothing, a failing probe is logged and skipped — it never fails as a whole. The record
// (schema 1) is:
//   {
//     "schema": 1,
//     "host": {"hostname", "os", "kernel"},
//     "cpu": {"vendor", "model", "arch", "isa": {"avx2": bool, "fma": bool, ...}, "isa_level"},
//     "topology": {"packages", "cores", "pus",
//                  "caches": [{"level", "type", "size_bytes", "line_bytes", "count"}],
//                  "numa_nodes": [{"os_index", "memory_bytes"}],
//                  "memory_bytes_hwloc", "memory_bytes_os", "memory_limit_source"},
//     "devices": [{"key": "cpu:0", "backend": "cpu", "name", "vendor", "software": false,
//                  "compute_units", "memory_bytes", "precisions": [...],
//                  "hardware_class": "cpu-<16 hex>"}]
//   }
// "hardware_class" is a fingerprint of (backend, device name, driver, ISA level, memory):
// identical boxes share it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace am::worker {

nlohmann::json probe_capabilities();

// Fingerprint used as "hardware_class" (exposed for tests).
std::string hardware_class_id(const nlohmann::json& device, const nlohmann::json& cpu);

}  // namespace am::worker
