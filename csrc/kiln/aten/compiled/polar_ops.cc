// torch.polar through the view_as_real lowering of complex outputs (see
// complex_ops.h): the real and imaginary parts of `out` are two float
// outputs of one elementwise kernel.
#include "kiln/aten/compiled/polar_ops.h"

#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/view_as_real.h>

#include <vector>

#include "kiln/aten/compiled/elementwise.h"

namespace kiln::torch_integration::compiled {
namespace {

bool is_polar_input_type(c10::ScalarType type) {
  return type == c10::ScalarType::Float || type == c10::ScalarType::Double ||
         type == c10::ScalarType::Half;
}

}  // namespace

at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  check_same_device({abs, angle, out});
  // The CPU's argument checks, in its order: floating inputs of one dtype,
  // and an out= tensor of the matching complex dtype.
  c10::ScalarType type = abs.scalar_type();
  TORCH_CHECK(is_polar_input_type(type) && is_polar_input_type(angle.scalar_type()),
              "Expected both inputs to be Half, Float or Double tensors but got ", type, " and ",
              angle.scalar_type());
  TORCH_CHECK(type == angle.scalar_type(), "Expected object of scalar type ", type,
              " but got scalar type ", angle.scalar_type(), " for second argument");
  TORCH_CHECK(out.scalar_type() == c10::toComplexType(type), "Expected object of scalar type ",
              c10::toComplexType(type), " but got scalar type ", out.scalar_type(),
              " for argument 'out'");
  std::vector<int64_t> shape = at::infer_size(abs.sizes(), angle.sizes());
  at::native::resize_output(out, shape);
  at::Tensor parts = at::view_as_real(out);
  at::Tensor inputs[] = {abs.expand(shape), angle.expand(shape)};
  at::Tensor outputs[] = {parts.select(-1, 0), parts.select(-1, 1)};
  launch_elementwise("aten::polar.out", "polar", inputs, outputs, {},
                     [](ElementwiseContext& context) -> std::vector<ir::ValueId> {
    // Half inputs arrive in float (their compute dtype), and the parts are
    // rounded to half on store, as the CPU's kernel computes.
    ir::Builder& builder = context.builder;
    ir::ValueId magnitude = context.inputs[0];
    ir::ValueId angle = context.inputs[1];
    return {builder.binary(ir::OpCode::kMultiply, magnitude, builder.unary(ir::OpCode::kCos, angle)),
            builder.binary(ir::OpCode::kMultiply, magnitude, builder.unary(ir::OpCode::kSin, angle))};
  });
  return out;
}

}  // namespace kiln::torch_integration::compiled
