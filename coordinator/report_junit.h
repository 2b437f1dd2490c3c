// The JUnit XML export of one run, for CI systems (GitLab, Jenkins, ctest consumers).
//
// Contract: render_junit() is a pure function of the run and its report rows
// (Store::report_rows). The document (docs/REPORTS.md shows an example):
// - <testsuites name="accelmatrix <run id>"> holding one <testsuite> per backend × hardware
//   class, in order of first appearance in the rows (job order), named "<backend> · <hardware
//   class>"; a job that never reached a device (skipped before placement, still queued) has no
//   hardware class and goes to "<backend> · unplaced" (the matrix column of such jobs).
// - One <testcase> per job: classname = model, name = "<precision> b<batch> s<seq_len> [<job
//   id>]", time = the job's median latency in seconds when it measured one, else the job
//   process's wall time (metrics.process.wall_s), else 0. Each testcase has <properties>: job
//   id, status (or state while not terminal), architecture, hardware class, device, worker,
//   attempt, and the median latency (ms) and NMSE when stored.
// - Statuses map by the enum (DECISIONS "Statuses and exit codes"):
//     pass                             passing testcase
//     degraded                         passing testcase with a <system-out> note and the reason
//     fail, crash, timeout, oom, error <failure type="<status>" message="<reason>">log tail</failure>
//     lost, interrupted                <error type="<status>" message="<reason>">log tail</error>
//     unsupported, skipped, cancelled  <skipped message="<status>: <reason>"/>
//     not terminal (queued, leased)    <skipped message="not run yet (<state>)"/>
//   `interrupted` is never a job's final status; were one stored, it is reported like lost (an
//   infrastructure fault, not a finding). A run in progress reports its pending jobs as
//   skipped, so CI gates on the run's exit code as well as on this file.
// - tests/failures/errors/skipped on each <testsuite> count its testcases; <testsuites> sums
//   them. A suite's time is the sum of its testcases' times, and <testsuites>' the sum of the
//   suites'. Times are seconds in fixed notation with 6 decimals; timestamps are UTC without a
//   zone suffix ("2024-05-01T12:34:56"), as the JUnit schema writes them.
// - Log tails are cut to their last kJunitLogTailBytes bytes (at a character boundary, marked
//   with "…"). All text goes through report_text() (valid UTF-8, characters XML 1.0 forbids
//   replaced by U+FFFD) and is escaped (&, <, > everywhere; quotes, TAB, LF and CR in
//   attributes as character references), so a log tail holding "]]>", control characters or
//   invalid bytes still yields well-formed XML.
// Thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/report_common.h"
#include "coordinator/report_text.h"
#include "coordinator/store.h"

namespace am::coord {

inline constexpr std::size_t kJunitLogTailBytes = 4096;

std::string render_junit(const RunRecord& run, const std::vector<ReportRow>& rows);

// The same document written to `sink` a piece at a time from two walks over the rows: the suites'
// totals, then the cases: the first suite's written as they are read, the other suites' held as
// text until their turn (a run of one backend × class holds nothing). No row is held. Stops at
// the first error of the source or the sink.
Status write_junit_report(const RunRecord& run, const ReportRowSource& rows, const TextSink& sink);

}  // namespace am::coord
