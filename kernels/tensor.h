// Dense f32 tensors for the inference core.
//
// Contract:
//   - Shape: up to kMaxDims (4) dimensions, each >= 0; numel() is their product (1 for rank 0).
//     The last dimension is the row length: rows() = numel / cols(), cols() = last dim.
//   - Tensor owns contiguous, row-major storage aligned to kTensorAlignmentBytes (64), zero-filled
//     on construction. Move-only; clone() copies explicitly. Allocation failure throws
//     std::bad_alloc (the job process turns it into the "oom" outcome).
//   - TensorView / ConstTensorView are non-owning (pointer + shape) views of contiguous data; they
//     do not extend the lifetime of what they point at. rows(begin, count) narrows a view to a
//     range of rows.
//   - A tensor made with an observer (Backend::tensor(), for a device backend that keeps a
//     device copy of it) tells that observer when its storage is freed, if the observer is still
//     alive; the observer must not throw. Moves carry the observer with the storage.
//   - Not thread-safe for concurrent mutation; concurrent reads are fine.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>

namespace am::kernels {

// Told when a tensor's storage is freed (see the contract): a device backend forgets the device
// copy of that storage.
class TensorStorageObserver {
 public:
  virtual ~TensorStorageObserver() = default;
  virtual void storage_freed(const float* data) noexcept = 0;
};

inline constexpr int kMaxDims = 4;
inline constexpr std::size_t kTensorAlignmentBytes = 64;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);  // aborts on rank > kMaxDims or a negative dim

  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t numel() const;
  int64_t cols() const { return rank_ == 0 ? 1 : dims_[rank_ - 1]; }
  int64_t rows() const {
    const int64_t c = cols();
    return c == 0 ? 0 : numel() / c;
  }
  bool operator==(const Shape& other) const;
  std::string to_string() const;  // "[2, 3, 4]"

 private:
  std::array<int64_t, kMaxDims> dims_{};
  int rank_ = 0;
};

struct ConstTensorView {
  const float* data = nullptr;
  Shape shape;

  int64_t numel() const { return shape.numel(); }
  int64_t rows() const { return shape.rows(); }
  int64_t cols() const { return shape.cols(); }
  const float* row(int64_t r) const { return data + r * cols(); }
  // Rows [begin, begin+count) as a 2-D view [count, cols].
  ConstTensorView row_range(int64_t begin, int64_t count) const;
};

struct TensorView {
  float* data = nullptr;
  Shape shape;

  int64_t numel() const { return shape.numel(); }
  int64_t rows() const { return shape.rows(); }
  int64_t cols() const { return shape.cols(); }
  float* row(int64_t r) const { return data + r * cols(); }
  TensorView row_range(int64_t begin, int64_t count) const;
  operator ConstTensorView() const { return {data, shape}; }  // NOLINT: views narrow freely
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(Shape shape);  // zero-filled
  // Zero-filled, and `observer` is told when the storage is freed.
  Tensor(Shape shape, std::weak_ptr<TensorStorageObserver> observer);
  Tensor(Tensor&&) noexcept = default;
  Tensor& operator=(Tensor&&) noexcept = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  static Tensor from_view(ConstTensorView v);  // deep copy
  Tensor clone() const { return from_view(view()); }

  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  int64_t rows() const { return shape_.rows(); }
  int64_t cols() const { return shape_.cols(); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * sizeof(float); }
  bool empty() const { return numel() == 0; }

  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  float* row(int64_t r) { return data() + r * cols(); }
  const float* row(int64_t r) const { return data() + r * cols(); }

  TensorView view() { return {data(), shape_}; }
  ConstTensorView view() const { return {data(), shape_}; }
  // Same storage, another shape with the same numel (aborts otherwise).
  void reshape(Shape shape);

 private:
  struct FreeDeleter {
    std::weak_ptr<TensorStorageObserver> observer;
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], FreeDeleter> data_;
  Shape shape_ = Shape{0};  // a default tensor is empty (a rank-0 shape would count 1 element)
};

}  // namespace am::kernels
