// Internal to the Vulkan backend: the state a VulkanBackend holds (device, device-level ops,
// scratch buffers, weight caches) and the helpers its op files share. Not for use outside
// kernels/vulkan/.
//
// Contract: as VulkanBackend (single-threaded). Weight caches are keyed by the host address of
// the weight (backend.h guarantees weights stay alive and unchanged for the backend's lifetime);
// a Linear whose address is reused by a layer of another shape, format or storage is uploaded
// afresh.
#pragma once

#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/log.h"
#include "kernels/conv_weight_layout.h"
#include "kernels/vulkan/vk_ops.h"
#include "kernels/vulkan/vk_weights.h"
#include "kernels/vulkan/vulkan_backend.h"

namespace am::kernels {
namespace vulkan_detail {

using vulkan::Buffer;
using vulkan::DeviceLinear;
using vulkan::WeightKind;

inline std::size_t float_bytes(int64_t n) { return static_cast<std::size_t>(n) * sizeof(float); }

inline Status same_shape(const char* op, ConstTensorView a, ConstTensorView b) {
  if (a.rows() == b.rows() && a.cols() == b.cols()) return Status::Ok();
  return invalid_argument(std::string(op) + ": shapes differ (" + std::to_string(a.rows()) + "x" +
                          std::to_string(a.cols()) + " vs " + std::to_string(b.rows()) + "x" +
                          std::to_string(b.cols()) + ")");
}

// Codes of activation.comp's `kind`.
inline int activation_code(Activation act) {
  switch (act) {
    case Activation::kGeluErf: return 0;
    case Activation::kGeluTanh: return 1;
    case Activation::kRelu: return 2;
    case Activation::kSilu: return 3;
    case Activation::kSigmoid: return 4;
    case Activation::kQuickGelu: return 5;
  }
  return -1;  // an activation added to the core that this backend has no shader code for
}

// Activation scratch: one grow-only device buffer per role.
enum class Slot { kInput, kOutput, kOperand, kIndices, kKeys, kValues, kAuxiliary, kState, kParams, kCount };

}  // namespace vulkan_detail

using namespace vulkan_detail;

struct VulkanBackend::Impl {
  struct LinearOnDevice {
    // What the upload was made from: a layer at the same address that differs in any of these
    // is a different layer and is uploaded afresh.
    const void* source = nullptr;
    int64_t in = 0;
    int64_t out = 0;
    WeightKind kind = WeightKind::kF32;
    bool has_bias = false;
    DeviceLinear weight;
  };

  explicit Impl(std::unique_ptr<vulkan::VulkanDevice> d) : dev(std::move(d)), ops(*dev) {}
  ~Impl() {
    // Every buffer below is freed right after this: the device must be done with all of them.
    if (Status s = dev->wait_idle(); !s.ok()) get_logger("kernels/vulkan")->warn("{}", s.message());
  }

  std::unique_ptr<vulkan::VulkanDevice> dev;
  vulkan::DeviceOps ops;
  Buffer scratch[static_cast<int>(Slot::kCount)];
  std::unordered_map<const Linear*, LinearOnDevice> linears;
  std::unordered_map<const float*, Buffer> vectors;
  // Convolution weights, rearranged by conv_weight_taps_major() (conv_weight_layout.h).
  struct ConvOnDevice {
    int64_t out = 0, cin_g = 0, taps = 0;
    Buffer weight;
  };
  std::unordered_map<const float*, ConvOnDevice> convs;

