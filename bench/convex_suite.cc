// Suite convex: the convex narrow phase, ours (GjkDistance and GjkIntersect on ConvexPolytope hulls and
// on primitives) beside FCL 0.7's GJK on the same shapes and poses in one run. FCL gets fcl::Convexd
// built from our hull (same vertices; faces = the hull's triangles, encoded [3, i0, i1, i2, ...]) and
// fcl::Box / Capsule / Sphere, queried through fcl::distance / fcl::collide with both of its GJK
// solvers: GST_LIBCCD (FCL's default, the headline peer: CaseLine's peer_us and ratio) and GST_INDEP
// (its own GJK: peer_indep_us and ratio_indep).
//
// Hulls of about 8, 250 and 940 vertices: a box, and hulls of real robot link meshes: of the Panda and
// UR5 collision meshes under ../shared/data/robots, the one whose hull's vertex count is nearest 250,
// and the one nearest 940 when it comes within 15% of it; otherwise (no collision hull has more than
// ~260 vertices) a UR5 visual mesh thinned by keeping every k-th vertex, the mesh and k (1 to 4) chosen
// so that the hull's count is nearest 940. Each row names the shapes it used and their vertex counts.
//
// Families, one function each:
//  - DistanceCold / CollideCold: seeded random poses near contact (bounding-sphere centres 0.35 to 1.4
//    times the sum of the radii apart: distances of the order of the shapes' size, some pairs
//    intersecting), a fresh start per query on both sides.
//  - DistanceWarm / CollideWarm: coherent motions (B on a smooth curve around A in small steps, turning
//    steadily), our GjkCache carried along each motion; FCL on the same sequence with the warm start
//    it has: none for fcl::distance, its cached GJK guess for GST_INDEP fcl::collide.
//  - Primitives cold: box-box, capsule-capsule, sphere-box.
//  - VClipWarm (vclip.h): V-Clip with its feature cache along the same motions, beside FCL and beside
//    our warm GJK.
//  - SdfRows (sdf.h): signed distance maps of the Panda links at N = 32, 64, 128 cells (build time and
//    memory beside our exact mesh hierarchy's build), and SdfContacts against our exact mesh-mesh
//    Collide and ComputeDistance on the same poses.
//
// Answers are checked on every row. Distances agree when within max(1e-6 m, 1e-6 relative) (FCL's GJK
// stops at a distance tolerance of 1e-6); booleans may differ only within 1e-9 of contact. Where ours
// and a peer differ beyond that, an exact referee independent of GJK decides (exact triangle-mesh
// distance of the shapes' surfaces, or a closed form for spheres and capsules): ours_off_exact counts
// our answers it rejects (check_output.py fails on any), <peer>_off_exact the peer's.
#include <fcl/fcl.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bench_util.h"
#include "peers/fcl_peer.h"
#include "narrowphase/convex.h"
#include "narrowphase/gjk.h"
#include "proximity/core/mesh/mesh.h"
#include "bvh/mesh_query.h"
#include "narrowphase/triangle.h"
#include "contact/vclip.h"
#include "bvh/sdf.h"

