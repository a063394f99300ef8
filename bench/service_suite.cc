// Suite service: the cost of going through proximityd. An in-process server on loopback (the built-in
// KR5 workcell) beside the same work done directly by the core in the same process:
//   clear_batch_packed     CLEAR over 10,000-state CheckStates batches (packed float64), per state;
//                          in process: the same batch on a pool of the same size.
//   check_state_unary      one unary CheckState per state, sequential: latency p50 / p99 per call;
//                          in process: one Scene::CheckState.
//   validate_paths_stream  many short paths in one streamed ValidatePaths, per path; in process: the
//                          same paths through Scene::CheckPath on a pool of the same size.
//   session_track          distance along a trajectory (small steps), one query per round trip on an open
//                          Session: warm (the session's caches carried from state to state) beside cold
//                          (cold_caches: empty caches every query), unary ComputeDistance calls, and in
//                          process (warm and cold caches); per query, with the ratios between them.
//   session_tracker        clearance tracking over a session along a 1 kHz trajectory (steps of 1e-3 rad,
//                          default track options): one track query per round trip, p50 / p99 per frame,
//                          beside core::Tracker in process on the same frames and the session floor (an
//                          empty batch's round trip, measured in the same run); ratio_to_floor_plus_inprocess
//                          = p50 / (floor p50 + in-process p50), the session's cost beyond its transport
//                          and the tracker's own (target <= 1.5).
//   session_state, session_edge, session_batch64, unary_state, unary_edge
//                          latency per query (p50, p99): one CLEAR or one certified LINK per round trip on
//                          a session, 64 CLEARs per round trip (per query), and the unary calls.
//   remote_plan            RRT-Connect (lazily certified, as the Plan RPC runs it) on the default scene's
//                          problems through proximity::remote over sessions and over unary calls, beside
//                          the same planner and seed in process: median time, solved, time per validity
//                          query, time_ratio = remote (session) median over in-process median.
//   remote_plan_mbm        the same on the MotionBenchMaker Panda problems of ../shared/data (the mbm
//                          suite's loader; each problem's scene sent with CreateScene), with time_ratio
//                          per family too; skipped when the data is absent.
// "ours" is the service, "peer" the in-process core; ratio = peer / ours (1 means no overhead). The
// answers must agree ("agree" counts the samples whose answers all match).
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "bench_util.h"
#include "mbm_data.h"
#include "proximity/clients/remote_validity.h"
#include "proximity/core/contact/tracker.h"
#include "proximity/core/scene/scene.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/v1/proximity.grpc.pb.h"
#include "proximity/default_scene/default_scene.h"
#include "server/convert.h"
#include "server/log.h"
#include "server/scene_store.h"
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
  std::string target;  // where the server listens, as a client names it
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

// One Session stream over the raw stub: the bench's view of what a client library does.
class BenchSession {
 public:
  BenchSession(v1::ProximityService::Stub* stub, bool cold) : context_(Context()), cold_(cold) {
    stream_ = stub->Session(context_.get());
  }
  ~BenchSession() {
    stream_->WritesDone();
    v1::SessionResponse rest;
    while (stream_->Read(&rest)) {
    }
    (void)stream_->Finish();
  }
  // Sends `request` (open added to the first) and reads its answers; false when the stream failed.
  bool RoundTrip(v1::SessionRequest* request, v1::SessionResponse* response) {
    if (first_) {
      request->mutable_open()->set_scene_id("default");
      request->mutable_open()->set_cold_caches(cold_);
    } else {
      request->clear_open();
    }
    first_ = false;
    return stream_->Write(*request) && stream_->Read(response) &&
           response->answers_size() == request->queries_size();
  }

 private:
  std::unique_ptr<grpc::ClientContext> context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionResponse>> stream_;
  bool cold_;
  bool first_ = true;
};

void SetQ(const std::vector<double>& q, v1::JointPositions* out) {
  out->mutable_positions()->Resize(static_cast<int>(q.size()), 0.0);
  std::copy(q.begin(), q.end(), out->mutable_positions()->mutable_data());
}

