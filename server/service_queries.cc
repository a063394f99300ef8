// The service's query handlers: CLEAR, LINK, paths, distance, time of first contact.
#include "server/service.h"
#include "server/queries.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/scene_planner.h"
#include "proximity/planners/timing.h"
#include "server/batch.h"
#include "server/contacts.h"
#include "server/errors.h"
#include "server/scene_geometry.h"
#include "server/service_internal.h"


namespace proximity::server {
// ------------------------------------------------------------------------------------------------
// Queries

grpc::Status ProximityServiceImpl::CheckState(grpc::ServerContext* context, const v1::CheckStateRequest* request,
                                              v1::CheckStateResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckState, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    // The thread's scratch (queries.h): a warm unary CheckState allocates nothing beyond its response.
    QueryScratch& scratch = *ThreadScratch();
    std::vector<double>& q = scratch.q0;
    std::vector<std::string> warnings;
    if (core::Status s = ResolveState(scene.robot(), request->state(), "state", &q, &warnings); !s.ok()) {
      return ToGrpcStatus(s);
    }
    const core::Result<core::StateResult> checked = scene.CheckState(q, scratch.cache);
    if (!checked.ok()) return ToGrpcStatus(checked.error());
    const core::StateResult& r = checked.value();
    ToWire(scene, r, response);
    AddWarnings(call, &warnings, response);
    const Work work = StateWork(r);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kClear, 1, work);
    call.record().set_states(1);
    return grpc::Status::OK;
  });
}

namespace {

// CheckStates' states per Scene::CheckStates call (a run, RunChunkedRuns): enough to fill the SIMD
// lanes many times over, few enough that the deadline and a cancellation are asked every millisecond
// or so (a few microseconds a state).
constexpr int64_t kStatesRun = 256;

// One worker's scratch and tallies in a CheckStates call: no sharing between workers inside the loop.
struct StatesSlot {
  core::SceneCache cache;
  std::vector<double> q;                   // a run's configurations, row after row
  std::vector<core::StateResult> results;  // their answers
  Work work;
  int64_t free_count = 0;
  std::vector<std::pair<int64_t, core::StateContact>> contacts;
};

// One worker's scratch and tallies in a ValidatePaths call (its cache lasts the whole stream).
struct PathsSlot {
  core::SceneCache cache;
  std::vector<double> waypoints;
  Work work;
  int64_t segments = 0;
};

}  // namespace

