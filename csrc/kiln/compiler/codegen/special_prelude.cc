#include "kiln/compiler/codegen/special_prelude.h"

namespace kiln::codegen {

SpecialFunctionCall special_function_call(ir::OpCode code) {
  using ir::OpCode;
  constexpr SpecialPart kGamma = SpecialPart::kGamma;
  constexpr SpecialPart kBessel = SpecialPart::kBessel;
  constexpr SpecialPart kPolynomial = SpecialPart::kPolynomial;
  switch (code) {
    case OpCode::kDigamma: return {"kiln_digamma", kGamma, false, false};
    case OpCode::kErfinv: return {"kiln_erfinv", kGamma, false, false};
    case OpCode::kErfcx: return {"kiln_erfcx", kGamma, false, true};
    case OpCode::kNdtri: return {"kiln_ndtri", kGamma, false, false};
    case OpCode::kLogNdtr: return {"kiln_log_ndtr", kGamma, false, false};
    case OpCode::kPolygamma: return {"kiln_polygamma", kGamma, false, true};
    case OpCode::kZeta: return {"kiln_zeta", kGamma, false, false};
    case OpCode::kIgamma: return {"kiln_igamma", kGamma, false, false};
    case OpCode::kIgammac: return {"kiln_igammac", kGamma, false, false};
    case OpCode::kBesselI0: return {"kiln_bessel_i0", kBessel, false, true};
    case OpCode::kBesselI0Scaled: return {"kiln_bessel_i0_scaled", kBessel, false, false};
    case OpCode::kBesselI1: return {"kiln_bessel_i1", kBessel, false, true};
    case OpCode::kBesselI1Scaled: return {"kiln_bessel_i1_scaled", kBessel, false, false};
    case OpCode::kBesselK0: return {"kiln_bessel_k0", kBessel, false, false};
    case OpCode::kBesselK0Scaled: return {"kiln_bessel_k0_scaled", kBessel, false, false};
    case OpCode::kBesselK1: return {"kiln_bessel_k1", kBessel, false, false};
    case OpCode::kBesselK1Scaled: return {"kiln_bessel_k1_scaled", kBessel, false, false};
    case OpCode::kBesselJ0: return {"kiln_bessel_j0", kBessel, false, false};
    case OpCode::kBesselJ1: return {"kiln_bessel_j1", kBessel, false, false};
    case OpCode::kBesselY0: return {"kiln_bessel_y0", kBessel, false, false};
    case OpCode::kBesselY1: return {"kiln_bessel_y1", kBessel, false, false};
    case OpCode::kSphericalBesselJ0: return {"kiln_spherical_bessel_j0", kBessel, false, false};
    case OpCode::kAiryAi: return {"kiln_airy_ai", kBessel, false, false};
    case OpCode::kChebyshevT: return {"kiln_chebyshev_t", kPolynomial, true, false};
    case OpCode::kChebyshevU: return {"kiln_chebyshev_u", kPolynomial, true, false};
    case OpCode::kChebyshevV: return {"kiln_chebyshev_v", kPolynomial, true, false};
    case OpCode::kChebyshevW: return {"kiln_chebyshev_w", kPolynomial, true, false};
    case OpCode::kShiftedChebyshevT: return {"kiln_shifted_chebyshev_t", kPolynomial, true, false};
    case OpCode::kShiftedChebyshevU: return {"kiln_shifted_chebyshev_u", kPolynomial, true, false};
    case OpCode::kShiftedChebyshevV: return {"kiln_shifted_chebyshev_v", kPolynomial, true, false};
    case OpCode::kShiftedChebyshevW: return {"kiln_shifted_chebyshev_w", kPolynomial, true, false};
    case OpCode::kHermiteH: return {"kiln_hermite_h", kPolynomial, true, false};
    case OpCode::kHermiteHe: return {"kiln_hermite_he", kPolynomial, true, false};
    case OpCode::kLaguerreL: return {"kiln_laguerre_l", kPolynomial, true, false};
    case OpCode::kLegendreP: return {"kiln_legendre_p", kPolynomial, true, false};
    default: return {nullptr, kGamma, false, false};
  }
}

const char* c_special_prelude(SpecialPart part) {
  switch (part) {
    case SpecialPart::kGamma: return c_special_prelude_gamma();
    case SpecialPart::kBessel: return c_special_prelude_bessel();
    case SpecialPart::kPolynomial: return c_special_prelude_polynomial();
  }
  return "";
}

}  // namespace kiln::codegen