namespace proximity::bench {
namespace {

namespace fs = std::filesystem;
using core::ConvexPolytope;
using core::GjkCache;
using core::GjkDistance;
using core::GjkIntersect;
using core::GjkIntersectResult;
using core::GjkResult;
using core::RigidTransform;
using core::Vec3;
using peers::FclPose;

constexpr char kSuite[] = "convex";
constexpr char kPeerLibccd[] = "fcl-0.7 GST_LIBCCD";
constexpr char kPeerIndep[] = "fcl-0.7 GST_INDEP";
// Distances agree when within this much, absolute (metres) or relative.
constexpr double kDistanceTolerance = 1e-6;
// Booleans may differ only where the pair is this close to contact.
constexpr double kContactBand = 1e-9;

Vec3 RandomUnit(std::mt19937_64& rng) {
  std::normal_distribution<double> g(0.0, 1.0);
  Vec3 u;
  do u = Vec3(g(rng), g(rng), g(rng));
  while (!(u.squaredNorm() > 1e-12));
  return u.normalized();
}

// A bounding sphere in a shape's frame, for pose sampling.
struct Bound {
  Vec3 center = Vec3::Zero();
  double radius = 0.0;
};

Bound BoundOf(const std::vector<Vec3>& points) {
  Bound b;
  for (const Vec3& p : points) b.center += p;
  b.center /= static_cast<double>(points.size());
  for (const Vec3& p : points) b.radius = std::max(b.radius, (p - b.center).norm());
  return b;
}

// One shape of ours with its FCL twin, its bounding sphere, what it is, and (hulls, boxes) its surface
// as a mesh hierarchy for the exact referee.
template <class Shape>
struct Benched {
  Shape shape;
  std::shared_ptr<fcl::CollisionGeometryd> fcl;
  std::shared_ptr<const core::MeshModel> mesh;
  Bound bound;
  std::string source;
  int32_t vertices = 0;
  std::shared_ptr<const core::VClipPolyhedron> vclip;  // Hulls only.
};

using HullShape = Benched<std::shared_ptr<const ConvexPolytope>>;

// Our shapes as GJK sees them (the hull through its pointer).
const ConvexPolytope& Core(const std::shared_ptr<const ConvexPolytope>& p) { return *p; }
template <class Shape>
const Shape& Core(const Shape& s) {
  return s;
}

std::shared_ptr<fcl::Convexd> FclConvex(const ConvexPolytope& p) {
  auto vertices = std::make_shared<std::vector<fcl::Vector3d>>(p.vertices().begin(), p.vertices().end());
  auto faces = std::make_shared<std::vector<int>>();
  faces->reserve(4 * p.faces().size());
  for (const auto& f : p.faces()) faces->insert(faces->end(), {3, f[0], f[1], f[2]});
  return std::make_shared<fcl::Convexd>(vertices, p.num_faces(), faces);
}

HullShape MakeHull(std::shared_ptr<const ConvexPolytope> hull, std::string source) {
  HullShape h;
  h.bound = BoundOf(hull->vertices());
  h.fcl = FclConvex(*hull);
  h.mesh = core::MeshModel::Build(hull->ToMesh()).value();
  h.vertices = hull->num_vertices();
  h.source = std::move(source);
  if (auto v = core::VClipPolyhedron::Build(*hull); v.ok()) h.vclip = v.value();
  h.shape = std::move(hull);
  return h;
}

std::vector<std::string> FilesIn(const std::string& dir, const std::string& extension) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == extension) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// The hulls of about 250 and 940 vertices (see the file comment); false with a message when the
// robot meshes are absent.
bool LoadLinkHulls(const std::string& data_dir, HullShape* h250, HullShape* h940, std::string* error) {
  const std::string robots = data_dir + "/robots";
  std::vector<std::string> files;
  for (const auto& [dir, ext] : {std::pair{"/mbm_panda/meshes/collision", ".obj"},
                                 std::pair{"/panda/moveit_resources_panda_description/meshes/collision", ".stl"},
                                 std::pair{"/ur5/ur_description/meshes/ur5/collision", ".stl"}}) {
    for (auto& f : FilesIn(robots + dir, ext)) files.push_back(f);
  }
  if (files.empty()) {
    *error = "no Panda or UR5 collision meshes under " + robots;
    return false;
  }
  const auto relative = [&](const std::string& path) { return fs::relative(path, data_dir).string(); };
  struct Pick {
    std::shared_ptr<const ConvexPolytope> hull;
    std::string source;
  };
  Pick best250, best940;
  const auto consider = [](Pick* best, int32_t target, std::shared_ptr<const ConvexPolytope> hull, std::string source) {
    if (!best->hull || std::abs(hull->num_vertices() - target) < std::abs(best->hull->num_vertices() - target))
      *best = {std::move(hull), std::move(source)};
  };
  for (const std::string& f : files) {
    auto mesh = core::LoadMesh(f);
    if (!mesh.ok()) continue;
    auto hull = ConvexPolytope::Build(mesh.value(), f);
    if (!hull.ok()) continue;
    const std::string source = relative(f) + " (collision mesh, hull of " +
                               std::to_string(mesh.value().vertices.size()) + " points)";
    consider(&best250, 250, hull.value(), source);
    consider(&best940, 940, hull.value(), source);
  }
  if (!best250.hull) {
    *error = "no collision mesh under " + robots + " could be loaded";
    return false;
  }
  if (std::abs(best940.hull->num_vertices() - 940) > 0.15 * 940) {
    for (const std::string& f : FilesIn(robots + "/ur5/ur_description/meshes/ur5/visual", ".dae")) {
      auto mesh = core::LoadMesh(f);
      if (!mesh.ok()) continue;
      for (int k = 1; k <= 4; ++k) {
        std::vector<Vec3> points;
        for (size_t i = 0; i < mesh.value().vertices.size(); i += k) points.push_back(mesh.value().vertices[i]);
        auto hull = ConvexPolytope::Build(points, f);
        if (!hull.ok()) continue;
        const std::string every = k == 1 ? std::string("every") : "every " + std::to_string(k) + "th";
        consider(&best940, 940, hull.value(),
                 relative(f) + " (visual mesh, hull of " + every + " vertex: " + std::to_string(points.size()) +
                     " of " + std::to_string(mesh.value().vertices.size()) + " points)");
      }
    }
  }
  *h250 = MakeHull(best250.hull, best250.source);
  *h940 = MakeHull(best940.hull, best940.source);
  return true;
}

struct PosePair {
  RigidTransform X_WA, X_WB;
};

// Cold poses near contact: random rotations, bounding-sphere centres 0.35 to 1.4 times the sum of the
// radii apart in a random direction.
std::vector<PosePair> NearContactPoses(const Bound& a, const Bound& b, int n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> scale(0.35, 1.4), box(-0.5, 0.5);
  std::vector<PosePair> poses(n);
  for (PosePair& p : poses) {
    p.X_WA = RigidTransform(RandomRotation(rng), Vec3(box(rng), box(rng), box(rng)));
    const core::Mat3 R_WB = RandomRotation(rng);
    const Vec3 p_WBc = p.X_WA * a.center + scale(rng) * (a.radius + b.radius) * RandomUnit(rng);
    p.X_WB = RigidTransform(R_WB, p_WBc - R_WB * b.center);
  }
  return poses;
}

// Coherent motions: A still, B's centre on a quadratic Bezier curve around A (ends and control point
// 0.5 to 1.4 times the sum of the radii from A's centre, so some motions graze or pass through A)
// while B turns steadily about a fixed axis by 0.2 to 1 rad; `steps` poses per motion.
std::vector<std::vector<PosePair>> CoherentMotions(const Bound& a, const Bound& b, int motions, int steps,
                                                   std::mt19937_64& rng) {
  std::uniform_real_distribution<double> scale(0.5, 1.4), angle(0.2, 1.0);
  std::vector<std::vector<PosePair>> out(motions);
  for (auto& motion : out) {
    const RigidTransform X_WA(RandomRotation(rng), Vec3::Zero());
    const Vec3 c_W = X_WA * a.center;
    const double r = a.radius + b.radius;
    const Vec3 p0 = c_W + scale(rng) * r * RandomUnit(rng);
    const Vec3 p1 = c_W + scale(rng) * r * RandomUnit(rng);
    const Vec3 p2 = c_W + scale(rng) * r * RandomUnit(rng);
    const core::Mat3 R0 = RandomRotation(rng);
    const Vec3 axis = RandomUnit(rng);
    const double turn = angle(rng);
    for (int s = 0; s < steps; ++s) {
      const double t = s / double(steps - 1);
      const Vec3 p_WBc = (1 - t) * (1 - t) * p0 + 2 * (1 - t) * t * p1 + t * t * p2;
      const core::Mat3 R_WB = Eigen::AngleAxisd(turn * t, axis).toRotationMatrix() * R0;
      motion.push_back({X_WA, RigidTransform(R_WB, p_WBc - R_WB * b.center)});
    }
  }
  return out;
}

std::vector<PosePair> Flatten(const std::vector<std::vector<PosePair>>& motions) {
  std::vector<PosePair> out;
  for (const auto& m : motions) out.insert(out.end(), m.begin(), m.end());
  return out;
}

// Our GJK work per query.
struct GjkWork {
  double iterations = 0, support_calls = 0, one_support_pair = 0;
  int64_t queries = 0;
  template <class R>
  void Add(const R& r) {
    iterations += r.iterations;
    support_calls += r.support_calls;
    one_support_pair += r.support_calls <= 1;
    ++queries;
  }
  void AddTo(JsonLine& line) const {
    const double q = queries > 0 ? static_cast<double>(queries) : 1.0;
    line.Add("ours_iterations", iterations / q).Add("ours_support_calls", support_calls / q);
    line.Add("ours_one_support_pair", one_support_pair / q);
  }
};

// FCL's distance (<= 0 when it reports intersection) and boolean, with one GJK solver.
struct FclSide {
  fcl::CollisionObjectd a, b;
  fcl::GJKSolverType solver;
  FclSide(std::shared_ptr<fcl::CollisionGeometryd> ga, std::shared_ptr<fcl::CollisionGeometryd> gb,
          fcl::GJKSolverType s)
      : a(std::move(ga), fcl::Transform3d::Identity()), b(std::move(gb), fcl::Transform3d::Identity()), solver(s) {}
  double Distance(const PosePair& p) {
    a.setTransform(FclPose(p.X_WA));
    b.setTransform(FclPose(p.X_WB));
    fcl::DistanceRequestd req;
    req.enable_nearest_points = true;
    req.gjk_solver_type = solver;
    fcl::DistanceResultd res;
    fcl::distance(&a, &b, req, res);
    return res.min_distance;
  }
  // `guess` (GST_INDEP's warm start) is read and written when given.
  bool Collide(const PosePair& p, fcl::Vector3d* guess = nullptr) {
    a.setTransform(FclPose(p.X_WA));
    b.setTransform(FclPose(p.X_WB));
    fcl::CollisionRequestd req;
    req.gjk_solver_type = solver;
    if (guess != nullptr) {
      req.enable_cached_gjk_guess = true;
      req.cached_gjk_guess = *guess;
    }
    fcl::CollisionResultd res;
    fcl::collide(&a, &b, req, res);
    if (guess != nullptr) *guess = res.cached_gjk_guess;
    return res.isCollision();
  }
};

// ---- Checking answers -------------------------------------------------------------------------------

// The exact answer at one pose, from an oracle independent of GJK: exact triangle-mesh distance of the
// shapes' surfaces (ComputeDistance; the paired shapes are congruent, so neither can lie inside the
// other without the surfaces crossing), or a closed form for spheres and capsules.
struct Exact {
  double distance = 0.0;
  bool intersecting = false;
};

template <class A, class B>
Exact Referee(const Benched<A>& a, const Benched<B>& b, const PosePair& p) {
  Exact e;
  if constexpr (std::is_same_v<A, core::Sphere> && std::is_same_v<B, core::Box>) {
    const Vec3 p_BC = p.X_WB.inverse() * (p.X_WA * a.shape.center);
    const Vec3& h = b.shape.half_extents;
    const Vec3 q = p_BC.cwiseMax(-h).cwiseMin(h);
    const double gap = (p_BC - q).norm() - a.shape.radius;
    e.intersecting = gap <= 0.0;
    e.distance = std::max(0.0, gap);
  } else if constexpr (std::is_same_v<A, core::Capsule> && std::is_same_v<B, core::Capsule>) {
    const Vec3 za(0, 0, a.shape.half_length), zb(0, 0, b.shape.half_length);
    Vec3 cp, cq;
    const double d2 = core::SegmentSegmentDistanceSquared(p.X_WA * (-za), p.X_WA * za, p.X_WB * (-zb), p.X_WB * zb,
                                                          &cp, &cq);
    const double gap = std::sqrt(d2) - a.shape.radius - b.shape.radius;
    e.intersecting = gap <= 0.0;
    e.distance = std::max(0.0, gap);
  } else {
    const core::Result<core::DistanceResult> r = core::ComputeDistance(*a.mesh, p.X_WA, *b.mesh, p.X_WB, {}, nullptr);
    if (!r.ok()) return {NAN, false};
    e.intersecting = r.value().intersecting;
    e.distance = r.value().intersecting ? 0.0 : r.value().upper_bound;
  }
  return e;
}

// Whether a distance answer (hit: reported intersecting) is the exact one within the tolerance; a pair
// within kContactBand of contact may be called either way.
bool DistanceRight(double d, bool hit, const Exact& e) {
  if (hit) return e.intersecting || e.distance <= kContactBand;
  if (e.intersecting) return d <= kContactBand;
  return std::abs(d - e.distance) <= kDistanceTolerance * std::max(1.0, e.distance);
}
bool NearContact(const Exact& e) { return !e.intersecting && e.distance <= kContactBand; }

// One peer solver's answers against ours: agreeing (distances within the tolerance), differing only
// within kContactBand of contact, or differing beyond that (disagree; agree + near_contact + disagree =
// n), and of those, how many the exact referee shows to be the peer's error.
struct Tally {
  int64_t agree = 0, near_contact = 0, disagree = 0, peer_off_exact = 0;
  double max_abs_diff = 0.0;  // Distances, over poses both call separated.
};

// All answers of one row: the peers' tallies, and how often the referee was asked and rejected ours.
struct Verdicts {
  Tally libccd, indep;
  int64_t exact_checks = 0, ours_off_exact = 0;

