#pragma once
// Timing, statistics and JSON-lines output shared by the benchmark suites.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "proximity/core/base/types.h"
#include "robot_input.h"

namespace proximity::bench {

/// Options every suite receives.
struct SuiteOptions {
  bool quick = false;
  std::string data_dir;  ///< ../shared/data
  uint64_t seed = 20261121;
  int leaf_size = 0;   ///< Hierarchy leaf size for our models; 0 keeps the library's default.
  std::string split;   ///< Hierarchy split rule, "median" or "sah"; empty keeps the library's default.
  double time_limit_s = 0.0;  ///< Planning suites: time limit per problem (s); 0 keeps the suite's default.
  std::string ompl_log;       ///< Planning suites: folder for OMPL benchmark logs; empty writes none.
  RobotSpec robot;            ///< Robot and planning suites, generate: the robot; none keeps the suite's default.
  std::string problems_dir;   ///< Robot and planning suites: MotionBenchMaker-format problems; "" keeps the default.
  std::string out_dir;        ///< generate: the new folder to write the problems into.
  int count = 100;            ///< generate: how many problems.
  /// Robot and planning suites: each problem's world replaced by points sampled on its obstacles'
  /// surfaces this far apart (metres), one point cloud of balls of half that radius (the peer: an FCL
  /// octree of this resolution, as MoveIt keeps sensed worlds); 0 keeps the primitives.
  double cloud_spacing = 0.0;
  /// robot: the case groups to run (clear, distance, link); empty runs them all.
  std::vector<std::string> cases;
  std::string tip;  ///< ik: the link to solve for; "" takes the group's chain tip, else the deepest link.
  bool RunsCase(const std::string& group) const {
    return cases.empty() || std::find(cases.begin(), cases.end(), group) != cases.end();
  }
};

/// A suite: runs its cases and prints one JSON object per case on stdout. Returns non-zero on failure.
using SuiteFn = int (*)(const SuiteOptions&);

/// Registry of suites by name (defined in main.cc).
std::map<std::string, SuiteFn>& Suites();

/// Seconds on a monotonic clock.
inline double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Runs `query(i)` for every i in [0, n) `reps` times and returns, per i, the smallest time in
/// microseconds (the least disturbed run of each query).
template <class F>
std::vector<double> TimePerItem(int n, int reps, F&& query) {
  std::vector<double> best(n, 1e300);
  for (int r = 0; r < reps; ++r) {
    for (int i = 0; i < n; ++i) {
      const double t0 = Now();
      query(i);
      const double t1 = Now();
      best[i] = std::min(best[i], (t1 - t0) * 1e6);
    }
  }
  return best;
}

double Median(std::vector<double> v);
double Mean(const std::vector<double>& v);
double Percentile(std::vector<double> v, double p);

class JsonLine;

/// Our work counters, summed over queries and averaged per query on output.
struct Work {
  double bv_tests = 0;
  double triangle_tests = 0;
  /// Scene queries' GJK tests on convex stand-ins, their iterations, and those answered warm
  /// (core::QueryStats); zero for stats that do not count them.
  double convex_tests = 0;
  double convex_iterations = 0;
  double convex_warm = 0;
  int64_t queries = 0;

  template <class Stats>
  void Add(const Stats& s) {
    bv_tests += static_cast<double>(s.bv_tests);
    triangle_tests += static_cast<double>(s.triangle_tests);
    if constexpr (requires { s.convex_tests; }) {
      convex_tests += static_cast<double>(s.convex_tests);
      convex_iterations += static_cast<double>(s.convex_iterations);
      convex_warm += static_cast<double>(s.convex_warm);
    }
    ++queries;
  }
};

/// The common fields of one case: suite, case, n, our median/mean/p95 microseconds, the peer's, the
/// ratios (peer / ours) and our work per query. Callers add their own fields, then Print().
JsonLine CaseLine(const std::string& suite, const std::string& name, const std::vector<double>& ours,
                  const Work& work, const std::string& peer, const std::vector<double>& peer_times);

/// A rotation drawn uniformly (Shoemake's uniform random unit quaternion).
core::Mat3 RandomRotation(std::mt19937_64& rng);

/// The entries of `values` where `keep` is non-zero.
std::vector<double> Select(const std::vector<double>& values, const std::vector<char>& keep);

/// One JSON object on one line, built field by field in insertion order.
/// This process's resident memory (VmRSS), in MiB; -1 when /proc does not say.
double ResidentMegabytes();

class JsonLine {
 public:
  JsonLine& Add(const std::string& key, const std::string& value);
  JsonLine& Add(const std::string& key, const char* value) { return Add(key, std::string(value)); }
  JsonLine& Add(const std::string& key, double value);
  JsonLine& Add(const std::string& key, int64_t value);
  JsonLine& Add(const std::string& key, int value) { return Add(key, static_cast<int64_t>(value)); }
  JsonLine& Add(const std::string& key, bool value);
  /// Prints the object and a newline to stdout and flushes.
  void Print() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

}  // namespace proximity::bench
