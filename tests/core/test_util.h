#pragma once
// Shared helpers for the tests: where the data lives, seeded random poses, and brute-force oracles.

#include <gtest/gtest.h>

#include <filesystem>
#include <algorithm>
#include <array>
#include <random>
#include <set>
#include <source_location>
#include <string>
#include <utility>

#include "proximity/core/base/result.h"
#include "narrowphase/convex.h"
#include "proximity/core/mesh/mesh.h"
#include "proximity/core/base/types.h"
#include "base/numerics.h"

namespace proximity::testing {

using core::RigidTransform;
using core::TriangleMesh;
using core::Vec3;

/// ../shared/data next to the repository (robots and scenes), or "" when absent.
std::string SharedDataDir();
/// Debian dart-doc's URDF folder (KR5, WAM), or "" when absent.
std::string DartUrdfDir();
/// The repository's own small fixtures (tests/data).
std::string TestDataDir();

/// Skips the current test with a message naming the missing folder when `dir` is empty.
#define PROX_REQUIRE_DIR(dir, what)                                                        \
  do {                                                                                     \
    if ((dir).empty()) GTEST_SKIP() << what << " is not present; this test needs it";      \
  } while (0)

#define PROX_CONCAT_INNER_(a, b) a##b
#define PROX_CONCAT_(a, b) PROX_CONCAT_INNER_(a, b)
/// Evaluates a core::Result, fails the test with its error unless it holds a value, and assigns the value
/// to `lhs` (an lvalue or a declaration): PROX_ASSERT_OK_AND_ASSIGN(const StateResult r, scene->CheckState(q, &c)).
/// A statement of its own (not the body of an unbraced if or for); in functions returning void only.
#define PROX_ASSERT_OK_AND_ASSIGN(lhs, ...) \
  PROX_ASSERT_OK_AND_ASSIGN_IMPL_(PROX_CONCAT_(prox_result_, __LINE__), lhs, __VA_ARGS__)
#define PROX_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, ...)  \
  auto tmp = (__VA_ARGS__);                             \
  ASSERT_TRUE(tmp.ok()) << tmp.error().message;         \
  lhs = std::move(tmp).value()

/// The value of a core::Result; otherwise a test failure naming its error (at the caller's line) and T().
/// For helpers that return a value, where PROX_ASSERT_OK_AND_ASSIGN cannot be used.
template <class T>
T ValueOrFail(core::Result<T> result, std::source_location where = std::source_location::current()) {
  if (result.ok()) return std::move(result).value();
  ADD_FAILURE_AT(where.file_name(), static_cast<int>(where.line())) << result.error().message;
  return T();
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr int kSanitizedSlowdown = 4;
#else
inline constexpr int kSanitizedSlowdown = 1;
#endif

/// A case count for oracle-heavy tests: n in a normal build, a quarter (at least 4) under a sanitizer,
/// whose job there is to catch memory and threading faults, not to repeat every case.
inline int Cases(int n) { return kSanitizedSlowdown == 1 ? n : std::max(4, n / kSanitizedSlowdown); }

/// Uniformly random rotation (Shoemake's quaternion method).
core::Mat3 RandomRotation(std::mt19937_64& rng);
/// Random pose: uniform rotation, translation uniform in [lo, hi] per axis.
RigidTransform RandomPose(std::mt19937_64& rng, const Vec3& lo, const Vec3& hi);

/// The whole contents of a text file ("" when it cannot be read).
std::string ReadFile(const std::string& path);

/// Loads a mesh or fails the test with the loader's message.
TriangleMesh LoadMeshOrDie(const std::string& path);

/// Brute force over all triangle pairs: whether any pair of triangles intersects.
bool BruteForceCollide(const TriangleMesh& a, const RigidTransform& X_WA, const TriangleMesh& b,
                       const RigidTransform& X_WB);
/// Brute force over all triangle pairs: exact distance (0 when intersecting) and the argmin pair.
double BruteForceDistance(const TriangleMesh& a, const RigidTransform& X_WA, const TriangleMesh& b,
                          const RigidTransform& X_WB, int* tri_a = nullptr, int* tri_b = nullptr);

/// At least the rounding allowance (RoundingAllowance) a distance query between meshes a and b at these
/// poses lowers its lower bound by: the query's scale is the poses' translations plus each model's reach
/// (its root sphere's centre and radius), and a bounding sphere's centre plus radius is at most three
/// times the farthest vertex's distance from the origin.
double QueryRoundingAllowance(const TriangleMesh& a, const RigidTransform& X_WA, const TriangleMesh& b,
                              const RigidTransform& X_WB);

/// A box of full edge lengths `size` centred at the origin (MakeBoxMesh) whose top face's triangles fan to
/// a vertex `dent` below the face's middle: a closed surface, not convex, `dent` inside its hull where
/// the top face was.
TriangleMesh DentedBoxMesh(const Vec3& size, double dent);

/// Each triangle split in four at its edges' midpoints (shared between neighbours: a closed mesh stays
/// closed).
TriangleMesh Subdivided(const TriangleMesh& m);

/// Two boxes crossing each other (0.3 x 0.08 x 0.08 and 0.07 x 0.07 x 0.3, centred at the origin): two
/// closed parts that overlap, as robot meshes built from shells often are; not convex, not one part;
/// subdivided once (meshes of a few dozen triangles get no interior balls).
TriangleMesh CrossedBoxesMesh();

/// Volume enclosed by the mesh (divergence theorem); positive when the triangles face outward.
double SignedVolume(const TriangleMesh& m);
/// Every edge is used by exactly two triangles, once in each direction: the mesh is closed and
/// consistently oriented.
::testing::AssertionResult IsClosedAndConsistent(const TriangleMesh& m);
/// The surface as a multiset of triangles by position, independent of vertex numbering and of which
/// vertex starts each triangle.
std::multiset<std::array<std::array<double, 3>, 3>> Soup(const TriangleMesh& m);

/// The hull of n Gaussian points of standard deviation `size`, stretched along each axis by a factor
/// drawn uniformly from [min_stretch, 1.5] (the three factors are drawn first).
std::shared_ptr<const core::ConvexPolytope> RandomHull(std::mt19937_64& rng, int n, double size,
                                                       double min_stretch);
/// A regular n-gon prism inscribed in the cylinder, or circumscribing it when `outer`: the true distance
/// or depth against another convex body lies between the two prisms' values.
std::shared_ptr<const core::ConvexPolytope> TessellatedHull(const core::Cylinder& c, int n, bool outer);
/// The same for a cone: an n-gon pyramid with the cone's apex, inscribed or circumscribing.
std::shared_ptr<const core::ConvexPolytope> TessellatedHull(const core::Cone& c, int n, bool outer);

/// Distance from point p_W to the mesh's surface (brute force).
double PointMeshDistance(const Vec3& p_W, const TriangleMesh& mesh, const RigidTransform& X_WM);

}  // namespace proximity::testing
