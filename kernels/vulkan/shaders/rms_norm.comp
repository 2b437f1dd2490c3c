#version 450
#extension GL_GOOGLE_include_directive : require
// RMSNorm per row: y = x / sqrt(mean(x^2) + eps) * gamma. y may be x (in place).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "row_reduce.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float gamma[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint rows; uint cols; float eps; } pc;

void main() {
  const uint row = flat_group();
  if (row >= pc.rows) return;
  const uint t = gl_LocalInvocationID.x;
  const uint base = row * pc.cols;
  float sq = 0.0;
  for (uint c = t; c < pc.cols; c += WG) sq += x[base + c] * x[base + c];
  const float inv = 1.0 / sqrt(group_sum(sq) / float(pc.cols) + pc.eps);
  for (uint c = t; c < pc.cols; c += WG) y[base + c] = x[base + c] * inv * gamma[c];
}
