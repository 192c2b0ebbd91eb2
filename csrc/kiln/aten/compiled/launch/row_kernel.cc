// Row kernels: C-source kernels over the rows of one dim (see row_kernel.h).
#include "kiln/aten/compiled/launch/row_kernel.h"

#include <ATen/ops/empty.h>

#include <algorithm>
#include <vector>

#include "kiln/aten/compiled/launch/kernel_launch.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/status_error.h"
#include "kiln/compiler/codegen/prelude.h"
#include "kiln/compiler/kernel_cache.h"

namespace kiln::torch_integration::compiled {
namespace {

// Launch-argument layout (shared with the C walker below):
//   sizes[0..5]       outer dims, innermost first (1 when unused)
//   strides[i][0..5]  operand i's strides through them
//   strides[i][6]     operand i's stride along its row
//   strides[i][7]     operand i's row length
//   scalars[0..5]     the op's parameters
//   scalars[6]        scratch bytes per thread
//   offset            number of operands
constexpr int kOuterDims = 6;

const char* kRowWalker = R"KILN(
#include <stdlib.h>
static void kiln_row(const kiln_launch_args* args, char* const* rows, const int64_t* steps,
                     const int64_t* lengths, void* scratch);
KILN_EXPORT void kiln_row_entry(const kiln_launch_args* args, int64_t begin, int64_t end) {
  const int operands = (int)args->offset;
  int64_t steps[16], lengths[16];
  char* rows[16];
  for (int index = 0; index < operands; ++index) {
    steps[index] = args->strides[index][6];
    lengths[index] = args->strides[index][7];
  }
  /* One scratch block per call (per thread), reused for every row. */
  void* scratch = args->scalars[6].integer > 0 ? malloc((size_t)args->scalars[6].integer) : 0;
  if (args->scalars[6].integer > 0 && !scratch) return;
  for (int64_t position = begin; position < end; ++position) {
    int64_t rest = position;
    for (int index = 0; index < operands; ++index) rows[index] = args->data[index];
    for (int dim = 0; dim < 6; ++dim) {
      int64_t size = args->sizes[dim];
      int64_t coordinate = rest % size;
      rest /= size;
      for (int index = 0; index < operands; ++index) {
        /* Byte offsets: the element sizes are folded into the strides. */
        rows[index] += coordinate * args->strides[index][dim];
      }
    }
    kiln_row(args, rows, steps, lengths, scratch);
  }
  free(scratch);
}
)KILN";

}  // namespace

std::string row_kernel_prelude() { return std::string(codegen::c_prelude()) + kRowWalker; }

const char* row_dtype_name(c10::ScalarType type) {
  switch (type) {
    case at::kBool: return "b8";
    case at::kByte: return "u8";
    case at::kChar: return "i8";
    case at::kShort: return "i16";
    case at::kInt: return "i32";
    case at::kLong: return "i64";
    case at::kUInt16: return "u16";
    case at::kUInt32: return "u32";
    case at::kUInt64: return "u64";
    case at::kHalf: return "f16";
    case at::kBFloat16: return "bf16";
    case at::kFloat: return "f32";
    case at::kDouble: return "f64";
    default: return nullptr;
  }
}

std::string row_element_type(c10::ScalarType type, std::string_view prefix, const char* op_name) {
  const char* storage = nullptr;
  const char* compute = nullptr;
  const char* load = "(%s)value";
  const char* store = "value";
  bool floating = false;
  switch (type) {
    case at::kBool: storage = "uint8_t"; compute = "int"; store = "(uint8_t)(value != 0)"; break;
    case at::kByte: storage = compute = "uint8_t"; break;
    case at::kChar: storage = compute = "int8_t"; break;
    case at::kShort: storage = compute = "int16_t"; break;
    case at::kInt: storage = compute = "int32_t"; break;
    case at::kLong: storage = compute = "int64_t"; break;
    case at::kUInt16: storage = compute = "uint16_t"; break;
    case at::kUInt32: storage = compute = "uint32_t"; break;
    case at::kUInt64: storage = compute = "uint64_t"; break;
    case at::kHalf:
      storage = "uint16_t"; compute = "float"; floating = true;
      load = "kiln_load_f16(value)"; store = "kiln_store_f16(value)";
      break;
    case at::kBFloat16:
      storage = "uint16_t"; compute = "float"; floating = true;
      load = "kiln_load_bf16(value)"; store = "kiln_store_bf16(value)";
      break;
    case at::kFloat: storage = compute = "float"; floating = true; break;
    case at::kDouble: storage = compute = "double"; floating = true; break;
    default:
      TORCH_CHECK_TYPE(false, op_name, ": the kiln device has no kernel for dtype ", type);
  }
  std::string p(prefix);
  std::string load_text = load;
  if (load_text == "(%s)value") load_text = std::string("(") + compute + ")value";
  std::string text;
  text += "typedef " + std::string(storage) + " " + p + "_t;\n";
  text += "typedef " + std::string(compute) + " " + p + "_compute;\n";
  text += "static inline " + p + "_compute " + p + "_load(" + p + "_t value) { return " + load_text + "; }\n";
  text += "static inline " + p + "_t " + p + "_store(" + p + "_compute value) { return " + store + "; }\n";
  text += "static inline int " + p + "_is_nan(" + p + "_compute value) { return " +
          (floating ? "value != value" : "((void)value, 0)") + "; }\n";
  text += std::string("#define ") + (floating ? "" : "NOT_") + "FLOATING_" + p + " 1\n";
  return text;
}

