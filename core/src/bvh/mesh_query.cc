#include "bvh/mesh_query.h"

#include "bvh/query_internal.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "bvh/bound_heap.h"
#include "bvh/walk_stack.h"
#include "narrowphase/triangle.h"
#include "base/numerics.h"

namespace proximity::core {
namespace {

// Makes room for n elements, at least doubling the capacity when it grows: storage kept from query to
// query grows a few times, not at every query whose front is a little larger.
template <class T>
void Reserve(std::vector<T>& v, size_t n) {
  if (v.capacity() < n) v.reserve(std::max(n, 2 * v.capacity()));
}

// How far each of B's nodes can have moved since the cache's pose, computed once per node and query: a
// carried front holds the same node in many pairs, and not next to each other. Kept per thread; its
// size follows the largest model B walked on the thread (12 bytes a node, a small part of the model's
// own hierarchy), so it is not trimmed.
struct NodeMotionMemo {
  std::vector<uint32_t> stamp;  // == now: value holds this query's bound
  std::vector<double> value;
  uint32_t now = 0;

  // Starts a query over a model of n nodes: every earlier value is forgotten.
  void Begin(size_t n) {
    if (stamp.size() < n) {
      stamp.resize(n, 0);
      value.resize(n);
    }
    if (++now == 0) {  // the stamps wrapped: clear them once
      std::fill(stamp.begin(), stamp.end(), 0);
      now = 1;
    }
  }
};

// Both models' hierarchies walked in A's frame: B's volumes and triangles are mapped by X_AB.
struct PairWalk {
  const MeshModel& A;
  const MeshModel& B;
  RigidTransform X_AB;
  QueryStats stats;

  // Splits the node with the larger box (sum of half extents), so both trees descend at a matched
  // scale; the boxes are in cache already for the test that follows.
  bool DescendA(int32_t na, int32_t nb) const {
    const BvhNode& a = A.nodes()[na];
    const BvhNode& b = B.nodes()[nb];
    if (b.is_leaf()) return true;
    if (a.is_leaf()) return false;
    return A.obbs()[na].half_extents.sum() >= B.obbs()[nb].half_extents.sum();
  }

  void TriangleInA(int32_t kb, Vec3* v) const {
    const LeafTriangle& t = B.leaf_triangles()[kb];
    for (int i = 0; i < 3; ++i) v[i] = X_AB * t.v[i];
  }
};

struct CollideWalk : PairWalk {
  // OBBs only: on meshes with large flat triangles a sphere test rejects too little to pay for itself
  // (measured on envrob).
  // *centre_gap, when given, receives the squared distance between the boxes' centres.
  bool Overlap(int32_t na, int32_t nb, double* centre_gap = nullptr) {
    const Obb& oa = A.obbs()[na];
    const Obb& ob = B.obbs()[nb];
    ++stats.bv_tests;
    const BoxPairFrame frame = MakeBoxPairFrame(oa, ob, X_AB);
    if (centre_gap != nullptr) *centre_gap = frame.T.squaredNorm();
    return ObbsOverlap(oa.half_extents, ob.half_extents, frame);
  }

  // Whether leaf triangle ka of A and leaf triangle kb of B share a point (the walk's exact test).
  bool LeavesIntersect(int32_t ka, int32_t kb) {
    Vec3 vb[3];
    TriangleInA(kb, vb);
    const LeafTriangle& ta = A.leaf_triangles()[ka];
    ++stats.triangle_tests;
    return TrianglesIntersect(ta.v[0], ta.v[1], ta.v[2], vb[0], vb[1], vb[2]);
  }

