#include "proximity/planners/timing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace proximity::planners {

std::vector<double> VelocityLimits(const core::RobotModel& robot) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(robot.num_positions()));
  for (const core::JointIndex j : robot.active_joints()) {
    const double limit = robot.joint(j).velocity_limit;
    v.push_back(std::isfinite(limit) && limit > 0.0 ? limit : 0.0);
  }
  return v;
}

core::Result<std::vector<double>> TimeFromStart(const core::RobotModel& robot, std::span<const double> path) {
  const auto dof = static_cast<size_t>(robot.num_positions());
  if (dof == 0) return std::vector<double>{};
  if (path.size() % dof != 0) {
    return core::InvalidArgument("path: " + std::to_string(path.size()) + " values are not rows of " +
                                 std::to_string(dof) + " joint values");
  }
  for (size_t k = 0; k < path.size(); ++k) {
    if (!std::isfinite(path[k])) {
      return core::InvalidArgument("path: row " + std::to_string(k / dof) + ", joint " +
                                   robot.active_joint_names()[k % dof] + " is not finite");
    }
  }
  const std::vector<double> limits = VelocityLimits(robot);
  if (std::none_of(limits.begin(), limits.end(), [](double v) { return v > 0.0; })) return std::vector<double>{};
  const size_t rows = path.size() / dof;
  std::vector<double> t(rows, 0.0);
  for (size_t i = 1; i < rows; ++i) {
    double duration = 0.0;
    for (size_t j = 0; j < dof; ++j) {
      if (limits[j] <= 0.0) continue;
      double delta = path[i * dof + j] - path[(i - 1) * dof + j];
      if (robot.is_continuous(static_cast<int32_t>(j))) delta = core::ShortestTurn(delta);
      duration = std::max(duration, std::abs(delta) / limits[j]);
    }
    t[i] = t[i - 1] + duration;
  }
  return t;
}

}  // namespace proximity::planners

