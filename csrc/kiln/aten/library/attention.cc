// Fused attention on the library path: PyTorch's CPU flash attention
// (_scaled_dot_product_flash_attention_for_cpu and its backward: blocked,
// online softmax, its own threading) over aliases of device memory, queued on
// the stream, as a GPU backend hands attention to cuDNN or FlashAttention.
//
// scaled_dot_product_attention reaches it through the PrivateUse1 entry of
// _fused_sdp_choice_stub (attention_choice below), which makes the CPU's
// choice: flash where its kernel applies (no dropout, supported dtypes and
// shapes), the math composition otherwise. Without that entry PyTorch takes
// the math path on every device it does not know, eagerly and in the graphs
// torch.compile traces, where Inductor's CPU graphs call this kernel.
//
// The CPU kernel allocates its results on the host; they are copied into the
// device outputs, whose layouts are the ones PyTorch's Meta kernels give (the
// output like the query, logsumexp and the gradients in the CPU's
// [B, L, H, ...] order viewed as [B, H, L, ...]), so compiled programs see
// the strides they were planned with. Arguments are checked in the caller,
// with the CPU's messages, before anything is queued.
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/_fused_sdp_choice_native.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu.h>
#include <ATen/ops/_scaled_dot_product_flash_attention_for_cpu_backward.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <optional>
#include <vector>

#include "kiln/aten/device_checks.h"
#include "kiln/aten/library/library_kernels.h"
#include "kiln/aten/library/library_threads.h"
#include "kiln/aten/native/device_memory.h"
#include "kiln/aten/op_tracking.h"
#include "kiln/c10/device_allocator.h"
#include "kiln/c10/status_error.h"