  // Walks the pairs of overlapping boxes depth first, calling on_contact(ka, kb) for each intersecting
  // pair of leaf triangles until it returns true; returns whether it did.
  template <class OnContact>
  bool Walk(OnContact&& on_contact) {
    struct Entry {
      int32_t a, b;
    };
    internal::WalkStack<Entry> stack;
    if (Overlap(0, 0)) stack.push({0, 0});
    while (!stack.empty()) {
      const Entry e = stack.pop();
      const BvhNode& na = A.nodes()[e.a];
      const BvhNode& nb = B.nodes()[e.b];
      if (na.is_leaf() && nb.is_leaf()) {
        for (int32_t kb = nb.first; kb < nb.first + nb.count; ++kb) {
          Vec3 vb[3];
          TriangleInA(kb, vb);
          for (int32_t ka = na.first; ka < na.first + na.count; ++ka) {
            const LeafTriangle& ta = A.leaf_triangles()[ka];
            ++stats.triangle_tests;
            if (!TrianglesIntersect(ta.v[0], ta.v[1], ta.v[2], vb[0], vb[1], vb[2])) continue;
            if (on_contact(ka, kb)) return true;
          }
        }
        continue;
      }
      // The child nearer the other box first (NearerFirst).
      const bool descend_a = DescendA(e.a, e.b);
      internal::NearerFirst<Entry> kids;
      for (int32_t k = 0; k < 2; ++k) {
        const Entry kid = descend_a ? Entry{na.first + k, e.b} : Entry{e.a, nb.first + k};
        double gap;
        if (Overlap(kid.a, kid.b, &gap)) kids.Add(kid, gap);
      }
      kids.PushTo(&stack);
    }
    return false;
  }

  // Returns true when the walk should stop (first contact found, or the contact list is full).
  bool Run(const CollisionRequest& request, CollisionResult* result) {
    return Walk([&](int32_t ka, int32_t kb) {
      result->colliding = true;
      result->contacts.push_back({A.triangle_id(ka), B.triangle_id(kb)});
      if (!request.all_contacts) return true;
      if (static_cast<int32_t>(result->contacts.size()) >= request.max_contacts) {
        result->truncated = true;
        return true;
      }
      return false;
    });
  }
};

// The gap between a triangle's plane span (see LeafPlane) and vertices w projected onto its normal.
inline double PlaneGap(const Vec3& n, double low, double high, const Vec3* w) {
  const double p0 = n.dot(w[0]), p1 = n.dot(w[1]), p2 = n.dot(w[2]);
  return std::max({std::min({p0, p1, p2}) - high, low - std::max({p0, p1, p2}), 0.0});
}

struct DistanceWalk : PairWalk {
  double rel_err;
  double abs_err;
  double max_distance;
  double stop_below = 0.0;

  double upper = std::numeric_limits<double>::infinity();
  double threshold = std::numeric_limits<double>::infinity();  // prune node pairs whose bound reaches it
  double min_pruned = std::numeric_limits<double>::infinity();  // smallest bound among pruned pairs
  int32_t best_ka = -1, best_kb = -1;
  Vec3 best_pa = Vec3::Zero(), best_pb = Vec3::Zero();  // in A's frame
  std::vector<NodePairBound>* front_out = nullptr;          // where the walk stopped, for a cache
  bool budgeted = false;  // rel_err or abs_err > 0: the walk dives first (Run), triangle planes (TestLeaves)

  // A pair of nodes may be skipped once its lower bound L satisfies L*(1+rel) >= upper or
  // L + abs >= upper (the budget is then met whatever it holds), or L >= max_distance.
  double known_lower = 0.0;  // the caller's certified lower bound (DistanceRequest::known_lower)
  // What the answer's lower bound loses to rounding (ComputeDistanceTrusted): no walk can certify more.
  double rounding = 0.0;

  void UpdateThreshold() {
    threshold = internal::DistanceWalkThreshold(upper, known_lower, rel_err, abs_err, rounding, stop_below,
                                                max_distance);
  }

  // OBB gap only: sphere bounds are far looser around large flat triangles, and the edge-cross axes
  // save more triangle tests than they cost (both measured on envrob).
  double LowerBound(int32_t na, int32_t nb) {
    const Obb& oa = A.obbs()[na];
    const Obb& ob = B.obbs()[nb];
    ++stats.bv_tests;
    return ObbDistanceLowerBound(oa.half_extents, ob.half_extents, MakeBoxPairFrame(oa, ob, X_AB), threshold);
  }

