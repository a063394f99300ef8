#pragma once
/// @file
/// Loaded scenes: how a CreateSceneRequest or an UpdateWorldRequest becomes an immutable scene with a
/// content-hash id, and the registry that holds them (id -> entry, shared_mutex). Queries copy an
/// entry's shared_ptr and compute without any lock held.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/contact/tracker.h"
#include "proximity/core/scene/scene.h"
#include "proximity/v1/proximity.pb.h"
#include "server/convert.h"
#include "proximity/default_scene/default_scene.h"

namespace proximity::server {

/// A loaded scene: immutable once made, shared by queries in flight.
struct SceneEntry {
  std::string id;
  std::shared_ptr<const core::Scene> scene;
  v1::SceneInfo info;
  /// Per world object: its frame and its parts' poses in it, for MOVE.
  std::map<std::string, ObjectFrame, std::less<>> frames;
  /// The id of the scene this one was created as (itself, or the root of its UpdateWorld chain): the
  /// versions of one scene share it.
  std::string lineage;
  /// Bytes of the robot's meshes and hulls (shared by every scene of the same robot model), and of
  /// everything else the entry holds (world and attached geometry, the scene itself).
  int64_t robot_bytes = 0;
  int64_t world_bytes = 0;
  /// When the entry was last looked up (steady clock ticks), for least-recently-used eviction.
  mutable std::atomic<int64_t> last_used{0};
  /// The scene's V-Clip polyhedra for clearance tracking, made at the first track query on this version
  /// (TrackingGeometryOf) and shared by every session's tracker on it; their bytes count with the entry's
  /// from then on.
  mutable std::once_flag tracking_once;
  mutable std::shared_ptr<const core::TrackingGeometry> tracking;
  mutable std::atomic<int64_t> tracking_bytes{0};
};

/// The entry's tracking geometry (core::TrackingGeometry::Build on its scene), built once whoever asks
/// first (others wait for it) and kept with the entry. Null when it cannot be built (a broken hull): a
/// tracker then builds what it can for itself. `built` (when given) says whether this call built it.
std::shared_ptr<const core::TrackingGeometry> TrackingGeometryOf(const SceneEntry& entry, bool* built = nullptr);

/// Builds the scene a CreateScene request describes and its content id. Errors are core errors about
/// the request's content (map them with ErrorScope::kSceneContent); they name the field at fault.
/// Server files (urdf_path, srdf_path, meshes, mesh_file parts) are read under `files`. `id`: the
/// request's CreateSceneId when the caller computed it already ("" computes it). `limits` caps the robot
/// and the scene before they are built (RESOURCE_EXHAUSTED naming the cap); `stop` is asked between
/// links and pairs while building, which then ends with a kStopped error.
[[nodiscard]] core::Result<std::shared_ptr<const SceneEntry>> BuildScene(const v1::CreateSceneRequest& request,
                                                                         const core::FileAccess& files = {},
                                                                         std::string id = "",
                                                                         const core::BuildLimits& limits = {},
                                                                         core::Interrupt stop = {});
/// The content id of the scene a CreateScene request describes, without building it: a hash of the
/// request, the robot's URDF and SRDF text and the bytes of every mesh file the robot and the world
/// name. Reads the files under `files`; errors as BuildScene's for missing or forbidden files.
[[nodiscard]] core::Result<std::string> CreateSceneId(const v1::CreateSceneRequest& request,
                                                      const core::FileAccess& files = {},
                                                      const core::BuildLimits& limits = {});
/// The content id of the scene an UpdateWorld request makes of `parent`, without building it.
[[nodiscard]] core::Result<std::string> UpdateSceneId(const SceneEntry& parent, const v1::UpdateWorldRequest& request,
                                                      const core::FileAccess& files = {});

/// Applies an UpdateWorld request (ADD, REMOVE, MOVE) to `parent`: a new entry with a new id (the hash
/// of the parent's id and the update), version + 1 and parent_scene_id set. `parent` is untouched.
[[nodiscard]] core::Result<std::shared_ptr<const SceneEntry>> UpdateScene(const SceneEntry& parent,
                                                                          const v1::UpdateWorldRequest& request,
                                                                          const core::FileAccess& files = {},
                                                                          std::string id = "");

/// The default workcell as a CreateScene request, so its id is a content hash like any scene's.
v1::CreateSceneRequest DefaultSceneRequest(const scenes::DefaultSceneSpec& spec);

/// What the registry may hold (0: no limit). Scenes beyond them are evicted least recently used
/// first; the built-in scene never is.
struct RegistryLimits {
  int64_t max_scenes = 0;        ///< Scenes loaded at once.
  int64_t max_memory_bytes = 0;  ///< Bytes held by scenes (each robot model counted once).
  int64_t max_versions = 0;      ///< Versions of one scene (its UpdateWorld chain) kept at once.
  /// A named client's share: scenes it owns, and their bytes (each robot model counted once per client;
  /// a scene several clients own counts in full for each). When either is set, a named client's scene
  /// makes room only by evicting that client's own scenes, for these limits and the ones above alike.
  int64_t max_scenes_per_client = 0;
  int64_t max_memory_bytes_per_client = 0;