// Distance along a trajectory: session warm / cold, unary, in process warm / cold.
int SessionTrack(const SuiteOptions& options, Fixture& f, std::mt19937_64& rng) {
  const int legs = options.quick ? 2 : 5, per_leg = options.quick ? 300 : 1000;
  constexpr double kRelErr = 0.05;
  std::vector<std::vector<double>> track;
  for (int l = 0; l < legs; ++l) {
    const auto a = RandomState(rng, f.scene->robot()), b = RandomState(rng, f.scene->robot());
    for (int k = 0; k < per_leg; ++k) {
      std::vector<double> q(a.size());
      for (size_t j = 0; j < q.size(); ++j) q[j] = a[j] + (b[j] - a[j]) * k / (per_leg - 1);
      track.push_back(std::move(q));
    }
  }
  const auto n = track.size();
  std::vector<double> warm_us, cold_us, unary_us, local_us, local_cold_us;
  std::vector<double> lower(n);
  Work work;
  core::SceneDistanceRequest query;
  query.rel_err = kRelErr;
  core::SceneCache cache;
  for (size_t i = 0; i < n; ++i) {
    const double t0 = Now();
    const core::SceneDistanceResult r = f.scene->ComputeDistance(track[i], query, &cache).value_or({});
    local_us.push_back((Now() - t0) * 1e6);
    lower[i] = r.lower_bound;
    work.bv_tests += static_cast<double>(r.stats.bv_tests);
    work.triangle_tests += static_cast<double>(r.stats.triangle_tests);
    ++work.queries;
    core::SceneCache fresh;
    const double t1 = Now();
    (void)f.scene->ComputeDistance(track[i], query, &fresh);
    local_cold_us.push_back((Now() - t1) * 1e6);
  }
  int64_t agree = 0;
  for (const bool cold : {false, true}) {
    BenchSession session(f.stub.get(), cold);
    v1::SessionRequest request;
    v1::ComputeDistanceRequest* d = request.add_queries()->mutable_distance();
    d->set_rel_err(kRelErr);
    v1::SessionResponse response;
    for (size_t i = 0; i < n; ++i) {
      SetQ(track[i], d->mutable_state());
      const double t0 = Now();
      if (!session.RoundTrip(&request, &response)) {
        std::cerr << "service: Session failed\n";
        return 1;
      }
      (cold ? cold_us : warm_us).push_back((Now() - t0) * 1e6);
      agree += response.answers(0).distance().lower_bound() == lower[i] ? 1 : 0;
    }
  }
  v1::ComputeDistanceRequest unary;
  unary.set_scene_id("default");
  unary.set_rel_err(kRelErr);
  v1::ComputeDistanceResponse answer;
  for (size_t i = 0; i < n; ++i) {
    SetQ(track[i], unary.mutable_state());
    const double t0 = Now();
    const grpc::Status status = f.stub->ComputeDistance(Context().get(), unary, &answer);
    unary_us.push_back((Now() - t0) * 1e6);
    if (!status.ok()) {
      std::cerr << "service: ComputeDistance failed: " << status.error_message() << "\n";
      return 1;
    }
    agree += answer.lower_bound() == lower[i] ? 1 : 0;
  }
  JsonLine line = CaseLine(kSuite, "session_track", warm_us, work, "in-process core, warm cache", local_us);
  line.Add("agree", agree).Add("queries", static_cast<int64_t>(3 * n)).Add("states", static_cast<int64_t>(n));
  line.Add("warm_p50_us", Median(warm_us)).Add("warm_p99_us", Percentile(warm_us, 0.99));
  line.Add("cold_p50_us", Median(cold_us)).Add("unary_p50_us", Median(unary_us));
  line.Add("inprocess_warm_p50_us", Median(local_us)).Add("inprocess_cold_p50_us", Median(local_cold_us));
  line.Add("cold_over_warm", Median(cold_us) / Median(warm_us));
  line.Add("unary_over_warm", Median(unary_us) / Median(warm_us));
  line.Add("warm_over_inprocess", Median(warm_us) / Median(local_us));
  line.Add("inprocess_cold_over_warm", Median(local_cold_us) / Median(local_us));
  line.Print();
  return agree == static_cast<int64_t>(3 * n) ? 0 : 1;
}

// A 1 kHz trajectory: legs from free states, each joint moving by at most `step` rad a frame, turned
// back at its limits.
std::vector<std::vector<double>> KilohertzTrajectory(const core::Scene& scene, std::mt19937_64& rng, int legs,
                                                     int frames, double step) {
  const core::RobotModel& robot = scene.robot();
  std::vector<std::vector<double>> out;
  core::SceneCache cache;
  while (static_cast<int>(out.size()) < legs * frames) {
    std::vector<double> q = RandomState(rng, robot);
    if (!scene.CheckState(q, &cache).value_or({}).free) continue;
    std::vector<double> v(q.size());
    double largest = 0.0;
    for (double& x : v) largest = std::max(largest, std::abs(x = std::uniform_real_distribution<double>(-1, 1)(rng)));
    for (double& x : v) x *= step / largest;
    for (int k = 0; k < frames; ++k) {
      out.push_back(q);
      for (size_t j = 0; j < q.size(); ++j) {
        if (q[j] + v[j] > robot.upper_limits()[j] || q[j] + v[j] < robot.lower_limits()[j]) v[j] = -v[j];
        q[j] += v[j];
      }
    }
  }
  return out;
}

