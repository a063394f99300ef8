#pragma once
/// @file
/// Scene ids: the hex of a 128-bit content hash (XXH3-128), so that the same content gets the same id
/// on any replica. The hash covers the request's deterministic protobuf serialization (map entries
/// sorted) and the bytes of every server-side file the scene was built from (URDF, SRDF, meshes).

#include <xxhash.h>

#include <memory>
#include <string>
#include <string_view>

#include "proximity/core/base/file_access.h"
#include "proximity/core/base/result.h"

namespace google::protobuf {
class MessageLite;
}

namespace proximity::server {

/// Accumulates a scene's content and yields its id.
class SceneHasher {
 public:
  SceneHasher();
  ~SceneHasher();
  SceneHasher(const SceneHasher&) = delete;
  SceneHasher& operator=(const SceneHasher&) = delete;

  /// A labelled, length-prefixed piece of content (labels keep differently typed inputs apart).
  void Add(std::string_view label, std::string_view bytes);
  /// A message in deterministic serialization.
  void Add(std::string_view label, const google::protobuf::MessageLite& message);
  /// The bytes of a server file, read under `access`; NotFound naming `path` when it cannot be read.
  [[nodiscard]] core::Status AddFile(const std::string& path, const core::FileAccess& access = {});

  /// 32 lower-case hex digits.
  std::string Id() const;

 private:
  XXH3_state_t* state_;
};

/// Reads a whole regular file under `access` (core::ReadFileUnder); NotFound naming the path otherwise.
[[nodiscard]] core::Result<std::string> ReadFileBytes(const std::string& path, const core::FileAccess& access = {});

}  // namespace proximity::server
