// The OpenCL probe (logger "worker/probe/opencl"): every platform and device the ICD loader
// (libOpenCL.so.1, opened with dlopen) reports.
//
// Answers source "opencl": {"library": {...}, "platforms_status": cl_int,
//   "platforms": [{"CL_PLATFORM_NAME", "CL_PLATFORM_VENDOR", "CL_PLATFORM_VERSION",
//                  "CL_PLATFORM_PROFILE", "CL_PLATFORM_EXTENSIONS", "devices_status": cl_int,
//                  "devices": [{"CL_DEVICE_NAME", ..., "CL_DEVICE_EXTENSIONS"} | {"error"}]}]}
// — each device's answers keyed by the OpenCL query's name (docs/RECORDINGS.md lists them).
//
// Record parts written:
//   "runtimes"."opencl": {"present": false} when no ICD loader is installed, else {"present": true,
//       "library", "platforms": [{"name", "vendor", "version", "devices"}], "skipped_devices":
//       [{"platform", "device", "reason"}], optional "error"}
//   one "devices" entry per usable device, key "opencl:<n>" counted over all platforms:
//       {"backend": "opencl", "name", "vendor", "vendor_id", "driver", "platform", "version",
//        "opencl_c_version", "type": "gpu"|"cpu"|"accelerator"|"custom"|"other", "software",
//        "schedulable": true, "compute_units", "clock_mhz", "memory_bytes" (global memory),
//        "local_memory_bytes", "max_alloc_bytes", "precisions", "features": {"fp16", "fp64",
//        "int_dot_product", "subgroups"}, optional "compute_capability"/"isa_level",
//        "hardware_class"}
// A device is software when its type is CPU or its name is a known CPU renderer — never by
// vendor id (PoCL reports Intel's 0x8086 on an AMD CPU). Software devices are not GPUs, but they
// are schedulable: the OpenCL backend is tested on PoCL.
#pragma once

#include <string>
#include <vector>

#include "jobs/precision.h"

namespace am::worker {

// The precisions the OpenCL backend runs on a device named `name`, with or without cl_khr_fp16,
// as the backend's own supports() answers them (kernels::OpenClBackend::supports_on): what the
// probe advertises, so the coordinator schedules exactly what the backend can run.
std::vector<jobs::Precision> opencl_precisions(const std::string& name, bool fp16);

}  // namespace am::worker
