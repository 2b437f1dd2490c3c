// Reports that stream a run from the store instead of holding it (docs/SCALE.md "Reports at a
// million results"): the stored-JSON reader, projected rows, the one-walk JSON writer and the
// read snapshot it walks in.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "coordinator/matrix.h"
#include "coordinator/report_common.h"
#include "coordinator/report_compare.h"
#include "coordinator/report_csv.h"
#include "coordinator/report_junit.h"
#include "coordinator/report_markdown.h"
#include "coordinator/report_json.h"
#include "coordinator/stored_json.h"
#include "store_fixture.h"
#include "tests/common/json_same.h"

namespace am::coord {
namespace {

using nlohmann::json;
using testing::make_spec;
using testing::perf_metrics;
using testing::raw_exec;
using testing::raw_query;

json random_document(std::mt19937_64& rng, int depth) {
  std::uniform_int_distribution<int> kind(0, depth > 3 ? 6 : 8);
  switch (kind(rng)) {
    case 0: return nullptr;
    case 1: return (rng() & 1) != 0;
    case 2: return -static_cast<int64_t>(rng() >> 2);
    case 3: return static_cast<uint64_t>(rng());   // past int64 half of the time
    case 4: return std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 200) - 150);
    case 5: return -std::uniform_real_distribution<double>(0, 1e6)(rng);
    case 6: {
      static const char* kPieces[] = {"plain", "quote \" and \\ backslash", "tab\tnewline\n", "\x01\x1f",
                                      "ümlaut · 漢字 🚀", ""};
      return std::string(kPieces[rng() % 6]) + std::to_string(rng() % 1000);
    }
    case 7: {
      json a = json::array();
      for (int i = 0, n = static_cast<int>(rng() % 6); i < n; ++i) a.push_back(random_document(rng, depth + 1));
      return a;
    }
    default: {
      json o = json::object();
      for (int i = 0, n = static_cast<int>(rng() % 6); i < n; ++i) {
        o["k" + std::to_string(rng() % 20)] = random_document(rng, depth + 1);
      }
      return o;
    }
  }
}

TEST(StoredJson, DecodesEveryDocumentAsNlohmannParsesIt) {
  StoredJsonReader reader;
  std::mt19937_64 rng(20261128);
  for (int i = 0; i < 500; ++i) {
    json doc = json::object();
    for (int k = 0; k < 8; ++k) doc["m" + std::to_string(k)] = random_document(rng, 0);
    const std::string text = doc.dump();
    auto decoded = reader.decode(text);
    ASSERT_TRUE(decoded.ok()) << decoded.status().to_string() << "\n" << text;
    am::testing::expect_same_json(json::parse(text), *decoded, "doc " + std::to_string(i));
    EXPECT_EQ(decoded->dump(), text);
  }
}

TEST(StoredJson, KeepsOnlyTheMembersAskedFor) {
  StoredJsonReader reader;
  const std::string text = R"({"a":{"x":1,"y":[2,3]},"b":[1,{"z":2}],"c":3,"d":{"x":4},"e":"whole"})";
  const std::vector<std::string_view> only{"a.x", "b", "c.x", "e.x", "missing.y"};
  auto decoded = reader.decode(text, &only);
  ASSERT_TRUE(decoded.ok());
  // a: only x; b: whole; c and e are not objects: whole; d not asked for; missing: absent.
  EXPECT_EQ(*decoded, json::parse(R"({"a":{"x":1},"b":[1,{"z":2}],"c":3,"e":"whole"})"));
  // A document that is not an object is returned whole.
  auto array = reader.decode("[1,2]", &only);
  ASSERT_TRUE(array.ok());
  EXPECT_EQ(*array, json::parse("[1,2]"));
}

TEST(StoredJson, RefusesWhatIsNotOneValidDocument) {
  StoredJsonReader reader;
  for (const std::string bad : {std::string("{"), std::string(R"({"a":1} x)"), std::string("\"\xff\""),
                                std::string("1e400"), std::string(R"({"a":tru})"), std::string("nul")}) {
    auto decoded = reader.decode(bad);
    ASSERT_FALSE(decoded.ok()) << bad;
    EXPECT_EQ(decoded.status().code(), StatusCode::kInternal) << bad;
    EXPECT_FALSE(decoded.status().message().empty());
  }
  auto empty = reader.decode("");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, json::object());   // columns default to ''
}

