#pragma once
// An in-process proximityd (real gRPC over loopback on an ephemeral port) with a stub, the default
// scene built in process by the core for reference, and helpers to build requests and compare the
// service's answers with the core's.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/test_util.h"
#include "proximity/core/scene/scene.h"
#include "proximity/v1/proximity.grpc.pb.h"
#include "proximity/default_scene/default_scene.h"
#include "server/log.h"
#include "server/server.h"

namespace proximity::server::testing {

namespace v1 = ::proximity::v1;

/// Waits up to `timeout` for `done` to hold (polling every 5 ms); whether it did.
template <class F>
bool Eventually(F done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}
using proximity::testing::Cases;
using scenes::DefaultScene;
using scenes::DefaultSceneDescription;
using scenes::DefaultSceneSpec;
using scenes::PoseFromQuaternion;

/// Sanitizer builds: gRPC moves large messages very slowly under TSan (a 10 MB request takes minutes to
/// parse), so the tests that exceed limits use smaller ones there.
inline constexpr bool kSanitized = proximity::testing::kSanitizedSlowdown != 1;
inline constexpr int64_t kTestMaxBatchStates = kSanitized ? 50'000 : 200'000;
inline constexpr int64_t kTestMaxMessageBytes = kSanitized ? 4 << 20 : 16 << 20;

/// Options of the test server: small limits so that exceeding them is cheap.
inline ServerOptions TestOptions() {
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "127.0.0.1:0";
  o.threads = 2;
  o.max_message_bytes = kTestMaxMessageBytes;
  o.limits.max_batch_states = kTestMaxBatchStates;
  o.limits.max_path_waypoints = 5'000;
  o.reflection = true;  // the operations test lists services through it
  // The folders the tests name server files in; requests may read nothing else.
  for (const std::string& dir : {proximity::testing::TestDataDir(), proximity::testing::SharedDataDir(),
                                 proximity::testing::DartUrdfDir()}) {
    if (!dir.empty()) o.allow_path_roots.push_back(dir);
  }
  return o;
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ConfigureLogging(LogFormat::kText, spdlog::level::warn);
    PROX_REQUIRE_DIR(proximity::testing::DartUrdfDir(), "Debian dart-doc's URDF folder (the default scene's robot)");
    auto started = ProximityServer::Start(TestOptions());
    ASSERT_TRUE(started.ok()) << started.error().message;
    server_ = std::move(started).value();
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(server_->port()),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = v1::ProximityService::NewStub(channel_);
    auto d = DefaultSceneDescription();
    ASSERT_TRUE(d.ok()) << d.error().message;
    auto scene = core::Scene::Build(std::move(d).value());
    ASSERT_TRUE(scene.ok()) << scene.error().message;
    core_ = std::move(scene).value();
  }

  /// Both default scenes' self-clearance maps fill in the background: a test that compares work counts
  /// of the daemon's answers with the core's waits for them first (the counts match only on maps in
  /// the same state: filled) and compares them when this returns true. Under a sanitizer, where filling
  /// both scenes' maps takes a minute, it does not wait and the test compares the answers alone (they
  /// do not depend on what the maps hold).
  static bool AwaitFilledMapsToCompareCounts() {
    if (proximity::testing::kSanitizedSlowdown > 1) return false;
    core::AwaitSelfClearanceFill();
    return true;
  }

  void TearDown() override {
    stub_.reset();
    channel_.reset();
    server_.reset();
  }

  /// A client context with a generous deadline (a hung server fails the test instead of hanging it).
  static std::unique_ptr<grpc::ClientContext> Context(std::chrono::milliseconds deadline = std::chrono::seconds(120)) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + deadline);
    return c;
  }

  std::unique_ptr<ProximityServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ProximityService::Stub> stub_;
  std::shared_ptr<const core::Scene> core_;  // the default scene, built in process
};

