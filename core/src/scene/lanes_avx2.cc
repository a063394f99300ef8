// The lane pass (lanes.h) built for the AVX2 + FMA instruction set (core/CMakeLists.txt sets the flags).
#define PROX_LANES_FN PoseLanesAvx2
#include "scene/lanes_kernel.inc"
