// execute_job(): the parent side of job isolation. Whatever the job process does — crash, hang,
// eat all memory, flood its output — this function returns an outcome and the worker goes on.
#include "worker/executor.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/clock.h"
#include "common/hash.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/proc_memory.h"
#include "common/reliability.h"
#include "common/spawn.h"
#include "jobs/job_spec.h"
#include "worker/command_job.h"
#include "worker/descendants.h"
#include "worker/host_load.h"
#include "worker/log_tail.h"

namespace am::worker {
namespace {

// After SIGTERM a job gets this long to exit before SIGKILL.
constexpr int64_t kKillGraceMs = 2000;
// After the job process exits, output still in flight is read for at most this long. Anything
// that keeps the pipe open past that (a grandchild that left the process group) is abandoned.
constexpr int64_t kDrainAfterExitMs = 500;
// A result file larger than this is not a result document.
constexpr std::size_t kMaxResultFileBytes = 16u << 20;
constexpr double kMsPerSecond = 1000.0;
// Longer limits are clamped to this (30 days), far beyond any job but safe from overflow.
constexpr double kMaxTimeoutMs = 30.0 * 24 * 3600 * kMsPerSecond;

std::shared_ptr<spdlog::logger> logger() { return get_logger("worker/executor"); }

// The scratch files' name of an attempt: a file name that never leaves scratch_dir, and a
// different one for every job id (ids are any printable ASCII on the wire, PROTOCOL §2: "k/1"
// and "k_1" made the same files, and each attempt read and removed the other's). Letters, digits
// and '-' stay; any other byte, '_' included, becomes "_XX". The few ids whose escaped form would
// make too long a name use two 64-bit hashes of the id instead.
std::string file_stem(const ExecRequest& req) {
  constexpr std::size_t kMaxEscapedBytes = 160;   // the stem's suffixes keep names under NAME_MAX
  static constexpr char kHex[] = "0123456789abcdef";
  std::string stem = "j";
  for (unsigned char c : req.job_id) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
    if (plain) {
      stem += static_cast<char>(c);
    } else {
      stem += '_';
      stem += kHex[c >> 4];
      stem += kHex[c & 0xF];
    }
  }
  if (stem.size() > kMaxEscapedBytes) {
    char hashed[40];
    std::snprintf(hashed, sizeof hashed, "h%016llx%016llx", static_cast<unsigned long long>(fnv1a64(req.job_id)),
                  static_cast<unsigned long long>(fnv1a64(req.job_id, 0x9e3779b97f4a7c15ull)));
    stem = hashed;
  }
  return stem + "-" + std::to_string(req.attempt);
}

Status write_text_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return io_error("cannot create " + path.string());
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) return io_error("cannot write " + path.string());
  return Status::Ok();
}

std::string format_seconds(double s) {
  char buf[64];
  // "0.01 s", not "0.0 s", for a limit under a second.
  std::snprintf(buf, sizeof buf, s < 1.0 ? "%.3g s" : "%.1f s", s);
  return buf;
}

// Fills status/reason/metrics from the child's result document; a malformed one is an error.
void read_result_document(const std::filesystem::path& path, ExecOutcome& out) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) {
    out.status = ResultStatus::kError;
    out.reason = "exited 0 without writing a result";
    return;
  }
  if (size > kMaxResultFileBytes) {
    out.status = ResultStatus::kError;
    out.reason = "malformed result: file of " + std::to_string(size) + " bytes exceeds the limit";
    return;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    out.status = ResultStatus::kError;
    out.reason = "malformed result: not a JSON object";
    return;
  }
  const auto status = doc.find("status");
  const std::optional<ResultStatus> parsed =
      status != doc.end() && status->is_string() ? parse_result_status(status->get<std::string>())
                                                 : std::nullopt;
  if (!parsed) {
    out.status = ResultStatus::kError;
    out.reason = "malformed result: missing or unknown \"status\"";
    return;
  }
  const auto reason = doc.find("reason");
  if (reason != doc.end() && !reason->is_string() && !reason->is_null()) {
    out.status = ResultStatus::kError;
    out.reason = "malformed result: \"reason\" is not a string";
    return;
  }
  const auto metrics = doc.find("metrics");
  if (metrics != doc.end() && !metrics->is_object() && !metrics->is_null()) {
    out.status = ResultStatus::kError;
    out.reason = "malformed result: \"metrics\" is not an object";
    return;
  }
  out.status = *parsed;
  out.reason = reason != doc.end() && reason->is_string() ? reason->get<std::string>() : "";
  if (metrics != doc.end() && metrics->is_object()) out.metrics = *metrics;
}

