// The iteration space and launcher shared by the 2-D pooling kernels
// (max_pool2d.cc, avg_pool2d.cc, adaptive_avg_pool2d.cc,
// adaptive_max_pool2d.cc).
//
// A pooling kernel runs once per element of a pooled tensor: an NCHW or
// unbatched CHW tensor seen as (width, height, channels, batch) positions.
// Every operand is a tensor viewed over that space through four element
// strides, so a tensor with strides (0, 0, channel, batch) is the base of one
// plane, read at any (h, w) with an indexed load of offset h*sH + w*sW. This
// is how a kernel reads a pooling window: the window is unrolled in the
// kernel (its size is part of the kernel's signature; tap_blocks.h splits a
// large one) while sizes, strides, padding and dilation are int64 launch
// scalars, so one compiled kernel serves every shape.
//
// Launches are asynchronous, on the stream of the first output; nothing runs
// for zero positions. Errors (an unsupported dtype, a failed compile) raise
// before anything is queued.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/ir/builder.h"

namespace kiln::torch_integration::compiled {

// The axes of a pooling iteration space.
enum class PoolAxis { kWidth = 0, kHeight = 1, kChannel = 2, kBatch = 3 };

// A tensor over the iteration space: element strides per PoolAxis.
struct PoolOperand {
  at::Tensor tensor;
  std::array<int64_t, 4> strides{};
};

// Sizes and strides of a 3-D (C, H, W) or 4-D (N, C, H, W) tensor; a 3-D
// tensor has one batch of stride 0.
struct PoolPlanes {
  int64_t batch = 1, channels = 1, height = 1, width = 1;
  int64_t batch_stride = 0, channel_stride = 0, height_stride = 0, width_stride = 0;
};
PoolPlanes pool_planes(const at::Tensor& tensor);

// `tensor` read or written at the current position (its sizes are the
// iteration space's).
PoolOperand at_position(const at::Tensor& tensor);
// The first element of `tensor`'s plane at the current (channel, batch), for
// indexed access within the plane.
PoolOperand plane_base(const at::Tensor& tensor);

struct PoolContext {
  ir::Builder& builder;
  std::vector<ir::DType> input_dtypes;   // storage dtypes, builder input k
  std::vector<ir::DType> output_dtypes;  // storage dtypes, builder output k
  std::vector<ir::ValueId> scalars;      // int64 launch scalars, in order
  bool channels_innermost = false;

  // The int64 coordinate of the current position along `axis`.
  ir::ValueId coordinate(PoolAxis axis);
  ir::ValueId int64(int64_t value) { return builder.constant(static_cast<double>(value), ir::DType::kInt64); }
  // The two halves of a scalar packed with pack_pair: {first, second}.
  std::pair<ir::ValueId, ir::ValueId> unpack(ir::ValueId packed);
  // Shorthands for int64 arithmetic and comparisons.
  ir::ValueId add(ir::ValueId a, ir::ValueId b) { return builder.binary(ir::OpCode::kAdd, a, b); }
  ir::ValueId sub(ir::ValueId a, ir::ValueId b) { return builder.binary(ir::OpCode::kSubtract, a, b); }
  ir::ValueId mul(ir::ValueId a, ir::ValueId b) { return builder.binary(ir::OpCode::kMultiply, a, b); }
  ir::ValueId min(ir::ValueId a, ir::ValueId b) { return builder.binary(ir::OpCode::kMinimum, a, b); }
  ir::ValueId max(ir::ValueId a, ir::ValueId b) { return builder.binary(ir::OpCode::kMaximum, a, b); }
  ir::ValueId less(ir::ValueId a, ir::ValueId b) { return builder.binary(ir::OpCode::kLess, a, b); }
  ir::ValueId less_equal(ir::ValueId a, ir::ValueId b) { return builder.binary(ir::OpCode::kLessEqual, a, b); }
  ir::ValueId both(ir::ValueId a, ir::ValueId b) { return builder.binary(ir::OpCode::kLogicalAnd, a, b); }
  // `value` if `condition`, else zero of its dtype.
  ir::ValueId or_zero(ir::ValueId condition, ir::ValueId value);
  // floor and ceil of numerator / denominator (int64, denominator >= 1,
  // |numerator| < 2^53), computed in float64, where they are exact: integer
  // division is a branchy helper in generated C that keeps the compiler from
  // hoisting or vectorising the code around it.
  ir::ValueId floor_div(ir::ValueId numerator, ir::ValueId denominator);
  ir::ValueId ceil_div(ir::ValueId numerator, ir::ValueId denominator);
};

struct PoolKernelSpec {
  const char* op_name = nullptr;  // a string literal: op tracking keeps it
  // Names the body's semantics and every compile-time parameter: two launches
  // with one key must build the same IR for the same operand dtypes/layouts.
  std::string_view key;
  std::array<int64_t, 4> sizes{};  // per PoolAxis
  c10::SmallVector<PoolOperand, 4> inputs;
  c10::SmallVector<PoolOperand, 2> outputs;
  c10::SmallVector<int64_t, 8> scalars;  // int64 launch scalars
  // Iterate channels fastest (for channels_last tensors: contiguous access).
  bool channels_innermost = false;
  int64_t cost_per_position = 1;  // elements read per position, for threading
  // True exactly when the body uses store_indexed: the launch then runs on
  // one thread, in position order.
  bool single_threaded = false;
  // See LaunchShape::independent_block.
  int64_t independent_block = 0;
  std::function<void(PoolContext&)> body;  // stores every output
};

// Builds (once, cached), then queues the kernel.
void launch_pool_kernel(const PoolKernelSpec& spec);

// The dtypes an ATen CPU pooling kernel dispatches on.
enum class PoolDtypes {
  kFloating,          // float32, float64, float16, bfloat16
  kFloatingAndLong,   // ... and int64
  kFloatingAndInts,   // ... and every integer dtype (not bool)
};
// A NotImplementedError as AT_DISPATCH raises it, naming the CPU kernel:
// `contiguous_name`, or `channels_last_name` when `tensor` suggests
// channels_last (the CPU kernel's dispatch follows that format).
void check_pool_dtype(const at::Tensor& tensor, PoolDtypes allowed, const char* contiguous_name,
                      const char* channels_last_name);
bool is_channels_last(const at::Tensor& tensor);

// Kernel size, stride, padding and dilation read as ATen's pooling meta
// functions read them (one value for both dims, an empty stride meaning the
// kernel size). Call after the meta function has checked the list lengths.
struct Pool2dParameters {
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
};
Pool2dParameters pool2d_parameters(at::IntArrayRef kernel_size, at::IntArrayRef stride,
                                   at::IntArrayRef padding, at::IntArrayRef dilation = {});

// Two values in [0, 2^32) in one int64 scalar (the launch has 8 scalars and a
// pooling window takes more parameters than that). Raises a RuntimeError
// naming `op_name` for a value out of range.
int64_t pack_pair(const char* op_name, int64_t first, int64_t second);

// The largest end_index - start_index of ATen's adaptive pooling windows of
// `output_size` outputs over `input_size` inputs.
int64_t max_adaptive_window(int64_t output_size, int64_t input_size);

// [start, end) of adaptive pooling window `index` of `outputs` over
// `inputs` (all int64 values): floor(index * inputs / outputs) and
// ceil((index + 1) * inputs / outputs), as ATen's adaptive pools.
std::pair<ir::ValueId, ir::ValueId> adaptive_window(PoolContext& context, ir::ValueId index,
                                                    ir::ValueId outputs, ir::ValueId inputs);

}  // namespace kiln::torch_integration::compiled
