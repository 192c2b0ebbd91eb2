#include "kiln/aten/compiled/launch/pointwise.h"

#include <c10/util/Half.h>
#include <c10/util/BFloat16.h>

#include "kiln/aten/adaptive/adaptive_eager.h"
#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

// The value of a CPU scalar operand as a launch argument of its kind.
LaunchScalar read_cpu_scalar(const void* data, ir::DType dtype) {
  LaunchScalar scalar{};
  switch (dtype) {
    case ir::DType::kBool: scalar.integer = *static_cast<const bool*>(data) ? 1 : 0; break;
    case ir::DType::kUInt8: scalar.integer = *static_cast<const uint8_t*>(data); break;
    case ir::DType::kInt8: scalar.integer = *static_cast<const int8_t*>(data); break;
    case ir::DType::kInt16: scalar.integer = *static_cast<const int16_t*>(data); break;
    case ir::DType::kInt32: scalar.integer = *static_cast<const int32_t*>(data); break;
    case ir::DType::kInt64: scalar.integer = *static_cast<const int64_t*>(data); break;
    case ir::DType::kFloat16: scalar.real = static_cast<float>(*static_cast<const c10::Half*>(data)); break;
    case ir::DType::kBFloat16: scalar.real = static_cast<float>(*static_cast<const c10::BFloat16*>(data)); break;
    case ir::DType::kFloat32: scalar.real = *static_cast<const float*>(data); break;
    case ir::DType::kFloat64: scalar.real = *static_cast<const double*>(data); break;
  }
  return scalar;
}

// The launch-argument kind holding values of `dtype`.
ir::DType argument_dtype(ir::DType dtype) {
  if (dtype == ir::DType::kBool) return ir::DType::kBool;
  return ir::is_floating(dtype) ? ir::DType::kFloat64 : ir::DType::kInt64;
}

struct OperandPlan {
  int iterator_index;
  ir::DType dtype;
  ir::Layout layout;
  bool is_scalar;
};

// What a launch's operands are, as its kernel declares them.
struct PointwisePlan {
  c10::SmallVector<OperandPlan, 8> inputs;  // CPU scalars among them, as launch scalars
  c10::SmallVector<OperandPlan, 2> outputs;
  int scalar_slots = 0;  // launch scalar slots the CPU-scalar inputs take
  size_t bytes = 0;      // memory the launch touches
};

// Puts every operand of `iter` into `args` (data pointers and element
// strides over `rank` dims; a CPU-scalar input's value into a scalar slot) and
// its dtype and layout class into `signature` (inputs, '>', outputs).
PointwisePlan plan_operands(const char* op_name, at::TensorIteratorBase& iter, int rank, LaunchArgs& args,
                            Signature& signature) {
  const int outputs = iter.noutputs();
  const int tensors = iter.ntensors();
  const int64_t size0 = iter.ndim() == 0 ? 1 : iter.shape()[0];
  PointwisePlan plan;
  int kernel_operand = 0;
  auto add_tensor = [&](int index, ir::DType dtype) {
    ir::Layout layout = ir::Layout::kContiguous;
    int64_t element = ir::dtype_size(dtype);
    args.data[kernel_operand] = static_cast<char*>(iter.data_ptr(index));
    if (iter.ndim() == 0) {
      args.strides[kernel_operand][0] = 0;
    } else {
      c10::IntArrayRef strides = iter.strides(index);
      for (int dim = 0; dim < rank; ++dim) args.strides[kernel_operand][dim] = strides[dim] / element;
      layout = layout_class(args.strides[kernel_operand][0], size0);
    }
    ++kernel_operand;
    plan.bytes += static_cast<size_t>(iter.numel()) * static_cast<size_t>(element);
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(layout)).append(',');
    return layout;
  };
  for (int index = outputs; index < tensors; ++index) {
    ir::DType dtype = require_ir_dtype(iter.dtype(index), op_name);
    if (iter.is_cpu_scalar(index)) {
      args.scalars[plan.scalar_slots++] = read_cpu_scalar(iter.data_ptr(index), dtype);
      plan.inputs.push_back({index, dtype, ir::Layout::kBroadcast, true});
      signature.append('S').append(ir::dtype_name(dtype)).append(',');
    } else {
      plan.inputs.push_back({index, dtype, add_tensor(index, dtype), false});
    }
  }
  signature.append('>');
  for (int index = 0; index < outputs; ++index) {
    ir::DType dtype = require_ir_dtype(iter.dtype(index), op_name);
    plan.outputs.push_back({index, dtype, add_tensor(index, dtype), false});
  }
  return plan;
}