grpc::Status ProximityServiceImpl::CheckStates(grpc::ServerContext* context, const v1::CheckStatesRequest* request,
                                               v1::CheckStatesResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckStates, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto rows = ConfigurationRows::Make(scene.robot(), request->states(), "states", limits_.max_batch_states,
                                        kBatchStatesOption);
    if (!rows.ok()) return ToGrpcStatus(rows.error());
    const ConfigurationRows& states = rows.value();
    const int64_t n = states.rows();
    call.record().set_states(n);

    response->mutable_free()->Resize(static_cast<int>(n), false);
    response->mutable_within_limits()->Resize(static_cast<int>(n), false);
    bool* free = response->mutable_free()->mutable_data();
    bool* within = response->mutable_within_limits()->mutable_data();
    const auto dof = static_cast<size_t>(scene.dof());
    std::vector<StatesSlot> slots(static_cast<size_t>(pool_->slots()));
    for (StatesSlot& s : slots) {
      s.q.resize(static_cast<size_t>(std::min(n, kStatesRun)) * dof);
      s.results.resize(static_cast<size_t>(std::min(n, kStatesRun)));
    }
    const bool contacts = request->include_contacts();
    const auto record = [&](StatesSlot& slot, int64_t i, const core::StateResult& r) {
      free[i] = r.free;
      within[i] = r.within_limits;
      slot.free_count += r.free ? 1 : 0;
      slot.work += StateWork(r);
      if (contacts && !r.free) slot.contacts.emplace_back(i, r.contact);
    };
    const auto run = [&](int64_t begin, int64_t end, int slot_index) -> core::Status {
      StatesSlot& slot = slots[static_cast<size_t>(slot_index)];
      const auto count = static_cast<size_t>(end - begin);
      for (size_t k = 0; k < count; ++k) states.Row(begin + static_cast<int64_t>(k), slot.q.data() + k * dof);
      const std::span<core::StateResult> results(slot.results.data(), count);
      if (scene.CheckStates(std::span<const double>(slot.q.data(), count * dof), results, &slot.cache).ok()) {
        for (size_t k = 0; k < count; ++k) record(slot, begin + static_cast<int64_t>(k), results[k]);
        return {};
      }
      // A configuration the core refuses (a value beyond its range): the run one state at a time, so
      // that the states before it count and the error names it as one state's check does.
      for (size_t k = 0; k < count; ++k) {
        const int64_t i = begin + static_cast<int64_t>(k);
        const core::Result<core::StateResult> checked =
            scene.CheckState(std::span<const double>(slot.q.data() + k * dof, dof), &slot.cache);
        if (!checked.ok()) return WithField("states: configuration " + std::to_string(i), checked.error());
        record(slot, i, checked.value());
      }
      return {};
    };
    const BatchOutcome outcome = RunChunkedRuns(*pool_, n, kStatesRun, call.cancel(), run);

    Work work;
    int64_t free_count = 0;
    for (const StatesSlot& s : slots) {
      work += s.work;
      free_count += s.free_count;
    }
    call.record().Count(QueryKind::kClear, work.states, work);
    if (outcome.stopped || outcome.error) {
      response->Clear();
      if (outcome.stopped) {
        return call.cancel().status(std::to_string(outcome.done) + " of " + std::to_string(n) + " states");
      }
      return ToGrpcStatus(*outcome.error);
    }
    const auto contacts_in_order = InIndexOrder(slots, [](const StatesSlot& s) -> const auto& { return s.contacts; });
    for (const auto& [index, contact] : contacts_in_order) {
      v1::StateContact* out = response->add_contacts();
      out->set_index(static_cast<uint32_t>(index));
      ToWire(scene, contact, out->mutable_contact());
    }
    response->set_free_count(static_cast<uint32_t>(free_count));
    work.ToWire(response->mutable_stats());
    return call.FitResponse(response, "split the batch or leave out contacts");
  });
}

grpc::Status ProximityServiceImpl::ComputeDistance(grpc::ServerContext* context,
                                                   const v1::ComputeDistanceRequest* request,
                                                   v1::ComputeDistanceResponse* response) {
  return opening_.ServeScene(context, Rpc::kComputeDistance, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    std::vector<std::string> warnings;
    const Answered a = AnswerDistance(scene, *request, "", ThreadScratch(), call.interrupt(), &warnings, response);
    if (!a.status.ok()) return ToGrpcStatus(a.status);
    if (a.stopped) return call.cancel().status(std::to_string(a.work.pairs_tested) + " pairs");
    AddWarnings(call, &warnings, response);
    call.record().Count(QueryKind::kDistance, 1, a.work);
    call.record().set_states(1);
    return call.FitResponse(response, "leave out per_pair");
  });
}

