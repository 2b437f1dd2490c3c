// execute_job() against a real job process (the job_mode_host binary, which runs the same
// run_job_mode() as accelmatrix-worker) told to misbehave through "selftest:<mode>" specs.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "common/clock.h"
#include "common/proc_memory.h"
#include "common/reliability.h"
#include "jobs/job_spec.h"
#include "worker/executor.h"
#include "worker/selftest_job.h"

namespace am::worker {
namespace {

using nlohmann::json;
using Clock = SteadyClock;

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(std::random_device{}());
    seed_ = rng();
    scratch_ = std::filesystem::temp_directory_path() /
               ("am-exec-test-" + std::to_string(getpid()) + "-" + std::to_string(seed_));
  }
  void TearDown() override {
    // The executor removes its files; an empty directory proves it.
    if (std::filesystem::exists(scratch_)) {
      EXPECT_TRUE(std::filesystem::is_empty(scratch_)) << "leftover files in " << scratch_;
    }
    std::error_code ec;
    std::filesystem::remove_all(scratch_, ec);
  }

  ExecRequest request(const std::string& model, double timeout_s = 20.0) {
    jobs::JobSpec spec;
    spec.model = model;
    spec.architecture = "encoder-only";
    spec.seed = seed_;
    ExecRequest req;
    req.job_id = "0123456789abcdef";
    req.attempt = 1;
    req.spec = jobs::to_json(spec);
    req.timeout_s = timeout_s;
    req.worker_binary = AM_JOB_MODE_HOST;
    req.scratch_dir = scratch_;
    return req;
  }

  uint64_t seed_ = 0;
  std::filesystem::path scratch_;
};

// A job that cannot be prepared in its scratch dir is the worker's fault, and the probe the
// client makes afterwards says whether the dir is still unusable (then the worker stops) or was
// so only for a moment (then it is the job's error).
TEST_F(ExecutorTest, AScratchDirThatIsAFileIsAWorkerFaultAndTheProbeSeesIt) {
  std::filesystem::create_directories(scratch_.parent_path());
  {
    std::ofstream blocker(scratch_);
    blocker << "a file where the scratch dir should be\n";
  }
  const ExecOutcome out = execute_job(request("selftest:pass"));
  EXPECT_EQ(out.status, ResultStatus::kError);
  EXPECT_TRUE(out.worker_fault) << out.reason;
  EXPECT_NE(out.reason.find("cannot create scratch dir"), std::string::npos) << out.reason;
  EXPECT_FALSE(scratch_dir_usable(scratch_));
  std::filesystem::remove(scratch_);
  EXPECT_TRUE(scratch_dir_usable(scratch_));
  EXPECT_TRUE(std::filesystem::is_empty(scratch_)) << "the probe leaves nothing behind";
}

TEST_F(ExecutorTest, PassingJobReturnsItsOwnResultAndMetrics) {
  const ExecOutcome out = execute_job(request("selftest:pass"));
  EXPECT_EQ(out.status, am::ResultStatus::kPass) << out.reason << "\n" << out.log_tail;
  EXPECT_EQ(out.reason, "");
  EXPECT_EQ(out.exit_code, 0);
  EXPECT_EQ(out.signal, 0);
  EXPECT_EQ(out.metrics.at("seed").get<uint64_t>(), seed_);
  EXPECT_EQ(out.metrics.at("selftest"), "selftest:pass");
  EXPECT_GT(out.metrics.at("process").at("wall_s").get<double>(), 0.0);
  EXPECT_GT(out.started_at_ms, 0);
  EXPECT_GE(out.finished_at_ms, out.started_at_ms);
}

