#include "kernels/models/seeded_weights.h"

#include <utility>

#include "kernels/rng.h"

namespace am::kernels {
namespace {

constexpr uint64_t kTokenStreamBase = 0x544F4B4Eull;  // "TOKN"

}  // namespace

SeededWeights::SeededWeights(uint64_t seed, uint64_t stream, const ExecContext& ctx)
    : seed_(derive_seed(seed, stream)), ctx_(ctx) {}

Tensor SeededWeights::normal(Shape shape, float mean, float stddev) {
  Tensor t(shape);
  fill_normal(t.data(), t.numel(), mean, stddev, derive_seed(seed_, next_++), ctx_);
  return t;
}

Tensor SeededWeights::uniform(Shape shape, float lo, float hi) {
  Tensor t(shape);
  Xoshiro256 rng(derive_seed(seed_, next_++));
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = lo + (hi - lo) * rng.uniform01();
  return t;
}

Linear SeededWeights::linear(int64_t in, int64_t out, float stddev, bool with_bias, float bias_std,
                             WeightFormat format) {
  Tensor w = normal(Shape{out, in}, 0.0f, stddev);
  // The bias stream is consumed either way, so adding a bias to one layer never shifts the
  // values of the layers after it.
  Tensor b = normal(Shape{out}, 0.0f, bias_std);
  return Linear::create(std::move(w), with_bias ? std::move(b) : Tensor(), format, ctx_);
}

std::size_t linear_bytes(int64_t in, int64_t out, WeightFormat format, bool with_bias) {
  return static_cast<std::size_t>(out) * weight_format_row_bytes(format, in) +
         (with_bias ? static_cast<std::size_t>(out) * sizeof(float) : 0);
}

Status check_weight_budget(const std::string& family, std::size_t bytes) {
  if (bytes <= kSyntheticWeightCapBytes) return Status::Ok();
  return invalid_argument(family + ": synthetic weights would take " + std::to_string(bytes >> 20) +
                          " MiB, above the cap of " + std::to_string(kSyntheticWeightCapBytes >> 20) +
                          " MiB; scale the model down with plan overrides (layers, hidden, ...)");
}

std::vector<int32_t> seeded_token_ids(int64_t n, int64_t vocab, uint64_t seed, uint64_t stream) {
  Xoshiro256 rng(derive_seed(seed, kTokenStreamBase + stream));
  std::vector<int32_t> ids(static_cast<std::size_t>(n));
  for (int32_t& id : ids) id = static_cast<int32_t>(rng.below(static_cast<uint32_t>(vocab)));
  return ids;
}

}  // namespace am::kernels
