// The Vulkan probe on this machine: ops/setup.sh installs lavapipe (mesa-vulkan-drivers), which
// must show up as a software Vulkan device that is not schedulable. Label: vulkan.
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
    EXPECT_EQ(d["software"], true) << d.dump();
    EXPECT_EQ(d["type"], "cpu");
    EXPECT_EQ(d["schedulable"], false);
    EXPECT_EQ(d["precisions"], json::array());
    EXPECT_EQ(d["vendor"], "Mesa");
    EXPECT_GT(d["features"]["subgroup_size"].get<uint64_t>(), 0u);
    EXPECT_GT(d["features"]["max_storage_buffer_range"].get<uint64_t>(), 0u);
    EXPECT_GT(d["memory_bytes"].get<uint64_t>(), 0u);
  }
  EXPECT_TRUE(found) << record.dump(2);
}

}  // namespace
}  // namespace am::worker
