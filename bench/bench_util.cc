#include "bench_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <numeric>
#include <sstream>

#include <Eigen/Geometry>

namespace proximity::bench {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const double pos = p * (v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - lo) * (v[hi] - v[lo]);
}

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }

double Mean(const std::vector<double>& v) {
  return v.empty() ? NAN : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

core::Mat3 RandomRotation(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const double u1 = u(rng), u2 = u(rng), u3 = u(rng);
  const double a = std::sqrt(1 - u1), b = std::sqrt(u1);
  return Eigen::Quaterniond(b * std::cos(2 * M_PI * u3), a * std::sin(2 * M_PI * u2), a * std::cos(2 * M_PI * u2),
                            b * std::sin(2 * M_PI * u3))
      .normalized()
      .toRotationMatrix();
}

namespace {
std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}
}  // namespace

JsonLine& JsonLine::Add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, Quote(value));
  return *this;
}
JsonLine& JsonLine::Add(const std::string& key, double value) {
  std::ostringstream os;
  if (std::isfinite(value)) {
    os.precision(6);
    os << value;
  } else {
    os << "null";
  }
  fields_.emplace_back(key, os.str());
  return *this;
}
JsonLine& JsonLine::Add(const std::string& key, int64_t value) {
  fields_.emplace_back(key, std::to_string(value));
  return *this;
}
JsonLine& JsonLine::Add(const std::string& key, bool value) {
  fields_.emplace_back(key, value ? "true" : "false");
  return *this;
}
std::vector<double> Select(const std::vector<double>& values, const std::vector<char>& keep) {
  std::vector<double> out;
  for (size_t i = 0; i < values.size(); ++i)
    if (keep[i]) out.push_back(values[i]);
  return out;
}

JsonLine CaseLine(const std::string& suite, const std::string& name, const std::vector<double>& ours,
                  const Work& work, const std::string& peer, const std::vector<double>& peer_times) {
  JsonLine line;
  line.Add("suite", suite).Add("case", name).Add("n", static_cast<int64_t>(ours.size()));
  line.Add("ours_us", Median(ours)).Add("ours_mean_us", Mean(ours)).Add("ours_p95_us", Percentile(ours, 0.95));
  line.Add("peer", peer).Add("peer_us", Median(peer_times)).Add("peer_mean_us", Mean(peer_times));
  line.Add("ratio", Median(peer_times) / Median(ours)).Add("ratio_mean", Mean(peer_times) / Mean(ours));
  const double q = work.queries > 0 ? static_cast<double>(work.queries) : 1.0;
  line.Add("ours_bv_tests", work.bv_tests / q).Add("ours_triangle_tests", work.triangle_tests / q);
  if (work.convex_tests > 0) {
    // GJK on convex stand-ins: tests per query, iterations per test, and the share the caller's warm
    // cache answered (core::QueryStats::convex_warm).
    line.Add("ours_convex_tests", work.convex_tests / q);
    line.Add("ours_convex_iterations_per_test", work.convex_iterations / work.convex_tests);
    line.Add("ours_convex_warm_share", work.convex_warm / work.convex_tests);
  }
  return line;
}

void JsonLine::Print() const {
  std::string line = "{";
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (i) line += ", ";
    line += Quote(fields_[i].first) + ": " + fields_[i].second;
  }
  line += "}\n";
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
}

double ResidentMegabytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // "VmRSS:  1234 kB"
  }
  return -1.0;
}

}  // namespace proximity::bench