#ifdef __linux__
TEST_F(ExecutorTest, PerfJobRecordsTheHostsLoadAndStealTimeAccuracyJobDoesNot) {
  ExecRequest perf = request("selftest:pass");
  perf.spec["mode"] = jobs::kModePerf;
  const ExecOutcome out = execute_job(perf);
  ASSERT_EQ(out.status, am::ResultStatus::kPass) << out.reason << "\n" << out.log_tail;
  ASSERT_TRUE(out.metrics.contains("host")) << out.metrics.dump();
  const json& h = out.metrics.at("host");
  const int cpus = h.at("cpus").get<int>();
  EXPECT_GE(cpus, 1);
  EXPECT_GE(h.at("load_start").get<double>(), 0.0);
  EXPECT_GE(h.at("load_end").get<double>(), 0.0);
  if (h.contains("steal_fraction")) {   // absent only when the counters did not tick
    EXPECT_GE(h.at("steal_fraction").get<double>(), 0.0);
    EXPECT_LE(h.at("steal_fraction").get<double>(), 1.0);
    EXPECT_GE(h.at("other_load").get<double>(), 0.0);
    EXPECT_LE(h.at("other_load").get<double>(), cpus);
  }

  ExecRequest accuracy = request("selftest:pass");
  accuracy.spec["mode"] = jobs::kModeAccuracy;
  const ExecOutcome acc = execute_job(accuracy);
  ASSERT_EQ(acc.status, am::ResultStatus::kPass) << acc.reason;
  EXPECT_FALSE(acc.metrics.contains("host")) << acc.metrics.dump();
}
#endif

TEST_F(ExecutorTest, SegfaultIsACrashNamingTheSignal) {
  const ExecOutcome out = execute_job(request("selftest:segv"));
  EXPECT_EQ(out.status, am::ResultStatus::kCrash);
  EXPECT_EQ(out.reason, "signal SIGSEGV (11)");
  EXPECT_EQ(out.signal, SIGSEGV);
  EXPECT_EQ(out.exit_code, -1);
}

TEST_F(ExecutorTest, AbortIsACrashWithSigabrt) {
  const ExecOutcome out = execute_job(request("selftest:abort"));
  EXPECT_EQ(out.status, am::ResultStatus::kCrash);
  EXPECT_EQ(out.reason, "signal SIGABRT (6)");
  EXPECT_EQ(out.signal, SIGABRT);
}

TEST_F(ExecutorTest, HangingJobTimesOutAndIsKilledPromptly) {
  const auto t0 = Clock::now();
  const ExecOutcome out = execute_job(request("selftest:hang", 1.0));
  const double took = seconds_since(t0);
  EXPECT_EQ(out.status, am::ResultStatus::kTimeout);
  EXPECT_EQ(out.reason, "exceeded 1.0 s");
  // SIGTERM, not SIGKILL, is the proof it went at the limit and before the kill grace; the upper
  // bound only catches a limit that was not enforced at all, so a loaded machine cannot trip it.
  EXPECT_EQ(out.signal, SIGTERM);
  EXPECT_GE(took, 1.0);
  EXPECT_LT(took, 30.0);
}

#ifdef __linux__
// Linux folds the peak of the address space a process leaves at exec into its ru_maxrss, and a
// posix_spawn child leaves its parent's: every job reported the worker's footprint (~82 MB) as
// its own. The job's peak is read from its own address space instead (common/proc_memory.h).
TEST_F(ExecutorTest, TheJobsPeakResidentSetIsItsOwnNotThatOfTheProcessThatSpawnedIt) {
  constexpr std::size_t kBallastBytes = std::size_t{384} << 20;
  constexpr int64_t kSelftestCeilingBytes = int64_t{128} << 20;   // what a selftest job is far below
  {
    std::unique_ptr<char[]> ballast(new char[kBallastBytes]);
    volatile char* touch = ballast.get();
    for (std::size_t i = 0; i < kBallastBytes; i += 4096) touch[i] = static_cast<char>(i);
  }
  ASSERT_GE(vm_hwm_bytes().value_or(0), static_cast<int64_t>(kBallastBytes));

  // A job that lives a few sampling ticks, then one that ends at once.
  const ExecOutcome hang = execute_job(request("selftest:hang", 0.5));
  ASSERT_EQ(hang.status, am::ResultStatus::kTimeout) << hang.reason;
  const int64_t peak = hang.metrics.at("process").at("peak_rss_bytes").get<int64_t>();
  EXPECT_GT(peak, 0);
  EXPECT_LT(peak, kSelftestCeilingBytes);
  const ExecOutcome pass = execute_job(request("selftest:pass"));
  ASSERT_EQ(pass.status, am::ResultStatus::kPass) << pass.reason;
  if (pass.metrics.at("process").contains("peak_rss_bytes")) {
    EXPECT_LT(pass.metrics.at("process").at("peak_rss_bytes").get<int64_t>(), kSelftestCeilingBytes);
  }
}
#endif

