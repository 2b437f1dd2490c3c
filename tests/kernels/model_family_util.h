// The contract every model family's graph is held to (model.h), checked on a tiny config:
// builds at f32 and q8_0, output shape and finiteness, determinism across runs, q8_0 close to
// but not identical with f32, phases for generative graphs, and Unsupported naming the op on a
// backend that implements nothing.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "jobs/job_spec.h"
#include "kernels/accuracy.h"
#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/models/model.h"
#include "kernels/thread_pool.h"
#include "tests/kernels/named_formats.h"
#include "tests/kernels/test_util.h"

namespace am::kernels::testing {

class NothingBackend final : public Backend {
 public:
  std::string_view name() const override { return "nothing"; }
  std::string device_name() const override { return "none"; }
};

struct FamilyExpectations {
  int64_t rows = 0;
  int64_t cols = 0;
  bool logits = false;
  bool generative = false;
  double max_q8_nmse = 1e-2;
};

inline GraphOutput run_graph(const jobs::JobSpec& spec, std::string_view precision, const ExecContext& ctx) {
  Result<std::unique_ptr<ModelGraph>> g = build_graph(spec, precision_named(precision), ctx);
  EXPECT_TRUE(g.ok()) << g.status().message();
  if (!g.ok()) return {};
  CpuBackend cpu(ctx);
  for (const auto& [op, format] : (*g)->required_ops()) {
    EXPECT_TRUE(cpu.supports(op, format).ok()) << op_name(op);
  }
  Result<GraphOutput> out = (*g)->run(cpu);
  EXPECT_TRUE(out.ok()) << out.status().message();
  if (!out.ok()) return {};
  return std::move(*out);
}

inline void expect_family_contract(const jobs::JobSpec& spec, const FamilyExpectations& want) {
  ThreadPool pool(2);
  ExecContext ctx{best_kernel_path(), &pool};
  GraphOutput a = run_graph(spec, "f32", ctx);
  GraphOutput b = run_graph(spec, "f32", ctx);
  GraphOutput q = run_graph(spec, "q8_0", ctx);
  ASSERT_EQ(a.output.rows(), want.rows);
  ASSERT_EQ(a.output.cols(), want.cols);
  ASSERT_EQ(q.output.rows(), want.rows);
  EXPECT_EQ(a.logits, want.logits);
  EXPECT_TRUE(all_finite(a.output.view()));
  EXPECT_TRUE(all_finite(q.output.view()));
  for (int64_t i = 0; i < a.output.numel(); ++i) {
    ASSERT_EQ(a.output.data()[i], b.output.data()[i]) << "run-to-run difference at " << i;
  }
  // Well-scaled: the RMS of the output is neither vanishing nor exploding.
  double sq = 0;
  for (int64_t i = 0; i < a.output.numel(); ++i) sq += static_cast<double>(a.output.data()[i]) * a.output.data()[i];
  const double rms = std::sqrt(sq / static_cast<double>(a.output.numel()));
  EXPECT_GT(rms, 1e-3);
  EXPECT_LT(rms, 1e3);
  const AccuracyMetrics m = compare_outputs(q.output.data(), a.output.data(), want.rows, want.cols);
  EXPECT_GT(m.nmse, 0.0) << "q8_0 must actually quantize";
  EXPECT_LT(m.nmse, want.max_q8_nmse);
  if (want.generative) {
    EXPECT_GT(a.phases.prefill_ms, 0.0);
    EXPECT_GT(a.phases.decode_ms, 0.0);
    EXPECT_GE(a.phases.first_token_ms, a.phases.prefill_ms);
    EXPECT_GT(a.phases.prefill_tokens, 0);
    EXPECT_GT(a.phases.decode_tokens, 0);
  }
  // A backend with no ops: the graph reports Unsupported naming an op and the backend.
  Result<std::unique_ptr<ModelGraph>> g = build_graph(spec, Precision::kF32, ctx);
  ASSERT_TRUE(g.ok());
  NothingBackend none;
  Result<GraphOutput> r = (*g)->run(none);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("not implemented on backend nothing"), std::string::npos)
      << r.status().message();
  ASSERT_FALSE((*g)->required_ops().empty());
  EXPECT_FALSE(none.supports((*g)->required_ops().front().first).ok());
}

}  // namespace am::kernels::testing
