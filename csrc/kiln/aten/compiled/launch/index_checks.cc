#include "kiln/aten/compiled/launch/index_checks.h"

#include <ATen/ops/empty.h>

#include <limits>
#include <memory>

#include "kiln/aten/compiled/launch/reduction.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;

constexpr int64_t kNoViolation = std::numeric_limits<int64_t>::min();

[[noreturn]] void raise(ErrorType type, const std::string& message) {
  if (type == ErrorType::kIndexError) TORCH_CHECK_INDEX(false, message);
  TORCH_CHECK(false, message);
}

}  // namespace

std::function<std::string(int64_t)> out_of_bounds_message(int64_t dim, int64_t size,
                                                          std::string prefix) {
  return [dim, size, prefix = std::move(prefix)](int64_t index) {
    return prefix + "index " + std::to_string(index) + " is out of bounds for dimension " +
           std::to_string(dim) + " with size " + std::to_string(size);
  };
}

void check_device_value(const char* op_name, const at::Tensor& value, ErrorType type,
                        std::function<std::optional<std::string>(int64_t)> failure) {
  Driver* driver = &runtime().driver();
  auto seen = std::make_shared<int64_t>(0);
  Status status = stream_of(value).launch(
      op_name, sizeof(int64_t), [driver, value, seen, failure]() -> Status {
        int64_t result = 0;
        driver->copy_device_to_host(&result, value.data_ptr(), sizeof(result));
        *seen = result;
        std::optional<std::string> message = failure(result);
        return message ? out_of_range(*message) : Status();
      });
  if (status.ok()) return;
  // The check ran in the caller (idle stream, or KILN_LAUNCH_BLOCKING): raise
  // the CPU's exception now, before the op launches anything else.
  std::optional<std::string> message = failure(*seen);
  if (!message) check_status(status);
  raise(type, *message);
}

void check_index_bounds(const char* op_name, const at::Tensor& index, IndexBounds bounds,
                        ErrorType type, std::function<std::string(int64_t)> message) {
  if (index.numel() == 0) return;
  at::Tensor input = index.dim() == 0 ? index.reshape({1}) : index;
  at::Tensor worst = at::empty({}, index.options().dtype(at::kLong));
  c10::DimVector dims;
  for (int64_t dim = 0; dim < input.dim(); ++dim) dims.push_back(dim);

  // The largest offending index, or kNoViolation. An index of exactly
  // kNoViolation is reported as kNoViolation + 1.
  ReductionSpec spec;
  spec.op = ir::ReduceOp::kMax;
  bool wraps = bounds.wraps;
  spec.element = [wraps](ReductionContext& context) {
    ir::Builder& builder = context.builder;
    ir::ValueId value = builder.cast(context.inputs[0], ir::DType::kInt64);
    ir::ValueId size = context.scalars[0];
    ir::ValueId lower = wraps ? builder.unary(OpCode::kNegate, size)
                              : builder.constant(0, ir::DType::kInt64);
    ir::ValueId bad = builder.binary(OpCode::kLogicalOr, builder.binary(OpCode::kLess, value, lower),
                                     builder.binary(OpCode::kGreaterEqual, value, size));
    ir::ValueId reported = builder.binary(OpCode::kMaximum, value, context.scalars[2]);
    return builder.select(bad, reported, context.scalars[1]);
  };
  c10::Scalar scalars[] = {bounds.size, kNoViolation, kNoViolation + 1};
  launch_reduction(op_name, wraps ? "index_bounds_wrap" : "index_bounds", {input},
                   {keepdim_view(worst, input.dim(), dims)}, dims, scalars, spec);
  check_device_value(op_name, worst, type,
                     [message = std::move(message)](int64_t value) -> std::optional<std::string> {
                       if (value == kNoViolation) return std::nullopt;
                       return message(value);
                     });
}

}  // namespace kiln::torch_integration::compiled
