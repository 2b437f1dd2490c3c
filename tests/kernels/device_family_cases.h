// Whole graphs of the families that need the convolution, group-norm, pooling and recurrent ops
// (vision: ViT and DETR; speech: Whisper and Wav2Vec2; multimodal: CLAP's audio tower;
// diffusion; state-space: Mamba and RWKV), tiny configurations, run at f32 on a device backend
// and on the cpu scalar path with the same weights and inputs: the device output must match
// within `Tol::kEncoder` ("the whole model"). Shared by the Vulkan and OpenCL model tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jobs/job_spec.h"
#include "kernels/accuracy.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/models/model.h"
#include "tests/kernels/test_util.h"

namespace am::kernels::testing {

struct DeviceFamilyCase {
  std::string name;
  jobs::JobSpec spec;
};

inline jobs::JobSpec device_family_spec(const std::string& arch, nlohmann::json config, int batch, int seq_len) {
  jobs::JobSpec s;
  s.model = "device-test-" + arch;
  s.architecture = arch;
  s.model_config = std::move(config);
  s.batch = batch;
  s.seq_len = seq_len;
  s.seed = 4242;
  return s;
}

inline std::vector<DeviceFamilyCase> device_family_cases() {
  return {
      {"vit", device_family_spec("vision",
                                 {{"image_size", 32}, {"patch", 8}, {"layers", 1}, {"hidden", 32}, {"heads", 2},
                                  {"intermediate", 64}, {"num_classes", 10}},
                                 2, 1)},
      {"detr", device_family_spec("vision",
                                  {{"variant", "detr"}, {"image_size", 32}, {"backbone_width", 8},
                                   {"backbone_depths", {1, 1, 1, 1}}, {"backbone_expansion", 2}, {"hidden", 32},
                                   {"encoder_layers", 1}, {"decoder_layers", 1}, {"heads", 4},
                                   {"intermediate", 64}, {"num_queries", 5}, {"num_classes", 7}},
                                  2, 1)},
      {"whisper", device_family_spec("speech",
                                     {{"style", "whisper"}, {"layers", 1}, {"hidden", 48}, {"heads", 4},
                                      {"intermediate", 96}, {"vocab", 120}, {"n_mels", 16},
                                      {"max_source_positions", 64}, {"max_target_positions", 32},
                                      {"decode_steps", 2}},
                                     2, 10)},
      {"wav2vec2", device_family_spec("speech",
                                      {{"style", "wav2vec2"}, {"layers", 1}, {"hidden", 32}, {"heads", 4},
                                       {"intermediate", 64}, {"conv_dim", 24}, {"pos_conv_kernel", 16},
                                       {"pos_conv_groups", 4}},
                                      2, 12)},
      {"clap", device_family_spec("multimodal",
                                  {{"variant", "clap"}, {"audio_image_size", 32}, {"audio_patch", 4},
                                   {"audio_hidden", 16}, {"audio_depths", {1, 1, 2}}, {"audio_heads", {2, 4, 8}},
                                   {"audio_window", 4}, {"audio_mel_bins", 16}, {"audio_frames", 64},
                                   {"text_layers", 1}, {"text_hidden", 32}, {"text_heads", 2},
                                   {"text_intermediate", 64}, {"vocab", 120}, {"max_positions", 20},
                                   {"projection_dim", 16}},
                                  2, 6)},
      {"unet", device_family_spec("diffusion",
                                  {{"sample_size", 8}, {"in_channels", 4}, {"out_channels", 4},
                                   {"block_channels", {16, 32}}, {"layers_per_block", 1}, {"attention_levels", 1},
                                   {"attention_heads", 2}, {"cross_attention_dim", 24}, {"text_len", 5},
                                   {"norm_groups", 4}, {"steps", 1}},
                                  2, 1)},
      {"mamba", device_family_spec("state-space",
                                   {{"variant", "mamba"}, {"layers", 2}, {"hidden", 64}, {"intermediate", 128},
                                    {"state_size", 8}, {"conv_kernel", 4}, {"dt_rank", 4}, {"vocab", 300},
                                    {"decode_steps", 2}},
                                   2, 6)},
      {"rwkv", device_family_spec("state-space",
                                  {{"variant", "rwkv"}, {"layers", 2}, {"hidden", 64}, {"intermediate", 128},
                                   {"vocab", 300}, {"decode_steps", 2}},
                                  2, 6)},
  };
}

// `release` drops the device's cached weights (the graph's storage is freed after each case).
template <typename Tol>
void expect_families_match_cpu(Backend& be, void (*release)(Backend&)) {
  const ExecContext ctx{KernelPath::kScalar, nullptr};
  CpuBackend cpu(ctx);
  for (const DeviceFamilyCase& c : device_family_cases()) {
    SCOPED_TRACE(c.name);
    release(be);
    Result<std::unique_ptr<ModelGraph>> g = build_graph(c.spec, Precision::kF32, ctx);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    for (const auto& [op, format] : (*g)->required_ops()) {
      EXPECT_TRUE(be.supports(op, format).ok()) << op_name(op);
    }
    Result<GraphOutput> ref = (*g)->run(cpu);
    ASSERT_TRUE(ref.ok()) << ref.status().to_string();
    Result<GraphOutput> out = (*g)->run(be);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_EQ(out->output.numel(), ref->output.numel());
    const AccuracyMetrics m =
        compare_outputs(out->output.data(), ref->output.data(), ref->output.rows(), ref->output.cols());
    EXPECT_EQ(m.nonfinite, 0);
    EXPECT_LE(m.nmse, Tol::kEncoder);
  }
  release(be);
}

}  // namespace am::kernels::testing