  // Distance between leaf triangle ka of A and triangle vb (B's, in A's frame), with the closest points
  // (also updates the upper bound).
  double TestTriangles(int32_t ka, int32_t kb, const Vec3* vb, Vec3* pa_out = nullptr, Vec3* pb_out = nullptr) {
    if (ka == seed.ka && kb == seed.kb) {  // tested by Seed: its answer is already in the upper bound
      if (pa_out != nullptr) {
        *pa_out = seed.pa;
        *pb_out = seed.pb;
      }
      return seed.d;
    }
    const LeafTriangle& ta = A.leaf_triangles()[ka];
    Vec3 pa, pb;
    ++stats.triangle_tests;
    const double d = TriangleDistance(ta.v[0], ta.v[1], ta.v[2], vb[0], vb[1], vb[2], &pa, &pb);
    if (pa_out != nullptr) {
      *pa_out = pa;
      *pb_out = pb;
    }
    if (d < upper) {
      upper = d;
      best_ka = ka;
      best_kb = kb;
      best_pa = pa;
      best_pb = pb;
      UpdateThreshold();
    }
    return d;
  }

  // Exact distance between two leaves' triangles (also updates the upper bound), or a lower bound that
  // reaches the threshold; *axis receives the unit direction from A's closest point to B's of the
  // nearest pair tested (zero when they touch). `along`, when given, is a carried leaf pair's last
  // closest direction (unit, A's frame), on which the vertices are projected first: the leaves' gap
  // along it (tight when the motion since is tangential) settles the pair without a triangle test when
  // it reaches the threshold; otherwise each triangle pair whose own gap does is skipped (near a flat
  // contact most of a leaf pair's triangles sit beside the closest one). A gap stands for the distance
  // it bounds, and *axis keeps `along` unless a tested pair is nearer.
  double TestLeaves(int32_t na, int32_t nb, const Vec3* along, Vec3* axis) {
    const BvhNode& a = A.nodes()[na];
    const BvhNode& b = B.nodes()[nb];
    std::array<double, kMaxLeafTriangles> top_a, low_b;  // each triangle's extreme vertex along the axis
    *axis = Vec3::Zero();
    if (along != nullptr) {
      double max_a = -std::numeric_limits<double>::infinity();
      for (int32_t i = 0; i < a.count; ++i) {
        const LeafTriangle& t = A.leaf_triangles()[a.first + i];
        top_a[static_cast<size_t>(i)] = std::max({along->dot(t.v[0]), along->dot(t.v[1]), along->dot(t.v[2])});
        max_a = std::max(max_a, top_a[static_cast<size_t>(i)]);
      }
      // B's vertices projected through X_AB: axis . (R v + p) = (R^T axis) . v + axis . p.
      const Vec3 along_B = X_AB.R.transpose() * *along;
      const double shift = along->dot(X_AB.p);
      double min_b = std::numeric_limits<double>::infinity();
      for (int32_t j = 0; j < b.count; ++j) {
        const LeafTriangle& t = B.leaf_triangles()[b.first + j];
        low_b[static_cast<size_t>(j)] =
            std::min({along_B.dot(t.v[0]), along_B.dot(t.v[1]), along_B.dot(t.v[2])}) + shift;
        min_b = std::min(min_b, low_b[static_cast<size_t>(j)]);
      }
      ++stats.bv_tests;
      *axis = *along;
      const double gap = std::max(0.0, min_b - max_a);
      if (gap >= threshold) return gap;
    }
    // With a budget, and in a carried leaf pair, each triangle pair is first bounded by its gap along
    // either triangle's normal: near a face-to-face approach a normal is close to the closest direction,
    // and the pairs beside the nearest one clear a threshold below the upper bound without a triangle
    // test (a leaf's box is far looser than its triangles' own planes). Exact walks from the roots leave
    // it out: there the threshold is the upper bound itself, which the planes seldom reach, and the
    // planes cost more than they save (the tracker's carried leaf pairs lie beside the nearest one).
    double d = std::numeric_limits<double>::infinity();
    const bool plane_gaps = budgeted || along != nullptr;
    for (int32_t j = 0; j < b.count; ++j) {
      Vec3 vb[3];
      TriangleInA(b.first + j, vb);
      // B's plane in A's frame: n_A = R n_B, and n_A . (R v + p) = n_B . v + n_A . p.
      LeafPlane plane_b{};
      if (plane_gaps) {
        const LeafPlane& stored = B.leaf_planes()[b.first + j];
        plane_b.n = X_AB.R * stored.n;
        const double shift = plane_b.n.dot(X_AB.p);
        plane_b.low = stored.low + shift;
        plane_b.high = stored.high + shift;
      }
      for (int32_t i = 0; i < a.count; ++i) {
        if (along != nullptr) {
          const double gap = low_b[static_cast<size_t>(j)] - top_a[static_cast<size_t>(i)];
          if (gap >= threshold) {
            d = std::min(d, gap);
            continue;
          }
        }
        if (plane_gaps) {
          const LeafPlane& plane_a = A.leaf_planes()[a.first + i];
          const Vec3* va = A.leaf_triangles()[a.first + i].v;
          ++stats.bv_tests;
          const double gap = std::max(PlaneGap(plane_a.n, plane_a.low, plane_a.high, vb),
                                      PlaneGap(plane_b.n, plane_b.low, plane_b.high, va));
          if (gap >= threshold) {
            d = std::min(d, gap);
            continue;
          }
        }
        Vec3 pa, pb;
        const double t = TestTriangles(a.first + i, b.first + j, vb, &pa, &pb);
        if (t < d) {
          d = t;
          *axis = t > 0.0 ? Vec3((pb - pa) / t) : Vec3::Zero();
        }
      }
    }
    return d;
  }

