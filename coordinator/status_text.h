// `accelmatrix status` and `accelmatrix runs` as text for people: pure renderers of the
// documents the commands get (the coordinator's status document, PROTOCOL §5.10; the runs of a
// database). Missing or mistyped fields render as "?" rather than failing: the document comes
// from another process, possibly another version. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "coordinator/store.h"

namespace am::coord {

// Durations for people: "850 ms", "12.3 s", "4m05s", "2h03m".
std::string human_duration(double seconds);

std::string render_status_text(const nlohmann::json& status);

// One line per run, newest first: id, plan, created, finished (or "open"), jobs per status.
std::string render_runs_text(const std::vector<RunRecord>& runs, const std::vector<RunCounts>& counts);
nlohmann::json render_runs_json(const std::vector<RunRecord>& runs, const std::vector<RunCounts>& counts);

}  // namespace am::coord
