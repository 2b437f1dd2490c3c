// run_job_mode(): the child side of job isolation — `accelmatrix-worker --run-job SPEC
// --result-file OUT [--memory-limit-mb N]`. It runs in a process of its own so that whatever
// the job does to it (crash, leak, hang) the worker survives; the parent (execute_job) reads the
// exit status and the result file. Models named "selftest:<mode>" are diagnostic jobs
// (worker/selftest_job.h) dispatched here, before the inference core is involved.
#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <system_error>

#include "common/atomic_file.h"
#include "kernels/weights/mapped_file.h"
#include "jobs/job_spec.h"
#include "kernels/job_runner.h"
#include "worker/command_job.h"
#include "worker/executor.h"
#include "worker/selftest_job.h"

namespace am::worker {
namespace {

constexpr int kExitBadSpec = 2;
constexpr int kExitNoResult = 1;   // the job ran but its result could not be written
constexpr std::size_t kMaxSpecFileBytes = 4u << 20;
constexpr int64_t kBytesPerMb = int64_t{1} << 20;

Result<jobs::JobSpec> read_spec(const std::filesystem::path& file) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) return not_found(file.string() + ": " + ec.message());
  if (size > kMaxSpecFileBytes) return invalid_argument(file.string() + ": larger than 4 MiB");
  std::ifstream in(file, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return io_error(file.string() + ": read failed");
  const auto doc = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalid_argument(file.string() + ": not valid JSON");
  auto spec = jobs::job_spec_from_json(doc);
  if (!spec.ok()) return spec.status().with_context(file.string());
  return spec;
}

// RLIMIT_AS bounds address space rather than resident memory: it is the one limit that makes
// allocation fail inside the job (so it can report "oom" itself) instead of summoning the OOM
// killer on the whole machine.
Status apply_memory_limit(int64_t memory_limit_mb) {
  if (memory_limit_mb <= 0) return Status::Ok();
  const rlim_t bytes = static_cast<rlim_t>(memory_limit_mb) * static_cast<rlim_t>(kBytesPerMb);
  rlimit limit{bytes, bytes};
  if (setrlimit(RLIMIT_AS, &limit) != 0) {
    return io_error("setrlimit(RLIMIT_AS, " + std::to_string(memory_limit_mb) + " MiB) failed");
  }
  return Status::Ok();
}

// Write then rename: the parent never sees a half-written result, even if we die mid-write.
Status write_result(const std::filesystem::path& file, const kernels::JobOutcome& outcome) {
  const nlohmann::json doc = {
      {"status", std::string(to_string(outcome.status))}, {"reason", outcome.reason}, {"metrics", outcome.metrics}};
  // Replace, not throw, on invalid UTF-8 in a reason built from library messages.
  const std::string text = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return write_file_atomically(file, text);
}

int run(const std::filesystem::path& spec_file, const std::filesystem::path& result_file,
        int64_t memory_limit_mb, const CommandContext& command) {
  auto spec = read_spec(spec_file);
  if (!spec.ok()) {
    std::cerr << "accelmatrix-worker --run-job: bad spec: " << spec.status().to_string() << '\n';
    return kExitBadSpec;
  }
  if (Status s = apply_memory_limit(memory_limit_mb); !s.ok()) {
    std::cerr << "accelmatrix-worker --run-job: " << s.to_string() << '\n';
    return kExitNoResult;
  }

  if (spec->command) return run_command_job(*spec, command, result_file);

  kernels::JobOutcome outcome;
  if (is_selftest_model(spec->model)) {
    SelftestEnd end = run_selftest_job(*spec, memory_limit_mb);
    if (!end.outcome) return end.exit_code;
    outcome = std::move(*end.outcome);
  } else {
    outcome = kernels::run_job(*spec);
  }

  if (Status s = write_result(result_file, outcome); !s.ok()) {
    std::cerr << "accelmatrix-worker --run-job: " << s.to_string() << '\n';
    return kExitResultUnwritable;
  }
  return 0;
}

}  // namespace

int run_job_mode(const std::filesystem::path& spec_file, const std::filesystem::path& result_file,
                 int64_t memory_limit_mb, const CommandContext& command) {
  int code = kExitNoResult;
  kernels::install_mapped_file_fault_handler(kExitMappedFileChanged);
  try {
    code = run(spec_file, result_file, memory_limit_mb, command);
  } catch (const std::bad_alloc&) {
    // The memory limit (or the machine) said no: the parent reports "oom". Writing a message
    // needs no allocation.
    static constexpr char kMsg[] = "accelmatrix-worker --run-job: out of memory (std::bad_alloc)\n";
    std::fwrite(kMsg, 1, sizeof kMsg - 1, stderr);
    code = kExitOutOfMemory;
  } catch (const std::exception& e) {
    // run_job() promises not to throw; if it does anyway, record an error rather than abort.
    std::cerr << "accelmatrix-worker --run-job: uncaught exception: " << e.what() << '\n';
    kernels::JobOutcome outcome;
    outcome.status = ResultStatus::kError;
    outcome.reason = std::string("uncaught exception: ") + e.what();
    try {
      code = write_result(result_file, outcome).ok() ? 0 : kExitResultUnwritable;
    } catch (const std::exception&) {
      code = kExitResultUnwritable;
    }
  }
  std::fflush(stdout);
  std::fflush(stderr);
  return code;
}

}  // namespace am::worker#include "common/atomic_file.h"

