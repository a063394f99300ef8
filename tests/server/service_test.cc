// The scene handlers (service.cc, scene_store.cc, scene_id.cc): scene ids are content hashes; every bad
// request fails with the right code and a message naming the field, and changes nothing.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "server/scene_store.h"
#include "tests/server/service_fixture.h"
#include "bvh/bvh.h"
#include "narrowphase/convex.h"

namespace proximity::server::testing {
namespace {

// A scene's id and its build read each server file once: a mesh file rewritten between the two (a
// user's export finishing while the request is served) cannot give a scene whose content differs from
// its id. Without the shared snapshot the rewritten file gives another id and other geometry, which is
// what the test would see if the build read the file again.
TEST(SceneFiles, TheIdAndTheBuildSeeTheSameFileContent) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("prox_snapshot_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string mesh = (dir / "part.stl").string();
  std::filesystem::copy_file(proximity::testing::TestDataDir() + "/tetrahedron.stl", mesh,
                             std::filesystem::copy_options::overwrite_existing);
  v1::CreateSceneRequest request = PlanarRequest();
  v1::CollisionObject* o = request.add_objects();
  o->set_id("part");
  *o->mutable_pose() = WirePose({-1.5, 0.0, 0.0});
  o->add_parts()->mutable_shape()->mutable_mesh_file()->set_path(mesh);
  auto triangles = [](const SceneEntry& e) {
    for (const core::WorldObject& w : e.scene->objects()) {
      if (w.id == "part") return w.parts.at(0).geometry.mesh->num_triangles();
    }
    return -1;
  };

  core::FileAccess files;
  files.snapshot = std::make_shared<core::FileSnapshot>();
  auto id = CreateSceneId(request, files);
  ASSERT_TRUE(id.ok()) << id.error().message;
  {
    std::ofstream rewrite(mesh, std::ios::trunc);
    rewrite << "solid quad\n";
    for (const char* f : {"0 0 0  1 0 0  1 1 0", "0 0 0  1 1 0  0 1 0"}) {
      std::istringstream v(f);
      double x[9];
      for (double& c : x) v >> c;
      rewrite << "facet normal 0 0 1\nouter loop\n";
      for (int k = 0; k < 3; ++k) rewrite << "vertex " << x[3 * k] << " " << x[3 * k + 1] << " " << x[3 * k + 2] << "\n";
      rewrite << "endloop\nendfacet\n";
    }
    rewrite << "endsolid quad\n";
  }
  auto built = BuildScene(request, files, id.value());
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built.value()->id, id.value());
  EXPECT_EQ(triangles(*built.value()), 4) << "the build read the rewritten file, not the bytes the id hashed";

