#include "worker/selftest_job.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "jobs/selftest_models.h"
#include "kernels/accuracy.h"
#include "kernels/opencl/cl_device.h"
#include "kernels/tolerances.h"
#include "worker/device_selection.h"

namespace am::worker {
namespace {

constexpr std::size_t kAllocChunkBytes = 16u << 20;
constexpr std::size_t kPageBytes = 4096;
constexpr int64_t kBytesPerMb = int64_t{1} << 20;

// Volatile: the allocation loop must have an observable effect, or the optimizer may reason it
// away (an infinite loop without side effects is undefined behaviour).
volatile std::size_t g_allocated_bytes = 0;

// A deliberate crash must not litter the worker's directory with core files.
void disable_core_dumps() {
  rlimit none{0, 0};
  setrlimit(RLIMIT_CORE, &none);
}

[[noreturn]] void sleep_forever() {
  while (true) pause();
}

void print_noisy_output() {
  std::size_t written = 0;
  char line[128];
  for (int n = 0; written + sizeof line < kSelftestNoisyBytes; ++n) {
    const int len = std::snprintf(line, sizeof line,
                                  "selftest:noisy line %06d: the quick brown fox jumps over the lazy dog\n", n);
    // Alternate streams: the executor must merge both into one log.
    std::FILE* stream = (n % 2 == 0) ? stdout : stderr;
    std::fwrite(line, 1, static_cast<std::size_t>(len), stream);
    written += static_cast<std::size_t>(len);
  }
  std::fflush(stderr);
  std::fprintf(stdout, "%.*s\n", static_cast<int>(kSelftestNoisyLastLine.size()),
               kSelftestNoisyLastLine.data());
  std::fflush(stdout);
}

void allocate_until_failure(int64_t memory_limit_mb) {
  if (memory_limit_mb <= 0) {
    const rlim_t cap = static_cast<rlim_t>(kSelftestAllocCapMb * kBytesPerMb);
    rlimit limit{cap, cap};
    setrlimit(RLIMIT_AS, &limit);
  }
  std::vector<std::unique_ptr<char[]>> chunks;
  chunks.reserve(1024);
  try {
    while (true) {
      auto chunk = std::make_unique<char[]>(kAllocChunkBytes);
      // Touch every page so the memory is really resident, as a model's weights would be.
      for (std::size_t i = 0; i < kAllocChunkBytes; i += kPageBytes) chunk[i] = static_cast<char>(i);
      chunks.push_back(std::move(chunk));
      g_allocated_bytes = g_allocated_bytes + kAllocChunkBytes;
    }
  } catch (const std::bad_alloc&) {
    chunks.clear();  // room for stdio before saying how far it got
    std::fprintf(stderr, "selftest:alloc: allocation failed after %zu MiB\n",
                 static_cast<std::size_t>(g_allocated_bytes) >> 20);
    throw;
  }
}

// {"0": "/dev/null", "1": "pipe:[123]", ...}: what the job process inherited.
nlohmann::json open_fds() {
  nlohmann::json fds = nlohmann::json::object();
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
    char target[512];
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
    fds[e->d_name] = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : std::string();
  }
  closedir(dir);
  return fds;
}

kernels::JobOutcome outcome(ResultStatus status, std::string reason, const jobs::JobSpec& spec) {
  kernels::JobOutcome o;
  o.status = status;
  o.reason = std::move(reason);
  o.metrics = {{"seed", spec.seed}, {"threads", 1}, {"selftest", spec.model}};
  return o;
}

// nan / inf: an output of batch x 16 values that matches a finite reference except for a few
// non-finite entries, judged by the same functions the inference core's runner uses
// (compare_outputs, classify_accuracy with the precision's tolerance, count_nonfinite), so the
// job ends as a real model with NaN/Inf output would: "fail", the reason counting them.
kernels::JobOutcome nonfinite_output(const jobs::JobSpec& spec, bool nan) {
  constexpr int64_t kCols = 16;
  const int64_t rows = spec.batch > 0 ? spec.batch : 1;
  std::vector<float> reference(static_cast<std::size_t>(rows * kCols));
  for (std::size_t i = 0; i < reference.size(); ++i) reference[i] = 0.5f + 0.01f * static_cast<float>(i % 97);
  std::vector<float> output = reference;
  const float bad = nan ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    output[static_cast<std::size_t>(r * kCols + 3)] = bad;
    output[static_cast<std::size_t>(r * kCols + 11)] = nan ? bad : -bad;
  }
  kernels::JobOutcome o = outcome(ResultStatus::kPass, "", spec);
  const kernels::AccuracyMetrics acc = kernels::compare_outputs(output.data(), reference.data(), rows, kCols);
  o.metrics["accuracy"] = kernels::to_json(acc);
  const kernels::Verdict verdict = kernels::classify_accuracy(acc, kernels::tolerance_for(spec.precision));
  o.status = verdict.status;
  o.reason = verdict.reason;
  const int64_t nonfinite = kernels::count_nonfinite(output.data(), static_cast<int64_t>(output.size()));
  if (nonfinite > 0 && o.status != ResultStatus::kFail) {
    o.status = ResultStatus::kFail;
    o.reason = std::to_string(nonfinite) + " NaN/Inf values in the output";
  }
  std::fprintf(stderr, "selftest:%s: %lld of %lld output values are %s\n", nan ? "nan" : "inf",
               static_cast<long long>(nonfinite), static_cast<long long>(output.size()), nan ? "NaN" : "+/-Inf");
  return o;
}

}  // namespace

