// Where a job and an attempt stand in the coordinator's state machine: one enum each, one string
// per value (the SQLite column's words; the schema's CHECK constraints list the same words).
//
//   job:      queued -> leased -> done       (an expired lease puts it back to queued)
//   attempt:  leased -> done | expired | interrupted
//             (interrupted: a clean stop of the coordinator or a worker's BYE released the
//             lease; the job goes back to queued and the attempt counts against no one)
//
// Contract: to_string() and the parse functions are the only conversions; parse returns nullopt
// for any other text. Pure, thread-safe.
#pragma once

#include <iosfwd>
#include <optional>
#include <string_view>

namespace am::coord {

enum class JobState { kQueued, kLeased, kDone };
enum class AttemptState { kLeased, kDone, kExpired, kInterrupted };

std::string_view to_string(JobState s);
std::string_view to_string(AttemptState s);
std::optional<JobState> parse_job_state(std::string_view text);
std::optional<AttemptState> parse_attempt_state(std::string_view text);
std::ostream& operator<<(std::ostream& out, JobState s);
std::ostream& operator<<(std::ostream& out, AttemptState s);

}  // namespace am::coord
