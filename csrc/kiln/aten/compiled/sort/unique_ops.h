// Compiled unique (_unique2: always sorted, as the CPU's), unique_consecutive
// (flattened or along a dim) and isin.
//
// unique sorts the flattened input (sort_ops.h, the CPU's unstable order),
// then one sequential row
// kernel walks it once, marking where each run of equal values starts,
// counting the runs and writing every element's run number back through the
// sort's permutation (the inverse). NaNs never equal anything, so each is
// its own value, as on the CPU. The number of unique values decides the
// output size: these ops read it back to the host, which synchronizes the
// stream (as CUDA's unique does).
//
// isin sorts the test elements and binary-searches each element among them.
// Registered in aten/compiled/sort/registration.cc.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <tuple>

namespace kiln::torch_integration::compiled {

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool sorted, bool return_inverse,
                                                       bool return_counts);
std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts,
                                                                  std::optional<int64_t> dim);

at::Tensor isin(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique, bool invert);
at::Tensor& isin_out(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique,
                     bool invert, at::Tensor& out);
at::Tensor isin_tensor_scalar(const at::Tensor& elements, const at::Scalar& test_element, bool assume_unique,
                              bool invert);
at::Tensor& isin_tensor_scalar_out(const at::Tensor& elements, const at::Scalar& test_element,
                                   bool assume_unique, bool invert, at::Tensor& out);
at::Tensor isin_scalar_tensor(const at::Scalar& element, const at::Tensor& test_elements, bool assume_unique,
                              bool invert);
at::Tensor& isin_scalar_tensor_out(const at::Scalar& element, const at::Tensor& test_elements,
                                   bool assume_unique, bool invert, at::Tensor& out);

}  // namespace kiln::torch_integration::compiled
