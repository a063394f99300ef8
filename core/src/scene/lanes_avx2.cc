// The lane kernels (lanes.h) built for the AVX2 + FMA instruction set (core/CMakeLists.txt sets the flags).
#define PROX_LANES_FN PoseLanesAvx2
#define PROX_BOXES_FN BoxesOverlapLanesAvx2
#define PROX_FIXED_BOX_FN FixedBoxOverlapLanesAvx2
#include "scene/lanes_kernel.inc"
