#include "kiln/aten/compiled/factory/random_ops.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/DistributionTemplates.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones_like.h>

#include <cmath>
#include <functional>
#include <limits>
#include <mutex>

#include "kiln/aten/compiled/launch/elementwise.h"
#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/c10/generator.h"

namespace kiln::torch_integration::compiled {
namespace {

using ir::DType;
using ir::OpCode;
using ir::ValueId;

constexpr double kPi = 3.14159265358979323846;

// The seed and a fresh offset of the generator `generator` (or the default
// generator of `self`'s device), reserved under its mutex.
PhiloxArgs reserve_philox(const std::optional<at::Generator>& generator, const at::Tensor& self) {
  auto* kiln_generator = at::get_generator_or_default<KilnGenerator>(
      generator, default_generator(self.device().index()));
  std::lock_guard<std::mutex> lock(kiln_generator->mutex_);
  PhiloxArgs args;
  args.seed = kiln_generator->current_seed();
  args.offset = kiln_generator->reserve_blocks(1);
  return args;
}

// Fills `outputs` (outputs[0] is the tensor drawn for) from `body`, with a
// fresh Philox offset.
void launch_random(const char* op_name, std::string_view key, c10::ArrayRef<at::Tensor> inputs,
                   c10::ArrayRef<at::Tensor> outputs, c10::ArrayRef<c10::Scalar> scalars,
                   const std::optional<at::Generator>& generator, const ElementwiseBody& body) {
  if (outputs[0].numel() == 0) return;
  ElementwiseOptions options;
  options.philox = reserve_philox(generator, outputs[0]);
  launch_elementwise(op_name, key, inputs, outputs, scalars, body, options);
}

DType compute_of(DType storage) { return storage == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32; }

// A uniform value in [0, 1) as ATen's uniform_real: the low `digits` bits of
// one random word (float types: their mantissa digits), or of two words for
// float64 (53 bits).
ValueId uniform_unit(ir::Builder& builder, DType storage, int first_word) {
  if (storage == DType::kFloat64) {
    ValueId high = builder.binary(OpCode::kBitwiseAnd, builder.random_bits(first_word),
                                  builder.constant((1 << 21) - 1, DType::kInt64));
    ValueId bits = builder.binary(OpCode::kBitwiseOr,
                                  builder.binary(OpCode::kShiftLeft, high, builder.constant(32, DType::kInt64)),
                                  builder.random_bits(first_word + 1));
    return builder.binary(OpCode::kMultiply, builder.cast(bits, DType::kFloat64),
                          builder.constant(std::ldexp(1.0, -53), DType::kFloat64));
  }
  int digits = storage == DType::kFloat16 ? 11 : storage == DType::kBFloat16 ? 8 : 24;
  ValueId bits = builder.binary(OpCode::kBitwiseAnd, builder.random_bits(first_word),
                                builder.constant((int64_t{1} << digits) - 1, DType::kInt64));
  return builder.binary(OpCode::kMultiply, builder.cast(bits, DType::kFloat32),
                        builder.constant(std::ldexp(1.0, -digits), DType::kFloat32));
}

// A standard normal value (Box-Muller) in `storage`'s compute dtype.
ValueId standard_normal(ir::Builder& builder, DType storage) {
  DType type = compute_of(storage);
  DType draw = storage == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  ValueId one = builder.constant(1, type);
  ValueId u1 = builder.binary(OpCode::kSubtract, one, uniform_unit(builder, draw, 0));  // (0, 1]
  ValueId u2 = uniform_unit(builder, draw, draw == DType::kFloat64 ? 2 : 1);
  ValueId radius = builder.unary(
      OpCode::kSqrt, builder.binary(OpCode::kMultiply, builder.constant(-2, type), builder.unary(OpCode::kLog, u1)));
  ValueId theta = builder.binary(OpCode::kMultiply, builder.constant(2 * kPi, type), u2);
  return builder.binary(OpCode::kMultiply, radius, builder.unary(OpCode::kCos, theta));
}

DType storage_of(const at::TensorBase& self, const char* op_name) {
  return require_ir_dtype(self.scalar_type(), op_name);
}

// The self tensor of a nullary TensorIterator that DistributionTemplates
// built over it.
at::Tensor iterator_self(at::TensorIteratorBase& iter) { return iter.tensor(0); }

void uniform_fill(const at::Tensor& self, double from, double to, std::optional<at::Generator> generator) {
  const char* op_name = "aten::uniform_";
  DType storage = storage_of(self, op_name);
  const c10::Scalar scalars[] = {from, to};
  launch_random(op_name, "uniform", {}, {self}, scalars, generator,
                [storage](ElementwiseContext& context) -> std::vector<ValueId> {
                  ir::Builder& builder = context.builder;
                  DType type = compute_of(storage);
                  ValueId low = builder.cast(context.scalars[0], storage);
                  ValueId high = builder.cast(context.scalars[1], storage);
                  ValueId unit = builder.cast(uniform_unit(builder, storage, 0), type);
                  return {builder.binary(OpCode::kAdd,
                                         builder.binary(OpCode::kMultiply, unit,
                                                        builder.binary(OpCode::kSubtract, high, low)),
                                         low)};
                });
}

template <typename RNG>
struct UniformKernel {
  void operator()(at::TensorIteratorBase& iter, double from, double to, std::optional<at::Generator> generator) {
    uniform_fill(iterator_self(iter), from, to, std::move(generator));
  }
};

template <typename RNG>
struct NormalKernel {
  void operator()(const at::TensorBase& self_base, double mean, double std,
                  std::optional<at::Generator> generator) {
    const char* op_name = "aten::normal_";
    at::Tensor self(self_base);
    TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                                "\"normal_kernel_cpu\" not implemented for '", self.scalar_type(), "'");
    DType storage = storage_of(self, op_name);
    const c10::Scalar scalars[] = {mean, std};
    launch_random(op_name, "normal", {}, {self}, scalars, generator,
                  [storage](ElementwiseContext& context) -> std::vector<ValueId> {
                    ir::Builder& builder = context.builder;
                    DType type = compute_of(storage);
                    ValueId z = standard_normal(builder, storage);
                    return {builder.binary(OpCode::kAdd,
                                           builder.binary(OpCode::kMultiply, z, builder.cast(context.scalars[1], type)),
                                           builder.cast(context.scalars[0], type))};
                  });
  }
};

template <typename RNG>
struct BernoulliKernel {
  // Scalar p.
  void operator()(const at::TensorBase& self_base, double p, std::optional<at::Generator> generator) {
    const char* op_name = "aten::bernoulli_.float";
    at::Tensor self(self_base);
    storage_of(self, op_name);
    const c10::Scalar scalars[] = {p};
    launch_random(op_name, "bernoulli_float", {}, {self}, scalars, generator,
                  [](ElementwiseContext& context) -> std::vector<ValueId> {
                    ir::Builder& builder = context.builder;
                    ValueId unit = uniform_unit(builder, DType::kFloat32, 0);
                    ValueId p_value = builder.cast(context.scalars[0], DType::kFloat32);
                    return {builder.binary(OpCode::kLess, unit, p_value)};
                  });
  }
  // Tensor p, broadcast to self.
  void operator()(const at::TensorBase& self_base, const at::TensorBase& p_base,
                  std::optional<at::Generator> generator) {
    const char* op_name = "aten::bernoulli_.Tensor";
    at::Tensor self(self_base);
    at::Tensor p(p_base);
    storage_of(self, op_name);
    DType p_storage = storage_of(p, op_name);
    if (p.device() != self.device()) p = p.to(self.device());
    c10::MaybeOwned<at::Tensor> expanded = at::expand_inplace(self, p);
    DType draw = p_storage == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
    launch_random(op_name, "bernoulli_tensor", {*expanded}, {self}, {}, generator,
                  [draw](ElementwiseContext& context) -> std::vector<ValueId> {
                    ir::Builder& builder = context.builder;
                    ValueId unit = uniform_unit(builder, draw, 0);
                    return {builder.binary(OpCode::kLess, unit, builder.cast(context.inputs[0], draw))};
                  });
  }
};

// from + r % range with r a uniform 32-bit word when range < 2^32, else 63
// random bits (no modulo at range 2^63); `full` draws all 64 bits.
void random_fill(const char* op_name, const at::Tensor& self, uint64_t range, int64_t from, bool full,
                 std::optional<at::Generator> generator) {
  storage_of(self, op_name);
  constexpr uint64_t kHalf64 = uint64_t{1} << 63;
  TORCH_CHECK_NOT_IMPLEMENTED(full || range <= kHalf64, op_name, ": the kiln device draws random_ ranges "
                              "of at most 2^63 values (or the full int64 range), got ", range);
  const bool narrow = !full && range < (uint64_t{1} << 32);
  const bool modulo = !full && range < kHalf64;
  const c10::Scalar scalars[] = {static_cast<int64_t>(modulo ? range : 1), from};
  const char* key = full ? "random_64" : narrow ? "random_32" : modulo ? "random_63" : "random_63_all";
  launch_random(op_name, key, {}, {self}, scalars, generator,
                [full, narrow, modulo](ElementwiseContext& context) -> std::vector<ValueId> {
                  ir::Builder& builder = context.builder;
                  ValueId bits;
                  ValueId shift = builder.constant(32, DType::kInt64);
                  if (narrow) {
                    bits = builder.random_bits(0);
                  } else {
                    ValueId high = builder.random_bits(0);
                    if (!full) high = builder.binary(OpCode::kBitwiseAnd, high, builder.constant(0x7fffffff, DType::kInt64));
                    bits = builder.binary(OpCode::kBitwiseOr, builder.binary(OpCode::kShiftLeft, high, shift),
                                          builder.random_bits(1));
                  }
                  if (full) return {bits};
                  if (modulo) bits = builder.binary(OpCode::kRemainder, bits, context.scalars[0]);
                  return {builder.binary(OpCode::kAdd, bits, context.scalars[1])};
                });
}

template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t from,
                  std::optional<at::Generator> generator) {
    random_fill("aten::random_.from", iterator_self(iter), range, from, false, std::move(generator));
  }
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> generator) {
    random_fill("aten::random_.from", iterator_self(iter), 0, 0, true, std::move(generator));
  }
};

