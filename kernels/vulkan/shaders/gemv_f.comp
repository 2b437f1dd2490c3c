#version 450
#extension GL_GOOGLE_include_directive : require
// y[m, n] = sum_k x[m, k] * W[n, k] + bias[n] for float weights; one define picks the format:
// F32, F16 or BF16 (bf16 activations are rounded to bf16 first, as the cpu reference does).
//
// Layout (vk_weights.h): row n of W starts at n * KP elements, KP = K rounded up to a whole
// 16-byte chunk (4 f32 or 8 halves), zero padded. The LANES invocations of a row read every
// LANES-th chunk (neighbouring invocations, neighbouring chunks: coalesced), and a shared-memory tree sums
// the row. Grid: (ceil(N / (WG/LANES)) split over x/y, M) in z.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
// Invocations per row (a power of two dividing WG): the host gives each about four blocks or
// chunks to read, so long rows spread over more invocations and keep enough loads in flight.
layout(constant_id = 1) const uint LANES = 32;
#if defined(F32)
const uint PER_CHUNK = 4u;
#else
const uint PER_CHUNK = 8u;
#endif
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer W { uvec4 w[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint N; uint K; uint KP; uint has_bias; } pc;
shared float partial[WG];

float xat(uint row, uint k) {
  if (k >= pc.K) return 0.0;
#if defined(BF16)
  return round_to_bf16(x[row + k]);
#else
  return x[row + k];
#endif
}

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint n = flat_group() * (WG / LANES) + gl_LocalInvocationID.x / LANES;
  const uint m = gl_WorkGroupID.z;
  const uint chunks = (pc.K + PER_CHUNK - 1u) / PER_CHUNK;
  const uint xrow = m * pc.K;
  float acc = 0.0;
  if (n < pc.N) {
    const uint wrow = n * (pc.KP / PER_CHUNK);
    for (uint c = lane; c < chunks; c += LANES) {
      const uvec4 v = w[wrow + c];
      const uint k = c * PER_CHUNK;
#if defined(F32)
      const vec4 wv = uintBitsToFloat(v);
      acc += wv.x * xat(xrow, k) + wv.y * xat(xrow, k + 1u) + wv.z * xat(xrow, k + 2u) + wv.w * xat(xrow, k + 3u);
#else
      for (uint i = 0u; i < 4u; ++i) {
        const uint word = v[i];
#if defined(F16)
        const vec2 h = unpackHalf2x16(word);
#else
        const vec2 h = vec2(uintBitsToFloat(word << 16), uintBitsToFloat(word & 0xFFFF0000u));
#endif
        acc += h.x * xat(xrow, k + 2u * i) + h.y * xat(xrow, k + 2u * i + 1u);
      }
#endif
    }
  }
  const uint t = gl_LocalInvocationID.x;
  partial[t] = acc;
  barrier();
  for (uint s = LANES / 2u; s > 0u; s >>= 1) {
    if (lane < s) partial[t] += partial[t + s];
    barrier();
  }
  if (lane == 0u && n < pc.N) y[m * pc.N + n] = partial[t] + (pc.has_bias != 0u ? bias[n] : 0.0);
}