  // Distance answers at one pose (peers report <= 0 for intersecting); `exact` is called only when an
  // answer differs beyond the tolerance.
  template <class ExactFn>
  void Distances(double ours, bool ours_hit, double d_libccd, double d_indep, ExactFn&& exact) {
    const auto compare = [&](double peer, Tally& t) {
      const bool peer_hit = peer <= 0.0;
      if (peer_hit == ours_hit) {
        if (ours_hit) return ++t.agree, true;
        const double diff = std::abs(ours - peer);
        t.max_abs_diff = std::max(t.max_abs_diff, diff);
        if (diff <= kDistanceTolerance * std::max(1.0, std::max(ours, peer))) return ++t.agree, true;
        return false;
      }
      if ((ours_hit ? peer : ours) <= kContactBand) return ++t.near_contact, true;
      return false;
    };
    const bool ok_libccd = compare(d_libccd, libccd), ok_indep = compare(d_indep, indep);
    if (ok_libccd && ok_indep) return;
    const Exact e = exact();
    ++exact_checks;
    const bool ours_right = DistanceRight(ours, ours_hit, e);
    ours_off_exact += !ours_right;
    for (auto [ok, peer, t] : {std::tuple{ok_libccd, d_libccd, &libccd}, std::tuple{ok_indep, d_indep, &indep}}) {
      if (ok) continue;
      ++t->disagree;
      if (!DistanceRight(std::max(peer, 0.0), peer <= 0.0, e)) ++t->peer_off_exact;
    }
  }

