#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// y[m, n] = sum_k x[m, k] * W[n, k] + bias[n] for float weights; one define picks the format:
// F32, F16 or BF16 (bf16 activations are rounded to bf16 first, as the cpu reference does).
//
// Layout (vk_weights.h): row n of W starts at n * KP elements, KP = K rounded up to a whole
// 16-byte chunk (4 f32 or 8 halves), zero padded. The LANES invocations of a row read every
// LANES-th chunk (neighbouring invocations, neighbouring chunks: coalesced), and a shared-memory tree sums
// the row. Grid: (ceil(N / (ROWS * WG/LANES)) split over x/y, M) in z.
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
// X_VEC4 (the host sets it when K % 4 == 0, so every row of x starts on 16 bytes): activations
// are read as vec4 through a second view of binding 0, one or two 16-byte loads per chunk like the
// weights, instead of four or eight scalar loads.
layout(constant_id = 2) const bool X_VEC4 = false;
// Rows per invocation set (the host's DeviceOpsTuning::matvec_rows / kMatvecRows).
layout(constant_id = 3) const uint ROWS = 1;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer W { uvec4 w[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint N; uint K; uint KP; uint has_bias; } pc;
shared float partial[WG * ROWS];

float xat(uint row, uint k) {
  if (k >= pc.K) return 0.0;
  return x[row + k];
}

// x[row + k .. row + k + 3], zero past K (a chunk may overhang the row: W is zero padded to KP).
vec4 x4at(uint row, uint k) {
  vec4 v;
  if (X_VEC4 && k + 3u < pc.K) {
    v = x4[(row + k) >> 2];
  } else {
    v = vec4(xat(row, k), xat(row, k + 1u), xat(row, k + 2u), xat(row, k + 3u));
  }
#if defined(BF16)
  v = vec4(round_to_bf16(v.x), round_to_bf16(v.y), round_to_bf16(v.z), round_to_bf16(v.w));
#endif
  return v;
}

// The dot product of weight chunk `v` (PER_CHUNK values) with activations a (and b: the next
// four, for halves).
float chunk_dot(uvec4 v, vec4 a, vec4 b) {
#if defined(F32)
  return dot(uintBitsToFloat(v), a);
#else
#if defined(F16)
  const vec2 h0 = unpackHalf2x16(v.x), h1 = unpackHalf2x16(v.y), h2 = unpackHalf2x16(v.z),
             h3 = unpackHalf2x16(v.w);
#else
  const vec2 h0 = vec2(uintBitsToFloat(v.x << 16), uintBitsToFloat(v.x & 0xFFFF0000u));
  const vec2 h1 = vec2(uintBitsToFloat(v.y << 16), uintBitsToFloat(v.y & 0xFFFF0000u));
  const vec2 h2 = vec2(uintBitsToFloat(v.z << 16), uintBitsToFloat(v.z & 0xFFFF0000u));
  const vec2 h3 = vec2(uintBitsToFloat(v.w << 16), uintBitsToFloat(v.w & 0xFFFF0000u));
#endif
  return dot(vec4(h0, h1), a) + dot(vec4(h2, h3), b);
#endif
}

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint slot = gl_LocalInvocationID.x / LANES;  // which of the group's WG / LANES row sets
  const uint n0 = (flat_group() * (WG / LANES) + slot) * ROWS;
  const uint m = gl_WorkGroupID.z;
  const uint chunks = (pc.K + PER_CHUNK - 1u) / PER_CHUNK;
  const uint xrow = m * pc.K;
  const uint row_chunks = pc.KP / PER_CHUNK;
  // ROWS rows share each activation chunk: x is read once per ROWS rows, not once per row (on an
  // H200 this made no measurable difference, x staying in cache: vk_ops.h, kMatvecRows).
  float acc[ROWS];
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) acc[r] = 0.0;
  if (n0 < pc.N) {
    for (uint c = lane; c < chunks; c += LANES) {
      const uint k = c * PER_CHUNK;
      const vec4 a = x4at(xrow, k);
#if defined(F32)
      const vec4 b = vec4(0.0);
#else
      const vec4 b = x4at(xrow, k + 4u);
#endif
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
        if (n0 + r < pc.N) acc[r] += chunk_dot(w[(n0 + r) * row_chunks + c], a, b);
      }
    }
  }
  const uint t = gl_LocalInvocationID.x;
  [[unroll]] for (uint r = 0u; r < ROWS; ++r) partial[r * WG + t] = acc[r];
  barrier();
  for (uint s = LANES / 2u; s > 0u; s >>= 1) {
    if (lane < s) {
      [[unroll]] for (uint r = 0u; r < ROWS; ++r) partial[r * WG + t] += partial[r * WG + t + s];
    }
    barrier();
  }
  if (lane == 0u) {
    [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
      const uint n = n0 + r;
      if (n < pc.N) y[m * pc.N + n] = partial[r * WG + t] + (pc.has_bias != 0u ? bias[n] : 0.0);
    }
  }
}
