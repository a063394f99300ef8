#pragma once
/// @file
/// Which files on this machine a loader may open, and the one way every loader reads them.
///
/// An in-process user owns the machine, so the default opens any path. A service confines loading to
/// the directories its operator allowed: a path is resolved (symlinks, "..") before it is compared
/// with the roots, only regular files are read (opened non-blocking, so a FIFO or a device never
/// blocks a thread), no file larger than max_bytes is read, and every failure gives the same message
/// naming only the path as the caller gave it, so that errors reveal nothing of the file system.

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "proximity/core/base/result.h"

namespace proximity::core {

/// The bytes of every file read through a FileAccess that holds it, by path as the caller gave it:
/// the second read of a path returns what the first one read. A service that hashes a request's files
/// for its content id and then builds the scene from them reads each file once, so a file changed in
/// between cannot give a scene whose content differs from its id.
struct FileSnapshot {
  std::mutex mutex;
  std::map<std::string, std::string> files;
};

/// Where loaders may read files from.
struct FileAccess {
  /// Only files under `roots` are opened (after resolving symlinks and ".."); false opens any path.
  bool confined = false;
  /// Directories files may come from when confined; resolved by Confined().
  std::vector<std::string> roots;
  /// Largest file read, bytes.
  int64_t max_bytes = int64_t{1} << 30;
  /// When set, each path is read from the file system once and its bytes kept here (FileSnapshot).
  std::shared_ptr<FileSnapshot> snapshot;

  /// A confined policy over `roots` (each resolved to its canonical path); an error names a root that
  /// is not an existing directory.
  [[nodiscard]] static Result<FileAccess> Confined(const std::vector<std::string>& roots, int64_t max_bytes);
  /// Whether `path` (resolved) lies under a root, or the policy is not confined. Never opens the file.
  bool Allows(const std::string& path) const;
};

/// Reads the whole regular file at `path` under `access`. Unconfined, errors name the cause (not found,
/// a directory, not a regular file, too large, unreadable); confined, every failure is one NotFound
/// message naming `path` and the reasons it may have.
[[nodiscard]] Result<std::string> ReadFileUnder(const FileAccess& access, const std::string& path);

}  // namespace proximity::core
