/// @file
/// Certified LINK(q0, q1): the walker that certifies a joint-space segment pair by pair, or finds
/// where it first collides.
///
/// After Schwarzer, Saha and Latombe ("Exact collision checking of robot paths", 2002; "Adaptive
/// dynamic collision checking for single and multiple articulated robots in complex environments",
/// 2005). For each pair that may collide (a robot geometry against a world part, or two robot
/// geometries), eta(t) is a lower bound on their distance at t and lambda an upper bound on how far the
/// pair's points can move relative to each other along [ta, tb] (the robot model's motion bounds,
/// linear in the segment length). If eta(ta) + eta(tb) > lambda no point of one can reach the other
/// anywhere on the segment: the pair is certified there. Pairs that are not are bisected; a midpoint
/// where a pair's bound is 0 and the exact test confirms contact ends the search for a free answer.
/// Segments are walked left to right, so the certified part is always a prefix [0, t_free].

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "scene/scene_internal.h"
#include "scene/scene_impl.h"
#include "robot/robot_motion.h"

namespace proximity::core {
namespace internal {

/// One certified check of one segment: set up (the pairs to certify, their motion bounds, the levers
/// that tighten them), the ends, then the walk. Lives for one call; all its buffers are per call.
class CertifiedMotion {
 public:
  CertifiedMotion(const SceneImpl& scene, std::span<const double> q0, std::span<const double> q1, double clearance,
                  double self_clearance, SceneCacheData* cache, MotionResult* result)
      : scene_(scene),
        robot_(*scene.robot_),
        q0_(q0),
        q1_(q1),
        clearance_(clearance),
        self_clearance_(self_clearance),
        cache_(cache),
        result_(result),
        nparts_(static_cast<int32_t>(scene.robot_parts_.size())),
        q_(q0.size()) {}

  Status Run(bool narrow, const Interrupt& stop) {
    CollectPairs();
    CollectLevers();
    ReserveSamples();
    bool done = false;
    if (Status s = CheckEnds(&done); !s.ok() || done) return s;
    if (Status s = AddSample(0.0); !s.ok()) return s;
    if (Status s = AddSample(1.0); !s.ok()) return s;
    return Walk(narrow, stop);
  }

 private:
  // The smallest segment (in t) the walk splits before calling the segment undecided, and the width
  // to which it narrows [t_free, t_collide] once a collision is known.
  static constexpr double kMinWidth = 1.0 / (1 << 30);
  static constexpr double kRefineWidth = 1.0 / (1 << 10);
  // Metres added to a padding that a bound proven at a rounded configuration must exceed.
  static constexpr double kRoundingSlack = 1e-9;

  struct PairRef {
    int32_t a;       // robot part
    int32_t b;       // world part (self == false) or robot part
    bool self;
    double lambda;   // motion bound over the whole segment
    double padding;  // the pair's total padding and the clearance asked for: distances count from there
    int32_t skip;    // self: the common ancestor's moving joints, which move both parts alike
    size_t cache;    // the pair's hull warm start in the SceneCache
    const SceneImpl::SelfPair* mapped;  // self, with a self-clearance map: the pair; else null
  };

  // A configuration on the segment: robot geometry poses and bounds, and per-pair distance bounds
  // (cheap box bounds first, certified distance lower bounds when those do not suffice). A sample's
  // values live in flat buffers shared by all samples (sample s's part i at s * nparts + i, pair k at
  // s * npairs + k, lever l at s * nlevers + l): no allocation per sample. A Sample points into them
  // and is valid until the next AddSample.
  struct Sample {
    double t;
    RigidTransform* X_WG;
    Aabb* bounds;
    double* eta;            // best lower bound so far; NaN: not computed
    double* eta_enough;     // the `enough` an exact bound was computed with; NaN: cheap only
    double* axis_distance;  // per lever: axis to the part's bounding sphere, plus its radius
    Vec3* ball_center;      // per robot part: its bounding sphere (radius in part_radius_)
  };

  // Segments still to decide, each with the pairs open on it: pair_pool_[first, first + count) (the
  // two halves of a split share their parent's open list).
  struct Segment {
    int32_t sa, sb;
    size_t first, count;
  };

  struct Undecided {
    double ratio;  // upper bounds over the motion bound: the smaller, the likelier to fail
    double lambda;
    int32_t k;
  };

  // ---- set-up ----------------------------------------------------------------------------------

