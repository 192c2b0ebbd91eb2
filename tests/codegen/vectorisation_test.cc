// Generated pointwise loops vectorise. A kernel whose loop GCC leaves scalar
// still computes the right values, so no differential test notices; it only
// runs several times slower (a maximum of ReLUs spelled as one nested select
// ran its loop scalar, a 16-op chain 10x slower). These tests compile the
// generated source with the kernel toolchain's own flags and ask GCC which
// loops it vectorised.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/compiler/codegen/c_source.h"
#include "kiln/compiler/toolchain.h"
#include "kiln/ir/builder.h"

namespace kiln::ir {
namespace {

// Line numbers (1-based) of the element loops, `for (int64_t j = ...`.
std::set<int> element_loop_lines(const std::string& source) {
  std::set<int> lines;
  std::istringstream stream(source);
  std::string line;
  for (int number = 1; std::getline(stream, line); ++number) {
    if (line.find("for (int64_t j = ") != std::string::npos) lines.insert(number);
  }
  return lines;
}

// Line numbers GCC reports as "loop vectorized" for kernel.c.
std::set<int> vectorised_lines(const std::string& report) {
  std::set<int> lines;
  std::istringstream stream(report);
  std::string line;
  while (std::getline(stream, line)) {
    const std::string prefix = "kernel.c:";
    size_t at = line.find(prefix);
    if (at == std::string::npos || line.find("loop vectorized") == std::string::npos) continue;
    lines.insert(std::atoi(line.c_str() + at + prefix.size()));
  }
  return lines;
}

// Compiles `kernel` with -fopt-info-vec-optimized and expects every element
// loop of the source vectorised, or with `after`, every one after the first
// line containing it. Skips under a compiler other than GCC.
void expect_element_loops_vectorise(const Kernel& kernel, const std::string& after = "") {
  StatusOr<codegen::CSource> source = codegen::generate_c(kernel);
  ASSERT_TRUE(source.ok()) << source.status().message();
  StatusOr<Toolchain> toolchain = Toolchain::probe("cc");
  ASSERT_TRUE(toolchain.ok()) << toolchain.status().message();
  if (toolchain.value().version().find("clang") != std::string::npos) {
    GTEST_SKIP() << "-fopt-info is GCC's: " << toolchain.value().version();
  }
  char pattern[] = "/tmp/kiln-vectorisation-test-XXXXXX";
  const std::string directory = mkdtemp(pattern);
  std::ofstream(directory + "/kernel.c") << source.value().text;
  std::vector<std::string> arguments = {toolchain.value().compiler()};
  for (const std::string& flag : toolchain.value().flags()) {
    if (flag.rfind("-l", 0) != 0) arguments.push_back(flag);  // no link inputs for -c
  }
  for (const char* extra : {"-fopt-info-vec-optimized", "-c", "-o"}) arguments.push_back(extra);
  arguments.push_back(directory + "/kernel.o");
  arguments.push_back(directory + "/kernel.c");
  std::string report;
  StatusOr<int> exit_code = run_process(arguments, report);
  std::system(("rm -rf '" + directory + "'").c_str());
  ASSERT_TRUE(exit_code.ok()) << exit_code.status().message();
  ASSERT_EQ(exit_code.value(), 0) << report;
  std::set<int> loops = element_loop_lines(source.value().text);
  if (!after.empty()) {
    const size_t at = source.value().text.find(after);
    ASSERT_NE(at, std::string::npos) << after;
    const int first = 1 + static_cast<int>(std::count(source.value().text.begin(),
                                                      source.value().text.begin() + at, '\n'));
    loops.erase(loops.begin(), loops.lower_bound(first));
  }
  const std::set<int> vectorised = vectorised_lines(report);
  ASSERT_FALSE(loops.empty());
  for (int line : loops) {
    EXPECT_TRUE(vectorised.count(line)) << "the element loop at line " << line << " stays scalar:\n" << report;
  }
}

// max(relu(a), relu(b)), its minimum with relu(a), clamped by constants: each
// maximum or minimum tests for NaN a value another select made.
TEST(VectorisationTest, MaximaAndMinimaOfSelectsVectorise) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Builder builder("extrema_of_selects", KernelKind::kPointwise, 1);
    ValueId a = builder.load(builder.add_input(dtype, Layout::kContiguous));
    ValueId b = builder.load(builder.add_input(dtype, Layout::kContiguous));
    ValueId zero = builder.constant(0, dtype);
    ValueId relu_a = builder.binary(OpCode::kMaximum, a, zero);
    ValueId relu_b = builder.select(builder.binary(OpCode::kGreater, b, zero), b, zero);
    ValueId larger = builder.binary(OpCode::kMaximum, relu_b, relu_a);
    ValueId smaller = builder.binary(OpCode::kMinimum, larger, relu_a);
    ValueId floor = builder.binary(OpCode::kMaximum, smaller, builder.constant(-1.5, dtype));
    ValueId clamped = builder.binary(OpCode::kMinimum, floor, builder.constant(1.25, dtype));
    builder.store(builder.add_output(dtype, Layout::kContiguous), clamped);
    SCOPED_TRACE(dtype_name(dtype));
    expect_element_loops_vectorise(builder.finish());
  }
}

