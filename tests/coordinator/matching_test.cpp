// Matching jobs to devices: pure rules on hand-made device lists, then the decisions the
// coordinator takes for the recorded machines of tests/data/machines (replayed through the
// worker's probes, as their HELLO would carry them).
#include <algorithm>
#include <random>

#include <gtest/gtest.h>

#include "coordinator/matching.h"
#include "jobs/memory_estimate.h"
#include "jobs/names.h"
#include "tests/worker/machine_replay.h"
#include "worker/cpu_device.h"
#include "worker/probe_opencl.h"

namespace am::coord {
namespace {

using nlohmann::json;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// bert-tiny's published configuration (jobs/models/bert-tiny.toml).
json bert_tiny_config() {
  return {{"layers", 2},   {"hidden", 128},        {"heads", 2},      {"intermediate", 512},
          {"vocab", 30522}, {"max_positions", 512}, {"type_vocab", 2}, {"activation", "gelu"},
          {"norm_eps", 1e-12}};
}

jobs::JobSpec job(const std::string& backend, const std::string& precision, json config = bert_tiny_config()) {
  jobs::JobSpec spec;
  spec.model = "bert-tiny";
  spec.architecture = "encoder-only";
  spec.model_config = std::move(config);
  spec.backend = backend;
  const std::optional<jobs::Precision> parsed = jobs::parse_precision(precision);
  EXPECT_TRUE(parsed.has_value()) << precision;
  spec.precision = parsed.value_or(jobs::Precision::kF32);
  spec.batch = 1;
  spec.seq_len = 32;
  return spec;
}

// An encoder large enough to need tens of GB (hidden 4096, 64 layers: ~1.3e10 weights, ~52 GB
// at f32, ~26 GB at f16, ~14 GB at q8_0).
json big_encoder_config() {
  return {{"layers", 64}, {"hidden", 4096}, {"heads", 32}, {"intermediate", 16384}, {"vocab", 32000},
          {"max_positions", 2048}, {"type_vocab", 2}};
}

DeviceInfo device(const std::string& key, const std::string& backend, std::vector<std::string> precisions,
                  int64_t memory = 16 * kGiB) {
  DeviceInfo d;
  d.key = key;
  d.backend = backend;
  d.name = "Device " + key;
  for (const std::string& p : precisions) {
    const std::optional<jobs::Precision> parsed = jobs::parse_precision(p);
    EXPECT_TRUE(parsed.has_value()) << p;
    if (parsed) d.precisions.push_back(*parsed);
  }
  d.memory_bytes = memory;
  return d;
}

std::vector<std::string> eligible(const std::vector<DeviceInfo>& devices, const jobs::JobSpec& spec,
                                  const Tags& tags = {}) {
  std::vector<std::string> keys;
  for (const auto& d : devices) {
    jobs::JobSpec tagged = spec;
    if (!tags.empty()) tagged.required_tags = tags;
    if (device_can_run(d, tagged)) keys.push_back(d.key);
  }
  return keys;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// ---- the estimate ------------------------------------------------------------------------

TEST(EstimatedJobBytes, IsTheArchitecturesOwnEstimate) {
  for (const char* p : {"f32", "f16", "q8_0", "q4_0"}) {
    const auto spec = job("cpu", p);
    ASSERT_TRUE(estimated_job_bytes(spec).has_value()) << p;
    EXPECT_EQ(estimated_job_bytes(spec), jobs::estimate_job_bytes(spec)) << p;
  }
  // bert-tiny holds 4,385,920 weights: at f32 that alone is 17.5 MB.
  EXPECT_GE(*estimated_job_bytes(job("cpu", "f32")), int64_t{4385920} * 4);
  EXPECT_LT(*estimated_job_bytes(job("cpu", "q4_0")), *estimated_job_bytes(job("cpu", "f32")));
}

TEST(EstimatedJobBytes, GrowsWithBatchAndSequenceOnRandomShapes) {
  std::mt19937 rng(42);
  for (int i = 0; i < 20; ++i) {
    jobs::JobSpec a = job("cpu", "f32");
    a.batch = 1 + static_cast<int>(rng() % 16);
    a.seq_len = 1 + static_cast<int>(rng() % 512);
    jobs::JobSpec b = a;
    b.seq_len = a.seq_len + 1 + static_cast<int>(rng() % 64);
    jobs::JobSpec c = a;
    c.batch = a.batch * 2;
    ASSERT_TRUE(estimated_job_bytes(a).has_value());
    EXPECT_LT(*estimated_job_bytes(a), *estimated_job_bytes(b));
    EXPECT_LT(*estimated_job_bytes(a), *estimated_job_bytes(c));
  }
}

TEST(EstimatedJobBytes, UnknownWhenTheArchitectureOrConfigIsNotUnderstood) {
  jobs::JobSpec odd = job("cpu", "f32");
  odd.architecture = "not-an-architecture";
  EXPECT_FALSE(estimated_job_bytes(odd).has_value());
  json partial = bert_tiny_config();
  partial.erase("hidden");
  EXPECT_FALSE(estimated_job_bytes(job("cpu", "f32", partial)).has_value());
  // Unknown device memory or an unknown estimate never blocks a job.
  DeviceInfo d = device("cpu:0", "cpu", {"f32"}, 1);
  EXPECT_TRUE(device_can_run(d, job("cpu", "f32", partial)));
}

// ---- the rules ---------------------------------------------------------------------------

TEST(Matching, NeedsBackendPrecisionSchedulabilityTagsAndMemory) {
  std::vector<DeviceInfo> devices = {device("cpu:0", "cpu", {"f32", "q8_0"}),
                                     device("opencl:0", "opencl", {"f32", "q8_0", "q4_0", "f16"}, 24 * kGiB),
                                     device("vulkan:0", "vulkan", {"f32"})};
  devices[2].schedulable = false;
  EXPECT_EQ(eligible(devices, job("cpu", "f32")), std::vector<std::string>{"cpu:0"});
  EXPECT_EQ(eligible(devices, job("opencl", "f16")), std::vector<std::string>{"opencl:0"});
  EXPECT_TRUE(eligible(devices, job("cpu", "f16")).empty());
  EXPECT_TRUE(eligible(devices, job("vulkan", "f32")).empty());

  const auto why = ineligibility(devices[2], job("vulkan", "f32"));
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(contains(*why, "not schedulable")) << *why;

  // A job that cannot fit: refused by memory, with the sizes named.
  const auto big = job("opencl", "f32", big_encoder_config());
  ASSERT_GT(*estimated_job_bytes(big), 24 * kGiB);
  const auto mem = ineligibility(devices[1], big);
  ASSERT_TRUE(mem.has_value());
  EXPECT_TRUE(contains(*mem, "24576 MiB")) << *mem;
  // Unknown device memory never blocks.
  DeviceInfo unknown = devices[1];
  unknown.memory_bytes = 0;
  EXPECT_TRUE(device_can_run(unknown, big));
}

TEST(Matching, TagsMustAllMatchTheWorkersLabels) {
  const json caps = {{"devices", {{{"key", "cpu:0"}, {"backend", "cpu"}, {"precisions", {"f32"}}}}}};
  const auto devices = devices_from_capabilities(caps, {{"rack", "b2"}, {"gpu", "none"}});
  ASSERT_EQ(devices.size(), 1u);
  auto needing = [](Tags tags) {
    jobs::JobSpec spec = job("cpu", "f32");
    spec.required_tags = std::move(tags);
    return spec;
  };
  EXPECT_TRUE(device_can_run(devices[0], needing({})));
  EXPECT_TRUE(device_can_run(devices[0], needing({{"rack", "b2"}})));
  EXPECT_TRUE(device_can_run(devices[0], needing({{"rack", "b2"}, {"gpu", "none"}})));
  EXPECT_FALSE(device_can_run(devices[0], needing({{"rack", "a1"}})));
  EXPECT_FALSE(device_can_run(devices[0], needing({{"rack", "b2"}, {"zone", "eu"}})));

  const auto s = settle_ineligible(needing({{"rack", "a1"}}), devices);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->status, ResultStatus::kSkipped);
  EXPECT_TRUE(contains(s->reason, "no eligible hardware")) << s->reason;
  EXPECT_TRUE(contains(s->reason, "rack=a1")) << s->reason;
  EXPECT_FALSE(settle_ineligible(needing({{"rack", "b2"}}), devices).has_value());
}

TEST(Matching, SchemaOneRecordsAreSchedulableAndMalformedDevicesSkipped) {
  const json caps = {{"schema", 1},
                     {"devices",
                      {{{"key", "cpu:0"}, {"backend", "cpu"}, {"precisions", {"f32", "q8_0"}}, {"memory_bytes", 1000}},
                       {{"backend", "cpu"}},
                       "not a device",
                       {{"key", "vulkan:0"}, {"backend", "vulkan"}, {"schedulable", false}, {"memory_bytes", -5}}}}};
  const auto devices = devices_from_capabilities(caps);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_TRUE(devices[0].schedulable);
  EXPECT_EQ(devices[0].memory_bytes, 1000);
  EXPECT_FALSE(devices[1].schedulable);
  EXPECT_EQ(devices[1].memory_bytes, 0);
}

TEST(ParseTags, AcceptsKeyValuePairsAndNamesTheBadOne) {
  auto ok = parse_tags({"rack=b2", "gpu=", "zone=eu=west"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (Tags{{"rack", "b2"}, {"gpu", ""}, {"zone", "eu=west"}}));
  auto bad = parse_tags({"rack=b2", "oops"});
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(contains(bad.status().message(), "'oops'"));
  EXPECT_FALSE(parse_tags({"=x"}).ok());
  auto twice = parse_tags({"rack=a", "rack=b"});
  ASSERT_FALSE(twice.ok());
  EXPECT_TRUE(contains(twice.status().message(), "rack"));
  EXPECT_TRUE(parse_tags({"rack=a", "rack=a"}).ok());
}

// ---- recorded machines -------------------------------------------------------------------

std::vector<DeviceInfo> machine_devices(const char* name, const Tags& tags = {}) {
  return devices_from_capabilities(worker::testing::replay_machine(name), tags);
}

// A precision the cpu backend does not declare, so the test follows cpu_precisions() as it grows.
std::optional<std::string> precision_cpu_lacks() {
  const auto cpu = worker::cpu_precisions();
  for (const jobs::PrecisionInfo& p : jobs::all_precisions()) {
    if (std::find(cpu.begin(), cpu.end(), p.precision) == cpu.end()) {
      return std::string(p.name);
    }
  }
  return std::nullopt;
}

TEST(MatchingRecordedMachines, DevVmRunsCpuPoclAndLavapipeButNotF16OpenClOrCuda) {
  const auto devices = machine_devices("dev-vm-epyc-zen4");
  ASSERT_EQ(devices.size(), 3u);
  EXPECT_EQ(eligible(devices, job("cpu", "f32")), std::vector<std::string>{"cpu:0"});
  // What the recording's PoCL (no cl_khr_fp16) runs, as the OpenCL backend answers it.
  for (jobs::Precision precision : worker::opencl_precisions("pthread-cpu", /*fp16=*/false)) {
    const std::string p(jobs::to_string(precision));
    EXPECT_EQ(eligible(devices, job("opencl", std::string(p))), std::vector<std::string>{"opencl:0"}) << p;
    EXPECT_FALSE(settle_ineligible(job("opencl", std::string(p)), devices).has_value());
  }

  // PoCL here has no cl_khr_fp16: an f16 job is unsupported, and the reason names the device.
  const auto f16 = settle_ineligible(job("opencl", "f16"), devices);
  ASSERT_TRUE(f16.has_value());
  EXPECT_EQ(f16->status, ResultStatus::kUnsupported);
  EXPECT_TRUE(contains(f16->reason, "precision f16")) << f16->reason;
  EXPECT_TRUE(contains(f16->reason, "opencl:0 pthread-skylake-avx512-AMD EPYC supports f32, bf16, q8_0, q4_0, q4_1, q3_k, q2_k, mixed"))
      << f16->reason;

  if (worker::vulkan_precisions("llvmpipe").empty()) {
    // A build without the Vulkan backend: lavapipe is probed but not schedulable, and named.
    const auto vk = settle_ineligible(job("vulkan", "f32"), devices);
    ASSERT_TRUE(vk.has_value());
    EXPECT_EQ(vk->status, ResultStatus::kSkipped);
    EXPECT_TRUE(contains(vk->reason, "not schedulable")) << vk->reason;
    EXPECT_TRUE(contains(vk->reason, "vulkan:0 llvmpipe")) << vk->reason;
  } else {
    // With it, lavapipe runs what the Vulkan backend answers: every precision, the k-quants too.
    for (jobs::Precision precision : worker::vulkan_precisions("llvmpipe")) {
      const std::string p(jobs::to_string(precision));
      EXPECT_EQ(eligible(devices, job("vulkan", p)), std::vector<std::string>{"vulkan:0"}) << p;
    }
    EXPECT_EQ(worker::vulkan_precisions("llvmpipe").size(), jobs::all_precisions().size());
    EXPECT_FALSE(settle_ineligible(job("vulkan", "q2_k"), devices).has_value());
  }

  const auto cuda = settle_ineligible(job("cuda", "f32"), devices);
  ASSERT_TRUE(cuda.has_value());
  EXPECT_EQ(cuda->status, ResultStatus::kSkipped);
  EXPECT_TRUE(contains(cuda->reason, "no registered device has backend 'cuda'")) << cuda->reason;
  EXPECT_TRUE(contains(cuda->reason, "cpu, opencl, vulkan")) << cuda->reason;

  if (auto p = precision_cpu_lacks()) {
    const auto s = settle_ineligible(job("cpu", *p), devices);
    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->status, ResultStatus::kUnsupported);
    EXPECT_TRUE(contains(s->reason, "cpu:0 AMD EPYC supports")) << s->reason;
  }
}

TEST(MatchingRecordedMachines, WorkstationSendsF16ToTheRtx4090AndBigJobsToThePocl) {
  const auto devices = machine_devices("rtx4090-workstation");
  EXPECT_EQ(eligible(devices, job("opencl", "f16")), std::vector<std::string>{"opencl:0"});
  EXPECT_EQ(eligible(devices, job("opencl", "q4_0")), (std::vector<std::string>{"opencl:0", "opencl:1"}));

  // ~52 GB at f32: too big for the 4090's 23.6 GiB, fits PoCL's 58.8 GiB of host memory.
  const auto big_f32 = job("opencl", "f32", big_encoder_config());
  EXPECT_EQ(eligible(devices, big_f32), std::vector<std::string>{"opencl:1"});
  const auto why = ineligibility(devices[1], big_f32);
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(contains(*why, "opencl:0 has 24217 MiB")) << *why;
  // The same model at q8_0 (~14 GB) fits the GPU again.
  EXPECT_EQ(eligible(devices, job("opencl", "q8_0", big_encoder_config())),
            (std::vector<std::string>{"opencl:0", "opencl:1"}));
  // At f16 only the GPU has the precision, and it lacks the memory: unsupported, naming both.
  const auto big_f16 = settle_ineligible(job("opencl", "f16", big_encoder_config()), devices);
  ASSERT_TRUE(big_f16.has_value());
  EXPECT_EQ(big_f16->status, ResultStatus::kUnsupported);
  EXPECT_TRUE(contains(big_f16->reason, "needs about")) << big_f16->reason;
  EXPECT_TRUE(contains(big_f16->reason, "has 24217 MiB (opencl:0 NVIDIA GeForce RTX 4090)")) << big_f16->reason;

  // The CUDA device is probed but not schedulable yet.
  const auto cuda = settle_ineligible(job("cuda", "f16"), devices);
  ASSERT_TRUE(cuda.has_value());
  EXPECT_EQ(cuda->status, ResultStatus::kSkipped);
  EXPECT_TRUE(contains(cuda->reason, "cuda:0 NVIDIA GeForce RTX 4090")) << cuda->reason;

  // Worker tags narrow it down.
  const auto tagged = machine_devices("rtx4090-workstation", {{"gpu", "rtx4090"}});
  EXPECT_EQ(eligible(tagged, job("opencl", "f16"), {{"gpu", "rtx4090"}}), std::vector<std::string>{"opencl:0"});
  EXPECT_TRUE(eligible(tagged, job("opencl", "f16"), {{"gpu", "h100"}}).empty());
}

TEST(MatchingRecordedMachines, ArmLaptopRunsOnlyCpuJobs) {
  const auto devices = machine_devices("snapdragon-x-elite-laptop");
  ASSERT_EQ(devices.size(), 2u);
  for (jobs::Precision precision : worker::cpu_precisions()) {
    const std::string p(jobs::to_string(precision));
    EXPECT_EQ(eligible(devices, job("cpu", p)), std::vector<std::string>{"cpu:0"}) << p;
  }
  const auto opencl = settle_ineligible(job("opencl", "f32"), devices);
  ASSERT_TRUE(opencl.has_value());
  EXPECT_EQ(opencl->status, ResultStatus::kSkipped);
  EXPECT_TRUE(contains(opencl->reason, "no registered device has backend 'opencl'")) << opencl->reason;
  // The QNN runtime is installed, but it brings no schedulable device.
  const auto qnn = settle_ineligible(job("qnn", "q8_0"), devices);
  ASSERT_TRUE(qnn.has_value());
  EXPECT_EQ(qnn->status, ResultStatus::kSkipped);
}

TEST(MatchingRecordedMachines, ALabOfAllThreeSettlesOnlyWhatNoneCanRun) {
  std::vector<DeviceInfo> lab;
  for (const char* m : {"dev-vm-epyc-zen4", "rtx4090-workstation", "snapdragon-x-elite-laptop"}) {
    auto d = machine_devices(m);
    lab.insert(lab.end(), d.begin(), d.end());
  }
  EXPECT_FALSE(settle_ineligible(job("opencl", "f16"), lab).has_value());
  EXPECT_FALSE(settle_ineligible(job("cpu", "f32"), lab).has_value());
  if (worker::vulkan_precisions("x").empty()) {
    const auto vk = settle_ineligible(job("vulkan", "f16"), lab);
    ASSERT_TRUE(vk.has_value());
    EXPECT_EQ(vk->status, ResultStatus::kSkipped);
    // Four Vulkan devices are named at most; the rest are counted.
    EXPECT_TRUE(contains(vk->reason, "vulkan:0 NVIDIA GeForce RTX 4090")) << vk->reason;
  } else {
    // The Vulkan backend runs every precision, f16 and the k-quants included, on every device.
    EXPECT_FALSE(settle_ineligible(job("vulkan", "f16"), lab).has_value());
    EXPECT_FALSE(settle_ineligible(job("vulkan", "q2_k"), lab).has_value());
  }
  const auto rocm = settle_ineligible(job("rocm", "f16"), lab);
  ASSERT_TRUE(rocm.has_value());
  EXPECT_EQ(rocm->status, ResultStatus::kSkipped);
}

// The scheduler's split check (kind once per queue, memory per job) must decide exactly as
// device_can_run() on every combination: random seeded devices and jobs, commands included.
TEST(Matching, KindAndMemoryChecksTogetherAreDeviceCanRun) {
  std::mt19937 rng(20261127);
  const std::vector<std::string> backends = {"cpu", "opencl", "vulkan"};
  const std::vector<std::string> precisions = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q3_k", "q2_k"};
  auto pick = [&rng](const auto& v) { return v[std::uniform_int_distribution<std::size_t>(0, v.size() - 1)(rng)]; };
  int agreed_yes = 0;
  int agreed_no = 0;
  for (int i = 0; i < 4000; ++i) {
    std::vector<std::string> listed;
    for (const auto& p : precisions) {
      if (rng() % 2) listed.push_back(p);
    }
    const int64_t memory = (rng() % 4 == 0) ? 0 : static_cast<int64_t>(rng() % 64 + 1) * 256 * kMiB;
    DeviceInfo d = device("d" + std::to_string(i), pick(backends), listed, memory);
    d.schedulable = rng() % 8 != 0;
    d.runs_commands = rng() % 2 == 0;
    if (rng() % 2) d.worker_tags["rack"] = rng() % 2 ? "a" : "b";
    jobs::JobSpec spec = job(pick(backends), pick(precisions), rng() % 3 == 0 ? big_encoder_config() : bert_tiny_config());
    spec.batch = 1 + static_cast<int>(rng() % 64);
    if (rng() % 3 == 0) spec.required_tags["rack"] = "a";
    if (rng() % 5 == 0) spec.command = jobs::CommandSpec{"probe", {"/bin/true"}};
    const bool split = device_admits_kind(d, spec) &&
                       (spec.command.has_value() || fits_memory(d, estimated_job_bytes(spec).value_or(-1)));
    ASSERT_EQ(split, device_can_run(d, spec)) << "device " << d.key << " " << d.backend << " job " << spec.backend << " "
                                              << jobs::to_string(spec.precision) << " batch " << spec.batch;
    (split ? agreed_yes : agreed_no) += 1;
  }
  // Both answers were exercised many times.
  EXPECT_GT(agreed_yes, 200);
  EXPECT_GT(agreed_no, 200);
}

}  // namespace
}  // namespace am::coord
