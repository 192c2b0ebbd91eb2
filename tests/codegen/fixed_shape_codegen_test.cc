// Kernels specialised to one shape (ir::FixedShape): the same results as the
// kernel that takes its shape at launch, over every way a launch range can cut
// the rows (pointwise) or the outputs (reductions), and the verifier's checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernel_runner.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/verifier.h"

namespace kiln::ir {
namespace {

using testing_support::compile_kernel;
using testing_support::LaunchBuilder;

// Rank 3, shape (5, 3, 4) fastest first: out = max(x, y) * scale + c0 + 10 c1
// + 100 c2 + 0.001 * linear, with x read through stride 2 (a pooling window's
// column), y broadcast along dims 0 and 2 (a per-channel parameter).
constexpr int64_t kSizes[3] = {5, 3, 4};
constexpr int64_t kElements = 5 * 3 * 4;

Kernel strided_kernel(bool fixed) {
  Builder builder("fixed_shape_mix", KernelKind::kPointwise, 3);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kStrided));
  ValueId y = builder.load(builder.add_input(DType::kFloat32, Layout::kBroadcast));
  ValueId scale = builder.cast(builder.scalar(builder.add_scalar(DType::kFloat64)), DType::kFloat32);
  ValueId value = builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMaximum, x, y), scale);
  auto coordinate = [&](int dim, double weight) {
    return builder.binary(OpCode::kMultiply, builder.cast(builder.coordinate(dim), DType::kFloat32),
                          builder.constant(weight, DType::kFloat32));
  };
  value = builder.binary(OpCode::kAdd, value, coordinate(0, 1));
  value = builder.binary(OpCode::kAdd, value, coordinate(1, 10));
  value = builder.binary(OpCode::kAdd, value, coordinate(2, 100));
  ValueId linear = builder.binary(OpCode::kMultiply, builder.cast(builder.linear_index(), DType::kFloat32),
                                  builder.constant(0.001, DType::kFloat32));
  value = builder.binary(OpCode::kAdd, value, linear);
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), value);
  Kernel kernel = builder.finish();
  if (fixed) {
    kernel.fixed_shape.sizes = {kSizes[0], kSizes[1], kSizes[2]};
    kernel.fixed_shape.strides = {{2, 10, 30}, {0, 1, 0}, {1, 5, 15}};
  }
  return kernel;
}

struct Buffers {
  std::vector<float> x = std::vector<float>(2 * kElements), y = {0.25f, 3.0f, -1.0f}, out =
      std::vector<float>(kElements, -7.0f);
  Buffers() {
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37) % 11) * 0.5f - 2.0f;
  }
};

LaunchBuilder launch_of(Buffers& buffers) {
  LaunchBuilder launch({kSizes[0], kSizes[1], kSizes[2]});
  launch.operand(buffers.x.data(), {2, 10, 30}).operand(buffers.y.data(), {0, 1, 0})
      .operand(buffers.out.data(), {1, 5, 15});
  launch.real(0, 1.5);
  return launch;
}

TEST(FixedShapeCodegenTest, MatchesTheLaunchShapedKernelOverEveryRangeSplit) {
  KernelEntry generic = compile_kernel(strided_kernel(false));
  KernelEntry fixed = compile_kernel(strided_kernel(true));
  ASSERT_NE(generic, nullptr);
  ASSERT_NE(fixed, nullptr);
  Buffers expected;
  LaunchBuilder expected_launch = launch_of(expected);
  generic(&expected_launch.args, 0, kElements);
  // Two pieces cut at every position: inside a row, on a row boundary, inside
  // a plane, on a plane boundary, and one empty piece at either end.
  for (int64_t cut = 0; cut <= kElements; ++cut) {
    Buffers actual;
    LaunchBuilder launch = launch_of(actual);
    fixed(&launch.args, 0, cut);
    fixed(&launch.args, cut, kElements);
    EXPECT_EQ(actual.out, expected.out) << "cut at " << cut;
  }
  // Three pieces, the middle one shorter than a row.
  Buffers actual;
  LaunchBuilder launch = launch_of(actual);
  fixed(&launch.args, 0, 7);
  fixed(&launch.args, 7, 9);
  fixed(&launch.args, 9, kElements);
  EXPECT_EQ(actual.out, expected.out);
}

