// Path simplification that keeps certification: every edge it introduces passes the decisive
// MotionValidator, and every point it introduces lies on an edge that already passed it.
#include <algorithm>
#include <random>

#include "planner_internal.h"

namespace proximity::planners {
namespace {

// Quick shortenings tried before giving up on one (SimplifyQuick).
constexpr int32_t kSimplifyAttempts = 3;
// Shortcuts proposed together and checked in one batch (one round trip to a remote validator).
constexpr size_t kShortcutBatch = 8;
// The most waypoint pairs a vertex reduction checks in one call when calls are round trips (a path of
// up to 10 waypoints); its passes would check about half as many, in several calls.
constexpr size_t kPairTable = 36;

// Drops waypoints whose neighbours see each other directly: every waypoint's pair of neighbours
// (path[i], path[i + 2]) is checked in one batch, and waypoints whose pair is valid are dropped from the
// first on, never two in a row (each dropped waypoint's neighbours stay, so the edge that replaces it
// is the one checked); passes repeat until one drops none. `decisive`: Motion() checks, else
// Shortcut() checks. Every pass checks pairs of the input's waypoints: when the validator's calls are
// round trips and the input is short, all such pairs are checked in one call first and the passes read
// their answers (the same drops, one round trip instead of one a pass; quick checks only: decisive
// ones cost more than a round trip).
Status ReduceVertices(internal::Checker* checker, bool decisive, std::vector<Configuration>* path,
                      internal::Clock* clock, int64_t* iteration) {
  PlanOutcome why;
  const size_t n = path->size();
  // pair_valid[i * n + k]: input waypoints i and k (k >= i + 2) see each other; empty without a table.
  std::vector<char> pair_valid;
  if (!decisive && n > 3 && (n - 1) * (n - 2) / 2 <= kPairTable &&
      checker->EdgeValidator(false).calls_are_round_trips()) {
    if (clock->Expired(*iteration, &why)) return Status::Ok();
    std::vector<Configuration> as, bs;
    for (size_t i = 0; i + 2 < n; ++i) {
      for (size_t k = i + 2; k < n; ++k) {
        as.push_back((*path)[i]);
        bs.push_back((*path)[k]);
      }
    }
    const Result<std::vector<MotionCheck>> checks = checker->Edges(decisive, as, bs);
    if (!checks.ok()) return checks.status();
    pair_valid.assign(n * n, 0);
    size_t e = 0;
    for (size_t i = 0; i + 2 < n; ++i) {
      for (size_t k = i + 2; k < n; ++k) pair_valid[i * n + k] = checks.value()[e++].valid ? 1 : 0;
    }
  }
  std::vector<size_t> index(n), kept_index;  // the path's waypoints as input waypoints
  for (size_t j = 0; j < n; ++j) index[j] = j;
  std::vector<Configuration> kept;
  std::vector<char> valid;
  while (path->size() > 2) {
    if (clock->Expired((*iteration)++, &why)) return Status::Ok();
    valid.assign(path->size() - 2, 0);
    if (!pair_valid.empty()) {
      for (size_t j = 1; j + 1 < path->size(); ++j) valid[j - 1] = pair_valid[index[j - 1] * n + index[j + 1]];
    } else {
      const std::span<const Configuration> waypoints(*path);
      const Result<std::vector<MotionCheck>> checks =
          checker->Edges(decisive, waypoints.first(waypoints.size() - 2), waypoints.subspan(2));
      if (!checks.ok()) return checks.status();
      for (size_t j = 0; j < valid.size(); ++j) valid[j] = checks.value()[j].valid ? 1 : 0;
    }
    // Waypoint j goes when its neighbours see each other and j - 1 stays (then j + 1 stays too).
    std::vector<char> drop(path->size(), 0);
    for (size_t j = 1; j + 1 < path->size(); ++j) drop[j] = valid[j - 1] != 0 && !drop[j - 1];
    kept.clear();
    kept_index.clear();
    for (size_t j = 0; j < path->size(); ++j) {
      if (drop[j]) continue;
      kept.push_back((*path)[j]);
      kept_index.push_back(index[j]);
    }
    if (kept.size() == path->size()) return Status::Ok();
    path->swap(kept);
    index.swap(kept_index);
  }
  return Status::Ok();
}

// Vertex reduction, random partial shortcuts, vertex reduction, each new edge checked by Motion()
// (`decisive`) or Shortcut(). Shortcuts are proposed up to kShortcutBatch at a time on stretches of the
// path that do not overlap, checked in one batch, and the valid ones applied.
Status Shorten(internal::Checker* checker, bool decisive, const JointSpace& space, std::vector<Configuration>* path,
               Rng& rng, int32_t max_rounds, internal::Clock* clock) {
  int64_t iteration = 0;
  if (Status s = ReduceVertices(checker, decisive, path, clock, &iteration); !s.ok()) return s;
  // Shortcuts between random points on two different segments: the new points lie on validated
  // segments, so only the new edge between them needs a check.
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  struct Proposal {
    size_t i, j;  // the shortcut runs from a point on segment i to one on segment j
  };
  std::vector<Proposal> batch;
  std::vector<Configuration> as, bs;
  PlanOutcome why;
  for (int32_t round = 0; round < max_rounds && path->size() > 2;) {
    if (clock->Expired(iteration++, &why)) break;
    const size_t segments = path->size() - 1;
    std::uniform_int_distribution<size_t> pick(0, segments - 1);
    batch.clear();
    as.clear();
    bs.clear();
    Configuration a(static_cast<size_t>(space.dof())), b(a.size());
    while (round < max_rounds && batch.size() < kShortcutBatch) {
      ++round;
      size_t i = pick(rng), j = pick(rng);
      if (i == j) continue;
      if (i > j) std::swap(i, j);
      const double ti = unit(rng), tj = unit(rng);
      if (std::any_of(batch.begin(), batch.end(), [&](const Proposal& p) { return !(j < p.i || p.j < i); })) continue;
      space.Interpolate((*path)[i], (*path)[i + 1], ti, a);
      space.Interpolate((*path)[j], (*path)[j + 1], tj, b);
      // The shortcut must be shorter than the stretch of path it replaces.
      double old_length = space.Distance(a, (*path)[i + 1]) + space.Distance((*path)[j], b);
      for (size_t k = i + 1; k < j; ++k) old_length += space.Distance((*path)[k], (*path)[k + 1]);
      if (space.Distance(a, b) >= old_length - 1e-12) continue;
      batch.push_back({i, j});
      as.push_back(a);
      bs.push_back(b);
    }
    if (batch.empty()) continue;
    const Result<std::vector<MotionCheck>> checks = checker->Edges(decisive, as, bs);
    if (!checks.ok()) return checks.status();
    // Applied from the last stretch of the path to the first: the earlier ones keep their indices.
    std::vector<size_t> order(batch.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return batch[x].i > batch[y].i; });
    for (size_t k : order) {
      if (!checks.value()[k].valid) continue;
      const size_t i = batch[k].i, j = batch[k].j;
      // path[0..i], a, b, path[j+1..]; points equal to a segment end are not repeated.
      std::vector<Configuration> next(path->begin(), path->begin() + static_cast<std::ptrdiff_t>(i + 1));
      if (space.Distance(as[k], next.back()) > 0.0) next.push_back(as[k]);
      if (space.Distance(bs[k], (*path)[j + 1]) > 0.0) next.push_back(bs[k]);
      next.insert(next.end(), path->begin() + static_cast<std::ptrdiff_t>(j + 1), path->end());
      *path = std::move(next);
    }
  }
  return ReduceVertices(checker, decisive, path, clock, &iteration);
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
    if (Status s = Shorten(&checker, false, context.space, &candidate, rng, max_rounds, &clock); !s.ok()) {
      return s;
    }
    bool failed = false;
    for (size_t k = 0; k + 1 < candidate.size() && !failed; ++k) {
      failed = among(rejected, candidate[k], candidate[k + 1]);
    }
    // The edges not decided yet, in path order, decided in one call up to the first that fails.
    std::vector<std::span<const double>> starts, ends;
    for (size_t k = 0; k + 1 < candidate.size() && !failed; ++k) {
      if (among(decided, candidate[k], candidate[k + 1])) continue;
      starts.emplace_back(candidate[k]);
      ends.emplace_back(candidate[k + 1]);
    }
    if (!failed && !starts.empty()) {
      const Result<std::vector<MotionCheck>> checks = checker.MotionsUntilInvalid(starts, ends);
      if (!checks.ok()) return checks.status();
      for (size_t k = 0; k < checks.value().size(); ++k) {
        const Configuration a(starts[k].begin(), starts[k].end()), b(ends[k].begin(), ends[k].end());
        if (checks.value()[k].valid) {
          decided.emplace_back(a, b);
        } else {
          ++stats->certification_failures;
          rejected.emplace_back(a, b);
          failed = true;
        }
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
    return Shorten(&checker, true, context.space, path, rng, max_rounds, &clock);
  }
  // With a quick check: shorten a copy by quick checks, then decide only the copy's new edges (edges
  // it shares with the given path were decided already). Should one fail, shorten again with decisive
  // checks throughout.
  bool certified = false;
  if (Status s = internal::SimplifyQuick(context, path, rng, max_rounds, termination, counts, true, &certified);
      !s.ok() || certified) {
    return s;
  }
  return Shorten(&checker, true, context.space, path, rng, max_rounds, &clock);
}

}  // namespace proximity::planners
