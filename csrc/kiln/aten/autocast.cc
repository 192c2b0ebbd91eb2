// torch.autocast("kiln"): the cast policies of PyTorch's shared op lists
// (autocast_mode.h), as CUDA and XPU register them. Ops outside the lists fall
// through to the kiln kernels unchanged.
#undef TORCH_ASSERT_ONLY_METHOD_OPERATORS  // the policy wrappers name at::_ops::X
#include <ATen/Operators.h>
#include <ATen/autocast_mode.h>
#include <torch/library.h>

namespace kiln::torch_integration {
namespace {

// The shared op lists spell signatures with ATen's unqualified type names.
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

#define KILN_LOWER_PRECISION(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define KILN_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define KILN_FP32_SET_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define KILN_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)

TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // The matmul and convolution families run in the lower precision, as on CUDA.
  AT_FORALL_LOWER_PRECISION_FP(KILN_LOWER_PRECISION)
  AT_FORALL_FP32(KILN_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(KILN_FP32_SET_OPT_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(KILN_PROMOTE)
}

}  // namespace
}  // namespace kiln::torch_integration
