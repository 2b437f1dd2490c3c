// CURVE key files, as `accelmatrix keys` writes them.
//
//   NAME.key  "public <z85>\nsecret <z85>\n", mode 0600 — a peer's own keypair
//   NAME.pub  "<z85>\n"                                  — what the other side is given
//
// Contract: loaders validate every key (Z85, 40 chars) and that a secret key matches its public
// key; errors name the file and line. An allow-list is a .pub file or a directory whose *.pub
// files are read (sorted by name); an empty allow-list is an error (it would refuse everyone).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "common/curve.h"
#include "common/status.h"

namespace am {

// Writes DIR/NAME.key and DIR/NAME.pub; refuses to overwrite an existing NAME.key.
Result<CurveKeyPair> write_curve_keypair(const std::filesystem::path& dir, const std::string& name);
Result<CurveKeyPair> load_curve_keypair(const std::filesystem::path& key_file);
Result<std::string> load_curve_public_key(const std::filesystem::path& pub_file);
Result<std::vector<std::string>> load_curve_allow_list(const std::filesystem::path& path);

}  // namespace am
