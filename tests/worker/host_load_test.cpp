// metrics.host: the host's load and steal time around a perf job, read from /proc files under
// an injectable root (recorded values), and from the real /proc where there is one.
#include <fstream>

#include <gtest/gtest.h>

#include "worker/host_load.h"

namespace am::worker {
namespace {

class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() / ("am-host-load-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void write(const char* name, const std::string& text) { std::ofstream(root_ / name) << text; }
  std::filesystem::path root_;
};

TEST_F(FakeProc, ASampleReadsTheLoadAverageTheCpuCountAndTheTickCounters) {
  write("loadavg", "1.50 0.80 0.40 3/412 12345\n");
  write("stat",
        "cpu  100 5 50 800 10 3 2 40 7 0\n"
        "cpu0 50 2 25 400 5 1 1 20 0 0\n"
        "cpu1 50 3 25 400 5 2 1 20 0 0\n"
        "intr 12345\nctxt 999\n");
  auto s = read_host_sample(root_);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->load_1m, 1.5);
  EXPECT_EQ(s->cpus, 2);
  EXPECT_EQ(s->busy_ticks, 100u + 5 + 50 + 3 + 2);   // guest (7) is inside user already
  EXPECT_EQ(s->steal_ticks, 40u);
  EXPECT_EQ(s->total_ticks, 160u + 800 + 10 + 40);
}

TEST_F(FakeProc, NoProcFilesMeansNoSampleRatherThanAGuess) {
  EXPECT_FALSE(read_host_sample(root_).has_value());
  write("loadavg", "0.1 0.1 0.1 1/1 1\n");
  EXPECT_FALSE(read_host_sample(root_).has_value());   // no /proc/stat
  write("stat", "intr 1\n");
  EXPECT_FALSE(read_host_sample(root_).has_value());   // no cpu line
}

TEST(HostMetrics, OtherLoadIsTheHostsBusyTimeLessTheJobsOwnOverTheWallTime) {
  HostSample start{0.5, 4, 1000, 10, 10000};
  HostSample end{2.5, 4, 1000 + 600, 10 + 20, 10000 + 1000};   // 10 s at 100 ticks/s on 4 CPUs
  const auto m = host_metrics(start, end, /*job_cpu_s=*/4.0, /*wall_s=*/2.5, /*ticks_per_s=*/100);
  EXPECT_DOUBLE_EQ(m["load_start"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(m["load_end"].get<double>(), 2.5);
  EXPECT_EQ(m["cpus"], 4);
  EXPECT_DOUBLE_EQ(m["steal_fraction"].get<double>(), 0.02);
  EXPECT_DOUBLE_EQ(m["other_load"].get<double>(), (6.0 - 4.0) / 2.5);   // 0.8 CPUs of other work
  // Counters that went backwards (a different boot, a broken file) give no fractions.
  const auto bad = host_metrics(end, start, 1.0, 1.0, 100);
  EXPECT_FALSE(bad.contains("steal_fraction"));
  EXPECT_FALSE(bad.contains("other_load"));
}

#ifdef __linux__
TEST(HostMetrics, TheRealProcGivesSaneNumbers) {
  auto a = read_host_sample();
  ASSERT_TRUE(a.has_value());
  EXPECT_GE(a->cpus, 1);
  EXPECT_GE(a->load_1m, 0.0);
  EXPECT_GT(a->total_ticks, a->busy_ticks);
}
#endif

}  // namespace
}  // namespace am::worker