  // Boolean answers at one pose; a pair within kContactBand of contact may be called either way.
  template <class ExactFn>
  void Booleans(bool ours, bool b_libccd, bool b_indep, ExactFn&& exact) {
    if (ours == b_libccd && ours == b_indep) {
      ++libccd.agree, ++indep.agree;
      return;
    }
    const Exact e = exact();
    ++exact_checks;
    const bool near = NearContact(e);
    ours_off_exact += !near && ours != e.intersecting;
    for (auto [peer, t] : {std::pair{b_libccd, &libccd}, std::pair{b_indep, &indep}}) {
      if (peer == ours) {
        ++t->agree;
      } else if (near) {
        ++t->near_contact;
      } else {
        ++t->disagree;
        if (peer != e.intersecting) ++t->peer_off_exact;
      }
    }
  }

  void AddTo(JsonLine& line, bool distances) const {
    for (auto [name, t] : {std::pair{"libccd", &libccd}, std::pair{"indep", &indep}}) {
      line.Add(std::string("agree_") + name, t->agree).Add(std::string("near_contact_") + name, t->near_contact);
      line.Add(std::string("disagree_") + name, t->disagree).Add(std::string(name) + "_off_exact", t->peer_off_exact);
      if (distances) line.Add(std::string("max_abs_diff_") + name, t->max_abs_diff);
    }
    line.Add("exact_checks", exact_checks).Add("ours_off_exact", ours_off_exact);
  }
};

// A row's common fields: CaseLine with GST_LIBCCD as the peer, GST_INDEP beside it.
JsonLine RowLine(const std::string& name, const std::string& family, const std::vector<double>& ours,
                 const std::vector<double>& libccd, const std::vector<double>& indep) {
  JsonLine line = CaseLine(kSuite, name, ours, Work{}, kPeerLibccd, libccd);
  line.Add("family", family).Add("peer_p95_us", Percentile(libccd, 0.95));
  line.Add("peer_indep", kPeerIndep).Add("peer_indep_us", Median(indep)).Add("peer_indep_mean_us", Mean(indep));
  line.Add("ratio_indep", Median(indep) / Median(ours));
  return line;
}

template <class A, class B>
void AddShapes(JsonLine& line, const Benched<A>& a, const Benched<B>& b) {
  line.Add("shape_a", a.source).Add("vertices_a", a.vertices).Add("shape_b", b.source).Add("vertices_b", b.vertices);
}

// Times of `query(motion, step)` over every motion, each step timed alone, the smallest of `reps` runs
// per step; `begin(motion)` resets the warm state before each motion's run. `batch_us`, when given,
// receives the mean time per step of whole motions timed in one piece (no clock reads between steps),
// the smallest of the runs.
template <class Begin, class Query>
std::vector<double> TimeMotions(const std::vector<std::vector<PosePair>>& motions, int reps, Begin&& begin,
                                Query&& query, double* batch_us = nullptr) {
  std::vector<double> best;
  for (const auto& m : motions) best.insert(best.end(), m.size(), 1e300);
  double best_batch = 1e300;
  for (int r = 0; r < reps; ++r) {
    size_t i = 0;
    for (size_t m = 0; m < motions.size(); ++m) {
      begin(m);
      for (size_t s = 0; s < motions[m].size(); ++s, ++i) {
        const double t0 = Now();
        query(m, s);
        best[i] = std::min(best[i], (Now() - t0) * 1e6);
      }
    }
    if (batch_us != nullptr) {
      double total = 0.0;
      for (size_t m = 0; m < motions.size(); ++m) {
        begin(m);
        const double t0 = Now();
        for (size_t s = 0; s < motions[m].size(); ++s) query(m, s);
        total += Now() - t0;
      }
      best_batch = std::min(best_batch, total * 1e6 / static_cast<double>(best.size()));
    }
  }
  if (batch_us != nullptr) *batch_us = best_batch;
  return best;
}

// Index of each motion's first step in the flattened sequence.
std::vector<size_t> MotionStarts(const std::vector<std::vector<PosePair>>& motions) {
  std::vector<size_t> start(motions.size());
  for (size_t m = 0, offset = 0; m < motions.size(); offset += motions[m].size(), ++m) start[m] = offset;
  return start;
}

// ---- Families -------------------------------------------------------------------------------------

// Cold distance: a fresh start (no cache) per query, FCL's fcl::distance with nearest points.
template <class A, class B>
void DistanceCold(const std::string& name, const Benched<A>& a, const Benched<B>& b,
                  const std::vector<PosePair>& poses, int reps) {
  const int n = static_cast<int>(poses.size());
  std::vector<double> ours_d(n), libccd_d(n), indep_d(n);
  std::vector<char> ours_hit(n);
  GjkWork work;
  int64_t not_converged = 0;
  bool record = true;
  const auto ours = TimePerItem(n, reps, [&](int i) {
    const GjkResult r = GjkDistance(Core(a.shape), poses[i].X_WA, Core(b.shape), poses[i].X_WB);
    if (record) {
      ours_d[i] = r.distance;
      ours_hit[i] = r.intersecting;
      work.Add(r);
      not_converged += !r.converged;
      record = i + 1 < n;
    }
  });
  FclSide libccd(a.fcl, b.fcl, fcl::GST_LIBCCD), indep(a.fcl, b.fcl, fcl::GST_INDEP);
  const auto t_libccd = TimePerItem(n, reps, [&](int i) { libccd_d[i] = libccd.Distance(poses[i]); });
  const auto t_indep = TimePerItem(n, reps, [&](int i) { indep_d[i] = indep.Distance(poses[i]); });
  Verdicts verdicts;
  std::vector<char> separated(n);
  for (int i = 0; i < n; ++i) {
    verdicts.Distances(ours_d[i], ours_hit[i], libccd_d[i], indep_d[i], [&] { return Referee(a, b, poses[i]); });
    separated[i] = !ours_hit[i];
  }
  JsonLine line = RowLine(name, "distance_cold", ours, t_libccd, t_indep);
  AddShapes(line, a, b);
  work.AddTo(line);
  const auto o = Select(ours, separated), p = Select(t_libccd, separated), q = Select(t_indep, separated);
  line.Add("separated", static_cast<int64_t>(o.size())).Add("ours_separated_us", Median(o));
  line.Add("peer_separated_us", Median(p)).Add("ratio_separated", Median(p) / Median(o));
  line.Add("peer_indep_separated_us", Median(q)).Add("ratio_indep_separated", Median(q) / Median(o));
  verdicts.AddTo(line, true);
  line.Add("not_converged", not_converged);
  line.Print();
}

// Cold boolean: ISA-GJK from a fresh start against fcl::collide (first contact, no contact points).
template <class A, class B>
void CollideCold(const std::string& name, const Benched<A>& a, const Benched<B>& b,
                 const std::vector<PosePair>& poses, int reps) {
  const int n = static_cast<int>(poses.size());
  std::vector<char> ours_hit(n), libccd_hit(n), indep_hit(n);
  GjkWork work;
  bool record = true;
  const auto ours = TimePerItem(n, reps, [&](int i) {
    const GjkIntersectResult r = GjkIntersect(Core(a.shape), poses[i].X_WA, Core(b.shape), poses[i].X_WB);
    if (record) {
      ours_hit[i] = r.intersecting;
      work.Add(r);
      record = i + 1 < n;
    }
  });
  FclSide libccd(a.fcl, b.fcl, fcl::GST_LIBCCD), indep(a.fcl, b.fcl, fcl::GST_INDEP);
  const auto t_libccd = TimePerItem(n, reps, [&](int i) { libccd_hit[i] = libccd.Collide(poses[i]); });
  const auto t_indep = TimePerItem(n, reps, [&](int i) { indep_hit[i] = indep.Collide(poses[i]); });
  Verdicts verdicts;
  int64_t intersecting = 0;
  for (int i = 0; i < n; ++i) {
    intersecting += ours_hit[i];
    verdicts.Booleans(ours_hit[i], libccd_hit[i], indep_hit[i], [&] { return Referee(a, b, poses[i]); });
  }
  JsonLine line = RowLine(name, "collide_cold", ours, t_libccd, t_indep);
  AddShapes(line, a, b);
  work.AddTo(line);
  line.Add("intersecting", intersecting);
  verdicts.AddTo(line, false);
  line.Print();
}

// What DistanceWarm measured, for the rows that run on the same motions (V-Clip).
struct WarmRun {
  std::vector<double> ours, libccd, indep;      // Times per step (us).
  std::vector<double> ours_d, libccd_d, indep_d;  // Distances per step.
};

// Warm distance along coherent motions: our cache carried from step to step (fresh per motion); FCL
// on the same sequence (fcl::distance keeps no state between calls).
template <class A, class B>
WarmRun DistanceWarm(const std::string& name, const Benched<A>& a, const Benched<B>& b,
                     const std::vector<std::vector<PosePair>>& motions, int reps) {
  const std::vector<PosePair> flat = Flatten(motions);
  const std::vector<size_t> start = MotionStarts(motions);
  const int n = static_cast<int>(flat.size());
  WarmRun run;
  run.ours_d.resize(n), run.libccd_d.resize(n), run.indep_d.resize(n);
  std::vector<char> ours_hit(n);
  GjkWork work;
  int64_t not_converged = 0;
  GjkCache cache;
  bool record = true;
  double batch_us = 0.0;
  run.ours = TimeMotions(
      motions, reps, [&](size_t) { cache = GjkCache(); },
      [&](size_t m, size_t s) {
        const PosePair& p = motions[m][s];
        const GjkResult r = GjkDistance(Core(a.shape), p.X_WA, Core(b.shape), p.X_WB, &cache);
        if (record) {
          run.ours_d[start[m] + s] = r.distance;
          ours_hit[start[m] + s] = r.intersecting;
          work.Add(r);
          not_converged += !r.converged;
          record = start[m] + s + 1 < static_cast<size_t>(n);
        }
      },
      &batch_us);
  FclSide libccd(a.fcl, b.fcl, fcl::GST_LIBCCD), indep(a.fcl, b.fcl, fcl::GST_INDEP);
  run.libccd = TimePerItem(n, reps, [&](int i) { run.libccd_d[i] = libccd.Distance(flat[i]); });
  run.indep = TimePerItem(n, reps, [&](int i) { run.indep_d[i] = indep.Distance(flat[i]); });
  Verdicts verdicts;
  int64_t intersecting = 0;
  for (int i = 0; i < n; ++i) {
    verdicts.Distances(run.ours_d[i], ours_hit[i], run.libccd_d[i], run.indep_d[i],
                       [&] { return Referee(a, b, flat[i]); });
    intersecting += ours_hit[i];
  }
  JsonLine line = RowLine(name, "distance_warm", run.ours, run.libccd, run.indep);
  AddShapes(line, a, b);
  work.AddTo(line);
  line.Add("motions", static_cast<int64_t>(motions.size())).Add("intersecting", intersecting);
  line.Add("ours_batch_mean_us", batch_us);
  verdicts.AddTo(line, true);
  line.Add("not_converged", not_converged);
  line.Print();
  return run;
}

// Warm boolean along coherent motions: our cached separating axis; FCL GST_LIBCCD cold, GST_INDEP
// with its cached guess carried along each motion.
template <class A, class B>
void CollideWarm(const std::string& name, const Benched<A>& a, const Benched<B>& b,
                 const std::vector<std::vector<PosePair>>& motions, int reps) {
  const std::vector<PosePair> flat = Flatten(motions);
  const std::vector<size_t> start = MotionStarts(motions);
  const int n = static_cast<int>(flat.size());
  std::vector<char> ours_hit(n), libccd_hit(n), indep_hit(n);
  GjkWork work;
  GjkCache cache;
  bool record = true;
  double batch_us = 0.0;
  const auto ours = TimeMotions(
      motions, reps, [&](size_t) { cache = GjkCache(); },
      [&](size_t m, size_t s) {
        const PosePair& p = motions[m][s];
        const GjkIntersectResult r = GjkIntersect(Core(a.shape), p.X_WA, Core(b.shape), p.X_WB, &cache);
        if (record) {
          ours_hit[start[m] + s] = r.intersecting;
          work.Add(r);
          record = start[m] + s + 1 < static_cast<size_t>(n);
        }
      },
      &batch_us);
  FclSide libccd(a.fcl, b.fcl, fcl::GST_LIBCCD), indep(a.fcl, b.fcl, fcl::GST_INDEP);
  const auto t_libccd = TimeMotions(
      motions, reps, [](size_t) {},
      [&](size_t m, size_t s) { libccd_hit[start[m] + s] = libccd.Collide(motions[m][s]); });
  fcl::Vector3d guess(1, 0, 0);
  const auto t_indep = TimeMotions(
      motions, reps, [&](size_t) { guess = fcl::Vector3d(1, 0, 0); },
      [&](size_t m, size_t s) { indep_hit[start[m] + s] = indep.Collide(motions[m][s], &guess); });
  Verdicts verdicts;
  int64_t intersecting = 0;
  for (int i = 0; i < n; ++i) {
    intersecting += ours_hit[i];
    verdicts.Booleans(ours_hit[i], libccd_hit[i], indep_hit[i], [&] { return Referee(a, b, flat[i]); });
  }
  JsonLine line = RowLine(name, "collide_warm", ours, t_libccd, t_indep);
  AddShapes(line, a, b);
  work.AddTo(line);
  line.Add("motions", static_cast<int64_t>(motions.size())).Add("intersecting", intersecting);
  line.Add("ours_batch_mean_us", batch_us);
  verdicts.AddTo(line, false);
  line.Print();
}

// V-Clip (vclip.h) with its feature cache along the motions DistanceWarm ran, per coherent step; FCL's
// times and distances on the same sequence are DistanceWarm's, and our warm GJK is reported beside.
void VClipWarm(const std::string& name, const HullShape& a, const HullShape& b,
               const std::vector<std::vector<PosePair>>& motions, int reps, const WarmRun& gjk) {
  if (!a.vclip || !b.vclip) {
    std::cerr << "convex: " << name << ": no V-Clip polyhedron for " << a.source << "\n";
    return;
  }
  const std::vector<PosePair> flat = Flatten(motions);
  const std::vector<size_t> start = MotionStarts(motions);
  const int n = static_cast<int>(flat.size());
  std::vector<double> ours_d(n);
  std::vector<char> ours_hit(n);
  double transitions = 0, plane_tests = 0, local_min_scans = 0;
  int64_t fell_back = 0;
  core::VClipCache cache;
  bool record = true;
  double batch_us = 0.0;
  const auto ours = TimeMotions(
      motions, reps, [&](size_t) { cache = core::VClipCache(); },
      [&](size_t m, size_t s) {
        const PosePair& p = motions[m][s];
        const core::VClipResult r = core::VClipDistance(*a.vclip, p.X_WA, *b.vclip, p.X_WB, &cache);
        if (record) {
          ours_d[start[m] + s] = r.distance;
          ours_hit[start[m] + s] = r.penetrating;
          transitions += r.transitions;
          plane_tests += r.plane_tests;
          local_min_scans += r.local_min_scans;
          fell_back += r.fell_back_to_gjk;
          record = start[m] + s + 1 < static_cast<size_t>(n);
        }
      },
      &batch_us);
  Verdicts verdicts;
  double max_diff_gjk = 0.0;
  int64_t flag_diff_gjk = 0;
  for (int i = 0; i < n; ++i) {
    verdicts.Distances(ours_d[i], ours_hit[i], gjk.libccd_d[i], gjk.indep_d[i],
                       [&] { return Referee(a, b, flat[i]); });
    const bool gjk_hit = gjk.ours_d[i] <= 0.0;
    if (gjk_hit != static_cast<bool>(ours_hit[i])) {
      ++flag_diff_gjk;
    } else if (!gjk_hit) {
      max_diff_gjk = std::max(max_diff_gjk, std::abs(ours_d[i] - gjk.ours_d[i]));
    }
  }
  JsonLine line = RowLine(name, "vclip_warm", ours, gjk.libccd, gjk.indep);
  AddShapes(line, a, b);
  const double q = std::max(1, n);
  line.Add("ours_method", "VClipDistance with VClipCache");
  line.Add("ours_transitions", transitions / q).Add("ours_plane_tests", plane_tests / q);
  line.Add("ours_local_min_scans", local_min_scans / q).Add("fell_back_to_gjk", fell_back);
  line.Add("motions", static_cast<int64_t>(motions.size())).Add("ours_batch_mean_us", batch_us);
  line.Add("gjk_warm_us", Median(gjk.ours)).Add("ratio_vs_gjk_warm", Median(gjk.ours) / Median(ours));
  line.Add("max_abs_diff_vs_gjk", max_diff_gjk).Add("flag_diff_vs_gjk", flag_diff_gjk);
  verdicts.AddTo(line, true);
  line.Print();
}

// Signed distance maps (sdf.h) of the Panda links: build time and memory per N (beside our exact mesh
// hierarchy's build), and SdfContacts at near-contact poses of each link against itself beside our
// exact mesh-mesh Collide (the peer column) and ComputeDistance on the same poses.
void SdfRows(const SuiteOptions& options, std::mt19937_64& rng) {
  const std::string dir = options.data_dir + "/robots/panda/moveit_resources_panda_description/meshes/collision";
  struct Link {
    std::string name;
    core::TriangleMesh mesh;
    std::shared_ptr<const core::MeshModel> model;
    Bound bound;
  };
  std::vector<Link> links;
  for (const std::string& f : FilesIn(dir, ".stl")) {
    auto mesh = core::LoadMesh(f);
    if (!mesh.ok()) continue;
    Link link{fs::path(f).stem().string(), mesh.value(), nullptr, BoundOf(mesh.value().vertices)};
    links.push_back(std::move(link));
  }
  if (links.empty()) {
    std::cerr << "convex: signed distance rows skipped: no Panda collision meshes in " << dir << "\n";
    return;
  }
  // The exact hierarchies (the peer of the build rows), built and timed once per link.
  std::vector<double> bvh_us;
  for (Link& link : links) {
    const double t0 = Now();
    link.model = core::MeshModel::Build(link.mesh).value();
    bvh_us.push_back((Now() - t0) * 1e6);
  }
  const std::vector<int> sizes = options.quick ? std::vector<int>{32} : std::vector<int>{32, 64, 128};
  const int poses_per_link = options.quick ? 40 : 200;
  const int reps = options.quick ? 1 : 3;
  std::vector<std::vector<PosePair>> poses;
  for (const Link& link : links) poses.push_back(NearContactPoses(link.bound, link.bound, poses_per_link, rng));
  for (const int cells : sizes) {
    std::string suffix = "N";
    suffix += std::to_string(cells);
    std::vector<std::shared_ptr<const core::SignedDistanceMap>> maps;
    std::vector<double> build_us;
    double memory = 0.0, memory_max = 0.0;
    int32_t threads = 0;
    std::string failures;
    for (const Link& link : links) {
      auto map = core::SignedDistanceMap::Build(*link.model, cells, {}, link.name);
      if (!map.ok()) {
        failures += (failures.empty() ? "" : "; ") + map.error().message;
        maps.push_back(nullptr);
        continue;
      }
      maps.push_back(map.value());
      build_us.push_back(map.value()->build_seconds() * 1e6);
      const double bytes = static_cast<double>(map.value()->memory_bytes());
      memory += bytes;
      memory_max = std::max(memory_max, bytes);
      threads = map.value()->build_stats().threads;
    }
    {
      JsonLine line = CaseLine(kSuite, "sdf_build_" + suffix, build_us, Work{},
                               "ours MeshModel::Build (exact triangle hierarchy)", bvh_us);
      line.Add("family", "sdf_build").Add("cells", cells).Add("links", static_cast<int64_t>(links.size()));
      line.Add("built", static_cast<int64_t>(build_us.size())).Add("build_threads", threads);
      line.Add("build_s_total", std::accumulate(build_us.begin(), build_us.end(), 0.0) * 1e-6);
      line.Add("memory_mb_total", memory / 1e6).Add("memory_mb_max", memory_max / 1e6);
      for (size_t k = 0; k < links.size(); ++k) {
        if (!maps[k]) continue;
        line.Add("build_s_" + links[k].name, maps[k]->build_seconds());
        line.Add("memory_mb_" + links[k].name, static_cast<double>(maps[k]->memory_bytes()) / 1e6);
      }
      if (!failures.empty()) line.Add("build_errors", failures);
      line.Print();
    }
    // Contacts: each link against itself at near-contact poses.
    std::vector<double> ours_t, collide_t, distance_t;
    int64_t n = 0, colliding_exact = 0, colliding_sdf = 0, missed = 0, bound_violations = 0, errors = 0;
    double contacts = 0, samples_tested = 0, deepest_error = 0;
    for (size_t k = 0; k < links.size(); ++k) {
      if (!maps[k]) continue;
      const core::SignedDistanceMap& map = *maps[k];
      const core::MeshModel& model = *links[k].model;
      const auto& ps = poses[k];
      const int m = static_cast<int>(ps.size());
      std::vector<core::SdfContactResult> results(m);
      std::vector<char> ok(m, 1);
      const auto t_sdf = TimePerItem(m, reps, [&](int i) {
        core::Result<core::SdfContactResult> r = core::SdfContacts(map, ps[i].X_WA, map, ps[i].X_WB, {});
        ok[i] = r.ok();
        results[i] = std::move(r).value_or({});
      });
      std::vector<core::CollisionResult> hits(m);
      const auto t_collide = TimePerItem(m, reps, [&](int i) {
        hits[i] = core::Collide(model, ps[i].X_WA, model, ps[i].X_WB, {}).value_or({});
      });
      std::vector<core::DistanceResult> dists(m);
      const auto t_distance = TimePerItem(m, reps, [&](int i) {
        dists[i] = core::ComputeDistance(model, ps[i].X_WA, model, ps[i].X_WB, {}, nullptr).value_or({});
      });
      ours_t.insert(ours_t.end(), t_sdf.begin(), t_sdf.end());
      collide_t.insert(collide_t.end(), t_collide.begin(), t_collide.end());
      distance_t.insert(distance_t.end(), t_distance.begin(), t_distance.end());
      for (int i = 0; i < m; ++i) {
        ++n;
        errors += !ok[i];
        const auto& c = results[i].contacts;
        const bool sdf_hit = !c.empty() && c.front().depth > 0.0;
        colliding_exact += hits[i].colliding;
        colliding_sdf += sdf_hit;
        missed += hits[i].colliding && !sdf_hit;
        contacts += static_cast<double>(c.size());
        samples_tested += static_cast<double>(results[i].stats.samples_tested);
        // Apart by d, every sample's true depth is at most -d: a reported depth beyond -d plus its error
        // bound breaks the map's certified bound.
        if (!hits[i].colliding && !dists[i].intersecting) {
          for (const core::SdfContact& x : c) {
            if (x.depth > x.error_bound - dists[i].lower_bound + 1e-12) ++bound_violations;
          }
        }
        if (!c.empty()) deepest_error = std::max(deepest_error, c.front().error_bound);
      }
    }
    JsonLine line = CaseLine(kSuite, "sdf_contact_" + suffix, ours_t, Work{},
                             "ours exact mesh-mesh Collide (triangle hierarchy)", collide_t);
    const double q = std::max<double>(1.0, static_cast<double>(n));
    line.Add("family", "sdf_contact").Add("cells", cells).Add("links", static_cast<int64_t>(links.size()));
    line.Add("exact_distance_us", Median(distance_t));
    line.Add("ratio_vs_exact_distance", Median(distance_t) / Median(ours_t));
    line.Add("colliding_exact", colliding_exact).Add("colliding_sdf", colliding_sdf);
    line.Add("missed_by_sdf", missed).Add("bound_violations", bound_violations).Add("errors", errors);
    line.Add("contacts_per_query", contacts / q).Add("samples_tested_per_query", samples_tested / q);
    line.Add("largest_error_bound", deepest_error);
    line.Print();
  }
}

// Primitive shapes with their FCL twins and, for boxes, the surface mesh for the referee.
Benched<core::Box> BoxShape(const Vec3& half_extents) {
  Benched<core::Box> b;
  b.shape = core::Box{half_extents};
  b.fcl = std::make_shared<fcl::Boxd>(2 * half_extents);
  b.mesh = core::MeshModel::Build(core::MakeBoxMesh(2 * half_extents)).value();
  b.bound.radius = half_extents.norm();
  b.source = "box " + std::to_string(2 * half_extents.x()) + " x " + std::to_string(2 * half_extents.y()) + " x " +
             std::to_string(2 * half_extents.z());
  return b;
}
Benched<core::Capsule> CapsuleShape(double radius, double half_length) {
  Benched<core::Capsule> c;
  c.shape = core::Capsule{radius, half_length};
  c.fcl = std::make_shared<fcl::Capsuled>(radius, 2 * half_length);
  c.bound.radius = radius + half_length;
  c.source = "capsule radius " + std::to_string(radius) + " length " + std::to_string(2 * half_length);
  return c;
}
Benched<core::Sphere> SphereShape(double radius) {
  Benched<core::Sphere> s;
  s.shape = core::Sphere{Vec3::Zero(), radius};
  s.fcl = std::make_shared<fcl::Sphered>(radius);
  s.bound.radius = radius;
  s.source = "sphere radius " + std::to_string(radius);
  return s;
}

}  // namespace

