#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
// As fma_f32.comp in float16 arithmetic (needs shaderFloat16): FMAs per invocation
// CHAINS * 4 * iterations (f16vec4 chains; packed-half hardware runs two per lane per cycle).
layout(local_size_x = 256) in;
layout(std430, binding = 0) writeonly buffer O { float result[]; };
layout(push_constant) uniform P { uint iterations; float seed; } pc;
const uint CHAINS = 4u;

void main() {
  const float16_t s = float16_t(float(gl_GlobalInvocationID.x % 1024u) * 1e-4 + pc.seed);
  f16vec4 a[CHAINS];
  for (uint c = 0u; c < CHAINS; ++c) a[c] = f16vec4(s, s + float16_t(c), s * float16_t(0.5), s * float16_t(0.25));
  const f16vec4 mul = f16vec4(0.999);
  const f16vec4 add = f16vec4(0.001);
  for (uint i = 0u; i < pc.iterations; ++i) {
    for (uint c = 0u; c < CHAINS; ++c) a[c] = fma(a[c], mul, add);
  }
  f16vec4 sum = f16vec4(0.0);
  for (uint c = 0u; c < CHAINS; ++c) sum += a[c];
  result[gl_GlobalInvocationID.x] = float(sum.x + sum.y + sum.z + sum.w);
}
