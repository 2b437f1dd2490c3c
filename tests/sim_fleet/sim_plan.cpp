#include "tests/sim_fleet/sim_plan.h"

#include <algorithm>
#include <cmath>

#include "jobs/precision.h"

namespace am::sim {
namespace {

constexpr int64_t kMaxSeqLen = 512;   // bert-tiny's max_positions (jobs/models/bert-tiny.toml)

std::string int_list(int64_t n) {
  std::string out = "[";
  for (int64_t i = 1; i <= n; ++i) out += (i > 1 ? ", " : "") + std::to_string(i);
  return out + "]";
}

}  // namespace

SimPlan many_jobs_plan(const std::string& name, int64_t min_jobs, const std::string& mode,
                       const std::string& placement) {
  const int64_t precisions = static_cast<int64_t>(jobs::all_precisions().size());
  const int64_t per_precision = std::max<int64_t>(1, (min_jobs + precisions - 1) / precisions);
  const int64_t seq_lens = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(std::sqrt(static_cast<double>(per_precision)))), 1, kMaxSeqLen);
  const int64_t batches = (per_precision + seq_lens - 1) / seq_lens;
  std::string precision_list;
  for (const jobs::PrecisionInfo& p : jobs::all_precisions()) {
    precision_list += (precision_list.empty() ? "\"" : ", \"") + std::string(p.name) + "\"";
  }
  SimPlan plan;
  plan.jobs = precisions * batches * seq_lens;
  plan.toml = "[plan]\nname = \"" + name + "\"\nmode = \"" + mode + "\"\n\n[defaults]\nbackends = [\"cpu\"]\n" +
              "precisions = [" + precision_list + "]\nplacement = \"" + placement + "\"\nbatch = " +
              int_list(batches) + "\nseq_len = " + int_list(seq_lens) + "\n\n[[models]]\nname = \"bert-tiny\"\n";
  return plan;
}

}  // namespace am::sim
