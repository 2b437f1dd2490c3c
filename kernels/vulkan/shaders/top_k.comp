#version 450
#extension GL_GOOGLE_include_directive : require
// MoE routing (routing.h), one invocation per row of logits [rows][experts]: p = softmax(row);
// the k largest p (ties: the lower expert first) in descending order, weighted p / (sum of the
// chosen p if renormalize, else the sum of all p). `p` is scratch of rows * experts floats.
#include "common.glsl"
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer L { float logits[]; };
layout(std430, binding = 1) buffer Pb { float p[]; };
layout(std430, binding = 2) writeonly buffer I { int ids[]; };
layout(std430, binding = 3) buffer W { float weights[]; };
layout(push_constant) uniform P { uint rows; uint experts; uint k; uint renormalize; } pc;
const float kTaken = -2.0;  // every p is >= 0 or NaN: -2 marks an expert already chosen

void main() {
  const uint r = flat_group() * 64u + gl_LocalInvocationID.x;
  if (r >= pc.rows) return;
  const uint l = r * pc.experts;
  float mx = logits[l];
  for (uint e = 1u; e < pc.experts; ++e) mx = max(mx, logits[l + e]);
  float sum = 0.0;
  for (uint e = 0u; e < pc.experts; ++e) {
    p[l + e] = exp(logits[l + e] - mx);
    sum += p[l + e];
  }
  float chosen = 0.0;
  for (uint j = 0u; j < pc.k; ++j) {
    // The first expert not taken yet, then any larger one: the ids stay distinct even when a
    // row is NaN (NaN compares false; the weights then carry the NaN, as on the cpu backend).
    uint best = pc.experts;
    float best_p = 0.0;
    for (uint e = 0u; e < pc.experts; ++e) {
      const float v = p[l + e];
      if (v == kTaken) continue;
      if (best == pc.experts || v > best_p) {
        best_p = v;
        best = e;
      }
    }
    ids[r * pc.k + j] = int(best);
    weights[r * pc.k + j] = best_p;
    chosen += best_p;
    p[l + best] = kTaken;
  }
  const float denom = pc.renormalize != 0u ? chosen : sum;
  for (uint j = 0u; j < pc.k; ++j) weights[r * pc.k + j] /= denom;
}
