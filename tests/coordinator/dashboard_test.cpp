// The dashboard's data and page: every figure equals the JSON report's, distributions are
// computed from the stored samples, and hostile text cannot escape into the page. The 100k-job
// size budget is bench/bench_dashboard.cpp's.
#include <zlib.h>

#include <cmath>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "coordinator/chunked_text.h"
#include "coordinator/dashboard_data.h"
#include "coordinator/hardware_label.h"
#include "coordinator/report_html.h"
#include "coordinator/report_json.h"
#include "jobs/command_spec.h"
#include "jobs/precision.h"
#include "tests/coordinator/store_fixture.h"

namespace am::coord::testing {
namespace {

using nlohmann::json;

constexpr int64_t kNow = 1'700'000'100'000;

std::string gunzip(const std::string& packed) {
  z_stream z{};
  EXPECT_EQ(inflateInit2(&z, 15 + 16), Z_OK);
  std::string out(packed.size() * 20 + 1024, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(packed.data()));
  z.avail_in = static_cast<uInt>(packed.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(inflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

std::string base64_decode(const std::string& text) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const std::size_t v = alphabet.find(c);
    EXPECT_NE(v, std::string::npos) << "not base64: " << c;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

// The data a page carries, read back the way the browser does.
json embedded_data(const std::string& page) {
  const std::string open = "<script type=\"application/gzip+base64\" id=\"am-data\">";
  const std::size_t at = page.find(open);
  EXPECT_NE(at, std::string::npos);
  const std::size_t start = at + open.size();
  const std::size_t end = page.find("</script>", start);
  return json::parse(gunzip(base64_decode(page.substr(start, end - start))));
}

TEST(Base64, MatchesTheRfc4648TestVectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
}

TEST(Gzip, RoundTripsRandomBytesThroughZlibsInflate) {
  std::mt19937 rng(20261124);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000}, std::size_t{300000}}) {
    std::string bytes(n, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() % 7);  // compressible, not constant
    auto packed = gzip_bytes(bytes);
    ASSERT_TRUE(packed.ok());
    ASSERT_GE(packed->size(), 18u);
    EXPECT_EQ(static_cast<unsigned char>((*packed)[0]), 0x1f);  // gzip magic
    EXPECT_EQ(static_cast<unsigned char>((*packed)[1]), 0x8b);
    EXPECT_EQ(gunzip(*packed), bytes) << n;
    EXPECT_EQ(base64_decode(base64_encode(*packed)), *packed);
  }
}

// Pieces appended one after another (empty ones, one byte, more than a deflate output buffer)
// inflate to their concatenation, as gzip_bytes of the whole does.
TEST(Gzip, AWriterOfPiecesInflatesToTheirConcatenation) {
  std::mt19937 rng(20261128);
  GzipWriter gzip;
  std::string whole;
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{70000}, std::size_t{0}, std::size_t{3},
                        std::size_t{2500000}, std::size_t{17}}) {
    std::string piece(n, '\0');
    for (char& c : piece) c = static_cast<char>(rng() % 251);   // barely compressible
    ASSERT_TRUE(gzip.append(piece).ok());
    whole += piece;
  }
  auto packed = gzip.finish();
  ASSERT_TRUE(packed.ok());
  EXPECT_EQ(gunzip(*packed), whole);
  // Empty again: a second document from the same writer.
  ASSERT_TRUE(gzip.append("second").ok());
  auto again = gzip.finish();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(gunzip(*again), "second");
}

