// Generated pointwise kernels, compiled and run on host buffers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernel_runner.h"
#include "kiln/ir/builder.h"

namespace kiln::ir {
namespace {

using testing_support::compile_kernel;
using testing_support::LaunchBuilder;

// out = in0 (op) in1, all of `dtype`, rank 1 contiguous.
Kernel binary_kernel(OpCode op, DType dtype, DType output_dtype) {
  Builder builder(opcode_name(op), KernelKind::kPointwise, 1);
  ValueId a = builder.load(builder.add_input(dtype, Layout::kContiguous));
  ValueId b = builder.load(builder.add_input(dtype, Layout::kContiguous));
  builder.store(builder.add_output(output_dtype, Layout::kContiguous), builder.binary(op, a, b));
  return builder.finish();
}

template <typename T, typename R = T>
std::vector<R> run_binary(OpCode op, DType dtype, DType output_dtype, std::vector<T> a, std::vector<T> b) {
  KernelEntry entry = compile_kernel(binary_kernel(op, dtype, output_dtype));
  std::vector<R> out(a.size());
  if (entry == nullptr) return out;
  int64_t n = static_cast<int64_t>(a.size());
  LaunchBuilder launch({n});
  launch.operand(a.data(), {1}).operand(b.data(), {1}).operand(out.data(), {1});
  entry(&launch.args, 0, n);
  return out;
}

TEST(PointwiseCodegenTest, AddsWithScalarAlphaOverBroadcastAndStridedOperands) {
  // out[i][j] = x[i][j] + alpha * y[j]; x is read transposed (strided).
  Builder builder("add_alpha", KernelKind::kPointwise, 2);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kStrided));
  ValueId y = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId alpha = builder.cast(builder.scalar(builder.add_scalar(DType::kFloat64)), DType::kFloat32);
  ValueId sum = builder.binary(OpCode::kAdd, x, builder.binary(OpCode::kMultiply, y, alpha));
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), sum);
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  const int rows = 5, columns = 37;
  std::vector<float> x_storage(rows * columns), y_storage(columns), out(rows * columns);
  for (int i = 0; i < rows * columns; ++i) x_storage[i] = static_cast<float>(i);
  for (int j = 0; j < columns; ++j) y_storage[j] = static_cast<float>(j) * 0.5f;
  // x is stored column-major: element (i, j) at j * rows + i.
  LaunchBuilder launch({columns, rows});
  launch.operand(x_storage.data(), {rows, 1}).operand(y_storage.data(), {1, 0}).operand(out.data(), {1, columns});
  launch.real(0, 2.0);
  // Two pieces, split mid-row, as the threaded launcher would.
  entry(&launch.args, 0, 50);
  entry(&launch.args, 50, rows * columns);
  for (int i = 0; i < rows; ++i) {
    for (int j = 0; j < columns; ++j) {
      EXPECT_EQ(out[i * columns + j], x_storage[j * rows + i] + 2.0f * y_storage[j]) << i << "," << j;
    }
  }
}

TEST(PointwiseCodegenTest, BroadcastOperandAlongInnerDim) {
  Builder builder("mul_broadcast", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kFloat64, Layout::kContiguous));
  ValueId y = builder.load(builder.add_input(DType::kFloat64, Layout::kBroadcast));
  builder.store(builder.add_output(DType::kFloat64, Layout::kContiguous), builder.binary(OpCode::kMultiply, x, y));
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  std::vector<double> x_data = {1, 2, 3, 4}, out(4);
  double y_data = 3;
  LaunchBuilder launch({4});
  launch.operand(x_data.data(), {1}).operand(&y_data, {0}).operand(out.data(), {1});
  entry(&launch.args, 0, 4);
  EXPECT_EQ(out, (std::vector<double>{3, 6, 9, 12}));
}

