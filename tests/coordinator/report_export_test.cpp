// CSV and JUnit XML exports of a run stored in a real SQLite file: the CSV is read back with a
// strict RFC 4180 reader, the XML with tinyxml2 and a check of every character against XML 1.0.
#include <gtest/gtest.h>

#include <tinyxml2.h>

#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/utf8.h"
#include "coordinator/report_common.h"
#include "coordinator/report_csv.h"
#include "coordinator/report_junit.h"
#include "coordinator/report_text.h"
#include "store_fixture.h"

namespace am::coord {
namespace {

using testing::make_spec;
using testing::perf_metrics;

// ---- A strict RFC 4180 reader: records end in CRLF; a CR or LF outside quotes elsewhere, a
// quote inside an unquoted field or text after a closing quote is an error (nullopt).
using CsvTable = std::vector<std::vector<std::string>>;

std::optional<CsvTable> read_csv(std::string_view text) {
  CsvTable table;
  std::vector<std::string> record;
  std::string field;
  std::size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '"') {                       // a quoted field
      ++i;
      for (;;) {
        if (i >= text.size()) return std::nullopt;   // unterminated
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += text[i++];
      }
    } else {
      while (i < text.size() && text[i] != ',' && text[i] != '\r' && text[i] != '\n') {
        if (text[i] == '"') return std::nullopt;
        field += text[i++];
      }
    }
    if (i >= text.size()) return std::nullopt;     // the last record must end in CRLF too
    if (text[i] == ',') {
      record.push_back(std::move(field));
      field.clear();
      ++i;
      continue;
    }
    if (text.substr(i, 2) != "\r\n") return std::nullopt;
    record.push_back(std::move(field));
    field.clear();
    table.push_back(std::move(record));
    record.clear();
    i += 2;
  }
  return table;
}

// Column name -> value of one record.
std::map<std::string, std::string> by_name(const CsvTable& table, std::size_t record) {
  std::map<std::string, std::string> out;
  for (std::size_t c = 0; c < table[0].size() && c < table[record].size(); ++c) out[table[0][c]] = table[record][c];
  return out;
}

