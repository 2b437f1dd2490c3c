#include "kernels/cpu/attention_bias.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/softmax.h"
#include "kernels/cpu/vec_f32.h"

namespace am::kernels {

Status validate_attention_bias(const AttentionArgs& a, ConstTensorView bias) {
  AM_RETURN_IF_ERROR(validate_attention_args(a));
  if (bias.data == nullptr || bias.rows() != a.q_len * a.kv_len || bias.cols() != a.heads) {
    return invalid_argument("attention bias must be [q_len*kv_len, heads] = [" +
                            std::to_string(a.q_len * a.kv_len) + ", " + std::to_string(a.heads) + "]");
  }
  return Status::Ok();
}

void attention_with_bias(const AttentionArgs& a, ConstTensorView bias, const ExecContext& ctx) {
  const float scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(static_cast<float>(a.head_dim));
  const int64_t group = a.heads / a.kv_heads;
  const int64_t kv_cols = a.kv_heads * a.head_dim;
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  parallel_for(ctx, a.batch * a.heads * a.q_len, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(static_cast<std::size_t>(a.kv_len));
    for (int64_t idx = begin; idx < end; ++idx) {
      const int64_t i = idx % a.q_len;
      const int64_t h = (idx / a.q_len) % a.heads;
      const int64_t b = idx / (a.q_len * a.heads);
      const int64_t kv_base = b * a.kv_len;
      const int64_t q_col = h * a.head_dim;
      const int64_t kv_col = (h / group) * a.head_dim;
      float* out = a.out.row(b * a.q_len + i) + q_col;
      const int64_t visible = a.causal ? std::min<int64_t>(a.kv_len, a.q_offset + i + 1) : a.kv_len;
      bool any = false;
      if (visible > 0) {
        dot_rows_f32(a.q.row(b * a.q_len + i) + q_col, a.k.row(kv_base) + kv_col, kv_cols, visible,
                     a.head_dim, scores.data(), ctx.path);
        const float* brow = bias.data + (i * a.kv_len) * a.heads + h;
        for (int64_t j = 0; j < visible; ++j) {
          const bool padded = a.key_mask != nullptr && a.key_mask[kv_base + j] == 0;
          float& s = scores[static_cast<std::size_t>(j)];
          s = padded ? kMasked : s * scale + brow[j * a.heads];
          any = any || !padded;
        }
      }
      if (!any) {
        std::fill(out, out + a.head_dim, 0.0f);
        continue;
      }
      softmax_row(scores.data(), visible);
      weighted_sum_rows_f32(scores.data(), a.v.row(kv_base) + kv_col, kv_cols, visible, a.head_dim, out,
                            ctx.path);
    }
  });
}

}  // namespace am::kernels
