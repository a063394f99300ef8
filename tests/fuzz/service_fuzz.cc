// Request bytes of every RPC through proximityd's real handlers. The first byte picks the RPC, the rest
// is parsed as that RPC's request message (bytes that do not parse are not requests: gRPC refuses them
// before any handler runs). Unary handlers are called directly on a ProximityServiceImpl with a
// grpc::ServerContext; ValidatePaths and Session, whose handlers need a live stream, go through an
// in-process gRPC channel to the same service. A Session input is a sequence of length-delimited
// SessionRequest messages (each a varint byte count, then the message), sent one at a time, each
// answer read before the next is sent, as the protocol's flow control has it. The registry holds one
// scene, aliased "default": the planar 2-link arm (tests/data/robots) among a few world objects, with
// an attached tool; every input starts from that registry (scenes a request made are removed, a
// deleted default scene comes back, names are dropped).
//
// Checked: no crash, no sanitizer report, no exception; every status is one the protocol documents
// (OK, INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, CANCELLED,
// UNAVAILABLE) with a message when not OK; no NaN anywhere in a response; a failed request changes no
// scene; OK answers agree with themselves (a free motion has t_free = 1, counts match, intervals are
// ordered, ...). Differential: every session answer is the answer of the unary call with the same
// request (or both fail with one code), and ComputeContacts finds contacts exactly when CheckState
// finds a collision.

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_check.h"
#include "server/log.h"
#include "server/metrics.h"
#include "server/scene_store.h"
#include "server/service.h"
#include "server/worker_pool.h"

namespace {

using namespace proximity;
namespace v1 = ::proximity::v1;
namespace pb = ::google::protobuf;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  PROX_FUZZ_CHECK(in && !s.str().empty(), "cannot read " + path);
  return s.str();
}

v1::Pose At(double x, double y, double z) {
  v1::Pose p;
  p.mutable_position()->set_x(x);
  p.mutable_position()->set_y(y);
  p.mutable_position()->set_z(z);
  p.mutable_orientation()->set_w(1.0);
  return p;
}

// The scene every input starts from. The arm moves in the plane z = 0.1 with a reach of 1.5 m: the
// box at (0, 1.2) blocks shoulder = pi/2, the cylinder at (-1, -0.6) lies in reach of shoulder ~ -2.6,
// and q = 0 is free.
v1::CreateSceneRequest BaseSceneRequest() {
  v1::CreateSceneRequest r;
  r.mutable_robot()->set_urdf(ReadText(PROX_TEST_DATA_DIR "/robots/planar_2link.urdf"));
  r.mutable_robot()->set_srdf(ReadText(PROX_TEST_DATA_DIR "/robots/planar_2link.srdf"));
  auto* box = r.add_objects();
  box->set_id("box");
  *box->mutable_pose() = At(0.0, 1.2, 0.1);
  auto* size = box->add_parts()->mutable_shape()->mutable_box()->mutable_size();
  size->set_x(0.3), size->set_y(0.3), size->set_z(0.3);
  auto* post = r.add_objects();
  post->set_id("post");
  *post->mutable_pose() = At(-1.0, -0.6, 0.1);
  auto* cyl = post->add_parts()->mutable_shape()->mutable_cylinder();
  cyl->set_radius(0.1), cyl->set_length(0.5);
  auto* hull = r.add_objects();
  hull->set_id("wedge");
  *hull->mutable_pose() = At(1.0, -1.0, 0.1);
  auto* mesh = hull->add_parts()->mutable_shape()->mutable_mesh();
  for (double v : {0.0, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 0.3, 0.0, 0.0, 0.0, 0.3}) mesh->add_vertices(v);
  for (uint32_t i : {0u, 2u, 1u, 0u, 1u, 3u, 0u, 3u, 2u, 1u, 2u, 3u}) mesh->add_triangles(i);
  auto* tool = r.add_attached_objects();
  tool->set_id("tool");
  tool->set_link("tip");
  auto* tool_part = tool->add_parts();
  tool_part->mutable_shape()->mutable_capsule()->set_radius(0.03);
  tool_part->mutable_shape()->mutable_capsule()->set_length(0.1);
  *tool_part->mutable_pose() = At(0.08, 0.0, 0.0);
  r.set_default_padding(0.001);
  return r;
}

struct Harness;
Harness& H();

struct Harness {
  server::Metrics metrics;
  server::SceneRegistry registry;
  server::WorkerPool pool{2};
  std::unique_ptr<server::ProximityServiceImpl> service;
  std::shared_ptr<const server::SceneEntry> base;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<v1::ProximityService::Stub> stub;