// Clearance tracking along a 1 kHz trajectory: a session's track queries (one per round trip) beside
// core::Tracker in process and the session floor measured here.
int SessionTracker(const SuiteOptions& options, Fixture& f, std::mt19937_64& rng) {
  const int legs = options.quick ? 2 : 5, frames = options.quick ? 1000 : 2000;
  const std::vector<std::vector<double>> track = KilohertzTrajectory(*f.scene, rng, legs, frames, 1e-3);
  const size_t n = track.size();
  const core::TrackRequest query;  // the defaults: horizon 0.25 m, the 8 nearest pairs, gradients
  // In process: one tracker, warm from frame to frame, on the scene's shared polyhedra.
  auto geometry = core::TrackingGeometry::Build(*f.scene);
  if (!geometry.ok()) {
    std::cerr << "service: TrackingGeometry: " << geometry.error().message << "\n";
    return 1;
  }
  core::Tracker tracker(f.scene, geometry.value());
  std::vector<double> local_us;
  std::vector<std::vector<double>> uppers(n);
  Work work;
  int64_t pairs = 0, same = 0;
  for (size_t i = 0; i < n; ++i) {
    const double t0 = Now();
    const core::Result<core::TrackResult> r = tracker.Update(track[i], query);
    local_us.push_back((Now() - t0) * 1e6);
    if (!r.ok()) {
      std::cerr << "service: Tracker::Update: " << r.error().message << "\n";
      return 1;
    }
    for (const core::TrackedPair& p : r.value().pairs) uppers[i].push_back(p.distance.upper);
    pairs += static_cast<int64_t>(r.value().pairs.size());
    same += r.value().same_features;
    work.Add(r.value().stats);
  }
  // The floor: an empty batch's round trip on a session, right before the tracker's.
  std::vector<double> floor_us;
  {
    BenchSession session(f.stub.get(), false);
    v1::SessionRequest request;
    v1::SessionResponse response;
    for (size_t i = 0; i < std::min<size_t>(n, 5000); ++i) {
      const double t0 = Now();
      if (!session.RoundTrip(&request, &response)) return 1;
      floor_us.push_back((Now() - t0) * 1e6);
    }
  }
  std::vector<double> us;
  int64_t agree = 0;
  {
    BenchSession session(f.stub.get(), false);
    v1::SessionRequest request;
    v1::TrackRequest* t = request.add_queries()->mutable_track();
    v1::SessionResponse response;
    for (size_t i = 0; i < n; ++i) {
      SetQ(track[i], t->mutable_state());
      const double t0 = Now();
      if (!session.RoundTrip(&request, &response)) {
        std::cerr << "service: Session failed\n";
        return 1;
      }
      us.push_back((Now() - t0) * 1e6);
      const v1::SessionAnswer& a = response.answers(0);
      bool same_answer = a.has_track() && a.track().pairs_size() == static_cast<int>(uppers[i].size());
      for (int k = 0; same_answer && k < a.track().pairs_size(); ++k) {
        same_answer = a.track().pairs(k).distance().upper() == uppers[i][static_cast<size_t>(k)];
      }
      agree += same_answer ? 1 : 0;
    }
  }
  const double floor = Median(floor_us), local = Median(local_us), ours = Median(us);
  JsonLine line = CaseLine(kSuite, "session_tracker", us, work, "in-process core::Tracker, warm", local_us);
  line.Add("agree", agree).Add("frames", static_cast<int64_t>(n)).Add("step_rad", 1e-3);
  line.Add("p50_us", ours).Add("p99_us", Percentile(us, 0.99));
  line.Add("inprocess_p50_us", local).Add("inprocess_p99_us", Percentile(local_us, 0.99));
  line.Add("floor_p50_us", floor).Add("floor_p99_us", Percentile(floor_us, 0.99));
  line.Add("floor_plus_inprocess_us", floor + local);
  line.Add("ratio_to_floor_plus_inprocess", ours / (floor + local)).Add("target_ratio", 1.5);
  line.Add("pairs_per_frame", static_cast<double>(pairs) / static_cast<double>(n));
  line.Add("same_features_fraction", pairs > 0 ? static_cast<double>(same) / static_cast<double>(pairs) : 0.0);
  line.Print();
  return agree == static_cast<int64_t>(n) ? 0 : 1;
}

