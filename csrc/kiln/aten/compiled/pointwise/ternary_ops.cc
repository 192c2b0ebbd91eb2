// where, lerp, addcmul, addcdiv and masked_fill: the CPU's iterator configs
// or meta functions, then one IR body each.
#include "kiln/aten/compiled/pointwise/ternary_ops.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/TensorIterator.h>
#include <ATen/ops/addcdiv_meta.h>
#include <ATen/ops/addcmul_meta.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/lerp_meta.h>
#include <ATen/ops/result_type.h>

#include <string_view>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/compiled/launch/dtype_sets.h"
#include "kiln/aten/compiled/launch/pointwise_support.h"
#include "kiln/aten/compiled/launch/structured_iterator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::OpCode;

// `value` (of compute dtype, from storage dtype `from`) as `to`: rounded when
// `to` is a half type, unchanged when nothing changes.
ir::ValueId converted(PointwiseContext& context, ir::ValueId value, ir::DType from, ir::DType to) {
  if (from == to) return value;
  return context.builder.cast(value, to);
}

bool is_cpu_scalar(const at::Tensor& tensor) {
  return tensor.device().is_cpu() && tensor.dim() == 0;
}

// ---- where ----

// Operands of where that are 0-dim CPU tensors are read on the host and passed
// as launch scalars (the CPU path moves them to the device instead; reading
// them needs no synchronization and keeps one kernel for every value).
at::Tensor& run_where(const char* op_name, const at::Tensor& condition, const at::Tensor& self,
                      const at::Tensor& other, at::Tensor& out) {
  c10::ScalarType result_type = at::result_type(self, other);
  TORCH_CHECK(out.scalar_type() == result_type, "Expected out type to be ", result_type,
              " but got ", out.scalar_type());
  if (condition.scalar_type() == c10::ScalarType::Byte) {
    TORCH_WARN_ONCE(
        "where received a uint8 condition tensor. This behavior is deprecated and will be "
        "removed in a future version of PyTorch. Use a boolean condition instead.");
  } else {
    TORCH_CHECK(condition.scalar_type() == c10::ScalarType::Bool,
                "where expected condition to be a boolean tensor, but got a tensor with dtype ",
                condition.scalar_type());
  }
  const at::Tensor* operands[] = {&condition, &self, &other};
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).add_output(out);
  char key[] = "where_ttt";
  c10::SmallVector<c10::Scalar, 3> scalars;
  bool from_scalar[3] = {false, false, false};
  for (int index = 0; index < 3; ++index) {
    const at::Tensor& operand = *operands[index];
    if (is_cpu_scalar(operand) && !out.device().is_cpu()) {
      scalars.push_back(operand.item());
      from_scalar[index] = true;
      key[6 + index] = 's';
    } else {
      config.add_const_input(operand);
    }
  }
  at::TensorIterator iter = config.build();
  ir::DType result = require_ir_dtype(result_type, op_name);
  // The key says which operands are launch scalars; the signature adds their
  // kinds.
  launch_pointwise(op_name, std::string_view(key), iter, scalars,
                   [&](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::ValueId values[3];
    int tensor = 0, scalar = 0;
    for (int index = 0; index < 3; ++index) {
      ir::DType target = index == 0 ? ir::DType::kBool : result;
      if (from_scalar[index]) {
        values[index] = context.builder.cast(context.scalars[scalar++], target);
      } else {
        values[index] = converted(context, context.inputs[tensor], context.input_dtypes[tensor],
                                  target);
        ++tensor;
      }
    }
    return {context.builder.select(values[0], values[1], values[2])};
  });
  return out;
}

c10::Device where_device(const at::Tensor& condition, const at::Tensor& self,
                         const at::Tensor& other) {
  for (const at::Tensor* tensor : {&condition, &self, &other}) {
    if (!tensor->device().is_cpu()) return tensor->device();
  }
  return condition.device();
}

// ---- lerp ----

