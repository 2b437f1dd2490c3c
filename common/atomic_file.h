// Whole-file replacement that readers never see half done.
//
// Contract: write_file_atomically() writes `content` to "<path>.tmp" (created afresh with
// permission bits `mode`, set at creation and again with fchmod so the umask cannot widen or
// narrow them: a secret is never readable by others, not even for a moment), flushes it to
// disk, and renames it over `path`. A reader sees the old file or the whole new one; on failure
// the old file is untouched and the temporary is removed. Thread-safe for distinct paths.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string_view>

#include "common/status.h"

namespace am {

inline constexpr mode_t kPublicFileMode = 0644;
inline constexpr mode_t kSecretFileMode = 0600;

Status write_file_atomically(const std::filesystem::path& path, std::string_view content,
                             mode_t mode = kPublicFileMode);

}  // namespace am
