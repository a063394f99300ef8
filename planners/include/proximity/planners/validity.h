#pragma once
/// @file
/// The two small interfaces planners see the world through (OMPL's StateValidityChecker and
/// MotionValidator contracts): whether a configuration is valid, and whether the straight joint-space
/// segment between two configurations is. Implementations are thread-safe: any number of planners and
/// threads may call one object at once. Planners call these per sample and per edge, never inside a
/// geometry loop, so the virtual call costs nothing measurable.
///
/// Implementations here: over an in-process core::Scene (scene_validity.h) and over a remote proximityd
/// (clients/cpp). Answers come back as core::Result: the answer, or an error (a remote call that fails, a
/// malformed configuration) with which planners stop instead of guessing.

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "proximity/core/base/result.h"

namespace proximity::planners {

/// Work a validity object did, for planner statistics.
struct ValidityCounters {
  int64_t state_checks = 0;   ///< Configurations checked (IsValid calls and AreValid rows).
  int64_t motion_checks = 0;  ///< CheckMotion calls.
  int64_t motion_states = 0;  ///< Configurations whose geometry the motion checks posed.
};

/// The answer to a motion check.
struct MotionCheck {
  bool valid = false;
  /// Not valid: the segment is known valid on [0, last_valid_t] (certified for a certified validator,
  /// sampled otherwise); OMPL's lastValid fraction. 1 when valid.
  double last_valid_t = 0.0;
  /// The configurations the check posed (work, for statistics).
  int64_t states = 0;
};

/// The answer to MotionValidator::CheckStepsUntilInvalid.
struct StepChecks {
  /// Steps whose state and segment are both valid: steps 0 .. valid_steps - 1 (a prefix).
  size_t valid_steps = 0;
  /// States checked (every step's for a batch of states, else up to the first invalid one).
  int64_t state_checks = 0;
  /// The segments checked, in step order: CheckMotion's answers, a prefix of the steps' segments.
  std::vector<MotionCheck> motions;
  /// The chain's prerequisite (CheckStepsUntilInvalid's `after`) did not end complete: nothing of the
  /// chain was checked (valid_steps and state_checks 0, no motions).
  bool skipped = false;
};

/// Whether a configuration is valid: collision-free (world and self) and within the joint limits.
class StateValidityChecker {
 public:
  virtual ~StateValidityChecker() = default;
  /// Whether q is valid. Errors for a malformed q (wrong size, NaN) or a failed remote call. Thread-safe.
  [[nodiscard]] virtual core::Result<bool> IsValid(std::span<const double> q) const = 0;
  /// Whether each configuration of `qs` is valid: qs holds qs.size() / dof configurations of `dof` values
  /// each, row after row, and the answer one flag per row, 1 where IsValid answers true for that row and
  /// 0 where it answers false. Errors as IsValid's, naming the row ("configuration i: ..."; one bad row
  /// fails the batch), and for dof < 1 or a size that is not whole rows. The default asks IsValid row by
  /// row; the scene's checker checks the rows at once (Scene::CheckStates, across SIMD lanes) and a
  /// remote checker sends them in one request (a planner's batch of samples). Thread-safe.
  [[nodiscard]] virtual core::Result<std::vector<uint8_t>> AreValid(std::span<const double> qs, int32_t dof) const;
};

/// Whether the straight joint-space segment q0 -> q1 is valid at every configuration along it.
class MotionValidator {
 public:
  virtual ~MotionValidator() = default;
  /// Checks q0 -> q1 (q1 is the segment's end as JointSpace::SegmentEnd gives it). Thread-safe.
  [[nodiscard]] virtual core::Result<MotionCheck> CheckMotion(std::span<const double> q0,
                                                              std::span<const double> q1) const = 0;
  /// Checks the segments starts[i] -> ends[i] (rows of `dof` values each, as CheckMotion takes them) in
  /// order and stops after the first that is not valid: the checks made, a prefix of the segments ending
  /// with the invalid one, or all of them. The answers are CheckMotion's. The default calls CheckMotion
  /// segment by segment; a remote validator sends them in one round trip (a lazy planner's candidate path).
  [[nodiscard]] virtual core::Result<std::vector<MotionCheck>> CheckMotionsUntilInvalid(
      std::span<const double> starts, std::span<const double> ends, int32_t dof) const;
  /// Checks every segment starts[i] -> ends[i] (as above): one answer per segment, CheckMotion's. The
  /// default calls CheckMotion segment by segment; a remote validator sends them in one round trip (the
  /// simplifier's batch of shortcuts).
  [[nodiscard]] virtual core::Result<std::vector<MotionCheck>> CheckMotions(std::span<const double> starts,
                                                                             std::span<const double> ends,
                                                                             int32_t dof) const;
  /// A planner's steps in chains (a tree's extensions): step k is the state states[k] (checked by
  /// `state_checker`) and the segment starts[k] -> ends[k] (checked by this validator), rows of `dof`
  /// values; a step is valid when both are. The steps form consecutive chains of chains[c] steps (each
  /// >= 1, summing to the number of steps; one chain when `chains` is empty). Each chain is decided in
  /// order up to its first step that is not valid, as asking IsValid and CheckMotion step by step
  /// (state first) would, independently of the other chains: one StepChecks per chain. The default
  /// checks every state in one AreValid call (a batch across SIMD lanes in process; IsValid for a
  /// single step), then each chain's segments up to its first invalid state by CheckMotionsUntilInvalid
  /// (CheckMotion for one). A remote validator whose `state_checker` asks the same server scene sends
  /// every chain's states and segments in one round trip. Errors as those calls', and for rows or chains
  /// that do not match.
  ///
  /// `after` (empty, or one entry per chain): -1, or the index of an earlier chain that must end complete
  /// (every step valid) for this chain to be decided; a chain whose prerequisite did not is skipped
  /// (StepChecks::skipped, nothing checked). A tree's extension toward a sample and the other tree's
  /// connection toward the vertex it would add go in one call this way, the connection decided only
  /// when the extension holds: one round trip to a remote scene instead of two, and no check a
  /// one-after-the-other order would not make. The default decides the chains in waves: those whose
  /// prerequisites are decided (every state of a wave in one AreValid call), then the next.
  [[nodiscard]] virtual core::Result<std::vector<StepChecks>> CheckStepsUntilInvalid(
      const StateValidityChecker& state_checker, std::span<const double> states, std::span<const double> starts,
      std::span<const double> ends, std::span<const int32_t> chains, std::span<const int32_t> after,
      int32_t dof) const;
  /// True when "valid" is certified (never valid when any configuration on the segment collides);
  /// false for sampled checks, which can miss what lies between samples.
  virtual bool certified() const = 0;
  /// True when every call costs a round trip to a server (a remote validator), more than the checks of a
  /// batch: planners then ask in one call what they would otherwise ask in several dependent calls, some
  /// of whose answers go unused (the simplifier's vertex reduction checks every pair of waypoints at
  /// once), and use the answers the call-by-call order would have had: the same plans, fewer calls.
  /// False by default (in process, where a call costs only its checks).
  virtual bool calls_are_round_trips() const { return false; }
  /// A short description for logs and benchmark lines ("certified", "discrete 0.0123 rad").
  virtual std::string Describe() const = 0;
};

/// CheckStepsUntilInvalid's argument checks, for its implementations: states, starts and ends the same
/// whole rows of dof >= 1 values, chains of >= 1 steps summing to the steps (or none), `after` empty or
/// one entry per chain (of `chains`, at least one), each -1 or an earlier chain's index. The error names
/// what does not match.
[[nodiscard]] core::Status CheckStepChains(std::span<const double> states, std::span<const double> starts,
                                           std::span<const double> ends, std::span<const int32_t> chains,
                                           std::span<const int32_t> after, int32_t dof);

/// CheckStepsUntilInvalid decided in waves, for its implementations (arguments as CheckStepChains accepts
/// them, not checked again): from the first chain not yet decided, the run of chains whose prerequisites
/// lie before it; of these, the chains whose prerequisite ended complete (or that have none) get their
/// states checked by one `are_valid` call (rows; one flag per row) and their segments by
/// DecideChainSegments with `until_invalid`, the others are skipped; then the next run. Without `after`,
/// one run: CheckStepsUntilInvalid's default.
[[nodiscard]] core::Result<std::vector<StepChecks>> DecideStepWaves(
    std::span<const double> states, std::span<const double> starts, std::span<const double> ends,
    std::span<const int32_t> chains, std::span<const int32_t> after, int32_t dof,
    const std::function<core::Result<std::vector<uint8_t>>(std::span<const double>)>& are_valid,
    const std::function<core::Result<std::vector<MotionCheck>>(std::span<const double>, std::span<const double>)>&
        until_invalid);

/// The rest of CheckStepsUntilInvalid once every step's state is known (`valid`, one flag per step, as
/// AreValid gives them), for its implementations: each chain's segments up to its first invalid state,
/// decided by `until_invalid` (CheckMotionsUntilInvalid over rows of starts and ends), assembled into one
/// StepChecks per chain (every state of a chain counted as checked). Arguments as CheckStepChains
/// accepts them (not checked again); an error of `until_invalid` is returned as it is.
[[nodiscard]] core::Result<std::vector<StepChecks>> DecideChainSegments(
    std::span<const uint8_t> valid, std::span<const double> starts, std::span<const double> ends,
    std::span<const int32_t> chains, int32_t dof,
    const std::function<core::Result<std::vector<MotionCheck>>(std::span<const double>, std::span<const double>)>&
        until_invalid);

}  // namespace proximity::planners