// ATen's CPU lerp, as its vectorized kernel computes it: base + coefficient *
// (end - start), with (start, weight) for |weight| < 0.5 and (end, weight - 1)
// otherwise, in one fused multiply-add (the scalar form contracts to the
// same). The product can exceed the range where the result does not
// (lerp(4.6, FLT_MAX, -1) is -FLT_MAX): for float32 it is taken in double,
// which holds a float product exactly, and rounded once to float (found by
// tests/python/op_fuzz.py; kernels are otherwise built without contraction).
std::vector<ir::ValueId> lerp_value(PointwiseContext& context, ir::ValueId weight) {
  ir::Builder& builder = context.builder;
  ir::ValueId start = context.promoted(0);
  ir::ValueId end = context.promoted(1);
  ir::ValueId difference = context.binary(OpCode::kSubtract, end, start);
  ir::ValueId small = context.binary(OpCode::kLess, context.unary(OpCode::kAbs, weight),
                                     context.constant(0.5));
  ir::ValueId coefficient =
      builder.select(small, weight, context.binary(OpCode::kSubtract, weight, context.constant(1.0)));
  ir::ValueId base = builder.select(small, start, end);
  if (builder.dtype_of(start) == ir::DType::kFloat32) {
    auto wide = [&builder](ir::ValueId value) { return builder.cast(value, ir::DType::kFloat64); };
    ir::ValueId product = context.binary(OpCode::kMultiply, wide(coefficient), wide(difference));
    return {builder.cast(context.binary(OpCode::kAdd, wide(base), product), ir::DType::kFloat32)};
  }
  return {context.binary(OpCode::kAdd, base, context.binary(OpCode::kMultiply, coefficient, difference))};
}

template <typename Meta>
const at::Tensor& run_lerp_scalar(const char* op_name, StructuredIterator<Meta>& iter,
                                  const at::Tensor& self, const at::Tensor& end,
                                  const c10::Scalar& weight) {
  iter.meta(self, end, weight);
  c10::ScalarType type = dispatch_dtype(iter);
  check_dispatch_dtype("lerp_kernel_scalar", type, kFloatingTypes);
  c10::Scalar scalars[] = {scalar_as_opmath(weight, type)};
  launch_rounded(op_name, "lerp_scalar", iter, scalars,
                 [](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return lerp_value(context, context.scalar_as(0, context.common));
  });
  return iter.result();
}

template <typename Meta>
const at::Tensor& run_lerp_tensor(const char* op_name, StructuredIterator<Meta>& iter,
                                  const at::Tensor& self, const at::Tensor& end,
                                  const at::Tensor& weight) {
  iter.meta(self, end, weight);
  check_dispatch_dtype("lerp_kernel_tensor", dispatch_dtype(iter), kFloatingTypes);
  launch_rounded(op_name, "lerp_tensor", iter, {},
                 [](PointwiseContext& context) -> std::vector<ir::ValueId> {
    return lerp_value(context, context.promoted(2));
  });
  return iter.result();
}

// ---- addcmul, addcdiv ----

PointwiseBody scaled_body(OpCode combine) {
  return [combine](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::ValueId scaled =
        context.binary(OpCode::kMultiply, context.scalar_as(0, context.common), context.promoted(1));
    ir::ValueId combined = context.binary(combine, scaled, context.promoted(2));
    return {context.binary(OpCode::kAdd, context.promoted(0), combined)};
  };
}

template <typename Meta>
const at::Tensor& run_scaled(const char* op_name, const char* key, OpCode combine,
                             StructuredIterator<Meta>& iter, const at::Tensor& self,
                             const at::Tensor& tensor1, const at::Tensor& tensor2,
                             const c10::Scalar& value) {
  iter.meta(self, tensor1, tensor2, value);
  c10::ScalarType type = dispatch_dtype(iter);
  check_dispatch_dtype(key, type, kNumericTypes);
  c10::Scalar scalars[] = {scalar_as_opmath(value, type)};
  launch_rounded(op_name, key, iter, scalars, scaled_body(combine));
  return iter.result();
}

