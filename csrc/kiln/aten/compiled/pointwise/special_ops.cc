// Special functions: ATen's meta function, the CPU kernel's dtype coverage,
// then one IR node (the math is C in codegen/special_prelude*.cc).
#include "kiln/aten/compiled/pointwise/special_ops.h"

#include <ATen/ops/digamma_meta.h>
#include <ATen/ops/erfinv_meta.h>
#include <ATen/ops/i0_meta.h>
#include <ATen/ops/igamma_meta.h>
#include <ATen/ops/igammac_meta.h>
#include <ATen/ops/polygamma_meta.h>
#include <ATen/ops/special_airy_ai_meta.h>
#include <ATen/ops/special_bessel_j0_meta.h>
#include <ATen/ops/special_bessel_j1_meta.h>
#include <ATen/ops/special_bessel_y0_meta.h>
#include <ATen/ops/special_bessel_y1_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_t_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_u_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_v_meta.h>
#include <ATen/ops/special_chebyshev_polynomial_w_meta.h>
#include <ATen/ops/special_erfcx_meta.h>
#include <ATen/ops/special_hermite_polynomial_h_meta.h>
#include <ATen/ops/special_hermite_polynomial_he_meta.h>
#include <ATen/ops/special_i0e_meta.h>
#include <ATen/ops/special_i1_meta.h>
#include <ATen/ops/special_i1e_meta.h>
#include <ATen/ops/special_laguerre_polynomial_l_meta.h>
#include <ATen/ops/special_legendre_polynomial_p_meta.h>
#include <ATen/ops/special_log_ndtr_meta.h>
#include <ATen/ops/special_modified_bessel_i0_meta.h>
#include <ATen/ops/special_modified_bessel_i1_meta.h>
#include <ATen/ops/special_modified_bessel_k0_meta.h>
#include <ATen/ops/special_modified_bessel_k1_meta.h>
#include <ATen/ops/special_ndtri_meta.h>
#include <ATen/ops/special_scaled_modified_bessel_k0_meta.h>
#include <ATen/ops/special_scaled_modified_bessel_k1_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_t_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_u_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_v_meta.h>
#include <ATen/ops/special_shifted_chebyshev_polynomial_w_meta.h>
#include <ATen/ops/special_spherical_bessel_j0_meta.h>
#include <ATen/ops/special_zeta_meta.h>

#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;


// `op` on the inputs in the common dtype (a float dtype after the meta
// function's promotion; half types compute in float32, rounded on store).
PointwiseBody apply(OpCode op, int arity) {
  return [op, arity](PointwiseContext& context) -> std::vector<ir::ValueId> {
    if (arity == 1) return {context.unary(op, context.promoted(0))};
    return {context.binary(op, context.promoted(0), context.promoted(1))};
  };
}

// One structured op: meta (checks, promotion, output), the CPU kernel's
// dtype check, then the launch. `arguments` are meta's.
template <typename Meta, typename... Arguments>
void run_structured(const char* op_name, const char* key, const char* dispatch_name,
                    DTypeSet allowed, StructuredIterator<Meta>& iter, const PointwiseBody& body,
                    c10::ArrayRef<c10::Scalar> scalars, const Arguments&... arguments) {
  iter.meta(arguments...);
  check_dispatch_dtype(dispatch_name, dispatch_dtype(iter), allowed);
  launch_rounded(op_name, key, iter, scalars, body);
}

}  // namespace

#define KILN_DEFINE_SPECIAL_UNARY(name, opcode, dispatch_name, allowed)                     \
  at::Tensor name(const at::Tensor& self) {                                                 \
    StructuredIterator<at::meta::structured_##name> iter;                                   \
    run_structured("aten::" #name, #name, dispatch_name, allowed, iter,                     \
                   apply(OpCode::opcode, 1), {}, self);                                     \
    return iter.result();                                                                   \
  }                                                                                         \
  at::Tensor& name##_out(const at::Tensor& self, at::Tensor& out) {                         \
    StructuredIterator<at::meta::structured_##name> iter(out, Target::kOut);                \
    run_structured("aten::" #name ".out", #name, dispatch_name, allowed, iter,              \
                   apply(OpCode::opcode, 1), {}, self);                                     \
    return out;                                                                             \
  }
