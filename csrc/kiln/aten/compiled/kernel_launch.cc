#include "kiln/aten/compiled/kernel_launch.h"

#include <algorithm>
#include <cstring>

#include "kiln/c10/status_error.h"
#include "kiln/compiler/codegen/c_source.h"
#include "kiln/compiler/kernel_cache.h"
#include "kiln/ir/printer.h"
#include "kiln/runtime/thread_pool.h"

namespace kiln::torch_integration::compiled {
namespace {

// Work below this many elements runs on one thread: ATen's grain size.
constexpr int64_t kGrainElements = 32768;

struct RangeCall {
  KernelEntry entry;
  const LaunchArgs* args;
};

void run_range(void* context, int64_t begin, int64_t end) {
  auto* call = static_cast<RangeCall*>(context);
  call->entry(call->args, begin, end);
}

void run(KernelEntry entry, const LaunchArgs& args, const LaunchShape& shape) {
  int64_t cost = std::max<int64_t>(shape.cost_per_position, 1);
  if (shape.single_threaded || shape.positions * cost < 2 * kGrainElements) {
    entry(&args, 0, shape.positions);
    return;
  }
  RangeCall call{entry, &args};
  int64_t grain = std::max<int64_t>(kGrainElements / cost, 1);
  ThreadPool::instance().parallel_for(shape.positions, grain, &run_range, &call);
}

}  // namespace

Signature& Signature::append(std::string_view text) {
  TORCH_INTERNAL_ASSERT(length_ + text.size() <= sizeof(buffer_), "kernel signature too long");
  std::memcpy(buffer_ + length_, text.data(), text.size());
  length_ += text.size();
  return *this;
}

Signature& Signature::append(char character) {
  TORCH_INTERNAL_ASSERT(length_ < sizeof(buffer_), "kernel signature too long");
  buffer_[length_++] = character;
  return *this;
}

Signature& Signature::append_number(int64_t number) {
  char digits[24];
  int count = std::snprintf(digits, sizeof(digits), "%lld", static_cast<long long>(number));
  return append(std::string_view(digits, static_cast<size_t>(count)));
}

KernelEntry kernel_for(std::string_view signature, const char* op_name,
                       const std::function<ir::Kernel()>& build) {
  KernelCache& cache = KernelCache::instance();
  if (void* entry = cache.lookup(signature)) return reinterpret_cast<KernelEntry>(entry);
  StatusOr<void*> loaded = cache.load(signature, [&]() -> StatusOr<KernelSource> {
    ir::Kernel kernel = build();
    StatusOr<codegen::CSource> source = codegen::generate_c(kernel);
    if (!source.ok()) return source.status();
    KernelSource result;
    result.name = kernel.name;
    result.ir_text = ir::print(kernel);
    result.c_source = std::move(source.value().text);
    result.entry_symbol = std::move(source.value().entry_symbol);
    return result;
  });
  if (!loaded.ok()) {
    check_status(loaded.status().with_context(std::string("compiling the kernel for ") + op_name));
  }
  return reinterpret_cast<KernelEntry>(loaded.value());
}

void launch_kernel(Stream& stream, const char* op_name, KernelEntry entry, const LaunchArgs& args,
                   const LaunchShape& shape, KeepAlive keep_alive) {
  if (shape.positions <= 0) return;
  Status status = stream.launch(op_name, shape.bytes,
                                [entry, args, shape, keep_alive = std::move(keep_alive)]() {
                                  run(entry, args, shape);
                                  return Status();
                                });
  check_status(status);
}

}  // namespace kiln::torch_integration::compiled
