#pragma once
/// @file
/// An SRDF's <disable_collisions> suggested by sampling, as MoveIt's Setup Assistant does: link pairs
/// joined by a joint are "Adjacent"; pairs that collide in every sampled state (the default state among
/// them) are "Always"; pairs that collide in none are "Never". A pair that collides in some sampled states
/// and not in others stays checked. Collisions are decided by the core's exact checks (every colliding
/// pair at a state: Scene::CollidingParts; pairs the robot model never checks, rigidly joined ones, by
/// CollideGeometry at the default state, where their relative pose is that of every state).
///
/// "Never" is a judgement from samples, as in MoveIt: a pair that collides only in a region the samples
/// missed is disabled wrongly. More samples make that less likely; review the pairs before use.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "proximity/core/base/result.h"
#include "proximity/core/base/types.h"
#include "proximity/core/robot/robot_model.h"

namespace proximity::tools {

/// How many states to sample and from which seed.
struct SrdfSuggestOptions {
  /// Random states drawn uniformly within the joint limits (continuous joints in [-pi, pi]), besides the
  /// default state. MoveIt's Setup Assistant draws 10,000 by default; so does this.
  int64_t samples = 10'000;
  uint64_t seed = 1;
  /// Keep the sampled states in SrdfSuggestion::sampled (for checks and reports).
  bool keep_states = false;
  /// Asked between states; the suggestion then ends with a kStopped error.
  core::Interrupt stop;
};

/// One link pair's verdict.
struct SuggestedPair {
  std::string link1;
  std::string link2;
  /// "Adjacent", "Always", "Never", or "" for a pair that stays checked.
  std::string reason;
  /// States (of SrdfSuggestion::states) in which the pair collided; for adjacent pairs 0 (not tested).
  int64_t collisions = 0;
};

struct SrdfSuggestion {
  /// Every pair of links that both have collision geometry, in link order.
  std::vector<SuggestedPair> pairs;
  /// States sampled, the default state included.
  int64_t states = 0;
  /// Sampled states in which no pair collides but those the suggestion disables.
  int64_t free_states = 0;
  /// With SrdfSuggestOptions::keep_states: the states, the default state first.
  std::vector<std::vector<double>> sampled;
};

/// Samples `robot`, which should be loaded without an SRDF (pairs its SRDF disables are never tested).
[[nodiscard]] core::Result<SrdfSuggestion> SuggestDisabledCollisions(std::shared_ptr<const core::RobotModel> robot,
                                                                     const SrdfSuggestOptions& options = {});

/// The suggestion as SRDF text the loader accepts: <robot name> with one <disable_collisions> per
/// disabled pair, and a comment saying how it was made.
std::string SuggestionSrdf(const core::RobotModel& robot, const SrdfSuggestion& suggestion,
                           const SrdfSuggestOptions& options);

}  // namespace proximity::tools
