#include "kiln/aten/compiled/launch/pointwise_support.h"

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>

namespace kiln::torch_integration::compiled {

c10::ScalarType dispatch_dtype(const at::TensorIteratorBase& iter) {
  std::optional<c10::ScalarType> common = iter.maybe_common_dtype();
  return common.has_value() ? *common : iter.dtype(0);
}

c10::Scalar scalar_as(const c10::Scalar& value, c10::ScalarType type) {
  c10::Scalar result;
  AT_DISPATCH_ALL_TYPES_AND3(c10::kBool, c10::kHalf, c10::kBFloat16, type, "kiln_scalar_as",
                             [&] { result = c10::Scalar(value.to<scalar_t>()); });
  return result;
}

c10::Scalar scalar_as_opmath(const c10::Scalar& value, c10::ScalarType type) {
  c10::Scalar result;
  AT_DISPATCH_ALL_TYPES_AND3(c10::kBool, c10::kHalf, c10::kBFloat16, type, "kiln_scalar_as", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    result = c10::Scalar(value.to<opmath_t>());
  });
  return result;
}

void launch_rounded(const char* op_name, std::string_view op_key, at::TensorIteratorBase& iter,
                    c10::ArrayRef<c10::Scalar> scalars, const PointwiseBody& body) {
  launch_pointwise(op_name, op_key, iter, scalars,
                   [&body](PointwiseContext& context) -> std::vector<ir::ValueId> {
    std::vector<ir::ValueId> results = body(context);
    bool half = context.common == ir::DType::kFloat16 || context.common == ir::DType::kBFloat16;
    for (size_t output = 0; output < results.size(); ++output) {
      if (half && context.output_dtypes[output] != context.common &&
          context.builder.dtype_of(results[output]) == ir::DType::kFloat32) {
        results[output] = context.builder.cast(results[output], context.common);
      }
    }
    return results;
  });
}

}  // namespace kiln::torch_integration::compiled
