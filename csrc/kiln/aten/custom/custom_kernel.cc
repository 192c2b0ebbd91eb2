#include "kiln/aten/custom/custom_kernel.h"

#include <c10/util/Exception.h>

#include <deque>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/base/hash.h"
#include "kiln/c10/device_guard.h"
#include "kiln/c10/status_error.h"
#include "kiln/compiler/codegen/prelude.h"
#include "kiln/compiler/kernel_cache.h"

namespace kiln::torch_integration::custom {
namespace {

struct LoadedKernel {
  std::string name;  // its c_str() names queued work: never moves (a deque)
  KernelEntry entry = nullptr;
};

struct KernelTable {
  std::mutex mutex;
  std::deque<LoadedKernel> kernels;
  std::unordered_map<std::string, int64_t> by_signature;
};

KernelTable& table() {
  static KernelTable* instance = new KernelTable();  // used by queued work at exit: never destroyed
  return *instance;
}

const LoadedKernel& loaded(int64_t handle) {
  KernelTable& kernels = table();
  std::lock_guard<std::mutex> lock(kernels.mutex);
  TORCH_CHECK(handle >= 0 && handle < static_cast<int64_t>(kernels.kernels.size()),
              "no custom kernel was loaded with handle ", handle);
  return kernels.kernels[static_cast<size_t>(handle)];
}

// The name as a file-name fragment: letters, digits and '_' only.
std::string file_name_of(const std::string& name) {
  std::string result;
  for (char character : name) {
    bool plain = (character >= 'a' && character <= 'z') || (character >= 'A' && character <= 'Z') ||
                 (character >= '0' && character <= '9') || character == '_';
    result += plain ? character : '_';
  }
  return "custom_" + result;
}

// A C string literal holding `text`.
std::string c_string_literal(const std::string& text) {
  std::string result = "\"";
  for (char character : text) {
    if (character == '"' || character == '\\') result += '\\';
    result += character == '\n' ? ' ' : character;
  }
  return result + "\"";
}

std::string shape_text(c10::IntArrayRef sizes) {
  std::ostringstream text;
  text << sizes;
  return text.str();
}

}  // namespace

const char* custom_prelude() {
  return R"KILN(#include <math.h>
#include <stddef.h>
/* Custom kernels (docs/guides/custom_kernels.md). Dims are numbered from the
   innermost (0) outwards, as in every Kiln kernel. */
#define KILN_KERNEL(name) \
  KILN_EXPORT void name(const kiln_launch_args* args, int64_t begin, int64_t end)
#define KILN_DATA(operand, type) ((type*)args->data[operand])
#define KILN_SIZE(dim) (args->sizes[dim])
#define KILN_STRIDE(operand, dim) (args->strides[operand][dim])
#define KILN_REAL(index) (args->scalars[index].real)
#define KILN_INT(index) (args->scalars[index].integer)
)KILN";
}

