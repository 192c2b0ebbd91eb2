#include "kiln/aten/compiled/launch/kernel_launch.h"

#include <algorithm>
#include <cstring>

#include "kiln/aten/compiled/launch/ir_dtype.h"
#include "kiln/aten/library/library_threads.h"
#include "kiln/base/hash.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/status_error.h"
#include "kiln/compiler/codegen/c_source.h"
#include "kiln/compiler/kernel_cache.h"
#include "kiln/ir/printer.h"

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

// Blocks [begin, end) of `block` positions each.
struct BlockCall {
  KernelEntry entry;
  const LaunchArgs* args;
  int64_t block;
  int64_t positions;
};

void run_blocks(void* context, int64_t begin, int64_t end) {
  auto* call = static_cast<BlockCall*>(context);
  call->entry(call->args, begin * call->block, std::min(end * call->block, call->positions));
}

void run(KernelEntry entry, const LaunchArgs& args, const LaunchShape& shape) {
  int64_t cost = std::max<int64_t>(shape.cost_per_position, 1);
  if (shape.positions * cost < 2 * kGrainElements) {
    entry(&args, 0, shape.positions);
    return;
  }
  if (shape.single_threaded) {
    int64_t block = shape.independent_block;
    if (block <= 0 || block >= shape.positions) {
      entry(&args, 0, shape.positions);
      return;
    }
    BlockCall call{entry, &args, block, shape.positions};
    int64_t grain = std::max<int64_t>(kGrainElements / (cost * block), 1);
    library::parallel_over_host_threads((shape.positions + block - 1) / block, grain, &run_blocks, &call);
    return;
  }
  RangeCall call{entry, &args};
  int64_t grain = std::max<int64_t>(kGrainElements / cost, 1);
  library::parallel_over_host_threads(shape.positions, grain, &run_range, &call);
}

}  // namespace

char* kernel_data(const at::Tensor& tensor, const char* op_name) {
  TORCH_CHECK(tensor.device().is_privateuseone(), "Expected all tensors to be on the same device, "
              "but found at least two devices, kiln and ", tensor.device(), "! (in ", op_name, ")");
  return static_cast<char*>(tensor.data_ptr());
}

ir::Layout layout_class(int64_t stride, int64_t size) {
  if (size <= 1 || stride == 1) return ir::Layout::kContiguous;
  return stride == 0 ? ir::Layout::kBroadcast : ir::Layout::kStrided;
}

char scalar_kind_char(ir::DType dtype) {
  return dtype == ir::DType::kFloat64 ? 'f' : dtype == ir::DType::kInt64 ? 'i' : 'b';
}

c10::SmallVector<ir::DType, 4> set_scalars(const char* op_name, c10::ArrayRef<c10::Scalar> scalars,
                                           LaunchArgs& args, Signature& signature, int first_slot) {
  TORCH_CHECK(first_slot + scalars.size() <= static_cast<size_t>(ir::kMaxScalars), op_name,
              ": too many scalar operands for one kernel");
  c10::SmallVector<ir::DType, 4> dtypes;
  int slot = first_slot;
  for (const c10::Scalar& value : scalars) {
    ir::DType dtype = scalar_ir_dtype(value, op_name);
    if (dtype == ir::DType::kFloat64) args.scalars[slot].real = value.toDouble();
    else args.scalars[slot].integer = value.toLong();
    ++slot;
    dtypes.push_back(dtype);
    signature.append(scalar_kind_char(dtype));
  }
  return dtypes;
}

void coalesce_dims(std::vector<KernelDim>& dims, int operands) {
  std::vector<KernelDim> merged;
  for (const KernelDim& dim : dims) {
    if (!merged.empty() && !dim.pinned && !merged.back().pinned) {
      KernelDim& previous = merged.back();
      bool mergeable = true;
      for (int index = 0; index < operands; ++index) {
        if (dim.strides[index] != previous.strides[index] * previous.size) mergeable = false;
      }
      if (mergeable) {
        previous.size *= dim.size;
        previous.logical = -1;
        continue;
      }
    }
    merged.push_back(dim);
  }
  dims = std::move(merged);
}

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
  // By hand: snprintf's format parsing showed up in the per-op cost.
  char digits[24];
  int count = 0;
  uint64_t magnitude = number < 0 ? 0 - static_cast<uint64_t>(number) : static_cast<uint64_t>(number);
  do {
    digits[sizeof(digits) - 1 - count++] = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (number < 0) digits[sizeof(digits) - 1 - count++] = '-';
  return append(std::string_view(digits + sizeof(digits) - count, static_cast<size_t>(count)));
}

