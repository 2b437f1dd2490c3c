// Residency cases every device backend must pass (backend.h, "Residency"), run by each
// backend's test file with a factory of fresh backends that have the checks on
// (resident_tensors.h): a whole encoder and a whole decoder forward move only their inputs and
// outputs; row ranges, in-place ops and aliased operands of resident tensors give the cpu's
// values; the checks catch a host access that skips to_host()/from_host(); a resident tensor
// that outlives its backend keeps what only the device held.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/accuracy.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/models/model.h"
#include "kernels/resident_tensors.h"
#include "kernels/rng.h"
#include "tests/kernels/device_family_cases.h"
#include "tests/kernels/named_formats.h"
#include "tests/kernels/tiny_family_configs.h"

namespace am::kernels::testing {

using BackendFactory = std::function<std::unique_ptr<Backend>()>;

inline ExecContext residency_scalar_context() { return ExecContext{KernelPath::kScalar, nullptr}; }

inline void fill_seeded(Tensor& t, uint64_t seed) {
  fill_normal(t.data(), t.numel(), 0.0f, 1.0f, seed, residency_scalar_context());
}

inline double residency_nmse(const Tensor& got, const Tensor& want) {
  return compare_outputs(got.data(), want.data(), want.rows(), want.cols()).nmse;
}

inline jobs::JobSpec bert_spec() {
  jobs::JobSpec spec;
  spec.model = "bert-residency";
  spec.architecture = "encoder-only";
  spec.model_config = {{"layers", 2},         {"hidden", 64},      {"heads", 2},
                       {"intermediate", 128}, {"vocab", 400},      {"max_positions", 32},
                       {"type_vocab", 2},     {"norm_eps", 1e-12}, {"activation", "gelu"}};
  spec.batch = 2;
  spec.seq_len = 16;
  spec.seed = 99;
  return spec;
}

// The whole BERT forward on the device: the second run uploads no weight and no activation,
// copies no plain tensor in or out, and downloads exactly the output, once.
inline void expect_encoder_forward_moves_only_inputs_and_output(const BackendFactory& make, const std::string& backend,
                                                                double tolerance) {
  for (const char* precision : {"f32", "q8_0"}) {
    SCOPED_TRACE(precision);
    std::unique_ptr<Backend> be = make();
    ASSERT_NE(be, nullptr);
    ExecContext device_ctx = residency_scalar_context();
    device_ctx.cpu_weights = false;
    jobs::JobSpec spec = bert_spec();
    spec.backend = backend;
    Result<std::unique_ptr<ModelGraph>> graph = build_graph(spec, precision_named(precision), device_ctx);
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    Result<std::unique_ptr<ModelGraph>> reference = build_graph(bert_spec(), precision_named(precision), residency_scalar_context());
    ASSERT_TRUE(reference.ok()) << reference.status().message();
    CpuBackend cpu(residency_scalar_context());
    Result<GraphOutput> want = (*reference)->run(cpu);
    ASSERT_TRUE(want.ok()) << want.status().message();

    Result<GraphOutput> first = (*graph)->run(*be);
    ASSERT_TRUE(first.ok()) << first.status().message();
    const TransferCounts before = be->transfers();
    Result<GraphOutput> second = (*graph)->run(*be);
    ASSERT_TRUE(second.ok()) << second.status().message();
    const TransferCounts d = be->transfers() - before;

    EXPECT_LE(residency_nmse(second->output, want->output), tolerance);
    EXPECT_EQ(residency_nmse(first->output, second->output), 0.0);
    EXPECT_EQ(d.weight_uploads, 0);
    EXPECT_EQ(d.tensor_uploads, 0);
    EXPECT_EQ(d.plain_uploads, 0);
    EXPECT_EQ(d.plain_downloads, 0);
    EXPECT_EQ(d.tensor_downloads, 1);
    EXPECT_EQ(d.tensor_download_bytes, static_cast<int64_t>(second->output.bytes()));
    // Token ids, position ids, token types and the attention mask (per layer) are the inputs.
    EXPECT_GT(d.index_uploads, 0);
  }
}

// A LLaMA-style decoder with its KV cache (prefill, then teacher-forced decode steps): on the
// second run nothing but each step's logits comes back (a sampler needs them before the next
// step), and the keys and values stay in the device-resident cache.
inline void expect_decoder_forward_downloads_only_each_steps_logits(const BackendFactory& make,
                                                                   const std::string& backend, double tolerance) {
  std::unique_ptr<Backend> be = make();
  ASSERT_NE(be, nullptr);
  jobs::JobSpec spec = bert_spec();
  spec.backend = backend;
  spec.model = "llama-residency";
  spec.architecture = "decoder-only";
  constexpr int kSteps = 3;
  spec.model_config = {{"style", "llama"},   {"layers", 2},           {"hidden", 64},
                       {"heads", 4},         {"kv_heads", 2},         {"intermediate", 96},
                       {"vocab", 300},       {"max_positions", 64},   {"rope_theta", 10000.0},
                       {"norm_eps", 1e-5},   {"activation", "silu"},  {"decode_steps", kSteps}};
  spec.seq_len = 12;
  ExecContext device_ctx = residency_scalar_context();
  device_ctx.cpu_weights = false;
  Result<std::unique_ptr<ModelGraph>> graph = build_graph(spec, Precision::kF32, device_ctx);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  Result<std::unique_ptr<ModelGraph>> reference = build_graph(spec, Precision::kF32, residency_scalar_context());
  ASSERT_TRUE(reference.ok()) << reference.status().message();
  CpuBackend cpu(residency_scalar_context());
  Result<GraphOutput> want = (*reference)->run(cpu);
  ASSERT_TRUE(want.ok()) << want.status().message();

  ASSERT_TRUE((*graph)->run(*be).ok());
  const TransferCounts before = be->transfers();
  Result<GraphOutput> got = (*graph)->run(*be);
  ASSERT_TRUE(got.ok()) << got.status().message();
  const TransferCounts d = be->transfers() - before;
  EXPECT_LE(residency_nmse(got->output, want->output), tolerance);
  EXPECT_EQ(d.weight_uploads, 0);
  EXPECT_EQ(d.tensor_uploads, 0);
  EXPECT_EQ(d.plain_uploads, 0);
  EXPECT_EQ(d.plain_downloads, 0);
  EXPECT_EQ(d.tensor_downloads, kSteps + 1);
  EXPECT_EQ(d.tensor_download_bytes, static_cast<int64_t>(got->output.bytes()));
}

// Row ranges (device copies), an in-place LayerNorm, y += y, an accumulating gather and an
// activation on resident tensors: the cpu's values, with no plain copy.
inline void expect_row_ranges_in_place_ops_and_aliases_give_the_cpus_values(const BackendFactory& make,
                                                                            double norm_tol, double transcendental_tol) {
  std::unique_ptr<Backend> be = make();
  ASSERT_NE(be, nullptr);
  CpuBackend cpu(residency_scalar_context());
  constexpr int64_t kRows = 7, kCols = 48;

  Tensor table(Shape{11, kCols}), gamma(Shape{kCols}), beta(Shape{kCols});
  fill_seeded(table, 1);
  fill_seeded(gamma, 2);
  fill_seeded(beta, 3);
  const std::vector<int32_t> ids = {3, 0, 10, 7, 7, 1, 5};

  auto program = [&](Backend& b, Tensor& x, Tensor& y) -> Status {
    AM_RETURN_IF_ERROR(b.gather_rows(table.view(), ids.data(), kRows, x.view(), false));
    AM_RETURN_IF_ERROR(b.gather_rows(table.view(), ids.data(), kRows, x.view(), true));
    AM_RETURN_IF_ERROR(b.layer_norm(x.view(), gamma.data(), beta.data(), 1e-5f, x.view()));  // in place
    AM_RETURN_IF_ERROR(b.add(x.view(), x.view()));                                           // aliased
    // Rows 2..5 of x into rows 1..4 of y: both are ranges inside resident tensors.
    AM_RETURN_IF_ERROR(b.index_rows(x.view().row_range(2, 4), std::vector<int32_t>{3, 2, 1, 0}.data(), 4,
                                    y.view().row_range(1, 4)));
    AM_RETURN_IF_ERROR(b.activation(Activation::kGeluErf, y.view().row_range(1, 4)));
    return b.mul(y.view(), x.view());
  };

  Tensor cx(Shape{kRows, kCols}), cy(Shape{kRows, kCols});
  ASSERT_TRUE(program(cpu, cx, cy).ok());
  Tensor x = be->tensor(Shape{kRows, kCols}), y = be->tensor(Shape{kRows, kCols});
  const TransferCounts before = be->transfers();
  Status s = program(*be, x, y);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(be->to_host(x.view()).ok());
  ASSERT_TRUE(be->to_host(y.view()).ok());
  const TransferCounts d = be->transfers() - before;
  EXPECT_LE(residency_nmse(x, cx), norm_tol);
  EXPECT_LE(residency_nmse(y, cy), transcendental_tol);
  EXPECT_EQ(d.plain_uploads, 0);
  EXPECT_EQ(d.plain_downloads, 0);
  EXPECT_EQ(d.tensor_uploads, 0);  // fresh tensors are zero-filled on the device
  EXPECT_EQ(d.tensor_downloads, 2);
  EXPECT_GT(d.device_copies, 0);
}

// from_host() of part of a resident tensor reaches the device; a write without it, or a read
// without to_host(), is caught by the checks instead of giving wrong numbers quietly.
inline void expect_host_access_without_the_sync_calls_caught(const BackendFactory& make) {
  std::unique_ptr<Backend> be = make();
  ASSERT_NE(be, nullptr);
  Tensor x = be->tensor(Shape{4, 8}), one = be->tensor(Shape{4, 8});
  for (int64_t i = 0; i < one.numel(); ++i) one.data()[i] = 1.0f;
  ASSERT_TRUE(be->from_host(one.view()).ok());
  ASSERT_TRUE(be->add(x.view(), one.view()).ok());   // x = 1 on the device
  EXPECT_TRUE(std::isnan(x.data()[0]));              // the host copy is stale, and says so

  x.data()[5] = 7.0f;  // a write the device does not hear of
  Status s = be->add(x.view(), one.view());
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("from_host"), std::string::npos) << s.message();

