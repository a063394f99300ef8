#pragma once
/// @file
/// The query kinds a unary call and a Session query share, each decoded, answered and encoded once:
/// LINK (CheckMotion) and distance(q) (ComputeDistance). The caller owns the scratch (configurations, a
/// SceneCache), the stop condition and what a refusal becomes (a gRPC status for a unary call, a failed
/// answer in a Session, whose fields carry the query's prefix: "motion.start").

#include <string>
#include <string_view>
#include <vector>

#include "proximity/core/scene/scene.h"
#include "proximity/v1/proximity.pb.h"
#include "server/convert.h"

namespace proximity::server {

/// What answering one query came to: refused (`status`, naming the field), stopped by the stop
/// condition (nothing encoded), or answered into the response; the core's work either way.
struct Answered {
  core::Status status;
  bool stopped = false;
  Work work;
};

/// Per-caller scratch for the queries: configurations and the scene cache (one per thread or session).
struct QueryScratch {
  std::vector<double> q0, q1;
  core::SceneCache* cache = nullptr;
};

/// The calling thread's scratch for unary calls: its own cache, warm across the thread's calls.
QueryScratch* ThreadScratch();

/// LINK(q0, q1) of a CheckMotionRequest into `out` (result and stats). `field`: "" for a unary call,
/// "motion" in a Session (its fields then read "motion.start", and core errors are named "motion").
/// `warnings`: where the states' leniency warnings go (null: dropped).
Answered AnswerMotion(const core::Scene& scene, const v1::CheckMotionRequest& in, std::string_view field,
                      QueryScratch* scratch, core::Interrupt stop, std::vector<std::string>* warnings,
                      v1::CheckMotionResponse* out);

/// distance(q) of a ComputeDistanceRequest into `out` (interval, pairs, stats), as AnswerMotion.
Answered AnswerDistance(const core::Scene& scene, const v1::ComputeDistanceRequest& in, std::string_view field,
                        QueryScratch* scratch, core::Interrupt stop, std::vector<std::string>* warnings,
                        v1::ComputeDistanceResponse* out);

}  // namespace proximity::server
