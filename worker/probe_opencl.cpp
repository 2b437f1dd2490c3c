// The OpenCL probe; see worker/probe_opencl.h for what it writes. Gathering walks the ICD
// loader's platforms and devices and keeps every answer under the query's own name, so a
// recording reads like clinfo output and a hand-built one can be written from it.
#include <cstdint>
#include <string>
#include <vector>

#include "common/log.h"
#include "kernels/opencl/cl_api.h"
#include "kernels/opencl/opencl_backend.h"
#include "worker/probe.h"
#include "worker/probe_devices.h"
#include "worker/probe_dynlib.h"
#include "worker/probe_files.h"
#include "worker/probe_json.h"
#include "worker/probe_opencl.h"

namespace am::worker {

std::vector<jobs::Precision> opencl_precisions(const std::string& name, bool fp16) {
  const kernels::OpenClTraits traits{name, fp16, /*f16_without_extension=*/false};
  return kernels::supported_precisions([&](kernels::Op op, kernels::WeightFormat f) {
    return kernels::OpenClBackend::supports_on(traits, op, f);
  });
}

namespace {

using kernels::opencl::ClApi;
using kernels::opencl::cl_error_name;

// Vendor queries, from the extension specifications (cl_nv_device_attribute_query,
// cl_amd_device_attribute_query); spelled out so the probe does not depend on cl_ext.h's age.
constexpr cl_device_info kComputeCapabilityMajorNv = 0x4000;
constexpr cl_device_info kComputeCapabilityMinorNv = 0x4001;
constexpr cl_device_info kBoardNameAmd = 0x4038;
constexpr cl_device_info kMaxNumSubGroups = 0x105C;  // CL_DEVICE_MAX_NUM_SUB_GROUPS (2.1)
constexpr cl_int kPlatformNotFoundKhr = -1001;       // ocl-icd with no ICD installed
// Longest string a query may return; extension lists of real drivers are a few KiB.
constexpr size_t kMaxInfoStringBytes = 64 * 1024;

std::string describe_error(const char* call, const char* query, cl_int code) {
  return std::string(call) + "(" + query + "): " + std::string(cl_error_name(code)) + " (" +
         std::to_string(code) + ")";
}

// ---- gathering ---------------------------------------------------------------------------

template <typename Handle, typename InfoFn, typename Param>
cl_int info_string(InfoFn fn, Handle h, Param param, std::string& out) {
  size_t size = 0;
  cl_int err = fn(h, param, 0, nullptr, &size);
  if (err != CL_SUCCESS) return err;
  if (size > kMaxInfoStringBytes) size = kMaxInfoStringBytes;
  std::string buf(size, '\0');
  err = fn(h, param, size, buf.data(), nullptr);
  if (err != CL_SUCCESS) return err;
  out = trim_copy(buf);
  return CL_SUCCESS;
}

template <typename T>
cl_int device_value(const ClApi& cl, cl_device_id d, cl_device_info param, T& out) {
  T value{};
  const cl_int err = cl.GetDeviceInfo(d, param, sizeof value, &value, nullptr);
  if (err == CL_SUCCESS) out = value;
  return err;
}

struct StringQuery {
  const char* key;
  cl_device_info param;
  bool required;
};

struct NumberQuery {
  const char* key;
  cl_device_info param;
  int bytes;  // 4: cl_uint/cl_bool, 8: cl_ulong/cl_bitfield, 0: size_t
  bool required;
};

const StringQuery kDeviceStrings[] = {
    {"CL_DEVICE_NAME", CL_DEVICE_NAME, true},
    {"CL_DEVICE_VENDOR", CL_DEVICE_VENDOR, true},
    {"CL_DEVICE_VERSION", CL_DEVICE_VERSION, true},
    {"CL_DRIVER_VERSION", CL_DRIVER_VERSION, true},
    {"CL_DEVICE_EXTENSIONS", CL_DEVICE_EXTENSIONS, true},
    {"CL_DEVICE_OPENCL_C_VERSION", CL_DEVICE_OPENCL_C_VERSION, false},
    {"CL_DEVICE_PROFILE", CL_DEVICE_PROFILE, false},
};

const NumberQuery kDeviceNumbers[] = {
    {"CL_DEVICE_TYPE", CL_DEVICE_TYPE, 8, true},
    {"CL_DEVICE_MAX_COMPUTE_UNITS", CL_DEVICE_MAX_COMPUTE_UNITS, 4, true},
    {"CL_DEVICE_GLOBAL_MEM_SIZE", CL_DEVICE_GLOBAL_MEM_SIZE, 8, true},
    {"CL_DEVICE_MAX_MEM_ALLOC_SIZE", CL_DEVICE_MAX_MEM_ALLOC_SIZE, 8, true},
    {"CL_DEVICE_VENDOR_ID", CL_DEVICE_VENDOR_ID, 4, false},
    {"CL_DEVICE_MAX_CLOCK_FREQUENCY", CL_DEVICE_MAX_CLOCK_FREQUENCY, 4, false},
    {"CL_DEVICE_LOCAL_MEM_SIZE", CL_DEVICE_LOCAL_MEM_SIZE, 8, false},
    {"CL_DEVICE_AVAILABLE", CL_DEVICE_AVAILABLE, 4, false},
    {"CL_DEVICE_MAX_WORK_GROUP_SIZE", CL_DEVICE_MAX_WORK_GROUP_SIZE, 0, false},
    {"CL_DEVICE_MAX_NUM_SUB_GROUPS", kMaxNumSubGroups, 4, false},
};

cl_int query_number(const ClApi& cl, cl_device_id d, const NumberQuery& q, uint64_t& out) {
  if (q.bytes == 4) {
    cl_uint v = 0;
    const cl_int err = device_value(cl, d, q.param, v);
    out = v;
    return err;
  }
  if (q.bytes == 8) {
    cl_ulong v = 0;
    const cl_int err = device_value(cl, d, q.param, v);
    out = v;
    return err;
  }
  size_t v = 0;
  const cl_int err = device_value(cl, d, q.param, v);
  out = v;
  return err;
}

nlohmann::json gather_device(const ClApi& cl, cl_device_id d) {
  nlohmann::json dev = nlohmann::json::object();
  for (const StringQuery& q : kDeviceStrings) {
    std::string value;
    const cl_int err = info_string(cl.GetDeviceInfo, d, q.param, value);
    if (err == CL_SUCCESS) {
      dev[q.key] = value;
    } else if (q.required) {
      dev["error"] = describe_error("clGetDeviceInfo", q.key, err);
      return dev;
    }
  }
  for (const NumberQuery& q : kDeviceNumbers) {
    uint64_t value = 0;
    const cl_int err = query_number(cl, d, q, value);
    if (err == CL_SUCCESS) {
      dev[q.key] = value;
    } else if (q.required) {
      dev["error"] = describe_error("clGetDeviceInfo", q.key, err);
      return dev;
    }
  }
  const std::string extensions = json_string(dev, "CL_DEVICE_EXTENSIONS");
  if (has_extension(extensions, "cl_nv_device_attribute_query")) {
    cl_uint major = 0, minor = 0;
    if (device_value(cl, d, kComputeCapabilityMajorNv, major) == CL_SUCCESS &&
        device_value(cl, d, kComputeCapabilityMinorNv, minor) == CL_SUCCESS) {
      dev["CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV"] = major;
      dev["CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV"] = minor;
    }
  }
  if (has_extension(extensions, "cl_amd_device_attribute_query")) {
    std::string board;
    if (info_string(cl.GetDeviceInfo, d, kBoardNameAmd, board) == CL_SUCCESS) {
      dev["CL_DEVICE_BOARD_NAME_AMD"] = board;
    }
  }
  return dev;
}

nlohmann::json gather_platform(const ClApi& cl, cl_platform_id p) {
  nlohmann::json plat = nlohmann::json::object();
  const std::pair<const char*, cl_platform_info> queries[] = {
      {"CL_PLATFORM_NAME", CL_PLATFORM_NAME},       {"CL_PLATFORM_VENDOR", CL_PLATFORM_VENDOR},
      {"CL_PLATFORM_VERSION", CL_PLATFORM_VERSION}, {"CL_PLATFORM_PROFILE", CL_PLATFORM_PROFILE},
      {"CL_PLATFORM_EXTENSIONS", CL_PLATFORM_EXTENSIONS}};
  for (const auto& [key, param] : queries) {
    std::string value;
    if (info_string(cl.GetPlatformInfo, p, param, value) == CL_SUCCESS) plat[key] = value;
  }
  nlohmann::json devices = nlohmann::json::array();
  cl_uint count = 0;
  cl_int err = cl.GetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
  std::vector<cl_device_id> ids(count);
  if (err == CL_SUCCESS && count > 0) err = cl.GetDeviceIDs(p, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr);
  plat["devices_status"] = err;
  if (err == CL_SUCCESS) {
    for (cl_device_id d : ids) devices.push_back(gather_device(cl, d));
  }
  plat["devices"] = std::move(devices);
  return plat;
}

// Reads through the project's one OpenCL loader (kernels/opencl/cl_api.h), the same table the
// backend runs jobs with.
nlohmann::json gather_opencl() {
  Result<const DynamicLibrary*> lib = kernels::opencl::opencl_library();
  nlohmann::json answers = {{"library", library_answers(lib)}, {"platforms", nlohmann::json::array()}};
  if (!lib.ok()) return answers;
  Result<const ClApi*> api = kernels::opencl::opencl_api();
  if (!api.ok()) {
    answers["error"] = api.status().message();
    return answers;
  }
  const ClApi& cl = **api;
  cl_uint count = 0;
  cl_int err = cl.GetPlatformIDs(0, nullptr, &count);
  std::vector<cl_platform_id> ids(count);
  if (err == CL_SUCCESS && count > 0) err = cl.GetPlatformIDs(count, ids.data(), nullptr);
  answers["platforms_status"] = err;
  if (err != CL_SUCCESS) return answers;
  for (cl_platform_id p : ids) answers["platforms"].push_back(gather_platform(cl, p));
  return answers;
}

// ---- interpretation ----------------------------------------------------------------------

std::string device_type_name(uint64_t type) {
  if (type & CL_DEVICE_TYPE_GPU) return "gpu";
  if (type & CL_DEVICE_TYPE_ACCELERATOR) return "accelerator";
  if (type & CL_DEVICE_TYPE_CPU) return "cpu";
  if (type & CL_DEVICE_TYPE_CUSTOM) return "custom";
  return "other";
}

// Why a device's answers cannot make a device entry, or "" when they can.
std::string unusable_reason(const nlohmann::json& dev) {
  if (!dev.is_object()) return "answers are not an object";
  if (std::string e = json_string(dev, "error"); !e.empty()) return e;
  if (json_string(dev, "CL_DEVICE_NAME").empty()) return "no CL_DEVICE_NAME";
  for (const char* key : {"CL_DEVICE_TYPE", "CL_DEVICE_GLOBAL_MEM_SIZE"}) {
    if (!json_u64(dev, key)) return std::string("no ") + key;
  }
  if (auto available = json_u64(dev, "CL_DEVICE_AVAILABLE"); available && *available == 0) {
    return "CL_DEVICE_AVAILABLE is false";
  }
  return {};
}

nlohmann::json device_entry(const nlohmann::json& dev, const std::string& platform_name) {
  const std::string extensions = json_string(dev, "CL_DEVICE_EXTENSIONS");
  const uint64_t type = json_u64(dev, "CL_DEVICE_TYPE").value_or(0);
  std::string name = json_string(dev, "CL_DEVICE_NAME");
  const bool software = (type & CL_DEVICE_TYPE_CPU) != 0 || is_software_renderer_name(name);

  nlohmann::json features = {
      {"fp16", has_extension(extensions, "cl_khr_fp16")},
      {"fp64", has_extension(extensions, "cl_khr_fp64") || has_extension(extensions, "cl_amd_fp64")},
      {"int_dot_product", has_extension(extensions, "cl_khr_integer_dot_product") ||
                              has_extension(extensions, "cl_arm_integer_dot_product_int8")},
      {"subgroups", has_extension(extensions, "cl_khr_subgroups") ||
                        has_extension(extensions, "cl_intel_subgroups") ||
                        json_u64(dev, "CL_DEVICE_MAX_NUM_SUB_GROUPS").value_or(0) > 0},
  };
  nlohmann::json precisions = nlohmann::json::array();
  for (jobs::Precision p : opencl_precisions(name, features["fp16"].get<bool>())) {
    precisions.push_back(std::string(jobs::to_string(p)));
  }

  nlohmann::json entry = {
      {"backend", "opencl"},
      {"name", name},
      {"vendor", json_string(dev, "CL_DEVICE_VENDOR")},
      {"driver", json_string(dev, "CL_DRIVER_VERSION")},
      {"platform", platform_name},
      {"version", json_string(dev, "CL_DEVICE_VERSION")},
      {"opencl_c_version", json_string(dev, "CL_DEVICE_OPENCL_C_VERSION")},
      // A CPU renderer posing as a GPU (rusticl on llvmpipe) is listed as what it runs on.
      {"type", software ? std::string("cpu") : device_type_name(type)},
      {"software", software},
      {"schedulable", true},
      {"compute_units", json_u64(dev, "CL_DEVICE_MAX_COMPUTE_UNITS").value_or(0)},
      {"clock_mhz", json_u64(dev, "CL_DEVICE_MAX_CLOCK_FREQUENCY").value_or(0)},
      {"memory_bytes", json_u64(dev, "CL_DEVICE_GLOBAL_MEM_SIZE").value_or(0)},
      {"local_memory_bytes", json_u64(dev, "CL_DEVICE_LOCAL_MEM_SIZE").value_or(0)},
      {"max_alloc_bytes", json_u64(dev, "CL_DEVICE_MAX_MEM_ALLOC_SIZE").value_or(0)},
      {"precisions", std::move(precisions)},
      {"features", std::move(features)},
  };
  if (software && device_type_name(type) != "cpu") entry["reported_type"] = device_type_name(type);
  // The vendor id is kept for reference only: PoCL reports 0x8086 on AMD CPUs.
  if (auto id = json_u64(dev, "CL_DEVICE_VENDOR_ID")) entry["vendor_id"] = hex_string(*id, 4);
  const auto cc_major = json_u64(dev, "CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV");
  const auto cc_minor = json_u64(dev, "CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV");
  if (cc_major && cc_minor) {
    entry["compute_capability"] = std::to_string(*cc_major) + "." + std::to_string(*cc_minor);
    entry["isa_level"] = "sm_" + std::to_string(*cc_major) + std::to_string(*cc_minor);
  }
  // AMD's device name is the GPU architecture ("gfx1100"); the board name is what people call it.
  if (std::string board = json_string(dev, "CL_DEVICE_BOARD_NAME_AMD"); !board.empty()) {
    entry["isa_level"] = name;
    entry["name"] = board;
  }
  return entry;
}

class OpenClProbe final : public Probe {
 public:
  explicit OpenClProbe(ProbeOptions options) : options_(std::move(options)) {}

