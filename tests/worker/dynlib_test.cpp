// DynamicLibrary: the first loadable name wins, failures name every try, symbols resolve.
#include <gtest/gtest.h>

#include "worker/probe_dynlib.h"

namespace am::worker {
namespace {

TEST(DynamicLibrary, OpensTheFirstLoadableNameAndResolvesSymbols) {
  auto lib = DynamicLibrary::open_first({"libam-does-not-exist.so.7", "libm.so.6"});
  ASSERT_TRUE(lib.ok()) << lib.status().to_string();
  EXPECT_EQ(lib->name(), "libm.so.6");
  EXPECT_EQ(lib->path().front(), '/') << lib->path();
  auto cosine = lib->function<double (*)(double)>("cos");
  ASSERT_NE(cosine, nullptr);
  EXPECT_DOUBLE_EQ(cosine(0.5), 0.87758256189037276);
  EXPECT_EQ(lib->symbol("am_no_such_symbol"), nullptr);

  const nlohmann::json answers = library_answers(lib);
  EXPECT_EQ(answers["loaded"], true);
  EXPECT_EQ(answers["path"], lib->path());
  EXPECT_TRUE(library_loaded({{"library", answers}}));

  DynamicLibrary moved = std::move(*lib);
  EXPECT_NE(moved.function<double (*)(double)>("cos"), nullptr);
}

TEST(DynamicLibrary, FailureNamesEveryTry) {
  auto lib = DynamicLibrary::open_first({"libam-missing-one.so", "libam-missing-two.so"});
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.status().code(), StatusCode::kNotFound);
  EXPECT_NE(lib.status().message().find("libam-missing-one.so"), std::string::npos);
  EXPECT_NE(lib.status().message().find("libam-missing-two.so"), std::string::npos);
  const nlohmann::json answers = library_answers(lib);
  EXPECT_EQ(answers["loaded"], false);
  EXPECT_FALSE(library_loaded({{"library", answers}}));
  EXPECT_FALSE(library_loaded(nlohmann::json::array()));
}

}  // namespace
}  // namespace am::worker
