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

void BlendArc::At(double t, std::span<double> q) const {
  const double c = radius * std::cos(t), s = radius * std::sin(t);
  for (size_t j = 0; j < center.size(); ++j) q[j] = center[j] + c * x[j] + s * y[j];
}

namespace {

// A straight stretch's profile along its length s in [0, length]: from speed `from`, accelerate at
// `accel` to `peak`, cruise, brake at `accel` to speed `to` (peak is below the cruise limit for a
// triangle, and at least both end speeds).
struct Profile {
  double length = 0.0, from = 0.0, to = 0.0, peak = 0.0, accel = 0.0;
  double t_up = 0.0, t_cruise = 0.0, t_down = 0.0;
  double duration() const { return t_up + t_cruise + t_down; }
  // s, ds/dt and d2s/dt2 at local time t (the acceleration that holds from t on; a time within `eps`
  // before a switch, a switch time rounded down, takes the phase that follows).
  void At(double t, double eps, double* s, double* v, double* a) const {
    if (t < t_up - eps) {
      *s = from * t + 0.5 * accel * t * t, *v = from + accel * t, *a = accel;
    } else if (t < t_up + t_cruise - eps) {
      *s = (peak * peak - from * from) / (2.0 * accel) + peak * (t - t_up), *v = peak, *a = 0.0;
    } else if (t < duration() - eps) {
      const double r = std::max(0.0, duration() - t);
      *s = length - (to * r + 0.5 * accel * r * r), *v = to + accel * r, *a = -accel;
    } else {
      *s = length, *v = to, *a = 0.0;
    }
  }
};

// The fastest profile over `length` from speed `from` to speed `to` (reachable from each other within
// `max_accel`) under `max_speed`.
Profile MakeProfile(double length, double from, double to, double max_speed, double max_accel) {
  Profile p;
  p.length = length, p.from = from, p.to = to, p.accel = max_accel;
  if (length <= 0.0) return p;
  p.peak = std::min(max_speed, std::sqrt((2.0 * max_accel * length + from * from + to * to) / 2.0));
  p.peak = std::max({p.peak, from, to});
  p.t_up = (p.peak - from) / max_accel;
  p.t_down = (p.peak - to) / max_accel;
  const double cruise = length - (2.0 * p.peak * p.peak - from * from - to * to) / (2.0 * max_accel);
  p.t_cruise = cruise > 0.0 && p.peak > 0.0 ? cruise / p.peak : 0.0;
  return p;
}

// The largest |a cos t + b sin t| over t in [0, angle] (angle in (0, pi)): at an end, or at a
// stationary point atan2(b, a) + k pi inside the interval, where it is |(a, b)|.
double MaxAbsCosine(double a, double b, double angle) {
  const double peak = std::atan2(b, a);
  for (const double t : {peak - M_PI, peak, peak + M_PI}) {
    if (t >= 0.0 && t <= angle) return std::hypot(a, b);
  }
  return std::max(std::abs(a), std::abs(a * std::cos(angle) + b * std::sin(angle)));
}

// A corner of the path between two straight segments: passed at rest, straight through (collinear),
// or on a blend arc at one speed.
struct Corner {
  enum class Kind { kRest, kStraight, kArc } kind = Kind::kRest;
  double cap = 0.0;        // the largest speed allowed there
  double trim = 0.0;       // how much of each segment the arc replaces
  BlendArc arc;
  double speed = 0.0;      // after the passes
};

}  // namespace

core::Result<TimedTrajectory> TimeOptimalTrajectory(const JointSpace& space, std::span<const Configuration> path,
                                                    const TimingLimits& limits,
                                                    const std::vector<std::string>& joint_names, double resample_dt,
                                                    int64_t max_samples) {
  TimingOptions options;
  options.resample_dt = resample_dt;
  options.max_samples = max_samples;
  return TimeOptimalTrajectory(space, path, limits, joint_names, options);
}

