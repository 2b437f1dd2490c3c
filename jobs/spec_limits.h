// Bounds on job-spec fields, shared by the spec validator and the plan loader so that a plan
// can never expand to a spec the workers would refuse.
//
// The upper bounds guard workers against specs that would make them allocate absurd amounts
// (a corrupted or hostile message); they sit far above anything a real plan asks for.
#pragma once

#include <cstdint>

namespace am::jobs {

inline constexpr int64_t kMaxBatch = 1 << 16;
inline constexpr int64_t kMaxSeqLen = 1 << 20;
inline constexpr int64_t kMaxWarmup = 1'000'000;
inline constexpr int64_t kMaxReps = 100'000'000;
inline constexpr int64_t kMaxThreads = 1 << 16;
inline constexpr int64_t kMaxMemoryLimitMb = int64_t{1} << 40;
inline constexpr double kMaxMinTimeS = 86'400.0;          // one day
inline constexpr double kMaxTimeoutS = 7.0 * 86'400.0;    // one week

}  // namespace am::jobs
