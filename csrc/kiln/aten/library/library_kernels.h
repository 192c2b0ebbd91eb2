// Library kernels: the op families a GPU backend hands to vendor libraries
// (cuBLAS for the matmul family, cuDNN for convolution and fused attention), run by PyTorch's own CPU libraries (MKL,
// oneDNN, OpenBLAS) on aliases of kiln device memory, queued on the stream.
// Each records itself in op tracking under the path "library".
//
// Shapes, dtypes and devices are checked in the caller, with PyTorch's
// messages, before anything is queued, so a bad call raises at once and
// leaves its inputs and output untouched.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <array>
#include <optional>
#include <tuple>

namespace kiln::torch_integration::library {

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out);
at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                      const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out);
at::Tensor& addmm_activation_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                 const c10::Scalar& beta, const c10::Scalar& alpha, bool use_gelu,
                                 at::Tensor& out);
at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out);
at::Tensor& baddbmm_out(const at::Tensor& self, const at::Tensor& batch1,
                        const at::Tensor& batch2, const c10::Scalar& beta,
                        const c10::Scalar& alpha, at::Tensor& out);

// grouped_mm.cc: aten::_grouped_mm (torch.nn.functional.grouped_mm), checked
// as PyTorch checks it, its output allocated as PyTorch allocates it, and the
// groups' products queued as one launch that reads the offsets on the device.
at::Tensor grouped_mm(const at::Tensor& mat_a, const at::Tensor& mat_b, const std::optional<at::Tensor>& offs,
                      const std::optional<at::Tensor>& bias, std::optional<at::ScalarType> out_dtype);

// convolution.cc
at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight,
                       const std::optional<at::Tensor>& bias, c10::IntArrayRef stride,
                       c10::IntArrayRef padding, c10::IntArrayRef dilation, bool transposed,
                       c10::IntArrayRef output_padding, int64_t groups);
// Whether convolution() computes this 2-d convolution (not transposed)
// straight into the output it allocates, in the layouts `input` and `weight`
// have (sizes, strides and dtypes are all it reads: fake tensors do). For the
// compiled path's choice of layouts (compile/passes/channels_last.py).
bool convolution_writes_output_directly(const at::Tensor& input, const at::Tensor& weight,
                                        c10::IntArrayRef stride, c10::IntArrayRef padding,
                                        c10::IntArrayRef dilation, int64_t groups);
std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight,
    at::OptionalIntArrayRef bias_sizes, c10::IntArrayRef stride, c10::IntArrayRef padding,
    c10::IntArrayRef dilation, bool transposed, c10::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask);

// attention.cc: the CPU's flash attention (scaled_dot_product_attention's
// choice on kiln, as on the CPU: _fused_sdp_choice's stub is set at load).
std::tuple<at::Tensor, at::Tensor> flash_attention_for_cpu(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& attn_mask, std::optional<double> scale);
std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_attention_for_cpu_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& out, const at::Tensor& logsumexp, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& attn_mask, std::optional<double> scale);

}  // namespace kiln::torch_integration::library