// ---- XML 1.0 well-formedness of the characters: valid UTF-8 and every code point in Char
// (#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]). tinyxml2 does not
// check this, so the test does.
bool xml_chars_ok(std::string_view text, std::string* why) {
  if (!is_valid_utf8(text)) {
    *why = "not valid UTF-8";
    return false;
  }
  for (std::size_t i = 0; i < text.size();) {
    const auto b = static_cast<unsigned char>(text[i]);
    uint32_t cp = 0;
    std::size_t n = 1;
    if (b < 0x80) {
      cp = b;
    } else if (b < 0xE0) {
      cp = b & 0x1F, n = 2;
    } else if (b < 0xF0) {
      cp = b & 0x0F, n = 3;
    } else {
      cp = b & 0x07, n = 4;
    }
    for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    const bool ok = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
                    (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
    if (!ok) {
      *why = "code point " + std::to_string(cp) + " at byte " + std::to_string(i);
      return false;
    }
    i += n;
  }
  return true;
}

int int_attr(const tinyxml2::XMLElement* e, const char* name) {
  int v = -1;
  EXPECT_EQ(e->QueryIntAttribute(name, &v), tinyxml2::XML_SUCCESS) << name;
  return v;
}

double double_attr(const tinyxml2::XMLElement* e, const char* name) {
  double v = -1;
  EXPECT_EQ(e->QueryDoubleAttribute(name, &v), tinyxml2::XML_SUCCESS) << name;
  return v;
}

std::string str_attr(const tinyxml2::XMLElement* e, const char* name) {
  const char* v = e->Attribute(name);
  return v ? v : "";
}

// Text a worker could send: separators, quotes, line breaks, spaces at both ends, invalid
// UTF-8, NUL, an ANSI colour escape, BEL, a CDATA terminator and markup.
const std::string kHostile = std::string(" lead, \"quoted\"\r\nline2\nline3 \xff\xfe bad") + '\0' +
                             "nul \x1b[31mred\x1b[0m \a ]]> <tag attr='x'> & done ";

// A run with a job in every terminal status, a pending (queued) one and one leased, on two
// hardware classes of cpu, one of opencl, and unplaced jobs of vulkan.
class Exports : public testing::StoreFixture {
 protected:
  static constexpr const char* kCpuA = "cpu-00112233aabbccdd";
  static constexpr const char* kCpuB = "cpu-ffeeddccbbaa9988";
  static constexpr const char* kOcl = "opencl-0123456789abcdef";

  void SetUp() override {
    StoreFixture::SetUp();
    ASSERT_TRUE(store_->upsert_worker({"worker-a", "lab-box-1", "accelmatrix 0.1.0 (abc123def456)", {}, {}, kT0, ""}).ok());
    ASSERT_TRUE(store_->upsert_worker({"worker-b", "lab-box-2", "accelmatrix 0.1.0 (abc123def456)", {}, {}, kT0, ""}).ok());
    int seq = 8;
    // Every status a worker reports, on the hardware class given.
    auto worker_job = [&](ResultStatus status, const char* backend, const char* hw, nlohmann::json metrics,
                          const std::string& reason, const std::string& log_tail) {
      const std::string id = add(make_spec("bert-tiny", "encoder-only", backend, "f16", 1, seq++));
      const std::string worker = hw == std::string(kCpuB) ? "worker-b" : "worker-a";
      lease(id, 1, worker, hw);
      ResultRecord r = result(id, 1, status, reason, std::move(metrics), worker);
      r.log_tail = log_tail;
      EXPECT_TRUE(store_one(r).became_terminal) << to_string(status);
      ids_[status] = id;
      return id;
    };
    nlohmann::json pass = perf_metrics(2.5, 3.0, 1234.5, 1.5e-12, 0.99999, 1.0);
    pass["latency_ms"]["min"] = 2.25;
    pass["latency_ms"]["max"] = 4.0;
    pass["latency_ms"]["mean"] = 2.75;
    pass["latency_ms"]["stddev"] = 0.125;
    pass["throughput"]["samples_per_s"] = 400.0;
    pass["accuracy"]["kl_divergence"] = 3.0e-7;
    pass["accuracy"]["max_abs_err"] = 0.0009765625;
    pass["generation"] = {{"time_to_first_token_ms_median", 1.75}, {"prefill_ms_median", 1.5},
                          {"decode_tokens_per_s", 812.25}};
    pass["memory"] = {{"weights_bytes", 4194304}, {"peak_rss_bytes", 100000000}};
    pass["process"] = {{"wall_s", 1.5}, {"peak_rss_bytes", 123456789}};
    worker_job(ResultStatus::kPass, "cpu", kCpuA, pass, "", "ok");
    worker_job(ResultStatus::kDegraded, "cpu", kCpuA, perf_metrics(5.0, 6.0, 100.0, 2e-3, 0.99, 0.9),
               "nmse 2e-03 above the pass tolerance 1e-03", "");
    worker_job(ResultStatus::kFail, "cpu", kCpuB, {{"accuracy", {{"nmse", 0.5}}}}, "nmse 0.5 above 1e-2",
               "fail log");
    worker_job(ResultStatus::kCrash, "opencl", kOcl, {{"process", {{"wall_s", 0.25}}}},
               "killed by signal 11 (SIGSEGV)", kHostile);
    worker_job(ResultStatus::kTimeout, "opencl", kOcl, {}, "exceeded 30 s", "timeout log");
    worker_job(ResultStatus::kOom, "opencl", kOcl, {}, "memory limit 512 MiB", "oom log");
    worker_job(ResultStatus::kError, "cpu", kCpuB, {}, kHostile, std::string(9000, 'y') + kHostile);
    worker_job(ResultStatus::kUnsupported, "opencl", kOcl, {}, "no kernel for q2_k", "");
    // Settled by the coordinator, never placed on hardware.
    auto settled = [&](ResultStatus status, const char* reason) {
      const std::string id = add(make_spec("tinyllama-1.1b", "decoder-only", "vulkan", "f16", 1, seq++));
      EXPECT_TRUE(store_->set_job_terminal(kRun, id, status, reason, kT0 + 50).ok());
      ids_[status] = id;
    };
    settled(ResultStatus::kSkipped, "no eligible hardware");
    settled(ResultStatus::kCancelled, "cancelled by operator");
    // Lost after a lease on the opencl class.
    const std::string lost = add(make_spec("bert-tiny", "encoder-only", "opencl", "q8_0", 1, seq++));
    lease(lost, 1, "worker-a", kOcl);
    ASSERT_TRUE(store_->set_job_terminal(kRun, lost, ResultStatus::kLost, "lease expired on 3 workers", kT0 + 60).ok());
    ids_[ResultStatus::kLost] = lost;
    queued_id_ = add(make_spec("tinyllama-1.1b", "decoder-only", "vulkan", "q4_0", 1, seq++));
    leased_id_ = add(make_spec("bert-tiny", "encoder-only", "cpu", "q4_0", 1, seq++));
    lease(leased_id_, 1, "worker-a", kCpuA);
  }

  std::string csv() { return render_csv(run_record(), rows()); }
  std::string junit() { return render_junit(run_record(), rows()); }

  std::map<ResultStatus, std::string> ids_;
  std::string queued_id_, leased_id_;
};

// ---------------------------------------------------------------------------------- CSV

TEST_F(Exports, CsvHasTheSchemaHeaderAndOneRecordPerJobInJobOrder) {
  const std::string text = csv();
  auto table = read_csv(text);
  ASSERT_TRUE(table.has_value()) << text;
  const auto columns = csv_columns();
  ASSERT_FALSE(table->empty());
  ASSERT_EQ(table->front().size(), columns.size());
  for (std::size_t c = 0; c < columns.size(); ++c) EXPECT_EQ(table->front()[c], columns[c]);
  const auto stored = rows();
  ASSERT_EQ(table->size(), stored.size() + 1);
  for (std::size_t i = 0; i < stored.size(); ++i) {
    ASSERT_EQ((*table)[i + 1].size(), columns.size()) << "record " << i;
    EXPECT_EQ(by_name(*table, i + 1)["job_id"], stored[i].job_id);
  }
}

TEST_F(Exports, CsvColumnsOfSchemaOneAreStable) {
  // Appending is allowed; this list is the contract of schema 1 (docs/REPORTS.md).
  const std::vector<std::string_view> schema1 = {
      "run_id", "job_id", "model", "architecture", "backend", "hardware_class", "device", "precision",
      "batch", "seq_len", "mode", "seed", "scaled", "state", "status", "reason", "attempt", "attempts",
      "worker", "hostname", "build", "latency_median_ms", "latency_p90_ms", "latency_min_ms",
      "latency_max_ms", "latency_mean_ms", "latency_stddev_ms", "latency_count", "samples_per_s",
      "tokens_per_s", "ttft_ms", "prefill_ms", "decode_tokens_per_s", "nmse", "cosine",
      "top1_agreement", "kl_divergence", "max_abs_err", "peak_rss_bytes", "weights_bytes", "wall_s",
      "started_at", "finished_at", "started_at_ms", "finished_at_ms"};
  const auto columns = csv_columns();
  ASSERT_GE(columns.size(), schema1.size());
  for (std::size_t c = 0; c < schema1.size(); ++c) EXPECT_EQ(columns[c], schema1[c]) << c;
  // Schemas 2 and 3 appended these, in this order.
  const std::vector<std::string_view> appended = {
      "host_load_start", "host_load_end", "host_cpus", "host_other_load", "host_steal_fraction", "host_busy",
      "cell_rating", "cell_speedup", "cell_speedup_ci_low", "cell_speedup_ci_high", "target", "exclusive"};
  ASSERT_EQ(columns.size(), schema1.size() + appended.size());
  for (std::size_t c = 0; c < appended.size(); ++c) EXPECT_EQ(columns[schema1.size() + c], appended[c]) << c;
  EXPECT_EQ(kReportCsvSchema, 3);
}

TEST_F(Exports, CsvCarriesEveryMeasurementInLocaleIndependentNumbers) {
  auto table = read_csv(csv());
  ASSERT_TRUE(table.has_value());
  auto r = by_name(*table, 1);
  EXPECT_EQ(r["run_id"], kRun);
  EXPECT_EQ(r["job_id"], ids_[ResultStatus::kPass]);
  EXPECT_EQ(r["model"], "bert-tiny");
  EXPECT_EQ(r["architecture"], "encoder-only");
  EXPECT_EQ(r["backend"], "cpu");
  EXPECT_EQ(r["hardware_class"], kCpuA);
  EXPECT_EQ(r["device"], "cpu:0");
  EXPECT_EQ(r["precision"], "f16");
  EXPECT_EQ(r["batch"], "1");
  EXPECT_EQ(r["seq_len"], "8");
  EXPECT_EQ(r["seed"], "1234");
  EXPECT_EQ(r["scaled"], "false");
  EXPECT_EQ(r["state"], "done");
  EXPECT_EQ(r["status"], "pass");
  EXPECT_EQ(r["reason"], "");
  EXPECT_EQ(r["attempt"], "1");
  EXPECT_EQ(r["attempts"], "1");
  EXPECT_EQ(r["worker"], "worker-a");
  EXPECT_EQ(r["hostname"], "lab-box-1");
  EXPECT_EQ(r["build"], "accelmatrix 0.1.0 (abc123def456)");
  EXPECT_EQ(r["latency_median_ms"], "2.5");
  EXPECT_EQ(r["latency_p90_ms"], "3");
  EXPECT_EQ(r["latency_min_ms"], "2.25");
  EXPECT_EQ(r["latency_max_ms"], "4");
  EXPECT_EQ(r["latency_mean_ms"], "2.75");
  EXPECT_EQ(r["latency_stddev_ms"], "0.125");
  EXPECT_EQ(r["latency_count"], "20");
  EXPECT_EQ(r["samples_per_s"], "400");
  EXPECT_EQ(r["tokens_per_s"], "1234.5");
  EXPECT_EQ(r["ttft_ms"], "1.75");
  EXPECT_EQ(r["prefill_ms"], "1.5");
  EXPECT_EQ(r["decode_tokens_per_s"], "812.25");
  EXPECT_EQ(r["nmse"], "1.5e-12");
  EXPECT_EQ(r["cosine"], "0.99999");
  EXPECT_EQ(r["top1_agreement"], "1");
  EXPECT_EQ(r["kl_divergence"], "3e-07");
  EXPECT_EQ(r["max_abs_err"], "0.0009765625");
  EXPECT_EQ(r["peak_rss_bytes"], "100000000");   // the job's own reading comes first (as in every format)
  EXPECT_EQ(r["weights_bytes"], "4194304");
  EXPECT_EQ(r["wall_s"], "1.5");
  EXPECT_EQ(r["started_at"], format_utc(kT0 + 2000));
  EXPECT_EQ(r["finished_at"], format_utc(kT0 + 2500));
  EXPECT_EQ(r["started_at_ms"], std::to_string(kT0 + 2000));
  EXPECT_EQ(r["finished_at_ms"], std::to_string(kT0 + 2500));
  // Every number reads back exactly with the C++ (locale-free) parser.
  double median = 0;
  const std::string& text = r["latency_median_ms"];
  ASSERT_EQ(std::from_chars(text.data(), text.data() + text.size(), median).ec, std::errc());
  EXPECT_EQ(median, 2.5);
}

TEST_F(Exports, CsvLeavesMissingValuesEmpty) {
  auto table = read_csv(csv());
  ASSERT_TRUE(table.has_value());
  const auto stored = rows();
  for (std::size_t i = 0; i < stored.size(); ++i) {
    if (stored[i].job_id != queued_id_) continue;
    auto r = by_name(*table, i + 1);
    EXPECT_EQ(r["state"], "queued");
    for (const char* empty : {"status", "reason", "attempt", "worker", "hardware_class", "device",
                              "latency_median_ms", "nmse", "peak_rss_bytes", "started_at", "started_at_ms"}) {
      EXPECT_EQ(r[empty], "") << empty;
    }
    EXPECT_EQ(r["attempts"], "0");
    return;
  }
  FAIL() << "queued job missing";
}

TEST_F(Exports, CsvRoundTripsHostileTextFromWorkers) {
  const std::string text = csv();
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(text.find('\0'), std::string::npos);
  auto table = read_csv(text);
  ASSERT_TRUE(table.has_value()) << text;
  const auto stored = rows();
  bool seen = false;
  for (std::size_t i = 0; i < stored.size(); ++i) {
    if (stored[i].job_id != ids_[ResultStatus::kError]) continue;
    seen = true;
    auto r = by_name(*table, i + 1);
    EXPECT_EQ(r["status"], "error");
    const std::string expected = report_text(kHostile);
    EXPECT_EQ(r["reason"], expected);
    // What survives: separators, quotes, CR/LF, edge spaces, markup; what is replaced: the
    // invalid bytes and the controls XML cannot hold.
    EXPECT_NE(r["reason"].find(" lead, \"quoted\"\r\nline2\nline3 "), std::string::npos);
    EXPECT_NE(r["reason"].find("\xEF\xBF\xBD\xEF\xBF\xBD bad\xEF\xBF\xBDnul \xEF\xBF\xBD[31mred"), std::string::npos);
    EXPECT_EQ(r["reason"].back(), ' ');
  }
  EXPECT_TRUE(seen);
}

TEST_F(Exports, CsvTextThatASpreadsheetWouldEvaluateIsWrittenAsText) {
  const std::string formula_model = "=cmd|' /C calc'!A0";
  run_job(make_spec(formula_model, "encoder-only", "cpu", "f32"), "fail", "+SUM(1)|x", nlohmann::json::object());
  auto table = read_csv(csv());
  ASSERT_TRUE(table.has_value());
  bool seen = false;
  for (std::size_t i = 1; i < table->size(); ++i) {
    auto r = by_name(*table, i);
    if (r["model"] != "'" + formula_model) continue;
    seen = true;
    EXPECT_EQ(r["reason"], "'+SUM(1)|x");
    EXPECT_EQ(r["latency_median_ms"], "");   // numbers are numbers, never prefixed
  }
  EXPECT_TRUE(seen) << csv();
}

TEST(CsvField, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("plain text"), "plain text");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csv_field(" lead"), "\" lead\"");
  EXPECT_EQ(csv_field("trail\t"), "\"trail\t\"");
}

