// Diagnostic models named in a plan run through the whole system: a real coordinator and worker
// over loopback, a real job child process, the real store. selftest:nan and selftest:inf produce
// outputs holding NaN/Inf; they must be stored as "fail" with a reason naming NaN/Inf, and every
// report format (md, json, csv, junit, html) must show them as failed with that reason.
#include <gtest/gtest.h>
#include <zlib.h>

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/integration/harness.h"

namespace am::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kNonFinite = "NaN/Inf values in the output";

// `accelmatrix report --format FORMAT` of the database's newest run.
std::string report(const std::filesystem::path& db, const std::string& format) {
  int code = -1;
  std::string out = run_capture({coordinator_binary().string(), "report", "--db", db.string(), "--format", format,
                                 "--log-level", "off"}, &code);
  EXPECT_EQ(code, 0) << format << ": " << out;
  return out;
}

// The data the html dashboard embeds (gzip, then base64), read back the way its page does.
nlohmann::json dashboard_data(const std::string& page) {
  const std::string open = "<script type=\"application/gzip+base64\" id=\"am-data\">";
  const std::size_t at = page.find(open);
  if (at == std::string::npos) return nullptr;
  const std::size_t start = at + open.size();
  const std::string text = page.substr(start, page.find("</script>", start) - start);
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string packed;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const std::size_t v = alphabet.find(c);
    if (v == std::string::npos) break;   // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      packed += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return nullptr;
  std::string out(packed.size() * 20 + 4096, '\0');
  z.next_in = reinterpret_cast<Bytef*>(packed.data());
  z.avail_in = static_cast<uInt>(packed.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  out.resize(z.total_out);
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return nullptr;
  return nlohmann::json::parse(out, nullptr, false);
}

// Counts the lines of `text` holding both `a` and `b`.
int lines_with(const std::string& text, const std::string& a, const std::string& b) {
  int n = 0;
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t end = text.find('\n', from);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(from, end - from);
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) ++n;
    from = end + 1;
  }
  return n;
}

TEST(SelftestRun, NanAndInfOutputsAreStoredAsFailNamingNanInf) {
  ScratchDir dir("selftest-nan");
  const auto db = dir / "d.db";
  const auto ep_file = dir / "endpoint";
  const auto plan = write_file(dir / "diag.toml",
                               "[plan]\nname = \"diag\"\nmode = \"accuracy\"\n\n"
                               "[defaults]\nbackends = [\"cpu\"]\nprecisions = [\"f32\", \"q8_0\"]\n"
                               "batch = [1]\nseq_len = [8]\ntimeout_s = 30\n\n"
                               "[[models]]\nname = \"selftest:nan\"\n\n"
                               "[[models]]\nname = \"selftest:inf\"\n\n"
                               "[[models]]\nname = \"selftest:pass\"\nprecisions = [\"f32\"]\n");
  Process serve({coordinator_binary().string(), "--log-level", "info", "serve", "--plan", plan.string(),
                 "--db", db.string(), "--bind", "tcp://127.0.0.1:*", "--catalog",
                 (source_dir() / "jobs/models").string(), "--exit-when-done", "--endpoint-file",
                 ep_file.string(), "--expect-workers", "1", "--heartbeat-ms", "100", "--liveness", "5"},
                dir / "serve.log");
  std::string ep;
  ASSERT_TRUE(wait_until([&] {
    ep = read_file(ep_file);
    while (!ep.empty() && (ep.back() == '\n' || ep.back() == '\r')) ep.pop_back();
    return !ep.empty();
  }, 20s)) << serve.log();
  Process worker({worker_binary().string(), "--coordinator", ep, "--id", "diag-w", "--state-dir",
                  (dir / "state").string(), "--heartbeat-ms", "100", "--liveness", "5", "--log-level", "info"},
                 dir / "worker.log");

  const int code = serve.wait(120s);
  ASSERT_GE(code, 0) << "coordinator did not finish\n" << serve.log();
  // 1 when some job failed (DECISIONS.md exit codes); the older rule says 0.
  EXPECT_TRUE(code == 0 || code == 1) << code << "\n" << serve.log();

  const auto rows = sql_rows(db, "SELECT model, precision, status, reason FROM jobs ORDER BY model, precision");
  ASSERT_EQ(rows.size(), 5u) << serve.log();
  std::map<std::string, int> failed_nonfinite;
  for (const auto& r : rows) {
    const std::string& model = r[0];
    if (model == "selftest:pass") {
      EXPECT_EQ(r[2], "pass") << r[3];
      continue;
    }
    EXPECT_EQ(r[2], "fail") << model << " " << r[1] << ": " << r[3];
    EXPECT_NE(r[3].find("NaN/Inf values in the output"), std::string::npos) << model << ": " << r[3];
    ++failed_nonfinite[model];
  }
  EXPECT_EQ(failed_nonfinite, (std::map<std::string, int>{{"selftest:inf", 2}, {"selftest:nan", 2}}));
  // The attempt that settled each job carries the same verdict.
  EXPECT_EQ(sql_int(db, "SELECT COUNT(*) FROM attempts WHERE status = 'fail' AND reason LIKE '%NaN/Inf%'"), 4);

  // Every report format shows the four as failed, with the reason.
  const std::string md = report(db, "md");
  EXPECT_NE(md.find("| ❌ fail | 4 |"), std::string::npos) << md;
  EXPECT_EQ(lines_with(md, "| ❌ fail: ", kNonFinite), 4) << md;   // the job table's rows

  const auto doc = nlohmann::json::parse(report(db, "json"), nullptr, false);
  ASSERT_TRUE(doc.is_object() && doc.contains("results"));
  int json_failed = 0;
  for (const auto& r : doc["results"]) {
    if (r["model"] == "selftest:pass") continue;
    EXPECT_EQ(r["status"], "fail") << r.dump();
    EXPECT_NE(r.value("reason", "").find(kNonFinite), std::string::npos) << r.dump();
    ++json_failed;
  }
  EXPECT_EQ(json_failed, 4);

  const std::string csv = report(db, "csv");
  EXPECT_EQ(lines_with(csv, ",fail,", kNonFinite), 4) << csv;

  const std::string junit = report(db, "junit");
  EXPECT_EQ(lines_with(junit, "<failure type=\"fail\" message=\"", kNonFinite), 4) << junit;

  const nlohmann::json page = dashboard_data(report(db, "html"));
  ASSERT_TRUE(page.is_object()) << "the html report embeds no readable data";
  EXPECT_EQ(page["summary"]["by_status"]["fail"], 4) << page["summary"].dump();
  const auto& strings = page["strings"];
  const auto& status = page["jobs"]["status"];
  const auto& reasons = page["jobs"]["reason"];
  ASSERT_EQ(status.size(), 5u);
  int html_failed = 0;
  for (std::size_t i = 0; i < status.size(); ++i) {
    if (strings[status[i].get<std::size_t>()] != "fail") continue;
    ++html_failed;
    ASSERT_TRUE(reasons[i].is_number()) << reasons[i].dump();
    EXPECT_NE(strings[reasons[i].get<std::size_t>()].get<std::string>().find(kNonFinite), std::string::npos);
  }
  EXPECT_EQ(html_failed, 4);
}

}  // namespace
}  // namespace am::testing