// Latency per query: one CLEAR or certified LINK per session round trip, 64 CLEARs per round trip, and
// the unary calls; the answers agree with the core's.
int SessionLatency(const SuiteOptions& options, Fixture& f, std::mt19937_64& rng) {
  const int n = options.quick ? 1000 : 5000, edges = options.quick ? 300 : 1000;
  std::vector<std::vector<double>> states;
  for (int i = 0; i < n; ++i) states.push_back(RandomState(rng, f.scene->robot()));
  std::vector<std::pair<std::vector<double>, std::vector<double>>> motions;
  for (int i = 0; i < edges; ++i) {
    auto a = RandomState(rng, f.scene->robot()), b = RandomState(rng, f.scene->robot());
    for (size_t j = 0; j < b.size(); ++j) b[j] = a[j] + 0.1 * (b[j] - a[j]);  // a planner's extension
    motions.emplace_back(std::move(a), std::move(b));
  }
  core::SceneCache cache;
  std::vector<char> free(states.size());
  std::vector<double> local_state_us, local_edge_us;
  for (size_t i = 0; i < states.size(); ++i) {
    const double t0 = Now();
    free[i] = f.scene->CheckState(states[i], &cache).value_or({}).free;
    local_state_us.push_back((Now() - t0) * 1e6);
  }
  std::vector<double> t_free(motions.size());
  for (size_t i = 0; i < motions.size(); ++i) {
    const double t0 = Now();
    t_free[i] = f.scene->CheckMotion(motions[i].first, motions[i].second, {}, &cache).value_or({}).t_free;
    local_edge_us.push_back((Now() - t0) * 1e6);
  }
  int failures = 0;
  auto emit = [&](const char* name, const std::vector<double>& us, const std::vector<double>& peer, int64_t agree,
                  int64_t total) {
    JsonLine line = CaseLine(kSuite, name, us, Work{}, kPeer, peer);
    line.Add("p50_us", Median(us)).Add("p99_us", Percentile(us, 0.99)).Add("agree", agree).Add("queries", total);
    line.Print();
    failures += agree == total ? 0 : 1;
  };
  {
    // The transport's floor: a round trip of an empty batch (the server reads and writes, queries nothing).
    BenchSession session(f.stub.get(), false);
    v1::SessionRequest request;
    v1::SessionResponse response;
    std::vector<double> us;
    for (int i = 0; i < n; ++i) {
      const double t0 = Now();
      if (!session.RoundTrip(&request, &response)) return 1;
      us.push_back((Now() - t0) * 1e6);
    }
    JsonLine line = CaseLine(kSuite, "session_empty", us, Work{}, kPeer, std::vector<double>(us.size(), 0.0));
    line.Add("p50_us", Median(us)).Add("p99_us", Percentile(us, 0.99));
    line.Print();
  }
  {
    BenchSession session(f.stub.get(), false);
    v1::SessionRequest request;
    v1::JointPositions* q = request.add_queries()->mutable_state()->mutable_state();
    v1::SessionResponse response;
    std::vector<double> us;
    int64_t agree = 0;
    for (size_t i = 0; i < states.size(); ++i) {
      SetQ(states[i], q);
      const double t0 = Now();
      if (!session.RoundTrip(&request, &response)) return 1;
      us.push_back((Now() - t0) * 1e6);
      agree += response.answers(0).state().free() == (free[i] != 0);
    }
    emit("session_state", us, local_state_us, agree, n);
  }
  {
    BenchSession session(f.stub.get(), false);
    v1::SessionRequest request;
    v1::CheckMotionRequest* m = request.add_queries()->mutable_motion();
    v1::SessionResponse response;
    std::vector<double> us;
    int64_t agree = 0;
    for (size_t i = 0; i < motions.size(); ++i) {
      SetQ(motions[i].first, m->mutable_start());
      SetQ(motions[i].second, m->mutable_goal());
      const double t0 = Now();
      if (!session.RoundTrip(&request, &response)) return 1;
      us.push_back((Now() - t0) * 1e6);
      agree += response.answers(0).motion().result().t_free() == t_free[i];
    }
    emit("session_edge", us, local_edge_us, agree, edges);
  }
  {
    BenchSession session(f.stub.get(), false);
    v1::SessionRequest request;
    for (int k = 0; k < 64; ++k) request.add_queries()->set_id(static_cast<uint64_t>(k));
    v1::SessionResponse response;
    std::vector<double> us, peer;
    int64_t agree = 0, total = 0;
    for (size_t b = 0; b + 64 <= states.size(); b += 64) {
      for (int k = 0; k < 64; ++k) SetQ(states[b + static_cast<size_t>(k)], request.mutable_queries(k)->mutable_state()->mutable_state());
      const double t0 = Now();
      if (!session.RoundTrip(&request, &response)) return 1;
      us.push_back((Now() - t0) * 1e6 / 64);
      double local = 0;
      for (int k = 0; k < 64; ++k) {
        agree += response.answers(k).state().free() == (free[b + static_cast<size_t>(k)] != 0);
        local += local_state_us[b + static_cast<size_t>(k)];
      }
      peer.push_back(local / 64);
      total += 64;
    }
    emit("session_batch64", us, peer, agree, total);
  }
  {
    v1::CheckStateRequest request;
    request.set_scene_id("default");
    v1::CheckStateResponse response;
    std::vector<double> us;
    int64_t agree = 0;
    for (size_t i = 0; i < states.size(); ++i) {
      SetQ(states[i], request.mutable_state());
      const double t0 = Now();
      if (!f.stub->CheckState(Context().get(), request, &response).ok()) return 1;
      us.push_back((Now() - t0) * 1e6);
      agree += response.free() == (free[i] != 0);
    }
    emit("unary_state", us, local_state_us, agree, n);
  }
  {
    v1::CheckMotionRequest request;
    request.set_scene_id("default");
    v1::CheckMotionResponse response;
    std::vector<double> us;
    int64_t agree = 0;
    for (size_t i = 0; i < motions.size(); ++i) {
      SetQ(motions[i].first, request.mutable_start());
      SetQ(motions[i].second, request.mutable_goal());
      const double t0 = Now();
      if (!f.stub->CheckMotion(Context().get(), request, &response).ok()) return 1;
      us.push_back((Now() - t0) * 1e6);
      agree += response.result().t_free() == t_free[i];
    }
    emit("unary_edge", us, local_edge_us, agree, edges);
  }
  return failures;
}

