// The CSV export of one run: one row per job, columns fixed by schema kReportCsvSchema.
//
// Contract: render_csv() is a pure function of the run and its report rows
// (Store::report_rows), in job order. The format (docs/REPORTS.md has every column with its
// meaning and unit):
// - RFC 4180: a header row, then one record per job; records end in CRLF; a field is quoted
//   with '"' when it contains '"', ',', CR or LF, or starts or ends with a space or TAB, and a
//   '"' inside a quoted field is doubled. Line breaks inside a reason are kept inside quotes.
// - Text goes through report_text() (coordinator/report_text.h): valid UTF-8, control
//   characters other than TAB/LF/CR replaced by U+FFFD. No byte-order mark.
// - Numbers are locale-independent: integers as integers, other numbers in the shortest form
//   that reads back as the same double ("0.25", "1.5e-12"). Times are UTC ISO 8601
//   ("2024-05-01T12:34:56.789Z"). A missing value is an empty field.
// - Schema 1 columns are csv_columns(), in that order. Later schemas only append columns, never
//   rename, remove or reorder, so a reader that selects by header name keeps working.
// Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "coordinator/report_common.h"
#include "coordinator/store.h"

namespace am::coord {

inline constexpr int kReportCsvSchema = 3;   // 2 appended the host_* and cell_* columns;
                                             // 3 target and exclusive (placement)

// The schema's column names, in order (the header row). One table in report_csv.cpp defines
// each column's name and value together, so the header and the records cannot drift apart.
std::vector<std::string_view> csv_columns();

// One CSV field, quoted when RFC 4180 (or a reader that trims spaces) needs it. `text` is
// written as given: callers pass text that went through report_text().
std::string csv_field(std::string_view text);

std::string render_csv(const RunRecord& run, const std::vector<ReportRow>& rows);

// The same text written to `out` a piece at a time from two walks over the rows (the matrix,
// then the records), which are never held: memory grows with the run only by the matrix. Stops
// at the first error of the source or the sink.
Status write_csv_report(const RunRecord& run, const ReportRowSource& rows, const TextSink& out);

}  // namespace am::coord
