#include "proximity/planners/scene_validity.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace proximity::planners {

namespace {

// CheckMotion over the rows of starts and ends, stopping after the first invalid one when asked.
core::Result<std::vector<MotionCheck>> CheckMotionRows(const MotionValidator& validator, std::span<const double> starts,
                                                       std::span<const double> ends, int32_t dof, bool until_invalid,
                                                       const char* what) {
  if (dof < 1 || starts.size() != ends.size() || starts.size() % static_cast<size_t>(dof) != 0) {
    return core::InvalidArgument(std::string(what) + ": " + std::to_string(starts.size()) + " start and " +
                                 std::to_string(ends.size()) + " end values are not rows of " + std::to_string(dof));
  }
  std::vector<MotionCheck> checks;
  const auto d = static_cast<size_t>(dof);
  for (size_t i = 0; i < starts.size(); i += d) {
    core::Result<MotionCheck> check = validator.CheckMotion(starts.subspan(i, d), ends.subspan(i, d));
    if (!check.ok()) return check.error();
    checks.push_back(check.value());
    if (until_invalid && !check.value().valid) break;
  }
  return checks;
}

}  // namespace

core::Result<std::vector<MotionCheck>> MotionValidator::CheckMotionsUntilInvalid(std::span<const double> starts,
                                                                                 std::span<const double> ends,
                                                                                 int32_t dof) const {
  return CheckMotionRows(*this, starts, ends, dof, true, "CheckMotionsUntilInvalid");
}

core::Result<std::vector<MotionCheck>> MotionValidator::CheckMotions(std::span<const double> starts,
                                                                     std::span<const double> ends, int32_t dof) const {
  return CheckMotionRows(*this, starts, ends, dof, false, "CheckMotions");
}

core::Status CheckStepChains(std::span<const double> states, std::span<const double> starts,
                             std::span<const double> ends, std::span<const int32_t> chains,
                             std::span<const int32_t> after, int32_t dof) {
  if (dof < 1 || states.size() % static_cast<size_t>(dof) != 0 || starts.size() != states.size() ||
      ends.size() != states.size()) {
    return core::InvalidArgument("CheckStepsUntilInvalid: " + std::to_string(states.size()) + " state, " +
                                 std::to_string(starts.size()) + " start and " + std::to_string(ends.size()) +
                                 " end values are not the same rows of " + std::to_string(dof));
  }
  int64_t sum = 0;
  for (size_t c = 0; c < chains.size(); ++c) {
    if (chains[c] < 1) {
      return core::InvalidArgument("CheckStepsUntilInvalid: chain " + std::to_string(c) + " has " +
                                   std::to_string(chains[c]) + " steps; a chain has >= 1");
    }
    sum += chains[c];
  }
  const auto steps = static_cast<int64_t>(states.size() / static_cast<size_t>(dof));
  if (!chains.empty() && sum != steps) {
    return core::InvalidArgument("CheckStepsUntilInvalid: chains of " + std::to_string(sum) + " steps for " +
                                 std::to_string(steps) + " steps");
  }
  const size_t count = chains.empty() ? 1 : chains.size();
  if (!after.empty() && after.size() != count) {
    return core::InvalidArgument("CheckStepsUntilInvalid: " + std::to_string(after.size()) +
                                 " prerequisites (after) for " + std::to_string(count) + " chains");
  }
  for (size_t c = 0; c < after.size(); ++c) {
    if (after[c] < -1 || after[c] >= static_cast<int64_t>(c)) {
      return core::InvalidArgument("CheckStepsUntilInvalid: chain " + std::to_string(c) + " comes after chain " +
                                   std::to_string(after[c]) + "; a prerequisite is an earlier chain, or -1");
    }
  }
  return {};
}