  // The pairs that may meet along the segment. A pair whose parts cannot move relative to each other
  // (the fixed base against the world, links that do not move) keeps the state it has at q0, which
  // the end check decides.
  void CollectPairs() {
    part_motion_.resize(nparts_);
    for (int32_t i = 0; i < nparts_; ++i) part_motion_[i] = scene_.PartMotion(i, q0_, q1_);
    for (int32_t i = 0; i < nparts_; ++i) {
      const double motion = part_motion_[i];
      if (motion == 0.0) continue;
      const SceneImpl::RobotPart& rp = scene_.robot_parts_[i];
      for (int32_t k = 0; k < static_cast<int32_t>(scene_.world_parts_.size()); ++k) {
        if (!scene_.AllowedEntityObject(rp.entity, scene_.world_parts_[k].object)) {
          pairs_.push_back({i, k, false, motion, rp.padding + clearance_, 0, scene_.WorldPairCache(i, k), nullptr});
        }
      }
    }
    for (size_t s = 0; s < scene_.self_pairs_.size(); ++s) {
      const SceneImpl::SelfPair& sp = scene_.self_pairs_[s];
      const double motion = scene_.SelfPairMotion(sp, q0_, q1_);
      if (motion == 0.0) continue;
      const double padding = scene_.robot_parts_[sp.a].padding + scene_.robot_parts_[sp.b].padding + self_clearance_;
      // A pair with a self-clearance map whose cells along the segment all keep it apart is certified
      // on the whole segment by look-ups (a wrist's flange a few millimetres from its forearm would
      // otherwise take bisection down to millimetre motions, a distance walk at every sample).
      if (sp.clearance_map != nullptr &&
          scene_.SelfPairClearAlong(sp, q0_, q1_, padding, SceneImpl::kMapFillBudget, &cache_->map_fill)) {
        continue;
      }
      pairs_.push_back({sp.a, sp.b, true, motion, padding, NumMovingJoints(robot_, sp.ancestor), scene_.SelfPairCache(s),
                        sp.clearance_map != nullptr ? &sp : nullptr});
      if (sp.clearance_map != nullptr) mapped_.push_back(pairs_.size() - 1);
    }
    npairs_ = pairs_.size();
  }

  // Tighter bounds from the poses at the samples. The bound above takes each joint's lever (how far
  // the part can be from the joint's axis) at its worst over every configuration; at a sample the
  // distance from the axis to the part's bounding sphere is known, and along [ta, tb] it grows by at
  // most the part's motion relative to the joint's child link (the axis is fixed there), itself
  // linear in the width. So over [ta, tb] lever_j <= min(static lever, axis distance at ta + width *
  // growth_j), and the same from tb.
  void CollectLevers() {
    lever_begin_.assign(nparts_ + 1, 0);
    for (int32_t i = 0; i < nparts_; ++i) {
      const SceneImpl::RobotPart& rp = scene_.robot_parts_[i];
      lever_begin_[i] = static_cast<int32_t>(levers_.size());
      if (part_motion_[i] > 0.0) MotionLevers(robot_, rp.link, 0, q0_, q1_, rp.reach, &levers_);
      for (size_t l = lever_growth_.size(); l < levers_.size(); ++l) {
        lever_growth_.push_back(levers_[l].prismatic || levers_[l].dq == 0.0
                                    ? 0.0
                                    : MotionBoundRelative(robot_, rp.link, robot_.joint(levers_[l].joint).child_link,
                                                                 q0_, q1_, rp.reach));
      }
    }
    lever_begin_[nparts_] = static_cast<int32_t>(levers_.size());
    nlevers_ = levers_.size();
    part_radius_.resize(nparts_);
    for (int32_t i = 0; i < nparts_; ++i) part_radius_[i] = scene_.robot_parts_[i].local_box.half_extents.norm();
    world_bound_a_.resize(nparts_);
    world_bound_b_.resize(nparts_);
  }

  void ReserveSamples() {
    constexpr size_t kExpectedSamples = 64;
    const size_t nparts = static_cast<size_t>(nparts_);
    sample_t_.reserve(kExpectedSamples);
    sample_X_WG_.reserve(kExpectedSamples * nparts);
    sample_bounds_.reserve(kExpectedSamples * nparts);
    sample_ball_.reserve(kExpectedSamples * nparts);
    sample_eta_.reserve(kExpectedSamples * npairs_);
    sample_eta_enough_.reserve(kExpectedSamples * npairs_);
    sample_axis_.reserve(kExpectedSamples * nlevers_);
  }

