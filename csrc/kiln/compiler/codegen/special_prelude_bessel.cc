#include "kiln/compiler/codegen/special_prelude.h"

namespace kiln::codegen {

// Bessel functions of orders 0 and 1 (J, Y, I, K and the exponentially
// scaled I and K), the spherical j0 and the Airy function Ai, in double.
// Written from the mathematics: power series where they converge without
// much cancellation, the Hankel asymptotic expansions for large arguments,
// and for K in between the trapezoidal rule on
//   e^x K_nu(x) = integral_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt,
// which converges geometrically for such analytic integrands. Edge values
// (0, negative arguments, infinities, overflow) follow ATen's CPU kernels.
// Note: between 5 and 25 the CPU's float64 J0, J1, Y0, Y1 (and Ai near -2.5)
// are off by up to ~2e-7 (checked against mpmath); these are not.
const char* c_special_prelude_bessel() {
  return R"KILN(
#define KILN_BESSEL_PI 3.14159265358979323846
#define KILN_BESSEL_EULER 0.57721566490153286061

/* I_nu(x) for x >= 0, nu = 0 or 1, from sum (x/2)^(2k+nu) / (k! (k+nu)!):
   all terms positive, so exact to rounding. */
static double kiln_bessel_i_series(double x, int nu) {
  double quarter = 0.25 * x * x, term = nu ? 0.5 * x : 1.0, sum = term;
  for (int k = 1; k < 500; ++k) {
    term *= quarter / ((double)k * (k + nu));
    sum += term;
    if (term < 1e-17 * sum) break;
  }
  return sum;
}

/* e^-x sqrt(2 pi x) I_nu(x) ~ sum (-1)^k a_k(nu) / x^k for large x, with
   a_k(nu) = prod_{j<=k} (4nu^2 - (2j-1)^2) / (k! 8^k); `sign` -1 gives the
   series of sqrt(2x/pi) e^x K_nu(x), whose terms do not alternate. */
static double kiln_bessel_large_series(double x, double nu, double sign) {
  double mu = 4 * nu * nu, term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    double next = term * sign * ((2.0 * k - 1) * (2.0 * k - 1) - mu) / (8.0 * k * x);
    if (__builtin_fabs(next) >= __builtin_fabs(term)) break;
    term = next;
    sum += term;
    if (__builtin_fabs(term) < 1e-17 * __builtin_fabs(sum)) break;
  }
  return sum;
}

/* e^-|x| I_nu(|x|): the series below 20 (its terms reach e^|x| at most), the
   asymptotic expansion above (its error, about e^-2x, is below rounding). */
static double kiln_bessel_i_scaled_magnitude(double x, int nu) {
  if (x <= 20) return kiln_bessel_i_series(x, nu) * __builtin_exp(-x);
  return kiln_bessel_large_series(x, nu, 1.0) / __builtin_sqrt(2 * KILN_BESSEL_PI * x);
}
/* I_nu(|x|) = e^|x| (e^-|x| I_nu(|x|)). Like the CPU, the result overflows
   when e^|x| does in the kernel's precision (`single`: float), and is NaN at
   +-inf. */
static double kiln_bessel_i_magnitude(double x, int nu, int single) {
  if (x == __builtin_inf()) return __builtin_nan("");
  if (x <= 20) return kiln_bessel_i_series(x, nu);
  double growth = __builtin_exp(x);
  if (single && growth > 3.4028234663852886e38) return __builtin_inf();
  if (growth == __builtin_inf()) return growth;
  return kiln_bessel_large_series(x, nu, 1.0) * growth / __builtin_sqrt(2 * KILN_BESSEL_PI * x);
}
static double kiln_bessel_i0(double x, int single) {
  if (x != x) return x;
  return kiln_bessel_i_magnitude(__builtin_fabs(x), 0, single);
}
static double kiln_bessel_i0_scaled(double x) {
  if (x != x) return x;
  return kiln_bessel_i_scaled_magnitude(__builtin_fabs(x), 0);
}
static double kiln_bessel_i1(double x, int single) {
  if (x != x) return x;
  double magnitude = kiln_bessel_i_magnitude(__builtin_fabs(x), 1, single);
  return x < 0 ? -magnitude : magnitude;
}
static double kiln_bessel_i1_scaled(double x) {
  if (x != x) return x;
  double magnitude = kiln_bessel_i_scaled_magnitude(__builtin_fabs(x), 1);
  return x < 0 ? -magnitude : magnitude;
}

/* e^x K_nu(x) for x >= 1 (trapezoidal rule, step 0.1, up to 25; the
   asymptotic expansion above). */
static double kiln_bessel_k_scaled_large(double x, double nu) {
  if (x > 25) {
    return kiln_bessel_large_series(x, nu, -1.0) * __builtin_sqrt(KILN_BESSEL_PI / (2 * x));
  }
  const double step = 0.1;
  double sum = 0.5;
  for (int j = 1; j < 400; ++j) {
    double t = j * step;
    double value = __builtin_exp(-x * (__builtin_cosh(t) - 1)) * __builtin_cosh(nu * t);
    sum += value;
    if (value < 1e-18 * sum) break;
  }
  return step * sum;
}

/* K0 and K1 for 0 < x <= 2 from their series:
   K0 = -(ln(x/2) + gamma) I0(x) + sum H_k (x^2/4)^k / (k!)^2,
   K1 = 1/x + ln(x/2) I1(x) - (x/4) sum (psi(k+1) + psi(k+2)) (x^2/4)^k / (k! (k+1)!). */
static double kiln_bessel_k0_small(double x) {
  double quarter = 0.25 * x * x, term = 1, harmonic = 0, sum = 0;
  for (int k = 1; k < 100; ++k) {
    term *= quarter / ((double)k * k);
    harmonic += 1.0 / k;
    sum += harmonic * term;
    if (harmonic * term < 1e-17 * sum) break;
  }
  return -(__builtin_log(0.5 * x) + KILN_BESSEL_EULER) * kiln_bessel_i_series(x, 0) + sum;
}
static double kiln_bessel_k1_small(double x) {
  double quarter = 0.25 * x * x, term = 1, harmonic = 0;
  double sum = 1 - 2 * KILN_BESSEL_EULER;  /* k = 0: psi(1) + psi(2) */
  for (int k = 1; k < 100; ++k) {
    term *= quarter / ((double)k * (k + 1));
    harmonic += 1.0 / k;
    double weight = 2 * harmonic + 1.0 / (k + 1) - 2 * KILN_BESSEL_EULER;
    sum += weight * term;
    if (__builtin_fabs(weight * term) < 1e-17 * __builtin_fabs(sum)) break;
  }
  return 1 / x + __builtin_log(0.5 * x) * kiln_bessel_i_series(x, 1) - 0.25 * x * sum;
}

/* K is NaN below 0, inf at 0, 0 at inf. */
#define KILN_BESSEL_K_EDGES(x, at_zero)                      \
  if ((x) != (x)) return x;                                  \
  if ((x) < 0) return __builtin_nan("");                     \
  if ((x) == 0) return at_zero;
static double kiln_bessel_k0(double x) {
  KILN_BESSEL_K_EDGES(x, __builtin_inf())
  if (x <= 2) return kiln_bessel_k0_small(x);
  if (x > 800) return 0;
  return kiln_bessel_k_scaled_large(x, 0) * __builtin_exp(-x);
}
static double kiln_bessel_k0_scaled(double x) {
  KILN_BESSEL_K_EDGES(x, __builtin_inf())
  if (x <= 2) return kiln_bessel_k0_small(x) * __builtin_exp(x);
  return kiln_bessel_k_scaled_large(x, 0);
}
static double kiln_bessel_k1(double x) {
  KILN_BESSEL_K_EDGES(x, __builtin_inf())
  if (x <= 2) return kiln_bessel_k1_small(x);
  if (x > 800) return 0;
  return kiln_bessel_k_scaled_large(x, 1) * __builtin_exp(-x);
}
static double kiln_bessel_k1_scaled(double x) {
  KILN_BESSEL_K_EDGES(x, __builtin_inf())
  if (x <= 2) return kiln_bessel_k1_small(x) * __builtin_exp(x);
  return kiln_bessel_k_scaled_large(x, 1);
}

/* J_nu for |x| <= 13: sum (-1)^k (x/2)^(2k+nu) / (k! (k+nu)!); the terms
   reach about I_nu(13) ~ 5e4, so the absolute error stays near 1e-11. */
static double kiln_bessel_j_series(double x, int nu) {
  double quarter = -0.25 * x * x, term = nu ? 0.5 * x : 1.0, sum = term;
  for (int k = 1; k < 200; ++k) {
    term *= quarter / ((double)k * (k + nu));
    sum += term;
    if (__builtin_fabs(term) < 1e-18 && k > 5) break;
  }
  return sum;
}

/* Hankel's expansions for x > 13: with P = sum (-1)^k a_2k / x^2k and
   Q = sum (-1)^k a_2k+1 / x^(2k+1), w = x - (nu/2 + 1/4) pi,
   J = sqrt(2/(pi x)) (P cos w - Q sin w), Y = sqrt(2/(pi x)) (P sin w + Q cos w).
   cos w and sin w come from cos x and sin x (exact arguments). */
static void kiln_bessel_hankel(double x, int nu, double* j, double* y) {
  double mu = 4.0 * nu * nu, term = 1, p = 1, q = 0;
  for (int k = 1; k < 60; ++k) {
    double next = term * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * k * x);
    if (__builtin_fabs(next) >= __builtin_fabs(term)) break;
    term = next;
    /* a_k / x^k enters with sign (-1)^(k/2) in P (even k) or Q (odd k). */
    double signed_term = ((k / 2) & 1) ? -term : term;
    if (k & 1) q += signed_term; else p += signed_term;
    if (__builtin_fabs(term) < 1e-17) break;
  }
  double c = __builtin_cos(x), s = __builtin_sin(x);
  /* w = x - pi/4 (nu = 0) or x - 3pi/4 (nu = 1). */
  double cos_w = nu ? (s - c) * 0.70710678118654752440 : (c + s) * 0.70710678118654752440;
  double sin_w = nu ? -(s + c) * 0.70710678118654752440 : (s - c) * 0.70710678118654752440;
  double scale = __builtin_sqrt(2 / (KILN_BESSEL_PI * x));
  *j = scale * (p * cos_w - q * sin_w);
  *y = scale * (p * sin_w + q * cos_w);
}
static double kiln_bessel_j0(double x) {
  if (x != x) return x;
  double magnitude = __builtin_fabs(x);
  if (magnitude == __builtin_inf()) return __builtin_nan("");
  if (magnitude <= 13) return kiln_bessel_j_series(magnitude, 0);
  double j, y;
  kiln_bessel_hankel(magnitude, 0, &j, &y);
  return j;
}
static double kiln_bessel_j1(double x) {
  if (x != x) return x;
  double magnitude = __builtin_fabs(x), result;
  if (magnitude == __builtin_inf()) return __builtin_nan("");
  if (magnitude <= 13) {
    result = kiln_bessel_j_series(magnitude, 1);
  } else {
    double y;
    kiln_bessel_hankel(magnitude, 1, &result, &y);
  }
  return x < 0 ? -result : result;
}