// ---- masked_fill ----

void check_mask(const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == c10::ScalarType::Bool,
              "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
}

void check_value_tensor(const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0,
              "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
}

// out = mask ? value : self, where `value` is a launch scalar (`value_tensor`
// undefined) or a 0-dim device tensor read by the kernel. `out` is `self` for
// the in-place form: each element is read before it is written.
void run_masked_fill(const char* op_name, const at::Tensor& out, const at::Tensor& self,
                     const at::Tensor& mask, const c10::Scalar* value,
                     const at::Tensor& value_tensor) {
  check_mask(mask);
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(false)
      .check_all_same_dtype(false)
      .resize_outputs(false)
      .add_output(out)
      .add_const_input(self)
      .add_const_input(mask);
  if (value_tensor.defined()) config.add_const_input(value_tensor);
  at::TensorIterator iter = config.build();
  c10::SmallVector<c10::Scalar, 1> scalars;
  if (value != nullptr) scalars.push_back(scalar_as(*value, out.scalar_type()));
  bool from_tensor = value_tensor.defined();
  launch_pointwise(op_name, from_tensor ? "masked_fill_tensor" : "masked_fill", iter, scalars,
                   [from_tensor](PointwiseContext& context) -> std::vector<ir::ValueId> {
    ir::DType type = context.output_dtypes[0];
    ir::ValueId fill = from_tensor
                           ? converted(context, context.inputs[2], context.input_dtypes[2], type)
                           : context.builder.cast(context.scalars[0], type);
    ir::ValueId original = converted(context, context.inputs[0], context.input_dtypes[0], type);
    return {context.builder.select(context.inputs[1], fill, original)};
  });
}

void masked_fill_in_place(const char* op_name, at::Tensor& self, const at::Tensor& mask,
                          const c10::Scalar* value, const at::Tensor& value_tensor) {
  check_mask(mask);
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN(
        "Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before "
        "performing this operation. This also applies to advanced indexing e.g. tensor[mask] = "
        "scalar");
  }
  at::assert_no_partial_overlap(self, mask);
  run_masked_fill(op_name, self, self, mask, value, value_tensor);
}

at::Tensor masked_fill_new(const char* op_name, const at::Tensor& self, const at::Tensor& mask,
                           const c10::Scalar* value, const at::Tensor& value_tensor) {
  check_mask(mask);
  at::Tensor result = at::empty(at::infer_size(mask.sizes(), self.sizes()), self.options());
  run_masked_fill(op_name, result, self, mask, value, value_tensor);
  return result;
}

// A CPU value tensor is read on the host (as ATen's CPU kernel does); a device
// one stays on the device.
std::optional<c10::Scalar> host_value(const at::Tensor& value) {
  if (value.device().is_cpu()) return value.item();
  return std::nullopt;
}

}  // namespace

at::Tensor where(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  at::Tensor result = at::empty({0}, self.options()
                                         .dtype(at::result_type(self, other))
                                         .device(where_device(condition, self, other)));
  return run_where("aten::where.self", condition, self, other, result);
}

at::Tensor& where_out(const at::Tensor& condition, const at::Tensor& self,
                      const at::Tensor& other, at::Tensor& out) {
  return run_where("aten::where.self_out", condition, self, other, out);
}

at::Tensor lerp_scalar(const at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight) {
  StructuredIterator<at::meta::structured_lerp_Scalar> iter;
  return run_lerp_scalar("aten::lerp.Scalar", iter, self, end, weight);
}

at::Tensor& lerp_scalar_(at::Tensor& self, const at::Tensor& end, const c10::Scalar& weight) {
  StructuredIterator<at::meta::structured_lerp_Scalar> iter(self, Target::kInPlace);
  run_lerp_scalar("aten::lerp_.Scalar", iter, self, end, weight);
  return self;
}

