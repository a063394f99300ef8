// A program outside the project, built against an installed proximity package (find_package): the
// planar two-link arm of tests/data/robots among three blocks, CLEAR on known configurations, a plan
// through the narrow passage re-checked densely by CLEAR, a signed distance (proximity::contact), a mesh's
// distance to a box and a MotionBenchMaker request (proximity::mbm). Exits 1 on any wrong answer.
//
// Usage: package_consumer <planar_2link.urdf>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "proximity/core/contact/scene_contacts.h"
#include "proximity/core/mesh/mesh.h"
#include "proximity/core/robot/robot_model.h"
#include "proximity/core/scene/geometry.h"
#include "proximity/core/scene/scene.h"
#include "proximity/mbm/mbm.h"
#include "proximity/planners/planner.h"
#include "proximity/planners/scene_validity.h"

#if EIGEN_MAX_ALIGN_BYTES != 16
#error "proximity::core must give its consumers EIGEN_MAX_ALIGN_BYTES=16 (proximity::flags)"
#endif

namespace {

using proximity::core::Vec3;

int failures = 0;

void Expect(bool ok, const std::string& what) {
  std::printf("%s: %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

proximity::core::WorldObject BoxObject(const std::string& id, const Vec3& lo, const Vec3& hi) {
  proximity::core::WorldObject o;
  o.id = id;
  proximity::core::ObjectPart part;
  part.geometry.shape = proximity::core::Box{0.5 * (hi - lo)};
  part.X_WG.p = 0.5 * (hi + lo);
  o.parts.push_back(part);
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  namespace core = proximity::core;
  namespace planners = proximity::planners;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <planar_2link.urdf>\n", argv[0]);
    return 2;
  }

  // The arm (links 1.0 and 0.5 long in the plane z = 0.1) and a block beyond the upper link's reach at
  // q1 = 0, with neighbours above and below: passing q1 = 0 takes a folded elbow.
  auto robot = core::RobotModel::FromUrdfFile(argv[1]);
  if (!robot.ok()) {
    std::fprintf(stderr, "FAIL: %s\n", robot.error().message.c_str());
    return 1;
  }
  core::SceneDescription d;
  d.robot = robot.value();
  d.objects.push_back(BoxObject("block", Vec3(1.12, -0.3, -0.1), Vec3(1.8, 0.3, 0.3)));
  d.objects.push_back(BoxObject("above", Vec3(1.0, 0.56, -0.1), Vec3(1.8, 1.0, 0.3)));
  d.objects.push_back(BoxObject("below", Vec3(1.0, -1.0, -0.1), Vec3(1.8, -0.56, 0.3)));
  auto built = core::Scene::Build(d);
  if (!built.ok()) {
    std::fprintf(stderr, "FAIL: %s\n", built.error().message.c_str());
    return 1;
  }
  const std::shared_ptr<const core::Scene> scene = built.value();
  Expect(scene->robot().num_positions() == 2, "the arm has 2 joints");

  // CLEAR.
  core::SceneCache cache;
  const auto is_free = [&](const std::vector<double>& q) {
    const core::Result<core::StateResult> state = scene->CheckState(q, &cache);
    return state.ok() && state.value().free;
  };
  const std::vector<double> start{-2.4, 0.0}, goal{2.4, 0.0}, stretched{0.0, 0.0}, folded{0.0, 2.0};
  Expect(is_free(start), "CLEAR(-2.4, 0) is free");
  Expect(is_free(folded), "CLEAR(0, 2) (folded) is free");
  const core::Result<core::StateResult> hit = scene->CheckState(stretched, &cache);
  const bool blocked = hit.ok() && !hit.value().free;
  Expect(blocked && !hit.value().contact.self && hit.value().contact.OtherName(*scene) == "block",
         "CLEAR(0, 0) hits the block" + (blocked ? ": " + hit.value().contact.Describe(*scene) : ""));

  // LINK: the straight swing sweeps the stretched arm through the block.
  const core::Result<core::MotionResult> motion = scene->CheckMotion(start, goal, core::MotionRequest{}, &cache);
  Expect(motion.ok() && !motion.value().free, "LINK((-2.4, 0), (2.4, 0)) collides");

  // A plan (RRT-Connect, certified edges), then every edge re-checked by CLEAR at 1e-3 rad steps.
  planners::ScenePlanning planning(scene);
  planners::PlannerOptions options;
  options.seed = 7;
  planners::Termination termination;
  termination.time_limit_s = 30.0;
  auto plan = planners::Plan(planning.context(), start, goal, options, termination);
  const bool solved = plan.ok() && plan.value().solved();
  Expect(solved, std::string("RRT-Connect: ") +
                     (plan.ok() ? planners::PlanOutcomeName(plan.value().outcome) : plan.error().message.c_str()));
  if (solved) {
    const std::vector<planners::Configuration>& path = plan.value().path;
    Expect(path.front() == start && path.back() == goal, "the path runs from the start to the goal");
    Expect(path.size() >= 3, "the path folds the elbow (" + std::to_string(path.size()) + " waypoints)");
    int64_t states = 0;
    bool dense_free = true;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const double dq = std::max(std::abs(path[i + 1][0] - path[i][0]), std::abs(path[i + 1][1] - path[i][1]));
      const int steps = std::max(1, static_cast<int>(std::ceil(dq / 1e-3)));
      for (int k = 0; k <= steps; ++k) {
        const double t = static_cast<double>(k) / steps;
        const std::vector<double> q{path[i][0] + t * (path[i + 1][0] - path[i][0]),
                                    path[i][1] + t * (path[i + 1][1] - path[i][1])};
        dense_free = dense_free && is_free(q);
        ++states;
      }
    }
    Expect(dense_free, "every edge is free at " + std::to_string(states) + " states 1e-3 rad apart");
    std::printf("plan: %lld iterations, %zu waypoints, length %.3f rad\n",
                static_cast<long long>(plan.value().stats.iterations), path.size(), plan.value().stats.length);
  }

  // proximity::contact: the signed distance between the link CLEAR named and the block, negative in
  // contact and positive apart, each bracketed by its certified interval.
  if (blocked) {
    const std::string link = hit.value().contact.Name(*scene);
    const auto inside = core::ComputePairSignedDistance(*scene, link, "block", stretched, {}, &cache);
    const auto apart = core::ComputePairSignedDistance(*scene, link, "block", start, {}, &cache);
    Expect(inside.ok() && inside.value().distance < 0.0 && inside.value().lower <= inside.value().distance &&
               inside.value().distance <= inside.value().upper && apart.ok() && apart.value().distance > 0.0 &&
               apart.value().lower <= apart.value().distance && apart.value().distance <= apart.value().upper,
           "signed distance of " + link + " and the block: negative at (0, 0), positive at (-2.4, 0)");
  }

  // Geometry: a built mesh (a unit cube) 0.5 m from a unit box, exactly.
  auto cube = core::BuildMeshModel(core::MakeBoxMesh(Vec3(1.0, 1.0, 1.0)));
  core::Geometry mesh_cube, box;
  if (cube.ok()) mesh_cube.mesh = cube.value();
  box.shape = core::Box{Vec3(0.5, 0.5, 0.5)};
  core::RigidTransform X_box;
  X_box.p = Vec3(1.5, 0.2, 0.0);
  const auto d_cube = core::GeometryDistance(mesh_cube, core::RigidTransform(), box, X_box, core::DistanceRequest{});
  Expect(cube.ok() && d_cube.ok() && std::abs(d_cube.value().lower_bound - 0.5) < 1e-9 &&
             std::abs(d_cube.value().upper_bound - 0.5) < 1e-9,
         "a unit cube mesh and a unit box 0.5 m apart");

  // proximity::mbm: a MotionBenchMaker request.
  auto request = proximity::mbm::LoadMbmRequestFromString(
      "group_name: arm\nstart_state:\n  joint_state:\n    name: [shoulder, elbow]\n    position: [-2.4, 0]\n"
      "goal_constraints:\n  - joint_constraints:\n      - {joint_name: shoulder, position: 2.4}\n"
      "      - {joint_name: elbow, position: 0}\n");
  Expect(request.ok() && request.value().start_joint_positions == start,
         "MotionBenchMaker request" + (request.ok() ? std::string() : ": " + request.error().message));

  std::printf("%s\n", failures == 0 ? "package consumer: all checks passed" : "package consumer: FAILED");
  return failures == 0 ? 0 : 1;
}
