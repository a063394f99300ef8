// Track queries over the Session RPC against core::Tracker in process: frame by frame along small-step
// trajectories the answers equal an in-process tracker's on the same scene (pairs, intervals, points,
// normals, features, same_features, methods, gradients), overall and per link; warm along 1e-3 rad steps
// the features persist, cold_caches gives the same values without a warm start; bad track queries are
// error answers naming the field, the session goes on and its tracker is unchanged; a deadline or a
// cancellation ends a session inside a long batch of track queries as it ends the other queries.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "proximity/core/contact/tracker.h"
#include "server/scene_store.h"
#include "tests/server/service_fixture.h"

namespace proximity::server::testing {
namespace {

using Stream = grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>;

constexpr double kEqual = 1e-12;

v1::SessionRequest Opening(bool cold = false, const std::string& scene = "default") {
  v1::SessionRequest r;
  r.mutable_open()->set_scene_id(scene);
  r.mutable_open()->set_cold_caches(cold);
  return r;
}

// A track query with the core request's options on the wire.
v1::SessionQuery* AddTrack(v1::SessionRequest* r, uint64_t id, const std::vector<double>& q,
                           const core::TrackRequest& options) {
  v1::SessionQuery* query = r->add_queries();
  query->set_id(id);
  v1::TrackRequest* t = query->mutable_track();
  *t->mutable_state() = Positions(q);
  t->set_horizon(options.horizon);
  t->set_max_pairs(static_cast<uint32_t>(options.max_pairs));
  t->set_per_link(options.per_link);
  t->set_exclude_world(!options.world);
  t->set_exclude_self(!options.self);
  t->set_rel_err(options.rel_err);
  t->set_abs_err(options.abs_err);
  t->set_skip_gradient(!options.gradient);
  t->set_convex(options.convex == core::TrackConvexMethod::kGjk ? v1::TRACK_CONVEX_METHOD_GJK
                                                                 : v1::TRACK_CONVEX_METHOD_VCLIP);
  return query;
}

// The default workcell with a tool on the KR5's palm: a box (a convex polyhedron: V-Clip against the
// table's and shelf's boxes) and a ball (curved: GJK), and a world sphere, so that convex pairs are among
// the nearest beside the links' meshes (walks).
v1::CreateSceneRequest ToolSceneRequest() {
  v1::CreateSceneRequest r = DefaultSceneRequest(DefaultScene());
  v1::AttachedObject* tool = r.add_attached_objects();
  tool->set_id("tool");
  tool->set_link("palm");
  v1::ObjectPart* box = tool->add_parts();
  *box->mutable_pose() = WirePose({0.09, 0.0, 0.0});
  ToWire(core::Vec3(0.12, 0.05, 0.05), box->mutable_shape()->mutable_box()->mutable_size());
  v1::ObjectPart* ball = tool->add_parts();
  *ball->mutable_pose() = WirePose({0.19, 0.0, 0.0});
  ball->mutable_shape()->mutable_sphere()->set_radius(0.03);
  v1::CollisionObject* globe = r.add_objects();
  globe->set_id("globe");
  *globe->mutable_pose() = WirePose({0.45, -0.35, 0.45});
  globe->add_parts()->mutable_shape()->mutable_sphere()->set_radius(0.08);
  return r;
}

// Straight legs from free states in random directions, `step` rad per joint at most per frame.
std::vector<std::vector<double>> Trajectory(const core::Scene& scene, std::mt19937_64& rng, int legs, int frames,
                                            double step) {
  std::vector<std::vector<double>> out;
  core::SceneCache cache;
  const core::RobotModel& robot = scene.robot();
  for (int tries = 0; static_cast<int>(out.size()) < legs * frames; ++tries) {
    if (tries == 10'000) {
      ADD_FAILURE() << "no free state in 10,000 tries";
      return out;
    }
    std::vector<double> q = RandomState(rng, robot);
    if (!proximity::testing::ValueOrFail(scene.CheckState(q, &cache)).free) continue;
    std::vector<double> dir(q.size());
    for (double& d : dir) d = std::uniform_real_distribution<double>(-1.0, 1.0)(rng) * step;
    for (int f = 0; f < frames; ++f) {
      out.push_back(q);
      for (size_t j = 0; j < q.size(); ++j) q[j] += dir[j];
    }
  }
  return out;
}

core::TrackFeatureType FromWire(v1::TrackFeatureType t) {
  switch (t) {
    case v1::TRACK_FEATURE_TYPE_VERTEX: return core::TrackFeatureType::kVertex;
    case v1::TRACK_FEATURE_TYPE_EDGE: return core::TrackFeatureType::kEdge;
    case v1::TRACK_FEATURE_TYPE_FACE: return core::TrackFeatureType::kFace;
    case v1::TRACK_FEATURE_TYPE_TRIANGLE: return core::TrackFeatureType::kTriangle;
    default: return core::TrackFeatureType::kNone;
  }
}

v1::TrackMethod MethodOf(core::TrackMethod m) {
  switch (m) {
    case core::TrackMethod::kVClip: return v1::TRACK_METHOD_VCLIP;
    case core::TrackMethod::kGjk: return v1::TRACK_METHOD_GJK;
    case core::TrackMethod::kWalk: return v1::TRACK_METHOD_WALK;
  }
  return v1::TRACK_METHOD_UNSPECIFIED;
}

void ExpectVec(const core::Vec3& v, const v1::Vector3& w, const std::string& where) {
  EXPECT_NEAR(w.x(), v.x(), kEqual) << where;
  EXPECT_NEAR(w.y(), v.y(), kEqual) << where;
  EXPECT_NEAR(w.z(), v.z(), kEqual) << where;
}

// The wire answer equals the in-process frame of a tracker with the same history: pairs, intervals,
// points, normals, features, features kept, methods, gradients and work counters.
void ExpectSameFrame(const core::Scene& scene, const core::TrackResult& c, const v1::TrackResponse& w,
                     const std::string& where) {
  ASSERT_EQ(w.pairs_size(), static_cast<int>(c.pairs.size())) << where;
  EXPECT_EQ(w.within_limits(), c.within_limits) << where;
  EXPECT_EQ(w.candidates(), static_cast<uint32_t>(c.candidates)) << where;
  EXPECT_EQ(w.stats().states(), 1) << where;
  EXPECT_EQ(w.decided(), static_cast<uint32_t>(c.decided)) << where;
  EXPECT_EQ(w.vclip(), static_cast<uint32_t>(c.vclip)) << where;
  EXPECT_EQ(w.gjk(), static_cast<uint32_t>(c.gjk)) << where;
  EXPECT_EQ(w.walks(), static_cast<uint32_t>(c.walks)) << where;
  EXPECT_EQ(w.same_features(), static_cast<uint32_t>(c.same_features)) << where;
  for (size_t i = 0; i < c.pairs.size(); ++i) {
    const core::TrackedPair& p = c.pairs[i];
    const v1::TrackedPair& q = w.pairs(static_cast<int>(i));
    const std::string at = where + " pair " + std::to_string(i) + " (" + p.distance.pair.Describe(scene) + ")";
    ExpectSamePair(scene, p.distance.pair, q.distance().pair(), at);
    EXPECT_EQ(q.distance().pair().link(), scene.robot().link(p.distance.pair.link).name) << at;
    EXPECT_NEAR(q.distance().lower(), p.distance.lower, kEqual) << at;
    EXPECT_NEAR(q.distance().upper(), p.distance.upper, kEqual) << at;
    EXPECT_NEAR(q.signed_distance(), p.signed_distance, kEqual) << at;
    ExpectVec(p.distance.p_W_robot, q.distance().point_robot(), at + " point_robot");
    ExpectVec(p.distance.p_W_other, q.distance().point_other(), at + " point_other");
    ExpectVec(p.normal_W, q.normal(), at + " normal");
    EXPECT_EQ(FromWire(q.feature_robot().type()), p.feature_robot.type) << at;
    EXPECT_EQ(FromWire(q.feature_other().type()), p.feature_other.type) << at;
    EXPECT_EQ(q.feature_robot().index(),
              p.feature_robot.type == core::TrackFeatureType::kNone ? -1 : p.feature_robot.index) << at;
    EXPECT_EQ(q.feature_other().index(),
              p.feature_other.type == core::TrackFeatureType::kNone ? -1 : p.feature_other.index) << at;
    EXPECT_EQ(q.same_features(), p.same_features) << at;
    EXPECT_EQ(q.method(), MethodOf(p.method)) << at;
    ASSERT_EQ(q.gradient_size(), static_cast<int>(p.gradient.size())) << at;
    for (size_t j = 0; j < p.gradient.size(); ++j) {
      EXPECT_NEAR(q.gradient(static_cast<int>(j)), p.gradient[j], kEqual) << at << " joint " << j;
    }
  }
}

class TrackSessionTest : public ServiceTest {
 protected:
  std::unique_ptr<Stream> Open(grpc::ClientContext* context) { return stub_->Session(context); }

