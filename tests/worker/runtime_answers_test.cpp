// Runtime probes interpreting crafted answers (as a recording would hold them): failing devices
// are skipped and logged while the others stay, missing runtimes are {"present": false},
// vendor-specific fields are read, software renderers are never GPUs.
#include <algorithm>
#include <unistd.h>

#include <random>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "worker/capability.h"
#include "worker/probe.h"
#include "worker/recording.h"

namespace am::worker {
namespace {

using nlohmann::json;

const json kCpu = {{"arch", "x86_64"}, {"isa_level", "x86-64-v3"}, {"model", "Test CPU"}};

// Writes `answers` for `source` into a scratch recording and runs one probe over it.
class AnswersReplay {
 public:
  AnswersReplay() {
    std::mt19937_64 rng(std::random_device{}());
    dir_ = std::filesystem::temp_directory_path() /
           ("am-answers-" + std::to_string(getpid()) + "-" + std::to_string(rng()));
  }
  ~AnswersReplay() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  json run(std::unique_ptr<Probe> (*make)(const ProbeOptions&), const std::string& source, const json& answers) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    auto recorder = Recorder::create(dir_);
    EXPECT_TRUE(recorder.ok());
    (*recorder)->add_answers(source, answers);
    EXPECT_TRUE((*recorder)->finish("crafted").ok());
    auto recording = Recording::open(dir_);
    EXPECT_TRUE(recording.ok()) << recording.status().to_string();
    auto probe = make(replay_options(*recording));
    json record = {{"cpu", kCpu}, {"runtimes", json::object()}, {"devices", json::array()}};
    const Status st = probe->run(record);
    EXPECT_TRUE(st.ok()) << st.to_string();
    return record;
  }

 private:
  std::filesystem::path dir_;
};

json loaded(const std::string& path) { return {{"loaded", true}, {"name", path}, {"path", path}}; }
json missing() { return {{"loaded", false}, {"error", "cannot open shared object file"}}; }

json cl_device(const std::string& name, uint64_t type, const std::string& extensions, uint64_t memory) {
  return {{"CL_DEVICE_NAME", name},        {"CL_DEVICE_VENDOR", "Vendor"},
          {"CL_DEVICE_VERSION", "OpenCL 3.0"}, {"CL_DRIVER_VERSION", "1.0"},
          {"CL_DEVICE_EXTENSIONS", extensions}, {"CL_DEVICE_TYPE", type},
          {"CL_DEVICE_MAX_COMPUTE_UNITS", 8}, {"CL_DEVICE_GLOBAL_MEM_SIZE", memory},
          {"CL_DEVICE_MAX_MEM_ALLOC_SIZE", memory / 4}};
}

TEST(OpenClProbe, SkipsFailingAndUnavailableDevicesButKeepsTheRest) {
  json unavailable = cl_device("Sleeping GPU", 4, "", 1ull << 32);
  unavailable["CL_DEVICE_AVAILABLE"] = 0;
  const json answers = {
      {"library", loaded("/usr/lib/libOpenCL.so.1")},
      {"platforms_status", 0},
      {"platforms",
       {{{"CL_PLATFORM_NAME", "Broken"},
         {"devices", {{{"error", "clGetDeviceInfo(CL_DEVICE_NAME): CL_INVALID_DEVICE (-33)"}}, unavailable}}},
        {{"CL_PLATFORM_NAME", "Good"}, {"devices", {cl_device("Good GPU", 4, "cl_khr_fp16", 8ull << 30)}}}}}};
  AnswersReplay replay;
  const json rec = replay.run(make_opencl_probe, "opencl", answers);
  ASSERT_EQ(rec["devices"].size(), 1u);
  EXPECT_EQ(rec["devices"][0]["key"], "opencl:0");
  EXPECT_EQ(rec["devices"][0]["name"], "Good GPU");
  EXPECT_EQ(rec["devices"][0]["platform"], "Good");
  const json& skipped = rec["runtimes"]["opencl"]["skipped_devices"];
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0]["platform"], 0);
  EXPECT_NE(skipped[0]["reason"].get<std::string>().find("CL_INVALID_DEVICE"), std::string::npos);
  EXPECT_EQ(skipped[1]["reason"], "CL_DEVICE_AVAILABLE is false");
}