  bool per_client() const { return max_scenes_per_client > 0 || max_memory_bytes_per_client > 0; }
};

/// What a named client owns now (SceneRegistry::Shares).
struct ClientShare {
  std::string client;
  int64_t scenes = 0;
  int64_t bytes = 0;  ///< Each robot model counted once.
};

/// Whether `name` may name a scene: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or
/// digit, not "default" and not shaped like a scene id (32 hex digits). INVALID_ARGUMENT naming `field`.
core::Status CheckSceneName(std::string_view name, std::string_view field = "name");

/// Scenes by id; "default" is an alias for the built-in scene's id, and scenes may have names (aliases)
/// that every lookup accepts in place of the id.
class SceneRegistry {
 public:
  static constexpr std::string_view kDefaultAlias = "default";

  SceneRegistry() = default;
  explicit SceneRegistry(RegistryLimits limits) : limits_(limits) {}

  /// The entry for `id` (or the alias), or null; marks it used.
  std::shared_ptr<const SceneEntry> Find(std::string_view id) const;
  /// Inserts `entry` unless its id is loaded; returns the loaded entry and whether it was inserted.
  /// To stay within the limits it first evicts the least recently used scenes (never the built-in
  /// one, never `entry`'s parent chain's newest); when that cannot make room, RESOURCE_EXHAUSTED
  /// naming the limit, and nothing changes. `evicted` (when given) counts the scenes evicted (unloaded).
  ///
  /// `client`, when not empty, is the named client that creates the scene: it becomes one of the
  /// scene's owners (also when the scene was loaded already). With per-client limits set
  /// (RegistryLimits::per_client), room for it is made only among the client's own scenes, least
  /// recently used first: a scene other clients also own stays loaded (the client just stops owning
  /// it), and one only the client owns is unloaded. The global limits then evict no other client's
  /// scene either: RESOURCE_EXHAUSTED naming the limit instead.
  core::Result<std::pair<std::shared_ptr<const SceneEntry>, bool>> Insert(std::shared_ptr<const SceneEntry> entry,
                                                                         int64_t* evicted = nullptr,
                                                                         std::string_view client = {});
  /// Bytes held by the loaded scenes (each robot model counted once).
  int64_t memory_bytes() const;
  /// Removes `id` (or the alias's scene); false when it is not loaded.
  bool Erase(std::string_view id);
  /// What Release did.
  enum class ReleaseOutcome { kReleased, kErased, kNoScene, kNotOwner };
  /// The named client `client` stops owning the scene `id` (or a name's scene): kReleased, or kErased when
  /// no owner remains (the scene is removed with its names); kNotOwner when the client does not own it
  /// (the built-in scene belongs to nobody), and nothing changes.
  ReleaseOutcome Release(std::string_view id, std::string_view client);
  /// What each named client that owns a scene owns, in name order.
  std::vector<ClientShare> Shares() const;
  /// Every loaded scene, ordered by id.
  std::vector<std::shared_ptr<const SceneEntry>> List() const;
  size_t size() const;
  void set_default_id(std::string id);

  /// What AddName and RemoveName did.
  enum class NameOutcome { kOk, kNoScene, kTaken, kNotHeld };
  /// Gives the scene `scene` (an id or a name) the name `name` (checked with CheckSceneName first). When
  /// another scene holds it: kTaken (its id in *holder) unless `reassign`, which moves the name.
  NameOutcome AddName(std::string_view scene, const std::string& name, bool reassign, std::string* holder);
  /// Takes `name` away from `scene`.
  NameOutcome RemoveName(std::string_view scene, std::string_view name);
  /// Moves every name the scene `from` holds to the scene `to` (ids), in one step; nothing when `to`
  /// is not loaded.
  void MoveNames(std::string_view from, std::string_view to);
  /// The id of the scene `name` names, or "" when none does.
  std::string NameHolder(std::string_view name) const;
  /// The entry's info with its current names filled in.
  v1::SceneInfo Info(const SceneEntry& entry) const;

 private:
  std::string_view Resolve(std::string_view id) const;  // caller holds mutex_
  int64_t MemoryLocked() const;                          // caller holds mutex_
  void RemoveLocked(const std::string& id);              // the scene, its names and owners; caller holds mutex_

  RegistryLimits limits_;
  mutable std::shared_mutex mutex_;
  std::map<std::string, std::shared_ptr<const SceneEntry>, std::less<>> scenes_;
  std::string default_id_;
  std::map<std::string, std::string, std::less<>> names_;  // name -> id
  // id -> the named clients owning it (a scene no named client owns is absent).
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> owners_;
};

}  // namespace proximity::server
