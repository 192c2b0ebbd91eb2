// Kernels over an explicit iteration shape, for ops whose operands are not a
// TensorIterator's: gather and scatter families, advanced indexing, copies
// with negative strides (flip), concatenation.
//
// Every operand is a tensor seen through per-dim element strides over the
// iteration shape (signed; 0 for a dim it does not move along) and an element
// offset from its data pointer. Lowering code builds the body with the IR
// builder directly: loads, indexed loads (an int64 element offset added to the
// operand's position, so an operand whose indexed dim has stride 0 is a base
// pointer for gathers), stores and indexed stores.
//
// launch_indexed_kernel drops size-1 dims, orders the others fastest-first
// (by the strides of one chosen operand), merges dims every operand steps
// through as one, and builds, caches and launches the kernel on the stream of
// the first output. Asynchronous, as every launch.
//
// Out-of-range indices: a kernel cannot raise. Lowerings clamp each index
// into range before forming an offset (index_offset below), so no kernel ever
// reads or writes outside its operands; index_checks.h reports the error.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <functional>
#include <string_view>
#include <vector>

#include "kiln/ir/builder.h"

namespace kiln::torch_integration::compiled {

struct KernelOperand {
  at::Tensor tensor;     // owns the memory; gives dtype and device
  int64_t offset = 0;    // elements from tensor.data_ptr() to the element at position 0
  c10::SmallVector<int64_t, 6> strides;  // per dim of the iteration shape, in elements
};

// `view` (of the iteration shape's rank) with its own strides.
KernelOperand operand_of(const at::Tensor& view);
// `tensor` with explicit strides (and offset), e.g. negative ones.
KernelOperand operand_with_strides(const at::Tensor& tensor, c10::IntArrayRef strides,
                                   int64_t offset = 0);

struct IndexedKernelContext {
  ir::Builder& builder;
  std::vector<ir::DType> input_dtypes;   // builder input k is inputs[k]
  std::vector<ir::DType> output_dtypes;  // builder output k is outputs[k]
  std::vector<ir::ValueId> scalars;      // one per launch scalar (f64, i64 or bool)
  // Values, in their compute dtype.
  ir::ValueId load(int input) { return builder.load(input); }
  ir::ValueId load_at(int input, ir::ValueId offset) { return builder.indexed_load(input, offset); }
  ir::ValueId int64(ir::ValueId value) { return builder.cast(value, ir::DType::kInt64); }
  ir::ValueId constant(double value, ir::DType dtype) { return builder.constant(value, dtype); }
};

struct IndexedKernelSpec {
  // Names the body's semantics in the kernel signature: two launches with the
  // same key must build the same IR for the same operand dtypes and layouts.
  std::string_view key;
  // Stores every output (store or store_indexed).
  std::function<void(IndexedKernelContext&)> body;
  // Must be true exactly when the body uses store_indexed.
  bool single_threaded = false;
  // Keeps every dim, unmerged, in logical order (the last dim innermost), so
  // positions run in row-major order and builder.coordinate(d) is the
  // coordinate along logical dim rank-1-d. For order-dependent kernels
  // (nonzero, masked_select). At most ir::kMaxRank dims.
  bool logical_order = false;
  // The operand (inputs first, then outputs) whose strides order the dims;
  // -1: the first output.
  int order_by = -1;
};

// Launches spec over `shape`. Scalars become launch arguments (f64, i64 or
// bool by their kind). Raises if the merged rank exceeds ir::kMaxRank.
void launch_indexed_kernel(const char* op_name, const IndexedKernelSpec& spec,
                           c10::IntArrayRef shape, c10::ArrayRef<KernelOperand> inputs,
                           c10::ArrayRef<KernelOperand> outputs,
                           c10::ArrayRef<c10::Scalar> scalars = {});

// The element offset `index * stride` of an index value, and whether the
// index is in range: [0, size), or [-size, size) counting from the end when
// `wraps`. An index out of range gives offset 0 (the kernel stays inside its
// operand). `index` is any integer value; `size` and `stride` are int64.
struct IndexOffset {
  ir::ValueId offset;
  ir::ValueId valid;  // bool
};
IndexOffset index_offset(ir::Builder& builder, ir::ValueId index, ir::ValueId size,
                         ir::ValueId stride, bool wraps);

// One index tensor of an indexing kernel: element offset
// clamp(index) * stride into a dim of the given size.
struct IndexTerm {
  KernelOperand index;  // an integer tensor over the iteration shape
  int64_t size = 0;     // of the indexed dim
  int64_t stride = 0;   // of the indexed dim, in elements
};
// Terms one kernel takes (two scalars each, leaving room for the op's own).
constexpr int kMaxTermsPerKernel = 3;

// Folds `terms` until at most `max_terms` remain: groups of terms become an
// int64 tensor of their summed (clamped) offsets over `shape`, a term of
// stride 1 that is never out of range.
std::vector<IndexTerm> fold_index_terms(const char* op_name, c10::IntArrayRef shape,
                                        std::vector<IndexTerm> terms, bool wraps,
                                        int max_terms = kMaxTermsPerKernel);
// Appends each term's index operand to `inputs` and its size and stride to
// `scalars`.
void add_index_terms(c10::ArrayRef<IndexTerm> terms, std::vector<KernelOperand>& inputs,
                     std::vector<c10::Scalar>& scalars);
// In a kernel body: the summed offset of `count` terms whose indices are
// inputs first_input.. and whose size/stride are scalars first_scalar..; and
// whether every index was in range.
IndexOffset sum_index_offsets(IndexedKernelContext& context, int first_input, int first_scalar,
                              int count, bool wraps);

// Size and stride of `dim`, a 0-dim tensor counting as one element.
int64_t size_at(const at::Tensor& tensor, int64_t dim);
int64_t stride_at(const at::Tensor& tensor, int64_t dim);
// `tensor`'s strides over an iteration shape of `rank` dims with `dim`
// zeroed: a base operand for indexed access along `dim`. A tensor of another
// rank (0-dim, or one element) stays at its first element (all zeros).
c10::DimVector base_strides(const at::Tensor& tensor, int64_t rank, int64_t dim);
// `tensor` moved to `like`'s device when it is elsewhere (CPU indices).
at::Tensor on_device(const at::Tensor& tensor, const at::Tensor& like);

// destination = source converted to destination's dtype, over `shape`.
void copy_kernel(const char* op_name, c10::IntArrayRef shape, const KernelOperand& destination,
                 const KernelOperand& source);
// The same for two tensors of one shape (source may broadcast: expand() it).
void copy_tensor(const char* op_name, const at::Tensor& destination, const at::Tensor& source);

}  // namespace kiln::torch_integration::compiled