TEST(OpenClProbe, ExtensionsDecideFeaturesAndHalfPrecision) {
  const json answers = {
      {"library", loaded("libOpenCL.so.1")},
      {"platforms",
       {{{"CL_PLATFORM_NAME", "P"},
         {"devices",
          {cl_device("A", 4, "cl_khr_fp64 cl_khr_fp16 cl_khr_integer_dot_product cl_khr_subgroups", 1ull << 33),
           // cl_khr_fp16x is not cl_khr_fp16: extensions are matched whole.
           cl_device("B", 4, "cl_khr_fp16x cl_amd_fp64", 1ull << 33)}}}}}};
  AnswersReplay replay;
  const json rec = replay.run(make_opencl_probe, "opencl", answers);
  ASSERT_EQ(rec["devices"].size(), 2u);
  EXPECT_EQ(rec["devices"][0]["features"],
            json({{"fp16", true}, {"fp64", true}, {"int_dot_product", true}, {"subgroups", true}}));
  const json& a = rec["devices"][0]["precisions"];
  EXPECT_NE(std::find(a.begin(), a.end(), "f16"), a.end()) << a.dump();
  EXPECT_EQ(rec["devices"][1]["features"],
            json({{"fp16", false}, {"fp64", true}, {"int_dot_product", false}, {"subgroups", false}}));
  for (const auto& p : rec["devices"][1]["precisions"]) EXPECT_NE(p, "f16");
}

TEST(OpenClProbe, AmdBoardNameBecomesTheNameAndTheGfxTargetTheIsa) {
  json dev = cl_device("gfx1100", 4, "cl_khr_fp16 cl_amd_device_attribute_query", 24ull << 30);
  dev["CL_DEVICE_BOARD_NAME_AMD"] = "AMD Radeon RX 7900 XTX";
  dev["CL_DEVICE_VENDOR"] = "Advanced Micro Devices, Inc.";
  dev["CL_DRIVER_VERSION"] = "3614.0 (HSA1.1,LC)";
  const json answers = {{"library", loaded("libOpenCL.so.1")},
                        {"platforms", {{{"CL_PLATFORM_NAME", "AMD Accelerated Parallel Processing"}, {"devices", {dev}}}}}};
  AnswersReplay replay;
  const json d = replay.run(make_opencl_probe, "opencl", answers)["devices"][0];
  EXPECT_EQ(d["name"], "AMD Radeon RX 7900 XTX");
  EXPECT_EQ(d["isa_level"], "gfx1100");
  EXPECT_EQ(d["software"], false);
  EXPECT_EQ(d["hardware_class"],
            "opencl-" + hex64(fnv1a64("opencl|AMD Radeon RX 7900 XTX|3614.0 (HSA1.1,LC)|gfx1100|24")));
}

TEST(OpenClProbe, RendererOnTheCpuIsSoftwareEvenWhenItSaysGpu) {
  const json answers = {{"library", loaded("libOpenCL.so.1")},
                        {"platforms", {{{"CL_PLATFORM_NAME", "rusticl"},
                                        {"devices", {cl_device("llvmpipe (LLVM 15.0.6, 256 bits)", 4, "", 1ull << 32)}}}}}};
  AnswersReplay replay;
  const json d = replay.run(make_opencl_probe, "opencl", answers)["devices"][0];
  EXPECT_EQ(d["software"], true);
  EXPECT_EQ(d["type"], "cpu");
  EXPECT_EQ(d["reported_type"], "gpu");
}

