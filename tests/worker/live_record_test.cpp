// Recording this machine and replaying the recording gives the same capability record; runtimes
// this machine lacks are reported as {"present": false}, never as failures.
#include <unistd.h>

#include <random>

#include <gtest/gtest.h>

#include "worker/probe.h"
#include "worker/recording.h"

namespace am::worker {
namespace {

using nlohmann::json;

TEST(LiveRecording, ReplayGivesTheRecordThatWasRecorded) {
  std::mt19937_64 rng(std::random_device{}());
  const auto dir = std::filesystem::temp_directory_path() /
                   ("am-live-recording-" + std::to_string(getpid()) + "-" + std::to_string(rng()));
  auto recorder = Recorder::create(dir);
  ASSERT_TRUE(recorder.ok()) << recorder.status().to_string();
  ProbeOptions live;
  live.recorder = *recorder;
  const json recorded = assemble_capabilities(default_probes(live));
  ASSERT_TRUE((*recorder)->finish("live test").ok());

  auto recording = Recording::open(dir);
  ASSERT_TRUE(recording.ok()) << recording.status().to_string();
  const json replayed = assemble_capabilities(default_probes(replay_options(*recording)));
  EXPECT_EQ(replayed, recorded);
  for (const char* part : {"host", "cpu", "topology", "runtimes"}) EXPECT_TRUE(replayed.contains(part)) << part;
  for (const char* source : {"host", "cpu", "sysconf", "opencl", "vulkan", "cuda", "rocm", "openvino", "qnn"}) {
    EXPECT_TRUE((*recording)->answers(source).ok()) << source;
  }
  EXPECT_FALSE((*recording)->hwloc_xml().empty());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST(LiveRuntimes, EveryRuntimeIsReportedAndAbsentOnesAreJustPresentFalse) {
  const json record = assemble_capabilities(default_probes(ProbeOptions{}));
  const json& rt = record.at("runtimes");
  for (const char* name : {"opencl", "vulkan", "cuda", "rocm", "openvino", "qnn"}) {
    ASSERT_TRUE(rt.contains(name)) << name;
    ASSERT_TRUE(rt[name]["present"].is_boolean()) << name;
    if (!rt[name]["present"].get<bool>()) {
      EXPECT_EQ(rt[name], json({{"present", false}})) << name;
    }
  }
  for (const auto& d : record["devices"]) {
    if (!d["schedulable"].get<bool>()) {
      EXPECT_EQ(d["precisions"], json::array()) << d.dump();
    }
  }
}

}  // namespace
}  // namespace am::worker
