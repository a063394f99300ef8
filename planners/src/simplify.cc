// Path simplification that keeps certification: every edge it introduces passes the decisive
// MotionValidator, and every point it introduces lies on an edge that already passed it.
#include <algorithm>
#include <random>

#include "planner_internal.h"

namespace proximity::planners {
namespace {

// Quick shortenings tried before giving up on one (SimplifyQuick).
constexpr int32_t kSimplifyAttempts = 3;

using EdgeCheck = Result<MotionCheck> (internal::Checker::*)(std::span<const double>, std::span<const double>);

// Drops waypoint i+1 whenever waypoints i and i+2 see each other directly.
Status ReduceVertices(internal::Checker* checker, EdgeCheck check, std::vector<Configuration>* path,
                      internal::Clock* clock, int64_t* iteration) {
  PlanOutcome why;
  for (size_t i = 0; i + 2 < path->size();) {
    if (clock->Expired((*iteration)++, &why)) return Status::Ok();
    const Result<MotionCheck> motion = (checker->*check)((*path)[i], (*path)[i + 2]);
    if (!motion.ok()) return motion.status();
    if (motion.value().valid) {
      path->erase(path->begin() + static_cast<std::ptrdiff_t>(i + 1));
    } else {
      ++i;
    }
  }
  return Status::Ok();
}

// Vertex reduction, random partial shortcuts, vertex reduction, each new edge checked by `check`.
Status Shorten(internal::Checker* checker, EdgeCheck check, const JointSpace& space, std::vector<Configuration>* path,
               Rng& rng, int32_t max_rounds, internal::Clock* clock) {
  int64_t iteration = 0;
  if (Status s = ReduceVertices(checker, check, path, clock, &iteration); !s.ok()) return s;
  // Shortcuts between random points on two different segments: the new points lie on validated
  // segments, so only the new edge between them needs a check.
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Configuration a(static_cast<size_t>(space.dof())), b(a.size());
  PlanOutcome why;
  for (int32_t round = 0; round < max_rounds && path->size() > 2; ++round) {
    if (clock->Expired(iteration++, &why)) break;
    const size_t segments = path->size() - 1;
    std::uniform_int_distribution<size_t> pick(0, segments - 1);
    size_t i = pick(rng), j = pick(rng);
    if (i == j) continue;
    if (i > j) std::swap(i, j);
    const double ti = unit(rng), tj = unit(rng);
    space.Interpolate((*path)[i], (*path)[i + 1], ti, a);
    space.Interpolate((*path)[j], (*path)[j + 1], tj, b);
    // The shortcut must be shorter than the stretch of path it replaces.
    double old_length = space.Distance(a, (*path)[i + 1]) + space.Distance((*path)[j], b);
    for (size_t k = i + 1; k < j; ++k) old_length += space.Distance((*path)[k], (*path)[k + 1]);
    if (space.Distance(a, b) >= old_length - 1e-12) continue;
    const Result<MotionCheck> motion = (checker->*check)(a, b);
    if (!motion.ok()) return motion.status();
    if (!motion.value().valid) continue;
    // path[0..i], a, b, path[j+1..]; points equal to a segment end are not repeated.
    std::vector<Configuration> next(path->begin(), path->begin() + static_cast<std::ptrdiff_t>(i + 1));
    if (space.Distance(a, next.back()) > 0.0) next.push_back(a);
    if (space.Distance(b, (*path)[j + 1]) > 0.0) next.push_back(b);
    next.insert(next.end(), path->begin() + static_cast<std::ptrdiff_t>(j + 1), path->end());
    *path = std::move(next);
  }
  return ReduceVertices(checker, check, path, clock, &iteration);
}

}  // namespace

namespace internal {

Status SimplifyQuick(const PlanningContext& context, std::vector<Configuration>* path, Rng& rng, int32_t max_rounds,
                     const Termination& termination, PlanStats* stats, bool input_decided, bool* certified) {
  Clock clock(termination);
  Checker checker(context, stats);
  // Edges decided already: the input's (when it was decided) and those certified by earlier attempts.
  std::vector<std::pair<Configuration, Configuration>> decided;
  if (input_decided) {
    for (size_t k = 0; k + 1 < path->size(); ++k) decided.emplace_back((*path)[k], (*path)[k + 1]);
  }
  // Edges the decisive check rejected in earlier attempts: a candidate holding one fails unchecked.
  std::vector<std::pair<Configuration, Configuration>> rejected;
  auto among = [](const std::vector<std::pair<Configuration, Configuration>>& edges, const Configuration& a,
                  const Configuration& b) {
    return std::any_of(edges.begin(), edges.end(), [&](const auto& e) { return e.first == a && e.second == b; });
  };
  *certified = false;
  // A shortcut the quick check passed can still graze an obstacle between its samples. Shortening
  // again from the input, with other random shortcuts, nearly always gives a path that certifies; a few
  // attempts are far cheaper than shortening with decisive checks throughout.
  PlanOutcome why;
  for (int32_t attempt = 0; attempt < kSimplifyAttempts; ++attempt) {
    if (attempt > 0 && clock.Expired(0, &why)) return Status::Ok();
    std::vector<Configuration> candidate = *path;
    if (Status s = Shorten(&checker, &Checker::Shortcut, context.space, &candidate, rng, max_rounds, &clock); !s.ok()) {
      return s;
    }
    bool failed = false;
    for (size_t k = 0; k + 1 < candidate.size() && !failed; ++k) {
      failed = among(rejected, candidate[k], candidate[k + 1]);
    }
    for (size_t k = 0; k + 1 < candidate.size() && !failed; ++k) {
      if (among(decided, candidate[k], candidate[k + 1])) continue;
      const Result<MotionCheck> motion = checker.Motion(candidate[k], candidate[k + 1]);
      if (!motion.ok()) return motion.status();
      if (!motion.value().valid) {
        ++stats->certification_failures;
        rejected.emplace_back(candidate[k], candidate[k + 1]);
        failed = true;
      } else {
        decided.emplace_back(candidate[k], candidate[k + 1]);
      }
    }
    if (!failed) {
      *path = std::move(candidate);
      *certified = true;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace internal

Status SimplifyPath(const PlanningContext& context, std::vector<Configuration>* path, Rng& rng, int32_t max_rounds,
                    const Termination& termination, PlanStats* stats) {
  PlanStats local;
  PlanStats* counts = stats != nullptr ? stats : &local;
  internal::Clock clock(termination);
  internal::Checker checker(context, counts);
  if (checker.quick_is_final()) {
    return Shorten(&checker, &internal::Checker::Motion, context.space, path, rng, max_rounds, &clock);
  }
  // With a quick check: shorten a copy by quick checks, then decide only the copy's new edges (edges
  // it shares with the given path were decided already). Should one fail, shorten again with decisive
  // checks throughout.
  bool certified = false;
  if (Status s = internal::SimplifyQuick(context, path, rng, max_rounds, termination, counts, true, &certified);
      !s.ok() || certified) {
    return s;
  }
  return Shorten(&checker, &internal::Checker::Motion, context.space, path, rng, max_rounds, &clock);
}

}  // namespace proximity::planners