TEST(ReportText, ReplacesWhatXmlForbidsAndKeepsTheRest) {
  EXPECT_EQ(report_text("tab\tlf\ncr\r"), "tab\tlf\ncr\r");
  EXPECT_EQ(report_text(std::string("a\0b", 3)), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(report_text("\x1b[0m"), "\xEF\xBF\xBD[0m");
  EXPECT_EQ(report_text("\xff"), "\xEF\xBF\xBD");
  EXPECT_EQ(report_text("\xEF\xBF\xBE|\xEF\xBF\xBF"), "\xEF\xBF\xBD|\xEF\xBF\xBD");
  EXPECT_EQ(report_text("\xC3\xA9 \x7f"), "\xC3\xA9 \x7f");
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(1e300), "1e+300");
  EXPECT_EQ(format_number(std::numeric_limits<double>::quiet_NaN()), "");
  EXPECT_EQ(format_fixed(0.0025, 6), "0.002500");
}

// -------------------------------------------------------------------------------- JUnit

struct ParsedCase {
  std::string suite;
  std::string classname, name;
  double time = 0;
  std::string outcome;            // "", "failure", "error", "skipped"
  std::string type, message, text;
  std::string system_out;
  std::map<std::string, std::string> properties;
};

// Parses the document, checks the counts of every suite and of the whole, and returns the
// testcases by job id.
std::map<std::string, ParsedCase> parse_junit(const std::string& xml) {
  std::map<std::string, ParsedCase> out;
  std::string why;
  EXPECT_TRUE(xml_chars_ok(xml, &why)) << why;
  EXPECT_EQ(xml.find("]]>"), std::string::npos);
  tinyxml2::XMLDocument doc;
  EXPECT_EQ(doc.Parse(xml.c_str(), xml.size()), tinyxml2::XML_SUCCESS) << doc.ErrorStr();
  const tinyxml2::XMLElement* root = doc.RootElement();
  if (root == nullptr) {
    ADD_FAILURE() << "no root element";
    return out;
  }
  EXPECT_STREQ(root->Name(), "testsuites");
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  double time = 0;
  for (const auto* suite = root->FirstChildElement(); suite; suite = suite->NextSiblingElement()) {
    EXPECT_STREQ(suite->Name(), "testsuite");
    int s_tests = 0, s_failures = 0, s_errors = 0, s_skipped = 0;
    double s_time = 0;
    for (const auto* tc = suite->FirstChildElement("testcase"); tc; tc = tc->NextSiblingElement("testcase")) {
      ParsedCase c;
      c.suite = str_attr(suite, "name");
      c.classname = str_attr(tc, "classname");
      c.name = str_attr(tc, "name");
      c.time = double_attr(tc, "time");
      ++s_tests;
      s_time += c.time;
      int outcomes = 0;
      for (const char* kind : {"failure", "error", "skipped"}) {
        if (const auto* e = tc->FirstChildElement(kind)) {
          ++outcomes;
          c.outcome = kind;
          c.type = str_attr(e, "type");
          c.message = str_attr(e, "message");
          c.text = e->GetText() ? e->GetText() : "";
        }
      }
      EXPECT_LE(outcomes, 1) << c.name;
      if (c.outcome == "failure") ++s_failures;
      if (c.outcome == "error") ++s_errors;
      if (c.outcome == "skipped") ++s_skipped;
      if (const auto* so = tc->FirstChildElement("system-out")) c.system_out = so->GetText() ? so->GetText() : "";
      if (const auto* props = tc->FirstChildElement("properties")) {
        for (const auto* p = props->FirstChildElement("property"); p; p = p->NextSiblingElement("property")) {
          c.properties[str_attr(p, "name")] = str_attr(p, "value");
        }
      }
      out[c.properties["job_id"]] = c;
    }
    EXPECT_EQ(int_attr(suite, "tests"), s_tests) << str_attr(suite, "name");
    EXPECT_EQ(int_attr(suite, "failures"), s_failures) << str_attr(suite, "name");
    EXPECT_EQ(int_attr(suite, "errors"), s_errors) << str_attr(suite, "name");
    EXPECT_EQ(int_attr(suite, "skipped"), s_skipped) << str_attr(suite, "name");
    EXPECT_NEAR(double_attr(suite, "time"), s_time, 1e-5) << str_attr(suite, "name");
    tests += s_tests;
    failures += s_failures;
    errors += s_errors;
    skipped += s_skipped;
    time += double_attr(suite, "time");
  }
  EXPECT_EQ(int_attr(root, "tests"), tests);
  EXPECT_EQ(int_attr(root, "failures"), failures);
  EXPECT_EQ(int_attr(root, "errors"), errors);
  EXPECT_EQ(int_attr(root, "skipped"), skipped);
  EXPECT_NEAR(double_attr(root, "time"), time, 1e-5);
  return out;
}

