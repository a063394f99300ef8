// RRT (LaValle 1998) and RRT-Connect (Kuffner, LaValle 2000) over the validity interfaces. With a quick
// motion check in the context, tree edges are checked by it and only a candidate path's edges by the
// decisive validator; an edge that fails there is cut from its tree with everything below it, and
// the search goes on (lazy collision checking).
#include <algorithm>
#include <cmath>
#include <random>

#include "planner_internal.h"
#include "proximity/planners/nearest.h"

namespace proximity::planners::internal {
namespace {

// A tree rooted at a start or goal: configurations row after row, parents (always of a smaller index),
// whether the edge to the parent passed the decisive check, and the neighbour index.
class Tree {
 public:
  explicit Tree(const JointSpace& space) : dof_(static_cast<size_t>(space.dof())), nn_(space) {}
  int32_t Add(std::span<const double> q, int32_t parent, bool decided) {
    const int32_t id = static_cast<int32_t>(parent_.size());
    q_.insert(q_.end(), q.begin(), q.end());
    parent_.push_back(parent);
    decided_.push_back(decided);
    nn_.Add(q, id);
    return id;
  }
  std::span<const double> q(int32_t i) const { return {q_.data() + static_cast<size_t>(i) * dof_, dof_}; }
  int32_t parent(int32_t i) const { return parent_[static_cast<size_t>(i)]; }
  bool decided(int32_t i) const { return decided_[static_cast<size_t>(i)] != 0; }
  void set_decided(int32_t i) { decided_[static_cast<size_t>(i)] = 1; }
  int32_t size() const { return static_cast<int32_t>(parent_.size()); }
  int32_t Nearest(std::span<const double> q) const { return nn_.Nearest(q); }
  // Vertices from i up to the root, in that order.
  void Branch(int32_t i, std::vector<int32_t>* out) const {
    out->clear();
    for (; i >= 0; i = parent(i)) out->push_back(i);
  }
  // Removes vertex v (not the root) and every vertex below it; rebuilds the neighbour index.
  void Cut(int32_t v) {
    std::vector<char> dead(parent_.size(), 0);
    std::vector<int32_t> index(parent_.size(), -1);
    dead[static_cast<size_t>(v)] = 1;
    std::vector<double> q;
    std::vector<int32_t> parent;
    std::vector<char> decided;
    nn_.Clear();
    for (size_t i = 0; i < parent_.size(); ++i) {
      if (i > 0 && dead[static_cast<size_t>(parent_[i])]) dead[i] = 1;
      if (dead[i]) continue;
      index[i] = static_cast<int32_t>(parent.size());
      q.insert(q.end(), q_.begin() + static_cast<std::ptrdiff_t>(i * dof_),
               q_.begin() + static_cast<std::ptrdiff_t>((i + 1) * dof_));
      parent.push_back(parent_[i] < 0 ? -1 : index[static_cast<size_t>(parent_[i])]);
      decided.push_back(decided_[i]);
      nn_.Add(std::span<const double>(q.data() + q.size() - dof_, dof_), index[i]);
    }
    q_ = std::move(q);
    parent_ = std::move(parent);
    decided_ = std::move(decided);
  }

 private:
  size_t dof_;
  std::vector<double> q_;
  std::vector<int32_t> parent_;
  std::vector<char> decided_;
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
    Rng rng(options_.seed);
    bool done = false;
    if (Status s = Begin(context_, options_, &checker, &clock, rng, start, goal, &result, &done); !s.ok()) {
      return s.error();
    }
    if (done) return result;
    const JointSpace& space = context_.space;
    const double range = options_.range > 0.0 ? options_.range : 0.2 * space.MaxExtent();

