#include "kiln/aten/compiled/pointwise/complex_conjugate.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/select.h>
#include <ATen/ops/view_as_real.h>

#include "kiln/aten/device_checks.h"
#include "kiln/aten/op_tracking.h"

namespace kiln::torch_integration::compiled {

at::Tensor& conj_physical_out(const at::Tensor& self, at::Tensor& out) {
  record_static_op("aten::conj_physical.out", OpPath::kCompiled);
  check_same_device(self.device(), out);
  // The CPU kernel casts into out like any unary out= op; copy_ refuses a
  // complex-to-real cast the same way ("complex to real" is an error there).
  TORCH_CHECK(!self.is_complex() || out.is_complex(), "result type ", self.scalar_type(),
              " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  // copy_ resolves a lazily conjugated or negated `self` into its values, so
  // negating the imaginary parts afterwards conjugates the logical value. When
  // out is self (conj_physical_), the copy is a no-op.
  if (!out.is_same(self)) out.copy_(self);
  if (out.is_complex() && self.is_complex()) at::view_as_real(out).select(-1, 1).neg_();
  return out;
}

at::Tensor& conj_physical_(at::Tensor& self) {
  if (!self.is_complex()) return self;
  record_static_op("aten::conj_physical_", OpPath::kCompiled);
  // Negating the stored imaginary parts conjugates the value whether or not
  // self is a lazily conjugated view; conj() of such a view is its storage.
  at::Tensor stored = self.is_conj() ? self.conj() : self;
  at::view_as_real(stored).select(-1, 1).neg_();
  return self;
}

}  // namespace kiln::torch_integration::compiled
