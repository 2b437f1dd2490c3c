#include "kernels/opencl/backend_impl.h"

#include <string>
#include <utility>
#include <vector>

#include "common/log.h"
#include "kernels/conv_weight_layout.h"
#include "kernels/opencl/weight_repack.h"

namespace am::kernels {

using opencl::ClBuffer;
using opencl::KernelId;
using opencl::ScratchSlot;

namespace opencl_detail {

std::optional<DeviceWeight> device_weight_for(WeightFormat format) {
  switch (format) {
    case WeightFormat::kF32:
      return DeviceWeight::kF32;
    case WeightFormat::kF16:
      return DeviceWeight::kF16;
    case WeightFormat::kBF16:
      return DeviceWeight::kBF16;
    case WeightFormat::kQ8_0:
      return DeviceWeight::kQ8_0;
    case WeightFormat::kQ4_0:
      return DeviceWeight::kQ4_0;
    case WeightFormat::kQ4_1:
      return DeviceWeight::kQ4_1;
    case WeightFormat::kQ2_K:
      return DeviceWeight::kQ2_K;
    case WeightFormat::kQ3_K:
      return DeviceWeight::kQ3_K;
  }
  return std::nullopt;
}

bool is_block_format(DeviceWeight w) {
  return w == DeviceWeight::kQ8_0 || w == DeviceWeight::kQ4_0 || w == DeviceWeight::kQ4_1 || is_k_quant(w);
}

bool is_k_quant(DeviceWeight w) { return w == DeviceWeight::kQ2_K || w == DeviceWeight::kQ3_K; }

Status same_shape(const char* op, ConstTensorView a, ConstTensorView b) {
  if (a.rows() == b.rows() && a.cols() == b.cols()) return Status::Ok();
  return invalid_argument(std::string(op) + ": shapes differ (" + std::to_string(a.rows()) + "x" +
                          std::to_string(a.cols()) + " vs " + std::to_string(b.rows()) + "x" +
                          std::to_string(b.cols()) + ")");
}

}  // namespace opencl_detail

using namespace opencl_detail;

namespace {

constexpr const char* kFp16Extension = "cl_khr_fp16";

// Bytes per stored value of the float formats.
std::size_t float_format_bytes(DeviceWeight w) {
  return w == DeviceWeight::kF32 ? sizeof(float) : sizeof(uint16_t);
}

}  // namespace

OpenClBackend::Impl::Impl(opencl::DeviceRuntime runtime, const OpenClBackendOptions& opts)
    : rt(std::move(runtime)),
      scratch(rt.context(), rt.device().max_alloc_bytes),
      fp16(rt.device().has_extension(kFp16Extension)),
      options(opts) {}

OpenClBackend::Impl::~Impl() {
  // Queued transfers may still read host memory or write pooled buffers; drain before freeing.
  if (Status s = rt.finish(); !s.ok()) get_logger("kernels/opencl")->warn("{}", s.message());
}

Result<ClBuffer> OpenClBackend::Impl::upload(const void* host, std::size_t bytes) {
  return opencl::create_buffer(rt.context(), bytes, rt.device().max_alloc_bytes, host);
}

Result<cl_mem> OpenClBackend::Impl::weight_vector(const float* host, int64_t count) {
  const std::size_t bytes = float_bytes(count);
  auto it = vectors.find(host);
  if (it != vectors.end() && it->second.bytes >= bytes) return it->second.buffer.get();
  VectorOnDevice v;
  AM_ASSIGN_OR_RETURN(v.buffer, upload(host, bytes));
  v.bytes = bytes;
  cl_mem mem = v.buffer.get();
  vectors[host] = std::move(v);
  return mem;
}

Result<cl_mem> OpenClBackend::Impl::conv_weight(const float* host, int64_t out, int64_t cin_g, int64_t taps) {
  auto it = convs.find(host);
  if (it != convs.end() && it->second.out == out && it->second.cin_g == cin_g && it->second.taps == taps) {
    return it->second.buffer.get();
  }
  const std::vector<float> rearranged = conv_weight_taps_major(host, out, cin_g, taps);
  ConvOnDevice c;
  c.out = out;
  c.cin_g = cin_g;
  c.taps = taps;
  c.bytes = float_bytes(out * cin_g * taps);
  AM_ASSIGN_OR_RETURN(c.buffer, upload(rearranged.data(), c.bytes));
  cl_mem mem = c.buffer.get();
  convs[host] = std::move(c);  // a replaced buffer is freed once the kernels queued on it are done
  return mem;
}

Result<cl_mem> OpenClBackend::Impl::stage(ScratchSlot slot, const void* host, std::size_t bytes) {
  AM_ASSIGN_OR_RETURN(cl_mem buf, scratch.get(slot, bytes));
  AM_RETURN_IF_ERROR(rt.write(buf, host, bytes));
  return buf;
}

Result<const OpenClBackend::Impl::LinearOnDevice*> OpenClBackend::Impl::weight_linear(
  const Linear& layer, DeviceWeight kind) {
  const int64_t rows = layer.out_features();
  const int64_t cols = layer.in_features();
  const void* raw = layer.weight_data();
  if (auto it = linears.find(&layer); it != linears.end()) {
    const LinearOnDevice& c = it->second;
    if (c.source == raw && c.kind == kind && c.in == cols && c.out == rows &&
        static_cast<bool>(c.bias) == (layer.bias_data() != nullptr)) {
      return &c;
    }
    linears.erase(it);
  }
  LinearOnDevice d;
  d.source = raw;
  d.in = cols;
  d.out = rows;
  d.kind = kind;
  const std::size_t raw_bytes = layer.weight_data_bytes();
  if (!is_block_format(kind)) {
    const std::size_t expected = static_cast<std::size_t>(rows * cols) * float_format_bytes(kind);
    if (raw_bytes != expected) {
      return invalid_argument("opencl: linear weight holds " + std::to_string(raw_bytes) +
                              " bytes, expected " + std::to_string(expected));
    }
    AM_ASSIGN_OR_RETURN(std::vector<uint8_t> t,
                        opencl::transpose_float_weight(raw, raw_bytes, rows, cols,
                                                       padded_columns(rows), float_format_bytes(kind)));
    AM_ASSIGN_OR_RETURN(d.values, upload(t.data(), t.size()));
    d.bytes = t.size();
  } else {
    const int64_t np = padded_columns(rows);
    Result<opencl::RepackedBlocks> repacked =
        kind == DeviceWeight::kQ8_0   ? opencl::repack_q8_0(raw, raw_bytes, rows, cols, np)
        : kind == DeviceWeight::kQ4_0 ? opencl::repack_q4_0(raw, raw_bytes, rows, cols, np)
        : kind == DeviceWeight::kQ4_1 ? opencl::repack_q4_1(raw, raw_bytes, rows, cols, np)
        : kind == DeviceWeight::kQ2_K ? opencl::repack_q2_k(raw, raw_bytes, rows, cols, np)
                                      : opencl::repack_q3_k(raw, raw_bytes, rows, cols, np);
    AM_RETURN_IF_ERROR(repacked.status());
    const opencl::RepackedBlocks& r = *repacked;
    AM_ASSIGN_OR_RETURN(d.values, upload(r.values.data(), r.values.size()));
    AM_ASSIGN_OR_RETURN(d.scales, upload(r.scales.data(), r.scales.size() * sizeof(float)));
    d.bytes = r.values.size() + r.scales.size() * sizeof(float);
    if (!r.mins.empty()) {
      AM_ASSIGN_OR_RETURN(d.mins, upload(r.mins.data(), r.mins.size() * sizeof(float)));
      d.bytes += r.mins.size() * sizeof(float);
    }
  }
  if (const float* bias = layer.bias_data(); bias != nullptr) {
    AM_ASSIGN_OR_RETURN(d.bias, upload(bias, float_bytes(rows)));
    d.bytes += float_bytes(rows);
  }
  auto [it, inserted] = linears.emplace(&layer, std::move(d));
  return &it->second;
}

Status OpenClBackend::Impl::launch_rows(int64_t rows, int group, opencl::KernelLaunch& k) {
  const std::size_t global = static_cast<std::size_t>(rows) * static_cast<std::size_t>(group);
  const std::size_t local = static_cast<std::size_t>(group);
  return k.run(rt.queue(), 1, &global, &local);
}

// Element-wise launches use whole work-groups of the row-group size (rounded-up work-items
// return at once): left to itself a driver may pick a work-group of 1 for a prime size.
Status OpenClBackend::Impl::launch_flat(int64_t n, opencl::KernelLaunch& k) {
  const int64_t group = rt.config().row_group;
  const std::size_t global = round_up(n, group);
  const std::size_t local = static_cast<std::size_t>(group);
  return k.run(rt.queue(), 1, &global, &local);
}

Status OpenClBackend::Impl::launch_2d(int64_t d0, int64_t d1, opencl::KernelLaunch& k) {
  const int64_t group = rt.config().row_group;
  const std::size_t global[2] = {round_up(d0, group), static_cast<std::size_t>(d1)};
  const std::size_t local[2] = {static_cast<std::size_t>(group), 1};
  return k.run(rt.queue(), 2, global, local);
}

Status OpenClBackend::Impl::elementwise(KernelId id, const char* op, TensorView y, ConstTensorView a) {
  AM_RETURN_IF_ERROR(same_shape(op, a, y));
  const int64_t n = y.numel();
  if (n == 0) return Status::Ok();
  if (n > kMaxKernelIndex) {
    return unsupported(std::string("op ") + op +
                       " (more than 2^31-1 elements) not implemented on backend opencl");
  }
  return run([&]() -> Status {
    AM_ASSIGN_OR_RETURN(cl_mem ybuf, scratch.get(ScratchSlot::kOutput, float_bytes(n)));
    AM_ASSIGN_OR_RETURN(cl_mem abuf, scratch.get(ScratchSlot::kOperand, float_bytes(n)));
    AM_RETURN_IF_ERROR(rt.write(ybuf, y.data, float_bytes(n)));
    AM_RETURN_IF_ERROR(rt.write(abuf, a.data, float_bytes(n)));
    auto launch = rt.kernel(id);
    launch.mem(ybuf).mem(abuf).i32(static_cast<int32_t>(n));
    AM_RETURN_IF_ERROR(launch_flat(n, launch));
    return rt.read(ybuf, y.data, float_bytes(n));
  });
}

}  // namespace am::kernels
