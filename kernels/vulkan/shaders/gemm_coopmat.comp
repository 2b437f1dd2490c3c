#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
// Y = X · W^T + bias for M > 1 with f16 weights on the device's matrix units
// (VK_NV_cooperative_matrix, 16 x 16 x 16 f16 x f16 + f32): used only where the device lists
// that shape and runs 32-invocation subgroups (vk_device.cpp); gemm_f.comp is the portable path.
//
// Numerics: the activations are rounded to f16 as they enter shared memory (the matrix units take
// f16 operands); products are exact in the f32 accumulators. This is what an f16 GEMM on a GPU
// does, and it differs from the cpu reference (f32 activations) by that rounding: the job's
// accuracy against fp32 measures it. An activation beyond f16's range becomes inf and shows as a
// failed accuracy check, never as a silently finite result.
//
// A work-group of 128 invocations (4 subgroups of 32) computes a BM x BN = 64 x 64 tile of Y;
// subgroup s owns the 32 x 32 quadrant (s / 2, s % 2) as 2 x 2 accumulators. K advances in steps
// of BK (a specialization constant: 32 or 64; the host's kCoopmatKStep): X's 64 x BK f32 block
// (vec4 loads when X_VEC4, i.e. K % 4 == 0) and W's 64 x BK halves (uvec4 loads, W rows padded to
// KP) are staged in shared memory as f16, rows SK = BK + 8 halves apart (16-byte aligned rows for
// the matrix loads, neighbouring rows on different banks). Edges load zeros; the result goes
// through shared memory so that stores to Y are bounds-checked and coalesced.
// Grid: (ceil(N / BN), ceil(M / BM)).
#include "common.glsl"
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint BK = 64u;
layout(constant_id = 1) const bool X_VEC4 = false;
const uint BM = 64u;
const uint BN = 64u;
const uint SK = BK + 8u;
const uint HALF = BK / 2u;  // k values one invocation stages per row
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer W { uvec4 w[]; };
layout(std430, binding = 2) readonly buffer B { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform P { uint M; uint N; uint K; uint KP; uint has_bias; } pc;
shared float16_t xs[BM * SK];
shared float16_t ws[BN * SK];
shared float ys[BM * BN];

#define ACC fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>
#define OPND fcoopmatNV<16, gl_ScopeSubgroup, 16, 16>

void main() {
  const uint t = gl_LocalInvocationID.x;
  const uint m0 = gl_WorkGroupID.y * BM;
  const uint n0 = gl_WorkGroupID.x * BN;
  const uint sm = gl_SubgroupID / 2u;
  const uint sn = gl_SubgroupID % 2u;
  // Staging: invocation t fills half a row of each tile: row t / 2, k (t % 2) * HALF .. + HALF.
  const uint lrow = t / 2u;
  const uint lk = (t % 2u) * HALF;
  ACC c00 = ACC(0.0);
  ACC c01 = ACC(0.0);
  ACC c10 = ACC(0.0);
  ACC c11 = ACC(0.0);
  for (uint k0 = 0u; k0 < pc.K; k0 += BK) {
    const uint m = m0 + lrow;
    [[unroll]] for (uint i = 0u; i < HALF; i += 4u) {
      const uint k = k0 + lk + i;
      vec4 v = vec4(0.0);
      if (m < pc.M) {
        if (X_VEC4 && k + 3u < pc.K) {
          v = x4[(m * pc.K + k) >> 2];
        } else {
          [[unroll]] for (uint j = 0u; j < 4u; ++j) v[j] = k + j < pc.K ? x[m * pc.K + k + j] : 0.0;
        }
      }
      [[unroll]] for (uint j = 0u; j < 4u; ++j) xs[lrow * SK + lk + i + j] = float16_t(v[j]);
    }
    const uint n = n0 + lrow;
    [[unroll]] for (uint c = 0u; c < HALF / 8u; ++c) {
      const uint kk = k0 + lk + 8u * c;  // first of the chunk's 8 halves
      const uvec4 v = n < pc.N && kk < pc.KP ? w[(n * pc.KP + kk) / 8u] : uvec4(0u);
      [[unroll]] for (uint i = 0u; i < 4u; ++i) {
        const vec2 h = unpackHalf2x16(v[i]);
        ws[lrow * SK + lk + 8u * c + 2u * i] = float16_t(h.x);
        ws[lrow * SK + lk + 8u * c + 2u * i + 1u] = float16_t(h.y);
      }
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < BK; kk += 16u) {
      OPND a0, a1, b0, b1;
      coopMatLoadNV(a0, xs, (sm * 32u) * SK + kk, SK, false);
      coopMatLoadNV(a1, xs, (sm * 32u + 16u) * SK + kk, SK, false);
      // W's rows are the columns of W^T: column-major 16 x 16 blocks of the B operand.
      coopMatLoadNV(b0, ws, (sn * 32u) * SK + kk, SK, true);
      coopMatLoadNV(b1, ws, (sn * 32u + 16u) * SK + kk, SK, true);
      c00 = coopMatMulAddNV(a0, b0, c00);
      c01 = coopMatMulAddNV(a0, b1, c01);
      c10 = coopMatMulAddNV(a1, b0, c10);
      c11 = coopMatMulAddNV(a1, b1, c11);
    }
    barrier();
  }
  coopMatStoreNV(c00, ys, (sm * 32u) * BN + sn * 32u, BN, false);
  coopMatStoreNV(c01, ys, (sm * 32u) * BN + sn * 32u + 16u, BN, false);
  coopMatStoreNV(c10, ys, (sm * 32u + 16u) * BN + sn * 32u, BN, false);
  coopMatStoreNV(c11, ys, (sm * 32u + 16u) * BN + sn * 32u + 16u, BN, false);
  barrier();
  [[unroll]] for (uint r = 0u; r < (BM * BN) / 128u; ++r) {
    const uint idx = r * 128u + t;
    const uint m = m0 + idx / BN;
    const uint n = n0 + idx % BN;
    if (m < pc.M && n < pc.N) y[m * pc.N + n] = ys[idx] + (pc.has_bias != 0u ? bias[n] : 0.0);
  }
}
