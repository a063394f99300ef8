// The project's own Wavefront OBJ reader. OBJ is the one text format robot descriptions commonly use
// for collision meshes; reading it here keeps those loads off a general importer (which fills a 16 MB
// line buffer per file) and out of that importer's material-library handling.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "mesh_read.h"

namespace proximity::core::internal {
namespace {

std::string Quoted(std::string_view word) {
  constexpr size_t kShown = 32;
  std::string out = "'";
  for (const char c : word.substr(0, kShown)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (word.size() > kShown) out += "...";
  return out + "'";
}

bool ParseDouble(std::string_view word, double* value) {
  if (!word.empty() && word.front() == '+') word.remove_prefix(1);
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), *value);
  return ec == std::errc() && end == word.data() + word.size() && !word.empty();
}

struct Face {
  uint32_t first = 0;  // into the corner list
  uint32_t count = 0;
  int64_t line = 0;
};

/// Twice the signed area of the 2D triangle (a, b, c).
double Cross2(const double* a, const double* b, const double* c) {
  return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
}

/// Triangulates one polygon (indices into `points`) in the plane of its Newell normal. Convex polygons
/// become a fan from their first corner; others are ear-clipped (an ear is a convex corner whose
/// triangle holds no other remaining corner; when none is left, as in a self-intersecting polygon, the
/// next corner is clipped anyway). `work` counts corner tests; false once it passes `budget`.
bool Triangulate(const std::vector<Vec3>& points, const int32_t* corners, uint32_t n,
                 std::vector<std::array<int32_t, 3>>* out, int64_t* work, int64_t budget) {
  if (n == 3) {
    out->push_back({corners[0], corners[1], corners[2]});
    return true;
  }
  Vec3 normal = Vec3::Zero();
  for (uint32_t i = 0; i < n; ++i) {
    const Vec3& a = points[static_cast<size_t>(corners[i])];
    const Vec3& b = points[static_cast<size_t>(corners[(i + 1) % n])];
    normal += Vec3((a.y() - b.y()) * (a.z() + b.z()), (a.z() - b.z()) * (a.x() + b.x()),
                   (a.x() - b.x()) * (a.y() + b.y()));
  }
  int axis = 0;
  normal.cwiseAbs().maxCoeff(&axis);
  const int u = (axis + 1) % 3, v = (axis + 2) % 3;
  const double sign = normal[axis] < 0.0 ? -1.0 : 1.0;  // counter-clockwise seen from the normal's side
  std::vector<double> q(2 * static_cast<size_t>(n));
  for (uint32_t i = 0; i < n; ++i) {
    q[2 * i] = points[static_cast<size_t>(corners[i])][u];
    q[2 * i + 1] = sign * points[static_cast<size_t>(corners[i])][v];
  }
  const auto corner_turn = [&](uint32_t a, uint32_t b, uint32_t c) { return Cross2(&q[2 * a], &q[2 * b], &q[2 * c]); };
  bool convex = true;
  for (uint32_t i = 0; i < n && convex; ++i) convex = corner_turn(i, (i + 1) % n, (i + 2) % n) > 0.0;
  *work += n;
  if (convex) {
    for (uint32_t i = 1; i + 1 < n; ++i) out->push_back({corners[0], corners[i], corners[i + 1]});
    return true;
  }
  std::vector<uint32_t> ring(n);
  for (uint32_t i = 0; i < n; ++i) ring[i] = i;
  size_t start = 1;
  while (ring.size() > 3) {
    const size_t m = ring.size();
    size_t clip = start % m;
    for (size_t step = 0; step < m; ++step) {
      const size_t k = (start + step) % m;
      const uint32_t a = ring[(k + m - 1) % m], b = ring[k], c = ring[(k + 1) % m];
      ++*work;
      if (corner_turn(a, b, c) <= 0.0) continue;
      bool empty = true;
      for (size_t r = 0; r < m && empty; ++r) {
        const uint32_t p = ring[r];
        if (p == a || p == b || p == c) continue;
        const double* x = &q[2 * p];
        if ((x[0] == q[2 * a] && x[1] == q[2 * a + 1]) || (x[0] == q[2 * b] && x[1] == q[2 * b + 1]) ||
            (x[0] == q[2 * c] && x[1] == q[2 * c + 1])) {
          continue;  // a repeated corner does not block the ear
        }
        empty = !(Cross2(&q[2 * a], &q[2 * b], x) >= 0.0 && Cross2(&q[2 * b], &q[2 * c], x) >= 0.0 &&
                  Cross2(&q[2 * c], &q[2 * a], x) >= 0.0);
      }
      *work += static_cast<int64_t>(m);
      if (*work > budget) return false;
      if (empty) {
        clip = k;
        break;
      }
    }
    const size_t mm = ring.size();
    out->push_back({corners[ring[(clip + mm - 1) % mm]], corners[ring[clip]], corners[ring[(clip + 1) % mm]]});
    ring.erase(ring.begin() + static_cast<std::ptrdiff_t>(clip));
    start = clip;
  }
  out->push_back({corners[ring[0]], corners[ring[1]], corners[ring[2]]});
  return true;
}

// The logical lines of an OBJ file: physical lines ending in a backslash continue on the next.
class ObjLines {
 public:
  explicit ObjLines(std::string_view bytes) : bytes_(bytes) {}
  // The next logical line and the number of its first physical line; false at the end.
  bool Next(std::string_view* line, int64_t* first_line) {
    if (at_ >= bytes_.size()) return false;
    *line = NextPhysical();
    *first_line = line_number_;
    if (Continued(line)) {
      joined_.assign(*line);
      for (bool more = true; more;) {
        joined_.push_back(' ');
        if (at_ >= bytes_.size()) break;
        std::string_view next = NextPhysical();
        more = Continued(&next);
        joined_.append(next);
      }
      *line = joined_;
    }
    return true;
  }