  // The ends: a colliding q0 leaves nothing certified (*done); a colliding q1 bounds the search.
  Status CheckEnds(bool* done) {
    for (double t : {0.0, 1.0}) {
      Interpolate(t);
      const Result<StateResult> state = scene_.CheckStateWith(q_, clearance_, self_clearance_, cache_);
      if (!state.ok()) return state.status();
      const StateResult& r = state.value();
      result_->stats += r.stats;
      if (!r.free) {
        result_->t_collide = t;
        result_->contact = r.contact;
        collided_ = true;
        *done = t == 0.0;
        break;
      }
    }
    return {};
  }

  // ---- samples ---------------------------------------------------------------------------------

  void Interpolate(double t) {
    for (size_t j = 0; j < q_.size(); ++j) q_[j] = q0_[j] + t * (q1_[j] - q0_[j]);
  }

  Sample At(int32_t s) {
    const size_t i = static_cast<size_t>(s);
    const size_t nparts = static_cast<size_t>(nparts_);
    return Sample{sample_t_[i],
                  sample_X_WG_.data() + i * nparts,
                  sample_bounds_.data() + i * nparts,
                  sample_eta_.data() + i * npairs_,
                  sample_eta_enough_.data() + i * npairs_,
                  sample_axis_.data() + i * nlevers_,
                  sample_ball_.data() + i * nparts};
  }

  Status AddSample(double t) {
    Interpolate(t);
    cache_->links_scene = 0;  // X_WL is the scene's again once forward kinematics fills it
    cache_->X_WL.resize(robot_.links().size());
    if (Status s = robot_.ForwardKinematics(q_, std::span<RigidTransform>(cache_->X_WL), scene_.X_WB_); !s.ok()) {
      return s;
    }
    cache_->links_scene = scene_.serial_;
    sample_t_.push_back(t);
    sample_X_WG_.resize(sample_X_WG_.size() + nparts_);
    sample_bounds_.resize(sample_bounds_.size() + nparts_);
    sample_ball_.resize(sample_ball_.size() + nparts_);
    sample_axis_.resize(sample_axis_.size() + nlevers_);
    sample_eta_.resize(sample_eta_.size() + npairs_, std::numeric_limits<double>::quiet_NaN());
    sample_eta_enough_.resize(sample_eta_enough_.size() + npairs_, std::numeric_limits<double>::quiet_NaN());
    const Sample smp = At(static_cast<int32_t>(sample_t_.size()) - 1);
    for (int32_t i = 0; i < nparts_; ++i) {
      const SceneImpl::RobotPart& rp = scene_.robot_parts_[i];
      smp.X_WG[i] = cache_->X_WL[rp.link] * rp.X_LG;
      smp.bounds[i] = WorldBounds(rp.local_box, smp.X_WG[i]);
    }
    for (int32_t i = 0; i < nparts_; ++i) {
      const Obb& box = scene_.robot_parts_[i].local_box;
      const Vec3 c_W = smp.X_WG[i] * box.center;
      const double r = part_radius_[i];
      smp.ball_center[i] = c_W;
      for (int32_t l = lever_begin_[i]; l < lever_begin_[i + 1]; ++l) {
        if (levers_[l].prismatic || levers_[l].dq == 0.0) continue;
        const Joint& j = robot_.joint(levers_[l].joint);
        smp.axis_distance[l] = JointAxisDistance(robot_, levers_[l].joint, cache_->X_WL[j.parent_link], c_W) + r;
      }
    }
    // Pairs with a self-clearance map start from its bound at this configuration where it beats their
    // boxes and the cell is filled already (a look-up; filling one costs about what the distance walk
    // it would save does): across a wrist it often certifies what would otherwise take that walk.
    for (size_t k : mapped_) {
      const double map_bound = scene_.SelfPairClearanceIfKnown(*pairs_[k].mapped, q_) - pairs_[k].padding;
      if (map_bound > 0.0) smp.eta[k] = std::max(CheapEta(smp, k), map_bound);
    }
    ++result_->states;
    return {};
  }

  // ---- motion bounds ---------------------------------------------------------------------------

