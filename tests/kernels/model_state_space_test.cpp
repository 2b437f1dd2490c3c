#include <gtest/gtest.h>

#include "family_test_util.h"

namespace am::kernels {
namespace {

nlohmann::json tiny_mamba() {
  return {{"variant", "mamba"}, {"layers", 3}, {"hidden", 64}, {"intermediate", 128}, {"state_size", 8},
          {"conv_kernel", 4},   {"dt_rank", 4}, {"vocab", 300}, {"decode_steps", 3}};
}
nlohmann::json tiny_rwkv() {
  return {{"variant", "rwkv"}, {"layers", 3}, {"hidden", 64}, {"intermediate", 256}, {"vocab", 300},
          {"decode_steps", 3}};
}

void expect_recurrent_basics(const nlohmann::json& cfg) {
  const jobs::JobSpec spec = testing::family_spec("state-space", cfg, 2, 6);
  testing::expect_family_basics(spec, 2 * 4, 300, true, 1e-2);
  testing::FamilyRun r = testing::build_and_run(spec, "f32");
  EXPECT_EQ(r.out.phases.prefill_tokens, 12);
  EXPECT_EQ(r.out.phases.decode_tokens, 6);
  EXPECT_GT(r.out.phases.prefill_ms, 0.0);
  EXPECT_GT(r.out.phases.decode_ms, 0.0);
  EXPECT_GE(r.out.phases.first_token_ms, r.out.phases.prefill_ms);
}

TEST(StateSpaceFamily, MambaPrefillDecodeLogitsFiniteDeterministicCloseAtQ8) { expect_recurrent_basics(tiny_mamba()); }
TEST(StateSpaceFamily, RwkvPrefillDecodeLogitsFiniteDeterministicCloseAtQ8) { expect_recurrent_basics(tiny_rwkv()); }

void expect_one_decode_step(nlohmann::json cfg) {
  cfg["decode_steps"] = 1;
  const jobs::JobSpec spec = testing::family_spec("state-space", cfg, 1, 5);
  testing::FamilyRun r = testing::build_and_run(spec, "f32");
  EXPECT_EQ(r.out.output.rows(), 2);
  EXPECT_EQ(r.out.phases.decode_tokens, 1);
  EXPECT_EQ(r.out.phases.prefill_tokens, 5);
}

TEST(StateSpaceFamily, OneDecodeStepGivesPrefillAndOneDecodeRow) {
  expect_one_decode_step(tiny_mamba());
  expect_one_decode_step(tiny_rwkv());
}

TEST(StateSpaceFamily, MissingOpIsUnsupportedNamingIt) {
  testing::expect_unsupported_on_empty_backend(testing::family_spec("state-space", tiny_mamba(), 1, 4));
  testing::expect_unsupported_on_empty_backend(testing::family_spec("state-space", tiny_rwkv(), 1, 4));
}

TEST(StateSpaceFamily, UnknownVariantIsRejected) {
  nlohmann::json c = tiny_mamba();
  c["variant"] = "s4";
  ThreadPool pool(1);
  Result<std::unique_ptr<ModelGraph>> g =
      build_graph(testing::family_spec("state-space", c, 1, 4), Precision::kF32, ExecContext{best_kernel_path(), &pool});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("variant"), std::string::npos);
}

}  // namespace
}  // namespace am::kernels