grpc::Status ProximityServiceImpl::CheckMotion(grpc::ServerContext* context, const v1::CheckMotionRequest* request,
                                               v1::CheckMotionResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckMotion, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    std::vector<std::string> warnings;
    const Answered a = AnswerMotion(scene, *request, "", ThreadScratch(), call.interrupt(), &warnings, response);
    if (!a.status.ok()) return ToGrpcStatus(a.status);
    if (a.stopped) {
      call.record().Count(QueryKind::kLink, 0, a.work);
      return call.cancel().status(std::to_string(a.work.states) + " states of the motion");
    }
    AddWarnings(call, &warnings, response);
    call.record().Count(QueryKind::kLink, 1, a.work);
    call.record().set_states(a.work.states);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::CheckPath(grpc::ServerContext* context, const v1::CheckPathRequest* request,
                                             v1::CheckPathResponse* response) {
  return opening_.ServeScene(context, Rpc::kCheckPath, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto rows = ToPath(scene.robot(), request->waypoints(), "waypoints", limits_.max_path_waypoints,
                       kPathWaypointsOption);
    if (!rows.ok()) return ToGrpcStatus(rows.error());
    auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
    if (!motion.ok()) return ToGrpcStatus(motion.error());
    const std::vector<double> waypoints = rows.value().All();
    QueryScratch& scratch = *ThreadScratch();
    core::MotionRequest query = motion.value();
    query.stop = call.interrupt();
    const core::Result<core::PathResult> checked = scene.CheckPath(waypoints, query, scratch.cache);
    if (!checked.ok()) return ToGrpcStatus(checked.error());
    const core::PathResult& r = checked.value();
    const Work work = MotionWork(r);
    call.record().Count(QueryKind::kLink, r.segments_checked, work);
    if (r.stopped) return call.cancel().status("part of the path");
    call.metrics().AddQueries(QueryKind::kPath, 1);
    ToWire(scene, r, response->mutable_result());
    work.ToWire(response->mutable_stats());
    call.record().set_states(work.states);
    return grpc::Status::OK;
  });
}

grpc::Status ProximityServiceImpl::ValidatePaths(grpc::ServerContext* context, const v1::ValidatePathsRequest* request,
                                                 grpc::ServerWriter<v1::ValidatePathsResponse>* writer) {
  return opening_.ServeScene(context, Rpc::kValidatePaths, request->scene_id(), [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto motion = ToMotionRequest(request->mode(), request->resolution(), "");
    if (!motion.ok()) return ToGrpcStatus(motion.error());
    // Every path is checked before the first result goes out: a bad request streams nothing.
    auto decoded = ToPaths(scene.robot(), request->paths(), limits_.max_path_waypoints, kPathWaypointsOption,
                           limits_.max_batch_states, kBatchStatesOption);
    if (!decoded.ok()) return ToGrpcStatus(decoded.error());
    const std::vector<ConfigurationRows>& paths = decoded.value().paths;
    call.record().set_states(decoded.value().waypoints);

    std::vector<PathsSlot> slots(static_cast<size_t>(pool_->slots()));
    call.WatchStream();
    core::MotionRequest query = motion.value();
    query.stop = call.interrupt();
    const BatchOutcome outcome = StreamResults<v1::ValidatePathsResponse>(
        *pool_, static_cast<int64_t>(paths.size()), call.cancel(),
        [&](int64_t p, int slot_index, v1::ValidatePathsResponse* out) -> core::Result<bool> {
          PathsSlot& slot = slots[static_cast<size_t>(slot_index)];
          const ConfigurationRows& rows = paths[static_cast<size_t>(p)];
          slot.waypoints.resize(static_cast<size_t>(rows.rows() * rows.dof()));
          for (int64_t i = 0; i < rows.rows(); ++i) rows.Row(i, slot.waypoints.data() + i * rows.dof());
          const core::Result<core::PathResult> checked = scene.CheckPath(slot.waypoints, query, &slot.cache);
          if (!checked.ok()) return WithField("paths[" + std::to_string(p) + "]", checked.error());
          const core::PathResult& r = checked.value();
          const Work work = MotionWork(r);
          slot.work += work;
          slot.segments += r.segments_checked;
          if (r.stopped) return false;
          out->set_index(static_cast<uint32_t>(p));
          ToWire(scene, r, out->mutable_result());
          work.ToWire(out->mutable_stats());
          return true;
        },
        [&](const v1::ValidatePathsResponse& out) {
          // Write fails once the client is gone: the remaining paths are not checked.
          if (writer->Write(out)) return true;
          call.metrics().AddFailedSend();
          return false;
        });

    Work work;
    int64_t segments = 0;
    for (const PathsSlot& s : slots) {
      work += s.work;
      segments += s.segments;
    }
    call.metrics().AddQueries(QueryKind::kLink, segments);
    call.record().Count(QueryKind::kPath, outcome.done, work);
    if (outcome.stopped) {
      return call.cancel().status(std::to_string(outcome.done) + " of " + std::to_string(paths.size()) + " paths");
    }
    if (outcome.error) return ToGrpcStatus(*outcome.error);
    return grpc::Status::OK;
  });
}

