#include "kiln/aten/compiled/nn/pool/pool_launch.h"

#include <algorithm>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

constexpr int kRank = 4;
constexpr int64_t kPairLimit = int64_t{1} << 32;

// The PoolAxis of iteration dim `dim` (dim 0 innermost).
PoolAxis axis_of_dim(int dim, bool channels_innermost) {
  static constexpr PoolAxis kPlanar[kRank] = {PoolAxis::kWidth, PoolAxis::kHeight,
                                              PoolAxis::kChannel, PoolAxis::kBatch};
  static constexpr PoolAxis kChannelsLast[kRank] = {PoolAxis::kChannel, PoolAxis::kWidth,
                                                    PoolAxis::kHeight, PoolAxis::kBatch};
  return channels_innermost ? kChannelsLast[dim] : kPlanar[dim];
}

int dim_of_axis(PoolAxis axis, bool channels_innermost) {
  for (int dim = 0; dim < kRank; ++dim) {
    if (axis_of_dim(dim, channels_innermost) == axis) return dim;
  }
  return 0;
}

}  // namespace

PoolPlanes pool_planes(const at::Tensor& tensor) {
  PoolPlanes planes;
  const int64_t rank = tensor.dim();
  TORCH_INTERNAL_ASSERT(rank == 3 || rank == 4, "pooling: a 3-D or 4-D tensor expected");
  if (rank == 4) {
    planes.batch = tensor.size(0);
    planes.batch_stride = tensor.stride(0);
  }
  planes.channels = tensor.size(rank - 3);
  planes.channel_stride = tensor.stride(rank - 3);
  planes.height = tensor.size(rank - 2);
  planes.height_stride = tensor.stride(rank - 2);
  planes.width = tensor.size(rank - 1);
  planes.width_stride = tensor.stride(rank - 1);
  return planes;
}

PoolOperand at_position(const at::Tensor& tensor) {
  PoolPlanes planes = pool_planes(tensor);
  return {tensor,
          {planes.width_stride, planes.height_stride, planes.channel_stride, planes.batch_stride}};
}

PoolOperand plane_base(const at::Tensor& tensor) {
  PoolPlanes planes = pool_planes(tensor);
  return {tensor, {0, 0, planes.channel_stride, planes.batch_stride}};
}

ir::ValueId PoolContext::coordinate(PoolAxis axis) {
  return builder.coordinate(dim_of_axis(axis, channels_innermost));
}

std::pair<ir::ValueId, ir::ValueId> PoolContext::unpack(ir::ValueId packed) {
  ir::ValueId first = builder.binary(ir::OpCode::kShiftRight, packed, int64(32));
  ir::ValueId second = builder.binary(ir::OpCode::kBitwiseAnd, packed, int64(kPairLimit - 1));
  return {first, second};
}

ir::ValueId PoolContext::or_zero(ir::ValueId condition, ir::ValueId value) {
  return builder.select(condition, value, builder.constant(0.0, builder.dtype_of(value)));
}

namespace {

// A quotient of integers below 2^53 in float64 is within half an ulp, which
// is less than its distance to any integer it is not: floor and ceil of it
// are the exact ones.
ir::ValueId rounded_quotient(ir::Builder& builder, ir::OpCode rounding, ir::ValueId numerator,
                             ir::ValueId denominator) {
  ir::ValueId quotient = builder.binary(ir::OpCode::kDivide, builder.cast(numerator, ir::DType::kFloat64),
                                        builder.cast(denominator, ir::DType::kFloat64));
  return builder.cast(builder.unary(rounding, quotient), ir::DType::kInt64);
}

}  // namespace

ir::ValueId PoolContext::floor_div(ir::ValueId numerator, ir::ValueId denominator) {
  return rounded_quotient(builder, ir::OpCode::kFloor, numerator, denominator);
}

ir::ValueId PoolContext::ceil_div(ir::ValueId numerator, ir::ValueId denominator) {
  return rounded_quotient(builder, ir::OpCode::kCeil, numerator, denominator);
}

bool is_channels_last(const at::Tensor& tensor) {
  return tensor.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
}

void check_pool_dtype(const at::Tensor& tensor, PoolDtypes allowed, const char* contiguous_name,
                      const char* channels_last_name) {
  at::ScalarType type = tensor.scalar_type();
  bool ok = type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
  if (allowed == PoolDtypes::kFloatingAndLong) ok = ok || type == at::kLong;
  if (allowed == PoolDtypes::kFloatingAndInts) {
    ok = ok || type == at::kByte || type == at::kChar || type == at::kShort || type == at::kInt ||
         type == at::kLong;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", is_channels_last(tensor) ? channels_last_name : contiguous_name,
                              "\" not implemented for '", c10::toString(type), "'");
}

Pool2dParameters pool2d_parameters(at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                   at::IntArrayRef padding, at::IntArrayRef dilation) {
  auto second = [](at::IntArrayRef values, int64_t first) {
    return values.size() == 1 ? first : values[1];
  };
  Pool2dParameters parameters;
  parameters.kernel_h = kernel_size[0];
  parameters.kernel_w = second(kernel_size, parameters.kernel_h);
  parameters.stride_h = stride.empty() ? parameters.kernel_h : stride[0];
  parameters.stride_w = stride.empty() ? parameters.kernel_w : second(stride, parameters.stride_h);
  parameters.pad_h = padding[0];
  parameters.pad_w = second(padding, parameters.pad_h);
  if (!dilation.empty()) {
    parameters.dilation_h = dilation[0];
    parameters.dilation_w = second(dilation, parameters.dilation_h);
  }
  return parameters;
}

