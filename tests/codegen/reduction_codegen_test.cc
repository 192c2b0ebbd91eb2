// Generated reduction kernels, compiled and run on host buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernel_runner.h"
#include "kiln/ir/builder.h"

namespace kiln::ir {
namespace {

using testing_support::compile_kernel;
using testing_support::LaunchBuilder;

// Reduces a [rows, columns] float tensor (kept dim first) with `op`.
Kernel reduction_kernel(ReduceOp op, bool inner, DType output) {
  Builder builder(reduce_op_name(op), KernelKind::kReduction, 2);
  int input = builder.add_input(DType::kFloat32, Layout::kContiguous);
  builder.reduce(op, builder.load(input), 1, inner);
  ValueId result = (op == ReduceOp::kArgMax || op == ReduceOp::kArgMin) ? builder.accumulator_index()
                                                                        : builder.accumulator();
  builder.store(builder.add_output(output, inner ? Layout::kStrided : Layout::kContiguous), result);
  return builder.finish();
}

TEST(ReductionCodegenTest, RowSumOverLengthsAroundTheLaneCount) {
  KernelEntry entry = compile_kernel(reduction_kernel(ReduceOp::kSum, true, DType::kFloat32));
  ASSERT_NE(entry, nullptr);
  for (int64_t length : {0, 1, 15, 16, 17, 100}) {
    const int64_t rows = 3;
    std::vector<float> in(rows * length), out(rows, -1.0f);
    std::vector<double> expected(rows, 0.0);
    for (int64_t i = 0; i < rows * length; ++i) {
      in[i] = static_cast<float>(i % 7) - 2.5f;
      expected[i / length] += in[i];
    }
    // Kept dim 0 = rows (stride length), reduced dim 1 = columns (stride 1).
    LaunchBuilder launch({rows, length});
    launch.operand(in.data(), {length, 1}).operand(out.data(), {1, 0});
    entry(&launch.args, 0, rows);
    for (int64_t row = 0; row < rows; ++row) EXPECT_FLOAT_EQ(out[row], expected[row]) << length;
  }
}

TEST(ReductionCodegenTest, MeanEpilogueOverTwoReducedDims) {
  // [2 kept, 3 x 5 reduced], epilogue multiplies by a scalar 1/count.
  Builder builder("mean", KernelKind::kReduction, 3);
  int input = builder.add_input(DType::kFloat32, Layout::kContiguous);
  builder.reduce(ReduceOp::kSum, builder.load(input), 1, true);
  ValueId scale = builder.cast(builder.scalar(builder.add_scalar(DType::kFloat64)), DType::kFloat32);
  builder.store(builder.add_output(DType::kFloat32, Layout::kStrided),
                builder.binary(OpCode::kMultiply, builder.accumulator(), scale));
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  std::vector<float> in(30), out(2);
  for (int i = 0; i < 30; ++i) in[i] = static_cast<float>(i);
  LaunchBuilder launch({2, 5, 3});
  launch.operand(in.data(), {15, 1, 5}).operand(out.data(), {1, 0, 0}).real(0, 1.0 / 15);
  entry(&launch.args, 0, 2);
  EXPECT_FLOAT_EQ(out[0], 7.0f);
  EXPECT_FLOAT_EQ(out[1], 22.0f);
}

TEST(ReductionCodegenTest, ColumnMaxPropagatesNan) {
  KernelEntry entry = compile_kernel(reduction_kernel(ReduceOp::kMax, false, DType::kFloat32));
  ASSERT_NE(entry, nullptr);
  const int64_t rows = 4, columns = 70;  // more columns than one block
  std::vector<float> in(rows * columns), out(columns);
  for (int64_t i = 0; i < rows * columns; ++i) in[i] = static_cast<float>((i * 37) % 101);
  in[2 * columns + 5] = std::numeric_limits<float>::quiet_NaN();
  // Kept dim 0 = columns (stride 1), reduced dim 1 = rows (stride columns).
  LaunchBuilder launch({columns, rows});
  launch.operand(in.data(), {1, columns}).operand(out.data(), {1, 0});
  entry(&launch.args, 0, 30);
  entry(&launch.args, 30, columns);
  for (int64_t column = 0; column < columns; ++column) {
    if (column == 5) {
      EXPECT_TRUE(std::isnan(out[column]));
      continue;
    }
    float expected = -INFINITY;
    for (int64_t row = 0; row < rows; ++row) expected = std::max(expected, in[row * columns + column]);
    EXPECT_EQ(out[column], expected) << column;
  }
}

TEST(ReductionCodegenTest, ArgMaxTakesFirstOfTiesAndFirstNan) {
  KernelEntry entry = compile_kernel(reduction_kernel(ReduceOp::kArgMax, true, DType::kInt64));
  ASSERT_NE(entry, nullptr);
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> in = {1, 5, 5, 2, /* row 2 */ 1, nan, 9, nan, /* row 3 */ -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  std::vector<int64_t> out(3, -7);
  LaunchBuilder launch({3, 4});
  launch.operand(in.data(), {4, 1}).operand(out.data(), {1, 0});
  entry(&launch.args, 0, 3);
  EXPECT_EQ(out, (std::vector<int64_t>{1, 1, 0}));
}

TEST(ReductionCodegenTest, ColumnArgMinAndAll) {
  KernelEntry argmin = compile_kernel(reduction_kernel(ReduceOp::kArgMin, false, DType::kInt64));
  ASSERT_NE(argmin, nullptr);
  std::vector<float> in = {3, 1, 2, /* */ 0, 1, 5};
  std::vector<int64_t> out(3);
  LaunchBuilder launch({3, 2});
  launch.operand(in.data(), {1, 3}).operand(out.data(), {1, 0});
  argmin(&launch.args, 0, 3);
  EXPECT_EQ(out, (std::vector<int64_t>{1, 0, 0}));

  Builder builder("all", KernelKind::kReduction, 2);
  int input = builder.add_input(DType::kFloat32, Layout::kContiguous);
  ValueId nonzero = builder.binary(OpCode::kNotEqual, builder.load(input), builder.constant(0, DType::kFloat32));
  builder.reduce(ReduceOp::kAll, nonzero, 1, false);
  builder.store(builder.add_output(DType::kBool, Layout::kContiguous), builder.accumulator());
  KernelEntry all = compile_kernel(builder.finish());
  ASSERT_NE(all, nullptr);
  std::vector<uint8_t> flags(3);
  LaunchBuilder all_launch({3, 2});
  all_launch.operand(in.data(), {1, 3}).operand(flags.data(), {1, 0});
  all(&all_launch.args, 0, 3);
  EXPECT_EQ(flags, (std::vector<uint8_t>{0, 1, 1}));
}

// Guards against a GCC 12.2 miscompile of widening row sums (see prelude.cc).
TEST(ReductionCodegenTest, BoolRowSumsWidenToInt64) {
  Builder builder("sum_bool", KernelKind::kReduction, 2);
  int input = builder.add_input(DType::kBool, Layout::kContiguous);
  builder.reduce(ReduceOp::kSum, builder.cast(builder.load(input), DType::kInt64), 1, true);
  builder.store(builder.add_output(DType::kInt64, Layout::kStrided), builder.accumulator());
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  for (int64_t length = 1; length < 70; ++length) {
    const int64_t rows = 3;
    std::vector<uint8_t> in(rows * length);
    std::vector<int64_t> out(rows), expected(rows, 0);
    for (int64_t i = 0; i < rows * length; ++i) {
      in[i] = (i * 7) % 3 == 0;
      expected[i / length] += in[i];
    }
    LaunchBuilder launch({rows, length});
    launch.operand(in.data(), {length, 1}).operand(out.data(), {1, 0});
    entry(&launch.args, 0, rows);
    ASSERT_EQ(out, expected) << "length " << length;
  }
}

TEST(ReductionCodegenTest, IntegerSumWraps) {
  Builder builder("sum_i64", KernelKind::kReduction, 1);
  int input = builder.add_input(DType::kInt64, Layout::kContiguous);
  builder.reduce(ReduceOp::kSum, builder.load(input), 0, true);
  builder.store(builder.add_output(DType::kInt64, Layout::kBroadcast), builder.accumulator());
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  std::vector<int64_t> in(40, 3);
  in[0] = INT64_MAX;
  int64_t out = 0;
  LaunchBuilder launch({40});
  launch.operand(in.data(), {1}).operand(&out, {0});
  entry(&launch.args, 0, 1);
  EXPECT_EQ(out, static_cast<int64_t>(static_cast<uint64_t>(INT64_MAX) + 39 * 3));
}

}  // namespace
}  // namespace kiln::ir