  // Motion bound of part i over a sub-segment of `width` (in t) next to sample s, in the frame of the
  // ancestor whose `skip` moving joints are left out.
  double PartBound(const Sample& s, int32_t i, int32_t skip, double width) const {
    double sum = 0.0;
    for (int32_t l = lever_begin_[i] + skip; l < lever_begin_[i + 1]; ++l) {
      const MotionLever& lv = levers_[l];
      if (lv.dq == 0.0) continue;
      sum += lv.dq * (lv.prismatic ? 1.0 : std::min(lv.lever, s.axis_distance[l] + width * lever_growth_[l]));
    }
    return width * sum;
  }

  // World-frame part bounds over the segment [a, b] from either end (world pairs share them).
  void BoundPartsOver(const Sample& a, const Sample& b) {
    const double width = b.t - a.t;
    for (int32_t i = 0; i < nparts_; ++i) {
      world_bound_a_[i] = PartBound(a, i, 0, width);
      world_bound_b_[i] = PartBound(b, i, 0, width);
    }
  }

  // Pair k's motion bound over [sa.t, sb.t]: the least of the static bound and those from either end
  // (BoundPartsOver(sa, sb) first).
  double PairLambda(const Sample& sa, const Sample& sb, size_t k) const {
    const PairRef& p = pairs_[k];
    const double width = sb.t - sa.t;
    if (!p.self) return std::min({width * p.lambda, world_bound_a_[p.a], world_bound_b_[p.a]});
    const double from_a = PartBound(sa, p.a, p.skip, width) + PartBound(sa, p.b, p.skip, width);
    const double from_b = PartBound(sb, p.a, p.skip, width) + PartBound(sb, p.b, p.skip, width);
    return std::min({width * p.lambda, from_a, from_b});
  }

  // ---- distance bounds -------------------------------------------------------------------------

  const Geometry& OtherGeometry(const PairRef& p) const {
    if (p.self) return scene_.robot_parts_[p.b].geometry;
    const SceneImpl::WorldPart& wp = scene_.world_parts_[p.b];
    return scene_.objects_[wp.object].parts[wp.part].geometry;
  }

  const RigidTransform& OtherPose(const Sample& s, const PairRef& p) const {
    if (p.self) return s.X_WG[p.b];
    const SceneImpl::WorldPart& wp = scene_.world_parts_[p.b];
    return scene_.objects_[wp.object].parts[wp.part].X_WG;
  }

  // The box bound of pair k at s (computed once a sample).
  double CheapEta(const Sample& s, size_t k) const {
    if (std::isnan(s.eta[k])) {
      const PairRef& p = pairs_[k];
      s.eta[k] = std::max(
          0.0, AabbDistance(s.bounds[p.a], p.self ? s.bounds[p.b] : scene_.world_parts_[p.b].bounds) - p.padding);
    }
    return s.eta[k];
  }

  // An upper bound on what ExactEta can give: every point of each part lies within its bounding
  // sphere, so the parts are at most |c_a - c_b| + r_a + r_b apart. A segment whose ends' upper bounds
  // add up to no more than its motion bound cannot be certified there: it is split without asking.
  double EtaUpper(const Sample& s, size_t k) const {
    const PairRef& p = pairs_[k];
    const Vec3& c_b = p.self ? s.ball_center[p.b] : scene_.world_parts_[p.b].box.center;
    const double r_b = p.self ? part_radius_[p.b] : scene_.world_parts_[p.b].box.half_extents.norm();
    return (s.ball_center[p.a] - c_b).norm() + part_radius_[p.a] + r_b - p.padding;
  }

  // A certified lower bound of pair k at s, exact enough to decide against `enough`.
  double ExactEta(const Sample& s, size_t k, double enough) {
    // A stored bound below the `enough` it was computed with is the full bound; otherwise the walk
    // stopped early at that `enough` and a larger one needs a new query.
    if (!std::isnan(s.eta_enough[k]) && (s.eta[k] < s.eta_enough[k] || enough <= s.eta_enough[k])) return s.eta[k];
    const PairRef& p = pairs_[k];
    // A built scene's poses and shapes are valid and `enough` is finite: the bound is never an error
    // (were it one, 0 certifies nothing).
    const Result<ClearanceBound> bound = GeometryDistanceLowerBound(
        scene_.robot_parts_[p.a].geometry, s.X_WG[p.a], OtherGeometry(p), OtherPose(s, p), enough, p.padding,
        HullCache(p));
    double lb = 0.0;
    if (bound.ok()) {
      lb = bound.value().lower_bound;
      result_->stats += bound.value().stats;
    }
    ++result_->distance_queries;
    s.eta[k] = std::max(CheapEta(s, k), lb);
    s.eta_enough[k] = enough;
    return s.eta[k];
  }