TEST(FixedShapeCodegenTest, OneDimKernelCoversWholeAndPartialRanges) {
  Builder builder("fixed_negate", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kFloat64, Layout::kContiguous));
  builder.store(builder.add_output(DType::kFloat64, Layout::kContiguous), builder.unary(OpCode::kNegate, x));
  Kernel kernel = builder.finish();
  kernel.fixed_shape.sizes = {9};
  kernel.fixed_shape.strides = {{1}, {1}};
  KernelEntry entry = compile_kernel(kernel);
  ASSERT_NE(entry, nullptr);
  std::vector<double> x_data = {1, 2, 3, 4, 5, 6, 7, 8, 9}, out(9, 0.0);
  LaunchBuilder launch({9});
  launch.operand(x_data.data(), {1}).operand(out.data(), {1});
  entry(&launch.args, 0, 4);
  entry(&launch.args, 4, 9);
  EXPECT_EQ(out, (std::vector<double>{-1, -2, -3, -4, -5, -6, -7, -8, -9}));
  std::fill(out.begin(), out.end(), 0.0);
  entry(&launch.args, 0, 9);
  EXPECT_EQ(out, (std::vector<double>{-1, -2, -3, -4, -5, -6, -7, -8, -9}));
}

// A reduction of x (6 x 19, read with strides {1, 6}: column-major) into 6
// row sums (inner: dim 1 reduced and vectorised) or, transposed, 19 column
// maxima (outer: dim 0 kept and vectorised).
Kernel reduction_kernel(ReduceOp op, bool inner, const FixedShape* fixed) {
  Builder builder("fixed_reduction", KernelKind::kReduction, 2);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kStrided));
  builder.reduce(op, builder.binary(OpCode::kMultiply, x, builder.constant(2.0, DType::kFloat32)), 1, inner);
  builder.store(builder.add_output(DType::kFloat32, inner ? Layout::kBroadcast : Layout::kContiguous),
                builder.accumulator());
  Kernel kernel = builder.finish();
  if (fixed != nullptr) kernel.fixed_shape = *fixed;
  return kernel;
}

TEST(FixedShapeCodegenTest, ReductionsMatchTheLaunchShapedKernels) {
  const int64_t rows = 6, columns = 19;
  std::vector<float> x(rows * columns);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 13) % 17) - 8.0f;
  // Inner: kept dim 0 = rows (stride 1 in x), reduced dim 1 = columns (stride rows).
  // Outer: kept dim 0 = columns (stride rows), reduced dim 1 = rows (stride 1);
  // either way x is strided along the vectorised dim.
  struct Case {
    ReduceOp op;
    bool inner;
    std::vector<int64_t> sizes, x_strides, out_strides;
  };
  for (const Case& c : {Case{ReduceOp::kSum, true, {rows, columns}, {1, rows}, {1, 0}},
                        Case{ReduceOp::kMax, false, {columns, rows}, {rows, 1}, {1, 0}}}) {
    FixedShape fixed{c.sizes, {c.x_strides, c.out_strides}};
    KernelEntry generic = compile_kernel(reduction_kernel(c.op, c.inner, nullptr));
    KernelEntry specialised = compile_kernel(reduction_kernel(c.op, c.inner, &fixed));
    ASSERT_NE(generic, nullptr);
    ASSERT_NE(specialised, nullptr);
    const int64_t outputs = c.sizes[0];
    std::vector<float> expected(outputs, -1.0f);
    LaunchBuilder expected_launch(c.sizes);
    expected_launch.operand(x.data(), c.x_strides).operand(expected.data(), c.out_strides);
    generic(&expected_launch.args, 0, outputs);
    for (int64_t cut = 0; cut <= outputs; ++cut) {
      std::vector<float> actual(outputs, -1.0f);
      LaunchBuilder launch(c.sizes);
      launch.operand(x.data(), c.x_strides).operand(actual.data(), c.out_strides);
      specialised(&launch.args, 0, cut);
      specialised(&launch.args, cut, outputs);
      EXPECT_EQ(actual, expected) << reduce_op_name(c.op) << " cut at " << cut;
    }
  }
}

TEST(FixedShapeCodegenTest, VerifierRejectsShapesThatContradictTheKernel) {
  Kernel kernel = strided_kernel(true);
  EXPECT_TRUE(verify(kernel).ok());

  Kernel wrong_rank = kernel;
  wrong_rank.fixed_shape.sizes.pop_back();
  EXPECT_FALSE(verify(wrong_rank).ok());

  Kernel missing_operand = kernel;
  missing_operand.fixed_shape.strides.pop_back();
  EXPECT_FALSE(verify(missing_operand).ok());

  Kernel broadcast_with_stride = kernel;
  broadcast_with_stride.fixed_shape.strides[1][0] = 3;  // input 1 is a broadcast operand
  EXPECT_FALSE(verify(broadcast_with_stride).ok());

  Kernel contiguous_with_stride = kernel;
  contiguous_with_stride.fixed_shape.strides[2][0] = 2;  // the output is contiguous
  EXPECT_FALSE(verify(contiguous_with_stride).ok());

  Kernel empty_dim = kernel;
  empty_dim.fixed_shape.sizes[1] = 0;
  EXPECT_FALSE(verify(empty_dim).ok());
}

}  // namespace
}  // namespace kiln::ir
