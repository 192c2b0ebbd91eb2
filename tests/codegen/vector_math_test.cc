// Routed vector math (codegen/vector_math.h): an element's result does not
// depend on the loop around it. One launch over every element (vector loop
// and tail) and one launch per element (scalar calls) give the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernel_runner.h"
#include "kiln/compiler/codegen/c_source.h"
#include "kiln/ir/builder.h"

namespace kiln::ir {
namespace {

using testing_support::compile_kernel;
using testing_support::LaunchBuilder;

template <typename T>
void expect_same_bits_in_any_loop(OpCode op, DType dtype) {
  Builder builder("routed", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(dtype, Layout::kContiguous));
  ValueId y = ir::opcode_arity(op) == 1 ? builder.unary(op, x)
                                        : builder.binary(op, x, builder.constant(1.5, dtype));
  builder.store(builder.add_output(dtype, Layout::kContiguous), y);
  const Kernel kernel = builder.finish();
  StatusOr<codegen::CSource> source = codegen::generate_c(kernel);
  ASSERT_TRUE(source.ok());
  EXPECT_NE(source.value().text.find("kiln_vm_"), std::string::npos);
  KernelEntry entry = compile_kernel(kernel);
  ASSERT_NE(entry, nullptr);
  constexpr int64_t kCount = 1003;
  std::vector<T> input(kCount), whole(kCount), single(kCount);
  for (int64_t i = 0; i < kCount; ++i) input[i] = static_cast<T>(0.05 + 0.0123 * static_cast<double>(i));
  LaunchBuilder all({kCount});
  all.operand(input.data(), {1}).operand(whole.data(), {1});
  entry(&all.args, 0, kCount);
  for (int64_t i = 0; i < kCount; ++i) {
    LaunchBuilder one({1});
    one.operand(&input[i], {1}).operand(&single[i], {1});
    entry(&one.args, 0, 1);
  }
  EXPECT_EQ(std::memcmp(whole.data(), single.data(), sizeof(T) * kCount), 0) << opcode_name(op);
}

TEST(VectorMathTest, ElementsGetTheSameBitsVectorisedOrNot) {
  for (OpCode op : {OpCode::kTanh, OpCode::kLog1p, OpCode::kErf, OpCode::kSin, OpCode::kPower, OpCode::kAtan2}) {
    expect_same_bits_in_any_loop<float>(op, DType::kFloat32);
    expect_same_bits_in_any_loop<double>(op, DType::kFloat64);
  }
}

}  // namespace
}  // namespace kiln::ir
