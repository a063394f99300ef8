/// @file
/// CLEAR over many configurations (Scene::CheckStates): blocks of kLanes configurations posed across SIMD
/// lanes (lanes.h), one broad-phase walk per robot part and block, and per configuration the exact tests
/// CheckState would make, in the same order, only for the pairs whose boxes meet.

#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "scene/lane_vector.h"
#include "scene/lanes.h"
#include "scene/scene_internal.h"
#include "scene/scene_impl.h"
#include "scene/self_clearance.h"

namespace proximity::core {

using namespace internal;  // lanes.h, scene_internal.h

namespace {

void CopyRowMajor(const Mat3& R, double* out) {
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) out[3 * r + c] = R(r, c);
}

Mat3 LaneMatrix(const LaneVec* R, int k) {
  Mat3 out;
  out << R[0].v[k], R[1].v[k], R[2].v[k], R[3].v[k], R[4].v[k], R[5].v[k], R[6].v[k], R[7].v[k], R[8].v[k];
  return out;
}

RigidTransform LaneTransform(const LaneFrame& X, int k) {
  return {LaneMatrix(X.R, k), Vec3(X.p[0].v[k], X.p[1].v[k], X.p[2].v[k])};
}

// The lanes (bits) whose box overlaps `b` (touching counts, as Overlap).
uint32_t OverlapMask(const LaneBox& a, const Aabb& b) {
  LaneBits ok = (Load(a.min[0]) <= b.max.x()) & (Load(a.max[0]) >= b.min.x());
  ok &= (Load(a.min[1]) <= b.max.y()) & (Load(a.max[1]) >= b.min.y());
  ok &= (Load(a.min[2]) <= b.max.z()) & (Load(a.max[2]) >= b.min.z());
  return LaneMask(ok);
}

uint32_t OverlapMask(const LaneBox& a, const LaneBox& b) {
  LaneBits ok = (Load(a.min[0]) <= Load(b.max[0])) & (Load(b.min[0]) <= Load(a.max[0]));
  ok &= (Load(a.min[1]) <= Load(b.max[1])) & (Load(b.min[1]) <= Load(a.max[1]));
  ok &= (Load(a.min[2]) <= Load(b.max[2])) & (Load(b.min[2]) <= Load(a.max[2]));
  return LaneMask(ok);
}

// The box of the lanes in `mask`, together.
Aabb LaneUnion(const LaneBox& a, uint32_t mask) {
  Aabb out;
  for (uint32_t m = mask; m != 0; m &= m - 1) {
    const int k = std::countr_zero(m);
    out.Extend(
        Aabb{Vec3(a.min[0].v[k], a.min[1].v[k], a.min[2].v[k]), Vec3(a.max[0].v[k], a.max[1].v[k], a.max[2].v[k])});
  }
  return out;
}

}  // namespace

std::string_view BatchInstructionSet() { return LaneTargetName(ActiveLaneTarget()); }

void SceneImpl::BuildLanePlan() {
  auto plan = std::make_shared<LanePlan>();
  plan->num_links = robot_->num_links();
  plan->dof = robot_->num_positions();
  CopyRowMajor(X_WB_.R, plan->R_WB);
  for (int d = 0; d < 3; ++d) plan->p_WB[d] = X_WB_.p[d];
  for (const Joint& j : robot_->joints()) {
    LaneJoint lj;
    lj.type = j.type == JointType::kFixed
                  ? LaneJoint::kFixed
                  : (j.type == JointType::kPrismatic ? LaneJoint::kPrismatic : LaneJoint::kRevolute);
    lj.parent = j.parent_link;
    lj.child = j.child_link;
    lj.active = j.active_index;
    lj.mimic = j.mimic_active_index;
    lj.multiplier = j.mimic_multiplier;
    lj.offset = j.mimic_offset;
    CopyRowMajor(j.X_PJ.R, lj.R_PJ);
    for (int d = 0; d < 3; ++d) {
      lj.p_PJ[d] = j.X_PJ.p[d];
      lj.axis[d] = j.axis_J[d];
    }
    // A coordinate axis (as ApplyJoint tells it): the rotation mixes two columns only.
    const Vec3& a = j.axis_J;
    const int k = a.x() != 0.0 ? 0 : (a.y() != 0.0 ? 1 : 2);
    if ((a[k] == 1.0 || a[k] == -1.0) && a[(k + 1) % 3] == 0.0 && a[(k + 2) % 3] == 0.0) {
      lj.axis_index = k;
      lj.axis_sign = a[k];
    }
    plan->joints.push_back(lj);
    if (robot_->LinkMoves(j.child_link)) plan->moving_joints.push_back(lj);
  }
  for (const RobotPart& rp : robot_parts_) {
    LanePart lp;
    lp.link = rp.link;
    CopyRowMajor(rp.R_LB, lp.R_LB);
    for (int d = 0; d < 3; ++d) {
      lp.p_LBo[d] = rp.p_LBo[d];
      lp.half[d] = rp.local_box.half_extents[d];
    }
    lp.padding = rp.padding;
    plan->parts.push_back(lp);
  }
  for (const WorldPart& wp : world_parts_) {
    std::array<double, 15>& box = plan->world_boxes.emplace_back();
    CopyRowMajor(wp.box.R_MB, box.data());
    for (int d = 0; d < 3; ++d) {
      box[9 + d] = wp.box.center[d];
      box[12 + d] = wp.box.half_extents[d];
    }
  }
  lane_plan_ = std::move(plan);
}

