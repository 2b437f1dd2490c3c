#include <cmath>
#include <cstdint>

#include <gtest/gtest.h>

#include "common/hash.h"
#include "worker/capability.h"

namespace am::worker {
namespace {

using nlohmann::json;

constexpr uint64_t kGiB = uint64_t{1} << 30;

json device(const std::string& name, uint64_t memory_bytes) {
  return {{"key", "cpu:0"}, {"backend", "cpu"}, {"name", name}, {"vendor", "GenuineIntel"},
          {"memory_bytes", memory_bytes}, {"compute_units", 8}};
}

const json kCpu = {{"isa_level", "x86-64-v3"}, {"model", "ignored"}};

TEST(HardwareClass, IsTheFnvHashOfBackendNameDriverIsaAndGiB) {
  const std::string id = hardware_class_id(device("Xeon Gold 6338", 64 * kGiB), kCpu);
  EXPECT_EQ(id, "cpu-" + hex64(fnv1a64("cpu|Xeon Gold 6338||x86-64-v3|64")));
  // Same inputs, same answer: a pure function.
  EXPECT_EQ(id, hardware_class_id(device("Xeon Gold 6338", 64 * kGiB), kCpu));
}

TEST(HardwareClass, ChangesWithNameMemoryDriverAndIsa) {
  const std::string base = hardware_class_id(device("CPU A", 16 * kGiB), kCpu);
  EXPECT_NE(base, hardware_class_id(device("CPU B", 16 * kGiB), kCpu));
  EXPECT_NE(base, hardware_class_id(device("CPU A", 32 * kGiB), kCpu));
  json with_driver = device("CPU A", 16 * kGiB);
  with_driver["driver"] = "1.2";
  EXPECT_NE(base, hardware_class_id(with_driver, kCpu));
  EXPECT_NE(base, hardware_class_id(device("CPU A", 16 * kGiB), {{"isa_level", "x86-64-v4"}}));
}

TEST(HardwareClass, IgnoresSmallMemoryDifferencesAndUnrelatedFields) {
  const std::string base = hardware_class_id(device("CPU A", 16 * kGiB), kCpu);
  // Identical boxes differ by a few MiB of kernel reservations.
  EXPECT_EQ(base, hardware_class_id(device("CPU A", 16 * kGiB - 37 * (1u << 20)), kCpu));
  EXPECT_EQ(base, hardware_class_id(device("CPU A", 16 * kGiB + 5 * (1u << 20)), kCpu));
  json other = device("CPU A", 16 * kGiB);
  other["compute_units"] = 4;
  other["hostname"] = "box-2";
  EXPECT_EQ(base, hardware_class_id(other, kCpu));
}

TEST(HardwareClass, PrefixIsTheBackendAndSurvivesMalformedInput) {
  json gpu = device("Some GPU", 8 * kGiB);
  gpu["backend"] = "opencl";
  EXPECT_EQ(hardware_class_id(gpu, kCpu).rfind("opencl-", 0), 0u);
  EXPECT_EQ(hardware_class_id(json::array(), json(3)).rfind("device-", 0), 0u);
  json odd = {{"backend", "cpu"}, {"name", 7}, {"memory_bytes", "lots"}};
  EXPECT_EQ(hardware_class_id(odd, kCpu), "cpu-" + hex64(fnv1a64("cpu|||x86-64-v3|0")));
  // Found by the capability_record fuzzer: 1.7e50 bytes as a double once became an undefined
  // conversion to uint64_t. Memory no integer can hold, negative or NaN counts as "none".
  for (const double bytes : {1.71799e+50, -5.0, std::nan(""), 1.8446744073709552e19 * 1024.0 * 1024.0 * 1024.0}) {
    odd["memory_bytes"] = bytes;
    EXPECT_EQ(hardware_class_id(odd, kCpu), "cpu-" + hex64(fnv1a64("cpu|||x86-64-v3|0"))) << bytes;
  }
  odd["memory_bytes"] = 2.5 * static_cast<double>(kGiB);
  EXPECT_EQ(hardware_class_id(odd, kCpu), "cpu-" + hex64(fnv1a64("cpu|||x86-64-v3|3")));
}

}  // namespace
}  // namespace am::worker

namespace am::worker {
namespace {

using nlohmann::json;

TEST(HardwareClass, SoftwareDevicesTakeTheCpuIsaAndGpusTheirOwn) {
  const json cpu = {{"isa_level", "x86-64-v4"}};
  const json pocl = {{"backend", "opencl"}, {"name", "pthread-cpu"}, {"driver", "3.1"}, {"software", true},
                     {"memory_bytes", uint64_t{8} << 30}};
  EXPECT_EQ(hardware_class_id(pocl, cpu), "opencl-" + hex64(fnv1a64("opencl|pthread-cpu|3.1|x86-64-v4|8")));
  json gpu = {{"backend", "opencl"}, {"name", "GPU"}, {"driver", "550"}, {"software", false},
              {"memory_bytes", uint64_t{24} << 30}};
  // A GPU without an ISA level of its own does not inherit the host's: same class in any box.
  EXPECT_EQ(hardware_class_id(gpu, cpu), "opencl-" + hex64(fnv1a64("opencl|GPU|550||24")));
  EXPECT_EQ(hardware_class_id(gpu, cpu), hardware_class_id(gpu, {{"isa_level", "armv8.6-a"}}));
  gpu["isa_level"] = "sm_89";
  EXPECT_EQ(hardware_class_id(gpu, cpu), "opencl-" + hex64(fnv1a64("opencl|GPU|550|sm_89|24")));
}

}  // namespace
}  // namespace am::worker