TEST(PointwiseCodegenTest, HalfComputesInFloatAndRoundsOnStore) {
  Builder builder("add_f16", KernelKind::kPointwise, 1);
  ValueId a = builder.load(builder.add_input(DType::kFloat16, Layout::kContiguous));
  ValueId b = builder.load(builder.add_input(DType::kFloat16, Layout::kContiguous));
  builder.store(builder.add_output(DType::kFloat16, Layout::kContiguous), builder.binary(OpCode::kAdd, a, b));
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  using testing_support::float_to_half_bits;
  using testing_support::half_bits_to_float;
  std::vector<uint16_t> a_data = {float_to_half_bits(2048), float_to_half_bits(1.0f), float_to_half_bits(65504)};
  std::vector<uint16_t> b_data = {float_to_half_bits(1), float_to_half_bits(0.000976562f), float_to_half_bits(65504)};
  std::vector<uint16_t> out(3);
  LaunchBuilder launch({3});
  launch.operand(a_data.data(), {1}).operand(b_data.data(), {1}).operand(out.data(), {1});
  entry(&launch.args, 0, 3);
  EXPECT_EQ(half_bits_to_float(out[0]), 2048.0f);  // 2049 rounds to even
  EXPECT_EQ(half_bits_to_float(out[1]), 1.0f + 0.000976562f);
  EXPECT_TRUE(std::isinf(half_bits_to_float(out[2])));
}

TEST(PointwiseCodegenTest, BFloat16RoundsToNearestEven) {
  Builder builder("copy_bf16", KernelKind::kPointwise, 1);
  ValueId a = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  builder.store(builder.add_output(DType::kBFloat16, Layout::kContiguous), a);
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  std::vector<float> in = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, std::nanf("")};
  std::vector<uint16_t> out(3);
  LaunchBuilder launch({3});
  launch.operand(in.data(), {1}).operand(out.data(), {1});
  entry(&launch.args, 0, 3);
  EXPECT_EQ(out[0], 0x3f80);  // halfway, rounds down to even
  EXPECT_EQ(out[1], 0x3f82);  // halfway, rounds up to even
  EXPECT_EQ(out[2], 0x7fc0);
}

TEST(PointwiseCodegenTest, IntegerDivisionFollowsPython) {
  std::vector<int32_t> a = {7, -7, 7, -7, 5, INT32_MIN};
  std::vector<int32_t> b = {2, 2, -2, -2, 0, -1};
  EXPECT_EQ(run_binary<int32_t>(OpCode::kFloorDivide, DType::kInt32, DType::kInt32, a, b),
            (std::vector<int32_t>{3, -4, -4, 3, 0, INT32_MIN}));
  EXPECT_EQ(run_binary<int32_t>(OpCode::kRemainder, DType::kInt32, DType::kInt32, a, b),
            (std::vector<int32_t>{1, 1, -1, -1, 0, 0}));
  EXPECT_EQ(run_binary<int32_t>(OpCode::kDivide, DType::kInt32, DType::kInt32, a, b),
            (std::vector<int32_t>{3, -3, -3, 3, 0, INT32_MIN}));
  EXPECT_EQ(run_binary<int32_t>(OpCode::kFmod, DType::kInt32, DType::kInt32, a, b),
            (std::vector<int32_t>{1, -1, 1, -1, 0, 0}));
}

TEST(PointwiseCodegenTest, FloatFloorDivideAndRemainderFollowPython) {
  std::vector<double> a = {7.5, -7.5, 1.0, -0.0};
  std::vector<double> b = {2.0, 2.0, 0.0, 3.0};
  std::vector<double> floor = run_binary<double>(OpCode::kFloorDivide, DType::kFloat64, DType::kFloat64, a, b);
  EXPECT_EQ(floor[0], 3.0);
  EXPECT_EQ(floor[1], -4.0);
  EXPECT_TRUE(std::isinf(floor[2]));
  EXPECT_TRUE(std::signbit(floor[3]));
  std::vector<double> rest = run_binary<double>(OpCode::kRemainder, DType::kFloat64, DType::kFloat64, a, b);
  EXPECT_EQ(rest[0], 1.5);
  EXPECT_EQ(rest[1], 0.5);
}

TEST(PointwiseCodegenTest, ShiftsOutOfRangeFollowAten) {
  std::vector<int64_t> a = {1, -8, 1, -8, 3};
  std::vector<int64_t> b = {3, 1, 64, 70, -1};
  EXPECT_EQ(run_binary<int64_t>(OpCode::kShiftLeft, DType::kInt64, DType::kInt64, a, b),
            (std::vector<int64_t>{8, -16, 0, 0, 0}));
  EXPECT_EQ(run_binary<int64_t>(OpCode::kShiftRight, DType::kInt64, DType::kInt64, a, b),
            (std::vector<int64_t>{0, -4, 0, -1, 0}));
}

