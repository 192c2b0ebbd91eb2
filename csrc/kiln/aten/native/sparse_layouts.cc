// Sparse layouts on the kiln device: refused, with an error that names the
// layout and says what to do instead.
//
// Kiln has no sparse kernels (COO, CSR, CSC, BSR, BSC), and PyTorch's
// device-generic code would otherwise get part of the way: a COO tensor fails
// at creation with the dispatcher's "Could not run ... 'Sparsekiln'", while a
// compressed tensor is created (its constructor dispatches nothing on the
// sparse key) and .to_sparse_csr() of a kiln tensor runs through the CPU
// fallback, only for the first op on the result to fail. So the refusal is
// made where a sparse kiln tensor would come into being:
//   - the sparse constructors and the dense-to-sparse conversions, for calls
//     whose tensors are on kiln (torch.sparse_*_tensor(..., device="kiln")
//     moves its index and value tensors to kiln first; .to("kiln") of a
//     sparse CPU tensor builds the kiln tensor from kiln members);
//   - every op on the Sparse and SparseCsr keys of kiln (creating an empty
//     sparse tensor, and any op on one made some other way).
// The error is NotImplementedError, as PyTorch raises for a layout a backend
// lacks.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>

#include "kiln/aten/cpu_fallback.h"

namespace kiln::torch_integration::native {
namespace {

const char* layout_name(c10::Layout layout) {
  switch (layout) {
    case c10::kSparse: return "torch.sparse_coo";
    case c10::kSparseCsr: return "torch.sparse_csr";
    case c10::kSparseCsc: return "torch.sparse_csc";
    case c10::kSparseBsr: return "torch.sparse_bsr";
    case c10::kSparseBsc: return "torch.sparse_bsc";
    default: return nullptr;
  }
}

// The sparse layout a call is about: a sparse tensor argument's, a layout
// argument's, else the one the op's name says, else the dispatch key's.
std::string call_layout(const c10::OperatorHandle& op, const torch::jit::Stack& stack, const char* key_layout) {
  const auto& arguments = op.schema().arguments();
  const size_t first = stack.size() - arguments.size();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const c10::IValue& value = stack[first + i];
    if (value.isTensor() && value.toTensor().defined()) {
      if (const char* name = layout_name(value.toTensor().layout())) return name;
    }
    if (arguments[i].name() == "layout" && value.isInt()) {
      if (const char* name = layout_name(static_cast<c10::Layout>(value.toInt()))) return name;
    }
  }
  const std::string op_name = op.schema().name();
  for (const char* suffix : {"csr", "csc", "bsr", "bsc"}) {
    if (op_name.find(std::string("sparse_") + suffix) != std::string::npos) return std::string("torch.sparse_") + suffix;
  }
  if (op_name.find("sparse_compressed") != std::string::npos) return "a sparse compressed layout";
  return key_layout;
}

[[noreturn]] void refuse(const c10::OperatorHandle& op, const torch::jit::Stack& stack, const char* key_layout) {
  const std::string layout = call_layout(op, stack, key_layout);
  TORCH_CHECK_NOT_IMPLEMENTED(false, "The kiln device does not support sparse tensors (layout ", layout, "), so '",
                              qualified_op_name(op), "' cannot make or use one on kiln. Keep sparse tensors on the "
                              "CPU (move dense operands there with .cpu() and results back with .to(\"kiln\")), "
                              "or make the tensor dense first with .to_dense() and move that to kiln.");
}

void refuse_dense_call(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  refuse(op, *stack, "torch.sparse_coo");
}

void refuse_sparse_coo(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  refuse(op, *stack, "torch.sparse_coo");
}

void refuse_sparse_compressed(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  refuse(op, *stack, "a sparse compressed layout (CSR, CSC, BSR or BSC)");
}

}  // namespace

// Constructors and conversions reached with kiln tensors. A constructor
// given a layout and a device is routed by BackendSelect to that layout's
// key, where PyTorch's composite kernels would beat a fallback, so the
// constructors are named on the sparse keys too.
constexpr const char* kSparseMakers[] = {
    "_to_sparse", "_to_sparse.sparse_dim", "_to_sparse_csr", "_to_sparse_csc", "_to_sparse_bsr", "_to_sparse_bsc",
    "sparse_coo_tensor.indices", "sparse_coo_tensor.indices_size", "_sparse_coo_tensor_unsafe",
    "sparse_compressed_tensor.comp_plain_value_size", "sparse_compressed_tensor.comp_plain_value",
    "_sparse_compressed_tensor_unsafe", "sparse_csr_tensor.crow_col_value_size", "sparse_csr_tensor.crow_col_value",
    "_sparse_csr_tensor_unsafe", "sparse_csc_tensor.ccol_row_value_size", "sparse_csc_tensor.ccol_row_value",
    "_sparse_csc_tensor_unsafe", "sparse_bsr_tensor.crow_col_value_size", "sparse_bsr_tensor.crow_col_value",
    "_sparse_bsr_tensor_unsafe", "sparse_bsc_tensor.ccol_row_value_size", "sparse_bsc_tensor.ccol_row_value",
    "_sparse_bsc_tensor_unsafe"};

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* name : kSparseMakers) m.impl(name, torch::CppFunction::makeFromBoxedFunction<&refuse_dense_call>());
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  for (const char* name : kSparseMakers) m.impl(name, torch::CppFunction::makeFromBoxedFunction<&refuse_sparse_coo>());
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  for (const char* name : kSparseMakers) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&refuse_sparse_compressed>());
  }
}

TORCH_LIBRARY_IMPL(_, SparsePrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse_coo>());
}

TORCH_LIBRARY_IMPL(_, SparseCsrPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_sparse_compressed>());
}

}  // namespace kiln::torch_integration::native
