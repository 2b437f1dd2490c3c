#include "common/curve_files.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/unique_fd.h"

namespace am {
namespace {

Result<std::vector<std::string>> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return not_found("cannot read " + path.string());
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

}  // namespace

Result<CurveKeyPair> write_curve_keypair(const std::filesystem::path& dir, const std::string& name) {
  // A plain, visible file name that leaves room for the suffix: "." and ".." made hidden
  // "..key" files, and a name past NAME_MAX failed inside the filesystem library.
  constexpr std::size_t kMaxNameBytes = NAME_MAX - 4;   // "<name>.key"
  if (name.empty() || name.find('/') != std::string::npos || name.front() == '.') {
    return invalid_argument("key name '" + name + "' must be a plain file name (no '/', not starting with '.')");
  }
  if (name.size() > kMaxNameBytes) {
    return invalid_argument("key name is " + std::to_string(name.size()) + " bytes long; at most " +
                            std::to_string(kMaxNameBytes));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return io_error("cannot create " + dir.string() + ": " + ec.message());
  const auto key_file = dir / (name + ".key");
  const auto pub_file = dir / (name + ".pub");
  AM_ASSIGN_OR_RETURN(CurveKeyPair pair, generate_curve_keypair());
  const auto write_new = [](const std::filesystem::path& path, const std::string& text, int flags,
                            mode_t mode) -> Status {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, mode));
    if (!fd.valid()) {
      if (errno == EEXIST) return invalid_argument(path.string() + " already exists");
      return io_error("cannot write " + path.string() + ": " + std::strerror(errno));
    }
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return io_error("cannot write " + path.string() + ": " + std::strerror(errno));
      done += static_cast<std::size_t>(n);
    }
    return Status::Ok();
  };
  // The secret's file is made 0600 by the call that creates it, and never over an existing one.
  AM_RETURN_IF_ERROR(write_new(key_file, "public " + pair.public_key + "\nsecret " + pair.secret_key + "\n",
                               O_EXCL, S_IRUSR | S_IWUSR));
  AM_RETURN_IF_ERROR(write_new(pub_file, pair.public_key + "\n", O_TRUNC, 0644));
  return pair;
}

Result<CurveKeyPair> load_curve_keypair(const std::filesystem::path& key_file) {
  AM_ASSIGN_OR_RETURN(std::vector<std::string> lines, read_lines(key_file));
  CurveKeyPair pair;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string where = key_file.string() + ":" + std::to_string(i + 1);
    const std::string& l = lines[i];
    if (l.empty()) continue;
    if (l.rfind("public ", 0) == 0) {
      pair.public_key = l.substr(7);
      AM_RETURN_IF_ERROR(validate_curve_key(pair.public_key, where));
    } else if (l.rfind("secret ", 0) == 0) {
      pair.secret_key = l.substr(7);
      AM_RETURN_IF_ERROR(validate_curve_key(pair.secret_key, where));
    } else {
      return invalid_argument(where + ": expected 'public <key>' or 'secret <key>'");
    }
  }
  if (pair.secret_key.empty()) return invalid_argument(key_file.string() + ": no secret key");
  AM_ASSIGN_OR_RETURN(std::string derived, curve_public_key_from_secret(pair.secret_key));
  if (pair.public_key.empty()) pair.public_key = derived;
  if (derived != pair.public_key) {
    return invalid_argument(key_file.string() + ": public key does not belong to the secret key");
  }
  return pair;
}

Result<std::string> load_curve_public_key(const std::filesystem::path& pub_file) {
  AM_ASSIGN_OR_RETURN(std::vector<std::string> lines, read_lines(pub_file));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    AM_RETURN_IF_ERROR(validate_curve_key(lines[i], pub_file.string() + ":" + std::to_string(i + 1)));
    return lines[i];
  }
  return invalid_argument(pub_file.string() + ": no public key");
}

Result<std::vector<std::string>> load_curve_allow_list(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (entry.path().extension() == ".pub") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  std::vector<std::string> keys;
  for (const auto& f : files) {
    AM_ASSIGN_OR_RETURN(std::string key, load_curve_public_key(f));
    keys.push_back(std::move(key));
  }
  if (keys.empty()) return invalid_argument(path.string() + ": no .pub keys to allow");
  return keys;
}

}  // namespace am
