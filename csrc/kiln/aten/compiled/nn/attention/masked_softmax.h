// _masked_softmax and its backward on kiln: the softmax of the inference fast
// path of nn.MultiheadAttention and nn.TransformerEncoderLayer, where a true
// mask element removes that position. Registered in
// aten/compiled/nn/attention/registration.cc.
//
// The CPU's semantics (masked_softmax_cpu in ATen's SoftMax.cpp), composed
// of kiln's compiled kernels: the masked positions are filled with -inf and
// the row goes through kiln's softmax (as CUDA's kernel does for the shapes
// its fused kernel does not take), so a masked position gives 0 and a row
// with every position masked gives NaN, as on the CPU.
// mask_type as the CPU reads it, for a 2-d mask and a 4-d input [B, H, L, S]:
// 0 an attention mask [L, L], 1 a key-padding mask [B, L]; any other mask
// or input rank is the generic type 2, whose mask has the input's shape. A
// 2-d mask with a 4-d input and no mask_type is refused, as on the CPU.
// float32, float64, float16 and bfloat16.
//
// The backward is the CPU's: zero at masked positions, elsewhere
// output * (grad - sum over the row's unmasked positions of grad * output);
// its mask has the gradient's shape (the CPU's backward has no mask types).
// Outputs are fresh tensors; inputs are never written. Where the CPU's
// kernel would read past a mask (a type 0 or 1 mask with a 4-d input whose
// last two sizes differ), kiln raises an error naming both shapes instead.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>

namespace kiln::torch_integration::compiled {

at::Tensor masked_softmax(const at::Tensor& input, const at::Tensor& mask, std::optional<int64_t> dim,
                          std::optional<int64_t> mask_type);
at::Tensor masked_softmax_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& mask,
                                   std::optional<int64_t> dim);

}  // namespace kiln::torch_integration::compiled