TEST_F(Exports, JunitHasOneSuitePerBackendAndHardwareClassWithCountsThatAddUp) {
  const std::string xml = junit();
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.Parse(xml.c_str(), xml.size()), tinyxml2::XML_SUCCESS) << doc.ErrorStr();
  std::vector<std::string> names;
  for (const auto* s = doc.RootElement()->FirstChildElement("testsuite"); s; s = s->NextSiblingElement("testsuite")) {
    names.push_back(str_attr(s, "name"));
  }
  EXPECT_EQ(names, (std::vector<std::string>{std::string("cpu · ") + kCpuA, std::string("cpu · ") + kCpuB,
                                             std::string("opencl · ") + kOcl, "vulkan · unplaced"}));
  const auto cases = parse_junit(xml);
  EXPECT_EQ(cases.size(), rows().size());
  EXPECT_EQ(str_attr(doc.RootElement(), "name"), std::string("accelmatrix ") + kRun);
  EXPECT_EQ(int_attr(doc.RootElement(), "tests"), 13);   // 8 worker results, 3 settled, 2 pending
  EXPECT_EQ(int_attr(doc.RootElement(), "failures"), 5);
  EXPECT_EQ(int_attr(doc.RootElement(), "errors"), 1);
  EXPECT_EQ(int_attr(doc.RootElement(), "skipped"), 5);   // unsupported, skipped, cancelled, queued, leased
}

