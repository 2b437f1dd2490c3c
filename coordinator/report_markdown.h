// The Markdown report of one run, in the layout of a hardware compatibility report.
//
// Contract: render_markdown() is a pure function of the run, its report rows
// (Store::report_rows) and the workers' stored capability records (Store::list_workers, for the
// readable names of hardware classes; without them a column is named by its class id), and
// returns GitHub-flavoured Markdown:
//   1. title and run provenance (run id, plan, created/finished, workers with their hostnames
//      and hardware classes, builds);
//   2. summary counts by status;
//   3. overview table architecture × hardware (a column per backend × hardware class, matrix.h),
//      and the rating rules;
//   4. one table per column: model × precision rows with status, rating, median latency (ms),
//      speed-up vs cpu f32 on the same host, NMSE, cosine and notes (scaled models, reasons of ❌,
//      pending jobs);
//   5. measured memory: the largest peak RSS and weight bytes per model × precision × column;
//   6. a per-job table (job id, model, backend, precision, batch, seq_len, status, attempt,
//      worker, median ms, p90 ms, tokens/s, NMSE, cosine, top-1).
// Text from workers is made valid UTF-8 and table-safe ('|' escaped, newlines folded). Numbers
// that were not measured print as "—". Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "coordinator/report_common.h"
#include "coordinator/store.h"

namespace am::coord {

std::string render_markdown(const RunRecord& run, const std::vector<ReportRow>& rows,
                            const std::vector<WorkerRecord>& workers = {});

// The same text written to `sink` a piece at a time from two walks over the rows (everything
// above the per-job table, then that table), which are never held: memory grows with the run
// only by the matrix. Stops at the first error of the source or the sink.
Status write_markdown_report(const RunRecord& run, const std::vector<WorkerRecord>& workers,
                             const ReportRowSource& rows, const TextSink& sink);

}  // namespace am::coord