json paired(double median_ms, double baseline_ms) {
  json m = perf_metrics(median_ms, median_ms * 1.2, 1000.0, 1e-5, 0.9999, 1.0);
  m["paired_baseline"] = {{"backend", "cpu"}, {"precision", "f32"}, {"blocks", 6},
                          {"latency_ms", {{"median", baseline_ms}, {"samples", testing::steady_samples(baseline_ms)}}}};
  m["host"] = {{"load_start", 3.2}, {"load_end", 4.1}, {"cpus", 2}, {"other_load", 1.3}, {"steal_fraction", 0.0}};
  // What a real job stores beside: read by no matrix, carried whole in the results.
  m["latency_ms"]["histogram"] = {{"counts", {1, 4, 2}}, {"lo", median_ms * 0.9}, {"hi", median_ms * 1.3}};
  m["kernel"] = {{"path", "avx2"}, {"threads", 2}};
  return m;
}

// A run of every kind of row: baselines at two shapes, paired jobs on a busy host, another
// backend on another class, failures, a pending job, damaged and non-object metrics, hostile text.
class StreamingReport : public testing::StoreFixture {
 protected:
  void SetUp() override {
    StoreFixture::SetUp();
    ASSERT_TRUE(store_->upsert_worker({"worker-a", "lab-box-1", "accelmatrix 0.1.0 (abc)", {}, {}, kT0, ""}).ok());
    std::mt19937 rng(4242);
    std::uniform_real_distribution<double> ms(2.0, 9.0);
    for (int seq : {16, 64}) {
      const double base = ms(rng);
      run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32", 1, seq), "pass", "",
              perf_metrics(base, base * 1.3, 2000, 0, 1, 1));
      run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0", 1, seq), "pass", "", paired(base / 2, base));
      const std::string gpu = add(make_spec("bert-tiny", "encoder-only", "opencl", "f16", 1, seq));
      lease(gpu, 1, "worker-a", "opencl-0011");
      store_one(result(gpu, 1, "pass", "", perf_metrics(base / 3, base / 2.5, 9000, 1e-4, 0.999, 1.0)));
    }
    run_job(make_spec("bert-tiny", "encoder-only", "vulkan", "q2_k"), "unsupported", "no kernel for \"q2_k\"|x");
    run_job(make_spec("tinyllama-1.1b", "decoder-only", "cpu", "f32", 1, 64, 5, true), "crash",
            "killed by signal 11\n\x01 \xff\xfe");
    pending_ = add(make_spec("tinyllama-1.1b", "decoder-only", "cpu", "q4_0", 1, 64, 5, true));
    lease(pending_, 1);
    damaged_ = run_job(make_spec("tinyllama-1.1b", "decoder-only", "cpu", "q4_1"), "pass", "",
                       perf_metrics(3, 4, 100, 0, 1, 1));
    raw_exec(db_path_, "UPDATE attempts SET metrics_json = '{\"latency_ms\": {broken' WHERE job_id = '" + damaged_ + "'");
    array_ = run_job(make_spec("tinyllama-1.1b", "decoder-only", "cpu", "q8_0"), "pass", "",
                     perf_metrics(3, 4, 100, 0, 1, 1));
    raw_exec(db_path_, "UPDATE attempts SET metrics_json = '[1,2]' WHERE job_id = '" + array_ + "'");
  }

  // What `write` streams from the store's rows, in one read snapshot, as `accelmatrix report`
  // runs a writer.
  std::string streamed_by(const std::function<Status(const ReportRowSource&, const TextSink&)>& write) {
    std::string text;
    const ReportRowSource source = [&](const ReportDocumentKeys& keys, const ReportRowVisitor& visit) {
      return store_->for_each_report_row(kRun, keys, visit);
    };
    Status st = store_->in_read_snapshot([&] {
      return write(source, [&](std::string_view piece) {
        text.append(piece);
        return Status::Ok();
      });
    });
    EXPECT_TRUE(st.ok()) << st.to_string();
    return text;
  }

  // The streamed document, as `accelmatrix report --format json` writes it.
  std::string streamed() {
    auto workers = store_->list_workers();
    EXPECT_TRUE(workers.ok());
    return streamed_by([&](const ReportRowSource& source, const TextSink& sink) {
      return write_json_report(run_record(), *workers, source, sink);
    });
  }

  std::string pending_, damaged_, array_;
};

