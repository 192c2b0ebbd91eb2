#include "kiln/compiler/codegen/special_prelude.h"

namespace kiln::codegen {

// The gamma family and the error-function family in double precision:
// digamma, trigamma and polygamma, the Hurwitz zeta function, the regularized
// incomplete gamma functions, erfinv, erfcx, ndtri and log_ndtr. Written from
// the mathematics (recurrences, asymptotic series with Bernoulli numbers,
// Euler-Maclaurin summation, series and continued fractions, Newton steps);
// values at poles and outside the domains follow ATen's CPU kernels.
const char* c_special_prelude_gamma() {
  return R"KILN(
#define KILN_PI 3.14159265358979323846
#define KILN_EULER_GAMMA 0.57721566490153286061
/* B_2k / (2k)!, k = 1..12: the Euler-Maclaurin coefficients. */
static const double kiln_bernoulli_over_factorial[12] = {
  8.33333333333333287e-02, -1.38888888888888894e-03, 3.30687830687830710e-05,
  -8.26719576719576754e-07, 2.08767569878681002e-08, -5.28419013868749322e-10,
  1.33825365306846789e-11, -3.38968029632258272e-13, 8.58606205627784517e-15,
  -2.17486869855806192e-16, 5.50900282836022953e-18, -1.39544646858125223e-19};

/* digamma: psi(x) = psi(x + n) - sum 1/(x + k) up to x >= 10, then
   ln x - 1/(2x) - sum B_2k / (2k x^2k). Negative x by reflection,
   psi(x) = psi(1 - x) - pi / tan(pi x), with tan taken of the fractional part
   (exact) so large |x| keep their accuracy. psi(+-0) = -+inf, negative
   integers NaN. */
static double kiln_digamma(double x) {
  if (x == 0) return __builtin_copysign(__builtin_inf(), -x);
  double result = 0;
  if (x < 0) {
    if (x == __builtin_trunc(x)) return __builtin_nan("");
    result = -KILN_PI / __builtin_tan(KILN_PI * (x - __builtin_trunc(x)));
    x = 1 - x;
  }
  while (x < 10) { result -= 1 / x; x += 1; }
  if (x != x || x == __builtin_inf()) return result + __builtin_log(x);
  const double z = 1 / (x * x);
  const double tail = z * (8.33333333333333287e-02 + z * (-8.33333333333333322e-03 +
      z * (3.96825396825396803e-03 + z * (-4.16666666666666661e-03 + z * (7.57575757575757597e-03 +
      z * (-2.10927960927960942e-02 + z * (8.33333333333333287e-02 + z * -4.43259803921568607e-01)))))));
  return result + __builtin_log(x) - 0.5 / x - tail;
}

/* trigamma: psi'(x) = sum 1/(x + k)^2 up to x >= 10, then
   1/x + 1/(2x^2) + sum B_2k / x^(2k+1). Below 1/2 by reflection,
   psi'(x) = pi^2 / sin^2(pi x) - psi'(1 - x), with sin(pi x) rounded in the
   kernel's precision (`single`): at the poles (0, negative integers) the CPU
   returns what that rounding gives, a huge finite value or inf. */
static double kiln_trigamma(double x, int single) {
  double result = 0, sign = 1;
  if (x < 0.5) {
    double sine = single ? (double)__builtin_sinf((float)KILN_PI * (float)x) : __builtin_sin(KILN_PI * x);
    result = -(KILN_PI * KILN_PI) / (sine * sine);
    sign = -1;
    x = 1 - x;
  }
  while (x < 10) { result += 1 / (x * x); x += 1; }
  const double z = 1 / (x * x);
  const double tail = z * (1.66666666666666657e-01 + z * (-3.33333333333333329e-02 +
      z * (2.38095238095238082e-02 + z * (-3.33333333333333329e-02 + z * (7.57575757575757597e-02 +
      z * (-2.53113553113553102e-01 + z * 1.16666666666666674e+00))))));
  result += (1 + 0.5 / x + tail) / x;
  return sign * result;
}

/* Hurwitz zeta(s, q) = sum_k (q + k)^-s: the first terms directly until
   q + N >= 10, then Euler-Maclaurin: w^(1-s)/(s-1) + w^-s/2 +
   sum B_2k/(2k)! s(s+1)..(s+2k-2) w^(-s-2k+1), w = q + N. As on the CPU:
   s = 1 is a pole (inf), s < 1 is NaN, q a non-positive integer gives inf and
   q < 0 needs an integer s. */
static double kiln_zeta(double s, double q) {
  if (s == 1) return __builtin_inf();
  if (s < 1) return __builtin_nan("");
  if (q <= 0) {
    if (q == __builtin_floor(q)) return __builtin_inf();
    if (s != __builtin_floor(s)) return __builtin_nan("");
  }
  double sum = 0, w = q;
  int count = 0;
  while (count < 9 || w < 10) {
    double term = __builtin_pow(w, -s);
    sum += term;
    w += 1;
    ++count;
    /* Terms fall fast for large s: stop once the whole tail is negligible. */
    if (w > 1 && __builtin_fabs(term) * (1 + w / (s - 1)) < 1e-17 * __builtin_fabs(sum)) return sum;
    /* q so negative that w never reaches 10 (or stops moving): give up. */
    if (count > 100000) return __builtin_nan("");
  }
  if (w != w) return w;
  double power = __builtin_pow(w, -s);
  sum += power * w / (s - 1) + 0.5 * power;
  double rising = s, factor = power / w;
  for (int k = 0; k < 12; ++k) {
    double term = kiln_bernoulli_over_factorial[k] * rising * factor;
    sum += term;
    if (__builtin_fabs(term) < 1e-17 * __builtin_fabs(sum)) break;
    rising *= (s + 2 * k + 1) * (s + 2 * k + 2);
    factor /= w * w;
  }
  return sum;
}

/* polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for n >= 2. */
static double kiln_polygamma(double n, double x, int single) {
  if (n == 0) return kiln_digamma(x);
  if (n == 1) return kiln_trigamma(x, single);
  double sign = __builtin_fmod(n, 2.0) != 0 ? 1.0 : -1.0;
  return sign * __builtin_exp(__builtin_lgamma(n + 1)) * kiln_zeta(n + 1, x);
}

/* x^a e^-x / Gamma(a + 1). For large a directly it loses digits to
   cancellation in the exponent; there Stirling's series gives
   exp(-a phi(t) - correction(a)) / sqrt(2 pi a), t = (x - a)/a,
   phi(t) = t - log(1 + t). */
static double kiln_igamma_factor(double a, double x) {
  if (a < 20) return __builtin_exp(a * __builtin_log(x) - x - __builtin_lgamma(a + 1));
  double t = (x - a) / a, phi;
  if (__builtin_fabs(t) < 0.25) {
    double power = t * t, sum = 0;
    for (int k = 2; k < 60; ++k) {
      double term = power / k;
      sum += (k & 1) ? -term : term;
      if (__builtin_fabs(term) < 1e-17 * __builtin_fabs(sum)) break;
      power *= t;
    }
    phi = sum;
  } else {
    phi = t - __builtin_log1p(t);
  }
  double inverse = 1 / a, z = inverse * inverse;
  double correction = inverse * (1.0 / 12 + z * (-1.0 / 360 + z * (1.0 / 1260 + z * (-1.0 / 1680 +
                      z * (1.0 / 1188 + z * (-691.0 / 360360))))));
  return __builtin_exp(-a * phi - correction) / __builtin_sqrt(2 * KILN_PI * a);
}

/* The lower regularized incomplete gamma P(a, x) from its series
   x^a e^-x / Gamma(a+1) sum x^n / ((a+1)..(a+n)) for x < a + 1, the upper one
   Q(a, x) from its continued fraction (modified Lentz) otherwise. `upper`
   selects which is returned; the other is 1 minus it. */
static double kiln_incomplete_gamma(double a, double x, int upper) {
  if (x < 0 || a < 0) return __builtin_nan("");
  if (a == 0) return x > 0 ? (double)!upper : __builtin_nan("");
  if (x == 0) return (double)upper;
  if (__builtin_isinf(a)) return __builtin_isinf(x) ? __builtin_nan("") : (double)upper;
  if (__builtin_isinf(x)) return (double)!upper;
  if (x != x || a != a) return __builtin_nan("");
  double factor = kiln_igamma_factor(a, x);
  if (x < a + 1) {
    double term = 1, sum = 1;
    for (int n = 1; n < 1000000; ++n) {
      term *= x / (a + n);
      sum += term;
      if (term < 1e-17 * sum) break;
    }
    double lower = factor * sum;
    return upper ? 1 - lower : lower;
  }
  const double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 1000000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (__builtin_fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (__builtin_fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double step = d * c;
    h *= step;
    if (__builtin_fabs(step - 1) < 1e-16) break;
  }
  double upper_value = factor * a * h;
  return upper ? upper_value : 1 - upper_value;
}

static double kiln_igamma(double a, double x) { return kiln_incomplete_gamma(a, x, 0); }
static double kiln_igammac(double a, double x) { return kiln_incomplete_gamma(a, x, 1); }

/* erfcx(x) = exp(x^2) erfc(x). exp(x^2) is taken of x^2 split exactly into
   high and low parts (fma); beyond 26, where erfc underflows, the asymptotic
   series (1/(x sqrt(pi))) sum (-1)^k (2k-1)!! / (2x^2)^k. For negative x in
   `single` precision x^2 is rounded to float first, as the CPU's float kernel
   rounds it: near float's overflow (x < -9) that rounding moves the result by
   more than float tolerances. */
static double kiln_erfcx(double x, int single) {
  if (x != x) return x;
  if (x < -26.7) return __builtin_inf();
  if (x < 26) {  /* erfc(x) for x < 0 lies in (1, 2]: no cancellation */
    double high = x * x, low = __builtin_fma(x, x, -high);
    if (single && x < 0) { high = (double)(float)high; low = 0; }
    return __builtin_exp(high) * (1 + low) * __builtin_erfc(x);
  }
  double inverse = 1 / x, z = 0.5 * inverse * inverse, term = 1, sum = 1;
  for (int k = 1; k < 12; ++k) {
    term *= -(2 * k - 1) * z;
    sum += term;
  }
  return sum * inverse / 1.77245385090551602730;
}

/* Inverse of erfc on (0, 1]: t >= 0 with erfc(t) = z. A start from
   t^2 + log(t sqrt(pi)) = -log z (the leading asymptotic), then Newton on
   log(erfc(t)) = log(erfcx(t)) - t^2, which stays finite where erfc
   underflows. */
static double kiln_erfc_inverse_tail(double z) {
  double log_z = __builtin_log(z);
  double t;
  if (z > 0.3) {
    t = (1 - z) * 0.886226925452758;  /* erf(t) ~ 2t/sqrt(pi) near 0 */
  } else {
    double big = -log_z;
    t = __builtin_sqrt(big - 0.5 * __builtin_log(KILN_PI * big));
    if (t < 0.5) t = 0.5;
  }
  for (int step = 0; step < 8; ++step) {
    double scaled = kiln_erfcx(t, 0);
    double value = __builtin_log(scaled) - t * t - log_z;
    double slope = -2 / (1.77245385090551602730 * scaled);
    double next = t - value / slope;
    if (next < 0) next = 0.5 * t;
    if (__builtin_fabs(next - t) <= 1e-16 * __builtin_fabs(next)) { t = next; break; }
    t = next;
  }
  return t;
}

/* erfinv: odd; Newton on erf(x) = y near 0, the erfc form (1 - y is exact
   for y >= 1/2) in the tails. */
static double kiln_erfinv(double y) {
  if (y != y || y < -1 || y > 1) return __builtin_nan("");
  if (y == 1) return __builtin_inf();
  if (y == -1) return -__builtin_inf();
  if (y == 0) return y;
  double magnitude = __builtin_fabs(y), x;
  if (magnitude >= 0.5) {
    x = kiln_erfc_inverse_tail(1 - magnitude);
  } else {
    x = magnitude * 0.886226925452758;
    for (int step = 0; step < 12; ++step) {
      double next = x - (__builtin_erf(x) - magnitude) * 0.886226925452758 * __builtin_exp(x * x);
      if (__builtin_fabs(next - x) <= 1e-16 * next) { x = next; break; }
      x = next;
    }
  }
  return y < 0 ? -x : x;
}

/* ndtri(p) = -sqrt(2) erfc^-1(2p) for p < 1/2 and -ndtri(1 - p) above. */
static double kiln_ndtri(double p) {
  if (p != p || p < 0 || p > 1) return __builtin_nan("");
  if (p == 0) return -__builtin_inf();
  if (p == 1) return __builtin_inf();
  if (p == 0.5) return 0;
  if (p > 0.5) return 1.41421356237309504880 * kiln_erfc_inverse_tail(2 * (1 - p));
  return -1.41421356237309504880 * kiln_erfc_inverse_tail(2 * p);
}

/* log(ndtr(x)): log1p(-erfc(x/sqrt 2)/2) where ndtr is near 1, and
   log(erfcx(-x/sqrt 2)/2) - x^2/2 in the lower tail, where ndtr underflows. */
static double kiln_log_ndtr(double x) {
  double t = x * 0.70710678118654752440;
  if (x < -1) return __builtin_log(kiln_erfcx(-t, 0) / 2) - 0.5 * x * x;
  return __builtin_log1p(-__builtin_erfc(t) / 2);
}
)KILN";
}

}  // namespace kiln::codegen
