#version 450
#extension GL_GOOGLE_include_directive : require
// Rotary embeddings in place on x [rows][heads * head_dim] (rope.h); cs [rows][half][2] holds
// cos and sin of each row's angles, computed by the host in double like the cpu. Invocation
// (r * heads + h) * half + i rotates pair i of head h of row r: (a, b) -> (a cos - b sin,
// a sin + b cos), a at i * first_step and b `partner` further (neox: 1 and half; gptj: 2 and 1).
#include "common.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer CS { float cs[]; };
layout(push_constant) uniform P { uint total; uint heads; uint head_dim; uint half_dim; uint first_step; uint partner; } pc;

void main() {
  const uint id = flat_group() * 256u + gl_LocalInvocationID.x;
  if (id >= pc.total) return;
  const uint i = id % pc.half_dim;
  const uint rh = id / pc.half_dim;
  const uint r = rh / pc.heads;
  const uint v = rh * pc.head_dim;
  const float c = cs[(r * pc.half_dim + i) * 2u];
  const float s = cs[(r * pc.half_dim + i) * 2u + 1u];
  const float a = x[v + i * pc.first_step];
  const float b = x[v + i * pc.first_step + pc.partner];
  x[v + i * pc.first_step] = a * c - b * s;
  x[v + i * pc.first_step + pc.partner] = a * s + b * c;
}