/* Y0 = (2/pi) (ln(x/2) + gamma) J0 - (2/pi) sum (-1)^k H_k (x^2/4)^k / (k!)^2;
   Y1 = -2/(pi x) + (2/pi) ln(x/2) J1
        - (x/(2 pi)) sum (-1)^k (psi(k+1) + psi(k+2)) (x^2/4)^k / (k! (k+1)!).
   NaN below 0 and at inf (as on the CPU), -inf at 0. */
static double kiln_bessel_y0(double x) {
  if (x != x) return x;
  if (x < 0) return __builtin_nan("");
  if (x == 0) return -__builtin_inf();
  if (x == __builtin_inf()) return __builtin_nan("");
  if (x > 13) {
    double j, y;
    kiln_bessel_hankel(x, 0, &j, &y);
    return y;
  }
  double quarter = -0.25 * x * x, term = 1, harmonic = 0, sum = 0;
  for (int k = 1; k < 200; ++k) {
    term *= quarter / ((double)k * k);
    harmonic += 1.0 / k;
    sum += harmonic * term;
    if (__builtin_fabs(harmonic * term) < 1e-18 && k > 5) break;
  }
  return (2 / KILN_BESSEL_PI) * ((__builtin_log(0.5 * x) + KILN_BESSEL_EULER) * kiln_bessel_j_series(x, 0) - sum);
}
static double kiln_bessel_y1(double x) {
  if (x != x) return x;
  if (x < 0) return __builtin_nan("");
  if (x == 0) return -__builtin_inf();
  if (x == __builtin_inf()) return __builtin_nan("");
  if (x > 13) {
    double j, y;
    kiln_bessel_hankel(x, 1, &j, &y);
    return y;
  }
  double quarter = -0.25 * x * x, term = 1, harmonic = 0;
  double sum = 1 - 2 * KILN_BESSEL_EULER;
  for (int k = 1; k < 200; ++k) {
    term *= quarter / ((double)k * (k + 1));
    harmonic += 1.0 / k;
    double weighted = (2 * harmonic + 1.0 / (k + 1) - 2 * KILN_BESSEL_EULER) * term;
    sum += weighted;
    if (__builtin_fabs(weighted) < 1e-18 && k > 5) break;
  }
  return -2 / (KILN_BESSEL_PI * x) + (2 / KILN_BESSEL_PI) * __builtin_log(0.5 * x) * kiln_bessel_j_series(x, 1) -
         x / (2 * KILN_BESSEL_PI) * sum;
}