namespace kiln::torch_integration::library {
namespace {

constexpr const char* kPrefix = "scaled_dot_product_attention_flash_attention: ";

// Autograd hands the backward an undefined tensor for "no mask".
std::optional<at::Tensor> defined_mask(const std::optional<at::Tensor>& attn_mask) {
  if (attn_mask.has_value() && attn_mask->defined()) return attn_mask;
  return std::nullopt;
}

// The CPU kernel's own checks, made before the work is queued so that a bad
// call raises at once.
void check_operands(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                    double dropout_p, const std::optional<at::Tensor>& attn_mask) {
  check_same_device({query, key, value});
  const c10::ScalarType type = query.scalar_type();
  TORCH_CHECK(type == at::kFloat || type == at::kDouble || type == at::kBFloat16 || type == at::kHalf,
              kPrefix, "Expected data type in FP32, FP64, BF16, FP16, but got ", type, " instead.");
  TORCH_CHECK(query.dim() == 4 && key.dim() == 4 && value.dim() == 4, kPrefix,
              "Accept only 4 dims inputs shape of {B, H, T, K}");
  TORCH_CHECK(dropout_p == 0.0, kPrefix, "Currently do not support dropout > 0");
  TORCH_CHECK(query.size(3) == value.size(3) && key.size(3) == value.size(3), kPrefix,
              "Q/K/V should have the same head size");
  TORCH_CHECK(key.size(2) == value.size(2), kPrefix, "K/V should have the same sequence length");
  // Grouped-query attention: each key and value head serves query heads /
  // key heads query heads. The CPU's kernel reads past key and value when
  // the batch sizes differ or the head counts do not divide: kiln refuses.
  for (const at::Tensor* tensor : {&key, &value}) {
    const bool heads_divide = key.size(1) > 0 ? query.size(1) % key.size(1) == 0 : query.size(1) == 0;
    TORCH_CHECK(tensor->size(0) == query.size(0) && tensor->size(1) == key.size(1) && heads_divide,
                kPrefix,
                "Q/K/V should have the same batch size, K/V the same number of heads, and the query's "
                "number of heads a multiple of it");
    TORCH_CHECK(tensor->scalar_type() == type, "expected scalar type ", type, " but found ",
                tensor->scalar_type());
  }
  if (attn_mask.has_value()) {
    check_same_device({query, *attn_mask});
    TORCH_CHECK(attn_mask->scalar_type() == at::kFloat || attn_mask->scalar_type() == type, kPrefix,
                "Attention mask is the same data type as query");
    TORCH_CHECK(attn_mask->dim() == 2 || attn_mask->dim() == 4, kPrefix, "Attention mask dim in {2, 4}");
  }
}

// Half types accumulate in float, as the CPU's kernel does.
c10::ScalarType accumulate_type(const at::Tensor& query) {
  const c10::ScalarType type = query.scalar_type();
  return type == at::kHalf || type == at::kBFloat16 ? at::kFloat : type;
}

// An empty [B, L, H(, E)] buffer viewed as [B, H, L(, E)]: the layout the
// CPU gives logsumexp and the gradients.
at::Tensor heads_inner(const at::Tensor& like, int64_t length, int64_t width, c10::ScalarType type) {
  std::vector<int64_t> sizes = {like.size(0), length, like.size(1)};
  if (width >= 0) sizes.push_back(width);
  return at::empty(sizes, like.options().dtype(type)).transpose(1, 2);
}

std::optional<at::Tensor> alias_of(const std::optional<at::Tensor>& tensor) {
  if (!tensor.has_value()) return std::nullopt;
  return host_alias(*tensor);
}

// The two products of attention: 4 * B * H * L * S * E.
double attention_flops(const at::Tensor& query, const at::Tensor& key) {
  return 4.0 * static_cast<double>(query.numel()) * static_cast<double>(key.size(2));
}

size_t bytes_of(const std::vector<at::Tensor>& tensors) {
  size_t bytes = 0;
  for (const at::Tensor& tensor : tensors) bytes += tensor.nbytes();
  return bytes;
}

// Queues `run` (which stores the CPU kernel's results into the host aliases
// it holds) on the stream of `outputs`, keeping `operands` and `outputs`
// alive until it has run.
template <typename Run>
void launch(const char* name, double flops, std::vector<at::Tensor> operands,
            const std::vector<at::Tensor>& outputs, Run&& run) {
  operands.insert(operands.end(), outputs.begin(), outputs.end());
  const size_t bytes = bytes_of(operands);
  const bool small = is_small_library_call(flops, bytes);
  drop_tensors_reused_in_stream_order(operands);
  check_status(stream_of(outputs.front())
                   .launch(name, launch_bytes(small, bytes),
                           [run = std::forward<Run>(run), keep_alive = std::move(operands), small]() mutable {
                             at::AutoDispatchBelowADInplaceOrView below_autograd;
                             LibraryThreadScope scope(small);
                             run();
                             return Status();
                           }));
}

// The PrivateUse1 entry of _fused_sdp_choice_stub is the CPU's own choice,
// set at load as PyTorch's REGISTER_PRIVATEUSE1_DISPATCH would (the macro
// only works inside namespace at::native). Kiln's kernel for the flash
// backend is the CPU's (above), so the choice that suits the CPU suits kiln;
// it reads only metadata, as fake tensors allow.
const bool kChoiceRegistered = [] {
  at::native::_fused_sdp_choice_stub.set_privateuse1_dispatch_ptr(&at::native::_fused_sdp_choice_cpp);
  return true;
}();

}  // namespace

std::tuple<at::Tensor, at::Tensor> flash_attention_for_cpu(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& given_mask, std::optional<double> scale) {
  record_static_op("aten::_scaled_dot_product_flash_attention_for_cpu", OpPath::kLibrary);
  const std::optional<at::Tensor> attn_mask = defined_mask(given_mask);
  check_operands(query, key, value, dropout_p, attn_mask);
  at::Tensor output = at::empty_like(query);
  at::Tensor logsumexp = heads_inner(query, query.size(2), -1, accumulate_type(query));
  if (query.numel() == 0 || key.size(2) == 0) {
    // No keys: every row is fully masked, and the CPU gives 0 for both.
    output.zero_();
    logsumexp.zero_();
    return {output, logsumexp};
  }
  std::vector<at::Tensor> operands{query, key, value};
  if (attn_mask.has_value()) operands.push_back(*attn_mask);
  launch("aten::_scaled_dot_product_flash_attention_for_cpu", attention_flops(query, key), operands,
         {output, logsumexp},
         [query = host_alias(query), key = host_alias(key), value = host_alias(value),
          mask = alias_of(attn_mask), output = host_alias(output), logsumexp = host_alias(logsumexp),
          dropout_p, is_causal, scale]() mutable {
           auto [attended, statistics] =
               at::_scaled_dot_product_flash_attention_for_cpu(query, key, value, dropout_p, is_causal, mask, scale);
           output.copy_(attended);
           logsumexp.copy_(statistics);
         });
  return {output, logsumexp};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_attention_for_cpu_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& out, const at::Tensor& logsumexp, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& given_mask, std::optional<double> scale) {
  record_static_op("aten::_scaled_dot_product_flash_attention_for_cpu_backward", OpPath::kLibrary);
  const std::optional<at::Tensor> attn_mask = defined_mask(given_mask);
  check_operands(query, key, value, dropout_p, attn_mask);
  check_same_device({grad_out, query, out, logsumexp});
  const c10::ScalarType type = query.scalar_type();
  at::Tensor grad_query = heads_inner(query, query.size(2), query.size(3), type);
  at::Tensor grad_key = heads_inner(key, key.size(2), key.size(3), type);
  at::Tensor grad_value = heads_inner(value, value.size(2), value.size(3), type);
  if (query.numel() == 0 || key.numel() == 0) {
    grad_query.zero_();
    grad_key.zero_();
    grad_value.zero_();
    return {grad_query, grad_key, grad_value};
  }
  std::vector<at::Tensor> operands{grad_out, query, key, value, out, logsumexp};
  if (attn_mask.has_value()) operands.push_back(*attn_mask);
  // The backward recomputes the scores and takes three more products.
  launch("aten::_scaled_dot_product_flash_attention_for_cpu_backward", 2.5 * attention_flops(query, key),
         operands, {grad_query, grad_key, grad_value},
         [grad_out = host_alias(grad_out), query = host_alias(query), key = host_alias(key),
          value = host_alias(value), out = host_alias(out), logsumexp = host_alias(logsumexp),
          mask = alias_of(attn_mask), grad_query = host_alias(grad_query), grad_key = host_alias(grad_key),
          grad_value = host_alias(grad_value), dropout_p, is_causal, scale]() mutable {
           auto [query_gradient, key_gradient, value_gradient] =
               at::_scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query, key, value, out,
                                                                        logsumexp, dropout_p, is_causal, mask,
                                                                        scale);
           grad_query.copy_(query_gradient);
           grad_key.copy_(key_gradient);
           grad_value.copy_(value_gradient);
         });
  return {grad_query, grad_key, grad_value};
}

}  // namespace kiln::torch_integration::library