// Plan timings of one remote_plan case: per problem, the same RRT-Connect (same seed) in process, over
// a session and over unary calls.
struct PlanSides {
  static constexpr const char* kNames[3] = {"inprocess", "session", "unary"};
  std::vector<double> times[3], per_query[3];  // microseconds
  // Per plan: the search's and the simplification's time (microseconds), and the session side's round
  // trips (session messages).
  std::vector<double> search_us[3], simplify_us[3], session_trips;
  int solved[3] = {0, 0, 0};
  // Problems; those where every side ended before 90% of the time limit (a plan cut short by the limit
  // ends differently on a slower side), and those of them whose three paths are equal.
  int64_t problems = 0, compared = 0, agree = 0;
};

// The three contexts on one scene: in process (`scene`), and `session_scene` / `unary_scene` remote
// (the same scene on the server). Lazily certified, as the Plan RPC runs it: a sampled quick check at
// ScenePlanning's default resolution grows the trees, candidate paths are certified (over a session: in
// one round trip each). The same seed gives the same path everywhere ("agree").
int PlanThreeWays(const std::shared_ptr<const core::Scene>& scene,
                  const std::shared_ptr<const clients::RemoteScene>& session_scene,
                  const std::shared_ptr<const clients::RemoteScene>& unary_scene, const std::vector<double>& start,
                  const std::vector<double>& goal, uint64_t seed, double time_limit_s, PlanSides* sides) {
  const planners::JointSpace space = planners::JointSpace::ForRobot(scene->robot());
  core::MotionRequest quick;
  quick.mode = core::MotionRequest::Mode::kDiscrete;
  quick.resolution = planners::ScenePlanning::kDefaultQuickResolution;
  const planners::SceneStateValidity local_state(scene);
  const planners::SceneMotionValidator local_motion(scene, core::MotionRequest{}), local_quick(scene, quick);
  const clients::RemoteStateValidity s_state(session_scene), u_state(unary_scene);
  const clients::RemoteMotionValidator s_motion(session_scene), u_motion(unary_scene);
  const clients::RemoteMotionRequest remote_quick{clients::RemoteMotionRequest::Mode::kDiscrete, quick.resolution};
  const clients::RemoteMotionValidator s_quick(session_scene, remote_quick), u_quick(unary_scene, remote_quick);
  const planners::PlanningContext contexts[3] = {{space, &local_state, &local_motion, &local_quick},
                                                 {space, &s_state, &s_motion, &s_quick},
                                                 {space, &u_state, &u_motion, &u_quick}};
  planners::Termination termination;
  termination.time_limit_s = time_limit_s;
  planners::PlannerOptions po;
  po.type = planners::PlannerType::kRrtConnect;
  po.seed = seed;
  std::vector<planners::Configuration> paths[3];
  bool limited = false;
  for (int k = 0; k < 3; ++k) {
    const int64_t trips0 = session_scene->session_round_trips();
    const double t0 = Now();
    auto planned = planners::Plan(contexts[k], start, goal, po, termination);
    const double s = Now() - t0;
    const int64_t trips = session_scene->session_round_trips() - trips0;
    if (!planned.ok()) {
      std::cerr << "service: remote_plan (" << PlanSides::kNames[k] << "): " << planned.error().message << "\n";
      return 1;
    }
    const planners::PlanStats& st = planned.value().stats;
    sides->times[k].push_back(s * 1e6);
    sides->search_us[k].push_back(st.plan_time_s * 1e6);
    sides->simplify_us[k].push_back(st.simplify_time_s * 1e6);
    if (k == 1) sides->session_trips.push_back(static_cast<double>(trips));
    sides->per_query[k].push_back(s * 1e6 / static_cast<double>(std::max<int64_t>(
                                               1, st.state_checks + st.motion_checks + st.quick_motion_checks)));
    sides->solved[k] += planned.value().solved();
    paths[k] = planned.value().path;
    limited = limited || s >= 0.9 * time_limit_s;
  }
  ++sides->problems;
  sides->compared += !limited;
  sides->agree += !limited && paths[1] == paths[0] && paths[2] == paths[0];
  return 0;
}