enum class StopCause { kNone, kTimeout, kCancel };

// Runs the spawned child to its end: reads its output, enforces the deadline and the cancel
// flag, escalates SIGTERM to SIGKILL, and reaps it.
Result<ExitInfo> supervise(ChildProcess& child, const ExecRequest& req,
                           const std::atomic<bool>* cancel, LogTail& tail, StopCause& cause,
                           std::optional<int64_t>& peak_rss_seen) {
  const int64_t start = steady_ms();
  // Written so that NaN and negative limits mean "now" and absurd ones cannot overflow.
  double limit_ms = req.timeout_s * kMsPerSecond;
  if (!(limit_ms > 0.0)) limit_ms = 0.0;
  if (limit_ms > kMaxTimeoutMs) limit_ms = kMaxTimeoutMs;
  const int64_t deadline = start + static_cast<int64_t>(limit_ms);
  int64_t kill_at = 0;  // when SIGKILL follows SIGTERM; 0 = no stop requested yet
  bool killed = false;
  std::string chunk;
  auto drain = [&]() {
    chunk.clear();
    const bool open = child.read_output(chunk);
    if (!chunk.empty()) tail.append(chunk);
    return open;
  };

  bool output_open = true;
  // The first reading waits a tick: right after the spawn the new program has not been loaded
  // yet (VmHWM read 12-16 KiB), and a figure like that is no measurement. A job that ends
  // before it has none.
  int64_t next_rss_sample_ms = start + reliability::kPollTickMs;
  while (true) {
    const int64_t now = steady_ms();
    if (cause == StopCause::kNone) {
      if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
        cause = StopCause::kCancel;
      } else if (now >= deadline) {
        cause = StopCause::kTimeout;
      }
      if (cause != StopCause::kNone) {
        child.signal(SIGTERM);
        kill_at = now + kKillGraceMs;
      }
    }
    if (cause != StopCause::kNone && !killed && now >= kill_at) {
      child.signal(SIGKILL);
      killed = true;
    }
    if (child.exited()) break;
    // The job's peak resident set as its own address space has it, read while it is alive
    // (wait4's ru_maxrss carries this worker's peak over the exec: common/proc_memory.h).
    if (now >= next_rss_sample_ms) {
      if (std::optional<int64_t> hwm = vm_hwm_bytes(child.pid())) peak_rss_seen = std::max(peak_rss_seen.value_or(0), *hwm);
      next_rss_sample_ms = now + reliability::kPollTickMs;
    }

    int64_t wait_ms = reliability::kPollTickMs;
    if (cause == StopCause::kNone) wait_ms = std::min(wait_ms, std::max<int64_t>(0, deadline - now));
    else if (!killed) wait_ms = std::min(wait_ms, std::max<int64_t>(0, kill_at - now));
    if (output_open) {
      pollfd pfd{child.output_fd(), POLLIN, 0};
      const int rc = ::poll(&pfd, 1, static_cast<int>(wait_ms));
      if (rc > 0) output_open = drain();
      // rc < 0 is EINTR (or a transient error): the loop re-checks everything anyway.
    } else {
      ::poll(nullptr, 0, static_cast<int>(wait_ms));
    }
  }

  // The leader has exited; what is left of its group (helpers it started) goes with it.
  child.signal(SIGKILL);
  const int64_t drain_until = steady_ms() + kDrainAfterExitMs;
  while (output_open) {
    output_open = drain();
    const int64_t left = drain_until - steady_ms();
    if (!output_open || left <= 0) break;
    pollfd pfd{child.output_fd(), POLLIN, 0};
    ::poll(&pfd, 1, static_cast<int>(left));
  }
  return child.wait();
}

