// Generated row kernels (KernelKind::kRow), compiled and run on host buffers:
// several folds of each row in turn, values stored per row and per element.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernel_runner.h"
#include "kiln/compiler/codegen/c_source.h"
#include "kiln/ir/builder.h"
#include "kiln/ir/verifier.h"

namespace kiln::ir {
namespace {

using testing_support::compile_kernel;
using testing_support::LaunchBuilder;

// softmax(x + bias) over rows of a [rows, length] tensor (dim 0 kept, dim 1
// the row), where bias is a [length] row broadcast over the rows. Output 0:
// the softmax, at every element; output 1: each row's maximum, once per row.
Kernel softmax_kernel(int64_t rows, int64_t length, bool fixed) {
  Builder builder("softmax", KernelKind::kRow, 2);
  builder.set_kept_rank(1);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId bias = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId shifted_input = builder.binary(OpCode::kAdd, x, bias);
  int maximum_stage = builder.reduce_stage(ReduceOp::kMax, shifted_input);
  ValueId maximum = builder.stage_result(maximum_stage);
  ValueId exponential = builder.unary(OpCode::kExp, builder.binary(OpCode::kSubtract, shifted_input, maximum));
  ValueId sum = builder.stage_result(builder.reduce_stage(ReduceOp::kSum, exponential));
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous),
                builder.binary(OpCode::kDivide, exponential, sum));
  builder.store(builder.add_output(DType::kFloat32, Layout::kBroadcast), maximum);
  Kernel kernel = builder.finish();
  if (fixed) kernel.fixed_shape = {{rows, length}, {{length, 1}, {0, 1}, {length, 1}, {1, 0}}};
  return kernel;
}

void expect_softmax(int64_t rows, int64_t length, bool fixed) {
  KernelEntry entry = compile_kernel(softmax_kernel(rows, length, fixed));
  ASSERT_NE(entry, nullptr);
  std::vector<float> x(rows * length), bias(length), out(rows * length, -1.0f), maximum(rows, -1.0f);
  for (int64_t i = 0; i < rows * length; ++i) x[i] = static_cast<float>((i * 37) % 23) / 5.0f - 2.0f;
  for (int64_t j = 0; j < length; ++j) bias[j] = j % 3 == 2 ? -std::numeric_limits<float>::infinity() : 0.25f * j;
  LaunchBuilder launch({rows, length});
  launch.operand(x.data(), {length, 1}).operand(bias.data(), {0, 1});
  launch.operand(out.data(), {length, 1}).operand(maximum.data(), {1, 0});
  entry(&launch.args, 0, 1);
  entry(&launch.args, 1, rows);
  for (int64_t row = 0; row < rows; ++row) {
    double best = -std::numeric_limits<double>::infinity(), total = 0.0;
    for (int64_t j = 0; j < length; ++j) best = std::max(best, static_cast<double>(x[row * length + j] + bias[j]));
    for (int64_t j = 0; j < length; ++j) total += std::exp(static_cast<double>(x[row * length + j] + bias[j]) - best);
    EXPECT_FLOAT_EQ(maximum[row], static_cast<float>(best)) << "row " << row << " of length " << length;
    for (int64_t j = 0; j < length; ++j) {
      const double expected = std::exp(static_cast<double>(x[row * length + j] + bias[j]) - best) / total;
      EXPECT_NEAR(out[row * length + j], expected, 1e-6) << "row " << row << " element " << j;
    }
  }
}

TEST(RowCodegenTest, SoftmaxOverLengthsAroundTheLaneCount) {
  for (int64_t length : {1, 2, 15, 16, 17, 100}) expect_softmax(4, length, false);
}

TEST(RowCodegenTest, FixedShapeSoftmaxKeepsItsExponentialsInARowBuffer) {
  // The division's pass reads the exponentials the sum's pass computed.
  StatusOr<codegen::CSource> source = codegen::generate_c(softmax_kernel(3, 40, true));
  ASSERT_TRUE(source.ok()) << source.status().message();
  EXPECT_NE(source.value().text.find("float row_v"), std::string::npos);
  EXPECT_EQ(source.value().text.find("kiln_exp_f32(v", source.value().text.find("accumulator1 = ")),
            std::string::npos)
      << "the last pass recomputes the exponentials";
  for (int64_t length : {1, 17, 40}) expect_softmax(3, length, true);
}

