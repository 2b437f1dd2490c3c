// A device backend's record of its resident activations (backend.h, "Residency"): which host
// range each tensor() tensor covers, which side holds its current values, and its device
// buffer. The backend does the transfers; this class keeps the states and says which are due.
//
// Contract:
// - make_tensor() (or add() of a tensor made with this object as its observer) records a fresh
//   zero-filled tensor. find(p, bytes): the entry whose range holds [p, p + bytes), or nullptr
//   (a plain host tensor).
// - States: kFresh (zeros on the host, no device copy yet: the device zero-fills one when it
//   needs it), kHost (host newer; device copy absent or stale), kBoth, kDevice (device newer;
//   host stale).
// - A tensor's freed storage moves its device buffer to a retired list: commands recorded and
//   not yet run may still use it. recycle() (call it only when the device has run everything
//   recorded, or on an in-order queue) makes retired buffers reusable by reuse_buffer(); a buffer
//   serves a tensor of up to its size and at least half of it.
// - An op's bookkeeping: note_input() for each resident range it reads, output_in_place() and
//   output_needs_current() for its output, end_op() once it is recorded.
// - Checks (ACCELMATRIX_RESIDENCY_CHECKS set and not "0", or set_checks(true)): the host bytes
//   of a kDevice entry are overwritten with a NaN pattern and those of a kBoth entry hashed;
//   verify() fails with Internal when the host changed them since (a write without
//   from_host()), and a host read without to_host() sees NaN. The tests run with checks on so
//   that a graph missing either call fails them.
// - Single-threaded, like the backend that owns it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "kernels/backend.h"
#include "kernels/tensor.h"

