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

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "coordinator/store.h"

namespace am::coord {

// The document for `data` (a dashboard_data() value).
Result<std::string> render_html(const nlohmann::json& data);

// Convenience: dashboard_data() of the run, stamped now, then render_html().
Result<std::string> render_html(const RunRecord& run, const std::vector<ReportRow>& rows,
                                const std::vector<WorkerRecord>& workers);

// The building blocks, exposed for tests: RFC 1952 gzip of `bytes`, and RFC 4648 base64.
Result<std::string> gzip_bytes(std::string_view bytes);
std::string base64_encode(std::string_view bytes);

}  // namespace am::coord
