#include "kernels/conv_weight_layout.h"

namespace am::kernels {

std::vector<float> conv_weight_taps_major(const float* w, int64_t out, int64_t cin_g, int64_t taps) {
  std::vector<float> r(static_cast<std::size_t>(out * cin_g * taps));
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t c = 0; c < cin_g; ++c) {
      for (int64_t t = 0; t < taps; ++t) {
        r[static_cast<std::size_t>((t * cin_g + c) * out + o)] = w[(o * cin_g + c) * taps + t];
      }
    }
  }
  return r;
}

}  // namespace am::kernels
