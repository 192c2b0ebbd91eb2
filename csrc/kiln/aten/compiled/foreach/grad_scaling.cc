#include "kiln/aten/compiled/foreach/grad_scaling.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/_foreach_mul.h>
#include <ATen/ops/any.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/Exception.h>

#include "kiln/aten/device_checks.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {
namespace {

constexpr const char* kUnscaleName = "aten::_amp_foreach_non_finite_check_and_unscale_";
constexpr const char* kUpdateName = "aten::_amp_update_scale_";

void check_one_element_float(const at::Tensor& tensor, const char* what, const char* op_name) {
  TORCH_CHECK(tensor.numel() == 1 && tensor.scalar_type() == at::kFloat, op_name, ": ", what,
              " must be a float tensor of one element, got ", tensor.scalar_type(), " of shape ", tensor.sizes());
}

void non_finite_check_and_unscale(at::TensorList gradients, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  record_static_op(kUnscaleName, OpPath::kNative);
  check_one_element_float(found_inf, "found_inf", kUnscaleName);
  check_one_element_float(inv_scale, "inv_scale", kUnscaleName);
  check_same_device(found_inf.device(), inv_scale, kUnscaleName);
  for (const at::Tensor& gradient : gradients) {
    check_same_device(found_inf.device(), gradient, kUnscaleName);
    TORCH_CHECK(gradient.is_floating_point(), kUnscaleName, ": gradients must be floating point, got ",
                gradient.scalar_type());
  }
  if (gradients.empty()) return;
  // The check reads the gradients as they came (an inf stays an inf once scaled).
  at::Tensor any_non_finite = at::zeros_like(found_inf, at::kBool).reshape(at::IntArrayRef{});
  for (const at::Tensor& gradient : gradients) {
    if (gradient.numel() == 0) continue;
    any_non_finite = any_non_finite.logical_or(at::logical_not(at::isfinite(gradient)).any());
  }
  found_inf.copy_(at::maximum(found_inf, any_non_finite.to(at::kFloat).view(found_inf.sizes())));
  at::_foreach_mul_(gradients, inv_scale.reshape(at::IntArrayRef{}));
}

at::Tensor& update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval) {
  record_static_op(kUpdateName, OpPath::kNative);
  check_one_element_float(scale, "the scale", kUpdateName);
  check_one_element_float(found_inf, "found_inf", kUpdateName);
  TORCH_CHECK(growth_tracker.numel() == 1 && growth_tracker.scalar_type() == at::kInt, kUpdateName,
              ": growth_tracker must be an int32 tensor of one element, got ", growth_tracker.scalar_type(),
              " of shape ", growth_tracker.sizes());
  check_same_device(scale.device(), growth_tracker, kUpdateName);
  check_same_device(scale.device(), found_inf, kUpdateName);

  const at::Tensor overflowed = found_inf.ne(0);
  const at::Tensor clean_steps = growth_tracker.add(1);
  const at::Tensor grows = at::logical_not(overflowed).logical_and(clean_steps.eq(growth_interval));
  const at::Tensor grown = scale.mul(growth_factor);
  const at::Tensor grown_if_finite = at::where(at::isfinite(grown), grown, scale);
  const at::Tensor new_scale = at::where(overflowed, scale.mul(backoff_factor), at::where(grows, grown_if_finite, scale));
  const at::Tensor new_tracker = at::where(overflowed.logical_or(grows), at::zeros_like(clean_steps), clean_steps);
  scale.copy_(new_scale);
  growth_tracker.copy_(new_tracker);
  return scale;
}

}  // namespace

void register_grad_scaling(torch::Library& library) {
  library.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(non_finite_check_and_unscale));
  library.impl("_amp_update_scale_", TORCH_FN(update_scale));
}

}  // namespace kiln::torch_integration::compiled