  // The same write announced: it lands on the device, the other elements keep theirs.
  Tensor z = be->tensor(Shape{4, 8});
  ASSERT_TRUE(be->add(z.view(), one.view()).ok());
  ASSERT_TRUE(be->to_host(z.view()).ok());
  EXPECT_EQ(z.data()[0], 1.0f);
  z.data()[5] = 7.0f;
  ASSERT_TRUE(be->from_host(z.view().row_range(0, 1)).ok());
  ASSERT_TRUE(be->add(z.view(), one.view()).ok());
  ASSERT_TRUE(be->to_host(z.view()).ok());
  EXPECT_EQ(z.data()[5], 8.0f);
  EXPECT_EQ(z.data()[0], 2.0f);
  EXPECT_EQ(z.data()[31], 2.0f);
}

// A resident tensor that outlives its backend keeps the values only the device held.
inline void expect_tensor_outliving_its_backend_keeps_the_devices_values(const BackendFactory& make) {
  Tensor x;
  {
    std::unique_ptr<Backend> be = make();
    ASSERT_NE(be, nullptr);
    x = be->tensor(Shape{3, 5});
    Tensor one = be->tensor(Shape{3, 5});
    for (int64_t i = 0; i < one.numel(); ++i) one.data()[i] = 1.5f;
    ASSERT_TRUE(be->from_host(one.view()).ok());
    ASSERT_TRUE(be->add(x.view(), one.view()).ok());
  }
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(x.data()[i], 1.5f) << i;
}

