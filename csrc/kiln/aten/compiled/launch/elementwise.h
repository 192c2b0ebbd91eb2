// Pointwise kernels over operands that already share one shape, without a
// TensorIterator: what the nn ops (softmax, losses, normalizations, random
// fills) need beyond launch_pointwise.
//
// - The body may ask for the coordinate of a logical dim (the class of an
//   nll_loss gradient element); dims named in `coordinate_dims` are never
//   merged with their neighbours, so the coordinate stays that dim's.
// - Input k is kernel input k, so the body can add indexed loads of it
//   (gather by a target index) through builder.indexed_load(k, offset).
// - A launch may carry a Philox seed and offset for kRandomBits.
//
// The caller expands broadcast operands to the common shape (stride 0) and
// allocates outputs; the launch orders dims fastest-first by the first
// output's strides, merges what it can and queues the kernel on the output's
// stream. Linear indices (random numbers) follow that order, so one layout
// always draws the same numbers for the same seed and offset.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/aten/device_checks.h"
#include "kiln/ir/builder.h"

namespace kiln::torch_integration::compiled {

struct ElementwiseContext {
  ir::Builder& builder;
  std::vector<ir::ValueId> inputs;      // each input's value at the element, in its compute dtype
  std::vector<ir::DType> input_dtypes;  // storage dtypes
  std::vector<ir::ValueId> scalars;     // the op's scalars (f64, i64 or bool)
  std::vector<ir::DType> output_dtypes;
  // The int64 coordinate of the element along logical dim `dim` (one of the
  // launch's coordinate_dims).
  ir::ValueId coordinate(int64_t dim);

  std::vector<int> kernel_dim_of;  // logical dim -> kernel dim, -1 when the dim has size 1
};

using ElementwiseBody = std::function<std::vector<ir::ValueId>(ElementwiseContext&)>;

struct PhiloxArgs {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

struct ElementwiseOptions {
  c10::IntArrayRef coordinate_dims;   // logical dims whose coordinates the body reads
  std::optional<PhiloxArgs> philox;   // set for kernels that draw random bits
  // Specialise the kernel to this launch's sizes and strides (ir::FixedShape):
  // for compiled programs, whose shapes are static. Another shape compiles
  // another kernel, so eager ops leave it unset.
  bool fixed_shape = false;
  // Elements each position reads and writes, for threading (kernel_launch.h):
  // a fused kernel that reads several full-size operands per element is worth
  // splitting at fewer elements than a single op.
  int64_t cost_per_position = 1;
  // Iterate innermost along the dim whose step moves the fewest bytes over
  // the full-size operands (each operand's step capped at a cache line), when
  // that is fewer than the first output's innermost dim moves (the other dims
  // keep the output's order). For fused kernels: the CNN's last pool reads
  // four channels-last taps and writes one NCHW result; along the result's
  // rows it gathered every tap 64 floats apart (24 us), along the channels it
  // reads them in order and writes with a stride (11 us). Its first pool reads
  // four NCHW taps two floats apart and writes channels-last: along the
  // channels every tap load left its cache line, 1 KiB apart (164 us a call
  // on one thread, in a C harness), along the rows the taps step 8 bytes and
  // the result 64 (21 us). Eager ops leave it unset: they order dims by the
  // output, as ATen's TensorIterator does.
  bool innermost_by_operands = false;
};

// Runs `body` for every element of `outputs[0]`'s shape. Every operand has
// that shape (inputs expanded by the caller). `op_key` names the body's
// semantics in the kernel signature; `op_name` (static) labels errors and op
// tracking. Nothing is launched for zero elements.
void launch_elementwise(const char* op_name, std::string_view op_key,
                        c10::ArrayRef<at::Tensor> inputs, c10::ArrayRef<at::Tensor> outputs,
                        c10::ArrayRef<c10::Scalar> scalars, const ElementwiseBody& body,
                        const ElementwiseOptions& options = {});


// `vector` (1-D, or undefined) as a tensor of `rank` dims that broadcasts
// along every dim but `dim`: sizes 1 and strides 0 elsewhere. Undefined in,
// undefined out.
at::Tensor along_dim(const at::Tensor& vector, int64_t rank, int64_t dim);

}  // namespace kiln::torch_integration::compiled