TEST_F(StreamingReport, TheStreamedDocumentIsTheDocumentOfTheRowsInMemory) {
  auto workers = store_->list_workers();
  ASSERT_TRUE(workers.ok());
  const json in_memory = render_json(run_record(), rows(), *workers);
  const json from_store = json::parse(streamed());
  EXPECT_EQ(from_store, in_memory);
  ASSERT_EQ(from_store["results"].size(), rows().size());
  EXPECT_EQ(from_store["matrix"].size(), in_memory["matrix"].size());
  EXPECT_GE(from_store["matrix"].size(), 6u);
}

// The CSV streamed from the store (documents projected to what its columns read) is the CSV of
// the rows in memory (whole documents), byte for byte; a job that fills every column makes a
// column whose member the projection left out come out empty, and differ.
TEST_F(StreamingReport, TheStreamedCsvIsTheCsvOfTheRowsInMemory) {
  json full = paired(4.0, 8.0);
  full["latency_ms"].update({{"min", 3.5}, {"max", 5.25}, {"mean", 4.1}, {"stddev", 0.3}});
  full["throughput"]["samples_per_s"] = 250.0;
  full["generation"] = {{"time_to_first_token_ms_median", 12.5}, {"prefill_ms_median", 9.75}, {"decode_tokens_per_s", 81.0}};
  full["accuracy"].update({{"kl_divergence", 0.002}, {"max_abs_err", 0.0625}});
  full["memory"] = {{"peak_rss_bytes", 123456789}, {"weights_bytes", 4567890}};
  full["process"] = {{"wall_s", 1.75}, {"peak_rss_bytes", 223456789}};
  const std::string id = run_job(make_spec("bert-tiny", "encoder-only", "cpu", "bf16", 1, 16), "pass", "", full);
  const std::string streamed_csv = streamed_by([&](const ReportRowSource& source, const TextSink& sink) {
    return write_csv_report(run_record(), source, sink);
  });
  EXPECT_EQ(streamed_csv, render_csv(run_record(), rows()));
  // The full job's record holds every value it stored.
  const std::size_t at = streamed_csv.find(id);
  ASSERT_NE(at, std::string::npos);
  const std::string record = streamed_csv.substr(at, streamed_csv.find("\r\n", at) - at);
  for (const char* value : {"3.5", "5.25", "4.1", "0.3", "250", "12.5", "9.75", "81", "0.002", "0.0625", "4567890",
                            "123456789", "1.75", "3.2", "4.1", "1.3"}) {
    EXPECT_NE(record.find(std::string(",") + value + ","), std::string::npos) << value << " in " << record;
  }
}

// The same for Markdown: the streamed report (aggregates from one projected walk, the job table
// from another) is the report of the rows in memory, with the memory table and the busy-host
// warning that only projected members can feed.
TEST_F(StreamingReport, TheStreamedMarkdownIsTheMarkdownOfTheRowsInMemory) {
  json full = paired(4.0, 8.0);
  full["memory"] = {{"peak_rss_bytes", 123456789}, {"weights_bytes", 4567890}};
  full["throughput"]["tokens_per_s"] = 1234.5;
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "bf16", 1, 16), "pass", "", full);
  auto workers = store_->list_workers();
  ASSERT_TRUE(workers.ok());
  const std::string streamed_md = streamed_by([&](const ReportRowSource& source, const TextSink& sink) {
    return write_markdown_report(run_record(), *workers, source, sink);
  });
  EXPECT_EQ(streamed_md, render_markdown(run_record(), rows(), *workers));
  EXPECT_NE(streamed_md.find("| 117.7 / 4.4 |"), std::string::npos) << streamed_md;   // MiB
  EXPECT_NE(streamed_md.find("**Busy host:**"), std::string::npos);
  EXPECT_NE(streamed_md.find("| 1234.5 |"), std::string::npos);
}