// The job process's own words for a mapped file that changed under it: its last line of output
// (kernels/weights/mapped_file.h writes it in its SIGBUS handler), without the program prefix.
std::string mapped_file_fault_reason(const std::string& log_tail) {
  static constexpr std::string_view kPrefix = "accelmatrix-worker --run-job: ";
  std::string_view text = log_tail;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  const std::size_t nl = text.rfind('\n');
  std::string_view last = nl == std::string_view::npos ? text : text.substr(nl + 1);
  if (last.substr(0, kPrefix.size()) != kPrefix) {
    return "a file the job had mapped (its weights) was truncated or replaced while it read it (SIGBUS)";
  }
  last.remove_prefix(kPrefix.size());
  return std::string(last);
}

// Every command job's result carries metrics.command (docs/PLANS.md): the runner writes it, and
// where it could not (the job's time limit, a crash or an out-of-memory exit passed through),
// it is made here from the spec and how the process ended.
void note_command(const nlohmann::json& spec, const ExitInfo& exit, StopCause cause, nlohmann::json& metrics) {
  const auto c = spec.find("command");
  if (c == spec.end() || !c->is_object()) return;
  if (!metrics.is_object()) metrics = nlohmann::json::object();
  if (metrics.contains("command")) return;
  nlohmann::json command = nlohmann::json::object();
  for (const char* key : {"name", "output"}) {
    if (auto v = c->find(key); v != c->end() && v->is_string()) command[key] = *v;
  }
  if (cause == StopCause::kNone) {
    // The runner's own code for a result it could not write is not the command's.
    if (exit.exited && exit.code != kExitResultUnwritable) command["exit_code"] = exit.code;   // passed through (kExitOutOfMemory)
    if (exit.signal != 0) command["signal"] = exit.signal;
  }
  metrics["command"] = std::move(command);
}

// Turns how the child ended into the outcome's status and reason.
void classify(const ExitInfo& exit, StopCause cause, const ExecRequest& req,
              const std::filesystem::path& result_file, ExecOutcome& out) {
  if (exit.exited) out.exit_code = exit.code;
  out.signal = exit.signal;
  if (cause == StopCause::kCancel) {
    out.status = ResultStatus::kCancelled;
    out.reason = "cancelled";
    return;
  }
  if (cause == StopCause::kTimeout) {
    out.status = ResultStatus::kTimeout;
    out.reason = "exceeded " + format_seconds(req.timeout_s);
    return;
  }
  if (exit.exited) {
    if (exit.code == 0) {
      read_result_document(result_file, out);
    } else if (exit.code == kExitOutOfMemory) {
      out.status = ResultStatus::kOom;
      out.reason = req.memory_limit_mb > 0
                       ? "allocation failed under the " + std::to_string(req.memory_limit_mb) +
                             " MiB memory limit"
                       : "allocation failed";
    } else if (exit.code == kExitResultUnwritable) {
      out.status = ResultStatus::kError;
      out.reason = "the job process could not write its result into the worker's state dir (" +
                   result_file.parent_path().string() + ")";
      out.worker_fault = true;
    } else if (exit.code == kExitMappedFileChanged) {
      out.status = ResultStatus::kError;
      out.reason = mapped_file_fault_reason(out.log_tail);
    } else {
      out.status = ResultStatus::kError;
      out.reason = "exited with code " + std::to_string(exit.code);
    }
    return;
  }
  if (exit.signal == SIGKILL) {
    // We did not send it (no timeout, no cancel): on Linux that is almost always the OOM killer.
    out.status = ResultStatus::kOom;
    out.reason = "killed (SIGKILL), likely the kernel OOM killer";
    return;
  }
  out.status = ResultStatus::kCrash;
  out.reason = "signal " + signal_name(exit.signal) + " (" + std::to_string(exit.signal) + ")";
}

