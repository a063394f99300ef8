// PRM (Kavraki, Svestka, Latombe, Overmars 1996) and LazyPRM (Bohlin, Kavraki 2000) over the validity
// interfaces. Both keep their roadmap across Solve calls (multi-query). PRM checks every vertex and
// edge as it is added; LazyPRM adds them unchecked and checks only those on candidate shortest paths,
// removing what fails, until a candidate passes. With a quick motion check in the context, PRM's edges
// and LazyPRM's first look at a candidate's edges use it, and the decisive check runs only on the
// edges of a candidate path (an edge it rejects leaves the roadmap). PRM checks its samples a batch at a
// time ahead of taking them (SampleValid), LazyPRM a candidate's unchecked vertices in one batch.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>

#include "planner_internal.h"
#include "proximity/planners/nearest.h"

namespace proximity::planners::internal {
namespace {

// What is known of a vertex or edge: nothing, passed the quick check, passed the decisive check, failed.
enum class Known : uint8_t { kUnknown, kQuick, kValid, kInvalid };

class PrmPlanner final : public Planner {
 public:
  PrmPlanner(const PlanningContext& context, const PlannerOptions& options, bool lazy)
      : context_(context), options_(options), lazy_(lazy), rng_(options.seed), nn_(context.space) {}

  PlannerType type() const override { return lazy_ ? PlannerType::kLazyPrm : PlannerType::kPrm; }
  const PlanningContext& context() const override { return context_; }

  void Clear() override {
    q_.clear();
    vertex_.clear();
    adjacency_.clear();
    edges_.clear();
    component_.clear();
    nn_.Clear();
    rng_.seed(options_.seed);
    ahead_q_.clear();
    ahead_valid_.clear();
    ahead_next_ = 0;
  }

  using Planner::Solve;
  Result<PlanResult> Solve(std::span<const double> start, std::span<const double> goal,
                           const Termination& termination) override {
    PlanResult result;
    Clock clock(termination);
    Checker checker(context_, &result.stats);
    bool done = false;
    if (Status s = Begin(context_, options_, &checker, &clock, rng_, start, goal, &result, &done); !s.ok()) {
      return s.error();
    }
    if (done) return result;
    range_ = options_.range > 0.0 ? options_.range : 0.2 * context_.space.MaxExtent();
    const int32_t s = AddVertex(start, Known::kValid);
    const int32_t g = AddVertex(goal, Known::kValid);
    if (Status st = Connect(&checker, s); !st.ok()) return st.error();
    if (Status st = Connect(&checker, g); !st.ok()) return st.error();
    Configuration sample(static_cast<size_t>(context_.space.dof()));
    for (int64_t iteration = 0;;) {
      if (clock.Expired(iteration, &result.outcome)) break;
      if (Find(s) == Find(g)) {
        bool found = false, finished = false;
        if (Status st = TryPath(&checker, s, g, &clock, &result, &found, &finished); !st.ok()) return st.error();
        if (finished) return Counted(std::move(result));
        if (found) {
          // The roadmap's copies of the ends are the caller's values exactly.
          result.outcome = PlanOutcome::kSolved;
          break;
        }
        RebuildComponents();
        continue;
      }
      ++iteration;
      ++result.stats.iterations;
      context_.space.Sample(rng_, sample);
      Known known = Known::kUnknown;
      if (!lazy_) {
        const int64_t left = termination.max_iterations > 0 ? termination.max_iterations - iteration + 1 : kLookahead;
        const Result<bool> valid = SampleValid(&checker, sample, left);
        if (!valid.ok()) return valid.error();
        if (!valid.value()) continue;
        known = Known::kValid;
      }
      const int32_t v = AddVertex(sample, known);
      if (Status st = Connect(&checker, v); !st.ok()) return st.error();
    }
    return Done(&clock, &result);
  }

 private:
  struct Edge {
    int32_t a, b;
    double length;
    Known known;
  };

