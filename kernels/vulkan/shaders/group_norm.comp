#version 450
#extension GL_GOOGLE_include_directive : require
// Group normalisation (group_norm.h), one work-group of WG invocations per (sample, group): the
// cpu's two passes (mean, then squared deviations from it) over the group's positions x width
// values, each summed as a work-group tree, then y = (x - mean) * inv * gamma + beta. y may be x
// (in place): every value is read by the invocation that writes it, after both reductions.
// Grid: batch * groups work-groups, split over x/y.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
#include "row_reduce.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float gamma[]; };
layout(std430, binding = 2) readonly buffer Bt { float beta[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint tasks;  // batch * groups
  uint groups, positions, channels;
  float eps;
  uint has_beta;
} pc;

void main() {
  const uint task = flat_group();
  if (task >= pc.tasks) return;  // uniform across the work-group
  const uint t = gl_LocalInvocationID.x;
  const uint b = task / pc.groups;
  const uint g = task % pc.groups;
  const uint width = pc.channels / pc.groups;
  const uint n = pc.positions * width;
  const uint base = b * pc.positions * pc.channels + g * width;
  float s = 0.0;
  for (uint i = t; i < n; i += WG) s += x[base + (i / width) * pc.channels + i % width];
  const float mean = group_sum(s) / float(n);
  float sq = 0.0;
  for (uint i = t; i < n; i += WG) {
    const float d = x[base + (i / width) * pc.channels + i % width] - mean;
    sq += d * d;
  }
  const float inv = 1.0 / sqrt(group_sum(sq) / float(n) + pc.eps);
  for (uint i = t; i < n; i += WG) {
    const uint c = i % width;
    const uint at = base + (i / width) * pc.channels + c;
    const uint ch = g * width + c;
    y[at] = (x[at] - mean) * inv * gamma[ch] + (pc.has_beta != 0u ? beta[ch] : 0.0);
  }
}