// Perf jobs (mode perf or both) record the host's load; an accuracy job's timing means nothing.
bool measures_latency(const nlohmann::json& spec) {
  if (!spec.is_object()) return false;
  auto mode = spec.find("mode");
  if (mode == spec.end()) return true;   // JobSpec's default mode is "both"
  return mode->is_string() && (*mode == jobs::kModePerf || *mode == jobs::kModeBoth);
}

double timeval_seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

}  // namespace

bool scratch_dir_usable(const std::filesystem::path& scratch_dir) {
  std::error_code ec;
  std::filesystem::create_directories(scratch_dir, ec);
  if (ec) return false;
  const auto probe = scratch_dir / ("probe-" + std::to_string(::getpid()) + ".tmp");
  const bool written = write_text_file(probe, std::string(4096, 'p')).ok();
  std::filesystem::remove(probe, ec);
  return written;
}

ExecOutcome execute_job(const ExecRequest& req, const std::atomic<bool>* cancel) {
  ExecOutcome out;
  out.started_at_ms = now_epoch_ms();
  auto fail = [&out](std::string reason) -> ExecOutcome {
    out.status = ResultStatus::kError;
    out.reason = std::move(reason);
    out.worker_fault = true;   // nothing of the job ran: every failure below is the worker's
    out.finished_at_ms = now_epoch_ms();
    logger()->warn("job could not run: {}", out.reason);
    return std::move(out);
  };

  try {
    std::error_code ec;
    std::filesystem::create_directories(req.scratch_dir, ec);
    if (ec) return fail("cannot create scratch dir " + req.scratch_dir.string() + ": " + ec.message());
    const std::string stem = file_stem(req);
    const auto spec_file = req.scratch_dir / (stem + ".spec.json");
    const auto result_file = req.scratch_dir / (stem + ".result.json");
    const auto work_dir = req.scratch_dir / (stem + ".work");
    // Files are removed on every path out, including an early return.
    struct Cleanup {
      std::filesystem::path a, b, dir;
      ~Cleanup() {
        std::error_code ignored;
        std::filesystem::remove(a, ignored);
        std::filesystem::remove(b, ignored);
        std::filesystem::remove_all(dir, ignored);
      }
    } cleanup{spec_file, result_file, work_dir};
    // A result left by an earlier run of the same attempt must not pass for this one's.
    std::filesystem::remove(result_file, ec);

    const std::string spec_text =
        req.spec.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    if (Status s = write_text_file(spec_file, spec_text); !s.ok()) return fail(s.message());

    std::vector<std::string> argv = {req.worker_binary.string(), "--run-job", spec_file.string(),
                                     "--result-file", result_file.string(),
                                     "--exit-with-parent", std::to_string(getpid())};
    if (req.memory_limit_mb > 0) {
      argv.push_back("--memory-limit-mb");
      argv.push_back(std::to_string(req.memory_limit_mb));
    }
    const bool is_command = req.spec.is_object() && req.spec.contains("command");
    if (is_command) {
      // A command gets a fresh, empty working directory: nothing of an earlier attempt is left.
      std::filesystem::remove_all(work_dir, ec);
      std::filesystem::create_directories(work_dir, ec);
      if (ec) return fail("cannot create the command's working dir " + work_dir.string() + ": " + ec.message());
      for (const std::string& a : {std::string("--job-id"), req.job_id, std::string("--attempt"),
                                   std::to_string(req.attempt), std::string("--device"), req.device,
                                   std::string("--work-dir"), work_dir.string()}) {
        argv.push_back(a);
      }
    }

    const bool record_host = measures_latency(req.spec);
    const std::optional<HostSample> host_start = record_host ? read_host_sample() : std::nullopt;
    SpawnOptions spawn_options;
    spawn_options.env = req.env;
    auto spawned = ChildProcess::spawn(argv, spawn_options);
    if (!spawned.ok()) {
      out.runner_unstartable = true;
      return fail(spawned.status().message());
    }
    ChildProcess child = std::move(spawned).value();
    const int64_t started_steady = steady_ms();
    logger()->info("job {} attempt {}: started pid {} (timeout {}, memory limit {} MiB)",
                   req.job_id, req.attempt, child.pid(), format_seconds(req.timeout_s),
                   req.memory_limit_mb);

    LogTail tail(reliability::kLogTailBytes);
    StopCause cause = StopCause::kNone;
    std::optional<int64_t> peak_rss_seen;
    auto ended = supervise(child, req, cancel, tail, cause, peak_rss_seen);
    if (is_command) {
      // A runner that died without ending its command's tree (SIGKILLed) left it to this worker.
      if (const int left = end_children_with_env("ACCELMATRIX_RESULT_FILE=" + command_result_path(work_dir).string());
          left > 0) {
        logger()->warn("job {} attempt {}: ended {} process(es) its command left behind a dead runner", req.job_id,
                       req.attempt, left);
      }
    }
    out.finished_at_ms = now_epoch_ms();
    out.log_tail = tail.str();
    if (!ended.ok()) {
      ExecOutcome lost = fail("lost track of the job process: " + ended.status().message());
      lost.worker_fault = false;   // the job ran: its result is an error, the worker goes on
      return lost;
    }

    const double wall_s = static_cast<double>(steady_ms() - started_steady) / kMsPerSecond;
    const std::optional<HostSample> host_end = host_start ? read_host_sample() : std::nullopt;
    classify(*ended, cause, req, result_file, out);
    note_command(req.spec, *ended, cause, out.metrics);
    const double cpu_user_s = timeval_seconds(ended->usage.ru_utime);
    const double cpu_sys_s = timeval_seconds(ended->usage.ru_stime);
    if (host_start && host_end) {
      out.metrics["host"] = host_metrics(*host_start, *host_end, cpu_user_s + cpu_sys_s, wall_s,
                                         static_cast<double>(sysconf(_SC_CLK_TCK)));
    }
    // The parent's view of the process, whatever the job itself reported. Its peak resident
    // set: the last VmHWM read while it ran, or the job's own figure when that is higher (it is
    // read at the end of the measurement, after the last sample could be); none when the process
    // ended before either was read.
    out.metrics["process"] = {
        {"wall_s", wall_s},
        {"cpu_user_s", cpu_user_s},
        {"cpu_sys_s", cpu_sys_s},
        {"output_bytes", tail.total_bytes()},
    };
    if (auto memory = out.metrics.find("memory"); memory != out.metrics.end() && memory->is_object()) {
      if (auto own = memory->find("peak_rss_bytes"); own != memory->end() && own->is_number_integer()) {
        peak_rss_seen = std::max(peak_rss_seen.value_or(0), own->get<int64_t>());
      }
    }
    if (peak_rss_seen) out.metrics["process"]["peak_rss_bytes"] = *peak_rss_seen;
    logger()->info("job {} attempt {}: {}{}{}", req.job_id, req.attempt, to_string(out.status),
                   out.reason.empty() ? "" : " — ", out.reason);
    return out;
  } catch (const std::exception& e) {
    // Allocation failure while building the outcome, or a filesystem exception: still a result.
    ExecOutcome failed = fail(std::string("executor: ") + e.what());
    failed.worker_fault = false;
    return failed;
  }
}

}  // namespace am::worker