TEST(OpenClProbe, MissingLoaderIsAbsentAndAFailingOneIsAnError) {
  AnswersReplay replay;
  const json none = replay.run(make_opencl_probe, "opencl", {{"library", missing()}, {"platforms", json::array()}});
  EXPECT_EQ(none["runtimes"]["opencl"], json({{"present", false}}));
  EXPECT_EQ(none["devices"], json::array());

  const json broken = replay.run(make_opencl_probe, "opencl",
                                 {{"library", loaded("libOpenCL.so.1")}, {"platforms_status", -6}, {"platforms", json::array()}});
  EXPECT_EQ(broken["runtimes"]["opencl"]["present"], true);
  EXPECT_NE(broken["runtimes"]["opencl"]["error"].get<std::string>().find("CL_OUT_OF_HOST_MEMORY"), std::string::npos);
}

json vk_device(const std::string& name, int type, uint32_t vendor, uint32_t driver_version) {
  return {{"properties",
           {{"deviceName", name}, {"deviceType", type}, {"vendorID", vendor}, {"deviceID", 0x1234},
            {"apiVersion", (1u << 22) | (3u << 12) | 250u}, {"driverVersion", driver_version}}},
          {"memory_heaps", {{{"size", 8ull << 30}, {"flags", 1}}, {{"size", 32ull << 30}, {"flags", 0}}}},
          {"features", {{"shaderFloat16", true}, {"shaderInt8", false}}},
          {"subgroup", {{"subgroupSize", 64}}},
          {"limits", {{"maxStorageBufferRange", 1u << 30}}}};
}

TEST(VulkanProbe, DecodesVendorDriverVersionsAndSkipsBrokenDevices) {
  const uint32_t mesa_24_1_3 = (24u << 22) | (1u << 12) | 3u;
  const json answers = {
      {"library", loaded("libvulkan.so.1")},
      {"instance_version", (1u << 22) | (3u << 12) | 239u},
      {"instance_status", 0},
      {"devices",
       {vk_device("AMD Radeon RX 7900 XTX (RADV NAVI31)", 2, 0x1002, mesa_24_1_3), {{"error", "lost"}},
        json{{"properties", {{"deviceName", ""}}}}, vk_device("SwiftShader Device (LLVM 10.0.0)", 1, 0x1AE0, 1)}}};
  AnswersReplay replay;
  const json rec = replay.run(make_vulkan_probe, "vulkan", answers);
  ASSERT_EQ(rec["devices"].size(), 2u);
  const json& amd = rec["devices"][0];
  EXPECT_EQ(amd["key"], "vulkan:0");
  EXPECT_EQ(amd["vendor"], "AMD");
  EXPECT_EQ(amd["driver_version"], "24.1.3");
  EXPECT_EQ(amd["api_version"], "1.3.250");
  EXPECT_EQ(amd["type"], "discrete_gpu");
  EXPECT_EQ(amd["memory_bytes"], 8ull << 30);
  EXPECT_EQ(amd["features"]["fp16"], true);
  EXPECT_EQ(amd["features"]["int8"], false);
  EXPECT_EQ(amd["features"]["int_dot_product"], false);
  // Schedulable with the precisions the Vulkan backend runs, when this build has it.
  EXPECT_EQ(amd["schedulable"], !vulkan_precisions("x").empty());
  EXPECT_EQ(amd["precisions"].size(), vulkan_precisions("x").size());
  const json& swiftshader = rec["devices"][1];
  EXPECT_EQ(swiftshader["key"], "vulkan:1");
  EXPECT_EQ(swiftshader["software"], true);
  EXPECT_EQ(swiftshader["type"], "cpu");
  EXPECT_EQ(rec["runtimes"]["vulkan"]["devices"], 2);
  EXPECT_EQ(rec["runtimes"]["vulkan"]["skipped_devices"].size(), 2u);
}

