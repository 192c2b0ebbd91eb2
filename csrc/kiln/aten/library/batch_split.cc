// Where a queued linalg or FFT call may be cut (batch_split.h).
#include "kiln/aten/library/batch_split.h"

#include <algorithm>
#include <string_view>

namespace kiln::torch_integration::library {
namespace {

// Factorizations and solves over a batch of matrices, each computed on its own.
constexpr std::string_view kBatchedLinalgOps[] = {
    "aten::linalg_lu_factor_ex", "aten::linalg_lu",  "aten::linalg_cholesky_ex",
    "aten::linalg_inv_ex",       "aten::_linalg_det", "aten::_linalg_slogdet",
    "aten::linalg_qr",           "aten::geqrf",       "aten::linalg_matrix_exp",
    "aten::linalg_solve_triangular", "aten::triangular_solve", "aten::_linalg_solve_ex",
};

constexpr std::string_view kFftOps[] = {"aten::_fft_r2c", "aten::_fft_c2r", "aten::_fft_c2c"};

template <size_t N>
bool is_one_of(std::string_view name, const std::string_view (&names)[N]) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

bool is_out(const c10::OperatorHandle& op, size_t index) { return op.schema().arguments()[index].is_out(); }

// The largest of `candidates` (dims of `sizes`), or -1 when none has 2 or more.
int64_t largest(const std::vector<int64_t>& candidates, at::IntArrayRef sizes) {
  int64_t best = -1;
  for (int64_t dim : candidates) {
    if (sizes[dim] >= 2 && (best < 0 || sizes[dim] > sizes[best])) best = dim;
  }
  return best;
}

// Whether `tensor` has at least dim + 1 dims and `extent` positions in `dim`.
bool has_extent(const at::Tensor& tensor, int64_t dim, int64_t extent) {
  return tensor.dim() > dim && tensor.size(dim) == extent;
}

BatchSplit fft_split(const c10::OperatorHandle& op, const std::vector<c10::IValue>& arguments,
                     const std::vector<at::Tensor>& outputs) {
  BatchSplit split;
  const auto& schema = op.schema();
  if (arguments.empty() || !arguments[0].isTensor()) return split;
  const at::Tensor& self = arguments[0].toTensor();
  std::vector<bool> transformed(self.dim(), false);
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (schema.arguments()[i].name() != "dim") continue;
    if (!arguments[i].isIntList()) return split;
    for (int64_t dim : arguments[i].toIntVector()) {
      transformed[c10::maybe_wrap_dim(dim, self.dim())] = true;
    }
  }
  std::vector<int64_t> batch;
  for (int64_t dim = 0; dim < self.dim(); ++dim) {
    if (!transformed[dim]) batch.push_back(dim);
  }
  const int64_t dim = largest(batch, self.sizes());
  if (dim < 0) return split;
  for (const at::Tensor& output : outputs) {
    if (output.dim() != self.dim() || !has_extent(output, dim, self.size(dim))) return split;
  }
  split.cut.assign(arguments.size(), false);
  split.cut[0] = true;
  for (size_t i = 1; i < arguments.size(); ++i) split.cut[i] = is_out(op, i) && arguments[i].isTensor();
  split.dim = dim;
  split.extent = self.size(dim);
  return split;
}

BatchSplit linalg_split(const c10::OperatorHandle& op, const std::vector<c10::IValue>& arguments,
                        const std::vector<at::Tensor>& outputs) {
  BatchSplit split;
  std::vector<const at::Tensor*> inputs;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].isTensor() && !is_out(op, i)) inputs.push_back(&arguments[i].toTensor());
  }
  if (inputs.empty() || inputs[0]->dim() < 3) return split;
  const at::Tensor& first = *inputs[0];
  const int64_t batch_rank = first.dim() - 2;
  const at::IntArrayRef batch = first.sizes().slice(0, batch_rank);
  auto has_batch = [&](const at::Tensor& tensor) {
    return tensor.dim() >= batch_rank && tensor.sizes().slice(0, batch_rank) == batch;
  };
  for (const at::Tensor* input : inputs) {
    if (input->dim() != first.dim() || !has_batch(*input)) return split;
  }
  for (const at::Tensor& output : outputs) {
    if (!has_batch(output)) return split;
  }
  // The outermost batch dimension: a slice of it keeps the batch dimensions
  // mergeable into one, as the CPU kernels view them (linalg_matrix_exp
  // fails on a slice of an inner one).
  const int64_t dim = 0;
  if (first.size(0) < 2) return split;
  split.cut.assign(arguments.size(), false);
  for (size_t i = 0; i < arguments.size(); ++i) split.cut[i] = arguments[i].isTensor();
  split.dim = dim;
  split.extent = first.size(dim);
  return split;
}

}  // namespace

BatchSplit batch_split(const c10::OperatorHandle& op, const std::vector<c10::IValue>& arguments,
                       const std::vector<at::Tensor>& outputs) {
  const std::string& name = op.schema().name();
  if (is_one_of(name, kFftOps)) return fft_split(op, arguments, outputs);
  if (is_one_of(name, kBatchedLinalgOps)) return linalg_split(op, arguments, outputs);
  return {};
}

}  // namespace kiln::torch_integration::library
