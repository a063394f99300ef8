#pragma once
// A brute-force oracle of a scene built from its description directly (the robot model, the world, the
// allowed pairs), not from the scene's internal parts, for the scene query tests: the clearance and the
// contacts at q, with padding.

#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "core/scene_fixtures.h"
#include "core/test_util.h"
#include "proximity/core/scene/scene.h"
#include "base/numerics.h"
#include "bvh/bvh.h"
#include "narrowphase/convex.h"

namespace proximity::core {

// A link geometry as the oracle sees it: its mesh or primitive alone, nothing found at load.
inline Geometry OracleGeometry(const LinkGeometry& g) {
  Geometry out;
  switch (g.type) {
    case ShapeType::kMesh:
      out.mesh = g.mesh;
      break;
    case ShapeType::kBox:
      out.shape = Box{0.5 * g.box_size};
      break;
    case ShapeType::kCylinder:
      out.shape = Cylinder{g.radius, 0.5 * g.length};
      break;
    case ShapeType::kSphere:
      out.shape = Sphere{Vec3::Zero(), g.radius};
      break;
  }
  return out;
}

// One posed robot geometry as the oracle sees it: its name for the allowed-collision checks, its link,
// and its padding.
struct OraclePart {
  std::string name;  // link name or attached object id
  int32_t link;
  Geometry geometry;
  RigidTransform X_WG;
  double padding;
};

// Every robot geometry (links and attached objects) posed at q, straight from the description.
inline std::vector<OraclePart> PoseOracle(const SceneDescription& d, std::span<const double> q) {
  const std::vector<RigidTransform> X_WL = testing::ValueOrFail(d.robot->ForwardKinematics(q, d.X_WB));
  if (X_WL.empty()) return {};  // the failure is reported
  auto pad = [&](const std::string& name) {
    for (const auto& [n, v] : d.padding)
      if (n == name) return v;
    return d.default_padding;
  };
  std::vector<OraclePart> parts;
  for (int32_t l = 0; l < d.robot->num_links(); ++l) {
    for (const LinkGeometry& g : d.robot->link(l).geometries) {
      parts.push_back({d.robot->link(l).name, l, OracleGeometry(g), X_WL[l] * g.X_LG, pad(d.robot->link(l).name)});
    }
  }
  for (const AttachedObject& a : d.attached) {
    const int32_t l = d.robot->FindLink(a.link).value();
    for (const AttachedPart& p : a.parts) parts.push_back({a.id, l, p.geometry, X_WL[l] * p.X_LG, pad(a.id)});
  }
  return parts;
}

inline bool Allowed(const SceneDescription& d, const OraclePart& a, const std::string& other_name, int32_t other_link) {
  if (a.name == other_name) return true;
  for (const auto& [x, y] : d.allowed_pairs)
    if ((x == a.name && y == other_name) || (y == a.name && x == other_name)) return true;
  const bool a_link = a.link >= 0 && d.robot->link(a.link).name == a.name;
  const bool b_link = other_link >= 0 && d.robot->link(other_link).name == other_name;
  if (a_link && b_link) return d.robot->AllowedCollision(a.link, other_link);
  for (const AttachedObject& att : d.attached) {
    const std::string& link_side = att.id == a.name ? other_name : a.name;
    if (att.id != a.name && att.id != other_name) continue;
    if (att.link == link_side) return true;
    for (const std::string& t : att.touch_links)
      if (t == link_side) return true;
  }
  return false;
}

double ExactDistance(const Geometry& a, const RigidTransform& X_a, const Geometry& b, const RigidTransform& X_b) {
  const DistanceResult r = testing::ValueOrFail(GeometryDistance(a, X_a, b, X_b, {}));
  return r.intersecting ? 0.0 : r.upper_bound;
}

// Brute-force clearance: every pair not allowed, its exact distance minus its padding (at least 0).
struct OracleAnswer {
  double clearance = std::numeric_limits<double>::infinity();
  int pairs = 0;
};

inline OracleAnswer Oracle(const SceneDescription& d, std::span<const double> q, bool world = true, bool self = true) {
  const auto parts = PoseOracle(d, q);
  OracleAnswer out;
  for (size_t i = 0; i < parts.size(); ++i) {
    for (const WorldObject& o : d.objects) {
      if (!world || Allowed(d, parts[i], o.id, -1)) continue;
      for (const ObjectPart& p : o.parts) {
        ++out.pairs;
        out.clearance = std::min(out.clearance, std::max(0.0, ExactDistance(parts[i].geometry, parts[i].X_WG,
                                                                            p.geometry, p.X_WG) - parts[i].padding));
      }
    }
    for (size_t j = i + 1; self && j < parts.size(); ++j) {
      if (parts[i].link == parts[j].link && parts[i].name == parts[j].name) continue;
      if (Allowed(d, parts[i], parts[j].name, parts[j].name == d.robot->link(parts[j].link).name ? parts[j].link : -1))
        continue;
      ++out.pairs;
      const double pad = parts[i].padding + parts[j].padding;
      out.clearance = std::min(out.clearance, std::max(0.0, ExactDistance(parts[i].geometry, parts[i].X_WG,
                                                                          parts[j].geometry, parts[j].X_WG) - pad));
    }
  }
  return out;
}

constexpr double kRel = 1e-9;

// Positive controls ("the sample contained a colliding state, so that branch was tested") hold at the
// full case counts of the Release run; the sanitizer builds run a quarter of the cases to check memory
// and undefined behaviour, where such a control may see none.
#define EXPECT_SEEN(count)                \
  if (testing::kSanitizedSlowdown != 1) { \
  } else                                  \
    EXPECT_GT(count, 0)

inline void ExpectBrackets(const SceneDistanceResult& r, double truth, const std::string& what) {
  EXPECT_LE(r.lower_bound, truth * (1 + kRel) + 1e-12) << what;
  EXPECT_GE(r.upper_bound, truth * (1 - kRel) - 1e-12) << what;
}

// A little padding everywhere and more on one link of the arm. Link pairs that are always checked
// can sit a few millimetres apart (the KR5's forearm and palm), so the default stays small enough
// that free states remain.
inline SceneDescription PaddedVariant(SceneDescription d) {
  d.default_padding = 0.002;
  d.padding.emplace_back(d.robot->link(2).name, 0.03);
  return d;
}

// The rounding allowance of a scene query's pairs (RoundingAllowance): these scenes lie within 2 m of the
// origin, so each pair's translations and reaches add up to less than 10 m.
inline const double kSceneRounding = RoundingAllowance(10.0);

}  // namespace proximity::core
