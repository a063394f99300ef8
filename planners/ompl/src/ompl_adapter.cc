#include "proximity/planners/ompl_adapter.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <exception>
#include <numbers>
#include <string>
#include <vector>

#include <ompl/base/spaces/RealVectorStateSpace.h>
#include <ompl/base/spaces/SO2StateSpace.h>

#include "proximity/planners/scene_validity.h"

namespace proximity::planners {
namespace {

namespace ob = ompl::base;

constexpr double kPi = std::numbers::pi;

// Configurations of up to this many coordinates are staged on the stack; longer ones in a per-thread
// buffer that grows once.
constexpr int32_t kStackDof = 32;

// Scratch for one configuration: no allocation on the hot path. `slot` tells apart the (at most two)
// buffers one call needs at once.
class Scratch {
 public:
  Scratch(int32_t dof, int slot) {
    if (dof > kStackDof) {
      thread_local std::vector<double> heap[2];
      std::vector<double>& v = heap[slot];
      v.resize(static_cast<size_t>(dof));
      data_ = v.data();
    }
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  double* data() { return data_; }

 private:
  std::array<double, kStackDof> stack_;
  double* data_ = stack_.data();
};

// OMPL's counters are plain unsigned ints; parallel planners call validators from several threads.
void Increment(unsigned int& counter) { std::atomic_ref<unsigned int>(counter).fetch_add(1, std::memory_order_relaxed); }

}  // namespace

// ------------------------------------------------------------------------------------------------
// OmplStateLayout

OmplStateLayout::OmplStateLayout(JointSpace space) : space_(std::move(space)) {}

ob::StateSpacePtr OmplStateLayout::MakeStateSpace() const {
  const auto n = static_cast<unsigned int>(dof());
  if (flat()) {
    auto rv = std::make_shared<ob::RealVectorStateSpace>(n);
    ob::RealVectorBounds bounds(n);
    for (unsigned int i = 0; i < n; ++i) {
      bounds.setLow(i, space_.lower()[i]);
      bounds.setHigh(i, space_.upper()[i]);
    }
    rv->setBounds(bounds);
    return rv;
  }
  auto compound = std::make_shared<ob::CompoundStateSpace>();
  for (unsigned int i = 0; i < n; ++i) {
    if (space_.wraps(static_cast<int32_t>(i))) {
      compound->addSubspace(std::make_shared<ob::SO2StateSpace>(), 1.0);
    } else {
      auto rv = std::make_shared<ob::RealVectorStateSpace>(1);
      rv->setBounds(space_.lower()[i], space_.upper()[i]);
      compound->addSubspace(rv, 1.0);
    }
  }
  compound->lock();
  return compound;
}

const double* OmplStateLayout::View(const ob::State* state, double* scratch) const {
  if (flat()) return state->as<ob::RealVectorStateSpace::StateType>()->values;
  ToConfiguration(state, std::span<double>(scratch, static_cast<size_t>(dof())));
  return scratch;
}

void OmplStateLayout::ToConfiguration(const ob::State* state, std::span<double> q) const {
  if (flat()) {
    const double* v = state->as<ob::RealVectorStateSpace::StateType>()->values;
    std::copy(v, v + dof(), q.begin());
    return;
  }
  const auto* c = state->as<ob::CompoundState>();
  for (int32_t i = 0; i < dof(); ++i) {
    const auto k = static_cast<unsigned int>(i);
    q[static_cast<size_t>(i)] = space_.wraps(i) ? c->as<ob::SO2StateSpace::StateType>(k)->value
                                                : c->as<ob::RealVectorStateSpace::StateType>(k)->values[0];
  }
}

void OmplStateLayout::FromConfiguration(std::span<const double> q, ob::State* state) const {
  if (flat()) {
    double* v = state->as<ob::RealVectorStateSpace::StateType>()->values;
    std::copy(q.begin(), q.begin() + dof(), v);
    return;
  }
  auto* c = state->as<ob::CompoundState>();
  for (int32_t i = 0; i < dof(); ++i) {
    const auto k = static_cast<unsigned int>(i);
    const double x = q[static_cast<size_t>(i)];
    if (space_.wraps(i)) {
      // SO2StateSpace::enforceBounds' rule: values already in [-pi, pi) are kept bit for bit.
      double w = std::fmod(x, 2.0 * kPi);
      if (w < -kPi) {
        w += 2.0 * kPi;
      } else if (w >= kPi) {
        w -= 2.0 * kPi;
      }
      c->as<ob::SO2StateSpace::StateType>(k)->value = w;
    } else {
      c->as<ob::RealVectorStateSpace::StateType>(k)->values[0] = x;
    }
  }
}

void OmplStateLayout::SegmentEnd(std::span<const double> q0, std::span<const double> q1, std::span<double> out) const {
  for (int32_t i = 0; i < dof(); ++i) {
    const auto k = static_cast<size_t>(i);
    if (!space_.wraps(i)) {
      out[k] = q1[k];
      continue;
    }
    // SO2StateSpace::interpolate's rule, the one every motion query follows (core::ShortestTurn).
    out[k] = q0[k] + core::ShortestTurn(q1[k] - q0[k]);
  }
}

std::vector<Configuration> OmplStateLayout::PathConfigurations(const ompl::geometric::PathGeometric& path) const {
  std::vector<Configuration> out(path.getStateCount(), Configuration(static_cast<size_t>(dof())));
  for (size_t i = 0; i < out.size(); ++i) ToConfiguration(path.getState(static_cast<unsigned int>(i)), out[i]);
  return out;
}

// ------------------------------------------------------------------------------------------------
// OmplErrorLog

void OmplErrorLog::Record(const core::Status& status) {
  if (errors_.fetch_add(1, std::memory_order_relaxed) == 0) {
    std::lock_guard lock(mutex_);
    first_ = status;
  }
}

core::Status OmplErrorLog::status() const {
  if (errors_.load(std::memory_order_relaxed) == 0) return core::Status::Ok();
  std::lock_guard lock(mutex_);
  // The first failure's thread may still be storing it.
  return first_.ok() ? core::Status(core::Error{core::ErrorCode::kInternal, "a validity check failed"}) : first_;
}

// ------------------------------------------------------------------------------------------------
// OmplStateValidityChecker

OmplStateValidityChecker::OmplStateValidityChecker(ob::SpaceInformation* si, std::shared_ptr<const OmplStateLayout> layout,
                                                   std::shared_ptr<const planners::StateValidityChecker> checker)
    : ob::StateValidityChecker(si), layout_(std::move(layout)), checker_(std::move(checker)) {}

bool OmplStateValidityChecker::isValid(const ob::State* state) const {
  checks_.fetch_add(1, std::memory_order_relaxed);
  const int32_t n = layout_->dof();
  Scratch scratch(n, 0);
  const double* q = layout_->View(state, scratch.data());
  const core::Result<bool> valid = checker_->IsValid(std::span<const double>(q, static_cast<size_t>(n)));
  if (!valid.ok()) {
    log_.Record(valid.status());
    return false;
  }
  return valid.value();
}

// ------------------------------------------------------------------------------------------------
// OmplMotionValidator

OmplMotionValidator::OmplMotionValidator(ob::SpaceInformation* si, std::shared_ptr<const OmplStateLayout> layout,
                                         std::shared_ptr<const planners::MotionValidator> validator)
    : ob::MotionValidator(si), layout_(std::move(layout)), validator_(std::move(validator)) {}

MotionCheck OmplMotionValidator::Check(const ob::State* s1, const ob::State* s2) const {
  const int32_t n = layout_->dof();
  const auto size = static_cast<size_t>(n);
  Scratch scratch0(n, 0), scratch1(n, 1);
  const double* q0 = layout_->View(s1, scratch0.data());
  const double* q1 = layout_->View(s2, scratch1.data());
  if (!layout_->flat()) {
    // q1 already sits in scratch1: the segment end is computed in place.
    layout_->SegmentEnd(std::span<const double>(q0, size), std::span<const double>(q1, size),
                        std::span<double>(scratch1.data(), size));
  }
  const core::Result<MotionCheck> check =
      validator_->CheckMotion(std::span<const double>(q0, size), std::span<const double>(q1, size));
  if (!check.ok()) {
    log_.Record(check.status());
    return MotionCheck();  // not valid, nothing known valid
  }
  states_.fetch_add(check.value().states, std::memory_order_relaxed);
  return check.value();
}

bool OmplMotionValidator::checkMotion(const ob::State* s1, const ob::State* s2) const {
  const bool valid = Check(s1, s2).valid;
  Increment(valid ? valid_ : invalid_);
  return valid;
}

bool OmplMotionValidator::checkMotion(const ob::State* s1, const ob::State* s2,
                                      std::pair<ob::State*, double>& lastValid) const {
  const MotionCheck check = Check(s1, s2);
  const bool valid = check.valid;
  if (!valid) {
    lastValid.second = check.last_valid_t;
    if (lastValid.first != nullptr) si_->getStateSpace()->interpolate(s1, s2, lastValid.second, lastValid.first);
  }
  Increment(valid ? valid_ : invalid_);
  return valid;
}

// ------------------------------------------------------------------------------------------------
// Setup

ob::State* OmplSetup::NewState(std::span<const double> q) const {
  ob::State* state = si->allocState();
  layout->FromConfiguration(q, state);
  return state;
}

core::Status OmplSetup::status() const {
  if (core::Status s = state_checker->status(); !s.ok()) return s;
  return motion_validator->status();
}

Result<OmplSetup> MakeOmplSetup(const JointSpace& space, std::shared_ptr<const planners::StateValidityChecker> state,
                                std::shared_ptr<const planners::MotionValidator> motion) {
  if (state == nullptr) return core::InvalidArgument("OMPL setup: the state validity checker is null");
  if (motion == nullptr) return core::InvalidArgument("OMPL setup: the motion validator is null");
  OmplSetup setup;
  setup.layout = std::make_shared<const OmplStateLayout>(space);
  try {
    setup.si = std::make_shared<ob::SpaceInformation>(setup.layout->MakeStateSpace());
    setup.state_checker = std::make_shared<OmplStateValidityChecker>(setup.si.get(), setup.layout, std::move(state));
    setup.motion_validator = std::make_shared<OmplMotionValidator>(setup.si.get(), setup.layout, std::move(motion));
    setup.si->setStateValidityChecker(setup.state_checker);
    setup.si->setMotionValidator(setup.motion_validator);
    setup.si->setup();
  } catch (const std::exception& e) {
    return core::InvalidArgument(std::string("OMPL setup: ") + e.what());
  }
  return setup;
}

Result<OmplSetup> MakeOmplSetup(std::shared_ptr<const core::Scene> scene, core::MotionRequest motion) {
  if (scene == nullptr) return core::InvalidArgument("OMPL setup: the scene is null");
  const JointSpace space = JointSpace::ForRobot(scene->robot());
  return MakeOmplSetup(space, std::make_shared<const SceneStateValidity>(scene),
                       std::make_shared<const SceneMotionValidator>(scene, motion));
}

}  // namespace proximity::planners