/* j0(x) = sin(x)/x, with its Taylor series near 0 and 0 at +-inf. */
static double kiln_spherical_bessel_j0(double x) {
  if (__builtin_isinf(x)) return 0;
  if (__builtin_fabs(x) < 1e-3) {
    double square = x * x;
    return 1 - square / 6 * (1 - square / 20 * (1 - square / 42));
  }
  return __builtin_sin(x) / x;
}

/* Ai(x): the Maclaurin series Ai(0) f(x) + Ai'(0) g(x) for -7 <= x <= 2,
   Ai(x) = sqrt(x/3) K_1/3(z) / pi with z = 2/3 x^(3/2) above, and for
   x < -7 the oscillatory expansion
   Ai(-r) ~ (cos(z - pi/4) sum (-1)^k u_2k / z^2k + sin(z - pi/4) sum (-1)^k u_2k+1 / z^(2k+1))
            / (sqrt(pi) r^(1/4)),  u_k = u_k-1 (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k). */
static double kiln_airy_ai(double x) {
  if (x != x) return x;
  if (__builtin_isinf(x)) return __builtin_nan("");
  if (x > 103.892) return 0;
  if (x > 2) {
    double z = 2.0 / 3.0 * x * __builtin_sqrt(x);
    return __builtin_sqrt(x / 3) / KILN_BESSEL_PI * kiln_bessel_k_scaled_large(z, 1.0 / 3.0) * __builtin_exp(-z);
  }
  if (x >= -7) {
    double cube = x * x * x, f = 1, g = x, f_sum = 1, g_sum = x;
    for (int k = 1; k < 200; ++k) {
      f *= cube / ((3.0 * k - 1) * (3.0 * k));
      g *= cube / ((3.0 * k) * (3.0 * k + 1));
      f_sum += f;
      g_sum += g;
      if (__builtin_fabs(f) + __builtin_fabs(g) < 1e-18 && k > 3) break;
    }
    return 0.355028053887817239260 * f_sum - 0.258819403792806798405 * g_sum;
  }
  double r = -x, z = 2.0 / 3.0 * r * __builtin_sqrt(r);
  double term = 1, p = 1, q = 0;
  for (int k = 1; k < 60; ++k) {
    double next = term * (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / ((2.0 * k - 1) * 216.0 * k * z);
    if (__builtin_fabs(next) >= __builtin_fabs(term)) break;
    term = next;
    double signed_term = ((k / 2) & 1) ? -term : term;
    if (k & 1) q += signed_term; else p += signed_term;
    if (term < 1e-17) break;
  }
  double c = __builtin_cos(z), s = __builtin_sin(z);
  double cos_w = (c + s) * 0.70710678118654752440, sin_w = (s - c) * 0.70710678118654752440;
  return (cos_w * p + sin_w * q) / (1.77245385090551602730 * __builtin_sqrt(__builtin_sqrt(r)));
}
)KILN";
}

}  // namespace kiln::codegen