  Harness() {
    server::ConfigureLogging(server::LogFormat::kText, spdlog::level::off);
    // protobuf reports every string field with invalid UTF-8 on stderr (about one input in ten): a
    // request gRPC would refuse, so the report is noise that slows the run and fills its log.
    google::protobuf::SetLogHandler(nullptr);
    // Small limits keep every input short: the same checks run on 2,000 states as on 1,000,000.
    server::ServiceLimits limits;
    limits.max_batch_states = 2'000;
    limits.max_path_waypoints = 200;
    limits.max_plan_seconds = 0.02;
    limits.max_call_seconds = 0.25;
    // Requests may read no server file.
    service = std::make_unique<server::ProximityServiceImpl>(&registry, &metrics, &pool, limits,
                                                             core::FileAccess::Confined({}, 1 << 20).value());
    auto built = server::BuildScene(BaseSceneRequest());
    PROX_FUZZ_CHECK(built.ok(), built.ok() ? "" : built.error().message);
    base = std::move(built).value();
    registry.set_default_id(base->id);
    PROX_FUZZ_CHECK(registry.Insert(base).ok(), "the base scene fits the registry");

    grpc::ServerBuilder builder;
    builder.RegisterService(service.get());
    server = builder.BuildAndStart();
    PROX_FUZZ_CHECK(server != nullptr, "in-process server");
    stub = v1::ProximityService::NewStub(server->InProcessChannel(grpc::ChannelArguments()));
    // The harness is never destroyed, but gRPC's server threads would still run while the process's
    // static objects are destroyed at exit (a use-after-free in a server thread, seen once when a
    // replayed input ended the process): the server shuts down first.
    std::atexit([] { H().server->Shutdown(std::chrono::system_clock::now()); });
  }

  // Back to the one base scene, without names (erasing a scene drops its names).
  void Reset() {
    for (const auto& entry : registry.List()) registry.Erase(entry->id);
    PROX_FUZZ_CHECK(registry.Insert(base).ok(), "the base scene fits the registry");
  }
};

Harness& H() {
  static Harness* h = new Harness();  // never destroyed: gRPC's threads outlive static destruction
  return *h;
}

// ---- checks ------------------------------------------------------------------------------------

void CheckStatus(const grpc::Status& s) {
  switch (s.error_code()) {
    case grpc::StatusCode::OK:
      return;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ALREADY_EXISTS:  // NameScene: the name names another scene
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::UNAVAILABLE:
      PROX_FUZZ_CHECK(!s.error_message().empty(), "an error status has a message");
      return;
    default:
      PROX_FUZZ_CHECK(false, "undocumented status " + std::to_string(s.error_code()) + ": " + s.error_message());
  }
}

// No NaN in any double of the message, nested messages and packed float64 rows included.
void CheckNoNan(const pb::Message& m) {
  const pb::Descriptor* d = m.GetDescriptor();
  const pb::Reflection* r = m.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const pb::FieldDescriptor* f = d->field(i);
    const std::string where = f->full_name();
    if (f->is_repeated()) {
      const int n = r->FieldSize(m, f);
      for (int k = 0; k < n; ++k) {
        if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
          PROX_FUZZ_CHECK(!std::isnan(r->GetRepeatedDouble(m, f, k)), "NaN in " + where);
        } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
          CheckNoNan(r->GetRepeatedMessage(m, f, k));
        }
      }
      continue;
    }
    if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_DOUBLE) {
      PROX_FUZZ_CHECK(!std::isnan(r->GetDouble(m, f)), "NaN in " + where);
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE && r->HasField(m, f)) {
      CheckNoNan(r->GetMessage(m, f));
    } else if (f->name() == "positions_f64le") {
      const std::string bytes = r->GetString(m, f);
      for (size_t k = 0; k + 8 <= bytes.size(); k += 8) {
        double v;
        std::memcpy(&v, bytes.data() + k, 8);
        PROX_FUZZ_CHECK(!std::isnan(v), "NaN in " + where);
      }
    }
  }
}

void CheckSceneInfo(const v1::SceneInfo& s) {
  PROX_FUZZ_CHECK(!s.scene_id().empty(), "a scene has an id");
  PROX_FUZZ_CHECK(s.limits_size() == s.joint_names_size(), "one limit per joint");
  for (const v1::JointLimit& l : s.limits()) PROX_FUZZ_CHECK(!(l.lower() > l.upper()), "lower <= upper");
  for (const v1::NamedState& n : s.named_states()) {
    PROX_FUZZ_CHECK(n.positions_size() == s.joint_names_size(), "a named state has one value per joint");
  }
}

void CheckMotionResult(const v1::MotionResult& m) {
  if (m.free()) {
    PROX_FUZZ_CHECK(m.t_free() == 1.0, "a free motion has t_free = 1, got " + std::to_string(m.t_free()));
    PROX_FUZZ_CHECK(m.t_collide() == -1.0, "a free motion has t_collide = -1");
    PROX_FUZZ_CHECK(!m.undecided(), "an undecided motion is not free");
    return;
  }
  PROX_FUZZ_CHECK(m.t_free() >= 0.0 && m.t_free() <= m.t_collide() && m.t_collide() <= 1.0,
                  "0 <= t_free <= t_collide <= 1, got " + std::to_string(m.t_free()) + ", " +
                      std::to_string(m.t_collide()));
  PROX_FUZZ_CHECK(!m.contact().robot().empty() && !m.contact().other().empty(), "a collision names its pair");
}

void CheckPathResult(const v1::PathResult& p, int64_t waypoints) {
  if (p.free()) {
    PROX_FUZZ_CHECK(p.segment() == -1, "a free path has segment -1");
    return;
  }
  PROX_FUZZ_CHECK(p.segment() >= 0 && p.segment() < std::max<int64_t>(1, waypoints - 1),
                  "the colliding segment is one of the path's");
  PROX_FUZZ_CHECK(!p.motion().free(), "the colliding segment is not free");
  CheckMotionResult(p.motion());
}

