#include "worker/probe_dynlib.h"

#include "worker/probe_json.h"

namespace am::worker {

nlohmann::json library_answers(const Result<const DynamicLibrary*>& library) {
  if (!library.ok()) return {{"loaded", false}, {"error", library.status().message()}};
  const DynamicLibrary& lib = **library;
  return {{"loaded", true}, {"name", lib.name()}, {"path", lib.path()}};
}

nlohmann::json library_answers(const Result<DynamicLibrary>& library) {
  if (!library.ok()) return library_answers(Result<const DynamicLibrary*>(library.status()));
  return library_answers(Result<const DynamicLibrary*>(&*library));
}

bool library_loaded(const nlohmann::json& answers, std::string_view key) {
  if (!answers.is_object()) return false;
  auto it = answers.find(key);
  return it != answers.end() && json_bool(*it, "loaded", false);
}

}  // namespace am::worker