TEST(VulkanProbe, ADeviceTheBackendWouldRefuseGetsNoJobsAndSaysWhy) {
  if (vulkan_precisions("x").empty()) GTEST_SKIP() << "this build has no Vulkan backend: nothing is schedulable";
  json small = vk_device("Tiny GPU", 1, 0x13B5, 1);
  small["limits"]["maxComputeWorkGroupInvocations"] = 128;   // Vulkan's guaranteed minimum
  json old = vk_device("Old GPU", 2, 0x10DE, 1);
  old["properties"]["apiVersion"] = (1u << 22) | 0u;        // Vulkan 1.0
  json fine = vk_device("Fine GPU", 2, 0x10DE, 1);
  fine["limits"]["maxComputeWorkGroupInvocations"] = 1024;
  AnswersReplay replay;
  const json rec = replay.run(make_vulkan_probe, "vulkan",
                              {{"library", loaded("libvulkan.so.1")}, {"instance_status", 0},
                               {"devices", {small, old, fine}}});
  ASSERT_EQ(rec["devices"].size(), 3u);
  EXPECT_EQ(rec["devices"][0]["schedulable"], false);
  EXPECT_EQ(rec["devices"][0]["precisions"], json::array());
  EXPECT_NE(rec["devices"][0]["unschedulable_reason"].get<std::string>().find("128 invocations"), std::string::npos);
  EXPECT_EQ(rec["devices"][1]["schedulable"], false);
  EXPECT_NE(rec["devices"][1]["unschedulable_reason"].get<std::string>().find("needs 1.1"), std::string::npos);
  EXPECT_EQ(rec["devices"][2]["schedulable"], true);
  EXPECT_FALSE(rec["devices"][2].contains("unschedulable_reason"));
}

TEST(VulkanProbe, NoDriverIsAnErrorOfAPresentLoader) {
  AnswersReplay replay;
  const json rec = replay.run(make_vulkan_probe, "vulkan",
                              {{"library", loaded("libvulkan.so.1")}, {"instance_status", -9}, {"devices", json::array()}});
  EXPECT_EQ(rec["runtimes"]["vulkan"]["present"], true);
  EXPECT_NE(rec["runtimes"]["vulkan"]["error"].get<std::string>().find("VK_ERROR_INCOMPATIBLE_DRIVER"), std::string::npos);
  EXPECT_EQ(rec["devices"], json::array());
}

TEST(CudaProbe, InitFailureKeepsTheRuntimeAndListsNoDevice) {
  AnswersReplay replay;
  const json rec = replay.run(make_cuda_probe, "cuda",
                              {{"library", loaded("libcuda.so.1")}, {"driver_version", 12020}, {"init_status", 100},
                               {"devices", json::array()}, {"nvml", {{"library", missing()}}}});
  const json& rt = rec["runtimes"]["cuda"];
  EXPECT_EQ(rt["present"], true);
  EXPECT_EQ(rt["driver_api_version"], "12.2");
  EXPECT_EQ(rt["error"], "cuInit: CUDA_ERROR_NO_DEVICE");
  EXPECT_EQ(rt["nvml"], json({{"present", false}}));
  EXPECT_EQ(rec["devices"], json::array());
}

TEST(CudaProbe, FeaturesFollowComputeCapabilityAndBrokenDevicesAreSkipped) {
  const json answers = {
      {"library", loaded("libcuda.so.1")}, {"driver_version", 11080}, {"init_status", 0}, {"devices_status", 0},
      {"devices",
       {{{"name", "Tesla P4"}, {"total_mem", 8ull << 30}, {"cc_major", 6}, {"cc_minor", 1}},
        {{"error", "device 1: CUDA_ERROR_INVALID_DEVICE"}},
        {{"name", "Tesla K80"}, {"total_mem", 12ull << 30}, {"cc_major", 3}, {"cc_minor", 7}}}}};
  AnswersReplay replay;
  const json rec = replay.run(make_cuda_probe, "cuda", answers);
  ASSERT_EQ(rec["devices"].size(), 2u);
  EXPECT_EQ(rec["devices"][0]["driver"], "CUDA 11.8");  // no NVML: the driver API's level
  EXPECT_EQ(rec["devices"][0]["features"],
            json({{"fp16", true}, {"bf16", false}, {"int_dot_product", true}, {"tensor_cores", false}}));
  EXPECT_EQ(rec["devices"][1]["key"], "cuda:1");
  EXPECT_EQ(rec["devices"][1]["isa_level"], "sm_37");
  EXPECT_EQ(rec["devices"][1]["features"]["fp16"], false);
  EXPECT_EQ(rec["runtimes"]["cuda"]["skipped_devices"].size(), 1u);
}

