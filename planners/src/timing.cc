#include "proximity/planners/timing.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
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
  double arc_time() const { return kind == Kind::kArc ? arc.radius * arc.angle / speed : 0.0; }
};

// Where a corner may be blended: its turning angle and w, the unit vector in the corner's plane
// perpendicular to the incoming direction, toward the outgoing one.
struct Turn {
  double angle = 0.0;
  std::vector<double> w;
};

// A path's polyline, its segments and corners, and their schedule along time: a corner's arc (none at
// rest) is followed by the straight part of the segment after it (piece 2k: corner k's arc, piece 2i + 1:
// segment i's straight part).
class PathTiming {
 public:
  // Validates the path and the limits of the joints it moves; the polyline as the motion checks read it
  // (each segment from the previous one's end) without segments of length 0.
  static core::Result<PathTiming> Build(const JointSpace& space, std::span<const Configuration> path,
                                        const TimingLimits& limits, const std::vector<std::string>& joint_names);
  // Chooses the blends (TimeOptimalTrajectory's rule), asking `checker` about each.
  core::Status ChooseBlends(double tolerance, const BlendChecker& checker, const core::Interrupt& stop);
  // Schedules the corners and samples the trajectory.
  core::Result<TimedTrajectory> Sample(std::span<const Configuration> path, const TimingOptions& options);

 private:
  PathTiming(const TimingLimits& limits, size_t dof) : limits_(&limits), dof_(dof) {}
  size_t segments() const { return dirs_.size(); }
  // The speeds at the corners (the largest each segment can reach from the one before, forward, and brake
  // from to the one after, backward), the segments' profiles and start times; returns the duration.
  double Schedule();
  // The cosine of the angle the path turns by at corner k (1: straight on).
  double Cosine(size_t k) const;
  // How corner k turns, when an arc can replace it (not a reversal).
  std::optional<Turn> TurnAt(size_t k, double cosine) const;
  // Corner k's blend trimming `trim` off both segments, with the one speed its joints' limits allow over
  // the whole arc: |dq_j/ds| and radius |d2q_j/ds2| at their largest over its angle.
  Corner Blend(size_t k, double trim, const Turn& turn) const;
  // Position, velocity and acceleration at time t (s) of piece p.
  void StateAt(size_t p, double t, double eps, std::span<double> q, std::span<double> v, std::span<double> a) const;

  const TimingLimits* limits_;
  size_t dof_;
  std::vector<std::vector<double>> points_, dirs_;
  std::vector<size_t> point_of_;  // per waypoint, its point
  std::vector<double> lengths_, seg_speed_, seg_accel_;
  std::vector<Corner> corners_;   // corner k at point k; 0 and segments() (the ends) at rest
  std::vector<double> stretch_, seg_start_, arc_start_;
  std::vector<Profile> profiles_;
};

core::Result<PathTiming> PathTiming::Build(const JointSpace& space, std::span<const Configuration> path,
                                           const TimingLimits& limits, const std::vector<std::string>& joint_names) {
  const auto dof = static_cast<size_t>(space.dof());
  const auto name = [&](size_t j) { return j < joint_names.size() ? joint_names[j] : std::to_string(j); };
  if (path.empty()) return core::InvalidArgument("timing: the path has no waypoint");
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
  PathTiming t(limits, dof);
  t.points_ = {path[0]};
  t.point_of_.assign(path.size(), 0);
  std::vector<double> end(dof);
  for (size_t i = 1; i < path.size(); ++i) {
    space.SegmentEnd(t.points_.back(), path[i], end);
    double gap = 0.0;
    for (size_t j = 0; j < dof; ++j) gap = std::max(gap, std::abs(end[j] - t.points_.back()[j]));
    // A waypoint repeated (up to a whole turn's rounding) adds no segment.
    if (gap > 1e-12) t.points_.push_back(end);
    t.point_of_[i] = t.points_.size() - 1;
  }
  // Segments: unit directions, lengths, speed and acceleration limits along them.
  const size_t nseg = t.points_.size() - 1;
  t.dirs_.assign(nseg, std::vector<double>(dof));
  t.lengths_.resize(nseg), t.seg_speed_.resize(nseg), t.seg_accel_.resize(nseg);
  for (size_t i = 0; i < nseg; ++i) {
    std::vector<double>& u = t.dirs_[i];
    double length = 0.0;
    for (size_t j = 0; j < dof; ++j) {
      u[j] = t.points_[i + 1][j] - t.points_[i][j];
      length += u[j] * u[j];
    }
    t.lengths_[i] = std::sqrt(length);
    t.seg_speed_[i] = t.seg_accel_[i] = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < dof; ++j) {
      u[j] /= t.lengths_[i];
      if (u[j] == 0.0) continue;
      const double v = limits.velocity[j], a = limits.acceleration[j];
      if (!(std::isfinite(v) && v > 0.0 && std::isfinite(a) && a > 0.0)) {
        return core::InvalidArgument("timing: joint " + name(j) + " moves but has no " +
                                     (!(std::isfinite(v) && v > 0.0) ? "velocity" : "acceleration") +
                                     " limit (finite and > 0)");
      }
      t.seg_speed_[i] = std::min(t.seg_speed_[i], v / std::abs(u[j]));
      t.seg_accel_[i] = std::min(t.seg_accel_[i], a / std::abs(u[j]));
    }
  }
  t.corners_.resize(nseg + 1);
  t.stretch_.resize(nseg), t.seg_start_.resize(nseg), t.arc_start_.assign(nseg + 1, 0.0);
  t.profiles_.resize(nseg);
  return t;
}