TEST(PointwiseCodegenTest, IntegerOverflowWraps) {
  std::vector<int8_t> a = {127, -128};
  std::vector<int8_t> b = {1, -1};
  EXPECT_EQ(run_binary<int8_t>(OpCode::kAdd, DType::kInt8, DType::kInt8, a, b), (std::vector<int8_t>{-128, 127}));
  std::vector<int64_t> big = {INT64_MAX};
  EXPECT_EQ(run_binary<int64_t>(OpCode::kAdd, DType::kInt64, DType::kInt64, big, std::vector<int64_t>{1}),
            (std::vector<int64_t>{INT64_MIN}));
}

TEST(PointwiseCodegenTest, MaximumAndMinimumPropagateNan) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {1, nan, 3}, b = {2, 1, nan};
  std::vector<float> high = run_binary<float>(OpCode::kMaximum, DType::kFloat32, DType::kFloat32, a, b);
  EXPECT_EQ(high[0], 2);
  EXPECT_TRUE(std::isnan(high[1]));
  EXPECT_TRUE(std::isnan(high[2]));
  std::vector<float> low = run_binary<float>(OpCode::kMinimum, DType::kFloat32, DType::kFloat32, a, b);
  EXPECT_EQ(low[0], 1);
  EXPECT_TRUE(std::isnan(low[1]));
  EXPECT_TRUE(std::isnan(low[2]));
}

// A maximum of maxima (a ReLU read by a max pool's scan): the chain the
// prelude's maximum helper lets GCC vectorise. Every lane of a vector body and its
// tail gets NaN from either side, and ties keep the second operand.
TEST(PointwiseCodegenTest, ChainedMaximaPropagateNanOnEveryLane) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  Builder builder("max_of_relus", KernelKind::kPointwise, 1);
  ValueId a = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId b = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId zero = builder.constant(0, DType::kFloat32);
  ValueId result = builder.binary(OpCode::kMaximum, builder.binary(OpCode::kMaximum, a, zero),
                                  builder.binary(OpCode::kMaximum, b, zero));
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), result);
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  const float samples[] = {1.5f, -2.0f, nan, inf, -inf, 0.0f, -0.0f, 3.0f};
  std::vector<float> x, y;
  for (float first : samples) {
    for (float second : samples) {
      x.push_back(first);
      y.push_back(second);
    }
  }
  x.push_back(7.0f);  // 65 positions: whole vectors and a tail
  y.push_back(nan);
  std::vector<float> out(x.size(), -1.0f);
  LaunchBuilder launch({static_cast<int64_t>(x.size())});
  launch.operand(x.data(), {1}).operand(y.data(), {1}).operand(out.data(), {1});
  entry(&launch.args, 0, static_cast<int64_t>(x.size()));
  auto maximum = [](float first, float second) {
    if (std::isnan(first) || std::isnan(second)) return std::numeric_limits<float>::quiet_NaN();
    return first > second ? first : second;
  };
  for (size_t i = 0; i < x.size(); ++i) {
    const float expected = maximum(maximum(x[i], 0.0f), maximum(y[i], 0.0f));
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(out[i])) << "position " << i;
    } else {
      EXPECT_EQ(out[i], expected) << "position " << i;
      EXPECT_EQ(std::signbit(out[i]), std::signbit(expected)) << "position " << i;
    }
  }
}

TEST(PointwiseCodegenTest, ComparisonsWriteBool) {
  std::vector<uint8_t> less =
      run_binary<float, uint8_t>(OpCode::kLess, DType::kFloat32, DType::kBool, {1, 2, 3}, {2, 2, 2});
  EXPECT_EQ(less, (std::vector<uint8_t>{1, 0, 0}));
}

TEST(PointwiseCodegenTest, SelectAndMathFunctionsAndCoordinates) {
  // out = coordinate1 >= coordinate0 ? exp(x) : 0  (an upper-triangular mask)
  Builder builder("triu_exp", KernelKind::kPointwise, 2);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId keep = builder.binary(OpCode::kGreaterEqual, builder.coordinate(0), builder.coordinate(1));
  ValueId result = builder.select(keep, builder.unary(OpCode::kExp, x), builder.constant(0, DType::kFloat32));
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), result);
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  std::vector<float> in(9, 1.0f), out(9, -1.0f);
  LaunchBuilder launch({3, 3});
  launch.operand(in.data(), {1, 3}).operand(out.data(), {1, 3});
  entry(&launch.args, 0, 9);
  for (int row = 0; row < 3; ++row) {
    for (int column = 0; column < 3; ++column) {
      EXPECT_EQ(out[row * 3 + column], column >= row ? std::exp(1.0f) : 0.0f);
    }
  }
}

