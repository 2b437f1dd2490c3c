// External command jobs in the coordinator: only workers that announced --allow-commands are
// matched (any device of the backend, schedulable by our backends or not), an unmatched command
// is skipped with a reason that says what to do, and in the matrix a command's cell is its own,
// never a baseline, rated only against a built-in cpu f32 baseline that really ran.
#include <algorithm>

#include <gtest/gtest.h>

#include <set>

#include "coordinator/matching.h"
#include "coordinator/matrix.h"
#include "coordinator/report_markdown.h"

namespace am::coord {
namespace {

jobs::JobSpec command_spec(const std::string& backend, const std::string& model = "bert-tiny",
                           jobs::Precision precision = jobs::Precision::kF16) {
  jobs::JobSpec s;
  s.model = model;
  s.architecture = "external";
  s.backend = backend;
  s.precision = precision;
  s.batch = 1;
  s.seq_len = 32;
  s.command = jobs::CommandSpec{"bench", {"bench", "--fast"}, "accelmatrix-json", ""};
  return s;
}

DeviceInfo device(const std::string& key, const std::string& backend, bool schedulable, bool commands) {
  DeviceInfo d;
  d.key = key;
  d.backend = backend;
  d.name = key;
  d.schedulable = schedulable;
  d.runs_commands = commands;
  if (schedulable) d.precisions = {jobs::Precision::kF32};
  return d;
}

TEST(CommandMatching, OnlyWorkersThatRunCommandsAreMatched) {
  const auto spec = command_spec("cpu");
  EXPECT_FALSE(device_can_run(device("cpu:0", "cpu", true, false), spec));
  EXPECT_TRUE(device_can_run(device("cpu:0", "cpu", true, true), spec));
  // A probed CUDA GPU our backends cannot run still runs a command that brings its runtime.
  EXPECT_TRUE(device_can_run(device("cuda:0", "cuda", false, true), command_spec("cuda")));
  EXPECT_FALSE(device_can_run(device("cuda:0", "cuda", false, true), spec));
  // ...but never one of our own jobs.
  jobs::JobSpec ours;
  ours.model = "bert-tiny";
  ours.architecture = "encoder-only";
  ours.backend = "cuda";
  EXPECT_FALSE(device_can_run(device("cuda:0", "cuda", false, true), ours));
}

TEST(CommandMatching, RequiredTagsApply) {
  auto spec = command_spec("cpu");
  spec.required_tags = {{"gpu", "a100"}};
  DeviceInfo d = device("cpu:0", "cpu", true, true);
  EXPECT_FALSE(device_can_run(d, spec));
  d.worker_tags = {{"gpu", "a100"}};
  EXPECT_TRUE(device_can_run(d, spec));
}

TEST(CommandMatching, AnUnmatchedCommandIsSkippedSayingWhatIsMissing) {
  auto none = settle_ineligible(command_spec("cpu"), {device("cpu:0", "cpu", true, false)});
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->status, ResultStatus::kSkipped);
  EXPECT_NE(none->reason.find("no registered worker runs commands"), std::string::npos) << none->reason;
  EXPECT_NE(none->reason.find("--allow-commands"), std::string::npos);
  auto backend = settle_ineligible(command_spec("rocm"), {device("cpu:0", "cpu", true, true)});
  ASSERT_TRUE(backend.has_value());
  EXPECT_NE(backend->reason.find("no worker that runs commands has a 'rocm' device"), std::string::npos)
      << backend->reason;
  EXPECT_FALSE(settle_ineligible(command_spec("cpu"), {device("cpu:0", "cpu", true, true)}).has_value());
}

ReportRow row(const std::string& job_id, const jobs::JobSpec& spec, std::vector<double> samples) {
  ReportRow r;
  r.run_id = "r";
  r.job_id = job_id;
  r.spec = jobs::to_json(spec);
  r.model = spec.model;
  r.architecture = spec.architecture;
  r.backend = spec.backend;
  r.precision = spec.precision;
  r.state = JobState::kDone;
  r.status = ResultStatus::kPass;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  r.metrics = {{"latency_ms", {{"median", sorted[sorted.size() / 2]}, {"samples", samples}}}};
  return r;
}

jobs::JobSpec builtin(const std::string& backend, jobs::Precision p) {
  jobs::JobSpec s;
  s.model = "bert-tiny";
  s.architecture = "encoder-only";
  s.backend = backend;
  s.precision = p;
  s.batch = 1;
  s.seq_len = 32;
  return s;
}

TEST(CommandMatrix, ACommandCellIsItsOwnAndNeverTheBaseline) {
  // A command labelled like the built-in baseline (bert-tiny, cpu, f32) must not join its cell.
  auto cmd = command_spec("cpu", "bert-tiny", jobs::Precision::kF32);
  const Matrix m = build_matrix({row("a", builtin("cpu", jobs::Precision::kF32), {10, 10.2, 9.8, 10.1, 9.9}),
                                 row("b", cmd, {5, 5.1, 4.9, 5.05, 4.95})});
  ASSERT_EQ(m.cells.size(), 2u);
  const MatrixCell* base = find_cell(m, "bert-tiny", "cpu", jobs::Precision::kF32);
  ASSERT_NE(base, nullptr);
  EXPECT_TRUE(base->command.empty());
  EXPECT_EQ(base->rating, Rating::kBaseline);
  EXPECT_DOUBLE_EQ(*base->median_ms, 10.0);
  const MatrixCell* command_cell = nullptr;
  for (const auto& c : m.cells) if (c.command == "bench") command_cell = &c;
  ASSERT_NE(command_cell, nullptr);
  EXPECT_NE(command_cell->rating, Rating::kBaseline);
  EXPECT_DOUBLE_EQ(*command_cell->median_ms, 5.0);
  ASSERT_TRUE(command_cell->speedup.has_value());       // against the real built-in baseline
  EXPECT_NEAR(*command_cell->speedup, 2.0, 0.05);
}

TEST(CommandMatrix, WithoutABuiltInBaselineACommandShowsItsLatencyOnly) {
  // The command's own cpu f32 job is no baseline for another command of the same model.
  const Matrix m = build_matrix({row("b", command_spec("cpu", "ext", jobs::Precision::kF32), {5, 5, 5}),
                                 row("c", command_spec("cuda", "ext", jobs::Precision::kExternal), {1, 1, 1})});
  for (const MatrixCell& c : m.cells) {
    EXPECT_FALSE(c.speedup.has_value()) << c.backend;
    EXPECT_NE(c.rating, Rating::kBaseline) << c.backend;
    EXPECT_EQ(c.rating, Rating::kNoBaseline) << c.backend;
    EXPECT_TRUE(c.median_ms.has_value());
  }
}

// A run that holds the model under two configs (its rows labelled by the store): each config is
// a cell of its own, and a command naming the plain model has no single baseline to be rated
// against (it was rated against the two pooled).
TEST(CommandMatrix, ACommandNamingAModelWithTwoConfigsHasNoSingleBaseline) {
  ReportRow shallow = row("a", builtin("cpu", jobs::Precision::kF32), {2, 2, 2, 2, 2});
  shallow.model_label = "bert-tiny (layers=1)";
  ReportRow deep = row("d", builtin("cpu", jobs::Precision::kF32), {20, 20, 20, 20, 20});
  deep.model_label = "bert-tiny (layers=8)";
  ReportRow cmd = row("c", command_spec("cpu", "bert-tiny", jobs::Precision::kF32), {5, 5, 5, 5, 5});
  const Matrix m = build_matrix({shallow, deep, cmd});
  ASSERT_EQ(m.cells.size(), 3u);
  const MatrixCell* one = find_cell(m, "bert-tiny (layers=1)", "cpu", jobs::Precision::kF32);
  const MatrixCell* eight = find_cell(m, "bert-tiny (layers=8)", "cpu", jobs::Precision::kF32);
  ASSERT_TRUE(one != nullptr && eight != nullptr);
  EXPECT_DOUBLE_EQ(*one->median_ms, 2.0);
  EXPECT_DOUBLE_EQ(*eight->median_ms, 20.0);
  const MatrixCell* command_cell = nullptr;
  for (const auto& c : m.cells) if (c.command == "bench") command_cell = &c;
  ASSERT_NE(command_cell, nullptr);
  EXPECT_EQ(command_cell->baseline_configs, 2);
  EXPECT_EQ(command_cell->rating, Rating::kNoBaseline);
  EXPECT_FALSE(command_cell->speedup.has_value());
  // Named by one of the labels, it is rated against that config.
  cmd.model = cmd.model_label = "bert-tiny (layers=8)";
  const Matrix named = build_matrix({shallow, deep, cmd});
  for (const auto& c : named.cells) {
    if (c.command != "bench") continue;
    EXPECT_EQ(c.baseline_configs, 0);
    ASSERT_TRUE(c.speedup.has_value());
    EXPECT_NEAR(*c.speedup, 4.0, 0.05);
  }
}

// Two runs of one command that differ by their precision label (llama-bench at Q4_K_M and at
// Q8_0) are two cells and two memory lines, not one whose figures mix both.
TEST(CommandMatrix, CommandsThatDifferByTheirPrecisionLabelAreCellsOfTheirOwn) {
  auto q4 = command_spec("cpu", "tinyllama", jobs::Precision::kExternal);
  q4.command->precision_label = "Q4_K_M";
  auto q8 = q4;
  q8.command->precision_label = "Q8_0";
  ReportRow a = row("a", q4, {2, 2, 2}), b = row("b", q8, {4, 4, 4});
  a.hardware_class = b.hardware_class = "cpu-x";
  a.metrics["memory"] = {{"peak_rss_bytes", 100 << 20}};
  b.metrics["memory"] = {{"peak_rss_bytes", 200 << 20}};
  const Matrix m = build_matrix({a, b});
  ASSERT_EQ(m.cells.size(), 2u);
  std::set<std::string> labels;
  for (const MatrixCell& c : m.cells) {
    labels.insert(c.command_precision_label);
    EXPECT_DOUBLE_EQ(*c.median_ms, c.command_precision_label == "Q4_K_M" ? 2.0 : 4.0);
  }
  EXPECT_EQ(labels, (std::set<std::string>{"Q4_K_M", "Q8_0"}));
  RunRecord run;
  run.run_id = "r";
  const std::string md = render_markdown(run, {a, b});
  EXPECT_NE(md.find("| tinyllama · bench Q4_K_M | external | 100.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tinyllama · bench Q8_0 | external | 200.0 |"), std::string::npos) << md;
  EXPECT_NE(md.find("command bench Q8_0"), std::string::npos) << md;
}

TEST(CommandMatrix, TheMarkdownReportNamesTheCommandOfACell) {
  RunRecord run;
  run.run_id = "r";
  const std::string md = render_markdown(
      run, {row("a", builtin("cpu", jobs::Precision::kF32), {10, 10, 10}),
            row("b", command_spec("cpu", "bert-tiny", jobs::Precision::kExternal), {5, 5, 5})});
  const auto line = md.find("| bert-tiny | external | external |");
  ASSERT_NE(line, std::string::npos) << md;
  const std::string row_text = md.substr(line, md.find('\n', line) - line);
  EXPECT_NE(row_text.find("command bench"), std::string::npos) << row_text;
  const auto base = md.find("| bert-tiny | encoder-only | f32 |");
  ASSERT_NE(base, std::string::npos) << md;
  EXPECT_EQ(md.substr(base, md.find('\n', base) - base).find("command"), std::string::npos);
}

}  // namespace
}  // namespace am::coord
