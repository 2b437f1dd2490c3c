// Probes on this machine, on a recorded hwloc topology and on recorded /proc + /sys files.
#include <dirent.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <random>
#include <regex>
#include <string>

#include <gtest/gtest.h>

#include "jobs/names.h"
#include "kernels/formats/weight_format.h"
#include "worker/capability.h"
#include "worker/cpu_device.h"
#include "worker/probe.h"
#include "worker/probe_cpuid.h"

namespace am::worker {
namespace {

using nlohmann::json;

const std::filesystem::path kRecordedTopology =
    std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "tests/worker/data/hwloc-2pkg-8core-2numa.xml";

json run_one(Probe& probe, json record = json::object()) {
  const Status s = probe.run(record);
  EXPECT_TRUE(s.ok()) << probe.name() << ": " << s.to_string();
  return record;
}

// A scratch directory posing as a machine's root, removed afterwards.
class FakeRoot {
 public:
  FakeRoot() {
    std::mt19937_64 rng(std::random_device{}());
    path_ = std::filesystem::temp_directory_path() /
            ("am-probe-root-" + std::to_string(getpid()) + "-" + std::to_string(rng()));
    std::filesystem::create_directories(path_);
  }
  ~FakeRoot() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  void write(const std::string& relative, const std::string& text) const {
    const auto file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file) << text;
  }
  ProbeOptions options() const {
    ProbeOptions o;
    o.root = path_;
    return o;
  }