TEST(HardwareLabel, NamesCpuSoftwareAndGpuDevicesFromTheirRecords) {
  const json cpu = {{"model", "AMD EPYC 9R45"},
                    {"isa", {{"avx2", true}, {"avx512f", true}, {"avx512_vnni", true}, {"avx512_bf16", true}}}};
  const json topology = {{"cores", 2}};
  EXPECT_EQ(hardware_class_label({{"backend", "cpu"}, {"name", "AMD EPYC 9R45"}}, cpu, topology),
            "AMD EPYC 9R45 · 2 cores · AVX-512 VNNI/BF16");
  EXPECT_EQ(hardware_class_label({{"backend", "opencl"}, {"software", true},
                                  {"platform", "Portable Computing Language"}},
                                 cpu, topology),
            "PoCL on AMD EPYC 9R45 · 2 cores · AVX-512 VNNI/BF16");
  EXPECT_EQ(hardware_class_label({{"backend", "vulkan"}, {"software", true},
                                  {"driver", "llvmpipe Mesa 22.3.6 (LLVM 15.0.6)"}},
                                 {{"model", "X"}, {"isa", {{"avx2", true}}}}, json()),
            "lavapipe on X · AVX2");
  EXPECT_EQ(hardware_class_label({{"backend", "vulkan"}, {"software", false}, {"name", "NVIDIA RTX 4090"},
                                  {"driver", "550.54"}},
                                 cpu, topology),
            "NVIDIA RTX 4090 · Vulkan · driver 550.54");
  // Whatever a peer sends: wrong types are left out, never an error.
  EXPECT_EQ(hardware_class_label({{"backend", "cpu"}, {"name", 7}}, json::array(), json(3)), "CPU");
}

// Pieces appended across chunk boundaries come back whole and in order; no chunk is started
// before the previous one holds kChunkBytes.
TEST(ChunkedText, KeepsEveryPieceInOrderAcrossChunks) {
  ChunkedText text;
  std::string whole;
  std::mt19937 rng(20261128);
  while (whole.size() < 3 * ChunkedText::kChunkBytes + 12345) {
    std::string piece(1 + rng() % 5000, '\0');
    for (char& c : piece) c = static_cast<char>('a' + rng() % 26);
    text.tail() += piece;
    whole += piece;
  }
  std::vector<std::size_t> sizes;
  std::string back;
  ASSERT_TRUE(text.write_to([&](std::string_view chunk) {
                    sizes.push_back(chunk.size());
                    back.append(chunk);
                    return Status::Ok();
                  }).ok());
  EXPECT_EQ(back, whole);
  ASSERT_EQ(sizes.size(), 4u);
  for (std::size_t i = 0; i + 1 < sizes.size(); ++i) {
    EXPECT_GE(sizes[i], ChunkedText::kChunkBytes) << i;
    EXPECT_LT(sizes[i], ChunkedText::kChunkBytes + 5000) << i;
  }
  // A sink's error stops the writing.
  int calls = 0;
  EXPECT_FALSE(text.write_to([&](std::string_view) {
                     ++calls;
                     return internal_error("disk full");
                   }).ok());
  EXPECT_EQ(calls, 1);
}

// A job table bigger than the builder's text chunks: 60,000 jobs make the id and seed columns
// span two chunks; each value comes back once, in job order.
TEST(DashboardBuilder, AJobTableLargerThanItsChunksKeepsEveryValueInOrder) {
  RunRecord run;
  run.run_id = "big";
  run.created_at_ms = 1'700'000'000'000;
  std::vector<WorkerRecord> workers;
  DashboardBuilder builder(run, workers);
  constexpr int kJobs = 60000;
  for (int i = 0; i < kJobs; ++i) {
    ReportRow r;
    r.run_id = "big";
    r.job_id = fmt::format("{:016x}", 0x1000000000000000ull + static_cast<uint64_t>(i) * 7919);
    r.model = "bert-tiny";
    r.architecture = "encoder-only";
    r.backend = "cpu";
    r.attempts = 1 + i % 3;   // queued: no result, nothing for the matrix to time
    r.spec = {{"batch", 1 + i % 64}};
    builder.add(r);
  }
  const std::string text = builder.finish(run.created_at_ms);
  // Only the columns checked are parsed (the whole document is two million values).
  const auto column = [&](const std::string& name) {
    const std::string open = "\"" + name + "\":[";
    const std::size_t at = text.find(open, text.find("\"jobs\":{"));
    EXPECT_NE(at, std::string::npos) << name;
    const std::size_t from = at + open.size() - 1;
    return json::parse(text.substr(from, text.find(']', from) - from + 1));
  };
  const json ids = column("id");
  const json attempts = column("attempts");
  const json batch = column("batch");
  ASSERT_EQ(ids.size(), static_cast<std::size_t>(kJobs));
  ASSERT_EQ(attempts.size(), static_cast<std::size_t>(kJobs));
  ASSERT_EQ(batch.size(), static_cast<std::size_t>(kJobs));
  ASSERT_EQ(column("cell").size(), static_cast<std::size_t>(kJobs));
  for (int i = 0; i < kJobs; ++i) {
    ASSERT_EQ(ids[i], fmt::format("{:016x}", 0x1000000000000000ull + static_cast<uint64_t>(i) * 7919)) << i;
    ASSERT_EQ(attempts[i], 1 + i % 3) << i;
    ASSERT_EQ(batch[i], 1 + i % 64) << i;
  }
  EXPECT_NE(text.find("\"job_count\":60000"), std::string::npos);
}

