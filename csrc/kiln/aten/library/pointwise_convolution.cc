#include "kiln/aten/library/pointwise_convolution.h"

#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/sum.h>

#include <vector>

namespace kiln::torch_integration::library {
namespace {

// An NCHW 1x1 convolution is one product per sample, (C_out x C_in) @ (C_in x
// H_out*W_out), which reads the whole weight for H_out*W_out columns: with
// fewer output positions than this, folding the batch into one product wins.
constexpr int64_t kDirectFewestPositions = 64;

bool is_channels_last(const at::Tensor& tensor) {
  return tensor.suggest_memory_format() == c10::MemoryFormat::ChannelsLast;
}

bool all_equal(c10::IntArrayRef values, int64_t expected) {
  for (int64_t value : values) {
    if (value != expected) return false;
  }
  return true;
}

// N*H*W x C of a channels-last tensor, a view.
at::Tensor positions_by_channels(const at::Tensor& tensor) {
  return tensor.permute({0, 2, 3, 1}).reshape({-1, tensor.size(1)});
}

// C x N*H*W of an NCHW tensor: a copy, with the channel dim first.
at::Tensor channels_by_positions(const at::Tensor& tensor) {
  return tensor.permute({1, 0, 2, 3}).reshape({tensor.size(1), -1});
}

// Whether an NCHW convolution has positions enough for one product per
// sample, N x C x H*W views of its tensors, with no copies.
bool one_product_per_sample(const at::Tensor& input) {
  return !is_channels_last(input) && input.size(2) * input.size(3) >= kDirectFewestPositions;
}

// N x C x H*W of an NCHW tensor (a view where it is contiguous).
at::Tensor samples(const at::Tensor& tensor) {
  return tensor.reshape({tensor.size(0), tensor.size(1), -1});
}

// The positions a 1x1 convolution with `stride` reads: every stride-th row
// and column, a view.
at::Tensor strided_positions(const at::Tensor& tensor, c10::IntArrayRef stride) {
  const int64_t rows = stride[0], columns = stride.size() > 1 ? stride[1] : stride[0];
  return tensor.slice(2, 0, tensor.size(2), rows).slice(3, 0, tensor.size(3), columns);
}

bool is_strided(c10::IntArrayRef stride) { return !all_equal(stride, 1); }

// The input at the positions the convolution reads, dense in the input's
// layout: the input itself for stride 1, else a copy of a quarter of it (or
// less), which the products then read as they read a stride-1 input.
at::Tensor read_positions(const at::Tensor& input, c10::IntArrayRef stride) {
  if (!is_strided(stride)) return input;
  return strided_positions(input, stride).contiguous(input.suggest_memory_format());
}

// Writes a C x N*H*W product into the NCHW tensor `target` (N x C x H x W).
void store_channels_by_positions(const at::Tensor& product, at::Tensor& target) {
  target.copy_(product.view({target.size(1), target.size(0), target.size(2), target.size(3)}).permute({1, 0, 2, 3}));
}

}  // namespace

bool is_pointwise_convolution(const at::Tensor& input, const at::Tensor& weight, c10::IntArrayRef stride,
                              c10::IntArrayRef padding, bool transposed, c10::IntArrayRef output_padding,
                              int64_t groups) {
  if (transposed || groups != 1 || input.dim() != 4 || weight.dim() != 4) return false;
  if (weight.size(2) != 1 || weight.size(3) != 1 || weight.size(1) != input.size(1)) return false;
  if (stride.empty() || stride.size() > 2 || !all_equal(padding, 0) || !all_equal(output_padding, 0)) return false;
  for (int64_t step : stride) {
    if (step < 1) return false;
  }
  if (input.scalar_type() != weight.scalar_type() || !at::isFloatingType(input.scalar_type())) return false;
  if (input.numel() == 0 || weight.numel() == 0) return false;
  return true;
}

bool pointwise_convolution_writes_output_directly(const at::Tensor& input, const at::Tensor& output) {
  if (is_channels_last(input)) return is_channels_last(output);
  return output.is_contiguous() && output.size(2) * output.size(3) >= kDirectFewestPositions;
}

void pointwise_convolution(const at::Tensor& strided_input, const at::Tensor& weight,
                           const std::optional<at::Tensor>& bias, c10::IntArrayRef stride, at::Tensor& output) {
  const at::Tensor input = read_positions(strided_input, stride);
  const at::Tensor matrix = weight.reshape({weight.size(0), weight.size(1)});  // C_out x C_in
  const bool has_bias = bias.has_value() && bias->defined();
  if (is_channels_last(input) && is_channels_last(output)) {
    // (N*H*W x C_in) @ (C_in x C_out), straight into the output's memory.
    at::Tensor result = positions_by_channels(output);
    const at::Tensor positions = positions_by_channels(input);
    if (has_bias) {
      at::addmm_out(result, *bias, positions, matrix.t());
    } else {
      at::mm_out(result, positions, matrix.t());
    }
    return;
  }
  if (one_product_per_sample(input) && output.is_contiguous()) {
    // (C_out x C_in) @ (C_in x H*W) for each sample, straight into the output.
    at::Tensor result = output.view({output.size(0), output.size(1), -1});
    const at::Tensor weights = matrix.expand({input.size(0), matrix.size(0), matrix.size(1)});
    if (has_bias) {
      at::baddbmm_out(result, bias->view({1, -1, 1}), weights, samples(input));
    } else {
      at::bmm_out(result, weights, samples(input));
    }
    return;
  }
  const at::Tensor columns = channels_by_positions(input);
  const at::Tensor product = has_bias ? at::addmm(bias->unsqueeze(1), matrix, columns) : at::mm(matrix, columns);
  store_channels_by_positions(product, output);
}

void pointwise_convolution_backward(const at::Tensor& grad_output, const at::Tensor& strided_input,
                                    const at::Tensor& weight, c10::IntArrayRef stride, at::Tensor& strided_grad_input,
                                    at::Tensor& grad_weight, at::Tensor& grad_bias) {
  const at::Tensor input = read_positions(strided_input, stride);
  // With a stride, the gradient of the positions read, then scattered into
  // a zeroed input gradient: the positions skipped get none.
  at::Tensor grad_input = strided_grad_input;
  if (grad_input.defined() && is_strided(stride)) {
    grad_input = at::empty(input.sizes(), input.options().memory_format(input.suggest_memory_format()));
  }
  const at::Tensor matrix = weight.reshape({weight.size(0), weight.size(1)});  // C_out x C_in
  const bool channels_last = is_channels_last(input) && is_channels_last(grad_output);
  const bool per_sample = !channels_last && one_product_per_sample(input);
  if (grad_input.defined()) {
    if (per_sample && grad_input.is_contiguous()) {
      at::Tensor result = grad_input.view({grad_input.size(0), grad_input.size(1), -1});
      at::bmm_out(result, matrix.t().expand({input.size(0), matrix.size(1), matrix.size(0)}), samples(grad_output));
    } else if (channels_last && is_channels_last(grad_input)) {
      at::Tensor result = positions_by_channels(grad_input);
      at::mm_out(result, positions_by_channels(grad_output), matrix);  // (N*H*W x C_out) @ (C_out x C_in)
    } else {
      store_channels_by_positions(at::mm(matrix.t(), channels_by_positions(grad_output)), grad_input);
    }
  }
  if (grad_weight.defined()) {
    // C_out x C_in: the output gradient's channels against the input's, over every position.
    // Per sample (many positions), one product each, summed: copying the
    // activations into C x N*H*W would cost more than the N partial sums.
    const at::Tensor product =
        channels_last ? at::mm(positions_by_channels(grad_output).t(), positions_by_channels(input))
        : per_sample  ? at::bmm(samples(grad_output), samples(input).transpose(1, 2)).sum(0)
                      : at::mm(channels_by_positions(grad_output), channels_by_positions(input).t());
    grad_weight.copy_(product.view(grad_weight.sizes()));
  }
  if (grad_bias.defined()) at::sum_out(grad_bias, grad_output, std::vector<int64_t>{0, 2, 3});
  if (grad_input.defined() && is_strided(stride)) {
    strided_grad_input.zero_();
    strided_positions(strided_grad_input, stride).copy_(grad_input);
  }
}

}  // namespace kiln::torch_integration::library
