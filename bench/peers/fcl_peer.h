#pragma once
// Conversions to FCL 0.7, the independent peer of the differential tests and the benchmarks. Only
// tests and benchmarks include this; the product never links FCL.

#include <fcl/fcl.h>

#include <memory>
#include <vector>

#include "proximity/core/mesh/mesh.h"
#include "proximity/core/base/types.h"

namespace proximity::peers {

/// The mesh as an FCL hierarchy with bounding volume BV (OBBRSSd, RSSd, ...).
template <class BV>
std::shared_ptr<fcl::BVHModel<BV>> FclMesh(const core::TriangleMesh& m) {
  auto model = std::make_shared<fcl::BVHModel<BV>>();
  std::vector<fcl::Vector3d> vertices(m.vertices.begin(), m.vertices.end());
  std::vector<fcl::Triangle> triangles;
  triangles.reserve(m.triangles.size());
  for (const auto& t : m.triangles) triangles.emplace_back(t[0], t[1], t[2]);
  model->beginModel();
  model->addSubModel(vertices, triangles);
  model->endModel();
  return model;
}

/// The pose as an FCL transform.
inline fcl::Transform3d FclPose(const core::RigidTransform& X) {
  fcl::Transform3d T = fcl::Transform3d::Identity();
  T.linear() = X.R;
  T.translation() = X.p;
  return T;
}

}  // namespace proximity::peers
