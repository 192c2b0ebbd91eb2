#include "kiln/aten/compiled/nn/attention/masked_softmax.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/masked_fill.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>

#include <limits>

#include "kiln/aten/device_checks.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

void check_dtype(at::ScalarType type, const char* kernel_name) {
  const bool supported = type == at::kFloat || type == at::kDouble || type == at::kHalf || type == at::kBFloat16;
  TORCH_CHECK_NOT_IMPLEMENTED(supported, "\"", kernel_name, "\" not implemented for '", c10::toString(type), "'");
}

void check_bool_mask(const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "Mask should be a boolean tensor");
}

// The mask as a view of the input's shape, after the CPU's checks of its
// type: the CPU reads an [L, L] mask's row l for query l of every batch and
// head, and a [B, L] mask's row b for every head and query of batch b.
at::Tensor mask_of_input_shape(const at::Tensor& input, const at::Tensor& mask, std::optional<int64_t> mask_type) {
  if (mask.dim() != 2 || input.dim() != 4) mask_type = 2;  // the only type for other ranks
  TORCH_CHECK(mask_type.has_value(), "Mask Type should be defined");
  TORCH_CHECK(*mask_type == 0 || *mask_type == 1 || *mask_type == 2,
              "Mask Type should be 0 (src_mask) or 1 (src_key_padding_mask), or 2 (default_mask)");
  if (*mask_type == 2) {
    TORCH_CHECK(input.sizes() == mask.sizes(), "For mask_type == 2 mask shape should match input shape");
    return mask;
  }
  if (*mask_type == 1) {
    TORCH_CHECK(input.size(0) == mask.size(0) && input.size(2) == mask.size(1),
                "For mask_type == 1 mask shape should be (B, L)");
  } else {
    TORCH_CHECK(input.size(2) == mask.size(0) && input.size(2) == mask.size(1),
                "For mask_type == 0 mask shape should be (L, L)");
  }
  // The CPU's kernel reads rows of the input's last size from the mask.
  TORCH_CHECK(input.size(3) == mask.size(1), "_masked_softmax: a mask of mask_type ", *mask_type,
              " needs an input [B, H, L, L] (self-attention scores), got input ", input.sizes(), " and mask ",
              mask.sizes());
  return *mask_type == 1 ? mask.view({mask.size(0), 1, 1, mask.size(1)}).expand(input.sizes())
                         : mask.view({1, 1, mask.size(0), mask.size(1)}).expand(input.sizes());
}

}  // namespace

at::Tensor masked_softmax(const at::Tensor& input, const at::Tensor& mask, std::optional<int64_t> dim,
                          std::optional<int64_t> mask_type) {
  record_static_op("aten::_masked_softmax", OpPath::kNative);
  check_same_device(input.device(), mask, "aten::_masked_softmax");
  check_bool_mask(mask);
  const at::Tensor shaped_mask = mask_of_input_shape(input, mask, mask_type);
  check_dtype(input.scalar_type(), "masked_softmax");
  const int64_t wrapped = at::maybe_wrap_dim(dim.value_or(input.dim() - 1), input.dim());
  // -inf at a masked position: exp gives it 0 and it cannot be a row's
  // maximum unless every position is masked, where the sum is 0 and the
  // row NaN, as the CPU's kernel computes.
  const at::Tensor scores = input.masked_fill(shaped_mask, -std::numeric_limits<double>::infinity());
  return at::_softmax(scores, wrapped, /*half_to_float=*/false);
}

at::Tensor masked_softmax_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& mask,
                                   std::optional<int64_t> dim) {
  record_static_op("aten::_masked_softmax_backward", OpPath::kNative);
  check_same_device({grad, output, mask});
  TORCH_CHECK(grad.sizes() == mask.sizes(), "Mask shape should match grad shape");
  check_bool_mask(mask);
  TORCH_CHECK(output.sizes() == grad.sizes(), "_masked_softmax_backward: expected output of the gradient's shape ",
              grad.sizes(), ", got ", output.sizes());
  TORCH_CHECK(output.scalar_type() == grad.scalar_type(), "_masked_softmax_backward: expected output of dtype ",
              grad.scalar_type(), " (the gradient's), got ", output.scalar_type());
  check_dtype(grad.scalar_type(), "masked_softmax_backward");
  const int64_t wrapped = at::maybe_wrap_dim(dim.value_or(output.dim() - 1), grad.dim());
  const at::Tensor row_sum = grad.mul(output).masked_fill(mask, 0).sum({wrapped}, /*keepdim=*/true);
  return output.mul(grad.sub(row_sum)).masked_fill(mask, 0);
}

}  // namespace kiln::torch_integration::compiled
