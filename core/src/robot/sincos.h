#pragma once
/// @file
/// Sine and cosine of several angles at once, for forward kinematics: a joint's rotation needs both,
/// and the C library's sin and cos spend most of their time guarding rounding modes and huge
/// arguments; a batch here costs a tenth as much. Absolute error below 2.5e-16 for |x| <=
/// kSinCosRange; larger arguments take std::sin and std::cos.
#include <cmath>
#include <cstdint>

namespace proximity::core {

/// Arguments up to this magnitude (radians) take the polynomial path.
inline constexpr double kSinCosRange = 1e5;

namespace sincos_detail {
// pi/2 in two parts for Cody and Waite's reduction: the first has 33 significant bits, so k * kPio2Hi
// is exact for |k| < 2^20.
inline constexpr double kPio2Hi = 1.57079632673412561417e+00;
inline constexpr double kPio2Lo = 6.07710050650619224932e-11;
inline constexpr double kTwoOverPi = 6.36619772367581382433e-01;
inline constexpr double kRoundShift = 6755399441055744.0;  // 1.5 * 2^52
}  // namespace sincos_detail

/// s[i] = sin(x[i]), c[i] = cos(x[i]) for i < n. The reduced argument r lies in [-pi/4, pi/4], where
/// Taylor series through r^17 (sine) and r^18 (cosine) are exact to below 1e-19; the quadrant swaps
/// and negates them. Always inlined: Scene::CheckStates' lane pass calls it from code built for several
/// instruction sets (scene/lanes.h), and no out-of-line copy built for one of them may serve the others.
[[gnu::always_inline]] inline void SinCos(const double* x, double* s, double* c, int n) {
  using namespace sincos_detail;
  // One pass without calls or branches (the compiler vectorizes it), then the library for the rare
  // argument out of range.
  for (int i = 0; i < n; ++i) {
    // Out of range (or NaN): 0 here, the library below. A mask, not a branch: the loop stays one
    // straight line of lane-wide operations.
    const uint64_t in_range = uint64_t{0} - static_cast<uint64_t>(__builtin_fabs(x[i]) <= kSinCosRange);
    const double v = __builtin_bit_cast(double, __builtin_bit_cast(uint64_t, x[i]) & in_range);
    // Rounded to the nearest integer by adding and subtracting 1.5 * 2^52 (|v| * 2/pi < 2^51); the sum's
    // low mantissa bits hold k + 2^51, so its two lowest bits are k's quadrant (mod 4).
    const double shifted = v * kTwoOverPi + kRoundShift;
    const double k = shifted - kRoundShift;
    const uint64_t quadrant = __builtin_bit_cast(uint64_t, shifted);
    const double r = (v - k * kPio2Hi) - k * kPio2Lo;
    const double r2 = r * r;
    // sin r = r (1 - r^2/3! + r^4/5! - ...), cos r = 1 - r^2/2! + r^4/4! - ...
    double ps = 1.0 / 355687428096000.0;  // 1/17!
    ps = ps * r2 - 1.0 / 1307674368000.0;  // 1/15!
    ps = ps * r2 + 1.0 / 6227020800.0;     // 1/13!
    ps = ps * r2 - 1.0 / 39916800.0;       // 1/11!
    ps = ps * r2 + 1.0 / 362880.0;         // 1/9!
    ps = ps * r2 - 1.0 / 5040.0;           // 1/7!
    ps = ps * r2 + 1.0 / 120.0;            // 1/5!
    ps = ps * r2 - 1.0 / 6.0;              // 1/3!
    const double sr = r + r * r2 * ps;
    double pc = 1.0 / 6402373705728000.0;  // 1/18!
    pc = pc * r2 - 1.0 / 20922789888000.0;  // 1/16!
    pc = pc * r2 + 1.0 / 87178291200.0;     // 1/14!
    pc = pc * r2 - 1.0 / 479001600.0;       // 1/12!
    pc = pc * r2 + 1.0 / 3628800.0;         // 1/10!
    pc = pc * r2 - 1.0 / 40320.0;           // 1/8!
    pc = pc * r2 + 1.0 / 720.0;             // 1/6!
    pc = pc * r2 - 1.0 / 24.0;              // 1/4!
    pc = pc * r2 + 0.5;                     // 1/2!
    const double cr = 1.0 - r2 * pc;
    // Odd quadrants swap sine and cosine; quadrants 2 and 3 negate the sine, 1 and 2 the cosine
    // (bit selects and sign flips, so that the compiler keeps the loop vectorized).
    const uint64_t swap = uint64_t{0} - (quadrant & 1);
    const uint64_t sr_bits = __builtin_bit_cast(uint64_t, sr), cr_bits = __builtin_bit_cast(uint64_t, cr);
    const uint64_t sin_bits = (cr_bits & swap) | (sr_bits & ~swap);
    const uint64_t cos_bits = (sr_bits & swap) | (cr_bits & ~swap);
    s[i] = __builtin_bit_cast(double, sin_bits ^ ((quadrant & 2) << 62));
    c[i] = __builtin_bit_cast(double, cos_bits ^ (((quadrant + 1) & 2) << 62));
  }
  for (int i = 0; i < n; ++i) {
    if (!(__builtin_fabs(x[i]) <= kSinCosRange)) {
      s[i] = std::sin(x[i]);
      c[i] = std::cos(x[i]);
    }
  }
}

}  // namespace proximity::core
