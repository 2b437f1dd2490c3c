// coordinator/db_lock.h: one coordinator per database. OFD locks conflict between two open file
// descriptions even in one process, so these run in-process; the integration test
// (tests/integration/fleet_basics_test.cpp) does the same with real coordinators.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "coordinator/db_lock.h"

namespace am::coord {
namespace {

class DbLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("am-db-lock-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(DbLockTest, ASecondHolderIsRefusedAtOnceWithTheHolderNamed) {
  const auto db = dir_ / "a.db";
  auto first = DbLock::acquire(db, "serve");
  ASSERT_TRUE(first.ok()) << first.status().message();
  ASSERT_TRUE(first->set_endpoint("tcp://127.0.0.1:7450").ok());
  EXPECT_FALSE(first->previous_holder().has_value());

  auto second = DbLock::acquire(db, "run");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
  const std::string& msg = second.status().message();
  EXPECT_NE(msg.find("in use by another coordinator"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pid " + std::to_string(getpid())), std::string::npos) << msg;
  EXPECT_NE(msg.find("on host " + first->holder().host), std::string::npos) << msg;
  EXPECT_NE(msg.find("accelmatrix serve"), std::string::npos) << msg;
  EXPECT_NE(msg.find("endpoint tcp://127.0.0.1:7450"), std::string::npos) << msg;
  EXPECT_NE(msg.find("since 20"), std::string::npos) << msg;

  // A refused attempt leaves the holder's record alone: the next one still names it.
  auto third = DbLock::acquire(db, "run");
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.status().message().find("endpoint tcp://127.0.0.1:7450"), std::string::npos)
      << third.status().message();
}

TEST_F(DbLockTest, OtherSpellingsOfThePathShareTheLock) {
  const auto db = dir_ / "b.db";
  std::ofstream(db) << "";   // a symlink is resolved when the database it points at exists
  auto first = DbLock::acquire(db, "serve");
  ASSERT_TRUE(first.ok());
  std::filesystem::create_directories(dir_ / "sub");
  EXPECT_FALSE(DbLock::acquire(dir_ / "sub" / ".." / "b.db", "serve").ok());
  std::filesystem::create_symlink(db, dir_ / "link.db");
  EXPECT_FALSE(DbLock::acquire(dir_ / "link.db", "serve").ok());
}

// A hard link is another name with a lock file of its own; the database file is locked too.
TEST_F(DbLockTest, AHardLinkToAHeldDatabaseIsRefusedAndFreedWithTheHolder) {
  const auto db = dir_ / "h.db";
  std::ofstream(db) << "not empty";
  std::filesystem::create_hard_link(db, dir_ / "other-name.db");
  {
    auto first = DbLock::acquire(db, "serve");
    ASSERT_TRUE(first.ok()) << first.status().message();
    auto second = DbLock::acquire(dir_ / "other-name.db", "run");
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
    EXPECT_NE(second.status().message().find("hard link"), std::string::npos) << second.status().message();
  }
  EXPECT_TRUE(DbLock::acquire(dir_ / "other-name.db", "run").ok());
}

TEST_F(DbLockTest, AReleasedLockIsFreeAndLeavesNoRecord) {
  const auto db = dir_ / "c.db";
  {
    auto first = DbLock::acquire(db, "serve");
    ASSERT_TRUE(first.ok());
    EXPECT_TRUE(read_db_holder(db).has_value());
  }
  EXPECT_FALSE(read_db_holder(db).has_value());
  auto again = DbLock::acquire(db, "serve");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_FALSE(again->previous_holder().has_value());
  EXPECT_TRUE(std::filesystem::exists(DbLock::lock_path_for(db)));
}

TEST_F(DbLockTest, TheRecordOfAHolderThatDiedIsReportedAsATakeover) {
  const auto db = dir_ / "d.db";
  // What a crashed coordinator leaves: its record, and no lock (the kernel released it).
  std::ofstream(DbLock::lock_path_for(db))
      << R"({"host":"deadhost","pid":999999,"command":"run","endpoint":"tcp://127.0.0.1:1","started_at_ms":1})";
  auto lock = DbLock::acquire(db, "serve");
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  ASSERT_TRUE(lock->previous_holder().has_value());
  EXPECT_EQ(lock->previous_holder()->host, "deadhost");
  EXPECT_EQ(lock->previous_holder()->pid, 999999);
  EXPECT_EQ(read_db_holder(db)->pid, getpid());
}

TEST_F(DbLockTest, AnUnwritableLockDirectoryIsAnIoError) {
  if (geteuid() == 0) GTEST_SKIP() << "root can write anywhere";
  std::filesystem::create_directories(dir_ / "ro");
  std::filesystem::permissions(dir_ / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  auto lock = DbLock::acquire(dir_ / "ro" / "e.db", "serve");
  EXPECT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kIoError);
  std::filesystem::permissions(dir_ / "ro", std::filesystem::perms::owner_all);
}

}  // namespace
}  // namespace am::coord
