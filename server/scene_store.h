#pragma once
/// @file
/// Loaded scenes: how a CreateSceneRequest or an UpdateWorldRequest becomes an immutable scene with a
/// content-hash id, and the registry that holds them (id -> entry, shared_mutex). Queries copy an
/// entry's shared_ptr and compute without any lock held.

#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proximity/core/result.h"
#include "proximity/core/scene.h"
#include "proximity/v1/proximity.pb.h"
#include "server/convert.h"
#include "server/default_scene.h"

namespace proximity::server {

/// A loaded scene: immutable once made, shared by queries in flight.
struct SceneEntry {
  std::string id;
  std::shared_ptr<const core::Scene> scene;
  v1::SceneInfo info;
  /// Per world object: its frame and its parts' poses in it, for MOVE.
  std::map<std::string, ObjectFrame, std::less<>> frames;
};

/// Builds the scene a CreateScene request describes and its content id. Errors are core errors about
/// the request's content (map them with ErrorScope::kSceneContent); they name the field at fault.
/// Server files (urdf_path, srdf_path, meshes, mesh_file parts) are read under `files`.
[[nodiscard]] core::Result<std::shared_ptr<const SceneEntry>> BuildScene(const v1::CreateSceneRequest& request,
                                                                         const core::FileAccess& files = {});

/// Applies an UpdateWorld request (ADD, REMOVE, MOVE) to `parent`: a new entry with a new id (the hash
/// of the parent's id and the update), version + 1 and parent_scene_id set. `parent` is untouched.
[[nodiscard]] core::Result<std::shared_ptr<const SceneEntry>> UpdateScene(const SceneEntry& parent,
                                                                          const v1::UpdateWorldRequest& request,
                                                                          const core::FileAccess& files = {});

/// The default workcell as a CreateScene request, so its id is a content hash like any scene's.
v1::CreateSceneRequest DefaultSceneRequest(const DefaultSceneSpec& spec);

/// Scenes by id; "default" is an alias for the built-in scene's id.
class SceneRegistry {
 public:
  static constexpr std::string_view kDefaultAlias = "default";

  /// The entry for `id` (or the alias), or null.
  std::shared_ptr<const SceneEntry> Find(std::string_view id) const;
  /// Inserts `entry` unless its id is loaded; returns the loaded entry and whether it was inserted.
  std::pair<std::shared_ptr<const SceneEntry>, bool> Insert(std::shared_ptr<const SceneEntry> entry);
  /// Removes `id` (or the alias's scene); false when it is not loaded.
  bool Erase(std::string_view id);
  /// Every loaded scene, ordered by id.
  std::vector<std::shared_ptr<const SceneEntry>> List() const;
  size_t size() const;
  void set_default_id(std::string id);

 private:
  std::string_view Resolve(std::string_view id) const;  // caller holds mutex_

  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const SceneEntry>, std::less<>> scenes_;
  std::string default_id_;
};

}  // namespace proximity::server