bool is_selftest_model(std::string_view model) { return jobs::is_selftest_model(model); }

SelftestEnd run_selftest_job(const jobs::JobSpec& spec, int64_t memory_limit_mb) {
  const std::string_view mode = std::string_view(spec.model).substr(kSelftestModelPrefix.size());
  if (mode == "pass") return {outcome(ResultStatus::kPass, "", spec), 0};
  if (mode == "fail") return {outcome(ResultStatus::kFail, "selftest: deliberate failure", spec), 0};
  if (mode == "nan" || mode == "inf") return {nonfinite_output(spec, mode == "nan"), 0};
  if (mode == "noisy") {
    print_noisy_output();
    return {outcome(ResultStatus::kPass, "", spec), 0};
  }
  if (mode == "fds") {
    kernels::JobOutcome o = outcome(ResultStatus::kPass, "", spec);
    o.metrics["open_fds"] = open_fds();
    // The device-selection variables the worker set for this job (worker/device_selection.h).
    nlohmann::json device_env = nlohmann::json::object();
    for (const char* name : {kernels::opencl::kOpenClDeviceEnv, kVulkanDeviceVariable}) {
      if (const char* v = std::getenv(name); v != nullptr) device_env[name] = v;
    }
    o.metrics["device_env"] = std::move(device_env);
    return {std::move(o), 0};
  }
  if (mode == "exit3") return {std::nullopt, 3};
  if (mode == "noresult") return {std::nullopt, 0};
  if (mode == "alloc") {
    allocate_until_failure(memory_limit_mb);  // leaves only by throwing std::bad_alloc
  }
  if (mode == "hang") sleep_forever();
  if (mode == "stubborn") {
    signal(SIGTERM, SIG_IGN);
    sleep_forever();
  }
  if (mode == "segv" || mode == "abort" || mode == "sigkill") {
    disable_core_dumps();
    std::fflush(nullptr);
    if (mode == "segv") raise(SIGSEGV);
    if (mode == "abort") std::abort();
    raise(SIGKILL);
    return {std::nullopt, 1};  // only if the signal was somehow blocked
  }
  std::fprintf(stderr, "unknown selftest mode '%.*s' (known: %s)\n", static_cast<int>(mode.size()), mode.data(),
               jobs::selftest_mode_names().c_str());
  return {std::nullopt, 2};
}

}  // namespace am::worker