core::Result<std::vector<StepChecks>> DecideStepWaves(
    std::span<const double> states, std::span<const double> starts, std::span<const double> ends,
    std::span<const int32_t> chains, std::span<const int32_t> after, int32_t dof,
    const std::function<core::Result<std::vector<uint8_t>>(std::span<const double>)>& are_valid,
    const std::function<core::Result<std::vector<MotionCheck>>(std::span<const double>, std::span<const double>)>&
        until_invalid) {
  std::vector<uint8_t> valid;
  if (after.empty()) {
    if (!states.empty()) {
      core::Result<std::vector<uint8_t>> rows = are_valid(states);
      if (!rows.ok()) return rows.error();
      valid = std::move(rows).value();
    }
    return DecideChainSegments(valid, starts, ends, chains, dof, until_invalid);
  }
  const auto d = static_cast<size_t>(dof);
  const int32_t whole[1] = {static_cast<int32_t>(states.size() / d)};
  if (chains.empty()) chains = whole;
  std::vector<size_t> first(chains.size() + 1, 0);  // each chain's first step
  for (size_t c = 0; c < chains.size(); ++c) first[c + 1] = first[c] + static_cast<size_t>(chains[c]);
  std::vector<StepChecks> out(chains.size());
  std::vector<char> complete(chains.size(), 0);
  std::vector<size_t> members;
  std::vector<int32_t> lengths;
  std::vector<double> rows, a, b;
  for (size_t begin = 0; begin < chains.size();) {
    // The run: chains whose prerequisites were decided before it.
    size_t end = begin + 1;
    while (end < chains.size() && after[end] < static_cast<int32_t>(begin)) ++end;
    members.clear();
    lengths.clear();
    rows.clear();
    a.clear();
    b.clear();
    for (size_t c = begin; c < end; ++c) {
      if (after[c] >= 0 && complete[static_cast<size_t>(after[c])] == 0) {
        out[c].skipped = true;
        continue;
      }
      members.push_back(c);
      lengths.push_back(chains[c]);
      const auto from = static_cast<std::ptrdiff_t>(first[c] * d), to = static_cast<std::ptrdiff_t>(first[c + 1] * d);
      rows.insert(rows.end(), states.begin() + from, states.begin() + to);
      a.insert(a.end(), starts.begin() + from, starts.begin() + to);
      b.insert(b.end(), ends.begin() + from, ends.begin() + to);
    }
    begin = end;
    if (members.empty()) continue;
    valid.clear();
    if (!rows.empty()) {
      core::Result<std::vector<uint8_t>> flags = are_valid(rows);
      if (!flags.ok()) return flags.error();
      valid = std::move(flags).value();
    }
    core::Result<std::vector<StepChecks>> decided = DecideChainSegments(valid, a, b, lengths, dof, until_invalid);
    if (!decided.ok()) return decided.error();
    for (size_t k = 0; k < members.size(); ++k) {
      const size_t c = members[k];
      out[c] = std::move(decided.value()[k]);
      complete[c] = out[c].valid_steps == static_cast<size_t>(chains[c]) ? 1 : 0;
    }
  }
  return out;
}

core::Result<std::vector<StepChecks>> DecideChainSegments(
    std::span<const uint8_t> valid, std::span<const double> starts, std::span<const double> ends,
    std::span<const int32_t> chains, int32_t dof,
    const std::function<core::Result<std::vector<MotionCheck>>(std::span<const double>, std::span<const double>)>&
        until_invalid) {
  const int32_t whole[1] = {static_cast<int32_t>(valid.size())};
  if (chains.empty()) chains = whole;
  const auto d = static_cast<size_t>(dof);
  std::vector<StepChecks> out(chains.size());
  size_t first = 0;
  for (size_t c = 0; c < chains.size(); ++c) {
    const auto length = static_cast<size_t>(chains[c]);
    StepChecks& chain = out[c];
    chain.state_checks = static_cast<int64_t>(length);
    size_t valid_states = 0;
    while (valid_states < length && valid[first + valid_states] != 0) ++valid_states;
    if (valid_states > 0) {
      core::Result<std::vector<MotionCheck>> motions =
          until_invalid(starts.subspan(first * d, valid_states * d), ends.subspan(first * d, valid_states * d));
      if (!motions.ok()) return motions.error();
      chain.motions = std::move(motions).value();
    }
    while (chain.valid_steps < chain.motions.size() && chain.motions[chain.valid_steps].valid) ++chain.valid_steps;
    first += length;
  }
  return out;
}

core::Result<std::vector<StepChecks>> MotionValidator::CheckStepsUntilInvalid(
    const StateValidityChecker& state_checker, std::span<const double> states, std::span<const double> starts,
    std::span<const double> ends, std::span<const int32_t> chains, std::span<const int32_t> after,
    int32_t dof) const {
  if (core::Status s = CheckStepChains(states, starts, ends, chains, after, dof); !s.ok()) return s.error();
  return DecideStepWaves(
      states, starts, ends, chains, after, dof,
      [&](std::span<const double> rows) -> core::Result<std::vector<uint8_t>> {
        // A wave's states at once: one IsValid for one step, else one batch.
        if (rows.size() != static_cast<size_t>(dof)) return state_checker.AreValid(rows, dof);
        const core::Result<bool> one = state_checker.IsValid(rows);
        if (!one.ok()) return one.error();
        return std::vector<uint8_t>{static_cast<uint8_t>(one.value() ? 1 : 0)};
      },
      [&](std::span<const double> a, std::span<const double> b) { return CheckMotionsUntilInvalid(a, b, dof); });
}

