// Build provenance stamped into HELLO and every stored result.
#pragma once

#include <string>

namespace am {

const char* build_version();   // "0.1.0"
const char* build_commit();    // git short hash at configure time, or "unknown"
std::string build_string();    // "accelmatrix 0.1.0 (abcdef123456)"

}  // namespace am
