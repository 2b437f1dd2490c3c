#include "coordinator/job_state.h"

#include <array>
#include <ostream>
#include <utility>

namespace am::coord {
namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 3> kJobStates = {{
    {JobState::kQueued, "queued"},
    {JobState::kLeased, "leased"},
    {JobState::kDone, "done"},
}};

constexpr std::array<std::pair<AttemptState, std::string_view>, 4> kAttemptStates = {{
    {AttemptState::kLeased, "leased"},
    {AttemptState::kDone, "done"},
    {AttemptState::kExpired, "expired"},
    {AttemptState::kInterrupted, "interrupted"},
}};

template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "?";
}

template <typename E, std::size_t N>
std::optional<E> parse(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view text) {
  for (const auto& [v, name] : table) {
    if (name == text) return v;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(JobState s) { return name_of(kJobStates, s); }
std::string_view to_string(AttemptState s) { return name_of(kAttemptStates, s); }
std::optional<JobState> parse_job_state(std::string_view text) { return parse(kJobStates, text); }
std::optional<AttemptState> parse_attempt_state(std::string_view text) { return parse(kAttemptStates, text); }

std::ostream& operator<<(std::ostream& out, JobState s) { return out << to_string(s); }
std::ostream& operator<<(std::ostream& out, AttemptState s) { return out << to_string(s); }

}  // namespace am::coord
