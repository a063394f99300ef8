#pragma once
// Self-clearance maps: certified lower bounds on the distance between two link geometries of a robot
// whose relative pose depends on at most two revolute joints (the links of a wrist), on a grid over
// those joints. A cell holds the distance between the geometries' convex stand-ins at its grid point
// less the most the pair can move relative to each other between that point and any configuration
// nearer to it than to the others, so it bounds the distance everywhere in the cell; for two meshes
// closer than that, the geometries' distance less the loss, or a walk of their hierarchies that lowers
// each pair of nodes by those nodes' own motion over the cell (internal::SweptDistanceLowerBound: near
// a joint's axis, where links meet over it, points move far less than the loss assumes). Cells are filled
// ahead of the queries (SelfClearanceFill) or on first use, and kept by a SelfClearanceMaps object
// (proximity/core/scene/self_clearance_maps.h) for every scene that shares it.
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>
#include <utility>

#include "bvh/bvh.h"
#include "bvh/sdf.h"
#include "proximity/core/scene/self_clearance_maps.h"

namespace proximity::core::internal {

struct SelfClearanceMap {
  uint64_t serial = 0;                // unique over the process (a warm start never outlives its map)
  int32_t dims = 0;                   // 1 or 2 joints
  std::array<int32_t, 2> active{};    // their entries in q
  std::array<double, 2> lower{};      // grid point i of dimension d: lower[d] + i * step[d]
  std::array<double, 2> step{};
  std::array<int32_t, 2> count{};     // grid points per dimension (>= 2), spanning the joint's limits
  double loss = 0.0;                  // relative motion bound over half a step in every dimension
  std::array<double, 2> radius{};     // relative motion bound per radian of each joint (m)
  std::array<int32_t, 2> joint{};     // the joints (RobotModel::joint)
  std::array<int32_t, 2> side{};      // 0: the joint moves the pair's first part, 1: its second
  bool hulls_settle = true;           // the convex stand-ins settle enough cells to be asked first
  // The fill ahead of the queries (Scene::FillSelfClearanceMaps): kUnfilled, kClaimed by a fill in
  // progress, or kFilled (every cell settled or proven open by the geometries themselves).
  static constexpr int32_t kUnfilled = 0, kClaimed = 1, kFilled = 2;
  mutable std::atomic<int32_t> fill{kUnfilled};
  std::unique_ptr<std::atomic<float>[]> cells;  // bound (m, >= 0, rounded down); NaN until filled; negated
                                                // (sign bit set) while open (see Scene::SelfPairClearance)
  // Per cell: a lower bound on the distance at the grid point itself (m, rounded down; 0 until a fill
  // step found one), from which a configuration near the grid point gets a bound finer than the cell's
  // (NearGridBound).
  std::unique_ptr<std::atomic<float>[]> grid;
  // For two meshes, per cell: a pair of leaf triangles (MeshModel::leaf_triangles of a, of b) that meet
  // at the cell's grid point, found when the cell is filled (Witness packs them), or kNoWitness. CLEAR
  // in the cell tests that pair first: near the grid point it still meets, and one triangle test proves
  // the contact a hierarchy walk would look for. Null for pairs with a primitive.
  static constexpr uint64_t kNoWitness = ~uint64_t{0};
  std::unique_ptr<std::atomic<uint64_t>[]> witness;
  static uint64_t Witness(int32_t leaf_a, int32_t leaf_b) {
    return uint64_t{static_cast<uint32_t>(leaf_a)} << 32 | static_cast<uint32_t>(leaf_b);
  }
  static int32_t WitnessA(uint64_t w) { return static_cast<int32_t>(static_cast<uint32_t>(w >> 32)); }
  static int32_t WitnessB(uint64_t w) { return static_cast<int32_t>(static_cast<uint32_t>(w)); }

  // The distance at a grid point that settles its cell: the loss and a quarter more (the cell then
  // holds at least a quarter of the loss).
  double SettledBy() const { return 1.25 * loss; }

