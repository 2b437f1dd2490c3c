// The recorded machines of tests/data/machines replayed through the default probes: each must
// give the capability record its hardware implies, without consulting the machine running the
// test (the laptop is aarch64, the workstation has a GPU; this machine has neither).
#include <cstdint>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "tests/worker/machine_replay.h"
#include "worker/capability.h"
#include "worker/cpu_device.h"
#include "worker/probe_opencl.h"

namespace am::worker {
namespace {

using nlohmann::json;
using testing::count_backend;
using testing::device_at;
using testing::replay_machine;

json cpu_precisions() {
  json out = json::array();
  for (am::jobs::Precision p : am::worker::cpu_precisions()) out.push_back(am::jobs::to_string(p));
  return out;
}

// What the Vulkan backend of this build runs (empty without one): probe and backend agree.
json vulkan_precisions() {
  json out = json::array();
  for (am::jobs::Precision p : am::worker::vulkan_precisions("recorded")) out.push_back(am::jobs::to_string(p));
  return out;
}

json opencl_precisions(bool fp16) {
  json out = json::array();
  for (am::jobs::Precision p : am::worker::opencl_precisions("recorded", fp16)) {
    out.push_back(std::string(am::jobs::to_string(p)));
  }
  return out;
}

std::string expected_class(const std::string& fingerprint, const std::string& backend) {
  return backend + "-" + hex64(fnv1a64(fingerprint));
}

const json kAbsent = {{"present", false}};

TEST(RecordedMachine, DevVmShowsCpuPoclAndLavapipeAsSoftware) {
  const json rec = replay_machine("dev-vm-epyc-zen4");
  EXPECT_EQ(rec.at("schema"), 2);
  EXPECT_EQ(rec["host"]["hostname"], "vm");
  EXPECT_EQ(rec["host"]["os"], "Debian GNU/Linux 12 (bookworm)");
  const json& cpu = rec.at("cpu");
  EXPECT_EQ(cpu["vendor"], "AuthenticAMD");
  EXPECT_EQ(cpu["model"], "AMD EPYC");
  EXPECT_EQ(cpu["isa_level"], "x86-64-v4");
  for (const char* f : {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"}) {
    EXPECT_EQ(cpu["isa"][f], true) << f;
  }
  for (const char* f : {"amx_tile", "amx_int8", "avx512_fp16"}) EXPECT_EQ(cpu["isa"][f], false) << f;

  const json& topo = rec.at("topology");
  EXPECT_EQ(topo["cores"], 2);
  EXPECT_EQ(topo["memory_bytes_os"], 24684100ull * 1024);
  EXPECT_EQ(topo["memory_limit_source"], "os");
  // The VM's hwloc figure is far below MemTotal (lazily backed memory); the OS figure limits jobs.
  EXPECT_LT(topo["memory_bytes_hwloc"].get<uint64_t>(), topo["memory_bytes_os"].get<uint64_t>());

  ASSERT_EQ(rec["devices"].size(), 3u) << rec["devices"].dump();
  const json cpu0 = device_at(rec, "cpu:0");
  EXPECT_EQ(cpu0["software"], false);
  EXPECT_EQ(cpu0["schedulable"], true);
  EXPECT_EQ(cpu0["precisions"], cpu_precisions());
  EXPECT_EQ(cpu0["memory_bytes"], 24684100ull * 1024);

  const json cl = device_at(rec, "opencl:0");
  EXPECT_EQ(cl["name"], "pthread-skylake-avx512-AMD EPYC");
  EXPECT_EQ(cl["vendor"], "AuthenticAMD");
  EXPECT_EQ(cl["vendor_id"], "0x8086");  // PoCL's id, which is why vendors are not keyed on it
  EXPECT_EQ(cl["type"], "cpu");
  EXPECT_EQ(cl["software"], true);
  EXPECT_EQ(cl["schedulable"], true);
  EXPECT_EQ(cl["driver"], "3.1+debian");
  EXPECT_EQ(cl["opencl_c_version"], "OpenCL C 1.2 PoCL");
  EXPECT_EQ(cl["features"], json({{"fp16", false}, {"fp64", true}, {"int_dot_product", false}, {"subgroups", false}}));
  EXPECT_EQ(cl["precisions"], opencl_precisions(false));
  EXPECT_EQ(cl["compute_units"], 2);
  EXPECT_EQ(cl["clock_mhz"], 2596);
  // A software device's class carries the host CPU's ISA level and the host's memory (24684100 kB
  // = 23.5 GiB), not PoCL's share of it, which moves with free memory.
  EXPECT_EQ(cl["hardware_class"], expected_class("opencl|pthread-skylake-avx512-AMD EPYC|3.1+debian|x86-64-v4|24", "opencl"));

  const json vk = device_at(rec, "vulkan:0");
  EXPECT_EQ(vk["name"], "llvmpipe (LLVM 15.0.6, 256 bits)");
  EXPECT_EQ(vk["type"], "cpu");
  EXPECT_EQ(vk["software"], true);
  EXPECT_EQ(vk["schedulable"], !vulkan_precisions().empty());
  EXPECT_EQ(vk["precisions"], vulkan_precisions());
  EXPECT_EQ(vk["vendor"], "Mesa");
  EXPECT_EQ(vk["driver"], "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)");
  EXPECT_EQ(vk["api_version"], "1.3.230");
  EXPECT_EQ(vk["features"], json({{"fp16", true}, {"int8", true}, {"int_dot_product", true},
                                   {"subgroup_size", 8}, {"max_storage_buffer_range", 134217728}}));

  const json& rt = rec.at("runtimes");
  EXPECT_EQ(rt["opencl"]["present"], true);
  EXPECT_EQ(rt["opencl"]["platforms"][0]["name"], "Portable Computing Language");
  EXPECT_EQ(rt["vulkan"]["present"], true);
  EXPECT_EQ(rt["vulkan"]["instance_version"], "1.3.239");
  for (const char* absent : {"cuda", "rocm", "openvino", "qnn"}) EXPECT_EQ(rt[absent], kAbsent) << absent;
}

TEST(RecordedMachine, WorkstationListsTheRtx4090ThroughOpenClVulkanAndCuda) {
  const json rec = replay_machine("rtx4090-workstation");
  EXPECT_EQ(rec["host"]["hostname"], "ws-4090");
  EXPECT_EQ(rec["cpu"]["model"], "AMD Ryzen 9 7950X 16-Core Processor");
  EXPECT_EQ(rec["cpu"]["isa_level"], "x86-64-v4");
  EXPECT_EQ(rec["topology"]["cores"], 16);
  EXPECT_EQ(rec["topology"]["pus"], 32);
  EXPECT_EQ(count_backend(rec, "cpu"), 1);
  EXPECT_EQ(count_backend(rec, "opencl"), 2);
  EXPECT_EQ(count_backend(rec, "vulkan"), 2);
  EXPECT_EQ(count_backend(rec, "cuda"), 1);
  constexpr uint64_t kVram = 25393692672ull;

  const json gpu = device_at(rec, "opencl:0");
  EXPECT_EQ(gpu["name"], "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(gpu["type"], "gpu");
  EXPECT_EQ(gpu["software"], false);
  EXPECT_EQ(gpu["schedulable"], true);
  EXPECT_EQ(gpu["memory_bytes"], kVram);
  EXPECT_EQ(gpu["max_alloc_bytes"], kVram / 4);
  EXPECT_EQ(gpu["compute_capability"], "8.9");
  EXPECT_EQ(gpu["features"]["fp16"], true);
  EXPECT_EQ(gpu["precisions"], opencl_precisions(true));
  // A GPU's class uses its own compute capability, never the host CPU's ISA level.
  EXPECT_EQ(gpu["hardware_class"], expected_class("opencl|NVIDIA GeForce RTX 4090|550.107.02|sm_89|24", "opencl"));

  const json pocl = device_at(rec, "opencl:1");
  EXPECT_EQ(pocl["platform"], "Portable Computing Language");
  EXPECT_EQ(pocl["software"], true);
  EXPECT_EQ(pocl["features"]["fp16"], false);
  EXPECT_EQ(pocl["features"]["subgroups"], true);
  EXPECT_EQ(pocl["precisions"], opencl_precisions(false));

  const json vk = device_at(rec, "vulkan:0");
  EXPECT_EQ(vk["type"], "discrete_gpu");
  EXPECT_EQ(vk["software"], false);
  EXPECT_EQ(vk["schedulable"], !vulkan_precisions().empty());
  EXPECT_EQ(vk["precisions"], vulkan_precisions());
  EXPECT_EQ(vk["vendor"], "NVIDIA");
  EXPECT_EQ(vk["driver"], "NVIDIA 550.107.02");
  EXPECT_EQ(vk["driver_version"], "550.107.02");
  // The largest device-local heap, not the sum with the BAR window or host memory.
  EXPECT_EQ(vk["memory_bytes"], kVram);
  EXPECT_EQ(vk["features"]["subgroup_size"], 32);
  EXPECT_EQ(device_at(rec, "vulkan:1")["software"], true);
  // Each device names the value of its backend's device variable that opens it (the loader's
  // order): a job leased for PoCL or lavapipe opens that, not the first GPU.
  EXPECT_EQ(gpu["selector"], "0:0");
  EXPECT_EQ(pocl["selector"], "1:0");
  EXPECT_EQ(vk["selector"], "0");
  EXPECT_EQ(device_at(rec, "vulkan:1")["selector"], "1");

  const json cuda = device_at(rec, "cuda:0");
  EXPECT_EQ(cuda["name"], "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(cuda["driver"], "550.107.02");
  EXPECT_EQ(cuda["compute_capability"], "8.9");
  EXPECT_EQ(cuda["compute_units"], 128);
  EXPECT_EQ(cuda["clock_mhz"], 2520);
  EXPECT_EQ(cuda["memory_bytes"], kVram);
  EXPECT_EQ(cuda["schedulable"], false);
  EXPECT_EQ(cuda["precisions"], json::array());
  EXPECT_EQ(cuda["features"], json({{"fp16", true}, {"bf16", true}, {"int_dot_product", true}, {"tensor_cores", true}}));
  EXPECT_EQ(cuda["hardware_class"], expected_class("cuda|NVIDIA GeForce RTX 4090|550.107.02|sm_89|24", "cuda"));

  const json& rt = rec["runtimes"];
  EXPECT_EQ(rt["cuda"]["driver_api_version"], "12.4");
  EXPECT_EQ(rt["cuda"]["nvml"]["driver_version"], "550.107.02");
  EXPECT_EQ(rt["opencl"]["platforms"].size(), 2u);
  for (const char* absent : {"rocm", "openvino", "qnn"}) EXPECT_EQ(rt[absent], kAbsent) << absent;
}

TEST(RecordedMachine, ArmLaptopReplaysOnAnyHostWithItsOwnIsa) {
  const json rec = replay_machine("snapdragon-x-elite-laptop");
  const json& cpu = rec.at("cpu");
  EXPECT_EQ(cpu["arch"], "aarch64");
  EXPECT_EQ(cpu["vendor"], "Qualcomm");
  EXPECT_EQ(cpu["model"], "Qualcomm Oryon");
  EXPECT_EQ(cpu["isa"], json({{"fp", true}, {"asimd", true}, {"neon", true}, {"fp16", true}, {"dotprod", true},
                              {"sve", false}, {"sve2", false}, {"i8mm", true}, {"bf16", true}}));
  EXPECT_EQ(cpu["isa_level"], "armv8.6-a");
  EXPECT_EQ(rec["topology"]["cores"], 12);
  EXPECT_EQ(rec["topology"]["caches"].size(), 3u);

  const json cpu0 = device_at(rec, "cpu:0");
  EXPECT_EQ(cpu0["memory_bytes"], 32441452ull * 1024);
  EXPECT_EQ(cpu0["features"]["int_dot_product"], true);
  EXPECT_EQ(cpu0["features"]["int8_matmul"], true);
  EXPECT_EQ(cpu0["hardware_class"],
            expected_class("cpu|Qualcomm Oryon||armv8.6-a|" + std::to_string((32441452ull * 1024 + (1ull << 29)) >> 30), "cpu"));

  // The ICD loader is installed but finds no platform: present, with no devices.
  EXPECT_EQ(count_backend(rec, "opencl"), 0);
  EXPECT_EQ(rec["runtimes"]["opencl"]["present"], true);
  EXPECT_EQ(rec["runtimes"]["opencl"]["platforms"], json::array());
  EXPECT_FALSE(rec["runtimes"]["opencl"].contains("error"));

  const json vk = device_at(rec, "vulkan:0");
  EXPECT_EQ(vk["software"], true);
  EXPECT_EQ(vk["features"]["subgroup_size"], 4);

  EXPECT_EQ(rec["runtimes"]["qnn"]["present"], true);
  EXPECT_EQ(rec["runtimes"]["qnn"]["backends"].size(), 3u);
  EXPECT_FALSE(rec["runtimes"]["qnn"]["backends"].contains("gpu"));
  EXPECT_EQ(rec["runtimes"]["cuda"], kAbsent);
}

// Recorded on a lent cloud GPU machine (Firecracker VM, Ubuntu 24.04) with the NVIDIA driver's
// OpenCL ICD and CUDA but no Vulkan ICD loader support: a real recording, not a constructed one.
TEST(RecordedMachine, CloudH100VmListsTheGpuThroughOpenClWithoutFp16AndCudaUnschedulable) {
  const json rec = replay_machine("h100-cloud-vm");
  EXPECT_EQ(rec["host"]["os"], "Ubuntu 24.04.3 LTS");
  EXPECT_EQ(rec["cpu"]["vendor"], "GenuineIntel");
  EXPECT_EQ(rec["cpu"]["isa_level"], "x86-64-v4");
  EXPECT_EQ(rec["topology"]["cores"], 16);
  EXPECT_EQ(count_backend(rec, "cpu"), 1);
  EXPECT_EQ(count_backend(rec, "opencl"), 1);
  EXPECT_EQ(count_backend(rec, "cuda"), 1);
  EXPECT_EQ(count_backend(rec, "vulkan"), 0);
  constexpr uint64_t kHbm = 85017493504ull;

  const json gpu = device_at(rec, "opencl:0");
  EXPECT_EQ(gpu["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu["type"], "gpu");
  EXPECT_EQ(gpu["software"], false);
  EXPECT_EQ(gpu["schedulable"], true);
  EXPECT_EQ(gpu["memory_bytes"], kHbm);
  EXPECT_EQ(gpu["compute_capability"], "9.0");
  EXPECT_EQ(gpu["compute_units"], 132);
  // NVIDIA's OpenCL has no cl_khr_fp16: f16 is not offered there, bf16 (stored, widened) is.
  EXPECT_EQ(gpu["features"]["fp16"], false);
  EXPECT_EQ(gpu["precisions"], opencl_precisions(false));
  EXPECT_EQ(gpu["hardware_class"], expected_class("opencl|NVIDIA H100 80GB HBM3|580.159.04|sm_90|79", "opencl"));

  const json cuda = device_at(rec, "cuda:0");
  EXPECT_EQ(cuda["driver"], "580.159.04");
  EXPECT_EQ(cuda["schedulable"], false);
  EXPECT_EQ(cuda["features"]["tensor_cores"], true);

  const json& rt = rec["runtimes"];
  EXPECT_EQ(rt["cuda"]["driver_api_version"], "13.0");
  // The loader is there, the driver's ICD could not be loaded: present, no devices, the reason kept.
  EXPECT_EQ(rt["vulkan"]["present"], true);
  EXPECT_EQ(rt["vulkan"]["devices"], 0);
  EXPECT_NE(rt["vulkan"]["error"].get<std::string>().find("VK_ERROR_INCOMPATIBLE_DRIVER"), std::string::npos);
  // ROCm libraries installed on an NVIDIA box: present with zero devices and hipGetDeviceCount's error.
  EXPECT_EQ(rt["rocm"]["present"], true);
  EXPECT_EQ(rt["rocm"]["devices"], 0);
  EXPECT_TRUE(rt["rocm"].contains("error"));
}

TEST(RecordedMachine, ReplayIsDeterministic) {
  for (const char* name : {"dev-vm-epyc-zen4", "rtx4090-workstation", "snapdragon-x-elite-laptop", "h100-cloud-vm"}) {
    EXPECT_EQ(replay_machine(name), replay_machine(name)) << name;
  }
}

TEST(RecordedMachine, SoftwareDevicesAreNeverGpus) {
  for (const char* name : {"dev-vm-epyc-zen4", "rtx4090-workstation", "snapdragon-x-elite-laptop", "h100-cloud-vm"}) {
    const json rec = replay_machine(name);
    for (const auto& d : rec["devices"]) {
      if (d["software"].get<bool>()) {
        const std::string type = d["type"];
        EXPECT_EQ(type.find("gpu"), std::string::npos) << name << " " << d.dump();
      }
      EXPECT_TRUE(d["hardware_class"].get<std::string>().rfind(d["backend"].get<std::string>() + "-", 0) == 0);
    }
  }
}

}  // namespace
}  // namespace am::worker