/// Uniform within the joint limits (continuous joints: [-pi, pi]).
inline std::vector<double> RandomState(std::mt19937_64& rng, const core::RobotModel& robot) {
  std::vector<double> q(static_cast<size_t>(robot.num_positions()));
  for (int i = 0; i < robot.num_positions(); ++i) {
    double lo = robot.lower_limits()[static_cast<size_t>(i)], hi = robot.upper_limits()[static_cast<size_t>(i)];
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = -M_PI, hi = M_PI;
    q[static_cast<size_t>(i)] = std::uniform_real_distribution<double>(lo, hi)(rng);
  }
  return q;
}

inline std::vector<std::vector<double>> RandomStates(std::mt19937_64& rng, const core::RobotModel& robot, int n) {
  std::vector<std::vector<double>> out;
  for (int i = 0; i < n; ++i) out.push_back(RandomState(rng, robot));
  return out;
}

inline v1::JointPositions Positions(const std::vector<double>& q) {
  v1::JointPositions p;
  for (double v : q) p.add_positions(v);
  return p;
}

/// Rows as repeated doubles, in the scene's order.
inline v1::Configurations Repeated(const std::vector<std::vector<double>>& rows) {
  v1::Configurations c;
  for (const auto& r : rows)
    for (double v : r) c.add_positions(v);
  if (!rows.empty()) c.set_width(static_cast<uint32_t>(rows[0].size()));
  return c;
}

/// Rows as packed little-endian float64, in the scene's order.
inline v1::Configurations Packed(const std::vector<std::vector<double>>& rows) {
  v1::Configurations c;
  std::string bytes;
  for (const auto& r : rows) bytes.append(reinterpret_cast<const char*>(r.data()), r.size() * sizeof(double));
  c.set_positions_f64le(std::move(bytes));
  if (!rows.empty()) c.set_width(static_cast<uint32_t>(rows[0].size()));
  return c;
}

/// The names the service gives a core contact.
inline void ExpectSamePair(const core::Scene& scene, const core::StateContact& c, const v1::PairId& p,
                           const std::string& where) {
  EXPECT_EQ(p.self(), c.self) << where;
  EXPECT_EQ(p.robot(), c.Name(scene)) << where;
  EXPECT_EQ(p.other(), c.OtherName(scene)) << where;
}

inline void ExpectSameMotion(const core::Scene& scene, const core::MotionResult& c, const v1::MotionResult& r,
                             const std::string& where) {
  EXPECT_EQ(r.free(), c.free) << where;
  EXPECT_EQ(r.t_free(), c.t_free) << where;
  EXPECT_EQ(r.t_collide(), c.t_collide) << where;
  EXPECT_EQ(r.undecided(), c.undecided) << where;
  if (!c.free) ExpectSamePair(scene, c.contact, r.contact(), where);
}

/// Fills a wire pose from a position and a (w, x, y, z) quaternion.
inline v1::Pose WirePose(const core::Vec3& p, const Eigen::Quaterniond& q = Eigen::Quaterniond::Identity()) {
  v1::Pose pose;
  pose.mutable_position()->set_x(p.x());
  pose.mutable_position()->set_y(p.y());
  pose.mutable_position()->set_z(p.z());
  pose.mutable_orientation()->set_x(q.x());
  pose.mutable_orientation()->set_y(q.y());
  pose.mutable_orientation()->set_z(q.z());
  pose.mutable_orientation()->set_w(q.w());
  return pose;
}

// The planar two-link arm (tests/data/robots) beside a 0.2 m box named "block" at (x, 0.3, 0.1).
inline v1::CreateSceneRequest PlanarRequest(double x = 1.2) {
  const std::string dir = proximity::testing::TestDataDir() + "/robots/";
  v1::CreateSceneRequest r;
  r.mutable_robot()->set_urdf(proximity::testing::ReadFile(dir + "planar_2link.urdf"));
  v1::CollisionObject* o = r.add_objects();
  o->set_id("block");
  *o->mutable_pose() = WirePose({x, 0.3, 0.1});
  auto* size = o->add_parts()->mutable_shape()->mutable_box()->mutable_size();
  size->set_x(0.2);
  size->set_y(0.2);
  size->set_z(0.2);
  return r;
}

}  // namespace proximity::server::testing