int RunConvex(const SuiteOptions& options) {
  const double t_load = Now();
  HullShape h250, h940;
  std::string error;
  if (!LoadLinkHulls(options.data_dir, &h250, &h940, &error)) {
    std::cerr << "convex needs ../shared/data/robots: " << error << "\n";
    return 77;
  }
  const Vec3 box_half(0.06, 0.045, 0.035);
  HullShape h8 = MakeHull(ConvexPolytope::Build(core::MakeBoxMesh(2 * box_half), "box").value(),
                          "hull of a box 0.12 x 0.09 x 0.07");
  std::cerr << "convex: hulls v8 = " << h8.source << ": " << h8.vertices << " vertices; v250 = " << h250.source << ": "
            << h250.vertices << " vertices; v940 = " << h940.source << ": " << h940.vertices
            << " vertices; loaded in " << (Now() - t_load) << " s\n";

  const int n_cold = options.quick ? 400 : 4000;
  const int motions = options.quick ? 8 : 40, steps = options.quick ? 100 : 200;
  const int reps = options.quick ? 2 : 5;
  std::mt19937_64 rng(options.seed);

  struct Size {
    std::string label;
    const HullShape* hull;
  };
  for (const Size& size : {Size{"v8", &h8}, Size{"v250", &h250}, Size{"v940", &h940}}) {
    const HullShape& h = *size.hull;
    const auto poses = NearContactPoses(h.bound, h.bound, n_cold, rng);
    DistanceCold("distance_cold_" + size.label, h, h, poses, reps);
    CollideCold("collide_cold_" + size.label, h, h, poses, reps);
    const auto path = CoherentMotions(h.bound, h.bound, motions, steps, rng);
    const WarmRun warm = DistanceWarm("distance_warm_" + size.label, h, h, path, reps);
    CollideWarm("collide_warm_" + size.label, h, h, path, reps);
    VClipWarm("vclip_warm_" + size.label, h, h, path, reps, warm);
  }

  // Primitives, cold, near contact.
  {
    const auto box = BoxShape(box_half);
    const auto capsule = CapsuleShape(0.04, 0.08);
    const auto sphere = SphereShape(0.05);
    const auto bb = NearContactPoses(box.bound, box.bound, n_cold, rng);
    DistanceCold("primitive_distance_box_box", box, box, bb, reps);
    CollideCold("primitive_collide_box_box", box, box, bb, reps);
    const auto cc = NearContactPoses(capsule.bound, capsule.bound, n_cold, rng);
    DistanceCold("primitive_distance_capsule_capsule", capsule, capsule, cc, reps);
    CollideCold("primitive_collide_capsule_capsule", capsule, capsule, cc, reps);
    const auto sb = NearContactPoses(sphere.bound, box.bound, n_cold, rng);
    DistanceCold("primitive_distance_sphere_box", sphere, box, sb, reps);
    CollideCold("primitive_collide_sphere_box", sphere, box, sb, reps);
  }

  SdfRows(options, rng);
  return 0;
}

}  // namespace proximity::bench
