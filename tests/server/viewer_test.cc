// GetLinkPoses, GetSceneGeometry (scene_geometry.cc), Plan's time stamps and the viewer's HTTP routes
// (viewer.cc), against the core's in-process answers (forward kinematics, the scene's meshes, the robot's
// velocity limits).
#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "proximity/planners/timing.h"
#include "tests/server/service_fixture.h"
#include "bvh/bvh.h"

// Last: httplib pulls in <resolv.h>, whose _res macro breaks Eigen headers included after it.
#include <httplib.h>

namespace proximity::server::testing {
namespace {

constexpr int kPose = 7;

std::vector<double> Unpack(const std::string& bytes) {
  std::vector<double> out(bytes.size() / sizeof(double));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(double));
  return out;
}

// The core's link poses at q, the scene's base pose applied, as [x y z qx qy qz qw] with w >= 0.
std::vector<double> CorePoses(const core::Scene& scene, const std::vector<double>& q) {
  auto X = scene.robot().ForwardKinematics(q, scene.X_WB());
  EXPECT_TRUE(X.ok()) << X.error().message;
  std::vector<double> out;
  for (const core::RigidTransform& T : X.value()) {
    Eigen::Quaterniond r(T.R);
    r.normalize();
    if (r.w() < 0) r.coeffs() = -r.coeffs();
    for (double v : {T.p.x(), T.p.y(), T.p.z(), r.x(), r.y(), r.z(), r.w()}) out.push_back(v);
  }
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, const std::string& where) {
  ASSERT_EQ(got.size(), want.size()) << where;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << where << " value " << i;
}

TEST_F(ServiceTest, LinkPosesEqualTheCoresForwardKinematics) {
  std::mt19937_64 rng(19);
  const auto states = RandomStates(rng, core_->robot(), 50);
  v1::GetLinkPosesRequest request;
  request.set_scene_id("default");
  *request.mutable_states() = Packed(states);
  v1::GetLinkPosesResponse response;
  const grpc::Status status = stub_->GetLinkPoses(Context().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.count(), states.size());
  ASSERT_EQ(response.link_names_size(), core_->robot().num_links());
  for (int k = 0; k < response.link_names_size(); ++k) {
    EXPECT_EQ(response.link_names(k), core_->robot().link(k).name);
  }
  ASSERT_EQ(response.within_limits_size(), static_cast<int>(states.size()));
  const std::vector<double> poses = Unpack(response.poses_f64le());
  const size_t per_state = static_cast<size_t>(core_->robot().num_links()) * kPose;
  ASSERT_EQ(poses.size(), states.size() * per_state);
  for (size_t i = 0; i < states.size(); ++i) {
    const std::vector<double> row(poses.begin() + i * per_state, poses.begin() + (i + 1) * per_state);
    ExpectNear(row, CorePoses(*core_, states[i]), "state " + std::to_string(i));
    EXPECT_TRUE(response.within_limits(static_cast<int>(i)));
  }
  // One state by `state`, and by name: the same poses.
  v1::GetLinkPosesRequest one;
  one.set_scene_id("default");
  for (size_t j = 0; j < states[3].size(); ++j) {
    one.mutable_state()->add_joint_names(core_->robot().active_joint_names()[j]);
    one.mutable_state()->add_positions(states[3][j]);
  }
  v1::GetLinkPosesResponse single;
  ASSERT_TRUE(stub_->GetLinkPoses(Context().get(), one, &single).ok());
  EXPECT_EQ(single.count(), 1u);
  ExpectNear(Unpack(single.poses_f64le()), CorePoses(*core_, states[3]), "named state");
}

TEST_F(ServiceTest, LinkPosesRefuseBadRequestsNamingThem) {
  const int dof = core_->dof();
  struct Case {
    std::string what;
    v1::GetLinkPosesRequest request;
    grpc::StatusCode code;
    std::string words;
  };
  std::vector<Case> cases;
  auto base = [] {
    v1::GetLinkPosesRequest r;
    r.set_scene_id("default");
    return r;
  };
  {
    Case c{"NaN", base(), grpc::StatusCode::INVALID_ARGUMENT, "state"};
    for (int j = 0; j < dof; ++j) c.request.mutable_state()->add_positions(j == 1 ? std::nan("") : 0.0);
    cases.push_back(c);
  }
  {
    Case c{"joint count", base(), grpc::StatusCode::INVALID_ARGUMENT, "state"};
    for (int j = 0; j <= dof; ++j) c.request.mutable_state()->add_positions(0.0);
    cases.push_back(c);
  }
  {
    Case c{"batch width", base(), grpc::StatusCode::INVALID_ARGUMENT, "states"};
    *c.request.mutable_states() = Repeated({std::vector<double>(static_cast<size_t>(dof) - 1, 0.0)});
    cases.push_back(c);
  }
  {
    Case c{"neither", base(), grpc::StatusCode::INVALID_ARGUMENT, "give state"};
    cases.push_back(c);
  }
  {
    Case c{"both", base(), grpc::StatusCode::INVALID_ARGUMENT, "not both"};
    c.request.mutable_state()->add_positions(0.0);
    c.request.mutable_states()->set_width(1);
    cases.push_back(c);
  }
  {
    Case c{"unknown scene", base(), grpc::StatusCode::NOT_FOUND, "no-such-scene"};
    c.request.set_scene_id("no-such-scene");
    for (int j = 0; j < dof; ++j) c.request.mutable_state()->add_positions(0.0);
    cases.push_back(c);
  }
  {
    Case c{"batch limit", base(), grpc::StatusCode::RESOURCE_EXHAUSTED, "--max-batch-states"};
    c.request.mutable_states()->set_width(static_cast<uint32_t>(dof));
    c.request.mutable_states()->set_count(static_cast<uint32_t>(kTestMaxBatchStates + 1));
    c.request.mutable_states()->set_positions_f64le(
        std::string(static_cast<size_t>(kTestMaxBatchStates + 1) * static_cast<size_t>(dof) * 8, '\0'));
    cases.push_back(c);
  }
  {
    // Within the batch limit, but the poses would not fit in a response.
    const int64_t n = kTestMaxMessageBytes / (core_->robot().num_links() * kPose * 8) + 1;
    ASSERT_LE(n, kTestMaxBatchStates);
    Case c{"response size", base(), grpc::StatusCode::RESOURCE_EXHAUSTED, "--max-message-bytes"};
    c.request.mutable_states()->set_width(static_cast<uint32_t>(dof));
    c.request.mutable_states()->set_count(static_cast<uint32_t>(n));
    c.request.mutable_states()->set_positions_f64le(std::string(static_cast<size_t>(n * dof * 8), '\0'));
    cases.push_back(c);
  }
  for (const Case& c : cases) {
    v1::GetLinkPosesResponse response;
    const grpc::Status status = stub_->GetLinkPoses(Context().get(), c.request, &response);
    EXPECT_EQ(status.error_code(), c.code) << c.what << ": " << status.error_message();
    EXPECT_NE(status.error_message().find(c.words), std::string::npos) << c.what << ": " << status.error_message();
  }
}

TEST_F(ServiceTest, SceneGeometryHoldsTheScenesMeshesInTheirFrames) {
  v1::GetSceneGeometryRequest request;
  request.set_scene_id("default");
  v1::GetSceneGeometryResponse response;
  const grpc::Status status = stub_->GetSceneGeometry(Context().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const core::RobotModel& robot = core_->robot();
  ASSERT_EQ(response.links_size(), robot.num_links());
  int64_t triangles = 0;
  for (int k = 0; k < robot.num_links(); ++k) {
    const v1::GeometryGroup& group = response.links(k);
    const core::Link& link = robot.link(k);
    EXPECT_EQ(group.name(), link.name);
    ASSERT_EQ(group.parts_size(), static_cast<int>(link.geometries.size())) << link.name;
    for (int i = 0; i < group.parts_size(); ++i) {
      const v1::GeometryPart& part = group.parts(i);
      const core::LinkGeometry& g = link.geometries[static_cast<size_t>(i)];
      auto X = ToRigidTransform(part.pose(), "pose");
      ASSERT_TRUE(X.ok());
      EXPECT_TRUE(X.value().p.isApprox(g.X_LG.p, 1e-12) || g.X_LG.p.norm() < 1e-15) << link.name;
      EXPECT_TRUE(X.value().R.isApprox(g.X_LG.R, 1e-12)) << link.name;
      if (g.type == core::ShapeType::kMesh) {
        const core::TriangleMesh& mesh = g.mesh->mesh();
        EXPECT_EQ(part.shape(), "mesh");
        ASSERT_EQ(part.mesh().vertices_size(), static_cast<int>(3 * mesh.vertices.size()));
        ASSERT_EQ(part.mesh().triangles_size(), static_cast<int>(3 * mesh.triangles.size()));
        for (size_t v = 0; v < mesh.vertices.size(); v += 97) {
          EXPECT_EQ(part.mesh().vertices(static_cast<int>(3 * v + 2)), mesh.vertices[v].z());
        }
      }
      triangles += part.mesh().triangles_size() / 3;
    }
  }
  ASSERT_EQ(response.objects_size(), static_cast<int>(core_->objects().size()));
  for (const v1::GeometryGroup& object : response.objects()) {
    for (const v1::GeometryPart& part : object.parts()) {
      triangles += part.mesh().triangles_size() / 3;
      const auto vertices = static_cast<uint32_t>(part.mesh().vertices_size() / 3);
      for (uint32_t index : part.mesh().triangles()) EXPECT_LT(index, vertices);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(response.triangles()), triangles);
  EXPECT_EQ(response.hull_parts(), 0u);

  // A cap below the meshes' triangles: the largest go as hulls; a cap no hull fits: refused, naming it.
  request.set_max_triangles(response.triangles() / 3);
  v1::GetSceneGeometryResponse capped;
  ASSERT_TRUE(stub_->GetSceneGeometry(Context().get(), request, &capped).ok());
  EXPECT_LE(capped.triangles(), response.triangles() / 3);
  EXPECT_GT(capped.hull_parts(), 0u);
  request.set_max_triangles(12);
  const grpc::Status refused = stub_->GetSceneGeometry(Context().get(), request, &capped);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.error_message().find("max_triangles"), std::string::npos) << refused.error_message();
}

TEST_F(ServiceTest, PlanTimeStampsFollowTheVelocityLimits) {
  v1::PlanRequest request;
  request.set_scene_id("default");
  const std::vector<double> goal = {1.0, 0.4, 0.2, -0.4, 0.3, 1.0};
  ASSERT_EQ(core_->dof(), static_cast<int>(goal.size()));
  *request.mutable_start() = Positions(std::vector<double>(goal.size(), 0.0));
  *request.mutable_goal() = Positions(goal);
  request.set_time_limit(10.0);
  request.set_seed(7);
  v1::PlanResponse response;
  const grpc::Status status = stub_->Plan(Context().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.outcome(), v1::PLAN_OUTCOME_SOLVED) << response.message();
  const std::vector<double> path = Unpack(response.path().positions_f64le());
  const size_t dof = goal.size(), rows = path.size() / dof;
  ASSERT_EQ(response.time_from_start_size(), static_cast<int>(rows));
  double t = 0.0;
  for (size_t i = 0; i < rows; ++i) {
    if (i > 0) {
      double segment = 0.0;
      for (size_t j = 0; j < dof; ++j) {
        const double v = core_->robot().joint(core_->robot().active_joints()[j]).velocity_limit;
        ASSERT_GT(v, 0.0);
        segment = std::max(segment, std::abs(path[i * dof + j] - path[(i - 1) * dof + j]) / v);
      }
      t += segment;
    }
    EXPECT_DOUBLE_EQ(response.time_from_start(static_cast<int>(i)), t) << "row " << i;
  }
  // SceneInfo reports the same limits.
  v1::GetSceneRequest get;
  get.set_scene_id("default");
  v1::GetSceneResponse info;
  ASSERT_TRUE(stub_->GetScene(Context().get(), get, &info).ok());
  const std::vector<double> limits = planners::VelocityLimits(core_->robot());
  for (int j = 0; j < info.scene().limits_size(); ++j) {
    EXPECT_EQ(info.scene().limits(j).velocity(), limits[static_cast<size_t>(j)]);
  }
}

TEST(TimeFromStart, RuleAndErrors) {
  PROX_REQUIRE_DIR(proximity::testing::DartUrdfDir(), "Debian dart-doc's URDF folder");
  auto d = DefaultSceneDescription();
  ASSERT_TRUE(d.ok()) << d.error().message;
  const core::RobotModel& robot = *d.value().robot;
  const auto dof = static_cast<size_t>(robot.num_positions());
  std::vector<double> path(3 * dof, 0.0);
  path[dof] = path[2 * dof] = 1.0;  // the first joint moves 1 rad, then nothing moves
  const double v0 = planners::VelocityLimits(robot)[0];
  auto t = planners::TimeFromStart(robot, path);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t.value().size(), 3u);
  EXPECT_DOUBLE_EQ(t.value()[1], 1.0 / v0);
  EXPECT_DOUBLE_EQ(t.value()[2], 1.0 / v0);
  path.pop_back();
  EXPECT_FALSE(planners::TimeFromStart(robot, path).ok());
  path.push_back(std::nan(""));
  auto nan = planners::TimeFromStart(robot, path);
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.error().message.find("not finite"), std::string::npos);
}