  auto fresh = BuildScene(request, core::FileAccess{}, "");
  ASSERT_TRUE(fresh.ok()) << fresh.error().message;
  EXPECT_NE(fresh.value()->id, id.value());
  EXPECT_EQ(triangles(*fresh.value()), 2);
  std::filesystem::remove_all(dir);
}

// The scene memory the daemon's caps count holds the robot's self-clearance maps, once per robot model:
// a scene's updates share the model and its maps.
TEST(SceneMemory, CountsTheSelfClearanceMapsOnceWithTheRobotModel) {
  PROX_REQUIRE_DIR(proximity::testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the KR5)");
  v1::CreateSceneRequest request = PlanarRequest();  // its block, on the KR5 (whose wrist gets maps)
  request.mutable_robot()->clear_urdf();
  request.mutable_robot()->set_urdf_path(proximity::testing::DartUrdfDir() + "/KR5/KR5 sixx R650.urdf");
  auto built = BuildScene(request);
  ASSERT_TRUE(built.ok()) << built.error().message;
  const SceneEntry& entry = *built.value();
  const int64_t maps = entry.scene->self_clearance_maps()->bytes();
  ASSERT_GT(maps, 0) << "the KR5's wrist links get self-clearance maps";
  int64_t geometry = 0;
  for (const core::Link& link : entry.scene->robot().links()) {
    for (const core::LinkGeometry& g : link.geometries) {
      geometry += (g.mesh != nullptr ? g.mesh->MemoryBytes() : 0) + (g.hull != nullptr ? g.hull->MemoryBytes() : 0);
    }
  }
  EXPECT_EQ(entry.robot_bytes, geometry + maps) << "the robot model's meshes and hulls, and its maps";

  v1::UpdateWorldRequest update;
  update.set_scene_id(entry.id);
  v1::CollisionObject* o = update.add_objects();
  o->set_id("block");
  o->set_operation(v1::CollisionObject::OPERATION_REMOVE);
  auto updated = UpdateScene(entry, update);
  ASSERT_TRUE(updated.ok()) << updated.error().message;
  EXPECT_EQ(updated.value()->scene->self_clearance_maps(), entry.scene->self_clearance_maps());
  EXPECT_EQ(updated.value()->robot_bytes, entry.robot_bytes);

  SceneRegistry registry;
  ASSERT_TRUE(registry.Insert(built.value()).ok());
  ASSERT_TRUE(registry.Insert(updated.value()).ok());
  EXPECT_EQ(registry.memory_bytes(), entry.robot_bytes + entry.world_bytes + updated.value()->world_bytes);
}

TEST_F(ServiceTest, SceneIdsAreContentHashes) {
  v1::CreateSceneResponse a, b, c;
  ASSERT_TRUE(stub_->CreateScene(Context().get(), PlanarRequest(), &a).ok());
  EXPECT_TRUE(a.created());
  EXPECT_EQ(a.scene().scene_id().size(), 32u);
  ASSERT_TRUE(stub_->CreateScene(Context().get(), PlanarRequest(), &b).ok());
  EXPECT_FALSE(b.created());
  EXPECT_EQ(a.scene().scene_id(), b.scene().scene_id());
  EXPECT_EQ(a.scene().SerializeAsString(), b.scene().SerializeAsString());

  v1::CreateSceneRequest moved = PlanarRequest();
  moved.mutable_objects(0)->mutable_pose()->mutable_position()->set_x(1.21);
  ASSERT_TRUE(stub_->CreateScene(Context().get(), moved, &c).ok());
  EXPECT_TRUE(c.created());
  EXPECT_NE(c.scene().scene_id(), a.scene().scene_id());

  // The built-in scene, sent as an ordinary request, is the loaded default.
  v1::CreateSceneResponse d;
  ASSERT_TRUE(stub_->CreateScene(Context().get(), DefaultSceneRequest(DefaultScene()), &d).ok());
  EXPECT_FALSE(d.created());
  EXPECT_EQ(d.scene().scene_id(), server_->default_scene_id());

  // A second, independent server (a replica) gives the same content the same id.
  auto replica = ProximityServer::Start([] {
    ServerOptions o = TestOptions();
    o.metrics_listen = "";
    return o;
  }());
  ASSERT_TRUE(replica.ok()) << replica.error().message;
  EXPECT_EQ(replica.value()->default_scene_id(), server_->default_scene_id());
  auto entry = BuildScene(PlanarRequest());
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry.value()->id, a.scene().scene_id());

  v1::GetSceneRequest get;
  get.set_scene_id("default");
  v1::GetSceneResponse got;
  ASSERT_TRUE(stub_->GetScene(Context().get(), get, &got).ok());
  EXPECT_EQ(got.scene().scene_id(), server_->default_scene_id());
  EXPECT_EQ(got.scene().joint_names_size(), 6);
  EXPECT_EQ(got.scene().object_ids_size(), static_cast<int>(DefaultScene().objects.size()));

  v1::DeleteSceneRequest del;
  del.set_scene_id(c.scene().scene_id());
  v1::DeleteSceneResponse deleted;
  ASSERT_TRUE(stub_->DeleteScene(Context().get(), del, &deleted).ok());
  EXPECT_EQ(stub_->DeleteScene(Context().get(), del, &deleted).error_code(), grpc::StatusCode::NOT_FOUND);
  v1::ListScenesResponse list;
  ASSERT_TRUE(stub_->ListScenes(Context().get(), {}, &list).ok());
  EXPECT_EQ(list.scenes_size(), 2);
}

// What must not change when a request fails: the loaded scenes and their answers.
struct Snapshot {
  std::string scenes;
  std::string answers;
  bool operator==(const Snapshot&) const = default;
};

class ServiceErrorTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    v1::CreateSceneResponse planar;
    ASSERT_TRUE(stub_->CreateScene(Context().get(), PlanarRequest(), &planar).ok());
    planar_id_ = planar.scene().scene_id();
    std::mt19937_64 rng(30);
    probe_ = RandomStates(rng, core_->robot(), 300);
    before_ = Take();
  }

  Snapshot Take() {
    Snapshot s;
    v1::ListScenesResponse list;
    EXPECT_TRUE(stub_->ListScenes(Context().get(), {}, &list).ok());
    s.scenes = list.SerializeAsString();
    v1::CheckStatesRequest request;
    request.set_scene_id("default");
    *request.mutable_states() = Packed(probe_);
    v1::CheckStatesResponse response;
    EXPECT_TRUE(stub_->CheckStates(Context().get(), request, &response).ok());
    // The answers, not the work counters: lazily filled caches make the work depend on what ran before.
    response.clear_stats();
    s.answers = response.SerializeAsString();
    return s;
  }

  /// The status of a failed call: its code, a message naming `field`, and nothing changed.
  void ExpectError(const grpc::Status& status, grpc::StatusCode code, const std::string& field) {
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_NE(status.error_message().find(field), std::string::npos)
        << "message '" << status.error_message() << "' does not name '" << field << "'";
    EXPECT_TRUE(Take() == before_) << "a failed request changed the loaded scenes or their answers";
  }

  grpc::Status CheckState(const v1::JointPositions& state, const std::string& scene = "default") {
    v1::CheckStateRequest request;
    request.set_scene_id(scene);
    *request.mutable_state() = state;
    v1::CheckStateResponse response;
    return stub_->CheckState(Context().get(), request, &response);
  }

  grpc::Status CreateScene(const v1::CreateSceneRequest& request) {
    v1::CreateSceneResponse response;
    return stub_->CreateScene(Context().get(), request, &response);
  }

  std::string planar_id_;
  std::vector<std::vector<double>> probe_;
  Snapshot before_;
};

// Allowed pairs naming neither a link nor an object are accepted (as MoveIt accepts them) and reported
// in the scene's warnings, by CreateScene and GetScene alike; pairs naming objects apply to them.
TEST_F(ServiceTest, AllowedPairsNamingUnknownThingsAreAcceptedWithAWarning) {
  v1::CreateSceneRequest r = PlanarRequest();
  auto* pair = r.add_allowed_pairs();
  pair->set_first("upper");
  pair->set_second("no_such_link");
  v1::CreateSceneResponse created;
  ASSERT_TRUE(stub_->CreateScene(Context().get(), r, &created).ok());
  ASSERT_EQ(created.scene().warnings_size(), 1);
  EXPECT_NE(created.scene().warnings(0).find("'no_such_link'"), std::string::npos) << created.scene().warnings(0);
  v1::GetSceneRequest get;
  get.set_scene_id(created.scene().scene_id());
  v1::GetSceneResponse got;
  ASSERT_TRUE(stub_->GetScene(Context().get(), get, &got).ok());
  ASSERT_EQ(got.scene().warnings_size(), 1);
  EXPECT_EQ(got.scene().warnings(0), created.scene().warnings(0));

  v1::CreateSceneResponse plain;
  ASSERT_TRUE(stub_->CreateScene(Context().get(), PlanarRequest(), &plain).ok());
  EXPECT_EQ(plain.scene().warnings_size(), 0);
}

