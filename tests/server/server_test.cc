// Operations (server.cc, metrics.cc, http_server.cc): health, reflection, metrics, port clashes, deadlines,
// cancellation and draining.
#include <future>
#include <thread>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "tests/server/service_fixture.h"

// Last: httplib pulls in <resolv.h>, whose _res macro breaks Eigen headers included after it.
#include <httplib.h>

namespace proximity::server::testing {
namespace {

using namespace std::chrono_literals;


TEST_F(ServiceTest, HealthAnswersServing) {
  auto health = grpc::health::v1::Health::NewStub(channel_);
  for (const std::string service : {"", "proximity.v1.ProximityService"}) {
    grpc::health::v1::HealthCheckRequest request;
    request.set_service(service);
    grpc::health::v1::HealthCheckResponse response;
    const grpc::Status status = health->Check(Context().get(), request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING) << "'" << service << "'";
  }
}

// Reflection lists the services and resolves every one of them, grpc.health.v1.Health included.
TEST_F(ServiceTest, ReflectionDescribesTheServiceAndHealth) {
  namespace refl = grpc::reflection::v1alpha;
  auto stub = refl::ServerReflection::NewStub(channel_);
  auto context = Context();
  auto stream = stub->ServerReflectionInfo(context.get());
  refl::ServerReflectionRequest list;
  list.set_list_services("");
  ASSERT_TRUE(stream->Write(list));
  refl::ServerReflectionResponse response;
  ASSERT_TRUE(stream->Read(&response));
  std::vector<std::string> services;
  for (const auto& s : response.list_services_response().service()) services.push_back(s.name());
  EXPECT_NE(std::find(services.begin(), services.end(), "proximity.v1.ProximityService"), services.end());
  EXPECT_NE(std::find(services.begin(), services.end(), "grpc.health.v1.Health"), services.end());
  for (const std::string& symbol : services) {
    refl::ServerReflectionRequest find;
    find.set_file_containing_symbol(symbol);
    ASSERT_TRUE(stream->Write(find));
    ASSERT_TRUE(stream->Read(&response));
    EXPECT_FALSE(response.has_error_response()) << symbol << ": " << response.error_response().error_message();
    EXPECT_GT(response.file_descriptor_response().file_descriptor_proto_size(), 0) << symbol;
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(ServiceTest, MetricsAreServedInPrometheusTextFormat) {
  // One success and one failure of CheckState, then scrape.
  v1::CheckStateRequest request;
  request.set_scene_id("default");
  *request.mutable_state() = Positions(std::vector<double>(6, 0.0));
  v1::CheckStateResponse response;
  ASSERT_TRUE(stub_->CheckState(Context().get(), request, &response).ok());
  EXPECT_TRUE(response.free()) << "the default scene's home state is free";
  request.set_scene_id("missing");
  ASSERT_EQ(stub_->CheckState(Context().get(), request, &response).error_code(), grpc::StatusCode::NOT_FOUND);

  httplib::Client client("127.0.0.1", server_->metrics_port());
  auto result = client.Get("/metrics");
  ASSERT_TRUE(result) << "no answer from the metrics port " << server_->metrics_port();
  EXPECT_EQ(result->status, 200);
  EXPECT_NE(result->get_header_value("Content-Type").find("text/plain; version=0.0.4"), std::string::npos);
  const std::string& body = result->body;
  const std::string labels = "grpc_service=\"proximity.v1.ProximityService\",grpc_method=\"CheckState\",grpc_type=\"unary\"";
  for (const std::string& line :
       {"grpc_server_started_total{" + labels + "} 2", "grpc_server_handled_total{" + labels + ",grpc_code=\"OK\"} 1",
        "grpc_server_handled_total{" + labels + ",grpc_code=\"NotFound\"} 1",
        "grpc_server_handling_seconds_bucket{" + labels + ",le=\"+Inf\"} 2",
        "grpc_server_handling_seconds_count{" + labels + "} 2", std::string("proximity_queries_total{kind=\"clear\"} 1"),
        std::string("proximity_work_total{counter=\"states\"} 1"), std::string("proximity_scenes_loaded 1"),
        std::string("# TYPE grpc_server_handling_seconds histogram")}) {
    EXPECT_NE(body.find(line + "\n"), std::string::npos) << "missing: " << line << "\n" << body.substr(0, 2000);
  }
}

TEST_F(ServiceTest, ASecondServerOnTheSamePortFails) {
  ServerOptions o = TestOptions();
  o.listen = "127.0.0.1:" + std::to_string(server_->port());
  o.metrics_listen = "";
  o.default_scene = false;
  auto second = ProximityServer::Start(o);
  ASSERT_FALSE(second.ok()) << "a second server bound port " << server_->port();
  EXPECT_NE(second.error().message.find("cannot listen on " + o.listen), std::string::npos) << second.error().message;
  // The metrics port is checked as well.
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "127.0.0.1:" + std::to_string(server_->metrics_port());
  second = ProximityServer::Start(o);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("metrics"), std::string::npos) << second.error().message;
}

TEST_F(ServiceTest, ALargeBatchStopsAtItsDeadline) {
  std::mt19937_64 rng(40);
  const auto states = RandomStates(rng, core_->robot(), kSanitized ? 10'000 : 200'000);
  v1::CheckStatesRequest request;
  request.set_scene_id("default");
  *request.mutable_states() = Packed(states);
  v1::CheckStatesResponse response;
  // Long enough for the request to arrive, far too short for the whole batch (seconds).
  const grpc::Status status = stub_->CheckStates(Context(300ms).get(), request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  // The server returned without finishing the batch. The client's deadline fires a moment before the
  // server's copy of it, so the server sees either its own deadline pass or the client's cancellation.
  const Metrics& m = server_->metrics();
  const auto stopped = [&] {
    return m.HandledCount(Rpc::kCheckStates, grpc::StatusCode::DEADLINE_EXCEEDED) +
           m.HandledCount(Rpc::kCheckStates, grpc::StatusCode::CANCELLED);
  };
  EXPECT_TRUE(Eventually([&] { return stopped() == m.StartedCount(Rpc::kCheckStates); }, 60s))
      << "the server did not stop the batch at the deadline";
  EXPECT_EQ(m.HandledCount(Rpc::kCheckStates, grpc::StatusCode::OK), 0u);
  // Outside sanitizers the request always arrives in time, so the handler itself saw the deadline.
  if (!kSanitized) {
    EXPECT_EQ(stopped(), 1u);
  }
}

// Paths long and slow to check (a discrete walk at a fine resolution, all free), so that cancelling
// after the first result leaves most of them unchecked.
v1::ValidatePathsRequest SlowPaths(int paths, int waypoints) {
  v1::ValidatePathsRequest request;
  request.set_scene_id("default");
  request.set_mode(v1::MOTION_MODE_DISCRETE);
  request.set_resolution(2e-4 * proximity::testing::kSanitizedSlowdown);
  for (int p = 0; p < paths; ++p) {
    std::vector<std::vector<double>> rows;
    for (int w = 0; w < waypoints; ++w) {
      std::vector<double> q(6, 0.0);
      q[5] = (w % 2 == 0 ? 1.0 : -1.0) * 3.0;  // spin the palm back and forth
      rows.push_back(q);
    }
    *request.add_paths() = Packed(rows);
  }
  return request;
}

TEST_F(ServiceTest, CancellingAValidatePathsStreamStopsIt) {
  const int paths = 200;
  const v1::ValidatePathsRequest request = SlowPaths(paths, 3);
  grpc::ClientContext context;
  auto reader = stub_->ValidatePaths(&context, request);
  v1::ValidatePathsResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_TRUE(response.result().free());
  context.TryCancel();
  int more = 0;
  while (reader->Read(&response)) ++more;
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(Eventually([&] {
    return server_->metrics().HandledCount(Rpc::kValidatePaths, grpc::StatusCode::CANCELLED) == 1;
  })) << "the server kept checking after the client cancelled";
  EXPECT_LT(more, paths / 2);
}

TEST_F(ServiceTest, ShutdownDrainsCallsInFlightAndStopsServing) {
  // A call in flight when shutdown begins finishes normally within the drain time.
  v1::ValidatePathsRequest request = SlowPaths(2, 3);
  auto call = std::async(std::launch::async, [&] {
    auto context = Context();
    auto reader = stub_->ValidatePaths(context.get(), request);
    v1::ValidatePathsResponse response;
    int n = 0;
    while (reader->Read(&response)) ++n;
    return std::make_pair(reader->Finish(), n);
  });
  ASSERT_TRUE(Eventually([&] {
    return server_->metrics().RenderText().find("grpc_server_started_total{grpc_service=\"proximity.v1.ProximityService\","
                                                "grpc_method=\"ValidatePaths\",grpc_type=\"server_stream\"} 1") !=
           std::string::npos;
  }));
  server_->Shutdown(std::chrono::seconds(60));
  const auto [status, n] = call.get();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(n, 2);
  server_->Wait();
  // New calls are refused once it has stopped.
  v1::ListScenesResponse list;
  EXPECT_EQ(stub_->ListScenes(Context(2s).get(), {}, &list).error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace proximity::server::testing