 private:
  std::string_view NextPhysical() {
    ++line_number_;
    const size_t end = std::min(bytes_.find('\n', at_), bytes_.size());
    const std::string_view physical = bytes_.substr(at_, end - at_);
    at_ = end + 1;
    return physical;
  }
  static bool Continued(std::string_view* l) {
    while (!l->empty() && std::isspace(static_cast<unsigned char>(l->back()))) l->remove_suffix(1);
    if (l->empty() || l->back() != '\\') return false;
    l->remove_suffix(1);
    return true;
  }
  std::string_view bytes_;
  size_t at_ = 0;
  int64_t line_number_ = 0;
  std::string joined_;  // a line continued with a backslash
};

// What an OBJ's `v` and `f` lines hold, before the used vertices are kept and faces triangulated.
struct ObjRaw {
  std::vector<Vec3> points;      // every `v`, at single precision, unscaled
  std::vector<int32_t> corners;  // face corners, 0-based (forward references are checked at the end)
  std::vector<Face> faces;
};

// A `v` line: three coordinates, kept at single precision.
Status ReadVertex(const std::vector<std::string_view>& words, const std::string& label, int64_t line, ObjRaw* raw) {
  if (words.size() < 4) return ParseError(label + ": line " + std::to_string(line) + ": a vertex needs three coordinates");
  Vec3 p;
  for (int k = 0; k < 3; ++k) {
    double x = 0.0;
    if (!ParseDouble(words[static_cast<size_t>(k) + 1], &x)) {
      return ParseError(label + ": line " + std::to_string(line) + ": vertex coordinate " +
                        Quoted(words[static_cast<size_t>(k) + 1]) + " is not a number");
    }
    p[k] = static_cast<double>(static_cast<float>(x));
  }
  if (raw->points.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return Error{ErrorCode::kResourceExhausted, label + ": too many vertices for 32-bit indices"};
  }
  raw->points.push_back(p);
  return {};
}

// An `f` line of three or more corners (vertex numbers 1-based, negative ones counting back).
Status ReadFace(const std::vector<std::string_view>& words, const std::string& label, int64_t line, ObjRaw* raw) {
  const size_t n = words.size() - 1;
  Face face{static_cast<uint32_t>(raw->corners.size()), static_cast<uint32_t>(n), line};
  if (raw->corners.size() + n > static_cast<size_t>(std::numeric_limits<uint32_t>::max())) {
    return Error{ErrorCode::kResourceExhausted, label + ": too many face corners"};
  }
  for (size_t k = 1; k <= n; ++k) {
    const std::string_view word = words[k];
    const std::string_view index = word.substr(0, word.find('/'));
    int64_t i = 0;
    const auto [p, ec] = std::from_chars(index.data(), index.data() + index.size(), i);
    if (ec != std::errc() || p != index.data() + index.size() || index.empty() || i == 0) {
      return ParseError(label + ": line " + std::to_string(line) + ": face corner " + Quoted(word) +
                        " does not start with a vertex number (1-based)");
    }
    if (i < 0) i += static_cast<int64_t>(raw->points.size()) + 1;  // -1 is the last vertex read
    if (i < 1 || i > std::numeric_limits<int32_t>::max()) {
      return ParseError(label + ": line " + std::to_string(line) + ": face corner " + Quoted(word) +
                        " refers to no vertex (" + std::to_string(raw->points.size()) + " read so far)");
    }
    raw->corners.push_back(static_cast<int32_t>(i - 1));
  }
  raw->faces.push_back(face);
  return {};
}

// Every corner must name a vertex of the file; only the vertices faces use are kept (in file order),
// scaled, into out->vertices. Per file vertex, its kept index (-1: unused).
Result<std::vector<int32_t>> KeepUsedVertices(const ObjRaw& raw, const Vec3& scale, const std::string& label,
                                              Gathered* out) {
  std::vector<int32_t> kept(raw.points.size(), -1);
  for (const Face& f : raw.faces) {
    for (uint32_t k = 0; k < f.count; ++k) {
      const int32_t i = raw.corners[f.first + k];
      if (static_cast<size_t>(i) >= raw.points.size()) {
        return ParseError(label + ": line " + std::to_string(f.line) + ": face corner " + std::to_string(i + 1) +
                          " refers to no vertex (the file has " + std::to_string(raw.points.size()) + ")");
      }
      kept[static_cast<size_t>(i)] = 0;
    }
  }
  for (size_t i = 0; i < raw.points.size(); ++i) {
    if (kept[i] < 0) continue;
    const Vec3 p_M = scale.cwiseProduct(raw.points[i]);
    if (!p_M.allFinite()) {
      const std::string which = "vertex " + std::to_string(i + 1);
      if (!raw.points[i].allFinite()) {
        return ParseError(label + ": " + which + " has a non-finite coordinate " + FormatVec(raw.points[i]));
      }
      return ParseError(label + ": " + which + " " + FormatVec(raw.points[i]) + " is not finite after the scale: " +
                        FormatVec(p_M));
    }
    kept[i] = static_cast<int32_t>(out->vertices.size());
    out->vertices.push_back(p_M);
  }
  return kept;
}

}  // namespace

