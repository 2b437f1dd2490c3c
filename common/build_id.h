// The running executable's GNU build id (the linker's hash of its contents, ELF note
// NT_GNU_BUILD_ID), as lowercase hex: the same for one binary, different for any other build.
//
// Contract: "" when the executable carries no build id (a linker run without --build-id) or the
// platform has no ELF notes; callers that key a cache on the binary then keep no cache.
#pragma once

#include <string>

namespace am {

std::string executable_build_id();

}  // namespace am