TEST_F(ExecutorTest, JobIgnoringSigtermGetsSigkillAfterTheGrace) {
  const auto t0 = Clock::now();
  const ExecOutcome out = execute_job(request("selftest:stubborn", 0.5));
  const double took = seconds_since(t0);
  EXPECT_EQ(out.status, am::ResultStatus::kTimeout);
  EXPECT_EQ(out.reason, "exceeded 0.5 s");
  EXPECT_EQ(out.signal, SIGKILL);
  EXPECT_GE(took, 2.4);  // 0.5 s limit + 2 s grace
  EXPECT_LT(took, 30.0);  // only an unenforced limit trips this
}

TEST_F(ExecutorTest, NonZeroExitIsAnErrorWithTheCode) {
  const ExecOutcome out = execute_job(request("selftest:exit3"));
  EXPECT_EQ(out.status, am::ResultStatus::kError);
  EXPECT_EQ(out.reason, "exited with code 3");
  EXPECT_EQ(out.exit_code, 3);
}

TEST_F(ExecutorTest, ExitWithoutResultIsAnError) {
  const ExecOutcome out = execute_job(request("selftest:noresult"));
  EXPECT_EQ(out.status, am::ResultStatus::kError);
  EXPECT_EQ(out.reason, "exited 0 without writing a result");
  EXPECT_EQ(out.exit_code, 0);
}

TEST_F(ExecutorTest, AllocationFailureUnderTheMemoryLimitIsOom) {
  ExecRequest req = request("selftest:alloc");
  req.memory_limit_mb = 256;
  const ExecOutcome out = execute_job(req);
  EXPECT_EQ(out.status, am::ResultStatus::kOom) << out.reason << "\n" << out.log_tail;
  EXPECT_EQ(out.exit_code, kExitOutOfMemory);
  EXPECT_EQ(out.reason, "allocation failed under the 256 MiB memory limit");
  EXPECT_NE(out.log_tail.find("std::bad_alloc"), std::string::npos) << out.log_tail;
  EXPECT_NE(out.log_tail.find("selftest:alloc: allocation failed after"), std::string::npos);
  // The limit held: resident memory never exceeds the address-space limit (when the process
  // lived long enough for its peak to be read: common/proc_memory.h).
  if (out.metrics.at("process").contains("peak_rss_bytes")) {
    EXPECT_LT(out.metrics.at("process").at("peak_rss_bytes").get<int64_t>(), 256 << 20);
  }
}

TEST_F(ExecutorTest, AQuantizedJobWhoseF32BaselineDoesNotFitItsMemoryLimitIsMeasuredAlone) {
  // A 250k-word vocabulary: the q4_0 job runs in ~0.5 GB, its paired cpu f32 graph would add
  // 0.5 GB of embeddings. Under an 800 MiB limit the job must pass unpaired, not end in oom.
  jobs::JobSpec spec;
  spec.model = "bert-test";
  spec.architecture = "encoder-only";
  spec.model_config = {{"layers", 1},         {"hidden", 512},     {"heads", 8},
                       {"intermediate", 1024}, {"vocab", 250000},  {"max_positions", 64},
                       {"type_vocab", 2},      {"norm_eps", 1e-12}, {"activation", "gelu"}};
  spec.precision = jobs::Precision::kQ4_0;
  spec.seq_len = 16;
  spec.mode = jobs::kModePerf;
  spec.warmup = 1;
  spec.min_reps = 3;
  spec.max_reps = 20;
  spec.min_time_s = 0.05;
  spec.threads = 2;
  ExecRequest req = request("bert-test", 120.0);
  req.spec = jobs::to_json(spec);
  req.memory_limit_mb = 800;
  const ExecOutcome out = execute_job(req);
  ASSERT_EQ(out.status, am::ResultStatus::kPass) << out.reason << "\n" << out.log_tail;
  const nlohmann::json& pb = out.metrics.at("paired_baseline");
  EXPECT_NE(pb.value("skipped", std::string()).find("out of memory"), std::string::npos) << pb.dump();
  EXPECT_FALSE(pb.contains("latency_ms"));
  EXPECT_GE(out.metrics.at("latency_ms").at("count").get<int>(), 3);
}

