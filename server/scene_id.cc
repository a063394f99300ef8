#include "server/scene_id.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/message_lite.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

namespace proximity::server {

SceneHasher::SceneHasher() : state_(XXH3_createState()) { XXH3_128bits_reset(state_); }

SceneHasher::~SceneHasher() { XXH3_freeState(state_); }

void SceneHasher::Add(std::string_view label, std::string_view bytes) {
  const auto put_sized = [this](std::string_view s) {
    const uint64_t n = s.size();
    XXH3_128bits_update(state_, &n, sizeof n);
    XXH3_128bits_update(state_, s.data(), s.size());
  };
  put_sized(label);
  put_sized(bytes);
}

void SceneHasher::Add(std::string_view label, const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&out);
  }
  Add(label, bytes);
}

core::Status SceneHasher::AddFile(const std::string& path, const core::FileAccess& access) {
  auto bytes = ReadFileBytes(path, access);
  if (!bytes.ok()) return bytes.error();
  Add("file:" + path, bytes.value());
  return {};
}

std::string SceneHasher::Id() const {
  const XXH128_hash_t h = XXH3_128bits_digest(state_);
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

core::Result<std::string> ReadFileBytes(const std::string& path, const core::FileAccess& access) {
  return core::ReadFileUnder(access, path);
}

}  // namespace proximity::server
