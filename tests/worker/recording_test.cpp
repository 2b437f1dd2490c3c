// Recorder writes what Recording reads back; malformed recordings are refused with the file named.
#include <unistd.h>

#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include "worker/probe.h"
#include "worker/probe_files.h"
#include "worker/recording.h"

namespace am::worker {
namespace {

using nlohmann::json;

class ScratchDir {
 public:
  ScratchDir() {
    std::mt19937_64 rng(std::random_device{}());
    path_ = std::filesystem::temp_directory_path() /
            ("am-recording-" + std::to_string(getpid()) + "-" + std::to_string(rng()));
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

void write(const std::filesystem::path& file, const std::string& text) {
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
}

TEST(Recording, RoundTripsFilesAnswersAndTopology) {
  ScratchDir dir;
  auto recorder = Recorder::create(dir.path());
  ASSERT_TRUE(recorder.ok()) << recorder.status().to_string();
  std::mt19937 rng(7);
  const json answers = {{"value", static_cast<uint64_t>(rng())}, {"list", {rng() % 1000, rng() % 1000}}};
  (*recorder)->add_answers("opencl", answers);
  (*recorder)->add_file("/proc/meminfo", "MemTotal:  1234 kB\n");
  (*recorder)->add_hwloc_xml("<topology/>");
  ASSERT_TRUE((*recorder)->finish("a test machine").ok());

  auto recording = Recording::open(dir.path());
  ASSERT_TRUE(recording.ok()) << recording.status().to_string();
  EXPECT_EQ((*recording)->manifest()["description"], "a test machine");
  EXPECT_EQ((*recording)->manifest()["files"], json::array({"/proc/meminfo"}));
  auto back = (*recording)->answers("opencl");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, answers);
  EXPECT_EQ((*recording)->hwloc_xml(), dir.path() / "hwloc.xml");
  EXPECT_FALSE((*recording)->answers("vulkan").ok());
  EXPECT_EQ((*recording)->answers("vulkan").status().code(), StatusCode::kNotFound);

  const ProbeOptions options = replay_options(*recording);
  EXPECT_EQ(read_machine_file(options, "/proc/meminfo"), std::optional<std::string>("MemTotal:  1234 kB\n"));
  EXPECT_FALSE(read_machine_file(options, "/proc/cpuinfo").has_value());
}

TEST(Recording, ReplayNeverCallsTheLiveGatherer) {
  ScratchDir dir;
  auto recorder = Recorder::create(dir.path());
  ASSERT_TRUE(recorder.ok());
  (*recorder)->add_answers("cuda", {{"recorded", true}});
  ASSERT_TRUE((*recorder)->finish("").ok());
  auto recording = Recording::open(dir.path());
  ASSERT_TRUE(recording.ok());
  const ProbeOptions options = replay_options(*recording);
  int calls = 0;
  auto gather = [&calls]() {
    ++calls;
    return json{{"recorded", false}};
  };
  auto cuda = probe_answers(options, "cuda", gather);
  ASSERT_TRUE(cuda.ok());
  EXPECT_EQ((*cuda)["recorded"], true);
  EXPECT_FALSE(probe_answers(options, "rocm", gather).ok());
  EXPECT_EQ(calls, 0);
}

TEST(Recording, RecordingModeSavesWhatTheGathererAnswered) {
  ScratchDir dir;
  auto recorder = Recorder::create(dir.path());
  ASSERT_TRUE(recorder.ok());
  ProbeOptions options;
  options.recorder = *recorder;
  auto live = probe_answers(options, "qnn", [] { return json{{"backends", json::object()}}; });
  ASSERT_TRUE(live.ok());
  ASSERT_TRUE((*recorder)->finish("").ok());
  auto recording = Recording::open(dir.path());
  ASSERT_TRUE(recording.ok());
  EXPECT_EQ(*(*recording)->answers("qnn"), *live);
}

TEST(Recorder, RefusesANonEmptyDirectoryAndBadNames) {
  ScratchDir dir;
  write(dir.path() / "something", "x");
  auto busy = Recorder::create(dir.path());
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.status().code(), StatusCode::kAlreadyExists);

  ScratchDir fresh;
  auto recorder = Recorder::create(fresh.path());
  ASSERT_TRUE(recorder.ok());
  (*recorder)->add_answers("Bad/Name", json::object());
  const Status st = (*recorder)->finish("");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("Bad/Name"), std::string::npos) << st.message();

  ScratchDir escape;
  auto r2 = Recorder::create(escape.path());
  ASSERT_TRUE(r2.ok());
  (*r2)->add_file("/proc/../../etc/passwd", "x");
  EXPECT_FALSE((*r2)->finish("").ok());
  EXPECT_FALSE(std::filesystem::exists(escape.path() / "etc/passwd"));
}

TEST(Recording, RefusesMalformedRecordingsNamingTheFile) {
  ScratchDir dir;
  write(dir.path() / "manifest.json", R"({"format": "something-else", "version": 1})");
  auto r = Recording::open(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("manifest.json"), std::string::npos);

  write(dir.path() / "manifest.json",
        R"({"format": "accelmatrix-machine-recording", "version": 99})");
  EXPECT_EQ(Recording::open(dir.path()).status().code(), StatusCode::kUnsupported);

  write(dir.path() / "manifest.json",
        R"({"format": "accelmatrix-machine-recording", "version": 1, "answers": ["opencl"]})");
  write(dir.path() / "answers/opencl.json", "{ not json");
  r = Recording::open(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("opencl.json"), std::string::npos) << r.status().message();

  write(dir.path() / "answers/opencl.json", "{}");
  write(dir.path() / "manifest.json",
        R"({"format": "accelmatrix-machine-recording", "version": 1, "answers": ["opencl"],
            "files": ["/proc/meminfo"]})");
  r = Recording::open(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/proc/meminfo"), std::string::npos) << r.status().message();

  write(dir.path() / "root/proc/meminfo", "MemTotal: 1 kB\n");
  write(dir.path() / "manifest.json",
        R"({"format": "accelmatrix-machine-recording", "version": 1, "answers": ["opencl"],
            "files": ["/proc/meminfo"], "hwloc_xml": "topology.xml"})");
  r = Recording::open(dir.path());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("topology.xml"), std::string::npos) << r.status().message();
}

TEST(HwlocProbe, ReplayWithoutRecordedTopologyFailsInsteadOfProbingThisMachine) {
  ScratchDir dir;
  auto recorder = Recorder::create(dir.path());
  ASSERT_TRUE(recorder.ok());
  ASSERT_TRUE((*recorder)->finish("no topology").ok());
  auto recording = Recording::open(dir.path());
  ASSERT_TRUE(recording.ok());
  auto probe = make_hwloc_probe(replay_options(*recording));
  json record = json::object();
  const Status st = probe->run(record);
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st.to_string();
  EXPECT_FALSE(record.contains("topology"));
}

}  // namespace
}  // namespace am::worker