// random_() draws [0, 2^digits] for floating types and [0, max] for
// integers, as ATen's uniform_int_distribution.
template <typename RNG>
struct RandomKernel {
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> generator) {
    at::Tensor self = iterator_self(iter);
    uint64_t range = 0;
    switch (self.scalar_type()) {
      case at::kBool: range = 2; break;
      case at::kByte: range = uint64_t{1} << 8; break;
      case at::kChar: range = uint64_t{1} << 7; break;
      case at::kShort: range = uint64_t{1} << 15; break;
      case at::kInt: range = uint64_t{1} << 31; break;
      case at::kLong: range = uint64_t{1} << 63; break;
      case at::kHalf: range = (uint64_t{1} << 11) + 1; break;
      case at::kBFloat16: range = (uint64_t{1} << 8) + 1; break;
      case at::kFloat: range = (uint64_t{1} << 24) + 1; break;
      case at::kDouble: range = (uint64_t{1} << 53) + 1; break;
      default:
        TORCH_CHECK_NOT_IMPLEMENTED(false, "\"random_kernel_cpu\" not implemented for '",
                                    self.scalar_type(), "'");
    }
    random_fill("aten::random_", self, range, 0, false, std::move(generator));
  }
};

template <typename RNG>
struct ExponentialKernel {
  void operator()(at::TensorIteratorBase& iter, double lambda, std::optional<at::Generator> generator) {
    const char* op_name = "aten::exponential_";
    at::Tensor self = iterator_self(iter);
    TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                                "\"exponential_cpu\" not implemented for '", self.scalar_type(), "'");
    DType storage = storage_of(self, op_name);
    const c10::Scalar scalars[] = {lambda};
    launch_random(op_name, "exponential", {}, {self}, scalars, generator,
                  [storage](ElementwiseContext& context) -> std::vector<ValueId> {
                    // -1 / lambda * log1p(-u), as ATen's CPU transformation, with u a
                    // float64 uniform for every dtype, as ATen's exponential_distribution<double>
                    // draws it: a u of the storage's precision is 0 once in 256 bfloat16 draws
                    // (2^11 float16, 2^24 float32), and the result then exactly 0, which an
                    // exponential variate never is (multinomial's race divides by it).
                    ir::Builder& builder = context.builder;
                    DType type = DType::kFloat64;
                    ValueId unit = uniform_unit(builder, DType::kFloat64, 0);
                    ValueId scale = builder.binary(OpCode::kDivide, builder.constant(-1, type),
                                                   builder.cast(context.scalars[0], type));
                    ValueId value = builder.binary(
                        OpCode::kMultiply, scale, builder.unary(OpCode::kLog1p, builder.unary(OpCode::kNegate, unit)));
                    return {storage == DType::kFloat64 ? value : builder.cast(value, compute_of(storage))};
                  });
  }
};

