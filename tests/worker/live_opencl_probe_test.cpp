// The OpenCL probe on this machine: ops/setup.sh installs PoCL, which must show up as a software
// (CPU) OpenCL device that the OpenCL backend may schedule on. Label: opencl.
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "tests/worker/advertised_precisions.h"
#include "worker/probe.h"

namespace am::worker {
namespace {

using nlohmann::json;

// ocl-icd reads its vendor files from OCL_ICD_VENDORS when set (a GPU box pointing the loader
// at its driver alone), else from /etc/OpenCL/vendors: PoCL counts only where the loader looks.
bool pocl_installed() {
  std::error_code ec;
  const char* vendors = std::getenv("OCL_ICD_VENDORS");
  const std::filesystem::path dir = vendors != nullptr && *vendors != '\0' ? vendors : "/etc/OpenCL/vendors";
  return std::filesystem::exists(dir / "pocl.icd", ec);
}

TEST(LiveOpenClProbe, FindsPoclAsASoftwareDevice) {
  if (!pocl_installed()) GTEST_SKIP() << "PoCL's ICD (pocl.icd) is not where ocl-icd looks";
  // PoCL keeps its kernel cache here; the probe compiles nothing, but the runtime may look.
  const auto cache = std::filesystem::temp_directory_path() / "am-pocl-cache";
  std::filesystem::create_directories(cache);
  setenv("POCL_CACHE_DIR", cache.c_str(), /*overwrite=*/0);

  json record = {{"cpu", {{"isa_level", "x86-64-v3"}}}, {"devices", json::array()}};
  const Status st = make_opencl_probe(ProbeOptions{})->run(record);
  ASSERT_TRUE(st.ok()) << st.to_string();
  const json& rt = record["runtimes"]["opencl"];
  ASSERT_EQ(rt["present"], true) << rt.dump();
  bool found = false;
  for (const auto& d : record["devices"]) {
    if (d["platform"] != "Portable Computing Language") continue;
    found = true;
    EXPECT_EQ(d["software"], true) << d.dump();
    EXPECT_EQ(d["type"], "cpu");
    EXPECT_EQ(d["schedulable"], true);
    EXPECT_GT(d["memory_bytes"].get<uint64_t>(), 0u);
    EXPECT_GT(d["compute_units"].get<uint64_t>(), 0u);
    EXPECT_EQ(d["key"].get<std::string>().rfind("opencl:", 0), 0u);
    // f16 is advertised exactly when the device has cl_khr_fp16.
    const bool has_f16 = std::find(d["precisions"].begin(), d["precisions"].end(), "f16") != d["precisions"].end();
    EXPECT_EQ(has_f16, d["features"]["fp16"].get<bool>());
  }
  EXPECT_TRUE(found) << record.dump(2);
}

using namespace precision_check;

TEST(AdvertisedPrecisionsOpenCl, EveryOpenClDeviceListsExactlyWhatTheOpenClBackendRuns) {
  std::error_code ec;
  if (!std::filesystem::exists("/etc/OpenCL/vendors/pocl.icd", ec)) {
    GTEST_SKIP() << "PoCL's ICD (pocl.icd) is not where ocl-icd looks";
  }
  const auto cache = std::filesystem::temp_directory_path() / "am-pocl-cache";
  std::filesystem::create_directories(cache);
  setenv("POCL_CACHE_DIR", cache.c_str(), /*overwrite=*/0);

  json record = {{"cpu", {{"isa_level", "x86-64-v3"}}}, {"devices", json::array()}};
  ASSERT_TRUE(make_opencl_probe(ProbeOptions{})->run(record).ok());
  Result<std::vector<kernels::opencl::OpenClDevice>> devices = kernels::opencl::list_opencl_devices();
  ASSERT_TRUE(devices.ok()) << devices.status().to_string();
  int checked = 0;
  for (const auto& d : record["devices"]) {
    if (d.value("backend", "") != "opencl") continue;
    // The probe numbers devices over all platforms in ICD order, as list_opencl_devices() does.
    const int index = std::stoi(d.at("key").get<std::string>().substr(std::string("opencl:").size()));
    ASSERT_LT(index, static_cast<int>(devices->size()));
    Result<std::unique_ptr<kernels::OpenClBackend>> backend =
        kernels::OpenClBackend::create((*devices)[static_cast<std::size_t>(index)]);
    ASSERT_TRUE(backend.ok()) << backend.status().to_string();
    expect_listing_matches_backend(**backend, listed_precisions(d), d.at("key").get<std::string>());
    // What issue 9 found drifted: bf16 and q4_1 run on OpenCL, so they must be listed.
    const std::vector<Precision> listed = listed_precisions(d);
    EXPECT_NE(std::find(listed.begin(), listed.end(), Precision::kBF16), listed.end());
    EXPECT_NE(std::find(listed.begin(), listed.end(), Precision::kQ4_1), listed.end());
    ++checked;
  }
  EXPECT_GT(checked, 0) << record.dump(2);
}

}  // namespace
}  // namespace am::worker