class Dashboard : public StoreFixture {
 protected:
  json metrics_with_samples(const std::vector<double>& samples, double nmse) {
    json m = perf_metrics(samples[samples.size() / 2], samples.back(), 1000, nmse, 0.999, 1.0);
    m["latency_ms"]["samples"] = samples;
    m["process"] = {{"peak_rss_bytes", 123456789}, {"wall_s", 1.5}};
    return m;
  }

  void fill_run() {
    run_job(make_spec("bert-tiny", "encoder-only", "cpu", "f32"), "pass", "",
            metrics_with_samples({10, 11, 12, 13, 14, 15, 16, 17, 18}, 0));
    run_job(make_spec("bert-tiny", "encoder-only", "cpu", "q8_0"), "pass", "",
            metrics_with_samples({4, 4.1, 4.2, 4.3, 4.4, 6, 7, 8, 9}, 1e-4));
    run_job(make_spec("bert-tiny", "encoder-only", "opencl", "q4_0"), "unsupported",
            "opencl lacks op gelu</script><script>alert(1)</script>");
    run_job(make_spec("tiny-llama", "decoder-only", "cpu", "q4_0", 1, 32, 99, true), "crash", "SIGSEGV");
    add(make_spec("tiny-llama", "decoder-only", "cpu", "f32"));  // still queued
    WorkerRecord w;
    w.worker_id = "worker-a";
    w.hostname = "box-1";
    w.build = "accelmatrix test";
    w.capabilities = {{"cpu", {{"model", "Test CPU"}, {"isa", {{"avx2", true}}}, {"isa_level", "x86-64-v3"}}},
                      {"topology", {{"cores", 4}}},
                      {"devices", json::array({{{"backend", "cpu"}, {"name", "Test CPU"},
                                                {"hardware_class", "cpu-00112233aabbccdd"},
                                                {"software", false}}})}};
    ASSERT_TRUE(store_->upsert_worker(w).ok());
  }

  // The page's data with its cells turned back into one object per cell, as the page does
  // (decodeCells): each column holds one value per cell, and no cell carries its job ids.
  json data() {
    auto workers = store_->list_workers();
    EXPECT_TRUE(workers.ok());
    json d = dashboard_data(run_record(), rows(), workers.ok() ? *workers : std::vector<WorkerRecord>{}, kNow);
    EXPECT_EQ(d["schema"], 2);
    const std::size_t n = d["cell_count"].get<std::size_t>();
    EXPECT_TRUE(d["cells"].is_object());
    EXPECT_FALSE(d["cells"].contains("job_ids"));
    json cells = json::array();
    for (std::size_t i = 0; i < n; ++i) cells.push_back(json::object());
    for (const auto& [key, column] : d["cells"].items()) {
      EXPECT_EQ(column.size(), n) << key;
      for (std::size_t i = 0; i < n && i < column.size(); ++i) cells[i][key] = column[i];
    }
    d["cells"] = std::move(cells);
    return d;
  }
};