TEST_F(Exports, JunitMapsEveryStatusOfARun) {
  const auto cases = parse_junit(junit());
  const std::map<ResultStatus, std::string> expected = {
      {ResultStatus::kPass, ""},          {ResultStatus::kDegraded, ""},
      {ResultStatus::kFail, "failure"},   {ResultStatus::kCrash, "failure"},
      {ResultStatus::kTimeout, "failure"}, {ResultStatus::kOom, "failure"},
      {ResultStatus::kError, "failure"},  {ResultStatus::kUnsupported, "skipped"},
      {ResultStatus::kSkipped, "skipped"}, {ResultStatus::kLost, "error"},
      {ResultStatus::kCancelled, "skipped"}};
  for (const auto& [status, outcome] : expected) {
    const auto it = cases.find(ids_.at(status));
    ASSERT_NE(it, cases.end()) << to_string(status);
    EXPECT_EQ(it->second.outcome, outcome) << to_string(status);
    EXPECT_EQ(it->second.properties.at("status"), to_string(status));
    if (outcome == "failure" || outcome == "error") {
      EXPECT_EQ(it->second.type, to_string(status));
    }
  }
  const ParsedCase& pass = cases.at(ids_[ResultStatus::kPass]);
  EXPECT_EQ(pass.classname, "bert-tiny");
  EXPECT_EQ(pass.name, "f16 b1 s8 [" + ids_[ResultStatus::kPass] + "]");
  EXPECT_EQ(pass.suite, std::string("cpu · ") + kCpuA);
  EXPECT_DOUBLE_EQ(pass.time, 0.0025);   // the median latency, in seconds
  EXPECT_EQ(pass.properties.at("median_latency_ms"), "2.5");
  EXPECT_EQ(pass.properties.at("nmse"), "1.5e-12");
  EXPECT_EQ(pass.properties.at("hardware_class"), kCpuA);
  EXPECT_EQ(pass.system_out, "");
  const ParsedCase& degraded = cases.at(ids_[ResultStatus::kDegraded]);
  EXPECT_NE(degraded.system_out.find("degraded"), std::string::npos);
  EXPECT_NE(degraded.system_out.find("nmse 2e-03 above the pass tolerance 1e-03"), std::string::npos);
  const ParsedCase& crash = cases.at(ids_[ResultStatus::kCrash]);
  EXPECT_EQ(crash.message, "killed by signal 11 (SIGSEGV)");
  EXPECT_DOUBLE_EQ(crash.time, 0.25);    // no latency: the process's wall time
  EXPECT_EQ(cases.at(ids_[ResultStatus::kTimeout]).text, "timeout log");
  EXPECT_EQ(cases.at(ids_[ResultStatus::kFail]).properties.at("nmse"), "0.5");
  EXPECT_EQ(cases.at(ids_[ResultStatus::kUnsupported]).message, "unsupported: no kernel for q2_k");
  EXPECT_EQ(cases.at(ids_[ResultStatus::kSkipped]).message, "skipped: no eligible hardware");
  EXPECT_EQ(cases.at(ids_[ResultStatus::kSkipped]).suite, "vulkan · unplaced");
  EXPECT_EQ(cases.at(ids_[ResultStatus::kCancelled]).message, "cancelled: cancelled by operator");
  EXPECT_EQ(cases.at(ids_[ResultStatus::kLost]).message, "lease expired on 3 workers");
  EXPECT_EQ(cases.at(ids_[ResultStatus::kLost]).suite, std::string("opencl · ") + kOcl);
  EXPECT_EQ(cases.at(queued_id_).outcome, "skipped");
  EXPECT_EQ(cases.at(queued_id_).message, "not run yet (queued)");
  EXPECT_EQ(cases.at(leased_id_).message, "not run yet (leased)");
  EXPECT_EQ(cases.at(leased_id_).properties.at("status"), "leased");
}