core::Result<std::vector<uint8_t>> StateValidityChecker::AreValid(std::span<const double> qs, int32_t dof) const {
  if (dof < 1 || qs.size() % static_cast<size_t>(dof) != 0) {
    return core::InvalidArgument("AreValid: " + std::to_string(qs.size()) + " values are not rows of " +
                                 std::to_string(dof));
  }
  const auto d = static_cast<size_t>(dof);
  std::vector<uint8_t> valid(qs.size() / d, 0);
  for (size_t i = 0; i < valid.size(); ++i) {
    const core::Result<bool> row = IsValid(qs.subspan(i * d, d));
    if (!row.ok()) {
      return core::Error{row.error().code, "configuration " + std::to_string(i) + ": " + row.error().message};
    }
    valid[i] = row.value() ? 1 : 0;
  }
  return valid;
}

core::MotionRequest PlanningMotionRequest(double prepass_resolution) {
  core::MotionRequest request;
  request.mode = core::MotionRequest::Mode::kCertified;
  request.narrow_collision = false;
  request.prepass_resolution = prepass_resolution;
  return request;
}

std::unique_ptr<core::SceneCache> SceneCachePool::Acquire() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!free_.empty()) {
      auto cache = std::move(free_.back());
      free_.pop_back();
      return cache;
    }
  }
  return std::make_unique<core::SceneCache>();
}

void SceneCachePool::Release(std::unique_ptr<core::SceneCache> cache) {
  std::lock_guard<std::mutex> lock(mutex_);
  free_.push_back(std::move(cache));
}

namespace {
// A pooled cache for the length of one call.
class PooledCache {
 public:
  explicit PooledCache(SceneCachePool* pool) : pool_(pool), cache_(pool->Acquire()) {}
  ~PooledCache() { pool_->Release(std::move(cache_)); }
  PooledCache(const PooledCache&) = delete;
  PooledCache& operator=(const PooledCache&) = delete;
  core::SceneCache* get() { return cache_.get(); }

 private:
  SceneCachePool* pool_;
  std::unique_ptr<core::SceneCache> cache_;
};
}  // namespace

core::Result<bool> SceneStateValidity::IsValid(std::span<const double> q) const {
  checks_.fetch_add(1, std::memory_order_relaxed);
  PooledCache cache(&pool_);
  const core::Result<core::StateResult> result = scene_->CheckState(q, cache.get());
  if (!result.ok()) return result.error();
  return result.value().free && result.value().within_limits;
}

core::Result<std::vector<uint8_t>> SceneStateValidity::AreValid(std::span<const double> qs, int32_t dof) const {
  // Rows of another length: IsValid's error for row 0, as the default gives it.
  if (dof != scene_->dof()) return StateValidityChecker::AreValid(qs, dof);
  if (qs.size() % static_cast<size_t>(dof) != 0) {
    return core::InvalidArgument("AreValid: " + std::to_string(qs.size()) + " values are not rows of " +
                                 std::to_string(dof));
  }
  const size_t n = qs.size() / static_cast<size_t>(dof);
  std::vector<uint8_t> valid(n, 0);
  if (n == 0) return valid;
  checks_.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  std::vector<core::StateResult> results(n);
  PooledCache cache(&pool_);
  if (core::Status s = scene_->CheckStates(qs, results, cache.get()); !s.ok()) return s.error();
  for (size_t i = 0; i < n; ++i) valid[i] = results[i].free && results[i].within_limits ? 1 : 0;
  return valid;
}

core::Result<MotionCheck> SceneMotionValidator::CheckMotion(std::span<const double> q0,
                                                            std::span<const double> q1) const {
  checks_.fetch_add(1, std::memory_order_relaxed);
  PooledCache cache(&pool_);
  const core::Result<core::MotionResult> checked = scene_->CheckMotion(q0, q1, request_, cache.get());
  if (!checked.ok()) return checked.error();
  const core::MotionResult& result = checked.value();
  states_.fetch_add(result.states, std::memory_order_relaxed);
  // A check its request's `stop` ended is not valid (never a guess of free); the planner's own
  // termination then ends the call.
  MotionCheck out;
  out.valid = result.free && !result.stopped;
  out.last_valid_t = result.free ? 1.0 : result.t_free;
  out.states = result.states;
  return out;
}