double PathTiming::Schedule() {
  const size_t nseg = segments();
  std::vector<Corner>& c = corners_;
  for (size_t i = 0; i < nseg; ++i) stretch_[i] = std::max(0.0, lengths_[i] - c[i].trim - c[i + 1].trim);
  for (Corner& corner : c) corner.speed = corner.cap;
  for (size_t i = 0; i < nseg; ++i) {
    c[i + 1].speed = std::min(c[i + 1].speed, std::sqrt(c[i].speed * c[i].speed + 2.0 * seg_accel_[i] * stretch_[i]));
  }
  for (size_t i = nseg; i-- > 0;) {
    c[i].speed = std::min(c[i].speed, std::sqrt(c[i + 1].speed * c[i + 1].speed + 2.0 * seg_accel_[i] * stretch_[i]));
  }
  double total = 0.0;
  for (size_t i = 0; i < nseg; ++i) {
    arc_start_[i] = total;
    total += c[i].arc_time();
    seg_start_[i] = total;
    profiles_[i] = MakeProfile(stretch_[i], c[i].speed, c[i + 1].speed, seg_speed_[i], seg_accel_[i]);
    total += profiles_[i].duration();
  }
  arc_start_[nseg] = total;
  return total;
}

double PathTiming::Cosine(size_t k) const {
  double cosine = 0.0;
  for (size_t j = 0; j < dof_; ++j) cosine += dirs_[k - 1][j] * dirs_[k][j];
  return std::clamp(cosine, -1.0, 1.0);
}

std::optional<Turn> PathTiming::TurnAt(size_t k, double cosine) const {
  const std::vector<double>&u0 = dirs_[k - 1], &u1 = dirs_[k];
  Turn turn;
  turn.angle = std::acos(cosine);
  if (turn.angle > 3.1415) return std::nullopt;  // a reversal: only a vanishing arc would fit
  turn.w.resize(dof_);
  double norm = 0.0;
  for (size_t j = 0; j < dof_; ++j) {
    turn.w[j] = u1[j] - cosine * u0[j];
    norm += turn.w[j] * turn.w[j];
  }
  norm = std::sqrt(norm);
  if (!(norm > 0.0)) return std::nullopt;
  for (double& x : turn.w) x /= norm;
  return turn;
}

Corner PathTiming::Blend(size_t k, double trim, const Turn& turn) const {
  Corner c;
  c.kind = Corner::Kind::kArc;
  c.trim = trim;
  BlendArc& arc = c.arc;
  arc.radius = trim / std::tan(0.5 * turn.angle);
  arc.angle = turn.angle;
  arc.center.resize(dof_), arc.x.resize(dof_), arc.y = dirs_[k - 1];
  c.cap = std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < dof_; ++j) {
    arc.center[j] = points_[k][j] - trim * dirs_[k - 1][j] + arc.radius * turn.w[j];
    arc.x[j] = -turn.w[j];
    const double speed = MaxAbsCosine(arc.y[j], -arc.x[j], arc.angle);
    const double curve = MaxAbsCosine(arc.x[j], arc.y[j], arc.angle);
    if (speed > 0.0) c.cap = std::min(c.cap, limits_->velocity[j] / speed);
    if (curve > 0.0) c.cap = std::min(c.cap, std::sqrt(arc.radius * limits_->acceleration[j] / curve));
  }
  return c;
}