// A floating fill from one uniform value `unit` in [0, 1) and the op's
// scalars, for the distributions ATen derives from a single uniform draw.
using UnitTransform = std::function<ValueId(ir::Builder&, ValueId unit, const std::vector<ValueId>& scalars,
                                            DType type)>;

void unit_fill(const char* op_name, const char* key, const at::Tensor& self, c10::ArrayRef<c10::Scalar> scalars,
               const std::optional<at::Generator>& generator, UnitTransform transform) {
  DType storage = storage_of(self, op_name);
  launch_random(op_name, key, {}, {self}, scalars, generator,
                [storage, transform](ElementwiseContext& context) -> std::vector<ValueId> {
                  DType type = compute_of(storage);
                  std::vector<ValueId> values;
                  for (ValueId scalar : context.scalars) values.push_back(context.builder.cast(scalar, type));
                  ValueId unit = context.builder.cast(uniform_unit(context.builder, storage, 0), type);
                  return {transform(context.builder, unit, values, type)};
                });
}

template <typename RNG>
struct LogNormalKernel {
  void operator()(at::TensorIteratorBase& iter, double mean, double std, std::optional<at::Generator> generator) {
    const char* op_name = "aten::log_normal_";
    at::Tensor self = iterator_self(iter);
    TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                                "\"log_normal_cpu\" not implemented for '", self.scalar_type(), "'");
    DType storage = storage_of(self, op_name);
    const c10::Scalar scalars[] = {mean, std};
    launch_random(op_name, "log_normal", {}, {self}, scalars, generator,
                  [storage](ElementwiseContext& context) -> std::vector<ValueId> {
                    ir::Builder& builder = context.builder;
                    DType type = compute_of(storage);
                    ValueId z = standard_normal(builder, storage);
                    ValueId normal = builder.binary(
                        OpCode::kAdd, builder.binary(OpCode::kMultiply, z, builder.cast(context.scalars[1], type)),
                        builder.cast(context.scalars[0], type));
                    return {builder.unary(OpCode::kExp, normal)};
                  });
  }
};

