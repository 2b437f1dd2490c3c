#include "kernels/job_runner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

#include "jobs/catalog.h"
#include "tests/kernels/named_formats.h"
#include "jobs/names.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/models/model.h"
#include "kernels/thread_pool.h"

namespace am::kernels {
namespace {

jobs::JobSpec small_bert_job(const std::string& precision, const std::string& mode) {
  jobs::JobSpec spec;
  spec.model = "bert-test";
  spec.architecture = "encoder-only";
  spec.model_config = {{"layers", 2},         {"hidden", 96},      {"heads", 2},
                       {"intermediate", 224}, {"vocab", 1000},     {"max_positions", 64},
                       {"type_vocab", 2},     {"norm_eps", 1e-12}, {"activation", "gelu"}};
  spec.backend = "cpu";
  spec.precision = precision_named(precision);
  spec.batch = 2;
  spec.seq_len = 16;
  spec.mode = mode;
  spec.seed = 1234;
  spec.warmup = 1;
  spec.min_reps = 3;
  spec.max_reps = 20;
  spec.min_time_s = 0.02;
  spec.threads = 2;
  return spec;
}

void expect_has(const nlohmann::json& doc, const std::string& key, const std::string& field) {
  ASSERT_TRUE(doc.contains(key)) << key << " missing in " << doc.dump();
  ASSERT_TRUE(doc.at(key).contains(field)) << key << "." << field << " missing in " << doc.dump();
}

TEST(RunJob, SmallBertPassesWithEveryMetricPresent) {
  for (const char* precision : {"f32", "q8_0"}) {
    const JobOutcome out = run_job(small_bert_job(precision, jobs::kModeBoth));
    ASSERT_EQ(out.status, am::ResultStatus::kPass) << precision << ": " << out.reason;
    const nlohmann::json& m = out.metrics;
    for (const char* f : {"median", "p90", "min", "max", "mean", "stddev", "count", "samples"}) {
      expect_has(m, "latency_ms", f);
    }
    for (const char* f : {"samples_per_s", "tokens_per_s"}) expect_has(m, "throughput", f);
    for (const char* f : {"nmse", "cosine", "max_abs_err", "top1_agreement"})
      expect_has(m, "accuracy", f);
    for (const char* f : {"weights_bytes", "peak_rss_bytes"}) expect_has(m, "memory", f);
    EXPECT_EQ(m.at("threads"), 2);
    EXPECT_EQ(m.at("seed"), 1234u);
    EXPECT_EQ(m.at("kernel_path"), std::string(kernel_path_name(best_kernel_path())));

    const nlohmann::json& lat = m.at("latency_ms");
    const int count = lat.at("count");
    EXPECT_GE(count, 3);
    EXPECT_LE(count, 20);
    EXPECT_EQ(lat.at("samples").size(), static_cast<std::size_t>(count));
    EXPECT_LE(lat.at("min").get<double>(), lat.at("median").get<double>());
    EXPECT_LE(lat.at("median").get<double>(), lat.at("max").get<double>());
    EXPECT_NEAR(m.at("throughput").at("tokens_per_s").get<double>(),
                32.0 / (lat.at("median").get<double>() / 1e3), 1e-6);
    EXPECT_GT(m.at("memory").at("peak_rss_bytes").get<int64_t>(), 0);
    EXPECT_GE(m.at("accuracy").at("top1_agreement").get<double>(), 0.9);
  }
}

TEST(RunJob, Q8_0ReportsNonZeroErrorAndSmallerWeightsThanF32) {
  const JobOutcome f = run_job(small_bert_job("f32", jobs::kModeAccuracy));
  const JobOutcome q = run_job(small_bert_job("q8_0", jobs::kModeAccuracy));
  ASSERT_EQ(f.status, am::ResultStatus::kPass) << f.reason;
  ASSERT_EQ(q.status, am::ResultStatus::kPass) << q.reason;
  EXPECT_EQ(f.metrics.at("accuracy").at("nmse").get<double>(), 0.0);
  EXPECT_GT(q.metrics.at("accuracy").at("nmse").get<double>(), 0.0);
  EXPECT_LT(q.metrics.at("memory").at("weights_bytes").get<int64_t>(),
            f.metrics.at("memory").at("weights_bytes").get<int64_t>());
}

TEST(RunJob, ModeSelectsWhatIsMeasured) {
  const JobOutcome acc = run_job(small_bert_job("q8_0", jobs::kModeAccuracy));
  ASSERT_EQ(acc.status, am::ResultStatus::kPass) << acc.reason;
  EXPECT_TRUE(acc.metrics.contains("accuracy"));
  EXPECT_FALSE(acc.metrics.contains("latency_ms"));
  const JobOutcome perf = run_job(small_bert_job("q8_0", jobs::kModePerf));
  ASSERT_EQ(perf.status, am::ResultStatus::kPass) << perf.reason;
  EXPECT_FALSE(perf.metrics.contains("accuracy"));
  EXPECT_TRUE(perf.metrics.contains("latency_ms"));
  EXPECT_TRUE(perf.metrics.contains("memory"));
}

TEST(RunJob, PerfJobsOtherThanTheBaselineTimeAPairedCpuF32Baseline) {
  const JobOutcome q = run_job(small_bert_job("q8_0", jobs::kModePerf));
  ASSERT_EQ(q.status, am::ResultStatus::kPass) << q.reason;
  ASSERT_TRUE(q.metrics.contains("paired_baseline")) << q.metrics.dump();
  const nlohmann::json& pb = q.metrics.at("paired_baseline");
  EXPECT_EQ(pb.at("backend"), "cpu");
  EXPECT_EQ(pb.at("precision"), "f32");
  EXPECT_GE(pb.at("blocks").get<int>(), 2);
  EXPECT_EQ(pb.at("blocks").get<int>() % 2, 0);
  const nlohmann::json& lat = pb.at("latency_ms");
  EXPECT_GE(lat.at("count").get<int>(), 3);   // min_reps holds for the baseline too
  EXPECT_EQ(lat.at("samples").size(), lat.at("count").get<std::size_t>());
  EXPECT_GT(lat.at("median").get<double>(), 0.0);
  EXPECT_GE(q.metrics.at("latency_ms").at("count").get<int>(), 3);

  // The baseline itself has nothing to pair with.
  const JobOutcome f = run_job(small_bert_job("f32", jobs::kModePerf));
  ASSERT_EQ(f.status, am::ResultStatus::kPass) << f.reason;
  EXPECT_FALSE(f.metrics.contains("paired_baseline"));
  // Nor does an accuracy-only job.
  EXPECT_FALSE(run_job(small_bert_job("q8_0", jobs::kModeAccuracy)).metrics.contains("paired_baseline"));
}

TEST(RunJob, RunsOnEveryForcedKernelPath) {
  for (KernelPath p : available_kernel_paths()) {
    const std::string name(kernel_path_name(p));
    setenv(kKernelPathEnvVar, name.c_str(), 1);
    const JobOutcome out = run_job(small_bert_job("q8_0", jobs::kModeAccuracy));
    unsetenv(kKernelPathEnvVar);
    ASSERT_EQ(out.status, am::ResultStatus::kPass) << name << ": " << out.reason;
    EXPECT_EQ(out.metrics.at("kernel_path"), name);
  }
}

TEST(RunJob, UnknownForcedKernelPathIsAnError) {
  setenv(kKernelPathEnvVar, "mmx", 1);
  const JobOutcome out = run_job(small_bert_job("q8_0", jobs::kModeAccuracy));
  unsetenv(kKernelPathEnvVar);
  EXPECT_EQ(out.status, am::ResultStatus::kError);
  EXPECT_NE(out.reason.find("mmx"), std::string::npos);
}

TEST(RunJob, UnavailableBackendIsUnsupportedNamingIt) {
  jobs::JobSpec spec = small_bert_job("f32", jobs::kModeBoth);
  spec.backend = "qnn";
  const JobOutcome out = run_job(spec);
  EXPECT_EQ(out.status, am::ResultStatus::kUnsupported);
  EXPECT_EQ(out.reason, "backend qnn is not available in this build");
}

TEST(RunJob, ArchitectureWithoutGraphBuilderIsUnsupportedNamingIt) {
  jobs::JobSpec spec = small_bert_job("f32", jobs::kModeBoth);
  spec.architecture = "quantum-annealer";
  const JobOutcome out = run_job(spec);
  EXPECT_EQ(out.status, am::ResultStatus::kUnsupported);
  EXPECT_EQ(out.reason, "architecture quantum-annealer has no graph builder yet");
}

TEST(RunJob, InvalidConfigIsAnErrorNamingTheKey) {
  jobs::JobSpec spec = small_bert_job("f32", jobs::kModeBoth);
  spec.model_config.erase("hidden");
  const JobOutcome out = run_job(spec);
  EXPECT_EQ(out.status, am::ResultStatus::kError);
  EXPECT_NE(out.reason.find("'hidden'"), std::string::npos) << out.reason;
}

TEST(RunJob, SequenceBeyondMaxPositionsIsAnError) {
  jobs::JobSpec spec = small_bert_job("f32", jobs::kModeBoth);
  spec.seq_len = 65;
  const JobOutcome out = run_job(spec);
  EXPECT_EQ(out.status, am::ResultStatus::kError);
  EXPECT_NE(out.reason.find("max_positions"), std::string::npos) << out.reason;
}

TEST(RunJob, ConfigThatIsNotAnObjectIsAnError) {
  jobs::JobSpec spec = small_bert_job("f32", jobs::kModeBoth);
  spec.model_config = nlohmann::json::array({1, 2});
  const JobOutcome out = run_job(spec);
  EXPECT_EQ(out.status, am::ResultStatus::kError);
}

// The one exception run_job lets through: the job-mode process turns it into the "oom" exit.
TEST(RunJob, AllocationFailurePropagatesAsBadAlloc) {
  jobs::JobSpec spec = small_bert_job("f32", jobs::kModeAccuracy);
  spec.model_config["vocab"] = 1 << 24;
  spec.model_config["hidden"] = 1 << 24;  // a 2^48-float embedding table: beyond any address space
  EXPECT_THROW(run_job(spec), std::bad_alloc);
}

TEST(RunJob, ZeroThreadsMeansAllCores) {
  jobs::JobSpec spec = small_bert_job("q8_0", jobs::kModeAccuracy);
  spec.threads = 0;
  const JobOutcome out = run_job(spec);
  ASSERT_EQ(out.status, am::ResultStatus::kPass) << out.reason;
  EXPECT_EQ(out.metrics.at("threads").get<int>(), default_thread_count());
}

}  // namespace
}  // namespace am::kernels