TEST_F(Dashboard, CellsAndOverviewCarryTheJsonReportsFigures) {
  fill_run();
  const json d = data();
  const json report = render_json(run_record(), rows());
  ASSERT_EQ(d["cells"].size(), report["matrix"].size());
  for (std::size_t i = 0; i < d["cells"].size(); ++i) {
    for (const char* key : {"model", "backend", "precision", "status", "rating", "median_ms", "speedup", "nmse_max",
                            "hardware_class", "speedup_ci_low", "speedup_ci_high", "rating_label", "host_busy"}) {
      EXPECT_EQ(d["cells"][i][key], report["matrix"][i][key]) << i << " " << key;
    }
    // The cell's job rows are the report's job ids, in order.
    json ids = json::array();
    for (const json& row : d["cells"][i]["jobs"]) ids.push_back(d["jobs"]["id"][row.get<std::size_t>()]);
    EXPECT_EQ(ids, report["matrix"][i]["job_ids"]) << i;
  }
  ASSERT_EQ(d["overview"].size(), report["overview"].size());
  for (std::size_t i = 0; i < d["overview"].size(); ++i) {
    for (const char* key : {"architecture", "backend", "cells", "working", "failed", "unsupported", "support"}) {
      EXPECT_EQ(d["overview"][i][key], report["overview"][i][key]) << i << " " << key;
    }
  }
  EXPECT_EQ(d["summary"]["total"], 5);
  EXPECT_EQ(d["summary"]["by_status"]["pass"], 2);
  EXPECT_EQ(d["summary"]["by_state"]["queued"], 1);
  // The encoder-only cpu column: q8_0 beats the f32 baseline (14 ms vs 4.4 ms medians), but both
  // sides spread widely (IQRs of 29% and 45%), so the speed-up's interval straddles 2.0×: the
  // cell is noisy and the column's best rating is the baseline itself.
  const json* enc_cpu = nullptr;
  for (const json& o : d["overview"]) {
    if (o["architecture"] == "encoder-only" && o["backend"] == "cpu") enc_cpu = &o;
  }
  ASSERT_NE(enc_cpu, nullptr);
  EXPECT_EQ((*enc_cpu)["best_rating"], "baseline");
  const json* q8 = nullptr;
  for (const json& c : d["cells"]) {
    if (c["precision"] == "q8_0") q8 = &c;
  }
  ASSERT_NE(q8, nullptr);
  EXPECT_EQ((*q8)["rating"], "noisy");
  EXPECT_LT((*q8)["speedup_ci_low"].get<double>(), 2.0);
  EXPECT_GT((*q8)["speedup_ci_high"].get<double>(), 2.0);
}

TEST_F(Dashboard, JobRowsHoldQuantilesAndAHistogramOfTheStoredSamples) {
  fill_run();
  const json d = data();
  ASSERT_EQ(d["job_count"], 5);
  for (const char* name : dashboard_job_columns()) {
    ASSERT_TRUE(d["jobs"].contains(name)) << name;
    ASSERT_EQ(d["jobs"][name].size(), 5u) << name;
  }
  // Job i as one row, for reading.
  auto job = [&](std::size_t i) {
    json row = json::object();
    for (const char* name : dashboard_job_columns()) row[name] = d["jobs"][name][i];
    return row;
  };
  auto col = [](const char* name) { return name; };
  const json f32 = job(0);
  EXPECT_EQ(d["strings"][f32[col("model")].get<std::size_t>()], "bert-tiny");
  EXPECT_EQ(d["strings"][f32[col("status")].get<std::size_t>()], "pass");
  // Samples 10..18: q1 12, median 14, q3 16 (linear between order statistics).
  EXPECT_EQ(f32[col("latency")], json::array({9, 10.0, 12.0, 14.0, 16.0, 18.0, 17.2}));
  const json& hist = f32[col("histogram")];
  ASSERT_EQ(hist.size(), static_cast<std::size_t>(kHistogramBins));
  int64_t total = 0;
  for (const json& n : hist) total += n.get<int64_t>();
  EXPECT_EQ(total, 9);
  EXPECT_EQ(hist[0], 1);                  // 10 alone in the first of 16 bins of [10, 18]
  EXPECT_EQ(hist[hist.size() - 1], 1);    // 18 in the last
  EXPECT_EQ(f32[col("noisy")], 1);        // IQR 4 ms is 29% of 14 ms
  EXPECT_EQ(job(1)[col("noisy")], 1);
  EXPECT_EQ(f32[col("peak_rss_bytes")], 123500000.0);  // rounded to 4 significant digits
  // The crashed job is on a scaled model and has no latency; the queued one says so.
  EXPECT_EQ(job(3)[col("scaled")], 1);
  EXPECT_TRUE(job(3)[col("latency")].is_null());
  EXPECT_EQ(d["strings"][job(4)[col("status")].get<std::size_t>()], "queued");
  // Each job points at its cell, and the cell back at it.
  for (std::size_t i = 0; i < 5; ++i) {
    const int cell = job(i)[col("cell")].get<int>();
    ASSERT_GE(cell, 0);
    const json& members = d["cells"][static_cast<std::size_t>(cell)]["jobs"];
    EXPECT_NE(std::find(members.begin(), members.end(), i), members.end()) << i;
  }
}