template <typename RNG>
struct CauchyKernel {
  void operator()(at::TensorIteratorBase& iter, double median, double sigma, std::optional<at::Generator> generator) {
    // median + sigma * tan(pi * (u - 1/2)), as ATen's transformation.
    const c10::Scalar scalars[] = {median, sigma};
    unit_fill("aten::cauchy_", "cauchy", iterator_self(iter), scalars, generator,
              [](ir::Builder& builder, ValueId unit, const std::vector<ValueId>& values, DType type) {
                ValueId angle = builder.binary(OpCode::kMultiply, builder.constant(kPi, type),
                                               builder.binary(OpCode::kSubtract, unit, builder.constant(0.5, type)));
                return builder.binary(OpCode::kAdd, values[0],
                                      builder.binary(OpCode::kMultiply, values[1], builder.unary(OpCode::kTan, angle)));
              });
  }
};

template <typename RNG>
struct GeometricKernel {
  void operator()(at::TensorIteratorBase& iter, double p, std::optional<at::Generator> generator) {
    // ceil(log(u) / log1p(-p)) with u in (0, 1], as ATen's transformation.
    at::Tensor self = iterator_self(iter);
    if (!at::isFloatingType(self.scalar_type())) {
      // Integer outputs draw in float32, as the CPU's kernel.
      at::Tensor values = at::empty_like(self, self.options().dtype(at::kFloat));
      (*this)(values, p, generator);
      self.copy_(values);
      return;
    }
    (*this)(self, p, generator);
  }
  void operator()(const at::Tensor& self, double p, const std::optional<at::Generator>& generator) {
    const c10::Scalar scalars[] = {p};
    unit_fill("aten::geometric_", "geometric", self, scalars, generator,
              [](ir::Builder& builder, ValueId unit, const std::vector<ValueId>& values, DType type) {
                ValueId open = builder.binary(OpCode::kSubtract, builder.constant(1, type), unit);  // (0, 1]
                ValueId ratio = builder.binary(
                    OpCode::kDivide, builder.unary(OpCode::kLog, open),
                    builder.unary(OpCode::kLog1p, builder.unary(OpCode::kNegate, values[0])));
                return builder.unary(OpCode::kCeil, ratio);
              });
  }
};

}  // namespace

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> generator) {
  return at::native::templates::uniform_impl_<UniformKernel, KilnGenerator>(self, from, to, std::move(generator));
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator) {
  return at::native::templates::normal_impl_<NormalKernel, KilnGenerator>(self, mean, std, std::move(generator));
}