namespace am::kernels {
namespace {

TEST(Registry, EveryArchitectureFamilyHasAGraphBuilder) {
  for (std::string_view arch : jobs::known_architectures()) {
    EXPECT_NE(graph_builder_for(arch), nullptr) << arch;
  }
  EXPECT_EQ(jobs::known_architectures().size(), 11u);
  EXPECT_EQ(graph_builder_for("quantum-annealer"), nullptr);
}

}  // namespace
}  // namespace am::kernels

namespace am::kernels {
namespace {

// A CPU job rerun with its seed reproduces its accuracy figures exactly (same thread count);
// another seed gives other figures. Checked on an encoder and on a generating decoder.
TEST(RunJob, RerunWithTheSameSeedReproducesAccuracyExactly) {
  auto llama = jobs::load_model(std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs/models",
                                "TinyLlama-1.1B-Chat");
  ASSERT_TRUE(llama.ok()) << llama.status().to_string();
  jobs::JobSpec decoder = small_bert_job("q4_0", jobs::kModeAccuracy);
  decoder.model = "TinyLlama-1.1B-Chat";
  decoder.architecture = llama->architecture;
  decoder.model_config = llama->config;
  const nlohmann::json scaled = {{"layers", 2},        {"hidden", 64}, {"heads", 4},       {"kv_heads", 2},
                                 {"intermediate", 128}, {"vocab", 256}, {"decode_steps", 3}};
  decoder.model_config.update(scaled);
  for (jobs::JobSpec spec : {small_bert_job("q8_0", jobs::kModeAccuracy), decoder}) {
    const JobOutcome first = run_job(spec);
    const JobOutcome again = run_job(spec);
    ASSERT_TRUE(first.metrics.contains("accuracy")) << spec.model << ": " << first.reason;
    EXPECT_GT(first.metrics["accuracy"]["nmse"].get<double>(), 0.0) << spec.model;
    EXPECT_EQ(first.metrics["accuracy"], again.metrics["accuracy"]) << spec.model;
    spec.seed += 1;
    const JobOutcome other = run_job(spec);
    EXPECT_NE(first.metrics["accuracy"]["nmse"], other.metrics["accuracy"]["nmse"]) << spec.model;
  }
}

}  // namespace
}  // namespace am::kernels