TEST_F(Exports, JunitStaysWellFormedWithHostileReasonsAndLogTails) {
  const auto cases = parse_junit(junit());
  const ParsedCase& crash = cases.at(ids_[ResultStatus::kCrash]);
  // The log tail comes back as the repaired text (tinyxml2 reads CR references as CR).
  EXPECT_EQ(crash.outcome, "failure");
  EXPECT_EQ(crash.text, report_text(kHostile));
  const ParsedCase& error = cases.at(ids_[ResultStatus::kError]);
  EXPECT_EQ(error.message, report_text(kHostile));   // quotes, CR/LF and <> survive in an attribute
  EXPECT_LE(error.text.size(), kJunitLogTailBytes + 3 + 3 * 8);   // cut, "…", replacements
  EXPECT_EQ(error.text.rfind("\xE2\x80\xA6", 0), 0u);
  EXPECT_NE(error.text.find("]]> <tag attr='x'> & done "), std::string::npos);
}

// Every enumerator (interrupted included, which a run never ends in) on rows built by hand.
TEST(Junit, EveryResultStatusHasAnOutcome) {
  RunRecord run;
  run.run_id = "r";
  std::vector<ReportRow> rows;
  for (ResultStatus s : all_result_statuses()) {
    ReportRow r;
    r.run_id = "r";
    r.job_id = std::string(to_string(s));
    r.model = "m";
    r.backend = "cpu";
    r.hardware_class = "hw";
    r.state = JobState::kDone;
    r.status = s;
    r.reason = "because";
    r.spec = {{"batch", 2}, {"seq_len", 16}};
    rows.push_back(r);
  }
  const auto cases = parse_junit(render_junit(run, rows));
  ASSERT_EQ(cases.size(), all_result_statuses().size());
  for (ResultStatus s : all_result_statuses()) {
    const ParsedCase& c = cases.at(std::string(to_string(s)));
    EXPECT_EQ(c.name, "f32 b2 s16 [" + std::string(to_string(s)) + "]");
    if (is_working(s)) {
      EXPECT_EQ(c.outcome, "") << s;
    } else if (is_test_failure(s)) {
      EXPECT_EQ(c.outcome, "failure") << s;
    } else if (is_infrastructure(s)) {
      EXPECT_EQ(c.outcome, "error") << s;
    } else {
      EXPECT_EQ(c.outcome, "skipped") << s;
    }
  }
}

TEST(Junit, AnEmptyRunIsAnEmptyWellFormedDocument) {
  RunRecord run;
  run.run_id = "empty & <odd> \"id\"";
  const std::string xml = render_junit(run, {});
  tinyxml2::XMLDocument doc;
  ASSERT_EQ(doc.Parse(xml.c_str(), xml.size()), tinyxml2::XML_SUCCESS) << doc.ErrorStr();
  EXPECT_EQ(str_attr(doc.RootElement(), "name"), "accelmatrix empty & <odd> \"id\"");
  EXPECT_EQ(int_attr(doc.RootElement(), "tests"), 0);
  EXPECT_EQ(doc.RootElement()->FirstChildElement(), nullptr);
}

}  // namespace
}  // namespace am::coord