core::Result<bool> SceneBlendChecker::ArcFree(const BlendArc& arc) const {
  const auto dof = static_cast<size_t>(scene_->dof());
  if (arc.center.size() != dof || arc.x.size() != dof || arc.y.size() != dof) {
    return core::InvalidArgument("blend arc: " + std::to_string(arc.center.size()) + " values, not " +
                                 std::to_string(dof));
  }
  if (!(arc.radius > 0.0 && std::isfinite(arc.radius) && arc.angle > 0.0 && arc.angle < 3.15)) return false;
  // A chord's sagitta s moves joint j by at most s * |(x_j, y_j)| from its arc: robot points by at most
  // s * per_sagitta.
  std::vector<double> spread(dof);
  for (size_t j = 0; j < dof; ++j) spread[j] = std::hypot(arc.x[j], arc.y[j]);
  const double per_sagitta = scene_->RobotDisplacementBound(spread);
  if (!std::isfinite(per_sagitta)) return false;
  PooledCache cache(&pool_);
  std::vector<double> q0(dof), q1(dof);
  for (const double margin : {1e-3, 1e-4}) {
    // Chords of angle 2 acos(1 - s / r) keep sagitta s; the margin covers 2 * s * per_sagitta.
    const double sagitta = margin / (2.0 * std::max(per_sagitta, 1e-12));
    const double step = sagitta >= arc.radius ? arc.angle : 2.0 * std::acos(1.0 - sagitta / arc.radius);
    const double chords = std::ceil(arc.angle / step);
    if (!(chords <= static_cast<double>(max_chords_))) return false;
    const auto n = static_cast<int32_t>(chords);
    core::MotionRequest request = request_;
    request.clearance += margin;
    request.clearance_world_only = false;
    bool free = true;
    arc.At(0.0, q0);
    for (int32_t c = 1; c <= n && free; ++c) {
      arc.At(arc.angle * c / n, q1);
      checks_.fetch_add(1, std::memory_order_relaxed);
      const core::Result<core::MotionResult> checked = scene_->CheckMotion(q0, q1, request, cache.get());
      if (!checked.ok()) return checked.error();
      if (checked.value().stopped) return false;  // never a guess of free
      free = checked.value().free;
      std::swap(q0, q1);
    }
    if (free) return true;
  }
  return false;
}

std::string SceneMotionValidator::Describe() const {
  if (certified()) return "certified";
  char text[96];
  if (request_.clearance > 0.0) {
    std::snprintf(text, sizeof(text), "discrete %.4g, clearance %.4g m%s", request_.resolution, request_.clearance,
                  request_.clearance_world_only ? " from the world" : "");
  } else {
    std::snprintf(text, sizeof(text), "discrete %.4g", request_.resolution);
  }
  return text;
}

namespace {
core::MotionRequest Sampled(double resolution, core::Interrupt stop, double clearance = 0.0) {
  core::MotionRequest request;
  request.stop = stop;
  request.clearance = clearance;
  // Kept from obstacles only: some arms hold links millimetres apart by design (a flange in its
  // forearm's fork), and a clearance between robot parts would reject nearly every shortcut there.
  request.clearance_world_only = true;
  request.mode = core::MotionRequest::Mode::kDiscrete;
  request.resolution = resolution > 0.0 ? resolution : 1.0;
  request.coarse_to_fine = true;  // Trees grow on free or not; a collision is met sooner this way.
  // Planners join configurations they have checked as states (or points on edges this check passed):
  // checking the ends again would add two CLEARs to every edge (a seventh of the quick states on
  // MotionBenchMaker). Whatever it misses, certification of the returned edges catches.
  request.check_ends = false;
  return request;
}
}  // namespace

core::MotionRequest WithStop(core::MotionRequest request, core::Interrupt stop) {
  request.stop = stop;
  return request;
}

ScenePlanning::ScenePlanning(std::shared_ptr<const core::Scene> scene, double quick_resolution,
                             double shortcut_clearance, core::Interrupt stop)
    : state_(scene),
      // With a quick check in front, the certified check needs no sampled pre-pass of its own.
      certified_(scene, WithStop(PlanningMotionRequest(quick_resolution > 0.0 ? 0.0 : 0.1), stop)),
      quick_(scene, Sampled(quick_resolution, stop)),
      shortcut_(scene, Sampled(quick_resolution, stop, shortcut_clearance)),
      context_{JointSpace::ForRobot(scene->robot()), &state_, &certified_, quick_resolution > 0.0 ? &quick_ : nullptr,
               quick_resolution > 0.0 ? &shortcut_ : nullptr} {}

}  // namespace proximity::planners
