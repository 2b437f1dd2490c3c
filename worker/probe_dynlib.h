// How a probe records opening a GPU/NPU runtime (common/dynamic_library.h): a runtime that is
// not installed is a fact in the capability record, not a start-up failure.
// Thread-safety: pure functions.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/dynamic_library.h"
#include "common/status.h"

namespace am::worker {

// The "library" part of a runtime's answers: {"loaded": true, "name", "path"} or
// {"loaded": false, "error"}.
nlohmann::json library_answers(const Result<DynamicLibrary>& library);
nlohmann::json library_answers(const Result<const DynamicLibrary*>& library);

// Whether answers[key] says the library loaded.
bool library_loaded(const nlohmann::json& answers, std::string_view key = "library");

}  // namespace am::worker
