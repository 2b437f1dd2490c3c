// The Vulkan probe on this machine: ops/setup.sh installs lavapipe (mesa-vulkan-drivers), which
// must show up as a software Vulkan device that advertises the precisions the Vulkan backend
// runs, and is schedulable exactly when the build has that backend. Label: vulkan.
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "worker/probe.h"

namespace am::worker {
namespace {

using nlohmann::json;

bool lavapipe_installed() {
  std::error_code ec;
  for (const char* dir : {"/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"}) {
    if (!std::filesystem::is_directory(dir, ec)) continue;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      if (e.path().filename().string().rfind("lvp_icd", 0) == 0) return true;
    }
  }
  return false;
}

TEST(LiveVulkanProbe, FindsLavapipeAsASoftwareDevice) {
  if (!lavapipe_installed()) GTEST_SKIP() << "lavapipe's ICD (lvp_icd.*.json) is not installed";
  json record = {{"cpu", {{"isa_level", "x86-64-v3"}}}, {"devices", json::array()}};
  const Status st = make_vulkan_probe(ProbeOptions{})->run(record);
  ASSERT_TRUE(st.ok()) << st.to_string();
  const json& rt = record["runtimes"]["vulkan"];
  ASSERT_EQ(rt["present"], true) << rt.dump();
  bool found = false;
  for (const auto& d : record["devices"]) {
    if (d["name"].get<std::string>().find("llvmpipe") == std::string::npos) continue;
    found = true;
    json expected = json::array();
    for (jobs::Precision p : vulkan_precisions(d["name"].get<std::string>())) expected.push_back(jobs::to_string(p));
    EXPECT_EQ(d["software"], true) << d.dump();
    EXPECT_EQ(d["type"], "cpu");
    EXPECT_EQ(d["schedulable"], !expected.empty());
    EXPECT_EQ(d["precisions"], expected);
#if defined(AM_HAVE_VULKAN)
    for (const char* p : {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q3_k", "q2_k", "mixed"}) {
      EXPECT_NE(std::find(expected.begin(), expected.end(), p), expected.end()) << p;
    }
#endif
    EXPECT_EQ(d["vendor"], "Mesa");
    EXPECT_GT(d["features"]["subgroup_size"].get<uint64_t>(), 0u);
    EXPECT_GT(d["features"]["max_storage_buffer_range"].get<uint64_t>(), 0u);
    EXPECT_GT(d["memory_bytes"].get<uint64_t>(), 0u);
  }
  EXPECT_TRUE(found) << record.dump(2);
}

}  // namespace
}  // namespace am::worker
