/// @file
/// Pairs of posed geometries: every colliding pair at a state (CLEAR run to the end), and the pairs
/// between two named things. What the contact module measures depths and signed distances on.

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "scene/scene_internal.h"
#include "scene/scene_impl.h"
#include "base/numerics.h"

namespace proximity::core {

using internal::Overlap;
using internal::SceneCacheData;
using internal::SceneImpl;

Result<NearbyPartsResult> SceneImpl::NearbyParts(std::span<const double> q, const NearbyPartsRequest& request,
                                                 SceneCacheData* cache) const {
  NearbyPartsResult result;
  if (Status s = NearbyParts(q, request, cache, &result); !s.ok()) return s.error();
  return result;
}

namespace {

// Growing a box by the horizon and shrinking it back rounds its corners by a few units of the last place
// at the world's extent: box bounds are lowered by that much so that they stay certified.
constexpr double kBoxRounding = RoundingAllowance(4.0 * kWorldExtent);

// A robot geometry's box grown by its padding only (its PoseParts bounds carry the horizon too).
Aabb Shrunk(const Aabb& b, double horizon) {
  const Vec3 h = Vec3::Constant(horizon);
  return Aabb{b.min + h, b.max - h};
}

// The certified lower bound on two boxes' distance.
double BoxBound(const Aabb& a, const Aabb& b) { return std::max(0.0, AabbDistance(a, b) - kBoxRounding); }

// How far (m) any point of `now` is from box `then`, at most.
double BoxExcess(const Aabb& now, const Aabb& then) {
  const Vec3 e = (then.min - now.min).cwiseMax(now.max - then.max).cwiseMax(0.0);
  return e.norm();
}

}  // namespace

bool SceneImpl::ListNearbyParts(const NearbyPartsRequest& request, double margin, size_t cap,
                                SceneCacheData* cache) const {
  SceneCacheData::NearbyList& list = cache->nearby_list;
  const int32_t num_parts = static_cast<int32_t>(robot_parts_.size());
  list.scene = 0;
  list.horizon = request.horizon;
  list.margin = margin;
  list.world = request.world;
  list.self = request.self;
  list.boxes.resize(robot_parts_.size());
  for (int32_t i = 0; i < num_parts; ++i) list.boxes[i] = Shrunk(cache->part_bounds[i], request.horizon);
  list.world_pairs.clear();
  list.self_pairs.clear();
  // A pair near now has boxes within the horizon now; each box has moved at most margin / 2 since the
  // list was made, so they were within horizon + margin then (the rounding allowance once more). With
  // no margin the list is what the horizon keeps, as the boxes grown by it (PoseParts) find it.
  const double reach = margin > 0.0 ? request.horizon + margin + kBoxRounding : request.horizon;
  const Vec3 grow = Vec3::Constant(reach);
  const auto full = [&] { return list.world_pairs.size() + list.self_pairs.size() >= cap; };
  if (request.world) {
    for (int32_t i = 0; i < num_parts; ++i) {
      const RobotPart& rp = robot_parts_[i];
      const Aabb& box = list.boxes[i];
      const Aabb query = margin > 0.0 ? Aabb{box.min - grow, box.max + grow} : cache->part_bounds[i];
      const bool stopped = VisitWorldParts(query, [&](int32_t k) {
        const WorldPart& wp = world_parts_[k];
        if (AllowedEntityObject(rp.entity, wp.object)) return false;
        if (BoxBound(box, wp.bounds) > reach) return false;
        list.world_pairs.emplace_back(i, k);
        return full();
      });
      if (stopped) return false;
    }
  }
  if (request.self) {
    for (int32_t s = 0; s < static_cast<int32_t>(self_pairs_.size()); ++s) {
      const SelfPair& sp = self_pairs_[s];
      if (BoxBound(list.boxes[sp.a], list.boxes[sp.b]) > reach) continue;
      list.self_pairs.push_back(s);
      if (full()) return false;
    }
  }
  list.scene = serial_;
  return true;
}

Status SceneImpl::NearbyParts(std::span<const double> q, const NearbyPartsRequest& request, SceneCacheData* cache,
                              NearbyPartsResult* out) const {
  if (!std::isfinite(request.horizon) || request.horizon < 0.0 || request.horizon > kWorldExtent) {
    return InvalidArgument("horizon must be finite and in [0, " + std::to_string(kWorldExtent) + "] m, got " +
                           std::to_string(request.horizon));
  }
  if (request.max_pairs < 1) {
    return InvalidArgument("max_pairs must be >= 1, got " + std::to_string(request.max_pairs));
  }
  // Bounds grown by padding + horizon: a pair whose grown boxes miss each other is farther than the horizon.
  if (Status s = PoseParts(q, cache, request.horizon); !s.ok()) return s;
  NearbyPartsResult& result = *out;
  result.pairs.clear();
  result.truncated = false;
  result.within_limits = robot_->WithinLimits(q);
  result.num_robot_parts = static_cast<int32_t>(robot_parts_.size());
  result.num_world_parts = static_cast<int32_t>(world_parts_.size());
  // The pairs come from the list while every box stays within half the margin of where the list saw it;
  // it is made again when one has moved farther. The margin is a share of the horizon: along a smooth
  // motion a list lasts many states and holds a few more pairs than the horizon keeps. A list that would
  // hold more than four times max_pairs is made without a margin (the horizon's pairs, one beyond
  // max_pairs at most: enough to say the result is truncated).
  const double margin = 0.5 * request.horizon;
  const SceneCacheData::NearbyList& list = cache->nearby_list;
  bool listed = list.scene == serial_ && list.horizon == request.horizon && list.world == request.world &&
                list.self == request.self && list.boxes.size() == robot_parts_.size();
  for (size_t i = 0; listed && i < robot_parts_.size(); ++i) {
    listed = BoxExcess(Shrunk(cache->part_bounds[i], request.horizon), list.boxes[i]) <= 0.5 * list.margin;
  }
  const size_t cap = static_cast<size_t>(request.max_pairs);
  if (!listed && !ListNearbyParts(request, margin, 4 * cap, cache)) (void)ListNearbyParts(request, 0.0, cap + 1, cache);
  auto add = [&](const NearbyPart& p) {
    if (result.pairs.size() >= cap) {
      result.truncated = true;
      return false;
    }
    result.pairs.push_back(p);
    return true;
  };
  for (const auto& [i, k] : list.world_pairs) {
    const RobotPart& rp = robot_parts_[i];
    const WorldPart& wp = world_parts_[k];
    const ObjectPart& part = objects_[wp.object].parts[wp.part];
    const double bound = BoxBound(Shrunk(cache->part_bounds[i], request.horizon), wp.bounds);
    if (bound > request.horizon) continue;
    if (!add({WorldContact(i, wp.object), &rp.geometry, &part.geometry, &cache->X_WG[i], &part.X_WG, rp.padding, i, k,
              bound})) {
      return {};
    }
  }
  for (const int32_t s : list.self_pairs) {
    const SelfPair& sp = self_pairs_[s];
    const RobotPart& a = robot_parts_[sp.a];
    const RobotPart& b = robot_parts_[sp.b];
    // Each box is grown by its own padding, so their distance bounds the clearance beyond both.
    const double bound =
        BoxBound(Shrunk(cache->part_bounds[sp.a], request.horizon), Shrunk(cache->part_bounds[sp.b], request.horizon));
    if (bound > request.horizon) continue;
    if (!add({SelfContact(sp.a, sp.b), &a.geometry, &b.geometry, &cache->X_WG[sp.a], &cache->X_WG[sp.b],
              a.padding + b.padding, sp.a, sp.b, bound})) {
      return {};
    }
  }
  return {};
}

Result<CollidingPartsResult> SceneImpl::CollidingParts(std::span<const double> q, const CollidingPartsRequest& request,
                                                       SceneCacheData* cache) const {
  if (request.max_pairs < 1) {
    return InvalidArgument("max_pairs must be >= 1, got " + std::to_string(request.max_pairs));
  }
  if (Status s = PoseParts(q, cache); !s.ok()) return s.error();
  CollidingPartsResult result;
  result.within_limits = robot_->WithinLimits(q);
  // Adds a colliding pair; false once the cap is reached (the pair is then the one that did not fit).
  auto add = [&](const StateContact& pair, const Geometry& a, const RigidTransform& X_a, const Geometry& b,
                 const RigidTransform& X_b, double padding) {
    if (static_cast<int32_t>(result.pairs.size()) >= request.max_pairs) {
      result.truncated = true;
      return false;
    }
    result.pairs.push_back({pair, &a, X_a, &b, X_b, padding, false});
    return true;
  };
  const int32_t num_parts = static_cast<int32_t>(robot_parts_.size());
  if (request.world && !broad_.empty()) {
    for (int32_t i = 0; i < num_parts; ++i) {
      if (request.stop()) {
        result.stopped = true;
        return result;
      }
      const RobotPart& rp = robot_parts_[i];
      const bool full = VisitWorldParts(cache->part_bounds[i], [&](int32_t k) {
        const WorldPart& wp = world_parts_[k];
        if (AllowedEntityObject(rp.entity, wp.object)) return false;
        const ObjectPart& part = objects_[wp.object].parts[wp.part];
        ++result.pairs_tested;
        if (!PairCollides(rp.geometry, cache->X_WG[i], part.geometry, part.X_WG, rp.padding, &result.stats,
                          HullCache(cache, WorldPairCache(i, k)))) {
          return false;
        }
        return !add(WorldContact(i, wp.object), rp.geometry, cache->X_WG[i], part.geometry, part.X_WG, rp.padding);
      });
      if (full) return result;
    }
  }
  if (request.self) {
    for (size_t s = 0; s < self_pairs_.size(); ++s) {
      if ((s & 63) == 0 && request.stop()) {
        result.stopped = true;
        return result;
      }
      const SelfPair& sp = self_pairs_[s];
      const RobotPart& a = robot_parts_[sp.a];
      const RobotPart& b = robot_parts_[sp.b];
      const double padding = a.padding + b.padding;
      if (!Overlap(cache->part_bounds[sp.a], cache->part_bounds[sp.b])) continue;
      if (sp.clearance_map != nullptr && SelfPairClearance(sp, q, padding, &cache->map_fill) > padding) continue;
      ++result.pairs_tested;
      if (!PairCollides(a.geometry, cache->X_WG[sp.a], b.geometry, cache->X_WG[sp.b], padding, &result.stats,
                        HullCache(cache, SelfPairCache(s)))) {
        continue;
      }
      if (!add(SelfContact(sp.a, sp.b), a.geometry, cache->X_WG[sp.a], b.geometry, cache->X_WG[sp.b], padding)) {
        return result;
      }
    }
  }
  return result;
}

Result<std::vector<PosedPartPair>> SceneImpl::NamedParts(std::string_view a, std::string_view b,
                                                         std::span<const double> q, SceneCacheData* cache,
                                                         std::string_view field_a, std::string_view field_b) const {
  // A name as an entity (link index, or num_links + attached index) or a world object.
  struct Named {
    int32_t entity = -1;
    int32_t object = -1;
  };
  const int32_t num_links = static_cast<int32_t>(robot_->links().size());
  auto resolve = [&](std::string_view name, std::string_view field) -> Result<Named> {
    if (const Result<LinkIndex> link = robot_->FindLink(name); link.ok()) return Named{link.value(), -1};
    for (size_t i = 0; i < attached_.size(); ++i) {
      if (attached_[i].id == name) return Named{num_links + static_cast<int32_t>(i), -1};
    }
    for (size_t i = 0; i < objects_.size(); ++i) {
      if (objects_[i].id == name) return Named{-1, static_cast<int32_t>(i)};
    }
    return InvalidArgument(std::string(field) + " '" + std::string(name) +
                           "' is neither a link, an attached object nor a world object of the scene");
  };
  Result<Named> na = resolve(a, field_a);
  if (!na.ok()) return na.error();
  Result<Named> nb = resolve(b, field_b);
  if (!nb.ok()) return nb.error();
  Named first = na.value(), second = nb.value();
  if (first.entity < 0 && second.entity < 0) {
    return InvalidArgument(std::string(field_a) + " and " + std::string(field_b) +
                           " are both world objects; one side must be a link or an attached object");
  }
  if (first.entity < 0) std::swap(first, second);
  if (first.entity == second.entity) {
    return InvalidArgument(std::string(field_a) + " and " + std::string(field_b) + " name the same thing, '" +
                           std::string(a) + "'");
  }
  if (Status s = PoseParts(q, cache); !s.ok()) return s.error();
  std::vector<PosedPartPair> pairs;
  bool first_has_parts = false, second_has_parts = second.object >= 0 && !objects_[second.object].parts.empty();
  for (int32_t i = 0; i < static_cast<int32_t>(robot_parts_.size()); ++i) {
    const RobotPart& rp = robot_parts_[i];
    if (rp.entity != first.entity) continue;
    first_has_parts = true;
    if (second.object >= 0) {
      const WorldObject& object = objects_[second.object];
      for (const ObjectPart& part : object.parts) {
        pairs.push_back({WorldContact(i, second.object), &rp.geometry, cache->X_WG[i], &part.geometry, part.X_WG,
                         rp.padding, AllowedEntityObject(rp.entity, second.object)});
      }
      continue;
    }
    for (int32_t j = 0; j < static_cast<int32_t>(robot_parts_.size()); ++j) {
      const RobotPart& other = robot_parts_[j];
      if (other.entity != second.entity) continue;
      second_has_parts = true;
      pairs.push_back({SelfContact(i, j), &rp.geometry, cache->X_WG[i], &other.geometry, cache->X_WG[j],
                       rp.padding + other.padding, AllowedEntities(rp.entity, other.entity)});
    }
  }
  if (!first_has_parts || !second_has_parts) {
    const bool first_empty = !first_has_parts;
    const std::string_view name = first_empty ? (first.entity == na.value().entity ? a : b)
                                              : (first.entity == na.value().entity ? b : a);
    std::string message(name);
    message += " has no collision geometry";
    return InvalidArgument(std::move(message));
  }
  return pairs;
}

}  // namespace proximity::core
