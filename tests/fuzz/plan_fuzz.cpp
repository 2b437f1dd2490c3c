// Fuzz target: the plan parser (jobs/plan.h load_plan()) against the real model catalog.
//
// Input: the bytes of a plan file (TOML). They are written to a scratch file on tmpfs and loaded
// with a catalog of three of the source tree's models (jobs/models), the way `accelmatrix plan
// FILE` does.
// Properties: load_plan() never crashes or throws; an error names the plan file; every job it
// expands to has a well-formed id and a spec that survives the JSON round trip workers rely on.
#include <cstdint>
#include <fstream>
#include <string>

#include "jobs/job_spec.h"
#include "jobs/plan.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// Three real catalog models (encoder-only, decoder-only, encoder-decoder) copied to a scratch
// catalog. The whole catalog (25 files) costs each execution a directory listing and a TOML
// parse per model named: 86 executions/s instead of several hundred under ASan, for no parser
// coverage the three do not give.
const std::filesystem::path& catalog_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path src = std::filesystem::path(ACCELMATRIX_SOURCE_DIR) / "jobs" / "models";
    const std::filesystem::path out = am::fuzz::scratch_dir() / "models";
    std::filesystem::create_directories(out);
    for (const char* model : {"bert-tiny", "TinyLlama-1.1B-Chat", "t5-efficient-tiny"}) {
      std::filesystem::copy_file(src / (std::string(model) + ".toml"), out / (std::string(model) + ".toml"),
                                 std::filesystem::copy_options::overwrite_existing);
    }
    return out;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  am::fuzz::quiet_logs();
  (void)catalog_dir();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::filesystem::path file = am::fuzz::scratch_dir() / "fuzz-plan.toml";
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  am::Result<am::jobs::Plan> plan = am::jobs::load_plan(file, catalog_dir());
  if (!plan.ok()) {
    AM_FUZZ_CHECK(plan.status().message().find("fuzz-plan.toml") != std::string::npos,
                  "error does not name the file: " + plan.status().to_string());
    return 0;
  }
  for (const am::jobs::PlannedJob& job : plan->jobs) {
    AM_FUZZ_CHECK(job.job_id.size() == 16, "job id '" + job.job_id + "'");
    const nlohmann::json doc = am::jobs::to_json(job.spec);
    am::Result<am::jobs::JobSpec> back = am::jobs::job_spec_from_json(doc);
    AM_FUZZ_CHECK(back.ok(), "expanded spec does not validate: " + back.status().to_string() + "\n" + doc.dump());
    AM_FUZZ_CHECK(am::jobs::to_json(*back) == doc, "spec changes in a JSON round trip: " + doc.dump());
  }
  return 0;
}
