#include "kiln/compiler/codegen/prelude.h"

namespace kiln::codegen {

// Notes on the helpers:
// - float16 uses the compiler's _Float16, whose conversions round to nearest
//   even like c10::Half's; bfloat16 rounds to nearest even with NaN kept quiet,
//   as c10::BFloat16 does.
// - Integer division and remainder by zero return 0 instead of trapping (the
//   CPU raises ZeroDivisionError; a device cannot raise mid-kernel, and CUDA
//   returns an unspecified value). INT_MIN / -1 wraps instead of trapping.
// - Shifts by a negative amount or by at least the bit width follow ATen's CPU
//   kernels: 0 for left shifts, the sign fill for right shifts.
const char* c_prelude() {
  return R"KILN(#include <stdint.h>
typedef union { double real; int64_t integer; } kiln_scalar;
typedef struct {
  char* data[16];
  int64_t sizes[8];
  int64_t strides[16][8];
  kiln_scalar scalars[8];
  uint64_t seed;
  uint64_t offset;
} kiln_launch_args;
_Static_assert(sizeof(kiln_launch_args) == 8 * (16 + 8 + 128 + 8 + 2), "launch ABI");
#define KILN_EXPORT __attribute__((visibility("default")))
/* An integer converted to floating point goes through KILN_OPAQUE_INT: with
   -fno-trapping-math GCC folds (float)(int)x into truncf(x) once both
   conversions meet in one function (a fused kernel), which gives -0.0 for
   x in (-1, 0) and no wrap out of range, where a store and a load between
   them give +0.0. The barrier keeps the two conversions and vectorises. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_assoc_barrier)
#define KILN_OPAQUE_INT(x) __builtin_assoc_barrier(x)
#endif
#endif
#ifndef KILN_OPAQUE_INT
#define KILN_OPAQUE_INT(x) (x)
#endif
/* With libmvec (the toolchain defines KILN_VECTOR_MATH when it links), libm's
   functions are declared `simd`, as glibc's math.h declares them under
   -ffast-math, so a loop calling __builtin_sinf & co. calls the vector
   versions (within 4 ulp) and vectorises; special values take libm's scalar
   path inside them. */
#ifdef KILN_VECTOR_MATH
#define KILN_SIMD __attribute__((simd("notinbranch"), const, nothrow))
#define KILN_SIMD_UNARY(name) float name##f(float) KILN_SIMD; double name(double) KILN_SIMD;
#define KILN_SIMD_BINARY(name) float name##f(float, float) KILN_SIMD; double name(double, double) KILN_SIMD;
KILN_SIMD_UNARY(sin) KILN_SIMD_UNARY(cos) KILN_SIMD_UNARY(tan) KILN_SIMD_UNARY(asin)
KILN_SIMD_UNARY(acos) KILN_SIMD_UNARY(atan) KILN_SIMD_UNARY(sinh) KILN_SIMD_UNARY(cosh)
KILN_SIMD_UNARY(tanh) KILN_SIMD_UNARY(asinh) KILN_SIMD_UNARY(acosh) KILN_SIMD_UNARY(atanh)
KILN_SIMD_UNARY(log) KILN_SIMD_UNARY(log2) KILN_SIMD_UNARY(log10) KILN_SIMD_UNARY(log1p)
KILN_SIMD_UNARY(exp) KILN_SIMD_UNARY(exp2) KILN_SIMD_UNARY(expm1) KILN_SIMD_UNARY(erf)
KILN_SIMD_UNARY(erfc)
KILN_SIMD_BINARY(atan2) KILN_SIMD_BINARY(pow) KILN_SIMD_BINARY(hypot)
#endif
/* Routed vector math (vector_math.h): generated code calls kiln_vm_<function>,
   which each kernel defines through one reference variant of libmvec, the
   widest this target has, so an element gets the same bits in a vector loop,
   its tail, or a scalar loop. The special functions' helpers still call libm
   as declared above. */
#if defined(KILN_VECTOR_MATH) && defined(__x86_64__)
#define KILN_VM_ROUTED 1
#define KILN_VM_DECLARE __attribute__((simd("notinbranch"), const, nothrow, visibility("hidden")))
typedef float kiln_vm_f4 __attribute__((vector_size(16)));
typedef float kiln_vm_f8 __attribute__((vector_size(32)));
typedef float kiln_vm_f16 __attribute__((vector_size(64)));
typedef double kiln_vm_d2 __attribute__((vector_size(16)));
typedef double kiln_vm_d4 __attribute__((vector_size(32)));
typedef double kiln_vm_d8 __attribute__((vector_size(64)));
#if defined(__AVX512F__)
#define KILN_VM_FLOAT_LANES 16
#define KILN_VM_DOUBLE_LANES 8
typedef kiln_vm_f16 kiln_vm_floats;
typedef kiln_vm_d8 kiln_vm_doubles;
#define KILN_VM_REFERENCE_F1(name) _ZGVeN16v_##name
#define KILN_VM_REFERENCE_F2(name) _ZGVeN16vv_##name
#define KILN_VM_REFERENCE_D1(name) _ZGVeN8v_##name
#define KILN_VM_REFERENCE_D2(name) _ZGVeN8vv_##name
#elif defined(__AVX2__)
#define KILN_VM_FLOAT_LANES 8
#define KILN_VM_DOUBLE_LANES 4
typedef kiln_vm_f8 kiln_vm_floats;
typedef kiln_vm_d4 kiln_vm_doubles;
#define KILN_VM_REFERENCE_F1(name) _ZGVdN8v_##name
#define KILN_VM_REFERENCE_F2(name) _ZGVdN8vv_##name
#define KILN_VM_REFERENCE_D1(name) _ZGVdN4v_##name
#define KILN_VM_REFERENCE_D2(name) _ZGVdN4vv_##name
#else
#define KILN_VM_FLOAT_LANES 4
#define KILN_VM_DOUBLE_LANES 2
typedef kiln_vm_f4 kiln_vm_floats;
typedef kiln_vm_d2 kiln_vm_doubles;
#define KILN_VM_REFERENCE_F1(name) _ZGVbN4v_##name
#define KILN_VM_REFERENCE_F2(name) _ZGVbN4vv_##name
#define KILN_VM_REFERENCE_D1(name) _ZGVbN2v_##name
#define KILN_VM_REFERENCE_D2(name) _ZGVbN2vv_##name
#endif
#endif
/* GCC 12.2 miscompiles the lane loops of row reductions that widen 8-bit
   values to 64 bits inside the per-output loop (partial redundancy elimination
   after loop vectorisation); reductions turn that pass off. */
#if defined(__GNUC__) && !defined(__clang__)
#define KILN_REDUCTION __attribute__((optimize("no-tree-pre")))
#else
#define KILN_REDUCTION
#endif

/* Explicit 32-byte vectors (GCC and Clang vector extensions) for the folds
   of row reductions: NaN-propagating max and min, which the C compiler will
   not vectorise from scalar code, and floating sums and products, whose lanes
   it folds one scalar at a time. A max or min lane takes v when v beats it or
   is NaN; a NaN lane then stays NaN, as nothing beats it. */
typedef float kiln_f32x8 __attribute__((vector_size(32)));
typedef int32_t kiln_i32x8 __attribute__((vector_size(32)));
typedef double kiln_f64x4 __attribute__((vector_size(32)));
typedef int64_t kiln_i64x4 __attribute__((vector_size(32)));
#define KILN_VECTOR_FOLD(name, vector, mask, compare)                        \
  static inline vector name(vector a, vector v) {                            \
    mask take = (v compare a) | (v != v);                                    \
    return (vector)(((mask)v & take) | ((mask)a & ~take));                   \
  }
KILN_VECTOR_FOLD(kiln_vmax_f32x8, kiln_f32x8, kiln_i32x8, >)
KILN_VECTOR_FOLD(kiln_vmin_f32x8, kiln_f32x8, kiln_i32x8, <)
KILN_VECTOR_FOLD(kiln_vmax_f64x4, kiln_f64x4, kiln_i64x4, >)
KILN_VECTOR_FOLD(kiln_vmin_f64x4, kiln_f64x4, kiln_i64x4, <)

/* A vector folded into its lane 0 by halves (lanes i and i + 4, then i + 2,
   then i + 1), as vector operations: the scalar selects of a lane-by-lane
   fold compile to branches that mispredict on data, which cost more than the
   whole fold over a short row. */
#if defined(__clang__) || __GNUC__ >= 12
#define KILN_SHUFFLE(v, ...) __builtin_shufflevector(v, v, __VA_ARGS__)
#else
#define KILN_SHUFFLE(v, ...) __builtin_shuffle(v, (__typeof__(v - v)){__VA_ARGS__})
#endif
#define KILN_HORIZONTAL_FOLD8(name, scalar, vector, fold)                   \
  static inline scalar name(vector v) {                                      \
    v = fold(v, KILN_SHUFFLE(v, 4, 5, 6, 7, 0, 1, 2, 3));                    \
    v = fold(v, KILN_SHUFFLE(v, 2, 3, 0, 1, 6, 7, 4, 5));                    \
    v = fold(v, KILN_SHUFFLE(v, 1, 0, 3, 2, 5, 4, 7, 6));                    \
    return v[0];                                                             \
  }
#define KILN_HORIZONTAL_FOLD4(name, scalar, vector, fold)                   \
  static inline scalar name(vector v) {                                      \
    v = fold(v, KILN_SHUFFLE(v, 2, 3, 0, 1));                                \
    v = fold(v, KILN_SHUFFLE(v, 1, 0, 3, 2));                                \
    return v[0];                                                             \
  }
#define KILN_VECTOR_ARITHMETIC(name, vector, operator)                      \
  static inline vector name(vector a, vector v) { return a operator v; }
KILN_VECTOR_ARITHMETIC(kiln_vadd_f32x8, kiln_f32x8, +)
KILN_VECTOR_ARITHMETIC(kiln_vmul_f32x8, kiln_f32x8, *)
KILN_VECTOR_ARITHMETIC(kiln_vadd_f64x4, kiln_f64x4, +)
KILN_VECTOR_ARITHMETIC(kiln_vmul_f64x4, kiln_f64x4, *)
KILN_HORIZONTAL_FOLD8(kiln_hadd_f32x8, float, kiln_f32x8, kiln_vadd_f32x8)
KILN_HORIZONTAL_FOLD8(kiln_hmul_f32x8, float, kiln_f32x8, kiln_vmul_f32x8)
KILN_HORIZONTAL_FOLD4(kiln_hadd_f64x4, double, kiln_f64x4, kiln_vadd_f64x4)
KILN_HORIZONTAL_FOLD4(kiln_hmul_f64x4, double, kiln_f64x4, kiln_vmul_f64x4)
KILN_HORIZONTAL_FOLD8(kiln_hmax_f32x8, float, kiln_f32x8, kiln_vmax_f32x8)
KILN_HORIZONTAL_FOLD8(kiln_hmin_f32x8, float, kiln_f32x8, kiln_vmin_f32x8)
KILN_HORIZONTAL_FOLD4(kiln_hmax_f64x4, double, kiln_f64x4, kiln_vmax_f64x4)
KILN_HORIZONTAL_FOLD4(kiln_hmin_f64x4, double, kiln_f64x4, kiln_vmin_f64x4)

static inline float kiln_load_f16(uint16_t bits) {
  _Float16 value; __builtin_memcpy(&value, &bits, 2); return (float)value;
}
static inline uint16_t kiln_store_f16(float value) {
  _Float16 half = (_Float16)value; uint16_t bits; __builtin_memcpy(&bits, &half, 2); return bits;
}
static inline float kiln_load_bf16(uint16_t bits) {
  uint32_t word = (uint32_t)bits << 16; float value; __builtin_memcpy(&value, &word, 4); return value;
}
static inline uint16_t kiln_store_bf16(float value) {
  uint32_t word; __builtin_memcpy(&word, &value, 4);
  if (value != value) return 0x7fc0;
  word += 0x7fffu + ((word >> 16) & 1u);
  return (uint16_t)(word >> 16);
}
static inline float kiln_round_f16(float value) { return kiln_load_f16(kiln_store_f16(value)); }
static inline float kiln_round_bf16(float value) { return kiln_load_bf16(kiln_store_bf16(value)); }

#define KILN_INTEGER_HELPERS(T, U, BITS, NAME)                                        \
  static inline T kiln_div_##NAME(T a, T b) {                                         \
    if (b == 0) return 0;                                                             \
    if (b == -1) return (T)(0 - (U)a);                                                \
    return (T)(a / b);                                                                \
  }                                                                                   \
  static inline T kiln_floordiv_##NAME(T a, T b) {                                    \
    if (b == 0) return 0;                                                             \
    if (b == -1) return (T)(0 - (U)a);                                                \
    T quotient = (T)(a / b);                                                          \
    if ((a % b != 0) && ((a < 0) != (b < 0))) quotient = (T)(quotient - 1);           \
    return quotient;                                                                  \
  }                                                                                   \
  static inline T kiln_remainder_##NAME(T a, T b) {                                   \
    if (b == 0 || b == -1) return 0;                                                  \
    T rest = (T)(a % b);                                                              \
    if (rest != 0 && ((rest < 0) != (b < 0))) rest = (T)(rest + b);                   \
    return rest;                                                                      \
  }                                                                                   \
  static inline T kiln_fmod_##NAME(T a, T b) {                                        \
    if (b == 0 || b == -1) return 0;                                                  \
    return (T)(a % b);                                                                \
  }                                                                                   \
  static inline T kiln_shl_##NAME(T a, T b) {                                         \
    if (b < 0 || b >= BITS) return 0;                                                 \
    return (T)((U)a << b);                                                            \
  }                                                                                   \
  static inline T kiln_shr_##NAME(T a, T b) {                                         \
    if (b < 0 || b >= BITS) return (T)(a < 0 ? -1 : 0);                               \
    return (T)(a >> b);                                                               \
  }                                                                                   \
  static inline T kiln_pow_##NAME(T base, T exponent) {                               \
    if (exponent < 0) {                                                               \
      if (base == 1) return 1;                                                        \
      if (base == -1) return (exponent & 1) ? -1 : 1;                                 \
      return 0;                                                                       \
    }                                                                                 \
    U result = 1, factor = (U)base;                                                   \
    while (exponent) {                                                                \
      if (exponent & 1) result *= factor;                                             \
      factor *= factor;                                                               \
      exponent = (T)(exponent >> 1);                                                  \
    }                                                                                 \
    return (T)result;                                                                 \
  }
