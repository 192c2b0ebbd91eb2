// The pointwise extras' opcodes (next_after, frexp_mantissa, frexp_exponent),
// generated, compiled and compared bit for bit with the C++ library.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_runner.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/verifier.h"

namespace kiln::ir {
namespace {

using testing_support::compile_kernel;
using testing_support::LaunchBuilder;

// out = op(in0[, in1]) over contiguous `dtype` values.
template <typename T>
std::vector<T> run(OpCode op, DType dtype, const std::vector<T>& a, const std::vector<T>& b = {}) {
  Builder builder(opcode_name(op), KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(dtype, Layout::kContiguous));
  ValueId value = opcode_arity(op) == 2
                      ? builder.binary(op, x, builder.load(builder.add_input(dtype, Layout::kContiguous)))
                      : builder.unary(op, x);
  builder.store(builder.add_output(dtype, Layout::kContiguous), value);
  Kernel kernel = builder.finish();
  EXPECT_TRUE(verify(kernel).ok());
  KernelEntry entry = compile_kernel(kernel);
  std::vector<T> out(a.size());
  if (entry == nullptr) return out;
  int64_t n = static_cast<int64_t>(a.size());
  LaunchBuilder launch({n});
  launch.operand(const_cast<T*>(a.data()), {1});
  if (!b.empty()) launch.operand(const_cast<T*>(b.data()), {1});
  launch.operand(out.data(), {1});
  entry(&launch.args, 0, n);
  return out;
}

template <typename T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0 || (std::isnan(a) && std::isnan(b));
}

template <typename T>
std::vector<T> special_values() {
  using limits = std::numeric_limits<T>;
  return {T(0), -T(0), T(1), T(-1), T(0.75), T(3), limits::denorm_min(), limits::min(),
          limits::max(), -limits::max(), limits::infinity(), -limits::infinity(), limits::quiet_NaN()};
}

template <typename T>
void expect_next_after(DType dtype) {
  std::vector<T> values = special_values<T>();
  std::vector<T> from, to;
  for (T a : values) {
    for (T b : values) {
      from.push_back(a);
      to.push_back(b);
    }
  }
  std::vector<T> out = run<T>(OpCode::kNextAfter, dtype, from, to);
  for (size_t i = 0; i < from.size(); ++i) {
    EXPECT_TRUE(same_bits(out[i], std::nextafter(from[i], to[i]))) << from[i] << " -> " << to[i];
  }
}

template <typename T>
void expect_frexp(DType dtype) {
  std::vector<T> values = special_values<T>();
  std::vector<T> mantissas = run<T>(OpCode::kFrexpMantissa, dtype, values);
  std::vector<T> exponents = run<T>(OpCode::kFrexpExponent, dtype, values);
  for (size_t i = 0; i < values.size(); ++i) {
    int exponent = 0;
    T mantissa = std::frexp(values[i], &exponent);
    EXPECT_TRUE(same_bits(mantissas[i], mantissa)) << values[i];
    if (std::isfinite(values[i])) EXPECT_EQ(exponents[i], T(exponent)) << values[i];
  }
}

TEST(PointwiseExtrasCodegenTest, NextAfterMatchesTheLibraryBitForBit) {
  expect_next_after<float>(DType::kFloat32);
  expect_next_after<double>(DType::kFloat64);
}

TEST(PointwiseExtrasCodegenTest, FrexpMatchesTheLibrary) {
  expect_frexp<float>(DType::kFloat32);
  expect_frexp<double>(DType::kFloat64);
}

TEST(PointwiseExtrasCodegenTest, VerifierRefusesIntegerOperands) {
  Builder builder("next_after_int", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kInt64, Layout::kContiguous));
  builder.store(builder.add_output(DType::kInt64, Layout::kContiguous),
                builder.binary(OpCode::kNextAfter, x, x));
  EXPECT_FALSE(verify(builder.finish()).ok());
}

}  // namespace
}  // namespace kiln::ir