core::Status PathTiming::ChooseBlends(double tolerance, const BlendChecker& checker, const core::Interrupt& stop) {
  const size_t nseg = segments();
  std::vector<std::optional<Turn>> turns(nseg + 1);
  std::vector<Corner> candidates(nseg + 1);  // per corner, its blend at the full tolerance
  for (size_t k = 1; k < nseg; ++k) {
    const double cosine = Cosine(k);
    if (cosine >= 1.0 - 1e-15) {  // collinear: passed straight through
      corners_[k].kind = Corner::Kind::kStraight;
      corners_[k].cap = std::min(seg_speed_[k - 1], seg_speed_[k]);
      continue;
    }
    turns[k] = TurnAt(k, cosine);
    if (!turns[k]) continue;
    const double half = 0.5 * turns[k]->angle;
    const double trim = std::min({0.5 * lengths_[k - 1], 0.5 * lengths_[k],
                                  tolerance * std::sin(half) / (1.0 - std::cos(half))});
    if (trim > 0.0 && std::isfinite(trim / std::tan(half))) candidates[k] = Blend(k, trim, *turns[k]);
  }
  // Blends where they shorten the trajectory (a slow arc can cost more than stopping), corner by corner;
  // then each asked of the checker, a refused blend tried again a quarter as far from its corner.
  double best = Schedule();
  const auto stopped = [&] { return core::Stopped("timing: stopped while choosing corner blends"); };
  for (size_t k = 1; k < nseg; ++k) {
    if (candidates[k].kind != Corner::Kind::kArc) continue;
    if (stop()) return stopped();
    corners_[k] = candidates[k];
    if (const double d = Schedule(); d < best) {
      best = d;
    } else {
      corners_[k] = Corner{};
    }
  }
  for (size_t k = 1; k < nseg; ++k) {
    for (int attempt = 0; corners_[k].kind == Corner::Kind::kArc; ++attempt) {
      if (stop()) return stopped();
      auto free = checker.ArcFree(corners_[k].arc);
      if (!free.ok()) return free.error();
      if (free.value()) break;
      const double trim = 0.25 * corners_[k].trim;
      corners_[k] = Corner{};
      if (attempt == 1) break;
      const double at_rest = Schedule();
      corners_[k] = Blend(k, trim, *turns[k]);
      if (Schedule() >= at_rest) corners_[k] = Corner{};
    }
  }
  return {};
}

void PathTiming::StateAt(size_t p, double t, double eps, std::span<double> q, std::span<double> v,
                         std::span<double> a) const {
  const size_t nseg = segments();
  if (p % 2 == 1) {
    const size_t i = p / 2;
    double s, sd, sdd;
    profiles_[i].At(t - seg_start_[i], eps, &s, &sd, &sdd);
    s += corners_[i].trim;
    for (size_t j = 0; j < dof_; ++j) {
      q[j] = points_[i][j] + s * dirs_[i][j];
      v[j] = sd * dirs_[i][j];
      a[j] = sdd * dirs_[i][j];
    }
    return;
  }
  const size_t k = p / 2;
  const Corner& c = corners_[k];
  if (c.kind != Corner::Kind::kArc) {  // a corner passed in no time: at rest or straight through
    std::copy(points_[k].begin(), points_[k].end(), q.begin());
    const size_t i = std::min(k, nseg > 0 ? nseg - 1 : 0);
    for (size_t j = 0; j < dof_; ++j) {
      v[j] = nseg > 0 ? c.speed * dirs_[i][j] : 0.0;
      a[j] = 0.0;
    }
    return;
  }
  const double theta = std::clamp((t - arc_start_[k]) * c.speed / c.arc.radius, 0.0, c.arc.angle);
  c.arc.At(theta, q);
  const double cs = std::cos(theta), sn = std::sin(theta), k2 = c.speed * c.speed / c.arc.radius;
  for (size_t j = 0; j < dof_; ++j) {
    v[j] = c.speed * (cs * c.arc.y[j] - sn * c.arc.x[j]);
    a[j] = -k2 * (cs * c.arc.x[j] + sn * c.arc.y[j]);
  }
}

