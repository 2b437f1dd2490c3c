// Figures that are not numbers, in every report format (issue 16, item 3): a worker's metrics
// may hold null where a figure could not be computed, or NaN and infinities (msgpack carries
// them; the store's JSON documents cannot, so they are kept as null). Each format must show such
// a figure as missing, never as "nan", "inf" or "null", and stay well-formed; and a cell measured
// without a measured baseline claims no speed-up.
#include <gtest/gtest.h>

#include <cctype>
#include <limits>
#include <string>

#include "coordinator/dashboard_data.h"
#include "coordinator/report_csv.h"
#include "coordinator/report_json.h"
#include "coordinator/report_junit.h"
#include "coordinator/report_markdown.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::make_spec;
using testing::perf_metrics;

// The words a non-finite or absent figure must never be printed as, matched as whole words
// (case-insensitive), so "info" or "null" inside a reason text do not count.
bool has_word(const std::string& text, const std::string& word) {
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string lower(text.size(), ' ');
  for (std::size_t i = 0; i < text.size(); ++i) lower[i] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[i])));
  for (std::size_t at = lower.find(word); at != std::string::npos; at = lower.find(word, at + 1)) {
    const bool start = at == 0 || !is_word(lower[at - 1]);
    const bool end = at + word.size() >= lower.size() || !is_word(lower[at + word.size()]);
    if (start && end) return true;
  }
  return false;
}

void expect_no_non_number_words(const std::string& what, const std::string& text) {
  for (const char* word : {"nan", "inf", "infinity", "null"}) {
    EXPECT_FALSE(has_word(text, word)) << what << " prints '" << word << "':\n" << text;
  }
}

// The cpu f32 baseline passed but measured nothing usable: its latency is null, its accuracy
// figures infinite. q8_0 on the same cpu measured normally, so its cell has no baseline to be
// compared with.
class MissingFigures : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    ASSERT_TRUE(store_->upsert_worker({"worker-a", "lab-box-1", "accelmatrix 0.1.0 (abc123def456)", {}, {}, kT0, ""}).ok());
    // What a worker's RESULT can carry (msgpack has NaN and infinities): non-finite and null
    // figures. The store keeps a JSON document, where each becomes null.
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    nlohmann::json unusable = {
        {"latency_ms", {{"median", nan}, {"p90", inf}, {"count", 0}, {"samples", nlohmann::json::array({nan, inf})}}},
        {"throughput", {{"tokens_per_s", nullptr}}},
        {"accuracy", {{"nmse", inf}, {"cosine", -inf}, {"top1_agreement", nan}}}};
    base_id_ = run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32"), "pass", "", unusable);
    q8_id_ = run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0"), "pass", "",
                     perf_metrics(2.0, 2.5, 8000.0, 2.25e-5, 0.999876, 0.96875));
    ASSERT_TRUE(store_->mark_run_finished(kRun, kT0 + 3'600'000).ok());
  }

  std::string base_id_, q8_id_;
};

TEST_F(MissingFigures, NonFiniteFiguresAreStoredAsNull) {
  const auto r = rows();
  ASSERT_EQ(r.size(), 2u);
  const auto& m = r[0].metrics;
  EXPECT_TRUE(m["latency_ms"]["median"].is_null()) << m.dump();
  EXPECT_TRUE(m["latency_ms"]["p90"].is_null()) << m.dump();
  EXPECT_EQ(m["latency_ms"]["samples"], nlohmann::json::array({nullptr, nullptr})) << m.dump();
  EXPECT_TRUE(m["accuracy"]["nmse"].is_null()) << m.dump();
  EXPECT_TRUE(m["accuracy"]["cosine"].is_null()) << m.dump();
}

TEST_F(MissingFigures, MarkdownShowsADashForEachAndNoSpeedupWithoutABaseline) {
  const std::string md = render_markdown(run_record(), rows());
  expect_no_non_number_words("markdown", md);
  EXPECT_NE(md.find("| `" + base_id_ + "` | bert-tiny | cpu | f32 | 1 | 32 | ✅ pass | 1 | worker-a | — | — | — | — | — | — |"),
            std::string::npos)
      << md;
  // The q8_0 cell: measured, no speed-up claimed.
  EXPECT_NE(md.find("| bert-tiny | encoder-only | q8_0 | ✅ pass | measured, no baseline | 2.000 | — |"),
            std::string::npos)
      << md;
}

