#version 450
#extension GL_GOOGLE_include_directive : require
// Softmax per row, in place, with the cpu's rules: -inf entries get 0, an all -inf row becomes
// zeros, a NaN anywhere makes the whole row NaN. Every invocation runs the same barriers.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "row_reduce.glsl"
layout(std430, binding = 0) buffer X { float x[]; };
layout(push_constant) uniform P { uint rows; uint cols; } pc;

void main() {
  const uint row = flat_group();
  if (row >= pc.rows) return;
  const uint t = gl_LocalInvocationID.x;
  const uint base = row * pc.cols;
  float mx = uintBitsToFloat(0xFF800000u);  // -inf
  float nans = 0.0;
  for (uint c = t; c < pc.cols; c += WG) {
    const float v = x[base + c];
    if (isnan(v)) nans = 1.0;
    else mx = max(mx, v);
  }
  mx = group_max(mx);
  const bool nan_row = group_max(nans) > 0.0;
  const bool empty_row = isinf(mx) && mx < 0.0;
  float s = 0.0;
  if (!nan_row && !empty_row) {
    for (uint c = t; c < pc.cols; c += WG) {
      const float e = exp(x[base + c] - mx);
      x[base + c] = e;
      s += e;
    }
  }
  s = group_sum(s);
  const float inv = 1.0 / s;
  for (uint c = t; c < pc.cols; c += WG) {
    x[base + c] = nan_row ? nan_value() : (empty_row ? 0.0 : x[base + c] * inv);
  }
}
