// The transformer stack shared by the text-generating families (decoder-only, encoder-decoder,
// speech, mixture-of-experts, rag): a configurable run of layers plus the seeded-weight and
// config-reading helpers those families build it with.
//
// Contract:
//   - StackConfig describes one stack: width, heads (grouped-query via kv_heads, head_dim may
//     differ from hidden/heads as in T5), norm kind and placement (pre-LN: LLaMA, GPT-2, T5,
//     Whisper; post-LN: BART, Wav2Vec2-base), positions applied inside attention (RoPE or T5's
//     relative bias buckets), causal self-attention with a KV cache, optional cross-attention,
//     a dense feed-forward (MLP or gated) or a mixture-of-experts feed-forward in every
//     `moe_every`-th layer, and the initialisation scales of the family.
//   - TransformerStack::create() draws every weight from a SeededWeights source in a fixed
//     order, so values depend only on (config, seed); linear weights are stored in the format a
//     FormatPlan gives their TensorRole (attention / feed-forward / other), everything else f32.
//   - forward() runs the layers in place on x [batch*q_len, hidden] through a Backend only.
//     Without a cache it is an encoder pass (keys = the same q_len positions, `key_mask`
//     optional). With a cache it appends this step's keys/values at positions
//     [offset, offset+q_len) and attends causally over everything cached so far: prefill is
//     offset 0, decode steps follow one position at a time. Cross-attention reads the memory
//     projected once by precompute_cross().
//   - Immutable after creation; forward() on distinct caches is safe concurrently. Allocation
//     failure throws std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kernels/cpu/activation.h"
#include "kernels/backend.h"
#include "kernels/models/config_reader.h"
#include "kernels/models/format_plan.h"
#include "kernels/models/seeded_weights.h"
#include "kernels/exec_context.h"
#include "kernels/cpu/linear.h"
#include "kernels/cpu/rope.h"
#include "kernels/tensor.h"
#include "kernels/formats/weight_format.h"

namespace am::kernels {

enum class NormKind { kLayer, kRms };
enum class FfnKind { kMlp, kGated };
enum class PositionKind { kNone, kRope, kRelativeBias };

struct InitScales {
  float q = 0.02f, kv = 0.02f, o = 0.02f, ffn_in = 0.02f, ffn_out = 0.02f, router = 0.02f;
  float bias = 0.0f;        // stddev of linear biases (0 = zero biases, as most families init)
  float norm_noise = 0.02f; // gamma ~ N(1, noise), beta ~ N(0, noise)
};

struct StackConfig {
  std::string family;
  int64_t layers = 0, hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0;
  NormKind norm = NormKind::kRms;
  float eps = 1e-6f;
  bool pre_norm = true;
  bool final_norm = true;
  FfnKind ffn = FfnKind::kGated;
  Activation activation = Activation::kSilu;
  bool q_bias = false, k_bias = false, v_bias = false, o_bias = false, ffn_bias = false;
  bool causal = false;
  bool cross = false;
  PositionKind positions = PositionKind::kNone;
  RopeParams rope;                      // heads/head_dim filled by create()
  int64_t rel_buckets = 32, rel_max_distance = 128;
  float attn_scale = 0.0f;              // 0 = 1/sqrt(head_dim); T5 uses 1
  int64_t experts = 0;                  // 0 = dense feed-forward everywhere
  int64_t experts_per_token = 1;
  int64_t moe_every = 1;                // layer i is MoE when experts > 0 and i % moe_every == moe_every-1
  bool router_renormalize = true;       // Mixtral: yes; Switch: keep the top-1 probability
  InitScales init;
};

// Every weight of a dense self-attention stack as f32 tensors in the reference (PyTorch) layout:
// linear weights [out, in], biases [out] (empty where the config has none), norm gamma/beta
// [hidden] (beta empty for RMSNorm). The exchange format with checkpoints (kernels/weights/).
// A mixture-of-experts layer (experts > 0 and the layer is one of every moe_every) has no dense
// feed-forward: its router [experts, hidden] (no bias) and one feed-forward per expert instead.
struct StackFfnTensors {
  Tensor gate_w, gate_b, up_w, up_b, down_w, down_b;  // gate only for gated feed-forwards
};
struct StackLayerTensors {
  Tensor norm_self_g, norm_self_b, norm_ffn_g, norm_ffn_b;
  Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
  // Cross-attention (config.cross only): its norm and projections, with the self-attention's biases.
  Tensor norm_cross_g, norm_cross_b;
  Tensor cross_q_w, cross_q_b, cross_k_w, cross_k_b, cross_v_w, cross_v_b, cross_o_w, cross_o_b;
  Tensor gate_w, gate_b, up_w, up_b, down_w, down_b;  // gate only for gated feed-forwards
  Tensor router_w;                      // mixture-of-experts layers only
  std::vector<StackFfnTensors> experts;  // mixture-of-experts layers only
};
struct StackTensors {
  std::vector<StackLayerTensors> layers;
  Tensor final_g, final_b;  // empty without a final norm
  Tensor rel_table;         // [rel_buckets, heads] for relative-bias stacks (T5), shared by every layer
};

// Per-run state of a stack: the self-attention KV cache and the projected cross memory.
struct StackCache {
  int64_t batch = 0;
  int64_t max_len = 0;
  std::vector<Tensor> k, v;             // per layer [batch*max_len, kv_heads*head_dim]
  int64_t src_len = 0;
  const int32_t* src_mask = nullptr;    // batch*src_len or null
  std::vector<Tensor> cross_k, cross_v; // per layer [batch*src_len, heads*head_dim]
};

class TransformerStack {
 public:
  static Result<TransformerStack> create(StackConfig config, const FormatPlan& formats, SeededWeights& src);
  // A stack over given f32 tensors (kernels/models/transformer_stack_tensors.cpp): shapes are
  // checked against `config` (InvalidArgument naming layer and tensor), linear weights stored in
  // the format `formats` gives their role, exactly as create() stores seeded ones (the router in
  // formats.other).
  static Result<TransformerStack> from_tensors(StackConfig config, const FormatPlan& formats, StackTensors tensors,
                                               const ExecContext& ctx);
  // Copies of every weight as f32 (the inverse of from_tensors()); FailedPrecondition unless
  // every linear weight is f32.
  Result<StackTensors> tensors() const;
  // Stored bytes the stack would take, without creating it.
  static std::size_t estimate_bytes(const StackConfig& config, const FormatPlan& formats);

