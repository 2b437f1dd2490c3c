// A file a command writes (`report -o`, `compare -o`, `serve --endpoint-file`) must never be the
// database it reads or one of the files SQLite and the coordinator keep beside it: the output
// replaces its target by renaming over it, so such a path wiped every stored run with exit 0.
//
// Contract: check_output_path() returns kInvalidArgument (exit 2) naming the option and the
// output when the output's directory does not exist or the output is a directory; and naming the option,
// the output and the database when `output` is `db`, `db`-wal, -shm, -journal or .lock, whether
// by the same path, another spelling of it, a symlink or a hard link (same device and inode);
// OK otherwise, including when `output` does not exist yet and names none of them. A `db` that
// is a symlink guards the files beside its target too (where SQLite and DbLock put them). An
// existing `output` that is any SQLite database (its 16-byte header), or a regular file this
// user may not write (made read-only), is refused the same way. The write itself never touches
// another file than `output` (common/atomic_file.h: its temporary is a fresh name).
#pragma once

#include <filesystem>
#include <string_view>

#include "common/status.h"

namespace am::coord {

Status check_output_path(const std::filesystem::path& output, const std::filesystem::path& db,
                                   std::string_view option);

}  // namespace am::coord