  // Whether pair k touches at s (the exact test); records the contact when it does.
  bool ContactAt(const Sample& s, size_t k) {
    const PairRef& p = pairs_[k];
    if (!SceneImpl::PairCollides(scene_.robot_parts_[p.a].geometry, s.X_WG[p.a], OtherGeometry(p), OtherPose(s, p),
                                 p.padding, &result_->stats, HullCache(p))) {
      return false;
    }
    result_->contact =
        p.self ? scene_.SelfContact(p.a, p.b) : scene_.WorldContact(p.a, scene_.world_parts_[p.b].object);
    return true;
  }

  GjkCache* HullCache(const PairRef& p) const { return scene_.HullCache(cache_, p.cache); }

  // ---- the walk --------------------------------------------------------------------------------

  // Sorts the pairs open on `seg` into those certified on it (dropped), and those left open (open_,
  // with their motion bounds in open_lambda_); returns whether the segment must be split. Pairs the
  // box bounds certify drop out. Exact bounds are asked only while the segment might still be
  // certified whole: once some pair is known to fail (its upper bounds already fall short, or its
  // exact bounds do) the segment is split anyway, and the pairs not yet decided go to the halves
  // undecided, where their smaller motion bounds make the queries cheaper and more often decisive.
  // Pairs most likely to fail are asked first.
  void OpenPairs(const Segment& seg, const Sample& a, const Sample& b) {
    open_.clear();
    open_lambda_.clear();
    undecided_.clear();
    bool split = false;
    for (size_t n = 0; n < seg.count; ++n) {
      const int32_t k = pair_pool_[seg.first + n];
      const double lambda = PairLambda(a, b, k);
      if (CheapEta(a, k) + CheapEta(b, k) > lambda) continue;
      if (pairs_[k].mapped != nullptr && MapClearOver(a, b, k)) continue;
      const double upper = EtaUpper(a, k) + EtaUpper(b, k);
      if (upper <= lambda) {
        split = true;
        open_.push_back(k);
        open_lambda_.push_back(lambda);
      } else {
        undecided_.push_back({upper / lambda, lambda, k});
      }
    }
    if (!split) {
      std::sort(undecided_.begin(), undecided_.end(),
                [](const Undecided& x, const Undecided& y) { return x.ratio < y.ratio; });
    }
    for (const Undecided& u : undecided_) {
      if (!split) {
        // b's exact bound need only make up what a's leaves.
        const double eta_a = ExactEta(a, u.k, u.lambda);
        if (eta_a + CheapEta(b, u.k) > u.lambda || eta_a + ExactEta(b, u.k, u.lambda - eta_a) > u.lambda) {
          continue;
        }
        split = true;
      }
      open_.push_back(u.k);
      open_lambda_.push_back(u.lambda);
    }
  }

  // Whether pair k's self-clearance map keeps it apart on [a.t, b.t]: every cell the stretch of the
  // segment passes through holds a bound above the pair's padding (cells filled already; none is
  // filled here). A cell's bound holds for every configuration in it, so this certifies the stretch
  // however far the pair moves on it, where the ends' distances must outweigh that motion: a pair
  // that comes close in a few cells of a long segment is bisected down to those cells only.
  bool MapClearOver(const Sample& a, const Sample& b, size_t k) {
    const size_t dof = q0_.size();
    qa_.resize(dof);
    qb_.resize(dof);
    for (size_t j = 0; j < dof; ++j) {
      qa_[j] = q0_[j] + a.t * (q1_[j] - q0_[j]);
      qb_[j] = q0_[j] + b.t * (q1_[j] - q0_[j]);
    }
    // The ends are rounded interpolants (within an ulp or so of the segment): a nanometre above the
    // padding outweighs what that moves any part.
    return scene_.SelfPairClearAlong(*pairs_[k].mapped, qa_, qb_, pairs_[k].padding + kRoundingSlack, 0,
                                     &cache_->map_fill);
  }

  // Whether some open pair touches at the midpoint sample `mid`. Only pairs whose boxes meet there can.
  bool OpenPairTouchesAt(const Sample& mid) {
    for (size_t o = 0; o < open_.size(); ++o) {
      const int32_t k = open_[o];
      if (CheapEta(mid, k) == 0.0 && ExactEta(mid, k, 0.5 * open_lambda_[o]) == 0.0 && ContactAt(mid, k)) return true;
    }
    return false;
  }