  const StackConfig& config() const { return config_; }
  std::size_t weights_bytes() const;
  void add_required_ops(std::vector<std::pair<Op, WeightFormat>>& ops) const;

  // Cache tensors are be.tensor()s (resident on a device backend).
  StackCache make_cache(Backend& be, int64_t batch, int64_t max_len) const;
  // Projects `memory` [batch*src_len, memory cols = hidden] into every layer's cross keys/values.
  Status precompute_cross(Backend& be, ConstTensorView memory, int64_t batch, int64_t src_len,
                          const int32_t* src_mask, StackCache& cache) const;
  Status forward(Backend& be, TensorView x, int64_t batch, int64_t q_len, int64_t offset,
                 StackCache* cache, const int32_t* key_mask) const;

 private:
  struct Attn {
    Linear q, k, v, o;
  };
  struct Ffn {
    Linear gate, up, down;  // gate only for gated feed-forwards
  };
  struct Layer {
    Tensor norm_self_g, norm_self_b, norm_cross_g, norm_cross_b, norm_ffn_g, norm_ffn_b;
    Attn self, cross;
    bool moe = false;
    Ffn ffn;
    Linear router;
    std::vector<Ffn> experts;
  };
  struct Scratch;

  Status norm(Backend& be, ConstTensorView x, const Tensor& g, const Tensor& b, TensorView y) const;
  Status run_ffn(Backend& be, const Ffn& f, ConstTensorView x, TensorView y, Scratch& s) const;
  Status run_moe(Backend& be, const Layer& l, ConstTensorView x, TensorView y, Scratch& s) const;
  Status relative_bias(Backend& be, int64_t q_len, int64_t kv_len, int64_t offset, Tensor& bias) const;
  int32_t relative_bucket(int64_t relative) const;

  StackConfig config_;
  std::vector<Layer> layers_;
  Tensor rel_table_;       // [buckets, heads] for relative-bias stacks
  Tensor final_g_, final_b_;
};

}  // namespace am::kernels