void CheckPairDistance(const v1::PairDistance& p) {
  PROX_FUZZ_CHECK(p.lower() >= 0.0 && p.lower() <= p.upper(), "0 <= lower <= upper for a pair");
}

// Rows of a Configurations message, or -1 when its encoding does not say.
int64_t Rows(const v1::Configurations& c, int64_t dof) {
  const int64_t width = c.width() > 0 ? c.width() : dof;
  if (width == 0) return c.count() > 0 ? c.count() : 1;
  const int64_t values = c.positions_size() > 0 ? c.positions_size() : static_cast<int64_t>(c.positions_f64le().size() / 8);
  return values / width;
}

// The unary answer to `request`, for the differential checks: the status, and the response when OK.
template <class Request, class Response, class Call>
grpc::Status Direct(const Request& request, Response* response, Call call) {
  grpc::ServerContext context;
  const grpc::Status status = call(&context, &request, response);
  CheckStatus(status);
  return status;
}

template <class Request, class Response, class Call>
void Unary(const uint8_t* data, size_t size, Call call, void (*check)(const Request&, const Response&)) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  Response response;
  const size_t scenes_before = H().registry.size();
  const grpc::Status status = Direct(request, &response, call);
  CheckNoNan(response);
  if (!status.ok()) {
    PROX_FUZZ_CHECK(H().registry.size() == scenes_before, "a failed request changed the loaded scenes");
    return;
  }
  check(request, response);
}

int64_t BaseDof() { return H().base->scene->dof(); }

void ValidatePaths(const uint8_t* data, size_t size) {
  v1::ValidatePathsRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto reader = H().stub->ValidatePaths(&context, request);
  std::set<uint32_t> seen;
  v1::ValidatePathsResponse response;
  while (reader->Read(&response)) {
    CheckNoNan(response);
    PROX_FUZZ_CHECK(response.index() < static_cast<uint32_t>(request.paths_size()), "index names a path");
    PROX_FUZZ_CHECK(seen.insert(response.index()).second, "one response per path");
    CheckPathResult(response.result(), Rows(request.paths(static_cast<int>(response.index())), BaseDof()));
  }
  const grpc::Status status = reader->Finish();
  CheckStatus(status);
  if (status.ok()) {
    PROX_FUZZ_CHECK(seen.size() == static_cast<size_t>(request.paths_size()), "every path answered");
  }
}

bool Stopped(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED || s.error_code() == grpc::StatusCode::CANCELLED;
}

// The unary call of a session query's embedded request on the session's scene; nullopt when the request
// names another scene (which the session refuses: no unary call asks the same).
template <class Request, class Response, class Call>
std::optional<grpc::Status> OnSessionScene(const Request& embedded, const std::string& scene_id, Response* response,
                                           Call call) {
  if (!embedded.scene_id().empty() && embedded.scene_id() != scene_id) return std::nullopt;
  Request request = embedded;
  request.set_scene_id(scene_id);
  return Direct(request, response, call);
}