// The transcendental part of the benchmark's pointwise chain: float32 exp
// and sigmoid (the prelude's polynomial), a NaN-propagating maximum with an
// input, rsqrt, reciprocal and copysign.
TEST(VectorisationTest, ExpSigmoidChainVectorises) {
  Builder builder("exp_sigmoid_chain", KernelKind::kPointwise, 1);
  ValueId x = builder.load(builder.add_input(DType::kFloat32, Layout::kContiguous));
  ValueId y = builder.unary(OpCode::kExp, builder.unary(OpCode::kNegate, builder.unary(OpCode::kAbs, x)));
  y = builder.unary(OpCode::kSigmoid, y);
  y = builder.unary(OpCode::kRsqrt, builder.binary(OpCode::kMaximum, y, x));
  y = builder.binary(OpCode::kCopysign, builder.unary(OpCode::kReciprocal, y), x);
  builder.store(builder.add_output(DType::kFloat32, Layout::kContiguous), y);
  expect_element_loops_vectorise(builder.finish());
}

// The CNN inference's first pool, fixed shape, as its program fuses it: a
// running NaN-propagating maximum of four NCHW taps read two floats apart
// along its rows (max_pool2d's decomposition), then a ReLU, into one
// channels-last result written 16 floats apart. Unrolled whole, its rows
// stayed scalar (41 us against 21 us in a C harness).
TEST(VectorisationTest, FixedShapeRowsNoOperandStepsThroughContiguouslyVectorise) {
  Builder builder("nchw_pool_to_channels_last", KernelKind::kPointwise, 4);
  ValueId larger = kNoValue;
  for (int tap = 0; tap < 4; ++tap) {
    ValueId value = builder.load(builder.add_input(DType::kFloat32, Layout::kStrided));
    if (tap == 0) {
      larger = value;
      continue;
    }
    ValueId wins = builder.binary(OpCode::kLogicalOr, builder.binary(OpCode::kGreater, value, larger),
                                  builder.unary(OpCode::kIsNan, value));
    larger = builder.select(wins, value, larger);
  }
  ValueId relu = builder.binary(OpCode::kMaximum, larger, builder.constant(0, DType::kFloat32));
  builder.store(builder.add_output(DType::kFloat32, Layout::kStrided), relu);
  Kernel kernel = builder.finish();
  kernel.fixed_shape.sizes = {8, 16, 8, 16};
  const std::vector<int64_t> tap_strides = {2, 256, 32, 4096};
  kernel.fixed_shape.strides = {tap_strides, tap_strides, tap_strides, tap_strides, {16, 1, 128, 1024}};
  expect_element_loops_vectorise(kernel, "static void kiln_whole_rows");
}

// libm functions go through kiln_vm_<function> (codegen/vector_math.h): their
// loops still vectorise, calling the routed vector variants.
TEST(VectorisationTest, RoutedMathVectorises) {
  for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
    Builder builder("routed_math", KernelKind::kPointwise, 1);
    ValueId x = builder.load(builder.add_input(dtype, Layout::kContiguous));
    ValueId y = builder.unary(OpCode::kTanh, x);
    y = builder.binary(OpCode::kPower, builder.unary(OpCode::kAbs, y), x);
    y = builder.binary(OpCode::kAtan2, y, builder.unary(OpCode::kErf, x));
    builder.store(builder.add_output(dtype, Layout::kContiguous), y);
    SCOPED_TRACE(dtype_name(dtype));
    expect_element_loops_vectorise(builder.finish());
  }
}

}  // namespace
}  // namespace kiln::ir