TEST_F(Dashboard, HardwareClassesComeFromCapabilityRecordsAndFailuresAreGrouped) {
  fill_run();
  const json d = data();
  ASSERT_EQ(d["classes"].size(), 1u);
  EXPECT_EQ(d["classes"][0]["id"], "cpu-00112233aabbccdd");
  EXPECT_EQ(d["classes"][0]["label"], "Test CPU · 4 cores · AVX2");
  EXPECT_EQ(d["classes"][0]["jobs"], 4);
  EXPECT_EQ(d["classes"][0]["workers"], json::array({"worker-a"}));
  ASSERT_EQ(d["failures"].size(), 2u);
  int crashes = 0, unsupported = 0;
  for (const json& f : d["failures"]) {
    crashes += f["status"] == "crash" ? f["count"].get<int>() : 0;
    unsupported += f["status"] == "unsupported" ? f["count"].get<int>() : 0;
  }
  EXPECT_EQ(crashes, 1);
  EXPECT_EQ(unsupported, 1);
}

TEST_F(Dashboard, PageEmbedsTheDataAndNoTextFromWorkersEscapesIntoTheMarkup) {
  fill_run();
  RunRecord run = run_record();
  run.run_id = "run <b>&</b>";
  auto workers = store_->list_workers();
  ASSERT_TRUE(workers.ok());
  auto page = render_html(run, rows(), *workers);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  EXPECT_EQ(page->rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page->find("<title>accelmatrix · run &lt;b&gt;&amp;&lt;/b&gt;</title>"), std::string::npos);
  EXPECT_EQ(page->find("alert(1)"), std::string::npos);
  EXPECT_EQ(page->find("@AM_"), std::string::npos) << "a template marker was left unfilled";
  // Self-contained: nothing is fetched (the one URL is the SVG namespace name, never loaded).
  for (const char* remote : {"https://", "src=", "href=\"http", "url(", "@import", "fetch(", "XMLHttpRequest", "<link "}) {
    EXPECT_EQ(page->find(remote), std::string::npos) << remote;
  }
  const json back = embedded_data(*page);
  EXPECT_EQ(back["run"]["run_id"], "run <b>&</b>");
  bool reason_kept = false;
  for (const json& s : back["strings"]) reason_kept |= s.get<std::string>().find("alert(1)") != std::string::npos;
  EXPECT_TRUE(reason_kept) << "the reason is data, shown as text by the page";
}

// `report --format html` streams: one projected walk over the store's rows (DashboardBuilder),
// the data compressed as it is written. Its page carries the data the rows in memory give
// (quantiles and histograms from the raw samples, peak RSS, host, cells, failures), whatever the
// time it was stamped with.
TEST_F(Dashboard, TheStreamedPageCarriesTheDataOfTheRowsInMemory) {
  fill_run();
  json with_host = metrics_with_samples({5, 5.5, 6, 6.5, 7}, 2e-4);
  with_host["host"] = {{"load_start", 3.2}, {"load_end", 4.1}, {"cpus", 2}, {"other_load", 1.3}, {"steal_fraction", 0.0}};
  with_host["generation"] = {{"time_to_first_token_ms_median", 12.5}, {"decode_tokens_per_s", 81.0}};
  with_host["accuracy"]["kl_divergence"] = 0.002;
  run_job(make_spec("bert-tiny", "encoder-only", "cpu", "bf16"), "pass", "", with_host);
  auto workers = store_->list_workers();
  ASSERT_TRUE(workers.ok());
  std::string page;
  const ReportRowSource source = [&](const ReportDocumentKeys& keys, const ReportRowVisitor& visit) {
    return store_->for_each_report_row(kRun, keys, visit);
  };
  const Status st = store_->in_read_snapshot([&] {
    return write_html_report(run_record(), *workers, source, [&](std::string_view piece) {
      page.append(piece);
      return Status::Ok();
    });
  });
  ASSERT_TRUE(st.ok()) << st.to_string();
  json streamed = embedded_data(page);
  json in_memory = dashboard_data(run_record(), rows(), *workers, kNow);
  streamed.erase("generated_at");
  in_memory.erase("generated_at");
  EXPECT_EQ(streamed, in_memory);
  EXPECT_EQ(streamed["job_count"], 6);
  EXPECT_NE(streamed["jobs"]["kl"].dump().find("0.002"), std::string::npos);
}

