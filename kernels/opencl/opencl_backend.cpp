#include "kernels/opencl/opencl_backend.h"

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/opencl/backend_impl.h"

namespace am::kernels {

using opencl::DeviceRuntime;
using opencl::KernelId;
using opencl::ScratchSlot;
using namespace opencl_detail;

namespace {

// The matmul kernel for a weight format; `one_row`: the variant computing one row of x per
// work-item (for inputs with fewer rows than kMatmulRows, e.g. a decode step).
KernelId matmul_kernel(DeviceWeight w, bool one_row) {
  switch (w) {
    case DeviceWeight::kF32: return one_row ? KernelId::kMatmulF32R1 : KernelId::kMatmulF32;
    case DeviceWeight::kF16: return one_row ? KernelId::kMatmulF16R1 : KernelId::kMatmulF16;
    case DeviceWeight::kBF16: return one_row ? KernelId::kMatmulBF16R1 : KernelId::kMatmulBF16;
    case DeviceWeight::kQ8_0: return one_row ? KernelId::kMatmulQ8_0R1 : KernelId::kMatmulQ8_0;
    case DeviceWeight::kQ4_0: return one_row ? KernelId::kMatmulQ4_0R1 : KernelId::kMatmulQ4_0;
    case DeviceWeight::kQ4_1: return one_row ? KernelId::kMatmulQ4_1R1 : KernelId::kMatmulQ4_1;
    case DeviceWeight::kQ2_K: return one_row ? KernelId::kMatmulQ2KR1 : KernelId::kMatmulQ2K;
    case DeviceWeight::kQ3_K: return one_row ? KernelId::kMatmulQ3KR1 : KernelId::kMatmulQ3K;
  }
  return KernelId::kMatmulF32;
}

// Codes of the activation kernel's `kind` argument (see cl_kernels.cpp).
int32_t activation_code(Activation act) {
  switch (act) {
    case Activation::kGeluErf: return 0;
    case Activation::kGeluTanh: return 1;
    case Activation::kRelu: return 2;
    case Activation::kSilu: return 3;
    case Activation::kSigmoid: return 4;
    case Activation::kQuickGelu: return 5;
  }
  return -1;  // an activation added to the core that this backend has no kernel for
}

}  // namespace

Result<std::unique_ptr<OpenClBackend>> OpenClBackend::create(const opencl::OpenClDevice& device,
                                                             const OpenClBackendOptions& options) {
  AM_ASSIGN_OR_RETURN(DeviceRuntime rt, DeviceRuntime::create(device, options.column_matmul));
  return std::unique_ptr<OpenClBackend>(
      new OpenClBackend(std::make_unique<Impl>(std::move(rt), options)));
}

OpenClBackend::OpenClBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OpenClBackend::~OpenClBackend() = default;

const opencl::OpenClDevice& OpenClBackend::device() const { return impl_->rt.device(); }

std::string OpenClBackend::device_name() const {
  const opencl::OpenClDevice& d = impl_->rt.device();
  return d.name + " (" + d.platform_name + ")";
}

void OpenClBackend::release_cached_weights() {
  (void)impl_->rt.finish();
  impl_->linears.clear();
  impl_->vectors.clear();
  impl_->convs.clear();
}

std::size_t OpenClBackend::cached_weight_bytes() const {
  std::size_t total = 0;
  for (const auto& [key, l] : impl_->linears) total += l.bytes;
  for (const auto& [key, v] : impl_->vectors) total += v.bytes;
  for (const auto& [key, c] : impl_->convs) total += c.bytes;
  return total;
}

Status OpenClBackend::supports(Op op, WeightFormat format) const {
  return supports_on({device().name, impl_->fp16, impl_->options.f16_without_extension}, op, format);
}

Status OpenClBackend::supports_on(const OpenClTraits& device, Op op, WeightFormat format) {
  switch (op) {
    case Op::kGatherRows:
    case Op::kLayerNorm:
    case Op::kRmsNorm:
    case Op::kActivation:
    case Op::kAdd:
    case Op::kMul:
    case Op::kSoftmax:
    case Op::kAttention:
    case Op::kAttentionBias:
    case Op::kRope:
    case Op::kIndexRows:
    case Op::kScatterAddRows:
    case Op::kTopK:
    case Op::kMatmulNt:
    case Op::kGlobalAvgPool:
    case Op::kConv1d:
    case Op::kConv2d:
    case Op::kGroupNorm:
    case Op::kPool2d:
    case Op::kSelectiveScan:
    case Op::kTimeMix:
    case Op::kFmaChain:
      return Status::Ok();
    case Op::kLinear:
      break;
    default:
      // Ops added to the seam after this backend was written inherit the base class's answer.
      return unsupported_op_on(kName, op);
  }
  const std::optional<DeviceWeight> kind = device_weight_for(format);
  if (!kind) {
    return unsupported_op_on(kName, op, std::string(weight_format_name(format)) + " weights");
  }
  if (*kind == DeviceWeight::kF16 && !device.fp16 && !device.f16_without_extension) {
    return unsupported("precision f16 needs cl_khr_fp16 on device " + device.name);
  }
  return Status::Ok();
}

Status OpenClBackend::linear(const Linear& layer, ConstTensorView x, TensorView y) {
  if (x.cols() != layer.in_features() || y.cols() != layer.out_features() || x.rows() != y.rows()) {
    return invalid_argument("linear: x is " + std::to_string(x.rows()) + "x" + std::to_string(x.cols()) +
                            ", y is " + std::to_string(y.rows()) + "x" + std::to_string(y.cols()) +
                            ", layer is " + std::to_string(layer.in_features()) + "->" +
                            std::to_string(layer.out_features()));
  }
  AM_RETURN_IF_ERROR(supports(Op::kLinear, layer.format()));
  const DeviceWeight kind = *device_weight_for(layer.format());
  const int64_t m = x.rows();
  const int64_t n = layer.out_features();
  const int64_t k = layer.in_features();
  if (m == 0 || n == 0) return Status::Ok();
  if (m > kMaxKernelIndex || n > kMaxKernelIndex || k > kMaxKernelIndex) {
    return unsupported_op(Op::kLinear, "dimensions beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(const Impl::LinearOnDevice* w, im.weight_linear(layer, kind));
    // bf16 rounds the activations in place: on a copy, never on a resident tensor.
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, x.data, float_bytes(m * k), kind == DeviceWeight::kBF16));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(m * n), false));
    cl_mem ybuf = yo.buffer;
    const int group = im.rt.config().matmul_group;
    const int64_t np = padded_columns(n);
    const bool one_row = m < opencl::kMatmulRows;
    const int64_t rows_per_item = one_row ? 1 : opencl::kMatmulRows;
    // Float weights on the column variant: one output column per work-item.
    const bool column = im.rt.config().column_matmul && !is_block_format(kind);
    const std::size_t global[2] = {round_up(column ? np : np / opencl::kMatmulColumns, group),
                                   static_cast<std::size_t>((m + rows_per_item - 1) / rows_per_item)};
    const std::size_t local[2] = {static_cast<std::size_t>(group), 1};
    const int32_t has_bias = w->bias ? 1 : 0;
    auto launch = im.rt.kernel(matmul_kernel(kind, one_row));
    if (!is_block_format(kind)) {
      if (kind == DeviceWeight::kBF16) {
        auto round = im.rt.kernel(KernelId::kRoundBF16);
        round.mem(xbuf).i32(static_cast<int32_t>(m * k));
        AM_RETURN_IF_ERROR(im.launch_flat(m * k, round));
      }
      launch.mem(xbuf).mem(w->values.get()).mem(w->bias.get()).i32(has_bias).mem(ybuf)
          .i32(static_cast<int32_t>(m)).i32(static_cast<int32_t>(n)).i32(static_cast<int32_t>(np))
          .i32(static_cast<int32_t>(k));
    } else {
      // Activations to q8 blocks (of 32; of 256 with 16-value sums for the k-quants), then the
      // block products.
      const bool k_quant = is_k_quant(kind);
      const int64_t block = k_quant ? opencl::kKQuantBlock : opencl::kQuantBlock;
      const int64_t blocks = (k + block - 1) / block;
      const std::size_t nblocks = static_cast<std::size_t>(m * blocks);
      const std::size_t sums = k_quant ? static_cast<std::size_t>(block / opencl::kKQuantSumGroup) : 1;
      if (m * blocks * block > kMaxKernelIndex) return unsupported_op(Op::kLinear, "sizes beyond 2^31-1");
      AM_ASSIGN_OR_RETURN(cl_mem xq, im.scratch.get(ScratchSlot::kQuantValues,
                                                    nblocks * static_cast<std::size_t>(block)));
      AM_ASSIGN_OR_RETURN(cl_mem xd, im.scratch.get(ScratchSlot::kQuantScales, nblocks * sizeof(float)));
      AM_ASSIGN_OR_RETURN(cl_mem xs, im.scratch.get(ScratchSlot::kQuantSums, nblocks * sums * sizeof(int32_t)));
      if (blocks > 0) {
        auto quantize = im.rt.kernel(k_quant ? KernelId::kQuantizeQ8K : KernelId::kQuantizeQ8);
        quantize.mem(xbuf).mem(xq).mem(xd).mem(xs).i32(static_cast<int32_t>(k))
            .i32(static_cast<int32_t>(blocks));
        AM_RETURN_IF_ERROR(im.launch_2d(blocks, m, quantize));
      }
      launch.mem(xq).mem(xd).mem(xs).mem(w->values.get()).mem(w->scales.get()).mem(w->mins.get())
          .mem(w->bias.get()).i32(has_bias).mem(ybuf).i32(static_cast<int32_t>(m))
          .i32(static_cast<int32_t>(n)).i32(static_cast<int32_t>(np)).i32(static_cast<int32_t>(blocks));
    }
    AM_RETURN_IF_ERROR(launch.run(im.rt.queue(), 2, global, local));
    return im.finish(yo);
  });
}

