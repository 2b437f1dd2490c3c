#version 450
#extension GL_GOOGLE_include_directive : require
// Scaled dot-product attention, one work-group of WG invocations per (sample, head, query),
// groups numbered ((b * heads) + h) * q_len + i. Keys are visited in chunks of CHUNK with an
// online softmax: a chunk's scores go to shared memory, the running max rescales the partial
// sums, and the output row (owned by this group alone, each element by one invocation)
// accumulates in place in `o`, so head_dim has no upper bound. Causal queries see keys
// j <= q_offset + i; masked keys (mask 0) get weight 0; a query with no visible key gets a zero
// row; a NaN score makes the row NaN. With has_bias, bias[(i * kv_len + j) * heads + h] is added
// to each visible score (attention_bias.h). Grouped-query: head h reads kv head h / (heads /
// kv_heads). Every invocation runs the same barriers.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;
#include "row_reduce.glsl"
const uint CHUNK = 256u;
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer V { float v[]; };
layout(std430, binding = 3) buffer O { float o[]; };
layout(std430, binding = 4) readonly buffer M { int mask[]; };
layout(std430, binding = 5) readonly buffer Bi { float bias[]; };
layout(push_constant) uniform P {
  uint groups; uint q_len; uint kv_len; uint heads; uint kv_heads; uint head_dim;
  float scale; uint causal; uint q_offset; uint has_mask; uint has_bias;
} pc;
shared float s[CHUNK];
shared uint saw_nan;

void main() {
  const uint g = flat_group();
  if (g >= pc.groups) return;  // uniform across the work-group
  const uint t = gl_LocalInvocationID.x;
  const uint i = g % pc.q_len;
  const uint h = (g / pc.q_len) % pc.heads;
  const uint b = g / (pc.q_len * pc.heads);
  const uint q_cols = pc.heads * pc.head_dim;
  const uint kv_cols = pc.kv_heads * pc.head_dim;
  const uint kv_col = (h / (pc.heads / pc.kv_heads)) * pc.head_dim;
  const uint kv_base = b * pc.kv_len;
  const uint qr = (b * pc.q_len + i) * q_cols + h * pc.head_dim;
  const float neg_inf = uintBitsToFloat(0xFF800000u);
  if (t == 0u) saw_nan = 0u;
  for (uint d = t; d < pc.head_dim; d += WG) o[qr + d] = 0.0;
  const uint visible = pc.causal != 0u ? min(pc.kv_len, pc.q_offset + i + 1u) : pc.kv_len;
  float m = neg_inf;  // running max of the scores seen so far
  float l = 0.0;      // running sum of exp(score - m)
  barrier();
  for (uint c0 = 0u; c0 < visible; c0 += CHUNK) {
    const uint cn = min(CHUNK, visible - c0);
    float cmax = neg_inf;
    for (uint j = t; j < cn; j += WG) {
      const uint key = kv_base + c0 + j;
      float sc = neg_inf;
      if (pc.has_mask == 0u || mask[key] != 0) {
        const uint kr = key * kv_cols + kv_col;
        float dot = 0.0;
        for (uint d = 0u; d < pc.head_dim; ++d) dot += q[qr + d] * k[kr + d];
        sc = dot * pc.scale;
        if (pc.has_bias != 0u) sc += bias[(i * pc.kv_len + c0 + j) * pc.heads + h];
        if (isnan(sc)) saw_nan = 1u;
      }
      s[j] = sc;
      if (!isnan(sc)) cmax = max(cmax, sc);
    }
    const float m_new = max(m, group_max(cmax));
    // While every key so far is masked (m_new = -inf) subtract 0 instead, so that every p and
    // the correction are exp(-inf) = 0 rather than NaN.
    const float m_sub = (isinf(m_new) && m_new < 0.0) ? 0.0 : m_new;
    const float correction = exp(m - m_sub);  // 0 while m is still -inf
    float psum = 0.0;
    for (uint j = t; j < cn; j += WG) {
      const float p = exp(s[j] - m_sub);
      s[j] = p;
      psum += p;
    }
    l = l * correction + group_sum(psum);  // its barriers publish s[]
    for (uint d = t; d < pc.head_dim; d += WG) {
      float acc = o[qr + d] * correction;
      const uint vc = (kv_base + c0) * kv_cols + kv_col + d;
      for (uint j = 0u; j < cn; ++j) acc += s[j] * v[vc + j * kv_cols];
      o[qr + d] = acc;
    }
    m = m_new;
    barrier();  // s[] is rewritten by the next chunk
  }
  barrier();
  const bool nan_row = saw_nan != 0u;
  for (uint d = t; d < pc.head_dim; d += WG) {
    o[qr + d] = nan_row ? nan_value() : (l == 0.0 ? 0.0 : o[qr + d] / l);
  }
}