  int64_t num_cells() const { return dims == 1 ? count[0] : int64_t{count[0]} * count[1]; }
  // Bytes of the cells and witnesses.
  int64_t bytes() const {
    const int64_t per_cell =
        2 * int64_t{sizeof(std::atomic<float>)} + (witness ? int64_t{sizeof(std::atomic<uint64_t>)} : 0);
    return int64_t{sizeof(SelfClearanceMap)} + num_cells() * per_cell;
  }
  // The cell whose grid point is nearest q, or -1 when a joint value lies off the grid (outside the
  // joint's limits, or NaN).
  int64_t Cell(std::span<const double> q) const {
    int64_t cell = 0;
    int64_t stride = 1;
    for (int32_t d = 0; d < dims; ++d) {
      const double x = (q[static_cast<size_t>(active[d])] - lower[d]) / step[d];
      if (!(x >= -0.5 && x <= static_cast<double>(count[d]) - 0.5)) return -1;
      const int64_t i = std::min<int64_t>(count[d] - 1, static_cast<int64_t>(x + 0.5));
      cell += i * stride;
      stride *= count[d];
    }
    return cell;
  }
  // The cell of grid coordinates c (as Cell numbers them: the first dimension varies fastest), or -1
  // when c lies outside the grid.
  int64_t CellAt(const std::array<int64_t, 2>& c) const {
    int64_t cell = 0;
    for (int32_t d = dims - 1; d >= 0; --d) {
      if (c[d] < 0 || c[d] >= count[d]) return -1;
      cell = cell * count[d] + c[d];
    }
    return cell;
  }
  // A lower bound on the pair's distance at q, in cell c, from the bound at c's grid point less the most
  // q's own joint values move the pair from there (the cell's bound takes its farthest point instead);
  // <= 0 when the grid point has none.
  double NearGridBound(int64_t c, std::span<const double> q) const {
    const double at_grid = static_cast<double>(grid[c].load(std::memory_order_relaxed));
    if (!(at_grid > 0.0)) return 0.0;
    double values[2];
    GridPoint(c, values);
    double move = 0.0;
    for (int32_t d = 0; d < dims; ++d) move += radius[d] * std::abs(q[static_cast<size_t>(active[d])] - values[d]);
    return at_grid - move * (1.0 + 1e-9);
  }
  // The joint values of cell c's grid point.
  void GridPoint(int64_t c, double* values) const {
    for (int32_t d = 0; d < dims; ++d) {
      values[d] = lower[d] + static_cast<double>(c % count[d]) * step[d];
      c /= count[d];
    }
  }
};

// The maps of one robot model, by (link a, geometry index in a, link b, geometry index in b). Held by a
// SelfClearanceMaps object for every scene that shares it; a pair no map suits is remembered as null.
class SelfClearanceMemo {
 public:
  template <class Make>
  const SelfClearanceMap* Get(const std::array<int32_t, 4>& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = maps_.find(key);
    if (it == maps_.end()) it = maps_.emplace(key, make()).first;
    return it->second.get();
  }
  // Maps made (null entries not counted) and their bytes.
  int64_t num_maps() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t n = 0;
    for (const auto& [key, map] : maps_) n += map != nullptr;
    return n;
  }
  int64_t bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t total = 0;
    for (const auto& [key, map] : maps_) total += map != nullptr ? map->bytes() : 0;
    return total;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::array<int32_t, 4>, std::unique_ptr<SelfClearanceMap>> maps_;
};

// The signed distance maps (sdf.h) of robot part meshes that scenes holding point clouds test points
// against, one per mesh (by address, while the mesh lives; null for a mesh none can be made of), made by
// the first scene that needs it.
class PartDistanceMaps {
 public:
  template <class Make>
  std::shared_ptr<const SignedDistanceMap> Get(const std::shared_ptr<const MeshModel>& mesh, Make&& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(maps_, [](const auto& kv) { return kv.second.mesh.expired(); });
    auto it = maps_.find(mesh.get());
    if (it == maps_.end()) it = maps_.emplace(mesh.get(), Entry{mesh, make()}).first;
    return it->second.map;
  }
  // Bytes the maps hold.
  int64_t bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    int64_t total = 0;
    for (const auto& [mesh, e] : maps_) total += e.map != nullptr ? static_cast<int64_t>(e.map->memory_bytes()) : 0;
    return total;
  }

 private:
  struct Entry {
    std::weak_ptr<const MeshModel> mesh;
    std::shared_ptr<const SignedDistanceMap> map;
  };
  mutable std::mutex mutex_;
  std::unordered_map<const MeshModel*, Entry> maps_;
};

// What a SelfClearanceMaps object is (SelfClearanceMaps::For makes them): the robot model, its
// self-clearance maps and its parts' distance maps.
class SelfClearanceMapsImpl final : public SelfClearanceMaps {
 public:
  explicit SelfClearanceMapsImpl(std::shared_ptr<const RobotModel> robot) : robot_(std::move(robot)) {}
  std::shared_ptr<const RobotModel> robot_;
  SelfClearanceMemo memo;
  PartDistanceMaps distance_maps;
};

// The self-clearance maps and the parts' distance maps of a SelfClearanceMaps object.
inline SelfClearanceMemo& MemoOf(SelfClearanceMaps& maps) { return static_cast<SelfClearanceMapsImpl&>(maps).memo; }
inline PartDistanceMaps& PartDistanceMapsOf(SelfClearanceMaps& maps) {
  return static_cast<SelfClearanceMapsImpl&>(maps).distance_maps;
}

}  // namespace proximity::core::internal