  // PRM's samples are checked kLookahead at a time, in one AreValid call (one batch check in process,
  // one round trip to a remote scene): the sample just drawn and those rng_ gives next, drawn from a copy
  // of it. The loop still draws every sample from rng_ and takes a batch's answer only for the sample it
  // equals, so the samples, the answers and rng_'s state are those of checking one sample at a time;
  // anything else that draws from rng_ meanwhile (the simplifier of a candidate path) makes the next
  // sample differ, and the rest of the batch is dropped. Up to kLookahead - 1 checks go to samples the
  // loop never takes (the query solved, or its time up); the iteration limit bounds the batch.
  static constexpr int64_t kLookahead = 32;

  // Whether `sample`, just drawn from rng_, is valid; `left` bounds the samples this Solve may still take
  // (this one included).
  Result<bool> SampleValid(Checker* checker, std::span<const double> sample, int64_t left) {
    const size_t dof = sample.size();
    if (ahead_next_ < ahead_valid_.size() &&
        std::equal(sample.begin(), sample.end(), ahead_q_.begin() + static_cast<std::ptrdiff_t>(ahead_next_ * dof))) {
      return ahead_valid_[ahead_next_++] != 0;
    }
    const auto count = static_cast<size_t>(std::clamp<int64_t>(left, 1, kLookahead));
    ahead_q_.resize(count * dof);
    std::copy(sample.begin(), sample.end(), ahead_q_.begin());
    Rng ahead = rng_;
    for (size_t k = 1; k < count; ++k) context_.space.Sample(ahead, std::span<double>(ahead_q_.data() + k * dof, dof));
    ahead_valid_.clear();
    ahead_next_ = 0;
    Result<std::vector<uint8_t>> valid = checker->ValidRows(ahead_q_);
    if (!valid.ok()) return valid.error();
    ahead_valid_ = std::move(valid).value();
    ahead_next_ = 1;
    return ahead_valid_[0] != 0;
  }

  Result<PlanResult> Done(Clock* clock, PlanResult* result) {
    if (Status s = Finish(context_, options_, clock, rng_, result); !s.ok()) return s.error();
    return Counted(std::move(*result));
  }
  PlanResult Counted(PlanResult result) const {
    result.stats.vertices = static_cast<int64_t>(vertex_.size());
    result.stats.edges = static_cast<int64_t>(edges_.size());
    return result;
  }

  std::span<const double> Q(int32_t v) const {
    const size_t dof = static_cast<size_t>(context_.space.dof());
    return {q_.data() + static_cast<size_t>(v) * dof, dof};
  }

  int32_t AddVertex(std::span<const double> q, Known known) {
    const int32_t v = static_cast<int32_t>(vertex_.size());
    q_.insert(q_.end(), q.begin(), q.end());
    vertex_.push_back(known);
    adjacency_.emplace_back();
    component_.push_back(v);
    return v;
  }

  // Joins v to its nearest roadmap vertices within range: PRM checks each edge and skips vertices already
  // in v's component; LazyPRM adds them unchecked. Then v joins the neighbour index.
  Status Connect(Checker* checker, int32_t v) {
    nn_.KNearest(Q(v), options_.prm_neighbors, &neighbors_);
    for (const auto& [u, d] : neighbors_) {
      if (d > range_ || vertex_[static_cast<size_t>(u)] == Known::kInvalid) continue;
      Known known = Known::kUnknown;
      if (!lazy_) {
        if (Find(u) == Find(v)) continue;
        const Result<MotionCheck> motion = checker->Quick(Q(u), Q(v));
        if (!motion.ok()) return motion.status();
        if (!motion.value().valid) continue;
        known = checker->quick_is_final() ? Known::kValid : Known::kQuick;
      }
      AddEdge(u, v, d, known);
    }
    nn_.Add(Q(v), v);
    return Status::Ok();
  }

