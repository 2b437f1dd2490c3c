#version 450
#extension GL_GOOGLE_include_directive : require
// RWKV-4's WKV recurrence (time_mix.h), one invocation per (sample, channel) walking the
// positions in order with the running-maximum state (aa, bb, pp) in registers: the cpu's float
// formula step for step. state is [batch, 3, channels] (aa, bb, pp), read and written when
// has_state; otherwise a fresh state (0, 0, kTimeMixInitialMax).
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer K { float kk[]; };
layout(std430, binding = 1) readonly buffer V { float vv[]; };
layout(std430, binding = 2) readonly buffer Dc { float decay[]; };
layout(std430, binding = 3) readonly buffer Fi { float first[]; };
layout(std430, binding = 4) buffer S { float state[]; };
layout(std430, binding = 5) writeonly buffer O { float outv[]; };
layout(push_constant) uniform P { uint total; uint len; uint channels; uint has_state; } pc;

const float kInitialMax = -1e38;

void main() {
  const uint id = flat_group() * 64u + gl_LocalInvocationID.x;
  if (id >= pc.total) return;
  const uint b = id / pc.channels;
  const uint c = id % pc.channels;
  const uint st = b * 3u * pc.channels + c;
  const bool carried = pc.has_state != 0u;
  float aa = carried ? state[st] : 0.0;
  float bb = carried ? state[st + pc.channels] : 0.0;
  float pp = carried ? state[st + 2u * pc.channels] : kInitialMax;
  const float w = -exp(decay[c]);
  const float u = first[c];
  for (uint t = 0u; t < pc.len; ++t) {
    const uint at = (b * pc.len + t) * pc.channels + c;
    const float k = kk[at];
    const float v = vv[at];
    float q = max(pp, u + k);
    float e1 = exp(pp - q);
    float e2 = exp(u + k - q);
    outv[at] = (e1 * aa + e2 * v) / (e1 * bb + e2);
    q = max(pp + w, k);
    e1 = exp(pp + w - q);
    e2 = exp(k - q);
    aa = e1 * aa + e2 * v;
    bb = e1 * bb + e2;
    pp = q;
  }
  if (carried) {
    state[st] = aa;
    state[st + pc.channels] = bb;
    state[st + 2u * pc.channels] = pp;
  }
}