at::Tensor& bernoulli_float_(at::Tensor& self, double p, std::optional<at::Generator> generator) {
  return at::native::templates::bernoulli_impl_<BernoulliKernel, KilnGenerator>(self, p, std::move(generator));
}

at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> generator) {
  return at::native::templates::bernoulli_impl_<BernoulliKernel, KilnGenerator>(self, p, std::move(generator));
}

at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> generator) {
  return at::native::templates::random_impl<RandomKernel, KilnGenerator>(self, std::move(generator));
}

at::Tensor& random_to_(at::Tensor& self, int64_t to, std::optional<at::Generator> generator) {
  return at::native::templates::random_from_to_impl<RandomFromToKernel, KilnGenerator>(self, 0, to,
                                                                                        std::move(generator));
}

at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to,
                         std::optional<at::Generator> generator) {
  return at::native::templates::random_from_to_impl<RandomFromToKernel, KilnGenerator>(self, from, to,
                                                                                        std::move(generator));
}

at::Tensor& exponential_(at::Tensor& self, double lambda, std::optional<at::Generator> generator) {
  return at::native::templates::exponential_impl_<ExponentialKernel, KilnGenerator>(self, lambda,
                                                                                    std::move(generator));
}

at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> generator) {
  return at::native::templates::log_normal_impl_<LogNormalKernel, KilnGenerator>(self, mean, std,
                                                                                 std::move(generator));
}

at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> generator) {
  return at::native::templates::cauchy_impl_<CauchyKernel, KilnGenerator>(self, median, sigma,
                                                                          std::move(generator));
}

at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> generator) {
  return at::native::templates::geometric_impl_<GeometricKernel, KilnGenerator>(self, p, std::move(generator));
}

at::Tensor normal_tensor_float(const at::Tensor& mean, double std, std::optional<at::Generator> generator) {
  return at::native::templates::normal_impl<NormalKernel, KilnGenerator>(mean, std, std::move(generator));
}

at::Tensor& normal_tensor_float_out(const at::Tensor& mean, double std, std::optional<at::Generator> generator,
                                    at::Tensor& out) {
  return at::native::templates::normal_out_impl<NormalKernel, KilnGenerator>(out, mean, std,
                                                                             std::move(generator));
}

at::Tensor normal_float_tensor(double mean, const at::Tensor& std, std::optional<at::Generator> generator) {
  return at::native::templates::normal_impl<NormalKernel, KilnGenerator>(mean, std, std::move(generator));
}

