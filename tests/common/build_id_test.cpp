// common/build_id.h: the linker's build id of the running executable, which keys the restart
// digest of a plan (jobs/plan_digest.h).
#include <gtest/gtest.h>

#include "common/build_id.h"

namespace am {
namespace {

TEST(BuildId, ThisExecutableHasOneOfHexDigitsAndItIsStable) {
  // The linker's --build-id (Debian's default): without one no restart could resume.
  const std::string id = executable_build_id();
  EXPECT_GE(id.size(), 16u) << id;
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(executable_build_id(), id);
}

TEST(BuildId, TheLoadedCodeIsTheExecutableAndEveryLibraryByName) {
  const std::string code = loaded_code_id();
  EXPECT_TRUE(code.starts_with(executable_build_id() + "\n")) << code;
  EXPECT_NE(code.find("\nlibc.so.6 "), std::string::npos) << code;   // a library, by file name
  EXPECT_NE(code.find("\nlibstdc++.so.6 "), std::string::npos) << code;
  EXPECT_EQ(loaded_code_id(), code);
}

}  // namespace
}  // namespace am