  std::string_view name() const override { return "opencl"; }
  bool supports() const override { return true; }

  Status run(nlohmann::json& record) override {
    auto log = get_logger("worker/probe/opencl");
    AM_ASSIGN_OR_RETURN(nlohmann::json answers, probe_answers(options_, "opencl", gather_opencl));
    if (!library_loaded(answers)) {
      log->debug("no OpenCL ICD loader: {}", json_string(json_object(answers, "library"), "error"));
      set_runtime(record, "opencl", absent_runtime());
      return Status::Ok();
    }
    nlohmann::json runtime = {{"present", true},
                              {"library", json_string(json_object(answers, "library"), "path")},
                              {"platforms", nlohmann::json::array()},
                              {"skipped_devices", nlohmann::json::array()}};
    if (std::string e = json_string(answers, "error"); !e.empty()) runtime["error"] = e;
    const auto status = static_cast<cl_int>(json_i64(answers, "platforms_status").value_or(CL_SUCCESS));
    if (status != CL_SUCCESS && status != kPlatformNotFoundKhr) {
      runtime["error"] = describe_error("clGetPlatformIDs", "", status);
    }
    const nlohmann::json platforms = json_array(answers, "platforms");
    for (std::size_t p = 0; p < platforms.size(); ++p) {
      const nlohmann::json& plat = platforms[p];
      const std::string platform_name = json_string(plat, "CL_PLATFORM_NAME");
      const nlohmann::json devices = json_array(plat, "devices");
      runtime["platforms"].push_back({{"name", platform_name},
                                      {"vendor", json_string(plat, "CL_PLATFORM_VENDOR")},
                                      {"version", json_string(plat, "CL_PLATFORM_VERSION")},
                                      {"devices", devices.size()}});
      for (std::size_t d = 0; d < devices.size(); ++d) {
        if (std::string why = unusable_reason(devices[d]); !why.empty()) {
          log->warn("skipping OpenCL device {} of platform '{}': {}", d, platform_name, why);
          runtime["skipped_devices"].push_back({{"platform", p}, {"device", d}, {"reason", why}});
          continue;
        }
        nlohmann::json entry = device_entry(devices[d], platform_name);
        // The value of ACCELMATRIX_OPENCL_DEVICE that opens this device (worker/device_selection.h).
        entry["selector"] = std::to_string(p) + ":" + std::to_string(d);
        const std::string key = add_device(record, entry);
        log->debug("{}: {} ({}{})", key, entry["name"].get<std::string>(), entry["type"].get<std::string>(),
                   entry["software"].get<bool>() ? ", software" : "");
      }
    }
    set_runtime(record, "opencl", std::move(runtime));
    return Status::Ok();
  }

 private:
  ProbeOptions options_;
};

}  // namespace

std::unique_ptr<Probe> make_opencl_probe(const ProbeOptions& options) {
  return std::make_unique<OpenClProbe>(options);
}

}  // namespace am::worker