core::Result<TimedTrajectory> PathTiming::Sample(std::span<const Configuration> path, const TimingOptions& options) {
  const size_t nseg = segments();
  TimedTrajectory out;
  out.dof = static_cast<int32_t>(dof_);
  for (const Corner& c : corners_) {
    if (c.kind != Corner::Kind::kArc) continue;
    ++out.blended_corners;
    out.max_deviation = std::max(out.max_deviation, c.arc.radius * (1.0 / std::cos(0.5 * c.arc.angle) - 1.0));
  }
  const double total = Schedule(), dt = options.resample_dt;
  if (static_cast<double>(path.size()) + total / dt + 4.0 * static_cast<double>(nseg + 1) >
      static_cast<double>(options.max_samples)) {
    return core::ResourceExhausted("timing: " + std::to_string(total) + " s at resample_dt " + std::to_string(dt) +
                                   " s would exceed " + std::to_string(options.max_samples) + " samples");
  }
  // Sample times: the grid, every segment's profile switches, every arc's ends and middle.
  std::vector<double> times;
  for (int64_t n = 0; static_cast<double>(n) * dt < total; ++n) times.push_back(static_cast<double>(n) * dt);
  std::vector<double> corner_time(nseg + 1);
  for (size_t k = 0; k <= nseg; ++k) {
    corner_time[k] = arc_start_[k] + 0.5 * corners_[k].arc_time();
    times.insert(times.end(), {arc_start_[k], corner_time[k], arc_start_[k] + corners_[k].arc_time()});
  }
  for (size_t i = 0; i < nseg; ++i) {
    times.insert(times.end(), {seg_start_[i] + profiles_[i].t_up, seg_start_[i] + profiles_[i].t_up + profiles_[i].t_cruise});
  }
  times.push_back(total);
  std::sort(times.begin(), times.end());
  const double eps = 1e-12 * std::max(1.0, total);
  times.erase(std::unique(times.begin(), times.end(), [&](double x, double y) { return y - x < eps; }), times.end());
  const auto piece_end = [&](size_t p) {
    return p % 2 == 0 ? (p / 2 < nseg ? seg_start_[p / 2] : total) : arc_start_[p / 2 + 1];
  };
  std::vector<double> q(dof_), v(dof_), a(dof_);
  size_t piece = 0;
  for (const double t : times) {
    // The piece that starts at or before t and has not ended (the last one for the end time).
    while (piece < 2 * nseg && t >= piece_end(piece) - eps) ++piece;
    StateAt(piece, t, eps, q, v, a);
    out.time.push_back(t);
    out.positions.insert(out.positions.end(), q.begin(), q.end());
    out.velocities.insert(out.velocities.end(), v.begin(), v.end());
    out.accelerations.insert(out.accelerations.end(), a.begin(), a.end());
  }
  // The end at rest, on the last waypoint as given (a wrapping joint's value may differ by whole turns).
  const auto last = static_cast<std::ptrdiff_t>((out.time.size() - 1) * dof_);
  std::copy(path.back().begin(), path.back().end(), out.positions.begin() + last);
  std::fill(out.velocities.begin() + last, out.velocities.end(), 0.0);
  std::fill(out.accelerations.begin() + last, out.accelerations.end(), 0.0);
  for (size_t w = 0; w < path.size(); ++w) {
    // The sample nearest the corner's time (samples closer than eps were merged).
    const double t = corner_time[point_of_[w]];
    auto it = std::lower_bound(out.time.begin(), out.time.end(), t);
    if (it == out.time.end() || (it != out.time.begin() && t - *(it - 1) < *it - t)) --it;
    out.waypoint_samples.push_back(static_cast<int32_t>(it - out.time.begin()));
  }
  return out;
}

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
  if (!(std::isfinite(options.resample_dt) && options.resample_dt > 0.0)) {
    return core::InvalidArgument("timing: resample_dt must be finite and > 0");
  }
  if (!(std::isfinite(options.path_tolerance) && options.path_tolerance >= 0.0)) {
    return core::InvalidArgument("timing: path_tolerance must be finite and >= 0");
  }
  if (options.path_tolerance > 0.0 && options.blend_checker == nullptr) {
    return core::InvalidArgument("timing: path_tolerance > 0 needs a blend checker");
  }
  auto built = PathTiming::Build(space, path, limits, joint_names);
  if (!built.ok()) return built.error();
  PathTiming& timing = built.value();
  if (options.path_tolerance > 0.0) {
    if (core::Status s = timing.ChooseBlends(options.path_tolerance, *options.blend_checker, options.stop);
        !s.ok()) {
      return s.error();
    }
  }
  return timing.Sample(path, options);
}

}  // namespace proximity::planners
