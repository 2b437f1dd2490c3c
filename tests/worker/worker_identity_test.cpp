// The worker's registration secret (PROTOCOL §5.8) and its credit window (§5.2).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/jobs/temp_dir.h"
#include "worker/client.h"
#include "worker/credit_window.h"

namespace am::worker {
namespace {

using jobs::testing::TempDir;

TEST(WorkerSecret, IsCreatedOnceKeptPrivateAndReadBackUnchanged) {
  TempDir dir;
  auto first = load_or_create_worker_secret(dir.path(), "w-1");
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->size(), 64u);
  EXPECT_EQ(first->find_first_not_of("0123456789abcdef"), std::string::npos);
  const auto file = dir.path() / "secret-w-1";
  EXPECT_EQ(std::filesystem::status(file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto again = load_or_create_worker_secret(dir.path(), "w-1");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  auto other = load_or_create_worker_secret(dir.path(), "w-2");   // one secret per worker id
  ASSERT_TRUE(other.ok());
  EXPECT_NE(*other, *first);
}

TEST(WorkerSecret, MalformedFileIsRefusedNotReplaced) {
  TempDir dir;
  std::ofstream(dir.path() / "secret-w-1") << "short\n";
  auto s = load_or_create_worker_secret(dir.path(), "w-1");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("malformed worker secret"), std::string::npos);
}

TEST(CreditWindow, StatesAbsoluteFreeSlotsWithTheAssignsSeenAndRepeatsOnlyWhenAsked) {
  CreditWindow w({"cpu:0", "opencl:0"});
  w.on_welcome();
  auto r = w.ready(2, false);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r->window, (std::map<std::string, int>{{"cpu:0", 2}, {"opencl:0", 2}}));
  EXPECT_EQ(r->seen, 0);
  EXPECT_FALSE(w.ready(2, false).has_value());   // unchanged: nothing to say
  EXPECT_TRUE(w.ready(2, true).has_value());     // forced (after an ACK): said again
  w.on_assign();
  r = w.ready(1, false);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->window->at("cpu:0"), 1);
  EXPECT_EQ(r->seen, 1);
  w.forget_last_sent();                          // that READY could not be sent
  EXPECT_TRUE(w.ready(1, false).has_value());
  w.on_welcome();                                // a new session counts from zero again
  r = w.ready(1, false);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->seen, 0);
}

}  // namespace
}  // namespace am::worker
