// The epa.h algorithms compiled once for every pair of convex shape types (PROX_FOR_EACH_CONVEX_PAIR);
// the header declares these instances extern.
#include "contact/epa_impl.h"

namespace proximity::core {

#define PROX_EPA_DEFINE(A, B) PROX_EPA_INSTANCES(, A, B)
PROX_FOR_EACH_CONVEX_PAIR(PROX_EPA_DEFINE)
#undef PROX_EPA_DEFINE

}  // namespace proximity::core
