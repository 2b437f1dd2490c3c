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
#include "kernels/resident_tensors.h"
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

  using Resident = ResidentTensors<Buffer>;
  using Entry = Resident::Entry;

  explicit Impl(std::unique_ptr<vulkan::VulkanDevice> d)
      : dev(std::move(d)), ops(*dev), resident(std::make_shared<Resident>()) {}
  ~Impl() {
    // Tensors that outlive the backend become plain host memory: bring back what only the
    // device holds.
    resident->release_device_buffers([this](Entry& e) { return dev->download(e.buffer, const_cast<float*>(e.data), e.bytes); });
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

  std::shared_ptr<Resident> resident;
  TransferCounts counts;

  // An op's output: the buffer the shader writes and, for a resident tensor, where it lands.
  struct Out {
    const Buffer* buffer = nullptr;
    Entry* entry = nullptr;  // null: a plain host tensor, downloaded by finish()
    std::size_t offset = 0;  // into entry->buffer
    void* host = nullptr;
    std::size_t bytes = 0;
  };

  // Device state of a resident tensor before an op reads it (or writes part of it).
  Status make_current(Entry& e) {
    AM_RETURN_IF_ERROR(resident->verify(e));
    if (e.state == Resident::State::kBoth || e.state == Resident::State::kDevice) return Status::Ok();
    AM_RETURN_IF_ERROR(ensure_buffer(e));
    if (e.state == Resident::State::kFresh) {
      AM_RETURN_IF_ERROR(dev->fill_zero(e.buffer.get(), e.bytes));
    } else {
      AM_RETURN_IF_ERROR(dev->upload(e.buffer, e.data, e.bytes));
      ++counts.tensor_uploads;
      counts.tensor_upload_bytes += static_cast<int64_t>(e.bytes);
    }
    resident->both_current(e);
    return Status::Ok();
  }
  Status ensure_buffer(Entry& e) {
    if (e.buffer || resident->reuse_buffer(e)) return Status::Ok();
    AM_ASSIGN_OR_RETURN(e.buffer, dev->create_buffer(e.bytes));
    e.capacity = e.bytes;
    return Status::Ok();
  }
  // A float activation the op reads: a resident tensor's own buffer (a row range not at its
  // start is copied on the device into slot s), else the host bytes uploaded into slot s.
  Result<const Buffer*> input(Slot s, const float* host, std::size_t bytes) {
    Entry* e = resident->find(host, bytes);
    if (e == nullptr) {
      ++counts.plain_uploads;
      counts.plain_upload_bytes += static_cast<int64_t>(bytes);
      if (bytes <= vulkan::kHostInputMaxBytes) return dev->host_input(host, bytes);
      return stage(s, host, bytes);
    }
    AM_RETURN_IF_ERROR(make_current(*e));
    resident->note_input(host, bytes);
    const std::size_t off = Resident::offset_of(*e, host);
    if (off == 0) return &e->buffer;
    AM_ASSIGN_OR_RETURN(const Buffer* b, slot(s, bytes));
    AM_RETURN_IF_ERROR(dev->copy(e->buffer.get(), b->get(), bytes, off, 0));
    ++counts.device_copies;
    return b;
  }
  // int32 ids, masks and positions, and per-call float parameters: always from the host, into
  // a host-visible buffer of their own (no wait for the recorded work), or staged when large.
  Result<const Buffer*> host_input(Slot s, const void* host, std::size_t bytes) {
    ++counts.index_uploads;
    counts.index_upload_bytes += static_cast<int64_t>(bytes);
    if (bytes <= vulkan::kHostInputMaxBytes) return dev->host_input(host, bytes);
    return stage(s, host, bytes);
  }
  // An op's output; `reads`: the op reads it first (accumulates or works in place).
  Result<Out> output(Slot s, float* host, std::size_t bytes, bool reads) {
    Out o;
    o.host = host;
    o.bytes = bytes;
    o.entry = resident->find(host, bytes);
    if (o.entry == nullptr) {
      if (reads) {
        ++counts.plain_uploads;
        counts.plain_upload_bytes += static_cast<int64_t>(bytes);
        AM_ASSIGN_OR_RETURN(o.buffer, stage(s, host, bytes));
      } else {
        AM_ASSIGN_OR_RETURN(o.buffer, slot(s, bytes));
      }
      return o;
    }
    Entry& e = *o.entry;
    o.offset = Resident::offset_of(e, host);
    if (Resident::output_needs_current(e, bytes, reads)) {
      AM_RETURN_IF_ERROR(make_current(e));
    } else {
      AM_RETURN_IF_ERROR(resident->verify(e));
      AM_RETURN_IF_ERROR(ensure_buffer(e));
    }
    if (resident->output_in_place(e, host, bytes)) {
      o.buffer = &e.buffer;
      return o;
    }
    AM_ASSIGN_OR_RETURN(o.buffer, slot(s, bytes));
    if (reads) {
      AM_RETURN_IF_ERROR(dev->copy(e.buffer.get(), o.buffer->get(), bytes, o.offset, 0));
      ++counts.device_copies;
    }
    return o;
  }
  // After the op is recorded: a resident output now lives on the device (copied there from
  // scratch when it went through one); a plain one is downloaded.
  Status finish(const Out& o) {
    resident->end_op();
    if (o.entry == nullptr) {
      ++counts.plain_downloads;
      counts.plain_download_bytes += static_cast<int64_t>(o.bytes);
      AM_RETURN_IF_ERROR(dev->download(*o.buffer, o.host, o.bytes));
      idle();  // the download waited for everything recorded
      return Status::Ok();
    }
    if (o.buffer != &o.entry->buffer) {
      AM_RETURN_IF_ERROR(dev->copy(o.buffer->get(), o.entry->buffer.get(), o.bytes, 0, o.offset));
      ++counts.device_copies;
    }
    resident->device_wrote(*o.entry);
    if (!dev->pending()) idle();
    return Status::Ok();
  }
  // Between ops with nothing recorded: buffers of freed tensors and of host inputs are free.
  void idle() {
    resident->recycle();
    dev->recycle_host_inputs();
  }

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
  void count_weight(std::size_t bytes) {
    ++counts.weight_uploads;
    counts.weight_upload_bytes += static_cast<int64_t>(bytes);
  }
  Result<const Buffer*> weight_vector(const float* host, int64_t count) {
    const std::size_t bytes = float_bytes(count);
    auto it = vectors.find(host);
    if (it != vectors.end() && it->second.bytes >= bytes) return &it->second;
    AM_ASSIGN_OR_RETURN(Buffer b, dev->create_buffer(bytes));
    AM_RETURN_IF_ERROR(dev->upload(b, host, bytes));
    count_weight(bytes);
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
    count_weight(float_bytes(out * cin_g * taps));
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
    count_weight(d.weight.bytes);
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
      AM_ASSIGN_OR_RETURN(mb, host_input(Slot::kIndices, a.key_mask, static_cast<std::size_t>(a.batch * a.kv_len) * sizeof(int32_t)));
    }
    const Buffer* bb = nullptr;
    if (bias != nullptr) {
      AM_ASSIGN_OR_RETURN(bb, input(Slot::kAuxiliary, bias, float_bytes(a.q_len * a.kv_len * a.heads)));
    }
    AM_ASSIGN_OR_RETURN(const Buffer* qb, input(Slot::kInput, a.q.data, q_bytes));
    AM_ASSIGN_OR_RETURN(const Buffer* kb, input(Slot::kKeys, a.k.data, kv_bytes));
    AM_ASSIGN_OR_RETURN(const Buffer* vb, input(Slot::kValues, a.v.data, kv_bytes));
    AM_ASSIGN_OR_RETURN(Out o, output(Slot::kOutput, a.out.data, q_bytes, false));
    AM_RETURN_IF_ERROR(ops.attention(shape, *qb, *kb, *vb, mb, bb, *o.buffer));
    return finish(o);
  }
  Status elementwise(uint32_t op, const char* name, TensorView y, ConstTensorView a) {
    AM_RETURN_IF_ERROR(same_shape(name, a, y));
    const int64_t n = y.numel();
    if (n == 0) return Status::Ok();
    AM_ASSIGN_OR_RETURN(const Buffer* ab, input(Slot::kOperand, a.data, float_bytes(n)));
    AM_ASSIGN_OR_RETURN(Out o, output(Slot::kOutput, y.data, float_bytes(n), true));
    AM_RETURN_IF_ERROR(ops.binary(*o.buffer, *ab, n, op));
    return finish(o);
  }
};

}  // namespace am::kernels