  // The triangle pair Seed tested, and its answer (the walk meets it again in its leaf pair).
  struct SeedPair {
    int32_t ka = -1, kb = -1;
    double d = 0.0;
    Vec3 pa = Vec3::Zero(), pb = Vec3::Zero();
  };
  SeedPair seed{};
  void TestSeed(int32_t ka, int32_t kb) {
    Vec3 vb[3];
    TriangleInA(kb, vb);
    Vec3 pa, pb;
    const double d = TestTriangles(ka, kb, vb, &pa, &pb);
    seed = {ka, kb, d, pa, pb};
  }

  // A first upper bound: the cached pair, or a greedy descent to the leaf pair whose spheres are
  // closest at each step (signed sphere gaps keep ranking children where box bounds are all 0).
  // Costs one triangle test and about 2 * depth sphere tests.
  void Seed(const DistanceCache* cache) {
    if (cache != nullptr && cache->leaf_a >= 0 && cache->leaf_b >= 0) {
      TestSeed(cache->leaf_a, cache->leaf_b);
      return;
    }
    int32_t na = 0, nb = 0;
    auto gap = [&](int32_t x, int32_t y) {
      ++stats.bv_tests;
      const Sphere& sa = A.spheres()[x];
      const Sphere& sb = B.spheres()[y];
      return (sa.center - X_AB * sb.center).norm() - sa.radius - sb.radius;
    };
    while (!(A.nodes()[na].is_leaf() && B.nodes()[nb].is_leaf())) {
      if (DescendA(na, nb)) {
        const int32_t c = A.nodes()[na].first;
        na = gap(c, nb) <= gap(c + 1, nb) ? c : c + 1;
      } else {
        const int32_t c = B.nodes()[nb].first;
        nb = gap(na, c) <= gap(na, c + 1) ? c : c + 1;
      }
    }
    TestSeed(A.nodes()[na].first, B.nodes()[nb].first);
  }

  // A pair the walk stops at: its bound joins the certified lower bound and the front.
  void Stop(int32_t a, int32_t b, double bound, const Vec3& axis = Vec3::Zero()) {
    min_pruned = std::min(min_pruned, bound);
    if (front_out != nullptr) front_out->push_back({a, b, bound, axis});
  }

  struct Entry {
    int32_t a, b;
    double bound;
    bool stale;  // bound carried over from an earlier pose, lowered by the motion since
    int32_t axis = -1;  // stale leaf pairs: their closest direction, an index into `axes`
  };
  std::vector<Vec3>* axes = nullptr;  // the carried front's leaf directions (CarriedFront); scratch
  NodeMotionMemo* motions = nullptr;   // scratch for CarriedFront

