// Service tests for distance, time of first contact, paths and world updates: each compares the
// service's answer with the same core call (Scene::ComputeDistance, TimeOfFirstContact, CheckPath,
// Update) made in process.
#include <algorithm>
#include <map>

#include "server/scene_store.h"
#include "tests/server/service_fixture.h"

namespace proximity::server::testing {
namespace {

using PendingCoreTest = ServiceTest;

std::vector<std::vector<double>> RandomPath(std::mt19937_64& rng, const core::RobotModel& robot, int waypoints,
                                            double step) {
  std::vector<std::vector<double>> path = {RandomState(rng, robot)};
  for (int i = 1; i < waypoints; ++i) {
    auto q = path.back();
    for (auto& v : q) v += std::uniform_real_distribution<double>(-step, step)(rng);
    path.push_back(q);
  }
  return path;
}

std::vector<double> Flatten(const std::vector<std::vector<double>>& rows) {
  std::vector<double> out;
  for (const auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

void ExpectSamePath(const core::Scene& scene, const core::PathResult& c, const v1::PathResult& r,
                    const std::string& where) {
  EXPECT_EQ(r.free(), c.free) << where;
  EXPECT_EQ(r.segment(), c.segment) << where;
  ExpectSameMotion(scene, c.motion, r.motion(), where);
}

TEST_F(PendingCoreTest, CheckPathMatchesCore) {
  std::mt19937_64 rng(20);
  core::SceneCache cache;
  for (int k = 0; k < Cases(60); ++k) {
    // Long enough to span several of the service's pieces of a path.
    const auto path = RandomPath(rng, core_->robot(), 1 + k % 30, 0.15);
    const bool discrete = k % 2 == 1;
    v1::CheckPathRequest request;
    request.set_scene_id("default");
    *request.mutable_waypoints() = k % 3 == 0 ? Packed(path) : Repeated(path);
    request.set_mode(discrete ? v1::MOTION_MODE_DISCRETE : v1::MOTION_MODE_CERTIFIED);
    v1::CheckPathResponse response;
    const grpc::Status status = stub_->CheckPath(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    core::MotionRequest mr;
    mr.mode = discrete ? core::MotionRequest::Mode::kDiscrete : core::MotionRequest::Mode::kCertified;
    core::PathResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, core_->CheckPath(Flatten(path), mr, &cache));
    ExpectSamePath(*core_, r, response.result(), "path " + std::to_string(k));
  }
}

TEST_F(PendingCoreTest, ValidatePathsStreamsEveryPathWithTheCoresAnswer) {
  std::mt19937_64 rng(21);
  std::vector<std::vector<std::vector<double>>> paths;
  v1::ValidatePathsRequest request;
  request.set_scene_id("default");
  for (int k = 0; k < Cases(40); ++k) {
    paths.push_back(RandomPath(rng, core_->robot(), 2 + k % 12, 0.2));
    *request.add_paths() = k % 2 == 0 ? Packed(paths.back()) : Repeated(paths.back());
  }
  auto context = Context();
  auto reader = stub_->ValidatePaths(context.get(), request);
  std::map<uint32_t, v1::ValidatePathsResponse> results;
  v1::ValidatePathsResponse response;
  while (reader->Read(&response)) {
    EXPECT_TRUE(results.emplace(response.index(), response).second) << "path " << response.index() << " twice";
  }
  const grpc::Status status = reader->Finish();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(results.size(), paths.size());
  core::SceneCache cache;
  for (size_t k = 0; k < paths.size(); ++k) {
    core::PathResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, core_->CheckPath(Flatten(paths[k]), {}, &cache));
    ExpectSamePath(*core_, r, results[static_cast<uint32_t>(k)].result(), "path " + std::to_string(k));
  }
}

TEST_F(PendingCoreTest, ComputeDistanceMatchesCore) {
  std::mt19937_64 rng(22);
  core::SceneCache cache;
  for (int k = 0; k < Cases(150); ++k) {
    const auto q = RandomState(rng, core_->robot());
    v1::ComputeDistanceRequest request;
    request.set_scene_id("default");
    *request.mutable_state() = Positions(q);
    request.set_rel_err(k % 3 == 0 ? 0.0 : 0.1);
    request.set_abs_err(k % 4 == 0 ? 1e-3 : 0.0);
    request.set_max_distance(k % 5 == 0 ? 0.05 : 0.0);
    request.set_per_pair(k % 7 == 0);
    request.set_exclude_self(k % 6 == 1);
    request.set_exclude_world(k % 6 == 2);
    v1::ComputeDistanceResponse response;
    const grpc::Status status = stub_->ComputeDistance(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    core::SceneDistanceRequest dr;
    dr.rel_err = request.rel_err();
    dr.abs_err = request.abs_err();
    if (request.max_distance() > 0) dr.max_distance = request.max_distance();
    dr.per_pair = request.per_pair();
    dr.self = !request.exclude_self();
    dr.world = !request.exclude_world();
    core::SceneDistanceResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, core_->ComputeDistance(q, dr, &cache));
    const std::string where = "state " + std::to_string(k);
    EXPECT_EQ(response.lower_bound(), r.lower_bound) << where;
    EXPECT_EQ(response.upper_bound(), r.upper_bound) << where;
    EXPECT_EQ(response.beyond_max_distance(), r.beyond_max_distance) << where;
    EXPECT_EQ(response.within_limits(), r.within_limits) << where;
    if (r.nearest.pair.link >= 0) {
      ExpectSamePair(*core_, r.nearest.pair, response.nearest().pair(), where);
      EXPECT_EQ(response.nearest().point_robot().x(), r.nearest.p_W_robot.x()) << where;
      EXPECT_EQ(response.nearest().point_other().z(), r.nearest.p_W_other.z()) << where;
    }
    ASSERT_EQ(response.pairs_size(), static_cast<int>(r.pairs.size())) << where;
    for (size_t i = 0; i < r.pairs.size(); ++i) {
      EXPECT_EQ(response.pairs(static_cast<int>(i)).lower(), r.pairs[i].lower) << where;
      ExpectSamePair(*core_, r.pairs[i].pair, response.pairs(static_cast<int>(i)).pair(), where);
    }
  }
}

TEST_F(PendingCoreTest, JointTimeOfFirstContactMatchesCore) {
  std::mt19937_64 rng(23);
  core::SceneCache cache;
  for (int k = 0; k < Cases(40); ++k) {
    // Motions of up to 0.6 rad per joint: long random motions make each query (not the service) slow.
    const auto q0 = RandomState(rng, core_->robot());
    auto q1 = q0;
    for (auto& v : q1) v += std::uniform_real_distribution<double>(-0.6, 0.6)(rng);
    v1::TimeOfFirstContactRequest request;
    request.set_scene_id("default");
    *request.mutable_joint_motion()->mutable_start() = Positions(q0);
    *request.mutable_joint_motion()->mutable_goal() = Positions(q1);
    if (k % 2 == 0) request.set_tolerance(1e-3);
    v1::TimeOfFirstContactResponse response;
    const grpc::Status status = stub_->TimeOfFirstContact(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    core::ContinuousRequest cr;
    if (request.tolerance() > 0) cr.tolerance = request.tolerance();
    core::ContinuousResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, core_->TimeOfFirstContact(q0, q1, cr, &cache));
    const std::string where = "motion " + std::to_string(k);
    EXPECT_EQ(response.contact(), r.contact) << where;
    EXPECT_EQ(response.t_contact(), r.t_contact) << where;
    EXPECT_EQ(response.clearance(), r.clearance) << where;
    EXPECT_EQ(response.penetrating(), r.penetrating) << where;
    EXPECT_EQ(response.undecided(), r.undecided) << where;
    EXPECT_EQ(response.iterations(), r.iterations) << where;
    if (r.contact) ExpectSamePair(*core_, r.nearest.pair, response.nearest().pair(), where);
  }
}

TEST_F(PendingCoreTest, BodyTimeOfFirstContactMatchesCore) {
  std::mt19937_64 rng(24);
  for (int k = 0; k < Cases(40); ++k) {
    // A small box flying over and through the table, turning as it goes.
    const core::Vec3 p0(0.55 + std::uniform_real_distribution<double>(-0.2, 0.2)(rng), -0.8, 0.3);
    const core::Vec3 p1(0.55, 0.8, std::uniform_real_distribution<double>(0.0, 0.3)(rng));
    const Eigen::Quaterniond r0(Eigen::AngleAxisd(0.3 * k, core::Vec3::UnitZ()));
    const Eigen::Quaterniond r1(Eigen::AngleAxisd(-0.2 * k, core::Vec3::UnitX()));
    v1::TimeOfFirstContactRequest request;
    request.set_scene_id("default");
    v1::BodyMotion* body = request.mutable_body_motion();
    v1::Shape* shape = body->add_parts()->mutable_shape();
    shape->mutable_box()->mutable_size()->set_x(0.1);
    shape->mutable_box()->mutable_size()->set_y(0.06);
    shape->mutable_box()->mutable_size()->set_z(0.04);
    *body->mutable_start() = WirePose(p0, r0);
    *body->mutable_goal() = WirePose(p1, r1);
    v1::TimeOfFirstContactResponse response;
    const grpc::Status status = stub_->TimeOfFirstContact(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    core::Geometry g;
    g.shape = core::Box{core::Vec3(0.05, 0.03, 0.02)};
    core::ContinuousResult r;
    PROX_ASSERT_OK_AND_ASSIGN(
        r, core_->TimeOfFirstContact(g, PoseFromQuaternion(p0, r0), PoseFromQuaternion(p1, r1), {}));
    EXPECT_EQ(response.contact(), r.contact) << k;
    EXPECT_EQ(response.t_contact(), r.t_contact) << k;
    EXPECT_EQ(response.penetrating(), r.penetrating) << k;
    if (r.contact) {
      EXPECT_EQ(response.nearest().pair().other(), r.nearest.pair.OtherName(*core_)) << k;
    }
  }
}

v1::CollisionObject Box(const std::string& id, const core::Vec3& p, const core::Vec3& size,
                        v1::CollisionObject::Operation op = v1::CollisionObject::OPERATION_ADD) {
  v1::CollisionObject o;
  o.set_id(id);
  o.set_operation(op);
  *o.mutable_pose() = WirePose(p);
  auto* s = o.add_parts()->mutable_shape()->mutable_box()->mutable_size();
  s->set_x(size.x());
  s->set_y(size.y());
  s->set_z(size.z());
  return o;
}

// UpdateWorld: ADD, MOVE and REMOVE make new scenes (new ids, version + 1, parent set) that answer as
// the core's Scene::Update does, while the scene they came from keeps answering as before.
TEST_F(PendingCoreTest, UpdateWorldMakesNewVersionsAndKeepsTheOld) {
  std::mt19937_64 rng(25);
  const auto states = RandomStates(rng, core_->robot(), Cases(3000));
  const auto check = [&](const std::string& id) {
    v1::CheckStatesRequest request;
    request.set_scene_id(id);
    *request.mutable_states() = Packed(states);
    v1::CheckStatesResponse response;
    const grpc::Status status = stub_->CheckStates(Context().get(), request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return std::vector<bool>(response.free().begin(), response.free().end());
  };
  const auto core_check = [&](const core::Scene& scene) {
    core::SceneCache cache;
    std::vector<bool> out;
    for (const auto& q : states) {
      out.push_back(proximity::testing::ValueOrFail(scene.CheckState(q, &cache)).free);
    }
    return out;
  };
  const auto before = check("default");

  // ADD a wall.
  v1::UpdateWorldRequest add;
  add.set_scene_id("default");
  *add.add_objects() = Box("wall", {0.0, -0.5, 0.5}, {1.0, 0.05, 1.0});
  v1::UpdateWorldResponse added;
  grpc::Status status = stub_->UpdateWorld(Context().get(), add, &added);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_NE(added.scene().scene_id(), server_->default_scene_id());
  EXPECT_EQ(added.scene().version(), 1u);
  EXPECT_EQ(added.scene().parent_scene_id(), server_->default_scene_id());
  core::WorldUpdate u1;
  u1.add.push_back({"wall", {{core::Geometry::Primitive(core::Box{core::Vec3(0.5, 0.025, 0.5)}),
                              PoseFromQuaternion({0.0, -0.5, 0.5}, Eigen::Quaterniond::Identity())}}});
  auto core_added = core_->Update(u1);
  ASSERT_TRUE(core_added.ok()) << core_added.error().message;
  EXPECT_EQ(check(added.scene().scene_id()), core_check(*core_added.value()));
  EXPECT_EQ(check("default"), before);

  // The same update again is the same content: the same id.
  v1::UpdateWorldResponse again;
  ASSERT_TRUE(stub_->UpdateWorld(Context().get(), add, &again).ok());
  EXPECT_EQ(again.scene().scene_id(), added.scene().scene_id());

  // MOVE the table: parts keep their poses in the object frame.
  v1::UpdateWorldRequest move;
  move.set_scene_id(added.scene().scene_id());
  v1::CollisionObject* m = move.add_objects();
  m->set_id("table");
  m->set_operation(v1::CollisionObject::OPERATION_MOVE);
  const Eigen::Quaterniond turn(Eigen::AngleAxisd(0.5, core::Vec3::UnitZ()));
  *m->mutable_pose() = WirePose({0.45, 0.1, 0.25}, turn);
  v1::UpdateWorldResponse moved;
  status = stub_->UpdateWorld(Context().get(), move, &moved);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(moved.scene().version(), 2u);
  core::WorldUpdate u2;
  const DefaultSceneSpec spec = DefaultScene();
  core::WorldObject table{"table", {{core::Geometry::Primitive(core::Box{0.5 * spec.objects[0].box_size}),
                                     PoseFromQuaternion({0.45, 0.1, 0.25}, turn)}}};
  u2.replace.push_back(table);
  auto core_moved = core_added.value()->Update(u2);
  ASSERT_TRUE(core_moved.ok()) << core_moved.error().message;
  EXPECT_EQ(check(moved.scene().scene_id()), core_check(*core_moved.value()));

  // REMOVE the post.
  v1::UpdateWorldRequest remove;
  remove.set_scene_id(moved.scene().scene_id());
  remove.add_objects()->set_id("post");
  remove.mutable_objects(0)->set_operation(v1::CollisionObject::OPERATION_REMOVE);
  v1::UpdateWorldResponse removed;
  status = stub_->UpdateWorld(Context().get(), remove, &removed);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(std::count(removed.scene().object_ids().begin(), removed.scene().object_ids().end(), "post"), 0);
  core::WorldUpdate u3;
  u3.remove.push_back("post");
  auto core_removed = core_moved.value()->Update(u3);
  ASSERT_TRUE(core_removed.ok());
  EXPECT_EQ(check(removed.scene().scene_id()), core_check(*core_removed.value()));

  // Every version is still loaded and answers as before.
  EXPECT_EQ(check("default"), before);
  EXPECT_EQ(check(added.scene().scene_id()), core_check(*core_added.value()));
  v1::ListScenesResponse list;
  ASSERT_TRUE(stub_->ListScenes(Context().get(), {}, &list).ok());
  EXPECT_EQ(list.scenes_size(), 4);
}

}  // namespace
}  // namespace proximity::server::testing