 private:
  std::filesystem::path path_;
};

TEST(HwlocProbe, CountsCoresCachesAndMemoryOfThisMachine) {
  auto probe = make_hwloc_probe(ProbeOptions{});
  const json record = run_one(*probe);
  const json& topo = record.at("topology");
  EXPECT_GE(topo.at("packages").get<int>(), 1);
  EXPECT_GE(topo.at("cores").get<int>(), 1);
  EXPECT_GE(topo.at("pus").get<int>(), topo.at("cores").get<int>());
  bool sized_cache = false;
  for (const json& c : topo.at("caches")) {
    EXPECT_GE(c.at("level").get<int>(), 1);
    EXPECT_GE(c.at("count").get<int>(), 1);
    const std::string type = c.at("type").get<std::string>();
    EXPECT_TRUE(type == "data" || type == "instruction" || type == "unified") << type;
    if (c.at("size_bytes").get<uint64_t>() > 0) sized_cache = true;
  }
  EXPECT_TRUE(sized_cache) << topo.dump();
  uint64_t numa_sum = 0;
  for (const json& n : topo.at("numa_nodes")) numa_sum += n.at("memory_bytes").get<uint64_t>();
  EXPECT_EQ(numa_sum, topo.at("memory_bytes_hwloc").get<uint64_t>());
}

TEST(HwlocProbe, CountsOnlyThePusOfTheProcessBinding) {
  cpu_set_t original;
  ASSERT_EQ(sched_getaffinity(0, sizeof original, &original), 0);
  const int allowed = CPU_COUNT(&original);
  {
    auto probe = make_hwloc_probe(ProbeOptions{});
    const json record = run_one(*probe);
    EXPECT_EQ(record["topology"]["pus"].get<int>(), allowed);
  }
  if (allowed < 2) GTEST_SKIP() << "needs at least two CPUs to narrow the binding";

  int first = -1;
  for (int i = 0; i < CPU_SETSIZE && first < 0; ++i) {
    if (CPU_ISSET(i, &original)) first = i;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  // Every thread of the process (libraries may have started some): hwloc reports the union.
  auto set_all_threads = [](const cpu_set_t& set) {
    DIR* dir = opendir("/proc/self/task");
    ASSERT_NE(dir, nullptr);
    while (dirent* e = readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      sched_setaffinity(static_cast<pid_t>(std::stoi(e->d_name)), sizeof set, &set);
    }
    closedir(dir);
  };
  set_all_threads(one);
  auto probe = make_hwloc_probe(ProbeOptions{});
  json record = json::object();
  const Status s = probe->run(record);
  set_all_threads(original);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(record["topology"]["pus"].get<int>(), 1);
  EXPECT_EQ(record["topology"]["cores"].get<int>(), 1);
}

TEST(HwlocProbe, ReplaysRecordedTopology) {
  ProbeOptions options;
  options.hwloc_xml = kRecordedTopology;
  auto probe = make_hwloc_probe(options);
  const json topo = run_one(*probe).at("topology");
  EXPECT_EQ(topo["packages"], 2);
  EXPECT_EQ(topo["cores"], 8);
  EXPECT_EQ(topo["pus"], 16);
  ASSERT_EQ(topo["numa_nodes"].size(), 2u);
  EXPECT_EQ(topo["numa_nodes"][0]["memory_bytes"], 16000000000ull);
  EXPECT_EQ(topo["numa_nodes"][1]["os_index"], 1);
  EXPECT_EQ(topo["memory_bytes_hwloc"], 32000000000ull);
  // Entries are sorted by (level, type, size, line): L1d, L1i, L2, L3.
  const json expected_caches = json::parse(R"([
    {"level":1,"type":"data","size_bytes":48000,"line_bytes":64,"count":8},
    {"level":1,"type":"instruction","size_bytes":32000,"line_bytes":64,"count":8},
    {"level":2,"type":"unified","size_bytes":1000000,"line_bytes":64,"count":8},
    {"level":3,"type":"unified","size_bytes":32000000,"line_bytes":64,"count":2}])");
  EXPECT_EQ(topo["caches"], expected_caches);
}

TEST(HwlocProbe, FailsOnUnreadableRecording) {
  ProbeOptions options;
  options.hwloc_xml = "/nonexistent/topology.xml";
  auto probe = make_hwloc_probe(options);
  json record = json::object();
  EXPECT_FALSE(probe->run(record).ok());
}

// Compares with the compiler's own answers; clang before 16 knows neither "f16c", "avxvnni" nor
// the "x86-64-vN" levels in __builtin_cpu_supports, so there only gcc builds run it.
#if defined(__x86_64__) && (!defined(__clang__) || __clang_major__ >= 16)
TEST(CpuIsaProbe, FlagsAgreeWithCompilerRuntimeDetection) {
  auto probe = make_cpu_isa_probe();
  const json cpu = run_one(*probe).at("cpu");
  const json& isa = cpu.at("isa");
  EXPECT_FALSE(cpu.at("vendor").get<std::string>().empty());
  EXPECT_FALSE(cpu.at("model").get<std::string>().empty());
  EXPECT_EQ(cpu.at("arch"), "x86_64");
  EXPECT_EQ(isa.at("sse4_2").get<bool>(), __builtin_cpu_supports("sse4.2") != 0);
  EXPECT_EQ(isa.at("avx").get<bool>(), __builtin_cpu_supports("avx") != 0);
  EXPECT_EQ(isa.at("avx2").get<bool>(), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(isa.at("fma").get<bool>(), __builtin_cpu_supports("fma") != 0);
  EXPECT_EQ(isa.at("f16c").get<bool>(), __builtin_cpu_supports("f16c") != 0);
  EXPECT_EQ(isa.at("avx512f").get<bool>(), __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(isa.at("avx512bw").get<bool>(), __builtin_cpu_supports("avx512bw") != 0);
  EXPECT_EQ(isa.at("avx512vl").get<bool>(), __builtin_cpu_supports("avx512vl") != 0);
  EXPECT_EQ(isa.at("avx512_vnni").get<bool>(), __builtin_cpu_supports("avx512vnni") != 0);
  EXPECT_EQ(isa.at("avx512_bf16").get<bool>(), __builtin_cpu_supports("avx512bf16") != 0);
  EXPECT_EQ(isa.at("avx_vnni").get<bool>(), __builtin_cpu_supports("avxvnni") != 0);

  std::string expected_level = "x86-64-v1";
  if (__builtin_cpu_supports("x86-64-v2")) expected_level = "x86-64-v2";
  if (__builtin_cpu_supports("x86-64-v3")) expected_level = "x86-64-v3";
  if (__builtin_cpu_supports("x86-64-v4")) expected_level = "x86-64-v4";
  EXPECT_EQ(cpu.at("isa_level"), expected_level);
}
#endif

TEST(IsaLevel, FollowsThePsAbiLevels) {
  json isa = {{"cx16", true},  {"lahf_lm", true}, {"popcnt", true}, {"sse3", true},
              {"sse4_1", true}, {"sse4_2", true},  {"ssse3", true}};
  EXPECT_EQ(isa_level_from_flags(isa, "x86_64"), "x86-64-v2");
  isa["cx16"] = false;
  EXPECT_EQ(isa_level_from_flags(isa, "x86_64"), "x86-64-v1");
  isa["cx16"] = true;
  for (const char* f : {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "lzcnt", "movbe"}) isa[f] = true;
  EXPECT_EQ(isa_level_from_flags(isa, "x86_64"), "x86-64-v3");
  for (const char* f : {"avx512f", "avx512bw", "avx512cd", "avx512dq"}) isa[f] = true;
  EXPECT_EQ(isa_level_from_flags(isa, "x86_64"), "x86-64-v3");  // avx512vl still missing
  isa["avx512vl"] = true;
  EXPECT_EQ(isa_level_from_flags(isa, "x86_64"), "x86-64-v4");

  EXPECT_EQ(isa_level_from_flags({{"asimd", true}}, "aarch64"), "armv8-a");
  EXPECT_EQ(isa_level_from_flags({{"asimd", true}, {"dotprod", true}}, "aarch64"),
            "armv8.2-a+dotprod");
  EXPECT_EQ(isa_level_from_flags({{"dotprod", true}, {"i8mm", true}, {"bf16", true}}, "aarch64"),
            "armv8.6-a");
  EXPECT_EQ(isa_level_from_flags({{"sve2", true}}, "aarch64"), "armv9-a");
  EXPECT_EQ(isa_level_from_flags(json::object(), "riscv64"), "riscv64");
}

TEST(OsMemoryProbe, MatchesTheKernelsTotalOnThisMachine) {
  struct sysinfo si {};
  ASSERT_EQ(sysinfo(&si), 0);
  const uint64_t total = uint64_t{si.totalram} * si.mem_unit;
  auto probe = make_os_memory_probe(ProbeOptions{});
  const json topo = run_one(*probe).at("topology");
  EXPECT_EQ(topo.at("memory_bytes_os").get<uint64_t>(), total);
  const uint64_t limit = topo.at("memory_limit_bytes").get<uint64_t>();
  EXPECT_GT(limit, 0u);
  EXPECT_LE(limit, total);
  const std::string source = topo.at("memory_limit_source").get<std::string>();
  EXPECT_TRUE(source == "os" || source == "cgroup") << source;
}

TEST(OsMemoryProbe, CgroupV2LimitOfAnAncestorCapsTheOsFigure) {
  FakeRoot root;
  root.write("proc/meminfo", "MemTotal:       16384000 kB\nMemFree:         1000 kB\n");
  root.write("proc/self/cgroup", "0::/jobs.slice/worker-1\n");
  root.write("sys/fs/cgroup/jobs.slice/memory.max", "4294967296\n");
  root.write("sys/fs/cgroup/jobs.slice/worker-1/memory.max", "max\n");
  auto probe = make_os_memory_probe(root.options());
  const json topo = run_one(*probe).at("topology");
  EXPECT_EQ(topo["memory_bytes_os"], 16384000ull * 1024);
  EXPECT_EQ(topo["memory_bytes_cgroup"], 4294967296ull);
  EXPECT_EQ(topo["memory_limit_bytes"], 4294967296ull);
  EXPECT_EQ(topo["memory_limit_source"], "cgroup");
}

TEST(OsMemoryProbe, UnlimitedCgroupV1LeavesTheOsFigure) {
  FakeRoot root;
  root.write("proc/meminfo", "MemTotal:       24684100 kB\n");
  root.write("proc/self/cgroup", "9:name=systemd:/\n4:cpu,memory:/box/7\n");
  root.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  auto probe = make_os_memory_probe(root.options());
  json record = {{"topology", {{"memory_bytes_hwloc", 5865959424ull}}}};
  const json topo = run_one(*probe, record).at("topology");
  EXPECT_EQ(topo["memory_bytes_os"], 24684100ull * 1024);
  EXPECT_FALSE(topo.contains("memory_bytes_cgroup"));
  // hwloc's smaller figure (a VM's boot-time layout) does not limit jobs.
  EXPECT_EQ(topo["memory_limit_bytes"], 24684100ull * 1024);
  EXPECT_EQ(topo["memory_limit_source"], "os");
  EXPECT_EQ(topo["memory_bytes_hwloc"], 5865959424ull);
}

TEST(OsMemoryProbe, FallsBackToHwlocAndFailsWithNothing) {
  FakeRoot root;
  auto probe = make_os_memory_probe(root.options());
  json with_hwloc = {{"topology", {{"memory_bytes_hwloc", 8000000000ull}}}};
  const json topo = run_one(*probe, with_hwloc).at("topology");
  EXPECT_EQ(topo["memory_limit_bytes"], 8000000000ull);
  EXPECT_EQ(topo["memory_limit_source"], "hwloc");

  json empty = json::object();
  EXPECT_FALSE(probe->run(empty).ok());
}

TEST(HostProbe, ReadsOsReleaseUnderTheRoot) {
  FakeRoot root;
  root.write("etc/os-release", "NAME=\"Test\"\nPRETTY_NAME=\"Testix 7 (probe)\"\n");
  auto probe = make_host_probe(root.options());
  const json host = run_one(*probe).at("host");
  EXPECT_EQ(host["os"], "Testix 7 (probe)");
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof name - 1), 0);
  EXPECT_EQ(host["hostname"], std::string(name));
  EXPECT_FALSE(host["kernel"].get<std::string>().empty());
}

TEST(Capabilities, RecordHasTheDocumentedShape) {
  const json rec = probe_capabilities();
  EXPECT_EQ(rec.at("schema"), 2);
  for (const char* k : {"hostname", "os", "kernel"}) EXPECT_TRUE(rec.at("host").at(k).is_string()) << k;
  const json& cpu = rec.at("cpu");
  for (const char* k : {"vendor", "model", "arch", "isa_level"}) EXPECT_TRUE(cpu.at(k).is_string()) << k;
  EXPECT_TRUE(cpu.at("isa").is_object());
  const json& topo = rec.at("topology");
  for (const char* k : {"packages", "cores", "pus", "memory_bytes_hwloc", "memory_bytes_os",
                        "memory_limit_bytes"}) {
    EXPECT_TRUE(topo.at(k).is_number_integer()) << k;
  }
  EXPECT_TRUE(topo.at("caches").is_array());
  EXPECT_TRUE(topo.at("numa_nodes").is_array());
  EXPECT_TRUE(topo.at("memory_limit_source").is_string());
  for (const char* r : {"opencl", "vulkan", "cuda", "rocm", "openvino", "qnn"}) {
    EXPECT_TRUE(rec.at("runtimes").at(r).at("present").is_boolean()) << r;
  }

  // The cpu device comes first; runtime devices (PoCL, lavapipe, GPUs) follow it.
  ASSERT_GE(rec.at("devices").size(), 1u);
  const json& dev = rec["devices"][0];
  EXPECT_EQ(dev.at("key"), "cpu:0");
  EXPECT_EQ(dev.at("backend"), "cpu");
  EXPECT_EQ(dev.at("name"), cpu["model"]);
  EXPECT_EQ(dev.at("vendor"), cpu["vendor"]);
  EXPECT_EQ(dev.at("software"), false);
  EXPECT_EQ(dev.at("schedulable"), true);
  EXPECT_EQ(dev.at("compute_units"), topo["cores"]);
  EXPECT_EQ(dev.at("memory_bytes"), topo["memory_limit_bytes"]);
  json precisions = json::array();
  for (jobs::Precision p : cpu_precisions()) precisions.push_back(jobs::to_string(p));
  EXPECT_EQ(dev.at("precisions"), precisions);
  EXPECT_EQ(dev.at("features").at("int_dot_product"),
            cpu["isa"].value("avx512_vnni", false) || cpu["isa"].value("avx_vnni", false) ||
                cpu["isa"].value("dotprod", false));
  const std::string cls = dev.at("hardware_class").get<std::string>();
  EXPECT_TRUE(std::regex_match(cls, std::regex("cpu-[0-9a-f]{16}"))) << cls;
  EXPECT_EQ(cls, hardware_class_id(dev, cpu));
  for (const json& d : rec["devices"]) {
    for (const char* k : {"key", "backend", "name", "vendor", "driver", "type", "hardware_class"}) {
      EXPECT_TRUE(d.at(k).is_string()) << k << " in " << d.dump();
    }
    for (const char* k : {"software", "schedulable"}) EXPECT_TRUE(d.at(k).is_boolean()) << k;
    EXPECT_TRUE(d.at("precisions").is_array());
    EXPECT_TRUE(d.at("features").is_object());
    EXPECT_TRUE(d.at("memory_bytes").is_number_integer());
  }
}

TEST(Capabilities, FailingProbeIsSkippedAndTheDeviceStillAppears) {
  ProbeOptions broken;
  broken.hwloc_xml = "/nonexistent/topology.xml";
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(make_cpu_isa_probe());
  probes.push_back(make_hwloc_probe(broken));
  probes.push_back(make_cpu_device_probe());
  const json rec = assemble_capabilities(probes);
  EXPECT_FALSE(rec.contains("topology"));
  ASSERT_EQ(rec.at("devices").size(), 1u);
  cpu_set_t set;
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(rec["devices"][0]["compute_units"], CPU_COUNT(&set));
  EXPECT_GT(rec["devices"][0]["memory_bytes"].get<int64_t>(), 0);
}

}  // namespace
}  // namespace am::worker
