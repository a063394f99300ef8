#pragma once
/// @file
/// What ComputeContacts and ComputeSignedDistance answer: the request checks and the conversion of
/// proximity::contact's scene contacts and pair signed distance to the wire.

#include "proximity/core/base/result.h"
#include "proximity/core/contact/scene_contacts.h"
#include "proximity/v1/proximity.pb.h"

namespace proximity::server {

namespace v1 = ::proximity::v1;

/// Most geometry pairs and points per pair a ComputeContacts request may ask for.
inline constexpr uint32_t kMaxContactPairs = 4096;
inline constexpr uint32_t kMaxContactPoints = 1024;

/// The core request of a ComputeContacts request (defaults filled in); INVALID_ARGUMENT naming
/// max_pairs or max_points beyond their caps.
core::Result<core::SceneContactRequest> ToContactRequest(const v1::ComputeContactsRequest& request);

void ToWire(const core::Scene& scene, const core::SceneContactResult& result, v1::ComputeContactsResponse* out);
void ToWire(const core::Scene& scene, const core::PairSignedDistance& result, v1::ComputeSignedDistanceResponse* out);

}  // namespace proximity::server
