#include "proximity/core/base/file_access.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace proximity::core {
namespace {

// The canonical absolute path (symlinks and ".." resolved), or "" when it does not resolve.
std::string Resolve(const std::string& path) {
  char buf[PATH_MAX];
  if (path.empty() || ::realpath(path.c_str(), buf) == nullptr) return {};
  return buf;
}

bool Under(const std::string& canonical, const std::string& root) {
  if (root == "/") return true;
  return canonical.size() > root.size() && canonical.compare(0, root.size(), root) == 0 && canonical[root.size()] == '/';
}

// Closes a descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<FileAccess> FileAccess::Confined(const std::vector<std::string>& roots, int64_t max_bytes) {
  FileAccess out;
  out.confined = true;
  out.max_bytes = max_bytes;
  for (const std::string& root : roots) {
    const std::string canonical = Resolve(root);
    struct stat st {};
    if (canonical.empty() || ::stat(canonical.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return InvalidArgument("allowed path root '" + root + "' is not an existing directory");
    }
    out.roots.push_back(canonical);
  }
  return out;
}

bool FileAccess::Allows(const std::string& path) const {
  if (!confined) return true;
  const std::string canonical = Resolve(path);
  if (canonical.empty()) return false;
  for (const std::string& root : roots) {
    if (Under(canonical, root)) return true;
  }
  return false;
}

namespace {

Result<std::string> ReadFromFileSystem(const FileAccess& access, const std::string& path);

}  // namespace

Result<std::string> ReadFileUnder(const FileAccess& access, const std::string& path) {
  if (access.snapshot == nullptr) return ReadFromFileSystem(access, path);
  FileSnapshot& snapshot = *access.snapshot;
  {
    std::lock_guard<std::mutex> lock(snapshot.mutex);
    if (auto it = snapshot.files.find(path); it != snapshot.files.end()) return it->second;
  }
  Result<std::string> bytes = ReadFromFileSystem(access, path);
  if (!bytes.ok()) return bytes;
  std::lock_guard<std::mutex> lock(snapshot.mutex);
  // A concurrent first read of the same path may have stored its bytes already: the first stored wins.
  return snapshot.files.emplace(path, std::move(bytes).value()).first->second;
}

namespace {

Result<std::string> ReadFromFileSystem(const FileAccess& access, const std::string& path) {
  // Confined: one message for every failure (missing, outside the roots, not a regular file, too
  // large, unreadable), naming only what the caller gave.
  auto fail = [&](std::string cause) -> Error {
    if (access.confined) {
      return NotFound("file '" + path +
                      "' cannot be read: it is missing, outside the server's allowed path roots (--allow-path-root), "
                      "not a regular file, or larger than " + std::to_string(access.max_bytes) + " bytes");
    }
    return NotFound("file '" + path + "' " + cause);
  };
  std::string target = path;
  if (access.confined) {
    target = Resolve(path);
    bool allowed = false;
    for (const std::string& root : access.roots) allowed = allowed || (!target.empty() && Under(target, root));
    if (!allowed) return fail("is outside the allowed roots");
  }
  Fd file;
  // Non-blocking: opening a FIFO without a writer returns at once instead of waiting for one. The
  // resolved path has no symlinks left, so O_NOFOLLOW refuses one swapped in since.
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | (access.confined ? O_NOFOLLOW : 0);
  file.fd = ::open(target.c_str(), flags);
  if (file.fd < 0) {
    return fail(errno == ENOENT || errno == ENOTDIR ? "does not exist" : "cannot be opened");
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) return fail("cannot be read");
  if (S_ISDIR(st.st_mode)) return fail("is a directory, not a file");
  if (!S_ISREG(st.st_mode)) return fail("is not a regular file");
  if (st.st_size > access.max_bytes) {
    return fail("is " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                std::to_string(access.max_bytes));
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(file.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot be read");
    if (n == 0) break;  // the file shrank while being read
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace

}  // namespace proximity::core