namespace am::kernels {

inline constexpr const char* kResidencyChecksEnv = "ACCELMATRIX_RESIDENCY_CHECKS";
// A quiet-bit-clear NaN: what a stale host copy holds while checks are on.
inline constexpr uint32_t kStaleHostBits = 0x7fbadbadu;

inline bool residency_checks_from_env() {
  const char* v = std::getenv(kResidencyChecksEnv);
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

template <class DeviceBuffer>
class ResidentTensors final : public TensorStorageObserver {
 public:
  enum class State { kFresh, kHost, kBoth, kDevice };
  struct Entry {
    const float* data = nullptr;
    std::size_t bytes = 0;
    State state = State::kFresh;
    DeviceBuffer buffer;  // empty until the device first needs the tensor
    std::size_t capacity = 0;  // buffer's size (a reused buffer may be larger than `bytes`)
    std::size_t host_hash = 0;
  };

  ResidentTensors() : checks_(residency_checks_from_env()) {}

  // A zero-filled tensor observed and recorded by `r` (Backend::tensor() of a device backend).
  static Tensor make_tensor(const std::shared_ptr<ResidentTensors>& r, Shape shape) {
    Tensor t(shape, r);
    r->add(t);
    return t;
  }

  void set_checks(bool on) { checks_ = on; }

  void add(const Tensor& t) {
    if (t.bytes() == 0) return;
    Entry e;
    e.data = t.data();
    e.bytes = t.bytes();
    entries_[e.data] = std::move(e);
  }

  Entry* find(const void* p, std::size_t bytes) {
    const auto* c = static_cast<const float*>(p);
    auto it = entries_.upper_bound(c);
    if (it == entries_.begin()) return nullptr;
    --it;
    const auto* begin = reinterpret_cast<const uint8_t*>(it->first);
    const auto* q = static_cast<const uint8_t*>(p);
    if (q < begin || q + bytes > begin + it->second.bytes) return nullptr;
    return &it->second;
  }

  static std::size_t offset_of(const Entry& e, const void* p) {
    return static_cast<std::size_t>(static_cast<const uint8_t*>(p) - reinterpret_cast<const uint8_t*>(e.data));
  }

  // The op being recorded reads [p, p + bytes) of a resident tensor; end_op() once it is
  // recorded (an op that fails halfway leaves entries that only make a later output take scratch).
  void note_input(const void* p, std::size_t bytes) {
    op_inputs_.emplace_back(static_cast<const uint8_t*>(p), bytes);
  }
  void end_op() { op_inputs_.clear(); }
  // Whether the op's output [p, p + bytes) in e may be written in e's own buffer: it starts the
  // tensor and overlaps none of the op's resident inputs. Else it goes through scratch.
  bool output_in_place(const Entry& e, const void* p, std::size_t bytes) const {
    if (offset_of(e, p) != 0) return false;
    const auto* h = static_cast<const uint8_t*>(p);
    for (const auto& [q, n] : op_inputs_) {
      if (h < q + n && q < h + bytes) return false;
    }
    return true;
  }
  // Whether e's device copy must be current before an op writes `bytes` of it: the op reads
  // them, or writes only part of the tensor (the other bytes keep their values).
  static bool output_needs_current(const Entry& e, std::size_t bytes, bool reads) {
    return reads || bytes != e.bytes;
  }

  // The device now holds e's current values and the host copy is stale.
  void device_wrote(Entry& e) {
    e.state = State::kDevice;
    if (checks_) poison(e.data, e.bytes);
  }
  // Host and device agree (after an upload, a download or a zero fill).
  void both_current(Entry& e) {
    e.state = State::kBoth;
    if (checks_) e.host_hash = hash(e);
  }
  // After from_host() of [p, p + bytes) has been copied to the device of a kDevice entry: the
  // host range is stale again.
  void restale(const void* p, std::size_t bytes) {
    if (checks_) poison(static_cast<const float*>(p), bytes);
  }

  Status verify(const Entry& e) const {
    if (!checks_) return Status::Ok();
    if (e.state == State::kDevice) {
      const auto* w = reinterpret_cast<const uint32_t*>(e.data);
      for (std::size_t i = 0; i < e.bytes / 4; ++i) {
        if (w[i] != kStaleHostBits) return changed(e, "while the device held newer values");
      }
    } else if (e.state == State::kBoth && hash(e) != e.host_hash) {
      return changed(e, "after the device copy was made");
    }
    return Status::Ok();
  }

  // Gives e a reusable device buffer of at least e.bytes when there is one (true), else leaves
  // it without (false: the backend allocates one and sets e.capacity).
  bool reuse_buffer(Entry& e) {
    auto it = free_.lower_bound(e.bytes);
    if (it == free_.end() || it->first > 2 * e.bytes) return false;
    e.capacity = it->first;
    e.buffer = std::move(it->second);
    free_.erase(it);
    return true;
  }
  void recycle() {
    for (auto& [bytes, b] : retired_) free_.emplace(bytes, std::move(b));
    retired_.clear();
  }
  // Drops every device buffer (before the device goes); entries fall back to host state.
  void release_device_buffers(const std::function<Status(Entry&)>& download) {
    for (auto& [p, e] : entries_) {
      if (e.state == State::kDevice) (void)download(e);
      e.state = State::kHost;
      e.buffer = DeviceBuffer();
    }
    retired_.clear();
    free_.clear();
  }

  // Backend::to_host() of [p, p + bytes): when the device holds newer values of the tensor it
  // lies in, `download(entry)` copies the whole tensor to its host bytes (and must wait for the
  // work recorded before).
  template <class Download>
  Status to_host(const void* p, std::size_t bytes, TransferCounts& counts, Download&& download) {
    Entry* e = find(p, bytes);
    if (e == nullptr || bytes == 0) return Status::Ok();
    AM_RETURN_IF_ERROR(verify(*e));
    if (e->state != State::kDevice) return Status::Ok();
    AM_RETURN_IF_ERROR(download(*e));
    ++counts.tensor_downloads;
    counts.tensor_download_bytes += static_cast<int64_t>(e->bytes);
    both_current(*e);
    return Status::Ok();
  }
  // Backend::from_host() of [p, p + bytes): a tensor with a current device copy gets the range
  // by `upload(entry, p, bytes, offset)`; one without is uploaded whole on its next use.
  template <class Upload>
  Status from_host(const void* p, std::size_t bytes, TransferCounts& counts, Upload&& upload) {
    Entry* e = find(p, bytes);
    if (e == nullptr || bytes == 0) return Status::Ok();
    if (e->state == State::kFresh || e->state == State::kHost) {
      e->state = State::kHost;
      return Status::Ok();
    }
    AM_RETURN_IF_ERROR(upload(*e, p, bytes, offset_of(*e, p)));
    ++counts.tensor_uploads;
    counts.tensor_upload_bytes += static_cast<int64_t>(bytes);
    if (e->state == State::kBoth) {
      both_current(*e);
    } else {
      restale(p, bytes);
    }
    return Status::Ok();
  }

  std::size_t live() const { return entries_.size(); }

  void storage_freed(const float* data) noexcept override {
    auto it = entries_.find(data);
    if (it == entries_.end()) return;
    if (it->second.buffer) retired_.emplace_back(it->second.capacity, std::move(it->second.buffer));
    entries_.erase(it);
  }

 private:
  static void poison(const float* data, std::size_t bytes) {
    auto* w = reinterpret_cast<uint32_t*>(const_cast<float*>(data));
    for (std::size_t i = 0; i < bytes / 4; ++i) w[i] = kStaleHostBits;
  }
  static std::size_t hash(const Entry& e) {
    return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(e.data), e.bytes));
  }
  static Status changed(const Entry& e, const char* when) {
    std::ostringstream os;
    os << "activation tensor of " << e.bytes << " bytes at " << static_cast<const void*>(e.data)
       << " was changed on the host " << when << " without from_host() (or read before to_host())";
    return internal_error(os.str());
  }

  bool checks_ = false;
  std::vector<std::pair<const uint8_t*, std::size_t>> op_inputs_;
  std::map<const float*, Entry> entries_;
  std::vector<std::pair<std::size_t, DeviceBuffer>> retired_;
  std::multimap<std::size_t, DeviceBuffer> free_;
};

}  // namespace am::kernels
