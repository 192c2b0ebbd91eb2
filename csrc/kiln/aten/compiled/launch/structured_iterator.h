// Running ATen's own meta functions for the kiln device.
//
// Most pointwise ops in ATen are "structured": a meta function
// (at::meta::structured_<op>::meta) checks the arguments, promotes dtypes and
// builds a TensorIterator, and a per-backend class decides where the output
// goes. StructuredIterator<Meta> is that class for kiln, written the way
// torchgen writes it for the CPU: a functional call allocates the output, an
// in-place call checks `self`, an out= call resizes `out`. After meta() the
// object is a built TensorIterator ready for launch_pointwise, and every check,
// promotion rule and error message is PyTorch's.
//
//   StructuredIterator<at::meta::structured_exp> iter(out, Target::kOut);
//   iter.meta(self);
//   launch_pointwise("aten::exp.out", "exp", iter, {}, body);
//
// Only for meta classes that derive from TensorIteratorBase (the ones whose
// header says `: public TensorIteratorBase`).
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>

namespace kiln::torch_integration::compiled {

// Where a structured op writes.
enum class Target { kFunctional, kInPlace, kOut };

// The output bookkeeping torchgen generates for CPU kernels: allocate (with
// the meta function's strides when it gave any), check an in-place target, or
// resize an out= tensor (restriding only when it was resized).
at::Tensor create_output(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                         const c10::TensorOptions& options);
void check_in_place_output(const at::Tensor& self, c10::IntArrayRef sizes,
                           const c10::TensorOptions& options);
void resize_out_output(const at::Tensor& out, c10::IntArrayRef sizes, c10::IntArrayRef strides,
                       const c10::TensorOptions& options);

template <typename Meta>
class StructuredIterator final : public Meta {
 public:
  StructuredIterator() : target_(Target::kFunctional) {}
  // `output` is `self` for kInPlace and `out` for kOut.
  StructuredIterator(const at::Tensor& output, Target target) : output_(output), target_(target) {}

  void set_output_raw_strided(int64_t output_index, c10::IntArrayRef sizes,
                              c10::IntArrayRef strides, c10::TensorOptions options) override {
    switch (target_) {
      case Target::kFunctional: output_ = create_output(sizes, strides, options); break;
      case Target::kInPlace: check_in_place_output(output_, sizes, options); break;
      case Target::kOut: resize_out_output(output_, sizes, strides, options); break;
    }
    // After the output exists: TensorIteratorBase reads it back through
    // maybe_get_output.
    Meta::set_output_raw_strided(output_index, sizes, strides, options);
  }

  const at::Tensor& maybe_get_output(int64_t /*output_index*/) override { return output_; }

  // The result: the new tensor, `self` or `out`.
  const at::Tensor& result() const { return output_; }

 private:
  at::Tensor output_;
  Target target_;
};

}  // namespace kiln::torch_integration::compiled

// The StructuredIterator of ATen op `name`'s meta class, as the ops' files
// name it: KILN_STRUCTURED(hardswish) is
// StructuredIterator<at::meta::structured_hardswish>. A macro because the
// class name is pasted from the op's.
#define KILN_STRUCTURED(name) \
  ::kiln::torch_integration::compiled::StructuredIterator<at::meta::structured_##name>
