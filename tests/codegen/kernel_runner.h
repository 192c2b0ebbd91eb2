// Test helper: compiles an IR kernel with the system C compiler and runs it on
// host buffers, bypassing the kernel cache.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/compiler/kernel_abi.h"
#include "kiln/ir/kernel.h"

namespace kiln::testing_support {

// Compiles `kernel` into a fresh temporary directory; fails the test (and
// returns nullptr) when generation or compilation fails.
KernelEntry compile_kernel(const ir::Kernel& kernel);

// Launch arguments for operands given as (pointer, strides in elements).
struct LaunchBuilder {
  LaunchArgs args{};
  int operands = 0;
  explicit LaunchBuilder(std::vector<int64_t> sizes);
  LaunchBuilder& operand(void* data, std::vector<int64_t> strides);
  LaunchBuilder& real(int slot, double value);
  LaunchBuilder& integer(int slot, int64_t value);
};

// Bits of float16/bfloat16 as numbers, for expected values.
float half_bits_to_float(uint16_t bits);
uint16_t float_to_half_bits(float value);

}  // namespace kiln::testing_support