KILN_INTEGER_HELPERS(uint8_t, uint8_t, 8, u8)
KILN_INTEGER_HELPERS(int8_t, uint8_t, 8, i8)
KILN_INTEGER_HELPERS(int16_t, uint16_t, 16, i16)
KILN_INTEGER_HELPERS(int32_t, uint32_t, 32, i32)
KILN_INTEGER_HELPERS(int64_t, uint64_t, 64, i64)

/* Floating maximum and minimum propagate NaN (either operand NaN gives a
   NaN) and give the second operand on ties. `!(a <= b)` takes a when it is
   larger or NaN; then a NaN b wins. As two statements in a function GCC 12
   makes them four vector instructions, two for a constant b. Spelled as one
   nested select, the same tests became eight; and where b came from another
   select (a ReLU), partial redundancy elimination turned `b != b` into a
   select of booleans, and the loop no longer vectorised. */
#define KILN_FLOAT_HELPERS(T, SUFFIX, NAME)                                           \
  static inline T kiln_floordiv_##NAME(T a, T b) {                                    \
    if (b == 0) return a / b;                                                         \
    T mod = __builtin_fmod##SUFFIX(a, b);                                             \
    T quotient = (a - mod) / b;                                                       \
    if (mod != 0 && ((b < 0) != (mod < 0))) quotient -= 1;                            \
    if (quotient == 0) return __builtin_copysign##SUFFIX(0, a / b);                   \
    T floored = __builtin_floor##SUFFIX(quotient);                                    \
    if (quotient - floored > (T)0.5) floored += 1;                                    \
    return floored;                                                                   \
  }                                                                                   \
  static inline T kiln_remainder_##NAME(T a, T b) {                                   \
    T mod = __builtin_fmod##SUFFIX(a, b);                                             \
    if (mod != 0 && ((b < 0) != (mod < 0))) mod += b;                                 \
    return mod;                                                                       \
  }                                                                                   \
  static inline T kiln_maximum_##NAME(T a, T b) {                                     \
    T larger = !(a <= b) ? a : b;                                                     \
    return __builtin_isunordered(b, b) ? b : larger;                                  \
  }                                                                                   \
  static inline T kiln_minimum_##NAME(T a, T b) {                                     \
    T smaller = !(a >= b) ? a : b;                                                    \
    return __builtin_isunordered(b, b) ? b : smaller;                                 \
  }                                                                                   \

