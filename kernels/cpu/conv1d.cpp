#include "kernels/cpu/conv1d.h"

#include <string>
#include <vector>

namespace am::kernels {

int64_t conv1d_out_len(const Conv1dArgs& a) {
  if (a.stride < 1 || a.dilation < 1 || a.kernel < 1) return 0;
  const int64_t span = a.dilation * (a.kernel - 1) + 1;
  const int64_t padded = a.in_len + a.pad_left + a.pad_right;
  if (padded < span) return 0;
  return (padded - span) / a.stride + 1;
}

Status validate_conv1d(const Conv1dArgs& a) {
  auto bad = [](const std::string& what) { return invalid_argument("conv1d: " + what); };
  if (a.batch < 1 || a.in_len < 1 || a.in_channels < 1 || a.out_channels < 1 || a.kernel < 1 ||
      a.stride < 1 || a.dilation < 1 || a.groups < 1) {
    return bad("batch, in_len, channels, kernel, stride, dilation and groups must be positive");
  }
  if (a.pad_left < 0 || a.pad_right < 0) return bad("padding must be >= 0");
  if (a.in_channels % a.groups != 0 || a.out_channels % a.groups != 0) {
    return bad("groups " + std::to_string(a.groups) + " must divide in_channels " +
               std::to_string(a.in_channels) + " and out_channels " + std::to_string(a.out_channels));
  }
  if (a.weight == nullptr) return bad("weight is required");
  const int64_t out_len = conv1d_out_len(a);
  if (out_len < 1) return bad("input of length " + std::to_string(a.in_len) + " is shorter than the kernel");
  if (a.x.rows() != a.batch * a.in_len || a.x.cols() != a.in_channels) {
    return bad("x must be [batch*in_len, in_channels] = [" + std::to_string(a.batch * a.in_len) + ", " +
               std::to_string(a.in_channels) + "]");
  }
  if (a.y.rows() != a.batch * out_len || a.y.cols() != a.out_channels) {
    return bad("y must be [batch*out_len, out_channels] = [" + std::to_string(a.batch * out_len) + ", " +
               std::to_string(a.out_channels) + "]");
  }
  return Status::Ok();
}

void conv1d_rows(const Conv1dArgs& a, const ExecContext& ctx) {
  const int64_t out_len = conv1d_out_len(a);
  const int64_t cin_g = a.in_channels / a.groups;
  const int64_t cout_g = a.out_channels / a.groups;
  const int64_t k = a.kernel;
  // Repack the weight as [group][tap][c_in][c_out] so the innermost loop runs over contiguous
  // output channels (vectorisable, and a dense conv becomes a sequence of small GEMVs).
  std::vector<float> w(static_cast<std::size_t>(a.out_channels * cin_g * k));
  for (int64_t o = 0; o < a.out_channels; ++o) {
    const int64_t g = o / cout_g, oo = o % cout_g;
    for (int64_t c = 0; c < cin_g; ++c)
      for (int64_t t = 0; t < k; ++t)
        w[static_cast<std::size_t>(((g * k + t) * cin_g + c) * cout_g + oo)] = a.weight[(o * cin_g + c) * k + t];
  }
  parallel_for(ctx, a.batch * out_len, 8, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / out_len, t_out = r % out_len;
      float* y = a.y.row(r);
      for (int64_t o = 0; o < a.out_channels; ++o) y[o] = a.bias != nullptr ? a.bias[o] : 0.0f;
      for (int64_t t = 0; t < k; ++t) {
        const int64_t t_in = t_out * a.stride + t * a.dilation - a.pad_left;
        if (t_in < 0 || t_in >= a.in_len) continue;
        const float* x = a.x.row(b * a.in_len + t_in);
        for (int64_t g = 0; g < a.groups; ++g) {
          const float* wg = &w[static_cast<std::size_t>((g * k + t) * cin_g * cout_g)];
          float* yg = y + g * cout_g;
          const float* xg = x + g * cin_g;
          for (int64_t c = 0; c < cin_g; ++c) {
            const float xv = xg[c];
            const float* wr = wg + c * cout_g;
            for (int64_t oo = 0; oo < cout_g; ++oo) yg[oo] += xv * wr[oo];
          }
        }
      }
    }
  });
}

}  // namespace am::kernels