// The case line: "ours" is the session, the peer the same planner in process; time_ratio = remote
// (session) median over in-process median.
JsonLine PlanLine(const std::string& name, const PlanSides& t) {
  JsonLine line = CaseLine(kSuite, name, t.times[1], Work{}, "the same planner in process", t.times[0]);
  line.Add("problems", t.problems);
  line.Add("solved_inprocess", t.solved[0]).Add("solved_session", t.solved[1]).Add("solved_unary", t.solved[2]);
  line.Add("median_ms_inprocess", Median(t.times[0]) / 1e3).Add("median_ms_session", Median(t.times[1]) / 1e3);
  line.Add("median_ms_unary", Median(t.times[2]) / 1e3);
  line.Add("us_per_query_inprocess", Median(t.per_query[0])).Add("us_per_query_session", Median(t.per_query[1]));
  line.Add("us_per_query_unary", Median(t.per_query[2]));
  line.Add("time_ratio", Median(t.times[1]) / Median(t.times[0]));
  line.Add("search_ms_inprocess", Median(t.search_us[0]) / 1e3);
  line.Add("simplify_ms_inprocess", Median(t.simplify_us[0]) / 1e3);
  line.Add("search_ms_session", Median(t.search_us[1]) / 1e3);
  line.Add("simplify_ms_session", Median(t.simplify_us[1]) / 1e3);
  line.Add("round_trips_session", Median(t.session_trips));
  line.Add("unary_time_ratio", Median(t.times[2]) / Median(t.times[0]));
  return line;
}

// remote_plan: RRT-Connect on the default scene's problems (valid ends far apart whose straight motion
// collides) through proximity::remote, beside the same planner in process.
int RemotePlan(const SuiteOptions& options, Fixture& f, std::mt19937_64& rng) {
  const int problems = options.quick ? 4 : 12;
  clients::RemoteOptions ro;
  ro.target = f.target;
  ro.deadline = std::chrono::seconds(60);
  auto session_scene = clients::RemoteScene::Connect(ro);
  ro.use_session = false;
  auto unary_scene = clients::RemoteScene::Connect(ro);
  if (!session_scene.ok() || !unary_scene.ok()) return 1;
  const planners::JointSpace space = planners::JointSpace::ForRobot(f.scene->robot());
  core::SceneCache cache;
  std::vector<std::pair<std::vector<double>, std::vector<double>>> ends;
  auto valid = [&](const std::vector<double>& q) {
    const core::StateResult r = f.scene->CheckState(q, &cache).value_or({});
    return r.free && r.within_limits;
  };
  for (int i = 0; i < 100000 && static_cast<int>(ends.size()) < problems; ++i) {
    auto a = RandomState(rng, f.scene->robot()), b = RandomState(rng, f.scene->robot());
    if (!valid(a) || !valid(b) || space.Distance(a, b) < 1.0) continue;
    if (!f.scene->CheckMotion(a, b, {}, &cache).value_or({}).free) ends.emplace_back(a, b);
  }
  core::AwaitSelfClearanceFill();  // the default scene's maps, here and in the server (see RemotePlanMbm)
  PlanSides sides;
  for (size_t p = 0; p < ends.size(); ++p) {
    if (PlanThreeWays(f.scene, session_scene.value(), unary_scene.value(), ends[p].first, ends[p].second,
                      options.seed + p, 60.0, &sides) != 0) {
      return 1;
    }
  }
  JsonLine line = PlanLine("remote_plan", sides);
  line.Add("agree", sides.agree);
  line.Add("remote_sessions_opened", session_scene.value()->sessions_opened());
  line.Print();
  return sides.agree == sides.problems ? 0 : 1;
}

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// Problem `p` as a CreateScene request, as a remote planner sends it: the mbm_panda URDF and SRDF as text
// with the collision meshes it names in the bundle (keyed as it names them; the visual meshes are not
// staged and not needed), the problem's primitives as world objects (each primitive its own part at its
// pose in the root frame) and its allowed pairs.
v1::CreateSceneRequest MbmSceneRequest(const mbm::MbmProblem& p, const std::string& robot_dir) {
  v1::CreateSceneRequest request;
  v1::RobotSource* robot = request.mutable_robot();
  robot->set_urdf(ReadBytes(robot_dir + "/panda.urdf"));
  robot->set_srdf(ReadBytes(robot_dir + "/panda.srdf"));
  const std::regex mesh("filename=\"(package://meshes/([^\"]+))\"");
  const std::string& urdf = robot->urdf();
  for (auto it = std::sregex_iterator(urdf.begin(), urdf.end(), mesh); it != std::sregex_iterator(); ++it) {
    const std::string file = robot_dir + "/meshes/" + (*it)[2].str();
    if (std::filesystem::is_regular_file(file)) (*robot->mutable_files())[(*it)[1].str()] = ReadBytes(file);
  }
  for (const mbm::MbmCollisionObject& o : p.scene.objects) {
    v1::CollisionObject* object = request.add_objects();
    object->set_id(o.id);
    object->mutable_pose()->mutable_orientation()->set_w(1.0);
    for (const mbm::MbmPrimitive& prim : o.primitives) {
      v1::ObjectPart* part = object->add_parts();
      server::ToWire(prim.X_RP, part->mutable_pose());
      v1::Shape* shape = part->mutable_shape();
      switch (prim.type) {
        case mbm::MbmShapeType::kBox:
          shape->mutable_box()->mutable_size()->set_x(prim.dimensions[0]);
          shape->mutable_box()->mutable_size()->set_y(prim.dimensions[1]);
          shape->mutable_box()->mutable_size()->set_z(prim.dimensions[2]);
          break;
        case mbm::MbmShapeType::kCylinder:
          shape->mutable_cylinder()->set_length(prim.dimensions[0]);
          shape->mutable_cylinder()->set_radius(prim.dimensions[1]);
          break;
        case mbm::MbmShapeType::kSphere:
          shape->mutable_sphere()->set_radius(prim.dimensions[0]);
          break;
      }
    }
  }
  for (const auto& [a, b] : p.scene.allowed_pairs) {
    v1::AllowedPair* pair = request.add_allowed_pairs();
    pair->set_first(a);
    pair->set_second(b);
  }
  return request;
}

