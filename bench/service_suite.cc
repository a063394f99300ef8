// Suite service: the cost of going through proximityd. An in-process server on loopback (the built-in
// KR5 workcell) beside the same work done directly by the core in the same process:
//   clear_batch_packed     CLEAR over 10,000-state CheckStates batches (packed float64), per state;
//                          in process: the same batch on a pool of the same size.
//   check_state_unary      one unary CheckState per state, sequential: latency p50 / p99 per call;
//                          in process: one Scene::CheckState.
//   validate_paths_stream  many short paths in one streamed ValidatePaths, per path; in process: the
//                          same paths through Scene::CheckPath on a pool of the same size.
// "ours" is the service, "peer" the in-process core; ratio = peer / ours (1 means no overhead). The
// answers must agree ("agree" counts the samples whose answers all match).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <random>
#include <thread>

#include "bench_util.h"
#include "proximity/core/scene/scene.h"
#include "proximity/v1/proximity.grpc.pb.h"
#include "server/default_scene.h"
#include "server/log.h"
#include "server/server.h"
#include "server/worker_pool.h"

namespace proximity::bench {
namespace {

namespace v1 = ::proximity::v1;
constexpr char kSuite[] = "service";
constexpr char kPeer[] = "in-process core (same pool size)";

std::vector<double> RandomState(std::mt19937_64& rng, const core::RobotModel& robot) {
  std::vector<double> q(static_cast<size_t>(robot.num_positions()));
  for (size_t j = 0; j < q.size(); ++j) {
    q[j] = std::uniform_real_distribution<double>(robot.lower_limits()[j], robot.upper_limits()[j])(rng);
  }
  return q;
}

std::string PackRows(const std::vector<std::vector<double>>& rows) {
  std::string bytes;
  for (const auto& r : rows) bytes.append(reinterpret_cast<const char*>(r.data()), r.size() * sizeof(double));
  return bytes;
}

std::unique_ptr<grpc::ClientContext> Context() {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
  return c;
}

struct Fixture {
  std::unique_ptr<server::ProximityServer> server;
  std::unique_ptr<v1::ProximityService::Stub> stub;
  std::shared_ptr<const core::Scene> scene;
  int threads = 1;
};

int ClearBatches(const SuiteOptions& options, Fixture& f, std::mt19937_64& rng) {
  const int batches = options.quick ? 5 : 20, per_batch = 10'000;
  server::WorkerPool pool(f.threads);
  std::vector<double> ours, peer;
  Work work;
  int agree = 0;
  for (int b = 0; b < batches; ++b) {
    std::vector<std::vector<double>> states;
    for (int i = 0; i < per_batch; ++i) states.push_back(RandomState(rng, f.scene->robot()));
    v1::CheckStatesRequest request;
    request.set_scene_id("default");
    request.mutable_states()->set_positions_f64le(PackRows(states));
    request.mutable_states()->set_width(static_cast<uint32_t>(states[0].size()));
    v1::CheckStatesResponse response;
    const double t0 = Now();
    const grpc::Status status = f.stub->CheckStates(Context().get(), request, &response);
    const double t1 = Now();
    if (!status.ok()) {
      std::cerr << "service: CheckStates failed: " << status.error_message() << "\n";
      return 1;
    }
    // The same batch in process, split the way the service splits it.
    std::vector<char> free(states.size());
    std::vector<core::SceneCache> caches(static_cast<size_t>(pool.slots()));
    const int64_t chunk = 1024;
    const double t2 = Now();
    pool.ParallelFor((per_batch + chunk - 1) / chunk, [&](int64_t c, int slot) {
      for (int64_t i = c * chunk; i < std::min<int64_t>(per_batch, (c + 1) * chunk); ++i) {
        const core::Result<core::StateResult> r =
            f.scene->CheckState(states[static_cast<size_t>(i)], &caches[static_cast<size_t>(slot)]);
        free[static_cast<size_t>(i)] = r.ok() && r.value().free;
      }
    });
    const double t3 = Now();
    ours.push_back((t1 - t0) * 1e6 / per_batch);
    peer.push_back((t3 - t2) * 1e6 / per_batch);
    bool same = response.free_size() == per_batch;
    for (int i = 0; same && i < per_batch; ++i) same = response.free(i) == (free[static_cast<size_t>(i)] != 0);
    agree += same ? 1 : 0;
    work.bv_tests += static_cast<double>(response.stats().bv_tests()) / per_batch;
    work.triangle_tests += static_cast<double>(response.stats().triangle_tests()) / per_batch;
    ++work.queries;
  }
  JsonLine line = CaseLine(kSuite, "clear_batch_packed", ours, work, kPeer, peer);
  line.Add("agree", static_cast<int64_t>(agree)).Add("states_per_batch", per_batch).Add("threads", f.threads);
  line.Add("ours_states_per_s", 1e6 / Median(ours)).Add("peer_states_per_s", 1e6 / Median(peer));
  line.Print();
  return agree == batches ? 0 : 1;
}

int UnaryCheckState(const SuiteOptions& options, Fixture& f, std::mt19937_64& rng) {
  const int n = options.quick ? 2000 : 20'000;
  std::vector<double> ours, peer;
  Work work;
  int agree = 0;
  core::SceneCache cache;
  v1::CheckStateRequest request;
  request.set_scene_id("default");
  v1::CheckStateResponse response;
  for (int i = 0; i < n; ++i) {
    const auto q = RandomState(rng, f.scene->robot());
    request.mutable_state()->mutable_positions()->Assign(q.begin(), q.end());
    const double t0 = Now();
    const grpc::Status status = f.stub->CheckState(Context().get(), request, &response);
    const double t1 = Now();
    const core::StateResult r = f.scene->CheckState(q, &cache).value_or({});
    const double t2 = Now();
    if (!status.ok()) {
      std::cerr << "service: CheckState failed: " << status.error_message() << "\n";
      return 1;
    }
    ours.push_back((t1 - t0) * 1e6);
    peer.push_back((t2 - t1) * 1e6);
    agree += response.free() == r.free ? 1 : 0;
    work.Add(r.stats);
  }
  JsonLine line = CaseLine(kSuite, "check_state_unary", ours, work, kPeer, peer);
  line.Add("agree", static_cast<int64_t>(agree)).Add("ours_p99_us", Percentile(ours, 0.99));
  line.Add("overhead_us", Median(ours) - Median(peer));
  line.Print();
  return agree == n ? 0 : 1;
}

int ValidatePathsStream(const SuiteOptions& options, Fixture& f, std::mt19937_64& rng) {
  const int paths = options.quick ? 200 : 1000, waypoints = 10, reps = options.quick ? 3 : 5;
  std::vector<std::vector<double>> flat(static_cast<size_t>(paths));
  v1::ValidatePathsRequest request;
  request.set_scene_id("default");
  for (int p = 0; p < paths; ++p) {
    std::vector<std::vector<double>> rows = {RandomState(rng, f.scene->robot())};
    for (int w = 1; w < waypoints; ++w) {
      auto q = rows.back();
      for (auto& v : q) v += std::uniform_real_distribution<double>(-0.1, 0.1)(rng);
      rows.push_back(q);
    }
    for (const auto& r : rows) flat[static_cast<size_t>(p)].insert(flat[static_cast<size_t>(p)].end(), r.begin(), r.end());
    v1::Configurations* path = request.add_paths();
    path->set_positions_f64le(PackRows(rows));
    path->set_width(static_cast<uint32_t>(rows[0].size()));
  }
  server::WorkerPool pool(f.threads);
  std::vector<double> ours, peer;
  Work work;
  int agree = 0;
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<int> core_segment(static_cast<size_t>(paths));
    std::vector<core::SceneCache> caches(static_cast<size_t>(pool.slots()));
    const double t2 = Now();
    pool.ParallelFor(paths, [&](int64_t p, int slot) {
      const core::PathResult r =
          f.scene->CheckPath(flat[static_cast<size_t>(p)], {}, &caches[static_cast<size_t>(slot)]).value_or({});
      core_segment[static_cast<size_t>(p)] = r.segment;
    });
    const double t3 = Now();
    std::vector<int> segment(static_cast<size_t>(paths), -2);
    auto context = Context();
    const double t0 = Now();
    auto reader = f.stub->ValidatePaths(context.get(), request);
    v1::ValidatePathsResponse response;
    while (reader->Read(&response)) {
      segment[response.index()] = response.result().segment();
      work.bv_tests += static_cast<double>(response.stats().bv_tests());
      work.triangle_tests += static_cast<double>(response.stats().triangle_tests());
      ++work.queries;
    }
    const grpc::Status status = reader->Finish();
    const double t1 = Now();
    if (!status.ok()) {
      std::cerr << "service: ValidatePaths failed: " << status.error_message() << "\n";
      return 1;
    }
    ours.push_back((t1 - t0) * 1e6 / paths);
    peer.push_back((t3 - t2) * 1e6 / paths);
    agree += segment == core_segment ? 1 : 0;
  }
  JsonLine line = CaseLine(kSuite, "validate_paths_stream", ours, work, kPeer, peer);
  line.Add("agree", static_cast<int64_t>(agree)).Add("paths", paths).Add("waypoints", waypoints);
  line.Add("ours_paths_per_s", 1e6 / Median(ours)).Add("peer_paths_per_s", 1e6 / Median(peer));
  line.Print();
  return agree == reps ? 0 : 1;
}

}  // namespace