Status SceneImpl::CheckStates(std::span<const double> qs, std::span<StateResult> out, SceneCacheData* cache,
                              double clearance) const {
  if (Status s = CheckClearance(clearance); !s.ok()) return s;
  const size_t dof = static_cast<size_t>(robot_->num_positions());
  if (qs.size() != out.size() * dof) {
    return InvalidArgument("CheckStates: " + std::to_string(qs.size()) + " values for " + std::to_string(out.size()) +
                           " configurations of " + std::to_string(dof) + " joints (" +
                           std::to_string(out.size() * dof) + " expected)");
  }
  // Every configuration before any is checked: a bad one anywhere refuses the batch.
  for (size_t i = 0; i < out.size(); ++i) {
    if (Status s = robot_->CheckConfiguration(qs.subspan(i * dof, dof)); !s.ok()) {
      return Error{s.error().code, "configuration " + std::to_string(i) + ": " + s.error().message};
    }
  }
  PrepareLanes(cache, clearance);
  for (size_t begin = 0; begin < out.size(); begin += kLanes) {
    const auto lanes = static_cast<int32_t>(std::min<size_t>(kLanes, out.size() - begin));
    const double* q[kLanes];
    for (int32_t k = 0; k < kLanes; ++k) q[k] = qs.data() + (begin + static_cast<size_t>(k < lanes ? k : 0)) * dof;
    CheckStateBlock(q, lanes, clearance, clearance, cache, out.data() + begin);
  }
  return {};
}

void SceneImpl::PrepareLanes(SceneCacheData* cache, double clearance) const {
  if (cache->lanes == nullptr) cache->lanes = std::make_shared<LanePoses>();
  LanePoses& poses = *cache->lanes;
  if (poses.links.size() != static_cast<size_t>(lane_plan_->num_links)) {
    poses.links.resize(static_cast<size_t>(lane_plan_->num_links));
    poses.links_scene = 0;
  }
  poses.boxes.resize(robot_parts_.size());
  poses.bounds.resize(robot_parts_.size());
  // Each part's box half extents as CheckState grows them (padding and clearance), the same in every
  // lane and block.
  poses.half.resize(3 * robot_parts_.size());
  for (size_t i = 0; i < robot_parts_.size(); ++i) {
    const RobotPart& rp = robot_parts_[i];
    for (int d = 0; d < 3; ++d) poses.half[3 * i + d] = rp.local_box.half_extents[d] + rp.padding + clearance;
  }
}