TEST(RowCodegenTest, FixedShapeRowTooLongForBuffersRecomputes) {
  const int64_t length = 20000;  // 80 KB per buffered value: past the limit
  StatusOr<codegen::CSource> source = codegen::generate_c(softmax_kernel(2, length, true));
  ASSERT_TRUE(source.ok()) << source.status().message();
  EXPECT_EQ(source.value().text.find("float row_v"), std::string::npos);
  expect_softmax(2, length, true);
}

TEST(RowCodegenTest, ShapeGenericSoftmaxBuffersRowsThatFitAndRecomputesLongerOnes) {
  // Without a fixed shape the buffers hold what fits in kRowBufferBytes, and
  // each row picks the buffered or the recomputing body at run time.
  StatusOr<codegen::CSource> source = codegen::generate_c(softmax_kernel(2, 0, false));
  ASSERT_TRUE(source.ok()) << source.status().message();
  const std::string& text = source.value().text;
  EXPECT_NE(text.find("float row_v"), std::string::npos);
  EXPECT_NE(text.find("if (outer_count * length <= "), std::string::npos);
  for (int64_t length : {40, 5000, 20000}) expect_softmax(2, length, false);
}

TEST(RowCodegenTest, LayerNormOverTwoReducedDims) {
  // [3 kept] x [4 x 5 row]: mean, then the mean of squared differences, then
  // (x - mean) * rsqrt(var + eps) * weight, weight broadcast over the rows.
  Builder builder("layer_norm", KernelKind::kRow, 3);
  builder.set_kept_rank(1);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId weight = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId count = builder.constant(20.0, DType::kFloat32);
  ValueId mean = builder.binary(OpCode::kDivide, builder.stage_result(builder.reduce_stage(ReduceOp::kSum, x)), count);
  ValueId centred = builder.binary(OpCode::kSubtract, x, mean);
  ValueId squares = builder.binary(OpCode::kMultiply, centred, centred);
  ValueId variance =
      builder.binary(OpCode::kDivide, builder.stage_result(builder.reduce_stage(ReduceOp::kSum, squares)), count);
  ValueId scale =
      builder.unary(OpCode::kRsqrt, builder.binary(OpCode::kAdd, variance, builder.constant(1e-5, DType::kFloat32)));
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous),
                builder.binary(OpCode::kMultiply, builder.binary(OpCode::kMultiply, centred, scale), weight));
  builder.store(builder.add_output(DType::kFloat32, Layout::kBroadcast), scale);
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  std::vector<float> in(60), weight_values(20), out(60), scales(3);
  for (int i = 0; i < 60; ++i) in[i] = static_cast<float>((i * 13) % 17) - 8.0f;
  for (int i = 0; i < 20; ++i) weight_values[i] = 0.5f + 0.1f * i;
  // Row elements at [kept c0][row c2 (4)][row c1 (5)]: dim 1 (5) is the fastest.
  LaunchBuilder launch({3, 5, 4});
  launch.operand(in.data(), {20, 1, 5}).operand(weight_values.data(), {0, 1, 5});
  launch.operand(out.data(), {20, 1, 5}).operand(scales.data(), {1, 0, 0});
  entry(&launch.args, 0, 3);
  for (int row = 0; row < 3; ++row) {
    double mean_value = 0.0, variance_value = 0.0;
    for (int i = 0; i < 20; ++i) mean_value += in[row * 20 + i] / 20.0;
    for (int i = 0; i < 20; ++i) variance_value += std::pow(in[row * 20 + i] - mean_value, 2) / 20.0;
    const double expected_scale = 1.0 / std::sqrt(variance_value + 1e-5);
    EXPECT_NEAR(scales[row], expected_scale, 1e-5);
    for (int i = 0; i < 20; ++i) {
      EXPECT_NEAR(out[row * 20 + i], (in[row * 20 + i] - mean_value) * expected_scale * weight_values[i], 1e-5);
    }
  }
}

