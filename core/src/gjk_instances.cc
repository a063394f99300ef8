// The gjk.h algorithms compiled once for every pair of convex shape types (PROX_FOR_EACH_CONVEX_PAIR);
// the header declares these instances extern.
#include "proximity/core/gjk.h"

namespace proximity::core {

#define PROX_GJK_DEFINE(A, B) PROX_GJK_INSTANCES(, A, B)
PROX_FOR_EACH_CONVEX_PAIR(PROX_GJK_DEFINE)
#undef PROX_GJK_DEFINE

}  // namespace proximity::core