at::Tensor& normal_float_tensor_out(double mean, const at::Tensor& std, std::optional<at::Generator> generator,
                                    at::Tensor& out) {
  return at::native::templates::normal_out_impl<NormalKernel, KilnGenerator>(out, mean, std,
                                                                             std::move(generator));
}

at::Tensor normal_tensor_tensor(const at::Tensor& mean, const at::Tensor& std,
                                std::optional<at::Generator> generator) {
  return at::native::templates::normal_impl<NormalKernel, KilnGenerator>(mean, std, std::move(generator));
}

at::Tensor& normal_tensor_tensor_out(const at::Tensor& mean, const at::Tensor& std,
                                     std::optional<at::Generator> generator, at::Tensor& out) {
  return at::native::templates::normal_out_impl<NormalKernel, KilnGenerator>(out, mean, std,
                                                                             std::move(generator));
}

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p,
                                                  std::optional<bool> train) {
  const char* op_name = "aten::native_dropout";
  if (input.numel() == 0) return {input, at::empty_like(input)};
  if (train.has_value() && !*train) {
    return {input.clone(), at::ones_like(input, input.options().dtype(at::kBool))};
  }
  const double keep = 1.0 - p;
  TORCH_CHECK(0 <= keep && keep <= 1, "bernoulli_ expects p to be in [0, 1], but got p=", keep);
  TORCH_CHECK(at::isFloatingType(input.scalar_type()), "result type Float can't be cast to the desired "
              "output type ", input.scalar_type());
  const double scale = keep == 0.0 ? 0.0 : 1.0 / keep;
  at::Tensor output = at::empty_like(input);
  at::Tensor mask = at::empty_like(input, input.options().dtype(at::kBool));
  DType storage = require_ir_dtype(input.scalar_type(), op_name);
  const c10::Scalar scalars[] = {keep, scale};
  // input * mask * scale, as ATen's CPU kernel: a dropped inf or NaN stays NaN.
  launch_random(op_name, "native_dropout", {input}, {output, mask}, scalars, std::nullopt,
                [storage](ElementwiseContext& context) -> std::vector<ValueId> {
                  ir::Builder& builder = context.builder;
                  DType type = compute_of(storage);
                  DType draw = storage == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
                  ValueId kept = builder.binary(OpCode::kLess, uniform_unit(builder, draw, 0),
                                                builder.cast(context.scalars[0], draw));
                  ValueId factor = builder.select(kept, builder.constant(1, type), builder.constant(0, type));
                  ValueId masked = builder.binary(OpCode::kMultiply, context.inputs[0], factor);
                  return {builder.binary(OpCode::kMultiply, masked, builder.cast(context.scalars[1], type)), kept};
                });
  return {output, mask};
}

at::Tensor native_dropout_backward(const at::Tensor& grad_output, const at::Tensor& mask, double scale) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be Bool Scalar Type", mask.scalar_type());
  check_same_device({grad_output, mask});
  if (!at::isFloatingType(grad_output.scalar_type()) || !grad_output.sizes().equals(mask.sizes())) {
    return grad_output.mul(mask).mul(scale);  // ATen's own arithmetic, compiled op by op
  }
  at::Tensor result = at::empty_like(grad_output);
  DType storage = require_ir_dtype(grad_output.scalar_type(), "aten::native_dropout_backward");
  launch_elementwise("aten::native_dropout_backward", "native_dropout_backward", {grad_output, mask}, {result},
                     {scale}, [storage](ElementwiseContext& context) -> std::vector<ValueId> {
                       ir::Builder& builder = context.builder;
                       DType type = compute_of(storage);
                       ValueId factor = builder.select(context.inputs[1], builder.constant(1, type),
                                                       builder.constant(0, type));
                       ValueId masked = builder.cast(builder.binary(OpCode::kMultiply, context.inputs[0], factor), storage);
                       return {builder.binary(OpCode::kMultiply, masked, builder.cast(context.scalars[0], type))};
                     });
  return result;
}

}  // namespace kiln::torch_integration::compiled