ir::FixedShape fix_shape(Signature& signature, const LaunchArgs& args, int rank, int operands) {
  ir::FixedShape shape;
  shape.sizes.assign(args.sizes, args.sizes + rank);
  std::string numbers;
  for (int64_t size : shape.sizes) numbers += std::to_string(size) + ',';
  for (int index = 0; index < operands; ++index) {
    shape.strides.emplace_back(args.strides[index], args.strides[index] + rank);
    numbers += ';';
    for (int64_t stride : shape.strides.back()) numbers += std::to_string(stride) + ',';
  }
  signature.append("|f").append(digest_hex(numbers));
  return shape;
}

KernelEntry cached_kernel(std::string_view signature) {
  return reinterpret_cast<KernelEntry>(KernelCache::instance().lookup(signature));
}

KernelEntry build_kernel(std::string_view signature, const char* op_name,
                         const std::function<ir::Kernel()>& build) {
  KernelCache& cache = KernelCache::instance();
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

namespace {
thread_local LaunchRecording* active_recording = nullptr;
}  // namespace

LaunchRecording::LaunchRecording(Mode mode) : previous_(active_recording), mode_(mode) {
  active_recording = this;
}

LaunchRecording::~LaunchRecording() { active_recording = previous_; }

void LaunchRecording::note(KernelEntry entry, const LaunchArgs& args, const LaunchShape& shape) {
  if (active_recording != nullptr) active_recording->launches_.push_back({entry, args, shape});
}

bool LaunchRecording::active() { return active_recording != nullptr; }

bool LaunchRecording::capturing() {
  return active_recording != nullptr && active_recording->mode_ == Mode::kCapture;
}

bool launch_kernel_inline(Stream& stream, const char* op_name, KernelEntry entry,
                          const LaunchArgs& args, const LaunchShape& shape) {
  if (LaunchRecording::capturing()) {
    LaunchRecording::note(entry, args, shape);
    return true;
  }
  Status status;
  if (!stream.run_inline_if_idle(op_name, shape.bytes, [&]() {
        run(entry, args, shape);
        return Status();
      }, status)) {
    return false;
  }
  LaunchRecording::note(entry, args, shape);
  check_status(status);
  return true;
}

void launch_kernel(Stream& stream, const char* op_name, KernelEntry entry, const LaunchArgs& args,
                   const LaunchShape& shape, KeepAlive keep_alive) {
  if (shape.positions <= 0) return;
  LaunchRecording::note(entry, args, shape);
  if (LaunchRecording::capturing()) return;
  // Small work on an idle stream runs here, reading the arguments in place.
  Status status;
  if (stream.run_inline_if_idle(op_name, shape.bytes, [&]() {
        run(entry, args, shape);
        return Status();
      }, status)) {
    check_status(status);
    return;
  }
  drop_tensors_reused_in_stream_order(keep_alive);
  status = stream.enqueue(op_name,
                                [entry, args, shape, keep_alive = std::move(keep_alive)]() {
                                  run(entry, args, shape);
                                  return Status();
                                });
  check_status(status);
}

void run_now(KernelEntry entry, const LaunchArgs& args, const LaunchShape& shape) { run(entry, args, shape); }

void launch_work(Stream& stream, const char* op_name, size_t bytes, std::function<void()> work,
                 std::vector<at::Tensor> keep_alive) {
  Status status;
  if (stream.run_inline_if_idle(op_name, bytes, [&]() {
        work();
        return Status();
      }, status, kInlineWorkBytes)) {
    check_status(status);
    return;
  }
  drop_tensors_reused_in_stream_order(keep_alive);
  check_status(stream.enqueue(op_name, [work = std::move(work), keep_alive = std::move(keep_alive)]() {
    work();
    return Status();
  }));
}

}  // namespace kiln::torch_integration::compiled