    Tree start_tree(space), goal_tree(space);
    start_tree.Add(start, -1, true);
    goal_tree.Add(goal, -1, true);
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
          // The goal joined the tree: a candidate path from the root to it.
          std::vector<Configuration> candidate = Candidate(*a, added, nullptr, -1);
          candidate.back().assign(goal.begin(), goal.end());
          if (Status s = FastFinish(context_, options_, &clock, rng, candidate, &result, &done); !s.ok()) return s.error();
          if (done) return Stats(start_tree, goal_tree, std::move(result));
          bool certified = false;
          if (Status s = Certify(&checker, a, added, nullptr, -1, &certified, &result.stats); !s.ok()) return s.error();
          if (!certified) continue;
          result.path = std::move(candidate);
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
        bool expired = false;
        while (g == Growth::kAdvanced) {
          // A connection takes distance / range steps: as many as the caller's range makes it, so each
          // step asks the clock too (a range of 1e-300 must still end on time).
          if (clock.Expired(iteration, &result.outcome)) {
            expired = true;
            break;
          }
          auto step = Connect(&checker, b, target, range, &reached);
          if (!step.ok()) return step.error();
          g = step.value();
        }
        if (expired) break;
        if (g == Growth::kReached) {
          std::vector<Configuration> candidate = Candidate(*a, added, b, reached);
          if (a == &goal_tree) std::reverse(candidate.begin(), candidate.end());
          if (Status s = FastFinish(context_, options_, &clock, rng, candidate, &result, &done); !s.ok()) return s.error();
          if (done) return Stats(start_tree, goal_tree, std::move(result));
          bool certified = false;
          if (Status s = Certify(&checker, a, added, b, reached, &certified, &result.stats); !s.ok()) return s.error();
          if (certified) {
            result.path = std::move(candidate);
            solved = true;
            break;
          }
        }
      }
      std::swap(a, b);
    }
    if (solved) result.outcome = PlanOutcome::kSolved;
    if (Status s = Finish(context_, options_, &clock, rng, &result); !s.ok()) return s.error();
    return Stats(start_tree, goal_tree, std::move(result));
  }

 private:
  static PlanResult Stats(const Tree& start_tree, const Tree& goal_tree, PlanResult result) {
    result.stats.vertices = start_tree.size() + goal_tree.size();
    result.stats.edges = result.stats.vertices - 2;
    return result;
  }

  // The path from a's root to `va` and on, when b is given, from b's vertex `vb` (the same configuration
  // as va) to b's root.
  static std::vector<Configuration> Candidate(const Tree& a, int32_t va, const Tree* b, int32_t vb) {
    std::vector<int32_t> branch;
    std::vector<Configuration> path;
    a.Branch(va, &branch);
    for (auto it = branch.rbegin(); it != branch.rend(); ++it) path.emplace_back(a.q(*it).begin(), a.q(*it).end());
    if (b != nullptr) {
      b->Branch(b->parent(vb), &branch);
      for (int32_t v : branch) path.emplace_back(b->q(v).begin(), b->q(v).end());
    }
    return path;
  }

  // Decides every undecided edge on the branches from `va` (in tree a) and `vb` (in tree b, or none) to
  // their roots, nearest the roots first. An edge that fails is cut with its subtree; *certified when
  // none failed.
  Status Certify(Checker* checker, Tree* a, int32_t va, Tree* b, int32_t vb, bool* certified, PlanStats* stats) {
    *certified = true;
    if (checker->quick_is_final()) return Status::Ok();
    // The undecided edges in the order they are decided, sent at once: the checks stop after the first
    // that fails, exactly as deciding them one by one would.
    std::vector<int32_t> branch;
    std::vector<std::pair<Tree*, int32_t>> edges;
    std::vector<std::span<const double>> from, to;
    for (auto [tree, v] : {std::pair<Tree*, int32_t>{a, va}, std::pair<Tree*, int32_t>{b, vb}}) {
      if (tree == nullptr) continue;
      tree->Branch(v, &branch);
      for (auto it = branch.rbegin(); it != branch.rend(); ++it) {
        const int32_t u = *it;
        if (tree->parent(u) < 0 || tree->decided(u)) continue;
        edges.emplace_back(tree, u);
        from.push_back(tree->q(tree->parent(u)));
        to.push_back(tree->q(u));
      }
    }
    if (edges.empty()) return Status::Ok();
    const Result<std::vector<MotionCheck>> checks = checker->MotionsUntilInvalid(from, to);
    if (!checks.ok()) return checks.status();
    for (size_t i = 0; i < checks.value().size(); ++i) {
      auto [tree, u] = edges[i];
      if (!checks.value()[i].valid) {
        ++stats->certification_failures;
        tree->Cut(u);
        *certified = false;
        return Status::Ok();
      }
      tree->set_decided(u);
    }
    return Status::Ok();
  }

  // Up to kConnectSteps steps of Grow toward `target` at once, checked as one batch: the steps' states
  // in one call (Checker::ValidRows), then their segments in order up to the first that fails, short of
  // the first invalid state (Checker::QuickUntilInvalid). The steps are the points Grow would make one
  // at a time (each `range` on from the last toward the target: each new vertex is the tree's nearest to
  // it), and the vertices added are those Grow would add; a remote scene answers in two round trips
  // instead of two per step. Returns what the last step did; *added: the last vertex added.
  Result<Growth> Connect(Checker* checker, Tree* tree, std::span<const double> target, double range, int32_t* added) {
    constexpr int kConnectSteps = 8;
    const JointSpace& space = context_.space;
    const auto dof = static_cast<size_t>(space.dof());
    const int32_t near = tree->Nearest(target);
    steps_.resize(kConnectSteps * dof);  // no reallocation below: `last` may point into it
    size_t n = 0;
    bool reach = false;
    while (n < static_cast<size_t>(kConnectSteps) && !reach) {
      std::span<const double> last = n == 0 ? tree->q(near) : std::span<const double>(steps_.data() + (n - 1) * dof, dof);
      std::span<double> q(steps_.data() + n * dof, dof);
      const double d = space.Distance(last, target);
      reach = d <= range;
      if (reach) {
        std::copy(target.begin(), target.end(), q.begin());
      } else {
        space.Interpolate(last, target, range / d, q);
      }
      ++n;
    }
    const Result<std::vector<uint8_t>> valid = checker->ValidRows(std::span<const double>(steps_.data(), n * dof));
    if (!valid.ok()) return valid.error();
    size_t states = 0;  // steps up to the first invalid state
    while (states < n && valid.value()[states] != 0) ++states;
    if (states == 0) return Growth::kTrapped;
    std::vector<std::span<const double>> a, b;
    for (size_t k = 0; k < states; ++k) {
      a.push_back(k == 0 ? tree->q(near) : std::span<const double>(steps_.data() + (k - 1) * dof, dof));
      b.emplace_back(steps_.data() + k * dof, dof);
    }
    const Result<std::vector<MotionCheck>> motions = checker->QuickUntilInvalid(a, b);
    if (!motions.ok()) return motions.error();
    int32_t parent = near;
    for (size_t k = 0; k < motions.value().size(); ++k) {
      if (!motions.value()[k].valid) return Growth::kTrapped;
      parent = tree->Add(std::span<const double>(steps_.data() + k * dof, dof), parent, checker->quick_is_final());
      *added = parent;
    }
    if (motions.value().size() < n) return Growth::kTrapped;  // an invalid state ended the steps
    return reach ? Growth::kReached : Growth::kAdvanced;
  }

  // Extends `tree` from its vertex nearest `target` by at most `range` toward it.
  Result<Growth> Grow(Checker* checker, Tree* tree, std::span<const double> target, double range, int32_t* added) {
    const JointSpace& space = context_.space;
    const int32_t near = tree->Nearest(target);
    const double d = space.Distance(tree->q(near), target);
    Configuration q(target.begin(), target.end());
    const bool reach = d <= range;
    if (!reach) space.Interpolate(tree->q(near), target, range / d, q);
    const Result<bool> valid = checker->Valid(q);
    if (!valid.ok()) return valid.error();
    if (!valid.value()) return Growth::kTrapped;
    const Result<MotionCheck> motion = checker->Quick(tree->q(near), q);
    if (!motion.ok()) return motion.error();
    if (!motion.value().valid) return Growth::kTrapped;
    *added = tree->Add(q, near, checker->quick_is_final());
    return reach ? Growth::kReached : Growth::kAdvanced;
  }

  PlanningContext context_;
  PlannerOptions options_;
  bool connect_;
  std::vector<double> steps_;  // Connect's steps, row after row
};

}  // namespace

std::unique_ptr<Planner> MakeRrt(const PlanningContext& context, const PlannerOptions& options, bool connect) {
  return std::make_unique<RrtPlanner>(context, options, connect);
}

}  // namespace proximity::planners::internal