  // The tool scene created on the server; its id, and the same request built in process.
  std::string CreateToolScene(std::shared_ptr<const core::Scene>* in_process) {
    const v1::CreateSceneRequest request = ToolSceneRequest();
    v1::CreateSceneResponse created;
    const grpc::Status s = stub_->CreateScene(Context().get(), request, &created);
    EXPECT_TRUE(s.ok()) << s.error_message();
    const std::shared_ptr<const SceneEntry> entry = proximity::testing::ValueOrFail(BuildScene(request));
    EXPECT_EQ(entry->id, created.scene().scene_id());
    *in_process = entry->scene;
    return created.scene().scene_id();
  }

  static bool RoundTrip(Stream* stream, const v1::SessionRequest& request, v1::SessionResponse* response) {
    return stream->Write(request) && stream->Read(response);
  }

  // What AnswersEqualTheInProcessTrackerFrameByFrame compared.
  struct Tally {
    int64_t frames = 0, pairs = 0, vclip = 0, gjk = 0, walks = 0, same = 0;
    std::map<v1::TrackMethod, int64_t> methods;  // reported pairs by method
  };

  // `track` on a new session of `scene_id`, one track query per round trip, each answer compared with a
  // core::Tracker's on `scene` in process.
  void TrackAndCompare(const std::shared_ptr<const core::Scene>& scene, const std::string& scene_id,
                       const std::vector<std::vector<double>>& track, const core::TrackRequest& options,
                       const std::string& label, Tally* tally) {
    core::Tracker tracker(scene);
    auto context = Context();
    auto stream = Open(context.get());
    v1::SessionRequest request = Opening(false, scene_id);
    for (size_t f = 0; f < track.size(); ++f) {
      const std::string where = label + " frame " + std::to_string(f);
      AddTrack(&request, f, track[f], options);
      v1::SessionResponse response;
      ASSERT_TRUE(RoundTrip(stream.get(), request, &response)) << where;
      ASSERT_EQ(response.answers_size(), 1) << where;
      const v1::SessionAnswer& a = response.answers(0);
      EXPECT_EQ(a.id(), f) << where;
      ASSERT_TRUE(a.has_track()) << where << (a.has_error() ? ": " + a.error().message() : "");
      const core::TrackResult c = proximity::testing::ValueOrFail(tracker.Update(track[f], options));
      ExpectSameFrame(*scene, c, a.track(), where);
      if (::testing::Test::HasFailure()) return;
      ++tally->frames;
      for (const v1::TrackedPair& p : a.track().pairs()) {
        ++tally->methods[p.method()];
        EXPECT_EQ(p.gradient_size(), options.gradient ? scene->dof() : 0) << where;
      }
      tally->pairs += static_cast<int64_t>(c.pairs.size());
      tally->vclip += c.vclip;
      tally->gjk += c.gjk;
      tally->walks += c.walks;
      tally->same += c.same_features;
      request.Clear();
    }
    stream->WritesDone();
    const grpc::Status s = stream->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
  }
};

// One track query per round trip along small-step trajectories, with several option sets (overall and
// per link, a wider horizon, world or self only, GJK for the convex pairs, no gradient): every answer
// equals a core::Tracker's in process on the same scene, frame by frame, warm starts and all.
TEST_F(TrackSessionTest, AnswersEqualTheInProcessTrackerFrameByFrame) {
  std::shared_ptr<const core::Scene> tool;
  const std::string tool_id = CreateToolScene(&tool);
  ASSERT_NE(tool, nullptr);
  std::mt19937_64 rng(71);
  const int frames = static_cast<int>(Cases(60));
  std::vector<core::TrackRequest> option_sets(6);
  option_sets[1].per_link = true;
  option_sets[1].max_pairs = 2;
  option_sets[2].horizon = 0.6;
  option_sets[2].max_pairs = 64;
  option_sets[3].self = false;
  option_sets[3].rel_err = 0.05;
  option_sets[4].world = false;
  option_sets[4].convex = core::TrackConvexMethod::kGjk;
  option_sets[5].gradient = false;
  option_sets[5].abs_err = 1e-3;
  Tally tally;
  for (const bool on_tool : {false, true}) {
    const std::shared_ptr<const core::Scene>& scene = on_tool ? tool : core_;
    const std::vector<std::vector<double>> track = Trajectory(*scene, rng, 3, frames, 0.01);
    for (size_t o = 0; o < option_sets.size(); ++o) {
      const std::string label = std::string(on_tool ? "tool scene" : "default scene") + " options " + std::to_string(o);
      TrackAndCompare(scene, on_tool ? tool_id : "default", track, option_sets[o], label, &tally);
      if (::testing::Test::HasFailure()) return;
    }
  }
  const int64_t pairs = tally.pairs, same = tally.same;
  std::map<v1::TrackMethod, int64_t>& methods = tally.methods;
  std::printf("[ track ] %lld pairs compared (%lld V-Clip, %lld GJK queries, %lld walks; %lld same features); "
              "reported by V-Clip %lld, GJK %lld, walks %lld\n",
              static_cast<long long>(pairs), static_cast<long long>(tally.vclip), static_cast<long long>(tally.gjk),
              static_cast<long long>(tally.walks), static_cast<long long>(same),
              static_cast<long long>(methods[v1::TRACK_METHOD_VCLIP]),
              static_cast<long long>(methods[v1::TRACK_METHOD_GJK]),
              static_cast<long long>(methods[v1::TRACK_METHOD_WALK]));
  EXPECT_GT(pairs, 1000);
  // Every way of deciding a pair was compared.
  EXPECT_GT(methods[v1::TRACK_METHOD_VCLIP], 50);
  EXPECT_GT(methods[v1::TRACK_METHOD_GJK], 50);
  EXPECT_GT(methods[v1::TRACK_METHOD_WALK], 50);
  EXPECT_GT(same, pairs / 2) << "warm frames keep their features";
  // The session's queries count in the metrics as track queries.
  EXPECT_NE(server_->metrics().RenderText().find("proximity_queries_total{kind=\"track\"} " +
                                                 std::to_string(tally.frames) + "\n"),
            std::string::npos);
}

// Along 1e-3 rad steps a warm session keeps nearly every convex pair's features from frame to frame (the
// first frame has none to keep); a cold_caches session answers the same values with no warm start at
// all, and the same features where they are unique (V-Clip's). A walk's closest point often lies on an
// edge or vertex that several triangles share: the warm walk keeps its last triangle, a cold one may
// name a neighbour (the same point, so the same interval and gradient).
TEST_F(TrackSessionTest, WarmStepsKeepTheirFeaturesAndColdCachesGiveTheSameValues) {
  std::shared_ptr<const core::Scene> tool;
  const std::string tool_id = CreateToolScene(&tool);
  ASSERT_NE(tool, nullptr);
  std::mt19937_64 rng(72);
  const int frames = static_cast<int>(Cases(150));
  const std::vector<std::vector<double>> track = Trajectory(*tool, rng, 3, frames, 1e-3);
  core::TrackRequest options;
  options.max_pairs = 16;
  std::vector<v1::TrackResponse> warm, cold;
  for (const bool is_cold : {false, true}) {
    auto context = Context();
    auto stream = Open(context.get());
    v1::SessionRequest request = Opening(is_cold, tool_id);
    for (size_t f = 0; f < track.size(); ++f) {
      AddTrack(&request, f, track[f], options);
      v1::SessionResponse response;
      ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
      ASSERT_TRUE(response.answers(0).has_track()) << response.answers(0).error().message();
      (is_cold ? cold : warm).push_back(response.answers(0).track());
      request.Clear();
    }
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  int64_t reported = 0, kept = 0, convex = 0, convex_kept = 0;
  for (size_t f = 0; f < track.size(); ++f) {
    const std::string where = "frame " + std::to_string(f);
    const v1::TrackResponse& w = warm[f];
    const v1::TrackResponse& c = cold[f];
    ASSERT_EQ(w.pairs_size(), c.pairs_size()) << where;
    EXPECT_EQ(c.same_features(), 0u) << where;
    for (int i = 0; i < w.pairs_size(); ++i) {
      const v1::TrackedPair& a = w.pairs(i);
      const v1::TrackedPair& b = c.pairs(i);
      EXPECT_EQ(a.distance().pair().SerializeAsString(), b.distance().pair().SerializeAsString()) << where;
      EXPECT_NEAR(a.distance().lower(), b.distance().lower(), kEqual) << where;
      EXPECT_NEAR(a.distance().upper(), b.distance().upper(), kEqual) << where;
      EXPECT_EQ(a.method(), b.method()) << where;
      if (a.method() != v1::TRACK_METHOD_WALK) {
        EXPECT_EQ(a.feature_robot().SerializeAsString(), b.feature_robot().SerializeAsString()) << where;
        EXPECT_EQ(a.feature_other().SerializeAsString(), b.feature_other().SerializeAsString()) << where;
      }
      ASSERT_EQ(a.gradient_size(), b.gradient_size()) << where;
      // V-Clip from the last features and cold V-Clip meet the same closest points; the gradient follows
      // them up to rounding.
      for (int j = 0; j < a.gradient_size(); ++j) EXPECT_NEAR(a.gradient(j), b.gradient(j), 1e-9) << where;
      EXPECT_FALSE(b.same_features()) << where;
      if (f == 0) {
        EXPECT_FALSE(a.same_features()) << where << ": the first frame has nothing to keep";
      }
      if (f % static_cast<size_t>(frames) == 0) continue;  // a jump
      ++reported;
      kept += a.same_features();
      if (a.method() != v1::TRACK_METHOD_WALK) {
        ++convex;
        convex_kept += a.same_features();
      }
    }
  }
  std::printf("[ track ] 1e-3 rad steps: %lld of %lld pairs kept their features, %lld of %lld convex pairs\n",
              static_cast<long long>(kept), static_cast<long long>(reported), static_cast<long long>(convex_kept),
              static_cast<long long>(convex));
  ASSERT_GT(reported, 200);
  ASSERT_GT(convex, 50);
  EXPECT_GT(convex_kept, convex * 9 / 10);
  EXPECT_GT(kept, reported * 3 / 4);
}

// Bad track queries are error answers naming the field (INVALID_ARGUMENT) and the session goes on; the
// tracker is left as it was: the good frames after them equal an in-process tracker that never saw them.
TEST_F(TrackSessionTest, BadTrackQueriesNameTheFieldAndLeaveTheTracker) {
  std::mt19937_64 rng(73);
  const std::vector<std::vector<double>> track = Trajectory(*core_, rng, 1, 6, 1e-3);
  const int dof = core_->dof();
  core::TrackRequest options;
  core::Tracker tracker(core_);
  auto context = Context();
  auto stream = Open(context.get());
  v1::SessionRequest request = Opening();
  AddTrack(&request, 0, track[0], options);
  v1::SessionResponse response;
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  ASSERT_TRUE(response.answers(0).has_track());
  ExpectSameFrame(*core_, proximity::testing::ValueOrFail(tracker.Update(track[0], options)),
                  response.answers(0).track(), "frame 0");

  // A batch of bad queries, every one at the next frame's state, then that frame well formed.
  request.Clear();
  const std::vector<double>& q = track[1];
  std::vector<std::pair<std::string, std::string>> expected;  // (field, part of the message)
  auto bad = [&](const std::string& field, const std::string& text) {
    expected.emplace_back("queries[" + std::to_string(request.queries_size() - 1) + "]." + field, text);
  };
  AddTrack(&request, 1, q, options)->mutable_track()->set_horizon(std::nan(""));
  bad("track.horizon", "finite");
  AddTrack(&request, 2, q, options)->mutable_track()->set_horizon(-0.1);
  bad("track.horizon", "[0, ");
  AddTrack(&request, 3, q, options)->mutable_track()->set_horizon(2e4);
  bad("track.horizon", "got 20000");
  AddTrack(&request, 4, q, options)->mutable_track()->set_horizon(INFINITY);
  bad("track.horizon", "finite");
  AddTrack(&request, 5, q, options)->mutable_track()->set_max_pairs(4097);
  bad("track.max_pairs", "at most 4096");
  AddTrack(&request, 6, q, options)->mutable_track()->set_rel_err(-0.1);
  bad("track.rel_err", ">= 0");
  AddTrack(&request, 7, q, options)->mutable_track()->set_abs_err(std::nan(""));
  bad("track.abs_err", "finite");
  AddTrack(&request, 8, q, options)->mutable_track()->set_convex(static_cast<v1::TrackConvexMethod>(7));
  bad("track.convex", "unknown");
  std::vector<double> short_q(q.begin(), q.end() - 1);
  AddTrack(&request, 9, short_q, options);
  bad("track.state", "expected " + std::to_string(dof));
  std::vector<double> nan_q = q;
  nan_q[2] = std::nan("");
  AddTrack(&request, 10, nan_q, options);
  bad("track.state", "not finite");
  v1::SessionQuery* named = AddTrack(&request, 11, q, options);
  for (const std::string& name : core_->robot().active_joint_names()) {
    named->mutable_track()->mutable_state()->add_joint_names(name == core_->robot().active_joint_names()[0]
                                                                 ? std::string("no_such_joint")
                                                                 : name);
  }
  // A joint the robot lacks is ignored (as MoveIt does); the one it replaced is missing.
  bad("track.state", "joint '" + core_->robot().active_joint_names()[0] + "' is missing");
  AddTrack(&request, 12, q, options)->mutable_track()->set_scene_id("another-scene");
  bad("track.scene_id", "another-scene");
  AddTrack(&request, 13, q, options)->mutable_track()->mutable_state()->set_positions(0, 1e300);
  bad("track", "q[0]");
  AddTrack(&request, 14, q, options);
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  ASSERT_EQ(response.answers_size(), request.queries_size());
  for (size_t k = 0; k < expected.size(); ++k) {
    const v1::SessionAnswer& a = response.answers(static_cast<int>(k));
    EXPECT_EQ(a.id(), k + 1);
    ASSERT_TRUE(a.has_error()) << "query " << k;
    EXPECT_EQ(a.error().code(), static_cast<int32_t>(grpc::StatusCode::INVALID_ARGUMENT)) << a.error().message();
    EXPECT_EQ(a.error().message().rfind(expected[k].first, 0), 0u) << a.error().message();
    EXPECT_NE(a.error().message().find(expected[k].second), std::string::npos) << a.error().message();
  }
  const v1::SessionAnswer& good = response.answers(request.queries_size() - 1);
  ASSERT_TRUE(good.has_track()) << good.error().message();
  ExpectSameFrame(*core_, proximity::testing::ValueOrFail(tracker.Update(q, options)), good.track(), "frame 1");
  // The next batches too.
  for (size_t f = 2; f < track.size(); ++f) {
    request.Clear();
    AddTrack(&request, f, track[f], options);
    ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
    ASSERT_TRUE(response.answers(0).has_track());
    ExpectSameFrame(*core_, proximity::testing::ValueOrFail(tracker.Update(track[f], options)),
                    response.answers(0).track(), "frame " + std::to_string(f));
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// until_invalid: a track answer is not valid when a reported pair's lower bound is 0 (it collides), as a
// distance answer with lower_bound 0: the answers stop there.
TEST_F(TrackSessionTest, UntilInvalidStopsAtATrackAnswerThatTouches) {
  std::mt19937_64 rng(74);
  core::SceneCache cache;
  std::vector<double> free_q, colliding_q;
  while (free_q.empty() || colliding_q.empty()) {
    std::vector<double> q = RandomState(rng, core_->robot());
    (proximity::testing::ValueOrFail(core_->CheckState(q, &cache)).free ? free_q : colliding_q) = q;
  }
  auto context = Context();
  auto stream = Open(context.get());
  v1::SessionRequest request = Opening();
  request.set_until_invalid(true);
  core::TrackRequest options;
  AddTrack(&request, 0, free_q, options);
  AddTrack(&request, 1, colliding_q, options);
  AddTrack(&request, 2, free_q, options);
  v1::SessionResponse response;
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  ASSERT_EQ(response.answers_size(), 2);
  for (const v1::TrackedPair& p : response.answers(0).track().pairs()) EXPECT_GT(p.distance().lower(), 0.0);
  ASSERT_GT(response.answers(1).track().pairs_size(), 0);
  EXPECT_EQ(response.answers(1).track().pairs(0).distance().lower(), 0.0);
  EXPECT_LE(response.answers(1).track().pairs(0).signed_distance(), 0.0);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// A batch of slow track queries (every pair within 10 m, 4096 of them reported) ends at the session's
// deadline, or at the client's cancellation, long before it would finish: the stream ends with that
// status as it does inside any long query, and the server serves on.
TEST_F(TrackSessionTest, DeadlineAndCancellationEndALongTrackBatch) {
  std::mt19937_64 rng(75);
  const std::vector<std::vector<double>> states = RandomStates(rng, core_->robot(), 4000);
  core::TrackRequest slow;
  slow.horizon = 10.0;
  slow.max_pairs = core::kMaxTrackPairs;
  slow.per_link = true;
  // What one such query costs in process: the batch would take seconds.
  core::Tracker probe(core_);
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < 20; ++k) (void)proximity::testing::ValueOrFail(probe.Update(states[k], slow));
  const double per_query = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 20;
  const double batch_seconds = per_query * static_cast<double>(states.size());
  std::printf("[ track ] a slow track query: %.0f us; the batch would take %.1f s\n", per_query * 1e6, batch_seconds);
  ASSERT_GT(batch_seconds, 2.0) << "the batch must outlast the deadline by far";
  for (const bool cancel : {false, true}) {
    SCOPED_TRACE(cancel ? "cancelled" : "deadline");
    auto context = Context(cancel ? std::chrono::seconds(120) : std::chrono::milliseconds(300));
    auto stream = Open(context.get());
    v1::SessionRequest request = Opening();
    for (size_t k = 0; k < states.size(); ++k) AddTrack(&request, k, states[k], slow);
    const auto start = std::chrono::steady_clock::now();
    std::thread canceller;
    if (cancel) {
      canceller = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        context->TryCancel();
      });
    }
    ASSERT_TRUE(stream->Write(request));
    v1::SessionResponse response;
    EXPECT_FALSE(stream->Read(&response)) << "the batch must not be answered";
    const grpc::Status s = stream->Finish();
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (canceller.joinable()) canceller.join();
    EXPECT_LT(elapsed, std::min(2.0, batch_seconds / 2)) << "the stream ended late";
    if (cancel) {
      EXPECT_EQ(s.error_code(), grpc::StatusCode::CANCELLED) << s.error_message();
    } else {
      EXPECT_TRUE(s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                  s.error_code() == grpc::StatusCode::CANCELLED)
          << s.error_code() << ": " << s.error_message();
    }
  }
  EXPECT_TRUE(Eventually([&] {
    return server_->metrics().HandledCount(Rpc::kSession, grpc::StatusCode::DEADLINE_EXCEEDED) +
               server_->metrics().HandledCount(Rpc::kSession, grpc::StatusCode::CANCELLED) ==
           2;
  }));
  // The server serves on, track queries included.
  auto context = Context();
  auto stream = Open(context.get());
  v1::SessionRequest request = Opening();
  AddTrack(&request, 1, states[0], core::TrackRequest());
  v1::SessionResponse response;
  ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
  EXPECT_TRUE(response.answers(0).has_track());
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

// The scene version's tracking geometry is built once, shared by the sessions that track on it, and
// counted in the registry's memory from then on.
TEST_F(TrackSessionTest, TheTrackingGeometryIsSharedAndCounted) {
  const int64_t before = server_->registry().memory_bytes();
  const std::vector<double> home(static_cast<size_t>(core_->dof()), 0.0);
  for (int s = 0; s < 2; ++s) {
    auto context = Context();
    auto stream = Open(context.get());
    v1::SessionRequest request = Opening();
    AddTrack(&request, 1, home, core::TrackRequest());
    v1::SessionResponse response;
    ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
    ASSERT_TRUE(response.answers(0).has_track());
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
  }
  const std::shared_ptr<const SceneEntry> entry = server_->registry().Find("default");
  ASSERT_NE(entry, nullptr);
  ASSERT_NE(entry->tracking, nullptr);
  EXPECT_GT(entry->tracking_bytes.load(), 0);
  EXPECT_EQ(server_->registry().memory_bytes(), before + entry->tracking->MemoryBytes());
  bool built = true;
  EXPECT_EQ(TrackingGeometryOf(*entry, &built), entry->tracking);
  EXPECT_FALSE(built) << "built once per scene version";
}

// A tracker past the server's max_tracker_bytes forgets its warm starts after each query: every frame
// answers as a new tracker in process does (no features kept, the same work).
TEST_F(TrackSessionTest, ATrackerPastItsByteCapStartsEachFrameCold) {
  ServerOptions options = TestOptions();
  options.limits.max_tracker_bytes = 1;
  auto started = ProximityServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto stub = v1::ProximityService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(started.value()->port()), grpc::InsecureChannelCredentials()));
  std::mt19937_64 rng(76);
  const std::vector<std::vector<double>> track = Trajectory(*core_, rng, 1, 30, 1e-3);
  core::TrackRequest query;
  auto context = Context();
  auto stream = stub->Session(context.get());
  v1::SessionRequest request = Opening();
  int64_t pairs = 0;
  for (size_t f = 0; f < track.size(); ++f) {
    AddTrack(&request, f, track[f], query);
    v1::SessionResponse response;
    ASSERT_TRUE(RoundTrip(stream.get(), request, &response));
    ASSERT_TRUE(response.answers(0).has_track());
    const v1::TrackResponse& t = response.answers(0).track();
    core::Tracker fresh(core_);
    ExpectSameFrame(*core_, proximity::testing::ValueOrFail(fresh.Update(track[f], query)), t,
                    "frame " + std::to_string(f));
    EXPECT_EQ(t.same_features(), 0u) << "frame " << f;
    pairs += t.pairs_size();
    request.Clear();
  }
  EXPECT_GT(pairs, 30);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

}  // namespace
}  // namespace proximity::server::testing
