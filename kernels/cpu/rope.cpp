#include "kernels/cpu/rope.h"

#include <cmath>
#include <string>
#include <vector>

namespace am::kernels {

Result<RopeLayout> rope_layout_from_name(std::string_view name) {
  if (name == "neox") return RopeLayout::kNeox;
  if (name == "gptj") return RopeLayout::kGptj;
  return invalid_argument("rope layout '" + std::string(name) + "' is not neox or gptj");
}

std::string_view rope_layout_name(RopeLayout layout) {
  return layout == RopeLayout::kNeox ? "neox" : "gptj";
}

Status validate_rope(ConstTensorView x, const RopeParams& p, const int32_t* positions) {
  const int64_t rotary = p.rotary_dim == 0 ? p.head_dim : p.rotary_dim;
  if (p.heads < 1 || p.head_dim < 1) return invalid_argument("rope: heads and head_dim must be positive");
  if (x.cols() != p.heads * p.head_dim) {
    return invalid_argument("rope: x has " + std::to_string(x.cols()) + " columns, heads*head_dim is " +
                            std::to_string(p.heads * p.head_dim));
  }
  if (rotary < 2 || rotary > p.head_dim || rotary % 2 != 0) {
    return invalid_argument("rope: rotary_dim " + std::to_string(rotary) +
                            " must be even and in [2, head_dim " + std::to_string(p.head_dim) + "]");
  }
  if (!(p.theta > 1.0f) || !std::isfinite(p.theta)) return invalid_argument("rope: theta must be > 1");
  if (x.rows() > 0 && positions == nullptr) return invalid_argument("rope: positions are required");
  for (int64_t r = 0; r < x.rows(); ++r) {
    if (positions[r] < 0) {
      return invalid_argument("rope: negative position " + std::to_string(positions[r]) + " at row " +
                              std::to_string(r));
    }
  }
  return Status::Ok();
}

void rope_rows(TensorView x, const int32_t* positions, const RopeParams& p, const ExecContext& ctx) {
  const int64_t rotary = p.rotary_dim == 0 ? p.head_dim : p.rotary_dim;
  const int64_t half = rotary / 2;
  std::vector<double> inv_freq(static_cast<std::size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freq[static_cast<std::size_t>(i)] =
        std::pow(static_cast<double>(p.theta), -2.0 * static_cast<double>(i) / static_cast<double>(rotary));
  }
  // Pair offsets: neox rotates (i, i + half), gptj (2i, 2i + 1).
  const int64_t first_step = p.layout == RopeLayout::kNeox ? 1 : 2;
  const int64_t partner = p.layout == RopeLayout::kNeox ? half : 1;
  parallel_for(ctx, x.rows(), 16, [&](int64_t begin, int64_t end) {
    std::vector<float> cs(static_cast<std::size_t>(half)), sn(static_cast<std::size_t>(half));
    for (int64_t r = begin; r < end; ++r) {
      const double pos = static_cast<double>(positions[r]);
      for (int64_t i = 0; i < half; ++i) {
        const double angle = pos * inv_freq[static_cast<std::size_t>(i)];
        cs[static_cast<std::size_t>(i)] = static_cast<float>(std::cos(angle));
        sn[static_cast<std::size_t>(i)] = static_cast<float>(std::sin(angle));
      }
      float* row = x.row(r);
      for (int64_t h = 0; h < p.heads; ++h) {
        float* v = row + h * p.head_dim;
        for (int64_t i = 0; i < half; ++i) {
          float& a = v[i * first_step];
          float& b = v[i * first_step + partner];
          const float c = cs[static_cast<std::size_t>(i)], s = sn[static_cast<std::size_t>(i)];
          const float na = a * c - b * s;
          const float nb = a * s + b * c;
          a = na;
          b = nb;
        }
      }
    }
  });
}

}  // namespace am::kernels
