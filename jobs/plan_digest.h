// A plan's inputs digest: what expanding a plan reads (the plan's text and the catalog's model
// files) and the code that expands it (common/build_id.h loaded_code_id(): the build ids of the
// executable and of every shared library loaded, the TOML parser's among them). The same
// digest means the same expansion, so a coordinator restarting on a run whose stored digest is
// the plan's reads the run's jobs from its store instead of expanding the plan again
// (coordinator/server.h, Server::resume; docs/SCALE.md "Restart").
//
// Contract: "d1:" and 32 lowercase hex digits (two independent 64-bit hashes of one buffer).
// Any byte of the plan text or of a catalog *.toml file, a catalog file added, removed or
// renamed, or other code gives another digest. An error when the code id is empty or the
// catalog cannot be listed or read: no digest, and the caller expands the plan. A catalog
// directory that does not exist counts as empty (a plan of selftest models needs none; the
// selftest models are compiled in, under the executable's build id; every library of ours is
// static, am_library).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "common/status.h"

namespace am::jobs {

Result<std::string> plan_inputs_digest(std::string_view plan_text, const std::filesystem::path& catalog_dir,
                                       std::string_view code_id);

}  // namespace am::jobs
