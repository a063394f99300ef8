#include "server/queries.h"

#include <string>
#include <utility>

#include "server/errors.h"

namespace proximity::server {
namespace {

// A request field's name as the caller's clients see it: "start" in a unary call, "motion.start" in a
// Session's motion query.
std::string Field(std::string_view prefix, const char* name) {
  return prefix.empty() ? std::string(name) : std::string(prefix) + "." + name;
}

// A core error as the caller reports it: as it is in a unary call, named after the query in a Session.
core::Status Named(std::string_view prefix, core::Error e) {
  return prefix.empty() ? core::Status(std::move(e)) : core::Status(WithField(prefix, e));
}

}  // namespace

QueryScratch* ThreadScratch() {
  thread_local core::SceneCache cache;
  thread_local QueryScratch scratch{{}, {}, &cache};
  return &scratch;
}

Answered AnswerMotion(const core::Scene& scene, const v1::CheckMotionRequest& in, std::string_view field,
                      QueryScratch* scratch, core::Interrupt stop, std::vector<std::string>* warnings,
                      v1::CheckMotionResponse* out) {
  Answered a;
  a.status = ResolveState(scene.robot(), in.start(), Field(field, "start"), &scratch->q0, warnings);
  if (!a.status.ok()) return a;
  a.status = ResolveState(scene.robot(), in.goal(), Field(field, "goal"), &scratch->q1, warnings);
  if (!a.status.ok()) return a;
  auto motion = ToMotionRequest(in.mode(), in.resolution(), field.empty() ? "" : std::string(field) + ".");
  if (!motion.ok()) {
    a.status = motion.error();
    return a;
  }
  core::MotionRequest request = motion.value();
  request.stop = stop;
  const core::Result<core::MotionResult> checked = scene.CheckMotion(scratch->q0, scratch->q1, request, scratch->cache);
  if (!checked.ok()) {
    a.status = Named(field, checked.error());
    return a;
  }
  const core::MotionResult& r = checked.value();
  a.work = MotionWork(r);
  a.stopped = r.stopped;
  if (a.stopped) return a;
  ToWire(scene, r, out->mutable_result());
  a.work.ToWire(out->mutable_stats());
  return a;
}

Answered AnswerDistance(const core::Scene& scene, const v1::ComputeDistanceRequest& in, std::string_view field,
                        QueryScratch* scratch, core::Interrupt stop, std::vector<std::string>* warnings,
                        v1::ComputeDistanceResponse* out) {
  Answered a;
  a.status = ResolveState(scene.robot(), in.state(), Field(field, "state"), &scratch->q0, warnings);
  if (!a.status.ok()) return a;
  core::SceneDistanceRequest request = ToDistanceRequest(in);
  request.stop = stop;
  const core::Result<core::SceneDistanceResult> distance = scene.ComputeDistance(scratch->q0, request, scratch->cache);
  if (!distance.ok()) {
    a.status = Named(field, distance.error());
    return a;
  }
  const core::SceneDistanceResult& r = distance.value();
  a.work = DistanceWork(r);
  a.stopped = r.stopped;
  if (a.stopped) return a;
  ToWire(scene, r, out);
  a.work.ToWire(out->mutable_stats());
  return a;
}

}  // namespace proximity::server
