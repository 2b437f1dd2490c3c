#include "coordinator/report_html.h"

#include <zlib.h>

#include "common/clock.h"
#include "coordinator/dashboard_assets.h"
#include "coordinator/dashboard_data.h"
#include "coordinator/report_text.h"

namespace am::coord {
namespace {

constexpr int kGzipLevel = 6;

// Replaces every occurrence of `marker` in `page` with `text` (at least one must exist).
Status fill(std::string& page, std::string_view marker, std::string_view text) {
  std::size_t at = page.find(marker);
  if (at == std::string::npos) return internal_error("dashboard template lacks " + std::string(marker));
  while (at != std::string::npos) {
    page.replace(at, marker.size(), text);
    at = page.find(marker, at + text.size());
  }
  return Status::Ok();
}

// zlib's deflate stream, ended on every path.
class Deflater {
 public:
  Deflater() = default;
  ~Deflater() {
    if (open_) deflateEnd(&z_);
  }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  Status init() {
    // windowBits 15 + 16: a gzip wrapper (RFC 1952), which DecompressionStream("gzip") reads.
    // Level 6 (zlib's default): within 2% of level 9 on the dashboard's data, at half the time.
    if (deflateInit2(&z_, kGzipLevel, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK) {
      return internal_error("zlib: deflateInit2 failed");
    }
    open_ = true;
    return Status::Ok();
  }
  z_stream& stream() { return z_; }

 private:
  z_stream z_{};
  bool open_ = false;
};

}  // namespace

Result<std::string> gzip_bytes(std::string_view bytes) {
  if (bytes.size() > 0xFFFFFFFFu) return invalid_argument("dashboard data over 4 GiB");
  Deflater d;
  AM_RETURN_IF_ERROR(d.init());
  z_stream& z = d.stream();
  std::string out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 64, '\0');
  // zlib's API takes non-const input; it does not write through it.
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) return internal_error("zlib: deflate did not finish");
  out.resize(z.total_out);
  return out;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (rest == 2) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

Result<std::string> render_html(const nlohmann::json& data) {
  const std::string json_text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  AM_ASSIGN_OR_RETURN(std::string packed, gzip_bytes(json_text));
  std::string title = "accelmatrix";
  if (data.contains("run") && data["run"].is_object() && data["run"].contains("run_id") &&
      data["run"]["run_id"].is_string()) {
    title += " · " + data["run"]["run_id"].get<std::string>();
  }
  std::string page(assets::kDashboardHtml);
  // The script and style are ours and hold no marker text; the data is base64 (no '<').
  AM_RETURN_IF_ERROR(fill(page, "@AM_TITLE@", xml_escape_attribute(report_text(title))));
  AM_RETURN_IF_ERROR(fill(page, "/*@AM_CSS@*/", assets::kDashboardCss));
  AM_RETURN_IF_ERROR(fill(page, "@AM_DATA@", base64_encode(packed)));
  AM_RETURN_IF_ERROR(fill(page, "/*@AM_JS@*/", assets::kDashboardJs));
  return page;
}

Result<std::string> render_html(const RunRecord& run, const std::vector<ReportRow>& rows,
                                const std::vector<WorkerRecord>& workers) {
  return render_html(dashboard_data(run, rows, workers, now_epoch_ms()));
}

}  // namespace am::coord