// One session answer against its query: the same kind (or an error naming the query), the unary call's
// answer to the same request on the session's scene, and whether it is valid (for until_invalid).
bool CheckSessionAnswer(const v1::SessionQuery& query, const v1::SessionAnswer& answer, int index,
                        const std::string& scene_id) {
  PROX_FUZZ_CHECK(answer.id() == query.id(), "an answer echoes its query's id");
  server::ProximityServiceImpl& s = *H().service;
  // The unary call's status; nullopt where no unary call asks the same (no query kind, another scene).
  std::optional<grpc::Status> unary;
  bool valid = false;
  switch (query.query_case()) {
    case v1::SessionQuery::kState: {
      v1::CheckStateResponse response;
      unary = OnSessionScene(query.state(), scene_id, &response,
                             [&](auto* c, auto* q, auto* r) { return s.CheckState(c, q, r); });
      if (unary && answer.has_state()) {
        valid = answer.state().free() && answer.state().within_limits();
        if (unary->ok()) {
          PROX_FUZZ_CHECK(answer.state().free() == response.free() &&
                              answer.state().within_limits() == response.within_limits(),
                          "a session's CLEAR answer is the unary CheckState's");
        }
      }
      break;
    }
    case v1::SessionQuery::kMotion: {
      v1::CheckMotionResponse response;
      unary = OnSessionScene(query.motion(), scene_id, &response,
                             [&](auto* c, auto* q, auto* r) { return s.CheckMotion(c, q, r); });
      if (unary && answer.has_motion()) {
        CheckMotionResult(answer.motion().result());
        valid = answer.motion().result().free();
        // The verdict only: where a contact is bracketed (and whether the walk ended undecided at it)
        // may differ with what the caches hold (MotionResult).
        if (unary->ok()) {
          PROX_FUZZ_CHECK(answer.motion().result().free() == response.result().free(),
                          "a session's LINK verdict is the unary CheckMotion's");
        }
      }
      break;
    }
    case v1::SessionQuery::kDistance: {
      v1::ComputeDistanceResponse response;
      unary = OnSessionScene(query.distance(), scene_id, &response,
                             [&](auto* c, auto* q, auto* r) { return s.ComputeDistance(c, q, r); });
      if (unary && answer.has_distance()) {
        const v1::ComputeDistanceResponse& d = answer.distance();
        PROX_FUZZ_CHECK(d.lower_bound() >= 0.0 && d.lower_bound() <= d.upper_bound(), "0 <= lower <= upper");
        valid = d.lower_bound() > 0.0;
        if (unary->ok()) {
          // Both intervals are certified to hold the clearance (up to max_distance), so they meet, up
          // to the rounding of two computations of one exact distance (rel_err 0 gives [d, d]).
          const bool beyond = d.beyond_max_distance() || response.beyond_max_distance();
          const double slack = 1e-9 * (1.0 + std::max(d.upper_bound(), response.upper_bound()));
          PROX_FUZZ_CHECK(beyond || (d.lower_bound() <= response.upper_bound() + slack &&
                                     response.lower_bound() <= d.upper_bound() + slack),
                          "a session's distance interval meets the unary ComputeDistance's");
        }
      }
      break;
    }
    case v1::SessionQuery::QUERY_NOT_SET:
      break;
  }
  if (!unary.has_value()) {
    PROX_FUZZ_CHECK(answer.has_error() && answer.error().code() == grpc::StatusCode::INVALID_ARGUMENT,
                    "a query of no kind or of another scene is refused");
  }
  if (answer.has_error()) {
    const grpc::Status error(static_cast<grpc::StatusCode>(answer.error().code()), answer.error().message());
    PROX_FUZZ_CHECK(!error.ok(), "an error answer has an error code");
    CheckStatus(error);
    PROX_FUZZ_CHECK(answer.error().message().starts_with("queries[" + std::to_string(index) + "]"),
                    "an error answer names its query: " + answer.error().message());
    if (unary.has_value() && !Stopped(*unary)) {
      PROX_FUZZ_CHECK(unary->error_code() == error.error_code(),
                      "a session's error answer has the unary call's code: " + std::to_string(error.error_code()) +
                          " vs " + std::to_string(unary->error_code()) + " (" + unary->error_message() + ")");
    }
    return false;
  }
  PROX_FUZZ_CHECK(static_cast<int>(answer.answer_case()) == static_cast<int>(query.query_case()),
                  "an answer is of its query's kind");
  PROX_FUZZ_CHECK(unary->ok() || Stopped(*unary), "the unary call fails where the session answered: " +
                                                      unary->error_message());
  return valid;
}