// The kernel of `body` over `rank` dims: loads every tensor input, reads every
// CPU-scalar input from its launch scalar, declares the op's `extra_scalars`
// and the outputs, stores what the body returns.
ir::Kernel build_pointwise_kernel(const char* op_name, std::string_view op_key, int rank,
                                  const PointwisePlan& plan, c10::ArrayRef<ir::DType> extra_scalars,
                                  ir::DType common, const PointwiseBody& body) {
  ir::Builder builder(std::string(op_key), ir::KernelKind::kPointwise, rank);
  PointwiseContext context{builder, {}, {}, {}, common, {}, {}};
  for (const OperandPlan& input : plan.inputs) {
    if (input.is_scalar) {
      int argument = builder.add_scalar(argument_dtype(input.dtype));
      context.inputs.push_back(builder.cast(builder.scalar(argument), ir::compute_dtype(input.dtype)));
    } else {
      context.inputs.push_back(builder.load(builder.add_input(input.dtype, input.layout)));
    }
    context.input_dtypes.push_back(input.dtype);
    context.input_is_scalar.push_back(input.is_scalar);
  }
  for (ir::DType dtype : extra_scalars) context.scalars.push_back(builder.scalar(builder.add_scalar(dtype)));
  std::vector<int> output_indices;
  for (const OperandPlan& output : plan.outputs) {
    output_indices.push_back(builder.add_output(output.dtype, output.layout));
    context.output_dtypes.push_back(output.dtype);
  }
  std::vector<ir::ValueId> results = body(context);
  TORCH_INTERNAL_ASSERT(results.size() == output_indices.size(), op_name, ": body returned ",
                        results.size(), " values for ", output_indices.size(), " outputs");
  for (size_t output = 0; output < results.size(); ++output) {
    builder.store(output_indices[output], results[output]);
  }
  return builder.finish();
}

}  // namespace

ir::ValueId PointwiseContext::promoted(int index) {
  if (input_is_scalar[index]) return builder.cast(inputs[index], ir::compute_dtype(common));
  if (input_dtypes[index] == common) return inputs[index];
  return builder.cast(inputs[index], common);
}

ir::ValueId PointwiseContext::rounded(int index) {
  if (input_is_scalar[index] && (common == ir::DType::kFloat16 || common == ir::DType::kBFloat16)) {
    ir::ValueId as_float = builder.cast(inputs[index], ir::DType::kFloat32);
    return builder.cast(builder.cast(as_float, common), ir::compute_dtype(common));
  }
  return promoted(index);
}

ir::ValueId PointwiseContext::scalar_as(int index, ir::DType dtype) {
  return builder.cast(scalars[index], ir::compute_dtype(dtype));
}

void launch_pointwise(const char* op_name, std::string_view op_key, at::TensorIteratorBase& iter,
                      c10::ArrayRef<c10::Scalar> scalars, const PointwiseBody& body) {
  record_static_op(op_name, OpPath::kCompiled);
  const int tensors = iter.ntensors();
  const int rank = std::max(iter.ndim(), 1);
  TORCH_CHECK(rank <= ir::kMaxRank, op_name, ": the kiln device supports at most ", ir::kMaxRank,
              " dims after merging contiguous dims, got ", rank);
  TORCH_CHECK(tensors <= ir::kMaxOperands, op_name, ": too many operands for one kernel");

  // Zeroed: operands and scalar slots past the op's own read as null and 0,
  // which a foreach op's replay of a captured launch relies on (foreach_ops.cc).
  LaunchArgs args{};
  Signature signature(op_key);
  signature.append('|');
  const PointwisePlan plan = plan_operands(op_name, iter, rank, args, signature);
  signature.append("|r").append_number(rank).append('|');
  const auto extra_scalars = set_scalars(op_name, scalars, args, signature, plan.scalar_slots);
  for (int dim = 0; dim < rank; ++dim) args.sizes[dim] = iter.ndim() == 0 ? 1 : iter.shape()[dim];

  // common_dtype() asserts when the iterator inferred none (a fill: no inputs).
  std::optional<c10::ScalarType> common_type = iter.maybe_common_dtype();
  ir::DType common = common_type.has_value() ? require_ir_dtype(*common_type, op_name)
                                             : plan.outputs[0].dtype;
  // The body depends on the common dtype, which the operands' dtypes do not
  // fix (a 0-dim float32 operand leaves a float16 one's common dtype float16,
  // a 1-element one makes it float32): without it in the key, the kernel
  // built for one served the other (found by tests/python/op_fuzz.py).
  signature.append("|c").append_number(static_cast<int64_t>(common));
  KernelEntry entry = kernel_for(signature.view(), op_name, [&]() {
    return build_pointwise_kernel(op_name, op_key, rank, plan, extra_scalars, common, body);
  });
  LaunchShape shape;
  shape.positions = iter.numel();
  shape.bytes = plan.bytes;
  Stream& stream = stream_of(iter.tensor(0));
  // Adaptive eager may hold the launch, to fuse it with the next ops.
  if (adaptive::hold_pointwise(stream, op_name, signature.view(), entry, args, shape, rank, iter, [&]() {
        return build_pointwise_kernel(op_name, op_key, rank, plan, extra_scalars, common, body);
      })) {
    return;
  }
  launch_kernel_lazily(stream, op_name, entry, args, shape, [&]() {
    KeepAlive keep_alive;
    for (int index = 0; index < tensors; ++index) {
      if (!iter.is_cpu_scalar(index)) keep_alive.push_back(iter.tensor(index));
    }
    return keep_alive;
  });
}

}  // namespace kiln::torch_integration::compiled