  Result<const Buffer*> slot(Slot s, std::size_t bytes) {
    Buffer& b = scratch[static_cast<int>(s)];
    if (!b || b.bytes < bytes) {
      AM_RETURN_IF_ERROR(dev->submit());
      b = Buffer();
      AM_ASSIGN_OR_RETURN(b, dev->create_buffer(bytes));
    }
    return &b;
  }
  Result<const Buffer*> stage(Slot s, const void* host, std::size_t bytes) {
    AM_ASSIGN_OR_RETURN(const Buffer* b, slot(s, bytes));
    AM_RETURN_IF_ERROR(dev->upload(*b, host, bytes));
    return b;
  }
  Result<const Buffer*> weight_vector(const float* host, int64_t count) {
    const std::size_t bytes = float_bytes(count);
    auto it = vectors.find(host);
    if (it != vectors.end() && it->second.bytes >= bytes) return &it->second;
    AM_ASSIGN_OR_RETURN(Buffer b, dev->create_buffer(bytes));
    AM_RETURN_IF_ERROR(dev->upload(b, host, bytes));
    Buffer& slot_ref = vectors[host];
    slot_ref = std::move(b);
    return &slot_ref;
  }
  Result<const Buffer*> conv_weight(const float* host, int64_t out, int64_t cin_g, int64_t taps) {
    auto it = convs.find(host);
    if (it != convs.end() && it->second.out == out && it->second.cin_g == cin_g && it->second.taps == taps) {
      return &it->second.weight;
    }
    const std::vector<float> rearranged = conv_weight_taps_major(host, out, cin_g, taps);
    ConvOnDevice c{out, cin_g, taps, Buffer()};
    AM_ASSIGN_OR_RETURN(c.weight, dev->create_buffer(float_bytes(out * cin_g * taps)));
    AM_RETURN_IF_ERROR(dev->upload(c.weight, rearranged.data(), float_bytes(out * cin_g * taps)));
    // upload() submitted and waited for every recorded command: the old buffer is unused.
    if (it != convs.end()) convs.erase(it);
    auto [slot_it, inserted] = convs.emplace(host, std::move(c));
    return &slot_it->second.weight;
  }
  Result<const DeviceLinear*> weight_linear(const Linear& layer, WeightKind kind) {
    const void* raw = layer.weight_data();
    const bool has_bias = layer.bias_data() != nullptr;
    if (auto it = linears.find(&layer); it != linears.end()) {
      const LinearOnDevice& c = it->second;
      if (c.source == raw && c.kind == kind && c.in == layer.in_features() && c.out == layer.out_features() &&
          c.has_bias == has_bias) {
        return &c.weight;
      }
      AM_RETURN_IF_ERROR(dev->submit());
      linears.erase(it);
    }
    AM_ASSIGN_OR_RETURN(vulkan::PackedWeight packed,
                        vulkan::pack_weight(kind, raw, layer.weight_data_bytes(), layer.out_features(),
                                            layer.in_features()));
    LinearOnDevice d;
    d.source = raw;
    d.in = layer.in_features();
    d.out = layer.out_features();
    d.kind = kind;
    d.has_bias = has_bias;
    AM_ASSIGN_OR_RETURN(d.weight, vulkan::upload_linear(*dev, packed, layer.bias_data()));
    auto [it, inserted] = linears.emplace(&layer, std::move(d));
    return &it->second.weight;
  }
  // attention and attention_bias (bias null for none); args already validated.
  Status attention(const AttentionArgs& a, const float* bias) {
    vulkan::DeviceOps::AttentionShape shape{a.batch, a.q_len, a.kv_len, a.heads, a.kv_heads, a.head_dim,
                                            a.q_offset,
                                            a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim)),
                                            a.causal};
    const std::size_t q_bytes = float_bytes(a.q.numel());
    const std::size_t kv_bytes = float_bytes(a.k.numel());
    const Buffer* mb = nullptr;
    if (a.key_mask != nullptr) {
      AM_ASSIGN_OR_RETURN(mb, stage(Slot::kIndices, a.key_mask, static_cast<std::size_t>(a.batch * a.kv_len) * sizeof(int32_t)));
    }
    const Buffer* bb = nullptr;
    if (bias != nullptr) {
      AM_ASSIGN_OR_RETURN(bb, stage(Slot::kAuxiliary, bias, float_bytes(a.q_len * a.kv_len * a.heads)));
    }
    AM_ASSIGN_OR_RETURN(const Buffer* qb, stage(Slot::kInput, a.q.data, q_bytes));
    AM_ASSIGN_OR_RETURN(const Buffer* kb, stage(Slot::kKeys, a.k.data, kv_bytes));
    AM_ASSIGN_OR_RETURN(const Buffer* vb, stage(Slot::kValues, a.v.data, kv_bytes));
    AM_ASSIGN_OR_RETURN(const Buffer* ob, slot(Slot::kOutput, q_bytes));
    AM_RETURN_IF_ERROR(ops.attention(shape, *qb, *kb, *vb, mb, bb, *ob));
    return dev->download(*ob, a.out.data, q_bytes);
  }
  Status elementwise(uint32_t op, const char* name, TensorView y, ConstTensorView a) {
    AM_RETURN_IF_ERROR(same_shape(name, a, y));
    const int64_t n = y.numel();
    if (n == 0) return Status::Ok();
    AM_ASSIGN_OR_RETURN(const Buffer* yb, stage(Slot::kOutput, y.data, float_bytes(n)));
    AM_ASSIGN_OR_RETURN(const Buffer* ab, stage(Slot::kOperand, a.data, float_bytes(n)));
    AM_RETURN_IF_ERROR(ops.binary(*yb, *ab, n, op));
    return dev->download(*yb, y.data, float_bytes(n));
  }
};

}  // namespace am::kernels