Status OpenClBackend::gather_rows(ConstTensorView table, const int32_t* ids, int64_t n, TensorView y,
                                  bool accumulate) {
  if (y.rows() != n || y.cols() != table.cols()) {
    return invalid_argument("gather_rows: output must be [n, table cols]");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= table.rows()) {
      return invalid_argument("gather_rows: id " + std::to_string(ids[i]) + " at " + std::to_string(i) +
                              " is outside [0, " + std::to_string(table.rows()) + ")");
    }
  }
  const int64_t cols = table.cols();
  if (n == 0 || cols == 0) return Status::Ok();
  if (n > kMaxKernelIndex || cols > kMaxKernelIndex) {
    return unsupported_op(Op::kGatherRows, "dimensions beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem tbuf, im.weight_vector(table.data, table.numel()));
    AM_ASSIGN_OR_RETURN(cl_mem ibuf, im.host_input(ScratchSlot::kIndices, ids, int_bytes(n)));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(n * cols), accumulate));
    auto launch = im.rt.kernel(KernelId::kGatherRows);
    launch.mem(tbuf).mem(ibuf).mem(yo.buffer).i32(static_cast<int32_t>(cols)).i32(accumulate ? 1 : 0);
    AM_RETURN_IF_ERROR(im.launch_2d(cols, n, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::layer_norm(ConstTensorView x, const float* gamma, const float* beta, float eps,
                                 TensorView y) {
  AM_RETURN_IF_ERROR(same_shape("layer_norm", x, y));
  const int64_t rows = x.rows();
  const int64_t cols = x.cols();
  if (rows == 0 || cols == 0) return Status::Ok();
  if (rows > kMaxKernelIndex || cols > kMaxKernelIndex) {
    return unsupported_op(Op::kLayerNorm, "dimensions beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem gbuf, im.weight_vector(gamma, cols));
    cl_mem bbuf = nullptr;
    if (beta != nullptr) {
      AM_ASSIGN_OR_RETURN(bbuf, im.weight_vector(beta, cols));
    }
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, x.data, float_bytes(rows * cols)));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(rows * cols), false));
    auto launch = im.rt.kernel(KernelId::kLayerNorm);
    launch.mem(xbuf).mem(gbuf).mem(bbuf).i32(beta != nullptr ? 1 : 0).f32(eps)
        .i32(static_cast<int32_t>(cols)).mem(yo.buffer);
    AM_RETURN_IF_ERROR(im.launch_rows(rows, im.rt.config().row_group, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::rms_norm(ConstTensorView x, const float* gamma, float eps, TensorView y) {
  AM_RETURN_IF_ERROR(same_shape("rms_norm", x, y));
  const int64_t rows = x.rows();
  const int64_t cols = x.cols();
  if (rows == 0 || cols == 0) return Status::Ok();
  if (rows > kMaxKernelIndex || cols > kMaxKernelIndex) {
    return unsupported_op(Op::kRmsNorm, "dimensions beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem gbuf, im.weight_vector(gamma, cols));
    AM_ASSIGN_OR_RETURN(cl_mem xbuf, im.input(ScratchSlot::kInput, x.data, float_bytes(rows * cols)));
    AM_ASSIGN_OR_RETURN(Impl::Out yo, im.output(ScratchSlot::kOutput, y.data, float_bytes(rows * cols), false));
    auto launch = im.rt.kernel(KernelId::kRmsNorm);
    launch.mem(xbuf).mem(gbuf).f32(eps).i32(static_cast<int32_t>(cols)).mem(yo.buffer);
    AM_RETURN_IF_ERROR(im.launch_rows(rows, im.rt.config().row_group, launch));
    return im.finish(yo);
  });
}

Status OpenClBackend::activation(Activation act, TensorView x) {
  const int32_t kind = activation_code(act);
  if (kind < 0) return unsupported_op(Op::kActivation, activation_name(act));
  const int64_t n = x.numel();
  if (n == 0) return Status::Ok();
  if (n > kMaxKernelIndex) return unsupported_op(Op::kActivation, "more than 2^31-1 elements");
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(Impl::Out o, im.output(ScratchSlot::kOutput, x.data, float_bytes(n), true));
    auto launch = im.rt.kernel(KernelId::kActivation);
    launch.mem(o.buffer).i32(kind).i32(static_cast<int32_t>(n));
    AM_RETURN_IF_ERROR(im.launch_flat(n, launch));
    return im.finish(o);
  });
}

Status OpenClBackend::add(TensorView y, ConstTensorView a) {
  return impl_->elementwise(KernelId::kAdd, "add", y, a);
}

Status OpenClBackend::mul(TensorView y, ConstTensorView a) {
  return impl_->elementwise(KernelId::kMul, "mul", y, a);
}

Status OpenClBackend::softmax(TensorView x) {
  const int64_t rows = x.rows();
  const int64_t cols = x.cols();
  if (rows == 0 || cols == 0) return Status::Ok();
  if (rows > kMaxKernelIndex || cols > kMaxKernelIndex) {
    return unsupported_op(Op::kSoftmax, "dimensions beyond 2^31-1");
  }
  Impl& im = *impl_;
  return im.run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(Impl::Out o, im.output(ScratchSlot::kOutput, x.data, float_bytes(rows * cols), true));
    auto launch = im.rt.kernel(KernelId::kSoftmax);
    launch.mem(o.buffer).i32(static_cast<int32_t>(cols));
    AM_RETURN_IF_ERROR(im.launch_rows(rows, im.rt.config().row_group, launch));
    return im.finish(o);
  });
}