  void AddEdge(int32_t a, int32_t b, double length, Known known) {
    const int32_t e = static_cast<int32_t>(edges_.size());
    edges_.push_back({a, b, length, known});
    adjacency_[static_cast<size_t>(a)].push_back(e);
    adjacency_[static_cast<size_t>(b)].push_back(e);
    Union(a, b);
  }

  int32_t Find(int32_t v) {
    while (component_[static_cast<size_t>(v)] != v) {
      component_[static_cast<size_t>(v)] = component_[static_cast<size_t>(component_[static_cast<size_t>(v)])];
      v = component_[static_cast<size_t>(v)];
    }
    return v;
  }
  void Union(int32_t a, int32_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) component_[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  }
  // After LazyPRM removed vertices or edges: components from the edges still usable.
  void RebuildComponents() {
    std::iota(component_.begin(), component_.end(), 0);
    for (const Edge& e : edges_) {
      if (Usable(e)) Union(e.a, e.b);
    }
  }
  bool Usable(const Edge& e) const {
    return e.known != Known::kInvalid && vertex_[static_cast<size_t>(e.a)] != Known::kInvalid &&
           vertex_[static_cast<size_t>(e.b)] != Known::kInvalid;
  }

  // A* from s to g over usable edges, then the path's unknown vertices, its unchecked edges by the
  // quick check, and its edges not yet decided by the decisive check, marking what fails. *found when
  // every part of the path is valid.
  // With a quick check, a candidate whose edges all passed it goes to FastFinish first: *finished when
  // that certified its simplification (result filled).
  Status TryPath(Checker* checker, int32_t s, int32_t g, Clock* clock, PlanResult* result, bool* found,
                 bool* finished) {
    *found = false;
    *finished = false;
    PlanStats* stats = &result->stats;
    std::vector<int32_t> vertices;
    if (!ShortestPath(s, g, &vertices)) return Status::Ok();
    // The path's unchecked vertices, all of them in one batch.
    std::vector<int32_t> unknown;
    std::vector<double> rows;
    for (int32_t v : vertices) {
      if (vertex_[static_cast<size_t>(v)] != Known::kUnknown) continue;
      unknown.push_back(v);
      const std::span<const double> q = Q(v);
      rows.insert(rows.end(), q.begin(), q.end());
    }
    bool ok = true;
    if (!unknown.empty()) {
      const Result<std::vector<uint8_t>> valid = checker->ValidRows(rows);
      if (!valid.ok()) return valid.status();
      for (size_t k = 0; k < unknown.size(); ++k) {
        vertex_[static_cast<size_t>(unknown[k])] = valid.value()[k] != 0 ? Known::kValid : Known::kInvalid;
        ok = ok && valid.value()[k] != 0;
      }
    }
    if (!ok) return Status::Ok();
    std::vector<int32_t> path_edges;
    for (size_t i = 1; i < vertices.size(); ++i) path_edges.push_back(EdgeBetween(vertices[i - 1], vertices[i]));
    for (int32_t k : path_edges) {
      Edge& e = edges_[static_cast<size_t>(k)];
      if (e.known != Known::kUnknown) continue;
      const Result<MotionCheck> motion = checker->Quick(Q(e.a), Q(e.b));
      if (!motion.ok()) return motion.status();
      const bool valid = motion.value().valid;
      e.known = !valid ? Known::kInvalid : checker->quick_is_final() ? Known::kValid : Known::kQuick;
      if (!valid) return Status::Ok();
    }
    std::vector<Configuration> candidate;
    for (int32_t v : vertices) candidate.emplace_back(Q(v).begin(), Q(v).end());
    if (Status st = FastFinish(context_, options_, clock, rng_, candidate, result, finished); !st.ok() || *finished) {
      *found = *finished;
      return st;
    }
    // The edges not yet decided, sent at once: the checks stop after the first that fails, exactly as
    // deciding them one by one would.
    std::vector<int32_t> undecided;
    std::vector<std::span<const double>> from, to;
    for (int32_t k : path_edges) {
      const Edge& e = edges_[static_cast<size_t>(k)];
      if (e.known != Known::kQuick) continue;
      undecided.push_back(k);
      from.push_back(Q(e.a));
      to.push_back(Q(e.b));
    }
    if (!undecided.empty()) {
      const Result<std::vector<MotionCheck>> checks = checker->MotionsUntilInvalid(from, to);
      if (!checks.ok()) return checks.status();
      for (size_t i = 0; i < checks.value().size(); ++i) {
        Edge& e = edges_[static_cast<size_t>(undecided[i])];
        e.known = checks.value()[i].valid ? Known::kValid : Known::kInvalid;
        if (!checks.value()[i].valid) {
          ++stats->certification_failures;
          return Status::Ok();
        }
      }
    }
    result->path = std::move(candidate);
    *found = true;
    return Status::Ok();
  }