namespace {

// The time of first contact of a free-flying body: its earliest part's (a tie keeps the first part),
// with the work of all its parts.
core::Result<core::ContinuousResult> BodyFirstContact(const core::Scene& scene, const std::vector<BodyPart>& parts,
                                                      const core::ContinuousRequest& query) {
  core::ContinuousResult r;
  bool first = true;
  int32_t iterations = 0;
  int64_t distance_queries = 0;
  core::QueryStats stats;
  for (const BodyPart& part : parts) {
    const core::Result<core::ContinuousResult> checked =
        scene.TimeOfFirstContact(part.geometry, part.X0, part.X1, query);
    if (!checked.ok()) return checked.error();
    const core::ContinuousResult& pr = checked.value();
    iterations += pr.iterations;
    distance_queries += pr.distance_queries;
    stats += pr.stats;
    if (first || pr.t_contact < r.t_contact) r = pr;
    first = false;
  }
  r.iterations = iterations;
  r.distance_queries = distance_queries;
  r.stats = stats;
  return r;
}

}  // namespace

grpc::Status ProximityServiceImpl::TimeOfFirstContact(grpc::ServerContext* context,
                                                      const v1::TimeOfFirstContactRequest* request,
                                                      v1::TimeOfFirstContactResponse* response) {
  return opening_.ServeScene(context, Rpc::kTimeOfFirstContact, request->scene_id(),
                             [&](CallScope& call) -> grpc::Status {
    const core::Scene& scene = call.scene();
    auto continuous = ToContinuousRequest(request->tolerance());
    if (!continuous.ok()) return ToGrpcStatus(continuous.error());
    core::ContinuousRequest query = continuous.value();
    query.stop = call.interrupt();
    core::ContinuousResult r;
    switch (request->motion_case()) {
      case v1::TimeOfFirstContactRequest::kJointMotion: {
        QueryScratch& scratch = *ThreadScratch();
        std::vector<double>& q0 = scratch.q0;
        std::vector<double>& q1 = scratch.q1;
        const v1::JointMotion& m = request->joint_motion();
        std::vector<std::string> warnings;
        if (core::Status s = ResolveState(scene.robot(), m.start(), "joint_motion.start", &q0, &warnings); !s.ok()) {
          return ToGrpcStatus(s);
        }
        if (core::Status s = ResolveState(scene.robot(), m.goal(), "joint_motion.goal", &q1, &warnings); !s.ok()) {
          return ToGrpcStatus(s);
        }
        AddWarnings(call, &warnings, response);
        core::Result<core::ContinuousResult> checked = scene.TimeOfFirstContact(q0, q1, query, scratch.cache);
        if (!checked.ok()) return ToGrpcStatus(checked.error());
        r = std::move(checked).value();
        break;
      }
      case v1::TimeOfFirstContactRequest::kBodyMotion: {
        auto parts = ToBodyParts(request->body_motion(), files_);
        if (!parts.ok()) return ToGrpcStatus(parts.error());
        core::Result<core::ContinuousResult> checked = BodyFirstContact(scene, parts.value(), query);
        if (!checked.ok()) return ToGrpcStatus(checked.error());
        r = std::move(checked).value();
        break;
      }
      default:
        return ToGrpcStatus(core::InvalidArgument("motion: give joint_motion or body_motion"));
    }
    if (call.cancel().stopped()) return call.cancel().status(std::to_string(r.iterations) + " advancement steps");
    ToWire(scene, r, response);
    const Work work = ContactWork(r);
    work.ToWire(response->mutable_stats());
    call.record().Count(QueryKind::kCcd, 1, work);
    return grpc::Status::OK;
  });
}

}  // namespace proximity::server
