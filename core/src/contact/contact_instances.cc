// The contact.h algorithms compiled once for every pair of convex shape types (PROX_FOR_EACH_CONVEX_PAIR);
// the header declares these instances extern.
#include "contact/contact_impl.h"

namespace proximity::core {

#define PROX_CONTACT_DEFINE(A, B) PROX_CONTACT_INSTANCES(, A, B)
PROX_FOR_EACH_CONVEX_PAIR(PROX_CONTACT_DEFINE)
#undef PROX_CONTACT_DEFINE

}  // namespace proximity::core
