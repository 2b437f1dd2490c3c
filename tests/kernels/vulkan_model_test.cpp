// Whole models on the Vulkan backend: the BERT encoder end to end against the cpu at f32 and in
// the block formats, the convolution / pooling / recurrent families' graphs against the cpu, and
// run_job() with backend "vulkan" as a worker's job process runs it (encoder, LLaMA-style decoder
// with KV cache, mixture of experts, k-quants). Skips without a device.
#include <gtest/gtest.h>

#include <string>

#include "tests/kernels/named_formats.h"
#include "kernels/job_runner.h"
#include "kernels/models/encoder_only.h"
#include "kernels/vulkan/vulkan_backend.h"
#include "tests/kernels/device_family_cases.h"
#include "tests/kernels/vulkan_test_util.h"

namespace am::kernels {
namespace {

using testing::VulkanTolerance;

ExecContext scalar_context() { return ExecContext{KernelPath::kScalar, nullptr}; }

EncoderConfig small_encoder() {
  EncoderConfig c;
  c.layers = 2;
  c.hidden = 96;
  c.heads = 3;
  c.intermediate = 200;
  c.vocab = 500;
  c.max_positions = 64;
  c.type_vocab = 2;
  c.norm_eps = 1e-12f;
  c.activation = "gelu";
  return c;
}

TEST(VulkanEncoder, MatchesCpuEndToEndAtF32AndBlockFormats) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  const ExecContext ctx = scalar_context();
  const EncoderConfig config = small_encoder();
  const EncoderInput input = make_synthetic_encoder_input(config, 3, 21, 77);
  Result<EncoderModel> f32 = EncoderModel::create_synthetic(config, WeightFormat::kF32, 5, ctx);
  ASSERT_TRUE(f32.ok()) << f32.status().message();
  {
    Result<std::unique_ptr<VulkanBackend>> be = VulkanBackend::create(device);
    ASSERT_TRUE(be.ok()) << be.status().message();
    for (const char* precision : {"f32", "q8_0", "q4_0"}) {
      SCOPED_TRACE(precision);
      Result<WeightFormat> format = Result<WeightFormat>(format_named(precision));
      ASSERT_TRUE(format.ok()) << format.status().message();
      const EncoderModel model =
          *format == WeightFormat::kF32 ? f32->converted(WeightFormat::kF32, ctx) : f32->converted(*format, ctx);
      for (const auto& [op, op_format] : model.required_ops()) {
        ASSERT_TRUE((*be)->supports(op, op_format).ok()) << op_name(op);
      }
      Result<Tensor> ref = model.forward(input, ctx);
      ASSERT_TRUE(ref.ok()) << ref.status().message();
      Result<Tensor> out = model.forward(input, **be);
      ASSERT_TRUE(out.ok()) << out.status().message();
      ASSERT_EQ(out->numel(), ref->numel());
      const AccuracyMetrics m = compare_outputs(out->data(), ref->data(), ref->rows(), ref->cols());
      EXPECT_EQ(m.nonfinite, 0);
      EXPECT_LE(m.nmse, VulkanTolerance::kEncoder);
      EXPECT_EQ(m.top1_agreement, 1.0);
      (*be)->release_cached_weights();  // the next model's layers may reuse these addresses
    }
  }
}

jobs::JobSpec small_vulkan_job(const std::string& precision) {
  jobs::JobSpec spec;
  spec.model = "bert-test";
  spec.architecture = "encoder-only";
  spec.model_config = {{"layers", 2},         {"hidden", 64},      {"heads", 2},
                       {"intermediate", 128}, {"vocab", 400},      {"max_positions", 32},
                       {"type_vocab", 2},     {"norm_eps", 1e-12}, {"activation", "gelu"}};
  spec.backend = "vulkan";
  spec.precision = precision_named(precision);
  spec.batch = 2;
  spec.seq_len = 16;
  spec.mode = jobs::kModeBoth;
  spec.seed = 4321;
  spec.warmup = 1;
  spec.min_reps = 3;
  spec.max_reps = 10;
  spec.min_time_s = 0.01;
  spec.threads = 2;
  return spec;
}

TEST(VulkanJob, EncoderJobPassesWithAccuracyAndLatencyAtF32AndQ8_0) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  for (const char* precision : {"f32", "q8_0"}) {
    SCOPED_TRACE(precision);
    const JobOutcome out = run_job(small_vulkan_job(precision));
    ASSERT_EQ(out.status, am::ResultStatus::kPass) << out.reason << " " << out.metrics.dump();
    const nlohmann::json& m = out.metrics;
    ASSERT_TRUE(m.contains("accuracy")) << m.dump();
    ASSERT_TRUE(m.contains("latency_ms")) << m.dump();
    EXPECT_GE(m.at("latency_ms").at("count").get<int>(), 3);
    EXPECT_GT(m.at("latency_ms").at("median").get<double>(), 0.0);
    EXPECT_EQ(m.at("accuracy").at("nonfinite").get<int64_t>(), 0);
    EXPECT_GE(m.at("accuracy").at("cosine").get<double>(), 0.999);
    // The job ran on the Vulkan device, not silently on the cpu.
    EXPECT_NE(m.at("device").get<std::string>().find(device.name), std::string::npos) << m.dump();
    if (std::string(precision) == "f32") {
      EXPECT_LE(m.at("accuracy").at("nmse").get<double>(), VulkanTolerance::kEncoder);
    } else {
      EXPECT_GT(m.at("accuracy").at("nmse").get<double>(), 0.0);
    }
  }
}

