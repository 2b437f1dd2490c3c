#version 450
#extension GL_GOOGLE_include_directive : require
// y[i] (+)= table[ids[i]] over `cols` columns; ids were range-checked on the host.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer T { float table[]; };
layout(std430, binding = 1) readonly buffer I { int ids[]; };
layout(std430, binding = 2) buffer Yb { float y[]; };
layout(push_constant) uniform P { uint total; uint cols; uint accumulate; } pc;

void main() {
  const uint e = flat_group() * 256u + gl_LocalInvocationID.x;
  if (e >= pc.total) return;
  const uint i = e / pc.cols;
  const uint c = e % pc.cols;
  const float v = table[uint(ids[i]) * pc.cols + c];
  y[e] = pc.accumulate != 0u ? y[e] + v : v;
}
