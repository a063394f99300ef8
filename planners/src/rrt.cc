// RRT (LaValle 1998) and RRT-Connect (Kuffner, LaValle 2000) over the validity interfaces.
#include <algorithm>
#include <cmath>
#include <random>

#include "planner_internal.h"
#include "proximity/planners/nearest.h"

namespace proximity::planners::internal {
namespace {

// A tree rooted at a start or goal: configurations row after row, parents, and their neighbour index.
class Tree {
 public:
  explicit Tree(const JointSpace& space) : dof_(static_cast<size_t>(space.dof())), nn_(space) {}
  int32_t Add(std::span<const double> q, int32_t parent) {
    const int32_t id = static_cast<int32_t>(parent_.size());
    q_.insert(q_.end(), q.begin(), q.end());
    parent_.push_back(parent);
    nn_.Add(q, id);
    return id;
  }
  std::span<const double> q(int32_t i) const { return {q_.data() + static_cast<size_t>(i) * dof_, dof_}; }
  int32_t parent(int32_t i) const { return parent_[static_cast<size_t>(i)]; }
  int32_t size() const { return static_cast<int32_t>(parent_.size()); }
  int32_t Nearest(std::span<const double> q) const { return nn_.Nearest(q); }
  // Configurations from vertex i up to the root, in that order.
  void PathToRoot(int32_t i, std::vector<Configuration>* out) const {
    for (; i >= 0; i = parent(i)) out->emplace_back(q(i).begin(), q(i).end());
  }

 private:
  size_t dof_;
  std::vector<double> q_;
  std::vector<int32_t> parent_;
  NearestNeighbors nn_;
};

enum class Growth { kTrapped, kAdvanced, kReached };

class RrtPlanner final : public Planner {
 public:
  RrtPlanner(const PlanningContext& context, const PlannerOptions& options, bool connect)
      : context_(context), options_(options), connect_(connect) {}

  PlannerType type() const override { return connect_ ? PlannerType::kRrtConnect : PlannerType::kRrt; }

  Result<PlanResult> Solve(std::span<const double> start, std::span<const double> goal,
                           const Termination& termination) override {
    PlanResult result;
    Clock clock(termination);
    Checker checker(context_, &result.stats);
    bool ends_valid = false;
    if (Status s = CheckEnds(&checker, start, goal, &result.outcome, &ends_valid); !s.ok()) return s.error();
    if (!ends_valid) {
      result.stats.plan_time_s = clock.Elapsed();
      return result;
    }
    Rng rng(options_.seed);
    const JointSpace& space = context_.space;
    const double range = options_.range > 0.0 ? options_.range : 0.2 * space.MaxExtent();

    // The straight edge first: when it is free, no tree is needed.
    MotionCheck direct;
    if (Status s = checker.Motion(start, goal, &direct); !s.ok()) return s.error();
    if (direct.valid) {
      result.outcome = PlanOutcome::kSolved;
      result.path = {Configuration(start.begin(), start.end()), Configuration(goal.begin(), goal.end())};
      result.stats.vertices = 2;
      result.stats.edges = 1;
      if (Status s = Finish(context_, options_, &clock, rng, &result); !s.ok()) return s.error();
      return result;
    }

    Tree start_tree(space), goal_tree(space);
    start_tree.Add(start, -1);
    goal_tree.Add(goal, -1);
    Configuration sample(static_cast<size_t>(space.dof()));
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    Tree* a = &start_tree;
    Tree* b = &goal_tree;
    bool solved = false;
    for (int64_t iteration = 0;; ++iteration) {
      if (clock.Expired(iteration, &result.outcome)) break;
      ++result.stats.iterations;
      bool toward_goal = false;
      if (!connect_ && unit(rng) < options_.goal_bias) {
        sample.assign(goal.begin(), goal.end());
        toward_goal = true;
      } else {
        space.Sample(rng, sample);
      }
      int32_t added = -1;
      auto grown = Grow(&checker, a, sample, range, &added);
      if (!grown.ok()) return grown.error();
      if (!connect_) {
        if (grown.value() == Growth::kReached && toward_goal) {
          start_tree.PathToRoot(added, &result.path);
          std::reverse(result.path.begin(), result.path.end());
          result.path.back().assign(goal.begin(), goal.end());
          solved = true;
          break;
        }
        continue;
      }
      if (grown.value() != Growth::kTrapped) {
        // Connect the other tree to the new vertex as far as it goes.
        const Configuration target(a->q(added).begin(), a->q(added).end());
        int32_t reached = -1;
        Growth g = Growth::kAdvanced;
        while (g == Growth::kAdvanced) {
          auto step = Grow(&checker, b, target, range, &reached);
          if (!step.ok()) return step.error();
          g = step.value();
        }
        if (g == Growth::kReached) {
          // a's branch to `added` and b's branch from `reached` (the same configuration) to its root.
          std::vector<Configuration> from_a, from_b;
          a->PathToRoot(added, &from_a);
          b->PathToRoot(b->parent(reached), &from_b);
          std::reverse(from_a.begin(), from_a.end());
          from_a.insert(from_a.end(), from_b.begin(), from_b.end());
          if (a == &goal_tree) std::reverse(from_a.begin(), from_a.end());
          result.path = std::move(from_a);
          solved = true;
          break;
        }
      }
      std::swap(a, b);
    }
    result.stats.vertices = start_tree.size() + goal_tree.size();
    result.stats.edges = result.stats.vertices - 2;
    if (solved) result.outcome = PlanOutcome::kSolved;
    if (Status s = Finish(context_, options_, &clock, rng, &result); !s.ok()) return s.error();
    return result;
  }

 private:
  // Extends `tree` from its vertex nearest `target` by at most `range` toward it.
  Result<Growth> Grow(Checker* checker, Tree* tree, std::span<const double> target, double range, int32_t* added) {
    const JointSpace& space = context_.space;
    const int32_t near = tree->Nearest(target);
    const double d = space.Distance(tree->q(near), target);
    Configuration q(target.begin(), target.end());
    const bool reach = d <= range;
    if (!reach) space.Interpolate(tree->q(near), target, range / d, q);
    bool valid = false;
    if (Status s = checker->Valid(q, &valid); !s.ok()) return s.error();
    if (!valid) return Growth::kTrapped;
    MotionCheck motion;
    if (Status s = checker->Motion(tree->q(near), q, &motion); !s.ok()) return s.error();
    if (!motion.valid) return Growth::kTrapped;
    *added = tree->Add(q, near);
    return reach ? Growth::kReached : Growth::kAdvanced;
  }

  PlanningContext context_;
  PlannerOptions options_;
  bool connect_;
};

}  // namespace

std::unique_ptr<Planner> MakeRrt(const PlanningContext& context, const PlannerOptions& options, bool connect) {
  return std::make_unique<RrtPlanner>(context, options, connect);
}

}  // namespace proximity::planners::internal
