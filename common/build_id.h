// Build ids: the linker's hash of an ELF object's contents (note NT_GNU_BUILD_ID), as lowercase
// hex — the same for one binary, different for any other build.
//
// Contract: executable_build_id() is the running executable's, "" when it carries none (a linker
// run without --build-id) or the platform has no ELF notes. loaded_code_id() names all the code
// the process runs: the executable's build id and, for every shared library loaded so far, its
// file name and build id (or "?" without one), sorted by name; "" when the executable has none.
// Callers that key a cache on the code keep no cache on "".
#pragma once

#include <string>

namespace am {

std::string executable_build_id();
std::string loaded_code_id();

}  // namespace am
