#version 450
#extension GL_GOOGLE_include_directive : require
// y[b, c] = mean over the sample's `positions` rows of x[., c] (pool2d.h).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Yb { float y[]; };
layout(push_constant) uniform P { uint total; uint positions; uint cols; } pc;

void main() {
  const uint id = flat_group() * 256u + gl_LocalInvocationID.x;
  if (id >= pc.total) return;
  const uint b = id / pc.cols;
  const uint c = id % pc.cols;
  float s = 0.0;
  for (uint p = 0u; p < pc.positions; ++p) s += x[(b * pc.positions + p) * pc.cols + c];
  y[id] = s / float(pc.positions);
}
