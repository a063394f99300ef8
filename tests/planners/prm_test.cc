// PRM and LazyPRM (prm.cc): the roadmap is kept across queries.
#include "proximity/planners/planner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <random>
#include <span>
#include <thread>

#include "planners/planner_fixtures.h"
#include "proximity/planners/pose_goal.h"
#include "proximity/planners/scene_validity.h"
#include "proximity/planners/timing.h"

namespace proximity::planners {
namespace {

TEST(Planner, PrmKeepsItsRoadmapAcrossQueries) {
  SceneSetup setup(PassageScene(false));
  for (PlannerType type : {PlannerType::kPrm, PlannerType::kLazyPrm}) {
    SCOPED_TRACE(PlannerTypeName(type));
    PlannerOptions options;
    options.type = type;
    auto planner = MakePlanner(setup.context, options);
    ASSERT_TRUE(planner.ok());
    auto first = planner.value()->Solve(std::vector<double>{-2.4, 0.0}, std::vector<double>{2.4, 0.0}, Termination{});
    ASSERT_TRUE(first.ok() && first.value().solved());
    // A second query across the passage reuses the roadmap: far fewer samples.
    auto second = planner.value()->Solve(std::vector<double>{-2.2, 0.5}, std::vector<double>{2.2, -0.5}, Termination{});
    ASSERT_TRUE(second.ok() && second.value().solved());
    EXPECT_GE(second.value().stats.vertices, first.value().stats.vertices);
    EXPECT_LT(second.value().stats.iterations, std::max<int64_t>(1, first.value().stats.iterations));
    EXPECT_EQ(DenseInvalidSegment(*setup.scene, setup.context.space, second.value().path), -1);
  }
}

}  // namespace
}  // namespace proximity::planners
