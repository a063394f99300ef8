/// @file
/// LINK(q0, q1) entry point and the sampled (discrete) check, and path checks segment by segment.
/// The certified check is motion_certified.cc.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "scene/lanes.h"
#include "scene/scene_internal.h"
#include "scene/scene_impl.h"
#include "robot/robot_motion.h"

namespace proximity::core {

using namespace internal;  // scene_internal.h

namespace internal {

// The number of steps a sampled check of a segment of `length` takes at `resolution`: an error naming
// `field` unless the resolution is finite and > 0 and the steps stay within kMaxMotionSteps. Computed
// in floating point and compared before any conversion, so no resolution can overflow the count.
Result<int64_t> MotionSteps(double length, double resolution, const char* field) {
  if (!(std::isfinite(resolution) && resolution > 0.0)) {
    return InvalidArgument(std::string(field) + " must be finite and > 0, got " + FormatNumber(resolution));
  }
  const double steps = std::ceil(length / resolution);
  if (!(steps <= kMaxMotionSteps)) {
    return InvalidArgument(std::string(field) + " " + FormatNumber(resolution) + " would sample " +
                           FormatNumber(steps) + " states on a segment " + FormatNumber(length) +
                           " long; at most " + FormatNumber(kMaxMotionSteps) + " are allowed per segment");
  }
  return std::max<int64_t>(1, static_cast<int64_t>(steps));
}

std::span<const double> ShortWayEnd(const RobotModel& robot, std::span<const double> q0, std::span<const double> q1,
                                    std::vector<double>* storage) {
  storage->resize(q1.size());
  robot.MotionEnd(q0, q1, *storage);
  return *storage;
}

double SegmentLength(std::span<const double> q0, std::span<const double> q1) {
  double length2 = 0.0;
  for (size_t i = 0; i < q0.size(); ++i) length2 += (q1[i] - q0[i]) * (q1[i] - q0[i]);
  return std::sqrt(length2);
}

}  // namespace internal

namespace {

// The clearance pairs of robot parts keep under `request` (MotionRequest::clearance_world_only).
double SelfClearance(const MotionRequest& request) {
  return request.clearance_world_only ? 0.0 : request.clearance;
}

}  // namespace

double SceneImpl::RobotDisplacementBound(std::span<const double> dq) const {
  const std::vector<double> zero(dq.size(), 0.0);
  std::vector<MotionLever> levers;
  double worst = 0.0;
  for (const RobotPart& rp : robot_parts_) {
    levers.clear();
    MotionLevers(*robot_, rp.link, 0, zero, dq, rp.reach, &levers);
    double bound = 0.0;
    for (const MotionLever& l : levers) {
      bound += l.dq * (l.prismatic ? 1.0 : LeverRadius(*robot_, rp.link, l.joint) + rp.reach);
    }
    worst = std::max(worst, bound);
  }
  return worst;
}

Result<MotionResult> SceneImpl::CheckMotion(std::span<const double> q0, std::span<const double> q1,
                                            const MotionRequest& request, SceneCacheData* cache) const {
  if (Status s = robot_->CheckConfiguration(q0); !s.ok()) return Error{s.error().code, "q0: " + s.error().message};
  if (Status s = robot_->CheckConfiguration(q1); !s.ok()) return Error{s.error().code, "q1: " + s.error().message};
  if (Status s = CheckClearance(request.clearance); !s.ok()) return s.error();
  // Continuous joints turn the short way: the motion is the straight segment from q0 to MotionEnd.
  std::vector<double> end;
  if (robot_->has_continuous_joints()) q1 = ShortWayEnd(*robot_, q0, q1, &end);
  const double length = SegmentLength(q0, q1);
  if (request.mode == MotionRequest::Mode::kDiscrete) {
    Result<int64_t> steps = MotionSteps(length, request.resolution, "resolution");
    if (!steps.ok()) return steps.error();
    return CheckMotionDiscrete(q0, q1, steps.value(), request, cache);
  }
  if (!(std::isfinite(request.prepass_resolution) && request.prepass_resolution >= 0.0)) {
    return InvalidArgument("prepass_resolution must be finite and >= 0, got " +
                           FormatNumber(request.prepass_resolution));
  }
  MotionResult prepass;
  if (request.prepass_resolution > 0.0) {
    Result<int64_t> steps = MotionSteps(length, request.prepass_resolution, "prepass_resolution");
    if (!steps.ok()) return steps.error();
    // The ends are left to the certified walk, which checks them first.
    Result<MotionResult> sampled = SampleSegment(q0, q1, steps.value(), true, false, request.clearance,
                                                 SelfClearance(request), request.stop, cache);
    if (!sampled.ok() || sampled.value().t_collide >= 0.0 || sampled.value().stopped) return sampled;
    prepass = std::move(sampled).value();
  }
  return CheckMotionCertified(q0, q1, request.narrow_collision, request.clearance, SelfClearance(request),
                              request.stop, cache, std::move(prepass));
}

// States q0 + (i / n) (q1 - q0), i = 0..n (n from MotionSteps), checked by CLEAR until one collides
// (recorded in the result). In order from q0, or coarse to fine: the ends, then the odd multiples of the
// largest power of two below n, then of half of it, and so on: the same states, each once, so the same
// answer, but a collision anywhere is met after a few of them. `ends` false leaves q0 and q1 out.
// The states go kLanes at a time in that order through CheckStates' lane pass (a rake across the
// segment when coarse to fine), and the first colliding state in the order is the one reported, as if
// they had been checked one by one; MotionResult::states counts every state posed. `stop` is asked
// before each block; when it says stop, MotionResult::stopped is set.
Result<MotionResult> SceneImpl::SampleSegment(std::span<const double> q0, std::span<const double> q1, int64_t n,
                                              bool coarse_to_fine, bool ends, double clearance, double self_clearance,
                                              const Interrupt& stop, SceneCacheData* cache) const {
  MotionResult result;
  // The visiting order, one index at a time (-1 when done).
  int64_t next_in_order = ends ? 0 : 1;
  const int64_t last_in_order = ends ? n : n - 1;
  int64_t end_step = ends ? 0 : 2;  // coarse to fine: 0 -> state 0, 1 -> state n, 2 -> the strides
  int64_t stride = 1;
  while (stride * 2 < n) stride *= 2;
  int64_t at = stride;
  auto next = [&]() -> int64_t {
    if (!coarse_to_fine) return next_in_order <= last_in_order ? next_in_order++ : -1;
    if (end_step < 2) return end_step++ == 0 ? 0 : n;
    while (stride >= 1) {
      if (at < n) {
        const int64_t i = at;
        at += 2 * stride;
        return i;
      }
      stride /= 2;
      at = stride;
    }
    return -1;
  };
  const size_t dof = q0.size();
  std::vector<double> rows(static_cast<size_t>(internal::kLanes) * dof);
  const double* q[internal::kLanes];
  int64_t index[internal::kLanes];
  StateResult out[internal::kLanes];
  PrepareLanes(cache, clearance);
  while (true) {
    int32_t m = 0;
    for (int64_t i; m < internal::kLanes && (i = next()) >= 0; ++m) {
      index[m] = i;
      const double t = static_cast<double>(i) / static_cast<double>(n);
      double* row = rows.data() + static_cast<size_t>(m) * dof;
      for (size_t j = 0; j < dof; ++j) row[j] = q0[j] + t * (q1[j] - q0[j]);
    }
    if (m == 0) return result;
    if (stop()) {
      result.stopped = true;
      return result;
    }
    for (int32_t k = 0; k < internal::kLanes; ++k) q[k] = rows.data() + static_cast<size_t>(k < m ? k : 0) * dof;
    CheckStateBlock(q, m, clearance, self_clearance, cache, out, /*first_colliding=*/true);
    result.states += m;
    for (int32_t k = 0; k < m; ++k) result.stats += out[k].stats;
    for (int32_t k = 0; k < m; ++k) {
      if (out[k].free) continue;
      const int64_t i = index[k];
      result.t_collide = static_cast<double>(i) / static_cast<double>(n);
      result.t_free = coarse_to_fine || i == 0 ? 0.0 : static_cast<double>(i - 1) / static_cast<double>(n);
      result.contact = out[k].contact;
      return result;
    }
  }
}

Result<MotionResult> SceneImpl::CheckMotionDiscrete(std::span<const double> q0, std::span<const double> q1,
                                                    int64_t steps, const MotionRequest& request,
                                                    SceneCacheData* cache) const {
  Result<MotionResult> sampled = SampleSegment(q0, q1, steps, request.coarse_to_fine, request.check_ends,
                                               request.clearance, SelfClearance(request), request.stop, cache);
  if (!sampled.ok()) return sampled;
  MotionResult& result = sampled.value();
  if (result.t_collide >= 0.0 || result.stopped) return sampled;
  result.free = true;
  result.t_free = 1.0;
  return sampled;
}

Result<PathResult> SceneImpl::CheckPath(std::span<const double> waypoints, const MotionRequest& request,
                                        SceneCacheData* cache) const {
  const size_t dof = static_cast<size_t>(robot_->num_positions());
  // A robot without joints has one configuration (no values): its path is that one state.
  if (dof == 0 ? !waypoints.empty() : (waypoints.empty() || waypoints.size() % dof != 0)) {
    return InvalidArgument("path: " + std::to_string(waypoints.size()) + " values is not a whole number (>= 1) of " +
                           std::to_string(dof) + "-joint waypoints");
  }
  const size_t n = dof == 0 ? 1 : waypoints.size() / dof;
  for (size_t w = 0; w < n; ++w) {
    if (Status s = robot_->CheckConfiguration(waypoints.subspan(w * dof, dof)); !s.ok()) {
      return Error{s.error().code, "path waypoint " + std::to_string(w) + ": " + s.error().message};
    }
  }
  PathResult result;
  if (n == 1) {
    // A single waypoint is a path of one state.
    const Result<StateResult> state = CheckState(waypoints, cache);
    if (!state.ok()) return state.error();
    const StateResult& r = state.value();
    result.states = 1;
    result.stats = r.stats;
    result.free = r.free;
    result.motion.free = r.free;
    result.motion.t_free = r.free ? 1.0 : 0.0;
    result.motion.t_collide = r.free ? -1.0 : 0.0;
    result.motion.contact = r.contact;
    if (!r.free) result.segment = 0;
    return result;
  }
  for (size_t w = 0; w + 1 < n; ++w) {
    if (request.stop()) {
      result.stopped = true;
      return result;
    }
    const Result<MotionResult> motion =
        CheckMotion(waypoints.subspan(w * dof, dof), waypoints.subspan((w + 1) * dof, dof), request, cache);
    if (!motion.ok()) {
      return Error{motion.error().code, "path segment " + std::to_string(w) + ": " + motion.error().message};
    }
    const MotionResult& m = motion.value();
    result.states += m.states;
    result.distance_queries += m.distance_queries;
    result.stats += m.stats;
    result.motion = m;
    if (m.stopped) {
      result.stopped = true;
      return result;
    }
    ++result.segments_checked;
    if (!m.free) {
      result.segment = static_cast<int32_t>(w);
      return result;
    }
  }
  result.free = true;
  return result;
}

}  // namespace proximity::core
