// The lane kernels (lanes.h) built for the x86-64 baseline instruction set (core/CMakeLists.txt sets the flags).
#define PROX_LANES_FN PoseLanesBaseline
#define PROX_BOXES_FN BoxesOverlapLanesBaseline
#define PROX_FIXED_BOX_FN FixedBoxOverlapLanesBaseline
#include "scene/lanes_kernel.inc"
