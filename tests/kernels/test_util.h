// Helpers shared by the kernel tests: seeded data independent of the core's own RNG, and NaN
// poisoning so a kernel that skips an output element is caught.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/tensor.h"

namespace am::kernels::testing {

inline std::vector<float> random_normal(std::size_t n, uint32_t seed, float stddev = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

inline Tensor random_tensor(Shape shape, uint32_t seed, float stddev = 1.0f) {
  Tensor t(shape);
  const std::vector<float> v = random_normal(static_cast<std::size_t>(t.numel()), seed, stddev);
  std::copy(v.begin(), v.end(), t.data());
  return t;
}

inline void poison(TensorView t) {
  std::fill(t.data, t.data + t.numel(), std::numeric_limits<float>::quiet_NaN());
}

inline bool all_finite(ConstTensorView t) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (!std::isfinite(t.data[i])) return false;
  }
  return true;
}

}  // namespace am::kernels::testing