#define KILN_DEFINE_SPECIAL_UNARY_IN_PLACE(name, opcode, dispatch_name, allowed)            \
  KILN_DEFINE_SPECIAL_UNARY(name, opcode, dispatch_name, allowed)                           \
  at::Tensor& name##_(at::Tensor& self) {                                                   \
    StructuredIterator<at::meta::structured_##name> iter(self, Target::kInPlace);           \
    run_structured("aten::" #name "_", #name, dispatch_name, allowed, iter,                 \
                   apply(OpCode::opcode, 1), {}, self);                                     \
    return self;                                                                            \
  }
#define KILN_DEFINE_SPECIAL_BINARY(name, opcode, dispatch_name, allowed)                    \
  at::Tensor name(const at::Tensor& self, const at::Tensor& other) {                        \
    StructuredIterator<at::meta::structured_##name> iter;                                   \
    run_structured("aten::" #name, #name, dispatch_name, allowed, iter,                     \
                   apply(OpCode::opcode, 2), {}, self, other);                              \
    return iter.result();                                                                   \
  }                                                                                         \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) { \
    StructuredIterator<at::meta::structured_##name> iter(out, Target::kOut);                \
    run_structured("aten::" #name ".out", #name, dispatch_name, allowed, iter,              \
                   apply(OpCode::opcode, 2), {}, self, other);                              \
    return out;                                                                             \
  }
#define KILN_DEFINE_SPECIAL_BINARY_IN_PLACE(name, opcode, dispatch_name, allowed)           \
  KILN_DEFINE_SPECIAL_BINARY(name, opcode, dispatch_name, allowed)                          \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& other) {                          \
    StructuredIterator<at::meta::structured_##name> iter(self, Target::kInPlace);           \
    run_structured("aten::" #name "_", #name, dispatch_name, allowed, iter,                 \
                   apply(OpCode::opcode, 2), {}, self, other);                              \
    return self;                                                                            \
  }

// The CPU kernels of the torch.special Bessel, Airy, ndtr, erfcx, zeta and
// polynomial ops cover float and double only (kFloatAndDoubleTypes); the
// others every floating type.
KILN_DEFINE_SPECIAL_UNARY_IN_PLACE(digamma, kDigamma, "digamma", kFloatingTypes)
KILN_DEFINE_SPECIAL_UNARY_IN_PLACE(erfinv, kErfinv, "erfinv_cpu", kFloatingTypes)
KILN_DEFINE_SPECIAL_UNARY_IN_PLACE(i0, kBesselI0, "i0_cpu", kFloatingTypes)
KILN_DEFINE_SPECIAL_UNARY(special_i0e, kBesselI0Scaled, "i0e_cpu", kFloatingTypes)
KILN_DEFINE_SPECIAL_UNARY(special_i1, kBesselI1, "i1_cpu", kFloatingTypes)
KILN_DEFINE_SPECIAL_UNARY(special_i1e, kBesselI1Scaled, "i1e_cpu", kFloatingTypes)
KILN_DEFINE_SPECIAL_UNARY(special_ndtri, kNdtri, "ndtri_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_log_ndtr, kLogNdtr, "log_ndtr_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_erfcx, kErfcx, "erfcx_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_bessel_j0, kBesselJ0, "bessel_j0_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_bessel_j1, kBesselJ1, "bessel_j1_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_bessel_y0, kBesselY0, "bessel_y0_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_bessel_y1, kBesselY1, "bessel_y1_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_modified_bessel_i0, kBesselI0, "modified_bessel_i0_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_modified_bessel_i1, kBesselI1, "modified_bessel_i1_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_modified_bessel_k0, kBesselK0, "modified_bessel_k0_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_modified_bessel_k1, kBesselK1, "modified_bessel_k1_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_scaled_modified_bessel_k0, kBesselK0Scaled,
                          "scaled_modified_bessel_k0_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_scaled_modified_bessel_k1, kBesselK1Scaled,
                          "scaled_modified_bessel_k1_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_spherical_bessel_j0, kSphericalBesselJ0, "spherical_bessel_j0_cpu",
                          kFloatAndDoubleTypes)