void SceneImpl::CheckStateBlock(const double* const* q, int32_t lanes, double clearance, double self_clearance,
                                SceneCacheData* cache, StateResult* out, bool first_colliding) const {
  const LanePlan& plan = *lane_plan_;
  LanePoses& poses = *cache->lanes;
  const LaneKernels& kernels = ActiveLaneKernels();
  // Links that do not move with q keep the frames this scene's last whole pass gave them.
  const std::vector<LaneJoint>& joints = poses.links_scene == serial_ ? plan.moving_joints : plan.joints;
  kernels.pose(joints.data(), static_cast<int32_t>(joints.size()), plan.parts.data(),
               static_cast<int32_t>(plan.parts.size()), plan.R_WB, plan.p_WB, q, clearance, poses.links.data(),
               poses.boxes.data(), poses.bounds.data());
  poses.links_scene = serial_;
  const size_t dof = static_cast<size_t>(plan.dof);
  // Lanes still free; a lane leaves at its first contact, as CheckState returns at it (and, when only the
  // first colliding lane matters, the lanes after it leave with it).
  uint32_t active = (uint32_t{1} << lanes) - 1;
  const auto collided = [&](int k) {
    active &= first_colliding ? (uint32_t{1} << k) - 1 : ~(uint32_t{1} << k);
  };
  for (int32_t k = 0; k < lanes; ++k) {
    out[k] = StateResult();
    out[k].free = true;
    out[k].within_limits = robot_->WithinLimits(std::span<const double>(q[k], dof));
  }
  const auto n = static_cast<int32_t>(robot_parts_.size());
  const double* const half = poses.half.data();  // PrepareLanes: grown by padding and `clearance`
  // Part i's geometry frame in lane k, as PoseParts makes it from the link's pose.
  const auto part_pose = [&](int32_t i, int k) {
    const RobotPart& rp = robot_parts_[i];
    return rp.GeometryPose(LaneTransform(poses.links[rp.link], k));
  };
  // Every lane of `candidates` counts a tested pair, as WorldPairCollides and SelfPairCollides count one.
  const auto count = [&](uint32_t candidates) {
    for (uint32_t m = candidates; m != 0; m &= m - 1) {
      const int k = std::countr_zero(m);
      ++out[k].pairs_tested;
      ++out[k].stats.bv_tests;
    }
  };
  // Robot parts against the world: the broad phase walked once with the block's box; for each world
  // part it reaches, the lanes' boxes against the part's box across the lanes, then the exact test for
  // each lane whose boxes meet, in the order CheckState visits them.
  for (int32_t i = 0; i < n && active != 0; ++i) {
    const RobotPart& rp = robot_parts_[i];
    const LaneBox& bounds = poses.bounds[i];
    VisitWorldParts(LaneUnion(bounds, active), [&](int32_t w) {
      const WorldPart& wp = world_parts_[w];
      if (AllowedEntityObject(rp.entity, wp.object)) return false;
      const uint32_t candidates = active & OverlapMask(bounds, wp.bounds);
      if (candidates == 0) return false;
      count(candidates);
      const double* box = plan.world_boxes[static_cast<size_t>(w)].data();
      const uint32_t meet = candidates & kernels.fixed_box(poses.boxes[i], half + 3 * i, box, box + 9, box + 12);
      for (uint32_t m = meet; m != 0; m &= m - 1) {
        const int k = std::countr_zero(m);
        if ((active >> k & 1) == 0) continue;  // left with an earlier lane's contact
        if (WorldPairMeets(i, w, part_pose(i, k), clearance, cache, &out[k])) collided(k);
      }
      return active == 0;
    });
  }
  // Pairs of robot parts, in CheckState's order: the lanes whose boxes meet (tested across the lanes),
  // then for each the pair's self-clearance map and the exact test.
  for (size_t s = 0; s < self_pairs_.size() && active != 0; ++s) {
    const SelfPair& sp = self_pairs_[s];
    const double padding = robot_parts_[sp.a].padding + robot_parts_[sp.b].padding + self_clearance;
    const uint32_t candidates = active & OverlapMask(poses.bounds[sp.a], poses.bounds[sp.b]);
    if (candidates == 0) continue;
    const uint32_t meet =
        candidates & kernels.boxes(poses.boxes[sp.a], half + 3 * sp.a, poses.boxes[sp.b], half + 3 * sp.b);
    for (uint32_t m = meet; m != 0; m &= m - 1) {
      const int k = std::countr_zero(m);
      if ((active >> k & 1) == 0) continue;  // left with an earlier lane's contact
      const std::span<const double> q_k(q[k], dof);
      const int64_t cell = SelfPairCell(sp, q_k);
      if (cell >= 0 && SelfPairMapBound(sp, cell, q_k, padding, &cache->map_fill) > padding) continue;
      count(uint32_t{1} << k);
      if (SelfPairMeets(s, cell, part_pose(sp.a, k), part_pose(sp.b, k), padding, cache, &out[k])) collided(k);
    }
  }
}

}  // namespace proximity::core
