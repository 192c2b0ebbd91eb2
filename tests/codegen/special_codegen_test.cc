// Special-function opcodes: a kernel carries only the prelude parts its nodes
// need, and the helpers compute known values in float32 and float64.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel_runner.h"
#include "kiln/compiler/codegen/c_source.h"
#include "kiln/ir/builder.h"

namespace kiln::ir {
namespace {

using testing_support::compile_kernel;
using testing_support::LaunchBuilder;

Kernel unary_kernel(OpCode op, DType dtype) {
  Builder builder(opcode_name(op), KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(dtype, Layout::kContiguous));
  builder.store(builder.add_output(dtype, Layout::kContiguous), builder.unary(op, x));
  return builder.finish();
}

std::string source_of(const Kernel& kernel) {
  auto source = codegen::generate_c(kernel);
  EXPECT_TRUE(source.ok());
  return source.ok() ? source.value().text : "";
}

TEST(SpecialCodegenTest, IncludesOnlyThePreludePartsTheKernelUses) {
  std::string plain = source_of(unary_kernel(OpCode::kExp, DType::kFloat32));
  EXPECT_EQ(plain.find("kiln_digamma"), std::string::npos);
  EXPECT_EQ(plain.find("kiln_bessel_j0"), std::string::npos);
  std::string digamma = source_of(unary_kernel(OpCode::kDigamma, DType::kFloat32));
  EXPECT_NE(digamma.find("static double kiln_digamma"), std::string::npos);
  EXPECT_EQ(digamma.find("kiln_bessel_j0"), std::string::npos);
  EXPECT_EQ(digamma.find("kiln_chebyshev_t_f32"), std::string::npos);
}

template <typename T>
std::vector<T> run_unary(OpCode op, DType dtype, std::vector<T> input) {
  KernelEntry entry = compile_kernel(unary_kernel(op, dtype));
  std::vector<T> out(input.size());
  if (entry == nullptr) return out;
  int64_t n = static_cast<int64_t>(input.size());
  LaunchBuilder launch({n});
  launch.operand(input.data(), {1}).operand(out.data(), {1});
  entry(&launch.args, 0, n);
  return out;
}

TEST(SpecialCodegenTest, ComputesKnownValues) {
  // digamma(1) = -Euler's gamma; J0's first zero; erfinv(erf(0.5)) = 0.5.
  std::vector<double> digamma = run_unary<double>(OpCode::kDigamma, DType::kFloat64, {1.0, 0.0});
  EXPECT_NEAR(digamma[0], -0.57721566490153286, 1e-15);
  EXPECT_TRUE(std::isinf(digamma[1]) && digamma[1] < 0);
  std::vector<float> j0 = run_unary<float>(OpCode::kBesselJ0, DType::kFloat32, {2.4048255576957728f});
  EXPECT_NEAR(j0[0], 0.0f, 1e-7f);
  std::vector<double> erfinv = run_unary<double>(OpCode::kErfinv, DType::kFloat64, {std::erf(0.5), 1.0});
  EXPECT_NEAR(erfinv[0], 0.5, 1e-15);
  EXPECT_TRUE(std::isinf(erfinv[1]));
}

TEST(SpecialCodegenTest, PolynomialsTakeTheDegreeAsSecondOperand) {
  Builder builder("chebyshev_t", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kFloat64, Layout::kContiguous));
  ValueId n = builder.load(builder.add_input(DType::kFloat64, Layout::kContiguous));
  builder.store(builder.add_output(DType::kFloat64, Layout::kContiguous),
                builder.binary(OpCode::kChebyshevT, x, n));
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  std::vector<double> xs = {0.5, 0.3, 2.0, 0.5}, ns = {2.0, 3.9, 3.0, -1.0}, out(4);
  LaunchBuilder launch({4});
  launch.operand(xs.data(), {1}).operand(ns.data(), {1}).operand(out.data(), {1});
  entry(&launch.args, 0, 4);
  EXPECT_NEAR(out[0], -0.5, 1e-15);                       // T2 = 2x^2 - 1
  EXPECT_NEAR(out[1], 4 * 0.027 - 3 * 0.3, 1e-15);        // n = 3.9 truncates to 3
  EXPECT_NEAR(out[2], 26.0, 1e-13);                       // T3(2) = 4*8 - 6
  EXPECT_EQ(out[3], 0.0);                                 // negative degree
}

}  // namespace
}  // namespace kiln::ir
