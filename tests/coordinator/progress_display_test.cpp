// The progress display of `run` and `serve` (issue 13 item 6) and the local worker ids a restart
// recognises (item 3): pure functions.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "coordinator/local_workers.h"
#include "coordinator/progress_display.h"

namespace am::coord {
namespace {

Progress progress(int total, int done, std::map<ResultStatus, int> by_status = {}) {
  Progress p;
  p.total = total;
  p.done = done;
  p.by_status = std::move(by_status);
  return p;
}

TEST(ProgressStyle, ATerminalGetsTheUpdatingLineAndColourUnlessNoColorOrDumb) {
  EXPECT_TRUE(progress_style(true, "xterm", nullptr).tty);
  EXPECT_TRUE(progress_style(true, "xterm", nullptr).color);
  EXPECT_TRUE(progress_style(true, nullptr, "").color) << "NO_COLOR set but empty does not count";
  EXPECT_TRUE(progress_style(true, "xterm", "1").tty);
  EXPECT_FALSE(progress_style(true, "xterm", "1").color);
  EXPECT_FALSE(progress_style(true, "dumb", nullptr).tty);
  EXPECT_FALSE(progress_style(true, "dumb", nullptr).color);
  EXPECT_FALSE(progress_style(false, "xterm", nullptr).tty);
  EXPECT_FALSE(progress_style(false, "xterm", nullptr).color);
}

TEST(ProgressEta, UnknownUntilAJobIsMeasuredThenRoundsOfTheMeanDuration) {
  Progress p = progress(10, 0);
  EXPECT_EQ(estimate_eta_ms(p), std::nullopt);
  p.done = 4;
  p.measured_jobs = 4;
  p.measured_job_ms = 4 * 2000;
  p.slots = 1;
  EXPECT_EQ(estimate_eta_ms(p), 6 * 2000);
  p.slots = 4;   // 6 left on 4 slots: two rounds
  EXPECT_EQ(estimate_eta_ms(p), 2 * 2000);
  p.slots = 0;   // no worker now: as if one
  EXPECT_EQ(estimate_eta_ms(p), 6 * 2000);
  p.done = 10;
  EXPECT_EQ(estimate_eta_ms(p), 0);
}

TEST(ProgressFormat, DurationsReadLikeAClock) {
  EXPECT_EQ(format_duration(-5), "0ms");
  EXPECT_EQ(format_duration(850), "850ms");
  EXPECT_EQ(format_duration(12'400), "12s");
  EXPECT_EQ(format_duration(185'000), "3m05s");
  EXPECT_EQ(format_duration(3'720'000), "1h02m");
}

TEST(ProgressFormat, TheStatusLineCountsPassFailedAndOthersWithElapsedAndEta) {
  Progress p = progress(8, 5, {{ResultStatus::kPass, 2}, {ResultStatus::kDegraded, 1}, {ResultStatus::kCrash, 1},
                               {ResultStatus::kSkipped, 1}});
  p.leased = 2;
  p.slots = 2;
  p.measured_jobs = 4;
  p.measured_job_ms = 4 * 10'000;
  EXPECT_EQ(format_status_line(p, 65'000, false),
            "[5/8] 2 pass, 1 degraded, 1 failed, 1 other, 2 running  1m05s elapsed, ETA 20s");
  p.measured_jobs = 0;
  EXPECT_EQ(format_status_line(p, 1'000, false),
            "[5/8] 2 pass, 1 degraded, 1 failed, 1 other, 2 running  1s elapsed, ETA ?");
  const std::string coloured = format_status_line(p, 1'000, true);
  EXPECT_NE(coloured.find("\033[32m2 pass\033[0m"), std::string::npos) << coloured;
  EXPECT_NE(coloured.find("\033[31m1 failed\033[0m"), std::string::npos) << coloured;
  // Done: no ETA; nothing failed: not red.
  const std::string done = format_status_line(progress(2, 2, {{ResultStatus::kPass, 2}}), 3'000, true);
  EXPECT_EQ(done.find("ETA"), std::string::npos) << done;
  EXPECT_EQ(done.find("\033[31m"), std::string::npos) << done;
}

// A job's line carries what its worker said: the display writes it inert, piped or on a terminal.
TEST(ProgressDisplay, AJobsLineCannotCarryTerminalControlSequences) {
  for (bool tty : {false, true}) {
    std::FILE* out = std::tmpfile();
    ASSERT_NE(out, nullptr);
    ProgressDisplay display(progress_style(tty, "xterm", "1"), out);
    Progress p = progress(2, 1, {{ResultStatus::kFail, 1}});
    p.last_event = "fail  m cpu f32  \x1b]0;pwned\x07\x1b[2J\x1b[1;31mFAKE ALL PASS\r";
    display.update(p);
    display.finish();
    std::rewind(out);
    std::string text;
    for (int c = std::fgetc(out); c != EOF; c = std::fgetc(out)) text += static_cast<char>(c);
    std::fclose(out);
    EXPECT_NE(text.find("FAKE ALL PASS"), std::string::npos) << text;
    EXPECT_EQ(text.find("\x1b]0;"), std::string::npos) << "tty " << tty;
    EXPECT_EQ(text.find("\x1b[2J"), std::string::npos) << "tty " << tty;
    EXPECT_EQ(text.find('\x07'), std::string::npos) << "tty " << tty;
  }
}

// Two jobs that end with the same line are two events: the second used to go unprinted.
TEST(ProgressDisplay, TwoEventsWithTheSameTextAreTwoLines) {
  std::FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  ProgressDisplay display(progress_style(false, "xterm", "1"), out);
  Progress p = progress(3, 1, {{ResultStatus::kError, 1}});
  p.last_event = "error  selftest:exit3 cpu f32 b1 s32  (exited with code 3)";
  p.event_seq = 1;
  display.update(p);
  display.update(p);   // a snapshot without a new event prints nothing
  p.done = 2;
  p.event_seq = 2;
  display.update(p);
  std::rewind(out);
  std::string text;
  for (int c = std::fgetc(out); c != EOF; c = std::fgetc(out)) text += static_cast<char>(c);
  std::fclose(out);
  EXPECT_NE(text.find("[1/3] error"), std::string::npos) << text;
  EXPECT_NE(text.find("[2/3] error"), std::string::npos) << text;
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
}

TEST(LocalWorkerIds, TheRunPidIsReadBackOnlyFromALocalWorkersId) {
  EXPECT_EQ(local_worker_id(4242, 3), "local-4242-3");
  EXPECT_EQ(local_worker_run_pid("local-4242-3"), 4242);
  EXPECT_EQ(local_worker_run_pid(local_worker_id(7, 12)), 7);
  for (const char* other : {"w-7f3a", "local", "local-", "local-12", "local-12-", "local--3", "local-x-1",
                            "local-1-x", "local-0-1", "local-12-3-4", "xlocal-12-3", "local-99999999999999999999-1"}) {
    EXPECT_EQ(local_worker_run_pid(other), std::nullopt) << other;
  }
}

}  // namespace
}  // namespace am::coord