TEST_F(ExecutorTest, SigkillNotSentByUsIsReportedAsOom) {
  const ExecOutcome out = execute_job(request("selftest:sigkill"));
  EXPECT_EQ(out.status, am::ResultStatus::kOom);
  EXPECT_EQ(out.reason, "killed (SIGKILL), likely the kernel OOM killer");
  EXPECT_EQ(out.signal, SIGKILL);
}

TEST_F(ExecutorTest, NoisyJobKeepsTheLastBytesOfBothStreams) {
  const ExecOutcome out = execute_job(request("selftest:noisy"));
  EXPECT_EQ(out.status, am::ResultStatus::kPass);
  EXPECT_EQ(out.log_tail.size(), reliability::kLogTailBytes);
  const std::string last_line = std::string(kSelftestNoisyLastLine) + "\n";
  ASSERT_GE(out.log_tail.size(), last_line.size());
  EXPECT_EQ(out.log_tail.substr(out.log_tail.size() - last_line.size()), last_line);
  EXPECT_GE(out.metrics.at("process").at("output_bytes").get<uint64_t>(), kSelftestNoisyBytes - 200);
  // Lines from stdout (even numbers) and stderr (odd numbers) both reach the tail.
  EXPECT_NE(out.log_tail.find("0: the quick"), std::string::npos);
  EXPECT_NE(out.log_tail.find("1: the quick"), std::string::npos);
}

TEST_F(ExecutorTest, CancelKillsTheJobPromptly) {
  std::atomic<bool> cancel{false};
  std::thread canceller([&cancel] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.store(true);
  });
  const auto t0 = Clock::now();
  const ExecOutcome out = execute_job(request("selftest:hang", 600.0), &cancel);
  const double took = seconds_since(t0);
  canceller.join();
  // The event, not a stopwatch: the job was stopped by a signal because of the cancel (status
  // cancelled, never timeout). The only time bound is one no loaded machine comes near, a tenth
  // of the job's timeout, so a cancel that waited for the timeout still fails.
  EXPECT_EQ(out.status, am::ResultStatus::kCancelled);
  EXPECT_EQ(out.reason, "cancelled");
  EXPECT_TRUE(out.signal == SIGTERM || out.signal == SIGKILL) << out.signal;
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 60.0);
}

TEST_F(ExecutorTest, BadSpecIsAnErrorWithTheMessageInTheLog) {
  ExecRequest req = request("selftest:pass");
  req.spec.erase("architecture");
  const ExecOutcome out = execute_job(req);
  EXPECT_EQ(out.status, am::ResultStatus::kError);
  EXPECT_EQ(out.reason, "exited with code 2");
  EXPECT_NE(out.log_tail.find("bad spec"), std::string::npos) << out.log_tail;
  EXPECT_NE(out.log_tail.find("architecture"), std::string::npos) << out.log_tail;
}

TEST_F(ExecutorTest, MissingBinaryIsAnErrorNotACrash) {
  ExecRequest req = request("selftest:pass");
  req.worker_binary = scratch_ / "no-such-worker";
  const ExecOutcome out = execute_job(req);
  EXPECT_EQ(out.status, am::ResultStatus::kError);
  EXPECT_NE(out.reason.find("cannot start"), std::string::npos) << out.reason;
}

TEST_F(ExecutorTest, JobInheritsOnlyStdioEvenFromNonCloexecDescriptors) {
  const auto marker = std::filesystem::temp_directory_path() /
                      ("am-exec-marker-" + std::to_string(seed_));
  // Deliberately without O_CLOEXEC: the spawn itself must keep it from the job.
  const int fd = ::open(marker.c_str(), O_CREAT | O_RDWR, 0600);
  ASSERT_GE(fd, 0);
  const ExecOutcome out = execute_job(request("selftest:fds"));
  ::close(fd);
  std::filesystem::remove(marker);
  ASSERT_EQ(out.status, am::ResultStatus::kPass) << out.reason << out.log_tail;
  const json& fds = out.metrics.at("open_fds");
  EXPECT_EQ(fds.at("0"), "/dev/null");
  EXPECT_EQ(fds.at("1"), fds.at("2"));  // one pipe for both streams
  EXPECT_EQ(fds.at("1").get<std::string>().rfind("pipe:", 0), 0u);
  for (const auto& [num, target] : fds.items()) {
    EXPECT_NE(target.get<std::string>(), marker.string()) << "fd " << num << " leaked";
  }
}