Result<Gathered> ReadObj(std::string_view bytes, const Vec3& scale, const std::string& label) {
  ObjRaw raw;
  Gathered out;
  int64_t group_faces = 0;  // faces of three or more corners since the last o, g or usemtl
  std::vector<std::string_view> words;  // of the current line
  ObjLines lines(bytes);
  std::string_view line;
  int64_t first_line = 0;
  while (lines.Next(&line, &first_line)) {
    SplitWords(line, &words);
    if (words.empty() || words[0].front() == '#') continue;
    const std::string_view key = words[0];
    if (key == "v") {
      if (Status s = ReadVertex(words, label, first_line, &raw); !s.ok()) return s.error();
    } else if (key == "f") {
      if (words.size() < 4) {
        ++out.skipped_non_triangles;
        continue;
      }
      if (Status s = ReadFace(words, label, first_line, &raw); !s.ok()) return s.error();
      ++group_faces;
    } else if (key == "l" || key == "p") {
      ++out.skipped_non_triangles;
    } else if (key == "o" || key == "g" || key == "usemtl") {
      if (group_faces > 0) ++out.submeshes;
      group_faces = 0;
    }
  }
  if (group_faces > 0) ++out.submeshes;
  Result<std::vector<int32_t>> kept = KeepUsedVertices(raw, scale, label, &out);
  if (!kept.ok()) return kept.error();

  // Ear clipping is quadratic in a non-convex face's corners; its work is bounded by the file's size.
  const int64_t budget = 1'000'000 + 256 * static_cast<int64_t>(bytes.size());
  int64_t work = 0;
  const bool mirrored = (scale.array() < 0.0).count() % 2 == 1;
  for (const Face& f : raw.faces) {
    const size_t before = out.triangles.size();
    if (!Triangulate(raw.points, &raw.corners[f.first], f.count, &out.triangles, &work, budget)) {
      return ParseError(label + ": line " + std::to_string(f.line) + ": faces too complex to triangulate (non-convex "
                        "polygons of " + std::to_string(f.count) + " corners); split them into triangles");
    }
    for (size_t t = before; t < out.triangles.size(); ++t) {
      for (int32_t& i : out.triangles[t]) i = kept.value()[static_cast<size_t>(i)];
      if (mirrored) std::swap(out.triangles[t][1], out.triangles[t][2]);
    }
  }
  return out;
}

}  // namespace proximity::core::internal