  // Whatever was certified stays certified; nothing else is claimed.
  void Stopped(double t_free) {
    result_->stopped = true;
    result_->t_free = t_free;
    result_->t_collide = -1.0;
    result_->free = false;
  }

  Status Walk(bool narrow, const Interrupt& stop) {
    pair_pool_.resize(npairs_);
    std::iota(pair_pool_.begin(), pair_pool_.end(), 0);
    std::vector<Segment> stack;
    stack.push_back({0, 1, 0, npairs_});
    double t_free = 0.0;
    int64_t steps = 0;
    while (!stack.empty()) {
      if ((++steps & (kStopPollStates - 1)) == 0 && stop()) {
        Stopped(t_free);
        return {};
      }
      const Segment seg = stack.back();
      stack.pop_back();
      const Sample a = At(seg.sa);
      const Sample b = At(seg.sb);
      const double ta = a.t, tb = b.t, width = tb - ta;
      BoundPartsOver(a, b);
      OpenPairs(seg, a, b);
      if (open_.empty()) {
        t_free = tb;  // left to right: everything before ta is certified already
        continue;
      }
      if (collided_ && (!narrow || width < kRefineWidth)) break;  // [t_free, t_collide] is narrow enough
      if (width < kMinWidth) {
        result_->undecided = true;
        result_->t_collide = tb;
        collided_ = true;
        break;
      }
      if (Status s = AddSample(0.5 * (ta + tb)); !s.ok()) return s;  // a and b are stale from here
      const int32_t sm = static_cast<int32_t>(sample_t_.size()) - 1;
      const Sample mid = At(sm);
      const bool hit = OpenPairTouchesAt(mid);
      const size_t first = pair_pool_.size();
      pair_pool_.insert(pair_pool_.end(), open_.begin(), open_.end());
      if (hit) {
        // A collision at the midpoint: what lies to its right no longer matters; narrow down its left.
        collided_ = true;
        result_->t_collide = mid.t;
        stack.clear();
        stack.push_back({seg.sa, sm, first, open_.size()});
        continue;
      }
      stack.push_back({sm, seg.sb, first, open_.size()});
      stack.push_back({seg.sa, sm, first, open_.size()});
    }
    result_->t_free = t_free;
    result_->free = !collided_;
    if (result_->free) result_->t_free = 1.0;
    return {};
  }

  const SceneImpl& scene_;
  const RobotModel& robot_;
  std::span<const double> q0_, q1_;
  double clearance_;       // robot-world pairs
  double self_clearance_;  // pairs of robot parts
  SceneCacheData* cache_;
  MotionResult* result_;
  const int32_t nparts_;
  std::vector<double> q_;  // the configuration being posed
  std::vector<double> qa_, qb_;  // the ends of a stretch the maps are asked about
  bool collided_ = false;

  std::vector<double> part_motion_;
  std::vector<PairRef> pairs_;
  size_t npairs_ = 0;
  std::vector<size_t> mapped_;  // the pairs with a self-clearance map
  std::vector<MotionLever> levers_;
  std::vector<int32_t> lever_begin_;  // part i's levers: [lever_begin_[i], lever_begin_[i + 1])
  std::vector<double> lever_growth_;
  size_t nlevers_ = 0;
  std::vector<double> part_radius_;
  std::vector<double> world_bound_a_, world_bound_b_;

  std::vector<double> sample_t_;
  std::vector<RigidTransform> sample_X_WG_;
  std::vector<Aabb> sample_bounds_;
  std::vector<double> sample_eta_, sample_eta_enough_, sample_axis_;
  std::vector<Vec3> sample_ball_;

  std::vector<int32_t> pair_pool_;
  std::vector<Undecided> undecided_;
  std::vector<int32_t> open_;
  std::vector<double> open_lambda_;
};

}  // namespace internal

using internal::SceneCacheData;
using internal::SceneImpl;

Result<MotionResult> SceneImpl::CheckMotionCertified(std::span<const double> q0, std::span<const double> q1,
                                                     bool narrow, double clearance, double self_clearance,
                                                     const Interrupt& stop, SceneCacheData* cache,
                                                     MotionResult prepass) const {
  internal::CertifiedMotion walk(*this, q0, q1, clearance, self_clearance, cache, &prepass);
  if (Status s = walk.Run(narrow, stop); !s.ok()) return s.error();
  return prepass;
}

}  // namespace proximity::core
