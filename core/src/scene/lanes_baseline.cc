// The lane pass (lanes.h) built for the x86-64 baseline instruction set (core/CMakeLists.txt sets the flags).
#define PROX_LANES_FN PoseLanesBaseline
#include "scene/lanes_kernel.inc"