TEST_F(MissingFigures, JsonHasNullsAndParsesBack) {
  const nlohmann::json doc = render_json(run_record(), rows());
  const std::string text = doc.dump();
  const auto back = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(back.is_discarded()) << text;
  for (const auto& r : back["results"]) {
    if (r["job_id"] != base_id_) continue;
    const auto& m = r["metrics"];
    EXPECT_TRUE(m["latency_ms"]["median"].is_null()) << m.dump();
    EXPECT_TRUE(m["accuracy"]["nmse"].is_null()) << m.dump();
    EXPECT_TRUE(m["accuracy"]["cosine"].is_null()) << m.dump();
  }
  bool saw_q8 = false;
  for (const auto& cell : back["matrix"]) {
    if (cell["precision"] != "q8_0") continue;
    saw_q8 = true;
    EXPECT_EQ(cell["rating"], "no_baseline") << cell.dump();
    EXPECT_TRUE(cell["speedup"].is_null()) << cell.dump();
  }
  EXPECT_TRUE(saw_q8) << text;
}

TEST_F(MissingFigures, CsvLeavesThemEmpty) {
  const std::string csv = render_csv(run_record(), rows());
  expect_no_non_number_words("csv", csv);
  // The header's columns and the baseline job's values, matched by position.
  auto fields = [](const std::string& line) {
    std::vector<std::string> out(1);
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      else if (c == ',' && !quoted) out.emplace_back();
      else out.back() += c;
    }
    return out;
  };
  const auto names = fields(csv.substr(0, csv.find("\r\n")));
  auto record_of = [&](const std::string& job_id) {
    const std::size_t at = csv.find(job_id);
    if (at == std::string::npos) return std::vector<std::string>{};
    const std::size_t line_start = csv.rfind("\r\n", at) + 2;
    return fields(csv.substr(line_start, csv.find("\r\n", at) - line_start));
  };
  auto column = [&](const std::vector<std::string>& record, const std::string& name) {
    for (std::size_t i = 0; i < names.size() && i < record.size(); ++i) {
      if (names[i] == name) return record[i];
    }
    return std::string("<no column ") + name + ">";
  };
  const auto base = record_of(base_id_);
  ASSERT_EQ(base.size(), names.size()) << csv;
  for (const char* name : {"latency_median_ms", "latency_p90_ms", "tokens_per_s", "nmse", "cosine",
                           "top1_agreement", "cell_speedup"}) {
    EXPECT_EQ(column(base, name), "") << name;
  }
  const auto q8 = record_of(q8_id_);
  ASSERT_EQ(q8.size(), names.size()) << csv;
  EXPECT_EQ(column(q8, "latency_median_ms"), "2");
  EXPECT_EQ(column(q8, "cell_rating"), "no_baseline");
  EXPECT_EQ(column(q8, "cell_speedup"), "");
}

TEST_F(MissingFigures, JunitOmitsTheProperties) {
  const std::string xml = render_junit(run_record(), rows());
  expect_no_non_number_words("junit", xml);
  const std::size_t at = xml.find(base_id_);
  ASSERT_NE(at, std::string::npos) << xml;
  const std::string testcase = xml.substr(at, xml.find("</testcase>", at) - at);
  EXPECT_EQ(testcase.find("median_latency_ms"), std::string::npos) << testcase;
  EXPECT_EQ(testcase.find("name=\"nmse\""), std::string::npos) << testcase;
}

TEST_F(MissingFigures, DashboardDataHasNullsAndNoBaselineRating) {
  auto workers = store_->list_workers();
  ASSERT_TRUE(workers.ok());
  const nlohmann::json d = dashboard_data(run_record(), rows(), *workers, kT0);
  const std::string text = d.dump();
  ASSERT_FALSE(nlohmann::json::parse(text, nullptr, false).is_discarded());
  const auto& jobs = d["jobs"];
  std::size_t base = jobs["id"].size();
  for (std::size_t i = 0; i < jobs["id"].size(); ++i) {
    if (jobs["id"][i] == base_id_) base = i;
  }
  ASSERT_LT(base, jobs["id"].size()) << text;
  EXPECT_TRUE(jobs["latency"][base].is_null()) << jobs["latency"][base].dump();
  EXPECT_TRUE(jobs["nmse"][base].is_null()) << jobs["nmse"][base].dump();
  EXPECT_TRUE(jobs["cosine"][base].is_null()) << jobs["cosine"][base].dump();
  bool saw_q8 = false;
  const auto& cells = d["cells"];  // by column (dashboard_data.h)
  for (std::size_t i = 0; i < d["cell_count"].get<std::size_t>(); ++i) {
    if (cells["precision"][i] != "q8_0") continue;
    saw_q8 = true;
    EXPECT_EQ(cells["rating"][i], "no_baseline") << i;
    EXPECT_TRUE(cells["speedup"][i].is_null()) << cells["speedup"][i].dump();
  }
  EXPECT_TRUE(saw_q8);
}

}  // namespace
}  // namespace am::coord
