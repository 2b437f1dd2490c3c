#version 450
#extension GL_GOOGLE_include_directive : require
// Mamba's selective scan (selective_scan.h). A work-group of WG invocations holds WG / SP
// channels of one sample, SP invocations per channel (SP: state_size rounded up to a power of
// two), one per state index n, so every h[d, n] lives in a register for the whole sequence.
// Per position t, in order: dt = delta (+ delta_bias), softplus'd; h = exp(dt * A) * h +
// (dt * u) * B (the cpu's float formula); y = sum_n h * C as a shared-memory tree over the SP
// invocations, + D * u. Grid: (ceil(channels / (WG / SP)), batch).
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SP = 16;
layout(std430, binding = 0) readonly buffer U { float u[]; };
layout(std430, binding = 1) readonly buffer Dt { float delta[]; };
layout(std430, binding = 2) readonly buffer Bm { float Bv[]; };
layout(std430, binding = 3) readonly buffer Cm { float Cv[]; };
layout(std430, binding = 4) readonly buffer Am { float A[]; };
// D then delta_bias, `channels` floats each (either may be absent: has_D / has_bias).
layout(std430, binding = 5) readonly buffer Pm { float params[]; };
layout(std430, binding = 6) buffer S { float state[]; };  // [batch, channels, state_size]
layout(std430, binding = 7) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P {
  uint len, channels, state_size, has_D, has_bias, softplus, has_state;
} pc;
shared float red[WG];

const float kSoftplusThreshold = 20.0;

// log(1 + v) without the cancellation of log(1.0 + v) for small v (GLSL has no log1p).
float log1p_precise(float v) {
  precise float w = 1.0 + v;
  if (w == 1.0) return v;
  precise float den = w - 1.0;
  return log(w) * (v / den);
}

float softplus(float v) { return v > kSoftplusThreshold ? v : log1p_precise(exp(v)); }

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint lane = t % SP;
  const uint d = gl_WorkGroupID.x * (WG / SP) + t / SP;
  const uint b = gl_WorkGroupID.y;
  const bool live = d < pc.channels && lane < pc.state_size;
  const uint si = (b * pc.channels + d) * pc.state_size + lane;
  float h = live && pc.has_state != 0u ? state[si] : 0.0;
  const float a = live ? A[d * pc.state_size + lane] : 0.0;
  for (uint i = 0u; i < pc.len; ++i) {
    const uint row = b * pc.len + i;
    float part = 0.0;
    float uv = 0.0;
    if (d < pc.channels) {
      float dt = delta[row * pc.channels + d] + (pc.has_bias != 0u ? params[pc.channels + d] : 0.0);
      if (pc.softplus != 0u) dt = softplus(dt);
      uv = u[row * pc.channels + d];
      if (live) {
        const float dtu = dt * uv;
        h = exp(dt * a) * h + dtu * Bv[row * pc.state_size + lane];
        part = h * Cv[row * pc.state_size + lane];
      }
    }
    red[t] = part;
    barrier();
    for (uint s = SP / 2u; s > 0u; s >>= 1) {
      if (lane < s) red[t] += red[t + s];
      barrier();
    }
    if (lane == 0u && d < pc.channels) {
      y[row * pc.channels + d] = red[t] + (pc.has_D != 0u ? params[d] * uv : 0.0);
    }
    barrier();  // red[] is rewritten for the next position
  }
  if (live && pc.has_state != 0u) state[si] = h;
}