// The vectorisable float32 exp stays within 2 ulp of libm over its whole range,
// and overflows exactly where expf does (88.7228317 is its last finite input).
TEST(PointwiseCodegenTest, FloatExpIsWithinTwoUlpOfLibm) {
  Builder builder("exp_f32", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), builder.unary(OpCode::kExp, x));
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  std::vector<float> in;
  for (float value = -110.0f; value < 95.0f; value += 0.0137f) in.push_back(value);
  for (float special : {0.0f, -0.0f, 88.72f, 88.73f, 88.7228317f, 88.7228394f, 89.0f, -87.5f, -103.9f, -104.0f,
                        INFINITY, -INFINITY, NAN}) {
    in.push_back(special);
  }
  std::vector<float> out(in.size());
  LaunchBuilder launch({static_cast<int64_t>(in.size())});
  launch.operand(in.data(), {1}).operand(out.data(), {1});
  entry(&launch.args, 0, static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    float expected = std::exp(in[i]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(out[i])) << in[i];
    } else if (std::isinf(expected) || expected == 0.0f) {
      EXPECT_EQ(out[i], expected) << in[i];
    } else {
      float ulp = std::nextafter(expected, INFINITY) - expected;
      EXPECT_LE(std::fabs(out[i] - expected), 2 * ulp) << "exp(" << in[i] << ")";
    }
  }
}

TEST(PointwiseCodegenTest, IndexedAccumulatingStoreScattersAdds) {
  // out[index[i]] += source[i]: the output does not move with the position.
  Builder builder("scatter_add", KernelKind::kPointwise, 1);
  ValueId source = builder.load(builder.add_input(DType::kFloat16, Layout::kContiguous));
  ValueId index = builder.load(builder.add_input(DType::kInt64, Layout::kContiguous));
  int output = builder.add_output(DType::kFloat16, Layout::kBroadcast);
  builder.store_indexed(output, source, index, /*accumulate=*/true);
  Kernel kernel = builder.finish();
  EXPECT_TRUE(kernel.single_threaded);
  KernelEntry entry = compile_kernel(kernel);
  ASSERT_NE(entry, nullptr);
  using testing_support::float_to_half_bits;
  using testing_support::half_bits_to_float;
  std::vector<uint16_t> values = {float_to_half_bits(1), float_to_half_bits(2), float_to_half_bits(4),
                                  float_to_half_bits(8)};
  std::vector<int64_t> indices = {2, 0, 2, 2};
  std::vector<uint16_t> out(3, float_to_half_bits(0.5f));
  LaunchBuilder launch({4});
  launch.operand(values.data(), {1}).operand(indices.data(), {1}).operand(out.data(), {0});
  entry(&launch.args, 0, 4);
  EXPECT_EQ(half_bits_to_float(out[0]), 2.5f);
  EXPECT_EQ(half_bits_to_float(out[1]), 0.5f);
  EXPECT_EQ(half_bits_to_float(out[2]), 13.5f);
}

TEST(PointwiseCodegenTest, RandomBitsAreDeterministicPerPosition) {
  Builder builder("random", KernelKind::kPointwise, 1);
  builder.add_input(DType::kFloat32, Layout::kContiguous);
  builder.store(builder.add_output(DType::kInt64, Layout::kContiguous), builder.random_bits(0));
  KernelEntry entry = compile_kernel(builder.finish());
  ASSERT_NE(entry, nullptr);
  float unused = 0;
  std::vector<int64_t> whole(64), pieces(64);
  LaunchBuilder launch({64});
  launch.operand(&unused, {0}).operand(whole.data(), {1});
  launch.args.seed = 42;
  entry(&launch.args, 0, 64);
  launch.args.data[1] = reinterpret_cast<char*>(pieces.data());
  entry(&launch.args, 0, 10);
  entry(&launch.args, 10, 64);
  EXPECT_EQ(whole, pieces);
  EXPECT_NE(whole[0], whole[1]);
  launch.args.seed = 43;
  entry(&launch.args, 0, 64);
  EXPECT_NE(whole, pieces);
}

}  // namespace
}  // namespace kiln::ir