KILN_FLOAT_HELPERS(float, f, f32)
KILN_FLOAT_HELPERS(double, , f64)

/* exp for float32 that the compiler can vectorise (libm's expf is a call per
   element): Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, Cephes' degree-6
   polynomial, and 2^n applied in two steps so results in the subnormal range
   are exact to the rounding of the last multiply. Within 1 ulp of expf over
   every 61st float. Inputs above 88.72 overflow to infinity in the last
   multiply (n = 128 at the clamp). Inputs whose result is 0 (a masked -inf)
   are computed as 0 and the result replaced: computed at the clamp, their
   subnormal intermediates took a microcode assist per element (a causal
   softmax's exp ran 1.8x slower). -ffp-contract=off keeps the kernels'
   arithmetic as the CPU reference rounds it; this polynomial is Kiln's own,
   so it fuses its multiply-adds where the CPU has FMA. */
#if defined(__FMA__)
#define KILN_FMA_F32(a, b, c) __builtin_fmaf(a, b, c)
#else
#define KILN_FMA_F32(a, b, c) ((a) * (b) + (c))
#endif
static inline float kiln_exp_f32(float x) {
  float clamped = x < -103.972084045410f ? 0.0f : (x > 89.0f ? 89.0f : x);
  /* Round to nearest by the 1.5 * 2^23 trick: nearbyintf does not vectorise. */
  float n = KILN_FMA_F32(clamped, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
  float r = KILN_FMA_F32(n, -0.693359375f, clamped);
  r = KILN_FMA_F32(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = KILN_FMA_F32(p, r, 1.3981999507e-3f);
  p = KILN_FMA_F32(p, r, 8.3334519073e-3f);
  p = KILN_FMA_F32(p, r, 4.1665795894e-2f);
  p = KILN_FMA_F32(p, r, 1.6666665459e-1f);
  p = KILN_FMA_F32(p, r, 5.0000001201e-1f);
  p = KILN_FMA_F32(p, r * r, r) + 1.0f;
  int32_t whole = (int32_t)n;
  int32_t half = whole >> 1;
  uint32_t first = (uint32_t)(half + 127) << 23, second = (uint32_t)(whole - half + 127) << 23;
  float scale_first, scale_second;
  __builtin_memcpy(&scale_first, &first, 4);
  __builtin_memcpy(&scale_second, &second, 4);
  float result = p * scale_first * scale_second;
  result = x < -103.972084045410f ? 0.0f : result;
  return x != x ? x : result;
}
static inline float kiln_sigmoid_f32(float x) { return 1.0f / (1.0f + kiln_exp_f32(-x)); }

static inline uint32_t kiln_mulhilo(uint32_t a, uint32_t b, uint32_t* high) {
  uint64_t product = (uint64_t)a * b; *high = (uint32_t)(product >> 32); return (uint32_t)product;
}
/* Philox4x32-10: key = seed, counter = (element index, stream offset). */
static inline uint32_t kiln_philox(uint64_t seed, uint64_t offset, uint64_t index, int word) {
  uint32_t c0 = (uint32_t)index, c1 = (uint32_t)(index >> 32);
  uint32_t c2 = (uint32_t)offset, c3 = (uint32_t)(offset >> 32);
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t high0, high1;
    uint32_t low0 = kiln_mulhilo(0xD2511F53u, c0, &high0);
    uint32_t low1 = kiln_mulhilo(0xCD9E8D57u, c2, &high1);
    uint32_t n0 = high1 ^ c1 ^ k0, n1 = low1, n2 = high0 ^ c3 ^ k1, n3 = low0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return word == 0 ? c0 : word == 1 ? c1 : word == 2 ? c2 : c3;
}
/* Pointwise extras: frexp as two expressions (the exponent as a value of the
   argument's type); libm's frexp gives 0 for zero, infinity and NaN. */
static inline float kiln_frexp_mantissa_f32(float x) { int e; return __builtin_frexpf(x, &e); }
static inline float kiln_frexp_exponent_f32(float x) { int e; __builtin_frexpf(x, &e); return (float)e; }
static inline double kiln_frexp_mantissa_f64(double x) { int e; return __builtin_frexp(x, &e); }
static inline double kiln_frexp_exponent_f64(double x) { int e; __builtin_frexp(x, &e); return (double)e; }
)KILN";
}

}  // namespace kiln::codegen