at::Tensor& lerp_scalar_out(const at::Tensor& self, const at::Tensor& end,
                            const c10::Scalar& weight, at::Tensor& out) {
  StructuredIterator<at::meta::structured_lerp_Scalar> iter(out, Target::kOut);
  run_lerp_scalar("aten::lerp.Scalar_out", iter, self, end, weight);
  return out;
}

at::Tensor lerp_tensor(const at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  StructuredIterator<at::meta::structured_lerp_Tensor> iter;
  return run_lerp_tensor("aten::lerp.Tensor", iter, self, end, weight);
}

at::Tensor& lerp_tensor_(at::Tensor& self, const at::Tensor& end, const at::Tensor& weight) {
  StructuredIterator<at::meta::structured_lerp_Tensor> iter(self, Target::kInPlace);
  run_lerp_tensor("aten::lerp_.Tensor", iter, self, end, weight);
  return self;
}

at::Tensor& lerp_tensor_out(const at::Tensor& self, const at::Tensor& end,
                            const at::Tensor& weight, at::Tensor& out) {
  StructuredIterator<at::meta::structured_lerp_Tensor> iter(out, Target::kOut);
  run_lerp_tensor("aten::lerp.Tensor_out", iter, self, end, weight);
  return out;
}

#define KILN_DEFINE_POINTWISE_SCALED(name, combine)                                              \
  at::Tensor name(const at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,   \
                  const c10::Scalar& value) {                                                    \
    StructuredIterator<at::meta::structured_##name> iter;                                        \
    return run_scaled("aten::" #name, #name, combine, iter, self, tensor1, tensor2, value);       \
  }                                                                                              \
  at::Tensor& name##_(at::Tensor& self, const at::Tensor& tensor1, const at::Tensor& tensor2,     \
                      const c10::Scalar& value) {                                                \
    StructuredIterator<at::meta::structured_##name> iter(self, Target::kInPlace);                \
    run_scaled("aten::" #name "_", #name, combine, iter, self, tensor1, tensor2, value);          \
    return self;                                                                                 \
  }                                                                                              \
  at::Tensor& name##_out(const at::Tensor& self, const at::Tensor& tensor1,                       \
                         const at::Tensor& tensor2, const c10::Scalar& value, at::Tensor& out) { \
    StructuredIterator<at::meta::structured_##name> iter(out, Target::kOut);                     \
    run_scaled("aten::" #name ".out", #name, combine, iter, self, tensor1, tensor2, value);       \
    return out;                                                                                  \
  }

KILN_DEFINE_POINTWISE_SCALED(addcmul, OpCode::kMultiply)
KILN_DEFINE_POINTWISE_SCALED(addcdiv, OpCode::kDivide)

#undef KILN_DEFINE_POINTWISE_SCALED

at::Tensor masked_fill_scalar(const at::Tensor& self, const at::Tensor& mask,
                              const c10::Scalar& value) {
  return masked_fill_new("aten::masked_fill.Scalar", self, mask, &value, at::Tensor());
}

at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask,
                                const c10::Scalar& value) {
  masked_fill_in_place("aten::masked_fill_.Scalar", self, mask, &value, at::Tensor());
  return self;
}

at::Tensor masked_fill_tensor(const at::Tensor& self, const at::Tensor& mask,
                              const at::Tensor& value) {
  check_value_tensor(value);
  std::optional<c10::Scalar> host = host_value(value);
  if (host.has_value()) {
    return masked_fill_new("aten::masked_fill.Tensor", self, mask, &*host, at::Tensor());
  }
  return masked_fill_new("aten::masked_fill.Tensor", self, mask, nullptr, value);
}

at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask,
                                const at::Tensor& value) {
  check_value_tensor(value);
  std::optional<c10::Scalar> host = host_value(value);
  if (host.has_value()) {
    masked_fill_in_place("aten::masked_fill_.Tensor", self, mask, &*host, at::Tensor());
  } else {
    masked_fill_in_place("aten::masked_fill_.Tensor", self, mask, nullptr, value);
  }
  return self;
}

}  // namespace kiln::torch_integration::compiled
