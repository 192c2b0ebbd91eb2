// OpCode: the operations of Kiln's pointwise expression language.
//
// Part of the IR layer (below the torch line): the Node of kernel.h carries an
// OpCode; builder.h makes nodes, verifier.h checks them, codegen/ turns each
// into C.
//
// An expression is a list of Nodes in SSA form: each node names its operands
// by their index in the list, so a node always comes after its operands. Every
// node has a compute dtype (never float16 or bfloat16: see dtype.h).
//
// Typing rules, checked by the verifier:
//   arithmetic, math, min/max, bitwise: operands and result share one dtype
//   comparisons, logical ops, is_nan/is_inf: any shared operand dtype, bool result
//   select(cond, a, b): bool cond, a and b share the result dtype
//   cast: any dtype to any dtype (a cast "to" float16/bfloat16 rounds to that
//         precision and yields float32)
//
// The queries below are pure functions; safe from any thread; they report no
// errors. opcode_class() works by ranges of the enum, and opcode_from_name()
// (graph.h) walks the codes up to the last one: a new opcode goes into its
// range, and one added at the end updates both (ops.cc, graph.cc).
#pragma once

#include <cstdint>

namespace kiln::ir {

enum class OpCode : uint8_t {
  // Leaves.
  kLoad,              // input tensor `integer` at the current element
  kIndexedLoad,       // input tensor `integer` at the current element plus args[0]
                      // elements (an int64 offset: gather, index_select, embedding)
  kScalar,            // launch-time scalar argument `integer`
  kConstant,          // `real` (floating and bool) or `integer` (integer dtypes)
  kCoordinate,        // int64 coordinate of the current element along iteration dim `integer`
  kLinearIndex,       // int64 position of the current element in the iteration space
  kRandomBits,        // uint32 from Philox(seed, offset + linear index), word `integer` (0..3), as int64
  kAccumulator,       // in a reduction epilogue: the reduced value
  kAccumulatorIndex,  // in an argmax/argmin epilogue: the index of the reduced value

  // Unary, same dtype in and out (floating only from kExp on).
  kNegate, kAbs, kSign, kBitwiseNot,
  kExp, kExp2, kExpm1, kLog, kLog2, kLog10, kLog1p, kSqrt, kRsqrt, kReciprocal,
  kSin, kCos, kTan, kAsin, kAcos, kAtan, kSinh, kCosh, kTanh, kAsinh, kAcosh, kAtanh,
  kErf, kErfc, kLgamma, kFloor, kCeil, kRound, kTrunc, kFrac, kSigmoid,
  // Special functions (floating only; C helpers in codegen/special_prelude.cc).
  kDigamma, kErfinv, kErfcx, kNdtri, kLogNdtr,
  kBesselI0, kBesselI0Scaled, kBesselI1, kBesselI1Scaled,
  kBesselK0, kBesselK0Scaled, kBesselK1, kBesselK1Scaled,
  kBesselJ0, kBesselJ1, kBesselY0, kBesselY1, kSphericalBesselJ0, kAiryAi,
  // Unary with a bool result.
  kLogicalNot, kIsNan, kIsInf,

  // Binary, same dtype in and out.
  kAdd, kSubtract, kMultiply, kDivide,  // kDivide on integers truncates toward zero
  kFloorDivide, kRemainder, kFmod, kPower, kAtan2, kCopysign, kHypot,
  kMaximum, kMinimum,  // NaN-propagating, as torch.maximum/minimum
  kBitwiseAnd, kBitwiseOr, kBitwiseXor, kShiftLeft, kShiftRight,
  // Special functions (floating only). kPolygamma(n, x) takes the order first;
  // the polynomials take (x, n) with n truncated to an integer as the CPU does.
  kPolygamma, kZeta, kIgamma, kIgammac,
  kChebyshevT, kChebyshevU, kChebyshevV, kChebyshevW,
  kShiftedChebyshevT, kShiftedChebyshevU, kShiftedChebyshevV, kShiftedChebyshevW,
  kHermiteH, kHermiteHe, kLaguerreL, kLegendreP,
  // Binary with a bool result.
  kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual,
  kLogicalAnd, kLogicalOr, kLogicalXor,

  // Others.
  kSelect,  // args[0] ? args[1] : args[2]
  kCast,    // args[0] converted to the node's dtype; `integer` holds the rounding
            // target dtype for casts to float16/bfloat16

  // Pointwise extras: the functions no composition of the ops above computes
  // exactly. Floating only; same dtype in and out.
  kNextAfter,       // binary: the next representable value after args[0] toward args[1]
  kFrexpMantissa,   // unary: frexp's mantissa, in [0.5, 1) in magnitude (x for 0, inf, NaN)
  kFrexpExponent,   // unary: frexp's exponent, as a value of the node's dtype (0 for 0, inf, NaN)
};

enum class OpClass : uint8_t {
  kLeaf,
  kUnary,
  kUnaryPredicate,  // bool result
  kBinary,
  kComparison,      // bool result
  kSelect,
  kCast,
};

// The name printed in IR text ("add", "exp"); a static string, "unknown"
// for a code outside the enum.
const char* opcode_name(OpCode code);
OpClass opcode_class(OpCode code);
// Operands in args[]: 0 for leaves but kIndexedLoad (1), 1, 2 or 3.
int opcode_arity(OpCode code);
// True for ops defined on floating dtypes only (exp, log, sin, ...).
bool opcode_needs_floating(OpCode code);
// True for ops defined on integer and bool dtypes only (bitwise ops, shifts).
bool opcode_needs_integral(OpCode code);
// True for the special functions (digamma, Bessel functions, polynomials, ...),
// whose C helpers a kernel includes only when it uses one.
bool opcode_is_special_function(OpCode code);

}  // namespace kiln::ir