// JUnit: one walk for the suites' totals, a second for the cases (the first suite's written as
// read, the others held until their turn); the same document as the rows in memory give, suites
// (cpu, opencl, vulkan) and cases in job order.
TEST_F(StreamingReport, TheStreamedJunitIsTheJunitOfTheRowsInMemory) {
  json wall_only = json::object();
  wall_only["process"] = {{"wall_s", 2.5}};
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "bf16", 1, 16), "fail", "too far off", wall_only);
  const std::string streamed_xml = streamed_by([&](const ReportRowSource& source, const TextSink& sink) {
    return write_junit_report(run_record(), source, sink);
  });
  EXPECT_EQ(streamed_xml, render_junit(run_record(), rows()));
  std::size_t suites = 0;
  for (std::size_t at = streamed_xml.find("<testsuite "); at != std::string::npos;
       at = streamed_xml.find("<testsuite ", at + 1)) {
    ++suites;
  }
  EXPECT_EQ(suites, 3u) << streamed_xml;
  EXPECT_NE(streamed_xml.find("time=\"2.500000\""), std::string::npos);   // process.wall_s, projected
  EXPECT_NE(streamed_xml.find("<property name=\"nmse\" value=\"1e-05\"/>"), std::string::npos) << streamed_xml;
}

// compare reads rows with projected documents (compare_document_keys), the spec as its stored
// text, and no logs; the comparison is the one whole rows give: side values (samples, accuracy,
// CPU and wall time, threads) and a changed setting found from the texts included.
TEST_F(StreamingReport, CompareOfProjectedRowsIsCompareOfWholeRows) {
  json timed = paired(4.0, 8.0);
  timed["process"] = {{"cpu_user_s", 1.25}, {"cpu_sys_s", 0.5}, {"wall_s", 1.5}, {"peak_rss_bytes", 1000}};
  timed["threads"] = 2;
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "bf16", 1, 16), "pass", "", timed);
  CompareSide projected_base{"a.db", run_record(), {}, {}};
  ASSERT_TRUE(store_
                  ->for_each_report_row(kRun, compare_document_keys(),
                                        [&](const ReportRow& r, const ReportRowTexts& t) {
                                          projected_base.rows.push_back(r);
                                          projected_base.spec_texts.emplace_back(t.spec_json);
                                          return Status::Ok();
                                        })
                  .ok());
  // The new run: the same rows, one of them measured with another min_time_s.
  CompareSide whole_base{"a.db", run_record(), rows(), {}};
  CompareSide whole_new = whole_base;
  CompareSide projected_new = projected_base;
  const std::size_t changed = whole_new.rows.size() - 1;
  whole_new.rows[changed].spec["min_time_s"] = 9.0;
  projected_new.spec_texts[changed] = whole_new.rows[changed].spec.dump();
  CompareOptions options;
  auto whole = compare_runs(whole_base, whole_new, options);
  auto from_projected = compare_runs(projected_base, projected_new, options);
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(from_projected.ok());
  const json a = render_compare_json(*whole);
  const json b = render_compare_json(*from_projected);
  EXPECT_EQ(a, b);
  EXPECT_NE(a.dump().find("1.75"), std::string::npos);         // cpu_user_s + cpu_sys_s, not lost
  EXPECT_NE(a.dump().find("\"min_time_s\""), std::string::npos);   // the changed setting
}

