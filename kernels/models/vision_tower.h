// The ViT image tower shared by the vision-side families (ViT/DeiT classification, CLIP and
// X-CLIP image encoders, the ViT-GPT2 captioner's encoder, LLaVA's vision tower), plus the small
// helpers those graphs share.
//
// Contract:
//   - VitTower: patch embedding as a conv2d with kernel = stride = patch (weight
//     [hidden, channels, patch, patch] with fan-in scaling, f32 like every convolution), then
//     `extra_tokens` learned tokens (class, plus distillation for DeiT) in front of the patches,
//     learned position embeddings added (gather_rows), an optional LayerNorm before the encoder
//     (CLIP's pre_layrnorm), and a pre-LN transformer encoder (TransformerStack: LayerNorm, GELU
//     MLP, biased projections) with an optional final LayerNorm. forward() maps seeded pixels
//     [batch*image*image, channels] (channels-last) to hidden states [batch*tokens, hidden],
//     tokens = extra_tokens + (image/patch)^2, through a Backend only.
//   - vit_tower_config_from() reads `<prefix>image_size`, `<prefix>patch`, `<prefix>channels`
//     (default 3), `<prefix>layers`, `<prefix>hidden`, `<prefix>heads`, `<prefix>intermediate`,
//     `<prefix>activation` (default "gelu"), `<prefix>norm_eps` (default 1e-12 / as given);
//     image_size must be a multiple of patch.
//   - Weights depend only on (config, seed) through the SeededWeights source they are drawn from.
//   - Immutable after creation; forward() is safe concurrently. bad_alloc on allocation failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/models/transformer_stack.h"

namespace am::kernels {

struct VitTowerConfig {
  std::string family;
  int64_t image_size = 0, patch = 0, channels = 3;
  int64_t hidden = 0, layers = 0, heads = 0, intermediate = 0;
  Activation activation = Activation::kGeluErf;
  float eps = 1e-12f;
  int64_t extra_tokens = 1;
  bool pre_norm = false;    // LayerNorm after the embeddings (CLIP)
  bool final_norm = true;   // LayerNorm after the last layer (ViT's layernorm)

  int64_t patches() const { return (image_size / patch) * (image_size / patch); }
  int64_t tokens() const { return extra_tokens + patches(); }
};

Result<VitTowerConfig> vit_tower_config_from(const ConfigReader& cfg, const std::string& prefix,
                                             const std::string& family, float default_eps);

// The TransformerStack configuration of a ViT-style encoder (pre-LN, LayerNorm, GELU MLP, biases).
StackConfig vit_stack_config(const std::string& family, int64_t layers, int64_t hidden, int64_t heads,
                             int64_t intermediate, Activation act, float eps, bool final_norm);

// Every weight of a VitTower as f32: patch conv [hidden, channels, patch, patch] + bias [hidden],
// extra tokens [extra_tokens, hidden], positions [tokens, hidden], pre-norm pair (CLIP) or empty,
// and the encoder stack (StackTensors).
struct VitTowerTensors {
  Tensor patch_w, patch_b, extra, positions, pre_g, pre_b;
  StackTensors stack;
};

// The embedding half of a ViT tower (patch convolution, extra tokens in front, learned
// positions, the optional pre-encoder LayerNorm), shared with towers that run their own layers
// (X-CLIP's cross-frame layers).
struct VitEmbedding {
  Tensor patch_w, patch_b, extra, positions, pre_g, pre_b;
  std::size_t bytes() const {
    return patch_w.bytes() + patch_b.bytes() + extra.bytes() + positions.bytes() + pre_g.bytes() + pre_b.bytes();
  }
};
// pixels [batch*image*image, channels] -> token states [batch*tokens, hidden] before the encoder.
Result<Tensor> vit_embed(Backend& be, const VitTowerConfig& c, const VitEmbedding& e, ConstTensorView pixels,
                         int64_t batch);

class VitTower {
 public:
  static Result<VitTower> create(const VitTowerConfig& config, const FormatPlan& formats, SeededWeights& src);
  // A tower over given f32 tensors (checkpoints): shapes checked against `config`
  // (InvalidArgument naming the tensor), linear weights stored as create() stores seeded ones.
  static Result<VitTower> from_tensors(const VitTowerConfig& config, const FormatPlan& formats, VitTowerTensors tensors,
                                       const ExecContext& ctx);
  static std::size_t estimate_bytes(const VitTowerConfig& config, const FormatPlan& formats);

  const VitTowerConfig& config() const { return config_; }
  std::size_t weights_bytes() const;
  void add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const;
  // pixels [batch*image*image, channels] -> [batch*tokens, hidden].
  Result<Tensor> forward(Backend& be, ConstTensorView pixels, int64_t batch) const;

 private:
  VitTowerConfig config_;
  VitEmbedding embedding_;     // patch conv [hidden, channels, patch, patch] + [hidden], extra
                               // tokens [extra_tokens, hidden], positions [tokens, hidden], pre-norm
  TransformerStack stack_;
};

// Seeded images: N(0, 1) pixels (normalised images), [batch*image*image, channels].
Tensor seeded_pixels(int64_t batch, int64_t image, int64_t channels, uint64_t seed, uint64_t stream,
                     const ExecContext& ctx);

// y[i] = x[i*stride + offset] for i < count (e.g. the class token of every sample) via index_rows.
Status take_rows(Backend& be, ConstTensorView x, int64_t stride, int64_t offset, TensorView y);

// y[r] += table[r / rows_per_group] for every row (a per-sample vector broadcast over the
// sample's rows) via index_rows and add; `table` may be an activation.
Status add_per_group(Backend& be, ConstTensorView table, int64_t rows_per_group, TensorView y);

// Copies the activation rows `src` into [dst_row, dst_row + src.rows()) of dst (concatenation
// of token sequences) through the backend (index_rows), so resident tensors stay on the device.
Status copy_rows(Backend& be, ConstTensorView src, TensorView dst, int64_t dst_row);
// The same for rows of a weight (a learned token, a table): gather_rows, so a device backend
// uploads the weight once and not per run.
Status copy_weight_rows(Backend& be, ConstTensorView weight, TensorView dst, int64_t dst_row);
// Host copy of rows, for building weights at load time (no backend involved).
void host_copy_rows(ConstTensorView src, TensorView dst, int64_t dst_row);

// Adds an op to a required-ops list unless already present.
void require(std::vector<std::pair<Op, WeightFormat>>& ops, Op op, WeightFormat f = WeightFormat::kF32);

// L2-normalises rows in place via rms_norm (x / rms(x) / sqrt(cols) = x / |x|): gamma filled with
// 1/sqrt(cols), kept by the caller for the backend's lifetime.
Tensor l2_norm_gamma(int64_t cols);

}  // namespace am::kernels