  // Best-first: node pairs leave a min-heap in order of their lower bounds, so the walk expands only
  // pairs whose bound is below the final distance (within the budget), and stops as soon as the
  // smallest remaining bound reaches the threshold; that bound is then the certified lower bound.
  // `start` must cover every triangle pair (the root pair, or a cached front).
  // `heap`: scratch storage (emptied first).
  void Run(const std::vector<Entry>& start, internal::BoundHeap<Entry>& heap) {
    // A stopped pair keeps its closest direction, if it carries one.
    auto stop = [&](const Entry& e) {
      Stop(e.a, e.b, e.bound, e.axis >= 0 ? (*axes)[static_cast<size_t>(e.axis)] : Vec3::Zero());
    };
    auto push = [&](const Entry& e) {
      if (e.bound >= threshold) {
        stop(e);
        return;
      }
      heap.Push(e);
    };
    heap.AssignWhere(start, [&](const Entry& e) {
      if (e.bound < threshold) return true;
      stop(e);
      return false;
    });
    auto pop = [&]() { return heap.Pop(); };
    if (heap.empty()) return;
    // The nearer child of an expanded pair is walked at once, without a trip through the heap, when
    // no queued pair has a smaller bound; best-first order is kept and most heap traffic is saved.
    // With a budget, the walk also dives to its first leaf pair that way once no queued pair's boxes
    // overlap: best-first order alone tests leaves only after every pair with a smaller bound, so the
    // upper bound stays far above the answer while pairs whose bounds already meet the budget are
    // expanded (envrob: rel_err 0.2 about 10% faster; exact walks keep strict best-first order, which
    // expands the fewest pairs below the distance).
    bool dive = budgeted;
    Entry e = pop();
    for (;;) {
      if (e.bound >= threshold) {
        stop(e);  // every queued pair has a bound at least this large
        break;
      }
      const BvhNode& na = A.nodes()[e.a];
      const BvhNode& nb = B.nodes()[e.b];
      const bool leaves = na.is_leaf() && nb.is_leaf();
      if (e.stale && !leaves) {
        // Refresh a carried-over bound with a box test; walk on only if it is still the smallest. (A
        // leaf pair goes straight to its exact triangle distance, the tightest bound there is.)
        e = {e.a, e.b, std::max(e.bound, LowerBound(e.a, e.b)), false};
        if (e.bound >= threshold) {
          stop(e);
        } else if (!heap.empty() && heap.top().bound < e.bound) {
          push(e);
        } else {
          continue;
        }
        if (heap.empty()) break;
        e = pop();
        continue;
      }
      if (leaves) {
        dive = false;
        // A carried leaf pair goes along its last closest direction first.
        const Vec3* along = e.stale && e.axis >= 0 ? &(*axes)[static_cast<size_t>(e.axis)] : nullptr;
        Vec3 axis;
        Stop(e.a, e.b, TestLeaves(e.a, e.b, along, &axis), axis);
        if (upper == 0.0 || heap.empty()) break;
        e = pop();
        continue;
      }
      Entry c0, c1;
      if (DescendA(e.a, e.b)) {
        c0 = {na.first, e.b, LowerBound(na.first, e.b), false};
        c1 = {na.first + 1, e.b, LowerBound(na.first + 1, e.b), false};
      } else {
        c0 = {e.a, nb.first, LowerBound(e.a, nb.first), false};
        c1 = {e.a, nb.first + 1, LowerBound(e.a, nb.first + 1), false};
      }
      if (c1.bound < c0.bound) std::swap(c0, c1);
      push(c1);
      // (A dived pair must stay below the threshold: the walk stops at the first pair that is not,
      // taking it for the smallest bound left.)
      if (heap.empty() || c0.bound <= heap.top().bound || (dive && c0.bound < threshold && heap.top().bound > 0.0)) {
        e = c0;
        continue;
      }
      push(c0);
      e = pop();
    }
    // Pairs still queued were never reached; they keep their bounds in the front.
    for (const Entry& r : heap.entries()) stop(r);
  }