Status OpenClBackend::attention(const AttentionArgs& a) {
  AM_RETURN_IF_ERROR(validate_attention_args(a));
  return impl_->attention(a, nullptr, Op::kAttention, *this);
}

Status OpenClBackend::Impl::attention(const AttentionArgs& a, const float* bias, Op op,
                                      const OpenClBackend& self) {
  const int64_t groups = a.batch * a.heads * a.q_len;
  const int group_size = rt.config().attention_group;
  if (groups > kMaxKernelIndex || a.k.numel() > kMaxKernelIndex || a.q.numel() > kMaxKernelIndex ||
      a.q_offset > kMaxKernelIndex || a.q_len * a.kv_len * a.heads > kMaxKernelIndex) {
    return self.unsupported_op(op, "sizes beyond 2^31-1");
  }
  const float scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  return run([&]() -> Status {
    const std::size_t q_bytes = float_bytes(a.q.numel());
    const std::size_t kv_bytes = float_bytes(a.k.numel());
    cl_mem mbuf = nullptr;
    if (a.key_mask != nullptr) {
      AM_ASSIGN_OR_RETURN(mbuf, host_input(ScratchSlot::kIndices, a.key_mask, int_bytes(a.batch * a.kv_len)));
    }
    cl_mem bbuf = nullptr;
    if (bias != nullptr) {
      AM_ASSIGN_OR_RETURN(bbuf, input(ScratchSlot::kAuxiliary, bias, float_bytes(a.q_len * a.kv_len * a.heads)));
    }
    AM_ASSIGN_OR_RETURN(cl_mem qbuf, input(ScratchSlot::kInput, a.q.data, q_bytes));
    AM_ASSIGN_OR_RETURN(cl_mem kbuf, input(ScratchSlot::kKeys, a.k.data, kv_bytes));
    AM_ASSIGN_OR_RETURN(cl_mem vbuf, input(ScratchSlot::kValues, a.v.data, kv_bytes));
    AM_ASSIGN_OR_RETURN(Out oo, output(ScratchSlot::kOutput, a.out.data, q_bytes, false));
    cl_mem obuf = oo.buffer;
    auto launch = rt.kernel(KernelId::kAttention);
    launch.mem(qbuf).mem(kbuf).mem(vbuf).mem(obuf).mem(mbuf).i32(a.key_mask != nullptr ? 1 : 0)
        .mem(bbuf).i32(bias != nullptr ? 1 : 0)
        .i32(static_cast<int32_t>(a.q_len)).i32(static_cast<int32_t>(a.kv_len))
        .i32(static_cast<int32_t>(a.heads)).i32(static_cast<int32_t>(a.kv_heads))
        .i32(static_cast<int32_t>(a.head_dim)).f32(scale).i32(a.causal ? 1 : 0)
        .i32(static_cast<int32_t>(a.q_offset));
    AM_RETURN_IF_ERROR(launch_rows(groups, group_size, launch));
    return finish(oo);
  });
}

