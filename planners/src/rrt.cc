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

// A tree rooted at a start or a goal (a goal region's tree: a root per goal drawn): configurations row
// after row, parents (always of a smaller index; -1 at roots), whether the edge to the parent passed the
// decisive check, and the neighbour index.
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
      if (parent_[i] >= 0 && dead[static_cast<size_t>(parent_[i])]) dead[i] = 1;
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

// What Extend did toward one target: the last vertex it added (-1: none), whether every step was valid,
// and whether the steps reached the target (the last vertex is then the target's configuration).
struct Extension {
  int32_t last = -1;
  bool complete = false;
  bool reached = false;
};

class RrtPlanner final : public Planner {
 public:
  RrtPlanner(const PlanningContext& context, const PlannerOptions& options, bool connect)
      : context_(context), options_(options), connect_(connect) {}

  PlannerType type() const override { return connect_ ? PlannerType::kRrtConnect : PlannerType::kRrt; }
  const PlanningContext& context() const override { return context_; }

  Result<PlanResult> Solve(std::span<const double> start, std::span<const double> goal,
                           const Termination& termination) override {
    return Search(start, goal, nullptr, termination);
  }
  Result<PlanResult> Solve(std::span<const double> start, GoalSampler& goals, const Termination& termination) override {
    return Search(start, {}, &goals, termination);
  }

 private:
  // Samples a round grows toward at most (the lanes of a batch of states).
  static constexpr int64_t kRoundSamples = 8;
  // Steps a connection decides in one batch.
  static constexpr int32_t kConnectSteps = 8;
  // A goal region's search draws one more goal every kGoalPeriod rounds.
  static constexpr int64_t kGoalPeriod = 4;

  // To `goal`, or (sampler given) to the goals it draws: the first before the search, more as it goes.
  Result<PlanResult> Search(std::span<const double> start, std::span<const double> goal, GoalSampler* sampler,
                            const Termination& termination) {
    PlanResult result;
    Clock clock(termination);
    Checker checker(context_, &result.stats);
    Rng rng(options_.seed);
    bool done = false;
    std::vector<Configuration> goals;  // the goal tree's roots
    if (sampler != nullptr) {
      Configuration first;
      if (Status s = DrawGoal(&checker, &clock, *sampler, true, &first, &done, &result); !s.ok()) return s.error();
      if (!done) return result;
      goals.push_back(std::move(first));
      goal = goals.front();
    } else {
      goals.emplace_back(goal.begin(), goal.end());
    }
    if (Status s = Begin(context_, options_, &checker, &clock, rng, start, goal, &result, &done); !s.ok()) {
      return s.error();
    }
    if (done) return result;
    const JointSpace& space = context_.space;
    const double range = options_.range > 0.0 ? options_.range : 0.2 * space.MaxExtent();

    Tree start_tree(space), goal_tree(space);
    start_tree.Add(start, -1, true);
    goal_tree.Add(goals.front(), -1, true);
    Tree* a = &start_tree;
    Tree* b = &goal_tree;
    bool solved = false;
    std::vector<double> samples;
    std::vector<int32_t> toward_goal;  // per sample: the goal it is (RRT's goal bias), or -1
    std::vector<Extension> grown, connected;
    const int64_t max_samples = clock.termination().max_iterations;
    for (int64_t round = 0, drawn = 0;; ++round) {
      if (clock.Expired(drawn, &result.outcome)) break;
      if (sampler != nullptr && round > 0 && round % kGoalPeriod == 0 &&
          goals.size() < static_cast<size_t>(kMaxGoals)) {
        Configuration more;
        bool found = false;
        if (Status s = DrawGoal(&checker, &clock, *sampler, false, &more, &found, &result); !s.ok()) return s.error();
        if (found) {
          goal_tree.Add(more, -1, true);
          goals.push_back(std::move(more));
        }
      }
      // A round's samples: 1, 2, 4, then kRoundSamples a round, each grown one step from tree a's vertex
      // nearest it (the tree as the round found it), all decided in one batch.
      int64_t count = std::min<int64_t>(kRoundSamples, int64_t{1} << std::min<int64_t>(round, 3));
      if (max_samples > 0) count = std::min(count, max_samples - drawn);
      drawn += count;
      result.stats.iterations += count;
      DrawSamples(rng, count, goals, &samples, &toward_goal);
      // RRT-Connect: the round's connections start in the extensions' batch.
      if (connect_) {
        if (Status s = ExtendAndConnect(&checker, a, b, samples, range, &grown, &connected); !s.ok()) {
          return s.error();
        }
      } else if (Status s = Extend(&checker, a, samples, range, 1, &grown); !s.ok()) {
        return s.error();
      }
      // The first sample in order whose step reached it (RRT: the goal) or whose new vertex the other
      // tree connects to (RRT-Connect) gives the round's candidate path.
      int32_t va = -1, vb = -1, reached_goal = -1;
      if (!connect_) {
        for (size_t k = 0; k < grown.size() && va < 0; ++k) {
          if (toward_goal[k] >= 0 && grown[k].reached) {
            va = grown[k].last;
            reached_goal = toward_goal[k];
          }
        }
      } else {
        // Connect the other tree to every new vertex as far as it goes.
        std::vector<int32_t> from;
        for (const Extension& e : grown) {
          if (e.last >= 0) from.push_back(e.last);
        }
        if (!from.empty()) {
          std::vector<int32_t> joined;
          bool expired = false;
          if (Status s = ConnectAll(&checker, &clock, drawn - 1, b, *a, from, range, &joined, &expired, &result.outcome,
                                    &connected);
              !s.ok()) {
            return s.error();
          }
          if (expired) break;
          for (size_t t = 0; t < joined.size() && va < 0; ++t) {
            if (joined[t] < 0) continue;
            va = from[t];
            vb = joined[t];
          }
        }
      }
      if (va >= 0) {
        std::vector<Configuration> candidate = Candidate(*a, va, connect_ ? b : nullptr, vb);
        if (!connect_) candidate.back() = goals[static_cast<size_t>(reached_goal)];
        if (connect_ && a == &goal_tree) std::reverse(candidate.begin(), candidate.end());
        if (Status s = FastFinish(context_, options_, &clock, rng, candidate, &result, &done); !s.ok()) return s.error();
        if (done) return Stats(start_tree, goal_tree, goals.size(), std::move(result));
        bool certified = false;
        if (Status s = Certify(&checker, a, va, connect_ ? b : nullptr, vb, &certified, &result.stats); !s.ok()) {
          return s.error();
        }
        if (certified) {
          result.path = std::move(candidate);
          solved = true;
          break;
        }
      }
      if (connect_) std::swap(a, b);
    }
    if (solved) result.outcome = PlanOutcome::kSolved;
    if (Status s = Finish(context_, options_, &clock, rng, &result); !s.ok()) return s.error();
    return Stats(start_tree, goal_tree, goals.size(), std::move(result));
  }

