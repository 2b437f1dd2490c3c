// Element-wise activations of feed-forward layers.
//
// Contract: activation_from_name() maps Hugging Face config names to an Activation:
//   "gelu" (the exact erf form BERT uses), "gelu_tanh" / "gelu_new" / "gelu_pytorch_tanh" (the
//   tanh approximation), "relu", "silu", "sigmoid", "quick_gelu"; any other name is Unsupported with the name in the message.
// apply_activation() works in place, rows split over ctx.pool. Pure and thread-safe.
#pragma once

#include <cmath>
#include <string_view>

#include "common/status.h"
#include "kernels/exec_context.h"
#include "kernels/tensor.h"

namespace am::kernels {

enum class Activation { kGeluErf, kGeluTanh, kRelu, kSilu, kSigmoid, kQuickGelu };

std::string_view activation_name(Activation act);

Result<Activation> activation_from_name(std::string_view name);

// 0.5 x (1 + erf(x / sqrt(2)))
inline float gelu_erf(float x) {
  constexpr float kInvSqrt2 = 0.70710678118654752440f;
  return 0.5f * x * (1.0f + std::erf(x * kInvSqrt2));
}

// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
inline float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  constexpr float kCubic = 0.044715f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x)));
}

// x * sigmoid(x), the SwiGLU gate of LLaMA-family feed-forwards.
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

// 1 / (1 + e^-x): RWKV receptance gates, DETR box coordinates.
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// x * sigmoid(1.702 x), the GELU approximation of OpenAI CLIP ("quick_gelu").
inline float quick_gelu(float x) { return x * sigmoid(1.702f * x); }

void apply_activation(Activation act, TensorView x, const ExecContext& ctx);

}  // namespace am::kernels