void Session(const uint8_t* data, size_t size) {
  constexpr int kMaxRequests = 16;
  std::vector<v1::SessionRequest> requests;
  pb::io::CodedInputStream in(data, static_cast<int>(size));
  while (!in.ExpectAtEnd()) {
    uint32_t bytes = 0;
    if (!in.ReadVarint32(&bytes) || requests.size() == kMaxRequests) return;
    const pb::io::CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(bytes));
    v1::SessionRequest& request = requests.emplace_back();
    if (!request.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage() || in.BytesUntilLimit() != 0) return;
    in.PopLimit(limit);
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = H().stub->Session(&context);
  std::string scene_id;
  size_t answered = 0;
  for (const v1::SessionRequest& request : requests) {
    if (!stream->Write(request)) break;
    v1::SessionResponse response;
    if (!stream->Read(&response)) break;
    CheckNoNan(response);
    if (answered == 0) {
      PROX_FUZZ_CHECK(request.has_open() && response.has_opened(), "the first request opens, its answer says so");
      const auto entry = H().registry.Find(request.open().scene_id());
      PROX_FUZZ_CHECK(entry != nullptr && response.opened().scene_id() == entry->info.scene_id(),
                      "the session opened the scene its request named");
      PROX_FUZZ_CHECK(response.opened().dof() == static_cast<uint32_t>(BaseDof()), "dof is the scene's");
      scene_id = response.opened().scene_id();
    } else {
      PROX_FUZZ_CHECK(!request.has_open() && !response.has_opened(), "a session opens once");
    }
    const int queries = request.queries_size();
    const int answers = response.answers_size();
    PROX_FUZZ_CHECK(answers <= queries, "no more answers than queries");
    if (!request.until_invalid()) PROX_FUZZ_CHECK(answers == queries, "one answer per query");
    if (queries > 0) PROX_FUZZ_CHECK(answers >= 1, "a batch of queries gets an answer");
    if (request.until_invalid() && request.chains_size() > 0) {
      // Chains (the server answered, so they describe the batch): each chain's answers are a prefix of
      // its queries, complete or ending with its first invalid one; none for a chain after one (after,
      // counted from 1) that did not end complete.
      int64_t sum = 0;
      for (const uint32_t length : request.chains()) sum += length;
      PROX_FUZZ_CHECK(sum == queries, "answered chains sum to the batch");
      PROX_FUZZ_CHECK(request.after_size() == 0 || request.after_size() == request.chains_size(),
                      "answered chains have one prerequisite each or none");
      std::vector<char> complete(static_cast<size_t>(request.chains_size()), 0);
      int at = 0, first = 0;
      for (int c = 0; c < request.chains_size(); ++c) {
        const auto length = static_cast<int>(request.chains(c));
        PROX_FUZZ_CHECK(length >= 1, "answered chains hold a query each");
        const uint32_t after = request.after_size() > 0 ? request.after(c) : 0;
        PROX_FUZZ_CHECK(after <= static_cast<uint32_t>(c), "answered chains come after earlier ones");
        if (after > 0 && complete[after - 1] == 0) {
          first += length;
          continue;
        }
        bool valid = true;
        for (int k = first; k < first + length && valid; ++k) {
          PROX_FUZZ_CHECK(at < answers, "a chain is answered up to its first invalid query");
          valid = CheckSessionAnswer(request.queries(k), response.answers(at), k, scene_id);
          ++at;
        }
        complete[static_cast<size_t>(c)] = valid ? 1 : 0;
        first += length;
      }
      PROX_FUZZ_CHECK(at == answers, "no answers beyond the chains'");
      ++answered;
      continue;
    }
    for (int k = 0; k < answers; ++k) {
      const bool valid = CheckSessionAnswer(request.queries(k), response.answers(k), k, scene_id);
      if (request.until_invalid() && k + 1 < answers) {
        PROX_FUZZ_CHECK(valid, "until_invalid answers no query after an invalid one");
      }
      if (k + 1 == answers && answers < queries) PROX_FUZZ_CHECK(!valid, "until_invalid stops at an invalid answer");
    }
    ++answered;
  }
  stream->WritesDone();
  v1::SessionResponse extra;
  PROX_FUZZ_CHECK(!stream->Read(&extra), "one answer per request");
  const grpc::Status status = stream->Finish();
  CheckStatus(status);
  if (status.ok()) PROX_FUZZ_CHECK(answered == requests.size(), "an OK session answered every request");
  PROX_FUZZ_CHECK(H().registry.size() == 1, "a session changes no scene");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  Harness& h = H();
  server::ProximityServiceImpl& s = *h.service;
  const uint8_t rpc = data[0] % server::kNumRpcs;
  ++data, --size;
  switch (static_cast<server::Rpc>(rpc)) {
    case server::Rpc::kCreateScene:
      Unary<v1::CreateSceneRequest, v1::CreateSceneResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.CreateScene(c, q, r); },
          [](const v1::CreateSceneRequest&, const v1::CreateSceneResponse& r) {
            CheckSceneInfo(r.scene());
            PROX_FUZZ_CHECK(H().registry.Find(r.scene().scene_id()) != nullptr, "a created scene is loaded");
          });
      break;
    case server::Rpc::kGetScene:
      Unary<v1::GetSceneRequest, v1::GetSceneResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.GetScene(c, q, r); },
          [](const v1::GetSceneRequest&, const v1::GetSceneResponse& r) { CheckSceneInfo(r.scene()); });
      break;
    case server::Rpc::kListScenes:
      Unary<v1::ListScenesRequest, v1::ListScenesResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.ListScenes(c, q, r); },
          [](const v1::ListScenesRequest& q, const v1::ListScenesResponse& r) {
            // The base scene alone is loaded: listed unless the page token starts after its id.
            const bool after_base = !q.page_token().empty() && H().base->id <= q.page_token();
            PROX_FUZZ_CHECK(r.scenes_size() == (after_base ? 0 : 1), "the base scene alone is loaded");
            PROX_FUZZ_CHECK(r.next_page_token().empty(), "one scene fits one page");
            for (const auto& info : r.scenes()) CheckSceneInfo(info);
          });
      break;
    case server::Rpc::kUpdateWorld:
      Unary<v1::UpdateWorldRequest, v1::UpdateWorldResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.UpdateWorld(c, q, r); },
          [](const v1::UpdateWorldRequest&, const v1::UpdateWorldResponse& r) {
            CheckSceneInfo(r.scene());
            PROX_FUZZ_CHECK(r.scene().version() >= 1, "an updated scene has a new version");
            PROX_FUZZ_CHECK(!r.scene().parent_scene_id().empty(), "an updated scene names its parent");
          });
      break;
    case server::Rpc::kDeleteScene:
      Unary<v1::DeleteSceneRequest, v1::DeleteSceneResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.DeleteScene(c, q, r); },
          [](const v1::DeleteSceneRequest& q, const v1::DeleteSceneResponse&) {
            PROX_FUZZ_CHECK(H().registry.Find(q.scene_id()) == nullptr, "a deleted scene is gone");
          });
      break;
    case server::Rpc::kCheckState:
      Unary<v1::CheckStateRequest, v1::CheckStateResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.CheckState(c, q, r); },
          [](const v1::CheckStateRequest&, const v1::CheckStateResponse& r) {
            if (!r.free()) PROX_FUZZ_CHECK(!r.contact().robot().empty(), "a collision names its pair");
          });
      break;
    case server::Rpc::kCheckStates:
      Unary<v1::CheckStatesRequest, v1::CheckStatesResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.CheckStates(c, q, r); },
          [](const v1::CheckStatesRequest& q, const v1::CheckStatesResponse& r) {
            PROX_FUZZ_CHECK(r.free_size() == r.within_limits_size(), "one answer per state");
            PROX_FUZZ_CHECK(r.free_size() == Rows(q.states(), BaseDof()), "one answer per state");
            int64_t free = 0;
            for (bool f : r.free()) free += f ? 1 : 0;
            PROX_FUZZ_CHECK(free == r.free_count(), "free_count counts the free states");
            int64_t last = -1;
            for (const v1::StateContact& c : r.contacts()) {
              PROX_FUZZ_CHECK(static_cast<int64_t>(c.index()) > last && c.index() < static_cast<uint32_t>(r.free_size()),
                              "contacts ascend within the batch");
              PROX_FUZZ_CHECK(!r.free(static_cast<int>(c.index())), "a contact is for a colliding state");
              last = c.index();
            }
            if (q.include_contacts()) {
              PROX_FUZZ_CHECK(r.contacts_size() == r.free_size() - free, "one contact per colliding state");
            } else {
              PROX_FUZZ_CHECK(r.contacts_size() == 0, "contacts only when asked");
            }
          });
      break;
    case server::Rpc::kComputeDistance:
      Unary<v1::ComputeDistanceRequest, v1::ComputeDistanceResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.ComputeDistance(c, q, r); },
          [](const v1::ComputeDistanceRequest& q, const v1::ComputeDistanceResponse& r) {
            PROX_FUZZ_CHECK(r.lower_bound() >= 0.0 && r.lower_bound() <= r.upper_bound(), "0 <= lower <= upper");
            if (r.beyond_max_distance()) {
              PROX_FUZZ_CHECK(q.max_distance() > 0.0 && r.lower_bound() >= q.max_distance(),
                              "beyond max_distance means lower >= max_distance");
            }
            if (r.has_nearest()) CheckPairDistance(r.nearest());
            for (const v1::PairDistance& p : r.pairs()) {
              CheckPairDistance(p);
              PROX_FUZZ_CHECK(p.lower() >= r.lower_bound() || r.beyond_max_distance(),
                              "no pair is closer than the clearance");
            }
            if (!q.per_pair()) PROX_FUZZ_CHECK(r.pairs_size() == 0, "pairs only when asked");
          });
      break;
    case server::Rpc::kCheckMotion:
      Unary<v1::CheckMotionRequest, v1::CheckMotionResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.CheckMotion(c, q, r); },
          [](const v1::CheckMotionRequest&, const v1::CheckMotionResponse& r) { CheckMotionResult(r.result()); });
      break;
    case server::Rpc::kCheckPath:
      Unary<v1::CheckPathRequest, v1::CheckPathResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.CheckPath(c, q, r); },
          [](const v1::CheckPathRequest& q, const v1::CheckPathResponse& r) {
            CheckPathResult(r.result(), Rows(q.waypoints(), BaseDof()));
          });
      break;
    case server::Rpc::kValidatePaths:
      ValidatePaths(data, size);
      break;
    case server::Rpc::kTimeOfFirstContact:
      Unary<v1::TimeOfFirstContactRequest, v1::TimeOfFirstContactResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.TimeOfFirstContact(c, q, r); },
          [](const v1::TimeOfFirstContactRequest&, const v1::TimeOfFirstContactResponse& r) {
            PROX_FUZZ_CHECK(r.t_contact() >= 0.0 && r.t_contact() <= 1.0, "t_contact in [0, 1]");
            if (!r.contact() && !r.undecided()) PROX_FUZZ_CHECK(r.t_contact() == 1.0, "no contact: t_contact = 1");
            PROX_FUZZ_CHECK(r.iterations() >= 0, "iterations >= 0");
          });
      break;
    case server::Rpc::kPlan:
      Unary<v1::PlanRequest, v1::PlanResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.Plan(c, q, r); },
          [](const v1::PlanRequest& q, const v1::PlanResponse& r) {
            PROX_FUZZ_CHECK(r.planner() != v1::PLANNER_UNSPECIFIED, "the planner that ran is named");
            const int64_t dof = BaseDof();
            PROX_FUZZ_CHECK(r.path().joint_names_size() == dof, "the path names the scene's joints");
            const int64_t values = static_cast<int64_t>(r.path().positions_f64le().size() / 8) + r.path().positions_size();
            switch (r.outcome()) {
              case v1::PLAN_OUTCOME_SOLVED:
                PROX_FUZZ_CHECK(dof == 0 || (values % dof == 0 && values / dof >= 2), "a solved path has both ends");
                if (r.has_trajectory()) {
                  // Timed: samples in time order, at rest at every waypoint, one per path row.
                  const v1::TimedTrajectory& t = r.trajectory();
                  const int n = t.time_from_start_size();
                  PROX_FUZZ_CHECK(n >= 1 && t.time_from_start(0) == 0.0, "a trajectory starts at 0 s");
                  for (int k = 1; k < n; ++k) {
                    PROX_FUZZ_CHECK(t.time_from_start(k) > t.time_from_start(k - 1), "sample times increase");
                  }
                  PROX_FUZZ_CHECK(dof == 0 || t.waypoint_samples_size() == values / dof, "a sample per waypoint");
                  PROX_FUZZ_CHECK(static_cast<int64_t>(t.velocities().positions_f64le().size()) == int64_t{n} * dof * 8,
                                  "a velocity row per sample");
                  // Blends only where asked, within the tolerance, at most one per inner corner.
                  PROX_FUZZ_CHECK(t.max_deviation() <= q.timing().path_tolerance() * (1 + 1e-12),
                                  "blends keep within path_tolerance");
                  PROX_FUZZ_CHECK(dof == 0 || int64_t{t.blended_corners()} <= std::max<int64_t>(values / dof - 2, 0),
                                  "at most one blend per corner");
                }
                break;
              case v1::PLAN_OUTCOME_TIMEOUT:
              case v1::PLAN_OUTCOME_ITERATION_LIMIT:
              case v1::PLAN_OUTCOME_INVALID_START:
              case v1::PLAN_OUTCOME_INVALID_GOAL:
                PROX_FUZZ_CHECK(values == 0, "an unsolved plan has no path");
                PROX_FUZZ_CHECK(!r.message().empty(), "an unsolved plan says why");
                break;
              default:
                PROX_FUZZ_CHECK(false, "outcome " + std::to_string(r.outcome()) + " is not sent");
            }
          });
      break;
    case server::Rpc::kGetLinkPoses:
      Unary<v1::GetLinkPosesRequest, v1::GetLinkPosesResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.GetLinkPoses(c, q, r); },
          [](const v1::GetLinkPosesRequest&, const v1::GetLinkPosesResponse& r) {
            const int64_t links = r.link_names_size();
            PROX_FUZZ_CHECK(links == H().base->scene->robot().num_links(), "every link is named");
            PROX_FUZZ_CHECK(static_cast<int64_t>(r.poses_f64le().size()) == int64_t{r.count()} * links * 7 * 8,
                            "seven values per link and configuration");
            PROX_FUZZ_CHECK(r.within_limits_size() == static_cast<int>(r.count()),
                            "one limits flag per configuration");
            std::vector<double> poses(r.poses_f64le().size() / 8);
            std::memcpy(poses.data(), r.poses_f64le().data(), poses.size() * 8);
            for (size_t i = 0; i < poses.size(); i += 7) {
              const double norm = std::sqrt(poses[i + 3] * poses[i + 3] + poses[i + 4] * poses[i + 4] +
                                            poses[i + 5] * poses[i + 5] + poses[i + 6] * poses[i + 6]);
              PROX_FUZZ_CHECK(std::abs(norm - 1.0) < 1e-9 && poses[i + 6] >= 0.0, "unit quaternions with w >= 0");
            }
          });
      break;
    case server::Rpc::kSession:
      Session(data, size);
      break;
    case server::Rpc::kComputeContacts:
      Unary<v1::ComputeContactsRequest, v1::ComputeContactsResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.ComputeContacts(c, q, r); },
          [](const v1::ComputeContactsRequest& q, const v1::ComputeContactsResponse& r) {
            const uint32_t max_points = q.max_points() > 0 ? q.max_points() : 8;
            for (int i = 0; i < r.contacts_size(); ++i) {
              const v1::PairContact& c = r.contacts(i);
              PROX_FUZZ_CHECK(c.depth() > 0.0, "a contact has depth > 0");
              PROX_FUZZ_CHECK(c.depth_lower() <= c.depth() && c.depth() <= c.depth_upper(),
                              "depth_lower <= depth <= depth_upper");
              PROX_FUZZ_CHECK(i == 0 || r.contacts(i - 1).depth() >= c.depth(), "contacts deepest first");
              PROX_FUZZ_CHECK(static_cast<uint32_t>(c.points_size()) <= max_points, "at most max_points points");
              PROX_FUZZ_CHECK(c.geometry_pairs() >= 1, "a contact has a colliding geometry pair");
              const double n = std::sqrt(c.normal().x() * c.normal().x() + c.normal().y() * c.normal().y() +
                                         c.normal().z() * c.normal().z());
              PROX_FUZZ_CHECK(std::abs(n - 1.0) < 1e-6, "a contact normal is unit, got " + std::to_string(n));
              PROX_FUZZ_CHECK(!c.pair().robot().empty() && !c.pair().other().empty(), "a contact names its pair");
            }
            if (q.exclude_world() || q.exclude_self()) return;
            // Contacts exactly when CLEAR finds a collision (both count padded geometry).
            v1::CheckStateRequest clear;
            clear.set_scene_id(q.scene_id());
            *clear.mutable_state() = q.state();
            v1::CheckStateResponse answer;
            const grpc::Status status = Direct(clear, &answer, [](auto* c, auto* cq, auto* cr) {
              return H().service->CheckState(c, cq, cr);
            });
            PROX_FUZZ_CHECK(status.ok() || Stopped(status), "CheckState fails where ComputeContacts answered");
            if (status.ok()) {
              PROX_FUZZ_CHECK(answer.free() == (r.contacts_size() == 0),
                              "contacts exactly when CheckState collides");
              PROX_FUZZ_CHECK(answer.within_limits() == r.within_limits(), "within_limits is CheckState's");
            }
          });
      break;
    case server::Rpc::kComputeSignedDistance:
      Unary<v1::ComputeSignedDistanceRequest, v1::ComputeSignedDistanceResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.ComputeSignedDistance(c, q, r); },
          [](const v1::ComputeSignedDistanceRequest&, const v1::ComputeSignedDistanceResponse& r) {
            PROX_FUZZ_CHECK(r.lower() <= r.distance() && r.distance() <= r.upper(), "lower <= distance <= upper");
            const double n = std::sqrt(r.normal().x() * r.normal().x() + r.normal().y() * r.normal().y() +
                                       r.normal().z() * r.normal().z());
            PROX_FUZZ_CHECK(std::abs(n - 1.0) < 1e-6, "the normal is unit, got " + std::to_string(n));
            PROX_FUZZ_CHECK(!r.pair().robot().empty() && !r.pair().other().empty(), "the pair is named");
          });
      break;
    case server::Rpc::kNameScene:
      Unary<v1::NameSceneRequest, v1::NameSceneResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.NameScene(c, q, r); },
          [](const v1::NameSceneRequest& q, const v1::NameSceneResponse& r) {
            CheckSceneInfo(r.scene());
            const auto& names = r.scene().names();
            const bool listed = std::find(names.begin(), names.end(), q.name()) != names.end();
            const std::string holder = H().registry.NameHolder(q.name());
            if (q.remove()) {
              PROX_FUZZ_CHECK(!listed && holder.empty(), "a removed name names no scene");
            } else {
              PROX_FUZZ_CHECK(listed && holder == r.scene().scene_id(), "a given name names its scene");
              PROX_FUZZ_CHECK(H().registry.Find(q.name()) != nullptr, "a name finds its scene");
            }
          });
      break;
    case server::Rpc::kGetIK:
      Unary<v1::GetIKRequest, v1::GetIKResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.GetIK(c, q, r); },
          [](const v1::GetIKRequest& q, const v1::GetIKResponse& r) {
            PROX_FUZZ_CHECK(r.attempts() >= 0 && r.rejected() >= 0, "counts >= 0");
            if (!r.found()) {
              PROX_FUZZ_CHECK(!r.message().empty(), "no solution says why");
              return;
            }
            // The solution, posed here, meets the goal within the joint limits (and is free when asked).
            const core::Scene& scene = *H().base->scene;
            const core::RobotModel& robot = scene.robot();
            PROX_FUZZ_CHECK(r.solution().positions_size() == robot.num_positions(), "every joint is given");
            std::vector<double> x(r.solution().positions().begin(), r.solution().positions().end());
            PROX_FUZZ_CHECK(robot.WithinLimits(x), "the solution lies within the joint limits");
            auto link = robot.FindLink(q.goal().link());
            PROX_FUZZ_CHECK(link.ok(), "a solution's goal names a link");
            auto X = robot.ForwardKinematics(x, scene.X_WB());
            PROX_FUZZ_CHECK(X.ok(), "the solution poses");
            const auto& o = q.goal().pose().orientation();
            const bool identity = o.x() == 0 && o.y() == 0 && o.z() == 0 && o.w() == 0;
            const core::Vec3 p(q.goal().pose().position().x(), q.goal().pose().position().y(),
                               q.goal().pose().position().z());
            const core::Vec3 offset(q.goal().point_offset().x(), q.goal().point_offset().y(), q.goal().point_offset().z());
            const core::Vec3 at = X.value()[static_cast<size_t>(link.value())] * offset;
            const core::RigidTransform X_WT =
                identity ? core::RigidTransform(core::Mat3::Identity(), p)
                         : core::PoseFromQuaternion(p, Eigen::Quaterniond(o.w(), o.x(), o.y(), o.z()));
            const core::Vec3 d = X_WT.R.transpose() * (at - X_WT.p);
            const core::Vec3 size(q.goal().region_size().x(), q.goal().region_size().y(), q.goal().region_size().z());
            const double reach = size == core::Vec3::Zero() ? 1e-4 : size.norm();  // the region's bounding sphere
            PROX_FUZZ_CHECK(d.norm() <= reach * (1 + 1e-9) + 1e-12, "the point lies in the goal's region");
            if (q.avoid_collisions()) {
              core::SceneCache cache;
              auto checked = scene.CheckState(x, &cache);
              PROX_FUZZ_CHECK(checked.ok() && checked.value().free, "avoid_collisions: the solution is free");
            }
          });
      break;
    case server::Rpc::kGetSceneGeometry:
      Unary<v1::GetSceneGeometryRequest, v1::GetSceneGeometryResponse>(
          data, size, [&](auto* c, auto* q, auto* r) { return s.GetSceneGeometry(c, q, r); },
          [](const v1::GetSceneGeometryRequest& q, const v1::GetSceneGeometryResponse& r) {
            uint64_t triangles = 0;
            for (const auto* groups : {&r.links(), &r.objects(), &r.attached_objects()}) {
              for (const v1::GeometryGroup& g : *groups) {
                for (const v1::GeometryPart& p : g.parts()) {
                  PROX_FUZZ_CHECK(p.mesh().triangles_size() % 3 == 0 && p.mesh().vertices_size() % 3 == 0,
                                  "whole triangles and vertices");
                  const auto vertices = static_cast<uint32_t>(p.mesh().vertices_size() / 3);
                  for (uint32_t i : p.mesh().triangles()) PROX_FUZZ_CHECK(i < vertices, "indices within the mesh");
                  triangles += static_cast<uint64_t>(p.mesh().triangles_size() / 3);
                }
              }
            }
            PROX_FUZZ_CHECK(triangles == r.triangles(), "the triangle count is the meshes'");
            if (q.max_triangles() > 0) PROX_FUZZ_CHECK(r.triangles() <= q.max_triangles(), "within max_triangles");
          });
      break;
  }
  h.Reset();
  return 0;
}