int RunService(const SuiteOptions& options) {
  server::ConfigureLogging(server::LogFormat::kText, spdlog::level::warn);
  Fixture f;
  f.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  server::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.metrics_listen = "";
  so.threads = f.threads;
  auto started = server::ProximityServer::Start(so);
  if (!started.ok()) {
    std::cerr << "service needs the default scene's robot (Debian dart-doc): " << started.error().message << "\n";
    return 1;
  }
  f.server = std::move(started).value();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  f.stub = v1::ProximityService::NewStub(grpc::CreateCustomChannel(
      "127.0.0.1:" + std::to_string(f.server->port()), grpc::InsecureChannelCredentials(), args));
  auto d = server::DefaultSceneDescription();
  auto scene = d.ok() ? core::Scene::Build(std::move(d).value()) : core::Result<std::shared_ptr<const core::Scene>>(d.error());
  if (!scene.ok()) {
    std::cerr << "service: " << scene.error().message << "\n";
    return 1;
  }
  f.scene = std::move(scene).value();
  std::mt19937_64 rng(options.seed);
  int failures = 0;
  failures += ClearBatches(options, f, rng);
  failures += UnaryCheckState(options, f, rng);
  failures += ValidatePathsStream(options, f, rng);
  return failures == 0 ? 0 : 1;
}

}  // namespace proximity::bench
