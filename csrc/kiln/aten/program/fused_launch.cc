#include "kiln/aten/program/fused_launch.h"

#include <ATen/ops/zeros.h>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/reduction.h"

namespace kiln::torch_integration::program {
namespace {

// Emits `fragment` into `builder`: kLoad k becomes `loads[k]`, kAccumulator
// the reduction's accumulator, or for a row kernel (`row` set) the result of
// stage `integer`, whose stages are added once their values exist. Returns
// the value of every fragment node.
std::vector<ir::ValueId> replay(ir::Builder& builder, const std::vector<ir::Node>& fragment,
                                const std::vector<ir::ValueId>& loads,
                                const compiler::FusedKernel* row = nullptr) {
  std::vector<ir::ValueId> ids(fragment.size(), ir::kNoValue);
  size_t stages = 0;
  auto add_stages_through = [&](size_t last) {
    for (; stages <= last && stages < row->stage_ops.size(); ++stages) {
      builder.reduce_stage(row->stage_ops[stages], ids[row->stage_values[stages]]);
    }
  };
  for (size_t i = 0; i < fragment.size(); ++i) {
    const ir::Node& node = fragment[i];
    auto arg = [&](int a) { return ids[node.args[a]]; };
    switch (node.op) {
      case ir::OpCode::kLoad:
        ids[i] = loads.at(node.integer);
        break;
      case ir::OpCode::kAccumulator:
        if (row != nullptr) {
          add_stages_through(static_cast<size_t>(node.integer));
          ids[i] = builder.stage_result(static_cast<int>(node.integer));
        } else {
          ids[i] = builder.accumulator();
        }
        break;
      case ir::OpCode::kConstant:
        ids[i] = builder.constant(ir::is_integer(node.dtype) ? static_cast<double>(node.integer) : node.real,
                                  node.dtype);
        break;
      case ir::OpCode::kCast:
        ids[i] = builder.cast(arg(0), node.dtype);
        break;
      case ir::OpCode::kSelect:
        ids[i] = builder.select(arg(0), arg(1), arg(2));
        break;
      default:
        ids[i] = ir::opcode_arity(node.op) == 1 ? builder.unary(node.op, arg(0))
                                                : builder.binary(node.op, arg(0), arg(1));
        break;
    }
  }
  if (row != nullptr && !row->stage_ops.empty()) add_stages_through(row->stage_ops.size() - 1);
  return ids;
}

std::vector<ir::ValueId> pick(const std::vector<ir::ValueId>& ids, const std::vector<ir::ValueId>& which) {
  std::vector<ir::ValueId> picked;
  for (ir::ValueId index : which) picked.push_back(ids[index]);
  return picked;
}

// Operands read or written at every position: the outputs, and the inputs
// not broadcast (a stride 0 along a dim of more than one element marks a
// broadcast input, read once per row or plane instead).
int64_t full_size_operands(c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs) {
  int64_t count = static_cast<int64_t>(outputs.size());
  for (const at::Tensor& input : inputs) {
    bool broadcast = false;
    for (int64_t dim = 0; dim < input.dim(); ++dim) broadcast |= input.stride(dim) == 0 && input.size(dim) > 1;
    count += broadcast ? 0 : 1;
  }
  return count;
}

}  // namespace

void launch_fused_pointwise(const compiler::FusedKernel& kernel, std::string_view op_key,
                            c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs) {
  compiled::ElementwiseOptions options;
  options.fixed_shape = true;  // a program's shapes are static
  options.cost_per_position = full_size_operands(inputs, outputs);
  options.innermost_by_operands = true;
  compiled::launch_elementwise(
      kFusedPointwiseName, op_key, inputs, outputs, {},
      [&](compiled::ElementwiseContext& context) {
        return pick(replay(context.builder, kernel.expression, context.inputs), kernel.results);
      },
      options);
}

void launch_fused_reduction(const compiler::FusedKernel& kernel, std::string_view op_key,
                            c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs) {
  const int64_t rank = static_cast<int64_t>(kernel.iteration_sizes.size());
  std::vector<int64_t> reduced(kernel.reduced_dims.begin(), kernel.reduced_dims.end());
  std::vector<at::Tensor> keepdim_outputs;
  for (const at::Tensor& output : outputs) keepdim_outputs.push_back(compiled::keepdim_view(output, rank, reduced));
  compiled::ReductionSpec spec;
  spec.op = kernel.reduce_op;
  spec.fixed_shape = true;  // a program's shapes are static
  spec.element = [&](compiled::ReductionContext& context) {
    return replay(context.builder, kernel.expression, context.inputs)[kernel.reduced_value];
  };
  spec.epilogue = [&](compiled::ReductionContext& context) {
    return pick(replay(context.builder, kernel.epilogue, {}), kernel.results);
  };
  if (!inputs.empty()) {
    compiled::launch_reduction(kFusedReductionName, op_key, inputs, keepdim_outputs, reduced, {}, spec);
    return;
  }
  // A reduction of values the kernel makes itself (a sum over a `full`): the
  // launch takes its iteration shape from the first input, so one element,
  // broadcast over that shape and never read by the expression, stands in.
  const at::Tensor shape_carrier =
      at::zeros({}, outputs.front().options()).expand(kernel.iteration_sizes);
  compiled::launch_reduction(kFusedReductionName, op_key, {shape_carrier}, keepdim_outputs, reduced, {}, spec);
}

void launch_fused_row(const compiler::FusedKernel& kernel, std::string_view op_key, c10::ArrayRef<at::Tensor> inputs,
                      c10::ArrayRef<at::Tensor> outputs) {
  const int64_t rank = static_cast<int64_t>(kernel.iteration_sizes.size());
  std::vector<int64_t> reduced(kernel.reduced_dims.begin(), kernel.reduced_dims.end());
  std::vector<at::Tensor> full_outputs;
  for (const at::Tensor& output : outputs) {
    full_outputs.push_back(output.sizes().equals(kernel.iteration_sizes)
                               ? output
                               : compiled::keepdim_view(output, rank, reduced).expand(kernel.iteration_sizes));
  }
  compiled::launch_row_reduction(kFusedRowName, op_key, inputs, full_outputs, reduced, {},
                                 [&](ir::Builder& builder, const std::vector<ir::ValueId>& loads,
                                     const std::vector<ir::ValueId>&) {
                                   return pick(replay(builder, kernel.expression, loads, &kernel), kernel.results);
                                 },
                                 /*fixed_shape=*/true);
}

}  // namespace kiln::torch_integration::program
