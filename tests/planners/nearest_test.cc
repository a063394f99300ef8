#include "proximity/planners/nearest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace proximity::planners {
namespace {

// Brute force over every point: (distance, id) sorted.
std::vector<std::pair<double, int32_t>> BruteForce(const JointSpace& space, const std::vector<std::vector<double>>& points,
                                                   const std::vector<double>& q) {
  std::vector<std::pair<double, int32_t>> all;
  for (size_t i = 0; i < points.size(); ++i) all.push_back({space.Distance(q, points[i]), static_cast<int32_t>(i)});
  std::sort(all.begin(), all.end());
  return all;
}

void CheckAgainstBruteForce(const JointSpace& space, int n, uint64_t seed) {
  Rng rng(seed);
  NearestNeighbors nn(space);
  std::vector<std::vector<double>> points;
  std::vector<double> q(static_cast<size_t>(space.dof()));
  std::vector<std::pair<int32_t, double>> got;
  for (int i = 0; i < n; ++i) {
    space.Sample(rng, q);
    // Some points lie off the principal range of a wrapping coordinate, and some repeat exactly.
    if (i % 17 == 3) q[0] += 2.0 * M_PI * (space.wraps(0) ? 1.0 : 0.0);
    if (i % 29 == 5 && !points.empty()) q = points[points.size() / 2];
    points.push_back(q);
    nn.Add(q, i);
    ASSERT_EQ(nn.size(), i + 1);
    if (i % 7 != 0) continue;
    std::vector<double> query(q.size());
    space.Sample(rng, query);
    const auto truth = BruteForce(space, points, query);
    const int32_t nearest = nn.Nearest(query);
    ASSERT_GE(nearest, 0);
    EXPECT_NEAR(space.Distance(query, points[nearest]), truth[0].first, 1e-12) << "point " << i;
    const int k = 1 + i % 12;
    nn.KNearest(query, k, &got);
    ASSERT_EQ(got.size(), std::min<size_t>(k, points.size()));
    for (size_t j = 0; j < got.size(); ++j) {
      EXPECT_NEAR(got[j].second, truth[j].first, 1e-12) << "rank " << j << " of " << k;
      EXPECT_NEAR(space.Distance(query, points[got[j].first]), got[j].second, 1e-12);
    }
    const double radius = truth[std::min<size_t>(truth.size() - 1, 5)].first + 1e-9;
    nn.WithinRadius(query, radius, &got);
    const auto within = std::count_if(truth.begin(), truth.end(), [&](auto& t) { return t.first <= radius; });
    EXPECT_EQ(static_cast<long>(got.size()), within);
  }
}

TEST(NearestNeighbors, MatchesBruteForceInABoundedSpace) {
  auto space = JointSpace::Create(std::vector<double>(7, -2.9), std::vector<double>(7, 2.9), std::vector<bool>(7, false));
  CheckAgainstBruteForce(space.value(), 3000, 1);
}

TEST(NearestNeighbors, MatchesBruteForceWithWrappingCoordinates) {
  // Wrapping coordinates make the nearest point often lie "across" pi; a pruning bound that ignored
  // the wrap would miss them.
  auto space = JointSpace::Create({0.0, -1.0, 0.0, -0.5}, {0.0, 1.0, 0.0, 0.5}, {true, false, true, false});
  CheckAgainstBruteForce(space.value(), 3000, 2);
}

TEST(NearestNeighbors, EmptyAndClear) {
  auto space = JointSpace::Create({0.0}, {1.0}, {false}).value();
  NearestNeighbors nn(space);
  const std::vector<double> q{0.5};
  EXPECT_EQ(nn.Nearest(q), -1);
  std::vector<std::pair<int32_t, double>> got;
  nn.KNearest(q, 3, &got);
  EXPECT_TRUE(got.empty());
  for (int i = 0; i < 100; ++i) nn.Add(std::vector<double>{i / 100.0}, 1000 + i);
  EXPECT_EQ(nn.Nearest(q), 1050);
  nn.Clear();
  EXPECT_EQ(nn.size(), 0);
  EXPECT_EQ(nn.Nearest(q), -1);
}

}  // namespace
}  // namespace proximity::planners