namespace proximity::planners {
namespace {

// One straight segment's rest-to-rest profile along its arc length s in [0, length]: accelerate at
// `accel` to `speed`, cruise, brake at `accel` (speed is the peak: below the cruise limit for a triangle).
struct Profile {
  double length = 0.0, speed = 0.0, accel = 0.0;
  double t_ramp = 0.0, t_cruise = 0.0;
  double duration() const { return 2.0 * t_ramp + t_cruise; }
  // s, ds/dt and d2s/dt2 at local time t (the acceleration that holds from t on).
  void At(double t, double* s, double* v, double* a) const {
    const double T = duration();
    if (t < t_ramp) {
      *s = 0.5 * accel * t * t, *v = accel * t, *a = accel;
    } else if (t < t_ramp + t_cruise) {
      *s = 0.5 * accel * t_ramp * t_ramp + speed * (t - t_ramp), *v = speed, *a = 0.0;
    } else if (t < T) {
      const double r = T - t;
      *s = length - 0.5 * accel * r * r, *v = accel * r, *a = -accel;
    } else {
      *s = length, *v = 0.0, *a = 0.0;
    }
  }
};

Profile MakeProfile(double length, double max_speed, double max_accel) {
  Profile p;
  p.length = length;
  p.accel = max_accel;
  if (length * max_accel >= max_speed * max_speed) {
    p.speed = max_speed;
    p.t_ramp = max_speed / max_accel;
    p.t_cruise = (length - max_speed * max_speed / max_accel) / max_speed;
  } else {
    p.speed = std::sqrt(length * max_accel);
    p.t_ramp = p.speed / max_accel;
  }
  return p;
}

}  // namespace

core::Result<TimedTrajectory> TimeOptimalTrajectory(const JointSpace& space, std::span<const Configuration> path,
                                                    const TimingLimits& limits,
                                                    const std::vector<std::string>& joint_names, double resample_dt,
                                                    int64_t max_samples) {
  const auto dof = static_cast<size_t>(space.dof());
  const auto name = [&](size_t j) { return j < joint_names.size() ? joint_names[j] : std::to_string(j); };
  if (path.empty()) return core::InvalidArgument("timing: the path has no waypoint");
  if (!(std::isfinite(resample_dt) && resample_dt > 0.0)) {
    return core::InvalidArgument("timing: resample_dt must be finite and > 0");
  }
  if (limits.velocity.size() != dof || limits.acceleration.size() != dof) {
    return core::InvalidArgument("timing: " + std::to_string(dof) + " velocity and acceleration limits expected");
  }
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i].size() != dof) {
      return core::InvalidArgument("timing: waypoint " + std::to_string(i) + " has " + std::to_string(path[i].size()) +
                                   " values, not " + std::to_string(dof));
    }
    for (size_t j = 0; j < dof; ++j) {
      if (!std::isfinite(path[i][j])) {
        return core::InvalidArgument("timing: waypoint " + std::to_string(i) + ", joint " + name(j) + " is not finite");
      }
    }
  }
  // Segments: their ends as every motion check reads them, directions and profiles.
  std::vector<double> end(dof);
  std::vector<Profile> profiles;
  std::vector<std::vector<double>> starts, directions;
  double total = 0.0;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    space.SegmentEnd(path[i], path[i + 1], end);
    std::vector<double> u(dof);
    double length = 0.0;
    for (size_t j = 0; j < dof; ++j) {
      u[j] = end[j] - path[i][j];
      length += u[j] * u[j];
    }
    length = std::sqrt(length);
    double speed = std::numeric_limits<double>::infinity(), accel = speed;
    if (length > 0.0) {
      for (size_t j = 0; j < dof; ++j) {
        u[j] /= length;
        if (u[j] == 0.0) continue;
        const double v = limits.velocity[j], a = limits.acceleration[j];
        if (!(std::isfinite(v) && v > 0.0) || !(std::isfinite(a) && a > 0.0)) {
          return core::InvalidArgument("timing: joint " + name(j) + " moves but has no " +
                                       (!(std::isfinite(v) && v > 0.0) ? "velocity" : "acceleration") +
                                       " limit (finite and > 0)");
        }
        speed = std::min(speed, v / std::abs(u[j]));
        accel = std::min(accel, a / std::abs(u[j]));
      }
    }
    profiles.push_back(length > 0.0 ? MakeProfile(length, speed, accel) : Profile{});
    starts.push_back(path[i]);
    directions.push_back(std::move(u));
    total += profiles.back().duration();
  }
  if (static_cast<double>(path.size()) + total / resample_dt + 2.0 * static_cast<double>(profiles.size()) >
      static_cast<double>(max_samples)) {
    return core::ResourceExhausted("timing: " + std::to_string(total) + " s at resample_dt " +
                                   std::to_string(resample_dt) + " s would exceed " + std::to_string(max_samples) +
                                   " samples");
  }
  TimedTrajectory out;
  out.dof = static_cast<int32_t>(dof);
  const auto push = [&](double t, std::span<const double> q, std::span<const double> v, std::span<const double> a) {
    out.time.push_back(t);
    out.positions.insert(out.positions.end(), q.begin(), q.end());
    out.velocities.insert(out.velocities.end(), v.begin(), v.end());
    out.accelerations.insert(out.accelerations.end(), a.begin(), a.end());
  };
  std::vector<double> q(dof), v(dof), a(dof);
  double t0 = 0.0;
  for (size_t i = 0; i < profiles.size(); ++i) {
    const Profile& p = profiles[i];
    double s0, sd0, sdd0;
    p.At(0.0, &s0, &sd0, &sdd0);
    if (out.time.empty()) {
      std::fill(v.begin(), v.end(), 0.0);
      for (size_t j = 0; j < dof; ++j) a[j] = sdd0 * directions[i][j];
      push(0.0, path[0], v, a);
    } else {
      // The previous segment ended at rest on this waypoint: from there this segment's acceleration holds.
      for (size_t j = 0; j < dof; ++j) out.accelerations[out.accelerations.size() - dof + j] = sdd0 * directions[i][j];
    }
    out.waypoint_samples.push_back(static_cast<int32_t>(out.time.size()) - 1);
    if (p.length == 0.0) continue;
    // Inner sample times: the profile's switches, and every resample_dt.
    std::vector<double> times{p.t_ramp, p.t_ramp + p.t_cruise};
    for (double t = resample_dt; t < p.duration(); t += resample_dt) times.push_back(t);
    std::sort(times.begin(), times.end());
    const double eps = 1e-12 * std::max(1.0, p.duration());
    times.erase(std::unique(times.begin(), times.end(), [&](double x, double y) { return y - x < eps; }), times.end());
    for (double t : times) {
      if (t < eps || t > p.duration() - eps) continue;
      double s, sd, sdd;
      p.At(t, &s, &sd, &sdd);
      for (size_t j = 0; j < dof; ++j) {
        q[j] = starts[i][j] + s * directions[i][j];
        v[j] = sd * directions[i][j];
        a[j] = sdd * directions[i][j];
      }
      push(t0 + t, q, v, a);
    }
    t0 += p.duration();
    // The segment's end at rest: its exact end point (the next waypoint as the segment reaches it).
    space.SegmentEnd(path[i], path[i + 1], end);
    std::fill(v.begin(), v.end(), 0.0);
    std::fill(a.begin(), a.end(), 0.0);
    push(t0, end, v, a);
  }
  if (out.time.empty()) {
    std::fill(v.begin(), v.end(), 0.0);
    push(0.0, path[0], v, v);
  }
  out.waypoint_samples.push_back(static_cast<int32_t>(out.time.size()) - 1);
  // The last row is the last waypoint as given (a wrapping joint's value may differ by whole turns).
  std::copy(path.back().begin(), path.back().end(), out.positions.end() - static_cast<std::ptrdiff_t>(dof));
  return out;
}

}  // namespace proximity::planners
