// SPDX-License-Identifier: GPL-3.0-or-later
// cos φ and sin φ of many angles at once: the phase factors e^{ik·r(t)} of F_s, where libm's
// sincos, one angle at a time, took ≈ 60% of the analysis. A branch-free Cody–Waite reduction to
// [−π/4, π/4] (π/2 in three 33-bit parts, exact products for |q| < 2^20) and fdlibm's kernel
// polynomials (__kernel_sin, __kernel_cos), on GCC/Clang vector types so that four angles go
// through each instruction. Within 1 ulp of the exact values on the reduced range (the same
// kernels as glibc's), so within a few 1e-16 of libm; angles with |φ| ≥ 2^18 (beyond the exact
// reduction) take libm's std::cos/std::sin. The result of an angle does not depend on its
// neighbours or its position in the array (bit-identical for any split into threads).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

// The 32-byte vector types live only inside these inline functions (no ABI crosses a library
// boundary): GCC's note that their passing convention differs without AVX does not apply.
// (The note is emitted where the inline functions are used, so it stays off for the includer.)
#pragma GCC diagnostic ignored "-Wpsabi"

namespace vibra::analysis::detail {

namespace sincos_impl {
using v4d = double __attribute__((vector_size(32)));
using v4l = std::int64_t __attribute__((vector_size(32)));

inline v4d splat(double a) { return v4d{a, a, a, a}; }

/// Lanes 0..3 of (c, s) = (cos φ, sin φ).
inline void sincos4(v4d phi, v4d& c, v4d& s) {
    constexpr double two_over_pi = 6.36619772367581382433e-01;
    constexpr double magic = 0x1.8p52;                 // adding it rounds to an integer in the low bits
    constexpr double p1 = 1.57079632673412561417e+00;  // π/2, first 33 bits
    constexpr double p2 = 6.07710050630396597660e-11;  // second 33 bits
    constexpr double p3 = 2.02226624871116645580e-21;  // third 33 bits
    const v4d t = phi * splat(two_over_pi) + splat(magic);
    const v4d q = t - splat(magic);  // nearest integer to φ·2/π
    v4l n;
    std::memcpy(&n, &t, sizeof n);  // low bits of t's mantissa: q (two's complement, mod 2^51)
    const v4d x = ((phi - q * splat(p1)) - q * splat(p2)) - q * splat(p3);
    const v4d z = x * x;
    // fdlibm __kernel_sin(x, 0)
    const v4d rs =
        splat(8.33333333332248946124e-03) +
        z * (splat(-1.98412698298579493134e-04) +
             z * (splat(2.75573137070700676789e-06) +
                  z * (splat(-2.50507602534068634195e-08) + z * splat(1.58969099521155010221e-10))));
    const v4d sk = x + (z * x) * (splat(-1.66666666666666324348e-01) + z * rs);
    // fdlibm __kernel_cos(x, 0)
    const v4d rc =
        z *
        (splat(4.16666666666666019037e-02) +
         z * (splat(-1.38888888888741095749e-03) +
              z * (splat(2.48015872894767294178e-05) +
                   z * (splat(-2.75573143513906633035e-07) +
                        z * (splat(2.08757232129817482790e-09) + z * splat(-1.13596475577881948265e-11))))));
    const v4d hz = splat(0.5) * z;
    const v4d w = splat(1.0) - hz;
    const v4d ck = w + (((splat(1.0) - w) - hz) + z * rc);
    // quadrant q mod 4: 0 (c, s), 1 (−s, c), 2 (−c, −s), 3 (s, −c)
    const v4l one = {1, 1, 1, 1}, two = {2, 2, 2, 2};
    const v4l swap = -(n & one);  // all bits set where q is odd
    v4l ci, si;
    std::memcpy(&ci, &ck, sizeof ci);
    std::memcpy(&si, &sk, sizeof si);
    v4l co = (si & swap) | (ci & ~swap), so = (ci & swap) | (si & ~swap);
    so ^= (n & two) << 62;          // sin negative in quadrants 2, 3
    co ^= ((n + one) & two) << 62;  // cos negative in quadrants 1, 2
    std::memcpy(&c, &co, sizeof c);
    std::memcpy(&s, &so, sizeof s);
}
}  // namespace sincos_impl

/// c[i] = cos(phi[i]), s[i] = sin(phi[i]) for i < n (phi finite).
inline void sincos_many(const double* phi, double* c, double* s, std::size_t n) {
    using namespace sincos_impl;
    constexpr double kExactBelow = 262144.0;  // 2^18: |q| < 2^18·2/π < 2^20
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4d p, cv, sv;
        std::memcpy(&p, phi + i, sizeof p);
        sincos4(p, cv, sv);
        std::memcpy(c + i, &cv, sizeof cv);
        std::memcpy(s + i, &sv, sizeof sv);
    }
    if (i < n) {
        double pp[4] = {0, 0, 0, 0}, cc[4], ss[4];
        for (std::size_t j = i; j < n; ++j) pp[j - i] = phi[j];
        v4d p, cv, sv;
        std::memcpy(&p, pp, sizeof p);
        sincos4(p, cv, sv);
        std::memcpy(cc, &cv, sizeof cc);
        std::memcpy(ss, &sv, sizeof ss);
        for (std::size_t j = i; j < n; ++j) {
            c[j] = cc[j - i];
            s[j] = ss[j - i];
        }
    }
    for (std::size_t j = 0; j < n; ++j)
        if (!(std::abs(phi[j]) < kExactBelow)) {
            c[j] = std::cos(phi[j]);
            s[j] = std::sin(phi[j]);
        }
}

}  // namespace vibra::analysis::detail
