#include "kernels/opencl/cl_kernels.h"

namespace am::kernels::opencl {
namespace {

// Compiled together with opencl_kernel_source() (same build options). Each kernel follows the
// cpu reference's formula for its op; see the op's header in kernels/.
constexpr std::string_view kSource = R"CLC(
// ---------------------------------------------------------------- rotary embeddings (rope.h)
// In place on x [rows][heads * head_dim]; cs [rows][half][2] holds cos and sin of each row's
// angles, computed by the host in double like the cpu. Work-item (i, r * heads + h) rotates
// pair i of head h of row r: (a, b) -> (a cos - b sin, a sin + b cos), with a at i * first_step
// and b `partner` further (neox: 1 and half; gptj: 2 and 1).
__kernel void rope(__global float* x, __global const float* cs, int heads, int head_dim,
                   int half_dim, int first_step, int partner) {
  const int i = get_global_id(0);
  const int rh = get_global_id(1);
  if (i >= half_dim) return;
  const int r = rh / heads;
  __global float* v = x + (size_t)rh * head_dim;
  const float c = cs[((size_t)r * half_dim + i) * 2];
  const float s = cs[((size_t)r * half_dim + i) * 2 + 1];
  const float a = v[i * first_step];
  const float b = v[i * first_step + partner];
  v[i * first_step] = a * c - b * s;
  v[i * first_step + partner] = a * s + b * c;
}

// ---------------------------------------------------------------- routing (routing.h)
// y[ids[i]] += scales[i] * x[i], one work-item per column walking i in order, so repeated ids
// accumulate in the cpu's order and never race.
__kernel void scatter_add_rows(__global const float* x, __global const int* ids,
                               __global const float* scales, __global float* y, int n, int cols) {
  const int c = get_global_id(0);
  if (c >= cols) return;
  for (int i = 0; i < n; ++i) {
    y[(size_t)ids[i] * cols + c] += scales[i] * x[(size_t)i * cols + c];
  }
}

// One work-item per row of logits [rows][experts]: p = softmax(row); the k largest p (ties: the
// lower expert first) in descending order, weighted p / (sum of chosen p if renormalize, else
// sum of all p). `p` is scratch of rows * experts floats.
__kernel void top_k(__global const float* logits, __global float* p, int rows, int experts, int k,
                    int renormalize, __global int* ids, __global float* weights) {
  const int r = get_global_id(0);
  if (r >= rows) return;
  __global const float* l = logits + (size_t)r * experts;
  __global float* pr = p + (size_t)r * experts;
  float mx = l[0];
  for (int e = 1; e < experts; ++e) mx = fmax(mx, l[e]);
  float sum = 0.0f;
  for (int e = 0; e < experts; ++e) {
    pr[e] = exp(l[e] - mx);
    sum += pr[e];
  }
  float chosen = 0.0f;
  for (int j = 0; j < k; ++j) {
    int best = 0;
    float best_p = -1.0f;  // every p >= 0; a taken expert is marked -2
    for (int e = 0; e < experts; ++e) {
      if (pr[e] > best_p) {
        best_p = pr[e];
        best = e;
      }
    }
    ids[(size_t)r * k + j] = best;
    weights[(size_t)r * k + j] = best_p;
    chosen += best_p;
    pr[best] = -2.0f;
  }
  const float denom = renormalize ? chosen : sum;
  for (int j = 0; j < k; ++j) weights[(size_t)r * k + j] /= denom;
}

// ---------------------------------------------------------------- activation products
// y[m, n] = scale * (a[m] . b[n]) (matmul_nt.h), one work-item per output.
__kernel void matmul_nt(__global const float* a, __global const float* b, float scale,
                        __global float* y, int M, int N, int K) {
  const int n = get_global_id(0);
  const int m = get_global_id(1);
  if (n >= N) return;
  __global const float* ar = a + (size_t)m * K;
  __global const float* br = b + (size_t)n * K;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += ar[k] * br[k];
  y[(size_t)m * N + n] = scale * acc;
}

// ---------------------------------------------------------------- calibration
// The fp32 FMA rate (kernels/cpu/fma_chain.h): 16 independent chains of dependent FMAs per
// work-item (four float4), summed so none is dropped.
__kernel void fma_chain(__global float* out, int n, int iterations) {
  const int i = get_global_id(0);
  if (i >= n) return;
  const float s = (float)i * 1e-7f;
  float4 a[4];
  for (int c = 0; c < 4; ++c) {
    a[c] = (float4)(s + 0.25f * (float)(4 * c), s + 0.25f * (float)(4 * c + 1), s + 0.25f * (float)(4 * c + 2),
                    s + 0.25f * (float)(4 * c + 3));
  }
  const float4 mul = (float4)(0.999999f);
  const float4 add = (float4)(1e-6f);
  for (int it = 0; it < iterations; ++it) {
    a[0] = fma(a[0], mul, add);
    a[1] = fma(a[1], mul, add);
    a[2] = fma(a[2], mul, add);
    a[3] = fma(a[3], mul, add);
  }
  const float4 sum = ((a[0] + a[1]) + a[2]) + a[3];
  out[i] = ((sum.x + sum.y) + sum.z) + sum.w;
}

// ---------------------------------------------------------------- pooling (pool2d.h)
// y[b, c] = mean over the sample's `positions` rows of x[., c].
__kernel void global_avg_pool(__global const float* x, __global float* y, int positions, int cols) {
  const int c = get_global_id(0);
  const int b = get_global_id(1);
  if (c >= cols) return;
  float s = 0.0f;
  for (int p = 0; p < positions; ++p) s += x[((size_t)b * positions + p) * cols + c];
  y[(size_t)b * cols + c] = s / (float)positions;
}
)CLC";

}  // namespace

std::string_view opencl_sequence_kernel_source() { return kSource; }

}  // namespace am::kernels::opencl