// The text and multimodal families' tiny configurations (tiny_family_configs.h), beside the
// device family cases: encoder-decoder, mixture-of-experts, RAG, LLaVA, CLIP, the ViT-GPT2
// captioner and X-CLIP.
inline std::vector<DeviceFamilyCase> text_family_cases() {
  return {{"t5", device_family_spec("encoder-decoder", tiny_t5(), 2, 9)},
          {"mixtral", device_family_spec("mixture-of-experts", tiny_mixtral(), 2, 6)},
          {"rag", device_family_spec("rag", tiny_rag(), 2, 5)},
          {"llava", device_family_spec("multimodal", tiny_llava(1), 2, 6)},
          {"clip", device_family_spec("vision-encoder-text-decoder", tiny_clip(), 2, 8)},
          {"captioner", device_family_spec("vision-encoder-text-decoder", tiny_captioner(), 2, 5)},
          {"xclip", device_family_spec("multimodal", tiny_xclip(), 2, 8)}};
}

// The family cases written on resident tensors: all of them.
inline bool family_is_resident(const std::string& name) {
  for (const char* f : {"vit", "detr", "whisper", "wav2vec2", "clap", "unet", "mamba", "rwkv", "t5", "mixtral", "rag",
                        "llava", "clip", "captioner", "xclip"}) {
    if (name == f) return true;
  }
  return false;
}