  // A round's `count` samples, row after row: random configurations, or (RRT, with the goal bias) a goal,
  // whose index goes into (*toward_goal)[k] (-1 for the others).
  void DrawSamples(Rng& rng, int64_t count, const std::vector<Configuration>& goals, std::vector<double>* samples,
                   std::vector<int32_t>* toward_goal) const {
    const auto dof = static_cast<size_t>(context_.space.dof());
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    samples->resize(static_cast<size_t>(count) * dof);
    toward_goal->assign(static_cast<size_t>(count), -1);
    for (size_t k = 0; k < static_cast<size_t>(count); ++k) {
      std::span<double> q(samples->data() + k * dof, dof);
      if (!connect_ && unit(rng) < options_.goal_bias) {
        const size_t g = goals.size() == 1 ? 0 : std::uniform_int_distribution<size_t>(0, goals.size() - 1)(rng);
        std::copy(goals[g].begin(), goals[g].end(), q.begin());
        (*toward_goal)[k] = static_cast<int32_t>(g);
      } else {
        context_.space.Sample(rng, q);
      }
    }
  }

  static PlanResult Stats(const Tree& start_tree, const Tree& goal_tree, size_t goal_roots, PlanResult result) {
    result.stats.vertices = start_tree.size() + goal_tree.size();
    result.stats.edges = result.stats.vertices - 1 - static_cast<int64_t>(goal_roots);
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

  // One batch of step chains (Checker::StepChains: one batch of states in process, one round trip to a
  // remote scene) over one or two trees: Plan appends a tree's chains toward targets, Decide checks every
  // chain at once, Apply adds a plan's valid steps to its tree.
  struct Chains {
    std::vector<double> steps;  // rows: every chain's steps, chain after chain
    std::vector<int32_t> near, length;  // per chain: the tree's vertex it starts from, its steps
    std::vector<char> reach;            // per chain: whether its last step is the target
    std::vector<size_t> first;          // per chain: its first row
    std::vector<int32_t> after;         // per chain: the chain it is decided after (-1: none)
    std::vector<std::span<const double>> froms;
    std::vector<StepChecks> checks;  // Decide's answers, one per chain
    size_t rows = 0;                 // steps planned
    void Clear() {
      near.clear();
      length.clear();
      reach.clear();
      first.clear();
      after.clear();
      froms.clear();
      checks.clear();
      rows = 0;
    }
  };

  // Plans chains of `tree` toward each row of `targets` (row after row) from its vertex nearest that target
  // (the tree as it is now), each of up to `max_steps` steps of at most `range` (the points Grow would make
  // one at a time), into `batch`; returns the index of the plan's first chain. Target t's chain is decided
  // after chain after_first + t when after_first >= 0. `targets` must not lie in batch->steps.
  size_t Plan(Chains* batch, const Tree& tree, std::span<const double> targets, double range, int32_t max_steps,
              int32_t after_first = -1) const {
    const JointSpace& space = context_.space;
    const auto dof = static_cast<size_t>(space.dof());
    const size_t count = targets.size() / dof;
    const size_t first_chain = batch->length.size();
    size_t n = batch->rows;
    // Room for the longest chains at once: no reallocation below (`last` may point into the rows).
    batch->steps.resize((n + count * static_cast<size_t>(max_steps)) * dof);
    for (size_t t = 0; t < count; ++t) {
      const std::span<const double> target = targets.subspan(t * dof, dof);
      const int32_t near = tree.Nearest(target);
      int32_t length = 0;
      bool reach = false;
      while (length < max_steps && !reach) {
        std::span<const double> last =
            length == 0 ? tree.q(near) : std::span<const double>(batch->steps.data() + (n - 1) * dof, dof);
        std::span<double> q(batch->steps.data() + n * dof, dof);
        const double d = space.Distance(last, target);
        reach = d <= range;
        if (reach) {
          std::copy(target.begin(), target.end(), q.begin());
        } else {
          space.Interpolate(last, target, range / d, q);
        }
        ++length;
        ++n;
      }
      batch->first.push_back(n - static_cast<size_t>(length));
      batch->after.push_back(after_first < 0 ? -1 : after_first + static_cast<int32_t>(t));
      batch->near.push_back(near);
      batch->length.push_back(length);
      batch->reach.push_back(reach ? 1 : 0);
      batch->froms.push_back(tree.q(near));
    }
    batch->rows = n;
    return first_chain;
  }

  // Checks every chain of `batch` in one call, each after its prerequisite.
  Status Decide(Checker* checker, Chains* batch) {
    const auto dof = static_cast<size_t>(context_.space.dof());
    const bool ordered = std::any_of(batch->after.begin(), batch->after.end(), [](int32_t c) { return c >= 0; });
    const std::span<const int32_t> after = ordered ? std::span<const int32_t>(batch->after) : std::span<const int32_t>();
    Result<std::vector<StepChecks>> checks = checker->StepChains(
        batch->froms, std::span<const double>(batch->steps.data(), batch->rows * dof), batch->length, after);
    if (!checks.ok()) return checks.status();
    batch->checks = std::move(checks).value();
    return Status::Ok();
  }

  // Adds chain c's valid steps to `tree` (the chain's), each the parent of the next; its Extension.
  Extension Apply(const Chains& batch, size_t c, Tree* tree, Checker* checker) const {
    const auto dof = static_cast<size_t>(context_.space.dof());
    const size_t first = batch.first[c];
    const StepChecks& chain = batch.checks[c];
    Extension e;
    int32_t parent = batch.near[c];
    for (size_t k = 0; k < chain.valid_steps; ++k) {
      parent = tree->Add(std::span<const double>(batch.steps.data() + (first + k) * dof, dof), parent,
                         checker->quick_is_final());
      e.last = parent;
    }
    e.complete = chain.valid_steps == static_cast<size_t>(batch.length[c]);
    e.reached = e.complete && batch.reach[c] != 0;
    return e;
  }

  // Grows `tree` toward each row of `targets` by up to `max_steps` steps each (Plan), every target's steps
  // a chain of one batch (Decide). One Extension per target.
  Status Extend(Checker* checker, Tree* tree, std::span<const double> targets, double range, int32_t max_steps,
                std::vector<Extension>* out) {
    chains_.Clear();
    Plan(&chains_, *tree, targets, range, max_steps);
    if (Status s = Decide(checker, &chains_); !s.ok()) return s;
    out->clear();
    for (size_t c = 0; c < chains_.length.size(); ++c) out->push_back(Apply(chains_, c, tree, checker));
    return Status::Ok();
  }

  // RRT-Connect's round in one batch: tree a's one step toward each sample, and tree b's first
  // kConnectSteps steps toward each of those steps (the connection ConnectAll would start if the step
  // is valid), each decided after its step and only when the step is valid. The extensions into *grown
  // as Extend gives them; the connections of the valid steps into *connected (one per new vertex of a,
  // in order), as ConnectAll's first batch would give them. In process the same checks in the same
  // batches as Extend then ConnectAll; to a remote scene one round trip instead of two.
  Status ExtendAndConnect(Checker* checker, Tree* a, Tree* b, std::span<const double> samples, double range,
                          std::vector<Extension>* grown, std::vector<Extension>* connected) {
    const auto dof = static_cast<size_t>(context_.space.dof());
    chains_.Clear();
    Plan(&chains_, *a, samples, range, 1);
    const size_t count = chains_.length.size();
    // Each extension is one step: the rows are the new vertices' configurations, in order.
    targets_.assign(chains_.steps.begin(), chains_.steps.begin() + static_cast<std::ptrdiff_t>(count * dof));
    const size_t first_connect = Plan(&chains_, *b, targets_, range, kConnectSteps, 0);
    if (Status s = Decide(checker, &chains_); !s.ok()) return s;
    grown->clear();
    connected->clear();
    for (size_t c = 0; c < count; ++c) grown->push_back(Apply(chains_, c, a, checker));
    for (size_t c = 0; c < count; ++c) {
      if ((*grown)[c].last >= 0) connected->push_back(Apply(chains_, first_connect + c, b, checker));
    }
    return Status::Ok();
  }

  // RRT-Connect's connection of `tree` toward each of `other`'s vertices `targets`, as far as it goes:
  // kConnectSteps steps a target per batch (Extend), the targets still advancing (every step valid,
  // target not reached) going on in the next batch. (*joined)[t]: the tree's vertex at target t when
  // reached, else -1. The clock is asked before each batch (a tiny range makes many), as at the round's
  // last sample (`sample`): *expired, and *why, when it ended the connection. `first`, when given, is
  // the first batch's answer, decided already (ExtendAndConnect).
  Status ConnectAll(Checker* checker, Clock* clock, int64_t sample, Tree* tree, const Tree& other,
                    std::span<const int32_t> targets, double range, std::vector<int32_t>* joined, bool* expired,
                    PlanOutcome* why, const std::vector<Extension>* first = nullptr) {
    joined->assign(targets.size(), -1);
    std::vector<size_t> open(targets.size());
    for (size_t t = 0; t < open.size(); ++t) open[t] = t;
    std::vector<double> rows;
    std::vector<Extension> steps;
    for (bool decided = first != nullptr; !open.empty(); decided = false) {
      if (decided) {
        steps = *first;
      } else {
        if (clock->Expired(sample, why)) {
          *expired = true;
          return Status::Ok();
        }
        rows.clear();
        for (size_t t : open) rows.insert(rows.end(), other.q(targets[t]).begin(), other.q(targets[t]).end());
        if (Status s = Extend(checker, tree, rows, range, kConnectSteps, &steps); !s.ok()) return s;
      }
      std::vector<size_t> next;
      for (size_t i = 0; i < open.size(); ++i) {
        if (steps[i].reached) {
          (*joined)[open[i]] = steps[i].last;
        } else if (steps[i].complete) {
          next.push_back(open[i]);
        }
      }
      open = std::move(next);
    }
    return Status::Ok();
  }

  PlanningContext context_;
  PlannerOptions options_;
  bool connect_;
  // Extend's and ExtendAndConnect's batch, and the latter's targets.
  Chains chains_;
  std::vector<double> targets_;
};

}  // namespace

std::unique_ptr<Planner> MakeRrt(const PlanningContext& context, const PlannerOptions& options, bool connect) {
  return std::make_unique<RrtPlanner>(context, options, connect);
}

}  // namespace proximity::planners::internal
