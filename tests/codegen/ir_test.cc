#include <gtest/gtest.h>

#include "kiln/ir/builder.h"
#include "kiln/ir/printer.h"
#include "kiln/ir/verifier.h"

namespace kiln::ir {
namespace {

Kernel add_kernel(DType dtype, Layout second) {
  Builder builder("add", KernelKind::kPointwise, 2);
  ValueId x = builder.load(builder.add_input(dtype, Layout::kContiguous));
  ValueId y = builder.load(builder.add_input(dtype, second));
  builder.store(builder.add_output(dtype, Layout::kContiguous), builder.binary(OpCode::kAdd, x, y));
  return builder.finish();
}

TEST(DTypeTest, NamesRoundTripAndSizes) {
  for (int index = 0; index < kDTypeCount; ++index) {
    auto dtype = static_cast<DType>(index);
    EXPECT_EQ(dtype_from_name(dtype_name(dtype)), dtype);
  }
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2);
  EXPECT_EQ(dtype_size(DType::kInt64), 8);
  EXPECT_EQ(compute_dtype(DType::kFloat16), DType::kFloat32);
  EXPECT_EQ(compute_dtype(DType::kInt8), DType::kInt8);
  EXPECT_FALSE(dtype_from_name("f128").has_value());
}

TEST(PrinterTest, PrintsDeclarationsNodesAndStores) {
  std::string text = print(add_kernel(DType::kFloat32, Layout::kBroadcast));
  EXPECT_EQ(text,
            "kernel add pointwise rank=2\n"
            "  input 0: f32 c\n"
            "  input 1: f32 b\n"
            "  output 0: f32 c\n"
            "  %0 = load 0 : f32\n"
            "  %1 = load 1 : f32\n"
            "  %2 = add %0, %1 : f32\n"
            "  store 0 %2\n");
}

TEST(HashTest, StableAcrossBuildsAndSensitiveToSemantics) {
  Kernel first = add_kernel(DType::kFloat32, Layout::kContiguous);
  Kernel again = add_kernel(DType::kFloat32, Layout::kContiguous);
  again.name = "renamed";  // the readable name is not part of the semantics
  EXPECT_EQ(stable_hash(first), stable_hash(again));
  EXPECT_NE(stable_hash(first), stable_hash(add_kernel(DType::kFloat64, Layout::kContiguous)));
  EXPECT_NE(stable_hash(first), stable_hash(add_kernel(DType::kFloat32, Layout::kStrided)));
}

TEST(VerifierTest, AcceptsWellFormedKernels) {
  EXPECT_TRUE(verify(add_kernel(DType::kFloat16, Layout::kStrided)).ok());
}

TEST(VerifierTest, RejectsMixedDtypes) {
  Builder builder("mixed", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId y = builder.load(builder.add_input(DType::kInt32, Layout::kContiguous));
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), builder.binary(OpCode::kAdd, x, y));
  Status status = verify(builder.finish());
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("mixed"), std::string::npos);
  EXPECT_NE(status.message().find("f32 and i32"), std::string::npos);
}

TEST(VerifierTest, RejectsFloatingMathOnIntegers) {
  Builder builder("exp_int", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kInt64, Layout::kContiguous));
  builder.store(builder.add_output(DType::kInt64, Layout::kContiguous), builder.unary(OpCode::kExp, x));
  EXPECT_FALSE(verify(builder.finish()).ok());
}

TEST(VerifierTest, RejectsUnstoredOutputAndMissingInput) {
  Builder builder("unstored", KernelKind::kPointwise, 1);
  builder.add_output(DType::kFloat32, Layout::kContiguous);
  EXPECT_FALSE(verify(builder.finish()).ok());
  Kernel kernel = add_kernel(DType::kFloat32, Layout::kContiguous);
  kernel.nodes[1].integer = 5;
  EXPECT_FALSE(verify(kernel).ok());
}

TEST(VerifierTest, RejectsOutOfOrderArguments) {
  Kernel kernel = add_kernel(DType::kFloat32, Layout::kContiguous);
  kernel.nodes[2].args[1] = 2;  // refers to itself
  EXPECT_FALSE(verify(kernel).ok());
}

TEST(VerifierTest, RejectsElementReadsInReductionEpilogue) {
  Builder builder("bad_sum", KernelKind::kReduction, 2);
  int input = builder.add_input(DType::kFloat32, Layout::kContiguous);
  builder.reduce(ReduceOp::kSum, builder.load(input), 1, true);
  ValueId sum = builder.accumulator();
  ValueId extra = builder.load(input);
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous),
                builder.binary(OpCode::kAdd, sum, extra));
  Status status = verify(builder.finish());
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("epilogue"), std::string::npos);
}

TEST(VerifierTest, RejectsNonIntegerStoreOffsets) {
  Builder builder("bad_scatter", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  builder.store_indexed(builder.add_output(DType::kFloat32, Layout::kBroadcast), x, x, true);
  Status status = verify(builder.finish());
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("not int64"), std::string::npos);
}

TEST(VerifierTest, RejectsTooManyOperandsAndBadRank) {
  Kernel kernel = add_kernel(DType::kFloat32, Layout::kContiguous);
  kernel.rank = kMaxRank + 1;
  EXPECT_FALSE(verify(kernel).ok());
  kernel.rank = 1;
  for (int i = 0; i < kMaxOperands; ++i) kernel.inputs.push_back({DType::kFloat32, Layout::kContiguous});
  EXPECT_FALSE(verify(kernel).ok());
}

}  // namespace
}  // namespace kiln::ir