// A second run of every family of device_family_cases() (the first uploads the weights): no
// weight is uploaded again, and a resident family uploads at most its one input tensor (pixels,
// mel frames or audio; token ids are index uploads), copies no plain tensor out, and downloads
// exactly its output's bytes (in one piece, or per decode step's logits), plus initial states
// it writes on the host (RWKV's); MoE routing and RAG retrieval also read their top-k decisions.
inline void expect_every_family_moves_only_inputs_and_outputs(const BackendFactory& make, const std::string& backend) {
  std::vector<DeviceFamilyCase> all = device_family_cases();
  for (DeviceFamilyCase& c : text_family_cases()) all.push_back(std::move(c));
  for (const DeviceFamilyCase& c : all) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Backend> be = make();
    ASSERT_NE(be, nullptr);
    ExecContext ctx = residency_scalar_context();
    ctx.cpu_weights = false;
    jobs::JobSpec spec = c.spec;
    spec.backend = backend;
    Result<std::unique_ptr<ModelGraph>> g = build_graph(spec, Precision::kF32, ctx);
    ASSERT_TRUE(g.ok()) << g.status().to_string();
    ASSERT_TRUE((*g)->run(*be).ok());
    const TransferCounts before = be->transfers();
    Result<GraphOutput> out = (*g)->run(*be);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    const TransferCounts d = be->transfers() - before;
    EXPECT_EQ(d.weight_uploads, 0);
    std::printf("%-10s plain up %lld down %lld, tensor up %lld down %lld (%lld of %zu bytes)\n", c.name.c_str(),
                static_cast<long long>(d.plain_uploads), static_cast<long long>(d.plain_downloads),
                static_cast<long long>(d.tensor_uploads), static_cast<long long>(d.tensor_downloads),
                static_cast<long long>(d.tensor_download_bytes), out->output.bytes());
    if (!family_is_resident(c.name)) continue;
    // The UNet's latent and text conditioning and CLAP's mel frames are tensor() inputs (the
    // latent uploaded again after each scheduler step on the host); the others' inputs are plain
    // tensors. CLAP's shifted-window biases are built at load time and go with each attention
    // call, as attention_bias's bias does (backend.h: an activation, not a cached weight).
    if (c.name != "clap") EXPECT_LE(d.plain_uploads, 1);
    if (c.name == "mixtral" || c.name == "rag") {
      // Routing and retrieval read their top-k on the host (ids and weights per decision).
      EXPECT_EQ(d.plain_downloads % 2, 0);
    } else {
      EXPECT_EQ(d.plain_downloads, 0);
    }
    EXPECT_LE(d.tensor_uploads, c.name == "unet" ? 4 : 2);
    EXPECT_EQ(d.tensor_download_bytes, static_cast<int64_t>(out->output.bytes()));
  }
}

}  // namespace am::kernels::testing
