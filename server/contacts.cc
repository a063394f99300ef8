/// @file
/// ComputeContacts and ComputeSignedDistance: request checks and wire conversion.

#include "server/contacts.h"

#include <string>

#include "server/convert.h"

namespace proximity::server {

namespace {

v1::PenetrationMethod ToWire(core::PenetrationMethod method) {
  switch (method) {
    case core::PenetrationMethod::kConvex:
      return v1::PENETRATION_METHOD_CONVEX;
    case core::PenetrationMethod::kMeshBracket:
      return v1::PENETRATION_METHOD_MESH_BRACKET;
    case core::PenetrationMethod::kPadding:
      return v1::PENETRATION_METHOD_APART;
    case core::PenetrationMethod::kCloud:
      return v1::PENETRATION_METHOD_CLOUD;
  }
  return v1::PENETRATION_METHOD_UNSPECIFIED;
}

}  // namespace

core::Result<core::SceneContactRequest> ToContactRequest(const v1::ComputeContactsRequest& request) {
  core::SceneContactRequest out;
  if (request.max_pairs() > kMaxContactPairs) {
    return core::InvalidArgument("max_pairs must be at most " + std::to_string(kMaxContactPairs) + ", got " +
                                 std::to_string(request.max_pairs()));
  }
  if (request.max_points() > kMaxContactPoints) {
    return core::InvalidArgument("max_points must be at most " + std::to_string(kMaxContactPoints) + ", got " +
                                 std::to_string(request.max_points()));
  }
  if (request.max_pairs() > 0) out.max_pairs = static_cast<int32_t>(request.max_pairs());
  if (request.max_points() > 0) out.max_points = static_cast<int32_t>(request.max_points());
  out.world = !request.exclude_world();
  out.self = !request.exclude_self();
  return out;
}

void ToWire(const core::Scene& scene, const core::SceneContactResult& result, v1::ComputeContactsResponse* out) {
  for (const core::PairPenetration& p : result.pairs) {
    v1::PairContact* c = out->add_contacts();
    ToWire(scene, p.pair, c->mutable_pair());
    c->set_depth(p.depth);
    c->set_depth_lower(p.depth_lower);
    c->set_depth_upper(p.depth_upper);
    ToWire(p.normal_W, c->mutable_normal());
    ToWire(p.p_W_robot, c->mutable_point_robot());
    ToWire(p.p_W_other, c->mutable_point_other());
    for (const core::SceneContactPoint& point : p.points) {
      v1::ContactPoint* w = c->add_points();
      ToWire(point.p_W, w->mutable_position());
      w->set_depth(point.depth);
    }
    c->set_padding(p.padding);
    c->set_method(ToWire(p.method));
    c->set_geometry_pairs(static_cast<uint32_t>(p.geometry_pairs));
  }
  out->set_truncated(result.truncated);
  out->set_within_limits(result.within_limits);
}

void ToWire(const core::Scene& scene, const core::PairSignedDistance& result, v1::ComputeSignedDistanceResponse* out) {
  ToWire(scene, result.pair, out->mutable_pair());
  out->set_distance(result.distance);
  out->set_lower(result.lower);
  out->set_upper(result.upper);
  ToWire(result.normal_W, out->mutable_normal());
  ToWire(result.p_W_robot, out->mutable_point_robot());
  ToWire(result.p_W_other, out->mutable_point_other());
  out->set_allowed(result.allowed);
  out->set_method(ToWire(result.method));
}

}  // namespace proximity::server
