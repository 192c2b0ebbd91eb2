#include "kiln/aten/program/extern_call.h"

#include <ATen/ops/empty.h>
#include <c10/core/GradMode.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <array>

#include "kiln/aten/library/library_kernels.h"
#include "kiln/aten/native/native_kernels.h"

namespace kiln::torch_integration::program {
namespace {

c10::IValue tensor_argument(const ExternCall::TensorArgument& argument,
                            const std::vector<at::Tensor>& values) {
  using Kind = ExternCall::TensorArgument::Kind;
  switch (argument.kind) {
    case Kind::kSingle:
      if (argument.values[0] == ir::kNoValue) return c10::IValue();
      return values[argument.values[0]];
    case Kind::kList: {
      c10::List<at::Tensor> list;
      list.reserve(argument.values.size());
      for (ir::GraphValueId value : argument.values) list.push_back(values[value]);
      return list;
    }
    case Kind::kOptionalList: {
      c10::List<std::optional<at::Tensor>> list;
      list.reserve(argument.values.size());
      for (ir::GraphValueId value : argument.values) {
        list.push_back(value == ir::kNoValue ? std::optional<at::Tensor>() : values[value]);
      }
      return list;
    }
  }
  return c10::IValue();
}

bool has_layout(const at::Tensor& tensor, const ExternCall::Layout& layout) {
  return tensor.sizes().equals(layout.sizes) && tensor.strides().equals(layout.strides) &&
         tensor.storage_offset() == layout.storage_offset;
}

// A tensor sharing `base`'s storage with `layout`: what the view op would
// return, made without the dispatcher. Only for values the program reads
// itself, so no autograd view tracking is needed.
at::Tensor make_view(const at::Tensor& base, const ExternCall::Layout& layout) {
  at::Tensor view = at::detail::make_tensor<c10::TensorImpl>(c10::TensorImpl::VIEW, c10::Storage(base.storage()),
                                                             base.key_set(), base.dtype());
  view.unsafeGetTensorImpl()->set_sizes_and_strides(layout.sizes, layout.strides, layout.storage_offset);
  return view;
}

}  // namespace

void ExternCall::choose_direct() {
  const c10::OperatorName& name = op->operator_name();
  if (!name.overload_name.empty()) return;
  if (name.name == "aten::mm") direct = Direct::kMm;
  if (name.name == "aten::addmm") direct = Direct::kAddmm;
  if (name.name == "aten::bmm") direct = Direct::kBmm;
  if (name.name == "aten::baddbmm") direct = Direct::kBaddbmm;
  if (name.name == "aten::copy_") direct = Direct::kCopy;
}

bool ExternCall::run_direct_copy(std::vector<at::Tensor>& values) const {
  if (tensor_arguments.size() != 2) return false;
  for (size_t i = 0; i < 2; ++i) {
    const TensorArgument& argument = tensor_arguments[i];
    if (argument.kind != TensorArgument::Kind::kSingle || argument.position != static_cast<int>(i) ||
        argument.values[0] == ir::kNoValue || !values[argument.values[0]].defined()) {
      return false;
    }
  }
  const at::Tensor& destination = values[tensor_arguments[0].values[0]];
  const at::Tensor& source = values[tensor_arguments[1].values[0]];
  // Anything else (another device or dtype, broadcasting, conjugate or
  // negative views, a copy autograd records) takes the dispatcher.
  if (!destination.device().is_privateuseone() || source.device() != destination.device() ||
      source.scalar_type() != destination.scalar_type() || !source.sizes().equals(destination.sizes()) ||
      source.is_conj() || destination.is_conj() || source.is_neg() || destination.is_neg() ||
      (c10::GradMode::is_enabled() && (source.requires_grad() || destination.requires_grad()))) {
    return false;
  }
  if (!source.is_same(destination)) native::copy_from(source, destination, /*non_blocking=*/false);
  destination.unsafeGetTensorImpl()->bump_version();
  for (const Result& result : results) values[result.value] = destination;  // copy_ returns its self
  return true;
}

bool ExternCall::run_direct(std::vector<at::Tensor>& values) const {
  if (direct == Direct::kCopy) return run_direct_copy(values);
  const bool biased = direct == Direct::kAddmm || direct == Direct::kBaddbmm;
  const int64_t rank = direct == Direct::kMm || direct == Direct::kAddmm ? 2 : 3;
  const size_t tensors = biased ? 3 : 2;
  if (tensor_arguments.size() != tensors) return false;
  std::array<const at::Tensor*, 3> operands{};
  for (size_t i = 0; i < tensors; ++i) {
    const TensorArgument& argument = tensor_arguments[i];
    if (argument.kind != TensorArgument::Kind::kSingle || argument.position != static_cast<int>(i) ||
        argument.values[0] == ir::kNoValue) {
      return false;
    }
    operands[i] = &values[argument.values[0]];
    if (!operands[i]->defined()) return false;
  }
  const at::Tensor& mat1 = *operands[biased ? 1 : 0];
  const at::Tensor& mat2 = *operands[biased ? 2 : 1];
  for (size_t i = 0; i < tensors; ++i) {
    if (operands[i]->device() != mat1.device() || operands[i]->scalar_type() != mat1.scalar_type()) return false;
  }
  if (!mat1.device().is_privateuseone() || mat1.dim() != rank || mat2.dim() != rank) return false;
  at::Tensor out = rank == 2 ? at::empty({mat1.size(0), mat2.size(1)}, mat1.options())
                             : at::empty({mat1.size(0), mat1.size(1), mat2.size(2)}, mat1.options());
  switch (direct) {
    case Direct::kMm:
      library::mm_out(mat1, mat2, out);
      break;
    case Direct::kAddmm:
      library::addmm_out(*operands[0], mat1, mat2, arguments[3].toScalar(), arguments[4].toScalar(), out);
      break;
    case Direct::kBmm:
      library::bmm_out(mat1, mat2, out);
      break;
    case Direct::kBaddbmm:
      library::baddbmm_out(*operands[0], mat1, mat2, arguments[3].toScalar(), arguments[4].toScalar(), out);
      break;
    case Direct::kNone:
    case Direct::kCopy:
      return false;
  }
  values[results.front().value] = std::move(out);
  return true;
}

void ExternCall::run(std::vector<at::Tensor>& values) const {
  if (static_view) {
    const at::Tensor& base = values[tensor_arguments.front().values.front()];
    if (base.defined() && has_layout(base, static_view->base_layout)) {
      values[results.front().value] = make_view(base, static_view->view_layout);
      return;
    }
  }
  torch::jit::Stack stack;
  try {
    if (direct != Direct::kNone && run_direct(values)) return;
    stack = arguments;
    for (const TensorArgument& argument : tensor_arguments) {
      stack[argument.position] = tensor_argument(argument, values);
    }
    op->callBoxed(stack);
  } catch (c10::Error& error) {
    error.add_context("in the compiled graph's call of " + label +
                      (source_line.empty() ? std::string() : " from " + source_line));
    throw;
  }
  for (const Result& result : results) {
    const c10::IValue& returned = stack.at(result.position);
    values[result.value] = result.list_index < 0 ? returned.toTensor()
                                                 : returned.toTensorList().get(result.list_index);
  }
}

}  // namespace kiln::torch_integration::program