TEST(RowCodegenTest, IndexedLoadsAreElementValues) {
  // Each element reads x at an offset from an int64 input: here the mirrored
  // element of its row. Output 0: that value minus the row's maximum of
  // them; output 1: the maximum, once per row. An indexed load whose offset
  // reads no element (a constant) is an element value too.
  Builder builder("mirrored", KernelKind::kRow, 2);
  builder.set_kept_rank(1);
  ValueId offset = builder.load(builder.add_input(DType::kInt64, Layout::kContiguous));
  const int x_input = builder.add_input(DType::kFloat32, Layout::kContiguous);
  ValueId mirrored = builder.indexed_load(x_input, offset);
  ValueId here = builder.indexed_load(x_input, builder.constant(0, DType::kInt64));
  ValueId maximum = builder.stage_result(builder.reduce_stage(ReduceOp::kMax, mirrored));
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous),
                builder.binary(OpCode::kAdd, builder.binary(OpCode::kSubtract, mirrored, maximum), here));
  builder.store(builder.add_output(DType::kFloat32, Layout::kBroadcast), maximum);
  Kernel kernel = builder.finish();
  ASSERT_TRUE(verify(kernel).ok()) << verify(kernel).message();
  KernelEntry entry = compile_kernel(kernel);
  ASSERT_NE(entry, nullptr);
  const int64_t rows = 3;
  for (int64_t length : {1, 7, 16, 33}) {
    std::vector<int64_t> offsets(rows * length);
    std::vector<float> x(rows * length), out(rows * length, -1.0f), maximum(rows, -1.0f);
    for (int64_t i = 0; i < rows * length; ++i) {
      const int64_t j = i % length;
      offsets[i] = (length - 1 - j) - j;
      x[i] = static_cast<float>((i * 37) % 23) - 11.0f;
    }
    LaunchBuilder launch({rows, length});
    launch.operand(offsets.data(), {length, 1}).operand(x.data(), {length, 1});
    launch.operand(out.data(), {length, 1}).operand(maximum.data(), {1, 0});
    entry(&launch.args, 0, rows);
    for (int64_t row = 0; row < rows; ++row) {
      float best = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < length; ++j) best = std::max(best, x[row * length + j]);
      EXPECT_EQ(maximum[row], best) << "row " << row << " of length " << length;
      for (int64_t j = 0; j < length; ++j) {
        EXPECT_EQ(out[row * length + j], x[row * length + length - 1 - j] - best + x[row * length + j])
            << "row " << row << " element " << j << " of length " << length;
      }
    }
  }
}

TEST(RowCodegenTest, VerifierRefusesStagesReadingLaterResultsAndElementsStoredPerRow) {
  {
    Builder builder("own_result", KernelKind::kRow, 2);
    builder.set_kept_rank(1);
    ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
    int first = builder.reduce_stage(ReduceOp::kSum, x);
    Kernel kernel = builder.finish();
    // Stage 0 folds a value computed from its own result.
    Node accumulator{OpCode::kAccumulator, DType::kFloat32, {kNoValue, kNoValue, kNoValue}, first, 0.0};
    kernel.nodes.push_back(accumulator);
    kernel.nodes.push_back({OpCode::kAdd, DType::kFloat32, {x, 1, kNoValue}, 0, 0.0});
    kernel.stages[0].input = 2;
    kernel.outputs.push_back({DType::kFloat32, Layout::kBroadcast});
    kernel.results.push_back(1);
    kernel.store_offsets.push_back(kNoValue);
    kernel.store_accumulates.push_back(false);
    EXPECT_FALSE(verify(kernel).ok());
  }
  {
    Builder builder("element_per_row", KernelKind::kRow, 2);
    builder.set_kept_rank(1);
    ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
    builder.reduce_stage(ReduceOp::kSum, x);
    builder.store(builder.add_output(DType::kFloat32, Layout::kBroadcast), x);
    Status status = verify(builder.finish());
    EXPECT_FALSE(status.ok());
    EXPECT_NE(status.message().find("broadcast along the row"), std::string::npos) << status.message();
  }
  {
    Builder builder("no_stage", KernelKind::kRow, 2);
    builder.set_kept_rank(1);
    ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
    builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), x);
    EXPECT_FALSE(verify(builder.finish()).ok());
  }
}

}  // namespace
}  // namespace kiln::ir