Tensor OpenClBackend::tensor(Shape shape) { return Impl::Resident::make_tensor(impl_->resident, shape); }

Status OpenClBackend::to_host(ConstTensorView v) {
  Impl& im = *impl_;
  return im.resident->to_host(v.data, float_bytes(v.numel()), im.counts, [&](Impl::Entry& e) -> Status {
    AM_RETURN_IF_ERROR(im.rt.read(e.buffer.get(), const_cast<float*>(e.data), e.bytes));
    im.drained();
    return Status::Ok();
  });
}

Status OpenClBackend::from_host(ConstTensorView v) {
  Impl& im = *impl_;
  return im.resident->from_host(v.data, float_bytes(v.numel()), im.counts,
                                [&](Impl::Entry& e, const void* p, std::size_t bytes, std::size_t offset) {
                                  return im.rt.write_now(e.buffer.get(), p, bytes, offset);
                                });
}

TransferCounts OpenClBackend::transfers() const { return impl_->counts; }

Status OpenClBackend::synchronize() {
  Impl& im = *impl_;
  AM_RETURN_IF_ERROR(im.rt.finish());
  im.drained();
  return Status::Ok();
}

std::vector<DeviceKernelTime> OpenClBackend::take_device_profile() { return impl_->rt.take_profile(); }

Result<std::unique_ptr<Backend>> make_opencl_backend() {
  AM_ASSIGN_OR_RETURN(opencl::OpenClDevice device, opencl::select_opencl_device());
  AM_ASSIGN_OR_RETURN(std::unique_ptr<OpenClBackend> backend, OpenClBackend::create(device));
  return std::unique_ptr<Backend>(std::move(backend));
}

}  // namespace am::kernels
