#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
// y[m, n] = sum over blocks b of isum(b) * (wd * xd) (+ wm * (xd * xs) for q4_1) + bias[n]: the
// cpu reference's block arithmetic on activations from quantize_q8.comp. One define picks the
// weight format: Q8_0, Q4_0 or Q4_1.
//
// Layout (vk_weights.h): weight row n holds its blocks' quants contiguously (q8_0: 32 int8 = 2
// uvec4 per block; q4: 16 bytes of GGUF-ordered nibbles = 1 uvec4), the scales (and q4_1 mins)
// are halves in their own arrays, two per uint.
// Work split: a work-group of WG invocations serves WG/LANES rows; the LANES invocations of a row
// take every LANES-th block, so neighbouring invocations read neighbouring 16-byte chunks (coalesced), then
// a shared-memory tree sums the row. Grid: (ceil(N / (WG/LANES)) split over x/y, M) in z.
//
// INT_DOT (a second variant, used where the device enables shaderIntegerDotProduct): the int8
// products of four packed bytes are one OpSDot (SPV_KHR_integer_dot_product, a single DP4A-like
// instruction on GPUs) instead of eight byte extractions and four multiplies. q4 nibbles are
// masked into bytes 0..15 first; q4_0's offset of 8 then comes off as 8 * (the block's sum of
// activation quants), which quantize_q8.comp stores in xs. Integer sums are exact, so both
// variants give the same bits.
#include "common.glsl"
#if defined(INT_DOT)
#extension GL_EXT_spirv_intrinsics : require
// OpSDot (4450) with capabilities DotProduct (6019) and DotProductInput4x8BitPacked (6018); the
// literal 0 is PackedVectorFormat4x8Bit. glslang of Debian 12 has no GL_EXT_integer_dot_product.
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint a, uint b, spirv_literal int packed_format);
#endif
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 128;
// Invocations per row (a power of two dividing WG): the host gives each about four blocks or
// chunks to read, so long rows spread over more invocations and keep enough loads in flight.
layout(constant_id = 1) const uint LANES = 32;
layout(std430, binding = 0) readonly buffer XQ { uvec4 xq[]; };
layout(std430, binding = 1) readonly buffer XD { float xd[]; };
layout(std430, binding = 2) readonly buffer XS { int xs[]; };
layout(std430, binding = 3) readonly buffer WQ { uvec4 wq[]; };
layout(std430, binding = 4) readonly buffer WD { uint wd[]; };
layout(std430, binding = 5) readonly buffer WM { uint wm[]; };
layout(std430, binding = 6) readonly buffer B { float bias[]; };
layout(std430, binding = 7) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint N; uint blocks; uint has_bias; } pc;
shared float partial[WG];

float half_at(uint i, uint which) {
  const vec2 h = unpackHalf2x16(which == 0u ? wd[i >> 1] : wm[i >> 1]);
  return (i & 1u) == 0u ? h.x : h.y;
}

int dot_bytes(uint a, uint b) {
  int s = 0;
  [[unroll]] for (int c = 0; c < 4; ++c) s += bitfieldExtract(int(a), 8 * c, 8) * bitfieldExtract(int(b), 8 * c, 8);
  return s;
}

// q4: byte c of word w holds element 4w+c (low nibble) and 4w+c+16 (high nibble).
int dot_nibbles(uint w, uint xlo, uint xhi, int offset) {
  int s = 0;
  [[unroll]] for (int c = 0; c < 4; ++c) {
    const int lo = int(bitfieldExtract(w, 8 * c, 4)) - offset;
    const int hi = int(bitfieldExtract(w, 8 * c + 4, 4)) - offset;
    s += bitfieldExtract(int(xlo), 8 * c, 8) * lo + bitfieldExtract(int(xhi), 8 * c, 8) * hi;
  }
  return s;
}

void main() {
  const uint lane = gl_LocalInvocationID.x % LANES;
  const uint n = flat_group() * (WG / LANES) + gl_LocalInvocationID.x / LANES;
  const uint m = gl_WorkGroupID.z;
  float acc = 0.0;
  if (n < pc.N) {
    for (uint b = lane; b < pc.blocks; b += LANES) {
      const uint xb = m * pc.blocks + b;
      const uint wb = n * pc.blocks + b;
      const uvec4 x0 = xq[xb * 2u];
      const uvec4 x1 = xq[xb * 2u + 1u];
#if defined(Q8_0) && defined(INT_DOT)
      const uvec4 w0 = wq[wb * 2u];
      const uvec4 w1 = wq[wb * 2u + 1u];
      const int isum = sdot4x8(w0.x, x0.x, 0) + sdot4x8(w0.y, x0.y, 0) + sdot4x8(w0.z, x0.z, 0) +
                       sdot4x8(w0.w, x0.w, 0) + sdot4x8(w1.x, x1.x, 0) + sdot4x8(w1.y, x1.y, 0) +
                       sdot4x8(w1.z, x1.z, 0) + sdot4x8(w1.w, x1.w, 0);
#elif defined(Q8_0)
      const uvec4 w0 = wq[wb * 2u];
      const uvec4 w1 = wq[wb * 2u + 1u];
      const int isum = dot_bytes(w0.x, x0.x) + dot_bytes(w0.y, x0.y) + dot_bytes(w0.z, x0.z) +
                       dot_bytes(w0.w, x0.w) + dot_bytes(w1.x, x1.x) + dot_bytes(w1.y, x1.y) +
                       dot_bytes(w1.z, x1.z) + dot_bytes(w1.w, x1.w);
#elif defined(INT_DOT)
      const uvec4 w = wq[wb];
      const uvec4 lo = w & 0x0F0F0F0Fu;
      const uvec4 hi = (w >> 4) & 0x0F0F0F0Fu;
      int isum = sdot4x8(lo.x, x0.x, 0) + sdot4x8(lo.y, x0.y, 0) + sdot4x8(lo.z, x0.z, 0) +
                 sdot4x8(lo.w, x0.w, 0) + sdot4x8(hi.x, x1.x, 0) + sdot4x8(hi.y, x1.y, 0) +
                 sdot4x8(hi.z, x1.z, 0) + sdot4x8(hi.w, x1.w, 0);
#if !defined(Q4_1)
      isum -= 8 * xs[xb];
#endif
#else
#if defined(Q4_1)
      const int offset = 0;
#else
      const int offset = 8;
#endif
      const uvec4 w = wq[wb];
      const int isum = dot_nibbles(w.x, x0.x, x1.x, offset) + dot_nibbles(w.y, x0.y, x1.y, offset) +
                       dot_nibbles(w.z, x0.z, x1.z, offset) + dot_nibbles(w.w, x0.w, x1.w, offset);
#endif
      const float dx = xd[xb];
      acc += float(isum) * (half_at(wb, 0u) * dx);
#if defined(Q4_1)
      acc += half_at(wb, 1u) * (dx * float(xs[xb]));
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
