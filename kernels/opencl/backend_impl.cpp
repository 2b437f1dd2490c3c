#include "kernels/opencl/backend_impl.h"

#include <cstring>
#include <memory>
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
  // Tensors that outlive the backend become plain host memory: bring back what only the device
  // holds.
  resident->release_device_buffers(
      [this](Entry& e) { return rt.read(e.buffer.get(), const_cast<float*>(e.data), e.bytes); });
  // Queued transfers may still read host memory or write pooled buffers; drain before freeing.
  if (Status s = rt.finish(); !s.ok()) get_logger("kernels/opencl")->warn("{}", s.message());
}

Status OpenClBackend::Impl::queued_write(cl_mem dst, const void* host, std::size_t bytes) {
  if (bytes == 0) return Status::Ok();
  auto copy = std::make_unique<uint8_t[]>(bytes);
  std::memcpy(copy.get(), host, bytes);
  AM_RETURN_IF_ERROR(rt.write(dst, copy.get(), bytes));
  pending_host.push_back(std::move(copy));
  return Status::Ok();
}

Status OpenClBackend::Impl::ensure_buffer(Entry& e) {
  if (e.buffer || resident->reuse_buffer(e)) return Status::Ok();
  AM_ASSIGN_OR_RETURN(e.buffer, opencl::create_buffer(rt.context(), e.bytes, rt.device().max_alloc_bytes));
  e.capacity = e.bytes;
  return Status::Ok();
}

Status OpenClBackend::Impl::make_current(Entry& e) {
  AM_RETURN_IF_ERROR(resident->verify(e));
  if (e.state == Resident::State::kBoth || e.state == Resident::State::kDevice) return Status::Ok();
  AM_RETURN_IF_ERROR(ensure_buffer(e));
  if (e.state == Resident::State::kFresh) {
    AM_RETURN_IF_ERROR(rt.fill_zero(e.buffer.get(), e.bytes));
  } else {
    // Blocking: the host may write the tensor again once it is current on both sides.
    AM_RETURN_IF_ERROR(rt.write_now(e.buffer.get(), e.data, e.bytes));
    ++counts.tensor_uploads;
    counts.tensor_upload_bytes += static_cast<int64_t>(e.bytes);
  }
  resident->both_current(e);
  return Status::Ok();
}

Result<cl_mem> OpenClBackend::Impl::input(ScratchSlot slot, const float* host, std::size_t bytes, bool private_copy) {
  Entry* e = resident->find(host, bytes);
  if (e == nullptr) {
    ++counts.plain_uploads;
    counts.plain_upload_bytes += static_cast<int64_t>(bytes);
    AM_ASSIGN_OR_RETURN(cl_mem buf, scratch.get(slot, bytes));
    AM_RETURN_IF_ERROR(queued_write(buf, host, bytes));
    return buf;
  }
  AM_RETURN_IF_ERROR(make_current(*e));
  resident->note_input(host, bytes);
  const std::size_t off = Resident::offset_of(*e, host);
  if (off == 0 && !private_copy) return e->buffer.get();
  AM_ASSIGN_OR_RETURN(cl_mem buf, scratch.get(slot, bytes));
  AM_RETURN_IF_ERROR(rt.copy(e->buffer.get(), buf, bytes, off, 0));
  ++counts.device_copies;
  return buf;
}

Result<cl_mem> OpenClBackend::Impl::host_input(ScratchSlot slot, const void* host, std::size_t bytes) {
  ++counts.index_uploads;
  counts.index_upload_bytes += static_cast<int64_t>(bytes);
  AM_ASSIGN_OR_RETURN(cl_mem buf, scratch.get(slot, bytes));
  AM_RETURN_IF_ERROR(queued_write(buf, host, bytes));
  return buf;
}

Result<OpenClBackend::Impl::Out> OpenClBackend::Impl::output(ScratchSlot slot, float* host, std::size_t bytes,
                                                             bool reads) {
  Out o;
  o.host = host;
  o.bytes = bytes;
  o.entry = resident->find(host, bytes);
  if (o.entry == nullptr) {
    AM_ASSIGN_OR_RETURN(o.buffer, scratch.get(slot, bytes));
    if (reads) {
      ++counts.plain_uploads;
      counts.plain_upload_bytes += static_cast<int64_t>(bytes);
      AM_RETURN_IF_ERROR(queued_write(o.buffer, host, bytes));
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
    o.buffer = e.buffer.get();
    return o;
  }
  AM_ASSIGN_OR_RETURN(o.buffer, scratch.get(slot, bytes));
  if (reads) {
    AM_RETURN_IF_ERROR(rt.copy(e.buffer.get(), o.buffer, bytes, o.offset, 0));
    ++counts.device_copies;
  }
  return o;
}

Status OpenClBackend::Impl::finish(const Out& o) {
  resident->end_op();
  if (o.entry == nullptr) {
    ++counts.plain_downloads;
    counts.plain_download_bytes += static_cast<int64_t>(o.bytes);
    AM_RETURN_IF_ERROR(rt.read(o.buffer, o.host, o.bytes));
    drained();
    return Status::Ok();
  }
  if (o.buffer != o.entry->buffer.get()) {
    AM_RETURN_IF_ERROR(rt.copy(o.buffer, o.entry->buffer.get(), o.bytes, 0, o.offset));
    ++counts.device_copies;
  }
  resident->device_wrote(*o.entry);
  // The queue is in order: a freed tensor's buffer may serve the next one right away.
  resident->recycle();
  return Status::Ok();
}

Result<ClBuffer> OpenClBackend::Impl::upload(const void* host, std::size_t bytes) {
  ++counts.weight_uploads;
  counts.weight_upload_bytes += static_cast<int64_t>(bytes);
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
    AM_ASSIGN_OR_RETURN(cl_mem abuf, input(ScratchSlot::kOperand, a.data, float_bytes(n)));
    AM_ASSIGN_OR_RETURN(Out yo, output(ScratchSlot::kOutput, y.data, float_bytes(n), true));
    auto launch = rt.kernel(id);
    launch.mem(yo.buffer).mem(abuf).i32(static_cast<int32_t>(n));
    AM_RETURN_IF_ERROR(launch_flat(n, launch));
    return finish(yo);
  });
}

}  // namespace am::kernels