TEST(RuntimePresence, MissingLibrariesArePresentFalseAndVersionsAreDecoded) {
  AnswersReplay replay;
  EXPECT_EQ(replay.run(make_rocm_probe, "rocm", {{"library", missing()}, {"hsa", {{"library", missing()}}}})["runtimes"]["rocm"],
            json({{"present", false}}));
  EXPECT_EQ(replay.run(make_openvino_probe, "openvino", {{"library", missing()}})["runtimes"]["openvino"],
            json({{"present", false}}));
  EXPECT_EQ(replay.run(make_qnn_probe, "qnn", {{"backends", {{"htp", {{"library", missing()}}}}}})["runtimes"]["qnn"],
            json({{"present", false}}));

  const json rocm = replay.run(make_rocm_probe, "rocm",
                               {{"library", loaded("/opt/rocm/lib/libamdhip64.so")},
                                {"hsa", {{"library", loaded("/opt/rocm/lib/libhsa-runtime64.so.1")}}},
                                {"runtime_version_status", 0}, {"runtime_version", 60241134},
                                {"device_count_status", 0}, {"device_count", 2}})["runtimes"]["rocm"];
  EXPECT_EQ(rocm["present"], true);
  EXPECT_EQ(rocm["hip_runtime_version"], "6.2.41134");
  EXPECT_EQ(rocm["devices"], 2);

  const json ov = replay.run(make_openvino_probe, "openvino",
                             {{"library", loaded("libopenvino_c.so")}, {"c_api", true}, {"version_status", 0},
                              {"build_number", "2024.4.0-16579-c3152d32c9c-releases/2024/4"},
                              {"description", "OpenVINO Runtime"}})["runtimes"]["openvino"];
  EXPECT_EQ(ov["version"], "2024.4.0-16579-c3152d32c9c-releases/2024/4");
  EXPECT_FALSE(ov.contains("error"));
}

TEST(RuntimeProbes, ReplayWithoutTheirAnswersFailsRatherThanProbingThisMachine) {
  // A recording holding only "host": every runtime probe must fail, not fall back to dlopen.
  std::mt19937_64 rng(std::random_device{}());
  const auto dir = std::filesystem::temp_directory_path() / ("am-answers-empty-" + std::to_string(rng()));
  auto recorder = Recorder::create(dir);
  ASSERT_TRUE(recorder.ok());
  (*recorder)->add_answers("host", {{"hostname", "h"}, {"release", "1"}});
  ASSERT_TRUE((*recorder)->finish("").ok());
  auto recording = Recording::open(dir);
  ASSERT_TRUE(recording.ok());
  const ProbeOptions options = replay_options(*recording);
  using Make = std::unique_ptr<Probe> (*)(const ProbeOptions&);
  for (Make make : std::initializer_list<Make>{make_opencl_probe, make_vulkan_probe, make_cuda_probe, make_rocm_probe,
                                               make_openvino_probe, make_qnn_probe, make_cpu_isa_probe,
                                               make_cpu_device_probe}) {
    json record = json::object();
    EXPECT_EQ(make(options)->run(record).code(), StatusCode::kNotFound);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace am::worker