std::string custom_kernel_translation_unit(const std::string& source, const SourceLocation& location) {
  std::string text = codegen::c_prelude();
  text += custom_prelude();
  text += "#line " + std::to_string(location.line) + " " + c_string_literal(location.file) + "\n";
  text += source;
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

int64_t load_custom_kernel(const std::string& name, const std::string& entry_symbol,
                           const std::string& source, const SourceLocation& location) {
  TORCH_CHECK(!name.empty(), "a custom kernel needs a name");
  TORCH_CHECK(!entry_symbol.empty(), "custom kernel '", name, "': no entry function (define it with KILN_KERNEL)");
  SourceLocation where = location;
  if (where.file.empty()) where.file = name;
  std::string unit = custom_kernel_translation_unit(source, where);
  std::string signature = "custom|" + name + "|" + entry_symbol + "|" + digest_hex(unit);
  {
    KernelTable& kernels = table();
    std::lock_guard<std::mutex> lock(kernels.mutex);
    auto found = kernels.by_signature.find(signature);
    if (found != kernels.by_signature.end()) return found->second;
  }
  StatusOr<void*> entry = KernelCache::instance().load(signature, [&]() -> StatusOr<KernelSource> {
    KernelSource result;
    result.name = file_name_of(name);
    result.ir_text = "custom kernel " + name + " from " + where.file + ":" + std::to_string(where.line) + "\n";
    result.c_source = unit;
    result.entry_symbol = entry_symbol;
    return result;
  });
  if (!entry.ok()) check_status(entry.status().with_context("custom kernel '" + name + "'"));
  KernelTable& kernels = table();
  std::lock_guard<std::mutex> lock(kernels.mutex);
  auto found = kernels.by_signature.find(signature);
  if (found != kernels.by_signature.end()) return found->second;  // another thread got there first
  kernels.kernels.push_back({name, reinterpret_cast<KernelEntry>(entry.value())});
  int64_t handle = static_cast<int64_t>(kernels.kernels.size()) - 1;
  kernels.by_signature.emplace(signature, handle);
  return handle;
}

const std::string& custom_kernel_name(int64_t handle) { return loaded(handle).name; }

void launch_custom_kernel(int64_t handle, const CustomLaunch& launch) {
  const LoadedKernel& kernel = loaded(handle);
  const std::string& name = kernel.name;
  const size_t operand_count = launch.inputs.size() + launch.outputs.size();
  TORCH_CHECK(operand_count <= static_cast<size_t>(ir::kMaxOperands), "custom kernel '", name, "': ",
              operand_count, " tensors, but a kernel takes at most ", ir::kMaxOperands);
  TORCH_CHECK(!launch.outputs.empty(), "custom kernel '", name, "': a launch needs at least one output");
  const int64_t rank = static_cast<int64_t>(launch.shape.size());
  TORCH_CHECK(rank <= ir::kMaxRank, "custom kernel '", name, "': the launch shape ", shape_text(launch.shape),
              " has ", rank, " dims, but a kernel takes at most ", ir::kMaxRank);
  TORCH_CHECK(launch.scalars.size() <= static_cast<size_t>(ir::kMaxScalars), "custom kernel '", name, "': ",
              launch.scalars.size(), " scalars, but a kernel takes at most ", ir::kMaxScalars);
  for (int64_t size : launch.shape) {
    TORCH_CHECK(size >= 0, "custom kernel '", name, "': negative size in the launch shape ", shape_text(launch.shape));
  }
  TORCH_CHECK(launch.positions >= 0, "custom kernel '", name, "': negative positions (", launch.positions, ")");

  const c10::Device device = launch.outputs.front().device();
  LaunchArgs args{};
  compiled::KeepAlive keep_alive;
  size_t bytes = 0;
  int operand = 0;
  auto add_operand = [&](const at::Tensor& tensor, bool is_output, size_t index) {
    const char* role = is_output ? "output " : "input ";
    TORCH_CHECK(tensor.defined(), "custom kernel '", name, "': ", role, index, " is undefined");
    TORCH_CHECK(tensor.device().is_privateuseone(), "custom kernel '", name, "': ", role, index,
                " is on ", tensor.device(), ", but custom kernels run on the kiln device");
    TORCH_CHECK(tensor.device() == device, "custom kernel '", name, "': ", role, index, " is on ",
                tensor.device(), ", but output 0 is on ", device);
    TORCH_CHECK(tensor.layout() == at::kStrided, "custom kernel '", name, "': ", role, index,
                " has layout ", tensor.layout(), "; custom kernels take strided tensors");
    const int64_t dims = tensor.dim();
    // Outputs too may broadcast (a per-row statistic of shape [rows, 1]):
    // the kernel writes such an output through stride 0 along that dim.
    bool fits = dims <= rank;
    for (int64_t dim = 0; fits && dim < dims; ++dim) {
      int64_t size = tensor.size(dims - 1 - dim);
      fits = size == launch.shape[rank - 1 - dim] || size == 1;
    }
    TORCH_CHECK(fits, "custom kernel '", name, "': ", role, index, " has shape ", shape_text(tensor.sizes()),
                ", which does not broadcast to the launch shape ", shape_text(launch.shape));
    // Kernel dim d is the tensor's dim (dims - 1 - d), counted from the innermost.
    for (int64_t dim = 0; dim < rank; ++dim) {
      int64_t stride = 0;
      if (dim < dims && !(tensor.size(dims - 1 - dim) == 1 && launch.shape[rank - 1 - dim] != 1)) {
        stride = tensor.stride(dims - 1 - dim);
      }
      args.strides[operand][dim] = stride;
    }
    args.data[operand] = static_cast<char*>(tensor.data_ptr());
    bytes += tensor.numel() * tensor.element_size();
    keep_alive.push_back(tensor);
    ++operand;
  };
  for (size_t index = 0; index < launch.inputs.size(); ++index) add_operand(launch.inputs[index], false, index);
  for (size_t index = 0; index < launch.outputs.size(); ++index) add_operand(launch.outputs[index], true, index);
  for (int64_t dim = 0; dim < rank; ++dim) args.sizes[dim] = launch.shape[rank - 1 - dim];
  for (size_t index = 0; index < launch.scalars.size(); ++index) {
    const c10::Scalar& scalar = launch.scalars[index];
    TORCH_CHECK(!scalar.isComplex(), "custom kernel '", name, "': scalar ", index, " is complex; kernels take "
                "real and integer scalars");
    if (scalar.isFloatingPoint()) args.scalars[index].real = scalar.toDouble();
    else args.scalars[index].integer = scalar.toLong();
  }

  record_op(name, OpPath::kCustom);
  int64_t elements = 1;
  for (int64_t size : launch.shape) elements *= size;
  if (elements == 0 || launch.positions == 0) return;
  compiled::LaunchShape shape;
  shape.positions = launch.positions;
  shape.cost_per_position = std::max<int64_t>(launch.cost_per_position, 1);
  shape.bytes = bytes;
  shape.single_threaded = launch.single_threaded;
  compiled::launch_kernel(current_runtime_stream(device.index()), name.c_str(), kernel.entry, args, shape,
                          std::move(keep_alive));
}

}  // namespace kiln::torch_integration::custom