// ---- The viewer on the metrics port ----------------------------------------------------------------

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  EXPECT_TRUE(google::protobuf::util::MessageToJsonString(m, &out).ok());
  return out;
}

TEST_F(ServiceTest, ViewerServesThePageAndForwardsTheApi) {
  httplib::Client http("127.0.0.1", server_->metrics_port());
  auto page = http.Get("/viewer");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->body.find("window.proximityViewer"), std::string::npos);
  EXPECT_NE(page->body.find("/viewer/three.min.js"), std::string::npos);
  auto three = http.Get("/viewer/three.min.js");
  ASSERT_TRUE(three);
  EXPECT_TRUE(three->status == 200 || three->status == 404) << three->status;
  if (three->status == 200) {
    EXPECT_NE(three->body.find("REVISION"), std::string::npos);
  }

  // GetLinkPoses through the JSON API: the same poses as the core's.
  std::mt19937_64 rng(5);
  const std::vector<double> q = RandomState(rng, core_->robot());
  v1::GetLinkPosesRequest request;
  request.set_scene_id("default");
  *request.mutable_state() = Positions(q);
  auto reply = http.Post("/viewer/api/GetLinkPoses", Json(request), "application/json");
  ASSERT_TRUE(reply);
  ASSERT_EQ(reply->status, 200) << reply->body;
  v1::GetLinkPosesResponse response;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(reply->body, &response).ok()) << reply->body;
  ExpectNear(Unpack(response.poses_f64le()), CorePoses(*core_, q), "viewer api");
  EXPECT_NE(reply->body.find("\"link_names\""), std::string::npos) << "field names as in the .proto";

  // Errors: the gRPC code's HTTP status, with the service's message.
  struct Case {
    std::string path, body;
    int status;
    std::string words;
  };
  for (const Case& c : std::vector<Case>{
           {"/viewer/api/GetLinkPoses", R"({"scene_id": "default", "state": {"positions": ["NaN", 0, 0, 0, 0, 0]}})",
            400, "state"},
           {"/viewer/api/GetLinkPoses", R"({"scene_id": "nope", "state": {"positions": [0, 0, 0, 0, 0, 0]}})", 404,
            "nope"},
           {"/viewer/api/GetLinkPoses", R"({"scene_id": )", 400, "request body"},
           {"/viewer/api/GetLinkPoses", R"({"scene_id": "default", "bogus": 1})", 400, "request body"},
           {"/viewer/api/CreateScene", R"({})", 501, "GetLinkPoses"},
       }) {
    auto r = http.Post(c.path, c.body, "application/json");
    ASSERT_TRUE(r) << c.path;
    EXPECT_EQ(r->status, c.status) << c.body << ": " << r->body;
    EXPECT_NE(r->body.find(c.words), std::string::npos) << c.body << ": " << r->body;
  }
  // The forwarded calls are counted as the service's own.
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("grpc_method=\"GetLinkPoses\",grpc_type=\"unary\",grpc_code=\"InvalidArgument\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics->body.find("proximity_queries_total{kind=\"poses\"} 1"), std::string::npos);
}

