// The closed vocabularies of the job system: backends, architecture families and run modes, in
// their canonical order (precisions and weight formats: jobs/precision.h) (the order reports and error messages list them in).
//
// Contract: the lists are static, immutable and safe to read from any thread. The is_known_*
// predicates (declared in jobs/job_spec.h) agree with these lists exactly.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace am::jobs {

std::span<const std::string_view> known_backends();
std::span<const std::string_view> known_architectures();
std::span<const std::string_view> known_modes();  // accuracy, perf, both

bool is_known_mode(std::string_view m);

// Names of models, plans and runs: 1 to 64 characters of [A-Za-z0-9._-], not starting with
// '.' or '-', so they are safe as file names, run ids and command-line arguments.
inline constexpr std::size_t kMaxIdentifierLength = 64;
bool is_valid_identifier(std::string_view name);
// "" when `run_id` is empty (the plan's name is used) or valid; else the error message, e.g.
// "run id 'a b' is not valid (1-64 of letters, ...)".
std::string run_id_problem(std::string_view run_id);

// "a, b, c" — for "expected one of ..." error messages.
std::string join_names(std::span<const std::string_view> names);

}  // namespace am::jobs
