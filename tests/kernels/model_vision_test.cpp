#include <gtest/gtest.h>

#include "family_test_util.h"

namespace am::kernels {
namespace {

nlohmann::json tiny_vit(bool distill) {
  return {{"image_size", 32}, {"patch", 8},       {"layers", 2},       {"hidden", 64},
          {"heads", 4},       {"intermediate", 128}, {"num_classes", 10}, {"distillation", distill}};
}

TEST(VisionFamily, VitClassifierGivesFiniteDeterministicLogitsCloseAtQ8) {
  testing::expect_family_basics(testing::family_spec("vision", tiny_vit(false), 2, 1), 2, 10, true, 1e-2);
}

TEST(VisionFamily, DeitDistilledHeadsGiveLogitsCloseAtQ8) {
  testing::expect_family_basics(testing::family_spec("vision", tiny_vit(true), 3, 1), 3, 10, true, 1e-2);
}

TEST(VisionFamily, MissingOpIsUnsupportedNamingIt) {
  testing::expect_unsupported_on_empty_backend(testing::family_spec("vision", tiny_vit(false), 1, 1));
}

TEST(VisionFamily, ImageSizeNotMultipleOfPatchIsRejectedNamingKey) {
  nlohmann::json c = tiny_vit(false);
  c["image_size"] = 30;
  ThreadPool pool(1);
  Result<std::unique_ptr<ModelGraph>> g = build_graph(testing::family_spec("vision", c, 1, 1), Precision::kF32,
                                                      ExecContext{best_kernel_path(), &pool});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("image_size"), std::string::npos);
}

nlohmann::json tiny_detr() {
  return {{"variant", "detr"},        {"image_size", 64},      {"backbone_width", 8}, {"backbone_depths", {1, 1, 2, 1}},
          {"backbone_expansion", 4},  {"hidden", 32},          {"encoder_layers", 2}, {"decoder_layers", 2},
          {"heads", 4},               {"intermediate", 64},    {"num_queries", 5},    {"num_classes", 7}};
}

TEST(VisionFamily, DetrClassLogitsAndBoxesFiniteDeterministicCloseAtQ8) {
  testing::expect_family_basics(testing::family_spec("vision", tiny_detr(), 2, 1), 2 * 5, 7 + 1 + 4, false, 2e-2);
}

TEST(VisionFamily, DetrBoxesAreInsideTheUnitSquare) {
  testing::FamilyRun r = testing::build_and_run(testing::family_spec("vision", tiny_detr(), 1, 1), "f32");
  for (int64_t q = 0; q < 5; ++q) {
    for (int64_t j = 8; j < 12; ++j) {
      EXPECT_GT(r.out.output.row(q)[j], 0.0f);
      EXPECT_LT(r.out.output.row(q)[j], 1.0f);
    }
  }
}

TEST(VisionFamily, DetrMissingOpIsUnsupported) {
  testing::expect_unsupported_on_empty_backend(testing::family_spec("vision", tiny_detr(), 1, 1));
}

}  // namespace
}  // namespace am::kernels