// remote_plan_mbm: the same on the MotionBenchMaker Panda problems of ../shared/data (the 35 extracted
// ones, the first of each family with --quick), loaded by the mbm suite's loader. Each problem's scene is
// sent to the server with CreateScene (RemoteScene::Create); the in-process planner runs on the scene
// built from that same request, so both sides check the same scene and the same seed gives the same
// path unless a side meets the time limit. Skipped (saying why, not failing the suite) when the data is
// absent.
int RemotePlanMbm(const SuiteOptions& options, Fixture& f) {
  if (options.robot.given() || !options.problems_dir.empty()) {
    std::cerr << "service: remote_plan_mbm runs the default MotionBenchMaker Panda problems only; skipped\n";
    return 0;
  }
  SuiteOptions extracted = options;
  extracted.quick = true;  // the 35 extracted problems: no archive to unpack
  MbmData data;
  if (int code = LoadMbmData("service", extracted, &data); code != 0) {
    std::cerr << "service: remote_plan_mbm skipped\n";
    return code == 77 ? 0 : 1;
  }
  std::vector<mbm::MbmProblem> problems;
  for (mbm::MbmProblem& p : data.problems) {
    if (!options.quick || problems.empty() || problems.back().family != p.family) problems.push_back(std::move(p));
  }
  const std::string robot_dir = options.data_dir + "/robots/mbm_panda";
  const double time_limit_s = options.time_limit_s > 0.0 ? options.time_limit_s : (options.quick ? 2.0 : 10.0);
  std::cerr << "service: remote_plan_mbm: " << problems.size() << " " << data.source << ", " << time_limit_s
            << " s per plan\n";
  PlanSides sides;
  std::map<std::string, PlanSides> families;
  int64_t sessions = 0;
  for (size_t k = 0; k < problems.size(); ++k) {
    const mbm::MbmProblem& p = problems[k];
    const v1::CreateSceneRequest request = MbmSceneRequest(p, robot_dir);
    auto built = server::BuildScene(request);
    auto ends = ProblemEnds(p, *data.robot);
    clients::RemoteOptions ro;
    ro.target = f.target;
    ro.deadline = std::chrono::seconds(60);
    auto session_scene = clients::RemoteScene::Create(ro, request.SerializeAsString());
    if (!built.ok() || !ends.ok() || !session_scene.ok()) {
      std::cerr << "service: remote_plan_mbm: " << p.name << ": "
                << (!built.ok() ? built.error() : !ends.ok() ? ends.error() : session_scene.error()).message << "\n";
      return 1;
    }
    if (built.value()->id != session_scene.value()->options().scene_id) {
      std::cerr << "service: remote_plan_mbm: " << p.name << ": the server's scene id differs from the request's\n";
      return 1;
    }
    ro.scene_id = session_scene.value()->options().scene_id;
    ro.use_session = false;
    auto unary_scene = clients::RemoteScene::Connect(ro);
    if (!unary_scene.ok()) return 1;
    // Both scenes (the server's and the one in process) plan on filled self-clearance maps, as a
    // long-lived scene does: their background fill would otherwise run beside whichever side plans
    // first (the server is in this process, so one wait covers both).
    core::AwaitSelfClearanceFill();
    PlanSides one;
    if (PlanThreeWays(built.value()->scene, session_scene.value(), unary_scene.value(), ends.value().first,
                      ends.value().second, options.seed + k, time_limit_s, &one) != 0) {
      return 1;
    }
    for (PlanSides* t : {&sides, &families[p.family]}) {
      t->session_trips.push_back(one.session_trips[0]);
      for (int s = 0; s < 3; ++s) {
        t->search_us[s].push_back(one.search_us[s][0]);
        t->simplify_us[s].push_back(one.simplify_us[s][0]);
        t->times[s].push_back(one.times[s][0]);
        t->per_query[s].push_back(one.per_query[s][0]);
        t->solved[s] += one.solved[s];
      }
      t->problems += 1;
      t->compared += one.compared;
      t->agree += one.agree;
    }
    sessions += session_scene.value()->sessions_opened();
    std::cerr << "service: remote_plan_mbm " << p.name << ": in process " << one.times[0][0] / 1e3 << " ms, session "
              << one.times[1][0] / 1e3 << " ms, unary " << one.times[2][0] / 1e3 << " ms"
              << (one.compared == 0 ? " (time limit met: paths not compared)"
                  : one.agree == 1  ? ""
                                    : " (PATHS DIFFER)")
              << "\n";
  }
  JsonLine line = PlanLine("remote_plan_mbm", sides);
  // The paths must agree wherever no side met the time limit (bench/check_output.py checks it).
  line.Add("paths_compared", sides.compared).Add("paths_agree", sides.agree);
  line.Add("robot", data.robot->name()).Add("source", data.source).Add("time_limit_s", time_limit_s);
  line.Add("remote_sessions_opened", sessions);
  for (const auto& [family, t] : families) {
    line.Add("time_ratio_" + family, Median(t.times[1]) / Median(t.times[0]));
  }
  line.Print();
  return sides.agree == sides.compared ? 0 : 1;
}

}  // namespace

