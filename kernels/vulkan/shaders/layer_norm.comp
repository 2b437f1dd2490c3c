#version 450
#extension GL_GOOGLE_include_directive : require
// LayerNorm per row, the cpu reference's two passes (mean, then squared deviations), each
// summed as a work-group tree. y may be x (in place): each row is read fully before written.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "row_reduce.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float gamma[]; };
layout(std430, binding = 2) readonly buffer Bt { float beta[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint rows; uint cols; float eps; uint has_beta; } pc;

void main() {
  const uint row = flat_group();
  if (row >= pc.rows) return;  // uniform across the work-group
  const uint t = gl_LocalInvocationID.x;
  const uint base = row * pc.cols;
  float s = 0.0;
  for (uint c = t; c < pc.cols; c += WG) s += x[base + c];
  const float mean = group_sum(s) / float(pc.cols);
  float sq = 0.0;
  for (uint c = t; c < pc.cols; c += WG) {
    const float d = x[base + c] - mean;
    sq += d * d;
  }
  const float var = group_sum(sq) / float(pc.cols);
  const float inv_std = 1.0 / sqrt(var + pc.eps);
  for (uint c = t; c < pc.cols; c += WG) {
    y[base + c] = (x[base + c] - mean) * inv_std * gamma[c] + (pc.has_beta != 0u ? beta[c] : 0.0);
  }
}