TEST_F(Dashboard, AnExternalCommandGetsItsOwnColumnWithoutBitsPerWeight) {
  // A plain run lists the precision table only: no "external" column nobody fills.
  fill_run();
  const json plain = data();   // named: a range-for over data()["precisions"] would outlive data()
  for (const json& p : plain["precisions"]) EXPECT_NE(p["name"], "external");

  // A [[commands]] job whose precision is none of ours ("Q4_K_M") is labelled "external".
  jobs::JobSpec cmd = make_spec("bert-tiny", "external", "cpu", "f32");
  cmd.precision = jobs::Precision::kExternal;
  cmd.model_config = json::object();
  cmd.command = jobs::CommandSpec{"llama", {"llama-bench", "-o", "json"}, "llama-bench", "Q4_K_M"};
  run_job(cmd, "pass", "", metrics_with_samples({3, 3, 3, 3, 3}, 0));
  const json d = data();
  const json report = render_json(run_record(), rows());

  // One "external" entry after the table's, with bits null, whose group the command cell uses.
  std::size_t table = 0, external = 0;
  for (const json& p : d["precisions"]) {
    if (p["name"] == "external") {
      ++external;
      EXPECT_EQ(p["group"], "external");
      EXPECT_TRUE(p["bits"].is_null());
    } else {
      EXPECT_EQ(external, 0u) << "the external column comes after the table's";
      ++table;
    }
  }
  EXPECT_EQ(table, jobs::all_precisions().size());
  EXPECT_EQ(external, 1u);

  const json* cell = nullptr;
  for (const json& c : d["cells"]) {
    if (c["command"] == "llama") cell = &c;
  }
  ASSERT_NE(cell, nullptr);
  EXPECT_EQ((*cell)["precision"], "external");
  EXPECT_EQ((*cell)["group"], "external");
  EXPECT_TRUE((*cell)["bits"].is_null());
  EXPECT_DOUBLE_EQ((*cell)["median_ms"].get<double>(), 3.0);
  // Its own cell, not the built-in cpu f32 baseline's, rated against that baseline (14 ms).
  ASSERT_EQ(d["cells"].size(), report["matrix"].size());
  for (std::size_t i = 0; i < d["cells"].size(); ++i) {
    EXPECT_EQ(d["cells"][i]["command"], report["matrix"][i]["command"]) << i;
    if (d["cells"][i]["precision"] == "f32" && d["cells"][i]["backend"] == "cpu" &&
        d["cells"][i]["model"] == "bert-tiny") {
      EXPECT_TRUE(d["cells"][i]["command"].is_null());
      EXPECT_EQ(d["cells"][i]["rating"], "baseline");
    }
  }
  ASSERT_TRUE((*cell)["speedup"].is_number());
  EXPECT_GT((*cell)["speedup"].get<double>(), 1.0);
  // The job's row says "external" and points at the command's cell.
  const std::size_t last = d["job_count"].get<std::size_t>() - 1;
  EXPECT_EQ(d["strings"][d["jobs"]["precision"][last].get<std::size_t>()], "external");
  EXPECT_EQ(&d["cells"][d["jobs"]["cell"][last].get<std::size_t>()], cell);

  // The page renders it.
  auto page = render_html(run_record(), rows(), {});
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  EXPECT_EQ(embedded_data(*page)["precisions"].back()["name"], "external");
}

TEST_F(Dashboard, AnEmptyRunStillRenders) {
  auto page = render_html(run_record(), rows(), {});
  ASSERT_TRUE(page.ok());
  const json back = embedded_data(*page);
  EXPECT_EQ(back["summary"]["total"], 0);
  EXPECT_EQ(back["job_count"], 0);
}

}  // namespace
}  // namespace am::coord::testing