int RunService(const SuiteOptions& options) {
  server::ConfigureLogging(server::LogFormat::kText, spdlog::level::warn);
  Fixture f;
  f.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  server::ServerOptions so;
  // PROXIMITY_BENCH_LISTEN: another address for the server, e.g. unix:/tmp/proximity-bench.sock (a
  // planner on the same machine); loopback TCP by default.
  const char* listen = std::getenv("PROXIMITY_BENCH_LISTEN");
  so.listen = listen != nullptr && *listen != '\0' ? listen : "127.0.0.1:0";
  so.metrics_listen = "";
  so.threads = f.threads;
  auto started = server::ProximityServer::Start(so);
  if (!started.ok()) {
    std::cerr << "service needs the default scene's robot (Debian dart-doc): " << started.error().message << "\n";
    return 1;
  }
  f.server = std::move(started).value();
  f.target = so.listen.rfind("unix:", 0) == 0 ? so.listen : "127.0.0.1:" + std::to_string(f.server->port());
  std::cerr << "service: proximityd in process at " << f.target << "\n";
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  f.stub = v1::ProximityService::NewStub(grpc::CreateCustomChannel(f.target, grpc::InsecureChannelCredentials(), args));
  auto d = scenes::DefaultSceneDescription();
  auto scene = d.ok() ? core::Scene::Build(std::move(d).value()) : core::Result<std::shared_ptr<const core::Scene>>(d.error());
  if (!scene.ok()) {
    std::cerr << "service: " << scene.error().message << "\n";
    return 1;
  }
  f.scene = std::move(scene).value();
  std::mt19937_64 rng(options.seed);
  int failures = 0;
  // Case groups (--cases): states (clear batches, unary CheckState), paths, track, latency, plan (remote
  // planning on the default scene and on the MotionBenchMaker problems).
  if (options.RunsCase("states")) {
    failures += ClearBatches(options, f, rng);
    failures += UnaryCheckState(options, f, rng);
  }
  if (options.RunsCase("paths")) failures += ValidatePathsStream(options, f, rng);
  if (options.RunsCase("track")) {
    failures += SessionTrack(options, f, rng);
    failures += SessionTracker(options, f, rng);
  }
  if (options.RunsCase("latency")) failures += SessionLatency(options, f, rng);
  if (options.RunsCase("plan")) {
    failures += RemotePlan(options, f, rng);
    failures += RemotePlanMbm(options, f);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace proximity::bench
