// Request bytes of every RPC through proximityd's real handlers. The first byte picks the RPC, the rest
// is parsed as that RPC's request message (bytes that do not parse are not requests: gRPC refuses them
// before any handler runs). Unary handlers are called directly on a ProximityServiceImpl with a
// grpc::ServerContext; ValidatePaths, whose handler needs a live stream, goes through an in-process
// gRPC channel to the same service. The registry holds one scene, aliased "default": the planar
// 2-link arm (tests/data/robots) among a few world objects, with an attached tool; every input starts
// from that registry (scenes a request made are removed, a deleted default scene comes back).
//
// Checked: no crash, no sanitizer report, no exception; every status is one the protocol documents
// (OK, INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, CANCELLED, UNAVAILABLE) with
// a message when not OK; no NaN anywhere in a response; a failed request changes no scene; OK answers
// agree with themselves (a free motion has t_free = 1, counts match, intervals are ordered, ...).

#include <google/protobuf/descriptor.h>
#include <google/protobuf/stubs/logging.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/server_builder.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
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

  // Back to the one base scene.
  void Reset() {
    for (const auto& entry : registry.List()) {
      if (entry->id != base->id) registry.Erase(entry->id);
    }
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

template <class Request, class Response, class Call>
void Unary(const uint8_t* data, size_t size, Call call, void (*check)(const Request&, const Response&)) {
  Request request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return;
  Response response;
  grpc::ServerContext context;
  const size_t scenes_before = H().registry.size();
  const grpc::Status status = call(&context, &request, &response);
  CheckStatus(status);
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
          [](const v1::PlanRequest&, const v1::PlanResponse& r) {
            PROX_FUZZ_CHECK(r.planner() != v1::PLANNER_UNSPECIFIED, "the planner that ran is named");
            const int64_t dof = BaseDof();
            PROX_FUZZ_CHECK(r.path().joint_names_size() == dof, "the path names the scene's joints");
            const int64_t values = static_cast<int64_t>(r.path().positions_f64le().size() / 8) + r.path().positions_size();
            switch (r.outcome()) {
              case v1::PLAN_OUTCOME_SOLVED:
                PROX_FUZZ_CHECK(dof == 0 || (values % dof == 0 && values / dof >= 2), "a solved path has both ends");
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
