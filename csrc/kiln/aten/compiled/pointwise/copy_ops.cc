#include "kiln/aten/compiled/pointwise/copy_ops.h"

#include <ATen/TensorIterator.h>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/pointwise.h"

namespace kiln::torch_integration::compiled {

bool copy_covers(const at::Tensor& source, const at::Tensor& destination) {
  return to_ir_dtype(source.scalar_type()).has_value() &&
         to_ir_dtype(destination.scalar_type()).has_value();
}

void copy_on_device(const at::Tensor& source, const at::Tensor& destination) {
  at::TensorIterator iter = at::TensorIteratorConfig()
                                .add_output(destination)
                                .add_const_input(source)
                                .resize_outputs(false)
                                .check_all_same_dtype(false)
                                .check_all_same_device(false)
                                .build();
  // The store converts from the source's compute dtype to the destination's
  // storage dtype, which is the whole cast.
  launch_pointwise("aten::_copy_from", "copy", iter, {},
                   [](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return {context.inputs[0]};
  });
}

}  // namespace kiln::torch_integration::compiled
