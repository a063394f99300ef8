#include "proximity/planners/nearest.h"
#include <chrono>
#include <cstdio>
#include <cmath>
using namespace proximity::planners;
int main(int argc, char** argv) {
  int dof = argc > 1 ? atoi(argv[1]) : 7;
  int n = argc > 2 ? atoi(argv[2]) : 3000;
  std::vector<double> lo(dof, -2.8), hi(dof, 2.8);
  auto space = JointSpace::Create(lo, hi, std::vector<bool>(dof, false)).value();
  double total = 0; long long evals = 0; double sink = 0;
  for (int trial = 0; trial < 20; ++trial) {
    Rng rng(trial + 1);
    NearestNeighbors nn(space);
    std::vector<std::vector<double>> pts;
    std::vector<double> q(dof), s(dof);
    space.Sample(rng, q);
    nn.Add(q, 0); pts.push_back(q);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 1; i < n; ++i) {
      space.Sample(rng, s);
      int id = nn.Nearest(s);
      const auto& p = pts[id];
      double d = space.Distance(p, s);
      double t = std::min(1.0, 0.3 / std::max(d, 1e-9));
      space.Interpolate(p, s, t, q);
      nn.Add(q, i); pts.push_back(q);
      sink += id;
    }
    total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    evals += nn.distance_evaluations();
  }
  printf("dof %d n %d: %.3f us/query, %.1f evals/query (%g)\n", dof, n, total / (20.0 * (n - 1)) * 1e6, evals / (20.0 * (n - 1)), sink);
}
