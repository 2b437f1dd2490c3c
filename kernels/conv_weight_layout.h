// The layout the device backends (opencl, vulkan) keep convolution weights in.
//
// A convolution weight in PyTorch's layout [out, cin_g, taps] (conv1d: taps = kernel; conv2d:
// taps = kernel_h * kernel_w, row-major (ky, kx)) becomes [taps][cin_g][out]: the device kernels
// give neighbouring work-items neighbouring output channels, which then read one input value (a
// broadcast) and neighbouring weights. Element (o, c, t) moves to (t * cin_g + c) * out + o.
//
// Contract: `w` holds out * cin_g * taps floats. Pure, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace am::kernels {

std::vector<float> conv_weight_taps_major(const float* w, int64_t out, int64_t cin_g, int64_t taps);

}  // namespace am::kernels