// True once a child process of this test has `needle` in its command line (the job id is in the
// spec file's name): the event "that job process exists", read from /proc instead of guessed.
bool wait_for_child_with(const std::string& needle, std::chrono::seconds limit) {
  const auto until = Clock::now() + limit;
  const std::string self = std::to_string(::getpid());
  while (Clock::now() < until) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
      std::ifstream stat(entry.path() / "stat");
      std::string line;
      if (!std::getline(stat, line)) continue;
      const std::size_t close = line.rfind(')');   // comm may hold spaces and parentheses
      if (close == std::string::npos) continue;
      std::istringstream rest(line.substr(close + 1));
      std::string state, ppid;
      rest >> state >> ppid;
      if (ppid != self) continue;
      std::ifstream cmd(entry.path() / "cmdline", std::ios::binary);
      const std::string args((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
      if (args.find(needle) != std::string::npos) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(ExecutorTest, TheDeviceVariablesReachTheJobProcessOnly) {
  unsetenv("ACCELMATRIX_VULKAN_DEVICE");
  unsetenv("ACCELMATRIX_OPENCL_DEVICE");
  ExecRequest req = request("selftest:fds");
  req.env = {"ACCELMATRIX_VULKAN_DEVICE=3"};
  const ExecOutcome out = execute_job(req);
  ASSERT_EQ(out.status, am::ResultStatus::kPass) << out.reason << out.log_tail;
  EXPECT_EQ(out.metrics.at("device_env"), json({{"ACCELMATRIX_VULKAN_DEVICE", "3"}}));
  EXPECT_EQ(std::getenv("ACCELMATRIX_VULKAN_DEVICE"), nullptr) << "set in the worker itself";
}

TEST_F(ExecutorTest, ConcurrentJobsDoNotHoldEachOthersOutput) {
  // The order that would go wrong: job A is running (its pipe open in this process) when job B is
  // spawned. If B inherited A's pipe, A's output would not reach end of file when A ends, and A's
  // execute_job would wait for B. Both are hangs ended by cancel, so every step is an event the
  // test causes or observes: A is cancelled while B certainly runs, and A must return while B is
  // still running (B ends only when the test cancels it afterwards).
  std::atomic<bool> stop_a{false}, stop_b{false}, a_ended{false}, b_ended{false};
  ExecRequest a = request("selftest:hang", 600.0);
  a.job_id = "aaaaaaaaaaaaaaaa";
  ExecRequest b = request("selftest:hang", 600.0);
  b.job_id = "bbbbbbbbbbbbbbbb";
  std::thread ta([&] {
    EXPECT_EQ(execute_job(a, &stop_a).status, am::ResultStatus::kCancelled);
    a_ended = true;
  });
  ASSERT_TRUE(wait_for_child_with(a.job_id, std::chrono::seconds(60))) << "job A never started";
  std::thread tb([&] {
    EXPECT_EQ(execute_job(b, &stop_b).status, am::ResultStatus::kCancelled);
    b_ended = true;
  });
  const bool b_started = wait_for_child_with(b.job_id, std::chrono::seconds(60));
  stop_a = true;
  // With the bug A would return only after B ends, so wait for A on a long bound, never on a join.
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (!a_ended && Clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool a_returned = a_ended.load();
  const bool b_still_running = !b_ended.load();
  stop_b = true;
  ta.join();
  tb.join();
  ASSERT_TRUE(b_started) << "job B never started";
  EXPECT_TRUE(a_returned) << "job A did not return within 60 s of its cancel";
  EXPECT_TRUE(b_still_running) << "job A's execute_job returned only after job B ended";
}

}  // namespace
}  // namespace am::worker