  // The cached front at the current pose: each bound lowered by how far any point of B's node can
  // have moved relative to A since the cache's pose (SphereMotionBound on the node's sphere). Pairs
  // whose lowered bound still reaches the threshold stop at once (they join the new front as Run would
  // stop them: the threshold only falls); the rest go to *live. Leaf pairs keep their closest direction
  // (in `axes`), for TestLeaves. A walk that then starts from the roots instead must ForgetStops() first.
  void CarriedFront(const DistanceCache& cache, std::vector<Entry>* live) {
    live->clear();
    axes->clear();
    const SphereMotion moved(cache.X_AB, X_AB);
    motions->Begin(static_cast<size_t>(B.num_nodes()));
    for (const NodePairBound& f : cache.front) {
      const auto nb = static_cast<size_t>(f.node_b);
      if (motions->stamp[nb] != motions->now) {
        motions->stamp[nb] = motions->now;
        motions->value[nb] = moved.Of(B.spheres()[f.node_b]);
      }
      const double bound = std::max(0.0, f.bound - motions->value[nb]);
      if (bound >= threshold) {
        Stop(f.node_a, f.node_b, bound, f.axis_A);
        continue;
      }
      int32_t axis = -1;
      if (f.axis_A.squaredNorm() > 0.0) {
        axis = static_cast<int32_t>(axes->size());
        axes->push_back(f.axis_A);
      }
      live->push_back({f.node_a, f.node_b, bound, true, axis});
    }
  }
  void ForgetStops() {
    min_pruned = std::numeric_limits<double>::infinity();
    if (front_out != nullptr) front_out->clear();
  }
};

// Storage the distance walks of one thread reuse from query to query: no allocation once warm. (A
// walk never starts another, so one set per thread serves every query.)
struct WalkScratch {
  std::vector<DistanceWalk::Entry> start;
  std::vector<Vec3> axes;
  NodeMotionMemo motions;
  internal::BoundHeap<DistanceWalk::Entry> heap;
  std::vector<NodePairBound> front;  // the new front, swapped with the cache's (whose storage it takes)

