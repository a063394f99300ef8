// proximity-bench SUITE [--quick] [options]: runs one benchmark suite beside its peer and prints one JSON
// object per case on stdout (machine details go to stderr).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "bench_util.h"

namespace proximity::bench {
int RunConvex(const SuiteOptions& options);
int RunEnvRob(const SuiteOptions& options);
int RunRobot(const SuiteOptions& options);
#ifdef PROX_BENCH_MBM
int RunMbm(const SuiteOptions& options);
#endif
#ifdef PROX_BENCH_SERVICE
int RunService(const SuiteOptions& options);
#endif

std::map<std::string, SuiteFn>& Suites() {
  static std::map<std::string, SuiteFn> suites = {
      {"convex", &RunConvex},
      {"envrob", &RunEnvRob},
      {"robot", &RunRobot},
#ifdef PROX_BENCH_MBM
      {"mbm", &RunMbm},
#endif
#ifdef PROX_BENCH_SERVICE
      {"service", &RunService},
#endif
  };
  return suites;
}
}  // namespace proximity::bench

namespace {
std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}
}  // namespace

int main(int argc, char** argv) {
  using namespace proximity::bench;
  CLI::App app{"Proximity benchmarks: ours beside a peer library on the same inputs, in one run"};
  std::string suite;
  SuiteOptions options;
  options.data_dir = PROX_SHARED_DATA_DIR;
  std::string names;
  for (const auto& [name, fn] : Suites()) names += (names.empty() ? "" : ", ") + name;
  app.add_option("suite", suite, "Suite to run: " + names)->required();
  app.add_flag("--quick", options.quick, "A reduced run that finishes in under a minute");
  app.add_option("--data", options.data_dir, "The shared data folder (robots and scenes)");
  app.add_option("--seed", options.seed, "Seed for poses and motions");
  app.add_option("--leaf-size", options.leaf_size, "Triangles per hierarchy leaf (1-16)");
  app.add_option("--split", options.split, "Hierarchy split rule")->check(CLI::IsMember({"median", "sah"}));
  app.add_option("--time-limit", options.time_limit_s,
                 "Planning suites: seconds per problem and planner (default: the suite's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--ompl-log", options.ompl_log,
                 "Planning suites: folder to write OMPL benchmark logs to (one per problem family)");
  CLI11_PARSE(app, argc, argv);
  auto it = Suites().find(suite);
  if (it == Suites().end()) {
    std::cerr << "unknown suite '" << suite << "'; suites: " << names << "\n";
    return 2;
  }
  std::cerr << "machine: " << CpuModel() << ", " << std::thread::hardware_concurrency() << " threads; compiler "
            << __VERSION__ << "\n";
  return it->second(options);
}
