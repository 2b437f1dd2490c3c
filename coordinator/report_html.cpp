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

}  // namespace

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

Status GzipWriter::init() {
  if (deflater_) return Status::Ok();
  auto d = std::make_unique<Deflater>();
  AM_RETURN_IF_ERROR(d->init());
  deflater_ = std::move(d);
  return Status::Ok();
}

GzipWriter::GzipWriter() = default;
GzipWriter::~GzipWriter() = default;

Status GzipWriter::run(std::string_view bytes, int flush) {
  z_stream& z = deflater_->stream();
  // zlib's API takes non-const input; it does not write through it. Input is handed over in
  // pieces zlib's 32-bit counters can hold.
  constexpr std::size_t kMaxPiece = 1u << 30;
  std::size_t offset = 0;
  do {
    const std::size_t piece = std::min(kMaxPiece, bytes.size() - offset);
    const bool last_piece = offset + piece == bytes.size();
    const int mode = last_piece ? flush : Z_NO_FLUSH;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data() + offset));
    z.avail_in = static_cast<uInt>(piece);
    int rc = Z_OK;
    do {
      if (out_.size() - used_ < 64 * 1024) out_.resize(std::max<std::size_t>(out_.size() * 2, used_ + 256 * 1024));
      z.next_out = reinterpret_cast<Bytef*>(out_.data() + used_);
      z.avail_out = static_cast<uInt>(std::min<std::size_t>(out_.size() - used_, kMaxPiece));
      const uInt before = z.avail_out;
      rc = deflate(&z, mode);
      used_ += before - z.avail_out;
      if (rc == Z_STREAM_ERROR) return internal_error("zlib: deflate failed");
    } while (z.avail_in > 0 || (mode == Z_FINISH && rc != Z_STREAM_END) || z.avail_out == 0);
    offset += piece;
  } while (offset < bytes.size());
  return Status::Ok();
}

Status GzipWriter::append(std::string_view bytes) {
  AM_RETURN_IF_ERROR(init());
  if (bytes.empty()) return Status::Ok();
  return run(bytes, Z_NO_FLUSH);
}

Result<std::string> GzipWriter::finish() {
  AM_RETURN_IF_ERROR(init());
  AM_RETURN_IF_ERROR(run({}, Z_FINISH));
  out_.resize(used_);
  deflater_.reset();
  used_ = 0;
  std::string packed = std::move(out_);
  out_.clear();   // a moved-from string is only "valid": start the next document from nothing
  return packed;
}

Result<std::string> gzip_bytes(std::string_view bytes) {
  GzipWriter gzip;
  AM_RETURN_IF_ERROR(gzip.append(bytes));
  return gzip.finish();
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

namespace {

// The page for the data, gzip-compressed, titled after the run.
Result<std::string> page_for_packed(const std::string& packed, const std::string& run_id) {
  std::string title = "accelmatrix";
  if (!run_id.empty()) title += " · " + run_id;
  std::string page(assets::kDashboardHtml);
  // The script and style are ours and hold no marker text; the data is base64 (no '<').
  AM_RETURN_IF_ERROR(fill(page, "@AM_TITLE@", xml_escape_attribute(report_text(title))));
  AM_RETURN_IF_ERROR(fill(page, "/*@AM_CSS@*/", assets::kDashboardCss));
  AM_RETURN_IF_ERROR(fill(page, "@AM_DATA@", base64_encode(packed)));
  AM_RETURN_IF_ERROR(fill(page, "/*@AM_JS@*/", assets::kDashboardJs));
  return page;
}

Result<std::string> page_for(std::string_view data_text, const std::string& run_id) {
  AM_ASSIGN_OR_RETURN(std::string packed, gzip_bytes(data_text));
  return page_for_packed(packed, run_id);
}

}  // namespace

Result<std::string> render_html(const nlohmann::json& data) {
  const std::string json_text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string run_id;
  if (data.contains("run") && data["run"].is_object() && data["run"].contains("run_id") &&
      data["run"]["run_id"].is_string()) {
    run_id = data["run"]["run_id"].get<std::string>();
  }
  return page_for(json_text, run_id);
}

Result<std::string> render_html(const RunRecord& run, const std::vector<ReportRow>& rows,
                                const std::vector<WorkerRecord>& workers) {
  return render_html(dashboard_data(run, rows, workers, now_epoch_ms()));
}

Status write_html_report(const RunRecord& run, const std::vector<WorkerRecord>& workers, const ReportRowSource& rows,
                         const TextSink& sink) {
  DashboardBuilder builder(run, workers);
  AM_RETURN_IF_ERROR(rows(DashboardBuilder::keys(), [&](const ReportRow& r, const ReportRowTexts&) {
    builder.add(r);
    return Status::Ok();
  }));
  // The data is compressed as it is written: its text is never whole.
  GzipWriter gzip;
  AM_RETURN_IF_ERROR(builder.finish(now_epoch_ms(), [&](std::string_view piece) { return gzip.append(piece); }));
  AM_ASSIGN_OR_RETURN(std::string packed, gzip.finish());
  AM_ASSIGN_OR_RETURN(std::string page, page_for_packed(packed, repair_utf8(run.run_id)));
  packed = std::string();
  return sink(page);
}

}  // namespace am::coord