namespace {
void launch_rows_unrecorded(const RowLaunch& launch, c10::ArrayRef<at::Tensor> operands);
}  // namespace

void launch_rows(const RowLaunch& launch, c10::ArrayRef<at::Tensor> operands) {
  record_static_op(launch.op_name, OpPath::kCompiled);
  launch_rows_unrecorded(launch, operands);
}

namespace {

void launch_rows_unrecorded(const RowLaunch& launch, c10::ArrayRef<at::Tensor> operands) {
  const int count = static_cast<int>(operands.size());
  TORCH_INTERNAL_ASSERT(count >= 1 && count <= 16 && launch.inputs <= count);
  const at::Tensor& first = operands[0];
  const int64_t rank = first.dim();
  // Every operand viewed as [outer..., row]; a 0-d operand is one row of one.
  int64_t rows = 1;
  int64_t longest = 0;
  for (const at::Tensor& operand : operands) {
    // Operands must agree outside the row dim, or the walk would leave them.
    TORCH_INTERNAL_ASSERT(operand.dim() == rank, launch.op_name, ": row kernel operands differ in rank");
    for (int64_t dim = 0; dim < rank; ++dim) {
      TORCH_INTERNAL_ASSERT(dim == launch.dim || operand.size(dim) == first.size(dim), launch.op_name,
                            ": row kernel operands differ in size outside the row dim");
    }
    longest = std::max<int64_t>(longest, operand.dim() == 0 ? 1 : operand.size(launch.dim));
  }
  std::vector<KernelDim> dims;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (dim == launch.dim) continue;
    KernelDim entry{first.size(dim), {}};
    rows *= entry.size;
    if (entry.size == 1) continue;
    for (int index = 0; index < count; ++index) entry.strides[index] = operands[index].stride(dim);
    dims.push_back(entry);
  }
  if (rows == 0) return;
  coalesce_dims(dims, count);
  if (static_cast<int>(dims.size()) > kOuterDims) {
    // Too many outer dims to pass: run on contiguous copies.
    std::vector<at::Tensor> copies;
    for (int index = 0; index < count; ++index) {
      copies.push_back(index < launch.inputs ? operands[index].contiguous()
                                             : at::empty(operands[index].sizes(), operands[index].options()));
    }
    launch_rows_unrecorded(launch, copies);
    for (int index = launch.inputs; index < count; ++index) operands[index].copy_(copies[index]);
    return;
  }

  LaunchArgs args{};
  for (int dim = 0; dim < ir::kMaxRank; ++dim) args.sizes[dim] = 1;
  KeepAlive keep_alive;
  size_t bytes = 0;
  for (int index = 0; index < count; ++index) {
    const at::Tensor& operand = operands[index];
    const int64_t element = operand.element_size();
    for (size_t dim = 0; dim < dims.size(); ++dim) {
      args.sizes[dim] = dims[dim].size;
      args.strides[index][dim] = dims[dim].strides[index] * element;
    }
    const bool scalar = operand.dim() == 0;
    args.strides[index][6] = scalar ? 0 : operand.stride(launch.dim);
    args.strides[index][7] = scalar ? 1 : operand.size(launch.dim);
    args.data[index] = static_cast<char*>(operand.data_ptr());
    keep_alive.push_back(operand);
    bytes += static_cast<size_t>(operand.numel() * element);
  }
  for (int slot = 0; slot < 6; ++slot) args.scalars[slot].integer = launch.scalars[slot];
  args.scalars[6].integer = launch.scratch_bytes + launch.scratch_bytes_per_element * longest;
  args.offset = static_cast<uint64_t>(count);

  KernelEntry entry = cached_kernel(launch.signature);
  if (!entry) {
    StatusOr<void*> loaded = KernelCache::instance().load(launch.signature, [&]() -> StatusOr<KernelSource> {
      KernelSource source;
      source.name = std::string(launch.kernel_name);
      source.ir_text = "(row kernel written in C: " + std::string(launch.signature) + ")";
      source.c_source = row_kernel_prelude() + launch.source();
      source.entry_symbol = "kiln_row_entry";
      return source;
    });
    if (!loaded.ok()) {
      check_status(loaded.status().with_context(std::string("compiling the kernel for ") + launch.op_name));
    }
    entry = reinterpret_cast<KernelEntry>(loaded.value());
  }
  LaunchShape shape;
  shape.positions = rows;
  shape.cost_per_position = std::max<int64_t>(longest * launch.cost_per_element, 1);
  shape.bytes = bytes;
  const at::Tensor& anchor = operands[count - 1];
  launch_kernel(stream_of(anchor), launch.op_name, entry, args, shape, std::move(keep_alive));
}

}  // namespace
}  // namespace kiln::torch_integration::compiled
