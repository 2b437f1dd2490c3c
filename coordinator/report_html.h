// `report --format html`: the dashboard, one self-contained HTML file.
//
// Contract: render_html() returns a complete HTML5 document that opens from file:// with no
// network: the style sheet and script (coordinator/dashboard/) are inline, charts are SVG drawn
// by the script, and the data (coordinator/dashboard_data.h) is embedded gzip-compressed and
// base64-encoded in <script type="application/gzip+base64" id="am-data">, which the page
// inflates with the browser's DecompressionStream. Compression keeps a 100k-job run under 10 MB
// (DECISIONS.md); nothing in the page is fetched. The page title names the run. Once rendered,
// the page sets <body data-am-state="ready"> (or "error", with the message in #am-error), so a
// test or a person can tell a working page from a broken one. Thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "coordinator/report_common.h"
#include "coordinator/store.h"

namespace am::coord {

// The document for `data` (a dashboard_data() value).
Result<std::string> render_html(const nlohmann::json& data);

// Convenience: dashboard_data() of the run, stamped now, then render_html().
Result<std::string> render_html(const RunRecord& run, const std::vector<ReportRow>& rows,
                                const std::vector<WorkerRecord>& workers);

// The page of the run built from one walk over its rows (DashboardBuilder): no row is held, the
// job table only as the page's JSON text (a million jobs: their bytes, not their trees). The
// page itself is compressed data and is written whole. Stops at the first error.
Status write_html_report(const RunRecord& run, const std::vector<WorkerRecord>& workers, const ReportRowSource& rows,
                         const TextSink& sink);

// The building blocks, exposed for tests: RFC 1952 gzip of `bytes`, and RFC 4648 base64.
Result<std::string> gzip_bytes(std::string_view bytes);

class Deflater;   // zlib's stream (report_html.cpp)

// gzip_bytes() of everything appended, in order, without holding the input: append() pieces of
// any size, then finish() once for the compressed bytes (the writer is then empty again).
class GzipWriter {
 public:
  GzipWriter();
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;
  Status append(std::string_view bytes);
  Result<std::string> finish();

 private:
  Status init();
  Status run(std::string_view bytes, int flush);
  std::unique_ptr<Deflater> deflater_;
  std::string out_;
  std::size_t used_ = 0;
};
std::string base64_encode(std::string_view bytes);

}  // namespace am::coord
