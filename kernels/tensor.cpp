#include "kernels/tensor.h"

#include <cstdlib>
#include <cstring>
#include <utility>
#include <new>

#include "common/check.h"

namespace am::kernels {

Shape::Shape(std::initializer_list<int64_t> dims) {
  AM_CHECK(dims.size() <= static_cast<std::size_t>(kMaxDims), "tensor rank above kMaxDims");
  for (int64_t d : dims) {
    AM_CHECK(d >= 0, "negative tensor dimension");
    dims_[rank_++] = d;
  }
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ", ";
    s += std::to_string(dims_[i]);
  }
  return s + "]";
}

ConstTensorView ConstTensorView::row_range(int64_t begin, int64_t count) const {
  AM_CHECK(begin >= 0 && count >= 0 && begin + count <= rows(), "row range out of bounds");
  return {data + begin * cols(), Shape{count, cols()}};
}

TensorView TensorView::row_range(int64_t begin, int64_t count) const {
  AM_CHECK(begin >= 0 && count >= 0 && begin + count <= rows(), "row range out of bounds");
  return {data + begin * cols(), Shape{count, cols()}};
}

void Tensor::FreeDeleter::operator()(float* p) const {
  if (std::shared_ptr<TensorStorageObserver> o = observer.lock()) o->storage_freed(p);
  std::free(p);
}

Tensor::Tensor(Shape shape, std::weak_ptr<TensorStorageObserver> observer) : Tensor(shape) {
  data_.get_deleter().observer = std::move(observer);
}

Tensor::Tensor(Shape shape) : shape_(shape) {
  // aligned_alloc wants a size that is a multiple of the alignment; round up so that SIMD loops
  // may also read (never write) a little past the end of the last row without faulting.
  const std::size_t bytes = static_cast<std::size_t>(shape_.numel()) * sizeof(float);
  const std::size_t padded =
      (bytes + kTensorAlignmentBytes - 1) / kTensorAlignmentBytes * kTensorAlignmentBytes;
  if (padded == 0) return;
  void* p = std::aligned_alloc(kTensorAlignmentBytes, padded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, padded);
  data_.reset(static_cast<float*>(p));
}

Tensor Tensor::from_view(ConstTensorView v) {
  Tensor t(v.shape);
  if (v.numel() > 0) std::memcpy(t.data(), v.data, t.bytes());
  return t;
}

void Tensor::reshape(Shape shape) {
  AM_CHECK(shape.numel() == shape_.numel(), "reshape must keep the element count");
  shape_ = shape;
}

}  // namespace am::kernels
