#pragma once
/// @file
/// The robot's semantics in a SceneInfo: its SRDF groups (members and the joints they move), end
/// effectors, and every pair left out of collision checking with the reason (adjacent, rigid, SRDF with
/// its reason attribute, the user's).

#include "proximity/core/scene/scene.h"
#include "proximity/v1/proximity.pb.h"

namespace proximity::server {

namespace v1 = ::proximity::v1;

/// Fills info's groups, end_effectors and allowed_pairs from the scene's robot and allowed pairs.
void AddRobotSemantics(const core::Scene& scene, v1::SceneInfo* info);

}  // namespace proximity::server