TEST(ViewerAuth, TheApiAsksForTheServersToken) {
  ConfigureLogging(LogFormat::kText, spdlog::level::warn);
  PROX_REQUIRE_DIR(proximity::testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's robot)");
  ServerOptions options = TestOptions();
  options.auth_token = "0123456789abcdef-token";
  auto started = ProximityServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.error().message;
  httplib::Client http("127.0.0.1", started.value()->metrics_port());
  const std::string body = R"({"scene_id": "default"})";
  auto refused = http.Post("/viewer/api/GetScene", body, "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401) << refused->body;
  httplib::Headers wrong = {{"Authorization", "Bearer not-the-token-at-all"}};
  auto wrong_reply = http.Post("/viewer/api/GetScene", wrong, body, "application/json");
  ASSERT_TRUE(wrong_reply);
  EXPECT_EQ(wrong_reply->status, 401);
  httplib::Headers right = {{"Authorization", "Bearer " + options.auth_token}};
  auto ok = http.Post("/viewer/api/GetScene", right, body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_NE(ok->body.find("\"robot_name\""), std::string::npos);
}

// A batch stops between configurations once the call's time is up (here --max-call-seconds, 1 ns from
// the first poll), answering DEADLINE_EXCEEDED with how far it got, never a partial answer.
TEST(LinkPosesDeadline, ABatchStopsAtTheCallsDeadline) {
  ConfigureLogging(LogFormat::kText, spdlog::level::warn);
  PROX_REQUIRE_DIR(proximity::testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's robot)");
  ServerOptions options = TestOptions();
  options.limits.max_call_seconds = 1e-9;
  auto started = ProximityServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.error().message;
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(started.value()->port()),
                                     grpc::InsecureChannelCredentials());
  auto stub = v1::ProximityService::NewStub(channel);
  auto d = DefaultSceneDescription();
  ASSERT_TRUE(d.ok());
  const int dof = d.value().robot->num_positions();
  v1::GetLinkPosesRequest request;
  request.set_scene_id("default");
  request.mutable_states()->set_width(static_cast<uint32_t>(dof));
  request.mutable_states()->set_count(5000);
  request.mutable_states()->set_positions_f64le(std::string(5000 * static_cast<size_t>(dof) * 8, '\0'));
  v1::GetLinkPosesResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  const grpc::Status status = stub->GetLinkPoses(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_NE(status.error_message().find("of 5000 configurations"), std::string::npos) << status.error_message();
  EXPECT_TRUE(response.poses_f64le().empty());
}

TEST(ViewerOff, NoViewerRoutesWithoutTheViewer) {
  ConfigureLogging(LogFormat::kText, spdlog::level::warn);
  PROX_REQUIRE_DIR(proximity::testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's robot)");
  ServerOptions options = TestOptions();
  options.viewer = false;
  auto started = ProximityServer::Start(options);
  ASSERT_TRUE(started.ok()) << started.error().message;
  httplib::Client http("127.0.0.1", started.value()->metrics_port());
  auto page = http.Get("/viewer");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 404);
  auto api = http.Post("/viewer/api/ListScenes", "{}", "application/json");
  ASSERT_TRUE(api);
  EXPECT_EQ(api->status, 404);
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
}

}  // namespace
}  // namespace proximity::server::testing
