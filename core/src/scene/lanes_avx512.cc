// The lane pass (lanes.h) built for the AVX-512 instruction set (core/CMakeLists.txt sets the flags).
#define PROX_LANES_FN PoseLanesAvx512
#include "scene/lanes_kernel.inc"
