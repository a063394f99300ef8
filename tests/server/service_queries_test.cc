// The service's answers equal the core's in-process answers on the same scenes and inputs.
#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>

#include "server/scene_store.h"
#include "tests/server/service_fixture.h"
#include "bvh/bvh.h"
#include "narrowphase/convex.h"

namespace proximity::server::testing {
namespace {

TEST_F(ServiceTest, CheckStateMatchesCoreOnTheDefaultScene) {
  const bool counts = AwaitFilledMapsToCompareCounts();  // the work counts compared below
  if (counts) {  // GetScene says so (the readiness signal a caller polls instead of the in-process wait)
    v1::GetSceneRequest request;
    request.set_scene_id("default");
    v1::GetSceneResponse response;
    const grpc::Status status = stub_->GetScene(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(response.scene().self_clearance_filled());
    EXPECT_EQ(response.scene().self_clearance_filled(), core_->SelfClearanceFilled());
  }
  std::mt19937_64 rng(7);
  core::SceneCache cache;
  int colliding = 0;
  const int n = Cases(2000);
  for (int k = 0; k < n; ++k) {
    const auto q = RandomState(rng, core_->robot());
    v1::CheckStateRequest request;
    request.set_scene_id(k % 2 == 0 ? "default" : server_->default_scene_id());
    *request.mutable_state() = Positions(q);
    v1::CheckStateResponse response;
    const grpc::Status status = stub_->CheckState(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    core::StateResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, core_->CheckState(q, &cache));
    ASSERT_EQ(response.free(), r.free) << "state " << k;
    EXPECT_EQ(response.within_limits(), r.within_limits);
    EXPECT_EQ(response.stats().states(), 1);
    if (counts) {
      EXPECT_EQ(response.stats().pairs_tested(), r.pairs_tested);
      EXPECT_EQ(response.stats().bv_tests(), r.stats.bv_tests);
    }
    if (!r.free) {
      ++colliding;
      ExpectSamePair(*core_, r.contact, response.contact(), "state " + std::to_string(k));
    }
  }
  // The default workcell is meant to make a real fraction of random states collide.
  EXPECT_GT(colliding, n / 10);
  EXPECT_LT(colliding, n * 7 / 10);
}

TEST_F(ServiceTest, CheckStatesMatchesCoreInBothEncodingsAndAnyColumnOrder) {
  std::mt19937_64 rng(8);
  const auto states = RandomStates(rng, core_->robot(), Cases(5000));
  core::SceneCache cache;
  std::vector<core::StateResult> expected(states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    PROX_ASSERT_OK_AND_ASSIGN(expected[i], core_->CheckState(states[i], &cache));
  }

  // Columns in a shuffled joint order, the rows permuted to match.
  std::vector<int> perm(states[0].size());
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::vector<double>> shuffled;
  for (const auto& q : states) {
    std::vector<double> row;
    for (int j : perm) row.push_back(q[static_cast<size_t>(j)]);
    shuffled.push_back(row);
  }

  std::vector<v1::Configurations> encodings = {Repeated(states), Packed(states), Repeated(shuffled), Packed(shuffled)};
  for (int e = 2; e < 4; ++e) {
    for (int j : perm) encodings[static_cast<size_t>(e)].add_joint_names(core_->robot().active_joint_names()[static_cast<size_t>(j)]);
  }
  for (size_t e = 0; e < encodings.size(); ++e) {
    SCOPED_TRACE("encoding " + std::to_string(e));
    v1::CheckStatesRequest request;
    request.set_scene_id("default");
    *request.mutable_states() = encodings[e];
    request.set_include_contacts(true);
    v1::CheckStatesResponse response;
    const grpc::Status status = stub_->CheckStates(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.free_size(), static_cast<int>(states.size()));
    ASSERT_EQ(response.within_limits_size(), static_cast<int>(states.size()));
    uint32_t free_count = 0;
    size_t next_contact = 0;
    for (size_t i = 0; i < states.size(); ++i) {
      ASSERT_EQ(response.free(static_cast<int>(i)), expected[i].free) << "state " << i;
      EXPECT_EQ(response.within_limits(static_cast<int>(i)), expected[i].within_limits);
      free_count += expected[i].free ? 1 : 0;
      if (!expected[i].free) {
        ASSERT_LT(next_contact, static_cast<size_t>(response.contacts_size()));
        const v1::StateContact& c = response.contacts(static_cast<int>(next_contact++));
        EXPECT_EQ(c.index(), i);
        ExpectSamePair(*core_, expected[i].contact, c.contact(), "state " + std::to_string(i));
      }
    }
    EXPECT_EQ(next_contact, static_cast<size_t>(response.contacts_size()));
    EXPECT_EQ(response.free_count(), free_count);
    EXPECT_EQ(response.stats().states(), static_cast<int64_t>(states.size()));
  }
}

TEST_F(ServiceTest, JointNamesInAnyOrderGiveTheSameAnswer) {
  std::mt19937_64 rng(9);
  const auto& names = core_->robot().active_joint_names();
  for (int k = 0; k < Cases(200); ++k) {
    const auto q = RandomState(rng, core_->robot());
    std::vector<int> perm(q.size());
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    v1::CheckStateRequest ordered, named;
    ordered.set_scene_id("default");
    named.set_scene_id("default");
    *ordered.mutable_state() = Positions(q);
    for (int j : perm) {
      named.mutable_state()->add_joint_names(names[static_cast<size_t>(j)]);
      named.mutable_state()->add_positions(q[static_cast<size_t>(j)]);
    }
    v1::CheckStateResponse a, b;
    ASSERT_TRUE(stub_->CheckState(Context().get(), ordered, &a).ok());
    const grpc::Status status = stub_->CheckState(Context().get(), named, &b);
    ASSERT_TRUE(status.ok()) << status.error_message();
    // The answers, not the work counters (lazily filled caches make those depend on what ran before).
    a.clear_stats();
    b.clear_stats();
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString()) << "state " << k;
  }
}

TEST_F(ServiceTest, CheckMotionMatchesCoreCertifiedAndDiscrete) {
  const bool counts = AwaitFilledMapsToCompareCounts();  // the work counts compared below
  std::mt19937_64 rng(10);
  core::SceneCache cache;
  for (int k = 0; k < Cases(150); ++k) {
    const auto q0 = RandomState(rng, core_->robot());
    auto q1 = q0;
    // Short and long motions both.
    const double reach = k % 2 == 0 ? 0.3 : 2.0;
    for (auto& v : q1) v += std::uniform_real_distribution<double>(-reach, reach)(rng);
    const bool discrete = k % 3 == 0;
    v1::CheckMotionRequest request;
    request.set_scene_id("default");
    *request.mutable_start() = Positions(q0);
    *request.mutable_goal() = Positions(q1);
    request.set_mode(discrete ? v1::MOTION_MODE_DISCRETE : (k % 3 == 1 ? v1::MOTION_MODE_CERTIFIED
                                                                      : v1::MOTION_MODE_UNSPECIFIED));
    if (discrete && k % 2 == 0) request.set_resolution(0.05);
    v1::CheckMotionResponse response;
    const grpc::Status status = stub_->CheckMotion(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    core::MotionRequest mr;
    mr.mode = discrete ? core::MotionRequest::Mode::kDiscrete : core::MotionRequest::Mode::kCertified;
    mr.resolution = request.resolution() > 0 ? request.resolution() : 0.01;
    core::MotionResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, core_->CheckMotion(q0, q1, mr, &cache));
    ExpectSameMotion(*core_, r, response.result(), "motion " + std::to_string(k));
    if (counts) {
      EXPECT_EQ(response.stats().states(), r.states);
      EXPECT_EQ(response.stats().distance_queries(), r.distance_queries);
    }
  }
}

TEST_F(ServiceTest, HundredThousandStateBatchRoundTrip) {
  std::mt19937_64 rng(11);
  const int n = proximity::testing::kSanitizedSlowdown == 1 ? 100'000 : 20'000;
  const auto states = RandomStates(rng, core_->robot(), n);
  v1::CheckStatesRequest request;
  request.set_scene_id("default");
  *request.mutable_states() = Packed(states);
  v1::CheckStatesResponse response;
  const grpc::Status status = stub_->CheckStates(Context().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.free_size(), n);
  core::SceneCache cache;
  int mismatches = 0;
  for (int i = 0; i < n; ++i) {
    core::StateResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, core_->CheckState(states[static_cast<size_t>(i)], &cache));
    mismatches += response.free(i) != r.free;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_TRUE(response.contacts().empty());  // include_contacts was not asked for
}

// A finite value beyond the core's range in one state of a batch (the wire accepts it, the core does
// not): the batch fails INVALID_ARGUMENT naming that state and the core's reason, as its lone check does;
// the states around it still come back when it is left out.
TEST_F(ServiceTest, CheckStatesNamesAStateBeyondTheCoresRange) {
  std::mt19937_64 rng(12);
  auto states = RandomStates(rng, core_->robot(), 3000);
  for (const int bad : {0, 1234, 2999}) {
    SCOPED_TRACE("state " + std::to_string(bad));
    auto batch = states;
    batch[static_cast<size_t>(bad)][2] = -1e300;
    v1::CheckStatesRequest request;
    request.set_scene_id("default");
    *request.mutable_states() = Packed(batch);
    v1::CheckStatesResponse response;
    const grpc::Status status = stub_->CheckStates(Context().get(), request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_EQ(status.error_message().rfind("states: configuration " + std::to_string(bad) + ": q[2] ", 0), 0u)
        << status.error_message();
    EXPECT_NE(status.error_message().find("beyond"), std::string::npos) << status.error_message();
    EXPECT_EQ(response.free_size(), 0);
  }
  v1::CheckStatesRequest request;
  request.set_scene_id("default");
  *request.mutable_states() = Packed(states);
  v1::CheckStatesResponse response;
  const grpc::Status status = stub_->CheckStates(Context().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.free_size(), 3000);
}

TEST_F(ServiceTest, NamedStatesResolveSrdfGroupStates) {
  const std::string dir = proximity::testing::TestDataDir() + "/robots/";
  v1::CreateSceneRequest create;
  create.mutable_robot()->set_urdf_path(dir + "planar_2link.urdf");
  create.mutable_robot()->set_srdf_path(dir + "planar_2link.srdf");
  v1::CreateSceneResponse created;
  const grpc::Status status = stub_->CreateScene(Context().get(), create, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(created.scene().named_states_size(), 2);
  for (const v1::NamedState& s : created.scene().named_states()) {
    v1::CheckStateRequest by_name, by_value;
    by_name.set_scene_id(created.scene().scene_id());
    by_name.mutable_state()->set_named_state(s.name());
    by_value.set_scene_id(created.scene().scene_id());
    *by_value.mutable_state()->mutable_positions() = s.positions();
    v1::CheckStateResponse a, b;
    ASSERT_TRUE(stub_->CheckState(Context().get(), by_name, &a).ok()) << s.name();
    ASSERT_TRUE(stub_->CheckState(Context().get(), by_value, &b).ok());
    a.clear_stats();
    b.clear_stats();
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
  }
  EXPECT_EQ(created.scene().named_states(1).name(), "bent");
  EXPECT_EQ(created.scene().named_states(1).positions(0), 0.5);
  EXPECT_EQ(created.scene().named_states(1).positions(1), -1.25);
}

// A second robot, built from a URDF given as text with primitive, hull and inline-mesh obstacles:
// the wire's full sizes and poses must become the core's half sizes and poses exactly.
TEST_F(ServiceTest, PlanarSceneFromTextMatchesCore) {
  const std::string dir = proximity::testing::TestDataDir() + "/robots/";
  const std::string urdf = proximity::testing::ReadFile(dir + "planar_2link.urdf");
  const std::string srdf = proximity::testing::ReadFile(dir + "planar_2link.srdf");
  ASSERT_FALSE(urdf.empty());
  v1::CreateSceneRequest create;
  create.mutable_robot()->set_urdf(urdf);
  create.mutable_robot()->set_srdf(srdf);
  core::SceneDescription d;
  core::RobotLoadOptions options;
  options.ros_package_path = "";
  auto robot = core::RobotModel::FromUrdfString(urdf, srdf, options);
  ASSERT_TRUE(robot.ok()) << robot.error().message;
  d.robot = robot.value();

  const Eigen::Quaterniond tilt(Eigen::AngleAxisd(0.4, core::Vec3(1, 2, 3).normalized()));
  const auto add_object = [&](const std::string& id, const core::Vec3& p, const Eigen::Quaterniond& q,
                              const v1::Shape& shape, const core::Geometry& geometry) {
    v1::CollisionObject* o = create.add_objects();
    o->set_id(id);
    *o->mutable_pose() = WirePose(p, q);
    v1::ObjectPart* part = o->add_parts();
    *part->mutable_shape() = shape;
    // The part is offset and turned in the object frame, to exercise X_WO * X_OP.
    const core::Vec3 p_OP(0.05, -0.02, 0.0);
    const Eigen::Quaterniond q_OP(Eigen::AngleAxisd(0.3, core::Vec3::UnitZ()));
    *part->mutable_pose() = WirePose(p_OP, q_OP);
    core::WorldObject w;
    w.id = id;
    w.parts.push_back({geometry, PoseFromQuaternion(p, q) * PoseFromQuaternion(p_OP, q_OP)});
    d.objects.push_back(w);
  };
  v1::Shape box, sphere, cylinder, capsule, cone, hull, mesh;
  box.mutable_box()->mutable_size()->set_x(0.3);
  box.mutable_box()->mutable_size()->set_y(0.2);
  box.mutable_box()->mutable_size()->set_z(0.4);
  sphere.mutable_sphere()->set_radius(0.15);
  cylinder.mutable_cylinder()->set_radius(0.1);
  cylinder.mutable_cylinder()->set_length(0.5);
  capsule.mutable_capsule()->set_radius(0.08);
  capsule.mutable_capsule()->set_length(0.3);
  cone.mutable_cone()->set_radius(0.12);
  cone.mutable_cone()->set_length(0.4);
  std::vector<core::Vec3> points;
  std::mt19937_64 rng(12);
  for (int i = 0; i < 20; ++i) {
    core::Vec3 v(std::normal_distribution<double>()(rng), std::normal_distribution<double>()(rng),
                 std::normal_distribution<double>()(rng));
    points.push_back(0.12 * v);
    for (int k = 0; k < 3; ++k) hull.mutable_convex_hull()->add_points(points.back()[k]);
  }
  const core::TriangleMesh box_mesh = core::MakeBoxMesh(core::Vec3(0.2, 0.3, 0.2));
  for (const auto& v : box_mesh.vertices)
    for (int k = 0; k < 3; ++k) mesh.mutable_mesh()->add_vertices(v[k]);
  for (const auto& t : box_mesh.triangles)
    for (int k = 0; k < 3; ++k) mesh.mutable_mesh()->add_triangles(static_cast<uint32_t>(t[k]));

  core::Geometry g_box, g_sphere, g_cyl, g_cap, g_cone, g_hull, g_mesh;
  g_box.shape = core::Box{core::Vec3(0.15, 0.1, 0.2)};
  g_sphere.shape = core::Sphere{core::Vec3::Zero(), 0.15};
  g_cyl.shape = core::Cylinder{0.1, 0.25};
  g_cap.shape = core::Capsule{0.08, 0.15};
  g_cone.shape = core::Cone{0.12, 0.2};
  g_hull.shape = core::ConvexPolytope::Build(points).value();
  g_mesh.mesh = core::MeshModel::Build(core::MakeTriangleMesh(box_mesh.vertices, box_mesh.triangles).value()).value();
  add_object("box", {1.2, 0.4, 0.1}, tilt, box, g_box);
  add_object("sphere", {-0.9, 0.7, 0.1}, Eigen::Quaterniond::Identity(), sphere, g_sphere);
  add_object("cylinder", {0.3, -1.1, 0.1}, tilt, cylinder, g_cyl);
  add_object("capsule", {-1.2, -0.5, 0.12}, tilt, capsule, g_cap);
  add_object("cone", {0.0, 1.3, 0.1}, tilt, cone, g_cone);
  add_object("hull", {1.3, -0.6, 0.1}, tilt, hull, g_hull);
  add_object("mesh", {-0.4, -1.3, 0.1}, tilt, mesh, g_mesh);
  auto built = core::Scene::Build(d);
  ASSERT_TRUE(built.ok()) << built.error().message;
  const core::Scene& scene = *built.value();

  v1::CreateSceneResponse created;
  const grpc::Status status = stub_->CreateScene(Context().get(), create, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(created.created());
  EXPECT_EQ(created.scene().robot_name(), "planar_2link");
  ASSERT_EQ(created.scene().joint_names_size(), 2);
  EXPECT_EQ(created.scene().object_ids_size(), 7);
  EXPECT_EQ(created.scene().triangles(), 12u);

  const auto states = RandomStates(rng, scene.robot(), Cases(4000));
  v1::CheckStatesRequest request;
  request.set_scene_id(created.scene().scene_id());
  *request.mutable_states() = Packed(states);
  request.set_include_contacts(true);
  v1::CheckStatesResponse response;
  ASSERT_TRUE(stub_->CheckStates(Context().get(), request, &response).ok());
  core::SceneCache cache;
  int world_hits = 0, contact = 0;
  for (size_t i = 0; i < states.size(); ++i) {
    core::StateResult r;
    PROX_ASSERT_OK_AND_ASSIGN(r, scene.CheckState(states[i], &cache));
    ASSERT_EQ(response.free(static_cast<int>(i)), r.free) << "state " << i;
    if (!r.free) {
      world_hits += r.contact.self ? 0 : 1;
      ExpectSamePair(scene, r.contact, response.contacts(contact++).contact(), "state " + std::to_string(i));
    }
  }
  EXPECT_GT(world_hits, static_cast<int>(states.size()) / 50);
}

// The UR5 and the Panda from ../shared, loaded by path with package:// directories and an SRDF.
TEST_F(ServiceTest, SharedRobotsByPathMatchCore) {
  const std::string shared = proximity::testing::SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data");
  struct Robot {
    std::string urdf, srdf, package, package_dir;
  };
  const std::vector<Robot> robots = {
      {shared + "/robots/ur5/ur_description/urdf/ur5_robot.urdf", shared + "/robots/ur5/ur5_moveit_config/config/ur5.srdf",
       "ur_description", shared + "/robots/ur5/ur_description"},
      {shared + "/robots/panda/moveit_resources_panda_description/urdf/panda.urdf",
       shared + "/robots/panda/moveit_resources_panda_moveit_config/config/panda.srdf",
       "moveit_resources_panda_description", shared + "/robots/panda/moveit_resources_panda_description"}};
  std::mt19937_64 rng(13);
  for (const Robot& rb : robots) {
    SCOPED_TRACE(rb.urdf);
    v1::CreateSceneRequest create;
    create.mutable_robot()->set_urdf_path(rb.urdf);
    create.mutable_robot()->set_srdf_path(rb.srdf);
    (*create.mutable_robot()->mutable_package_dirs())[rb.package] = rb.package_dir;
    core::RobotLoadOptions options;
    options.package_dirs[rb.package] = rb.package_dir;
    options.ros_package_path = "";
    auto robot = core::RobotModel::FromUrdfFile(rb.urdf, rb.srdf, options);
    ASSERT_TRUE(robot.ok()) << robot.error().message;
    core::SceneDescription d;
    d.robot = robot.value();
    for (int i = 0; i < 4; ++i) {
      const core::Vec3 p(i % 2 == 0 ? 0.45 : -0.45, i < 2 ? 0.3 : -0.3, 0.3 + 0.1 * i);
      v1::CollisionObject* o = create.add_objects();
      o->set_id("block" + std::to_string(i));
      *o->mutable_pose() = WirePose(p);
      o->add_parts()->mutable_shape()->mutable_box()->mutable_size()->set_x(0.2);
      o->mutable_parts(0)->mutable_shape()->mutable_box()->mutable_size()->set_y(0.3);
      o->mutable_parts(0)->mutable_shape()->mutable_box()->mutable_size()->set_z(0.25);
      core::WorldObject w;
      w.id = o->id();
      w.parts.push_back({core::Geometry::Primitive(core::Box{core::Vec3(0.1, 0.15, 0.125)}), PoseFromQuaternion(p, Eigen::Quaterniond::Identity())});
      d.objects.push_back(w);
    }
    auto built = core::Scene::Build(d);
    ASSERT_TRUE(built.ok()) << built.error().message;
    v1::CreateSceneResponse created;
    const grpc::Status status = stub_->CreateScene(Context().get(), create, &created);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_GT(created.scene().triangles(), 0u);
    const auto states = RandomStates(rng, built.value()->robot(), Cases(1500));
    v1::CheckStatesRequest request;
    request.set_scene_id(created.scene().scene_id());
    *request.mutable_states() = Repeated(states);
    v1::CheckStatesResponse response;
    ASSERT_TRUE(stub_->CheckStates(Context().get(), request, &response).ok());
    core::SceneCache cache;
    for (size_t i = 0; i < states.size(); ++i) {
      core::StateResult r;
      PROX_ASSERT_OK_AND_ASSIGN(r, built.value()->CheckState(states[i], &cache));
      ASSERT_EQ(response.free(static_cast<int>(i)), r.free) << "state " << i;
    }
  }
}

}  // namespace
}  // namespace proximity::server::testing