// A LLaMA-style decoder (RMSNorm, RoPE, grouped-query causal attention with a KV cache, SwiGLU)
// and its mixture-of-experts variant (top-k routing, index/scatter rows), prefill plus decode
// steps, on the Vulkan device against the cpu f32 reference.
TEST(VulkanJob, DecoderAndMixtureOfExpertsJobsPassWithDecodePhases) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  for (int experts : {0, 4}) {
    SCOPED_TRACE(experts == 0 ? "dense decoder" : "mixture of experts");
    jobs::JobSpec spec = small_vulkan_job("q8_0");
    spec.model = experts == 0 ? "llama-test" : "moe-test";
    spec.architecture = experts == 0 ? "decoder-only" : "mixture-of-experts";
    spec.model_config = {{"style", "llama"},      {"layers", 2},      {"hidden", 64},
                         {"heads", 4},            {"kv_heads", 2},    {"intermediate", 96},
                         {"vocab", 300},          {"max_positions", 64}, {"rope_theta", 10000.0},
                         {"norm_eps", 1e-5},      {"activation", "silu"}, {"decode_steps", 3}};
    if (experts > 0) {
      spec.model_config["experts"] = experts;
      spec.model_config["experts_per_token"] = 2;
    }
    spec.seq_len = 12;
    const JobOutcome out = run_job(spec);
    ASSERT_EQ(out.status, am::ResultStatus::kPass) << out.reason << " " << out.metrics.dump();
    EXPECT_GE(out.metrics.at("accuracy").at("cosine").get<double>(), 0.999);
    EXPECT_EQ(out.metrics.at("accuracy").at("nonfinite").get<int64_t>(), 0);
    EXPECT_GT(out.metrics.at("latency_ms").at("median").get<double>(), 0.0);
  }
}

// The k-quant jobs run on the device with the cpu's accuracy: the same quantized weights and
// the same q8 activations, so the NMSE against the f32 reference is the cpu job's to within
// float summation order.
TEST(VulkanJob, KQuantJobsRunWithTheCpusAccuracy) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  for (const char* precision : {"q2_k", "q3_k"}) {
    SCOPED_TRACE(precision);
    jobs::JobSpec spec = small_vulkan_job(precision);
    spec.model_config["hidden"] = 256;
    spec.model_config["heads"] = 4;
    spec.model_config["intermediate"] = 256;
    spec.model_config["layers"] = 1;
    spec.batch = 1;
    spec.seq_len = 8;
    spec.mode = jobs::kModeAccuracy;
    const JobOutcome out = run_job(spec);
    spec.backend = "cpu";
    const JobOutcome cpu = run_job(spec);
    ASSERT_NE(out.status, am::ResultStatus::kUnsupported) << out.reason;
    EXPECT_EQ(out.status, cpu.status) << out.reason << " / " << cpu.reason;
    const double nmse = out.metrics.at("accuracy").at("nmse").get<double>();
    const double cpu_nmse = cpu.metrics.at("accuracy").at("nmse").get<double>();
    EXPECT_GT(nmse, 0.0);
    EXPECT_NEAR(nmse, cpu_nmse, 1e-3 * cpu_nmse);
    EXPECT_NE(out.metrics.at("device").get<std::string>().find(device.name), std::string::npos);
  }
}

// Vision, speech, multimodal (audio), diffusion and state-space graphs: their convolutions,
// group norms, pools and scans run on the device and the whole output matches the cpu.
TEST(VulkanFamilies, ConvolutionPoolingAndRecurrentFamiliesMatchCpu) {
  AM_REQUIRE_VULKAN_DEVICE(device);
  testing::expect_families_match_cpu<VulkanTolerance>(
      testing::vulkan_backend_for(device), [](Backend& be) { static_cast<VulkanBackend&>(be).release_cached_weights(); });
}

}  // namespace
}  // namespace am::kernels
