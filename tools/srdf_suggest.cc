#include "tools/srdf_suggest.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>

#include "proximity/core/scene/scene.h"

namespace proximity::tools {
namespace {

constexpr double kPi = 3.14159265358979323846;

// XML attribute text: the five characters XML reserves, escaped.
std::string Escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

core::Result<SrdfSuggestion> SuggestDisabledCollisions(std::shared_ptr<const core::RobotModel> robot,
                                                       const SrdfSuggestOptions& options) {
  if (robot == nullptr) return core::InvalidArgument("srdf suggest: no robot");
  if (options.samples < 0) {
    return core::InvalidArgument("srdf suggest: samples must be >= 0, got " + std::to_string(options.samples));
  }
  const core::RobotModel& model = *robot;
  core::SceneDescription description;
  description.robot = robot;
  auto built = core::Scene::Build(std::move(description));
  if (!built.ok()) return built.error();
  const core::Scene& scene = *built.value();

  const auto n = static_cast<size_t>(model.num_links());
  std::vector<int64_t> collided(n * n, 0);  // [a * n + b], a < b
  core::SceneCache cache;
  core::CollidingPartsRequest request;
  request.world = false;
  request.max_pairs = 1 << 24;
  request.stop = options.stop;

  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<double> q = model.DefaultConfiguration();
  SrdfSuggestion out;
  std::vector<std::pair<core::LinkIndex, core::LinkIndex>> at_state;
  std::vector<std::vector<std::pair<core::LinkIndex, core::LinkIndex>>> per_state;
  for (int64_t s = 0; s <= options.samples; ++s) {
    if (s > 0) {
      for (int32_t i = 0; i < model.num_positions(); ++i) {
        const bool wraps = model.is_continuous(i);
        const double lo = wraps ? -kPi : model.lower_limits()[static_cast<size_t>(i)];
        const double hi = wraps ? kPi : model.upper_limits()[static_cast<size_t>(i)];
        q[static_cast<size_t>(i)] = lo + unit(rng) * (hi - lo);
      }
    }
    if (options.stop()) return core::Stopped("srdf suggest: stopped after " + std::to_string(s) + " states");
    auto parts = scene.CollidingParts(q, request, &cache);
    if (!parts.ok()) return parts.error();
    if (parts.value().truncated) {
      return core::ResourceExhausted("srdf suggest: more colliding geometry pairs at one state than " +
                                     std::to_string(request.max_pairs));
    }
    at_state.clear();
    for (const core::PosedPartPair& p : parts.value().pairs) {
      if (!p.pair.self || p.pair.attached >= 0 || p.pair.other_attached >= 0) continue;
      const auto [a, b] = std::minmax(p.pair.link, p.pair.other_link);
      if (std::find(at_state.begin(), at_state.end(), std::pair{a, b}) == at_state.end()) at_state.emplace_back(a, b);
    }
    for (const auto& [a, b] : at_state) ++collided[static_cast<size_t>(a) * n + static_cast<size_t>(b)];
    per_state.push_back(at_state);
    if (options.keep_states) out.sampled.push_back(q);
  }
  out.states = options.samples + 1;

  // Pairs the model never checks: adjacent ones are "Adjacent" (untested, as in MoveIt); rigidly joined
  // ones keep one relative pose, so one exact test at the default state decides them for every state.
  const std::vector<double> q0 = model.DefaultConfiguration();
  for (core::LinkIndex a = 0; a < model.num_links(); ++a) {
    if (model.link(a).geometries.empty()) continue;
    for (core::LinkIndex b = a + 1; b < model.num_links(); ++b) {
      if (model.link(b).geometries.empty()) continue;
      SuggestedPair pair{model.link(a).name, model.link(b).name, "", 0};
      const core::AllowedReason why = model.AllowedPairReason(a, b);
      if (why == core::AllowedReason::kAdjacent) {
        pair.reason = "Adjacent";
      } else if (why == core::AllowedReason::kRigid) {
        auto named = scene.NamedParts(pair.link1, pair.link2, q0, &cache);
        if (!named.ok()) return named.error();
        bool touching = false;
        for (const core::PosedPartPair& p : named.value()) {
          auto hit = core::CollideGeometry(*p.robot, p.X_WR, *p.other, p.X_WO);
          if (!hit.ok()) return hit.error();
          touching = touching || hit.value().colliding;
        }
        pair.collisions = touching ? out.states : 0;
        pair.reason = touching ? "Always" : "Never";
      } else {
        pair.collisions = collided[static_cast<size_t>(a) * n + static_cast<size_t>(b)];
        if (pair.collisions == out.states) pair.reason = "Always";
        if (pair.collisions == 0) pair.reason = "Never";
      }
      out.pairs.push_back(std::move(pair));
    }
  }
  // A sampled state is free under the suggestion when every pair colliding there is disabled.
  std::map<std::pair<core::LinkIndex, core::LinkIndex>, bool> disabled;
  for (const SuggestedPair& p : out.pairs) {
    disabled[std::minmax(model.FindLink(p.link1).value(), model.FindLink(p.link2).value())] = !p.reason.empty();
  }
  for (const auto& pairs : per_state) {
    bool free = true;
    for (const auto& ab : pairs) free = free && disabled[ab];
    out.free_states += free ? 1 : 0;
  }
  return out;
}

std::string SuggestionSrdf(const core::RobotModel& robot, const SrdfSuggestion& suggestion,
                           const SrdfSuggestOptions& options) {
  std::string out = "<?xml version=\"1.0\"?>\n";
  out += "<!-- Suggested by proximity-scene srdf suggest from " + std::to_string(suggestion.states) +
         " states (the default state and " + std::to_string(options.samples) + " random ones, seed " +
         std::to_string(options.seed) +
         "): Adjacent pairs are joined by a joint; Always pairs collided in every state; Never pairs in none "
         "(a judgement from samples: review them). -->\n";
  out += "<robot name=\"" + Escape(robot.name()) + "\">\n";
  for (const SuggestedPair& p : suggestion.pairs) {
    if (p.reason.empty()) continue;
    out += "  <disable_collisions link1=\"" + Escape(p.link1) + "\" link2=\"" + Escape(p.link2) + "\" reason=\"" +
           p.reason + "\"/>\n";
  }
  out += "</robot>\n";
  return out;
}

}  // namespace proximity::tools