  // Storage beyond what ordinary queries need is given back after a query, so that one huge walk does
  // not pin its memory to the thread.
  void Trim() {
    constexpr size_t kKeep = size_t{1} << 16;  // entries
    if (start.capacity() > kKeep) std::vector<DistanceWalk::Entry>().swap(start);
    if (axes.capacity() > kKeep) std::vector<Vec3>().swap(axes);
    if (heap.capacity() > kKeep) heap = {};
    if (front.capacity() > kKeep) std::vector<NodePairBound>().swap(front);
  }
};

}  // namespace

Status ValidateDistanceRequest(const DistanceRequest& r) {
  if (!(std::isfinite(r.rel_err) && r.rel_err >= 0.0)) {
    return InvalidArgument("rel_err must be finite and >= 0, got " + std::to_string(r.rel_err));
  }
  if (!(std::isfinite(r.abs_err) && r.abs_err >= 0.0)) {
    return InvalidArgument("abs_err must be finite and >= 0, got " + std::to_string(r.abs_err));
  }
  if (!(std::isfinite(r.stop_below) && r.stop_below >= 0.0)) {
    return InvalidArgument("stop_below must be finite and >= 0, got " + std::to_string(r.stop_below));
  }
  if (!(r.max_distance >= 0.0)) {
    return InvalidArgument("max_distance must be >= 0 (or +inf), got " + std::to_string(r.max_distance));
  }
  if (!(std::isfinite(r.known_lower) && r.known_lower >= 0.0)) {
    return InvalidArgument("known_lower must be finite and >= 0, got " + std::to_string(r.known_lower));
  }
  return {};
}

Status ValidateCollisionRequest(const CollisionRequest& r) {
  if (r.all_contacts && r.max_contacts < 1) {
    return InvalidArgument("max_contacts must be >= 1, got " + std::to_string(r.max_contacts));
  }
  return {};
}

Status ValidatePose(const RigidTransform& X, const char* what) {
  if (!X.R.allFinite() || !X.p.allFinite()) {
    return InvalidArgument(std::string(what) + " has a non-finite entry");
  }
  const double orth = (X.R.transpose() * X.R - Mat3::Identity()).cwiseAbs().maxCoeff();
  if (orth > 1e-6 || X.R.determinant() < 0.0) {
    return InvalidArgument(std::string(what) + " rotation is not orthonormal and right-handed (|R^T R - I| = " +
                           std::to_string(orth) + ")");
  }
  return {};
}

Result<CollisionResult> Collide(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                                const RigidTransform& X_WB, const CollisionRequest& request) {
  if (Status s = ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (Status s = ValidateCollisionRequest(request); !s.ok()) return s.error();
  CollisionResult result;
  internal::CollideTrusted(a, X_WA, b, X_WB, request, &result);
  return result;
}

void internal::CollideTrusted(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                              const RigidTransform& X_WB, const CollisionRequest& request, CollisionResult* result) {
  CollideWalk walk{{a, b, RelativeTransform(X_WA, X_WB), {}}};
  walk.Run(request, result);
  result->stats = walk.stats;
}

bool internal::LeafPairIntersects(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                                  const RigidTransform& X_WB, LeafPair pair, QueryStats* stats) {
  if (pair.a < 0 || pair.b < 0 || pair.a >= a.num_triangles() || pair.b >= b.num_triangles()) return false;
  CollideWalk walk{{a, b, RelativeTransform(X_WA, X_WB), {}}};
  const bool hit = walk.LeavesIntersect(pair.a, pair.b);
  *stats += walk.stats;
  return hit;
}

bool internal::CollideFirstTrusted(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                                   const RigidTransform& X_WB, LeafPair* contact, QueryStats* stats) {
  CollideWalk walk{{a, b, RelativeTransform(X_WA, X_WB), {}}};
  const bool hit = walk.Walk([&](int32_t ka, int32_t kb) {
    *contact = {ka, kb};
    return true;
  });
  *stats += walk.stats;
  return hit;
}

double internal::SweptDistanceLowerBound(const MeshModel& a, const RigidTransform& X_WA, const AxisSweep& sweep_a,
                                         const MeshModel& b, const RigidTransform& X_WB, const AxisSweep& sweep_b,
                                         double target, int64_t max_tests, QueryStats* stats) {
  const PairWalk walk{a, b, RelativeTransform(X_WA, X_WB), {}};
  // Both models' own frames hold their sweeps; the rounding of a model's points and the walk's
  // distances is covered as in ComputeDistance.
  const double rounding = RoundingAllowance(X_WA.p.cwiseAbs().maxCoeff() + X_WB.p.cwiseAbs().maxCoeff() +
                                            internal::ModelReach(a) + internal::ModelReach(b));
  auto motion = [&](int32_t na, int32_t nb) {
    return sweep_a.Bound(a.spheres()[na].center, a.spheres()[na].radius) +
           sweep_b.Bound(b.spheres()[nb].center, b.spheres()[nb].radius) + rounding;
  };
  struct Entry {
    int32_t a, b;
  };
  internal::WalkStack<Entry> stack;
  stack.push({0, 0});
  double lowest = std::numeric_limits<double>::infinity();
  int64_t tests = 0;
  while (!stack.empty()) {
    const Entry e = stack.pop();
    const double move = motion(e.a, e.b);
    const Obb& oa = a.obbs()[e.a];
    const Obb& ob = b.obbs()[e.b];
    ++tests;
    const double gap =
        ObbDistanceLowerBound(oa.half_extents, ob.half_extents, MakeBoxPairFrame(oa, ob, walk.X_AB)) - move;
    if (gap > target) {
      lowest = std::min(lowest, gap);
      continue;
    }
    if (tests >= max_tests) {
      lowest = std::min(lowest, gap);
      break;
    }
    const BvhNode& na = a.nodes()[e.a];
    const BvhNode& nb = b.nodes()[e.b];
    if (na.is_leaf() && nb.is_leaf()) {
      for (int32_t kb = nb.first; kb < nb.first + nb.count; ++kb) {
        Vec3 vb[3];
        walk.TriangleInA(kb, vb);
        for (int32_t ka = na.first; ka < na.first + na.count; ++ka) {
          const LeafTriangle& ta = a.leaf_triangles()[ka];
          Vec3 pa, pb;
          ++stats->triangle_tests;
          lowest = std::min(lowest, TriangleDistance(ta.v[0], ta.v[1], ta.v[2], vb[0], vb[1], vb[2], &pa, &pb) - move);
        }
      }
      if (lowest <= target) break;
      continue;
    }
    if (walk.DescendA(e.a, e.b)) {
      for (int32_t c = na.first + 1; c >= na.first; --c) stack.push({c, e.b});
    } else {
      for (int32_t c = nb.first + 1; c >= nb.first; --c) stack.push({e.a, c});
    }
  }
  stats->bv_tests += tests;
  return lowest;
}

Result<DistanceResult> ComputeDistance(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                                       const RigidTransform& X_WB, const DistanceRequest& request,
                                       DistanceCache* cache) {
  if (Status s = ValidatePose(X_WA, "X_WA"); !s.ok()) return s.error();
  if (Status s = ValidatePose(X_WB, "X_WB"); !s.ok()) return s.error();
  if (Status s = ValidateDistanceRequest(request); !s.ok()) return s.error();
  return internal::ComputeDistanceTrusted(a, X_WA, b, X_WB, request, cache);
}

DistanceResult internal::ComputeDistanceTrusted(const MeshModel& a, const RigidTransform& X_WA, const MeshModel& b,
                                                const RigidTransform& X_WB, const DistanceRequest& request,
                                                DistanceCache* cache) {
  DistanceWalk walk{{a, b, RelativeTransform(X_WA, X_WB), {}}, request.rel_err, request.abs_err,
                    request.max_distance};
  walk.stop_below = request.stop_below;
  walk.known_lower = request.known_lower;
  // Triangle distances and box bounds are computed in A's frame: rounded outward by their rounding's
  // allowance (the poses' translations and both models' reach bound every coordinate on the way).
  const double scale = X_WA.p.cwiseAbs().maxCoeff() + X_WB.p.cwiseAbs().maxCoeff() + internal::ModelReach(a) +
                       internal::ModelReach(b);
  walk.rounding = RoundingAllowance(scale);
  walk.budgeted = request.rel_err > 0.0 || request.abs_err > 0.0;
  walk.UpdateThreshold();
  const bool warm = cache != nullptr && cache->model_a == &a && cache->model_b == &b && cache->leaf_a >= 0 &&
                    cache->leaf_b >= 0 && cache->leaf_a < a.num_triangles() && cache->leaf_b < b.num_triangles();
  thread_local WalkScratch scratch;
  walk.axes = &scratch.axes;
  walk.motions = &scratch.motions;
  std::vector<NodePairBound>& front = scratch.front;
  front.clear();
  if (cache != nullptr) {
    Reserve(front, cache->front.size() + 64);
    walk.front_out = &front;
  }
  // Roots already max_distance apart settle the query without a triangle test (upper stays infinite:
  // beyond_max_distance, only the interval holds; the front is the root pair).
  const double root = std::isfinite(request.max_distance) ? walk.LowerBound(0, 0) : 0.0;
  const bool settled = root >= request.max_distance;
  if (settled) {
    walk.Stop(0, 0, root);
  } else {
    walk.Seed(warm ? cache : nullptr);
  }
  bool from_front = false;
  if (!settled && walk.upper > 0.0) {
    std::vector<DistanceWalk::Entry>& start = scratch.start;
    start.clear();
    if (warm && !cache->front.empty()) {
      // The carried front pays off when the motion since left most of it pruned; when too many of its
      // (deep) pairs would need testing again, a walk from the roots is cheaper.
      walk.CarriedFront(*cache, &start);
      from_front = 2 * start.size() <= cache->cold_front_size;
      if (!from_front) walk.ForgetStops();
    }
    if (!from_front) {
      start.assign(1, {0, 0, std::isfinite(request.max_distance) ? root : walk.LowerBound(0, 0), false});
    }
    walk.Run(start, scratch.heap);
  }

  DistanceResult result;
  result.upper_bound = walk.upper;
  result.lower_bound = std::max(0.0, std::min(walk.upper, walk.min_pruned) - walk.rounding);
  result.lower_bound = std::max(result.lower_bound, std::min(request.known_lower, walk.upper));
  result.intersecting = walk.upper == 0.0;
  result.beyond_max_distance = result.lower_bound >= request.max_distance;
  result.p_WA = X_WA * walk.best_pa;
  result.p_WB = X_WA * walk.best_pb;
  result.triangles = {walk.best_ka >= 0 ? a.triangle_id(walk.best_ka) : -1,
                      walk.best_kb >= 0 ? b.triangle_id(walk.best_kb) : -1};
  result.stats = walk.stats;
  if (cache != nullptr) {
    const std::size_t cold_size = from_front ? cache->cold_front_size : front.size();
    cache->model_a = &a;
    cache->model_b = &b;
    cache->leaf_a = walk.best_ka;
    cache->leaf_b = walk.best_kb;
    cache->X_AB = walk.X_AB;
    cache->cold_front_size = cold_size;
    // A front only deepens along a motion; once it has grown well past a walk from the roots, the
    // next query starts from the roots again. No front is kept when the seed alone proved contact.
    if (walk.upper == 0.0 && front.empty()) {
      cache->front.clear();
    } else if (front.size() > 4 * cold_size + 256) {
      cache->front.clear();
    } else {
      // The old front's storage comes back as scratch (sizes settle after a few growths).
      cache->front.swap(front);
    }
  }
  scratch.Trim();
  return result;
}

}  // namespace proximity::core
