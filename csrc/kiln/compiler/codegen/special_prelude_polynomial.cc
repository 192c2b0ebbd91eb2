#include "kiln/compiler/codegen/special_prelude.h"

namespace kiln::codegen {

// The orthogonal polynomials of torch.special: Chebyshev T, U, V, W (and
// their shifted forms on [0, 1]), Hermite H and He, Laguerre L, Legendre P,
// each a function of (x, n). They run in the kernel's own type, as the CPU's
// do, through their three-term recurrences; for |x| < 1 and larger n the
// Chebyshev kinds use their trigonometric forms (T_n(cos t) = cos(n t), ...)
// with the CPU's thresholds. The degree n is truncated toward zero; a
// negative, NaN or infinite n gives 0 (the CPU's int64 conversion makes the
// latter two negative), and the recurrences stop once a value is NaN.
const char* c_special_prelude_polynomial() {
  return R"KILN(
/* The CPU's kernels are built with fused multiply-add contraction (the
   AVX2/AVX512 builds of ATen); over a recurrence the rounding difference
   grows past float tolerances, so these helpers contract as well, although
   kernels are otherwise built with -ffp-contract=off. */
#if defined(__GNUC__) && !defined(__clang__)
#define KILN_CONTRACT __attribute__((optimize("fp-contract=fast")))
#else
#define KILN_CONTRACT
#endif
static inline int64_t kiln_polynomial_degree(double n) {
  if (!(n > -9.2e18 && n < 9.2e18)) return -1;
  return (int64_t)n;
}

#define KILN_POLYNOMIALS(T, NAME, SUFFIX, HERMITE_LIMIT)                                  \
/* The Chebyshev recurrence p_k+1 = 2y p_k - p_k-1 from p_0 = 1 and p_1 = first. */   \
KILN_CONTRACT static T kiln_chebyshev_recurrence_##NAME(T y, int64_t n, T first) {                   \
  if (n == 0) return 1;                                                                \
  T previous = 1, current = first;                                                     \
  for (int64_t k = 2; k <= n && current == current; ++k) {                             \
    T next = (y + y) * current - previous;                                             \
    previous = current;                                                                \
    current = next;                                                                    \
  }                                                                                    \
  return current;                                                                      \
}                                                                                      \
KILN_CONTRACT static T kiln_chebyshev_t_degree_##NAME(T y, int64_t n) {                              \
  if (n < 0) return 0;                                                                 \
  if (__builtin_fabs##SUFFIX(y) == 1) return (y > 0 || n % 2 == 0) ? 1 : -1;           \
  if (n > 6 && __builtin_fabs##SUFFIX(y) < 1) return __builtin_cos##SUFFIX(n * __builtin_acos##SUFFIX(y)); \
  return kiln_chebyshev_recurrence_##NAME(y, n, y);                                    \
}                                                                                      \
KILN_CONTRACT static T kiln_chebyshev_u_degree_##NAME(T y, int64_t n, int64_t threshold) {                              \
  if (n < 0) return 0;                                                                 \
  if (__builtin_fabs##SUFFIX(y) == 1) return (y > 0 || n % 2 == 0) ? (T)(n + 1) : -(T)(n + 1); \
  if (n > threshold && __builtin_fabs##SUFFIX(y) < 1) {                                \
    T angle = __builtin_acos##SUFFIX(y);                                               \
    if (__builtin_sin##SUFFIX(angle) != 0) return __builtin_sin##SUFFIX((n + 1) * angle) / __builtin_sin##SUFFIX(angle); \
    return (n + 1) * __builtin_cos##SUFFIX((n + 1) * angle) / y;                       \
  }                                                                                    \
  return kiln_chebyshev_recurrence_##NAME(y, n, y + y);                                \
}                                                                                      \
KILN_CONTRACT static T kiln_chebyshev_v_degree_##NAME(T y, int64_t n, int64_t threshold) {           \
  if (n < 0) return 0;                                                                 \
  T odd_value = (n % 2 == 0) ? (T)(n + n + 1) : -(T)(n + n + 1);                       \
  if (__builtin_fabs##SUFFIX(y) == 1) return y > 0 ? 1 : odd_value;                    \
  if (n > threshold && __builtin_fabs##SUFFIX(y) < 1) {                                \
    T angle = __builtin_acos##SUFFIX(y);                                               \
    if (__builtin_sin##SUFFIX(angle / 2) != 1)                                         \
      return __builtin_cos##SUFFIX((n + (T)0.5) * angle) / __builtin_cos##SUFFIX(angle / 2); \
    return odd_value;                                                                  \
  }                                                                                    \
  return kiln_chebyshev_recurrence_##NAME(y, n, y + y - 1);                            \
}                                                                                      \
KILN_CONTRACT static T kiln_chebyshev_w_degree_##NAME(T y, int64_t n, int64_t threshold) {           \
  if (n < 0) return 0;                                                                 \
  T sign_value = (n % 2 == 0) ? 1 : -1;                                                \
  if (__builtin_fabs##SUFFIX(y) == 1) return y > 0 ? (T)(n + n + 1) : sign_value;      \
  if (n > threshold && __builtin_fabs##SUFFIX(y) < 1) {                                \
    T angle = __builtin_acos##SUFFIX(y);                                               \
    if (__builtin_cos##SUFFIX(angle / 2) != 1)                                         \
      return __builtin_sin##SUFFIX((n + (T)0.5) * angle) / __builtin_sin##SUFFIX(angle / 2); \
    return y > 0 ? (T)(n + n + 1) : sign_value;                                        \
  }                                                                                    \
  return kiln_chebyshev_recurrence_##NAME(y, n, y + y + 1);                            \
}                                                                                      \
KILN_CONTRACT static T kiln_chebyshev_t_##NAME(T x, T n) { return kiln_chebyshev_t_degree_##NAME(x, kiln_polynomial_degree(n)); } \
KILN_CONTRACT static T kiln_chebyshev_u_##NAME(T x, T n) { return kiln_chebyshev_u_degree_##NAME(x, kiln_polynomial_degree(n), 8); } \
KILN_CONTRACT static T kiln_chebyshev_v_##NAME(T x, T n) { return kiln_chebyshev_v_degree_##NAME(x, kiln_polynomial_degree(n), 8); } \
KILN_CONTRACT static T kiln_chebyshev_w_##NAME(T x, T n) { return kiln_chebyshev_w_degree_##NAME(x, kiln_polynomial_degree(n), 8); } \
/* Shifted kinds: the same at y = 2x - 1 (x = 1 and x = 0 are y = +-1). */             \
KILN_CONTRACT static T kiln_shifted_chebyshev_t_##NAME(T x, T n) { return kiln_chebyshev_t_degree_##NAME(x + x - 1, kiln_polynomial_degree(n)); } \
KILN_CONTRACT static T kiln_shifted_chebyshev_u_##NAME(T x, T n) { return kiln_chebyshev_u_degree_##NAME(x + x - 1, kiln_polynomial_degree(n), 6); } \
KILN_CONTRACT static T kiln_shifted_chebyshev_v_##NAME(T x, T n) { return kiln_chebyshev_v_degree_##NAME(x + x - 1, kiln_polynomial_degree(n), 6); } \
KILN_CONTRACT static T kiln_shifted_chebyshev_w_##NAME(T x, T n) { return kiln_chebyshev_w_degree_##NAME(x + x - 1, kiln_polynomial_degree(n), 4); } \
/* Physicists' Hermite: H_k+1 = 2x H_k - 2k H_k-1; NaN past the CPU's limit. */        \
KILN_CONTRACT static T kiln_hermite_h_##NAME(T x, T n_value) {                                       \
  int64_t n = kiln_polynomial_degree(n_value);                                         \
  if (n < 0) return 0;                                                                 \
  if (n == 0) return 1;                                                                \
  if (n == 1) return x + x;                                                            \
  if (n > HERMITE_LIMIT) return __builtin_nan("");                                     \
  T previous = 1, current = x + x;                                                     \
  for (int64_t k = 2; k < n + n; k += 2) {                                             \
    T next = (x + x) * current - k * previous;                                         \
    previous = current;                                                                \
    current = next;                                                                    \
  }                                                                                    \
  return current;                                                                      \
}                                                                                      \
/* Probabilists' Hermite: He_k+1 = x He_k - k He_k-1. */                               \
KILN_CONTRACT static T kiln_hermite_he_##NAME(T x, T n_value) {                                      \
  int64_t n = kiln_polynomial_degree(n_value);                                         \
  if (n < 0) return 0;                                                                 \
  if (n == 0) return 1;                                                                \
  if (n == 1) return x;                                                                \
  if (n > HERMITE_LIMIT) return __builtin_nan("");                                     \
  T previous = 1, current = x;                                                         \
  for (int64_t k = 1; k < n; ++k) {                                                    \
    T next = x * current - k * previous;                                               \
    previous = current;                                                                \
    current = next;                                                                    \
  }                                                                                    \
  return current;                                                                      \
}                                                                                      \
/* Laguerre: (k+1) L_k+1 = (2k + 1 - x) L_k - k L_k-1; L_n(0) = 1. */                  \
KILN_CONTRACT static T kiln_laguerre_l_##NAME(T x, T n_value) {                                      \
  int64_t n = kiln_polynomial_degree(n_value);                                         \
  if (n < 0) return 0;                                                                 \
  if (__builtin_fabs##SUFFIX(x) == 0 || n == 0) return 1;                              \
  T previous = 1, current = 1 - x;                                                     \
  for (int64_t k = 1; k < n && current == current; ++k) {                              \
    T next = (((k + k) + (1 - x)) * current - k * previous) / (k + 1);                 \
    previous = current;                                                                \
    current = next;                                                                    \
  }                                                                                    \
  return current;                                                                      \
}                                                                                      \
/* Legendre: (k+1) P_k+1 = (2k+1) x P_k - k P_k-1; P_n(+-1) = (+-1)^n. */               \
KILN_CONTRACT static T kiln_legendre_p_##NAME(T x, T n_value) {                                      \
  int64_t n = kiln_polynomial_degree(n_value);                                         \
  if (n < 0) return 0;                                                                 \
  if (__builtin_fabs##SUFFIX(x) == 1) return (x > 0 || n % 2 == 0) ? 1 : -1;           \
  if (n == 0) return 1;                                                                \
  T previous = 1, current = x;                                                         \
  for (int64_t k = 1; k < n && current == current; ++k) {                              \
    T next = ((k + k + 1) * x * current - k * previous) / (k + 1);                     \
    previous = current;                                                                \
    current = next;                                                                    \
  }                                                                                    \
  return current;                                                                      \
}
KILN_POLYNOMIALS(float, f32, f, 128)
KILN_POLYNOMIALS(double, f64, , 512)
#undef KILN_POLYNOMIALS
)KILN";
}

}  // namespace kiln::codegen
