#include "kernels/cpu/activation.h"

#include <string>

#include "common/check.h"
#include "kernels/cpu/activation_kernels.h"

namespace am::kernels {

Result<Activation> activation_from_name(std::string_view name) {
  if (name == "gelu") return Activation::kGeluErf;
  if (name == "gelu_tanh" || name == "gelu_new" || name == "gelu_pytorch_tanh") {
    return Activation::kGeluTanh;
  }
  if (name == "relu") return Activation::kRelu;
  if (name == "silu" || name == "swish") return Activation::kSilu;
  if (name == "sigmoid") return Activation::kSigmoid;
  if (name == "quick_gelu") return Activation::kQuickGelu;
  return unsupported("activation " + std::string(name) + " not implemented on backend cpu");
}

std::string_view activation_name(Activation act) {
  switch (act) {
    case Activation::kGeluErf: return "gelu";
    case Activation::kGeluTanh: return "gelu_tanh";
    case Activation::kRelu: return "relu";
    case Activation::kSilu: return "silu";
    case Activation::kSigmoid: return "sigmoid";
    case Activation::kQuickGelu: return "quick_gelu";
  }
  AM_UNREACHABLE("Activation value outside its enum");
}

namespace {

using VectorFn = void (*)(float*, int64_t);

// The vector form of `act` on `path`, or nullptr where the scalar loop runs (the scalar path is
// the reference; relu is a compare the compiler vectorizes; neon and the tanh forms have none).
VectorFn vector_activation(Activation act, KernelPath path) {
#if defined(__x86_64__)
  if (path == KernelPath::kAvx512) {
    switch (act) {
      case Activation::kGeluErf: return detail::gelu_erf_avx512;
      case Activation::kSilu: return detail::silu_avx512;
      case Activation::kSigmoid: return detail::sigmoid_avx512;
      default: return nullptr;
    }
  }
  if (path == KernelPath::kAvx2) {
    switch (act) {
      case Activation::kGeluErf: return detail::gelu_erf_avx2;
      case Activation::kSilu: return detail::silu_avx2;
      case Activation::kSigmoid: return detail::sigmoid_avx2;
      default: return nullptr;
    }
  }
#else
  (void)act;
  (void)path;
#endif
  return nullptr;
}

}  // namespace

void apply_activation(Activation act, TensorView x, const ExecContext& ctx) {
  const int64_t cols = x.cols();
  const VectorFn vector = vector_activation(act, ctx.path);
  parallel_for(ctx, x.rows(), 8, [&](int64_t begin, int64_t end) {
    float* p = x.row(begin);
    const int64_t n = (end - begin) * cols;
    if (vector != nullptr) {
      vector(p, n);
      return;
    }
    switch (act) {
      case Activation::kGeluErf:
        for (int64_t i = 0; i < n; ++i) p[i] = gelu_erf(p[i]);
        break;
      case Activation::kGeluTanh:
        for (int64_t i = 0; i < n; ++i) p[i] = gelu_tanh(p[i]);
        break;
      case Activation::kRelu:
        // Written as a compare so NaN passes through instead of turning into 0.
        for (int64_t i = 0; i < n; ++i) p[i] = p[i] < 0.0f ? 0.0f : p[i];
        break;
      case Activation::kSilu:
        for (int64_t i = 0; i < n; ++i) p[i] = silu(p[i]);
        break;
      case Activation::kSigmoid:
        for (int64_t i = 0; i < n; ++i) p[i] = sigmoid(p[i]);
        break;
      case Activation::kQuickGelu:
        for (int64_t i = 0; i < n; ++i) p[i] = quick_gelu(p[i]);
        break;
    }
  });
}

}  // namespace am::kernels
