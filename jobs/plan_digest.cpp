#include "jobs/plan_digest.h"

#include <functional>

#include "common/hash.h"
#include "jobs/catalog.h"
#include "jobs/toml_support.h"

namespace am::jobs {
namespace {

// Each part length-prefixed, so that no two sequences of parts make one buffer.
void append_part(std::string& buffer, std::string_view part) {
  buffer += std::to_string(part.size());
  buffer += ':';
  buffer.append(part);
}

}  // namespace

Result<std::string> plan_inputs_digest(std::string_view plan_text, const std::filesystem::path& catalog_dir,
                                       std::string_view code_id) {
  if (code_id.empty()) return failed_precondition("the executable has no build id");
  std::string buffer = "accelmatrix plan inputs v1\n";
  append_part(buffer, code_id);
  append_part(buffer, plan_text);
  std::error_code ec;
  if (std::filesystem::exists(catalog_dir, ec)) {
    AM_ASSIGN_OR_RETURN(std::vector<std::string> names, list_models(catalog_dir));   // sorted
    buffer += "catalog " + std::to_string(names.size()) + "\n";
    for (const std::string& name : names) {
      const std::filesystem::path file = catalog_dir / (name + ".toml");
      AM_ASSIGN_OR_RETURN(std::string text, detail::read_text_file(file));
      append_part(buffer, name);
      append_part(buffer, text);
    }
  } else {
    buffer += "no catalog\n";
  }
  // FNV-1a and libstdc++'s murmur hash of the same bytes: unrelated functions, 128 bits between
  // them. Neither is cryptographic; the digest guards against change, not against an author of
  // the plan file (who can write any plan anyway).
  const uint64_t a = fnv1a64(buffer);
  const uint64_t b = static_cast<uint64_t>(std::hash<std::string_view>{}(buffer));
  return "d1:" + hex64(a) + hex64(b);
}

}  // namespace am::jobs
