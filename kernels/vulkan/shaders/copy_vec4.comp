#version 450
#extension GL_GOOGLE_include_directive : require
// dst = src in 16-byte chunks, for the bench's device-to-device bandwidth.
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer S { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer D { uvec4 dst[]; };
layout(push_constant) uniform P { uint n; } pc;

void main() {
  const uint i = flat_group() * 256u + gl_LocalInvocationID.x;
  if (i < pc.n) dst[i] = src[i];
}
