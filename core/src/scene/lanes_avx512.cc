// The lane kernels (lanes.h) built for the AVX-512 instruction set (core/CMakeLists.txt sets the flags).
#define PROX_LANES_FN PoseLanesAvx512
#define PROX_BOXES_FN BoxesOverlapLanesAvx512
#define PROX_FIXED_BOX_FN FixedBoxOverlapLanesAvx512
#include "scene/lanes_kernel.inc"
