#include "kiln/ir/ops.h"

namespace kiln::ir {

const char* opcode_name(OpCode code) {
  switch (code) {
    case OpCode::kLoad: return "load";
    case OpCode::kIndexedLoad: return "indexed_load";
    case OpCode::kScalar: return "scalar";
    case OpCode::kConstant: return "constant";
    case OpCode::kCoordinate: return "coordinate";
    case OpCode::kLinearIndex: return "linear_index";
    case OpCode::kRandomBits: return "random_bits";
    case OpCode::kAccumulator: return "accumulator";
    case OpCode::kAccumulatorIndex: return "accumulator_index";
    case OpCode::kNegate: return "negate";
    case OpCode::kAbs: return "abs";
    case OpCode::kSign: return "sign";
    case OpCode::kBitwiseNot: return "bitwise_not";
    case OpCode::kExp: return "exp";
    case OpCode::kExp2: return "exp2";
    case OpCode::kExpm1: return "expm1";
    case OpCode::kLog: return "log";
    case OpCode::kLog2: return "log2";
    case OpCode::kLog10: return "log10";
    case OpCode::kLog1p: return "log1p";
    case OpCode::kSqrt: return "sqrt";
    case OpCode::kRsqrt: return "rsqrt";
    case OpCode::kReciprocal: return "reciprocal";
    case OpCode::kSin: return "sin";
    case OpCode::kCos: return "cos";
    case OpCode::kTan: return "tan";
    case OpCode::kAsin: return "asin";
    case OpCode::kAcos: return "acos";
    case OpCode::kAtan: return "atan";
    case OpCode::kSinh: return "sinh";
    case OpCode::kCosh: return "cosh";
    case OpCode::kTanh: return "tanh";
    case OpCode::kAsinh: return "asinh";
    case OpCode::kAcosh: return "acosh";
    case OpCode::kAtanh: return "atanh";
    case OpCode::kErf: return "erf";
    case OpCode::kErfc: return "erfc";
    case OpCode::kLgamma: return "lgamma";
    case OpCode::kFloor: return "floor";
    case OpCode::kCeil: return "ceil";
    case OpCode::kRound: return "round";
    case OpCode::kTrunc: return "trunc";
    case OpCode::kFrac: return "frac";
    case OpCode::kSigmoid: return "sigmoid";
    case OpCode::kDigamma: return "digamma";
    case OpCode::kErfinv: return "erfinv";
    case OpCode::kErfcx: return "erfcx";
    case OpCode::kNdtri: return "ndtri";
    case OpCode::kLogNdtr: return "log_ndtr";
    case OpCode::kBesselI0: return "bessel_i0";
    case OpCode::kBesselI0Scaled: return "bessel_i0_scaled";
    case OpCode::kBesselI1: return "bessel_i1";
    case OpCode::kBesselI1Scaled: return "bessel_i1_scaled";
    case OpCode::kBesselK0: return "bessel_k0";
    case OpCode::kBesselK0Scaled: return "bessel_k0_scaled";
    case OpCode::kBesselK1: return "bessel_k1";
    case OpCode::kBesselK1Scaled: return "bessel_k1_scaled";
    case OpCode::kBesselJ0: return "bessel_j0";
    case OpCode::kBesselJ1: return "bessel_j1";
    case OpCode::kBesselY0: return "bessel_y0";
    case OpCode::kBesselY1: return "bessel_y1";
    case OpCode::kSphericalBesselJ0: return "spherical_bessel_j0";
    case OpCode::kAiryAi: return "airy_ai";
    case OpCode::kLogicalNot: return "logical_not";
    case OpCode::kIsNan: return "is_nan";
    case OpCode::kIsInf: return "is_inf";
    case OpCode::kAdd: return "add";
    case OpCode::kSubtract: return "subtract";
    case OpCode::kMultiply: return "multiply";
    case OpCode::kDivide: return "divide";
    case OpCode::kFloorDivide: return "floor_divide";
    case OpCode::kRemainder: return "remainder";
    case OpCode::kFmod: return "fmod";
    case OpCode::kPower: return "power";
    case OpCode::kAtan2: return "atan2";
    case OpCode::kCopysign: return "copysign";
    case OpCode::kHypot: return "hypot";
    case OpCode::kMaximum: return "maximum";
    case OpCode::kMinimum: return "minimum";
    case OpCode::kBitwiseAnd: return "bitwise_and";
    case OpCode::kBitwiseOr: return "bitwise_or";
    case OpCode::kBitwiseXor: return "bitwise_xor";
    case OpCode::kShiftLeft: return "shift_left";
    case OpCode::kShiftRight: return "shift_right";
    case OpCode::kPolygamma: return "polygamma";
    case OpCode::kZeta: return "zeta";
    case OpCode::kIgamma: return "igamma";
    case OpCode::kIgammac: return "igammac";
    case OpCode::kChebyshevT: return "chebyshev_t";
    case OpCode::kChebyshevU: return "chebyshev_u";
    case OpCode::kChebyshevV: return "chebyshev_v";
    case OpCode::kChebyshevW: return "chebyshev_w";
    case OpCode::kShiftedChebyshevT: return "shifted_chebyshev_t";
    case OpCode::kShiftedChebyshevU: return "shifted_chebyshev_u";
    case OpCode::kShiftedChebyshevV: return "shifted_chebyshev_v";
    case OpCode::kShiftedChebyshevW: return "shifted_chebyshev_w";
    case OpCode::kHermiteH: return "hermite_h";
    case OpCode::kHermiteHe: return "hermite_he";
    case OpCode::kLaguerreL: return "laguerre_l";
    case OpCode::kLegendreP: return "legendre_p";
    case OpCode::kEqual: return "equal";
    case OpCode::kNotEqual: return "not_equal";
    case OpCode::kLess: return "less";
    case OpCode::kLessEqual: return "less_equal";
    case OpCode::kGreater: return "greater";
    case OpCode::kGreaterEqual: return "greater_equal";
    case OpCode::kLogicalAnd: return "logical_and";
    case OpCode::kLogicalOr: return "logical_or";
    case OpCode::kLogicalXor: return "logical_xor";
    case OpCode::kSelect: return "select";
    case OpCode::kCast: return "cast";
    case OpCode::kNextAfter: return "next_after";
    case OpCode::kFrexpMantissa: return "frexp_mantissa";
    case OpCode::kFrexpExponent: return "frexp_exponent";
  }
  return "unknown";
}

OpClass opcode_class(OpCode code) {
  // Pointwise extras sit after kCast, outside the ranges below.
  if (code == OpCode::kNextAfter) return OpClass::kBinary;
  if (code == OpCode::kFrexpMantissa || code == OpCode::kFrexpExponent) return OpClass::kUnary;
  if (code <= OpCode::kAccumulatorIndex) return OpClass::kLeaf;
  if (code <= OpCode::kAiryAi) return OpClass::kUnary;
  if (code <= OpCode::kIsInf) return OpClass::kUnaryPredicate;
  if (code <= OpCode::kLegendreP) return OpClass::kBinary;
  if (code <= OpCode::kLogicalXor) return OpClass::kComparison;
  if (code == OpCode::kSelect) return OpClass::kSelect;
  return OpClass::kCast;
}

int opcode_arity(OpCode code) {
  switch (opcode_class(code)) {
    case OpClass::kLeaf: return code == OpCode::kIndexedLoad ? 1 : 0;
    case OpClass::kUnary:
    case OpClass::kUnaryPredicate:
    case OpClass::kCast: return 1;
    case OpClass::kBinary:
    case OpClass::kComparison: return 2;
    case OpClass::kSelect: return 3;
  }
  return 0;
}

bool opcode_needs_floating(OpCode code) {
  return (code >= OpCode::kExp && code <= OpCode::kSigmoid) || code == OpCode::kAtan2 ||
         code == OpCode::kCopysign || code == OpCode::kHypot || code == OpCode::kNextAfter ||
         code == OpCode::kFrexpMantissa || code == OpCode::kFrexpExponent ||
         opcode_is_special_function(code);
}

bool opcode_needs_integral(OpCode code) {
  return code == OpCode::kBitwiseNot || code == OpCode::kBitwiseAnd ||
         code == OpCode::kBitwiseOr || code == OpCode::kBitwiseXor ||
         code == OpCode::kShiftLeft || code == OpCode::kShiftRight;
}

bool opcode_is_special_function(OpCode code) {
  return (code >= OpCode::kDigamma && code <= OpCode::kAiryAi) ||
         (code >= OpCode::kPolygamma && code <= OpCode::kLegendreP);
}

}  // namespace kiln::ir