  int32_t EdgeBetween(int32_t a, int32_t b) const {
    // The shortest usable edge joining a and b (the one A* took).
    int32_t best = -1;
    for (int32_t e : adjacency_[static_cast<size_t>(a)]) {
      const Edge& edge = edges_[static_cast<size_t>(e)];
      if ((edge.a == b || edge.b == b) && Usable(edge) &&
          (best < 0 || edge.length < edges_[static_cast<size_t>(best)].length)) {
        best = e;
      }
    }
    return best;
  }

  bool ShortestPath(int32_t s, int32_t g, std::vector<int32_t>* out) const {
    const size_t n = vertex_.size();
    std::vector<double> cost(n, std::numeric_limits<double>::infinity());
    std::vector<int32_t> from(n, -1);
    using Item = std::pair<double, int32_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> open;
    const auto goal_q = Q(g);
    cost[static_cast<size_t>(s)] = 0.0;
    open.push({context_.space.Distance(Q(s), goal_q), s});
    while (!open.empty()) {
      const auto [f, v] = open.top();
      open.pop();
      if (v == g) break;
      if (f - context_.space.Distance(Q(v), goal_q) > cost[static_cast<size_t>(v)] + 1e-12) continue;
      for (int32_t e : adjacency_[static_cast<size_t>(v)]) {
        const Edge& edge = edges_[static_cast<size_t>(e)];
        if (!Usable(edge)) continue;
        const int32_t u = edge.a == v ? edge.b : edge.a;
        const double c = cost[static_cast<size_t>(v)] + edge.length;
        if (c < cost[static_cast<size_t>(u)]) {
          cost[static_cast<size_t>(u)] = c;
          from[static_cast<size_t>(u)] = v;
          open.push({c + context_.space.Distance(Q(u), goal_q), u});
        }
      }
    }
    if (!std::isfinite(cost[static_cast<size_t>(g)])) return false;
    out->clear();
    for (int32_t v = g; v >= 0; v = from[static_cast<size_t>(v)]) out->push_back(v);
    std::reverse(out->begin(), out->end());
    return true;
  }

  PlanningContext context_;
  PlannerOptions options_;
  bool lazy_;
  Rng rng_;
  double range_ = 0.0;
  std::vector<double> q_;
  std::vector<Known> vertex_;
  std::vector<std::vector<int32_t>> adjacency_;
  std::vector<Edge> edges_;
  std::vector<int32_t> component_;
  NearestNeighbors nn_;
  std::vector<std::pair<int32_t, double>> neighbors_;
  // SampleValid's batch: its samples row after row, their answers, and the next one the loop takes.
  std::vector<double> ahead_q_;
  std::vector<uint8_t> ahead_valid_;
  size_t ahead_next_ = 0;
};

}  // namespace

std::unique_ptr<Planner> MakePrm(const PlanningContext& context, const PlannerOptions& options, bool lazy) {
  return std::make_unique<PrmPlanner>(context, options, lazy);
}

}  // namespace proximity::planners::internal
