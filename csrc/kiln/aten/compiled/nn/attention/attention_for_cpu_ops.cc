#include "kiln/aten/compiled/nn/attention/attention_for_cpu_ops.h"

#include <ATen/ops/add.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/log.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>

#include <cmath>
#include <limits>

#include "kiln/aten/compiled/launch/elementwise.h"

namespace kiln::torch_integration::compiled {
namespace {

constexpr const char* kPrefix = "scaled_dot_product_attention_flash_attention: ";

// Autograd hands the backward an undefined tensor for "no mask".
std::optional<at::Tensor> defined_mask(const std::optional<at::Tensor>& attn_mask) {
  if (attn_mask.has_value() && attn_mask->defined()) return attn_mask;
  return std::nullopt;
}

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
  // The CPU's kernel indexes key and value with the query's batch and head
  // counts and reads past them when they differ: kiln refuses instead.
  for (const at::Tensor* tensor : {&key, &value}) {
    TORCH_CHECK(tensor->size(0) == query.size(0) && tensor->size(1) == query.size(1), kPrefix,
                "Q/K/V should have the same batch size and number of heads");
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

double scale_of(const at::Tensor& query, std::optional<double> scale) {
  return scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(3)));
}

// a @ b over the two leading (batch, head) dims. The CPU's flash kernel calls
// its gemm once per matrix; bmm would take ATen's small-matrix loop below 400
// multiply-adds per matrix and round differently, so small products go one
// matrix at a time through the library mm, larger ones through matmul (whose
// bmm then runs the same gemm per matrix). Past a few hundred matrices the
// per-matrix launches would cost more than the rounding is worth.
at::Tensor batched_product(const at::Tensor& a, const at::Tensor& b) {
  constexpr int64_t kSmallMatrix = 400;
  constexpr int64_t kMostMatrices = 256;
  if (a.size(-1) * a.size(-2) * b.size(-1) >= kSmallMatrix || a.size(0) * a.size(1) > kMostMatrices) {
    return at::matmul(a, b);
  }
  at::Tensor result = at::empty({a.size(0), a.size(1), a.size(2), b.size(3)}, a.options());
  for (int64_t batch = 0; batch < a.size(0); ++batch) {
    for (int64_t head = 0; head < a.size(1); ++head) {
      at::Tensor slice = result[batch][head];
      at::mm_out(slice, a[batch][head], b[batch][head]);
    }
  }
  return result;
}

at::Tensor mask_causal(at::Tensor scores, const at::Tensor& query, const at::Tensor& key,
                       bool is_causal);

// query @ key^T * scale + mask, with -inf where the causal mask hides a key,
// in the accumulate dtype: [B, H, L, S].
at::Tensor masked_scores(const at::Tensor& query, const at::Tensor& key, bool is_causal,
                         const std::optional<at::Tensor>& attn_mask, double scale,
                         c10::ScalarType accumulate, bool fused_mask) {
  at::Tensor scores = batched_product(query.to(accumulate), key.to(accumulate).transpose(-2, -1));
  if (fused_mask && attn_mask.has_value() && accumulate == at::kFloat) {
    // The CPU's forward fuses score * scale + mask into one multiply-add,
    // rounded once: the same in float64, where a product of two floats is
    // exact. (Its backward multiplies, then adds.)
    const double float_scale = static_cast<float>(scale);
    at::Tensor fused = at::add(at::mul(scores.to(at::kDouble), float_scale), attn_mask->to(at::kDouble));
    return mask_causal(fused.to(accumulate), query, key, is_causal);
  }
  scores.mul_(scale);
  if (attn_mask.has_value()) scores.add_(attn_mask->to(accumulate));
  return mask_causal(scores, query, key, is_causal);
}

// -inf where the causal mask hides key j from query i (j > i).
at::Tensor mask_causal(at::Tensor scores, const at::Tensor& query, const at::Tensor& key,
                       bool is_causal) {
  if (is_causal) {
    const at::TensorOptions positions = query.options().dtype(at::kLong);
    at::Tensor rows = at::arange(query.size(2), positions).unsqueeze(1);
    at::Tensor columns = at::arange(key.size(2), positions).unsqueeze(0);
    scores.masked_fill_(at::gt(columns, rows), -std::numeric_limits<double>::infinity());
  }
  return scores;
}

// The row statistics the CPU keeps: the maximum (0 for a fully masked row)
// and the sum of exponentials (1 when it is 0), with the exponentials.
struct Softmax {
  at::Tensor exponentials;  // exp(score - max), [B, H, L, S]
  at::Tensor sums;          // [B, H, L, 1]
  at::Tensor logsumexp;     // max + log(sum), [B, H, L, 1]
};

Softmax softmax_statistics(const at::Tensor& scores) {
  const double infinity = std::numeric_limits<double>::infinity();
  at::Tensor maxima = at::amax(scores, {-1}, /*keepdim=*/true);
  maxima.masked_fill_(at::eq(maxima, -infinity), 0.0);
  Softmax result;
  result.exponentials = at::exp(at::sub(scores, maxima));
  result.sums = at::sum(result.exponentials, {-1}, /*keepdim=*/true);
  result.sums.masked_fill_(at::eq(result.sums, 0), 1.0);
  result.logsumexp = at::add(maxima, at::log(result.sums));
  return result;
}

// An empty [B, L, H, E]-shaped buffer viewed as [B, H, L, E]: the layout
// the CPU gives logsumexp and the gradients.
at::Tensor heads_inner(const at::Tensor& like, int64_t length, int64_t width,
                       c10::ScalarType type) {
  std::vector<int64_t> sizes = {like.size(0), length, like.size(1)};
  if (width >= 0) sizes.push_back(width);
  return at::empty(sizes, like.options().dtype(type)).transpose(1, 2);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> flash_attention_for_cpu(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& given_mask, std::optional<double> scale) {
  const std::optional<at::Tensor> attn_mask = defined_mask(given_mask);
  check_operands(query, key, value, dropout_p, attn_mask);
  const c10::ScalarType accumulate = accumulate_type(query);
  at::Tensor output = at::empty_like(query);
  at::Tensor logsumexp = heads_inner(query, query.size(2), -1, accumulate);
  if (query.numel() == 0) return {output, logsumexp};
  if (key.size(2) == 0) {
    // No keys: every row is fully masked.
    output.zero_();
    logsumexp.zero_();
    return {output, logsumexp};
  }
  at::Tensor scores =
      masked_scores(query, key, is_causal, attn_mask, scale_of(query, scale), accumulate, true);
  Softmax softmax = softmax_statistics(scores);
  // The CPU rounds the probabilities to the input dtype before their product
  // with value, then scales the float result by the reciprocal of the sums.
  at::Tensor probabilities = softmax.exponentials.to(query.scalar_type()).to(accumulate);
  at::Tensor attended = at::mul(batched_product(probabilities, value.to(accumulate)),
                                at::reciprocal(softmax.sums));
  output.copy_(attended);
  logsumexp.copy_(softmax.logsumexp.squeeze(-1));
  return {output, logsumexp};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> flash_attention_for_cpu_backward(
    const at::Tensor& grad_out, const at::Tensor& query, const at::Tensor& key,
    const at::Tensor& value, const at::Tensor& out, const at::Tensor& logsumexp, double dropout_p,
    bool is_causal, const std::optional<at::Tensor>& given_mask, std::optional<double> scale) {
  const std::optional<at::Tensor> attn_mask = defined_mask(given_mask);
  check_operands(query, key, value, dropout_p, attn_mask);
  check_same_device({grad_out, query, out, logsumexp});
  const c10::ScalarType type = query.scalar_type();
  const c10::ScalarType accumulate = accumulate_type(query);
  at::Tensor grad_query = heads_inner(query, query.size(2), query.size(3), type);
  at::Tensor grad_key = heads_inner(key, key.size(2), key.size(3), type);
  at::Tensor grad_value = heads_inner(value, value.size(2), value.size(3), type);
  if (query.numel() == 0 || key.numel() == 0) {
    grad_query.zero_();
    grad_key.zero_();
    grad_value.zero_();
    return {grad_query, grad_key, grad_value};
  }
  const double scaling = scale_of(query, scale);
  at::Tensor scores = masked_scores(query, key, is_causal, attn_mask, scaling, accumulate, false);
  // The probabilities again, from the forward's logsumexp.
  at::Tensor probabilities = at::exp(at::sub(scores, logsumexp.to(accumulate).unsqueeze(-1)));
  at::Tensor grad = grad_out.to(accumulate);
  at::Tensor grad_probabilities = batched_product(grad, value.to(accumulate).transpose(-2, -1));
  at::Tensor row_dot = at::sum(at::mul(grad, out.to(accumulate)), {-1}, /*keepdim=*/true);
  at::Tensor grad_scores = at::mul(probabilities, at::sub(grad_probabilities, row_dot));
  grad_value.copy_(batched_product(probabilities.transpose(-2, -1), grad));
  grad_query.copy_(batched_product(grad_scores, key.to(accumulate)).mul_(scaling));
  grad_key.copy_(batched_product(grad_scores.transpose(-2, -1), query.to(accumulate)).mul_(scaling));
  return {grad_query, grad_key, grad_value};
}

}  // namespace kiln::torch_integration::compiled