TEST_F(StreamingReport, ResultsCarryTheStoredDocumentsWholeAndNameTheDamage) {
  const json doc = json::parse(streamed());
  int checked = 0;
  for (const json& r : doc["results"]) {
    const std::string id = r["job_id"];
    const std::string stored = raw_query(db_path_, "SELECT metrics_json FROM attempts WHERE job_id = '" + id + "'");
    if (id == damaged_) {
      EXPECT_EQ(r["metrics"], json::object());
      EXPECT_NE(r["reason"].get<std::string>().find("corrupt metrics of job '" + id + "'"), std::string::npos)
          << r["reason"];
    } else if (id == array_) {
      EXPECT_EQ(r["metrics"], json::object());   // not an object: shown as none
    } else if (id == pending_) {
      EXPECT_EQ(r["metrics"], json::object());
      EXPECT_EQ(r["status"], "");
    } else {
      // Every member, not only the ones the matrix reads (histogram, kernel).
      EXPECT_EQ(r["metrics"], json::parse(stored)) << id;
      ++checked;
    }
    EXPECT_EQ(r["spec"], json::parse(raw_query(db_path_, "SELECT spec_json FROM job_specs WHERE job_id = '" + id + "'")));
  }
  EXPECT_EQ(checked, 8);
}

TEST_F(StreamingReport, EachResultIsOneLineAndTheAggregatesFollowTheResults) {
  const std::string text = streamed();
  std::istringstream lines(text);
  std::string line;
  int one_line_results = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("    {\"architecture\":", 0) == 0) {
      ++one_line_results;
      EXPECT_NO_THROW((void)json::parse(line.back() == ',' ? line.substr(0, line.size() - 1) : line)) << line;
    }
  }
  EXPECT_EQ(one_line_results, static_cast<int>(rows().size()));
  // A reader streaming the file meets the schema first and the matrix after every result.
  EXPECT_LT(text.find("\"schema\""), text.find("\"results\""));
  EXPECT_LT(text.find("\"results\""), text.find("\"matrix\""));
}

TEST_F(StreamingReport, TheMatrixOfProjectedRowsIsTheMatrixOfWholeRows) {
  MatrixBuilder builder;
  const ReportDocumentKeys keys{&matrix_spec_keys(), &matrix_metrics_keys()};
  std::size_t projected_members = 0;   // bytes of the metrics the rows carry
  ASSERT_TRUE(store_->for_each_report_row(kRun, keys, [&](const ReportRow& r, const ReportRowTexts&) {
    projected_members += r.metrics.is_object() ? r.metrics.dump().size() : 0;
    builder.add(r);
    return Status::Ok();
  }).ok());
  const Matrix projected = builder.finish();
  const Matrix whole = build_matrix(rows());
  ASSERT_EQ(projected.cells.size(), whole.cells.size());
  for (std::size_t i = 0; i < whole.cells.size(); ++i) {
    EXPECT_EQ(matrix_cell_json(projected.cells[i]), matrix_cell_json(whole.cells[i])) << i;
  }
  ASSERT_EQ(projected.overview.size(), whole.overview.size());
  for (std::size_t i = 0; i < whole.overview.size(); ++i) {
    EXPECT_EQ(overview_cell_json(projected.overview[i]), overview_cell_json(whole.overview[i])) << i;
  }
  // The projection did drop what the matrix does not read (kernel, histogram), so the test compares
  // something: a projection that kept everything would pass the equality above trivially.
  std::size_t whole_members = 0;
  for (const ReportRow& r : rows()) whole_members += r.metrics.is_object() ? r.metrics.dump().size() : 0;
  EXPECT_LT(projected_members, whole_members);
}

TEST_F(StreamingReport, ASnapshotDoesNotSeeWhatIsCommittedDuringIt) {
  auto reader = Store::open_read_only(db_path_);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  const auto count = [&] {
    int n = 0;
    EXPECT_TRUE((*reader)->for_each_report_row(kRun, {}, [&](const ReportRow&, const ReportRowTexts&) {
      ++n;
      return Status::Ok();
    }).ok());
    return n;
  };
  const int before = count();
  int inside_first = 0;
  int inside_after_commit = 0;
  ASSERT_TRUE((*reader)->in_read_snapshot([&] {
    inside_first = count();
    run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q4_0"), "pass", "", perf_metrics(1, 2, 3, 0, 1, 1));
    inside_after_commit = count();
    return Status::Ok();
  }).ok());
  EXPECT_EQ(inside_first, before);
  EXPECT_EQ(inside_after_commit, before);   // the committed job is not in this snapshot
  EXPECT_EQ(count(), before + 1);           // and is seen once the snapshot ends
}

}  // namespace
}  // namespace am::coord
