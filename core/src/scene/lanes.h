#pragma once
/// @file
/// Many configurations at once: forward kinematics, robot part poses and their world bounds for kLanes
/// configurations in one pass, structure of arrays, so that each arithmetic step runs across SIMD lanes
/// (Scene::CheckStates). The pass is compiled three times (lanes_kernel.inc): for the x86-64 baseline,
/// for AVX2 + FMA and for AVX-512, and the best the CPU runs is chosen at first use (PROXIMITY_SIMD or
/// ForceLaneTarget override it, for tests and comparisons).
///
/// What may appear in the kernel: only the plain structs below, raw pointers and arithmetic. No standard
/// library or Eigen template is instantiated there: an inline function compiled for AVX-512 in one
/// translation unit could otherwise be the copy the linker keeps for every caller, and a CPU without
/// AVX-512 would stop on it.

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace proximity::core::internal {

/// Configurations per pass (8 doubles fill one AVX-512 register, two AVX2 ones).
inline constexpr int kLanes = 8;

struct alignas(64) LaneVec {
  double v[kLanes];
};

/// A rigid transform per lane: R row-major (R[3 * row + col]), then p.
struct LaneFrame {
  LaneVec R[9];
  LaneVec p[3];
};

/// An axis-aligned box per lane.
struct LaneBox {
  LaneVec min[3];
  LaneVec max[3];
};

/// A joint as the pass applies it (RobotModel::joints() order: parents before children).
struct LaneJoint {
  enum Type : int32_t { kRevolute = 0, kPrismatic = 1, kFixed = 2 };
  int32_t type = kFixed;
  int32_t parent = 0;
  int32_t child = 0;
  int32_t active = -1;  ///< Entry in q, or -1 for a mimic (or fixed) joint.
  int32_t mimic = -1;   ///< Mimic: value = multiplier * q[mimic] + offset.
  double multiplier = 1.0;
  double offset = 0.0;
  int32_t axis_index = -1;  ///< The axis is sign * e_axis_index, or -1 for any other axis.
  double axis_sign = 1.0;
  double R_PJ[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double p_PJ[3] = {0, 0, 0};
  double axis[3] = {0, 0, 1};
};

/// A robot part (a link's geometry or an attached object's part) as the pass poses it.
struct LanePart {
  int32_t link = 0;
  double R_LB[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};  ///< The bounding box's axes in the link frame.
  double p_LBo[3] = {0, 0, 0};                   ///< The box's centre in the link frame.
  double half[3] = {0, 0, 0};                    ///< The box's half extents (unpadded).
  double padding = 0.0;
};

/// Everything the pass reads of a scene, made once when the scene is built.
struct LanePlan {
  int32_t num_links = 0;
  int32_t dof = 0;
  double R_WB[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  double p_WB[3] = {0, 0, 0};
  std::vector<LaneJoint> joints;
  /// The joints whose child link moves with q (RobotModel::LinkMoves), in the same order: a pass over
  /// links whose other frames a whole pass of the same scene left in place.
  std::vector<LaneJoint> moving_joints;
  std::vector<LanePart> parts;
  /// Per world part, its bounding box as FixedBoxOverlapFn reads it: axes R_b (9, row-major), centre
  /// p_b (3), half extents (3).
  std::vector<std::array<double, 15>> world_boxes;
};

/// The pass's output for one block of configurations.
struct LanePoses {
  std::vector<LaneFrame> links;  ///< X_WL per link.
  /// The scene (serial number) whose pass over every joint last filled `links`: the frames of links that
  /// do not move with q are the same in every lane and block, and stay.
  uint64_t links_scene = 0;
  std::vector<LaneFrame> boxes;  ///< Per part: the world bounding box's axes (R) and centre (p).
  std::vector<LaneBox> bounds;   ///< Per part: the world AABB, grown by padding + margin.
  std::vector<double> half;      ///< Per part, 3 values: the box's half extents grown the same way.
};

/// The pass: link poses and part boxes for the configurations q[0..kLanes) (each dof values; a block with
/// fewer configurations repeats one), boxes grown by each part's padding and `margin`. The output vectors
/// must hold num_links and parts.size() entries. Parts' geometry frames are left out: only the lanes
/// that reach an exact test need one, made from the link's pose there.
using PoseLanesFn = void (*)(const LaneJoint* joints, int32_t num_joints, const LanePart* parts, int32_t num_parts,
                             const double* R_WB, const double* p_WB, const double* const* q, double margin,
                             LaneFrame* links, LaneFrame* boxes, LaneBox* bounds);

/// Which lanes' boxes overlap (bit k for lane k): ObbsOverlap's separating-axis test across the lanes.
/// Box a: a lane frame's axes and centre (LanePoses::boxes) with half extents half_a, the same in every
/// lane; box b: another lane frame (BoxesOverlapFn), or one box for every lane (FixedBoxOverlapFn: axes
/// R_b row-major, centre p_b).
using BoxesOverlapFn = uint32_t (*)(const LaneFrame& a, const double* half_a, const LaneFrame& b, const double* half_b);
using FixedBoxOverlapFn = uint32_t (*)(const LaneFrame& a, const double* half_a, const double* R_b, const double* p_b,
                                       const double* half_b);

enum class LaneTarget { kBaseline, kAvx2, kAvx512 };

/// The kernels of one target.
struct LaneKernels {
  PoseLanesFn pose;
  BoxesOverlapFn boxes;
  FixedBoxOverlapFn fixed_box;
};

/// The kernels of the chosen target.
const LaneKernels& ActiveLaneKernels();
/// The target in use: the best the CPU runs, unless PROXIMITY_SIMD (baseline, avx2, avx512) or
/// ForceLaneTarget chose a lower one.
LaneTarget ActiveLaneTarget();
/// For tests and benchmarks: use `target` (lowered to what the CPU runs), or go back to the automatic
/// choice with nullopt. Not for use while other threads check states.
void ForceLaneTarget(std::optional<LaneTarget> target);
/// "baseline", "avx2" or "avx512".
std::string_view LaneTargetName(LaneTarget target);

void PoseLanesBaseline(const LaneJoint*, int32_t, const LanePart*, int32_t, const double*, const double*,
                       const double* const*, double, LaneFrame*, LaneFrame*, LaneBox*);
void PoseLanesAvx2(const LaneJoint*, int32_t, const LanePart*, int32_t, const double*, const double*,
                   const double* const*, double, LaneFrame*, LaneFrame*, LaneBox*);
void PoseLanesAvx512(const LaneJoint*, int32_t, const LanePart*, int32_t, const double*, const double*,
                     const double* const*, double, LaneFrame*, LaneFrame*, LaneBox*);
uint32_t BoxesOverlapLanesBaseline(const LaneFrame&, const double*, const LaneFrame&, const double*);
uint32_t FixedBoxOverlapLanesBaseline(const LaneFrame&, const double*, const double*, const double*, const double*);
uint32_t BoxesOverlapLanesAvx2(const LaneFrame&, const double*, const LaneFrame&, const double*);
uint32_t FixedBoxOverlapLanesAvx2(const LaneFrame&, const double*, const double*, const double*, const double*);
uint32_t BoxesOverlapLanesAvx512(const LaneFrame&, const double*, const LaneFrame&, const double*);
uint32_t FixedBoxOverlapLanesAvx512(const LaneFrame&, const double*, const double*, const double*, const double*);

}  // namespace proximity::core::internal