TEST_F(ServiceTest, CollisionFromVisualLoadsTheVisualMeshesAndChangesTheId) {
  const std::string shared = proximity::testing::SharedDataDir();
  PROX_REQUIRE_DIR(shared, "../shared/data (the UR5 with its visual meshes)");
  v1::CreateSceneRequest r;
  r.mutable_robot()->set_urdf_path(shared + "/robots/ur5/ur_description/urdf/ur5_robot.urdf");
  (*r.mutable_robot()->mutable_package_dirs())["ur_description"] = shared + "/robots/ur5/ur_description";
  v1::CreateSceneResponse collision, visual, again;
  ASSERT_TRUE(stub_->CreateScene(Context().get(), r, &collision).ok());
  r.mutable_robot()->set_collision_from_visual(true);
  ASSERT_TRUE(stub_->CreateScene(Context().get(), r, &visual).ok());
  EXPECT_TRUE(visual.created());
  EXPECT_NE(visual.scene().scene_id(), collision.scene().scene_id());
  EXPECT_EQ(collision.scene().triangles(), 5328u);
  EXPECT_GT(visual.scene().triangles(), 90'000u);  // the seven COLLADA files
  ASSERT_TRUE(stub_->CreateScene(Context().get(), r, &again).ok());
  EXPECT_FALSE(again.created());
  EXPECT_EQ(again.scene().scene_id(), visual.scene().scene_id());
  // The high-poly scene answers like the other: the home state is free in both.
  for (const auto* s : {&collision, &visual}) {
    v1::CheckStateRequest q;
    q.set_scene_id(s->scene().scene_id());
    for (int i = 0; i < s->scene().joint_names_size(); ++i) q.mutable_state()->add_positions(0.0);
    v1::CheckStateResponse a;
    ASSERT_TRUE(stub_->CheckState(Context().get(), q, &a).ok());
    EXPECT_TRUE(a.free());
  }
}

TEST_F(ServiceErrorTest, UnknownSceneIsNotFound) {
  ExpectError(CheckState(Positions(probe_[0]), "0123456789abcdef0123456789abcdef"), grpc::StatusCode::NOT_FOUND,
              "0123456789abcdef0123456789abcdef");
  v1::CheckStatesRequest request;
  request.set_scene_id("nope");
  v1::CheckStatesResponse response;
  ExpectError(stub_->CheckStates(Context().get(), request, &response), grpc::StatusCode::NOT_FOUND, "nope");
  v1::UpdateWorldRequest update;
  update.set_scene_id("nope");
  v1::UpdateWorldResponse updated;
  ExpectError(stub_->UpdateWorld(Context().get(), update, &updated), grpc::StatusCode::NOT_FOUND, "nope");
}

TEST_F(ServiceErrorTest, BadStatesNameTheJointOrField) {
  auto q = probe_[0];
  q[2] = std::numeric_limits<double>::quiet_NaN();
  ExpectError(CheckState(Positions(q)), grpc::StatusCode::INVALID_ARGUMENT, "elbow_pitch");
  q.pop_back();
  q[2] = 0.0;
  ExpectError(CheckState(Positions(q)), grpc::StatusCode::INVALID_ARGUMENT, "state.positions: expected 6 values");

  const auto& names = core_->robot().active_joint_names();
  v1::JointPositions named;
  for (size_t j = 0; j < names.size(); ++j) {
    named.add_joint_names(names[j]);
    named.add_positions(0.0);
  }
  // A joint the robot lacks is ignored (as MoveIt reads joint states); every joint it has is still required.
  v1::JointPositions unknown = named;
  unknown.set_joint_names(3, "bogus_joint");
  ExpectError(CheckState(unknown), grpc::StatusCode::INVALID_ARGUMENT, "joint '" + names[3] + "' is missing");
  v1::JointPositions extra = named;
  extra.add_joint_names("bogus_joint");
  extra.add_positions(std::numeric_limits<double>::quiet_NaN());
  const grpc::Status lenient = CheckState(extra);  // its value is not read: not even NaN is refused
  EXPECT_TRUE(lenient.ok()) << lenient.error_message();
  v1::JointPositions duplicate = named;
  duplicate.set_joint_names(4, names[1]);
  ExpectError(CheckState(duplicate), grpc::StatusCode::INVALID_ARGUMENT, "'" + names[1] + "' appears more than once");
  v1::JointPositions missing = named;
  missing.mutable_joint_names()->RemoveLast();
  missing.mutable_positions()->RemoveLast();
  ExpectError(CheckState(missing), grpc::StatusCode::INVALID_ARGUMENT, "'" + names.back() + "' is missing");
  v1::JointPositions fixed = named;
  fixed.set_joint_names(0, "arm_to_world_fixed");
  ExpectError(CheckState(fixed), grpc::StatusCode::INVALID_ARGUMENT, "state.joint_names[0]");
  v1::JointPositions both = named;
  both.set_named_state("home");
  ExpectError(CheckState(both), grpc::StatusCode::INVALID_ARGUMENT, "named_state");
  v1::JointPositions no_such_state;
  no_such_state.set_named_state("no_such_state");
  ExpectError(CheckState(no_such_state), grpc::StatusCode::INVALID_ARGUMENT, "no_such_state");

  v1::CheckStatesRequest batch;
  batch.set_scene_id("default");
  *batch.mutable_states() = Packed({probe_[0], probe_[1]});
  batch.mutable_states()->mutable_positions_f64le()->resize(8 * 11);
  v1::CheckStatesResponse response;
  ExpectError(stub_->CheckStates(Context().get(), batch, &response), grpc::StatusCode::INVALID_ARGUMENT,
              "states.positions_f64le: 11 values is not a multiple of the column count 6");
  *batch.mutable_states() = Repeated({probe_[0], probe_[1]});
  batch.mutable_states()->set_positions(10, std::numeric_limits<double>::infinity());
  ExpectError(stub_->CheckStates(Context().get(), batch, &response), grpc::StatusCode::INVALID_ARGUMENT,
              "configuration 1, joint '" + names[4] + "' is not finite");
  batch.mutable_states()->set_positions_f64le(std::string(48, '\0'));
  ExpectError(stub_->CheckStates(Context().get(), batch, &response), grpc::StatusCode::INVALID_ARGUMENT,
              "not both");

  v1::CheckMotionRequest motion;
  motion.set_scene_id("default");
  *motion.mutable_start() = Positions(probe_[0]);
  *motion.mutable_goal() = Positions(probe_[1]);
  motion.set_resolution(-0.1);
  v1::CheckMotionResponse motion_response;
  ExpectError(stub_->CheckMotion(Context().get(), motion, &motion_response), grpc::StatusCode::INVALID_ARGUMENT,
              "resolution");
  motion.set_resolution(0.0);
  motion.mutable_goal()->mutable_positions()->RemoveLast();
  ExpectError(stub_->CheckMotion(Context().get(), motion, &motion_response), grpc::StatusCode::INVALID_ARGUMENT,
              "goal.positions");
}

TEST_F(ServiceErrorTest, LimitsAreResourceExhausted) {
  std::mt19937_64 rng(31);
  // One configuration over --max-batch-states.
  std::vector<std::vector<double>> rows(kTestMaxBatchStates + 1, probe_[0]);
  v1::CheckStatesRequest batch;
  batch.set_scene_id("default");
  *batch.mutable_states() = Packed(rows);
  v1::CheckStatesResponse response;
  ExpectError(stub_->CheckStates(Context().get(), batch, &response), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "--max-batch-states");
  // A message over --max-message-bytes is refused by gRPC itself.
  batch.mutable_states()->set_positions_f64le(std::string(kTestMaxMessageBytes + 8 * 6, '\0'));
  ExpectError(stub_->CheckStates(Context().get(), batch, &response), grpc::StatusCode::RESOURCE_EXHAUSTED, "larger than max");
  // A path over --max-path-waypoints (5,000).
  v1::CheckPathRequest path;
  path.set_scene_id("default");
  *path.mutable_waypoints() = Packed(std::vector<std::vector<double>>(5'001, probe_[0]));
  v1::CheckPathResponse path_response;
  ExpectError(stub_->CheckPath(Context().get(), path, &path_response), grpc::StatusCode::RESOURCE_EXHAUSTED,
              "--max-path-waypoints");
}

// Found by urdf_fuzz: a URDF link name that the two XML readers of the loader read differently made
// the load throw, which terminated proximityd from inside CreateScene. It is a bad argument.
TEST_F(ServiceErrorTest, UrdfNamesTheXmlReadersDisagreeOnAreInvalidArgument) {
  v1::CreateSceneRequest r = PlanarRequest();
  r.mutable_robot()->set_urdf(R"(<robot name="r"><link name="a&b"/><link name="c"/>
      <joint name="j" type="continuous"><parent link="a&b"/><child link="c"/></joint></robot>)");
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "urdfdom reads");
}

TEST_F(ServiceErrorTest, BadScenesNameTheField) {
  v1::CreateSceneRequest r = PlanarRequest();
  r.mutable_objects(0)->mutable_pose()->mutable_orientation()->set_w(0.9);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[0].pose.orientation: quaternion norm 0.9");

  r = PlanarRequest();
  r.mutable_objects(0)->mutable_pose()->mutable_position()->set_y(std::nan(""));
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[0].pose.position.y is not finite");

  r = PlanarRequest();
  r.mutable_objects(0)->mutable_parts(0)->mutable_shape()->mutable_box()->mutable_size()->set_x(-0.2);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[0].parts[0].shape.box.size.x must be >= 0");

  r = PlanarRequest();
  r.mutable_objects(0)->mutable_parts(0)->mutable_shape()->mutable_sphere()->set_radius(-1);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[0].parts[0].shape.sphere.radius");

  r = PlanarRequest();
  r.mutable_objects(0)->mutable_parts(0)->mutable_shape()->mutable_cylinder()->set_length(-1);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[0].parts[0].shape.cylinder.length");

  r = PlanarRequest();
  r.mutable_objects(0)->mutable_parts(0)->mutable_shape()->mutable_mesh_file()->set_path("/no/such/mesh.stl");
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "/no/such/mesh.stl");

  r = PlanarRequest();
  auto* mesh = r.mutable_objects(0)->mutable_parts(0)->mutable_shape()->mutable_mesh();
  for (double v : {0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0}) mesh->add_vertices(v);
  for (uint32_t i : {0u, 1u, 7u}) mesh->add_triangles(i);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[0].parts[0].shape.mesh.triangles[2]");

  r = PlanarRequest();
  r.mutable_objects(0)->mutable_parts(0)->mutable_shape()->mutable_convex_hull()->add_points(1.0);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[0].parts[0].shape.convex_hull.points");

  r = PlanarRequest();
  r.mutable_robot()->set_urdf("<robot name='broken'><link name='a'></robot>");
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "robot");

  r = PlanarRequest();
  r.mutable_robot()->clear_urdf();
  r.mutable_robot()->set_urdf_path("/no/such/robot.urdf");
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "/no/such/robot.urdf");

  r = PlanarRequest();
  *r.add_objects() = r.objects(0);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[1].id: object 'block' appears twice");

  r = PlanarRequest();
  r.set_default_padding(-0.01);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "default_padding");


  r = PlanarRequest();
  r.mutable_objects(0)->set_operation(v1::CollisionObject::OPERATION_REMOVE);
  ExpectError(CreateScene(r), grpc::StatusCode::INVALID_ARGUMENT, "objects[0].operation");

  // A bad update of a loaded scene: unknown object, ADD of an existing id, a MOVE with parts.
  v1::UpdateWorldRequest update;
  update.set_scene_id(planar_id_);
  v1::CollisionObject* o = update.add_objects();
  o->set_id("no_such_object");
  o->set_operation(v1::CollisionObject::OPERATION_REMOVE);
  v1::UpdateWorldResponse updated;
  ExpectError(stub_->UpdateWorld(Context().get(), update, &updated), grpc::StatusCode::INVALID_ARGUMENT,
              "objects[0].id: no object 'no_such_object'");
  *o = PlanarRequest().objects(0);
  o->set_operation(v1::CollisionObject::OPERATION_ADD);
  ExpectError(stub_->UpdateWorld(Context().get(), update, &updated), grpc::StatusCode::INVALID_ARGUMENT,
              "already exists");
  o->set_operation(v1::CollisionObject::OPERATION_MOVE);
  ExpectError(stub_->UpdateWorld(Context().get(), update, &updated), grpc::StatusCode::INVALID_ARGUMENT,
              "objects[0].parts: MOVE takes");
  o->set_operation(v1::CollisionObject::OPERATION_UNSPECIFIED);
  ExpectError(stub_->UpdateWorld(Context().get(), update, &updated), grpc::StatusCode::INVALID_ARGUMENT,
              "objects[0].operation");
}

}  // namespace
}  // namespace proximity::server::testing
