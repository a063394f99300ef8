#pragma once
// The background fill of self-clearance maps (SelfClearanceFill::kBackground): one thread for the
// process, at the lowest scheduling priority, that fills the maps of the scenes queued to it.

#include <memory>

namespace proximity::core {
class Scene;
}  // namespace proximity::core

namespace proximity::core::internal {

// Queues the scene's unclaimed maps for the background thread (started on first use). The thread holds
// the scene only while it fills it, and gives up (releasing the maps it did not finish for a later
// fill) once it is the scene's last holder or the process exits.
void QueueSelfClearanceFill(const std::shared_ptr<const Scene>& scene);

}  // namespace proximity::core::internal