core::Result<TimedTrajectory> TimeOptimalTrajectory(const JointSpace& space, std::span<const Configuration> path,
                                                    const TimingLimits& limits,
                                                    const std::vector<std::string>& joint_names,
                                                    const TimingOptions& options) {
  const auto dof = static_cast<size_t>(space.dof());
  const auto name = [&](size_t j) { return j < joint_names.size() ? joint_names[j] : std::to_string(j); };
  const double resample_dt = options.resample_dt;
  if (path.empty()) return core::InvalidArgument("timing: the path has no waypoint");
  if (!(std::isfinite(resample_dt) && resample_dt > 0.0)) {
    return core::InvalidArgument("timing: resample_dt must be finite and > 0");
  }
  if (!(std::isfinite(options.path_tolerance) && options.path_tolerance >= 0.0)) {
    return core::InvalidArgument("timing: path_tolerance must be finite and >= 0");
  }
  if (options.path_tolerance > 0.0 && options.blend_checker == nullptr) {
    return core::InvalidArgument("timing: path_tolerance > 0 needs a blend checker");
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
  // The polyline as the motion checks read it (each segment from the previous one's end), without its
  // segments of length 0: points Q, per waypoint its point.
  std::vector<std::vector<double>> points{path[0]};
  std::vector<size_t> point_of(path.size(), 0);
  std::vector<double> end(dof);
  for (size_t i = 1; i < path.size(); ++i) {
    space.SegmentEnd(points.back(), path[i], end);
    double gap = 0.0;
    for (size_t j = 0; j < dof; ++j) gap = std::max(gap, std::abs(end[j] - points.back()[j]));
    // A waypoint repeated (up to a whole turn's rounding) adds no segment.
    if (gap > 1e-12) points.push_back(end);
    point_of[i] = points.size() - 1;
  }
  // Segments: unit directions, lengths, speed and acceleration limits along them.
  const size_t nseg = points.size() - 1;
  std::vector<std::vector<double>> dirs(nseg, std::vector<double>(dof));
  std::vector<double> lengths(nseg), seg_speed(nseg), seg_accel(nseg);
  const auto check_limits = [&](size_t j) -> core::Status {
    const double v = limits.velocity[j], a = limits.acceleration[j];
    if (std::isfinite(v) && v > 0.0 && std::isfinite(a) && a > 0.0) return {};
    return core::InvalidArgument("timing: joint " + name(j) + " moves but has no " +
                                 (!(std::isfinite(v) && v > 0.0) ? "velocity" : "acceleration") +
                                 " limit (finite and > 0)");
  };
  for (size_t i = 0; i < nseg; ++i) {
    double length = 0.0;
    for (size_t j = 0; j < dof; ++j) {
      dirs[i][j] = points[i + 1][j] - points[i][j];
      length += dirs[i][j] * dirs[i][j];
    }
    lengths[i] = std::sqrt(length);
    seg_speed[i] = seg_accel[i] = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < dof; ++j) {
      dirs[i][j] /= lengths[i];
      if (dirs[i][j] == 0.0) continue;
      if (core::Status s = check_limits(j); !s.ok()) return s.error();
      seg_speed[i] = std::min(seg_speed[i], limits.velocity[j] / std::abs(dirs[i][j]));
      seg_accel[i] = std::min(seg_accel[i], limits.acceleration[j] / std::abs(dirs[i][j]));
    }
  }
  // Corner k sits at point k (0 and nseg are the path's ends, at rest). The schedule: the speeds at the
  // corners (the largest each segment can reach from the one before, forward, and brake from to the one
  // after, backward), the segments' profiles and start times; returns the duration.
  std::vector<Corner> corners(nseg + 1);
  std::vector<double> stretch(nseg), seg_start(nseg), arc_start(nseg + 1, 0.0);
  std::vector<Profile> profiles(nseg);
  const auto schedule = [&] {
    for (size_t i = 0; i < nseg; ++i) stretch[i] = std::max(0.0, lengths[i] - corners[i].trim - corners[i + 1].trim);
    for (size_t k = 0; k <= nseg; ++k) corners[k].speed = corners[k].cap;
    for (size_t i = 0; i < nseg; ++i) {
      const double reach = std::sqrt(corners[i].speed * corners[i].speed + 2.0 * seg_accel[i] * stretch[i]);
      corners[i + 1].speed = std::min(corners[i + 1].speed, reach);
    }
    for (size_t i = nseg; i-- > 0;) {
      const double reach = std::sqrt(corners[i + 1].speed * corners[i + 1].speed + 2.0 * seg_accel[i] * stretch[i]);
      corners[i].speed = std::min(corners[i].speed, reach);
    }
    double total = 0.0;
    for (size_t i = 0; i < nseg; ++i) {
      const Corner& c = corners[i];
      arc_start[i] = total;
      if (c.kind == Corner::Kind::kArc) total += c.arc.radius * c.arc.angle / c.speed;
      seg_start[i] = total;
      profiles[i] = MakeProfile(stretch[i], c.speed, corners[i + 1].speed, seg_speed[i], seg_accel[i]);
      total += profiles[i].duration();
    }
    arc_start[nseg] = total;
    return total;
  };
  // Corner k's blend trimming `trim` off both segments, with the one speed its joints' limits allow
  // over the whole arc: |dq_j/ds| and radius |d2q_j/ds2| at their largest over its angle.
  const auto blend = [&](size_t k, double trim, const std::vector<double>& w, double angle) {
    Corner c;
    c.kind = Corner::Kind::kArc;
    c.trim = trim;
    BlendArc& arc = c.arc;
    arc.radius = trim / std::tan(0.5 * angle);
    arc.angle = angle;
    arc.center.resize(dof), arc.x.resize(dof), arc.y = dirs[k - 1];
    c.cap = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < dof; ++j) {
      arc.center[j] = points[k][j] - trim * dirs[k - 1][j] + arc.radius * w[j];
      arc.x[j] = -w[j];
      const double speed = MaxAbsCosine(arc.y[j], -arc.x[j], angle), curve = MaxAbsCosine(arc.x[j], arc.y[j], angle);
      if (speed > 0.0) c.cap = std::min(c.cap, limits.velocity[j] / speed);
      if (curve > 0.0) c.cap = std::min(c.cap, std::sqrt(arc.radius * limits.acceleration[j] / curve));
    }
    return c;
  };
  std::vector<Corner> candidates(nseg + 1);   // per corner, its blend at the full tolerance
  std::vector<std::vector<double>> planes(nseg + 1);  // per blendable corner, w (see below)
  std::vector<double> angles(nseg + 1, 0.0);
  for (size_t k = 1; k < nseg && options.path_tolerance > 0.0; ++k) {
    const std::vector<double>&u0 = dirs[k - 1], &u1 = dirs[k];
    double cosine = 0.0;
    for (size_t j = 0; j < dof; ++j) cosine += u0[j] * u1[j];
    cosine = std::clamp(cosine, -1.0, 1.0);
    if (cosine >= 1.0 - 1e-15) {  // collinear: passed straight through
      corners[k].kind = Corner::Kind::kStraight;
      corners[k].cap = std::min(seg_speed[k - 1], seg_speed[k]);
      continue;
    }
    const double angle = std::acos(cosine);
    if (angle > 3.1415) continue;  // a reversal: only a vanishing arc would fit
    // w: the unit vector in the corner's plane, perpendicular to u0, toward u1.
    std::vector<double> w(dof);
    double wn = 0.0;
    for (size_t j = 0; j < dof; ++j) {
      w[j] = u1[j] - cosine * u0[j];
      wn += w[j] * w[j];
    }
    wn = std::sqrt(wn);
    if (!(wn > 0.0)) continue;
    for (double& x : w) x /= wn;
    const double half = 0.5 * angle;
    const double trim = std::min({0.5 * lengths[k - 1], 0.5 * lengths[k],
                                  options.path_tolerance * std::sin(half) / (1.0 - std::cos(half))});
    if (!(trim > 0.0 && std::isfinite(trim / std::tan(half)))) continue;
    candidates[k] = blend(k, trim, w, angle);
    planes[k] = std::move(w);
    angles[k] = angle;
  }
  // Blends where they shorten the trajectory (a slow arc can cost more than stopping), corner by corner;
  // then each asked of the checker, a refused blend tried again a quarter as far from its corner.
  double best = schedule();
  for (size_t k = 1; k < nseg; ++k) {
    if (candidates[k].kind != Corner::Kind::kArc) continue;
    corners[k] = candidates[k];
    if (const double d = schedule(); d < best) {
      best = d;
    } else {
      corners[k] = Corner{};
    }
  }
  for (size_t k = 1; k < nseg; ++k) {
    if (corners[k].kind != Corner::Kind::kArc) continue;
    for (int attempt = 0;; ++attempt) {
      auto free = options.blend_checker->ArcFree(corners[k].arc);
      if (!free.ok()) return free.error();
      if (free.value()) break;
      const double trim = 0.25 * corners[k].trim;
      corners[k] = Corner{};
      if (attempt == 1) break;
      const double at_rest = schedule();
      corners[k] = blend(k, trim, planes[k], angles[k]);
      if (schedule() >= at_rest) {
        corners[k] = Corner{};
        break;
      }
    }
  }
  TimedTrajectory out;
  for (size_t k = 1; k < nseg; ++k) {
    if (corners[k].kind != Corner::Kind::kArc) continue;
    ++out.blended_corners;
    const Corner& c = corners[k];
    out.max_deviation = std::max(out.max_deviation, c.arc.radius * (1.0 / std::cos(0.5 * c.arc.angle) - 1.0));
  }
  const double total = schedule();
  if (static_cast<double>(path.size()) + total / resample_dt + 4.0 * static_cast<double>(nseg + 1) >
      static_cast<double>(options.max_samples)) {
    return core::ResourceExhausted("timing: " + std::to_string(total) + " s at resample_dt " +
                                   std::to_string(resample_dt) + " s would exceed " +
                                   std::to_string(options.max_samples) + " samples");
  }
  // Sample times: the grid, every segment's profile switches, every arc's ends and middle.
  std::vector<double> times;
  for (int64_t n = 0; static_cast<double>(n) * resample_dt < total; ++n) times.push_back(static_cast<double>(n) * resample_dt);
  std::vector<double> corner_time(nseg + 1);
  for (size_t k = 0; k <= nseg; ++k) {
    const Corner& c = corners[k];
    const double arc_time = c.kind == Corner::Kind::kArc ? c.arc.radius * c.arc.angle / c.speed : 0.0;
    corner_time[k] = arc_start[k] + 0.5 * arc_time;
    times.insert(times.end(), {arc_start[k], corner_time[k], arc_start[k] + arc_time});
  }
  for (size_t i = 0; i < nseg; ++i) {
    const Profile& p = profiles[i];
    times.insert(times.end(), {seg_start[i] + p.t_up, seg_start[i] + p.t_up + p.t_cruise});
  }
  times.push_back(total);
  std::sort(times.begin(), times.end());
  const double eps = 1e-12 * std::max(1.0, total);
  times.erase(std::unique(times.begin(), times.end(), [&](double x, double y) { return y - x < eps; }), times.end());
  out.dof = static_cast<int32_t>(dof);
  std::vector<double> q(dof), v(dof), a(dof);
  size_t piece = 0;  // 2k: corner k's arc, 2i + 1: segment i's straight part
  for (const double t : times) {
    // The piece that starts at or before t and has not ended (the last one for the end time).
    const auto piece_end = [&](size_t p) {
      return p % 2 == 0 ? (p / 2 < nseg ? seg_start[p / 2] : total) : arc_start[p / 2 + 1];
    };
    while (piece < 2 * nseg && t >= piece_end(piece) - eps) ++piece;
    if (piece % 2 == 0) {
      const size_t k = piece / 2;
      const Corner& c = corners[k];
      if (c.kind == Corner::Kind::kArc) {
        const double theta = std::clamp((t - arc_start[k]) * c.speed / c.arc.radius, 0.0, c.arc.angle);
        c.arc.At(theta, q);
        const double cs = std::cos(theta), sn = std::sin(theta), k2 = c.speed * c.speed / c.arc.radius;
        for (size_t j = 0; j < dof; ++j) {
          v[j] = c.speed * (cs * c.arc.y[j] - sn * c.arc.x[j]);
          a[j] = -k2 * (cs * c.arc.x[j] + sn * c.arc.y[j]);
        }
      } else {
        q = points[k];
        const size_t i = std::min(k, nseg > 0 ? nseg - 1 : 0);
        for (size_t j = 0; j < dof; ++j) {
          v[j] = nseg > 0 ? c.speed * dirs[i][j] : 0.0;
          a[j] = 0.0;
        }
      }
    } else {
      const size_t i = piece / 2;
      double s, sd, sdd;
      profiles[i].At(t - seg_start[i], eps, &s, &sd, &sdd);
      s += corners[i].trim;
      for (size_t j = 0; j < dof; ++j) {
        q[j] = points[i][j] + s * dirs[i][j];
        v[j] = sd * dirs[i][j];
        a[j] = sdd * dirs[i][j];
      }
    }
    out.time.push_back(t);
    out.positions.insert(out.positions.end(), q.begin(), q.end());
    out.velocities.insert(out.velocities.end(), v.begin(), v.end());
    out.accelerations.insert(out.accelerations.end(), a.begin(), a.end());
  }
  // The end at rest, on the last waypoint as given (a wrapping joint's value may differ by whole turns).
  const size_t last = out.time.size() - 1;
  std::copy(path.back().begin(), path.back().end(), out.positions.begin() + static_cast<std::ptrdiff_t>(last * dof));
  std::fill(out.velocities.begin() + static_cast<std::ptrdiff_t>(last * dof), out.velocities.end(), 0.0);
  std::fill(out.accelerations.begin() + static_cast<std::ptrdiff_t>(last * dof), out.accelerations.end(), 0.0);
  for (size_t w = 0; w < path.size(); ++w) {
    // The sample nearest the corner's time (samples closer than eps were merged).
    const double t = corner_time[point_of[w]];
    auto it = std::lower_bound(out.time.begin(), out.time.end(), t);
    if (it == out.time.end() || (it != out.time.begin() && t - *(it - 1) < *it - t)) --it;
    out.waypoint_samples.push_back(static_cast<int32_t>(it - out.time.begin()));
  }
  return out;
}

}  // namespace proximity::planners
