#include "kernel_runner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>

#include "kiln/compiler/codegen/c_source.h"
#include "kiln/compiler/shared_library.h"
#include "kiln/compiler/toolchain.h"

namespace kiln::testing_support {

KernelEntry compile_kernel(const ir::Kernel& kernel) {
  StatusOr<codegen::CSource> source = codegen::generate_c(kernel);
  EXPECT_TRUE(source.ok()) << source.status().message();
  if (!source.ok()) return nullptr;
  static Toolchain toolchain = Toolchain::probe("cc").value();
  char pattern[] = "/tmp/kiln-codegen-test-XXXXXX";
  std::string directory = mkdtemp(pattern);
  std::string c_path = directory + "/kernel.c";
  std::ofstream(c_path) << source.value().text;
  Status compiled = toolchain.compile(c_path, directory + "/kernel.so");
  EXPECT_TRUE(compiled.ok()) << compiled.message();
  if (!compiled.ok()) return nullptr;
  // Kept loaded for the rest of the test process.
  static std::vector<std::unique_ptr<SharedLibrary>> libraries;
  StatusOr<std::unique_ptr<SharedLibrary>> library = SharedLibrary::load(directory + "/kernel.so");
  EXPECT_TRUE(library.ok()) << library.status().message();
  if (!library.ok()) return nullptr;
  void* entry = library.value()->symbol(source.value().entry_symbol).value();
  libraries.push_back(std::move(library.value()));
  std::system(("rm -rf '" + directory + "'").c_str());
  return reinterpret_cast<KernelEntry>(entry);
}

LaunchBuilder::LaunchBuilder(std::vector<int64_t> sizes) {
  for (size_t dim = 0; dim < sizes.size(); ++dim) args.sizes[dim] = sizes[dim];
}

LaunchBuilder& LaunchBuilder::operand(void* data, std::vector<int64_t> strides) {
  args.data[operands] = static_cast<char*>(data);
  for (size_t dim = 0; dim < strides.size(); ++dim) args.strides[operands][dim] = strides[dim];
  ++operands;
  return *this;
}

LaunchBuilder& LaunchBuilder::real(int slot, double value) {
  args.scalars[slot].real = value;
  return *this;
}

LaunchBuilder& LaunchBuilder::integer(int slot, int64_t value) {
  args.scalars[slot].integer = value;
  return *this;
}

float half_bits_to_float(uint16_t bits) {
  _Float16 value;
  std::memcpy(&value, &bits, 2);
  return static_cast<float>(value);
}

uint16_t float_to_half_bits(float value) {
  _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, 2);
  return bits;
}

}  // namespace kiln::testing_support