KILN_DEFINE_SPECIAL_UNARY(special_airy_ai, kAiryAi, "airy_ai_cpu", kFloatAndDoubleTypes)

KILN_DEFINE_SPECIAL_BINARY(special_zeta, kZeta, "zeta_cpu", kFloatAndDoubleTypes)
// igamma's meta function keeps integer dtypes, which its CPU kernel refuses.
KILN_DEFINE_SPECIAL_BINARY_IN_PLACE(igamma, kIgamma, "igamma_cpu", kFloatingTypes)
KILN_DEFINE_SPECIAL_BINARY_IN_PLACE(igammac, kIgammac, "igammac_cpu", kFloatingTypes)

#define KILN_DEFINE_POLYNOMIAL(kind, opcode) \
  KILN_DEFINE_SPECIAL_BINARY(special_##kind, opcode, #kind "_cpu", kFloatAndDoubleTypes)
KILN_DEFINE_POLYNOMIAL(chebyshev_polynomial_t, kChebyshevT)
KILN_DEFINE_POLYNOMIAL(chebyshev_polynomial_u, kChebyshevU)
KILN_DEFINE_POLYNOMIAL(chebyshev_polynomial_v, kChebyshevV)
KILN_DEFINE_POLYNOMIAL(chebyshev_polynomial_w, kChebyshevW)
KILN_DEFINE_POLYNOMIAL(shifted_chebyshev_polynomial_t, kShiftedChebyshevT)
KILN_DEFINE_POLYNOMIAL(shifted_chebyshev_polynomial_u, kShiftedChebyshevU)
KILN_DEFINE_POLYNOMIAL(shifted_chebyshev_polynomial_v, kShiftedChebyshevV)
KILN_DEFINE_POLYNOMIAL(shifted_chebyshev_polynomial_w, kShiftedChebyshevW)
KILN_DEFINE_POLYNOMIAL(hermite_polynomial_h, kHermiteH)
KILN_DEFINE_POLYNOMIAL(hermite_polynomial_he, kHermiteHe)
KILN_DEFINE_POLYNOMIAL(laguerre_polynomial_l, kLaguerreL)
KILN_DEFINE_POLYNOMIAL(legendre_polynomial_p, kLegendreP)

#undef KILN_DEFINE_POLYNOMIAL
#undef KILN_DEFINE_SPECIAL_UNARY
#undef KILN_DEFINE_SPECIAL_UNARY_IN_PLACE
#undef KILN_DEFINE_SPECIAL_BINARY
#undef KILN_DEFINE_SPECIAL_BINARY_IN_PLACE

// polygamma: the order n is launch scalar 0, converted to the compute dtype.
namespace {

PointwiseBody polygamma_body() {
  return [](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::ValueId x = context.promoted(0);
    ir::ValueId order = context.scalar_as(0, context.common);
    return {context.binary(OpCode::kPolygamma, order, x)};
  };
}

}  // namespace

at::Tensor polygamma(int64_t n, const at::Tensor& self) {
  StructuredIterator<at::meta::structured_polygamma> iter;
  c10::Scalar scalars[] = {static_cast<double>(n)};
  run_structured("aten::polygamma", "polygamma", "polygamma", kFloatingTypes, iter, polygamma_body(),
                 scalars, n, self);
  return iter.result();
}

at::Tensor& polygamma_out(int64_t n, const at::Tensor& self, at::Tensor& out) {
  StructuredIterator<at::meta::structured_polygamma> iter(out, Target::kOut);
  c10::Scalar scalars[] = {static_cast<double>(n)};
  run_structured("aten::polygamma.out", "polygamma", "polygamma", kFloatingTypes, iter,
                 polygamma_body(), scalars, n, self);
  return out;
}

}  // namespace kiln::torch_integration::compiled