int64_t pack_pair(const char* op_name, int64_t first, int64_t second) {
  TORCH_CHECK(first >= 0 && first < kPairLimit && second >= 0 && second < kPairLimit, op_name,
              ": the kiln device supports pooling sizes and parameters below 2^32, got ", first,
              " and ", second);
  return (first << 32) | second;
}

int64_t max_adaptive_window(int64_t output_size, int64_t input_size) {
  int64_t largest = 0;
  for (int64_t index = 0; index < output_size; ++index) {
    int64_t start = (index * input_size) / output_size;
    int64_t end = ((index + 1) * input_size + output_size - 1) / output_size;
    largest = std::max(largest, end - start);
  }
  return largest;
}

void launch_pool_kernel(const PoolKernelSpec& spec) {
  const int inputs = static_cast<int>(spec.inputs.size());
  const int operands = inputs + static_cast<int>(spec.outputs.size());
  TORCH_INTERNAL_ASSERT(operands <= ir::kMaxOperands && !spec.outputs.empty());
  TORCH_INTERNAL_ASSERT(spec.scalars.size() <= static_cast<size_t>(ir::kMaxScalars));
  auto operand = [&](int k) -> const PoolOperand& {
    return k < inputs ? spec.inputs[k] : spec.outputs[k - inputs];
  };

  int64_t positions = 1;
  for (int64_t size : spec.sizes) positions *= size;

  LaunchArgs args{};
  KeepAlive keep_alive;
  Signature signature(spec.key);
  signature.append(spec.channels_innermost ? "|cl|" : "|pl|");
  c10::SmallVector<ir::Operand, 6> plans;
  size_t bytes = 0;
  for (int k = 0; k < operands; ++k) {
    const PoolOperand& current = operand(k);
    ir::DType dtype = require_ir_dtype(current.tensor.scalar_type(), spec.op_name);
    args.data[k] = kernel_data(current.tensor, spec.op_name);
    for (int dim = 0; dim < kRank; ++dim) {
      args.strides[k][dim] =
          current.strides[static_cast<int>(axis_of_dim(dim, spec.channels_innermost))];
    }
    ir::Layout layout = layout_class(args.strides[k][0], spec.sizes[static_cast<int>(
                                                          axis_of_dim(0, spec.channels_innermost))]);
    plans.push_back({dtype, layout});
    keep_alive.push_back(current.tensor);
    bytes += static_cast<size_t>(current.tensor.numel()) *
             static_cast<size_t>(ir::dtype_size(dtype));
    if (k == inputs) signature.append('>');
    signature.append(ir::dtype_name(dtype)).append(static_cast<char>(layout)).append(',');
  }
  for (int dim = 0; dim < kRank; ++dim) {
    args.sizes[dim] = spec.sizes[static_cast<int>(axis_of_dim(dim, spec.channels_innermost))];
  }
  for (size_t slot = 0; slot < spec.scalars.size(); ++slot) {
    args.scalars[slot].integer = spec.scalars[slot];
  }
  signature.append("|s").append_number(static_cast<int64_t>(spec.scalars.size()));
  record_static_op(spec.op_name, OpPath::kCompiled);
  if (positions == 0) return;

  KernelEntry entry = kernel_for(signature.view(), spec.op_name, [&]() {
    ir::Builder builder(std::string(spec.key.substr(0, spec.key.find('|'))),
                        ir::KernelKind::kPointwise, kRank);
    PoolContext context{builder, {}, {}, {}, spec.channels_innermost};
    for (int k = 0; k < operands; ++k) {
      if (k < inputs) {
        builder.add_input(plans[k].dtype, plans[k].layout);
        context.input_dtypes.push_back(plans[k].dtype);
      } else {
        builder.add_output(plans[k].dtype, plans[k].layout);
        context.output_dtypes.push_back(plans[k].dtype);
      }
    }
    for (size_t slot = 0; slot < spec.scalars.size(); ++slot) {
      context.scalars.push_back(builder.scalar(builder.add_scalar(ir::DType::kInt64)));
    }
    spec.body(context);
    ir::Kernel kernel = builder.finish();
    TORCH_INTERNAL_ASSERT(kernel.single_threaded == spec.single_threaded,
                          spec.op_name, ": single_threaded does not match the kernel body");
    return kernel;
  });

  LaunchShape shape;
  shape.positions = positions;
  shape.cost_per_position = std::max<int64_t>(spec.cost_per_position, 1);
  shape.bytes = bytes;
  shape.single_threaded = spec.single_threaded;
  shape.independent_block = spec.independent_block;
  Stream& stream = stream_of(spec.outputs.front().tensor);
  launch_kernel(stream, spec.op_name, entry, args, shape, std::move(keep_alive));
}

std::pair<ir::ValueId, ir::ValueId> adaptive_window(PoolContext& context, ir::ValueId index,
                                                    ir::ValueId outputs, ir::ValueId inputs) {
  ir::ValueId start = context.floor_div(context.mul(index, inputs), outputs);
  ir::ValueId end =
      context.ceil_div(context.mul(context.add(index, context.int64(1)), inputs), outputs);
  return {start, end};
}

}  // namespace kiln::torch_integration::compiled
